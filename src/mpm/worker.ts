// A worker process (httpd's child_main): reads the configuration the parent has checked, writes
// its logs through the parent's descriptors, drops root privileges, runs the child_init hooks,
// and serves the connections it accepts on the parent's listening sockets — at most its share
// of MaxRequestWorkers at once — until MaxConnectionsPerChild or a restart retires it. Nothing
// on the request path talks to the parent: the IPC channel carries only listening sockets and
// state changes (ready, retiring).

import * as net from 'node:net';
import type { ConfigContext, ConfigOptions } from '../server/config/context.js';
import { loadConfiguration, postConfigure, cleanupConfiguration, type ModuleCatalogue } from '../server/config/build.js';
import { ConfigError, StartupError } from '../server/config/errors.js';
import { Runtime } from '../server/runtime.js';
import { HttpConnection } from '../server/http/connection.js';
import { ErrorLog } from '../server/log/error-log.js';
import { inheritLogDescriptors, type LogSink } from '../server/log/log-writer.js';
import { openErrorLogs } from '../server/main-server.js';
import { dropPrivileges } from '../modules/arch/unix/mod_unixd.js';
import { processModel, type ProcessModel } from './process-model.js';
import { ConfigSnapshot, type SnapshotEntries } from './config-snapshot.js';
import { scoreboard, WorkerLoad } from './scoreboard.js';
import { holdYoungGeneration, startIdleGc } from '../engine/idle-gc.js';
import { readCount } from '../server/request/stat-cache.js';
import { acceptSharedReads } from '../server/http/accept.js';
import { acceptThroughLayers, layersHandshake, layersWantSocket } from '../server/http/connection-layer.js';
import type { ConnRec } from '../server/request/request.js';
import type { Transport } from '../server/http/tcp-stream.js';
import { Roster, RosterEntry } from '../lib/roster.js';

/** The environment the parent gives a worker (see parent.ts). */
export const ENV_WORKER = 'PLUME_MPM_WORKER';
export const ENV_LOG_FDS = 'PLUME_LOG_FDS';

/** Exit status of a worker that could not start (httpd's APEXIT_CHILDFATAL). */
export const EXIT_CHILDFATAL = 0xf;

/** Messages between the parent and a worker. */
export type ToWorker =
  | { t: 'config'; files: SnapshotEntries }
  | { t: 'listeners'; count: number }
  | { t: 'listener'; key: string }
  | { t: 'graceful' }
  | { t: 'stop' };
export type ToParent =
  | { t: 'config' }
  | { t: 'handles' }
  | { t: 'ready' }
  | { t: 'retiring' };

export function isWorkerProcess(): boolean {
  return process.env[ENV_WORKER] === '1' && typeof process.send === 'function';
}

function tell(msg: ToParent): void {
  if (process.connected) process.send!(msg, undefined, undefined, () => { /* the parent went away */ });
}

/** Startup messages of the worker's configuration read are the parent's to log (it has). */
class QuietSink implements LogSink {
  readonly description = 'worker startup';
  write(): void {}
  flush(): void {}
  close(): void {}
}

/**
 * How many copies of each listening socket a worker listens on at once. Node's libuv takes one
 * connection per readiness of a listening handle and then serves every other ready socket of
 * the turn before it looks again: under load one handle accepts about one connection per
 * event-loop turn, so a burst of 500 new connections took hundreds of turns (seconds) to reach
 * a busy worker, and a flood of one-request connections left each turn with about one request.
 * Each copy (a descriptor of the same socket, from the parent) accepts one more per turn.
 * A port whose connections begin with a TLS handshake is listened on once (oneCopy).
 */
const LISTEN_COPIES = 16;

/**
 * Keeping the workers' shares of the connections even. A burst of new connections (a client
 * opening its keep-alive connections at once) wakes every worker, and the one that gets a CPU
 * first could take them all, one per listening copy and loop turn, before another ran: with
 * two workers splits of 50/0 and 49/1 were measured, one worker then serving the whole load
 * for the connections' lifetime while the other idled. A worker with at least BALANCE_MIN
 * connections that holds more than its fair part of all the workers' connections, plus half
 * of that (at least BALANCE_MIN), stops accepting while another worker accepts (at most once
 * every BALANCE_EVERY_MS), and starts again once it is no more than BALANCE_RESUME above its
 * fair part, looking every BALANCE_POLL_MS: in a burst the others take the queue's next
 * connections until they have caught up, and then every worker takes the rest. (Starting again
 * as soon as it was back within the margin, a worker stopped at 17 of 50 started again when
 * another had 2, or after the others had taken the whole queue: splits of 17/33 in most
 * starts, 48/2 in some.) The workers' counts are in the scoreboard's child records
 * (WorkerLoad), written once per event-loop turn and read at most every BALANCE_READ_MS.
 */
