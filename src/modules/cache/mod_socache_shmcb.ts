// mod_socache_shmcb (modules/cache/mod_socache_shmcb.c): the "shmcb" small-object cache
// provider, `SSLSessionCache shmcb:/path/to/file(512000)`: one fixed-size table shared by the
// worker processes of one machine, so that a TLS session made in one worker resumes in any.
//
// DIFFERENCE: httpd maps the file as shared memory behind a global mutex; Node has neither, so
// the table lives in the file itself (in the page cache, as the scoreboard does) and is read
// and written a slot at a time with pread/pwrite. A slot carries a CRC-32 of its contents: a
// slot caught half-written by another process reads as a miss, never as wrong data, so no
// lock is needed. Each id has two candidate slots; a store takes the empty, expired or
// sooner-expiring one (httpd's cyclic buffers drop the oldest objects too). Objects larger
// than a slot are not stored, as httpd refuses objects larger than its subcache's data area.
// The parent makes the file afresh for every configuration generation (through a rename, so
// workers of the previous generation keep the one they opened) and removes it at the end.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { defineModule, MODULE_API_VERSION } from '../../server/module.js';
import type { SocacheInstance, SocacheProvider, SocacheSpec, SocacheHints } from '../../server/socache.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { ConfigContext } from '../../server/config/context.js';
import { globals } from '../../server/core/globals.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import { crc32, keyHash, logServer } from './socache-common.js';

const DEFAULT_SIZE = 512 * 1024;
const MIN_SIZE = 8192;
/** SHMCB_MAX_SIZE on a 64-bit platform (what httpd's message names). */
const MAX_SIZE = 4294967296;
const MAGIC = 0x53484d43; // "SHMC"
const VERSION = 1;
const HEADER = 32;
/** Slot: crc32 u32, expiry (seconds since the epoch) u32, id length u16, data length u16, id, data. */
const SLOT_HEAD = 12;

class ShmcbCache implements SocacheInstance {
  private readonly slot: Buffer;
  private stores = 0;
  private retrieves = 0;
  private hits = 0;

  constructor(
    private readonly s: ServerRec,
    private readonly file: string,
    private fd: number,
    private readonly slots: number,
    private readonly slotSize: number,
    private readonly owner: boolean,
    private readonly ino: number,
  ) {
    this.slot = Buffer.alloc(slotSize);
  }

  private offset(i: number): number {
    return HEADER + i * this.slotSize;
  }

  /** Reads slot i; its id, data and expiry when it is whole. */
  private read(i: number): { id: Buffer; data: Buffer; expiry: number } | null {
    const b = this.slot;
    let n: number;
    try { n = fs.readSync(this.fd, b, 0, this.slotSize, this.offset(i)); } catch { return null; }
    if (n < SLOT_HEAD) return null;
    const idLen = b.readUInt16LE(8);
    const dataLen = b.readUInt16LE(10);
    if (idLen === 0 || SLOT_HEAD + idLen + dataLen > this.slotSize) return null;
    if (crc32(b.subarray(4, SLOT_HEAD + idLen + dataLen)) !== b.readUInt32LE(0)) return null;
    return {
      expiry: b.readUInt32LE(4),
      id: Buffer.from(b.subarray(SLOT_HEAD, SLOT_HEAD + idLen)),
      data: Buffer.from(b.subarray(SLOT_HEAD + idLen, SLOT_HEAD + idLen + dataLen)),
    };
  }

  private write(i: number, id: Buffer, expiry: number, data: Buffer): void {
    const b = Buffer.alloc(SLOT_HEAD + id.length + data.length);
    b.writeUInt32LE(expiry, 4);
    b.writeUInt16LE(id.length, 8);
    b.writeUInt16LE(data.length, 10);
    id.copy(b, SLOT_HEAD);
    data.copy(b, SLOT_HEAD + id.length);
    b.writeUInt32LE(crc32(b.subarray(4)), 0);
    fs.writeSync(this.fd, b, 0, b.length, this.offset(i));
  }

