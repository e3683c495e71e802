// The plume module API: what an Apache module declares (directive table, per-server and
// per-directory configuration with create/merge, hooks, providers, handlers, filters).
// Mirrors httpd's `module` struct and `command_rec` tables (include/http_config.h), typed.

import type { Request } from './request/request.js';
import type { CmdParms } from './config/cmd.js';
import type { ServerRec } from './server-rec.js';
import type { ConfigContext } from './config/context.js';
import type { FilterSpec, InputFilterSpec } from './filters.js';
import type { MaybePromise } from './maybe-promise.js';

/** The plume module API version ("module magic number" major). A third-party module built
 *  for another major is refused, as httpd refuses a module built for another MMN. */
export const MODULE_API_VERSION = 20261101;

// ---- directive argument shapes (httpd's cmd_how) ----------------------------------------
export type ArgShape =
  | 'NO_ARGS' | 'FLAG' | 'RAW_ARGS' | 'TAKE_ARGV'
  | 'TAKE1' | 'TAKE2' | 'TAKE3' | 'TAKE12' | 'TAKE13' | 'TAKE23' | 'TAKE123'
  | 'ITERATE' | 'ITERATE2';

/** The arguments a handler receives for a given shape; a wrong arity does not compile. */
export type ArgsFor<S extends ArgShape> =
  S extends 'NO_ARGS' ? [] :
  S extends 'FLAG' ? [on: boolean] :
  S extends 'RAW_ARGS' ? [raw: string] :
  S extends 'TAKE_ARGV' ? [argv: string[]] :
  S extends 'TAKE1' ? [a: string] :
  S extends 'TAKE2' ? [a: string, b: string] :
  S extends 'TAKE3' ? [a: string, b: string, c: string] :
  S extends 'TAKE12' ? [a: string, b: string | undefined] :
  S extends 'TAKE13' ? [a: string, b: string | undefined, c: string | undefined] :
  S extends 'TAKE23' ? [a: string, b: string, c: string | undefined] :
  S extends 'TAKE123' ? [a: string, b: string | undefined, c: string | undefined] :
  S extends 'ITERATE' ? [each: string] :
  S extends 'ITERATE2' ? [first: string, each: string] :
  never;

// ---- where a directive may appear (httpd's req_override bits) ---------------------------
export const OR_NONE = 0;
export const OR_LIMIT = 1;
export const OR_OPTIONS = 2;
export const OR_FILEINFO = 4;
export const OR_AUTHCFG = 8;
export const OR_INDEXES = 16;
export const OR_UNSET = 32;
export const ACCESS_CONF = 64;
export const RSRC_CONF = 128;
/** Allowed inside <Proxy> / <ProxyMatch> sections only (httpd's PROXY_CONF). */
export const PROXY_CONF = 2048;
export const EXEC_ON_READ = 256;
export const NONFATAL_OVERRIDE = 512;
export const NONFATAL_UNKNOWN = 1024;
export const NONFATAL_ALL = NONFATAL_OVERRIDE | NONFATAL_UNKNOWN;
export const OR_ALL = OR_LIMIT | OR_OPTIONS | OR_FILEINFO | OR_AUTHCFG | OR_INDEXES;

/** A directive handler: returns Apache's error text, or nothing on success. */
export type DirectiveHandler<S extends ArgShape, SC, DC> =
  (cmd: CmdParms<SC, DC>, ...args: ArgsFor<S>) => string | undefined | void;

export interface DirectiveSpec<SC, DC, S extends ArgShape = ArgShape> {
  readonly name: string;
  readonly args: S;
  /** req_override bits: RSRC_CONF, ACCESS_CONF, OR_* and EXEC_ON_READ. */
  readonly where: number;
  readonly help: string;
  readonly handler: DirectiveHandler<S, SC, DC>;
  /** A section directive (`<Directory ...>`): the handler walks the children itself. */
  readonly section?: boolean;
}

/** Declares one directive; the shape literal types the handler's parameters. */
export function directive<SC, DC, S extends ArgShape>(spec: DirectiveSpec<SC, DC, S>): DirectiveSpec<SC, DC, ArgShape> {
  return spec as unknown as DirectiveSpec<SC, DC, ArgShape>;
}

