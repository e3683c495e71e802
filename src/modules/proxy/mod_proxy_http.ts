// mod_proxy_http (modules/proxy/mod_proxy_http.c): HTTP/1.1 to backends for http://, https://,
// ws:// and wss:// URLs — the request as ap_proxy_create_hdrbrgd builds it (Host, Via,
// X-Forwarded-*, hop-by-hop fields), the body streamed with Content-Length or chunked
// (proxy-sendchunked, proxy-sendcl, force-proxy-request-1.0), the response read and passed
// on as it arrives (ProxyPassReverse on Location/Content-Location/URI/Destination, cookie
// rewriting, Via, ProxyErrorOverride, interim responses, Upgrade tunnelling) and httpd's
// errors (AH01114, AH01102, AH01106, AH01110, ...). It reaches mod_proxy only through the
// "proxy_api" provider.

import {
  defineModule, MODULE_API_VERSION, DECLINED, DONE, OK, type ModuleDecl,
} from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { coreDir } from '../../server/core/config.js';
import { dataBucket, EOS, FLUSH, FilterError, FTYPE_PROTOCOL, type Bucket } from '../../server/filters.js';
import { defaultPort, getServerName, getServerPort } from '../../server/core/server-name.js';
import { APACHE_COMPAT_VERSION } from '../../server/version.js';
import {
  PROXYREQ_PROXY, PROXYREQ_REVERSE, ProxyIoError,
  type ProxyApi, type ProxyConn, type ProxyDirConf, type ProxySchemeProvider, type ProxyServerConf, type ProxyWorker, type BackendReader,
} from '../../proxy/api.js';
import { cookieReverseMap, locationReverseMap } from './reverse-map.js';
import {
  ChunkedDecoder, ChunkError, dateCanon, headerLine, parseStatusLine, fieldKind as kindOf,
  F_PLAIN as PLAIN, F_DATE as DATE, F_URL as URL_FIELD, F_COOKIE as COOKIE, F_HOP as HOP, F_CONNECTION as CONNECTION, F_UPGRADE as UPGRADE,
} from './http-response.js';

const MOD = 'proxy_http';
const MAX_MEM_SPOOL = 16384;
/** AP_SERVER_BASEVERSION, as ProxyVia Full prints it. */
const VIA_BANNER = `Apache/${APACHE_COMPAT_VERSION}`;

function apiOf(r: Request): ProxyApi {
  return r.rt.ctx.provider('proxy_api', 'mod_proxy')!;
}

// ---- canon ----------------------------------------------------------------------------------
/** The canonical "proxy:" names of the URLs seen last, by URL and what else decides them (a
 *  bounded memo: a backend's URLs repeat; canonNetloc and canonenc depend on their arguments
 *  alone). The query string is added per request. */
const canonMemo = new Map<string, string>();

/** proxy_http_canon. */
function canon(r: Request, url: string): number {
  let nocanon = false;
  let keepSlashes = false;
  if (r.proxyreq !== PROXYREQ_PROXY) {
    nocanon = r.notes.has('proxy-nocanon') || r.notes.has('proxy-noencode');
    keepSlashes = !nocanon && coreDir(r).allowEncodedSlashes === 'nodecode';
  }
  const key = `${r.proxyreq}${nocanon ? 'n' : keepSlashes ? 'k' : '-'}${url}`;
  const known = canonMemo.get(key);
  if (known !== undefined) {
    const search = r.proxyreq === PROXYREQ_PROXY ? undefined : r.args;
    r.filename = search !== undefined ? `${known}?${search}` : known;
    return OK;
  }
  const m = /^(https?|wss?):/i.exec(url);
  if (m === null) return DECLINED;
  const scheme = m[1]!.toLowerCase();
  const api = apiOf(r);
  const def = api.portOfScheme(scheme);
  const nl = api.canonNetloc(url.slice(m[0].length), def);
  if (typeof nl === 'string') {
    r.log(MOD, APLOG_ERR, `AH01083: error parsing URL ${url.slice(m[0].length)}: ${nl}`);
    return 400;
  }
  let path: string;
  let search: string | undefined;
  if (r.proxyreq === PROXYREQ_PROXY) {
    path = nl.rest;
  } else {
    if (nocanon) {
      path = nl.rest;
    } else {
      const enc = api.canonenc(nl.rest, 'path', false, r.proxyreq === PROXYREQ_REVERSE ? PROXYREQ_REVERSE : PROXYREQ_PROXY, keepSlashes);
      if (enc === undefined) return 400;
      path = enc;
    }
    search = r.args; // httpd's canon_handler ignores the noquery note (only ajp reads it)
  }
  const sport = nl.port !== def ? `:${nl.port}` : '';
  const host = nl.host.includes(':') && !nl.host.startsWith('[') ? `[${nl.host}]` : nl.host;
  const name = `proxy:${scheme}://${host}${sport}${path}`;
  if (canonMemo.size >= 256) canonMemo.clear();
  canonMemo.set(key, name);
  r.filename = search !== undefined ? `${name}?${search}` : name;
  return OK;
}

// ---- reverse mapping: reverse-map.ts (shared with mod_proxy_http2) ---------------------------
export { locationReverseMap, cookieReverseMap };

/** process_proxy_header: dates canonicalised, URLs and cookies reverse-mapped; hop-by-hop
 *  fields and Connection left out (the caller keeps what it needs of them). Returns the
 *  field's kind. */