const BALANCE_MIN = 8;
const BALANCE_RESUME = 1;
const BALANCE_READ_MS = 2;
const BALANCE_POLL_MS = 2;
const BALANCE_QUICK_MS = 200;
/** How often a stopped worker looks whether to accept again, otherwise. */
const POLL_MS = 20;
/** At most one stop for balance per this many ms: one-request connections come and go too
 *  fast for their counts to say anything, and each stop hands the listening copies back. */
const BALANCE_EVERY_MS = 1000;

/** A connection being served and its socket (src/lib/roster.ts: why not a Map). */
class OpenConnection extends RosterEntry {
  constructor(readonly conn: HttpConnection, readonly sock: Transport) { super(); }
}

/**
 * Accepts connections while this worker is below its share, and stops (closing its copies of
 * the listening sockets, so that the kernel queues further connections for the other workers)
 * when at it. A worker that stops asks the parent at once for fresh copies to listen on again.
 */
class AcceptGate {
  private servers: net.Server[] = [];
  /** Sets of listening sockets (one copy of every listener) not listened on yet. */
  private spare: ListenSet[] = [];
  /** Sets listened on now. */
  private sets = 0;
  private incoming: { count: number; set: ListenSet } | undefined;
  /** Sets asked of the parent and not received yet. */
  private asked = 0;
  private accepting = false;
  private poll: NodeJS.Timeout | null = null;
  /** No more accepting: a restart or MaxConnectionsPerChild retires this worker. */
  retiring = false;
  /** The connections being served, with their sockets. */
  private readonly conns = new Roster<OpenConnection>();
  private accepted = 0;
  /** The scoreboard's view of the other workers (null with one worker, or without the table). */
  private readonly load: WorkerLoad | null;
  private loadDirty = false;
  private othersAt = -Infinity;
  /** When this worker last stopped accepting for balance. */
  private balancedAt = -Infinity;
  private othersSeen = { workers: 0, connections: 0, accepting: 0 };

  constructor(
    private readonly model: ProcessModel,
    private readonly rt: Runtime,
    private readonly onRetire: (replace: boolean) => void,
    private readonly onEmpty: () => void,
  ) {
    this.load = model.workers > 1 ? WorkerLoad.fromEnv() : null;
    this.load?.publish(0, false);
  }

  /** This worker's connections and accepting, into the table at the end of the turn. */
  private loadChanged(): void {
    if (this.load === null || this.loadDirty) return;
    this.loadDirty = true;
    setImmediate(this.publishLoad);
  }
  private readonly publishLoad = (): void => {
    this.loadDirty = false;
    this.load?.publish(this.conns.size, this.accepting);
  };

  /** How many connections this worker holds above its fair part of all the workers'
   *  connections while another worker accepts; 0 when that does not apply. */
  private overFair(): number {
    const load = this.load;
    const mine = this.conns.size;
    if (load === null || mine < BALANCE_MIN) return 0;
    const now = Date.now();
    if (now - this.othersAt >= BALANCE_READ_MS) {
      this.othersSeen = load.others();
      this.othersAt = now;
    }
    const o = this.othersSeen;
    if (o.accepting === 0) return 0;
    return mine - (mine + o.connections) / (o.workers + 1);
  }

  /** Enough above the fair part to stop accepting. */
  private overShare(): boolean {
    const over = this.overFair();
    const fair = this.conns.size - over;
    return over > Math.max(BALANCE_MIN, fair / 2);
  }

  /** Whether this worker should accept now. */
  private canAccept(): boolean {
    return !this.atCapacity() && this.overFair() <= BALANCE_RESUME;
  }

