// The BYTERANGE output filter (httpd 2.4's modules/http/byterange_filter.c) and
// ap_set_accept_ranges.
//
// The filter works only when the first brigade it sees holds the whole response (it ends
// with EOS) and the response is a 200 with a non-zero length; otherwise it steps aside, as
// httpd's does. It never reads file buckets: ranges of a file become file buckets with an
// adjusted start and length.
//
// What Apache 2.4.71 does (all measured):
//   Range: bytes=a-b,c-d,...   only "bytes=" (any case) in Range; Request-Range is ignored
//   numbers are digits only (no sign, no spaces, no overflow past 2^63-1); any malformed
//   spec, "-0", or a start greater than its end ignores the whole header (200)
//   "0-" anywhere makes the response the whole body as one range (206)
//   ranges starting at or past the end are dropped; if nothing is left: 416
//   each range is merged with the previous one when they overlap or touch (counted as an
//   overlap; growing it backwards also counts as a reversal); when the merged ranges add
//   up to more than the body: 200
//   MaxRanges / MaxRangeOverlaps / MaxRangeReversals exceeded: 200 (but never stop a 416)
//   If-Range (ap_condition_if_range) not matching: 200
//   one range: 206 with Content-Range: bytes s-e/len
//   several: 206 multipart/byteranges; boundary=<16 hex digits, per configuration>, body
//     CRLF "--" B CRLF "Content-type: " T CRLF "Content-range: bytes " s-e/len CRLF CRLF data
//     ... CRLF "--" B "--" CRLF
//   from the 33rd range on, every 32 ranges the body so far is passed on and
//     Content-Length is dropped (the response goes chunked, or close for HTTP/1.0)
//   416: the error page for 416 (no Content-Range header)

import { randomBytes } from 'node:crypto';
import type { Request } from '../request/request.js';
import type { MaybePromise } from '../module.js';
import { EOS, FTYPE_PROTOCOL, type Brigade, type Bucket, type FilterInstance, type FilterSpec } from '../filters.js';
import { AP_CONDITION_NOMATCH, conditionIfRange } from './conditional.js';
import { coreDir, type CoreDirConfig } from '../core/config.js';
import { setKeepalive, markLengthUnknown } from './keepalive.js';
import { APLOG_DEBUG, APLOG_TRACE1 } from '../log/levels.js';

export const AP_DEFAULT_MAX_RANGES = 200;
export const AP_DEFAULT_MAX_OVERLAPS = 20;
export const AP_DEFAULT_MAX_REVERSALS = 20;

/** How CoreDirConfig.maxRanges / maxOverlaps / maxReversals hold the keywords (core-module's
 *  MaxRanges handler): undefined unset (default), 0 "none", -1 "unlimited", -2 "default". */
export const MAXRANGES_NONE = 0;
export const MAXRANGES_UNLIMITED = -1;
export const MAXRANGES_DEFAULT = -2;

/** A configured limit as the filter uses it: -1 means no limit. */
export function effectiveLimit(v: number | undefined, dflt: number): number {
  if (v === undefined || v === MAXRANGES_DEFAULT) return dflt;
  if (v < 0) return -1;
  return v;
}

/** ap_set_accept_ranges: "none" under MaxRanges none, else "bytes". */
export function setAcceptRanges(r: Request, maxRanges: number | undefined = coreDir(r).maxRanges): void {
  r.headersOut.set('Accept-Ranges', maxRanges === MAXRANGES_NONE ? 'none' : 'bytes');
}

/** Whether the BYTERANGE filter can have anything to do for this request: a Range header
 *  starting with "bytes=" on a response with a status line. Without one the filter need
 *  not be inserted at all. */
export function needsByterange(r: Request): boolean {
  if (r.assbackwards) return false;
  const range = r.headersIn.get('Range');
  return range !== undefined && range.length >= 6 && range.slice(0, 6).toLowerCase() === 'bytes=';
}

// ---- parsing -------------------------------------------------------------------------------

export interface ByteRanges {
  /** Merged ranges to send, in request order: > 0 ranges; 0 = serve the whole body (200);
   *  -1 = unsatisfiable (416). */
  readonly count: number;
  readonly ranges: ReadonlyArray<readonly [start: number, end: number]>;
  readonly overlaps: number;
  readonly reversals: number;
  /** The merged ranges add up to more than the body (so count is 0). */
  readonly tooLarge?: boolean;
}

