// mod_proxy (modules/proxy/mod_proxy.c + proxy_util.c): ProxyPass and friends, <Proxy>
// sections, forward proxying (ProxyRequests), the proxy handler that hands a request to the
// protocol module of its scheme, and the "proxy_api" provider through which the protocol,
// balancer and health-check modules use mod_proxy's workers and connection pools.

import * as net from 'node:net';
import { createHeaders } from './headers.js';
import {
  defineModule, directive, DECLINED, DONE, OK, MODULE_API_VERSION, RSRC_CONF, ACCESS_CONF,
  HOOK_FIRST, HOOK_MIDDLE, type ModuleDecl,
} from '../../../server/module.js';
import type { Request } from '../../../server/request/request.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { ConfigContext } from '../../../server/config/context.js';
import { levelFor } from '../../../server/log/levels.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_TRACE1, APLOG_WARNING } from '../../../server/log/levels.js';
import { coreDir, coreServer } from '../../../server/core/config.js';
import { serverBase, sectionsWalk } from '../../../server/request/walk.js';
import { globals } from '../../../server/core/globals.js';
import { httpScheme, matchesRequestVhost } from '../../../server/core/server-name.js';
import { EOS, type Brigade } from '../../../server/filters.js';
import { sendHttpTrace } from '../../../server/http/http-core.js';
import { noMethodsAllow } from '../../../server/core/core-hooks.js';
import {
  PROXYREQ_NONE, PROXYREQ_PROXY, PROXYREQ_REVERSE, PROXY_WORKER_IN_ERROR,
  type ProxyApi, type ProxyBalancerHooks, type ProxySchemeProvider, type ProxyConn, type ProxyServerConf, type ProxyWorker, type ProxyDirConf, type ProxyAlias, type ProxyBalancer,
} from '../../../proxy/api.js';
import {
  createServerConfig, mergeServerConfig, createDirConfig, mergeDirConfig, addPass, addReverse, proxySection, addMember,
  proxySet, addRemote, noProxy, setVia, setBadHeader, setStatus, setTimeout_, setErrorOverride, setSize, setMaxForwards,
  setDomain, setGrowth, type ServerConf, type DirConf, type Cmd,
} from './config.js';
import {
  canonenc, canonNetloc, deSocketfy, findBalancer, findWorker, makeWorker, portOfScheme, setWorkerParam, setWorkerStatus, workerStatusString,
} from './workers.js';
import { proxyStatusHook } from './status.js';
import { acquire, BackendConn, connectSocket, makeReader, release, resolveAddress, retryWorker, takeOut, tunnel } from './conn.js';
import { errnoOf } from '../../../server/log/error-log.js';

const MOD = 'proxy';

// ---- the API (proxy_util.c) -------------------------------------------------------------------
function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** ap_proxyerror. */
export function proxyError(r: Request, status: number, message: string, errno?: { code: number; text: string }): number {
  r.log(MOD, APLOG_ERR, `AH00898: ${message} returned by ${r.uri}`, errno);
  r.notes.set('error-notes', `The proxy server could not handle the request<p>Reason: <strong>${escapeHtml(message)}</strong></p>`);
  r.notes.set('verbose-error-to', '*');
  r.statusLine = `${status} Proxy Error`;
  return status;
}

function backendTimeout(w: ProxyWorker, r: Request): number {
  return w.params.timeout ?? proxy.server(r.server).timeout ?? r.server.timeout * 1000;
}

/** A host without the brackets of an IPv6 literal. */
function unbracket(h: string): string {
  return h.startsWith('[') || h.endsWith(']') ? h.replace(/^\[|\]$/g, '') : h;
}

/** A backend URL's scheme (lower case) and host and port (ap_proxy_determine_connection's
 *  apr_uri_parse); undefined when it cannot be parsed. */
type Target = { readonly scheme: string; readonly nl: { readonly host: string; readonly port: number } };

function parseTarget(u: string): Target | undefined {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):(\/\/.*)$/.exec(u);
  if (m === null) return undefined;
  const scheme = m[1]!.toLowerCase();
  const nl = canonNetloc(m[2]!, portOfScheme(scheme));
  if (typeof nl === 'string') return undefined;
  return { scheme, nl: { host: nl.host, port: nl.port } };
}

/** parseTarget by the URL's "scheme://netloc" (the rest does not change the answer, unless it
 *  holds a line break, which the parse refuses): the same few backends are named on every
 *  request. */
function backendTarget(u: string): Target | undefined {
  const sep = u.indexOf('://');
  if (sep <= 0) return parseTarget(u);
  let end = sep + 3;
  while (end < u.length) { const c = u.charCodeAt(end); if (c === 0x2f || c === 0x3f || c === 0x23) break; end++; }
  if (end < u.length && LINE_BREAK.test(u)) return parseTarget(u);
  const key = end === u.length ? u : u.slice(0, end);
  let t = targets.get(key);
  if (t === undefined) {
    t = parseTarget(key) ?? null;
    if (targets.size >= 256) targets.clear();
    targets.set(key, t);
  }
  return t ?? undefined;
}
const targets = new Map<string, Target | null>();
const LINE_BREAK = /[\n\r\u2028\u2029]/;

