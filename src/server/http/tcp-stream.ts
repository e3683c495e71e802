// A TCP (or unix-socket) connection driven through its libuv handle, without net.Socket: the
// connections the server accepts, and those the proxy makes to a backend (connectStream).
//
// Node's net.Socket is a Duplex stream: building one per connection (its readable and
// writable states, event emitter, async hooks) and tearing it down again cost more CPU than
// plume's whole request path for a small file, and its objects were the largest part of what
// a one-request connection left for the garbage collector. An HTTP connection uses little of
// it: the bytes read, writes with backpressure, a half-close, a close, and the peer's
// address. TcpStream does those directly on the TCP handle net.Server accepted (the object
// net.Socket itself wraps) with the stream calls Node's own net.Socket makes, so reads land
// in the process's shared read buffer and a response that fits the kernel's buffer is written
// in one system call with no request object kept.
//
// The handle's API is Node's internal stream_wrap (reached through process.binding, whose
// deprecation is documentation-only). Where it is not as expected, sockets are accepted as
// net.Sockets and everything works as before (streamWrap is null).

import type * as net from 'node:net';
import * as util from 'node:util';
import { kept } from '../../engine/kept-shapes.js';

/** A synchronous write's completion callback: never called (see TcpStream.write). */
function noCompletion(): void { /* the write completed at once */ }

/** Node's request objects for a write and a shutdown, and the state the C++ side reports. */
interface WriteReq {
  handle: StreamHandle;
  oncomplete: (status: number) => void;
  async: boolean;
  /** The buffer being written, kept alive until an asynchronous write completes. */
  buffer: Buffer | null;
}
interface ShutdownReq {
  handle: StreamHandle;
  oncomplete: (status: number) => void;
}
interface StreamWrapBinding {
  WriteWrap: new () => WriteReq;
  ShutdownWrap: new () => ShutdownReq;
  streamBaseState: Int32Array;
  kReadBytesOrError: number;
  kLastWriteWasAsync: number;
}

/** A connected stream handle (Node's TCPWrap or PipeWrap): the calls net.Socket makes on it. */
export interface StreamHandle {
  onread: () => void;
  readonly writeQueueSize: number;
  useUserBuffer(buf: Buffer): void;
  readStart(): number;
  readStop(): number;
  writeBuffer(req: WriteReq, data: Buffer): number;
  writeLatin1String(req: WriteReq, data: string): number;
  writeUtf8String(req: WriteReq, data: string): number;
  writeAsciiString(req: WriteReq, data: string): number;
  shutdown(req: ShutdownReq): number;
  close(callback: () => void): void;
  unref(): void;
}

/** A TCP connection's handle (Node's TCPWrap): a stream handle with the socket's calls. */
export interface TcpHandle extends StreamHandle {
  setNoDelay(on: boolean): number;
  setKeepAlive(on: boolean, delaySeconds: number): number;
  getpeername(out: AddressOut): number;
  getsockname(out: AddressOut): number;
}

/** Whether a stream handle is a TCP one (a unix socket's has no addresses or TCP options). */
function isTcp(h: StreamHandle): h is TcpHandle {
  return typeof (h as Partial<TcpHandle>).getpeername === 'function';
}

function loadStreamWrap(): StreamWrapBinding | null {
  try {
    const b = (process as unknown as { binding(name: string): Partial<StreamWrapBinding> }).binding('stream_wrap');
    if (typeof b.WriteWrap !== 'function' || typeof b.ShutdownWrap !== 'function' || !(b.streamBaseState instanceof Int32Array)
      || typeof b.kReadBytesOrError !== 'number' || typeof b.kLastWriteWasAsync !== 'number') return null;
    return b as StreamWrapBinding;
  } catch {
    return null;
  }
}

/** Node's stream internals; null: accept net.Sockets instead. */
export const streamWrap: StreamWrapBinding | null = process.env.PLUME_NET_SOCKET === '1' ? null : loadStreamWrap();

/** Whether a handle accepted by net.Server has the calls TcpStream makes. */
export function isTcpHandle(h: object): h is TcpHandle {
  const t = h as Partial<TcpHandle>;
  return typeof t.useUserBuffer === 'function' && typeof t.readStart === 'function' && typeof t.writeLatin1String === 'function'
    && typeof t.shutdown === 'function' && typeof t.getpeername === 'function' && typeof t.close === 'function';
}

