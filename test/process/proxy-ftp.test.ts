// mod_proxy_ftp with bin/plume started for real against a real FTP server (Debian's pyftpdlib,
// test/fixtures/ftp/server.py) on loopback: a 300 KB binary file comes through whole with its
// Content-Length, HEAD answers the GET's headers without a body (httpd 2.4.71 answers 500
// there: docs/differences.md), two requests on one kept-alive connection each log in anew, a
// symbolic link is listed as httpd lists one, and the protocol trace (LogLevel
// proxy_ftp:trace2) hides the password. The behaviour matched against Apache is in
// test/conformance/cases/proxy-ftp/.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { makeSite, startPlume, freePort, type Running } from './process-lib.js';
import { hasPyftpdlib, startFtp, type Backend } from './app-backends.js';

interface Got { status: number; headers: http.IncomingHttpHeaders; body: Buffer }

function get(port: number, p: string, opts: { method?: string; agent?: http.Agent; headers?: Record<string, string> } = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method: opts.method ?? 'GET', agent: opts.agent ?? false, headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

test('mod_proxy_ftp through bin/plume against pyftpdlib', { skip: !hasPyftpdlib() && 'python3-pyftpdlib is not installed', timeout: 60000 }, async () => {
  const ftpPort = await freePort();
  const site = await makeSite('proxy-ftp', [
    'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
    'LoadModule proxy_ftp_module /usr/lib/apache2/modules/mod_proxy_ftp.so',
    'LogLevel warn proxy_ftp:trace2',
    'KeepAlive On',
    `ProxyPass /ftp/ ftp://127.0.0.1:${ftpPort}/`,
  ]);
  const root = path.join(site.dir, 'ftp');
  fs.mkdirSync(path.join(root, 'pub'), { recursive: true });
  const big = Buffer.alloc(300 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7919 + (i >> 8)) & 0xff;
  fs.writeFileSync(path.join(root, 'big.bin'), big);
  fs.writeFileSync(path.join(root, 'pub/a.txt'), 'file a\n');
  fs.symlinkSync('a.txt', path.join(root, 'pub/link'));
  let ftp: Backend | undefined;
  let plume: Running | undefined;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    ftp = await startFtp(site.dir, ftpPort, root);
    plume = await startPlume(site);

    const f = await get(site.port, '/ftp/big.bin');
    assert.equal(f.status, 200);
    assert.equal(f.headers['content-length'], String(big.length));
    assert.equal(f.headers['last-modified'], 'Tue, 02 Jan 2024 03:04:05 GMT');
    assert.ok(f.body.equals(big), 'the file came through byte for byte');

    const h = await get(site.port, '/ftp/big.bin', { method: 'HEAD' });
    assert.equal(h.status, 200);
    assert.equal(h.headers['content-length'], String(big.length));
    assert.equal(h.body.length, 0);

    // One kept-alive client connection, two FTP sessions (httpd closes each after its request).
    const k1 = await get(site.port, '/ftp/pub/a.txt', { agent });
    const k2 = await get(site.port, '/ftp/pub/', { agent });
    assert.equal(k1.body.toString(), 'file a\n');
    assert.equal(k2.status, 200);
    assert.equal(k2.headers['content-type'], 'text/html;charset=ISO-8859-1');
    // A symlink: the name before " -> " is the link, the arrow and target are in its text.
    assert.match(k2.body.toString('latin1'), /\n(l[rwx-]{9} +\d+ +\S+ +\S+ +\d+ \w{3} \d\d +\d{4}) <a href="link">link -&gt; a.txt<\/a>\n/);

    const c = await get(site.port, '/ftp/pub/a.txt', { headers: { Authorization: 'Basic ' + Buffer.from('alice:secret').toString('base64') } });
    assert.equal(c.status, 200);
    const log = fs.readFileSync(site.errorLog, 'utf8');
    assert.match(log, /\[proxy_ftp:trace2\] .* >USER anonymous/);
    assert.match(log, /\[proxy_ftp:trace2\] .* >PASS \*\*\*\*/);
    assert.match(log, /\[proxy_ftp:trace2\] .* >USER alice/);
    assert.doesNotMatch(log, /secret|apache-proxy@/);
    assert.match(log, /<229 Entering extended passive mode/);
  } finally {
    agent.destroy();
    if (plume !== undefined) await plume.stop();
    if (ftp !== undefined) await ftp.stop();
    site.remove();
  }
});
