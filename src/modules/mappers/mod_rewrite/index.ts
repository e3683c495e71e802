// mod_rewrite (modules/mappers/mod_rewrite.c): RewriteEngine, RewriteOptions, RewriteBase,
// RewriteCond, RewriteRule and RewriteMap, with httpd's two places of rewriting:
//  - translate_name (HOOK_FIRST, before mod_proxy): the server's rules against the URL-path;
//  - fixups (HOOK_FIRST): the rules of <Directory>, <Location> and .htaccess against the file
//    path with the directory prefix stripped, ending in an internal redirect
//    ("redirect-handler") when the path changed;
//  - fixups (HOOK_LAST): the [T=] and [H=] of a matched rule.
// Rules are compiled when the configuration (or a .htaccess file version) is read. Tracing
// goes to the error log at `LogLevel rewrite:trace1`..`trace8`; RewriteLog and
// RewriteLogLevel are gone in 2.4 (invalid commands). [P] needs mod_proxy: without it the
// request is refused with AH00669 / AH10160, as httpd does; a mod_proxy takes `proxy:URL`
// filenames with the "proxy-server" handler and is found by name, not imported.

import * as fs from 'node:fs';
import {
  DECLINED, HOOK_FIRST, HOOK_LAST, MODULE_API_VERSION, OK, OR_FILEINFO, RSRC_CONF,
  defineModule, directive,
} from '../../../server/module.js';
import type { CmdParms } from '../../../server/config/cmd.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { Request } from '../../../server/request/request.js';
import type { ConfigContext } from '../../../server/config/context.js';
import { APLOG_ERR, APLOG_WARNING } from '../../../server/log/levels.js';
import { coreDir } from '../../../server/core/core-module.js';
import { OPT_SYM_LINKS, OPT_SYM_OWNER } from '../../../server/core/config.js';
import { translateName as coreTranslate } from '../../../server/core/core-hooks.js';
import { getServerName, getServerPort, httpScheme } from '../../../server/core/server-name.js';
import { fsPath } from '../../../server/request/stat-cache.js';
import {
  parseCond, parseRule, RULEFLAG_UNSAFE_PREFIX_STAT, type RewriteRule,
} from './parse.js';
import {
  ACTION_NOESCAPE, ACTION_STATUS, ACTION_STATUS_SET, OPTION_ANYURI, OPTION_IGNORE_CONTEXT_INFO, OPTION_IGNORE_INHERIT,
  OPTION_INHERIT, OPTION_INHERIT_BEFORE, OPTION_INHERIT_DOWN, OPTION_INHERIT_DOWN_BEFORE, OPTION_LEGACY_PREFIX_DOCROOT,
  OPTION_MERGEBASE, OPTION_NOSLASH, OPTION_UNSAFE_PREFIX_STAT, applyRewriteList, documentRoot, drive, endMarked,
  type Ctx, type RewriteDirConfig, type RewriteServerConfig, type RewriteTraceEvents, type Services,
} from './engine.js';
import { absoluteUriScheme, escapeAbsoluteUri, escapeUri, hasCtlOrSpace } from './uri.js';
import { parseMap, startPrograms, stopPrograms } from './maps.js';
import { L, rewritelog, traceOn } from './log.js';
import { compileCondExpr, evalCondExpr } from './expr.js';

declare module '../../../server/request/request.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-interface
  interface TraceEvents extends RewriteTraceEvents {}
}

type Cmd = CmdParms<RewriteServerConfig, RewriteDirConfig>;

// ---- configuration ------------------------------------------------------------------------------

function createServerConfig(s: ServerRec): RewriteServerConfig {
  return { enabled: false, stateSet: false, options: 0, optionsSet: false, maps: new Map(), pendingConds: [], rules: [], serverId: s.id };
}

