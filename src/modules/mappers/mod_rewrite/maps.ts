// RewriteMap (modules/mappers/mod_rewrite.c cmd_rewritemap, lookup_map): txt, rnd, dbm (SDBM),
// int (toupper, tolower, escape, unescape), prg, and dbd/fastdbd (an SQL statement prepared
// through mod_dbd's provider under the map's name; fastdbd caches answers for the process's
// life, as httpd's per-child cache with mtime 0). txt/rnd/dbm answers are cached per map
// and dropped when the map file's mtime changes, as httpd's per-child cache does. A prg map is
// one long-running program per server and serving process, asked one key per line under a
// lock (one question at a time, as httpd's rewrite-map mutex), restarted if it dies.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Request } from '../../../server/request/request.js';
import { APLOG_ERR } from '../../../server/log/levels.js';
import { openDbmReadOnly, isSupportedDbmType, DIRFEXT, PAGFEXT } from '../../../lib/dbm/index.js';
import { fsPath } from '../../../server/request/stat-cache.js';
import { tokenizeArgv } from '../../../lib/apr-strings.js';
import { unescapeUrl } from '../../../lib/urlencoded.js';
import { escapeUri } from './uri.js';
import { L, rewritelog, traceOn } from './log.js';

export type MapType = 'txt' | 'rnd' | 'dbm' | 'prg' | 'int' | 'dbd' | 'fastdbd';

/** ap_dbd_prepare through mod_dbd's provider: false when mod_dbd is not loaded. */
export type PrepareDbd = (query: string, label: string) => boolean;

export interface RewriteMapEntry {
  readonly name: string;
  readonly type: MapType;
  readonly datafile: string;
  readonly dbmtype: string;
  /** Files stat'ed for existence and freshness. */
  readonly checkfile: string;
  readonly checkfile2: string | undefined;
  /** int: the function. */
  readonly func: ((key: string) => string) | undefined;
  /** prg: argv and the optional user:group (kept for -S; plume runs it as itself). */
  readonly argv: readonly string[];
  readonly user: string | undefined;
  readonly group: string | undefined;
  /** Cache key: server id and map name. */
  readonly cachename: string;
}

const asciiUpper = (s: string): string => s.replace(/[a-z]+/g, (m) => m.toUpperCase());
const asciiLower = (s: string): string => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

/** The int: map functions (ap_register_rewrite_mapfunc's registry). */
export const INTERNAL_MAPS = new Map<string, (key: string) => string>([
  ['tolower', asciiLower], ['toupper', asciiUpper], ['escape', escapeUri], ['unescape', unescapeUrl],
]);

