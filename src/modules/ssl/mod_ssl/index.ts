// mod_ssl (modules/ssl/): HTTPS on Node's TLS. The configuration (config.ts), the TLS contexts
// built from it with httpd's startup checks (contexts.ts), TLS below HTTP on accepted
// connections with SNI and the shared session cache (layer.ts), the request hooks
// (hooks.ts) and the SSL_* variables (vars.ts); the SSLProxy* settings for mod_proxy's HTTPS
// backends (proxy.ts). This file holds the directive table and the module definition.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF, PROXY_CONF, OR_AUTHCFG, OR_OPTIONS, OR_ALL, HOOK_REALLY_FIRST, HOOK_MIDDLE } from '../../../server/module.js';
import type { ConfigContext } from '../../../server/config/context.js';
import type { Request, ConnRec } from '../../../server/request/request.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { ConnectionLayerProvider } from '../../../server/http/connection-layer.js';
import type { SocacheInstance } from '../../../server/socache.js';
import { logItem, type LogItemSet } from '../../loggers/log-items-api.js';
import { atoi } from '../../../lib/c-numbers.js';
import { APLOG_DEBUG, APLOG_EMERG, APLOG_ERR, APLOG_NOTICE, APLOG_WARNING, levelFor } from '../../../server/log/levels.js';
import {
  createServerConfig, mergeServerConfig, createDirConfig, mergeDirConfig, checkFile, checkDir, parseProtocol,
  parseVerify, parseDepth, parseCrlCheck, parseOcspCheck, parseOptions, GLOBAL_ONLY, OPT_LEGACYDNFORMAT,
  type Cmd, type SslServerConfig, type SslDirConfig, type SslProxyConfig,
} from './config.js';
import { buildContexts, CONF_COMMANDS, knownConfOptions, warn, warningsDone, type TlsServer } from './contexts.js';
import { TlsLayer } from './layer.js';
import { selectProtocol, PROTOCOL_HTTP1 } from '../../../server/http/protocols.js';
import { makeHooks } from './hooks.js';
import { SslConn, sslVar } from './vars.js';
import { compileRequire } from './require.js';
import { makeExprProvider } from './expr.js';
import { makeProxyProvider, loadMachineCerts } from './proxy.js';
import { certDetails, parseUri } from './ocsp.js';
import { Stapler } from './stapling.js';
import { tlsStreams } from './stream.js';
import { sslStatusHook } from './status.js';

// ---- per-generation state ------------------------------------------------------------------

interface SslState {
  servers: Map<ServerRec, TlsServer>;
  cache: SocacheInstance | null;
  staplingCache: SocacheInstance | null;
  layer: TlsLayer | null;
}

/** Servers where a directory section asks for client certificates (the handshake asks). */
function dirVerifyServers(ctx: ConfigContext): Set<ServerRec> {
  return ctx.getScratch<Set<ServerRec>>('ssl:dirVerify', () => new Set());
}

function state(ctx: ConfigContext): SslState | undefined {
  return ctx.getScratch<{ v: SslState | undefined }>('ssl:state', () => ({ v: undefined })).v;
}

const TICKET_ENV = 'PLUME_SSL_TICKET_KEYS';

/** The TLS session ticket keys of this generation: made by the parent (or the -X process),
 *  read by the workers from their environment, so that a ticket one worker issues opens in
 *  another (httpd's children inherit the keys with the parent's memory). */
function ticketKeys(ctx: ConfigContext): Buffer {
  if (ctx.child) {
    const hex = process.env[TICKET_ENV];
    if (hex !== undefined && /^[0-9a-f]{96}$/.test(hex)) return Buffer.from(hex, 'hex');
  }
  const keys = crypto.randomBytes(48);
  process.env[TICKET_ENV] = keys.toString('hex');
  return keys;
}

// ---- directive handlers --------------------------------------------------------------------

type H1 = (cmd: Cmd, a: string) => string | undefined;

const fileInto = (set: (cmd: Cmd, path: string) => void): H1 => (cmd, a) => {
  const f = checkFile(cmd, a);
  if (typeof f === 'string') return f;
  set(cmd, f.path);
  return undefined;
};
const dirInto = (set: (cmd: Cmd, path: string) => void): H1 => (cmd, a) => {
  const d = checkDir(cmd, a);
  if (typeof d === 'string') return d;
  set(cmd, d.path);
  return undefined;
};
const proxyFlag = (k: 'engine' | 'checkPeerExpire' | 'checkPeerCn' | 'checkPeerName') => (cmd: Cmd, on: boolean): undefined => {
  setProxy(cmd, k, on);
  return undefined;
};
/** An SSLProxy* setting: the server's, or inside <Proxy> that section's (httpd keeps them per
 *  directory since 2.4.30 and uses the worker's <Proxy> section). */
function setProxy<K extends keyof SslProxyConfig>(cmd: Cmd, k: K, v: SslProxyConfig[K]): void {
  const p = cmd.scope.parents;
  const inProxy = p.length > 0 && (p[p.length - 1] === '<Proxy' || p[p.length - 1] === '<ProxyMatch');
  if (inProxy) cmd.dir.proxy = { ...(cmd.dir.proxy ?? {}), [k]: v };
  else cmd.srv.proxy[k] = v;
}

function sslEngine(cmd: Cmd, a: string): string | undefined {
  const v = a.toLowerCase();
  // httpd 2.4.64 removed "optional" (RFC 2817 upgrades).
  if (v === 'optional') {
    // Logged, and the host stays without TLS.
    if (cmd.ctx.preflight) cmd.ctx.logNoServer('ssl', APLOG_NOTICE, "AH10510: 'SSLEngine optional' is no longer supported");
    cmd.srv.engine = 'off';
    return undefined;
  }
  if (v !== 'on' && v !== 'off') return 'Argument must be On or Off';
  cmd.srv.engine = v;
  return undefined;
}

