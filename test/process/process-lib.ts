// Shared helpers of the process-model tests: a temporary ServerRoot, bin/plume started without
// -X (a parent and its workers) on 127.0.0.1, the processes under it, and HTTP clients that
// check every response whole. Servers are stopped by PID; nothing waits without a bound.

import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const PLUME = path.join(REPO, 'bin/plume');
export const ROOT = process.getuid?.() === 0;

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address() as net.AddressInfo;
      s.close(() => resolve(a.port));
    });
  });
}

/** Waits until `check` holds, polling; throws with `what` after `ms`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 10000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

export interface Site {
  readonly dir: string;
  readonly port: number;
  readonly conf: string;
  readonly pidFile: string;
  readonly errorLog: string;
  readonly accessLog: string;
  /** The body of /index.html. */
  readonly body: string;
  /** Rewrites httpd.conf with other directives after the base ones. */
  write(extra: readonly string[]): void;
  remove(): void;
}

/** The 4 KB body every test fetches (large enough to come in more than one write). */
export const BODY = 'plume process model\n'.repeat(205);

/** A temporary ServerRoot with htdocs/index.html and an httpd.conf of the base directives
 *  plus `extra`. The access log has the worker pid (%P) last on each line. */
export async function makeSite(name: string, extra: readonly string[] = []): Promise<Site> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `plume-${name}-`));
  fs.chmodSync(dir, 0o755);
  const port = await freePort();
  fs.mkdirSync(path.join(dir, 'htdocs'), { mode: 0o755 });
  fs.mkdirSync(path.join(dir, 'logs'), { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'htdocs/index.html'), BODY);
  const conf = path.join(dir, 'httpd.conf');
  const base = [
    `ServerRoot "${dir}"`,
    `Listen 127.0.0.1:${port}`,
    'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
    'LoadModule unixd_module /usr/lib/apache2/modules/mod_unixd.so',
    'LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so',
    'LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so',
    'ServerName localhost',
    `PidFile ${dir}/logs/httpd.pid`,
    `ErrorLog ${dir}/logs/error_log`,
    'LogLevel warn',
    'LogFormat "%h %l %u %t \\"%r\\" %>s %b %P" pid',
    `CustomLog ${dir}/logs/access_log pid`,
    'TypesConfig /etc/mime.types',
    `DocumentRoot "${dir}/htdocs"`,
  ];
  if (ROOT) base.push('User nobody', 'Group nogroup');
  const site: Site = {
    dir, port, conf,
    pidFile: path.join(dir, 'logs/httpd.pid'),
    errorLog: path.join(dir, 'logs/error_log'),
    accessLog: path.join(dir, 'logs/access_log'),
    body: BODY,
    write(more) { fs.writeFileSync(conf, [...base, ...more].join('\n') + '\n'); },
    remove() { fs.rmSync(dir, { recursive: true, force: true }); },
  };
  site.write(extra);
  return site;
}

// ---- processes ---------------------------------------------------------------------------

interface ProcInfo { pid: number; ppid: number; uid: number; cmdline: string }

function procInfo(pid: number): ProcInfo | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const uid = Number(/^Uid:\s+\d+\s+(\d+)/m.exec(status)?.[1] ?? -1);
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    if (/^State:\s+Z/m.test(status)) return undefined;
    return { pid, ppid, uid, cmdline };
  } catch {
    return undefined;
  }
}

/** The live processes whose parent is `pid`. */
export function childrenOf(pid: number): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const p = procInfo(Number(e));
    if (p && p.ppid === pid) out.push(p);
  }
  return out;
}

/** The worker processes of a parent: its children running bin/plume. */
export function workersOf(pid: number): ProcInfo[] {
  return childrenOf(pid).filter((p) => p.cmdline.includes('bin/plume'));
}

/** Inodes of the sockets listening on `port` (any address), from /proc/net/tcp{,6}. */
function listenerInodes(port: number): Set<string> {
  const out = new Set<string>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = fs.readFileSync(f, 'latin1'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const c = line.trim().split(/\s+/);
      const local = c[1];
      if (local === undefined || c[3] !== '0A' || c[9] === undefined) continue; // 0A: LISTEN
      if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) out.add(c[9]);
    }
  }
  return out;
}

/** Whether `pid` holds one of the listening sockets `inodes` (a worker gets them once it
 *  has read its configuration, and accepts on them at once). */
