// The proxy layer's interface (httpd's modules/proxy/mod_proxy.h): workers, balancers, backend
// connections, the per-server and per-directory proxy configuration, and the provider groups
// through which the protocol modules (mod_proxy_http, _fcgi, _scgi, _uwsgi, _wstunnel), the
// balancer (mod_proxy_balancer, the lbmethods, mod_proxy_hcheck) and mod_proxy meet.
//
// mod_proxy registers the "proxy_api" provider (name "mod_proxy"): every other module finds
// mod_proxy's functions there (ctx.provider('proxy_api', 'mod_proxy')), as httpd's modules
// call proxy_util.c through mod_proxy's exports and optional functions; none imports mod_proxy.
// This file holds types and constants only (plus the pure helpers of mod_proxy.h's macros).

import type * as net from 'node:net';
import type { Request } from '../server/request/request.js';
import type { ServerRec } from '../server/server-rec.js';
import type { ConfigContext } from '../server/config/context.js';
import type { Brigade } from '../server/filters.js';
import type { TcpStream } from '../server/http/tcp-stream.js';

// ---- r->proxyreq ------------------------------------------------------------------------------
/** PROXYREQ_*: what kind of proxy request a request is (Request.proxyreq). */
export const PROXYREQ_NONE = 0;
/** A forward proxy request (ProxyRequests On, absolute URL in the request line). */
export const PROXYREQ_PROXY = 1;
/** A reverse proxy request (ProxyPass, RewriteRule [P], SetHandler proxy:...). */
export const PROXYREQ_REVERSE = 2;
/** A response from a backend being processed. */
export const PROXYREQ_RESPONSE = 3;
export type ProxyReq = typeof PROXYREQ_NONE | typeof PROXYREQ_PROXY | typeof PROXYREQ_REVERSE | typeof PROXYREQ_RESPONSE;

// ---- worker status (PROXY_WORKER_* bits and their letters) -------------------------------------
export const PROXY_WORKER_INITIALIZED = 0x0001;
export const PROXY_WORKER_IGNORE_ERRORS = 0x0002;
export const PROXY_WORKER_DRAIN = 0x0004;
export const PROXY_WORKER_GENERIC = 0x0008;
export const PROXY_WORKER_IN_SHUTDOWN = 0x0010;
export const PROXY_WORKER_DISABLED = 0x0020;
export const PROXY_WORKER_STOPPED = 0x0040;
export const PROXY_WORKER_IN_ERROR = 0x0080;
export const PROXY_WORKER_HOT_STANDBY = 0x0100;
export const PROXY_WORKER_FREE = 0x0200;
export const PROXY_WORKER_HC_FAIL = 0x0400;
export const PROXY_WORKER_HOT_SPARE = 0x0800;

/** proxy_wstat_tbl: each status bit with its letter ("status=+H", balancer-manager) and name. */
export const PROXY_WORKER_STATUS_TABLE: readonly { readonly bit: number; readonly flag: string; readonly name: string }[] = [
  { bit: PROXY_WORKER_INITIALIZED, flag: 'O', name: 'Init' },
  { bit: PROXY_WORKER_IGNORE_ERRORS, flag: 'I', name: 'Ign' },
  { bit: PROXY_WORKER_DRAIN, flag: 'N', name: 'Drn' },
  { bit: PROXY_WORKER_GENERIC, flag: 'G', name: 'Gen' },
  { bit: PROXY_WORKER_IN_SHUTDOWN, flag: 'U', name: 'Shut' },
  { bit: PROXY_WORKER_DISABLED, flag: 'D', name: 'Dis' },
  { bit: PROXY_WORKER_STOPPED, flag: 'S', name: 'Stop' },
  { bit: PROXY_WORKER_IN_ERROR, flag: 'E', name: 'Err' },
  { bit: PROXY_WORKER_HOT_STANDBY, flag: 'H', name: 'Stby' },
  { bit: PROXY_WORKER_FREE, flag: 'F', name: 'Free' },
  { bit: PROXY_WORKER_HC_FAIL, flag: 'C', name: 'HcFl' },
  { bit: PROXY_WORKER_HOT_SPARE, flag: 'R', name: 'Spar' },
];

