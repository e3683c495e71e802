// Starting a configuration as httpd does: bind the Listen addresses, open the error logs,
// run the post-config hooks (which log to the error log from then on), write the PidFile,
// drop privileges, serve. A graceful restart reads the configuration again and swaps it in
// only if it is valid; a broken one is logged and the old one keeps serving.

import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { ConfigContext } from './config/context.js';
import { Runtime } from './runtime.js';
import { HttpConnection } from './http/connection.js';
import { ErrorLog } from './log/error-log.js';
import { openLogTarget, setLoggerStderr, type LogSink } from './log/log-writer.js';
import { compileErrorLogFormat } from './log/error-log-format.js';
import { coreServer } from './core/config.js';
import { globals, type ListenSpec } from './core/globals.js';
import { StartupError } from './config/errors.js';
import { postConfigure } from './config/build.js';
import { DEFAULT_LOG_LEVEL, APLOG_NOTICE } from './log/levels.js';
import { APACHE_COMPAT_VERSION, PLUME_VERSION } from './version.js';
import { acceptSharedReads } from './http/accept.js';
import { acceptThroughLayers } from './http/connection-layer.js';
import type { Transport } from './http/tcp-stream.js';
import { Roster, RosterEntry } from '../lib/roster.js';

export interface RunningServer {
  readonly ctx: ConfigContext;
  rt: Runtime;
  close(): Promise<void>;
}

/** Opens every server's ErrorLog (the main server's default: logs/error_log). */
export function openErrorLogs(ctx: ConfigContext): void {
  const sinks = new Map<string, LogSink>();
  const open = (spec: string): LogSink => {
    let s = sinks.get(spec);
    if (!s) {
      try {
        s = openLogTarget(spec, (p) => ctx.serverRootRelative(p));
      } catch (e) {
        const code = (e as { code?: string }).code;
        const errno = code === 'ENOENT' ? '(2)No such file or directory' : code === 'EACCES' ? '(13)Permission denied' : `(${code})`;
        throw new StartupError(`${errno}: AH00091: ${ctx.argv0}: could not open error log file ${ctx.serverRootRelative(spec)}.\nAH00015: Unable to open logs`);
      }
      sinks.set(spec, s);
    }
    return s;
  };
  const main = ctx.mainServer;
  const mainSpec = main.errorLogSpec ?? 'logs/error_log';
  const fmt = (s: typeof main): ErrorLog => {
    const sink = open(s.errorLogSpec ?? mainSpec);
    const f = coreServer(s).errorLogFormat;
    if (f !== undefined) {
      const c = compileErrorLogFormat(f);
      if (typeof c !== 'string') return new ErrorLog(sink, c);
    }
    return new ErrorLog(sink);
  };
  // A piped main ErrorLog's program writes its stderr to our stdout; every logger started
  // after it (virtual hosts' pipes, CustomLog pipes) into the main error log (httpd's order).
  setLoggerStderr(undefined);
  main.errorLog = fmt(main);
  setLoggerStderr(main.errorLog.sink);
  main.logLevel ??= DEFAULT_LOG_LEVEL;
  for (const v of ctx.vhosts) {
    v.errorLog = v.errorLogSpec !== undefined || coreServer(v).errorLogFormat !== coreServer(main).errorLogFormat ? fmt(v) : main.errorLog;
    v.logLevel ??= main.logLevel;
  }
  ctx.startupLog = main.errorLog;
  // Every sink was opened by now: keep them to close with closeErrorLogs().
  const kept = ctx.getScratch<LogSink[]>('core:errorLogSinks', () => []);
  for (const sink of sinks.values()) if (!kept.includes(sink)) kept.push(sink);
}

/** Closes the error logs openErrorLogs() opened (after flushing what they hold). */
export function closeErrorLogs(ctx: ConfigContext): void {
  const kept = ctx.getScratch<LogSink[]>('core:errorLogSinks', () => []);
  for (const sink of kept.splice(0)) sink.close();
}

