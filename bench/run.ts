// `npm run bench`: throughput, tail latency and memory of plume against
// Apache httpd (event MPM), nginx and a bare node:http server, all on the
// same generated site and (for Apache and plume) the same httpd.conf, over
// the scenarios of bench/site.ts (static files, 404, Basic auth, .htaccess,
// a connection per request).
//
// See docs/benchmarks.md for what is measured and how to read it.
// Node built-ins only; every process started here is stopped by its pid.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import {
  ALL_SCENARIOS,
  ALL_SERVERS,
  HTACCESS_HEADERS,
  REFERENCES,
  SCENARIOS,
  SUBJECTS,
  expectedBodies,
  httpdConf,
  makeSite,
  nginxConf,
  backendNginxConf,
  runsScenario,
  type Scenario,
  type ScenarioName,
  type ServerName,
  type Site,
} from './site.js';
import { ALL_TLS_SCENARIOS, runTlsBench, stopTlsChildren, type TlsRow, type TlsScenarioName } from './tls.js';
import { ALL_H2_SCENARIOS, runH2Bench, stopH2Children, type H2Row, type H2ScenarioName } from './h2.js';
import { startFpm } from './php-fpm.js';

// ---------------------------------------------------------------- paths

const HERE = path.dirname(fileURLToPath(import.meta.url)); // <repo>/dist/bench
const REPO = path.resolve(HERE, '..', '..');
const BARE_NODE_JS = path.join(HERE, 'bare-node.js');
const DEFAULT_PLUME_BIN = path.join(REPO, 'bin', 'plume');
const RESULTS_DIR = path.join(REPO, 'bench', 'results');
const APACHE_BIN = '/usr/sbin/apache2';
const NGINX_BIN = '/usr/sbin/nginx';
const WRK_BIN = 'wrk';

// ---------------------------------------------------------------- options

interface Options {
  servers: ServerName[];
  scenarios: ScenarioName[];
  connections: number[];
  durationS: number;
  warmupS: number;
  threads: number;
  runs: number;
  wrkCpus: string | null;
  serverCpus: string | null;
  /** worker processes of the plume-workers column */
  plumeWorkers: number;
  keep: boolean;
  /** what serves the proxy scenarios' backend ports: one nginx process, or three bare Node servers */
  proxyBackends: 'nginx' | 'node';
  out: string;
  plumeBin: string;
  /** the TLS scenarios (bench/tls.ts) */
  tlsScenarios: TlsScenarioName[];
  /** the HTTP/2 scenarios (bench/h2.ts) */
  h2Scenarios: H2ScenarioName[];
}

function serverLabel(name: ServerName, opts: Options): string {
  switch (name) {
    case 'apache':
      return 'Apache (event)';
    case 'plume':
      return 'plume (-X)';
    case 'plume-workers':
      return `plume (${opts.plumeWorkers} worker${opts.plumeWorkers === 1 ? '' : 's'})`;
    case 'nginx':
      return 'nginx';
    case 'bare':
      return 'bare Node';
  }
}

const USAGE = `usage: npm run bench -- [options]
  --servers LIST       apache,plume,plume-workers,nginx,bare
                       (default: all; nginx only if installed)
  --scenarios LIST     1k,100k,404,auth,htaccess3,rewrite-htaccess,if-header,server-status,conn-per-request,gzip-100k,ssi,cgi,proxy-1k,proxy-balancer,php-fpm,
                       tls-1k,tls-handshake (bench/tls.ts: Apache and plume only, after the others),
                       h2-1k (bench/h2.ts: h2load, 100 streams per connection; Apache and plume only)
                       (default: all)
  --connections LIST   wrk connection counts (default: 50,500)
  --duration S         seconds per timed run (default: 10)
  --warmup S           seconds of untimed wrk warm-up before a server's timed runs (default: 2)
  --threads N          wrk threads (default: 1)
  --runs N             timed runs per server and case, the servers of a case taking
                       turns; the median by req/s is reported (default: 1;
                       tls-handshake makes 3 at least)
  --pin                pin wrk to the last CPU and the servers to the others
                       (default when the machine has 2 to 8 CPUs)
  --no-pin             no CPU pinning at all
  --wrk-cpus LIST      taskset CPU list for wrk (e.g. 1)
  --server-cpus LIST   taskset CPU list for the servers (e.g. 0)
  --plume-workers N    worker processes of the plume-workers column
                       (default: the number of CPUs the servers may use)
  --proxy-backends nginx|node  what answers proxy-1k's and proxy-balancer's backend ports: one
                       nginx process (default when installed) or three bare Node servers
  --keep               keep the temporary site, configs and logs
  --plume-bin FILE     plume entry point run with node (default: <repo>/bin/plume)
  --out FILE           JSON output (default: bench/results/latest.json)
`;

function cpuCount(): number {
  // All online CPUs, not this process's affinity (the runner pins itself to wrk's CPU).
  return Math.max(1, os.cpus().length);
}

/** The number of CPUs in a taskset list such as "0", "0-2" or "0,2-3". */
function cpuListSize(list: string): number {
  let n = 0;
  for (const part of parseList(list)) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (m === null) return 0;
    n += m[2] === undefined ? 1 : Math.max(0, Number(m[2]) - Number(m[1]) + 1);
  }
  return n;
}

function parseList(v: string): string[] {
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function die(msg: string): never {
  process.stderr.write(`bench: ${msg}\n\n${USAGE}`);
  process.exit(2);
}

function positiveNumber(flag: string, v: string | undefined): number {
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n) || n <= 0) die(`${flag} needs a positive number`);
  return n;
}

function parseOptions(argv: string[]): Options {
  const o: Options = {
    servers: ALL_SERVERS.filter((s) => s !== 'nginx' || fs.existsSync(NGINX_BIN)),
    scenarios: [...ALL_SCENARIOS],
    connections: [50, 500],
    durationS: 10,
    warmupS: 2,
    threads: 1,
    runs: 1,
    wrkCpus: null,
    serverCpus: null,
    plumeWorkers: 0,
    keep: false,
    proxyBackends: fs.existsSync(NGINX_BIN) ? 'nginx' : 'node',
    out: path.join(RESULTS_DIR, 'latest.json'),
    plumeBin: DEFAULT_PLUME_BIN,
    tlsScenarios: [...ALL_TLS_SCENARIOS],
    h2Scenarios: [...ALL_H2_SCENARIOS],
  };
  const n = cpuCount();
  let pin: boolean | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const eq = a.indexOf('=');
    const flag = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    const takeValue = (): string => {
      if (eq > 0 && a.startsWith('--')) return a.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) die(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--servers': {
        const list = parseList(takeValue());
        for (const s of list) if (!(ALL_SERVERS as readonly string[]).includes(s)) die(`unknown server ${s}`);
        o.servers = list as ServerName[];
        break;
      }
      case '--scenarios': {
        const list = parseList(takeValue());
        const isTls = (s: string): boolean => (ALL_TLS_SCENARIOS as readonly string[]).includes(s);
        const isH2 = (s: string): boolean => (ALL_H2_SCENARIOS as readonly string[]).includes(s);
        for (const s of list) if (!(ALL_SCENARIOS as readonly string[]).includes(s) && !isTls(s) && !isH2(s)) die(`unknown scenario ${s}`);
        o.scenarios = list.filter((s) => !isTls(s) && !isH2(s)) as ScenarioName[];
        o.tlsScenarios = list.filter(isTls) as TlsScenarioName[];
        o.h2Scenarios = list.filter(isH2) as H2ScenarioName[];
        break;
      }
      case '--connections':
        o.connections = parseList(takeValue()).map((v) => Math.round(positiveNumber('--connections', v)));
        break;
      case '--duration':
        o.durationS = Math.max(1, Math.round(positiveNumber('--duration', takeValue())));
        break;
      case '--warmup': {
        const v = Number(takeValue());
        if (!Number.isFinite(v) || v < 0) die('--warmup needs a number >= 0');
        o.warmupS = Math.round(v);
        break;
      }
      case '--runs':
        o.runs = Math.round(positiveNumber('--runs', takeValue()));
        break;
      case '--threads':
        o.threads = Math.round(positiveNumber('--threads', takeValue()));
        break;
      case '--pin':
        pin = true;
        break;
      case '--no-pin':
        pin = false;
        break;
      case '--wrk-cpus':
        o.wrkCpus = takeValue();
        break;
      case '--server-cpus':
        o.serverCpus = takeValue();
        break;
      case '--plume-workers':
        o.plumeWorkers = Math.round(positiveNumber('--plume-workers', takeValue()));
        break;
      case '--keep':
        o.keep = true;
        break;
      case '--proxy-backends': {
        const v = takeValue();
        if (v !== 'nginx' && v !== 'node') die('--proxy-backends is nginx or node');
        if (v === 'nginx' && !fs.existsSync(NGINX_BIN)) die(`--proxy-backends nginx: ${NGINX_BIN} is not installed`);
        o.proxyBackends = v;
        break;
      }
      case '--plume-bin':
        o.plumeBin = path.resolve(takeValue());
        break;
      case '--out':
        o.out = path.resolve(takeValue());
        break;
      case '-h':
      case '--help':
        process.stdout.write(USAGE);
        process.exit(0);
        break;
      default:
        die(`unknown option ${a}`);
    }
  }
  if (o.servers.length === 0 || (o.scenarios.length === 0 && o.tlsScenarios.length === 0 && o.h2Scenarios.length === 0) || o.connections.length === 0) die('nothing to run');
  if (pin === null) pin = o.wrkCpus === null && o.serverCpus === null && n >= 2 && n <= 8;
  if (pin && n >= 2) {
    if (o.wrkCpus === null) o.wrkCpus = String(n - 1);
    if (o.serverCpus === null) o.serverCpus = n === 2 ? '0' : `0-${n - 2}`;
  }
  if ((o.wrkCpus !== null || o.serverCpus !== null) && !haveCommand('taskset')) {
    process.stderr.write('bench: taskset not found, running without CPU pinning\n');
    o.wrkCpus = null;
    o.serverCpus = null;
  }
  if (o.plumeWorkers === 0) o.plumeWorkers = o.serverCpus === null ? n : Math.max(1, cpuListSize(o.serverCpus));
  return o;
}

