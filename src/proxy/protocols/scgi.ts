// The SCGI request header as httpd's mod_proxy_scgi writes it: one netstring
// "LEN:CONTENT_LENGTH\0n\0SCGI\01\0NAME\0VALUE\0...," with CONTENT_LENGTH first and SCGI's
// own marker second, then the request body as it is. A streaming reader of that header for
// SCGI servers (the tests' backend) and the fuzz tests. Pure: no sockets.

/** The CGI variables SCGI does not carry from the environment (mod_proxy_scgi's
 *  send_headers writes CONTENT_LENGTH and SCGI itself and drops GATEWAY_INTERFACE). */
const LEFT_OUT = new Set(['GATEWAY_INTERFACE', 'CONTENT_LENGTH', 'SCGI']);

/** The netstring header for a request whose body is `contentLength` bytes long. */
export function encodeScgiHeader(env: Iterable<readonly [string, string]>, contentLength: number | bigint): Buffer {
  let body = `CONTENT_LENGTH\0${String(contentLength)}\0SCGI\x001\0`;
  for (const [n, v] of env) {
    if (LEFT_OUT.has(n)) continue;
    body += `${n}\0${v}\0`;
  }
  // Byte strings: the length is the string's length.
  return Buffer.from(`${body.length}:${body},`, 'latin1');
}

export interface ScgiRequestHead {
  /** The variables in the order sent (CONTENT_LENGTH and SCGI included). */
  readonly env: [string, string][];
  /** The request body bytes that came with the header's last chunk. */
  readonly rest: Buffer;
}

/** Reads an SCGI request header from a stream: feed chunks until it returns the head.
 *  Throws a SyntaxError on a malformed netstring or variable list, or one above `maxLength`. */
export class ScgiHeaderReader {
  private buf: Buffer = Buffer.alloc(0);
  private done = false;
  constructor(private readonly maxLength = 1 << 20) {}

  push(chunk: Buffer): ScgiRequestHead | undefined {
    if (this.done) throw new Error('SCGI header already read');
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const colon = this.buf.indexOf(0x3a);
    const digits = colon < 0 ? this.buf.length : colon;
    for (let i = 0; i < digits; i++) {
      const c = this.buf[i]!;
      if (c < 0x30 || c > 0x39) throw new SyntaxError('SCGI netstring length is not a number');
    }
    if (digits > 10 || (digits > 1 && this.buf[0] === 0x30)) throw new SyntaxError('SCGI netstring length is malformed');
    if (colon < 0) return undefined;
    if (colon === 0) throw new SyntaxError('SCGI netstring length is empty');
    const len = Number(this.buf.toString('latin1', 0, colon));
    if (len > this.maxLength) throw new SyntaxError(`SCGI header of ${len} bytes is too long`);
    const end = colon + 1 + len;
    if (this.buf.length < end + 1) return undefined;
    if (this.buf[end] !== 0x2c) throw new SyntaxError('SCGI netstring does not end with a comma');
    const fields = this.buf.toString('latin1', colon + 1, end);
    if (fields.length === 0 || !fields.endsWith('\0')) throw new SyntaxError('SCGI header does not end with a NUL');
    const parts = fields.slice(0, -1).split('\0');
    if (parts.length % 2 !== 0) throw new SyntaxError('SCGI header has a name without a value');
    const env: [string, string][] = [];
    for (let i = 0; i < parts.length; i += 2) env.push([parts[i]!, parts[i + 1]!]);
    if (env[0]?.[0] !== 'CONTENT_LENGTH' || !/^[0-9]+$/.test(env[0][1])) throw new SyntaxError('SCGI header does not start with CONTENT_LENGTH');
    this.done = true;
    const rest = this.buf.subarray(end + 1);
    this.buf = Buffer.alloc(0);
    return { env, rest };
  }
}
