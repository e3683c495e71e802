// The process model's numbers from the MPM directives: how many workers, each one's share of
// MaxRequestWorkers, event's AsyncRequestWorkerFactor, MaxConnectionsPerChild, and the
// notices each MPM logs (measured on httpd 2.4.71 with event, worker and prefork loaded).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfiguration } from '../../../src/server/config/build.js';
import { catalogue } from '../../../src/modules/index.js';
import { processModel, mpmMessages } from '../../../src/mpm/process-model.js';

async function model(lines: readonly string[], mpm = 'event', cpus = 4) {
  const text = [`LoadModule mpm_${mpm}_module modules/mod_mpm_${mpm}.so`, 'ServerName localhost', 'Listen 127.0.0.1:18080', ...lines].join('\n') + '\n';
  const ctx = await loadConfiguration({
    argv0: 'plume', serverRoot: '/nonexistent/plume-mpm-test', configFile: '/nonexistent/plume-mpm-test/httpd.conf',
    defines: [], preDirectives: [], postDirectives: [], documentRootCheck: false, preflight: false,
    readConfigFile: () => text,
  }, catalogue);
  return processModel(ctx, cpus);
}

test('event defaults: one worker per CPU, MaxRequestWorkers 400 shared, factor 2', async () => {
  const m = await model([]);
  assert.deepEqual(
    { mpm: m.mpm, serverLimit: m.serverLimit, workers: m.workers, share: m.share, asyncFactor: m.asyncFactor, mcpc: m.maxConnectionsPerChild, backlog: m.backlog },
    { mpm: 'mpm_event', serverLimit: 16, workers: 4, share: 100, asyncFactor: 2, mcpc: 0, backlog: 511 },
  );
});

test('StartServers sets the workers, within ServerLimit and what MaxRequestWorkers allows', async () => {
  assert.equal((await model(['StartServers 3'])).workers, 3);
  assert.equal((await model(['StartServers 40'])).workers, 16);
  // MaxRequestWorkers stays 400 (16 x 25) when ServerLimit alone is raised, as in httpd.
  assert.equal((await model(['StartServers 40', 'ServerLimit 20'])).workers, 16);
  assert.equal((await model(['StartServers 40', 'ServerLimit 20', 'MaxRequestWorkers 500'])).workers, 20);
  // MaxRequestWorkers 50 / ThreadsPerChild 25: two processes at most, 25 connections each.
  const m = await model(['StartServers 8', 'MaxRequestWorkers 50']);
  assert.deepEqual([m.workers, m.share], [2, 25]);
  // MaxClients is MaxRequestWorkers' old name.
  assert.deepEqual(await model(['StartServers 8', 'MaxClients 50']).then((x) => [x.workers, x.share]), [2, 25]);
  // One worker of two.
  const one = await model(['StartServers 1', 'ThreadsPerChild 2', 'MaxRequestWorkers 2']);
  assert.deepEqual([one.workers, one.share], [1, 2]);
  // Below ThreadsPerChild, check_config raised it (AH00512) to 25.
  assert.equal((await model(['StartServers 1', 'MaxRequestWorkers 2'])).share, 25);
});

test('MaxConnectionsPerChild (and MaxRequestsPerChild), AsyncRequestWorkerFactor, GracefulShutdownTimeout', async () => {
  assert.equal((await model(['MaxConnectionsPerChild 20'])).maxConnectionsPerChild, 20);
  assert.equal((await model(['MaxRequestsPerChild 7'])).maxConnectionsPerChild, 7);
  assert.equal((await model(['AsyncRequestWorkerFactor 3'])).asyncFactor, 3);
  assert.equal((await model(['GracefulShutdownTimeout 9'])).gracefulShutdownTimeout, 9);
  assert.equal((await model(['ListenBacklog 100'])).backlog, 100);
});

test('worker and prefork: every connection holds a share', async () => {
  const w = await model(['StartServers 2'], 'worker');
  assert.deepEqual([w.mpm, w.workers, w.share, w.asyncFactor], ['mpm_worker', 2, 200, undefined]);
  const p = await model(['StartServers 2'], 'prefork');
  assert.deepEqual([p.mpm, p.serverLimit, p.workers, p.share, p.asyncFactor], ['mpm_prefork', 256, 2, 128, undefined]);
  const q = await model(['StartServers 5', 'MaxRequestWorkers 3'], 'prefork');
  assert.deepEqual([q.workers, q.share], [3, 1]);
});

test('each MPM\'s notices carry its own AH numbers', () => {
  const e = mpmMessages('mpm_event');
  assert.match(e.resuming, /^AH00489: Apache\/2\.4\.71 \(Unix\) plume\/[\d.]+ configured -- resuming normal operations$/);
  assert.equal(e.sigterm, 'AH00491: caught SIGTERM, shutting down');
  assert.equal(e.sigwinch, 'AH00492: caught SIGWINCH, shutting down gracefully');
  assert.equal(e.sigusr1, 'AH00493: SIGUSR1 received.  Doing graceful restart');
  assert.equal(e.sighup, 'AH00494: SIGHUP received.  Attempting to restart');
  const w = mpmMessages('mpm_worker');
  assert.deepEqual([w.built.slice(0, 7), w.sigterm, w.sigwinch, w.sigusr1, w.sighup], ['AH00293', 'AH00295: caught SIGTERM, shutting down', 'AH00296: caught SIGWINCH, shutting down gracefully', 'AH00297: SIGUSR1 received.  Doing graceful restart', 'AH00298: SIGHUP received.  Attempting to restart']);
  const p = mpmMessages('mpm_prefork');
  assert.deepEqual([p.resuming.slice(0, 7), p.sigterm, p.sigwinch, p.sigusr1, p.sighup], ['AH00163', 'AH00169: caught SIGTERM, shutting down', 'AH00170: caught SIGWINCH, shutting down gracefully', 'AH00171: Graceful restart requested, doing restart', 'AH00173: SIGHUP received.  Attempting to restart']);
});

