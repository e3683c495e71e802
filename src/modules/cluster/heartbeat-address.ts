// The address of HeartbeatAddress and HeartbeatListen as httpd reads it (apr_parse_addr_port,
// then an IPv4 apr_sockaddr_info_get): "host:port", shared by mod_heartbeat and mod_heartmonitor.

import * as net from 'node:net';
import { resolveHostSync } from '../../server/core/resolve.js';

export interface HbAddress {
  readonly host: string;
  readonly port: number;
}

/** The errors, worded per directive: `what` names the address ("address", "multicast address"). */
export function parseHbAddress(text: string, directive: string, what: 'address' | 'multicast address'): HbAddress | string {
  let host: string | undefined;
  let portText = '';
  const parseError = what === 'address' ? `${directive}: Unable to parse address.` : `${directive}: Unable to parse multicast address.`;
  // An empty host before the colon is refused; digits after the last colon are the port
  // (1-65535); anything else is all host (without a port).
  const v6 = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
  if (v6 !== null) {
    host = v6[1]!;
    portText = v6[2] ?? '';
  } else {
    const c = text.lastIndexOf(':');
    if (c >= 0 && /^\d+$/.test(text.slice(c + 1))) { host = text.slice(0, c); portText = text.slice(c + 1); } else if (/^\d+$/.test(text)) portText = text; else host = text;
  }
  if (host === '') return parseError;
  if (portText !== '' && (!/^\d+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535)) return parseError;
  if (host === undefined) return `${directive}: No host provided in ${what}`;
  const port = portText === '' ? 0 : Number(portText);
  if (port === 0) return `${directive}: No port provided in ${what}`;
  // APR_INET: an IPv4 address or a name with one.
  const ip = net.isIPv4(host) ? host : net.isIPv6(host) ? undefined : resolveHostSync(host);
  if (ip === undefined || !net.isIPv4(ip)) {
    return what === 'address' ? `${directive}: apr_sockaddr_info_get failed.` : `${directive}: apr_sockaddr_info_get failed on multicast address`;
  }
  return { host: ip, port };
}
