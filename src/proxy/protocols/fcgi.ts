// The FastCGI 1.0 wire format as httpd's mod_proxy_fcgi speaks it (include/util_fcgi.h,
// server/util_fcgi.c): record headers, BEGIN_REQUEST, name-value pairs packed into PARAMS
// records of at most 16 KB, STDIN split at 65535 bytes, and a streaming record reader that
// hands content on as it arrives (a response body is never held whole). Pure: no sockets.
//
// Strings are byte strings (latin1), as everywhere in plume's request data.

export const FCGI_VERSION_1 = 1;
export const FCGI_HEADER_LEN = 8;
/** The largest content of one record (a 16-bit length). */
export const FCGI_MAX_CONTENT_LEN = 65535;
/** httpd packs PARAMS records up to this size ("our limit per record"). */
export const FCGI_PARAMS_RECORD_LIMIT = 16 * 1024;

/** Record types (FastCGI specification, section 8). */
export const FcgiType = {
  BEGIN_REQUEST: 1,
  ABORT_REQUEST: 2,
  END_REQUEST: 3,
  PARAMS: 4,
  STDIN: 5,
  STDOUT: 6,
  STDERR: 7,
  DATA: 8,
  GET_VALUES: 9,
  GET_VALUES_RESULT: 10,
  UNKNOWN_TYPE: 11,
} as const;

export const FCGI_RESPONDER = 1;
export const FCGI_AUTHORIZER = 2;
export const FCGI_FILTER = 3;
/** BEGIN_REQUEST flag: the application keeps the connection open after the request. */
export const FCGI_KEEP_CONN = 1;

/** END_REQUEST protocolStatus values. */
export const FcgiProtocolStatus = {
  REQUEST_COMPLETE: 0,
  CANT_MPX_CONN: 1,
  OVERLOADED: 2,
  UNKNOWN_ROLE: 3,
} as const;

export interface FcgiHeader {
  readonly version: number;
  readonly type: number;
  readonly requestId: number;
  readonly contentLength: number;
  readonly paddingLength: number;
}

/** An 8-byte record header. */
export function encodeHeader(type: number, requestId: number, contentLength: number, paddingLength = 0): Buffer {
  if (contentLength < 0 || contentLength > FCGI_MAX_CONTENT_LEN) throw new RangeError(`FastCGI content length ${contentLength}`);
  const b = Buffer.allocUnsafe(FCGI_HEADER_LEN);
  b[0] = FCGI_VERSION_1;
  b[1] = type;
  b.writeUInt16BE(requestId, 2);
  b.writeUInt16BE(contentLength, 4);
  b[6] = paddingLength;
  b[7] = 0;
  return b;
}

export function decodeHeader(b: Buffer, at = 0): FcgiHeader {
  return {
    version: b[at]!,
    type: b[at + 1]!,
    requestId: b.readUInt16BE(at + 2),
    contentLength: b.readUInt16BE(at + 4),
    paddingLength: b[at + 6]!,
  };
}

/** A whole BEGIN_REQUEST record (header and its 8-byte body). */
export function encodeBeginRequest(requestId: number, role: number, flags: number): Buffer {
  const b = Buffer.alloc(FCGI_HEADER_LEN * 2);
  encodeHeader(FcgiType.BEGIN_REQUEST, requestId, 8).copy(b, 0);
  b.writeUInt16BE(role, 8);
  b[10] = flags;
  return b;
}

/** A whole END_REQUEST record (what an application sends last). */
export function encodeEndRequest(requestId: number, appStatus: number, protocolStatus: number): Buffer {
  const b = Buffer.alloc(FCGI_HEADER_LEN * 2);
  encodeHeader(FcgiType.END_REQUEST, requestId, 8).copy(b, 0);
  b.writeUInt32BE(appStatus >>> 0, 8);
  b[12] = protocolStatus;
  return b;
}

/** Bytes a name or value length takes: one below 128, four otherwise. */
function lengthSize(n: number): number {
  return n >> 7 === 0 ? 1 : 4;
}

function writeLength(b: Buffer, at: number, n: number): number {
  if (n >> 7 === 0) { b[at] = n; return at + 1; }
  b.writeUInt32BE((n | 0x80000000) >>> 0, at);
  return at + 4;
}

/** The encoded size of one name-value pair. */
export function pairLength(name: string, value: string): number {
  return lengthSize(name.length) + lengthSize(value.length) + name.length + value.length;
}

