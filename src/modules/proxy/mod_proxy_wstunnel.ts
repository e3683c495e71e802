// mod_proxy_wstunnel (modules/proxy/mod_proxy_wstunnel.c) as httpd 2.4.71 has it. With
// "ProxyWebsocketFallbackToProxyHttp On" (the default) and mod_proxy_http loaded, ws:// and
// wss:// URLs are mod_proxy_http's (its Upgrade tunnelling): this module declines them. With
// the fallback Off, or without mod_proxy_http, it handles them itself as before 2.4.47: a
// ProxyPass to ws:// takes only requests with an Upgrade header (the others go on to the next
// ProxyPass), the request goes to the backend with "Upgrade" and "Connection: Upgrade", and
// from then on bytes are relayed both ways, the backend's answer (its 101) included, until one
// side closes (2.4.71 has no idle timeout here: ProxyWebsocketIdleTimeout is trunk's).

import { defineModule, directive, MODULE_API_VERSION, DECLINED, OK, RSRC_CONF, ACCESS_CONF, type ModuleDecl } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO } from '../../server/log/levels.js';
import { defaultPort, getServerPort } from '../../server/core/server-name.js';
import { PROXYREQ_REVERSE, type ProxySchemeProvider, type ProxyWorker } from '../../proxy/api.js';

const MOD = 'proxy_wstunnel';
/** httpd polls the tunnel without a timeout; the longest timer Node has (24.8 days). */
const NO_TIMEOUT = 2 ** 31 - 1;

interface DirConf { fallback: boolean | undefined }

/** can_fallback_to_proxy_http && dconf->fallback_to_proxy_http. */
function fallsBack(r: Request): boolean {
  return (self.dir(r)?.fallback ?? true) && r.rt.ctx.isLoaded('proxy_http_module');
}

/** proxy_wstunnel_check_trans: ws:// only with an Upgrade header. */
function checkTrans(r: Request, url: string): number {
  if (fallsBack(r)) return DECLINED;
  if (!/^wss?:/i.test(url)) return DECLINED;
  return r.headersIn.get('Upgrade') === undefined ? 426 : OK;
}

/** proxy_wstunnel_canon. */
function canon(r: Request, url: string): number {
  if (fallsBack(r)) return DECLINED;
  const m = /^(wss?):/i.exec(url);
  if (m === null) return DECLINED;
  const api = r.rt.ctx.provider('proxy_api', 'mod_proxy');
  if (api === undefined) return DECLINED;
  const scheme = m[1]!.toLowerCase();
  const def = api.portOfScheme(scheme === 'ws' ? 'http' : 'https');
  const nl = api.canonNetloc(url.slice(m[0].length), def);
  if (typeof nl === 'string') {
    r.log(MOD, APLOG_ERR, `AH02439: error parsing URL ${url.slice(m[0].length)}: ${nl}`);
    return 400;
  }
  let path: string | undefined;
  let search: string | undefined;
  if (r.notes.has('proxy-nocanon')) path = nl.rest;
  else if (r.notes.has('proxy-noencode')) { path = nl.rest; search = r.args; }
  else {
    path = api.canonenc(nl.rest, 'path', false, PROXYREQ_REVERSE);
    if (path === undefined) return 400;
    search = r.args;
  }
  // eslint-disable-next-line no-control-regex
  const badChar = /[\x00-\x20\x7f]/;
  if (path === nl.rest && badChar.test(path)) {
    r.log(MOD, APLOG_ERR, 'AH10419: To be forwarded path contains control characters or spaces');
    return 403;
  }
  if (search !== undefined && badChar.test(search)) {
    r.log(MOD, APLOG_ERR, 'AH10409: To be forwarded query string contains control characters or spaces');
    return 403;
  }
  const sport = nl.port !== def ? `:${nl.port}` : '';
  const host = nl.host.includes(':') ? `[${nl.host}]` : nl.host;
  r.filename = `proxy:${scheme}://${host}${sport}${path.startsWith('/') ? '' : '/'}${path}${search !== undefined ? '?' + search : ''}`;
  return OK;
}

/** ap_proxy_worker_can_upgrade: the worker's upgrade= value is "*", the client's protocol, or
 *  a list with it as a token; without one, the default. */
function canUpgrade(w: ProxyWorker, upgrade: string, dflt: string): boolean {
  const wu = w.params.upgrade;
  if (wu !== undefined && wu !== '') {
    const want = upgrade.toLowerCase();
    return wu === '*' || wu.toLowerCase() === want || wu.split(/[\s,;]+/).some((t) => t.toLowerCase() === want);
  }
  return dflt.toLowerCase() === upgrade.toLowerCase();
}

