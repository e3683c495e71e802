// TLS below HTTP (mod_ssl's pre_connection hook and its I/O filters, ssl_engine_io.c): a
// connection whose base server has SSLEngine on is handed to Node's TLS on the accepted
// socket, with the base server's context; SNI picks a name-based virtual host's context
// during the handshake (ssl_callback_ServerNameIndication / ssl_find_vhost); sessions go to
// and come from SSLSessionCache's small-object cache, so that a session made in one worker
// (or, with memcache/redis, on another machine) resumes here. Once the handshake is done the
// TLS socket is what the HTTP connection reads and writes: every module's hooks run
// unchanged. The first bytes decide whether this is TLS at all: plain HTTP on the TLS port
// is served as HTTP so that the request hooks can answer it with httpd's 400 page.

import * as crypto from 'node:crypto';
import type * as net from 'node:net';
import * as tls from 'node:tls';
import type { ServerRec } from '../../../server/server-rec.js';
import type { ConnRec } from '../../../server/request/request.js';
import type { TcpStream, Transport } from '../../../server/http/tcp-stream.js';
import { socketFromStream } from '../../../server/http/accept.js';
import type { ConnectionLayer } from '../../../server/http/connection-layer.js';
import type { SocacheInstance } from '../../../server/socache.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, levelFor } from '../../../server/log/levels.js';
import type { TlsServer } from './contexts.js';
import { SslConn, sslVar } from './vars.js';
import { certDetails, verifyChain, type ConnLog } from './ocsp.js';
import type { Stapler } from './stapling.js';
import { withRenewal } from './tickets.js';
import { canOpenTlsStream, openTlsStream, tlsStreams, type HandleOwner, type TlsStream } from './stream.js';

/** What the layer needs from the configuration generation. */
export interface LayerSetup {
  readonly servers: ReadonlyMap<ServerRec, TlsServer>;
  /** The session cache (SSLSessionCache), or null (none). */
  cache(): SocacheInstance | null;
  readonly sessionTimeoutMs: number;
  /** Stores the connection's state in its record (mod_ssl's c->conn_config). */
  attach(c: ConnRec, state: SslConn): void;
  /** Candidate virtual hosts for the connection's address (name-based selection by SNI). */
  candidates(localIp: string, localPort: number): readonly ServerRec[];
  /** A server's OCSP stapling (SSLUseStapling on). */
  stapler(t: TlsServer): Stapler | undefined;
  /** ALPN (ssl_callback_alpn_select): the protocol of the client's list the server chosen by
   *  SNI speaks (Protocols, ProtocolsHonorOrder), undefined when none. */
  selectProtocol(s: ServerRec, offers: readonly string[], tls: { readonly protocol: string; readonly cipher: string }): string | undefined;
}

/** The client end of a connection, as the logs name it. */
interface Peer {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}

function logConn(s: ServerRec, level: number, message: string, sock: Peer): void {
  if (level > levelFor(s.logLevel, 'ssl')) return;
  s.errorLog.write({ module: 'ssl', level, message, client: { ip: normIp(sock.remoteAddress ?? ''), port: sock.remotePort ?? 0 } });
}

function connLog(s: ServerRec, sock: Peer): ConnLog {
  return (level, message, errno) => {
    if (level > levelFor(s.logLevel, 'ssl')) return;
    s.errorLog.write({ module: 'ssl', level, message, errno, client: { ip: normIp(sock.remoteAddress ?? ''), port: sock.remotePort ?? 0 } });
  };
}

function serverLog(s: ServerRec): ConnLog {
  return (level, message, errno) => {
    if (level > levelFor(s.logLevel, 'ssl')) return;
    s.errorLog.write({ module: 'ssl', level, message, errno });
  };
}

/** The certificates above the client's (its issuers, up to the trusted root), as Node's
 *  verification found them. */
function peerChain(tsock: tls.TLSSocket): crypto.X509Certificate[] {
  const out: crypto.X509Certificate[] = [];
  const seen = new Set<string>();
  let c = tsock.getPeerCertificate(true)?.issuerCertificate;
  while (c !== undefined && c.raw !== undefined && !seen.has(c.fingerprint256)) {
    seen.add(c.fingerprint256);
    out.push(new crypto.X509Certificate(c.raw));
    if (c.issuerCertificate === c) break;
    c = c.issuerCertificate;
  }
  return out;
}

