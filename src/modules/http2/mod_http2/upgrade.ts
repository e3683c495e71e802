// The HTTP/1.1 Upgrade to h2c (RFC 7540 3.2): the request that asked for the upgrade is
// answered on stream 1 of the new session. Node's HTTP/2 server only knows streams a client
// opened with HEADERS, so the request is handed to it as such a frame: after the client's
// connection preface and its first frame (SETTINGS), a HEADERS frame for stream 1 carrying
// the request (END_STREAM: an upgrade request has no body) is spliced into what the session
// reads. Its fields are HPACK literals that are not indexed, so the client's header
// compression state is untouched.

import { Duplex } from 'node:stream';
import type { Transport } from '../../../server/http/tcp-stream.js';
import { readShared } from '../../../server/http/accept.js';

/** The client connection preface (RFC 9113 3.4). */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** The largest first frame waited for (SETTINGS_MAX_FRAME_SIZE's initial value). */
const FIRST_FRAME_MAX = 16384;
const FRAME_HEADERS = 0x1;
const FLAG_END_STREAM = 0x1;
const FLAG_END_HEADERS = 0x4;

/** An HPACK integer with an N-bit prefix (RFC 7541 5.1), the prefix's other bits `first`. */
function hpackInt(out: number[], value: number, bits: number, first: number): void {
  const max = (1 << bits) - 1;
  if (value < max) { out.push(first | value); return; }
  out.push(first | max);
  let v = value - max;
  while (v >= 128) { out.push((v & 0x7f) | 0x80); v = Math.floor(v / 128); }
  out.push(v);
}

function hpackString(out: number[], s: string): void {
  const b = Buffer.from(s, 'latin1');
  hpackInt(out, b.length, 7, 0x00);
  for (const x of b) out.push(x);
}

/** A header block of literal fields without indexing, new names (RFC 7541 6.2.2). */
export function literalBlock(fields: readonly (readonly [string, string])[]): Buffer {
  const out: number[] = [];
  for (const [name, value] of fields) {
    out.push(0x00);
    hpackString(out, name);
    hpackString(out, value);
  }
  return Buffer.from(out);
}

/** A HEADERS frame for stream 1 ending the stream and the header block; null when the block
 *  does not fit one frame. */
export function stream1Headers(block: Buffer): Buffer | null {
  if (block.length > FIRST_FRAME_MAX) return null;
  const f = Buffer.alloc(9 + block.length);
  f.writeUIntBE(block.length, 0, 3);
  f[3] = FRAME_HEADERS;
  f[4] = FLAG_END_STREAM | FLAG_END_HEADERS;
  f.writeUInt32BE(1, 5);
  block.copy(f, 9);
  return f;
}

/**
 * Finds where the client's preface and first frame end in the input as it arrives, and puts
 * `insert` there; everything else passes unchanged. Input that is not a preface and a frame
 * (or whose first frame is too large to wait for) passes as it is, for the session to refuse.
 */
export class PrefaceSplicer {
  private held: Buffer[] = [];
  private heldLen = 0;
  private done = false;
  constructor(private readonly insert: Buffer) {}

  /** The bytes to hand on for `d` (possibly none yet). */
  feed(d: Buffer): Buffer[] {
    if (this.done) return [d];
    this.held.push(d);
    this.heldLen += d.length;
    const all = this.held.length === 1 ? this.held[0]! : Buffer.concat(this.held);
    this.held = [all];
    const n = Math.min(all.length, PREFACE.length);
    if (all.compare(PREFACE, 0, n, 0, n) !== 0) return this.release(all);
    if (all.length < PREFACE.length + 9) return [];
    const len = all.readUIntBE(PREFACE.length, 3);
    if (len > FIRST_FRAME_MAX) return this.release(all);
    const end = PREFACE.length + 9 + len;
    if (all.length < end) return [];
    this.done = true;
    this.held = [];
    this.heldLen = 0;
    const out = [all.subarray(0, end), this.insert];
    if (all.length > end) out.push(all.subarray(end));
    return out;
  }

  /** The input ended: what is held goes on as it is. */
  flush(): Buffer[] {
    if (this.done || this.heldLen === 0) return [];
    const all = Buffer.concat(this.held);
    this.done = true;
    this.held = [];
    return [all];
  }

  private release(all: Buffer): Buffer[] {
    this.done = true;
    this.held = [];
    this.heldLen = 0;
    return [all];
  }
}

/** The transport as a Duplex whose input has the upgrade request spliced in. */
export class UpgradeDuplex extends Duplex {
  private readonly splicer: PrefaceSplicer;
  private waiting: (() => void) | null = null;

  constructor(private readonly t: Transport, insert: Buffer, pending: Buffer) {
    super({ allowHalfOpen: false });
    this.splicer = new PrefaceSplicer(insert);
    const reader = (d: Buffer): void => { for (const b of this.splicer.feed(d)) this.push(b); };
    if (pending.length > 0) reader(pending);
    if (!readShared(t, reader)) t.on('data', reader);
    t.on('end', () => { for (const b of this.splicer.flush()) this.push(b); this.push(null); });
    t.on('close', () => { this.waiting?.(); this.destroy(); });
    t.on('drain', () => { const w = this.waiting; this.waiting = null; w?.(); });
    t.on('error', (e: Error) => this.destroy(e));
  }

  override _read(): void { /* input is pushed as it arrives */ }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (this.t.destroyed) { cb(); return; }
    if (this.t.write(chunk)) { cb(); return; }
    this.waiting = () => cb();
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.t.end();
    cb();
  }

  override _destroy(e: Error | null, cb: (e?: Error | null) => void): void {
    this.t.destroy();
    cb(e);
  }
}
