// Reading a configuration as httpd does, in two phases:
//  1. read: build the tree, resolving ${VAR} and executing EXEC_ON_READ directives in order
//     (Include, Define, LoadModule, <IfModule>, <IfDefine>, <IfVersion>, ...);
//  2. walk: invoke every other directive's handler in its server and section.
// Then virtual hosts inherit from the main server and the check-config hooks check the result
// (all that -t does); the post-config hooks run only when the configuration is to serve.

import * as fs from 'node:fs';
import * as os from 'node:os';
import { ConfigError, StartupError, UnknownDirectiveError } from './errors.js';
import { unknownDirectiveRemedies, type UnknownDirective } from './remedies.js';
import { parseConfig, type ConfigNode, type ExpandedNode } from './tree.js';
import { ArgCursor, resolveVariables } from './lexer.js';
import { CmdParms, type WalkScope } from './cmd.js';
import { ConfigContext, type ConfigOptions, type LoadedDirective } from './context.js';
import {
  EXEC_ON_READ, OR_ALL, OR_AUTHCFG, OR_LIMIT, RSRC_CONF,
  type AnyModuleHandle, type ArgShape,
} from '../module.js';
import type { ServerRec } from '../server-rec.js';
import { resolveHostSync, reverseLookupSync } from '../core/resolve.js';
import { APLOG_ALERT, APLOG_ERR } from '../log/levels.js';

/** The override bits of the main server and virtual hosts (httpd's ap_process_config_tree). */
export const SERVER_OVERRIDE = (RSRC_CONF | OR_ALL) & ~(OR_AUTHCFG | OR_LIMIT);

function undefinedVariable(ctx: ConfigContext, name: string): void {
  ctx.logNoServer('core', 4, `AH00111: Config variable \${${name}} is not defined`);
}

function lookupDirective(ctx: ConfigContext, n: { name: string; source: ConfigNode } | ConfigNode, name: string): LoadedDirective | undefined {
  const key = ('source' in n ? n.source.kind : n.kind) === 'section' ? '<' + name.toLowerCase() : name.toLowerCase();
  return ctx.directives.get(key);
}

/** Phase 1: expand raw nodes, executing EXEC_ON_READ directives. */
export function expandNodes(ctx: ConfigContext, nodes: readonly ConfigNode[]): ExpandedNode[] {
  const out: ExpandedNode[] = [];
  for (const n of nodes) {
    if (n.kind === 'blank' || n.kind === 'comment') continue;
    const args = resolveVariables(n.args, (v) => ctx.lookupVariable(v), (v) => undefinedVariable(ctx, v));
    const name = n.name;
    const d = lookupDirective(ctx, n, name);
    if (d && d.spec.where & EXEC_ON_READ) {
      const node: ExpandedNode = { name, args, file: n.file, line: n.line, children: undefined, source: n };
      const scope = readScope(ctx);
      const cmd = makeCmd(ctx, node, d, scope, (ns) => expandNodes(ctx, ns));
      const err = invokeHandler(cmd, d, node);
      if (err !== undefined) throw new ConfigError(n.file, n.line, err, 'read');
      out.push(...cmd.emitted);
      continue;
    }
    out.push({
      name, args, file: n.file, line: n.line,
      children: n.children ? expandNodes(ctx, n.children) : undefined,
      source: n,
    });
  }
  return out;
}

function readScope(ctx: ConfigContext): WalkScope {
  return {
    server: ctx.mainServer, vector: ctx.mainServer.lookupDefaults, path: undefined,
    override: SERVER_OVERRIDE | EXEC_ON_READ | OR_ALL | RSRC_CONF, overrideOpts: 0, overrideList: null,
    parents: [], limited: undefined, htaccess: false,
  };
}

function shownName(n: ExpandedNode): string {
  return n.source.kind === 'section' ? '<' + n.name : n.name;
}

/** Every directive of an expanded tree no loaded module provides, in order (the children of
 *  an unknown section are not looked at: httpd would not get there). */