/** config_server_merge. */
function mergeServerConfig(base: Readonly<RewriteServerConfig>, add: Readonly<RewriteServerConfig>): RewriteServerConfig {
  const options = add.optionsSet ? add.options : base.options;
  const a: RewriteServerConfig = {
    enabled: add.stateSet ? add.enabled : base.enabled,
    stateSet: add.stateSet || base.stateSet,
    options,
    optionsSet: add.optionsSet || base.optionsSet,
    serverId: add.serverId,
    maps: add.maps,
    pendingConds: add.pendingConds,
    rules: add.rules,
  };
  if ((options & OPTION_INHERIT) || ((base.options & OPTION_INHERIT_DOWN) && !(options & OPTION_IGNORE_INHERIT))) {
    a.maps = new Map([...base.maps, ...add.maps]);
    a.rules = add.rules.concat(base.rules);
  } else if ((options & OPTION_INHERIT_BEFORE) || ((base.options & OPTION_INHERIT_DOWN_BEFORE) && !(options & OPTION_IGNORE_INHERIT))) {
    a.maps = new Map([...add.maps, ...base.maps]);
    a.rules = base.rules.concat(add.rules);
  }
  return a;
}

function createDirConfig(path: string | undefined): RewriteDirConfig {
  return {
    enabled: false, stateSet: false, options: 0, optionsSet: false, pendingConds: [], rules: [],
    directory: path === undefined ? undefined : path.endsWith('/') ? path : path + '/',
    baseurl: undefined, baseurlSet: false,
  };
}

/** config_perdir_merge. */
function mergeDirConfig(base: Readonly<RewriteDirConfig>, add: Readonly<RewriteDirConfig>): RewriteDirConfig {
  const options = add.optionsSet ? add.options : base.options;
  const mergeBase = (options & OPTION_MERGEBASE) !== 0;
  let rules = add.rules;
  if ((options & OPTION_INHERIT) || ((base.options & OPTION_INHERIT_DOWN) && !(options & OPTION_IGNORE_INHERIT))) {
    rules = add.rules.concat(base.rules);
  } else if ((options & OPTION_INHERIT_BEFORE) || ((base.options & OPTION_INHERIT_DOWN_BEFORE) && !(options & OPTION_IGNORE_INHERIT))) {
    rules = base.rules.concat(add.rules);
  }
  return {
    enabled: add.stateSet ? add.enabled : base.enabled,
    stateSet: add.stateSet || base.stateSet,
    options,
    optionsSet: add.optionsSet || base.optionsSet,
    pendingConds: add.pendingConds,
    rules,
    directory: add.directory,
    baseurl: mergeBase ? (add.baseurlSet ? add.baseurl : base.baseurl) : add.baseurl,
    baseurlSet: mergeBase ? add.baseurlSet || base.baseurlSet : add.baseurlSet,
  };
}

// ---- directives -----------------------------------------------------------------------------------

function cmdEngine(cmd: Cmd, on: boolean): undefined {
  if (cmd.path === undefined) {
    cmd.srv.enabled = on;
    cmd.srv.stateSet = true;
  }
  cmd.dir.enabled = on;
  cmd.dir.stateSet = true;
  return undefined;
}

const OPTION_WORDS: Record<string, number> = {
  inherit: OPTION_INHERIT, inheritbefore: OPTION_INHERIT_BEFORE, inheritdown: OPTION_INHERIT_DOWN,
  inheritdownbefore: OPTION_INHERIT_DOWN_BEFORE, ignoreinherit: OPTION_IGNORE_INHERIT, allownoslash: OPTION_NOSLASH,
  allowanyuri: OPTION_ANYURI, mergebase: OPTION_MERGEBASE, ignorecontextinfo: OPTION_IGNORE_CONTEXT_INFO,
  legacyprefixdocroot: OPTION_LEGACY_PREFIX_DOCROOT, unsafeprefixstat: OPTION_UNSAFE_PREFIX_STAT,
};

function cmdOptions(cmd: Cmd, w: string): string | undefined {
  let options = 0;
  const bit = OPTION_WORDS[w.toLowerCase()];
  if (bit !== undefined) options |= bit;
  else if (w.slice(0, 13).toLowerCase() === 'maxredirects=') {
    cmd.log('rewrite', APLOG_WARNING, 'AH00664: RewriteOptions: MaxRedirects option has been removed in favor of the global LimitInternalRecursion directive and will be ignored.');
  } else {
    return `RewriteOptions: unknown option '${w}'`;
  }
  if (cmd.path === undefined) {
    cmd.srv.options |= options;
    cmd.srv.optionsSet = true;
  }
  cmd.dir.options |= options;
  cmd.dir.optionsSet = true;
  return undefined;
}

