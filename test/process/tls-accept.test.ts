// How a worker process takes TLS connections (mod_ssl's acceptStream, layer.ts): every
// connection is accepted as a TcpStream (accept.ts) and its first bytes are read there;
//  - a TLS 1.3 handshake the plan allows runs on the connection's handle (stream.ts);
//  - any other (here TLS 1.2) goes to a net.Socket made on the handle (socketFromStream) and
//    Node's TLSSocket;
//  - plain HTTP on the TLS port gets httpd's 400 page;
//  - a client that never sends its hello is closed after Timeout;
//  - a TLS 1.3 resumption renews its ticket as httpd's does (tickets.ts), on either path, and
//    does not with SSLSessionTicketKeyFile.
// Each answer is checked with the access log's protocol, so that the paths are told apart.
// The worker listens on one copy of the TLS port (layersHandshake), on 16 of a plain one.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { makeSite, startPlume, freePort, waitFor, REPO, BODY, type Running } from './process-lib.js';

const FIX = path.join(REPO, 'test/fixtures/tls');

/** GET /index.html on a new TLS connection with at most `maxVersion`: status and body. */
function tlsGet(port: number, maxVersion: tls.SecureVersion, query: string, session?: Buffer): Promise<{ status: number; body: string; protocol: string | null; sessions: Buffer[]; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, maxVersion, session });
    let data = '';
    let protocol: string | null = null;
    let reused = false;
    const sessions: Buffer[] = [];
    s.on('session', (b: Buffer) => { sessions.push(b); });
    s.on('secureConnect', () => {
      protocol = s.getProtocol();
      reused = s.isSessionReused();
      s.write(`GET /index.html?${query} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    });
    s.on('data', (d: Buffer) => { data += d.toString('latin1'); });
    s.on('error', reject);
    s.on('close', () => {
      const m = /^HTTP\/1\.1 (\d+)/.exec(data);
      const head = data.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0, body: head < 0 ? '' : data.slice(head + 4), protocol, sessions, reused });
    });
  });
}

/** Bytes written on a plain TCP connection, and everything the server sends until it closes. */
function rawExchange(port: number, send: string | null): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    s.on('connect', () => { if (send !== null) s.write(send); });
    s.on('data', (d: Buffer) => { text += d.toString('latin1'); });
    s.on('error', reject);
    s.on('close', () => resolve({ text, ms: Date.now() - t0 }));
  });
}

/** How many descriptors of process `pid` are the socket listening on 127.0.0.1:`port`. */
function listeningCopies(pid: number, port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let inode = '';
  for (const line of fs.readFileSync('/proc/net/tcp', 'latin1').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === `0100007F:${hexPort}` && f[3] === '0A') inode = f[9] ?? '';
  }
  assert.notEqual(inode, '', `a socket listening on 127.0.0.1:${port}`);
  let n = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try { if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) n++; } catch { /* closed meanwhile */ }
  }
  return n;
}

test('a worker takes TLS 1.3 on the handle, TLS 1.2 through a TLSSocket, plain HTTP with the 400 page, a silent client after Timeout', { timeout: 60000 }, async () => {
  const tlsPort = await freePort();
  const site = await makeSite('tls-accept');
  fs.mkdirSync(path.join(site.dir, 'tls'));
  for (const f of ['server.crt', 'server.key']) fs.copyFileSync(path.join(FIX, f), path.join(site.dir, 'tls', f));
  site.write([
    'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
    `Listen 127.0.0.1:${tlsPort}`,
    'StartServers 1',
    'LogFormat "%r %{SSL_PROTOCOL}x %>s" tls',
    `<VirtualHost 127.0.0.1:${tlsPort}>`,
    '  ServerName localhost',
    '  Timeout 2',
    '  SSLEngine on',
    '  SSLProtocol all',
    `  SSLCertificateFile ${site.dir}/tls/server.crt`,
    `  SSLCertificateKeyFile ${site.dir}/tls/server.key`,
    `  CustomLog ${site.dir}/logs/tls_log tls`,
    '</VirtualHost>',
  ]);
  let plume: Running | undefined;
  try {
    plume = await startPlume(site, { workers: 1 });
    const log = (): string => { try { return fs.readFileSync(path.join(site.dir, 'logs/tls_log'), 'latin1'); } catch { return ''; } };

    const v13 = await tlsGet(tlsPort, 'TLSv1.3', 'v13');
    assert.equal(v13.protocol, 'TLSv1.3');
    assert.equal(v13.status, 200);
    assert.equal(v13.body, BODY);
    const v12 = await tlsGet(tlsPort, 'TLSv1.2', 'v12');
    assert.equal(v12.protocol, 'TLSv1.2');
    assert.equal(v12.status, 200);
    assert.equal(v12.body, BODY);
    await waitFor('both log lines', () => log().includes('?v13') && log().includes('?v12'));
    assert.match(log(), /^GET \/index\.html\?v13 HTTP\/1\.1 TLSv1\.3 200$/m);
    assert.match(log(), /^GET \/index\.html\?v12 HTTP\/1\.1 TLSv1\.2 200$/m);

    const plain = await rawExchange(tlsPort, 'GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n');
    assert.match(plain.text, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(plain.text, /You're speaking plain HTTP to an SSL-enabled server port/);

    // Nothing sent: the handshake's time limit (Timeout 2) closes the connection.
    const silent = await rawExchange(tlsPort, null);
    assert.equal(silent.text, '');
    assert.ok(silent.ms >= 1500, `closed after ${silent.ms} ms`);

    // The worker still serves, and every connection above was counted off: a graceful stop
    // does not wait for any of them.
    const again = await tlsGet(tlsPort, 'TLSv1.3', 'again');
    assert.equal(again.status, 200);

    // The worker listens on one copy of the TLS port, and on LISTEN_COPIES (16) of the plain
    // one (worker.ts oneCopy): every copy is one more wake-up for each connection.
    const worker = plume.workers()[0]!;
    await waitFor('16 copies of the plain port', () => listeningCopies(worker, site.port) === 16);
    assert.equal(listeningCopies(worker, tlsPort), 1);

    // A full TLS 1.3 handshake hands out two session tickets, and a handshake resumed with one
    // a new one, which resumes in turn (httpd on OpenSSL's own ticket keys: tickets.ts).
    assert.equal(v13.sessions.length, 2);
    const resumed = await tlsGet(tlsPort, 'TLSv1.3', 'resumed', v13.sessions[1]);
    assert.equal(resumed.status, 200);
    assert.ok(resumed.reused, 'the session was resumed');
    assert.equal(resumed.sessions.length, 1);
    const again2 = await tlsGet(tlsPort, 'TLSv1.3', 'resumed2', resumed.sessions[0]);
    assert.ok(again2.reused, 'the renewed ticket resumes');
    assert.equal(again2.sessions.length, 1);
  } finally {
    await plume?.stop();
    site.remove();
  }
});

/** A site with TLS virtual hosts on one port (`hosts` ServerNames, the same certificate);
 *  `extra` goes in each host. */
async function namedHosts(name: string, hosts: readonly string[], extra: readonly string[]): Promise<{ port: number; stop(): Promise<void> }> {
  const tlsPort = await freePort();
  const site = await makeSite(name);
  fs.mkdirSync(path.join(site.dir, 'tls'));
  for (const f of ['server.crt', 'server.key']) fs.copyFileSync(path.join(FIX, f), path.join(site.dir, 'tls', f));
  fs.writeFileSync(path.join(site.dir, 'tls', 'ticket.key'), Buffer.alloc(48, 7));
  site.write([
    'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
    `Listen 127.0.0.1:${tlsPort}`,
    'StartServers 1',
    ...hosts.flatMap((h) => [
      `<VirtualHost 127.0.0.1:${tlsPort}>`,
      `  ServerName ${h}`,
      '  SSLEngine on',
      `  SSLCertificateFile ${site.dir}/tls/server.crt`,
      `  SSLCertificateKeyFile ${site.dir}/tls/server.key`,
      ...extra.map((l) => `  ${l.replace('TLSDIR', `${site.dir}/tls`)}`),
      '</VirtualHost>',
    ]),
  ]);
  let plume: Running | undefined;
  try {
    plume = await startPlume(site, { workers: 1 });
  } catch (e) {
    site.remove();
    throw e;
  }
  return { port: tlsPort, async stop() { await plume?.stop(); site.remove(); } };
}

// Measured on httpd 2.4.71 (openssl s_client chained with -sess_in/-sess_out): a TLS 1.3
// resumption gets a new ticket on OpenSSL's own keys, none with SSLSessionTicketKeyFile.
test('a TLS 1.3 resumption through a TLSSocket (SNI choosing the host) renews its ticket', { timeout: 60000 }, async () => {
  const s = await namedHosts('tls-renew-sni', ['localhost', 'other.example'], []);
  try {
    const full = await tlsGet(s.port, 'TLSv1.3', 'full');
    assert.equal(full.status, 200);
    assert.equal(full.sessions.length, 2);
    const resumed = await tlsGet(s.port, 'TLSv1.3', 'resumed', full.sessions[0]);
    assert.ok(resumed.reused);
    assert.equal(resumed.sessions.length, 1);
  } finally {
    await s.stop();
  }
});

test('with SSLSessionTicketKeyFile a TLS 1.3 resumption gets no new ticket', { timeout: 60000 }, async () => {
  const s = await namedHosts('tls-renew-keyfile', ['localhost'], ['SSLSessionTicketKeyFile TLSDIR/ticket.key']);
  try {
    const full = await tlsGet(s.port, 'TLSv1.3', 'full');
    assert.equal(full.sessions.length, 2);
    const resumed = await tlsGet(s.port, 'TLSv1.3', 'resumed', full.sessions[0]);
    assert.ok(resumed.reused);
    assert.equal(resumed.sessions.length, 0);
  } finally {
    await s.stop();
  }
});