/** PROXY_WORKER_NOT_USABLE_BITMAP: a worker with any of these is not elected. */
export const PROXY_WORKER_NOT_USABLE_BITMAP =
  PROXY_WORKER_IN_SHUTDOWN | PROXY_WORKER_DISABLED | PROXY_WORKER_STOPPED | PROXY_WORKER_IN_ERROR | PROXY_WORKER_HC_FAIL;

/** PROXY_WORKER_IS_USABLE. */
export function workerIsUsable(w: ProxyWorker): boolean {
  return (w.s.status & PROXY_WORKER_NOT_USABLE_BITMAP) === 0 && (w.localStatus & PROXY_WORKER_INITIALIZED) !== 0;
}
/** ap_proxy_parse_wstatus: the names of the worker's status flags, "??? " when none, then
 *  "Ok " when it is usable (the balancer-manager page, mod_proxy's status section). */
export function parseWorkerStatus(w: ProxyWorker): string {
  let out = '';
  for (const e of PROXY_WORKER_STATUS_TABLE) if ((w.s.status & e.bit) !== 0) out += e.name + ' ';
  if (out === '') out = '??? ';
  if (workerIsUsable(w)) out += 'Ok ';
  return out;
}
export function workerIsStandby(w: ProxyWorker): boolean { return (w.s.status & PROXY_WORKER_HOT_STANDBY) !== 0; }
export function workerIsSpare(w: ProxyWorker): boolean { return (w.s.status & PROXY_WORKER_HOT_SPARE) !== 0; }
export function workerIsDrain(w: ProxyWorker): boolean { return (w.s.status & PROXY_WORKER_DRAIN) !== 0; }

/** The health-check methods of hcmethod= (proxy_hcmethods). */
export type HcMethod = 'NONE' | 'TCP' | 'OPTIONS' | 'HEAD' | 'GET' | 'OPTIONS11' | 'HEAD11' | 'GET11';
export type FlushPackets = 'off' | 'on' | 'auto';

// ---- workers ----------------------------------------------------------------------------------
/**
 * A worker's state shared by every process serving the configuration (proxy_worker_shared).
 * mod_proxy creates a plain object per worker; mod_proxy_balancer replaces `worker.s` with an
 * object of the same shape backed by its slotmem table, so every field must be read through
 * `worker.s` each time (never cached across requests). Times are ms since the epoch; durations
 * are milliseconds; undefined means "not set" (the *_set bits of httpd).
 */
export interface ProxyWorkerShared {
  /** The worker's URL as configured, lower-cased scheme and host ("http://127.0.0.1:8080/app"). */
  name: string;
  scheme: string;
  hostname: string;
  port: number;
  /** The unix socket of "unix:/path|scheme://host" (empty when none). */
  udsPath: string;
  route: string;
  redirect: string;
  /** PROXY_WORKER_* bits. */
  status: number;
  lbset: number;
  /** The configured loadfactor (1..100; the dynamic lbfactor of httpd's shared struct). */
  lbfactor: number;
  /** The lbmethods' running score (lbstatus). */
  lbstatus: number;
  /** Times the worker was elected; busyness (connections in use); bytes sent to / read from it. */
  elected: number;
  busy: number;
  transferred: number;
  read: number;
  /** Failed attempts since the last success (retries). */
  retries: number;
  /** When the worker went into error (0: never). */
  errorTime: number;
  /** Last update by the balancer-manager or a health check. */
  updated: number;
  /** Health check counters (passes/pcount, fails/fcount). */
  passes: number;
  pcount: number;
  fails: number;
  fcount: number;
  /** Health check parameters (hcmethod=, hcinterval= in ms, hcuri=, hcexpr=: mod_proxy_hcheck;
   *  the balancer-manager changes them at run time). */
  method: HcMethod;
  interval: number;
  hcuri: string;
  hcexpr: string;
  /** Index of the worker's slot in the balancer's slotmem table (-1: none). */
  index: number;
}

/** The key=value parameters of ProxyPass, BalancerMember and ProxySet for a worker, parsed and
 *  checked (ap_proxy_define_worker + set_worker_param). undefined: not given. */
