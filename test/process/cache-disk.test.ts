// mod_cache with mod_cache_disk (and mod_cache_socache over shmcb) across worker processes: a response one worker stores under
// CacheRoot is a HIT from disk in another (the first worker is stopped so the second must
// answer), with the header and data files in httpd's directory layout and the cache status in
// the access log (%{cache-status}e).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeSite, startPlume, getOnce, accessLog, waitFor, type Running } from './process-lib.js';

function filesUnder(top: string, dir = top): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(top, p));
    else out.push(path.relative(top, p));
  }
  return out;
}

test('a response cached by one worker is a HIT from disk in another', { timeout: 60000 }, async () => {
  const site = await makeSite('cache-disk', []);
  const root = path.join(site.dir, 'cacheroot');
  fs.mkdirSync(root, { mode: 0o777 });
  fs.chmodSync(root, 0o777);
  // An old file: the Last-Modified heuristic gives it a day of freshness.
  const old = new Date('2026-01-02T03:04:05Z');
  // (startPlume's readiness requests fetch /index.html: the test uses its own file.)
  fs.writeFileSync(path.join(site.dir, 'htdocs/c.html'), site.body);
  fs.utimesSync(path.join(site.dir, 'htdocs/c.html'), old, old);
  site.write([
    'StartServers 2',
    'LoadModule cache_module /usr/lib/apache2/modules/mod_cache.so',
    'LoadModule cache_disk_module /usr/lib/apache2/modules/mod_cache_disk.so',
    `CacheRoot ${root}`,
    'CacheDirLevels 1',
    'CacheDirLength 1',
    'CacheEnable disk /',
    'CacheHeader on',
    'LogFormat "%U %P [%{cache-status}e]" cachelog',
    `CustomLog ${site.dir}/logs/cache_log cachelog`,
  ]);
  let srv: Running | undefined;
  let stopped: number | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const log = `${site.dir}/logs/cache_log`;
    const first = await getOnce(site.port, '/c.html');
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-cache'), 'MISS from localhost');
    await waitFor('the first log line', () => accessLog(log).lines.some((l) => l.startsWith('/c.html ')));
    const line1 = accessLog(log).lines.find((l) => l.startsWith('/c.html '))!;
    const pid1 = Number(line1.split(' ')[1]);
    assert.match(line1, /\[cache miss: attempting entity save\]$/);
    // /c.html and startPlume's /index.html, each a header file and a data file, in one level of
    // one-character directories (CacheDirLevels 1, CacheDirLength 1).
    const files = filesUnder(root).sort();
    assert.equal(files.length, 4, files.join(', '));
    for (const f of files) assert.match(f, /^[A-Za-z0-9_@]\/[A-Za-z0-9_@]{21}\.(data|header)$/);
    const data = files.filter((f) => f.endsWith('.data'));
    for (const f of data) assert.equal(fs.readFileSync(path.join(root, f), 'latin1'), site.body);

    // Stop the worker that stored it: the other one has to answer, from the disk.
    const other = srv.workers().find((p) => p !== pid1);
    assert.ok(other !== undefined, 'two workers');
    process.kill(pid1, 'SIGSTOP');
    stopped = pid1;
    const second = await getOnce(site.port, '/c.html');
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('x-cache'), 'HIT from localhost');
    assert.equal(second.body.toString('latin1'), site.body);
    assert.ok(second.headers.has('age'));
    await waitFor('the second log line', () => accessLog(log).lines.filter((l) => l.startsWith('/c.html ')).length >= 2);
    const line2 = accessLog(log).lines.filter((l) => l.startsWith('/c.html '))[1]!;
    assert.equal(line2, `/c.html ${other} [cache hit]`);
  } finally {
    if (stopped !== undefined) process.kill(stopped, 'SIGCONT');
    await srv?.stop();
    site.remove();
  }
});

test('mod_cache_socache over shmcb: an entity stored by one worker is a HIT in another', { timeout: 60000 }, async () => {
  const site = await makeSite('cache-socache', []);
  const old = new Date('2026-01-02T03:04:05Z');
  fs.writeFileSync(path.join(site.dir, 'htdocs/s.html'), 'shared\n');
  fs.utimesSync(path.join(site.dir, 'htdocs/s.html'), old, old);
  site.write([
    'StartServers 2',
    'LoadModule cache_module /usr/lib/apache2/modules/mod_cache.so',
    'LoadModule cache_socache_module /usr/lib/apache2/modules/mod_cache_socache.so',
    'LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so',
    'CacheSocache shmcb',
    'CacheEnable socache /',
    'CacheHeader on',
    'LogFormat "%U %P [%{cache-status}e]" cachelog',
    `CustomLog ${site.dir}/logs/cache_log cachelog`,
  ]);
  let srv: Running | undefined;
  let stopped: number | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const log = `${site.dir}/logs/cache_log`;
    const first = await getOnce(site.port, '/s.html');
    assert.equal(first.headers.get('x-cache'), 'MISS from localhost');
    await waitFor('the first log line', () => accessLog(log).lines.some((l) => l.startsWith('/s.html ')));
    const pid1 = Number(accessLog(log).lines.find((l) => l.startsWith('/s.html '))!.split(' ')[1]);
    const other = srv.workers().find((p) => p !== pid1);
    assert.ok(other !== undefined, 'two workers');
    process.kill(pid1, 'SIGSTOP');
    stopped = pid1;
    const second = await getOnce(site.port, '/s.html');
    assert.equal(second.headers.get('x-cache'), 'HIT from localhost');
    assert.equal(second.body.toString('latin1'), 'shared\n');
    await waitFor('the second log line', () => accessLog(log).lines.filter((l) => l.startsWith('/s.html ')).length >= 2);
    assert.equal(accessLog(log).lines.filter((l) => l.startsWith('/s.html '))[1], `/s.html ${other} [cache hit]`);
  } finally {
    if (stopped !== undefined) process.kill(stopped, 'SIGCONT');
    await srv?.stop();
    site.remove();
  }
});
