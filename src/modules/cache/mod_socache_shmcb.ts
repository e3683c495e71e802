// mod_socache_shmcb (modules/cache/mod_socache_shmcb.c): the "shmcb" small-object cache
// provider, `SSLSessionCache shmcb:/path/to/file(512000)`: one fixed-size table shared by the
// worker processes of one machine, so that a TLS session made in one worker resumes in any.
//
// DIFFERENCE: httpd maps the file as shared memory behind a global mutex; Node has neither, so
// the table lives in the file itself (in the page cache, as the scoreboard does) and is read
// and written a slot at a time with pread/pwrite. A slot carries a CRC-32 of its contents: a
// slot caught half-written by another process reads as a miss, never as wrong data, so no
// lock is needed. The table has httpd's geometry — as many subcaches and indexes per subcache
// as httpd chooses for the size and the user's hints, an id's subcache chosen by its first
// byte as httpd chooses it — but each index is a fixed-size slot (the file is sparse and
// larger than the size given) and an id has two candidate slots in its subcache: a store
// takes the id's own, an empty, an expired or the sooner-expiring one (httpd's cyclic buffers
// drop the oldest objects too). Objects larger than a slot are not stored, as httpd refuses
// objects larger than its subcache's data area. The statistics httpd keeps in its header
// (stores, replacements, expiries, discards, retrieves and removes hit/miss) are counted per
// process in the file, each process in its own block, and summed for server-status, so the
// page shows every worker's activity. The parent makes the file afresh for every
// configuration generation (through a rename, so workers of the previous generation keep the
// one they opened) and removes it at the end.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { defineModule, MODULE_API_VERSION } from '../../server/module.js';
import type { SocacheInstance, SocacheProvider, SocacheSpec, SocacheHints } from '../../server/socache.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import { AP_STATUS_SHORT, type StatusWriter } from '../../server/status-hook.js';
import { globals } from '../../server/core/globals.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import { crc32, logServer } from './socache-common.js';

const DEFAULT_SIZE = 512 * 1024;
const MIN_SIZE = 8192;
/** SHMCB_MAX_SIZE on a 64-bit platform (what httpd's message names). */
const MAX_SIZE = 4294967296;
const MAGIC = 0x53484d43; // "SHMC"
const VERSION = 2;
/** Header: magic, version, subcaches, indexes per subcache, slot size, httpd's data area per
 *  subcache, the size configured (u32 each; the size as a double). */
const HEADER = 64;
/** httpd's structures on a 64-bit platform: SHMCBHeader (8 unsigned long + 5 unsigned int,
 *  aligned), SHMCBSubcache (4 unsigned int), SHMCBIndex (apr_time_t + 3 unsigned int + a char,
 *  aligned). They decide the geometry httpd reports. */
const HTTPD_HEADER = 88;
const HTTPD_SUBCACHE = 16;
const HTTPD_INDEX = 24;
/** The statistics: one block of counters per process (block 0 the parent or the single
 *  process, block 1 + n the worker in scoreboard slot n). */
const STAT_BLOCKS = 1024;
const STATS = 8;
const STAT_BLOCK = STATS * 8;
const STATS_AT = HEADER;
const SLOTS_AT = STATS_AT + STAT_BLOCKS * STAT_BLOCK;
const ST_STORES = 0;
const ST_REPLACED = 1;
const ST_EXPIRIES = 2;
const ST_SCROLLED = 3;
const ST_RETRIEVES_HIT = 4;
const ST_RETRIEVES_MISS = 5;
const ST_REMOVES_HIT = 6;
const ST_REMOVES_MISS = 7;
/** Slot: crc32 u32, expiry (ms since the epoch) f64, id length u16, data length u16, id, data. */
const SLOT_HEAD = 16;
/** How much of the table the status page reads at a time. */
const SCAN_CHUNK = 1 << 20;

/** The table's shape, as the header holds it. */
interface Geometry {
  subcaches: number;
  indexes: number;
  slotSize: number;
  /** httpd's data area per subcache (cache usage is reported against it). */
  dataSize: number;
  /** The size configured (httpd's "shared memory"). */
  shmSize: number;
}

