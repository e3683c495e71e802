// The FTP side of mod_proxy_ftp (httpd's modules/proxy/mod_proxy_ftp.c), without I/O: control
// replies as ftp_getrc_msg reads them, the EPSV and PASV answers, the globbing and %-escape
// helpers of the path, a small apr_uri_parse / apr_uri_unparse, and the directory listing
// as the PROXY_SEND_DIR filter writes it (heading, one line of LIST output, footer).
// Strings here are bytes as latin1 characters (one character per byte), as the wire has them.

import { escapeHtml } from '../../server/http/response.js';
import { escapeUri } from '../../lib/urlencoded.js';
import { parseAuthority } from '../../lib/uri-authority.js';

/** httpd's MAX_LINE_LEN: a reply line is read into 80 bytes (79 and the NUL). */
const MAX_LINE_LEN = 80;

/** One complete reply: the code (0 for a line without a 3-digit code, -1 for a malformed one)
 *  and the message as proxy_ftp_command keeps it (the text of the first line). */
export interface FtpReply {
  readonly code: number;
  readonly message: string;
}

/**
 * ftp_getrc_msg over lines as they come (each line with its LF, as ap_get_brigade's GETLINE
 * gives it; a longer line is cut at 79 bytes). push() answers the reply once the last line of
 * a multi-line one ("123-" ... "123 ") is in, undefined while more lines are needed.
 */
export class FtpReplyParser {
  private code = 0;
  private message = '';
  private terminator: string | undefined = undefined;
  /** Why the last reply was malformed (AH10229), for the log. */
  malformed: string | undefined = undefined;

  push(rawLine: string): FtpReply | undefined {
    const line = cutCString(rawLine.length > MAX_LINE_LEN - 1 ? rawLine.slice(0, MAX_LINE_LEN - 1) : rawLine);
    if (this.terminator === undefined) {
      this.malformed = undefined;
      if (rawLine.length < 4) {
        this.malformed = line;
        return { code: -1, message: '' };
      }
      const d = (i: number): boolean => line.charCodeAt(i) >= 0x30 && line.charCodeAt(i) <= 0x39;
      const sep = line[3];
      this.code = d(0) && d(1) && d(2) && (sep === ' ' || sep === '-') ? Number(line.slice(0, 3)) : 0;
      this.message = line.slice(4);
      if (sep !== '-') return this.done();
      this.terminator = line.slice(0, 3) + ' ';
      return undefined;
    }
    this.message += line.slice(line[0] === ' ' ? 1 : 4);
    if (line.slice(0, 4) === this.terminator) return this.done();
    return undefined;
  }

  private done(): FtpReply {
    this.terminator = undefined;
    return { code: this.code, message: this.message };
  }
}

/** What proxy_ftp_command keeps of a reply's text: up to the first CR or LF; a failed read or
 *  a 421 is "<unable to read result>". */
export function replyMessage(code: number, message: string): string {
  if (code === -1 || code === 421) return '<unable to read result>';
  const m = /[\r\n]/.exec(message);
  return m === null ? message : message.slice(0, m.index);
}

/** The string up to a NUL, as C sees it. */
function cutCString(s: string): string {
  const z = s.indexOf('\0');
  return z < 0 ? s : s.slice(0, z);
}

/** parse_epsv_reply: the port of "229 ... (|||port|)", 0 when the syntax is wrong. */
export function parseEpsvReply(reply: string): number {
  const at = reply.indexOf('(');
  if (at < 0) return 0;
  const p = reply.slice(at);
  const d = p[1];
  if (d === undefined || d === '' || p[2] !== d || p[3] !== d || p[4] === d) return 0;
  // strtol: leading white space and a sign, then digits.
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d+)/.exec(p.slice(4));
  if (m === null) return 0;
  const end = 4 + m[0].length;
  const port = (m[1] === '-' ? -1 : 1) * Number(m[2]);
  if (!(port >= 1 && port <= 65535) || p[end] !== d || p[end + 1] !== ')') return 0;
  return port;
}

/** The address of a 227 reply as httpd reads it: the text after the first space ("=h,h,..."
 *  right after it, else between the next "(" and ")"), then sscanf "%d,%d,%d,%d,%d,%d".
 *  undefined when it is not there. */
