// The uwsgi packet as httpd's mod_proxy_uwsgi writes it: a 4-byte header (modifier1, a
// little-endian 16-bit size, modifier2) and the variables as little-endian 16-bit
// length-prefixed names and values. The request body follows the packet as it is; the
// answer is an HTTP/1.x status line and header. A streaming packet reader for uwsgi
// servers (the tests' backend) and the fuzz tests. Pure: no sockets.

export const UWSGI_HEADER_LEN = 4;
/** The most a packet's variables may take (a 16-bit size). */
export const UWSGI_MAX_VARS = 65535;

export type UwsgiEncoded =
  | { readonly ok: true; readonly packet: Buffer }
  | { readonly ok: false; readonly size: number };

/** The packet for these variables; not ok (with the size) when they do not fit in 64 KB,
 *  where httpd answers 500 with AH10259. A value over 65535 bytes cannot be carried either. */
export function encodeUwsgiPacket(env: Iterable<readonly [string, string]>, modifier1 = 0, modifier2 = 0): UwsgiEncoded {
  const list: (readonly [string, string])[] = [];
  let size = 0;
  for (const e of env) {
    list.push(e);
    size += 2 + e[0].length + 2 + e[1].length;
  }
  if (size > UWSGI_MAX_VARS) return { ok: false, size };
  const b = Buffer.allocUnsafe(UWSGI_HEADER_LEN + size);
  b[0] = modifier1;
  b.writeUInt16LE(size, 1);
  b[3] = modifier2;
  let at = UWSGI_HEADER_LEN;
  for (const [n, v] of list) {
    b.writeUInt16LE(n.length, at);
    at += 2;
    at += b.write(n, at, 'latin1');
    b.writeUInt16LE(v.length, at);
    at += 2;
    at += b.write(v, at, 'latin1');
  }
  return { ok: true, packet: b };
}

export interface UwsgiPacket {
  readonly modifier1: number;
  readonly modifier2: number;
  readonly env: [string, string][];
  /** Bytes after the packet that came in its last chunk (the start of the body). */
  readonly rest: Buffer;
}

/** Reads one uwsgi packet from a stream (at most 4 + 65535 bytes are held). Throws a
 *  SyntaxError when a variable runs past the packet's size. */
export class UwsgiPacketReader {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): UwsgiPacket | undefined {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    if (this.buf.length < UWSGI_HEADER_LEN) return undefined;
    const size = this.buf.readUInt16LE(1);
    const end = UWSGI_HEADER_LEN + size;
    if (this.buf.length < end) return undefined;
    const env: [string, string][] = [];
    let at = UWSGI_HEADER_LEN;
    const str = (): string => {
      if (at + 2 > end) throw new SyntaxError('uwsgi variable length runs past the packet');
      const n = this.buf.readUInt16LE(at);
      at += 2;
      if (at + n > end) throw new SyntaxError('uwsgi variable runs past the packet');
      const s = this.buf.toString('latin1', at, at + n);
      at += n;
      return s;
    };
    while (at < end) {
      const name = str();
      env.push([name, str()]);
    }
    const packet = { modifier1: this.buf[0]!, modifier2: this.buf[3]!, env, rest: this.buf.subarray(end) };
    this.buf = Buffer.alloc(0);
    return packet;
  }
}