/** The TLS socket's server object: the hub its session and OCSP events go to. Node reads it
 *  when it emits them, so SNI can point a handshake at the chosen host's hub. */
type HubbedSocket = tls.TLSSocket & { server: tls.Server };
/** tls.Server keeps the context of handshakes without SNI here (Node reads it for OCSP). */
type HubServer = tls.Server & { _sharedCreds: tls.SecureContext };

type OcspCallback = (err: Error | null, resp?: Buffer) => void;

/** Answers Node's OCSPRequest with what the stapler says. */
function staple(stapler: Stapler, cert: Buffer | undefined, slog: ConnLog, clog: ConnLog, cb: OcspCallback): void {
  stapler.respond(cert, slog, clog).then((r) => {
    if (r instanceof Error) cb(r);
    else if (r === null) cb(null);
    else cb(null, r);
  }, (e: unknown) => cb(e instanceof Error ? e : new Error(String(e))));
}

function normIp(ip: string): string {
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}

/** OpenSSL's reason text from a Node TLS error ("SSL routines::http request"). */
function reason(e: Error): string {
  const r = (e as { reason?: string }).reason;
  return r ?? e.message;
}

/** The request httpd hands its HTTP layer when plain HTTP arrives on a TLS port. */
const FAKE_REQUEST = Buffer.from('GET / HTTP/1.0\r\n\r\n', 'latin1');

/** Whether a connection's first bytes begin a TLS record: 0x16 (handshake), or an SSLv2-style
 *  hello with the high bit set. */
function tlsRecord(chunk: Buffer): boolean {
  return chunk[0] === 0x16 || (chunk[0]! & 0x80) !== 0;
}

/** OpenSSL's numbers for the verification errors Node names (X509_V_ERR_*). */
const X509_ERRNO: Readonly<Record<string, number>> = {
  UNABLE_TO_GET_ISSUER_CERT: 2, UNABLE_TO_GET_CRL: 3, UNABLE_TO_DECRYPT_CERT_SIGNATURE: 4, UNABLE_TO_DECRYPT_CRL_SIGNATURE: 5,
  UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY: 6, CERT_SIGNATURE_FAILURE: 7, CRL_SIGNATURE_FAILURE: 8, CERT_NOT_YET_VALID: 9,
  CERT_HAS_EXPIRED: 10, CRL_NOT_YET_VALID: 11, CRL_HAS_EXPIRED: 12, DEPTH_ZERO_SELF_SIGNED_CERT: 18,
  SELF_SIGNED_CERT_IN_CHAIN: 19, UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 20, UNABLE_TO_VERIFY_LEAF_SIGNATURE: 21,
  CERT_CHAIN_TOO_LONG: 22, CERT_REVOKED: 23, INVALID_CA: 24, PATH_LENGTH_EXCEEDED: 25, INVALID_PURPOSE: 26,
  CERT_UNTRUSTED: 27, CERT_REJECTED: 28,
};

/** The error OpenSSL's verify callback meets first, as httpd logs it: for a certificate whose
 *  issuer is unknown that is "unable to get local issuer certificate" (20), where the final
 *  result Node reports is "unable to verify the first certificate" (21). */