function cmdBase(cmd: Cmd, a1: string): string | undefined {
  if (cmd.path === undefined) return 'RewriteBase: only valid in per-directory config files';
  if (a1 === '') return 'RewriteBase: empty URL not allowed';
  if (a1[0] !== '/') return 'RewriteBase: argument is not a valid URL';
  cmd.dir.baseurl = a1;
  cmd.dir.baseurlSet = true;
  return undefined;
}

function cmdCond(cmd: Cmd, raw: string): string | undefined {
  const res = parseCond(raw, cmd.file, cmd.line);
  if (res.error !== undefined) return res.error;
  if (res.warning !== undefined) cmd.log('rewrite', APLOG_WARNING, res.warning);
  const cond = res.cond!;
  if (res.exprText !== undefined) {
    const compiled = compileCondExpr(cmd, res.exprText, cond.flags);
    if (typeof compiled === 'string') return `RewriteCond: cannot compile expression "${res.exprText}" ${compiled}`;
    cond.expr = compiled;
  }
  (cmd.path === undefined ? cmd.srv : cmd.dir).pendingConds.push(cond);
  return undefined;
}

function cmdRule(cmd: Cmd, raw: string): string | undefined {
  const holder = cmd.path === undefined ? cmd.srv : cmd.dir;
  const res = parseRule(raw, holder.pendingConds, cmd.file, cmd.line);
  if (res.error !== undefined) return res.error;
  holder.rules.push(res.rule!);
  holder.pendingConds = [];
  return undefined;
}

function cmdMap(cmd: Cmd, name: string, spec: string, a3: string | undefined): string | undefined {
  const m = parseMap(name, spec, a3, cmd.server.id, (p) => cmd.serverRootRelative(p), (query, label) => {
    const dbd = cmd.ctx.provider('dbd', 'dbd');
    if (dbd === undefined) return false;
    dbd.prepare(cmd.server, query, label);
    return true;
  });
  if (typeof m === 'string') return m;
  cmd.srv.maps.set(name, m);
  return undefined;
}

/** This module's merged per-directory configuration, if any section made one (the server
 *  level has none when no rewrite directive appears there). */
function dirConfOf(r: Request): RewriteDirConfig | undefined {
  return self.dir(r) as RewriteDirConfig | undefined;
}

// ---- request time -----------------------------------------------------------------------------------

const services: Services = {
  lookupUri: (r, uri) => r.rt.lookupUri(r, uri),
  lookupFile: (r, file) => r.rt.lookupFile(r, file),
  evalExpr: (r, expr) => evalCondExpr(r, expr),
};

function newCtx(r: Request, perdir: string | undefined, dconf: RewriteDirConfig | undefined, sconf: RewriteServerConfig): Ctx {
  return {
    r, uri: r.filename, perdir, dconf, maps: sconf.maps, varyThis: undefined, vary: undefined, rr: undefined, rc: undefined,
    services, legacyPrefixDocroot: (sconf.options & OPTION_LEGACY_PREFIX_DOCROOT) !== 0, lastsub: undefined,
  };
}

/** Whether mod_proxy is loaded (httpd's proxy_available, ap_find_linked_module). */
const proxyAvailable = new WeakMap<ConfigContext, boolean>();
function hasProxy(r: Request): boolean {
  let v = proxyAvailable.get(r.rt.ctx);
  if (v === undefined) { v = r.rt.ctx.isLoaded('mod_proxy.c'); proxyAvailable.set(r.rt.ctx, v); }
  return v;
}

const startsWithLogged = (r: Request, haystack: string, needle: string): boolean => {
  const rc = haystack.startsWith(needle);
  if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.startsWith, `prefix_stat startsWith(${haystack}, ${needle}) ${rc ? 1 : 0}`);
  return rc;
};

/** prefix_stat: whether the first path segment exists (and, unless unsafe, the rule named it
 *  literally or the path is under the document root): then the path is a file path. */
