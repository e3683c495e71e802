// One HTTP/2 stream as a request (httpd's mod_http2 secondary connection, h2_c2.c, and
// h2_request.c): the stream's pseudo-header fields become the request line
// "METHOD PATH HTTP/2.0", :authority the Host, the stream's DATA the request body read
// through the input filters, and the response leaves through the same output filter chain
// as on HTTP/1.1, whose protocol end hands the head to the stream as fields (no Connection,
// Keep-Alive or Transfer-Encoding) and the body as DATA. Every module's hooks run unchanged.

import type * as http2 from 'node:http2';
import { createHash, randomBytes } from 'node:crypto';
import { Request, type ConnRec, type RequestBody, type RawStream } from '../../../server/request/request.js';
import type { Wire, FramedWire } from '../../../server/http/wire.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { Runtime } from '../../../server/runtime.js';
import { HeaderTable } from '../../../server/request/headers.js';
import { H1ResponseCatcher, type H1Head } from './h1-response.js';
import { streamFileRange } from '../../../server/http/file-cache.js';
import { die } from '../../../server/request/lifecycle.js';
import { runAll } from '../../../server/hooks.js';
import { OK, type MaybePromise } from '../../../server/module.js';
import { FilterError } from '../../../server/filters.js';
import { nowMicros } from '../../../server/log/time.js';
import { serveReadRequest, requestFailed } from '../../../server/http/serve-read.js';
import { DEFAULT_LIMIT_REQUEST_BODY } from '../../../server/http/http-core.js';
import { newRequestTarget, parseRequestLine, fixHostname, parseStrictLength } from '../../../server/http/protocol.js';
import { coreServer, coreDir } from '../../../server/core/config.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_TRACE1, APLOG_WARNING } from '../../../server/log/levels.js';

/** Fields HTTP/2 forbids in a message (RFC 9113 8.2.2): dropped from the response, as
 *  mod_http2 drops them. */
const CONNECTION_FIELDS: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/** What the stream's request needs from its session. */
export interface StreamSession {
  readonly rt: Runtime;
  /** The session's connection (the primary one, httpd's c1). */
  readonly c1: ConnRec;
  /** The server the session was opened for (chosen by SNI or address). */
  readonly server: ServerRec;
  /** The name-based candidates of the session's address (looked up once per session). */
  readonly candidates: readonly ServerRec[];
  /** "https" over TLS, "http" otherwise. */
  readonly scheme: string;
  /** H2StreamMaxMemSize: output a stream holds before the handler waits. */
  readonly maxMem: number;
  /** H2WebSockets: an extended CONNECT for "websocket" is served as an Upgrade. */
  readonly webSockets: boolean;
  /** H2ProxyRequests on the session's server. */
  readonly proxyRequests: boolean;
  /** A response head is about to go out (server push looks at its Link fields). */
  responding(st: H2Stream, r: Request, fields: HeaderTable): void;
}

let nextStreamConnId = 1 << 30;
const NGHTTP2_NO_ERROR = 0x0;
const NGHTTP2_INTERNAL_ERROR = 0x2;
const NGHTTP2_HTTP_1_1_REQUIRED = 0xd;
/** The fields of a WebSocket's 101 that its 200 on HTTP/2 does not carry (h2_ws.c). */
const WS_DROPPED: ReadonlySet<string> = new Set(['sec-websocket-accept']);
/** RFC 6455's GUID for Sec-WebSocket-Accept. */
const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/**
 * A response head as HTTP/2 fields: `:status`, the response's fields with those HTTP/2
 * forbids (and `dropped`) left out, repeated names comma-joined (Set-Cookie kept apart), and
 * Date and Server — first for a request refused while its fields were read, last otherwise,
 * as mod_http2 sends them; none on an interim response.
 */
function responseFields(status: number, fields: HeaderTable, date: string | undefined, server: string | undefined, dateFirst: boolean, dropped: ReadonlySet<string> | null): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = { ':status': status };
  if (dateFirst && date !== undefined && server !== undefined) { out['date'] = date; out['server'] = server; }
  fields.forEach((_name, value, key) => {
    if (key === 'date' || key === 'server' || CONNECTION_FIELDS.has(key) || dropped?.has(key)) return;
    const had = out[key];
    if (had === undefined) out[key] = value;
    else if (key === 'set-cookie') out[key] = Array.isArray(had) ? [...had, value] : [String(had), value];
    else out[key] = `${String(had)}, ${value}`;
  });
  if (date !== undefined && server !== undefined) { out['date'] = date; out['server'] = server; }
  return out;
}

