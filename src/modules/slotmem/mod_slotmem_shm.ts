// mod_slotmem_shm: the "shm" slot memory provider (httpd's modules/slotmem/mod_slotmem_shm.c).
//
// httpd keeps each table in a shared-memory segment the parent makes in post_config and its
// forked children inherit. plume keeps it in a file, as it keeps the scoreboard
// (src/mpm/scoreboard.ts): the parent makes it, every worker opens it in its own post_config
// (before dropping privileges) and reads and writes slots with positioned reads and writes,
// so a write by one process is seen by the next read in any other; the single -X process
// keeps its tables in files too (a table named '' or "none" is in memory). The layout is
// httpd's: a description (slot size, number of slots, type), the free-slot counter, the
// slots, then one in-use byte per slot. Persisted tables (AP_SLOTMEM_TYPE_PERSIST) are stored
// when the parent's configuration generation ends, in httpd's format (data, MD5, description)
// and restored by the next generation's create.
//
// DIFFERENCE: a relative name's file is DefaultRuntimeDir/slotmem-shm-<name>.<parent pid>.shm
// (httpd: slotmem-shm-<name>_<generation>.shm): a worker knows its parent's pid, not the
// generation the parent was configuring, and runtime directories shared by several servers
// stay apart. Each generation's file is made afresh through a rename, so workers of the
// previous generation keep the table they opened.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import type { ConfigContext } from '../../server/config/context.js';
import { defineModule, MODULE_API_VERSION } from '../../server/module.js';
import { globals } from '../../server/core/globals.js';
import { levelFor, APLOG_DEBUG, APLOG_ERR, APLOG_NOTICE } from '../../server/log/levels.js';
import {
  SLOTMEM_TYPE_PERSIST, SLOTMEM_TYPE_PREGRAB, SLOTMEM_TYPE_CLEARINUSE,
  type SlotmemInstance, type SlotmemProvider, type SlotmemStatus, type SlotPointer,
} from '../../server/slotmem.js';

/** AP_SLOTMEM_OFFSET (the aligned description: size_t size, unsigned num, type) and
 *  AP_UNSIGNEDINT_OFFSET (the aligned free counter) on a 64-bit host. */
const DESC = 16;
const FREE = 8;
const MD5_LEN = 16;
const PREFIX = 'slotmem-shm-';
const SUFFIX = '.shm';
const PERSIST_SUFFIX = '.persist';

// ---- storage ----------------------------------------------------------------------------------

interface Segment {
  read(off: number, len: number): Buffer;
  write(off: number, bytes: Uint8Array): void;
  close(): void;
}

class FileSegment implements Segment {
  constructor(private fd: number) {}
  read(off: number, len: number): Buffer {
    const b = Buffer.alloc(len);
    if (this.fd >= 0) fs.readSync(this.fd, b, 0, len, off);
    return b;
  }
  write(off: number, bytes: Uint8Array): void {
    if (this.fd >= 0) fs.writeSync(this.fd, bytes, 0, bytes.length, off);
  }
  close(): void {
    if (this.fd < 0) return;
    try { fs.closeSync(this.fd); } catch { /* closed */ }
    this.fd = -1;
  }
}

class MemorySegment implements Segment {
  constructor(private readonly buf: Buffer) {}
  read(off: number, len: number): Buffer {
    return Buffer.from(this.buf.subarray(off, off + len));
  }
  write(off: number, bytes: Uint8Array): void {
    this.buf.set(bytes, off);
  }
  close(): void { /* garbage collected */ }
}

function describe(size: number, num: number, type: number): Buffer {
  const d = Buffer.alloc(DESC);
  d.writeBigUInt64LE(BigInt(size), 0);
  d.writeUInt32LE(num, 8);
  d.writeUInt32LE(type, 12);
  return d;
}

class Table implements SlotmemInstance {
  readonly base = DESC + FREE;
  readonly inuseAt: number;
  readonly total: number;
  /** A newer generation's table took over its persist file: this one no longer stores. */
  superseded = false;
  constructor(
    readonly name: string, readonly pname: string | undefined,
    readonly size: number, readonly num: number, readonly type: number,
    readonly seg: Segment, readonly owner: boolean, readonly ino: number,
  ) {
    this.inuseAt = this.base + size * num;
    this.total = this.inuseAt + num;
  }
  get pregrab(): boolean { return (this.type & SLOTMEM_TYPE_PREGRAB) !== 0; }
  inuse(id: number): boolean { return this.seg.read(this.inuseAt + id, 1)[0] !== 0; }
  setInuse(id: number, v: boolean): void { this.seg.write(this.inuseAt + id, Uint8Array.of(v ? 1 : 0)); }
  numFree(): number { return this.seg.read(DESC, 4).readUInt32LE(0); }
  addFree(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE((this.numFree() + n) >>> 0, 0);
    this.seg.write(DESC, b);
  }
}

