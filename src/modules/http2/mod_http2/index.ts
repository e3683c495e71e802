// mod_http2: HTTP/2 on Node's http2 (nghttp2), as httpd 2.4.71's mod_http2 2.0 offers it:
// `Protocols h2 h2c http/1.1` with h2 chosen by TLS's ALPN, h2c by an HTTP/1.1 Upgrade
// (H2Upgrade) or by the connection preface (H2Direct), H2ModernTLSOnly's TLS requirements,
// the session and stream settings, server push (H2Push, H2PushResource, H2PushPriority,
// H2PushDiarySize: on by default in 2.4.71), 103 Early Hints, the HTTP2/H2_* variables, and
// tunnels on a stream: CONNECT (RFC 9113 8.5, to mod_proxy_connect) and, with H2WebSockets,
// RFC 8441's extended CONNECT served as a WebSocket Upgrade (stream.ts).
// Each stream is a request through the same lifecycle, hooks and filters as HTTP/1.1
// (stream.ts); the directives about mod_http2's worker threads have no counterpart in a
// Node process and are accepted as httpd accepts them (docs/differences.md).

import type * as net from 'node:net';
import * as http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import {
  defineModule, directive, MODULE_API_VERSION, RSRC_CONF, OR_AUTHCFG, OR_FILEINFO, DECLINED, HOOK_MIDDLE,
} from '../../../server/module.js';
import type { CmdParms } from '../../../server/config/cmd.js';
import type { ConfigContext } from '../../../server/config/context.js';
import type { Request } from '../../../server/request/request.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { ConnectionLayerProvider } from '../../../server/http/connection-layer.js';
import {
  isAllowedProtocol, PROTOCOL_HTTP1, type ProtocolConn, type ProtocolSwitcher, type SwitchableConn,
} from '../../../server/http/protocols.js';
import { coreServer, parseTimeout } from '../../../server/core/config.js';
import { APLOG_DEBUG, APLOG_WARNING } from '../../../server/log/levels.js';
import { H2Session, tlsAcceptable, type PushPolicy, type SessionSettings } from './session.js';
import { H2Stream } from './stream.js';
import { PREFACE, UpgradeDuplex, literalBlock, stream1Headers } from './upgrade.js';

interface PushResource { readonly path: string; readonly critical: boolean }
interface PushPriority { readonly dependency: 'after' | 'before' | 'interleaved'; readonly weight: number }

/** Per server (httpd's h2_config); undefined: not set here. */
interface S {
  maxStreams: number | undefined;
  windowSize: number | undefined;
  minWorkers: number | undefined;
  maxWorkers: number | undefined;
  maxWorkerIdleMs: number | undefined;
  streamMaxMem: number | undefined;
  direct: boolean | undefined;
  modernTlsOnly: boolean | undefined;
  upgrade: boolean | undefined;
  tlsWarmUpSize: number | undefined;
  tlsCoolDownSecs: number | undefined;
  push: boolean | undefined;
  pushPriorities: ReadonlyMap<string, PushPriority>;
  pushDiarySize: number | undefined;
  copyFiles: boolean | undefined;
  pushResources: readonly PushResource[];
  earlyHints: boolean | undefined;
  earlyHintFields: readonly (readonly [string, string])[];
  paddingBits: number | undefined;
  outputBuffering: boolean | undefined;
  streamTimeoutMs: number | undefined;
  maxDataFrameLen: number | undefined;
  proxyRequests: boolean | undefined;
  webSockets: boolean | undefined;
  maxHeaderBlockLen: number | undefined;
  maxStreamErrors: number | undefined;
}

/** Per directory (httpd's h2_dir_config). */
interface D {
  upgrade: boolean | undefined;
  push: boolean | undefined;
  pushResources: readonly PushResource[];
  copyFiles: boolean | undefined;
  earlyHintFields: readonly (readonly [string, string])[];
  proxyRequests: boolean | undefined;
}