  private candidates(id: Buffer): [number, number] {
    const h = crc32(id);
    const a = h % this.slots;
    return [a, (a + 1) % this.slots];
  }

  async store(id: Buffer, expiry: number, data: Buffer): Promise<boolean> {
    if (SLOT_HEAD + id.length + data.length > this.slotSize || id.length === 0 || id.length > 0xffff) {
      logServer(this.s, 'socache_shmcb', APLOG_DEBUG, `PL02205: shmcb cache: object of ${data.length} bytes does not fit a slot of ${this.slotSize}: not stored`);
      return false;
    }
    const exp = Math.floor(expiry / 1000);
    const now = Math.floor(Date.now() / 1000);
    const [a, b] = this.candidates(id);
    let target = a;
    try {
      const ea = this.read(a);
      const eb = this.read(b);
      if (ea !== null && ea.id.equals(id)) target = a;
      else if (eb !== null && eb.id.equals(id)) target = b;
      else if (ea === null || ea.expiry <= now) target = a;
      else if (eb === null || eb.expiry <= now) target = b;
      else target = ea.expiry <= eb.expiry ? a : b;
      this.write(target, id, exp, data);
    } catch (e) {
      logServer(this.s, 'socache_shmcb', APLOG_ERR, `PL02203: shmcb cache ${this.file}: cannot write: ${(e as Error).message}`);
      return false;
    }
    this.stores++;
    return true;
  }

  async retrieve(id: Buffer): Promise<Buffer | null> {
    this.retrieves++;
    const now = Math.floor(Date.now() / 1000);
    for (const i of this.candidates(id)) {
      const e = this.read(i);
      if (e !== null && e.id.equals(id) && e.expiry > now) {
        this.hits++;
        return e.data;
      }
    }
    return null;
  }

  async remove(id: Buffer): Promise<void> {
    for (const i of this.candidates(id)) {
      const e = this.read(i);
      if (e !== null && e.id.equals(id)) {
        try { fs.writeSync(this.fd, Buffer.alloc(SLOT_HEAD), 0, SLOT_HEAD, this.offset(i)); } catch { /* a miss later */ }
      }
    }
  }

  status(): string {
    return `cache type: SHMCB, shared memory: ${HEADER + this.slots * this.slotSize} bytes, current entries: n/a, slots: ${this.slots} of ${this.slotSize} bytes, stores: ${this.stores}, retrieves: ${this.retrieves} (hits ${this.hits}) in this process`;
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
      const slotSize = slotSizeFor(hints);
      const slots = Math.max(1, Math.floor((size - HEADER) / slotSize));
      const head = Buffer.alloc(HEADER);
      head.writeUInt32LE(MAGIC, 0);
      head.writeUInt32LE(VERSION, 4);
      head.writeUInt32LE(slots, 8);
      head.writeUInt32LE(slotSize, 12);
      const tmp = `${target}.${process.pid}.tmp`;
      const fd = fs.openSync(tmp, 'w+', 0o600);
      fs.writeSync(fd, head, 0, HEADER, 0);
      fs.ftruncateSync(fd, HEADER + slots * slotSize);
      fs.renameSync(tmp, target);
      const ino = fs.fstatSync(fd).ino;
      logServer(s, 'socache_shmcb', APLOG_DEBUG, `AH00821: shmcb_init allocated ${HEADER + slots * slotSize} bytes of shared memory`);
      return new ShmcbCache(s, target, fd, slots, slotSize, true, ino);
    }
    const fd = fs.openSync(target, 'r+');
    const head = Buffer.alloc(HEADER);
    fs.readSync(fd, head, 0, HEADER, 0);
    if (head.readUInt32LE(0) !== MAGIC || head.readUInt32LE(4) !== VERSION) {
      fs.closeSync(fd);
      return `PL02204: ${target} is not a shmcb cache file`;
    }
    return new ShmcbCache(s, target, fd, head.readUInt32LE(8), head.readUInt32LE(12), false, fs.fstatSync(fd).ino);
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
