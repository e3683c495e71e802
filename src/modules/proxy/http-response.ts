// The backend side of HTTP/1.x for mod_proxy_http, without sockets: the status line check
// (apr_date_checkmask "HTTP/#.# ###*"), the header lines as ap_proxy_read_headers takes them
// (folding, ProxyBadHeader), the chunked body decoder of the backend's HTTP_IN, and the
// dates ap_proxy_date_canon rewrites. Pure functions, so they can be fuzzed.

import { parseHttpDate, toHttpDate } from '../../server/log/time.js';

/** "HTTP/1.1 200 OK" → its parts; undefined when the line is not "HTTP/#.# ###*". */
export function parseStatusLine(line: string): { major: number; minor: number; status: number; statusLine: string } | undefined {
  if (!/^HTTP\/\d\.\d \d\d\d/.test(line)) return undefined;
  const major = line.charCodeAt(5) - 48;
  const minor = line.charCodeAt(7) - 48;
  const status = Number(line.slice(9, 12));
  // 2616 requires the space in Status-Line; httpd puts one back when the reason is missing.
  const statusLine = line.length > 12 ? line.slice(9) : line.slice(9, 12) + ' ';
  return { major, minor, status, statusLine };
}

export type BadHeaderPolicy = 'error' | 'ignore' | 'body';

/** What one header line means: a field, a line to skip, the start of the body, or an error. */
export type HeaderLineResult =
  | { kind: 'field'; name: string; value: string }
  | { kind: 'ignore' }
  | { kind: 'body'; sawHeaders: boolean }
  | { kind: 'error' };

/** One (unfolded) header line of the backend's response, as ap_proxy_read_headers judges it. */
export function headerLine(line: string, policy: BadHeaderPolicy, sawHeaders: boolean): HeaderLineResult {
  const colon = line.indexOf(':');
  if (colon < 0) {
    if (!/^HTTP\/\d\.\d \d\d\d/.test(line)) {
      if (policy === 'error') return { kind: 'error' };
      if (policy === 'body') return { kind: 'body', sawHeaders };
    }
    return { kind: 'ignore' };
  }
  const name = line.slice(0, colon);
  // The value without the white space (apr_isspace) around it.
  let a = colon + 1;
  let z = line.length;
  while (a < z && isSpace(line.charCodeAt(a))) a++;
  while (z > a && isSpace(line.charCodeAt(z - 1))) z--;
  return { kind: 'field', name, value: line.slice(a, z) };
}

/** apr_isspace: space, \t, \n, \v, \f, \r. */
function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

/** ap_proxy_date_canon: an RFC 850 or asctime date in RFC 1123 form; anything else as is. */
export function dateCanon(v: string): string {
  let out = canonDates.get(v);
  if (out !== undefined) return out;
  const ms = parseHttpDate(v);
  out = Number.isNaN(ms) || ms < 0 ? v : toHttpDate(ms);
  // The answer depends on the text alone: a backend's Date changes once a second and its
  // Last-Modified values repeat, so the last few are kept rather than parsed and formatted
  // again for every response.
  if (canonDates.size >= 64) canonDates.clear();
  canonDates.set(v, out);
  return out;
}
const canonDates = new Map<string, string>();

/** A streaming decoder of a chunked body: feed it bytes, it returns the data it found and
 *  whether the last chunk (and trailer) ended; throws a ChunkError on bad framing. */
export class ChunkError extends Error {}

export class ChunkedDecoder {
  private state: 'size' | 'data' | 'dataCrlf' | 'trailer' | 'done' = 'size';
  private remaining = 0;
  private line = '';
  /** Trailer fields read after the last chunk. */
  readonly trailers: [string, string][] = [];
  get done(): boolean { return this.state === 'done'; }

