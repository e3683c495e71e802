// The process model with real processes: a parent and its workers (bin/plume without -X),
// MaxConnectionsPerChild retiring workers under load without a failed request, MaxRequestWorkers
// keeping a further client waiting in the listen queue, a burst of connections shared between
// the workers, -X serving from one process, the benchmark's worker-mode command line, and (as
// root) workers running as User/Group.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { spawn } from 'node:child_process';
import {
  makeSite, startPlume, load, accessLog, getOnce, isComplete, sleep, waitFor, workersOf, childrenOf, uidOf, alive, KeepAliveClient,
  PLUME, ROOT, type Running, type Response,
} from './process-lib.js';

test('MaxConnectionsPerChild retires and replaces workers under load; every request is answered whole', { timeout: 90000 }, async () => {
  const site = await makeSite('mcpc', ['StartServers 2', 'MaxConnectionsPerChild 20']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const first = new Set(srv.workers());
    assert.equal(first.size, 2);
    await waitFor('the startup check in the access log', () => accessLog(site.accessLog).lines.length > 0, 5000);
    const before = accessLog(site.accessLog).lines.length;
    // 3 keep-alive clients and 5 clients opening a connection per request: 400 requests,
    // ~250 connections, so each worker is retired several times.
    const r = await load(site.port, site.body, { clients: 8, keepAlive: 3, perClient: 50 });
    assert.deepEqual(r.failures, []);
    assert.equal(r.ok, 400);
    await waitFor('the access log to have every request', () => accessLog(site.accessLog).lines.length >= before + 400, 5000);
    const log = accessLog(site.accessLog);
    assert.equal(log.lines.length, before + 400, 'one access log line per request');
    assert.ok(log.pids.size > 4, `workers served: ${[...log.pids].join(' ')}`);
    // Retired workers are gone and replaced: two serve, none of the first ones.
    await waitFor('two workers again', () => srv!.workers().length === 2, 5000);
    const now = srv.workers();
    assert.ok(now.every((p) => !first.has(p)), `first ${[...first]} now ${now}`);
    for (const p of first) assert.equal(alive(p), false, `worker ${p} still running`);
  } finally {
    await srv?.stop();
    site.remove();
  }
});

/** A client that connects and sends part of a request, holding its connection. */
function slowClient(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => { s.write('GET /index.html HTTP/1.1\r\nHost: loc'); resolve(s); });
    s.on('error', reject);
  });
}

test('MaxRequestWorkers 2: two slow clients hold the only worker; a third waits until one goes', { timeout: 60000 }, async () => {
  const site = await makeSite('mrw', ['StartServers 1', 'ThreadsPerChild 2', 'MaxRequestWorkers 2']);
  let srv: Running | undefined;
  const socks: net.Socket[] = [];
  try {
    srv = await startPlume(site, { workers: 1 });
    assert.equal(srv.workers().length, 1);
    // Let the startup check's connection close before the slow clients take the share.
    await sleep(200);
    socks.push(await slowClient(site.port), await slowClient(site.port));
    await sleep(300);
    const started = Date.now();
    let answeredAt = 0;
    const third = getOnce(site.port, '/index.html', 20000).then((res) => { answeredAt = Date.now(); return res; });
    await sleep(1200);
    assert.equal(answeredAt, 0, 'the third client was answered while both shares were held');
    // One slow client finishes its request: its share frees and the third is served.
    socks[0]!.write('alhost\r\nConnection: close\r\n\r\n');
    const res = await third;
    assert.ok(isComplete(res, site.body));
    assert.ok(answeredAt - started >= 1200);
    // The other slow client is still held, and is answered in turn.
    const last = await new Promise<string>((resolve) => {
      let got = '';
      socks[1]!.on('data', (d: Buffer) => { got += d.toString('latin1'); });
      socks[1]!.on('close', () => resolve(got));
      socks[1]!.write('alhost\r\nConnection: close\r\n\r\n');
    });
    assert.match(last, /^HTTP\/1\.1 200 OK/);
  } finally {
    for (const s of socks) s.destroy();
    await srv?.stop();
    site.remove();
  }
});