function unknownDirectives(ctx: ConfigContext, nodes: readonly ExpandedNode[], out: UnknownDirective[] = []): UnknownDirective[] {
  for (const n of nodes) {
    if (!lookupDirective(ctx, n, n.name)) {
      out.push({ shown: shownName(n), file: n.file, line: n.line });
      continue;
    }
    if (n.children) unknownDirectives(ctx, n.children, out);
  }
  return out;
}

/** The first deferred read error, with the remedies of all of them. */
function deferredFailure(ctx: ConfigContext): ConfigError | undefined {
  const [first] = ctx.deferredErrors;
  if (first === undefined) return undefined;
  first.error.remedy = [...new Set(ctx.deferredErrors.map((d) => d.remedy))];
  return first.error;
}

/** Phase 2: invoke directives in a scope. Throws ConfigError on the first error. */
export function walkNodes(ctx: ConfigContext, nodes: readonly ExpandedNode[], scope: WalkScope): void {
  for (const n of nodes) {
    const d = lookupDirective(ctx, n, n.name);
    if (!d) throw new UnknownDirectiveError(n.file, n.line, shownName(n));
    if (d.spec.where & EXEC_ON_READ) continue;
    const cmd = makeCmd(ctx, n, d, scope, undefined);
    const err = invokeHandler(cmd, d, n);
    if (err !== undefined) throw new ConfigError(n.file, n.line, err, 'walk');
  }
}

function makeCmd(
  ctx: ConfigContext, node: ExpandedNode, d: LoadedDirective, scope: WalkScope,
  expander: ((ns: readonly ConfigNode[]) => ExpandedNode[]) | undefined,
): CmdParms {
  const srv = serverConfigOf(ctx, scope.server, d.module);
  const dir = dirConfigOf(scope.vector, d.module, scope.path);
  return new CmdParms(ctx, node, d.spec, scope, srv, dir, (ns, sc) => walkNodes(ctx, ns, sc), expander);
}

/** The module's server config in a server, created on first use (ap_set_config_vectors). */
export function serverConfigOf(ctx: ConfigContext, s: ServerRec, m: AnyModuleHandle): unknown {
  let c = s.moduleConfig[m.index];
  if (c === undefined && m.decl.createServerConfig) {
    c = m.decl.createServerConfig(s);
    s.moduleConfig[m.index] = c;
  }
  return c;
}

export function dirConfigOf(vector: unknown[], m: AnyModuleHandle, path: string | undefined): unknown {
  let c = vector[m.index];
  if (c === undefined && m.decl.createDirConfig) {
    c = m.decl.createDirConfig(path);
    vector[m.index] = c;
  }
  return c;
}

/** httpd's invoke_cmd: the override check, argument splitting by shape, and the call. */
export function invokeHandler(cmd: CmdParms, d: LoadedDirective, node: ExpandedNode): string | undefined {
  const spec = d.spec;
  const scope = cmd.scope;
  if ((scope.override & spec.where) === 0) {
    const listed = scope.overrideList?.has(spec.name.toLowerCase()) ?? false;
    if (!listed) {
      const parent = scope.parents[scope.parents.length - 1];
      if (parent === undefined) return `${spec.name} not allowed here`;
      return `${spec.name} not allowed in ${parent}> context`;
    }
  }
  let raw = node.args;
  if (spec.section) {
    if (node.source.missingGt) return `${spec.name}> directive missing closing '>'`;
  }
  return invokeWithArgs(cmd, spec.name, spec.help, spec.args, raw, spec.handler as (c: CmdParms, ...a: unknown[]) => string | undefined | void);
}

type Handler = (c: CmdParms, ...a: unknown[]) => string | undefined | void;

