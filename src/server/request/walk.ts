// The configuration walks (httpd's server/request.c): <Location> against the URL,
// <Directory> and .htaccess along the file path (with symlink and permission checks),
// <Files> against the file name — and the merge cache that makes a repeated path cost
// one lookup. Merged vectors are shared, never mutated.

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Request } from './request.js';
import type { Runtime } from '../runtime.js';
import type { Section } from '../core/sections.js';
import { coreDir, coreServer } from '../core/core-module.js';
import {
  OPT_SYM_LINKS, OPT_SYM_OWNER, OPT_UNSET, type CoreDirConfig,
} from '../core/config.js';
import { OR_NONE, OR_UNSET, OK } from '../module.js';
import { mergeVectors } from '../config/build.js';
import { readHtaccess, type HtaccessResult } from './htaccess.js';
import { APLOG_ERR, APLOG_CRIT, APLOG_ALERT } from '../log/levels.js';

/** Merge cache: one merged vector per sequence of contributions, per runtime. */
const mergeCache = new WeakMap<Runtime, Map<string, unknown[]>>();

function cached(rt: Runtime): Map<string, unknown[]> {
  let m = mergeCache.get(rt);
  if (!m) { m = new Map(); mergeCache.set(rt, m); }
  return m;
}

/** Merges `add` onto `base` where both are identified, caching the result. */
function mergeCachedStep(rt: Runtime, baseKey: string, base: readonly unknown[], addKey: string, add: readonly unknown[]): { key: string; vec: unknown[] } {
  const key = baseKey + '|' + addKey;
  const cache = cached(rt);
  let v = cache.get(key);
  if (!v) {
    v = mergeVectors(rt.ctx, base, add);
    if (cache.size > 50000) cache.clear();
    cache.set(key, v);
  }
  return { key, vec: v };
}

export interface Merged { key: string; vec: unknown[] }

/** The server's own level: lookup_defaults. */
export function serverBase(r: Request): Merged {
  return { key: 's' + r.server.id, vec: r.server.lookupDefaults };
}

// ---- <Location> ------------------------------------------------------------------------
export function locationMatches(sec: Section, uri: string): boolean {
  if (sec.regex) return sec.regex.test(uri);
  if (sec.wildcard) return sec.wildcard.test(uri);
  const p = sec.path;
  if (!uri.startsWith(p)) return false;
  if (p.length > 0 && !p.endsWith('/') && uri.length > p.length && uri[p.length] !== '/') return false;
  return true;
}

/** Applies matching <Location> sections on top of `from`. */
export function locationWalk(rt: Runtime, r: Request, from: Merged): Merged {
  const secs = coreServer(r.server).secUrl;
  let cur = from;
  if (secs.length === 0) return cur;
  const uri = collapseSlashes(r.uri);
  for (const sec of secs) {
    if (!locationMatches(sec, uri)) continue;
    cur = mergeCachedStep(rt, cur.key, cur.vec, 'L' + sec.id, sec.vector);
    r.matchedSections.push(sec.id);
  }
  return cur;
}

function collapseSlashes(u: string): string {
  return u.includes('//') ? u.replace(/\/{2,}/g, '/') : u;
}

// ---- <Files> ---------------------------------------------------------------------------
export function fileWalk(rt: Runtime, r: Request, from: Merged): Merged {
  const secs = (from.vec.length ? coreDir({ perDirConfig: from.vec }) : undefined)?.secFile;
  if (!secs || secs.length === 0) return from;
  const slash = r.filename.lastIndexOf('/');
  const test = slash < 0 ? r.filename : r.filename.slice(slash + 1);
  let cur = from;
  for (const sec of secs) {
    const ok = sec.regex ? sec.regex.test(test) : sec.wildcard ? sec.wildcard.test(test) : sec.path === test;
    if (!ok) continue;
    cur = mergeCachedStep(rt, cur.key, cur.vec, 'F' + sec.id, sec.vector);
    r.matchedSections.push(sec.id);
  }
  return cur;
}

// ---- <Directory> and .htaccess -----------------------------------------------------------

/** Result of the directory walk: a merged config, or an HTTP status to fail with. */
export type DirWalkResult = Merged | number;

function optsOf(vec: readonly unknown[]): number {
  return coreDir({ perDirConfig: vec }).opts;
}

/** Whether .htaccess files are read at this level (never, when AllowOverride was never set). */
function overridesActive(c: CoreDirConfig): boolean {
  if (c.override & OR_UNSET) return false;
  return (c.override & ~OR_UNSET) !== OR_NONE || (c.overrideList !== undefined && c.overrideList.size > 0);
}

/**
 * httpd's ap_directory_walk. r.filename is an absolute path; on return r.filename is the
 * file or directory found, r.pathInfo the rest, r.finfo its stat (null if it does not exist).
 */
