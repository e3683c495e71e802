// Parsing a request as httpd 2.4's server/protocol.c does (ap_parse_request_line and
// ap_parse_uri with apr_uri_parse's rules, under HttpProtocolOptions Strict or Unsafe), the
// Host checks of server/vhost.c (fix_hostname, strict_hostname_check), and the framing
// helpers of modules/http (Content-Length, Transfer-Encoding, chunk sizes).

import { isIPv6 } from 'node:net';
import type { Request } from '../request/request.js';
import type { CoreServerConfig } from '../core/config.js';
import { OK } from '../module.js';
import { APLOG_DEBUG } from '../log/levels.js';
import { isKnownMethod } from './http-core.js';

/** What ap_parse_uri found in a request target (one per connection, reused). */
export interface RequestTarget {
  /** The scheme of an absolute URI. */
  scheme: string | undefined;
  /** An http:// URI named the host (r.hostname holds it, not yet checked). */
  hostFromUri: boolean;
  /** The port as written in an absolute URI. */
  portStr: string | undefined;
  /** The path as written (undefined when the target had none). */
  path: string | undefined;
  fragment: boolean;
  user: boolean;
}

export function newRequestTarget(): RequestTarget {
  return { scheme: undefined, hostFromUri: false, portStr: undefined, path: undefined, fragment: false, user: false };
}

/**
 * ap_parse_request_line and ap_parse_uri: method, request target and protocol, with
 * httpd's deferred error reporting (all at debug level); returns OK, 400 or 501.
 */
