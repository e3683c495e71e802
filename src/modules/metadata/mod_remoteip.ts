// mod_remoteip (modules/metadata/mod_remoteip.c): the client's address as a proxy in front
// reports it, which then is the request's address (r.useragentIp) for %a, Require ip,
// REMOTE_ADDR, expressions and the rest, while the connection keeps the proxy's (%{c}a,
// CONN_REMOTE_ADDR).
//
//  - RemoteIPHeader: a header (X-Forwarded-For) read right to left while the address it came
//    from is a trusted proxy (RemoteIPTrustedProxy / RemoteIPInternalProxy, and their *List
//    files; every proxy is trusted when none is listed); private addresses are not taken from
//    a proxy that is not internal. What is left stays in the header; RemoteIPProxiesHeader
//    gets the proxies that were passed through (the "remoteip-proxy-ip-list" note too).
//  - RemoteIPProxyProtocol: the PROXY protocol (v1 text, v2 binary) read at the start of each
//    connection to the server's addresses, except from RemoteIPProxyProtocolExceptions
//    networks; a bad header drops the connection without an answer, as httpd does.
//
// DIFFERENCE: the PROXY protocol runs as a connection layer before HTTP; on a port where
// mod_ssl's layer takes the connection (TLS), the PROXY header is not read.

import type * as net from 'node:net';
import {
  MODULE_API_VERSION, OK, DECLINED, HOOK_FIRST, RSRC_CONF,
  defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request, ConnRec } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { ConnectionLayer, ConnectionLayerProvider } from '../../server/http/connection-layer.js';
import type { Transport } from '../../server/http/tcp-stream.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { globals } from '../../server/core/globals.js';
import { resolveHostSync } from '../../server/core/resolve.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_NOTICE, APLOG_TRACE1, levelFor } from '../../server/log/levels.js';
import { APR_OS_START_EAIERR } from '../../server/log/error-log.js';
import {
  parseAddr, parseSubnet, subnetErrorText, subnetTest, addrEqual, type IpAddr, type IpSubnet,
} from '../../lib/ipsubnet.js';
import * as fs from 'node:fs';
import { parseProxyHeader, ipv6ToString as ipv6Text } from './proxy-protocol.js';

// ---- configuration ------------------------------------------------------------------------

interface ProxyMatch {
  readonly ip: IpSubnet;
  readonly internal: boolean;
}

/** An address RemoteIPProxyProtocol was set for (port 0 and the wildcard match any). */
interface AddrInfo {
  readonly addr: IpAddr | null;
  readonly port: number;
  readonly source: ServerRec;
}

export interface RemoteIpServerConfig {
  headerName: string | undefined;
  proxiesHeaderName: string | undefined;
  proxymatch: ProxyMatch[] | undefined;
  /** The main server's: where the PROXY protocol is on and off, and the exceptions. */
  enabled: AddrInfo[];
  disabled: AddrInfo[];
  disabledSubnets: IpSubnet[];
}

function createServerConfig(): RemoteIpServerConfig {
  return { headerName: undefined, proxiesHeaderName: undefined, proxymatch: undefined, enabled: [], disabled: [], disabledSubnets: [] };
}

function mergeServerConfig(base: Readonly<RemoteIpServerConfig>, add: Readonly<RemoteIpServerConfig>): RemoteIpServerConfig {
  return {
    headerName: add.headerName ?? base.headerName,
    proxiesHeaderName: add.proxiesHeaderName ?? base.proxiesHeaderName,
    proxymatch: add.proxymatch ?? base.proxymatch,
    enabled: add.enabled,
    disabled: add.disabled,
    disabledSubnets: add.disabledSubnets,
  } satisfies { [K in keyof Required<RemoteIpServerConfig>]: RemoteIpServerConfig[K] };
}

type Cmd = CmdParms<RemoteIpServerConfig, unknown>;

function setHeader(cmd: Cmd, arg: string): undefined {
  cmd.srv.headerName = arg;
  return undefined;
}