/** cmd_rewritemap: the map entry or httpd's error text. */
export function parseMap(name: string, spec: string, a3: string | undefined, serverId: number, rootRelative: (p: string) => string, prepareDbd: PrepareDbd): RewriteMapEntry | string {
  const lower = spec.toLowerCase();
  const cachename = `${serverId}:${name}`;
  const base = { name, dbmtype: 'default', checkfile2: undefined, func: undefined, argv: [], user: undefined, group: undefined, cachename };
  let entry: RewriteMapEntry;
  if (lower.startsWith('txt:') || lower.startsWith('rnd:')) {
    const fname = rootRelative(spec.slice(4));
    entry = { ...base, type: lower.startsWith('txt:') ? 'txt' : 'rnd', datafile: fname, checkfile: fname };
  } else if (lower.startsWith('dbm')) {
    let fname: string | undefined;
    let dbmtype = 'default';
    if (spec[3] === ':') fname = spec.slice(4);
    else if (spec[3] === '=') {
      const colon = spec.indexOf(':', 4);
      if (colon >= 0) { dbmtype = spec.slice(4, colon); fname = spec.slice(colon + 1); }
    }
    if (fname === undefined) return `RewriteMap: bad map:${spec}`;
    const datafile = rootRelative(fname);
    // apr_dbm_get_usednames_ex: an unknown type is "invalid"; SDBM uses NAME.dir and NAME.pag.
    const known = ['default', 'sdbm', 'gdbm', 'ndbm', 'db'];
    if (!known.includes(dbmtype.toLowerCase())) return `RewriteMap: dbm type ${dbmtype} is invalid`;
    entry = { ...base, type: 'dbm', dbmtype, datafile, checkfile: datafile + DIRFEXT, checkfile2: datafile + PAGFEXT };
  } else if (lower.startsWith('dbd:') || lower.startsWith('fastdbd:')) {
    // The statement's label is the map's name; its one parameter is the key.
    const fast = lower.startsWith('fastdbd:');
    if (!prepareDbd(spec.slice(fast ? 8 : 4), name)) return 'RewriteMap types dbd and fastdbd require mod_dbd!';
    return { ...base, type: fast ? 'fastdbd' : 'dbd', datafile: '', checkfile: '' };
  } else if (lower.startsWith('prg:')) {
    const argv = tokenizeArgv(spec.slice(4));
    const prog = rootRelative(argv[0] ?? '');
    argv[0] = prog;
    let user: string | undefined;
    let group: string | undefined;
    if (a3 !== undefined) {
      const parts = a3.split(':').filter((p) => p !== '');
      user = parts[0];
      group = parts[1];
    }
    entry = { ...base, type: 'prg', datafile: '', checkfile: prog, argv, user, group };
  } else if (lower.startsWith('int:')) {
    const func = INTERNAL_MAPS.get(spec.slice(4));
    if (func === undefined) return `RewriteMap: internal map not found:${spec.slice(4)}`;
    return { ...base, type: 'int', datafile: '', checkfile: '', func };
  } else {
    const fname = rootRelative(spec);
    entry = { ...base, type: 'txt', datafile: fname, checkfile: fname };
  }
  if (entry.checkfile !== '' && !exists(entry.checkfile)) return `RewriteMap: file for map ${name} not found:${entry.checkfile}`;
  return entry;
}

function exists(f: string): boolean {
  try { fs.statSync(fsPath(f)); return true; } catch { return false; }
}

// ---- the per-process cache (httpd's cachep) ---------------------------------------------------
interface CachedMap { mtime: number; entries: Map<string, string> }
const cache = new Map<string, CachedMap>();

function getCached(name: string, mtime: number, key: string): string | undefined {
  const m = cache.get(name);
  if (m === undefined) return undefined;
  if (m.mtime !== mtime) { m.entries = new Map(); m.mtime = mtime; return undefined; }
  return m.entries.get(key);
}

function setCached(name: string, mtime: number, key: string, val: string): void {
  let m = cache.get(name);
  if (m === undefined) { m = { mtime, entries: new Map() }; cache.set(name, m); }
  else if (m.mtime !== mtime) { m.entries = new Map(); m.mtime = mtime; }
  if (m.entries.size >= 100000) m.entries.clear();
  m.entries.set(key, val);
}

/** apr_time_t resolution of an mtime (microseconds), as httpd compares it. */
const mtimeOf = (st: fs.Stats): number => Math.floor(st.mtimeMs * 1000);

const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';

/** lookup_map_txtfile: the first "key value" line; lines are read 1024 bytes at a time. */
function lookupTxt(r: Request, file: string, key: string): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(fsPath(file), 'latin1');
  } catch (e) {
    r.log('rewrite', APLOG_ERR, `AH00655: mod_rewrite: can't open text RewriteMap file ${file}`, r.rt.errno(e));
    return undefined;
  }
  let pos = 0;
  while (pos < text.length) {
    // apr_file_gets with a 1025-byte buffer: at most 1024 characters, up to and with '\n'.
    let end = text.indexOf('\n', pos);
    end = end < 0 ? text.length : end + 1;
    if (end - pos > 1024) end = pos + 1024;
    const line = text.slice(pos, end);
    pos = end;
    if (line[0] === '#' || isSpace(line[0])) continue;
    let p = 0;
    while (p < key.length && line[p] === key[p] && !isSpace(line[p])) p++;
    if (p !== key.length || !isSpace(line[p])) continue;
    while (isSpace(line[p])) p++;
    if (p >= line.length) continue;
    const start = p;
    while (p < line.length && !isSpace(line[p])) p++;
    return line.slice(start, p);
  }
  return undefined;
}

