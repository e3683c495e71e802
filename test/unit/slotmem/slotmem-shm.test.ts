// mod_slotmem_shm without a server: a table the parent creates, a worker process (a real
// second node process, whose parent is this one) attaching to it by name, each seeing the
// other's writes; grab/release/fgrab bookkeeping, PREGRAB, the in-memory table, and the
// persisted table's store and restore in httpd's format.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

import slotmemShm from '../../../src/modules/slotmem/mod_slotmem_shm.js';
import {
  SLOTMEM_TYPE_PERSIST, SLOTMEM_TYPE_PREGRAB, type SlotmemProvider, type SlotmemInstance, type SlotPointer,
} from '../../../src/server/slotmem.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import { globals } from '../../../src/server/core/globals.js';

const provider = slotmemShm.decl.providers![0]!.provider as SlotmemProvider;

function fakeCtx(runtime: string, child = false): ConfigContext {
  const scratch = new Map<string, unknown>();
  const ctx = {
    child,
    serverRootRelative: (p: string) => path.resolve(runtime, p),
    getScratch<T>(key: string, init: () => T): T {
      if (!scratch.has(key)) scratch.set(key, init());
      return scratch.get(key) as T;
    },
    mainServer: {},
  } as unknown as ConfigContext;
  globals(ctx).runtimeDir = runtime;
  return ctx;
}

function made(x: SlotmemInstance | string): SlotmemInstance {
  assert.notEqual(typeof x, 'string', String(x));
  return x as SlotmemInstance;
}

const moduleUrl = new URL('../../../src/modules/slotmem/mod_slotmem_shm.js', import.meta.url).href;
const globalsUrl = new URL('../../../src/server/core/globals.js', import.meta.url).href;

// The worker: attaches through `create` as a worker process does, writes slot 1, reports
// slot 0, then on each "read" line reports slot 0 again.
const WORKER = `
import { createInterface } from 'node:readline';
const { default: m } = await import(${JSON.stringify(moduleUrl)});
const { globals } = await import(${JSON.stringify(globalsUrl)});
const scratch = new Map();
const ctx = { child: true, serverRootRelative: (p) => p, getScratch(k, i) { if (!scratch.has(k)) scratch.set(k, i()); return scratch.get(k); }, mainServer: {} };
globals(ctx).runtimeDir = process.argv[2];
const p = m.decl.providers[0].provider;
const t = p.create(ctx, 'balancer-x', 16, 4, 0);
if (typeof t === 'string') { console.log('ERR ' + t); process.exit(1); }
const slot = (id) => p.dptr(t, id).read().toString('latin1').replace(/\\0+$/, '');
p.put(t, 1, Buffer.from('from the worker'));
console.log('slot0 ' + slot(0) + ' free ' + p.numFreeSlots(t));
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'read') console.log('slot0 ' + slot(0) + ' free ' + p.numFreeSlots(t));
  else break;
}
m.decl.configHooks.cleanup(ctx);
`;