function processHeader(r: Request, dc: ProxyDirConf, name: string, value: string): number {
  const k = kindOf(name);
  if (k === PLAIN) r.headersOut.add(name, value);
  else if (k === DATE) r.headersOut.add(name, dateCanon(value));
  else if (k === URL_FIELD) r.headersOut.add(name, locationReverseMap(r, dc, value));
  else if (k === COOKIE) r.headersOut.add(name, cookieReverseMap(r, dc, value));
  return k;
}

// ---- the request ----------------------------------------------------------------------------
interface Req {
  r: Request;
  api: ProxyApi;
  worker: ProxyWorker;
  sconf: ProxyServerConf;
  dconf: ProxyDirConf;
  conn: ProxyConn;
  url: string;
  /** The backend URL's host, port given, path. */
  host: string;
  portStr: string | undefined;
  path: string;
  force10: boolean;
  /** 100-continue end to end (Proxy100Continue) or as a ping of the backend (ping=): the
   *  head goes first with "Expect: 100-Continue", the body once the backend asked for it. */
  do100: boolean;
  upgrade: string | undefined;
  serverPortStr: string;
  proxyFunction: string;
}

/** ap_proxy_worker_can_upgrade. */
function canUpgrade(w: ProxyWorker, upgrade: string, dflt: string | undefined): boolean {
  const allowed = w.params.upgrade ?? dflt;
  if (allowed === undefined || allowed.toLowerCase() === 'none') return false;
  if (allowed === '*') return true;
  const want = upgrade.split(',').map((t) => t.trim().toLowerCase());
  return allowed.split(',').some((a) => want.includes(a.trim().toLowerCase()));
}

function hasToken(v: string | undefined, tok: string): boolean {
  return v !== undefined && v.split(',').some((t) => t.trim().toLowerCase() === tok);
}

/** The request to send: its head, how the body goes, what of the body was read ahead. */
interface Built { head: string; body: 'none' | 'cl' | 'chunked'; prefetched: Buffer[]; ended: boolean; cl: number }

/** ap_proxy_create_hdrbrgd + the body framing of ap_proxy_http_prefetch: the head to send and
 *  how the body goes (or a status). Without a body to read, no promise. */
function buildRequest(q: Req): Built | number | Promise<Built | number> {
  const { r, conn } = q;
  const env = r.subprocessEnv;
  if (q.force10 || env.has('proxy-nokeepalive')) conn.close = true;
  const created = q.api.createHeaders(r, conn, { target: q.path, host: q.host, portStr: q.portStr, serverPortStr: q.serverPortStr, force10: q.force10, expect100: q.do100 });
  let { oldCl, oldTe } = created;
  const head = created.head;
  if (r.main !== null && r.keptBody === null) {
    conn.close = true;
    return finishHead(q, head, 'none', undefined, [], true);
  }
  if (oldTe !== undefined && oldTe.toLowerCase() !== 'chunked') {
    r.log(MOD, APLOG_ERR, `AH01093: ${oldTe} Transfer-Encoding is not supported`);
    return 500;
  }
  if (oldCl !== undefined && oldTe !== undefined) { oldCl = undefined; conn.close = true; }
  const hasBody = r.body !== null && (r.body.length > 0 || r.body.chunked);
  if (!hasBody) {
    // Nothing to read: a client's Content-Length or Transfer-Encoding becomes "0".
    return oldCl !== undefined || oldTe !== undefined ? finishHead(q, head, 'cl', '0', [], true) : finishHead(q, head, 'none', oldCl, [], true);
  }
  return prefetchBody(q, head, oldCl, oldTe);
}

/** The body of buildRequest: prefetch up to 16 KB to decide between Content-Length and chunked. */
async function prefetchBody(q: Req, head: string, oldCl: string | undefined, oldTe: string | undefined): Promise<Built | number> {
  const { r } = q;
  const env = r.subprocessEnv;
  let body: 'none' | 'cl' | 'chunked' = 'none';
  const prefetched: Buffer[] = [];
  let bytes = 0;
  let ended = false;
  // With 100-continue nothing is read before the backend asks for the body (httpd's
  // nonblocking prefetch finds nothing there: the client waits for its 100 Continue).
  if (!q.do100) {
    try {
      while (bytes < MAX_MEM_SPOOL - 80) {
        const b = await r.read();
        if (b === null) { ended = true; break; }
        prefetched.push(b);
        bytes += b.length;
      }
    } catch (e) {
      return e instanceof FilterError ? e.status : 400;
    }
  }
  // The body's framing, as ap_proxy_http_prefetch decides it: all of it read ahead, a
  // length; else chunked, or spooled for a length (proxy-sendcl, force-proxy-request-1.0);
  // a client's Content-Length is passed on as it is unless an input filter may change the
  // body's length (then proxy-sendchunked chooses chunked over spooling).
  const sendChunks = (env.has('proxy-sendchunks') || env.has('proxy-sendchunked')) && !env.has('proxy-sendcl');
  let spool = false;
  if (ended) {
    if (oldCl !== undefined || oldTe !== undefined || bytes > 0) { oldCl = String(bytes); body = 'cl'; }
  } else if (oldTe !== undefined) {
    if (q.force10 || (env.has('proxy-sendcl') && !env.has('proxy-sendchunks') && !env.has('proxy-sendchunked'))) spool = true;
    else body = 'chunked';
  } else if (oldCl !== undefined) {
    if (!r.inputFilters.some((f) => f.spec.type < FTYPE_PROTOCOL)) body = 'cl';
    else if (!q.force10 && sendChunks) body = 'chunked';
    else spool = true;
  } else spool = true;
  if (spool) {
    // RB_SPOOL_CL: the whole body first (httpd spools to a file past 16 KB).
    try {
      for (let b = await r.read(); b !== null; b = await r.read()) { prefetched.push(b); bytes += b.length; }
    } catch (e) {
      return e instanceof FilterError ? e.status : 400;
    }
    ended = true;
    if (bytes > 0 || oldTe !== undefined || oldCl !== undefined) { oldCl = String(bytes); body = 'cl'; }
  }
  return finishHead(q, head, body, oldCl, prefetched, ended);
}