/** The block of counters this process writes. */
function statBlock(create: boolean): number {
  const slot = Number(process.env['PLUME_CHILD_SLOT']);
  if (create || !Number.isInteger(slot) || slot < 0) return 0;
  return 1 + (slot % (STAT_BLOCKS - 1));
}

class ShmcbCache implements SocacheInstance {
  private readonly slot: Buffer;
  private readonly slots: number;
  private readonly slotSize: number;
  /** This process's counters, and their place in the file. */
  private readonly stats = new Float64Array(STATS);
  private readonly statsAt: number;

  constructor(
    private readonly s: ServerRec,
    private readonly file: string,
    private fd: number,
    private readonly g: Geometry,
    private readonly owner: boolean,
    private readonly ino: number,
    block: number,
  ) {
    this.slotSize = g.slotSize;
    this.slots = g.subcaches * g.indexes;
    this.slot = Buffer.alloc(g.slotSize);
    this.statsAt = STATS_AT + block * STAT_BLOCK;
    // A worker in a slot another worker had goes on from its counts.
    const b = Buffer.alloc(STAT_BLOCK);
    try { fs.readSync(fd, b, 0, STAT_BLOCK, this.statsAt); } catch { /* zeros */ }
    for (let i = 0; i < STATS; i++) {
      const v = b.readDoubleLE(i * 8);
      this.stats[i] = Number.isFinite(v) && v > 0 ? v : 0;
    }
  }

  private count(which: number, n = 1): void {
    if (n === 0) return;
    this.stats[which] = this.stats[which]! + n;
    const b = Buffer.allocUnsafe(8);
    b.writeDoubleLE(this.stats[which]!, 0);
    try { fs.writeSync(this.fd, b, 0, 8, this.statsAt + which * 8); } catch { /* counted here only */ }
  }

  private offset(i: number): number {
    return SLOTS_AT + i * this.slotSize;
  }

  /** Reads slot i; its id, data and expiry when it is whole. */
  private read(i: number): { id: Buffer; data: Buffer; expiry: number } | null {
    const b = this.slot;
    let n: number;
    try { n = fs.readSync(this.fd, b, 0, this.slotSize, this.offset(i)); } catch { return null; }
    if (n < SLOT_HEAD) return null;
    const e = wholeSlot(b, 0, this.slotSize);
    if (e < 0) return null;
    const idLen = b.readUInt16LE(12);
    return {
      expiry: b.readDoubleLE(4),
      id: Buffer.from(b.subarray(SLOT_HEAD, SLOT_HEAD + idLen)),
      data: Buffer.from(b.subarray(SLOT_HEAD + idLen, e)),
    };
  }

  private write(i: number, id: Buffer, expiry: number, data: Buffer): void {
    const b = Buffer.alloc(SLOT_HEAD + id.length + data.length);
    b.writeDoubleLE(expiry, 4);
    b.writeUInt16LE(id.length, 12);
    b.writeUInt16LE(data.length, 14);
    id.copy(b, SLOT_HEAD);
    data.copy(b, SLOT_HEAD + id.length);
    b.writeUInt32LE(crc32(b.subarray(4)), 0);
    fs.writeSync(this.fd, b, 0, b.length, this.offset(i));
  }

  private clear(i: number): void {
    fs.writeSync(this.fd, Buffer.alloc(SLOT_HEAD), 0, SLOT_HEAD, this.offset(i));
  }

  /** The id's two slots: in the subcache of its first byte (SHMCB_MASK), two neighbours. */
  private candidates(id: Buffer): [number, number] {
    const { subcaches, indexes } = this.g;
    const base = (id[0]! & (subcaches - 1)) * indexes;
    const a = crc32(id) % indexes;
    return [base + a, base + (a + 1) % indexes];
  }

  /** httpd refuses ids shorter than 4 bytes (AH00832 / AH00838). */
  private shortId(id: Buffer, code: string): boolean {
    if (id.length >= 4) return false;
    logServer(this.s, 'socache_shmcb', APLOG_ERR, `${code}: unusably short id provided (${id.length} bytes)`);
    return true;
  }