/** The listening sockets: bound once at startup, handed to the configuration that serves. */
export class Listeners {
  private handler: ((sock: Transport) => void) | undefined;
  /** Connections accepted before a configuration serves them (while it is being read). */
  private waiting: Transport[] = [];
  private closed = false;
  constructor(readonly servers: net.Server[]) {}
  /** Where accepted connections go from now on (the serving configuration). */
  set onConnection(fn: (sock: Transport) => void) {
    this.handler = fn;
    for (const sock of this.waiting.splice(0)) if (!sock.destroyed) fn(sock);
  }
  accept(sock: Transport): void {
    if (this.handler) this.handler(sock);
    else this.waiting.push(sock);
  }
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    for (const sock of this.waiting.splice(0)) sock.destroy();
    return Promise.all(this.servers.map((l) => new Promise<void>((res) => l.close(() => res())))).then(() => undefined);
  }
}

/** Binds every Listen address (httpd's ap_setup_listeners); errors go to stderr. */
export async function bindListeners(ctx: ConfigContext): Promise<Listeners> {
  const l = new Listeners([]);
  const servers = await bindAll(ctx, globals(ctx).listeners, (sock) => l.accept(sock));
  l.servers.push(...servers);
  return l;
}

function bindAll(ctx: ConfigContext, specs: readonly ListenSpec[], onConn: (s: Transport) => void): Promise<net.Server[]> {
  const servers: net.Server[] = [];
  return new Promise((resolve, reject) => {
    let pending = specs.length;
    if (pending === 0) {
      reject(new StartupError(`AH00526: Syntax error: no listening sockets available, shutting down\nAH00015: Unable to open logs`));
      return;
    }
    for (const l of specs) {
      const srv = net.createServer({ noDelay: true }, onConn);
      srv.on('error', (e: NodeJS.ErrnoException) => {
        const addr = `${l.host ?? '0.0.0.0'}:${l.port}`;
        const errno = e.code === 'EADDRINUSE' ? '(98)Address already in use' : e.code === 'EACCES' ? '(13)Permission denied' : e.code === 'EADDRNOTAVAIL' ? '(99)Cannot assign requested address' : `(${e.code})`;
        for (const s of servers) s.close();
        reject(new StartupError(`${errno}: AH00072: make_sock: could not bind to address ${addr}\nno listening sockets available, shutting down\nAH00015: Unable to open logs`));
      });
      srv.listen({ port: l.port, host: l.host, backlog: globals(ctx).listenBacklog, exclusive: false }, () => {
        // A connection layer may need net.Sockets (connection-layer.ts): the single process,
        // whose listeners outlive configurations, accepts TcpStreams only where every loaded
        // layer takes them (mod_ssl's does).
        if (ctx.providerNames('connection_layer').every((n) => ctx.provider('connection_layer', n)?.streams === true)) acceptSharedReads(srv, onConn);
        servers.push(srv);
        if (--pending === 0) resolve(servers);
      });
    }
  });
}

/** The process that last wrote a PidFile (httpd's ap_log_pid saved_pid): a restart rewrites
 *  the file without calling the one it finds there a leftover. */
let savedPid = -1;

/** Writes the PidFile through a temporary file and a rename (never a half-written file), at
 *  startup and on every restart, as httpd's MPMs do (ap_log_pid in each generation). */
