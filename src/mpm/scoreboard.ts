// The scoreboard (httpd's server/scoreboard.c, include/scoreboard.h): a fixed-size table of
// the parent, its child processes and their worker slots, which mod_status reads.
//
// httpd keeps it in shared memory; plume keeps it in a file (ScoreBoardFile, else
// DefaultRuntimeDir/plume_scoreboard.<parent pid>) that the parent creates and every worker
// updates with positioned writes to its own region — or, in one process (-X), in a Buffer.
// A worker's slot "threads" are request slots: one is taken while a request is read and
// served (R, W, L) and given back when it is logged, keeping its counters (accesses, bytes,
// duration) as httpd's thread slots do. On the hot path a request only updates fields of a
// JS object; the worker encodes and writes its region at most once per event-loop turn, and
// again right before its own mod_status reads the table.
//
// Layout (little-endian): a 256-byte header, then per child process a 128-byte record (the
// first 32 bytes written by the parent, the rest by the worker) followed by threadLimit
// 272-byte worker slots.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Roster, RosterEntry } from '../lib/roster.js';
import type { ConfigContext } from '../server/config/context.js';
import type { Request } from '../server/request/request.js';
import { globals } from '../server/core/globals.js';
import { nowMicros } from '../server/log/time.js';
import type { MpmConfig } from './mpm-common.js';
import mpmEvent from './mpm_event.js';
import mpmWorker from './mpm_worker.js';
import mpmPrefork from './mpm_prefork.js';

// ---- worker slot states (scoreboard.h) ------------------------------------------------------
export const SERVER_DEAD = 0;
export const SERVER_STARTING = 1;
export const SERVER_READY = 2;
export const SERVER_BUSY_READ = 3;
export const SERVER_BUSY_WRITE = 4;
export const SERVER_BUSY_KEEPALIVE = 5;
export const SERVER_BUSY_LOG = 6;
export const SERVER_BUSY_DNS = 7;
export const SERVER_CLOSING = 8;
export const SERVER_GRACEFUL = 9;
export const SERVER_IDLE_KILL = 10;

/** What the parent says about a child slot. `unset`: the parent never wrote it (the worker's
 *  own record decides). */
export type ChildState = 'unset' | 'starting' | 'ready' | 'graceful' | 'dead';
const CHILD_STATES: readonly ChildState[] = ['unset', 'starting', 'ready', 'graceful', 'dead'];

// ---- layout ---------------------------------------------------------------------------------
const MAGIC = 0x42534c50; // "PLSB"
const VERSION = 2;
const HEADER_SIZE = 256;
const H_MAGIC = 0;
const H_VERSION = 4;
const H_SERVER_LIMIT = 8;
const H_THREAD_LIMIT = 12;
const H_THREADS_PER_CHILD = 16;
const H_MAX_SERVERS = 20;
const H_CONFIG_GEN = 24;
const H_MPM_GEN = 28;
const H_RESTART_TIME = 32; // f64, microseconds since the epoch
const H_PARENT_PID = 40;
/** Child slots ever given to a worker (1 + the highest): readers need not read past them. */
const H_CHILDREN = 44;

const CHILD_SIZE = 128;
/** Parent-written part of a child record. */
const C_PID = 0;
const C_GENERATION = 4;
const C_STATE = 8;
/** Worker-written part, from here to the end of its slots. */
const C_WORKER = 32;
const C_W_PID = 32;
const C_W_GENERATION = 36;
const C_W_CONNECTIONS = 40;
const C_W_KEEPALIVE = 44;
const C_W_CLOSING = 48;
const C_W_WRITING = 52;
const C_W_WAITIO = 56;
const C_W_NOT_ACCEPTING = 60;
const C_W_QUIESCING = 61;
/** Leading request slots that may hold anything (at least ThreadsPerChild): readers need
 *  not look past them. */
const C_W_SLOTS = 64;

const SLOT_SIZE = 272;
const S_STATUS = 0;
const S_CONN_COUNT = 4;
const S_ACCESS = 8;
const S_MY_ACCESS = 16;
const S_BYTES = 24;
const S_MY_BYTES = 32;
const S_CONN_BYTES = 40;
const S_DURATION = 48;
const S_START = 56;
const S_STOP = 64;
const S_LAST_USED = 72;
const S_UTIME = 80;
const S_STIME = 84;
const S_CLIENT = 88;
const S_REQUEST = 152;
const S_VHOST = 216;
const S_PROTOCOL = 248;
/** How stale the keep-alive and closing connection counts may be in a busy worker's writes
 *  (counting walks every connection; httpd's own figures lag behind as well). */
const CONN_STATS_MS = 250;
/** CPU times are in ticks of 10 ms: asking the kernel more often than that tells nothing new. */
const CPU_TIMES_MS = 10;
/** The least time between two writes of a worker's region, ms. A write goes out at the end of
 *  the event-loop turn that changed something, or this long after the previous write when that
 *  is later: under a flood of one-request connections a turn serves about one request, and a
 *  write per turn was a system call per request. Other workers' status pages may lag this much
 *  behind (a worker's own page is always current: it overlays its region from memory). */
const WRITE_EVERY_MS = 2;
const LITTLE_ENDIAN = os.endianness() === 'LE';
/** httpd's field sizes (client64, request, vhost, protocol), NUL included. */
export const CLIENT_LEN = 64;
export const REQUEST_LEN = 64;
export const VHOST_LEN = 32;
export const PROTOCOL_LEN = 16;

// ---- geometry ----------------------------------------------------------------------------

/** The table's shape: httpd's server_limit x thread_limit, and which slots mod_status shows
 *  (threads_per_child of max_servers processes; other slots only while in use). */
export interface ScoreboardGeometry {
  serverLimit: number;
  threadLimit: number;
  threadsPerChild: number;
  maxServers: number;
}

/** The MPM directives' numbers as event reads them (ServerLimit 16, ThreadLimit 64,
 *  ThreadsPerChild 25, MaxRequestWorkers ServerLimit x ThreadsPerChild by default).
 *  DIFFERENCE: plume's process model is event-style whatever MPM module is loaded, so the
 *  scoreboard has event's shape under mpm_worker and mpm_prefork configurations too. */
export function scoreboardGeometry(ctx: ConfigContext): ScoreboardGeometry {
  let c: MpmConfig | undefined;
  for (const m of [mpmEvent, mpmWorker, mpmPrefork]) {
    if (ctx.isLoaded(m.decl.name)) { c = m.server(ctx.mainServer); break; }
  }
  const serverLimit = Math.max(1, c?.serverLimit ?? 16);
  const threadLimit = Math.max(1, c?.threadLimit ?? 64);
  const threadsPerChild = Math.min(Math.max(1, c?.threadsPerChild ?? 25), threadLimit);
  const maxWorkers = c?.maxRequestWorkers ?? serverLimit * threadsPerChild;
  const maxServers = Math.max(1, Math.min(serverLimit, Math.floor(maxWorkers / threadsPerChild)));
  return { serverLimit, threadLimit, threadsPerChild, maxServers };
}

function childOffset(threadLimit: number, child: number): number {
  return HEADER_SIZE + child * (CHILD_SIZE + threadLimit * SLOT_SIZE);
}

