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

/** Writes a byte string at `at` (short ones byte by byte: cheaper than a call into the
 *  buffer's native writer); returns the offset after it. */
function putLatin1(b: Buffer, at: number, s: string): number {
  const n = s.length;
  if (n > 24) return at + b.write(s, at, n, 'latin1');
  for (let i = 0; i < n; i++) b[at + i] = s.charCodeAt(i);
  return at + n;
}

function putHeader(b: Buffer, at: number, type: number, requestId: number, contentLength: number): void {
  b[at] = FCGI_VERSION_1;
  b[at + 1] = type;
  b[at + 2] = requestId >> 8;
  b[at + 3] = requestId & 0xff;
  b[at + 4] = contentLength >> 8;
  b[at + 5] = contentLength & 0xff;
  b[at + 6] = 0;
  b[at + 7] = 0;
}

/** What encodeRequest makes: the bytes, and the names of the pairs left out. */
export interface EncodedRequest {
  readonly data: Buffer;
  /** Names of pairs larger than one record could carry, left out (AH02536); undefined: none. */
  readonly skipped: string[] | undefined;
}

/**
 * A whole request in one buffer: BEGIN_REQUEST, the environment as PARAMS records (as many
 * whole pairs in each record as fit within `limit` bytes of content, httpd's
 * ap_fcgi_encoded_env_len; a pair too big for any record left out, what was packed before it
 * closed first), the empty PARAMS record, then — when `stdin` is given —
 * the body as STDIN records of at most `stdinPiece` bytes (each split at the record limit) and
 * the empty STDIN record. Written straight from the table, with no per-pair objects.
 */
export function encodeRequest(
  requestId: number, role: number, flags: number, env: ReadonlyMap<string, string>,
  limit: number, stdin: Buffer | undefined, stdinPiece: number,
): EncodedRequest {
  // BEGIN_REQUEST and the PARAMS records go into the scratch buffer in one pass over the
  // table (a record's header is filled in when it is closed), then into a buffer of the
  // request's size with the STDIN records.
  let sb = scratch;
  putHeader(sb, 0, FcgiType.BEGIN_REQUEST, requestId, 8);
  sb[8] = role >> 8;
  sb[9] = role & 0xff;
  sb[10] = flags;
  sb.fill(0, 11, 16);
  let at = FCGI_HEADER_LEN * 2;
  let rec = -1;
  let size = 0;
  let skipped: string[] | undefined;
  env.forEach((v, n) => {
    const len = lengthSize(n.length) + lengthSize(v.length) + n.length + v.length;
    if (len > limit || (rec >= 0 && size + len > limit)) {
      if (rec >= 0) { putHeader(sb, rec, FcgiType.PARAMS, requestId, size); rec = -1; size = 0; }
      if (len > limit) { (skipped ??= []).push(n); return; }
    }
    // Room for this pair, its record's header and the closing empty record.
    if (at + len + FCGI_HEADER_LEN * 2 > sb.length) sb = growScratch(at, at + len + FCGI_HEADER_LEN * 2);
    if (rec < 0) { rec = at; at += FCGI_HEADER_LEN; }
    at = writeLength(sb, at, n.length);
    at = writeLength(sb, at, v.length);
    at = putLatin1(sb, at, n);
    at = putLatin1(sb, at, v);
    size += len;
  });
  if (rec >= 0) putHeader(sb, rec, FcgiType.PARAMS, requestId, size);
  putHeader(sb, at, FcgiType.PARAMS, requestId, 0);
  at += FCGI_HEADER_LEN;
  let total = at;
  if (stdin !== undefined) {
    for (let from = 0; from < stdin.length; from += stdinPiece) {
      const piece = Math.min(stdin.length - from, stdinPiece);
      total += piece + FCGI_HEADER_LEN * Math.ceil(piece / FCGI_MAX_CONTENT_LEN);
    }
    total += FCGI_HEADER_LEN;
  }
  const b = Buffer.allocUnsafe(total);
  sb.copy(b, 0, 0, at);
  if (stdin !== undefined) {
    for (let from = 0; from < stdin.length; from += stdinPiece) {
      const end = Math.min(stdin.length, from + stdinPiece);
      for (let p = from; p < end; p += FCGI_MAX_CONTENT_LEN) {
        const n = Math.min(end - p, FCGI_MAX_CONTENT_LEN);
        putHeader(b, at, FcgiType.STDIN, requestId, n);
        at += FCGI_HEADER_LEN;
        at += stdin.copy(b, at, p, p + n);
      }
    }
    putHeader(b, at, FcgiType.STDIN, requestId, 0);
  }
  return { data: b, skipped };
}

