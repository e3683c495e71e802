// The configuration walks (httpd's server/request.c): <Location> against the URL,
// <Directory> and .htaccess along the file path (with symlink and permission checks),
// <Files> against the file name — and the merge cache that makes a repeated path cost
// one lookup. Merged vectors are shared, never mutated.

import { lstatSince, statSince, answersKept, TurnMap } from './stat-cache.js';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Request, Merged } from './request.js';
import type { Runtime } from '../runtime.js';
import type { Section } from '../core/sections.js';
import {
  coreDir, coreServer, OPT_SYM_LINKS, OPT_SYM_OWNER, OPT_UNSET, type CoreDirConfig,
} from '../core/config.js';
import { OR_NONE, OR_UNSET, OK } from '../module.js';
import { mergeVectors } from '../config/build.js';
import { readHtaccess, type HtaccessResult } from './htaccess.js';
import { APLOG_ERR, APLOG_CRIT, APLOG_ALERT } from '../log/levels.js';
import { IF_CONDITION_ELSE, IF_CONDITION_IF } from '../core/sections.js';
import { evalBool, isFailure, type ExprFailure } from '../../expr/index.js';
import type { MaybePromise } from '../module.js';

/** Merge cache: one merged vector per sequence of contributions, per runtime. */
const mergeCache = new WeakMap<Runtime, Map<string, unknown[]>>();

function cached(rt: Runtime): Map<string, unknown[]> {
  let m = mergeCache.get(rt);
  if (!m) { m = new Map(); mergeCache.set(rt, m); }
  return m;
}

