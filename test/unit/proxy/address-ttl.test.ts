// mod_proxy's backend address cache (conn.ts resolveAddress, httpd's worker->address with
// addressttl): a worker keeps a resolved name until restart by default, resolves it for every
// connection when its address cannot be reused (the generic worker, disablereuse=On,
// addressttl=0), keeps it addressttl= seconds otherwise, and never keeps a failed lookup.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { resolveAddress } from '../../../src/modules/proxy/mod_proxy/conn.js';
import type { ProxyWorker } from '../../../src/proxy/api.js';

function worker(params: { addressttl?: number; disablereuse?: boolean }, generic = false): ProxyWorker {
  return { params: { addressttl: params.addressttl, disablereuse: params.disablereuse }, generic } as unknown as ProxyWorker;
}

test('resolveAddress: kept until restart by default, per worker', async () => {
  const w = worker({});
  const a = resolveAddress(w, 'localhost');
  assert.equal(resolveAddress(w, 'localhost'), a);
  assert.equal(await a, '127.0.0.1');
  assert.notEqual(resolveAddress(worker({}), 'localhost'), a, 'another worker resolves for itself');
});

test('resolveAddress: resolved again for every connection where the address is not reusable', async () => {
  for (const w of [worker({}, true), worker({ disablereuse: true }), worker({ addressttl: 0 })]) {
    const a = resolveAddress(w, 'localhost');
    const b = resolveAddress(w, 'localhost');
    assert.notEqual(a, b);
    assert.equal(await a, '127.0.0.1');
    assert.equal(await b, '127.0.0.1');
  }
});

test('resolveAddress: addressttl= seconds keeps it that long; addressttl=-1 and explicit TTLs win over disablereuse', async () => {
  const w = worker({ addressttl: 3600, disablereuse: true });
  const a = resolveAddress(w, 'localhost');
  assert.equal(resolveAddress(w, 'localhost'), a);
  await a;
  const f = worker({ addressttl: -1 });
  assert.equal(resolveAddress(f, 'localhost'), resolveAddress(f, 'localhost'));
});

test('resolveAddress: a failed lookup is not kept', async () => {
  const w = worker({});
  const a = resolveAddress(w, 'nonexistent.invalid');
  await assert.rejects(a, (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN');
  const b = resolveAddress(w, 'nonexistent.invalid');
  assert.notEqual(b, a);
  await assert.rejects(b);
});
