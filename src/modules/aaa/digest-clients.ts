// mod_auth_digest's shared state (httpd keeps it in a shared-memory segment): the server secret
// the nonces are hashed with, the one-time-nonce counter, the opaque (client number) counters
// and the client table — per client its last nonce-count and, for one-time nonces, the nonce
// it was last given. AuthDigestShmemSize sizes the table as httpd sizes its hash table.
//
// DIFFERENCE: Node has no shared memory between processes. With worker processes the state
// lives in a file (made by the parent for each configuration generation, in DefaultRuntimeDir
// or logs/, named after the parent's pid, which the workers know as their parent's), read and
// written one entry at a time with pread/pwrite; in one process (-X) in a buffer. An entry
// carries a CRC-32: an entry caught half-written by another process reads as unknown (the
// client gets a fresh nonce, stale=true), never as another client's. httpd's table keeps
// clients across graceful restarts; plume's starts empty with each generation (the secret is
// kept, so nonces stay valid). A bucket holds HASH_DEPTH clients; when a new client finds its
// bucket full, the least recently used client of every bucket is dropped at once, as httpd's
// gc drops the last entry of each bucket.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { crc32 } from 'node:zlib';
import { randomBytes } from 'node:crypto';

/** httpd's limits: DEF_SHMEM_SIZE, the size of its table header, entry and bucket pointer. */
export const DEFAULT_SHMEM_SIZE = 1000;
const TABLE_HEADER = 48;
const ENTRY = 32;
const POINTER = 8;
export const HASH_DEPTH = 5;
/** The smallest AuthDigestShmemSize httpd accepts (room for one client). */
export const MIN_SHMEM_SIZE = TABLE_HEADER + POINTER + ENTRY;

/** httpd's number of hash buckets for a segment size. */
export function bucketsFor(size: number): number {
  return Math.max(1, Math.floor((size - TABLE_HEADER) / (POINTER + HASH_DEPTH * ENTRY)));
}

export const SECRET_LEN = 20;
export const NONCE_LEN = 52;
const MAGIC = 0x41444753; // "ADGS"
const VERSION = 1;
/** Process slots with an opaque counter of their own (worker slots modulo this). */
const OPAQUE_SLOTS = 64;
// Header: magic, version, buckets, secret, one-time-nonce counter, LRU clock, created,
// removed, renewed counters, then the opaque counters.
const H_BUCKETS = 8;
const H_SECRET = 12;
const H_OTN = 32;
const H_CLOCK = 36;
const H_CREATED = 40;
const H_REMOVED = 44;
const H_RENEWED = 48;
const H_OPAQUE = 52;
const HEADER = H_OPAQUE + 4 * OPAQUE_SLOTS;
// Entry: crc32 (of the rest), key, nonce count, last use, time of the nonce the count is
// for (f64), last one-time nonce.
const SLOT = 24 + NONCE_LEN;

/** One client, as the table holds it. */
export interface DigestClient {
  readonly key: number;
  /** The highest nonce-count seen, for the nonce of time `ncTime` (0: none yet). */
  nonceCount: number;
  ncTime: number;
  /** The one-time nonce the client was last given. */
  lastNonce: string;
}

/** Byte access to the segment: a buffer in one process, a file between processes. */
interface Segment {
  read(off: number, len: number): Buffer;
  write(off: number, data: Buffer): void;
  close(): void;
}

class MemorySegment implements Segment {
  constructor(private readonly buf: Buffer) {}
  read(off: number, len: number): Buffer {
    return Buffer.from(this.buf.subarray(off, off + len));
  }
  write(off: number, data: Buffer): void {
    data.copy(this.buf, off);
  }
  close(): void { /* nothing held */ }
}

class FileSegment implements Segment {
  constructor(private readonly fd: number) {}
  read(off: number, len: number): Buffer {
    const b = Buffer.alloc(len);
    fs.readSync(this.fd, b, 0, len, off);
    return b;
  }
  write(off: number, data: Buffer): void {
    fs.writeSync(this.fd, data, 0, data.length, off);
  }
  close(): void {
    try { fs.closeSync(this.fd); } catch { /* closed already */ }
  }
}

