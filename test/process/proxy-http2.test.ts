// mod_proxy_http2 in front of real HTTP/2 backends started here on loopback: a cleartext one
// (h2c://, prior knowledge) and a TLS one (h2://, ALPN h2, the test CA's certificate checked
// through the vhost's SSLProxy* settings). Every answer — status, the response fields that
// matter, what the backend received (pseudo-headers, fields in order, the body) and the
// error-log lines — is compared with Apache 2.4.71's mod_proxy_http2 running the same
// configuration in the same run (apache2 is installed by .ci/run); the behaviour that does
// not depend on Apache (one shared session, a stream reset mid-body) is asserted directly.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as path from 'node:path';
import type * as net from 'node:net';
import { tempDir, removeTempDir } from '../temp.js';
import { freePort, REPO, ROOT } from './process-lib.js';
import { startServerCommand, type Started } from './proxy-fcgi-server.js';

const TLS = path.join(REPO, 'test/fixtures/tls');
const APACHE = '/usr/sbin/apache2';
const haveApache = fs.existsSync(APACHE) && fs.existsSync('/usr/lib/apache2/modules/mod_proxy_http2.so');

interface Backend { readonly port: number; sessions: number; close(): Promise<void> }

/** What the backend answers: /echo* reports the request, the others exercise the mapping. */
function handler(port: () => number): (s: http2.ServerHttp2Stream, h: http2.IncomingHttpHeaders, flags: number, raw: string[]) => void {
  return (s, h, _flags, raw) => {
    const p = String(h[':path']);
    const chunks: Buffer[] = [];
    s.on('error', () => { /* the resets this backend makes itself */ });
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('end', () => {
      if (p.startsWith('/redir')) {
        s.respond({
          ':status': 302, location: `http://127.0.0.1:${port()}/target`, 'content-location': `http://127.0.0.1:${port()}/cl`,
          'set-cookie': ['a=1; path=/; domain=backend.internal', 'b=2'], 'alt-svc': 'h3=":443"', 'x-dup': ['one', 'two'], 'content-type': 'text/plain',
          // Link's URIs: a relative one, one on the backend's http URL, one elsewhere, parameters quoted and not, a second field.
          link: [`</style.css>; rel=preload; as=style, <http://127.0.0.1:${port()}/next>;rel="next" ;title="a, b", <http://elsewhere.example/x>; rel=alternate`, '</img.png>;rel=preload;nopush'],
        });
        s.end('moved\n');
      } else if (p.startsWith('/trailers')) {
        s.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers({ 'x-trail': 'done', 'location': `http://127.0.0.1:${port()}/after` }));
        s.end('body before trailers\n');
      } else if (p.startsWith('/reset')) {
        s.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      } else if (p.startsWith('/cut')) {
        s.respond({ ':status': 200, 'content-type': 'text/plain' });
        s.write('x'.repeat(1000), () => setImmediate(() => s.destroy(new Error('cut by the test'))));
      } else if (p.startsWith('/big')) {
        s.respond({ ':status': 200, 'content-type': 'application/octet-stream', 'content-length': String(300 * 1024) });
        s.end(Buffer.alloc(300 * 1024, 0x61));
      } else if (p.startsWith('/status/')) {
        s.respond({ ':status': Number(p.slice(8)), 'content-type': 'text/plain' });
        if (!s.writableEnded && !s.destroyed) s.end('status body\n');
      } else {
        const body = Buffer.concat(chunks);
        const fields: string[] = [];
        for (let i = 0; i + 1 < raw.length; i += 2) fields.push(`${raw[i]}: ${raw[i + 1]}`);
        s.respond({ ':status': 200, 'content-type': 'application/json' });
        if (h[':method'] === 'HEAD') return;
        s.end(JSON.stringify({ fields, body: body.length > 200 ? `${body.length} bytes, sum ${body.reduce((a, b) => (a + b) % 65521, 0)}` : body.toString() }));
      }
    });
  };
}