export function parsePasvReply(message: string): { host: string; port: number; parts: number[] } | undefined {
  const tok = new StrTok(message);
  const first = tok.next(' ');
  if (first === undefined) return undefined;
  let addr: string | undefined;
  if (first.sepFound && message[first.end + 1] === '=') addr = message.slice(first.end + 2);
  else if (tok.next('(') !== undefined) addr = tok.next(')')?.token;
  if (addr === undefined) return undefined;
  const nums = scanInts(addr, 6);
  if (nums === undefined) return undefined;
  const [h3, h2, h1, h0, p1, p0] = nums as [number, number, number, number, number, number];
  return { host: `${h3}.${h2}.${h1}.${h0}`, port: ((p1 << 8) + p0) & 0xffff, parts: nums };
}

/** apr_strtok over one string: each call skips leading separators and takes the token up to
 *  the next separator (which it consumes); undefined once nothing is left. */
class StrTok {
  private at = 0;
  constructor(private readonly s: string) {}
  next(sep: string): { token: string; end: number; sepFound: boolean } | undefined {
    while (this.at < this.s.length && sep.includes(this.s[this.at]!)) this.at++;
    if (this.at >= this.s.length) return undefined;
    const from = this.at;
    let i = from;
    while (i < this.s.length && !sep.includes(this.s[i]!)) i++;
    const sepFound = i < this.s.length;
    this.at = sepFound ? i + 1 : i;
    return { token: this.s.slice(from, i), end: i, sepFound };
  }
}

/** sscanf(s, "%d,%d,...") for `n` numbers: each %d skips white space and takes a signed
 *  decimal; the commas must be there. */
function scanInts(s: string, n: number): number[] | undefined {
  const out: number[] = [];
  let i = 0;
  for (let k = 0; k < n; k++) {
    if (k > 0) {
      if (s[i] !== ',') return undefined;
      i++;
    }
    const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s.slice(i));
    if (m === null) return undefined;
    out.push(Number(BigInt.asIntN(32, BigInt(m[1]!))));
    i += m[0].length;
  }
  return out;
}

/** FTP_GLOBBING_CHARS. */
const GLOBBING = '*?[{~';

/** ftp_escape_globbingchars: a backslash before each globbing character (unless
 *  ProxyFtpEscapeWildcards is off). */
export function escapeGlobbing(path: string, on: boolean): string {
  if (!on) return path;
  let out = '';
  for (const c of path) out += GLOBBING.includes(c) ? '\\' + c : c;
  return out;
}

/** ftp_check_globbingchars: an unescaped globbing character in the path. */
export function hasGlobbing(path: string): boolean {
  for (let i = 0; i < path.length; i++) {
    if (path[i] === '\\') i++;
    if (i < path.length && GLOBBING.includes(path[i]!)) return true;
  }
  return false;
}

function isHex(c: string | undefined): boolean {
  return c !== undefined && /^[0-9A-Fa-f]$/.test(c);
}

/** ftp_check_string: no CR, LF or byte above 0x7f, %-escapes decoded first. */
export function checkFtpString(x: string): boolean {
  for (let i = 0; i < x.length; i++) {
    let ch = x.charCodeAt(i);
    if (ch === 0) break;
    if (x[i] === '%' && isHex(x[i + 1]) && isHex(x[i + 2])) {
      ch = parseInt(x.slice(i + 1, i + 3), 16);
      i += 2;
    }
    if (ch === 13 || ch === 10 || (ch & 0x80) !== 0) return false;
  }
  return true;
}

/** decodeenc: %XX decoded where two hex digits follow (a C string: up to a NUL). */
export function decodeEnc(x: string): string {
  let out = '';
  for (let i = 0; i < x.length; i++) {
    let c = x[i]!;
    if (c === '\0') break;
    if (c === '%' && isHex(x[i + 1]) && isHex(x[i + 2])) {
      c = String.fromCharCode(parseInt(x.slice(i + 1, i + 3), 16));
      i += 2;
    }
    out += c;
  }
  // A decoded NUL ends the C string too.
  return cutCString(out);
}

// ---- apr_uri ------------------------------------------------------------------------------------