export function parseRequestLine(r: Request, line: string, strict: boolean, conf: Readonly<CoreServerConfig>, t: RequestTarget): number {
  const L = line.length;
  let err = RRL_NONE;
  let i = 0;
  if (i < L && isSpace(line.charCodeAt(i))) {
    err = RRL_BADWHITESPACE;
    while (i < L && isSpace(line.charCodeAt(i))) i++;
  }
  const mStart = i;
  if (strict) while (i < L && isTokenChar(line.charCodeAt(i))) i++;
  else while (i < L && isVcharObs(line.charCodeAt(i))) i++;
  let ll = i;
  if ((ll === mStart || (ll < L && !isSpace(line.charCodeAt(ll)))) && err === RRL_NONE) {
    err = RRL_BADMETHOD;
    ll = findSpace(line, ll);
  }
  let method: string;
  let uri = '';
  let protocol = '';
  let trailing = '';
  if (ll < 0) {
    method = line.slice(mStart);
    if (err === RRL_NONE) err = RRL_MISSINGURI;
  } else {
    if (strict && ll + 1 < L && isSpace(line.charCodeAt(ll + 1)) && err === RRL_NONE) err = RRL_EXCESSWHITESPACE;
    method = line.slice(mStart, ll);
    let u = ll;
    for (; u < L && isSpace(line.charCodeAt(u)); u++) {
      if (line.charCodeAt(u) !== 0x20 && err === RRL_NONE) err = RRL_BADWHITESPACE;
    }
    if (u >= L && err === RRL_NONE) err = RRL_MISSINGURI;
    let e = u;
    while (e < L && isVcharObs(line.charCodeAt(e))) e++;
    let ul = e;
    if (e === u || (e < L && !isSpace(line.charCodeAt(e)))) {
      err = RRL_BADURI;
      ul = findSpace(line, e);
    }
    if (ul < 0) {
      uri = line.slice(u);
    } else {
      if (strict && ul + 1 < L && isSpace(line.charCodeAt(ul + 1)) && err === RRL_NONE) err = RRL_EXCESSWHITESPACE;
      uri = line.slice(u, ul);
      let p = ul;
      for (; p < L && isSpace(line.charCodeAt(p)); p++) {
        if (line.charCodeAt(p) !== 0x20 && err === RRL_NONE) err = RRL_BADWHITESPACE;
      }
      let q = p;
      while (q < L && isVcharObs(line.charCodeAt(q))) q++;
      protocol = line.slice(p, q);
      if (q < L && !isSpace(line.charCodeAt(q))) err = RRL_BADPROTOCOL;
      else if (strict && q < L) err = RRL_EXCESSWHITESPACE;
      else {
        for (; q < L && isSpace(line.charCodeAt(q)); q++) {
          if (line.charCodeAt(q) !== 0x20 && err === RRL_NONE) err = RRL_BADWHITESPACE;
        }
        if (q < L && err === RRL_NONE) { err = RRL_TRAILINGTEXT; trailing = line.slice(q); }
      }
    }
  }
  // The request line as logged: the three parts joined by single spaces.
  r.theRequest = uri === '' ? method : protocol === '' ? `${method} ${uri}` : `${method} ${uri} ${protocol}`;
  r.method = method;
  if (protocol.length === 8 && protocol.charCodeAt(4) === 0x2f && isDigit(protocol.charCodeAt(5))
      && protocol.charCodeAt(6) === 0x2e && isDigit(protocol.charCodeAt(7)) && protocol.charCodeAt(5) !== 0x30
      && protocol.slice(0, 4).toUpperCase() === 'HTTP') {
    r.assbackwards = false;
    r.protoNum = (protocol.charCodeAt(5) - 0x30) * 1000 + (protocol.charCodeAt(7) - 0x30);
    if (!protocol.startsWith('HTTP')) {
      if (strict && err === RRL_NONE) err = RRL_BADPROTOCOL;
      else protocol = 'HTTP' + protocol.slice(4);
    }
    r.protocol = protocol;
  } else if (protocol !== '') {
    r.protoNum = 9;
    r.protocol = protocol;
    if (err === RRL_NONE) err = RRL_BADPROTOCOL;
  } else {
    r.assbackwards = true;
    r.protocol = 'HTTP/0.9';
    r.protoNum = 9;
  }
  r.headerOnly = method === 'HEAD';
  let status = parseUri(r, uri, t);
  if (status === OK && t.path !== undefined && t.path.charCodeAt(0) !== 0x2f
      && !(method === 'OPTIONS' && t.path === '*')) {
    status = 400;
  }
  if (r.protoNum === 9 && err === RRL_NONE) {
    if (conf.allowHttp09 === false) err = RRL_REJECT09;
    else if (strict && method !== 'GET') err = RRL_BADMETHOD09;
  }
  let failed = 0;
  if (err !== RRL_NONE) {
    if (r.wantsLog('core', APLOG_DEBUG)) r.log('core', APLOG_DEBUG, requestLineError(err, method, r.unparsedUri, trailing, r.protocol));
    failed = 400;
  } else if (conf.registeredMethodsOnly === true && !isKnownMethod(r.rt, method)) {
    r.log('core', APLOG_DEBUG, `AH02423: HTTP Request Line; Unrecognized HTTP method: '${method.slice(0, fieldNameLen(method))}' (disallowed by RegisteredMethods)`);
    // No handler declared any method: the Allow list (make_allow) holds TRACE alone.
    r.headersOut.set('Allow', conf.traceEnable === 'off' ? '' : 'TRACE');
    return 501;
  } else if (status !== OK) {
    r.log('core', APLOG_DEBUG, `AH03450: HTTP Request Line; Unable to parse URI: '${r.uri.slice(0, fieldNameLen(r.uri))}'`);
    failed = 400;
  } else if (strict && t.fragment) {
    r.log('core', APLOG_DEBUG, 'AH02421: HTTP Request Line; URI must not contain a fragment');
    failed = 400;
  } else if (strict && t.user) {
    r.log('core', APLOG_DEBUG, 'AH02422: HTTP Request Line; URI must not contain a username/password');
    failed = 400;
  }
  if (failed && r.protoNum === 9) {
    // Errors are answered as HTTP/1.x, and the connection closes.
    r.assbackwards = false;
    r.connection.keepAlive = false;
    r.protoNum = 1000;
    r.protocol = 'HTTP/1.0';
  }
  return failed || OK;
}

/**
 * ap_parse_uri with apr_uri_parse: sets r.unparsedUri, r.uri (the path, not yet decoded),
 * r.args, r.hostname (from an http:// URI), r.parsedPort, and `t`; returns 400 when the URI does not parse.
 */
