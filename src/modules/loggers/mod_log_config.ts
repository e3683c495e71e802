// mod_log_config: access logs. LogFormat / CustomLog / TransferLog / GlobalLog / BufferedLogs
// with httpd 2.4's semantics (modules/loggers/mod_log_config.c):
//  - a format string is compiled once, at configuration time, into constant strings and item
//    closures (each item's argument is also parsed then: %{...}t, %{...}T, %{...}p, %{...}P);
//  - items are mod_log_config's own, then those of the loaded modules' `log_items` providers
//    (log-items-api.ts; httpd's optional function ap_register_log_handler): mod_logio adds
//    %I %O %S %^FB, mod_ssl %x and %c;
//  - per server: the vhost's own CustomLog/TransferLog lines, or the main server's when the
//    vhost has none, plus the main server's GlobalLog lines always;
//  - nicknames are resolved when the logs are opened (after the whole configuration was read),
//    case-insensitively; the main server's definition of a nickname wins over a vhost's.

import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  defineModule, directive, MODULE_API_VERSION, RSRC_CONF, OK, HOOK_MIDDLE, type MaybePromise,
} from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import { EXPR_FLAG_DONT_VARY, evalBool, isFailure, parseExprCmd, type BoolExpr, type ExprFailure } from '../../expr/index.js';
import type { Request } from '../../server/request/request.js';
import { logItem, requestBeginMicros, type LogItemFactory, type LogItemFn, type LogItemHandler, type LogItemSet } from './log-items-api.js';
import { getRemoteHost, REMOTE_NAME } from '../../server/remote-host.js';
import type { HeaderTable } from '../../server/request/headers.js';
import type { ServerRec } from '../../server/server-rec.js';
import { openLogTarget, FileSink, type LogSink } from '../../server/log/log-writer.js';
import { clfTime, nowMicros, timeZoneGeneration } from '../../server/log/time.js';
import { errnoOf } from '../../server/log/error-log.js';
import { APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { escapeLogItem, strftime } from '../../server/log/error-log-format.js';

/** httpd's DEFAULT_LOG_FORMAT (the CLF), used when no LogFormat sets a default. */
export const DEFAULT_LOG_FORMAT = '%h %l %u %t "%r" %>s %b';

// ---- the item registry (ap_register_log_handler) -------------------------------------------

type LogHandler = LogItemHandler;

/** mod_log_config's own items; other modules' come from their `log_items` providers. */
const logHandlers = new Map<string, LogHandler>();

/** Adds one of mod_log_config's own items (httpd's log_pfn_register in its pre_config). */
export function registerLogItem(tag: string, fn: LogItemFn, wantOrigDefault = false): void {
  logHandlers.set(tag, logItem(fn, wantOrigDefault));
}

/** As registerLogItem, for an item that prepares its argument once at compile time. */
export function registerLogItemFactory(tag: string, make: LogItemFactory, wantOrigDefault = false): void {
  logHandlers.set(tag, { make, wantOrigDefault });
}

// ---- helpers -------------------------------------------------------------------------------

const esc = (s: string | undefined | null): string | undefined => (s === undefined || s === null ? undefined : escapeLogItem(s));

/** apr_table_get on a Map-backed table: httpd's tables compare names case-insensitively. */
function tableGet(m: ReadonlyMap<string, string>, name: string): string | undefined {
  const v = m.get(name);
  if (v !== undefined) return v;
  const lower = name.toLowerCase();
  for (const [k, val] of m) if (k.toLowerCase() === lower) return val;
  return undefined;
}

/** End time of the transaction being logged: taken once, when first needed, and shared by
 *  every log and item of the request (httpd's get_request_end_time). */
let txnEndMicros = 0;
function requestEndMicros(): number {
  if (txnEndMicros === 0) txnEndMicros = nowMicros();
  return txnEndMicros;
}

/** ap_field_noparam: the value up to ';' without trailing white space. */
function fieldNoParam(v: string): string {
  const semi = v.indexOf(';');
  return semi < 0 ? v : v.slice(0, semi).replace(/\s+$/, '');
}

/** ap_get_server_name: the request's host name per UseCanonicalName. */
function serverName(r: Request): string | undefined {
  // A request refused before its configuration was merged has no core per-dir config.
  const ucn = r.rt.coreDir(r)?.useCanonicalName;
  if (ucn === 'on' || ucn === 'dns') return r.server.serverHostname;
  return r.hostname ? r.hostname : r.server.serverHostname;
}

/** ap_default_port: 443 for an https server (ServerName https://...), else 80. */
function defaultPort(r: Request): number {
  return r.server.scheme !== undefined && r.server.scheme.toLowerCase() === 'https' ? 443 : 80;
}

const SCHEME_PORTS: Record<string, number> = {
  http: 80, https: 443, ftp: 21, ssh: 22, telnet: 23, gopher: 70, wais: 210, nntp: 119, snews: 563,
  prospero: 191, pop: 110, imap: 143, ldap: 389, nfs: 2049, acap: 674, rtsp: 554, sip: 5060, tip: 3372,
};

/** %r: the request line; an absolute URI with a password shows it as XXXXXXXX, rebuilt as
 *  apr_uri_unparse does. */
function requestLine(r: Request): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s.exec(r.unparsedUri);
  if (m) {
    const auth = m[2]!;
    const at = auth.lastIndexOf('@');
    const userinfo = at < 0 ? '' : auth.slice(0, at);
    const colon = userinfo.indexOf(':');
    if (at >= 0 && colon >= 0) {
      const scheme = m[1]!;
      const hostinfo = auth.slice(at + 1);
      let host = hostinfo;
      let portStr: string | undefined;
      const close = hostinfo.startsWith('[') ? hostinfo.indexOf(']') : -1;
      const pc = hostinfo.lastIndexOf(':');
      if (close >= 0) {
        host = hostinfo.slice(1, close);
        if (hostinfo[close + 1] === ':') portStr = hostinfo.slice(close + 2);
      } else if (pc >= 0) {
        host = hostinfo.slice(0, pc);
        portStr = hostinfo.slice(pc + 1);
      }
      const port = portStr ? parseInt(portStr, 10) || 0 : 0;
      const isDefault = portStr === undefined || port === 0 || port === SCHEME_PORTS[scheme.toLowerCase()];
      const h = host.includes(':') ? `[${host}]` : host;
      const uri = `${scheme}://${userinfo.slice(0, colon)}:XXXXXXXX@${h}${isDefault ? '' : ':' + portStr}${m[3]!}`;
      return escapeLogItem(r.assbackwards ? `${r.method} ${uri}` : `${r.method} ${uri} ${r.protocol}`);
    }
  }
  return escapeLogItem(r.theRequest);
}

