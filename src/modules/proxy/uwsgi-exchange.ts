// mod_proxy_uwsgi's request and answer (modules/proxy/mod_proxy_uwsgi.c): PATH_INFO from the
// backend URL's path (unescaped, leading slashes folded), the CGI environment as one uwsgi
// packet (HTTP_AUTHORIZATION passed, SCRIPT_NAME cut by PATH_INFO's length as httpd cuts
// it), the body as it is, then an HTTP/1.x status line and header from the application and
// the rest streamed until it closes.

import type { ByteStream } from '../../proxy/api.js';
import type { Request } from '../../server/request/request.js';
import { OK } from '../../server/module.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { encodeUwsgiPacket } from '../../proxy/protocols/uwsgi.js';
import { BackendReader, writeTo } from './backend-reader.js';
import { addStandardVars, sendBody, setupClientBlockChunkedError, streamToClient, type AddVars } from './cgi-like.js';

export const MODULE = 'proxy_uwsgi';
export const UWSGI_DEFAULT_PORT = 3031;
/** httpd's HUGE_STRING_LEN: the line buffer of the answer's status line and header. */
const HUGE_STRING_LEN = 8192;

/** ap_unescape_url: %XX decoded; undefined for a bad escape, an encoded '/' or NUL. */
export function unescapeUrl(s: string): string | undefined {
  if (!s.includes('%')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '%') { out += c; continue; }
    const h = s.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(h)) return undefined;
    const v = parseInt(h, 16);
    if (v === 0 || v === 0x2f) return undefined;
    out += String.fromCharCode(v);
    i += 2;
  }
  return out;
}

/** The handler's PATH_INFO step on `url` ("uwsgi://host:port/path"): the new r.filename
 *  (httpd unescapes inside r->filename) and PATH_INFO, or undefined when the path does not
 *  decode (AH10100, 500). */
export function uwsgiPathInfo(r: Request, url: string): { filename: string; pathInfo: string } | undefined {
  const after = url.indexOf('/', 'uwsgi://'.length);
  if (after < 0) return { filename: 'proxy:' + url, pathInfo: '/' };
  const raw = url.slice(after);
  const u = unescapeUrl(raw);
  if (u === undefined) {
    r.log(MODULE, APLOG_ERR, `AH10100: unable to decode uwsgi uri: ${url}`);
    return undefined;
  }
  let i = 0;
  while (u[i + 1] === '/') i++;
  return { filename: 'proxy:' + url.slice(0, after) + u, pathInfo: u.slice(i) };
}

export interface UwsgiBackend {
  readonly socket: ByteStream;
  readonly hostname: string;
  readonly port: number;
  readonly timeoutMs: number;
  /** ap_proxy_should_override for the status the application gave. */
  shouldOverride(status: number): boolean;
}

/** Step four of uwsgi_handler. */
export async function uwsgiExchange(r: Request, b: UwsgiBackend, addVars: AddVars = addStandardVars): Promise<number> {
  const setup = setupClientBlockChunkedError(r);
  if (setup.status !== OK) return setup.status;
  // uwsgi_send_headers
  await addVars(r);
  const auth = r.headersIn.get('Authorization');
  if (auth !== undefined) r.subprocessEnv.set('HTTP_AUTHORIZATION', auth);
  const scriptName = r.subprocessEnv.get('SCRIPT_NAME');
  const pathInfo = r.subprocessEnv.get('PATH_INFO');
  if (scriptName !== undefined && pathInfo !== undefined) {
    if (pathInfo !== '/') {
      // httpd's size arithmetic: a PATH_INFO longer than SCRIPT_NAME leaves it whole.
      const n = scriptName.length - pathInfo.length;
      r.subprocessEnv.set('SCRIPT_NAME', n >= 0 ? scriptName.slice(0, n) : scriptName);
    } else if (scriptName === '/') {
      r.subprocessEnv.set('SCRIPT_NAME', '');
    }
  }
  const packet = encodeUwsgiPacket(r.subprocessEnv);
  if (!packet.ok) {
    r.log(MODULE, APLOG_ERR, `AH10259: can't send headers to ${b.hostname}:${b.port}: packet size too large (${packet.size})`);
    return 500;
  }
  const failedSend = (e: { code: number; text: string } | undefined): void => {
    r.log(MODULE, APLOG_ERR, `AH10098: sending data to ${b.hostname}:${b.port} failed`, e);
  };
  const e = await writeTo(b.socket, packet.packet);
  if (e !== undefined) { failedSend(r.rt.errno(e)); return 503; }
  const st = await sendBody(r, b.socket, setup.remaining, failedSend, () => r.log(MODULE, APLOG_ERR, 'AH10099: receiving request body failed'));
  if (st !== OK) return st;
  return uwsgiResponse(r, b);
}