function haveCommand(cmd: string): boolean {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
  return r.status === 0;
}

function withCpus(cpus: string | null, cmd: string, args: string[]): [string, string[]] {
  return cpus === null ? [cmd, args] : ['taskset', ['-c', cpus, cmd, ...args]];
}

// ---------------------------------------------------------------- process bookkeeping

/** Every child started by the runner that may still be alive; stopped on exit/signal. */
const live = new Set<ChildProcess>();
/** Descendant pids seen while sampling, per server's main pid (pid -> comm), swept by pid
 *  when that server stops (the servers of a case run side by side). */
const knownDescendants = new Map<number, Map<number, string>>();

function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function procComm(pid: number): string | null {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return null;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (!alive(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = (): void => {
      clearTimeout(t);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/** SIGTERM the child by pid, SIGKILL after a grace period, then sweep leftover descendants. */
async function stopChild(child: ChildProcess, graceMs = 8000): Promise<void> {
  const descendants = new Map(child.pid === undefined ? [] : knownDescendants.get(child.pid));
  if (child.pid !== undefined) for (const [pid, comm] of descendantPids(child.pid)) descendants.set(pid, comm);
  if (alive(child) && child.pid !== undefined) {
    try {
      process.kill(child.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    if (!(await waitExit(child, graceMs)) && alive(child)) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await waitExit(child, 3000);
    }
  }
  // Apache/nginx children normally exit with their parent; give them a moment.
  for (let i = 0; i < 30; i++) {
    const left = [...descendants].filter(([pid, comm]) => procComm(pid) === comm);
    if (left.length === 0) break;
    if (i === 29) {
      for (const [pid] of left) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    await sleep(100);
  }
  if (child.pid !== undefined) knownDescendants.delete(child.pid);
}

// ---------------------------------------------------------------- memory and CPU sampling

interface ProcStat {
  ppid: number;
  comm: string;
  /** utime + stime, in clock ticks, all threads */
  ticks: number;
}

/** One pass over /proc/<pid>/stat (this kernel may lack /proc/<pid>/task/<tid>/children). */
function scanProc(): Map<number, ProcStat> {
  const map = new Map<number, ProcStat>();
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return map;
  }
  for (const e of entries) {
    const c = e.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
    } catch {
      continue;
    }
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    // fields after "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    const f = stat.slice(close + 2).split(' ');
    map.set(Number(e), {
      ppid: Number(f[1]),
      comm: stat.slice(open + 1, close),
      ticks: Number(f[11]) + Number(f[12]),
    });
  }
  return map;
}

function descendantsIn(procs: Map<number, ProcStat>, root: number): Map<number, string> {
  const children = new Map<number, number[]>();
  for (const [pid, st] of procs) {
    const list = children.get(st.ppid);
    if (list === undefined) children.set(st.ppid, [pid]);
    else list.push(pid);
  }
  const out = new Map<number, string>();
  const queue = [...(children.get(root) ?? [])];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    if (out.has(pid)) continue;
    out.set(pid, procs.get(pid)?.comm ?? '');
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** VmRSS of a process and of each of its descendants, in MB. */
interface TreeRss {
  mainMB: number;
  childrenMB: number[];
}

function treeRss(root: number): TreeRss {
  const kids = [...descendantPids(root).keys()]
    .map((pid) => statusKB(pid, 'VmRSS', 'status'))
    .filter((kb) => kb > 0);
  return { mainMB: mb(statusKB(root, 'VmRSS', 'status')), childrenMB: kids.map(mb) };
}

function descendantPids(root: number): Map<number, string> {
  return descendantsIn(scanProc(), root);
}

function statusKB(pid: number, field: string, file: 'status' | 'smaps_rollup'): number {
  try {
    const text = fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return m === null ? 0 : Number(m[1]);
  } catch {
    return 0;
  }
}

let clockTicks = 0;
function clkTck(): number {
  if (clockTicks === 0) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number((r.stdout ?? '').trim());
    clockTicks = r.status === 0 && n > 0 ? n : 100;
  }
  return clockTicks;
}

/**
 * Polls the server's process tree every 100 ms: sums VmRSS (and PSS, which
 * does not count pages shared between Apache's/nginx's processes several
 * times) over the main pid and all its descendants, keeping the peak; and
 * accounts the CPU time used by the tree and by the load generator.
 */
interface CpuStat {
  /** user + nice + system, all CPUs, in ticks */
  task: number;
  /** irq + softirq (loopback networking is largely softirq) */
  irq: number;
  /** time the hypervisor gave to other guests */
  steal: number;
}

function cpuStat(): CpuStat {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const v = (i: number): number => f[i] ?? 0;
    return { task: v(0) + v(1) + v(2), irq: v(5) + v(6), steal: v(7) };
  } catch {
    return { task: 0, irq: 0, steal: 0 };
  }
}

function runnerTicks(): number {
  const u = process.cpuUsage();
  return ((u.user + u.system) / 1e6) * clkTck();
}

class Sampler {
  private timer: NodeJS.Timeout | null = null;
  private startedAt = 0;
  private stoppedAt = 0;
  private cpu0: CpuStat = { task: 0, irq: 0, steal: 0 };
  private cpu1: CpuStat = { task: 0, irq: 0, steal: 0 };
  private runner0 = 0;
  private runner1 = 0;
  /** pid -> [ticks at first sight (0 if born during the run), last ticks] */
  private serverTicks = new Map<number, [number, number]>();
  private clientTicks = new Map<number, [number, number]>();
  /** the proxy scenarios' backends: neither the server nor "others" */
  private sideTicks = new Map<number, [number, number]>();
  peakRssKB = 0;
  peakPssKB = 0;
  peakProcesses = 0;
  samples = 0;

  constructor(
    private readonly root: number,
    private readonly client: () => number | undefined = () => undefined,
    private readonly side: readonly number[] = [],
  ) {}

  start(): void {
    this.startedAt = Date.now();
    this.cpu0 = cpuStat();
    this.runner0 = runnerTicks();
    this.take(true);
    this.timer = setInterval(() => this.take(false), 100);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.take(false);
    this.stoppedAt = Date.now();
    this.cpu1 = cpuStat();
    this.runner1 = runnerTicks();
  }

  private perCore(ticks: number): number {
    const secs = (this.stoppedAt - this.startedAt) / 1000;
    return secs <= 0 ? 0 : Math.round(((ticks / clkTck()) * 100) / secs);
  }

  private used(m: Map<number, [number, number]>): number {
    let ticks = 0;
    for (const [first, last] of m.values()) ticks += last - first;
    return ticks;
  }

  /**
   * Task CPU time used on the machine by anything but the server, wrk and this
   * runner during the sampling, in % of one core: other people's work that
   * competes with the benchmark. High values make the figures unreliable.
   */
  get otherCpuPct(): number {
    const other =
      this.cpu1.task - this.cpu0.task - this.used(this.serverTicks) - this.used(this.clientTicks) - this.used(this.sideTicks) - (this.runner1 - this.runner0);
    return Math.max(0, this.perCore(other));
  }

  /** irq + softirq time, % of one core (loopback TCP work not charged to any process). */
  get irqCpuPct(): number {
    return this.perCore(this.cpu1.irq - this.cpu0.irq);
  }

  /** CPU stolen by the hypervisor, % of one core. */
  get stealCpuPct(): number {
    return this.perCore(this.cpu1.steal - this.cpu0.steal);
  }

  /** CPU used by the server tree during the sampling, in % of one core. */
  get serverCpuPct(): number {
    return this.pct(this.serverTicks);
  }

  /** CPU used by the proxy scenarios' backends, in % of one core (0 when there are none). */
  get sideCpuPct(): number {
    return this.pct(this.sideTicks);
  }

  /** CPU used by the load generator (wrk), in % of one core (up to the last sample before it exited). */
  get clientCpuPct(): number {
    return this.pct(this.clientTicks);
  }

  private pct(m: Map<number, [number, number]>): number {
    return this.perCore(this.used(m));
  }

  private static account(m: Map<number, [number, number]>, pid: number, ticks: number, first: boolean): void {
    const e = m.get(pid);
    if (e === undefined) m.set(pid, [first ? ticks : 0, ticks]);
    else e[1] = Math.max(e[1], ticks);
  }

  take(first = false): void {
    const procs = scanProc();
    const descendants = descendantsIn(procs, this.root);
    const pids = [this.root, ...descendants.keys()];
    let known = knownDescendants.get(this.root);
    if (known === undefined) knownDescendants.set(this.root, (known = new Map()));
    for (const [pid, comm] of descendants) known.set(pid, comm);
    let rssKB = 0;
    let pssKB = 0;
    let processes = 0;
    for (const pid of pids) {
      const st = procs.get(pid);
      if (st !== undefined) Sampler.account(this.serverTicks, pid, st.ticks, first);
      const rss = statusKB(pid, 'VmRSS', 'status');
      if (rss === 0) continue;
      processes++;
      rssKB += rss;
      pssKB += statusKB(pid, 'Pss', 'smaps_rollup');
    }
    const cpid = this.client();
    const cst = cpid === undefined ? undefined : procs.get(cpid);
    if (cpid !== undefined && cst !== undefined) Sampler.account(this.clientTicks, cpid, cst.ticks, first);
    for (const spid of this.side) {
      const sst = procs.get(spid);
      if (sst !== undefined) Sampler.account(this.sideTicks, spid, sst.ticks, first);
    }
    this.samples++;
    this.peakRssKB = Math.max(this.peakRssKB, rssKB);
    this.peakPssKB = Math.max(this.peakPssKB, pssKB);
    this.peakProcesses = Math.max(this.peakProcesses, processes);
  }
}

// ---------------------------------------------------------------- servers

interface Started {
  child: ChildProcess;
  output: () => string;
  logFiles: string[];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

function spawnServer(cmd: string, args: string[], cpus: string | null, cwd: string): Started {
  const [c, a] = withCpus(cpus, cmd, args);
  const child = track(spawn(c, a, { cwd, stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  const keep = (d: Buffer): void => {
    if (out.length < 64 * 1024) out += d.toString('utf8');
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('error', (e) => keep(Buffer.from(`spawn error: ${e.message}\n`)));
  return { child, output: () => out, logFiles: [] };
}

function tail(file: string, max = 2000): string {
  try {
    const t = fs.readFileSync(file, 'utf8');
    return t.length > max ? '...' + t.slice(-max) : t;
  } catch {
    return '';
  }
}

function failureText(s: Started): string {
  const parts = [s.output().trim()];
  for (const f of s.logFiles) {
    const t = tail(f).trim();
    if (t !== '') parts.push(`${path.basename(f)}: ${t}`);
  }
  const text = parts.filter((p) => p !== '').join('\n');
  return text === '' ? '(no output)' : text;
}

async function startServer(name: ServerName, site: Site, opts: Options): Promise<{ started: Started; port: number }> {
  const port = await freePort();
  const dir = path.join(site.root, name);
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true, mode: 0o755 });
  let started: Started;
  switch (name) {
    case 'apache':
    case 'plume':
    case 'plume-workers': {
      const conf = path.join(dir, 'httpd.conf');
      fs.writeFileSync(conf, httpdConf(site, port, name === 'apache' || plumeNoStatus === null, name === 'apache' || plumeNoProxy === null));
      const args =
        name === 'apache'
          ? ['-d', dir, '-f', conf, '-D', 'FOREGROUND']
          : name === 'plume'
            ? [opts.plumeBin, '-X', '-d', dir, '-f', conf]
            : [opts.plumeBin, '-d', dir, '-f', conf, '-D', 'FOREGROUND', ...workerDirectives(opts.plumeWorkers)];
      started = spawnServer(name === 'apache' ? APACHE_BIN : process.execPath, args, opts.serverCpus, dir);
      started.logFiles.push(path.join(dir, 'logs', 'error_log'));
      break;
    }
    case 'nginx': {
      fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true, mode: 0o755 });
      const conf = path.join(dir, 'nginx.conf');
      fs.writeFileSync(conf, nginxConf(site, dir, port));
      const errLog = path.join(dir, 'logs', 'error.log');
      started = spawnServer(NGINX_BIN, ['-p', dir + '/', '-c', conf, '-e', errLog], opts.serverCpus, dir);
      started.logFiles.push(errLog);
      break;
    }
    case 'bare':
      started = spawnServer(
        process.execPath,
        [BARE_NODE_JS, '--port', String(port), '--root', site.htdocs],
        opts.serverCpus,
        dir,
      );
      break;
  }
  const deadline = Date.now() + 15000;
  while (true) {
    if (!alive(started.child)) {
      await sleep(50); // let stderr drain
      throw new Error(`exited (${started.child.exitCode ?? started.child.signalCode}): ${failureText(started)}`);
    }
    if (shuttingDown) {
      await stopChild(started.child, 2000);
      throw new Aborted('interrupted');
    }
    if (await canConnect(port)) break;
    if (Date.now() > deadline) {
      await stopChild(started.child, 2000);
      throw new Error(`not listening on 127.0.0.1:${port} after 15 s: ${failureText(started)}`);
    }
    await sleep(100);
  }
  await sleep(300); // Apache/nginx: let the worker processes come up
  return { started, port };
}

/**
 * Why plume cannot run the server-status scenario (null: it can). Until plume
 * has mod_status, `LoadModule status_module` stops it at startup; plume then
 * gets the shared httpd.conf without the mod_status lines and its
 * server-status cases are skipped (Apache's still run).
 */
let plumeNoStatus: string | null = null;

/** Why plume cannot run the proxy-balancer scenario (null: it can): a plume without
 *  mod_proxy gets the shared httpd.conf without the balancer lines. */
let plumeNoProxy: string | null = null;

function probeProxyModules(site: Site, opts: Options): string | null {
  const dir = path.join(site.root, 'proxy-probe');
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true, mode: 0o755 });
  const conf = path.join(dir, 'httpd.conf');
  fs.writeFileSync(conf, httpdConf(site, 1, plumeNoStatus === null, true));
  const r = spawnSync(process.execPath, [opts.plumeBin, '-t', '-d', dir, '-f', conf], { encoding: 'utf8', timeout: 30000 });
  if (r.status === 0) return null;
  const why = `${r.stderr ?? ''}${r.stdout ?? ''}`.trim().split('\n')[0] ?? '';
  return `skipped: plume has no mod_proxy yet (plume -t: ${why || `exit ${r.status ?? r.signal}`})`;
}

/** The proxy scenarios' backends (proxy-1k uses the first port, proxy-balancer all three): the
 *  site's htdocs served by one nginx process listening on three ports (or, with
 *  --proxy-backends node or without nginx, three bare Node servers). They are part of the
 *  environment, as wrk is, and run on wrk's CPUs: pinned with the server under test, a backend
 *  took that server's CPU (and preempted it) for every request it answered, so the figures
 *  measured the server plus the backend. nginx because a bare Node backend, sharing its CPU
 *  with wrk, used half of that CPU at 24,000 proxied requests/s (session 19) and became the
 *  limit of the scenario rather than the proxy under test; nginx answers the same requests for
 *  a fraction of that. Their CPU is reported per run. */
async function startBackends(site: Site, opts: Options): Promise<void> {
  const ports: number[] = [];
  const pids: number[] = [];
  for (let i = 0; i < 3; i++) ports.push(await freePort());
  const started: Started[] = [];
  if (opts.proxyBackends === 'nginx') {
    const dir = path.join(site.root, 'proxy-backends');
    for (const d of ['logs', 'tmp']) fs.mkdirSync(path.join(dir, d), { recursive: true, mode: 0o755 });
    const conf = path.join(dir, 'nginx.conf');
    fs.writeFileSync(conf, backendNginxConf(site, dir, ports));
    started.push(spawnServer(NGINX_BIN, ['-p', dir, '-e', path.join(dir, 'logs', 'error.log'), '-c', conf], opts.wrkCpus ?? opts.serverCpus, site.root));
  } else {
    for (const port of ports) {
      started.push(spawnServer(process.execPath, [BARE_NODE_JS, '--port', String(port), '--root', site.htdocs], opts.wrkCpus ?? opts.serverCpus, site.root));
    }
  }
  for (const child of started) {
    if (child.child.pid !== undefined) pids.push(child.child.pid);
    process.once('exit', () => { try { child.child.kill('SIGKILL'); } catch { /* gone */ } });
  }
  for (const port of ports) {
    const deadline = Date.now() + 15000;
    while (!(await canConnect(port))) {
      if (Date.now() > deadline || started.some((c) => !alive(c.child))) {
        throw new Error(`proxy backend on ${port} did not start: ${started.map(failureText).join('; ')}`);
      }
      await sleep(50);
    }
  }
  site.backendPorts = ports;
  site.backendPids = pids;
}

function probeStatusModule(site: Site, opts: Options): string | null {
  const dir = path.join(site.root, 'status-probe');
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true, mode: 0o755 });
  const conf = path.join(dir, 'httpd.conf');
  fs.writeFileSync(conf, httpdConf(site, 1, true));
  const r = spawnSync(process.execPath, [opts.plumeBin, '-t', '-d', dir, '-f', conf], { encoding: 'utf8', timeout: 30000 });
  if (r.status === 0) return null;
  const why = `${r.stderr ?? ''}${r.stdout ?? ''}`.trim().split('\n')[0] ?? '';
  return `skipped: plume has no mod_status yet (plume -t: ${why || `exit ${r.status ?? r.signal}`})`;
}

