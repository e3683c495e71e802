// What the server gives scripts (httpd's server/util_script.c): the CGI/1.1 environment
// (ap_add_common_vars, ap_add_cgi_vars, ap_create_environment) and the reading of a
// script's response header (ap_scan_script_header_err_core). Used by mod_cgi, mod_cgid,
// mod_include's exec and mod_actions' scripts.

import type { Request } from './request/request.js';
import { coreDir, coreServer } from './core/core-module.js';
import { DEFAULT_DOCROOT } from './core/core-hooks.js';
import { globals } from './core/globals.js';
import { serverBanner } from './version.js';
import { signature, escapeHtml } from './http/response.js';
import { getServerName, getServerPort, httpScheme } from './core/server-name.js';
import { meetsConditions, rationalizeMtime, updateMtime } from './http/conditional.js';
import { parseHttpDate, toHttpDate } from './log/time.js';
import { APLOG_ERR, APLOG_INFO, APLOG_TRACE1, APLOG_TRACE4 } from './log/levels.js';
import { OK } from './module.js';
import { atoi } from '../lib/c-numbers.js';
import { escapeUri } from '../lib/urlencoded.js';
export { escapeUri };

/** httpd's DEFAULT_PATH, the PATH a script gets when the server has none. */
export const DEFAULT_PATH = '/bin:/usr/bin:/usr/ucb:/usr/bsd:/usr/local/bin';

/** The subprocess environment as an ordered table (apr_table_t semantics: `add` keeps
 *  duplicates, `set` replaces). Scripts see it in this order. */
export type EnvTable = Map<string, string>;

/** http2env: `User-Agent` -> `HTTP_USER_AGENT`; undefined for a name with other characters
 *  than letters, digits and '-' (not exported, as httpd does). */
export function http2env(name: string): string | undefined {
  const known = envNames.get(name);
  if (known !== undefined) return known === '' ? undefined : known;
  const n = makeEnvName(name);
  // The same few header names come with every request: remembered (bounded in number and
  // length, whatever names clients send).
  if (envNames.size < 1024 && name.length <= 64) envNames.set(name, n ?? '');
  return n;
}

/** http2env's answers by header name ('' for a name that is not exported). */
const envNames = new Map<string, string>();

function makeEnvName(name: string): string | undefined {
  let out = 'HTTP_';
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90)) out += name[i];
    else if (c >= 97 && c <= 122) out += String.fromCharCode(c - 32);
    else if (c === 45) out += '_';
    else return undefined;
  }
  return out;
}

/** ap_document_root. */
export function documentRoot(r: Request): string {
  return r.documentRoot ?? coreServer(r.server).documentRoot ?? DEFAULT_DOCROOT;
}

/** ap_get_server_name_for_url: an IPv6 literal in brackets. */
function serverNameForUrl(r: Request): string {
  const n = getServerName(r);
  return n.includes(':') && !n.startsWith('[') ? `[${n}]` : n;
}

/** The header variables addCommonVars set in the current call (it runs synchronously:
 *  one set serves every call). */
const setFromHeaders = new Set<string>();

/** ap_add_common_vars: the request's headers as HTTP_* variables and the server's own
 *  variables, set in r.subprocessEnv (over what it holds) in httpd's order. */
