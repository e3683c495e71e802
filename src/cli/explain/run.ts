// `plume explain`, the run: reads the configuration with the server's own reader, builds a
// Request on an in-memory connection, and runs the server's lifecycle (processRequestInternal:
// walks, access checker, authentication, authorization, fixups) with a trace recorder on the
// request and every error log pointed at memory. Nothing is served, nothing is written.

import * as path from 'node:path';
import { loadConfiguration, cleanupConfiguration } from '../../server/config/build.js';
import type { ConfigContext, ConfigOptions } from '../../server/config/context.js';
import { catalogue } from '../../modules/index.js';
import { Runtime } from '../../server/runtime.js';
import { Request, type ConnRec, type ExplainTrace, type TraceEvents } from '../../server/request/request.js';
import { invokeHandler, processRequestInternal, redirectRequest } from '../../server/request/lifecycle.js';
import type { Wire } from '../../server/http/wire.js';
import type { ServerRec } from '../../server/server-rec.js';
import { ErrorLog } from '../../server/log/error-log.js';
import type { LogSink } from '../../server/log/log-writer.js';
import { compileErrorLogFormat } from '../../server/log/error-log-format.js';
import { DEFAULT_LOG_LEVEL } from '../../server/log/levels.js';
import { nowMicros } from '../../server/log/time.js';
import { coreServer } from '../../server/core/core-module.js';
import { globals } from '../../server/core/globals.js';
import { newRequestTarget, parseRequestLine, fixHostname, isHttpScheme } from '../../server/http/protocol.js';
import { decodeUrlPath } from '../../server/http/uri.js';
import { runAll } from '../../server/hooks.js';
import { DONE, OK } from '../../server/module.js';

/** What to explain: the command line's request. */
export interface ExplainRequest {
  readonly serverRoot: string;
  readonly configFile: string;
  readonly defines: readonly string[];
  readonly preDirectives: readonly string[];
  readonly postDirectives: readonly string[];
  readonly url: string;
  readonly method: string;
  readonly clientIp: string;
  readonly clientPort: number;
  /** Address the request arrived on; default: the URL's host when it is an address, else the
   *  Listen address for the URL's port, else 127.0.0.1. */
  readonly localIp: string | undefined;
  readonly user: string | undefined;
  readonly password: string | undefined;
  readonly headers: readonly (readonly [string, string])[];
}

/** One recorded event, in order. */
export type TraceEntry = { [K in keyof TraceEvents]: { readonly kind: K; readonly event: TraceEvents[K] } }[keyof TraceEvents];

/** The run's outcome, for the report. */
export interface ExplainRun {
  readonly ctx: ConfigContext;
  readonly r: Request;
  /** OK (the handler would run next) or the HTTP status the request ends with. */
  readonly status: number;
  /** The decoded URL path the lifecycle started from (a fixup such as mod_dir's may have
   *  replaced r.uri by a subrequest's since). */
  readonly uri: string;
  /** Where the request stopped before the lifecycle (bad request line, URL or Host). */
  readonly stage: 'lifecycle' | 'request';
  /** Access granted: what the handler phase did — the status it ends with, or, for a handler
   *  explain does not run (one that would reach other servers or programs), its name. */
  readonly handler: { readonly status: number } | { readonly notRun: string } | undefined;
  readonly events: readonly TraceEntry[];
  /** Error-log lines the request made (the server's own format, in memory). */
  readonly errorLog: readonly string[];
  /** Startup messages given while reading the configuration. */
  readonly startup: readonly string[];
}

/** A log target that keeps its lines. */
class MemorySink implements LogSink {
  readonly lines: string[] = [];
  readonly description = 'memory';
  write(text: string): void {
    for (const l of text.split('\n')) if (l !== '') this.lines.push(l);
  }
  flush(): void { /* in memory */ }
  close(): void { /* in memory */ }
}

/** The connection's byte stream: explain writes nothing. */
const NO_WIRE: Wire = {
  write: () => true,
  drain: () => Promise.resolve(),
  sendFile: () => Promise.resolve(),
  cork: () => undefined,
  uncork: () => undefined,
  destroyed: false,
};

/** Every server's ErrorLog into one memory sink, each with its own ErrorLogFormat, and the
 *  LogLevel defaults openErrorLogs gives (main-server.ts). */
