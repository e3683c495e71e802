// mod_proxy_hcheck on real processes: three HTTP backends on loopback behind balancer://hc,
// plume with two worker processes. One backend starts answering its health URI with 500: the
// checker (one process for the whole server, as httpd's singleton watchdog) marks it "HcFl"
// after hcfails failures, every worker process then leaves it out (no failed request), and
// after hcpasses good answers it serves again. A member with a ProxyHCExpr over the answer's
// body (hc('body')) is judged by the expression. The balancer-manager page shows the health
// check columns as httpd's does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { makeSite, startPlume, freePort, waitFor } from './process-lib.js';

interface Backend { readonly name: string; readonly port: number; health: { status: number; body: string }; readonly server: http.Server }

async function startBackend(name: string): Promise<Backend> {
  const port = await freePort();
  const b: Backend = {
    name, port, health: { status: 200, body: 'good' },
    server: http.createServer((req, res) => {
      res.setHeader('Content-Type', 'text/plain');
      if (req.url === '/health') { res.statusCode = b.health.status; res.end(b.health.body); return; }
      res.end(`${name} ${req.url ?? ''}\n`);
    }),
  };
  b.server.keepAliveTimeout = 100;
  await new Promise<void>((resolve) => b.server.listen(port, '127.0.0.1', resolve));
  return b;
}

/** One request on a fresh connection (spread over the worker processes): status and body. */
function request(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const parts: Buffer[] = [];
    s.on('data', (d: Buffer) => { parts.push(d); });
    s.on('error', reject);
    s.on('end', () => {
      const data = Buffer.concat(parts).toString('latin1');
      const sep = data.indexOf('\r\n\r\n');
      const head = data.slice(0, sep);
      let body = data.slice(sep + 4);
      if (/^transfer-encoding:\s*chunked/im.test(head)) {
        let out = '';
        for (;;) {
          const eol = body.indexOf('\r\n');
          const n = parseInt(body.slice(0, eol), 16);
          if (!(n > 0)) break;
          out += body.slice(eol + 2, eol + 2 + n);
          body = body.slice(eol + 2 + n + 2);
        }
        body = out;
      }
      resolve({ status: Number(data.slice(9, 12)), body });
    });
    s.end(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  });
}

function memberRow(port: number, status: string, rest: string): RegExp {
  return new RegExp(`127\\.0\\.0\\.1:${port}</a></td><td></td><td></td><td>1\\.00</td><td>0</td><td>${status}</td>.*?${rest}`);
}