const UV_EOF = -4095;
/** As net.Socket's writableHighWaterMark: write() returns false from this many unsent bytes. */
const HIGH_WATER = 16 * 1024;

/** The events a connection listens to (net.Socket's names). */
type StreamEvent = 'end' | 'error' | 'close' | 'drain' | 'data';
type Listener = (arg?: never) => void;

/** What the TCP stream reports to the server that accepted it (net.Server's own counters). */
interface ServerCount {
  _connections: number;
  _emitCloseIfDrained?: () => void;
}

type AddressOut = { address?: string; port?: number; family?: string };

/** An end's address as getpeername/getsockname report it; null when it cannot be had. */
function askAddress(ask: (out: AddressOut) => number): Address | null {
  const out: AddressOut = {};
  if (ask(out) !== 0 || out.address === undefined) return null;
  return { address: out.address, family: out.family ?? '', port: out.port ?? 0 };
}

export interface Address {
  address: string;
  family: string;
  port: number;
}

/**
 * The accepted connection: net.Socket's calls that an HTTP connection makes, with its
 * meanings — write() returns false once HIGH_WATER bytes wait and 'drain' follows when they
 * are sent; end() half-closes once every write is out; 'end' reports the peer's half-close;
 * the connection is closed when both directions are done (as net.Socket with allowHalfOpen),
 * on destroy(), or after an error ('error', then 'close').
 */
export class TcpStream {
  private listeners: { [K in StreamEvent]?: Listener[] } = {};
  private reading = false;
  private started = false;
  private paused = false;
  /** Asynchronous writes not completed. */
  private pending = 0;
  private needDrain = false;
  /** end() called (a shutdown is made once the writes are out). */
  private ending = false;
  private shutDown = false;
  /** The peer half-closed. */
  private eof = false;
  destroyed = false;
  /** The error the stream was destroyed with (net.Socket's `errored`). */
  errored: Error | null = null;
  /** false: end() follows the peer's half-close, as net.Socket's default. */
  allowHalfOpen = false;
  /** TCP_NODELAY is on (protected: a stream on a handle another stream set it on knows). */
  protected noDelay = false;
  /** The peer's address (protected: a stream on another stream's handle is told it). */
  protected peer: Address | null = null;
  private local: Address | null;
  private reader: ((data: Buffer) => void) | null = null;
  private early: Buffer[] | null = null;
  /** Set: a failed write ends only the writing side (reported here, not as 'error'), and what
   *  the peer sent is still read — a pipe-like use, as a CGI script's stdin and stdout are
   *  one connection whose output outlives a script that stopped reading. */
  onWriteError: ((err: NodeJS.ErrnoException) => void) | null = null;
  /** Set by a stream whose handle takes one write at a time (Node's TLSWrap: mod_ssl's
   *  TlsStream): a write made while one is under way waits in `waiting`. */
  protected serialWrites = false;
  private waiting: { data: Buffer | string; encoding: BufferEncoding }[] | null = null;
  private waitingBytes = 0;
  /** handOver() was called: the handle is read by another (TLS), never here. */
  private handedOver = false;
  /** The net.Socket made on the handle after handOver() (adopt()): destroying this stream
   *  destroys it, and this stream closes when it closes. */
  private owner: { destroy(): unknown } | null = null;

  constructor(
    private readonly handle: StreamHandle,
    private readonly wrap: StreamWrapBinding,
    readBuffer: Buffer,
    local: Address | null,
    private readonly server: ServerCount | null,
  ) {
    this.local = local;
    handle.useUserBuffer(readBuffer);
    handle.onread = () => this.onRead(readBuffer);
    if (server !== null) server._connections++;
    // Reading starts at once (as net.Socket's does); bytes wait for the reader.
    this.startReading();
  }

  // ---- addresses -------------------------------------------------------------------------
  private peerAddress(): Address | null {
    const h = this.handle;
    if (this.peer === null && !this.destroyed && isTcp(h)) this.peer = askAddress((out) => h.getpeername(out));
    return this.peer;
  }
  private localAddr(): Address | null {
    const h = this.handle;
    if (this.local === null && !this.destroyed && isTcp(h)) this.local = askAddress((out) => h.getsockname(out));
    return this.local;
  }
  get remoteAddress(): string | undefined { return this.peerAddress()?.address; }
  get remotePort(): number | undefined { return this.peerAddress()?.port; }
  get remoteFamily(): string | undefined { return this.peerAddress()?.family; }
  get localAddress(): string | undefined { return this.localAddr()?.address; }
  get localPort(): number | undefined { return this.localAddr()?.port; }
  get localFamily(): string | undefined { return this.localAddr()?.family; }