export function writePidFile(ctx: ConfigContext): string | undefined {
  const spec = globals(ctx).pidFile ?? 'logs/httpd.pid';
  const file = ctx.serverRootRelative(spec);
  try {
    if (fs.existsSync(file) && savedPid !== process.pid) {
      ctx.log('core', 4, `AH00098: pid file ${file} overwritten -- Unclean shutdown of previous Apache run?`);
    }
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${process.pid}\n`);
    fs.renameSync(tmp, file);
    savedPid = process.pid;
    return file;
  } catch (e) {
    ctx.log('core', 3, `AH00099: could not create ${file}`);
    ctx.log('core', 3, `AH00100: ${ctx.argv0}: could not log pid to file ${file}`);
    return undefined;
  }
}

/** An open connection's socket, for close() (src/lib/roster.ts: why not a Set). */
class OpenSocket extends RosterEntry {
  /** Set once the connection is served (not waiting for a free worker). */
  conn: HttpConnection | null = null;
  served = false;
  constructor(readonly sock: Transport) { super(); }
}

export interface StartOptions {
  writePid: boolean;
  dropPrivileges?: (ctx: ConfigContext) => void;
  /** Listeners bound already (at startup); bound here when not given. */
  listeners?: Listeners;
  /** One process serving (-X): at most `limit` connections served at once, as httpd's single
   *  process has one (prefork) or ThreadsPerChild (threaded MPMs) workers; the others wait,
   *  accepted but unread. `asyncIdle`: connections waiting for a next request or closing do
   *  not hold a worker (the event MPM). */
  concurrency?: { readonly limit: number; readonly asyncIdle: boolean };
}

/** How often a full single process looks again for a connection gone idle (event MPM). */
const IDLE_POLL_MS = 50;

export async function startServer(ctx: ConfigContext, opts: StartOptions): Promise<RunningServer> {
  const listeners = opts.listeners ?? await bindListeners(ctx);
  try {
    openErrorLogs(ctx);
  } catch (e) {
    await listeners.close();
    throw e;
  }
  const failed = await postConfigure(ctx);
  if (failed !== undefined) {
    await listeners.close();
    throw new StartupError(failed);
  }
  const rt = new Runtime(ctx);
  const conns = new Roster<OpenSocket>();
  const pidFile = opts.writePid ? writePidFile(ctx) : undefined;
  opts.dropPrivileges?.(ctx);
  for (const m of ctx.loaded) await m.decl.configHooks?.childInit?.(ctx);
  ctx.log('mpm_event', APLOG_NOTICE, `AH00489: Apache/${APACHE_COMPAT_VERSION} (Unix) plume/${PLUME_VERSION} configured -- resuming normal operations`);
  // Everything startup wrote is in the error log before the first request is served.
  for (const sink of ctx.getScratch<LogSink[]>('core:errorLogSinks', () => [])) sink.flush();
  const running: RunningServer = {
    ctx,
    rt,
    async close(): Promise<void> {
      await listeners.close();
      for (const o of conns.members()) o.sock.destroy();
      if (pidFile) { try { fs.unlinkSync(pidFile); } catch { /* gone */ } }
      for (const m of ctx.loaded) await m.decl.configHooks?.cleanup?.(ctx);
    },
  };
  const serve = (open: OpenSocket): void => {
    open.served = true;
    // TLS (mod_ssl) runs below HTTP: the connection is served once its handshake is done.
    acceptThroughLayers(running.rt, open.sock, (sock, init) => {
      const conn = new HttpConnection(sock, running.rt);
      open.conn = conn;
      init?.(conn);
    });
  };
  const gate = opts.concurrency;
  if (gate === undefined) {
    listeners.onConnection = (raw) => {
      const open = new OpenSocket(raw);
      conns.add(open);
      raw.on('close', () => conns.remove(open));
      serve(open);
    };
    return running;
  }
  const waiting: OpenSocket[] = [];
  let poll: NodeJS.Timeout | null = null;
  const busy = (): number => conns.count((o) => o.served && !(gate.asyncIdle && o.conn !== null && (o.conn.idleKeepAlive || o.conn.lingering)));
  const admit = (): void => {
    while (waiting.length > 0 && busy() < gate.limit) {
      const next = waiting.shift()!;
      if (!next.sock.destroyed) serve(next);
    }
    if (waiting.length > 0 && gate.asyncIdle && poll === null) poll = setInterval(admit, IDLE_POLL_MS);
    else if (waiting.length === 0 && poll !== null) { clearInterval(poll); poll = null; }
  };
  listeners.onConnection = (raw) => {
    const open = new OpenSocket(raw);
    conns.add(open);
    raw.on('close', () => {
      conns.remove(open);
      const i = waiting.indexOf(open);
      if (i >= 0) waiting.splice(i, 1);
      admit();
    });
    waiting.push(open);
    admit();
  };
  const close = running.close;
  running.close = async () => {
    if (poll !== null) { clearInterval(poll); poll = null; }
    await close();
  };
  return running;
}