function sslVHostSniPolicy(cmd: Cmd, a: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const v = a.toLowerCase();
  if (v !== 'strict' && v !== 'secure' && v !== 'authonly' && v !== 'insecure') return `Invalid SSLVhostSNIPolicy argument '${a}'`;
  cmd.srv.sniPolicy = v;
  return undefined;
}

function sslCipherSuite(cmd: Cmd, a: string, b: string | undefined, proxy = false): string | undefined {
  let proto = 'SSL';
  let list = a;
  if (b !== undefined) { proto = a; list = b; }
  if (proto === 'SSL') {
    const full = `${list}:!aNULL:!eNULL:!EXP`;
    if (proxy) setProxy(cmd, 'cipherSuite', full);
    else if (cmd.path !== undefined) cmd.dir.cipherSuite = full;
    else cmd.srv.cipherSuite = full;
    return undefined;
  }
  if (proto === 'TLSv1.3') {
    if (cmd.path !== undefined && !proxy) return 'TLSv1.3 ciphers cannot be set inside a directory context';
    if (proxy) setProxy(cmd, 'tls13Ciphers', list);
    else cmd.srv.tls13Ciphers = list;
    return undefined;
  }
  return `protocol '${proto}' not supported`;
}

function sslVerifyClient(cmd: Cmd, a: string): string | undefined {
  const m = parseVerify(cmd, a);
  if (m !== 'none' && m !== 'optional' && m !== 'require' && m !== 'optional_no_ca') return m;
  if (cmd.path !== undefined) {
    cmd.dir.verifyClient = m;
    if (m !== 'none') dirVerifyServers(cmd.ctx).add(cmd.server);
  } else cmd.srv.verifyClient = m;
  return undefined;
}

function sslVerifyDepth(cmd: Cmd, a: string): string | undefined {
  const d = parseDepth(cmd, a);
  if (typeof d === 'string') return d;
  if (cmd.path !== undefined) cmd.dir.verifyDepth = d;
  else cmd.srv.verifyDepth = d;
  return undefined;
}

function socacheFor(cmd: Cmd, arg: string, what: 'session' | 'stapling'): string | undefined {
  const colon = arg.indexOf(':');
  const name = colon < 0 ? arg : arg.slice(0, colon);
  const rest = colon < 0 ? undefined : arg.slice(colon + 1);
  const p = cmd.ctx.provider('socache', name);
  const label = what === 'session' ? 'SSLSessionCache' : 'SSLStaplingCache';
  if (p === undefined) {
    const known = cmd.ctx.providerNames('socache').sort().join(',');
    // httpd words the two differently (no full stops for the stapling cache).
    if (what === 'stapling') return `${label}: '${name}' stapling cache not supported (known names: ${known}) Maybe you need to load the appropriate socache module (mod_socache_${name}?)`;
    return `${label}: '${name}' session cache not supported (known names: ${known}). Maybe you need to load the appropriate socache module (mod_socache_${name}?).`;
  }
  const spec = p.create(cmd.ctx, rest);
  if (typeof spec === 'string') return `${label}: ${spec}`;
  if (what === 'session') cmd.srv.sessionCache = spec;
  else cmd.srv.staplingCache = spec;
  return undefined;
}

function sslSessionCache(cmd: Cmd, a: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const v = a.toLowerCase();
  if (v === 'none' || v === 'nonenotnull') { cmd.srv.sessionCache = 'none'; return undefined; }
  return socacheFor(cmd, a, 'session');
}

function sslPassPhraseDialog(cmd: Cmd, a: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  if (a.toLowerCase() === 'builtin') { cmd.srv.passPhraseDialog = { type: 'builtin' }; return undefined; }
  if (a.length > 5 && a.slice(0, 5).toLowerCase() === 'exec:') {
    const p = cmd.serverRootRelative(a.slice(5));
    if (!fs.existsSync(p)) return `SSLPassPhraseDialog: file '${p}' does not exist`;
    cmd.srv.passPhraseDialog = { type: 'exec', path: p };
    return undefined;
  }
  if (a.length > 1 && a.startsWith('|')) {
    // DIFFERENCE: httpd talks to a pipe program's stdin/stdout; plume refuses it at startup
    // when a key needs it (contexts.ts), as it cannot keep such a program running.
    cmd.srv.passPhraseDialog = { type: 'pipe', command: a.slice(1) };
    return undefined;
  }
  return 'SSLPassPhraseDialog: Invalid argument';
}

function sslRandomSeed(cmd: Cmd, a: string, b: string, c: string | undefined): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const ctxName = a.toLowerCase();
  if (ctxName !== 'startup' && ctxName !== 'connect') return `SSLRandomSeed: invalid context: \`${a}'`;
  const src = b;
  if (src.length > 5 && /^(file|exec):/i.test(src)) {
    const p = cmd.serverRootRelative(src.slice(5));
    if (!fs.existsSync(p)) return `SSLRandomSeed: source path '${p}' does not exist`;
  } else if (src.length > 4 && /^egd:/i.test(src)) {
    return 'SSLRandomSeed: egd not supported by this version of OpenSSL';
  } else if (src.toLowerCase() !== 'builtin') {
    return `Invalid SSLRandomSeed entropy source \`${src}'`;
  }
  if (c !== undefined && src.toLowerCase() === 'builtin') return 'SSLRandomSeed: byte specification not allowed for builtin seed source';
  if (c !== undefined && !(Number(c) > 0)) return 'SSLRandomSeed: invalid number of bytes specified';
  // Recorded only: OpenSSL 3 seeds itself from the operating system (httpd 2.4.71 likewise
  // leaves the seeding to OpenSSL).
  cmd.srv.randomSeeds = [...cmd.srv.randomSeeds, `${a} ${b}${c !== undefined ? ' ' + c : ''}`];
  return undefined;
}