// ---- hooks -----------------------------------------------------------------------------
/** Hook and handler results, as in httpd: OK, DECLINED, DONE, or an HTTP status. */
export const OK = 0;
export const DECLINED = -1;
export const DONE = -2;
/** httpd.h DIR_MAGIC_TYPE: the content type (and handler) mod_mime gives a directory. */
export const DIR_MAGIC_TYPE = 'httpd/unix-directory';
export type HookResult = number;
export type { MaybePromise };
export type RequestHook = (r: Request) => MaybePromise<HookResult>;
export type VoidRequestHook = (r: Request) => MaybePromise<void>;

/** Ordering within a hook, as httpd's APR_HOOK_* constants. */
export const HOOK_REALLY_FIRST = -10;
export const HOOK_FIRST = 0;
export const HOOK_MIDDLE = 10;
export const HOOK_LAST = 20;
export const HOOK_REALLY_LAST = 30;

export interface HookOrder {
  order?: number;
  /** Module source names (mod_x.c) that must run before / after this one. */
  predecessors?: readonly string[];
  successors?: readonly string[];
}

/** The request hooks, each run-first (first non-DECLINED wins) or run-all (until error). */
export interface RequestHooks {
  postReadRequest: RequestHook;      // run-all
  translateName: RequestHook;        // run-first
  mapToStorage: RequestHook;         // run-first
  headerParser: RequestHook;         // run-all
  accessChecker: RequestHook;        // run-all (satisfy-all part of access)
  accessCheckerEx: RequestHook;      // run-first (2.4 access_checker_ex)
  checkUserId: RequestHook;          // run-first (authn)
  authChecker: RequestHook;          // run-first (authz)
  typeChecker: RequestHook;          // run-first
  fixups: RequestHook;               // run-all
  insertFilter: VoidRequestHook;     // run-all
  handler: RequestHook;              // run-first
  logTransaction: RequestHook;       // run-all
  insertErrorFilter: VoidRequestHook;// run-all
}
export type RequestHookName = keyof RequestHooks;

/** httpd's quick_handler (run-first, before any other request hook): `lookup` is true when a
 *  subrequest is only being looked up (ap_sub_req_lookup_uri), false when the request is to be
 *  served. OK serves (or, for a lookup, says it could serve) the request; DECLINED lets the
 *  normal phases run. */
export type QuickHandlerHook = (r: Request, lookup: boolean) => MaybePromise<HookResult>;
export type QuickHandlerEntry = QuickHandlerHook | { fn: QuickHandlerHook; order?: number; predecessors?: readonly string[]; successors?: readonly string[] };

export type HookEntry<K extends RequestHookName> =
  RequestHooks[K] | { fn: RequestHooks[K]; order?: number; predecessors?: readonly string[]; successors?: readonly string[] };

/** A module's hooks; a list where it registers one hook twice (mod_rewrite's two fixups). */
export type HookRegistration = {
  [K in RequestHookName]?: HookEntry<K> | readonly HookEntry<K>[];
} & {
  quickHandler?: QuickHandlerEntry | readonly QuickHandlerEntry[];
};

/** Configuration-time hooks (pre_config, post_config, child_init...). */
export interface ConfigHooks {
  /** Before the configuration is read: reset module-global state. */
  preConfig?(ctx: ConfigContext): void;
  /** After every directive ran, also under -t (httpd's check_config): check and precompute;
   *  return an error text to refuse the configuration. */
  checkConfig?(ctx: ConfigContext): string | undefined | void;
  /** When starting to serve, after the error logs are open (httpd's post_config; not under -t):
   *  open files, read data files; return an error text to refuse to start. */
  postConfig?(ctx: ConfigContext): string | undefined | void | Promise<string | undefined | void>;
  /** In each serving process after startup (workers, or the single -X process). */
  childInit?(ctx: ConfigContext): void | Promise<void>;
  /** On shutdown or restart of this configuration generation. */
  cleanup?(ctx: ConfigContext): void | Promise<void>;
}

