// The FastCGI exchange of mod_proxy_fcgi (modules/proxy/mod_proxy_fcgi.c: send_begin_request,
// send_environment's records, dispatch, fcgi_do_request): BEGIN_REQUEST, the environment as
// PARAMS records, the request body as STDIN records while the answer is read, STDOUT parsed as
// a script's response header then streamed to the client piece by piece, STDERR lines logged
// (AH01071), END_REQUEST; errors mapped to statuses and log lines as httpd maps them.

import type { Request } from '../../server/request/request.js';
import { OK } from '../../server/module.js';
import { APLOG_ERR, APLOG_TRACE1, APLOG_WARNING } from '../../server/log/levels.js';
import { EOS, FLUSH, FilterError, dataBucket } from '../../server/filters.js';
import { scanScriptHeader, MAX_STRING_LEN, type ScriptLine } from '../../server/util-script.js';
import {
  FCGI_PARAMS_RECORD_LIMIT, FCGI_RESPONDER, FCGI_KEEP_CONN, FCGI_VERSION_1, FcgiRecordReader, FcgiType, HeaderEndScanner,
  encodeBeginRequest, encodeParams, encodeStream,
} from '../../proxy/protocols/fcgi.js';
import { BackendReader, writeTo } from './backend-reader.js';
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
export async function fcgiDoRequest(r: Request, b: FcgiBackend, env: Iterable<readonly [string, string]>, body: () => Promise<Buffer | null>, whole?: Buffer): Promise<FcgiOutcome> {
  // Step 1: BEGIN_REQUEST.
  // BEGIN_REQUEST and the environment go out in the same turn of the event loop, in one
  // write, and with them the whole STDIN stream when the body is known (a request without
  // one: its empty STDIN record): the backend's process is held from its accept until it has
  // read them all (PHP-FPM has a few children), and each write wakes it to read a piece.
  const begin = encodeBeginRequest(REQUEST_ID, FCGI_RESPONDER, b.keepConn ? FCGI_KEEP_CONN : 0);
  const params = encodeParams(REQUEST_ID, env, FCGI_PARAMS_RECORD_LIMIT);
  if (whole !== undefined) {
    const out = [begin, ...params.records, ...stdinRecords(whole, b.ioBufferSize)];
    const e = await writeTo(b.socket, Buffer.concat(out));
    if (e !== undefined) {
      r.log(MODULE, APLOG_ERR, `AH01073: Failed Writing Request to ${b.serverPortStr}:`, r.rt.errno(e));
      return { status: 503, close: true };
    }
    for (const name of params.skipped) {
      r.log(MODULE, APLOG_WARNING, `AH02536: couldn't encode envvar '${name}' in ${FCGI_PARAMS_RECORD_LIMIT} bytes`);
    }
    return dispatch(r, b, NO_BODY, true);
  }
  // One write: a failure is the first record's (AH01073), as httpd's first send would fail.
  const e = await writeTo(b.socket, [begin, ...params.records]);
  if (e !== undefined) {
    r.log(MODULE, APLOG_ERR, `AH01073: Failed Writing Request to ${b.serverPortStr}:`, r.rt.errno(e));
    return { status: 503, close: true };
  }
  // Step 2: the environment.
  for (const name of params.skipped) {
    r.log(MODULE, APLOG_WARNING, `AH02536: couldn't encode envvar '${name}' in ${FCGI_PARAMS_RECORD_LIMIT} bytes`);
  }
  return dispatch(r, b, body, false);
}

const NO_BODY = (): Promise<Buffer | null> => Promise.resolve(null);

/** The STDIN records of a whole body: pieces of at most ioBufferSize bytes (as the pump sends
 *  them), then the empty record that ends the stream. */
function stdinRecords(body: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < body.length; at += size) {
    out.push(...encodeStream(FcgiType.STDIN, REQUEST_ID, body.subarray(at, Math.min(body.length, at + size))));
  }
  out.push(...encodeStream(FcgiType.STDIN, REQUEST_ID, EMPTY));
  return out;
}

const EMPTY = Buffer.alloc(0);