function prefixStat(r: Request, p: string, lastsub: RewriteRule | undefined): boolean {
  if (!p.startsWith('/')) return false;
  // apr_filepath_root: the root is "/", and every leading slash goes with it.
  let k = 0;
  while (p[k] === '/') k++;
  const cur = p.slice(k);
  const slash = cur.indexOf('/');
  const seg = slash >= 0 ? cur.slice(0, slash) : cur;
  if (seg === '..') return false;
  const statpath = '/' + (seg === '.' ? '' : seg);
  try { fs.statSync(fsPath(statpath)); } catch { return false; }
  if (lastsub === undefined) {
    if (traceOn(r, 3)) rewritelog(r, 3, undefined, L.prefixStatNoLast, `prefix_stat no lastsub subst prefix ${statpath}`);
    return true;
  }
  if (traceOn(r, 3)) rewritelog(r, 3, undefined, L.prefixStatCompare, `prefix_stat compare statpath ${statpath} and lastsub output ${lastsub.output} STATOK ${lastsub.flags & RULEFLAG_UNSAFE_PREFIX_STAT} `);
  if (lastsub.flags & RULEFLAG_UNSAFE_PREFIX_STAT) return true;
  return startsWithLogged(r, lastsub.output, statpath) || startsWithLogged(r, p, documentRoot(r))
    || (r.contextDocumentRoot !== undefined && startsWithLogged(r, p, r.contextDocumentRoot));
}

/** The redirect answer shared by both hooks: escaped target, query string, status. */
function redirectAnswer(r: Request, perdir: string | undefined, rulestatus: number, oargs: string | undefined, skip: number): number {
  if (rulestatus !== ACTION_NOESCAPE) {
    if (traceOn(r, 1)) rewritelog(r, 1, perdir, perdir !== undefined ? L.dEscapeRedirect : L.escapeRedirect, `escaping ${r.filename} for redirect`);
    r.filename = escapeAbsoluteUri(r.filename, skip) ?? r.filename;
  }
  if (r.args !== undefined) {
    const noescape = rulestatus === ACTION_NOESCAPE || (oargs !== undefined && r.args === oargs);
    const escaped = noescape ? '' : escapeUri(r.args);
    r.filename = `${r.filename}?${noescape ? r.args : escaped}`;
    if (traceOn(r, 1)) rewritelog(r, 1, perdir, perdir !== undefined ? L.dQueryRedirect : L.queryRedirect, `${noescape ? 'copying' : 'escaping'} ${r.args} to query string for redirect ${escaped}`);
  }
  let n: number;
  if (r.status >= 300 && r.status <= 399) {
    n = r.status;
    r.status = 200;
  } else {
    n = 302;
  }
  r.headersOut.set('Location', r.filename);
  if (traceOn(r, 1)) rewritelog(r, 1, perdir, perdir !== undefined ? L.dRedirectTo : L.redirectTo, `redirect to ${r.filename} [REDIRECT/${n}]`);
  r.trace?.record('rewrite_result', { perdir, text: `external redirect: ${n} Location: ${r.filename}` });
  return n;
}

function proxyAnswer(r: Request, perdir: string | undefined, rulestatus: number): number {
  if (!hasProxy(r)) {
    r.log('rewrite', APLOG_ERR, `${perdir !== undefined ? 'AH10160' : 'AH00669'}: attempt to make remote request from mod_rewrite without proxy enabled: ${r.filename}`);
    r.trace?.record('rewrite_result', { perdir, text: `403: [P] needs mod_proxy, which is not loaded (${r.filename})` });
    return 403;
  }
  if (rulestatus === ACTION_NOESCAPE) r.notes.set('proxy-nocanon', '1');
  if (perdir === undefined && r.pathInfo !== '') r.filename += r.pathInfo;
  if (r.args !== undefined && r.notes.has('proxy-nocanon')) r.filename += '?' + r.args;
  r.proxyreq = 2; // PROXYREQ_REVERSE
  r.handler = 'proxy-server';
  if (traceOn(r, 1)) rewritelog(r, 1, perdir, perdir !== undefined ? L.dGoProxy : L.goProxy, `go-ahead with proxy request ${r.filename} [OK]`);
  r.trace?.record('rewrite_result', { perdir, text: `proxy request ${r.filename} (handler proxy-server)` });
  return OK;
}

