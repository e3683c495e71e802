// Shared fixtures for the logger tests: configurations read through the real config reader
// (with mod_log_config and mod_logio in the catalogue), and bare Requests on a fake runtime
// and connection.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readConfiguration, type ModuleCatalogue } from '../../../src/server/config/build.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import { catalogue } from '../../../src/modules/index.js';
import type { AnyModuleHandle } from '../../../src/server/module.js';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import { ServerRec } from '../../../src/server/server-rec.js';
import { ErrorLog, formatDefault, type ErrorLogEntry } from '../../../src/server/log/error-log.js';
import type { LogSink } from '../../../src/server/log/log-writer.js';
import { levelName } from '../../../src/server/log/levels.js';
import { timeZoneChanged } from '../../../src/server/log/time.js';
import logConfig from '../../../src/modules/loggers/mod_log_config.js';
import logio from '../../../src/modules/loggers/mod_logio.js';
import { tempDir } from '../../temp.js';

const h = (m: unknown): AnyModuleHandle => m as AnyModuleHandle;
catalogue.register(h(logConfig));
catalogue.register(h(logio));
const mine = [h(logConfig), h(logio)];
export const CATALOGUE: ModuleCatalogue = {
  all: catalogue.all,
  get builtIn() {
    const b = catalogue.builtIn;
    return [...b, ...mine.filter((m) => !b.includes(m))];
  },
  find: (s) => catalogue.find(s),
  register: (m) => catalogue.register(m),
};

/** A temporary ServerRoot with a logs/ directory. */
export function tempRoot(): string {
  const dir = tempDir('plume-logs-');
  fs.mkdirSync(path.join(dir, 'logs'));
  fs.mkdirSync(path.join(dir, 'htdocs'));
  return dir;
}

/** Messages written to the startup log while the configuration was read. */
export interface Loaded {
  ctx: ConfigContext;
  root: string;
  startup: string[];
}

/** A sink that keeps the lines written to it. */
export class MemorySink implements LogSink {
  readonly lines: string[] = [];
  readonly description = 'memory';
  write(line: string): void { this.lines.push(line); }
  flush(): void {}
  close(): void {}
}

/** Reads a configuration (ServerRoot, DocumentRoot and ServerName added) in a fresh root. */
export async function load(body: string, root = tempRoot()): Promise<Loaded> {
  const res = await tryLoad(body, root);
  if (res.error !== undefined) throw new Error(res.error);
  return { ctx: res.ctx!, root, startup: res.startup };
}

export interface LoadResult {
  ctx: ConfigContext | undefined;
  /** The error text the configuration was refused with. */
  error: string | undefined;
  /** Startup-log lines (without their time stamp). */
  startup: string[];
}

export async function tryLoad(body: string, root = tempRoot()): Promise<LoadResult> {
  const file = path.join(root, 'httpd.conf');
  fs.writeFileSync(file, `ServerRoot ${root}\nDocumentRoot ${root}/htdocs\nServerName www.example.test\n${body}\n`);
  const startup: string[] = [];
  const origWrite = ErrorLog.prototype.write;
  // Startup messages go to the context's startup log (stderr): catch them instead.
  ErrorLog.prototype.write = function (this: ErrorLog, e: ErrorLogEntry): void {
    startup.push(formatDefault(e, 0).replace(/^\[[^\]]*\] /, ''));
  };
  try {
    const ctx = await readConfiguration({
      argv0: 'plume', serverRoot: root, configFile: file, defines: [], preDirectives: [], postDirectives: [],
    }, CATALOGUE);
    return { ctx, error: undefined, startup };
  } catch (e) {
    const err = e as { detail?: string; text?: string; message: string };
    return { ctx: undefined, error: err.detail ?? err.text ?? err.message, startup };
  } finally {
    ErrorLog.prototype.write = origWrite;
  }
}

