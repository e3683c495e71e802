// mod_proxy_http2 (modules/http2/mod_proxy_http2.c, h2_proxy_session.c, h2_proxy_util.c):
// HTTP/2 to backends for h2:// (TLS, ALPN "h2", the SSLProxy* settings of the virtual host)
// and h2c:// (cleartext, prior knowledge) URLs. The request goes out as one stream of an
// HTTP/2 session kept per worker and backend address in this process and shared by every
// request (httpd keeps its session on a pooled connection; here the session multiplexes the
// concurrent requests of the process). Request fields as h2_proxy_req_make maps them
// (hop-by-hop fields dropped, names camel-cased, cookies joined with "; ", Host carried as
// :authority, "te: trailers", X-Forwarded-*), the body streamed; response fields as
// h2_proxy_stream_add_header_out maps them (ProxyPassReverse on Location, Content-Location,
// URI, Destination, Set-Cookie and the URIs of Link unless ProxyPreserveHost, Alt-Svc dropped, Via added).
// Errors as httpd's: 503 when the backend cannot be reached (mod_proxy's AH00957/AH00959),
// 502 for a stream the backend resets, the client connection cut when the response had
// started. It reaches mod_proxy only through the "proxy_api" provider.

import * as http2 from 'node:http2';
import { defineModule, MODULE_API_VERSION, DECLINED, OK, type ModuleDecl } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { HeaderTable } from '../../server/request/headers.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_TRACE2 } from '../../server/log/levels.js';
import { coreDir } from '../../server/core/config.js';
import { dataBucket, EOS, FilterError } from '../../server/filters.js';
import { defaultPort, getServerName, getServerPort } from '../../server/core/server-name.js';
import { APACHE_COMPAT_VERSION } from '../../server/version.js';
import {
  PROXYREQ_PROXY, PROXYREQ_REVERSE,
  type ProxyApi, type ProxyConn, type ProxyDirConf, type ProxySchemeProvider, type ProxyServerConf, type ProxyWorker,
} from '../../proxy/api.js';
import { cookieReverseMap, locationReverseMap } from './reverse-map.js';

const MOD = 'proxy_http2';
const VIA_BANNER = `Apache/${APACHE_COMPAT_VERSION}`;
/** The per-stream window httpd's sessions announce (2^16 - 1 by default) is node's default;
 *  the connection window is raised as h2_proxy_session_setup does (2^30 - 1). */
const CONN_WINDOW = (1 << 30) - 1;

function apiOf(r: Request): ProxyApi {
  return r.rt.ctx.provider('proxy_api', 'mod_proxy')!;
}

