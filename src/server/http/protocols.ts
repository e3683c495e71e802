// Protocol selection and switching (httpd's ap_select_protocol, ap_switch_protocol,
// ap_get_protocol_upgrades and the core's upgrade handler): the Protocols and
// ProtocolsHonorOrder directives decide which protocol a connection speaks, over TLS's ALPN,
// an HTTP/1.1 `Upgrade:` request or a connection preface. A module offering protocols
// (mod_http2) registers in the provider group "protocol_switch".

import type { Request, ConnRec } from '../request/request.js';
import type { ServerRec } from '../server-rec.js';
import type { ConfigContext } from '../config/context.js';
import type { Transport } from './tcp-stream.js';
import type { Runtime } from '../runtime.js';
import { coreServer } from '../core/config.js';
import { DECLINED, DONE, type HookResult } from '../module.js';
import { APLOG_DEBUG } from '../log/levels.js';

/** httpd's AP_PROTOCOL_HTTP1. */
export const PROTOCOL_HTTP1 = 'http/1.1';

/** What protocol selection knows of a connection before (or without) its ConnRec. */
export interface ProtocolConn {
  /** The connection's TLS, or null on cleartext. */
  readonly tls: { readonly protocol: string; readonly cipher: string } | null;
  /** The protocol it speaks now (ap_get_protocol). */
  readonly protocol: string;
}

/** A connection's transport handed from HTTP/1.1 to another protocol, with the input read
 *  already and not consumed. */
export interface TakenTransport {
  readonly transport: Transport;
  readonly pending: Buffer;
}

/** A connection HTTP/1.1 can hand over (HttpConnection). */
export interface SwitchableConn extends ConnRec {
  readonly protocolConn: ProtocolConn;
  /** The configuration generation serving the connection. */
  readonly runtime: Runtime;
  /** Stops HTTP/1.1 on the connection and gives its transport away; null when it cannot. */
  takeOver(): TakenTransport | null;
  /** The protocol that took the connection, and what it does on a graceful stop. */
  switchedTo(protocol: string, graceful: () => void): void;
}

/** A module offering protocols (httpd's protocol_propose / protocol_switch hooks). */
export interface ProtocolSwitcher {
  /** Adds to `proposals` the protocols among `offers` (null: any) it can switch `c` to. */
  propose(c: ProtocolConn, r: Request | null, s: ServerRec, offers: readonly string[] | null, proposals: string[]): void;
  /** Takes the connection over with `protocol` (r: the request that asked with Upgrade, to be
   *  answered in the new protocol). False when the protocol is not this module's. */
  switchTo(c: SwitchableConn, r: Request | null, s: ServerRec, protocol: string): boolean;
  /** Whether a connection preface of this protocol may open the connection (H2Direct), and
   *  the preface: the bytes that start it. */
  direct(c: ProtocolConn, s: ServerRec): { readonly protocol: string; readonly preface: Buffer } | null;
}

declare module '../module.js' {
  interface ProviderGroups {
    protocol_switch: ProtocolSwitcher;
  }
}

function switchers(ctx: ConfigContext): ProtocolSwitcher[] {
  return ctx.getScratch<ProtocolSwitcher[]>('core:protocolSwitchers', () =>
    ctx.providerNames('protocol_switch').map((n) => ctx.provider('protocol_switch', n)!));
}

/** Index of p in prefs (-1: absent). */
function prefIndex(prefs: readonly string[], p: string): number {
  return prefs.indexOf(p);
}

