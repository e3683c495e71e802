// Backend connections (proxy_util.c): the per-process pool of each worker, connecting with
// connectiontimeout and ProxySourceAddress, the error state and retry of a worker whose
// backend refuses (AH00957, AH00959, AH00932), TLS through mod_ssl's "ssl_proxy" provider,
// a reader with the backend timeout, and the byte tunnel of Upgrade / CONNECT.

import * as net from 'node:net';
import * as dns from 'node:dns/promises';
import type { Request, RawStream } from '../../../server/request/request.js';
import { connectStream, type ConnectTarget, type PendingConnect, type TcpStream } from '../../../server/http/tcp-stream.js';
import type { ServerRec } from '../../../server/server-rec.js';
import { APLOG_DEBUG, APLOG_ERR, levelFor } from '../../../server/log/levels.js';
import {
  ProxyIoError, PROXY_WORKER_IN_ERROR, PROXY_WORKER_IGNORE_ERRORS, PROXY_WORKER_INITIALIZED,
  type BackendReader, type ProxyConn, type ProxyWorker,
} from '../../../proxy/api.js';

const OK = 0;

/** ap_log_error for mod_proxy: a server's line (no client). */
export function serverLog(s: ServerRec, level: number, message: string, errno?: { code: number; text: string }): void {
  if (level <= levelFor(s.logLevel, 'proxy')) s.errorLog.write({ module: 'proxy', level, message, errno });
}

/** Connections waiting in wait() for a second or more, with their deadlines: one interval
 *  (while any waits) gives up on those past theirs, instead of a timer armed and cleared for
 *  every response awaited. A backend timeout then fires up to SWEEP_MS late. */
const waiting = new Set<BackendConn>();
const COARSE_MIN_MS = 1000;
const SWEEP_MS = 50;
let sweepTimer: NodeJS.Timeout | null = null;
function sweep(): void {
  const now = Date.now();
  for (const c of waiting) {
    if (now < c.deadline) continue;
    waiting.delete(c);
    c.deadline = 0;
    const w = c.waiter;
    c.waiter = null;
    w?.(false);
  }
  if (waiting.size === 0 && sweepTimer !== null) { clearInterval(sweepTimer); sweepTimer = null; }
}

/** A connection with its read queue (the socket's data events feed it for its whole life). */
export class BackendConn implements ProxyConn {
  socket: net.Socket | null = null;
  stream: TcpStream | null = null;
  hostname = '';
  port = 0;
  /** The address a new connection goes to: the hostname's, resolved (resolveAddress), or ''
   *  when the hostname is an address itself. */
  ip = '';
  udsPath = '';
  isSsl = false;
  sslHostname: string | undefined = undefined;
  alpn: readonly string[] | undefined = undefined;
  close = false;
  pending: Buffer | null = null;
  uses = 0;
  idleSince = 0;
  readonly data = new Map<string, unknown>();
  /** Data read and not yet consumed; the end of the stream; a socket error. */
  queue: Buffer[] = [];
  queued = 0;
  ended = false;
  error: Error | null = null;
  waiter: ((ok: boolean) => void) | null = null;
  /** Where the socket connected from (the peer address for log lines). */
  addr = '';
  /** What the queue reads from: the socket (TLS over it once on), or the stream attached by
   *  attachStream; null when neither is (a one-exchange plain stream is not). */
  io: net.Socket | TcpStream | null = null;
  /** Waiting in its worker's pool: the backend closing it takes it out at once. */
  pooled = false;
  /** The pool of its worker in this process. */
  readonly pool: Pool;
  constructor(readonly worker: ProxyWorker) { this.pool = poolOf(worker); }

  attach(sock: net.Socket): void {
    this.socket = sock;
    this.listen(sock);
  }

  /** A plain stream read through the queue as a socket is (a pooled connection of
   *  mod_proxy_http's, made without a net.Socket). */
  attachStream(stream: TcpStream): void {
    this.stream = stream;
    this.listen(stream);
  }