const NO_RANGES: ByteRanges = Object.freeze({ count: 0, ranges: [], overlaps: 0, reversals: 0 });

/** ap_parse_strict_length: digits only, at most 2^63-1; undefined when not. Values past
 *  2^53 lose precision, which cannot matter against a body length. */
function strictNumber(s: string): number | undefined {
  if (s === '') return undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  const t = s.replace(/^0+/, '');
  if (t.length > 19 || (t.length === 19 && t > '9223372036854775807')) return undefined;
  return Number(s);
}

/**
 * The range list of ap_set_byterange: `spec` is the Range value after "bytes=", `clength`
 * the body length. Merges overlapping or adjacent neighbours and counts overlaps and
 * reversals as httpd does.
 */
export function parseByteRanges(spec: string, clength: number): ByteRanges {
  const indexes: [number, number][] = [];
  let numRanges = 0;
  let unsatisfiable = false;
  let ostart = 0;
  let oend = 0;
  let sumLengths = 0;
  let inMerge = false;
  let overlaps = 0;
  let reversals = 0;
  let rest = spec;
  for (;;) {
    // ap_getword(..., ','): up to the next comma, then skip every comma.
    const comma = rest.indexOf(',');
    const cur = comma < 0 ? rest : rest.slice(0, comma);
    if (comma < 0) rest = '';
    else {
      let k = comma;
      while (k < rest.length && rest.charCodeAt(k) === 0x2c) k++;
      rest = rest.slice(k);
    }
    if (cur === '') break;
    const dash = cur.indexOf('-');
    if (dash < 0) return NO_RANGES;
    let start: number;
    let end: number;
    if (dash === 0) {
      // "-5": the last five bytes.
      const n = strictNumber(cur.slice(1));
      if (n === undefined || n < 1) return NO_RANGES;
      start = clength - n;
      end = clength - 1;
    } else {
      const s = strictNumber(cur.slice(0, dash));
      if (s === undefined) return NO_RANGES;
      start = s;
      const tail = cur.slice(dash + 1);
      if (tail !== '') {
        const e = strictNumber(tail);
        if (e === undefined) return NO_RANGES;
        end = e;
        if (start > end) return NO_RANGES;
      } else {
        end = clength - 1;
        // "0-": the whole body as a single range, whatever else was asked.
        if (start === 0) {
          numRanges = 0;
          sumLengths = 0;
          inMerge = true;
          oend = end;
          ostart = start;
          indexes.length = 0;
          break;
        }
      }
    }
    if (start < 0) start = 0;
    if (start >= clength) {
      unsatisfiable = true;
      continue;
    }
    if (end >= clength) end = clength - 1;
    if (!inMerge) {
      ostart = start;
      oend = end;
      inMerge = true;
      continue;
    }
    inMerge = false;
    if (start >= ostart && end <= oend) inMerge = true;
    if (start < ostart && end >= ostart - 1) {
      ostart = start;
      ++reversals;
      inMerge = true;
    }
    if (end >= oend && start <= oend + 1) {
      oend = end;
      inMerge = true;
    }
    if (inMerge) {
      ++overlaps;
      continue;
    }
    indexes.push([ostart, oend]);
    sumLengths += oend - ostart + 1;
    inMerge = true;
    ostart = start;
    oend = end;
    numRanges++;
  }
  if (inMerge) {
    indexes.push([ostart, oend]);
    sumLengths += oend - ostart + 1;
    numRanges++;
  } else if (numRanges === 0 && unsatisfiable) {
    return { count: -1, ranges: [], overlaps, reversals };
  }
  if (sumLengths > clength) return { count: 0, ranges: [], overlaps, reversals, tooLarge: true };
  return { count: numRanges, ranges: indexes, overlaps, reversals };
}

/**
 * ap_set_byterange: decides from the request and response whether ranges apply and which.
 * On a positive count r.status becomes 206. A count of 0 leaves the response alone.
 */