/** The head's framing and Connection fields and its end. */
function finishHead(q: Req, head: string, body: 'none' | 'cl' | 'chunked', cl: string | undefined, prefetched: Buffer[], ended: boolean): Built {
  if (body === 'chunked') head += 'Transfer-Encoding: chunked\r\n';
  else if (body === 'cl' && cl !== undefined) head += `Content-Length: ${cl}\r\n`;
  if (!q.force10) {
    if (q.upgrade !== undefined) head += `Connection: Upgrade\r\nUpgrade: ${q.upgrade}\r\n`;
    else if (!q.conn.close && q.worker.params.disablereuse !== true && !q.worker.generic) head += 'Connection: Keep-Alive\r\n';
    else head += 'Connection: close\r\n';
  }
  head += '\r\n';
  return { head, body, prefetched, ended, cl: body === 'cl' && cl !== undefined ? Number(cl) : -1 };
}

/** Writes to the backend connection (its plain stream, or its socket): true once the bytes
 *  are taken (after 'drain' when the stream holds too much), false when the write failed. */
function writeTo(conn: ProxyConn, data: Buffer | string): Promise<boolean> {
  const st = conn.stream;
  if (st !== null) {
    if (st.destroyed) return Promise.resolve(false);
    const ok = typeof data === 'string' ? st.write(data, 'latin1') : st.write(data);
    if (st.destroyed) return Promise.resolve(false);
    if (ok) return Promise.resolve(true);
    return new Promise((res) => {
      const drained = (): void => { st.off('close', closed); res(true); };
      const closed = (): void => { st.off('drain', drained); res(false); };
      st.once('drain', drained);
      st.once('close', closed);
    });
  }
  const s = conn.socket;
  if (s === null || s.destroyed) return Promise.resolve(false);
  return new Promise((res) => {
    s.write(data, 'latin1', (e) => res(e == null));
  });
}

/** The request heads written during this event-loop turn go to their backends together at its
 *  end (the check phase), as the server's responses go to their clients: a backend on the
 *  same CPU is then woken once for the turn's requests instead of taking the CPU from this
 *  process after each one. Measured with plume (1 worker) and a bare Node backend on one CPU,
 *  1 KB through ProxyPass at 50 connections, alternating with the build before: 79-100 µs of
 *  the worker's CPU per request against 104-121 µs. */
interface TurnHead { conn: ProxyConn; data: Buffer | string; done: (ok: boolean) => void }
let turnHeads: TurnHead[] = [];
function writeTurnHeads(): void {
  const list = turnHeads;
  turnHeads = [];
  for (let i = 0; i < list.length; i++) {
    const h = list[i]!;
    const st = h.conn.stream;
    // A plain stream takes a head at once (a few hundred bytes: never past its high-water mark).
    if (st !== null) {
      // A head is a few hundred bytes: a plain stream takes it at once (false: it failed, or
      // it holds more than its high-water mark, which a head alone never makes it do).
      if (st.destroyed) h.done(false);
      else { st.write(h.data, 'latin1'); h.done(!st.destroyed); }
    } else void writeTo(h.conn, h.data).then(h.done);
  }
}
function writeHeadAtTurnEnd(conn: ProxyConn, data: Buffer | string): Promise<boolean> {
  return new Promise((done) => {
    turnHeads.push({ conn, data, done });
    if (turnHeads.length === 1) setImmediate(writeTurnHeads);
  });
}

/** The body could not be passed to the backend (AH01084). */
function passFailed(q: Req): number {
  const { r, conn } = q;
  r.log(MOD, APLOG_ERR, `AH01084: pass request body failed to ${(conn as ProxyConn & { addr?: string }).addr ?? conn.hostname + ':' + conn.port} (${conn.hostname})`);
  conn.close = true;
  if (r.connection.aborted) return 400;
  return 503;
}

/** Sends the request and its body (stream_reqbody); OK or a status. */
async function sendRequest(q: Req, built: { head: string; body: 'none' | 'cl' | 'chunked'; prefetched: Buffer[]; ended: boolean; cl: number }): Promise<number> {
  const { r, conn } = q;
  const chunked = built.body === 'chunked';
  const frame = (b: Buffer): Buffer[] => (chunked ? [Buffer.from(b.length.toString(16) + '\r\n', 'latin1'), b, Buffer.from('\r\n')] : [b]);
  const failed = (): number => passFailed(q);
  if (q.do100 || (built.prefetched.length === 0 && !(built.ended && chunked))) {
    // The head alone (the common case: a request without a body), written as it is.
    if (!(await writeHeadAtTurnEnd(conn, built.head))) return failed();
    q.api.countBytes(q.worker, built.head.length, 0);
    if (q.do100 || built.ended) return OK;
    return streamBody(q, built, failed);
  }
  let out: Buffer[] = [Buffer.from(built.head, 'latin1')];
  let sent = 0;
  for (const b of built.prefetched) out.push(...frame(b));
  if (built.ended && chunked) out.push(Buffer.from('0\r\n\r\n'));
  const first = out.length === 1 ? out[0]! : Buffer.concat(out);
  sent += first.length;
  if (!(await writeHeadAtTurnEnd(conn, first))) return failed();
  q.api.countBytes(q.worker, sent, 0);
  if (built.ended) return OK;
  return streamBody(q, built, failed);
}