function memoryErrorLogs(ctx: ConfigContext, sink: LogSink): void {
  const main = ctx.mainServer;
  const logFor = (s: ServerRec): ErrorLog => {
    const f = coreServer(s).errorLogFormat;
    if (f !== undefined) {
      const c = compileErrorLogFormat(f);
      if (typeof c !== 'string') return new ErrorLog(sink, c);
    }
    return new ErrorLog(sink);
  };
  main.errorLog = logFor(main);
  main.logLevel ??= DEFAULT_LOG_LEVEL;
  for (const v of ctx.vhosts) {
    v.errorLog = coreServer(v).errorLogFormat !== coreServer(main).errorLogFormat ? logFor(v) : main.errorLog;
    v.logLevel ??= main.logLevel;
  }
}

function isIpLiteral(h: string): boolean {
  return /^[0-9.]+$/.test(h) || h.includes(':');
}

/** Reads the configuration as the server does (the same reader, the same module catalogue),
 *  then runs the modules' post-config hooks except mod_log_config's, which would open (and
 *  create, or start piped programs for) the access logs. Throws what the reader throws. */
export async function loadForExplain(req: ExplainRequest, startup: LogSink, errors: LogSink): Promise<ConfigContext> {
  const opts: ConfigOptions = {
    argv0: 'plume', serverRoot: req.serverRoot, configFile: req.configFile, defines: req.defines,
    preDirectives: req.preDirectives, postDirectives: req.postDirectives,
    requireMpm: true, documentRootCheck: true, preflight: true, startupSink: startup,
  };
  const ctx = await loadConfiguration(opts, catalogue);
  memoryErrorLogs(ctx, errors);
  for (const m of ctx.loaded) {
    if (m.decl.name === 'log_config_module') continue;
    const err = await m.decl.configHooks?.postConfig?.(ctx);
    if (typeof err === 'string') throw new Error(err);
  }
  return ctx;
}

/** Runs the request through the server's lifecycle with a trace. */
export async function runExplain(req: ExplainRequest): Promise<ExplainRun> {
  const startup = new MemorySink();
  const errors = new MemorySink();
  const ctx = await loadForExplain(req, startup, errors);
  try {
    return await runOn(ctx, req, errors, startup);
  } finally {
    await cleanupConfiguration(ctx);
  }
}

