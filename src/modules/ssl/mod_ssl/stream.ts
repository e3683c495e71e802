// A TLS connection on Node's TLS binding, without tls.TLSSocket (used by layer.ts where a
// handshake needs none of TLSSocket's JavaScript: no SNI choice, no client certificate, no
// OCSP stapling, no session cache events).
//
// A TLSSocket is a net.Socket (a Duplex stream with its states, event emitter and timers)
// around Node's C++ TLSWrap, itself on the accepted TCP handle; for a connection that makes one
// handshake and one request, building and tearing down those objects cost about as much CPU
// as plume's whole request, and they are most of what such a connection leaves to the
// garbage collector. Here the TLSWrap is made on the accepted socket's handle as TLSSocket
// makes it (the same context, so the same OpenSSL handshake, tickets and records) and driven
// as a TcpStream (tcp-stream.ts: reads into the process's shared buffer, writes with
// backpressure, half-close, close) with the calls TLSSocket's own code makes on it; the
// handshake callbacks are TLSSocket's for a server without session or certificate events.
// The queries mod_ssl makes of a connection (protocol, cipher, certificates, session) are
// TLSSocket's, answered by the same TLSWrap methods.
//
// The binding is Node's internal tls_wrap (reached through process.binding, as tcp-stream.ts
// reaches stream_wrap); where it is not as expected, openTlsStream returns null and layer.ts
// makes a TLSSocket as before.

import * as crypto from 'node:crypto';
import type * as net from 'node:net';
import type * as tls from 'node:tls';
import { TcpStream, sharedReadBuffer, streamWrap, isTcpHandle, type StreamHandle, type Address } from '../../../server/http/tcp-stream.js';

/** Node's TLSWrap: a stream handle with OpenSSL's connection calls (src/crypto/crypto_tls.cc). */
interface TlsWrap extends StreamHandle {
  _parent: object;
  _parentWrap: HandleOwner;
  _secureContext: tls.SecureContext;
  onhandshakestart: (now: number) => void;
  onhandshakedone: () => void;
  onclienthello: (hello: unknown) => void;
  oncertcb: (info: unknown) => void;
  onnewsession: (id: Buffer, session: Buffer) => void;
  onkeylog: (line: Buffer) => void;
  onerror: (err: Error) => void;
  ALPNCallback: (protocols: Buffer) => number | undefined;
  enableALPNCb(): void;
  endParser(): void;
  certCbDone(): void;
  newSessionDone(): void;
  receive(data: Buffer): void;
  destroySSL(): void;
  getServername(): string | false;
  getALPNNegotiatedProtocol(): string | false;
  getProtocol(): string | null;
  getCipher(): tls.CipherNameAndProtocol;
  /** Node's native certificate handles (TLSSocket wraps them in crypto.X509Certificate). */
  getPeerX509Certificate(): NativeX509 | undefined;
  getX509Certificate(): NativeX509 | undefined;
  getSession(): Buffer | undefined;
  isSessionReused(): boolean;
  verifyError(): Error | null;
}

interface NativeX509 {
  raw(): Buffer;
}

/** A certificate as TLSSocket hands it out. */
function x509(h: NativeX509 | undefined): crypto.X509Certificate | undefined {
  return h === undefined ? undefined : new crypto.X509Certificate(h.raw());
}

interface TlsWrapBinding {
  wrap(handle: object, context: object, isServer: boolean, hasActiveWrite: boolean): TlsWrap;
}

function loadTlsWrap(): TlsWrapBinding | null {
  if (streamWrap === null) return null;
  try {
    const b = (process as unknown as { binding(name: string): { wrap?: unknown; TLSWrap?: { prototype: Record<string, unknown> } } }).binding('tls_wrap');
    const p = b.TLSWrap?.prototype;
    if (typeof b.wrap !== 'function' || p === undefined) return null;
    for (const m of ['receive', 'destroySSL', 'enableALPNCb', 'getServername', 'getALPNNegotiatedProtocol', 'getProtocol', 'getCipher',
      'getPeerX509Certificate', 'getX509Certificate', 'getSession', 'isSessionReused', 'verifyError', 'useUserBuffer', 'readStart',
      'writeBuffer', 'shutdown', 'close', 'getpeername', 'setNoDelay']) {
      if (typeof p[m] !== 'function') return null;
    }
    return b as TlsWrapBinding;
  } catch {
    return null;
  }
}