/** The body after what was read ahead (send_continue_body when 100-continue held it back). */
async function streamBody(q: Req, built: { body: 'none' | 'cl' | 'chunked'; ended: boolean; cl: number; prefetched: Buffer[] }, failed: () => number = () => passFailed(q)): Promise<number> {
  const { r, conn } = q;
  const chunked = built.body === 'chunked';
  const frame = (b: Buffer): Buffer[] => (chunked ? [Buffer.from(b.length.toString(16) + '\r\n', 'latin1'), b, Buffer.from('\r\n')] : [b]);
  let out: Buffer[];
  let sent = 0;
  let bodyBytes = 0;
  for (const b of built.prefetched) bodyBytes += b.length;
  if (!built.ended) {
    try {
      for (let b = await r.read(); b !== null; b = await r.read()) {
        bodyBytes += b.length;
        out = frame(b);
        const buf = out.length === 1 ? out[0]! : Buffer.concat(out);
        sent += buf.length;
        if (!(await writeTo(conn, buf))) return failed();
      }
    } catch (e) {
      conn.close = true;
      r.log(MOD, APLOG_ERR, `AH02608: read request body failed to ${conn.hostname}:${conn.port} from ${r.useragentIp} (${r.connection.remoteHost ?? ''})`);
      return e instanceof FilterError ? e.status : 400;
    }
    if (chunked && !(await writeTo(conn, '0\r\n\r\n'))) return failed();
    if (built.body === 'cl' && bodyBytes < built.cl) {
      // The client's body ended short of its Content-Length (stream_reqbody).
      conn.close = true;
      r.log(MOD, APLOG_ERR, `AH01086: read less bytes of request body than expected (got ${bodyBytes}, expected ${built.cl})`);
      r.log(MOD, APLOG_ERR, `AH10154: pass request body failed to ${(conn as ProxyConn & { addr?: string }).addr ?? conn.hostname + ':' + conn.port} (${conn.hostname}) from ${r.useragentIp} (${r.connection.remoteHost ?? ''}) with status 500`);
      return 500;
    }
  }
  q.api.countBytes(q.worker, sent, 0);
  return OK;
}

/** AP_MAX_INTERIM_RESPONSES: how many 1xx responses in a row a backend may send. */
const MAX_INTERIM_RESPONSES = 10;

