// mod_info (modules/generators/mod_info.c): the server-info handler. A page of the server's
// modules (plume's own, by source name), settings, hooks and providers, and the configuration
// as read with each directive's file and line; the query string picks one part: ?config,
// ?server, ?list, ?hooks, ?providers or ?mod_x.c (one module). AddModuleInfo adds a line of
// HTML to a module's entry. With -D DUMP_CONFIG the configuration is printed at startup.
// The HTML is httpd's, byte for byte, where plume has the same facts.
//
// DIFFERENCE: plume has no APR, APR-util or PCRE: the Server Settings name Node.js and
// plume's module API instead; hooks and providers are plume's (its hook names map onto
// httpd's phases; its provider groups include connection_layer and auth_type).

import {
  DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, RSRC_CONF,
  defineModule, directive, type AnyModuleHandle, type HookEntry, type MaybePromise, type RequestHookName,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext, ConfigTreeNode } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import { EOS } from '../../server/filters.js';
import { escapeHtml } from '../../server/http/response.js';
import { APACHE_COMPAT_VERSION, BUILT, MMN, PLUME_VERSION } from '../../server/version.js';

// ---- configuration ------------------------------------------------------------------------

interface InfoEntry {
  readonly name: string;
  readonly info: string;
}

export interface InfoServerConfig {
  readonly moreInfo: InfoEntry[];
}

function createServerConfig(): InfoServerConfig {
  return { moreInfo: [] };
}

/** The virtual host's entries first, then the main server's (apr_array_append). */
function mergeServerConfig(base: Readonly<InfoServerConfig>, add: Readonly<InfoServerConfig>): InfoServerConfig {
  return { moreInfo: [...add.moreInfo, ...base.moreInfo] } satisfies { [K in keyof Required<InfoServerConfig>]: InfoServerConfig[K] };
}

function addModuleInfo(cmd: CmdParms<InfoServerConfig, unknown>, name: string, info: string): undefined {
  cmd.srv.moreInfo.push({ name, info });
  return undefined;
}

// ---- the configuration tree -----------------------------------------------------------------

/** Where the output goes: the response (HTML) or stdout (-D DUMP_CONFIG, text). */
interface Sink {
  readonly html: boolean;
  put(s: string): void;
  /** The file last announced ("In file: ..."). */
  fn: string | undefined;
}

/** put_int_flush_right: the line number right-aligned in four places (&nbsp; for blanks). */
function flushRight(sink: Sink, i: number, field: number): void {
  const digits = i === 0 ? '' : String(i);
  sink.put((sink.html ? '&nbsp;' : ' ').repeat(Math.max(0, field - digits.length)) + digits);
}

function indent(sink: Sink, nest: number, file: string, line: number): void {
  if (sink.fn === undefined || sink.fn !== file) {
    // httpd keeps the escaped name and compares it with the next raw one.
    const shown = sink.html ? escapeHtml(file) : file;
    sink.put(sink.html ? `<dd><tt><strong>In file: ${shown}</strong></tt></dd>\n` : `# In file: ${file}\n`);
    sink.fn = shown;
  }
  if (sink.html) {
    sink.put('<dd><tt>');
    flushRight(sink, line > 0 ? line : 0, 4);
    sink.put(':&nbsp;');
  } else if (line > 0) {
    sink.put('  '.repeat(nest) + '#');
    flushRight(sink, line, 4);
    sink.put(':\n');
  }
  sink.put((sink.html ? '&nbsp;&nbsp;' : '  ').repeat(nest));
}

/** httpd's directive name and arguments: a section is "<Name" with "args>". */
function directiveOf(n: ConfigTreeNode): { directive: string; args: string } {
  if (n.source.kind === 'section') return { directive: '<' + n.name, args: n.args === '' ? '>' : n.args + '>' };
  return { directive: n.name, args: n.args };
}

function showCmd(sink: Sink, n: ConfigTreeNode, nest: number): void {
  indent(sink, nest, n.file, n.line);
  const d = directiveOf(n);
  sink.put(sink.html ? `${escapeHtml(d.directive)} <i>${escapeHtml(d.args)}</i></tt></dd>\n` : `${d.directive} ${d.args}\n`);
}

