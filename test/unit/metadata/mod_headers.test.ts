// mod_headers: directive errors as apache2 -t 2.4.71 prints them, and header results measured
// on Apache 2.4.71 serving a static file (a.txt, 3 bytes) with the same directives.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { configure, errorOf, hook, makeRequest, runFilters, type Configured, type RequestSetup } from './helpers.js';
import headers, { FIXUP_HEADERS_ERR, FIXUP_HEADERS_OUT, hasToken, parseFormat } from '../../../src/modules/metadata/mod_headers.js';
import env from '../../../src/modules/metadata/mod_env.js';
import setenvif from '../../../src/modules/metadata/mod_setenvif.js';
import { DECLINED } from '../../../src/server/module.js';
import type { Request } from '../../../src/server/request/request.js';
import { EOS } from '../../../src/server/filters.js';

const ACTIONS_ERR = "first argument must be 'add', 'set', 'setifempty', 'append', 'merge', 'unset', 'echo', 'note', 'edit', or 'edit*'.";
const ENV_ERR = 'error: missing environment variable name. envclause should be in the form env=envar ';

test('directive errors are httpd\'s', () => {
  const cases: [string, string][] = [
    ['Header', ACTIONS_ERR],
    ['Header set', 'Header requires three arguments'],
    ['Header set X', 'Header requires three arguments'],
    ['Header foo X y', ACTIONS_ERR],
    ['Header always', ACTIONS_ERR],
    ['Header always set X', 'Header requires three arguments'],
    ['Header set X y env=', ENV_ERR],
    ['Header set X y env=!', ENV_ERR],
    ['Header set X y bogus', 'Unknown parameter: bogus'],
    ['Header set X y z w', 'Too many arguments to directive'],
    ['Header set X y env=A extra', 'Too many arguments to directive'],
    ['Header unset X y z', 'header unset takes two arguments'],
    ['Header unset X env=A env=B', 'header unset takes two arguments'],
    ['Header unset X %z', 'Unknown parameter: %z'],
    ['Header echo X y', 'Unknown parameter: y'],
    ['Header echo X y z', 'Header echo takes two arguments'],
    ['Header echo (', 'Header echo regex could not be compiled'],
    ['Header echo ( y', 'Header echo regex could not be compiled'],
    ['RequestHeader echo X', 'Header echo only valid on Header directives'],
    ['RequestHeader echo X y z', 'Header echo takes two arguments'],
    ['Header edit X', 'Header edit requires a match and a substitution'],
    ['Header edit X a', 'Header edit requires a match and a substitution'],
    ['Header edit X ( b', 'Header edit regex could not be compiled'],
    ['Header edit X ( b bogus', 'Header edit regex could not be compiled'],
    ['Header edit X a b c', 'Unknown parameter: c'],
    ['Header edit X a b env=C d', 'Header has too many arguments'],
    ['RequestHeader edit X a b env=C d', 'RequestHeader has too many arguments'],
    ['Header edit X a %z', 'Unrecognized header format %z'],
    ['Header edit X a %z bogus', 'Unknown parameter: bogus'],
    ['Header note X', 'Header requires three arguments'],
    ['Header note X %z', 'Unrecognized header format %z'],
    ['RequestHeader note X', "RequestHeader does not support the 'note' action"],
    ['RequestHeader note X y bogus', "RequestHeader does not support the 'note' action"],
    ['RequestHeader note X y z w', "RequestHeader does not support the 'note' action"],
    ['RequestHeader set X', 'Header requires three arguments'],
    ['RequestHeader foo X', ACTIONS_ERR],
    ['RequestHeader always set X y', ACTIONS_ERR],
    ['Header set X %z', 'Unrecognized header format %z'],
    ['Header set X %z bogus', 'Unknown parameter: bogus'],
    ['Header set X %{abc', 'Unrecognized header format %'],
    ['Header set X "%{abc}"', 'Unrecognized header format %'],
    ['Header set X "%{Foo}^ti"', 'Unrecognized header format %^'],
    ['Header set X "expr=%{REQUEST_URI}" bogus', 'Unknown parameter: bogus'],
    ['Header merge X', 'Header requires three arguments'],
    ['Header add: X y', ACTIONS_ERR],
  ];
  for (const [line, err] of cases) assert.equal(errorOf(line), err, line);
});

