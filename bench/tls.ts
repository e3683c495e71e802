// The TLS scenarios of `npm run bench` (bench/run.ts runs them after the HTTP ones): plume
// against Apache httpd (event MPM, mod_ssl) on one httpd.conf with the test certificate (RSA
// 2048), SSLSessionCache shmcb and session tickets on, as a site would run them:
//  - tls-1k: a 1 KB file over keep-alive TLS 1.3 connections (wrk);
//  - tls-handshake: a new TLS 1.3 connection for every request (GET /1k.html, Connection:
//    close), measured twice: full handshakes (no session offered) and resumed ones (the
//    session ticket of the previous connection offered), by a small client in this process
//    (the runner, pinned to the load tool's CPUs). Each of those rows also gives the CPU time
//    per connection of the server's processes (/proc) and of the client, and how busy the
//    client was: a client near 100 % is the limit of the rate, which then says nothing about
//    the servers; their CPU per connection still does.
// The servers of a case run side by side, each on its own copy of the site, and their timed
// runs take turns; a row is a server's median run. tls-handshake always makes at least
// MIN_HANDSHAKE_RUNS runs per server.
// Node built-ins only; every process started here is stopped by its pid.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { spawnSync, type ChildProcess } from 'node:child_process';
import {
  APACHE_BIN, freePort, makeSideSite, startSideServer, stopSideChild, stopSideChildren, runLoadTool, ratioTable, treeCpuMs, type SideServerName, type SideServerOptions,
} from './side-servers.js';

export type TlsScenarioName = 'tls-1k' | 'tls-handshake';
export const ALL_TLS_SCENARIOS: readonly TlsScenarioName[] = ['tls-1k', 'tls-handshake'];

type TlsServerName = SideServerName;

export interface TlsBenchOptions extends SideServerOptions {
  readonly scenarios: readonly TlsScenarioName[];
  readonly servers: readonly string[];
  readonly connections: readonly number[];
  readonly durationS: number;
  readonly warmupS: number;
  /** timed runs per server and case (tls-handshake: MIN_HANDSHAKE_RUNS at least) */
  readonly runs: number;
  readonly wrkCpus: string | null;
  readonly keep: boolean;
  readonly write: (line: string) => void;
}

export interface TlsRow {
  scenario: string;
  server: TlsServerName;
  connections: number;
  /** requests (tls-1k) or handshakes (tls-handshake) per second */
  perSec: number | null;
  /** tls-handshake resumed: the share of connections the server actually resumed */
  resumedPct?: number;
  /** tls-handshake: CPU time (utime + stime) of the server's processes per connection, µs */
  serverUsPerConn?: number;
  /** tls-handshake: CPU time of the client (this process) per connection, µs */
  clientUsPerConn?: number;
  /** tls-handshake: the client's CPU time over the run's wall time, % of one CPU */
  clientBusyPct?: number;
  /** the rate of every timed run, in order, where there were several (the row is the median one) */
  allPerSec?: number[];
  errors: number;
  note?: string;
}

const FIXTURES = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'test', 'fixtures', 'tls');
const BODY_1K = Buffer.alloc(1024, 'plume tls bench\n');

/** The site and its httpd.conf, read by both servers. */
function makeTlsSite(port: number): { root: string; conf: string } {
  return makeSideSite('bench/tls.ts', 'plume-bench-tls-', port, BODY_1K, ['socache_shmcb', 'ssl'], (root) => `SSLSessionCache shmcb:${root}/logs/ssl_scache(512000)
SSLSessionCacheTimeout 300
SSLEngine on
SSLProtocol all
SSLCertificateFile ${root}/tls/server.crt
SSLCertificateKeyFile ${root}/tls/server.key
`, (root) => {
    fs.mkdirSync(path.join(root, 'tls'), { mode: 0o755 });
    for (const f of ['server.crt', 'server.key']) fs.copyFileSync(path.join(FIXTURES, f), path.join(root, 'tls', f));
  });
}

function startTlsServer(name: TlsServerName, root: string, conf: string, port: number, o: TlsBenchOptions): Promise<ChildProcess> {
  return startSideServer(name, root, conf, o, async () => (await fetchOnce(port, undefined)).ok, 'over TLS');
}

/** Stops whatever this module started (the runner's signal handler). */
export function stopTlsChildren(): Promise<void> {
  return stopSideChildren();
}

interface Fetched {
  ok: boolean;
  reused: boolean;
  session: Buffer | undefined;
}