/** The Sec-WebSocket-Key of a WebSocket CONNECT turned into an Upgrade, and the
 *  Sec-WebSocket-Accept the switch must answer with. */
function wsKey(): { key: string; accept: string } {
  const key = randomBytes(16).toString('base64');
  return { key, accept: createHash('sha1').update(key + WS_GUID).digest('base64') };
}

/** mod_ssl's "ssl-renegotiate-forbidden" note on the request or one it was redirected from. */
function renegotiationForbidden(r: Request): string | undefined {
  for (let p: Request | null = r; p !== null; p = p.prev) {
    const cause = p.notes.get('ssl-renegotiate-forbidden');
    if (cause !== undefined) return cause;
  }
  return undefined;
}

/** A stream's connection record (httpd's c2), its wire and its framing. */
export class H2Stream implements ConnRec, Wire, FramedWire {
  readonly id = nextStreamConnId++;
  readonly remoteIp: string;
  readonly remotePort: number;
  readonly localIp: string;
  readonly localPort: number;
  /** httpd's c2 counts its request twice (set to 1 for the hooks, then once more when the
   *  stream is processed): %k logs 1 for every request on HTTP/2. */
  keepalives = 2;
  keepAlive = true;
  aborted = false;
  remoteHost: string | undefined;
  bytesIn = 0;
  bytesOut = 0;
  readonly notes = new Map<string, string>();
  readonly connConfig: unknown[];
  readonly master: ConnRec;
  baseServer: ServerRec;
  readonly wire: Wire = this;
  readonly framed: FramedWire = this;
  /** The scoreboard's entry (mod_status shows each stream's request in a slot). */
  score: import('../../../mpm/scoreboard.js').ScoreEntry | null = null;
  readonly protocol: string;
  private waiters: (() => void)[] = [];
  /** The request served on this stream (null before it is read). */
  request: Request | null = null;
  /** For a pushed stream, the stream whose response pushed it (0: the client opened it). */
  pushedOn = 0;
  /** The request was refused before the request hooks ran (bad fields, limits). */
  refusedEarly = false;
  /** An extended CONNECT for a WebSocket (H2WebSockets): the Sec-WebSocket-Accept its 101
   *  must carry (RFC 6455 4.2.2) for the switch to be answered 200. */
  ws: { readonly accept: string } | null = null;
  /** The response was replaced (a refused WebSocket switch): the handler's bytes are dropped. */
  private discarding = false;
  /** The trailers to send when the stream asks for them (a response sent with waitForTrailers). */
  private trailers: http2.OutgoingHttpHeaders = {};

  constructor(readonly session: StreamSession, readonly stream: http2.ServerHttp2Stream, protocol: string) {
    const c1 = session.c1;
    this.remoteIp = c1.remoteIp;
    this.remotePort = c1.remotePort;
    this.localIp = c1.localIp;
    this.localPort = c1.localPort;
    this.remoteHost = c1.remoteHost;
    // The primary connection's module state (mod_ssl's SSL_* variables) is the stream's too.
    this.connConfig = c1.connConfig;
    this.master = c1;
    this.baseServer = session.server;
    this.protocol = protocol;
    stream.on('drain', () => this.wake());
    stream.on('close', () => { this.aborted = true; this.wake(); });
    stream.on('error', () => { this.aborted = true; });
  }

  get idleKeepAlive(): boolean { return false; }
  get lingering(): boolean { return false; }

  // ---- Wire -------------------------------------------------------------------------------
  get destroyed(): boolean { return this.stream.destroyed || this.stream.closed; }
  write(data: Buffer | string, encoding: BufferEncoding = 'latin1'): boolean {
    if (this.destroyed || this.discarding) return true;
    const b = typeof data === 'string' ? Buffer.from(data, encoding) : data;
    if (b.length === 0) return true;
    this.stream.write(b);
    return this.stream.writableLength < this.session.maxMem;
  }
  drain(): Promise<void> {
    if (this.destroyed || this.stream.writableLength < this.session.maxMem) return Promise.resolve();
    return new Promise((res) => this.waiters.push(res));
  }
  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  sendFile(path: string, start: number, length: number): Promise<void> {
    return streamFileRange(this, path, start, length, false, () => this.stream.close(0x2));
  }
  cork(): void { /* frames are assembled by the session */ }
  uncork(): void { /* idem */ }

