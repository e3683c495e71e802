// mod_proxy_hcheck: health checks of balancer members (httpd's modules/proxy/mod_proxy_hcheck.c).
// The hc* worker parameters (hcmethod, hcuri, hcinterval, hcpasses, hcfails, hctemplate,
// hcexpr), ProxyHCTemplate, ProxyHCExpr (an ap_expr over the check's answer: %{REQUEST_STATUS},
// hc('body')) and ProxyHCTPsize. The checks run from mod_watchdog's singleton watchdog
// "_proxy_hcheck_" (one process of the server checks for all): every 100 ms each member whose
// interval has passed gets a TCP connect or an OPTIONS / HEAD / GET request; hcfails failures in
// a row put it in "HcFl" (skipped by the lbmethods), hcpasses successes bring it back. The state
// goes to the balancer's shared table, so every worker process sees it.

import * as net from 'node:net';
import type { ConfigContext } from '../../server/config/context.js';
import { CmdParms, GLOBAL_ONLY, NOT_IN_HTACCESS } from '../../server/config/cmd.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { defineModule, directive, MODULE_API_VERSION, OR_FILEINFO, RSRC_CONF } from '../../server/module.js';
import type { ServerRec } from '../../server/server-rec.js';
import { parseTimeout } from '../../server/core/config.js';
import { Request, type ConnRec } from '../../server/request/request.js';
import { Runtime } from '../../server/runtime.js';
import type { Wire } from '../../server/http/wire.js';
import {
  APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_TRACE2, APLOG_TRACE3, APLOG_TRACE4, APLOG_TRACE7, APLOG_WARNING, levelFor,
} from '../../server/log/levels.js';
import { evalBool, isFailure, parseExprCmd, type BoolExpr, type EvalState } from '../../expr/index.js';
import { WD_TM_SLICE, type Watchdog, type WatchdogState } from '../../server/watchdog.js';
import {
  PROXY_WORKER_HC_FAIL, PROXY_WORKER_IN_ERROR, PROXY_WORKER_STOPPED,
  SCHEME_PORTS, type HcMethod, type ProxyHcDisplay, type ProxyWorker, type ProxyWorkerParamProvider,
} from '../../proxy/api.js';

const WATCHDOG_NAME = '_proxy_hcheck_';
/** HC_THREADPOOL_SIZE: ProxyHCTPsize's default. */
const DEFAULT_TPSIZE = 16;
/** HCHECK_WATHCHDOG_DEFAULT_INTERVAL (ms). */
const DEFAULT_INTERVAL = 30000;
/** sizeof(hcuri), sizeof(hcexpr) in 2.4.71 (PROXY_WORKER_MAX_ROUTE_SIZE, PROXY_WORKER_MAX_SCHEME_SIZE). */
const HCURI_SIZE = 64;
const HCEXPR_SIZE = 16;
/** HUGE_STRING_LEN: the longest status or header line read. */
const HUGE_STRING_LEN = 8192;
const OK = 0;
const NOT_OK = 1;

/** proxy_hcmethods: every method httpd names, with whether it is implemented here (CPING needs
 *  mod_proxy_ajp, PROVIDER is reserved), and its hcmethod_t number (trace lines print it). */
const METHODS: readonly { readonly name: string; readonly n: number; readonly implemented: boolean }[] = [
  { name: 'NONE', n: 0, implemented: true }, { name: 'TCP', n: 1, implemented: true }, { name: 'OPTIONS', n: 2, implemented: true },
  { name: 'HEAD', n: 3, implemented: true }, { name: 'GET', n: 4, implemented: true }, { name: 'CPING', n: 5, implemented: false },
  { name: 'PROVIDER', n: 6, implemented: false }, { name: 'OPTIONS11', n: 7, implemented: true },
  { name: 'HEAD11', n: 8, implemented: true }, { name: 'GET11', n: 9, implemented: true },
];

// ---- configuration --------------------------------------------------------------------------------

interface HcTemplate {
  readonly name: string;
  method: HcMethod;
  passes: number;
  fails: number;
  interval: number;
  hurl: string | undefined;
  hcexpr: string | undefined;
}

interface HcCondition {
  readonly expr: string;
  readonly pexpr: BoolExpr;
}

/** sctx_t: per server, never merged (a virtual host has its own templates and conditions). */
interface HcServerConf {
  readonly s: ServerRec;
  readonly templates: HcTemplate[];
  /** ProxyHCExpr names in order (apr_table_setn: a name given again replaces its entry). */
  readonly conditions: Map<string, HcCondition>;
  /** ProxyHCTPsize (main server). */
  tpsize: number | undefined;
}
type Cmd = CmdParms<HcServerConf, undefined>;

/** What set_worker_hc_param writes: a worker's shared fields, or a template. */
interface HcTarget { method: HcMethod; passes: number; fails: number; interval: number; hcuri: string; hcexpr: string }

function workerTarget(w: ProxyWorker): HcTarget {
  return w.s;
}

