// TLS below HTTP (mod_ssl's pre_connection hook and its I/O filters, ssl_engine_io.c): a
// connection whose base server has SSLEngine on is handed to Node's TLS on the accepted
// socket, with the base server's context; SNI picks a name-based virtual host's context
// during the handshake (ssl_callback_ServerNameIndication / ssl_find_vhost); sessions go to
// and come from SSLSessionCache's small-object cache, so that a session made in one worker
// (or, with memcache/redis, on another machine) resumes here. Once the handshake is done the
// TLS socket is what the HTTP connection reads and writes: every module's hooks run
// unchanged. The first bytes decide whether this is TLS at all: plain HTTP on the TLS port
// is served as HTTP so that the request hooks can answer it with httpd's 400 page.

import type * as net from 'node:net';
import * as tls from 'node:tls';
import type { ServerRec } from '../../../server/server-rec.js';
import type { ConnRec } from '../../../server/request/request.js';
import type { Transport } from '../../../server/http/tcp-stream.js';
import type { ConnectionLayer } from '../../../server/http/connection-layer.js';
import type { SocacheInstance } from '../../../server/socache.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, levelFor } from '../../../server/log/levels.js';
import type { TlsServer } from './contexts.js';
import { SslConn, sslVar } from './vars.js';

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
}

function logConn(s: ServerRec, level: number, message: string, sock: net.Socket): void {
  if (level > levelFor(s.logLevel, 'ssl')) return;
  s.errorLog.write({ module: 'ssl', level, message, client: { ip: normIp(sock.remoteAddress ?? ''), port: sock.remotePort ?? 0 } });
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
}

/** Reads a ClientHello (the first bytes of the connection); what it cannot read is absent. */
export function parseClientHello(b: Buffer): HelloInfo {
  let pha = false;
  let legacyId: Buffer | null = null;
  let psk: Buffer | null = null;
  try {
    // Record header (5), handshake header (4), version (2), random (32).
    if (b.length < 5 + 4 + 34 || b[0] !== 0x16 || b[5] !== 0x01) return { pha, legacyId, psk };
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
      if (type === 41 && at + 6 <= end) {
        const n = b.readUInt16BE(at + 6);
        if (n > 0 && n <= 512 && at + 8 + n <= end) psk = Buffer.from(b.subarray(at + 8, at + 8 + n));
      }
      at += 4 + len;
    }
  } catch { /* a ClientHello cut short: what was read */ }
  return { pha, legacyId, psk };
}

export class TlsLayer implements ConnectionLayer {
  /** The tls.Server that carries the session cache events (it never listens). */
  private readonly sessions = new tls.Server();
  private readonly ports = new Set<number>();
  /** PSK identities of TLS 1.3 ClientHellos being handshaken, by their legacy session id. */
  private readonly pskByLegacyId = new Map<string, Buffer>();

  constructor(private readonly setup: LayerSetup) {
    for (const t of setup.servers.values()) {
      for (const a of t.s.addrs) if (a.port !== 0) this.ports.add(a.port);
      if (t.s.port !== 0) this.ports.add(t.s.port);
    }
    this.sessions.on('newSession', (id: Buffer, data: Buffer, done: () => void) => {
      const cache = setup.cache();
      if (cache === null) { done(); return; }
      cache.store(id, Date.now() + setup.sessionTimeoutMs, data).then(() => done(), () => done());
    });
    this.sessions.on('resumeSession', (id: Buffer, cb: (err: Error | null, data: Buffer | null) => void) => {
      const cache = setup.cache();
      if (cache === null) { cb(null, null); return; }
      cache.retrieve(this.pskByLegacyId.get(id.toString('hex')) ?? id).then((d) => cb(null, d), () => cb(null, null));
    });
  }

  wantsSocket(port: number): boolean {
    // A main server with SSLEngine on makes every port a TLS port.
    for (const t of this.setup.servers.values()) if (!t.s.isVirtual) return true;
    return this.ports.has(port);
  }

