// mod_proxy_connect (modules/proxy/mod_proxy_connect.c, httpd 2.4.71): the CONNECT method of
// the forward proxy. A "CONNECT host:port" request that mod_proxy took (ProxyRequests On) is
// checked against ProxyBlock and AllowCONNECT (443 and 563 when none is given), a socket is
// opened to the target (or to the ProxyRemote proxy, which is sent "CONNECT host:port
// HTTP/1.0"), the client gets "HTTP/1.0 200 Connection Established" with a Proxy-agent field
// and nothing else (written on the connection, not as a response: no Date, no Server, no
// body), and from then on bytes go both ways, opaque (TLS included), until both sides have
// closed or nothing moved for the larger of Timeout and ProxyTimeout (AH10224).

import * as net from 'node:net';
import * as dns from 'node:dns/promises';
import { defineModule, directive, DECLINED, OK, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request, RawStream } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_TRACE1, APLOG_TRACE2, APLOG_TRACE3 } from '../../server/log/levels.js';
import { serverBanner } from '../../server/version.js';
import { globals } from '../../server/core/globals.js';
import type { ProxyApi, ProxySchemeProvider, ProxyServerConf } from '../../proxy/api.js';

const MOD = 'proxy_connect';

/** One AllowCONNECT port or range (port_range). */
export interface PortRange { readonly first: number; readonly last: number }

/** Per-server configuration (connect_conf): the allowed ports, empty for the default. */
interface ConnectConf { allowed: PortRange[] }

/** merge_config: the main server's list followed by the virtual host's. */
function mergeServerConfig(base: Readonly<ConnectConf>, add: Readonly<ConnectConf>): ConnectConf {
  return { allowed: [...base.allowed, ...add.allowed] };
}

const LONG_MAX = (1n << 63n) - 1n;
const LONG_MIN = -(1n << 63n);

/** C's strtol(s + at, &end, 10) on a 64-bit long, then stored in an int as httpd does (the low
 *  32 bits). `end` is `at` when no digits were found. */
function strtolInt(s: string, at: number): { value: number; end: number } {
  let i = at;
  while (i < s.length && ' \t\n\v\f\r'.includes(s[i]!)) i++;
  let neg = false;
  if (s[i] === '+' || s[i] === '-') { neg = s[i] === '-'; i++; }
  const digitsFrom = i;
  while (i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
  if (i === digitsFrom) return { value: 0, end: at };
  let v = BigInt(s.slice(digitsFrom, i));
  if (neg) v = -v;
  if (v > LONG_MAX) v = LONG_MAX;
  if (v < LONG_MIN) v = LONG_MIN;
  return { value: Number(BigInt.asIntN(32, v)), end: i };
}

/** set_allowed_ports for one argument: "N" or "N-M", worded as httpd's errors. */
export function parseAllowConnect(arg: string): PortRange | string {
  const c0 = arg.charCodeAt(0);
  if (!(c0 >= 0x30 && c0 <= 0x39)) return 'AllowCONNECT: port numbers must be numeric';
  let p = 0;
  const a = strtolInt(arg, p);
  let end = a.end;
  let last = a.value;
  if (arg[end] === '-') {
    p = end + 1;
    const b = strtolInt(arg, p);
    last = b.value;
    end = b.end;
  }
  // A NUL ends the C string: what follows it is not seen.
  if (end === p || (end < arg.length && arg[end] !== '\0')) return `Cannot parse '${cstr(arg.slice(p))}' as port number`;
  return { first: a.value, last };
}

function cstr(s: string): string {
  const z = s.indexOf('\0');
  return z < 0 ? s : s.slice(0, z);
}

/** allowed_port. */
export function allowedPort(list: readonly PortRange[], port: number): boolean {
  if (list.length === 0) return port === 443 || port === 563;
  return list.some((r) => port >= r.first && port <= r.last);
}

/** apr_uri_parse_hostinfo: "host:port" or "[v6]:port"; the port as an apr_port_t. */
export function parseHostinfo(s: string): { host: string; port: number } | undefined {
  let colon: number;
  let host: string;
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    if (close < 0 || s[close + 1] !== ':') return undefined;
    host = s.slice(1, close);
    colon = close + 1;
  } else {
    colon = s.indexOf(':');
    if (colon < 0) return undefined;
    host = s.slice(0, colon);
  }
  const ps = s.slice(colon + 1);
  // apr_strtoi64 then the cast to unsigned short; an empty port is the scheme's (none: 0).
  if (ps === '') return { host, port: 0 };
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d+)$/.exec(ps);
  if (m === null) return undefined;
  let v = BigInt(m[2]!);
  if (m[1] === '-') v = -v;
  if (v > LONG_MAX) v = LONG_MAX;
  if (v < LONG_MIN) v = LONG_MIN;
  return { host, port: Number(BigInt.asUintN(16, v)) };
}

