// An HTTP/2 session on a connection (httpd's h2_session.c over nghttp2): Node's HTTP/2
// (nghttp2 too) speaks the frames; each stream it opens is served as a request (stream.ts).
// The session's settings are the server's H2MaxSessionStreams and H2WindowSize, with the
// connection window opened wide as mod_http2 does; an idle session ends after
// KeepAliveTimeout, a stream without progress after H2StreamTimeout; server push follows
// the response's `Link: <...>; rel=preload` fields and H2PushResource (H2Push on).

import * as http2 from 'node:http2';
import type * as net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Runtime } from '../../../server/runtime.js';
import type { Request } from '../../../server/request/request.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { HeaderTable } from '../../../server/request/headers.js';
import type { SwitchableConn } from '../../../server/http/protocols.js';
import { APLOG_DEBUG } from '../../../server/log/levels.js';
import { H2Stream, headOf, serveStream, type StreamHead, type StreamSession } from './stream.js';

/** What a session takes from the server's configuration (per base server, computed once). */
export interface SessionSettings {
  readonly maxStreams: number;
  readonly windowSize: number;
  readonly maxMem: number;
  readonly streamTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly paddingBits: number;
  readonly pushDiarySize: number;
  /** H2ModernTLSOnly: a TLS connection must be TLS 1.2 or newer with an AEAD ECDHE/DHE cipher. */
  readonly modernTlsOnly: boolean;
  /** H2WebSockets: extended CONNECT (RFC 8441) is offered. */
  readonly webSockets: boolean;
  /** H2ProxyRequests: requests carry absolute URLs for mod_proxy's forward proxy. */
  readonly proxyRequests: boolean;
  /** H2MaxHeaderBlockLen: the largest response header block (0: Node's default). */
  readonly maxHeaderBlockLen: number;
  /** H2MaxStreamErrors: invalid frames tolerated before the session ends. */
  readonly maxStreamErrors: number;
}

/** Per request: whether to push and what (H2Push, H2PushResource, H2PushPriority). */
export interface PushPolicy {
  push(r: Request): boolean;
  /** Paths H2PushResource names for r, with whether each is critical. */
  resources(r: Request): readonly { readonly path: string; readonly critical: boolean }[];
  /** H2PushPriority for a content type ('*' when none is given for it): the dependency on
   *  the stream that pushed and the weight. */
  priority(contentType: string | undefined): { readonly dependency: 'after' | 'before' | 'interleaved'; readonly weight: number } | null;
}

const NGHTTP2_NO_ERROR = 0;
/** Node's PADDING_STRATEGY_ALIGNED (in http2.constants, not in its type declarations). */
const PADDING_STRATEGY_ALIGNED = 1;
const NGHTTP2_CANCEL = 0x8;
const NGHTTP2_INADEQUATE_SECURITY = 0xc;
/** The connection window mod_http2 opens (a WINDOW_UPDATE of 2^31 - 1 - 65535). */
const CONNECTION_WINDOW = 0x7fffffff;

/** Node's HTTP/2 servers (never listening) by settings: a connection is handed to one. */
const servers = new Map<string, http2.Http2Server>();

function serverFor(st: SessionSettings): http2.Http2Server {
  const key = `${st.maxStreams}/${st.windowSize}/${st.paddingBits}/${st.webSockets}/${st.maxHeaderBlockLen}/${st.maxStreamErrors}`;
  let s = servers.get(key);
  if (s === undefined) {
    s = http2.createServer({
      // Only what differs from the protocol's defaults is announced, as mod_http2 does.
      settings: {
        maxConcurrentStreams: st.maxStreams,
        ...(st.windowSize !== 65535 ? { initialWindowSize: st.windowSize } : {}),
        ...(st.webSockets ? { enableConnectProtocol: true } : {}),
      },
      ...(st.maxHeaderBlockLen > 0 ? { maxSendHeaderBlockLength: st.maxHeaderBlockLen } : {}),
      maxSessionInvalidFrames: st.maxStreamErrors,
      // H2Padding: Node pads frames to a multiple of 8 bytes, the nearest it has to
      // mod_http2's random padding (DIFFERENCE: see docs/differences.md).
      paddingStrategy: st.paddingBits > 0 ? PADDING_STRATEGY_ALIGNED : http2.constants.PADDING_STRATEGY_NONE,
      maxSessionMemory: 64,
    });
    // A session that fails is closed by Node; nothing to report beyond the connection.
    s.on('sessionError', () => undefined);
    servers.set(key, s);
  }
  return s;
}

