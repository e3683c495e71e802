// TLS across processes and machines (issue 22 items 2 and 3), with bin/plume started for real:
//  - a session made in one worker process resumes in another (SSLSessionCache shmcb);
//  - two plume servers sharing one Redis, and one memcached, resume each other's sessions
//    (mod_socache_redis, mod_socache_memcache against Debian's redis-server and memcached);
//  - the cache server stopped mid-test: every request is still answered (full handshakes) and
//    the server logs why;
//  - a graceful restart loads a renewed certificate while a connection opened before finishes
//    on the old one; a renewal with a broken key keeps the old certificate serving and logs why.
// Session tickets are off, so that resumption has to go through the session cache (and on, once,
// for the TLS 1.3 sessions that travel in tickets).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { makeSite, startPlume, freePort, waitFor, REPO, type Site, type Running } from './process-lib.js';

const FIX = path.join(REPO, 'test/fixtures/tls');

/** A TLS site: the base site's plain port (readiness checks) and a TLS virtual host. */
async function tlsSite(name: string, tlsPort: number, extra: readonly string[], ip = '127.0.0.1'): Promise<Site> {
  const site = await makeSite(name);
  fs.mkdirSync(path.join(site.dir, 'tls'));
  for (const f of ['server.crt', 'server.key', 'server-ec.crt', 'server-ec.key', 'stray.key', 'ca.crt']) fs.copyFileSync(path.join(FIX, f), path.join(site.dir, 'tls', f));
  site.write([
    'LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so',
    'LoadModule socache_redis_module /usr/lib/apache2/modules/mod_socache_redis.so',
    'LoadModule socache_memcache_module /usr/lib/apache2/modules/mod_socache_memcache.so',
    'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
    `Listen ${ip}:${tlsPort}`,
    'LogFormat "%r %P %{SSL_SESSION_RESUMED}x %{SSL_SERVER_M_SERIAL}x" tls',
    'SSLSessionTickets off',
    ...extra,
    `<VirtualHost ${ip}:${tlsPort}>`,
    '  ServerName localhost',
    '  SSLEngine on',
    `  SSLCertificateFile ${site.dir}/tls/server.crt`,
    `  SSLCertificateKeyFile ${site.dir}/tls/server.key`,
    `  CustomLog ${site.dir}/logs/tls_log tls`,
    '</VirtualHost>',
  ]);
  return site;
}

interface TlsAnswer {
  status: number;
  reused: boolean;
  session: Buffer | undefined;
  serial: string;
}

/** One request on a new TLS connection (offering `session`); waits for the response and, on
 *  TLS 1.3, for the session the server sends after the handshake. */
function tlsGet(port: number, urlPath: string, session?: Buffer, sock?: tls.TLSSocket, host = '127.0.0.1'): Promise<TlsAnswer> {
  return new Promise((resolve, reject) => {
    const s = sock ?? tls.connect({ host, port, rejectUnauthorized: false, session, servername: 'localhost' });
    let data = '';
    let got: Buffer | undefined;
    let ended = false;
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`no answer for ${urlPath}`)); }, 10000);
    const finish = (): void => {
      if (!ended) return;
      const m = /^HTTP\/1\.1 (\d+)/.exec(data);
      clearTimeout(timer);
      resolve({ status: m ? Number(m[1]) : 0, reused: s.isSessionReused(), session: got, serial: s.getPeerX509Certificate()?.serialNumber ?? '' });
    };
    s.on('session', (b: Buffer) => { got = b; });
    s.on('data', (d: Buffer) => {
      data += d.toString('latin1');
      const head = data.indexOf('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(data);
      if (head >= 0 && len && data.length >= head + 4 + Number(len[1])) {
        ended = true;
        // The session arrives with the first response on TLS 1.3; give it that turn.
        setImmediate(() => { if (sock === undefined) s.end(); finish(); });
      }
    });
    s.on('error', (e) => { clearTimeout(timer); reject(e); });
    const send = (): void => { s.write(`GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\n\r\n`); };
    if (sock !== undefined) send();
    else s.once('secureConnect', send);
  });
}