function showOpen(sink: Sink, n: ConfigTreeNode, nest: number): void {
  indent(sink, nest, n.file, n.line);
  const d = directiveOf(n);
  sink.put(sink.html ? `${escapeHtml(d.directive)} ${escapeHtml(d.args)}</tt></dd>\n` : `${d.directive} ${d.args}\n`);
}

function showClose(sink: Sink, n: ConfigTreeNode, nest: number): void {
  indent(sink, nest, n.file, 0);
  const d = directiveOf(n).directive;
  if (d.startsWith('<')) sink.put(sink.html ? `&lt;/${escapeHtml(d.slice(1))}&gt;</tt></dd>` : `</${d.slice(1)}>\n`);
  else sink.put(sink.html ? `/${escapeHtml(d)}</tt></dd>` : `/${d}\n`);
}

/** mod_info_module_cmds: the directives `names` (all when null) with their enclosing
 *  sections; returns the depth shown so far. */
function moduleCmds(sink: Sink, names: ReadonlySet<string> | null, nodes: readonly ConfigTreeNode[], parents: readonly ConfigTreeNode[], from: number, level: number): number {
  let shown = from;
  if (level === 0) sink.fn = undefined;
  for (const n of nodes) {
    if (n.children !== undefined && n.children.length > 0) {
      if (level < moduleCmds(sink, names, n.children, [...parents, n], shown, level + 1)) {
        shown = level;
        showClose(sink, n, level);
      }
    } else if (names === null || names.has(directiveOf(n).directive.toLowerCase())) {
      if (shown < level) {
        for (let l = shown; l < level; l++) showOpen(sink, parents[l]!, l);
        shown = level;
      }
      showCmd(sink, n, level);
    }
  }
  return shown;
}

function directiveNames(m: AnyModuleHandle): Set<string> {
  const s = new Set<string>();
  for (const d of m.decl.directives ?? []) s.add(d.name.toLowerCase());
  return s;
}

// ---- hooks ----------------------------------------------------------------------------------

const REQUEST_HOOKS: readonly [string, RequestHookName | 'preConnection' | 'noteAuthFailure'][] = [
  ['Pre-Connection', 'preConnection'],
  ['Post-Read Request', 'postReadRequest'],
  ['Header Parse', 'headerParser'],
  ['Translate Name', 'translateName'],
  ['Map to Storage', 'mapToStorage'],
  ['Check Access', 'accessCheckerEx'],
  ['Check Access (legacy)', 'accessChecker'],
  ['Verify User ID', 'checkUserId'],
  ['Note Authentication Failure', 'noteAuthFailure'],
  ['Verify User Access', 'authChecker'],
  ['Check Type', 'typeChecker'],
  ['Fixups', 'fixups'],
  ['Insert Filters', 'insertFilter'],
  ['Content Handlers', 'handler'],
  ['Transaction Logging', 'logTransaction'],
  ['Insert Errors', 'insertErrorFilter'],
];

const STARTUP_HOOKS: readonly [string, 'preConfig' | 'checkConfig' | 'postConfig' | 'childInit'][] = [
  ['Pre-Config', 'preConfig'],
  ['Check Configuration', 'checkConfig'],
  ['Post Configuration', 'postConfig'],
  ['Child Init', 'childInit'],
];

/** The order a module registered a request hook with (null: it did not). */
function hookOrder(m: AnyModuleHandle, hook: RequestHookName | 'preConnection' | 'noteAuthFailure'): number | null {
  if (hook === 'preConnection') return (m.decl.providers ?? []).some((p) => p.group === 'connection_layer') ? HOOK_MIDDLE : null;
  if (hook === 'noteAuthFailure') return (m.decl.providers ?? []).some((p) => p.group === 'auth_type') ? HOOK_MIDDLE : null;
  const reg = m.decl.hooks?.[hook] as HookEntry<RequestHookName> | readonly HookEntry<RequestHookName>[] | undefined;
  if (reg === undefined) return null;
  const first = Array.isArray(reg) ? (reg as readonly HookEntry<RequestHookName>[])[0] : reg as HookEntry<RequestHookName>;
  if (first === undefined) return null;
  return typeof first === 'function' ? HOOK_MIDDLE : first.order ?? HOOK_MIDDLE;
}

function sortedModules(ctx: ConfigContext): AnyModuleHandle[] {
  return [...ctx.loaded].sort((a, b) => (a.decl.source < b.decl.source ? -1 : a.decl.source > b.decl.source ? 1 : 0));
}

