// A small reader of DER (X.690 distinguished encoding), for the few fields of certificates,
// CRLs and TLS session records that Node's crypto does not expose: a certificate's signature
// algorithm, a CRL's revoked serial numbers, a session's id. It reads definite lengths only
// (DER has no other) and refuses anything that runs past its container.

export interface Tlv {
  /** The identifier octet (class, constructed bit, tag number < 31). */
  readonly tag: number;
  /** The whole element, header included. */
  readonly start: number;
  readonly end: number;
  /** Where the contents start. */
  readonly body: number;
}

export class DerError extends Error {}

/** Reads the element at `at` within `buf[..limit)`. */
export function readTlv(buf: Uint8Array, at: number, limit = buf.length): Tlv {
  if (at + 2 > limit) throw new DerError('truncated header');
  const tag = buf[at]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('high tag numbers not supported');
  let len = buf[at + 1]!;
  let body = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new DerError('bad length');
    if (body + n > limit) throw new DerError('truncated length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[body + i]!;
    body += n;
  }
  const end = body + len;
  if (end > limit) throw new DerError('element runs past its container');
  return { tag, start: at, end, body };
}

/** The elements inside a constructed element, in order. */
export function children(buf: Uint8Array, parent: Tlv): Tlv[] {
  if ((parent.tag & 0x20) === 0) throw new DerError('not a constructed element');
  const out: Tlv[] = [];
  let at = parent.body;
  while (at < parent.end) {
    const t = readTlv(buf, at, parent.end);
    out.push(t);
    at = t.end;
    if (out.length > 100000) throw new DerError('too many elements');
  }
  return out;
}

/** An OBJECT IDENTIFIER's dotted form. */
export function oid(buf: Uint8Array, t: Tlv): string {
  if (t.tag !== 0x06 || t.end === t.body) throw new DerError('not an OID');
  const parts: number[] = [];
  let v = 0;
  for (let i = t.body; i < t.end; i++) {
    const b = buf[i]!;
    v = v * 128 + (b & 0x7f);
    if (v > Number.MAX_SAFE_INTEGER / 128) throw new DerError('OID arc too large');
    if ((b & 0x80) === 0) {
      if (parts.length === 0) {
        const first = v < 80 ? Math.floor(v / 40) : 2;
        parts.push(first, v - first * 40);
      } else parts.push(v);
      v = 0;
    }
  }
  return parts.join('.');
}

/** An element's contents. */
export function contents(buf: Uint8Array, t: Tlv): Buffer {
  return Buffer.from(buf.buffer, buf.byteOffset + t.body, t.end - t.body);
}

/** An INTEGER's value as uppercase hexadecimal without leading zeros (OpenSSL's BN_bn2hex). */
export function integerHex(buf: Uint8Array, t: Tlv): string {
  if (t.tag !== 0x02) throw new DerError('not an INTEGER');
  let hex = contents(buf, t).toString('hex').toUpperCase().replace(/^(00)+/, '');
  if (hex === '') hex = '0';
  return hex.length % 2 === 1 ? '0' + hex : hex;
}

// ---- writing ----------------------------------------------------------------------------------

/** One element: identifier octet, definite length, contents. */
export function encodeTlv(tag: number, ...parts: readonly Uint8Array[]): Buffer {
  const body = Buffer.concat(parts);
  const n = body.length;
  let head: Buffer;
  if (n < 0x80) head = Buffer.from([tag, n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    head = Buffer.from([tag, 0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([head, body]);
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function encodeOid(dotted: string): Buffer {
  const arcs = dotted.split('.').map((x) => Number(x));
  if (arcs.length < 2 || arcs.some((a) => !Number.isSafeInteger(a) || a < 0)) throw new DerError(`bad OID ${dotted}`);
  const out: number[] = [];
  const push = (v: number): void => {
    const b: number[] = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) b.unshift(0x80 | (x & 0x7f));
    out.push(...b);
  };
  push(arcs[0]! * 40 + arcs[1]!);
  for (const a of arcs.slice(2)) push(a);
  return encodeTlv(0x06, Buffer.from(out));
}

/** A GeneralizedTime or UTCTime element's value. */
export function readTime(buf: Uint8Array, t: Tlv): Date {
  const s = contents(buf, t).toString('latin1');
  let m: RegExpExecArray | null;
  if (t.tag === 0x18 && (m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.\d+)?Z$/.exec(s)) !== null) {
    return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  }
  if (t.tag === 0x17 && (m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(s)) !== null) {
    const y = +m[1]!;
    return new Date(Date.UTC(y < 50 ? 2000 + y : 1900 + y, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  }
  throw new DerError('not a time');
}
