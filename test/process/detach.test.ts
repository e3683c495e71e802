// Process control as httpd (issue 19, item 5): started without -X, -D FOREGROUND, -D NO_DETACH
// or -k, plume detaches as httpd does, so that whatever started it (an init script, Apache's
// test framework's -start-httpd, `$(...)` in a shell) gets control back once it serves; and a
// graceful restart writes the PidFile again, as httpd's MPMs do in each generation.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { spawn } from 'node:child_process';
import { makeSite, getOnce, waitFor, alive, workersOf, PLUME, type Site } from './process-lib.js';

interface Finished { code: number | null; out: string }

/** Runs bin/plume with `args` and resolves once it has exited AND every descriptor of its
 *  stdout/stderr is closed ('close'), as a caller reading its output to the end sees it. */
function runToClose(site: Site, args: readonly string[]): Promise<Finished> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [PLUME, '-d', site.dir, '-f', site.conf, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    p.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
    p.on('close', (code) => resolve({ code, out }));
  });
}

function pidIn(file: string): number | undefined {
  try {
    const n = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Stops the server whose pid is `pid` and waits for it and its workers to go. */
async function stopServer(pid: number | undefined): Promise<void> {
  if (pid === undefined || !alive(pid)) return;
  const workers = workersOf(pid).map((w) => w.pid);
  process.kill(pid, 'SIGTERM');
  try {
    await waitFor(`server ${pid} to stop`, () => !alive(pid) && workers.every((w) => !alive(w)), 20000);
  } finally {
    for (const p of [pid, ...workers]) if (alive(p)) { try { process.kill(p, 'SIGKILL'); } catch { /* gone */ } }
  }
}

test('started plainly, plume detaches: the command returns, its output closes, the server serves', { timeout: 60000 }, async () => {
  const site = await makeSite('detach', ['StartServers 1']);
  let pid: number | undefined;
  try {
    const started = await runToClose(site, []);
    assert.equal(started.code, 0, started.out);
    pid = pidIn(site.pidFile);
    assert.ok(pid !== undefined, 'the PidFile is written by the time the command returns');
    assert.ok(alive(pid), 'the server runs on after the command that started it');
    assert.equal((await getOnce(site.port)).status, 200);
    // -k stop finds it through the PidFile, as apachectl does.
    const stopped = await runToClose(site, ['-k', 'stop']);
    assert.equal(stopped.code, 0, stopped.out);
    const gone = pid;
    await waitFor('the detached server to stop', () => !alive(gone), 20000);
  } finally {
    await stopServer(pid);
    site.remove();
  }
});

test('a startup failure of a detaching start is printed by the command and is its exit status', { timeout: 60000 }, async () => {
  const site = await makeSite('detach-fail', ['ErrorLog /nonexistent-dir/error_log']);
  try {
    const r = await runToClose(site, []);
    assert.equal(r.code, 1);
    assert.match(r.out, /AH00091: plume: could not open error log file \/nonexistent-dir\/error_log\./);
  } finally {
    site.remove();
  }
});

for (const foreground of [['-D', 'FOREGROUND'], ['-D', 'NO_DETACH']]) {
  test(`${foreground.join(' ')}: the process started is the server and stays in the foreground`, { timeout: 60000 }, async () => {
    const site = await makeSite('nodetach', ['StartServers 1']);
    const p = spawn(process.execPath, [PLUME, '-d', site.dir, '-f', site.conf, ...foreground], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<void>((res) => p.once('exit', () => res()));
    try {
      await waitFor('the PidFile', () => pidIn(site.pidFile) !== undefined, 20000);
      assert.equal(pidIn(site.pidFile), p.pid);
      // Its workers accept a moment after the PidFile is written.
      await waitFor('an answer', async () => { try { return (await getOnce(site.port)).status === 200; } catch { return false; } }, 20000);
      assert.equal(p.exitCode, null);
    } finally {
      await stopServer(p.pid);
      await exited;
      site.remove();
    }
  });
}

test('a graceful restart writes the PidFile again; -k graceful then finds the server', { timeout: 90000 }, async () => {
  const site = await makeSite('pidfile', ['StartServers 1']);
  let pid: number | undefined;
  try {
    const started = await runToClose(site, ['-k', 'start']);
    assert.equal(started.code, 0, started.out);
    pid = pidIn(site.pidFile);
    assert.ok(pid !== undefined);
    const first = workersOf(pid).map((w) => w.pid);
    fs.unlinkSync(site.pidFile);
    process.kill(pid, 'SIGUSR1');
    await waitFor('the PidFile written again', () => pidIn(site.pidFile) === pid, 20000);
    // A second graceful restart through the command line, which reads the PidFile.
    const again = await runToClose(site, ['-k', 'graceful']);
    assert.equal(again.code, 0, again.out);
    assert.doesNotMatch(again.out, /not running/);
    const server = pid;
    await waitFor('new workers after two restarts', () => {
      const now = workersOf(server).map((w) => w.pid);
      return now.length > 0 && now.every((w) => !first.includes(w));
    }, 30000);
    assert.equal((await getOnce(site.port)).status, 200);
    // Rewriting its own PidFile is no "unclean shutdown" (AH00098 is for another process's).
    assert.doesNotMatch(fs.readFileSync(site.errorLog, 'utf8'), /AH00098/);
  } finally {
    await stopServer(pid);
    site.remove();
  }
});