function setProxiesHeader(cmd: Cmd, arg: string): undefined {
  cmd.srv.proxiesHeaderName = arg;
  return undefined;
}

function looksLikeIp(s: string): boolean {
  return s.includes(':') || /^[0-9.]*$/.test(s);
}

/** One proxy: an address, a network (addr/bits or addr/mask) or a host name. */
function addProxy(cmd: Cmd, arg: string, internal: boolean): string | undefined {
  const conf = cmd.srv;
  const slash = arg.indexOf('/');
  const ip = slash < 0 ? arg : arg.slice(0, slash);
  const mask = slash < 0 ? undefined : arg.slice(slash + 1);
  if (!conf.proxymatch) conf.proxymatch = [];
  if (looksLikeIp(ip)) {
    const res = parseSubnet(ip, mask);
    if (!res.ok) {
      const text = res.error === 'EINVAL' ? 'Invalid argument' : subnetErrorText(res.error);
      return `RemoteIP: Error parsing IP ${arg} (${text} error) for ${cmd.name}`;
    }
    conf.proxymatch.push({ ip: res.subnet, internal });
    return undefined;
  }
  if (mask !== undefined) return `RemoteIP: Error parsing IP ${arg} the subnet /${mask} is invalid for ${cmd.name}`;
  const addr = resolveHostSync(ip);
  if (addr === undefined) return `RemoteIP: Error parsing IP ${arg} (Temporary failure in name resolution error) for ${cmd.name}`;
  const res = parseSubnet(addr, undefined);
  if (!res.ok) return `RemoteIP: Error parsing IP ${arg} (${subnetErrorText(res.error)} error) for ${cmd.name}`;
  conf.proxymatch.push({ ip: res.subnet, internal });
  return undefined;
}

/** RemoteIPTrustedProxyList / RemoteIPInternalProxyList: a file of proxies, '#' comments. */
function readProxyList(cmd: Cmd, filename: string, internal: boolean): string | undefined {
  const file = cmd.ctx.serverRootRelative(filename);
  let text: string;
  try {
    text = fs.readFileSync(file, 'latin1');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'No such file or directory' : code === 'EACCES' ? 'Permission denied' : (e as Error).message;
    return `${cmd.name}: Could not open file ${file}: ${why}`;
  }
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const c = new ArgCursor(lines[i]!.replace(/\r$/, ''));
    while (!c.atEnd()) {
      const w = c.word();
      if (w === '' || w.startsWith('#')) break;
      const err = addProxy(cmd, w, internal);
      if (err !== undefined) return `${err} at line ${i + 1} of ${file}`;
    }
  }
  return undefined;
}

function mainConf(cmd: Cmd): RemoteIpServerConfig {
  return self.server(cmd.ctx.mainServer);
}

function addrsOf(s: ServerRec): { addr: IpAddr | null; port: number }[] {
  if (!s.isVirtual || s.addrs.length === 0) return [{ addr: null, port: 0 }];
  return s.addrs.map((a) => ({ addr: a.host === '*' || a.host === '_default_' ? null : parseAddr(a.host) ?? null, port: a.port }));
}

function sameAddr(a: IpAddr | null, b: IpAddr | null): boolean {
  if (a === null || b === null) return a === b;
  return addrEqual(a, b);
}

/** remoteip_sockaddr_compat: equal addresses with equal (or any) ports, or a wildcard. */
function compat(list: readonly AddrInfo[], addr: IpAddr | null, port: number): boolean {
  for (const l of list) {
    if (sameAddr(l.addr, addr) && (l.port === port || l.port === 0 || port === 0)) return true;
    if (l.addr === null && (l.port === 0 || l.port === port)) return true;
    if (addr === null && (port === 0 || port === l.port)) return true;
  }
  return false;
}

function hostPort(s: ServerRec): string {
  const a = s.addrs[0];
  return a === undefined ? '*:0' : `${a.host}:${a.port === 0 ? '*' : a.port}`;
}

