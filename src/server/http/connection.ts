// One client connection, as httpd's ap_read_request and HTTP_IN filter handle it: lines read
// with ap_rgetline's limits (LimitRequestLine, LimitRequestFieldSize, CRLF under Strict),
// the request line answered at once when bad, headers (obs-fold, LimitRequestFields),
// framing, Host and Expect, request bodies (Content-Length or chunked, LimitRequestBody,
// 100 Continue), timeouts, pipelining, keep-alive and a lingering close.

import { noteRead, readDone } from '../request/stat-cache.js';
import { kept } from '../../engine/kept-shapes.js';
import type { Transport } from './tcp-stream.js';
import { streamFileRange } from './file-cache.js';
import type { Runtime } from '../runtime.js';
import { Request, type ConnRec, type RequestBody } from '../request/request.js';
import type { Wire } from './wire.js';
import type { ConnectionTap } from '../connection-tap.js';

/** httpd's usual body read (HUGE_STRING_LEN), as a connection filter sees it asked. */
const TAP_READ = 8192;
import type { ServerRec } from '../server-rec.js';
import { die } from '../request/lifecycle.js';
import { runAll } from '../hooks.js';
import { OK, type MaybePromise } from '../module.js';
import { FilterError } from '../filters.js';
import { nowMicros } from '../log/time.js';
import { serveReadRequest, requestFailed } from './serve-read.js';
import { markLengthUnknown } from './keepalive.js';
import { DEFAULT_LIMIT_REQUEST_BODY } from './http-core.js';
import {
  type RequestTarget, newRequestTarget, parseRequestLine, fixHostname, fieldNameLen, isTokenChar,
  parseStrictLength, isChunked, parseChunkSize, LOG_NAME_MAX_LEN, APR_EINVAL, APR_ENOSPC, APR_EGENERAL,
} from './protocol.js';
import { coreServer, coreDir } from '../core/config.js';
import { APLOG_DEBUG, APLOG_INFO, APLOG_WARNING, APLOG_ERR } from '../log/levels.js';
import { scoreboard, type ScoreEntry } from '../../mpm/scoreboard.js';
import { readShared } from './accept.js';
import { resumeOptimisingCompiler } from '../../engine/compiler.js';
import { directProtocols, switchProtocol, PROTOCOL_HTTP1, type ProtocolConn, type SwitchableConn, type TakenTransport } from './protocols.js';

/** ap_rgetline outcomes. */
const LN_OK = 0;
const LN_MORE = 1;
const LN_NOSPC = 2;
const LN_INVAL = 3;
const LN_EOF = 4;
const LN_TIMEUP = 5;
/** DEFAULT_LIMIT_BLANK_LINES: empty lines tolerated before a request line. */
const DEFAULT_LIMIT_BLANK_LINES = 10;
/**
 * The most one line read takes in: the core input filter splits lines of up to
 * HUGE_STRING_LEN (8192) bytes from socket reads of APR_BUCKET_BUFF_SIZE (8000),
 * so a read without LF ends after two socket reads, 16000 bytes.
 */
const GETLINE_READ_MAX = 16000;
/** Unread input kept in memory before the socket is paused. */
const READ_AHEAD_MAX = 256 * 1024;
/** Lingering close: how long a closing connection waits for the client to go. */
const LINGER_MS = 2000;
/** What the connection's one timer is waiting for. */
/** The longest request head a connection remembers (see HttpConnection.lastHead). */
const HEAD_MEMO_MAX = 4096;

/** What parsing a request head set: the request line's fields, the target, the headers. */
interface ParsedHead {
  readonly theRequest: string;
  readonly method: string;
  readonly protoNum: number;
  readonly protocol: string;
  readonly headerOnly: boolean;
  readonly unparsedUri: string;
  readonly uri: string;
  readonly args: string | undefined;
  readonly hostname: string;
  readonly parsedPort: number;
  readonly target: Readonly<RequestTarget>;
  readonly headers: readonly string[];
}

function parsedHead(r: Request, t: RequestTarget): ParsedHead {
  return {
    theRequest: r.theRequest, method: r.method, protoNum: r.protoNum, protocol: r.protocol, headerOnly: r.headerOnly,
    unparsedUri: r.unparsedUri, uri: r.uri, args: r.args, hostname: r.hostname, parsedPort: r.parsedPort,
    target: { ...t }, headers: r.headersIn.snapshot(),
  };
}

/** A request whose head has the bytes of `p`'s gets what parsing them gave. */
function replayHead(r: Request, p: ParsedHead, t: RequestTarget): void {
  r.theRequest = p.theRequest;
  r.method = p.method;
  r.assbackwards = false;
  r.protoNum = p.protoNum;
  r.protocol = p.protocol;
  r.headerOnly = p.headerOnly;
  r.unparsedUri = p.unparsedUri;
  r.uri = p.uri;
  r.args = p.args;
  r.hostname = p.hostname;
  r.parsedPort = p.parsedPort;
  Object.assign(t, p.target);
  r.headersIn.restore(p.headers);
}

/** What a corked connection collects into one buffer; a larger write goes out as it is. */
const HOLD_MAX = 16384;
const TIMER_NONE = 0;
const TIMER_READ = 1;
const TIMER_KEEPALIVE = 2;
const TIMER_LINGER = 3;
/** The read stage mod_reqtimeout is timing (none: the core Timeout applies). */
const RT_NONE = 0;
const RT_HEADER = 1;
const RT_BODY = 2;
const EMPTY = Buffer.alloc(0);

/** A read stage's limits from mod_reqtimeout (httpd's reqtimeout_stage_t), per server. */
export interface ReadStage {
  /** Time allowed for the stage, ms (> 0). */
  readonly timeoutMs: number;
  /** How far MinRate may extend the stage, ms from its start (0: no ceiling). */
  readonly maxTimeoutMs: number;
  /** Time added per byte received, ms (0: no MinRate). */
  readonly msPerByte: number;
}

/** What mod_reqtimeout gives the connection (provider group "read_timeout"). */
export interface ReadTimeoutProvider {
  /** reqtimeout_init for a connection whose base server is `s`: undefined when the module
   *  does not time the connection, null when it does but sets no header limit. */
  header(s: ServerRec): ReadStage | null | undefined;
  /** The body stage of a request served by `s` (null: no limit). */
  body(s: ServerRec): ReadStage | null;
  /** A stage ran out of time: log it (httpd's AH01382). */
  timedOut(c: ConnRec, stage: 'header' | 'body'): void;
}

declare module '../module.js' {
  interface ProviderGroups {
    read_timeout: ReadTimeoutProvider;
  }
}

let nextConnId = 0;

/** The connections with a response waiting for the end of this event-loop turn.
 *
 * A response that is complete when its request has been handled (head and small body, held
 * by cork()/uncork()) is written once every socket epoll reported ready in this turn has been
 * read and served, in the check phase that follows: the client (wrk, a browser's many
 * connections) is then woken once for the turn's responses rather than once per response, and
 * the worker is not preempted by it in the middle of its turn. Measured with two workers on two
 * CPUs shared with wrk, 404 at 50 connections, six alternating rounds: 15 % more requests a
 * second and p99 better in five (2.4-3.3 ms against 2.9-4.4); at 500 connections p99 better
 * in every round (404: 13.7-17.9 ms against 17.0-18.6; server-status: 26.6-31.0 against
 * 32.2-39.8, and 15-30 % more requests a second).
 */
let turnOutput: HttpConnection[] = [];
let flushing: HttpConnection[] = [];
function flushTurnOutput(): void {
  // Output queued while these are written (a write's error handler, a drain) waits for the
  // next turn's flush.
  const list = turnOutput;
  turnOutput = flushing;
  flushing = list;
  for (let i = 0; i < list.length; i++) list[i]!.flushTurn();
  list.length = 0;
}

