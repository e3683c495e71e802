// The server's own name and port for self-referential URLs (httpd's core.c ap_get_server_name,
// ap_get_server_port, ap_construct_url), per UseCanonicalName and UseCanonicalPhysicalPort.
// Measured on Apache 2.4.71: a ServerName without a port leaves the server's port unset, so
// without a port in the Host header the URL has none (the default port), whatever port the
// connection came in on; only UseCanonicalPhysicalPort On uses the local port.

import type { Request } from '../request/request.js';
import { coreDir } from './config.js';

/** ap_http_scheme: the ServerName scheme, else http. */
export function httpScheme(r: Request): string {
  return r.server.scheme ?? 'http';
}

/** ap_default_port: 443 for https, else 80. */
export function defaultPort(r: Request): number {
  return httpScheme(r).toLowerCase() === 'https' ? 443 : 80;
}

/** ap_matches_request_vhost: whether host:port names this request's server: one of its
 *  <VirtualHost> addresses (with its port, or any port for *), else its ServerName or a
 *  ServerAlias on the server's own port (unset, 0, without a port in ServerName). */
export function matchesRequestVhost(r: Request, host: string, port: number): boolean {
  const s = r.server;
  const h = host.toLowerCase();
  for (const a of s.addrs) {
    if ((a.port === 0 || a.port === port) && a.host.toLowerCase() === h) return true;
  }
  if (port !== s.port) return false;
  return s.matchesName(h);
}

/** ap_get_server_name. */
export function getServerName(r: Request): string {
  const ucn = coreDir(r)?.useCanonicalName ?? 'off';
  if (ucn === 'on') return r.server.serverHostname ?? r.connection.localIp;
  if (ucn === 'dns') return r.connection.localIp;
  return r.hostname || r.server.serverHostname || r.connection.localIp;
}

/** ap_get_server_port. */
export function getServerPort(r: Request): number {
  const c = coreDir(r);
  const ucn = c?.useCanonicalName ?? 'off';
  const physical = c?.useCanonicalPhysicalPort === 'on';
  if (ucn === 'on') {
    if (r.server.port) return r.server.port;
    if (physical && r.connection.localPort) return r.connection.localPort;
    return defaultPort(r);
  }
  if (r.parsedPort) return r.parsedPort;
  if (physical && r.connection.localPort) return r.connection.localPort;
  return r.server.port || defaultPort(r);
}

/** ap_construct_url: scheme://name[:port]uri, the port left out when it is the default. */
export function constructUrl(r: Request, uri: string): string {
  const port = getServerPort(r);
  let host = getServerName(r);
  // ap_get_server_name_for_url: an IPv6 literal goes in brackets.
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  const scheme = httpScheme(r);
  return port === defaultPort(r) ? `${scheme}://${host}${uri}` : `${scheme}://${host}:${port}${uri}`;
}