/** The TLS log's lines: request line, worker pid, Initial/Resumed. */
function tlsLog(site: Site): { path: string; pid: number; resumed: string }[] {
  let text = '';
  try { text = fs.readFileSync(path.join(site.dir, 'logs/tls_log'), 'latin1'); } catch { return []; }
  return text.split('\n').filter((l) => l !== '').map((l) => {
    const m = /^GET (\S+) HTTP\/1\.1 (\d+) (\S+)/.exec(l);
    return { path: m?.[1] ?? '', pid: Number(m?.[2] ?? 0), resumed: m?.[3] ?? '' };
  });
}

async function logged(site: Site, urlPath: string): Promise<{ pid: number; resumed: string }> {
  let line: { pid: number; resumed: string } | undefined;
  await waitFor(`the log line of ${urlPath}`, () => (line = tlsLog(site).find((l) => l.path === urlPath)) !== undefined);
  return line!;
}

// With tickets off the TLS 1.3 session is found in the cache by its PSK identity; with tickets
// on (the default) it travels in the ticket, which every worker can open, and the handshake
// does not go through the cache at all (layer.ts).
for (const tickets of ['off', 'on'] as const) test(`shmcb, SSLSessionTickets ${tickets}: a session made in one worker process resumes in another`, { timeout: 90000 }, async () => {
  const tlsPort = await freePort();
  const site = await tlsSite(`tls-shmcb-${tickets}`, tlsPort, ['StartServers 2', 'SSLSessionCache shmcb:logs/ssl_scache(512000)', `SSLSessionTickets ${tickets}`]);
  let plume: Running | undefined;
  try {
    plume = await startPlume(site, { workers: 2 });
    const first = await tlsGet(tlsPort, '/index.html?first');
    assert.equal(first.status, 200);
    assert.ok(first.session, 'the server sent a session');
    const made = await logged(site, '/index.html?first');
    assert.equal(made.resumed, 'Initial');
    // Reconnect with the session until a connection lands on the other worker.
    let other: { pid: number; resumed: string } | undefined;
    for (let i = 0; i < 40 && other === undefined; i++) {
      const p = `/index.html?again${i}`;
      const r = await tlsGet(tlsPort, p, first.session);
      assert.equal(r.status, 200);
      const l = await logged(site, p);
      assert.equal(l.resumed, 'Resumed', `attempt ${i} in pid ${l.pid} resumed the session`);
      assert.ok(r.reused);
      if (l.pid !== made.pid) other = l;
    }
    assert.ok(other !== undefined, 'a reconnection was served by the other worker');
  } finally {
    await plume?.stop();
    site.remove();
  }
});

/** A cache server on a loopback port, started for the test. */
async function startDaemon(kind: 'redis' | 'memcached'): Promise<{ port: number; proc: ChildProcess; stop(): Promise<void> }> {
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
    port, proc,
    stop: () => new Promise<void>((res) => {
      if (proc.exitCode !== null || proc.signalCode !== null) { res(); return; }
      proc.once('exit', () => res());
      proc.kill('SIGTERM');
    }),
  };
}

const have = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

for (const kind of ['redis', 'memcached'] as const) {
  const provider = kind === 'redis' ? 'redis' : 'memcache';
  test(`${provider}: two plume servers resume each other's sessions; the cache server stopped mid-test leaves every request answered`, { timeout: 120000, skip: have(kind === 'redis' ? 'redis-server' : 'memcached') ? false : `${kind} is not installed` }, async () => {
    const daemon = await startDaemon(kind);
    // Two servers behind a balancer answer for the same name and port (the session id context
    // is "name:port", as httpd's): here on two loopback addresses.
    const port = await freePort();
    const cache = [`SSLSessionCache ${provider}:127.0.0.1:${daemon.port}`, kind === 'redis' ? 'RedisTimeout 2' : 'MemcacheConnTTL 5'];
    const a = await tlsSite(`tls-${kind}-a`, port, cache, '127.0.0.2');
    const b = await tlsSite(`tls-${kind}-b`, port, cache, '127.0.0.3');
    let pa: Running | undefined;
    let pb: Running | undefined;
    try {
      pa = await startPlume(a);
      pb = await startPlume(b);
      const made = await tlsGet(port, '/index.html?made-on-a', undefined, undefined, '127.0.0.2');
      assert.equal(made.status, 200);
      assert.ok(made.session);
      assert.equal((await logged(a, '/index.html?made-on-a')).resumed, 'Initial');
      const resumed = await tlsGet(port, '/index.html?resumed-on-b', made.session, undefined, '127.0.0.3');
      assert.equal(resumed.status, 200);
      assert.ok(resumed.reused, 'server B resumed the session server A made');
      assert.equal((await logged(b, '/index.html?resumed-on-b')).resumed, 'Resumed');
      // The cache server goes away: requests are still answered, with full handshakes.
      await daemon.stop();
      for (let i = 0; i < 6; i++) {
        const p = `/index.html?down${i}`;
        const r = await tlsGet(port, p, made.session, undefined, i % 2 === 0 ? '127.0.0.2' : '127.0.0.3');
        assert.equal(r.status, 200, `request ${i} with the cache server down`);
        assert.equal(r.reused, false);
      }
      await waitFor('the warning about the cache server', () => /PL0220[12]: .* not answering/.test(fs.readFileSync(a.errorLog, 'latin1') + fs.readFileSync(b.errorLog, 'latin1')));
    } finally {
      await pa?.stop();
      await pb?.stop();
      await daemon.stop();
      a.remove();
      b.remove();
    }
  });
}