/** One name-value pair, encoded. */
export function encodePair(name: string, value: string): Buffer {
  const b = Buffer.allocUnsafe(pairLength(name, value));
  let at = writeLength(b, 0, name.length);
  at = writeLength(b, at, value.length);
  at += b.write(name, at, 'latin1');
  b.write(value, at, 'latin1');
  return b;
}

export interface EncodedParams {
  /** PARAMS records, each a header and its content, the empty closing record last. */
  readonly records: Buffer[];
  /** Names of pairs larger than one record could carry, left out (httpd's AH02536). */
  readonly skipped: string[];
}

/** The environment as PARAMS records: as many whole pairs in each record as fit within
 *  `limit` bytes of content (ap_fcgi_encoded_env_len), a pair too big for any record left
 *  out, then the empty record that ends the stream. */
export function encodeParams(requestId: number, env: Iterable<readonly [string, string]>, limit = FCGI_PARAMS_RECORD_LIMIT): EncodedParams {
  const records: Buffer[] = [];
  const skipped: string[] = [];
  let batch: [string, string][] = [];
  let size = 0;
  const flush = (): void => {
    if (batch.length === 0) return;
    const b = Buffer.allocUnsafe(FCGI_HEADER_LEN + size);
    encodeHeader(FcgiType.PARAMS, requestId, size).copy(b, 0);
    let at = FCGI_HEADER_LEN;
    for (const [n, v] of batch) {
      at = writeLength(b, at, n.length);
      at = writeLength(b, at, v.length);
      at += b.write(n, at, 'latin1');
      at += b.write(v, at, 'latin1');
    }
    records.push(b);
    batch = [];
    size = 0;
  };
  for (const [n, v] of env) {
    const len = pairLength(n, v);
    if (len > limit) {
      // httpd meets it at the start of a record: what was packed before goes out first.
      flush();
      skipped.push(n);
      continue;
    }
    if (size + len > limit) flush();
    batch.push([n, v]);
    size += len;
  }
  flush();
  records.push(encodeHeader(FcgiType.PARAMS, requestId, 0));
  return { records, skipped };
}

/** Data as records of one stream type (STDIN, or STDOUT/STDERR for an application), split
 *  at the 65535-byte record limit. Empty data gives the one empty record that closes the
 *  stream. */
export function encodeStream(type: number, requestId: number, data: Buffer, paddingTo = 1): Buffer[] {
  const out: Buffer[] = [];
  if (data.length === 0) {
    out.push(encodeHeader(type, requestId, 0));
    return out;
  }
  for (let at = 0; at < data.length; at += FCGI_MAX_CONTENT_LEN) {
    const piece = data.subarray(at, Math.min(data.length, at + FCGI_MAX_CONTENT_LEN));
    const pad = (paddingTo - (piece.length % paddingTo)) % paddingTo;
    out.push(encodeHeader(type, requestId, piece.length, pad), piece);
    if (pad > 0) out.push(Buffer.alloc(pad));
  }
  return out;
}

/** What the record reader finds, in stream order. `content` events carry a record's
 *  content as it arrives (several events for one record when it spans TCP chunks);
 *  `end-request` is an END_REQUEST record's body, read whole. */
export type FcgiEvent =
  | { readonly kind: 'header'; readonly header: FcgiHeader }
  | { readonly kind: 'content'; readonly type: number; readonly requestId: number; readonly data: Buffer }
  | { readonly kind: 'record-end'; readonly header: FcgiHeader }
  | { readonly kind: 'end-request'; readonly requestId: number; readonly appStatus: number; readonly protocolStatus: number };

const enum ReadState { Header, Content, Padding }

/** Streaming reader of FastCGI records. Feed it socket chunks; it returns what they
 *  completed. Only a record header (8 bytes) and an END_REQUEST body (8 bytes) are
 *  collected across chunks; content is sliced from the chunks, never copied or held. */
export class FcgiRecordReader {
  private state = ReadState.Header;
  private readonly head = Buffer.alloc(FCGI_HEADER_LEN);
  private headFill = 0;
  private current: FcgiHeader | undefined;
  private remaining = 0;
  private endBody: Buffer | undefined;
  private endFill = 0;

  /** True between records: the stream may end here cleanly. */
  get atBoundary(): boolean {
    return this.state === ReadState.Header && this.headFill === 0;
  }

