// Pull-style reading of a backend socket for the CGI-like proxy modules (mod_proxy_fcgi,
// mod_proxy_scgi, mod_proxy_uwsgi), as httpd's blocking apr_socket_recv with the socket's
// timeout: read() gives the next chunk, null at the end of the stream, 'timeout' when nothing
// came within the time. The socket is paused while unread data waits, so a fast backend
// is held back by a slow client (backpressure), never buffered whole.

import type { ByteStream } from '../../proxy/api.js';

/** The most unread bytes held before the socket is paused. */
const HIGH_WATER = 64 * 1024;

export class BackendReader {
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly sock: ByteStream) {
    sock.on('data', (d: Buffer) => {
      this.queue.push(d);
      this.queued += d.length;
      if (this.queued >= HIGH_WATER) sock.pause();
      this.notify();
    });
    const ended = (): void => { this.ended = true; this.notify(); };
    sock.on('end', ended);
    sock.on('close', ended);
    sock.on('error', (e: Error) => { this.error ??= e; this.ended = true; this.notify(); });
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** The socket's error, if it failed (rather than ended). */
  get failure(): Error | undefined {
    return this.error;
  }

  /** Puts bytes back at the front (a reader took more than it needed). */
  unshift(b: Buffer): void {
    if (b.length === 0) return;
    this.queue.unshift(b);
    this.queued += b.length;
  }

  /** Whether a chunk is waiting (a read would not wait). */
  get ready(): boolean {
    return this.queue.length > 0 || this.ended;
  }

  /** Waits at most `ms` for a chunk (or the end): false when none came in that time (the
   *  apr_poll of flushpackets=auto timing out after flushwait=). */
  waitReady(ms: number): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    if (this.sock.isPaused()) this.sock.resume();
    return new Promise<boolean>((res) => {
      const t = setTimeout(() => { this.wake = undefined; res(false); }, ms);
      this.wake = () => { clearTimeout(t); res(true); };
    });
  }

  /** The next chunk if one is waiting, null at the end of the stream, undefined when a read
   *  would wait (no promise: a reader that finds data here goes on at once). */
  poll(): Buffer | null | undefined {
    const b = this.queue.shift();
    if (b !== undefined) {
      this.queued -= b.length;
      if (this.queued < HIGH_WATER && this.sock.isPaused()) this.sock.resume();
      return b;
    }
    return this.ended ? null : undefined;
  }

  /** The next chunk; null at the end of the stream (or after an error: see `failure`);
   *  'timeout' after `timeoutMs` without data. */
  read(timeoutMs: number): Promise<Buffer | null | 'timeout'> {
    const b = this.poll();
    if (b !== undefined) return Promise.resolve(b);
    if (this.sock.isPaused()) this.sock.resume();
    return new Promise((res) => {
      const t = setTimeout(() => { this.wake = undefined; res('timeout'); }, timeoutMs);
      this.wake = () => {
        clearTimeout(t);
        const next = this.poll();
        res(next !== undefined ? next : this.read(timeoutMs));
      };
    });
  }
}

const CLOSED = new Error('socket closed');

/** writeTo without a promise when the stream takes the bytes at once (the usual case):
 *  the error or undefined then, a promise only when the write has to wait for 'drain'. */
export function writeNow(sock: ByteStream, buf: Buffer): Error | undefined | Promise<Error | undefined> {
  if (sock.destroyed) return sock.errored ?? CLOSED;
  if (buf.length === 0) return undefined;
  const ok = sock.write(buf);
  if (sock.destroyed) return sock.errored ?? CLOSED;
  if (ok) return undefined;
  return drained(sock);
}

function drained(sock: ByteStream): Promise<Error | undefined> {
  return new Promise((res) => {
    const drained = (): void => { sock.off('close', closed); res(undefined); };
    const closed = (): void => { sock.off('drain', drained); res(sock.errored ?? CLOSED); };
    sock.on('drain', drained);
    sock.on('close', closed);
  });
}

/** Writes to the backend: resolves once the stream took the bytes (at once unless it holds
 *  more than its high-water mark: then on 'drain'), with the error when the write failed (a
 *  failed write destroys the stream). The pieces of a list go out as one write. */
export function writeTo(sock: ByteStream, data: Buffer | readonly Buffer[]): Promise<Error | undefined> {
  if (sock.destroyed) return Promise.resolve(sock.errored ?? CLOSED);
  const buf = Buffer.isBuffer(data) ? data : data.length === 1 ? data[0]! : Buffer.concat(data);
  if (buf.length === 0) return Promise.resolve(undefined);
  const ok = sock.write(buf);
  if (sock.destroyed) return Promise.resolve(sock.errored ?? CLOSED);
  if (ok) return Promise.resolve(undefined);
  return drained(sock);
}
