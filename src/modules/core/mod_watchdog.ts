// mod_watchdog (built in): the periodic tasks of other modules (httpd's
// modules/core/mod_watchdog.c). Modules get a named watchdog and register callbacks with
// their intervals, or take part in the hook-mode watchdogs "_singleton_" and "_default_"
// that step at WatchdogInterval (src/server/watchdog.ts). Every watchdog ticks each
// AP_WD_TM_SLICE (100 ms) in the serving processes, from child_init to the end of the
// configuration generation.
//
// A singleton watchdog runs in one worker process at a time, as httpd's runs in the child
// that holds its mutex: the workers of a parent share a lock file in DefaultRuntimeDir
// (watchdog.<parent pid>.lck, opened in post_config before privileges are dropped) that names
// the holder's pid; a worker takes it when it is free or its holder is gone, and checks a tick
// later that it kept it. With -X the one process runs them.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import { globals } from '../../server/core/globals.js';
import { APLOG_DEBUG, levelFor } from '../../server/log/levels.js';
import {
  WD_TM_SLICE, WATCHDOG_SINGLETON,
  type Watchdog, type WatchdogCallback, type WatchdogHooks, type WatchdogProvider, type WatchdogState,
} from '../../server/watchdog.js';

export interface WatchdogConfig { intervalMs: number }
type Cmd = CmdParms<WatchdogConfig, undefined>;

function interval(cmd: Cmd, arg: string): string | undefined {
  const n = Number(arg);
  if (!/^\d+$/.test(arg) || n < 1) return 'Invalid WatchdogInterval value';
  cmd.srv.intervalMs = n * 1000;
  return undefined;
}

// ---- watchdogs --------------------------------------------------------------------------------

interface Entry {
  readonly data: object;
  readonly cb: WatchdogCallback;
  interval: number;
  step: number;
  /** httpd's wl->status: false once the callback is stopped. */
  ok: boolean;
  busy: boolean;
}

class Instance implements Watchdog {
  readonly callbacks: Entry[] = [];
  readonly hooks: WatchdogHooks[] = [];
  timer: NodeJS.Timeout | null = null;
  running = false;
  /** Hook mode: time since the last step. */
  step = 0;
  stepping = false;
  last = 0;
  constructor(readonly name: string, readonly singleton: boolean, readonly ctx: ConfigContext) {}
}

interface GenState {
  readonly instances: Map<string, Instance>;
  /** The singleton lock file (workers only). */
  lock: { fd: number; held: boolean; probed: boolean } | undefined;
  /** The parent's lock file, removed with its generation. */
  parentLock: { file: string; ino: number } | undefined;
  lockTimer: NodeJS.Timeout | null;
  stopped: boolean;
}

function state(ctx: ConfigContext): GenState {
  return ctx.getScratch<GenState>('watchdog:state', () => ({ instances: new Map(), lock: undefined, parentLock: undefined, lockTimer: null, stopped: false }));
}

function debug(ctx: ConfigContext, message: string): void {
  const s = ctx.mainServer;
  if (APLOG_DEBUG <= levelFor(s.logLevel, 'watchdog')) s.errorLog.write({ module: 'watchdog', level: APLOG_DEBUG, message });
}

function call(e: Entry, st: WatchdogState): void {
  let r: void | Promise<void>;
  try {
    r = e.cb(st);
  } catch {
    e.ok = false;
    return;
  }
  if (r instanceof Promise) {
    e.busy = true;
    r.then(() => { e.busy = false; }, () => { e.busy = false; e.ok = false; });
  }
}