export interface ProxyWorkerParams {
  /** timeout= (s), connectiontimeout= (s), ping= (s), retry= (s), acquire= (ms), ttl= (s). */
  timeout: number | undefined;
  connectionTimeout: number | undefined;
  ping: number | undefined;
  retry: number | undefined;
  acquire: number | undefined;
  ttl: number | undefined;
  /** min=, max= (hmax), smax=. */
  min: number | undefined;
  hmax: number | undefined;
  smax: number | undefined;
  keepalive: boolean | undefined;
  disablereuse: boolean | undefined;
  enablereuse: boolean | undefined;
  flushpackets: FlushPackets | undefined;
  /** flushwait= (ms). */
  flushwait: number | undefined;
  /** upgrade= (the protocol name, "websocket" / "ANY" / "NONE"). */
  upgrade: string | undefined;
  /** mapping=encoded|servlet. */
  mapping: 'encoded' | 'servlet' | undefined;
  iobuffersize: number | undefined;
  receivebuffersize: number | undefined;
  responsefieldsize: number | undefined;
  secret: string | undefined;
  addressttl: number | undefined;
  /** Parameters owned by other modules (hcmethod, hcinterval, hcpasses, hcfails, hcuri,
   *  hcexpr, hctemplate: mod_proxy_hcheck), lower-case key → value as given. */
  readonly extra: Map<string, string>;
}

/** An idle or in-use connection to a backend (proxy_conn_rec). */
export interface ProxyConn {
  readonly worker: ProxyWorker;
  /** The socket (a TLS socket over it once TLS is on); null before connect, and when the
   *  connection is a plain stream (`stream`). */
  socket: net.Socket | null;
  /** The connection as a plain stream driven on its libuv handle, without a net.Socket, when
   *  connectBackend was asked for one (`plain`) and could make it; null otherwise. */
  stream: TcpStream | null;
  /** Host and port connected to (after determineConnection), the unix socket path, or the
   *  ProxyRemote host and port when one forwards the request. */
  hostname: string;
  port: number;
  udsPath: string;
  /** TLS to the backend (https://, wss://). */
  isSsl: boolean;
  /** SNI / name checked by SSLProxyCheckPeerName for this connection. */
  sslHostname: string | undefined;
  /** ALPN protocols the TLS handshake proposes and requires one of (httpd's
   *  "proxy-request-alpn-protos" connection note; mod_proxy_http2 sets ["h2"]). */
  alpn?: readonly string[] | undefined;
  /** Close instead of returning it to the pool (httpd's backend->close). */
  close: boolean;
  /** Bytes received after the end of a response (a protocol module's reader gives them back;
   *  the next user of the connection reads them first). */
  pending: Buffer | null;
  /** Requests this connection carried. */
  uses: number;
  /** When it went back to the pool (ms). */
  idleSince: number;
  /** Per-scheme data (a module's own typed state, keyed by scheme name). */
  readonly data: Map<string, unknown>;
}

/** A worker: one backend URL with its parameters, its pool and its shared state (proxy_worker). */
export interface ProxyWorker {
  /** The URL as configured (also s.name). */
  readonly name: string;
  /** "unix:/path|http://host/" as configured, when a unix socket is used. */
  readonly udsName: string | undefined;
  readonly scheme: string;
  readonly hostname: string;
  readonly port: number;
  readonly udsPath: string | undefined;
  readonly params: ProxyWorkerParams;
  /** Shared state (replaced by mod_proxy_balancer's slotmem-backed object). */
  s: ProxyWorkerShared;
  /** PROXY_WORKER_INITIALIZED etc. for this process (local_status). */
  localStatus: number;
  /** The balancer it is a member of. */
  balancer: ProxyBalancer | undefined;
  /** The worker is a default one (forward, reverse): its name matches nothing. */
  readonly generic: boolean;
  /** A matchable name ("$1" etc. in ProxyPassMatch: is_name_matchable). */
  readonly matchable: boolean;
  /** Module-owned per-worker storage (health check state, ...). */
  readonly context: Map<string, unknown>;
}

