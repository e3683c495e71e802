// mod_proxy_wstunnel (modules/proxy/mod_proxy_wstunnel.c) as httpd 2.4.47+ has it: ws:// and
// wss:// URLs are handled by mod_proxy_http's tunnelling (Upgrade: websocket); this module only
// canonicalises those URLs and declines to handle them while mod_proxy_http is loaded
// ("ProxyWebsocketFallbackToProxyHttp On", the default). With the fallback off it would tunnel
// itself; plume tunnels through mod_proxy_http either way, so the directive's Off is refused.

import { defineModule, directive, MODULE_API_VERSION, DECLINED, OK, RSRC_CONF, ACCESS_CONF, type ModuleDecl } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { PROXYREQ_REVERSE, type ProxySchemeProvider } from '../../proxy/api.js';

interface DirConf { fallback: boolean | undefined }

/** proxy_wstunnel_canon: ws:// and wss:// URLs, once mod_proxy_http declined them. */
function canon(r: Request, url: string): number {
  const m = /^(wss?):/i.exec(url);
  if (m === null) return DECLINED;
  const api = r.rt.ctx.provider('proxy_api', 'mod_proxy');
  if (api === undefined) return DECLINED;
  const scheme = m[1]!.toLowerCase();
  const def = api.portOfScheme(scheme);
  const nl = api.canonNetloc(url.slice(m[0].length), def);
  if (typeof nl === 'string') {
    r.log('proxy_wstunnel', 3, `AH02439: error parsing URL ${url.slice(m[0].length)}: ${nl}`);
    return 400;
  }
  const path = r.notes.has('proxy-nocanon') ? nl.rest : api.canonenc(nl.rest, 'path', false, PROXYREQ_REVERSE);
  if (path === undefined) return 400;
  const sport = nl.port !== def ? `:${nl.port}` : '';
  r.filename = `proxy:${scheme}://${nl.host}${sport}${path}${r.args !== undefined ? '?' + r.args : ''}`;
  return OK;
}

const provider: ProxySchemeProvider = {
  canon,
  // mod_proxy_http, loaded before this module, takes ws:// and wss:// (the fallback).
  handle: async () => DECLINED,
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
      help: 'whether to let mod_proxy_http handle the upgrade and tunneling',
      handler: (cmd, on: boolean) => {
        // DIFFERENCE: plume's tunnel is mod_proxy_http's; "Off" (this module tunnelling on
        // its own, as before 2.4.47) is refused rather than accepted and ignored.
        if (!on) return 'ProxyWebsocketFallbackToProxyHttp Off is not supported: WebSocket tunnels are mod_proxy_http\'s';
        (cmd.dir as DirConf).fallback = on;
        return undefined;
      },
    }),
    directive({
      name: 'ProxyWebsocketIdleTimeout', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF,
      help: 'timeout for activity in either direction, unlimited by default',
      handler: () => 'ProxyWebsocketIdleTimeout is only used with ProxyWebsocketFallbackToProxyHttp Off, which plume does not support',
    }),
  ],
  providers: [{ group: 'proxy_scheme', name: 'wstunnel', version: '0', provider }],
};

export default defineModule(decl);