  private listen(sock: net.Socket | TcpStream): void {
    this.io = sock;
    this.queue = [];
    this.queued = 0;
    this.ended = false;
    this.error = null;
    sock.on('data', (d: Buffer) => {
      this.queue.push(d);
      this.queued += d.length;
      if (this.queued > 256 * 1024) sock.pause();
      this.wake();
    });
    sock.on('end', () => { this.ended = true; this.wake(); if (this.pooled) dropIdle(this); });
    sock.on('error', (e: Error) => { this.error = e; this.ended = true; this.wake(); });
    sock.on('close', () => { this.ended = true; this.wake(); if (this.pooled) dropIdle(this); });
  }

  wake(): void {
    const w = this.waiter;
    if (w === null) return;
    this.waiter = null;
    if (this.deadline !== 0) { waiting.delete(this); this.deadline = 0; }
    w(true);
  }

  /** Waits for data or the end, at most `ms`; false on timeout. A wait of a second or more
   *  is timed by the sweep shared by every connection (see `waiting`), not a timer of its own. */
  wait(ms: number): Promise<boolean> {
    if (this.queue.length > 0 || this.ended) return Promise.resolve(true);
    return new Promise((res) => {
      if (ms >= COARSE_MIN_MS) {
        this.waiter = res;
        this.deadline = Date.now() + ms;
        waiting.add(this);
        if (sweepTimer === null) { sweepTimer = setInterval(sweep, SWEEP_MS); sweepTimer.unref(); }
        return;
      }
      const t = setTimeout(() => { this.waiter = null; res(false); }, ms);
      this.waiter = (ok) => { clearTimeout(t); res(ok); };
    });
  }

  /** The reader of mod_proxy_http over this connection (made once, see makeReader). */
  reader: ConnReader | null = null;
  /** When a coarse wait() gives up (ms since the epoch); 0 when none is pending. */
  deadline = 0;

  take(max: number): Buffer | null {
    const b = this.queue[0];
    if (b === undefined) return null;
    if (b.length <= max) this.queue.shift(); else this.queue[0] = b.subarray(max);
    const out = b.length <= max ? b : b.subarray(0, max);
    this.queued -= out.length;
    if (this.queued <= 64 * 1024 && this.io?.isPaused() === true) this.io.resume();
    return out;
  }

  unread(b: Buffer): void {
    if (b.length === 0) return;
    this.queue.unshift(b);
    this.queued += b.length;
  }

  /** Still usable for another request: open, nothing unread, no end seen. (A plain stream
   *  carries one exchange: it is never pooled.) */
  get alive(): boolean {
    const s = this.io;
    return s !== null && !s.destroyed && !this.ended && this.queue.length === 0 && this.error === null;
  }

  destroy(): void {
    this.io = null;
    this.socket?.destroy();
    this.socket = null;
    this.stream?.destroy();
    this.stream = null;
  }
}

/** A request waiting for a connection of a worker at its max= (apr_reslist_acquire blocked). */
interface Waiter { readonly give: (c: BackendConn) => void }

/**
 * The pool of one worker in this process (httpd's apr_reslist of proxy_conn_rec): `idle` holds
 * the open connections given back, newest last (taken newest first, reaped oldest first);
 * `inUse` the connections requests hold; `waiters` the requests waiting for one at max=.
 * min= has nothing to act on here: httpd's min pre-creates connection records, not sockets
 * (a backend sees nothing of it), and plume makes a record when a request needs one.
 */
interface Pool { idle: BackendConn[]; inUse: number; peak: number; readonly waiters: Waiter[] }
const pools = new WeakMap<ProxyWorker, Pool>();
function poolOf(w: ProxyWorker): Pool {
  let p = pools.get(w);
  if (p === undefined) { p = { idle: [], inUse: 0, peak: 0, waiters: [] }; pools.set(w, p); }
  return p;
}

