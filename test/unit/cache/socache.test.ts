// The small-object cache providers without a server: shmcb as the parent creates it and a
// worker attaches to it (one file, seen by both), expiry, removal, a torn slot read as a miss,
// objects too large for a slot; dbm; the argument checks with httpd's messages; the status
// figures both print for server-status.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import shmcb, { httpdGeometry } from '../../../src/modules/cache/mod_socache_shmcb.js';
import dbm from '../../../src/modules/cache/mod_socache_dbm.js';
import type { SocacheProvider, SocacheSpec, SocacheInstance } from '../../../src/server/socache.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import { ServerRec } from '../../../src/server/server-rec.js';
import { ErrorLog } from '../../../src/server/log/error-log.js';
import { DEFAULT_LOG_LEVEL } from '../../../src/server/log/levels.js';
import { AP_STATUS_SHORT } from '../../../src/server/status-hook.js';

const HINTS = { avgIdLen: 30, avgObjSize: 150, expiryInterval: 30 };

function fakeCtx(root: string): ConfigContext {
  return { serverRootRelative: (p: string) => path.resolve(root, p), getScratch: () => ({}), isLoaded: () => false, mainServer: undefined } as unknown as ConfigContext;
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
    assert.equal(await worker.retrieve(Buffer.from('ffffffff', 'hex')), null);
    const old = Buffer.from('aaaaaaaa', 'hex');
    await parent.store(old, Date.now() - 1000, Buffer.from('stale'));
    assert.equal(await worker.retrieve(old), null);
    await worker.remove(id);
    assert.equal(await parent.retrieve(id), null);
    assert.equal(await parent.store(Buffer.from('bbbbbbbb', 'hex'), Date.now() + 60_000, Buffer.alloc(10_000)), false);
    // httpd refuses ids shorter than 4 bytes.
    assert.equal(await parent.store(Buffer.from('bb', 'hex'), Date.now() + 60_000, Buffer.from('x')), false);
    // A slot whose bytes changed under its checksum reads as a miss, never as other data.
    const id2 = Buffer.from('c0ffee00', 'hex');
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

/** What a provider's status function writes, in both forms. */
async function statusOf(c: SocacheInstance): Promise<{ html: string; auto: string }> {
  let html = '';
  let auto = '';
  await c.status({} as never, 0, (t) => { html += t; });
  await c.status({} as never, AP_STATUS_SHORT, (t) => { auto += t; });
  return { html, auto };
}

test('shmcb: httpd\'s geometry for a size and hints', () => {
  // Measured on Apache 2.4.71: mod_ssl's hints (150 + 30 bytes).
  assert.deepEqual(httpdGeometry(512000, HINTS), { subcaches: 32, indexes: 88, dataSize: 13864 });
  assert.deepEqual(httpdGeometry(40000, HINTS), { subcaches: 8, indexes: 27, dataSize: 4320 });
  assert.equal(httpdGeometry(400, HINTS), 'AH00820: shared memory segment too small');
  assert.equal(httpdGeometry(900, HINTS), 'AH00823: shared memory segment too small');
});

test('shmcb: the status figures count every process\'s stores, retrieves, removes and expiries', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-shmcb-'));
  const saved = process.env['PLUME_CHILD_SLOT'];
  try {
    const ctx = fakeCtx(dir);
    const spec = providerOf(shmcb, 'shmcb').create(ctx, 'cache(512000)') as SocacheSpec;
    const parent = await open(spec, ctx, true);
    process.env['PLUME_CHILD_SLOT'] = '0';
    const w0 = await open(spec, ctx, false);
    process.env['PLUME_CHILD_SLOT'] = '1';
    const w1 = await open(spec, ctx, false);
    const a = Buffer.from('a1a2a3a4a5a6', 'hex');
    const b = Buffer.from('b1b2b3b4b5b6', 'hex');
    const c = Buffer.from('c1c2c3c4c5c6', 'hex');
    assert.ok(await w0.store(a, Date.now() + 300_000, Buffer.alloc(100, 1)));
    assert.ok(await w1.store(b, Date.now() + 300_000, Buffer.alloc(100, 2)));
    assert.ok(await w1.store(b, Date.now() + 300_000, Buffer.alloc(100, 3)));
    assert.ok(await w0.store(c, Date.now() - 1, Buffer.alloc(10)));
    assert.ok(await w1.retrieve(a));
    assert.equal(await w0.retrieve(Buffer.from('d1d2d3d4', 'hex')), null);
    await w0.remove(b);
    await w1.remove(b);
    const { html, auto } = await statusOf(parent);
    assert.equal(auto.replace(/CacheTimeLeftOldest(Avg|Min|Max): (299|300)\n/g, 'CacheTimeLeftOldest$1: ~300\n'), [
      'CacheType: SHMCB', 'CacheSharedMemory: 512000', 'CacheCurrentEntries: 1', 'CacheSubcaches: 32', 'CacheIndexesPerSubcaches: 88',
      'CacheTimeLeftOldestAvg: ~300', 'CacheTimeLeftOldestMin: ~300', 'CacheTimeLeftOldestMax: ~300',
      'CacheIndexUsage: 0%', 'CacheUsage: 0%', 'CacheStoreCount: 3', 'CacheReplaceCount: 1',
      // The expired object went when the status page looked (shmcb_subcache_expire).
      'CacheExpireCount: 1', 'CacheDiscardCount: 0',
      'CacheRetrieveHitCount: 1', 'CacheRetrieveMissCount: 1', 'CacheRemoveHitCount: 1', 'CacheRemoveMissCount: 1', '',
    ].join('\n'));
    assert.match(html, /^cache type: <b>SHMCB<\/b>, shared memory: <b>512000<\/b> bytes, current entries: <b>1<\/b><br>subcaches: <b>32<\/b>, indexes per subcache: <b>88<\/b><br>time left on oldest entries' objects: avg: <b>(299|300)<\/b> seconds, \(range: (299|300)\.\.\.(299|300)\)<br>index usage: <b>0%<\/b>, cache usage: <b>0%<\/b><br>total entries stored since starting: <b>3<\/b><br>total entries replaced since starting: <b>1<\/b><br>total entries expired since starting: <b>1<\/b><br>/);
    assert.match(html, /total retrieves since starting: <b>1<\/b> hit, <b>1<\/b> miss<br>total removes since starting: <b>1<\/b> hit, <b>1<\/b> miss<br>$/);
    // A worker started again in slot 0 goes on from that slot's counts.
    await w0.destroy();
    process.env['PLUME_CHILD_SLOT'] = '0';
    const again = await open(spec, ctx, false);
    assert.ok(await again.store(a, Date.now() + 300_000, Buffer.alloc(5)));
    assert.match((await statusOf(parent)).auto, /CacheStoreCount: 3\nCacheReplaceCount: 2\n/);
    await again.destroy();
    await w1.destroy();
    await parent.destroy();
  } finally {
    if (saved === undefined) delete process.env['PLUME_CHILD_SLOT']; else process.env['PLUME_CHILD_SLOT'] = saved;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('dbm: the status figures (every entry and the size of the values)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-sdbm-'));
  try {
    const ctx = fakeCtx(dir);
    const spec = providerOf(dbm, 'dbm').create(ctx, 'scache') as SocacheSpec;
    const a = await open(spec, ctx, true);
    assert.deepEqual(await statusOf(a), {
      html: 'cache type: <b>DBM</b>, maximum size: <b>unlimited</b><br>current entries: <b>0</b>, current size: <b>0</b> bytes<br>average entry size: <b>0</b> bytes<br>',
      auto: 'CacheType: DBM\nCacheMaximumSize: unlimited\nCacheCurrentEntries: 0\nCacheCurrentSize: 0\nCacheAvgEntrySize: 0\n',
    });
    await a.store(Buffer.from('01020304', 'hex'), Date.now() + 60_000, Buffer.alloc(100));
    await a.store(Buffer.from('05060708', 'hex'), Date.now() + 60_000, Buffer.alloc(51));
    // Each value is the 8-byte expiry and the data.
    assert.match((await statusOf(a)).auto, /CacheCurrentEntries: 2\nCacheCurrentSize: 167\nCacheAvgEntrySize: 83\n$/);
    await a.destroy();
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
