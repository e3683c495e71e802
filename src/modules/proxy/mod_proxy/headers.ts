// ap_proxy_create_hdrbrgd (proxy_util.c): the request line and the header fields a protocol
// module sends to an HTTP backend (mod_proxy_http, mod_proxy_wstunnel): the client's fields
// without the hop-by-hop ones, Host (the backend's, or the client's with ProxyPreserveHost),
// Via (ProxyVia), X-Forwarded-For/-Host/-Server (ProxyAddHeaders), Expect for 100-continue.

import type { Request } from '../../../server/request/request.js';
import { APLOG_WARNING } from '../../../server/log/levels.js';
import { getServerName } from '../../../server/core/server-name.js';
import { APACHE_COMPAT_VERSION } from '../../../server/version.js';
import { PROXYREQ_REVERSE, type ProxyApi, type ProxyDirConf, type ProxyServerConf } from '../../../proxy/api.js';
import { clearConnection } from '../http-response.js';

/** AP_SERVER_BASEVERSION, as ProxyVia Full prints it. */
const VIA_BANNER = `Apache/${APACHE_COMPAT_VERSION}`;

function hasToken(v: string | undefined, tok: string): boolean {
  return v !== undefined && v.split(',').some((t) => t.trim().toLowerCase() === tok);
}

/** The client's fields that createHeaders takes out, merges into or reads: a request with
 *  none of them (but Host) gets its head in one pass over its fields (plainHead). */
const SPECIAL = new Set([
  'transfer-encoding', 'content-length', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer',
  'via', 'expect', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-server', 'proxy-authorization',
]);

/** The backend host as the Host field names it (the backend's own, without ProxyPreserveHost). */
function backendHost(req: Parameters<ProxyApi['createHeaders']>[2]): string {
  const bare = req.host.replace(/^\[|\]$/g, '');
  const withPort = req.portStr !== undefined && Number(req.portStr) !== 80;
  return bare.includes(':') ? `[${bare}]${withPort ? ':' + req.portStr : ''}` : `${bare}${withPort ? ':' + req.portStr : ''}`;
}

/** The Via value this proxy adds (ProxyVia On / Full). */
function viaValue(r: Request, full: boolean, serverPortStr: string): string {
  let sn = getServerName(r);
  if (sn === r.hostname) sn = r.server.serverHostname ?? sn;
  const v = `${Math.floor(r.protoNum / 1000)}.${r.protoNum % 1000} ${sn}${serverPortStr}`;
  return full ? `${v} (${VIA_BANNER})` : v;
}

/** createHeaders for a main request whose fields include none of SPECIAL (the usual case):
 *  the same head, built in one pass with no copy of the table; undefined when a field is
 *  special (createHeaders then works on a copy as ap_proxy_create_hdrbrgd does). */
function plainHead(r: Request, sconf: ProxyServerConf, dconf: ProxyDirConf, req: Parameters<ProxyApi['createHeaders']>[2]): string | undefined {
  let savedHost: string | undefined;
  let fields = '';
  let special = false;
  r.headersIn.forEach((name, value, key) => {
    if (key === 'host') { savedHost ??= value; return; }
    if (SPECIAL.has(key)) { special = true; return; }
    fields += `${name}: ${value}\r\n`;
  });
  if (special) return undefined;
  let host: string;
  if (dconf.preserveHost !== true) host = backendHost(req);
  else {
    if (savedHost === undefined) return undefined;
    host = savedHost;
  }
  // What the copy's merges would append, in their order: none was there before.
  const via = sconf.viaopt ?? 'off';
  if (via !== 'off' && via !== 'block') fields += `Via: ${viaValue(r, via === 'full', req.serverPortStr)}\r\n`;
  if (req.expect100) fields += 'Expect: 100-Continue\r\n';
  if (dconf.addForwardedHeaders !== false && r.proxyreq === PROXYREQ_REVERSE) {
    fields += `X-Forwarded-For: ${r.useragentIp}\r\n`;
    if (savedHost !== undefined) fields += `X-Forwarded-Host: ${savedHost}\r\n`;
    fields += `X-Forwarded-Server: ${r.server.serverHostname ?? ''}\r\n`;
  }
  const creds = r.notes.get('proxy-basic-creds');
  if (creds !== undefined) fields += `Proxy-Authorization: ${creds}\r\n`;
  return `${r.method} ${req.target} HTTP/1.${req.force10 ? 0 : 1}\r\nHost: ${host}\r\n${fields}`;
}

export function createHeaders(
  r: Request, sconf: ProxyServerConf, dconf: ProxyDirConf, req: Parameters<ProxyApi['createHeaders']>[2],
): ReturnType<ProxyApi['createHeaders']> {
  if (r.main === null) {
    const head = plainHead(r, sconf, dconf, req);
    if (head !== undefined) return { head, oldCl: undefined, oldTe: undefined };
  }
  const env = r.subprocessEnv;
  const savedHost = r.headersIn.get('Host');
  const h = r.headersIn.copy();
  const oldTe = h.get('Transfer-Encoding');
  const oldCl = h.get('Content-Length');
  h.unset('Transfer-Encoding');
  h.unset('Content-Length');
  clearConnection((n) => h.get(n), (n) => h.unset(n));
  h.unset('Keep-Alive');
  h.unset('Upgrade');
  h.unset('TE');
  h.unset('Trailer');
  let host: string;
  if (dconf.preserveHost !== true) {
    host = backendHost(req);
  } else {
    host = savedHost ?? r.server.serverHostname ?? '';
    if (savedHost === undefined) r.log('proxy', APLOG_WARNING, `AH01092: no HTTP 0.9 request (with no host line) on incoming request and preserve host set forcing hostname to be ${host} for uri ${r.uri}`);
  }
  h.unset('Host');
  const via = sconf.viaopt ?? 'off';
  if (via === 'block') h.unset('Via');
  else if (via !== 'off') h.merge('Via', viaValue(r, via === 'full', req.serverPortStr));
  if (req.expect100) {
    const ex = h.get('Expect');
    if (ex === undefined || !hasToken(ex, '100-continue')) h.merge('Expect', '100-Continue');
  } else h.unset('Expect');
  if (dconf.addForwardedHeaders !== false && r.proxyreq === PROXYREQ_REVERSE) {
    h.merge('X-Forwarded-For', r.useragentIp);
    if (savedHost !== undefined) h.merge('X-Forwarded-Host', savedHost);
    h.merge('X-Forwarded-Server', r.server.serverHostname ?? '');
  }
  if (r.user !== undefined && !env.has('Proxy-Chain-Auth')) h.unset('Proxy-Authorization');
  if (r.main !== null) for (const n of ['If-Match', 'If-Modified-Since', 'If-Range', 'If-Unmodified-Since', 'If-None-Match']) h.unset(n);
  const creds = r.notes.get('proxy-basic-creds');
  if (creds !== undefined) h.merge('Proxy-Authorization', creds);
  let head = `${r.method} ${req.target} HTTP/1.${req.force10 ? 0 : 1}\r\nHost: ${host}\r\n`;
  h.forEach((name, value) => { head += `${name}: ${value}\r\n`; });
  return { head, oldCl, oldTe };
}
