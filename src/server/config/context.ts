// One configuration generation: the modules loaded, Define'd names, the servers built, and
// the startup messages. Everything the request path needs is precomputed from here.

import * as path from 'node:path';
import type { AnyModuleHandle, DirectiveSpec, ProviderGroupName, ProviderGroups } from '../module.js';
import { ServerRec } from '../server-rec.js';
import type { ModuleCatalogue as ModuleCatalogueRef } from './build.js';
import { ErrorLog, formatDefault, type ErrorLogEntry } from '../log/error-log.js';
import { StderrSink } from '../log/log-writer.js';
import { DEFAULT_LOG_LEVEL, levelFor, type LogLevelConfig } from '../log/levels.js';

export interface LoadedDirective {
  readonly spec: DirectiveSpec<unknown, unknown>;
  readonly module: AnyModuleHandle;
}

/** Options from the command line that shape a configuration read. */
export interface ConfigOptions {
  readonly argv0: string;
  readonly serverRoot: string;
  readonly configFile: string;
  /** -D names. */
  readonly defines: readonly string[];
  /** -C directives (before the file) and -c directives (after). */
  readonly preDirectives: readonly string[];
  readonly postDirectives: readonly string[];
  /** -e level for startup messages. */
  readonly startupLogLevel?: number | undefined;
  /** -E file for startup messages. */
  readonly startupLogFile?: string | undefined;
}

export class ConfigContext {
  serverRoot: string;
  readonly defines = new Map<string, string>();
  /** Modules in load order (built-ins first), and by both names. */
  readonly loaded: AnyModuleHandle[] = [];
  private readonly bySymbol = new Map<string, AnyModuleHandle>();
  private readonly bySource = new Map<string, AnyModuleHandle>();
  /** Directive name (lowercase; sections with '<') → declaration, for loaded modules. */
  readonly directives = new Map<string, LoadedDirective>();
  readonly mainServer: ServerRec;
  readonly vhosts: ServerRec[] = [];
  /** Files read, in order (for -D DUMP_INCLUDES). */
  readonly includes: { file: string; depth: number }[] = [];
  /** Providers registered by loaded modules: group → name → provider. */
  readonly providers = new Map<string, Map<string, unknown>>();
  /** The startup log: stderr (or -E file) until the ErrorLog is open, as httpd does. */
  startupLog: ErrorLog;
  startupLogLevel: LogLevelConfig = DEFAULT_LOG_LEVEL;
  /** Per-generation scratch space for modules (typed by the module that owns the key). */
  private readonly scratch = new Map<string, unknown>();
  private nextServerId = 1;

  constructor(readonly options: ConfigOptions) {
    this.serverRoot = options.serverRoot;
    for (const d of options.defines) this.defines.set(d, '');
    this.mainServer = new ServerRec(0, false, options.configFile, 0);
    this.startupLog = new ErrorLog(new StderrSink(), formatDefault);
    if (options.startupLogLevel !== undefined) this.startupLogLevel = { level: options.startupLogLevel, modules: new Map() };
  }

  get argv0(): string {
    return this.options.argv0;
  }

  newVirtualHost(file: string, line: number): ServerRec {
    const s = new ServerRec(this.nextServerId++, true, file, line);
    this.vhosts.push(s);
    return s;
  }

  /** ServerRoot-relative path resolution (ap_server_root_relative). */
  serverRootRelative(p: string): string {
    if (p.startsWith('/')) return path.normalize(p);
    return path.normalize(path.join(this.serverRoot, p));
  }

  // ---- modules -----------------------------------------------------------------------
  activate(mod: AnyModuleHandle): void {
    this.loaded.push(mod);
    this.bySymbol.set(mod.decl.name, mod);
    this.bySource.set(mod.decl.source, mod);
    for (const d of mod.decl.directives ?? []) {
      const key = d.name.toLowerCase();
      if (!this.directives.has(key)) this.directives.set(key, { spec: d as DirectiveSpec<unknown, unknown>, module: mod });
    }
    for (const p of mod.decl.providers ?? []) {
      let g = this.providers.get(p.group);
      if (!g) this.providers.set(p.group, (g = new Map()));
      g.set(p.name.toLowerCase(), p.provider);
    }
  }
  isLoaded(nameOrSource: string): boolean {
    return this.bySymbol.has(nameOrSource) || this.bySource.has(nameOrSource);
  }
  moduleBySymbol(name: string): AnyModuleHandle | undefined {
    return this.bySymbol.get(name);
  }
  /** Short module name as logs and LogLevel use it: "authz_core" for authz_core_module. */
  static shortName(mod: AnyModuleHandle): string {
    return mod.decl.name.replace(/_module$/, '');
  }
  /** Resolves "rewrite", "rewrite_module" or "mod_rewrite.c" to a short name. */
  findModuleShortName(name: string): string | undefined {
    for (const m of this.loaded) {
      const short = ConfigContext.shortName(m);
      if (name === short || name === m.decl.name || name === m.decl.source) return short;
    }
    return undefined;
  }

  provider<G extends ProviderGroupName>(group: G, name: string): ProviderGroups[G] | undefined {
    return this.providers.get(group)?.get(name.toLowerCase()) as ProviderGroups[G] | undefined;
  }
  providerNames(group: ProviderGroupName): string[] {
    return [...(this.providers.get(group)?.keys() ?? [])];
  }

  // ---- variables -----------------------------------------------------------------------
  lookupVariable(name: string): string | undefined {
    const d = this.defines.get(name);
    if (d !== undefined) return d;
    return process.env[name];
  }

  // ---- startup messages -------------------------------------------------------------
  /** Logs a startup message (stderr in httpd's error-log format until logs are open). */
  log(module: string, level: number, message: string): void {
    if (level > levelFor(this.startupLogLevel, module)) return;
    const e: ErrorLogEntry = { module, level, message };
    this.startupLog.write(e);
  }

  /** A startup message without the error-log prefix (httpd's APLOG_STARTUP / no server). */
  logBare(module: string, level: number, message: string): void {
    if (level > levelFor(this.startupLogLevel, module)) return;
    this.startupLog.sink.write(message + '\n');
  }

  /** The module catalogue this configuration is read against (set by readConfiguration). */
  catalogue: ModuleCatalogueRef | undefined = undefined;

  getScratch<T>(key: string, init: () => T): T {
    let v = this.scratch.get(key) as T | undefined;
    if (v === undefined) {
      v = init();
      this.scratch.set(key, v);
    }
    return v;
  }
}