function sslCompression(_cmd: Cmd, on: boolean): string | undefined {
  // Node's OpenSSL, as Debian's, has no compression methods built in.
  if (on) return 'This version of OpenSSL does not have any compression methods available, cannot enable SSLCompression.';
  _cmd.srv.compression = false;
  return undefined;
}

function sslOpenSslConfCmd(cmd: Cmd, name: string, value: string): string | undefined {
  if (!CONF_COMMANDS.has(name)) return `'${name}': invalid OpenSSL configuration command`;
  let v = value;
  if (name === 'DHParameters') {
    const f = checkFile(cmd, value);
    if (typeof f === 'string') return f;
    v = f.path;
  }
  if (name === 'Options') {
    const bad = knownConfOptions(value);
    if (bad !== undefined) return `'${name}': invalid OpenSSL configuration command`;
  }
  if (name === 'CipherString') v = `${value}:!aNULL:!eNULL:!EXP`;
  cmd.srv.openSslConfCmds = [...cmd.srv.openSslConfCmds, [name, v] as const];
  return undefined;
}

function sslRequire(cmd: Cmd, raw: string): string | undefined {
  const r = compileRequire(cmd, raw);
  if (typeof r === 'string') return `SSLRequire: ${r}`;
  cmd.dir.requires = [...cmd.dir.requires, r];
  return undefined;
}

function sslRenegBufferSize(cmd: Cmd, a: string): string | undefined {
  const v = atoi(a);
  if (v < 0) return `Invalid size for SSLRenegBufferSize: ${a}`;
  cmd.dir.renegBufferSize = v;
  return undefined;
}

function sslSessionCacheTimeout(cmd: Cmd, a: string): string | undefined {
  const v = atoi(a);
  if (v < 0) return 'SSLSessionCacheTimeout: Invalid argument';
  cmd.srv.sessionCacheTimeout = v;
  return undefined;
}

function sslStaplingCache(cmd: Cmd, a: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  return socacheFor(cmd, a, 'stapling');
}

type SecondsField = 'ocspSkew' | 'ocspMaxAge' | 'ocspTimeout' | 'staplingSkew' | 'staplingMaxAge' | 'staplingCacheTimeout' | 'staplingErrCacheTimeout' | 'staplingTimeout';

/** The OCSP and stapling numbers: atoi, refused when negative ("NAME: invalid argument"). */
const seconds = (k: SecondsField) => (cmd: Cmd, a: string): string | undefined => {
  const v = atoi(a);
  if (v < 0) return `${cmd.name}: invalid argument`;
  cmd.srv[k] = v;
  return undefined;
};

function sslProtocol(cmd: Cmd, raw: string): string | undefined {
  const p = parseProtocol(cmd, raw);
  if (typeof p === 'string') return p;
  cmd.srv.protocol = p;
  return undefined;
}

function sslProxyProtocol(cmd: Cmd, raw: string): string | undefined {
  const p = parseProtocol(cmd, raw);
  if (typeof p === 'string') return p;
  setProxy(cmd, 'protocol', p);
  return undefined;
}

function sslProxyVerify(cmd: Cmd, a: string): string | undefined {
  const m = parseVerify(cmd, a);
  if (m !== 'none' && m !== 'optional' && m !== 'require' && m !== 'optional_no_ca') return m;
  setProxy(cmd, 'verify', m);
  return undefined;
}

function sslUserName(cmd: Cmd, a: string): string | undefined {
  cmd.dir.userName = a;
  return undefined;
}

// ---- the module ----------------------------------------------------------------------------

type S = SslServerConfig;
type D = SslDirConfig;
const SRV = RSRC_CONF;
const ALL = RSRC_CONF | OR_AUTHCFG;

const conn = (c: ConnRec): SslConn | undefined => c.connConfig[self.index] as SslConn | undefined;

const hooks = makeHooks({
  dir: (r) => self.dir(r) ?? createDirConfig(),
  server: (r) => self.server(r.server) ?? createServerConfig(),
  conn: (r) => conn(r.connection),
  tls: (r, s) => state(r.rt.ctx)?.servers.get(s),
  nameBased: (r) => r.rt.vhosts.candidates(r.connection.localIp, r.connection.localPort).length > 1,
  sniPolicy: (r) => self.server(r.rt.ctx.mainServer)?.sniPolicy ?? 'secure',
});

/** A server's SSLProxy* settings (for the ssl_proxy provider). */
function proxyConfigOf(s: ServerRec): SslProxyConfig | undefined {
  return self.server(s)?.proxy;
}

const layerProvider: ConnectionLayerProvider = {
  open: (ctx) => state(ctx)?.layer ?? null,
  // Where Node's TLS binding can be driven on a handle (stream.ts), the layer wants no net.Socket.
  streams: tlsStreams,
};

/** Whether a request is on TLS, and its SSL variables (for %{..}x, expressions, mod_rewrite). */
export function requestSslVar(r: Request, name: string): string | undefined {
  const c = conn(r.connection);
  const legacy = self.index >= 0 && ((self.dir(r)?.options ?? 0) & OPT_LEGACYDNFORMAT) !== 0;
  return sslVar(c, name, legacy);
}

/** %{VAR}x and %{version|cipher|subjectdn|issuerdn|errcode|errstr}c for mod_log_config
 *  (ssl_var_log_handler_x / _c), its `log_items` provider. */
const logItems: LogItemSet = new Map([
  ['x', logItem((r, a) => requestSslVar(r, a) ?? null)],
  ['c', logItem((r, a) => {
    const c = conn(r.connection);
    if (c === undefined || c.sock === null) return null;
    switch (a) {
      case 'version': return sslVar(c, 'SSL_PROTOCOL', false) ?? null;
      case 'cipher': return sslVar(c, 'SSL_CIPHER', false) ?? null;
      case 'subjectdn': return sslVar(c, 'SSL_CLIENT_S_DN', false) ?? null;
      case 'issuerdn': return sslVar(c, 'SSL_CLIENT_I_DN', false) ?? null;
      case 'errcode': return '-';
      case 'errstr': return c.verify?.startsWith('FAILED:') ? c.verify.slice(7) : null;
      default: return null;
    }
  })],
]);

