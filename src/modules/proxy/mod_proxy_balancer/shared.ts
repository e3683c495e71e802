// The balancers' and members' shared state in slotmem tables (httpd keeps proxy_worker_shared
// and proxy_balancer_shared in shared memory and points worker->s / balancer->s into it).
//
// Each member's `s` becomes a SharedRecord: an object of ProxyWorkerShared's shape whose
// fields live in one slot of the balancer's worker table. Reads answer from this process's
// copy, which `load` refreshes from the table (each slot in one read, in the first turn of the
// event loop that balances a request, when the balancer-manager shows a page or a health check
// runs); writes
// change the copy and mark the field, and the marked fields alone go to the table at the end
// of the event-loop turn (or at once with `flush`), so two processes changing different
// fields of a member (one its lbstatus, the other its error flag) do not undo each other.
// The counters (lbstatus, elected, busy, transferred, read) change on every balanced request
// and are kept apart: this process adds to its copy, and its additions since the last write
// go to the table at most every STATS_WAIT ms, added to the table's values as they are then
// (a read and a write of the slot), so the table holds the sum of every process's counts.
// Any other field a process writes bumps its balancer's generation (`gen`, written after the
// fields): a process refreshes its members from the table when the balancer's slot changed
// (state.ts), not on every turn.
// A record keeps the slot's bytes as this process last saw them (read, or written by it):
// a load whose bytes are the same decodes nothing, and otherwise only the fields whose bytes
// changed (decoding every member's fields, strings included, on each balanced request cost
// more than the rest of the balancing).
//
// DIFFERENCE: httpd's members are structs in shared memory, read and written in place; plume's
// are refreshed once per event-loop turn that balances requests (state.ts, syncBalancer). A
// change made in one process is seen by another from its next such turn (httpd: at once); the
// counters of other processes within STATS_WAIT ms (each process balances by its own lbstatus
// in between).

import type { SlotPointer } from '../../../server/slotmem.js';

type FieldType = 'str' | 'u32' | 'i32' | 'f64' | 'bool' | 'opt';
/** `stat`: a counter, shared by adding (see above). */
interface Field { readonly key: string; readonly type: FieldType; readonly off: number; readonly size: number; readonly stat: boolean }

/** The members' counters. */
const STATS = new Set(['lbstatus', 'elected', 'busy', 'transferred', 'read']);

function layout(spec: readonly (readonly [string, FieldType, number?])[], stats: ReadonlySet<string> = new Set()): { fields: readonly Field[]; size: number } {
  let off = 0;
  const fields: Field[] = [];
  for (const [key, type, len] of spec) {
    const size = type === 'str' ? (len ?? 64) : type === 'f64' ? 8 : type === 'bool' ? 1 : 4;
    if (type === 'f64') off = (off + 7) & ~7;
    fields.push({ key, type, off, size, stat: stats.has(key) });
    off += size;
  }
  return { fields, size: (off + 15) & ~15 };
}

/** proxy_worker_shared's fields that plume shares (sizes of httpd's char arrays). */
export const WORKER_LAYOUT = layout([
  ['name', 'str', 384], ['scheme', 'str', 16], ['hostname', 'str', 256], ['udsPath', 'str', 256],
  ['route', 'str', 96], ['redirect', 'str', 96], ['hcuri', 'str', 96], ['hcexpr', 'str', 16], ['method', 'str', 16],
  ['port', 'u32'], ['status', 'u32'], ['lbset', 'i32'], ['lbfactor', 'f64'], ['lbstatus', 'i32'],
  ['elected', 'f64'], ['busy', 'f64'], ['transferred', 'f64'], ['read', 'f64'], ['retries', 'i32'],
  ['errorTime', 'f64'], ['updated', 'f64'], ['passes', 'i32'], ['pcount', 'i32'], ['fails', 'i32'], ['fcount', 'i32'],
  ['index', 'i32'], ['interval', 'f64'],
], STATS);

/** proxy_balancer_shared's fields. */
export const BALANCER_LAYOUT = layout([
  ['name', 'str', 64], ['sname', 'str', 64], ['sticky', 'str', 64], ['stickyPath', 'str', 64], ['stickySeparator', 'str', 2],
  ['lbpname', 'str', 16], ['nonce', 'str', 40], ['vhost', 'str', 64], ['vpath', 'str', 64],
  ['stickyForce', 'bool'], ['scolonsep', 'bool'], ['forcerecovery', 'bool'], ['inactive', 'bool'], ['needReset', 'bool'],
  ['timeout', 'f64'], ['maxAttempts', 'opt'], ['wupdated', 'f64'], ['index', 'i32'], ['gen', 'f64'],
]);