// ---- balancers --------------------------------------------------------------------------------
/** A balancer's shared state (proxy_balancer_shared); mod_proxy_balancer may back it with slotmem. */
export interface ProxyBalancerShared {
  /** "balancer://name" lower-cased. */
  name: string;
  /** stickysession= names (cookie / path parameter), sticky path (after '|'). */
  sticky: string;
  stickyPath: string;
  stickySeparator: string;
  stickyForce: boolean;
  scolonsep: boolean;
  /** lbmethod= provider name ("byrequests" by default). */
  lbpname: string;
  nonce: string;
  /** timeout= (ms) waiting for a free worker; maxattempts=. */
  timeout: number;
  maxAttempts: number | undefined;
  forcerecovery: boolean;
  /** The balancer-manager's "Disabled" switch. */
  inactive: boolean;
  vhost: string;
  vpath: string;
  /** Last change of the members list. */
  wupdated: number;
  index: number;
}

export interface ProxyBalancer {
  readonly name: string;
  /** The members in configuration order (the balancer may add some at run time: growth). */
  readonly workers: ProxyWorker[];
  s: ProxyBalancerShared;
  /** The elected lbmethod (set by mod_proxy_balancer from s.lbpname). */
  lbmethod: ProxyLbMethod | undefined;
  /** growth=: members that can be added at run time; failonstatus=; failontimeout=; nofailover=. */
  growth: number;
  readonly errStatuses: number[];
  failOnTimeout: boolean;
  /** The <Proxy balancer://...> section's per-directory vector, for the lbmethods that read it. */
  sectionConfig: readonly unknown[] | undefined;
  /** Every key=value given to it (ProxySet / <Proxy> / ProxyPass), lower-case keys. */
  readonly params: Map<string, string>;
  readonly context: Map<string, unknown>;
}

// ---- configuration ----------------------------------------------------------------------------
/** One ProxyPass / ProxyPassMatch (struct proxy_alias). */
export interface ProxyAlias {
  /** The local path (or regex source for ProxyPassMatch). */
  readonly fake: string;
  /** The remote URL, or "!" for an exclusion. */
  readonly real: string;
  readonly regex: RegExp | undefined;
  /** nocanon, interpolate, noquery flags; mapping=. */
  readonly flags: { readonly nocanon: boolean; readonly interpolate: boolean; readonly noquery: boolean };
  readonly mapping: 'encoded' | 'servlet' | undefined;
  readonly balancer: ProxyBalancer | undefined;
  readonly worker: ProxyWorker | undefined;
}

/** ProxyPassReverse / ProxyPassReverseCookieDomain / ProxyPassReverseCookiePath entries. */
export interface ProxyReverseAlias {
  /** The backend's URL (or balancer://name) and the local path it maps to. */
  readonly real: string;
  readonly fake: string;
  readonly interpolate: boolean;
  readonly balancer: ProxyBalancer | undefined;
}

export type ProxyVia = 'off' | 'on' | 'block' | 'full';
export type ProxyBadHeader = 'error' | 'ignore' | 'body';
export type ProxyStatusOpt = 'off' | 'on' | 'full';

/** Per-server configuration (proxy_server_conf); undefined = not set. */
export interface ProxyServerConf {
  /** ProxyRemote / ProxyRemoteMatch. */
  readonly proxies: readonly { readonly scheme: string; readonly protocol: string; readonly hostname: string; readonly port: number; readonly regex: RegExp | undefined; readonly useRegex: boolean }[];
  /** Server-level ProxyPass / ProxyPassMatch in order. */
  readonly aliases: readonly ProxyAlias[];
  /** ProxyBlock / NoProxy entries. */
  readonly noproxies: readonly string[];
  readonly dirconn: readonly { readonly name: string; readonly match: (host: string) => boolean }[];
  /** Workers defined outside balancers, and the balancers, of this server. */
  readonly workers: ProxyWorker[];
  readonly balancers: ProxyBalancer[];
  /** The default forward and reverse workers. */
  readonly forward: ProxyWorker;
  readonly reverse: ProxyWorker;
  readonly domain: string | undefined;
  readonly req: boolean | undefined;
  readonly viaopt: ProxyVia | undefined;
  readonly recvBufferSize: number | undefined;
  readonly ioBufferSize: number | undefined;
  readonly maxfwd: number | undefined;
  /** ProxyTimeout (ms). */
  readonly timeout: number | undefined;
  readonly badopt: ProxyBadHeader | undefined;
  readonly proxyStatus: ProxyStatusOpt | undefined;
  readonly sourceAddress: string | undefined;
  /** ProxyPassInherit / BalancerInherit; BalancerGrowth; BalancerPersist. */
  readonly ppinherit: boolean | undefined;
  readonly inherit: boolean | undefined;
  readonly bgrowth: number | undefined;
  readonly balPersist: boolean | undefined;
}

