// Signals and -k with real processes: a graceful restart (SIGUSR1) under a steady load of
// keep-alive clients loses no request; a restart (SIGHUP) replaces the workers; a restart with
// a configuration that cannot be used logs httpd's messages and keeps the old one serving,
// also in workers started afterwards; the PidFile; -k stop/graceful/restart/start; SIGTERM and
// SIGWINCH stop the parent and every worker. The messages were measured on httpd 2.4.71
// (/usr/sbin/apache2 with the same kind of configuration, the signals sent by kill).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import {
  makeSite, startPlume, load, accessLog, getOnce, isComplete, sleep, waitFor, alive, workersOf, freePort, PLUME, type Running, type Site,
} from './process-lib.js';

function errorLog(site: Site): string {
  try { return fs.readFileSync(site.errorLog, 'utf8'); } catch { return ''; }
}

/** Waits until none of `old` is a worker any more and `n` new ones serve. */
async function replaced(srv: Running, old: readonly number[], n: number): Promise<number[]> {
  await waitFor('the workers to be replaced', () => {
    const now = srv.workers();
    return now.length === n && now.every((p) => !old.includes(p)) && old.every((p) => !alive(p));
  }, 15000);
  return srv.workers();
}

/** Runs plume's command line (-k ...) to its exit; resolves with its status and stdout. */
function plumeCommand(site: Site, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [PLUME, '-d', site.dir, '-f', site.conf, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
    p.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
    // 'exit', not 'close': a daemon started by -k start keeps the inherited stderr open.
    p.on('exit', (code) => setTimeout(() => resolve({ code, stdout, stderr }), 50));
  });
}