/** The response header as httpd has it at logging time: err_headers_out overlaid first,
 *  then headers_out (the HTTP header filter merges them so). */
function headerOut(r: Request, name: string): string | undefined {
  if (r.errHeadersOut.size === 0) return r.headersOut.get(name);
  return r.errHeadersOut.get(name) ?? r.headersOut.get(name);
}

/** %{Set-Cookie}o: every value, comma-joined (find_multiple_headers). */
function allHeadersOut(r: Request, name: string): string | undefined {
  const vals = r.errHeadersOut.getAll(name).concat(r.headersOut.getAll(name));
  return vals.length ? vals.join(', ') : undefined;
}

/** %{name}C: a cookie's value, parsed as httpd's log_cookie does. */
function cookieValue(r: Request, want: string): string | undefined {
  const header = r.headersIn.get('Cookie');
  if (header === undefined) return undefined;
  const lower = want.toLowerCase();
  for (const token of header.split(';')) {
    if (token === '') continue;
    let t = token;
    let k = 0;
    while (t[k] === '=') k++;
    t = t.slice(k);
    const eq = t.indexOf('=');
    const rawName = eq < 0 ? t : t.slice(0, eq);
    const rawValue = eq < 0 ? '' : t.slice(eq + 1);
    if (rawName === '' || rawValue === '') continue;
    const name = rawName.replace(/^[ \t]+/, '').replace(/[ \t\n\r\v\f]+$/, '');
    if (name.toLowerCase() !== lower) continue;
    return escapeLogItem(rawValue.replace(/^[ \t]+/, '').replace(/[ \t\n\r\v\f]+$/, ''));
  }
  return undefined;
}

/** httpd's c->keepalives at logging time: the HTTP layer counts a response that keeps the
 *  connection alive when it decides so (ap_set_keepalive), so for a kept-alive connection it
 *  already includes the current request. */
function apacheKeepalives(r: Request): number {
  return r.connection.keepalives;
}

function optionalTable(obj: object, key: string): HeaderTable | undefined {
  if (!(key in obj)) return undefined;
  const v: unknown = (obj as Record<string, unknown>)[key];
  return v !== null && typeof v === 'object' && 'get' in v ? (v as HeaderTable) : undefined;
}