/** Per-directory configuration (proxy_dir_conf). */
export interface ProxyDirConf {
  readonly raliases: readonly ProxyReverseAlias[];
  readonly cookiePaths: readonly ProxyReverseAlias[];
  readonly cookieDomains: readonly ProxyReverseAlias[];
  readonly errorOverride: boolean | undefined;
  /** ProxyErrorOverride On 404 500 ...: only these statuses (empty: every 4xx/5xx). */
  readonly errorOverrideCodes: readonly number[];
  readonly preserveHost: boolean | undefined;
  readonly addForwardedHeaders: boolean | undefined;
  readonly interpolateEnv: boolean | undefined;
  /** ProxyPass inside <Location>. */
  readonly alias: ProxyAlias | undefined;
  readonly forward100Continue: boolean | undefined;
}

// ---- provider groups --------------------------------------------------------------------------
/**
 * A protocol module (group "proxy_scheme", one provider per module, named after it: "http",
 * "fcgi", "scgi", "uwsgi", "wstunnel"). mod_proxy asks each in turn, in load order (those with
 * `first` before the others, as httpd's APR_HOOK_FIRST), as httpd's proxy_run_canon_handler /
 * proxy_run_scheme_handler: the first answer other than DECLINED wins.
 */
export interface ProxySchemeProvider {
  /** Asked before the providers without it (mod_proxy_wstunnel's hooks run before mod_proxy_http's). */
  readonly first?: boolean;
  /** The schemes (lower case) whose URLs this provider's canon and handle take; it declines
   *  every other URL. When given, mod_proxy decides once per configuration and scheme which
   *  providers a URL goes to and leaves this one out for other schemes (httpd asks every
   *  module's hook and each declines). Without it, the provider is asked for every URL. */
  readonly schemes?: readonly string[];
  /** The module whose debug line a declining handle writes (mod_proxy_fcgi's AH01076 and
   *  AH01077): at LogLevel debug for it, the provider is asked for every URL again, so the
   *  error log has httpd's lines. */
  readonly declineLog?: string;
  /** proxy_hook_check_trans: a ProxyPass matched and maps the request to `url` (without
   *  "proxy:"); a status other than OK and DECLINED passes the request on to the next
   *  ProxyPass (mod_proxy_wstunnel takes ws:// only with an Upgrade header). */
  checkTrans?(r: Request, url: string): number;
  /** proxy_hook_canon_handler: `url` is r.filename without "proxy:"; canonicalise it into
   *  r.filename ("proxy:" + canonical URL) when the scheme is this module's; OK, DECLINED, or
   *  an HTTP status (400 for a bad URL). */
  canon(r: Request, url: string): number;
  /** proxy_hook_scheme_handler: proxy the request to `worker` (`url` the backend URL; a
   *  ProxyRemote host and port when one applies). DECLINED when the scheme is not its own;
   *  otherwise OK/DONE or an HTTP status (having logged as httpd does). */
  handle(r: Request, worker: ProxyWorker, conf: ProxyServerConf, url: string, proxyname: string | undefined, proxyport: number): Promise<number>;
}

/** A load balancing method (group "proxy_lbmethod", named "byrequests", ...): proxy_balancer_method. */
export interface ProxyLbMethod {
  readonly name: string;
  /** The best usable member for the request, or undefined (every member busy or in error). */
  finder(balancer: ProxyBalancer, r: Request): ProxyWorker | undefined;
  /** Resets the method's counters (balancer-manager); age them (periodic). */
  reset(balancer: ProxyBalancer, s: ServerRec): void;
  age(balancer: ProxyBalancer, s: ServerRec): void;
  /** Optional: after a member was elected (updatelbstatus). */
  updateLbStatus?(balancer: ProxyBalancer, elected: ProxyWorker, s: ServerRec): void;
}