/** The client's byte stream handed to a tunnel (ConnRec.detach). */
export type { RawStream } from '../request/request.js';
import type { RawStream } from '../request/request.js';

export class HttpConnection implements ConnRec, Wire, SwitchableConn {
  readonly id = nextConnId++;
  readonly remoteIp: string;
  readonly remotePort: number;
  readonly localIp: string;
  readonly localPort: number;
  keepalives = 0;
  keepAlive = true;
  aborted = false;
  remoteHost: string | undefined = undefined;
  bytesIn = 0;
  bytesOut = 0;
  readonly notes = new Map<string, string>();
  readonly connConfig: unknown[] = [];
  /** This connection in the worker's scoreboard (mpm/scoreboard.ts; null without one). */
  score: ScoreEntry | null = null;
  baseServer: ServerRec;
  readonly wire: Wire = this;
  /** A connection-level filter watching this connection (mod_dumpio), or null. */
  readonly tap: ConnectionTap | null = null;
  /** Waiting for the next request of a kept-alive connection (the tap's view of it). */
  private tapWaiting = false;
  /** A request was read on this connection (the tap has something to show). */
  private tapSeen = false;
  private buf: Buffer = EMPTY;
  private busy = false;
  private closed = false;
  /** The client has closed its side. */
  private eof = false;
  /** The connection is closing: further input is dropped. */
  private ending = false;
  private timedOut = false;
  private timer: NodeJS.Timeout | null = null;
  private timerKind = TIMER_NONE;
  private bodyWaiter: (() => void) | null = null;
  private candidates: readonly ServerRec[];
  /** HttpProtocolOptions Strict (the default) of the server chosen by address. */
  private readonly strict: boolean;
  /** StrictHostCheck of the server chosen by address. */
  private readonly strictHost: boolean;
  /** The last line read by getLine and where the next one starts. */
  private lnText = '';
  private lnNext = 0;
  /** Where a line without LF went over its limit, and the buffer length then. */
  private overflowFrom = -1;
  private overflowAt = 0;
  /** What ap_parse_uri found in the request target of the current request. */
  private readonly target: RequestTarget = newRequestTarget();
  /** The bytes of the last request head read whole and well formed on this connection (its
   *  request line through the empty line), and what parsing it gave: the next request with
   *  the same bytes (a client repeating itself on a kept-alive connection) takes that answer
   *  instead of parsing again. Parsing has no side effect but these fields when it succeeds. */
  private lastHead: Buffer | null = null;
  private lastParse: ParsedHead | null = null;
  /** mod_reqtimeout on this connection (null when not loaded or disabled for the base
   *  server), its header stage, and the stage being timed: an absolute deadline extended by
   *  MinRate up to a ceiling, and the end of the current wait (when the timer really fires;
   *  it is re-armed lazily, never per chunk). */
  private readonly rtp: ReadTimeoutProvider | null = null;
  private readonly rtHeader: ReadStage | null = null;
  private rtStage = RT_NONE;
  private rtDeadline = 0;
  private rtMax = 0;
  private rtPerByte = 0;
  private rtCoreMs = 0;
  private rtWaitEnd = 0;
  /** When the pending timer fires (0: unknown). */
  private timerAt = 0;
  /** The protocol the connection was handed to (ALPN, Upgrade, a preface), or null while it
   *  speaks HTTP/1.1 here; from then on this object only tracks the socket. */
  private switched: string | null = null;
  /** What the switched protocol does on a graceful stop (an HTTP/2 GOAWAY). */
  private onGraceful: (() => void) | null = null;
  /** A preface that may open the connection in another protocol (H2Direct), looked for in
   *  the first bytes of the first request; null when none may. */
  private direct: { readonly protocol: string; readonly preface: Buffer } | null = null;

  constructor(private readonly socket: Transport, private readonly rt: Runtime) {
    this.remoteIp = normIp(socket.remoteAddress ?? '');
    this.remotePort = socket.remotePort ?? 0;
    this.localIp = normIp(socket.localAddress ?? '');
    this.localPort = socket.localPort ?? 0;
    this.candidates = rt.vhosts.candidates(this.localIp, this.localPort);
    this.baseServer = this.candidates[0] ?? rt.mainServer;
    const baseConf = coreServer(this.baseServer);
    this.strict = baseConf.strictProtocol !== false;
    this.strictHost = baseConf.strictHostCheck === true;
    socket.setNoDelay(true);
    // The first connection a process serves turns V8's optimising compiler on (off since
    // startup: see src/engine/compiler.ts); from then on this is one test of a boolean.
    resumeOptimisingCompiler();
    // A client may half-close after its request and still read the answer.
    socket.allowHalfOpen = true;
    const reader = (d: Buffer): void => this.onData(d);
    if (!readShared(socket, reader)) socket.on('data', reader);
    socket.on('end', () => this.onEnd());
    socket.on('error', () => { this.aborted = true; });
    socket.on('close', () => { this.closed = true; this.aborted = true; this.dropTimer(); this.bodyWaiter?.(); this.drainWaiters(); scoreboard?.connClosed(this); kept.connection = this; });
    socket.on('drain', () => this.drainWaiters());
    scoreboard?.connOpened(this);
    for (const t of rt.connectionTaps) {
      const tap = t(this);
      if (tap !== null) { this.tap = tap; break; }
    }
    const rtp = rt.ctx.provider('read_timeout', 'reqtimeout');
    const header = rtp?.header(this.baseServer);
    if (rtp !== undefined && header !== undefined) {
      this.rtp = rtp;
      this.rtHeader = header;
    }
    // httpd starts timing when it first reads; with Linux's accept filter that is when the
    // first bytes arrived, here it is at once (DIFFERENCE: see docs/differences.md).
    if (this.rtHeader !== null) this.rtStart(this.rtHeader, RT_HEADER, this.baseServer, true);
    else this.armTimer(this.baseServer.timeout * 1000, TIMER_READ);
    if (rt.protocolSwitching) {
      // ALPN chose another protocol during the TLS handshake: it takes the connection once
      // the connection record is set up (the layer's init runs right after this).
      const alpn = (socket as { alpnProtocol?: string | false }).alpnProtocol;
      if (typeof alpn === 'string' && alpn !== PROTOCOL_HTTP1) queueMicrotask(() => { if (!this.closed) switchProtocol(rt.ctx, this, null, this.baseServer, alpn); });
      else this.direct = directProtocols(rt.ctx, this.protocolConn, this.baseServer);
    }
  }

  // ---- protocol switching (protocols.ts) --------------------------------------------------
  get runtime(): Runtime { return this.rt; }
  get protocolConn(): ProtocolConn {
    const t = this.socket as { getProtocol?: () => string | null; getCipher?: () => { name: string } | undefined };
    const tls = typeof t.getProtocol === 'function' ? { protocol: t.getProtocol() ?? '', cipher: t.getCipher?.()?.name ?? '' } : null;
    return { tls, protocol: this.switched ?? PROTOCOL_HTTP1 };
  }
  /** HTTP/1.1 stops here: the transport and the input not consumed go to another protocol. */
  takeOver(): TakenTransport | null {
    if (this.switched !== null || this.closed || this.socket.destroyed) return null;
    this.switched = '';
    this.dropTimer();
    this.busy = true;
    const pending = this.buf;
    this.buf = EMPTY;
    return { transport: this.socket, pending };
  }
  /** The protocol that took the connection, and what it does on a graceful stop. */
  switchedTo(protocol: string, graceful: () => void): void {
    this.switched = protocol;
    this.onGraceful = graceful;
  }

