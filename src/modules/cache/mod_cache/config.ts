// mod_cache's configuration (modules/cache/mod_cache.c: create/merge and the directive
// handlers), with httpd's messages, and the URL filters of CacheEnable / CacheDisable
// (cache_util.c uri_meets_conditions).

import * as os from 'node:os';
import * as path from 'node:path';
import type { CmdParms } from '../../../server/config/cmd.js';
import { NOT_IN_DIRECTORY, NOT_IN_FILES, NOT_IN_LIMIT } from '../../../server/config/cmd.js';

/** A parsed URL of CacheEnable/CacheDisable/CacheKeyBaseURL (the apr_uri_t parts used). */
export interface UrlParts {
  scheme: string | undefined;
  hostname: string | undefined;
  /** The port as written (undefined: none; '' written empty). */
  portStr: string | undefined;
  path: string | undefined;
  query: string | undefined;
}

export interface UrlFilter {
  readonly url: UrlParts;
  readonly pathlen: number;
}

export interface CacheEnable extends UrlFilter {
  readonly type: string;
}

export interface CacheServer {
  enable: CacheEnable[];
  disable: UrlFilter[];
  ignoreCacheControl: boolean | undefined;
  /** CacheIgnoreHeaders: undefined = not set; [] = None. */
  ignoreHeaders: string[] | undefined;
  ignoreQueryString: boolean | undefined;
  ignoreSessionId: string[] | undefined;
  lock: boolean | undefined;
  lockPath: string | undefined;
  lockMaxAge: number | undefined;
  quick: boolean | undefined;
  xCache: boolean | undefined;
  xCacheDetail: boolean | undefined;
  baseUri: UrlParts | undefined;
}

export interface CacheDir {
  noLastModIgnore: boolean | undefined;
  storeExpired: boolean | undefined;
  storePrivate: boolean | undefined;
  storeNoStore: boolean | undefined;
  /** ms */
  maxex: number | undefined;
  minex: number | undefined;
  defex: number | undefined;
  factor: number | undefined;
  xCache: boolean | undefined;
  xCacheDetail: boolean | undefined;
  staleOnError: boolean | undefined;
  enable: readonly CacheEnable[];
  enableSet: boolean;
  disable: boolean | undefined;
}

export const DEFAULT_CACHE_MAXEXPIRE = 86400 * 1000;
export const DEFAULT_CACHE_MINEXPIRE = 0;
export const DEFAULT_CACHE_EXPIRE = 3600 * 1000;
export const DEFAULT_CACHE_LMFACTOR = 0.1;
export const DEFAULT_CACHE_MAXAGE = 5;
export const DEFAULT_CACHE_LOCKPATH = 'mod_cache-lock';

export function createServerConfig(): CacheServer {
  return {
    enable: [], disable: [], ignoreCacheControl: undefined, ignoreHeaders: undefined, ignoreQueryString: undefined,
    ignoreSessionId: undefined, lock: undefined, lockPath: undefined, lockMaxAge: undefined, quick: undefined,
    xCache: undefined, xCacheDetail: undefined, baseUri: undefined,
  };
}

export function mergeServerConfig(base: Readonly<CacheServer>, add: Readonly<CacheServer>): CacheServer {
  return {
    enable: [...base.enable, ...add.enable],
    disable: [...base.disable, ...add.disable],
    ignoreCacheControl: add.ignoreCacheControl ?? base.ignoreCacheControl,
    ignoreHeaders: add.ignoreHeaders ?? base.ignoreHeaders,
    ignoreQueryString: add.ignoreQueryString ?? base.ignoreQueryString,
    ignoreSessionId: add.ignoreSessionId ?? base.ignoreSessionId,
    lock: add.lock ?? base.lock,
    lockPath: add.lockPath ?? base.lockPath,
    lockMaxAge: add.lockMaxAge ?? base.lockMaxAge,
    quick: add.quick ?? base.quick,
    xCache: add.xCache ?? base.xCache,
    xCacheDetail: add.xCacheDetail ?? base.xCacheDetail,
    baseUri: add.baseUri ?? base.baseUri,
  };
}

export function createDirConfig(): CacheDir {
  return {
    noLastModIgnore: undefined, storeExpired: undefined, storePrivate: undefined, storeNoStore: undefined,
    maxex: undefined, minex: undefined, defex: undefined, factor: undefined, xCache: undefined, xCacheDetail: undefined,
    staleOnError: undefined, enable: [], enableSet: false, disable: undefined,
  };
}