/** What pre_request answers: a status (DECLINED: not a balancer URL) and, on OK, the chosen
 *  worker and balancer with the rewritten backend URL. */
export interface ProxyPreRequestResult {
  readonly status: number;
  readonly worker?: ProxyWorker;
  readonly balancer?: ProxyBalancer;
  readonly url?: string;
}

/** The balancer hooks (group "proxy_balancer", mod_proxy_balancer's provider "balancer"):
 *  proxy_hook_pre_request / proxy_hook_post_request. */
export interface ProxyBalancerHooks {
  /** Picks a member for a "balancer://" URL (sticky session, lbmethod, failover); DECLINED for
   *  another URL; 503 (logged, AH01167) when no member is usable. */
  preRequest(worker: ProxyWorker | undefined, balancer: ProxyBalancer | undefined, r: Request, conf: ProxyServerConf, url: string): ProxyPreRequestResult | Promise<ProxyPreRequestResult>;
  /** After the request (busy count, failonstatus); OK or DECLINED. */
  postRequest(worker: ProxyWorker, balancer: ProxyBalancer | undefined, r: Request, conf: ProxyServerConf): number | Promise<number>;
  /** ap_proxy_sync_balancer outside a request (mod_proxy_hcheck's watchdog): this process's
   *  view of the balancer and its members refreshed from the shared state, members added at
   *  run time by another process defined here too. */
  sync?(balancer: ProxyBalancer, ctx: ConfigContext, s: ServerRec): void;
}

/** A module that owns some worker parameters (mod_proxy_hcheck's set_worker_hc_param):
 *  group "proxy_worker_param". Answers an error text, undefined when it took the parameter,
 *  false when the key is not its own. */
export interface ProxyWorkerParamProvider {
  set(ctx: ConfigContext, s: ServerRec, worker: ProxyWorker, key: string, value: string): string | undefined | false;
}

/** The health checker's parts of the balancer-manager page (mod_proxy_hcheck's optional
 *  functions hc_show_exprs, hc_select_exprs, hc_valid_expr): group "proxy_hc", name "hcheck". */
export interface ProxyHcDisplay {
  /** The table of the server's ProxyHCExpr conditions ('' when none). */
  showExprs(r: Request): string;
  /** The <option> lines of the conditions, `current` selected. */
  selectExprs(r: Request, current: string): string;
  /** `name` is one of the server's conditions. */
  validExpr(r: Request, name: string): boolean;
}

// ---- mod_proxy's functions (group "proxy_api", name "mod_proxy") --------------------------------
/** A reader over a backend connection with its pending bytes (lines for headers, pieces for
 *  bodies); gives unread bytes back to the connection when released. */
export interface BackendReader {
  /** One line without CR LF; null at the end of the stream; rejects with `ProxyIoError`
   *  ('timeout' after the worker's / ProxyTimeout, 'toolong' over `max` bytes). */
  readLine(max: number): Promise<string | null>;
  /** readLine without waiting: the line when a whole one is already read (undefined: call
   *  readLine), so a response head that came in one piece is parsed without a promise per line. */
  lineNow(max: number): string | undefined;
  /** The whole response head when it is already read in one piece (an HTTP/1.x status line,
   *  every line ended by CR LF, none of `max` bytes or more): its lines, the status line first
   *  and the empty line that ends it left out, still on the stream (skip() takes as much of
   *  them as was used); undefined otherwise (read it with lineNow / readLine). */
  headNow(max: number): string[] | undefined;
  /** Takes `n` bytes of a head that headNow gave (at most all of it, CR LF included). */
  skip(n: number): void;
  /** true when bytes (or the end of the stream) are there to read; else a promise of true once
   *  they are, of false when the timeout passed first. */
  ready(): true | Promise<boolean>;
  /** Up to `max` bytes as they arrive; null at the end of the stream. */
  read(max: number): Promise<Buffer | null>;
  /** read without waiting: up to `max` bytes already read (undefined: none are; call read). */
  readNow(max: number): Buffer | undefined;
  /** Puts bytes back in front of the stream. */
  unread(b: Buffer): void;
}