test('with the event MPM a kept-alive idle connection does not hold a share', { timeout: 60000 }, async () => {
  const site = await makeSite('mrw-ka', ['StartServers 1', 'ThreadsPerChild 1', 'MaxRequestWorkers 1', 'AsyncRequestWorkerFactor 2']);
  let srv: Running | undefined;
  const socks: net.Socket[] = [];
  try {
    srv = await startPlume(site, { workers: 1 });
    await sleep(200);
    // A keep-alive connection served once, now idle between requests.
    const ka = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(site.port, '127.0.0.1', () => s.write('GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n'));
      let got = '';
      s.on('data', (d: Buffer) => { got += d.toString('latin1'); if (got.endsWith(site.body)) resolve(s); });
      s.on('error', reject);
    });
    socks.push(ka);
    await sleep(100);
    const res = await getOnce(site.port, '/index.html', 5000);
    assert.ok(isComplete(res, site.body));
  } finally {
    for (const s of socks) s.destroy();
    await srv?.stop();
    site.remove();
  }
});

test('-X serves from one process', { timeout: 30000 }, async () => {
  const site = await makeSite('one', ['StartServers 4']);
  const proc = spawn(process.execPath, [PLUME, '-X', '-d', site.dir, '-f', site.conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  const exited = new Promise((r) => proc.once('exit', r));
  try {
    await waitFor('-X to answer', async () => {
      if (proc.exitCode !== null) throw new Error(`-X exited: ${err}`);
      try { return (await getOnce(site.port, '/index.html', 1000)).status === 200; } catch { return false; }
    }, 15000);
    assert.deepEqual(childrenOf(proc.pid!), []);
    const res = await getOnce(site.port);
    assert.ok(isComplete(res, site.body));
  } finally {
    proc.kill('SIGTERM');
    await exited;
    site.remove();
  }
});

test('the benchmark\'s worker-mode command line (-D FOREGROUND -c "StartServers N") runs N workers', { timeout: 30000 }, async () => {
  const site = await makeSite('bench');
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 3, args: ['-c', 'StartServers 3'] });
    // startPlume waited for three workers accepting.
    assert.equal(srv.workers().length, 3);
    assert.equal(workersOf(srv.pid).length, childrenOf(srv.pid).length, 'no other child process');
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('as root the parent keeps root and the workers run as User', { skip: !ROOT && 'not running as root', timeout: 30000 }, async () => {
  const site = await makeSite('user', ['StartServers 2']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    assert.equal(uidOf(srv.pid), 0);
    const nobody = 65534;
    // A worker reads the configuration as root, then becomes User before it serves.
    await waitFor('both workers to serve', () => srv!.workers().length === 2 && srv!.workers().every((w) => uidOf(w) === nobody), 10000);
    assert.equal(uidOf(srv.pid), 0);
    assert.ok(isComplete(await getOnce(site.port), site.body));
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('a burst of keep-alive connections is shared between the workers, not taken by the first awake', { timeout: 60000 }, async () => {
  const site = await makeSite('balance', ['StartServers 2']);
  let srv: Running | undefined;
  const clients: KeepAliveClient[] = [];
  try {
    srv = await startPlume(site, { workers: 2 });
    await waitFor('the startup check in the access log', () => accessLog(site.accessLog).lines.length > 0, 5000);
    await sleep(300);
    const before = accessLog(site.accessLog).lines.length;
    // 40 connections wait in the listen queue, each with its first request sent, while the
    // workers are stopped; the first resumes 100 ms before the second (as when one worker
    // gets a CPU first): alone, it could take all 40.
    const workers = srv.workers();
    for (const pid of workers) process.kill(pid, 'SIGSTOP');
    let pending: Promise<Response[]>;
    try {
      for (let i = 0; i < 40; i++) clients.push(new KeepAliveClient(site.port));
      pending = Promise.all(clients.map((c) => c.get()));
      await sleep(500);
      process.kill(workers[0]!, 'SIGCONT');
      await sleep(100);
    } finally {
      for (const pid of workers) process.kill(pid, 'SIGCONT');
    }
    const answers = await pending;
    assert.ok(answers.every((r) => isComplete(r, site.body)));
    await waitFor('40 lines in the access log', () => accessLog(site.accessLog).lines.length >= before + 40, 5000);
    const perWorker = new Map<number, number>();
    for (const l of accessLog(site.accessLog).lines.slice(before)) {
      const pid = Number(l.slice(l.lastIndexOf(' ') + 1));
      perWorker.set(pid, (perWorker.get(pid) ?? 0) + 1);
    }
    const counts = [...perWorker.values()];
    // Fair is 20 each; a worker stops accepting above 20 + 10 (worker.ts, BALANCE_*).
    assert.equal(counts.length, 2, `connections per worker: ${counts.join('/')}`);
    assert.ok(Math.min(...counts) >= 8, `connections per worker: ${counts.join('/')}`);
  } finally {
    for (const c of clients) c.drop();
    await srv?.stop();
    site.remove();
  }
});
