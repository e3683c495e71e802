// The FastCGI exchange of mod_proxy_fcgi (modules/proxy/mod_proxy_fcgi.c: send_begin_request,
// send_environment's records, dispatch, fcgi_do_request): BEGIN_REQUEST, the environment as
// PARAMS records, the request body as STDIN records while the answer is read, STDOUT parsed as
// a script's response header then streamed to the client piece by piece, STDERR lines logged
// (AH01071), END_REQUEST; errors mapped to statuses and log lines as httpd maps them.

import type { Request } from '../../server/request/request.js';
import { OK } from '../../server/module.js';
import { APLOG_ERR, APLOG_TRACE1, APLOG_WARNING } from '../../server/log/levels.js';
import { EOS, FLUSH, FilterError, dataBucket } from '../../server/filters.js';
import { scanScriptHeaderSync, MAX_STRING_LEN, type ScriptHeaderLog, type ScriptLine } from '../../server/util-script.js';
import type { MaybePromise } from '../../server/module.js';
import {
  FCGI_PARAMS_RECORD_LIMIT, FCGI_RESPONDER, FCGI_KEEP_CONN, FCGI_VERSION_1, FcgiItem, FcgiRecordReader, FcgiType, HeaderEndScanner,
  encodeRequest, encodeStream,
} from '../../proxy/protocols/fcgi.js';
import { BackendReader, writeNow, writeTo } from './backend-reader.js';
import type { ByteStream } from '../../proxy/api.js';

export const MODULE = 'proxy_fcgi';

/** APR's errors as httpd's log lines print them. */
export const APR_EINVAL = { code: 22, text: 'Invalid argument' };
export const APR_EOF = { code: 70014, text: 'End of file found' };
export const APR_TIMEUP = { code: 70007, text: 'The timeout specified has expired' };
const APR_EGENERAL = { code: 20014, text: 'Internal error (specific information not available)' };

type AprError = { readonly code: number; readonly text: string };

/** What the exchange needs of the backend connection and the worker's settings. */
export interface FcgiBackend {
  readonly socket: ByteStream;
  /** The socket's timeout (worker timeout, ProxyTimeout or Timeout). */
  readonly timeoutMs: number;
  /** ProxyIOBufferSize / io_buffer_size: the most read or sent at a time (8192 by default). */
  readonly ioBufferSize: number;
  /** flushpackets and flushwait of the worker. */
  readonly flushPackets: 'on' | 'off' | 'auto';
  /** flushwait= (ms): how long flushpackets=auto waits for more output before flushing. */
  readonly flushWait: number;
  /** The connection may be kept for another request (BEGIN_REQUEST's FCGI_KEEP_CONN). */
  readonly keepConn: boolean;
  /** ":port" of the server the client asked, "" for the scheme's default (log lines). */
  readonly serverPortStr: string;
  /** ap_proxy_should_override: ProxyErrorOverride applies to this status. */
  shouldOverride(status: number): boolean;
}

export interface FcgiOutcome {
  /** A status for the handler to return (OK when the response was sent). */
  readonly status: number;
  /** The connection must not be reused. */
  readonly close: boolean;
}

/** A request id: always 1, as httpd (one request per connection at a time). */
const REQUEST_ID = 1;

/** fcgi_do_request: runs the whole exchange on a connected socket. `env` is the finished
 *  environment (subprocess_env after ap_add_common_vars, ap_add_cgi_vars and the
 *  ProxyFCGISetEnvIf fixups). `body` yields the request body (prefetched part first);
 *  `whole`, when the whole body was read ahead (empty when there is none), is that body:
 *  it is sent from there instead. */