/** encodeRequest's working buffer (grown when an environment does not fit; never shared
 *  beyond one call: what is sent is a copy). */
let scratch: Buffer = Buffer.allocUnsafeSlow(16 * 1024);

/** A larger scratch buffer holding the first `keep` bytes of the old one. */
function growScratch(keep: number, need: number): Buffer {
  const b = Buffer.allocUnsafeSlow(Math.max(need, scratch.length * 2));
  scratch.copy(b, 0, 0, keep);
  scratch = b;
  return b;
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

/** What FcgiRecordReader.next() found (its fields then describe it). */
export const enum FcgiItem {
  /** The chunk is used up. */
  None = 0,
  /** A record header: version, type, requestId, contentLength, paddingLength. */
  Header = 1,
  /** A piece of the current record's content: `data`. */
  Content = 2,
  /** The END_REQUEST body, read whole: appStatus, protocolStatus. */
  EndRequest = 3,
  /** The end of the current record (its padding skipped). */
  RecordEnd = 4,
}

const enum ReadState { Header, Content, AfterContent, Padding }

const NO_DATA = Buffer.alloc(0);
/** wouldEndRequest's copy of a partial header. */
const scratchHead = Buffer.alloc(FCGI_HEADER_LEN);

/** Streaming reader of FastCGI records. Give it a socket chunk with begin(), then take what
 *  it completes one item at a time with next() (nothing is allocated per item: the reader's
 *  fields describe the current record), or all at once as events with push(). Only a record
 *  header (8 bytes) and an END_REQUEST body (8 bytes) are collected across chunks; content is
 *  sliced from the chunks, never copied or held. */
export class FcgiRecordReader {
  private state = ReadState.Header;
  // Slices of Node's shared pool (allocUnsafe): no buffer of their own per reader.
  // Made only when a record header or an END_REQUEST body straddles two chunks (a whole one
  // is read from the chunk where it stands).
  private head: Buffer | undefined;
  private headFill = 0;
  private remaining = 0;
  private endBuf: Buffer | undefined;
  private endBody: Buffer | undefined;
  /** The END_REQUEST body was read whole from its chunk (appStatus, protocolStatus set). */
  private endRead = false;
  private endFill = 0;
  private chunk: Buffer = NO_DATA;
  private at = 0;
  /** The current record's header fields. */
  version = 0;
  type = 0;
  requestId = 0;
  contentLength = 0;
  paddingLength = 0;
  /** The content piece of the last Content item. */
  data: Buffer = NO_DATA;
  /** The END_REQUEST body of the last EndRequest item. */
  appStatus = 0;
  protocolStatus = 0;

  /** True between records: the stream may end here cleanly. */
  get atBoundary(): boolean {
    return this.state === ReadState.Header && this.headFill === 0;
  }

  /** The current record's header as an object. */
  get header(): FcgiHeader {
    return { version: this.version, type: this.type, requestId: this.requestId, contentLength: this.contentLength, paddingLength: this.paddingLength };
  }

  /** The next chunk to read from (what was left of the previous one is dropped). */
  begin(chunk: Buffer): void {
    this.chunk = chunk;
    this.at = 0;
  }

  /** The next item of the chunk given to begin(); None once it is used up. */
  next(): FcgiItem {
    const chunk = this.chunk;
    for (;;) {
      switch (this.state) {
        case ReadState.Header: {
          if (this.at >= chunk.length) return FcgiItem.None;
          let h: Buffer;
          let p: number;
          if (this.headFill === 0 && chunk.length - this.at >= FCGI_HEADER_LEN) {
            h = chunk;
            p = this.at;
            this.at += FCGI_HEADER_LEN;
          } else {
            h = this.head ??= Buffer.allocUnsafe(FCGI_HEADER_LEN);
            p = 0;
            const take = Math.min(FCGI_HEADER_LEN - this.headFill, chunk.length - this.at);
            chunk.copy(h, this.headFill, this.at, this.at + take);
            this.headFill += take;
            this.at += take;
            if (this.headFill < FCGI_HEADER_LEN) return FcgiItem.None;
            this.headFill = 0;
          }
          this.version = h[p]!;
          this.type = h[p + 1]!;
          this.requestId = (h[p + 2]! << 8) | h[p + 3]!;
          this.contentLength = (h[p + 4]! << 8) | h[p + 5]!;
          this.paddingLength = h[p + 6]!;
          this.remaining = this.contentLength;
          if (this.type === FcgiType.END_REQUEST) {
            const n = this.contentLength;
            if (n <= 8 && chunk.length - this.at >= n) {
              // The whole body is here: its fields straight from the chunk (what it lacks of
              // its 8 bytes reads as zeros).
              const at = this.at;
              let app = 0;
              for (let i = 0; i < 4; i++) app = app * 256 + (i < n ? chunk[at + i]! : 0);
              this.appStatus = app;
              this.protocolStatus = n > 4 ? chunk[at + 4]! : 0;
              this.at += n;
              this.remaining = 0;
              this.endRead = true;
            } else {
              this.endBody = n <= 8 ? (this.endBuf ??= Buffer.allocUnsafe(8)).fill(0) : Buffer.alloc(n);
              this.endFill = 0;
            }
          }
          this.state = ReadState.Content;
          return FcgiItem.Header;
        }
        case ReadState.Content: {
          if (this.remaining === 0) { this.state = ReadState.AfterContent; continue; }
          if (this.at >= chunk.length) return FcgiItem.None;
          const take = Math.min(this.remaining, chunk.length - this.at);
          const from = this.at;
          this.remaining -= take;
          this.at += take;
          if (this.endBody !== undefined) {
            chunk.copy(this.endBody, this.endFill, from, from + take);
            this.endFill += take;
            continue;
          }
          this.data = chunk.subarray(from, from + take);
          return FcgiItem.Content;
        }
        case ReadState.AfterContent: {
          this.remaining = this.paddingLength;
          this.state = ReadState.Padding;
          if (this.endRead) {
            this.endRead = false;
            return FcgiItem.EndRequest;
          }
          const b = this.endBody;
          if (b !== undefined) {
            this.endBody = undefined;
            this.appStatus = b.readUInt32BE(0);
            this.protocolStatus = b[4]!;
            return FcgiItem.EndRequest;
          }
          continue;
        }
        default: {
          if (this.remaining === 0) {
            this.state = ReadState.Header;
            return FcgiItem.RecordEnd;
          }
          if (this.at >= chunk.length) return FcgiItem.None;
          const take = Math.min(this.remaining, chunk.length - this.at);
          this.remaining -= take;
          this.at += take;
        }
      }
    }
  }

  /** Whether an END_REQUEST record ends within `chunk` (read from where the reader stands,
   *  nothing consumed). */
  wouldEndRequest(chunk: Buffer): boolean {
    let st = this.state;
    let fill = this.headFill;
    let rem = this.remaining;
    let type = this.type;
    let pad = this.paddingLength;
    let at = 0;
    if (st === ReadState.Header && fill > 0) this.head!.copy(scratchHead, 0, 0, fill);
    for (;;) {
      if (st === ReadState.Header) {
        if (at >= chunk.length) return false;
        const take = Math.min(FCGI_HEADER_LEN - fill, chunk.length - at);
        chunk.copy(scratchHead, fill, at, at + take);
        fill += take;
        at += take;
        if (fill < FCGI_HEADER_LEN) return false;
        fill = 0;
        type = scratchHead[1]!;
        rem = (scratchHead[4]! << 8) | scratchHead[5]!;
        pad = scratchHead[6]!;
        st = ReadState.Content;
      } else if (st === ReadState.Content) {
        const take = Math.min(rem, chunk.length - at);
        at += take;
        rem -= take;
        if (rem > 0) return false;
        st = ReadState.Padding;
        rem = pad;
      } else if (st === ReadState.AfterContent) {
        st = ReadState.Padding;
        rem = pad;
      } else {
        const take = Math.min(rem, chunk.length - at);
        at += take;
        rem -= take;
        if (rem > 0) return false;
        if (type === FcgiType.END_REQUEST) return true;
        st = ReadState.Header;
      }
    }
  }

  /** Every item of `chunk` as events. */
  push(chunk: Buffer): FcgiEvent[] {
    const events: FcgiEvent[] = [];
    this.begin(chunk);
    for (let it = this.next(); it !== FcgiItem.None; it = this.next()) {
      if (it === FcgiItem.Header) events.push({ kind: 'header', header: this.header });
      else if (it === FcgiItem.Content) events.push({ kind: 'content', type: this.type, requestId: this.requestId, data: this.data });
      else if (it === FcgiItem.EndRequest) events.push({ kind: 'end-request', requestId: this.requestId, appStatus: this.appStatus, protocolStatus: this.protocolStatus });
      else events.push({ kind: 'record-end', header: this.header });
    }
    return events;
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