export function invokeWithArgs(cmd: CmdParms, name: string, help: string, shape: ArgShape, raw: string, handler: Handler): string | undefined {
  const c = new ArgCursor(raw);
  const withHelp = (s: string): string => (help ? `${name} ${s}, ${help}` : `${name} ${s}`);
  const ret = (v: string | undefined | void): string | undefined => (v === undefined || v === null ? undefined : v);
  switch (shape) {
    case 'RAW_ARGS':
      return ret(handler(cmd, raw));
    case 'TAKE_ARGV': {
      const argv: string[] = [];
      while (!c.atEnd() && argv.length < 64) argv.push(c.word());
      return ret(handler(cmd, argv));
    }
    case 'NO_ARGS':
      if (!c.atEnd()) return `${name} takes no arguments`;
      return ret(handler(cmd));
    case 'TAKE1': {
      const w = c.word();
      if (w === '' || !c.atEnd()) return withHelp('takes one argument');
      return ret(handler(cmd, w));
    }
    case 'TAKE2': {
      const w = c.word(); const w2 = c.word();
      if (w === '' || w2 === '' || !c.atEnd()) return withHelp('takes two arguments');
      return ret(handler(cmd, w, w2));
    }
    case 'TAKE12': {
      const w = c.word(); const w2 = c.word();
      if (w === '' || !c.atEnd()) return withHelp('takes 1-2 arguments');
      return ret(handler(cmd, w, w2 === '' ? undefined : w2));
    }
    case 'TAKE3': {
      const w = c.word(); const w2 = c.word(); const w3 = c.word();
      if (w === '' || w2 === '' || w3 === '' || !c.atEnd()) return withHelp('takes three arguments');
      return ret(handler(cmd, w, w2, w3));
    }
    case 'TAKE23': {
      const w = c.word(); const w2 = c.word();
      const w3 = c.atEnd() ? undefined : c.word();
      if (w === '' || w2 === '' || !c.atEnd()) return withHelp('takes two or three arguments');
      return ret(handler(cmd, w, w2, w3));
    }
    case 'TAKE123': {
      const w = c.word();
      const w2 = c.atEnd() ? undefined : c.word();
      const w3 = c.atEnd() ? undefined : c.word();
      if (w === '' || !c.atEnd()) return withHelp('takes one, two or three arguments');
      return ret(handler(cmd, w, w2, w3));
    }
    case 'TAKE13': {
      const w = c.word();
      const w2 = c.atEnd() ? undefined : c.word();
      const w3 = c.atEnd() ? undefined : c.word();
      if (w === '' || (w2 !== undefined && w2 !== '' && w3 === undefined) || !c.atEnd()) return withHelp('takes one or three arguments');
      return ret(handler(cmd, w, w2, w3));
    }
    case 'ITERATE': {
      let err: string | undefined;
      if (c.atEnd()) return withHelp('requires at least one argument');
      while (!c.atEnd()) {
        err = ret(handler(cmd, c.word()));
        if (err !== undefined) return err;
      }
      return err;
    }
    case 'ITERATE2': {
      const w = c.word();
      if (w === '' || c.atEnd()) return withHelp('requires at least two arguments');
      while (!c.atEnd()) {
        const e = ret(handler(cmd, w, c.word()));
        if (e !== undefined) return e;
      }
      return undefined;
    }
    case 'FLAG': {
      const w = c.word();
      const lw = w.toLowerCase();
      if (w === '' || (lw !== 'on' && lw !== 'off')) return `${name} must be On or Off`;
      return ret(handler(cmd, lw !== 'off'));
    }
  }
}

/** The modules every configuration starts with, in catalogue order. */
export interface ModuleCatalogue {
  readonly all: readonly AnyModuleHandle[];
  readonly builtIn: readonly AnyModuleHandle[];
  find(symbol: string): AnyModuleHandle | undefined;
  /** Registers a third-party module (a LoadModule'd ES module) and assigns its index. */
  register(mod: AnyModuleHandle): void;
}

/** The label httpd gives the -C and -c directives in messages ("line N of -c/-C directives"). */
export const CMDLINE_LABEL = '-c/-C directives';

/**
 * Reads a configuration as far as `httpd -t` does (ap_read_config, pre_config,
 * ap_process_config_tree, virtual host fixups, check_config): the read phase, the walk, and
 * the modules' checkConfig hooks. Nothing is opened; postConfigure() does that when serving.
 * Throws ConfigError (a directive's error) or StartupError (anything else).
 */