  /** A tunnel's reader once detach() handed the stream over (mod_proxy's Upgrade). */
  private tunnelReader: ((d: Buffer) => void) | null = null;

  detach(): RawStream {
    this.dropTimer();
    const head = this.buf;
    this.buf = EMPTY;
    this.keepAlive = false;
    const sock = this.socket;
    let queued: Buffer[] = [];
    this.tunnelReader = (d) => { queued.push(d); };
    return {
      head,
      write: (d) => { this.bytesOut += d.length; return sock.write(d); },
      end: () => { sock.end(); },
      destroy: () => { sock.destroy(); },
      pause: () => { sock.pause(); },
      resume: () => { sock.resume(); },
      onData: (fn) => {
        const q = queued; queued = [];
        this.tunnelReader = (d) => { this.bytesIn += d.length; fn(d); };
        for (const d of q) fn(d);
      },
      onEnd: (fn) => { sock.on('end', fn); },
      onClose: (fn) => { sock.on('close', fn); },
      onDrain: (fn) => { sock.on('drain', fn); },
      get destroyed() { return sock.destroyed; },
    };
  }

  // ---- process model (src/mpm/worker.ts) ----------------------------------------------------
  /** Waiting for the next request of a kept-alive connection (what event's listener holds
   *  without a worker thread). */
  get idleKeepAlive(): boolean { return !this.busy && this.timerKind === TIMER_KEEPALIVE && this.buf.length === 0; }
  /** In the lingering close (mod_status's "closing" connections). */
  get lingering(): boolean { return this.timerKind === TIMER_LINGER; }
  /** A graceful stop of this worker: the response being served is the connection's last
   *  (Connection: close); a connection waiting between requests is closed now. */
  closeGracefully(): void {
    if (this.switched !== null) { this.onGraceful?.(); return; }
    this.keepAlive = false;
    if (this.idleKeepAlive) this.endConnection();
  }