/** The parts of a URI apr_uri_parse gives (undefined: absent). */
export interface AprUri {
  scheme?: string;
  user?: string;
  password?: string;
  hostname?: string;
  portStr?: string;
  port: number;
  path?: string;
  query?: string;
  fragment?: string;
}

/** The default ports apr_uri_port_of_scheme knows of the schemes used here. */
const APR_PORTS: Record<string, number> = { ftp: 21, http: 80, https: 443, ssh: 22, telnet: 23, gopher: 70, nntp: 119, snews: 563, ldap: 389, wais: 210, prospero: 191, rtsp: 554, sip: 5060, acap: 674, nfs: 2049, tip: 3372, imap: 143, pop: 110 };

/** apr_uri_parse: "scheme://user:password@host:port/path?query#fragment" or a path. */
export function parseAprUri(s: string): AprUri {
  const u: AprUri = { port: 0 };
  let rest = s;
  const sm = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(rest);
  if (sm !== null || rest.startsWith('//')) {
    if (sm !== null) {
      u.scheme = sm[1]!.toLowerCase();
      rest = rest.slice(sm[0].length);
    } else rest = rest.slice(2);
    const end = rest.search(/[/?#]/);
    const hostinfo = end < 0 ? rest : rest.slice(0, end);
    rest = end < 0 ? '' : rest.slice(end);
    Object.assign(u, parseAuthority(hostinfo));
    if (u.portStr !== undefined) {
      u.port = u.portStr === '' ? (APR_PORTS[u.scheme ?? ''] ?? 0) : (Number(u.portStr) & 0xffff);
    } else u.port = APR_PORTS[u.scheme ?? ''] ?? 0;
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) { u.fragment = rest.slice(hash + 1); rest = rest.slice(0, hash); }
  const q = rest.indexOf('?');
  if (q >= 0) { u.query = rest.slice(q + 1); rest = rest.slice(0, q); }
  if (rest !== '') u.path = rest;
  return u;
}

/** apr_uri_unparse with APR_URI_UNP_OMITPATHINFO, and OMITPASSWORD when `omitPassword`. */
export function unparseSite(u: AprUri, omitPassword: boolean): string {
  let ret = '';
  if (u.user !== undefined || u.password !== undefined) {
    const pw = u.password !== undefined && !omitPassword;
    ret = (u.user ?? '') + (pw ? ':XXXXXXXX' : '') + (u.user !== undefined || pw ? '@' : '');
  }
  if (u.hostname !== undefined) {
    const v6 = u.hostname.includes(':');
    const isDefault = u.portStr === undefined || u.port === 0 || u.port === (APR_PORTS[u.scheme ?? ''] ?? 0);
    ret = `//${ret}${v6 ? '[' : ''}${u.hostname}${v6 ? ']' : ''}${isDefault ? '' : ':' + u.portStr}`;
  }
  if (u.scheme !== undefined) ret = `${u.scheme}:${ret}`;
  return ret;
}

// ---- the directory listing (PROXY_SEND_DIR) -------------------------------------------------------

const DOCTYPE_HTML_4_01 = '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n';

/** What the heading of a listing is made of: `site` ("scheme://host" without the password, or
 *  the server's own URL for a reverse proxy), `path` (the request's path without its query),
 *  the Directory-PWD and Directory-README notes. */
export interface ListingHead {
  readonly site: string;
  readonly path: string;
  readonly pwd: string | undefined;
  readonly readme: string | undefined;
}

/** The start of the page, up to the "<pre>" the lines go in. */
export function listingHeader(h: ListingHead): string {
  let path = h.path;
  const basedir = path.slice(0, 4).toLowerCase() === '/%2f' ? '/%2f' : '';
  const t = path.indexOf(';type=');
  if (t >= 0) path = path.slice(0, t);
  path = decodeEnc(path);
  while (path[1] === '/') path = path.slice(1);
  let wildcard: string | undefined;
  const rel = path.lastIndexOf('/');
  if (rel >= 0 && hasGlobbing(path.slice(rel))) {
    wildcard = path.slice(rel + 1);
    path = path.slice(0, rel);
  }
  path += '/';
  let n = path.length;
  while (n > 1 && path[n - 1] === '/' && path[n - 2] === '/') n--;
  path = path.slice(0, n);
  const escpath = escapeHtml(path);
  let out = `${DOCTYPE_HTML_4_01}<html>\n <head>\n  <title>${escapeHtml(h.site)}${basedir}${escpath}</title>\n` +
    `<base href="${escapeUri(h.site)}${basedir}${escpath}">\n </head>\n <body>\n  <h2>Directory of ` +
    `<a href="/">${escapeUri(h.site)}</a>/${basedir !== '' ? '<a href="/%2f/">%2f</a>/' : ''}`;
  // One link per directory of the path ("path/" components).
  let dir = path.indexOf('/', 1);
  while (dir >= 0) {
    const prefix = path.slice(0, dir);
    const slash = prefix.lastIndexOf('/', prefix.length);
    const reldir = slash <= 0 ? prefix.slice(1) : prefix.slice(slash + 1);
    out += `<a href="${basedir}${escapeUri(prefix)}/">${escapeHtml(reldir)}</a>/`;
    while (path[dir] === '/') dir++;
    dir = path.indexOf('/', dir);
  }
  if (wildcard !== undefined) out += escapeHtml(wildcard);
  if (h.pwd === undefined || path.startsWith(h.pwd)) out += '</h2>\n\n  <hr />\n\n<pre>';
  else out += `</h2>\n\n(${escapeHtml(h.pwd)})\n\n  <hr />\n\n<pre>`;
  if (h.readme !== undefined) out += `${escapeHtml(h.readme)}\n</pre>\n\n<hr />\n\n<pre>\n`;
  return out;
}

/** The end of the page, with the server's signature (ap_psignature("", r)). */
export function listingFooter(signature: string): string {
  return `</pre>\n\n  <hr />\n\n  ${signature}\n\n </body>\n</html>\n`;
}

/** The fallback for "ls -s1" listings. */
const LS_REG = /^ *([0-9]+) +([^ ]+)$/;

/** httpd's MAX_STRING_LEN: a listing line is kept to 8191 bytes. */
const MAX_LIST_LINE = 8191;

/**
 * One line of the LIST output as the listing shows it (`line` without its LF), or null for a
 * file or directory line without a space ("proxy_ftp: could not parse line", AH01034).
 */
export function listLineToHtml(raw: string): string | null {
  let line = cutCString(raw.length > MAX_LIST_LINE ? raw.slice(0, MAX_LIST_LINE) : raw);
  if (line.endsWith('\n')) line = line.slice(0, -1);
  if (line.endsWith('\r')) line = line.slice(0, -1);
  const arrow = line[0] === 'l' ? line.indexOf(' -> ') : -1;
  if (arrow >= 0) {
    // A symlink: the name is the word before " -> ".
    let f = arrow;
    do f--; while (line[f] !== ' ' && f > 0);
    const head = f > 0 ? line.slice(0, f) : line.slice(0, arrow);
    const name = f > 0 ? line.slice(f + 1, arrow) : line.slice(0, arrow);
    const target = line.slice(arrow + 1);
    return `${escapeHtml(head)} <a href="${escapeUri(name)}">${escapeHtml(name)} ${escapeHtml(target)}</a>\n`;
  }
  const c0 = line[0];
  const digit = c0 !== undefined && c0 >= '0' && c0 <= '9';
  if (c0 === 'd' || c0 === '-' || c0 === 'l' || digit) {
    if (digit) {
      // A DOS listing's <DIR>.
      line = line.replace('<', '[').replace('>', ']');
    }
    const sp = line.lastIndexOf(' ');
    if (sp < 0) return null;
    const head = line.slice(0, sp);
    const name = line.slice(sp + 1);
    const slash = name === '.' || name === '..' || c0 === 'd' ? '/' : '';
    return `${escapeHtml(head)} <a href="${escapeUri(name)}${slash}">${escapeHtml(name)}</a>\n`;
  }
  const m = LS_REG.exec(line);
  if (m !== null) {
    const at = line.length - m[2]!.length;
    return `${escapeHtml(line.slice(0, at))}<a href="${escapeUri(m[2]!)}">${escapeHtml(m[2]!)}</a>\n`;
  }
  return escapeHtml(line + '\n');
}