const tlsWrap = process.env.PLUME_TLS_SOCKET === '1' ? null : loadTlsWrap();

/** Whether TLS can run on a connection's handle without a TLSSocket (this module's binding
 *  and tcp-stream.ts's are both as expected). */
export const tlsStreams = tlsWrap !== null && streamWrap !== null;

/** Node's limits on client-started renegotiations (tls.CLIENT_RENEG_LIMIT in the window). */
const RENEG_LIMIT = 3;
const RENEG_WINDOW_MS = 600 * 1000;

/** What the layer hears of the handshake. */
export interface TlsStreamEvents {
  /** ALPN: the protocol chosen among the client's (undefined: none). */
  alpn(protocols: string[]): string | undefined;
  /** The handshake is done. */
  secure(): void;
  /** A TLS error: true when the connection is to be closed quietly (before the handshake
   *  completed, the layer has logged it); false: reported as the stream's 'error'. */
  error(e: Error): boolean;
}

/** The connection once TLS runs on it: a TcpStream with TLSSocket's queries. */
export class TlsStream extends TcpStream {
  /** As TLSSocket's: the name the client sent with SNI (false: none), once secure. */
  servername: string | false | null = null;
  /** As TLSSocket's: the protocol ALPN chose (false: none), once secure. */
  alpnProtocol: string | false | null = null;
  readonly encrypted = true;

  constructor(private readonly tw: TlsWrap, local: Address | null, under: TcpStream | null) {
    super(tw, streamWrap!, sharedReadBuffer, local, null);
    // TLSWrap has one write under way at most (net.Socket's Writable queues the others).
    this.serialWrites = true;
    if (under !== null) {
      // The TCP connection below: TCP_NODELAY as it set it (accept.ts), and the peer's address
      // asked of the TCP handle itself (TLSWrap would pass the call on through JavaScript).
      this.noDelay = under.noDelayOn;
      const ip = under.remoteAddress;
      if (ip !== undefined) this.peer = { address: ip, family: under.remoteFamily ?? '', port: under.remotePort ?? 0 };
    }
  }

  /** Feeds bytes read before the stream existed (the ClientHello). */
  receive(data: Buffer): void {
    if (!this.destroyed) this.tw.receive(data);
  }

  // TLSSocket's queries: null once the connection is destroyed, as TLSSocket's are.
  getProtocol(): string | null { return this.destroyed ? null : this.tw.getProtocol(); }
  getCipher(): tls.CipherNameAndProtocol { return (this.destroyed ? null : this.tw.getCipher()) as tls.CipherNameAndProtocol; }
  getPeerX509Certificate(): crypto.X509Certificate | undefined { return this.destroyed ? undefined : x509(this.tw.getPeerX509Certificate()); }
  getX509Certificate(): crypto.X509Certificate | undefined { return this.destroyed ? undefined : x509(this.tw.getX509Certificate()); }
  /** No client certificate is ever asked for on this path (layer.ts): TLSSocket's answer. */
  getPeerCertificate(): object | null { return this.destroyed ? null : {}; }
  getSession(): Buffer | undefined { return this.destroyed ? undefined : this.tw.getSession(); }
  isSessionReused(): boolean { return this.destroyed ? false : this.tw.isSessionReused(); }
  /** TLSSocket's `_handle` as mod_ssl reads it (verifyError). */
  override get _handle(): TlsWrap | null { return this.destroyed ? null : this.tw; }
}

/** What owns the accepted TCP handle TLS is made on: the net.Socket net.Server made, or the
 *  TcpStream accept.ts made (the usual case: no net.Socket is ever built). */