function imageSize(g: ScoreboardGeometry): number {
  return childOffset(g.threadLimit, g.serverLimit);
}

const ZERO_SLOT = Buffer.alloc(SLOT_SIZE);

/** Whether the slot at `off` was never written (a native comparison: a loop over the bytes
 *  here was the one function a worker's startup ran hot enough for V8 to optimise). */
function isZeroSlot(buf: Buffer, off: number): boolean {
  return ZERO_SLOT.compare(buf, off, off + SLOT_SIZE) === 0;
}

function putString(buf: Buffer, off: number, size: number, s: string): void {
  const n = s.length === 0 ? 0 : buf.write(s, off, Math.min(s.length, size - 1), 'latin1');
  buf.fill(0, off + n, off + size);
}

function getString(buf: Buffer, off: number, size: number): string {
  let end = off;
  const max = off + size;
  while (end < max && buf[end] !== 0) end++;
  return buf.toString('latin1', off, end);
}

// ---- storage: a file, or memory (-X) --------------------------------------------------------

interface Storage {
  /** The table as last read (memory: the live image); a file is read up to `length`. */
  read(into: Buffer, length?: number): Buffer;
  write(buf: Buffer, from: number, length: number, position: number): void;
  close(): void;
}

class MemoryStorage implements Storage {
  constructor(readonly image: Buffer) {}
  read(): Buffer { return this.image; }
  write(buf: Buffer, from: number, length: number, position: number): void {
    if (buf !== this.image) buf.copy(this.image, position, from, from + length);
  }
  close(): void { /* nothing held */ }
}

class FileStorage implements Storage {
  constructor(private fd: number) {}
  read(into: Buffer, length = into.length): Buffer {
    const n = fs.readSync(this.fd, into, 0, length, 0);
    if (n < length) into.fill(0, n, length);
    return into;
  }
  write(buf: Buffer, from: number, length: number, position: number): void {
    fs.writeSync(this.fd, buf, from, length, position);
  }
  close(): void {
    if (this.fd >= 0) { try { fs.closeSync(this.fd); } catch { /* gone */ } this.fd = -1; }
  }
}

// ---- the parent's side ----------------------------------------------------------------------

export interface ParentScoreboard {
  /** The file workers attach to (PLUME_SCOREBOARD); '' when the table is in memory. */
  readonly path: string;
  readonly geometry: ScoreboardGeometry;
  /** Records a child process in slot `slot` (0 .. serverLimit-1). */
  setChild(slot: number, child: { pid: number; generation: number; state: ChildState }): void;
  /** A restart: the configuration and MPM generations go up. `restart` (SIGHUP) also clears
   *  every counter and the restart time, as httpd does; call it once the old workers are gone.
   *  `graceful` (SIGUSR1) keeps them. Returns the new MPM generation (PLUME_GENERATION). */
  newGeneration(kind?: 'graceful' | 'restart'): number;
  /** Closes the table and removes its file. */
  close(): void;
}

export interface CreateOptions {
  /** Child slots (at least ServerLimit's; more leaves room for workers of a graceful restart). */
  serverLimit?: number;
  /** Worker slots per child (at least ThreadLimit's). */
  slotsPerChild?: number;
  /** Keep the table in memory (one process: -X). */
  inMemory?: boolean;
}

class Parent implements ParentScoreboard {
  private readonly hdr = Buffer.alloc(HEADER_SIZE);
  private children = 0;
  private readonly rec = Buffer.alloc(C_WORKER);
  constructor(readonly path: string, readonly geometry: ScoreboardGeometry, readonly storage: Storage) {}

  writeHeader(configGen: number, mpmGen: number, restartTime: number): void {
    const h = this.hdr;
    h.writeUInt32LE(MAGIC, H_MAGIC);
    h.writeUInt32LE(VERSION, H_VERSION);
    h.writeUInt32LE(this.geometry.serverLimit, H_SERVER_LIMIT);
    h.writeUInt32LE(this.geometry.threadLimit, H_THREAD_LIMIT);
    h.writeUInt32LE(this.geometry.threadsPerChild, H_THREADS_PER_CHILD);
    h.writeUInt32LE(this.geometry.maxServers, H_MAX_SERVERS);
    h.writeUInt32LE(configGen, H_CONFIG_GEN);
    h.writeUInt32LE(mpmGen, H_MPM_GEN);
    h.writeDoubleLE(restartTime, H_RESTART_TIME);
    h.writeUInt32LE(process.pid, H_PARENT_PID);
    h.writeUInt32LE(this.children, H_CHILDREN);
    this.storage.write(h, 0, HEADER_SIZE, 0);
  }

  setChild(slot: number, child: { pid: number; generation: number; state: ChildState }): void {
    if (slot < 0 || slot >= this.geometry.serverLimit) return;
    if (slot >= this.children) {
      this.children = slot + 1;
      this.hdr.writeUInt32LE(this.children, H_CHILDREN);
      this.storage.write(this.hdr, H_CHILDREN, 4, H_CHILDREN);
    }
    const r = this.rec;
    r.fill(0);
    r.writeUInt32LE(child.state === 'dead' ? 0 : child.pid, C_PID);
    r.writeUInt32LE(child.generation, C_GENERATION);
    r.writeUInt8(CHILD_STATES.indexOf(child.state), C_STATE);
    this.storage.write(r, 0, C_WORKER, childOffset(this.geometry.threadLimit, slot));
  }

  newGeneration(kind: 'graceful' | 'restart' = 'graceful'): number {
    const h = this.hdr;
    const configGen = h.readUInt32LE(H_CONFIG_GEN) + 1;
    const mpmGen = h.readUInt32LE(H_MPM_GEN) + 1;
    let restart = h.readDoubleLE(H_RESTART_TIME);
    if (kind === 'restart') {
      restart = nowMicros();
      const zero = Buffer.alloc(imageSize(this.geometry) - HEADER_SIZE);
      this.storage.write(zero, 0, zero.length, HEADER_SIZE);
    }
    this.writeHeader(configGen, mpmGen, restart);
    return mpmGen;
  }

  close(): void {
    this.storage.close();
    if (this.path !== '') { try { fs.unlinkSync(this.path); } catch { /* gone */ } }
  }
}

/** The default table file: ScoreBoardFile, else DefaultRuntimeDir (logs/) and the parent pid. */
export function scoreboardPath(ctx: ConfigContext): string {
  const g = globals(ctx);
  const set = g.recorded.filter((l) => l.startsWith('ScoreBoardFile ')).pop();
  if (set !== undefined) return ctx.serverRootRelative(set.slice('ScoreBoardFile '.length));
  const dir = g.runtimeDir ?? ctx.serverRootRelative('logs');
  return path.join(dir, `plume_scoreboard.${process.pid}`);
}