/** The most connections of the worker at once in this process (max=; 0 or unset: no limit).
 *  DIFFERENCE: httpd's default is ThreadsPerChild, the most its threads can use at once, so
 *  that a request never waits; a plume process serves all its client connections without
 *  threads, so without max= it never waits either (docs/differences.md). */
function hmaxOf(w: ProxyWorker): number {
  const h = w.params.hmax;
  return h === undefined || h <= 0 ? Infinity : h;
}

/** ap_proxy_retry_worker. */
export function retryWorker(_proxyFunction: string, w: ProxyWorker, _s: ServerRec, defaultRetry = 60000): boolean {
  if (!(w.s.status & PROXY_WORKER_IN_ERROR)) return true;
  const retry = w.params.retry ?? defaultRetry;
  if (Date.now() > w.s.errorTime + retry) {
    w.s.retries++;
    w.s.status &= ~PROXY_WORKER_IN_ERROR;
    return true;
  }
  return false;
}

/** The errno of apr_reslist_acquire's timeout (APR_TIMEUP). */
const TIMEUP = { code: 70007, text: 'The timeout specified has expired' };

/** ap_proxy_acquire_connection: a pooled connection (newest first; one idle for ttl= or
 *  longer is closed instead), a new one, or — with max= connections in use — the next one
 *  given back, waited for at most acquire= ms (then 503 with AH00941), else for as long as it
 *  takes, as httpd's reslist. */
export function acquire(proxyFunction: string, w: ProxyWorker, s: ServerRec, log: (level: number, msg: string, errno?: { code: number; text: string }) => void): BackendConn | number | Promise<BackendConn | number> {
  if (!retryWorker(proxyFunction, w, s)) {
    log(APLOG_ERR, `AH00940: ${proxyFunction}: disabled connection for (${w.s.hostname}:${w.s.port})`);
    return 503;
  }
  w.localStatus |= PROXY_WORKER_INITIALIZED;
  const p = poolOf(w);
  const ttl = w.params.ttl;
  const now = ttl === undefined ? 0 : Date.now();
  while (p.idle.length > 0) {
    const c = p.idle.pop()!;
    takeOut(c);
    if (c.alive && (ttl === undefined || now - c.idleSince < ttl)) return handOut(p, w, c);
    c.destroy();
  }
  if (p.inUse >= hmaxOf(w)) {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = { give: (c) => { if (timer !== undefined) clearTimeout(timer); resolve(c); } };
      p.waiters.push(waiter);
      const ms = w.params.acquire;
      if (ms !== undefined) {
        timer = setTimeout(() => {
          const i = p.waiters.indexOf(waiter);
          if (i >= 0) p.waiters.splice(i, 1);
          log(APLOG_ERR, `AH00941: ${proxyFunction}: failed to acquire connection for (${w.s.hostname}:${w.s.port})`, TIMEUP);
          resolve(503);
        }, ms);
      }
    });
  }
  return handOut(p, w, new BackendConn(w));
}

function handOut(p: Pool, _w: ProxyWorker, c: BackendConn): BackendConn {
  // The worker's busy count is mod_proxy_balancer's (a request elected it), not the pool's.
  p.inUse++;
  if (p.inUse > p.peak) p.peak = p.inUse;
  c.close = false;
  return c;
}

/** ap_proxy_release_connection: the connection goes to a request waiting for one, or back to
 *  the pool when it can carry another request; with ttl=, the idle ones past smax= that have
 *  waited ttl= are closed, oldest first (apr_reslist's maintenance; without ttl= none is). */
