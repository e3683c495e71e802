// Entity tags as httpd makes them (server/util_etag.c: ap_make_etag_ex, ap_set_etag).
//
//   [W/]"inode-size-mtime"   each part lowercase hex without leading zeros, mtime in
//                            microseconds, only the parts FileETag asks for (2.4 default:
//                            MTime Size), joined by '-'
//   "base64(sha1(content))"  FileETag Digest (never weak)
//   (nothing)                FileETag None: the note "no-etag" tells the header filter
//
// The tag is weak (W/) when the file was modified less than one second before the request
// started, as it could change again within the same second.

import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { fsPath, mtimeMicrosOf } from '../request/stat-cache.js';
import type { BigIntStats, Stats } from 'node:fs';
import type { Request } from '../request/request.js';
import { APLOG_ERR } from '../log/levels.js';
import {
  ETAG_BACKWARD, ETAG_DIGEST, ETAG_INODE, ETAG_MTIME, ETAG_NONE, ETAG_SIZE, ETAG_UNSET,
} from '../core/config.js';

/** What ap_make_etag reads from the file: a plain or a bigint stat. A BigIntStats gives the
 *  exact microsecond mtime; a plain Stats only has mtimeMs (a double), which loses the
 *  sub-microsecond part and can be one microsecond off for some files. */
export type EtagFileInfo = Stats | BigIntStats;

export interface EtagOptions {
  /** ap_make_etag's force_weak. */
  readonly forceWeak?: boolean;
  /** r->vlist_validator (mod_negotiation): `"vlv"` or `W/"vlv"`. */
  readonly vlistValidator?: string;
  /** An already open descriptor to digest instead of opening r.filename (ap_set_etag_fd). */
  readonly fd?: number;
  /** AP_REQUEST_IS_STRONG_ETAG(r): a module asked for a strong (digest) tag. */
  readonly strong?: boolean;
}

/** The note ap_set_etag leaves when no ETag is to be sent (the header filter then unsets
 *  any ETag in headers_out). */
export const NO_ETAG_NOTE = 'no-etag';

/** The FileETag bits in force for a merged per-dir config, as ap_make_etag_ex computes them:
 *  (bits & ~remove) | add. ETAG_UNSET (0) means the default, which makeEtag turns into
 *  MTime Size. Note httpd's quirk: a lone `FileETag +INode` gives INode only, and a lone
 *  `FileETag -MTime` leaves the default (both measured on Apache 2.4.71). */
export function etagBitsFor(c: { readonly etagBits: number; readonly etagAdd: number; readonly etagRemove: number }): number {
  return (c.etagBits & ~c.etagRemove) | c.etagAdd;
}

/** The request time in microseconds (httpd's r->request_time). */
export function requestMicros(r: Request): bigint {
  return r.startMicros > 0 ? BigInt(Math.floor(r.startMicros)) : BigInt(Math.floor(r.requestTime * 1000));
}

/** apr_finfo_t.mtime: microseconds since the epoch, truncated (of `file` when finfo is a
 *  plain Stats of it: see mtimeMicrosOf). */
export function mtimeMicros(finfo: EtagFileInfo, file?: string): bigint {
  if ('mtimeNs' in finfo) return finfo.mtimeNs / 1000n;
  if (file !== undefined && file !== '') return BigInt(mtimeMicrosOf(finfo, file));
  return BigInt(Math.floor(finfo.mtimeMs * 1000));
}

/** etag_uint64_to_hex: lowercase hex, no leading zeros, of the value as an unsigned 64-bit. */
function hex64(v: bigint | number): string {
  return BigInt.asUintN(64, typeof v === 'bigint' ? v : BigInt(Math.trunc(v))).toString(16);
}

/**
 * ap_make_etag (ap_make_etag_ex): the ETag for a file. `bits` are the FileETag bits in force
 * (etagBitsFor(coreDir(r)); ETAG_UNSET means the default MTime Size). `finfo` null stands for
 * a resource that is not a file (APR_NOFILE): the tag is then the mtime alone.
 * Returns '' when no ETag is to be sent (FileETag None, or a digest that failed).
 */