function setProxyProtocol(cmd: Cmd, on: boolean): undefined {
  const conf = mainConf(cmd);
  const add = on ? conf.enabled : conf.disabled;
  const rem = on ? conf.disabled : conf.enabled;
  for (const a of addrsOf(cmd.server)) {
    const i = rem.findIndex((x) => sameAddr(x.addr, a.addr) && x.port === a.port);
    if (i >= 0) {
      const prev = rem[i]!;
      logServer(cmd.server, APLOG_NOTICE, `AH03491: RemoteIPProxyProtocol: previous setting for ${ipText(prev.addr)}:${prev.port} from virtual host {${prev.source.serverHostname ?? ''}:${hostPort(prev.source)} in ${prev.source.defnFile}} is being overridden by virtual host {${cmd.server.serverHostname ?? ''}:${hostPort(cmd.server)} in ${cmd.server.defnFile}}; new setting is '${on ? 'On' : 'Off'}'`);
      rem.splice(i, 1);
    }
    if (!compat(add, a.addr, a.port)) add.unshift({ addr: a.addr, port: a.port, source: cmd.server });
  }
  return undefined;
}

function setExceptions(cmd: Cmd, argv: string[]): string | undefined {
  if (argv.length === 0) return `${cmd.name} requires an argument`;
  const conf = mainConf(cmd);
  for (const arg of argv) {
    const slash = arg.indexOf('/');
    const addr = slash < 0 ? arg : arg.slice(0, slash);
    const res = parseSubnet(addr, slash < 0 ? undefined : arg.slice(slash + 1));
    if (!res.ok) {
      if (res.error === 'EINVAL') return `ip address '${addr}' appears to be invalid`;
      return `ip address '${addr}' appears to be invalid: ${subnetErrorText(res.error)}`;
    }
    conf.disabledSubnets.push(res.subnet);
  }
  return undefined;
}

function ipText(a: IpAddr | null): string {
  if (a === null) return '0.0.0.0';
  if (a.family === 4) { const w = a.words[0]!; return `${w >>> 24}.${(w >>> 16) & 255}.${(w >>> 8) & 255}.${w & 255}`; }
  return Array.from(a.words, (w) => `${(w >>> 16).toString(16)}:${(w & 0xffff).toString(16)}`).join(':');
}

// ---- logging --------------------------------------------------------------------------------

function logServer(s: ServerRec, level: number, message: string): void {
  if (level > levelFor(s.logLevel, 'remoteip')) return;
  s.errorLog.write({ module: 'remoteip', level, message });
}

function logConn(s: ServerRec, level: number, message: string, sock: net.Socket, source?: string, errno?: { code: number; text: string }): void {
  if (level > levelFor(s.logLevel, 'remoteip')) return;
  const ip = sock.remoteAddress ?? '';
  s.errorLog.write({ module: 'remoteip', level, message, source, errno, client: { ip: ip.startsWith('::ffff:') ? ip.slice(7) : ip, port: sock.remotePort ?? 0 } });
}

// ---- the header (post_read_request) -------------------------------------------------------------

/** What the PROXY header said, per connection. */
interface ConnConfig {
  readonly clientIp: string;
  readonly clientPort: number;
}

function connConf(c: ConnRec): ConnConfig | undefined {
  return c.connConfig[self.index] as ConnConfig | undefined;
}

function normalIp(ip: string): string {
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}

function isPrivate(a: IpAddr): boolean {
  if (a.family === 4) {
    const w = a.words[0]!;
    const b0 = w >>> 24;
    const b1 = (w >>> 16) & 255;
    return b0 === 10 || b0 === 127 || (b0 === 169 && b1 === 254) || (b0 === 172 && (b1 & 0xf0) === 16) || (b0 === 192 && b1 === 168);
  }
  // Only global unicast (2000::/3) is taken from a proxy that is not internal.
  return ((a.words[0]! >>> 24) & 0xe0) !== 0x20;
}