/** hook_uri2file: the server's rule set, on translate_name. */
function hookUri2file(r: Request): number | Promise<number> {
  const dconf = dirConfOf(r);
  if (dconf === undefined || !dconf.enabled) return DECLINED;
  const conf = self.server(r.server);
  if (conf.serverId !== r.server.id) return DECLINED;
  if (endMarked(r)) {
    if (traceOn(r, 8)) rewritelog(r, 8, undefined, L.declineEnd, 'Declining, no further rewriting due to END flag');
    return DECLINED;
  }
  if (!(dconf.options & OPTION_ANYURI) && (r.unparsedUri === '*' || r.uri === '' || r.uri[0] !== '/')) {
    if (traceOn(r, 8)) rewritelog(r, 8, undefined, L.declineUri, `Declining, request-URI '${r.uri}' is not a URL-path. Consult the manual entry for the RewriteOptions directive for options and caveats about matching other strings.`);
    return DECLINED;
  }
  const oargs = r.args;
  // SCRIPT_URL and SCRIPT_URI.
  if (r.main === null) r.subprocessEnv.set('SCRIPT_URL', r.subprocessEnv.get('REDIRECT_SCRIPT_URL') ?? r.uri);
  else {
    const v = r.main.subprocessEnv.get('SCRIPT_URL');
    if (v !== undefined) r.subprocessEnv.set('SCRIPT_URL', v); else r.subprocessEnv.delete('SCRIPT_URL');
  }
  let host = getServerName(r);
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  const port = getServerPort(r);
  const scheme = httpScheme(r);
  const dport = scheme.toLowerCase() === 'https' ? 443 : 80;
  r.subprocessEnv.set('SCRIPT_URI', `${scheme}://${host}${port === dport ? '' : ':' + port}${r.subprocessEnv.get('SCRIPT_URL') ?? ''}`);

  const saved = r.notes.get('mod_rewrite_rewritten');
  if (saved !== undefined) {
    if (traceOn(r, 2)) rewritelog(r, 2, undefined, L.already, `uri already rewritten. Status ${saved}, Uri ${r.uri}, r->filename ${r.filename}`);
    return finishUri2file(r, conf, oargs, Number(saved), undefined);
  }
  if (r.filename === '') {
    r.filename = r.uri;
    if (traceOn(r, 2)) rewritelog(r, 2, undefined, L.initUri, `init rewrite engine with requested uri ${r.filename}`);
  } else if (traceOn(r, 2)) {
    rewritelog(r, 2, undefined, L.initFilename, `init rewrite engine with passed filename ${r.filename}. Original uri = ${r.uri}`);
  }
  const ctx = newCtx(r, undefined, dconf, conf);
  const st = drive(applyRewriteList(ctx, conf.rules));
  const after = (rulestatus: number): number => {
    r.notes.set('mod_rewrite_rewritten', String(rulestatus));
    return finishUri2file(r, conf, oargs, rulestatus, ctx.lastsub);
  };
  return typeof st === 'number' ? after(st) : st.then(after);
}

function finishUri2file(r: Request, conf: RewriteServerConfig, oargs: string | undefined, rulestatus: number, lastsub: RewriteRule | undefined): number {
  if (!rulestatus) {
    if (traceOn(r, 1)) rewritelog(r, 1, undefined, L.passThrough, `pass through ${r.filename}`);
    r.trace?.record('rewrite_result', { perdir: undefined, text: `pass through ${r.filename}` });
    return DECLINED;
  }
  const flen = r.filename.length;
  const skip = flen ? absoluteUriScheme(r.filename).len : 0;
  const toProxy = flen > 6 && r.filename.startsWith('proxy:');
  const willEscape = skip !== 0 && rulestatus !== ACTION_NOESCAPE;
  if (r.args !== undefined && !willEscape && hasCtlOrSpace(r.args)) {
    r.log('rewrite', APLOG_ERR, 'AH10410: Rewritten query string contains control characters or spaces');
    r.trace?.record('rewrite_result', { perdir: undefined, text: '403: the rewritten query string holds a control character or a blank (AH10410)' });
    return 403;
  }
  if (rulestatus === ACTION_STATUS) {
    const n = r.status;
    r.status = 200;
    r.trace?.record('rewrite_result', { perdir: undefined, text: `status ${n}` });
    return n;
  }
  if (rulestatus === ACTION_STATUS_SET) return r.status;
  if (toProxy) return proxyAnswer(r, undefined, rulestatus);
  if (skip > 0) return redirectAnswer(r, undefined, rulestatus, oargs, skip);
  if (flen > 12 && r.filename.startsWith('passthrough:')) {
    r.uri = r.filename.slice(12);
    r.trace?.record('rewrite_result', { perdir: undefined, text: `passed through as URL-path ${r.uri} [PT]` });
    return DECLINED;
  }
  r.filename = expandTildePaths(r.filename);
  if (traceOn(r, 2)) rewritelog(r, 2, undefined, L.localPath, `local path result: ${r.filename}`);
  if (!r.filename.startsWith('/')) {
    r.trace?.record('rewrite_result', { perdir: undefined, text: `400: the result ${r.filename} is not a path` });
    return 400;
  }
  const reduced = !(conf.options & OPTION_LEGACY_PREFIX_DOCROOT) ? r.notes.get('mod_rewrite_uri_reduced') : undefined;
  if (!prefixStat(r, r.filename, (conf.options & OPTION_UNSAFE_PREFIX_STAT) ? undefined : lastsub) || reduced !== undefined) {
    const tmp = r.uri;
    r.uri = r.filename;
    const res = coreTranslate(r);
    r.uri = tmp;
    if (res !== OK) {
      if (traceOn(r, 1)) rewritelog(r, 1, undefined, L.prefixFailed, `prefixing with document_root of ${r.filename} FAILED`);
      return res;
    }
    if (traceOn(r, 2)) rewritelog(r, 2, undefined, L.prefixed, `prefixed with document_root to ${r.filename}`);
  }
  if (traceOn(r, 1)) rewritelog(r, 1, undefined, L.goAhead, `go-ahead with ${r.filename} [OK]`);
  r.trace?.record('rewrite_result', { perdir: undefined, text: `file ${r.filename}` });
  return OK;
}