test('accepted forms', () => {
  for (const line of [
    'Header set X ""', 'Header onsuccess set X y', 'Header set X y env=FOO', 'Header set X y ENV=FOO',
    'Header set X y early', 'Header set X y EARLY', 'Header unset X', 'Header unset X env=A', 'Header echo X',
    'Header edit X a b', 'Header edit X a b env=C', 'Header note X n', 'Header note X "%{FOO}e"', 'Header set X %',
    'Header set X "%{abc}e %D %t %l %i %b %s %{x}s"', 'Header set X y expr=true', 'Header set X expr=%{REQUEST_URI}',
    'Header edit X a expr=%{REQUEST_URI}', 'Header set X:Y y', 'Header setifempty X y', 'Header SET X y',
    'Header Always set X y', 'Header ALWAYS echo X', 'Header set X y env=!!A', 'Header set "" y', 'Header set : y',
    'Header edit X "" b', 'Header edit X a ""', 'Header set X "expr="',
  ]) assert.equal(errorOf(line), '', line);
  assert.equal(errorOf('Header set X y early', { path: '/tmp' }), '');
});

test('entries go to the RequestHeader, onsuccess and always lists; names lose a colon', () => {
  const c = configure(['RequestHeader set A 1', 'Header set B:x 2', 'Header always set C 3', 'Header onsuccess unset D']);
  const d = headers.dirIn(c.section)!;
  assert.deepEqual(d.fixupIn.map((e) => e.header), ['A']);
  assert.deepEqual(d.fixupOut.map((e) => e.header), ['B', 'D']);
  assert.deepEqual(d.fixupErr.map((e) => e.header), ['C']);
});

/** A static file response as httpd's default handler leaves it, then the Header filter. */
async function serve(c: Configured, setup: RequestSetup = {}): Promise<{ r: Request; hdrs: [string, string][]; log: string[] }> {
  const { r, log } = makeRequest(c, setup);
  hook(setenvif, 'postReadRequest')(r);
  hook(headers, 'postReadRequest')(r);
  hook(setenvif, 'headerParser')(r);
  hook(env, 'fixups')(r);
  assert.equal(hook(headers, 'fixups')(r), DECLINED);
  r.contentType = 'text/plain';
  r.headersOut.set('Last-Modified', 'Sun, 22 Nov 2026 02:54:11 GMT');
  r.headersOut.set('ETag', '"3-660d49786b0b7"');
  r.headersOut.set('Accept-Ranges', 'bytes');
  r.headersOut.set('Content-Length', '3');
  hook(headers, 'insertFilter')(r);
  const out = await runFilters(r, [EOS]);
  assert.deepEqual(out, [[EOS]]);
  return { r, hdrs: r.headersOut.entries(), log };
}

test('measured: edit, edit*, merge, format specifiers, note, echo, Content-Type', async () => {
  const c = configure([
    'SetEnvIf Request_URI "." SEIVAR=fromsetenvif',
    'SetEnv SEIVAR fromsetenv',
    'SetEnv PLAIN plainval',
    'Header set X-Sei "%{SEIVAR}e"',
    'Header set X-Case "%{plain}e"',
    'Header set X-CaseCond yes env=plain',
    'Header set X-E1 "aaa"',
    'Header edit* X-E1 "^a" "b"',
    'Header set X-E3 "abc"',
    'Header edit X-E3 "(b)" "[&][$1][\\$1][$2]"',
    'Header set X-E4 "abcabc"',
    'Header edit X-E4 "b" "%{PLAIN}e"',
    'Header set X-M "a, \\"b\\", c"',
    'Header merge X-M "\\"b\\""',
    'Header merge X-M "b"',
    'Header merge X-M c',
    'Header set X-T "%t|%D|%l|%i|%b|%%|%{HTTPS}s|%{NOPE}e|x\\ty\\\\z\\q"',
    'Header note X-T tnote',
    'Header note X-Missing mnote',
    'Header set X-N1 "%{tnote}e"',
    'Header always echo ^X-Ec',
    'Header echo ^X-Ec',
    'Header set Content-Type "text/x-foo"',
    'Header unset X-E3 env=!PLAIN',
  ]);
  assert.equal(c.error, undefined);
  const { r, hdrs } = await serve(c, { headers: [['X-Ec-1', 'one']] });
  const t = hdrs.find(([k]) => k === 'X-T')![1];
  assert.match(t, /^t=\d{16}\|D=\d+\|l=\d+\.\d\d\/\d+\.\d\d\/\d+\.\d\d\|i=\d+\|b=\d+\|%\|\(null\)\|\(null\)\|x\ty\\z\\q$/);
  // ap_get_sload over the scoreboard (attached at first use here): percentages of the slots.
  const idle = Number(/\|i=(\d+)/.exec(t)![1]);
  const busy = Number(/\|b=(\d+)/.exec(t)![1]);
  assert.ok(idle + busy >= 98 && idle + busy <= 100, t);
  assert.deepEqual(hdrs.filter(([k]) => k !== 'X-T'), [
    ['Last-Modified', 'Sun, 22 Nov 2026 02:54:11 GMT'],
    ['ETag', '"3-660d49786b0b7"'],
    ['Accept-Ranges', 'bytes'],
    ['Content-Length', '3'],
    ['X-Ec-1', 'one'],
    ['X-Sei', 'fromsetenvif'],
    ['X-Case', 'plainval'],
    ['X-CaseCond', 'yes'],
    ['X-E1', 'bbb'],
    ['X-E3', 'a[&][b][$1][]c'],
    ['X-E4', 'aplainvalcabc'],
    ['X-M', 'a, "b", c, b'],
    ['X-N1', '(null)'],
    ['X-Ec-1', 'one'],
    ['Content-Type', 'text/x-foo'],
  ]);
  assert.equal(r.contentType, 'text/x-foo');
  assert.equal(r.notes.get('tnote'), t);
  assert.equal(r.notes.has('mnote'), false);
});

