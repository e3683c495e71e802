// mod_setenvif: directive errors as apache2 -t 2.4.71 prints them, and request-time results
// measured on Apache 2.4.71 (the variables were read back with a LogFormat of %{VAR}e).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { configure, errorOf, hook, makeRequest } from './helpers.js';
import setenvif, { nonRegexPattern } from '../../../src/modules/metadata/mod_setenvif.js';
import { compileApacheRegex, pregsub, translatePcre } from '../../../src/server/util-pcre.js';
import { tableGet } from '../../../src/server/apr-table.js';
import { DECLINED } from '../../../src/server/module.js';
import type { Request } from '../../../src/server/request/request.js';

test('directive errors are httpd\'s', () => {
  const cases: [string, string][] = [
    ['SetEnvIf', 'Missing header-field name for SetEnvIf'],
    ['SetEnvIf X', 'Missing regular expression for SetEnvIf'],
    ['SetEnvIf X y', 'Missing envariable expression for SetEnvIf'],
    ['SetEnvIf X "" z', 'Missing regular expression for SetEnvIf'],
    ['SetEnvIf X y "" z', 'Missing envariable expression for SetEnvIf'],
    ['SetEnvIf X ( z', 'SetEnvIf regex could not be compiled.'],
    ['SetEnvIf ( y z', 'SetEnvIfHeader name regex could not be compiled.'],
    ['SetEnvIf X[ y z', 'SetEnvIfHeader name regex could not be compiled.'],
    ['SetEnvIf X "a**" z', 'SetEnvIf regex could not be compiled.'],
    ['SetEnvIf X "x{2,1}" z', 'SetEnvIf regex could not be compiled.'],
    ['SetEnvIfNoCase X', 'Missing regular expression for SetEnvIfNoCase'],
    ['SetEnvIfNoCase X y', 'Missing envariable expression for SetEnvIfNoCase'],
    ['BrowserMatch', 'Missing regular expression for BrowserMatch'],
    ['BrowserMatch y', 'Missing envariable expression for BrowserMatch'],
    ['BrowserMatch ( z', 'BrowserMatch regex could not be compiled.'],
    ['BrowserMatchNoCase', 'Missing regular expression for BrowserMatchNoCase'],
    ['SetEnvIfExpr', 'Missing expression for SetEnvIfExpr'],
    ['SetEnvIfExpr true', 'Missing envariable expression for SetEnvIfExpr'],
  ];
  for (const [line, err] of cases) assert.equal(errorOf(line), err, line);
});

test('patterns httpd accepts compile', () => {
  for (const line of [
    'SetEnvIf X y z=', 'SetEnvIf X a\\b z', 'SetEnvIf X "a{" z', 'SetEnvIf X "[[:alpha:]]" z',
    'SetEnvIf X "(?i)abc" z', 'SetEnvIf X "\\Aabc\\z" z', 'SetEnvIf X "(?<n>a)\\k<n>" z',
    'SetEnvIfExpr "true" z',
  ]) assert.equal(errorOf(line), '', line);
  assert.equal(errorOf('SetEnvIf X y z', { path: '/x' }), '');
});

test('rules at server level go to the server configuration, in sections to the section\'s', () => {
  const c = configure(['SetEnvIf X y z'], { path: '/x', serverLines: ['SetEnvIf A b c'] });
  assert.equal(setenvif.server(c.server).conditionals.length, 1);
  assert.equal(setenvif.dirIn(c.server.lookupDefaults)!.conditionals.length, 0);
  assert.equal(setenvif.dirIn(c.section)!.conditionals.length, 1);
});

test('consecutive rules with the same attribute, pattern and case share one entry', () => {
  const c = configure(['SetEnvIf x-simple abc O=1', 'SetEnvIf X-SIMPLE abc !O P=!yes', 'SetEnvIfNoCase X-Simple abc Q']);
  const list = setenvif.server(c.server).conditionals;
  assert.equal(list.length, 2);
  assert.deepEqual(list[0]!.features, [['O', '!'], ['P', '!yes']]);
  assert.equal(list[0]!.name, list[1]!.name);
});