  /** Whether TCP_NODELAY is on. */
  get noDelayOn(): boolean { return this.noDelay; }

  setNoDelay(on = true): this {
    const h = this.handle;
    if (on !== this.noDelay && !this.destroyed && isTcp(h)) {
      this.noDelay = on;
      h.setNoDelay(on);
    }
    return this;
  }

  /** SO_KEEPALIVE with the system's idle time (net.Socket's setKeepAlive(true)). */
  setKeepAlive(on: boolean): this {
    const h = this.handle;
    if (!this.destroyed && isTcp(h)) h.setKeepAlive(on, 0);
    return this;
  }

  // ---- events ----------------------------------------------------------------------------
  on(event: 'data', fn: (data: Buffer) => void): this;
  on(event: 'error', fn: (err: Error) => void): this;
  on(event: 'end' | 'close' | 'drain', fn: () => void): this;
  on(event: StreamEvent, fn: (arg: never) => void): this {
    if (event === 'data') this.setReader(fn as (data: Buffer) => void);
    else (this.listeners[event] ??= []).push(fn as Listener);
    return this;
  }
  once(event: 'error', fn: (err: Error) => void): this;
  once(event: 'end' | 'close' | 'drain', fn: () => void): this;
  once(event: Exclude<StreamEvent, 'data'>, fn: (arg: never) => void): this {
    const once = (arg: never): void => {
      this.off(event, once);
      fn(arg);
    };
    (once as { listener?: unknown }).listener = fn;
    (this.listeners[event] ??= []).push(once as Listener);
    return this;
  }
  /** Removes a listener added with on() or once() ('data': the reader). */
  off(event: StreamEvent, fn: (arg: never) => void): this {
    if (event === 'data') {
      if (this.reader === fn) this.reader = null;
      return this;
    }
    const list = this.listeners[event];
    if (list === undefined) return this;
    const i = list.findIndex((l) => l === fn || (l as { listener?: unknown }).listener === fn);
    if (i >= 0) list.splice(i, 1);
    return this;
  }
  removeListener(event: StreamEvent, fn: (arg: never) => void): this {
    return this.off(event, fn);
  }
  private emit(event: 'end' | 'close' | 'drain'): void;
  private emit(event: 'error', err: Error): void;
  private emit(event: StreamEvent, arg?: Error): void {
    const list = this.listeners[event];
    if (list === undefined) return;
    for (const fn of list.slice()) (fn as (a?: Error) => void)(arg);
  }

  // ---- reading ---------------------------------------------------------------------------
  /** Gives `reader` the bytes read, in order (those read before now first). */
  setReader(reader: (data: Buffer) => void): void {
    this.reader = reader;
    const early = this.early;
    if (early !== null) {
      this.early = null;
      for (const d of early) reader(d);
    }
  }

  private onRead(buf: Buffer): void {
    const n = this.wrap.streamBaseState[this.wrap.kReadBytesOrError]!;
    if (n > 0) {
      const data = Buffer.allocUnsafe(n);
      buf.copy(data, 0, 0, n);
      const reader = this.reader;
      if (reader !== null) reader(data);
      else (this.early ??= []).push(data);
    } else if (n === UV_EOF) {
      this.reading = false;
      this.eof = true;
      this.emit('end');
      if (!this.allowHalfOpen) this.end();
      this.closeIfDone();
    } else if (n < 0) {
      this.fail(n, 'read');
    }
  }

  private startReading(): void {
    if (this.reading || this.eof || this.destroyed || this.handedOver) return;
    this.reading = true;
    this.started = true;
    const err = this.handle.readStart();
    if (err !== 0) this.fail(err, 'read');
  }

  pause(): this {
    this.paused = true;
    if (this.reading && !this.destroyed) {
      this.reading = false;
      this.handle.readStop();
    }
    return this;
  }
  resume(): this {
    this.paused = false;
    this.startReading();
    return this;
  }
  isPaused(): boolean { return this.paused; }
  /** Whether reading has begun (net.Socket's readableFlowing: null before). */
  get readableFlowing(): boolean | null { return this.started ? !this.paused : null; }