  // ---- FramedWire ----------------------------------------------------------------------------
  head(status: number, fields: HeaderTable, date: string, server: string, bodyless: boolean): void {
    if (this.destroyed || this.stream.headersSent) return;
    if (status === 403 && this.request !== null && renegotiationForbidden(this.request)) {
      // A 403 because TLS would have to be renegotiated for this request (mod_ssl's note):
      // the stream is reset with HTTP_1_1_REQUIRED, for the client to ask again on HTTP/1.1.
      this.request.log('http2', APLOG_DEBUG, `AH03061: h2_stream(${this.session.c1.id}-${this.stream.id ?? 0}): renegotiate forbidden, cause: ${renegotiationForbidden(this.request)!}`);
      this.stream.close(NGHTTP2_HTTP_1_1_REQUIRED);
      return;
    }
    if (this.ws !== null && status >= 200 && status < 300) {
      // A WebSocket CONNECT answered 2xx without switching: the resource does not speak the
      // protocol; 502 with no body, as mod_http2's H2_C2_WS_OUT filter answers.
      this.refuseSwitch();
      return;
    }
    if (this.request !== null) this.session.responding(this, this.request, fields);
    // A response whose handler may add trailers (a proxied HTTP/2 response: r.trailersOut set
    // before the head) keeps the stream open after its last DATA frame for a HEADERS frame
    // of trailers (or an empty DATA frame with END_STREAM when none came).
    const trailing = !bodyless && this.request !== null && this.request.trailersOut !== null;
    // A request refused while its stream's fields were read (431, 400) is answered with Date
    // and Server first (measured on Apache 2.4.71); every other response has them last.
    this.respond(responseFields(status, fields, date, server, this.refusedEarly, null), bodyless, trailing);
  }
  interim(status: number, fields: HeaderTable): boolean {
    if (this.destroyed || this.stream.headersSent) return false;
    if (status !== 101) {
      try { this.stream.additionalHeaders(responseFields(status, fields, undefined, undefined, false, null)); } catch { /* closed */ }
      return true;
    }
    const ws = this.ws;
    // HTTP/2 has no 101: only the switch of an extended CONNECT is one, answered 200.
    if (ws === null) return false;
    const accept = fields.get('Sec-WebSocket-Accept');
    const tag = `h2_c2(${process.pid}-${this.session.c1.id}-${this.stream.id ?? 0})`;
    if (accept !== ws.accept) {
      if (accept === undefined) this.request?.log('http2', APLOG_WARNING, `AH10462: ${tag}: websocket CONNECT, got 101 response without Sec-WebSocket-Accept header`);
      else this.request?.log('http2', APLOG_ERR, `AH10463: ${tag}: websocket CONNECT, 101 response without 'Sec-WebSocket-Accept: ${accept}' but expected ${ws.accept}`);
      this.refuseSwitch();
      return false;
    }
    this.request?.log('http2', APLOG_TRACE1, `${tag}: websocket CONNECT, valid 101 Upgrade, converting to 200 response`);
    this.respond(responseFields(200, fields, undefined, undefined, false, WS_DROPPED), false);
    return !this.destroyed;
  }
  /** The 502 of a WebSocket CONNECT the resource did not switch; what the handler writes
   *  after it is dropped. */
  private refuseSwitch(): void {
    this.ws = null;
    this.discarding = true;
    this.respond({ ':status': 502, 'content-length': '0' }, true);
  }
  private respond(out: http2.OutgoingHttpHeaders, bodyless: boolean, trailing = false): void {
    this.bytesOut += String(out[':status']).length;
    try {
      if (trailing) {
        const stream = this.stream;
        stream.once('wantTrailers', () => {
          const t = this.trailers;
          this.trailers = {};
          try { stream.sendTrailers(t); } catch { try { stream.sendTrailers({}); } catch { /* gone */ } }
        });
      }
      // Date is in `out` when the response has one (a WebSocket switch's 200 has none).
      this.stream.respond(out, { endStream: bodyless, sendDate: false, waitForTrailers: trailing } as http2.ServerStreamResponseOptions);
    } catch (e) {
      // A field Node's HTTP/2 refuses (a value with control characters): the stream is reset.
      this.request?.log('http2', APLOG_ERR, `AH10020: h2_stream(${this.stream.id}): invalid response headers: ${(e as Error).message}`);
      this.stream.close(0x2);
    }
  }
  /**
   * The stream as the byte stream of a tunnel: a CONNECT's (mod_proxy_connect) or a WebSocket
   * CONNECT's once answered 200 (mod_proxy_http's Upgrade), DATA both ways. What a CONNECT's
   * handler writes starts with an HTTP/1 response head, read into the stream's response
   * (H2_C2_CATCH_H1_OUT). Flow control holds both ways: a write answers false while the
   * client's window keeps the data here, and a paused reader stops the window updates.
   * The end of the tunnel's other side does not end the stream while the client still sends
   * (httpd's shutdown of a secondary connection's writing sends no END_STREAM): the stream
   * ends once the client ended its side, or when the tunnel is over.
   */
  detach(): RawStream {
    const stream = this.stream;
    let catcher = this.ws === null && !stream.headersSent
      ? new H1ResponseCatcher(`${process.pid}-${this.session.c1.id}-${stream.id ?? 0}`) : null;
    const send = (d: Buffer): boolean => {
      if (d.length === 0) return true;
      this.bytesOut += d.length;
      return stream.write(d);
    };
    return {
      head: Buffer.alloc(0),
      write: (d) => {
        if (stream.destroyed || stream.writableEnded) return true;
        if (catcher === null) return send(d);
        const got = catcher.feed(d);
        for (const h of got.heads) this.caughtHead(h);
        if (got.error !== null) {
          catcher = null;
          const level = got.error.level === 'error' ? APLOG_ERR : got.error.level === 'warn' ? APLOG_WARNING : APLOG_DEBUG;
          this.request?.log('http2', level, got.error.message);
          if (!stream.destroyed) stream.close(NGHTTP2_INTERNAL_ERROR);
          return true;
        }
        if (got.rest === null) return true;
        catcher = null;
        return send(got.rest);
      },
      end: () => {
        if (stream.destroyed || stream.writableEnded) return;
        if (stream.readableEnded) { stream.end(); return; }
        stream.once('end', () => { if (!stream.destroyed && !stream.writableEnded) stream.end(); });
      },
      // The tunnel is over: END_STREAM after what is queued, then RST_STREAM(NO_ERROR) if the
      // client has not ended its side (as httpd ends a stream whose request is done).
      destroy: () => { if (!stream.destroyed) stream.close(NGHTTP2_NO_ERROR); },
      pause: () => { stream.pause(); },
      resume: () => { stream.resume(); },
      onData: (fn) => { stream.on('data', (d: Buffer) => { this.bytesIn += d.length; fn(d); }); },
      onEnd: (fn) => { stream.once('end', fn); },
      onClose: (fn) => { stream.once('close', fn); },
      onDrain: (fn) => { stream.once('drain', fn); },
      get destroyed() { return stream.destroyed || stream.closed; },
    };
  }
  /** A response head a tunnel's handler wrote: interim ones as such, the final one as the
   *  stream's response (no Date or Server added, as measured on Apache 2.4.71). */
  private caughtHead(h: H1Head): void {
    if (this.destroyed || this.stream.headersSent) return;
    const fields = new HeaderTable();
    for (const [n, v] of h.fields) fields.add(n, v);
    if (h.status < 200) {
      try { this.stream.additionalHeaders(responseFields(h.status, fields, undefined, undefined, false, null)); } catch { /* closed */ }
      return;
    }
    this.respond(responseFields(h.status, fields, undefined, undefined, false, null), false);
  }
  end(trailers?: HeaderTable | null): void {
    if (this.destroyed) return;
    if (!this.stream.headersSent) {
      try { this.stream.respond({ ':status': 200 }, { endStream: true }); } catch { /* gone */ }
      return;
    }
    if (trailers !== undefined && trailers !== null) this.trailers = trailerFields(trailers);
    if (!this.stream.writableEnded) this.stream.end();
  }
}