function parseUri(r: Request, raw: string, t: RequestTarget): number {
  r.unparsedUri = raw;
  t.scheme = undefined;
  t.hostFromUri = false;
  t.portStr = undefined;
  t.path = undefined;
  t.fragment = false;
  t.user = false;
  if (r.method === 'CONNECT') return parseConnectTarget(r, raw, t);
  let uri = raw;
  let k = 0;
  while (uri.charCodeAt(k) === 0x2f && uri.charCodeAt(k + 1) === 0x2f) k++;
  if (k) uri = uri.slice(k);
  let pathFrom = 0;
  let hostname: string | undefined;
  if (uri.charCodeAt(0) !== 0x2f && isAlpha(uri.charCodeAt(0))) {
    let s = 1;
    while (s < uri.length && isSchemeChar(uri.charCodeAt(s))) s++;
    if (uri.charCodeAt(s) === 0x3a) {
      t.scheme = uri.slice(0, s);
      if (uri.charCodeAt(s + 1) === 0x2f && uri.charCodeAt(s + 2) === 0x2f) {
        // authority: [user[:password]@]host[:port]
        const hStart = s + 3;
        let hEnd = hStart;
        while (hEnd < uri.length) {
          const c = uri.charCodeAt(hEnd);
          if (c === 0x2f || c === 0x3f || c === 0x23) break;
          hEnd++;
        }
        let hostinfo = uri.slice(hStart, hEnd);
        const at = hostinfo.lastIndexOf('@');
        if (at >= 0) {
          t.user = true;
          hostinfo = hostinfo.slice(at + 1);
        }
        let portAt = -1;
        if (hostinfo.charCodeAt(0) === 0x5b) {
          const rb = hostinfo.indexOf(']');
          if (rb < 0) return uriFailed(r, uri, t);
          hostname = hostinfo.slice(1, rb);
          if (hostinfo.charCodeAt(rb + 1) === 0x3a) portAt = rb + 1;
        } else {
          portAt = hostinfo.indexOf(':');
          hostname = portAt < 0 ? hostinfo : hostinfo.slice(0, portAt);
        }
        if (portAt >= 0) {
          const ps = hostinfo.slice(portAt + 1);
          t.portStr = ps;
          if (ps === '') r.parsedPort = t.scheme.toLowerCase() === 'https' ? 443 : 80;
          else if (/^[+-]?[0-9]+$/.test(ps)) r.parsedPort = Number.parseInt(ps, 10) & 0xffff;
          else return uriFailed(r, uri, t);
        }
        pathFrom = hEnd;
      } else {
        pathFrom = s + 1;
      }
    }
  }
  // path [ "?" query ] [ "#" fragment ]
  let end = pathFrom;
  while (end < uri.length) {
    const c = uri.charCodeAt(end);
    if (c === 0x3f || c === 0x23) break;
    end++;
  }
  const path = end > pathFrom ? uri.slice(pathFrom, end) : undefined;
  r.args = undefined;
  if (end < uri.length) {
    if (uri.charCodeAt(end) === 0x3f) {
      const h = uri.indexOf('#', end + 1);
      r.args = h < 0 ? uri.slice(end + 1) : uri.slice(end + 1, h);
      if (h >= 0) t.fragment = true;
    } else {
      t.fragment = true;
    }
  }
  t.path = path;
  if (t.scheme !== undefined && hostname !== undefined && t.scheme.toLowerCase() === 'http') {
    t.hostFromUri = true;
    r.hostname = hostname;
  }
  r.uri = path !== undefined ? path : r.method === 'OPTIONS' ? '*' : '/';
  return OK;
}

/** CONNECT's target is host:port (apr_uri_parse_hostinfo: the port is required and all
 *  digits, an IPv6 host in brackets); the path is then "/". */