/** apr_sockaddr_ip_get of an address parsed from text (IPv4-mapped IPv6 becomes IPv4). */
function canonicalIp(text: string, a: IpAddr): string {
  if (a.family === 4) return ipText(a);
  return text.includes('.') || /[A-F]/.test(text) || text.includes('::') ? normalise6(a) : text;
}

function normalise6(a: IpAddr): string {
  const b = new Uint8Array(16);
  for (let i = 0; i < 4; i++) { const w = a.words[i]!; b[i * 4] = w >>> 24; b[i * 4 + 1] = (w >>> 16) & 255; b[i * 4 + 2] = (w >>> 8) & 255; b[i * 4 + 3] = w & 255; }
  return ipv6Text(b);
}


function modifyRequest(r: Request): number {
  const config = self.server(r.server);
  const cc = connConf(r.connection);
  if (config.headerName === undefined && cc === undefined) return DECLINED;
  if (cc !== undefined) {
    r.useragentIp = cc.clientIp;
    if (r.wantsLog('remoteip', APLOG_TRACE1)) r.log('remoteip', APLOG_TRACE1, `Using ${cc.clientIp} as client's IP from PROXY protocol`, undefined, 'mod_remoteip.c(579)');
    return OK;
  }
  const headerName = config.headerName!;
  let internal = config.proxymatch !== undefined;
  const raw = r.headersIn.get(headerName);
  if (raw === undefined) return OK;
  let remote: string | null = raw;
  let current = parseAddr(r.useragentIp);
  let currentIp = r.useragentIp;
  let proxyIps: string | undefined;
  let changed = false;
  while (remote !== null) {
    if (config.proxymatch !== undefined) {
      let i = 0;
      const list = config.proxymatch;
      for (; i < list.length; i++) {
        if (current !== undefined && subnetTest(list[i]!.ip, current)) {
          if (internal) internal = list[i]!.internal;
          break;
        }
      }
      if (i >= list.length) break;
    }
    const comma = remote.lastIndexOf(',');
    let part: string;
    let rest: string | null;
    if (comma < 0) { part = remote; rest = null; } else { part = remote.slice(comma + 1); rest = remote.slice(0, comma); }
    const trimmed = part.replace(/^ +/, '').replace(/ +$/, '');
    if (trimmed === '') break;
    const resolved = parseAddr(trimmed) !== undefined ? trimmed : resolveHostSync(trimmed);
    const a = resolved === undefined ? undefined : parseAddr(resolved);
    if (a === undefined || resolved === undefined) {
      if (r.wantsLog('remoteip', APLOG_DEBUG)) r.log('remoteip', APLOG_DEBUG, `AH01568: RemoteIP: Header ${headerName} value of ${trimmed} cannot be parsed as a client IP`, undefined, 'mod_remoteip.c(631)');
      break;
    }
    if (!internal && isPrivate(a)) {
      if (r.wantsLog('remoteip', APLOG_DEBUG)) r.log('remoteip', APLOG_DEBUG, `AH01569: RemoteIP: Header ${headerName} value of ${trimmed} appears to be a private IP or nonsensical.  Ignored`, undefined, 'mod_remoteip.c(669)');
      break;
    }
    if (!internal) proxyIps = proxyIps === undefined ? currentIp : `${proxyIps}, ${currentIp}`;
    current = a;
    currentIp = canonicalIp(resolved, a);
    changed = true;
    remote = rest;
  }
  if (!changed) return OK;
  if (remote !== null) r.headersIn.set(headerName, remote);
  else r.headersIn.unset(headerName);
  if (proxyIps !== undefined) {
    r.notes.set('remoteip-proxy-ip-list', proxyIps);
    if (config.proxiesHeaderName !== undefined) r.headersIn.set(config.proxiesHeaderName, proxyIps);
  }
  r.useragentIp = currentIp;
  if (r.wantsLog('remoteip', APLOG_TRACE1)) {
    r.log('remoteip', APLOG_TRACE1, proxyIps !== undefined ? `Using ${currentIp} as client's IP by proxies ${proxyIps}` : `Using ${currentIp} as client's IP by internal proxies`, undefined, 'mod_remoteip.c(742)');
  }
  return OK;
}