/** Step 3: the records (and the body's STDIN records unless `stdinSent`). */
async function dispatch(r: Request, b: FcgiBackend, body: () => Promise<Buffer | null>, stdinSent: boolean): Promise<FcgiOutcome> {
  const d = new Dispatch(r, b, body, stdinSent);
  const rv = await d.run();
  if (rv === undefined) return { status: OK, close: !b.keepConn || d.abandoned };
  if (r.connection.aborted) {
    if (r.wantsLog(MODULE, APLOG_TRACE1)) r.log(MODULE, APLOG_TRACE1, 'The client aborted the connection.', rv);
    return { status: OK, close: true };
  }
  const err = d.err;
  r.log(MODULE, APLOG_ERR, `AH01075: Error dispatching request to ${b.serverPortStr}: ${err !== undefined ? `(${err})` : ''}`, rv);
  if (d.hasResponded) {
    // AP_FILTER_ERROR: what went out stays; a response cut short ends the connection.
    if (!r.eosSent) {
      r.connection.keepAlive = false;
      r.eosSent = true;
    }
    return { status: OK, close: true };
  }
  if (d.badRequest) return { status: d.badRequestStatus, close: true };
  if (rv === APR_TIMEUP) return { status: 504, close: true };
  return { status: 503, close: true };
}

class Dispatch {
  err: string | undefined = undefined;
  hasResponded = false;
  badRequest = false;
  badRequestStatus = 400;
  private readonly reader: BackendReader;
  private readonly records = new FcgiRecordReader();
  private readonly scanner = new HeaderEndScanner();
  private seenEndOfHeaders = false;
  private readonly headerParts: Buffer[] = [];
  private scriptErrorStatus = 200;
  private ignoreBody = false;
  private stderr: Buffer[] = [];
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

  constructor(private readonly r: Request, private readonly b: FcgiBackend, private readonly body: () => Promise<Buffer | null>, private readonly stdinSent: boolean) {
    this.reader = new BackendReader(b.socket);
  }