function optionalString(obj: object, key: string): string | undefined {
  if (!(key in obj)) return undefined;
  const v: unknown = (obj as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : undefined;
}

// ---- time items ------------------------------------------------------------------------------

let clfCacheSecond = Number.NaN;
let clfCacheZone = -1;
let clfCacheText = '';

/** "[22/Nov/2026:01:45:49 +0000]" for a time in microseconds, cached per second. */
function clfBracketed(micros: number): string {
  const sec = Math.floor(micros / 1000000);
  if (sec !== clfCacheSecond || timeZoneGeneration !== clfCacheZone) {
    clfCacheSecond = sec;
    clfCacheZone = timeZoneGeneration;
    clfCacheText = '[' + clfTime(sec * 1000) + ']';
  }
  return clfCacheText;
}

/** %t and %{format}t, with httpd's begin:/end: prefixes and sec/msec/usec/msec_frac/usec_frac. */
function timeItem(a: string): (r: Request) => string {
  type Kind = 'custom' | 'clf' | 'sec' | 'msec' | 'usec' | 'msec_frac' | 'usec_frac';
  let kind: Kind = 'custom';
  let useEnd = false;
  let fmt = a;
  let custom = a;
  if (fmt !== '') {
    if (fmt.startsWith('begin')) {
      fmt = fmt.slice(5);
      if (fmt === '') kind = 'clf';
      else if (fmt[0] === ':') { fmt = fmt.slice(1); custom = fmt; }
    } else if (fmt.startsWith('end')) {
      fmt = fmt.slice(3);
      if (fmt === '') { useEnd = true; kind = 'clf'; }
      else if (fmt[0] === ':') { fmt = fmt.slice(1); custom = fmt; useEnd = true; }
    }
    if (fmt.startsWith('msec')) {
      const rest = fmt.slice(4);
      if (rest === '') kind = 'msec';
      else if (rest === '_frac') kind = 'msec_frac';
    } else if (fmt.startsWith('usec')) {
      const rest = fmt.slice(4);
      if (rest === '') kind = 'usec';
      else if (rest === '_frac') kind = 'usec_frac';
    } else if (fmt === 'sec') {
      kind = 'sec';
    } else if (fmt === '') {
      kind = 'clf';
    }
  } else {
    kind = 'clf';
  }
  const when: (r: Request) => number = useEnd ? () => requestEndMicros() : (r) => requestBeginMicros(r);
  switch (kind) {
    case 'clf': return (r) => clfBracketed(when(r));
    case 'sec': return (r) => String(Math.floor(when(r) / 1000000));
    case 'msec': return (r) => String(Math.floor(when(r) / 1000));
    case 'usec': return (r) => String(when(r));
    case 'msec_frac': return (r) => String(Math.floor(when(r) / 1000) % 1000).padStart(3, '0');
    case 'usec_frac': return (r) => String(when(r) % 1000000).padStart(6, '0');
    case 'custom': return (r) => strftime(custom, new Date(Math.floor(when(r) / 1000)));
  }
}

// ---- the built-in items (log_pre_config) -------------------------------------------------------

const pid = process.pid;

function registerBuiltinItems(): void {
  // %h (the client, after mod_remoteip: its address) and %{c}h (the TCP peer). A name is
  // shown once looked up (HostnameLookups, or Require host asked for it).
  registerLogItem('h', (r, arg) => {
    const c = r.connection;
    if (arg !== 'c' && r.useragentIp !== c.remoteIp) return escapeLogItem(r.useragentIp);
    return escapeLogItem(c.remoteHost ? c.remoteHost : c.remoteIp);
  });
  // %a is the request's client (mod_remoteip may set it), %{c}a the connection's peer.
  registerLogItem('a', (r, arg) => (arg === 'c' ? r.connection.remoteIp : r.useragentIp));
  registerLogItem('A', (r) => r.connection.localIp);
  // mod_ident is not part of plume: the remote logname is never known.
  registerLogItem('l', () => undefined);
  registerLogItem('u', (r) => (r.user === undefined ? '-' : r.user === '' ? '""' : escapeLogItem(r.user)));
  registerLogItemFactory('t', timeItem);
  registerLogItem('f', (r) => (r.filename ? escapeLogItem(r.filename) : undefined));
  registerLogItem('b', (r) => (r.bytesSent > 0 ? String(r.bytesSent) : '-'));
  registerLogItem('B', (r) => (r.bytesSent > 0 ? String(r.bytesSent) : '0'));
  // httpd merges a repeated request header into one value ("one, two") when it reads them.
  registerLogItem('i', (r, a) => {
    const all = r.headersIn.getAll(a);
    return esc(all.length > 1 ? all.join(', ') : all[0]);
  });
  registerLogItem('o', (r, a) => {
    const la = a.toLowerCase();
    if (la === 'content-type' && r.contentType !== undefined) return escapeLogItem(fieldNoParam(r.contentType));
    if (la === 'set-cookie') return esc(allHeadersOut(r, a));
    return esc(headerOut(r, a));
  });
  registerLogItem('n', (r, a) => esc(tableGet(r.notes, a)));
  registerLogItemFactory('L', (a) => (a === 'c'
    ? (r) => optionalString(r.connection, 'logId') ?? '-'
    : (r) => optionalString(r, 'logId') ?? '-'), true);
  registerLogItem('e', (r, a) => esc(tableGet(r.subprocessEnv, a)));
  registerLogItem('V', (r) => esc(serverName(r)));
  registerLogItem('v', (r) => esc(r.server.serverHostname));
  registerLogItemFactory('p', (a) => {
    const la = a.toLowerCase();
    if (a === '' || la === 'canonical') return (r) => String(r.server.port ? r.server.port : defaultPort(r));
    if (la === 'remote') return (r) => String(r.connection.remotePort);
    if (la === 'local') return (r) => String(r.connection.localPort);
    return () => a;
  });
  registerLogItemFactory('P', (a) => {
    const la = a.toLowerCase();
    if (a === '' || la === 'pid') return () => String(pid);
    // Requests are served on the process's one JavaScript thread: its id is the pid.
    if (la === 'tid' || la === 'hextid') return a[0] === 'h' ? () => pid.toString(16) : () => String(pid);
    return () => a;
  });
  registerLogItem('H', (r) => escapeLogItem(r.protocol));
  registerLogItem('m', (r) => escapeLogItem(r.method));
  registerLogItem('q', (r) => (r.args !== undefined ? '?' + escapeLogItem(r.args) : ''));
  registerLogItem('X', (r) => {
    const c = r.connection;
    if (c.aborted) return 'X';
    const max = r.server.maxKeepAliveRequests;
    return c.keepAlive && (max === 0 || max - apacheKeepalives(r) > 0) ? '+' : '-';
  });
  registerLogItem('C', (r, a) => cookieValue(r, a));
  registerLogItem('k', (r) => {
    const ka = apacheKeepalives(r);
    return String(ka ? ka - 1 : 0);
  });
  registerLogItem('r', (r) => requestLine(r), true);
  registerLogItem('D', (r) => String(requestEndMicros() - requestBeginMicros(r)), true);
  registerLogItemFactory('T', (a) => {
    const la = a.toLowerCase();
    const dur = (r: Request): number => requestEndMicros() - requestBeginMicros(r);
    if (a === '' || la === 's') return (r) => String(Math.trunc(dur(r) / 1000000));
    if (la === 'ms') return (r) => String(Math.trunc(dur(r) / 1000));
    if (la === 'us') return (r) => String(dur(r));
    return () => a;
  }, true);
  registerLogItem('U', (r) => escapeLogItem(r.uri), true);
  registerLogItem('s', (r) => (r.status <= 0 ? '-' : String(r.status)), true);
  registerLogItem('R', (r) => esc(r.handler), true);
  registerLogItem('^ti', (r, a) => esc(optionalTable(r, 'trailersIn')?.get(a)));
  registerLogItem('^to', (r, a) => esc(optionalTable(r, 'trailersOut')?.get(a)));
}
registerBuiltinItems();

// ---- compiling formats ------------------------------------------------------------------------

type LogPart = string | ((r: Request, orig: Request) => string);

/** A compiled format: constant text and item closures, ending with the newline. */
export interface LogFormat {
  readonly source: string;
  readonly parts: readonly LogPart[];
}

/** parse_log_misc_string: literal text up to the next '%', with \\ \r \n \t escapes. */
function parseMisc(s: string, pos: number): [string, number] {
  let d = '';
  let i = pos;
  while (i < s.length && s[i] !== '%') {
    const c = s[i]!;
    if (c !== '\\') { d += c; i++; continue; }
    i++;
    const n = s[i];
    if (n === '\\') { d += '\\'; i++; }
    else if (n === 'r') { d += '\r'; i++; }
    else if (n === 'n') { d += '\n'; i++; }
    else if (n === 't') { d += '\t'; i++; }
    else d += '\\';   // copied verbatim; the next character is read normally
  }
  return [d, i];
}

/** parse_log_item for a '%' item at `pos`: the part and where parsing continues, or an error. */
function parseItem(s: string, pos: number, extra: LogItemSet | undefined): [LogPart, number] | string {
  let i = pos + 1;
  if (s[i] === '%') return ['%', i + 1];
  let negate = false;
  let wantOrig = -1;
  let arg = '';
  let conds: number[] | null = null;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '!') { negate = !negate; i++; continue; }
    if (c === '<') { wantOrig = 1; i++; continue; }
    if (c === '>') { wantOrig = 0; i++; continue; }
    if (c === ',') { i++; continue; }
    if (c === '{') {
      i++;
      const end = s.indexOf('}', i);
      if (end < 0) { arg = s.slice(i); i = s.length; }
      else {
        arg = s.slice(i, end);
        i = end;
        while (s[i] === '}') i++;
      }
      continue;
    }
    if (c >= '0' && c <= '9') {
      let n = 0;
      while (i < s.length && s[i]! >= '0' && s[i]! <= '9') n = n * 10 + (s.charCodeAt(i++) - 48);
      (conds ??= []).push(n);
      continue;
    }
    let h: LogHandler | undefined;
    if (c === '^' && i + 2 < s.length) {
      h = lookupItem(s.slice(i, i + 3), extra);
      if (h) i += 3;
    }
    if (!h) {
      h = lookupItem(c, extra);
      i++;
    }
    if (!h) return `Unrecognized LogFormat directive %${c}`;
    const fn = h.make(arg);
    const orig = wantOrig === -1 ? h.wantOrigDefault : wantOrig === 1;
    const call: (r: Request, o: Request) => string = orig
      ? (_r, o) => fn(o) ?? '-'
      : (r) => fn(r) ?? '-';
    if (conds === null) return [call, i];
    const list = conds;
    const sense = negate;
    return [(r, o) => (list.includes(r.status) === sense ? '-' : call(r, o)), i];
  }
  return 'Ran off end of LogFormat parsing args to some directive';
}