/** What the CGI-like schemes (fcgi, scgi, uwsgi) use of a backend connection, which is a plain
 *  stream (ProxyConn.stream) or a net.Socket: bytes written (false: wait for 'drain'; a failed
 *  write destroys it) and read. */
export interface ByteStream {
  readonly destroyed: boolean;
  /** The error it was destroyed with. */
  readonly errored: Error | null;
  write(data: Buffer): boolean;
  on(event: 'data', fn: (data: Buffer) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  on(event: 'end' | 'close' | 'drain', fn: () => void): unknown;
  off(event: 'end' | 'close' | 'drain', fn: () => void): unknown;
  pause(): unknown;
  resume(): unknown;
  isPaused(): boolean;
  destroy(): unknown;
}

export class ProxyIoError extends Error {
  constructor(readonly kind: 'timeout' | 'closed' | 'toolong' | 'reset', message: string) { super(message); }
}

/** mod_proxy's utility functions (proxy_util.c) that the other proxy modules call. */
export interface ProxyApi {
  serverConf(s: ServerRec): ProxyServerConf;
  dirConf(r: Request): ProxyDirConf;

  /** ap_proxy_get_worker / ap_proxy_get_balancer (by URL; the longest matching name). */
  getWorker(balancer: ProxyBalancer | undefined, conf: ProxyServerConf, url: string): ProxyWorker | undefined;
  getBalancer(conf: ProxyServerConf, url: string): ProxyBalancer | undefined;
  /** ap_proxy_define_worker (in a balancer when given); an error text on a bad URL. */
  defineWorker(ctx: ConfigContext, s: ServerRec, balancer: ProxyBalancer | undefined, url: string): ProxyWorker | string;
  /** set_worker_param: one key=value; an error text worded as httpd's. */
  setWorkerParam(ctx: ConfigContext, s: ServerRec, worker: ProxyWorker, key: string, value: string): string | undefined;
  /** ap_proxy_parse_wstatus ("+H-D" letters) and the status as the balancer-manager prints it. */
  setWorkerStatus(worker: ProxyWorker, flags: string): string | undefined;
  workerStatusString(worker: ProxyWorker): string;

  /** ap_proxy_retry_worker: false (logged AH00932) while an in-error worker's retry time has
   *  not passed; true (and the error flag cleared once it has) otherwise. */
  retryWorker(proxyFunction: string, worker: ProxyWorker, s: ServerRec): boolean;

  /** ap_proxy_acquire_connection: a pooled idle connection of the worker or a new one (not
   *  yet connected); 503 when the worker is unusable (logged AH00940) or when max=
   *  connections stay in use for acquire= ms (AH00941). A promise only while it waits for one
   *  (max= connections in use). */
  acquireConnection(proxyFunction: string, worker: ProxyWorker, s: ServerRec): ProxyConn | number | Promise<ProxyConn | number>;
  /** ap_proxy_determine_connection: the address to connect to (the worker's, the URL's host for
   *  a generic worker, or the ProxyRemote host); OK or an HTTP status (502 for an unresolvable
   *  name, logged). `url` is the backend URL. */
  determineConnection(r: Request, conf: ProxyServerConf, worker: ProxyWorker, conn: ProxyConn, url: string, proxyname: string | undefined, proxyport: number): number | Promise<number>;
  /** ap_proxy_connect_backend + ap_proxy_connection_create: connects (connectiontimeout, source
   *  address) unless the pooled socket is still up, then TLS through the "ssl_proxy" provider
   *  for an SSL connection. OK; 503 when the connection failed (AH00957, worker put in error
   *  for retry= seconds with AH00959); 502 when TLS failed (the ssl_proxy provider's line).
   *  `plain`: the caller only writes and reads bytes and closes the connection after one
   *  exchange (a CGI-like scheme without reuse): a connection without TLS to an IP address or
   *  a unix socket is then made as `conn.stream` (no net.Socket: cheaper to make and to close).
   *  'pooled': such a stream too, read through `reader` and kept in the pool as a socket is
   *  (the caller writes to `conn.stream ?? conn.socket`: a pooled socket serves it as well). */
  connectBackend(proxyFunction: string, conn: ProxyConn, worker: ProxyWorker, r: Request, plain?: boolean | 'pooled'): number | Promise<number>;
  /** A reader over the connection (it consumes conn.pending first; timeouts from the worker or
   *  ProxyTimeout or Timeout, as httpd's, or `timeoutMs` when given: ping=). */
  reader(conn: ProxyConn, r: Request, timeoutMs?: number): BackendReader;
  /** ap_proxy_release_connection: back to the pool unless conn.close / disablereuse, or closed. */
  releaseConnection(proxyFunction: string, conn: ProxyConn, s: ServerRec): void;
  /** ap_proxy_is_socket_connected: the pooled socket still up, with no unread data. */
  isSocketConnected(conn: ProxyConn): boolean;

