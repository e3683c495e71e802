// mod_alias (modules/mappers/mod_alias.c): Alias, AliasMatch, ScriptAlias, ScriptAliasMatch,
// Redirect, RedirectMatch, RedirectTemp, RedirectPermanent, and the 2.4 one-argument forms
// inside <Location> (expression syntax), AliasPreservePath and RedirectRelative.
//
//  - translate_name (HOOK_MIDDLE, before mod_userdir and mod_vhost_alias): the <Location>
//    one-argument Redirect, then the server's redirects, then the <Location> one-argument
//    Alias, then the server's aliases, each list in configuration order (a virtual host's
//    entries before the main server's); a redirect answers with its status and Location.
//  - fixups (HOOK_MIDDLE): redirects configured in <Directory>, <Location> and .htaccess.
// The status page for a redirect (3xx, 410...) is the core's error response.

import {
  ACCESS_CONF, DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_FILEINFO, RSRC_CONF,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { NOT_IN_LIMIT } from '../../server/config/cmd.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import { escapeUri as escapePath } from '../../lib/urlencoded.js';
import { evalString, isFailure, parseStringExprCmd, type StringExpr } from '../../expr/index.js';
import { parseAuthority } from '../../lib/uri-authority.js';

export interface AliasEntry {
  /** The URL-path or regex source; undefined where httpd keeps a NULL (see aliasMatches). */
  readonly fake: string | undefined;
  /** The file path or redirect target; undefined for non-redirect statuses without a URL. */
  readonly real: string | undefined;
  /** 'cgi-script' for the Script* forms. */
  readonly handler: string | undefined;
  readonly regexp: RegExp | null;
  /** Redirect status (0 for aliases). */
  readonly redirStatus: number;
}

export interface AliasServerConfig {
  aliases: AliasEntry[];
  redirects: AliasEntry[];
}

export interface AliasDirConfig {
  aliasSet: boolean;
  redirectSet: boolean;
  /** Redirects with a URL-path in this section (checked in fixups). */
  redirects: AliasEntry[];
  /** One-argument Alias / ScriptAlias in a <Location>: the expression, the section path. */
  alias: StringExpr | undefined;
  aliasFake: string | undefined;
  handler: string | undefined;
  /** One-argument Redirect in a <Location> (or a bare status such as "Redirect gone"). */
  redirect: StringExpr | undefined;
  redirectStatus: number;
  /** RedirectRelative / AliasPreservePath; undefined = unset (Off). */
  allowRelative: boolean | undefined;
  aliasPreservePath: boolean | undefined;
}

type Cmd = CmdParms<AliasServerConfig, AliasDirConfig>;

// ---- configuration ------------------------------------------------------------------------

function createServerConfig(_s: ServerRec): AliasServerConfig {
  return { aliases: [], redirects: [] };
}

/** merge_alias_config: the virtual host's entries first, then the main server's. */
export function mergeServerConfig(base: Readonly<AliasServerConfig>, add: Readonly<AliasServerConfig>): AliasServerConfig {
  return { aliases: add.aliases.concat(base.aliases), redirects: add.redirects.concat(base.redirects) };
}

function createDirConfig(): AliasDirConfig {
  return {
    aliasSet: false, redirectSet: false, redirects: [],
    alias: undefined, aliasFake: undefined, handler: undefined,
    redirect: undefined, redirectStatus: 0,
    allowRelative: undefined, aliasPreservePath: undefined,
  };
}

/** merge_alias_dir_config: the more specific section's redirects first. */
export function mergeDirConfig(base: Readonly<AliasDirConfig>, add: Readonly<AliasDirConfig>): AliasDirConfig {
  return {
    redirects: add.redirects.concat(base.redirects),
    alias: add.aliasSet ? add.alias : base.alias,
    aliasFake: add.aliasSet ? add.aliasFake : base.aliasFake,
    handler: add.aliasSet ? add.handler : base.handler,
    aliasSet: add.aliasSet || base.aliasSet,
    redirect: add.redirectSet ? add.redirect : base.redirect,
    redirectStatus: add.redirectSet ? add.redirectStatus : base.redirectStatus,
    redirectSet: add.redirectSet || base.redirectSet,
    allowRelative: add.allowRelative ?? base.allowRelative,
    aliasPreservePath: add.aliasPreservePath ?? base.aliasPreservePath,
  } satisfies { [K in keyof Required<AliasDirConfig>]: AliasDirConfig[K] };
}

/** Compiles a PCRE pattern as httpd's ap_pregcomp would, or null ("could not be compiled").
 *  Leading inline options such as (?i) become RegExp flags; the rest is JavaScript syntax. */
export function compileRegex(pattern: string): RegExp | null {
  let src = pattern;
  let flags = '';
  const m = /^\(\?([imsx]+)\)/.exec(src);
  if (m) {
    src = src.slice(m[0].length);
    for (const f of m[1]!) {
      if (f === 'x') src = src.replace(/\\#/g, '\u0000').replace(/#.*$/gm, '').replace(/\s+/g, '').replace(/\u0000/g, '\\#');
      else if (!flags.includes(f)) flags += f;
    }
  }
  // PCRE spellings JavaScript lacks: \A \z \Z anchors, Python-style named groups.
  src = src.replace(/\\A/g, '^').replace(/\\[zZ]/g, '$').replace(/\(\?P</g, '(?<').replace(/\(\?P=(\w+)\)/g, '\\k<$1>');
  try {
    return new RegExp(src, flags);
  } catch {
    return null;
  }
}

/** alias_matches: a prefix match on whole path segments, where any run of slashes in the
 *  alias matches any run (at least one) in the URI. Returns the number of URI characters
 *  matched, 0 for no match. */
export function aliasMatches(uri: string, fake: string | undefined): number {
  if (fake === undefined || fake === '') return 0;
  let a = 0;
  let u = 0;
  while (a < fake.length) {
    if (fake[a] === '/') {
      if (uri[u] !== '/') return 0;
      do a++; while (fake[a] === '/');
      do u++; while (uri[u] === '/');
    } else if (uri[u++] !== fake[a++]) {
      return 0;
    }
  }
  // The last alias path component must have matched all the way.
  if (fake[a - 1] !== '/' && u < uri.length && uri[u] !== '/') return 0;
  return u;
}

function addAliasInternal(cmd: Cmd, fake: string, real: string, useRegex: boolean, handler: string | undefined): string | undefined {
  // NOT_IN_DIR_CONTEXT: a <Limit> first, then any directory-like section.
  const err = cmd.checkContext(NOT_IN_LIMIT);
  if (err !== undefined) return err;
  if (cmd.path !== undefined) return `${cmd.name} cannot occur within directory context`;
  let regexp: RegExp | null = null;
  if (useRegex) {
    regexp = compileRegex(fake);
    if (regexp === null) return 'Regular expression could not be compiled.';
  }
  const conf = cmd.srv;
  // Overlapping (Script)Alias: warn once, against the first earlier entry that swallows it.
  if (!useRegex) {
    for (const earlier of conf.aliases) {
      if ((!earlier.regexp && aliasMatches(fake, earlier.fake) > 0) || (earlier.regexp && earlier.regexp.test(fake))) {
        cmd.warn('alias',
          `AH00671: The ${cmd.name} directive in ${cmd.file} at line ${cmd.line} will probably never match ` +
          `because it overlaps an earlier ${earlier.handler ? 'Script' : ''}Alias${earlier.regexp ? 'Match' : ''}.`);
        break;
      }
    }
  }
  conf.aliases.push({ fake, real, handler, regexp, redirStatus: 0 });
  return undefined;
}

/** ap_check_cmd_context's section checks (NOT_IN_DIRECTORY, NOT_IN_FILES...), worded as
 *  httpd 2.4.71 words them: "<name> cannot occur within <Section> section". */
export function sectionCheck(cmd: { readonly name: string; readonly scope: { readonly parents: readonly string[] } }, ...groups: readonly string[][]): string | undefined {
  const parents = cmd.scope.parents;
  for (const names of groups) {
    for (let i = parents.length - 1; i >= 0; i--) {
      const p = parents[i]!;
      if (names.some((n) => n.toLowerCase() === p.toLowerCase())) return `${cmd.name} cannot occur within ${p}> section`;
    }
  }
  return undefined;
}

function addAlias(handler: string | undefined) {
  return (cmd: Cmd, fake: string, real: string | undefined): string | undefined => {
    if (real !== undefined) return addAliasInternal(cmd, fake, real, false, handler);
    const err = sectionCheck(cmd, ['<Directory', '<DirectoryMatch'], ['<Files', '<FilesMatch', '<If', '<ElseIf', '<Else']);
    if (err !== undefined) return err;
    if (cmd.path === undefined) return 'Alias must have two arguments when used globally';
    const expr = parseStringExprCmd(cmd, fake, 0, 'alias');
    if (!expr.ok) return `Cannot parse alias expression '${fake}': ${expr.error}`;
    const d = cmd.dir;
    d.alias = expr.expr;
    d.aliasFake = cmd.path;
    d.handler = handler;
    d.aliasSet = true;
    return undefined;
  };
}

function addAliasRegex(handler: string | undefined) {
  return (cmd: Cmd, fake: string, real: string): string | undefined => addAliasInternal(cmd, fake, real, true, handler);
}

/** The status names Redirect understands as its first argument. */
function grokStatus(arg: string): number | undefined {
  const a = arg.toLowerCase();
  if (a === 'permanent') return 301;
  if (a === 'temp') return 302;
  if (a === 'seeother') return 303;
  if (a === 'gone') return 410;
  if (/^[0-9]/.test(arg)) return parseInt(arg, 10); // atoi
  return undefined;
}

export const isHttpRedirect = (status: number): boolean => status >= 300 && status <= 399;

/** ap_is_url: a scheme ([A-Za-z0-9+.-]+) followed by ':'. */
export function isUrl(u: string): boolean {
  let x = 0;
  for (; u[x] !== ':'; x++) {
    const c = u[x];
    if (c === undefined || !/[A-Za-z0-9+.-]/.test(c)) return false;
  }
  return x > 0;
}

/** add_redirect_internal. */
function addRedirectInternal(
  cmd: Cmd, defaultStatus: number, arg1: string, arg2: string | undefined, arg3: string | undefined, useRegex: boolean,
): string | undefined {
  const d = cmd.dir;
  const grokked = grokStatus(arg1);
  const grokarg1 = grokked !== undefined;
  const status = grokked ?? defaultStatus;
  let fake = arg2;
  let url = arg3;

  if (arg3 !== undefined && !grokarg1) return 'Redirect: invalid first argument (of three)';

  if (cmd.path !== undefined) {
    // In a section: a redirect status with one argument is an expression for the target; a
    // status alone (gone, 404, 503...) answers the whole section; no status and one argument
    // is an expression too.
    if (grokarg1 && isHttpRedirect(status) && arg2 !== undefined && arg3 === undefined) {
      const expr = parseStringExprCmd(cmd, arg2, 0, 'alias');
      if (!expr.ok) return `Cannot parse redirect expression '${arg2}': ${expr.error}`;
      d.redirect = expr.expr;
      d.redirectStatus = status;
      d.redirectSet = true;
      return undefined;
    }
    if (grokarg1 && arg2 === undefined && !isHttpRedirect(status)) {
      d.redirect = undefined;
      d.redirectStatus = status;
      d.redirectSet = true;
      return undefined;
    }
    if (!grokarg1 && arg2 === undefined) {
      const expr = parseStringExprCmd(cmd, arg1, 0, 'alias');
      if (!expr.ok) return `Cannot parse redirect expression '${arg1}': ${expr.error}`;
      d.redirect = expr.expr;
      d.redirectStatus = status;
      d.redirectSet = true;
      return undefined;
    }
  }

  // No status: URL-path then URL.
  if (arg3 === undefined && !grokarg1) {
    fake = arg1;
    url = arg2;
  }
  let regexp: RegExp | null = null;
  if (useRegex) {
    // httpd compiles the NULL of a status-only RedirectMatch and fails; so do we.
    regexp = fake === undefined ? null : compileRegex(fake);
    if (regexp === null) return 'Regular expression could not be compiled.';
  }
  if (isHttpRedirect(status)) {
    if (url === undefined) return 'URL to redirect to is missing';
    // Paths are allowed (made absolute at request time), other relative targets are not.
    if (!useRegex && !isUrl(url) && !url.startsWith('/')) return 'Redirect to non-URL';
  } else if (url !== undefined) {
    return 'Redirect URL not valid for this status';
  }
  // DIFFERENCE: a status alone outside a section ("Redirect gone" at server level) leaves
  // httpd with a NULL URL-path that crashes the child on the first request (measured:
  // segmentation fault); plume keeps the entry but it never matches.
  const entry: AliasEntry = { fake, real: url, handler: undefined, regexp, redirStatus: status };
  if (cmd.path !== undefined) d.redirects.push(entry);
  else cmd.srv.redirects.push(entry);
  return undefined;
}

// ---- request time -----------------------------------------------------------------------------

/** ap_pregsub: $0..$9 are the match's groups (empty when unset); a backslash takes the next
 *  character literally. */
export function pregsub(template: string, m: RegExpExecArray): string {
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i]!;
    const n = template[i + 1];
    if (c === '$' && n !== undefined && n >= '0' && n <= '9') {
      out += m[n.charCodeAt(0) - 48] ?? '';
      i++;
    } else if (c === '\\' && n !== undefined) {
      out += n;
      i++;
    } else {
      out += c;
    }
  }
  return out;
}

/** The parts of an apr_uri_t that apr_uri_unparse uses. */
export interface ParsedUri {
  scheme?: string;
  user?: string;
  password?: string;
  hostname?: string;
  portStr?: string;
  path?: string;
  query?: string;
  fragment?: string;
}

const SCHEME_PORTS: Record<string, number> = {
  http: 80, ftp: 21, https: 443, gopher: 70, ldap: 389, nntp: 119, snews: 563, imap: 143, pop: 110,
  sip: 5060, rtsp: 554, wais: 210, 'z39.50r': 210, 'z39.50s': 210, prospero: 191, nfs: 2049, tip: 3372,
  acap: 674, telnet: 23, ssh: 22,
};

/** apr_uri_parse (the parts mod_alias needs). */
export function parseUri(s: string): ParsedUri {
  const u: ParsedUri = {};
  let rest = s;
  const withPath = (p: string): ParsedUri => {
    const h = p.indexOf('#');
    const q = p.indexOf('?');
    const pathEnd = Math.min(q < 0 ? p.length : q, h < 0 ? p.length : h);
    if (pathEnd > 0) u.path = p.slice(0, pathEnd);
    if (q >= 0 && (h < 0 || q < h)) u.query = p.slice(q + 1, h < 0 ? p.length : h);
    if (h >= 0) u.fragment = p.slice(h + 1);
    return u;
  };
  if (rest.startsWith('/') && !rest.startsWith('//')) return withPath(rest);
  if (!rest.startsWith('//')) {
    const m = /^[A-Za-z0-9+.-]+:/.exec(rest);
    if (!m) return withPath(rest);
    u.scheme = m[0].slice(0, -1);
    rest = rest.slice(m[0].length);
    if (!rest.startsWith('//')) return withPath(rest);
  }
  rest = rest.slice(2);
  let end = rest.search(/[/?#]/);
  if (end < 0) end = rest.length;
  Object.assign(u, parseAuthority(rest.slice(0, end)));
  return withPath(rest.slice(end));
}

/** apr_uri_unparse(APR_URI_UNP_OMITQUERY): no query or fragment, the password hidden and a
 *  scheme's default port dropped. */
export function unparseUriOmitQuery(u: ParsedUri): string {
  let ret = '';
  if (u.user !== undefined || u.password !== undefined) {
    ret = (u.user ?? '') + (u.password !== undefined ? ':XXXXXXXX' : '') + '@';
  }
  if (u.hostname !== undefined) {
    const port = u.portStr !== undefined ? parseInt(u.portStr, 10) || 0 : 0;
    const isDefault = u.portStr === undefined || port === 0 || port === SCHEME_PORTS[(u.scheme ?? '').toLowerCase()];
    const v6 = u.hostname.includes(':');
    ret = `//${ret}${v6 ? '[' : ''}${u.hostname}${v6 ? ']' : ''}${isDefault ? '' : ':' + u.portStr}`;
  }
  if (u.scheme !== undefined) ret = `${u.scheme}:${ret}`;
  return ret + (u.path ?? '');
}

/** The URI-escaping of a computed redirect target: escape all but the query and fragment. */
export function escapeRedirectTarget(found: string): string {
  const u = parseUri(found);
  let out = escapePath(unparseUriOmitQuery(u));
  if (u.query !== undefined) out += `?${u.query}`;
  if (u.fragment !== undefined) out += `#${u.fragment}`;
  return out;
}

interface Found {
  readonly target: string;
  readonly status: number;
}

/** try_redirect: the one-argument Redirect of a <Location>. */
function tryRedirect(r: Request, d: Readonly<AliasDirConfig>): Found | typeof PREGSUB_ERROR | undefined {
  if (!d.redirectSet) return undefined;
  let target = '';
  if (d.redirect) {
    const v = evalString(d.redirect, r);
    if (isFailure(v)) {
      r.log('alias', APLOG_ERR, `AH02826: Can't evaluate redirect expression: ${v.error}`);
      return PREGSUB_ERROR;
    }
    target = escapeRedirectTarget(v);
  }
  return { target, status: d.redirectStatus };
}

/** An expression that failed to evaluate: the request fails with 500. */
const PREGSUB_ERROR = 'pregsub-error';

/** try_alias_list: the first matching entry, with its handler applied to r. */
export function tryAliasList(r: Request, list: readonly AliasEntry[], isRedir: boolean): Found | undefined {
  for (const alias of list) {
    let found: string | undefined;
    if (alias.regexp) {
      const m = alias.regexp.exec(r.uri);
      if (m) {
        if (alias.real !== undefined) {
          found = pregsub(alias.real, m);
          if (isRedir) found = escapeRedirectTarget(found);
        } else {
          found = '';
        }
      }
    } else {
      const l = aliasMatches(r.uri, alias.fake);
      if (l > 0) {
        const real = alias.real ?? '';
        // ap_set_context_info: CONTEXT_PREFIX and CONTEXT_DOCUMENT_ROOT for scripts.
        r.contextPrefix = alias.fake;
        r.contextDocumentRoot = real;
        found = isRedir ? real + escapePath(r.uri.slice(l)) : real + r.uri.slice(l);
      }
    }
    if (found !== undefined) {
      if (alias.handler) {
        // Set the handler, and leave a note for mod_cgi.
        r.handler = alias.handler;
        r.notes.set('alias-forced-type', alias.handler);
      }
      if (!isRedir) found = r.rt.ctx.serverRootRelative(found);
      return { target: found, status: alias.redirStatus };
    }
  }
  return undefined;
}

/** try_alias: the one-argument Alias / ScriptAlias of a <Location>. */
function tryAlias(r: Request, d: Readonly<AliasDirConfig>): string | typeof PREGSUB_ERROR | undefined {
  if (!d.alias) return undefined;
  const v = evalString(d.alias, r);
  if (isFailure(v)) {
    r.log('alias', APLOG_ERR, `AH02825: Can't evaluate alias expression: ${v.error}`);
    return PREGSUB_ERROR;
  }
  let found = v;
  if (d.aliasFake !== undefined && d.aliasPreservePath === true) {
    const l = aliasMatches(r.uri, d.aliasFake);
    if (l > 0) {
      r.contextPrefix = d.aliasFake;
      r.contextDocumentRoot = found;
      found += r.uri.slice(l);
    }
  }
  if (d.handler) {
    r.handler = d.handler;
    r.notes.set('alias-forced-type', d.handler);
  }
  return r.rt.ctx.serverRootRelative(found);
}

/** Answers a matched redirect: absolute Location (unless RedirectRelative), the query string
 *  appended when the target has none; the status is returned for the core to answer with. */
function answerRedirect(r: Request, found: Found, d: Readonly<AliasDirConfig>, debugTag: string, errTag: string): number {
  let status = found.status;
  let ret = found.target;
  if (isHttpRedirect(status)) {
    let valid = true;
    if (d.allowRelative !== true || !ret.startsWith('/')) {
      if (ret.startsWith('/')) {
        const orig = ret;
        ret = r.rt.constructUrl(r, ret);
        r.log('alias', APLOG_DEBUG, `${debugTag}: incomplete redirection target of '${orig}' for URI '${r.uri}' modified to '${ret}'`);
      }
      if (!isUrl(ret)) {
        status = 500;
        valid = false;
        r.log('alias', APLOG_ERR, `${errTag}: cannot redirect '${r.uri}' to '${ret}'; target is not a valid absoluteURI or abs_path`);
      }
    }
    if (valid) {
      if (r.args !== undefined && !ret.includes('?')) ret = `${ret}?${r.args}`;
      r.headersOut.set('Location', ret);
    }
  }
  return status;
}

/** translate_alias_redir. */
function translateAliasRedir(r: Request): number {
  if (r.uri !== '' && r.uri[0] !== '/') return DECLINED;
  const sconf = self.server(r.server);
  const d = self.dir(r);
  const redir = tryRedirect(r, d) ?? (sconf.redirects.length ? tryAliasList(r, sconf.redirects, true) : undefined);
  if (redir === PREGSUB_ERROR) return 500;
  if (redir) return answerRedirect(r, redir, d, 'AH00673', 'AH00674');
  const alias = tryAlias(r, d) ?? (sconf.aliases.length ? tryAliasList(r, sconf.aliases, false)?.target : undefined);
  if (alias === PREGSUB_ERROR) return 500;
  if (alias !== undefined) {
    r.filename = alias;
    return OK;
  }
  return DECLINED;
}

/** fixup_redir: redirects of the request's directory and location sections. */
function fixupRedir(r: Request): number {
  const d = self.dir(r);
  const redir = tryRedirect(r, d) ?? (d.redirects.length ? tryAliasList(r, d.redirects, true) : undefined);
  if (redir === PREGSUB_ERROR) return 500;
  if (redir) return answerRedirect(r, redir, d, 'AH00675', 'AH00676');
  return DECLINED;
}

// ---- the module -----------------------------------------------------------------------------

const self = defineModule<AliasServerConfig, AliasDirConfig>({
  name: 'alias_module',
  source: 'mod_alias.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<AliasServerConfig, AliasDirConfig, 'TAKE12'>({
      name: 'Alias', args: 'TAKE12', where: RSRC_CONF | ACCESS_CONF,
      help: 'a fakename and a realname, or a realname in a Location',
      handler: addAlias(undefined),
    }),
    directive<AliasServerConfig, AliasDirConfig, 'TAKE12'>({
      name: 'ScriptAlias', args: 'TAKE12', where: RSRC_CONF | ACCESS_CONF,
      help: 'a fakename and a realname, or a realname in a Location',
      handler: addAlias('cgi-script'),
    }),
    directive<AliasServerConfig, AliasDirConfig, 'TAKE123'>({
      name: 'Redirect', args: 'TAKE123', where: OR_FILEINFO,
      help: 'an optional status, then document to be redirected and destination URL',
      handler: (cmd, a1, a2, a3) => addRedirectInternal(cmd, 302, a1, a2, a3, false),
    }),
    directive<AliasServerConfig, AliasDirConfig, 'TAKE2'>({
      name: 'AliasMatch', args: 'TAKE2', where: RSRC_CONF,
      help: 'a regular expression and a filename',
      handler: addAliasRegex(undefined),
    }),
    directive<AliasServerConfig, AliasDirConfig, 'TAKE2'>({
      name: 'ScriptAliasMatch', args: 'TAKE2', where: RSRC_CONF,
      help: 'a regular expression and a filename',
      handler: addAliasRegex('cgi-script'),
    }),
    directive<AliasServerConfig, AliasDirConfig, 'TAKE23'>({
      name: 'RedirectMatch', args: 'TAKE23', where: OR_FILEINFO,
      help: 'an optional status, then a regular expression and destination URL',
      handler: (cmd, a1, a2, a3) => addRedirectInternal(cmd, 302, a1, a2, a3, true),
    }),
    directive<AliasServerConfig, AliasDirConfig, 'TAKE2'>({
      name: 'RedirectTemp', args: 'TAKE2', where: OR_FILEINFO,
      help: 'a document to be redirected, then the destination URL',
      handler: (cmd, a1, a2) => addRedirectInternal(cmd, 302, a1, a2, undefined, false),
    }),
    directive<AliasServerConfig, AliasDirConfig, 'TAKE2'>({
      name: 'RedirectPermanent', args: 'TAKE2', where: OR_FILEINFO,
      help: 'a document to be redirected, then the destination URL',
      handler: (cmd, a1, a2) => addRedirectInternal(cmd, 301, a1, a2, undefined, false),
    }),
    directive<AliasServerConfig, AliasDirConfig, 'FLAG'>({
      name: 'RedirectRelative', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF,
      help: 'Set to ON to allow relative redirect targets to be issued as-is',
      handler: (cmd, on) => { cmd.dir.allowRelative = on; },
    }),
    directive<AliasServerConfig, AliasDirConfig, 'FLAG'>({
      name: 'AliasPreservePath', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF,
      help: 'Set to ON to map the full path after the fakename to the realname.',
      handler: (cmd, on) => { cmd.dir.aliasPreservePath = on; },
    }),
  ],
  hooks: {
    translateName: { fn: translateAliasRedir, order: HOOK_MIDDLE, successors: ['mod_userdir.c', 'mod_vhost_alias.c'] },
    fixups: { fn: fixupRedir, order: HOOK_MIDDLE },
  },
});

export default self;