function lookupItem(tag: string, extra: LogItemSet | undefined): LogHandler | undefined {
  return logHandlers.get(tag) ?? extra?.get(tag);
}

/** The items the loaded modules add (their `log_items` providers), gathered once per
 *  configuration. */
const itemsByCtx = new WeakMap<ConfigContext, LogItemSet>();
export function loadedLogItems(ctx: ConfigContext): LogItemSet {
  let items = itemsByCtx.get(ctx);
  if (items === undefined) {
    const all = new Map<string, LogHandler>();
    for (const name of ctx.providerNames('log_items')) {
      for (const [tag, h] of ctx.provider('log_items', name) ?? []) all.set(tag, h);
    }
    items = all;
    itemsByCtx.set(ctx, items);
  }
  return items;
}

/** Compiles a LogFormat string (parse_log_string): the format, or httpd's error text.
 *  `extra`: the loaded modules' items (loadedLogItems). */
export function compileLogFormat(fmt: string, extra?: LogItemSet): LogFormat | string {
  const parts: LogPart[] = [];
  let i = 0;
  while (i < fmt.length) {
    let part: LogPart;
    if (fmt[i] === '%') {
      const r = parseItem(fmt, i, extra);
      if (typeof r === 'string') return r;
      [part, i] = r;
    } else {
      [part, i] = parseMisc(fmt, i);
    }
    const last = parts.length - 1;
    if (typeof part === 'string' && last >= 0 && typeof parts[last] === 'string') parts[last] = (parts[last] as string) + part;
    else parts.push(part);
  }
  const last = parts.length - 1;
  if (last >= 0 && typeof parts[last] === 'string') parts[last] = (parts[last] as string) + '\n';
  else parts.push('\n');
  return { source: fmt, parts };
}

