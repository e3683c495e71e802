// One configuration generation: the modules loaded, Define'd names, the servers built, and
// the startup messages. Everything the request path needs is precomputed from here.

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AnyModuleHandle, DirectiveSpec, ProviderGroupName, ProviderGroups } from '../module.js';
import { ServerRec } from '../server-rec.js';
import type { ModuleCatalogue as ModuleCatalogueRef } from './build.js';
import type { DeferredError } from './errors.js';
import { ErrorLog, formatDefault, type ErrorLogEntry } from '../log/error-log.js';
import type { LogSink } from '../log/log-writer.js';
import { APLOG_NOTICE, DEFAULT_LOG_LEVEL, levelFor, type LogLevelConfig } from '../log/levels.js';

/** A directive of the configuration as read — Include'd files spliced in, <IfModule> and the
 *  other read-time directives gone — with its file and line: httpd's ap_conftree, which
 *  mod_info shows. */
export interface ConfigTreeNode {
  readonly name: string;
  readonly args: string;
  readonly file: string;
  readonly line: number;
  readonly children: readonly ConfigTreeNode[] | undefined;
  readonly source: { readonly kind: string };
}

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
  /** Refuse a configuration that loads no MPM (httpd's AH00534); the command line sets it. */
  readonly requireMpm?: boolean;
  /** -T turns this off: DocumentRoot is then not checked for being a directory. */
  readonly documentRootCheck?: boolean;
  /** The first read at startup (httpd's preflight read, and -t): once-only startup
   *  warnings are given here and not when the configuration is read again to serve. */
  readonly preflight?: boolean;
  /** A worker process's read: post_config ran in the parent already, which set up what the
   *  workers share (a shmcb cache file, TLS session ticket keys); modules attach to it. */
  readonly child?: boolean;
  /** Collects the files read (ConfigContext.includes), so that -D DUMP_INCLUDES can list
   *  them even when reading fails half way. */
  readonly includeLog?: IncludedFile[];
  /** Where startup messages go instead of stderr / the -E file (the running server's error
   *  log, when a configuration is read again to serve). */
  readonly startupSink?: LogSink;
  /** Reads a configuration file (the main one and every Include'd one) as latin1 text; the
   *  default reads the disk. The parent process records what it read, so that its worker
   *  processes read the very same text (src/mpm/config-snapshot.ts). */
  readonly readConfigFile?: (file: string) => string;
}

/** A configuration file read: its Include depth and the line of the Include (0: none). */
export interface IncludedFile {
  readonly file: string;
  readonly depth: number;
  readonly line: number;
}

/** Where startup messages go before the error logs are open: stderr, or the -E file
 *  (httpd's ap_replace_stderr_log, opened once per process). Written at once, so that they
 *  keep their order with everything else the command line prints. */
export class StartupSink implements LogSink {
  private static readonly files = new Map<string, number>();
  readonly description: string;
  private readonly fd: number;
  constructor(file?: string) {
    this.description = file ?? 'stderr';
    this.fd = file === undefined ? 2 : StartupSink.open(file);
  }
  private static open(file: string): number {
    let fd = StartupSink.files.get(file);
    if (fd === undefined) {
      try { fd = fs.openSync(file, 'a', 0o644); } catch { fd = 2; }
      StartupSink.files.set(file, fd);
    }
    return fd;
  }
  write(line: string): void {
    try { fs.writeSync(this.fd, line); } catch { /* stderr gone */ }
  }
  flush(): void { /* unbuffered */ }
  close(): void { /* stderr and the -E file stay open for the process */ }
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
  /** Files read, in order, with the line of the Include that read them (-D DUMP_INCLUDES). */
  readonly includes: IncludedFile[];
  /** Providers registered by loaded modules: group → name → provider. */
  readonly providers = new Map<string, Map<string, unknown>>();
  private readonly registeredProviders = new Map<string, Map<string, unknown>>();
  /** The startup log: stderr (or -E file) until the ErrorLog is open, as httpd does. */
  startupLog: ErrorLog;
  startupLogLevel: LogLevelConfig = DEFAULT_LOG_LEVEL;
  /** Read-phase errors reported once the read is over (see DeferredError). */
  readonly deferredErrors: DeferredError[] = [];
  /** The configuration tree, once read (see ConfigTreeNode). */
  configTree: readonly ConfigTreeNode[] = [];
  /** Per-generation scratch space for modules (typed by the module that owns the key). */
  private readonly scratch = new Map<string, unknown>();
  private nextServerId = 1;

  constructor(readonly options: ConfigOptions) {
    this.serverRoot = options.serverRoot;
    this.includes = options.includeLog ?? [];
    for (const d of options.defines) this.defines.set(d, '');
    this.mainServer = new ServerRec(0, false, options.configFile, 0);
    this.startupLog = new ErrorLog(options.startupSink ?? new StartupSink(options.startupLogFile), formatDefault);
    if (options.startupLogLevel !== undefined) this.startupLogLevel = { level: options.startupLogLevel, modules: new Map() };
  }

  get argv0(): string {
    return this.options.argv0;
  }

  /** The first read at startup or -t (see ConfigOptions.preflight). */
  get preflight(): boolean {
    return this.options.preflight !== false;
  }

  /** A worker's read (see ConfigOptions.child). */
  get child(): boolean {
    return this.options.child === true;
  }

  newVirtualHost(file: string, line: number): ServerRec {
    const s = new ServerRec(this.nextServerId++, true, file, line);
    // ap_init_virtual_host: the request limits are copied from the main server when the
    // <VirtualHost> is read, so a LimitRequest* directive after it leaves the vhost alone.
    for (const k of ['limitRequestLine', 'limitRequestFieldSize', 'limitRequestFields'] as const) s.setLimit(k, this.mainServer[k]);
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
      // Of two loaded modules with the same directive (mod_cgi and mod_cgid's ScriptLog,
      // lbmethod_heartbeat and mod_heartmonitor's HeartbeatStorage) the one loaded first takes
      // it, as measured on httpd 2.4.71 (conformance cgi/scriptlog-both-modules*).
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
  /** ap_register_provider from a directive (LuaAuthzProvider, <AuthzProviderAlias>): found
   *  by provider() and, under its exact spelling, by registeredProvider(). */
  registerProvider<G extends ProviderGroupName>(group: G, name: string, provider: ProviderGroups[G]): void {
    let g = this.providers.get(group);
    if (!g) this.providers.set(group, (g = new Map()));
    g.set(name.toLowerCase(), provider);
    let exact = this.registeredProviders.get(group);
    if (!exact) this.registeredProviders.set(group, (exact = new Map()));
    exact.set(name, provider);
  }
  /** A provider registered while the configuration was read, by its exact name (httpd's
   *  ap_lookup_provider compares names case-sensitively). */
  registeredProvider<G extends ProviderGroupName>(group: G, name: string): ProviderGroups[G] | undefined {
    return this.registeredProviders.get(group)?.get(name) as ProviderGroups[G] | undefined;
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

  /** A message about no particular server (httpd's ap_log_error with a NULL server): shown
   *  up to the -e level (warn by default) whatever LogLevel says; notices always. */
  logNoServer(module: string, level: number, message: string): void {
    const limit = this.options.startupLogLevel ?? DEFAULT_LOG_LEVEL.level;
    if (level !== APLOG_NOTICE && level > limit) return;
    this.startupLog.write({ module, level, message });
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