/** set_worker_hc_param: one hc* key for a worker (`w`) or a template (`t`). */
function setHcParam(conf: HcServerConf, w: ProxyWorker | undefined, t: HcTemplate | undefined, key: string, val: string): string | undefined {
  const k = key.toLowerCase();
  const target = w !== undefined ? workerTarget(w) : undefined;
  if (target === undefined && t === undefined) return 'Bad call to set_worker_hc_param()';
  switch (k) {
    case 'hctemplate': {
      const tpl = conf.templates.find((x) => x.name.toLowerCase() === val.toLowerCase());
      if (tpl === undefined) return `Unknown ProxyHCTemplate name: ${val}`;
      if (target !== undefined) {
        target.method = tpl.method;
        target.interval = tpl.interval;
        target.passes = tpl.passes;
        target.fails = tpl.fails;
        target.hcuri = tpl.hurl ?? '';
        target.hcexpr = tpl.hcexpr ?? '';
      } else {
        t!.method = tpl.method;
        t!.interval = tpl.interval;
        t!.passes = tpl.passes;
        t!.fails = tpl.fails;
        t!.hurl = tpl.hurl;
        t!.hcexpr = tpl.hcexpr;
      }
      return undefined;
    }
    case 'hcmethod': {
      const m = METHODS.find((x) => x.name.toLowerCase() === val.toLowerCase());
      if (m === undefined) return 'Unknown method';
      if (!m.implemented) return `Health check method ${val} not (yet) implemented`;
      if (target !== undefined) target.method = m.name as HcMethod; else t!.method = m.name as HcMethod;
      return undefined;
    }
    case 'hcinterval': {
      const ms = parseTimeout(val, 's');
      if (ms === undefined) return 'Unparse-able hcinterval setting';
      if (ms < WD_TM_SLICE) return `Interval must be a positive value greater than ${WD_TM_SLICE}ms`;
      if (target !== undefined) target.interval = ms; else t!.interval = ms;
      return undefined;
    }
    case 'hcpasses': {
      const n = atoi(val);
      if (n < 0) return 'Passes must be a positive value';
      if (target !== undefined) target.passes = n; else t!.passes = n;
      return undefined;
    }
    case 'hcfails': {
      const n = atoi(val);
      if (n < 0) return 'Fails must be a positive value';
      if (target !== undefined) target.fails = n; else t!.fails = n;
      return undefined;
    }
    case 'hcuri':
      if (val.length >= HCURI_SIZE) return `Health check uri length must be < ${HCURI_SIZE} characters`;
      if (target !== undefined) target.hcuri = val; else t!.hurl = val;
      return undefined;
    case 'hcexpr':
      if (!conf.conditions.has(val)) return `Unknown health check condition expr: ${val}`;
      // httpd words this one as the hcuri check.
      if (val.length >= HCEXPR_SIZE) return `Health check uri length must be < ${HCEXPR_SIZE} characters`;
      if (target !== undefined) target.hcexpr = val; else t!.hcexpr = val;
      return undefined;
  }
  return 'unknown Worker hcheck parameter';
}

/** apr's atoi. */
function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  return m === null ? 0 : Number.parseInt(m[1]!, 10) | 0;
}

/** ap_getword_conf2: a word as ap_getword_conf reads it, or the inside of a {...} group
 *  (nested braces counted, nothing unescaped). */
function getwordConf2(c: ArgCursor): string {
  c.skipWs();
  const t = c.text;
  if (t[c.pos] !== '{') return c.word();
  let depth = 1;
  let i = c.pos + 1;
  for (; i < t.length; i++) {
    if (t[i] === '{') depth++;
    else if (t[i] === '}' && --depth === 0) break;
  }
  const w = t.slice(c.pos + 1, i);
  c.pos = i < t.length ? i + 1 : i;
  c.skipWs();
  return w;
}

function setHcCondition(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_HTACCESS);
  if (err !== undefined) return err;
  const c = new ArgCursor(arg);
  const name = c.word();
  if (name === '') return `Missing expression name for ${cmd.name}`;
  if (name.length > HCEXPR_SIZE - 1) return `Expression name limited to ${HCEXPR_SIZE - 1} characters`;
  const text = getwordConf2(c);
  if (text === '') return `Missing expression for ${cmd.name}`;
  const res = parseExprCmd(cmd, text, 0, 'proxy_hcheck');
  if (!res.ok) return `Could not parse expression "${text}": ${res.error}`;
  cmd.srv.conditions.set(name, { expr: text, pexpr: res.expr });
  if (c.word() !== '') return 'error: extra parameter(s)';
  return undefined;
}