export function release(c: BackendConn): void {
  const w = c.worker;
  const p = c.pool;
  p.inUse = Math.max(0, p.inUse - 1);
  const reusable = !c.close && c.alive && w.params.disablereuse !== true && !w.generic;
  if (!reusable) c.destroy();
  const waiter = p.waiters.shift();
  if (waiter !== undefined) {
    waiter.give(handOut(p, w, reusable ? c : new BackendConn(w)));
    return;
  }
  if (!reusable) return;
  c.idleSince = Date.now();
  c.socket?.setTimeout(0);
  p.idle.push(c);
  // An idle socket the backend closes goes out of the pool at once (attach's listeners).
  c.pooled = true;
  const ttl = w.params.ttl;
  const hmax = hmaxOf(w);
  // smax= defaults to max= and is at most max=. DIFFERENCE: without max= (no limit in plume,
  // see hmaxOf) at most as many idle connections as were in use at once, at least 25.
  const smax = Math.min(w.params.smax ?? hmax, hmax);
  if (ttl !== undefined) {
    while (p.idle.length > smax) {
      const old = p.idle[0]!;
      if (c.idleSince - old.idleSince < ttl) break;
      p.idle.shift();
      takeOut(old);
      old.destroy();
    }
  } else if (hmax === Infinity && p.idle.length > Math.max(25, p.peak)) {
    const old = p.idle.shift()!;
    takeOut(old);
    old.destroy();
  }
}

/** The connection is taken from the pool again (or closed there). */
export function takeOut(c: BackendConn): void {
  c.pooled = false;
}

/** An idle connection the backend closed: out of the pool, closed. */
function dropIdle(c: BackendConn): void {
  c.pooled = false;
  const p = c.pool;
  const i = p.idle.indexOf(c);
  if (i >= 0) { p.idle.splice(i, 1); c.destroy(); }
}

/** Where a plain stream connects (ProxyApi.connectBackend's `plain`): a unix socket or an IP
 *  address; null for a name, which net.Socket resolves. */
function plainTarget(c: BackendConn, source: string | undefined): ConnectTarget | null {
  if (c.udsPath !== '') return { path: c.udsPath };
  const host = c.ip !== '' ? c.ip : c.hostname;
  const family = net.isIP(host);
  if (family === 0) return null;
  return { host, port: c.port, family: family === 4 ? 4 : 6, localAddress: source };
}

/** A worker's resolved addresses by hostname (httpd's worker->address), for this process and
 *  configuration generation: `expiry` -1 for ever, else the time (ms) it is asked again. */
const addresses = new WeakMap<ProxyWorker, Map<string, { ip: Promise<string>; expiry: number }>>();

/** How long a worker keeps a resolved address (ms; -1 until restart, 0 not at all): addressttl=,
 *  else until restart, except for a worker whose address cannot be reused (a URL with
 *  substitutions, the generic worker; disablereuse=On), which resolves for each connection
 *  (ap_proxy_define_worker / ap_proxy_initialize_worker). */
function addressTtl(w: ProxyWorker): number {
  const t = w.params.addressttl;
  if (t !== undefined) return t < 0 ? -1 : t * 1000;
  return w.generic || w.params.disablereuse === true ? 0 : -1;
}

/**
 * The address a new connection to `host` goes to (ap_proxy_determine_address): the worker's
 * cached one while its addressttl lasts, else getaddrinfo's first answer (Node's dns.lookup in
 * the resolver's order, as apr_sockaddr_info_get). Rejects with the lookup's error.
 */
export function resolveAddress(w: ProxyWorker, host: string): Promise<string> {
  const ttl = addressTtl(w);
  const now = Date.now();
  let byHost = addresses.get(w);
  const hit = byHost?.get(host);
  if (hit !== undefined && (hit.expiry < 0 || hit.expiry > now)) return hit.ip;
  const ip = dns.lookup(host).then((a) => a.address);
  if (ttl !== 0) {
    if (byHost === undefined) addresses.set(w, (byHost = new Map()));
    const entry = { ip, expiry: ttl < 0 ? -1 : now + ttl };
    byHost.set(host, entry);
    // A failed lookup is not kept: the next connection asks again.
    ip.catch(() => { if (byHost!.get(host) === entry) byHost!.delete(host); });
  }
  return ip;
}