/** Fields that HTTP/2 forbids in trailers (connection-specific ones, RFC 9113 §8.2.2) and the
 *  pseudo-headers are left out; names in lower case, repeated names' values together. */
const NOT_IN_TRAILERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'content-length', 'host']);
function trailerFields(t: HeaderTable): http2.OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of t.entries()) {
    const k = name.toLowerCase();
    if (k.startsWith(':') || NOT_IN_TRAILERS.has(k)) continue;
    const had = out[k];
    out[k] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  return out;
}

/** The request body from the stream's DATA frames (httpd's H2_C2_REQUEST_IN, as chunked). */
function streamBody(st: H2Stream, r: Request, length: number): RequestBody {
  const stream = st.stream;
  let done = false;
  let failed = 0;
  let total = 0;
  let started = false;
  const wait = (): Promise<void> => new Promise((res) => {
    const go = (): void => {
      stream.off('readable', go);
      stream.off('end', go);
      stream.off('close', go);
      res();
    };
    stream.on('readable', go);
    stream.on('end', go);
    stream.on('close', go);
  });
  const next = async (limit: number): Promise<Buffer | null | number> => {
    if (failed) return failed;
    if (done) return null;
    if (!started) {
      started = true;
      // A body not read before an error response is not read at all (no 100 Continue).
      if ((r.status < 200 || r.status >= 300) && r.expecting100) { done = true; return null; }
      if (length >= 0 && limit > 0 && length > limit) {
        r.log('http', APLOG_INFO, `AH01588: Requested content-length of ${length} is larger than the configured limit of ${limit}`);
        failed = 413;
        done = true;
        return failed;
      }
      // Expect: 100-continue: the interim answer when the body is first asked for.
      if (r.expecting100 && !stream.headersSent && !stream.destroyed) {
        r.expecting100 = false;
        try { stream.additionalHeaders({ ':status': 100 }); } catch { /* closed */ }
      }
    }
    for (;;) {
      const chunk = stream.read() as Buffer | null;
      if (chunk !== null) {
        total += chunk.length;
        st.bytesIn += chunk.length;
        if (limit > 0 && total > limit) {
          r.log('http', APLOG_INFO, `AH01591: Read content length of ${total} is larger than the configured limit of ${limit}`);
          failed = 413;
          done = true;
          return failed;
        }
        return chunk;
      }
      if (stream.readableEnded || stream.destroyed) {
        done = true;
        // A stream reset before the body ended: the read fails as a cut connection does.
        if (!stream.readableEnded) { failed = 400; return failed; }
        return null;
      }
      await wait();
    }
  };
  const take = async (limit: number, keep: boolean): Promise<Buffer | number> => {
    const parts: Buffer[] = [];
    for (;;) {
      const v = await next(limit);
      if (typeof v === 'number') return v;
      if (v === null) break;
      if (keep) parts.push(v);
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  };
  return {
    length, chunked: length < 0,
    get done() { return done; },
    async next(limit: number): Promise<Buffer | null> {
      const v = await next(limit);
      if (typeof v === 'number') throw new FilterError(v);
      return v;
    },
    async read(limit: number): Promise<Buffer> {
      const v = await take(limit, true);
      if (typeof v === 'number') throw new FilterError(v);
      return v;
    },
    async discard(limit: number): Promise<number> {
      // A body the client holds back for a 100 Continue is not asked for only to be dropped
      // (measured: Apache answers a POST to a static file on HTTP/2 without a 100).
      if (r.expecting100 && !started) { done = true; started = true; r.expecting100 = false; return OK; }
      const v = await take(limit, false);
      return typeof v === 'number' ? v : OK;
    },
  };
}

/** A request body of unknown length that ends at once. */
function emptyBody(): RequestBody {
  let done = false;
  return {
    length: -1, chunked: true,
    get done() { return done; },
    next(): Promise<Buffer | null> { done = true; return Promise.resolve(null); },
    read(): Promise<Buffer> { done = true; return Promise.resolve(Buffer.alloc(0)); },
    discard(): Promise<number> { done = true; return Promise.resolve(OK); },
  };
}

/** The fields of a stream's request as the session received them (pseudo-headers apart). */
export interface StreamHead {
  readonly method: string;
  readonly path: string;
  readonly scheme: string | undefined;
  readonly authority: string | undefined;
  /** Regular fields, lower-case names, in order (a name may repeat). */
  readonly fields: readonly (readonly [string, string])[];
  /** The request has no body (END_STREAM on its HEADERS). */
  readonly ended: boolean;
  /** An extended CONNECT's :protocol (RFC 8441, H2WebSockets). */
  readonly protocol: string | undefined;
}

/** Reads Node's header object into a StreamHead. */
export function headOf(headers: http2.IncomingHttpHeaders, ended: boolean): StreamHead {
  const fields: [string, string][] = [];
  for (const name of Object.keys(headers)) {
    if (name.startsWith(':')) continue;
    const v = headers[name];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) fields.push([name, x]);
    else fields.push([name, v]);
  }
  return {
    method: String(headers[':method'] ?? ''),
    path: String(headers[':path'] ?? ''),
    scheme: headers[':scheme'] as string | undefined,
    authority: headers[':authority'] as string | undefined,
    fields,
    ended,
    protocol: headers[':protocol'] as string | undefined,
  };
}