export function mergeDirConfig(base: Readonly<CacheDir>, add: Readonly<CacheDir>): CacheDir {
  return {
    noLastModIgnore: add.noLastModIgnore ?? base.noLastModIgnore,
    storeExpired: add.storeExpired ?? base.storeExpired,
    storePrivate: add.storePrivate ?? base.storePrivate,
    storeNoStore: add.storeNoStore ?? base.storeNoStore,
    maxex: add.maxex ?? base.maxex,
    minex: add.minex ?? base.minex,
    defex: add.defex ?? base.defex,
    factor: add.factor ?? base.factor,
    xCache: add.xCache ?? base.xCache,
    xCacheDetail: add.xCacheDetail ?? base.xCacheDetail,
    staleOnError: add.staleOnError ?? base.staleOnError,
    enable: add.enableSet ? [...base.enable, ...add.enable] : base.enable,
    enableSet: add.enableSet || base.enableSet,
    disable: add.disable ?? base.disable,
  };
}

/** apr_uri_parse, for the parts mod_cache compares; undefined where it fails. */
export function parseUrl(url: string): UrlParts | undefined {
  const parts: UrlParts = { scheme: undefined, hostname: undefined, portStr: undefined, path: undefined, query: undefined };
  let rest = url;
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(rest);
  if (m !== null && !rest.startsWith('/')) {
    parts.scheme = m[1];
    rest = rest.slice(m[0].length);
  }
  if (rest.startsWith('//')) {
    rest = rest.slice(2);
    let end = rest.search(/[/?#]/);
    if (end < 0) end = rest.length;
    let auth = rest.slice(0, end);
    rest = rest.slice(end);
    const at = auth.lastIndexOf('@');
    if (at >= 0) auth = auth.slice(at + 1);
    let host = auth;
    if (auth.startsWith('[')) {
      const close = auth.indexOf(']');
      if (close < 0) return undefined;
      host = auth.slice(1, close);
      const after = auth.slice(close + 1);
      if (after.startsWith(':')) parts.portStr = after.slice(1);
      else if (after !== '') return undefined;
    } else {
      const colon = auth.lastIndexOf(':');
      if (colon >= 0) { host = auth.slice(0, colon); parts.portStr = auth.slice(colon + 1); }
    }
    if (parts.portStr !== undefined && parts.portStr !== '' && !/^[0-9]+$/.test(parts.portStr)) return undefined;
    parts.hostname = host;
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const q = rest.indexOf('?');
  if (q >= 0) { parts.query = rest.slice(q + 1); rest = rest.slice(0, q); }
  parts.path = rest === '' ? undefined : rest;
  return parts;
}

/** The default port of a scheme (apr_uri_port_of_scheme), 0 when unknown. */
export function portOfScheme(scheme: string | undefined): number {
  switch ((scheme ?? '').toLowerCase()) {
    case 'http': case 'ws': return 80;
    case 'https': case 'wss': return 443;
    case 'ftp': return 21;
    case 'gopher': return 70;
    case 'nntp': case 'snews': return scheme === 'nntp' ? 119 : 563;
    case 'imap': return 143;
    case 'pop': return 110;
    case 'ldap': return 389;
    case 'rtsp': return 554;
    case 'telnet': return 23;
    case 'ssh': return 22;
    case 'sip': return 5060;
    case 'prospero': return 1525;
    case 'wais': return 210;
    case 'z39.50r': case 'z39.50s': return 210;
    default: return 0;
  }
}

/** uri_meets_conditions: does the request URL (`url`, path `p`) fall under the filter? */
export function uriMeetsConditions(filter: UrlFilter, url: UrlParts, p: string | undefined): boolean {
  const f = filter.url;
  if (f.scheme === undefined) {
    if (url.scheme !== undefined || url.hostname !== undefined) return false;
  } else {
    if (url.scheme === undefined || f.scheme.toLowerCase() !== url.scheme.toLowerCase()) return false;
    if (f.hostname !== undefined && f.hostname !== '') {
      const uh = url.hostname ?? '';
      if (f.hostname[0] === '.' || f.hostname[0] === '*') {
        const suffix = f.hostname[0] === '.' ? f.hostname : f.hostname.slice(1);
        if (suffix.length > uh.length || (url.hostname !== undefined && uh.slice(uh.length - suffix.length).toLowerCase() !== suffix.toLowerCase())) return false;
      } else if (url.hostname === undefined || f.hostname.toLowerCase() !== url.hostname.toLowerCase()) {
        return false;
      }
    }
    if (!(f.portStr !== undefined && f.portStr === '')) {
      const fport = f.portStr !== undefined ? Number(f.portStr) : portOfScheme(f.scheme);
      const uport = url.portStr !== undefined && url.portStr !== '' ? Number(url.portStr) : portOfScheme(url.scheme);
      if (fport !== uport) return false;
    }
  }
  const fpath = f.path ?? '/';
  if (p === undefined) return fpath[0] === '/' && filter.pathlen === 1;
  return p.startsWith(fpath.slice(0, filter.pathlen));
}

function filterOf(url: string): UrlFilter {
  // httpd pushes the entry before parsing; a URL apr_uri_parse refuses leaves it empty.
  const u = parseUrl(url) ?? { scheme: undefined, hostname: undefined, portStr: undefined, path: undefined, query: undefined };
  if (u.path === undefined) return { url: { ...u, path: '/' }, pathlen: 1 };
  return { url: u, pathlen: u.path.length };
}

type Cmd = CmdParms<CacheServer, CacheDir>;

export function addCacheEnable(cmd: Cmd, type: string, url: string | undefined): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIRECTORY | NOT_IN_LIMIT | NOT_IN_FILES);
  if (err !== undefined) return err;
  if (type.startsWith('/')) return `provider (${type}) starts with a '/'.  Are url and provider switched?`;
  const u = url ?? cmd.path;
  if (u === undefined) return `CacheEnable provider (${type}) is missing an URL.`;
  if (cmd.path !== undefined && !u.startsWith(cmd.path)) return 'When in a Location, CacheEnable must specify a path or an URL below that location.';
  const entry: CacheEnable = { type, ...filterOf(u) };
  if (cmd.path !== undefined) {
    cmd.dir.enable = [...cmd.dir.enable, entry];
    cmd.dir.enableSet = true;
  } else {
    cmd.srv.enable.push(entry);
  }
  return undefined;
}

export function addCacheDisable(cmd: Cmd, url: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIRECTORY | NOT_IN_LIMIT | NOT_IN_FILES);
  if (err !== undefined) return err;
  if (cmd.path !== undefined) {
    if (url.toLowerCase() === 'on') { cmd.dir.disable = true; return undefined; }
    return "CacheDisable must be followed by the word 'on' when in a Location.";
  }
  if (url[0] !== '/' && !url.includes(':')) return 'CacheDisable must specify a path or an URL.';
  cmd.srv.disable.push(filterOf(url));
  return undefined;
}

