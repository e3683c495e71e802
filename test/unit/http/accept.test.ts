// Sockets accepted into the shared read buffer: each connection gets its own bytes, in order,
// as copies that later reads do not overwrite; bytes that come before the reader is attached
// wait for it; pause() stops the reads and resume() restarts them; the end of input is still
// reported; and the server counts its connections as net.Server does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { once } from 'node:events';
import { acceptSharedReads, readShared } from '../../../src/server/http/accept.js';
import type { Transport } from '../../../src/server/http/tcp-stream.js';

async function listen(onConn: (s: Transport) => void): Promise<{ srv: net.Server; port: number }> {
  const srv = net.createServer(() => assert.fail('the default accept ran'));
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  assert.equal(acceptSharedReads(srv, onConn), true);
  return { srv, port: (srv.address() as net.AddressInfo).port };
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A client connection to the test server, once connected. */
async function dial(port: number): Promise<net.Socket> {
  const c = net.connect(port, '127.0.0.1');
  await once(c, 'connect');
  return c;
}

test('two connections read their own bytes, kept intact after later reads', async () => {
  const got = new Map<number, Buffer[]>();
  let n = 0;
  const { srv, port } = await listen((sock) => {
    const id = n++;
    got.set(id, []);
    assert.equal(readShared(sock, (d) => got.get(id)!.push(d)), true);
    sock.on('end', () => sock.end());
  });
  const a = await dial(port);
  a.write('first connection, first chunk');
  await tick(30);
  const b = await dial(port);
  b.write('second');
  await tick(30);
  a.write('first connection, second chunk');
  await tick(30);
  a.end();
  b.end();
  await Promise.all([once(a, 'close'), once(b, 'close')]);
  assert.equal(Buffer.concat(got.get(0)!).toString(), 'first connection, first chunkfirst connection, second chunk');
  assert.equal(got.get(0)![0]!.toString(), 'first connection, first chunk', 'an early chunk is not overwritten by later reads');
  assert.equal(Buffer.concat(got.get(1)!).toString(), 'second');
  srv.close();
});

test('bytes read before the reader is attached are given to it first; end of input is reported', async () => {
  let resolve!: (v: string) => void;
  const done = new Promise<string>((r) => { resolve = r; });
  const { srv, port } = await listen((sock) => {
    // The reader comes later, as when the configuration is still being read.
    setTimeout(() => {
      const parts: Buffer[] = [];
      readShared(sock, (d) => parts.push(d));
      sock.on('end', () => { resolve(Buffer.concat(parts).toString()); sock.end(); });
    }, 80);
  });
  const c = net.connect(port, '127.0.0.1', () => { c.write('early '); setTimeout(() => c.end('late'), 120); });
  assert.equal(await done, 'early late');
  srv.close();
});

test('pause() stops reading until resume(); the client sees the answer after its half-close', async () => {
  const { srv, port } = await listen((sock) => {
    sock.allowHalfOpen = true;
    const parts: string[] = [];
    readShared(sock, (d) => {
      parts.push(d.toString());
      if (parts.length === 1) {
        sock.pause();
        setTimeout(() => sock.resume(), 100);
      }
    });
    sock.on('end', () => { sock.write(parts.join('|')); sock.end(); });
  });
  const c = await dial(port);
  c.write('one');
  await tick(30);
  c.write('two');
  await tick(20);
  c.end();
  const chunks: Buffer[] = [];
  c.on('data', (d: Buffer) => chunks.push(d));
  await once(c, 'close');
  // 'two' came while paused: it is read after resume, not lost.
  assert.match(Buffer.concat(chunks).toString(), /^one\|?two$/);
  srv.close();
});

test('the server counts accepted connections: close() waits for them, getConnections() sees them', async () => {
  const socks: Transport[] = [];
  const { srv, port } = await listen((sock) => { socks.push(sock); readShared(sock, () => undefined); });
  const c = await dial(port);
  await tick(30);
  const count = await new Promise<number>((res, rej) => srv.getConnections((e, k) => (e ? rej(e) : res(k))));
  assert.equal(count, 1);
  let closed = false;
  srv.close(() => { closed = true; });
  await tick(30);
  assert.equal(closed, false, 'close() waits for the open connection');
  socks[0]!.destroy();
  c.destroy();
  await tick(50);
  assert.equal(closed, true);
});

test('a socket not accepted here is refused by readShared (it reads data events instead)', () => {
  const s = new net.Socket();
  assert.equal(readShared(s, () => undefined), false);
  s.destroy();
});

test('the local end of a connection: the listener address when it is one address, asked of the kernel when a wildcard', async () => {
  for (const host of ['127.0.0.1', '0.0.0.0']) {
    const seen: { address?: string; port?: number; family?: string }[] = [];
    const srv = net.createServer();
    srv.listen(0, host);
    await once(srv, 'listening');
    acceptSharedReads(srv, (sock) => { seen.push({ address: sock.localAddress, port: sock.localPort, family: sock.localFamily }); sock.destroy(); });
    const port = (srv.address() as net.AddressInfo).port;
    // Through the wildcard, a connection to 127.0.0.2 has that local address.
    const to = host === '0.0.0.0' ? '127.0.0.2' : '127.0.0.1';
    const c = net.connect(port, to);
    await once(c, 'close');
    assert.deepEqual(seen, [{ address: to, port, family: 'IPv4' }]);
    srv.close();
  }
});

test('PLUME_NET_SOCKET=1: connections are net.Sockets reading into the shared buffer, with the same bytes', async () => {
  const { spawn } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const acceptJs = fileURLToPath(new URL('../../../src/server/http/accept.js', import.meta.url));
  const script = `
    import * as net from 'node:net';
    import { acceptSharedReads, readShared } from ${JSON.stringify(acceptJs)};
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      acceptSharedReads(srv, (sock) => {
        const parts = [];
        const shared = readShared(sock, (d) => parts.push(d));
        sock.on('end', () => { sock.write(String(sock instanceof net.Socket) + ' ' + shared + ' ' + Buffer.concat(parts)); sock.end(); srv.close(); });
      });
      const c = net.connect(srv.address().port, '127.0.0.1', () => c.end('hello'));
      let out = '';
      c.on('data', (d) => { out += d; });
      c.on('end', () => process.stdout.write(out));
    });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, PLUME_NET_SOCKET: '1' } });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  const [code] = await once(child, 'exit') as [number];
  assert.equal(code, 0);
  assert.equal(out, 'true true hello');
});