function dumpHook(out: string[], r: Request, mods: readonly { source: string; order: number }[]): void {
  const qs = r.args !== undefined && r.args.toLowerCase() === 'hooks' ? '?' : '#';
  for (const m of [...mods].sort((a, b) => a.order - b.order)) {
    const o = m.order < 0 ? '-' + String(-m.order).padStart(2, '0') : String(m.order).padStart(2, '0');
    out.push(`&nbsp;&nbsp; ${o} <a href="${qs}${m.source}">${m.source}</a> <br/>`);
  }
}

function showHooks(out: string[], r: Request, ctx: ConfigContext): void {
  out.push('<h2><a name="startup_hooks">Startup Hooks</a></h2>\n<dl>');
  for (const [label, key] of STARTUP_HOOKS) {
    out.push(`<dt><strong>${label}:</strong>\n <br /><tt>\n`);
    dumpHook(out, r, ctx.loaded.filter((m) => m.decl.configHooks?.[key] !== undefined).map((m) => ({ source: m.decl.source, order: HOOK_MIDDLE })));
    out.push('\n  </tt>\n</dt>\n');
  }
  out.push('</dl>\n<hr />\n<h2><a name="request_hooks">Request Hooks</a></h2>\n<dl>');
  for (const [label, key] of REQUEST_HOOKS) {
    out.push(`<dt><strong>${label}:</strong>\n <br /><tt>\n`);
    const mods: { source: string; order: number }[] = [];
    for (const m of ctx.loaded) {
      const o = hookOrder(m, key);
      if (o !== null) mods.push({ source: m.decl.source, order: o });
    }
    dumpHook(out, r, mods);
    out.push('\n  </tt>\n</dt>\n');
  }
  out.push('</dl>\n<hr />\n<h2><a name="other_hooks">Other Hooks</a></h2>\n<dl>');
  out.push('</dl>\n<hr />\n');
}

function showProviders(out: string[], ctx: ConfigContext): void {
  out.push('<h2><a name="providers">Providers</a></h2>\n<dl>');
  const groups = new Map<string, Map<string, Set<string>>>();
  for (const m of ctx.loaded) {
    for (const p of m.decl.providers ?? []) {
      let g = groups.get(p.group);
      if (!g) groups.set(p.group, (g = new Map()));
      let v = g.get(p.version);
      if (!v) g.set(p.version, (v = new Set()));
      v.add(p.name);
    }
  }
  const keys: [string, string][] = [];
  for (const [g, versions] of groups) for (const v of versions.keys()) keys.push([g, v]);
  keys.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  let cur: string | undefined;
  for (const [g, v] of keys) {
    if (cur !== g) {
      if (cur !== undefined) out.push('\n</dt>\n');
      cur = g;
      out.push(`<dt><strong>${g}</strong> (version <tt>${v}</tt>):\n <br />\n`);
    }
    for (const name of [...groups.get(g)!.get(v)!].sort()) out.push(`<tt>&nbsp;&nbsp;${name}</tt><br/>`);
  }
  if (cur !== undefined) out.push('\n</dt>\n');
  out.push('</dl>\n<hr />\n');
}

// ---- server settings ----------------------------------------------------------------------------

