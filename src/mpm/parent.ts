// The parent process (httpd's event MPM main loop, on Node's child_process.fork): it reads and
// checks the configuration, binds the Listen addresses, opens the error logs and the access
// logs (piped loggers included), writes the PidFile and keeps a fixed pool of worker
// processes serving. It never accepts a connection. Signals:
//   SIGTERM/SIGINT stop, SIGWINCH graceful stop (GracefulShutdownTimeout),
//   SIGHUP restart, SIGUSR1 graceful restart.
// A restart reads and checks the new configuration first; if it cannot be used, the error is
// logged with httpd's wording and the running generation keeps serving.
// Workers are forked with child_process.fork (what cluster.fork uses underneath) rather than
// cluster: cluster's primary would schedule connections itself, and its workers' listen()
// goes through the primary; here each worker listens on its own copy of the parent's sockets.

import * as fs from 'node:fs';
import { fork, type ChildProcess } from 'node:child_process';
import { resumeOptimisingCompiler } from '../engine/compiler.js';
import { workerExecArgv } from '../engine/flags.js';
import type { ConfigContext, ConfigOptions } from '../server/config/context.js';
import { loadConfiguration, postConfigure, cleanupConfiguration, type ModuleCatalogue } from '../server/config/build.js';
import { ConfigError, StartupError } from '../server/config/errors.js';
import { openErrorLogs, closeErrorLogs, writePidFile } from '../server/main-server.js';
import { beginLogGeneration, sharedLogDescriptors, FileSink, SharedPipeSink, type LogSink } from '../server/log/log-writer.js';
import { APLOG_DEBUG, APLOG_EMERG, APLOG_ERR, APLOG_INFO, APLOG_NOTICE, APLOG_WARNING, DEFAULT_LOG_LEVEL, levelFor } from '../server/log/levels.js';
import { ParentListeners } from './listeners.js';
import { processModel, mpmMessages, type ProcessModel, type MpmMessages } from './process-model.js';
import { ENV_WORKER, ENV_LOG_FDS, type ToParent, type ToWorker } from './worker.js';
import { openParentScoreboard } from './scoreboard-seam.js';
import type { ParentScoreboard } from './scoreboard.js';
import { ConfigSnapshot, type SnapshotEntries } from './config-snapshot.js';

/** Where a worker is in its life (the scoreboard's process states). */
type ChildState = 'starting' | 'ready' | 'graceful';

interface Child {
  readonly slot: number;
  readonly pid: number;
  readonly generation: number;
  readonly proc: ChildProcess;
  readonly startedAt: number;
  /** The configuration text of its generation. */
  readonly config: SnapshotEntries;
  state: ChildState;
  /** Told to go (graceful or not): its exit is expected. */
  leaving: boolean;
}

/** The first descriptor a worker finds its inherited log targets on (0-2 stdio, 3 IPC). */
const FIRST_LOG_FD = 4;

/** Signals httpd reports for a child that died of them (ap_process_child_status). */
const CORE_SIGNALS: Record<string, [number, string]> = {
  SIGSEGV: [11, 'Segmentation fault'],
  SIGBUS: [7, 'Bus error'],
  SIGABRT: [6, 'Aborted'],
  SIGILL: [4, 'Illegal instruction'],
  SIGFPE: [8, 'Floating point exception'],
};

export interface ParentStart {
  /** The configuration that serves (read the second time; its logs open, post_config run). */
  readonly ctx: ConfigContext;
  /** The files it was read from. */
  readonly snapshot: ConfigSnapshot;
  /** The options to read it again with on a restart (startupSink replaced by the error log). */
  readonly options: ConfigOptions;
  readonly catalogue: ModuleCatalogue;
  /** The listening sockets, bound already. */
  readonly listeners: ParentListeners;
  /** The command line as given, for AH00094. */
  readonly argv: readonly string[];
  /** Called once serving (a -k start launcher waits for this). */
  readonly onStarted?: () => void;
}

export class Parent {
  private ctx: ConfigContext;
  private model: ProcessModel;
  private msgs: MpmMessages;
  private generation = 0;
  private readonly children = new Map<number, Child>();
  private readonly slots: (Child | undefined)[];
  private logFds: { key: string; fd: number }[] = [];
  private stderrFd: number | undefined;
  private pidFile: string | undefined;
  private scoreboard: ParentScoreboard | undefined;
  private shutdown: 'graceful' | 'now' | undefined;
  private restarting: Promise<void> | undefined;
  private pendingRestart: boolean | undefined;
  /** Workers that died before serving, one after the other: the next start waits longer. */
  private failures = 0;
  private announcedStarted = false;
  private maintainTimer: NodeJS.Timeout | null = null;
  /** The previous generation's workers, told to go once the new one serves. */
  private retireWhenReady: Child[] = [];
  private retireTimer: NodeJS.Timeout | null = null;
  private resolveExit: ((code: number) => void) | undefined;
  private snapshot: SnapshotEntries;
  /** No workers are started (a restart waits for the old ones to go). */
  private holding = false;