/** RFC 7540 9.2.2's test as mod_http2 applies it (h2_protocol_is_acceptable_c1). */
export function tlsAcceptable(tls: { readonly protocol: string; readonly cipher: string }): boolean {
  if (tls.protocol !== 'TLSv1.2' && tls.protocol !== 'TLSv1.3') return false;
  if (tls.protocol === 'TLSv1.3') return true;
  const c = tls.cipher.toUpperCase();
  return (c.startsWith('ECDHE') || c.startsWith('DHE')) && (c.includes('GCM') || c.includes('CHACHA20') || c.includes('CCM'));
}

/** The request fields a pushed request takes from the one that caused it (h2_push.c). */
const PUSH_COPIED = ['user-agent', 'accept', 'accept-encoding', 'accept-language', 'cache-control'];

export class H2Session implements StreamSession {
  readonly scheme: string;
  readonly maxMem: number;
  readonly webSockets: boolean;
  readonly proxyRequests: boolean;
  readonly candidates: readonly ServerRec[];
  private readonly session: http2.ServerHttp2Session | null = null;
  /** Paths pushed on this connection (H2PushDiarySize: the oldest forgotten first). */
  private readonly diary = new Set<string>();
  private active = 0;

  constructor(
    readonly rt: Runtime,
    readonly c1: SwitchableConn,
    readonly server: ServerRec,
    private readonly protocol: string,
    private readonly settings: SessionSettings,
    private readonly policy: PushPolicy,
    socket: net.Socket | Duplex,
    tls: { readonly protocol: string; readonly cipher: string } | null,
  ) {
    this.scheme = tls !== null ? 'https' : 'http';
    this.maxMem = settings.maxMem;
    this.webSockets = settings.webSockets;
    this.proxyRequests = settings.proxyRequests;
    this.candidates = rt.vhosts.candidates(c1.localIp, c1.localPort);
    const h2s = serverFor(settings);
    let created: http2.ServerHttp2Session | null = null;
    const onSession = (s: http2.ServerHttp2Session): void => { created = s; };
    h2s.once('session', onSession);
    h2s.emit('connection', socket);
    h2s.off('session', onSession);
    const session = created as http2.ServerHttp2Session | null;
    if (session === null) { (socket as Duplex).destroy(); return; }
    this.session = session;
    c1.switchedTo(protocol, () => { if (!session.closed) session.close(); });
    if (tls !== null && settings.modernTlsOnly && !tlsAcceptable(tls)) {
      // h2 on a connection that does not meet RFC 7540's TLS requirements (a direct h2
      // connection): refused with INADEQUATE_SECURITY.
      session.goaway(NGHTTP2_INADEQUATE_SECURITY);
      session.close();
      return;
    }
    session.on('connect', () => { try { session.setLocalWindowSize(CONNECTION_WINDOW); } catch { /* closed */ } });
    session.on('stream', (stream, headers, flags) => this.onStream(stream, headers, flags));
    session.on('error', () => undefined);
    // Idle (no stream open) for KeepAliveTimeout: the session ends with a GOAWAY.
    session.setTimeout(settings.idleTimeoutMs, () => {
      if (this.active === 0) { session.goaway(NGHTTP2_NO_ERROR); session.close(); }
    });
  }

