// mod_proxy_express with bin/plume started for real: a host name found in the SDBM map
// (written by Debian's httxt2dbm, as an operator makes it) is proxied to its backend (the
// scripted HTTP backend), a name not in it is served locally, a map that cannot be opened
// leaves every request local. Each behaviour was measured on Apache 2.4.71 with the same
// configuration (mod_proxy_express.ts); the debug lines are httpd's.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { makeSite, startPlume, freePort, waitFor, BODY, type Running } from './process-lib.js';
import { startHttpScript, type Backend } from './app-backends.js';

/** GET `urlPath` with Host: `host` on a new connection: status and body. */
function get(port: number, host: string, urlPath: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(`GET ${urlPath} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
    let data = '';
    s.on('data', (d: Buffer) => { data += d.toString('latin1'); });
    s.on('error', reject);
    s.on('close', () => {
      const m = /^HTTP\/1\.1 (\d+)/.exec(data);
      const head = data.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0, body: head < 0 ? '' : data.slice(head + 4) });
    });
  });
}

const haveHttxt2dbm = spawnSync('httxt2dbm', ['-h']).error === undefined;

test('ProxyExpressEnable: mapped host names are proxied to their backends, others served locally', { timeout: 60000, skip: haveHttxt2dbm ? false : 'httxt2dbm (apache2-utils) not installed' }, async () => {
  const site = await makeSite('proxy-express');
  const backendPort = await freePort();
  let backend: Backend | undefined;
  let plume: Running | undefined;
  try {
    backend = await startHttpScript(site.dir, backendPort);
    fs.writeFileSync(path.join(site.dir, 'map.txt'), `a.example http://127.0.0.1:${backendPort}\nclosed.example http://127.0.0.1:9\n`);
    const made = spawnSync('httxt2dbm', ['-f', 'SDBM', '-i', path.join(site.dir, 'map.txt'), '-o', path.join(site.dir, 'map')], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    site.write([
      'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
      'LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so',
      'LoadModule proxy_express_module /usr/lib/apache2/modules/mod_proxy_express.so',
      'ProxyExpressEnable on',
      'ProxyExpressDBMFile map',
      'ProxyExpressDBMType SDBM',
      'LogLevel proxy_express:debug',
    ]);
    plume = await startPlume(site, { workers: 1 });

    const proxied = await get(site.port, 'a.example', '/echo/x?y=1');
    assert.equal(proxied.status, 200);
    assert.match(proxied.body, /^GET \/echo\/x\?y=1 HTTP\/1\.1\r\n/);
    assert.match(proxied.body, /\r\nX-Forwarded-Host: a\.example\r\n/);
    // The name is matched without the port the client gave.
    const withPort = await get(site.port, `a.example:${site.port}`, '/echo/p');
    assert.match(withPort.body, /^GET \/echo\/p HTTP\/1\.1\r\n/);
    const closed = await get(site.port, 'closed.example', '/');
    assert.equal(closed.status, 503);
    const local = await get(site.port, 'other.example', '/index.html');
    assert.equal(local.status, 200);
    assert.equal(local.body, BODY);

    // The error log is written after the response goes out: wait for the last request's line.
    await waitFor('the debug line of the last request', () => fs.readFileSync(site.errorLog, 'latin1').includes('looking for other.example'));
    const log = fs.readFileSync(site.errorLog, 'latin1');
    assert.match(log, /\[proxy_express:debug\] .* mod_proxy_express\.c\(185\): \[client 127\.0\.0\.1:\d+\] AH01004: proxy_express: found a\.example -> http:\/\/127\.0\.0\.1:\d+/);
    assert.match(log, /AH01005: proxy_express: rewritten as: proxy:http:\/\/127\.0\.0\.1:\d+\/echo\/x/);
    assert.match(log, /AH01003: proxy_express: looking for other\.example/);

    // A map that cannot be opened: every request stays local, nothing is logged about it.
    await plume.stop();
    plume = undefined;
    site.write([
      'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
      'LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so',
      'LoadModule proxy_express_module /usr/lib/apache2/modules/mod_proxy_express.so',
      'ProxyExpressEnable on',
      'ProxyExpressDBMFile nomap',
    ]);
    plume = await startPlume(site, { workers: 1 });
    const unmapped = await get(site.port, 'a.example', '/index.html');
    assert.equal(unmapped.status, 200);
    assert.equal(unmapped.body, BODY);
  } finally {
    await plume?.stop();
    await backend?.stop();
    site.remove();
  }
});