  /** ap_proxy_checkproxyblock2: OK, or 403 (logged AH00916) when a ProxyBlock name matches
   *  `host` (the caller answers with proxyError). */
  checkProxyBlock(r: Request, conf: ProxyServerConf, host: string): number;
  /** ap_proxyerror: sets the error note, logs AH00898 "<message> returned by <uri>" and returns
   *  `status` (the error page is the server's, with the proxy's reason). */
  proxyError(r: Request, status: number, message: string): number;
  /** ap_proxy_backend_broke: the response had started; the client connection is aborted. */
  backendBroke(r: Request, bb: Brigade): void;
  /** ap_proxy_canonenc: %-encoding of a URL part for a canon handler ('url' (enc_parm), 'path',
   *  'query' (enc_search), 'fragment', 'user', 'fpath'); undefined for an invalid escape. */
  canonenc(x: string, type: 'url' | 'path' | 'query' | 'fragment' | 'user' | 'fpath', forcedec: boolean, proxyreq: ProxyReq, encodedSlashes?: boolean): string | undefined;
  /** ap_proxy_canon_netloc: "//host:port" split from the URL; an error text. */
  canonNetloc(url: string, defPort: number): { host: string; port: number; rest: string; user: string | undefined; password: string | undefined } | string;
  /** ap_proxy_port_of_scheme. */
  portOfScheme(scheme: string): number;
  /** Backend timeout for a request in ms: worker timeout=, else ProxyTimeout, else Timeout. */
  backendTimeout(worker: ProxyWorker, r: Request): number;
  /** ap_proxy_tunnel: relays bytes both ways between the client connection and the backend
   *  (Upgrade: websocket, CONNECT) until one side closes or the idle timeout; OK or a status. */
  tunnel(r: Request, conn: ProxyConn, idleTimeout: number): Promise<number>;
  /**
   * ap_proxy_create_hdrbrgd: the request line and header fields to send to the backend,
   * without the body framing (Content-Length, Transfer-Encoding) and Connection, which the
   * caller adds, nor the blank line. `target` is the request-target, `host`/`portStr` the
   * backend's host and port from the URL (for Host unless ProxyPreserveHost), `serverPortStr`
   * the Via port (":port" or ""), `force10` an HTTP/1.0 request line, `expect100` whether
   * "Expect: 100-Continue" is sent (otherwise Expect is dropped). `oldCl`/`oldTe`: the
   * client's Content-Length and Transfer-Encoding, taken out.
   */
  createHeaders(r: Request, conn: ProxyConn, req: { target: string; host: string; portStr: string | undefined; serverPortStr: string; force10: boolean; expect100: boolean }): { head: string; oldCl: string | undefined; oldTe: string | undefined };
  /** Bumps the worker's transferred / read counters. */
  countBytes(worker: ProxyWorker, sent: number, received: number): void;
}

declare module '../server/module.js' {
  interface ProviderGroups {
    proxy_scheme: ProxySchemeProvider;
    proxy_lbmethod: ProxyLbMethod;
    proxy_balancer: ProxyBalancerHooks;
    proxy_worker_param: ProxyWorkerParamProvider;
    proxy_hc: ProxyHcDisplay;
    proxy_api: ProxyApi;
  }
}

/** The default ports of the schemes mod_proxy knows (ap_proxy_port_of_scheme). */
export const SCHEME_PORTS: Readonly<Record<string, number>> = {
  http: 80, https: 443, ws: 80, wss: 443, ftp: 21, gopher: 70, fcgi: 8000, ajp: 8009, scgi: 4000, h2c: 80, h2: 443, uwsgi: 3031,
};