function createServerConfig(): S {
  return {
    maxStreams: undefined, windowSize: undefined, minWorkers: undefined, maxWorkers: undefined, maxWorkerIdleMs: undefined,
    streamMaxMem: undefined, direct: undefined, modernTlsOnly: undefined, upgrade: undefined, tlsWarmUpSize: undefined,
    tlsCoolDownSecs: undefined, push: undefined, pushPriorities: new Map(), pushDiarySize: undefined, copyFiles: undefined,
    pushResources: [], earlyHints: undefined, earlyHintFields: [], paddingBits: undefined, outputBuffering: undefined,
    streamTimeoutMs: undefined, maxDataFrameLen: undefined, proxyRequests: undefined, webSockets: undefined,
    maxHeaderBlockLen: undefined, maxStreamErrors: undefined,
  };
}

function mergeServerConfig(base: Readonly<S>, add: Readonly<S>): S {
  const p = <T>(a: T | undefined, b: T | undefined): T | undefined => (a !== undefined ? a : b);
  return {
    maxStreams: p(add.maxStreams, base.maxStreams),
    windowSize: p(add.windowSize, base.windowSize),
    minWorkers: p(add.minWorkers, base.minWorkers),
    maxWorkers: p(add.maxWorkers, base.maxWorkers),
    maxWorkerIdleMs: p(add.maxWorkerIdleMs, base.maxWorkerIdleMs),
    streamMaxMem: p(add.streamMaxMem, base.streamMaxMem),
    direct: p(add.direct, base.direct),
    modernTlsOnly: p(add.modernTlsOnly, base.modernTlsOnly),
    upgrade: p(add.upgrade, base.upgrade),
    tlsWarmUpSize: p(add.tlsWarmUpSize, base.tlsWarmUpSize),
    tlsCoolDownSecs: p(add.tlsCoolDownSecs, base.tlsCoolDownSecs),
    push: p(add.push, base.push),
    pushPriorities: add.pushPriorities.size > 0 ? new Map([...base.pushPriorities, ...add.pushPriorities]) : base.pushPriorities,
    pushDiarySize: p(add.pushDiarySize, base.pushDiarySize),
    copyFiles: p(add.copyFiles, base.copyFiles),
    pushResources: add.pushResources.length > 0 ? add.pushResources : base.pushResources,
    earlyHints: p(add.earlyHints, base.earlyHints),
    earlyHintFields: add.earlyHintFields.length > 0 ? add.earlyHintFields : base.earlyHintFields,
    paddingBits: p(add.paddingBits, base.paddingBits),
    outputBuffering: p(add.outputBuffering, base.outputBuffering),
    streamTimeoutMs: p(add.streamTimeoutMs, base.streamTimeoutMs),
    maxDataFrameLen: p(add.maxDataFrameLen, base.maxDataFrameLen),
    proxyRequests: p(add.proxyRequests, base.proxyRequests),
    webSockets: p(add.webSockets, base.webSockets),
    maxHeaderBlockLen: p(add.maxHeaderBlockLen, base.maxHeaderBlockLen),
    maxStreamErrors: p(add.maxStreamErrors, base.maxStreamErrors),
  } satisfies { [K in keyof Required<S>]: S[K] };
}

function createDirConfig(): D {
  return { upgrade: undefined, push: undefined, pushResources: [], copyFiles: undefined, earlyHintFields: [], proxyRequests: undefined };
}

function mergeDirConfig(base: Readonly<D>, add: Readonly<D>): D {
  const p = <T>(a: T | undefined, b: T | undefined): T | undefined => (a !== undefined ? a : b);
  return {
    upgrade: p(add.upgrade, base.upgrade),
    push: p(add.push, base.push),
    pushResources: add.pushResources.length > 0 ? [...base.pushResources, ...add.pushResources] : base.pushResources,
    copyFiles: p(add.copyFiles, base.copyFiles),
    earlyHintFields: add.earlyHintFields.length > 0 ? [...base.earlyHintFields, ...add.earlyHintFields] : base.earlyHintFields,
    proxyRequests: p(add.proxyRequests, base.proxyRequests),
  } satisfies { [K in keyof Required<D>]: D[K] };
}

