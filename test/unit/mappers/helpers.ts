// Test helpers for module unit tests: a configuration context, directive invocation in a
// chosen section, and requests with a fake runtime.

import * as fs from 'node:fs';
import { ConfigContext } from '../../../src/server/config/context.js';
import { CmdParms, type WalkScope } from '../../../src/server/config/cmd.js';
import { invokeWithArgs } from '../../../src/server/config/build.js';
import type { ExpandedNode } from '../../../src/server/config/tree.js';
import { ErrorLog, formatDefault } from '../../../src/server/log/error-log.js';
import type { LogSink } from '../../../src/server/log/log-writer.js';
import type { ModuleHandle, DirectiveSpec } from '../../../src/server/module.js';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import { ServerRec } from '../../../src/server/server-rec.js';
import type { FilterSpec } from '../../../src/server/filters.js';
import { instantiate, insertFilter } from '../../../src/server/filters.js';
import { APLOG_DEBUG } from '../../../src/server/log/levels.js';
import { tempDir } from '../../temp.js';

export class MemorySink implements LogSink {
  readonly lines: string[] = [];
  readonly description = 'memory';
  write(line: string): void { this.lines.push(line.replace(/\n$/, '')); }
  flush(): void {}
  close(): void {}
}

export function makeCtx(serverRoot = '/srv/plume'): { ctx: ConfigContext; log: MemorySink } {
  const ctx = new ConfigContext({
    argv0: 'plume', serverRoot, configFile: `${serverRoot}/httpd.conf`,
    defines: [], preDirectives: [], postDirectives: [],
  });
  const log = new MemorySink();
  ctx.startupLog = new ErrorLog(log, formatDefault);
  return { ctx, log };
}

let nextIndex = 0;
/** Gives a module handle a configuration index (the catalogue does it in the server). */
export function indexModule<SC, DC>(mod: ModuleHandle<SC, DC>): ModuleHandle<SC, DC> {
  if (mod.index < 0) mod.index = nextIndex++;
  return mod;
}

export interface Where {
  /** Section path (cmd->path); undefined at server level. */
  path?: string;
  /** Enclosing sections, outermost first ("<Location"...). */
  parents?: string[];
  htaccess?: boolean;
  limited?: boolean;
  line?: number;
}

/** A place to run directives: the module's server config and one section's config. */
export class Scope<SC, DC> {
  readonly srv: SC;
  readonly dir: DC;
  constructor(readonly ctx: ConfigContext, readonly mod: ModuleHandle<SC, DC>, readonly where: Where = {}, srv?: SC, readonly server = new ServerRec(0, false, '/srv/plume/httpd.conf', 0)) {
    this.srv = srv ?? (mod.decl.createServerConfig ? mod.decl.createServerConfig(this.server) : (undefined as SC));
    this.dir = mod.decl.createDirConfig!(where.path);
  }

  /** Runs one configuration line ("Name args"); returns the error text or undefined. */
  run(line: string): string | undefined {
    const sp = line.search(/\s/);
    const name = sp < 0 ? line : line.slice(0, sp);
    const args = sp < 0 ? '' : line.slice(sp).trim();
    const spec = this.mod.decl.directives!.find((d) => d.name.toLowerCase() === name.toLowerCase());
    if (!spec) throw new Error(`no directive ${name}`);
    const node: ExpandedNode = {
      name, args, file: '/srv/plume/httpd.conf', line: this.where.line ?? 7, children: undefined,
      source: { kind: 'directive', name, args, file: '/srv/plume/httpd.conf', line: this.where.line ?? 7, firstLine: this.where.line ?? 7, raw: [line] },
    };
    const scope: WalkScope = {
      server: this.server, vector: [], path: this.where.path, override: 0x7fffffff, overrideOpts: 0,
      overrideList: null, parents: this.where.parents ?? [],
      limited: this.where.limited ? { methods: new Set(['GET']), except: false } : undefined,
      htaccess: this.where.htaccess ?? false,
    };
    const cmd = new CmdParms(this.ctx, node, spec as DirectiveSpec<unknown, unknown>, scope, this.srv, this.dir, () => {});
    return invokeWithArgs(cmd, spec.name, spec.help, spec.args, args, spec.handler as never);
  }
}

export interface FakeRuntimeOptions {
  /** Answers lookupUri (ap_sub_req_lookup_uri). */
  lookup?: (r: Request, uri: string) => Request | Promise<Request>;
  filters?: FilterSpec[];
  serverName?: string;
  port?: number;
}

export interface FakeRuntime {
  rt: Runtime;
  lookups: string[];
  errorLog: MemorySink;
}

/** A runtime with just what the modules under test use. */
export function fakeRuntime(ctx: ConfigContext, opts: FakeRuntimeOptions = {}): FakeRuntime {
  const lookups: string[] = [];
  const errorLog = new MemorySink();
  const filters = new Map((opts.filters ?? []).map((f) => [f.name.toLowerCase(), f]));
  const rt = {
    ctx,
    lookupUri: async (r: Request, uri: string) => {
      lookups.push(uri);
      if (!opts.lookup) throw new Error('no lookup');
      return opts.lookup(r, uri);
    },
    addOutputFilter: (r: Request, name: string) => {
      const spec = filters.get(name.toLowerCase());
      if (!spec) return false;
      insertFilter(r.outputFilters, instantiate(spec, r));
      return true;
    },
    addFilter: (r: Request, spec: FilterSpec) => insertFilter(r.outputFilters, instantiate(spec, r)),
    constructUrl: (_r: Request, uri: string) => `http://${opts.serverName ?? 'localhost'}:${opts.port ?? 8080}${uri}`,
    logRequest: (r: Request, module: string, level: number, message: string) => {
      errorLog.write(`[${module}:${level}] [client ${r.connection.remoteIp}] ${message}`);
    },
  };
  return { rt: rt as unknown as Runtime, lookups, errorLog };
}

export function makeRequest(rt: Runtime, perDir: unknown[], init: Partial<Pick<Request, 'uri' | 'args' | 'filename' | 'pathInfo' | 'finfo' | 'method' | 'handler' | 'contentType'>> = {}, server?: ServerRec): Request {
  const conn = { id: 1, remoteIp: '127.0.0.1', remotePort: 50000, localIp: '127.0.0.1', localPort: 8080, keepalives: 0, keepAlive: false, aborted: false, remoteHost: undefined, bytesIn: 0, bytesOut: 0, notes: new Map(), baseServer: undefined } as unknown as ConnRec;
  const s = server ?? new ServerRec(0, false, '/srv/plume/httpd.conf', 0);
  s.errorLog ??= new ErrorLog(new MemorySink(), formatDefault);
  s.logLevel ??= { level: APLOG_DEBUG, modules: new Map() };
  const r = new Request(rt, conn, s);
  r.logLevel = { level: APLOG_DEBUG, modules: new Map() };
  r.perDirConfig = perDir;
  Object.assign(r, init);
  return r;
}

/** fs.Stats of a real file or directory (created under a temp dir). */
export function statOf(kind: 'file' | 'dir'): fs.Stats {
  const base = tempDir('plume-unit-');
  if (kind === 'dir') return fs.statSync(base);
  const f = `${base}/f`;
  fs.writeFileSync(f, 'x');
  return fs.statSync(f);
}
