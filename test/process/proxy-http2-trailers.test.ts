// mod_proxy_http2 and a backend's HTTP/2 trailers, against a real HTTP/2 server (Node's
// http2, cleartext, prior knowledge) that ends its response with trailers: plume and Apache
// 2.4.71 run the same configuration (mod_http2 with Protocols h2c http/1.1 in front) in the
// same run and are asked the same way. Measured on Apache 2.4.71: an HTTP/2 client gets the
// backend's trailers as the stream's trailers; an HTTP/1.1 client gets the chunked body with
// an empty last chunk (httpd 2.4's chunk filter writes no trailers), an HTTP/1.0 client the
// body alone. A backend response without trailers ends the client's stream without any.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as path from 'node:path';
import { tempDir, removeTempDir } from '../temp.js';
import { freePort, ROOT } from './process-lib.js';
import { startServerCommand, type Started } from './proxy-fcgi-server.js';

const APACHE = '/usr/sbin/apache2';
const haveApache = fs.existsSync(APACHE) && fs.existsSync('/usr/lib/apache2/modules/mod_proxy_http2.so') && fs.existsSync('/usr/lib/apache2/modules/mod_http2.so');

function config(root: string, front: number, backend: number): string {
  const m = (n: string): string => `LoadModule ${n}_module /usr/lib/apache2/modules/mod_${n}.so`;
  fs.mkdirSync(path.join(root, 'logs'), { recursive: true });
  fs.mkdirSync(path.join(root, 'htdocs'), { recursive: true });
  return [
    `ServerRoot "${root}"`,
    `Listen 127.0.0.1:${front}`,
    m('mpm_event'),
    '<IfModule !unixd_module>', `  ${m('unixd')}`, '</IfModule>',
    m('authz_core'), m('proxy'), m('proxy_http2'), m('http2'),
    ...(ROOT ? ['User nobody', 'Group nogroup'] : []),
    'Protocols h2c http/1.1',
    'ServerName localhost',
    `PidFile ${root}/logs/httpd.pid`,
    `ErrorLog ${root}/logs/error_log`,
    'LogLevel warn',
    `DocumentRoot "${root}/htdocs"`,
    'LogFormat "%r %>s [%{X-Trail}^to]" trail',
    `CustomLog ${root}/logs/trail_log trail`,
    `ProxyPass /c/ h2c://127.0.0.1:${backend}/`,
    '',
  ].join('\n');
}

interface H2Answer { status: number; body: string; trailers: Record<string, unknown> | null }

/** One request on a prior-knowledge h2c connection: status, body and the stream's trailers. */
function h2get(port: number, urlPath: string): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const c = http2.connect(`http://127.0.0.1:${port}`);
    c.on('error', reject);
    const q = c.request({ ':path': urlPath });
    let status = 0;
    let body = '';
    let trailers: Record<string, unknown> | null = null;
    q.setEncoding('latin1');
    q.on('response', (h) => { status = Number(h[':status']); });
    q.on('trailers', (t) => { trailers = Object.fromEntries(Object.entries(t)); });
    q.on('data', (d: string) => { body += d; });
    q.on('error', reject);
    q.on('end', () => { c.close(); resolve({ status, body, trailers }); });
  });
}

/** The raw bytes of an HTTP/1.x exchange (the server closes), Date and Server left out and the
 *  fields kept that both servers send alike. */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1', () => c.write(request));
    let d = '';
    c.setEncoding('latin1');
    c.on('data', (x: string) => { d += x; });
    c.on('end', () => {
      const at = d.indexOf('\r\n\r\n');
      const head = d.slice(0, at).split('\r\n').filter((l, i) => i === 0 || /^(content-type|transfer-encoding|content-length):/i.test(l));
      resolve(`${head.join('\r\n')}\r\n\r\n${d.slice(at + 4)}`);
    });
    c.on('error', reject);
  });
}

async function scenario(port: number): Promise<unknown[]> {
  return [
    await h2get(port, '/c/trailers'),
    await h2get(port, '/c/plain'),
    await raw(port, 'GET /c/trailers HTTP/1.1\r\nHost: localhost\r\nTE: trailers\r\nConnection: close\r\n\r\n'),
    await raw(port, 'GET /c/trailers HTTP/1.0\r\nHost: localhost\r\n\r\n'),
  ];
}

test('mod_proxy_http2: a backend\'s HTTP/2 trailers reach an HTTP/2 client as Apache 2.4.71 forwards them', { timeout: 60000 }, async () => {
  const backend = http2.createServer();
  backend.on('stream', (s, h) => {
    if (h[':path'] === '/trailers') {
      s.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers({ 'x-trail': 'done', 'x-checksum': 'abc123' }));
      s.end('body before trailers\n');
      return;
    }
    s.respond({ ':status': 200, 'content-type': 'text/plain' });
    s.end('no trailers here\n');
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', () => r()));
  const bport = (backend.address() as net.AddressInfo).port;
  const roots: string[] = [];
  const started: Started[] = [];
  const run = async (server: string): Promise<number> => {
    const root = tempDir('plume-h2trail-');
    fs.chmodSync(root, 0o755);
    roots.push(root);
    const front = await freePort();
    fs.writeFileSync(path.join(root, 'httpd.conf'), config(root, front, bport));
    started.push(await startServerCommand(server, root, front));
    return front;
  };
  try {
    const mine = await scenario(await run('plume'));
    assert.deepEqual(mine[0], { status: 200, body: 'body before trailers\n', trailers: { 'x-trail': 'done', 'x-checksum': 'abc123' } });
    assert.deepEqual(mine[1], { status: 200, body: 'no trailers here\n', trailers: null });
    assert.equal(mine[2], 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n15\r\nbody before trailers\n\r\n0\r\n\r\n');
    assert.equal(mine[3], 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody before trailers\n');
    // The trailers are the response's (%{X-Trail}^to) whatever the client's protocol.
    const log = fs.readFileSync(path.join(roots[0]!, 'logs/trail_log'), 'latin1');
    assert.match(log, /GET \/c\/trailers HTTP\/2\.0 200 \[done\]/);
    if (!haveApache) return;
    const theirs = await scenario(await run(APACHE));
    assert.deepEqual(mine, theirs);
  } finally {
    for (const s of started) await s.stop();
    await new Promise<void>((r) => backend.close(() => r()));
    for (const r of roots) removeTempDir(r);
  }
});