test('health checks: a member failing its health URI is marked HcFl by one checker for all worker processes, skipped, and comes back after hcpasses', async (t) => {
  const backends = [await startBackend('alpha'), await startBackend('beta'), await startBackend('gamma')];
  const [alpha, beta, gamma] = backends as [Backend, Backend, Backend];
  const site = await makeSite('hcheck', [
    'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
    'LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so',
    'LoadModule proxy_balancer_module /usr/lib/apache2/modules/mod_proxy_balancer.so',
    'LoadModule slotmem_shm_module /usr/lib/apache2/modules/mod_slotmem_shm.so',
    'LoadModule lbmethod_byrequests_module /usr/lib/apache2/modules/mod_lbmethod_byrequests.so',
    'LoadModule proxy_hcheck_module /usr/lib/apache2/modules/mod_proxy_hcheck.so',
    'StartServers 2',
    'LogLevel warn proxy_hcheck:debug',
    'ProxyHCExpr goodbody {hc(\'body\') =~ /good/}',
    'ProxyHCTemplate fast hcmethod=GET hcuri=/health hcinterval=200ms hcpasses=2 hcfails=1',
    '<Proxy balancer://hc>',
    `  BalancerMember http://127.0.0.1:${alpha.port} hctemplate=fast`,
    `  BalancerMember http://127.0.0.1:${beta.port} hctemplate=fast`,
    `  BalancerMember http://127.0.0.1:${gamma.port} hctemplate=fast hcexpr=goodbody`,
    '</Proxy>',
    'ProxyPass /balancer-manager !',
    'ProxyPass /app balancer://hc/app',
    '<Location /balancer-manager>',
    '  SetHandler balancer-manager',
    '</Location>',
  ]);
  const server = await startPlume(site, { workers: 2 });
  t.after(async () => {
    await server.stop();
    for (const b of backends) await new Promise<void>((resolve) => { b.server.close(() => resolve()); b.server.closeAllConnections(); });
    site.remove();
  });
  const log = (): string => fs.readFileSync(site.errorLog, 'latin1');
  const page = async (): Promise<string> => (await request(site.port, '/balancer-manager')).body;

  // The checks run, from one process.
  await waitFor('health checks of every member', () => backends.every((b) => log().includes(`AH03256: Threaded Health checking http://127.0.0.1:${b.port}`)), 15000);
  const pids = new Set([...log().matchAll(/\[pid (\d+):tid \d+\] AH03256: /g)].map((m) => m[1]));
  assert.equal(pids.size, 1, `one checker for all worker processes: ${[...pids].join(', ')}`);
  assert.ok(!/AH03303/.test(log()), `nobody disabled while all are healthy:\n${log()}`);
  // httpd's columns.
  assert.match(await page(), memberRow(alpha.port, 'Init Ok ', '<td>GET</td><td>200ms</td><td>2 \\(0\\)</td><td>1 \\(0\\)</td><td>/health</td><td></td></tr>'));
  assert.match(await page(), memberRow(gamma.port, 'Init Ok ', '<td>/health</td><td>goodbody</td></tr>'));
  assert.match(await page(), /<tr><td>goodbody<\/td><td>hc\(&#39;body&#39;\) =~ \/good\/<\/td><\/tr>|<tr><td>goodbody<\/td><td>hc\('body'\) =~ \/good\/<\/td><\/tr>/);

  // beta's health URI fails: it is disabled, every worker process leaves it out.
  beta.health = { status: 500, body: 'broken' };
  await waitFor('beta disabled', () => log().includes(`AH03303: Threaded Health check DISABLING http://127.0.0.1:${beta.port}`), 15000);
  for (let i = 0; i < 4; i++) assert.match(await page(), memberRow(beta.port, 'Init HcFl ', '<td>GET</td>'));
  const served = new Map<string, number>();
  for (let i = 0; i < 24; i++) {
    const r = await request(site.port, '/app/x');
    assert.equal(r.status, 200, 'no failed request');
    const name = r.body.split(' ')[0]!;
    served.set(name, (served.get(name) ?? 0) + 1);
  }
  assert.equal(served.get('beta') ?? 0, 0, `a member in HcFl gets nothing: ${[...served]}`);
  assert.ok((served.get('alpha') ?? 0) > 0 && (served.get('gamma') ?? 0) > 0, `the others serve: ${[...served]}`);

  // gamma answers 200 with a body the expression refuses: disabled by ProxyHCExpr.
  gamma.health = { status: 200, body: 'sick' };
  await waitFor('gamma disabled by its expression', () => log().includes(`AH03303: Threaded Health check DISABLING http://127.0.0.1:${gamma.port}`), 15000);

  // beta heals: after hcpasses=2 good answers it serves again.
  beta.health = { status: 200, body: 'good' };
  await waitFor('beta enabled', () => log().includes(`AH03302: Threaded Health check ENABLING http://127.0.0.1:${beta.port}`), 15000);
  const l = log();
  const disabledAt = l.indexOf(`DISABLING http://127.0.0.1:${beta.port}`);
  const goodAfter = [...l.slice(disabledAt).matchAll(new RegExp(`AH03251: Health check GET Status \\(0\\) for (\\w+)\\.`, 'g'))];
  assert.ok(goodAfter.length >= 2, 'two good checks before it came back');
  await waitFor('beta to serve again', async () => (await request(site.port, '/app/y')).body.startsWith('beta '), 15000);
  for (let i = 0; i < 6; i++) {
    const r = await request(site.port, '/app/z');
    assert.equal(r.status, 200);
    assert.notEqual(r.body.split(' ')[0], 'gamma', 'gamma is still out');
  }
});