  async store(id: Buffer, expiry: number, data: Buffer): Promise<boolean> {
    if (this.shortId(id, 'AH00832')) return false;
    if (SLOT_HEAD + id.length + data.length > this.slotSize || id.length > 0xffff) {
      logServer(this.s, 'socache_shmcb', APLOG_DEBUG, `PL02205: shmcb cache: object of ${data.length} bytes does not fit a slot of ${this.slotSize}: not stored`);
      return false;
    }
    const now = Date.now();
    const [a, b] = this.candidates(id);
    let target: number;
    let replaced = false;
    try {
      const ea = this.read(a);
      const eb = this.read(b);
      if (ea !== null && ea.id.equals(id)) { target = a; replaced = true; } else if (eb !== null && eb.id.equals(id)) { target = b; replaced = true; } else if (ea === null || ea.expiry <= now) target = a;
      else if (eb === null || eb.expiry <= now) target = b;
      else target = ea.expiry <= eb.expiry ? a : b;
      const old = target === a ? ea : eb;
      if (!replaced && old !== null) {
        // What was there goes: expired, or pushed out before its time (httpd's "scrolled").
        this.count(old.expiry <= now ? ST_EXPIRIES : ST_SCROLLED);
      }
      this.write(target, id, expiry, data);
    } catch (e) {
      logServer(this.s, 'socache_shmcb', APLOG_ERR, `PL02203: shmcb cache ${this.file}: cannot write: ${(e as Error).message}`);
      logServer(this.s, 'socache_shmcb', APLOG_ERR, "AH00833: can't store an socache entry!");
      return false;
    }
    this.count(replaced ? ST_REPLACED : ST_STORES);
    return true;
  }

  async retrieve(id: Buffer): Promise<Buffer | null> {
    const now = Date.now();
    for (const i of this.candidates(id)) {
      const e = this.read(i);
      if (e === null || !e.id.equals(id)) continue;
      if (e.expiry > now) {
        this.count(ST_RETRIEVES_HIT);
        return e.data;
      }
      // Already stale: removed quietly, counted as expired and as a miss.
      try { this.clear(i); } catch { /* a miss anyway */ }
      this.count(ST_EXPIRIES);
      break;
    }
    this.count(ST_RETRIEVES_MISS);
    return null;
  }

  async remove(id: Buffer): Promise<void> {
    if (this.shortId(id, 'AH00838')) return;
    let hit = false;
    for (const i of this.candidates(id)) {
      const e = this.read(i);
      if (e !== null && e.id.equals(id)) {
        try { this.clear(i); } catch { /* a miss later */ }
        hit = true;
      }
    }
    this.count(hit ? ST_REMOVES_HIT : ST_REMOVES_MISS);
  }

  /** The statistics of every process, summed. */
  private totals(): Float64Array {
    const sum = new Float64Array(STATS);
    const b = Buffer.alloc(STAT_BLOCKS * STAT_BLOCK);
    try { fs.readSync(this.fd, b, 0, b.length, STATS_AT); } catch { return this.stats.slice(); }
    for (let k = 0; k < STAT_BLOCKS; k++) {
      for (let i = 0; i < STATS; i++) {
        const v = b.readDoubleLE(k * STAT_BLOCK + i * 8);
        if (Number.isFinite(v) && v > 0) sum[i] = sum[i]! + v;
      }
    }
    return sum;
  }