function holdsListener(pid: number, inodes: Set<string>): boolean {
  let fds: string[];
  try { fds = fs.readdirSync(`/proc/${pid}/fd`); } catch { return false; }
  for (const fd of fds) {
    let link = '';
    try { link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { continue; }
    const m = /^socket:\[(\d+)\]$/.exec(link);
    if (m !== null && inodes.has(m[1]!)) return true;
  }
  return false;
}

export function alive(pid: number): boolean {
  return procInfo(pid) !== undefined;
}

export function uidOf(pid: number): number {
  return procInfo(pid)?.uid ?? -1;
}

export interface Running {
  readonly site: Site;
  readonly proc: ChildProcess;
  readonly pid: number;
  /** What the parent wrote to stdout and stderr. */
  output(): string;
  /** Sends a signal to the parent. */
  signal(sig: NodeJS.Signals): void;
  /** Worker pids now. */
  workers(): number[];
  /** SIGTERM, then waits for the parent and every worker to go (SIGKILL after 10 s). */
  stop(): Promise<void>;
}

/** Starts bin/plume without -X (-D FOREGROUND: the spawned process is the parent), waits for
 *  its PidFile and `workers` workers. */
export async function startPlume(site: Site, opts: { workers?: number; args?: readonly string[]; plume?: string } = {}): Promise<Running> {
  try { fs.unlinkSync(site.pidFile); } catch { /* none */ }
  const proc = spawn(process.execPath, [opts.plume ?? PLUME, '-d', site.dir, '-f', site.conf, '-D', 'FOREGROUND', ...(opts.args ?? [])], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const pid = proc.pid!;
  const seen = new Set<number>();
  const r: Running = {
    site, proc, pid,
    output: () => out,
    signal: (sig) => { if (proc.exitCode === null) process.kill(pid, sig); },
    workers: () => {
      const w = workersOf(pid).map((p) => p.pid);
      for (const p of w) seen.add(p);
      return w;
    },
    async stop() {
      r.workers();
      if (proc.exitCode === null && proc.signalCode === null) {
        process.kill(pid, 'SIGTERM');
        const exited = new Promise<void>((res) => proc.once('exit', () => res()));
        const t = setTimeout(() => { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }, 10000);
        await exited;
        clearTimeout(t);
      }
      for (const w of seen) { if (alive(w)) { try { process.kill(w, 'SIGKILL'); } catch { /* gone */ } } }
    },
  };
  try {
    await waitFor(`the PidFile of ${site.dir} (output: ${out})`, () => proc.exitCode === null && fs.existsSync(site.pidFile), 15000);
    // Workers accepting, not only running: a load sent while one worker still reads its
    // configuration would all go to the other (keep-alive connections stay where accepted).
    const workers = opts.workers ?? 1;
    await waitFor(`${workers} workers accepting`, () => {
      const inodes = listenerInodes(site.port);
      return r.workers().filter((w) => holdsListener(w, inodes)).length >= workers;
    }, 15000);
    await waitFor('the server to answer', async () => (await tryGet(site.port)) === 200, 15000);
  } catch (e) {
    await r.stop();
    throw new Error(`${(e as Error).message}\n${out}`);
  }
  return r;
}

async function tryGet(port: number): Promise<number> {
  try {
    return (await getOnce(port, '/index.html', 2000)).status;
  } catch {
    return 0;
  }
}

// ---- HTTP ------------------------------------------------------------------------------------

export interface Response {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
  /** The server said Connection: close. */
  close: boolean;
}

/** The connection closed before a byte of the response came (a reused keep-alive connection
 *  the server closed: the request may be sent again, RFC 9112 §9.3.1). */
export class ClosedBeforeResponse extends Error {}

/** Reads one response from a socket holding `pending` bytes already. Rejects with
 *  ClosedBeforeResponse, or with another error for a cut or malformed response. */
function readResponse(sock: net.Socket, state: { buf: Buffer }, timeoutMs: number): Promise<Response> {
  return new Promise((resolve, reject) => {
    let head: { status: number; headers: Map<string, string>; length: number; start: number } | undefined;
    const done = (err: Error | undefined, res?: Response): void => {
      sock.off('data', onData);
      sock.off('close', onClose);
      sock.off('error', onError);
      clearTimeout(timer);
      if (err) reject(err); else resolve(res!);
    };
    const parse = (): boolean => {
      const buf = state.buf;
      if (!head) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return false;
        const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
        if (!m) { done(new Error(`bad status line ${JSON.stringify(lines[0])}`)); return true; }
        const headers = new Map<string, string>();
        for (const l of lines.slice(1)) {
          const c = l.indexOf(':');
          if (c > 0) headers.set(l.slice(0, c).toLowerCase(), l.slice(c + 1).trim());
        }
        const cl = headers.get('content-length');
        if (cl === undefined) { done(new Error('a response without Content-Length')); return true; }
        head = { status: Number(m[1]), headers, length: Number(cl), start: end + 4 };
      }
      if (buf.length < head.start + head.length) return false;
      const body = buf.subarray(head.start, head.start + head.length);
      state.buf = buf.subarray(head.start + head.length);
      const conn = head.headers.get('connection') ?? '';
      done(undefined, { status: head.status, headers: head.headers, body, close: /close/i.test(conn) });
      return true;
    };
    const onData = (d: Buffer): void => {
      state.buf = state.buf.length ? Buffer.concat([state.buf, d]) : d;
      parse();
    };
    const onClose = (): void => {
      if (state.buf.length === 0 && !head) done(new ClosedBeforeResponse('closed before the response'));
      else done(new Error(`connection closed in the middle of a response (${state.buf.length} bytes in)`));
    };
    const onError = (): void => { /* 'close' follows */ };
    const timer = setTimeout(() => done(new Error(`no complete response in ${timeoutMs} ms`)), timeoutMs);
    sock.on('data', onData);
    sock.on('close', onClose);
    sock.on('error', onError);
    if (sock.destroyed) { onClose(); return; }
    parse();
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => { s.off('error', reject); resolve(s); });
    s.on('error', reject);
  });
}

