// The HTTP/2 scenario of `npm run bench` (bench/run.ts runs it after the TLS ones): plume
// against Apache httpd (event MPM, mod_http2) on one httpd.conf:
//  - h2-1k: a 1 KB file over h2c (prior knowledge, H2Direct), 100 concurrent streams per
//    connection, driven by h2load (Debian's nghttp2-client).
// Node built-ins only; every process started here is stopped by its pid.

import * as fs from 'node:fs';
import * as http2 from 'node:http2';
import { spawnSync, type ChildProcess } from 'node:child_process';
import {
  APACHE_BIN, freePort, makeSideSite, startSideServer, stopSideChild, stopSideChildren, runLoadTool, ratioTable, type SideServerName, type SideServerOptions,
} from './side-servers.js';

export type H2ScenarioName = 'h2-1k';
export const ALL_H2_SCENARIOS: readonly H2ScenarioName[] = ['h2-1k'];

type H2ServerName = SideServerName;

export interface H2BenchOptions extends SideServerOptions {
  readonly servers: readonly string[];
  readonly connections: readonly number[];
  readonly durationS: number;
  readonly warmupS: number;
  readonly clientCpus: string | null;
  readonly keep: boolean;
  readonly write: (line: string) => void;
}

export interface H2Row {
  scenario: string;
  server: H2ServerName;
  connections: number;
  streams: number;
  perSec: number | null;
  errors: number;
  note?: string;
}

const STREAMS = 100;
const BODY_1K = Buffer.alloc(1024, 'plume h2 bench\n');

function makeH2Site(port: number): { root: string; conf: string } {
  return makeSideSite('bench/h2.ts', 'plume-bench-h2-', port, BODY_1K, ['http2'], () => `Protocols h2c http/1.1
H2MaxSessionStreams ${STREAMS}
`);
}

/** One GET /1k.html over h2c prior knowledge: whether the server answered it whole. */
function probe(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = http2.connect(`http://127.0.0.1:${port}`);
    const t = setTimeout(() => { s.destroy(); resolve(false); }, 3000);
    s.on('error', () => { clearTimeout(t); s.destroy(); resolve(false); });
    const req = s.request({ ':path': '/1k.html' });
    let n = 0;
    let status = 0;
    req.on('response', (h) => { status = Number(h[':status']); });
    req.on('data', (d: Buffer) => { n += d.length; });
    req.on('end', () => { clearTimeout(t); s.close(); resolve(status === 200 && n === BODY_1K.length); });
    req.on('error', () => undefined);
  });
}

function startH2Server(name: H2ServerName, root: string, conf: string, port: number, o: H2BenchOptions): Promise<ChildProcess> {
  return startSideServer(name, root, conf, o, () => probe(port), 'over h2c');
}

/** Stops whatever this module started (the runner's signal handler). */
export function stopH2Children(): Promise<void> {
  return stopSideChildren();
}

/** h2load for `seconds`: requests per second and the requests that did not succeed. */
export function h2load(url: string, conns: number, seconds: number, cpus: string | null): Promise<{ perSec: number; errors: number }> {
  return runLoadTool(cpus, 'h2load', ['-c', String(conns), '-m', String(STREAMS), '-t', '1', '-D', String(seconds), url], (out) => {
    const m = /finished in [\d.]+\w*, ([\d.]+) req\/s/.exec(out);
    const r = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
    return m === null || r === null ? null : { perSec: Number(m[1]), errors: Number(r[5]) + Number(r[6]) };
  });
}

/** Runs h2-1k for each server and connection count; rows and a printed table. */
export async function runH2Bench(o: H2BenchOptions): Promise<H2Row[]> {
  const rows: H2Row[] = [];
  const servers = (['apache', 'plume', 'plume-workers'] as const).filter((s) => o.servers.includes(s) && (s !== 'plume-workers' || o.plumeWorkers > 0));
  if (!fs.existsSync(APACHE_BIN) || spawnSync('h2load', ['--version']).error !== undefined) {
    o.write('h2: Apache (apache2-bin) or h2load (nghttp2-client) missing; h2-1k not run');
    return rows;
  }
  const port = await freePort();
  const { root, conf } = makeH2Site(port);
  o.write(`\n== HTTP/2 (h2c prior knowledge, ${STREAMS} streams per connection, h2load; site ${o.keep ? root : 'removed afterwards'})`);
  try {
    for (const c of o.connections.map((n) => Math.max(1, Math.min(n, 50)))) {
      o.write(`== h2-1k c=${c}`);
      for (const name of servers) {
        let child: ChildProcess | null = null;
        try {
          child = await startH2Server(name, root, conf, port, o);
          const url = `http://127.0.0.1:${port}/1k.html`;
          await h2load(url, c, o.warmupS > 0 ? o.warmupS : 1, o.clientCpus);
          const r = await h2load(url, c, o.durationS, o.clientCpus);
          rows.push({ scenario: 'h2-1k', server: name, connections: c, streams: STREAMS, perSec: r.perSec, errors: r.errors });
          o.write(`   ${name.padEnd(14)} ${r.perSec.toFixed(0).padStart(7)} req/s${r.errors > 0 ? `  errors ${r.errors}` : ''}`);
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          rows.push({ scenario: 'h2-1k', server: name, connections: c, streams: STREAMS, perSec: null, errors: 0, note: msg });
          o.write(`   ${name.padEnd(14)} failed: ${msg}`);
        } finally {
          if (child !== null) await stopSideChild(child);
        }
      }
    }
  } finally {
    if (!o.keep) fs.rmSync(root, { recursive: true, force: true });
  }
  o.write('');
  o.write(h2Table(rows));
  return rows;
}

export function h2Table(rows: readonly H2Row[]): string {
  return ratioTable('HTTP/2 scenario | c × streams', 'req/s', rows, (r) => `${r.connections} × ${r.streams}`, (r) => (r.perSec ?? 0).toFixed(0));
}
