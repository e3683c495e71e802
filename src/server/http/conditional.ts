// Conditional requests as httpd 2.4 evaluates them (modules/http/http_protocol.c:
// ap_condition_if_match / _if_unmodified_since / _if_none_match / _if_modified_since /
// _if_range and ap_meets_conditions; server/util.c: ap_find_etag_strong/weak; apr-util's
// apr_date_parse_http), plus what the HTTP header filter does to 204/304 responses.
//
// Every comparison of times is in whole seconds; dates are parsed the way APR parses them
// (RFC 1123, RFC 850 and asctime, the weekday ignored, anything after the time ignored, a
// date before 1970 is invalid).

import type { Request } from '../request/request.js';
import type { HeaderTable } from '../request/headers.js';
import { OK } from '../module.js';

export const HTTP_NOT_MODIFIED = 304;
export const HTTP_PRECONDITION_FAILED = 412;

/** ap_condition_e. */
export const AP_CONDITION_NONE = 0;
export const AP_CONDITION_NOMATCH = 1;
export const AP_CONDITION_WEAK = 2;
export const AP_CONDITION_STRONG = 3;
export type Condition = 0 | 1 | 2 | 3;

// ---- apr_date_parse_http ---------------------------------------------------------------------

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** apr_date_checkmask over a string (characters past the end read as NUL). */
function checkMask(d: string, mask: string): boolean {
  for (let i = 0; i < mask.length; i++) {
    const c = i < d.length ? d.charCodeAt(i) : 0;
    switch (mask[i]) {
      case '*': return true;
      case '@': if (!(c >= 65 && c <= 90)) return false; break;
      case '$': if (!(c >= 97 && c <= 122)) return false; break;
      case '#': if (!isDigit(c)) return false; break;
      case '&': if (!(isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102))) return false; break;
      case '~': if (c !== 32 && !isDigit(c)) return false; break;
      default: if (mask.charCodeAt(i) !== c) return false;
    }
  }
  return d.length === mask.length;
}

/**
 * apr_date_parse_http in whole seconds since the epoch (apr_time_sec of it); 0 when the date
 * is invalid or absent (APR_DATE_BAD).
 */
export function parseHttpDateSec(date: string | undefined): number {
  if (date === undefined) return 0;
  let i = 0;
  while (i < date.length && isSpace(date.charCodeAt(i))) i++;
  if (i >= date.length) return 0;
  const sp = date.indexOf(' ', i);
  if (sp < 0) return 0;
  const d = date.slice(sp + 1);
  const n = (k: number): number => d.charCodeAt(k) - 48;
  let year: number; // years since 1900
  let mday: number;
  let mon0: number;
  let tim: number;
  if (checkMask(d, '## @$$ #### ##:##:## *')) {
    year = (n(7) * 10 + n(8) - 19) * 100;
    if (year < 0) return 0;
    year += n(9) * 10 + n(10);
    mday = n(0) * 10 + n(1);
    mon0 = 3; tim = 12;
  } else if (checkMask(d, '##-@$$-## ##:##:## *')) {
    year = n(7) * 10 + n(8);
    if (year < 70) year += 100;
    mday = n(0) * 10 + n(1);
    mon0 = 3; tim = 10;
  } else if (checkMask(d, '@$$ ~# ##:##:## ####*')) {
    year = (n(16) * 10 + n(17) - 19) * 100;
    if (year < 0) return 0;
    year += n(18) * 10 + n(19);
    mday = (d[4] === ' ' ? 0 : n(4) * 10) + n(5);
    mon0 = 0; tim = 7;
  } else if (checkMask(d, '# @$$ #### ##:##:## *')) {
    year = (n(6) * 10 + n(7) - 19) * 100;
    if (year < 0) return 0;
    year += n(8) * 10 + n(9);
    mday = n(0);
    mon0 = 2; tim = 11;
  } else {
    return 0;
  }
  if (mday <= 0 || mday > 31) return 0;
  const hour = n(tim) * 10 + n(tim + 1);
  const min = n(tim + 3) * 10 + n(tim + 4);
  const sec = n(tim + 6) * 10 + n(tim + 7);
  if (hour > 23 || min > 59 || sec > 61) return 0;
  const mon = MONTHS.indexOf(d.slice(mon0, mon0 + 3));
  if (mon < 0) return 0;
  if (mday === 31 && (mon === 3 || mon === 5 || mon === 8 || mon === 10)) return 0;
  if (mon === 1 && (mday > 29 || (mday === 29 && ((year & 3) !== 0 || (year % 100 === 0 && year % 400 !== 100))))) return 0;
  // apr_time_exp_get: proleptic Gregorian, seconds 60 and 61 roll over; before 1970 is bad.
  const t = Date.UTC(1900 + year, mon, mday, hour, min, sec);
  return t < 0 ? 0 : t / 1000;
}

