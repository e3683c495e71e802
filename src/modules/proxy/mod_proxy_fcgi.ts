// mod_proxy_fcgi (modules/proxy/mod_proxy_fcgi.c): the fcgi:// scheme of mod_proxy — PHP-FPM
// and other FastCGI responders over TCP or a unix socket (ProxyPass fcgi://..., SetHandler
// "proxy:unix:/run/php/php-fpm.sock|fcgi://localhost"). ProxyFCGIBackendType, ProxyFCGISetEnvIf,
// the proxy-fcgi-pathinfo forms, SCRIPT_FILENAME as httpd sends it; the exchange itself is in
// fcgi-dispatch.ts, the environment in fcgi-env.ts.

import {
  DECLINED, MODULE_API_VERSION, OK, OR_FILEINFO, defineModule, directive,
} from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_TRACE1 } from '../../server/log/levels.js';
import { FilterError } from '../../server/filters.js';
import { fcgiDoRequest, type FcgiBackend } from './fcgi-dispatch.js';
import {
  MODULE, addSetEnvIf, applyPathinfo, buildEnvironment, createDirConfig, mergeDirConfig, setBackendType,
  type FcgiDirConfig,
} from './fcgi-env.js';
import { canonHelpers, proxyApi, schemeCall, type SchemeCall } from './scheme-call.js';
import type { ProxySchemeProvider } from '../../proxy/api.js';

/** The fcgi scheme's default port (ap_proxy_port_of_scheme("fcgi")). */
export const FCGI_DEFAULT_PORT = 8000;
/** MAX_MEM_SPOOL: what is read of the request body before connecting. */
const MAX_MEM_SPOOL = 16384;

/** What canonicalisation needs from mod_proxy (ap_proxy_canon_netloc, ap_proxy_canonenc_ex). */
export interface CanonHelpers {
  /** "//host:port/rest" → host, port and "rest" (without its '/'), or httpd's error text. */
  netloc(url: string, defaultPort: number): { host: string; port: number; rest: string } | string;
  /** The path re-encoded as httpd's enc_path canonicalisation does; undefined when refused. */
  encodePath(r: Request, path: string): string | undefined;
}

/** The per-request state of proxy_fcgi_canon (httpd's fcgi_req_config_t). */
const needDirwalk = new WeakSet<Request>();

