// The ap_expr parser: the syntax httpd 2.4.71 accepts and the messages it gives for what it
// refuses (each message below was read from `apache2 -t` with the expression in <If>).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { parseExpr, parseStringExpr, EXPR_FLAG_RESTRICTED } from '../../../src/expr/index.js';

function err(text: string, flags = 0): string {
  const r = parseExpr(text, { flags });
  assert.ok(!r.ok, `${text} is refused`);
  return r.error;
}

test('conditions httpd accepts', () => {
  for (const e of [
    'true', 'false', '!true', 'true && false || true', "'a' == 'a'", '1 -eq 01', "%{REQUEST_URI} =~ m#^/x#i",
    "'a' -in { 'b', 'a' }", "-n %{HTTP_HOST}", "req('Host') . 'x' = 'y'", "%{toupper:%{escape:?}} = '%3F'",
    "'127.0.0.1' -ipmatch '127.0.0.0/8'", "-R '::1'", "$1 == ''", "'x$1y' == ''", "%{HTTP:X} eq 'y'",
    "'a' -strcmatch 'A*' and not -z 'x'", "(true) || (false && true)", "%{TIME_HOUR} -gt 9",
  ]) {
    const r = parseExpr(e);
    assert.ok(r.ok, `${e}: ${r.ok ? '' : r.error}`);
  }
});

test("httpd's parse errors", () => {
  assert.equal(err('1 =='), 'syntax error, unexpected $end');
  assert.equal(err('%{FOO} == 1'), "Variable 'FOO' does not exist");
  assert.equal(err('%{FOO} =='), "syntax error, unexpected $end: Variable 'FOO' does not exist");
  assert.equal(err("'a' =~ /(/"), 'Failed to compile regular expression');
  assert.equal(err('-X 1'), "Unary operator '-X' does not exist");
  assert.equal(err('a'), "syntax error, unexpected $end, expecting '('");
  assert.equal(err('%{'), 'syntax error, unexpected T_ERROR, expecting T_ID: Unterminated string or variable');
  assert.equal(err('%{x'), "syntax error, unexpected T_ERROR, expecting T_VAR_END or ':': Unterminated string or variable");
  assert.equal(err("'a"), 'Unterminated string or variable');
  assert.equal(err('1 -in {}'), "syntax error, unexpected '}'");
  assert.equal(err('1 = 1 1'), 'syntax error, unexpected T_DIGIT, expecting $end');
  assert.equal(err('-'), "Parse error near '-'");
  assert.equal(err('m#x#'), 'syntax error, unexpected T_REGEX');
  assert.equal(err('%{req:} == 1'), 'syntax error, unexpected T_VAR_END, expecting T_ERROR or T_STRING or T_REGEX_BACKREF or T_VAR_BEGIN');
  assert.equal(err("'\\400' == 1"), 'Escape sequence out of bound');
  assert.equal(err("'\\19' == 1"), 'Bad escape sequence');
  assert.equal(err('-R 127'), '-R requires subnet/netmask as constant argument');
  assert.equal(err("-R 'x'"), 'parsing of subnet/netmask failed');
  assert.equal(err('(true'), "syntax error, unexpected $end, expecting T_OP_OR or T_OP_AND or ')'");
  assert.equal(err('1 -in {1'), "syntax error, unexpected $end, expecting '}' or ','");
  assert.equal(err('foo(1'), "syntax error, unexpected $end, expecting T_OP_CONCAT or ')'");
  assert.equal(err("v('x') == ''"), "Function 'v' does not exist");
  assert.equal(err("'ab%{x}"), 'syntax error, unexpected T_ERROR, expecting T_STRING or T_REGEX_BACKREF or T_STR_END or T_VAR_BEGIN: Unterminated string or variable');
  assert.equal(err("file('/etc/passwd') == ''", EXPR_FLAG_RESTRICTED), 'file not available in restricted context');
  assert.equal(err("-f 'x'", EXPR_FLAG_RESTRICTED), '-f not available in restricted context');
  assert.equal(err("%{req:a'b} == 1"), 'flex scanner jammed');
});

test('string expressions', () => {
  const ok = (s: string): string | undefined => { const r = parseStringExpr(s); return r.ok ? r.expr.constant : `ERR ${r.error}`; };
  assert.equal(ok('plain text'), 'plain text');
  assert.equal(ok(''), '');
  assert.equal(ok('a\\tb'), 'a\tb');
  assert.equal(ok("quotes ' and \" stay"), "quotes ' and \" stay");
  assert.equal(ok('%{REQUEST_URI}'), undefined);
  assert.equal(ok('%{NOPE}'), "ERR Variable 'NOPE' does not exist");
  assert.equal(ok('x%{'), 'ERR syntax error, unexpected T_ERROR, expecting T_ID: Unterminated string or variable');
});

test('PCRE refuses {} quantifier numbers over 65535 (JavaScript would accept them)', async () => {
  const { pcreQuantifierTooBig, compilePcre } = await import('../../../src/expr/index.js');
  assert.equal(pcreQuantifierTooBig('a{111111111111111111}'), true);
  assert.equal(pcreQuantifierTooBig('a{1,70000}'), true);
  assert.equal(pcreQuantifierTooBig('a{65535}'), false);
  assert.equal(pcreQuantifierTooBig('a\\{99999}'), false);
  assert.equal(pcreQuantifierTooBig('[{99999}]'), false);
  assert.equal(compilePcre('x{70000}'), null);
  assert.notEqual(compilePcre('x{3}'), null);
});