export async function fcgiDoRequest(r: Request, b: FcgiBackend, env: ReadonlyMap<string, string>, body: () => Promise<Buffer | null>, whole?: Buffer): Promise<FcgiOutcome> {
  // Steps 1 and 2: BEGIN_REQUEST and the environment.
  // BEGIN_REQUEST and the environment go out in the same turn of the event loop, in one
  // write, and with them the whole STDIN stream when the body is known (a request without
  // one: its empty STDIN record): the backend's process is held from its accept until it has
  // read them all (PHP-FPM has a few children), and each write wakes it to read a piece.
  // One write: a failure is the first record's (AH01073), as httpd's first send would fail.
  const req = encodeRequest(REQUEST_ID, FCGI_RESPONDER, b.keepConn ? FCGI_KEEP_CONN : 0, env, FCGI_PARAMS_RECORD_LIMIT, whole, b.ioBufferSize);
  let e = writeNow(b.socket, req.data);
  if (e instanceof Promise) e = await e;
  if (e !== undefined) {
    r.log(MODULE, APLOG_ERR, `AH01073: Failed Writing Request to ${b.serverPortStr}:`, r.rt.errno(e));
    return { status: 503, close: true };
  }
  if (req.skipped !== undefined) {
    for (const name of req.skipped) {
      r.log(MODULE, APLOG_WARNING, `AH02536: couldn't encode envvar '${name}' in ${FCGI_PARAMS_RECORD_LIMIT} bytes`);
    }
  }
  // Step 3: the records (and the body's STDIN records unless the whole body went out).
  const d = new Dispatch(r, b, body, whole !== undefined);
  const rv = await d.run();
  return outcome(r, b, d, rv);
}

/** The handler's status for how the exchange ended. */
function outcome(r: Request, b: FcgiBackend, d: Dispatch, rv: AprError | undefined): FcgiOutcome {
  if (rv === undefined) return !b.keepConn || d.abandoned ? CLOSE_OK : KEEP_OK;
  if (r.connection.aborted) {
    if (r.wantsLog(MODULE, APLOG_TRACE1)) r.log(MODULE, APLOG_TRACE1, 'The client aborted the connection.', rv);
    return CLOSE_OK;
  }
  const err = d.err;
  r.log(MODULE, APLOG_ERR, `AH01075: Error dispatching request to ${b.serverPortStr}: ${err !== undefined ? `(${err})` : ''}`, rv);
  if (d.hasResponded) {
    // AP_FILTER_ERROR: what went out stays; a response cut short ends the connection.
    if (!r.eosSent) {
      r.connection.keepAlive = false;
      r.eosSent = true;
    }
    return CLOSE_OK;
  }
  if (d.badRequest) return { status: d.badRequestStatus, close: true };
  if (rv === APR_TIMEUP) return { status: 504, close: true };
  return { status: 503, close: true };
}

const CLOSE_OK: FcgiOutcome = { status: OK, close: true };
const KEEP_OK: FcgiOutcome = { status: OK, close: false };

/** The message context of the script header scan (the caller keeps no copy of the line). */
const HEADER_LOG: ScriptHeaderLog = { module: MODULE, noBuffer: true };

class Dispatch {
  err: string | undefined = undefined;
  hasResponded = false;
  badRequest = false;
  badRequestStatus = 400;
  private readonly reader: BackendReader;
  private readonly records = new FcgiRecordReader();
  private readonly scanner = new HeaderEndScanner();
  private seenEndOfHeaders = false;
  /** The header's bytes set aside while its end is not seen (made when needed). */
  private headerParts: Buffer[] | undefined;
  private scriptErrorStatus = 200;
  private ignoreBody = false;
  private stderr: Buffer[] | undefined;
  private stderrLen = 0;
  private stdinDone = false;
  /** The pump has sent the closing STDIN record (or stopped). */
  private pumpFinished = false;
  /** The pump is waiting for the client's body. */
  private inBodyRead = false;
  /** The connection cannot be reused (STDIN was cut short). */
  abandoned = false;
  private stdinError: { rv: AprError; err: string; bad: boolean; status: number } | undefined;
  private done = false;
  /** Body data was passed on in the current chunk (a flush may follow it). */
  private mayflush = false;

  constructor(private readonly r: Request, private readonly b: FcgiBackend, private readonly body: () => Promise<Buffer | null>, private readonly stdinSent: boolean) {
    this.reader = new BackendReader(b.socket);
  }

  /** undefined on success, else the APR error that stopped it (err/badRequest say more). */
  run(): Promise<AprError | undefined> {
    if (this.stdinSent) {
      this.pumpFinished = true;
      return this.readRecords();
    }
    return this.runWithPump();
  }

