// Unit tests of what scripts are given and what is read back from them (util-script.ts,
// mod_cgi's timeout parser and argument list), with a bounded fuzz of the header scan.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  http2env, findPathInfo, createEnvironment, escapeUri, scanScriptHeader, type ScriptLine,
} from '../../../src/server/util-script.js';
import { timeoutParameter } from '../../../src/modules/generators/mod_cgi.js';
import { buildArgv, escapeShellCmd } from '../../../src/modules/generators/cgi-common.js';
import { makeCtx, fakeRuntime, makeRequest } from '../mappers/helpers.js';

test('http2env: letters upper-cased, - to _, other names not exported', () => {
  assert.equal(http2env('User-Agent'), 'HTTP_USER_AGENT');
  assert.equal(http2env('x-a1'), 'HTTP_X_A1');
  assert.equal(http2env('X_Under'), undefined);
  assert.equal(http2env('X.Dot'), undefined);
  // Asked again (the remembered answers): the same, an unexported name included.
  assert.equal(http2env('User-Agent'), 'HTTP_USER_AGENT');
  assert.equal(http2env('X_Under'), undefined);
  assert.equal(http2env(''), 'HTTP_');
  assert.equal(http2env(''), 'HTTP_');
  const long = 'X-' + 'a'.repeat(100);
  assert.equal(http2env(long), 'HTTP_X_' + 'A'.repeat(100));
});

test('findPathInfo: where PATH_INFO starts, slashes merged as httpd does', () => {
  assert.equal(findPathInfo('/cgi-bin/env.cgi/extra/path', '/extra/path'), '/cgi-bin/env.cgi'.length);
  assert.equal(findPathInfo('/cgi-bin//env.cgi/more//slashes/', '/more/slashes/'), '/cgi-bin//env.cgi'.length);
  assert.equal(findPathInfo('/a', '/zzz'), 2);
});

test('createEnvironment: names made safe, TZ passed from the server', () => {
  const prev = process.env['TZ'];
  process.env['TZ'] = 'UTC';
  try {
    const env = createEnvironment(new Map([['1ABC', 'x'], ['a-b.c', 'y'], ['OK_1', 'z']]));
    assert.deepEqual(env, { TZ: 'UTC', _ABC: 'x', a_b_c: 'y', OK_1: 'z' });
    assert.equal(createEnvironment(new Map([['TZ', 'CET']]))['TZ'], 'CET');
  } finally {
    if (prev === undefined) delete process.env['TZ']; else process.env['TZ'] = prev;
  }
});

test('escapeUri keeps the path characters httpd keeps', () => {
  assert.equal(escapeUri('/a b/%/ü?'), '/a%20b/%25/%fc%3f');
});

test('CGIScriptTimeout values as ap_timeout_parameter_parse reads them', () => {
  assert.equal(timeoutParameter('5'), 5000);
  assert.equal(timeoutParameter('700ms'), 700);
  assert.equal(timeoutParameter('2min'), 120000);
  assert.equal(timeoutParameter('1h'), 3600000);
  assert.equal(timeoutParameter('soon'), 0); // strtoll finds no number; "s" is seconds
  assert.equal(timeoutParameter('xyz'), undefined);
  assert.equal(timeoutParameter('5m'), undefined);
  assert.equal(timeoutParameter('-1'), undefined);
});

test('ISINDEX arguments: only without "=", split at +, unescaped, shell-escaped', () => {
  const { ctx } = makeCtx();
  const { rt } = fakeRuntime(ctx);
  const r = makeRequest(rt, [], { filename: '/srv/x.cgi', args: 'one+two%20three+a%3Bb' });
  assert.deepEqual(buildArgv(r), ['/srv/x.cgi', 'one', 'two three', 'a\\;b']);
  r.args = 'k=v+w';
  assert.deepEqual(buildArgv(r), ['/srv/x.cgi']);
  assert.equal(escapeShellCmd('a&b|c$(d)'), 'a\\&b\\|c\\$\\(d\\)');
});

function linesOf(text: string): () => Promise<ScriptLine> {
  const parts = text.split('\n');
  const last = parts.pop()!;
  let i = 0;
  return async () => (i < parts.length ? { line: parts[i++]!.replace(/\r/g, ''), rv: 1 } : { line: last, rv: 0 });
}

test('scanScriptHeader: Status, Location, Set-Cookie and merged fields', async () => {
  const { ctx } = makeCtx();
  const { rt, errorLog } = fakeRuntime(ctx);
  const r = makeRequest(rt, [], { filename: '/srv/cgi/x.cgi', method: 'POST' });
  const sbuf = { line: '' };
  const st = await scanScriptHeader(r, linesOf('Status: 404 Gone Away\nContent-Type: Text/Plain; Charset=X\nX-A: 1\nX-A: 2\nSet-Cookie: a=1\nLocation: /y\n\nbody'), { module: 'cgi' }, sbuf);
  assert.equal(st, 0);
  assert.equal(r.status, 404);
  assert.equal(r.statusLine, '404 Gone Away');
  assert.equal(r.contentType, 'text/plain; Charset=X');
  assert.equal(r.errHeadersOut.get('X-A'), '1, 2');
  assert.equal(r.errHeadersOut.get('Set-Cookie'), 'a=1');
  assert.equal(r.headersOut.get('Location'), '/y');
  assert.equal(errorLog.lines.length, 0);
});

test('scanScriptHeader: malformed, premature, empty, timed out', async () => {
  const { ctx } = makeCtx();
  const { rt, errorLog } = fakeRuntime(ctx);
  const mk = () => makeRequest(rt, [], { filename: '/srv/cgi/x.cgi', method: 'POST' });
  assert.equal(await scanScriptHeader(mk(), linesOf('nonsense here\n\n'), { module: 'cgi' }, { line: '' }), 500);
  assert.equal(await scanScriptHeader(mk(), linesOf('X-A: 1\nX-B'), { module: 'cgi' }, { line: '' }), 500);
  const sbuf = { line: '' };
  assert.equal(await scanScriptHeader(mk(), linesOf('partial'), { module: 'cgi' }, sbuf), 500);
  assert.equal(sbuf.line, 'partial');
  assert.equal(await scanScriptHeader(mk(), async () => ({ line: '', rv: -1 }), { module: 'cgid' }, { line: '' }), 504);
  assert.deepEqual(errorLog.lines.map((l) => l.replace(/^\[(\w+):\d+\] \[client [^\]]+\] /, '$1 ')), [
    "cgi malformed header from script 'x.cgi': Bad header: nonsense here",
    'cgi Premature end of script headers: x.cgi',
    'cgi End of script output before headers: x.cgi',
    'cgid Script timed out before returning headers: x.cgi',
  ]);
});

test('scanScriptHeader fuzz: any output ends in OK or a logged 500, never a throw', async () => {
  const { ctx } = makeCtx();
  const { rt } = fakeRuntime(ctx);
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const alphabet = 'ab:\n\r \tStatus:Content-Type:Location:/x;=\u00ff0123456789';
  for (let i = 0; i < 500; i++) {
    let s = '';
    const len = rnd(120);
    for (let j = 0; j < len; j++) s += alphabet[rnd(alphabet.length)];
    const r = makeRequest(rt, [], { filename: '/srv/cgi/f.cgi', method: 'POST' });
    const st = await scanScriptHeader(r, linesOf(s), { module: 'cgi' }, { line: '' });
    assert.ok(st === 0 || st === 500, `status ${st} for ${JSON.stringify(s)}`);
  }
});