/** expand_tildepaths: /~user/... to the user's home directory. */
function expandTildePaths(uri: string): string {
  if (!uri.startsWith('/~')) return uri;
  let p = 2;
  while (p < uri.length && uri[p] !== '/') p++;
  if (p === 2) return uri;
  const home = homeOf(uri.slice(2, p));
  if (home === undefined) return uri;
  if (p < uri.length) return (home.endsWith('/') ? home.slice(0, -1) : home) + uri.slice(p);
  return home;
}

function homeOf(user: string): string | undefined {
  try {
    for (const line of fs.readFileSync('/etc/passwd', 'latin1').split('\n')) {
      const f = line.split(':');
      if (f[0] === user && f[5] !== undefined) return f[5];
    }
  } catch { /* no passwd database */ }
  return undefined;
}

/** hook_fixup: the per-directory rule set. */
function hookFixup(r: Request): number | Promise<number> {
  const dconf = dirConfOf(r);
  if (dconf === undefined || !dconf.enabled || dconf.directory === undefined) return DECLINED;
  const dir = dconf.directory;
  if (!(dconf.options & OPTION_NOSLASH)) {
    const l = dir.length - 1;
    if (r.filename.length === l && dir[l] === '/' && dir.startsWith(r.filename)) return DECLINED;
  }
  if (endMarked(r)) {
    if (traceOn(r, 8)) rewritelog(r, 8, dir, L.dDeclineEnd, 'Declining, no further rewriting due to END flag');
    return DECLINED;
  }
  if (!(coreDir(r).opts & (OPT_SYM_LINKS | OPT_SYM_OWNER))) {
    r.log('rewrite', APLOG_ERR, `AH00670: Options FollowSymLinks and SymLinksIfOwnerMatch are both off, so the RewriteRule directive is also forbidden due to its similar ability to circumvent directory restrictions : ${r.filename}`);
    return 403;
  }
  const ofilename = r.filename;
  const oargs = r.args;
  if (r.filename === '') {
    r.filename = r.uri;
    if (traceOn(r, 2)) rewritelog(r, 2, dir, L.dInit, `init rewrite engine with requested uri ${r.filename}`);
  }
  const ctx = newCtx(r, dir, dconf, self.server(r.server));
  const st = drive(applyRewriteList(ctx, dconf.rules));
  const after = (rulestatus: number): number => finishFixup(r, dconf, dir, rulestatus, ofilename, oargs);
  return typeof st === 'number' ? after(st) : st.then(after);
}

/** subst_prefix_path: the directory prefix of a path replaced by the RewriteBase. */
function substPrefixPath(r: Request, input: string, match: string, subst: string): string {
  let len = match.length;
  if (len && match[len - 1] === '/') len--;
  if (input.startsWith(match.slice(0, len)) && input[len] === '/') {
    len++;
    if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.stripPrefix, `strip matching prefix: ${input} -> ${input.slice(len)}`);
    const base = subst !== '' && !subst.endsWith('/') ? subst + '/' : subst;
    const output = base + input.slice(len);
    if (traceOn(r, 4)) rewritelog(r, 4, undefined, L.addSubstPrefix, `add subst prefix: ${input.slice(len)} -> ${output}`);
    return output;
  }
  return input;
}