export type HandleOwner = net.Socket | TcpStream;

/** Whether openTlsStream can take this connection over. */
export function canOpenTlsStream(owner: HandleOwner): boolean {
  if (tlsWrap === null || streamWrap === null || owner.destroyed) return false;
  if (owner instanceof TcpStream) return true;
  const h = (owner as unknown as { _handle?: object | null })._handle;
  return h != null && isTcpHandle(h);
}

/**
 * Server-side TLS on the handle `owner` accepted, with `context` (call canOpenTlsStream first;
 * what the owner has buffered is not read: the caller feeds it with receive()). The owner
 * stays the owner of the TCP handle: closing the stream destroys it (so the server counts the
 * connection as usual), and its close frees the TLS state.
 */
export function openTlsStream(owner: HandleOwner, context: tls.SecureContext, local: Address | null, ev: TlsStreamEvents): TlsStream {
  let handle: object;
  if (owner instanceof TcpStream) {
    handle = owner.handOver();
  } else {
    const h = (owner as unknown as { _handle: { readStop(): number; reading?: boolean } })._handle;
    // The net.Socket's reading stops: TLS starts it again for itself (libuv refuses a second
    // start). The handle stays marked as reading, as TLSSocket's does, so that the net.Socket
    // (its read-ahead on the next tick) never starts it.
    h.readStop();
    h.reading = true;
    handle = h;
  }
  const native = (context as unknown as { context: object }).context;
  const tw = tlsWrap!.wrap(handle, native, true, false);
  // As TLSSocket's _wrapHandle: TLSWrap's close (Node's) destroys the net.Socket that owns
  // the handle; its TCP calls (getpeername, setNoDelay...) go to the handle.
  tw._parent = handle;
  tw._parentWrap = owner;
  tw._secureContext = context;
  owner.on('error', () => undefined);
  owner.once('close', () => setImmediate(() => tw.destroySSL()));
  const stream = new TlsStream(tw, local, owner instanceof TcpStream ? owner : null);
  let secure = false;
  let last = 0;
  let handshakes = 0;
  // TLSSocket's server callbacks (lib/_tls_wrap.js) for a socket without session, SNI or
  // OCSP events: those are never enabled here, and answered at once should OpenSSL ask.
  tw.onhandshakestart = (now: number) => {
    const prev = last;
    last = now;
    if (prev === 0) return;
    handshakes = now - prev >= RENEG_WINDOW_MS ? 1 : handshakes + 1;
    if (handshakes > RENEG_LIMIT) fail(new Error('TLS session renegotiation attack detected'));
  };
  tw.onhandshakedone = () => {
    if (secure || stream.destroyed) return;
    secure = true;
    stream.servername = tw.getServername();
    stream.alpnProtocol = tw.getALPNNegotiatedProtocol();
    ev.secure();
  };
  tw.onclienthello = () => tw.endParser();
  tw.oncertcb = () => tw.certCbDone();
  tw.onnewsession = () => tw.newSessionDone();
  tw.onkeylog = () => undefined;
  const fail = (e: Error): void => {
    if (stream.destroyed) return;
    if (ev.error(e)) stream.destroy();
    else stream.destroy(e);
  };
  tw.onerror = fail;
  tw.ALPNCallback = (buf: Buffer): number | undefined => {
    const protocols: string[] = [];
    const offsets: number[] = [];
    for (let at = 0; at < buf.length;) {
      const n = buf[at]!;
      offsets.push(at);
      protocols.push(buf.toString('ascii', at + 1, at + 1 + n));
      at += 1 + n;
    }
    let chosen: string | undefined;
    try {
      chosen = ev.alpn(protocols);
    } catch (e) {
      fail(e instanceof Error ? e : new Error(String(e)));
      return undefined;
    }
    if (chosen === undefined) return undefined;
    const i = protocols.indexOf(chosen);
    return i < 0 ? undefined : offsets[i];
  };
  tw.enableALPNCb();
  return stream;
}