export function addCommonVars(r: Request): void {
  const e = r.subprocessEnv;
  const c = coreDir(r);
  const passAuth = c.cgiPassAuth === 'on';
  // apr_table_addn keeps a repeated name twice and the script's getenv() finds the first:
  // the first header of a name wins (over what the table held before, though).
  const seen = setFromHeaders;
  seen.clear();
  const put = (k: string, v: string): void => {
    if (seen.has(k)) return;
    seen.add(k);
    e.set(k, v);
  };
  r.headersIn.forEach((name, value, key) => {
    if (key === 'content-type') put('CONTENT_TYPE', value);
    else if (key === 'content-length') put('CONTENT_LENGTH', value);
    else if (key === 'proxy') return; // HTTP_PROXY would be taken for a proxy setting
    else if (key === 'authorization' || key === 'proxy-authorization') {
      if (!passAuth) return;
      const n = http2env(name);
      if (n !== undefined) put(n, value);
    } else {
      const n = http2env(name);
      if (n !== undefined) put(n, value);
      else if (r.wantsLog('core', APLOG_TRACE1)) r.log('core', APLOG_TRACE1, `Not exporting header with invalid name as envvar: ${name}`);
    }
  });
  seen.clear();
  envToEnv(e, 'PATH', DEFAULT_PATH);
  envToEnv(e, 'LD_LIBRARY_PATH', undefined);
  e.set('SERVER_SIGNATURE', signature(r, ''));
  e.set('SERVER_SOFTWARE', serverBanner(globals(r.rt.ctx).serverTokens));
  e.set('SERVER_NAME', escapeHtml(serverNameForUrl(r)));
  e.set('SERVER_ADDR', r.connection.localIp);
  e.set('SERVER_PORT', String(getServerPort(r)));
  const rc = r.connection.remoteHost;
  if (rc !== undefined && rc !== '') e.set('REMOTE_HOST', rc);
  e.set('REMOTE_ADDR', r.useragentIp);
  const docroot = documentRoot(r);
  e.set('DOCUMENT_ROOT', docroot);
  e.set('REQUEST_SCHEME', httpScheme(r));
  e.set('CONTEXT_PREFIX', r.contextPrefix ?? '');
  e.set('CONTEXT_DOCUMENT_ROOT', r.contextDocumentRoot ?? docroot);
  e.set('SERVER_ADMIN', r.server.serverAdmin ?? '[no address given]');
  e.set('SCRIPT_FILENAME', r.filename);
  e.set('REMOTE_PORT', String(r.connection.remotePort));
  if (r.user !== undefined) {
    e.set('REMOTE_USER', r.user);
  } else {
    for (let back = r.prev; back; back = back.prev) {
      if (back.user !== undefined) { e.set('REDIRECT_REMOTE_USER', back.user); break; }
    }
  }
  if (r.apAuthType !== undefined) e.set('AUTH_TYPE', r.apAuthType);
  if (r.prev) {
    const p = r.prev;
    if (c.qualifyRedirectUrl === 'on') {
      const path = p.unparsedUri.startsWith('/') ? p.unparsedUri : p.uri;
      e.set('REDIRECT_URL', `${httpScheme(p)}://${serverNameForUrl(p)}:${getServerPort(p)}${path}`);
    } else {
      e.set('REDIRECT_URL', p.uri);
    }
    if (p.args !== undefined) e.set('REDIRECT_QUERY_STRING', p.args);
  }
}

/** PATH and LD_LIBRARY_PATH: the table's own value, else the server's environment's, else
 *  the fallback. */
function envToEnv(e: EnvTable, name: string, fallback: string | undefined): void {
  const v = e.get(name) ?? serverEnv(name) ?? fallback;
  if (v !== undefined) e.set(name, v);
}

/** The server's own environment variables envToEnv asks for, read once (process.env is a
 *  getenv() per access; the server's environment does not change while it runs). */
const serverEnvCache = new Map<string, string | undefined>();
function serverEnv(name: string): string | undefined {
  if (serverEnvCache.has(name)) return serverEnvCache.get(name);
  const v = process.env[name];
  serverEnvCache.set(name, v);
  return v;
}


/** The Request-URI of the request line (original_uri). */
function originalUri(r: Request): string {
  const m = /^\S*\s+(\S*)/.exec(r.theRequest);
  return m ? m[1]! : '';
}

/** ap_find_path_info: where PATH_INFO starts in the URI (the two may differ in slashes). */
export function findPathInfo(uri: string, pathInfo: string): number {
  let lu = uri.length;
  let lp = pathInfo.length;
  while (lu-- && lp-- && uri[lu] === pathInfo[lp]) {
    if (pathInfo[lp] === '/') while (lu && uri[lu - 1] === '/') lu--;
  }
  if (lu === -1) lu = 0;
  while (lu < uri.length && uri[lu] !== '/') lu++;
  return lu;
}

/** ap_add_cgi_vars: GATEWAY_INTERFACE, SERVER_PROTOCOL, REQUEST_METHOD, QUERY_STRING,
 *  REQUEST_URI, SCRIPT_NAME, PATH_INFO and PATH_TRANSLATED (a subrequest maps PATH_INFO). */
export function addCgiVars(r: Request): void | Promise<void> {
  const e = r.subprocessEnv;
  e.set('GATEWAY_INTERFACE', 'CGI/1.1');
  e.set('SERVER_PROTOCOL', r.protocol);
  e.set('REQUEST_METHOD', r.method);
  e.set('QUERY_STRING', r.args ?? '');
  e.set('REQUEST_URI', coreDir(r).cgiVarRequestUri === 'current-uri' ? r.uri : originalUri(r));
  if (r.protocol === 'INCLUDED') {
    e.set('SCRIPT_NAME', r.uri);
    if (r.pathInfo !== '') e.set('PATH_INFO', r.pathInfo);
  } else if (r.pathInfo === '') {
    e.set('SCRIPT_NAME', r.uri);
  } else {
    e.set('SCRIPT_NAME', r.uri.slice(0, findPathInfo(r.uri, r.pathInfo)));
    e.set('PATH_INFO', r.pathInfo);
  }
  // Synchronous unless PATH_INFO has to be looked up.
  if (r.pathInfo !== '') return addPathTranslated(r, e);
  return undefined;
}