/** ap_proxy_http_process_response. */
async function processResponse(q: Req, normal: BackendReader, built: { body: 'none' | 'cl' | 'chunked'; ended: boolean; cl: number; prefetched: Buffer[] }): Promise<number> {
  const { r, conn, dconf, sconf, api } = q;
  const maxLine = q.worker.params.responsefieldsize ?? 8192;
  const badopt = sconf.badopt ?? 'error';
  // The backend's answer to a 100-continue "ping" is awaited for ping= at most.
  const ping = q.do100 && q.worker.params.ping !== undefined ? api.reader(conn, r, q.worker.params.ping) : undefined;
  let rd = ping ?? normal;
  let interimCount = 0;
  for (;;) {
    let line: string | null;
    // The head read in one piece (the usual case): its lines at once; else line by line.
    let lines = rd.headNow(maxLine);
    let li = 1;
    try {
      if (lines === undefined) {
        const w = rd.ready();
        if (w !== true && !(await w)) throw new ProxyIoError('timeout', 'The timeout specified has expired');
        lines = rd.headNow(maxLine);
      }
      if (lines !== undefined) line = lines[0]!;
      else {
        line = rd.lineNow(maxLine) ?? await rd.readLine(maxLine);
        if (line === '') line = rd.lineNow(maxLine) ?? await rd.readLine(maxLine);
      }
    } catch (e) {
      const timedOut = e instanceof ProxyIoError && e.kind === 'timeout';
      r.log(MOD, APLOG_ERR, `AH01102: error reading status line from remote server ${conn.hostname}:${conn.port}`, timedOut ? { code: 70007, text: 'The timeout specified has expired' } : { code: 104, text: 'Connection reset by peer' });
      conn.close = true;
      if (timedOut) {
        r.notes.set('proxy_timedout', '1');
        r.log(MOD, APLOG_DEBUG, 'AH01103: read timeout');
        if (q.do100) return api.proxyError(r, 503, 'Timeout on 100-Continue');
      }
      return api.proxyError(r, 502, 'Error reading from remote server');
    }
    if (line === null || line === '') {
      r.log(MOD, APLOG_ERR, `AH01102: error reading status line from remote server ${conn.hostname}:${conn.port}`, { code: 20014, text: 'Internal error (specific information not available)' });
      conn.close = true;
      return api.proxyError(r, 502, 'Error reading from remote server');
    }
    api.countBytes(q.worker, 0, line.length);
    const st = parseStatusLine(line);
    let backasswards = false;
    let major = 1; let minor = 1;
    let te: string | undefined;
    let proxyStatus: number;
    let keptLine: string | undefined;
    if (st !== undefined) {
      major = st.major; minor = st.minor;
      if (major !== 1 || line.length >= maxLine - 1) {
        conn.close = true;
        return api.proxyError(r, 502, `Corrupt status line returned by remote server: ${line}`);
      }
      proxyStatus = st.status;
      r.notes.set('proxy-status', line.slice(9));
      r.status = proxyStatus;
      r.statusLine = st.statusLine;
      const savedCookies = r.headersOut.getAll('Set-Cookie');
      r.headersOut = new (r.headersOut.constructor as new () => typeof r.headersOut)();
      let saw = false;
      /** Bytes of the head (lines and their CR LF) read so far. */
      let headBytes = line.length + 2;
      let lastName: string | undefined;
      let lastValue = '';
      // Which fields processResponse has to take out afterwards (none, usually).
      // The first Connection and Upgrade values (as the table's get would give them).
      let connValue: string | undefined;
      let upgrade: string | undefined;
      let bad = false;
      try {
        for (;;) {
          const hl = lines !== undefined ? (li < lines.length ? lines[li++]! : '') : rd.lineNow(maxLine) ?? await rd.readLine(maxLine);
          if (hl === null) { bad = true; break; }
          headBytes += hl.length + 2;
          if (hl === '') break;
          const c0 = hl.charCodeAt(0);
          if ((c0 === 32 || c0 === 9) && lastName !== undefined) { lastValue += ' ' + hl.trim(); continue; }
          const res = headerLine(hl, badopt, saw);
          if (res.kind === 'field') {
            if (lastName !== undefined) {
              const k = processHeader(r, dconf, lastName, lastValue);
              if (k === CONNECTION) connValue ??= lastValue; else if (k === UPGRADE) upgrade ??= lastValue;
            }
            lastName = res.name; lastValue = res.value; saw = true;
            continue;
          }
          if (res.kind === 'error') { bad = true; break; }
          if (res.kind === 'body') {
            r.log(MOD, APLOG_WARNING, res.sawHeaders ? `AH01098: Starting body due to bogus non-header in headers returned by ${r.uri} (${r.method})` : `AH01099: No HTTP headers returned by ${r.uri} (${r.method})`);
            // httpd keeps the length of the bogus line (pread_len) but not the line: the
            // body starts with the line after it.
            if (!res.sawHeaders) keptLine = hl + '\r\n';
            break;
          }
          r.log(MOD, APLOG_WARNING, `AH01100: Ignoring bogus HTTP header returned by ${r.uri} (${r.method})`);
        }
      } catch (e) {
        if (e instanceof ProxyIoError && e.kind === 'toolong') r.log(MOD, APLOG_WARNING, `AH10124: header size is over the limit allowed by ResponseFieldSize (${maxLine} bytes).`);
        else r.log(MOD, APLOG_WARNING, 'AH10404: Error reading headers from backend');
        bad = true;
      }
      // A head seen whole is taken off the stream up to the line the loop stopped after.
      if (lines !== undefined) rd.skip(headBytes);
      if (lastName !== undefined) {
        const k = processHeader(r, dconf, lastName, lastValue);
        if (k === CONNECTION) connValue ??= lastValue; else if (k === UPGRADE) upgrade ??= lastValue;
      }
      if (bad) {
        r.log(MOD, APLOG_WARNING, `AH01106: bad HTTP/${major}.${minor} header returned by ${r.uri} (${r.method})`);
        conn.close = true;
        r.headersOut.clear();
        r.status = 502;
        r.statusLine = 'bad gateway';
        return 502;
      }
      if (savedCookies.length > 0) {
        const now = r.headersOut.getAll('Set-Cookie');
        r.headersOut.unset('Set-Cookie');
        for (const c of [...savedCookies, ...now]) r.headersOut.add('Set-Cookie', c);
      }
      te = r.headersOut.get('Transfer-Encoding');
      if (te !== undefined && r.headersOut.has('Content-Length')) {
        r.headersOut.unset('Content-Length');
        r.log(MOD, APLOG_DEBUG, `AH01107: server ${conn.hostname}:${conn.port} returned Transfer-Encoding and Content-Length`);
        conn.close = true;
      }
      if (proxyStatus === 101) {
        if (upgrade === undefined || q.upgrade === undefined || upgrade.toLowerCase() !== q.upgrade.toLowerCase()) {
          return api.proxyError(r, 502, `Unexpected Upgrade: ${upgrade ?? 'n/a'} (expecting ${q.upgrade ?? 'n/a'})`);
        }
        conn.close = true;
      }
      let toclose = false;
      // ap_proxy_clear_connection: the fields the Connection field names go (it and the
      // hop-by-hop ones never went in).
      if (connValue !== undefined && clearConnectionTokens(r.headersOut, connValue)) { conn.close = true; toclose = true; }
      const ct = r.headersOut.get('Content-Type');
      if (ct !== undefined) r.contentType = ct;
      if (via(sconf) !== 'off' && via(sconf) !== 'block') {
        let sn = getServerName(r);
        if (sn === r.hostname) sn = r.server.serverHostname ?? sn;
        const v = `${Math.floor(r.protoNum / 1000)}.${r.protoNum % 1000} ${sn}${q.serverPortStr}`;
        r.headersOut.add('Via', via(sconf) === 'full' ? `${v} (${VIA_BANNER})` : v);
      }
      // httpd closes the backend connection (its conn_rec, origin), not the client's.
      if (major < 1 || minor < 1) conn.close = true;
      const interim = proxyStatus >= 100 && proxyStatus < 200;
      if (interim && proxyStatus !== 101) {
        // proxy-interim-response: RFC forwards every interim response (a 100 Continue even
        // to a client that did not ask for one), Suppress none; unset, as ap_send_interim_response.
        const policy = r.subprocessEnv.get('proxy-interim-response');
        const rfc = policy !== undefined && policy.toLowerCase() === 'rfc';
        if (policy === undefined || rfc) {
          if (rfc && proxyStatus === 100) r.expecting100 = true;
          sendInterim(r, proxyStatus, st.statusLine);
        } else if (policy.toLowerCase() !== 'suppress') {
          r.log(MOD, APLOG_WARNING, 'AH01108: undefined proxy interim response policy');
        }
      }
      if (q.do100 && (!interim || proxyStatus === 100)) {
        // The backend asked for the body (100), or answered without reading it: the body
        // goes unless that answer closes the connection (RFC 7231 5.1.1).
        q.do100 = false;
        rd = normal;
        const send = proxyStatus === 100 || (!toclose && major > 0 && minor > 0);
        r.log(MOD, APLOG_DEBUG, `AH10153: HTTP: ${proxyStatus !== 100 ? 'no ' : ''}100 continue sent by ${(conn as ProxyConn & { addr?: string }).addr ?? conn.hostname} (${conn.hostname}): ${send ? '' : 'not '}sending body (response: HTTP/${major}.${minor} ${st.statusLine})`);
        if (send) {
          const bs = await streamBody(q, built);
          if (bs !== OK) return bs;
        }
      }
      if (interim) {
        if (proxyStatus === 101) {
          if (q.do100) {
            // The body still held back by 100-continue goes before the tunnel.
            q.do100 = false;
            r.expecting100 = false;
            const bs = await streamBody(q, built);
            if (bs !== OK) return bs;
          }
          // ap_send_interim_response with the backend's fields, Connection and Upgrade set.
          r.headersOut.set('Connection', 'Upgrade');
          r.headersOut.set('Upgrade', upgrade!);
          const switched = sendInterim(r, 101, '101 Switching Protocols');
          r.headersSent = true;
          r.eosSent = true;
          if (!switched) {
            // An HTTP/2 WebSocket CONNECT whose switch mod_http2 refused (502 sent): no tunnel.
            r.connection.keepAlive = false;
            r.status = 502;
            return DONE;
          }
          r.log(MOD, APLOG_DEBUG, `AH10239: HTTP: tunneling protocol ${upgrade}`);
          const idle = api.backendTimeout(q.worker, r);
          await api.tunnel(r, conn, idle);
          r.connection.keepAlive = false;
          r.status = 101;
          return DONE;
        }
        r.headersOut.clear();
        r.status = 200;
        r.statusLine = undefined;
        // AP_MAX_INTERIM_RESPONSES: a backend sending 1xx without end is cut off at the tenth.
        if (++interimCount >= MAX_INTERIM_RESPONSES) {
          return api.proxyError(r, 502, `Too many (${interimCount}) interim responses from origin server`);
        }
        continue;
      }
    } else {
      // An HTTP/0.9 response: the line is body, without its line end (httpd puts back the
      // line as read, CRLF stripped: measured on 2.4.71, "HTTP/1.1 abc Broken" + the rest).
      backasswards = true;
      proxyStatus = 200;
      r.status = 200;
      r.statusLine = '200 OK';
      conn.close = true;
      keptLine = line;
    }

    // ProxyErrorOverride: the backend's error body is dropped, our own error page is sent.
    if (shouldOverride(dconf, proxyStatus)) {
      if (proxyStatus === 401) {
        const wa = r.headersOut.get('WWW-Authenticate');
        if (wa !== undefined) r.errHeadersOut.set('WWW-Authenticate', wa);
        else r.log(MOD, APLOG_DEBUG, 'AH01109: origin server sent 401 without WWW-Authenticate header');
      }
      r.status = 200;
      if (!r.headerOnly) await drainBody(q, rd, te, proxyStatus);
      r.notes.set('proxy-error-override', '1');
      r.statusLine = undefined;
      return proxyStatus;
    }
    if (r.headersOut.has('Upgrade') && q.upgrade === undefined) r.headersOut.unset('Upgrade');
    return await sendBody(q, rd, te, proxyStatus, keptLine, backasswards);
  }
}

