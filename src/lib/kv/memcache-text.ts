// memcached's text protocol (doc/protocol.txt in memcached), as much of it as a small-object
// cache speaks: "set KEY FLAGS EXPTIME BYTES", "get KEY", "delete KEY". The reply parser is
// incremental and knows which command each reply answers (replies come in request order):
// a get's reply is zero or one VALUE block then END; set answers STORED / NOT_STORED; delete
// DELETED / NOT_FOUND; any command may get ERROR, CLIENT_ERROR or SERVER_ERROR lines.

export type McCommand = 'get' | 'set' | 'delete' | 'stats';
export type McReply =
  | { readonly t: 'value'; readonly v: Buffer | null }
  | { readonly t: 'stats'; readonly v: ReadonlyMap<string, string> }
  | { readonly t: 'status'; readonly v: string }
  | { readonly t: 'error'; readonly v: string };

export class McProtocolError extends Error {}

const CRLF = Buffer.from('\r\n', 'latin1');
const MAX_VALUE = 64 * 1024 * 1024;

/** A key memcached accepts: 1-250 bytes, no control characters or spaces. */
export function validKey(key: string): boolean {
  return key.length > 0 && key.length <= 250 && /^[\x21-\x7e]+$/.test(key);
}

export function encodeGet(key: string): Buffer {
  return Buffer.from(`get ${key}\r\n`, 'latin1');
}
export function encodeSet(key: string, exptime: number, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`set ${key} 0 ${exptime} ${data.length}\r\n`, 'latin1'), data, CRLF]);
}
export const STATS_COMMAND: Buffer = Buffer.from('stats\r\n', 'latin1');
export function encodeDelete(key: string): Buffer {
  return Buffer.from(`delete ${key}\r\n`, 'latin1');
}

export class McParser {
  private buf: Buffer = Buffer.alloc(0);

  /** Adds bytes; `expect` is the queue of commands whose replies are due, oldest first (the
   *  parser takes from it as replies complete). Throws McProtocolError. */
  push(data: Buffer, expect: McCommand[]): McReply[] {
    this.buf = this.buf.length === 0 ? data : Buffer.concat([this.buf, data]);
    const out: McReply[] = [];
    while (this.buf.length > 0) {
      const cmd = expect[0];
      if (cmd === undefined) throw new McProtocolError('reply without a request');
      const r = this.one(cmd);
      if (r === null) break;
      expect.shift();
      out.push(r.reply);
      this.buf = this.buf.subarray(r.next);
    }
    return out;
  }

  private one(cmd: McCommand): { reply: McReply; next: number } | null {
    const nl = this.buf.indexOf(CRLF);
    if (nl < 0) {
      if (this.buf.length > 8192) throw new McProtocolError('line too long');
      return null;
    }
    const line = this.buf.toString('latin1', 0, nl);
    const next = nl + 2;
    if (line === 'ERROR' || line.startsWith('CLIENT_ERROR') || line.startsWith('SERVER_ERROR')) {
      return { reply: { t: 'error', v: line }, next };
    }
    if (cmd === 'stats') return this.stats();
    if (cmd !== 'get') {
      if (!/^[A-Z_]+$/.test(line)) throw new McProtocolError(`unexpected reply '${line.slice(0, 40)}'`);
      return { reply: { t: 'status', v: line }, next };
    }
    if (line === 'END') return { reply: { t: 'value', v: null }, next };
    const m = /^VALUE (\S+) (\d{1,10}) (\d{1,10})(?: \d+)?$/.exec(line);
    if (m === null) throw new McProtocolError(`unexpected reply '${line.slice(0, 40)}'`);
    const len = Number(m[3]);
    if (len > MAX_VALUE) throw new McProtocolError('value too large');
    const end = next + len;
    // The data, CRLF, then "END\r\n".
    if (this.buf.length < end + 7) return null;
    if (this.buf[end] !== 0x0d || this.buf[end + 1] !== 0x0a || this.buf.toString('latin1', end + 2, end + 7) !== 'END\r\n') {
      throw new McProtocolError('value not terminated by END');
    }
    return { reply: { t: 'value', v: Buffer.from(this.buf.subarray(next, end)) }, next: end + 7 };
  }

  /** "STAT name value" lines up to END (the whole reply, or null until it is here). */
  private stats(): { reply: McReply; next: number } | null {
    const v = new Map<string, string>();
    let at = 0;
    for (;;) {
      const nl = this.buf.indexOf(CRLF, at);
      if (nl < 0) {
        if (this.buf.length > 256 * 1024) throw new McProtocolError('stats too long');
        return null;
      }
      const line = this.buf.toString('latin1', at, nl);
      at = nl + 2;
      if (line === 'END') return { reply: { t: 'stats', v }, next: at };
      const m = /^STAT (\S+) (.*)$/.exec(line);
      if (m === null) throw new McProtocolError(`unexpected reply '${line.slice(0, 40)}'`);
      v.set(m[1]!, m[2]!);
    }
  }
}