test('slotmem shm: a worker process attaches to the parent\'s table and each sees the other\'s writes', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-slotmem-'));
  const ctx = fakeCtx(dir);
  try {
    const t = made(provider.create(ctx, 'balancer-x', 16, 4, 0));
    assert.equal(t.name, path.join(dir, `slotmem-shm-balancer-x.${process.pid}.shm`));
    assert.equal(provider.numSlots(t), 4);
    assert.equal(provider.slotSize(t), 16);
    assert.equal(provider.numFreeSlots(t), 4);
    // The same name in one generation is the same table (AH02603).
    assert.equal(provider.create(ctx, 'balancer-x', 16, 4, 0), t);
    assert.equal(provider.put(t, 0, Buffer.from('parent one')), 'success');

    const script = path.join(dir, 'worker.mjs');
    fs.writeFileSync(script, WORKER);
    const child = spawn(process.execPath, [script, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const next = async (): Promise<string> => (await lines.next()).value as string;
    assert.equal(await next(), 'slot0 parent one free 2');

    // The worker's write is in the parent's view.
    const b = Buffer.alloc(16);
    assert.equal(provider.get(t, 1, b), 'success');
    assert.equal(b.toString('latin1').replace(/\0+$/, ''), 'from the worker');
    let seen = '';
    provider.doall(t, (mem, id) => { if (id === 1) seen = mem.toString('latin1', 0, 15); });
    assert.equal(seen, 'from the worker');

    // A later parent write through a slot pointer reaches the worker.
    const p0 = provider.dptr(t, 0) as SlotPointer;
    p0.write(Buffer.alloc(16));
    p0.write(Buffer.from('parent two'), 0);
    assert.equal(provider.grab(t), 2);
    child.stdin!.write('read\n');
    assert.equal(await next(), 'slot0 parent two free 1');
    child.stdin!.end('bye\n');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    // The worker's cleanup leaves the parent's file alone.
    assert.ok(fs.existsSync(t.name));
  } finally {
    slotmemShm.decl.configHooks!.cleanup!(ctx);
    assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.shm')), [], 'the parent removes its table');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('slotmem shm: grab, release, fgrab, PREGRAB, bounds, and a table of this process only', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-slotmem-'));
  const ctx = fakeCtx(dir);
  try {
    const t = made(provider.create(ctx, 'grabs', 8, 3, SLOTMEM_TYPE_PREGRAB));
    assert.equal(provider.numFreeSlots(t), 3);
    assert.equal(provider.put(t, 0, Buffer.from('x')), 'notfound', 'PREGRAB: a slot must be grabbed first');
    assert.equal(provider.get(t, 0, Buffer.alloc(8)), 'notfound');
    assert.equal(provider.grab(t), 0);
    assert.equal(provider.fgrab(t, 2), 'success');
    assert.equal(provider.numFreeSlots(t), 1);
    assert.equal(provider.grab(t), 1);
    assert.equal(provider.grab(t), 'einval', 'every slot taken');
    assert.equal(provider.release(t, 1), 'success');
    assert.equal(provider.release(t, 1), 'notfound');
    assert.equal(provider.release(t, 7), 'einval');
    assert.equal(provider.dptr(t, 3), 'einval');
    const ids: number[] = [];
    provider.doall(t, (_m, id) => { ids.push(id); });
    assert.deepEqual(ids, [0, 2], 'doall visits grabbed slots only');
    assert.equal(provider.doall(t, () => 'notfound'), 'notfound', 'doall stops at a failure');

    const mem = made(provider.create(ctx, 'none', 4, 2, 0));
    assert.equal(mem.name, 'none');
    assert.equal(provider.put(mem, 1, Buffer.from('abcd')), 'success');
    const out = Buffer.alloc(4);
    provider.get(mem, 1, out);
    assert.equal(out.toString(), 'abcd');
    assert.equal(typeof provider.attach(ctx, 'never-made'), 'string');
    assert.equal(provider.attach(ctx, 'grabs'), t, 'attach finds this generation\'s table');
  } finally {
    slotmemShm.decl.configHooks!.cleanup!(ctx);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('slotmem shm: a persisted table is stored at cleanup in httpd\'s format and restored by the next generation', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-slotmem-'));
  try {
    const one = fakeCtx(dir);
    const t = made(provider.create(one, 'kept', 8, 2, SLOTMEM_TYPE_PERSIST));
    provider.put(t, 1, Buffer.from('survive'));
    slotmemShm.decl.configHooks!.cleanup!(one);
    const pfile = path.join(dir, 'slotmem-shm-kept.shm.persist');
    const bytes = fs.readFileSync(pfile);
    // free counter (8) + 2 slots of 8 + 2 in-use bytes, MD5, description.
    assert.equal(bytes.length, 8 + 16 + 2 + 16 + 16);
    const two = fakeCtx(dir);
    const u = made(provider.create(two, 'kept', 8, 2, SLOTMEM_TYPE_PERSIST));
    const out = Buffer.alloc(8);
    provider.get(u, 1, out);
    assert.equal(out.toString('latin1', 0, 7), 'survive');
    slotmemShm.decl.configHooks!.cleanup!(two);
    // Another shape does not restore (AH02551): the slots start empty.
    const three = fakeCtx(dir);
    const v = made(provider.create(three, 'kept', 8, 3, SLOTMEM_TYPE_PERSIST));
    provider.get(v, 1, out);
    assert.equal(out.toString('latin1', 0, 7), '\0'.repeat(7));
    slotmemShm.decl.configHooks!.cleanup!(three);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

