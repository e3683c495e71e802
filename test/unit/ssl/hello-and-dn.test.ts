// mod_ssl's readers: the ClientHello fields the layer needs before TLS takes the socket
// (post-handshake authentication offered, legacy session id, PSK identity, TLS 1.3 offered), on real
// ClientHellos from Node's client, and fuzzed; the DN formats of 2.4 and 2.2.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { parseClientHello } from '../../../src/modules/ssl/mod_ssl/layer.js';
import { formatDn } from '../../../src/modules/ssl/mod_ssl/vars.js';

async function captureHello(opts: tls.ConnectionOptions): Promise<Buffer> {
  return new Promise((resolve) => {
    const srv = net.createServer((s) => s.once('data', (d: Buffer) => { resolve(d); s.destroy(); srv.close(); }));
    srv.listen(0, '127.0.0.1', () => {
      const c = tls.connect({ ...opts, host: '127.0.0.1', port: (srv.address() as net.AddressInfo).port, rejectUnauthorized: false });
      c.on('error', () => {});
    });
  });
}

test('a TLS 1.3 ClientHello: a legacy session id, no PHA from Node, no PSK without a session', async () => {
  const h = parseClientHello(await captureHello({ maxVersion: 'TLSv1.3' }));
  assert.equal(h.pha, false);
  assert.equal(h.legacyId?.length, 32);
  assert.equal(h.psk, null);
  assert.equal(h.tls13, true);
});

test('a ClientHello that stops at TLS 1.2 does not offer TLS 1.3', async () => {
  const h = parseClientHello(await captureHello({ maxVersion: 'TLSv1.2' }));
  assert.equal(h.tls13, false);
});

test('plain HTTP and cut-short hellos read as nothing', () => {
  assert.deepEqual(parseClientHello(Buffer.from('GET / HTTP/1.1\r\n\r\n')), { pha: false, legacyId: null, psk: null, tls13: false });
  let seed = 3;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.alloc(rnd(300));
    for (let j = 0; j < b.length; j++) b[j] = rnd(256);
    if (b.length > 5) { b[0] = 0x16; b[5] = 0x01; }
    const h = parseClientHello(b);
    assert.ok(h.psk === null || h.psk.length <= 512);
  }
});

test('DN: RFC 2253 (2.4) and the 2.2 one-line form', () => {
  const node = 'C=US\nST=California\nO=ASF\nOU=httpd-test\nCN=client\\, ok\nemailAddress=alice@example.com';
  assert.equal(formatDn(node, false), 'emailAddress=alice@example.com,CN=client\\, ok,OU=httpd-test,O=ASF,ST=California,C=US');
  assert.equal(formatDn(node, true), '/C=US/ST=California/O=ASF/OU=httpd-test/CN=client, ok/emailAddress=alice@example.com');
});