function parseConnectTarget(r: Request, raw: string, t: RequestTarget): number {
  let colon: number;
  let host: string;
  if (raw.charCodeAt(0) === 0x5b) {
    const rb = raw.indexOf(']');
    if (rb < 0 || raw.charCodeAt(rb + 1) !== 0x3a) return uriFailed(r, raw, t);
    colon = rb + 1;
    host = raw.slice(1, rb);
  } else {
    colon = raw.indexOf(':');
    if (colon < 0) return uriFailed(r, raw, t);
    host = raw.slice(0, colon);
  }
  const ps = raw.slice(colon + 1);
  if (!/^\s*[+-]?[0-9]+$/.test(ps)) return uriFailed(r, raw, t);
  t.portStr = ps;
  r.parsedPort = Number.parseInt(ps, 10) & 0xffff;
  t.path = undefined;
  t.hostFromUri = true;
  r.hostname = host;
  r.args = undefined;
  r.uri = '/';
  return OK;
}

function uriFailed(r: Request, uri: string, t: RequestTarget): number {
  r.args = undefined;
  r.hostname = '';
  r.parsedPort = 0;
  t.scheme = undefined;
  t.hostFromUri = false;
  t.portStr = undefined;
  r.uri = uri;
  return 400;
}

/**
 * fix_hostname: the Host header (or, when `header` is undefined, the host of an absolute
 * request URI, already without port) lowercased and checked; undefined means 400.
 * An empty Host leaves the request without a host name ('').
 */
export function fixHostname(r: Request, header: string | undefined, strict: boolean): string | undefined {
  if (header === undefined || r.parsedPort !== 0) return checkHostname(r, header, strict);
  // A Host header seen before gives the same answer (only good ones are remembered: a bad
  // one is logged each time).
  const memo = strict ? strictHosts : laxHosts;
  const hit = memo.get(header);
  if (hit !== undefined) {
    if (hit.port !== 0) r.parsedPort = hit.port;
    return hit.host;
  }
  const host = checkHostname(r, header, strict);
  if (host !== undefined) {
    if (memo.size >= 1024) memo.clear();
    memo.set(header, { host, port: r.parsedPort });
  }
  return host;
}

interface HostAnswer { readonly host: string; readonly port: number }
const strictHosts = new Map<string, HostAnswer>();
const laxHosts = new Map<string, HostAnswer>();

function checkHostname(r: Request, header: string | undefined, strict: boolean): string | undefined {
  const src = header ?? r.hostname;
  if (src === '') return '';
  if (/^[0-9]+$/.test(src)) {
    if (strict) {
      r.log('core', APLOG_DEBUG, `AH02416: [strict] purely numeric host names not allowed: ${src}`);
      return undefined;
    }
    return src;
  }
  let host: string;
  let v6 = false;
  if (header !== undefined) {
    // apr_parse_addr_port: an optional :port (1-65535), an IPv6 literal in brackets.
    let last = src.length;
    let i = last - 1;
    while (i >= 0 && isDigit(src.charCodeAt(i))) i--;
    if (src.charCodeAt(i) === 0x3a && i < src.length - 1) {
      if (i === 0) return badHost(r, src);
      const port = src.length - i - 1 > 5 ? 0 : Number(src.slice(i + 1));
      if (port < 1 || port > 65535) return badHost(r, src);
      r.parsedPort = port;
      last = i;
    }
    host = src.slice(0, last);
    if (host.charCodeAt(0) === 0x5b) {
      if (host.indexOf(']') !== host.length - 1 || host.includes('%')) return badHost(r, src);
      host = host.slice(1, -1);
      if (!isIPv6(host)) return badHost(r, src);
      v6 = true;
    }
  } else {
    host = src;
    v6 = host.includes(':');
  }
  let ok: string | null;
  if (v6) ok = fixV6Literal(host);
  else {
    ok = fixNonV6(host);
    if (ok !== null && strict) {
      const problem = strictHostnameProblem(ok);
      if (problem !== null) {
        r.log('core', APLOG_DEBUG, `AH02415: [strict] Invalid host name '${ok}'${problem ? ', problem near: ' + problem.slice(0, 6) : ''}`);
        ok = null;
      }
    }
  }
  if (ok === null) return badHost(r, src);
  return ok;
}

function badHost(r: Request, src: string): undefined {
  r.log('core', APLOG_DEBUG, `AH00550: Client sent malformed Host header: ${src}`);
  return undefined;
}