test('a graceful restart (SIGUSR1) under a steady keep-alive load answers every request whole', { timeout: 90000 }, async () => {
  const site = await makeSite('graceful', ['StartServers 2']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const first = srv.workers();
    let stopping = false;
    // Six keep-alive clients and two opening a connection per request, for about 4 s.
    const running = load(site.port, site.body, { clients: 8, keepAlive: 6, perClient: 1e9, until: () => stopping });
    let before = first;
    for (let i = 0; i < 3; i++) {
      await sleep(900);
      srv.signal('SIGUSR1');
      before = await replaced(srv, before, 2);
    }
    await sleep(500);
    stopping = true;
    const r = await running;
    assert.deepEqual(r.failures, []);
    assert.ok(r.ok > 300, `only ${r.ok} requests in the run`);
    const log = errorLog(site);
    assert.equal(log.match(/\[mpm_event:notice\] \[pid \d+:tid \d+\] AH00493: SIGUSR1 received\.  Doing graceful restart\n/g)?.length, 3);
    assert.equal(log.match(/AH00489: Apache\/2\.4\.71 \(Unix\) plume\/[\d.]+ configured -- resuming normal operations\n/g)?.length, 4);
    // Every request answered is logged once, by the worker that served it.
    await waitFor('the access log', () => accessLog(site.accessLog).lines.length >= r.ok, 5000);
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('a restart (SIGHUP) reads the configuration again and replaces the workers; Listen changes take effect', { timeout: 60000 }, async () => {
  const site = await makeSite('hup', ['StartServers 2']);
  const port2 = await freePort();
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const first = srv.workers();
    const ka = await getOnce(site.port);
    assert.ok(isComplete(ka, site.body));
    await assert.rejects(getOnce(port2), /ECONNREFUSED/);
    fs.mkdirSync(path.join(site.dir, 'htdocs2'));
    fs.writeFileSync(path.join(site.dir, 'htdocs2/index.html'), 'second\n');
    site.write(['StartServers 2', `DocumentRoot "${site.dir}/htdocs2"`, `Listen 127.0.0.1:${port2}`]);
    srv.signal('SIGHUP');
    const second = await replaced(srv, first, 2);
    for (const p of [site.port, port2]) assert.equal((await getOnce(p)).body.toString(), 'second\n');
    assert.match(errorLog(site), /\[mpm_event:notice\] \[pid \d+:tid \d+\] AH00494: SIGHUP received\.  Attempting to restart\n/);
    // Listen gone on a graceful restart: the port closes once the old workers have gone.
    site.write(['StartServers 2', `DocumentRoot "${site.dir}/htdocs2"`]);
    srv.signal('SIGUSR1');
    await replaced(srv, second, 2);
    await assert.rejects(getOnce(port2), /ECONNREFUSED/);
    assert.equal((await getOnce(site.port)).body.toString(), 'second\n');
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('a restart with a broken configuration logs httpd\'s messages and the old one keeps serving', { timeout: 90000 }, async () => {
  // MaxConnectionsPerChild 3: workers are replaced all along; the replacements must serve the
  // configuration the parent checked, not the file as it is on disk now.
  const extra = ['StartServers 2', 'MaxConnectionsPerChild 3'];
  const site = await makeSite('broken', extra);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const before = srv.workers();
    const good = fs.readFileSync(site.conf, 'utf8');
    const lines = good.split('\n').length;
    fs.writeFileSync(site.conf, good + 'BogusDirective on\n');
    srv.signal('SIGUSR1');
    const expected =
      `AH00493: SIGUSR1 received.  Doing graceful restart\n` +
      `AH00526: Syntax error on line ${lines} of ${site.conf}:\n` +
      `Invalid command 'BogusDirective', perhaps misspelled or defined by a module not included in the server configuration\n`;
    await waitFor('the restart to fail', () => errorLog(site).includes(expected), 10000);
    assert.match(errorLog(site), /\[mpm_event:notice\] \[pid \d+:tid \d+\] AH00493: SIGUSR1 received\.  Doing graceful restart\nAH00526: Syntax error on line/);
    assert.deepEqual(srv.workers().sort(), before.sort(), 'no worker was replaced by the failed restart');
    // The same with SIGHUP.
    srv.signal('SIGHUP');
    await waitFor('the second restart to fail', () => errorLog(site).includes(expected.replace('AH00493: SIGUSR1 received.  Doing graceful restart', 'AH00494: SIGHUP received.  Attempting to restart')), 10000);
    // A valid but different configuration on disk, not signalled: workers started from now on
    // (MaxConnectionsPerChild) still serve what the parent read.
    fs.mkdirSync(path.join(site.dir, 'htdocs2'));
    fs.writeFileSync(path.join(site.dir, 'htdocs2/index.html'), 'second\n');
    site.write([...extra, `DocumentRoot "${site.dir}/htdocs2"`]);
    const r = await load(site.port, site.body, { clients: 2, keepAlive: 0, perClient: 15 });
    assert.deepEqual(r.failures, []);
    assert.ok(accessLog(site.accessLog).pids.size > 2, 'workers were replaced meanwhile');
    // post_config refusing (a TypesConfig that cannot be read): httpd's two lines.
    site.write([...extra, 'TypesConfig /nonexistent/mime.types']);
    srv.signal('SIGUSR1');
    await waitFor('the post_config failure', () => /AH00020: Configuration Failed, exiting\n/.test(errorLog(site)), 10000);
    assert.match(errorLog(site), /\[mime:error\] \[pid \d+:tid \d+\] \(2\)No such file or directory: AH01597: could not open mime types config file \/nonexistent\/mime\.types\.\n\[[^\]]+\] \[:emerg\] \[pid \d+:tid \d+\] AH00020: Configuration Failed, exiting\n/);
    assert.ok(isComplete(await getOnce(site.port), site.body));
    // Fixed: the next graceful restart takes the new configuration.
    site.write([...extra, `DocumentRoot "${site.dir}/htdocs2"`]);
    srv.signal('SIGUSR1');
    await waitFor('the new configuration to serve', async () => (await getOnce(site.port)).body.toString() === 'second\n', 15000);
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('the PidFile, -k graceful, -k restart, -k stop; no worker outlives its parent', { timeout: 90000 }, async () => {
  const site = await makeSite('k', ['StartServers 2', 'LogLevel info']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    assert.equal(fs.readFileSync(site.pidFile, 'utf8'), `${srv.pid}\n`);
    let workers = srv.workers();
    let r = await plumeCommand(site, ['-k', 'graceful']);
    assert.equal(r.code, 0);
    workers = await replaced(srv, workers, 2);
    r = await plumeCommand(site, ['-k', 'restart']);
    assert.equal(r.code, 0);
    workers = await replaced(srv, workers, 2);
    assert.ok(isComplete(await getOnce(site.port), site.body));
    r = await plumeCommand(site, ['-k', 'stop']);
    assert.equal(r.code, 0);
    await waitFor('the parent to exit', () => srv!.proc.exitCode !== null, 10000);
    assert.equal(srv.proc.exitCode, 0);
    for (const w of workers) assert.equal(alive(w), false, `worker ${w} outlived its parent`);
    assert.equal(fs.existsSync(site.pidFile), false, 'the PidFile was removed');
    assert.match(errorLog(site), /\[core:info\] \[pid \d+:tid \d+\] AH00096: removed PID file .*httpd\.pid \(pid=\d+\)\n\[[^\]]+\] \[mpm_event:notice\] \[pid \d+:tid \d+\] AH00491: caught SIGTERM, shutting down\n$/);
    r = await plumeCommand(site, ['-k', 'stop']);
    assert.equal(r.stdout, 'httpd (no pid file) not running\n');
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('-k start runs the server detached; SIGTERM to its pid stops the parent and every worker', { timeout: 60000 }, async () => {
  const site = await makeSite('kstart', ['StartServers 2']);
  let pid = 0;
  try {
    const r = await plumeCommand(site, ['-k', 'start']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    pid = Number(fs.readFileSync(site.pidFile, 'utf8'));
    await waitFor('two workers', () => workersOf(pid).length === 2, 10000);
    await waitFor('the server to answer', async () => {
      try { return isComplete(await getOnce(site.port, '/index.html', 2000), site.body); } catch { return false; }
    }, 10000);
    const again = await plumeCommand(site, ['-k', 'start']);
    assert.equal(again.stdout, `httpd (pid ${pid}) already running\n`);
    const workers = workersOf(pid).map((w) => w.pid);
    process.kill(pid, 'SIGTERM');
    await waitFor('the parent to exit', () => !alive(pid), 10000);
    await waitFor('the workers to exit', () => workers.every((w) => !alive(w)), 5000);
    assert.equal(fs.existsSync(site.pidFile), false);
    // A port in use: -k start reports it and fails, as httpd's does.
    const blocker = net.createServer();
    await new Promise<void>((res) => blocker.listen(site.port, '127.0.0.1', () => res()));
    try {
      const busy = await plumeCommand(site, ['-k', 'start']);
      assert.equal(busy.code, 1);
      assert.equal(busy.stderr, `(98)Address already in use: AH00072: make_sock: could not bind to address 127.0.0.1:${site.port}\nno listening sockets available, shutting down\nAH00015: Unable to open logs\n`);
    } finally {
      blocker.close();
    }
  } finally {
    if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
    // A server the failing -k start might have left running all the same.
    try {
      const left = Number(fs.readFileSync(site.pidFile, 'utf8'));
      if (left > 0 && alive(left)) process.kill(left, 'SIGTERM');
    } catch { /* none */ }
    site.remove();
  }
});

test('graceful stop (SIGWINCH) finishes the request in hand; GracefulShutdownTimeout bounds the wait', { timeout: 60000 }, async () => {
  const site = await makeSite('winch', ['StartServers 1', 'LogLevel info']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 1 });
    const workers = srv.workers();
    const slow = await new Promise<net.Socket>((resolve) => {
      const s = net.connect(site.port, '127.0.0.1', () => { s.write('GET /index.html HTTP/1.1\r\nHost: loc'); resolve(s); });
    });
    let got = '';
    slow.on('data', (d: Buffer) => { got += d.toString('latin1'); });
    await sleep(200);
    srv.signal('SIGWINCH');
    await waitFor('the graceful stop to be logged', () => /AH00492: caught SIGWINCH, shutting down gracefully\n/.test(errorLog(site)), 5000);
    assert.match(errorLog(site), /AH00096: removed PID file .*\n\[[^\]]+\] \[mpm_event:notice\] \[pid \d+:tid \d+\] AH00492: caught SIGWINCH, shutting down gracefully\n/);
    await sleep(300);
    assert.equal(srv.proc.exitCode, null, 'the parent waits for the worker');
    slow.write('alhost\r\n\r\n');
    await waitFor('the parent to exit', () => srv!.proc.exitCode !== null, 10000);
    assert.match(got, /^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: close\r\n/);
    assert.ok(got.endsWith(site.body));
    for (const w of workers) assert.equal(alive(w), false);
    slow.destroy();
    await srv.stop();
    // With GracefulShutdownTimeout 1 a client that never finishes does not hold the server.
    site.write(['StartServers 1', 'GracefulShutdownTimeout 1']);
    srv = await startPlume(site, { workers: 1 });
    const stuck = await new Promise<net.Socket>((resolve) => {
      const s = net.connect(site.port, '127.0.0.1', () => { s.write('GET /index.html HTTP/1.1\r\n'); resolve(s); });
      s.on('error', () => {});
    });
    await sleep(200);
    const t0 = Date.now();
    srv.signal('SIGWINCH');
    await waitFor('the parent to exit', () => srv!.proc.exitCode !== null, 10000);
    assert.ok(Date.now() - t0 >= 900, 'waited for GracefulShutdownTimeout');
    stuck.destroy();
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('workers whose parent is killed (SIGKILL) finish what they serve and exit', { timeout: 60000 }, async () => {
  const site = await makeSite('orphan', ['StartServers 2']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const workers = srv.workers();
    srv.signal('SIGKILL');
    await waitFor('the workers to exit', () => workers.every((w) => !alive(w)), 10000);
  } finally {
    await srv?.stop();
    site.remove();
  }
});