  private onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number): void {
    const ended = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0 || stream.readableEnded;
    this.serve(stream, headOf(headers, ended));
  }

  private serve(stream: http2.ServerHttp2Stream, head: StreamHead, pushedOn = 0): void {
    const st = new H2Stream(this, stream, this.protocol);
    st.pushedOn = pushedOn;
    this.active++;
    if (this.settings.streamTimeoutMs > 0) stream.setTimeout(this.settings.streamTimeoutMs, () => stream.close(NGHTTP2_CANCEL));
    void serveStream(st, head).finally(() => { this.active--; });
  }

  /** A response head is going out on `st`: resources it names for preload are pushed; a
   *  pushed response takes H2PushPriority's priority for its content type. */
  responding(st: H2Stream, r: Request, fields: HeaderTable): void {
    const stream = st.stream;
    if (st.pushedOn > 0) {
      const p = this.policy.priority(fields.get('Content-Type'));
      if (p !== null) { try { stream.priority({ ...priorityOptions(p, st.pushedOn), silent: true }); } catch { /* closed */ } }
      return;
    }
    if (!stream.pushAllowed || r.status < 200 || r.status >= 300 || (r.method !== 'GET' && r.method !== 'HEAD')) return;
    if (r.headersIn.get('accept-push-policy') === 'none' || !this.policy.push(r)) return;
    const paths: { path: string; critical: boolean }[] = [];
    for (const link of fields.getAll('Link')) {
      for (const p of preloadLinks(link)) paths.push({ path: p, critical: false });
    }
    for (const res of this.policy.resources(r)) paths.push({ path: res.path, critical: res.critical });
    for (const { path, critical } of paths) this.push(st, r, path, critical);
  }

  private push(st: H2Stream, r: Request, path: string, critical: boolean): void {
    if (!path.startsWith('/') || path.startsWith('//')) return;
    const authority = r.headersIn.get('host') ?? '';
    const key = `${authority} ${path}`;
    if (this.diary.has(key)) return;
    if (this.settings.pushDiarySize <= 0) return;
    if (this.diary.size >= this.settings.pushDiarySize) this.diary.delete(this.diary.values().next().value as string);
    this.diary.add(key);
    const headers: http2.OutgoingHttpHeaders = { ':method': 'GET', ':path': path, ':scheme': this.scheme, ':authority': authority };
    const fields: [string, string][] = [];
    for (const name of PUSH_COPIED) {
      const v = r.headersIn.get(name);
      if (v !== undefined) { headers[name] = v; fields.push([name, v]); }
    }
    const prio = critical ? { weight: 256, exclusive: true } : priorityOptions(this.policy.priority(undefined), st.stream.id ?? 0);
    if (r.wantsLog('http2', APLOG_DEBUG)) r.log('http2', APLOG_DEBUG, `AH03076: h2_stream(${st.stream.id}): SERVER_PUSH for GET ${path}`);
    try {
      st.stream.pushStream(headers, prio ?? {}, (err, pushed) => {
        if (err !== null) return;
        this.serve(pushed, { method: 'GET', path, scheme: this.scheme, authority, fields, ended: true, protocol: undefined }, st.stream.id);
      });
    } catch { /* the client refuses pushes or the stream closed */ }
  }
}

/** H2PushPriority as HTTP/2 priority: After — depends on the stream that pushed; Before —
 *  exclusive at its level, ahead of it; Interleaved — beside it, with the weight. */
function priorityOptions(p: { readonly dependency: string; readonly weight: number } | null, pushedOn: number): { parent?: number; weight?: number; exclusive?: boolean } {
  if (p === null) return {};
  if (p.dependency === 'after') return { parent: pushedOn, weight: p.weight };
  if (p.dependency === 'before') return { weight: p.weight, exclusive: true };
  return { weight: p.weight };
}

/** The targets of `rel=preload` links in a Link field, without those marked `nopush`. */
export function preloadLinks(value: string): string[] {
  const out: string[] = [];
  const re = /<([^>]*)>([^,<]*)/g;
  for (let m = re.exec(value); m !== null; m = re.exec(value)) {
    const params = m[2]!.split(';').map((p) => p.trim().toLowerCase()).filter((p) => p !== '');
    let preload = false;
    let nopush = false;
    for (const p of params) {
      const eq = p.indexOf('=');
      const name = eq < 0 ? p : p.slice(0, eq).trim();
      const val = eq < 0 ? '' : p.slice(eq + 1).trim().replace(/^"|"$/g, '');
      if (name === 'rel' && val.split(/\s+/).includes('preload')) preload = true;
      if (name === 'nopush') nopush = true;
    }
    if (preload && !nopush) out.push(m[1]!);
  }
  return out;
}