  private async runWithPump(): Promise<AprError | undefined> {
    const pump = this.pumpStdin().finally(() => { this.pumpFinished = true; });
    try {
      return await this.readRecords();
    } finally {
      // The answer is complete (or failed): the rest of the body is not sent, and a
      // connection whose STDIN was cut short is not reused.
      this.stdinDone = true;
      if (!this.pumpFinished) {
        this.abandoned = true;
        this.b.socket.destroy();
        // A pump waiting on the client is left to find stdinDone when its read returns.
        if (!this.inBodyRead) await pump;
      }
    }
  }

  /** Request body → STDIN records of at most ioBufferSize bytes, then the empty record. */
  private async pumpStdin(): Promise<void> {
    const size = this.b.ioBufferSize;
    try {
      for (;;) {
        if (this.stdinDone) return;
        this.inBodyRead = true;
        const piece = await this.body();
        this.inBodyRead = false;
        if (this.stdinDone) return;
        if (piece === null) break;
        for (let at = 0; at < piece.length; at += size) {
          const e = await writeTo(this.b.socket, encodeStream(FcgiType.STDIN, REQUEST_ID, piece.subarray(at, Math.min(piece.length, at + size))));
          if (e !== undefined) { this.failStdin(this.r.rt.errno(e) ?? APR_EGENERAL, 'sending stdin', false, 400); return; }
        }
      }
      const e = await writeTo(this.b.socket, encodeStream(FcgiType.STDIN, REQUEST_ID, Buffer.alloc(0)));
      if (e !== undefined) this.failStdin(this.r.rt.errno(e) ?? APR_EGENERAL, 'sending empty stdin', false, 400);
    } catch (e) {
      const status = e instanceof FilterError ? e.status : 400;
      this.failStdin(this.r.rt.errno(e) ?? APR_EGENERAL, 'reading input brigade', true, status);
    }
  }

  private failStdin(rv: AprError, err: string, bad: boolean, status: number): void {
    this.stdinError ??= { rv, err, bad, status };
    // Wake the reader: the exchange stops here.
    this.b.socket.destroy();
  }

  private async readRecords(): Promise<AprError | undefined> {
    const { b, reader } = this;
    while (!this.done) {
      let c: Buffer | null | 'timeout' | undefined = reader.poll();
      if (c === undefined) c = await reader.read(b.timeoutMs);
      if (this.stdinError !== undefined) {
        this.err = this.stdinError.err;
        this.badRequest = this.stdinError.bad;
        this.badRequestStatus = this.stdinError.status;
        return this.stdinError.rv;
      }
      if (c === 'timeout') { this.err = 'polling'; return APR_TIMEUP; }
      if (c === null) return this.endedEarly();
      let rv = this.handleChunk(c);
      if (rv instanceof Promise) rv = await rv;
      if (rv !== undefined) return rv;
    }
    return undefined;
  }

  /** The backend closed before END_REQUEST: where in a record it stopped decides the message. */
  private endedEarly(): AprError {
    const fail = this.reader.failure;
    const rv = fail !== undefined ? (this.r.rt.errno(fail) ?? APR_EOF) : APR_EOF;
    if (this.records.atBoundary) {
      this.r.log(MODULE, APLOG_ERR, 'AH01067: Failed to read FastCGI header');
    } else {
      this.err = 'reading response body';
    }
    return rv;
  }

  /** The records of one chunk, in order; synchronous unless writing to the client waits. */
  private handleChunk(c: Buffer): MaybePromise<AprError | undefined> {
    if (!this.b.keepConn && this.records.wouldEndRequest(c)) {
      // The exchange ends in this chunk and the connection is not kept: it is closed before
      // the answer is passed on. The backend's process waits for that close (PHP-FPM reads
      // its connection to the end before it takes the next one), so it is not kept waiting
      // while the client's response is written.
      this.b.socket.destroy();
    }
    this.records.begin(c);
    this.mayflush = false;
    return this.chunkItems();
  }