  /** undefined on success, else the APR error that stopped it (err/badRequest say more). */
  async run(): Promise<AprError | undefined> {
    if (this.stdinSent) {
      this.pumpFinished = true;
      return this.readRecords();
    }
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
    const { r, b } = this;
    while (!this.done) {
      const c = await this.reader.read(b.timeoutMs);
      if (this.stdinError !== undefined) {
        this.err = this.stdinError.err;
        this.badRequest = this.stdinError.bad;
        this.badRequestStatus = this.stdinError.status;
        return this.stdinError.rv;
      }
      if (c === 'timeout') { this.err = 'polling'; return APR_TIMEUP; }
      if (c === null) return this.endedEarly();
      const rv = await this.handleChunk(c);
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

  private async handleChunk(c: Buffer): Promise<AprError | undefined> {
    const { r } = this;
    let mayflush = false;
    const events = this.records.push(c);
    if (!this.b.keepConn) {
      // The exchange ends in this chunk and the connection is not kept: it is closed before
      // the answer is passed on. The backend's process waits for that close (PHP-FPM reads
      // its connection to the end before it takes the next one), so it is not kept waiting
      // while the client's response is written.
      for (const ev of events) {
        if (ev.kind === 'record-end' && ev.header.type === FcgiType.END_REQUEST) { this.b.socket.destroy(); break; }
      }
    }
    for (const ev of events) {
      if (ev.kind === 'header') {
        const h = ev.header;
        if (h.version !== FCGI_VERSION_1) {
          r.log(MODULE, APLOG_ERR, `AH01068: Got bogus version ${h.version}`);
          return APR_EINVAL;
        }
        if (h.requestId !== REQUEST_ID) {
          r.log(MODULE, APLOG_ERR, `AH01069: Got bogus rid ${h.requestId}, expected ${REQUEST_ID}`);
          return APR_EINVAL;
        }
      } else if (ev.kind === 'content') {
        if (ev.type === FcgiType.STDOUT) {
          const rv = await this.stdout(ev.data);
          if (rv !== undefined) return rv;
          if (this.seenEndOfHeaders) mayflush = true;
        } else if (ev.type === FcgiType.STDERR) {
          this.stderrData(ev.data);
        }
      } else if (ev.kind === 'record-end') {
        const h = ev.header;
        if (h.type === FcgiType.STDOUT && h.contentLength === 0) {
          if (this.scriptErrorStatus === 200 && !r.eosSent) {
            this.hasResponded = true;
            await r.write([EOS]);
          }
        } else if (h.type === FcgiType.STDERR) {
          this.flushStderr();
        } else if (h.type === FcgiType.END_REQUEST) {
          this.done = true;
        } else if (h.type !== FcgiType.STDOUT) {
          r.log(MODULE, APLOG_ERR, `AH01072: Got bogus record ${h.type}`);
        }
      }
      if (this.done) break;
    }
    if (this.done && this.scriptErrorStatus !== 200) {
      // ProxyErrorOverride: the backend's body was dropped, the local error page goes out.
      await r.rt.die(r, this.scriptErrorStatus);
      this.hasResponded = true;
    } else if (mayflush && !this.done && !r.eosSent && this.scriptErrorStatus === 200 && !this.ignoreBody) {
      // auto: flushed when the backend sends nothing more within flushwait= ms (httpd polls).
      if (this.b.flushPackets === 'on' || (this.b.flushPackets === 'auto' && !(await this.reader.waitReady(this.b.flushWait)))) await r.write([FLUSH]);
    }
    return undefined;
  }

  /** STDERR is logged as it is read: one AH01071 line per piece of at most ioBufferSize. */
  private stderrData(d: Buffer): void {
    const size = this.b.ioBufferSize;
    for (let at = 0; at < d.length;) {
      const take = Math.min(d.length - at, size - this.stderrLen);
      this.stderr.push(d.subarray(at, at + take));
      this.stderrLen += take;
      at += take;
      if (this.stderrLen >= size) this.flushStderr();
    }
  }

  private flushStderr(): void {
    if (this.stderrLen === 0) return;
    const text = Buffer.concat(this.stderr).toString('latin1');
    this.stderr = [];
    this.stderrLen = 0;
    this.r.log(MODULE, APLOG_ERR, `AH01071: Got error '${text}'`);
  }

  private async stdout(data: Buffer): Promise<AprError | undefined> {
    const { r } = this;
    if (this.seenEndOfHeaders) {
      if (this.scriptErrorStatus === 200 && !this.ignoreBody && data.length > 0) {
        this.hasResponded = true;
        await r.write([dataBucket(data)]);
      }
      return undefined;
    }
    // Still in the header: set aside until httpd's state machine sees its end.
    this.headerParts.push(Buffer.from(data));
    if (this.scanner.scan(data) < 0) return undefined;
    this.seenEndOfHeaders = true;
    const all = Buffer.concat(this.headerParts);
    this.headerParts.length = 0;
    const lines = new BufferLines(all);
    const status = await scanScriptHeader(r, () => Promise.resolve(lines.gets()), { module: MODULE, noBuffer: true }, { line: '' });
    // The FastCGI records frame the body: a Content-Length from the script is not trusted.
    if (r.subprocessEnv.get('ap_trust_cgilike_cl') === undefined) r.headersOut.unset('Content-Length');
    r.headersOut.unset('Transfer-Encoding');
    if (status !== OK) {
      this.hasResponded = true;
      r.status = status;
      await r.write([EOS]);
      if (status === 304 || status === 412) {
        this.ignoreBody = true;
      } else {
        r.log(MODULE, APLOG_ERR, 'AH01070: Error parsing script headers');
        return APR_EINVAL;
      }
    }
    if (this.b.shouldOverride(r.status) && r.isInitialReq()) {
      this.scriptErrorStatus = r.status;
      r.status = 200;
    }
    const rest = lines.rest();
    if (this.scriptErrorStatus === 200 && rest.length > 0 && !this.ignoreBody) {
      this.hasResponded = true;
      await r.write([dataBucket(rest)]);
    }
    return undefined;
  }
}

/** getsfunc_BRIGADE over the header bytes set aside: a line up to LF with every CR dropped;
 *  0 when the data ends before a LF or the line does not fit in MAX_STRING_LEN - 2. */
class BufferLines {
  private at = 0;
  constructor(private readonly buf: Buffer) {}

  gets(): ScriptLine {
    const max = MAX_STRING_LEN - 2;
    let line = '';
    while (this.at < this.buf.length && line.length < max) {
      const c = this.buf[this.at++]!;
      if (c === 0x0a) return { line, rv: 1 };
      if (c !== 0x0d) line += String.fromCharCode(c);
    }
    return { line, rv: 0 };
  }

  rest(): Buffer {
    return this.buf.subarray(this.at);
  }
}