export function setByterange(r: Request, clength: number): ByteRanges {
  if (r.assbackwards) return NO_RANGES;
  const range = r.headersIn.get('Range');
  if (range === undefined || range.slice(0, 6).toLowerCase() !== 'bytes=' || r.status !== 200) return NO_RANGES;
  // Already a single range, or already multipart?
  if (r.headersOut.get('Content-Range') !== undefined) return NO_RANGES;
  const ct = r.headersOut.get('Content-Type');
  if (ct !== undefined) {
    const l = ct.toLowerCase();
    if (l.startsWith('multipart/byteranges') || l.startsWith('multipart/x-byteranges')) return NO_RANGES;
  }
  if (conditionIfRange(r, r.headersOut) === AP_CONDITION_NOMATCH) return NO_RANGES;
  const res = parseByteRanges(range.slice(6), clength);
  if (res.tooLarge === true) {
    if (r.wantsLog('http', APLOG_TRACE1)) r.log('http', APLOG_TRACE1, 'Sum of ranges larger than file, ignoring.');
    return NO_RANGES;
  }
  if (res.count < 0) return res;
  r.status = 206;
  if (r.wantsLog('http', APLOG_DEBUG)) {
    const merged = res.ranges.map(([s, e]) => `${s}-${e}`).join(',');
    r.log('http', APLOG_DEBUG, `AH01583: Range: ${range.slice(6)} | ${merged} (${res.overlaps} : ${res.reversals} : ${clength})`);
  }
  return res;
}

// ---- the multipart boundary -----------------------------------------------------------------

/** ap_multipart_boundary: 64 random bits in hex ("%0" APR_UINT64_T_HEX_FMT, so without
 *  leading zeros), made once per configuration generation (http_post_config). */
const boundaries = new WeakMap<object, string>();

export function newMultipartBoundary(): string {
  return randomBytes(8).readBigUInt64BE().toString(16);
}

/** The boundary of the request's configuration generation. */
export function multipartBoundary(r: Request): string {
  const key = r.rt as object;
  let b = boundaries.get(key);
  if (b === undefined) {
    b = newMultipartBoundary();
    boundaries.set(key, b);
  }
  return b;
}

/** Sets the boundary for a configuration generation (tests, or a fixed value). */
export function setMultipartBoundary(rt: object, boundary: string): void {
  boundaries.set(rt, boundary);
}

// ---- the filter --------------------------------------------------------------------------------

/** What the filter does for a 416: httpd passes an error bucket that makes the header filter
 *  call ap_die(416). Here the filter calls this: by default the runtime's die (the lifecycle's,
 *  reached through the Runtime the request carries, so this layer imports nothing above it). */
export type RangeErrorHandler = (r: Request, status: number) => MaybePromise<void>;

let rangeError: RangeErrorHandler = (r, status) => r.rt.die(r, status);

/** Replaces how a 416 is sent (the default runs the lifecycle's die: ErrorDocument or the
 *  canned page). */
export function setRangeErrorHandler(fn: RangeErrorHandler): void {
  rangeError = fn;
}

function bucketLength(b: Bucket): number {
  return b.kind === 'data' ? b.data.length : b.kind === 'file' ? b.length : 0;
}

/** copy_brigade_range: the buckets covering [start, end] of the body in bb[0..stop). */
function copyRange(bb: Brigade, stop: number, start: number, end: number, out: Bucket[]): void {
  let pos = 0;
  for (let i = 0; i < stop && pos <= end; i++) {
    const b = bb[i]!;
    const len = bucketLength(b);
    if (len === 0) continue;
    const bEnd = pos + len; // exclusive
    if (bEnd > start) {
      const from = Math.max(start, pos) - pos;
      const to = Math.min(end + 1, bEnd) - pos;
      if (b.kind === 'data') {
        out.push({ kind: 'data', data: from === 0 && to === len ? b.data : b.data.subarray(from, to) });
      } else if (b.kind === 'file') {
        // `cached` holds the whole file: it stays, only the window moves.
        out.push({ ...b, start: b.start + from, length: to - from });
      }
    }
    pos = bEnd;
  }
}

/** ap_make_content_type for the parts: AddDefaultCharset adds a charset to a type that
 *  mentions text/plain or text/html and has none. */
function partContentType(r: Request, c: CoreDirConfig | undefined): string | undefined {
  const type = r.contentType;
  if (type === undefined || type === '') return type;
  const cs = c?.addDefaultCharset;
  if (!cs) return type;
  const l = type.toLowerCase();
  if (l.includes('charset=')) return type;
  if (l.includes('text/plain') || l.includes('text/html')) return `${type}; charset=${cs}`;
  return type;
}