/** httpd's ap_create_scoreboard: the parent makes the table (zeroed) before forking workers. */
export function createScoreboard(ctx: ConfigContext, opts: CreateOptions = {}): ParentScoreboard {
  const g = scoreboardGeometry(ctx);
  const geometry: ScoreboardGeometry = {
    ...g,
    serverLimit: Math.max(g.serverLimit, opts.serverLimit ?? 0),
    threadLimit: Math.max(g.threadLimit, opts.slotsPerChild ?? 0),
  };
  const size = imageSize(geometry);
  let parent: Parent;
  if (opts.inMemory) {
    parent = new Parent('', geometry, new MemoryStorage(Buffer.alloc(size)));
  } else {
    const file = scoreboardPath(ctx);
    try { fs.unlinkSync(file); } catch { /* not there */ }
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
    fs.ftruncateSync(fd, size);
    parent = new Parent(file, geometry, new FileStorage(fd));
  }
  parent.writeHeader(1, 0, nowMicros());
  return parent;
}

// ---- a worker's side --------------------------------------------------------------------------

/** What the scoreboard needs of a connection (HttpConnection). */
export interface ScoreConn {
  readonly remoteIp: string;
  readonly remoteHost: string | undefined;
  readonly keepalives: number;
  /** Waiting for the next request of a kept-alive connection. */
  readonly idleKeepAlive: boolean;
  /** In the lingering close. */
  readonly lingering: boolean;
  /** The protocol it speaks when not HTTP/1.1 (an HTTP/2 stream's "h2", "h2c"). */
  readonly protocol?: string;
  /** The scoreboard's record of it, kept on the connection rather than in a Map keyed by it
   *  (src/lib/roster.ts says why): null until a scoreboard has seen it. */
  score: ScoreEntry | null;
}

/** A connection in one worker's table: the slot it holds while reading or serving a request. */
export class ScoreEntry extends RosterEntry {
  slot: Slot | null = null;
  constructor(readonly conn: ScoreConn, readonly board: WorkerScoreboard) { super(); }
}

class Slot {
  status = SERVER_DEAD;
  connCount = 0;
  accessCount = 0;
  myAccessCount = 0;
  bytesServed = 0;
  myBytesServed = 0;
  connBytes = 0;
  duration = 0;
  startTime = 0;
  stopTime = 0;
  lastUsed = 0;
  utime = 0;
  stime = 0;
  client = '';
  request = '';
  /** The vhost field is "name:port", put together when the slot is written. */
  vhostName = '';
  vhostPort = 0;
  protocol = '';
  /** Connections sharing this slot (more than one only when every slot is taken). */
  holders = 0;
  /** Counted since the last write: its CPU times are taken then. */
  counted = false;
  dirty = false;
  /** The strings as last encoded into the region (the region starts zeroed; the vhost field
   *  is always written the first time). */
  readonly encoded = { client: '', request: '', vhostName: '', vhostPort: NaN, protocol: '' };
  constructor(readonly index: number) {}
}

/** One worker's slots (one child record), kept in memory and written out in batches. */
export class WorkerScoreboard {
  readonly slots: Slot[];
  /** Idle slots, taken in turn (a ring: the longest idle first, as httpd's threads take
   *  turns); the slots past ThreadsPerChild are used only when every one of these is busy. */
  private readonly free: Uint32Array;
  private freeHead = 0;
  private freeCount = 0;
  private readonly overflow: number[] = [];
  private shareNext = 0;
  private readonly conns = new Roster<ScoreEntry>();
  private readonly region: Buffer;
  private readonly regionPos: number;
  private dirtyFrom = Number.MAX_SAFE_INTEGER;
  private dirtyTo = -1;
  private procDirty = true;
  private scheduled = false;
  private notAccepting = false;
  /** The keep-alive and closing counts, recounted at most every CONN_STATS_MS. */
  private keepAliveConns = 0;
  private closingConns = 0;
  private connStatsAt = -Infinity;
  /** A status request recounted them during this event-loop turn (they are then as current
   *  as the other workers' regions read in the same turn). */
  private connStatsFresh = false;
  private readonly connStatsStale = (): void => { this.connStatsFresh = false; };
  private quiescing = false;
  private readBuf: Buffer | undefined;
  /** `readBuf` holds the table as read during this event-loop turn (other workers' regions
   *  change at most once per turn of theirs); the end of this worker's own region written so far. */
  private imageFresh = false;
  private writtenEnd = 0;
  /** Leading slots that may hold anything: ThreadsPerChild, or more once the slots past it
   *  were used (C_W_SLOTS). */
  private used: number;
  private readonly staleBound = (): void => { this.imageFresh = false; };
  private timer: NodeJS.Timeout | null = null;
  /** ExtendedStatus: record who and what each slot serves. */
  extended = true;
  /** SeeRequestTail. */
  requestTail = false;
  private readonly flushBound = (): void => { this.scheduled = false; if (!this.detached) this.flush(); };

  constructor(
    readonly geometry: ScoreboardGeometry,
    readonly child: number,
    public generation: number,
    private readonly storage: Storage,
    /** Batch writes per event-loop turn (a file other processes read). */
    private readonly batched: boolean,
  ) {
    const g = geometry;
    this.regionPos = childOffset(g.threadLimit, child) + C_WORKER;
    this.region = Buffer.alloc(CHILD_SIZE - C_WORKER + g.threadLimit * SLOT_SIZE);
    this.slots = [];
    this.used = g.threadsPerChild;
    for (let j = 0; j < g.threadLimit; j++) this.slots.push(new Slot(j));
    this.free = new Uint32Array(g.threadsPerChild);
    for (let j = 0; j < g.threadsPerChild; j++) this.free[j] = j;
    this.freeCount = g.threadsPerChild;
    for (let j = g.threadLimit - 1; j >= g.threadsPerChild; j--) this.overflow.push(j);
    if (batched) {
      // The async connection counts change without any request: publish them now and then.
      this.timer = setInterval(() => { this.procDirty = true; this.flush(true); }, 1000);
      this.timer.unref();
    }
  }

  /** Takes over the slots' counters left in the table by this child slot's earlier process
   *  (per-slot totals survive a worker's replacement, as in httpd). */
  load(image: Buffer, base = this.regionPos - C_WORKER): void {
    for (const s of this.slots) {
      const o = base + CHILD_SIZE + s.index * SLOT_SIZE;
      s.accessCount = image.readDoubleLE(o + S_ACCESS);
      s.bytesServed = image.readDoubleLE(o + S_BYTES);
      s.duration = image.readDoubleLE(o + S_DURATION);
      s.startTime = image.readDoubleLE(o + S_START);
      s.stopTime = image.readDoubleLE(o + S_STOP);
      s.lastUsed = image.readDoubleLE(o + S_LAST_USED);
      s.client = getString(image, o + S_CLIENT, CLIENT_LEN);
      s.request = getString(image, o + S_REQUEST, REQUEST_LEN);
      s.vhostName = getString(image, o + S_VHOST, VHOST_LEN);
      s.vhostPort = -1;
      s.protocol = getString(image, o + S_PROTOCOL, PROTOCOL_LEN);
      if (s.index >= this.used && !isZeroSlot(image, o)) this.used = s.index + 1;
    }
  }

  /** The worker is ready: its first slots wait for connections. */
  start(): void {
    const now = nowMicros();
    for (const s of this.slots) {
      s.status = s.index < this.geometry.threadsPerChild ? SERVER_READY : SERVER_DEAD;
      s.myAccessCount = 0;
      s.myBytesServed = 0;
      s.connCount = 0;
      s.connBytes = 0;
      s.lastUsed = now;
      // Slots past the used ones are zero (dead) in the table already.
      if (s.index < this.used) this.touch(s);
    }
    this.flush();
  }