function finishFixup(r: Request, dconf: RewriteDirConfig, dir: string, rulestatus: number, ofilename: string, oargs: string | undefined): number {
  if (!rulestatus) {
    if (traceOn(r, 1)) rewritelog(r, 1, dir, L.dPassThrough, `pass through ${r.filename}`);
    r.trace?.record('rewrite_result', { perdir: dir, text: `pass through ${r.filename}` });
    r.filename = ofilename;
    return DECLINED;
  }
  const skip = absoluteUriScheme(r.filename).len;
  const l = r.filename.length;
  const toProxy = l > 6 && r.filename.startsWith('proxy:');
  const willEscape = skip !== 0 && rulestatus !== ACTION_NOESCAPE;
  if (r.args !== undefined && !willEscape && hasCtlOrSpace(r.args)) {
    r.log('rewrite', APLOG_ERR, 'AH10411: Rewritten query string contains control characters or spaces');
    r.trace?.record('rewrite_result', { perdir: dir, text: '403: the rewritten query string holds a control character or a blank (AH10411)' });
    return 403;
  }
  if (rulestatus === ACTION_STATUS) {
    const n = r.status;
    r.status = 200;
    r.trace?.record('rewrite_result', { perdir: dir, text: `status ${n}` });
    return n;
  }
  if (rulestatus === ACTION_STATUS_SET) return r.status;
  if (toProxy) return proxyAnswer(r, dir, rulestatus);
  if (skip > 0) {
    if (dconf.baseurl !== undefined) {
      const slash = r.filename.indexOf('/', skip);
      if (slash >= 0 && slash + 1 < r.filename.length) {
        const cp = r.filename.slice(slash + 1);
        if (traceOn(r, 2)) rewritelog(r, 2, dir, L.dReplacePrefix, `trying to replace prefix ${dir} with ${dconf.baseurl}`);
        const cp2 = substPrefixPath(r, cp, dir.startsWith('/') ? dir.slice(1) : dir, dconf.baseurl.slice(1));
        if (cp2 !== cp) r.filename = r.filename.slice(0, slash + 1) + cp2;
      }
    }
    return redirectAnswer(r, dir, rulestatus, oargs, skip);
  }
  if (l > 12 && r.filename.startsWith('passthrough:')) r.filename = r.filename.slice(12);
  if (!r.filename.startsWith('/')) {
    r.trace?.record('rewrite_result', { perdir: dir, text: `400: the result ${r.filename} is not a path` });
    return 400;
  }
  if (ofilename !== '' && r.filename === ofilename) {
    if (traceOn(r, 1)) rewritelog(r, 1, dir, L.dIgnoring, `initial URL equal rewritten URL: ${r.filename} [IGNORING REWRITE]`);
    r.trace?.record('rewrite_result', { perdir: dir, text: `the result is the file already mapped (${r.filename}): no internal redirect` });
    return OK;
  }
  const tmpfilename = r.filename;
  if (dconf.baseurl !== undefined) {
    if (traceOn(r, 2)) rewritelog(r, 2, dir, L.dReplaceBase, `trying to replace prefix ${dir} with ${dconf.baseurl}`);
    r.filename = substPrefixPath(r, r.filename, dir, dconf.baseurl);
  } else {
    const root = documentRoot(r);
    const rl = root.endsWith('/') ? root.length - 1 : root.length;
    if (r.filename.startsWith(root.slice(0, rl)) && r.filename[rl] === '/') {
      if (traceOn(r, 2)) rewritelog(r, 2, dir, L.dStripDocroot, `strip document_root prefix: ${r.filename} -> ${r.filename.slice(rl)}`);
      r.filename = r.filename.slice(rl);
    }
  }
  // Not under the base or the document root: a context (an Alias) maps the file path back.
  if (tmpfilename === r.filename && !(dconf.options & OPTION_IGNORE_CONTEXT_INFO) && r.contextPrefix !== undefined) {
    const ccp = r.contextDocumentRoot ?? documentRoot(r);
    if (traceOn(r, 2)) rewritelog(r, 2, dir, L.dContext, `trying to replace context docroot ${ccp} with context prefix ${r.contextPrefix}`);
    r.filename = substPrefixPath(r, r.filename, ccp, r.contextPrefix);
  }
  r.notes.set('redirect-keeps-vary', '');
  if (traceOn(r, 1)) rewritelog(r, 1, dir, L.dInternal, `internal redirect with ${r.filename} [INTERNAL REDIRECT]`);
  r.trace?.record('rewrite_result', { perdir: dir, text: `internal redirect to ${r.filename}${r.args !== undefined ? '?' + r.args : ''}` });
  r.filename = 'redirect:' + r.filename;
  r.handler = 'redirect-handler';
  return OK;
}

