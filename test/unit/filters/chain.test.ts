// The filter chain API (src/server/filters.ts): ordering by type as util_filter.c orders it,
// transformBrigade's passing rules, bucket reading in pieces, input filters pulled in order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  EOS, FLUSH, FTYPE_CONTENT_SET, FTYPE_PROTOCOL, FTYPE_RESOURCE, bucketPieces, insertFilter, instantiate, instantiateInput,
  linkChain, transformBrigade, type Brigade, type Bucket, type FilterInstance, type FilterSpec, type InputFilterInstance, type InputFilterSpec,
} from '../../../src/server/filters.js';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import type { ServerRec } from '../../../src/server/server-rec.js';

const req = (): Request => new Request({} as Runtime, {} as ConnRec, {} as ServerRec);

/** A filter that records the brigades reaching it. */
function sink(): { spec: FilterSpec<Brigade[]>; got: Brigade[] } {
  const got: Brigade[] = [];
  return { got, spec: { name: 'SINK', type: FTYPE_PROTOCOL + 50, init: () => got, filter(f, bb) { f.state.push(bb); } } };
}

const named = (name: string, type: number): FilterSpec<undefined> => ({ name, type, filter: (f, bb) => f.pass(bb) });

test('filters are ordered by type, later additions of a type after earlier ones', () => {
  const r = req();
  const chain: FilterInstance[] = [];
  for (const [n, t] of [['C1', FTYPE_CONTENT_SET], ['R1', FTYPE_RESOURCE], ['P', FTYPE_PROTOCOL], ['R2', FTYPE_RESOURCE], ['C2', FTYPE_CONTENT_SET], ['R0', FTYPE_RESOURCE - 1]] as const) {
    insertFilter(chain, instantiate(named(n, t), r) as FilterInstance);
  }
  assert.deepEqual(chain.map((f) => f.spec.name), ['R0', 'R1', 'R2', 'C1', 'C2', 'P']);
});

test('transformBrigade: output per input brigade, at FLUSH and with EOS; passAt and hold', async () => {
  const r = req();
  const s = sink();
  const upper: FilterSpec<undefined> = {
    name: 'UP', type: FTYPE_RESOURCE,
    filter: (f, bb) => transformBrigade(f, bb, { write: (d) => Buffer.from(d.toString('latin1').toUpperCase(), 'latin1'), end: () => Buffer.from('!') }),
  };
  const head = linkChain([instantiate(upper, r) as FilterInstance, instantiate(s.spec, r) as FilterInstance])!;
  await head.spec.filter(head, [{ kind: 'data', data: Buffer.from('ab') }, { kind: 'data', data: Buffer.from('cd') }]);
  await head.spec.filter(head, [{ kind: 'data', data: Buffer.from('ef') }, FLUSH, { kind: 'data', data: Buffer.from('gh') }, EOS]);
  const shape = s.got.map((bb) => bb.map((b) => (b.kind === 'data' ? b.data.toString() : b.kind)));
  assert.deepEqual(shape, [['AB', 'CD'], ['EF', 'flush'], ['GH', '!', 'eos']]);

  const s2 = sink();
  const held: FilterSpec<Bucket[]> = {
    name: 'HOLD', type: FTYPE_RESOURCE, init: () => [],
    filter: (f, bb) => transformBrigade(f, bb, { write: (d) => d, end: () => null }, { passAt: 4, holdAtBrigadeEnd: true, held: f.state }),
  };
  const h2 = linkChain([instantiate(held, r) as FilterInstance, instantiate(s2.spec, r) as FilterInstance])!;
  await h2.spec.filter(h2, [{ kind: 'data', data: Buffer.from('ab') }]);
  assert.equal(s2.got.length, 0, 'held: less than passAt and no EOS');
  await h2.spec.filter(h2, [{ kind: 'data', data: Buffer.from('cdef') }]);
  assert.equal(s2.got.length, 1, 'passed once passAt bytes were pending');
  await h2.spec.filter(h2, [EOS]);
  assert.deepEqual(s2.got.map((bb) => bb.map((b) => b.kind)), [['data', 'data'], ['eos']]);
});

test('a removed filter is skipped; backpressure: the next brigade waits for the pass before it', async () => {
  const r = req();
  const s = sink();
  const order: string[] = [];
  const slow: FilterSpec<undefined> = {
    name: 'SLOW', type: FTYPE_CONTENT_SET,
    filter: async (f, bb) => { order.push('slow start'); await new Promise((res) => setImmediate(res)); order.push('slow end'); return f.pass(bb); },
  };
  const once: FilterSpec<undefined> = { name: 'ONCE', type: FTYPE_RESOURCE, filter: (f, bb) => { f.remove(); return f.pass(bb); } };
  const fOnce = instantiate(once, r) as FilterInstance;
  linkChain([fOnce, instantiate(slow, r) as FilterInstance, instantiate(s.spec, r) as FilterInstance]);
  await fOnce.spec.filter(fOnce, [{ kind: 'data', data: Buffer.from('x') }]);
  assert.equal(fOnce.removed, true);
  assert.deepEqual(order, ['slow start', 'slow end']);
  assert.equal(s.got.length, 1);
});

test('bucketPieces reads a file in the piece size asked for, in order', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-chain-'));
  try {
    const file = path.join(dir, 'f');
    const data = Buffer.alloc(25000);
    for (let i = 0; i < data.length; i++) data[i] = i % 251;
    fs.writeFileSync(file, data);
    const pieces: Buffer[] = [];
    await bucketPieces({ kind: 'file', path: file, start: 1000, length: 20000 }, (d) => { pieces.push(d); }, 8000);
    assert.deepEqual(pieces.map((p) => p.length), [8000, 8000, 4000]);
    assert.ok(Buffer.concat(pieces).equals(data.subarray(1000, 21000)));
    const cachedPieces: number[] = [];
    await bucketPieces({ kind: 'file', path: file, start: 0, length: 25000, cached: data }, (d) => { cachedPieces.push(d.length); }, 10000);
    assert.deepEqual(cachedPieces, [10000, 10000, 5000]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('input filters: pulled from the top, each reading the one below', async () => {
  const r = req();
  const source: InputFilterSpec<string[]> = {
    name: 'SRC', type: FTYPE_PROTOCOL, init: () => ['ab', 'cd'],
    read: async (f) => { const v = f.state.shift(); return v === undefined ? null : Buffer.from(v); },
  };
  const upper: InputFilterSpec<undefined> = {
    name: 'UPIN', type: FTYPE_RESOURCE,
    read: async (f) => { const b = await f.readNext(); return b === null ? null : Buffer.from(b.toString().toUpperCase()); },
  };
  const star: InputFilterSpec<undefined> = {
    name: 'STAR', type: FTYPE_CONTENT_SET,
    read: async (f) => { const b = await f.readNext(); return b === null ? null : Buffer.concat([b, Buffer.from('*')]); },
  };
  const chain: InputFilterInstance[] = [];
  insertFilter(chain, instantiateInput(star, r) as InputFilterInstance);
  insertFilter(chain, instantiateInput(upper, r) as InputFilterInstance);
  insertFilter(chain, instantiateInput(source, r) as InputFilterInstance);
  for (let i = 0; i < chain.length; i++) chain[i]!.next = chain[i + 1] ?? null;
  const head = chain[0]!;
  const got: string[] = [];
  for (let b = await head.spec.read(head); b !== null; b = await head.spec.read(head)) got.push(b.toString());
  assert.deepEqual(chain.map((f) => f.spec.name), ['UPIN', 'STAR', 'SRC']);
  assert.deepEqual(got, ['AB*', 'CD*']);
});