  /** The items left in the current chunk, then the chunk's end. */
  private chunkItems(): MaybePromise<AprError | undefined> {
    const rd = this.records;
    for (let it = rd.next(); it !== FcgiItem.None; it = rd.next()) {
      const rv = this.item(it);
      if (rv instanceof Promise) {
        return rv.then((v) => (v !== undefined ? v : this.done ? this.chunkEnd() : this.chunkItems()));
      }
      if (rv !== undefined) return rv;
      if (this.done) break;
    }
    return this.chunkEnd();
  }

  /** One record item (the reader's fields describe it). */
  private item(it: FcgiItem): MaybePromise<AprError | undefined> {
    const { r } = this;
    const rd = this.records;
    if (it === FcgiItem.Header) {
      if (rd.version !== FCGI_VERSION_1) {
        r.log(MODULE, APLOG_ERR, `AH01068: Got bogus version ${rd.version}`);
        return APR_EINVAL;
      }
      if (rd.requestId !== REQUEST_ID) {
        r.log(MODULE, APLOG_ERR, `AH01069: Got bogus rid ${rd.requestId}, expected ${REQUEST_ID}`);
        return APR_EINVAL;
      }
    } else if (it === FcgiItem.Content) {
      if (rd.type === FcgiType.STDOUT) {
        const rv = this.stdout(rd.data);
        if (rv instanceof Promise) return rv.then((v) => { if (this.seenEndOfHeaders) this.mayflush = true; return v; });
        if (rv !== undefined) return rv;
        if (this.seenEndOfHeaders) this.mayflush = true;
      } else if (rd.type === FcgiType.STDERR) {
        this.stderrData(rd.data);
      }
    } else if (it === FcgiItem.RecordEnd) {
      const type = rd.type;
      if (type === FcgiType.STDOUT && rd.contentLength === 0) {
        if (this.scriptErrorStatus === 200 && !r.eosSent) {
          this.hasResponded = true;
          const w = r.write([EOS]);
          if (w !== undefined) return w.then(NOTHING);
        }
      } else if (type === FcgiType.STDERR) {
        this.flushStderr();
      } else if (type === FcgiType.END_REQUEST) {
        this.done = true;
      } else if (type !== FcgiType.STDOUT) {
        r.log(MODULE, APLOG_ERR, `AH01072: Got bogus record ${type}`);
      }
    }
    return undefined;
  }

  /** After a chunk: the error page of ProxyErrorOverride, or a flush (flushpackets). */
  private chunkEnd(): MaybePromise<AprError | undefined> {
    const { r } = this;
    if (this.done && this.scriptErrorStatus !== 200) {
      // ProxyErrorOverride: the backend's body was dropped, the local error page goes out.
      this.hasResponded = true;
      const w = r.rt.die(r, this.scriptErrorStatus);
      return w !== undefined ? w.then(NOTHING) : undefined;
    }
    if (this.mayflush && !this.done && !r.eosSent && this.scriptErrorStatus === 200 && !this.ignoreBody) {
      return this.maybeFlush();
    }
    return undefined;
  }

  private async maybeFlush(): Promise<undefined> {
    // auto: flushed when the backend sends nothing more within flushwait= ms (httpd polls).
    if (this.b.flushPackets === 'on' || (this.b.flushPackets === 'auto' && !(await this.reader.waitReady(this.b.flushWait)))) await this.r.write([FLUSH]);
    return undefined;
  }

  /** STDERR is logged as it is read: one AH01071 line per piece of at most ioBufferSize. */
  private stderrData(d: Buffer): void {
    const size = this.b.ioBufferSize;
    for (let at = 0; at < d.length;) {
      const take = Math.min(d.length - at, size - this.stderrLen);
      (this.stderr ??= []).push(d.subarray(at, at + take));
      this.stderrLen += take;
      at += take;
      if (this.stderrLen >= size) this.flushStderr();
    }
  }

  private flushStderr(): void {
    if (this.stderrLen === 0) return;
    const text = Buffer.concat(this.stderr!).toString('latin1');
    this.stderr = undefined;
    this.stderrLen = 0;
    this.r.log(MODULE, APLOG_ERR, `AH01071: Got error '${text}'`);
  }

