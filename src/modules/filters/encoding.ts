// What mod_deflate and mod_brotli share: httpd's token reading of Content-Encoding and
// Accept-Encoding (ap_get_token), the ETag change for a coded response, C's atoi.

import type { Request } from '../../server/request/request.js';

export type EtagOpt = 0 | 1 | 2;
export const ETAG_ADDSUFFIX: EtagOpt = 0;
export const ETAG_NOCHANGE: EtagOpt = 1;
export const ETAG_REMOVE: EtagOpt = 2;

/** C's atoi: leading blanks, a sign, digits; 0 when there are none. */
export function cAtoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  if (!m) return 0;
  const n = Number(m[1]);
  return n > 2147483647 || n < -2147483648 ? (n > 0 ? -1 : 0) : n;
}

function isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';
}

/** ap_get_token: a token at `pos` (blanks skipped before and after; quoted strings kept
 *  whole), ending at ';' or ',' or, unless `acceptWhite`, a blank. Returns the token and
 *  where reading stopped. */
export function getToken(s: string, pos: number, acceptWhite: boolean): [string, number] {
  while (pos < s.length && isSpace(s[pos]!)) pos++;
  const start = pos;
  while (pos < s.length && (acceptWhite || !isSpace(s[pos]!)) && s[pos] !== ';' && s[pos] !== ',') {
    if (s[pos++] === '"') {
      while (pos < s.length) if (s[pos++] === '"') break;
    }
  }
  let end = pos;
  while (end > start && isSpace(s[end - 1]!)) end--;
  const tok = s.slice(start, end);
  while (pos < s.length && isSpace(s[pos]!)) pos++;
  return [tok, pos];
}

/** The first content coding that is not identity, 7bit, 8bit or binary (exact, as httpd
 *  compares), or undefined. */
export function hasContentCoding(encoding: string): string | undefined {
  let pos = 0;
  let [tok, p] = getToken(encoding, pos, false);
  pos = p;
  while (tok !== '') {
    if (tok !== 'identity' && tok !== '7bit' && tok !== '8bit' && tok !== 'binary') return tok;
    if (pos < encoding.length) pos++;
    if (pos >= encoding.length) break;
    [tok, p] = getToken(encoding, pos, false);
    pos = p;
  }
  return undefined;
}

/** Whether Accept-Encoding names `coding` (any case) without q=0, read the way
 *  mod_deflate and mod_brotli read it: the first matching token, its first parameter. */
export function acceptsCoding(accepts: string, coding: string): boolean {
  let pos = 0;
  let tok: string | undefined;
  [tok, pos] = getToken(accepts, pos, false);
  while (tok !== undefined && tok !== '' && tok.toLowerCase() !== coding) {
    while (accepts[pos] === ';') {
      pos++;
      [, pos] = getToken(accepts, pos, true);
    }
    if (accepts[pos] === ',') pos++;
    if (pos < accepts.length) [tok, pos] = getToken(accepts, pos, false);
    else tok = undefined;
  }
  let q: string | undefined;
  if (pos < accepts.length) {
    while (accepts[pos] === ';') pos++;
    [q] = getToken(accepts, pos, true);
  }
  if (tok === undefined || tok === '') return false;
  if (q !== undefined && q.length >= 3 && 'q=0.000'.startsWith(q)) return false;
  return true;
}

/** deflate_check_etag: Remove drops the ETag; AddSuffix puts "-coding" inside the closing
 *  quote of an ETag longer than two characters that ends with one. */
export function alterEtag(r: Request, coding: string, opt: EtagOpt): void {
  if (opt === ETAG_REMOVE) { r.headersOut.unset('ETag'); return; }
  const etag = r.headersOut.get('ETag');
  if (etag !== undefined && etag.length > 2 && etag.endsWith('"')) {
    r.headersOut.set('ETag', etag.slice(0, -1) + '-' + coding + '"');
  }
}