/** Runs the server rules (post_read_request) and returns the variables named. */
function serverRun(lines: readonly string[], setup: Parameters<typeof makeRequest>[1], names: readonly string[]): Record<string, string> {
  const c = configure(lines);
  const { r } = makeRequest(c, setup);
  assert.equal(hook(setenvif, 'postReadRequest')(r), DECLINED);
  const out: Record<string, string> = {};
  for (const n of names) out[n] = tableGet(r.subprocessEnv, n) ?? '-';
  return out;
}

test('measured: attributes, captures, literals, the shared-value quirk, merging', () => {
  const got = serverRun([
    'SetEnvIf FOO ^$ FOO=x A=1',
    'SetEnvIf FOO ^x$ B=1',
    'SetEnvIf Request_URI . FOO2=x',
    'SetEnvIf X-Other . C0=1',
    'SetEnvIf FOO2 ^x$ C=1',
    'SetEnvIf ^X-H(.)$ (.+) D=$1',
    'SetEnvIf X-Simple abc E=$1 F=$0',
    'SetEnvIf X-Simple a(b)c G=$1$0',
    'SetEnvIfNoCase X-Simple ABC H=1',
    'SetEnvIf X-Simple ABC I=1',
    'SetEnvIf Remote_Host ^127\\.0\\.0\\.1$ J=1',
    'SetEnvIf Request_URI ^(.*)$ K=$1',
    'SetEnvIf Request_Protocol ^(.*)$ L=$1',
    'SetEnvIf Server_Addr ^(.*)$ M=$1',
    'SetEnvIf Request_Method ^(.*)$ N=$1',
    'SetEnvIf x-simple abc O=1',
    'SetEnvIf X-SIMPLE abc !O P=!yes',
    'SetEnvIf Missing ^$ Q=empty',
    'SetEnvIf Remote_Addr ^(.*)$ R=$1',
    'SetEnvIf Request_URI . S=1',
    'SetEnvIf Request_URI . S=2 T',
    'SetEnvIf X-Simple ^(a)(b)(c)$ T=$3$2$1$4\\$1\\\\x',
  ], {
    uri: '/a%2e%74xt',
    headers: [['X-H1', 'one'], ['X-H2', 'two'], ['X-Simple', 'abc']],
  }, 'ABCDEFGHIJKLMNOPQRST'.split(''));
  assert.deepEqual(got, {
    A: '1', B: '-', C: '1', D: 'two', E: '$1', F: '$0', G: 'babc', H: '1', I: '-', J: '1',
    K: '/a%2e%74xt', L: 'HTTP/1.1', M: '127.0.0.1', N: 'GET', O: '-', P: '-', Q: 'empty', R: '127.0.0.1', S: '2', T: 'cba$1x',
  });
});

test('measured: variable words (ap_getword on "=")', () => {
  const got = serverRun(['SetEnvIf Request_URI . A==b B=b=c C= D== =E !F=x'], {}, ['A', 'B', 'C', 'D', 'F', '!F', '']);
  assert.deepEqual(got, { A: 'b', B: 'b=c', C: '1', D: '1', F: '-', '!F': 'x', '': 'E' });
});

test('BrowserMatch, Remote_Host with a looked-up name, Request_URI', () => {
  const got = serverRun([
    'BrowserMatch "MSIE" OLD_BROWSER=yes',
    'BrowserMatchNoCase "^bot/([0-9]+)" BOT=$1',
    'SetEnvIf Remote_Host ^client\\.example$ NAMED',
    'SetEnvIf Request_URI "\\.txt$" IS_TEXT',
  ], { headers: [['User-Agent', 'Bot/42 (MSIE)']], remoteHost: 'client.example' }, ['OLD_BROWSER', 'BOT', 'NAMED', 'IS_TEXT']);
  assert.deepEqual(got, { OLD_BROWSER: 'yes', BOT: '42', NAMED: '1', IS_TEXT: '1' });
});

test('server rules on the first call of a request, section rules on later calls', () => {
  const c = configure(['SetEnvIf Request_URI . DIR'], { path: '/x', serverLines: ['SetEnvIf Request_URI . SRV'] });
  const { r } = makeRequest(c);
  hook(setenvif, 'postReadRequest')(r);
  assert.deepEqual([...r.subprocessEnv.keys()], ['SRV']);
  hook(setenvif, 'headerParser')(r);
  assert.deepEqual([...r.subprocessEnv.keys()], ['SRV', 'DIR']);
  // A request whose first call is header_parser (no post_read_request) runs the server rules.
  const { r: sub } = makeRequest(c);
  hook(setenvif, 'headerParser')(sub);
  assert.deepEqual([...sub.subprocessEnv.keys()], ['SRV']);
});

