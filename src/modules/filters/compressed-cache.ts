// Compressed responses of static files, kept per file version and encoder settings so that a
// repeated request for the same file is not compressed again (mod_deflate, mod_brotli).
//
// DIFFERENCE: httpd compresses every response anew. The cache changes nothing a client sees:
// an entry holds the brigades the filter passed (so Content-Length versus chunked framing is
// the same as a fresh compression's), is keyed by the encoder's settings and checked against
// the stat the request made (inode, size, mtime, ctime), and the bytes are those the encoder
// produces. Memory is bounded per process (PlumeCompressedCacheSize, default 32 MB; 0 turns
// the cache off); the least recently used entries go first.

import type { Request } from '../../server/request/request.js';
import type { Brigade } from '../../server/filters.js';

export interface CompressedEntry {
  /** The compressed output as the filter passed it: each inner array one brigade (the last
   *  one is followed by EOS). */
  readonly passes: readonly (readonly Buffer[])[];
  readonly totalIn: number;
  readonly totalOut: number;
  readonly bytes: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
}

/** The largest file whose compressed form is kept (bigger ones are compressed each time). */
export const CACHE_MAX_FILE = 8 * 1024 * 1024;
export const DEFAULT_CACHE_BYTES = 32 * 1024 * 1024;

class CompressedCache {
  private map = new Map<string, CompressedEntry>();
  private total = 0;
  limit = DEFAULT_CACHE_BYTES;

  /** The entry for the whole file `r` is serving, compressed with `settings`, if current. */
  get(r: Request, settings: string): CompressedEntry | undefined {
    const st = r.finfo;
    if (st === null || this.limit === 0) return undefined;
    const key = r.filename + '\0' + settings;
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    if (e.ino !== st.ino || e.size !== st.size || e.mtimeMs !== st.mtimeMs || e.ctimeMs !== st.ctimeMs) {
      this.map.delete(key);
      this.total -= e.bytes;
      return undefined;
    }
    // Most recently used last (Map keeps insertion order).
    this.map.delete(key);
    this.map.set(key, e);
    return e;
  }

  put(r: Request, settings: string, passes: readonly (readonly Buffer[])[], totalIn: number, totalOut: number): void {
    const st = r.finfo;
    if (st === null || this.limit === 0) return;
    let bytes = 0;
    for (const p of passes) for (const b of p) bytes += b.length;
    if (bytes > this.limit / 4) return;
    const key = r.filename + '\0' + settings;
    const old = this.map.get(key);
    if (old !== undefined) { this.map.delete(key); this.total -= old.bytes; }
    this.map.set(key, { passes, totalIn, totalOut, bytes, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
    this.total += bytes;
    for (const [k, e] of this.map) {
      if (this.total <= this.limit) break;
      this.map.delete(k);
      this.total -= e.bytes;
    }
  }

  /** Sets the budget (PlumeCompressedCacheSize); a smaller one evicts at once. */
  setLimit(bytes: number): void {
    this.limit = bytes;
    for (const [k, e] of this.map) {
      if (this.total <= this.limit) break;
      this.map.delete(k);
      this.total -= e.bytes;
    }
  }

  get size(): number {
    return this.total;
  }
}

export const compressedCache = new CompressedCache();

/** Whether a brigade is a whole static file and its end: [file bucket of r.filename from 0
 *  to its size, EOS], the only shape whose compressed form is kept. */
export function wholeFile(r: Request, bb: Brigade): boolean {
  if (bb.length !== 2 || bb[1]!.kind !== 'eos') return false;
  const b = bb[0]!;
  return b.kind === 'file' && b.start === 0 && r.finfo !== null && b.path === r.filename && b.length === r.finfo.size && b.length <= CACHE_MAX_FILE;
}

/** PlumeCompressedCacheSize's argument: bytes, with an optional K/M/G suffix. */
export function parseCacheSize(arg: string): number | undefined {
  const m = /^(\d+)([KMG]?)$/i.exec(arg);
  if (!m) return undefined;
  const mult = { '': 1, k: 1024, m: 1024 * 1024, g: 1024 * 1024 * 1024 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  return Number(m[1]) * mult;
}