/** The fields a Connection value names taken out of `out` (those never put in skipped); true
 *  when it says close. */
function clearConnectionTokens(out: Request['headersOut'], v: string): boolean {
  // The usual values: "keep-alive" (a field never put in) and "close".
  if (v.length === 10 && kindOf(v) === HOP) return false;
  if (v.length === 5 && v.toLowerCase() === 'close') return true;
  let close = false;
  for (const tok of v.split(',')) {
    const t = tok.trim();
    if (t === '') continue;
    if (t.toLowerCase() === 'close') close = true;
    else {
      const k = kindOf(t);
      if (k !== HOP && k !== UPGRADE && k !== CONNECTION) out.unset(t);
    }
  }
  return close;
}

function via(sconf: ProxyServerConf): string { return sconf.viaopt ?? 'off'; }

/** ap_proxy_should_override. */
function shouldOverride(dc: ProxyDirConf, status: number): boolean {
  if (dc.errorOverride !== true) return false;
  if (dc.errorOverrideCodes.length === 0) return status >= 400 && status < 600;
  return dc.errorOverrideCodes.includes(status);
}

/** ap_send_interim_response: the status line and the response's fields so far; on HTTP/2
 *  the stream's interim HEADERS (a 101 there is a WebSocket CONNECT's switch). False when the
 *  switch was refused. A 100 Continue goes only to a client waiting for one, and once. */
function sendInterim(r: Request, status: number, statusLine: string): boolean {
  if (status === 100) {
    if (!r.expecting100) return true;
    r.expecting100 = false;
  }
  const framed = r.connection.wire.framed;
  if (framed !== undefined) return framed.interim(status, r.headersOut);
  if (r.protoNum < 1001) return true;
  let head = `HTTP/1.1 ${statusLine}\r\n`;
  r.headersOut.forEach((n, v) => { head += `${n}: ${v}\r\n`; });
  head += '\r\n';
  r.connection.bytesOut += head.length;
  r.connection.wire.write(head, 'latin1');
  return true;
}