function render(fmt: LogFormat, r: Request): string {
  let orig = r;
  while (orig.prev) orig = orig.prev;
  let fin = r;
  while (fin.next) fin = fin.next;
  const parts = fmt.parts;
  let s = '';
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    s += typeof p === 'string' ? p : p(fin, orig);
  }
  return s;
}

/** Renders a compiled format for a request (the whole line, newline included). Items look
 *  at the final request of an internal-redirect chain, or the original with '<'. */
export function formatLogLine(fmt: LogFormat, r: Request): string {
  txnEndMicros = 0;
  return render(fmt, r);
}

let clfFormat: LogFormat | undefined;
function defaultCompiled(): LogFormat {
  return (clfFormat ??= compileLogFormat(DEFAULT_LOG_FORMAT) as LogFormat);
}

// ---- expr= conditions ---------------------------------------------------------------------------

/** CustomLog expr=: an ap_expr condition (parsed with EXPR_FLAG_DONT_VARY: a log line's
 *  condition adds nothing to Vary). */
// ---- configuration ------------------------------------------------------------------------------

/** One CustomLog/TransferLog/GlobalLog line (httpd's config_log_state). The format and sink
 *  are filled when the logs are opened; a vhost without logs shares the main server's. */
export interface LogTarget {
  readonly fname: string;
  /** The format string or nickname as written; undefined for TransferLog. */
  readonly formatString: string | undefined;
  /** The compiled format (nickname resolved at open time); undefined = the server default. */
  format: LogFormat | undefined;
  /** env=VAR or env=!VAR, as written after "env=". */
  readonly conditionVar: string | undefined;
  readonly conditionExpr: BoolExpr | undefined;
  /** GlobalLog: vhosts log here even when they have their own logs. */
  readonly inherit: boolean;
  readonly file: string;
  readonly line: number;
  sink: LogSink | undefined;
  checked: boolean;
}

/** Per-server configuration (httpd's multi_log_state). */
export interface LogConfigServer {
  /** LogFormat without nickname: the string (maybe a nickname) and its compiled form. */
  defaultFormatString: string | undefined;
  defaultFormat: LogFormat | undefined;
  /** This server's own logs (the directive handlers append). */
  configLogs: LogTarget[];
  /** A vhost's view of the main server's logs. */
  serverConfigLogs: readonly LogTarget[] | undefined;
  /** Nicknames (lowercase) → format strings. */
  formats: Map<string, string>;
  /** The default format with its nickname resolved, set when the logs are opened. */
  resolvedDefault: LogFormat | undefined;
}