  /** socache_shmcb_status: expired objects go first (counted), then the figures httpd shows. */
  status(_r: Request, flags: number, put: StatusWriter): void {
    const { subcaches, indexes, slotSize, dataSize, shmSize } = this.g;
    const now = Date.now();
    let total = 0;
    let cacheTotal = 0;
    let nonEmpty = 0;
    let expiryTotal = 0;
    let minExpiry = 0;
    let maxExpiry = 0;
    let expired = 0;
    // Whole subcaches at a time, as many as fit a chunk.
    const perRead = Math.max(1, Math.floor(SCAN_CHUNK / (indexes * slotSize)));
    const buf = Buffer.alloc(perRead * indexes * slotSize);
    for (let sc = 0; sc < subcaches; sc += perRead) {
      const n = Math.min(perRead, subcaches - sc);
      let got = 0;
      try { got = fs.readSync(this.fd, buf, 0, n * indexes * slotSize, this.offset(sc * indexes)); } catch { got = 0; }
      for (let k = 0; k < n; k++) {
        let oldest = 0;
        for (let j = 0; j < indexes; j++) {
          const at = (k * indexes + j) * slotSize;
          if (at + SLOT_HEAD > got) break;
          const e = wholeSlot(buf, at, slotSize);
          if (e < 0) continue;
          const exp = buf.readDoubleLE(at + 4);
          if (exp <= now) {
            // shmcb_subcache_expire: the object goes, unless another process has just put a
            // new one in its slot.
            const slotNo = (sc + k) * indexes + j;
            const again = this.read(slotNo);
            if (again !== null && again.expiry <= now) {
              try { this.clear(slotNo); expired++; } catch { /* left for later */ }
            }
            continue;
          }
          total++;
          cacheTotal += e - at - SLOT_HEAD;
          if (oldest === 0 || exp < oldest) oldest = exp;
        }
        if (oldest !== 0) {
          nonEmpty++;
          expiryTotal += oldest;
          if (oldest > maxExpiry) maxExpiry = oldest;
          if (minExpiry === 0 || oldest < minExpiry) minExpiry = oldest;
        }
      }
    }
    this.count(ST_EXPIRIES, expired);
    const st = this.totals();
    const indexPct = Math.trunc((100 * total) / (indexes * subcaches));
    const cachePct = Math.trunc((100 * cacheTotal) / (dataSize * subcaches));
    const secs = (t: number): number => Math.trunc((t - now) / 1000);
    const avg = nonEmpty > 0 ? Math.trunc(expiryTotal / nonEmpty) : 0;
    if ((flags & AP_STATUS_SHORT) === 0) {
      put(`cache type: <b>SHMCB</b>, shared memory: <b>${shmSize}</b> bytes, current entries: <b>${total}</b><br>`);
      put(`subcaches: <b>${subcaches}</b>, indexes per subcache: <b>${indexes}</b><br>`);
      if (nonEmpty > 0) {
        put("time left on oldest entries' objects: ");
        if (now < avg) put(`avg: <b>${secs(avg)}</b> seconds, (range: ${secs(minExpiry)}...${secs(maxExpiry)})<br>`);
        else put('expiry_threshold: <b>Calculation error!</b><br>');
      }
      put(`index usage: <b>${indexPct}%</b>, cache usage: <b>${cachePct}%</b><br>`);
      put(`total entries stored since starting: <b>${st[ST_STORES]}</b><br>`);
      put(`total entries replaced since starting: <b>${st[ST_REPLACED]}</b><br>`);
      put(`total entries expired since starting: <b>${st[ST_EXPIRIES]}</b><br>`);
      put(`total (pre-expiry) entries scrolled out of the cache: <b>${st[ST_SCROLLED]}</b><br>`);
      put(`total retrieves since starting: <b>${st[ST_RETRIEVES_HIT]}</b> hit, <b>${st[ST_RETRIEVES_MISS]}</b> miss<br>`);
      put(`total removes since starting: <b>${st[ST_REMOVES_HIT]}</b> hit, <b>${st[ST_REMOVES_MISS]}</b> miss<br>`);
      return;
    }
    put('CacheType: SHMCB\n');
    put(`CacheSharedMemory: ${shmSize}\n`);
    put(`CacheCurrentEntries: ${total}\n`);
    put(`CacheSubcaches: ${subcaches}\n`);
    put(`CacheIndexesPerSubcaches: ${indexes}\n`);
    if (nonEmpty > 0 && now < avg) {
      put(`CacheTimeLeftOldestAvg: ${secs(avg)}\n`);
      put(`CacheTimeLeftOldestMin: ${secs(minExpiry)}\n`);
      put(`CacheTimeLeftOldestMax: ${secs(maxExpiry)}\n`);
    }
    put(`CacheIndexUsage: ${indexPct}%\n`);
    put(`CacheUsage: ${cachePct}%\n`);
    put(`CacheStoreCount: ${st[ST_STORES]}\n`);
    put(`CacheReplaceCount: ${st[ST_REPLACED]}\n`);
    put(`CacheExpireCount: ${st[ST_EXPIRIES]}\n`);
    put(`CacheDiscardCount: ${st[ST_SCROLLED]}\n`);
    put(`CacheRetrieveHitCount: ${st[ST_RETRIEVES_HIT]}\n`);
    put(`CacheRetrieveMissCount: ${st[ST_RETRIEVES_MISS]}\n`);
    put(`CacheRemoveHitCount: ${st[ST_REMOVES_HIT]}\n`);
    put(`CacheRemoveMissCount: ${st[ST_REMOVES_MISS]}\n`);
  }