export function directoryWalk(rt: Runtime, r: Request, from: Merged): DirWalkResult {
  const secs = coreServer(r.server).secDir;
  let filename = path.posix.normalize(r.filename);
  if (r.filename.endsWith('/') && !filename.endsWith('/')) filename += '/';
  const accessNames = coreServer(r.server).accessNames ?? ['.htaccess'];

  // Split into components; walk from "/" down, stopping at the first that does not exist.
  const parts = filename.split('/').filter((p, i, a) => p !== '' || i === a.length - 1);
  const trailingSlash = filename.endsWith('/');
  let cur = from;
  let secIdx = 0;
  let dir = '/';
  let depth = 1; // components in `dir`, counted as httpd does: the number of slashes
  let finfo: fs.Stats | null = null;
  let pathInfo = '';
  const comps = parts.filter((p) => p !== '');

  const applySectionsAt = (d: string, dDepth: number): void => {
    for (; secIdx < secs.length; secIdx++) {
      const sec = secs[secIdx]!;
      if (sec.regex) break;
      if (sec.depth > dDepth) break;
      const ok = sec.wildcard ? sec.wildcard.test(d.length > 1 ? d.slice(0, -1) : d) : sec.path === d;
      if (!ok) continue;
      cur = mergeCachedStep(rt, cur.key, cur.vec, 'D' + sec.id, sec.vector);
      r.matchedSections.push(sec.id);
    }
  };

  const applyHtaccess = (d: string): number => {
    const c = coreDir({ perDirConfig: cur.vec });
    if (!overridesActive(c)) return OK;
    for (const name of accessNames) {
      const file = d + name;
      const res: HtaccessResult = readHtaccess(rt, r, file, c);
      if (res.kind === 'none') continue;
      if (res.kind === 'error') {
        if (res.status === 403) {
          r.log('core', APLOG_CRIT, `AH00529: ${file} pcfg_openfile: unable to check htaccess file, ensure it is readable and that '${d.length > 1 ? d.slice(0, -1) : d}' is executable`, res.errno);
        } else {
          r.log('core', APLOG_ALERT, `${file}: ${res.message}`);
        }
        return res.status;
      }
      cur = mergeCachedStep(rt, cur.key, cur.vec, 'H' + res.key, res.vector);
      break;
    }
    return OK;
  };

  // The root level.
  applySectionsAt('/', depth);
  const st0 = applyHtaccess('/');
  if (st0 !== OK) return st0;
  finfo = statOrNull('/');

  for (let i = 0; i < comps.length; i++) {
    const comp = comps[i]!;
    const isLast = i === comps.length - 1;
    const candidate = dir + comp;
    const opts = optsOf(cur.vec) & ~OPT_UNSET;
    let lst: fs.Stats;
    try {
      lst = fs.lstatSync(candidate);
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        // The rest is path info (or the file simply does not exist).
        finfo = null;
        pathInfo = '/' + comps.slice(i + 1).join('/') + (trailingSlash && i + 1 < comps.length ? '/' : '');
        if (i + 1 >= comps.length) pathInfo = '';
        filename = candidate + (isLast && trailingSlash ? '/' : '');
        r.filename = filename;
        r.pathInfo = pathInfo;
        r.finfo = null;
        return finishRegex(rt, r, cur, secs, secIdx);
      }
      if (code === 'EACCES') {
        r.log('core', APLOG_ERR, `AH00035: access to ${r.uri} denied (filesystem path '${candidate}') because search permissions are missing on a component of the path`);
        return 403;
      }
      r.log('core', APLOG_ERR, `AH00036: access to ${r.uri} failed (filesystem path '${candidate}')`, rt.errno(e));
      return 403;
    }
    let st = lst;
    if (lst.isSymbolicLink()) {
      if (!(opts & (OPT_SYM_LINKS | OPT_SYM_OWNER))) {
        r.log('core', APLOG_ERR, `AH00037: Symbolic link not allowed or link target not accessible: ${candidate}`);
        return 403;
      }
      const target = statOrNull(candidate);
      if (!target) {
        r.log('core', APLOG_ERR, `AH00037: Symbolic link not allowed or link target not accessible: ${candidate}`);
        return 403;
      }
      if (!(opts & OPT_SYM_LINKS) && target.uid !== lst.uid) {
        r.log('core', APLOG_ERR, `AH00037: Symbolic link not allowed or link target not accessible: ${candidate}`);
        return 403;
      }
      st = target;
    }
    finfo = st;
    if (!st.isDirectory()) {
      // A file: anything after it is path info.
      pathInfo = i + 1 < comps.length ? '/' + comps.slice(i + 1).join('/') + (trailingSlash ? '/' : '') : '';
      if (isLast && trailingSlash) {
        // "file/" — the trailing slash makes it path info, as httpd does.
        pathInfo = '/';
      }
      r.filename = candidate;
      r.pathInfo = pathInfo;
      r.finfo = st;
      return finishRegex(rt, r, cur, secs, secIdx);
    }
    dir = candidate + '/';
    depth++;
    applySectionsAt(dir, depth);
    const sth = applyHtaccess(dir);
    if (sth !== OK) return sth;
  }
  // A directory (or "/").
  r.filename = comps.length === 0 ? '/' : dir.length > 1 && !trailingSlash ? dir.slice(0, -1) : dir;
  r.pathInfo = '';
  r.finfo = finfo;
  return finishRegex(rt, r, cur, secs, secIdx);
}

function finishRegex(rt: Runtime, r: Request, from: Merged, secs: readonly Section[], start: number): Merged {
  let cur = from;
  // Remaining non-regex sections are deeper than the path: skip to the regex ones.
  let i = start;
  while (i < secs.length && !secs[i]!.regex) i++;
  if (i >= secs.length) return cur;
  const test = r.finfo && r.finfo.isDirectory() && !r.filename.endsWith('/') ? r.filename + '/' : r.filename;
  for (; i < secs.length; i++) {
    const sec = secs[i]!;
    if (!sec.regex!.test(test)) continue;
    cur = mergeCachedStep(rt, cur.key, cur.vec, 'D' + sec.id, sec.vector);
    r.matchedSections.push(sec.id);
  }
  return cur;
}

function statOrNull(p: string): fs.Stats | null {
  try { return fs.statSync(p); } catch { return null; }
}