function createServerConfig(): LogConfigServer {
  return {
    defaultFormatString: undefined,
    defaultFormat: undefined,
    configLogs: [],
    serverConfigLogs: undefined,
    formats: new Map([['clf', DEFAULT_LOG_FORMAT]]),
    resolvedDefault: undefined,
  };
}

function mergeServerConfig(base: Readonly<LogConfigServer>, add: Readonly<LogConfigServer>): LogConfigServer {
  // apr_table_overlay(base, add) then apr_table_get: the main server's nickname wins.
  const formats = new Map(add.formats);
  for (const [k, v] of base.formats) formats.set(k, v);
  const inheritDefault = add.defaultFormat === undefined;
  return {
    defaultFormatString: inheritDefault ? base.defaultFormatString : add.defaultFormatString,
    defaultFormat: inheritDefault ? base.defaultFormat : add.defaultFormat,
    configLogs: add.configLogs,
    serverConfigLogs: base.configLogs,
    formats,
    resolvedDefault: undefined,
  } satisfies { [K in keyof Required<LogConfigServer>]: LogConfigServer[K] };
}

type Cmd = CmdParms<LogConfigServer, undefined>;

let bufferedLogs = false;

function setLogFormat(cmd: Cmd, fmt: string, name: string | undefined): string | undefined {
  const mls = cmd.srv;
  const f = compileLogFormat(fmt, loadedLogItems(cmd.ctx));
  if (name !== undefined) {
    if (typeof f === 'string') return f;
    mls.formats.set(name.toLowerCase(), fmt);
    return undefined;
  }
  mls.defaultFormatString = fmt;
  if (typeof f === 'string') return f;
  mls.defaultFormat = f;
  return undefined;
}

function addCustomLog(cmd: Cmd, fn: string, fmt: string | undefined, envclause: string | undefined, inherit = false): string | undefined {
  let conditionVar: string | undefined;
  let conditionExpr: BoolExpr | undefined;
  if (envclause !== undefined) {
    const lower = envclause.toLowerCase();
    if (lower.startsWith('env=')) {
      const v = envclause.slice(4);
      if (v === '' || v === '!') return 'missing environment variable name';
      conditionVar = v;
    } else if (lower.startsWith('expr=')) {
      const src = envclause.slice(5);
      if (src === '') return 'missing condition';
      const c = parseExprCmd(cmd, src, EXPR_FLAG_DONT_VARY, 'log_config');
      if (!c.ok) return c.error;
      conditionExpr = c.expr;
    } else {
      return 'error in condition clause';
    }
  }
  let format: LogFormat | undefined;
  if (fmt !== undefined) {
    const f = compileLogFormat(fmt, loadedLogItems(cmd.ctx));
    if (typeof f === 'string') return f;
    format = f;
  }
  cmd.srv.configLogs.push({
    fname: fn, formatString: fmt, format, conditionVar, conditionExpr, inherit,
    file: cmd.file, line: cmd.line, sink: undefined, checked: false,
  });
  return undefined;
}

function customLog(cmd: Cmd, fn: string, fmt: string, envclause: string | undefined): string | undefined {
  return addCustomLog(cmd, fn, fmt, envclause);
}

function globalLog(cmd: Cmd, fn: string, fmt: string, envclause: string | undefined): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  return addCustomLog(cmd, fn, fmt, envclause, true);
}

function transferLog(cmd: Cmd, fn: string): string | undefined {
  return addCustomLog(cmd, fn, undefined, undefined);
}

function setBufferedLogs(_cmd: Cmd, on: boolean): undefined {
  bufferedLogs = on;
  return undefined;
}

// ---- opening the logs ------------------------------------------------------------------------------

/** The servers in httpd's s->next order: the main server, then the vhosts last-defined first. */
function serversInApacheOrder(ctx: ConfigContext): ServerRec[] {
  return [ctx.mainServer, ...ctx.vhosts.slice().reverse()];
}

/** ap_make_dirstr_parent: the directory part with its trailing slash. */
function parentDir(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i + 1);
}

/** check_log_dir (httpd's check_config hook): the directory of each log file must exist. */
function checkLogDirs(ctx: ConfigContext): string[] {
  const errors: string[] = [];
  for (const s of serversInApacheOrder(ctx)) {
    const mls = self.server(s);
    if (!mls) continue;
    for (const cls of mls.configLogs) {
      if (cls.checked || cls.fname.startsWith('|')) continue;
      cls.checked = true;
      const dir = parentDir(ctx.serverRootRelative(cls.fname));
      let err: { code: number; text: string } | undefined;
      try {
        if (!fs.statSync(dir).isDirectory()) err = { code: 20, text: 'Not a directory' };
      } catch (e) {
        err = errnoOf(e) ?? { code: 2, text: 'No such file or directory' };
      }
      if (err) {
        errors.push(`(${err.code})${err.text}: AH02297: Cannot access directory '${dir}' for log file '${cls.fname}' defined at ${cls.file}:${cls.line}`);
      }
    }
  }
  return errors;
}