// ---- the PROXY protocol (a connection layer) --------------------------------------------------

class ProxyProtocolLayer implements ConnectionLayer {
  private readonly ports: Set<number>;
  constructor(private readonly conf: RemoteIpServerConfig, ctx: ConfigContext) {
    this.ports = new Set(globals(ctx).listeners.map((l) => l.port));
  }

  private enabledFor(localIp: string, localPort: number): boolean {
    const a = parseAddr(localIp) ?? null;
    return compat(this.conf.enabled, a, localPort) && !compat(this.conf.disabled, a, localPort);
  }

  wantsSocket(port: number): boolean {
    return this.conf.enabled.some((e) => e.port === 0 || e.port === port);
  }

  accept(sock: net.Socket, base: ServerRec, serve: (t: Transport, init: (c: ConnRec) => void) => void): boolean {
    const local = sock.localAddress ?? '';
    const localIp = local.startsWith('::ffff:') ? local.slice(7) : local;
    const localPort = sock.localPort ?? 0;
    if (!this.enabledFor(localIp, localPort)) return false;
    const client = parseAddr(sock.remoteAddress ?? '');
    if (client !== undefined && this.conf.disabledSubnets.some((s) => subnetTest(s, client))) return false;
    if (!this.ports.has(localPort)) return false;
    logConn(base, APLOG_DEBUG, `AH03503: RemoteIPProxyProtocol: enabled on connection to ${localIp}:${localPort}`, sock, 'mod_remoteip.c(949)');
    let buf: Buffer = Buffer.alloc(0);
    let finished = false;
    const timeoutMs = base.timeout * 1000;
    sock.setTimeout(timeoutMs, () => sock.destroy());
    const fail = (message: string): void => {
      finished = true;
      // getaddrinfo's failure comes first, as httpd prints the apr_status_t of an EAI error.
      if (message.startsWith('AH03502')) logConn(base, APLOG_ERR, message, sock, undefined, { code: APR_OS_START_EAIERR + 2, text: 'Name or service not known' });
      else if (message !== '') logConn(base, APLOG_ERR, message, sock);
      sock.destroy();
    };
    const onEnd = (): void => {
      if (!finished) fail(buf.length > 0 ? 'AH10634: RemoteIPProxyProtocol: connection closed before a complete header was received' : '');
    };
    const onData = (chunk: Buffer): void => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const res = parseProxyHeader(buf);
      if (res.kind === 'more') return;
      sock.removeListener('data', onData);
      sock.removeListener('end', onEnd);
      if (res.kind === 'error') { fail(res.message); return; }
      if (res.leftOver !== undefined && res.leftOver > 15) {
        // httpd 2.4.71 keeps reading after an UNKNOWN header it cannot size, then finds more
        // data than the header it expected and drops the connection.
        logConn(base, APLOG_DEBUG, `AH03511: RemoteIPProxyProtocol: received valid PROXY header: ${normalIp(sock.remoteAddress ?? '')}:${sock.remotePort ?? 0}`, sock);
        fail(`AH03513: RemoteIPProxyProtocol: internal error: have data left over;  need=15, rcvd=${res.leftOver}, brigade-empty=1`);
        return;
      }
      finished = true;
      sock.pause();
      const rest = buf.subarray(res.length);
      if (rest.length > 0) sock.unshift(rest);
      sock.setTimeout(0);
      const remote = sock.remoteAddress ?? '';
      const cc: ConnConfig = res.ip === undefined
        ? { clientIp: remote.startsWith('::ffff:') ? remote.slice(7) : remote, clientPort: sock.remotePort ?? 0 }
        : { clientIp: res.ip, clientPort: res.port };
      logConn(base, APLOG_DEBUG, `AH03511: RemoteIPProxyProtocol: received valid PROXY header: ${cc.clientIp}:${cc.clientPort}`, sock);
      serve(sock, (c) => { c.connConfig[self.index] = cc; });
      sock.resume();
    };
    sock.on('data', onData);
    sock.on('end', onEnd);
    return true;
  }
}