  push(chunk: Buffer): FcgiEvent[] {
    const events: FcgiEvent[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.state === ReadState.Header) {
        const take = Math.min(FCGI_HEADER_LEN - this.headFill, chunk.length - at);
        chunk.copy(this.head, this.headFill, at, at + take);
        this.headFill += take;
        at += take;
        if (this.headFill < FCGI_HEADER_LEN) break;
        this.headFill = 0;
        const h = decodeHeader(this.head);
        this.current = h;
        events.push({ kind: 'header', header: h });
        this.remaining = h.contentLength;
        if (h.type === FcgiType.END_REQUEST) { this.endBody = Buffer.alloc(Math.max(8, h.contentLength)); this.endFill = 0; }
        this.state = ReadState.Content;
        this.afterContent(events);
        continue;
      }
      const h = this.current!;
      if (this.state === ReadState.Content) {
        const take = Math.min(this.remaining, chunk.length - at);
        if (this.endBody !== undefined) {
          chunk.copy(this.endBody, this.endFill, at, at + take);
          this.endFill += take;
        } else {
          events.push({ kind: 'content', type: h.type, requestId: h.requestId, data: chunk.subarray(at, at + take) });
        }
        this.remaining -= take;
        at += take;
        this.afterContent(events);
        continue;
      }
      // Padding: skipped.
      const take = Math.min(this.remaining, chunk.length - at);
      this.remaining -= take;
      at += take;
      if (this.remaining === 0) this.finishRecord(events);
    }
    return events;
  }

  private afterContent(events: FcgiEvent[]): void {
    if (this.state !== ReadState.Content || this.remaining > 0) return;
    const h = this.current!;
    if (this.endBody !== undefined) {
      const b = this.endBody;
      this.endBody = undefined;
      events.push({ kind: 'end-request', requestId: h.requestId, appStatus: b.readUInt32BE(0), protocolStatus: b[4]! });
    }
    this.remaining = h.paddingLength;
    this.state = ReadState.Padding;
    if (this.remaining === 0) this.finishRecord(events);
  }

  private finishRecord(events: FcgiEvent[]): void {
    events.push({ kind: 'record-end', header: this.current! });
    this.state = ReadState.Header;
  }
}

/** Streaming decoder of name-value pairs (a PARAMS or GET_VALUES stream, whose pairs may
 *  straddle records). Used by test backends and the fuzz tests; bounded by `maxPair`. */
export class FcgiPairDecoder {
  private buf: Buffer = Buffer.alloc(0);
  constructor(private readonly maxPair = 1 << 20) {}

  /** Pairs completed by this data; throws on a pair larger than the bound. */
  push(data: Buffer): [string, string][] {
    this.buf = this.buf.length === 0 ? data : Buffer.concat([this.buf, data]);
    const out: [string, string][] = [];
    let at = 0;
    for (;;) {
      const nl = readLength(this.buf, at);
      if (nl === undefined) break;
      const vl = readLength(this.buf, at + nl.size);
      if (vl === undefined) break;
      if (nl.value + vl.value > this.maxPair) throw new RangeError(`FastCGI name-value pair of ${nl.value + vl.value} bytes`);
      const start = at + nl.size + vl.size;
      if (this.buf.length < start + nl.value + vl.value) break;
      out.push([
        this.buf.toString('latin1', start, start + nl.value),
        this.buf.toString('latin1', start + nl.value, start + nl.value + vl.value),
      ]);
      at = start + nl.value + vl.value;
    }
    this.buf = this.buf.subarray(at);
    return out;
  }

  /** True when no partial pair is pending. */
  get clean(): boolean {
    return this.buf.length === 0;
  }
}

function readLength(b: Buffer, at: number): { value: number; size: number } | undefined {
  if (at >= b.length) return undefined;
  if ((b[at]! & 0x80) === 0) return { value: b[at]!, size: 1 };
  if (at + 4 > b.length) return undefined;
  return { value: b.readUInt32BE(at) & 0x7fffffff, size: 4 };
}

/** Finds the blank line that ends a script's response header in STDOUT data, with
 *  httpd's state machine (mod_proxy_fcgi's handle_headers): LF LF or CR LF CR LF end it;
 *  a CR LF LF does not until one more LF, and LF CR LF does not at all. */
export class HeaderEndScanner {
  private state = 0; // 0 reading, 1 CR, 2 CRLF, 3 CRLFCR, 4 LF, 5 done

  get done(): boolean {
    return this.state === 5;
  }

  /** The offset just past the end of the header in `data`, or -1 when not found yet. */
  scan(data: Buffer): number {
    for (let i = 0; i < data.length; i++) {
      const c = data[i];
      if (c === 13) this.state = this.state === 2 ? 3 : 1;
      else if (c === 10) this.state = this.state === 4 || this.state === 3 ? 5 : this.state === 1 ? 2 : 4;
      else this.state = 0;
      if (this.state === 5) return i + 1;
    }
    return -1;
  }
}
