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

/** Runs the TLS scenarios; rows and a printed table with plume/Apache ratios. */
export async function runTlsBench(o: TlsBenchOptions): Promise<TlsRow[]> {
  const rows: TlsRow[] = [];
  const servers = (['apache', 'plume', 'plume-workers'] as const).filter((s) => o.servers.includes(s));
  if (!fs.existsSync(APACHE_BIN) || spawnSync('wrk', ['--version']).error !== undefined) {
    o.write('tls: Apache (apache2-bin) or wrk missing; TLS scenarios not run');
    return rows;
  }
  const port = await freePort();
  const { root, conf } = makeTlsSite(port);
  o.write(`\n== TLS (RSA 2048 certificate, TLS 1.3, SSLSessionCache shmcb, session tickets on; site ${o.keep ? root : 'removed afterwards'})`);
  try {
    for (const scenario of o.scenarios) {
      const conns = scenario === 'tls-1k' ? o.connections : [Math.min(8, Math.max(...o.connections))];
      for (const c of conns) {
        o.write(`== ${scenario} c=${c}`);
        for (const name of servers) {
          let child: ChildProcess | null = null;
          try {
            child = await startTlsServer(name, root, conf, port, o);
            if (scenario === 'tls-1k') {
              await wrk(`https://127.0.0.1:${port}/1k.html`, c, o.warmupS > 0 ? o.warmupS : 1, o.wrkCpus);
              const r = await wrk(`https://127.0.0.1:${port}/1k.html`, c, o.durationS, o.wrkCpus);
              rows.push({ scenario, server: name, connections: c, perSec: r.perSec, errors: r.errors });
              o.write(`   ${name.padEnd(14)} ${r.perSec.toFixed(0).padStart(7)} req/s${r.errors > 0 ? `  errors ${r.errors}` : ''}`);
            } else {
              await handshakes(port, c, Math.max(1, o.warmupS), false, undefined);
              const full = await handshakes(port, c, o.durationS, false, child.pid);
              const res = await handshakes(port, c, o.durationS, true, child.pid);
              for (const [what, r] of [['full', full], ['resumed', res]] as const) {
                rows.push({
                  scenario: `tls-handshake ${what}`, server: name, connections: c, perSec: r.perSec, resumedPct: r.resumedPct, errors: r.errors,
                  serverUsPerConn: r.serverUs, clientUsPerConn: r.clientUs, clientBusyPct: r.clientBusyPct,
                });
              }
              o.write(`   ${name.padEnd(14)} full    ${describeRun(full)}${full.errors > 0 ? `  errors ${full.errors}` : ''}`);
              o.write(`   ${''.padEnd(14)} resumed ${describeRun(res)}, ${res.resumedPct}% resumed${res.errors > 0 ? `  errors ${res.errors}` : ''}`);
            }
          } catch (e) {
            const msg = e instanceof Error ? e.message : String(e);
            rows.push({ scenario, server: name, connections: c, perSec: null, errors: 0, note: msg });
            o.write(`   ${name.padEnd(14)} failed: ${msg}`);
          } finally {
            if (child !== null) await stopSideChild(child);
          }
        }
      }
    }
  } finally {
    if (!o.keep) fs.rmSync(root, { recursive: true, force: true });
  }
  o.write('');
  o.write(tlsTable(rows));
  const cpu = handshakeCpuTable(rows);
  if (cpu !== '') o.write('\n' + cpu);
  return rows;
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
