// mod_proxy + mod_proxy_http end to end: bin/plume in front of a bare Node backend on loopback
// (plain answers, a redirect and a cookie to reverse-map, a chunked body, a backend that never
// answers, one that closes mid-body, one that sends a bad status line, a refused port), the
// connection pool reused across requests, and HTTPS backends with a wrong-name and an expired
// certificate made with openssl in a temporary directory (502, the specification's section
// 7.2), accepted once SSLProxyCheckPeerName / SSLProxyCheckPeerExpire are off.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { makeSite, startPlume, freePort, waitFor } from './process-lib.js';

interface Got { status: number; headers: http.IncomingHttpHeaders; body: string }

function get(port: number, p: string, headers: Record<string, string> = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: body + '<aborted>' }));
      res.on('aborted', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: body + '<aborted>' }));
    });
    req.on('error', reject);
  });
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'ignore' });
}

test('reverse proxy to a Node backend, its errors, and HTTPS backends with bad certificates', { timeout: 120000 }, async () => {
  const bport = await freePort();
  const sockets = new Set<string>();
  const seen: http.IncomingHttpHeaders[] = [];
  const backend = http.createServer((req, res) => {
    sockets.add(`${req.socket.remotePort}`);
    seen.push(req.headers);
    const u = req.url ?? '/';
    if (u.startsWith('/hello')) { res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Path': u }); res.end('hello from backend\n'); return; }
    if (u === '/redir') { res.writeHead(302, { Location: `http://127.0.0.1:${bport}/target`, 'Set-Cookie': 'a=1; Path=/; Domain=backend.internal' }); res.end(); return; }
    if (u === '/chunked') { res.writeHead(200, { 'Content-Type': 'text/plain' }); res.write('part1,'); setImmediate(() => { res.write('part2,'); res.end('end'); }); return; }
    if (u === '/post') { let n = 0; req.on('data', (d: Buffer) => { n += d.length; }); req.on('end', () => { res.end(`got ${n} ${req.headers['content-length'] ?? 'chunked'}`); }); return; }
    if (u === '/404') { res.writeHead(404, { 'Content-Type': 'text/plain' }); res.end('backend says no'); return; }
    if (u === '/slow') return; // never answers
    if (u === '/cut') { req.socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this'); req.socket.destroy(); return; }
    if (u === '/bad') { req.socket.write('HTTP/9.9 200 OK\r\n\r\nx'); req.socket.destroy(); return; }
    res.writeHead(500); res.end();
  });
  await new Promise<void>((r) => backend.listen(bport, '127.0.0.1', () => r()));

  // HTTPS backends: a CA, a certificate for "localhost" and an expired one.
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-proxy-tls-'));
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=Test CA'], tmp);
  const leaf = (name: string, cn: string, days: string): void => {
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`], tmp);
    fs.writeFileSync(path.join(tmp, `${name}.ext`), `subjectAltName=DNS:${cn}\n`);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-extfile', `${name}.ext`, ...(days === 'past' ? ['-not_before', '20200101000000Z', '-not_after', '20200102000000Z'] : ['-days', days])], tmp);
  };
  leaf('wrong', 'other.example', '2');
  let expiredOk = true;
  try { leaf('expired', 'localhost', 'past'); } catch { expiredOk = false; }
  const tlsServer = (name: string): Promise<{ server: https.Server; port: number }> => new Promise((resolve) => {
    const server = https.createServer({ key: fs.readFileSync(path.join(tmp, `${name}.key`)), cert: fs.readFileSync(path.join(tmp, `${name}.crt`)) }, (_q, s) => { s.end('tls backend\n'); });
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as net.AddressInfo).port }));
  });
  const wrong = await tlsServer('wrong');
  const expired = expiredOk ? await tlsServer('expired') : undefined;

  const site = await makeSite('proxy');
  const vport = await freePort();
  site.write([
    'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
    'LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so',
    'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
    'ProxyTimeout 2',
    'ProxyVia On',
    `ProxyPass /b/ http://127.0.0.1:${bport}/`,
    `ProxyPassReverse /b/ http://127.0.0.1:${bport}/`,
    'ProxyPassReverseCookieDomain backend.internal front.example',
    'ProxyPass /dead http://127.0.0.1:9/',
    '<Location /eo/>',
    `  ProxyPass http://127.0.0.1:${bport}/`,
    '  ProxyErrorOverride On',
    '</Location>',
    'SSLProxyEngine On',
    `ProxyPass /wrong https://localhost:${wrong.port}/`,
    ...(expired ? [`ProxyPass /expired https://localhost:${expired.port}/`] : []),
    `Listen 127.0.0.1:${vport}`,
    `<VirtualHost 127.0.0.1:${vport}>`,
    '  SSLProxyEngine On',
    '  SSLProxyCheckPeerName Off',
    '  SSLProxyCheckPeerExpire Off',
    `  ProxyPass /wrong https://localhost:${wrong.port}/`,
    ...(expired ? [`  ProxyPass /expired https://localhost:${expired.port}/`] : []),
    '</VirtualHost>',
  ]);
  const run = await startPlume(site);
  try {
    const port = site.port;
    const a = await get(port, '/b/hello?x=1');
    assert.equal(a.status, 200);
    assert.equal(a.body, 'hello from backend\n');
    assert.equal(a.headers['x-path'], '/hello?x=1');
    assert.match(String(a.headers.via), /^1\.1 localhost:\d+$/);
    const h = seen[seen.length - 1]!;
    assert.equal(h['x-forwarded-for'], '127.0.0.1');
    assert.equal(h['x-forwarded-host'], `127.0.0.1:${port}`);
    assert.equal(h['x-forwarded-server'], 'localhost');
    assert.equal(h.host, `127.0.0.1:${bport}`);

    // The pooled connection is reused for the next request of the same worker process.
    const before = sockets.size;
    await get(port, '/b/hello');
    await get(port, '/b/hello');
    assert.ok(sockets.size <= before + 1, 'backend connections are reused');

    const r = await get(port, '/b/redir');
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, `http://127.0.0.1:${port}/b/target`);
    assert.deepEqual(r.headers['set-cookie'], ['a=1; Path=/; Domain=front.example']);

    const c = await get(port, '/b/chunked');
    assert.equal(c.body, 'part1,part2,end');

    const eo = await get(port, '/eo/404');
    assert.equal(eo.status, 404);
    assert.match(eo.body, /<title>404 Not Found<\/title>/);

    const d = await get(port, '/dead');
    assert.equal(d.status, 503);
    const slow = await get(port, '/b/slow');
    assert.equal(slow.status, 502);
    const cut = await get(port, '/b/cut');
    assert.equal(cut.status, 200);
    assert.ok(cut.body.endsWith('<aborted>') || cut.body.length < 100, 'a body cut short is not completed');
    const bad = await get(port, '/b/bad');
    assert.equal(bad.status, 502);

    const w = await get(port, '/wrong');
    assert.equal(w.status, 502);
    if (expired) assert.equal((await get(port, '/expired')).status, 502);
    // With SSLProxyCheckPeerName / SSLProxyCheckPeerExpire off the same backends are served.
    assert.equal((await get(vport, '/wrong')).body, 'tls backend\n');
    if (expired) assert.equal((await get(vport, '/expired')).body, 'tls backend\n');

    await waitFor('the error log lines', () => {
      const log = fs.readFileSync(site.errorLog, 'latin1');
      return log.includes('AH00957: http: attempt to connect to 127.0.0.1:9') && log.includes('AH01114: HTTP: failed to make connection to backend: 127.0.0.1')
        && log.includes('AH01102: error reading status line from remote server 127.0.0.1') && log.includes('AH02411: SSL Proxy: Peer certificate does not match for hostname localhost')
        && log.includes('(70008)Partial results are valid but processing is incomplete: [client 127.0.0.1') && log.includes('AH01110: error reading response') && log.includes('Corrupt status line returned by remote server: HTTP/9.9 200 OK');
    }, 10000);
  } finally {
    await run.stop();
    site.remove();
    backend.close();
    wrong.server.close();
    expired?.server.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }

});
