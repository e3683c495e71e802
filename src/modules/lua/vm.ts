// mod_lua's interpreters (httpd's modules/lua/lua_vmprep.c): Lua states on wasmoon (Lua 5.4
// compiled to WebAssembly), created per LuaScope, the script loaded into each and reloaded when
// LuaCodeCache says it changed, and the calls into Lua that may wait on JavaScript promises
// (r:wsread, r:requestbody, r:sleep) without blocking anything but their own request.
//
// wasmoon is imported lazily, on the first Lua state: a configuration without LoadModule
// lua_module, or one whose scripts never run, never loads the WebAssembly module.

import * as fs from 'node:fs';
import type { LuaEngine, LuaFactory } from 'wasmoon';
import { LUA_PRELUDE } from './prelude.js';

export type LuaScope = 'once' | 'request' | 'conn' | 'thread' | 'server';
export type LuaCodeCache = 'stat' | 'forever' | 'never';

/** What a state needs to be made: the script, package paths and cache policy. */
export interface VmSpec {
  readonly file: string;
  readonly scope: LuaScope;
  readonly codecache: LuaCodeCache;
  readonly packagePaths: readonly string[];
  readonly packageCPaths: readonly string[];
  /** LuaScope server's pool bounds. */
  readonly vmMin: number;
  readonly vmMax: number;
}

/** The JavaScript side of the request API, called from the Lua prelude's stubs. */
export interface LuaBridge {
  get(id: number, key: string): unknown;
  set(id: number, key: string, value: unknown): void;
  call(id: number, name: string, args: unknown[]): unknown;
  callAsync(id: number, name: string, args: unknown[]): Promise<unknown>;
  tableGet(id: number, which: string, key: string): unknown;
  tableSet(id: number, which: string, key: string, value: unknown): void;
  tablePairs(id: number, which: string): Record<string, string>;
  log(id: number, level: number, source: string, line: number, message: string): void;
}

let factoryPromise: Promise<LuaFactory> | null = null;

async function luaFactory(): Promise<LuaFactory> {
  if (factoryPromise === null) {
    factoryPromise = import('wasmoon').then((m) => {
      const mod = m as unknown as { LuaFactory?: typeof LuaFactory; default?: { LuaFactory: typeof LuaFactory } };
      const F = mod.LuaFactory ?? mod.default!.LuaFactory;
      return new F();
    });
  }
  return factoryPromise;
}

/** Imports wasmoon and compiles its WebAssembly now: mod_lua's post_config calls it, so that
 *  nothing of the build is read after the worker has become User (a build in a directory
 *  only root can read stays usable). */
export async function preloadLua(): Promise<void> {
  await (await luaFactory()).getLuaModule();
}

/** A script file's identity for LuaCodeCache stat. */
interface FileStamp { readonly mtimeMs: number; readonly size: number }

/** A script that could not be loaded: it did not compile ('compile', or could not be read), or
 *  its top-level chunk failed ('run'); the message is Lua's. */
export class LuaLoadError extends Error {
  constructor(message: string, readonly phase: 'compile' | 'run' = 'compile') {
    super(message);
  }
}

/** One Lua state. */
export class LuaVm {
  /** Calls running in this state (a coroutine waiting on a promise counts). */
  inUse = 0;
  closed = false;
  /** Files loaded into this state and the stamp they had. */
  private readonly loaded = new Map<string, FileStamp>();
  private constructor(readonly engine: LuaEngine) {}