type Cmd = CmdParms<ConnectConf, undefined>;

function setAllowedPorts(cmd: Cmd, arg: string): string | undefined {
  const r = parseAllowConnect(arg);
  if (typeof r === 'string') return r;
  cmd.srv.allowed.push(r);
  return undefined;
}

/** %pI of an address and port. */
function sockaddr(ip: string, port: number): string {
  return `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
}

/** ap_proxy_connect_to_backend: each address in turn until one connects (the failures logged
 *  AH00939, at debug while another address remains); the socket or undefined. */
async function connectToBackend(r: Request, conf: ProxyServerConf, addrs: readonly string[], name: string, port: number): Promise<net.Socket | undefined> {
  const timeout = conf.timeout ?? r.server.timeout * 1000;
  for (let i = 0; i < addrs.length; i++) {
    const ip = addrs[i]!;
    if (r.wantsLog(MOD, APLOG_TRACE2)) r.log(MOD, APLOG_TRACE2, `CONNECT: fam ${net.isIPv6(ip) ? 10 : 2} socket created to connect to ${name}`);
    const res = await new Promise<net.Socket | Error>((resolve) => {
      const s = net.connect({ host: ip, port, ...(conf.sourceAddress !== undefined ? { localAddress: conf.sourceAddress } : {}) });
      const timer = setTimeout(() => { s.destroy(); resolve(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT_APR' })); }, timeout);
      s.once('error', (e) => { clearTimeout(timer); s.destroy(); resolve(e); });
      s.once('connect', () => { clearTimeout(timer); s.removeAllListeners('error'); resolve(s); });
    });
    if (res instanceof net.Socket) {
      res.setNoDelay(true);
      return res;
    }
    const errno = (res as NodeJS.ErrnoException).code === 'ETIMEDOUT_APR' ? { code: 70007, text: 'The timeout specified has expired' } : r.rt.errno(res);
    r.log('proxy', i + 1 < addrs.length ? APLOG_DEBUG : APLOG_ERR, `AH00939: CONNECT: attempt to connect to ${sockaddr(ip, port)} (${name}) failed`, errno);
  }
  return undefined;
}

interface TunnelResult { timedOut: boolean; replied: boolean }

/** ap_proxy_tunnel_run: bytes both ways; an end of one side is passed on as a write shutdown
 *  of the other; over when both sides are closed, or when nothing moved for `idle` ms.
 *  DIFFERENCE: a backend that ends its side first sees its socket closed (Node's sockets here
 *  are not half-open); httpd keeps it half-closed until the tunnel ends. The client's side
 *  stays open until the client ends it, as in httpd (docs/differences.md). */
function runTunnel(client: RawStream, be: net.Socket, idle: number, keepSilentClient: boolean): Promise<TunnelResult> {
  return new Promise((resolve) => {
    let replied = false;
    let finished = false;
    let timer: NodeJS.Timeout | null = null;
    let clientClosed = false;
    let backendClosed = false;
    const finish = (timedOut: boolean): void => {
      if (finished) return;
      finished = true;
      if (timer !== null) clearTimeout(timer);
      be.destroy();
      // A remote proxy that never answered: the client connection stays for the error page.
      if (!(timedOut && keepSilentClient && !replied)) client.destroy();
      resolve({ timedOut, replied });
    };
    const arm = (): void => {
      if (timer !== null) clearTimeout(timer);
      timer = setTimeout(() => finish(true), idle);
    };
    arm();
    if (client.head.length > 0) be.write(client.head);
    be.on('data', (d: Buffer) => {
      arm();
      replied = true;
      if (client.destroyed) return;
      if (!client.write(d)) { be.pause(); client.onDrain(() => be.resume()); }
    });
    client.onData((d: Buffer) => {
      arm();
      if (be.destroyed) return;
      if (!be.write(d)) { client.pause(); be.once('drain', () => client.resume()); }
    });
    be.on('end', () => { if (!client.destroyed) client.end(); });
    client.onEnd(() => { if (!be.destroyed) be.end(); });
    be.on('error', () => finish(false));
    be.on('close', () => {
      backendClosed = true;
      if (clientClosed || client.destroyed) { finish(false); return; }
      // The client may be paused waiting for a drain that will not come: read on, to see
      // its end (what it still sends goes nowhere).
      client.resume();
    });
    client.onClose(() => { clientClosed = true; if (backendClosed || be.destroyed) finish(false); else { be.resume(); be.end(); } });
    client.resume();
  });
}

/** proxy_connect_canon. */
function canon(r: Request, url: string): number {
  if (r.method !== 'CONNECT') return DECLINED;
  if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `canonicalising URL ${url}`);
  return OK;
}

/** proxy_connect_handler. */
async function handle(r: Request, _worker: unknown, conf: ProxyServerConf, url: string, proxyname: string | undefined, proxyport: number): Promise<number> {
  if (r.method !== 'CONNECT') {
    if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `declining URL ${url}`);
    return DECLINED;
  }
  if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `serving URL ${url}`);
  const api: ProxyApi = r.rt.ctx.provider('proxy_api', 'mod_proxy')!;
  const uri = parseHostinfo(url);
  if (uri === undefined) return api.proxyError(r, 400, `URI cannot be parsed: ${url}`);
  if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH01019: connecting ${url} to ${uri.host}:${uri.port}`);
  const connectName = proxyname ?? uri.host;
  const connectPort = proxyname !== undefined ? proxyport : uri.port;
  let addrs: string[];
  try {
    addrs = net.isIP(connectName) !== 0 ? [connectName] : (await dns.lookup(connectName, { all: true })).map((a) => a.address);
  } catch (e) {
    r.log(MOD, APLOG_ERR, `AH02327: failed to resolve hostname '${connectName}'`, r.rt.errno(e));
    return api.proxyError(r, 502, `DNS lookup failure for: ${connectName}`);
  }
  if (api.checkProxyBlock(r, conf, uri.host) !== OK) return api.proxyError(r, 403, 'Connect to remote machine blocked');
  if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `connecting to remote proxy ${connectName} on port ${connectPort}`);
  if (!allowedPort(self.server(r.server).allowed, uri.port)) return api.proxyError(r, 403, 'Connect to remote machine blocked');

  const sock = await connectToBackend(r, conf, addrs, connectName, connectPort);
  if (sock === undefined) return proxyname !== undefined ? DECLINED : 503;
  const peer = sockaddr(sock.remoteAddress ?? connectName, sock.remotePort ?? connectPort);
  if (r.wantsLog(MOD, APLOG_TRACE3)) r.log(MOD, APLOG_TRACE3, `connection complete to ${peer} (${connectName})`);
  r.notes.set('proxy-source-port', String(sock.localPort ?? 0));
  const detach = r.connection.detach;
  // On an HTTP/2 stream the raw answer below becomes the stream's response (mod_http2 reads
  // the head it starts with) and the stream's DATA is the tunnel.
  if (detach === undefined) {
    r.log(MOD, APLOG_ERR, `AH10208: can't create tunnel for ${peer} (${connectName})`);
    sock.destroy();
    return 500;
  }
  const banner = serverBanner(globals(r.rt.ctx).serverTokens);
  // No error page once the client has the 200; the access log shows 200 and no body.
  r.headersSent = true;
  r.eosSent = true;
  r.connection.keepAlive = false;
  const client = detach.call(r.connection);
  if (proxyport !== 0) {
    if (r.wantsLog(MOD, APLOG_TRACE2)) r.log(MOD, APLOG_TRACE2, 'sending the CONNECT request to the remote proxy');
    sock.write(`CONNECT ${r.uri} HTTP/1.0\r\nProxy-agent: ${banner}\r\n\r\n`, 'latin1');
  } else {
    if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, 'Returning 200 OK');
    client.write(Buffer.from(`HTTP/1.0 200 Connection Established\r\nProxy-agent: ${banner}\r\n\r\n`, 'latin1'));
  }
  // The larger of the client's timeout (Timeout) and the backend socket's (ProxyTimeout, else
  // Timeout): ap_proxy_tunnel_create.
  const clientTimeout = r.server.timeout * 1000;
  const originTimeout = conf.timeout ?? clientTimeout;
  const idle = Math.max(clientTimeout, originTimeout);
  if (r.wantsLog('proxy', APLOG_TRACE1)) r.log('proxy', APLOG_TRACE1, `AH10212: proxy: CONNECT: tunnel running (timeout ${(idle / 1000).toFixed(6)})`);
  const res = await runTunnel(client, sock, idle, proxyport !== 0);
  if (r.wantsLog('proxy', APLOG_TRACE1)) r.log('proxy', APLOG_TRACE1, `AH10223: proxy: CONNECT: tunneling returns (${res.timedOut ? 504 : 0})`);
  if (res.timedOut) {
    r.log(MOD, APLOG_ERR, 'AH10224: tunnel timed out');
    if (proxyport !== 0 && !res.replied) {
      // The remote proxy never answered: the client gets the error page.
      r.headersSent = false;
      r.eosSent = false;
      return 504;
    }
  }
  return OK;
}

const provider: ProxySchemeProvider = { canon, handle };

const self = defineModule<ConnectConf, undefined>({
  name: 'proxy_connect_module',
  source: 'mod_proxy_connect.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ allowed: [] }),
  mergeServerConfig,
  directives: [
    directive<ConnectConf, undefined, 'ITERATE'>({
      name: 'AllowCONNECT', args: 'ITERATE', where: RSRC_CONF,
      help: 'A list of ports or port ranges which CONNECT may connect to', handler: setAllowedPorts,
    }),
  ],
  providers: [{ group: 'proxy_scheme', name: 'connect', version: '0', provider }],
});
export default self;