async function startBackend(tls: boolean): Promise<Backend> {
  let port = 0;
  const server = tls
    ? http2.createSecureServer({ key: fs.readFileSync(path.join(TLS, 'server.key')), cert: fs.readFileSync(path.join(TLS, 'server.crt')) })
    : http2.createServer();
  const b: Backend = { port: 0, sessions: 0, close: () => new Promise((res) => { server.close(() => res()); }) };
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s: http2.ServerHttp2Session) => { b.sessions++; sessions.add(s); s.on('close', () => sessions.delete(s)); });
  server.on('stream', handler(() => port));
  b.close = () => new Promise((res) => { for (const s of sessions) s.destroy(); server.close(() => res()); });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  port = (server.address() as net.AddressInfo).port;
  (b as { port: number }).port = port;
  return b;
}

interface Ports { front: number; h2c: number; h2: number; dead: number }

function config(root: string, p: Ports): string {
  const m = (n: string): string => `LoadModule ${n}_module /usr/lib/apache2/modules/mod_${n}.so`;
  fs.mkdirSync(path.join(root, 'logs'), { recursive: true });
  fs.mkdirSync(path.join(root, 'htdocs'), { recursive: true });
  return [
    `ServerRoot "${root}"`,
    `Listen 127.0.0.1:${p.front}`,
    m('mpm_event'),
    '<IfModule !unixd_module>', `  ${m('unixd')}`, '</IfModule>',
    m('authz_core'), m('proxy'), m('proxy_http2'), m('ssl'),
    ...(ROOT ? ['User nobody', 'Group nogroup'] : []),
    'ServerName localhost',
    `PidFile ${root}/logs/httpd.pid`,
    `ErrorLog ${root}/logs/error_log`,
    'LogLevel warn',
    `DocumentRoot "${root}/htdocs"`,
    'ProxyVia On',
    'LogFormat "%r %>s [%{X-Trail}^to] [%{Location}^to]" trail',
    `CustomLog ${root}/logs/trail_log trail`,
    'SSLProxyEngine On',
    `SSLProxyCACertificateFile ${TLS}/ca.crt`,
    `ProxyPass /c/ h2c://127.0.0.1:${p.h2c}/`,
    `ProxyPassReverse /c/ http://127.0.0.1:${p.h2c}/`,
    `ProxyPassReverse /c/ h2c://127.0.0.1:${p.h2c}/`,
    'ProxyPassReverseCookieDomain backend.internal front.example',
    `ProxyPass /s/ h2://localhost:${p.h2}/`,
    `ProxyPass /dead/ h2c://127.0.0.1:${p.dead}/`,
    '<Location /keep/>', '  ProxyPreserveHost On', '</Location>',
    `ProxyPass /keep/ h2c://127.0.0.1:${p.h2c}/`,
    `ProxyPassReverse /keep/ http://127.0.0.1:${p.h2c}/`,
    '<Location /nofwd/>', '  ProxyAddHeaders Off', '</Location>',
    `ProxyPass /nofwd/ h2c://127.0.0.1:${p.h2c}/`,
    '',
  ].join('\n');
}

interface Answer { status: number; headers: [string, string][]; body: string; log: string[] }

const KEPT = ['content-type', 'location', 'content-location', 'set-cookie', 'via', 'x-dup', 'alt-svc', 'content-length', 'link'];