/** select_random_value_part: one of the |-separated values. */
function randomPart(value: string): string {
  const parts = value.split('|');
  if (parts.length <= 1) return value;
  return parts[Math.floor(Math.random() * parts.length)]!;
}

function lookupDbm(r: Request, m: RewriteMapEntry, key: string): string | undefined {
  try {
    if (!isSupportedDbmType(m.dbmtype)) throw new Error('APR_ENOTIMPL');
    const db = openDbmReadOnly(m.dbmtype, m.datafile);
    const v = db.fetch(Buffer.from(key, 'latin1'));
    return v === undefined ? undefined : v.toString('latin1');
  } catch (e) {
    r.log('rewrite', APLOG_ERR, `AH00656: mod_rewrite: can't open DBM RewriteMap ${m.datafile}`, r.rt.errno(e));
    return undefined;
  }
}

/** lookup_map: the value for a key, or undefined. A prg map answers through a promise. */
export function lookupMap(r: Request, maps: ReadonlyMap<string, RewriteMapEntry>, name: string, key: string): string | undefined | Promise<string | undefined> {
  const s = maps.get(name);
  if (s === undefined) return undefined;
  switch (s.type) {
    case 'txt':
    case 'rnd': {
      let st: fs.Stats;
      try { st = fs.statSync(fsPath(s.checkfile)); } catch (e) {
        r.log('rewrite', APLOG_ERR, `AH00661: mod_rewrite: can't access text RewriteMap file ${s.checkfile}`, r.rt.errno(e));
        return undefined;
      }
      const mt = mtimeOf(st);
      let value = getCached(s.cachename, mt, key);
      if (value === undefined) {
        if (traceOn(r, 6)) rewritelog(r, 6, undefined, L.cacheFailed, 'cache lookup FAILED, forcing new map lookup');
        value = lookupTxt(r, s.datafile, key);
        if (value === undefined) {
          if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapFailedTxt, `map lookup FAILED: map=${name}[txt] key=${key}`);
          setCached(s.cachename, mt, key, '');
          return undefined;
        }
        if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapOkTxt, `map lookup OK: map=${name}[txt] key=${key} -> val=${value}`);
        setCached(s.cachename, mt, key, value);
      } else if (traceOn(r, 5)) {
        rewritelog(r, 5, undefined, L.cacheOkTxt, `cache lookup OK: map=${name}[txt] key=${key} -> val=${value}`);
      }
      if (s.type === 'rnd' && value !== '') {
        value = randomPart(value);
        if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.rndChosen, `randomly chosen the subvalue \`${value}'`);
      }
      return value !== '' ? value : undefined;
    }
    case 'dbm': {
      let mt: number;
      try {
        mt = mtimeOf(fs.statSync(fsPath(s.checkfile)));
      } catch (e) {
        r.log('rewrite', APLOG_ERR, `AH00662: mod_rewrite: can't access DBM RewriteMap file ${s.checkfile}`, r.rt.errno(e));
        return undefined;
      }
      if (s.checkfile2 !== undefined) {
        try {
          const m2 = mtimeOf(fs.statSync(fsPath(s.checkfile2)));
          if (m2 > mt) mt = m2;
        } catch (e) {
          r.log('rewrite', APLOG_ERR, `AH00663: mod_rewrite: can't access DBM RewriteMap file ${s.checkfile2}`, r.rt.errno(e));
          return undefined;
        }
      }
      const cached = getCached(s.cachename, mt, key);
      if (cached === undefined) {
        if (traceOn(r, 6)) rewritelog(r, 6, undefined, L.cacheFailedDbm, 'cache lookup FAILED, forcing new map lookup');
        const value = lookupDbm(r, s, key);
        if (value === undefined) {
          if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapFailedDbm, `map lookup FAILED: map=${name}[dbm] key=${key}`);
          setCached(s.cachename, mt, key, '');
          return undefined;
        }
        if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapOkDbm, `map lookup OK: map=${name}[dbm] key=${key} -> val=${value}`);
        setCached(s.cachename, mt, key, value);
        return value;
      }
      if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.cacheOkDbm, `cache lookup OK: map=${name}[dbm] key=${key} -> val=${cached}`);
      return cached !== '' ? cached : undefined;
    }
    case 'int': {
      const value = s.func!(key);
      // toupper, tolower and unescape work on the key in place (it is logged changed).
      const shown = s.func === escapeUri ? key : value;
      if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapOkInt, `map lookup OK: map=${name} key=${shown} -> val=${value}`);
      return value;
    }
    case 'dbd':
      return lookupDbd(r, name, key).then((value) => {
        if (value === undefined) {
          if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapFailedSql, `SQL map lookup FAILED: map ${name} key=${key}`);
        } else if (traceOn(r, 5)) {
          rewritelog(r, 5, undefined, L.mapOkSql, `SQL map lookup OK: map ${name} key=${key}, val=${value}`);
        }
        return value;
      });
    case 'fastdbd': {
      const cached = getCached(s.cachename, 0, key);
      if (cached !== undefined) {
        if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.cacheOkSql, `cache lookup OK: map=${name}[SQL] key=${key}, val=${cached}`);
        return cached !== '' ? cached : undefined;
      }
      if (traceOn(r, 6)) rewritelog(r, 6, undefined, L.cacheFailedSql, 'cache lookup FAILED, forcing new map lookup');
      return lookupDbd(r, name, key).then((value) => {
        if (value === undefined) {
          if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapFailedSqlCached, `SQL map lookup FAILED: map ${name} key=${key}`);
          setCached(s.cachename, 0, key, '');
          return undefined;
        }
        if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapOkSqlCached, `SQL map lookup OK: map ${name} key=${key}, val=${value}`);
        setCached(s.cachename, 0, key, value);
        return value;
      });
    }
    case 'prg':
      return programFor(s).ask(key).then((value) => {
        if (value === undefined) {
          if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.mapFailedPrg, `map lookup FAILED: map=${name} key=${key}`);
        } else if (traceOn(r, 5)) {
          rewritelog(r, 5, undefined, L.mapOkPrg, `map lookup OK: map=${name} key=${key} -> val=${value}`);
        }
        return value;
      });
  }
}