  /** IPC from the parent: a batch of listening sockets starts, or one of them arrives. */
  receive(msg: ToWorker, handle: unknown): void {
    if (msg.t === 'listeners') {
      this.incoming = { count: msg.count, set: { handles: [], keys: [] } };
    } else if (msg.t === 'listener' && this.incoming !== undefined && handle !== undefined) {
      this.incoming.set.handles.push(handle);
      this.incoming.set.keys.push(msg.key);
      if (this.incoming.set.handles.length === this.incoming.count) {
        const set = this.incoming.set;
        this.incoming = undefined;
        if (this.asked > 0) this.asked--;
        if (this.retiring) closeSet(set);
        else if (this.accepting && this.sets < LISTEN_COPIES) this.listenOn(set);
        else {
          this.spare.push(set);
          if (!this.accepting && this.canAccept()) this.start();
        }
      }
    }
  }

  /** Asks the parent for the sets this worker lacks: LISTEN_COPIES listened on or in reserve. */
  requestHandles(): void {
    if (this.retiring) return;
    let missing = LISTEN_COPIES - this.spare.length - this.asked - (this.accepting ? this.sets : 0);
    for (; missing > 0; missing--) {
      this.asked++;
      tell({ t: 'handles' });
    }
  }

  private start(): void {
    const set = this.spare.shift();
    if (set === undefined) { this.requestHandles(); return; }
    this.accepting = true;
    scoreboard?.setAccepting(true);
    this.loadChanged();
    this.stopPolling();
    this.listenOn(set);
    while (this.sets < LISTEN_COPIES && this.spare.length > 0) this.listenOn(this.spare.shift()!);
    this.requestHandles();
    if (!this.listened) {
      this.listened = true;
      tell({ t: 'ready' });
    }
  }
  private listened = false;

  private readonly accept = (sock: Transport): void => this.onConnection(sock);

  private listenOn(set: ListenSet): void {
    const copy = this.sets++;
    for (let i = 0; i < set.handles.length; i++) {
      const handle = set.handles[i];
      if (copy > 0 && this.oneCopy(set.keys[i]!)) {
        closeHandle(handle);
        continue;
      }
      const srv = net.createServer({ noDelay: true }, this.accept);
      srv.on('error', (e: NodeJS.ErrnoException) => {
        // listen(2) failed: another process took the port after the parent checked it.
        process.stderr.write(`plume worker ${process.pid}: cannot listen: ${e.message}\n`);
        process.exit(EXIT_CHILDFATAL);
      });
      srv.once('listening', () => {
        // A port mod_ssl serves TLS on needs net.Sockets (connection-layer.ts).
        const a = srv.address();
        if (a === null || typeof a !== 'object' || !layersWantSocket(this.rt, a.port)) acceptSharedReads(srv, this.accept);
      });
      srv.listen(handle, this.model.backlog);
      this.servers.push(srv);
    }
  }

  /** Whether a listener (by its key, "host port") is listened on once: its connections begin
   *  with a handshake (connection-layer.ts layersHandshake), which costs far more than the
   *  loop turn LISTEN_COPIES saves, while every further copy is one more wake-up and failed
   *  accept4(2) for each connection that comes (session 20: 7 accept4 and 4 epoll_ctl per TLS
   *  connection with 16 copies, against Apache's 1 and 0.2). */
  private oneCopy(key: string): boolean {
    let one = this.oneCopyPorts.get(key);
    if (one === undefined) {
      one = layersHandshake(this.rt, Number(key.slice(key.lastIndexOf(' ') + 1)));
      this.oneCopyPorts.set(key, one);
    }
    return one;
  }
  private readonly oneCopyPorts = new Map<string, boolean>();

  private stop(forBalance = false): void {
    this.accepting = false;
    scoreboard?.setAccepting(false);
    this.loadChanged();
    for (const s of this.servers) s.close();
    this.servers = [];
    this.sets = 0;
    if (!this.retiring) {
      this.requestHandles();
      // With the event MPM a connection going idle frees a share without closing, and the
      // other workers' connections change without this one's: look again.
      if (this.model.asyncFactor !== undefined || this.load !== null) {
        if (forBalance) { this.stopPolling(); this.startPolling(BALANCE_POLL_MS); }
        else if (this.poll === null) this.startPolling(POLL_MS);
      }
    }
  }

