// mod_ssl's part of server-status, with bin/plume started for real (two workers) and then
// Apache 2.4.71 on the same configuration: TLS 1.2 and TLS 1.3 connections, full and resumed
// through the shmcb session cache (tickets off), and after each the ?auto lines of the
// "TLSSessionCacheStatus" section. The counters must move as Apache's do, whichever worker
// served the handshake and whichever serves the status page (plume's counters live in the
// cache file, one block per process, summed).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import * as net from 'node:net';
import { spawn, spawnSync } from 'node:child_process';
import { makeSite, startPlume, freePort, getOnce, waitFor, REPO, type Site } from './process-lib.js';

const APACHE = '/usr/sbin/apache2';
const FIX = path.join(REPO, 'test/fixtures/tls');

/** One request on a new TLS connection offering `session`; the response's end, whether the
 *  session was resumed and the first session the server handed out. */
function tlsGet(port: number, version: tls.SecureVersion, session?: Buffer): Promise<{ reused: boolean; session: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, session, servername: 'localhost', minVersion: version, maxVersion: version });
    let got: Buffer | undefined;
    let data = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error('no answer')); }, 10000);
    s.on('session', (b: Buffer) => { got ??= b; });
    s.on('data', (d: Buffer) => { data += d.toString('latin1'); });
    s.on('error', (e) => { clearTimeout(timer); reject(e); });
    s.on('end', () => {
      clearTimeout(timer);
      if (!/^HTTP\/1\.1 200 /.test(data)) { reject(new Error(`answer: ${data.slice(0, 80)}`)); return; }
      resolve({ reused: s.isSessionReused(), session: got });
    });
    s.once('secureConnect', () => s.write('GET /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'));
  });
}

/** The counters of the status page's TLS section. */
async function counters(port: number): Promise<string> {
  const r = await getOnce(port, '/server-status?auto');
  const text = r.body.toString('latin1');
  const at = text.indexOf('TLSSessionCacheStatus\n');
  assert.ok(at >= 0, text);
  const keep = ['CacheType', 'CacheCurrentEntries', 'CacheSubcaches', 'CacheIndexesPerSubcaches', 'CacheStoreCount', 'CacheReplaceCount',
    'CacheRetrieveHitCount', 'CacheRetrieveMissCount', 'CacheRemoveHitCount', 'CacheRemoveMissCount'];
  return text.slice(at).split('\n').filter((l) => keep.includes(l.split(':')[0]!)).join(' ');
}

/** Full and resumed handshakes of both protocols, the counters after each. */
async function scenario(site: Site, tlsPort: number): Promise<string[]> {
  const seen: string[] = [await counters(site.port)];
  const a = await tlsGet(tlsPort, 'TLSv1.2');
  assert.equal(a.reused, false);
  seen.push(await counters(site.port));
  const b = await tlsGet(tlsPort, 'TLSv1.2', a.session);
  assert.equal(b.reused, true);
  seen.push(await counters(site.port));
  const c = await tlsGet(tlsPort, 'TLSv1.3');
  assert.equal(c.reused, false);
  seen.push(await counters(site.port));
  const d = await tlsGet(tlsPort, 'TLSv1.3', c.session);
  assert.equal(d.reused, true);
  seen.push(await counters(site.port));
  // Again from the first TLS 1.2 session: the same entry, found again.
  const e = await tlsGet(tlsPort, 'TLSv1.2', a.session);
  assert.equal(e.reused, true);
  seen.push(await counters(site.port));
  return seen;
}

