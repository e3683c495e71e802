// SDBM databases byte-compatible with APR's sdbm (apr-util dbm/sdbm: what `htdbm -TSDBM` and
// mod_authn_dbm / mod_authz_dbm with AuthDBMType SDBM use): a NAME.pag file of 1,024-byte
// pages holding key/value pairs, and a NAME.dir bitmap of the split pages (Larson's dynamic
// hashing). Pages are little-endian int16 offset tables as APR writes them on x86.
//
// The database is read whole into memory; changes are made with APR's very algorithm (the
// same hash, page splits and bitmap growth, so the bytes written are those APR would write)
// and saved through temporary files renamed over the originals.

import * as fs from 'node:fs';
import * as path from 'node:path';

export const DIRFEXT = '.dir';
export const PAGFEXT = '.pag';
const PBLKSIZ = 1024;
const DBLKSIZ = 4096;
const BYTESIZ = 8;
/** The largest key plus value APR accepts. */
export const PAIRMAX = 1008;
const SPLTMAX = 10;

/** An error as APR reports it: an errno-like code for the log's "(N)text: " prefix. */
export class SdbmError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** sdbm_hash: n = c + 65599 * n over the bytes as signed chars (x86), in 32 bits (only the
 *  low bits ever select a page). */
export function sdbmHash(key: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < key.length; i++) {
    const c = key[i]!;
    n = ((c >= 128 ? c - 256 : c) + Math.imul(65599, n)) | 0;
  }
  return n;
}

const ino = (pag: Buffer, i: number): number => pag.readInt16LE(2 * i);
const setIno = (pag: Buffer, i: number, v: number): void => { pag.writeInt16LE(v, 2 * i); };

function fitpair(pag: Buffer, need: number): boolean {
  const n = ino(pag, 0);
  const off = n > 0 ? ino(pag, n) : PBLKSIZ;
  const avail = off - (n + 1) * 2;
  return need + 4 <= avail;
}

function putpair(pag: Buffer, key: Uint8Array, val: Uint8Array): void {
  const n = ino(pag, 0);
  let off = n > 0 ? ino(pag, n) : PBLKSIZ;
  off -= key.length;
  pag.set(key, off);
  setIno(pag, n + 1, off);
  off -= val.length;
  pag.set(val, off);
  setIno(pag, n + 2, off);
  setIno(pag, 0, n + 2);
}

/** seepair: the index (1, 3, ...) of the key's offset entry, or 0. */
function seepair(pag: Buffer, n: number, key: Uint8Array): number {
  let off = PBLKSIZ;
  for (let i = 1; i < n; i += 2) {
    const k = ino(pag, i);
    if (key.length === off - k && pag.compare(key, 0, key.length, k, off) === 0) return i;
    off = ino(pag, i + 1);
  }
  return 0;
}

function getpair(pag: Buffer, key: Uint8Array): Buffer | undefined {
  const n = ino(pag, 0);
  if (n === 0) return undefined;
  const i = seepair(pag, n, key);
  if (i === 0) return undefined;
  return Buffer.from(pag.subarray(ino(pag, i + 1), ino(pag, i)));
}

function duppair(pag: Buffer, key: Uint8Array): boolean {
  const n = ino(pag, 0);
  return n > 0 && seepair(pag, n, key) > 0;
}

function getnkey(pag: Buffer, num: number): Buffer | undefined {
  num = num * 2 - 1;
  const n = ino(pag, 0);
  if (n === 0 || num > n) return undefined;
  const off = num > 1 ? ino(pag, num - 1) : PBLKSIZ;
  return Buffer.from(pag.subarray(ino(pag, num), off));
}

function delpair(pag: Buffer, key: Uint8Array): boolean {
  const n = ino(pag, 0);
  if (n === 0) return false;
  let i = seepair(pag, n, key);
  if (i === 0) return false;
  if (i < n - 1) {
    const dst = i === 1 ? PBLKSIZ : ino(pag, i - 1);
    const src = ino(pag, i + 1);
    const zoo = dst - src;
    const m = ino(pag, i + 1) - ino(pag, n);
    pag.copyWithin(dst - m, src - m, src);
    while (i < n - 1) {
      setIno(pag, i, ino(pag, i + 2) + zoo);
      i++;
    }
  }
  setIno(pag, 0, n - 2);
  return true;
}