  async destroy(): Promise<void> {
    if (this.fd < 0) return;
    try { fs.closeSync(this.fd); } catch { /* closed */ }
    this.fd = -1;
    if (this.owner) {
      // Only the file this generation made: a newer generation may have put its own there.
      try { if (fs.statSync(this.file).ino === this.ino) fs.unlinkSync(this.file); } catch { /* gone */ }
    }
  }
}

/** Where the slot at `at` of `b` ends when it holds a whole object (its checksum right), or -1. */
function wholeSlot(b: Buffer, at: number, slotSize: number): number {
  const idLen = b.readUInt16LE(at + 12);
  const dataLen = b.readUInt16LE(at + 14);
  const end = at + SLOT_HEAD + idLen + dataLen;
  if (idLen === 0 || SLOT_HEAD + idLen + dataLen > slotSize || end > b.length) return -1;
  if (crc32(b.subarray(at + 4, end)) !== b.readUInt32LE(at)) return -1;
  return end;
}

/** socache_shmcb_init's choices for a segment of `size` bytes: the subcaches, the indexes in
 *  each and the data area of each; a message when the segment is too small. */
export function httpdGeometry(size: number, h: SocacheHints): { subcaches: number; indexes: number; dataSize: number } | string {
  if (size < 5 * HTTPD_HEADER) return 'AH00820: shared memory segment too small';
  const segsize = size - HTTPD_HEADER;
  const avgObj = h.avgObjSize > 0 ? h.avgObjSize : 150;
  const avgId = h.avgIdLen > 0 ? h.avgIdLen : 30;
  let indexes = Math.floor(segsize / (avgObj + avgId));
  let subcaches = 256;
  while (Math.floor(indexes / subcaches) < 2 * subcaches) subcaches /= 2;
  indexes = Math.floor(indexes / subcaches);
  if (indexes < 5) return 'AH00823: shared memory segment too small';
  let subcacheSize = Math.floor(segsize / subcaches);
  if (subcacheSize % 8 !== 0) subcacheSize = (subcacheSize + 7 - (subcacheSize + 7) % 8) - 8;
  const dataSize = subcacheSize - (HTTPD_SUBCACHE + indexes * HTTPD_INDEX);
  return { subcaches, indexes, dataSize };
}

/** The slot size for the objects the user expects: room for about four typical objects with
 *  their ids, at least 1 KB and at most 4 KB. */
function slotSizeFor(h: SocacheHints): number {
  const want = 4 * (h.avgObjSize + h.avgIdLen) + SLOT_HEAD;
  let size = 1024;
  while (size < want && size < 4096) size *= 2;
  return size;
}

/** Where a shmcb cache without a file lives: in DefaultRuntimeDir (or logs/), named after the
 *  parent's pid, which the workers know as their parent's. */
function defaultFile(ctx: ConfigContext, create: boolean): string {
  const dir = globals(ctx).runtimeDir ?? ctx.serverRootRelative('logs');
  return path.join(dir, `socache-shmcb.${create ? process.pid : process.ppid}`);
}