test('measured: notes, setifempty, append to the first value, edit moves values to the end', async () => {
  const c = configure([
    'SetEnv PLAIN plainval',
    'Header set X-T "note-me"',
    'Header note X-T tnote',
    'Header note X-Missing mnote',
    'Header note X-T "%{PLAIN}e"',
    'Header setifempty Content-Type "text/x-sie"',
    'Header setifempty X-Sie "one"',
    'Header setifempty X-Sie "two"',
    'Header add X-Add "1"',
    'Header add X-Add "2"',
    'Header append X-Add "3"',
    'Header edit X-Add "^(\\d)$" "n$1"',
    'Header set X-Colon: "c"',
    'Header unset ETag',
  ]);
  const { r, hdrs } = await serve(c);
  assert.deepEqual(hdrs, [
    ['Last-Modified', 'Sun, 22 Nov 2026 02:54:11 GMT'],
    ['Accept-Ranges', 'bytes'],
    ['Content-Length', '3'],
    ['X-T', 'note-me'],
    ['Content-Type', 'text/x-sie'],
    ['X-Sie', 'one'],
    ['X-Add', '1, 3'],
    ['X-Add', 'n2'],
    ['X-Colon', 'c'],
  ]);
  assert.equal(r.contentType, 'text/x-sie');
  assert.deepEqual([...r.notes], [['tnote', 'note-me'], ['plainval', 'note-me']]);
});

test('measured: append to an empty value, edits to empty, merge tokens, Content-Type edit, echo after RequestHeader', async () => {
  const c = configure([
    'Header set X-Empty ""',
    'Header append X-Empty "a"',
    'Header set X-Dup "1"',
    'Header add X-Dup "2"',
    'Header edit X-Dup "^(.)$" "<$1>"',
    'Header set X-Em "v"',
    'Header edit X-Em "v" ""',
    'Header set X-Ws "  a  ,b"',
    'Header merge X-Ws "a"',
    'Header merge X-Ws "b"',
    'Header set Content-Type "text/x-bar"',
    'Header edit Content-Type "bar" "baz"',
    'RequestHeader set X-Echo-Me "reqval"',
    'Header echo ^X-Echo',
  ]);
  const { r, hdrs } = await serve(c);
  assert.deepEqual(hdrs.slice(4), [
    ['X-Empty', ', a'],
    ['X-Dup', '<1>'],
    ['X-Dup', '<2>'],
    ['X-Em', ''],
    ['X-Ws', '  a  ,b, a'],
    ['Content-Type', 'text/x-baz'],
    ['X-Echo-Me', 'reqval'],
  ]);
  assert.equal(r.contentType, 'text/x-baz');
});

test('measured: RequestHeader on Content-Type leaves the response type alone', async () => {
  const c = configure(['RequestHeader set Content-Type "text/x-req"', 'RequestHeader edit Content-Type "req" "edited"']);
  const { r } = await serve(c);
  assert.equal(r.contentType, 'text/plain');
  assert.equal(r.headersIn.get('Content-Type'), 'text/x-edited');
});