/** How the body is framed: chunked, a length, or until the backend closes. */
function framing(q: Req, te: string | undefined, status: number): { kind: 'none' } | { kind: 'chunked' } | { kind: 'length'; n: number } | { kind: 'close' } {
  if (q.r.method === 'HEAD' || status === 204 || status === 304) return { kind: 'none' };
  if (te !== undefined && hasToken(te, 'chunked')) return { kind: 'chunked' };
  const cl = q.r.headersOut.get('Content-Length');
  if (cl !== undefined && /^\d+$/.test(cl.trim())) return { kind: 'length', n: Number(cl.trim()) };
  q.conn.close = true;
  return { kind: 'close' };
}

async function drainBody(q: Req, rd: BackendReader, te: string | undefined, status: number): Promise<void> {
  const f = framing(q, te, status);
  try {
    if (f.kind === 'none') return;
    if (f.kind === 'length') {
      let left = f.n;
      while (left > 0) { const b = await rd.read(Math.min(left, 65536)); if (b === null) break; left -= b.length; }
      return;
    }
    if (f.kind === 'chunked') {
      const dec = new ChunkedDecoder();
      while (!dec.done) { const b = await rd.read(65536); if (b === null) break; const { rest } = dec.push(b); if (rest) rd.unread(rest); }
      return;
    }
    while ((await rd.read(65536)) !== null) { /* until close */ }
  } catch {
    q.conn.close = true;
  }
}

/** The body to the client as it arrives (httpd flushes whenever the backend has nothing more
 *  ready, so nothing waits for the whole body). */
async function sendBody(q: Req, rd: BackendReader, te: string | undefined, status: number, kept: string | undefined, backasswards: boolean): Promise<number> {
  const { r, conn, api } = q;
  const f = backasswards ? { kind: 'close' as const } : framing(q, te, status);
  if (te !== undefined) r.headersOut.unset('Transfer-Encoding');
  const ioSize = q.worker.params.iobuffersize ?? q.sconf.ioBufferSize ?? 8192;
  const pieces: Buffer[] = kept !== undefined ? [Buffer.from(kept, 'latin1')] : [];
  if (f.kind === 'none') {
    await r.write([...pieces.map((b) => dataBucket(b)), EOS]);
    return OK;
  }
  let left = f.kind === 'length' ? f.n : Infinity;
  const dec = f.kind === 'chunked' ? new ChunkedDecoder() : null;
  let received = 0;
  let first = true;
  try {
    for (;;) {
      if (r.connection.aborted) { conn.close = true; return OK; }
      if (f.kind === 'length' && left <= 0) break;
      if (dec !== null && dec.done) break;
      const max = f.kind === 'length' ? Math.min(left, Math.max(ioSize, 65536)) : Math.max(ioSize, 65536);
      const b = rd.readNow(max) ?? await rd.read(max);
      if (b === null) {
        if (f.kind === 'close') break;
        throw new ProxyIoError('closed', 'End of file found');
      }
      received += b.length;
      let data: Buffer[];
      if (dec !== null) {
        const res = dec.push(b);
        data = res.data;
        if (res.rest !== null) rd.unread(res.rest);
      } else {
        data = [b];
        left -= b.length;
      }
      const buckets: Bucket[] = [];
      for (let i = 0; i < pieces.length; i++) buckets.push(dataBucket(pieces[i]!));
      for (let i = 0; i < data.length; i++) buckets.push(dataBucket(data[i]!));
      pieces.length = 0;
      const finished = (f.kind === 'length' && left <= 0) || (dec !== null && dec.done);
      // Without a Content-Length from the backend, httpd passes what it read on (with a flush
      // when the backend has nothing more ready) before the end of the body comes: the client
      // gets the body chunked, and the backend's trailers are not merged into headers long sent.
      const unsized = f.kind !== 'length';
      if (finished) {
        if (unsized && buckets.length > 0) await r.write([...buckets, FLUSH]);
        if (!unsized) buckets.push(EOS);
        const w = r.write(unsized ? [EOS] : buckets);
        if (w !== undefined) await w;
        api.countBytes(q.worker, 0, received);
        return OK;
      }
      if (buckets.length > 0) await r.write(first && !unsized ? buckets : [...buckets, ...(unsized || q.worker.params.flushpackets === 'on' ? [FLUSH] : [])]);
      first = false;
    }
  } catch (e) {
    conn.close = true;
    if (e instanceof ChunkError) r.log(MOD, APLOG_ERR, 'AH02475: Response chunk/line was too large to parse');
    else if (e instanceof ProxyIoError && e.kind === 'timeout') r.log(MOD, APLOG_ERR, 'AH01110: Network error reading response', { code: 70007, text: 'The timeout specified has expired' });
    // A body cut short by the backend: httpd's HTTP_IN filter reports APR_INCOMPLETE.
    else r.log(MOD, APLOG_ERR, 'AH01110: error reading response', { code: 70008, text: 'Partial results are valid but processing is incomplete' });
    api.countBytes(q.worker, 0, received);
    if (!r.headersSent) {
      // Nothing went out yet: the error response can still be the status.
      if (pieces.length === 0 && first) {
        r.headersOut.clear();
        return api.proxyError(r, 502, 'Error reading from remote server');
      }
    }
    api.backendBroke(r, []);
    return OK;
  }
  await r.write([...pieces.map((x) => dataBucket(x)), EOS]);
  api.countBytes(q.worker, 0, received);
  return OK;
}

