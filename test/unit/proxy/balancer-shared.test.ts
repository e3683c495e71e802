// mod_proxy_balancer's shared member records (shared.ts): two processes' views of one slot.
// The counters (elected, busy, lbstatus, transferred, read) are added to the table, so the
// table holds the sum of every process's counts; any other field written bumps the owner's
// callback (the balancer's generation) after it reached the slot. Two records over the same
// bytes stand for two processes attached to one slotmem table.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { SharedRecord, WORKER_LAYOUT, flushAll, flushAllStats } from '../../../src/modules/proxy/mod_proxy_balancer/shared.js';
import type { SlotPointer } from '../../../src/server/slotmem.js';

function slotOver(mem: Buffer): SlotPointer {
  return {
    id: 0,
    read: () => Buffer.from(mem),
    write: (bytes, offset = 0) => { mem.set(bytes, offset); },
  };
}

type Member = { elected: number; busy: number; lbstatus: number; read: number; status: number; route: string };

const init = {
  name: 'http://127.0.0.1:8080', scheme: 'http', hostname: '127.0.0.1', udsPath: '', route: 'one', redirect: '',
  hcuri: '', hcexpr: '', method: 'NONE', port: 8080, status: 0, lbset: 0, lbfactor: 1, lbstatus: 0, elected: 0, busy: 0,
  transferred: 0, read: 0, retries: 0, errorTime: 0, updated: 0, passes: 1, pcount: 0, fails: 1, fcount: 0, index: 0, interval: 30000,
};

test('counters of two processes add up in the table; other fields are written with a generation bump', () => {
  const mem = Buffer.alloc(WORKER_LAYOUT.size);
  let bumpsA = 0;
  let bumpsB = 0;
  const a = new SharedRecord(slotOver(mem), WORKER_LAYOUT.fields, init, false, () => { bumpsA++; });
  const b = new SharedRecord(slotOver(mem), WORKER_LAYOUT.fields, init, true, () => { bumpsB++; });
  assert.equal(bumpsA, 0, 'the first write of a slot is no change to announce');
  const va = a.view as unknown as Member;
  const vb = b.view as unknown as Member;

  for (let i = 0; i < 3; i++) { va.elected++; va.lbstatus -= 200; va.busy++; }
  for (let i = 0; i < 2; i++) { vb.elected++; vb.lbstatus += 100; }
  va.read += 1024;
  // Counted changes stay in each process until they are added to the table.
  a.load();
  assert.equal(va.elected, 3);
  flushAllStats();
  assert.equal(bumpsA + bumpsB, 0, 'counters do not bump the generation');
  // Each process sees the sum: its own counts and the other's.
  assert.equal(a.load() || true, true);
  b.load();
  assert.deepEqual([va.elected, va.lbstatus, va.busy, va.read], [5, -400, 3, 1024]);
  assert.deepEqual([vb.elected, vb.lbstatus, vb.busy, vb.read], [5, -400, 3, 1024]);

  // A count made after a load keeps counting from the table's value.
  vb.busy--;
  a.load();
  assert.equal(va.busy, 3, 'not yet in the table');
  b.flushStats();
  a.load();
  assert.equal(va.busy, 2);

  // A state field: written at the flush, with the owner's generation bump after it.
  va.status = 4;
  vb.route = 'two';
  assert.equal(vb.status, 0);
  flushAll();
  assert.equal(bumpsA, 1);
  assert.equal(bumpsB, 1);
  b.load();
  a.load();
  assert.equal(vb.status, 4);
  assert.equal(va.route, 'two', 'two processes changing different fields keep both changes');
  assert.equal(vb.elected, 5, 'counters unchanged by a state write');
  // Nothing changed since the last load.
  assert.equal(b.load(), false);
});