// ---- ap_find_etag_strong / ap_find_etag_weak ---------------------------------------------------

const ETAG_NONE = 0;
const ETAG_WEAK = 1;
const ETAG_STRONG = 2;

function lower(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

/** util.c find_list_item: is `tok` one of the items of the list `line`? Items are compared
 *  with extra whitespace skipped and case folded outside quoted strings and comments; for
 *  the ETag forms the item must be a quoted tag (weak: W/ allowed and ignored on both). */
function findItem(line: string | undefined, tok: string | undefined, type: number): boolean {
  if (line === undefined || tok === undefined) return false;
  const T = (k: number): number => (k < tok.length ? tok.charCodeAt(k) : 0);
  const L = (k: number): number => (k < line.length ? line.charCodeAt(k) : 0);
  let t0 = 0;
  if (type === ETAG_STRONG && T(0) !== 0x22) return false;
  if (type === ETAG_WEAK) {
    if (T(0) === 0x57 && T(1) === 0x2f && T(2) === 0x22) t0 = 2;
    else if (T(0) !== 0x22) return false;
  }
  let p = 0;
  let good = false;
  let addspace = 0;
  let inQpair = false;
  let inQstr = false;
  let inCom = 0;
  do {
    while (L(p) === 0x2c || isSpace(L(p))) p++;
    if (type === ETAG_STRONG && L(p) !== 0x22) break;
    if (type === ETAG_WEAK) {
      if (L(p) === 0x57 && L(p + 1) === 0x2f && L(p + 2) === 0x22) p += 2;
      else if (L(p) !== 0x22) break;
    }
    if (L(p) !== 0) good = true;
    else break;
    let pos = t0;
    for (; L(p) !== 0 && (inQpair || inQstr || inCom !== 0 || L(p) !== 0x2c); p++) {
      const c = L(p);
      if (inQpair) {
        inQpair = false;
        if (good) good = T(pos++) === c;
        continue;
      }
      switch (c) {
        case 0x5c: // backslash
          inQpair = true;
          if (addspace === 1) good = good && T(pos++) === 0x20;
          good = good && T(pos++) === c;
          addspace = 0;
          break;
        case 0x22: // "
          if (inCom === 0) inQstr = !inQstr;
          if (addspace === 1) good = good && T(pos++) === 0x20;
          good = good && T(pos++) === c;
          addspace = 0;
          break;
        case 0x28: // (
          if (!inQstr) ++inCom;
          if (addspace === 1) good = good && T(pos++) === 0x20;
          good = good && T(pos++) === c;
          addspace = 0;
          break;
        case 0x29: // )
          if (inCom !== 0) --inCom;
          good = good && T(pos++) === c;
          addspace = 0;
          break;
        case 0x20:
        case 0x09:
          if (addspace !== 0 || !good) break;
          if (inCom !== 0 || inQstr) good = T(pos++) === c;
          else addspace = 1;
          break;
        case 0x3d: // =
        case 0x2f: // /
        case 0x3b: // ;
          if (!(inCom !== 0 || inQstr)) addspace = -1;
          good = good && T(pos++) === c;
          break;
        default:
          if (!good) break;
          if (addspace === 1) good = T(pos++) === 0x20;
          if (inCom !== 0 || inQstr) good = good && T(pos++) === c;
          else good = good && lower(T(pos++)) === lower(c);
          addspace = 0;
          break;
      }
    }
    if (good && T(pos) !== 0) good = false; // only a prefix matched
  } while (L(p) !== 0 && !good);
  return good;
}

/** ap_find_list_item. */
export function findListItem(line: string | undefined, tok: string): boolean {
  return findItem(line, tok, ETAG_NONE);
}
/** ap_find_etag_strong: the strong comparison of `etag` against a list of entity tags. */
export function findEtagStrong(line: string | undefined, etag: string | undefined): boolean {
  return findItem(line, etag, ETAG_STRONG);
}
/** ap_find_etag_weak: the weak comparison (W/ ignored on both sides). */
export function findEtagWeak(line: string | undefined, etag: string | undefined): boolean {
  return findItem(line, etag, ETAG_WEAK);
}

// ---- the conditions ----------------------------------------------------------------------------

/** M_GET: GET and HEAD share the method number. */
function isMethodGet(r: Request): boolean {
  return r.method === 'GET' || r.method === 'HEAD';
}

/** The response's mtime in seconds: its Last-Modified, else r.mtime, else now. */
function responseMtimeSec(r: Request, headers: HeaderTable): number {
  const lm = parseHttpDateSec(headers.get('Last-Modified'));
  if (lm !== 0) return lm;
  return Math.floor((r.mtime ? r.mtime : Date.now()) / 1000);
}

/** The request time in seconds: the response's Date header if it has one, else r.requestTime. */
function requestTimeSec(r: Request, headers: HeaderTable): number {
  const d = parseHttpDateSec(headers.get('Date'));
  return d !== 0 ? d : Math.floor(r.requestTime / 1000);
}

/** ap_condition_if_match. */
export function conditionIfMatch(r: Request, headers: HeaderTable): Condition {
  const ifMatch = r.headersIn.get('If-Match');
  if (ifMatch === undefined) return AP_CONDITION_NONE;
  if (ifMatch[0] === '*') return AP_CONDITION_STRONG;
  const etag = headers.get('ETag');
  return etag !== undefined && findEtagStrong(ifMatch, etag) ? AP_CONDITION_STRONG : AP_CONDITION_NOMATCH;
}

/** ap_condition_if_unmodified_since: WEAK/STRONG mean "modified since" (so 412). */
export function conditionIfUnmodifiedSince(r: Request, headers: HeaderTable): Condition {
  const v = r.headersIn.get('If-Unmodified-Since');
  if (v === undefined) return AP_CONDITION_NONE;
  const ius = parseHttpDateSec(v);
  const mtime = responseMtimeSec(r, headers);
  const reqtime = requestTimeSec(r, headers);
  if (ius !== 0 && mtime > ius) {
    if (reqtime < mtime + 60) {
      // Weak matches are not allowed with Range requests.
      return r.headersIn.get('Range') !== undefined ? AP_CONDITION_NOMATCH : AP_CONDITION_WEAK;
    }
    return AP_CONDITION_STRONG;
  }
  return AP_CONDITION_NOMATCH;
}

/** ap_condition_if_none_match. */
export function conditionIfNoneMatch(r: Request, headers: HeaderTable): Condition {
  const inm = r.headersIn.get('If-None-Match');
  if (inm === undefined) return AP_CONDITION_NONE;
  if (inm[0] === '*') return AP_CONDITION_STRONG;
  const etag = headers.get('ETag');
  if (isMethodGet(r)) {
    if (etag !== undefined) {
      if (r.headersIn.get('Range') !== undefined) {
        if (findEtagStrong(inm, etag)) return AP_CONDITION_STRONG;
      } else if (findEtagWeak(inm, etag)) {
        return AP_CONDITION_WEAK;
      }
    }
  } else if (etag !== undefined && findEtagStrong(inm, etag)) {
    return AP_CONDITION_STRONG;
  }
  return AP_CONDITION_NOMATCH;
}

/** ap_condition_if_modified_since: WEAK/STRONG mean "not modified". A date later than the
 *  request time does not match. */
export function conditionIfModifiedSince(r: Request, headers: HeaderTable): Condition {
  const v = r.headersIn.get('If-Modified-Since');
  if (v === undefined) return AP_CONDITION_NONE;
  const mtime = responseMtimeSec(r, headers);
  const reqtime = requestTimeSec(r, headers);
  const ims = parseHttpDateSec(v);
  if (ims >= mtime && ims <= reqtime) {
    if (reqtime < mtime + 60) {
      return r.headersIn.get('Range') !== undefined ? AP_CONDITION_NOMATCH : AP_CONDITION_WEAK;
    }
    return AP_CONDITION_STRONG;
  }
  return AP_CONDITION_NOMATCH;
}

/** ap_condition_if_range: NONE unless both If-Range and Range are present. An entity tag
 *  must equal the ETag exactly (so a weak one never matches); a date must equal the
 *  Last-Modified second of a response at least 60 seconds old. */
export function conditionIfRange(r: Request, headers: HeaderTable): Condition {
  const ifRange = r.headersIn.get('If-Range');
  if (ifRange === undefined || r.headersIn.get('Range') === undefined) return AP_CONDITION_NONE;
  if (ifRange[0] === '"') {
    return headers.get('ETag') === ifRange ? AP_CONDITION_STRONG : AP_CONDITION_NOMATCH;
  }
  const mtime = responseMtimeSec(r, headers);
  const reqtime = requestTimeSec(r, headers);
  const rtime = parseHttpDateSec(ifRange);
  if (rtime === mtime) return reqtime < mtime + 60 ? AP_CONDITION_NOMATCH : AP_CONDITION_STRONG;
  return AP_CONDITION_NOMATCH;
}

/**
 * ap_meets_conditions: OK (0), 304 or 412. Call it from a handler once headers_out has the
 * response's ETag and Last-Modified (and r.mtime is set); on a non-OK result the handler sets
 * r.status to it and sends an empty body (EOS), as httpd's default handler does.
 *
 * Quirks kept from httpd: a satisfied If-Unmodified-Since (or any non-matching condition)
 * prevents a later 304; If-Range together with Range always wins over a 304; weak date
 * matches (a response less than 60 s old) never count for Range requests.
 */
export function meetsConditions(r: Request): number {
  // Only for successful responses, and not when a module forbids revalidation.
  if (r.status < 200 || r.status > 299 || r.noLocalCopy) return OK;
  const h = r.headersOut;
  let notModified = -1;

  let cond = conditionIfMatch(r, h);
  if (cond === AP_CONDITION_NOMATCH) return HTTP_PRECONDITION_FAILED;

  cond = conditionIfUnmodifiedSince(r, h);
  if (cond === AP_CONDITION_NOMATCH) notModified = 0;
  else if (cond >= AP_CONDITION_WEAK) return HTTP_PRECONDITION_FAILED;

  cond = conditionIfNoneMatch(r, h);
  if (cond === AP_CONDITION_NOMATCH) notModified = 0;
  else if (cond >= AP_CONDITION_WEAK) {
    if (!isMethodGet(r)) return HTTP_PRECONDITION_FAILED;
    if (notModified !== 0) notModified = 1;
  }

  cond = conditionIfModifiedSince(r, h);
  if (cond === AP_CONDITION_NOMATCH) notModified = 0;
  else if (cond >= AP_CONDITION_WEAK && isMethodGet(r) && notModified !== 0) notModified = 1;

  // With If-Range and Range the byterange filter decides: 200 or 206, never 304.
  if (conditionIfRange(r, h) > AP_CONDITION_NONE) return OK;

  return notModified === 1 ? HTTP_NOT_MODIFIED : OK;
}

// ---- header-only responses -----------------------------------------------------------------------

/** AP_STATUS_IS_HEADER_ONLY. */
export function isHeaderOnlyStatus(status: number): boolean {
  return status === 204 || status === 304;
}

/**
 * What the HTTP header filter removes from a 204/304 response's headers_out (httpd 2.4.71's
 * merge_response_headers): Transfer-Encoding and Content-Length. Nothing else is removed —
 * ETag, Last-Modified, Accept-Ranges, Cache-Control, Expires, Vary, Set-Cookie, and even a
 * Content-Type / Content-Encoding / Content-Language / Content-Range / Content-MD5 another
 * module put in headers_out are all sent (measured on Apache 2.4.71).
 */
export function strip304Headers(headers: HeaderTable): void {
  headers.unset('Transfer-Encoding');
  headers.unset('Content-Length');
}

/**
 * The whole 204/304 treatment of merge_response_headers: strip304Headers, and forget
 * r.contentType / contentEncoding / contentLanguages / clength so the header filter does
 * not generate Content-Type, Content-Encoding or Content-Language from them. Call it in the
 * header filter after merging err_headers_out and before building Content-Type. Returns
 * whether the status was header-only.
 */
export function stripHeaderOnlyResponse(r: Request): boolean {
  if (!isHeaderOnlyStatus(r.status)) return false;
  strip304Headers(r.headersOut);
  r.contentType = undefined;
  r.contentEncoding = undefined;
  r.contentLanguages = [];
  r.clength = 0;
  return true;
}

// ---- Last-Modified -----------------------------------------------------------------------------

/** ap_update_mtime: r.mtime becomes the later of itself and a dependency's mtime (ms). */
export function updateMtime(r: Request, dependencyMtimeMs: number): void {
  if (r.mtime < dependencyMtimeMs) r.mtime = dependencyMtimeMs;
}

/** ap_rationalize_mtime: a Last-Modified is never in the future (ms in, ms out). */
export function rationalizeMtime(r: Request, mtimeMs: number): number {
  const now = mtimeMs < r.requestTime ? r.requestTime : Date.now();
  return mtimeMs > now ? now : mtimeMs;
}