/** Passes the brigades in order, waiting for each that returns a promise. */
function passInOrder(f: FilterInstance, parts: Brigade[], from = 0): MaybePromise<void> {
  for (let i = from; i < parts.length; i++) {
    const w = f.pass(parts[i]!);
    if (w instanceof Promise) return w.then(() => passInOrder(f, parts, i + 1));
  }
  return undefined;
}

function byterange(f: FilterInstance<null>, bb: Brigade): MaybePromise<void> {
  const r = f.r;
  let clength = 0;
  let eos = 0;
  for (; eos < bb.length; eos++) {
    const b = bb[eos]!;
    if (b.kind === 'eos') break;
    clength += bucketLength(b);
  }
  // Only a whole response in one brigade, with a body.
  if (eos === bb.length || clength <= 0) {
    f.remove();
    return f.pass(bb);
  }
  const c = coreDir(r) as CoreDirConfig | undefined;
  const maxRanges = effectiveLimit(c?.maxRanges, AP_DEFAULT_MAX_RANGES);
  const maxOverlaps = effectiveLimit(c?.maxOverlaps, AP_DEFAULT_MAX_OVERLAPS);
  const maxReversals = effectiveLimit(c?.maxReversals, AP_DEFAULT_MAX_REVERSALS);

  const originalStatus = r.status;
  const set = setByterange(r, clength);
  const n = set.count;
  if (n === 0
    || (maxRanges >= 0 && n > maxRanges)
    || (maxOverlaps >= 0 && set.overlaps > maxOverlaps)
    || (maxReversals >= 0 && set.reversals > maxReversals)) {
    r.status = originalStatus;
    f.remove();
    return f.pass(bb);
  }
  if (n < 0) {
    // send_416: the error response replaces this one. In httpd the response went through
    // the keep-alive decision and the CONTENT_LENGTH filter before the error bucket came
    // back: the connection is counted (or closed) as for it, and the page has no length.
    f.remove();
    r.status = 200;
    setKeepalive(r, r.headersOut);
    markLengthUnknown(r);
    return rangeError(r, 416);
  }

  let boundHead = '';
  let boundary = '';
  if (n > 1) {
    const origCt = partContentType(r, c);
    boundary = multipartBoundary(r);
    r.contentType = `multipart/byteranges; boundary=${boundary}`;
    boundHead = origCt
      ? `\r\n--${boundary}\r\nContent-type: ${origCt}\r\nContent-range: bytes `
      : `\r\n--${boundary}\r\nContent-range: bytes `;
  }

  const parts: Brigade[] = [];
  let bsend: Bucket[] = [];
  let total = 0;
  const ranges = set.ranges;
  for (let i = 0; i < ranges.length; i++) {
    const [start, end] = ranges[i]!;
    if (n === 1) {
      r.headersOut.set('Content-Range', `bytes ${start}-${end}/${clength}`);
    } else {
      const head = Buffer.from(`${boundHead}${start}-${end}/${clength}\r\n\r\n`, 'latin1');
      bsend.push({ kind: 'data', data: head });
      total += head.length;
    }
    copyRange(bb, eos, start, end, bsend);
    total += end - start + 1;
    if (i !== 0 && (i & 0x1f) === 0) {
      // Every 32 ranges what is ready goes on; the length can no longer be known up front.
      parts.push(bsend);
      bsend = [];
    }
  }
  if (n > 1) {
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1');
    bsend.push({ kind: 'data', data: tail });
    total += tail.length;
  }
  bsend.push(EOS);
  parts.push(bsend);
  if (parts.length > 1) r.headersOut.unset('Content-Length');
  else r.headersOut.set('Content-Length', String(total));
  f.remove();
  return passInOrder(f as FilterInstance, parts);
}

/** The BYTERANGE filter (AP_FTYPE_PROTOCOL, before the header filter). Insert it only when
 *  needsByterange(r). */
export const byterangeFilter: FilterSpec<null> = {
  name: 'BYTERANGE',
  type: FTYPE_PROTOCOL,
  init: () => null,
  filter: byterange,
};