  // ---- hot path ------------------------------------------------------------------------------
  connOpened(c: ScoreConn): void {
    const e = new ScoreEntry(c, this);
    c.score = e;
    this.conns.add(e);
    this.procDirty = true;
    this.schedule();
  }

  connClosed(c: ScoreConn): void {
    const e = c.score;
    if (e === null) return;
    // The table that counted it (under -X, a restart into another shape starts a new one).
    const b = e.board;
    b.conns.remove(e);
    if (e.slot !== null) b.release(e, e.slot);
    b.procDirty = true;
    b.schedule();
  }

  /** The connection's record in this table: a connection opened under an earlier table (-X
   *  restarted into another shape) gets one that holds slots but is not counted as open. */
  private entryOf(c: ScoreConn): ScoreEntry {
    const e = c.score;
    if (e !== null && e.board === this) return e;
    const n = new ScoreEntry(c, this);
    c.score = n;
    return n;
  }

  /** A request's first bytes arrived (SERVER_BUSY_READ). */
  reading(c: ScoreConn): void {
    const e = this.entryOf(c);
    if (e.slot !== null) return;
    const s = this.acquire(e);
    s.status = SERVER_BUSY_READ;
    if (this.extended) {
      s.lastUsed = nowMicros();
      s.client = c.remoteHost ?? c.remoteIp;
      s.request = '';
      s.vhostName = '';
      s.vhostPort = -1;
    }
    this.touch(s);
  }

  /** The request line and headers are in (SERVER_BUSY_WRITE until it is logged). */
  requestStart(r: Request): void {
    const c = r.connection as unknown as ScoreConn;
    const e = this.entryOf(c);
    const s = e.slot ?? this.acquire(e);
    s.status = SERVER_BUSY_WRITE;
    if (this.extended) {
      const now = nowMicros();
      s.lastUsed = now;
      s.startTime = now;
      s.connCount = c.keepalives + 1;
      s.client = c.remoteHost ?? c.remoteIp;
      s.request = this.requestTail && r.theRequest.length >= REQUEST_LEN ? r.theRequest.slice(r.theRequest.length - (REQUEST_LEN - 1)) : r.theRequest;
      s.vhostName = r.server.serverHostname ?? r.rt.mainServer.serverHostname ?? '';
      s.vhostPort = r.connection.localPort;
      s.protocol = c.protocol ?? 'http/1.1';
    }
    this.touch(s);
  }

  /** The request was logged (httpd's ap_increment_counts after the log_transaction hook):
   *  the bytes are mod_logio's, read and written. */
  requestDone(r: Request): void {
    const e = this.entryOf(r.connection as unknown as ScoreConn);
    // Answered without ever being read as a request (an unusable request line): a slot for
    // the count alone.
    const s = e.slot ?? this.acquire(e);
    this.count(s, r);
    this.release(e, s);
  }

  /** A worker that stops taking new connections (at its MaxRequestWorkers share). */
  setAccepting(on: boolean): void {
    this.notAccepting = !on;
    this.procDirty = true;
    this.schedule();
  }

  /** A graceful stop of this worker: "Stopping: yes" from now on. */
  setQuiescing(): void {
    this.quiescing = true;
    this.procDirty = true;
    this.flush();
  }

  private count(s: Slot, r: Request): void {
    const conn = r.connection;
    const bytes = conn.bytesIn + conn.bytesOut;
    const now = nowMicros();
    s.accessCount++;
    s.myAccessCount++;
    s.bytesServed += bytes;
    s.myBytesServed += bytes;
    s.duration += now - r.startMicros;
    s.stopTime = now;
    s.counted = true;
  }

  private acquire(e: ScoreEntry): Slot {
    let j: number | undefined;
    if (this.freeCount > 0) {
      j = this.free[this.freeHead]!;
      this.freeHead = (this.freeHead + 1) % this.free.length;
      this.freeCount--;
    } else {
      j = this.overflow.pop();
    }
    let s: Slot;
    if (j === undefined) {
      // Every slot is taken: share one (its counters stay exact, its state shows one of them).
      s = this.slots[this.shareNext++ % this.slots.length]!;
    } else {
      s = this.slots[j]!;
      if (j >= this.used) { this.used = j + 1; this.procDirty = true; }
    }
    s.holders++;
    e.slot = s;
    return s;
  }

  private release(e: ScoreEntry, s: Slot): void {
    e.slot = null;
    if (--s.holders > 0) { this.touch(s); return; }
    s.holders = 0;
    const extra = s.index >= this.geometry.threadsPerChild;
    s.status = extra ? SERVER_DEAD : SERVER_READY;
    s.connCount = 0;
    s.connBytes = 0;
    if (this.extended) s.lastUsed = nowMicros();
    if (extra) this.overflow.push(s.index);
    else {
      this.free[(this.freeHead + this.freeCount) % this.free.length] = s.index;
      this.freeCount++;
    }
    this.touch(s);
  }

  private touch(s: Slot): void {
    s.dirty = true;
    if (s.index < this.dirtyFrom) this.dirtyFrom = s.index;
    if (s.index > this.dirtyTo) this.dirtyTo = s.index;
    if (this.batched && !this.scheduled) this.schedule();
  }

  private schedule(): void {
    if (!this.batched || this.scheduled) return;
    this.scheduled = true;
    const wait = this.lastWrite + WRITE_EVERY_MS - performance.now();
    if (wait <= 0) setImmediate(this.flushBound);
    else setTimeout(this.flushBound, Math.ceil(wait)).unref();
  }
  /** When the region was last written (performance.now()). */
  private lastWrite = -Infinity;

  // ---- writing ---------------------------------------------------------------------------------
  /** Encodes what changed and writes this worker's region (one positioned write).
   *  DIFFERENCE: the CPU times are Node's process.cpuUsage() now, for the slots that counted a
   *  request since the last write (httpd takes times() at each count). */
  flush(force = false): void {
    this.encode(force);
    if (this.unwritten === 0) return;
    this.storage.write(this.region, 0, this.unwritten, this.regionPos);
    this.unwritten = 0;
    this.lastWrite = performance.now();
  }

  /** The end of the region encoded but not written yet (0: nothing to write). */
  private unwritten = 0;

  /** Encodes what changed into the region (memory only). */
  private encode(force: boolean): void {
    const from = this.dirtyFrom;
    const to = this.dirtyTo;
    if (to < 0 && !this.procDirty) return;
    const b = this.region;
    this.encodeProcess(b, force);
    for (let j = from; j <= to; j++) {
      const s = this.slots[j]!;
      if (!s.dirty) continue;
      s.dirty = false;
      if (s.counted) { s.counted = false; this.cpuTimes(); s.utime = this.utime; s.stime = this.stime; }
      encodeSlot(b, CHILD_SIZE - C_WORKER + j * SLOT_SIZE, s);
    }
    const end = to < 0 ? CHILD_SIZE - C_WORKER : CHILD_SIZE - C_WORKER + (to + 1) * SLOT_SIZE;
    if (end > this.unwritten) this.unwritten = end;
    if (end > this.writtenEnd) this.writtenEnd = end;
    this.dirtyFrom = Number.MAX_SAFE_INTEGER;
    this.dirtyTo = -1;
    this.procDirty = false;
  }