export function makeEtag(r: Request, finfo: EtagFileInfo | null, bits: number, opts?: EtagOptions): string {
  let weak = opts?.forceWeak === true;
  let vlv: string | undefined;
  if (opts?.vlistValidator !== undefined) {
    // A weak variant list validator makes the whole structured tag weak.
    const v = opts.vlistValidator;
    if (v[0] === 'W') { vlv = v.slice(3); weak = true; } else vlv = v.slice(1);
  }
  const isFile = finfo !== null && finfo.isFile();
  if (isFile && (opts?.strong === true || (bits & ETAG_DIGEST))) {
    const digest = fileDigest(r, opts?.fd);
    if (digest === undefined) return '';
    return etagWrap(weak, digest, vlv);
  }
  if (bits & ETAG_NONE) return '';
  if (bits === ETAG_UNSET) bits = ETAG_BACKWARD;
  if (finfo !== null && !weak && vlv === undefined && !('mtimeNs' in finfo)) return plainFileEtag(r, finfo, bits);
  const mtime = finfo === null ? 0n : mtimeMicros(finfo, r.filename);
  if (requestMicros(r) - mtime < 1000000n) weak = true;
  if (finfo === null) return etagWrap(weak, hex64(mtime), vlv);
  let body = '';
  if (bits & ETAG_INODE) body = hex64(finfo.ino);
  if (bits & ETAG_SIZE) body += (body !== '' || (bits & ETAG_INODE) ? '-' : '') + hex64(finfo.size);
  if (bits & ETAG_MTIME) body += (bits & (ETAG_INODE | ETAG_SIZE) ? '-' : '') + hex64(mtime);
  return etagWrap(weak, body, vlv);
}

/** The common case (a plain stat, no options), with the hex body remembered per file state:
 *  the same few files are tagged over and over. Same result as the general path. */
interface EtagMemo { ino: number; size: number; bits: number; body: string }
const etagMemo = new Map<number, EtagMemo>();
function plainFileEtag(r: Request, finfo: Stats, bits: number): string {
  const mtimeUs = r.filename !== '' ? mtimeMicrosOf(finfo, r.filename) : Math.floor(finfo.mtimeMs * 1000);
  let m = etagMemo.get(mtimeUs);
  if (m === undefined || m.ino !== finfo.ino || m.size !== finfo.size || m.bits !== bits) {
    const mtime = BigInt(mtimeUs);
    let body = '';
    if (bits & ETAG_INODE) body = hex64(finfo.ino);
    if (bits & ETAG_SIZE) body += (body !== '' || (bits & ETAG_INODE) ? '-' : '') + hex64(finfo.size);
    if (bits & ETAG_MTIME) body += (bits & (ETAG_INODE | ETAG_SIZE) ? '-' : '') + hex64(mtime);
    m = { ino: finfo.ino, size: finfo.size, bits, body };
    if (etagMemo.size >= 4096) etagMemo.clear();
    etagMemo.set(mtimeUs, m);
  }
  // Both in microseconds below 2^53: exact as numbers.
  const now = r.startMicros > 0 ? Math.floor(r.startMicros) : Math.floor(r.requestTime * 1000);
  return now - mtimeUs < 1000000 ? `W/"${m.body}"` : `"${m.body}"`;
}

/** etag_start + etag_end: `[W/]"body"`, or with a variant list validator `[W/]"body;vlv`.
 *  httpd copies the validator (after its opening quote) less its last character, so such a
 *  tag has no closing quote at all: Apache 2.4.71 sends `ETag: "c-60dedc04fb580;660d4a0f4823c`. */
function etagWrap(weak: boolean, body: string, vlv: string | undefined): string {
  const w = weak ? 'W/' : '';
  if (vlv === undefined) return `${w}"${body}"`;
  return `${w}"${body};${vlv.slice(0, Math.max(0, vlv.length - 1))}`;
}

/** SHA-1 of the whole file, base64 with padding (make_digest_etag). Read synchronously in
 *  64 KiB pieces, as httpd reads it inside the handler. */
function fileDigest(r: Request, fd: number | undefined): string | undefined {
  let own = false;
  let h: number;
  if (fd !== undefined) h = fd;
  else {
    try {
      h = fs.openSync(fsPath(r.filename), 'r');
      own = true;
    } catch (e) {
      r.log('core', APLOG_ERR, `AH10251: Make etag: could not open ${r.filename}`, r.rt.errno(e));
      return undefined;
    }
  }
  try {
    const hash = createHash('sha1');
    const buf = Buffer.allocUnsafe(65536);
    let pos = 0;
    for (;;) {
      const n = fs.readSync(h, buf, 0, buf.length, pos);
      if (n <= 0) break;
      hash.update(buf.subarray(0, n));
      pos += n;
    }
    return hash.digest('base64');
  } catch (e) {
    r.log('core', APLOG_ERR, 'AH10254: Make etag: could not read', r.rt.errno(e));
    return undefined;
  } finally {
    if (own) fs.closeSync(h);
  }
}

/** The digest form for a buffer already in memory (same value as FileETag Digest). */
export function digestEtag(content: Buffer, weak = false): string {
  return `${weak ? 'W/' : ''}"${createHash('sha1').update(content).digest('base64')}"`;
}

/**
 * ap_set_etag: sets headers_out ETag, or when there is none to send leaves the note
 * "no-etag" = "omit" (the header filter then removes any ETag another module set).
 */
export function setEtag(r: Request, finfo: EtagFileInfo | null, bits: number, opts?: EtagOptions): void {
  const etag = makeEtag(r, finfo, bits, opts);
  if (etag !== '') r.headersOut.set('ETag', etag);
  else r.notes.set(NO_ETAG_NOTE, 'omit');
}