  /** Looks every `ms` whether to accept again; a quick look (after a stop for balance) slows
   *  to every POLL_MS after BALANCE_QUICK_MS. */
  private startPolling(ms: number): void {
    const since = Date.now();
    this.poll = setInterval(() => {
      if (!this.accepting && this.canAccept()) this.start();
      else if (ms < POLL_MS && Date.now() - since >= BALANCE_QUICK_MS) { this.stopPolling(); this.startPolling(POLL_MS); }
    }, ms);
    this.poll.unref();
  }

  private stopPolling(): void {
    if (this.poll !== null) { clearInterval(this.poll); this.poll = null; }
  }

  private closeSpares(): void {
    for (const set of this.spare.splice(0)) closeSet(set);
  }

  /** At the share: busy connections fill it — all of them, but with the event MPM those
   *  waiting for a next request or in their lingering close, which event's listener holds
   *  without a worker thread — or event's idle connections exceed AsyncRequestWorkerFactor
   *  per free share. */
  private atCapacity(): boolean {
    const open = this.conns.size;
    const share = this.model.share;
    if (open < share) return false;
    const factor = this.model.asyncFactor;
    if (factor === undefined) return true;
    const idle = this.conns.count((o) => o.conn.idleKeepAlive || o.conn.lingering);
    const busy = open - idle;
    return busy >= share || open >= share + (share - busy) * factor;
  }

  /** Connections in their TLS handshake (not served yet, but this worker waits for them). */
  private handshaking = 0;

  private onConnection(raw: Transport): void {
    let served = false;
    let pending = false;
    acceptThroughLayers(this.rt, raw, (sock, init) => {
      served = true;
      if (pending) { pending = false; this.handshaking--; }
      this.serve(sock, init);
    });
    if (served || raw.destroyed) return;
    // A handshake runs first: the worker does not leave before it ends.
    pending = true;
    this.handshaking++;
    raw.on('close', () => {
      if (!pending) return;
      pending = false;
      this.handshaking--;
      if (this.retiring && this.conns.size === 0 && this.handshaking === 0) this.onEmpty();
    });
  }

  private serve(sock: Transport, init: ((c: ConnRec) => void) | null): void {
    const conn = new HttpConnection(sock, this.rt);
    init?.(conn);
    const open = new OpenConnection(conn, sock);
    this.conns.add(open);
    sock.on('close', () => this.onClose(open));
    this.loadChanged();
    const mcpc = this.model.maxConnectionsPerChild;
    if (mcpc > 0 && ++this.accepted >= mcpc) this.retire(true);
    else if (this.retiring) conn.closeGracefully();
    else if (this.accepting && this.conns.size >= this.model.share && this.atCapacity()) this.stop();
    else if (this.accepting && this.overShare() && Date.now() - this.balancedAt >= BALANCE_EVERY_MS) {
      this.balancedAt = Date.now();
      this.stop(true);
    }
  }

  private onClose(open: OpenConnection): void {
    this.conns.remove(open);
    this.loadChanged();
    if (this.retiring) {
      if (this.conns.size === 0 && this.handshaking === 0) this.onEmpty();
    } else if (!this.accepting && this.canAccept()) {
      this.start();
    }
  }

  /** Stops accepting for good; connections finish their request and close. */
  retire(replace: boolean): void {
    if (this.retiring) return;
    this.retiring = true;
    this.stopPolling();
    if (this.accepting) this.stop();
    this.closeSpares();
    scoreboard?.setQuiescing();
    this.onRetire(replace);
    for (const o of this.conns.members()) o.conn.closeGracefully();
    if (this.conns.size === 0 && this.handshaking === 0) this.onEmpty();
  }

  /** Stops at once: every connection is dropped. */
  abort(): void {
    this.retiring = true;
    this.stopPolling();
    if (this.accepting) this.stop();
    this.closeSpares();
    for (const o of this.conns.members()) o.sock.destroy();
  }
}

/** Closes the listening sockets of a set not listened on. */
/** One copy of every listening socket, as the parent sends them, with their keys ("host port"). */
interface ListenSet {
  readonly handles: unknown[];
  readonly keys: string[];
}

function closeHandle(h: unknown): void {
  (h as { close?: () => void }).close?.();
}

function closeSet(set: ListenSet): void {
  for (const h of set.handles) closeHandle(h);
}