/** One request over HTTP/1.1 and its answer, ports and the ServerRoot normalised. */
async function ask(front: number, p: Ports, root: string, method: string, url: string, opts: { headers?: Record<string, string | string[]>; body?: Buffer } = {}): Promise<Answer> {
  const logFile = path.join(root, 'logs/error_log');
  const size = (): number => (fs.existsSync(logFile) ? fs.statSync(logFile).size : 0);
  const before = size();
  const res = await new Promise<{ status: number; raw: string[]; body: string }>((resolve, reject) => {
    const q = http.request({ host: '127.0.0.1', port: front, method, path: url, headers: opts.headers, agent: false }, (s) => {
      const parts: Buffer[] = [];
      s.on('data', (d: Buffer) => parts.push(d));
      s.on('end', () => resolve({ status: s.statusCode ?? 0, raw: s.rawHeaders, body: Buffer.concat(parts).toString('latin1') }));
      s.on('error', () => resolve({ status: s.statusCode ?? 0, raw: s.rawHeaders, body: Buffer.concat(parts).toString('latin1') + '<aborted>' }));
    });
    q.on('error', reject);
    q.end(opts.body);
  });
  // The request's log lines may follow the response: wait until the log stops growing.
  for (let last = size(), still = 0, n = 0; still < 3 && n < 60; n++) {
    await new Promise((r) => setTimeout(r, 20));
    const now = size();
    still = now === last ? still + 1 : 0;
    last = now;
  }
  const norm = (s: string): string => s.split(root).join('<root>')
    .split(`:${front}`).join(':<front>').split(`:${p.h2c}`).join(':<h2c>').split(`:${p.h2}`).join(':<h2>').split(`:${p.dead}`).join(':<dead>');
  const headers: [string, string][] = [];
  for (const k of KEPT) for (let i = 0; i + 1 < res.raw.length; i += 2) if (res.raw[i]!.toLowerCase() === k) headers.push([k, norm(res.raw[i + 1]!)]);
  const log = fs.readFileSync(logFile).subarray(before).toString('latin1').split('\n').filter((l) => l !== '')
    .map((l) => norm(l.replace(/^\[[^\]]*\] /, '').replace(/\[pid \d+(:tid \d+)?\] /, '').replace(/\[client [^\]]*\] /, '')));
  return { status: res.status, headers, body: norm(res.body), log };
}

interface Case { readonly name: string; readonly method: string; readonly url: string; readonly headers?: Record<string, string | string[]>; readonly body?: Buffer }

const CASES: Case[] = [
  { name: 'h2c GET with fields', method: 'GET', url: '/c/echo/a%20b?x=1&y=%41', headers: { 'X-One': 'a', Cookie: ['c1=1', 'c2=2'], Te: 'gzip', 'Keep-Alive': '5', Connection: 'keep-alive, X-Hop', 'X-Hop': 'h', Accept: ['text/html', 'text/plain'] } },
  { name: 'h2c POST body', method: 'POST', url: '/c/echo/post', headers: { 'Content-Type': 'text/plain' }, body: Buffer.from('hello body') },
  { name: 'h2c POST chunked 100 KB', method: 'POST', url: '/c/echo/chunked', headers: { 'Transfer-Encoding': 'chunked' }, body: Buffer.alloc(100 * 1024, 0x62) },
  { name: 'h2 GET over TLS', method: 'GET', url: '/s/echo/tls?q', headers: { 'X-Forwarded-For': '10.0.0.1' } },
  { name: 'reverse mapping', method: 'GET', url: '/c/redir' },
  { name: 'preserve host: no reverse mapping', method: 'GET', url: '/keep/redir' },
  { name: 'preserve host: authority', method: 'GET', url: '/keep/echo', headers: { Host: 'front.example:8000' } },
  { name: 'ProxyAddHeaders Off', method: 'GET', url: '/nofwd/echo' },
  { name: 'HEAD', method: 'HEAD', url: '/c/echo/head' },
  { name: 'backend 404', method: 'GET', url: '/c/status/404' },
  { name: 'backend 204', method: 'GET', url: '/c/status/204' },
  { name: 'large body', method: 'GET', url: '/c/big' },
  { name: 'stream reset before the response', method: 'GET', url: '/c/reset' },
  { name: 'backend down', method: 'GET', url: '/dead/x' },
];

/** What is compared: the backend's view of the request (without the parts that carry the
 *  server's own identity) and the client's answer. */
function comparable(a: Answer): Answer {
  let body = a.body;
  if (body !== '' && a.headers.some(([k, v]) => k === 'content-type' && v === 'application/json')) {
    const j = JSON.parse(body) as { fields: string[]; body: string };
    body = JSON.stringify({ ...j, fields: j.fields.filter((f) => !f.startsWith('user-agent')) });
  }
  if (a.status >= 500 && /<html>|<!DOCTYPE/i.test(body)) body = body.replace(/<address>.*<\/address>/s, '<address/>');
  const log = a.log.map((l) => l.replace(/\(\d+\.\d+\.\d+\.\d+:\d+\)/, '(addr)'));
  return { ...a, body, log, headers: a.headers.filter(([k]) => k !== 'content-length' || a.status !== 200) };
}