/** Connects a fresh socket (ap_proxy_connect_backend); OK or 503 with httpd's lines. `plain`:
 *  as a plain stream (c.stream) where it can be; 'pooled': such a stream read through the
 *  connection's queue, as a socket is (it may go back to the pool). */
export function connectSocket(proxyFunction: string, c: BackendConn, w: ProxyWorker, r: Request, connTimeout: number, source: string | undefined, plain: boolean | 'pooled' = false): Promise<number> {
  return new Promise((resolve) => {
    let done = false;
    let sock: net.Socket | null = null;
    let pending: PendingConnect | null = null;
    const fail = (e: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock?.destroy();
      pending?.cancel();
      const code = (e as NodeJS.ErrnoException).code;
      const errno = code === 'ECONNREFUSED' ? { code: 111, text: 'Connection refused' }
        : code === 'ENOENT' ? { code: 2, text: 'No such file or directory' }
        : e instanceof ProxyIoError ? { code: 70007, text: 'The timeout specified has expired' }
        : r.rt.errno(e);
      if (c.udsPath !== '') {
        serverLog(r.server, APLOG_ERR, `AH02454: ${proxyFunction}: attempt to connect to Unix domain socket ${c.udsPath} (${c.hostname}:${c.port}) failed`, errno);
      } else {
        const to = c.ip !== '' ? c.ip : c.hostname;
        const addr = `${to.includes(':') ? `[${to}]` : to}:${c.port}`;
        serverLog(r.server, APLOG_ERR, `AH00957: ${proxyFunction}: attempt to connect to ${addr} (${c.hostname}:${c.port}) failed`, errno);
      }
      // A balancer member goes into error for retry= seconds (unless status=+I); httpd 2.4.71
      // leaves a worker of its own (ProxyPass) usable (measured: no AH00959 for those).
      if (!(w.s.status & PROXY_WORKER_IGNORE_ERRORS) && !w.generic && w.balancer !== undefined) {
        const retry = w.params.retry ?? 60000;
        w.s.status |= PROXY_WORKER_IN_ERROR;
        w.s.errorTime = Date.now();
        serverLog(r.server, APLOG_ERR, `AH00959: ap_proxy_connect_backend disabling worker for (${w.s.hostname}:${w.s.port}) for ${Math.floor(retry / 1000)}s`);
      }
      resolve(503);
    };
    const connected = (addr: string): void => {
      w.s.status &= ~PROXY_WORKER_IN_ERROR;
      c.addr = addr;
      if (APLOG_DEBUG > levelFor(r.server.logLevel, 'proxy')) { resolve(OK); return; }
      if (c.udsPath !== '') serverLog(r.server, APLOG_DEBUG, `AH02823: ${proxyFunction}: connection established with Unix domain socket ${c.udsPath} (${c.hostname}:${c.port})`);
      else serverLog(r.server, APLOG_DEBUG, `AH00962: ${proxyFunction}: connection complete to ${c.addr} (${c.hostname})`);
      resolve(OK);
    };
    const timer = setTimeout(() => fail(new ProxyIoError('timeout', 'The timeout specified has expired')), connTimeout);
    const target = plain !== false && !c.isSsl ? plainTarget(c, source) : null;
    if (target !== null) {
      pending = connectStream(target, (e, stream) => {
        if (done) { stream?.destroy(); return; }
        if (e !== null || stream === null) { fail(e ?? new Error('connect failed')); return; }
        done = true;
        clearTimeout(timer);
        // TCP_NODELAY as on every backend connection; keepalive=On: SO_KEEPALIVE.
        stream.setNoDelay(true);
        if (w.params.keepalive === true) stream.setKeepAlive(true);
        if (plain === 'pooled') c.attachStream(stream);
        else c.stream = stream;
        // Connected to an address, not a name: the peer is the address asked.
        connected(c.udsPath !== '' ? c.udsPath : `${c.ip !== '' ? c.ip : c.hostname}:${c.port}`);
      });
      if (pending !== null) return;
    }
    const opts: net.NetConnectOpts = c.udsPath !== ''
      ? { path: c.udsPath }
      : { host: c.ip !== '' ? c.ip : c.hostname, port: c.port, ...(source !== undefined ? { localAddress: source } : {}) };
    const s = net.connect(opts);
    sock = s;
    s.once('error', fail);
    s.once('connect', () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.off('error', fail);
      s.setNoDelay(true);
      // keepalive=On: TCP keep-alive probes on the backend connection (SO_KEEPALIVE, with the
      // system's idle time; libuv also sets its own probe interval and count).
      if (w.params.keepalive === true) s.setKeepAlive(true);
      c.attach(s);
      connected(c.udsPath !== '' ? c.udsPath : `${s.remoteAddress ?? c.hostname}:${s.remotePort ?? c.port}`);
    });
  });
}

