// mod_ssl's TLS stream on Node's TLS binding (stream.ts), against Node's own TLS client on
// loopback: the handshake, ALPN, the queries mod_ssl makes, a response written in many pieces
// while earlier ones are still under way (TLSWrap takes one write at a time), the half-close,
// and a handshake that fails.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { canOpenTlsStream, openTlsStream, type TlsStream, type TlsStreamEvents } from '../../../src/modules/ssl/mod_ssl/stream.js';

const FIX = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', '..', '..', 'test', 'fixtures', 'tls');
const context = tls.createSecureContext({ cert: fs.readFileSync(path.join(FIX, 'server.crt')), key: fs.readFileSync(path.join(FIX, 'server.key')) });

/** A server handing each connection's socket, after its first bytes, to openTlsStream. */
function server(events: (s: () => TlsStream) => TlsStreamEvents): Promise<{ port: number; close(): void }> {
  return new Promise((resolve) => {
    const srv = net.createServer({ noDelay: true }, (sock) => {
      sock.once('data', (hello: Buffer) => {
        sock.pause();
        assert.ok(canOpenTlsStream(sock));
        let stream: TlsStream | null = null;
        stream = openTlsStream(sock, context, null, events(() => stream!));
        stream.receive(hello);
      });
    });
    srv.listen(0, '127.0.0.1', () => resolve({ port: (srv.address() as net.AddressInfo).port, close: () => srv.close() }));
  });
}

test('a handshake, ALPN, the queries, and a response in 200 writes made at once', async () => {
  const piece = Buffer.alloc(3000, 'x');
  let queried: Record<string, unknown> = {};
  const s = await server((stream) => ({
    alpn: (protocols) => (protocols.includes('http/1.1') ? 'http/1.1' : undefined),
    secure: () => {
      const t = stream();
      queried = {
        protocol: t.getProtocol(), cipher: t.getCipher().name, alpn: t.alpnProtocol, servername: t.servername,
        reused: t.isSessionReused(), cert: t.getX509Certificate()?.subject, peer: t.getPeerX509Certificate(),
      };
      t.on('data', (d: Buffer) => {
        assert.equal(d.toString(), 'hello');
        for (let i = 0; i < 200; i++) t.write(piece);
        t.end();
      });
    },
    error: () => true,
  }));
  try {
    const got = await new Promise<Buffer>((resolve, reject) => {
      const c = tls.connect({ host: '127.0.0.1', port: s.port, servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['h2', 'http/1.1'] });
      const parts: Buffer[] = [];
      c.on('secureConnect', () => { assert.equal(c.alpnProtocol, 'http/1.1'); c.write('hello'); });
      c.on('data', (d: Buffer) => parts.push(d));
      c.on('end', () => { resolve(Buffer.concat(parts)); c.end(); });
      c.on('error', reject);
    });
    assert.equal(got.length, 200 * piece.length);
    assert.ok(got.every((b) => b === 0x78));
    assert.equal(queried.protocol, 'TLSv1.3');
    assert.equal(typeof queried.cipher, 'string');
    assert.equal(queried.alpn, 'http/1.1');
    assert.equal(queried.servername, 'localhost');
    assert.equal(queried.reused, false);
    assert.match(String(queried.cert), /CN=localhost/);
    assert.equal(queried.peer, undefined);
  } finally {
    s.close();
  }
});

test('a handshake that fails is reported before any secure event, and the connection closes', async () => {
  let failed: Error | null = null;
  let secured = false;
  let closed!: () => void;
  const gone = new Promise<void>((r) => { closed = r; });
  const s = await server((stream) => ({
    alpn: () => undefined,
    secure: () => { secured = true; },
    error: (e) => { failed = e; stream().on('close', closed); return true; },
  }));
  try {
    // A TLS 1.2-only client against a context that allows it, offering only a cipher the
    // server lacks: the handshake fails on the server's side.
    const c = tls.connect({ host: '127.0.0.1', port: s.port, rejectUnauthorized: false, maxVersion: 'TLSv1.2', ciphers: 'PSK-AES128-CBC-SHA' });
    c.on('error', () => undefined);
    await gone;
    assert.equal(secured, false);
    assert.ok(failed !== null);
  } finally {
    s.close();
  }
});