// ---- providers (authn, authz, ...) -----------------------------------------------------
/** Provider groups; modules add their own groups by declaration merging. */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ProviderGroups {}
export type ProviderGroupName = keyof ProviderGroups;

export interface ProviderDecl<G extends ProviderGroupName = ProviderGroupName> {
  group: G;
  name: string;
  version: string;
  provider: ProviderGroups[G];
}

// ---- the module itself -------------------------------------------------------------------
export interface ModuleDecl<SC = unknown, DC = unknown> {
  /** The module symbol used by LoadModule and <IfModule>: `authz_core_module`. */
  readonly name: string;
  /** The source name used by <IfModule> and -l: `mod_authz_core.c`. */
  readonly source: string;
  /** Module API version it was built for: must equal MODULE_API_VERSION. */
  readonly apiVersion: number;
  readonly createServerConfig?: (s: ServerRec) => SC;
  readonly mergeServerConfig?: (base: Readonly<SC>, add: Readonly<SC>) => SC;
  readonly createDirConfig?: (path: string | undefined) => DC;
  /** Without a merge the more specific section's configuration replaces the parent's whole. */
  readonly mergeDirConfig?: (base: Readonly<DC>, add: Readonly<DC>) => DC;
  readonly directives?: readonly DirectiveSpec<SC, DC>[];
  readonly hooks?: HookRegistration;
  readonly configHooks?: ConfigHooks;
  readonly providers?: readonly ProviderDecl[];
  /** Output filters by name (AddOutputFilter, SetOutputFilter, ap_add_output_filter). */
  readonly filters?: readonly FilterSpec[];
  /** Input filters by name (AddInputFilter, SetInputFilter, ap_add_input_filter). */
  readonly inputFilters?: readonly InputFilterSpec[];
  /** Filters the configuration defines (mod_ext_filter's ExtFilterDefine registers a filter per
   *  definition, as httpd's ap_register_output_filter at configuration time); asked once per
   *  configuration generation, after the static ones, which they may replace. */
  readonly configuredFilters?: (ctx: ConfigContext) => { readonly output: readonly FilterSpec[]; readonly input: readonly InputFilterSpec[] };
}

/** A module as the server holds it: the declaration plus its index in config vectors. */
export interface LoadedModule<SC = unknown, DC = unknown> {
  readonly decl: ModuleDecl<SC, DC>;
  readonly index: number;
}

/** Declares a module. The returned handle gives typed access to its configuration:
 *  `mod.dir(r)`, `mod.server(s)`, with the one cast living here. */
export function defineModule<SC, DC>(decl: ModuleDecl<SC, DC>): ModuleHandle<SC, DC> {
  return new ModuleHandle(decl);
}

/** Each catalogued module's index in configuration vectors, by symbol (src/modules/index.ts):
 *  the catalogue loads most modules' code when LoadModule names them, and a module's handle
 *  takes its index when it is made, whichever module's import made it. */
let plannedIndex: ReadonlyMap<string, number> = new Map();

/** Sets the indices handles made from now on take (the catalogue, once, in its order). */
export function planModuleIndices(symbols: readonly string[]): void {
  plannedIndex = new Map(symbols.map((s, i) => [s, i]));
}

export class ModuleHandle<SC, DC> {
  /** Index in configuration vectors: its place in the catalogue (-1 until it has one). */
  index: number;
  constructor(readonly decl: ModuleDecl<SC, DC>) {
    this.index = plannedIndex.get(decl.name) ?? -1;
  }
  /** This module's merged per-directory configuration for the request. */
  dir(r: { perDirConfig: readonly unknown[] }): DC {
    return r.perDirConfig[this.index] as DC;
  }
  /** This module's per-directory configuration in a raw vector (a section or .htaccess). */
  dirIn(vec: readonly unknown[]): DC | undefined {
    return vec[this.index] as DC | undefined;
  }
  /** This module's per-server configuration. */
  server(s: { moduleConfig: readonly unknown[] }): SC {
    return s.moduleConfig[this.index] as SC;
  }
}

export type AnyModuleHandle = ModuleHandle<unknown, unknown>;