function tick(w: Instance): void {
  const now = Date.now();
  const elapsed = now - w.last;
  w.last = now;
  for (const e of w.callbacks) {
    if (!e.ok || e.busy) continue;
    e.step += elapsed;
    if (e.step >= e.interval) {
      e.step = 0;
      call(e, 'running');
    }
  }
  if (w.callbacks.length === 0 && w.hooks.length > 0 && !w.stepping) {
    w.step += elapsed;
    if (w.step >= conf(w.ctx).intervalMs) {
      w.step = 0;
      const pending: Promise<void>[] = [];
      for (const h of w.hooks) {
        try {
          const r = h.step();
          if (r instanceof Promise) pending.push(r.catch(() => undefined));
        } catch { /* the next step runs anyway */ }
      }
      if (pending.length > 0) {
        w.stepping = true;
        void Promise.all(pending).then(() => { w.stepping = false; });
      }
    }
  }
}

function startInstance(w: Instance): void {
  if (w.running) return;
  w.running = true;
  debug(w.ctx, `AH02972: ${w.singleton ? 'Singleton ' : ''}Watchdog (${w.name}) running`);
  for (const e of w.callbacks) call(e, 'starting');
  for (const h of w.hooks) h.init?.();
  w.last = Date.now();
  w.timer = setInterval(() => tick(w), WD_TM_SLICE);
  w.timer.unref();
}

function stopInstance(w: Instance): void {
  if (!w.running) return;
  w.running = false;
  if (w.timer !== null) clearInterval(w.timer);
  w.timer = null;
  for (const e of w.callbacks) {
    if (!e.ok) continue;
    e.ok = false;
    try { void e.cb('stopping'); } catch { /* stopping anyway */ }
  }
  for (const h of w.hooks) h.exit?.();
  debug(w.ctx, `AH02973: ${w.singleton ? 'Singleton ' : ''}Watchdog (${w.name}) stopping`);
}

function conf(ctx: ConfigContext): WatchdogConfig {
  return mod.server(ctx.mainServer);
}

// ---- the singleton lock -------------------------------------------------------------------------