/** hook_mimetype: [T=] and [H=] of the matched rules. */
function hookMimetype(r: Request): number {
  const t = r.notes.get('rewrite-forced-mimetype');
  if (t !== undefined && t !== '') {
    if (traceOn(r, 1)) rewritelog(r, 1, undefined, L.forceType, `force filename ${r.filename} to have MIME-type '${t}'`);
    r.contentType = t;
  }
  const h = r.notes.get('rewrite-forced-handler');
  if (h !== undefined && h !== '') {
    if (traceOn(r, 1)) rewritelog(r, 1, undefined, L.forceHandler, `force filename ${r.filename} to have the Content-handler '${h}'`);
    r.handler = h;
  }
  return OK;
}

/** handler_redirect: the internal redirect a per-directory rewrite asked for. */
function handlerRedirect(r: Request): number | Promise<number> {
  if (r.handler !== 'redirect-handler' || !r.filename.startsWith('redirect:')) return DECLINED;
  const target = r.filename.slice(9) + (r.args !== undefined ? '?' + r.args : '');
  return r.rt.internalRedirect(r, target).then(() => OK);
}

// ---- the module -------------------------------------------------------------------------------------

const self = defineModule<RewriteServerConfig, RewriteDirConfig>({
  name: 'rewrite_module',
  source: 'mod_rewrite.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<RewriteServerConfig, RewriteDirConfig, 'FLAG'>({
      name: 'RewriteEngine', args: 'FLAG', where: OR_FILEINFO,
      help: 'On or Off to enable or disable (default) the whole rewriting engine',
      handler: cmdEngine,
    }),
    directive<RewriteServerConfig, RewriteDirConfig, 'ITERATE'>({
      name: 'RewriteOptions', args: 'ITERATE', where: OR_FILEINFO,
      help: 'List of option strings to set',
      handler: cmdOptions,
    }),
    directive<RewriteServerConfig, RewriteDirConfig, 'TAKE1'>({
      name: 'RewriteBase', args: 'TAKE1', where: OR_FILEINFO,
      help: 'the base URL of the per-directory context',
      handler: cmdBase,
    }),
    directive<RewriteServerConfig, RewriteDirConfig, 'RAW_ARGS'>({
      name: 'RewriteCond', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'an input string and a to be applied regexp-pattern',
      handler: cmdCond,
    }),
    directive<RewriteServerConfig, RewriteDirConfig, 'RAW_ARGS'>({
      name: 'RewriteRule', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'an URL-applied regexp-pattern and a substitution URL',
      handler: cmdRule,
    }),
    directive<RewriteServerConfig, RewriteDirConfig, 'TAKE23'>({
      name: 'RewriteMap', args: 'TAKE23', where: RSRC_CONF,
      help: 'a mapname and a filename and options',
      handler: cmdMap,
    }),
  ],
  hooks: {
    translateName: { fn: hookUri2file, order: HOOK_FIRST, successors: ['mod_proxy.c'] },
    fixups: [
      { fn: hookFixup, order: HOOK_FIRST, successors: ['mod_proxy.c'] },
      { fn: hookMimetype, order: HOOK_LAST },
    ],
    handler: handlerRedirect,
  },
  configHooks: {
    childInit(ctx) {
      const entries = [];
      for (const s of [ctx.mainServer, ...ctx.vhosts]) {
        const conf = self.server(s);
        if (!conf.enabled) continue;
        for (const m of conf.maps.values()) if (m.type === 'prg') entries.push(m);
      }
      const err = startPrograms([...new Set(entries)], (msg) => ctx.log('rewrite', APLOG_ERR, msg));
      if (err !== undefined) ctx.log('rewrite', APLOG_ERR, err);
    },
    cleanup() {
      stopPrograms();
    },
  },
});

export default self;
