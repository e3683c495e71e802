// One pipelined connection to a cache server (memcached, Redis), kept per process: requests
// are written as they come and their replies matched in order. Every request is bounded by a
// timeout; a connection that fails, times out or speaks nonsense is dropped with every
// request on it answered as a failure (null), and the server is left alone for a while before
// it is tried again — so a cache server that goes away costs each request at most one timeout
// and then nothing (apr_memcache's and apr_redis's dead-server handling). An idle connection
// is closed after the pool TTL (MemcacheConnTTL, RedisConnPoolTTL).

import * as net from 'node:net';

export interface KvAddress {
  readonly host: string;
  readonly port: number;
}

/** Turns bytes into replies; `due` is the queue of tags of the requests awaiting replies
 *  (the parser may read it; the client removes them as replies arrive). */
export interface ReplyParser<Tag, Reply> {
  push(data: Buffer, due: Tag[]): Reply[];
}

export interface KvClientOptions {
  /** Longest wait for a reply (or the connect), ms. */
  readonly timeoutMs: number;
  /** An idle connection is closed after this long, ms (0: at once after the last reply). */
  readonly idleTtlMs: number;
  /** After a failure, requests fail at once for this long, ms. */
  readonly retryMs: number;
  /** The server stopped answering (once per outage). */
  readonly onDown: (why: string) => void;
}

interface Pending<Reply> {
  readonly resolve: (r: Reply | null) => void;
}

export class KvClient<Tag, Reply> {
  private sock: net.Socket | null = null;
  private connected = false;
  private readonly pending: Pending<Reply>[] = [];
  private readonly due: Tag[] = [];
  private parser: ReplyParser<Tag, Reply> | null = null;
  private downUntil = 0;
  private down = false;
  private timer: NodeJS.Timeout | null = null;
  private idle: NodeJS.Timeout | null = null;
  private queued: Buffer[] = [];

  constructor(
    readonly addr: KvAddress,
    private readonly opts: KvClientOptions,
    private readonly makeParser: () => ReplyParser<Tag, Reply>,
  ) {}

  /** Whether the server answered last time it was asked (for status pages). */
  get up(): boolean { return !this.down; }

  /** Sends one request; its reply, or null when the server could not be asked or answer. */
  request(bytes: Buffer, tag: Tag): Promise<Reply | null> {
    if (this.down && Date.now() < this.downUntil) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.pending.push({ resolve });
      this.due.push(tag);
      this.cancelIdle();
      const sock = this.sock ?? this.open();
      if (this.connected) sock.write(bytes);
      else this.queued.push(bytes);
      this.armTimer();
    });
  }

  private open(): net.Socket {
    const sock = net.connect({ host: this.addr.host, port: this.addr.port });
    sock.setNoDelay(true);
    this.sock = sock;
    this.connected = false;
    this.parser = this.makeParser();
    sock.on('connect', () => {
      if (this.sock !== sock) return;
      this.connected = true;
      for (const b of this.queued.splice(0)) sock.write(b);
    });
    sock.on('data', (d: Buffer) => {
      if (this.sock !== sock || this.parser === null) return;
      let replies: Reply[];
      try {
        replies = this.parser.push(d, this.due);
      } catch (e) {
        this.fail(`protocol error: ${(e as Error).message}`);
        return;
      }
      for (const r of replies) {
        // The parser took the replies' tags from `due` (or left them): keep the two in step.
        if (this.due.length > this.pending.length - 1) this.due.shift();
        this.pending.shift()?.resolve(r);
      }
      if (this.down) this.down = false;
      if (this.pending.length === 0) { this.clearTimer(); this.armIdle(); }
      else this.armTimer(true);
    });
    sock.on('error', (e: NodeJS.ErrnoException) => this.fail(e.code ?? e.message));
    sock.on('close', () => { if (this.sock === sock) this.fail('connection closed'); });
    return sock;
  }

  private armTimer(restart = false): void {
    if (this.timer !== null && !restart) return;
    this.clearTimer();
    this.timer = setTimeout(() => { this.timer = null; this.fail('timed out'); }, this.opts.timeoutMs);
    this.timer.unref();
  }
  private clearTimer(): void {
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
  }
  private armIdle(): void {
    this.cancelIdle();
    this.idle = setTimeout(() => { this.idle = null; if (this.pending.length === 0) this.closeSocket(); }, this.opts.idleTtlMs);
    this.idle.unref();
  }
  private cancelIdle(): void {
    if (this.idle !== null) { clearTimeout(this.idle); this.idle = null; }
  }

  private closeSocket(): void {
    const s = this.sock;
    this.sock = null;
    this.connected = false;
    this.parser = null;
    this.queued = [];
    s?.destroy();
  }

  private fail(why: string): void {
    this.clearTimer();
    this.cancelIdle();
    this.closeSocket();
    const waiting = this.pending.splice(0);
    this.due.length = 0;
    this.downUntil = Date.now() + this.opts.retryMs;
    if (!this.down) {
      this.down = true;
      this.opts.onDown(why);
    }
    for (const p of waiting) p.resolve(null);
  }

  close(): void {
    this.clearTimer();
    this.cancelIdle();
    this.closeSocket();
    for (const p of this.pending.splice(0)) p.resolve(null);
    this.due.length = 0;
  }
}

/** "host:port" or "host" (default port), as apr_parse_addr_port reads a server list item;
 *  an error text when it cannot be read. */
export function parseServer(item: string, defaultPort: number): KvAddress | string {
  let host: string;
  let port: string | undefined;
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(item);
  if (v6 !== null) { host = v6[1]!; port = v6[2]; }
  else {
    const colon = item.lastIndexOf(':');
    if (colon >= 0) { host = item.slice(0, colon); port = item.slice(colon + 1); }
    else host = item;
  }
  if (port !== undefined && !/^\d{1,5}$/.test(port)) return 'bad port';
  const p = port === undefined ? 0 : Number(port);
  if (p > 65535) return 'bad port';
  if (host === '') return 'no host';
  return { host, port: p === 0 ? defaultPort : p };
}