  /** DIFFERENCE: the event MPM's listener publishes its connection figures when it wakes;
   *  these are the worker's own, live (docs/differences.md). */
  private cpuAt = -Infinity;
  /** The CPU the process used before it served (Node's start, reading the configuration):
   *  not counted, as an httpd child forked from its parent starts from nothing. Counting it
   *  made CPULoad infinite ("0.e+79", APR's %g of an infinity) in the first second. */
  private readonly cpuBase = process.cpuUsage();
  private utime = 0;
  private stime = 0;
  private cpuTimes(): void {
    const now = performance.now();
    if (now - this.cpuAt < CPU_TIMES_MS) return;
    this.cpuAt = now;
    const cpu = process.cpuUsage(this.cpuBase);
    this.utime = Math.floor(cpu.user / 10000);
    this.stime = Math.floor(cpu.system / 10000);
  }

  private encodeProcess(b: Buffer, force: boolean): void {
    const now = performance.now();
    // A status request asks for current counts (force): once per event-loop turn, since
    // counting walks every connection and a busy turn can serve hundreds of such requests.
    if ((force && !this.connStatsFresh) || now - this.connStatsAt >= CONN_STATS_MS) {
      if (force) { this.connStatsFresh = true; setImmediate(this.connStatsStale); }
      this.keepAliveConns = this.conns.count((e) => e.conn.idleKeepAlive);
      this.closingConns = this.conns.count((e) => !e.conn.idleKeepAlive && e.conn.lingering);
      this.connStatsAt = now;
    }
    b.writeUInt32LE(process.pid, C_W_PID - C_WORKER);
    b.writeUInt32LE(this.generation, C_W_GENERATION - C_WORKER);
    b.writeUInt32LE(this.conns.size, C_W_CONNECTIONS - C_WORKER);
    b.writeUInt32LE(this.keepAliveConns, C_W_KEEPALIVE - C_WORKER);
    b.writeUInt32LE(this.closingConns, C_W_CLOSING - C_WORKER);
    b.writeUInt32LE(0, C_W_WRITING - C_WORKER);
    b.writeUInt32LE(0, C_W_WAITIO - C_WORKER);
    b.writeUInt8(this.notAccepting ? 1 : 0, C_W_NOT_ACCEPTING - C_WORKER);
    b.writeUInt32LE(this.used, C_W_SLOTS - C_WORKER);
    b.writeUInt8(this.quiescing ? 1 : 0, C_W_QUIESCING - C_WORKER);
  }

  /** The whole table as it is now, this worker's latest state included. */
  snapshot(): ScoreboardImage {
    this.procDirty = true;
    // In one process the table is this memory: written through. With other workers reading
    // the file, this worker's own region is overlaid from memory below and goes to the file
    // with the turn's write.
    if (this.batched) { this.encode(true); this.schedule(); } else this.flush(true);
    const size = imageSize(this.geometry);
    if (this.readBuf === undefined || this.readBuf.length !== size) {
      this.readBuf = Buffer.alloc(size);
      this.imageFresh = false;
    }
    if (!this.batched) return this.imageOf(this.storage.read(this.readBuf));
    // A file shared with other workers: read it once per event-loop turn (the other workers
    // publish their regions once per turn of theirs anyway); later requests of the same turn
    // see this worker's own region as it is now, copied from memory.
    if (this.imageFresh) {
      this.region.copy(this.readBuf, this.regionPos, 0, this.writtenEnd);
      return this.imageOf(this.readBuf);
    }
    // Only the child slots ever used (the header says how many; the rest stay zero): the
    // whole table can be megabytes.
    const img = this.readBuf;
    const tl = this.geometry.threadLimit;
    const known = img.readUInt32LE(H_CHILDREN);
    const length = known > 0 ? Math.min(size, childOffset(tl, known)) : size;
    this.storage.read(img, length);
    const children = img.readUInt32LE(H_CHILDREN);
    if (children > known && length < size) this.storage.read(img, Math.min(size, childOffset(tl, children)));
    // This worker's own region as it is in memory (the file gets it at the end of the turn).
    this.region.copy(img, this.regionPos, 0, this.writtenEnd);
    this.imageFresh = true;
    setImmediate(this.staleBound);
    return this.imageOf(this.readBuf);
  }

  /** The decoded view of `buf`, kept while the read buffer stays the same (its header re-read). */
  private image: ScoreboardImage | undefined;
  private imageOf(buf: Buffer): ScoreboardImage {
    if (this.image === undefined || !this.image.over(buf)) this.image = new ScoreboardImage(buf);
    else this.image.reload();
    return this.image;
  }

  detach(): void {
    if (this.timer !== null) { clearInterval(this.timer); this.timer = null; }
    // What this worker encoded last goes out before the table is let go.
    this.flush();
    this.detached = true;
    this.storage.close();
  }
  private detached = false;
}

function encodeSlot(b: Buffer, o: number, s: Slot): void {
  b.writeUInt8(s.status, o + S_STATUS);
  b.writeUInt32LE(s.connCount, o + S_CONN_COUNT);
  b.writeDoubleLE(s.accessCount, o + S_ACCESS);
  b.writeDoubleLE(s.myAccessCount, o + S_MY_ACCESS);
  b.writeDoubleLE(s.bytesServed, o + S_BYTES);
  b.writeDoubleLE(s.myBytesServed, o + S_MY_BYTES);
  b.writeDoubleLE(s.connBytes, o + S_CONN_BYTES);
  b.writeDoubleLE(s.duration, o + S_DURATION);
  b.writeDoubleLE(s.startTime, o + S_START);
  b.writeDoubleLE(s.stopTime, o + S_STOP);
  b.writeDoubleLE(s.lastUsed, o + S_LAST_USED);
  b.writeUInt32LE(s.utime, o + S_UTIME);
  b.writeUInt32LE(s.stime, o + S_STIME);
  // The strings only when they changed since this slot's last encoding (the bytes stay).
  const e = s.encoded;
  if (e.client !== s.client) { putString(b, o + S_CLIENT, CLIENT_LEN, s.client); e.client = s.client; }
  if (e.request !== s.request) { putString(b, o + S_REQUEST, REQUEST_LEN, s.request); e.request = s.request; }
  if (e.vhostName !== s.vhostName || e.vhostPort !== s.vhostPort) {
    putString(b, o + S_VHOST, VHOST_LEN, s.vhostPort < 0 ? s.vhostName : `${s.vhostName}:${s.vhostPort}`);
    e.vhostName = s.vhostName;
    e.vhostPort = s.vhostPort;
  }
  if (e.protocol !== s.protocol) { putString(b, o + S_PROTOCOL, PROTOCOL_LEN, s.protocol); e.protocol = s.protocol; }
}

// ---- reading -------------------------------------------------------------------------------