async function postConfig(ctx: ConfigContext): Promise<string | undefined> {
  const holder = ctx.getScratch<{ v: SslState | undefined }>('ssl:state', () => ({ v: undefined }));
  const main = self.server(ctx.mainServer) ?? createServerConfig();
  const dirVerify = dirVerifyServers(ctx);
  const machineFailed = checkMachineCerts(ctx);
  if (machineFailed !== undefined) return machineFailed;
  const built = buildContexts(ctx, (s) => self.server(s) ?? createServerConfig(),
    (s) => dirVerify.has(s) || dirVerify.has(ctx.mainServer), ticketKeys(ctx));
  if (typeof built === 'string') return built;
  let cache: SocacheInstance | null = null;
  const spec = main.sessionCache;
  // Opened whether or not a host speaks TLS, as httpd's ssl_scache_init is (server-status
  // shows the cache either way).
  if (spec !== undefined && spec !== 'none') {
    const c = await spec.init(ctx, ctx.mainServer, 'mod_ssl-sess', { avgIdLen: 30, avgObjSize: 150, expiryInterval: 30 }, !ctx.child);
    if (typeof c === 'string') {
      ctx.log('ssl', APLOG_EMERG, 'AH01874: Could not initialize session cache. Exiting.');
      ctx.log('ssl', APLOG_EMERG, 'AH02312: Fatal error initialising mod_ssl, exiting.');
      return 'AH00016: Configuration Failed';
    }
    cache = c;
  }
  if (cache === null && built.servers.size > 0) warn(ctx, 'AH01873: Init: Session Cache is not configured [hint: SSLSessionCache]');
  // OCSP stapling: its cache (SSLStaplingCache), then each host's certificates.
  const staplers = new Map<TlsServer, Stapler>();
  let staplingCache: SocacheInstance | null = null;
  const stapled = [...built.servers.values()].filter((t) => t.stapling !== null);
  if (stapled.length > 0) {
    if (main.staplingCache === undefined) {
      ctx.log('ssl', APLOG_EMERG, 'AH01958: SSLStapling: no stapling cache available');
      ctx.log('ssl', APLOG_EMERG, 'AH02312: Fatal error initialising mod_ssl, exiting.');
      if (cache !== null) await cache.destroy();
      return 'AH00016: Configuration Failed';
    }
    const c = await main.staplingCache.init(ctx, ctx.mainServer, 'mod_ssl-staple', { avgIdLen: 20, avgObjSize: 1500, expiryInterval: 300 }, !ctx.child);
    if (typeof c === 'string') {
      ctx.log('ssl', APLOG_EMERG, 'AH01872: Could not initialize stapling cache. Exiting.');
      ctx.log('ssl', APLOG_EMERG, 'AH02312: Fatal error initialising mod_ssl, exiting.');
      if (cache !== null) await cache.destroy();
      return 'AH00016: Configuration Failed';
    }
    staplingCache = c;
    for (const t of stapled) {
      const settings = t.stapling!;
      if (settings.certs.length > 1) {
        // DIFFERENCE: Node staples one response per context, chosen before the certificate
        // is: a host with RSA and ECDSA certificates is not stapled.
        warn(ctx, `PL02215: OCSP stapling is off for ${t.id}: it has ${settings.certs.length} certificates and plume staples for hosts with one`);
        continue;
      }
      const stapler = new Stapler(t.s, t.id, settings, () => st.staplingCache);
      stapler.init((level, message) => warn(ctx, message, level));
      if (APLOG_DEBUG <= levelFor(t.s.logLevel, 'ssl')) ctx.log('ssl', APLOG_DEBUG, 'AH01960: OCSP stapling initialized');
      staplers.set(t, stapler);
    }
  }
  warningsDone();
  const st: SslState = { servers: built.servers, cache, staplingCache, layer: null };
  if (built.servers.size > 0) {
    st.layer = new TlsLayer({
      servers: built.servers,
      cache: () => st.cache,
      sessionTimeoutMs: (main.sessionCacheTimeout ?? 300) * 1000,
      attach: (c, s) => { c.connConfig[self.index] = s; },
      candidates: (ip, port) => candidatesFor(ctx, ip, port),
      stapler: (t) => staplers.get(t),
      selectProtocol: (s, offers, t) => selectProtocol(ctx, { tls: t, protocol: PROTOCOL_HTTP1 }, null, s, offers),
    });
  }
  holder.v = st;
  return undefined;
}

/** ssl_init_proxy_certs' startup checks of each server's SSLProxyMachineCertificateFile/Path
 *  (a key that is missing, encrypted or not the certificate's stops the server). */
function checkMachineCerts(ctx: ConfigContext): string | undefined {
  for (const s of [ctx.mainServer, ...ctx.vhosts]) {
    const p = proxyConfigOf(s);
    if (p === undefined || p.engine !== true || (p.machineCertFile === undefined && p.machineCertPath === undefined)) continue;
    const m = loadMachineCerts(p.machineCertFile, p.machineCertPath);
    if (!('message' in m)) {
      if (m.certs.length === 0) ctx.log('ssl', APLOG_WARNING, 'AH02206: no client certs found for SSL proxy');
      else if (APLOG_DEBUG <= levelFor(s.logLevel, 'ssl')) ctx.log('ssl', APLOG_DEBUG, `AH02207: loaded ${m.certs.length} client certs for SSL proxy`);
      continue;
    }
    // APLOG_STARTUP: the message alone, then OpenSSL's reason for a mismatch.
    ctx.logBare('ssl', APLOG_EMERG, m.message + (m.cert !== undefined ? certDetails(m.cert) : ''));
    if (m.cert !== undefined) ctx.log('ssl', APLOG_ERR, 'SSL Library Error: error:05800074:x509 certificate routines::key values mismatch');
    ctx.log('ssl', APLOG_EMERG, 'AH02312: Fatal error initialising mod_ssl, exiting.');
    return 'AH00016: Configuration Failed';
  }
  return undefined;
}