/**
 * The plume-workers column: plume started as Apache is (no -X, -D FOREGROUND)
 * with as many worker processes as asked for, set with the event MPM's
 * StartServers (and ServerLimit above its default of 16) after the shared
 * httpd.conf. This is the seam for issue 5's worker mode: until plume forks
 * workers, probeWorkerMode() finds a single process and the column is skipped.
 */
function workerDirectives(n: number): string[] {
  const out = ['-c', `StartServers ${n}`];
  if (n > 16) out.push('-c', `ServerLimit ${n}`);
  return out;
}

/**
 * Starts the plume-workers server once, sends it a request, and counts the
 * processes under it. Returns null when plume runs worker processes, else why
 * the column is skipped. Nothing is measured here.
 */
async function probeWorkerMode(site: Site, opts: Options): Promise<string | null> {
  let started: Started;
  let port: number;
  try {
    ({ started, port } = await startServer('plume-workers', site, opts));
  } catch (e) {
    if (e instanceof Aborted) throw e;
    return `failed to start: ${e instanceof Error ? e.message : String(e)}`;
  }
  try {
    await httpGet(port, SCENARIOS['1k'].urlPath, {});
    await sleep(500);
    const pid = started.child.pid as number;
    // No piped logs in the shared httpd.conf: any child process is a worker.
    if (descendantPids(pid).size === 0)
      return (
        'skipped: plume has no worker mode yet (issue 5): started without -X ' +
        `(-D FOREGROUND -c "StartServers ${opts.plumeWorkers}") it serves from a single process`
      );
    return null;
  } catch (e) {
    return `failed verification: ${e instanceof Error ? e.message : String(e)}`;
  } finally {
    await stopChild(started.child);
  }
}