test('a virtual host runs the main server\'s rules, then its own', () => {
  const c = configure(['SetEnvIf Request_URI . ORDER=vhost VH'], { vhost: true, serverLines: ['SetEnvIf Request_URI . ORDER=main MAIN'] });
  const { r } = makeRequest(c);
  hook(setenvif, 'postReadRequest')(r);
  assert.deepEqual([...r.subprocessEnv], [['ORDER', 'vhost'], ['MAIN', '1'], ['VH', '1']]);
});

test('SetEnvIfExpr: evaluated per request; a regex with groups gives $1 to the values', () => {
  const c = configure(['SetEnvIfExpr "%{REQUEST_URI} =~ /x/" HIT', 'SetEnvIfExpr "%{REQUEST_URI} =~ m#^/(.)#" FIRST=$1', 'SetEnvIfExpr "false" NEVER']);
  const e = setenvif.server(c.server).conditionals[0]!;
  assert.equal(e.expr?.source, '%{REQUEST_URI} =~ /x/');
  const { r } = makeRequest(c, { uri: '/x' });
  hook(setenvif, 'postReadRequest')(r);
  assert.deepEqual([...r.subprocessEnv], [['HIT', '1'], ['FIRST', 'x']]);
  assert.equal(configure(['SetEnvIfExpr "%{NOPE} == 1" X']).error, `Could not parse expression "%{NOPE} == 1": Variable 'NOPE' does not exist`);
});

test('trace2 logs each variable set', () => {
  const c = configure(['SetEnvIf Request_URI . A B']);
  const { r, log } = makeRequest(c);
  hook(setenvif, 'postReadRequest')(r as Request);
  assert.deepEqual(log, ['[setenvif:trace2] Setting A', '[setenvif:trace2] Setting B']);
});

test('non_regex_pattern', () => {
  assert.equal(nonRegexPattern('MSIE'), 'MSIE');
  assert.equal(nonRegexPattern('a\\.b'), 'a.b');
  assert.equal(nonRegexPattern('a\\\\b'), 'a\\b');
  assert.equal(nonRegexPattern('a.b'), undefined);
  assert.equal(nonRegexPattern('a\\b'), undefined);
});

test('PCRE translation', () => {
  assert.deepEqual(translatePcre('[[:alpha:]]+'), { source: '[A-Za-z]+', flags: '' });
  assert.deepEqual(translatePcre('[^[:space:]]'), { source: '[^\\t\\n\\v\\f\\r ]', flags: '' });
  assert.deepEqual(translatePcre('(?i)abc'), { source: 'abc', flags: 'i' });
  assert.deepEqual(translatePcre('[]a]'), { source: '[\\]a]', flags: '' });
  assert.deepEqual(translatePcre('(?P<x>a)(?P=x)'), { source: '(?<x>a)\\k<x>', flags: '' });
  assert.deepEqual(translatePcre('\\Qa.b\\E+'), { source: 'a\\.b+', flags: '' });
  assert.equal(translatePcre('a\\'), undefined);
  assert.equal(translatePcre('[[:nope:]]'), undefined);
  const re = compileApacheRegex('\\Aab\\z', false)!;
  assert.ok(re.test('ab') && !re.test('ab\n') && !re.test('xab'));
  assert.ok(compileApacheRegex('a.b', false)!.test('a\nb'), 'DOTALL by default');
  assert.ok(!compileApacheRegex('a$', false)!.test('a\n'), 'DOLLAR_ENDONLY by default');
  assert.ok(!compileApacheRegex('^\\s$', false)!.test('\u00a0'), 'PCRE \\s is ASCII');
  assert.ok(compileApacheRegex('ABC', true)!.test('abc'));
});

test('ap_pregsub', () => {
  const m = /(a)(b)?(c)/.exec('xac');
  assert.equal(pregsub('[$0][$1][$2][$3][$9][&][\\$1][\\\\]', m), '[ac][a][][c][][&][$1][\\]');
  assert.equal(pregsub('trailing\\', m), 'trailing\\');
  assert.equal(pregsub('x'.repeat(70000), m), undefined);
});