export async function loadConfiguration(options: ConfigOptions, catalogue: ModuleCatalogue): Promise<ConfigContext> {
  const ctx = new ConfigContext(options);
  ctx.catalogue = catalogue;
  for (const m of catalogue.builtIn) ctx.activate(m);
  for (const m of catalogue.builtIn) m.decl.configHooks?.preConfig?.(ctx);

  const trees: ExpandedNode[] = [];
  const cmdline = (lines: readonly string[]): void => {
    if (lines.length === 0) return;
    const nodes = parseConfig(lines.join('\n') + '\n', CMDLINE_LABEL);
    trees.push(...expandNodes(ctx, nodes));
  };
  cmdline(options.preDirectives);
  let text: string;
  try {
    text = options.readConfigFile ? options.readConfigFile(options.configFile) : fs.readFileSync(options.configFile, 'latin1');
  } catch (e) {
    throw new StartupError(`${options.argv0}: Could not open configuration file ${options.configFile}: ${describeFsError(e)}`);
  }
  // httpd labels the main file with the line of an Include among the -C directives, if any.
  ctx.includes.push({ file: options.configFile, depth: 0, line: ctx.includes[ctx.includes.length - 1]?.line ?? 0 });
  const main = parseConfig(text, options.configFile);
  trees.push(...expandNodes(ctx, main));
  cmdline(options.postDirectives);
  ctx.configTree = trees;
  const deferred = deferredFailure(ctx);
  if (deferred !== undefined) throw deferred;

  // httpd refuses a configuration that loaded no MPM before it walks the tree.
  if (options.requireMpm === true && !ctx.loaded.some((m) => m.decl.name.startsWith('mpm_'))) {
    throw new StartupError(`AH00534: ${options.argv0}: Configuration error: No MPM loaded.`);
  }

  // Modules loaded by LoadModule get their pre-config hooks now (httpd runs pre_config after
  // reading, before the tree is walked).
  for (const m of ctx.loaded) if (!catalogue.builtIn.includes(m)) m.decl.configHooks?.preConfig?.(ctx);
  const s = ctx.mainServer;
  for (const m of ctx.loaded) {
    serverConfigOf(ctx, s, m);
    dirConfigOf(s.lookupDefaults, m, undefined);
  }
  try {
    walkNodes(ctx, trees, {
      server: s, vector: s.lookupDefaults, path: undefined, override: SERVER_OVERRIDE,
      overrideOpts: 0, overrideList: null, parents: [], limited: undefined, htaccess: false,
    });
  } catch (e) {
    // The remedy names every module the configuration misses, not only the first.
    if (e instanceof UnknownDirectiveError) {
      const others = unknownDirectives(ctx, trees).filter((u) => !(u.file === e.file && u.line === e.line));
      e.remedy = unknownDirectiveRemedies(ctx, { shown: e.shown, file: e.file, line: e.line }, others);
    }
    throw e;
  }
  fixupVirtualHosts(ctx);
  for (const m of ctx.loaded) {
    const err = m.decl.configHooks?.checkConfig?.(ctx);
    if (typeof err === 'string') throw new StartupError(err);
  }
  return ctx;
}

/** httpd's post_config: the modules' postConfig hooks (opening files, reading data files),
 *  run when serving, after the error logs are open. Returns the first refusal's text. */
export async function postConfigure(ctx: ConfigContext): Promise<string | undefined> {
  for (const m of ctx.loaded) {
    const err = await m.decl.configHooks?.postConfig?.(ctx);
    if (typeof err === 'string') return err;
  }
  return undefined;
}

/** Runs the modules' cleanup hooks: the configuration generation is done with. */
export async function cleanupConfiguration(ctx: ConfigContext): Promise<void> {
  for (const m of ctx.loaded) await m.decl.configHooks?.cleanup?.(ctx);
}

/** Reads a whole configuration and runs the post-config hooks too (a configuration ready to
 *  serve requests from, for embedding and tests). */
export async function readConfiguration(options: ConfigOptions, catalogue: ModuleCatalogue): Promise<ConfigContext> {
  const ctx = await loadConfiguration(options, catalogue);
  const err = await postConfigure(ctx);
  if (err !== undefined) throw new StartupError(err);
  return ctx;
}