test('server-status shows the TLS session cache counters moving as Apache\'s do (shmcb, two workers)', { timeout: 90000 }, async () => {
  const site = await makeSite('ssl-status');
  try {
    const tlsPort = await freePort();
    fs.mkdirSync(path.join(site.dir, 'tls'));
    for (const f of ['server.crt', 'server.key']) fs.copyFileSync(path.join(FIX, f), path.join(site.dir, 'tls', f));
    site.write([
      'LoadModule status_module /usr/lib/apache2/modules/mod_status.so',
      'LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so',
      'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
      `Listen 127.0.0.1:${tlsPort}`,
      `SSLSessionCache shmcb:${site.dir}/logs/ssl_scache(512000)`,
      'SSLSessionTickets off',
      'StartServers 2',
      `<VirtualHost 127.0.0.1:${tlsPort}>`,
      '  ServerName localhost',
      '  SSLEngine on',
      `  SSLCertificateFile ${site.dir}/tls/server.crt`,
      `  SSLCertificateKeyFile ${site.dir}/tls/server.key`,
      '</VirtualHost>',
      '<Location /server-status>',
      '  SetHandler server-status',
      '</Location>',
    ]);
    const plume = await startPlume(site, { workers: 2 });
    let mine: string[];
    try {
      mine = await scenario(site, tlsPort);
    } finally {
      await plume.stop();
    }
    const stores = mine.map((l) => Number(/CacheStoreCount: (\d+)/.exec(l)?.[1]));
    const hits = mine.map((l) => Number(/CacheRetrieveHitCount: (\d+)/.exec(l)?.[1]));
    // TLS 1.2: one session stored, found once; TLS 1.3: two tickets' sessions, the resumption
    // finds one and stores the new one; the old TLS 1.2 session is found again.
    assert.deepEqual(stores, [0, 1, 1, 3, 4, 4], mine.join('\n'));
    assert.deepEqual(hits, [0, 0, 1, 1, 2, 3], mine.join('\n'));
    assert.match(mine[5]!, /CacheCurrentEntries: 4 .*CacheRetrieveMissCount: 0 /);

    if (!fs.existsSync(APACHE)) return;
    // httpd has mod_unixd built in.
    fs.writeFileSync(site.conf, fs.readFileSync(site.conf, 'utf8').replace(/^LoadModule unixd_module.*\n/m, ''));
    const start = spawnSync(APACHE, ['-d', site.dir, '-f', site.conf, '-k', 'start'], { encoding: 'utf8' });
    assert.equal(start.status, 0, start.stderr);
    let theirs: string[];
    try {
      await waitFor('apache', async () => fs.existsSync(site.pidFile) && await getOnce(site.port, '/index.html', 2000).then((r) => r.status === 200, () => false));
      theirs = await scenario(site, tlsPort);
    } finally {
      spawnSync(APACHE, ['-d', site.dir, '-f', site.conf, '-k', 'stop']);
      await waitFor('apache to stop', () => !fs.existsSync(site.pidFile)).catch(() => undefined);
    }
    assert.deepEqual(mine, theirs);
  } finally {
    site.remove();
  }
});

/** A cache server on a loopback port, started for the test. */
async function startDaemon(kind: 'redis' | 'memcached'): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const args = kind === 'redis'
    ? ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', '/tmp']
    : ['-l', '127.0.0.1', '-p', String(port), '-U', '0', '-u', 'nobody'];
  const proc = spawn(kind === 'redis' ? 'redis-server' : 'memcached', args, { stdio: 'ignore' });
  await waitFor(`${kind} on ${port}`, () => new Promise<boolean>((res) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => { s.destroy(); res(true); });
    s.on('error', () => res(false));
  }));
  return {
    port,
    stop: () => new Promise<void>((res) => {
      if (proc.exitCode !== null || proc.signalCode !== null) { res(); return; }
      proc.once('exit', () => res());
      proc.kill('SIGTERM');
    }),
  };
}

const have = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/** An HTTP/1.0 request's response body, read to the close (whether or not the server knew its
 *  length before it began: a page waiting for a cache server may go out in pieces). */
function fetch10(port: number, urlPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1', () => c.write(`GET ${urlPath} HTTP/1.0\r\nHost: localhost\r\n\r\n`));
    let d = '';
    c.setEncoding('latin1');
    c.on('data', (x: string) => { d += x; });
    c.on('end', () => resolve(d.slice(d.indexOf('\r\n\r\n') + 4)));
    c.on('error', reject);
  });
}