function determineConnection(r: Request, conf: ProxyServerConf, w: ProxyWorker, c: ProxyConn, url: string, proxyname: string | undefined, proxyport: number): number {
  const bc = c as BackendConn;
  // A connection marked to close is closed now (a pooled one the request must not use).
  if (bc.close) { bc.destroy(); bc.close = false; }
  const { url: u } = deSocketfy(url);
  const t = backendTarget(u);
  if (t === undefined) return proxyError(r, 400, `URI cannot be parsed: ${url}`);
  const { scheme, nl } = t;
  bc.isSsl = scheme === 'https' || scheme === 'wss' || scheme === 'h2';
  const host = unbracket(nl.host);
  bc.sslHostname = host;
  if (proxyname !== undefined) {
    bc.hostname = proxyname;
    bc.port = proxyport;
    bc.udsPath = '';
  } else if (w.udsPath !== undefined || r.notes.has('uds_path')) {
    // The worker's socket, else the one SetHandler "proxy:unix:...|" named; the host and
    // port are the URL's, for the log lines (ap_proxy_determine_connection).
    bc.udsPath = w.udsPath ?? r.notes.get('uds_path')!;
    bc.hostname = host;
    bc.port = nl.port;
    if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH02545: ${scheme}: has determined UDS as ${bc.udsPath} (for ${bc.hostname}:${bc.port})`);
  } else if (w.generic || w.hostname === '') {
    bc.hostname = host;
    bc.port = nl.port;
  } else {
    bc.hostname = unbracket(w.hostname);
    bc.port = w.port;
  }
  if (checkProxyBlock(r, conf, host) !== OK) return proxyError(r, 403, 'Connect to remote machine blocked');
  return OK;
}

/** ProxyBlock (ap_proxy_checkproxyblock2): a listed name found anywhere in the host, or "*".
 *  DIFFERENCE: the IP-address comparison (names resolved at startup) is not made. */
function checkProxyBlock(r: Request, conf: ProxyServerConf, host: string): number {
  for (const name of conf.noproxies) {
    if (host.includes(name) || name.startsWith('*')) {
      r.log(MOD, APLOG_WARNING, `AH00916: connect to remote machine ${host} blocked: name ${name} matched`);
      return 403;
    }
  }
  return OK;
}

/** ap_proxy_connect_backend: a pooled connection still open is used as it is (no promise);
 *  otherwise a new one is made. */
function connectBackend(proxyFunction: string, c: ProxyConn, w: ProxyWorker, r: Request, plain: boolean | 'pooled' = false): number | Promise<number> {
  const bc = c as BackendConn;
  takeOut(bc);
  // A pooled plain stream serves only a caller that asked for one ('pooled').
  if ((bc.socket !== null || (plain === 'pooled' && bc.stream !== null)) && bc.alive) {
    bc.uses++;
    return OK;
  }
  return connectNew(proxyFunction, bc, w, r, plain);
}

async function connectNew(proxyFunction: string, bc: BackendConn, w: ProxyWorker, r: Request, plain: boolean | 'pooled'): Promise<number> {
  bc.destroy();
  bc.ip = '';
  if (bc.udsPath === '' && net.isIP(bc.hostname) === 0) {
    // The backend's name resolved (ap_proxy_determine_address), kept by the worker as long as
    // its addressttl says; a name that does not resolve is httpd's 500 "DNS lookup failure".
    try {
      bc.ip = await resolveAddress(w, bc.hostname);
    } catch (e) {
      return proxyError(r, 500, `DNS lookup failure for: ${bc.hostname}`, errnoOf(e));
    }
  }
  const sc = proxy.server(r.server);
  const connTimeout = w.params.connectionTimeout ?? backendTimeout(w, r);
  const st = await connectSocket(proxyFunction, bc, w, r, connTimeout, sc.sourceAddress, plain);
  if (st !== OK) return st;
  bc.uses = 1;
  if (bc.isSsl) {
    const ssl = r.rt.ctx.provider('ssl_proxy', 'ssl');
    if (ssl === undefined || !ssl.enabled(r.server)) {
      r.log(MOD, APLOG_ERR, `AH00961: ${proxyFunction}: failed to enable ssl support for ${bc.addr} (${bc.hostname})`);
      bc.destroy();
      return 500;
    }
    try {
      const t = await ssl.connect(r.server, bc.socket!, bc.sslHostname ?? bc.hostname, r.perDirConfig, bc.alpn);
      bc.attach(t);
    } catch (e) {
      r.log('ssl', APLOG_ERR, e instanceof Error ? e.message : String(e));
      bc.destroy();
      bc.close = true;
      // DIFFERENCE: httpd 2.4.71 answers 500 here; the specification (section 7.2) says
      // 502 Bad Gateway for a backend whose certificate fails the checks (docs/differences.md).
      return proxyError(r, 502, 'Error during SSL Handshake with remote server');
    }
  }
  return OK;
}

function backendBroke(r: Request, _bb: Brigade): void {
  // ap_proxy_backend_broke: the response is cut where it stands; no last chunk, the client
  // connection closes.
  r.connection.keepAlive = false;
  r.eosSent = true;
}

async function runTunnel(r: Request, c: ProxyConn, idle: number): Promise<number> {
  const detach = r.connection.detach;
  if (detach === undefined) return 500;
  const raw = detach.call(r.connection);
  const n = await tunnel(raw, c as BackendConn, idle);
  c.worker.s.read += n.in;
  c.worker.s.transferred += n.out;
  c.close = true;
  return OK;
}

export const api: ProxyApi = {
  serverConf: (s) => proxy.server(s),
  dirConf: (r) => proxy.dir(r),
  getWorker: (b, conf, url) => findWorker(b, conf, url),
  getBalancer: (conf, url) => findBalancer(conf, url),
  defineWorker(ctx, s, b, url) {
    const w = makeWorker(url, b);
    if (typeof w === 'string') return w;
    if (b !== undefined) b.workers.push(w); else proxy.server(s).workers.push(w);
    void ctx;
    return w;
  },
  setWorkerParam: (ctx, s, w, k, v) => setWorkerParam(ctx, s, w as Parameters<typeof setWorkerParam>[2], k, v),
  setWorkerStatus: (w, f) => setWorkerStatus(w, f),
  workerStatusString: (w) => workerStatusString(w),
  retryWorker: (fn, w, s) => retryWorker(fn, w, s),
  acquireConnection(fn, w, s) {
    return acquire(fn, w, s, (level, message, errno) => { if (level <= levelFor(s.logLevel, MOD)) s.errorLog.write({ level, module: MOD, message, errno }); });
  },
  determineConnection,
  connectBackend,
  reader: (c, r, t) => makeReader(c as BackendConn, t ?? backendTimeout(c.worker, r)),
  releaseConnection: (_fn, c) => release(c as BackendConn),
  isSocketConnected: (c) => (c as BackendConn).alive,
  checkProxyBlock,
  proxyError,
  backendBroke,
  canonenc,
  canonNetloc,
  portOfScheme,
  backendTimeout,
  tunnel: runTunnel,
  createHeaders: (r, _c, req) => createHeaders(r, proxy.server(r.server), proxy.dir(r), req),
  countBytes(w, sent, received) { w.s.transferred += sent; w.s.read += received; },
};

// ---- hooks ------------------------------------------------------------------------------------

/** proxy_detect (ProxyRequests On): an absolute URI not for this server is a proxy request. */
function proxyDetect(r: Request): number {
  const conf = proxy.server(r.server);
  if (conf.req !== true) return DECLINED;
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(\[[^\]]*\]|[^/:?#]*)(?::(\d*))?/.exec(r.unparsedUri);
  if (m !== null) {
    // httpd's test: no host, another scheme than this server's (ap_http_scheme), or a host
    // and port (the scheme's default without one) that do not name this server.
    const scheme = m[1]!.toLowerCase();
    const port = m[3] !== undefined && m[3] !== '' ? Number(m[3]) : portOfScheme(scheme);
    const host = m[2]!.startsWith('[') ? m[2]!.slice(1, -1) : m[2]!;
    if (host === '' || scheme !== httpScheme(r).toLowerCase() || !matchesRequestVhost(r, host, port)) {
      r.proxyreq = PROXYREQ_PROXY;
      r.uri = r.unparsedUri;
      r.filename = 'proxy:' + r.uri;
      r.handler = 'proxy-server';
    }
  } else if (r.method === 'CONNECT' && /^[^/]+:\d+$/.test(r.unparsedUri)) {
    r.proxyreq = PROXYREQ_PROXY;
    r.uri = r.unparsedUri;
    r.filename = 'proxy:' + r.uri;
    r.handler = 'proxy-server';
  }
  return DECLINED;
}

/** ap_proxy_interpolate: ${VAR} from the environment. */
function interpolate(r: Request, s: string): string {
  if (!s.includes('${')) return s;
  return s.replace(/\$\{([^}]*)\}/g, (_m, name: string) => r.subprocessEnv.get(name) ?? '');
}

/** alias_match: the length of `uri` matched by the prefix `fake` (slashes merged), 0 if none. */
function aliasMatch(uri: string, fake: string): number {
  let a = 0; let u = 0;
  while (a < fake.length && u < uri.length) {
    if (fake[a] === '/') {
      if (uri[u] !== '/') return 0;
      while (fake[a] === '/') a++;
      while (uri[u] === '/') u++;
    } else if (uri[u++] !== fake[a++]) return 0;
  }
  if (u === uri.length && a !== fake.length) return 0;
  if (a > 0 && fake[a - 1] !== '/' && u < uri.length && uri[u] !== '/') return 0;
  return u;
}

/** alias_match_servlet: ProxyPass mapping=servlet matches the path as a servlet container
 *  would see it (path parameters ";x" dropped, "//" merged, "/./" and "/../" resolved, "..;"
 *  counting as ".."). Returns the length of `uri` matched (0: no match) and the normalised
 *  path, which becomes r.uri. */
export function aliasMatchServlet(uri: string, alias: string): { len: number; map: string } {
  const NO = { len: 0, map: uri };
  if (uri[0] !== '/' || alias[0] !== '/') return NO;
  const u = (i: number): string => uri[i] ?? '';
  const a = (i: number): string => alias[i] ?? '';
  const stack: number[] = [];
  let map = '/';
  let uriPos = 1; let aliasPos = 1; let firstPos = 1;
  let aliasDepth = 0;
  while (uriPos < uri.length) {
    if (u(uriPos) === ';') {
      do uriPos++; while (u(uriPos) !== '/' && u(uriPos) !== '');
      continue;
    }
    if (map[map.length - 1] === '/') {
      if (u(uriPos) === '/') {
        do uriPos++; while (u(uriPos) === '/');
        continue;
      }
      if (u(uriPos) === '.') {
        const n1 = u(uriPos + 1);
        if (n1 === '/' || n1 === ';' || n1 === '') {
          uriPos++;
          if (u(uriPos) === '/') uriPos++;
          continue;
        }
        const n2 = u(uriPos + 2);
        if (n1 === '.' && (n2 === '/' || n2 === ';' || n2 === '')) {
          if (map.length === 1) return NO;
          let mp = map.length;
          do mp--; while (map[mp - 1] !== '/');
          map = map.slice(0, mp);
          if (aliasDepth === stack.length) {
            if (a(aliasPos) === '') aliasPos--;
            while (aliasPos > 0 && a(aliasPos) === '/') aliasPos--;
            while (aliasPos > 0 && a(aliasPos - 1) !== '/') aliasPos--;
            aliasDepth--;
          }
          stack.pop();
          uriPos += 2;
          if (u(uriPos) === '/') uriPos++;
          firstPos = 0;
          continue;
        }
      }
      if (firstPos !== 0) while (u(firstPos) === '/') firstPos++;
      stack.push(firstPos !== 0 ? firstPos : uriPos);
      if (a(aliasPos) !== '') {
        if (a(aliasPos - 1) !== '/') {
          do aliasPos++; while (a(aliasPos - 1) !== '/' && a(aliasPos) !== '');
        }
        while (a(aliasPos) === '/') aliasPos++;
        if (a(aliasPos) !== '') aliasDepth++;
      }
    }
    if (a(aliasPos) !== '') {
      const at = aliasDepth - 1;
      if (stack[at] !== 0) {
        if (a(aliasPos) !== u(uriPos)) stack[at] = 0;
        else if (a(aliasPos + 1) === '' && a(aliasPos) !== '/') {
          // The last alias segment has no trailing '/': the uri segment's parameters are kept.
          if (u(uriPos + 1) === ';') stack[at] = -(uriPos + 1);
          else if (u(uriPos + 1) !== '/' && u(uriPos + 1) !== '') stack[at] = 0;
        }
      }
      if (a(aliasPos) !== '/' || u(uriPos) === '/') aliasPos++;
    }
    if (u(uriPos) === '/') firstPos = uriPos + 1;
    map += u(uriPos++);
  }
  if (a(aliasPos) !== '') return NO;
  for (let d = 0; d < aliasDepth; d++) if (stack[d] === 0) return NO;
  if (aliasDepth < stack.length) {
    uriPos = stack[aliasDepth]!;
    if (aliasDepth > 0) {
      const pos = stack[aliasDepth - 1]!;
      if (pos < 0) uriPos = -pos;
    }
  }
  if (a(aliasPos - 1) !== '/' && u(uriPos - 1) === '/') uriPos--;
  return { len: uriPos, map };
}

/** ap_pregsub: $0-$9 from the match. */
function regsub(real: string, m: RegExpExecArray): string {
  return real.replace(/\$(\d)|\\(\$)/g, (_x, d: string | undefined, esc: string | undefined) => esc ?? (m[Number(d)] ?? ''));
}

const HTTP_CONTINUE = 100;

/** ap_proxy_trans_match. */
function transMatch(r: Request, ent: ProxyAlias, dconf: DirConf): number {
  const doInterp = dconf.interpolateEnv === true && ent.flags.interpolate;
  const fake = doInterp ? interpolate(r, ent.fake) : ent.fake;
  const real = doInterp ? interpolate(r, ent.real) : ent.real;
  let nocanon = ent.flags.nocanon;
  let useUri = nocanon ? r.unparsedUri.replace(/\?.*$/, '') : r.uri;
  let found: string | undefined;
  let mismatch = false;
  let servletUri: string | undefined;
  if (r.wantsLog(MOD, APLOG_TRACE1 + 1)) r.log(MOD, APLOG_TRACE1 + 1, `AH03461: attempting to match URI path '${r.uri}' against ${ent.regex ? 'pattern' : 'prefix'} '${fake}' for proxying`);
  if (ent.regex !== undefined) {
    const m = ent.regex.exec(r.uri);
    if (m !== null) {
      if (real === '!') {
        r.log(MOD, APLOG_TRACE1, `AH03462: proxying is explicitly disabled for URI path '${r.uri}'; declining`);
        return DECLINED;
      }
      let mm: RegExpExecArray = m;
      if (nocanon) {
        const m2 = ent.regex.exec(useUri);
        if (m2 === null) { mismatch = true; useUri = r.uri; } else mm = m2;
      }
      const sub = regsub(real, mm);
      found = sub !== real ? 'proxy:' + sub : 'proxy:' + real + useUri;
    }
  } else {
    let len: number;
    if (ent.mapping === 'servlet') {
      const sm = aliasMatchServlet(r.uri, fake);
      len = sm.len;
      if (len !== 0) servletUri = sm.map;
      nocanon = false; // the servlet normalisation applies instead
    } else len = aliasMatch(r.uri, fake);
    if (len !== 0) {
      if (real === '!') {
        r.log(MOD, APLOG_TRACE1, `AH03463: proxying is explicitly disabled for URI path '${r.uri}'; declining`);
        return DECLINED;
      }
      let l = len;
      if (nocanon) {
        const l2 = aliasMatch(useUri, fake);
        if (l2 !== len) { mismatch = true; useUri = r.uri; } else l = l2;
      }
      found = 'proxy:' + real + useUri.slice(l);
    }
  }
  if (mismatch) {
    r.log(MOD, APLOG_WARNING, 'AH01136: Unescaped URL path matched ProxyPass; ignoring unsafe nocanon');
    nocanon = false;
  }
  if (found === undefined) return HTTP_CONTINUE;
  // proxy_run_check_trans: the protocol module the URL goes to may pass the request on to the
  // next ProxyPass (mod_proxy_wstunnel without an Upgrade header).
  for (const p of schemeProviders(r)) {
    if (p.checkTrans === undefined) continue;
    const rv = p.checkTrans(r, found.slice(6));
    if (rv === DECLINED) continue;
    if (rv !== OK) return HTTP_CONTINUE;
    break;
  }
  r.filename = found;
  r.handler = 'proxy-server';
  r.proxyreq = PROXYREQ_REVERSE;
  if (nocanon && !mismatch) r.notes.set('proxy-nocanon', '1');
  if (ent.flags.noquery) r.notes.set('proxy-noquery', '1');
  if (ent.mapping === 'encoded') r.notes.set('proxy-noencode', '1');
  if (servletUri !== undefined) {
    r.log(MOD, APLOG_TRACE1, `AH10248: Servlet path '${r.uri}' (${servletUri}) matches proxy handler '${found}'`);
    // <Location> and the other sections then see the path without its parameters.
    r.uri = servletUri;
  } else if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `AH03464: URI path '${r.uri}' matches proxy handler '${found}'`);
  return OK;
}

/** proxy_trans (translate_name). */
function proxyTrans(r: Request): number {
  if (r.proxyreq !== PROXYREQ_NONE) return OK;
  if (r.unparsedUri === '*' || !r.uri.startsWith('/')) return DECLINED;
  if (r.subprocessEnv.has('no-proxy')) return DECLINED;
  const dconf = proxy.dir(r);
  const conf = proxy.server(r.server);
  if (dconf.alias !== undefined) {
    const rv = transMatch(r, dconf.alias, dconf);
    if (rv !== HTTP_CONTINUE) return rv;
  }
  for (const ent of conf.aliases) {
    const rv = transMatch(r, ent, dconf);
    if (rv !== HTTP_CONTINUE) return rv;
  }
  return DECLINED;
}

const NO_SECTIONS: readonly never[] = [];

/** proxy_map_location: <Proxy> sections instead of the directory walk. */
function proxyMapLocation(r: Request): number {
  if (r.proxyreq === PROXYREQ_NONE || !r.filename.startsWith('proxy:')) return DECLINED;
  const conf = proxy.server(r.server);
  const name = r.filename.slice(6);
  const matched = conf.secProxy.length === 0 ? NO_SECTIONS : conf.secProxy.filter((sec) => {
    if (sec.regex !== undefined) {
      const m = sec.regex.exec(name);
      if (m === null) return false;
      if (m.groups !== undefined) for (const [k, v] of Object.entries(m.groups)) if (v !== undefined) r.subprocessEnv.set('MATCH_' + k.toUpperCase(), v);
      return true;
    }
    if (sec.wildcard !== undefined) return sec.wildcard.test(name);
    return name.startsWith(sec.path);
  });
  const walked = sectionsWalk(r.rt, serverBase(r), matched);
  r.perDirConfig = walked.vec;
  r.storageWalk = walked;
  return OK;
}

/** fixup_uds_filename: "proxy:unix:/path|scheme://host/x" becomes "proxy:scheme://host/x"
 *  with the socket in the request's "uds_path" note (relative: under DefaultRuntimeDir);
 *  "scheme:", "scheme://" and "scheme:/path" get "localhost" as their host. */
function fixupUdsFilename(r: Request): number {
  const uds = r.filename.slice(6);
  const bar = uds.indexOf('|', 5);
  if (uds.slice(0, 5).toLowerCase() !== 'unix:' || bar < 0) {
    r.notes.delete('uds_path');
    return DECLINED;
  }
  const sock = uds.slice(5, bar);
  const origin = uds.slice(bar + 1);
  // apr_uri_parse of "unix:PATH": a path with no host ("unix://host/x" has one: refused).
  const path = sock.startsWith('//') ? '' : sock.replace(/[?#].*$/, '');
  const col = origin.indexOf(':');
  if (path === '' || col < 0) {
    r.log(MOD, APLOG_ERR, `AH10292: Invalid proxy UDS filename (${r.filename})`);
    r.notes.delete('uds_path');
    return 400;
  }
  const udsPath = path.startsWith('/') ? path : runtimeDirRelative(r, path);
  r.notes.set('uds_path', udsPath);
  if (r.wantsLog(MOD, APLOG_TRACE1 + 1)) r.log(MOD, APLOG_TRACE1 + 1, `*: fixup UDS from ${r.filename}: ${origin} (${udsPath})`);
  const after = origin.slice(col + 1);
  const scheme = origin.slice(0, col);
  if (after === '') r.filename = `proxy:${origin}//localhost`;
  else if (after[0] === '/' && (after[1] !== '/' || after[2] === '/' || after.length === 2)) {
    r.filename = `proxy:${scheme}://localhost${after[1] !== '/' ? after : after.slice(2)}`;
  } else r.filename = 'proxy:' + origin;
  return OK;
}

function runtimeDirRelative(r: Request, p: string): string {
  const dir = globals(r.rt.ctx).runtimeDir ?? r.rt.ctx.serverRootRelative('logs');
  return dir.replace(/\/+$/, '') + '/' + p;
}

/** The protocol modules in the order httpd runs their proxy hooks: those registered FIRST
 *  (mod_proxy_wstunnel), then the others in load order; computed once per configuration. */
function schemeProviders(r: Request): readonly ProxySchemeProvider[] {
  const ctx = r.rt.ctx;
  return ctx.getScratch<ProxySchemeProvider[]>('proxy:schemes', () => {
    const all = ctx.providerNames('proxy_scheme').map((n) => ctx.provider('proxy_scheme', n)!);
    return [...all.filter((p) => p.first === true), ...all.filter((p) => p.first !== true)];
  });
}

/** The providers a URL goes to, decided once per configuration and scheme (as written in the
 *  URL): schemeProviders' order without those whose `schemes` leave this one out (they would
 *  decline it); `logs` are the modules of the left-out ones that write a debug line when they
 *  decline in their handle. */
interface SchemeChain { readonly list: readonly ProxySchemeProvider[]; readonly logs: readonly string[] }

let lastChain: { readonly ctx: ConfigContext; readonly scheme: string; readonly chain: SchemeChain } | undefined;

function schemeChain(r: Request, url: string): SchemeChain {
  const ctx = r.rt.ctx;
  // The scheme of the previous URL, the usual case, is recognised without cutting it out.
  const last = lastChain;
  if (last !== undefined && last.ctx === ctx && url.charCodeAt(last.scheme.length) === 0x3a && url.startsWith(last.scheme)) return last.chain;
  const chains = ctx.getScratch<Map<string, SchemeChain>>('proxy:chains', () => new Map());
  const colon = url.indexOf(':');
  const scheme = colon < 0 ? '' : url.slice(0, colon);
  let c = chains.get(scheme);
  if (c === undefined) {
    const low = scheme.toLowerCase();
    const all = schemeProviders(r);
    const list = all.filter((p) => p.schemes === undefined || p.schemes.includes(low));
    const logs = [...new Set(all.filter((p) => !list.includes(p) && p.declineLog !== undefined).map((p) => p.declineLog!))];
    c = { list, logs };
    // Forward proxy requests can name any scheme: the table stays small.
    if (chains.size < 64) chains.set(scheme, c);
  }
  lastChain = { ctx, scheme, chain: c };
  return c;
}

/** The proxy_balancer providers (mod_proxy_balancer's pre/post_request hooks), once per
 *  configuration. */
function balancerProviders(r: Request): readonly ProxyBalancerHooks[] {
  const ctx = r.rt.ctx;
  return ctx.getScratch<ProxyBalancerHooks[]>('proxy:balancers', () => ctx.providerNames('proxy_balancer').map((n) => ctx.provider('proxy_balancer', n)!));
}

/** ap_proxy_canon_url (fixups): the scheme module's canon handler. */
function canonUrl(r: Request): number {
  if (r.proxyreq === PROXYREQ_NONE || !r.filename.startsWith('proxy:')) return DECLINED;
  if (r.proxyreq === PROXYREQ_REVERSE) {
    const st = fixupUdsFilename(r);
    if (st >= 400) return st;
  }
  const url = r.filename.slice(6);
  for (const p of schemeChain(r, url).list) {
    const st = p.canon(r, url);
    if (st !== DECLINED) {
      if (st !== OK) return st;
      break;
    }
  }
  const colon = r.filename.indexOf(':', 6);
  if (colon < 0 || colon === 6) return 400;
  return OK;
}

function proxyFixup(r: Request): number {
  if (r.proxyreq === PROXYREQ_NONE || !r.filename.startsWith('proxy:')) return DECLINED;
  return canonUrl(r);
}

/** proxy_run_scheme_handler: the providers of the URL's scheme in turn (every provider when
 *  one left out would log its declining at this request's level). */
function runScheme(r: Request, w: ProxyWorker, conf: ProxyServerConf, url: string, pname: string | undefined, pport: number): Promise<number> {
  const c = schemeChain(r, url);
  let list = c.list;
  for (const m of c.logs) if (r.wantsLog(m, APLOG_DEBUG)) { list = schemeProviders(r); break; }
  if (list.length === 1) return list[0]!.handle(r, w, conf, url, pname, pport);
  return runSchemeList(list, r, w, conf, url, pname, pport);
}

async function runSchemeList(list: readonly ProxySchemeProvider[], r: Request, w: ProxyWorker, conf: ProxyServerConf, url: string, pname: string | undefined, pport: number): Promise<number> {
  for (const p of list) {
    const st = await p.handle(r, w, conf, url, pname, pport);
    if (st !== DECLINED) return st;
  }
  return DECLINED;
}

type PreRequest = { status: number; worker?: ProxyWorker; balancer?: ProxyBalancer; url: string };

/** ap_proxy_pre_request; a promise only when a balancer hook answers with one (it waits for a
 *  member). */
function preRequest(r: Request, conf: ServerConf, url: string): PreRequest | Promise<PreRequest> {
  return preRequestFrom(r, conf, url, 0, undefined);
}

function preRequestFrom(r: Request, conf: ServerConf, url: string, from: number, balancerIn: ProxyBalancer | undefined): PreRequest | Promise<PreRequest> {
  const ps = balancerProviders(r);
  let balancer = balancerIn;
  for (let i = from; i < ps.length; i++) {
    const res = ps[i]!.preRequest(undefined, undefined, r, conf, url);
    if (res instanceof Promise) {
      return res.then((v) => (v.status !== DECLINED ? { status: v.status, worker: v.worker, balancer: v.balancer, url: v.url ?? url }
        : preRequestFrom(r, conf, url, i + 1, v.balancer)));
    }
    if (res.status !== DECLINED) return { status: res.status, worker: res.worker, balancer: res.balancer, url: res.url ?? url };
    balancer = res.balancer;
  }
  return preRequestDefault(r, conf, url, balancer);
}

/** The worker when no balancer took the request. */
function preRequestDefault(r: Request, conf: ServerConf, url: string, balancer: ProxyBalancer | undefined): PreRequest {
  if (balancer !== undefined) {
    r.log(MOD, APLOG_ERR, `AH00934: all workers are busy.  Unable to serve ${url}`);
    return { status: 503, url };
  }
  const w = findWorker(undefined, conf, url);
  if (w !== undefined) {
    if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH00942: ${w.scheme.toUpperCase()}: found worker ${w.name} for ${url}`);
    return { status: OK, worker: w, url };
  }
  // The default workers keep no connection alive: proxy-nokeepalive tells the protocol
  // modules so (mod_proxy_http's Connection: close, the FastCGI environment).
  r.subprocessEnv.set('proxy-nokeepalive', '1');
  if (r.proxyreq === PROXYREQ_PROXY) return { status: OK, worker: conf.forward, url };
  return { status: OK, worker: conf.reverse, url };
}

/** proxy_handler. */
async function proxyHandler(r: Request): Promise<number> {
  if (r.filename === '' && r.handler === undefined) return DECLINED;
  let rc = DECLINED;
  if (r.proxyreq === PROXYREQ_NONE && r.handler !== undefined && r.handler.startsWith('proxy:')) {
    // SetHandler "proxy:fcgi://..." (or "proxy:unix:/path|fcgi://...").
    const old = r.filename;
    r.proxyreq = PROXYREQ_REVERSE;
    r.filename = r.handler + r.filename;
    r.notes.set('proxy-sethandler', '1');
    rc = canonUrl(r);
    if (rc !== OK) { r.filename = old; r.proxyreq = PROXYREQ_NONE; }
  } else if (r.proxyreq !== PROXYREQ_NONE && r.filename.startsWith('proxy:')) {
    r.notes.delete('proxy-sethandler');
    rc = OK;
  }
  if (rc !== OK) return rc;
  const conf = proxy.server(r.server);
  const uri = r.filename.slice(6);
  const colon = uri.indexOf(':');
  if (colon < 0) {
    r.log(MOD, APLOG_DEBUG, `AH01141: proxy_handler no URL in ${r.filename}`);
    return 400;
  }
  const scheme = uri.slice(0, colon);
  // Max-Forwards
  const mf = r.headersIn.get('Max-Forwards');
  let maxfwd: number;
  if (mf !== undefined) {
    if (!/^\d+$/.test(mf)) {
      r.log(MOD, APLOG_WARNING, `AH10188: Max-Forwards value '${mf}' could not be parsed`);
      return proxyError(r, 400, 'Max-Forwards request header could not be parsed');
    }
    const n = Number(mf);
    if (n === 0) {
      // The request ends here: httpd answers TRACE and OPTIONS itself (ap_send_http_trace,
      // ap_send_http_options: the Allow list of a request no handler declared methods for).
      if (r.method === 'TRACE') {
        r.proxyreq = PROXYREQ_NONE;
        return sendHttpTrace(r);
      }
      if (r.method === 'OPTIONS') {
        r.proxyreq = PROXYREQ_NONE;
        r.headersOut.set('Allow', noMethodsAllow(r));
        await r.write([EOS]);
        return DONE;
      }
      return proxyError(r, 400, 'Max-Forwards has reached zero - proxy loop?');
    }
    maxfwd = n - 1;
  } else maxfwd = conf.maxfwd ?? -1;
  if (maxfwd >= 0) r.headersIn.set('Max-Forwards', String(maxfwd));
  if (r.method === 'TRACE') {
    const te = coreServer(r.server).traceEnable;
    if (te === 'off') {
      r.notes.set('error-notes', 'TRACE forbidden by server configuration');
      r.notes.set('verbose-error-to', '*');
      r.log(MOD, APLOG_ERR, 'AH01139: TRACE forbidden by server configuration');
      return 405;
    }
    if (te !== 'extended' && r.body !== null && (r.body.length > 0 || r.body.chunked)) {
      r.notes.set('error-notes', 'TRACE with request body is not allowed');
      r.notes.set('verbose-error-to', '*');
      r.log(MOD, APLOG_ERR, 'AH01140: TRACE with request body is not allowed');
      return 413;
    }
  }
  if (conf.domain !== undefined && r.proxyreq === PROXYREQ_PROXY && r.method === 'GET') {
    const m = /^([a-z]+:\/\/)([^/:?#]+)(.*)$/i.exec(uri);
    const host = m?.[2];
    if (m !== null && host !== undefined && !host.includes('.') && !host.includes(':') && host.toLowerCase() !== 'localhost') {
      const nuri = m[1]! + host + conf.domain + m[3]!;
      r.headersOut.set('Location', nuri);
      const ref = r.headersIn.get('Referer');
      r.log(MOD, APLOG_INFO, `AH01138: Domain missing: ${r.uri} sent to ${nuri}${ref !== undefined ? ' from ' + ref : ''}`);
      return 301;
    }
  }
  let directConnect = false;
  if (conf.dirconn.length > 0) {
    const hostOf = /^[a-z0-9+.-]+:\/\/(\[[^\]]*\]|[^/:?#]*)/i.exec(uri)?.[1]?.toLowerCase() ?? '';
    for (const d of conf.dirconn) if (d.match(hostOf)) { directConnect = true; break; }
  }

  let attempts = 0;
  let maxAttempts = 0;
  let status: number;
  for (;;) {
    let pre = preRequest(r, conf, uri);
    if (pre instanceof Promise) pre = await pre;
    if (pre.status !== OK) {
      if (pre.status !== 503 || pre.worker === undefined) return pre.status;
      status = pre.status;
      break;
    }
    const worker = pre.worker!;
    const balancer = pre.balancer;
    const url = pre.url;
    if (balancer !== undefined && balancer.s.maxAttempts !== undefined && maxAttempts === 0) maxAttempts = balancer.s.maxAttempts;
    status = DECLINED;
    let ran = false;
    if (!directConnect) {
      for (const ent of conf.proxies) {
        const partial = ent.scheme.includes(':');
        if (ent.scheme === '*' || (ent.useRegex && ent.regex!.test(url)) || (!partial && !ent.useRegex && ent.scheme.toLowerCase() === scheme.toLowerCase())
          || (partial && !ent.useRegex && url.toLowerCase().startsWith(ent.scheme.toLowerCase()))) {
          r.log(MOD, APLOG_DEBUG, 'AH01142: Trying to run scheme_handler against proxy');
          if (ent.creds !== undefined) r.notes.set('proxy-basic-creds', ent.creds);
          status = await runScheme(r, worker, conf, url, ent.hostname, ent.port);
          r.notes.delete('proxy-basic-creds');
          if (status !== DECLINED) {
            ran = true;
            if (status !== 502) break;
            const cl = r.headersIn.get('Content-Length');
            if ((cl !== undefined && cl !== '0') || r.headersIn.get('Transfer-Encoding') !== undefined) break;
            ran = false;
          }
        }
      }
    }
    if (!ran) {
      if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH01143: Running scheme ${scheme} handler (attempt ${attempts})`);
      status = await runScheme(r, worker, conf, url, undefined, 0);
    }
    for (const p of balancerProviders(r)) {
      const post = p.postRequest(worker, balancer, r, conf);
      if (post instanceof Promise) await post;
    }
    if (status === OK || status === DONE || r.notes.has('proxy-error-override')) break;
    if (status === 500 || status === 503) {
      // A balancer member that failed: try another while attempts remain.
      if (balancer !== undefined && !(worker.s.status & PROXY_WORKER_IN_ERROR) === false && attempts < maxAttempts) {
        attempts++;
        continue;
      }
    }
    break;
  }
  if (status === DECLINED) {
    r.log(MOD, APLOG_WARNING, `AH01144: No protocol handler was valid for the URL ${r.uri} (scheme '${scheme}'). If you are using a DSO version of mod_proxy, make sure the proxy submodules are included in the configuration using LoadModule.`);
    return 500;
  }
  return status;
}