async function addPathTranslated(r: Request, e: EnvTable): Promise<void> {
  const pa = await r.rt.lookupUri(r, escapeUri(r.pathInfo));
  if (pa.filename !== '') e.set('PATH_TRANSLATED', pa.filename + pa.pathInfo);
}

/** ap_create_environment: NAME=value strings for the child; TZ from the server's own
 *  environment when the table has none; a name's leading digit and every character that is
 *  not a letter or digit become '_'. */
export function createEnvironment(t: ReadonlyMap<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  if (!t.has('TZ') && process.env['TZ'] !== undefined) env['TZ'] = process.env['TZ'];
  for (const [k, v] of t) {
    let name = k.replace(/[^A-Za-z0-9]/g, '_');
    if (/^[0-9]/.test(name)) name = '_' + name.slice(1);
    env[name] = v;
  }
  return env;
}

// ---- the script's response header ------------------------------------------------------------

/** MAX_STRING_LEN: a header line is read into a buffer of this size. */
export const MAX_STRING_LEN = 8192;

/** One header line of the script, without CR and LF: rv 1 read, 0 the output ended first (or
 *  the line did not fit), -1 the script timed out; `line` holds what was read either way. */
export interface ScriptLine { readonly line: string; readonly rv: 1 | 0 | -1 }
export type ScriptGets = () => Promise<ScriptLine>;

/** The message context of ap_scan_script_header_err: the module the lines are logged as. */
export interface ScriptHeaderLog {
  readonly module: string;
  /** The caller keeps no copy of the header line (httpd's NULL buffer, as mod_asis calls it):
   *  a malformed header then reads the rest of the output away first, and the line logged is
   *  the last one read (empty at the end of the output). */
  readonly noBuffer?: boolean;
}

/** C's isspace: space, \t, \n, \v, \f, \r. */
function isCSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

/** What HeaderScan.line() asks for next. */
const MORE = -1;
/** A malformed line with noBuffer: the rest of the output is read away, then malformed(). */
const DRAIN = -2;

/** ap_scan_script_header_err_core's line-by-line work, for the asynchronous and the
 *  synchronous readers of the lines. */
class HeaderScan {
  private readonly base: string;
  private cgiStatus = -1;
  private first = true;
  private readonly merge: [string, string][] = [];
  private readonly cookies: string[] = [];
  private readonly trace: boolean;
  private readonly mod: string;

  constructor(private readonly r: Request, private readonly lg: ScriptHeaderLog) {
    this.mod = lg.module;
    this.base = r.filename.slice(r.filename.lastIndexOf('/') + 1);
    const cookies = this.cookies;
    if (r.errHeadersOut.has('Set-Cookie')) r.errHeadersOut.forEach((name, value) => { if (name.toLowerCase() === 'set-cookie') cookies.push(value); });
    this.trace = r.wantsLog(this.mod, APLOG_TRACE4);
  }