/** atol: leading blanks, a sign, digits; anything else ends the number (0 when none). */
function atol(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)/.exec(s);
  return m === null ? 0 : Number(m[1]);
}

export function setSeconds(field: 'maxex' | 'minex' | 'defex') {
  return (cmd: Cmd, arg: string): string | undefined => {
    cmd.dir[field] = atol(arg) * 1000;
    return undefined;
  };
}

export function setFactor(cmd: Cmd, arg: string): string | undefined {
  // sscanf("%lg"): a leading floating-point number.
  const m = /^[ \t\n\v\f\r]*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf(?:inity)?|nan))/i.exec(arg);
  if (m === null) return 'CacheLastModifiedFactor value must be a float';
  cmd.dir.factor = Number(m[1]!.replace(/^([+-]?)inf(inity)?$/i, '$1Infinity'));
  return undefined;
}

export function addIgnoreHeader(cmd: Cmd, header: string): string | undefined {
  const cur = cmd.srv.ignoreHeaders;
  if (header.toLowerCase() === 'none') cmd.srv.ignoreHeaders = [];
  else if (cur === undefined || cur.length > 0) cmd.srv.ignoreHeaders = [...(cur ?? []), header];
  return undefined;
}

export function addIgnoreSessionId(cmd: Cmd, id: string): string | undefined {
  const cur = cmd.srv.ignoreSessionId;
  if (id.toLowerCase() === 'none') cmd.srv.ignoreSessionId = [];
  else if (cur === undefined || cur.length > 0) cmd.srv.ignoreSessionId = [...(cur ?? []), id];
  return undefined;
}

export function setLockPath(cmd: Cmd, arg: string): string | undefined {
  cmd.srv.lockPath = cmd.ctx.serverRootRelative(arg);
  return undefined;
}

/** The lock directory when CacheLockPath is not given: httpd 2.4 joins the system temporary
 *  directory (apr_temp_dir_get) and "/mod_cache-lock". */
export function defaultLockPath(): string {
  return path.join(os.tmpdir(), DEFAULT_CACHE_LOCKPATH);
}

export function setLockMaxAge(cmd: Cmd, arg: string): string | undefined {
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)/.exec(arg);
  const seconds = m === null ? 0 : Number(m[1]);
  if (seconds <= 0) return 'CacheLockMaxAge value must be a non-zero positive integer';
  cmd.srv.lockMaxAge = seconds * 1000;
  return undefined;
}

export function setHeaderFlag(field: 'xCache' | 'xCacheDetail') {
  return (cmd: Cmd, on: boolean): string | undefined => {
    if (cmd.path !== undefined) cmd.dir[field] = on;
    else cmd.srv[field] = on;
    return undefined;
  };
}

export function setKeyBaseUrl(cmd: Cmd, arg: string): string | undefined {
  const u = parseUrl(arg);
  if (u === undefined) return `Could not parse '${arg}' as an URL.`;
  if (u.scheme === undefined && u.hostname === undefined && u.portStr === undefined) {
    return `URL '${arg}' must contain at least one of a scheme, a hostname or a port.`;
  }
  cmd.srv.baseUri = u;
  return undefined;
}