/** One GET /1k.html on a new TLS 1.3 connection (offering `session`), Connection: close. */
function fetchOnce(port: number, session: Buffer | undefined): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, minVersion: 'TLSv1.3', session });
    let got: Buffer | undefined;
    let n = 0;
    let head = '';
    let reused = false;
    const timer = setTimeout(() => { s.destroy(); reject(new Error('timeout')); }, 5000);
    s.on('session', (b: Buffer) => { got = b; });
    s.on('secureConnect', () => { reused = s.isSessionReused(); s.write('GET /1k.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'); });
    s.on('data', (d: Buffer) => { n += d.length; if (head.length < 20) head += d.toString('latin1', 0, 20); });
    s.on('error', (e) => { clearTimeout(timer); reject(e); });
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ ok: head.startsWith('HTTP/1.1 200') && n >= BODY_1K.length, reused, session: got });
    });
  });
}

interface HandshakeRun {
  perSec: number;
  resumedPct: number;
  errors: number;
  /** µs of CPU per connection: the server's process tree (undefined where /proc cannot tell) and this client */
  serverUs: number | undefined;
  clientUs: number;
  /** the client's CPU time over the wall time, % */
  clientBusyPct: number;
}

/** Connections per second over `seconds`, `conc` loops, each connection new; with `resume`
 *  each loop offers the session of its previous connection. `serverPid`: the server whose
 *  process tree's CPU time is counted. */
async function handshakes(port: number, conc: number, seconds: number, resume: boolean, serverPid: number | undefined): Promise<HandshakeRun> {
  const end = Date.now() + seconds * 1000;
  let done = 0;
  let reused = 0;
  let errors = 0;
  const server0 = serverPid === undefined ? null : treeCpuMs(serverPid);
  const client0 = process.cpuUsage();
  const started = Date.now();
  await Promise.all(Array.from({ length: conc }, async () => {
    let session: Buffer | undefined;
    while (Date.now() < end) {
      try {
        const r = await fetchOnce(port, resume ? session : undefined);
        if (!r.ok) errors++;
        done++;
        if (r.reused) reused++;
        if (r.session !== undefined) session = r.session;
      } catch {
        errors++;
      }
    }
  }));
  const el = (Date.now() - started) / 1000;
  const server1 = serverPid === undefined ? null : treeCpuMs(serverPid);
  const client = process.cpuUsage(client0);
  const clientMs = (client.user + client.system) / 1000;
  const n = Math.max(1, done);
  return {
    perSec: done / el,
    resumedPct: done === 0 ? 0 : Math.round((100 * reused) / done),
    errors,
    serverUs: server0 === null || server1 === null ? undefined : Math.round(((server1 - server0) * 1000) / n),
    clientUs: Math.round((clientMs * 1000) / n),
    clientBusyPct: Math.round(clientMs / (el * 10)),
  };
}

/** One tls-handshake result as printed: rate, CPU per connection, the client's load. */
function describeRun(r: HandshakeRun): string {
  const cpu = r.serverUs === undefined ? '' : `server ${r.serverUs} µs, `;
  return `${r.perSec.toFixed(0).padStart(6)} conn/s (CPU per connection: ${cpu}client ${r.clientUs} µs; client ${r.clientBusyPct} % busy)`;
}

/** wrk over https; requests per second and errors. */
function wrk(url: string, conns: number, seconds: number, cpus: string | null): Promise<{ perSec: number; errors: number }> {
  return runLoadTool(cpus, 'wrk', ['-t1', `-c${conns}`, `-d${seconds}s`, '--timeout', '5s', url], (out) => {
    const m = /Requests\/sec:\s+([\d.]+)/.exec(out);
    if (m === null) return null;
    const se = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
    const non = /Non-2xx or 3xx responses: (\d+)/.exec(out);
    const errors = (se === null ? 0 : se.slice(1).reduce((n, x) => n + Number(x), 0)) + (non === null ? 0 : Number(non[1]));
    return { perSec: Number(m[1]), errors };
  });
}

/** tls-handshake's timed runs per server at least, whatever --runs says: one 5-second run per
 *  server left the ratio at the mercy of the host (a run of either server now and then costs
 *  half as much CPU again per handshake for its whole length, client unchanged; docs/benchmarks.md). */
export const MIN_HANDSHAKE_RUNS = 3;