  // ---- Wire ----------------------------------------------------------------------------
  get destroyed(): boolean { return this.closed || this.socket.destroyed; }
  write(data: Buffer | string, encoding: BufferEncoding = 'latin1'): boolean {
    if (this.destroyed) return true;
    if (this.corked > 0) {
      // Small latin1 strings and buffers are collected and leave as one buffer at uncork().
      if ((typeof data !== 'string' || encoding === 'latin1') && this.heldBytes + data.length <= HOLD_MAX) {
        this.held.push(data);
        this.heldBytes += data.length;
        return true;
      }
      this.release();
    }
    this.flushTurn();
    return typeof data === 'string' ? this.socket.write(data, encoding) : this.socket.write(data);
  }
  /** Writes collected while corked, and their total length. */
  private held: (Buffer | string)[] = [];
  private heldBytes = 0;
  private corked = 0;
  private waiters: (() => void)[] = [];
  drain(): Promise<void> {
    if (this.destroyed || !this.socket.writableNeedDrain) return Promise.resolve();
    return new Promise((res) => this.waiters.push(res));
  }
  private drainWaiters(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  sendFile(path: string, start: number, length: number, sendfile = false): Promise<void> {
    // A file cut short under us leaves the response incomplete: drop the connection.
    return streamFileRange(this, path, start, length, sendfile, () => this.socket.destroy());
  }
  /** A response's head and a small body leave in one write() of one buffer: cheaper than
   *  the socket's own cork (a writev of several chunks, a string among them). */
  cork(): void { this.corked++; }
  uncork(): void {
    if (this.corked === 0) return; // released early by endConnection
    if (--this.corked === 0 && this.held.length > 0) this.release();
  }
  private release(): void {
    const held = this.held;
    const n = held.length;
    if (n === 0) return;
    let out: Buffer | string;
    if (n === 1) out = held[0]!;
    else {
      out = Buffer.allocUnsafe(this.heldBytes);
      let at = 0;
      for (let i = 0; i < n; i++) {
        const d = held[i]!;
        at += typeof d === 'string' ? out.write(d, at, 'latin1') : d.copy(out, at);
      }
    }
    this.held = [];
    this.heldBytes = 0;
    if (this.destroyed) return;
    if (this.corked > 0) {
      // A write too big to hold: what was held goes first, at once.
      this.flushTurn();
      this.send(out);
      return;
    }
    // The end of a response's head and small body: sent with the turn's other responses.
    this.flushTurn();
    this.turnOut = out;
    turnOutput.push(this);
    if (turnOutput.length === 1) setImmediate(flushTurnOutput);
  }

  /** A response finished during this event-loop turn, written when the turn's reads are all
   *  handled (flushTurnOutput); anything else written to the socket before then follows it. */
  private turnOut: Buffer | string | null = null;
  flushTurn(): void {
    const out = this.turnOut;
    if (out === null) return;
    this.turnOut = null;
    if (!this.destroyed) this.send(out);
  }
  private send(out: Buffer | string): void {
    if (typeof out === 'string') this.socket.write(out, 'latin1'); else this.socket.write(out);
  }

  // ---- timers -----------------------------------------------------------------------------
  // One Timeout object per connection, re-armed with refresh() (cheaper than a new timer per
  // request); clearing only disarms it, and a disarmed timer that fires does nothing.
  private timerMs = 0;
  private armTimer(ms: number, kind: number): void {
    if (ms <= 0) { this.timerKind = TIMER_NONE; return; }
    this.timerKind = kind;
    this.timerAt = 0;
    if (this.timer !== null && this.timerMs === ms) { this.timer.refresh(); return; }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerMs = ms;
    this.timer = setTimeout(() => { if (this.timerKind !== TIMER_NONE) this.onTimeout(); }, ms);
  }
  private clearTimer(): void {
    this.timerKind = TIMER_NONE;
  }
  private dropTimer(): void {
    this.timerKind = TIMER_NONE;
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
  }
  private onTimeout(): void {
    if (this.switched !== null) return;
    const kind = this.timerKind;
    this.timer = null;
    this.timerKind = TIMER_NONE;
    if (kind === TIMER_READ && this.rtStage !== RT_NONE) {
      // The stage's wait was extended since the timer was set: wait for the rest.
      const now = Date.now();
      if (now < this.rtWaitEnd) { this.armUntil(this.rtWaitEnd, now); return; }
      this.rtExpire();
    }
    if (kind !== TIMER_READ) {
      // Idle between requests, or done lingering: close (httpd logs nothing at warn).
      this.socket.destroy();
      return;
    }
    this.readTimedOut();
  }

  /** Timeout waiting for the client: a request whose headers are incomplete gets 408,
   *  a body read fails with 408, a partial request line is dropped. */
  private readTimedOut(): void {
    this.timedOut = true;
    if (this.bodyWaiter) { const w = this.bodyWaiter; this.bodyWaiter = null; w(); return; }
    if (!this.busy) this.tryRequest();
    else this.socket.destroy();
  }

  // ---- mod_reqtimeout's stages (the reqtimeout input filter) ----------------------------
  // httpd checks the time left whenever a read starts or data arrives: none left is a
  // timeout (even with data there); otherwise it waits that long (at least 1 s, at most the
  // core Timeout) for more. Data received extends the deadline by MinRate up to the ceiling.

  /** A stage starts (its first read): the deadline, and for the header stage the first wait. */
  private rtStart(stage: ReadStage, kind: number, s: ServerRec, arm: boolean): number {
    const now = Date.now();
    this.rtStage = kind;
    this.rtDeadline = now + stage.timeoutMs;
    this.rtMax = stage.maxTimeoutMs > 0 ? now + stage.maxTimeoutMs : 0;
    this.rtPerByte = stage.msPerByte;
    this.rtCoreMs = s.timeout * 1000;
    if (arm) this.rtWait(now);
    return now;
  }

  /** Sets the next wait from the time left; false when none is left. */
  private rtWait(now: number): boolean {
    const left = this.rtDeadline - now;
    if (left <= 0) return false;
    let ms = left < 1000 ? 1000 : left;
    if (this.rtCoreMs > 0 && ms > this.rtCoreMs) ms = this.rtCoreMs;
    this.rtWaitEnd = now + ms;
    this.armUntil(this.rtWaitEnd, now);
    return true;
  }

  /** MinRate: `n` bytes received extend the deadline, up to the ceiling. */
  private rtExtend(n: number): void {
    if (this.rtPerByte === 0) return;
    const d = this.rtDeadline + n * this.rtPerByte;
    this.rtDeadline = this.rtMax > 0 && d > this.rtMax ? this.rtMax : d;
  }

  /** The read timer fires at `at`: a timer already due no later is kept (it re-arms itself
   *  for the rest when it fires), so data arriving never costs a timer operation. */
  private armUntil(at: number, now: number): void {
    this.timerKind = TIMER_READ;
    if (this.timer !== null && this.timerAt > now && this.timerAt <= at) return;
    if (this.timer !== null) clearTimeout(this.timer);
    // Node's timers hold at most 2^31 - 1 ms; a longer wait re-arms when it fires.
    this.timerMs = Math.min(at - now, 0x7fffffff);
    this.timerAt = now + this.timerMs;
    this.timer = setTimeout(() => { if (this.timerKind !== TIMER_NONE) this.onTimeout(); }, this.timerMs);
  }

  /** The stage is out of time: logged; the read in progress fails (APR_TIMEUP). */
  private rtExpire(): void {
    const stage = this.rtStage;
    this.rtStage = RT_NONE;
    this.timedOut = true;
    this.rtp!.timedOut(this, stage === RT_BODY ? 'body' : 'header');
  }

  /** The body stage starts with the request's first body read (reqtimeout_before_body: the
   *  limits of the server the request went to; none for CONNECT). */
  private rtStartBody(r: Request): void {
    if (this.rtp === null || r.method === 'CONNECT') return;
    const stage = this.rtp.body(r.server);
    if (stage !== null) this.rtStart(stage, RT_BODY, r.server, false);
  }

  // ---- reading requests -----------------------------------------------------------------
  private onData(d: Buffer): void {
    if (this.tunnelReader !== null) { this.tunnelReader(d); return; }
    noteRead();
    try { this.received(d); } finally { readDone(); }
  }

  private received(d: Buffer): void {
    if (this.ending || this.switched !== null) return;
    if (this.rtStage === RT_HEADER) {
      // Out of time when the data comes: httpd does not read it. Whole lines count before
      // the next wait is set (httpd reads line by line and each read starts afresh); the
      // bytes of an unfinished line count only after.
      const now = Date.now();
      if (this.rtDeadline <= now) { this.rtExpire(); this.readTimedOut(); return; }
      const lines = d.lastIndexOf(0x0a) + 1;
      this.rtExtend(lines);
      this.rtWait(now);
      this.rtExtend(d.length - lines);
    } else if (this.rtStage === RT_BODY) this.rtExtend(d.length);
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    if (this.bodyWaiter) { const w = this.bodyWaiter; this.bodyWaiter = null; w(); return; }
    if (!this.busy) { scoreboard?.reading(this); this.tryRequest(); }
    // Input nobody is reading yet (a body the handler has not asked for, pipelined
    // requests) stays in the kernel beyond this, as httpd leaves it unread.
    else if (this.buf.length > READ_AHEAD_MAX) this.socket.pause();
  }

  /** The client closed its side: what is buffered is all there will be. */
  private onEnd(): void {
    if (this.switched !== null) return;
    this.eof = true;
    if (this.bodyWaiter) { const w = this.bodyWaiter; this.bodyWaiter = null; w(); return; }
    if (!this.busy) this.tryRequest();
  }

  /**
   * Reads one protocol line at `from` as ap_rgetline does with a buffer of `n` bytes (the
   * limit + 2): sets lnText (without CRLF; truncated to n - 1 bytes on overflow, at a NUL
   * byte, or holding the bare LF when CRLF is required) and lnNext (where the next line
   * starts, or how far the read got). Returns an LN_* code.
   */
  private getLine(from: number, n: number, crlf: boolean): number {
    const buf = this.buf;
    const nl = buf.indexOf(0x0a, from);
    let end: number;
    let rv = LN_OK;
    if (nl < 0) {
      const have = buf.length - from;
      // Without LF the line overflows once more than n bytes are in (a final CR may still
      // be the start of the CRLF that ends a line one byte too long, which httpd accepts).
      // httpd takes in at most 8 KB per read and notices the overflow on the read after
      // the one that overflowed: only when more input is there or arrives (EOF instead
      // ends the line as incomplete).
      const over = have > n + 1 || (have === n + 1 && buf[buf.length - 1] !== 0x0d);
      if (over && (have > GETLINE_READ_MAX || (this.overflowFrom === from && buf.length > this.overflowAt))) {
        rv = LN_NOSPC;
        end = from + n - 1;
        this.lnNext = buf.length;
      } else {
        if (over && this.overflowFrom !== from) { this.overflowFrom = from; this.overflowAt = buf.length; }
        return this.eof ? LN_EOF : LN_MORE;
      }
    } else {
      this.lnNext = nl + 1;
      const cr = nl > from && buf[nl - 1] === 0x0d;
      const total = nl + 1 - from;
      if (total > n && !(total === n + 1 && cr)) { rv = LN_NOSPC; end = from + n - 1; }
      else if (cr) end = nl - 1;
      // A bare LF is refused only after some text (ap_rgetline_core): an empty line ended
      // by LF alone is an empty line, even under CRLF rules.
      else if (crlf && nl > from) { rv = LN_INVAL; end = nl + 1; }
      else end = nl;
    }
    let text = buf.toString('latin1', from, end);
    const z = text.indexOf('\0');
    if (z >= 0) {
      text = text.slice(0, z);
      if (rv === LN_OK) rv = LN_INVAL;
    }
    this.lnText = text;
    return rv;
  }

  /** Reads the next request when a whole request line (and its header block) is in. */
  private tryRequest(): void {
    if (this.busy || this.closed || this.ending) return;
    const s = this.baseServer;
    if (this.direct !== null && this.keepalives === 0 && this.preface()) return;
    const same = this.lastHead;
    if (same !== null && this.buf.length >= same.length && this.buf.compare(same, 0, same.length, 0, same.length) === 0) {
      const r = new Request(this.rt, this, s);
      r.perDirConfig = s.lookupDefaults;
      r.logLevel = s.logLevel;
      replayHead(r, this.lastParse!, this.target);
      this.begin(r, same.length);
      this.consume(same.length);
      this.handle(r);
      return;
    }
    const strict = this.strict;
    // read_request_line: up to ten empty lines before the request line are skipped.
    let pos = 0;
    let rv: number;
    for (let blanks = 0; ; blanks++) {
      rv = this.getLine(pos, s.limitRequestLine + 2, strict);
      if (rv !== LN_OK || this.lnText !== '' || blanks === DEFAULT_LIMIT_BLANK_LINES) break;
      pos = this.lnNext;
    }
    if (rv === LN_MORE) {
      // A timeout before a whole request line: close without an answer.
      if (this.timedOut) this.requestLineTimedOut(s);
      else if (this.buf.length > 0 && this.timerKind !== TIMER_READ) this.startReading(s);
      return;
    }
    if (rv === LN_EOF) {
      // Closed before a whole request line: nothing to answer, nothing to log.
      this.endConnection();
      return;
    }
    const lineText = this.lnText;
    const lineNext = this.lnNext;
    const r = new Request(this.rt, this, s);
    r.perDirConfig = s.lookupDefaults;
    r.logLevel = s.logLevel;
    if (rv !== LN_OK) {
      // The request line could not be read: 414 (too long) or 400 (bare LF, NUL byte).
      this.begin(r, lineNext);
      r.theRequest = lineText;
      r.protocol = 'HTTP/1.0';
      r.protoNum = 1000;
      if (rv === LN_NOSPC) {
        r.log('core', APLOG_INFO, `AH00565: request failed: client's request-line exceeds LimitRequestLine (longer than ${s.limitRequestLine})`);
        void this.dieUnusable(r, 414);
      } else {
        r.log('core', APLOG_DEBUG, 'AH00566: request failed: malformed request line');
        void this.dieUnusable(r, 400);
      }
      return;
    }
    // httpd parses the request line before reading any header: a bad one is answered at once.
    const st = parseRequestLine(r, lineText, strict, coreServer(s), this.target);
    if (st !== OK) {
      this.begin(r, lineNext);
      void this.dieUnusable(r, st);
      return;
    }
    if (r.assbackwards) {
      // HTTP/0.9: no headers follow.
      this.begin(r, lineNext);
      this.consume(lineNext);
      this.handle(r);
      return;
    }
    const lines: string[] = [];
    let headRv = LN_OK;
    let headEnd = lineNext;
    const nf = s.limitRequestFieldSize + 2;
    for (;;) {
      headRv = this.getLine(headEnd, nf, strict);
      if (headRv === LN_MORE) {
        if (this.timedOut) { headRv = LN_TIMEUP; lines.push(''); break; }
        if (this.timerKind !== TIMER_READ) this.startReading(s);
        return;
      }
      if (headRv === LN_EOF) { lines.push(''); break; }
      headEnd = this.lnNext;
      lines.push(this.lnText);
      if (headRv !== LN_OK || this.lnText === '') break;
    }
    this.begin(r, headEnd);
    const headBytes = headEnd <= HEAD_MEMO_MAX ? Buffer.from(this.buf.subarray(0, headEnd)) : null;
    this.consume(headEnd);
    const hs = this.readHeaders(r, lines, headRv);
    if (hs !== OK) {
      r.log('core', APLOG_DEBUG, 'AH00567: request failed: error reading the headers');
      void this.dieUnusable(r, hs);
      return;
    }
    this.lastHead = headBytes;
    this.lastParse = headBytes === null ? null : parsedHead(r, this.target);
    this.handle(r);
  }

  /** The first bytes of a request arrived after a keep-alive wait: the header stage (or the
   *  core Timeout) starts timing; what arrived already counts for MinRate. */
  private startReading(s: ServerRec): void {
    if (this.rtHeader === null) { this.armTimer(s.timeout * 1000, TIMER_READ); return; }
    const now = this.rtStart(this.rtHeader, RT_HEADER, s, false);
    const lines = this.buf.lastIndexOf(0x0a) + 1;
    this.rtExtend(lines);
    this.rtWait(now);
    this.rtExtend(this.buf.length - lines);
  }

  /** The request line did not arrive in time: nothing is answered; the first request of a
   *  connection is logged with status 408 and no request line ("-" 408 -), as httpd does. */
  private requestLineTimedOut(s: ServerRec): void {
    if (this.keepalives > 0) { this.endConnection(); return; }
    const r = new Request(this.rt, this, s);
    r.perDirConfig = s.lookupDefaults;
    r.logLevel = s.logLevel;
    this.begin(r, this.buf.length);
    // httpd's request has no request line, method or URI, which its log prints as "-";
    // plume's fields are strings, so they hold the dash.
    r.theRequest = '-';
    r.method = '-';
    r.uri = '-';
    r.protocol = 'HTTP/1.0';
    r.protoNum = 1000;
    r.status = 408;
    this.keepAlive = false;
    this.ending = true;
    this.buf = EMPTY;
    let logged: ReturnType<typeof runAll>;
    try {
      logged = runAll(this.rt.hooks.logTransaction, r);
    } catch {
      logged = OK;
    }
    if (logged instanceof Promise) logged.catch(() => undefined).finally(() => this.endConnection());
    else this.endConnection();
  }

  /** H2Direct: the first bytes of the connection are another protocol's preface (true: the
   *  connection went to it, or more bytes are needed to tell). */
  private preface(): boolean {
    const d = this.direct!;
    const p = d.preface;
    const n = Math.min(p.length, this.buf.length);
    if (this.buf.compare(p, 0, n, 0, n) !== 0) { this.direct = null; return false; }
    if (n < p.length) {
      if (this.eof) { this.direct = null; return false; }
      if (this.timerKind !== TIMER_READ) this.startReading(this.baseServer);
      return true;
    }
    this.direct = null;
    return switchProtocol(this.rt.ctx, this, null, this.baseServer, d.protocol);
  }

  /** Drops `n` bytes of buffered input (they belong to the request being served). */
  private consume(n: number): void {
    this.overflowFrom = -1;
    this.buf = n >= this.buf.length ? EMPTY : this.buf.subarray(n);
  }

  /** The request starts: its time, the bytes read for it so far (mod_logio). */
  private begin(r: Request, bytesRead: number): void {
    if (this.tap !== null) this.tapHead(bytesRead);
    this.busy = true;
    this.rtStage = RT_NONE;
    this.clearTimer();
    r.requestTime = Date.now();
    r.startMicros = nowMicros();
    this.bytesIn = bytesRead + this.carriedIn;
    this.carriedIn = 0;
    this.bytesOut = 0;
  }

  /** The request head as httpd reads it, one getline per line. */
  private tapHead(n: number): void {
    const tap = this.tap!;
    this.tapWaiting = false;
    this.tapSeen = true;
    const head = this.buf.subarray(0, Math.min(n, this.buf.length));
    let at = 0;
    while (at < head.length) {
      const nl = head.indexOf(0x0a, at);
      const end = nl < 0 ? head.length : nl + 1;
      tap.getline(head.subarray(at, end));
      at = end;
    }
  }

  /**
   * ap_get_mime_headers_core: header lines (the last one is the empty line, or the line
   * whose read failed with `lastRv`), obs-fold joined with a space, LimitRequestFields and
   * LimitRequestFieldSize, strict field syntax; repeated fields are merged with ", ".
   */
  private readHeaders(r: Request, lines: string[], lastRv: number): number {
    const s = r.server;
    let last: string | null = null;
    let fieldsRead = 0;
    let merged = false;
    const n = lines.length;
    for (let i = 0; i < n; i++) {
      let field = lines[i]!;
      if (i === n - 1 && lastRv !== LN_OK) {
        if (lastRv === LN_TIMEUP) return 408;
        if (r.wantsLog('core', APLOG_DEBUG)) {
          r.log('core', APLOG_DEBUG, `Failed to read request header line ${lastRv === LN_EOF ? '(null)' : field}`,
            lastRv === LN_EOF ? APR_EGENERAL : lastRv === LN_NOSPC ? APR_ENOSPC : APR_EINVAL);
        }
        if (lastRv === LN_NOSPC) {
          r.notes.set('error-notes', 'Size of a request header field exceeds server limit.');
          const name = field.slice(0, fieldNameLen(field));
          r.log('core', APLOG_INFO, `AH00561: Request header exceeds LimitRequestFieldSize${name ? ': ' : ''}${name}`);
        }
        return 400;
      }
      // Trailing blanks are dropped (keeping a lone one).
      let len = field.length;
      while (len > 1 && (field.charCodeAt(len - 1) === 0x20 || field.charCodeAt(len - 1) === 0x09)) len--;
      if (len !== field.length) field = field.slice(0, len);
      const c0 = field.charCodeAt(0);
      if (c0 === 0x20 || c0 === 0x09) {
        if (last === null) {
          r.log('core', APLOG_DEBUG, 'AH03442: Line folding encountered before first header line');
          return 400;
        }
        if (len === 1) {
          r.log('core', APLOG_DEBUG, 'AH03443: Empty folded line encountered');
          return 400;
        }
        let k = 1;
        while (k < len && (field.charCodeAt(k) === 0x20 || field.charCodeAt(k) === 0x09)) k++;
        const rest = field.slice(k);
        if (last.length + rest.length + 2 >= s.limitRequestFieldSize) {
          r.notes.set('error-notes', 'Size of a request header field exceeds server limit.');
          r.log('core', APLOG_INFO, `AH00562: Request header exceeds LimitRequestFieldSize after folding: ${last.slice(0, fieldNameLen(last))}`);
          return 400;
        }
        last = last + ' ' + rest;
        continue;
      }
      if (last !== null) {
        if (s.limitRequestFields && ++fieldsRead > s.limitRequestFields) {
          r.notes.set('error-notes', "The number of request header fields exceeds this server's limit.");
          r.log('core', APLOG_INFO, 'AH00563: Number of request headers exceeds LimitRequestFields');
          return 400;
        }
        const st = this.addField(r, last);
        if (st < 0) merged = true;
        else if (st !== OK) return st;
      }
      if (len === 0) break;
      last = field;
    }
    if (merged) {
      // LimitRequestFieldSize applies again to merged values.
      let bad: string | undefined;
      r.headersIn.forEach((name, value) => { if (bad === undefined && value.length > s.limitRequestFieldSize) bad = name; });
      if (bad !== undefined) {
        r.notes.set('error-notes', 'Size of a request header field exceeds server limit.');
        r.log('core', APLOG_INFO, `AH00560: Request header exceeds LimitRequestFieldSize after merging: ${bad.slice(0, fieldNameLen(bad))}`);
        return 400;
      }
    }
    return OK;
  }

  /** One "name: value" header line; OK, -1 when merged into an earlier field, or 400. */
  private addField(r: Request, line: string): number {
    if (this.strict) {
      let c = 0;
      while (c < line.length && isTokenChar(line.charCodeAt(c))) c++;
      if (c === 0 || line.charCodeAt(c) !== 0x3a) {
        r.log('core', APLOG_DEBUG, `AH02426: Request header field name is malformed: ${line.slice(0, LOG_NAME_MAX_LEN)}`);
        return 400;
      }
      let v = c + 1;
      while (line.charCodeAt(v) === 0x20 || line.charCodeAt(v) === 0x09) v++;
      const value = line.slice(v);
      for (let k = 0; k < value.length; k++) {
        const ch = value.charCodeAt(k);
        if ((ch < 0x20 && ch !== 0x09) || ch === 0x7f) {
          r.log('core', APLOG_DEBUG, `AH02427: Request header value is malformed: ${value.slice(0, LOG_NAME_MAX_LEN)}`);
          return 400;
        }
      }
      return this.storeField(r, line.slice(0, c), value);
    }
    const c = line.indexOf(':');
    if (c < 0) {
      r.log('core', APLOG_DEBUG, `AH00564: Request header field is missing ':' separator: ${line.slice(0, LOG_NAME_MAX_LEN)}`);
      return 400;
    }
    if (c === 0) {
      r.log('core', APLOG_DEBUG, 'AH03453: Request header field name was empty');
      return 400;
    }
    const name = line.slice(0, c);
    if (/[\t\n\v\f\r ]/.test(name)) {
      r.log('core', APLOG_DEBUG, 'AH03452: Request header field name presented invalid whitespace');
      return 400;
    }
    let v = c + 1;
    while (line.charCodeAt(v) === 0x20 || line.charCodeAt(v) === 0x09) v++;
    const value = line.slice(v);
    if (/[\n\v\f\r]/.test(value)) {
      r.log('core', APLOG_DEBUG, 'AH03451: Request header field value presented bad whitespace');
      return 400;
    }
    return this.storeField(r, name, value);
  }

  private storeField(r: Request, name: string, value: string): number {
    return r.headersIn.mergeFound(name, value) ? -1 : OK;
  }

  /** die_unusable_input: the rest of the input is dropped and the connection closes. */
  private async dieUnusable(r: Request, status: number): Promise<void> {
    this.keepAlive = false;
    this.ending = true;
    this.buf = EMPTY;
    r.status = status;
    try {
      await die(this.rt, r, status);
      await runAll(this.rt.hooks.logTransaction, r);
    } finally {
      this.endConnection();
    }
  }

  /** Answers an error found while reading the request (ap_read_request's die path); the
   *  connection closes afterwards whatever the response said. */
  private async dieBeforeHooks(r: Request, status: number): Promise<void> {
    r.status = status;
    try {
      await die(this.rt, r, status);
      await runAll(this.rt.hooks.logTransaction, r);
    } finally {
      this.endConnection();
    }
  }

  private bodyLimit(r: Request): number {
    return coreDir(r).limitRequestBody ?? DEFAULT_LIMIT_REQUEST_BODY;
  }

  /** Everything after the headers: framing, Host and Expect, post_read_request, then the
   *  request through the lifecycle. Synchronous until a step answers with a promise (no
   *  promise or microtask for a request served at once). */
  private handle(r: Request): void {
    r.headerOnly = r.method === 'HEAD';
    if (!r.assbackwards) {
      const st = this.setupBody(r);
      if (st !== OK) { void this.dieUnusable(r, st); return; }
    }
    const hs = this.checkRequestHeader(r);
    r.perDirConfig = r.server.lookupDefaults;
    r.logLevel = r.server.logLevel;
    if (hs !== OK) { void this.dieBeforeHooks(r, hs); return; }
    let served: MaybePromise<void>;
    try {
      served = this.serve(r);
    } catch (e) {
      served = this.serveFailed(r, e);
    }
    if (served instanceof Promise) {
      served.then(
        () => this.requestEnded(r),
        (e: unknown) => this.serveFailed(r, e).then(() => this.requestEnded(r)),
      );
      return;
    }
    this.requestEnded(r);
  }

  /** post_read_request, the URL path, the lifecycle, the body left over, the log. */
  private serve(r: Request): MaybePromise<void> {
    const done = serveReadRequest(this.rt, r, this.target.scheme);
    if (done instanceof Promise) return done.then(() => this.served(r));
    return this.served(r);
  }

  /** The response is out: the body nobody read is discarded, then the request is logged. */
  private served(r: Request): MaybePromise<void> {
    kept.request = r;
    // An HTTP/0.9 response ends with the connection.
    if (r.assbackwards) this.keepAlive = false;
    // Whatever of the body the handler did not read is discarded before the next request.
    if (r.body && !r.body.done && this.keepAlive) {
      return r.body.discard(this.bodyLimit(r)).then((d) => {
        if (d !== OK) this.keepAlive = false;
        return this.logRequest(r);
      });
    }
    return this.logRequest(r);
  }

  private logRequest(r: Request): MaybePromise<void> {
    let last: Request = r;
    while (last.next) last = last.next;
    const logged = runAll(this.rt.hooks.logTransaction, last);
    if (logged instanceof Promise) return logged.then(() => undefined);
    return undefined;
  }

  /** A step threw or failed: logged, and a 500 when nothing was sent yet. */
  private serveFailed(r: Request, e: unknown): Promise<void> {
    this.keepAlive = false;
    return requestFailed(this.rt, r, e);
  }

  /** The next request of a kept-alive connection, or the end of the connection. */
  private requestEnded(r: Request): void {
    if (this.switched !== null) return;
    this.rtStage = RT_NONE;
    if (this.tap !== null) {
      this.tap.endRequest();
      if (this.keepAlive && !this.destroyed) {
        this.tap.speculative(this.buf.subarray(0, 1));
        // Then httpd waits for the next request line with a getline read.
        this.tapWaiting = true;
      }
    }
    if (this.keepAlive && !this.destroyed && !(this.eof && this.buf.length === 0)) {
      if (this.buf.length) this.checkPipeline();
      if (!this.keepAlive) { this.endConnection(); return; }
      this.busy = false;
      if (this.socket.isPaused()) this.socket.resume();
      this.armTimer(r.server.keepAliveTimeout, TIMER_KEEPALIVE);
      // A pipelined request waits for the microtask queue: served here, a long pipeline
      // would nest one call per request.
      if (this.buf.length || this.eof) queueMicrotask(() => this.tryRequest());
    } else {
      this.endConnection();
    }
  }

  /** ap_check_pipeline on the input already here: blank lines ([CR]LF) after a request are
   *  consumed, up to 10, looking at them with speculative reads of 1 or 2 bytes. mod_logio
   *  counts every byte those reads return, the peeked ones too, for the next request (%I):
   *  a pipelined request shows one byte more than it has, two per CRLF before it more. */
  private checkPipeline(): void {
    let pos = 0;
    let counted = 0;
    const buf = this.buf;
    for (let blanks = 0; pos < buf.length; ) {
      counted += 1;
      const c = buf[pos];
      if (c === 0x0a) { counted += 1; pos += 1; }
      else if (c === 0x0d && pos + 1 < buf.length) {
        counted += 2;
        if (buf[pos + 1] !== 0x0a) break;
        counted += 2;
        pos += 2;
      } else break;
      if (++blanks > DEFAULT_LIMIT_BLANK_LINES) { this.keepAlive = false; break; }
    }
    if (pos) this.consume(pos);
    this.carriedIn = counted;
  }
  /** Bytes mod_logio counted for the next request before it began (checkPipeline). */
  private carriedIn = 0;

  private endConnection(): void {
    if (this.switched !== null) return;
    // DIFFERENCE: a connection that never sent a request is not shown (httpd shows its EOF
    // read and EOC): connection probes would fill the trace.
    if (this.tap !== null && !this.ending && this.tapSeen) {
      // A kept-alive connection the client closed: httpd's read for the next request met EOF.
      if (this.tapWaiting && this.eof) this.tap.getline(null);
      this.tapWaiting = false;
      this.tap.endConnection();
    }
    this.busy = true;
    this.ending = true;
    this.buf = EMPTY;
    if (this.socket.destroyed) { this.clearTimer(); return; }
    if (this.socket.isPaused()) this.socket.resume();
    // What the core output filter still holds (a response cut short, ap_proxy_backend_broke)
    // leaves before the end, as httpd writes what it set aside before closing.
    if (this.corked > 0) { this.corked = 0; this.release(); }
    this.flushTurn();
    this.socket.end();
    // Lingering close: give the client a moment to read the response, then drop it.
    this.armTimer(LINGER_MS, TIMER_LINGER);
  }

  /** ap_check_request_header: Host (vhost selection), the HTTP/1.1 Host rule, Expect. */
  private checkRequestHeader(r: Request): number {
    const host = r.headersIn.get('Host');
    let hostname: string | undefined;
    if (this.target.hostFromUri) {
      // The host of an absolute URI wins over the Host header, which is rewritten to it.
      hostname = fixHostname(r, undefined, this.strict);
      if (hostname === undefined) return 400;
      if (host !== undefined && this.strict) {
        const h = hostname.includes(':') ? `[${hostname}]` : hostname;
        const repl = this.target.portStr !== undefined ? `${h}:${this.target.portStr}` : h;
        r.headersIn.set('Host', repl);
        r.log('core', APLOG_DEBUG, `AH02417: Replacing host header '${host}' with host '${repl}' given in the request uri`);
      }
    } else if (host !== undefined) {
      hostname = fixHostname(r, host, this.strict);
      if (hostname === undefined) return 400;
      if (hostname === '') hostname = undefined;
    }
    r.hostname = hostname ?? '';
    if (this.strictHost && hostname !== undefined) {
      // StrictHostCheck (of the server chosen by address): the name must be one it knows.
      const s = this.rt.vhosts.match(this.candidates, hostname, this.localPort);
      if (s === undefined) {
        r.server = this.baseServer;
        if (this.candidates.length === 0) {
          r.log('core', APLOG_WARNING, `AH10156: Requested hostname '${hostname}' did not match any ServerName/ServerAlias in the global server configuration `);
        } else {
          r.log('core', APLOG_WARNING, `AH10157: Requested hostname '${hostname}' did not match any ServerName/ServerAlias in the matching virtual host (default vhost for current connection is ${this.baseServer.defnFile}:${this.baseServer.defnLine})`);
        }
        return 400;
      }
      r.server = s;
    } else if (r.hostname === '') {
      r.server = this.rt.vhosts.selectByPath(this.candidates, r.uri);
    } else {
      r.server = this.rt.vhosts.select(this.candidates, r.hostname, this.localPort);
    }
    if ((hostname === undefined && r.protoNum >= 1001) || (r.protoNum === 1001 && host === undefined)) {
      r.log('core', APLOG_DEBUG, `AH00569: client sent HTTP/1.1 request without hostname (see RFC2616 section 14.23): ${r.uri}`);
      return 400;
    }
    const expect = r.headersIn.get('Expect');
    if (expect !== undefined && expect !== '') {
      if (expect.toLowerCase() === '100-continue') r.expecting100 = true;
      else {
        r.log('core', APLOG_INFO, `AH00570: client sent an unrecognized expectation value of Expect: ${expect}`);
        return 417;
      }
    }
    return OK;
  }

  /** ap_process_request_internal's URL path normalisation and unescaping. */
  /** Content-Length and Transfer-Encoding (ap_read_request): the body's framing. */
  private setupBody(r: Request): number {
    const cl = r.headersIn.get('Content-Length');
    let length = 0;
    if (cl !== undefined) {
      length = parseStrictLength(cl);
      if (length < 0) {
        r.log('core', APLOG_DEBUG, `AH10242: client sent invalid Content-Length (${cl}): ${r.uri}`);
        return 400;
      }
    }
    const te = r.headersIn.get('Transfer-Encoding');
    if (te !== undefined) {
      if (!isChunked(te)) {
        r.log('core', APLOG_DEBUG, `AH02539: client sent unknown Transfer-Encoding (${te}): ${r.uri}`);
        return 400;
      }
      if (cl !== undefined) {
        r.headersIn.unset('Content-Length');
        this.keepAlive = false;
      }
      r.body = this.makeBody(r, -1, true);
      return OK;
    }
    if (length > 0) r.body = this.makeBody(r, length, false);
    return OK;
  }

  private waitData(): Promise<void> {
    if (this.closed || this.eof) return Promise.resolve();
    if (this.socket.isPaused()) this.socket.resume();
    return new Promise((res) => { this.bodyWaiter = res; });
  }

  /**
   * The request body as httpd's HTTP_IN filter reads it: Content-Length or chunked, the
   * LimitRequestBody check (413), chunk syntax errors (400), and the interim 100 Continue
   * when the client waits for it. An error ends keep-alive and the error response that
   * follows carries no Content-Length (httpd's bail_out_on_error).
   */
  private makeBody(r: Request, length: number, chunkedBody: boolean): RequestBody {
    const conn = this;
    let done = false;
    let failed = 0;
    const fail = (status: number): number => {
      failed = status;
      done = true;
      conn.keepAlive = false;
      markLengthUnknown(r);
      return status;
    };
    const more = async (): Promise<boolean> => {
      if (conn.closed || conn.eof || conn.timedOut) return false;
      if (conn.rtStage !== RT_BODY) conn.armTimer(r.server.timeout * 1000, TIMER_READ);
      else if (!conn.rtWait(Date.now())) { conn.rtExpire(); return false; }
      await conn.waitData();
      conn.clearTimer();
      return !conn.timedOut;
    };
    // The input ended or timed out: an ordinary error (the response keeps its length).
    const cut = (): number => stop(conn.timedOut ? 408 : 400);
    const stop = (status: number): number => {
      failed = status;
      done = true;
      conn.keepAlive = false;
      return status;
    };
    const continue100 = (): void => {
      if (r.expecting100 && r.protoNum >= 1001 && !r.headersSent) {
        conn.socket.write('HTTP/1.1 100 Continue\r\n\r\n');
        r.expecting100 = false;
      }
    };
    let started = false;
    // Where the reading stands: bytes left of a Content-Length body; for a chunked body the
    // size line comes next (chunkLeft -1) or a chunk of chunkLeft bytes.
    let left = length;
    let total = 0;
    /** The next piece of the body as it arrives (httpd's HTTP_IN filter, one read): null at
     *  its end, a status number when reading failed. */
    const next = async (limit: number): Promise<Buffer | null | number> => {
      if (failed) return failed;
      if (done) return null;
      if (!started) {
        started = true;
        conn.rtStartBody(r);
        // A body not read before an error response is not read at all (no 100 Continue).
        if ((r.status < 200 || r.status >= 300) && r.expecting100) { done = true; return null; }
        if (!chunkedBody && limit > 0 && length > limit) {
          r.log('http', APLOG_INFO, `AH01588: Requested content-length of ${length} is larger than the configured limit of ${limit}`);
          return fail(413);
        }
        continue100();
      }
      if (!chunkedBody) {
        if (left <= 0) { done = true; return null; }
        while (conn.buf.length === 0) {
          if (!(await more())) return cut();
        }
        const n = Math.min(left, conn.buf.length);
        const piece = conn.buf.subarray(0, n);
        if (conn.tap !== null) for (let o = 0; o < n; o += TAP_READ) conn.tap.readBytes(Math.min(left - o, TAP_READ), piece.subarray(o, Math.min(n, o + TAP_READ)));
        conn.consume(n);
        conn.bytesIn += n;
        left -= n;
        if (left === 0) done = true;
        return piece;
      }
      for (;;) {
        // chunk-size [ BWS ] [ ";" ext ] CRLF, the whole line (CRLF included) at most
        // LimitRequestFieldSize bytes: longer is 413, unless what came of it is already bad.
        const lineMax = r.server.limitRequestFieldSize;
        for (;;) {
          const nl = conn.buf.indexOf(0x0a);
          const len = nl >= 0 ? nl + 1 : conn.buf.length;
          if (len > lineMax) {
            const seen = conn.buf.toString('latin1', 0, Math.min(len, lineMax + 2)).replace(/\r?\n?$/, '');
            if (parseChunkSize(seen) === -1) {
              r.log('http', APLOG_INFO, 'AH01590: Error reading/parsing chunk  ', APR_EINVAL);
              return fail(400);
            }
            r.log('http', APLOG_INFO, 'AH01590: Error reading/parsing chunk (overflow) ', APR_ENOSPC);
            return fail(413);
          }
          if (nl >= 0 || !(await more())) break;
        }
        let rv = conn.getLine(0, lineMax + 2, true);
        while (rv === LN_MORE) {
          if (!(await more())) return cut();
          rv = conn.getLine(0, lineMax + 2, true);
        }
        if (rv === LN_EOF) return cut();
        conn.bytesIn += conn.lnNext;
        conn.consume(conn.lnNext);
        const size = rv === LN_OK ? parseChunkSize(conn.lnText) : -1;
        if (size === -2) {
          r.log('http', APLOG_INFO, 'AH01590: Error reading/parsing chunk (overflow) ', APR_ENOSPC);
          return fail(413);
        }
        if (size < 0) {
          r.log('http', APLOG_INFO, 'AH01590: Error reading/parsing chunk  ', APR_EINVAL);
          return fail(400);
        }
        if (size === 0) {
          // Trailer fields up to the empty line, checked as header fields are (they are
          // not merged into the request: MergeTrailers is off).
          const trailers: string[] = [];
          let t: number;
          for (;;) {
            t = conn.getLine(0, r.server.limitRequestFieldSize + 2, conn.strict);
            while (t === LN_MORE) {
              if (!(await more())) { if (conn.timedOut) return cut(); t = LN_EOF; break; }
              t = conn.getLine(0, r.server.limitRequestFieldSize + 2, conn.strict);
            }
            if (t === LN_EOF) { trailers.push(''); break; }
            conn.bytesIn += conn.lnNext;
            conn.consume(conn.lnNext);
            trailers.push(conn.lnText);
            if (t !== LN_OK || conn.lnText === '') break;
          }
          if (trailers.length > 1 || t !== LN_OK) {
            const scratch = new Request(conn.rt, conn, r.server);
            scratch.perDirConfig = r.perDirConfig;
            scratch.logLevel = r.logLevel;
            const st = conn.readHeaders(scratch, trailers, t);
            if (st !== OK) {
              const notes = scratch.notes.get('error-notes');
              if (notes !== undefined) r.notes.set('error-notes', notes);
              r.log('http', APLOG_INFO, `AH02656: Error while reading HTTP trailer: ${st}${notes ? ': ' + notes : ''}`);
              return stop(400);
            }
          }
          done = true;
          return null;
        }
        total += size;
        if (limit > 0 && total > limit) {
          r.log('http', APLOG_INFO, `AH01591: Read content length of ${total} is larger than the configured limit of ${limit}`);
          return fail(413);
        }
        while (conn.buf.length < size + 2) {
          if (!(await more())) return cut();
        }
        if (conn.buf[size] !== 0x0d || conn.buf[size + 1] !== 0x0a) {
          r.log('http', APLOG_INFO, 'AH01590: Error reading/parsing chunk  ', APR_EINVAL);
          return fail(400);
        }
        const piece = conn.buf.subarray(0, size);
        conn.consume(size + 2);
        conn.bytesIn += size + 2;
        return piece;
      }
    };
    const take = async (limit: number, keep: boolean): Promise<Buffer | number> => {
      const parts: Buffer[] = [];
      for (;;) {
        const v = await next(limit);
        if (typeof v === 'number') return v;
        if (v === null) break;
        if (keep) parts.push(v);
      }
      return keep ? (parts.length === 1 ? parts[0]! : Buffer.concat(parts)) : EMPTY;
    };
    return {
      length, chunked: chunkedBody,
      get done() { return done; },
      async next(limit: number): Promise<Buffer | null> {
        const v = await next(limit);
        if (typeof v === 'number') throw new FilterError(v);
        return v;
      },
      async read(limit: number): Promise<Buffer> {
        const v = await take(limit, true);
        if (typeof v === 'number') throw new FilterError(v);
        return v;
      },
      async discard(limit: number): Promise<number> {
        // ap_discard_request_body reads nothing on a connection that closes anyway.
        if (!conn.keepAlive && !failed) { done = true; return OK; }
        const v = await take(limit, false);
        return typeof v === 'number' ? v : OK;
      },
    };
  }
}

function normIp(ip: string): string {
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}
