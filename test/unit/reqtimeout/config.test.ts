// mod_reqtimeout's configuration: RequestReadTimeout parsed as httpd 2.4.71 parses it (every
// error text below was measured with apache2 -t), the 2.4 defaults when the module is loaded
// and nothing is set, per-stage inheritance by virtual hosts, and the limits the connection
// layer receives (milliseconds, MinRate as milliseconds per byte).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfiguration } from '../../../src/server/config/build.js';
import { ConfigError, StartupError } from '../../../src/server/config/errors.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import type { ReadTimeoutProvider } from '../../../src/server/http/connection.js';
import { catalogue } from '../../../src/modules/index.js';

const FILE = '/nonexistent/plume-reqtimeout-test/httpd.conf';

async function load(lines: readonly string[], withModule = true): Promise<ConfigContext> {
  const text = [
    'LoadModule mpm_event_module modules/mod_mpm_event.so',
    ...(withModule ? ['LoadModule reqtimeout_module modules/mod_reqtimeout.so'] : []),
    'ServerName localhost',
    'Listen 127.0.0.1:18080',
    ...lines,
  ].join('\n') + '\n';
  return loadConfiguration({
    argv0: 'plume', serverRoot: '/nonexistent/plume-reqtimeout-test', configFile: FILE,
    defines: [], preDirectives: [], postDirectives: [], documentRootCheck: false, preflight: false,
    readConfigFile: () => text,
  }, catalogue);
}

/** The directive's error text (what follows "Syntax error on line N of FILE:"). */
async function errorOf(lines: readonly string[], withModule = true): Promise<string | undefined> {
  try {
    await load(lines, withModule);
    return undefined;
  } catch (e) {
    if (e instanceof ConfigError) return e.detail;
    if (e instanceof StartupError) return e.text;
    throw e;
  }
}

function provider(ctx: ConfigContext): ReadTimeoutProvider {
  const p = ctx.provider('read_timeout', 'reqtimeout');
  assert.ok(p, 'mod_reqtimeout registers the read_timeout provider');
  return p;
}

test('RequestReadTimeout errors are worded as httpd words them', async () => {
  const cases: [string, string][] = [
    ['header', "Invalid RequestReadTimeout parameter. Parameter must be in the form 'key=value'"],
    ['foo=1', 'RequestReadTimeout: foo=1: Unknown RequestReadTimeout parameter'],
    ['=5', 'RequestReadTimeout: =5: Unknown RequestReadTimeout parameter'],
    ['header=abc', "RequestReadTimeout: header=abc: Value 'abc' not numerical"],
    ['header=', "RequestReadTimeout: header=: Value '' not numerical"],
    ['header=1x', "RequestReadTimeout: header=1x: Cannot parse 'x'"],
    ['header=0x5', "RequestReadTimeout: header=0x5: Cannot parse 'x5'"],
    ['header=-1', 'RequestReadTimeout: header=-1: Must set MinRate option if using timeout range'],
    ['header=1-2', 'RequestReadTimeout: header=1-2: Must set MinRate option if using timeout range'],
    ['header=1-2,MinRate=0', 'RequestReadTimeout: header=1-2,MinRate=0: Minimum data rate must be larger than 0'],
    ['header=2-2,MinRate=10', 'RequestReadTimeout: header=2-2,MinRate=10: Maximum timeout must be larger than initial timeout'],
    ['header=2-x,MinRate=10', "RequestReadTimeout: header=2-x,MinRate=10: Value 'x' not numerical"],
    ['header=-5,MinRate=5', "RequestReadTimeout: header=-5,MinRate=5: Value '' not numerical"],
    ['header=2,MinRate=-5', 'RequestReadTimeout: header=2,MinRate=-5: Value must be non-negative'],
    ['header=5,MinRate=5,MinRate=6', "RequestReadTimeout: header=5,MinRate=5,MinRate=6: Cannot parse ',MinRate=6'"],
    ['"header=5 body=6"', "RequestReadTimeout: header=5 body=6: Cannot parse ' body=6'"],
    // strtol's long stored in an int: 2^31 wraps negative, 2^32 wraps to 0.
    ['header=2147483648', 'RequestReadTimeout: header=2147483648: Value must be non-negative'],
    ['header=5,MinRate=4294967296', 'RequestReadTimeout: header=5,MinRate=4294967296: Minimum data rate must be larger than 0'],
  ];
  for (const [args, want] of cases) {
    assert.equal(await errorOf([`RequestReadTimeout ${args}`]), want, args);
  }
  assert.equal(await errorOf(['<Directory />', 'RequestReadTimeout header=5', '</Directory>']), 'RequestReadTimeout not allowed in <Directory> context');
  assert.match(await errorOf(['RequestReadTimeout header=5'], false) ?? '', /^Invalid command 'RequestReadTimeout', perhaps misspelled/);
});