function open(ctx: ConfigContext, s: ServerRec, file: string | undefined, size: number, hints: SocacheHints, create: boolean): SocacheInstance | string {
  const target = file ?? defaultFile(ctx, create);
  try {
    if (create) {
      const hg = httpdGeometry(size, hints);
      if (typeof hg === 'string') {
        logServer(s, 'socache_shmcb', APLOG_ERR, hg);
        return hg;
      }
      const g: Geometry = { ...hg, slotSize: slotSizeFor(hints), shmSize: size };
      const head = Buffer.alloc(HEADER);
      head.writeUInt32LE(MAGIC, 0);
      head.writeUInt32LE(VERSION, 4);
      head.writeUInt32LE(g.subcaches, 8);
      head.writeUInt32LE(g.indexes, 12);
      head.writeUInt32LE(g.slotSize, 16);
      head.writeUInt32LE(g.dataSize, 20);
      head.writeDoubleLE(g.shmSize, 24);
      const tmp = `${target}.${process.pid}.tmp`;
      const fd = fs.openSync(tmp, 'w+', 0o600);
      fs.writeSync(fd, head, 0, HEADER, 0);
      fs.ftruncateSync(fd, SLOTS_AT + g.subcaches * g.indexes * g.slotSize);
      fs.renameSync(tmp, target);
      const ino = fs.fstatSync(fd).ino;
      logServer(s, 'socache_shmcb', APLOG_DEBUG, `AH00821: shmcb_init allocated ${size} bytes of shared memory`);
      logServer(s, 'socache_shmcb', APLOG_DEBUG, `AH00822: for ${size - HTTPD_HEADER} bytes (${size} including header), recommending ${g.subcaches} subcaches, ${g.indexes} indexes each`);
      return new ShmcbCache(s, target, fd, g, true, ino, statBlock(true));
    }
    const fd = fs.openSync(target, 'r+');
    const head = Buffer.alloc(HEADER);
    fs.readSync(fd, head, 0, HEADER, 0);
    if (head.readUInt32LE(0) !== MAGIC || head.readUInt32LE(4) !== VERSION) {
      fs.closeSync(fd);
      return `PL02204: ${target} is not a shmcb cache file`;
    }
    const g: Geometry = {
      subcaches: head.readUInt32LE(8), indexes: head.readUInt32LE(12), slotSize: head.readUInt32LE(16),
      dataSize: head.readUInt32LE(20), shmSize: head.readDoubleLE(24),
    };
    return new ShmcbCache(s, target, fd, g, false, fs.fstatSync(fd).ino, statBlock(false));
  } catch (e) {
    const text = `AH00819: Could not allocate shared memory segment for shmcb socache: ${target}: ${(e as Error).message}`;
    logServer(s, 'socache_shmcb', APLOG_ERR, text);
    return text;
  }
}

const provider: SocacheProvider = {
  create(ctx, arg): SocacheSpec | string {
    let size = DEFAULT_SIZE;
    let file: string | undefined;
    if (arg !== undefined && arg !== '') {
      let p = arg;
      const open = p.lastIndexOf('(');
      if (open >= 0) {
        if (!p.endsWith(')')) return 'Invalid argument: no closing parenthesis or cache size missing after pathname with parenthesis';
        const num = p.slice(open + 1, -1);
        if (!/^-?\d+$/.test(num)) return 'Invalid argument: cache size not numerical';
        size = Number(num);
        if (size < MIN_SIZE) return 'Invalid argument: size has to be >= 8192 bytes';
        if (size >= MAX_SIZE) return `Invalid argument: size has to be < ${MAX_SIZE} bytes on this platform`;
        p = p.slice(0, open);
      } else if (p.endsWith(')')) {
        return 'Invalid argument: no opening parenthesis';
      }
      file = ctx.serverRootRelative(p);
    }
    return {
      provider: 'shmcb',
      async init(c, s, _namespace, hints, create) {
        return open(c, s, file, size, hints, create);
      },
    };
  },
};

const self = defineModule<undefined, undefined>({
  name: 'socache_shmcb_module',
  source: 'mod_socache_shmcb.c',
  apiVersion: MODULE_API_VERSION,
  // "default": httpd 2.4's name for the cache a module gets when none is configured, shmcb.
  providers: [
    { group: 'socache', name: 'default', version: '0', provider },
    { group: 'socache', name: 'shmcb', version: '0', provider },
  ],
});

export default self;