  /** Hands `data` to the reader as if it had been read (bytes a layer makes up for HTTP). */
  feed(data: Buffer): void {
    if (this.destroyed) return;
    const reader = this.reader;
    if (reader !== null) reader(data);
    else (this.early ??= []).push(data);
  }

  /**
   * The handle, for a layer that reads and writes it from now on (mod_ssl's TLS, made on it):
   * reading stops here for good and nothing is written here. The stream stays the
   * connection's owner for the server: destroy() closes the handle, and 'close' follows.
   */
  handOver(): TcpHandle | StreamHandle {
    this.pause();
    this.handedOver = true;
    this.reader = null;
    this.early = null;
    return this.handle;
  }

  /** After handOver(), a net.Socket made on the handle owns it: destroy() destroys that
   *  socket, and this stream closes (counted off its server, 'close') when the socket does. */
  adopt(sock: { destroy(): unknown; once(event: 'close', fn: () => void): unknown }): void {
    this.owner = sock;
    sock.once('close', () => {
      this.destroyed = true;
      this.closed();
    });
  }

  /** As net.Socket's, for Node's TLS code that takes the stream as the owner of the handle
   *  (TLSWrap's close destroys its owner when `_handle` is the handle it wraps). */
  get _handle(): StreamHandle | null { return this.destroyed ? null : this.handle; }

  // ---- writing ---------------------------------------------------------------------------
  get writableNeedDrain(): boolean { return this.needDrain; }
  get writableLength(): number { return this.destroyed ? 0 : this.handle.writeQueueSize + this.waitingBytes; }

  write(data: Buffer | string, encoding: BufferEncoding = 'utf8'): boolean {
    if (this.destroyed || this.ending) return false;
    if (this.serialWrites && this.pending > 0) {
      // The handle takes one write at a time (TLS): this one waits for the one under way.
      (this.waiting ??= []).push({ data, encoding });
      this.waitingBytes += data.length;
      if (this.handle.writeQueueSize + this.waitingBytes < HIGH_WATER) return true;
      this.needDrain = true;
      return false;
    }
    return this.writeNow(data, encoding);
  }

  private writeNow(data: Buffer | string, encoding: BufferEncoding): boolean {
    const w = this.wrap;
    const req = new w.WriteWrap();
    req.handle = this.handle;
    // Called only for a write that went asynchronous (set below: the completion comes from a
    // later turn of the event loop, which reads it then); a write the kernel took at once
    // needs no callback.
    req.oncomplete = noCompletion;
    req.async = false;
    req.buffer = null;
    kept.write = req;
    let err: number;
    if (typeof data !== 'string') err = this.handle.writeBuffer(req, data);
    else if (encoding === 'latin1' || encoding === 'binary') err = this.handle.writeLatin1String(req, data);
    else if (encoding === 'ascii') err = this.handle.writeAsciiString(req, data);
    else if (encoding === 'utf8' || encoding === 'utf-8') err = this.handle.writeUtf8String(req, data);
    else err = this.handle.writeBuffer(req, Buffer.from(data, encoding));
    if (err !== 0) {
      this.writeFailed(err);
      return false;
    }
    if (w.streamBaseState[w.kLastWriteWasAsync] === 0) return true;
    // Not all of it went out: libuv holds the rest (a string is copied; a buffer is kept).
    req.async = true;
    req.oncomplete = (status) => this.afterWrite(status);
    if (typeof data !== 'string') req.buffer = data;
    this.pending++;
    if (this.handle.writeQueueSize < HIGH_WATER) return true;
    this.needDrain = true;
    return false;
  }

  private afterWrite(status: number): void {
    this.pending--;
    if (this.destroyed) return;
    if (status < 0) { this.writeFailed(status); return; }
    if (this.pending > 0) return;
    const waiting = this.waiting;
    while (waiting !== null && waiting.length > 0 && this.pending === 0 && !this.destroyed) {
      const next = waiting.shift()!;
      this.waitingBytes -= next.data.length;
      this.writeNow(next.data, next.encoding);
    }
    if (this.pending > 0 || this.destroyed) return;
    if (this.ending && !this.shutDown) this.shutdown();
    if (this.needDrain) {
      this.needDrain = false;
      this.emit('drain');
    }
  }