/** The TLS section of both forms of the page after one TLS 1.2 handshake, figures masked. */
async function networkSection(site: Site, tlsPort: number): Promise<string[]> {
  await tlsGet(tlsPort, 'TLSv1.2');
  const auto = await fetch10(site.port, '/server-status?auto');
  const html = await fetch10(site.port, '/server-status');
  const a = auto.slice(auto.indexOf('TLSSessionCacheStatus\n'));
  const h = html.slice(html.indexOf('<hr>\n<table cellspacing=0'), html.indexOf('</body>'));
  // The memcached's own figures moved: one session set (plume's and Apache's are the same
  // once the numbers are masked, below).
  assert.match(a, /(Sets: [1-9]|Processed: [1-9])/, a);
  const mask = (t: string): string => t.replace(/\d+/g, 'N');
  return [mask(a), mask(h)];
}

for (const kind of ['memcached', 'redis'] as const) {
  const provider = kind === 'redis' ? 'redis' : 'memcache';
  test(`server-status with SSLSessionCache ${provider}: the server's line and its statistics, as Apache prints them`, { timeout: 60000, skip: have(kind === 'redis' ? 'redis-server' : 'memcached') ? false : `${kind} is not installed` }, async () => {
    const daemon = await startDaemon(kind);
    const site = await makeSite(`ssl-status-${provider}`);
    try {
      const tlsPort = await freePort();
      fs.mkdirSync(path.join(site.dir, 'tls'));
      for (const f of ['server.crt', 'server.key']) fs.copyFileSync(path.join(FIX, f), path.join(site.dir, 'tls', f));
      site.write([
        'LoadModule status_module /usr/lib/apache2/modules/mod_status.so',
        `LoadModule socache_${provider}_module /usr/lib/apache2/modules/mod_socache_${provider}.so`,
        'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
        `Listen 127.0.0.1:${tlsPort}`,
        `SSLSessionCache ${provider}:127.0.0.1:${daemon.port}`,
        'SSLSessionTickets off',
        `<VirtualHost 127.0.0.1:${tlsPort}>`,
        '  ServerName localhost',
        '  SSLEngine on',
        `  SSLCertificateFile ${site.dir}/tls/server.crt`,
        `  SSLCertificateKeyFile ${site.dir}/tls/server.key`,
        '</VirtualHost>',
        '<Location /server-status>',
        '  SetHandler server-status',
        '</Location>',
      ]);
      const plume = await startPlume(site);
      let mine: string[];
      try {
        mine = await networkSection(site, tlsPort);
      } finally {
        await plume.stop();
      }
      const label = kind === 'redis' ? 'Redis server' : 'Memcached server';
      assert.ok(mine[0]!.startsWith(`TLSSessionCacheStatus\n${label}: N.N.N.N:N [Up]\nVersion: `), mine[0]);
      if (!fs.existsSync(APACHE)) return;
      fs.writeFileSync(site.conf, fs.readFileSync(site.conf, 'utf8').replace(/^LoadModule unixd_module.*\n/m, ''));
      const start = spawnSync(APACHE, ['-d', site.dir, '-f', site.conf, '-k', 'start'], { encoding: 'utf8' });
      assert.equal(start.status, 0, start.stderr);
      let theirs: string[];
      try {
        await waitFor('apache', async () => fs.existsSync(site.pidFile) && await getOnce(site.port, '/index.html', 2000).then((r) => r.status === 200, () => false));
        theirs = await networkSection(site, tlsPort);
      } finally {
        spawnSync(APACHE, ['-d', site.dir, '-f', site.conf, '-k', 'stop']);
        await waitFor('apache to stop', () => !fs.existsSync(site.pidFile)).catch(() => undefined);
      }
      assert.deepEqual(mine, theirs);
    } finally {
      site.remove();
      await daemon.stop();
    }
  });
}