const layerProvider: ConnectionLayerProvider = {
  open(ctx: ConfigContext): ConnectionLayer | null {
    if (!ctx.isLoaded('remoteip_module')) return null;
    const conf = self.server(ctx.mainServer);
    if (conf.enabled.length === 0) return null;
    return new ProxyProtocolLayer(conf, ctx);
  },
};

function postConfig(ctx: ConfigContext): undefined {
  if (ctx.child) return undefined;
  const conf = self.server(ctx.mainServer);
  for (const e of conf.enabled) logServer(ctx.mainServer, APLOG_NOTICE, `AH03492: RemoteIPProxyProtocol: enabled on ${ipText(e.addr)}:${e.port}`);
  for (const e of conf.disabled) logServer(ctx.mainServer, APLOG_NOTICE, `AH03494: RemoteIPProxyProtocol: disabled on ${ipText(e.addr)}:${e.port}`);
  return undefined;
}

// ---- the module ---------------------------------------------------------------------------------

const providers: ProviderDecl[] = [
  { group: 'connection_layer', name: 'remoteip', version: '0', provider: layerProvider },
];

const self = defineModule<RemoteIpServerConfig, unknown>({
  name: 'remoteip_module',
  source: 'mod_remoteip.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive({ name: 'RemoteIPHeader', args: 'TAKE1', where: RSRC_CONF, help: 'Specifies a request header to trust as the client IP, e.g. X-Forwarded-For', handler: setHeader }),
    directive({ name: 'RemoteIPProxiesHeader', args: 'TAKE1', where: RSRC_CONF, help: "Specifies a request header to record proxy IP's, e.g. X-Forwarded-By; if not given then do not record", handler: setProxiesHeader }),
    directive({ name: 'RemoteIPTrustedProxy', args: 'ITERATE', where: RSRC_CONF, help: 'Specifies one or more proxies which are trusted to present IP headers', handler: (cmd: Cmd, a: string) => addProxy(cmd, a, false) }),
    directive({ name: 'RemoteIPInternalProxy', args: 'ITERATE', where: RSRC_CONF, help: 'Specifies one or more internal (transparent) proxies which are trusted to present IP headers', handler: (cmd: Cmd, a: string) => addProxy(cmd, a, true) }),
    directive({ name: 'RemoteIPTrustedProxyList', args: 'TAKE1', where: RSRC_CONF, help: 'The filename to read the list of trusted proxies, see the RemoteIPTrustedProxy directive', handler: (cmd: Cmd, f: string) => readProxyList(cmd, f, false) }),
    directive({ name: 'RemoteIPInternalProxyList', args: 'TAKE1', where: RSRC_CONF, help: 'The filename to read the list of internal proxies, see the RemoteIPInternalProxy directive', handler: (cmd: Cmd, f: string) => readProxyList(cmd, f, true) }),
    directive({ name: 'RemoteIPProxyProtocol', args: 'FLAG', where: RSRC_CONF, help: "Enable PROXY protocol handling ('on', 'off')", handler: setProxyProtocol }),
    directive({ name: 'RemoteIPProxyProtocolExceptions', args: 'TAKE_ARGV', where: RSRC_CONF, help: 'Disable PROXY protocol handling for this list of networks in CIDR format', handler: setExceptions }),
  ],
  hooks: {
    postReadRequest: { fn: modifyRequest, order: HOOK_FIRST },
  },
  configHooks: { postConfig },
  providers,
});

export default self;
