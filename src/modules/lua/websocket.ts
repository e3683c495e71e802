// mod_lua's WebSocket support (httpd's lua_request.c: r:wsupgrade, r:wsread, r:wswrite,
// r:wsping, r:wsclose): the RFC 6455 handshake answer and a frame reader over the client's
// byte stream once the connection left HTTP.

import { createHash } from 'node:crypto';
import type { RawStream } from '../../server/request/request.js';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** lua_request.c reads a payload only below HUGE_STRING_LEN * 1024 bytes. */
export const MAX_PAYLOAD = 8192 * 1024;

/** The Sec-WebSocket-Accept value for a client's key. */
export function acceptKey(key: string): string {
  return createHash('sha1').update(key + GUID, 'latin1').digest('base64');
}

export interface WsFrame {
  readonly fin: boolean;
  readonly opcode: number;
  readonly payload: Buffer;
}

/** Parses one frame at the start of `buf`: the frame and the bytes it took, 'more' when the
 *  frame is not complete yet, or 'toolarge' for a payload over MAX_PAYLOAD. */
export function parseFrame(buf: Buffer): { frame: WsFrame; used: number } | 'more' | 'toolarge' {
  if (buf.length < 2) return 'more';
  const b0 = buf[0]!;
  const b1 = buf[1]!;
  const masked = (b1 & 0x80) !== 0;
  let len = b1 & 0x7f;
  let pos = 2;
  if (len === 126) {
    if (buf.length < 4) return 'more';
    len = buf.readUInt16BE(2);
    pos = 4;
  } else if (len === 127) {
    if (buf.length < 10) return 'more';
    const big = buf.readBigUInt64BE(2);
    if (big > BigInt(MAX_PAYLOAD)) return 'toolarge';
    len = Number(big);
    pos = 10;
  }
  if (len > MAX_PAYLOAD) return 'toolarge';
  let mask: Buffer | null = null;
  if (masked) {
    if (buf.length < pos + 4) return 'more';
    mask = buf.subarray(pos, pos + 4);
    pos += 4;
  }
  if (buf.length < pos + len) return 'more';
  const payload = Buffer.from(buf.subarray(pos, pos + len));
  if (mask !== null) for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ mask[i & 3]!;
  return { frame: { fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload }, used: pos + len };
}

/** A server frame (never masked). */
export function buildFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.alloc(2) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  head[0] = (fin ? 0x80 : 0) | (opcode & 0x0f);
  if (n < 126) head[1] = n;
  else if (n < 65536) { head[1] = 126; head.writeUInt16BE(n, 2); }
  else { head[1] = 127; head.writeBigUInt64BE(BigInt(n), 2); }
  return Buffer.concat([head, payload]);
}

/** The connection after r:wsupgrade: frames in, frames out. */
export class WsConn {
  private buf: Buffer;
  private waiter: (() => void) | null = null;
  private ended = false;
  closed = false;
  constructor(readonly raw: RawStream) {
    this.buf = raw.head.length ? Buffer.from(raw.head) : Buffer.alloc(0);
    raw.onData((d) => { this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d; this.wake(); });
    raw.onEnd(() => { this.ended = true; this.wake(); });
    raw.onClose(() => { this.ended = true; this.wake(); });
  }
  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  /** The next frame, or null when the client went away (or sent garbage). */
  async nextFrame(): Promise<WsFrame | null> {
    for (;;) {
      const p = parseFrame(this.buf);
      if (p === 'toolarge') return null;
      if (p !== 'more') {
        this.buf = this.buf.subarray(p.used);
        return p.frame;
      }
      if (this.ended || this.raw.destroyed) return null;
      await new Promise<void>((res) => { this.waiter = res; });
    }
  }

  /** r:wsread: the payload of the next data frame and its FIN bit. A ping is answered with
   *  a pong and reading goes on; a close frame or an empty frame ends the reading (nil). */
  async read(): Promise<{ payload: Buffer; fin: boolean } | null> {
    for (;;) {
      const f = await this.nextFrame();
      if (f === null) return null;
      if (f.payload.length > 0 && f.opcode !== 0x09 && f.opcode !== 0x0a && f.opcode !== 0x08) return { payload: f.payload, fin: f.fin };
      if (f.opcode === 0x09) { this.send(buildFrame(0x0a, f.payload)); continue; }
      if (f.opcode === 0x0a) continue;
      if (f.opcode === 0x08) this.send(buildFrame(0x08, Buffer.alloc(0)));
      return null;
    }
  }

  send(frame: Buffer): boolean {
    if (this.closed || this.raw.destroyed) return false;
    this.raw.write(frame);
    return true;
  }

  /** r:wsping: a ping, true when the next frame is its pong. */
  async ping(): Promise<boolean> {
    if (!this.send(buildFrame(0x09, Buffer.alloc(0)))) return false;
    const f = await this.nextFrame();
    return f !== null && f.opcode === 0x0a;
  }

  /** r:wsclose: a close frame, then the connection ends. */
  close(): void {
    if (this.closed) return;
    this.send(buildFrame(0x08, Buffer.alloc(0)));
    this.closed = true;
    this.raw.end();
  }
}
