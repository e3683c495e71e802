// mod_proxy_uwsgi (modules/proxy/mod_proxy_uwsgi.c): the uwsgi:// scheme of mod_proxy, for
// uWSGI applications. No directives; the request and the answer are in uwsgi-exchange.ts.

import { DECLINED, MODULE_API_VERSION, defineModule } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import type { CanonHelpers } from './mod_proxy_fcgi.js';
import { MODULE, UWSGI_DEFAULT_PORT, uwsgiExchange, uwsgiPathInfo } from './uwsgi-exchange.js';
import { canonHelpers, proxyApi, schemeCall, type SchemeCall } from './scheme-call.js';
import type { ProxySchemeProvider } from '../../proxy/api.js';
import { OK } from '../../server/module.js';

function hasCtlOrSpace(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** uwsgi_canon. */
export function uwsgiCanon(r: Request, url: string, h: CanonHelpers): number {
  if (url.slice(0, 8).toLowerCase() !== 'uwsgi://') return DECLINED;
  const rest = url.slice(6);
  const n = h.netloc(rest, UWSGI_DEFAULT_PORT);
  if (typeof n === 'string') {
    r.log(MODULE, APLOG_ERR, `AH10097: error parsing URL ${rest}: ${n}`);
    return 400;
  }
  const sport = n.port !== UWSGI_DEFAULT_PORT ? `:${n.port}` : '';
  const host = n.host.includes(':') ? `[${n.host}]` : n.host;
  let path: string;
  if (r.notes.has('proxy-nocanon') || r.notes.has('proxy-noencode')) {
    path = n.rest;
    if (hasCtlOrSpace(path)) {
      r.log(MODULE, APLOG_ERR, 'AH10417: To be forwarded path contains control characters or spaces');
      return 403;
    }
  } else {
    const enc = h.encodePath(r, n.rest);
    if (enc === undefined) return 400;
    path = enc;
  }
  r.filename = `proxy:uwsgi://${host}${sport}/${path}`;
  return OK;
}

/** uwsgi_handler. */
export async function uwsgiHandle(r: Request, call: SchemeCall): Promise<number> {
  const url = call.url;
  if (url.slice(0, 8).toLowerCase() !== 'uwsgi://') {
    if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `declining URL ${url}`);
    return DECLINED;
  }
  const pi = uwsgiPathInfo(r, url);
  if (pi === undefined) return 500;
  // httpd decodes the path inside r->filename itself.
  r.filename = pi.filename;
  r.subprocessEnv.set('PATH_INFO', pi.pathInfo);
  const conn = await call.connect(true);
  if ('failed' in conn) {
    call.release(true);
    if (conn.stage !== 'connect') return conn.failed;
    r.log(MODULE, APLOG_ERR, `AH10101: failed to make connection to backend: ${conn.hostname}:${conn.port}`);
    return 503;
  }
  try {
    return await uwsgiExchange(r, {
      socket: conn.socket, hostname: conn.hostname, port: conn.port, timeoutMs: call.timeoutMs,
      shouldOverride: (s) => call.shouldOverride(s),
    });
  } finally {
    call.release(true);
  }
}

/** proxy_hook_canon_handler and proxy_hook_scheme_handler, through mod_proxy's functions. */
const scheme: ProxySchemeProvider = {
  canon(r, url) {
    const api = proxyApi(r);
    return api === undefined ? DECLINED : uwsgiCanon(r, url, canonHelpers(api));
  },
  handle(r, worker, conf, url, proxyname, proxyport) {
    const api = proxyApi(r);
    if (api === undefined) return Promise.resolve(DECLINED);
    return uwsgiHandle(r, schemeCall(api, r, 'uwsgi', worker, conf, url, proxyname, proxyport));
  },
};

const self = defineModule<undefined, undefined>({
  name: 'proxy_uwsgi_module',
  source: 'mod_proxy_uwsgi.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'proxy_scheme', name: 'uwsgi', version: '0', provider: scheme }],
});

export default self;