function splpage(pag: Buffer, nw: Buffer, sbit: number): void {
  const cur = Buffer.from(pag);
  pag.fill(0);
  nw.fill(0);
  let n = ino(cur, 0);
  let off = PBLKSIZ;
  for (let i = 1; n > 0; i += 2, n -= 2) {
    const k = ino(cur, i);
    const v = ino(cur, i + 1);
    const key = cur.subarray(k, off);
    const val = cur.subarray(v, k);
    putpair(sdbmHash(key) & sbit ? nw : pag, key, val);
    off = v;
  }
}

function chkpage(pag: Buffer): boolean {
  let n = ino(pag, 0);
  if (n < 0 || n > PBLKSIZ / 2) return false;
  let off = PBLKSIZ;
  for (let i = 1; n > 0; i += 2, n -= 2) {
    const k = ino(pag, i);
    const v = ino(pag, i + 1);
    if (k > off || v > off || v > k) return false;
    off = v;
  }
  return true;
}

function mask(bits: number): number {
  return bits >= 31 ? 0x7fffffff : (1 << bits) - 1;
}

/** One SDBM database held in memory. */
export class Sdbm {
  private pagf: Buffer;
  private dirf: Buffer;
  private maxbno: number;
  private curbit = 0;
  private hmask = 0;
  private pagbno = -1;
  private readonly pagbuf = Buffer.alloc(PBLKSIZ);

  private constructor(pag: Buffer, dir: Buffer) {
    this.pagf = pag;
    this.dirf = dir;
    this.maxbno = dir.length * BYTESIZ;
  }

  /** An empty database (what APR creates: two empty files). */
  static empty(): Sdbm {
    return new Sdbm(Buffer.alloc(0), Buffer.alloc(0));
  }

  /** From the two files' contents. */
  static fromBuffers(pag: Buffer, dir: Buffer): Sdbm {
    return new Sdbm(Buffer.from(pag), Buffer.from(dir));
  }

  /** Opens NAME.dir and NAME.pag (both must exist, as apr_sdbm_open without APR_CREATE). */
  static load(name: string): Sdbm {
    const dir = fs.readFileSync(name + DIRFEXT);
    const pag = fs.readFileSync(name + PAGFEXT);
    return new Sdbm(pag, dir);
  }

  /** The file contents as they stand. */
  get pagBytes(): Buffer { return this.pagf; }
  get dirBytes(): Buffer { return this.dirf; }

  private readPage(pagno: number, into: Buffer): void {
    into.fill(0);
    const off = pagno * PBLKSIZ;
    if (off < this.pagf.length) this.pagf.copy(into, 0, off, Math.min(off + PBLKSIZ, this.pagf.length));
  }

  private writePage(buf: Buffer, pagno: number): void {
    const end = (pagno + 1) * PBLKSIZ;
    if (this.pagf.length < end) {
      const grown = Buffer.alloc(end);
      this.pagf.copy(grown);
      this.pagf = grown;
    }
    buf.copy(this.pagf, pagno * PBLKSIZ, 0, PBLKSIZ);
  }

  private getdbit(dbit: number): boolean {
    const c = Math.floor(dbit / BYTESIZ);
    if (c >= this.dirf.length) return false;
    return (this.dirf[c]! & (1 << (dbit % BYTESIZ))) !== 0;
  }

  private setdbit(dbit: number): void {
    const c = Math.floor(dbit / BYTESIZ);
    const dirb = Math.floor(c / DBLKSIZ);
    const end = (dirb + 1) * DBLKSIZ;
    if (this.dirf.length < end) {
      const grown = Buffer.alloc(end);
      this.dirf.copy(grown);
      this.dirf = grown;
    }
    this.dirf[c] = this.dirf[c]! | (1 << (dbit % BYTESIZ));
    if (dbit >= this.maxbno) this.maxbno += DBLKSIZ * BYTESIZ;
  }

  private getpage(hash: number): void {
    let dbit = 0;
    let hbit = 0;
    while (dbit < this.maxbno && this.getdbit(dbit)) dbit = 2 * dbit + ((hash & (1 << hbit++)) ? 2 : 1);
    this.curbit = dbit;
    this.hmask = mask(hbit);
    const pagb = hash & this.hmask;
    if (pagb !== this.pagbno) {
      this.readPage(pagb, this.pagbuf);
      if (!chkpage(this.pagbuf)) throw new SdbmError('ENOSPC', 'corrupt sdbm page');
      this.pagbno = pagb;
    }
  }