test('measured: edit and edit* with empty matches (edit* does not loop)', async () => {
  const c = configure([
    'Header set X-E2 "abc"', 'Header edit X-E2 "x*" "-"',
    'Header set X-E6 "abc"', 'Header edit X-E6 "$" "-"',
    'Header set X-E7 "abc"', 'Header edit* X-E7 "b|$" "-"',
  ]);
  const { hdrs } = await serve(c);
  assert.deepEqual(hdrs.slice(4), [['X-E2', '-abc'], ['X-E6', 'abc-'], ['X-E7', 'a-c-']]);
});

test('measured: %{VAR}}e skips every closing brace; names are case-insensitive', async () => {
  const c = configure([
    'SetEnv FOO fooval',
    'SetEnvIf Request_URI . A==b',
    'Header set X-1 "%{FOO}}e|%{FOO}e}|%{A}e"',
    'Header set X-2 "%{Foo}e"',
  ]);
  const { hdrs } = await serve(c);
  assert.deepEqual(hdrs.slice(4), [['X-1', 'fooval|fooval}|b'], ['X-2', 'fooval']]);
});

test('conformance case headers-conditional: env= and env=! with RequestHeader', async () => {
  const c = configure([
    'SetEnvIf User-Agent "^curl" IS_CURL',
    'Header set X-Curl yes env=IS_CURL',
    'Header set X-Not-Curl yes env=!IS_CURL',
    'RequestHeader set X-Injected injected-value',
    'RequestHeader unset User-Agent',
    'RequestHeader append Accept extra',
  ]);
  const a = await serve(c, { headers: [['User-Agent', 'curl/8.0'], ['Accept', 'text/plain']] });
  assert.deepEqual(a.hdrs.slice(4), [['X-Curl', 'yes']]);
  assert.deepEqual(a.r.headersIn.entries(), [['Accept', 'text/plain, extra'], ['X-Injected', 'injected-value']]);
  const b = await serve(c, { headers: [['User-Agent', 'Mozilla/5.0']] });
  assert.deepEqual(b.hdrs.slice(4), [['X-Not-Curl', 'yes']]);
  assert.deepEqual(b.r.headersIn.entries(), [['X-Injected', 'injected-value'], ['Accept', 'extra']]);
});

test('conformance case headers-merge-order: server entries, then sections in merge order', async () => {
  const c = configure(['Header set X-Level directory', 'Header append X-Trail directory'], {
    path: '/htdocs', serverLines: ['Header set X-Level server', 'Header append X-Trail server'],
  });
  const { hdrs } = await serve(c);
  assert.deepEqual(hdrs.slice(4), [['X-Level', 'directory'], ['X-Trail', 'server, directory']]);
});

test('filters: FIXUP_HEADERS_OUT when either Header list has entries; FIXUP_HEADERS_ERR for always only', async () => {
  const names = (r: Request): string[] => r.outputFilters.map((f) => f.spec.name);
  const none = makeRequest(configure(['RequestHeader set A b'])).r;
  hook(headers, 'insertFilter')(none);
  hook(headers, 'insertErrorFilter')(none);
  assert.deepEqual(names(none), []);

  const onsuccess = makeRequest(configure(['Header set A b'])).r;
  hook(headers, 'insertFilter')(onsuccess);
  hook(headers, 'insertErrorFilter')(onsuccess);
  assert.deepEqual(names(onsuccess), ['FIXUP_HEADERS_OUT']);

  const c = configure(['Header set X-Onsuccess yes', 'Header always set X-Always yes']);
  const ok = makeRequest(c).r;
  hook(headers, 'insertFilter')(ok);
  await runFilters(ok, [EOS]);
  assert.deepEqual(ok.headersOut.entries(), [['X-Onsuccess', 'yes']]);
  assert.deepEqual(ok.errHeadersOut.entries(), [['X-Always', 'yes']]);
  assert.equal(ok.outputFilters[0]!.removed, true);

  // The error path: the chain is back to the protocol filters, and only "always" applies.
  const err = makeRequest(c).r;
  err.status = 404;
  hook(headers, 'insertErrorFilter')(err);
  assert.deepEqual(names(err), ['FIXUP_HEADERS_ERR']);
  await runFilters(err, [EOS]);
  assert.deepEqual(err.headersOut.entries(), []);
  assert.deepEqual(err.errHeadersOut.entries(), [['X-Always', 'yes']]);
  assert.equal(FIXUP_HEADERS_OUT.type, FIXUP_HEADERS_ERR.type);
});