/** Merges `add` onto `base` where both are identified, caching the result. */
function mergeCachedStep(rt: Runtime, baseKey: string, base: readonly unknown[], addKey: string, add: readonly unknown[]): Merged {
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

/** Merges contribution `by` (vector `add`, named `addKey()` in the string cache) onto `from`,
 *  following the link the last request that did the same left. */
function mergeStep(rt: Runtime, from: Merged, by: object, addKey: string, add: readonly unknown[]): Merged {
  let next = from.next;
  if (next === undefined) { next = new Map(); from.next = next; }
  let m = next.get(by);
  if (m === undefined) {
    m = mergeCachedStep(rt, from.key, from.vec, addKey, add);
    if (next.size >= 1024) next.clear();
    next.set(by, m);
  }
  return m;
}

const serverBases = new WeakMap<object, Merged>();
/** The server's own level: lookup_defaults (one object per server, so its links are kept). */
export function serverBase(r: Request): Merged {
  let m = serverBases.get(r.server);
  if (m === undefined || m.vec !== r.server.lookupDefaults) {
    m = { key: 's' + r.server.id, vec: r.server.lookupDefaults };
    serverBases.set(r.server, m);
  }
  return m;
}

/** The first contribution of a walk, as a node of its own (one per section or .htaccess). */
const walkRoots = new WeakMap<object, Merged>();
function walkRoot(by: object, key: string, vec: unknown[]): Merged {
  let m = walkRoots.get(by);
  if (m === undefined || m.vec !== vec) {
    m = { key, vec };
    walkRoots.set(by, m);
  }
  return m;
}

/**
 * Each walk merges the sections it matches with each other first, starting from the first
 * one (httpd's now_merged), and only then merges that onto the configuration it started
 * from. Merges are not associative for every module (mod_autoindex's IndexOptions +/-, for
 * one), so this order is part of the behaviour, not only of the cache.
 */
function addToWalk(rt: Runtime, now: Merged | null, by: object, key: string, vec: unknown[]): Merged {
  return now ? mergeStep(rt, now, by, key, vec) : walkRoot(by, key, vec);
}

function finishWalk(rt: Runtime, from: Merged, now: Merged | null): Merged {
  return now ? mergeStep(rt, from, now, '(' + now.key + ')', now.vec) : from;
}

/** Merges the given sections (each an object with an id and a vector: mod_proxy's <Proxy>
 *  sections, as httpd's proxy_walk) onto `from`, with the walks' merge cache. */
export function sectionsWalk(rt: Runtime, from: Merged, secs: readonly { readonly id: number; readonly vector: unknown[] }[]): Merged {
  let now: Merged | null = null;
  for (const sec of secs) now = addToWalk(rt, now, sec, 'P' + sec.id, sec.vector);
  return finishWalk(rt, from, now);
}

// ---- <Location> ------------------------------------------------------------------------
/** `uri` is tested by a <LocationMatch> regex as it is, by the others with its slashes
 *  merged (`merged`, the same string unless MergeSlashes Off left "//" in it). */
export function locationMatches(sec: Section, uri: string, merged = uri): boolean {
  if (sec.regex) return sec.regex.test(uri);
  uri = merged;
  if (sec.wildcard) return sec.wildcard.test(uri);
  const p = sec.path;
  if (!uri.startsWith(p)) return false;
  if (p.length > 0 && !p.endsWith('/') && uri.length > p.length && uri[p.length] !== '/') return false;
  return true;
}

/** Applies matching <Location> sections on top of `from`. */
export function locationWalk(rt: Runtime, r: Request, from: Merged): Merged {
  const secs = coreServer(r.server).secUrl;
  if (secs.length === 0) return from;
  const merged = collapseSlashes(r.uri);
  let now: Merged | null = null;
  for (const sec of secs) {
    if (!locationMatches(sec, r.uri, merged)) continue;
    if (sec.regex) setMatchEnv(r, sec.regex, r.uri);
    now = addToWalk(rt, now, sec, 'L' + sec.id, sec.vector);
    r.matchedSections.push(sec.id);
    r.trace?.record('section', { section: sec });
  }
  return finishWalk(rt, from, now);
}

/** A <LocationMatch> or <FilesMatch> regex's named groups become MATCH_<NAME> variables
 *  (httpd 2.4.8's refs: "(?<number>[0-9])" sets MATCH_NUMBER). */
function setMatchEnv(r: Request, re: RegExp, subject: string): void {
  if (!re.source.includes('(?<')) return;
  re.lastIndex = 0;
  const g = re.exec(subject)?.groups;
  if (g === undefined) return;
  for (const name of Object.keys(g)) {
    const v = g[name];
    if (v !== undefined) r.subprocessEnv.set('MATCH_' + name.toUpperCase(), v);
  }
}

function collapseSlashes(u: string): string {
  return u.includes('//') ? u.replace(/\/{2,}/g, '/') : u;
}

// ---- <If> ------------------------------------------------------------------------------

/**
 * httpd's ap_if_walk: the <If>/<ElseIf>/<Else> sections of the configuration merged so far,
 * in order, each condition evaluated for this request; the sections that apply are merged
 * with each other and then onto `from`, and their own nested <If> sections are walked next.
 * The merge cache's links are keyed by the sections merged, so the matched <If> set is part
 * of the cached configuration's identity. Synchronous unless a condition waits on a
 * subrequest (-U, -A, -F).
 */
export function ifWalk(rt: Runtime, r: Request, from: Merged): MaybePromise<Merged> {
  const secs = coreDir({ perDirConfig: from.vec })?.secIf;
  if (secs === undefined || secs.length === 0) return from;
  return ifWalkFrom(rt, r, from, secs, 0, null, -1);
}

function ifWalkFrom(rt: Runtime, r: Request, from: Merged, secs: readonly Section[], start: number, now: Merged | null, prev: number): MaybePromise<Merged> {
  for (let i = start; i < secs.length; i++) {
    const sec = secs[i]!;
    const kind = sec.ifElse ?? IF_CONDITION_IF;
    if ((kind & IF_CONDITION_ELSE) && prev === 1) continue;
    if ((kind & IF_CONDITION_IF) && sec.condition !== undefined) {
      const v = evalBool(sec.condition, r);
      if (v instanceof Promise) {
        return v.then((res) => {
          const p = ifVerdict(r, res);
          const n = p === 1 ? addIf(rt, r, now, sec) : now;
          return ifWalkFrom(rt, r, from, secs, i + 1, n, p);
        });
      }
      prev = ifVerdict(r, v);
      if (prev === 0) continue;
    } else prev = -1;
    now = addIf(rt, r, now, sec);
  }
  const merged = finishWalk(rt, from, now);
  if (now === null) return merged;
  // Nested <If> sections of the ones that applied.
  const nested = coreDir({ perDirConfig: now.vec })?.secIf;
  if (nested === undefined || nested.length === 0) return merged;
  return ifWalkFrom(rt, r, merged, nested, 0, null, -1);
}

function ifVerdict(r: Request, v: boolean | ExprFailure): number {
  if (v === true) return 1;
  if (isFailure(v)) r.log('core', APLOG_ERR, `AH00039: Failed to evaluate <If > condition: ${v.error}`);
  return 0;
}

function addIf(rt: Runtime, r: Request, now: Merged | null, sec: Section): Merged {
  r.matchedSections.push(sec.id);
  r.trace?.record('section', { section: sec });
  return addToWalk(rt, now, sec, 'I' + sec.id, sec.vector);
}

// ---- <Files> ---------------------------------------------------------------------------
export function fileWalk(rt: Runtime, r: Request, from: Merged): Merged {
  const secs = (from.vec.length ? coreDir({ perDirConfig: from.vec }) : undefined)?.secFile;
  if (!secs || secs.length === 0) return from;
  const slash = r.filename.lastIndexOf('/');
  const test = slash < 0 ? r.filename : r.filename.slice(slash + 1);
  let now: Merged | null = null;
  for (const sec of secs) {
    const ok = sec.regex ? sec.regex.test(test) : sec.wildcard ? sec.wildcard.test(test) : sec.path === test;
    if (!ok) continue;
    if (sec.regex) setMatchEnv(r, sec.regex, test);
    now = addToWalk(rt, now, sec, 'F' + sec.id, sec.vector);
    r.matchedSections.push(sec.id);
    r.trace?.record('section', { section: sec });
  }
  return finishWalk(rt, from, now);
}

// ---- <Directory> and .htaccess -----------------------------------------------------------

/** Result of the directory walk: a merged config, or an HTTP status to fail with. */
export type DirWalkResult = Merged | number;

/** The walk's running Options and AllowOverride (httpd's core_opts_t): what the walked levels
 *  give on top of the starting configuration, kept apart from the walk's own merge. */
interface CoreOpts {
  opts: number;
  add: number;
  remove: number;
  override: number;
  overrideOpts: number;
  overrideList: ReadonlySet<string> | undefined;
}

function coreOptsOf(vec: readonly unknown[]): CoreOpts {
  const c = coreDir({ perDirConfig: vec });
  return { opts: c.opts, add: c.optsAdd, remove: c.optsRemove, override: c.override, overrideOpts: c.overrideOpts, overrideList: c.overrideList };
}

/** core_opts_merge: a section's (or .htaccess file's) Options and AllowOverride. */
function coreOptsMerge(o: CoreOpts, vec: readonly unknown[]): void {
  const c = coreDir({ perDirConfig: vec }) as CoreDirConfig | undefined;
  if (!c) return;
  if (c.opts & OPT_UNSET) {
    o.add = (o.add & ~c.optsRemove) | c.optsAdd;
    o.remove = (o.remove & ~c.optsAdd) | c.optsRemove;
    o.opts = (o.opts & ~o.remove) | o.add;
  } else {
    o.opts = c.opts;
    o.add = c.optsAdd;
    o.remove = c.optsRemove;
  }
  if (!(c.override & OR_UNSET)) {
    o.override = c.override;
    o.overrideOpts = c.overrideOpts;
  }
  if (c.overrideList !== undefined) o.overrideList = c.overrideList;
}

/** Whether .htaccess files are read at this level (never, when AllowOverride was never set). */
function overridesActive(c: CoreOpts): boolean {
  if (c.override & OR_UNSET) return false;
  return (c.override & ~OR_UNSET) !== OR_NONE || (c.overrideList !== undefined && c.overrideList.size > 0);
}

/** What one directory walk found, kept for the other requests of its turn. */
interface WalkMemo {
  /** The turn the walking request was read in: the entry serves requests read then or before. */
  readonly at: number;
  readonly rt: Runtime;
  readonly server: Request['server'];
  readonly from: Merged;
  readonly merged: Merged;
  readonly filename: string;
  readonly pathInfo: string;
  readonly finfo: fs.Stats | null;
  readonly sections: readonly number[];
}

/** Walks by the filename they started from. A walk depends on the configuration it starts
 *  from and on stat() answers and .htaccess files, which the stat cache shares among the
 *  requests of one turn (stat-cache.ts): a walk made from those answers gives the same result
 *  to every request they may serve, so it is kept by the same rule and dropped with them. */
const walkMemo = new TurnMap<string, WalkMemo>();

/**
 * httpd's ap_directory_walk. r.filename is an absolute path; on return r.filename is the
 * file or directory found, r.pathInfo the rest, r.finfo its stat (null if it does not exist).
 * A walk that fails (a status) is not kept: it logs, and the next request logs again.
 */
export function directoryWalk(rt: Runtime, r: Request, from: Merged): DirWalkResult {
  if (r.trace !== undefined) return walkDirectories(rt, r, from);
  const start = r.filename;
  const m = walkMemo.get(start);
  if (m !== undefined && m.from === from && m.rt === rt && m.server === r.server && r.readSeq <= m.at) {
    r.filename = m.filename;
    r.pathInfo = m.pathInfo;
    r.finfo = m.finfo;
    for (let i = 0; i < m.sections.length; i++) r.matchedSections.push(m.sections[i]!);
    return m.merged;
  }
  const before = r.matchedSections.length;
  const res = walkDirectories(rt, r, from);
  if (typeof res !== 'number' && answersKept()) {
    walkMemo.set(start, {
      at: r.readSeq, rt, server: r.server, from, merged: res, filename: r.filename, pathInfo: r.pathInfo,
      finfo: r.finfo, sections: r.matchedSections.slice(before),
    });
  }
  return res;
}

function walkDirectories(rt: Runtime, r: Request, from: Merged): DirWalkResult {
  const secs = coreServer(r.server).secDir;
  let filename = r.filename.includes('/.') || r.filename.includes('//') ? path.posix.normalize(r.filename) : r.filename;
  if (r.filename.endsWith('/') && !filename.endsWith('/')) filename += '/';
  const accessNames = coreServer(r.server).accessNames ?? ['.htaccess'];

  // Split into components; walk from "/" down, stopping at the first that does not exist.
  const trailingSlash = filename.endsWith('/');
  let now: Merged | null = null;
  const run = coreOptsOf(from.vec);
  let secIdx = 0;
  let dir = '/';
  let depth = 1; // components in `dir`, counted as httpd does: the number of slashes
  let finfo: fs.Stats | null = null;
  let pathInfo = '';
  const comps = componentsOf(filename);

  const applySectionsAt = (d: string, dDepth: number): void => {
    for (; secIdx < secs.length; secIdx++) {
      const sec = secs[secIdx]!;
      if (sec.regex) break;
      if (sec.depth > dDepth) break;
      const ok = sec.wildcard ? sec.wildcard.test(d.length > 1 ? d.slice(0, -1) : d) : sec.path === d;
      if (!ok) continue;
      coreOptsMerge(run, sec.vector);
      now = addToWalk(rt, now, sec, 'D' + sec.id, sec.vector);
      r.matchedSections.push(sec.id);
      r.trace?.record('section', { section: sec });
    }
  };

  const applyHtaccess = (d: string): number => {
    if (!overridesActive(run)) return OK;
    for (const name of accessNames) {
      const file = d + name;
      const res: HtaccessResult = readHtaccess(rt, r, file, run);
      if (res.kind === 'none') continue;
      if (res.kind === 'error') {
        if (res.status === 403) {
          r.log('core', APLOG_CRIT, `AH00529: ${file} pcfg_openfile: unable to check htaccess file, ensure it is readable and that '${d}' is executable`, res.errno);
          r.notes.set('error-notes', 'Server unable to read htaccess file, denying access to be safe');
        } else {
          r.log('core', APLOG_ALERT, `${file}: ${res.message}`);
        }
        r.trace?.record('htaccess', { file, at: r.matchedSections.length, status: res.status });
        return res.status;
      }
      coreOptsMerge(run, res.vector);
      now = addToWalk(rt, now, res.vector, 'H' + res.key, res.vector);
      r.trace?.record('htaccess', { file, at: r.matchedSections.length, status: OK });
      break;
    }
    return OK;
  };

  /** Steps into directory `d` (no trailing slash): its sections, then its .htaccess. */
  const enterDir = (d: string): number => {
    dir = d + '/';
    depth++;
    applySectionsAt(dir, depth);
    return applyHtaccess(dir);
  };

  // The root level.
  applySectionsAt('/', depth);
  const st0 = applyHtaccess('/');
  if (st0 !== OK) return st0;
  if (comps.length === 0) finfo = statOrNull('/', r.readSeq);

  // One stat() of the whole path, made when the first level that follows symlinks freely is
  // reached: where Options allow FollowSymLinks (without SymLinksIfOwnerMatch), a component's
  // lstat() would only say whether it exists and is a directory, and a successful stat() of the
  // full path says both for every component. Any failure falls back to the per-component walk,
  // which finds the path info and logs what httpd logs.
  let fullStat: fs.Stats | null | undefined;
  // The full path's own lstat() when that is what fullStat came from (the last component is
  // no symlink): it answers the last component's symlink check without another system call.
  let fullLstat: fs.Stats | undefined;
  let parentIsDir: boolean | undefined;
  for (let i = 0; i < comps.length; i++) {
    const comp = comps[i]!;
    const isLast = i === comps.length - 1;
    const candidate = dir + comp;
    const opts = run.opts & ~OPT_UNSET;
    if ((opts & OPT_SYM_LINKS) !== 0 && (opts & OPT_SYM_OWNER) === 0) {
      if (fullStat === undefined) {
        // lstat() first: for a path whose last component is not a symlink it is the stat().
        const full = filename[0] !== '/' ? '/' + comps.join('/') : trailingSlash ? filename.slice(0, -1) : filename;
        const l = lstatOrNull(full, r.readSeq);
        if (l !== null && !l.isSymbolicLink()) { fullStat = l; fullLstat = l; }
        else fullStat = l === null ? null : statOrNull(full, r.readSeq);
      }
      // The full path does not exist: a stat() of its parent still vouches for every
      // component above the last (a missing file in an existing directory, the common 404).
      if (fullStat === null && parentIsDir === undefined && comps.length > 1) {
        const parent = statOrNull('/' + comps.slice(0, -1).join('/'), r.readSeq);
        parentIsDir = parent !== null && parent.isDirectory();
      }
      if (fullStat !== null || (parentIsDir === true && !isLast)) {
        if (!isLast) {
          const sth = enterDir(candidate);
          if (sth !== OK) return sth;
          continue;
        }
        finfo = fullStat!;
        if (!fullStat!.isDirectory()) {
          r.filename = candidate;
          r.pathInfo = trailingSlash ? '/' : '';
          r.finfo = fullStat!;
          return finishWalk(rt, from, finishRegex(rt, r, now, run, secs, secIdx));
        }
        const sth = enterDir(candidate);
        if (sth !== OK) return sth;
        continue;
      }
    }
    // The rest is path info (or the file simply does not exist).
    const missing = (): Merged => {
      finfo = null;
      pathInfo = '/' + comps.slice(i + 1).join('/') + (trailingSlash && i + 1 < comps.length ? '/' : '');
      if (i + 1 >= comps.length) pathInfo = '';
      filename = candidate + (isLast && trailingSlash ? '/' : '');
      r.filename = filename;
      r.pathInfo = pathInfo;
      r.finfo = null;
      return finishWalk(rt, from, finishRegex(rt, r, now, run, secs, secIdx));
    };
    let lst: fs.Stats | undefined = isLast ? fullLstat : undefined;
    if (lst === undefined) try {
      // ENOENT answers undefined rather than an exception (cheaper: the 404 path).
      lst = lstatSince(candidate, r.readSeq);
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return missing();
      if (code === 'EACCES') {
        r.log('core', APLOG_ERR, `AH00035: access to ${r.uri} denied (filesystem path '${candidate}') because search permissions are missing on a component of the path`, rt.errno(e));
        return 403;
      }
      r.log('core', APLOG_ERR, `AH00036: access to ${r.uri} failed (filesystem path '${candidate}')`, rt.errno(e));
      return 403;
    }
    if (lst === undefined) return missing();
    let st = lst;
    if (lst.isSymbolicLink()) {
      if (!(opts & (OPT_SYM_LINKS | OPT_SYM_OWNER))) {
        r.log('core', APLOG_ERR, `AH00037: Symbolic link not allowed or link target not accessible: ${candidate}`);
        return 403;
      }
      const target = statOrNull(candidate, r.readSeq);
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
      return finishWalk(rt, from, finishRegex(rt, r, now, run, secs, secIdx));
    }
    const sth = enterDir(candidate);
    if (sth !== OK) return sth;
  }
  // A directory (or "/").
  r.filename = comps.length === 0 ? '/' : dir.length > 1 && !trailingSlash ? dir.slice(0, -1) : dir;
  r.pathInfo = '';
  r.finfo = finfo;
  return finishWalk(rt, from, finishRegex(rt, r, now, run, secs, secIdx));
}

/** A path's non-empty components, remembered per path (the same few paths come again and
 *  again); the arrays are shared, never modified. */
const components = new Map<string, readonly string[]>();
function componentsOf(filename: string): readonly string[] {
  let c = components.get(filename);
  if (c === undefined) {
    c = filename.split('/').filter((p) => p !== '');
    if (components.size >= 4096) components.clear();
    components.set(filename, c);
  }
  return c;
}

function finishRegex(rt: Runtime, r: Request, from: Merged | null, run: CoreOpts, secs: readonly Section[], start: number): Merged | null {
  let cur = from;
  // Remaining non-regex sections are deeper than the path: skip to the regex ones.
  let i = start;
  while (i < secs.length && !secs[i]!.regex) i++;
  if (i >= secs.length) return cur;
  // Tested against the walked filename as it stands: a file's full path, a directory with a
  // trailing slash only when the URL had one (httpd matches r->filename).
  const test = r.filename;
  for (; i < secs.length; i++) {
    const sec = secs[i]!;
    if (!sec.regex || !sec.regex.test(test)) continue;
    coreOptsMerge(run, sec.vector);
    cur = addToWalk(rt, cur, sec, 'D' + sec.id, sec.vector);
    r.matchedSections.push(sec.id);
    r.trace?.record('section', { section: sec });
  }
  return cur;
}

function lstatOrNull(p: string, since: number): fs.Stats | null {
  try { return lstatSince(p, since) ?? null; } catch { return null; }
}

function statOrNull(p: string, since: number): fs.Stats | null {
  try { return statSince(p, since) ?? null; } catch { return null; }
}
