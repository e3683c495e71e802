// What runs below HTTP on a connection (httpd's pre_connection hook, where mod_ssl puts its
// filters): a module registers a layer in the provider group "connection_layer", and every
// accepted connection passes through it before an HttpConnection reads it. The layer may
// leave the socket as it is, or hand over another transport later (a TLS socket once the
// handshake is done) with state of its own for the connection (httpd's c->conn_config), or
// close it. Every module's request hooks then run unchanged over whatever carried the bytes.

import type * as net from 'node:net';
import { TcpStream, type Transport } from './tcp-stream.js';
import type { ServerRec } from '../server-rec.js';
import type { ConnRec } from '../request/request.js';
import type { Runtime } from '../runtime.js';
import type { ConfigContext } from '../config/context.js';

/** The provider: a layer for one configuration generation, or null when it has nothing to do. */
export interface ConnectionLayerProvider {
  open(ctx: ConfigContext): ConnectionLayer | null;
  /** Its layers take every connection as a TcpStream (acceptStream) and never want a
   *  net.Socket: the single process's listeners, bound before any layer is opened, then
   *  accept TcpStreams (main-server.ts). */
  readonly streams?: boolean;
}

export interface ConnectionLayer {
  /** Whether connections to this local port need a net.Socket (a layer that wraps the socket
   *  cannot run on accept.ts's handle-driven TcpStream). Asked once per listening socket. */
  wantsSocket(port: number): boolean;
  /**
   * An accepted connection whose base server (by address) is `base`. Returns false to leave it
   * alone (plain HTTP); true when the layer took it: it then calls `serve` once with the
   * transport HTTP reads and an initialiser for the connection record, or closes the socket.
   */
  accept(sock: net.Socket, base: ServerRec, serve: (t: Transport, init: (c: ConnRec) => void) => void): boolean;
  /** The same for a connection accepted as a TcpStream (accept.ts: on the ports for which every
   *  layer said wantsSocket false). A layer without it leaves such connections alone. */
  acceptStream?(t: TcpStream, base: ServerRec, serve: (t: Transport, init: (c: ConnRec) => void) => void): boolean;
  /** Whether every connection to this local port begins with a handshake of this layer (a TLS
   *  port): such a connection costs far more than an event-loop turn, so a worker listens on
   *  one copy of the port (worker.ts LISTEN_COPIES). Asked once per listening socket. */
  handshakes?(port: number): boolean;
}

/** httpd's process_connection hook for protocols other than HTTP (mod_echo): a processor
 *  for one configuration generation, or null when no server uses it. */
export interface ConnectionProcessorProvider {
  open(ctx: ConfigContext): ConnectionProcessor | null;
}

export interface ConnectionProcessor {
  /** A connection ready to serve (after the layers: TLS is already below it) whose base
   *  server by address is `base`: true when the processor took it (HTTP then never sees it). */
  process(t: Transport, base: ServerRec, rt: Runtime): boolean;
}

declare module '../module.js' {
  interface ProviderGroups {
    connection_layer: ConnectionLayerProvider;
    process_connection: ConnectionProcessorProvider;
  }
}

/**
 * Runs an accepted socket through the loaded connection layers (mod_ssl's), then `serve`s it:
 * at once for a plain connection, after the handshake for a TLS one. `init` sets up the
 * connection record the layer asked for, once the HTTP connection exists.
 */
export function acceptThroughLayers(rt: Runtime, sock: Transport, serveHttp: (t: Transport, init: ((c: ConnRec) => void) | null) => void): void {
  const processors = rt.connectionProcessors;
  const serve = processors.length === 0 ? serveHttp : (t: Transport, init: ((c: ConnRec) => void) | null): void => {
    const base = baseServer(rt, t);
    for (const p of processors) if (p.process(t, base, rt)) return;
    serveHttp(t, init);
  };
  const layers = rt.connectionLayers;
  if (layers.length > 0) {
    if (sock instanceof TcpStream) {
      let base: ServerRec | undefined;
      for (const l of layers) {
        if (l.acceptStream === undefined) continue;
        base ??= baseServer(rt, sock);
        if (l.acceptStream(sock, base, serve)) return;
      }
    } else if (isNetSocket(sock)) {
      const base = baseServer(rt, sock);
      for (const l of layers) if (l.accept(sock, base, serve)) return;
    }
  }
  serve(sock, null);
}

/** The server a connection's local address names first (httpd's base server for it). */
function baseServer(rt: Runtime, t: Transport): ServerRec {
  const local = t.localAddress ?? '';
  return rt.vhosts.candidates(local.startsWith('::ffff:') ? local.slice(7) : local, t.localPort ?? 0)[0] ?? rt.mainServer;
}

/** Whether any layer wants net.Sockets on this port (accept.ts's shared reads are then off). */
export function layersWantSocket(rt: Runtime, port: number): boolean {
  for (const l of rt.connectionLayers) if (l.wantsSocket(port)) return true;
  return false;
}

/** Whether connections to this port begin with a layer's handshake (ConnectionLayer.handshakes). */
export function layersHandshake(rt: Runtime, port: number): boolean {
  for (const l of rt.connectionLayers) if (l.handshakes?.(port) === true) return true;
  return false;
}

function isNetSocket(t: Transport): t is Transport & net.Socket {
  return typeof (t as Partial<net.Socket>).unshift === 'function' && typeof (t as Partial<net.Socket>).setTimeout === 'function';
}