  /** One line: the status once the header ends or fails, MORE for the next line, DRAIN. */
  line(w: string, rv: ScriptLine['rv']): number {
    const { r, mod, base } = this;
    if (rv === 0) {
      r.log(mod, APLOG_ERR, `${this.first ? 'End of script output before headers' : 'Premature end of script headers'}: ${base}`);
      return 500;
    }
    if (rv === -1) {
      r.log(mod, APLOG_ERR, `Script timed out before returning headers: ${base}`);
      return 504;
    }
    if (w === '') {
      let cond = OK;
      if (this.cgiStatus === -1 && r.method === 'GET') cond = meetsConditions(r);
      for (const [k, v] of this.merge) r.errHeadersOut.merge(k, v);
      if (this.cookies.length) {
        r.errHeadersOut.unset('Set-Cookie');
        for (const v of this.cookies) r.errHeadersOut.add('Set-Cookie', v);
      }
      return cond;
    }
    if (this.trace) {
      if (this.first) r.log(mod, APLOG_TRACE4, `Headers from script '${base}':`);
      r.log(mod, APLOG_TRACE4, `  ${w}`);
    }
    const colon = w.indexOf(':');
    if (colon < 0) {
      if (this.lg.noBuffer === true) return DRAIN;
      return this.malformed(w);
    }
    const name = w.slice(0, colon);
    let from = colon + 1;
    while (from < w.length && isCSpace(w.charCodeAt(from))) from++;
    const l = w.slice(from);
    const key = name.toLowerCase();
    if (key === 'content-type') {
      let end = l.length;
      while (end > 0 && isCSpace(l.charCodeAt(end - 1))) end--;
      const v = end === l.length ? l : l.slice(0, end);
      const semi = v.indexOf(';');
      r.contentType = semi < 0 ? v.toLowerCase() : v.slice(0, semi).toLowerCase() + v.slice(semi);
    } else if (key === 'status') {
      this.cgiStatus = atoi(l);
      r.status = this.cgiStatus;
      if (!(this.cgiStatus >= 100 && this.cgiStatus <= 599)) {
        r.log(mod, APLOG_ERR, `Invalid status line from script '${base}': ${l.slice(0, 30)}`);
      } else if (r.wantsLog(mod, APLOG_TRACE1)) {
        r.log(mod, APLOG_TRACE1, `Status line from script '${base}': ${l.slice(0, 30)}`);
      }
      r.statusLine = l;
    } else if (key === 'location' || key === 'content-length' || key === 'content-range' || key === 'transfer-encoding' || key === 'etag') {
      r.headersOut.set(name, l);
    } else if (key === 'last-modified') {
      const ms = parseHttpDate(l);
      if (!Number.isNaN(ms) && ms >= 0) {
        // ap_update_mtime then ap_set_last_modified: never later than the request.
        updateMtime(r, ms);
        r.headersOut.set('Last-Modified', toHttpDate(rationalizeMtime(r, r.mtime)));
      } else {
        r.log(mod, APLOG_INFO, `AH10247: Ignored invalid header value: Last-Modified: '${l}'`);
      }
    } else if (key === 'set-cookie') {
      this.cookies.push(l);
    } else {
      this.merge.push([name, l]);
    }
    this.first = false;
    return MORE;
  }

  /** The malformed-header line (`bad`: the line, or with noBuffer the last one read). */
  malformed(bad: string): number {
    this.r.log(this.mod, APLOG_ERR, `malformed header from script '${this.base}': Bad header: ${bad.slice(0, 30)}`);
    return 500;
  }
}

/**
 * ap_scan_script_header_err_core: reads the script's header lines into the response
 * (Content-Type, Status, Location, Last-Modified, Set-Cookie kept apart, the rest merged into
 * the error headers). Returns OK, or 304/412 from the request's conditions when the script set
 * no Status on a GET, or 500 (bad or missing header, logged) / 504 (timed out, logged).
 * `sbuf` receives the last line read (ScriptLog prints it).
 */
export function scanScriptHeader(r: Request, gets: ScriptGets, lg: ScriptHeaderLog, sbuf: { line: string }): Promise<number> {
  const st = scanLines(new HeaderScan(r, lg), gets, sbuf, undefined);
  return typeof st === 'number' ? Promise.resolve(st) : st;
}

/** scanScriptHeader over lines that are all at hand (a header already read whole). */
export function scanScriptHeaderSync(r: Request, gets: () => ScriptLine, lg: ScriptHeaderLog, sbuf: { line: string }): number {
  return scanLines(new HeaderScan(r, lg), gets, sbuf, undefined) as number;
}

/** The one loop of both: line after line, synchronously while `gets` answers at once, and
 *  from the first line it has to wait for on, through that promise. `bad` is set while a
 *  malformed line (noBuffer) has the rest of the output read away. */
function scanLines(scan: HeaderScan, gets: () => ScriptLine | Promise<ScriptLine>, sbuf: { line: string }, bad: string | undefined): number | Promise<number> {
  for (;;) {
    const l = gets();
    if (l instanceof Promise) {
      return l.then((v) => {
        const st = scanStep(scan, v, sbuf, bad);
        if (st !== MORE && st !== DRAIN) return st;
        return scanLines(scan, gets, sbuf, st === DRAIN ? (bad ?? v.line) : undefined);
      });
    }
    const st = scanStep(scan, l, sbuf, bad);
    if (st === DRAIN) bad ??= l.line;
    else if (st !== MORE) return st;
  }
}

/** One line read: MORE or DRAIN to go on, else the status. While draining (`bad` set), the
 *  lines are only read away; the last one read is the one logged. */
function scanStep(scan: HeaderScan, l: ScriptLine, sbuf: { line: string }, bad: string | undefined): number {
  if (bad !== undefined) return l.rv === 1 ? DRAIN : scan.malformed(l.line);
  sbuf.line = l.line;
  return scan.line(l.line, l.rv);
}
