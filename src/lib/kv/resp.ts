// The Redis serialisation protocol (RESP2), as much of it as a small-object cache speaks:
// commands are sent as arrays of bulk strings; replies are simple strings, errors, integers,
// bulk strings (or nil) and arrays. The parser is incremental: it takes the bytes as they
// arrive and yields whole replies, and refuses what is not RESP (the connection is dropped).

export type RespReply =
  | { readonly t: 'simple'; readonly v: string }
  | { readonly t: 'error'; readonly v: string }
  | { readonly t: 'int'; readonly v: number }
  | { readonly t: 'bulk'; readonly v: Buffer | null }
  | { readonly t: 'array'; readonly v: readonly RespReply[] | null };

/** A command as RESP puts it on the wire. */
export function encodeCommand(args: readonly (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`, 'latin1')];
  for (const a of args) {
    const b = typeof a === 'string' ? Buffer.from(a, 'utf8') : a;
    parts.push(Buffer.from(`$${b.length}\r\n`, 'latin1'), b, CRLF);
  }
  return Buffer.concat(parts);
}

const CRLF = Buffer.from('\r\n', 'latin1');
/** Bounds on what a reply may claim, so that a broken peer cannot make us wait for gigabytes. */
const MAX_BULK = 64 * 1024 * 1024;
const MAX_ARRAY = 1024 * 1024;
const MAX_DEPTH = 8;

export class RespProtocolError extends Error {}

/** Not enough bytes yet. */
const MORE = Symbol('more');

export class RespParser {
  private buf: Buffer = Buffer.alloc(0);

  /** Adds bytes; returns the replies now complete, in order. Throws RespProtocolError. */
  push(data: Buffer): RespReply[] {
    this.buf = this.buf.length === 0 ? data : Buffer.concat([this.buf, data]);
    const out: RespReply[] = [];
    for (;;) {
      const r = this.parse(0, 0);
      if (r === MORE) break;
      out.push(r.reply);
      this.buf = this.buf.subarray(r.next);
      if (this.buf.length === 0) break;
    }
    return out;
  }

  private line(at: number): { text: string; next: number } | typeof MORE {
    const nl = this.buf.indexOf(CRLF, at);
    if (nl < 0) {
      if (this.buf.length - at > 64 * 1024) throw new RespProtocolError('line too long');
      return MORE;
    }
    return { text: this.buf.toString('latin1', at, nl), next: nl + 2 };
  }

  private parse(at: number, depth: number): { reply: RespReply; next: number } | typeof MORE {
    if (at >= this.buf.length) return MORE;
    if (depth > MAX_DEPTH) throw new RespProtocolError('nesting too deep');
    const kind = this.buf[at]!;
    const l = this.line(at + 1);
    if (l === MORE) return MORE;
    switch (kind) {
      case 0x2b: return { reply: { t: 'simple', v: l.text }, next: l.next };
      case 0x2d: return { reply: { t: 'error', v: l.text }, next: l.next };
      case 0x3a: return { reply: { t: 'int', v: integer(l.text, -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) }, next: l.next };
      case 0x24: {
        const n = integer(l.text, -1, MAX_BULK);
        if (n === -1) return { reply: { t: 'bulk', v: null }, next: l.next };
        if (this.buf.length < l.next + n + 2) return MORE;
        if (this.buf[l.next + n] !== 0x0d || this.buf[l.next + n + 1] !== 0x0a) throw new RespProtocolError('bulk string not terminated');
        return { reply: { t: 'bulk', v: Buffer.from(this.buf.subarray(l.next, l.next + n)) }, next: l.next + n + 2 };
      }
      case 0x2a: {
        const n = integer(l.text, -1, MAX_ARRAY);
        if (n === -1) return { reply: { t: 'array', v: null }, next: l.next };
        const items: RespReply[] = [];
        let next = l.next;
        for (let i = 0; i < n; i++) {
          const r = this.parse(next, depth + 1);
          if (r === MORE) return MORE;
          items.push(r.reply);
          next = r.next;
        }
        return { reply: { t: 'array', v: items }, next };
      }
      default: throw new RespProtocolError(`unexpected reply type 0x${kind.toString(16)}`);
    }
  }
}

function integer(text: string, min: number, max: number): number {
  if (!/^-?\d{1,16}$/.test(text)) throw new RespProtocolError(`bad integer '${text.slice(0, 20)}'`);
  const n = Number(text);
  if (n < min || n > max) throw new RespProtocolError(`integer out of range: ${n}`);
  return n;
}
