// server-status?auto counts match the requests sent, with real processes: in one process (-X)
// and with a parent and its workers (the figures of every worker added up, including workers
// MaxConnectionsPerChild retired and replaced on the way). Apache 2.4.71's semantics, measured
// on /usr/sbin/apache2: a request is counted once it is logged, so a status request does not
// count itself but is counted by the next one; Total kBytes is the sum of mod_logio's bytes
// read and written (%I + %O) of every counted request, in whole kilobytes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import {
  makeSite, startPlume, getOnce, KeepAliveClient, sleep, waitFor, PLUME, type Site,
} from './process-lib.js';

const STATUS = [
  'LoadModule status_module /usr/lib/apache2/modules/mod_status.so',
  '<Location "/server-status">',
  '  SetHandler server-status',
  '</Location>',
  'LogFormat "%I %O \\"%r\\"" io',
];

function statusSite(name: string, extra: readonly string[]): Promise<Site> {
  return makeSite(name, []).then((site) => {
    site.write([...STATUS, `CustomLog ${site.dir}/logs/io_log io`, ...extra]);
    return site;
  });
}

/** The ?auto form as a map (the first line, the host name, has no value). */
async function auto(port: number, query: string): Promise<Map<string, string>> {
  const res = await getOnce(port, `/server-status?auto${query}`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/plain; charset=ISO-8859-1');
  const m = new Map<string, string>();
  for (const line of res.body.toString('latin1').split('\n')) {
    const c = line.indexOf(': ');
    if (c > 0) m.set(line.slice(0, c), line.slice(c + 2));
  }
  return m;
}

/** Sends `n` requests of several kinds: keep-alive, a connection each, 404s. */
async function traffic(port: number): Promise<number> {
  let n = 0;
  const ka = [new KeepAliveClient(port), new KeepAliveClient(port)];
  const tasks: Promise<void>[] = [];
  for (const c of ka) {
    tasks.push((async () => {
      for (let i = 0; i < 20; i++) { assert.equal((await c.get('/index.html')).status, 200); n++; }
    })());
  }
  tasks.push((async () => {
    for (let i = 0; i < 20; i++) { assert.equal((await getOnce(port, '/index.html')).status, 200); n++; }
  })());
  tasks.push((async () => {
    for (let i = 0; i < 10; i++) { assert.equal((await getOnce(port, `/missing-${i}`)).status, 404); n++; }
  })());
  await Promise.all(tasks);
  for (const c of ka) c.drop();
  return n;
}

/** The sum of %I + %O over the io_log lines (the final status request left out). */
function loggedBytes(site: Site): { lines: number; bytes: number } {
  const lines = fs.readFileSync(path.join(site.dir, 'logs/io_log'), 'latin1').split('\n').filter((l) => l !== '' && !l.includes('final'));
  let bytes = 0;
  for (const l of lines) {
    const [i, o] = l.split(' ');
    bytes += Number(i) + Number(o);
  }
  return { lines: lines.length, bytes };
}

async function checkCounts(site: Site, port: number): Promise<Map<string, string>> {
  // A request is counted once logged, after its response went out (as in httpd), and a
  // worker publishes its counts at the end of that event-loop turn: give the workers that
  // served the requests so far (the start-up checks) a moment before taking the baseline.
  await sleep(300);
  const first = await auto(port, '');
  const before = Number(first.get('Total Accesses'));
  const n = await traffic(port);
  assert.equal(n, 70);
  // Let every worker log and publish its last requests.
  await sleep(300);
  const last = await auto(port, '&final');
  // The first status request is counted now; the final one is not (yet).
  assert.equal(Number(last.get('Total Accesses')), before + 1 + n);
  await waitFor('the io_log lines', () => loggedBytes(site).lines === before + 1 + n, 5000);
  assert.equal(Number(last.get('Total kBytes')), Math.floor(loggedBytes(site).bytes / 1024));
  assert.ok(Number(last.get('Total Duration')) >= 0);
  assert.ok(Number(last.get('BusyWorkers')) >= 1, 'the status request itself is busy');
  assert.match(last.get('Scoreboard') ?? '', /W/);
  return last;
}

test('server-status?auto counts match the requests sent (-X)', { timeout: 60000 }, async () => {
  const site = await statusSite('status-x', []);
  const proc = spawn(process.execPath, [PLUME, '-X', '-d', site.dir, '-f', site.conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  try {
    await waitFor(`the server (${err})`, async () => {
      try { return (await getOnce(site.port, '/index.html', 2000)).status === 200; } catch { return false; }
    }, 15000);
    const last = await checkCounts(site, site.port);
    assert.equal(last.get('Processes'), '1');
    assert.equal(last.get('ServerMPM'), 'event');
    // ServerVersion as Debian's prometheus-apache-exporter reads it (collector.go: the text
    // between the first and second '/', up to a space, as "%s.%02s%03s" of its dotted parts,
    // a float): 2.4.71 -> 2.04071. The line still names plume.
    const version = last.get('ServerVersion') ?? '';
    const [maj = '', min = '', patch = ''] = (version.split('/')[1] ?? '').split(' ')[0]!.split('.');
    assert.equal(Number.parseFloat(`${maj}.${min.padStart(2, '0')}${patch.padStart(3, '0')}`), 2.04071, version);
    assert.match(version, /\bplume\/\d+\.\d+\.\d+/);
  } finally {
    const exited = new Promise<void>((res) => proc.once('exit', () => res()));
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await exited;
    site.remove();
  }
});

test('server-status?auto counts match the requests sent (workers, retired ones included)', { timeout: 90000 }, async (t) => {
  const site = await statusSite('status-workers', ['StartServers 2', 'MaxConnectionsPerChild 15']);
  let srv: Awaited<ReturnType<typeof startPlume>> | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const probe = await auto(site.port, '&probe');
    if (Number(probe.get('Processes')) < 2) {
      t.skip('bin/plume without -X serves from one process');
      return;
    }
    const last = await checkCounts(site, site.port);
    assert.ok(Number(last.get('Processes')) >= 2);
  } finally {
    await srv?.stop();
    site.remove();
  }
});
