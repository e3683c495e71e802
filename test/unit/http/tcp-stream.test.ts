// Connections driven on their TCP handle (src/server/http/tcp-stream.ts) against real client
// sockets on loopback: the bytes arrive whole and in order whatever the kernel's buffer takes
// at once, write() reports backpressure and 'drain' follows, end() half-closes only after the
// queued bytes, the peer's half-close is 'end', a reset is 'error' then 'close', and the
// peer's address is the client's. Outgoing connections (connectStream, the proxy's backends):
// to a TCP server and a unix socket, refused as net.Socket reports it, abandoned before they
// complete, bound to a source address.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { acceptSharedReads } from '../../../src/server/http/accept.js';
import { TcpStream, connectStream, streamWrap, type ConnectTarget, type Transport } from '../../../src/server/http/tcp-stream.js';

async function listen(onConn: (s: TcpStream) => void): Promise<{ srv: net.Server; port: number }> {
  const srv = net.createServer(() => assert.fail('the default accept ran'));
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  acceptSharedReads(srv, (s: Transport) => {
    assert.ok(s instanceof TcpStream, 'the connection is driven on its handle');
    onConn(s);
  });
  return { srv, port: (srv.address() as net.AddressInfo).port };
}

/** Everything the client receives until the server's half-close. */
function readAll(c: net.Socket): Promise<Buffer> {
  const parts: Buffer[] = [];
  c.on('data', (d: Buffer) => parts.push(d));
  return new Promise((res) => c.on('end', () => res(Buffer.concat(parts))));
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('Node\'s stream internals are as TcpStream expects (otherwise every connection is a net.Socket)', () => {
  assert.notEqual(streamWrap, null);
});

test('a write larger than the socket buffer: false, writableNeedDrain, drain; end() after it keeps every byte', async () => {
  const big = Buffer.alloc(8 * 1024 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 13)) & 0xff;
  const seen: string[] = [];
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => { resolveClosed = r; });
  const { srv, port } = await listen((s) => {
    s.on('close', resolveClosed);
    const ok = s.write(big);
    seen.push(`write ${ok} needDrain ${s.writableNeedDrain}`);
    s.on('drain', () => seen.push(`drain needDrain ${s.writableNeedDrain}`));
    s.write('tail', 'latin1');
    s.end();
    s.on('end', () => seen.push('end'));
  });
  const c = net.connect(port, '127.0.0.1');
  c.pause();
  await once(c, 'connect');
  await tick(50); // the kernel's buffers fill; the rest waits in libuv
  const all = readAll(c);
  c.resume();
  const got = await all;
  c.end();
  await closed;
  assert.equal(got.length, big.length + 4);
  assert.ok(got.subarray(0, big.length).equals(big), 'the bytes arrive whole and in order');
  assert.equal(got.subarray(big.length).toString('latin1'), 'tail');
  assert.deepEqual(seen, ['write false needDrain true', 'drain needDrain false', 'end']);
  srv.close();
});

test('strings are written in their encoding', async () => {
  const { srv, port } = await listen((s) => {
    s.write('caf\u00e9 \u2603 ', 'utf8');
    s.write('\u00e9\u00ff', 'latin1');
    s.write(' plain', 'ascii');
    s.write(Buffer.from('!'));
    s.end();
  });
  const c = net.connect(port, '127.0.0.1');
  const got = await readAll(c);
  c.end();
  assert.deepEqual([...got], [...Buffer.from('caf\u00e9 \u2603 ', 'utf8'), 0xe9, 0xff, ...Buffer.from(' plain!')]);
  srv.close();
});

test('with allowHalfOpen the peer\'s half-close is reported and the answer still goes out; then the connection closes', async () => {
  const events: string[] = [];
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => { resolveClosed = r; });
  const { srv, port } = await listen((s) => {
    s.allowHalfOpen = true;
    const parts: Buffer[] = [];
    s.setReader((d) => parts.push(d));
    s.on('end', () => {
      events.push(`end after ${Buffer.concat(parts).toString()}`);
      setTimeout(() => { s.write(`answer to ${Buffer.concat(parts).toString()}`); s.end(); }, 20);
    });
    s.on('close', () => { events.push(`close destroyed=${s.destroyed}`); resolveClosed(); });
  });
  const c = net.connect(port, '127.0.0.1', () => c.end('question'));
  c.on('error', () => undefined);
  const got = await readAll(c);
  await closed;
  assert.equal(got.toString(), 'answer to question');
  assert.deepEqual(events, ['end after question', 'close destroyed=true']);
  srv.close();
});

test('without allowHalfOpen the peer\'s half-close ends the connection (net.Socket\'s default)', async () => {
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => { resolveClosed = r; });
  const { srv, port } = await listen((s) => { s.on('close', resolveClosed); });
  const c = net.connect(port, '127.0.0.1', () => c.end());
  const got = await readAll(c);
  await closed;
  assert.equal(got.length, 0);
  srv.close();
});

test('a reset while bytes are queued: error, then close; later writes are refused', async () => {
  const events: string[] = [];
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => { resolveClosed = r; });
  let stream: TcpStream | undefined;
  const { srv, port } = await listen((s) => {
    stream = s;
    s.on('error', (e) => events.push(`error ${(e as NodeJS.ErrnoException).syscall}`));
    s.on('close', () => { events.push('close'); resolveClosed(); });
    s.write(Buffer.alloc(8 * 1024 * 1024));
  });
  const c = net.connect(port, '127.0.0.1');
  c.pause();
  await once(c, 'connect');
  await tick(50);
  c.resetAndDestroy();
  await closed;
  assert.deepEqual(events.slice(-1), ['close']);
  assert.ok(events.length === 1 || /^error (write|read)$/.test(events[0]!), events.join(','));
  assert.equal(stream!.destroyed, true);
  assert.equal(stream!.write('late'), false);
  srv.close();
});