// ---- the module -------------------------------------------------------------------------------
const RS = RSRC_CONF;
const RA = RSRC_CONF | ACCESS_CONF;

const flagSrv = (field: 'req' | 'inherit' | 'ppinherit' | 'balPersist') => (cmd: Cmd, on: boolean): undefined => { cmd.srv[field] = on; return undefined; };
const flagDir = (field: 'preserveHost' | 'addForwardedHeaders' | 'interpolateEnv' | 'forward100Continue') => (cmd: Cmd, on: boolean): undefined => { cmd.dir[field] = on; return undefined; };

const decl: ModuleDecl<ServerConf, DirConf> = {
  name: 'proxy_module',
  source: 'mod_proxy.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: '<Proxy', args: 'RAW_ARGS', where: RS, section: true, help: 'Container for directives affecting resources located in the proxied location', handler: proxySection(false) }),
    directive({ name: '<ProxyMatch', args: 'RAW_ARGS', where: RS, section: true, help: 'Container for directives affecting resources located in the proxied location, in regular expression syntax', handler: proxySection(true) }),
    directive({ name: 'ProxyRequests', args: 'FLAG', where: RS, help: 'on if the true proxy requests should be accepted', handler: flagSrv('req') }),
    directive({ name: 'ProxyRemote', args: 'TAKE23', where: RS, help: 'a scheme, partial URL or \'*\' and a proxy server', handler: addRemote(false) }),
    directive({ name: 'ProxyRemoteMatch', args: 'TAKE23', where: RS, help: 'a regex pattern and a proxy server', handler: addRemote(true) }),
    directive({ name: 'ProxyPassInterpolateEnv', args: 'FLAG', where: RA, help: 'Interpolate Env Vars in reverse Proxy', handler: flagDir('interpolateEnv') }),
    directive({ name: 'ProxyPass', args: 'RAW_ARGS', where: RA, help: 'a virtual path and a URL', handler: addPass(false) }),
    directive({ name: 'ProxyPassMatch', args: 'RAW_ARGS', where: RA, help: 'a virtual path and a URL', handler: addPass(true) }),
    directive({ name: 'ProxyPassReverse', args: 'TAKE123', where: RA, help: 'a virtual path and a URL for reverse proxy behaviour', handler: addReverse('raliases') }),
    directive({ name: 'ProxyPassReverseCookiePath', args: 'TAKE23', where: RA, help: 'Path rewrite rule for proxying cookies', handler: addReverse('cookiePaths') }),
    directive({ name: 'ProxyPassReverseCookieDomain', args: 'TAKE23', where: RA, help: 'Domain rewrite rule for proxying cookies', handler: addReverse('cookieDomains') }),
    directive({ name: 'ProxyBlock', args: 'ITERATE', where: RS, help: 'A list of names, hosts or domains to which the proxy will not connect', handler: (cmd: Cmd, a: string) => { if (!cmd.srv.noproxies.some((n) => n.toLowerCase() === a.toLowerCase())) cmd.srv.noproxies.push(a); return undefined; } }),
    directive({ name: 'ProxyReceiveBufferSize', args: 'TAKE1', where: RS, help: 'Receive buffer size for outgoing HTTP and FTP connections in bytes', handler: setSize('recvBufferSize', 'ProxyReceiveBufferSize must be >= 512 bytes, or 0 for system default.') }),
    directive({ name: 'ProxyIOBufferSize', args: 'TAKE1', where: RS, help: 'IO buffer size for outgoing HTTP and FTP connections in bytes', handler: setSize('ioBufferSize', 'ProxyIOBufferSize must be >= 512 bytes, or 0 for system default.') }),
    directive({ name: 'ProxyMaxForwards', args: 'TAKE1', where: RS, help: 'The maximum number of proxies a request may be forwarded through.', handler: setMaxForwards }),
    directive({ name: 'NoProxy', args: 'ITERATE', where: RS, help: 'A list of domains, hosts, or subnets to which the proxy will connect directly', handler: noProxy }),
    directive({ name: 'ProxyDomain', args: 'TAKE1', where: RS, help: 'The default intranet domain name (in absence of a domain in the URL)', handler: setDomain }),
    directive({ name: 'ProxyVia', args: 'TAKE1', where: RS, help: 'Configure Via: proxy header header to one of: on | off | block | full', handler: setVia }),
    directive({ name: 'ProxyErrorOverride', args: 'ITERATE', where: RA, help: 'use our error handling pages instead of the servers\' we are proxying', handler: setErrorOverride }),
    directive({ name: 'ProxyPreserveHost', args: 'FLAG', where: RA, help: 'on if we should preserve host header while proxying', handler: flagDir('preserveHost') }),
    directive({ name: 'ProxyTimeout', args: 'TAKE1', where: RS, help: 'Set the timeout (in seconds) for a proxied connection. This overrides the server timeout', handler: setTimeout_ }),
    directive({ name: 'ProxyBadHeader', args: 'TAKE1', where: RS, help: 'How to handle bad header line in response: IsError | Ignore | StartBody', handler: setBadHeader }),
    directive({ name: 'BalancerMember', args: 'RAW_ARGS', where: RA, help: 'A balancer name and scheme with list of params', handler: addMember }),
    directive({ name: 'BalancerGrowth', args: 'TAKE1', where: RS, help: 'Number of additional Balancers that can be added post-config', handler: setGrowth }),
    directive({ name: 'BalancerPersist', args: 'FLAG', where: RS, help: 'Persist changes on BalancerManager configuration over restart', handler: flagSrv('balPersist') }),
    directive({ name: 'BalancerInherit', args: 'FLAG', where: RS, help: 'Inherit main server balancers', handler: flagSrv('inherit') }),
    directive({ name: 'ProxyPassInherit', args: 'FLAG', where: RS, help: 'Inherit main server ProxyPass directives', handler: flagSrv('ppinherit') }),
    directive({ name: 'ProxyStatus', args: 'TAKE1', where: RS, help: 'Configure Status: proxy status to one of: on | off | full', handler: setStatus }),
    directive({ name: 'ProxySet', args: 'RAW_ARGS', where: RA, help: 'A balancer or worker name with list of params', handler: proxySet }),
    directive({
      name: 'ProxySourceAddress', args: 'TAKE1', where: RS, help: 'Configure local source IP used for request forward',
      handler: (cmd: Cmd, a: string) => { if (!/^[0-9a-fA-F.:]+$/.test(a)) return 'ProxySourceAddress invalid value'; cmd.srv.sourceAddress = a; return undefined; },
    }),
    directive({ name: 'ProxyAddHeaders', args: 'FLAG', where: RA, help: 'on if X-Forwarded-* headers should be added or completed', handler: flagDir('addForwardedHeaders') }),
    directive({ name: 'Proxy100Continue', args: 'FLAG', where: RA, help: 'on if 100-Continue should be forwarded to the origin server, off if the proxy should handle it by itself', handler: flagDir('forward100Continue') }),
  ],
  hooks: {
    // proxy_detect runs at post_read_request as httpd's, so that modules reading
    // r.proxyreq there (mod_auth_digest's header parse) see a forward proxy request.
    postReadRequest: { fn: proxyDetect, order: HOOK_FIRST },
    translateName: { fn: proxyTrans, order: HOOK_FIRST },
    mapToStorage: { fn: proxyMapLocation, order: HOOK_FIRST },
    fixups: { fn: proxyFixup, order: HOOK_MIDDLE },
    handler: { fn: proxyHandler, order: HOOK_FIRST },
  },
  configHooks: {
    checkConfig(ctx: ConfigContext) {
      // Workers configured in a server are ready in this process (PROXY_WORKER_INITIALIZED).
      for (const s of [ctx.mainServer, ...ctx.vhosts]) {
        const sc = proxy.server(s);
        for (const w of sc.workers) w.localStatus |= 1;
        for (const b of sc.balancers) for (const w of b.workers) w.localStatus |= 1;
        sc.forward.localStatus |= 1;
        sc.reverse.localStatus |= 1;
      }
      void coreDir;
      return undefined;
    },
  },
  providers: [
    { group: 'proxy_api', name: 'mod_proxy', version: '0', provider: api },
    { group: 'status_hook', name: 'mod_proxy', version: '0', provider: proxyStatusHook((r) => proxy.server(r.server)) },
  ],
};

export const proxy = defineModule(decl);
export default proxy;

export type { ServerRec, ProxyDirConf };