type Cmd = CmdParms<S, D>;

// ---- directive handlers (h2_config.c's wording) ----------------------------------------------

/** apr_atoi64 then (int): leading blanks and a sign, digits up to the first other character. */
function atoi(v: string): number {
  const m = /^\s*([+-]?\d+)/.exec(v);
  if (m === null) return 0;
  const n = Number(m[1]);
  return Number.isFinite(n) ? Math.trunc(n) | 0 : 0;
}

function onOff(v: string): boolean | undefined {
  const l = v.toLowerCase();
  return l === 'on' ? true : l === 'off' ? false : undefined;
}

/** A flag directive set per directory inside a section, per server outside (CONFIG_CMD_SET). */
function flag(set: (cmd: Cmd, on: boolean) => void): (cmd: Cmd, v: string) => string | undefined {
  return (cmd, v) => {
    const on = onOff(v);
    if (on === undefined) return 'value must be On or Off';
    set(cmd, on);
    return undefined;
  };
}

function minInt(min: number, msg: string, set: (cmd: Cmd, n: number) => void): (cmd: Cmd, v: string) => string | undefined {
  return (cmd, v) => {
    const n = atoi(v);
    if (n < min) return msg;
    set(cmd, n);
    return undefined;
  };
}

function timeout(msg: string, set: (cmd: Cmd, ms: number | undefined) => void): (cmd: Cmd, v: string) => string | undefined {
  return (cmd, v) => {
    const secs = parseTimeout(v, 's');
    if (secs === undefined) return msg;
    set(cmd, secs > 0 ? secs * 1000 : undefined);
    return undefined;
  };
}

function pushDiarySize(cmd: Cmd, v: string): string | undefined {
  const n = atoi(v);
  if (n < 0) return 'value must be >= 0';
  if (n > 0 && (n & (n - 1)) !== 0) return 'value must a power of 2';
  if (n > 1 << 16) return 'value must <= 65536';
  cmd.srv.pushDiarySize = n;
  return undefined;
}

function pushPriority(cmd: Cmd, ctype: string, dep: string, weight?: string): string | undefined {
  if (ctype === '') return "1st argument must be a mime-type, like 'text/css' or '*'";
  let dependency: PushPriority['dependency'];
  let w = 16;
  if (weight === undefined && /^\d+$/.test(dep)) {
    // "H2PushPriority type weight": Interleaved with that weight.
    dependency = 'interleaved';
    w = atoi(dep);
  } else {
    const d = dep.toLowerCase();
    if (d === 'after') dependency = 'after';
    else if (d === 'before') {
      dependency = 'before';
      if (weight !== undefined) return "dependency 'Before' does not allow a weight";
    } else if (d === 'interleaved') {
      dependency = 'interleaved';
      w = 256;
    } else return "dependency must be one of 'After', 'Before' or 'Interleaved'";
    if (weight !== undefined) w = atoi(weight);
  }
  const m = new Map(cmd.srv.pushPriorities);
  m.set(ctype.toLowerCase(), { dependency, weight: Math.max(1, Math.min(256, w)) });
  cmd.srv.pushPriorities = m;
  return undefined;
}

function pushResource(cmd: Cmd, a1: string, a2?: string, a3?: string): string | undefined {
  let path: string;
  let last: string | undefined = a3;
  if (a1.toLowerCase() === 'add') {
    path = a2 ?? '';
  } else {
    path = a1;
    last = a2;
    if (a3 !== undefined) return 'too many parameter';
  }
  let critical = false;
  if (last !== undefined) {
    if (last.toLowerCase() === 'critical') critical = true;
    else return 'unknown last parameter';
  }
  const res = { path, critical };
  if (cmd.path !== undefined) cmd.dir.pushResources = [...cmd.dir.pushResources, res];
  else cmd.srv.pushResources = [...cmd.srv.pushResources, res];
  return undefined;
}