// ---- dbd: maps ---------------------------------------------------------------------------------
/** lookup_map_dbd: the first column of the statement's rows for `key` on the request's
 *  connection (one row's value; among several, one chosen at random as httpd's loop does). */
async function lookupDbd(r: Request, label: string, key: string): Promise<string | undefined> {
  const api = r.rt.ctx.provider('dbd', 'dbd');
  const db = api === undefined ? null : await api.acquire(r);
  if (db === null) {
    r.log('rewrite', APLOG_ERR, 'AH02963: rewritemap: No db handle available! Check your database access');
    return undefined;
  }
  let rows: readonly (readonly string[])[];
  try {
    // Sequential access (apr_dbd_pvselect with random 0): an error the server reports while
    // running the statement reads as no rows, as with apr_dbd_pgsql.
    rows = (await db.pselect(label, [key], false)).rows;
  } catch (e) {
    r.log('rewrite', APLOG_ERR, `AH00657: rewritemap: error ${e instanceof Error ? e.message : db.error()} querying for ${key}`);
    return undefined;
  }
  let value: string | undefined;
  let n = 0;
  for (const row of rows) {
    ++n;
    if (value === undefined || Math.random() < 1 / n) value = row[0] ?? '';
  }
  if (n > 1 && traceOn(r, 3)) rewritelog(r, 3, undefined, L.multipleSql, `Multiple values found for ${key}`);
  return value;
}

// ---- prg: maps ---------------------------------------------------------------------------------
/** One running map program: questions go out one at a time, each answer is one line. */
class MapProgram {
  private child: ChildProcess | null = null;
  private buffered = '';
  private waiting: ((line: string | undefined) => void) | null = null;
  /** The lock: the tail of the queue of questions. */
  private tail: Promise<unknown> = Promise.resolve();
  stopped = false;

  constructor(readonly entry: RewriteMapEntry, private readonly onError: (msg: string) => void) {}