  constructor(private readonly start: ParentStart) {
    this.ctx = start.ctx;
    this.snapshot = start.snapshot.entries();
    this.model = processModel(this.ctx);
    this.msgs = mpmMessages(this.model.mpm);
    this.slots = new Array<Child | undefined>(this.model.serverLimit).fill(undefined);
  }

  /** Starts the workers of the configuration given (its logs open, post_config run, its
   *  sockets bound); resolves with the exit status once stopped. */
  async run(): Promise<number> {
    this.captureGeneration(this.ctx);
    this.pidFile = writePidFile(this.ctx);
    this.scoreboard = openParentScoreboard(this.ctx, { serverLimit: this.model.serverLimit, slotsPerChild: this.model.share });
    const done = new Promise<number>((resolve) => { this.resolveExit = resolve; });
    process.on('SIGTERM', () => this.stop('now'));
    process.on('SIGINT', () => this.stop('now'));
    process.on('SIGWINCH', () => this.stop('graceful'));
    process.on('SIGHUP', () => this.restart(false));
    process.on('SIGUSR1', () => this.restart(true));
    this.maintain();
    this.announce();
    resumeOptimisingCompiler();
    return done;
  }

  // ---- logging -----------------------------------------------------------------------------

  /** The parent's own messages: notices always (as httpd logs them), others per LogLevel. */
  private log(module: string, level: number, message: string, source?: string): void {
    const s = this.ctx.mainServer;
    if (level !== APLOG_NOTICE && level > levelFor(s.logLevel ?? DEFAULT_LOG_LEVEL, module)) return;
    s.errorLog.write({ module, level, message, source });
  }

  private flushErrorLogs(ctx: ConfigContext): void {
    for (const sink of ctx.getScratch<LogSink[]>('core:errorLogSinks', () => [])) sink.flush();
  }

  /** AH00489, AH00490 and AH00094: the generation is configured. */
  private announce(): void {
    this.log(this.model.mpm, APLOG_NOTICE, this.msgs.resuming);
    this.log(this.model.mpm, APLOG_INFO, this.msgs.built);
    this.log('core', APLOG_NOTICE, `AH00094: Command line: '${[process.argv[1] ?? 'plume', ...this.start.argv].join(' ')}'`);
    this.flushErrorLogs(this.ctx);
  }

  /** httpd's debug lines about its children (event.c; measured with LogLevel debug). */
  private childLine(what: 'started' | 'stopped' | 'quiescing', c: Child): void {
    if (this.model.mpm !== 'mpm_event') return;
    const current = [...this.children.values()].filter((x) => x.generation === this.generation && !x.leaving).length;
    const total = this.children.size;
    const used = this.slots.reduce((n, s, i) => (s ? i + 1 : n), 0);
    const source = what === 'started' ? 'event.c(751)' : what === 'stopped' ? 'event.c(726)' : 'event.c(2937)';
    let text = `Child ${c.slot} ${what}: pid ${c.pid}, gen ${c.generation}, active ${current}/${this.model.serverLimit}, total ${total}/${Math.max(used, total)}/${this.model.serverLimit}`;
    if (what === 'stopped') text += `, quiescing ${[...this.children.values()].filter((x) => x.leaving).length}`;
    this.log('mpm_event', APLOG_DEBUG, text, source);
  }

  // ---- generations --------------------------------------------------------------------------

  /** The descriptors workers of this generation inherit: every log target opened since
   *  beginLogGeneration(), and the main error log as their stderr (httpd's children write
   *  their stderr to the error log too). */
  private captureGeneration(ctx: ConfigContext): void {
    this.logFds = sharedLogDescriptors();
    const main = ctx.mainServer.errorLog.sink;
    this.stderrFd = main instanceof FileSink || main instanceof SharedPipeSink ? main.descriptor : undefined;
  }

