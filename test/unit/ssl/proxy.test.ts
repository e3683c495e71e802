// mod_ssl's client side for mod_proxy (SSLProxy*), against a real TLS server on loopback:
// the defaults check the backend certificate's name and dates (SSLProxyCheckPeerName and
// SSLProxyCheckPeerExpire on, the specification's row) and answer 502 with httpd's log line;
// turning the checks off lets the same backend through; SSLProxyVerify require needs the CA.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { loadMachineCerts, makeProxyProvider, SslProxyError } from '../../../src/modules/ssl/mod_ssl/proxy.js';
import { createServerConfig } from '../../../src/modules/ssl/mod_ssl/config.js';
import { ServerRec } from '../../../src/server/server-rec.js';
import { REPO } from '../../process/process-lib.js';

const FIX = path.join(REPO, 'test/fixtures/tls');
const read = (f: string): Buffer => fs.readFileSync(path.join(FIX, f));

async function backend(cert: string, key: string): Promise<{ port: number; close(): void }> {
  const srv = tls.createServer({ cert: read(cert), key: read(key) }, (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

function socketTo(port: number): Promise<net.Socket> {
  return new Promise((res, rej) => { const s = net.connect({ host: '127.0.0.1', port }, () => res(s)); s.on('error', rej); });
}

function provider(set: (p: ReturnType<typeof createServerConfig>['proxy']) => void) {
  const conf = createServerConfig();
  conf.proxy.engine = true;
  set(conf.proxy);
  const s = new ServerRec(0, false, 'test', 0);
  return { s, p: makeProxyProvider(() => conf.proxy) };
}

test('default checks: a certificate for the backend name passes, another name is a 502 (AH02411)', async () => {
  const b = await backend('server.crt', 'server.key');
  try {
    const { s, p } = provider(() => {});
    const ok = await p.connect(s, await socketTo(b.port), 'localhost');
    assert.ok(ok.encrypted);
    ok.destroy();
    await assert.rejects(p.connect(s, await socketTo(b.port), 'other.example'), (e: unknown) => e instanceof SslProxyError && e.status === 502 && /AH02411: SSL Proxy: Peer certificate does not match for hostname other.example/.test(e.message));
  } finally { b.close(); }
});

test('SSLProxyCheckPeerExpire: an expired backend certificate is a 502 (AH02004) unless turned off', async () => {
  const b = await backend('expired.crt', 'expired.key');
  try {
    const on = provider(() => {});
    await assert.rejects(on.p.connect(on.s, await socketTo(b.port), 'localhost'), /AH02004: SSL Proxy: Peer certificate is expired/);
    const off = provider((c) => { c.checkPeerExpire = false; c.checkPeerName = false; });
    (await off.p.connect(off.s, await socketTo(b.port), 'localhost')).destroy();
  } finally { b.close(); }
});

test('SSLProxyCheckPeerName off, SSLProxyCheckPeerCN on: the CN compared (AH02005)', async () => {
  const b = await backend('server.crt', 'server.key');
  try {
    const { s, p } = provider((c) => { c.checkPeerName = false; c.checkPeerCn = true; });
    await assert.rejects(p.connect(s, await socketTo(b.port), 'a.example'), /AH02005: SSL Proxy: Peer certificate CN mismatch: Certificate CN: localhost Requested hostname: a.example/);
  } finally { b.close(); }
});

test('SSLProxyVerify require: unknown CA fails (AH02003), the CA file makes it pass', async () => {
  const b = await backend('server.crt', 'server.key');
  try {
    const bare = provider((c) => { c.verify = 'require'; });
    await assert.rejects(bare.p.connect(bare.s, await socketTo(b.port), 'localhost'), /AH02003: SSL Proxy connect failed/);
    const withCa = provider((c) => { c.verify = 'require'; c.caFile = path.join(FIX, 'ca.crt'); });
    (await withCa.p.connect(withCa.s, await socketTo(b.port), 'localhost')).destroy();
  } finally { b.close(); }
});

test('SSLProxyVerify optional fails like require; optional_no_ca lets an unknown CA through; SSLProxyVerifyDepth 0 refuses a CA-issued certificate (AH02040)', async () => {
  const b = await backend('server.crt', 'server.key');
  try {
    const optional = provider((c) => { c.verify = 'optional'; });
    await assert.rejects(optional.p.connect(optional.s, await socketTo(b.port), 'localhost'), /AH02003: SSL Proxy connect failed/);
    const noCa = provider((c) => { c.verify = 'optional_no_ca'; });
    (await noCa.p.connect(noCa.s, await socketTo(b.port), 'localhost')).destroy();
    const shallow = provider((c) => { c.verify = 'require'; c.caFile = path.join(FIX, 'ca.crt'); c.verifyDepth = 0; });
    await assert.rejects(shallow.p.connect(shallow.s, await socketTo(b.port), 'localhost'), /AH02040: Certificate Verification: Certificate Chain too long \(chain has 1 certificates, but maximum allowed are only 0\)/);
    const deep = provider((c) => { c.verify = 'require'; c.caFile = path.join(FIX, 'ca.crt'); c.verifyDepth = 1; });
    (await deep.p.connect(deep.s, await socketTo(b.port), 'localhost')).destroy();
  } finally { b.close(); }
});

/** A backend that asks for a client certificate in the handshake and answers with the
 *  protocol and the CN of the certificate it got. */
async function certBackend(): Promise<{ port: number; close(): void }> {
  const srv = tls.createServer({ cert: read('server.crt'), key: read('server.key'), ca: read('ca.crt'), requestCert: true, rejectUnauthorized: false }, (s) => {
    s.once('data', () => { s.end(`${s.getProtocol()} ${s.getPeerCertificate().subject?.CN?.toString() ?? '-'}`); });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

function answer(t: tls.TLSSocket): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    t.setEncoding('latin1');
    t.on('data', (d: string) => { got += d; });
    t.on('end', () => { t.destroy(); resolve(got); });
    t.write('GET / HTTP/1.1\r\n\r\n');
  });
}

test('SSLProxyMachineCertificateFile: the client certificate is sent, over TLS 1.2 unless TLS 1.3 is the only protocol allowed', async () => {
  const b = await certBackend();
  try {
    const { s, p } = provider((c) => { c.machineCertFile = path.join(FIX, 'client.pem'); });
    assert.equal(await answer(await p.connect(s, await socketTo(b.port), 'localhost')), 'TLSv1.2 client_ok');
    // Without a machine certificate TLS 1.3 stays on.
    const bare = provider(() => {});
    assert.equal(await answer(await bare.p.connect(bare.s, await socketTo(b.port), 'localhost')), 'TLSv1.3 -');
    const only13 = provider((c) => { c.machineCertFile = path.join(FIX, 'client.pem'); c.protocol = 8; });
    assert.equal(await answer(await only13.p.connect(only13.s, await socketTo(b.port), 'localhost')), 'TLSv1.3 client_ok');
  } finally { b.close(); }
});

test('SSLProxyMachineCertificateFile/Path: the file first, then the directory in name order; lone certificates are issuers; bad keys are startup errors', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-machine-'));
  try {
    fs.writeFileSync(path.join(dir, 'a-stranger.pem'), Buffer.concat([read('stranger.crt'), read('stranger.key')]));
    fs.writeFileSync(path.join(dir, 'b-ca.pem'), read('ca.crt'));
    const m = loadMachineCerts(path.join(FIX, 'client.pem'), dir);
    assert.ok(!('message' in m));
    assert.deepEqual(m.certs.map((c) => /CN=([^\n]*)/.exec(c.x509.subject)?.[1]), ['client_ok', 'stranger']);
    assert.equal(m.issuers.length, 1);
    fs.writeFileSync(path.join(dir, 'c-mismatch.pem'), Buffer.concat([read('client.crt'), read('stray.key')]));
    const bad = loadMachineCerts(undefined, dir);
    assert.ok('message' in bad && bad.message === 'AH02326: proxy client certificate and private key do not match' && bad.cert !== undefined);
    fs.rmSync(path.join(dir, 'c-mismatch.pem'));
    fs.writeFileSync(path.join(dir, 'd-enc.pem'), Buffer.concat([read('server.crt'), read('server-enc.key')]));
    const enc = loadMachineCerts(undefined, dir);
    assert.ok('message' in enc && enc.message.startsWith('AH02252: incomplete client cert configured for SSL proxy'));
  } finally { fs.rmSync(dir, { recursive: true, force: true }); }
});