// ---- logging -----------------------------------------------------------------------------------

function log(ctx: ConfigContext, level: number, message: string): void {
  const s = ctx.mainServer;
  if (s.errorLog === undefined || s.logLevel === undefined) return;
  if (level > levelFor(s.logLevel, 'slotmem_shm')) return;
  s.errorLog.write({ module: 'slotmem_shm', level, message });
}

// ---- names -------------------------------------------------------------------------------------

function runtimeDir(ctx: ConfigContext): string {
  return globals(ctx).runtimeDir ?? ctx.serverRootRelative('logs');
}

/** slotmem_filenames: the table's file and its persist file, or undefined for 'none'. */
export function slotmemFilenames(ctx: ConfigContext, name: string, parentPid: number): { file: string; persist: string } | undefined {
  if (name === '' || name.toLowerCase() === 'none') return undefined;
  if (path.isAbsolute(name)) return { file: name, persist: name + PERSIST_SUFFIX };
  const dir = runtimeDir(ctx);
  return {
    file: path.join(dir, `${PREFIX}${name}.${parentPid}${SUFFIX}`),
    persist: path.join(dir, `${PREFIX}${name}${SUFFIX}${PERSIST_SUFFIX}`),
  };
}

/** This generation's tables by file name (httpd's globallistmem). */
function tablesOf(ctx: ConfigContext): Map<string, Table> {
  return ctx.getScratch('slotmem_shm:tables', () => new Map<string, Table>());
}

/** The parent's tables of every generation still open, by persist file (a graceful restart
 *  makes the new generation's tables before the old generation's cleanup stores its own). */
const live = new Map<string, Table>();

// ---- persistence ---------------------------------------------------------------------------------

function store(ctx: ConfigContext, t: Table): void {
  if (t.pname === undefined) return;
  log(ctx, APLOG_DEBUG, `AH02334: storing ${t.pname}`);
  if ((t.type & SLOTMEM_TYPE_CLEARINUSE) !== 0) {
    let freed = 0;
    for (let i = 0; i < t.num; i++) if (t.inuse(i)) { t.setInuse(i, false); freed++; }
    if (freed > 0) t.addFree(freed);
  }
  const data = t.seg.read(DESC, t.total - DESC);
  const md5 = createHash('md5').update(data).digest();
  try {
    fs.writeFileSync(t.pname, Buffer.concat([data, md5, t.seg.read(0, DESC)]), { mode: 0o600 });
  } catch {
    try { fs.unlinkSync(t.pname); } catch { /* not made */ }
  }
}

/** restore_slotmem: the persisted data when its digest and description match. */
function restore(ctx: ConfigContext, t: { pname: string; desc: Buffer; total: number }): Buffer | undefined {
  log(ctx, APLOG_DEBUG, `AH02335: restoring ${t.pname}`);
  let bytes: Buffer;
  try { bytes = fs.readFileSync(t.pname); } catch { return undefined; }
  const n = t.total - DESC;
  if (bytes.length < n) {
    log(ctx, APLOG_ERR, 'AH02553: persisted slotmem read had unexpected size');
    return undefined;
  }
  const data = bytes.subarray(0, n);
  if (bytes.length === n) {
    log(ctx, APLOG_NOTICE, 'AH02552: persisted slotmem at EOF... bypassing md5/desc match check (old persist file?)');
    return data;
  }
  if (bytes.length < n + MD5_LEN) {
    log(ctx, APLOG_ERR, 'AH02553: persisted slotmem read had unexpected size');
    return undefined;
  }
  const md5 = createHash('md5').update(data).digest();
  if (!md5.equals(bytes.subarray(n, n + MD5_LEN))) {
    log(ctx, APLOG_ERR, 'AH02551: persisted slotmem md5/desc mismatch');
    return undefined;
  }
  if (bytes.length === n + MD5_LEN) {
    log(ctx, APLOG_NOTICE, 'AH02552: persisted slotmem at EOF... bypassing md5/desc match check (old persist file?)');
    return data;
  }
  if (bytes.length < n + MD5_LEN + DESC) {
    log(ctx, APLOG_ERR, 'AH02553: persisted slotmem read had unexpected size');
    return undefined;
  }
  if (!t.desc.equals(bytes.subarray(n + MD5_LEN, n + MD5_LEN + DESC))) {
    log(ctx, APLOG_ERR, 'AH02551: persisted slotmem md5/desc mismatch');
    return undefined;
  }
  return data;
}