  /** Keeps model.workers workers of the current generation serving. */
  private maintain(): void {
    if (this.shutdown !== undefined || this.maintainTimer !== null || this.holding) return;
    let serving = 0;
    for (const c of this.children.values()) if (c.generation === this.generation && !c.leaving && c.state !== 'graceful') serving++;
    while (serving < this.model.workers) {
      if (this.failures > 0) {
        // Workers die before serving: wait, longer each time (at most 10 s).
        const delay = Math.min(10000, 100 * 2 ** Math.min(this.failures, 7));
        this.maintainTimer = setTimeout(() => { this.maintainTimer = null; this.spawnOne(); this.maintain(); }, delay);
        return;
      }
      if (!this.spawnOne()) return;
      serving++;
    }
  }

  /** Starts one worker in the lowest free slot; false when ServerLimit slots are all taken. */
  private spawnOne(): boolean {
    const slot = this.slots.indexOf(undefined);
    if (slot < 0) return false;
    const fdMap: Record<string, number> = {};
    const stdio: (number | 'ignore' | 'inherit' | 'ipc')[] = ['ignore', 'ignore', this.stderrFd ?? 'inherit', 'ipc'];
    this.logFds.forEach((f, i) => { fdMap[f.key] = FIRST_LOG_FD + i; stdio.push(f.fd); });
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env['PLUME_DAEMON'];
    env[ENV_WORKER] = '1';
    env[ENV_LOG_FDS] = JSON.stringify(fdMap);
    env['PLUME_CHILD_SLOT'] = String(slot);
    env['PLUME_GENERATION'] = String(this.generation);
    if (this.scoreboard) env['PLUME_SCOREBOARD'] = this.scoreboard.path;
    const proc = fork(process.argv[1]!, [...this.start.argv], { stdio, env, execArgv: workerExecArgv(process.execArgv, process.env['NODE_OPTIONS'] ?? '', this.model.workers) });
    const pid = proc.pid;
    if (pid === undefined) return false;
    const child: Child = { slot, pid, generation: this.generation, proc, startedAt: Date.now(), config: this.snapshot, state: 'starting', leaving: false };
    this.children.set(pid, child);
    this.slots[slot] = child;
    this.scoreboard?.setChild(slot, { pid, generation: child.generation, state: 'starting' });
    proc.on('message', (m: ToParent) => this.onMessage(child, m));
    proc.on('error', () => { /* the exit handler cleans up */ });
    proc.on('exit', (code, signal) => this.onExit(child, code, signal));
    this.childLine('started', child);
    return true;
  }

  private send(c: Child, msg: ToWorker): void {
    if (c.proc.connected) c.proc.send(msg, undefined, undefined, () => { /* gone */ });
  }

  private onMessage(c: Child, m: ToParent): void {
    switch (m.t) {
      case 'config':
        this.send(c, { t: 'config', files: c.config });
        break;
      case 'handles':
        if (this.shutdown !== undefined) return;
        this.send(c, { t: 'listeners', count: this.start.listeners.handles.length });
        this.start.listeners.sendTo(c.proc);
        break;
      case 'ready':
        if (c.state === 'starting') c.state = 'ready';
        this.failures = 0;
        // The first worker accepts: the server serves (a detached start's command returns).
        if (!this.announcedStarted) { this.announcedStarted = true; this.start.onStarted?.(); }
        this.scoreboard?.setChild(c.slot, { pid: c.pid, generation: c.generation, state: 'ready' });
        this.retireOldIfReady();
        break;
      case 'retiring':
        // MaxConnectionsPerChild: the worker finishes its connections; its replacement starts now.
        c.state = 'graceful';
        this.scoreboard?.setChild(c.slot, { pid: c.pid, generation: c.generation, state: 'graceful' });
        this.childLine('quiescing', c);
        this.maintain();
        break;
    }
  }

  private onExit(c: Child, code: number | null, signal: NodeJS.Signals | null): void {
    this.children.delete(c.pid);
    if (this.slots[c.slot] === c) this.slots[c.slot] = undefined;
    this.scoreboard?.setChild(c.slot, { pid: 0, generation: c.generation, state: 'dead' });
    const core = signal !== null ? CORE_SIGNALS[signal] : undefined;
    if (core !== undefined) this.log('core', APLOG_NOTICE, `AH00052: child pid ${c.pid} exit signal ${core[1]} (${core[0]})`);
    this.childLine('stopped', c);
    this.retireWhenReady = this.retireWhenReady.filter((x) => x !== c);
    // A worker that died before serving (it wrote why to the error log, its stderr): the
    // next one waits (see maintain()). DIFFERENCE: httpd exits on a child's APEXIT_CHILDFATAL.
    if (!c.leaving && c.state === 'starting') this.failures++;
    if (this.shutdown !== undefined) {
      if (this.children.size === 0) void this.exit();
      return;
    }
    this.retireOldIfReady();
    this.maintain();
  }

  // ---- restarts -----------------------------------------------------------------------------