// ---- helpers -------------------------------------------------------------------------------


/** APR error codes as httpd's log lines show them. */
export const APR_EINVAL = { code: 22, text: 'Invalid argument' };
export const APR_ENOSPC = { code: 28, text: 'No space left on device' };
export const APR_EGENERAL = { code: 20014, text: 'Internal error (specific information not available)' };

/** LOG_NAME_MAX_LEN: how much of a field name goes into a log message. */
export const LOG_NAME_MAX_LEN = 80;



const RRL_NONE = 0;
const RRL_BADMETHOD = 1;
const RRL_BADWHITESPACE = 2;
const RRL_EXCESSWHITESPACE = 3;
const RRL_MISSINGURI = 4;
const RRL_BADURI = 5;
const RRL_BADPROTOCOL = 6;
const RRL_TRAILINGTEXT = 7;
const RRL_BADMETHOD09 = 8;
const RRL_REJECT09 = 9;

function requestLineError(err: number, method: string, uri: string, trailing: string, protocol: string): string {
  switch (err) {
    case RRL_BADMETHOD: return `AH03445: HTTP Request Line; Invalid method token: '${method.slice(0, fieldNameLen(method))}'`;
    case RRL_BADMETHOD09: return `AH03444: HTTP Request Line; Invalid method token: '${method.slice(0, fieldNameLen(method))}' (only GET is allowed for HTTP/0.9 requests)`;
    case RRL_MISSINGURI: return 'AH03446: HTTP Request Line; Missing URI';
    case RRL_BADURI: return `AH03454: HTTP Request Line; URI incorrectly encoded: '${uri.slice(0, fieldNameLen(uri))}'`;
    case RRL_BADWHITESPACE: return 'AH03447: HTTP Request Line; Invalid whitespace';
    case RRL_EXCESSWHITESPACE: return 'AH03448: HTTP Request Line; Excess whitespace (disallowed by HttpProtocolOptions Strict)';
    case RRL_TRAILINGTEXT: return `AH03449: HTTP Request Line; Extraneous text found '${trailing.slice(0, fieldNameLen(trailing))}' (perhaps whitespace was injected?)`;
    case RRL_REJECT09: return 'AH02401: HTTP Request Line; Rejected HTTP/0.9 request';
    default: return `AH02418: HTTP Request Line; Unrecognized protocol '${protocol.slice(0, fieldNameLen(protocol))}' (perhaps whitespace was injected?)`;
  }
}

/** field_name_len: up to the ':' or 80 characters. */
export function fieldNameLen(field: string): number {
  const c = field.indexOf(':');
  return c < 0 || c > LOG_NAME_MAX_LEN ? LOG_NAME_MAX_LEN : c;
}

function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

function isSchemeChar(c: number): boolean {
  return isAlpha(c) || isDigit(c) || c === 0x2b || c === 0x2d || c === 0x2e;
}

/** VCHAR or obs-text (ap_scan_vchar_obstext). */
function isVcharObs(c: number): boolean {
  return (c > 0x20 && c < 0x7f) || c >= 0x80;
}

/** tchar (ap_scan_http_token). */
export function isTokenChar(c: number): boolean {
  if (isAlpha(c) || isDigit(c)) return true;
  switch (c) {
    case 0x21: case 0x23: case 0x24: case 0x25: case 0x26: case 0x27: case 0x2a: case 0x2b:
    case 0x2d: case 0x2e: case 0x5e: case 0x5f: case 0x60: case 0x7c: case 0x7e:
      return true;
    default:
      return false;
  }
}

/** strpbrk(s + from, " \t\n\v\f\r"): index of the next whitespace, or -1. */
function findSpace(s: string, from: number): number {
  for (let i = from; i < s.length; i++) if (isSpace(s.charCodeAt(i))) return i;
  return -1;
}

export function isHttpScheme(scheme: string): boolean {
  const s = scheme.toLowerCase();
  return s === 'http' || s === 'https';
}

