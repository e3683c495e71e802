// H2ProxyRequests: an HTTP/2 stream's :scheme, :authority and :path make the absolute URL of
// its request line (h2_request_create_rec), which mod_proxy's forward proxy (ProxyRequests On)
// takes as it takes an HTTP/1.1 request for an absolute URL; with H2ProxyRequests off the
// stream is a local request. The same configuration runs on bin/plume and, where installed,
// on Apache 2.4.71 in the same test: statuses, bodies and access log lines must agree (the
// answers below were also measured by hand on Apache: a host that names this server only
// through a ServerName without port is proxied, to this server itself; a :scheme no proxy
// handler serves is a 500 with AH01144).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { makeSite, startPlume, freePort, waitFor, type Site } from './process-lib.js';

const APACHE = '/usr/sbin/apache2';
const haveApache = fs.existsSync(APACHE) && fs.existsSync('/usr/lib/apache2/modules/mod_http2.so');

interface Answer { status: number; body: string }

/** One request on a prior-knowledge h2c connection with the given pseudo-headers. */
function h2get(port: number, scheme: string, authority: string, urlPath: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const c = http2.connect(`http://127.0.0.1:${port}`);
    c.on('error', reject);
    const q = c.request({ ':method': 'GET', ':scheme': scheme, ':authority': authority, ':path': urlPath });
    let status = 0;
    let body = '';
    q.setEncoding('latin1');
    q.on('response', (h) => { status = Number(h[':status']); });
    q.on('data', (d: string) => { body += d; });
    q.on('error', reject);
    q.on('end', () => { c.close(); resolve({ status, body }); });
  });
}

function configure(site: Site, vport: number): void {
  site.write([
    'LoadModule http2_module /usr/lib/apache2/modules/mod_http2.so',
    'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
    'LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so',
    `Listen 127.0.0.1:${vport}`,
    'LogFormat "\\"%r\\" %>s %H" h2p',
    `CustomLog ${site.dir}/logs/h2p_log h2p`,
    'Protocols h2c http/1.1',
    'H2Direct on',
    'ProxyRequests On',
    'H2ProxyRequests on',
    '<Proxy "*">',
    '  Require all granted',
    '</Proxy>',
    `<VirtualHost 127.0.0.1:${vport}>`,
    '  ServerName localhost',
    '  H2ProxyRequests off',
    '</VirtualHost>',
  ]);
}

/** The answers of one server to the scenario, and its access log afterwards (sorted: a request
 *  proxied to the server itself is logged before the one that proxied it). */
async function scenario(site: Site, vport: number, bport: number, before: number): Promise<{ answers: Answer[]; log: string[] }> {
  const file = path.join(site.dir, 'logs/h2p_log');
  const read = (): string[] => { try { return fs.readFileSync(file, 'latin1').trim().split('\n').filter((l) => l !== ''); } catch { return []; } };
  // startPlume's readiness request is logged first: wait for it, and leave it out.
  await waitFor('the lines logged before', () => read().length >= before);
  const answers = [
    // Another host: forwarded to the backend, the absolute URL in the request line.
    await h2get(site.port, 'http', `127.0.0.1:${bport}`, '/echo/x?y=1'),
    // ServerName localhost has no port, so localhost:PORT is not this server: proxied to itself.
    await h2get(site.port, 'http', `localhost:${site.port}`, '/index.html'),
    // A scheme no proxy handler takes: 500 (AH01144).
    await h2get(site.port, 'foo', `127.0.0.1:${bport}`, '/z'),
    // H2ProxyRequests off in the virtual host: a local request whatever :authority says.
    await h2get(vport, 'http', `127.0.0.1:${bport}`, '/index.html'),
  ];
  await waitFor('the access log lines', () => read().length >= before + 5);
  return { answers, log: read().slice(before).sort() };
}

test('H2ProxyRequests: HTTP/2 streams for other hosts go to the forward proxy, as on Apache', { timeout: 60000 }, async () => {
  const bport = await freePort();
  const backend = http.createServer((q, s) => { s.end(`backend ${q.method} ${q.url} host=${q.headers.host}\n`); });
  await new Promise<void>((r) => backend.listen(bport, '127.0.0.1', () => r()));
  const site = await makeSite('h2-proxy-requests');
  try {
    const vport = await freePort();
    configure(site, vport);
    const plume = await startPlume(site);
    let mine: { answers: Answer[]; log: string[] };
    try {
      mine = await scenario(site, vport, bport, 1);
    } finally {
      await plume.stop();
    }
    assert.deepEqual(mine.answers.map((a) => a.status), [200, 200, 500, 200]);
    assert.equal(mine.answers[0]!.body, `backend GET /echo/x?y=1 host=127.0.0.1:${bport}\n`);
    assert.equal(mine.answers[1]!.body, site.body);
    assert.match(mine.answers[2]!.body, /<title>500 Internal Server Error<\/title>/);
    assert.equal(mine.answers[3]!.body, site.body);
    assert.deepEqual(mine.log, [
      '"GET /index.html HTTP/1.1" 200 HTTP/1.1',
      '"GET /index.html HTTP/2.0" 200 HTTP/2.0',
      `"GET foo://127.0.0.1:${bport}/z HTTP/2.0" 500 HTTP/2.0`,
      `"GET http://127.0.0.1:${bport}/echo/x?y=1 HTTP/2.0" 200 HTTP/2.0`,
      `"GET http://localhost:${site.port}/index.html HTTP/2.0" 200 HTTP/2.0`,
    ]);
    assert.match(fs.readFileSync(site.errorLog, 'latin1'), /AH01144: No protocol handler was valid for the URL foo:\/\/127\.0\.0\.1:\d+\/z \(scheme 'foo'\)/);

    if (!haveApache) return;
    fs.rmSync(path.join(site.dir, 'logs/h2p_log'), { force: true });
    // httpd has mod_unixd built in.
    fs.writeFileSync(site.conf, fs.readFileSync(site.conf, 'utf8').replace(/^LoadModule unixd_module.*\n/m, ''));
    const start = spawnSync(APACHE, ['-d', site.dir, '-f', site.conf, '-k', 'start'], { encoding: 'utf8' });
    assert.equal(start.status, 0, start.stderr);
    let theirs: { answers: Answer[]; log: string[] };
    try {
      await waitFor('apache', () => fs.existsSync(site.pidFile));
      theirs = await scenario(site, vport, bport, 0);
    } finally {
      spawnSync(APACHE, ['-d', site.dir, '-f', site.conf, '-k', 'stop']);
      await waitFor('apache to stop', () => !fs.existsSync(site.pidFile)).catch(() => undefined);
    }
    assert.deepEqual(mine.answers.map((a) => a.status), theirs.answers.map((a) => a.status));
    assert.deepEqual([mine.answers[0]!.body, mine.answers[1]!.body, mine.answers[3]!.body], [theirs.answers[0]!.body, theirs.answers[1]!.body, theirs.answers[3]!.body]);
    assert.deepEqual(mine.log, theirs.log);
  } finally {
    site.remove();
    await new Promise<void>((r) => backend.close(() => r()));
  }
});
