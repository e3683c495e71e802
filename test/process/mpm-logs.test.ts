// Logs under the process model, with real processes: every worker appends to the same access
// log and error log (whole lines, none lost); after the logs are renamed, a graceful restart
// sends new lines to fresh files (logrotate); a piped log has one logger process, the
// parent's, whatever the number of workers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeSite, startPlume, load, accessLog, getOnce, waitFor, childrenOf, alive, type Running } from './process-lib.js';

const LINE = /^127\.0\.0\.1 - - \[[^\]]+\] "GET \/[^ ]* HTTP\/1\.1" (200|404) \d+ \d+$/;

test('all workers append whole lines to one access log and one error log', { timeout: 60000 }, async () => {
  const site = await makeSite('logs', ['StartServers 2', 'LogLevel info']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const workers = srv.workers();
    await waitFor('the startup check\'s line', () => accessLog(site.accessLog).lines.length > 0, 5000);
    const before = accessLog(site.accessLog).lines.length;
    const ok = await load(site.port, site.body, { clients: 6, keepAlive: 0, perClient: 40 });
    assert.deepEqual(ok.failures, []);
    const missing = await load(site.port, '', { clients: 6, keepAlive: 0, perClient: 10, path: '/missing' });
    assert.equal(missing.failures.filter((f) => /status 404/.test(f)).length, 60, 'every /missing request is a 404');
    await waitFor('every line', () => accessLog(site.accessLog).lines.length >= before + 300, 5000);
    const log = accessLog(site.accessLog);
    assert.equal(log.lines.length, before + 300);
    for (const l of log.lines) assert.match(l, LINE);
    assert.deepEqual([...log.pids].sort(), [...workers].sort(), 'both workers wrote to the access log');
    // The 404s: core's AH00128 at info, from both workers, in the one error log.
    const ah00128 = (): string[] => fs.readFileSync(site.errorLog, 'utf8').split('\n').filter((l) => l.includes('AH00128'));
    await waitFor('the 60 AH00128 lines', () => ah00128().length >= 60, 5000);
    const errors = ah00128();
    assert.equal(errors.length, 60);
    const pids = new Set(errors.map((l) => Number(/\[pid (\d+):tid/.exec(l)?.[1])));
    assert.deepEqual([...pids].sort(), [...workers].sort());
    for (const l of errors) assert.match(l, /^\[[^\]]+\] \[core:info\] \[pid \d+:tid \d+\] \[client 127\.0\.0\.1:\d+\] AH00128: File does not exist: .*\/htdocs\/missing$/);
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('logrotate: after the logs are renamed, a graceful restart writes to fresh files', { timeout: 60000 }, async () => {
  const site = await makeSite('rotate', ['StartServers 2']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const first = await load(site.port, site.body, { clients: 4, keepAlive: 2, perClient: 10 });
    assert.deepEqual(first.failures, []);
    await waitFor('the first lines', () => accessLog(site.accessLog).lines.length >= 41, 5000);
    const old = srv.workers();
    fs.renameSync(site.accessLog, site.accessLog + '.1');
    fs.renameSync(site.errorLog, site.errorLog + '.1');
    srv.signal('SIGUSR1');
    await waitFor('new workers', () => { const w = srv!.workers(); return w.length === 2 && w.every((p) => !old.includes(p)) && old.every((p) => !alive(p)); }, 15000);
    const second = await load(site.port, site.body, { clients: 4, keepAlive: 2, perClient: 10 });
    assert.deepEqual(second.failures, []);
    await waitFor('the new access log', () => accessLog(site.accessLog).lines.length >= 40, 5000);
    assert.equal(accessLog(site.accessLog).lines.length, 40, 'only requests after the restart in the new file');
    assert.equal(accessLog(site.accessLog + '.1').lines.length, 41, 'the old file kept what it had, and nothing more');
    // httpd's order: the restart notice in the old error log, "resuming" in the new one.
    assert.match(fs.readFileSync(site.errorLog + '.1', 'utf8'), /AH00493: SIGUSR1 received\.  Doing graceful restart\n$/);
    assert.match(fs.readFileSync(site.errorLog, 'utf8'), /^\[[^\]]+\] \[mpm_event:notice\] \[pid \d+:tid \d+\] AH00489: /);
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('a piped log runs one logger, the parent\'s, for all workers; a restart starts a new one', { timeout: 60000 }, async () => {
  const piped = (dir: string): string => path.join(dir, 'logs/piped_log');
  const site = await makeSite('piped', []);
  const extra = ['StartServers 3', `CustomLog "|$/bin/cat >> ${piped(site.dir)}" pid`];
  site.write(extra);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 3 });
    const loggers = (): number[] => childrenOf(srv!.pid).filter((p) => p.cmdline.includes('/bin/cat')).map((p) => p.pid);
    assert.equal(loggers().length, 1);
    for (const w of srv.workers()) assert.deepEqual(childrenOf(w), [], `worker ${w} has no child process`);
    await waitFor('the startup check\'s line', () => accessLog(site.accessLog).lines.length > 0, 5000);
    const before = accessLog(site.accessLog).lines.length;
    const r = await load(site.port, site.body, { clients: 6, keepAlive: 3, perClient: 30 });
    assert.deepEqual(r.failures, []);
    await waitFor('the piped log', () => accessLog(piped(site.dir)).lines.length >= before + 180, 5000);
    const log = accessLog(piped(site.dir));
    assert.equal(log.lines.length, before + 180);
    for (const l of log.lines) assert.match(l, LINE);
    assert.ok(log.pids.size >= 2, 'several workers wrote through the one pipe');
    // A graceful restart: a new logger for the new generation; the old one ends with the old
    // workers (when the last writer of its pipe is gone).
    const first = loggers()[0]!;
    srv.signal('SIGUSR1');
    await waitFor('one logger again, a new one', () => { const l = loggers(); return l.length === 1 && l[0] !== first && !alive(first); }, 15000);
    const res = await getOnce(site.port);
    assert.equal(res.status, 200);
    await waitFor('the line of the new generation', () => accessLog(piped(site.dir)).lines.length >= before + 181, 5000);
  } finally {
    await srv?.stop();
    site.remove();
  }
});
