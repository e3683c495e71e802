// The small-object cache providers without a server: shmcb as the parent creates it and a
// worker attaches to it (one file, seen by both), expiry, removal, a torn slot read as a miss,
// objects too large for a slot; dbm; the argument checks with httpd's messages.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import shmcb from '../../../src/modules/cache/mod_socache_shmcb.js';
import dbm from '../../../src/modules/cache/mod_socache_dbm.js';
import type { SocacheProvider, SocacheSpec, SocacheInstance } from '../../../src/server/socache.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import { ServerRec } from '../../../src/server/server-rec.js';
import { ErrorLog } from '../../../src/server/log/error-log.js';
import { DEFAULT_LOG_LEVEL } from '../../../src/server/log/levels.js';

const HINTS = { avgIdLen: 30, avgObjSize: 150, expiryInterval: 30 };

function fakeCtx(root: string): ConfigContext {
  return { serverRootRelative: (p: string) => path.resolve(root, p), getScratch: () => ({}), mainServer: undefined } as unknown as ConfigContext;
}
function server(): ServerRec {
  const s = new ServerRec(0, false, 'test', 0);
  s.errorLog = new ErrorLog({ description: 'test', write() {}, flush() {}, close() {} });
  s.logLevel = DEFAULT_LOG_LEVEL;
  return s;
}
function providerOf(m: { decl: { providers?: readonly { name: string; provider: unknown }[] } }, name: string): SocacheProvider {
  return m.decl.providers!.find((p) => p.name === name)!.provider as SocacheProvider;
}
async function open(spec: SocacheSpec, ctx: ConfigContext, create: boolean): Promise<SocacheInstance> {
  const c = await spec.init(ctx, server(), 'mod_ssl-session', HINTS, create);
  assert.notEqual(typeof c, 'string', String(c));
  return c as SocacheInstance;
}

test('shmcb: httpd\'s argument checks', () => {
  const p = providerOf(shmcb, 'shmcb');
  const ctx = fakeCtx('/tmp');
  assert.equal(p.create(ctx, 'x(100)'), 'Invalid argument: size has to be >= 8192 bytes');
  assert.equal(p.create(ctx, 'x(abc)'), 'Invalid argument: cache size not numerical');
  assert.equal(p.create(ctx, 'x(100'), 'Invalid argument: no closing parenthesis or cache size missing after pathname with parenthesis');
  assert.equal(p.create(ctx, 'x)'), 'Invalid argument: no opening parenthesis');
  assert.equal(typeof p.create(ctx, 'x(512000)'), 'object');
});

test('shmcb: what the parent stores a worker retrieves; expiry, removal, torn slots, size limit', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-shmcb-'));
  try {
    const ctx = fakeCtx(dir);
    const spec = providerOf(shmcb, 'shmcb').create(ctx, 'cache(65536)') as SocacheSpec;
    const parent = await open(spec, ctx, true);
    const worker = await open(spec, ctx, false);
    const id = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
    assert.ok(await parent.store(id, Date.now() + 60_000, Buffer.from('session data')));
    assert.deepEqual(await worker.retrieve(id), Buffer.from('session data'));
    assert.equal(await worker.retrieve(Buffer.from('ff', 'hex')), null);
    const old = Buffer.from('aa', 'hex');
    await parent.store(old, Date.now() - 1000, Buffer.from('stale'));
    assert.equal(await worker.retrieve(old), null);
    await worker.remove(id);
    assert.equal(await parent.retrieve(id), null);
    assert.equal(await parent.store(Buffer.from('bb', 'hex'), Date.now() + 60_000, Buffer.alloc(10_000)), false);
    // A slot whose bytes changed under its checksum reads as a miss, never as other data.
    const id2 = Buffer.from('c0ffee', 'hex');
    await parent.store(id2, Date.now() + 60_000, Buffer.from('intact'));
    const file = path.join(dir, 'cache');
    const bytes = fs.readFileSync(file);
    const at = bytes.indexOf(Buffer.from('intact'));
    assert.ok(at > 0);
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.from('X'), 0, 1, at);
    fs.closeSync(fd);
    assert.equal(await worker.retrieve(id2), null);
    await worker.destroy();
    await parent.destroy();
    assert.equal(fs.existsSync(file), false, 'the parent removes the file it made');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('dbm: store, retrieve across instances, expiry, removal', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-sdbm-'));
  try {
    const ctx = fakeCtx(dir);
    const p = providerOf(dbm, 'dbm');
    assert.equal(p.create(ctx, undefined), 'Invalid cache file path ');
    const spec = p.create(ctx, 'scache') as SocacheSpec;
    const a = await open(spec, ctx, true);
    const b = await open(spec, ctx, false);
    const id = Buffer.from('01020304', 'hex');
    assert.ok(await a.store(id, Date.now() + 60_000, Buffer.from('x'.repeat(200))));
    assert.deepEqual(await b.retrieve(id), Buffer.from('x'.repeat(200)));
    assert.equal(await a.store(Buffer.from('05', 'hex'), Date.now() + 60_000, Buffer.alloc(2000)), false);
    await b.remove(id);
    assert.equal(await a.retrieve(id), null);
    await b.destroy();
    await a.destroy();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