/** What `plume -t` prints on stderr for a configuration with `lines`. */
async function checkWarnings(lines: readonly string[], mpm = 'event'): Promise<string[]> {
  const out: string[] = [];
  const text = [`LoadModule mpm_${mpm}_module modules/mod_mpm_${mpm}.so`, 'ServerName localhost', 'Listen 127.0.0.1:18080', ...lines].join('\n') + '\n';
  await loadConfiguration({
    argv0: 'plume', serverRoot: '/nonexistent/plume-mpm-test', configFile: '/nonexistent/plume-mpm-test/httpd.conf',
    defines: [], preDirectives: [], postDirectives: [], documentRootCheck: false, preflight: true,
    readConfigFile: () => text,
    startupSink: { description: 'test', write: (l: string) => { out.push(...l.split('\n').filter((x) => x !== '')); }, flush: () => {}, close: () => {} },
  }, catalogue);
  return out;
}

test('check_config of the threaded MPMs warns as httpd 2.4.71 does (apache2 -t)', async () => {
  const cases: [string[], string[], string][] = [
    [['StartServers 0'], ['AH00517: WARNING: StartServers of 0 not allowed, increasing to 1.'], 'event'],
    [['ThreadsPerChild 0'], [
      'AH00509: WARNING: ThreadsPerChild of 0 not allowed, increasing to 1.',
      'AH00515: WARNING: MaxRequestWorkers of 400 would require 400 servers and would exceed ServerLimit of 16, decreasing to 16. To increase, please see the ServerLimit directive.',
    ], 'event'],
    [['ServerLimit 0'], [
      'AH00499: WARNING: ServerLimit of 0 not allowed, increasing to 1.',
      'AH00515: WARNING: MaxRequestWorkers of 400 would require 16 servers and would exceed ServerLimit of 1, decreasing to 25. To increase, please see the ServerLimit directive.',
    ], 'event'],
    [['ServerLimit 30000'], ['AH00497: WARNING: ServerLimit of 30000 exceeds compile-time limit of 20000 servers, decreasing to 20000.'], 'event'],
    [['MinSpareThreads 0'], ['AH00519: WARNING: MinSpareThreads of 0 not allowed, increasing to 1 to avoid almost certain server failure. Please read the documentation.'], 'event'],
    [['ThreadsPerChild 100'], [
      'AH00507: WARNING: ThreadsPerChild of 100 exceeds ThreadLimit of 64 threads, decreasing to 64. To increase, please see the ThreadLimit directive.',
      'AH00513: WARNING: MaxRequestWorkers of 400 is not an integer multiple of ThreadsPerChild of 64, decreasing to nearest multiple 384, for a maximum of 6 servers.',
    ], 'event'],
    [['ThreadLimit 0'], [
      'AH00504: WARNING: ThreadLimit of 0 not allowed, increasing to 1.',
      'AH00507: WARNING: ThreadsPerChild of 25 exceeds ThreadLimit of 1 threads, decreasing to 1. To increase, please see the ThreadLimit directive.',
      'AH00515: WARNING: MaxRequestWorkers of 400 would require 400 servers and would exceed ServerLimit of 16, decreasing to 16. To increase, please see the ServerLimit directive.',
    ], 'event'],
    [['ThreadsPerChild 10'], ['AH00515: WARNING: MaxRequestWorkers of 400 would require 40 servers and would exceed ServerLimit of 16, decreasing to 160. To increase, please see the ServerLimit directive.'], 'event'],
    [['MaxSpareThreads 10'], [], 'event'],
    // mpm_worker: the same texts, its own numbers.
    [['MaxRequestWorkers 30'], ['AH00316: WARNING: MaxRequestWorkers of 30 is not an integer multiple of ThreadsPerChild of 25, decreasing to nearest multiple 25, for a maximum of 1 servers.'], 'worker'],
    [['MaxRequestWorkers 10'], ['AH00314: WARNING: MaxRequestWorkers of 10 is less than ThreadsPerChild of 25, increasing to 25. MaxRequestWorkers must be at least as large as the number of threads in a single server.'], 'worker'],
    [['ServerLimit 0'], [
      'AH00302: WARNING: ServerLimit of 0 not allowed, increasing to 1.',
      'AH00318: WARNING: MaxRequestWorkers of 400 would require 16 servers and would exceed ServerLimit of 1, decreasing to 25. To increase, please see the ServerLimit directive.',
    ], 'worker'],
    [['StartServers 0'], ['AH00320: WARNING: StartServers of 0 not allowed, increasing to 1.'], 'worker'],
    [['MinSpareThreads 0'], ['AH00322: WARNING: MinSpareThreads of 0 not allowed, increasing to 1 to avoid almost certain server failure. Please read the documentation.'], 'worker'],
  ];
  for (const [lines, expected, mpm] of cases) assert.deepEqual(await checkWarnings(lines, mpm), expected, `${mpm}: ${lines.join('; ')}`);
  // The adjusted numbers are the ones the process model runs with.
  const m = await model(['ThreadsPerChild 10', 'StartServers 40']);
  assert.deepEqual([m.workers, m.share], [16, 10]);
});