  private writeFailed(errno: number): void {
    const report = this.onWriteError;
    if (report === null) { this.fail(errno, 'write'); return; }
    if (this.shutDown) return;
    // No more writing; the connection closes once the peer's side has ended too.
    this.ending = true;
    this.shutDown = true;
    this.needDrain = false;
    report(uvError(errno, 'write'));
    this.closeIfDone();
  }

  /** The connection does not keep the process alive. */
  unref(): this {
    if (!this.destroyed) this.handle.unref();
    return this;
  }

  /** Half-closes once every write is out (the peer reads to the end, then sees EOF). */
  end(): this {
    if (this.ending || this.destroyed) return this;
    this.ending = true;
    if (this.pending === 0) this.shutdown();
    return this;
  }

  private shutdown(): void {
    const req = new this.wrap.ShutdownWrap();
    req.handle = this.handle;
    req.oncomplete = (status) => {
      if (this.destroyed) return;
      if (status < 0) { this.fail(status, 'shutdown'); return; }
      this.shutDown = true;
      this.closeIfDone();
    };
    const err = this.handle.shutdown(req);
    if (err !== 0) this.fail(err, 'shutdown');
  }

  /** Both directions done: closed (net.Socket's autoDestroy). */
  private closeIfDone(): void {
    if (this.eof && this.shutDown) this.destroy();
  }

  // ---- closing ---------------------------------------------------------------------------
  private fail(errno: number, syscall: string): void {
    if (this.destroyed) return;
    this.destroy(uvError(errno, syscall));
  }

  /** Closes the connection at once (unsent bytes are dropped); 'close' follows. */
  destroy(err?: Error): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.reading = false;
    if (err !== undefined) {
      this.errored = err;
      this.emit('error', err);
    }
    const owner = this.owner;
    if (owner !== null) owner.destroy();
    else this.handle.close(() => this.closed());
    return this;
  }

  private closed(): void {
    const srv = this.server;
    if (srv !== null) {
      srv._connections--;
      srv._emitCloseIfDrained?.();
    }
    this.emit('close');
    // Nothing fires after 'close': let go of the connection's listeners and reader, so that
    // whatever still points at a closed stream (a dead object in the old generation, which
    // scavenges cannot tell from a live one: src/lib/roster.ts) reaches only the stream and
    // its handle, not the whole connection.
    this.listeners = {};
    this.reader = null;
    this.early = null;
    this.owner = null;
  }
}

/** A libuv error as Node reports it ("read ECONNRESET", with errno, code and syscall). No
 *  stack is taken: it would show only this module's frames, and a connection reset by its
 *  peer (the usual end of many connections) would pay for collecting one. */
function uvError(errno: number, syscall: string, detail = ''): NodeJS.ErrnoException {
  const code = util.getSystemErrorName(errno);
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  const e = new Error(`${syscall} ${code}${detail}`) as NodeJS.ErrnoException;
  Error.stackTraceLimit = limit;
  e.errno = errno;
  e.code = code;
  e.syscall = syscall;
  return e;
}

// ---- outgoing connections ------------------------------------------------------------------

/** Where the reads of every stream this module drives land (one read runs at a time in a
 *  process; each is copied out before the next). */
export const sharedReadBuffer = Buffer.allocUnsafe(64 * 1024);

/** Node's connect request (TCPConnectWrap, PipeConnectWrap) and its completion. */
interface ConnectReq {
  oncomplete: (status: number) => void;
  address: string;
  port: number;
}
interface TcpWrapBinding {
  TCP: new (type: number) => TcpHandle & {
    bind(address: string, port: number): number;
    bind6(address: string, port: number, flags: number): number;
    connect(req: ConnectReq, address: string, port: number): number;
    connect6(req: ConnectReq, address: string, port: number): number;
  };
  TCPConnectWrap: new () => ConnectReq;
  constants: { SOCKET: number };
}
interface PipeWrapBinding {
  Pipe: new (type: number) => StreamHandle & { connect(req: ConnectReq, path: string): number };
  PipeConnectWrap: new () => ConnectReq;
  constants: { SOCKET: number };
}