/** A child process as mod_status sees it (httpd's process_score). */
export interface ProcessView {
  pid: number;
  generation: number;
  quiescing: boolean;
  notAccepting: boolean;
  /** The worker is not serving yet (forked, not attached). */
  starting: boolean;
  connections: number;
  keepAlive: number;
  closing: number;
  writing: number;
  waitIo: number;
}

/** One worker slot (httpd's worker_score); times in microseconds since the epoch. */
export interface SlotView {
  status: number;
  connCount: number;
  accessCount: number;
  myAccessCount: number;
  bytesServed: number;
  myBytesServed: number;
  connBytes: number;
  duration: number;
  startTime: number;
  stopTime: number;
  lastUsed: number;
  utime: number;
  stime: number;
}

/** What ScoreboardImage.tally() adds up. */
export interface Tally {
  /** The state of every slot, child by child (serverLimit x threadLimit). */
  stat: Uint8Array;
  /** Per child: 1 when tally() looked at its slots (0: every slot of it is dead, 0 in `stat`). */
  rowUsed: Uint8Array;
  /** Per child looked at: how many of its leading slots (the others are dead, 0 in `stat`). */
  rowSlots: Uint32Array;
  processes: ProcessView[];
  /** Slots waiting for a request (processes of the current generation only), serving one,
   *  finishing gracefully. */
  ready: number;
  busy: number;
  graceful: number;
  /** Accesses, whole kilobytes and microseconds served; CPU ticks (ExtendedStatus only). */
  count: number;
  kbcount: number;
  duration: number;
  utime: number;
  stime: number;
  /** Per process: its slots serving, waiting, finishing gracefully. */
  threadBusy: Uint32Array;
  threadIdle: Uint32Array;
  threadGraceful: Uint32Array;
}

/** A decoded view of the table. A worker keeps one per read buffer and reloads its header
 *  for each status request (reload()); tally() fills one Tally per image, so a tally is valid
 *  until the image's next tally(). */
export class ScoreboardImage {
  geometry!: ScoreboardGeometry;
  configGeneration!: number;
  mpmGeneration!: number;
  /** Microseconds since the epoch. */
  restartTime!: number;
  /** Typed views for the counters when the table is aligned (it is: a buffer of its own). */
  private readonly f64: Float64Array | null;
  private readonly u32: Uint32Array | null;
  /** What tally() fills, kept for the next call while the geometry is the same. */
  private sums: Tally | undefined;
  constructor(private readonly buf: Buffer) {
    const aligned = LITTLE_ENDIAN && buf.byteOffset % 8 === 0;
    this.f64 = aligned ? new Float64Array(buf.buffer, buf.byteOffset, buf.length >>> 3) : null;
    this.u32 = aligned ? new Uint32Array(buf.buffer, buf.byteOffset, buf.length >>> 2) : null;
    this.reload();
  }

  /** Whether this is the view of `buf`. */
  over(buf: Buffer): boolean { return this.buf === buf; }

  /** Reads the header again (the buffer was read anew or changed in place). */
  reload(): void {
    const buf = this.buf;
    const serverLimit = buf.readUInt32LE(H_SERVER_LIMIT);
    const threadLimit = buf.readUInt32LE(H_THREAD_LIMIT);
    const threadsPerChild = buf.readUInt32LE(H_THREADS_PER_CHILD);
    const maxServers = buf.readUInt32LE(H_MAX_SERVERS);
    const g = this.geometry as ScoreboardGeometry | undefined;
    if (g === undefined || g.serverLimit !== serverLimit || g.threadLimit !== threadLimit ||
        g.threadsPerChild !== threadsPerChild || g.maxServers !== maxServers) {
      this.geometry = { serverLimit, threadLimit, threadsPerChild, maxServers };
    }
    this.configGeneration = buf.readUInt32LE(H_CONFIG_GEN);
    this.mpmGeneration = buf.readUInt32LE(H_MPM_GEN);
    this.restartTime = buf.readDoubleLE(H_RESTART_TIME);
  }

  process(i: number, into?: ProcessView): ProcessView {
    const b = this.buf;
    const o = childOffset(this.geometry.threadLimit, i);
    const state = CHILD_STATES[b.readUInt8(o + C_STATE)] ?? 'unset';
    const workerPid = b.readUInt32LE(o + C_W_PID);
    let pid = b.readUInt32LE(o + C_PID);
    let generation = b.readUInt32LE(o + C_GENERATION);
    if (state === 'unset') { pid = workerPid; generation = b.readUInt32LE(o + C_W_GENERATION); }
    if (state === 'dead') pid = 0;
    const v = into ?? newProcessView();
    v.pid = pid;
    v.generation = generation;
    v.quiescing = pid !== 0 && (state === 'graceful' || b.readUInt8(o + C_W_QUIESCING) === 1);
    v.notAccepting = b.readUInt8(o + C_W_NOT_ACCEPTING) === 1;
    v.starting = pid !== 0 && workerPid !== pid;
    v.connections = b.readUInt32LE(o + C_W_CONNECTIONS);
    v.keepAlive = b.readUInt32LE(o + C_W_KEEPALIVE);
    v.closing = b.readUInt32LE(o + C_W_CLOSING);
    v.writing = b.readUInt32LE(o + C_W_WRITING);
    v.waitIo = b.readUInt32LE(o + C_W_WAITIO);
    return v;
  }

  /** The Tally to fill for this geometry, emptied. */
  private emptySums(): Tally {
    const { serverLimit, threadLimit } = this.geometry;
    let t = this.sums;
    if (t === undefined || t.rowUsed.length !== serverLimit || t.stat.length !== serverLimit * threadLimit) {
      const processes: ProcessView[] = [];
      for (let i = 0; i < serverLimit; i++) processes.push(newProcessView());
      t = {
        stat: new Uint8Array(serverLimit * threadLimit), rowUsed: new Uint8Array(serverLimit), rowSlots: new Uint32Array(serverLimit), processes,
        ready: 0, busy: 0, graceful: 0, count: 0, kbcount: 0, duration: 0, utime: 0, stime: 0,
        threadBusy: new Uint32Array(serverLimit), threadIdle: new Uint32Array(serverLimit), threadGraceful: new Uint32Array(serverLimit),
      };
      this.sums = t;
      return t;
    }
    t.stat.fill(0);
    t.rowUsed.fill(0);
    t.rowSlots.fill(0);
    t.threadBusy.fill(0);
    t.threadIdle.fill(0);
    t.threadGraceful.fill(0);
    t.ready = t.busy = t.graceful = t.count = t.kbcount = t.duration = t.utime = t.stime = 0;
    return t;
  }

  private slotOffset(i: number, j: number): number {
    return childOffset(this.geometry.threadLimit, i) + CHILD_SIZE + j * SLOT_SIZE;
  }

  private f(o: number): number {
    return this.f64 !== null ? this.f64[o >>> 3]! : this.buf.readDoubleLE(o);
  }

  private u(o: number): number {
    return this.u32 !== null ? this.u32[o >>> 2]! : this.buf.readUInt32LE(o);
  }