  static async create(spec: VmSpec, bridge: LuaBridge): Promise<LuaVm> {
    const f = await luaFactory();
    const engine = await f.createEngine({ openStandardLibs: true, injectObjects: false, enableProxy: false });
    const g = engine.global;
    g.set('__p_get', (id: number, k: string) => bridge.get(id, k));
    g.set('__p_set', (id: number, k: string, v: unknown) => bridge.set(id, k, v));
    g.set('__p_call', (id: number, name: string, ...args: unknown[]) => bridge.call(id, name, args));
    g.set('__p_async', (id: number, name: string, ...args: unknown[]) => bridge.callAsync(id, name, args));
    g.set('__p_tget', (id: number, w: string, k: string) => bridge.tableGet(id, w, k));
    g.set('__p_tset', (id: number, w: string, k: string, v: unknown) => bridge.tableSet(id, w, k, v));
    g.set('__p_tpairs', (id: number, w: string) => bridge.tablePairs(id, w));
    g.set('__p_log', (id: number, level: number, src: string, line: number, msg: string) => bridge.log(id, level, src, line, msg));
    engine.doStringSync(LUA_PRELUDE);
    const vm = new LuaVm(engine);
    vm.setPaths(spec.packagePaths, spec.packageCPaths);
    return vm;
  }

  private setPaths(paths: readonly string[], cpaths: readonly string[]): void {
    // lua_vmprep.c's munge_path: the configured patterns before Lua's defaults.
    if (paths.length) this.engine.global.call('__plume_paths', 'path', paths.join(';'));
    if (cpaths.length) this.engine.global.call('__plume_paths', 'cpath', cpaths.join(';'));
  }

  /** Loads (or reloads) the script as LuaCodeCache wants: runs its top-level chunk. */
  async ensureFile(file: string, codecache: LuaCodeCache): Promise<void> {
    const had = this.loaded.get(file);
    if (had !== undefined && codecache === 'forever') return;
    let stamp: FileStamp;
    try {
      const st = await fs.promises.stat(file);
      stamp = { mtimeMs: st.mtimeMs, size: st.size };
    } catch (e) {
      throw new LuaLoadError(`cannot open ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'No such file or directory' : String((e as Error).message)}`);
    }
    if (had !== undefined && codecache === 'stat' && had.mtimeMs === stamp.mtimeMs && had.size === stamp.size) return;
    const source = await sourceOf(file, stamp, codecache);
    const th = this.engine.global.newThread();
    try {
      try {
        th.loadString(source, '@' + file);
      } catch (e) {
        throw new LuaLoadError(errText(e));
      }
      try {
        await th.run(0);
      } catch (e) {
        throw new LuaLoadError(errText(e), 'run');
      }
    } finally {
      closeThread(this, th);
    }
    this.loaded.set(file, stamp);
  }

  /** Calls the prelude's __plume_invoke(fname, id, ...args) on a new Lua thread, so the
   *  function may await promises; resolves to its first result. */
  async invoke(fname: string, id: number, args: readonly unknown[]): Promise<unknown> {
    const th = this.engine.global.newThread();
    this.inUse++;
    try {
      th.loadString('return __plume_invoke(...)', '=mod_lua');
      th.pushValue(fname);
      th.pushValue(id);
      for (const a of args) th.pushValue(a);
      const res = await th.run(2 + args.length);
      return res[0];
    } finally {
      this.inUse--;
      closeThread(this, th);
    }
  }

  /** Calls a prelude function synchronously (filters resume their coroutines this way). */
  callSync(name: string, ...args: unknown[]): unknown {
    return this.engine.global.call(name, ...args)[0];
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.engine.global.close();
  }
}

function closeThread(vm: LuaVm, th: ReturnType<LuaEngine['global']['newThread']>): void {
  if (vm.closed) return;
  // The thread is referenced from the main state's stack by newThread: drop it there.
  const g = vm.engine.global;
  const top = g.getTop();
  for (let i = top; i >= 1; i--) {
    if (g.lua.lua_tothread(g.address, i) === th.address) { g.remove(i); break; }
  }
}

/** Lua's error message as lua_tostring gives it: wasmoon appends a traceback, taken off. */
export function errText(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  const i = m.indexOf('\nstack traceback:');
  return i >= 0 ? m.slice(0, i) : m;
}

// ---- the code cache: source text per file version -------------------------------------------

const sources = new Map<string, { stamp: FileStamp; text: string }>();
const MAX_SOURCES = 256;