/** The run of median rate among `runs` (the lower middle one for an even count). */
export function medianRun<T>(runs: readonly T[], rate: (r: T) => number): T {
  const sorted = [...runs].sort((a, b) => rate(a) - rate(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** One server of a case: its own site and port, so that the servers of a case run side by side
 *  and their timed runs take turns. */
interface TlsUp {
  name: TlsServerName;
  child: ChildProcess;
  port: number;
  wrkRuns: { perSec: number; errors: number }[];
  fullRuns: HandshakeRun[];
  resumedRuns: HandshakeRun[];
}

/**
 * Runs the TLS scenarios; rows and a printed table with plume/Apache ratios. For each case the
 * servers run at once, each on its own copy of the site, and their timed runs take turns (run 1:
 * A B, run 2: B A...); a row is a server's median run (tls-handshake: at least MIN_HANDSHAKE_RUNS
 * runs, full and resumed handshakes each by their own median).
 */
export async function runTlsBench(o: TlsBenchOptions): Promise<TlsRow[]> {
  const rows: TlsRow[] = [];
  const servers = (['apache', 'plume', 'plume-workers'] as const).filter((s) => o.servers.includes(s));
  if (!fs.existsSync(APACHE_BIN) || spawnSync('wrk', ['--version']).error !== undefined) {
    o.write('tls: Apache (apache2-bin) or wrk missing; TLS scenarios not run');
    return rows;
  }
  const sites = new Map<TlsServerName, { root: string; conf: string; port: number }>();
  try {
    for (const name of servers) {
      const port = await freePort();
      sites.set(name, { ...makeTlsSite(port), port });
    }
    const kept = o.keep ? [...sites.values()].map((x) => x.root).join(', ') : 'removed afterwards';
    o.write(`\n== TLS (RSA 2048 certificate, TLS 1.3, SSLSessionCache shmcb, session tickets on; sites ${kept})`);
    for (const scenario of o.scenarios) {
      const conns = scenario === 'tls-1k' ? o.connections : [Math.min(8, Math.max(...o.connections))];
      const runs = scenario === 'tls-handshake' ? Math.max(MIN_HANDSHAKE_RUNS, o.runs) : o.runs;
      for (const c of conns) {
        o.write(`== ${scenario} c=${c}${runs > 1 ? ` (${runs} timed runs per server in turns; the median run is reported)` : ''}`);
        const up: TlsUp[] = [];
        try {
          for (const name of servers) {
            const site = sites.get(name)!;
            let child: ChildProcess | null = null;
            try {
              child = await startTlsServer(name, site.root, site.conf, site.port, o);
              if (scenario === 'tls-1k') await wrk(`https://127.0.0.1:${site.port}/1k.html`, c, o.warmupS > 0 ? o.warmupS : 1, o.wrkCpus);
              else await handshakes(site.port, c, Math.max(1, o.warmupS), false, undefined);
              up.push({ name, child, port: site.port, wrkRuns: [], fullRuns: [], resumedRuns: [] });
            } catch (e) {
              if (child !== null) await stopSideChild(child);
              failed(rows, o, scenario, name, c, e);
            }
          }
          const dropped = new Set<TlsServerName>();
          for (let i = 0; i < runs; i++) {
            for (let j = 0; j < up.length; j++) {
              const one = up[(i + j) % up.length]!;
              if (dropped.has(one.name)) continue;
              const label = `${one.name.padEnd(14)}${runs > 1 ? ` run ${i + 1}` : ''}`;
              try {
                if (scenario === 'tls-1k') {
                  const r = await wrk(`https://127.0.0.1:${one.port}/1k.html`, c, o.durationS, o.wrkCpus);
                  one.wrkRuns.push(r);
                  o.write(`   ${label} ${r.perSec.toFixed(0).padStart(7)} req/s${r.errors > 0 ? `  errors ${r.errors}` : ''}`);
                } else {
                  const full = await handshakes(one.port, c, o.durationS, false, one.child.pid);
                  const res = await handshakes(one.port, c, o.durationS, true, one.child.pid);
                  one.fullRuns.push(full);
                  one.resumedRuns.push(res);
                  o.write(`   ${label} full    ${describeRun(full)}${full.errors > 0 ? `  errors ${full.errors}` : ''}`);
                  o.write(`   ${''.padEnd(label.length)} resumed ${describeRun(res)}, ${res.resumedPct}% resumed${res.errors > 0 ? `  errors ${res.errors}` : ''}`);
                }
              } catch (e) {
                dropped.add(one.name);
                failed(rows, o, scenario, one.name, c, e);
              }
            }
          }
          for (const one of up) {
            if (dropped.has(one.name)) continue;
            if (scenario === 'tls-1k') {
              const r = medianRun(one.wrkRuns, (x) => x.perSec);
              rows.push({ scenario, server: one.name, connections: c, perSec: r.perSec, errors: r.errors, ...(runs > 1 ? { allPerSec: one.wrkRuns.map((x) => x.perSec) } : {}) });
              continue;
            }
            for (const [what, list] of [['full', one.fullRuns], ['resumed', one.resumedRuns]] as const) {
              const r = medianRun(list, (x) => x.perSec);
              rows.push({
                scenario: `tls-handshake ${what}`, server: one.name, connections: c, perSec: r.perSec, resumedPct: r.resumedPct, errors: r.errors,
                serverUsPerConn: r.serverUs, clientUsPerConn: r.clientUs, clientBusyPct: r.clientBusyPct,
                ...(runs > 1 ? { allPerSec: list.map((x) => Math.round(x.perSec)) } : {}),
              });
            }
          }
        } finally {
          for (const one of up) await stopSideChild(one.child);
        }
      }
    }
  } finally {
    if (!o.keep) for (const { root } of sites.values()) fs.rmSync(root, { recursive: true, force: true });
  }
  o.write('');
  o.write(tlsTable(rows));
  const cpu = handshakeCpuTable(rows);
  if (cpu !== '') o.write('\n' + cpu);
  const turns = handshakeTurns(rows);
  if (turns !== '') o.write('\n' + turns);
  return rows;
}

/** A server that failed to start or in a run: its row says why. */
function failed(rows: TlsRow[], o: TlsBenchOptions, scenario: string, name: TlsServerName, c: number, e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  rows.push({ scenario, server: name, connections: c, perSec: null, errors: 0, note: msg });
  o.write(`   ${name.padEnd(14)} failed: ${msg}`);
}

/** Each run's rate beside Apache's run of the same turn, where there were several runs. */
export function handshakeTurns(rows: readonly TlsRow[]): string {
  const out: string[] = [];
  for (const r of rows) {
    if (r.server === 'apache' || r.allPerSec === undefined) continue;
    const a = rows.find((x) => x.scenario === r.scenario && x.connections === r.connections && x.server === 'apache');
    if (a?.allPerSec === undefined) continue;
    const each = r.allPerSec.map((v, i) => (a.allPerSec![i] ? `${(v / a.allPerSec![i]!).toFixed(2)}×` : '—'));
    out.push(`| ${r.scenario} | ${r.connections} | ${r.server} | ${r.allPerSec.map((v) => v.toFixed(0)).join(', ')} | ${a.allPerSec.map((v) => v.toFixed(0)).join(', ')} | ${each.join(', ')} |`);
  }
  if (out.length === 0) return '';
  return ['| TLS scenario | c | server | each run | Apache\'s runs | run by run |', '|---|---:|---|---|---|---|', ...out].join('\n');
}

/** The tls-handshake rows by the server's CPU per connection, with the ratio to Apache's
 *  (plume's CPU / Apache's: below 1 is less CPU), and a warning where the client was the limit. */
export function handshakeCpuTable(rows: readonly TlsRow[]): string {
  const hs = rows.filter((r) => r.serverUsPerConn !== undefined);
  if (hs.length === 0) return '';
  const out = ['| TLS scenario | c | server | server CPU per connection | / Apache | client CPU per connection | client busy |', '|---|---:|---|---:|---:|---:|---:|'];
  let bound = false;
  for (const r of hs) {
    const a = hs.find((x) => x.scenario === r.scenario && x.connections === r.connections && x.server === 'apache');
    const ratio = a?.serverUsPerConn ? `${(r.serverUsPerConn! / a.serverUsPerConn).toFixed(2)}×` : '—';
    if ((r.clientBusyPct ?? 0) >= 90) bound = true;
    out.push(`| ${r.scenario} | ${r.connections} | ${r.server} | ${r.serverUsPerConn} µs | ${ratio} | ${r.clientUsPerConn ?? '—'} µs | ${r.clientBusyPct ?? '—'} % |`);
  }
  if (bound) out.push('', 'The client was 90 % busy or more in a run: there the rate is the client\'s limit; compare the servers by their CPU per connection.');
  return out.join('\n');
}

/** The table: per scenario and connections, each server's rate and its ratio to Apache's. */
export function tlsTable(rows: readonly TlsRow[]): string {
  return ratioTable('TLS scenario | c', 'per second', rows, (r) => String(r.connections),
    (r) => (r.perSec ?? 0).toFixed(0) + (r.resumedPct !== undefined && r.scenario.endsWith('resumed') ? ` (${r.resumedPct}% resumed)` : ''));
}