export class ClientTable {
  readonly secret: Buffer;
  private readonly buckets: number;
  /** Opaque numbering: client numbers slot+1, slot+1+stride, ... (stride 1 in one process). */
  private readonly stride: number;
  private readonly slot: number;

  private constructor(private readonly seg: Segment, readonly file: string | undefined, readonly ino: number, stride: number, slot: number) {
    const head = seg.read(0, HEADER);
    this.buckets = head.readUInt32LE(H_BUCKETS);
    this.secret = head.subarray(H_SECRET, H_SECRET + SECRET_LEN);
    this.stride = stride;
    this.slot = slot;
  }

  static header(secret: Buffer, buckets: number): Buffer {
    const head = Buffer.alloc(HEADER);
    head.writeUInt32LE(MAGIC, 0);
    head.writeUInt32LE(VERSION, 4);
    head.writeUInt32LE(buckets, H_BUCKETS);
    secret.copy(head, H_SECRET);
    return head;
  }

  /** The table of one process (-X): a buffer. */
  static inMemory(secret: Buffer, size: number): ClientTable {
    const buckets = bucketsFor(size);
    const buf = Buffer.alloc(HEADER + buckets * HASH_DEPTH * SLOT);
    ClientTable.header(secret, buckets).copy(buf, 0);
    return new ClientTable(new MemorySegment(buf), undefined, 0, 1, 0);
  }

  /** The parent's table for its workers: a fresh file (through a rename, so workers of the
   *  previous generation keep the one they opened). */
  static create(file: string, secret: Buffer, size: number): ClientTable {
    const buckets = bucketsFor(size);
    const tmp = `${file}.${process.pid}.tmp`;
    const fd = fs.openSync(tmp, 'w+', 0o600);
    try {
      fs.writeSync(fd, ClientTable.header(secret, buckets), 0, HEADER, 0);
      fs.ftruncateSync(fd, HEADER + buckets * HASH_DEPTH * SLOT);
      fs.renameSync(tmp, file);
    } catch (e) {
      fs.closeSync(fd);
      try { fs.unlinkSync(tmp); } catch { /* not made */ }
      throw e;
    }
    return new ClientTable(new FileSegment(fd), file, fs.fstatSync(fd).ino, OPAQUE_SLOTS, 0);
  }

  /** A worker's view of its parent's table. */
  static attach(file: string, slot: number): ClientTable | string {
    const fd = fs.openSync(file, 'r+');
    const head = Buffer.alloc(HEADER);
    fs.readSync(fd, head, 0, HEADER, 0);
    if (head.readUInt32LE(0) !== MAGIC || head.readUInt32LE(4) !== VERSION) {
      fs.closeSync(fd);
      return `${file} is not a mod_auth_digest client table`;
    }
    return new ClientTable(new FileSegment(fd), file, fs.fstatSync(fd).ino, OPAQUE_SLOTS, slot % OPAQUE_SLOTS);
  }

  /** Where the parent puts the table for its workers. */
  static fileName(dir: string, pid: number): string {
    return path.join(dir, `authdigest_shm.${pid}`);
  }

  close(): void {
    this.seg.close();
  }

  /** Removes the file, if it is still this table's (a newer generation may have replaced it). */
  remove(): void {
    if (this.file === undefined) return;
    try {
      if (fs.statSync(this.file).ino === this.ino) fs.unlinkSync(this.file);
    } catch { /* gone already */ }
  }

  private counter(off: number, bump: number): number {
    const b = this.seg.read(off, 4);
    const v = b.readUInt32LE(0);
    if (bump !== 0) {
      b.writeUInt32LE((v + bump) >>> 0, 0);
      this.seg.write(off, b);
    }
    return v;
  }

  /** The next one-time-nonce time (httpd counts from 1; not synchronised, as in httpd). */
  nextOneTimeCounter(): number {
    return this.counter(H_OTN, 1) + 1;
  }

  /** A new client number, unique between processes (httpd's opaque counter starts at 1). */
  nextOpaque(): number {
    const i = this.counter(H_OPAQUE + 4 * this.slot, 1);
    return ((i * this.stride + this.slot + 1) % 0x100000000) || this.nextOpaque();
  }

  counters(): { created: number; removed: number; renewed: number } {
    return { created: this.counter(H_CREATED, 0), removed: this.counter(H_REMOVED, 0), renewed: this.counter(H_RENEWED, 0) };
  }

