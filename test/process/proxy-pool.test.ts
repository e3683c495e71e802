// mod_proxy's connection pool per worker, as httpd's reslist (measured on Apache 2.4.71 with one
// child): with max= connections in use a request waits for one to come back — at most acquire=
// ms, then 503 and "(70007)...: AH00941: http: failed to acquire connection for (host:port)" —
// and gets the connection given back; ttl= closes a pooled connection idle that long instead of
// reusing it (smax=0 lets every idle one go once ttl= has passed); keepalive=On sets TCP
// keep-alive on backend connections.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { execFileSync } from 'node:child_process';
import { makeSite, startPlume, freePort, sleep, waitFor } from './process-lib.js';

interface Got { status: number; body: string }

function get(port: number, p: string): Promise<Got> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

const haveSs = ['/usr/bin/ss', '/bin/ss', '/usr/sbin/ss', '/sbin/ss'].some((f) => fs.existsSync(f));

test('max= with acquire=, max= without it, ttl= with smax=, keepalive=', { timeout: 60000 }, async (t) => {
  const bport = await freePort();
  /** Requests the backend holds, answered when the test says so. */
  const held: (() => void)[] = [];
  let heldWaiter: (() => void) | null = null;
  const backend = http.createServer((req, res) => {
    const answer = (): void => { res.end(`${req.url} ${req.socket.remotePort}`); };
    if ((req.url ?? '').includes('/hold')) { held.push(answer); heldWaiter?.(); return; }
    answer();
  });
  await new Promise<void>((r) => backend.listen(bport, '127.0.0.1', () => r()));
  const heldOne = (): Promise<void> => (held.length > 0 ? Promise.resolve() : new Promise((r) => { heldWaiter = () => { heldWaiter = null; r(); }; }));

  const site = await makeSite('proxy-pool');
  site.write([
    'StartServers 1',
    'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
    'LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so',
    'LoadModule proxy_balancer_module /usr/lib/apache2/modules/mod_proxy_balancer.so',
    'LoadModule slotmem_shm_module /usr/lib/apache2/modules/mod_slotmem_shm.so',
    'LoadModule lbmethod_byrequests_module /usr/lib/apache2/modules/mod_lbmethod_byrequests.so',
    'LoadModule status_module /usr/lib/apache2/modules/mod_status.so',
    'ProxyStatus On',
    '<Location /server-status>', '  SetHandler server-status', '</Location>',
    `<Proxy balancer://bal>`, `  BalancerMember http://127.0.0.1:${bport}/bal`, '</Proxy>',
    'ProxyPass /bal balancer://bal',
    `ProxyPass /a http://127.0.0.1:${bport}/a max=1 acquire=300`,
    `ProxyPass /b http://127.0.0.1:${bport}/b max=1`,
    `ProxyPass /c http://127.0.0.1:${bport}/c smax=0 ttl=1`,
    `ProxyPass /k http://127.0.0.1:${bport}/k keepalive=On`,
  ]);
  const run = await startPlume(site);
  const port = site.port;
  try {
    // acquire=300: the second request gives up while the first holds the only connection.
    const first = get(port, '/a/hold');
    await heldOne();
    const t0 = Date.now();
    const second = await get(port, '/a/x');
    assert.equal(second.status, 503);
    assert.match(second.body, /<title>503 Service Unavailable<\/title>/);
    assert.ok(Date.now() - t0 >= 290, 'waited acquire= ms first');
    held.shift()!();
    const a1 = await first;
    assert.equal(a1.status, 200);
    await waitFor('AH00941 in the error log', () => fs.readFileSync(site.errorLog, 'latin1').includes('AH00941'));
    const log = fs.readFileSync(site.errorLog, 'latin1');
    assert.match(log, new RegExp(`\\[proxy:error\\] \\[pid \\d+:tid \\d+\\] \\(70007\\)The timeout specified has expired: AH00941: http: failed to acquire connection for \\(127\\.0\\.0\\.1:${bport}\\)`));
    // The connection is free again: the next request has it.
    assert.equal((await get(port, '/a/y')).status, 200);

    // max=1 without acquire=: the second request waits for the first's connection and uses it.
    const b1 = get(port, '/b/hold');
    await heldOne();
    const b2 = get(port, '/b/after');
    // The second is waiting (not at the backend): only the held one reached it.
    await new Promise((r) => setImmediate(r));
    assert.equal(held.length, 1);
    held.shift()!();
    const [r1, r2] = await Promise.all([b1, b2]);
    assert.equal(r1.status, 200);
    assert.equal(r2.status, 200);
    assert.equal(r2.body.split(' ')[1], r1.body.split(' ')[1], 'the waiting request got the same backend connection');

    // A balancer member serving a request counts one busy (the balancer's count, as httpd's:
    // taking a pooled connection adds nothing), none once it is done.
    const held1 = get(port, '/bal/hold');
    await heldOne();
    const during = await get(port, '/server-status?auto');
    assert.match(during.body, /ProxyBalancer\[0\]Worker\[0\]Busy: 1\n/);
    held.shift()!();
    assert.equal((await held1).status, 200);
    assert.match((await get(port, '/server-status?auto')).body, /ProxyBalancer\[0\]Worker\[0\]Busy: 0\n/);

    // keepalive=On: the pooled backend connection has TCP keep-alive (ss shows its timer);
    // without it (/c) none.
    const k = await get(port, '/k/1');
    const c0 = await get(port, '/c/0');
    if (!haveSs) t.diagnostic('ss (iproute2) is not installed: the keepalive= check is skipped');
    else {
      const ss = execFileSync('ss', ['-tnoH', 'state', 'established', `dport = :${bport}`], { encoding: 'latin1' });
      const lineOf = (p: string): string => ss.split('\n').find((l) => l.includes(`127.0.0.1:${p} `)) ?? '';
      assert.match(lineOf(k.body.split(' ')[1]!), /timer:\(keepalive/);
      const plain = lineOf(c0.body.split(' ')[1]!);
      assert.notEqual(plain, '', 'the pooled connection of /c is open');
      assert.doesNotMatch(plain, /timer:\(keepalive/);
    }

    // ttl=1 smax=0: reused at once, not after a second idle.
    const c1 = await get(port, '/c/1');
    const c2 = await get(port, '/c/2');
    assert.equal(c2.body.split(' ')[1], c1.body.split(' ')[1]);
    await sleep(1100); // the connection's time to live passes (what is tested)
    const c3 = await get(port, '/c/3');
    assert.notEqual(c3.body.split(' ')[1], c2.body.split(' ')[1]);
  } finally {
    await run.stop();
    site.remove();
    backend.close();
    backend.closeAllConnections();
  }
});