/** Sinks of the configuration generation most recently opened (for reopenAccessLogs). */
let activeSinks: Map<string, LogSink> = new Map();

class OpenError extends Error {
  constructor(readonly text: string) { super(text); }
}

function openTarget(ctx: ConfigContext, sinks: Map<string, LogSink>, fname: string): LogSink {
  if (fname.startsWith('|')) {
    const existing = sinks.get(fname);
    if (existing) return existing;
    let prog = fname.slice(1);
    let viaShell = false;
    if (prog.startsWith('|')) prog = prog.slice(1);
    else if (prog.startsWith('$')) { prog = prog.slice(1); viaShell = true; }
    prog = prog.trim();
    if (!viaShell) {
      const argv0 = prog.split(/[ \t]+/)[0] ?? '';
      if (argv0.includes('/')) {
        try {
          fs.accessSync(path.resolve(argv0), fs.constants.X_OK);
        } catch (e) {
          const en = errnoOf(e) ?? { code: 2, text: 'No such file or directory' };
          throw new OpenError(`(${en.code})${en.text}: AH00104: unable to start piped log program '${prog}'\nAH00015: Unable to open logs`);
        }
      }
    }
    const sink = openLogTarget(fname, (p) => ctx.serverRootRelative(p), bufferedLogs);
    sinks.set(fname, sink);
    return sink;
  }
  const abs = fname === '/dev/stderr' ? fname : ctx.serverRootRelative(fname);
  const existing = sinks.get(abs);
  if (existing) return existing;
  try {
    const sink = openLogTarget(abs, (p) => p, bufferedLogs);
    sinks.set(abs, sink);
    return sink;
  } catch (e) {
    const en = errnoOf(e) ?? { code: 0, text: String((e as Error).message ?? e) };
    ctx.startupLog.write({ module: 'log_config', level: APLOG_ERR, message: `AH00649: could not open transfer log file ${abs}.`, errno: en });
    throw new OpenError('AH00015: Unable to open logs');
  }
}

/** open_multi_logs for one server: resolve nicknames, open the sinks. */
function openServerLogs(ctx: ConfigContext, sinks: Map<string, LogSink>, mls: LogConfigServer): void {
  let def: LogFormat | undefined = mls.defaultFormat;
  if (mls.defaultFormatString !== undefined) {
    const named = mls.formats.get(mls.defaultFormatString.toLowerCase());
    if (named !== undefined) def = compileOrKeep(ctx, named, def);
  }
  mls.resolvedDefault = def ?? defaultCompiled();
  const list = mls.configLogs.length ? mls.configLogs : mls.serverConfigLogs ?? [];
  for (const cls of list) {
    if (cls.formatString !== undefined) {
      const named = mls.formats.get(cls.formatString.toLowerCase());
      if (named !== undefined) cls.format = compileOrKeep(ctx, named, cls.format);
    }
    if (!cls.sink) cls.sink = openTarget(ctx, sinks, cls.fname);
  }
}

/** Nicknames were checked when defined; compile the named format (once per string). */
const compiledCache = new WeakMap<ConfigContext, Map<string, LogFormat>>();
function compileOrKeep(ctx: ConfigContext, fmt: string, keep: LogFormat | undefined): LogFormat | undefined {
  let cache = compiledCache.get(ctx);
  if (cache === undefined) compiledCache.set(ctx, (cache = new Map()));
  let c = cache.get(fmt);
  if (!c) {
    const f = compileLogFormat(fmt, loadedLogItems(ctx));
    if (typeof f === 'string') return keep;
    c = f;
    cache.set(fmt, c);
  }
  return c;
}

function preConfig(): void {
  // log_pre_config: BufferedLogs goes back to its default for each configuration read.
  bufferedLogs = false;
  registerBuiltinItems();
}

/** log_check_config: every log file's directory must exist (also under -t). */
function checkConfig(ctx: ConfigContext): string | undefined {
  const dirErrors = checkLogDirs(ctx);
  if (dirErrors.length) return [...dirErrors, 'AH00014: Configuration check failed'].join('\n');
  return undefined;
}

/** log_open_logs: open the access logs (when serving, never under -t). */
function postConfig(ctx: ConfigContext): string | undefined {
  const sinks = ctx.getScratch('log_config.sinks', () => new Map<string, LogSink>());
  try {
    for (const s of serversInApacheOrder(ctx)) {
      const mls = self.server(s);
      if (mls) openServerLogs(ctx, sinks, mls);
    }
  } catch (e) {
    for (const sink of sinks.values()) sink.close();
    sinks.clear();
    if (e instanceof OpenError) return e.text;
    throw e;
  }
  activeSinks = sinks;
  return undefined;
}

function cleanup(ctx: ConfigContext): void {
  const sinks = ctx.getScratch('log_config.sinks', () => new Map<string, LogSink>());
  for (const sink of sinks.values()) sink.close();
  if (activeSinks === sinks) activeSinks = new Map();
  sinks.clear();
}