test('early entries run in post_read_request only, with the server configuration', async () => {
  const c = configure(['RequestHeader set X-Dir 1 early', 'Header set X-DirOut 1 early'], {
    path: '/x',
    serverLines: ['RequestHeader edit Destination ^https: http: early', 'Header set X-Early 1 early', 'Header always set X-EarlyErr 1 early', 'RequestHeader set X-Late 1'],
  });
  const { r } = makeRequest(c, { headers: [['Destination', 'https://h/x']], perDir: c.server.lookupDefaults });
  assert.equal(hook(headers, 'postReadRequest')(r), DECLINED);
  assert.deepEqual(r.headersIn.entries(), [['Destination', 'http://h/x']]);
  assert.deepEqual(r.headersOut.entries(), [['X-Early', '1']]);
  assert.deepEqual(r.errHeadersOut.entries(), [['X-EarlyErr', '1']]);
  // Later, with the full configuration: early entries are skipped, section ones never ran.
  r.perDirConfig = c.merged;
  r.headersOut.clear();
  r.errHeadersOut.clear();
  hook(headers, 'fixups')(r);
  hook(headers, 'insertFilter')(r);
  await runFilters(r, [EOS]);
  assert.deepEqual(r.headersIn.entries(), [['Destination', 'http://h/x'], ['X-Late', '1']]);
  assert.deepEqual(r.headersOut.entries(), []);
  assert.deepEqual(r.errHeadersOut.entries(), []);
});

test('expr= conditions and expr= values are evaluated per request', async () => {
  const c = configure([
    'Header set X-Cond yes "expr=%{REQUEST_URI} =~ m#^/a#"', 'Header set X-No no "expr=%{REQUEST_URI} =~ m#^/y#"',
    'Header set X-Val "expr=%{REQUEST_URI}"', 'Header set X-Bad yes "expr=file(\'/nonexistent\') == \'\'"',
  ]);
  const d = headers.dirIn(c.section)!;
  const cond = d.fixupOut[0]!.condition;
  assert.equal(cond.kind === 'expr' ? cond.expr.source : '', '%{REQUEST_URI} =~ m#^/a#');
  assert.equal(d.fixupOut[2]!.exprOut?.source, '%{REQUEST_URI}');
  const { hdrs, log: all } = await serve(c);
  // A false condition skips its entry; a failed evaluation is logged and the entry applied.
  assert.deepEqual(hdrs.slice(4), [['X-Cond', 'yes'], ['X-Val', '/a.txt'], ['X-Bad', 'yes']]);
  const log = all.filter((l) => l.includes(':error]'));
  assert.equal(log.length, 2);
  assert.match(log[0]!, /Evaluation of expression from .* failed: Cannot open file \/nonexistent$/);
  assert.match(log[1]!, /^\[headers:error\] AH01501: Failed to evaluate expression \(Cannot open file \/nonexistent\) - ignoring$/);
});

test('expr= parse errors are refused with httpd\'s wording', () => {
  assert.equal(errorOf('Header set X-Cond yes "expr=%{NOPE} == 1"'), "Can't parse envclause/expression: Variable 'NOPE' does not exist");
  assert.equal(errorOf('Header set X-V "expr=%{NOPE}"'), "Can't parse value expression : Variable 'NOPE' does not exist");
});

test('format strings', () => {
  assert.equal(parseFormat('%z'), 'Unrecognized header format %z');
  assert.deepEqual(parseFormat('a%'), [{ text: 'a' }, { text: '%' }]);
  const f = parseFormat('a\\nb\\x%%c');
  assert.ok(Array.isArray(f));
  assert.deepEqual(f, [{ text: 'a\nb\\x' }, { text: '%' }, { text: 'c' }]);
});

test('merge token comparison', () => {
  assert.equal(hasToken('a, "b", c', '"b"'), true);
  assert.equal(hasToken('a, "b", c', 'b'), false);
  assert.equal(hasToken('  a  ,b', 'a'), false);
  assert.equal(hasToken('  a  ,b', 'b'), true);
  assert.equal(hasToken('"x,y", z', '"x,y"'), true);
  assert.equal(hasToken('', ''), false);
});

test('measured: set, append and edit keep the spelling of the existing header', async () => {
  const c = configure(['Header add x-foo 1', 'Header set X-FOO 2', 'Header add x-bar 1', 'Header append X-BAR 2', 'Header add x-baz 1', 'Header edit X-BAZ 1 2']);
  const { hdrs } = await serve(c);
  assert.deepEqual(hdrs.slice(4), [['x-foo', '2'], ['x-bar', '1, 2'], ['x-baz', '2']]);
});