/**
 * Serves one stream's request through the request lifecycle: the request line, Host from
 * :authority, vhost selection, post_read_request, the phases and the handler, the log.
 */
export function serveStream(st: H2Stream, h: StreamHead): Promise<void> {
  const session = st.session;
  const rt = session.rt;
  const s = session.server;
  const r = new Request(rt, st, s);
  st.request = r;
  r.perDirConfig = s.lookupDefaults;
  r.logLevel = s.logLevel;
  r.requestTime = Date.now();
  r.startMicros = nowMicros();
  const target = newRequestTarget();
  const strict = coreServer(s).strictProtocol !== false;
  let st0 = OK;
  // H2WebSockets (RFC 8441, h2_ws_rewrite_request): an extended CONNECT for a WebSocket with
  // :scheme and :path is served as the HTTP/1.1 handshake, a GET with Upgrade: websocket and
  // a key of the server's, so that mod_proxy_http (ws:// or upgrade=websocket) tunnels it.
  const tag = (): string => `h2_stream(${process.pid}-${session.c1.id}-${st.stream.id ?? 0},IDLE)`;
  // CONNECT, whatever its case (h2_stream_end_headers, RFC 9113 8.5): an extended one must
  // be a WebSocket's with :scheme and :path; a plain one has neither. nghttp2 resets the
  // stream first when the method is "CONNECT" itself; these answer the other spellings.
  const isConnect = h.method.toUpperCase() === 'CONNECT';
  let refused = 0;
  if (isConnect && h.protocol !== undefined) {
    if (h.protocol !== 'websocket') {
      r.log('http2', APLOG_DEBUG, `AH10460: ':protocol: ${h.protocol}' header present in ${h.method} request`);
      refused = 501;
    } else if (h.scheme === undefined || h.path === '') {
      r.log('http2', APLOG_INFO, `AH10457: ${tag()}: Request to websocket CONNECT without :scheme or :path, sending 400 answer`);
      refused = 400;
    }
  } else if (isConnect && (h.scheme !== undefined || h.path !== '')) {
    r.log('http2', APLOG_INFO, `AH10384: ${tag()}: Request to CONNECT with :scheme or :path specified, sending 400 answer`);
    refused = 400;
  }
  const ws = refused === 0 && isConnect && h.protocol === 'websocket' && session.webSockets ? wsKey() : null;
  // A plain CONNECT: a tunnel to :authority (mod_proxy_connect), the stream's DATA its bytes.
  const tunnel = refused === 0 && ws === null && isConnect;
  if (refused !== 0) {
    // Refused before the request is made (h2_create_request_rec's "die"): the request line
    // is the method and the path as sent.
    parseRequestLine(r, `${h.method} ${h.path === '' ? '(null)' : h.path} HTTP/2.0`, strict, coreServer(s), target);
    st0 = refused;
  } else if (ws !== null) {
    st.ws = { accept: ws.accept };
    st0 = parseRequestLine(r, `GET ${h.path} HTTP/2.0`, strict, coreServer(s), target);
  } else if (tunnel) {
    // The authority-form request line; :authority does not become a Host field.
    st0 = parseRequestLine(r, `${h.method} ${h.authority ?? ''} HTTP/2.0`, strict, coreServer(s), target);
    // (An extended CONNECT that H2WebSockets did not take still has them.)
    if (h.scheme !== undefined) {
      r.log('http2', APLOG_DEBUG, `AH10458: ':scheme: ${h.scheme}' header present in CONNECT request`);
      st0 = 400;
    } else if (h.path !== '') {
      r.log('http2', APLOG_DEBUG, `AH10459: ':path: ${h.path}' header present in CONNECT request`);
      st0 = 400;
    }
  } else if (h.protocol !== undefined) {
    r.log('http2', APLOG_DEBUG, `AH10470: ':protocol: ${h.protocol}' header present in ${h.method} request`);
    parseRequestLine(r, `${h.method} ${h.path === '' ? '/' : h.path} HTTP/2.0`, strict, coreServer(s), target);
    st0 = 400;
  } else if (session.proxyRequests) {
    // H2ProxyRequests on (h2_request_create_rec): the request line carries the absolute URL
    // made of :scheme, :authority and :path, which mod_proxy's forward proxy then takes as it
    // takes an HTTP/1.1 request for an absolute URL. Without :scheme or :authority: 400.
    if (h.scheme === undefined || h.authority === undefined) {
      r.log('http2', APLOG_DEBUG, h.scheme === undefined
        ? 'AH10468: H2ProxyRequests on, but request misses :scheme'
        : 'AH10469: H2ProxyRequests on, but request misses :authority');
      st0 = parseRequestLine(r, `${h.method} / HTTP/2.0`, strict, coreServer(s), target);
      if (st0 === OK) st0 = 400;
    } else {
      st0 = parseRequestLine(r, `${h.method} ${h.scheme}://${h.authority}${h.path} HTTP/2.0`, strict, coreServer(s), target);
    }
  } else if (h.scheme !== undefined && h.authority !== undefined && !/^https?$/i.test(h.scheme)) {
    // A :scheme other than the connection's kind: an absolute URL (httpd does the same).
    st0 = parseRequestLine(r, `${h.method} ${h.scheme}://${h.authority}${h.path} HTTP/2.0`, strict, coreServer(s), target);
  } else {
    st0 = parseRequestLine(r, `${h.method} ${h.path} HTTP/2.0`, strict, coreServer(s), target);
  }
  r.protocol = 'HTTP/2.0';
  r.protoNum = 2000;
  r.assbackwards = false;
  let headerBytes = 0;
  // LimitRequestFields and LimitRequestFieldSize apply to the stream's fields (mod_http2
  // answers 431 Request Header Fields Too Large).
  if (st0 === OK && s.limitRequestFields > 0 && h.fields.length > s.limitRequestFields) {
    r.log('http2', APLOG_INFO, `AH10181: ${tag()}: Number of request headers exceeds LimitRequestFields(${s.limitRequestFields})`);
    st0 = 431;
  }
  for (const [name, value] of h.fields) {
    if (st0 === OK && name.length + value.length + 2 > s.limitRequestFieldSize) {
      r.log('http2', APLOG_INFO, `AH10180: ${tag()}: Request header exceeds LimitRequestFieldSize(${s.limitRequestFieldSize}): ${name}`);
      st0 = 431;
    }
    headerBytes += name.length + value.length + 4;
    if (name === 'cookie' && r.headersIn.has('cookie')) {
      // Cookie crumbs are joined with "; " (RFC 9113 8.2.3), as mod_http2 does.
      r.headersIn.set('cookie', `${r.headersIn.get('cookie')!}; ${value}`);
    } else {
      r.headersIn.merge(name, value);
    }
  }
  // :authority stands for Host, except on a CONNECT (of any spelling: h2's assign_headers).
  if (h.authority !== undefined && !r.headersIn.has('host') && !(isConnect && ws === null)) r.headersIn.set('Host', h.authority);
  if (ws !== null) {
    r.headersIn.set('Upgrade', 'websocket');
    r.headersIn.add('Connection', 'Upgrade');
    r.headersIn.set('Sec-WebSocket-Key', ws.key);
  }
  st.bytesIn = r.theRequest.length + 2 + headerBytes + 2;
  r.headerOnly = r.method === 'HEAD';
  // The body: its declared length, or as chunked (mod_http2 marks a request without
  // Content-Length whose HEADERS did not end the stream as having a body of unknown length).
  if (isConnect && ws === null) {
    // No body (no Content-Length guards for a CONNECT): what the client sends on the stream
    // is the tunnel's (ConnRec.detach); a refused one is answered without reading it.
  } else if (!h.ended && ws === null) {
    const cl = r.headersIn.get('content-length');
    let length = -1;
    // A body of unknown length is announced to the HTTP/1.1 processing as chunked
    // (h2_create_request_rec), which mod_proxy_http and CGI see.
    if (cl === undefined) r.headersIn.merge('Transfer-Encoding', 'chunked');
    else {
      length = parseStrictLength(cl);
      if (length < 0) {
        r.log('core', APLOG_DEBUG, `AH10242: client sent invalid Content-Length (${cl}): ${r.uri}`);
        st0 = 400;
      }
    }
    r.body = streamBody(st, r, length);
  } else if (ws === null) {
    // HEADERS ended the stream: no body will come. With a Content-Type and no Content-Length,
    // mod_http2 says so with an explicit "Content-Length: 0" (h2_create_request_rec), which
    // CGI's CONTENT_LENGTH and the proxied request show.
    if (!r.headersIn.has('content-length') && r.headersIn.has('content-type')) r.headersIn.set('Content-Length', '0');
  } else if (ws !== null) {
    // The handshake's body is empty (mod_http2 ends the request there; the stream's DATA is
    // the tunnel's) and of unknown length: mod_proxy_http sends Content-Length: 0.
    r.headersIn.merge('Transfer-Encoding', 'chunked');
    r.body = emptyBody();
  }
  const expect = r.headersIn.get('expect');
  if (st0 === OK && expect !== undefined && expect !== '') {
    if (expect.toLowerCase() === '100-continue') r.expecting100 = true;
    else {
      r.log('core', APLOG_INFO, `AH00570: client sent an unrecognized expectation value of Expect: ${expect}`);
      st0 = 417;
    }
  }
  // Host and the virtual host (ap_check_request_header).
  const candidates = session.candidates;
  const host = r.headersIn.get('host');
  let hostname: string | undefined;
  if (st0 === OK && tunnel) {
    // The host to connect to names the virtual host (ap_parse_uri of an authority-form target).
    hostname = fixHostname(r, undefined, strict);
    if (hostname === undefined) st0 = 400;
  } else if (st0 === OK && host !== undefined) {
    hostname = fixHostname(r, host, strict);
    if (hostname === undefined) st0 = 400;
  }
  r.hostname = hostname ?? '';
  r.server = rt.vhosts.select(candidates, r.hostname, st.localPort);
  if (session.server.isVirtual && !candidates.includes(r.server)) r.server = session.server;
  r.perDirConfig = r.server.lookupDefaults;
  r.logLevel = r.server.logLevel;
  return finish(st, r, serve(st, r, st0, target.scheme));
}

function serve(st: H2Stream, r: Request, early: number, scheme: string | undefined): MaybePromise<void> {
  if (early !== OK) {
    st.refusedEarly = true;
    r.status = early;
    return die(st.session.rt, r, early);
  }
  return serveReadRequest(st.session.rt, r, scheme);
}

async function finish(st: H2Stream, r: Request, served: MaybePromise<void>): Promise<void> {
  const rt = st.session.rt;
  try {
    await served;
  } catch (e) {
    await requestFailed(rt, r, e);
  }
  // The body nobody read is dropped; the stream ends with the response.
  if (r.body !== null && !r.body.done && !st.destroyed) {
    await r.body.discard(coreDir(r).limitRequestBody ?? DEFAULT_LIMIT_REQUEST_BODY);
  }
  st.end();
  let last: Request = r;
  while (last.next) last = last.next;
  try {
    await runAll(rt.hooks.logTransaction, last);
  } catch (e) {
    r.log('core', APLOG_ERR, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
  }
}