type Value = string | number | boolean | undefined;

const dirtyRecords = new Set<SharedRecord>();
let flushScheduled = false;

export function flushAll(): void {
  flushScheduled = false;
  // A member's flush bumps its balancer's generation: that record is flushed after it.
  while (dirtyRecords.size > 0) {
    const now = [...dirtyRecords];
    dirtyRecords.clear();
    for (const r of now) r.flush();
  }
}

/** How long a process keeps its counters' additions before adding them to the table. */
export const STATS_WAIT = 50;
const statRecords = new Set<SharedRecord>();
let statsTimer: NodeJS.Timeout | undefined;

/** Adds every record's counted changes to the table now. */
export function flushAllStats(): void {
  if (statsTimer !== undefined) { clearTimeout(statsTimer); statsTimer = undefined; }
  const now = [...statRecords];
  statRecords.clear();
  for (const r of now) r.flushStats();
}

/** The record behind a view (a symbol: the view's own keys are the fields alone). */
const REC = Symbol('record');
type View = Record<string, Value> & { readonly [REC]: SharedRecord };

/** The class of a layout's views: one accessor pair per field on its prototype, shared by
 *  every view of the layout, so a member's `s.lbstatus` is one monomorphic getter call that
 *  the engine inlines (accessors defined on each object gave each its own shape, and the
 *  values lived in a Map: a hash lookup per field read on every balanced request). */
const viewClasses = new WeakMap<readonly Field[], new (rec: SharedRecord) => View>();
function viewClassOf(fields: readonly Field[]): new (rec: SharedRecord) => View {
  let C = viewClasses.get(fields);
  if (C !== undefined) return C;
  class SlotView {
    readonly [REC]: SharedRecord;
    constructor(rec: SharedRecord) { this[REC] = rec; }
  }
  fields.forEach((f, i) => {
    Object.defineProperty(SlotView.prototype, f.key, {
      enumerable: true,
      get(this: View) { return this[REC].values[i]; },
      set(this: View, v: Value) { this[REC].setField(i, v); },
    });
  });
  C = SlotView as unknown as new (rec: SharedRecord) => View;
  viewClasses.set(fields, C);
  return C;
}

/** One slot's fields as an object (`view`) of the shape T whose properties read and write the
 *  copy. */
export class SharedRecord {
  /** This process's copy of the fields, by field index. */
  readonly values: Value[];
  /** Fields changed here and not yet written (by field index). */
  private readonly dirty: Uint8Array;
  private dirtyCount = 0;
  /** The slot's bytes as this process last read or wrote them (null: decode all at the next load). */
  private seen: Buffer | null = null;
  /** A counter's value in the table as this process last read or wrote it: values[i] - base[i]
   *  is what this process added since. */
  private readonly base: number[];
  private readonly hasStats: boolean;
  readonly view: Record<string, Value>;

  /** `afterFlush`: called when fields other than the counters were written. */
  constructor(private readonly ptr: SlotPointer, private readonly fields: readonly Field[], init: Readonly<Record<string, Value>>, fromSlot: boolean,
    private readonly afterFlush?: () => void) {
    this.values = new Array<Value>(fields.length).fill(undefined);
    this.dirty = new Uint8Array(fields.length);
    this.base = new Array<number>(fields.length).fill(0);
    this.hasStats = fields.some((f) => f.stat);
    this.view = new (viewClassOf(fields))(this);
    if (fromSlot) {
      this.load();
    } else {
      for (let i = 0; i < fields.length; i++) {
        const v = init[fields[i]!.key];
        this.values[i] = v;
        if (fields[i]!.stat) this.base[i] = Number(v ?? 0);
        this.dirty[i] = 1;
      }
      this.dirtyCount = fields.length;
      this.flush(false);
    }
  }

  get id(): number { return this.ptr.id; }

  /** A field set through the view: kept, and marked for the table when it changed. */
  setField(i: number, v: Value): void {
    if (this.values[i] === v) return;
    this.values[i] = v;
    if (this.fields[i]!.stat) {
      statRecords.add(this);
      if (statsTimer === undefined) { statsTimer = setTimeout(flushAllStats, STATS_WAIT); statsTimer.unref(); }
      return;
    }
    if (this.dirty[i] === 0) { this.dirty[i] = 1; this.dirtyCount++; }
    dirtyRecords.add(this);
    if (!flushScheduled) { flushScheduled = true; setImmediate(flushAll); }
  }