/** Runs this process as a worker; resolves with its exit status. */
export async function runWorker(options: ConfigOptions, catalogue: ModuleCatalogue): Promise<number> {
  holdYoungGeneration();
  const fds = new Map<string, number>();
  try {
    const raw = JSON.parse(process.env[ENV_LOG_FDS] ?? '{}') as Record<string, number>;
    for (const [k, v] of Object.entries(raw)) if (typeof v === 'number') fds.set(k, v);
  } catch { /* none */ }
  inheritLogDescriptors(fds);
  // Signals for the whole process group are the parent's to act on; it tells its workers.
  for (const sig of ['SIGINT', 'SIGHUP', 'SIGUSR1', 'SIGWINCH'] as const) process.on(sig, () => {});

  // Messages that come before the worker serves wait for it.
  const early: { msg: ToWorker; handle: unknown }[] = [];
  let gate: AcceptGate | undefined;
  let stopNow: (() => void) | undefined;
  let stopRequested: 'graceful' | 'stop' | undefined;
  let gotConfig: (files: SnapshotEntries) => void = () => {};
  const config = new Promise<SnapshotEntries>((resolve) => { gotConfig = resolve; });
  process.on('message', (msg: ToWorker, handle: unknown) => {
    if (msg.t === 'config') { gotConfig(msg.files); return; }
    if (msg.t === 'graceful' || msg.t === 'stop') {
      stopRequested ??= msg.t;
      if (msg.t === 'stop') stopNow?.();
      else gate?.retire(false);
      return;
    }
    if (gate) gate.receive(msg, handle);
    else early.push({ msg, handle });
  });
  process.on('disconnect', () => {
    // The parent is gone: finish what is in hand and go.
    if (gate) gate.retire(false);
    else process.exit(EXIT_CHILDFATAL);
  });

  // DIFFERENCE: an httpd child is a fork of its parent's memory; a worker reads the
  // configuration again, from the text the parent recorded (config-snapshot.ts).
  tell({ t: 'config' });
  const files = await config;
  let ctx: ConfigContext;
  try {
    const readConfigFile = ConfigSnapshot.replay(files);
    ctx = await loadConfiguration({ ...options, preflight: false, child: true, startupSink: new QuietSink(), readConfigFile }, catalogue);
    openErrorLogs(ctx);
    // post_config ran in the parent, which logged what it had to say.
    const errorLog = ctx.startupLog;
    ctx.startupLog = new ErrorLog(new QuietSink());
    const failed = await postConfigure(ctx);
    ctx.startupLog = errorLog;
    if (failed !== undefined) throw new StartupError(failed);
  } catch (e) {
    // The configuration changed on disk since the parent read it, or a file it names did.
    const text = e instanceof ConfigError ? e.format(options.argv0) : e instanceof StartupError ? e.text : String(e);
    process.stderr.write(text + '\n');
    process.exitCode = EXIT_CHILDFATAL;
    setImmediate(() => process.exit(EXIT_CHILDFATAL));
    return EXIT_CHILDFATAL;
  }
  const rt = new Runtime(ctx);
  // ap_unixd_setup_child: as root, become User and Group. Like httpd's children, a worker that
  // cannot logs the alert and serves on.
  if (ctx.isLoaded('unixd_module')) dropPrivileges(ctx);
  for (const m of ctx.loaded) await m.decl.configHooks?.childInit?.(ctx);
  for (const sink of ctx.getScratch<LogSink[]>('core:errorLogSinks', () => [])) sink.flush();

  const model = processModel(ctx);
  startIdleGc(readCount, true);
  return new Promise<number>((resolve) => {
    // A worker is done when its last connection is: the IPC channel would keep it alive.
    const done = (code: number): void => {
      resolve(code);
      setImmediate(() => process.exit(code));
    };
    const g = new AcceptGate(model, rt, (replace) => { if (replace) tell({ t: 'retiring' }); }, () => {
      void cleanupConfiguration(ctx).finally(() => done(0));
    });
    gate = g;
    stopNow = () => { g.abort(); done(0); };
    process.on('SIGTERM', stopNow);
    for (const e of early.splice(0)) g.receive(e.msg, e.handle);
    if (stopRequested === 'stop') stopNow();
    else if (stopRequested === 'graceful') g.retire(false);
    else g.requestHandles();
  });
}