/** Virtual hosts inherit the main server's settings they do not set (ap_fixup_virtual_hosts). */
function fixupVirtualHosts(ctx: ConfigContext): void {
  const main = ctx.mainServer;
  if (main.serverHostname === undefined) main.serverHostname = localHostName(ctx);
  for (const v of ctx.vhosts) {
    for (const m of ctx.loaded) {
      const i = m.index;
      const base = main.moduleConfig[i];
      const add = v.moduleConfig[i];
      if (add === undefined) v.moduleConfig[i] = base;
      else if (base !== undefined && m.decl.mergeServerConfig) v.moduleConfig[i] = m.decl.mergeServerConfig(base as object, add as object);
    }
    v.lookupDefaults = mergeVectors(ctx, main.lookupDefaults, v.lookupDefaults);
    for (const k of ['timeout', 'keepAlive', 'keepAliveTimeout', 'maxKeepAliveRequests', 'limitRequestLine', 'limitRequestFieldSize', 'limitRequestFields'] as const) {
      if (!v.explicitlySet.has(k)) v.setLimit(k, main[k]);
    }
    if (!v.explicitlySet.has('serverAdmin')) v.serverAdmin = main.serverAdmin;
    if (!v.explicitlySet.has('logLevel')) v.logLevel = main.logLevel;
    // Only a vhost without ServerName takes its port from its address (a ServerName without
    // a port leaves it unset: URLs then use the Host header's port or the default).
    if (v.port === 0 && v.addrs[0] && !v.explicitlySet.has('serverHostname')) v.port = v.addrs[0].port;
    if (v.serverHostname === undefined) v.serverHostname = vhostDefaultName(ctx, v);
  }
}

/** A virtual host without ServerName: a "*" or _default_ one takes the main server's name,
 *  an address-specific one the name of its first address (ap_fini_vhost_config). */
function vhostDefaultName(ctx: ConfigContext, v: ServerRec): string {
  const main = ctx.mainServer;
  if (v.addrs.some((a) => a.host === '*' || a.host === '_default_')) return main.serverHostname ?? '';
  const first = v.addrs[0];
  if (first === undefined) return 'bogus_host_without_forward_dns';
  const name = reverseLookupSync(first.host);
  if (name !== undefined) return name;
  ctx.log('core', APLOG_ERR, `AH00549: Failed to resolve server name for ${first.host} (check DNS) -- or specify an explicit ServerName`);
  return 'bogus_host_without_reverse_dns';
}

/** The main server's name when ServerName is not set (ap_get_local_host): the host's fully
 *  qualified name, or its address with a warning (AH00558). */
function localHostName(ctx: ConfigContext): string {
  const host = os.hostname();
  const ip = resolveHostSync(host) ?? '127.0.0.1';
  const name = host.includes('.') ? host : reverseLookupSync(ip);
  if (name !== undefined && name.includes('.')) return name;
  ctx.logBare('core', APLOG_ALERT, `AH00558: ${ctx.argv0}: Could not reliably determine the server's fully qualified domain name, using ${ip}. Set the 'ServerName' directive globally to suppress this message`);
  return ip;
}

/** Merges two per-directory vectors module by module (ap_merge_per_dir_configs). */
export function mergeVectors(ctx: ConfigContext, base: readonly unknown[], add: readonly unknown[]): unknown[] {
  const out = base.slice();
  for (const m of ctx.loaded) {
    const i = m.index;
    const a = add[i];
    if (a === undefined) continue;
    const b = base[i];
    out[i] = b !== undefined && m.decl.mergeDirConfig ? m.decl.mergeDirConfig(b as object, a as object) : a;
  }
  return out;
}

export function describeFsError(e: unknown): string {
  const code = (e as { code?: string }).code;
  switch (code) {
    case 'ENOENT': return 'No such file or directory';
    case 'EACCES': return 'Permission denied';
    case 'EISDIR': return 'Is a directory';
    case 'ENOTDIR': return 'Not a directory';
    default: return String((e as Error).message ?? e);
  }
}