/** The error text a configuration is refused with ('(no error)' if it is accepted). */
export async function configError(body: string, root?: string): Promise<string> {
  const res = await tryLoad(body, root);
  if (res.ctx) await logConfig.decl.configHooks?.cleanup?.(res.ctx);
  return res.error ?? '(no error)';
}

export interface Logged { module: string; level: string; message: string }

export interface RequestOptions {
  server?: ServerRec;
  ctx?: ConfigContext;
  useCanonicalName?: 'on' | 'off' | 'dns';
  conn?: Partial<ConnRec>;
}

/** The connection used for the measured Apache requests. */
export function makeConn(over: Partial<ConnRec> = {}): ConnRec {
  // The socket (wire) is not needed by the loggers: the record is cast.
  const c: Omit<ConnRec, 'wire'> = {
    id: 1,
    remoteIp: '127.0.0.1',
    remotePort: 50194,
    localIp: '127.0.0.1',
    localPort: 18080,
    keepalives: 0,
    keepAlive: true,
    aborted: false,
    remoteHost: undefined,
    bytesIn: 0,
    bytesOut: 0,
    notes: new Map(),
    baseServer: new ServerRec(0, false, 'test', 0),
    ...over,
    connConfig: over.connConfig ?? [],
  };
  return c as ConnRec;
}

/** A server named like the measured Apache's main server (ServerName www.example.test). */
export function makeServer(): ServerRec {
  const s = new ServerRec(0, false, 'test', 0);
  s.serverHostname = 'www.example.test';
  return s;
}

/** A bare request on a fake runtime: coreDir answers UseCanonicalName, logRequest records. */
export function makeRequest(o: RequestOptions = {}): { r: Request; logs: Logged[] } {
  const logs: Logged[] = [];
  const ucn = o.useCanonicalName;
  const rt = {
    ctx: o.ctx,
    coreDir: () => ({ useCanonicalName: ucn }),
    logRequest(_r: Request, module: string, level: number, message: string) {
      logs.push({ module, level: levelName(level), message });
    },
    addFilter: () => undefined,
  } as unknown as Runtime;
  const r = new Request(rt, makeConn(o.conn), o.server ?? makeServer());
  r.method = 'GET';
  r.protocol = 'HTTP/1.1';
  r.protoNum = 1001;
  return { r, logs };
}

/** Sets the request line and URI fields as the HTTP layer would for `line`. */
export function requestLine(r: Request, line: string, uri?: string): void {
  r.theRequest = line;
  const parts = line.split(' ');
  r.method = parts[0]!;
  r.unparsedUri = parts[1] ?? '';
  const q = r.unparsedUri.indexOf('?');
  r.uri = uri ?? (q < 0 ? r.unparsedUri : r.unparsedUri.slice(0, q));
  r.args = q < 0 ? undefined : r.unparsedUri.slice(q + 1);
  if (parts[2]) r.protocol = parts[2];
}

/** 2026-11-22 02:52:28.003920 UTC, the time of a measured request. */
export const MEASURED_MICROS = 1795315948003920;

/** Runs fn with process.env.TZ set (Node's local time follows it). */
export function withTz<T>(tz: string | undefined, fn: () => T): T {
  const old = process.env['TZ'];
  if (tz === undefined) delete process.env['TZ'];
  else process.env['TZ'] = tz;
  timeZoneChanged();
  try {
    return fn();
  } finally {
    if (old === undefined) delete process.env['TZ'];
    else process.env['TZ'] = old;
    timeZoneChanged();
  }
}

/** Reads a log file's lines (without the final newline). */
export function readLines(file: string): string[] {
  if (!fs.existsSync(file)) return [];
  const t = fs.readFileSync(file, 'latin1');
  return t === '' ? [] : t.replace(/\n$/, '').split('\n');
}

/** Waits for the batched log sinks to write (they flush on setImmediate). */
export function flushed(): Promise<void> {
  return new Promise((res) => setImmediate(() => setImmediate(res)));
}