async function sourceOf(file: string, stamp: FileStamp, codecache: LuaCodeCache): Promise<string> {
  const c = sources.get(file);
  if (c !== undefined && codecache !== 'never' && (codecache === 'forever' || (c.stamp.mtimeMs === stamp.mtimeMs && c.stamp.size === stamp.size))) return c.text;
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch (e) {
    throw new LuaLoadError(`cannot open ${file}`);
  }
  if (codecache !== 'never') {
    if (sources.size >= MAX_SOURCES) sources.delete(sources.keys().next().value as string);
    sources.set(file, { stamp, text });
  }
  return text;
}

// ---- scopes ---------------------------------------------------------------------------------

/** Holders of states that outlive one call: a request, a connection, the process. */
export interface VmHolder { readonly vms: Map<string, LuaVm> }

/** LuaScope server: a bounded pool per script and paths. */
interface Pool { readonly idle: LuaVm[]; count: number; readonly waiters: ((vm: LuaVm | null) => void)[] }
const pools = new Map<string, Pool>();
/** LuaScope thread: one state per script in this process (a worker runs one thread). */
const threadVms: VmHolder = { vms: new Map() };

function specKey(spec: VmSpec): string {
  return `${spec.file}\0${spec.packagePaths.join(';')}\0${spec.packageCPaths.join(';')}`;
}

/** A state for one use, and how to give it back. */
export interface Lease { readonly vm: LuaVm; release(): void }

export async function acquireVm(spec: VmSpec, bridge: LuaBridge, request: VmHolder, conn: VmHolder): Promise<Lease> {
  if (spec.scope === 'once') {
    const vm = await LuaVm.create(spec, bridge);
    try {
      await vm.ensureFile(spec.file, spec.codecache);
    } catch (e) {
      vm.close();
      throw e;
    }
    return { vm, release: () => vm.close() };
  }
  if (spec.scope === 'server') return acquirePooled(spec, bridge);
  const holder = spec.scope === 'request' ? request : spec.scope === 'conn' ? conn : threadVms;
  const key = specKey(spec);
  let vm = holder.vms.get(key);
  if (vm === undefined || vm.closed) {
    vm = await LuaVm.create(spec, bridge);
    holder.vms.set(key, vm);
  }
  await vm.ensureFile(spec.file, spec.codecache);
  return { vm, release: () => undefined };
}

async function acquirePooled(spec: VmSpec, bridge: LuaBridge): Promise<Lease> {
  const key = specKey(spec);
  let pool = pools.get(key);
  if (pool === undefined) { pool = { idle: [], count: 0, waiters: [] }; pools.set(key, pool); }
  const p = pool;
  let vm = p.idle.pop();
  if (vm === undefined) {
    if (p.count < spec.vmMax) {
      p.count++;
      try {
        vm = await LuaVm.create(spec, bridge);
      } catch (e) {
        p.count--;
        throw e;
      }
    } else {
      // apr_reslist_acquire: wait for a state another request gives back.
      const got = await new Promise<LuaVm | null>((res) => p.waiters.push(res));
      if (got === null) return acquirePooled(spec, bridge);
      vm = got;
    }
  }
  const leased = vm;
  const release = (): void => {
    const w = p.waiters.shift();
    if (w !== undefined) w(leased);
    else p.idle.push(leased);
  };
  try {
    await leased.ensureFile(spec.file, spec.codecache);
  } catch (e) {
    release();
    throw e;
  }
  return { vm: leased, release };
}

/** Whether any state of a holder is running a call. */
export function holderBusy(h: VmHolder): boolean {
  for (const vm of h.vms.values()) if (vm.inUse > 0) return true;
  return false;
}

/** Closes the states a request or connection held. */
export function closeHolder(h: VmHolder): void {
  for (const vm of h.vms.values()) vm.close();
  h.vms.clear();
}

/** Closes every process-wide state (configuration cleanup). */
export function closeAllVms(): void {
  closeHolder(threadVms);
  for (const p of pools.values()) {
    for (const vm of p.idle) vm.close();
    for (const w of p.waiters) w(null);
  }
  pools.clear();
  sources.clear();
}