// ---- canon ----------------------------------------------------------------------------------
/** ap_scan_vchar_obstext: true when the string has a control character or a space. */
function hasCtlOrSpace(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** proxy_http2_canon. */
function canon(r: Request, url: string): number {
  const m = /^(h2c?):/i.exec(url);
  if (m === null) return DECLINED;
  const scheme = m[1]!.toLowerCase();
  const api = apiOf(r);
  const def = api.portOfScheme(scheme === 'h2' ? 'https' : 'http');
  const nl = api.canonNetloc(url.slice(m[0].length), def);
  if (typeof nl === 'string') {
    r.log(MOD, APLOG_ERR, `AH03350: error parsing URL ${url.slice(m[0].length)}: ${nl}`);
    return 400;
  }
  let path: string;
  let search: string | undefined;
  let raw = false;
  if (r.proxyreq === PROXYREQ_PROXY) {
    path = nl.rest;
    raw = true;
  } else if (r.notes.has('proxy-nocanon')) {
    path = nl.rest;
    raw = true;
  } else if (r.notes.has('proxy-noencode')) {
    path = nl.rest;
    raw = true;
    search = r.args;
  } else {
    const d = coreDir(r);
    const keepSlashes = d.allowEncodedSlashes === 'nodecode';
    const enc = api.canonenc(nl.rest, 'path', false, PROXYREQ_REVERSE, keepSlashes);
    if (enc === undefined) return 400;
    path = enc;
    search = r.args;
  }
  if (raw && hasCtlOrSpace(path)) {
    r.log(MOD, APLOG_ERR, 'AH10420: To be forwarded path contains control characters or spaces');
    return 403;
  }
  if (search !== undefined && hasCtlOrSpace(search)) {
    r.log(MOD, APLOG_ERR, 'AH10412: To be forwarded query string contains control characters or spaces');
    return 403;
  }
  const sport = nl.port !== def ? `:${nl.port}` : '';
  const host = nl.host.includes(':') && !nl.host.startsWith('[') ? `[${nl.host}]` : nl.host;
  r.filename = `proxy:${scheme}://${host}${sport}${path}${search !== undefined ? '?' + search : ''}`;
  return OK;
}

// ---- header mapping (h2_proxy_util.c) ---------------------------------------------------------
/** IgnoredRequestHeaders: never forwarded (RFC 9113 8.2.2), nor taken from a response. */
const IGNORED_REQUEST = new Set(['upgrade', 'connection', 'keep-alive', 'http2-settings', 'proxy-connection', 'transfer-encoding']);
/** IgnoredProxyRespHds: also dropped from responses. */
const IGNORED_RESPONSE = new Set([...IGNORED_REQUEST, 'alt-svc']);

/** h2_proxy_util_camel_case_header: the first letter and each one after '-' upper-cased. */
export function camelCase(name: string): string {
  let out = '';
  let start = true;
  for (const ch of name) {
    out += start && ch >= 'a' && ch <= 'z' ? ch.toUpperCase() : ch;
    start = start ? false : ch === '-';
  }
  return out;
}

function hasToken(v: string | undefined, tok: string): boolean {
  return v !== undefined && v.split(',').some((t) => t.trim().toLowerCase() === tok);
}

/** The backend URL split as apr_uri_parse does for the stream's pseudo headers. */
interface Target {
  readonly https: boolean;
  /** The URL's scheme as written ("h2", "h2c"). */
  readonly scheme: string;
  readonly authority: string;
  /** Path and query (APR_URI_UNP_OMITSITEPART). */
  readonly path: string;
}

/** h2_proxy_req_make + open_stream: the request's fields, lower-case names in order, with
 *  the pseudo-headers first in nghttp2's order. */
export function requestHeaders(r: Request, dconf: ProxyDirConf, t: Target): Record<string, string | string[]> {
  const origHost = r.headersIn.get('Host') ?? r.hostname;
  const authority = dconf.preserveHost === true ? (origHost ?? t.authority) : t.authority;
  const out: Record<string, string | string[]> = {
    ':scheme': t.https ? 'https' : 'http',
    ':authority': authority,
    ':path': t.path,
    ':method': r.method,
  };
  // Fields merged as apr_table_mergen does (", "), cookies joined with "; ".
  const merged = new Map<string, [string, string]>();
  r.headersIn.forEach((name, value) => {
    const k = name.toLowerCase();
    if (IGNORED_REQUEST.has(k)) return;
    // Host goes as :authority only (RFC 9113 8.3.1; httpd unsets it when :authority is set).
    if (k === 'host') return;
    const have = merged.get(k);
    if (have === undefined) merged.set(k, [camelCase(k), value]);
    else have[1] = k === 'cookie' ? `${have[1]}; ${value}` : `${have[1]}, ${value}`;
  });
  // "te: trailers" always, in the client's TE's place when it sent one (apr_table_setn).
  for (const [k, [, v]] of merged) out[k] = k === 'te' ? 'trailers' : v;
  if (!merged.has('te')) out['te'] = 'trailers';
  if (dconf.addForwardedHeaders !== false && r.proxyreq === PROXYREQ_REVERSE) {
    const mergeIn = (k: string, v: string): void => {
      const have = out[k];
      out[k] = have === undefined ? v : `${String(have)}, ${v}`;
    };
    mergeIn('x-forwarded-for', r.useragentIp);
    if (origHost !== undefined) mergeIn('x-forwarded-host', origHost);
    mergeIn('x-forwarded-server', r.server.serverHostname ?? '');
  }
  return out;
}

/** The backend URL's scheme, authority and path (open_stream). */
export function targetOf(url: string): Target | undefined {
  const m = /^(h2c?):\/\/(\[[^\]]*\]|[^/:?#]*)(?::(\d*))?([^#]*)/i.exec(url.replace(/^unix:[^|]*\|/i, ''));
  if (m === null) return undefined;
  const https = m[1]!.toLowerCase() === 'h2';
  const host = m[2]!;
  const port = m[3] !== undefined && m[3] !== '' ? Number(m[3]) : undefined;
  const def = https ? 443 : 80;
  const authority = port !== undefined && port !== def ? `${host}:${port}` : host;
  let path = m[4] ?? '';
  if (path === '' || path[0] === '?') path = '/' + path;
  return { https, scheme: m[1]!, authority, path };
}

// ---- sessions -------------------------------------------------------------------------------
// DIFFERENCE: httpd keeps a session on a pooled connection used by one client connection at a
// time; here one session per worker and backend address serves every request of the process
// as concurrent streams (docs/differences.md).
/** An HTTP/2 session to one backend address, on a connection taken from the worker's pool
 *  for the session's whole life. */
interface Session {
  readonly h2: http2.ClientHttp2Session;
  readonly conn: ProxyConn;
  /** The session can take new streams (no GOAWAY, not closed). */
  usable: boolean;
}

const SESSIONS = 'proxy_http2.sessions';

function sessionsOf(worker: ProxyWorker): Map<string, Session | Promise<Session | number>> {
  let m = worker.context.get(SESSIONS) as Map<string, Session | Promise<Session | number>> | undefined;
  if (m === undefined) { m = new Map(); worker.context.set(SESSIONS, m); }
  return m;
}

/** The session for the request's backend, connecting one when there is none (the connection
 *  errors of mod_proxy: 503 and its log lines). */
async function sessionFor(q: Ctx): Promise<Session | number> {
  const { r, api, worker } = q;
  const map = sessionsOf(worker);
  // Every request goes through acquire: a worker in error or stopped answers 503 as httpd.
  let acquired = api.acquireConnection(q.proxyFunction, worker, r.server);
  if (acquired instanceof Promise) acquired = await acquired;
  if (typeof acquired === 'number') return acquired;
  const conn = acquired;
  conn.isSsl = q.https;
  let st = await api.determineConnection(r, q.sconf, worker, conn, q.url, q.proxyname, q.proxyport);
  if (st !== OK) { api.releaseConnection(q.proxyFunction, conn, r.server); return st; }
  const key = conn.udsPath !== '' ? conn.udsPath : `${conn.hostname}:${conn.port}:${conn.isSsl ? conn.sslHostname ?? '' : ''}`;
  const have = map.get(key);
  if (have !== undefined) {
    const s = await have;
    if (typeof s !== 'number' && s.usable && !s.h2.destroyed) {
      api.releaseConnection(q.proxyFunction, conn, r.server);
      return s;
    }
    if (map.get(key) === have) map.delete(key);
  }
  const p = (async (): Promise<Session | number> => {
    conn.alpn = conn.isSsl ? ['h2'] : undefined;
    st = await api.connectBackend(q.proxyFunction, conn, worker, r);
    if (st !== OK) {
      if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH03352: H2: failed to make connection to backend: ${conn.hostname}`);
      api.releaseConnection(q.proxyFunction, conn, r.server);
      return st;
    }
    const sock = conn.socket!;
    const h2 = http2.connect(`${conn.isSsl ? 'https' : 'http'}://${q.target.authority}`, {
      createConnection: () => sock,
      settings: { enablePush: false },
    });
    const s: Session = { h2, conn, usable: true };
    const end = (): void => {
      if (!s.usable && h2.destroyed) return;
      s.usable = false;
      if (map.get(key) === p) map.delete(key);
    };
    h2.on('goaway', end);
    h2.on('error', () => { end(); });
    h2.once('close', () => {
      end();
      conn.close = true;
      api.releaseConnection(q.proxyFunction, conn, r.server);
    });
    h2.on('remoteSettings', () => { /* the backend's SETTINGS arrived */ });
    try { h2.setLocalWindowSize(CONN_WINDOW); } catch { /* before the socket is ready */ }
    // An idle session does not keep the process alive.
    h2.unref();
    return s;
  })();
  map.set(key, p);
  const s = await p;
  if (typeof s === 'number' && map.get(key) === p) map.delete(key);
  return s;
}

// ---- the request ----------------------------------------------------------------------------
interface Ctx {
  readonly r: Request;
  readonly api: ProxyApi;
  readonly worker: ProxyWorker;
  readonly sconf: ProxyServerConf;
  readonly dconf: ProxyDirConf;
  readonly url: string;
  readonly proxyname: string | undefined;
  readonly proxyport: number;
  readonly proxyFunction: string;
  readonly https: boolean;
  readonly target: Target;
}

/** How one stream ended before the response could be passed on. */
type Outcome = { kind: 'done' } | { kind: 'retry' } | { kind: 'status'; status: number };

/** process_proxy_header: the reverse mappings apply unless ProxyPreserveHost is on (Link's
 *  URIs too, h2_proxy_link_reverse_map). */
function addResponseHeader(r: Request, out: HeaderTable, dconf: ProxyDirConf, t: Target, name: string, value: string): void {
  if (dconf.preserveHost !== true) {
    const k = name.toLowerCase();
    if (k === 'location' || k === 'content-location' || k === 'uri' || k === 'destination') { out.add(name, locationReverseMap(r, dconf, value)); return; }
    if (k === 'set-cookie') { out.add(name, cookieReverseMap(r, dconf, value)); return; }
    if (k === 'link') {
      out.add(name, linkReverseMap(r, dconf, `${t.https ? 'https' : 'http'}://${t.authority}`, `${t.scheme}://${t.authority}`, value));
      return;
    }
  }
  out.add(name, value);
}

// ---- Link (RFC 5988) ------------------------------------------------------------------------
const isAlnum = (c: string): boolean => /^[A-Za-z0-9]$/.test(c);
/** A link parameter's name character (RFC 5987 attr-char). */
const attrChar = (c: string): boolean => isAlnum(c) || '!#$&+-.^_`|~'.includes(c);
/** A link parameter's unquoted value character (ptokenchar). */
const ptokenChar = (c: string): boolean => isAlnum(c) || "!#$&'()*+-./:<=>?@[]^_`{|}~".includes(c);

/** h2_proxy_link_reverse_map: each <URI> of a Link value goes through ProxyPassReverse; a
 *  relative one ("/x") is first put on the backend's URL (`pServerUri`, "h2c://host:port"),
 *  and an absolute one on the backend's http(s) URL (`realServerUri`) is moved onto it, so
 *  that ProxyPassReverse lines written for the h2/h2c URL apply; a mapped relative one loses
 *  this server's own URL again. The value is read as httpd's parser reads it: it stops at the
 *  first thing that is not a link, its parameters or a comma. */
export function linkReverseMap(r: Request, dconf: ProxyDirConf, realServerUri: string, pServerUri: string, value: string): string {
  if (r.proxyreq !== PROXYREQ_REVERSE) return value;
  let s = value;
  let i = 0;
  let serverUri: string | undefined;
  const skipWs = (): boolean => {
    while (i < s.length && (s[i] === ' ' || s[i] === '\t')) i++;
    return i < s.length;
  };
  const readChr = (c: string): boolean => {
    if (i < s.length && s[i] === c) { i++; return true; }
    return false;
  };
  const skipRun = (ok: (c: string) => boolean): boolean => {
    if (!skipWs()) return false;
    let j = i;
    while (j < s.length && ok(s[j]!)) j++;
    if (j === i) return false;
    i = j;
    return true;
  };
  const skipQstring = (): boolean => {
    if (skipWs() && readChr('"')) {
      const end = s.indexOf('"', i);
      if (end >= 0) { i = end + 1; return true; }
    }
    return false;
  };
  const skipParam = (): boolean => {
    if (!(skipWs() && readChr(';'))) return false;
    if (!skipRun(attrChar)) return false;
    // The value is optional.
    if (skipWs() && readChr('=')) { if (!skipQstring()) skipRun(ptokenChar); }
    return true;
  };
  for (;;) {
    if (!(skipWs() && readChr('<'))) break;
    const end = s.indexOf('>', i);
    if (end < 0) break;
    const start = i;
    i = end + 1;
    while (skipParam()) { /* the parameters are left as they are */ }
    if (start < end) {
      const link = s.slice(start, end);
      const relative = link[0] === '/';
      let buffer = link;
      if (relative) buffer = pServerUri + link;
      else if (realServerUri !== pServerUri && link.startsWith(realServerUri)) buffer = pServerUri + link.slice(realServerUri.length);
      let mapped = locationReverseMap(r, dconf, buffer);
      if (mapped !== buffer) {
        if (relative) {
          serverUri ??= r.rt.constructUrl(r, '');
          if (mapped.startsWith(serverUri)) mapped = mapped.slice(serverUri.length);
        }
        s = s.slice(0, start) + mapped + s.slice(end);
        if (i >= end) i += mapped.length - (end - start);
      }
    }
    if (!(skipWs() && readChr(','))) break;
  }
  if (r.wantsLog(MOD, APLOG_TRACE2)) r.log(MOD, APLOG_TRACE2, `link_reverse_map ${value} --> ${s}`);
  return s;
}

/** ap_send_interim_response for a forwarded 1xx. */
function sendInterim(r: Request, status: number, raw: readonly string[]): void {
  if (r.protoNum < 1001) return;
  const reason = status === 100 ? 'Continue' : status === 103 ? 'Early Hints' : status === 102 ? 'Processing' : '';
  let head = `HTTP/1.1 ${status} ${reason}\r\n`;
  for (let i = 0; i + 1 < raw.length; i += 2) if (!raw[i]!.startsWith(':')) head += `${camelCase(raw[i]!)}: ${raw[i + 1]!}\r\n`;
  head += '\r\n';
  r.connection.bytesOut += head.length;
  r.connection.wire.write(head, 'latin1');
}

/** One stream on the session: the request out, the response in (ctx_run). */
function runStream(q: Ctx, s: Session): Promise<Outcome> {
  const { r, dconf, sconf } = q;
  const headers = requestHeaders(r, dconf, q.target);
  const hasBody = r.body !== null && (r.body.length > 0 || r.body.chunked);
  return new Promise<Outcome>((resolve) => {
    let settled = false;
    let responded = false;
    let dataSent = false;
    const finish = (o: Outcome): void => { if (!settled) { settled = true; resolve(o); } };
    let stream: http2.ClientHttp2Stream;
    try {
      stream = s.h2.request(headers, { endStream: !hasBody });
    } catch {
      s.usable = false;
      finish({ kind: 'retry' });
      return;
    }
    const timeout = q.api.backendTimeout(q.worker, r);
    stream.setTimeout(timeout, () => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    // The body, read from the client as the backend takes it.
    if (hasBody) {
      void (async () => {
        try {
          for (let b = await r.read(); b !== null; b = await r.read()) {
            dataSent = true;
            if (!stream.write(b)) await new Promise<void>((res) => { stream.once('drain', res); stream.once('close', res); });
            if (stream.destroyed) return;
          }
          stream.end();
        } catch (e) {
          const st = e instanceof FilterError ? e.status : 400;
          stream.close(http2.constants.NGHTTP2_CANCEL);
          r.log(MOD, APLOG_ERR, `AH03351: pass request body failed to ${s.conn.hostname}:${s.conn.port} (${s.conn.hostname}) from ${r.connection.remoteIp} ()`);
          finish({ kind: 'status', status: st });
        }
      })();
    }
    stream.on('headers', (h: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader, _flags: number, raw?: string[]) => {
      const status = Number(h[':status']);
      if (status >= 100 && status < 200) {
        const forward = r.protoNum >= 2000 || (status === 100 && r.expecting100);
        if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH03487: h2_proxy_session(${r.connection.id}): got interim HEADERS, status=${status}, will forward=${forward ? 1 : 0}`);
        if (forward) sendInterim(r, status, raw ?? []);
      }
    });
    stream.on('response', (h: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader, _flags: number, raw?: string[]) => {
      responded = true;
      const st = String(h[':status'] ?? '');
      r.notes.set('proxy-status', st);
      const status = Number(st);
      if (!(status > 0)) { stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR); finish({ kind: 'status', status: 500 }); return; }
      r.status = status;
      r.statusLine = undefined;
      // The backend may end its stream with trailers: the response's trailers table exists
      // from now on, so that an HTTP/2 client's stream waits for them (mod_http2 sends
      // r->trailers_out at the end of the stream).
      r.trailersOut ??= new HeaderTable();
      const saved = r.headersOut.getAll('Set-Cookie');
      r.headersOut.clear();
      const pairs = raw ?? Object.entries(h).flatMap(([k, v]) => (Array.isArray(v) ? v.flatMap((x) => [k, x]) : [k, String(v)]));
      for (let i = 0; i + 1 < pairs.length; i += 2) {
        const k = pairs[i]!;
        if (k.startsWith(':') || IGNORED_RESPONSE.has(k)) continue;
        addResponseHeader(r, r.headersOut, dconf, q.target, camelCase(k), pairs[i + 1]!);
      }
      if (saved.length > 0) {
        const now = r.headersOut.getAll('Set-Cookie');
        r.headersOut.unset('Set-Cookie');
        for (const c of [...saved, ...now]) r.headersOut.add('Set-Cookie', c);
      }
      const ct = r.headersOut.get('Content-Type');
      if (ct !== undefined) r.contentType = ct;
      const via = sconf.viaopt ?? 'off';
      if (via !== 'off' && via !== 'block') {
        let sn = getServerName(r);
        if (sn === r.hostname) sn = r.server.serverHostname ?? sn;
        const port = getServerPort(r);
        const portStr = port === defaultPort(r) ? '' : `:${port}`;
        const v = `${Math.floor(r.protoNum / 1000)}.${r.protoNum % 1000} ${sn}${portStr}`;
        r.headersOut.add('Via', via === 'full' ? `${v} (${VIA_BANNER})` : v);
      }
      void passBody(q, stream).then(() => finish({ kind: 'done' }));
    });
    // Fields after the body go to the response's trailers, mapped as the header fields are
    // (h2_proxy_stream_add_header_out once the headers ended); an HTTP/2 client gets them as
    // its stream's trailers, an HTTP/1.1 client's last chunk carries none (as httpd 2.4).
    stream.on('trailers', (h: http2.IncomingHttpHeaders, _flags: number, raw?: string[]) => {
      const pairs = raw ?? Object.entries(h).flatMap(([k, v]) => (Array.isArray(v) ? v.flatMap((x) => [k, x]) : [k, String(v)]));
      for (let i = 0; i + 1 < pairs.length; i += 2) {
        const k = pairs[i]!;
        if (k.startsWith(':') || IGNORED_RESPONSE.has(k)) continue;
        r.trailersOut ??= new HeaderTable();
        addResponseHeader(r, r.trailersOut, dconf, q.target, camelCase(k), pairs[i + 1]!);
      }
    });
    stream.on('error', () => { /* reported through 'close' and rstCode */ });
    stream.once('close', () => {
      if (responded) return;
      const code = stream.rstCode ?? 0;
      if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH03364: h2_proxy_sesssion(${r.connection.id}): stream(${stream.id ?? 0}) closed (touched=${dataSent ? 1 : 0}, error=${code})`);
      // A stream the backend refused or a session that went away before it was touched may
      // go again on a new connection; one it reset is a bad gateway.
      if (code === 0 || code === http2.constants.NGHTTP2_REFUSED_STREAM) {
        if (!dataSent) { finish({ kind: 'retry' }); return; }
        finish({ kind: 'status', status: 503 });
        return;
      }
      finish({ kind: 'status', status: 502 });
    });
  });
}

/** The response body to the client as it arrives; a stream that fails after the response
 *  started cuts the client connection (ap_proxy_backend_broke). */
async function passBody(q: Ctx, stream: http2.ClientHttp2Stream): Promise<void> {
  const { r, api } = q;
  let received = 0;
  let first = true;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      received += chunk.length;
      if (r.connection.aborted) { stream.close(http2.constants.NGHTTP2_CANCEL); break; }
      await r.write([dataBucket(chunk)]);
      first = false;
    }
  } catch { /* the stream's end is judged below */ }
  api.countBytes(q.worker, 0, received);
  const code = stream.rstCode ?? 0;
  if (code !== 0 && code !== http2.constants.NGHTTP2_NO_ERROR) {
    api.backendBroke(r, []);
    return;
  }
  if (r.connection.aborted) return;
  await r.write([EOS]);
  void first;
}

