// The CI-sized load test of issue 5: 10,000 requests over 200 concurrent keep-alive
// connections against bin/plume on 127.0.0.1 — in one process (-X) and with two worker
// processes appending to the same access log — and every request accounted for in the log:
// exactly one whole, well-formed line per request, identified by a sequence number in the
// request path and in a request header; none lost, doubled, cut or interleaved.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { spawn } from 'node:child_process';
import { makeSite, startPlume, waitFor, PLUME, type Site, type Running } from './process-lib.js';

const REQUESTS = 10000;
const CONNECTIONS = 200;

/** One line per request, framed so that a cut or interleaved line cannot match. */
const LOAD_FORMAT = 'LogFormat "BEGIN \\"%r\\" %>s %b %{X-Seq}i %P %{remote}p END" load';
const LINE = /^BEGIN "GET \/index\.html\?seq=(\d+) HTTP\/1\.1" 200 (\d+) (\d+) (\d+) (\d+) END$/;
/** The readiness probes' lines (no sequence number). */
const PROBE = /^BEGIN "GET \/index\.html HTTP\/1\.1" 200 \d+ - \d+ \d+ END$/;

interface Outcome { ok: number; failures: string[]; ms: number }

/** REQUESTS requests with at most CONNECTIONS in flight, over a keep-alive agent of CONNECTIONS sockets. */
async function drive(port: number, body: string): Promise<Outcome> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS, maxFreeSockets: CONNECTIONS });
  const want = Buffer.from(body);
  let next = 0;
  let ok = 0;
  const failures: string[] = [];
  const one = (seq: number): Promise<void> => new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: `/index.html?seq=${seq}`, headers: { 'X-Seq': String(seq) }, agent }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const got = Buffer.concat(parts);
        if (res.statusCode === 200 && got.equals(want)) ok++;
        else failures.push(`request ${seq}: status ${res.statusCode}, ${got.length} bytes`);
        resolve();
      });
      res.on('error', (e) => { failures.push(`request ${seq}: ${e.message}`); resolve(); });
    });
    req.setTimeout(20000, () => req.destroy(new Error('no answer in 20 s')));
    req.on('error', (e) => { failures.push(`request ${seq}: ${e.message}`); resolve(); });
  });
  const lane = async (): Promise<void> => {
    while (next < REQUESTS) await one(next++);
  };
  const t0 = Date.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, lane));
  const ms = Date.now() - t0;
  agent.destroy();
  return { ok, failures, ms };
}

function loadLog(site: Site): string { return `${site.dir}/logs/load_log`; }

function lineCount(file: string): number {
  try {
    const t = fs.readFileSync(file, 'latin1');
    let n = 0;
    for (let i = t.indexOf('\n'); i >= 0; i = t.indexOf('\n', i + 1)) n++;
    return n;
  } catch {
    return 0;
  }
}

/** Every line well formed, every sequence number exactly once; returns the pids and client ports seen. */
function checkLog(file: string, body: string): { pids: Set<number>; ports: Set<number> } {
  const text = fs.readFileSync(file, 'latin1');
  assert.ok(text.endsWith('\n'), 'the log ends with a whole line');
  const lines = text.slice(0, -1).split('\n');
  const seen = new Uint8Array(REQUESTS);
  const bad: string[] = [];
  const doubled: number[] = [];
  const pids = new Set<number>();
  const ports = new Set<number>();
  let probes = 0;
  for (const l of lines) {
    if (PROBE.test(l)) { probes++; continue; }
    const m = LINE.exec(l);
    if (m === null || m[1] !== m[3] || Number(m[2]) !== Buffer.byteLength(body) || Number(m[1]) >= REQUESTS) {
      if (bad.length < 5) bad.push(JSON.stringify(l.slice(0, 200)));
      continue;
    }
    const seq = Number(m[1]);
    if (seen[seq]) doubled.push(seq);
    seen[seq] = 1;
    pids.add(Number(m[4]));
    ports.add(Number(m[5]));
  }
  const missing: number[] = [];
  for (let i = 0; i < REQUESTS && missing.length < 10; i++) if (!seen[i]) missing.push(i);
  assert.deepEqual(bad, [], 'malformed, cut or interleaved lines');
  assert.deepEqual(doubled.slice(0, 10), [], 'requests logged twice');
  assert.deepEqual(missing, [], 'requests not logged');
  assert.equal(lines.length - probes, REQUESTS, 'one line per request');
  return { pids, ports };
}

async function run(site: Site, start: () => Promise<{ stop: () => Promise<void> }>, workers: number): Promise<void> {
  const srv = await start();
  let stopped = false;
  try {
    // Only the readiness probes are in the log so far.
    const log = loadLog(site);
    const before = lineCount(log);
    const r = await drive(site.port, site.body);
    assert.deepEqual(r.failures.slice(0, 10), []);
    assert.equal(r.ok, REQUESTS);
    await waitFor('every request in the access log', () => lineCount(log) >= before + REQUESTS, 15000);
    // Stopping flushes whatever a process still holds: nothing more may appear.
    await srv.stop();
    stopped = true;
    const { pids, ports } = checkLog(log, site.body);
    assert.equal(pids.size, workers, `processes that logged: ${[...pids].join(' ')}`);
    // 200 concurrent keep-alive connections: each client port stands for one connection.
    assert.ok(ports.size >= CONNECTIONS && ports.size <= CONNECTIONS + 20, `${ports.size} connections`);
    process.stdout.write(`# ${REQUESTS} requests over ${ports.size} connections in ${r.ms} ms (${Math.round(REQUESTS / (r.ms / 1000))} req/s), ${pids.size} process(es)\n`);
  } finally {
    if (!stopped) await srv.stop();
  }
}

const EXTRA = [LOAD_FORMAT, 'CustomLog logs/load_log load', 'MaxKeepAliveRequests 0'];

test('-X: 10,000 requests over 200 keep-alive connections, one whole access-log line each', { timeout: 60000 }, async () => {
  const site = await makeSite('load-x', EXTRA);
  try {
    await run(site, async () => {
      const proc = spawn(process.execPath, [PLUME, '-X', '-d', site.dir, '-f', site.conf], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
      await waitFor(`plume -X to answer (${err})`, async () => {
        if (proc.exitCode !== null) throw new Error(`plume -X exited: ${err}`);
        return probe(site.port);
      }, 15000);
      return {
        stop: async () => {
          if (proc.exitCode !== null || proc.signalCode !== null) return;
          const exited = new Promise<void>((res) => proc.once('exit', () => res()));
          process.kill(proc.pid!, 'SIGTERM');
          const t = setTimeout(() => { try { process.kill(proc.pid!, 'SIGKILL'); } catch { /* gone */ } }, 10000);
          await exited;
          clearTimeout(t);
        },
      };
    }, 1);
  } finally {
    site.remove();
  }
});

test('2 workers: 10,000 requests over 200 keep-alive connections, one whole access-log line each', { timeout: 60000 }, async () => {
  const site = await makeSite('load-w', ['StartServers 2', ...EXTRA]);
  try {
    await run(site, async (): Promise<Running> => startPlume(site, { workers: 2 }), 2);
  } finally {
    site.remove();
  }
});

/** A readiness probe (logged without a sequence number). */
async function probe(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/index.html', agent: false }, (res) => { res.resume(); res.on('end', () => resolve(true)); });
    req.on('error', () => resolve(false));
    req.setTimeout(2000, () => { req.destroy(); resolve(false); });
  });
}