/** The files gzip scenarios must decompress to, read when the site is made. */
const gzipOriginals = new Map<string, Buffer>();

interface Verified {
  status: number;
  contentType: string;
  contentLength: string;
  bodyLength: number;
  server: string;
  headers: http.IncomingHttpHeaders;
  /** the first 64 KB of the body, latin1 */
  text: string;
}

function httpGet(port: number, urlPath: string, headers: Record<string, string>): Promise<Verified> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, headers, agent: false, timeout: 5000 }, (res) => {
      let n = 0;
      let bodyOk = true;
      const kept: Buffer[] = [];
      res.on('data', (d: Buffer) => {
        if (n < 65536) kept.push(d);
        n += d.length;
      });
      res.on('error', () => {
        bodyOk = false;
      });
      res.on('end', () => {
        if (!bodyOk) reject(new Error('response body error'));
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type'] ?? ''),
          contentLength: String(res.headers['content-length'] ?? ''),
          bodyLength: n,
          server: String(res.headers['server'] ?? ''),
          headers: res.headers,
          text: Buffer.concat(kept).subarray(0, 65536).toString('latin1'),
        });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout after 5 s')));
    req.on('error', reject);
  });
}

const isPlume = (name: ServerName): boolean => name === 'plume' || name === 'plume-workers';

/**
 * One request (with the scenario's headers) before timing: the status, the
 * body length and Content-Length, the Content-Type; for a fixed page without a
 * file (404) plume must send as many bytes as Apache did; server-status must
 * hold the fields of ?auto (nginx: stub_status's first line). Scenario checks:
 * auth answers 401 with a Basic challenge without credentials; under
 * htaccess3 Apache and plume send the header of every level's .htaccess;
 * conn-per-request answers Connection: close.
 */
async function verify(
  port: number,
  sc: Scenario,
  name: ServerName,
  expected: Buffer | undefined,
  apache: Verified | undefined,
): Promise<Verified> {
  const v = await httpGet(port, sc.urlPath, sc.headers);
  const problems: string[] = [];
  if (v.status !== sc.status) problems.push(`status ${v.status}, expected ${sc.status}`);
  if (expected !== undefined) {
    if (v.bodyLength !== expected.length) problems.push(`body ${v.bodyLength} bytes, expected ${expected.length}`);
    if (v.contentLength !== String(expected.length)) problems.push(`Content-Length "${v.contentLength}"`);
  } else {
    if (v.contentLength !== '' && v.contentLength !== String(v.bodyLength))
      problems.push(`Content-Length "${v.contentLength}" for a body of ${v.bodyLength} bytes`);
    if (sc.sameAsApache && isPlume(name) && apache !== undefined && apache.status === v.status) {
      if (v.bodyLength !== apache.bodyLength) problems.push(`body ${v.bodyLength} bytes, Apache sent ${apache.bodyLength}`);
      if (v.contentType !== apache.contentType) problems.push(`Content-Type "${v.contentType}", Apache sent "${apache.contentType}"`);
    }
  }
  if (sc.contentType !== null && !v.contentType.startsWith(sc.contentType)) problems.push(`Content-Type "${v.contentType}"`);
  if (sc.headers['Connection'] === 'close' && String(v.headers['connection'] ?? '').toLowerCase() !== 'close')
    problems.push(`Connection "${String(v.headers['connection'] ?? '')}", expected close`);
  if (sc.name === 'htaccess3' && (name === 'apache' || isPlume(name))) {
    const missing = HTACCESS_HEADERS.filter((h) => v.headers[h] === undefined);
    if (missing.length > 0) problems.push(`no ${missing.join(', ')} header: not every .htaccess was applied`);
  }
  if (sc.name === 'if-header' && (name === 'apache' || isPlume(name)) && v.headers['x-bench-if'] !== 'matched')
    problems.push('no X-Bench-If header: the <If> condition was not applied');
  for (const want of sc.bodyHas[name] ?? [])
    if (!v.text.includes(want)) problems.push(`body without "${want}"`);
  if (sc.gzipOf !== undefined && gzipOriginals.has(sc.gzipOf)) {
    if (String(v.headers['content-encoding'] ?? '') !== 'gzip') problems.push(`Content-Encoding "${String(v.headers['content-encoding'] ?? '')}", expected gzip`);
    else {
      let plain: Buffer | null = null;
      try { plain = zlib.gunzipSync(Buffer.from(v.text, 'latin1')); } catch { /* reported below */ }
      if (plain === null || !plain.equals(gzipOriginals.get(sc.gzipOf)!)) problems.push('the gzip body does not decompress to the file');
    }
  }
  if (sc.name === 'auth') {
    const anon = await httpGet(port, sc.urlPath, {});
    const challenge = String(anon.headers['www-authenticate'] ?? '');
    if (anon.status !== 401) problems.push(`without credentials: status ${anon.status}, expected 401`);
    else if (!challenge.startsWith('Basic realm=')) problems.push(`without credentials: WWW-Authenticate "${challenge}"`);
  }
  if (problems.length > 0) throw new Error(`GET ${sc.urlPath}: ${problems.join(', ')}`);
  return v;
}

// ---------------------------------------------------------------- wrk

interface WrkResult {
  requestsPerSec: number;
  transferPerSec: string;
  latencyAvgMs: number | null;
  p50Ms: number | null;
  p90Ms: number | null;
  p99Ms: number | null;
  requests: number | null;
  socketErrors: { connect: number; read: number; write: number; timeout: number } | null;
  non2xx3xx: number;
  raw: string;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60000, h: 3600000 };

/** "812.00us" / "1.23ms" / "2.01s" / "1.00m" -> milliseconds */
export function toMs(v: string, unit: string): number {
  const f = UNIT_MS[unit];
  if (f === undefined) throw new Error(`unknown wrk time unit ${unit}`);
  return Number(v) * f;
}

function pct(raw: string, p: string): number | null {
  const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, 'm').exec(raw);
  return m === null ? null : toMs(m[1] as string, m[2] as string);
}

export function parseWrk(raw: string): WrkResult {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(raw);
  if (rps === null) throw new Error(`cannot parse wrk output:\n${raw}`);
  const lat = /^\s*Latency\s+([\d.]+)(us|ms|s|m|h)\s/m.exec(raw);
  const tr = /^Transfer\/sec:\s+(\S+)/m.exec(raw);
  const reqs = /^\s*(\d+) requests in /m.exec(raw);
  const se = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(raw);
  const non = /Non-2xx or 3xx responses: (\d+)/.exec(raw);
  return {
    requestsPerSec: Number(rps[1]),
    transferPerSec: tr === null ? '' : (tr[1] as string),
    latencyAvgMs: lat === null ? null : toMs(lat[1] as string, lat[2] as string),
    p50Ms: pct(raw, '50'),
    p90Ms: pct(raw, '90'),
    p99Ms: pct(raw, '99'),
    requests: reqs === null ? null : Number(reqs[1]),
    socketErrors:
      se === null
        ? null
        : { connect: Number(se[1]), read: Number(se[2]), write: Number(se[3]), timeout: Number(se[4]) },
    non2xx3xx: non === null ? 0 : Number(non[1]),
    raw,
  };
}

let currentWrk: ChildProcess | null = null;