test('accepted forms: no arguments, case-insensitive keys and MinRate, strtol leniency', async () => {
  for (const args of ['', 'header=2,minrate=5 BODY=3 Handshake=4', 'header=0-5,MinRate=5', 'header=+5', '"header= 5"', 'header=4294967297-4294967298,MinRate=1']) {
    assert.equal(await errorOf([`RequestReadTimeout ${args}`]), undefined, args);
  }
});

test('loaded with nothing configured: header=20-40,MinRate=500 body=20,MinRate=500', async () => {
  const ctx = await load([]);
  const p = provider(ctx);
  assert.deepEqual(p.header(ctx.mainServer), { timeoutMs: 20000, maxTimeoutMs: 40000, msPerByte: 2 });
  assert.deepEqual(p.body(ctx.mainServer), { timeoutMs: 20000, maxTimeoutMs: 0, msPerByte: 2 });
});

test('not loaded: no provider (the core Timeout alone applies)', async () => {
  const ctx = await load([], false);
  assert.equal(ctx.provider('read_timeout', 'reqtimeout'), undefined);
});

test('each stage is set whole; a later setting of a stage replaces it', async () => {
  const ctx = await load(['RequestReadTimeout header=10-30,MinRate=3 body=7', 'RequestReadTimeout header=5']);
  const p = provider(ctx);
  assert.deepEqual(p.header(ctx.mainServer), { timeoutMs: 5000, maxTimeoutMs: 0, msPerByte: 0 });
  assert.deepEqual(p.body(ctx.mainServer), { timeoutMs: 7000, maxTimeoutMs: 0, msPerByte: 0 });
  // apr_time_from_sec(1) / rate: whole microseconds per byte.
  const third = await load(['RequestReadTimeout body=1,MinRate=3']);
  assert.equal(provider(third).body(third.mainServer)?.msPerByte, 333.333);
});

test('virtual hosts inherit each stage they do not set', async () => {
  const ctx = await load([
    'RequestReadTimeout header=5 body=6',
    '<VirtualHost *:18080>', 'ServerName a', 'RequestReadTimeout body=9,MinRate=1000', '</VirtualHost>',
    '<VirtualHost *:18080>', 'ServerName b', '</VirtualHost>',
  ]);
  const p = provider(ctx);
  const [a, b] = ctx.vhosts;
  assert.deepEqual(p.header(a!), { timeoutMs: 5000, maxTimeoutMs: 0, msPerByte: 0 });
  assert.deepEqual(p.body(a!), { timeoutMs: 9000, maxTimeoutMs: 0, msPerByte: 1 });
  assert.deepEqual(p.body(b!), { timeoutMs: 6000, maxTimeoutMs: 0, msPerByte: 0 });
});

test('0 disables a stage; header=0 body=0 disables the module for the server', async () => {
  const ctx = await load([
    'RequestReadTimeout header=0',
    '<VirtualHost *:18080>', 'ServerName off', 'RequestReadTimeout body=0', '</VirtualHost>',
    '<VirtualHost *:18080>', 'ServerName tls', 'RequestReadTimeout handshake=5 body=0', '</VirtualHost>',
  ]);
  const p = provider(ctx);
  const [off, tls] = ctx.vhosts;
  // header=0 alone: the connection is timed, the headers by the core Timeout only.
  assert.equal(p.header(ctx.mainServer), null);
  assert.deepEqual(p.body(ctx.mainServer), { timeoutMs: 20000, maxTimeoutMs: 0, msPerByte: 2 });
  assert.equal(p.header(off!), undefined);
  assert.equal(p.body(off!), null);
  // A handshake timeout keeps the module enabled (httpd's reqtimeout_init).
  assert.equal(p.header(tls!), null);
});