function earlyHint(cmd: Cmd, name: string, value: string): string | undefined {
  if (name === '') return 'Early Hint header name must not be empty';
  if (value === '') return 'Early Hint header value must not be empty';
  if (value.trim() === '') return 'Early Hint header value must not be empty/only space';
  if (/[\r\n\0]/.test(value)) return 'Early Hint header value contains invalid characters';
  const f = [name, value] as const;
  if (cmd.path !== undefined) cmd.dir.earlyHintFields = [...cmd.dir.earlyHintFields, f];
  else cmd.srv.earlyHintFields = [...cmd.srv.earlyHintFields, f];
  return undefined;
}

function padding(cmd: Cmd, v: string): string | undefined {
  const n = atoi(v);
  if (n < 0) return 'number of bits must be >= 0';
  if (n > 8) return 'number of bits must be <= 8';
  cmd.srv.paddingBits = n;
  return undefined;
}

// ---- the effective settings ------------------------------------------------------------------

/** httpd's defaults (h2_config.c defconf). */
const DEF_MAX_STREAMS = 100;
const DEF_WINDOW_SIZE = 65535;
const DEF_STREAM_MAX_MEM = 32 * 1024;
const DEF_PUSH_DIARY = 256;

const settingsCache = new WeakMap<ServerRec, SessionSettings>();

function settingsFor(s: ServerRec): SessionSettings {
  let st = settingsCache.get(s);
  if (st === undefined) {
    const c = self.server(s);
    st = {
      maxStreams: c.maxStreams ?? DEF_MAX_STREAMS,
      windowSize: c.windowSize ?? DEF_WINDOW_SIZE,
      maxMem: c.streamMaxMem ?? DEF_STREAM_MAX_MEM,
      // H2StreamTimeout, by default the server's Timeout.
      streamTimeoutMs: c.streamTimeoutMs ?? s.timeout * 1000,
      idleTimeoutMs: Math.max(1, s.keepAlive ? s.keepAliveTimeout : s.timeout * 1000),
      paddingBits: c.paddingBits ?? 0,
      pushDiarySize: c.pushDiarySize ?? DEF_PUSH_DIARY,
      modernTlsOnly: c.modernTlsOnly ?? true,
      webSockets: c.webSockets ?? false,
      proxyRequests: c.proxyRequests ?? false,
      maxHeaderBlockLen: c.maxHeaderBlockLen ?? 0,
      maxStreamErrors: c.maxStreamErrors ?? 8,
    };
    settingsCache.set(s, st);
  }
  return st;
}

/** h2_protocol_is_acceptable_c1: H2ModernTLSOnly's test on a TLS connection. */
function acceptable(c: ProtocolConn, s: ServerRec): boolean {
  if (c.tls === null || !(self.server(s).modernTlsOnly ?? true)) return true;
  return tlsAcceptable(c.tls);
}

function canUpgrade(r: Request, tls: boolean): boolean {
  const u = self.dir(r)?.upgrade ?? self.server(r.server).upgrade;
  return u === true || (u === undefined && !tls);
}

function hasToken(v: string | undefined, t: string): boolean {
  return v !== undefined && v.split(',').some((x) => x.trim().toLowerCase() === t);
}

