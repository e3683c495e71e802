// What mod_deflate and mod_brotli share: httpd's token reading of Content-Encoding and
// Accept-Encoding (ap_get_token), the ETag change for a coded response, the
// headers of a coded response, the note and ETag directives' parsing and the replay of a
// kept compressed body.

import type { Request } from '../../server/request/request.js';
import { EOS, type Bucket, type FilterInstance } from '../../server/filters.js';

export type EtagOpt = 0 | 1 | 2;
export const ETAG_ADDSUFFIX: EtagOpt = 0;
export const ETAG_NOCHANGE: EtagOpt = 1;
export const ETAG_REMOVE: EtagOpt = 2;


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

/** The response's content codings as httpd's deflate_out_filter (and mod_brotli) collect
 *  them: headers_out, err_headers_out, then r->content_encoding, comma-joined. */
export function responseEncoding(r: Request): string | undefined {
  let enc = r.headersOut.get('Content-Encoding');
  const errEnc = r.errHeadersOut.get('Content-Encoding');
  if (enc !== undefined) { if (errEnc !== undefined) enc = enc + ',' + errEnc; } else enc = errEnc;
  if (r.contentEncoding !== undefined && r.contentEncoding !== '') enc = enc !== undefined ? enc + ',' + r.contentEncoding : r.contentEncoding;
  return enc;
}

/** The headers of a response coded with `coding` (deflate_out_filter, mod_brotli alike). */
export function setCodingHeaders(r: Request, encoding: string | undefined, coding: string, etagOpt: EtagOpt): void {
  if (encoding === undefined || encoding.toLowerCase() === 'identity') r.headersOut.set('Content-Encoding', coding);
  else r.headersOut.merge('Content-Encoding', coding);
  if (r.contentEncoding !== undefined) r.contentEncoding = r.headersOut.get('Content-Encoding');
  r.headersOut.unset('Content-Length');
  r.headersOut.unset('Content-MD5');
  if (etagOpt !== ETAG_NOCHANGE) alterEtag(r, coding, etagOpt);
}

/** The note names of DeflateFilterNote / BrotliFilterNote. */
export interface CodingNotes {
  noteRatio: string | undefined;
  noteInput: string | undefined;
  noteOutput: string | undefined;
}

/** DeflateFilterNote / BrotliFilterNote: `[type] name`, type Ratio (the default), Input or
 *  Output; `unknown` words the error for another type. */
export function setCodingNote(c: CodingNotes, a: string, b: string | undefined, unknown: (type: string) => string): string | undefined {
  if (b === undefined) { c.noteRatio = a; return undefined; }
  const k = a.toLowerCase();
  if (k === 'ratio') c.noteRatio = b;
  else if (k === 'input') c.noteInput = b;
  else if (k === 'output') c.noteOutput = b;
  else return unknown(a);
  return undefined;
}

/** DeflateAlterETag / BrotliAlterETag's argument (any case), or undefined for another word. */
export function parseEtagOpt(arg: string): EtagOpt | undefined {
  const a = arg.toLowerCase();
  return a === 'addsuffix' ? ETAG_ADDSUFFIX : a === 'nochange' ? ETAG_NOCHANGE : a === 'remove' ? ETAG_REMOVE : undefined;
}

/** Buffers as data buckets. */
export const dataBuckets = (bufs: readonly Buffer[]): Bucket[] => bufs.map((data): Bucket => ({ kind: 'data', data }));

/** Passes a kept compressed body as it was first passed: one brigade a recorded pass, EOS
 *  after the last; synchronous as long as the next filters are. */
export function replayPasses<S>(f: FilterInstance<S>, passes: readonly (readonly Buffer[])[]): ReturnType<FilterInstance['pass']> {
  const go = (i: number): ReturnType<FilterInstance['pass']> => {
    for (; i < passes.length; i++) {
      const bb = dataBuckets(passes[i]!);
      if (i === passes.length - 1) bb.push(EOS);
      const p = f.pass(bb);
      if (p instanceof Promise) { const n = i + 1; return p.then(() => go(n)); }
    }
    return undefined;
  };
  return go(0);
}