function runWrk(
  opts: Options,
  connections: number,
  seconds: number,
  url: string,
  headers: Record<string, string>,
): Promise<WrkResult> {
  const args = [`-t${Math.min(opts.threads, connections)}`, `-c${connections}`, `-d${seconds}s`, '--timeout', '5s', '--latency'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  const [c, a] = withCpus(opts.wrkCpus, WRK_BIN, args);
  return new Promise((resolve, reject) => {
    const child = track(spawn(c, a, { stdio: ['ignore', 'pipe', 'pipe'] }));
    currentWrk = child;
    let out = '';
    let err = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => (err += d.toString('utf8')));
    const killer = setTimeout(() => {
      if (child.pid !== undefined && alive(child)) process.kill(child.pid, 'SIGKILL');
    }, (seconds + 20) * 1000);
    child.on('error', (e) => {
      clearTimeout(killer);
      currentWrk = null;
      reject(new Error(`cannot run wrk: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      currentWrk = null;
      if (code !== 0) {
        reject(new Error(`wrk exited ${code ?? signal}: ${(err + out).trim()}`));
        return;
      }
      try {
        resolve(parseWrk(out));
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  });
}

// ---------------------------------------------------------------- machine

function firstLine(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error !== undefined) return 'not available';
  const text = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  return text.split('\n')[0] ?? '';
}

interface Machine {
  nproc: number;
  cpuModel: string;
  memTotalMB: number;
  kernel: string;
  node: string;
  apache: string;
  nginx: string;
  wrk: string;
  plume: string;
}

function machineInfo(): Machine {
  let cpuModel = os.cpus()[0]?.model ?? 'unknown';
  try {
    const info = fs.readFileSync('/proc/cpuinfo', 'utf8');
    const m = /^model name\s*:\s*(.+)$/m.exec(info) ?? /^Hardware\s*:\s*(.+)$/m.exec(info);
    if (m !== null) cpuModel = (m[1] as string).trim();
  } catch {
    /* keep os.cpus() */
  }
  let plume = 'unknown';
  try {
    const pkg: unknown = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
    if (typeof pkg === 'object' && pkg !== null && 'version' in pkg) plume = String(pkg.version);
  } catch {
    /* unknown */
  }
  const gitRev = spawnSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  if (gitRev.status === 0) plume += ` (${gitRev.stdout.trim()})`;
  return {
    nproc: cpuCount(),
    cpuModel,
    memTotalMB: Math.round(os.totalmem() / 1048576),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    apache: fs.existsSync(APACHE_BIN) ? firstLine(APACHE_BIN, ['-v']).replace(/^Server version:\s*/, '') : 'Apache not installed',
    nginx: fs.existsSync(NGINX_BIN) ? firstLine(NGINX_BIN, ['-v']).replace(/^nginx version:\s*/, '') : 'nginx not installed',
    wrk: firstLine(WRK_BIN, ['-v']).replace(/\s+\[.*$/, ''),
    plume,
  };
}

/** CPU busy over one second before anything starts, and who used it. */
async function machineBusy(): Promise<{ busyPct: number; top: string }> {
  const c0 = cpuStat();
  const p0 = scanProc();
  const t0 = Date.now();
  await sleep(1000);
  const c1 = cpuStat();
  const p1 = scanProc();
  const secs = (Date.now() - t0) / 1000;
  const busyPct = Math.round((((c1.task - c0.task + c1.irq - c0.irq) / clkTck()) * 100) / secs);
  const users: [string, number][] = [];
  for (const [pid, st] of p1) {
    const before = p0.get(pid);
    const d = st.ticks - (before?.ticks ?? st.ticks);
    if (d > 0 && pid !== process.pid) users.push([`${st.comm} (pid ${pid})`, Math.round(((d / clkTck()) * 100) / secs)]);
  }
  users.sort((a, b) => b[1] - a[1]);
  const top = users
    .slice(0, 4)
    .map(([n, p]) => `${n} ${p}%`)
    .join(', ');
  return { busyPct, top: `${top === '' ? 'no long-lived process' : top}; short-lived processes are not listed` };
}

// ---------------------------------------------------------------- results

interface Row {
  scenario: ScenarioName;
  connections: number;
  server: ServerName;
  ok: boolean;
  error?: string;
  requestsPerSec?: number;
  latencyAvgMs?: number | null;
  p50Ms?: number | null;
  p90Ms?: number | null;
  p99Ms?: number | null;
  transferPerSec?: string;
  requests?: number | null;
  socketErrors?: WrkResult['socketErrors'];
  non2xx3xx?: number;
  /** responses whose status class differs from the scenario's (from wrk's non-2xx/3xx count) */
  unexpectedResponses?: number;
  /** status and body length of the check before timing */
  status?: number;
  bodyBytes?: number;
  /** set when this server does not do what the scenario measures (nginx under htaccess3) */
  notEquivalent?: string;
  peakRssMB?: number;
  peakPssMB?: number;
  processes?: number;
  /** CPU time of the server's process tree during the timed run, % of one core */
  serverCpuPct?: number;
  /** CPU time of wrk during the timed run, % of one core (100 = one core saturated) */
  wrkCpuPct?: number;
  /** CPU time of the proxy scenarios' backends during the timed run, % of one core */
  backendCpuPct?: number;
  /** CPU time of everything else on the machine (noise), % of one core */
  otherCpuPct?: number;
  irqCpuPct?: number;
  stealCpuPct?: number;
  /** req/s of every timed run when --runs > 1 (the row reports the median run) */
  allRequestsPerSec?: number[];
  /** wrk's own output for the reported run */
  wrkOutput?: string;
  idleRssMB?: number;
  /** plume: RSS of its main process and of each child, at start (before any request) */
  idleTree?: TreeRss;
  /** plume: the same, 1 s after the timed run ended */
  afterTree?: TreeRss;
  responseServerHeader?: string;
}

interface Ratio {
  scenario: ScenarioName;
  connections: number;
  /** plume or plume-workers */
  subject: ServerName;
  versus: ServerName;
  throughput: number | null;
  p50: number | null;
  p99: number | null;
  rss: number | null;
  /** the other server does not do what the scenario measures */
  notEquivalent?: string;
  /** one of the two rows had other processes using > NOISY_PCT % of a core */
  noisy: boolean;
}

/** "others" CPU (% of one core) above which a row is flagged as unreliable */
const NOISY_PCT = 15;
/** Other processes, or the hypervisor (steal), took more than NOISY_PCT % of a core. */
const noisyRow = (r: Row | undefined): boolean =>
  (r?.otherCpuPct ?? 0) > NOISY_PCT || (r?.stealCpuPct ?? 0) > NOISY_PCT;
/** Timed runs repeated (at most) because the hypervisor stole more than NOISY_PCT % of a core. */
const STEAL_RETRIES = 2;

const mb = (kb: number): number => Math.round((kb / 1024) * 10) / 10;

function fmtMs(v: number | null | undefined): string {
  if (v === null || v === undefined) return '-';
  if (v < 1) return `${(v * 1000).toFixed(0)}us`;
  if (v < 1000) return `${v.toFixed(2)}ms`;
  return `${(v / 1000).toFixed(2)}s`;
}

function fmtRatio(v: number | null): string {
  return v === null ? 'n/a' : `${v.toFixed(2)}x`;
}

function table(header: string[], rows: string[][], rightAlign: boolean[]): string {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (rightAlign[i] ? c.padStart(w[i] as number) : c.padEnd(w[i] as number))).join('  ').trimEnd();
  return [line(header), w.map((n) => '-'.repeat(n)).join('  ').trimEnd(), ...rows.map(line)].join('\n');
}

/** Errors of a row: wrk's socket errors plus responses of the wrong status class. */
function errorCount(r: Row): number {
  const se = r.socketErrors;
  return (se === null || se === undefined ? 0 : se.connect + se.read + se.write + se.timeout) + (r.unexpectedResponses ?? 0);
}

/** plume's (and plume-workers') figures divided by each reference server's, per case. */
function ratios(rows: Row[], opts: Options): Ratio[] {
  const out: Ratio[] = [];
  const get = (s: ScenarioName, c: number, srv: ServerName): Row | undefined =>
    rows.find((r) => r.scenario === s && r.connections === c && r.server === srv && r.ok);
  const has = (srv: ServerName): boolean => rows.some((r) => r.server === srv);
  const div = (a: number | null | undefined, b: number | null | undefined): number | null =>
    a === null || a === undefined || b === null || b === undefined || b === 0 ? null : a / b;
  for (const s of opts.scenarios)
    for (const c of opts.connections)
      for (const subject of SUBJECTS)
        for (const vs of REFERENCES) {
          const sc = SCENARIOS[s];
          if (!has(subject) || !has(vs) || !runsScenario(sc, vs) || !runsScenario(sc, subject)) continue;
          // A case one of them skipped (plume without mod_status) has no ratio.
          const exists = (srv: ServerName): boolean => rows.some((r) => r.scenario === s && r.connections === c && r.server === srv);
          if (!exists(subject) || !exists(vs)) continue;
          const p = get(s, c, subject);
          const o = get(s, c, vs);
          const ratio: Ratio = {
            scenario: s,
            connections: c,
            subject,
            versus: vs,
            throughput: div(p?.requestsPerSec, o?.requestsPerSec),
            p50: div(p?.p50Ms, o?.p50Ms),
            p99: div(p?.p99Ms, o?.p99Ms),
            rss: div(p?.peakRssMB, o?.peakRssMB),
            noisy: noisyRow(p) || noisyRow(o),
          };
          const ne = sc.notEquivalent[vs];
          if (ne !== undefined) ratio.notEquivalent = ne;
          out.push(ratio);
        }
  return out;
}

const WORKER_RSS_TARGET_MB = 60;

interface WorkerRss {
  server: ServerName;
  workers: number;
  /** largest worker at start, over all cases */
  startMaxMB: number;
  /** largest worker 1 s after a timed run, over all cases, and which case */
  afterMaxMB: number;
  afterCase: string;
  /** the parent of the worker processes (plume-workers), largest seen */
  parentMB: number | null;
}

/**
 * RSS of each serving process of plume: for plume -X its one process, for
 * plume-workers each child (the parent only holds the listeners and logs).
 */
function workerRss(rows: Row[]): WorkerRss[] {
  const out: WorkerRss[] = [];
  for (const server of SUBJECTS) {
    const mine = rows.filter((r) => r.server === server && r.ok && r.idleTree !== undefined);
    if (mine.length === 0) continue;
    const serving = (t: TreeRss): number[] => (server === 'plume' ? [t.mainMB] : t.childrenMB);
    let startMaxMB = 0;
    let afterMaxMB = 0;
    let afterCase = '';
    let parentMB: number | null = null;
    let workers = 0;
    for (const r of mine) {
      const start = serving(r.idleTree as TreeRss);
      workers = Math.max(workers, start.length);
      startMaxMB = Math.max(startMaxMB, ...start);
      if (server === 'plume-workers') parentMB = Math.max(parentMB ?? 0, (r.idleTree as TreeRss).mainMB, r.afterTree?.mainMB ?? 0);
      const after = r.afterTree === undefined ? [] : serving(r.afterTree);
      const m = Math.max(0, ...after);
      if (m > afterMaxMB) {
        afterMaxMB = m;
        afterCase = `${r.scenario} c=${r.connections}`;
      }
    }
    out.push({ server, workers, startMaxMB, afterMaxMB, afterCase, parentMB });
  }
  return out;
}

function report(opts: Options, rows: Row[], failures: Record<string, string>, skipped: Record<string, string>): string {
  const lines: string[] = [];
  const order = (srv: ServerName): number => opts.servers.indexOf(srv);
  const label = (srv: ServerName, notEquivalent: string | undefined): string =>
    serverLabel(srv, opts) + (notEquivalent === undefined ? '' : ' *');
  const sorted = [...rows].sort(
    (a, b) =>
      opts.scenarios.indexOf(a.scenario) - opts.scenarios.indexOf(b.scenario) ||
      a.connections - b.connections ||
      order(a.server) - order(b.server),
  );
  lines.push(
    table(
      ['scenario', 'conns', 'server', 'req/s', 'p50', 'p99', 'peak RSS', '(PSS)', 'procs', 'CPU srv', 'CPU wrk', 'others', 'steal', 'errors'],
      sorted.map((r) => {
        if (!r.ok)
          return [r.scenario, String(r.connections), label(r.server, r.notEquivalent), '-', '-', '-', '-', '', '', '', '', '', '', 'FAILED'];
        return [
          r.scenario,
          String(r.connections),
          label(r.server, r.notEquivalent),
          (r.requestsPerSec ?? 0).toFixed(0),
          fmtMs(r.p50Ms),
          fmtMs(r.p99Ms),
          `${(r.peakRssMB ?? 0).toFixed(1)} MB`,
          `(${(r.peakPssMB ?? 0).toFixed(1)})`,
          String(r.processes ?? ''),
          `${r.serverCpuPct ?? 0}%`,
          `${r.wrkCpuPct ?? 0}%`,
          `${r.otherCpuPct ?? 0}%${(r.otherCpuPct ?? 0) > NOISY_PCT ? '!' : ''}`,
          `${r.stealCpuPct ?? 0}%${(r.stealCpuPct ?? 0) > NOISY_PCT ? '!' : ''}`,
          String(errorCount(r)),
        ];
      }),
      [false, true, false, true, true, true, true, true, true, true, true, true, true, true],
    ),
  );
  const notes = new Set<string>();
  for (const r of rows)
    if (r.notEquivalent !== undefined)
      notes.add(`*: not equivalent: ${serverLabel(r.server, opts)} serves the ${r.scenario} file with ${r.notEquivalent}`);
  lines.push(...[...notes].map((n) => `   ${n}`));
  const rs = ratios(rows, opts);
  if (rs.length > 0) {
    lines.push('', 'plume relative to the others (req/s: higher is better; p50, p99 and RSS: lower is better)');
    lines.push(
      table(
        ['scenario', 'conns', 'plume', 'vs', 'req/s', 'p50', 'p99', 'peak RSS', ''],
        rs.map((r) => [
          r.scenario,
          String(r.connections),
          serverLabel(r.subject, opts),
          label(r.versus, r.notEquivalent),
          fmtRatio(r.throughput),
          fmtRatio(r.p50),
          fmtRatio(r.p99),
          fmtRatio(r.rss),
          [r.noisy ? 'noisy!' : '', r.notEquivalent === undefined ? '' : `not equivalent (${r.notEquivalent})`]
            .filter((x) => x !== '')
            .join(', '),
        ]),
        [false, true, false, false, true, true, true, true, false],
      ),
    );
  }
  const perWorker = workerRss(rows);
  if (perWorker.length > 0) {
    lines.push('', `RSS per plume worker process (issue 5 target: idle under ${WORKER_RSS_TARGET_MB} MB)`);
    lines.push(
      table(
        ['server', 'workers', 'idle at start', '1 s after load (max)', 'after the case', 'parent'],
        perWorker.map((w) => [
          serverLabel(w.server, opts),
          String(w.workers),
          `${w.startMaxMB.toFixed(1)} MB`,
          `${w.afterMaxMB.toFixed(1)} MB${w.afterMaxMB > WORKER_RSS_TARGET_MB ? ' (over)' : ''}`,
          w.afterCase,
          w.parentMB === null ? '-' : `${w.parentMB.toFixed(1)} MB`,
        ]),
        [false, true, true, true, false, true],
      ),
    );
  }
  if (rows.some((r) => (r.otherCpuPct ?? 0) > NOISY_PCT)) {
    lines.push('', `!: other processes used more than ${NOISY_PCT}% of a core during that run; rerun on a quiet machine.`);
  }
  if (rows.some((r) => (r.stealCpuPct ?? 0) > NOISY_PCT)) {
    lines.push('', `steal !: the hypervisor took more than ${NOISY_PCT}% of a core during that run (after ${STEAL_RETRIES} retries); its figures are low.`);
  }
  const skips = Object.entries(skipped);
  if (skips.length > 0) {
    lines.push('');
    for (const [k, v] of skips) lines.push(`${k}: ${v}`);
  }
  const failed = Object.entries(failures);
  if (failed.length > 0) {
    lines.push('');
    for (const [k, v] of failed) lines.push(`${k}: ${v.replace(/\n/g, '\n    ')}`);
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------- main

let site: Site | null = null;
let keepSite = false;
let shuttingDown = false;

async function cleanup(): Promise<void> {
  if (currentWrk !== null && currentWrk.pid !== undefined && alive(currentWrk)) {
    try {
      process.kill(currentWrk.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const c of [...live]) await stopChild(c, 2000);
  await stopTlsChildren();
  await stopH2Children();
  if (site !== null && !keepSite) fs.rmSync(site.root, { recursive: true, force: true });
}

function onSignal(sig: NodeJS.Signals): void {
  if (shuttingDown) return;
  shuttingDown = true;
  process.stderr.write(`\nbench: ${sig}, stopping servers\n`);
  // The main loop sees shuttingDown, stops its server and returns; killing wrk
  // makes it return now. Should it not within 15 s, clean up from here.
  if (currentWrk !== null && currentWrk.pid !== undefined && alive(currentWrk)) {
    try {
      process.kill(currentWrk.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  setTimeout(() => {
    void cleanup().finally(() => process.exit(130));
  }, 15000).unref();
}

class Aborted extends Error {}

function checkAbort(): void {
  if (shuttingDown) throw new Aborted('interrupted');
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  keepSite = opts.keep;
  if (opts.wrkCpus !== null) {
    // The runner's own work (sampling /proc every 100 ms) goes on wrk's CPUs, not the server's.
    spawnSync('taskset', ['-a', '-p', '-c', opts.wrkCpus, String(process.pid)], { stdio: 'ignore' });
  }
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const machine = machineInfo();
  const write = (s: string): void => {
    process.stdout.write(s + '\n');
  };
  write(`machine: ${machine.nproc} CPUs, ${machine.cpuModel}, ${machine.memTotalMB} MB RAM, ${machine.kernel}`);
  write(`node ${machine.node}; ${machine.apache}; ${machine.nginx}; ${machine.wrk}; plume ${machine.plume}`);
  write(
    `wrk -t${opts.threads} -c{${opts.connections.join(',')}} -d${opts.durationS}s --latency, ${opts.warmupS}s warm-up; ` +
      `CPU pinning: ${opts.wrkCpus === null && opts.serverCpus === null ? 'none' : `wrk on CPU ${opts.wrkCpus ?? 'any'}, servers on CPU ${opts.serverCpus ?? 'any'}`}`,
  );
  if (!haveCommand(WRK_BIN)) {
    write('bench: wrk is not installed (apt-get install wrk); nothing measured');
    return;
  }

  const idleCheck = await machineBusy();
  write(`machine load before the run: ${idleCheck.busyPct}% of one core busy (load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')})`);
  if (idleCheck.busyPct > NOISY_PCT)
    write(`warning: the machine is not idle (${idleCheck.top}); figures will be noisy. Rerun when it is quiet.`);

  site = makeSite(opts.plumeBin, opts.scenarios.includes('auth'));
  for (const sc of Object.values(SCENARIOS)) if (sc.gzipOf !== undefined) gzipOriginals.set(sc.gzipOf, fs.readFileSync(path.join(site.htdocs, sc.gzipOf)));
  write('scenarios:');
  for (const s of opts.scenarios) {
    const sc = SCENARIOS[s];
    const h = Object.entries(sc.headers).map(([k, v]) => ` -H '${k}: ${v}'`).join('');
    write(`  ${s.padEnd(16)} GET ${sc.urlPath}${h} -> ${sc.status}: ${sc.description}`);
  }
  if (opts.scenarios.includes('auth')) write(`  (auth password file ${site.htpasswdNote})`);
  const expected = expectedBodies(site);
  const rows: Row[] = [];
  const failures: Record<string, string> = {};
  const skipped: Record<string, string> = {};
  /** Apache's answer to each scenario's check, for comparing plume's 404 page with */
  const apacheAnswers = new Map<ScenarioName, Verified>();

  if (opts.scenarios.includes('php-fpm')) {
    try {
      const pool = await startFpm(path.join(site.root, 'php-fpm'), await freePort(), Math.max(4, 2 * cpuCount()));
      track(pool.child);
      site.fpmPort = pool.port;
      write(`php-fpm: ${pool.binary}, one pool on 127.0.0.1:${pool.port} for every server`);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      for (const name of opts.servers) skipped[`${serverLabel(name, opts)} php-fpm`] = why;
      write(`php-fpm: ${why}`);
    }
  }
  if (opts.scenarios.includes('server-status') && opts.servers.some(isPlume)) {
    plumeNoStatus = probeStatusModule(site, opts);
    if (plumeNoStatus !== null) {
      for (const name of opts.servers.filter(isPlume)) skipped[`${serverLabel(name, opts)} server-status`] = plumeNoStatus;
      write(`plume server-status: ${plumeNoStatus}`);
    }
  }
  const proxied = opts.scenarios.includes('proxy-balancer') || opts.scenarios.includes('proxy-1k');
  if (proxied) await startBackends(site, opts);
  if (proxied || (opts.scenarios.includes('php-fpm') && site.fpmPort !== null)) {
    if (opts.servers.some(isPlume)) {
      plumeNoProxy = probeProxyModules(site, opts);
      if (plumeNoProxy !== null) {
        for (const name of opts.servers.filter(isPlume)) for (const sc of ['proxy-1k', 'proxy-balancer', 'php-fpm']) if (opts.scenarios.includes(sc as ScenarioName)) skipped[`${serverLabel(name, opts)} ${sc}`] = plumeNoProxy;
        write(`plume proxy-1k/proxy-balancer/php-fpm: ${plumeNoProxy}`);
      }
    }
  }
  const servers: ServerName[] = [];
  for (const name of opts.servers) {
    const bin = name === 'apache' ? APACHE_BIN : name === 'nginx' ? NGINX_BIN : null;
    if (bin !== null && !fs.existsSync(bin)) {
      skipped[serverLabel(name, opts)] = `not installed (${bin})`;
      continue;
    }
    if (name === 'plume-workers') {
      const why = await probeWorkerMode(site, opts);
      if (shuttingDown) return;
      if (why !== null) {
        skipped[serverLabel(name, opts)] = why;
        write(`${serverLabel(name, opts)}: ${why.replace(/\n/g, '\n  ')}`);
        continue;
      }
    }
    servers.push(name);
  }
  const casesOf = (name: ServerName): { sc: Scenario; conns: number }[] =>
    opts.scenarios
      .map((s) => SCENARIOS[s])
      .filter((sc) => runsScenario(sc, name) && !(sc.name === 'server-status' && isPlume(name) && plumeNoStatus !== null) && !((sc.name === 'proxy-balancer' || sc.name === 'proxy-1k') && isPlume(name) && plumeNoProxy !== null) && !(sc.name === 'php-fpm' && (site!.fpmPort === null || (isPlume(name) && plumeNoProxy !== null))))
      .flatMap((sc) => opts.connections.map((c) => ({ sc, conns: c })));
  const perCase = 3 + opts.warmupS + opts.runs * (opts.durationS + 1);
  // plume's cases wait 1 s more after the run (its RSS once idle again).
  const budgetS = servers.reduce((n, name) => n + casesOf(name).length * (perCase + (isPlume(name) ? 1 : 0)), 0);
  const limitS = Math.ceil(budgetS * 1.5 + 60 + 15 * servers.length);
  write(
    `estimated time: about ${Math.ceil(budgetS / 10) * 10} s (${(budgetS / 60).toFixed(1)} min; hard limit ${limitS} s)\n`,
  );
  const hardDeadline = Date.now() + limitS * 1000;

  // Case by case (scenario x connections). The servers of a case run side by side (each idle
  // while another is timed) and their timed runs take turns — run 1: A B C, run 2: B C A... —
  // so that a machine whose speed drifts (a shared virtual machine's does, within minutes)
  // moves every server's figures alike and leaves the ratios alone, and no server is always
  // timed first or last.
  // A fresh set of servers for every case, so that memory and process counts of one case do
  // not carry over from the one before.
  const failCase = (name: ServerName, sc: ScenarioName, conns: number, msg: string): void => {
    if (!rows.some((r) => r.server === name && r.scenario === sc && r.connections === conns)) {
      const row: Row = { scenario: sc, connections: conns, server: name, ok: false, error: msg };
      const ne = SCENARIOS[sc].notEquivalent[name];
      if (ne !== undefined) row.notEquivalent = ne;
      rows.push(row);
    }
  };
  const allCases = opts.scenarios.flatMap((s) => opts.connections.map((c) => ({ sc: SCENARIOS[s], conns: c })));
  const failedToStart = new Map<ServerName, string>();
  /** A server of the case being measured. */
  interface InCase {
    name: ServerName;
    sc: Scenario;
    conns: number;
    label: string;
    key: string;
    started: Started;
    pid: number;
    /** memory before any request */
    idle: Sampler;
    idleTree: TreeRss | null;
    url: string;
    /** its answer to the scenario's check; null until checked */
    v: Verified | null;
    runs: { w: WrkResult; s: Sampler }[];
    retries: number;
    /** plume: its processes' RSS 1 s after its last run */
    afterTree?: TreeRss;
    /** set when it failed: no more runs, no row but the failure */
    error?: string;
  }
  const dropFromCase = async (one: InCase, e: unknown): Promise<void> => {
    const msg = e instanceof Error ? e.message : String(e);
    one.error = msg;
    failures[one.key] = msg;
    write(`   ${one.label} ${msg.replace(/\n/g, '\n     ')}`);
    failCase(one.name, one.sc.name, one.conns, msg);
    await stopChild(one.started.child);
  };
  const timedRun = async (one: InCase, i: number): Promise<void> => {
    for (;;) {
      checkAbort();
      const sampler = new Sampler(one.pid, () => currentWrk?.pid, one.sc.name === 'proxy-1k' || one.sc.name === 'proxy-balancer' ? site!.backendPids ?? [] : []);
      sampler.start();
      let w: WrkResult;
      try {
        w = await runWrk(opts, one.conns, opts.durationS, one.url, one.sc.headers);
      } finally {
        sampler.stop();
      }
      if (!alive(one.started.child))
        throw new Error(
          `server exited during the run (${one.started.child.exitCode ?? one.started.child.signalCode}): ${failureText(one.started)}`,
        );
      // A shared virtual machine: when the hypervisor took the server's CPU for a good part
      // of the run, the figure says little about the server; run it again (bounded).
      if (sampler.stealCpuPct > NOISY_PCT && one.retries < STEAL_RETRIES) {
        one.retries++;
        write(`   ${one.label} ${w.requestsPerSec.toFixed(0)} req/s, but ${sampler.stealCpuPct}% of a core was stolen by the hypervisor: run again`);
        continue;
      }
      one.runs.push({ w, s: sampler });
      if (opts.runs > 1) write(`   ${one.label} run ${i + 1}: ${w.requestsPerSec.toFixed(0)} req/s`);
      return;
    }
  };
  const record = (one: InCase, v: Verified, afterTree: TreeRss | null): void => {
    const { name, label, runs, idle, idleTree, sc, conns } = one;
    const byRps = [...runs].sort((x, y) => x.w.requestsPerSec - y.w.requestsPerSec);
    const { w, s: sampler } = byRps[Math.floor((byRps.length - 1) / 2)] as { w: WrkResult; s: Sampler };
    const peakRssKB = Math.max(...runs.map((r) => r.s.peakRssKB));
    const peakPssKB = Math.max(...runs.map((r) => r.s.peakPssKB));
    // wrk counts responses with a status >= 400: for an error scenario those are the expected ones.
    const unexpected = sc.status < 400 ? w.non2xx3xx : Math.max(0, (w.requests ?? w.non2xx3xx) - w.non2xx3xx);
    const row: Row = {
      scenario: sc.name,
      connections: conns,
      server: name,
      ok: true,
      requestsPerSec: w.requestsPerSec,
      allRequestsPerSec: runs.map((r) => r.w.requestsPerSec),
      latencyAvgMs: w.latencyAvgMs,
      p50Ms: w.p50Ms,
      p90Ms: w.p90Ms,
      p99Ms: w.p99Ms,
      transferPerSec: w.transferPerSec,
      requests: w.requests,
      socketErrors: w.socketErrors,
      non2xx3xx: w.non2xx3xx,
      unexpectedResponses: unexpected,
      status: v.status,
      bodyBytes: v.bodyLength,
      peakRssMB: mb(peakRssKB),
      peakPssMB: mb(peakPssKB),
      processes: Math.max(...runs.map((r) => r.s.peakProcesses)),
      serverCpuPct: sampler.serverCpuPct,
      wrkCpuPct: sampler.clientCpuPct,
      ...(sampler.sideCpuPct > 0 ? { backendCpuPct: sampler.sideCpuPct } : {}),
      otherCpuPct: sampler.otherCpuPct,
      irqCpuPct: sampler.irqCpuPct,
      stealCpuPct: sampler.stealCpuPct,
      idleRssMB: mb(idle.peakRssKB),
      ...(idleTree === null ? {} : { idleTree }),
      ...(afterTree === null ? {} : { afterTree }),
      responseServerHeader: v.server,
      wrkOutput: w.raw,
    };
    const ne = sc.notEquivalent[name];
    if (ne !== undefined) row.notEquivalent = ne;
    rows.push(row);
    const se = w.socketErrors;
    const nErr = se === null ? 0 : se.connect + se.read + se.write + se.timeout;
    write(
      `   ${label} ${w.requestsPerSec.toFixed(0).padStart(7)} req/s  p50 ${fmtMs(w.p50Ms).padStart(8)}  ` +
        `p99 ${fmtMs(w.p99Ms).padStart(8)}  RSS idle ${mb(idle.peakRssKB)} MB, peak ${mb(peakRssKB)} MB  ` +
        `CPU: server ${sampler.serverCpuPct}%, wrk ${sampler.clientCpuPct}%${sampler.sideCpuPct > 0 ? `, backends ${sampler.sideCpuPct}%` : ''}, others ${sampler.otherCpuPct}%, steal ${sampler.stealCpuPct}%` +
        (unexpected > 0 ? `  UNEXPECTED STATUS: ${unexpected} (expected ${sc.status})` : '') +
        (nErr > 0 && se !== null
          ? `  socket errors: connect ${se.connect} read ${se.read} write ${se.write} timeout ${se.timeout}`
          : '') +
        (ne === undefined ? '' : `  (not equivalent: ${ne})`),
    );
    if (sampler.otherCpuPct > NOISY_PCT)
      write(`   warning: other processes used ${sampler.otherCpuPct}% of a core during this run; figures are unreliable`);
  };
  for (const { sc, conns } of allCases) {
    if (shuttingDown) break;
    write(`== ${sc.name} c=${conns}`);
    // 1. Every server of the case is started, checked and warmed up.
    const inCase: InCase[] = [];
    for (const name of servers) {
      if (shuttingDown) break;
      if (!casesOf(name).some((c) => c.sc === sc && c.conns === conns)) continue;
      const startFailure = failedToStart.get(name);
      if (startFailure !== undefined) {
        failCase(name, sc.name, conns, startFailure); // it will not start for the next cases either
        continue;
      }
      const label = serverLabel(name, opts).padEnd(22);
      const key = `${serverLabel(name, opts)} ${sc.name} c=${conns}`;
      if (Date.now() > hardDeadline) {
        failures[key] = 'skipped: benchmark time limit reached';
        failCase(name, sc.name, conns, failures[key]);
        continue;
      }
      if (sc.name === 'auth' && site.htpasswd === null) {
        failures[key] = site.htpasswdNote;
        write(`   ${label} ${site.htpasswdNote}`);
        failCase(name, sc.name, conns, site.htpasswdNote);
        continue;
      }
      let started: Started;
      let port: number;
      try {
        ({ started, port } = await startServer(name, site, opts));
      } catch (e) {
        if (e instanceof Aborted) break;
        const msg = `failed to start: ${e instanceof Error ? e.message : String(e)}`;
        failures[serverLabel(name, opts)] = msg.length > 1500 ? msg.slice(0, 1500) + '...' : msg;
        write(`   ${label} ${failures[serverLabel(name, opts)]?.replace(/\n/g, '\n     ')}`);
        failedToStart.set(name, msg);
        failCase(name, sc.name, conns, msg);
        continue;
      }
      const pid = started.child.pid as number;
      const idle = new Sampler(pid);
      idle.take();
      const one: InCase = {
        name, sc, conns, label, key, started, pid, idle,
        idleTree: isPlume(name) ? treeRss(pid) : null,
        url: `http://127.0.0.1:${port}${sc.urlPath}`,
        v: null, runs: [], retries: 0,
      };
      inCase.push(one);
      try {
        checkAbort();
        try {
          one.v = await verify(port, sc, name, expected.get(sc.name), apacheAnswers.get(sc.name));
        } catch (e) {
          throw new Error(`failed verification: ${e instanceof Error ? e.message : String(e)}`);
        }
        if (name === 'apache') apacheAnswers.set(sc.name, one.v);
        if (opts.warmupS > 0) await runWrk(opts, conns, opts.warmupS, one.url, sc.headers);
      } catch (e) {
        if (e instanceof Aborted || shuttingDown) break;
        await dropFromCase(one, e);
      }
    }
    // 2. The timed runs in turns, each turn starting with the next server: the servers of the
    //    case are measured within seconds of each other, and none is always first or last.
    for (let i = 0; i < opts.runs && !shuttingDown; i++) {
      const going = inCase.filter((c) => c.v !== null && c.error === undefined);
      for (let j = 0; j < going.length && !shuttingDown; j++) {
        const one = going[(i + j) % going.length] as InCase;
        try {
          await timedRun(one, i);
          // plume's processes once its load is over (its heap stays grown): 1 s after its last
          // run, before the machine's kernel may page cold memory of an idle process out.
          if (i === opts.runs - 1 && isPlume(one.name)) {
            await sleep(1000);
            one.afterTree = treeRss(one.pid);
          }
        } catch (e) {
          if (e instanceof Aborted || shuttingDown) break;
          await dropFromCase(one, e);
        }
      }
    }
    // 3. Rows: the median run of each server.
    for (const one of inCase) {
      try {
        if (shuttingDown || one.error !== undefined || one.v === null || one.runs.length === 0) continue;
        record(one, one.v, one.afterTree ?? null);
      } finally {
        await stopChild(one.started.child);
      }
    }
  }

  if (shuttingDown) return;
  write('');
  if (rows.length > 0) write(report(opts, rows, failures, skipped));
  let tlsRows: TlsRow[] = [];
  if (opts.tlsScenarios.length > 0) {
    tlsRows = await runTlsBench({
      scenarios: opts.tlsScenarios, servers: opts.servers, connections: opts.connections, durationS: opts.durationS,
      warmupS: opts.warmupS, runs: opts.runs, plumeBin: opts.plumeBin, plumeWorkers: opts.plumeWorkers, wrkCpus: opts.wrkCpus,
      serverCpus: opts.serverCpus, keep: opts.keep, write,
    });
  }
  if (shuttingDown) return;
  let h2Rows: H2Row[] = [];
  if (opts.h2Scenarios.length > 0) {
    h2Rows = await runH2Bench({
      servers: opts.servers, connections: opts.connections, durationS: opts.durationS, warmupS: opts.warmupS,
      plumeBin: opts.plumeBin, plumeWorkers: opts.plumeWorkers, clientCpus: opts.wrkCpus, serverCpus: opts.serverCpus,
      keep: opts.keep, write,
    });
  }
  if (shuttingDown) return;

  const json = {
    date: new Date().toISOString(),
    machine,
    options: {
      servers: opts.servers,
      scenarios: opts.scenarios,
      connections: opts.connections,
      durationS: opts.durationS,
      warmupS: opts.warmupS,
      wrkThreads: opts.threads,
      runs: opts.runs,
      wrkCpus: opts.wrkCpus,
      serverCpus: opts.serverCpus,
      plumeWorkers: opts.plumeWorkers,
    },
    scenarios: Object.fromEntries(
      opts.scenarios.map((s) => {
        const sc = SCENARIOS[s];
        return [s, { request: `GET ${sc.urlPath}`, headers: sc.headers, status: sc.status, description: sc.description }];
      }),
    ),
    results: rows,
    ratios: ratios(rows, opts),
    tls: tlsRows,
    h2: h2Rows,
    workerRss: workerRss(rows),
    skipped,
    failures,
    machineBusyBeforePct: idleCheck.busyPct,
  };
  fs.mkdirSync(path.dirname(opts.out), { recursive: true });
  fs.writeFileSync(opts.out, JSON.stringify(json, null, 2) + '\n');
  const rel = path.relative(process.cwd(), opts.out);
  write(`\nJSON written to ${rel === '' || rel.startsWith('..') ? opts.out : rel}`);
  if (opts.keep) write(`site, configs and logs kept in ${site.root}`);
}

main()
  .catch((e: unknown) => {
    process.stderr.write(`bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  })
  .finally(() => {
    void cleanup().then(() => process.exit(shuttingDown ? 130 : 0));
  });
