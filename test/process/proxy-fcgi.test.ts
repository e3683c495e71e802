// mod_proxy_fcgi, mod_proxy_scgi and mod_proxy_uwsgi in front of real application servers
// (Debian's PHP-FPM over TCP and a unix socket, a uwsgi-core python3 application, an SCGI
// server and a FastCGI responder that reports exactly what it received): every answer —
// PHP's $_SERVER, the variables and their order, the record layout, status lines, the headers
// that matter, error-log lines — is compared with Apache 2.4.71's, recorded in
// test/fixtures/proxy-fcgi/apache-2.4.71.json (proxy-fcgi-record.ts) and, when apache2 is
// installed, also measured live in the same run. Ports, the ServerRoot, times and the server
// banner are normalised.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir, removeTempDir } from '../temp.js';
import { freePort, ROOT } from './process-lib.js';
import { FIXTURES, hasPython3, phpFpmBinary, startFcgiEcho, startPhpFpm, startScgi, startUwsgi, uwsgiBinary, type Backend } from './app-backends.js';
import { REQUESTS, ask, writeSite, type Answer, type SiteLayout, type SitePorts, type SiteRequest } from './proxy-fcgi-site.js';
import { startServerCommand, type Started } from './proxy-fcgi-server.js';

const recorded = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'apache-2.4.71.json'), 'utf8')) as Record<string, Answer>;
const haveFpm = phpFpmBinary() !== undefined;
const haveUwsgi = uwsgiBinary() !== undefined;
const havePython = hasPython3();
const haveApache = fs.existsSync('/usr/sbin/apache2') && fs.existsSync('/usr/lib/apache2/modules/mod_proxy_fcgi.so');


function available(r: SiteRequest): boolean {
  if (r.needs === 'php-fpm') return haveFpm;
  if (r.needs === 'uwsgi') return haveUwsgi;
  if (r.needs === 'python3') return havePython;
  return true;
}

interface Env { l: SiteLayout; p: SitePorts; backends: Backend[] }

async function setUp(): Promise<Env> {
  const root = tempDir('plume-fcgi-');
  fs.chmodSync(root, 0o755);
  const l: SiteLayout = { root, fpmSock: path.join(root, 'fpm.sock'), echoSock: path.join(root, 'echo.sock') };
  const p: SitePorts = { http: await freePort(), fpm: await freePort(), scgi: await freePort(), uwsgi: await freePort(), echo: await freePort(), dead: await freePort() };
  const backends: Backend[] = [];
  const starting: Promise<Backend>[] = [];
  if (haveFpm) starting.push(startPhpFpm(path.join(root, 'fpm'), p.fpm, l.fpmSock));
  if (havePython) starting.push(startFcgiEcho(root, p.echo), startFcgiEcho(root, l.echoSock), startScgi(root, p.scgi));
  if (haveUwsgi) starting.push(startUwsgi(root, p.uwsgi));
  const settled = await Promise.allSettled(starting);
  for (const s of settled) if (s.status === 'fulfilled') backends.push(s.value);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    for (const b of backends) await b.stop();
    throw failed.reason;
  }
  fs.writeFileSync(path.join(root, 'httpd.conf'), writeSite(l, p, ROOT).join('\n') + '\n');
  return { l, p, backends };
}

async function tearDown(e: Env): Promise<void> {
  for (const b of e.backends) await b.stop();
  removeTempDir(e.l.root);
}

async function answers(server: 'plume' | string, e: Env): Promise<Map<string, Answer>> {
  fs.rmSync(path.join(e.l.root, 'logs/error_log'), { force: true });
  const srv: Started = await startServerCommand(server, e.l.root, e.p.http);
  const out = new Map<string, Answer>();
  try {
    for (const r of REQUESTS) if (available(r)) out.set(r.name, await ask(e.p.http, r, e.l, e.p, path.join(e.l.root, 'logs/error_log')));
  } finally {
    await srv.stop();
  }
  return out;
}

if (!havePython) console.log('# proxy-fcgi: python3 is not installed: the SCGI and FastCGI echo backends are skipped');
if (!haveFpm) console.log('# proxy-fcgi: php-fpm is not installed: the PHP-FPM requests are skipped');
if (!haveUwsgi) console.log('# proxy-fcgi: uwsgi-core with uwsgi-plugin-python3 is not installed: the uwsgi requests are skipped');

test('FastCGI, SCGI and uwsgi backends answer through plume as through Apache 2.4.71', async (t) => {
  const e = await setUp();
  try {
    const plume = await answers('plume', e);
    const live = haveApache ? await answers('/usr/sbin/apache2', e) : undefined;
    for (const r of REQUESTS) {
      if (!available(r)) continue;
      await t.test(r.name, () => {
        const got = plume.get(r.name)!;
        assert.deepEqual(got, recorded[r.name], `${r.name}: plume against the recorded Apache answer`);
        if (live) assert.deepEqual(got, live.get(r.name), `${r.name}: plume against Apache now`);
      });
    }
  } finally {
    await tearDown(e);
  }
});
