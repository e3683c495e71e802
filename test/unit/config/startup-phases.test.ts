/**
 * Starting to serve reads the configuration twice, as httpd does: the first read's warnings go
 * to stderr, then the error log is opened and the post-config hooks run (their failures are
 * logged there, not on stderr), and the second read's warnings land in the error log.
 * Expected lines measured on Apache httpd 2.4.71 (apache2 -X with the same configuration).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { PLUME_BIN, normaliseOutput } from '../../cli/golden-lib.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

interface Outcome { stderr: string; errorLog: string; exit: number | null; served: boolean }

/** Starts plume -X on a configuration; stops it once it listens (or when it exits). */
async function start(body: string[]): Promise<Outcome> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-phases-'));
  const port = await freePort();
  const conf = [
    'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
    'LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so',
    'ServerName localhost',
    `Listen 127.0.0.1:${port}`,
    `PidFile ${root}/httpd.pid`,
    `ErrorLog ${root}/error.log`,
    `DocumentRoot ${root}`,
    ...body,
  ];
  fs.writeFileSync(path.join(root, 'httpd.conf'), conf.join('\n') + '\n');
  const child = spawn(process.execPath, [PLUME_BIN, '-X', '-d', root, '-f', path.join(root, 'httpd.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => { stderr += d; });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let served = false;
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline && child.exitCode === null) {
    if (await canConnect(port)) { served = true; break; }
    await new Promise((r) => setTimeout(r, 50));
  }
  if (child.exitCode === null) child.kill('SIGTERM');
  const exit = await exited;
  let errorLog = '';
  try { errorLog = fs.readFileSync(path.join(root, 'error.log'), 'utf8'); } catch { /* not created */ }
  fs.rmSync(root, { recursive: true, force: true });
  return { stderr: normaliseOutput(stderr, root), errorLog: normaliseOutput(errorLog, root), exit, served };
}

test('first-read warnings on stderr, second-read warnings in the error log', { timeout: 30000 }, async () => {
  const r = await start(['TypesConfig /etc/mime.types', 'DefaultType text/plain', 'NameVirtualHost *:80', 'MaxClients 10']);
  assert.ok(r.served, `plume did not listen:\n${r.stderr}`);
  assert.equal(r.stderr,
    '[<time>] [core:warn] [pid] AH00117: Ignoring deprecated use of DefaultType in line 9 of @ROOT@/httpd.conf.\n' +
    'AH00548: NameVirtualHost has no effect and will be removed in the next release @ROOT@/httpd.conf:10\n' +
    'AH00511: WARNING: MaxRequestWorkers of 10 is less than ThreadsPerChild of 25, increasing to 25. MaxRequestWorkers must be at least as large as the number of threads in a single server.\n');
  // NameVirtualHost warns once per process; the MPM check words its second warning differently.
  const lines = r.errorLog.split('\n').filter((l) => l !== '');
  assert.deepEqual(lines.slice(0, 2), [
    '[<time>] [core:warn] [pid] AH00117: Ignoring deprecated use of DefaultType in line 9 of @ROOT@/httpd.conf.',
    '[<time>] [mpm_event:warn] [pid] AH00512: MaxRequestWorkers of 10 is less than ThreadsPerChild of 25, increasing to match',
  ]);
});

test('a post-config failure is written to the error log, not to stderr', { timeout: 30000 }, async () => {
  const r = await start(['TypesConfig /nonexistent/mime.types']);
  assert.equal(r.exit, 1);
  assert.equal(r.stderr, '');
  assert.equal(r.errorLog,
    '[<time>] [mime:error] [pid] (2)No such file or directory: AH01597: could not open mime types config file /nonexistent/mime.types.\n' +
    'AH00016: Configuration Failed\n');
});