async function runOn(ctx: ConfigContext, req: ExplainRequest, errors: MemorySink, startup: MemorySink): Promise<ExplainRun> {
  const rt = new Runtime(ctx);
  const url = splitUrl(req.url, ctx.mainServer.serverHostname ?? 'localhost');
  const port = url.port;
  const host = url.hostname;
  const localIp = req.localIp ?? (isIpLiteral(host) ? host
    : globals(ctx).listeners.find((l) => l.port === port && l.host !== undefined)?.host ?? '127.0.0.1');
  const candidates = rt.vhosts.candidates(localIp, port);
  const base = candidates[0] ?? rt.mainServer;
  const conn: ConnRec = {
    id: 0, wire: NO_WIRE, remoteIp: req.clientIp, remotePort: req.clientPort, localIp, localPort: port,
    keepalives: 0, keepAlive: false, aborted: false, remoteHost: undefined, bytesIn: 0, bytesOut: 0,
    notes: new Map(), baseServer: base, connConfig: [],
  };
  const events: TraceEntry[] = [];
  const trace: ExplainTrace = {
    record(kind, event) {
      events.push({ kind, event } as TraceEntry);
    },
  };
  const r = new Request(rt, conn, base);
  r.perDirConfig = base.lookupDefaults;
  r.logLevel = base.logLevel;
  r.requestTime = Date.now();
  r.startMicros = nowMicros();
  r.trace = trace;
  let uri = '';
  let handler: ExplainRun['handler'];
  const done = (status: number, stage: ExplainRun['stage']): ExplainRun =>
    ({ ctx, r, uri, status, stage, handler, events, errorLog: errors.lines, startup: startup.lines });

  // What the connection does with a request it has read (connection.ts): the request line,
  // the headers, Host and the virtual host, post_read_request, the URL path.
  const strict = coreServer(base).strictProtocol !== false;
  const target = url.target;
  const st = parseRequestLine(r, `${req.method} ${target} HTTP/1.1`, strict, coreServer(base), newRequestTarget());
  if (st !== OK) return done(st, 'request');
  const hostHeader = url.host;
  if (!req.headers.some(([n]) => n.toLowerCase() === 'host')) r.headersIn.set('Host', hostHeader);
  for (const [n, v] of req.headers) r.headersIn.merge(n, v);
  if (req.user !== undefined) {
    const cred = Buffer.from(`${req.user}:${req.password ?? ''}`, 'latin1').toString('base64');
    r.headersIn.set('Authorization', `Basic ${cred}`);
  }
  r.headerOnly = r.method === 'HEAD';
  const hostname = fixHostname(r, r.headersIn.get('Host'), strict);
  if (hostname === undefined) return done(400, 'request');
  r.hostname = hostname;
  if (coreServer(base).strictHostCheck === true && hostname !== '') {
    const s = rt.vhosts.match(candidates, hostname, port);
    if (s === undefined) return done(400, 'request');
    r.server = s;
  } else {
    r.server = rt.vhosts.select(candidates, r.hostname, port);
  }
  r.perDirConfig = r.server.lookupDefaults;
  r.logLevel = r.server.logLevel;
  let pr = await runAll(rt.hooks.postReadRequest, r);
  if (pr === OK && r.uri !== '*' && r.uri !== '') {
    const decoded = decodeUrlPath(r.uri, r);
    if (typeof decoded === 'number') pr = decoded;
    else r.uri = decoded;
  }
  if (pr !== OK) return done(pr, 'request');
  uri = r.uri;

  // The server's own phases, in the server's own order.
  let status: number;
  let cur = r;
  for (let hops = 0; ; hops++) {
    try {
      status = await processRequestInternal(rt, cur);
    } catch (e) {
      cur.log('core', 3, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
      status = 500;
    }
    // mod_rewrite's per-directory result is served by an internal redirect from its handler:
    // followed here (the limit of 10 as the server's), the earlier passes' rewriting kept and
    // the rest of the report about the request that is served.
    if (status !== OK || cur.handler !== 'redirect-handler' || !cur.filename.startsWith('redirect:') || hops >= 10) break;
    const next = redirectRequest(rt, cur, cur.filename.slice(9) + (cur.args !== undefined ? '?' + cur.args : ''));
    next.trace = trace;
    const kept = events.filter((e) => e.kind.startsWith('rewrite_'));
    events.length = 0;
    events.push(...kept);
    cur = next;
  }
  if (status === OK) handler = await runHandler(rt, cur);
  return { ...done(status, 'lifecycle'), r: cur };
}

/** Handlers explain runs: the ones that answer from the file system and the server's own
 *  state. Others (CGI, proxies, scripts) would reach programs or other servers. */
const SAFE_HANDLERS = new Set(['default-handler', 'httpd/unix-directory', 'server-status', 'server-info', 'type-map', 'send-as-is']);

/** The handler phase, on the in-memory connection (what it writes goes nowhere). */
async function runHandler(rt: Runtime, r: Request): Promise<ExplainRun['handler']> {
  if (r.handler !== undefined && !SAFE_HANDLERS.has(r.handler)) return { notRun: r.handler };
  let st: number;
  try {
    st = await invokeHandler(rt, r);
  } catch (e) {
    r.log('core', 3, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
    st = 500;
  }
  return { status: st === OK || st === DONE ? r.status : st };
}

/** An absolute http(s) URL, or a path (then for the main server's name), split as a client
 *  would send it: the request target exactly as written. */
export function splitUrl(url: string, defaultHost: string): { host: string; hostname: string; port: number; target: string } {
  let host = defaultHost;
  let target = url;
  let https = false;
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)/.exec(url);
  if (m) {
    if (!isHttpScheme(m[1]!)) throw new Error(`not an http or https URL: ${url}`);
    https = m[1]!.toLowerCase() === 'https';
    host = m[2]!.replace(/^[^@]*@/, '');
    target = m[3] === '' ? '/' : m[3]!;
  } else if (!url.startsWith('/')) {
    throw new Error(`not a URL or an absolute path: ${url}`);
  }
  const hp = /^(\[[^\]]*\]|[^:]*)(?::([0-9]*))?$/.exec(host);
  const hostname = (hp?.[1] ?? host).replace(/^\[(.*)\]$/, '$1');
  const port = hp?.[2] !== undefined && hp[2] !== '' ? Number(hp[2]) : https ? 443 : 80;
  return { host, hostname, port, target };
}

/** ServerRoot-relative display of a path (absolute when outside it). */
export function shortPath(serverRoot: string, file: string): string {
  const rel = path.relative(serverRoot, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}