/** A reader over the connection with a per-read timeout: one per connection (made at its
 *  first exchange), another only when an exchange asks for a different timeout (ping=). */
export function makeReader(c: BackendConn, timeout: number): BackendReader {
  const r = c.reader;
  if (r !== null && r.timeout === timeout) return r;
  const n = new ConnReader(c, timeout);
  if (r === null) c.reader = n;
  return n;
}

const TIMEOUT_TEXT = 'The timeout specified has expired';
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const STATUS_LINE = /^HTTP\/1\.\d \d\d\d/;

class ConnReader implements BackendReader {
  constructor(private readonly c: BackendConn, readonly timeout: number) {}

  async readLine(max: number): Promise<string | null> {
    const c = this.c;
    let line = '';
    let got = false;
    for (;;) {
      if (c.queue.length === 0) {
        if (c.ended) {
          if (c.error !== null && !got) throw new ProxyIoError('reset', c.error.message);
          return got ? line : null;
        }
        if (!(await c.wait(this.timeout))) throw new ProxyIoError('timeout', TIMEOUT_TEXT);
        continue;
      }
      const b = c.queue[0]!;
      const nl = b.indexOf(0x0a);
      const part = nl < 0 ? b : b.subarray(0, nl);
      line += part.toString('latin1');
      got = true;
      c.take(nl < 0 ? b.length : nl + 1);
      if (line.length > max) throw new ProxyIoError('toolong', 'line too long');
      if (nl >= 0) return line.endsWith('\r') ? line.slice(0, -1) : line;
    }
  }

  lineNow(max: number): string | undefined {
    const c = this.c;
    const b = c.queue[0];
    if (b === undefined) return undefined;
    const nl = b.indexOf(0x0a);
    if (nl < 0 || nl > max) return undefined;
    const end = nl > 0 && b[nl - 1] === 0x0d ? nl - 1 : nl;
    const line = b.toString('latin1', 0, end);
    c.take(nl + 1);
    return line;
  }

  /** The whole response head, when it came in one piece with an HTTP/1.x status line, every
   *  line ended by CR LF and none longer than `max`: its lines (the status line first, the
   *  empty line that ends the head left out), left on the stream (skip() takes them).
   *  undefined otherwise (read it line by line). */
  headNow(max: number): string[] | undefined {
    const c = this.c;
    const b = c.queue[0];
    if (b === undefined || b.length < 16) return undefined;
    const end = b.indexOf(HEAD_END);
    if (end < 0) return undefined;
    const s = b.toString('latin1', 0, end);
    if (!STATUS_LINE.test(s)) return undefined;
    // One scan for the line ends: each LF must follow a CR (a bare LF ends a line as well for
    // readLine, which then keeps no CR to strip: that head is read line by line).
    const lines: string[] = [];
    let pos = 0;
    for (;;) {
      const lf = s.indexOf('\n', pos);
      if (lf < 0) {
        if (s.length - pos >= max) return undefined;
        lines.push(s.slice(pos));
        return lines;
      }
      if (s.charCodeAt(lf - 1) !== 13 || lf - 1 - pos >= max) return undefined;
      lines.push(s.slice(pos, lf - 1));
      pos = lf + 1;
    }
  }

