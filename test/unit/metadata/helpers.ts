// Fixtures for the metadata module tests: a configuration read through the real directive
// machinery (server level, a section, a virtual host), and a Request on a fake runtime and
// connection whose log lines and added filters are captured.

import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import type { ServerRec } from '../../../src/server/server-rec.js';
import { ConfigContext } from '../../../src/server/config/context.js';
import { ConfigError, StartupError } from '../../../src/server/config/errors.js';
import { parseConfig } from '../../../src/server/config/tree.js';
import { SERVER_OVERRIDE, dirConfigOf, expandNodes, mergeVectors, serverConfigOf, walkNodes } from '../../../src/server/config/build.js';
import type { WalkScope } from '../../../src/server/config/cmd.js';
import { ACCESS_CONF, OR_ALL, type AnyModuleHandle, type HookRegistration, type RequestHookName } from '../../../src/server/module.js';
import { ErrorLog } from '../../../src/server/log/error-log.js';
import type { LogSink } from '../../../src/server/log/log-writer.js';
import { DEFAULT_LOG_LEVEL, levelName } from '../../../src/server/log/levels.js';
import { instantiate, insertFilter, linkChain, type Brigade, type FilterInstance, type FilterSpec } from '../../../src/server/filters.js';
import env from '../../../src/modules/metadata/mod_env.js';
import setenvif from '../../../src/modules/metadata/mod_setenvif.js';
import headers from '../../../src/modules/metadata/mod_headers.js';
import unixd from '../../../src/modules/arch/unix/mod_unixd.js';

export const MODULES: readonly AnyModuleHandle[] = [
  env as unknown as AnyModuleHandle,
  setenvif as unknown as AnyModuleHandle,
  headers as unknown as AnyModuleHandle,
  unixd as unknown as AnyModuleHandle,
];
MODULES.forEach((m, i) => { if (m.index < 0) m.index = 40 + i; });

class CaptureSink implements LogSink {
  readonly lines: string[] = [];
  readonly description = 'capture';
  write(line: string): void { this.lines.push(line.replace(/\n$/, '')); }
  flush(): void { /* nothing buffered */ }
  close(): void { /* nothing to close */ }
}

export interface Configured {
  readonly ctx: ConfigContext;
  /** The error text of the first failing directive (as httpd prints it after the
   *  "Syntax error on line N" line), or a StartupError's text. */
  readonly error: string | undefined;
  /** Startup log lines: "[module:level] message". */
  readonly log: string[];
  /** The server the directives were read in. */
  readonly server: ServerRec;
  /** The section's per-directory vector (server level: the server's lookup defaults). */
  readonly section: unknown[];
  /** The vector a request in that section gets: server defaults merged with the section. */
  readonly merged: unknown[];
}

export interface Where {
  /** Read inside a directory-like section with this path. */
  readonly path?: string;
  /** Read inside a <VirtualHost>. */
  readonly vhost?: boolean;
  /** Directives read at the main server's level first. */
  readonly serverLines?: readonly string[];
  /** Give the server(s) a log level (as LogLevel would). */
  readonly logLevel?: boolean;
}

/** Reads directives with the real lexer, argument splitting and handlers. */
export function configure(lines: readonly string[], where: Where = {}): Configured {
  const ctx = new ConfigContext({
    argv0: 'apache2', serverRoot: '/tmp', configFile: '/tmp/test.conf',
    defines: [], preDirectives: [], postDirectives: [],
  });
  const sink = new CaptureSink();
  ctx.startupLog = new ErrorLog(sink, (e) => `[${e.module}:${levelName(e.level)}] ${e.message}`);
  for (const m of MODULES) ctx.activate(m);
  const main = ctx.mainServer;
  if (where.logLevel) main.logLevel = DEFAULT_LOG_LEVEL;
  for (const m of MODULES) {
    serverConfigOf(ctx, main, m);
    dirConfigOf(main.lookupDefaults, m, undefined);
  }
  const mainScope: WalkScope = {
    server: main, vector: main.lookupDefaults, path: undefined, override: SERVER_OVERRIDE,
    overrideOpts: 0, overrideList: null, parents: [], limited: undefined, htaccess: false,
  };
  let server = main;
  if (where.vhost) {
    server = ctx.newVirtualHost('/tmp/test.conf', 1);
    if (where.logLevel) server.logLevel = DEFAULT_LOG_LEVEL;
    for (const m of MODULES) {
      serverConfigOf(ctx, server, m);
      dirConfigOf(server.lookupDefaults, m, undefined);
    }
  }
  const section: unknown[] = where.path !== undefined ? [] : server.lookupDefaults;
  const scope: WalkScope = {
    server, vector: section, path: where.path, override: where.path !== undefined ? ACCESS_CONF | OR_ALL : SERVER_OVERRIDE,
    overrideOpts: 0, overrideList: null,
    parents: [...(where.vhost ? ['<VirtualHost'] : []), ...(where.path !== undefined ? ['<Directory'] : [])],
    limited: undefined, htaccess: false,
  };
  let error: string | undefined;
  try {
    if (where.serverLines) walkNodes(ctx, expandNodes(ctx, parseConfig(where.serverLines.join('\n') + '\n', '/tmp/test.conf')), mainScope);
    walkNodes(ctx, expandNodes(ctx, parseConfig(lines.join('\n') + '\n', '/tmp/test.conf')), scope);
  } catch (e) {
    if (e instanceof ConfigError) error = e.detail;
    else if (e instanceof StartupError) error = e.text;
    else throw e;
  }
  if (where.vhost) {
    // ap_fixup_virtual_hosts: the vhost's server config merged over the main server's.
    for (const m of MODULES) {
      const base = main.moduleConfig[m.index];
      const add = server.moduleConfig[m.index];
      if (base !== undefined && add !== undefined && m.decl.mergeServerConfig) server.moduleConfig[m.index] = m.decl.mergeServerConfig(base as object, add as object);
    }
    server.lookupDefaults = mergeVectors(ctx, main.lookupDefaults, server.lookupDefaults);
  }
  const merged = where.path !== undefined ? mergeVectors(ctx, server.lookupDefaults, section) : server.lookupDefaults;
  return { ctx, error, log: sink.lines, server, section, merged };
}