function showServerSettings(out: string[], r: Request, ctx: ConfigContext): void {
  const s = r.server;
  const mpm = ctx.loaded.find((m) => m.decl.name.startsWith('mpm_'));
  const mpmName = mpm ? mpm.decl.name.replace(/^mpm_|_module$/g, '') : '';
  const one = ctx.defines.has('DEBUG') || ctx.defines.has('ONE_PROCESS');
  out.push('<h2><a name="server">Server Settings</a></h2>');
  out.push(`<dl><dt><strong>Server Version:</strong> <font size="+1"><tt>Apache/${APACHE_COMPAT_VERSION} (Unix) plume/${PLUME_VERSION}</tt></font></dt>\n`);
  out.push(`<dt><strong>Server Built:</strong> <font size="+1"><tt>${BUILT}</tt></font></dt>\n`);
  out.push(`<dt><strong>Server loaded Node.js Version:</strong> <tt>${process.versions.node}</tt></dt>\n`);
  out.push(`<dt><strong>plume Module API Version:</strong> <tt>${MODULE_API_VERSION}</tt></dt>\n`);
  out.push(`<dt><strong>Module Magic Number:</strong> <tt>${MMN}</tt></dt>\n`);
  out.push(`<dt><strong>Hostname/port:</strong> <tt>${escapeHtml(r.rt.serverName(r))}:${r.rt.serverPort(r)}</tt></dt>\n`);
  out.push(`<dt><strong>Timeouts:</strong> <tt>connection: ${s.timeout} &nbsp;&nbsp; keep-alive: ${Math.floor(s.keepAliveTimeout / 1000)}</tt></dt>`);
  out.push(`<dt><strong>MPM Name:</strong> <tt>${mpmName}</tt></dt>\n`);
  out.push(`<dt><strong>MPM Information:</strong> <tt>Max Daemons: ${one ? 1 : Number(process.env['PLUME_CHILD_SLOT'] ?? 0) + 1} Threaded: ${mpmName === 'prefork' ? 'no' : 'yes'} Forked: yes</tt></dt>\n`);
  out.push(`<dt><strong>Server Architecture:</strong> <tt>${process.arch === 'x64' || process.arch === 'arm64' ? 64 : 32}-bit</tt></dt>\n`);
  out.push(`<dt><strong>Server Root:</strong> <tt>${ctx.serverRoot}</tt></dt>\n`);
  out.push(`<dt><strong>Config File:</strong> <tt>${ctx.options.configFile}</tt></dt>\n`);
  out.push('<dt><strong>Server Built With:</strong>\n<tt style="white-space: pre;">\n');
  out.push(' -D APR_HAS_SENDFILE\n -D APR_HAVE_IPV6 (IPv4-mapped addresses enabled)\n -D AP_HAVE_RELIABLE_PIPED_LOGS\n');
  out.push('</tt></dt>\n</dl><hr />');
}

// ---- the modules ------------------------------------------------------------------------------

function findMoreInfo(s: ServerRec, name: string): string | undefined {
  return self.server(s).moreInfo.find((e) => e.name === name)?.info;
}

function showModule(out: string[], r: Request, m: AnyModuleHandle, ctx: ConfigContext): void {
  const d = m.decl;
  const name = d.source;
  out.push(`<dl><dt><a name="${name}"><strong>Module Name:</strong></a> <font size="+1"><tt><a href="?${name}">${name}</a></tt></font></dt>\n`);
  out.push('<dt><strong>Content handlers:</strong> ');
  out.push(hookOrder(m, 'handler') !== null ? '<tt> <em>yes</em></tt>' : '<tt> <em>none</em></tt>');
  out.push('</dt><dt><strong>Configuration Phase Participation:</strong>\n');
  const phases: string[] = [];
  if (d.createDirConfig) phases.push('<tt>Create Directory Config</tt>');
  if (d.mergeDirConfig) phases.push('<tt>Merge Directory Configs</tt>');
  if (d.createServerConfig) phases.push('<tt>Create Server Config</tt>');
  if (d.mergeServerConfig) phases.push('<tt>Merge Server Configs</tt>');
  out.push(phases.length > 0 ? phases.join(', ') : '<tt> <em>none</em></tt>');
  out.push('</dt><dt><strong>Request Phase Participation:</strong>\n');
  const hooks = REQUEST_HOOKS.filter(([, k]) => hookOrder(m, k) !== null).map(([label]) => `<tt>${label}</tt>`);
  out.push(hooks.length > 0 ? hooks.join(', ') : '<tt> <em>none</em></tt>');
  out.push('</dt>\n');
  const dirs = d.directives ?? [];
  if (dirs.length > 0) {
    out.push('<dt><strong>Module Directives:</strong></dt>');
    for (const spec of dirs) {
      out.push(`<dd><tt>${escapeHtml(spec.name)}${spec.name.startsWith('<') ? '&gt;' : ''} - <i>${escapeHtml(spec.help)}</i></tt></dd>\n`);
    }
    out.push('<dt><strong>Current Configuration:</strong></dt>\n');
    const sink = htmlSink(out);
    moduleCmds(sink, directiveNames(m), ctx.configTree, [], 0, 0);
  } else {
    out.push('<dt><strong>Module Directives:</strong> <tt>none</tt></dt>');
  }
  const more = findMoreInfo(r.server, name);
  if (more !== undefined) out.push(`<dt><strong>Additional Information:</strong>\n</dt><dd>${more}</dd>`);
  out.push('</dl><hr />\n');
}