  noteRenewed(): void {
    this.counter(H_RENEWED, 1);
  }

  private slotOffset(bucket: number, i: number): number {
    return HEADER + (bucket * HASH_DEPTH + i) * SLOT;
  }

  private readSlot(off: number): { key: number; nonceCount: number; used: number; ncTime: number; lastNonce: string } | null {
    const b = this.seg.read(off, SLOT);
    if (b.readUInt32LE(4) === 0) return null;
    if (crc32(b.subarray(4)) !== b.readUInt32LE(0)) return null;
    const n = b.subarray(24, 24 + NONCE_LEN);
    const z = n.indexOf(0);
    return {
      key: b.readUInt32LE(4), nonceCount: b.readUInt32LE(8), used: b.readUInt32LE(12), ncTime: b.readDoubleLE(16),
      lastNonce: n.subarray(0, z < 0 ? NONCE_LEN : z).toString('latin1'),
    };
  }

  private writeSlot(off: number, c: DigestClient): void {
    const b = Buffer.alloc(SLOT);
    b.writeUInt32LE(c.key >>> 0, 4);
    b.writeUInt32LE(Math.min(c.nonceCount, 0xffffffff) >>> 0, 8);
    b.writeUInt32LE(this.counter(H_CLOCK, 1), 12);
    b.writeDoubleLE(c.ncTime, 16);
    b.write(c.lastNonce.slice(0, NONCE_LEN), 24, 'latin1');
    b.writeUInt32LE(crc32(b.subarray(4)), 0);
    this.seg.write(off, b);
  }

  private clearSlot(off: number): void {
    this.seg.write(off, Buffer.alloc(SLOT));
  }

  /** get_client: the client with this number, or null. */
  get(key: number): DigestClient | null {
    if (key === 0) return null;
    const bucket = key % this.buckets;
    for (let i = 0; i < HASH_DEPTH; i++) {
      const off = this.slotOffset(bucket, i);
      const e = this.readSlot(off);
      if (e !== null && e.key === key) {
        const c: DigestClient = { key, nonceCount: e.nonceCount, ncTime: e.ncTime, lastNonce: e.lastNonce };
        this.writeSlot(off, c);
        return c;
      }
    }
    return null;
  }

  /** Writes a client's state back (nonce count, last nonce). */
  save(c: DigestClient): void {
    const bucket = c.key % this.buckets;
    for (let i = 0; i < HASH_DEPTH; i++) {
      const off = this.slotOffset(bucket, i);
      const e = this.readSlot(off);
      if (e !== null && e.key === c.key) {
        this.writeSlot(off, c);
        return;
      }
    }
  }

  /** add_client: a new client; when its bucket is full, the least recently used client of
   *  every bucket goes first (`gc` is told how many). */
  add(key: number, gc: (removed: number) => void): DigestClient {
    const bucket = key % this.buckets;
    const c: DigestClient = { key, nonceCount: 0, ncTime: 0, lastNonce: '' };
    let free = -1;
    for (let i = 0; i < HASH_DEPTH && free < 0; i++) {
      if (this.readSlot(this.slotOffset(bucket, i)) === null) free = i;
    }
    if (free < 0) {
      let removed = 0;
      for (let b = 0; b < this.buckets; b++) {
        let oldest = -1;
        let oldestUse = Infinity;
        for (let i = 0; i < HASH_DEPTH; i++) {
          const e = this.readSlot(this.slotOffset(b, i));
          if (e !== null && e.used < oldestUse) { oldest = i; oldestUse = e.used; }
        }
        if (oldest >= 0) {
          this.clearSlot(this.slotOffset(b, oldest));
          removed++;
          if (b === bucket) free = oldest;
        }
      }
      this.counter(H_REMOVED, removed);
      gc(removed);
    }
    this.writeSlot(this.slotOffset(bucket, free), c);
    this.counter(H_CREATED, 1);
    return c;
  }
}

/** The server secret: made once per server process tree and kept across restarts (httpd's
 *  retained data). */
let retainedSecret: Buffer | undefined;
export function serverSecret(): Buffer {
  if (retainedSecret === undefined) retainedSecret = randomBytes(SECRET_LEN);
  return retainedSecret;
}