  /** The slot's fields as they are in the table now (fields changed here and not yet
   *  written keep this process's value). */
  load(bytes: Buffer = this.ptr.read()): boolean {
    const seen = this.seen;
    // Unchanged since this process last read or wrote the slot: every value is current.
    if (seen !== null && seen.length === bytes.length && seen.equals(bytes)) return false;
    const fields = this.fields;
    for (let i = 0; i < fields.length; i++) {
      if (this.dirty[i] !== 0) continue;
      const f = fields[i]!;
      if (seen !== null && seen.length === bytes.length && bytes.compare(seen, f.off, f.off + f.size, f.off, f.off + f.size) === 0) continue;
      const v = decode(bytes, f);
      if (f.stat) {
        // The table's count plus what this process added and has not written yet.
        const local = this.values[i];
        this.values[i] = typeof local === 'number' && typeof v === 'number' ? v + (local - this.base[i]!) : v;
        this.base[i] = typeof v === 'number' ? v : 0;
      } else this.values[i] = v;
    }
    this.seen = bytes;
    return true;
  }

  /** Adds this process's counted changes to the table's counters (a read and a write). */
  flushStats(): void {
    if (!this.hasStats) return;
    const bytes = this.ptr.read();
    this.load(bytes);
    const fields = this.fields;
    let from = -1; let to = -1;
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]!;
      if (!f.stat || this.values[i] === this.base[i]) continue;
      encode(bytes.subarray(f.off, f.off + f.size), f, this.values[i]);
      const back = decode(bytes, f) as number;
      this.values[i] = back;
      this.base[i] = back;
      if (from < 0) from = f.off;
      to = f.off + f.size;
    }
    if (from < 0) return;
    this.ptr.write(bytes.subarray(from, to), from);
    this.seen = bytes;
  }

  /** Writes the changed fields now; adjacent ones (or ones apart only by alignment padding,
   *  which nothing uses) in one write. */
  flush(notify = true): void {
    if (this.dirtyCount === 0) return;
    const fields = this.fields;
    const dirty = this.dirty;
    const seen = this.seen;
    let i = 0;
    while (i < fields.length) {
      if (dirty[i] === 0) { i++; continue; }
      let j = i;
      while (j + 1 < fields.length && dirty[j + 1] !== 0) j++;
      const start = fields[i]!.off;
      const b = Buffer.alloc(fields[j]!.off + fields[j]!.size - start);
      for (let k = i; k <= j; k++) {
        const f = fields[k]!;
        encode(b.subarray(f.off - start, f.off - start + f.size), f, this.values[k]);
      }
      this.ptr.write(b, start);
      if (seen !== null && seen.length >= start + b.length) {
        b.copy(seen, start);
        // A value the slot cannot hold as it is (a fraction in an integer field, a string
        // too long) reads back differently: the next load decodes the slot again.
        for (let k = i; k <= j && this.seen !== null; k++) {
          if (decode(seen, fields[k]!) !== this.values[k]) this.seen = null;
        }
      }
      i = j + 1;
    }
    dirty.fill(0);
    this.dirtyCount = 0;
    if (notify) this.afterFlush?.();
  }
}

function decode(b: Buffer, f: Field): Value {
  switch (f.type) {
    case 'str': {
      const end = b.indexOf(0, f.off);
      return b.toString('latin1', f.off, end < 0 || end > f.off + f.size ? f.off + f.size : end);
    }
    case 'u32': return b.readUInt32LE(f.off);
    case 'i32': return b.readInt32LE(f.off);
    case 'f64': return b.readDoubleLE(f.off);
    case 'bool': return b[f.off] !== 0;
    case 'opt': { const n = b.readInt32LE(f.off); return n < 0 ? undefined : n; }
  }
}

function encode(b: Buffer, f: Field, v: Value): void {
  switch (f.type) {
    case 'str': b.write(String(v ?? '').slice(0, f.size - 1), 0, 'latin1'); return;
    case 'u32': b.writeUInt32LE(Number(v ?? 0) >>> 0, 0); return;
    case 'i32': b.writeInt32LE(Number(v ?? 0) | 0, 0); return;
    case 'f64': b.writeDoubleLE(Number(v ?? 0), 0); return;
    case 'bool': b[0] = v === true ? 1 : 0; return;
    case 'opt': b.writeInt32LE(v === undefined ? -1 : Number(v) | 0, 0); return;
  }
}

/** The worker name stored in a slot ('' when the slot was never used). */
export function slotName(bytes: Buffer): string {
  const f = WORKER_LAYOUT.fields[0]!;
  return decode(bytes, f) as string;
}