  start(): boolean {
    const argv = this.entry.argv;
    try {
      // RewriteMap's user:group applies as apr_proc_create applies it: only when the server
      // runs as root.
      const ids = typeof process.getuid === 'function' && process.getuid() === 0 ? idsOf(this.entry.user, this.entry.group) : {};
      const child = spawn(argv[0]!, argv.slice(1), { cwd: path.dirname(argv[0]!), stdio: ['pipe', 'pipe', 'inherit'], ...ids });
      child.stdout!.setEncoding('latin1');
      child.stdout!.on('data', (d: string) => this.onData(d));
      child.on('error', () => this.onExit());
      child.on('exit', () => this.onExit());
      child.stdin!.on('error', () => { /* the exit handler restarts it */ });
      this.child = child;
      return true;
    } catch {
      this.onError(`AH00654: mod_rewrite: could not start RewriteMap program ${this.entry.checkfile}`);
      return false;
    }
  }

  private onData(d: string): void {
    this.buffered += d;
    let nl: number;
    while (this.waiting !== null && (nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      const w = this.waiting;
      this.waiting = null;
      w(line);
    }
  }

  private onExit(): void {
    this.child = null;
    this.buffered = '';
    const w = this.waiting;
    this.waiting = null;
    if (w) w(undefined);
  }

  /** lookup_map_program: writes "key\n", reads one line; "NULL" means no value. A key with
   *  a newline is never sent (it would put the program out of step). */
  ask(key: string): Promise<string | undefined> {
    if (key.includes('\n')) return Promise.resolve(undefined);
    const run = this.tail.then(() => new Promise<string | undefined>((resolve) => {
      if (this.child === null && !this.stopped) this.start();
      const child = this.child;
      if (child === null || child.stdin === null) { resolve(undefined); return; }
      this.waiting = (line) => resolve(line === undefined ? undefined : line.length === 4 && line.toLowerCase() === 'null' ? undefined : line);
      child.stdin.write(Buffer.from(key + '\n', 'latin1'));
      this.onData('');
    }));
    this.tail = run;
    return run;
  }

  stop(): void {
    this.stopped = true;
    if (this.child !== null) {
      this.child.stdin?.end();
      this.child.kill('SIGTERM');
      this.child = null;
    }
  }
}

/** A name (or number) in /etc/passwd or /etc/group: its id. */
function idIn(file: string, name: string): number | undefined {
  if (/^[0-9]+$/.test(name)) return Number(name);
  try {
    for (const line of fs.readFileSync(file, 'latin1').split('\n')) {
      const f = line.split(':');
      if (f[0] === name && f[2] !== undefined) return Number(f[2]);
    }
  } catch { /* no database */ }
  return undefined;
}

function idsOf(user: string | undefined, group: string | undefined): { uid?: number; gid?: number } {
  const out: { uid?: number; gid?: number } = {};
  const uid = user === undefined ? undefined : idIn('/etc/passwd', user);
  const gid = group === undefined ? undefined : idIn('/etc/group', group);
  if (uid !== undefined) out.uid = uid;
  if (gid !== undefined) out.gid = gid;
  return out;
}

// DIFFERENCE: httpd starts each prg: map once, in the parent, and every child process talks to
// that one program under the rewrite-map mutex. plume starts it in each serving process (-X:
// one; with worker processes, one per worker), one question at a time within the process; a
// program that keeps state across lookups sees each worker's share of them.
const programs = new Map<RewriteMapEntry, MapProgram>();
let programErrorLog: (msg: string) => void = () => { /* set by startPrograms */ };

function programFor(entry: RewriteMapEntry): MapProgram {
  let p = programs.get(entry);
  if (p === undefined) {
    p = new MapProgram(entry, programErrorLog);
    programs.set(entry, p);
  }
  return p;
}

/** run_rewritemap_programs: starts each server's prg: maps; an error text if one cannot start. */
export function startPrograms(entries: readonly RewriteMapEntry[], onError: (msg: string) => void): string | undefined {
  programErrorLog = onError;
  for (const e of entries) {
    if (e.argv[0] === undefined || e.argv[0] === '') continue;
    if (!exists(e.argv[0])) return `AH00654: mod_rewrite: could not start RewriteMap program ${e.checkfile}`;
    if (!programFor(e).start()) return `AH00654: mod_rewrite: could not start RewriteMap program ${e.checkfile}`;
  }
  return undefined;
}

/** Stops every running map program (configuration cleanup). */
export function stopPrograms(): void {
  for (const p of programs.values()) p.stop();
  programs.clear();
}