// ---- the handler ----------------------------------------------------------------------------
/** proxy_http2_handler. */
async function handle(r: Request, worker: ProxyWorker, sconf: ProxyServerConf, url: string, proxyname: string | undefined, proxyport: number): Promise<number> {
  const m = /^(h2c?):\/\/./i.exec(url);
  if (m === null) return DECLINED;
  const https = m[1]!.toLowerCase() === 'h2';
  const target = targetOf(url);
  if (target === undefined) return DECLINED;
  const api = apiOf(r);
  const q: Ctx = {
    r, api, worker, sconf, dconf: api.dirConf(r), url, proxyname, proxyport,
    proxyFunction: https ? 'H2' : 'H2C', https, target,
  };
  for (let reconnects = 0; ; reconnects++) {
    if (r.connection.aborted) return OK;
    const s = await sessionFor(q);
    if (typeof s === 'number') return s;
    const o = await runStream(q, s);
    if (o.kind === 'done') return OK;
    if (o.kind === 'status') return o.status;
    s.usable = false;
    if (reconnects >= 1) {
      if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH10023: giving up after ${reconnects + 1} reconnects, request-done=0`);
      return 503;
    }
  }
}

const provider: ProxySchemeProvider = { canon, handle };

const decl: ModuleDecl<undefined, undefined> = {
  name: 'proxy_http2_module',
  source: 'mod_proxy_http2.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'proxy_scheme', name: 'http2', version: '0', provider }],
};

export default defineModule(decl);