/** A control character or space in a path that was not re-encoded (ap_scan_vchar_obstext). */
function hasCtlOrSpace(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** proxy_fcgi_canon. */
export function fcgiCanon(r: Request, url: string, h: CanonHelpers): number {
  if (url.slice(0, 5).toLowerCase() !== 'fcgi:') return DECLINED;
  const rest = url.slice(5);
  if (r.wantsLog(MODULE, APLOG_TRACE1)) r.log(MODULE, APLOG_TRACE1, `canonicalising URL ${rest}`);
  const n = h.netloc(rest, FCGI_DEFAULT_PORT);
  if (typeof n === 'string') {
    r.log(MODULE, APLOG_ERR, `AH01059: error parsing URL ${rest}: ${n}`);
    return 400;
  }
  const sport = n.port !== FCGI_DEFAULT_PORT ? `:${n.port}` : '';
  const host = n.host.includes(':') ? `[${n.host}]` : n.host;
  let path: string;
  const raw = r.notes.has('proxy-nocanon') || r.notes.has('proxy-noencode');
  if (raw) {
    path = n.rest;
    if (hasCtlOrSpace(path)) {
      r.log(MODULE, APLOG_ERR, 'AH10414: To be forwarded path contains control characters or spaces');
      return 403;
    }
  } else {
    const enc = h.encodePath(r, n.rest);
    if (enc === undefined) return 400;
    path = enc;
  }
  r.filename = `proxy:fcgi://${host}${sport}/${path}`;
  if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH01060: set r->filename to ${r.filename}`);
  if (applyPathinfo(r, path)) needDirwalk.add(r);
  return OK;
}

/** The request body as the exchange takes it (prefetchBody). */
interface Prefetched { status: number; next: () => Promise<Buffer | null>; whole: Buffer | undefined }

/** A request without a body: nothing to send but the empty STDIN record. */
const NO_BODY: Prefetched = { status: OK, next: (): Promise<Buffer | null> => Promise.resolve(null), whole: Buffer.alloc(0) };

/** The request body as ap_proxy_prefetch_input leaves it: read ahead up to MAX_MEM_SPOOL
 *  bytes before connecting, Content-Length set from it when that was all of it (a chunked
 *  body becomes a counted one), the whole of it spooled when proxy-sendcl asks for a length. */
async function prefetchBody(r: Request, ioBufferSize: number): Promise<Prefetched> {
  const oldTe = r.headersIn.get('Transfer-Encoding');
  let oldCl: string | undefined;
  if (oldTe !== undefined) r.headersIn.unset('Content-Length');
  else oldCl = r.headersIn.get('Content-Length');
  const pieces: Buffer[] = [];
  let bytes = 0;
  let ended = false;
  try {
    while (bytes < MAX_MEM_SPOOL) {
      const b = await r.read();
      if (b === null) { ended = true; break; }
      pieces.push(b);
      bytes += b.length;
    }
    if (ended) {
      if (oldCl !== undefined || oldTe !== undefined || bytes > 0) {
        r.headersIn.set('Content-Length', String(bytes));
        if (oldTe !== undefined) r.headersIn.unset('Transfer-Encoding');
      }
    } else if (oldCl === undefined && r.subprocessEnv.has('proxy-sendcl')) {
      // No streaming: the length is needed, so all of it is read first.
      for (let b = await r.read(); b !== null; b = await r.read()) { pieces.push(b); bytes += b.length; }
      ended = true;
      r.headersIn.set('Content-Length', String(bytes));
      if (oldTe !== undefined) r.headersIn.unset('Transfer-Encoding');
    }
  } catch (e) {
    return { status: e instanceof FilterError ? e.status : 400, next: () => Promise.resolve(null), whole: undefined };
  }
  if (ended && bytes === 0) return NO_BODY;
  // What was read ahead goes out in records of up to ProxyIOBufferSize bytes, however the
  // client's chunks fell (httpd partitions the prefetched brigade by iobuf_size).
  let ahead = pieces.length > 0 ? Buffer.concat(pieces) : null;
  return {
    status: OK,
    // All of it read: the exchange sends it with the environment.
    whole: ended ? (ahead ?? Buffer.alloc(0)) : undefined,
    next: () => {
      if (ahead !== null) {
        const p = ahead.subarray(0, ioBufferSize);
        ahead = ahead.length > ioBufferSize ? ahead.subarray(ioBufferSize) : null;
        return Promise.resolve(p);
      }
      return ended ? Promise.resolve(null) : r.read();
    },
  };
}

/** proxy_fcgi_handler. */
export async function fcgiHandle(r: Request, call: SchemeCall, proxyname = '(null)', proxyport = 0): Promise<number> {
  const url = call.url;
  if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH01076: url: ${url} proxyname: ${proxyname} proxyport: ${proxyport}`);
  if (url.slice(0, 5).toLowerCase() !== 'fcgi:') {
    if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH01077: declining URL ${url}`);
    return DECLINED;
  }
  if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH01078: serving URL ${url}`);
  // A request without a body (no Content-Length, no Transfer-Encoding, no input filter
  // linked: the first read would give its end) has nothing to read ahead.
  let body: Prefetched | Promise<Prefetched> = r.body === null && r.inputHead === null && r.inputFilters.length === 0 && !r.headersIn.has('Content-Length') && !r.headersIn.has('Transfer-Encoding')
    ? NO_BODY : prefetchBody(r, call.ioBufferSize);
  if (body instanceof Promise) body = await body;
  if (body.status !== OK) return body.status;
  // Connections are not reused unless disablereuse=Off was given on purpose: a FastCGI
  // server may not expect parallel requests on one connection.
  const keep = call.reuseAsked;
  const conn = await call.connect(!keep);
  if ('failed' in conn) {
    call.release(true);
    if (conn.stage !== 'connect') return conn.failed;
    r.log(MODULE, APLOG_ERR, `AH01079: failed to make connection to backend: ${conn.hostname}`);
    return 503;
  }
  let close = true;
  try {
    const d = self.dir(r);
    if (needDirwalk.has(r)) {
      // DIFFERENCE: httpd re-runs its directory walk on the proxy: filename here, which only
      // re-merges <Directory "proxy:..."> sections; plume's merge already holds them.
      needDirwalk.delete(r);
    }
    const backend: FcgiBackend = {
      socket: conn.socket,
      timeoutMs: call.timeoutMs,
      ioBufferSize: call.ioBufferSize,
      flushPackets: call.flushPackets,
      flushWait: call.flushWait,
      keepConn: keep,
      serverPortStr: call.serverPortStr,
      // (schemeCall's method uses no `this`.)
      shouldOverride: call.shouldOverride,
    };
    let env = buildEnvironment(r, d);
    if (env instanceof Promise) env = await env;
    if (!env) {
      r.log(MODULE, APLOG_ERR, `AH01074: Failed writing Environment to ${call.serverPortStr}:`, { code: 20014, text: 'Internal error (specific information not available)' });
      return 503;
    }
    const out = await fcgiDoRequest(r, backend, r.subprocessEnv, body.next, body.whole);
    close = out.close;
    return out.status;
  } finally {
    call.release(close);
  }
}

/** proxy_hook_canon_handler and proxy_hook_scheme_handler, through mod_proxy's functions. */
const scheme: ProxySchemeProvider = {
  // Asked by mod_proxy for fcgi:// URLs alone (and for all at LogLevel debug, for AH01076/AH01077).
  schemes: ['fcgi'],
  declineLog: MODULE,
  canon(r, url) {
    const api = proxyApi(r);
    return api === undefined ? DECLINED : fcgiCanon(r, url, canonHelpers(api));
  },
  handle(r, worker, conf, url, proxyname, proxyport) {
    const api = proxyApi(r);
    if (api === undefined) return Promise.resolve(DECLINED);
    return fcgiHandle(r, schemeCall(api, r, 'FCGI', worker, conf, url, proxyname, proxyport), proxyname ?? '(null)', proxyport);
  },
};

const self = defineModule<undefined, FcgiDirConfig>({
  name: 'proxy_fcgi_module',
  source: 'mod_proxy_fcgi.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, FcgiDirConfig, 'TAKE1'>({
      name: 'ProxyFCGIBackendType', args: 'TAKE1', where: OR_FILEINFO,
      help: "Specify the type of FastCGI server: 'Generic', 'FPM'", handler: setBackendType,
    }),
    directive<undefined, FcgiDirConfig, 'TAKE23'>({
      name: 'ProxyFCGISetEnvIf', args: 'TAKE23', where: OR_FILEINFO,
      help: 'expr-condition env-name expr-value', handler: addSetEnvIf,
    }),
  ],
  providers: [{ group: 'proxy_scheme', name: 'fcgi', version: '0', provider: scheme }],
});

export default self;