/** Reopens every access log file of the running configuration (log rotation: call on a
 *  graceful restart or SIGUSR1-style request). Piped logs are left running. */
export function reopenAccessLogs(): void {
  for (const sink of activeSinks.values()) {
    if (sink instanceof FileSink) {
      try { sink.reopen(); } catch { /* keep writing to the old file */ }
    }
  }
}

/** Flushes every buffered access log now (BufferedLogs On). */
export function flushAccessLogs(): void {
  for (const sink of activeSinks.values()) sink.flush();
}

// ---- logging -------------------------------------------------------------------------------------

/** config_log_transaction: one log line, if its condition holds. */
function logTo(r: Request, cls: LogTarget, def: LogFormat): void {
  const sink = cls.sink;
  if (!sink) return;
  const v = cls.conditionVar;
  if (v !== undefined) {
    if (v[0] !== '!') {
      if (tableGet(r.subprocessEnv, v) === undefined) return;
    } else if (tableGet(r.subprocessEnv, v.slice(1)) !== undefined) {
      return;
    }
  } else if (cls.conditionExpr) {
    const res = evalBool(cls.conditionExpr, r);
    if (res instanceof Promise) {
      void res.then((v) => { if (logConditionHolds(r, v)) sink.write(render(cls.format ?? def, r)); });
      return;
    }
    if (!logConditionHolds(r, res)) return;
  }
  sink.write(render(cls.format ?? def, r));
}

function logConditionHolds(r: Request, res: boolean | ExprFailure): boolean {
  if (isFailure(res)) {
    r.log('log_config', APLOG_WARNING, `AH00644: Error evaluating log condition: ${res.error}`);
    return false;
  }
  return res;
}

/** multi_log_transaction: the logTransaction hook. httpd runs it for the original request of
 *  an internal-redirect chain: its server's logs and its environment (env=) decide; the items
 *  then look at the final request unless they ask for the original. */
function logTransaction(hookReq: Request): MaybePromise<number> {
  // HostnameLookups On|Double: %h is the client's name, looked up now if nothing (Require
  // host) did yet — httpd's %h asks ap_get_remote_host(REMOTE_NAME) as it logs.
  const c = hookReq.connection;
  if (c.remoteHost === undefined && (hookReq.rt.coreDir(hookReq)?.hostnameLookups ?? 'off') !== 'off') {
    const looked = getRemoteHost(hookReq, REMOTE_NAME);
    if (looked instanceof Promise) return looked.then(() => writeLogs(hookReq));
  }
  return writeLogs(hookReq);
}

function writeLogs(hookReq: Request): number {
  let r = hookReq;
  while (r.prev) r = r.prev;
  const mls = self.server(r.server);
  if (!mls) return OK;
  txnEndMicros = 0;
  const def = mls.resolvedDefault ?? mls.defaultFormat ?? defaultCompiled();
  const own = mls.configLogs;
  for (let i = 0; i < own.length; i++) logTo(r, own[i]!, def);
  const inherited = mls.serverConfigLogs;
  if (inherited) {
    for (let i = 0; i < inherited.length; i++) {
      const cls = inherited[i]!;
      if (cls.inherit || own.length === 0) logTo(r, cls, def);
    }
  }
  return OK;
}

const self = defineModule<LogConfigServer, undefined>({
  name: 'log_config_module',
  source: 'mod_log_config.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive<LogConfigServer, undefined, 'TAKE23'>({
      name: 'CustomLog', args: 'TAKE23', where: RSRC_CONF,
      help: 'a file name, a custom log format string or format name, and an optional "env=" or "expr=" clause (see docs)',
      handler: customLog,
    }),
    directive<LogConfigServer, undefined, 'TAKE23'>({
      name: 'GlobalLog', args: 'TAKE23', where: RSRC_CONF,
      help: 'Same as CustomLog, but forces virtualhosts to inherit the log',
      handler: globalLog,
    }),
    directive<LogConfigServer, undefined, 'TAKE1'>({
      name: 'TransferLog', args: 'TAKE1', where: RSRC_CONF,
      help: 'the filename of the access log',
      handler: transferLog,
    }),
    directive<LogConfigServer, undefined, 'TAKE12'>({
      name: 'LogFormat', args: 'TAKE12', where: RSRC_CONF,
      help: 'a log format string (see docs) and an optional format name',
      handler: setLogFormat,
    }),
    directive<LogConfigServer, undefined, 'FLAG'>({
      name: 'BufferedLogs', args: 'FLAG', where: RSRC_CONF,
      help: 'Enable Buffered Logging (experimental)',
      handler: setBufferedLogs,
    }),
  ],
  hooks: {
    logTransaction: { fn: logTransaction, order: HOOK_MIDDLE },
  },
  configHooks: { preConfig, checkConfig, postConfig, cleanup },
});

export default self;