function lockFile(ctx: ConfigContext, parentPid: number): string {
  return path.join(globals(ctx).runtimeDir ?? ctx.serverRootRelative('logs'), `watchdog.${parentPid}.lck`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(fd: number): number {
  const b = Buffer.alloc(4);
  return fs.readSync(fd, b, 0, 4, 0) === 4 ? b.readInt32LE(0) : 0;
}

function writeHolder(fd: number, pid: number): void {
  const b = Buffer.alloc(4);
  b.writeInt32LE(pid, 0);
  fs.writeSync(fd, b, 0, 4, 0);
}

/** One probe of the lock: take it when free, confirm it a tick later; start the singletons
 *  once held (after a second when another holder was seen, as httpd lets a dying one finish). */
function probeLock(ctx: ConfigContext, g: GenState): void {
  const l = g.lock;
  if (l === undefined || g.stopped) return;
  let holder: number;
  try { holder = readHolder(l.fd); } catch { return; }
  if (holder === process.pid) {
    if (!l.held) {
      l.held = true;
      if (g.lockTimer !== null) clearInterval(g.lockTimer);
      g.lockTimer = null;
      const go = (): void => {
        if (g.stopped) return;
        for (const w of g.instances.values()) if (w.singleton) startInstance(w);
      };
      if (l.probed) setTimeout(go, 1000).unref(); else go();
    }
    return;
  }
  if (holder !== 0 && alive(holder)) { l.probed = true; return; }
  try { writeHolder(l.fd, process.pid); } catch { /* next tick */ }
}

// ---- the provider -------------------------------------------------------------------------------

const provider: WatchdogProvider = {
  getInstance(ctx, name, parent, singleton) {
    if (parent) return 'enotimpl';
    const g = state(ctx);
    let w = g.instances.get(name);
    if (w === undefined) {
      w = new Instance(name, singleton, ctx);
      g.instances.set(name, w);
      // The parent's lines of httpd's wd_post_config_hook (the workers' come from child_init).
      if (!ctx.child) {
        debug(ctx, `AH02978: Watchdog: Looking for child (${name}).`);
        if (singleton) debug(ctx, `AH02979: Watchdog: Created singleton mutex (${name}).`);
      }
    }
    return w;
  },
  registerCallback(w, intervalMs, data, cb) {
    const inst = w as Instance;
    if (inst.callbacks.some((e) => e.data === data && e.cb === cb)) return 'eexist';
    const e: Entry = { data, cb, interval: intervalMs, step: 0, ok: true, busy: false };
    inst.callbacks.push(e);
    if (inst.running) call(e, 'starting');
    return 'success';
  },
  setCallbackInterval(w, intervalMs, data, cb) {
    const e = (w as Instance).callbacks.find((x) => x.data === data && x.cb === cb);
    if (e === undefined) return 'eof';
    e.interval = intervalMs;
    e.step = 0;
    e.ok = true;
    return 'success';
  },
  needHooks(ctx, name, hooks) {
    const w = provider.getInstance(ctx, name, false, name === WATCHDOG_SINGLETON) as Instance;
    w.hooks.push(hooks);
  },
};

function postConfig(ctx: ConfigContext): void {
  if (ctx.preflight) return;
  const g = state(ctx);
  if (ctx.child) {
    // Opened now, before the worker becomes User: the file is the parent's.
    try {
      g.lock = { fd: fs.openSync(lockFile(ctx, process.ppid), fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600), held: false, probed: false };
    } catch {
      g.lock = undefined;
    }
    return;
  }
  // The parent (or -X): a fresh lock file for this generation's workers.
  const file = lockFile(ctx, process.pid);
  try {
    // A new file (not the previous generation's, which its workers still hold).
    fs.rmSync(file, { force: true });
    fs.writeFileSync(file, Buffer.alloc(4), { mode: 0o600 });
    g.parentLock = { file, ino: fs.statSync(file).ino };
  } catch {
    g.parentLock = undefined;
  }
}

function childInit(ctx: ConfigContext): void {
  const g = state(ctx);
  for (const w of g.instances.values()) debug(ctx, `AH02981: Watchdog: Created child worker thread (${w.name}).`);
  for (const w of g.instances.values()) if (!w.singleton) startInstance(w);
  const singletons = [...g.instances.values()].some((w) => w.singleton);
  if (!singletons) return;
  if (!ctx.child) {
    for (const w of g.instances.values()) if (w.singleton) startInstance(w);
    return;
  }
  if (g.lock === undefined) return;
  probeLock(ctx, g);
  g.lockTimer = setInterval(() => probeLock(ctx, g), WD_TM_SLICE);
  g.lockTimer.unref();
}

function cleanup(ctx: ConfigContext): void {
  const g = state(ctx);
  g.stopped = true;
  if (g.lockTimer !== null) clearInterval(g.lockTimer);
  g.lockTimer = null;
  for (const w of g.instances.values()) stopInstance(w);
  if (g.lock !== undefined) {
    try {
      if (g.lock.held && readHolder(g.lock.fd) === process.pid) writeHolder(g.lock.fd, 0);
      fs.closeSync(g.lock.fd);
    } catch { /* gone */ }
    g.lock = undefined;
  }
  const pl = g.parentLock;
  if (pl !== undefined) {
    try { if (fs.statSync(pl.file).ino === pl.ino) fs.unlinkSync(pl.file); } catch { /* gone */ }
    g.parentLock = undefined;
  }
}

const mod = defineModule<WatchdogConfig, undefined>({
  name: 'watchdog_module',
  source: 'mod_watchdog.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ intervalMs: 1000 }),
  directives: [
    directive({ name: 'WatchdogInterval', args: 'TAKE1', where: RSRC_CONF, help: 'Watchdog interval in seconds', handler: interval }),
  ],
  providers: [{ group: 'watchdog', name: 'mod_watchdog', version: '0', provider }],
  configHooks: { postConfig, childInit, cleanup },
});
export default mod;