// ---- opening ---------------------------------------------------------------------------------

function openFile(file: string, pname: string | undefined): Table | string {
  let fd: number;
  try { fd = fs.openSync(file, 'r+'); } catch (e) { return (e as Error).message; }
  const d = Buffer.alloc(DESC);
  fs.readSync(fd, d, 0, DESC, 0);
  const size = Number(d.readBigUInt64LE(0));
  const num = d.readUInt32LE(8);
  const type = d.readUInt32LE(12);
  if (fs.fstatSync(fd).size < DESC + FREE + size * num + num) {
    fs.closeSync(fd);
    return `${file} is not a slotmem table`;
  }
  return new Table(file, pname, size, num, type, new FileSegment(fd), false, fs.fstatSync(fd).ino);
}

function create(ctx: ConfigContext, name: string, size: number, num: number, type: number): Table | string {
  const persist = (type & SLOTMEM_TYPE_PERSIST) !== 0;
  const pid = ctx.child ? process.ppid : process.pid;
  const names = slotmemFilenames(ctx, name, pid);
  const tables = tablesOf(ctx);
  const fname = names?.file ?? 'none';
  if (names !== undefined) {
    const have = tables.get(names.file);
    if (have !== undefined) {
      log(ctx, APLOG_DEBUG, `AH02603: create found ${fname} in global list`);
      return have;
    }
    log(ctx, APLOG_DEBUG, `AH02602: create didn't find ${fname} in global list`);
  }
  log(ctx, APLOG_DEBUG, `AH02300: create ${fname}: ${size}/${num}`);
  const total = DESC + FREE + size * num + num;
  let t: Table;
  if (names === undefined) {
    const buf = Buffer.alloc(total);
    describe(size, num, type).copy(buf, 0);
    buf.writeUInt32LE(num, DESC);
    t = new Table('none', undefined, size, num, type, new MemorySegment(buf), true, 0);
  } else if (ctx.child) {
    // The parent made it: attach (httpd's children inherit the segment).
    const got = openFile(names.file, persist ? names.persist : undefined);
    log(ctx, typeof got === 'string' ? APLOG_ERR : APLOG_DEBUG, `AH02611: create: apr_shm_attach(${fname}) ${typeof got === 'string' ? 'failed' : 'succeeded'}`);
    if (typeof got === 'string') return got;
    if (got.size !== size || got.num !== num) {
      got.seg.close();
      return `${fname}: slot size or number differs from the parent's`;
    }
    t = got;
  } else {
    const desc = describe(size, num, type);
    const image = Buffer.alloc(total);
    desc.copy(image, 0);
    let restored = false;
    if (persist) {
      const older = live.get(names.persist);
      if (older !== undefined && !older.superseded) { store(ctx, older); older.superseded = true; }
      const data = restore(ctx, { pname: names.persist, desc, total });
      if (data !== undefined) { data.copy(image, DESC); restored = true; } else log(ctx, APLOG_DEBUG, `AH02554: could not restore ${fname}`);
    }
    if (!restored) image.writeUInt32LE(num, DESC);
    const tmp = `${names.file}.${process.pid}.tmp`;
    let fd: number;
    try {
      fd = fs.openSync(tmp, 'w+', 0o600);
      try {
        fs.writeSync(fd, image, 0, total, 0);
        fs.renameSync(tmp, names.file);
      } catch (e) {
        fs.closeSync(fd);
        throw e;
      }
    } catch (e) {
      try { fs.unlinkSync(tmp); } catch { /* not made */ }
      log(ctx, APLOG_ERR, `AH02611: create: apr_shm_create(${fname}) failed`);
      return (e as Error).message;
    }
    log(ctx, APLOG_DEBUG, `AH02611: create: apr_shm_create(${fname}) succeeded`);
    t = new Table(names.file, persist ? names.persist : undefined, size, num, type, new FileSegment(fd), true, fs.fstatSync(fd).ino);
    if (persist) live.set(names.persist, t);
  }
  if (names !== undefined) tables.set(names.file, t);
  return t;
}

function attach(ctx: ConfigContext, name: string): Table | string {
  const names = slotmemFilenames(ctx, name, ctx.child ? process.ppid : process.pid);
  if (names === undefined) return 'no shared memory available';
  log(ctx, APLOG_DEBUG, `AH02301: attach looking for ${names.file}`);
  const tables = tablesOf(ctx);
  let t = tables.get(names.file);
  if (t === undefined) {
    const got = openFile(names.file, undefined);
    if (typeof got === 'string') return got;
    t = got;
    tables.set(names.file, t);
  }
  log(ctx, APLOG_DEBUG, `AH02302: attach found ${names.file}: ${t.size}/${t.num}`);
  return t;
}