  accept(sock: net.Socket, base: ServerRec, serve: (t: Transport, init: (c: ConnRec) => void) => void): boolean {
    const first = this.setup.servers.get(base);
    if (first === undefined) return false;
    const timeoutMs = base.timeout * 1000;
    sock.setTimeout(timeoutMs, () => sock.destroy());
    sock.once('data', (chunk: Buffer) => {
      sock.pause();
      sock.unshift(chunk);
      // A TLS record starts with 0x16 (handshake); an SSLv2-style hello with the high bit.
      if (chunk[0] !== 0x16 && (chunk[0]! & 0x80) === 0) {
        sock.setTimeout(0);
        logConn(base, APLOG_INFO, 'AH01996: SSL handshake failed: HTTP spoken on HTTPS port; trying to send HTML error page', sock);
        // As httpd's ssl_io_filter_error: what the client sent is dropped and the HTTP layer
        // reads a request of its own making, which the request hooks answer with the 400 page.
        sock.read();
        sock.unshift(FAKE_REQUEST);
        const state = new SslConn(null, base, undefined, first.cert, false);
        serve(sock, (c) => this.setup.attach(c, state));
        sock.resume();
        return;
      }
      const hello = parseClientHello(chunk);
      // TLS 1.3 resumption from the session cache: Node asks for the session by the legacy id,
      // the session is found by the PSK identity (see the resumeSession listener).
      let key: string | null = null;
      if (hello.psk !== null && hello.legacyId !== null) {
        key = hello.legacyId.toString('hex');
        this.pskByLegacyId.set(key, hello.psk);
        sock.once('close', () => this.pskByLegacyId.delete(key!));
      }
      this.handshake(sock, base, first, serve, hello.pha, () => { if (key !== null) this.pskByLegacyId.delete(key); });
    });
    return true;
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
    if (t.ocsp) {
      // DIFFERENCE: plume has no OCSP client: with SSLOCSPEnable a certificate cannot be
      // checked, and is refused (fail-closed).
      logConn(t.s, APLOG_ERR, 'PL02214: SSLOCSPEnable: OCSP checking of client certificates is not available in plume; certificate refused', sock);
      return false;
    }
    const depth = state.chain().length;
    if (depth > t.depth) {
      logConn(t.s, APLOG_ERR, `AH02040: Certificate Verification: Certificate Chain too long (chain has ${depth} certificates, but maximum allowed are only ${t.depth})`, sock);
      return false;
    }
    return true;
  }

  private handshake(sock: net.Socket, base: ServerRec, first: TlsServer, serve: (t: Transport, init: (c: ConnRec) => void) => void, pha: boolean, done: () => void): void {
    let chosen = first;
    const local = normIp(sock.localAddress ?? '');
    const candidates = this.setup.candidates(local, sock.localPort ?? 0);
    const tsock = new tls.TLSSocket(sock, {
      isServer: true,
      server: this.sessions,
      secureContext: first.context,
      requestCert: first.requestCert,
      rejectUnauthorized: first.rejectUnauthorized,
      ALPNProtocols: ['http/1.1'],
      SNICallback: (name: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void) => {
        const host = name.toLowerCase();
        // ssl_find_vhost: the name-based virtual host SNI names, among those on this address.
        for (const v of candidates) {
          if (!v.matchesName(host)) continue;
          const t = this.setup.servers.get(v);
          if (t !== undefined) {
            chosen = t;
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
      },
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
      if (APLOG_DEBUG <= levelFor(chosen.s.logLevel, 'ssl')) {
        const bits = sslVar(state, 'SSL_CIPHER_USEKEYSIZE', false) ?? '0';
        logConn(chosen.s, APLOG_DEBUG, `AH02041: Protocol: ${tsock.getProtocol() ?? ''}, Cipher: ${tsock.getCipher().name} (${bits}/${bits} bits)`, sock);
      }
      serve(tsock as unknown as Transport, (c) => this.setup.attach(c, state));
    });
  }
}
