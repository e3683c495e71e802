// Accepting connections whose reads land in one buffer.
//
// A net.Socket made the usual way reads into a fresh 64 KB allocation per read and pushes the
// bytes through its Readable stream; with hundreds of connections the C heap is left
// fragmented by those allocations long after the load stops (the resident set grew by tens of
// megabytes per worker and stayed). Here every accepted connection reads into one
// process-wide buffer, and the connection gets an exact copy of what was read (small copies
// come from Node's buffer pool). A connection is a TcpStream driven on the accepted handle
// (tcp-stream.ts: no net.Socket is built per connection); where Node's internals are not as
// that expects, a net.Socket with its `onread` option, which reads into a caller-given buffer.
// The accept itself does what net.Server's does.
//
// Node's net.Server has no option for the sockets it accepts, so the listening handle's
// connection callback is replaced (`server._handle.onconnection`); where that is not there,
// the server accepts as usual and the connection reads 'data' events.

import * as net from 'node:net';
import * as util from 'node:util';
import { TcpStream, isTcpHandle, sharedReadBuffer, streamWrap, type Transport } from './tcp-stream.js';

/** Where every accepted socket reads (only one read runs at a time in a process); the proxy's
 *  backend connections read there too. */
const READ_BUFFER = sharedReadBuffer;

/** The reader of a socket accepted here, and what arrived before it was attached. */
const kReader = Symbol('plume.reader');
const kPending = Symbol('plume.pending');

type Reader = (data: Buffer) => void;

interface SharedReadSocket extends net.Socket {
  [kReader]: Reader | null;
  [kPending]: Buffer[] | null;
}

/** The parts of net.Server's listening handle the accept uses. */
interface ListenHandle {
  onconnection: (err: number, client: object | undefined) => void;
}
interface ServerInternals {
  _handle: ListenHandle | null;
  _connections: number;
  _emitCloseIfDrained?: () => void;
  noDelay?: boolean;
  allowHalfOpen?: boolean;
}

function onRead(this: SharedReadSocket, nread: number, buf: Buffer): void {
  const data = Buffer.allocUnsafe(nread);
  buf.copy(data, 0, 0, nread);
  const reader = this[kReader];
  if (reader !== null) reader(data);
  else (this[kPending] ??= []).push(data);
}

/**
 * From now on `srv` accepts into sockets that read into the shared buffer and hands them to
 * `onConnection` (as its 'connection' event did). Call once the server listens; false when
 * the server's internals are not as expected (it then goes on accepting the usual way).
 */
export function acceptSharedReads(srv: net.Server, onConnection: (sock: Transport) => void): boolean {
  const inner = srv as unknown as ServerInternals;
  const handle = inner._handle;
  if (handle === null || typeof handle.onconnection !== 'function') return false;
  // A listener bound to one address knows every connection's local end: net.Socket's
  // localAddress/localPort then need no getsockname() per connection.
  const bound = srv.address();
  const local = bound !== null && typeof bound === 'object' && bound.address !== '0.0.0.0' && bound.address !== '::'
    ? { address: bound.address, family: bound.family, port: bound.port }
    : null;
  handle.onconnection = (err, client) => {
    if (err !== 0 || client === undefined) {
      const e = new Error(`accept ${util.getSystemErrorName(err)}`) as NodeJS.ErrnoException;
      e.errno = err;
      e.code = util.getSystemErrorName(err);
      e.syscall = 'accept';
      srv.emit('error', e);
      return;
    }
    if (streamWrap !== null && isTcpHandle(client)) {
      // The usual case: the connection is driven on its handle (tcp-stream.ts).
      const stream = new TcpStream(client, streamWrap, READ_BUFFER, local === null ? null : { ...local }, inner);
      stream.allowHalfOpen = inner.allowHalfOpen === true;
      if (inner.noDelay === true) stream.setNoDelay(true);
      onConnection(stream);
      return;
    }
    const sock = new net.Socket({
      handle: client,
      allowHalfOpen: inner.allowHalfOpen === true,
      readable: true,
      writable: true,
      onread: { buffer: READ_BUFFER, callback: onRead },
    } as net.SocketConstructorOpts) as SharedReadSocket;
    sock[kReader] = null;
    sock[kPending] = null;
    if (local !== null) (sock as unknown as { _sockname: object })._sockname = { ...local };
    // Through the socket, which remembers it (a later setNoDelay(true) makes no system call).
    if (inner.noDelay === true) sock.setNoDelay(true);
    // As net.Server counts them: close() waits for these connections as for its own.
    inner._connections++;
    const owned = sock as unknown as { server: net.Server; _server: net.Server };
    owned.server = srv;
    owned._server = srv;
    onConnection(sock);
  };
  return true;
}

/**
 * A net.Socket on the handle of `stream` (accepted above), for a layer whose work needs one
 * after it read the connection's first bytes as a TcpStream (mod_ssl's TLSSocket): the socket
 * is made paused (what the layer read it puts back with unshift()) and reads into the shared
 * buffer; the stream stays in the server's count and closes with the socket.
 */
export function socketFromStream(stream: TcpStream): net.Socket {
  const local = stream.localAddress === undefined ? null : { address: stream.localAddress, family: stream.localFamily ?? '', port: stream.localPort ?? 0 };
  const sock = new net.Socket({
    handle: stream.handOver(),
    allowHalfOpen: stream.allowHalfOpen,
    readable: true,
    writable: true,
    // net.Socket's own option (not in its types): the handle is not read until the socket is.
    pauseOnCreate: true,
    onread: { buffer: READ_BUFFER, callback: onRead },
  } as net.SocketConstructorOpts) as SharedReadSocket;
  sock[kReader] = null;
  sock[kPending] = null;
  if (local !== null) (sock as unknown as { _sockname: object })._sockname = local;
  stream.adopt(sock);
  return sock;
}

/**
 * Gives `reader` the bytes `sock` reads, in order (those read before now first). False for a
 * socket not accepted by acceptSharedReads: read its 'data' events instead.
 */
export function readShared(sock: Transport, reader: Reader): boolean {
  if (sock instanceof TcpStream) {
    sock.setReader(reader);
    return true;
  }
  const s = sock as SharedReadSocket;
  if (!(kReader in s)) return false;
  s[kReader] = reader;
  const pending = s[kPending];
  if (pending !== null) {
    s[kPending] = null;
    for (const d of pending) reader(d);
  }
  // Flowing, so that the stream reports the end of input ('end') as it would with 'data'.
  if (s.readableFlowing === null) s.resume();
  return true;
}