  /** The state shown for slot j of child i: `ps` (that child's process view) decides it for
   *  a process that is gone (dead), not started yet, or stopping gracefully. */
  status(i: number, j: number, ps: ProcessView): number {
    const status = this.buf[this.slotOffset(i, j) + S_STATUS]!;
    if (ps.pid === 0) return SERVER_DEAD;
    if (ps.starting) return j < this.geometry.threadsPerChild ? SERVER_STARTING : SERVER_DEAD;
    if (ps.quiescing && status === SERVER_READY) return SERVER_GRACEFUL;
    return status;
  }

  /**
   * Every slot's state and the sums mod_status prints (httpd's status_handler loop, kept here
   * with the layout it walks): workers busy, idle (of the current generation) and finishing
   * gracefully, per process too; with `extended`, the accesses, bytes, time and CPU of every
   * slot that served something or is serving now.
   */
  tally(extended: boolean): Tally {
    const { serverLimit, threadLimit, threadsPerChild } = this.geometry;
    const buf = this.buf;
    const f64 = this.f64;
    const u32 = this.u32;
    const mpmGen = this.mpmGeneration;
    const t = this.emptySums();
    let bcount = 0;
    for (let i = 0; i < serverLimit; i++) {
      const ps = this.process(i, t.processes[i]);
      const base = childOffset(threadLimit, i) + CHILD_SIZE;
      let procTu = 0;
      let procTs = 0;
      // No process: every slot is dead (0 in `stat` already); only counters left over count.
      const none = ps.pid === 0;
      if (none && !extended) continue;
      // A child slot no worker ever attached to (since the last restart) holds no counters.
      if (none && buf.readUInt32LE(childOffset(threadLimit, i) + C_W_PID) === 0) continue;
      t.rowUsed[i] = 1;
      // Slots past the ones the worker ever used are zero: dead, nothing counted.
      const slots = Math.min(threadLimit, Math.max(threadsPerChild, buf.readUInt32LE(childOffset(threadLimit, i) + C_W_SLOTS)));
      t.rowSlots[i] = slots;
      for (let j = 0; j < slots; j++) {
        const o = base + j * SLOT_SIZE;
        if (none && (f64 !== null ? f64[(o + S_ACCESS) >>> 3]! : buf.readDoubleLE(o + S_ACCESS)) === 0) continue;
        let res = buf[o + S_STATUS]!;
        if (ps.pid === 0) res = SERVER_DEAD;
        else if (ps.starting) res = j < threadsPerChild ? SERVER_STARTING : SERVER_DEAD;
        else if (ps.quiescing && res === SERVER_READY) res = SERVER_GRACEFUL;
        t.stat[i * threadLimit + j] = res;
        if (ps.pid !== 0) {
          if (res === SERVER_GRACEFUL) {
            t.graceful++;
            t.threadGraceful[i]!++;
          } else if (!ps.quiescing) {
            if (res === SERVER_READY) {
              if (ps.generation === mpmGen) t.ready++;
              t.threadIdle[i]!++;
            } else if (res !== SERVER_DEAD && res !== SERVER_STARTING && res !== SERVER_IDLE_KILL) {
              t.busy++;
              t.threadBusy[i]!++;
            }
          }
        }
        if (!extended) continue;
        const lres = f64 !== null ? f64[(o + S_ACCESS) >>> 3]! : buf.readDoubleLE(o + S_ACCESS);
        if (lres === 0 && (res === SERVER_READY || res === SERVER_DEAD)) continue;
        // A process's slots carry that process's CPU times: take the latest.
        const ut = u32 !== null ? u32[(o + S_UTIME) >>> 2]! : buf.readUInt32LE(o + S_UTIME);
        const st = u32 !== null ? u32[(o + S_STIME) >>> 2]! : buf.readUInt32LE(o + S_STIME);
        if (ut > procTu || st > procTs) { procTu = ut; procTs = st; }
        t.count += lres;
        bcount += f64 !== null ? f64[(o + S_BYTES) >>> 3]! : buf.readDoubleLE(o + S_BYTES);
        t.duration += f64 !== null ? f64[(o + S_DURATION) >>> 3]! : buf.readDoubleLE(o + S_DURATION);
        if (bcount >= 1024) {
          t.kbcount += Math.floor(bcount / 1024);
          bcount %= 1024;
        }
      }
      t.utime += procTu;
      t.stime += procTs;
    }
    return t;
  }

  /** Slot j of child i; `ps` (that child's process view) decides the state of slots whose
   *  process is gone (dead), not started yet, or stopping gracefully. */
  slot(i: number, j: number, ps: ProcessView, into: SlotView): SlotView {
    const o = this.slotOffset(i, j);
    into.status = this.status(i, j, ps);
    into.connCount = this.u(o + S_CONN_COUNT);
    into.accessCount = this.f(o + S_ACCESS);
    into.myAccessCount = this.f(o + S_MY_ACCESS);
    into.bytesServed = this.f(o + S_BYTES);
    into.myBytesServed = this.f(o + S_MY_BYTES);
    into.connBytes = this.f(o + S_CONN_BYTES);
    into.duration = this.f(o + S_DURATION);
    into.startTime = this.f(o + S_START);
    into.stopTime = this.f(o + S_STOP);
    into.lastUsed = this.f(o + S_LAST_USED);
    into.utime = this.u(o + S_UTIME);
    into.stime = this.u(o + S_STIME);
    return into;
  }

  client(i: number, j: number): string { return getString(this.buf, this.slotOffset(i, j) + S_CLIENT, CLIENT_LEN); }
  request(i: number, j: number): string { return getString(this.buf, this.slotOffset(i, j) + S_REQUEST, REQUEST_LEN); }
  vhost(i: number, j: number): string { return getString(this.buf, this.slotOffset(i, j) + S_VHOST, VHOST_LEN); }
  protocol(i: number, j: number): string { return getString(this.buf, this.slotOffset(i, j) + S_PROTOCOL, PROTOCOL_LEN); }
}

function newProcessView(): ProcessView {
  return {
    pid: 0, generation: 0, quiescing: false, notAccepting: false, starting: false,
    connections: 0, keepAlive: 0, closing: 0, writing: 0, waitIo: 0,
  };
}

export function newSlotView(): SlotView {
  return {
    status: 0, connCount: 0, accessCount: 0, myAccessCount: 0, bytesServed: 0, myBytesServed: 0,
    connBytes: 0, duration: 0, startTime: 0, stopTime: 0, lastUsed: 0, utime: 0, stime: 0,
  };
}

// ---- this process's scoreboard -------------------------------------------------------------

/** The scoreboard this process updates; null when nothing reads it (mod_status not loaded),
 *  so that the connection's calls cost one null check. */
/**
 * The process model's own use of the table: each worker's open connections and whether it
 * accepts, in its child record (the fields mod_status shows as a process's connections and
 * "Accepting"), written here whether or not mod_status is loaded, so that a worker can see
 * the others' load (worker.ts keeps keep-alive connections spread over the workers with it).
 */
export class WorkerLoad {
  private readonly out = Buffer.alloc(4);
  private readonly head = Buffer.alloc(4);
  private readonly rec = Buffer.alloc(CHILD_SIZE);
  private lastConnections = -1;
  private lastAccepting: boolean | undefined;

  private constructor(private readonly fd: number, private readonly threadLimit: number, readonly child: number) {}