// ---- the provider ------------------------------------------------------------------------------

function table(inst: SlotmemInstance): Table {
  if (!(inst instanceof Table)) throw new TypeError('not a slotmem_shm table');
  return inst;
}

const provider: SlotmemProvider = {
  name: 'sharedmem',
  doall(inst, fn) {
    const t = table(inst);
    const all = t.seg.read(0, t.total);
    for (let i = 0; i < t.num; i++) {
      if (t.pregrab && all[t.inuseAt + i] === 0) continue;
      const r = fn(Buffer.from(all.subarray(t.base + i * t.size, t.base + (i + 1) * t.size)), i);
      if (r !== undefined && r !== 'success') return r;
    }
    return 'success';
  },
  create,
  attach,
  dptr(inst, id): SlotPointer | SlotmemStatus {
    const t = table(inst);
    if (!Number.isInteger(id) || id < 0 || id >= t.num) return 'einval';
    const at = t.base + id * t.size;
    return {
      id,
      read: () => t.seg.read(at, t.size),
      write: (bytes, offset = 0) => {
        if (offset < 0 || offset + bytes.length > t.size) throw new RangeError(`slot write of ${bytes.length} bytes at ${offset} outside a ${t.size}-byte slot`);
        t.seg.write(at + offset, bytes);
      },
    };
  },
  get(inst, id, dest) {
    const t = table(inst);
    if (!Number.isInteger(id) || id < 0 || id >= t.num) return 'einval';
    if (t.pregrab && !t.inuse(id)) return 'notfound';
    t.setInuse(id, true);
    t.seg.read(t.base + id * t.size, Math.min(dest.length, t.size)).copy(dest);
    return 'success';
  },
  put(inst, id, src) {
    const t = table(inst);
    if (!Number.isInteger(id) || id < 0 || id >= t.num) return 'einval';
    if (t.pregrab && !t.inuse(id)) return 'notfound';
    t.setInuse(id, true);
    t.seg.write(t.base + id * t.size, src.length > t.size ? src.subarray(0, t.size) : src);
    return 'success';
  },
  numSlots: (inst) => table(inst).num,
  numFreeSlots(inst) {
    const t = table(inst);
    if (t.pregrab) return t.numFree();
    const inuse = t.seg.read(t.inuseAt, t.num);
    let n = 0;
    for (let i = 0; i < t.num; i++) if (inuse[i] === 0) n++;
    return n;
  },
  slotSize: (inst) => table(inst).size,
  grab(inst) {
    const t = table(inst);
    const inuse = t.seg.read(t.inuseAt, t.num);
    const i = inuse.indexOf(0);
    if (i < 0) return 'einval';
    t.setInuse(i, true);
    t.addFree(-1);
    return i;
  },
  release(inst, id) {
    const t = table(inst);
    if (!Number.isInteger(id) || id < 0 || id >= t.num) return 'einval';
    if (!t.inuse(id)) return 'notfound';
    t.setInuse(id, false);
    t.addFree(1);
    return 'success';
  },
  fgrab(inst, id) {
    const t = table(inst);
    if (!Number.isInteger(id) || id < 0 || id >= t.num) return 'einval';
    if (!t.inuse(id)) { t.setInuse(id, true); t.addFree(-1); }
    return 'success';
  },
};

/** cleanup_slotmem: the parent stores persisted tables; every process closes its tables and
 *  the parent removes its files (those still its own: a newer generation may have replaced
 *  them). */
function cleanup(ctx: ConfigContext): void {
  for (const t of tablesOf(ctx).values()) {
    if (!ctx.child && t.pname !== undefined && (t.type & SLOTMEM_TYPE_PERSIST) !== 0 && !t.superseded) store(ctx, t);
    if (t.pname !== undefined && live.get(t.pname) === t) live.delete(t.pname);
    t.seg.close();
    if (t.owner && t.name !== 'none') {
      try { if (fs.statSync(t.name).ino === t.ino) fs.unlinkSync(t.name); } catch { /* gone */ }
    }
  }
  tablesOf(ctx).clear();
}

export default defineModule<undefined, undefined>({
  name: 'slotmem_shm_module',
  source: 'mod_slotmem_shm.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'slotmem', name: 'shm', version: '0', provider }],
  configHooks: { cleanup },
});
