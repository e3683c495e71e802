// -X serves from one process with as many workers as httpd's single process has (issue 19
// item 9): prefork's one, a threaded MPM's ThreadsPerChild (MaxRequestWorkers/MaxClients below
// it is raised to it, AH00511). A client beyond them waits, accepted but unanswered, until a
// worker is free; with the event MPM a connection waiting for its next request frees its
// worker, with prefork it holds it until it closes. Measured on httpd 2.4.71 with a sleeping
// CGI: prefork -X with MaxClients 1 answers two clients one after the other, event -X with
// MaxClients 1 (25 threads) both at once.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { makeSite, getOnce, waitFor, PLUME, type Site } from './process-lib.js';

const REQUEST = 'GET /index.html HTTP/1.1\r\nHost: localhost\r\n';

interface Client { sock: net.Socket; got: () => string; ended: Promise<number> }

/** Connects and sends `raw`; `ended` resolves (with the time) when the server closes. */
async function client(port: number, raw: string): Promise<Client> {
  let got = '';
  const sock = net.connect(port, '127.0.0.1');
  sock.on('data', (d: Buffer) => { got += d.toString('latin1'); });
  const ended = new Promise<number>((resolve, reject) => {
    sock.on('end', () => resolve(Date.now()));
    sock.on('error', reject);
  });
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  await new Promise<void>((resolve) => sock.write(raw, () => resolve()));
  return { sock, got: () => got, ended };
}

/** Resolves once `c` has received something, or after `ms` (the answer must not come). */
function firstDataWithin(c: Client, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (c.got() !== '') { resolve(true); return; }
    const t = setTimeout(() => { c.sock.off('data', on); resolve(false); }, ms);
    const on = (): void => { clearTimeout(t); resolve(true); };
    c.sock.once('data', on);
  });
}

async function startX(site: Site): Promise<{ proc: ChildProcess; stop: () => Promise<void>; stderr: () => string }> {
  const proc = spawn(process.execPath, [PLUME, '-X', '-d', site.dir, '-f', site.conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  const exited = new Promise((r) => proc.once('exit', r));
  const stop = async (): Promise<void> => { if (proc.exitCode === null) proc.kill('SIGTERM'); await exited; };
  try {
    await waitFor('-X to answer', async () => {
      if (proc.exitCode !== null) throw new Error(`-X exited: ${err}`);
      try { return (await getOnce(site.port, '/index.html', 1000)).status === 200; } catch { return false; }
    }, 15000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { proc, stop, stderr: () => err };
}

test('-X, prefork, MaxClients 1: a second client waits until the first connection closes', { timeout: 40000 }, async () => {
  const site = await makeSite('onex-prefork');
  site.write(['MaxClients 1']);
  fs.writeFileSync(site.conf, fs.readFileSync(site.conf, 'utf8').replace('mod_mpm_event.so', 'mod_mpm_prefork.so').replace('mpm_event_module', 'mpm_prefork_module'));
  const srv = await startX(site);
  const open: net.Socket[] = [];
  try {
    // The first client holds the only worker with a request not yet complete.
    const a = await client(site.port, REQUEST);
    open.push(a.sock);
    const b = await client(site.port, REQUEST + 'Connection: close\r\n\r\n');
    open.push(b.sock);
    assert.equal(await firstDataWithin(b, 400), false, `the second client was answered while the first held the worker: ${b.got()}`);
    // The first request completes and stays kept alive: prefork's worker stays with it.
    a.sock.write('\r\n');
    await waitFor('the first answer', () => a.got().endsWith(site.body), 10000);
    assert.equal(b.got(), '', 'the second client was answered while the first connection was open');
    a.sock.end();
    await b.ended;
    assert.match(b.got(), /^HTTP\/1\.1 200 OK\r\n/);
    assert.ok(b.got().endsWith(site.body));
  } finally {
    for (const s of open) s.destroy();
    await srv.stop();
    site.remove();
  }
});

test('-X, event, ThreadsPerChild 1: a second client waits while the first request is served, not while it is kept alive', { timeout: 40000 }, async () => {
  const site = await makeSite('onex-event1', ['ThreadsPerChild 1', 'MaxRequestWorkers 1']);
  const srv = await startX(site);
  const open: net.Socket[] = [];
  try {
    const a = await client(site.port, REQUEST);
    open.push(a.sock);
    const b = await client(site.port, REQUEST + 'Connection: close\r\n\r\n');
    open.push(b.sock);
    assert.equal(await firstDataWithin(b, 400), false, `the second client was answered while the first held the worker: ${b.got()}`);
    // Answered and kept alive, the first connection no longer holds the worker.
    a.sock.write('\r\n');
    await b.ended;
    assert.match(b.got(), /^HTTP\/1\.1 200 OK\r\n/);
    assert.ok(a.got().endsWith(site.body));
    assert.equal(a.sock.readyState, 'open', 'the first connection is still open (kept alive)');
  } finally {
    for (const s of open) s.destroy();
    await srv.stop();
    site.remove();
  }
});

test('-X, event, MaxClients 1: raised to ThreadsPerChild (AH00511), so a second client is served at once', { timeout: 40000 }, async () => {
  const site = await makeSite('onex-event25', ['MaxClients 1']);
  const srv = await startX(site);
  const open: net.Socket[] = [];
  try {
    assert.match(srv.stderr(), /AH00511: WARNING: MaxRequestWorkers of 1 is less than ThreadsPerChild of 25, increasing to 25/);
    const a = await client(site.port, REQUEST);
    open.push(a.sock);
    const b = await client(site.port, REQUEST + 'Connection: close\r\n\r\n');
    open.push(b.sock);
    await b.ended;
    assert.match(b.got(), /^HTTP\/1\.1 200 OK\r\n/);
    assert.equal(a.got(), '', 'the first request is still incomplete');
  } finally {
    for (const s of open) s.destroy();
    await srv.stop();
    site.remove();
  }
});