// ---- the handler ----------------------------------------------------------------------------
/** A backend URL's host, port as given and path (with its query). */
interface UrlParts { readonly host: string; readonly portStr: string | undefined; readonly path: string }
/** The parts of the URLs seen last: a backend's URLs repeat (a bounded memo). */
const urlMemo = new Map<string, UrlParts>();
let lastUrl = '';
let lastParts: UrlParts = { host: '', portStr: undefined, path: '/' };
function urlParts(url: string): UrlParts {
  if (url === lastUrl) return lastParts;
  let p = urlMemo.get(url);
  if (p === undefined) {
    const u = /^[a-z0-9+.-]+:\/\/(\[[^\]]*\]|[^/:?#]*)(?::(\d*))?([^]*)$/i.exec((url.charCodeAt(0) | 0x20) === 0x75 && url.charCodeAt(4) === 0x3a ? url.replace(/^unix:[^|]*\|/i, '') : url);
    const path = u?.[3] ?? '/';
    p = { host: u?.[1] ?? '', portStr: u?.[2] !== undefined && u[2] !== '' ? u[2] : undefined, path: path === '' ? '/' : path };
    if (urlMemo.size >= 256) urlMemo.clear();
    urlMemo.set(url, p);
  }
  lastUrl = url;
  lastParts = p;
  return p;
}

/** proxy_http_handler. */
async function handle(r: Request, worker: ProxyWorker, sconf: ProxyServerConf, url: string, proxyname: string | undefined, proxyport: number): Promise<number> {
  const m = /^(https?|wss?|h2c?):/i.exec(url);
  const scheme = m?.[1]?.toLowerCase();
  if (scheme === undefined || scheme === 'h2' || scheme === 'h2c') {
    r.log(MOD, APLOG_DEBUG, `AH01113: HTTP: declining URL ${url}`);
    return DECLINED;
  }
  const api = apiOf(r);
  const isSsl = scheme === 'https' || scheme === 'wss';
  const proxyFunction = scheme;
  if (isSsl && r.rt.ctx.provider('ssl_proxy', 'ssl') === undefined) {
    r.log(MOD, APLOG_DEBUG, `AH01112: HTTPS: declining URL ${url} (mod_ssl not configured?)`);
    return DECLINED;
  }
  let acquired = api.acquireConnection(proxyFunction, worker, r.server);
  if (acquired instanceof Promise) acquired = await acquired;
  if (typeof acquired === 'number') return acquired;
  const conn = acquired;
  const dconf = api.dirConf(r);
  try {
    // proxy-initial-not-pooled: the first request of a client connection does not go over a
    // pooled backend connection (its failure could not be retried by the client): the
    // determination closes it and a fresh one is made, which stays pooled afterwards.
    if (r.proxyreq === PROXYREQ_REVERSE && r.connection.keepalives === 0 && r.subprocessEnv.has('proxy-initial-not-pooled')) conn.close = true;
    let st = api.determineConnection(r, sconf, worker, conn, url, proxyname, proxyport);
    if (typeof st !== 'number') st = await st;
    if (st !== OK) return st;
    const parts = urlParts(url);
    const { host, portStr } = parts;
    let path = parts.path;
    // Through a ProxyRemote (forward) proxy, or as a forward proxy to another: the absolute URL.
    if (proxyname !== undefined) path = url;
    // The port of the Via lines (ap_proxy_determine_connection): ap_get_server_port, which
    // follows UseCanonicalName, not the socket's.
    const port = getServerPort(r);
    const defPort = defaultPort(r);
    const q: Req = {
      r, api, worker, sconf, dconf, conn, url, host, portStr, path,
      force10: r.subprocessEnv.has('force-proxy-request-1.0'), do100: false, upgrade: undefined,
      serverPortStr: port !== defPort ? `:${port}` : '', proxyFunction,
    };
    const up = r.headersIn.get('Upgrade');
    if (up !== undefined && hasToken(r.headersIn.get('Connection'), 'upgrade') && !q.force10
      && canUpgrade(worker, up, scheme.startsWith('ws') ? 'WebSocket' : undefined)) {
      q.upgrade = up;
    }
    // Proxy100Continue (on by default) passes a client's 100-continue on; ping= asks the
    // backend for one on every reverse request with a body (PROXY_SHOULD_PING_100_CONTINUE).
    const hasBody = r.body !== null && (r.body.length > 0 || r.body.chunked);
    q.do100 = !q.force10 && ((r.expecting100 && dconf.forward100Continue !== false)
      || (worker.params.ping !== undefined && r.proxyreq === PROXYREQ_REVERSE && hasBody));
    // A plain stream (no net.Socket) unless the connection may become a tunnel.
    const cs = api.connectBackend(proxyFunction, conn, worker, r, q.upgrade === undefined ? 'pooled' : false);
    st = typeof cs === 'number' ? cs : await cs;
    if (st !== OK) {
      if (st === 503) r.log(MOD, APLOG_ERR, `AH01114: HTTP: failed to make connection to backend: ${conn.hostname}`);
      return st;
    }
    let built = buildRequest(q);
    if (built instanceof Promise) built = await built;
    if (typeof built === 'number') return built;
    if (!q.do100 && built.ended && built.prefetched.length === 0 && built.body !== 'chunked') {
      // The head alone (a request without a body: the usual case), as sendRequest sends it.
      if (!(await writeHeadAtTurnEnd(conn, built.head))) return passFailed(q);
      api.countBytes(worker, built.head.length, 0);
    } else {
      st = await sendRequest(q, built);
      if (st !== OK) return st;
    }
    return await processResponse(q, api.reader(conn, r), built);
  } finally {
    api.releaseConnection(proxyFunction, conn, r.server);
  }
}

const provider: ProxySchemeProvider = { canon, handle };

const decl: ModuleDecl<undefined, undefined> = {
  name: 'proxy_http_module',
  source: 'mod_proxy_http.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'proxy_scheme', name: 'http', version: '0', provider }],
};

export default defineModule(decl);