/** The error a single directive line produces ('' when it is accepted). */
export function errorOf(line: string, where: Where = {}): string {
  return configure([line], where).error ?? '';
}

export interface TestRequest {
  readonly r: Request;
  /** Request log lines: "[module:level] message". */
  readonly log: string[];
}

export interface RequestSetup {
  readonly method?: string;
  readonly uri?: string;
  readonly protocol?: string;
  readonly headers?: ReadonlyArray<readonly [string, string]>;
  readonly env?: ReadonlyArray<readonly [string, string]>;
  readonly remoteIp?: string;
  readonly localIp?: string;
  readonly remoteHost?: string;
  readonly perDir?: unknown[];
}

/** A request on a fake runtime: r.log is captured, r.rt.addFilter inserts into r.outputFilters. */
export function makeRequest(c: Configured, s: RequestSetup = {}): TestRequest {
  const log: string[] = [];
  const rt = {
    logRequest: (_r: Request, module: string, level: number, message: string) => { log.push(`[${module}:${levelName(level)}] ${message}`); },
    addFilter: (r: Request, spec: FilterSpec) => { insertFilter(r.outputFilters, instantiate(spec, r)); },
    errno: () => undefined,
    ctx: c.ctx,
  } as unknown as Runtime;
  const conn = {
    id: 1, remoteIp: s.remoteIp ?? '127.0.0.1', remotePort: 40000, localIp: s.localIp ?? '127.0.0.1', localPort: 80,
    keepalives: 0, keepAlive: false, aborted: false, remoteHost: s.remoteHost, bytesIn: 0, bytesOut: 0,
    notes: new Map<string, string>(), baseServer: c.server,
  } as unknown as ConnRec;
  const r = new Request(rt, conn, c.server);
  r.method = s.method ?? 'GET';
  r.uri = s.uri ?? '/a.txt';
  r.unparsedUri = r.uri;
  r.protocol = s.protocol ?? 'HTTP/1.1';
  r.requestTime = Date.now();
  r.startMicros = r.requestTime * 1000;
  r.logLevel = { level: 15, modules: new Map() };
  for (const [k, v] of s.headers ?? []) r.headersIn.add(k, v);
  for (const [k, v] of s.env ?? []) r.subprocessEnv.set(k, v);
  r.perDirConfig = s.perDir ?? c.merged;
  return { r, log };
}

/** A module's hook function. */
export function hook(m: { decl: { hooks?: HookRegistration } }, name: RequestHookName): (r: Request) => unknown {
  const regs = m.decl.hooks?.[name];
  if (regs === undefined) throw new Error(`no ${name} hook`);
  const reg = Array.isArray(regs) ? regs[0] : regs;
  return (typeof reg === 'function' ? reg : reg.fn) as (r: Request) => unknown;
}

/** Sends one brigade through r.outputFilters to a collector; returns what arrived. */
export async function runFilters(r: Request, bb: Brigade = []): Promise<Brigade[]> {
  const out: Brigade[] = [];
  const collector: FilterSpec<null> = { name: 'COLLECT', type: 1000, init: () => null, filter: (_f, b) => { out.push(b); } };
  const chain: FilterInstance[] = [...r.outputFilters, instantiate(collector, r) as unknown as FilterInstance];
  const head = linkChain(chain)!;
  await head.spec.filter(head, bb);
  return out;
}