function firstError(code: string, message: string): { n: number; text: string } {
  if (code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE') return { n: 20, text: 'unable to get local issuer certificate' };
  return { n: X509_ERRNO[code] ?? 0, text: message };
}

/** What the layer reads from a ClientHello before TLS takes it. */
export interface HelloInfo {
  /** It offers post-handshake authentication (post_handshake_auth, 49): httpd can then ask
   *  for a client certificate later in a TLS 1.3 connection, and without it cannot (AH10158). */
  readonly pha: boolean;
  /** legacy_session_id (TLS 1.3 clients send a random one). */
  readonly legacyId: Buffer | null;
  /** The first PSK identity (pre_shared_key, 41): for a TLS 1.3 session this server stored
   *  (SSLSessionTickets off: a stateful ticket), the session's id in the cache. */
  readonly psk: Buffer | null;
  /** supported_versions (43) lists TLS 1.3. */
  readonly tls13: boolean;
}

/** Reads a ClientHello (the first bytes of the connection); what it cannot read is absent. */
export function parseClientHello(b: Buffer): HelloInfo {
  let pha = false;
  let legacyId: Buffer | null = null;
  let psk: Buffer | null = null;
  let tls13 = false;
  try {
    // Record header (5), handshake header (4), version (2), random (32).
    if (b.length < 5 + 4 + 34 || b[0] !== 0x16 || b[5] !== 0x01) return { pha, legacyId, psk, tls13 };
    let at = 5 + 4 + 34;
    const idLen = b[at]!;
    if (idLen > 0 && idLen <= 32 && at + 1 + idLen <= b.length) legacyId = Buffer.from(b.subarray(at + 1, at + 1 + idLen));
    at += 1 + idLen;
    at += 2 + b.readUInt16BE(at);           // cipher suites
    at += 1 + b[at]!;                       // compression methods
    const end = Math.min(b.length, at + 2 + b.readUInt16BE(at));
    at += 2;
    while (at + 4 <= end) {
      const type = b.readUInt16BE(at);
      const len = b.readUInt16BE(at + 2);
      if (type === 49) pha = true;
      if (type === 43 && at + 5 <= end) {
        const n = b[at + 4]!;
        for (let i = at + 5; i + 1 < Math.min(end, at + 5 + n); i += 2) if (b.readUInt16BE(i) === 0x0304) tls13 = true;
      }
      if (type === 41 && at + 6 <= end) {
        const n = b.readUInt16BE(at + 6);
        if (n > 0 && n <= 512 && at + 8 + n <= end) psk = Buffer.from(b.subarray(at + 8, at + 8 + n));
      }
      at += 4 + len;
    }
  } catch { /* a ClientHello cut short: what was read */ }
  return { pha, legacyId, psk, tls13 };
}

/** What a connection's handshake needs, the same for every connection to one address. */
interface HandshakePlan {
  /** A name-based virtual host of the address has TLS settings of its own: SNI must choose. */
  readonly sni: boolean;
  /** Every host the handshake can end on has TLS 1.3 with stateless tickets. */
  readonly stateless13: boolean;
  /** Every host the handshake can end on speaks TLS 1.3. */
  readonly all13: boolean;
  /** A TLS 1.3 handshake here can run on Node's TLS binding without a TLSSocket (stream.ts):
   *  the base host needs no SNI choice, no client certificate, no OCSP stapling, no session
   *  cache events and speaks only HTTP/1.1 (ALPN). */
  readonly direct: boolean;
}

/** The mark of a TLS 1.3 ClientHello that offers no PSK (nothing to look up). */
const NO_PSK = Buffer.alloc(0);

export class TlsLayer implements ConnectionLayer {
  /** Two tls.Servers per SSL host (they never listen): they carry the host's OCSP stapling
   *  requests and, the first of them, the session cache events. Node parses every ClientHello
   *  in JavaScript and hands every new session to JavaScript (each TLS 1.3 handshake makes
   *  two) for a socket whose server listens to those events, so a handshake that cannot use
   *  the cache reports to the second, which does not listen to them. */
  private readonly hubs = new Map<TlsServer, HubServer>();
  private readonly quietHubs = new Map<TlsServer, HubServer>();
  private readonly plans = new WeakMap<readonly ServerRec[], Map<TlsServer, HandshakePlan>>();
  private readonly staplers = new Map<TlsServer, Stapler>();
  private readonly ports = new Set<number>();
  /** PSK identities of TLS 1.3 ClientHellos being handshaken, by their legacy session id. */
  private readonly pskByLegacyId = new Map<string, Buffer>();

  constructor(private readonly setup: LayerSetup) {
    const newSession = (id: Buffer, data: Buffer, done: () => void): void => {
      const cache = setup.cache();
      if (cache === null) { done(); return; }
      cache.store(id, Date.now() + setup.sessionTimeoutMs, data).then(() => done(), () => done());
    };
    const resumeSession = (id: Buffer, cb: (err: Error | null, data: Buffer | null) => void): void => {
      const cache = setup.cache();
      if (cache === null) { cb(null, null); return; }
      const psk = this.pskByLegacyId.get(id.toString('hex'));
      if (psk === NO_PSK) { cb(null, null); return; }
      cache.retrieve(psk ?? id).then((d) => cb(null, d), () => cb(null, null));
    };
    for (const t of setup.servers.values()) {
      for (const a of t.s.addrs) if (a.port !== 0) this.ports.add(a.port);
      if (t.s.port !== 0) this.ports.add(t.s.port);
      const hub = new tls.Server() as HubServer;
      const quiet = new tls.Server() as HubServer;
      hub._sharedCreds = t.context;
      quiet._sharedCreds = t.context;
      hub.on('newSession', newSession);
      hub.on('resumeSession', resumeSession);
      const stapler = setup.stapler(t);
      if (stapler !== undefined) {
        // Node emits the event without the socket; handshakes get a per-connection view of
        // the hub (hubFor) whose emit passes the socket on, so that the responder client's
        // lines name the client as httpd's do. This listener only makes Node ask.
        const log = serverLog(t.s);
        const ask = (cert: Buffer | undefined, _issuer: Buffer | undefined, cb: OcspCallback): void => staple(stapler, cert, log, log, cb);
        hub.on('OCSPRequest', ask);
        quiet.on('OCSPRequest', ask);
        this.staplers.set(t, stapler);
      }
      this.hubs.set(t, hub);
      this.quietHubs.set(t, quiet);
    }
  }

  /** The handshake plan for connections to an address whose base host is `first`. */
  private plan(first: TlsServer, candidates: readonly ServerRec[]): HandshakePlan {
    let byFirst = this.plans.get(candidates);
    if (byFirst === undefined) { byFirst = new Map(); this.plans.set(candidates, byFirst); }
    let p = byFirst.get(first);
    if (p === undefined) {
      const hosts = candidates.map((v) => this.setup.servers.get(v)).filter((t): t is TlsServer => t !== undefined);
      const sni = hosts.some((t) => t !== first);
      const stateless13 = first.statelessTls13 && hosts.every((t) => t.statelessTls13);
      const onlyHttp1 = this.setup.selectProtocol(first.s, ['h2', 'acme-tls/1', 'http/1.1'], { protocol: 'TLSv1.3', cipher: 'TLS_AES_128_GCM_SHA256' }) ?? 'http/1.1';
      const direct = !sni && stateless13 && !first.requestCert && first.verify === 'none' && first.ocsp === null
        && !this.staplers.has(first) && onlyHttp1 === 'http/1.1';
      p = { sni, stateless13, direct, all13: first.tls13 && hosts.every((t) => t.tls13) };
      byFirst.set(first, p);
    }
    return p;
  }

  /** The server object a handshake with host `t` reports to: its hub, or for a stapling host a
   *  view of it that knows the connection. */
  private hubFor(t: TlsServer, sock: net.Socket, sessions: boolean): HubServer | undefined {
    const hub = (sessions ? this.hubs : this.quietHubs).get(t);
    const stapler = this.staplers.get(t);
    if (hub === undefined || stapler === undefined) return hub;
    const view = Object.create(hub) as HubServer;
    const slog = serverLog(t.s);
    const clog = connLog(t.s, sock);
    view.emit = (event: string | symbol, ...args: unknown[]): boolean => {
      if (event !== 'OCSPRequest') return hub.emit(event, ...args);
      staple(stapler, args[0] as Buffer | undefined, slog, clog, args[2] as OcspCallback);
      return true;
    };
    return view;
  }

  wantsSocket(port: number): boolean {
    // Where Node's TLS binding can be driven directly (stream.ts), connections come as
    // accept.ts's TcpStreams (acceptStream): a net.Socket is made only for a handshake that
    // needs a TLSSocket.
    return !tlsStreams && this.handshakes(port);
  }

  handshakes(port: number): boolean {
    // A main server with SSLEngine on makes every port a TLS port.
    for (const t of this.setup.servers.values()) if (!t.s.isVirtual) return true;
    return this.ports.has(port);
  }

  accept(sock: net.Socket, base: ServerRec, serve: (t: Transport, init: (c: ConnRec) => void) => void): boolean {
    const first = this.setup.servers.get(base);
    if (first === undefined) return false;
    sock.setTimeout(base.timeout * 1000, () => sock.destroy());
    sock.once('data', (chunk: Buffer) => {
      sock.pause();
      sock.unshift(chunk);
      // A TLS record starts with 0x16 (handshake); an SSLv2-style hello with the high bit.
      if (!tlsRecord(chunk)) {
        sock.setTimeout(0);
        this.plainHttp(base, sock);
        // What the client sent is dropped for the request made up in its place.
        sock.read();
        sock.unshift(FAKE_REQUEST);
        serve(sock, (c) => this.setup.attach(c, new SslConn(null, base, undefined, first.cert, false)));
        sock.resume();
        return;
      }
      const candidates = this.setup.candidates(normIp(sock.localAddress ?? ''), sock.localPort ?? 0);
      this.afterHello(sock, base, first, chunk, parseClientHello(chunk), candidates, serve);
    });
    return true;
  }

  /**
   * An accepted connection as accept.ts's TcpStream: its first bytes are read here; a TLS 1.3
   * handshake the plan allows runs on the stream's handle (handshakeDirect), any other is
   * handed to a net.Socket made on the handle (accept.ts's socketFromStream) and goes the
   * TLSSocket way, as accept() above.
   */
  acceptStream(t: TcpStream, base: ServerRec, serve: (t: Transport, init: (c: ConnRec) => void) => void): boolean {
    const first = this.setup.servers.get(base);
    if (first === undefined) return false;
    // The handshake's time limit (net.Socket's setTimeout on the other path).
    let timer: NodeJS.Timeout | null = setTimeout(() => t.destroy(), base.timeout * 1000);
    const stopTimer = (): void => { if (timer !== null) { clearTimeout(timer); timer = null; } };
    t.once('close', stopTimer);
    t.setReader((chunk) => {
      t.pause();
      if (!tlsRecord(chunk)) {
        stopTimer();
        this.plainHttp(base, t);
        // What the client sent is dropped for the request made up in its place, read once the
        // connection's record has its state.
        serve(t, (c) => this.setup.attach(c, new SslConn(null, base, undefined, first.cert, false)));
        t.feed(FAKE_REQUEST);
        t.resume();
        return;
      }
      const hello = parseClientHello(chunk);
      const candidates = this.setup.candidates(normIp(t.localAddress ?? ''), t.localPort ?? 0);
      const plan = this.plan(first, candidates);
      if (hello.tls13 && plan.stateless13 && plan.direct && canOpenTlsStream(t)) {
        const local = t.localAddress === undefined ? null : { address: t.localAddress, family: t.localFamily ?? '', port: t.localPort ?? 0 };
        this.handshakeDirect(t, stopTimer, first, local, chunk, serve, hello.pha);
        return;
      }
      stopTimer();
      const sock = socketFromStream(t);
      sock.unshift(chunk);
      sock.setTimeout(base.timeout * 1000, () => sock.destroy());
      this.afterHello(sock, base, first, chunk, hello, candidates, serve);
    });
    return true;
  }

  /** httpd's ssl_io_filter_error for plain HTTP on a TLS port: logged here; the HTTP layer
   *  then reads a request of the layer's making, which the request hooks answer with the 400
   *  page. */
  private plainHttp(base: ServerRec, peer: Peer): void {
    logConn(base, APLOG_INFO, 'AH01996: SSL handshake failed: HTTP spoken on HTTPS port; trying to send HTML error page', peer);
  }

  /** The handshake of a net.Socket whose first bytes (`chunk`, a TLS record, read as `hello`)
   *  are back in its buffer; `candidates`: the hosts of its address. */
  private afterHello(
    sock: net.Socket, base: ServerRec, first: TlsServer, chunk: Buffer, hello: HelloInfo, candidates: readonly ServerRec[],
    serve: (t: Transport, init: (c: ConnRec) => void) => void,
  ): void {
    const plan = this.plan(first, candidates);
    // A TLS 1.3 handshake with stateless tickets neither resumes from the session cache nor
    // stores into it usefully: its sessions travel in the tickets (OpenSSL consults the
    // cache for a TLS 1.3 PSK only when tickets are off), and a TLS 1.3 client resumes by
    // PSK alone, never by session id. Such a handshake skips Node's session events.
    // DIFFERENCE: httpd stores those sessions in SSLSessionCache anyway, where nothing can
    // find them (docs/differences.md).
    const sessions = !(hello.tls13 && plan.stateless13);
    // TLS 1.3 resumption from the session cache: Node asks for the session by the legacy id,
    // the session is found by the PSK identity (see the resumeSession listener).
    // A TLS 1.3 ClientHello without a PSK resumes nothing: OpenSSL does not look its legacy
    // id up (httpd's cache counts no retrieve), so the id is marked to be answered at once.
    let key: string | null = null;
    if (sessions && hello.legacyId !== null && (hello.psk !== null || (hello.tls13 && plan.all13))) {
      key = hello.legacyId.toString('hex');
      this.pskByLegacyId.set(key, hello.psk ?? NO_PSK);
      sock.once('close', () => this.pskByLegacyId.delete(key!));
    }
    if (!sessions && plan.direct && canOpenTlsStream(sock)) {
      const addr = sock.localAddress === undefined ? null : { address: sock.localAddress, family: sock.localFamily ?? '', port: sock.localPort ?? 0 };
      // The ClientHello goes to TLS directly, not through the socket's buffer.
      sock.read();
      this.handshakeDirect(sock, () => sock.setTimeout(0), first, addr, chunk, serve, hello.pha);
      return;
    }
    this.handshake(sock, base, first, candidates, plan.sni, sessions, serve, hello.pha, () => { if (key !== null) this.pskByLegacyId.delete(key); }, !sessions);
  }

  /** The host's own SSLVerifyClient, checked once the handshake is done (Node's verify callback
   *  accepts everything and reports afterwards): httpd's ssl_callback_SSLVerify fails the
   *  handshake for a certificate that does not verify (optional_no_ca excepted) or whose chain
   *  is longer than SSLVerifyDepth. */
  private verifyAtHandshake(tsock: tls.TLSSocket, t: TlsServer, state: SslConn, sock: net.Socket): boolean {
    if (state.clientCert() === null) return true;
    const handle = (tsock as unknown as { _handle?: { verifyError?: () => (Error & { code?: string }) | null } })._handle;
    const err = handle?.verifyError?.() ?? null;
    if (err !== null && !(err.code === 'UNABLE_TO_GET_CRL' && t.crl.noCrlForCertOk)) {
      if (t.verify === 'optional_no_ca') { state.verify = `FAILED:${err.message}`; return true; }
      const f = firstError(err.code ?? '', err.message);
      logConn(t.s, APLOG_ERR, `AH02039: Certificate Verification: Error (${f.n}): ${f.text}`, sock);
      return false;
    }
    const depth = state.chain().length;
    if (depth > t.depth) {
      logConn(t.s, APLOG_ERR, `AH02040: Certificate Verification: Certificate Chain too long (chain has ${depth} certificates, but maximum allowed are only ${t.depth})`, sock);
      return false;
    }
    return true;
  }

  /**
   * The OCSP half of ssl_callback_SSLVerify, once Node's verification is done: each certificate
   * is asked about (ocsp.ts); a failure fails the connection, logged as httpd logs a verify
   * error. Only for hosts that verify client certificates themselves: where a directory asks
   * for them, the request hooks ask the responder (hooks.ts).
   *
   * DIFFERENCE: httpd checks inside the handshake and a TLS 1.2 client gets a fatal alert
   * (certificate_revoked); Node has no asynchronous verify callback, so the handshake completes
   * and the connection is closed before any request is read (a TLS 1.3 client sees the same
   * either way: the failure arrives after its Finished).
   */
  private async ocspAtHandshake(tsock: tls.TLSSocket, t: TlsServer, state: SslConn, sock: net.Socket): Promise<boolean> {
    const o = t.ocsp!;
    const leaf = tsock.getPeerX509Certificate();
    if (leaf === undefined) return true;
    const handle = (tsock as unknown as { _handle?: { verifyError?: () => (Error & { code?: string }) | null } })._handle;
    const err = handle?.verifyError?.() ?? null;
    const log = connLog(t.s, sock);
    const failed = (errnum: number, text: string, cert: crypto.X509Certificate): boolean => {
      if (APLOG_INFO <= levelFor(t.s.logLevel, 'ssl')) log(APLOG_INFO, `AH02276: Certificate Verification: Error (${errnum}): ${text}${certDetails(cert)}`);
      else log(APLOG_ERR, `AH02039: Certificate Verification: Error (${errnum}): ${text}`);
      state.ocspFailure = text;
      return false;
    };
    if (err !== null) {
      // Nothing to ask about a certificate that did not verify; optional_no_ca lets such a
      // certificate through, and OCSP then cannot be done (AH02038).
      if (t.verify !== 'optional_no_ca') return true;
      log(APLOG_ERR, 'AH02038: cannot perform OCSP validation for cert if issuer has not been verified (optional_no_ca configured)');
      return failed(50, 'application verification failure', leaf);
    }
    const chain = [leaf, ...peerChain(tsock)];
    const f = await verifyChain(o, chain, log);
    if (f === null) return true;
    return failed(f.errnum, f.text, chain[f.depth] ?? leaf);
  }

  /**
   * The handshake on Node's TLS binding directly (stream.ts), for a base host the plan allows:
   * the same OpenSSL handshake with the same context, without the TLSSocket and stream
   * objects Node builds around it (the caller asked canOpenTlsStream). `stopTimer` ends the
   * handshake's time limit.
   */
  private handshakeDirect(
    sock: HandleOwner, stopTimer: () => void, first: TlsServer, local: { address: string; family: string; port: number } | null, hello: Buffer,
    serve: (t: Transport, init: (c: ConnRec) => void) => void, pha: boolean,
  ): void {
    const s = first.s;
    let secure = false;
    let stream: TlsStream | null = null;
    stream = openTlsStream(sock, first.context, local, {
      alpn: (protocols) => {
        const t = stream!;
        const p = this.setup.selectProtocol(s, protocols, { protocol: t.getProtocol() ?? '', cipher: t.getCipher()?.name ?? '' });
        // DIFFERENCE: as in handshake() below (docs/differences.md).
        return p ?? (protocols.includes('http/1.1') ? 'http/1.1' : undefined);
      },
      secure: () => {
        const t = stream!;
        stopTimer();
        secure = true;
        const sni = typeof t.servername === 'string' && t.servername !== '' ? t.servername : undefined;
        const state = new SslConn(t as unknown as tls.TLSSocket, s, sni, first.cert, pha);
        if (APLOG_DEBUG <= levelFor(s.logLevel, 'ssl')) {
          const bits = sslVar(state, 'SSL_CIPHER_USEKEYSIZE', false) ?? '0';
          logConn(s, APLOG_DEBUG, `AH02041: Protocol: ${t.getProtocol() ?? ''}, Cipher: ${t.getCipher()?.name ?? ''} (${bits}/${bits} bits)`, sock);
        }
        serve(t, (c) => this.setup.attach(c, state));
      },
      error: (e) => {
        // After the handshake the HTTP connection hears of errors itself (the stream's 'error').
        if (secure) return false;
        const r = reason(e);
        logConn(s, APLOG_INFO, `AH02008: SSL library error 1 in handshake (server ${first.id})`, sock);
        logConn(s, APLOG_INFO, `SSL Library Error: ${r}`, sock);
        return true;
      },
    });
    // Only a TLS 1.3 handshake comes this way: a resumption renews its ticket (tickets.ts).
    withRenewal(true, () => stream!.receive(hello));
  }

  private handshake(
    sock: net.Socket, base: ServerRec, first: TlsServer, candidates: readonly ServerRec[], sni: boolean, sessions: boolean,
    serve: (t: Transport, init: (c: ConnRec) => void) => void, pha: boolean, done: () => void, tls13: boolean,
  ): void {
    let chosen = first;
    // ssl_find_vhost: the name-based virtual host SNI names, among those on this address.
    // Where none of them has TLS settings of its own the base host's context stays, and Node
    // is not asked to call back into JavaScript for the name.
    const SNICallback = !sni ? undefined : (name: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void): void => {
      const host = name.toLowerCase();
      for (const v of candidates) {
        if (!v.matchesName(host)) continue;
        const t = this.setup.servers.get(v);
        if (t !== undefined) {
          chosen = t;
          const hub = this.hubFor(t, sock, sessions);
          if (hub !== undefined) (tsock as HubbedSocket).server = hub;
          if (t !== first) {
            // The chosen host's verification applies from here on (SSL_set_verify in httpd).
            const h = tsock as unknown as { _handle?: { setVerifyMode?: (req: boolean, rej: boolean) => void } };
            h._handle?.setVerifyMode?.(t.requestCert, t.rejectUnauthorized);
          }
          cb(null, t.context);
          return;
        }
        break;
      }
      cb(null, first.context);
    };
    const tsock = new tls.TLSSocket(sock, {
      isServer: true,
      server: this.hubFor(first, sock, sessions),
      secureContext: first.context,
      requestCert: first.requestCert,
      rejectUnauthorized: first.rejectUnauthorized,
      ALPNCallback: ({ protocols }: { servername: string; protocols: string[] }) => {
        const t = tsock as tls.TLSSocket;
        const p = this.setup.selectProtocol(chosen.s, protocols, { protocol: t.getProtocol() ?? '', cipher: t.getCipher()?.name ?? '' });
        // DIFFERENCE: httpd answers http/1.1 when nothing else is chosen; Node's ALPN callback
        // can only name one of the client's protocols, so a client that did not offer it gets
        // no ALPN answer (docs/differences.md).
        return p ?? (protocols.includes('http/1.1') ? 'http/1.1' : undefined);
      },
      SNICallback,
    });
    let secure = false;
    tsock.on('error', (e: Error) => {
      // After the handshake the HTTP connection hears of errors itself.
      if (secure) return;
      const r = reason(e);
      logConn(chosen.s, APLOG_INFO, `AH02008: SSL library error 1 in handshake (server ${chosen.id})`, sock);
      logConn(chosen.s, APLOG_INFO, `SSL Library Error: ${r}`, sock);
      tsock.destroy();
      sock.destroy();
    });
    tsock.once('secure', () => {
      sock.setTimeout(0);
      done();
      const sni = typeof tsock.servername === 'string' && tsock.servername !== '' ? tsock.servername : undefined;
      secure = true;
      const state = new SslConn(tsock, chosen.s, sni, chosen.cert, pha);
      state.certRevealed = chosen.verify !== 'none';
      if (chosen.verify !== 'none' && !this.verifyAtHandshake(tsock, chosen, state, sock)) {
        tsock.destroy();
        return;
      }
      const t = chosen;
      const go = (): void => {
        if (APLOG_DEBUG <= levelFor(t.s.logLevel, 'ssl')) {
          const bits = sslVar(state, 'SSL_CIPHER_USEKEYSIZE', false) ?? '0';
          logConn(t.s, APLOG_DEBUG, `AH02041: Protocol: ${tsock.getProtocol() ?? ''}, Cipher: ${tsock.getCipher().name} (${bits}/${bits} bits)`, sock);
        }
        serve(tsock as unknown as Transport, (c) => this.setup.attach(c, state));
      };
      // A host whose directories alone ask for certificates: the request hooks ask the
      // responder when a directory wants the certificate (httpd's renegotiation).
      if (t.ocsp === null || t.verify === 'none' || tsock.getPeerX509Certificate() === undefined) { go(); return; }
      // SSLOCSPEnable: the responder is asked before the first request is read.
      this.ocspAtHandshake(tsock, t, state, sock).then((ok) => {
        if (ok) go();
        else tsock.destroy();
      }, () => tsock.destroy());
    });
    // The ClientHello waiting in the socket goes to TLS now, every listener being in place,
    // rather than on TLSSocket's next tick: a TLS 1.3 resumption (every host of the address
    // with TLS 1.3 and tickets: `tls13`) then renews its ticket (tickets.ts).
    const hello = sock.read() as Buffer | null;
    if (hello !== null) {
      const h = (tsock as unknown as { _handle: { receive(b: Buffer): void } | null })._handle;
      if (h !== null) withRenewal(tls13, () => h.receive(hello));
    }
  }
}