  private restart(graceful: boolean): void {
    if (this.shutdown !== undefined) return;
    if (this.restarting) {
      // One more restart after this one: a graceful one, unless either asked for a hard one.
      this.pendingRestart = graceful && this.pendingRestart !== false;
      return;
    }
    this.restarting = this.doRestart(graceful).finally(() => {
      this.restarting = undefined;
      const again = this.pendingRestart;
      this.pendingRestart = undefined;
      if (again !== undefined) this.restart(again);
    });
  }

  private async doRestart(graceful: boolean): Promise<void> {
    this.log(this.model.mpm, APLOG_NOTICE, graceful ? this.msgs.sigusr1 : this.msgs.sighup);
    this.flushErrorLogs(this.ctx);
    const old = this.ctx;
    const oldSink = old.mainServer.errorLog.sink;
    let next: ConfigContext | undefined;
    let listening: { commit(): void; rollback(): void } | undefined;
    const snapshot = new ConfigSnapshot();
    try {
      next = await loadConfiguration({ ...this.start.options, startupSink: oldSink, includeLog: [], readConfigFile: snapshot.record }, this.start.catalogue);
      listening = this.start.listeners.prepare(next);
      beginLogGeneration();
      openErrorLogs(next);
      const failed = await postConfigure(next);
      if (failed !== undefined) throw new StartupError(failed);
    } catch (e) {
      listening?.rollback();
      this.reportRestartFailure(e, next, oldSink);
      if (next !== undefined) {
        try { await cleanupConfiguration(next); } catch { /* best effort */ }
        closeErrorLogs(next);
      }
      // this.logFds still holds the running generation's descriptors.
      return;
    }
    listening.commit();
    this.captureGeneration(next);
    this.snapshot = snapshot.entries();
    const previous = [...this.children.values()].filter((c) => c.generation === this.generation);
    if (!graceful) {
      // httpd's restart: the old workers are stopped (their connections dropped) first.
      this.holding = true;
      for (const c of previous) { c.leaving = true; c.proc.kill('SIGTERM'); }
      await this.reclaim(previous);
      this.holding = false;
    }
    this.generation++;
    this.scoreboard?.newGeneration(graceful ? 'graceful' : 'restart');
    this.ctx = next;
    // httpd writes the PidFile again in each generation: one removed meanwhile (or moved by a
    // new PidFile line) is there again for `-k graceful`, apachectl and init scripts.
    this.pidFile = writePidFile(next);
    this.model = processModel(next);
    this.msgs = mpmMessages(this.model.mpm);
    if (this.model.serverLimit !== this.slots.length && this.model.mpm === 'mpm_event') {
      // The slots (and the scoreboard) keep the size they started with.
      this.log('mpm_event', APLOG_WARNING, `AH00501: changing ServerLimit to ${this.model.serverLimit} from original value of ${this.slots.length} not allowed during restart`);
    }
    if (graceful) {
      // The old workers finish what they serve once the new ones accept (at once when the
      // new ones need their slots). DIFFERENCE: httpd stops the old children first.
      for (const c of previous) c.leaving = true;
      this.retireWhenReady.push(...previous);
      const free = this.slots.filter((x) => x === undefined).length;
      if (free < this.model.workers) this.retireOld(true);
      else this.retireTimer ??= setTimeout(() => { this.retireTimer = null; this.retireOldIfReady(true); }, 5000);
    }
    try { await cleanupConfiguration(old); } catch { /* the old generation's own business */ }
    closeErrorLogs(old);
    this.maintain();
    this.announce();
    this.retireOldIfReady();
  }

  /** httpd writes a failed restart's reason bare to its stderr, which is the error log by then.
   *  DIFFERENCE: httpd then exits; plume's running generation keeps serving. */
  private reportRestartFailure(e: unknown, next: ConfigContext | undefined, sink: LogSink): void {
    let text: string;
    if (e instanceof ConfigError) text = e.format(this.start.options.argv0);
    else if (e instanceof StartupError) text = e.text;
    else text = String(e instanceof Error ? e.stack ?? e.message : e);
    // post_config refused: httpd says so at emerg, from no module.
    if (/^AH00016: Configuration Failed$/m.test(text)) {
      const target = next?.mainServer.errorLog ?? this.ctx.mainServer.errorLog;
      target.write({ module: '', level: APLOG_EMERG, message: 'AH00020: Configuration Failed, exiting' });
      target.sink.flush();
      return;
    }
    if (text !== '') sink.write(text.endsWith('\n') ? text : text + '\n');
    sink.flush();
  }