/** ap_getline with folding over the backend socket: the line without CR LF, its length as
 *  httpd counts it (>= HUGE_STRING_LEN: too long), or -1 at the end of the stream. */
function lineReader(reader: BackendReader, timeoutMs: number): () => Promise<string | null | 'long'> {
  let pending: string | null = null;
  const raw = async (): Promise<string | null | 'long'> => {
    let line = '';
    for (;;) {
      const c = await reader.read(timeoutMs);
      if (c === 'timeout' || c === null) return line === '' ? null : line;
      for (let i = 0; i < c.length; i++) {
        if (c[i] === 0x0a) {
          reader.unshift(c.subarray(i + 1));
          return line.endsWith('\r') ? line.slice(0, -1) : line;
        }
        line += String.fromCharCode(c[i]!);
        if (line.length >= HUGE_STRING_LEN) { reader.unshift(c.subarray(i + 1)); return 'long'; }
      }
    }
  };
  return async () => {
    let line = pending ?? await raw();
    pending = null;
    if (line === null || line === 'long' || line === '') return line;
    // A following line starting with a blank continues this one.
    for (;;) {
      const next = await raw();
      if (typeof next === 'string' && next !== '' && (next[0] === ' ' || next[0] === '\t')) {
        line += ' ' + next.replace(/^[ \t]+/, '');
        if (line.length >= HUGE_STRING_LEN) return 'long';
        continue;
      }
      pending = next;
      return line;
    }
  };
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_CONTENT = /^[\t\x20-\x7e\x80-\xff]*$/;

/** uwsgi_response. */
async function uwsgiResponse(r: Request, b: UwsgiBackend): Promise<number> {
  const reader = new BackendReader(b.socket);
  const next = lineReader(reader, b.timeoutMs);
  const first = await next();
  if (first === null || first === '' || first === 'long') return 500;
  let statusStart: number;
  if (/^HTTP\/\d\.\d \d\d\d/.test(first)) statusStart = 9;
  else if (/^HTTP\/\d \d\d\d/.test(first)) statusStart = 7;
  else return 502;
  r.status = parseInt(first.slice(statusStart, statusStart + 3), 10);
  r.statusLine = first.length > statusStart + 3 ? first.slice(statusStart) : first.slice(statusStart, statusStart + 3) + ' ';
  let bad = false;
  for (;;) {
    const l = await next();
    if (l === null || l === '') break;
    if (l === 'long') { bad = true; break; }
    const colon = l.indexOf(':');
    if (colon < 0) { bad = true; break; }
    const name = l.slice(0, colon);
    if (!TOKEN.test(name)) { bad = true; break; }
    const value = l.slice(colon + 1).replace(/^[ \t\n\v\f\r]+/, '').replace(/[ \t\n\v\f\r]+$/, '');
    if (!FIELD_CONTENT.test(value)) { bad = true; break; }
    r.headersOut.add(name, value);
  }
  if (bad) {
    r.headersOut.clear();
    return 502;
  }
  if (r.headersOut.get('Transfer-Encoding') !== undefined) r.headersOut.unset('Content-Length');
  const ct = r.headersOut.get('Content-Type');
  if (ct !== undefined) r.contentType = ct;
  if (b.shouldOverride(r.status)) {
    const status = r.status;
    r.status = 200;
    r.statusLine = undefined;
    return status;
  }
  return streamToClient(r, reader, b.timeoutMs);
}