  private stdout(data: Buffer): MaybePromise<AprError | undefined> {
    const { r } = this;
    if (this.seenEndOfHeaders) {
      if (this.scriptErrorStatus === 200 && !this.ignoreBody && data.length > 0) {
        this.hasResponded = true;
        const w = r.write([dataBucket(data)]);
        if (w !== undefined) return w.then(NOTHING);
      }
      return undefined;
    }
    // Still in the header: set aside until httpd's state machine sees its end.
    const end = this.scanner.scan(data);
    if (end < 0) {
      (this.headerParts ??= []).push(Buffer.from(data));
      return undefined;
    }
    this.seenEndOfHeaders = true;
    let all: Buffer;
    if (this.headerParts === undefined) {
      all = data;
    } else {
      this.headerParts.push(data);
      all = Buffer.concat(this.headerParts);
      this.headerParts = undefined;
    }
    const lines = new BufferLines(all);
    const status = scanScriptHeaderSync(r, lines.gets, HEADER_LOG, SBUF);
    // The FastCGI records frame the body: a Content-Length from the script is not trusted.
    if (r.subprocessEnv.get('ap_trust_cgilike_cl') === undefined) r.headersOut.unset('Content-Length');
    r.headersOut.unset('Transfer-Encoding');
    if (status !== OK) {
      this.hasResponded = true;
      r.status = status;
      const w = r.write([EOS]);
      if (status === 304 || status === 412) {
        this.ignoreBody = true;
        if (w !== undefined) return w.then(() => this.afterHeader(lines));
      } else {
        const bad = (): AprError => {
          r.log(MODULE, APLOG_ERR, 'AH01070: Error parsing script headers');
          return APR_EINVAL;
        };
        return w !== undefined ? w.then(bad) : bad();
      }
    }
    return this.afterHeader(lines);
  }

  /** What follows the script's header: ProxyErrorOverride's decision, the body's start. */
  private afterHeader(lines: BufferLines): MaybePromise<AprError | undefined> {
    const { r } = this;
    if (this.b.shouldOverride(r.status) && r.isInitialReq()) {
      this.scriptErrorStatus = r.status;
      r.status = 200;
    }
    const rest = lines.rest();
    if (this.scriptErrorStatus === 200 && rest.length > 0 && !this.ignoreBody) {
      this.hasResponded = true;
      const w = r.write([dataBucket(rest)]);
      if (w !== undefined) return w.then(NOTHING);
    }
    return undefined;
  }
}

const NOTHING = (): undefined => undefined;
/** Where the header scan leaves the last line (unused here: no ScriptLog). */
const SBUF = { line: '' };

/** getsfunc_BRIGADE over the header bytes set aside: a line up to LF with every CR dropped;
 *  0 when the data ends before a LF or the line does not fit in MAX_STRING_LEN - 2. */
class BufferLines {
  private at = 0;
  /** The answer of every call (read at once by the scan, which keeps no reference to it). */
  private readonly out: { line: string; rv: 1 | 0 } = { line: '', rv: 1 };
  readonly gets = (): ScriptLine => this.line();
  constructor(private readonly buf: Buffer) {}

  private answer(line: string, rv: 1 | 0): ScriptLine {
    const o = this.out;
    o.line = line;
    o.rv = rv;
    return o;
  }

  private line(): ScriptLine {
    const max = MAX_STRING_LEN - 2;
    const buf = this.buf;
    const from = this.at;
    const lf = buf.indexOf(0x0a, from);
    const end = lf < 0 ? buf.length : lf;
    if (end - from < max) {
      // Shorter than the limit even with its CRs: taken whole.
      let line = buf.toString('latin1', from, end);
      if (line.includes('\r')) line = line.replace(/\r/g, '');
      this.at = lf < 0 ? end : end + 1;
      return this.answer(line, lf < 0 ? 0 : 1);
    }
    let line = '';
    while (this.at < buf.length && line.length < max) {
      const c = buf[this.at++]!;
      if (c === 0x0a) return this.answer(line, 1);
      if (c !== 0x0d) line += String.fromCharCode(c);
    }
    return this.answer(line, 0);
  }

  rest(): Buffer {
    return this.buf.subarray(this.at);
  }
}
