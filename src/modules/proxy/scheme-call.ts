// What the CGI-like scheme handlers of the proxy family (fcgi, scgi, uwsgi) need from
// mod_proxy for one request, gathered in one place so the protocol code stays independent of
// mod_proxy's own types: the URL after "proxy:", the worker's settings, a connection to the
// backend (ap_proxy_acquire_connection + ap_proxy_determine_connection +
// ap_proxy_connect_backend, with mod_proxy's own log lines) and its release. schemeCall()
// builds one from mod_proxy's "proxy_api" provider.

import type { Request } from '../../server/request/request.js';
import { OK } from '../../server/module.js';
import { coreDir } from '../../server/core/core-module.js';
import { getServerPort, httpScheme } from '../../server/core/server-name.js';
import type { ByteStream, ProxyApi, ProxyConn, ProxyServerConf, ProxyWorker } from '../../proxy/api.js';

export interface SchemeConnection {
  readonly socket: ByteStream;
  /** The backend's host name as the connection has it (a unix socket's worker: its host part). */
  readonly hostname: string;
  readonly port: number;
}

export interface SchemeCall {
  /** The URL after "proxy:" ("fcgi://127.0.0.1:9000/path"). */
  readonly url: string;
  /** The socket timeout for this worker (timeout=, ProxyTimeout, Timeout). */
  readonly timeoutMs: number;
  /** io_buffer_size (iobuffersize= on the worker), 8192 by default. */
  readonly ioBufferSize: number;
  readonly flushPackets: 'on' | 'off' | 'auto';
  /** flushwait= in ms (PROXY_FLUSH_WAIT, 10 ms, when not given). */
  readonly flushWait: number;
  /** disablereuse=Off (or enablereuse=On) given explicitly on the worker. */
  readonly reuseAsked: boolean;
  /** ":port" of the server the client asked, "" for the default port. */
  readonly serverPortStr: string;
  /** ProxyErrorOverride applies to this status (ap_proxy_should_override). */
  shouldOverride(status: number): boolean;
  /** Connects (or takes a pooled connection); a status when that failed, mod_proxy's own
   *  lines (AH00957, AH02454...) already logged; `hostname`/`port` for the scheme's line.
   *  `oneExchange`: the connection is closed after this request (made as a plain stream). */
  connect(oneExchange: boolean): Promise<SchemeConnection | ConnectFailure>;
  /** Gives the connection back; `close`: do not reuse it. */
  release(close: boolean): void;
}

/** Why there is no connection: the worker was not usable (acquire), the address could not be
 *  determined (determine) — both logged by mod_proxy and answered with their status as they
 *  are — or connecting failed (connect), which the scheme module logs too. */
export interface ConnectFailure {
  readonly failed: number;
  readonly stage: 'acquire' | 'determine' | 'connect';
  readonly hostname: string;
  readonly port: number;
}

/** httpd's AP_IOBUFSIZE. */
const AP_IOBUFSIZE = 8192;

/** The mod_proxy functions, or undefined when mod_proxy is not loaded. */
export function proxyApi(r: Request): ProxyApi | undefined {
  return r.rt.ctx.provider('proxy_api', 'mod_proxy');
}

/** ap_proxy_canonenc for a path, with httpd's flag for AllowEncodedSlashes NoDecode. */
export function canonPath(api: ProxyApi, r: Request, path: string): string | undefined {
  return api.canonenc(path, 'path', false, r.proxyreq, coreDir(r).allowEncodedSlashes === 'nodecode');
}

/** What the scheme modules' canonicalisation takes from mod_proxy. */
interface SchemeCanonHelpers {
  netloc(url: string, defaultPort: number): { host: string; port: number; rest: string } | string;
  encodePath(r: Request, path: string): string | undefined;
}

/** canonHelpers' answer for each mod_proxy (made once, not per request). */
const helpersOf = new WeakMap<ProxyApi, SchemeCanonHelpers>();

/** The CanonHelpers of the scheme modules over mod_proxy's functions. */
export function canonHelpers(api: ProxyApi): SchemeCanonHelpers {
  let h = helpersOf.get(api);
  if (h === undefined) {
    h = makeCanonHelpers(api);
    helpersOf.set(api, h);
  }
  return h;
}

function makeCanonHelpers(api: ProxyApi): SchemeCanonHelpers {
  return {
    netloc: (url, port) => {
      const n = api.canonNetloc(url, port);
      // httpd's ap_proxy_canon_netloc leaves the path after its '/'.
      if (typeof n === 'string') return n;
      return { host: n.host, port: n.port, rest: n.rest.startsWith('/') ? n.rest.slice(1) : n.rest };
    },
    encodePath: (r, path) => canonPath(api, r, path),
  };
}

/** The request's SchemeCall: mod_proxy's pool, connect and settings for `worker`.
 *  `proxyFunction` is the name httpd's lines use ("FCGI", "SCGI", "uwsgi"). */
export function schemeCall(
  api: ProxyApi, r: Request, proxyFunction: string, worker: ProxyWorker, conf: ProxyServerConf,
  url: string, proxyname: string | undefined, proxyport: number,
): SchemeCall {
  const p = worker.params;
  const port = getServerPort(r);
  const defaultPort = httpScheme(r) === 'https' ? 443 : 80;
  const dconf = api.dirConf(r);
  let conn: ProxyConn | undefined;
  return {
    url,
    timeoutMs: api.backendTimeout(worker, r),
    ioBufferSize: p.iobuffersize ?? AP_IOBUFSIZE,
    flushPackets: p.flushpackets ?? 'off',
    flushWait: p.flushwait ?? 10,
    reuseAsked: p.disablereuse === false || p.enablereuse === true,
    serverPortStr: port === defaultPort ? '' : `:${port}`,
    shouldOverride(status) {
      if (dconf.errorOverride !== true) return false;
      if (dconf.errorOverrideCodes.length === 0) return status >= 400 && status < 600;
      return dconf.errorOverrideCodes.includes(status);
    },
    async connect(oneExchange) {
      let c = api.acquireConnection(proxyFunction, worker, r.server);
      if (c instanceof Promise) c = await c;
      if (typeof c === 'number') return { failed: c, stage: 'acquire', hostname: worker.hostname, port: worker.port };
      conn = c;
      let st = api.determineConnection(r, conf, worker, c, url, proxyname, proxyport);
      if (st instanceof Promise) st = await st;
      if (st !== OK) return { failed: st, stage: 'determine', hostname: c.hostname, port: c.port };
      if (!(c.socket !== null && api.isSocketConnected(c))) {
        let cs = api.connectBackend(proxyFunction, c, worker, r, oneExchange);
        if (cs instanceof Promise) cs = await cs;
        if (cs === OK && c.stream !== null) return { socket: c.stream, hostname: c.hostname, port: c.port };
        if (cs !== OK || c.socket === null) return { failed: cs === OK ? 503 : cs, stage: 'connect', hostname: c.hostname, port: c.port };
      }
      if (c.pending !== null && c.pending.length > 0) {
        // Bytes read after the previous answer on this pooled connection come first.
        c.socket.unshift(c.pending);
        c.pending = null;
      }
      return { socket: c.socket, hostname: c.hostname, port: c.port };
    },
    release(close) {
      if (conn === undefined) return;
      if (close) conn.close = true;
      api.releaseConnection(proxyFunction, conn, r.server);
      conn = undefined;
    },
  };
}