  /** apr_sdbm_fetch: the value stored under `key`, or undefined. */
  fetch(key: Uint8Array): Buffer | undefined {
    if (key.length === 0) throw new SdbmError('EINVAL', 'empty key');
    this.getpage(sdbmHash(key));
    return getpair(this.pagbuf, key);
  }

  /** apr_sdbm_store with APR_SDBM_REPLACE (or APR_SDBM_INSERT when `replace` is false, which
   *  refuses an existing key with EEXIST). */
  store(key: Uint8Array, val: Uint8Array, replace = true): void {
    if (key.length === 0) throw new SdbmError('EINVAL', 'empty key');
    const need = key.length + val.length;
    if (need > PAIRMAX) throw new SdbmError('EINVAL', 'key and value too long');
    const hash = sdbmHash(key);
    this.getpage(hash);
    if (replace) delpair(this.pagbuf, key);
    else if (duppair(this.pagbuf, key)) throw new SdbmError('EEXIST', 'key exists');
    if (!fitpair(this.pagbuf, need)) this.makroom(hash, need);
    putpair(this.pagbuf, key, val);
    this.writePage(this.pagbuf, this.pagbno);
  }

  private makroom(hash: number, need: number): void {
    const twin = Buffer.alloc(PBLKSIZ);
    for (let smax = SPLTMAX; smax > 0; smax--) {
      splpage(this.pagbuf, twin, this.hmask + 1);
      const newp = (hash & this.hmask) | (this.hmask + 1);
      if (hash & (this.hmask + 1)) {
        this.writePage(this.pagbuf, this.pagbno);
        this.pagbno = newp;
        twin.copy(this.pagbuf);
      } else {
        this.writePage(twin, newp);
      }
      this.setdbit(this.curbit);
      if (fitpair(this.pagbuf, need)) return;
      this.curbit = 2 * this.curbit + ((hash & (this.hmask + 1)) ? 2 : 1);
      this.hmask |= this.hmask + 1;
      this.writePage(this.pagbuf, this.pagbno);
    }
    throw new SdbmError('ENOSPC', 'cannot insert after SPLTMAX attempts');
  }

  /** apr_sdbm_delete: false when the key is not there. */
  delete(key: Uint8Array): boolean {
    if (key.length === 0) throw new SdbmError('EINVAL', 'empty key');
    this.getpage(sdbmHash(key));
    if (!delpair(this.pagbuf, key)) return false;
    this.writePage(this.pagbuf, this.pagbno);
    return true;
  }

  /** apr_sdbm_firstkey / nextkey: every key, page by page, in the order APR lists them. */
  keys(): Buffer[] {
    const out: Buffer[] = [];
    const page = Buffer.alloc(PBLKSIZ);
    const pages = Math.ceil(this.pagf.length / PBLKSIZ);
    for (let p = 0; p < Math.max(pages, 1); p++) {
      this.readPage(p, page);
      if (!chkpage(page)) break;
      for (let k = 1; ; k++) {
        const key = getnkey(page, k);
        if (!key) break;
        out.push(key);
      }
    }
    return out;
  }

  /** Writes NAME.dir and NAME.pag through temporary files renamed into place. New files get
   *  `mode` (APR_OS_DEFAULT: 0666 less the umask); existing ones keep theirs. */
  save(name: string, mode = 0o666 & ~process.umask()): void {
    writeReplacing(name + DIRFEXT, this.dirf, mode);
    writeReplacing(name + PAGFEXT, this.pagf, mode);
  }

  /** Rewrites the existing NAME.dir and NAME.pag in place (for a process that may write the
   *  files but not create others beside them). */
  saveInPlace(name: string): void {
    fs.writeFileSync(name + DIRFEXT, this.dirf, { flag: 'r+' });
    fs.truncateSync(name + DIRFEXT, this.dirf.length);
    fs.writeFileSync(name + PAGFEXT, this.pagf, { flag: 'r+' });
    fs.truncateSync(name + PAGFEXT, this.pagf.length);
  }
}

/** Writes `data` to `file` through a temporary file in the same directory and a rename. */
export function writeReplacing(file: string, data: Buffer | string, mode: number): void {
  let m = mode;
  try {
    m = fs.statSync(file).mode & 0o7777;
  } catch { /* a new file */ }
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  const fd = fs.openSync(tmp, 'wx', m);
  try {
    fs.writeFileSync(fd, data);
    fs.fchmodSync(fd, m);
    fs.fsyncSync(fd);
  } catch (e) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}