/** Fields of an upgrade request that do not go into its HTTP/2 form. */
const UPGRADE_DROPPED: ReadonlySet<string> = new Set(['connection', 'upgrade', 'http2-settings', 'host', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te']);

const pushPolicy: PushPolicy = {
  push(r) {
    return self.dir(r)?.push ?? self.server(r.server).push ?? true;
  },
  resources(r) {
    const d = self.dir(r)?.pushResources ?? [];
    const s = self.server(r.server).pushResources;
    return d.length === 0 ? s : s.length === 0 ? d : [...s, ...d];
  },
  priority(ct) {
    const m = self.server(pushServer).pushPriorities;
    const p = (ct !== undefined ? m.get(ct.split(';')[0]!.trim().toLowerCase()) : undefined) ?? m.get('*');
    return p ?? null;
  },
};
/** The main server, whose H2PushPriority applies (RSRC_CONF, read as httpd's c1 config). */
let pushServer: ServerRec;

function isNetSocket(t: unknown): t is net.Socket {
  return typeof (t as Partial<net.Socket>).unshift === 'function' && typeof (t as { _handle?: unknown })._handle === 'object';
}

const switcher: ProtocolSwitcher = {
  propose(c, r, s, offers, proposals) {
    if (c.protocol !== PROTOCOL_HTTP1) return;
    if (!acceptable(c, s)) {
      r?.log('http2', APLOG_DEBUG, 'AH03084: protocol propose: connection requirements not met');
      return;
    }
    if (r !== null) {
      // An HTTP/1.1 Upgrade: allowed by H2Upgrade, with HTTP2-Settings, for a request
      // without a body.
      if (!canUpgrade(r, c.tls !== null)) return;
      if (r.headersIn.get('HTTP2-Settings') === undefined) {
        r.log('http2', APLOG_DEBUG, 'AH03085: upgrade without HTTP2-Settings declined');
        return;
      }
      if (!hasToken(r.headersIn.get('Connection'), 'http2-settings')) {
        r.log('http2', APLOG_DEBUG, 'AH03086: upgrade without HTTP2-Settings declined');
        return;
      }
      const cl = r.headersIn.get('Content-Length');
      if ((cl !== undefined && cl !== '0') || (cl === undefined && r.headersIn.get('Transfer-Encoding') !== undefined)) {
        r.log('http2', APLOG_DEBUG, 'AH03087: upgrade with body declined');
        return;
      }
    }
    const p = c.tls !== null ? 'h2' : 'h2c';
    if (offers === null || offers.includes(p)) proposals.push(p);
  },

  switchTo(c, r, s, protocol) {
    const pc = c.protocolConn;
    const tls = pc.tls;
    if (protocol !== (tls !== null ? 'h2' : 'h2c')) return false;
    const taken = c.takeOver();
    if (taken === null) return false;
    const t = taken.transport;
    let sock: net.Socket | Duplex;
    if (r !== null) {
      // The request that asked becomes stream 1 of the session.
      const fields: [string, string][] = [
        [':method', r.method], [':scheme', tls !== null ? 'https' : 'http'],
        [':authority', r.headersIn.get('Host') ?? ''], [':path', r.unparsedUri],
      ];
      r.headersIn.forEach((name, value, key) => { if (!UPGRADE_DROPPED.has(key)) fields.push([key, value]); });
      const frame = stream1Headers(literalBlock(fields));
      if (frame === null) { t.destroy(); return true; }
      sock = new UpgradeDuplex(t, frame, taken.pending);
    } else if (isNetSocket(t)) {
      // A TLS socket made on the accepted socket (mod_ssl) keeps secureConnecting set after
      // its handshake (tls.Server's own listener clears it); Node's HTTP/2 would wait for a
      // second handshake.
      const ts = t as net.Socket & { secureConnecting?: boolean };
      if (ts.secureConnecting === true) ts.secureConnecting = false;
      // Paused first: unshifted into a flowing socket the bytes would go out as 'data' events;
      // Node's HTTP/2 reads what is buffered when the session starts.
      if (taken.pending.length > 0) { t.pause(); t.unshift(taken.pending); }
      sock = t;
    } else {
      sock = new UpgradeDuplex(t, Buffer.alloc(0), taken.pending);
    }
    new H2Session(c.runtime, c, s, protocol, settingsFor(s), pushPolicy, sock, tls);
    return true;
  },

  direct(c, s) {
    if (c.protocol !== PROTOCOL_HTTP1) return null;
    const needed = c.tls !== null ? 'h2' : 'h2c';
    const d = self.server(s).direct ?? c.tls === null;
    if (!d || !isAllowedProtocol(s, needed) || !acceptable(c, s)) return null;
    return { protocol: needed, preface: PREFACE };
  },
};

/** Connections to a port where a server allows h2c arrive as net.Sockets (their handle is
 *  then Node's HTTP/2's to read). */
const layer: ConnectionLayerProvider = {
  open(ctx: ConfigContext) {
    const ports = new Set<number>();
    let all = false;
    for (const s of [ctx.mainServer, ...ctx.vhosts]) {
      const ps = coreServer(s).protocols;
      if (ps === undefined || !ps.some((p) => p === 'h2c' || p === 'h2')) continue;
      if (!s.isVirtual) all = true;
      for (const a of s.addrs) ports.add(a.port);
    }
    if (!all && ports.size === 0) return null;
    return {
      wantsSocket: (port: number) => all || ports.has(port) || ports.has(0),
      accept: () => false,
    };
  },
};

/** fixups (h2_h2_fixups): the HTTP2 and H2_* variables of a request on a stream, and the
 *  103 Early Hints H2EarlyHint configures (H2EarlyHints on). */
function fixups(r: Request): number {
  const c = r.connection;
  if (!(c instanceof H2Stream)) return DECLINED;
  const stream = c.stream;
  const id = stream.id ?? 0;
  const pushed = id % 2 === 0;
  const e = r.subprocessEnv;
  e.set('HTTP2', 'on');
  const push = stream.session?.remoteSettings.enablePush !== false && pushPolicy.push(r) ? 'on' : 'off';
  e.set('H2PUSH', push);
  e.set('H2_PUSH', push);
  e.set('H2_PUSHED', pushed ? 'PUSHED' : '');
  e.set('H2_PUSHED_ON', pushed ? String(c.pushedOn) : '');
  e.set('H2_STREAM_ID', String(id));
  e.set('H2_STREAM_TAG', `${c.session.c1.id}-${id}`);
  if (!pushed && self.server(r.server).earlyHints === true) {
    const fields = [...self.server(r.server).earlyHintFields, ...(self.dir(r)?.earlyHintFields ?? [])];
    if (fields.length > 0 && !stream.headersSent) {
      const h: http2.OutgoingHttpHeaders = { ':status': 103 };
      for (const [n, v] of fields) {
        const k = n.toLowerCase();
        const had = h[k];
        h[k] = had === undefined ? v : `${String(had)}, ${v}`;
      }
      try { stream.additionalHeaders(h); } catch { /* stream gone */ }
    }
  }
  return DECLINED;
}

const SRV = RSRC_CONF;

const self = defineModule<S, D>({
  name: 'http2_module',
  source: 'mod_http2.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<S, D, 'TAKE1'>({ name: 'H2MaxSessionStreams', args: 'TAKE1', where: SRV, help: 'maximum number of open streams per session', handler: minInt(1, 'value must be > 0', (cmd, n) => { cmd.srv.maxStreams = n; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2WindowSize', args: 'TAKE1', where: SRV, help: 'window size on client DATA', handler: minInt(1024, 'value must be >= 1024', (cmd, n) => { cmd.srv.windowSize = n; }) }),
    // DIFFERENCE: no worker threads in a Node process; accepted with httpd's checks.
    directive<S, D, 'TAKE1'>({ name: 'H2MinWorkers', args: 'TAKE1', where: SRV, help: 'minimum number of worker threads per child', handler: minInt(1, 'value must be > 0', (cmd, n) => { cmd.srv.minWorkers = n; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2MaxWorkers', args: 'TAKE1', where: SRV, help: 'maximum number of worker threads per child', handler: minInt(1, 'value must be > 0', (cmd, n) => { cmd.srv.maxWorkers = n; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2MaxWorkerIdleSeconds', args: 'TAKE1', where: SRV, help: 'maximum number of idle seconds before a worker shuts down', handler: timeout('Invalid idle limit value', (cmd, ms) => { cmd.srv.maxWorkerIdleMs = ms; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2StreamMaxMemSize', args: 'TAKE1', where: SRV, help: 'maximum number of bytes buffered in memory for a stream', handler: minInt(1024, 'value must be >= 1024', (cmd, n) => { cmd.srv.streamMaxMem = n; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2SerializeHeaders', args: 'TAKE1', where: SRV, help: 'disabled, this directive has no longer an effect.', handler: (cmd, v) => {
      if (v.toLowerCase() === 'on') cmd.log('http2', APLOG_WARNING, `AH10307: ${cmd.name}: this feature has been disabled and the directive to enable it is ignored.`);
      return undefined;
    } }),
    directive<S, D, 'TAKE1'>({ name: 'H2ModernTLSOnly', args: 'TAKE1', where: SRV, help: 'off to not impose RFC 7540 restrictions on TLS', handler: flag((cmd, on) => { cmd.srv.modernTlsOnly = on; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2Upgrade', args: 'TAKE1', where: SRV | OR_AUTHCFG, help: 'on to allow HTTP/1 Upgrades to h2/h2c', handler: flag((cmd, on) => { if (cmd.path !== undefined) cmd.dir.upgrade = on; else cmd.srv.upgrade = on; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2Direct', args: 'TAKE1', where: SRV, help: 'on to enable direct HTTP/2 mode', handler: flag((cmd, on) => { cmd.srv.direct = on; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2SessionExtraFiles', args: 'TAKE1', where: SRV, help: 'number of extra file a session might keep open (obsolete)', handler: (cmd) => {
      cmd.log('http2', APLOG_WARNING, 'H2SessionExtraFiles is obsolete and will be ignored');
      return undefined;
    } }),
    // DIFFERENCE: Node's TLS writes its records itself under HTTP/2 (nghttp2 writes from C++);
    // the warm-up record sizing is accepted with httpd's syntax (docs/differences.md).
    directive<S, D, 'TAKE1'>({ name: 'H2TLSWarmUpSize', args: 'TAKE1', where: SRV, help: 'number of bytes on TLS connection before doing max writes', handler: (cmd, v) => { cmd.srv.tlsWarmUpSize = atoi(v); return undefined; } }),
    directive<S, D, 'TAKE1'>({ name: 'H2TLSCoolDownSecs', args: 'TAKE1', where: SRV, help: 'seconds of idle time on TLS before shrinking writes', handler: (cmd, v) => { cmd.srv.tlsCoolDownSecs = atoi(v); return undefined; } }),
    directive<S, D, 'TAKE1'>({ name: 'H2Push', args: 'TAKE1', where: SRV | OR_AUTHCFG, help: 'off to disable HTTP/2 server push', handler: flag((cmd, on) => { if (cmd.path !== undefined) cmd.dir.push = on; else cmd.srv.push = on; }) }),
    directive<S, D, 'TAKE23'>({ name: 'H2PushPriority', args: 'TAKE23', where: SRV, help: 'define priority of PUSHed resources per content type', handler: (cmd, a, b, c) => pushPriority(cmd, a, b, c) }),
    directive<S, D, 'TAKE1'>({ name: 'H2PushDiarySize', args: 'TAKE1', where: SRV, help: 'size of push diary', handler: pushDiarySize }),
    // DIFFERENCE: no threads share file handles here; the data is always copied into the stream.
    directive<S, D, 'TAKE1'>({ name: 'H2CopyFiles', args: 'TAKE1', where: OR_FILEINFO, help: 'on to perform copy of file data', handler: flag((cmd, on) => { if (cmd.path !== undefined) cmd.dir.copyFiles = on; else cmd.srv.copyFiles = on; }) }),
    directive<S, D, 'TAKE123'>({ name: 'H2PushResource', args: 'TAKE123', where: OR_FILEINFO | OR_AUTHCFG, help: 'add a resource to be pushed in this location/on this server.', handler: (cmd, a, b, c) => pushResource(cmd, a, b, c) }),
    directive<S, D, 'TAKE1'>({ name: 'H2EarlyHints', args: 'TAKE1', where: SRV, help: 'on to enable interim status 103 responses', handler: flag((cmd, on) => { cmd.srv.earlyHints = on; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2Padding', args: 'TAKE1', where: SRV, help: 'set payload padding', handler: padding }),
    // DIFFERENCE: nghttp2 under Node frames what a stream holds as it comes; H2OutputBuffering
    // and H2MaxDataFrameLen are accepted with httpd's checks (docs/differences.md).
    directive<S, D, 'TAKE1'>({ name: 'H2OutputBuffering', args: 'TAKE1', where: SRV, help: 'set stream output buffer on/off', handler: flag((cmd, on) => { cmd.srv.outputBuffering = on; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2StreamTimeout', args: 'TAKE1', where: SRV, help: 'set stream timeout', handler: timeout('Invalid timeout value', (cmd, ms) => { cmd.srv.streamTimeoutMs = ms; }) }),
    directive<S, D, 'TAKE1'>({ name: 'H2MaxDataFrameLen', args: 'TAKE1', where: SRV, help: 'maximum number of bytes in a single HTTP/2 DATA frame', handler: minInt(0, 'value must be 0 or larger', (cmd, n) => { cmd.srv.maxDataFrameLen = n; }) }),
    directive<S, D, 'TAKE2'>({ name: 'H2EarlyHint', args: 'TAKE2', where: OR_FILEINFO | OR_AUTHCFG, help: "add a a 'Link:' header for a 103 Early Hints response.", handler: (cmd, a, b) => earlyHint(cmd, a, b) }),
    // On: a stream's :scheme, :authority and :path make an absolute URL for mod_proxy's forward proxy.
    directive<S, D, 'TAKE1'>({ name: 'H2ProxyRequests', args: 'TAKE1', where: OR_FILEINFO, help: 'Enables forward proxy requests via HTTP/2', handler: flag((cmd, on) => { if (cmd.path !== undefined) cmd.dir.proxyRequests = on; else cmd.srv.proxyRequests = on; }) }),
    // On: SETTINGS_ENABLE_CONNECT_PROTOCOL is announced and an extended CONNECT for
    // "websocket" becomes an Upgrade request (stream.ts, serveStream).
    directive<S, D, 'TAKE1'>({ name: 'H2WebSockets', args: 'TAKE1', where: SRV, help: 'off to disable WebSockets over HTTP/2', handler: (cmd, v) => {
      const on = onOff(v);
      if (on === undefined) return 'value must be On or Off';
      cmd.srv.webSockets = on;
      return undefined;
    } }),
    directive<S, D, 'TAKE1'>({ name: 'H2MaxHeaderBlockLen', args: 'TAKE1', where: SRV, help: 'maximum number of bytes in a response header block', handler: minInt(0, 'value must be 0 or larger', (cmd, n) => { cmd.srv.maxHeaderBlockLen = n; }) }),
    // DIFFERENCE: Node counts invalid frames, not flow-control errors apart.
    directive<S, D, 'TAKE1'>({ name: 'H2MaxStreamErrors', args: 'TAKE1', where: SRV, help: 'maximum number of flow control errors tolerated', handler: minInt(0, 'value must be 0 or larger', (cmd, n) => { cmd.srv.maxStreamErrors = n; }) }),
  ],
  hooks: {
    fixups: { fn: fixups, order: HOOK_MIDDLE },
  },
  configHooks: {
    checkConfig(ctx) {
      pushServer = ctx.mainServer;
      return undefined;
    },
  },
  providers: [
    { group: 'protocol_switch', name: 'h2', version: '0', provider: switcher },
    { group: 'connection_layer', name: 'h2', version: '0', provider: layer },
  ],
});

export default self;