/** The virtual hosts on an address (vhost.c's lookup), for SNI. */
function candidatesFor(ctx: ConfigContext, ip: string, port: number): readonly ServerRec[] {
  const cache = ctx.getScratch<Map<string, readonly ServerRec[]>>('ssl:candidates', () => new Map());
  const key = `${ip} ${port}`;
  let c = cache.get(key);
  if (c === undefined) {
    const exact: ServerRec[] = [];
    const star: ServerRec[] = [];
    for (const v of ctx.vhosts) {
      for (const a of v.addrs) {
        if (a.port !== 0 && a.port !== port) continue;
        if (a.host === '*' || a.host === '_default_' || a.host === '0.0.0.0' || a.host === '::') { if (!star.includes(v)) star.push(v); }
        else if (a.host === ip) { if (!exact.includes(v)) exact.push(v); }
      }
    }
    c = exact.length > 0 ? exact : star;
    cache.set(key, c);
  }
  return c;
}

function checkConfig(ctx: ConfigContext): string | undefined {
  // ap_http_scheme: a server with SSLEngine on is an https server (ssl_hook_http_scheme).
  for (const s of [ctx.mainServer, ...ctx.vhosts]) {
    if (self.server(s)?.engine === 'on') s.scheme = 'https';
  }
  return undefined;
}

async function cleanup(ctx: ConfigContext): Promise<void> {
  const st = state(ctx);
  if (st?.cache) await st.cache.destroy();
  if (st?.staplingCache) await st.staplingCache.destroy();
}