test('the peer\'s address and port are the client\'s; the local end is the listener\'s', async () => {
  const seen: (string | number | undefined)[][] = [];
  const { srv, port } = await listen((s) => {
    seen.push([s.remoteAddress, s.remotePort, s.remoteFamily, s.localAddress, s.localPort]);
    s.destroy();
  });
  const c = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
  await once(c, 'connect');
  const clientPort = c.localPort;
  await once(c, 'close');
  assert.deepEqual(seen, [['127.0.0.2', clientPort, 'IPv4', '127.0.0.1', port]]);
  srv.close();
});

test('destroy() closes once: one close event, the server\'s count drops, further calls do nothing', async () => {
  let closes = 0;
  let stream: TcpStream | undefined;
  const { srv, port } = await listen((s) => {
    stream = s;
    s.on('close', () => { closes++; });
    s.destroy();
    s.destroy();
    s.end();
  });
  const c = net.connect(port, '127.0.0.1');
  c.on('error', () => undefined);
  await once(c, 'close');
  await tick(30);
  assert.equal(closes, 1);
  assert.equal(stream!.destroyed, true);
  const count = await new Promise<number>((res, rej) => srv.getConnections((e, k) => (e ? rej(e) : res(k))));
  assert.equal(count, 0);
  srv.close();
});

/** connectStream as a promise. */
function connectTo(to: ConnectTarget): Promise<TcpStream> {
  return new Promise((res, rej) => {
    const p = connectStream(to, (e, s) => (e !== null ? rej(e) : res(s!)));
    assert.notEqual(p, null, 'outgoing connections are made on their handle');
  });
}

/** A server answering each connection with "got:" and what it read, once the client half-closes. */
async function echoServer(listen: (srv: net.Server) => void): Promise<net.Server> {
  const srv = net.createServer({ allowHalfOpen: true }, (c) => {
    const parts: Buffer[] = [];
    c.on('data', (d: Buffer) => parts.push(d));
    c.on('end', () => { c.end(`got:${Buffer.concat(parts).toString('latin1')}|from ${c.remoteAddress ?? 'unix'}`); });
    c.on('error', () => undefined);
  });
  listen(srv);
  await once(srv, 'listening');
  return srv;
}

async function exchange(s: TcpStream, text: string): Promise<string> {
  const parts: Buffer[] = [];
  s.on('data', (d) => parts.push(d));
  const closed = new Promise<void>((r) => s.on('close', r));
  assert.equal(s.write(Buffer.from(text, 'latin1')), true);
  s.end();
  await closed;
  return Buffer.concat(parts).toString('latin1');
}

test('connectStream: a TCP server and a unix socket get the bytes; the answer comes back, then the end', async () => {
  const tcp = await echoServer((srv) => srv.listen(0, '127.0.0.1'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-connect-'));
  const sockPath = path.join(dir, 's.sock');
  const unix = await echoServer((srv) => srv.listen(sockPath));
  try {
    const a = await connectTo({ host: '127.0.0.1', port: (tcp.address() as net.AddressInfo).port, family: 4 });
    assert.equal(a.remoteAddress, '127.0.0.1');
    assert.equal(await exchange(a, 'hello'), 'got:hello|from 127.0.0.1');
    const b = await connectTo({ path: sockPath });
    assert.equal(b.remoteAddress, undefined, 'a unix socket has no address');
    b.setNoDelay(true);
    assert.equal(await exchange(b, 'over unix'), 'got:over unix|from unix');
    const c = await connectTo({ host: '127.0.0.1', port: (tcp.address() as net.AddressInfo).port, family: 4, localAddress: '127.0.0.2' });
    assert.equal(await exchange(c, 'bound'), 'got:bound|from 127.0.0.2');
  } finally {
    tcp.close();
    unix.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('connectStream: refused and missing are errors with net.Socket\'s codes, never before it returns; cancel() stops the callback', async () => {
  const probe = net.createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as net.AddressInfo).port;
  probe.close();
  await once(probe, 'close');
  let returned = false;
  const refused = new Promise<NodeJS.ErrnoException>((res) => {
    connectStream({ host: '127.0.0.1', port, family: 4 }, (e) => { assert.ok(returned); res(e!); });
    returned = true;
  });
  const e = await refused;
  assert.equal(e.code, 'ECONNREFUSED');
  assert.equal(e.syscall, 'connect');
  const missing = await connectTo({ path: path.join(os.tmpdir(), `plume-no-such-${process.pid}.sock`) }).then(() => null, (x: NodeJS.ErrnoException) => x);
  assert.equal(missing?.code, 'ENOENT');
  const srv = await echoServer((s) => s.listen(0, '127.0.0.1'));
  let called = false;
  const p = connectStream({ host: '127.0.0.1', port: (srv.address() as net.AddressInfo).port, family: 4 }, () => { called = true; });
  p!.cancel();
  await tick(50);
  assert.equal(called, false);
  srv.close();
});

test('once() and off(): a once listener runs once; a removed one not at all', async () => {
  const { srv, port } = await listen((s) => {
    const seen: string[] = [];
    const gone = (): void => { seen.push('removed ran'); };
    s.once('end', () => seen.push('once'));
    s.on('end', gone);
    s.off('end', gone);
    s.on('end', () => { s.write(seen.join(','), 'latin1'); s.end(); });
  });
  const c = net.connect(port, '127.0.0.1');
  const all = readAll(c);
  await once(c, 'connect');
  c.end();
  assert.equal((await all).toString(), 'once');
  srv.close();
});