/** Starts a download of `urlPath` on a new connection and reads only its first bytes; the
 *  rest is read by calling the returned finish(). */
async function slowDownload(port: number, urlPath: string): Promise<{ serial: string; finish(): Promise<number> }> {
  const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, servername: 'localhost' });
  await new Promise<void>((res, rej) => { s.once('secureConnect', () => res()); s.once('error', rej); });
  const serial = s.getPeerX509Certificate()?.serialNumber ?? '';
  let got = 0;
  let total = -1;
  let head = '';
  await new Promise<void>((res) => {
    s.on('data', (d: Buffer) => {
      if (total < 0) {
        head += d.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        total = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? -1);
        got = head.length - end - 4;
        s.pause();
        res();
        return;
      }
      got += d.length;
    });
    s.write(`GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  });
  return {
    serial,
    finish: () => new Promise<number>((res) => {
      s.on('end', () => res(got === total ? got : -got));
      s.on('close', () => res(got === total ? got : -got));
      s.resume();
    }),
  };
}

test('graceful restart: a renewed certificate is served to new connections while a download on the old one finishes; a broken key keeps the certificate serving', { timeout: 120000 }, async () => {
  const tlsPort = await freePort();
  const site = await tlsSite('tls-renew', tlsPort, ['StartServers 1', 'SSLSessionCache none']);
  fs.writeFileSync(path.join(site.dir, 'htdocs/big.bin'), Buffer.alloc(16 * 1024 * 1024, 0x61));
  let plume: Running | undefined;
  const crt = path.join(site.dir, 'tls/server.crt');
  const key = path.join(site.dir, 'tls/server.key');
  try {
    plume = await startPlume(site);
    const before = await tlsGet(tlsPort, '/index.html?before');
    assert.equal(before.status, 200);
    const download = await slowDownload(tlsPort, '/big.bin');
    assert.equal(download.serial, before.serial);
    // Renew: another certificate and key in the same files, then a graceful restart.
    fs.copyFileSync(path.join(site.dir, 'tls/server-ec.crt'), crt);
    fs.copyFileSync(path.join(site.dir, 'tls/server-ec.key'), key);
    const renewed = new (await import('node:crypto')).X509Certificate(fs.readFileSync(crt)).serialNumber;
    assert.notEqual(renewed, before.serial);
    plume.signal('SIGUSR1');
    await waitFor('the renewed certificate on new connections', async () => (await tlsGet(tlsPort, '/index.html?probe')).serial === renewed, 20000);
    // The download begun on the old certificate completes.
    assert.equal(await download.finish(), 16 * 1024 * 1024);
    // A renewal that fails: a key that does not match. The certificate in use stays.
    fs.copyFileSync(path.join(site.dir, 'tls/stray.key'), key);
    const logBefore = fs.readFileSync(site.errorLog, 'latin1').length;
    plume.signal('SIGUSR1');
    await waitFor('the refused renewal in the error log', () => /AH02565: Certificate and private key/.test(fs.readFileSync(site.errorLog, 'latin1').slice(logBefore)), 20000);
    for (let i = 0; i < 5; i++) {
      const r = await tlsGet(tlsPort, `/index.html?after-bad${i}`);
      assert.equal(r.status, 200);
      assert.equal(r.serial, renewed);
    }
  } finally {
    await plume?.stop();
    site.remove();
  }
});