const self = defineModule<S, D>({
  name: 'ssl_module',
  source: 'mod_ssl.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<S, D, 'TAKE1'>({ name: 'SSLPassPhraseDialog', args: 'TAKE1', where: SRV, help: "SSL dialog mechanism for the pass phrase query ('builtin', '|/path/to/pipe_program', or 'exec:/path/to/cgi_program')", handler: sslPassPhraseDialog }),
    directive<S, D, 'TAKE1'>({ name: 'SSLSessionCache', args: 'TAKE1', where: SRV, help: "SSL Session Cache storage ('none', 'nonenotnull', 'dbm:/path/to/file')", handler: sslSessionCache }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCryptoDevice', args: 'TAKE1', where: SRV, help: "SSL external Crypto Device usage ('builtin', '...')", handler: (cmd, a) => {
      const err = cmd.checkContext(GLOBAL_ONLY);
      if (err !== undefined) return err;
      return a.toLowerCase() === 'builtin' ? undefined : "SSLCryptoDevice: Invalid argument; must be one of: 'builtin' (none)";
    } }),
    directive<S, D, 'TAKE23'>({ name: 'SSLRandomSeed', args: 'TAKE23', where: SRV, help: "SSL Pseudo Random Number Generator (PRNG) seeding source ('startup|connect builtin|file:/path|exec:/path [bytes]')", handler: sslRandomSeed }),
    directive<S, D, 'TAKE1'>({ name: 'SSLEngine', args: 'TAKE1', where: SRV, help: "SSL switch for the protocol engine ('on', 'off')", handler: sslEngine }),
    directive<S, D, 'FLAG'>({ name: 'SSLFIPS', args: 'FLAG', where: SRV, help: 'Enable FIPS-140 mode (`on\', `off\')', handler: (_cmd, on) => (on ? 'SSLFIPS invalid, rebuild httpd and openssl compiled for FIPS' : undefined) }),
    directive<S, D, 'TAKE12'>({ name: 'SSLCipherSuite', args: 'TAKE12', where: ALL, help: "Colon-delimited list of permitted SSL Ciphers, optional preceded by protocol identifier ('XXX:...:XXX' - see manual)", handler: (cmd, a, b) => sslCipherSuite(cmd, a, b) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCertificateFile', args: 'TAKE1', where: SRV, help: "SSL Server Certificate file ('/path/to/file' - PEM or DER encoded)", handler: fileInto((cmd, p) => { cmd.srv.certFiles = [...cmd.srv.certFiles, p]; }) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCertificateKeyFile', args: 'TAKE1', where: SRV, help: "SSL Server Private Key file ('/path/to/file' - PEM or DER encoded)", handler: fileInto((cmd, p) => { cmd.srv.keyFiles = [...cmd.srv.keyFiles, p]; }) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCertificateChainFile', args: 'TAKE1', where: SRV, help: "SSL Server CA Certificate Chain file ('/path/to/file' - PEM encoded)", handler: fileInto((cmd, p) => { cmd.srv.chainFile = p; }) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLSessionTicketKeyFile', args: 'TAKE1', where: SRV, help: "TLS session ticket encryption/decryption key file (RFC 5077) ('/path/to/file' - file with 48 bytes of random data)", handler: fileInto((cmd, p) => { cmd.srv.sessionTicketKeyFile = p; }) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCACertificatePath', args: 'TAKE1', where: ALL, help: "SSL CA Certificate path ('/path/to/dir' - contains PEM encoded files)", handler: (cmd, a) => {
      const d = checkDir(cmd, a);
      if (typeof d === 'string') return d;
      if (cmd.path !== undefined) return 'Your SSL library does not have support for per-directory CA';
      cmd.srv.caPath = d.path;
      return undefined;
    } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCACertificateFile', args: 'TAKE1', where: ALL, help: "SSL CA Certificate file ('/path/to/file' - PEM encoded)", handler: (cmd, a) => {
      const f = checkFile(cmd, a);
      if (typeof f === 'string') return f;
      if (cmd.path !== undefined) return 'Your SSL library does not have support for per-directory CA';
      cmd.srv.caFile = f.path;
      return undefined;
    } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCADNRequestPath', args: 'TAKE1', where: SRV, help: "SSL CA Distinguished Name path ('/path/to/dir' - symlink hashes to PEM of acceptable CA names to request)", handler: dirInto((cmd, p) => { cmd.srv.caDnPath = p; }) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCADNRequestFile', args: 'TAKE1', where: SRV, help: "SSL CA Distinguished Name file ('/path/to/file' - PEM encoded to derive acceptable CA names to request)", handler: fileInto((cmd, p) => { cmd.srv.caDnFile = p; }) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCARevocationPath', args: 'TAKE1', where: SRV, help: "SSL CA Certificate Revocation List (CRL) path ('/path/to/dir' - contains PEM encoded files)", handler: dirInto((cmd, p) => { cmd.srv.crlPath = p; }) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLCARevocationFile', args: 'TAKE1', where: SRV, help: "SSL CA Certificate Revocation List (CRL) file ('/path/to/file' - PEM encoded)", handler: fileInto((cmd, p) => { cmd.srv.crlFile = p; }) }),
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLCARevocationCheck', args: 'RAW_ARGS', where: SRV, help: 'SSL CA Certificate Revocation List (CRL) checking mode', handler: (cmd, raw) => {
      const c = parseCrlCheck(cmd, raw);
      if (typeof c === 'string') return c;
      cmd.srv.crlCheck = c;
      return undefined;
    } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLVerifyClient', args: 'TAKE1', where: ALL, help: "SSL Client verify type ('none', 'optional', 'require', 'optional_no_ca')", handler: sslVerifyClient }),
    directive<S, D, 'TAKE1'>({ name: 'SSLVerifyDepth', args: 'TAKE1', where: ALL, help: "SSL Client verify depth ('N' - number of intermediate certificates)", handler: sslVerifyDepth }),
    directive<S, D, 'TAKE1'>({ name: 'SSLSessionCacheTimeout', args: 'TAKE1', where: SRV, help: "SSL Session Cache object lifetime ('N' - number of seconds)", handler: sslSessionCacheTimeout }),
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLProtocol', args: 'RAW_ARGS', where: SRV, help: "Enable or disable various SSL protocols ('[+-][TLSv1|TLSv1.1|TLSv1.2] ...' - see manual)", handler: sslProtocol }),
    directive<S, D, 'FLAG'>({ name: 'SSLHonorCipherOrder', args: 'FLAG', where: SRV, help: "Use the server's cipher ordering preference", handler: (cmd, on) => { cmd.srv.honorCipherOrder = on; return undefined; } }),
    directive<S, D, 'FLAG'>({ name: 'SSLCompression', args: 'FLAG', where: SRV, help: 'Enable SSL level compression (`on\', `off\')', handler: sslCompression }),
    directive<S, D, 'FLAG'>({ name: 'SSLSessionTickets', args: 'FLAG', where: SRV, help: 'Enable or disable TLS session tickets(`on\', `off\')', handler: (cmd, on) => { cmd.srv.sessionTickets = on; return undefined; } }),
    directive<S, D, 'FLAG'>({ name: 'SSLInsecureRenegotiation', args: 'FLAG', where: SRV, help: 'Enable support for insecure renegotiation', handler: (cmd, on) => { cmd.srv.insecureReneg = on; return undefined; } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLUserName', args: 'TAKE1', where: ALL, help: 'Set user name to SSL variable value', handler: sslUserName }),
    directive<S, D, 'TAKE1'>({ name: 'SSLVHostSNIPolicy', args: 'TAKE1', where: SRV, help: 'SSL VirtualHost SNI compatibility policy setting', handler: sslVHostSniPolicy }),
    directive<S, D, 'FLAG'>({ name: 'SSLStrictSNIVHostCheck', args: 'FLAG', where: SRV, help: 'Strict SNI virtual host checking', handler: (cmd, on) => { cmd.srv.strictSni = on; return undefined; } }),
    // ---- the proxy side (SSL_CMD_PXY) ----
    directive<S, D, 'FLAG'>({ name: 'SSLProxyEngine', args: 'FLAG', where: SRV | PROXY_CONF, help: "SSL switch for the proxy protocol engine ('on', 'off')", handler: proxyFlag('engine') }),
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLProxyProtocol', args: 'RAW_ARGS', where: SRV | PROXY_CONF, help: "SSL Proxy: enable or disable SSL protocol flavors ('[+-][TLSv1|TLSv1.1|TLSv1.2] ...' - see manual)", handler: sslProxyProtocol }),
    directive<S, D, 'TAKE12'>({ name: 'SSLProxyCipherSuite', args: 'TAKE12', where: SRV | PROXY_CONF, help: "SSL Proxy: colon-delimited list of permitted SSL ciphers , optionally preceded by protocol specifier ('XXX:...:XXX' - see manual)", handler: (cmd, a, b) => sslCipherSuite(cmd, a, b, true) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyVerify', args: 'TAKE1', where: SRV | PROXY_CONF, help: "SSL Proxy: whether to verify the remote certificate ('on' or 'off')", handler: sslProxyVerify }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyVerifyDepth', args: 'TAKE1', where: SRV | PROXY_CONF, help: "SSL Proxy: maximum certificate verification depth ('N' - number of intermediate certificates)", handler: (cmd, a) => {
      const d = parseDepth(cmd, a);
      if (typeof d === 'string') return d;
      setProxy(cmd, 'verifyDepth', d);
      return undefined;
    } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyCACertificateFile', args: 'TAKE1', where: SRV | PROXY_CONF, help: "SSL Proxy: file containing server certificates ('/path/to/file' - PEM encoded certificates)", handler: fileInto((cmd, p) => setProxy(cmd, 'caFile', p)) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyCACertificatePath', args: 'TAKE1', where: SRV | PROXY_CONF, help: "SSL Proxy: directory containing server certificates ('/path/to/dir' - contains PEM encoded certificates)", handler: dirInto((cmd, p) => setProxy(cmd, 'caPath', p)) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyCARevocationPath', args: 'TAKE1', where: SRV | PROXY_CONF, help: "SSL Proxy: CA Certificate Revocation List (CRL) path ('/path/to/dir' - contains PEM encoded files)", handler: dirInto((cmd, p) => setProxy(cmd, 'crlPath', p)) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyCARevocationFile', args: 'TAKE1', where: SRV | PROXY_CONF, help: "SSL Proxy: CA Certificate Revocation List (CRL) file ('/path/to/file' - PEM encoded)", handler: fileInto((cmd, p) => setProxy(cmd, 'crlFile', p)) }),
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLProxyCARevocationCheck', args: 'RAW_ARGS', where: SRV | PROXY_CONF, help: 'SSL Proxy: CA Certificate Revocation List (CRL) checking mode', handler: (cmd, raw) => {
      const c = parseCrlCheck(cmd, raw);
      if (typeof c === 'string') return c;
      setProxy(cmd, 'crlCheck', c);
      return undefined;
    } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyMachineCertificateFile', args: 'TAKE1', where: SRV | PROXY_CONF, help: "SSL Proxy: file containing client certificates ('/path/to/file' - PEM encoded certificates)", handler: fileInto((cmd, p) => setProxy(cmd, 'machineCertFile', p)) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyMachineCertificatePath', args: 'TAKE1', where: SRV | PROXY_CONF, help: "SSL Proxy: directory containing client certificates ('/path/to/dir' - contains PEM encoded certificates)", handler: dirInto((cmd, p) => setProxy(cmd, 'machineCertPath', p)) }),
    directive<S, D, 'TAKE1'>({ name: 'SSLProxyMachineCertificateChainFile', args: 'TAKE1', where: SRV | PROXY_CONF, help: 'SSL Proxy: file containing issuing certificates of the client certificate (`/path/to/file\' - PEM encoded certificates)', handler: fileInto((cmd, p) => setProxy(cmd, 'machineChainFile', p)) }),
    directive<S, D, 'FLAG'>({ name: 'SSLProxyCheckPeerExpire', args: 'FLAG', where: SRV | PROXY_CONF, help: "SSL Proxy: check the peer certificate's expiration date", handler: proxyFlag('checkPeerExpire') }),
    directive<S, D, 'FLAG'>({ name: 'SSLProxyCheckPeerCN', args: 'FLAG', where: SRV | PROXY_CONF, help: "SSL Proxy: check the peer certificate's CN", handler: proxyFlag('checkPeerCn') }),
    directive<S, D, 'FLAG'>({ name: 'SSLProxyCheckPeerName', args: 'FLAG', where: SRV | PROXY_CONF, help: "SSL Proxy: check the peer certificate's name (must be present in subjectAltName extension or CN", handler: proxyFlag('checkPeerName') }),
    // ---- per directory ----
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLOptions', args: 'RAW_ARGS', where: OR_OPTIONS, help: "Set one or more options to configure the SSL engine('[+-]option[=value] ...' - see manual)", handler: (cmd, raw) => parseOptions(cmd.dir, raw) }),
    directive<S, D, 'NO_ARGS'>({ name: 'SSLRequireSSL', args: 'NO_ARGS', where: OR_AUTHCFG, help: 'Require the SSL protocol for the per-directory context (no arguments)', handler: (cmd) => { cmd.dir.requireSsl = true; return undefined; } }),
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLRequire', args: 'RAW_ARGS', where: OR_AUTHCFG, help: 'Require a boolean expression to evaluate to true for granting access(arbitrary complex boolean expression - see manual)', handler: sslRequire }),
    directive<S, D, 'TAKE1'>({ name: 'SSLRenegBufferSize', args: 'TAKE1', where: OR_AUTHCFG, help: 'Configure the amount of memory that will be used for buffering the request body if a per-location SSL renegotiation is required due to changed access control requirements', handler: sslRenegBufferSize }),
    // ---- OCSP ----
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLOCSPEnable', args: 'RAW_ARGS', where: SRV, help: "Enable use of OCSP to verify certificate revocation mode ('on', 'leaf', 'off')", handler: (cmd, raw) => {
      const c = parseOcspCheck(cmd, raw);
      if (typeof c === 'string') return c;
      cmd.srv.ocspEnable = c;
      return undefined;
    } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLOCSPDefaultResponder', args: 'TAKE1', where: SRV, help: 'URL of the default OCSP Responder', handler: (cmd, a) => { cmd.srv.ocspDefaultResponder = a; return undefined; } }),
    directive<S, D, 'FLAG'>({ name: 'SSLOCSPOverrideResponder', args: 'FLAG', where: SRV, help: "Force use of the default responder URL ('on', 'off')", handler: (cmd, on) => { cmd.srv.ocspOverride = on; return undefined; } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLOCSPResponseTimeSkew', args: 'TAKE1', where: SRV, help: 'Maximum time difference in OCSP responses', handler: seconds('ocspSkew') }),
    directive<S, D, 'TAKE1'>({ name: 'SSLOCSPResponseMaxAge', args: 'TAKE1', where: SRV, help: 'Maximum age of OCSP responses', handler: seconds('ocspMaxAge') }),
    directive<S, D, 'TAKE1'>({ name: 'SSLOCSPResponderTimeout', args: 'TAKE1', where: SRV, help: 'OCSP responder query timeout', handler: seconds('ocspTimeout') }),
    directive<S, D, 'FLAG'>({ name: 'SSLOCSPUseRequestNonce', args: 'FLAG', where: SRV, help: "Whether OCSP queries use a nonce or not ('on', 'off')", handler: (cmd, on) => { cmd.srv.ocspNonce = on; return undefined; } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLOCSPProxyURL', args: 'TAKE1', where: SRV, help: 'Proxy URL to use for OCSP requests', handler: (cmd, a) => {
      // apr_uri_parse takes nearly anything; what it refuses is a scheme://host with a bad port.
      if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(a) && parseUri(a) === null) return `SSLOCSPProxyURL: Cannot parse URL ${a}`;
      cmd.srv.ocspProxyUrl = a;
      return undefined;
    } }),
    directive<S, D, 'FLAG'>({ name: 'SSLOCSPNoVerify', args: 'FLAG', where: SRV, help: "Do not verify OCSP Responder certificate ('on', 'off')", handler: (cmd, on) => { cmd.srv.ocspNoVerify = on; return undefined; } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLOCSPResponderCertificateFile', args: 'TAKE1', where: SRV, help: 'Trusted OCSP responder certificates(`/path/to/file\' - PEM encoded certificates)', handler: fileInto((cmd, p) => { cmd.srv.ocspResponderCertFile = p; }) }),
    // ---- stapling ----
    directive<S, D, 'TAKE1'>({ name: 'SSLStaplingCache', args: 'TAKE1', where: SRV, help: "SSL Stapling Response Cache storage (`dbm:/path/to/file')", handler: sslStaplingCache }),
    directive<S, D, 'FLAG'>({ name: 'SSLUseStapling', args: 'FLAG', where: SRV, help: 'SSL switch for the OCSP Stapling protocol (`on\', `off\')', handler: (cmd, on) => { cmd.srv.useStapling = on; return undefined; } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLStaplingResponseTimeSkew', args: 'TAKE1', where: SRV, help: 'SSL stapling option for maximum time difference in OCSP responses', handler: seconds('staplingSkew') }),
    directive<S, D, 'TAKE1'>({ name: 'SSLStaplingResponderTimeout', args: 'TAKE1', where: SRV, help: 'SSL stapling option for OCSP responder timeout', handler: seconds('staplingTimeout') }),
    directive<S, D, 'TAKE1'>({ name: 'SSLStaplingResponseMaxAge', args: 'TAKE1', where: SRV, help: 'SSL stapling option for maximum age of OCSP responses', handler: seconds('staplingMaxAge') }),
    directive<S, D, 'TAKE1'>({ name: 'SSLStaplingStandardCacheTimeout', args: 'TAKE1', where: SRV, help: 'SSL stapling option for normal OCSP Response Cache Lifetime', handler: seconds('staplingCacheTimeout') }),
    directive<S, D, 'FLAG'>({ name: 'SSLStaplingReturnResponderErrors', args: 'FLAG', where: SRV, help: 'SSL stapling switch to return Status Errors Back to Client(`on\', `off\')', handler: (cmd, on) => { cmd.srv.staplingReturnErrors = on; return undefined; } }),
    directive<S, D, 'FLAG'>({ name: 'SSLStaplingFakeTryLater', args: 'FLAG', where: SRV, help: 'SSL stapling switch to send tryLater response to client on error (`on\', `off\')', handler: (cmd, on) => { cmd.srv.staplingFakeTryLater = on; return undefined; } }),
    directive<S, D, 'TAKE1'>({ name: 'SSLStaplingErrorCacheTimeout', args: 'TAKE1', where: SRV, help: 'SSL stapling option for OCSP Response Error Cache Lifetime', handler: seconds('staplingErrCacheTimeout') }),
    directive<S, D, 'TAKE1'>({ name: 'SSLStaplingForceURL', args: 'TAKE1', where: SRV, help: 'SSL stapling option to Force the OCSP Stapling URL', handler: (cmd, a) => { cmd.srv.staplingForceUrl = a; return undefined; } }),
    directive<S, D, 'TAKE2'>({ name: 'SSLOpenSSLConfCmd', args: 'TAKE2', where: SRV, help: 'OpenSSL configuration command', handler: sslOpenSslConfCmd }),
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLLog', args: 'RAW_ARGS', where: OR_ALL, help: 'SSLLog directive is no longer supported - use ErrorLog.', handler: () => 'SSLLog directive is no longer supported - use ErrorLog.' }),
    directive<S, D, 'RAW_ARGS'>({ name: 'SSLLogLevel', args: 'RAW_ARGS', where: OR_ALL, help: 'SSLLogLevel directive is no longer supported - use LogLevel.', handler: () => 'SSLLogLevel directive is no longer supported - use LogLevel.' }),
  ],
  hooks: {
    postReadRequest: { fn: hooks.postReadRequest, order: HOOK_MIDDLE },
    accessChecker: { fn: hooks.accessChecker, order: HOOK_MIDDLE },
    checkUserId: { fn: hooks.checkUserId, order: HOOK_REALLY_FIRST },
    authChecker: { fn: hooks.authChecker, order: HOOK_REALLY_FIRST },
    fixups: { fn: hooks.fixups, order: HOOK_MIDDLE },
  },
  configHooks: { checkConfig, postConfig, cleanup },
  providers: [
    { group: 'connection_layer', name: 'ssl', version: '0', provider: layerProvider },
    { group: 'log_items', name: 'ssl', version: '0', provider: logItems },
    { group: 'ssl_var_lookup', name: 'ssl', version: '0', provider: requestSslVar },
    { group: 'expr', name: 'ssl', version: '0', provider: makeExprProvider((r, n) => requestSslVar(r, n), conn) },
    { group: 'status_hook', name: 'mod_ssl', version: '0', provider: sslStatusHook((r) => r.rt.ctx.getScratch<{ v: SslState | undefined }>('ssl:state', () => ({ v: undefined })).v?.cache ?? null) },
    { group: 'ssl_proxy', name: 'ssl', version: '0', provider: makeProxyProvider((s): SslProxyConfig | undefined => proxyConfigOf(s), (v): Partial<SslProxyConfig> | undefined => (v[self.index] as SslDirConfig | undefined)?.proxy) },
  ],
});

export default self;