function setHcTemplate(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_HTACCESS);
  if (err !== undefined) return err;
  const c = new ArgCursor(arg);
  const name = c.word();
  if (name === '') return `Missing template name for ${cmd.name}`;
  const t: HcTemplate = { name, method: 'TCP', passes: 1, fails: 1, interval: DEFAULT_INTERVAL, hurl: undefined, hcexpr: undefined };
  while (!c.atEnd()) {
    const word = c.word();
    const eq = word.indexOf('=');
    if (eq < 0) return "Invalid ProxyHCTemplate parameter. Parameter must be in the form 'key=value'";
    const key = word.slice(0, eq);
    const val = word.slice(eq + 1);
    const e = setHcParam(cmd.srv, undefined, t, key, val);
    if (e !== undefined) return `ProxyHCTemplate: ${e} ${key}=${val}; ${name}`;
  }
  cmd.srv.templates.push(t);
  return undefined;
}

function setHcTpsize(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const n = atoi(arg);
  if (n < 0) return 'Invalid ProxyHCTPsize parameter. Parameter must be >= 0';
  cmd.srv.tpsize = n;
  return undefined;
}

// ---- logging --------------------------------------------------------------------------------------

function log(s: ServerRec, level: number, message: string, errno?: { code: number; text: string }, module = 'proxy_hcheck'): void {
  if (level > levelFor(s.logLevel, module)) return;
  s.errorLog.write({ module, level, message, errno });
}

function wants(s: ServerRec, level: number, module = 'proxy_hcheck'): boolean {
  return level <= levelFor(s.logLevel, module);
}

// ---- the checks -----------------------------------------------------------------------------------

/** wctx_t and the hc worker's settings: what the check of one member sends and where. */
interface HcWorker {
  /** httpd's hc->s->name, the "%pp" of the member (a pointer there: an id here). */
  readonly id: string;
  readonly worker: ProxyWorker;
  readonly path: string | undefined;
  readonly port: number;
  method: HcMethod;
  req: string | undefined;
  httpMethod: string | undefined;
  protocol: string;
  /** The address was looked up once (AH10480), as httpd's reusable address. */
  resolved: boolean;
}

let nextId = 0x7f3a5c400c08;
const ids = new WeakMap<ProxyWorker, string>();
/** DIFFERENCE: httpd names a member in its trace lines, and its hc worker, by the address of the
 *  member's struct ("%pp"); plume prints an id of the same form, unique per member. */
function idOf(w: ProxyWorker): string {
  let id = ids.get(w);
  if (id === undefined) {
    id = (nextId += 0x858).toString(16);
    ids.set(w, id);
  }
  return id;
}

/** create_hcheck_req. */
function makeRequest(hc: HcWorker): void {
  const w = hc.worker;
  const m = hc.method;
  const protocol = m === 'OPTIONS11' || m === 'HEAD11' || m === 'GET11' ? 'HTTP/1.1' : 'HTTP/1.0';
  let method: string | undefined;
  let req: string | undefined;
  if (m === 'OPTIONS' || m === 'OPTIONS11') {
    method = 'OPTIONS';
    req = `OPTIONS * ${protocol}\r\nHost: ${w.s.hostname}:${hc.port}\r\n\r\n`;
  } else if (m === 'HEAD' || m === 'HEAD11' || m === 'GET' || m === 'GET11') {
    method = m.startsWith('HEAD') ? 'HEAD' : 'GET';
    const uri = w.s.hcuri;
    req = `${method} ${hc.path ?? ''}${hc.path !== undefined && uri !== '' ? '/' : ''}${uri} ${protocol}\r\nHost: ${w.s.hostname}:${hc.port}\r\n\r\n`;
  }
  hc.req = req;
  hc.httpMethod = method;
  hc.protocol = protocol;
}