/** The Upgrade field sent to the backend (proxy_wstunnel_request): the worker's upgrade= (the
 *  client's own with ANY, "WebSocket" with NONE), else "WebSocket". */
function upgradeSent(w: ProxyWorker, client: string): string {
  const m = w.params.upgrade !== undefined && w.params.upgrade !== '' ? w.params.upgrade : 'WebSocket';
  if (m.toLowerCase() === 'none') return 'WebSocket';
  if (m.toLowerCase() === 'any') return client;
  return m;
}

const provider: ProxySchemeProvider = {
  first: true,
  checkTrans,
  canon,
  /** proxy_wstunnel_handler. */
  async handle(r, worker, conf, url, proxyname, proxyport) {
    if (fallsBack(r)) return DECLINED;
    const m = /^(wss?):/i.exec(url);
    if (m === null) {
      r.log(MOD, APLOG_DEBUG, `AH02450: declining URL ${url}`);
      return DECLINED;
    }
    const scheme = m[1]!.toUpperCase();
    const api = r.rt.ctx.provider('proxy_api', 'mod_proxy')!;
    const upgrade = r.headersIn.get('Upgrade');
    if (upgrade === undefined || !canUpgrade(worker, upgrade, 'WebSocket')) {
      const wanted = worker.params.upgrade ?? 'WebSocket';
      r.log(MOD, APLOG_INFO, `AH02900: require upgrade for URL ${url} (Upgrade header is ${upgrade ?? 'missing'}, expecting ${wanted})`);
      r.errHeadersOut.set('Connection', 'Upgrade');
      r.errHeadersOut.set('Upgrade', wanted);
      return 426;
    }
    r.log(MOD, APLOG_DEBUG, `AH02451: serving URL ${url}`);
    let acquired = api.acquireConnection(scheme, worker, r.server);
    if (acquired instanceof Promise) acquired = await acquired;
    if (typeof acquired === 'number') return acquired;
    const conn = acquired;
    try {
      let st = await api.determineConnection(r, conf, worker, conn, url, proxyname, proxyport);
      if (st !== OK) return st;
      st = await api.connectBackend(scheme, conn, worker, r);
      if (st !== OK) {
        if (st === 503) r.log(MOD, APLOG_ERR, `AH02452: failed to make connection to backend: ${conn.hostname}`);
        return st;
      }
      const u = /^[a-z0-9+.-]+:\/\/(\[[^\]]*\]|[^/:?#]*)(?::(\d*))?([^]*)$/i.exec(url.replace(/^unix:[^|]*\|/i, ''));
      let target = u?.[3] ?? '/';
      if (target === '') target = '/';
      if (proxyname !== undefined) target = url;
      const port = getServerPort(r);
      const { head } = api.createHeaders(r, conn, {
        target, host: u?.[1] ?? '', portStr: u?.[2] !== undefined && u[2] !== '' ? u[2] : undefined,
        serverPortStr: port !== defaultPort(r) ? `:${port}` : '', force10: false, expect100: false,
      });
      conn.socket!.write(`${head}Upgrade: ${upgradeSent(worker, upgrade)}\r\nConnection: Upgrade\r\n\r\n`, 'latin1');
      await api.tunnel(r, conn, NO_TIMEOUT);
      // No error page down a tunnel: what the backend answered went to the client as it was.
      r.connection.keepAlive = false;
      r.headersSent = true;
      r.eosSent = true;
      return OK;
    } finally {
      conn.close = true;
      api.releaseConnection(scheme, conn, r.server);
    }
  },
};

const decl: ModuleDecl<undefined, DirConf> = {
  name: 'proxy_wstunnel_module',
  source: 'mod_proxy_wstunnel.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ fallback: undefined }),
  mergeDirConfig: (b, a) => ({ fallback: a.fallback ?? b.fallback }),
  directives: [
    directive({
      name: 'ProxyWebsocketFallbackToProxyHttp', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF,
      help: 'whether to let mod_proxy_http handle the upgrade and tunneling, On by default',
      handler: (cmd, on: boolean) => { (cmd.dir as DirConf).fallback = on; return undefined; },
    }),
  ],
  providers: [{ group: 'proxy_scheme', name: 'wstunnel', version: '0', provider }],
};

const self = defineModule(decl);
export default self;