  skip(n: number): void {
    this.c.take(n);
  }

  ready(): true | Promise<boolean> {
    const c = this.c;
    return c.queue.length > 0 || c.ended ? true : c.wait(this.timeout);
  }

  async read(max: number): Promise<Buffer | null> {
    const c = this.c;
    for (;;) {
      const b = c.take(max);
      if (b !== null) return b;
      if (c.ended) {
        if (c.error !== null) throw new ProxyIoError('reset', c.error.message);
        return null;
      }
      if (!(await c.wait(this.timeout))) throw new ProxyIoError('timeout', TIMEOUT_TEXT);
    }
  }

  readNow(max: number): Buffer | undefined {
    return this.c.take(max) ?? undefined;
  }

  unread(b: Buffer): void { this.c.unread(b); }
}

/** Writes to the backend with backpressure; false when the socket failed. */
export function writeBackend(c: BackendConn, data: Buffer | string): Promise<boolean> | boolean {
  const s = c.socket;
  if (s === null || s.destroyed) return false;
  if (s.write(data)) return true;
  return new Promise((res) => {
    const done = (ok: boolean): void => { s.off('drain', onDrain); s.off('close', onClose); res(ok); };
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    s.once('drain', onDrain);
    s.once('close', onClose);
  });
}

/** ap_proxy_tunnel_run: bytes both ways until either side closes or nothing moves for
 *  `idle` ms. `client` is the client's raw stream (with what it sent already). */
export function tunnel(client: RawStream, c: BackendConn, idle: number): Promise<{ in: number; out: number }> {
  return new Promise((resolve) => {
    const be = c.socket!;
    let toBackend = 0; let toClient = 0;
    let timer: NodeJS.Timeout | null = null;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      if (timer !== null) clearTimeout(timer);
      client.destroy();
      be.destroy();
      resolve({ in: toClient, out: toBackend });
    };
    const arm = (): void => {
      if (timer !== null) clearTimeout(timer);
      timer = setTimeout(finish, idle);
    };
    arm();
    // What the backend sent after its 101 and the client after its request go first.
    for (const b of c.queue) { toClient += b.length; client.write(b); }
    c.queue = []; c.queued = 0;
    if (client.head.length > 0) { toBackend += client.head.length; be.write(client.head); }
    be.removeAllListeners('data');
    be.on('data', (d: Buffer) => {
      arm(); toClient += d.length;
      if (!client.write(d)) { be.pause(); client.onDrain(() => be.resume()); }
    });
    client.onData((d: Buffer) => {
      arm();
      if (be.destroyed) return;
      toBackend += d.length;
      if (!be.write(d)) { client.pause(); be.once('drain', () => client.resume()); }
    });
    be.resume();
    client.resume();
    // An end of one side is passed on as the end of the other's writing; the tunnel is over
    // once both sides ended (or either fails, or nothing moves for `idle`): a backend that
    // closes first leaves the client's side open until the client ends it (httpd's
    // ap_proxy_tunnel_run keeps reading the client after the origin's read shutdown).
    let clientEnded = false;
    let backendGone = false;
    be.on('end', () => { if (!client.destroyed) client.end(); });
    client.onEnd(() => { clientEnded = true; if (backendGone) finish(); else if (!be.destroyed) be.end(); });
    be.on('close', () => {
      backendGone = true;
      if (clientEnded || client.destroyed) { finish(); return; }
      // What the client still sends goes nowhere; its end is still waited for.
      client.resume();
    });
    client.onClose(finish);
    be.on('error', finish);
  });
}