/** httpd's protocol_cmp: > 0 when a is preferred to b. */
function protocolCmp(prefs: readonly string[], a: string, b: string): number {
  if (prefs.length > 0) {
    const i1 = prefIndex(prefs, a);
    const i2 = prefIndex(prefs, b);
    if (i2 > i1) return i1 >= 0 ? 1 : -1;
    if (i1 > i2) return i2 >= 0 ? -1 : 1;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * ap_select_protocol: of the client's `choices`, the protocol this server speaks and
 * prefers: Protocols lists what is allowed; ProtocolsHonorOrder on (the default) prefers the
 * server's order, off the client's. Undefined: none.
 */
export function selectProtocol(ctx: ConfigContext, c: ProtocolConn, r: Request | null, s: ServerRec, choices: readonly string[]): string | undefined {
  const conf = coreServer(s);
  const configured = conf.protocols;
  if (configured === undefined || configured.length === 0) {
    return choices.includes(PROTOCOL_HTTP1) ? PROTOCOL_HTTP1 : undefined;
  }
  const proposals: string[] = [];
  for (const sw of switchers(ctx)) sw.propose(c, r, s, choices, proposals);
  const existing = c.protocol;
  if (!proposals.includes(existing) && choices.includes(existing)) proposals.push(existing);
  let protocol: string | undefined;
  if (proposals.length > 0) {
    const prefs = conf.protocolsHonorOrder === false && choices.length > 0 ? choices : configured;
    for (const p of proposals) {
      if (!configured.includes(p)) continue;
      if (protocol === undefined || protocolCmp(prefs, protocol, p) < 0) protocol = p;
    }
  }
  if (r !== null && r.wantsLog('core', APLOG_DEBUG)) {
    r.log('core', APLOG_DEBUG, `AH03157: selected protocol=${protocol ?? '(none)'}`);
  }
  return protocol;
}

/** ap_switch_protocol: hands the connection to the module that speaks `protocol`. */
export function switchProtocol(ctx: ConfigContext, c: SwitchableConn, r: Request | null, s: ServerRec, protocol: string): boolean {
  for (const sw of switchers(ctx)) if (sw.switchTo(c, r, s, protocol)) return true;
  return false;
}

/** The protocol a fresh connection's first bytes may open with (H2Direct), or null. */
export function directProtocols(ctx: ConfigContext, c: ProtocolConn, s: ServerRec): { readonly protocol: string; readonly preface: Buffer } | null {
  for (const sw of switchers(ctx)) {
    const d = sw.direct(c, s);
    if (d !== null) return d;
  }
  return null;
}

/** ap_is_allowed_protocol: whether Protocols (default http/1.1 only) allows `protocol`. */
export function isAllowedProtocol(s: ServerRec, protocol: string): boolean {
  const configured = coreServer(s).protocols;
  if (configured === undefined || configured.length === 0) return protocol === PROTOCOL_HTTP1;
  return configured.includes(protocol);
}

/** ap_get_protocol_upgrades: the protocols configured before the current one (all but it
 *  when it is not configured), in configuration order. */
function protocolUpgrades(s: ServerRec, existing: string): string[] {
  const configured = coreServer(s).protocols;
  if (configured === undefined || configured.length === 0) return NONE;
  const out: string[] = [];
  if (configured.length > 1 || !configured.includes(existing)) {
    for (const p of configured) {
      if (p !== existing) out.push(p);
      else break;
    }
  }
  return out;
}

const NONE: string[] = [];

function hasToken(value: string | undefined, token: string): boolean {
  if (value === undefined) return false;
  for (const t of value.split(',')) if (t.trim().toLowerCase() === token) return true;
  return false;
}

/** A token list as ap_parse_token_list_strict reads it: undefined when it is not one. */
function tokenList(value: string): string[] | undefined {
  const out: string[] = [];
  for (const part of value.split(',')) {
    const t = part.trim();
    if (t === '') continue;
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z/]+$/.test(t)) return undefined;
    out.push(t.toLowerCase());
  }
  return out;
}

function isSwitchable(c: ConnRec): c is SwitchableConn {
  return typeof (c as Partial<SwitchableConn>).takeOver === 'function';
}

/**
 * The core's upgrade handler (first of the handlers; for `OPTIONS *` at map_to_storage): a
 * request with `Connection: Upgrade` and an `Upgrade:` naming a protocol this server prefers
 * is answered 101 and the connection switches; otherwise the first request of a connection
 * announces the protocols configured before http/1.1 (`Upgrade: h2c`, `Connection: Upgrade`).
 */
export function upgradeHandler(r: Request): HookResult {
  const c = r.connection;
  if (!isSwitchable(c)) return DECLINED;
  const upgrade = r.headersIn.get('Upgrade');
  if (upgrade !== undefined && upgrade !== '') {
    if (!hasToken(r.headersIn.get('Connection'), 'upgrade')) return DECLINED;
    const offers = tokenList(upgrade);
    if (offers === undefined) {
      r.log('core', APLOG_DEBUG, 'AH02910: parsing Upgrade header: invalid token list');
      return DECLINED;
    }
    if (offers.length === 0) return DECLINED;
    const pc = c.protocolConn;
    const protocol = selectProtocol(r.rt.ctx, pc, r, r.server, offers);
    if (protocol === undefined || protocol === pc.protocol) return DECLINED;
    r.log('core', APLOG_DEBUG, `AH02909: Upgrade selects '${protocol}'`);
    // The interim answer goes out on HTTP/1.1, then the connection is the new protocol's.
    const head = `HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${protocol}\r\nConnection: Upgrade\r\n\r\n`;
    c.bytesOut += head.length;
    c.wire.write(head, 'latin1');
    c.keepAlive = false;
    r.status = 101;
    // Nothing more of this request goes out on HTTP/1.1 (httpd removes its HTTP filters).
    r.headersSent = true;
    r.eosSent = true;
    switchProtocol(r.rt.ctx, c, r, r.server, protocol);
    return DONE;
  }
  if (c.keepalives === 0 && coreServer(r.server).protocols !== undefined) {
    const ups = protocolUpgrades(r.server, c.protocolConn.protocol);
    if (ups.length > 0) {
      r.headersOut.set('Upgrade', ups.join(','));
      r.headersOut.set('Connection', 'Upgrade');
    }
  }
  return DECLINED;
}

/** core_upgrade_storage: `OPTIONS *` never reaches a handler, so the upgrade is looked at here. */
export function upgradeStorage(r: Request): HookResult {
  if (r.method === 'OPTIONS' && r.uri === '*') return upgradeHandler(r);
  return DECLINED;
}