function htmlSink(out: string[]): Sink {
  return { html: true, fn: undefined, put: (s) => { out.push(s); } };
}

// ---- the handler ----------------------------------------------------------------------------------

function displayInfo(r: Request): MaybePromise<number> {
  if (r.handler !== 'server-info') return DECLINED;
  if (r.method !== 'GET' && r.method !== 'HEAD') return DECLINED;
  const ctx = r.rt.ctx;
  r.contentType = 'text/html; charset=ISO-8859-1';
  const out: string[] = [];
  out.push('<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN"\n"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n'
    + '<html xmlns="http://www.w3.org/1999/xhtml">\n<head>\n  <title>Server Information</title>\n</head>\n');
  out.push('<body><h1 style="text-align: center">Apache Server Information</h1>\n');
  const args = r.args;
  const is = (w: string): boolean => args !== undefined && args.toLowerCase() === w;
  const modules = sortedModules(ctx);
  if (!is('list')) {
    if (args === undefined) {
      out.push('<dl><dt><tt>Subpages:<br />');
      out.push('<a href="?config">Configuration Files</a>, <a href="?server">Server Settings</a>, <a href="?list">Module List</a>, <a href="?hooks">Active Hooks</a>, <a href="?providers">Available Providers</a>');
      out.push('</tt></dt></dl><hr />');
      out.push('<dl><dt><tt>Sections:<br />');
      out.push('<a href="#modules">Loaded Modules</a>, <a href="#server">Server Settings</a>, <a href="#startup_hooks">Startup Hooks</a>, <a href="#request_hooks">Request Hooks</a>, <a href="#other_hooks">Other Hooks</a>, <a href="#providers">Providers</a>');
      out.push('</tt></dt></dl><hr />');
      out.push('<h2><a name="modules">Loaded Modules</a></h2><dl><dt><tt>');
      for (const m of modules) out.push(`<a href="#${m.decl.source}">${m.decl.source}</a>, `);
      out.push('</tt></dt></dl><hr />');
    }
    if (args === undefined || is('server')) showServerSettings(out, r, ctx);
    if (args === undefined || is('hooks')) showHooks(out, r, ctx);
    if (args === undefined || is('providers')) showProviders(out, ctx);
    if (is('config')) {
      out.push('<dl><dt><strong>Configuration:</strong>\n');
      moduleCmds(htmlSink(out), null, ctx.configTree, [], 0, 0);
      out.push('</dl><hr />');
    } else {
      // (httpd prints "No such module" only when no module is loaded at all.)
      for (const m of modules) {
        if (args === undefined || args.toLowerCase() === m.decl.source.toLowerCase()) {
          showModule(out, r, m, ctx);
          if (args !== undefined) break;
        }
      }
    }
  } else {
    out.push('<dl><dt>Server Module List</dt>');
    for (const m of modules) out.push(`<dd>${m.decl.source}</dd>`);
    out.push('</dl><hr />');
  }
  out.push(r.rt.signature(r, ''));
  out.push('</body></html>\n');
  const w = r.write([{ kind: 'data', data: Buffer.from(out.join(''), 'latin1') }, EOS]);
  return w instanceof Promise ? w.then(() => OK) : OK;
}

/** -D DUMP_CONFIG: the configuration as read, on stdout, when the configuration is checked. */
function checkConfig(ctx: ConfigContext): undefined {
  if (!ctx.defines.has('DUMP_CONFIG') || ctx.child) return undefined;
  const parts: string[] = [];
  moduleCmds({ html: false, fn: undefined, put: (s) => { parts.push(s); } }, null, ctx.configTree, [], 0, 0);
  process.stdout.write(parts.join(''));
  return undefined;
}

// ---- the module ---------------------------------------------------------------------------------

const self = defineModule<InfoServerConfig, unknown>({
  name: 'info_module',
  source: 'mod_info.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive({ name: 'AddModuleInfo', args: 'TAKE2', where: RSRC_CONF, help: 'a module name and additional information on that module', handler: addModuleInfo }),
  ],
  hooks: {
    handler: { fn: displayInfo, order: HOOK_MIDDLE },
  },
  configHooks: { checkConfig },
});

export default self;