  /** The table the parent named in the environment (PLUME_SCOREBOARD, PLUME_CHILD_SLOT);
   *  null without one, or when it cannot be opened for writing. */
  static fromEnv(): WorkerLoad | null {
    const file = process.env['PLUME_SCOREBOARD'];
    const slot = Number(process.env['PLUME_CHILD_SLOT']);
    if (file === undefined || file === '' || !Number.isInteger(slot) || slot < 0) return null;
    let fd: number;
    try { fd = fs.openSync(file, 'r+'); } catch { return null; }
    const head = Buffer.alloc(HEADER_SIZE);
    try {
      fs.readSync(fd, head, 0, HEADER_SIZE, 0);
    } catch {
      fs.closeSync(fd);
      return null;
    }
    if (head.readUInt32LE(H_MAGIC) !== MAGIC || head.readUInt32LE(H_VERSION) !== VERSION || slot >= head.readUInt32LE(H_SERVER_LIMIT)) {
      fs.closeSync(fd);
      return null;
    }
    return new WorkerLoad(fd, head.readUInt32LE(H_THREAD_LIMIT), slot);
  }

  /** Writes this worker's figures where they changed. */
  publish(connections: number, accepting: boolean): void {
    const at = childOffset(this.threadLimit, this.child);
    try {
      if (connections !== this.lastConnections) {
        this.out.writeUInt32LE(connections, 0);
        fs.writeSync(this.fd, this.out, 0, 4, at + C_W_CONNECTIONS);
        this.lastConnections = connections;
      }
      if (accepting !== this.lastAccepting) {
        this.out.writeUInt8(accepting ? 0 : 1, 0);
        fs.writeSync(this.fd, this.out, 0, 1, at + C_W_NOT_ACCEPTING);
        this.lastAccepting = accepting;
      }
    } catch { /* the table is gone (the parent stopped): nothing to balance */ }
  }

  /** The other running workers: how many, their open connections, how many accept. */
  others(): { workers: number; connections: number; accepting: number } {
    const r = { workers: 0, connections: 0, accepting: 0 };
    try {
      fs.readSync(this.fd, this.head, 0, 4, H_CHILDREN);
      const children = this.head.readUInt32LE(0);
      const ready = CHILD_STATES.indexOf('ready');
      for (let i = 0; i < children; i++) {
        if (i === this.child) continue;
        const rec = this.rec;
        if (fs.readSync(this.fd, rec, 0, CHILD_SIZE, childOffset(this.threadLimit, i)) < CHILD_SIZE) continue;
        if (rec.readUInt8(C_STATE) !== ready || rec.readUInt32LE(C_PID) === 0) continue;
        if (rec.readUInt8(C_W_QUIESCING) === 1) continue;
        r.workers++;
        r.connections += rec.readUInt32LE(C_W_CONNECTIONS);
        if (rec.readUInt8(C_W_NOT_ACCEPTING) === 0) r.accepting++;
      }
    } catch { /* as none */ }
    return r;
  }

  close(): void {
    try { fs.closeSync(this.fd); } catch { /* closed */ }
  }
}

export let scoreboard: WorkerScoreboard | null = null;

/** In-process tables (-X), one per configuration file, kept across reloads. */
const inProcess = new Map<string, { parent: Parent; worker: WorkerScoreboard }>();

/** The worker side of the seam: attaches this process to the table its parent made, named
 *  by PLUME_SCOREBOARD / PLUME_CHILD_SLOT / PLUME_GENERATION. Returns false without them. */
export function attachScoreboardFromEnv(ctx: ConfigContext): boolean {
  const file = process.env['PLUME_SCOREBOARD'];
  const slot = Number(process.env['PLUME_CHILD_SLOT']);
  const generation = Number(process.env['PLUME_GENERATION'] ?? '0');
  if (file === undefined || file === '' || !Number.isInteger(slot) || slot < 0) return false;
  if (scoreboard !== null && scoreboard.child === slot) { configure(scoreboard, ctx); return true; }
  let fd: number;
  try {
    fd = fs.openSync(file, 'r+');
  } catch {
    // Not ours to write (the parent could not hand it to User/Group): this worker keeps a
    // table of its own.
    return false;
  }
  const head = Buffer.alloc(HEADER_SIZE);
  fs.readSync(fd, head, 0, HEADER_SIZE, 0);
  if (head.readUInt32LE(H_MAGIC) !== MAGIC || head.readUInt32LE(H_VERSION) !== VERSION) {
    fs.closeSync(fd);
    return false;
  }
  const image = new ScoreboardImage(head);
  const g = image.geometry;
  if (slot >= g.serverLimit) { fs.closeSync(fd); return false; }
  const storage = new FileStorage(fd);
  const w = new WorkerScoreboard(g, slot, Number.isInteger(generation) ? generation : 0, storage, true);
  // Only this child slot's record and request slots: the whole table can be megabytes.
  const block = Buffer.alloc(CHILD_SIZE + g.threadLimit * SLOT_SIZE);
  const got = fs.readSync(fd, block, 0, block.length, childOffset(g.threadLimit, slot));
  if (got < block.length) block.fill(0, got);
  w.load(block, 0);
  configure(w, ctx);
  w.start();
  scoreboard = w;
  // A worker that retires exits right after its last response: what it counted goes out first.
  process.once('exit', () => { if (scoreboard === w) w.flush(); });
  return true;
}

/** One process serving (-X): the table lives in memory, this process in child slot 0. */
export function attachInProcess(ctx: ConfigContext): WorkerScoreboard {
  const key = `${ctx.serverRoot}\0${ctx.options.configFile}`;
  let t = inProcess.get(key);
  const g = scoreboardGeometry(ctx);
  const p = t?.parent.geometry;
  if (p !== undefined && (p.serverLimit !== g.serverLimit || p.threadLimit !== g.threadLimit || p.threadsPerChild !== g.threadsPerChild || p.maxServers !== g.maxServers)) {
    // A restart into another shape starts a new table.
    t = undefined;
  }
  if (t === undefined) {
    const parent = createScoreboard(ctx, { inMemory: true }) as Parent;
    parent.setChild(0, { pid: process.pid, generation: 0, state: 'ready' });
    const worker = new WorkerScoreboard(parent.geometry, 0, 0, parent.storage, false);
    worker.start();
    t = { parent, worker };
    inProcess.set(key, t);
  } else {
    // A restart of the single process: the generations go up, the counters stay.
    const gen = t.parent.newGeneration('graceful');
    t.parent.setChild(0, { pid: process.pid, generation: gen, state: 'ready' });
    t.worker.generation = gen;
  }
  configure(t.worker, ctx);
  scoreboard = t.worker;
  return t.worker;
}

function configure(w: WorkerScoreboard, ctx: ConfigContext): void {
  const g = globals(ctx);
  w.extended = g.extendedStatus ?? true;
  w.requestTail = g.seeRequestTail;
}

/** Stops updating (the configuration that read the table is gone). */
export function detachScoreboard(): void {
  const w = scoreboard;
  scoreboard = null;
  if (w === null) return;
  for (const t of inProcess.values()) if (t.worker === w) return;
  w.detach();
}