function loadBinding<T>(name: string, check: (b: Partial<T>) => boolean): T | null {
  if (streamWrap === null) return null;
  try {
    const b = (process as unknown as { binding(name: string): Partial<T> }).binding(name);
    return check(b) ? b as T : null;
  } catch {
    return null;
  }
}
const tcpWrap = loadBinding<TcpWrapBinding>('tcp_wrap', (b) => typeof b.TCP === 'function' && typeof b.TCPConnectWrap === 'function'
  && typeof b.constants?.SOCKET === 'number' && typeof b.TCP.prototype.connect === 'function' && typeof b.TCP.prototype.connect6 === 'function');
const pipeWrap = loadBinding<PipeWrapBinding>('pipe_wrap', (b) => typeof b.Pipe === 'function' && typeof b.PipeConnectWrap === 'function'
  && typeof b.constants?.SOCKET === 'number' && typeof b.Pipe.prototype.connect === 'function');

/** A TCP peer by address (an IP literal: no name is resolved here), or a unix socket. */
export type ConnectTarget =
  | { readonly host: string; readonly port: number; readonly family: 4 | 6; readonly localAddress?: string | undefined }
  | { readonly path: string };

/** A connection being made: cancel() abandons it (its handle is closed; `done` is not called). */
export interface PendingConnect { cancel(): void }

/**
 * Connects to `to` on a fresh libuv handle and hands `done` the connected stream (a TcpStream,
 * reading at once), or the error as net.Socket reports it (code ECONNREFUSED...). `done` is
 * never called before connectStream returns. Null where Node's internals are not as expected:
 * connect with net.Socket then.
 */
export function connectStream(to: ConnectTarget, done: (err: NodeJS.ErrnoException | null, stream: TcpStream | null) => void): PendingConnect | null {
  const w = streamWrap;
  let handle: StreamHandle;
  let req: ConnectReq;
  let err = 0;
  let what: string;
  if ('path' in to) {
    if (w === null || pipeWrap === null) return null;
    const h = new pipeWrap.Pipe(pipeWrap.constants.SOCKET);
    handle = h;
    req = new pipeWrap.PipeConnectWrap();
    req.address = to.path;
    req.port = 0;
    what = ` ${to.path}`;
    req.oncomplete = (status) => complete(status);
    err = h.connect(req, to.path);
  } else {
    if (w === null || tcpWrap === null) return null;
    const h = new tcpWrap.TCP(tcpWrap.constants.SOCKET);
    handle = h;
    what = ` ${to.host}:${to.port}`;
    if (to.localAddress !== undefined) {
      // ProxySourceAddress: the local end is bound first (any port).
      const bound = to.family === 4 ? h.bind(to.localAddress, 0) : h.bind6(to.localAddress, 0, 0);
      if (bound !== 0) {
        h.close(() => undefined);
        process.nextTick(done, uvError(bound, 'bind', ` ${to.localAddress}`), null);
        return { cancel: () => undefined };
      }
    }
    req = new tcpWrap.TCPConnectWrap();
    req.address = to.host;
    req.port = to.port;
    req.oncomplete = (status) => complete(status);
    err = to.family === 4 ? h.connect(req, to.host, to.port) : h.connect6(req, to.host, to.port);
  }
  let cancelled = false;
  const complete = (status: number): void => {
    if (cancelled) return;
    cancelled = true;
    if (status !== 0) {
      handle.close(() => undefined);
      done(uvError(status, 'connect', what), null);
      return;
    }
    done(null, new TcpStream(handle, w, sharedReadBuffer, null, null));
  };
  if (err !== 0) {
    // Refused at once (a unix socket that is not there): reported as a completion would be.
    process.nextTick(complete, err);
  }
  return {
    cancel: () => {
      if (cancelled) return;
      cancelled = true;
      handle.close(() => undefined);
    },
  };
}

/**
 * What a connection uses of its socket: a TcpStream, or a net.Socket (a TLS socket, or any
 * socket when Node's internals are not as TcpStream expects). accept.ts hands both kinds
 * to the same callback, which checks that each is one.
 */
export interface Transport {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
  readonly localFamily?: string | undefined;
  readonly destroyed: boolean;
  readonly writableNeedDrain: boolean;
  allowHalfOpen: boolean;
  setNoDelay(on?: boolean): unknown;
  on(event: 'data', fn: (data: Buffer) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  on(event: 'end' | 'close' | 'drain', fn: () => void): unknown;
  write(data: Buffer | string, encoding?: BufferEncoding): boolean;
  end(): unknown;
  destroy(err?: Error): unknown;
  pause(): unknown;
  resume(): unknown;
  isPaused(): boolean;
}