function requestText(urlPath: string, keepAlive: boolean): string {
  return `GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\n${keepAlive ? '' : 'Connection: close\r\n'}\r\n`;
}

/** One request on a new connection (Connection: close). */
export async function getOnce(port: number, urlPath = '/index.html', timeoutMs = 10000): Promise<Response> {
  const sock = await connect(port);
  try {
    sock.write(requestText(urlPath, false));
    return await readResponse(sock, { buf: Buffer.alloc(0) }, timeoutMs);
  } finally {
    sock.destroy();
  }
}

/** A client that keeps its connection between requests and, as HTTP clients do, sends a
 *  request again on a new connection when a reused one was closed before any response. */
export class KeepAliveClient {
  private sock: net.Socket | undefined;
  private state = { buf: Buffer.alloc(0) };
  private closed = false;
  /** Requests sent again after the server closed an idle connection. */
  retries = 0;
  /** Connections opened. */
  connections = 0;
  constructor(private readonly port: number) {}

  async get(urlPath = '/index.html', timeoutMs = 10000): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      let fresh = false;
      if (this.sock === undefined || this.closed) {
        this.drop();
        this.sock = await connect(this.port);
        this.connections++;
        this.state = { buf: Buffer.alloc(0) };
        this.closed = false;
        const s = this.sock;
        s.on('close', () => { if (this.sock === s) this.closed = true; });
        s.on('error', () => { /* 'close' follows */ });
        fresh = true;
      }
      const sock = this.sock;
      try {
        sock.write(requestText(urlPath, true));
        const res = await readResponse(sock, this.state, timeoutMs);
        if (res.close) this.drop();
        return res;
      } catch (e) {
        this.drop();
        if (e instanceof ClosedBeforeResponse && !fresh && attempt < 5) { this.retries++; continue; }
        throw e;
      }
    }
  }

  drop(): void {
    this.sock?.destroy();
    this.sock = undefined;
  }
}

/** Checks one response: 200 and the whole body. */
export function isComplete(res: Response, body: string): boolean {
  return res.status === 200 && res.body.length === Buffer.byteLength(body) && res.body.toString() === body;
}

/** Runs `clients` loops of `perClient` requests each (or until `until()` holds); keep-alive
 *  ones for the first `keepAlive` clients, a new connection per request for the others.
 *  Returns the count of whole answers and every failure. */
export async function load(port: number, body: string, o: { clients: number; keepAlive: number; perClient: number; until?: () => boolean; path?: string }): Promise<{ ok: number; failures: string[]; retries: number }> {
  let ok = 0;
  let retries = 0;
  const failures: string[] = [];
  const loop = async (i: number): Promise<void> => {
    const ka = i < o.keepAlive ? new KeepAliveClient(port) : undefined;
    for (let n = 0; n < o.perClient && !(o.until?.() ?? false); n++) {
      try {
        const res = ka ? await ka.get(o.path) : await getOnce(port, o.path);
        if (isComplete(res, body)) ok++;
        else failures.push(`client ${i} request ${n}: status ${res.status}, ${res.body.length} bytes`);
      } catch (e) {
        failures.push(`client ${i} request ${n}: ${(e as Error).message}`);
      }
    }
    if (ka) { retries += ka.retries; ka.drop(); }
  };
  await Promise.all(Array.from({ length: o.clients }, (_, i) => loop(i)));
  return { ok, failures, retries };
}

/** The access log's lines, and the distinct worker pids (%P, the last field) in them. */
export function accessLog(file: string): { lines: string[]; pids: Set<number> } {
  let text = '';
  try { text = fs.readFileSync(file, 'utf8'); } catch { /* none yet */ }
  const lines = text.split('\n').filter((l) => l !== '');
  return { lines, pids: new Set(lines.map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)))) };
}
