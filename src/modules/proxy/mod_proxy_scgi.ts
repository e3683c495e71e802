// mod_proxy_scgi (modules/proxy/mod_proxy_scgi.c): the scgi:// scheme of mod_proxy.
// ProxySCGISendfile and ProxySCGIInternalRedirect, and the specification's rule for
// PATH_INFO: 2.4 computes it only when the proxy-scgi-pathinfo variable is set (2.2 always
// did). The request and the answer are in scgi-exchange.ts.

import {
  ACCESS_CONF, DECLINED, MODULE_API_VERSION, OK, RSRC_CONF, defineModule, directive,
} from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import type { CanonHelpers } from './mod_proxy_fcgi.js';
import {
  MODULE, SCGI_DEF_PORT, createDirConfig, mergeDirConfig, scgiExchange, scgiFollowUp, setInternalRedirect, setSendfile,
  type ScgiConfigState,
} from './scgi-exchange.js';
import { canonHelpers, proxyApi, schemeCall, type SchemeCall } from './scheme-call.js';
import type { ProxySchemeProvider } from '../../proxy/api.js';

/** scgi_canon. */
export function scgiCanon(r: Request, url: string, h: CanonHelpers): number {
  if (url.slice(0, 7).toLowerCase() !== 'scgi://') return DECLINED;
  const rest = url.slice(5);
  const n = h.netloc(rest, SCGI_DEF_PORT);
  if (typeof n === 'string') {
    r.log(MODULE, APLOG_ERR, `AH00857: error parsing URL ${rest}: ${n}`);
    return 400;
  }
  const sport = n.port !== SCGI_DEF_PORT ? `:${n.port}` : '';
  const host = n.host.includes(':') ? `[${n.host}]` : n.host;
  const path = h.encodePath(r, n.rest);
  if (path === undefined) return 400;
  r.filename = `proxy:scgi://${host}${sport}/${path}`;
  // The specification's 2.4 rule: PATH_INFO only when asked for.
  if (r.subprocessEnv.has('proxy-scgi-pathinfo')) r.pathInfo = '/' + path;
  return OK;
}

/** scgi_handler, then scgi_request_status once the connection is closed. */
export async function scgiHandle(r: Request, call: SchemeCall): Promise<number> {
  const url = call.url;
  if (url.slice(0, 7).toLowerCase() !== 'scgi://') {
    if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH00865: declining URL ${url}`);
    return DECLINED;
  }
  const conn = await call.connect(true);
  if ('failed' in conn) {
    call.release(true);
    if (conn.stage !== 'connect') return conn.failed;
    r.log(MODULE, APLOG_ERR, `AH00866: failed to make connection to backend: ${conn.hostname}:${conn.port}`);
    return 503;
  }
  let res: Awaited<ReturnType<typeof scgiExchange>>;
  try {
    res = await scgiExchange(r, { socket: conn.socket, hostname: conn.hostname, port: conn.port, timeoutMs: call.timeoutMs }, self.dir(r));
  } finally {
    // An SCGI connection carries one request.
    call.release(true);
  }
  if (res.status !== OK) return res.status;
  return scgiFollowUp(r, res.follow);
}

/** proxy_hook_canon_handler and proxy_hook_scheme_handler, through mod_proxy's functions. */
const scheme: ProxySchemeProvider = {
  canon(r, url) {
    const api = proxyApi(r);
    return api === undefined ? DECLINED : scgiCanon(r, url, canonHelpers(api));
  },
  handle(r, worker, conf, url, proxyname, proxyport) {
    const api = proxyApi(r);
    if (api === undefined) return Promise.resolve(DECLINED);
    return scgiHandle(r, schemeCall(api, r, 'SCGI', worker, conf, url, proxyname, proxyport));
  },
};

const self = defineModule<undefined, ScgiConfigState>({
  name: 'proxy_scgi_module',
  source: 'mod_proxy_scgi.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, ScgiConfigState, 'TAKE1'>({
      name: 'ProxySCGISendfile', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF,
      help: 'The name of the X-Sendfile pseudo response header or On or Off', handler: setSendfile,
    }),
    directive<undefined, ScgiConfigState, 'TAKE1'>({
      name: 'ProxySCGIInternalRedirect', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF,
      help: 'The name of the pseudo response header or On or Off', handler: setInternalRedirect,
    }),
  ],
  providers: [{ group: 'proxy_scheme', name: 'scgi', version: '0', provider: scheme }],
});

export default self;