/** ap_parse_strict_length: digits only, at most 2^63 - 1; -1 when invalid. */
export function parseStrictLength(v: string): number {
  if (v.length === 0 || v.length > 19) return -1;
  for (let i = 0; i < v.length; i++) if (!isDigit(v.charCodeAt(i))) return -1;
  if (v.length === 19 && v > '9223372036854775807') return -1;
  return Number(v);
}

/** ap_is_chunked: "chunked" is the last transfer coding of the list. */
export function isChunked(te: string): boolean {
  const parts = te.split(',');
  for (let i = parts.length - 1; i >= 0; i--) {
    const t = parts[i]!.trim();
    if (t === '') continue;
    return t.toLowerCase() === 'chunked';
  }
  return false;
}

/** A chunk-size line: the size, -1 when malformed, -2 when it overflows. */
export function parseChunkSize(line: string): number {
  let i = 0;
  const L = line.length;
  if (L === 0 || !isHexDigit(line.charCodeAt(0))) return -1;
  while (i < L && line.charCodeAt(i) === 0x30) i++;
  const start = i;
  while (i < L && isHexDigit(line.charCodeAt(i))) i++;
  const digits = i - start;
  if (digits > 16 || (digits === 16 && line.charCodeAt(start) > 0x37)) return -2;
  // Up to 10 spaces or tabs before ';' or the line end (RFC 7230 erratum 4667, as httpd).
  const bws = i;
  while (i < L && (line.charCodeAt(i) === 0x20 || line.charCodeAt(i) === 0x09)) i++;
  if (i - bws > 10) return -1;
  if (i < L) {
    if (line.charCodeAt(i) !== 0x3b) return -1;
    for (let k = i + 1; k < L; k++) {
      const c = line.charCodeAt(k);
      if ((c < 0x20 && c !== 0x09) || c === 0x7f) return -1;
    }
  }
  return digits === 0 ? 0 : Number.parseInt(line.slice(start, start + digits), 16);
}

function isHexDigit(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/** fix_hostname_non_v6: lowercased, no "..", '/' or '\\', a trailing dot dropped; null if bad. */
function fixNonV6(host: string): string | null {
  let lower = true;
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    if (c === 0x2e) { if (host.charCodeAt(i + 1) === 0x2e) return null; }
    else if (c === 0x2f || c === 0x5c) return null;
    else if (c >= 0x41 && c <= 0x5a) lower = false;
  }
  let h = lower ? host : host.replace(/[A-Z]+/g, (m) => m.toLowerCase());
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

/** fix_hostname_v6_literal: hex digits, colons (one "::"), dots; lowercased; null if bad. */
function fixV6Literal(host: string): string | null {
  let double = false;
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    const n = host.charCodeAt(i + 1);
    if (isHexDigit(c)) continue;
    if (c === 0x3a) {
      if (n === 0x3a) { if (double) return null; double = true; }
      else if (n === 0x2e) return null;
    } else if (c === 0x2e) {
      if (n === 0x3a || n === 0x2e) return null;
    } else {
      return null;
    }
  }
  return host.toLowerCase();
}

/** strict_hostname_check: null when fine, else the text at the problem ('' at the end). */
function strictHostnameProblem(host: string): string | null {
  let dotted = true;
  let leadingZeroes = false;
  let dots = 0;
  const L = host.length;
  for (let i = 0; i < L; i++) {
    const c = host.charCodeAt(i);
    if (isAlpha(c) || c === 0x2d || c === 0x5f) dotted = false;
    else if (c === 0x2e) {
      dots++;
      if (host.charCodeAt(i + 1) === 0x30 && isDigit(host.charCodeAt(i + 2))) leadingZeroes = true;
    } else if (!isDigit(c)) {
      return host.slice(i);
    }
  }
  if (dotted) {
    if (host.charCodeAt(0) === 0x2e || (host.charCodeAt(0) === 0x30 && isDigit(host.charCodeAt(1)))) leadingZeroes = true;
    if (leadingZeroes || dots !== 3) return '';
  } else {
    // The top-level domain starts with a letter.
    const d = host.lastIndexOf('.');
    if (d >= 0 && d + 1 < L && !isAlpha(host.charCodeAt(d + 1))) return host.slice(d);
  }
  return null;
}