/** The path of a worker URL as apr_uri_parse gives it (undefined when there is none). */
function urlPath(name: string): string | undefined {
  const m = /^[^:/?#]+:\/\/[^/?#]*([^?#]*)/.exec(name);
  const p = m?.[1];
  return p === undefined || p === '' ? undefined : p;
}

/** One process's checker state for one configuration generation. */
interface Checker {
  readonly ctx: ConfigContext;
  readonly hcworkers: Map<ProxyWorker, HcWorker>;
  rt: Runtime | undefined;
  /** Checks running and waiting (the thread pool). */
  running: number;
  readonly queue: (() => Promise<void>)[];
  tpsize: number;
}

/** hc_get_hcworker. */
function hcWorkerOf(ck: Checker, s: ServerRec, w: ProxyWorker): HcWorker {
  let hc = ck.hcworkers.get(w);
  const port = w.s.port !== 0 ? w.s.port : SCHEME_PORTS[w.s.scheme] ?? 0;
  if (hc === undefined) {
    const id = idOf(w);
    log(s, APLOG_DEBUG, `AH03248: Creating hc worker ${id} for ${w.s.scheme}://${w.s.hostname}:${port}`);
    // ap_proxy_initialize_worker of the hc worker.
    log(s, APLOG_DEBUG, `AH00925: initializing worker ${id} shared`, undefined, 'proxy');
    log(s, APLOG_DEBUG, `AH00927: initializing worker ${id} local`, undefined, 'proxy');
    const max = w.params.hmax ?? 25;
    log(s, APLOG_DEBUG, `AH00930: initialized pool in child ${process.pid} for (${w.s.hostname}:${port}) min=${w.params.min ?? 0} max=${max} smax=${w.params.smax ?? max}`, undefined, 'proxy');
    hc = { id, worker: w, path: urlPath(w.s.name), port, method: w.s.method, req: undefined, httpMethod: undefined, protocol: 'HTTP/1.0', resolved: false };
    makeRequest(hc);
    ck.hcworkers.set(w, hc);
  }
  if (hc.method !== w.s.method) {
    // Changed on the balancer-manager page.
    log(s, APLOG_DEBUG, `AH03311: Updating hc worker ${hc.id} for ${w.s.scheme}://${w.s.hostname}:${port}`);
    hc.method = w.s.method;
    makeRequest(hc);
  }
  return hc;
}

/** A backend connection of a check: a socket with what it has received. */
class HcConn {
  readonly chunks: Buffer[] = [];
  ended = false;
  private waiter: (() => void) | null = null;
  constructor(readonly sock: net.Socket) {
    sock.on('data', (d: Buffer) => { this.chunks.push(d); this.wake(); });
    sock.on('end', () => { this.ended = true; this.wake(); });
    sock.on('close', () => { this.ended = true; this.wake(); });
    sock.on('error', () => { this.ended = true; this.wake(); });
  }
  private wake(): void { const w = this.waiter; this.waiter = null; w?.(); }
  /** Waits for more data or the end; false after `ms` without either. */
  wait(ms: number): Promise<boolean> {
    if (this.chunks.length > 0 || this.ended) return Promise.resolve(true);
    return new Promise((res) => {
      const t = setTimeout(() => { this.waiter = null; res(false); }, ms);
      this.waiter = () => { clearTimeout(t); res(true); };
    });
  }
  /** One line without CR LF (undefined: the end, a timeout or a line over the limit). */
  async line(timeout: number): Promise<string | undefined> {
    let line = '';
    for (;;) {
      const b = this.chunks[0];
      if (b === undefined) {
        if (this.ended) return undefined;
        if (!(await this.wait(timeout))) return undefined;
        continue;
      }
      const nl = b.indexOf(0x0a);
      if (nl < 0) {
        line += b.toString('latin1');
        this.chunks.shift();
      } else {
        line += b.toString('latin1', 0, nl);
        if (nl + 1 < b.length) this.chunks[0] = b.subarray(nl + 1); else this.chunks.shift();
        return line.endsWith('\r') ? line.slice(0, -1) : line;
      }
      if (line.length >= HUGE_STRING_LEN) return undefined;
    }
  }
  /** Up to `max` bytes; null at the end; undefined on a timeout. */
  async read(max: number, timeout: number): Promise<Buffer | null | undefined> {
    for (;;) {
      const b = this.chunks[0];
      if (b !== undefined) {
        if (b.length <= max) { this.chunks.shift(); return b; }
        this.chunks[0] = b.subarray(max);
        return b.subarray(0, max);
      }
      if (this.ended) return null;
      if (!(await this.wait(timeout))) return undefined;
    }
  }
}

/** The timeouts of a member's checks: connectiontimeout= and timeout= of the member, else
 *  ProxyTimeout, else Timeout (ap_proxy_connect_backend). */
function timeouts(ck: Checker, s: ServerRec, w: ProxyWorker): { connect: number; io: number } {
  const api = ck.ctx.provider('proxy_api', 'mod_proxy');
  const io = w.params.timeout ?? api?.serverConf(s).timeout ?? s.timeout * 1000;
  return { connect: w.params.connectionTimeout ?? io, io };
}

function errnoOf(e: NodeJS.ErrnoException): { code: number; text: string } {
  switch (e.code) {
    case 'ECONNREFUSED': return { code: 111, text: 'Connection refused' };
    case 'ECONNRESET': return { code: 104, text: 'Connection reset by peer' };
    case 'EHOSTUNREACH': return { code: 113, text: 'No route to host' };
    case 'ENETUNREACH': return { code: 101, text: 'Network is unreachable' };
    case 'ETIMEDOUT': return { code: 110, text: 'Connection timed out' };
    default: return { code: 70007, text: 'The timeout specified has expired' };
  }
}

/** hc_get_backend + ap_proxy_connect_backend: a connected socket (TLS for https/wss members
 *  through mod_ssl), or the status of the failure (logged as httpd does). */
async function connect(ck: Checker, s: ServerRec, fn: string, hc: HcWorker): Promise<net.Socket | number> {
  const w = hc.worker;
  const tls = w.s.scheme === 'https' || w.s.scheme === 'wss';
  const ssl = tls ? ck.ctx.provider('ssl_proxy', 'ssl') : undefined;
  if (tls && ssl === undefined) {
    log(s, APLOG_WARNING, 'AH03252: mod_ssl not configured?');
    return NOT_OK;
  }
  log(s, APLOG_DEBUG, `AH00942: ${fn}: has acquired connection for (${w.s.hostname}:${hc.port})`, undefined, 'proxy');
  const { connect: connTimeout } = timeouts(ck, s, w);
  const host = w.s.hostname;
  const addr = w.s.udsPath !== '' ? w.s.udsPath : `${host.includes(':') ? `[${host}]` : host}:${hc.port}`;
  const sock = await new Promise<net.Socket | NodeJS.ErrnoException>((resolve) => {
    const so = net.connect(w.s.udsPath !== '' ? { path: w.s.udsPath } : { host, port: hc.port });
    const timer = setTimeout(() => {
      so.destroy();
      const e: NodeJS.ErrnoException = new Error('timeout');
      e.code = 'TIMEOUT';
      resolve(e);
    }, connTimeout);
    so.once('error', (e) => { clearTimeout(timer); so.destroy(); resolve(e); });
    so.once('connect', () => { clearTimeout(timer); so.removeAllListeners('error'); resolve(so); });
  });
  if (!(sock instanceof net.Socket)) {
    if (sock.code === 'ENOTFOUND' || sock.code === 'EAI_AGAIN') {
      log(s, APLOG_DEBUG, `AH03249: DNS lookup failure for: ${host}:${hc.port}`);
      return NOT_OK;
    }
    log(s, APLOG_ERR, `AH00957: ${fn}: attempt to connect to ${addr} (${host}:${hc.port}) failed`, errnoOf(sock), 'proxy');
    // httpd looks the address up again after a failed connect.
    log(s, APLOG_DEBUG, `AH10480: ${fn}: ${host} resolved to ${host.includes(':') ? `[${host}]` : host}:${hc.port}`, undefined, 'proxy');
    hc.resolved = true;
    // ap_proxy_connect_backend's DECLINED.
    return -1;
  }
  sock.setNoDelay(true);
  const peer = w.s.udsPath !== '' ? w.s.udsPath : `${sock.remoteAddress ?? host}:${sock.remotePort ?? hc.port}`;
  if (!hc.resolved) {
    hc.resolved = true;
    log(s, APLOG_DEBUG, `AH10480: ${fn}: ${host} resolved to ${peer}`, undefined, 'proxy');
  }
  log(s, APLOG_DEBUG, `AH02824: ${fn}: connection established with ${peer} (${host}:${hc.port})`, undefined, 'proxy');
  // ap_proxy_connection_create_ex: the HTTP checks only.
  if (fn === 'HCOH') log(s, APLOG_DEBUG, `AH00962: ${fn}: connection complete to ${peer} (${host})`, undefined, 'proxy');
  if (ssl === undefined) return sock;
  try {
    return await ssl.connect(s, sock, host);
  } catch (e) {
    log(s, APLOG_ERR, `AH00957: ${fn}: attempt to connect to ${addr} (${host}:${hc.port}) failed`, { code: 70007, text: (e as Error).message }, 'proxy');
    sock.destroy();
    return NOT_OK;
  }
}

/** backend_cleanup: closes the connection and logs the outcome (AH03251). */
function cleanupBackend(s: ServerRec, fn: string, hc: HcWorker, sock: net.Socket | undefined, status: number): boolean {
  if (sock !== undefined) {
    sock.destroy();
  }
  log(s, APLOG_DEBUG, `AH00943: ${fn}: has released connection for (${hc.worker.s.hostname}:${hc.port})`, undefined, 'proxy');
  log(s, APLOG_DEBUG, `AH03251: Health check ${hc.method} Status (${status}) for ${hc.id}.`);
  return status === OK;
}

async function checkTcp(ck: Checker, s: ServerRec, hc: HcWorker): Promise<boolean> {
  const sock = await connect(ck, s, 'HCTCP', hc);
  if (typeof sock === 'number') return cleanupBackend(s, 'HCTCP', hc, undefined, sock);
  return cleanupBackend(s, 'HCTCP', hc, sock, OK);
}

/** The check's answer, for ProxyHCExpr: its fake request carries the status and headers;
 *  its body is kept here (hc('body')). */
const bodies = new WeakMap<Request, Buffer>();

const NO_WIRE: Wire = {
  write: () => true, drain: () => Promise.resolve(), sendFile: () => Promise.resolve(), cork: () => undefined, uncork: () => undefined, destroyed: true,
};

/** create_request_rec: a request that never ran, for ap_expr. */
function fakeRequest(ck: Checker, s: ServerRec, sock: net.Socket, method: string, protocol: string): Request {
  ck.rt ??= new Runtime(ck.ctx);
  const conn: ConnRec = {
    id: 0, wire: NO_WIRE, remoteIp: sock.remoteAddress ?? '', remotePort: sock.remotePort ?? 0, localIp: sock.localAddress ?? '',
    localPort: sock.localPort ?? 0, keepalives: 0, keepAlive: false, aborted: false, remoteHost: undefined, bytesIn: 0, bytesOut: 0,
    notes: new Map(), baseServer: s, connConfig: [],
  };
  const r = new Request(ck.rt, conn, s);
  r.perDirConfig = s.lookupDefaults;
  r.logLevel = s.logLevel;
  r.method = method;
  r.headerOnly = method === 'OPTIONS' || method === 'HEAD';
  r.protocol = protocol;
  r.protoNum = protocol === 'HTTP/1.1' ? 1001 : 1000;
  r.requestTime = Date.now();
  return r;
}

/** hc_read_headers: the status line and the header fields; false when the answer is not HTTP/1.x. */
async function readHeaders(s: ServerRec, c: HcConn, r: Request, timeout: number): Promise<boolean> {
  const first = await c.line(timeout);
  if (first === undefined || first.length === 0) return false;
  log(s, APLOG_DEBUG, `AH03254: ${first}`);
  if (!/^HTTP\/\d\.\d \d\d\d/.test(first)) return false;
  if (first[5] !== '1' || first.length >= HUGE_STRING_LEN - 1) return false;
  r.status = atoi(first.slice(9, 12));
  r.statusLine = first.length > 12 ? first.slice(9) : `${first.slice(9, 12)} `;
  for (;;) {
    const line = await c.line(timeout);
    if (line === undefined || line.length === 0) break;
    if (wants(s, APLOG_TRACE7)) log(s, APLOG_TRACE7, line);
    const colon = line.indexOf(':');
    if (colon < 0) return false;
    r.headersOut.add(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  const ct = r.headersOut.get('Content-Type');
  if (ct !== undefined) r.contentType = ct;
  return true;
}

/** hc_read_body: the body as the response's framing says (chunked, Content-Length, or up to
 *  the end of the connection); false on a read error. */
async function readBody(s: ServerRec, c: HcConn, r: Request, timeout: number): Promise<boolean> {
  const parts: Buffer[] = [];
  const te = r.headersOut.get('Transfer-Encoding');
  const cl = r.headersOut.get('Content-Length');
  const fail = (): boolean => { log(s, APLOG_DEBUG, 'AH03300: Error reading response body', { code: 70007, text: 'The timeout specified has expired' }); return false; };
  if (te !== undefined && /chunked/i.test(te)) {
    for (;;) {
      const size = await c.line(timeout);
      if (size === undefined) return fail();
      const n = Number.parseInt(size, 16);
      if (!Number.isFinite(n) || n < 0) return fail();
      if (n === 0) {
        for (;;) { const t = await c.line(timeout); if (t === undefined || t === '') break; }
        break;
      }
      let left = n;
      while (left > 0) {
        const b = await c.read(left, timeout);
        if (b === undefined || b === null) return fail();
        parts.push(b);
        left -= b.length;
      }
      await c.line(timeout);
    }
  } else if (cl !== undefined) {
    let left = Number(cl);
    while (left > 0) {
      const b = await c.read(left, timeout);
      if (b === undefined || b === null) return fail();
      parts.push(b);
      left -= b.length;
    }
  } else {
    for (;;) {
      const b = await c.read(65536, timeout);
      if (b === null) break;
      if (b === undefined) return fail();
      parts.push(b);
    }
  }
  bodies.set(r, Buffer.concat(parts));
  return true;
}

/** hc_check_http: the request, the answer, then the member's ProxyHCExpr or a 2xx/3xx status. */
async function checkHttp(ck: Checker, s: ServerRec, hc: HcWorker, conf: HcServerConf): Promise<boolean | 'enotimpl'> {
  const w = hc.worker;
  if (hc.req === undefined || hc.httpMethod === undefined) return 'enotimpl';
  const sock = await connect(ck, s, 'HCOH', hc);
  if (typeof sock === 'number') return cleanupBackend(s, 'HCOH', hc, undefined, sock);
  const { io } = timeouts(ck, s, w);
  const c = new HcConn(sock);
  const r = fakeRequest(ck, s, sock, hc.httpMethod, hc.protocol);
  if (wants(s, APLOG_TRACE7)) log(s, APLOG_TRACE7, hc.req);
  if (sock.destroyed || !sock.writable) return cleanupBackend(s, 'HCOH', hc, sock, NOT_OK);
  sock.write(hc.req);
  if (!(await readHeaders(s, c, r, io))) return cleanupBackend(s, 'HCOH', hc, sock, NOT_OK);
  if (!r.headerOnly && !(await readBody(s, c, r, io))) return cleanupBackend(s, 'HCOH', hc, sock, NOT_OK);
  let status = OK;
  const cond = w.s.hcexpr !== '' ? conf.conditions.get(w.s.hcexpr) : undefined;
  if (cond !== undefined) {
    let v = evalBool(cond.pexpr, r);
    if (v instanceof Promise) v = await v;
    if (isFailure(v)) {
      log(s, APLOG_INFO, `AH03301: Error on checking condition ${w.s.hcexpr} for ${hc.id} (${w.s.name}): ${v.error}`);
      status = NOT_OK;
    } else if (v) {
      log(s, APLOG_TRACE2, `Condition ${w.s.hcexpr} for ${hc.id} (${w.s.name}): passed`);
    } else {
      log(s, APLOG_TRACE2, `Condition ${w.s.hcexpr} for ${hc.id} (${w.s.name}) : failed`);
      status = NOT_OK;
    }
  } else if (r.status < 200 || r.status > 399) {
    log(s, APLOG_TRACE2, `Response status ${r.status} for ${hc.id} (${w.s.name}): failed`);
    status = NOT_OK;
  }
  return cleanupBackend(s, 'HCOH', hc, sock, status);
}

/** hc_check: one check of one member, and what it changes in the member's state. */
async function hcCheck(ck: Checker, s: ServerRec, conf: HcServerConf, hc: HcWorker, threaded: boolean): Promise<void> {
  const w = hc.worker;
  const th = threaded ? 'Threaded ' : '';
  log(s, APLOG_DEBUG, `AH03256: ${th}Health checking ${w.s.name}`);
  let rv: boolean | 'enotimpl';
  try {
    rv = hc.method === 'TCP' ? await checkTcp(ck, s, hc) : await checkHttp(ck, s, hc, conf);
  } catch {
    rv = false;
  }
  const now = Date.now();
  if (rv === 'enotimpl') {
    log(s, APLOG_ERR, `AH03257: Somehow tried to use unimplemented hcheck method: ${METHODS.find((m) => m.name === hc.method)?.n ?? 0}`);
  } else if ((w.s.status & (PROXY_WORKER_HC_FAIL | PROXY_WORKER_IN_ERROR)) !== 0) {
    if (rv) {
      w.s.pcount += 1;
      if (w.s.pcount >= w.s.passes) {
        w.s.status &= ~(PROXY_WORKER_HC_FAIL | PROXY_WORKER_IN_ERROR);
        w.s.pcount = 0;
        log(s, APLOG_INFO, `AH03302: ${th}Health check ENABLING ${w.s.name}`);
      }
    }
  } else if (!rv) {
    w.s.errorTime = now;
    w.s.fcount += 1;
    if (w.s.fcount >= w.s.fails) {
      w.s.status |= PROXY_WORKER_HC_FAIL;
      w.s.fcount = 0;
      log(s, APLOG_INFO, `AH03303: ${th}Health check DISABLING ${w.s.name}`);
    }
  }
  w.s.updated = now;
}

/** Runs queued checks, at most tpsize at once (the thread pool). */
function pump(ck: Checker): void {
  while (ck.running < ck.tpsize && ck.queue.length > 0) {
    const job = ck.queue.shift()!;
    ck.running++;
    void job().finally(() => { ck.running--; pump(ck); });
  }
}

/** hc_watchdog_callback for one server. */
function callbackFor(ck: Checker, s: ServerRec, conf: HcServerConf): (state: WatchdogState) => void | Promise<void> {
  return (state) => {
    switch (state) {
      case 'starting':
        log(s, APLOG_DEBUG, `AH03258: ${WATCHDOG_NAME} watchdog started.`);
        if (ck.tpsize > 0) log(s, APLOG_DEBUG, `AH03313: apr_thread_pool_create() with ${ck.tpsize} threads succeeded`);
        else log(s, APLOG_DEBUG, 'AH03314: Skipping apr_thread_pool_create()');
        return undefined;
      case 'stopping':
        log(s, APLOG_DEBUG, `AH03261: stopping ${WATCHDOG_NAME} watchdog.`);
        return undefined;
      case 'running':
        return runChecks(ck, s, conf);
    }
  };
}

function runChecks(ck: Checker, s: ServerRec, conf: HcServerConf): void | Promise<void> {
  const api = ck.ctx.provider('proxy_api', 'mod_proxy');
  if (api === undefined) return undefined;
  const pconf = api.serverConf(s);
  const sync = ck.ctx.provider('proxy_balancer', 'balancer')?.sync;
  const threaded = ck.tpsize > 0;
  /** One member's turn: due for a check? Then its hc worker, and the check (queued to the
   *  pool, or run here and waited for without one). */
  const turn = (b: (typeof pconf.balancers)[number], w: ProxyWorker, now: number): Promise<void> | undefined => {
    if ((w.s.status & PROXY_WORKER_STOPPED) !== 0 || w.s.method === 'NONE' || w.s.updated === 0 || !(now > w.s.updated + w.s.interval)) return undefined;
    if (wants(s, APLOG_TRACE3)) {
      log(s, APLOG_TRACE3, `Checking ${b.s.name} worker: ${w.s.name}  [${METHODS.find((m) => m.name === w.s.method)?.n ?? 0}] (${idOf(w)})`);
    }
    const hc = hcWorkerOf(ck, s, w);
    w.s.updated = 0;
    if (!threaded) return hcCheck(ck, s, conf, hc, false);
    ck.queue.push(() => hcCheck(ck, s, conf, hc, true));
    pump(ck);
    return undefined;
  };
  if (threaded) {
    for (const b of pconf.balancers) {
      sync?.(b, ck.ctx, s);
      const now = Date.now();
      for (const w of b.workers) turn(b, w, now);
    }
    return undefined;
  }
  // No thread pool: the checks run one after the other in the watchdog.
  return (async () => {
    for (const b of pconf.balancers) {
      sync?.(b, ck.ctx, s);
      const now = Date.now();
      for (const w of b.workers) await turn(b, w, now);
    }
  })();
}

// ---- post_config: the watchdog -------------------------------------------------------------------

function postConfig(ctx: ConfigContext): string | undefined {
  if (ctx.preflight) return undefined;
  const wd = ctx.provider('watchdog', 'mod_watchdog');
  if (wd === undefined) {
    log(ctx.mainServer, 2, 'AH03262: mod_watchdog is required');
    return 'AH03262: mod_watchdog is required';
  }
  const inst: Watchdog | 'enotimpl' = wd.getInstance(ctx, WATCHDOG_NAME, false, true);
  if (inst === 'enotimpl') {
    log(ctx.mainServer, 2, `AH03263: Failed to create watchdog instance (${WATCHDOG_NAME})`);
    return `AH03263: Failed to create watchdog instance (${WATCHDOG_NAME})`;
  }
  const main = mod.server(ctx.mainServer);
  const ck: Checker = { ctx, hcworkers: new Map(), rt: undefined, running: 0, queue: [], tpsize: main.tpsize ?? DEFAULT_TPSIZE };
  for (const s of [ctx.mainServer, ...ctx.vhosts]) {
    const conf = mod.server(s);
    if (conf.s !== s) {
      log(s, APLOG_TRACE4, `AH10019: Missing unique per-server context: ${s.serverHostname ?? ''} (no hchecks)`);
      continue;
    }
    wd.registerCallback(inst, WD_TM_SLICE, conf, callbackFor(ck, s, conf));
    // The workers register too (each may be the one to run the checks); the parent's lines suffice.
    if (!ctx.child) log(s, APLOG_DEBUG, `AH03265: watchdog callback registered (${WATCHDOG_NAME} for ${s.serverHostname ?? ''})`);
  }
  return undefined;
}

// ---- the balancer-manager's parts and the worker parameters ----------------------------------------

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const display: ProxyHcDisplay = {
  showExprs(r) {
    const conf = mod.server(r.server);
    if (conf.conditions.size === 0) return '';
    let out = "\n\n<table><tr><th colspan='2'>Health check cond. expressions:</th></tr>\n<tr><th>Expr name</th><th>Expression</th></tr>\n";
    for (const [name, cond] of conf.conditions) out += `<tr><td>${escapeHtml(name)}</td><td>${escapeHtml(cond.expr)}</td></tr>\n`;
    return `${out}</table><hr/>\n`;
  },
  selectExprs(r, current) {
    let out = '';
    for (const name of mod.server(r.server).conditions.keys()) {
      out += `<option value='${escapeHtml(name)}' ${name === current ? 'selected' : ''} >${escapeHtml(name)}</option>\n`;
    }
    return out;
  },
  validExpr(r, name) {
    return mod.server(r.server).conditions.has(name);
  },
};

const params: ProxyWorkerParamProvider = {
  set(_ctx, s, worker, key, value) {
    return setHcParam(mod.server(s), worker, undefined, key, value);
  },
};

/** hc() and %{HC_BODY}: the body of the check's answer. */
function hcBody(st: EvalState, name: string): string {
  if (name.toUpperCase() !== 'BODY') return '';
  return bodies.get(st.r)?.toString('latin1') ?? '';
}

const mod = defineModule<HcServerConf, undefined>({
  name: 'proxy_hcheck_module',
  source: 'mod_proxy_hcheck.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: (s) => ({ s, templates: [], conditions: new Map(), tpsize: undefined }),
  directives: [
    directive({ name: 'ProxyHCTemplate', args: 'RAW_ARGS', where: OR_FILEINFO, help: 'Health check template', handler: setHcTemplate }),
    directive({ name: 'ProxyHCExpr', args: 'RAW_ARGS', where: OR_FILEINFO, help: 'Define a health check condition ruleset expression', handler: setHcCondition }),
    directive({ name: 'ProxyHCTPsize', args: 'TAKE1', where: RSRC_CONF, help: 'Set size of health check thread pool', handler: setHcTpsize }),
  ],
  providers: [
    { group: 'proxy_worker_param', name: 'hcheck', version: '0', provider: params },
    { group: 'proxy_hc', name: 'hcheck', version: '0', provider: display },
    {
      group: 'expr', name: 'proxy_hcheck', version: '0', provider: {
        variables: { HC_BODY: (st) => hcBody(st, 'BODY') },
        functions: { hc: { fn: hcBody } },
      },
    },
  ],
  configHooks: { postConfig },
});
export default mod;