  /** Decodes `buf`; returns the data pieces and what was left over after the end (if done). */
  push(buf: Buffer, maxLine = 8192): { data: Buffer[]; rest: Buffer | null } {
    const data: Buffer[] = [];
    let i = 0;
    while (i < buf.length && this.state !== 'done') {
      if (this.state === 'data') {
        const n = Math.min(this.remaining, buf.length - i);
        data.push(buf.subarray(i, i + n));
        i += n;
        this.remaining -= n;
        if (this.remaining === 0) this.state = 'dataCrlf';
        continue;
      }
      const nl = buf.indexOf(0x0a, i);
      const end = nl < 0 ? buf.length : nl;
      this.line += buf.toString('latin1', i, end);
      if (this.line.length > maxLine) throw new ChunkError('chunk line too long');
      i = nl < 0 ? buf.length : nl + 1;
      if (nl < 0) break;
      let line = this.line;
      this.line = '';
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (this.state === 'dataCrlf') {
        if (line !== '') throw new ChunkError('missing CRLF after chunk data');
        this.state = 'size';
      } else if (this.state === 'size') {
        const m = /^([0-9A-Fa-f]+)[ \t]*(;.*)?$/.exec(line);
        if (m === null || m[1]!.length > 15) throw new ChunkError('invalid chunk size');
        const size = parseInt(m[1]!, 16);
        if (size === 0) this.state = 'trailer';
        else { this.remaining = size; this.state = 'data'; }
      } else if (this.state === 'trailer') {
        if (line === '') { this.state = 'done'; break; }
        const c = line.indexOf(':');
        if (c > 0) this.trailers.push([line.slice(0, c), line.slice(c + 1).trim()]);
      }
    }
    return { data, rest: this.state === 'done' && i < buf.length ? buf.subarray(i) : null };
  }
}

/** What process_proxy_header does with a field, by its name (fieldKind). F_HOP: a hop-by-hop
 *  field that never passes a proxy (Keep-Alive, Proxy-Authenticate, TE, Trailer: RFC 7230
 *  section 6.1; Upgrade is F_UPGRADE); F_CONNECTION: Connection. mod_proxy_http puts
 *  neither in the response's table: ap_proxy_clear_connection and the removal of the hop-by-hop
 *  fields that follow would take them out. */
export const F_PLAIN = 0; export const F_DATE = 1; export const F_URL = 2; export const F_COOKIE = 3;
export const F_HOP = 4; export const F_CONNECTION = 5; export const F_UPGRADE = 6;

/** `name` is `lower` in any case (`lower`: lower-case ASCII). */
function is(name: string, lower: string): boolean {
  return name === lower || ((name.charCodeAt(0) | 0x20) === lower.charCodeAt(0) && name.toLowerCase() === lower);
}

/** The kind of a field by its name: by its length first, so most names are told F_PLAIN by a
 *  comparison or two without a lower-case copy. */
export function fieldKind(name: string): number {
  switch (name.length) {
    case 2: return is(name, 'te') ? F_HOP : F_PLAIN;
    case 3: return is(name, 'uri') ? F_URL : F_PLAIN;
    case 4: return name === 'Date' || is(name, 'date') ? F_DATE : F_PLAIN;
    case 7: return is(name, 'expires') ? F_DATE : is(name, 'upgrade') ? F_UPGRADE : is(name, 'trailer') ? F_HOP : F_PLAIN;
    case 8: return is(name, 'location') ? F_URL : F_PLAIN;
    case 10: {
      const c = name.charCodeAt(0) | 0x20;
      if (c === 0x63) return is(name, 'connection') ? F_CONNECTION : F_PLAIN;
      if (c === 0x6b) return is(name, 'keep-alive') ? F_HOP : F_PLAIN;
      return is(name, 'set-cookie') ? F_COOKIE : F_PLAIN;
    }
    case 11: return is(name, 'destination') ? F_URL : F_PLAIN;
    case 13: return name === 'Last-Modified' || is(name, 'last-modified') ? F_DATE : F_PLAIN;
    case 16: return is(name, 'content-location') ? F_URL : F_PLAIN;
    case 18: return is(name, 'proxy-authenticate') ? F_HOP : F_PLAIN;
    default: return F_PLAIN;
  }
}

/** ap_proxy_clear_connection: the fields the Connection header names, and Connection itself;
 *  true when it asked to close. */
export function clearConnection(get: (n: string) => string | undefined, unset: (n: string) => void): boolean {
  const v = get('Connection');
  if (v === undefined) return false;
  let close = false;
  for (const tok of v.split(',')) {
    const t = tok.trim();
    if (t === '') continue;
    if (t.toLowerCase() === 'close') close = true;
    else unset(t);
  }
  unset('Connection');
  return close;
}
