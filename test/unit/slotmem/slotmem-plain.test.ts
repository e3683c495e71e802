// mod_slotmem_plain: the provider's bookkeeping as httpd's mod_slotmem_plain.c keeps it
// (tables of this process, by resolved name, create of an existing name returning it, the
// anonymous table, PREGRAB's notfound, grab/release/fgrab, doall over grabbed slots), the same
// interface calls that mod_slotmem_shm answers (test/unit/slotmem/slotmem-shm.test.ts), and
// a new configuration generation starting with no tables.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import slotmemPlain from '../../../src/modules/slotmem/mod_slotmem_plain.js';
import {
  SLOTMEM_TYPE_PREGRAB, type SlotmemProvider, type SlotmemInstance, type SlotPointer,
} from '../../../src/server/slotmem.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import { globals } from '../../../src/server/core/globals.js';

const provider = slotmemPlain.decl.providers![0]!.provider as SlotmemProvider;

function fakeCtx(runtime = '/run/plume-test'): ConfigContext {
  const scratch = new Map<string, unknown>();
  const ctx = {
    child: false,
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

test('registered as "plain", named "plainmem" as httpd names its provider struct', () => {
  assert.equal(slotmemPlain.decl.name, 'slotmem_plain_module');
  assert.equal(slotmemPlain.decl.providers![0]!.name, 'plain');
  assert.equal(provider.name, 'plainmem');
});

test('names: DefaultRuntimeDir-relative or ":name"; create of an existing name returns it; attach; anonymous', () => {
  const ctx = fakeCtx('/run/x');
  const a = made(provider.create(ctx, 'balancer', 8, 3, 0));
  assert.equal(a.name, '/run/x/balancer');
  assert.equal(provider.create(ctx, 'balancer', 99, 99, 0), a, 'the existing table, whatever size was asked');
  assert.equal(provider.create(ctx, '/run/x/balancer', 8, 3, 0), a, 'the same resolved name');
  assert.equal(provider.attach(ctx, 'balancer'), a);
  const c = made(provider.create(ctx, ':colon', 4, 1, 0));
  assert.equal(c.name, ':colon');
  assert.equal(provider.attach(ctx, ':colon'), c);
  assert.equal(provider.attach(ctx, 'nothing'), 'enoshmavail');
  assert.equal(provider.attach(ctx, ''), 'enoshmavail');
  const anon1 = made(provider.create(ctx, '', 4, 1, 0));
  const anon2 = made(provider.create(ctx, '', 4, 1, 0));
  assert.equal(anon1.name, 'anonymous');
  assert.notEqual(anon1, anon2, 'no name: a new table each time');
  assert.equal(provider.attach(fakeCtx('/run/x'), 'balancer'), 'enoshmavail', 'a new configuration generation has no tables');
});

test('get/put/dptr, slot sizes and bounds', () => {
  const ctx = fakeCtx();
  const t = made(provider.create(ctx, 't', 8, 2, 0));
  assert.equal(provider.numSlots(t), 2);
  assert.equal(provider.slotSize(t), 8);
  assert.equal(provider.numFreeSlots(t), 2);
  assert.equal(provider.put(t, 1, Buffer.from('abcdefghij')), 'success');
  assert.equal(provider.numFreeSlots(t), 1, 'put marks the slot in use');
  const dest = Buffer.alloc(8);
  assert.equal(provider.get(t, 1, dest), 'success');
  assert.equal(dest.toString(), 'abcdefgh', 'cut at the slot size');
  const p = provider.dptr(t, 0) as SlotPointer;
  p.write(Buffer.from('xy'), 3);
  assert.deepEqual([...p.read()], [0, 0, 0, 120, 121, 0, 0, 0]);
  assert.equal(provider.numFreeSlots(t), 1, 'dptr does not mark the slot');
  assert.equal(provider.dptr(t, 2), 'einval');
  assert.equal(provider.get(t, 2, dest), 'einval');
  assert.equal(provider.put(t, 5, dest), 'einval');
});

test('PREGRAB: get/put of a slot not grabbed is notfound; grab, release, fgrab; doall over grabbed slots only', () => {
  const ctx = fakeCtx();
  const t = made(provider.create(ctx, 'pg', 4, 3, SLOTMEM_TYPE_PREGRAB));
  assert.equal(provider.get(t, 0, Buffer.alloc(4)), 'notfound');
  assert.equal(provider.put(t, 0, Buffer.alloc(4)), 'notfound');
  assert.equal(provider.grab(t), 0);
  assert.equal(provider.fgrab(t, 2), 'success');
  assert.equal(provider.grab(t), 1);
  assert.equal(provider.grab(t), 'einval', 'every slot taken');
  assert.equal(provider.release(t, 1), 'success');
  assert.equal(provider.release(t, 1), 'notfound');
  assert.equal(provider.release(t, 3), 'einval');
  assert.equal(provider.fgrab(t, 3), 'einval');
  assert.equal(provider.put(t, 2, Buffer.from('zz')), 'success');
  const seen: number[] = [];
  assert.equal(provider.doall(t, (mem, id) => { seen.push(id); assert.equal(mem.length, 4); }), 'success');
  assert.deepEqual(seen, [0, 2]);
  const stopped: number[] = [];
  assert.equal(provider.doall(t, (_m, id) => { stopped.push(id); return 'notfound'; }), 'notfound', 'the first answer other than success ends the walk');
  assert.deepEqual(stopped, [0]);
  const all: number[] = [];
  const plain = made(provider.create(ctx, 'np', 1, 3, 0));
  provider.doall(plain, (_m, id) => { all.push(id); });
  assert.deepEqual(all, [0, 1, 2], 'without PREGRAB every slot');
});