  /** The old generation goes once every new worker accepts (or, after 5 s, once one does:
   *  while none of the new ones serves, the old ones keep serving). */
  private retireOldIfReady(late = false): void {
    if (this.retireWhenReady.length === 0) return;
    const fresh = [...this.children.values()].filter((c) => c.generation === this.generation && !c.leaving);
    const ready = fresh.filter((c) => c.state !== 'starting').length;
    if (ready >= this.model.workers || (late && ready > 0)) this.retireOld(true);
    else if (late) this.retireTimer = setTimeout(() => { this.retireTimer = null; this.retireOldIfReady(true); }, 5000);
  }

  private retireOld(graceful: boolean): void {
    if (this.retireTimer !== null) { clearTimeout(this.retireTimer); this.retireTimer = null; }
    for (const c of this.retireWhenReady.splice(0)) {
      c.state = 'graceful';
      this.scoreboard?.setChild(c.slot, { pid: c.pid, generation: c.generation, state: 'graceful' });
      if (graceful) this.send(c, { t: 'graceful' });
      else c.proc.kill('SIGTERM');
    }
  }

  /** ap_reclaim_child_processes: waits for workers told to stop; after 3 s they are killed. */
  private async reclaim(children: readonly Child[]): Promise<void> {
    const gone = (c: Child): Promise<void> => new Promise((resolve) => {
      if (c.proc.exitCode !== null || c.proc.signalCode !== null) resolve();
      else c.proc.once('exit', () => resolve());
    });
    const all = Promise.all(children.map(gone));
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([all.then(() => false), new Promise<boolean>((r) => { timer = setTimeout(() => r(true), 3000); })]);
    clearTimeout(timer);
    if (!late) return;
    for (const c of children) {
      if (c.proc.exitCode !== null || c.proc.signalCode !== null) continue;
      this.log('core', APLOG_ERR, `AH00045: child process ${c.pid} still did not exit, sending a SIGKILL`);
      c.proc.kill('SIGKILL');
    }
    await all;
  }

  // ---- stopping -----------------------------------------------------------------------------

  private stop(how: 'graceful' | 'now'): void {
    if (this.shutdown === 'now' || (this.shutdown === 'graceful' && how === 'graceful')) return;
    const first = this.shutdown === undefined;
    // SIGTERM itself, not GracefulShutdownTimeout running out, is logged as such at exit.
    if (first && how === 'now') this.caughtSigterm = true;
    this.shutdown = how;
    if (this.maintainTimer !== null) { clearTimeout(this.maintainTimer); this.maintainTimer = null; }
    if (this.retireTimer !== null) { clearTimeout(this.retireTimer); this.retireTimer = null; }
    this.retireWhenReady = [];
    if (how === 'graceful') {
      // httpd removes the PidFile and says so first, then waits for its children.
      this.removePidFile();
      this.log(this.model.mpm, APLOG_NOTICE, this.msgs.sigwinch);
      this.flushErrorLogs(this.ctx);
      this.start.listeners.close();
      for (const c of this.children.values()) { c.leaving = true; this.send(c, { t: 'graceful' }); }
      const t = this.model.gracefulShutdownTimeout;
      if (t > 0) setTimeout(() => this.stop('now'), t * 1000).unref();
    } else {
      for (const c of this.children.values()) { c.leaving = true; c.proc.kill('SIGTERM'); }
      // ap_reclaim_child_processes: a child still there after a few seconds is killed.
      setTimeout(() => {
        for (const c of this.children.values()) {
          this.log('core', APLOG_ERR, `AH00045: child process ${c.pid} still did not exit, sending a SIGKILL`);
          c.proc.kill('SIGKILL');
        }
      }, 3000).unref();
    }
    if (this.children.size === 0) void this.exit();
  }

  private removePidFile(): void {
    if (this.pidFile === undefined) return;
    try {
      fs.unlinkSync(this.pidFile);
      this.log('core', APLOG_INFO, `AH00096: removed PID file ${this.pidFile} (pid=${process.pid})`);
    } catch { /* gone already */ }
    this.pidFile = undefined;
  }

  private exiting = false;
  private caughtSigterm = false;
  private async exit(): Promise<void> {
    if (this.exiting) return;
    this.exiting = true;
    if (this.caughtSigterm) {
      this.removePidFile();
      this.log(this.model.mpm, APLOG_NOTICE, this.msgs.sigterm);
    }
    this.start.listeners.close();
    this.scoreboard?.close();
    try { await cleanupConfiguration(this.ctx); } catch { /* closing anyway */ }
    closeErrorLogs(this.ctx);
    this.resolveExit?.(0);
  }
}