test('mod_proxy_http2: h2 and h2c backends, compared with Apache 2.4.71', async (t) => {
  const h2c = await startBackend(false);
  const h2 = await startBackend(true);
  const dead = await freePort();
  const roots: string[] = [];
  const started: Started[] = [];
  const run = async (server: string): Promise<{ root: string; p: Ports }> => {
    const root = tempDir('plume-h2proxy-');
    fs.chmodSync(root, 0o755);
    roots.push(root);
    const p: Ports = { front: await freePort(), h2c: h2c.port, h2: h2.port, dead };
    fs.writeFileSync(path.join(root, 'httpd.conf'), config(root, p));
    started.push(await startServerCommand(server, root, p.front));
    return { root, p };
  };
  try {
    const plume = await run('plume');
    const apache = haveApache ? await run(APACHE) : undefined;
    if (apache === undefined) t.diagnostic('apache2 with mod_proxy_http2 not installed: plume is checked alone');
    for (const c of CASES) {
      await t.test(c.name, async () => {
        const mine = comparable(await ask(plume.p.front, plume.p, plume.root, c.method, c.url, c));
        if (apache !== undefined) {
          const theirs = comparable(await ask(apache.p.front, apache.p, apache.root, c.method, c.url, c));
          assert.deepEqual(mine, theirs);
        }
        if (c.name === 'backend down') assert.equal(mine.status, 503);
        if (c.name === 'reverse mapping') {
          // Link's URIs through ProxyPassReverse (the relative one and the backend's own; not the other host's).
          const links = mine.headers.filter(([k]) => k === 'link').map(([, v]) => v);
          assert.deepEqual(links, ['</c/style.css>; rel=preload; as=style, <http://127.0.0.1:<front>/c/next>;rel="next" ;title="a, b", <http://elsewhere.example/x>; rel=alternate', '</c/img.png>;rel=preload;nopush']);
        }
        if (c.name === 'stream reset before the response') assert.equal(mine.status, 502);
      });
    }

    await t.test('response trailers of the backend: in the response\'s trailers (%{...}^to), reverse-mapped', async () => {
      const lastLine = async (root: string): Promise<string> => {
        const file = path.join(root, 'logs/trail_log');
        for (let n = 0; n < 200; n++) {
          const lines = fs.existsSync(file) ? fs.readFileSync(file, 'latin1').split('\n').filter((l) => l.includes('/c/trailers')) : [];
          if (lines.length > 0) return lines[lines.length - 1]!;
          await new Promise((r) => setTimeout(r, 25));
        }
        return '';
      };
      const mine = await ask(plume.p.front, plume.p, plume.root, 'GET', '/c/trailers');
      assert.equal(mine.body, 'body before trailers\n');
      const line = (await lastLine(plume.root)).split(`:${plume.p.front}`).join(':<front>');
      assert.equal(line, 'GET /c/trailers HTTP/1.1 200 [done] [http://127.0.0.1:<front>/c/after]');
      if (apache !== undefined) {
        await ask(apache.p.front, apache.p, apache.root, 'GET', '/c/trailers');
        assert.equal((await lastLine(apache.root)).split(`:${apache.p.front}`).join(':<front>'), line);
      }
    });

    await t.test('one HTTP/2 session per backend shared by concurrent requests', async () => {
      const before = h2c.sessions;
      const answers = await Promise.all(Array.from({ length: 20 }, (_v, i) => ask(plume.p.front, plume.p, plume.root, 'GET', `/c/echo/${i}`)));
      for (const a of answers) assert.equal(a.status, 200);
      assert.ok(h2c.sessions - before <= 1, `${h2c.sessions - before} new backend sessions`);
    });

    await t.test('a stream reset mid-body cuts the client connection', async () => {
      const a = await ask(plume.p.front, plume.p, plume.root, 'GET', '/c/cut');
      assert.equal(a.status, 200);
      assert.ok(a.body.endsWith('<aborted>') || a.body.length < 1000, 'the body is not completed');
    });
  } finally {
    for (const s of started) await s.stop();
    await h2c.close();
    await h2.close();
    for (const r of roots) removeTempDir(r);
  }
});
