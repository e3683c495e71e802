// Shared by the mod_status tests: a server (bin/plume or /usr/sbin/apache2) started on a
// temporary ServerRoot, raw HTTP/1.1 requests, and the scenarios whose Apache 2.4.71 output
// is recorded in fixtures/ (record-fixtures.ts) and compared with plume's (layout.test.ts).

import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
export const FIXTURES = path.join(REPO, 'test', 'unit', 'status', 'fixtures');
export const APACHE_BIN = '/usr/sbin/apache2';

export interface Response {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** One request on its own connection (Connection: close), the whole answer read. */
export function request(port: number, target: string, opts: { method?: string; host?: string; headers?: string } = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    sock.on('connect', () => {
      sock.write(`${opts.method ?? 'GET'} ${target} HTTP/1.1\r\nHost: ${opts.host ?? 'localhost'}\r\n${opts.headers ?? ''}Connection: close\r\n\r\n`);
    });
    sock.on('data', (d: Buffer) => chunks.push(d));
    sock.on('error', reject);
    sock.on('close', () => {
      try { resolve(parseResponse(Buffer.concat(chunks).toString('latin1'))); } catch (e) { reject(e); }
    });
  });
}

export function parseResponse(raw: string): Response {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no response head in ${JSON.stringify(raw.slice(0, 200))}`);
  const [statusLine, ...fields] = raw.slice(0, end).split('\r\n');
  const headers = new Map<string, string>();
  for (const f of fields) {
    const c = f.indexOf(':');
    headers.set(f.slice(0, c).toLowerCase(), f.slice(c + 1).trim());
  }
  let body = raw.slice(end + 4);
  if (headers.get('transfer-encoding') === 'chunked') {
    let out = '';
    let at = 0;
    for (;;) {
      const nl = body.indexOf('\r\n', at);
      const size = Number.parseInt(body.slice(at, nl), 16);
      if (!(size > 0)) break;
      out += body.slice(nl + 2, nl + 2 + size);
      at = nl + 2 + size + 2;
    }
    body = out;
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** Waits until something accepts connections on the port. */
export async function waitListening(port: number, ms = 10000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((res) => {
      const s = net.connect(port, '127.0.0.1');
      s.on('connect', () => { s.destroy(); res(true); });
      s.on('error', () => res(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Running {
  root: string;
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** The configuration the scenarios share, then `extra` lines. */
export function statusConf(root: string, port: number, extra: readonly string[]): string {
  return [
    `ServerRoot "${root}"`,
    `Listen 127.0.0.1:${port}`,
    'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
    'LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so',
    'LoadModule status_module /usr/lib/apache2/modules/mod_status.so',
    'ServerName localhost',
    `DocumentRoot "${root}/htdocs"`,
    `ErrorLog "${root}/logs/error_log"`,
    `PidFile "${root}/logs/httpd.pid"`,
    'LogFormat "%h %l %u %t \\"%r\\" %>s %b %I %O" io',
    `CustomLog "${root}/logs/access_log" io`,
    '<Location "/server-status">',
    '  SetHandler server-status',
    '</Location>',
    ...extra,
  ].join('\n') + '\n';
}

/** Starts `server` ('plume' or 'apache') in one process (-X) on a fresh ServerRoot, or with
 *  `args` instead of -X. */
export async function startServer(server: 'plume' | 'apache', extra: readonly string[], args: readonly string[] = ['-X']): Promise<Running> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-status-'));
  fs.mkdirSync(path.join(root, 'logs'));
  fs.mkdirSync(path.join(root, 'htdocs'));
  fs.writeFileSync(path.join(root, 'htdocs', 'a.txt'), 'hello\n');
  fs.writeFileSync(path.join(root, 'htdocs', 'big.txt'), 'x'.repeat(5000));
  const port = await freePort();
  const conf = path.join(root, 'httpd.conf');
  fs.writeFileSync(conf, statusConf(root, port, extra));
  const cmd = server === 'apache' ? APACHE_BIN : process.execPath;
  const argv = server === 'apache' ? [...args, '-d', root, '-f', conf] : [path.join(REPO, 'bin', 'plume'), ...args, '-d', root, '-f', conf];
  const proc = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  try {
    await waitListening(port);
  } catch (e) {
    proc.kill('SIGKILL');
    throw new Error(`${server} did not start: ${stderr}`);
  }
  return {
    root, port, proc,
    stop: () => new Promise<void>((res) => {
      if (proc.exitCode !== null || proc.signalCode !== null) { res(); return; }
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      proc.on('exit', () => { clearTimeout(t); fs.rmSync(root, { recursive: true, force: true }); res(); });
      proc.kill('SIGTERM');
    }),
  };
}

// ---- the recorded scenarios ------------------------------------------------------------------

export interface Step {
  target: string;
  method?: string;
  /** Keep the answer (recorded and compared). */
  keep?: boolean;
}

export interface Scenario {
  name: string;
  conf: string[];
  steps: Step[];
}

export const SCENARIOS: Scenario[] = [
  { name: 'auto-first', conf: [], steps: [{ target: '/server-status?auto', keep: true }] },
  {
    name: 'extended',
    conf: [],
    steps: [
      { target: '/a.txt' },
      { target: '/big.txt' },
      { target: '/server-status?auto', keep: true },
      { target: '/server-status', keep: true },
      { target: '/server-status?notable', keep: true },
    ],
  },
  {
    name: 'basic',
    conf: ['ExtendedStatus Off'],
    steps: [
      { target: '/a.txt' },
      { target: '/server-status?auto', keep: true },
      { target: '/server-status', keep: true },
      { target: '/server-status?notable', keep: true },
    ],
  },
  {
    name: 'signature-refresh',
    conf: ['ServerSignature On'],
    steps: [{ target: '/server-status?refresh=3', keep: true }, { target: '/server-status?auto&refresh', keep: true }],
  },
];

export interface Recorded {
  target: string;
  status: number;
  headers: [string, string][];
  body: string;
}

/** Runs a scenario against a server; the kept answers. */
export async function runScenario(server: 'plume' | 'apache', s: Scenario): Promise<Recorded[]> {
  const srv = await startServer(server, s.conf);
  try {
    // A second of uptime: the per-second figures are printed from then on.
    await new Promise((r) => setTimeout(r, 1100));
    const out: Recorded[] = [];
    for (const step of s.steps) {
      const res = await request(srv.port, step.target, { method: step.method });
      if (step.keep) {
        const headers = [...res.headers].filter(([k]) => ['content-type', 'refresh', 'content-length', 'transfer-encoding'].includes(k));
        out.push({ target: step.target, status: res.status, headers: headers.map(([k, v]) => [k, k === 'content-length' ? '<n>' : v]), body: res.body });
      }
      // Let the request be logged and counted before the next one reads the table.
      await new Promise((r) => setTimeout(r, 20));
    }
    return out;
  } finally {
    await srv.stop();
  }
}

// ---- normalisation: what may differ between two runs (and between Apache and plume) ----------

const MASKED_FIELDS = /^(<dl><dt>Server Version: |<dt>Server Built: |ServerVersion: |Server Built: |<dt>Current Time: |<dt>Restart Time: |CurrentTime: |RestartTime: )/;

function charCounts(s: string): string {
  const m = new Map<string, number>();
  for (const c of s) if (c !== '\n') m.set(c, (m.get(c) ?? 0) + 1);
  return [...m].sort().map(([c, n]) => `${JSON.stringify(c)}x${n}`).join(' ');
}

/**
 * The page with its values masked: numbers become #, times and version strings go, the
 * scoreboard becomes the count of each state (Apache's busy slot is wherever a thread took
 * the request), the per-slot rows and the PID key entries are sorted.
 */
export function normalizeStatus(body: string): string[] {
  const lines = body.split('\n');
  const out: string[] = [];
  let i = 0;
  const num = (l: string): string => l
    .replace(/\d+(\.\d+)?(e[+-]\d+)?|\.\d+/g, '#')
    .replace(/# (B|kB|MB|GB)\b/g, '# U')
    .replace(/ # (second|minute|hour|day)s?/g, ' # $1(s)');
  while (i < lines.length) {
    let l = lines[i]!;
    const mf = MASKED_FIELDS.exec(l);
    if (mf) { out.push(mf[1] + '<masked>' + (l.endsWith('</dt>') ? '</dt>' : '')); i++; continue; }
    if (l.startsWith('CPULoad: ')) { i++; continue; }
    l = l.replace(/ - [\d.e+-]+% CPU load/, '');
    l = l.replace(/<address>.* Server at /, '<address><banner> Server at ');
    if (l.startsWith('Scoreboard: ')) { out.push('Scoreboard: ' + charCounts(l.slice(12))); i++; continue; }
    if (l.startsWith('<pre>') && !l.startsWith('<pre>\n')) {
      // The scoreboard block runs to </pre>.
      let block = l.slice(5);
      while (!block.includes('</pre>') && i + 1 < lines.length) block += '\n' + lines[++i]!;
      out.push('<pre>' + charCounts(block.slice(0, block.indexOf('</pre>'))) + '</pre>');
      i++;
      continue;
    }
    if (l === 'PID Key: <br />') {
      // "   PID in state: X ," three to a line: the shape of each line (runs of equal lines
      // counted) and how many entries of each state.
      out.push(l, lines[i + 1]!);
      i += 2;
      let states = '';
      let prev = '';
      let run = 0;
      while (i < lines.length && lines[i] !== '</pre>') {
        const ln = lines[i]!;
        for (const m of ln.matchAll(/in state: (.) /g)) states += m[1];
        const shape = num(ln).replace(/in state: . /g, 'in state: X ');
        if (shape === prev) run++;
        else { if (run) out.push(`${prev} x${run}`); prev = shape; run = 1; }
        i++;
      }
      if (run) out.push(`${prev} x${run}`);
      out.push(`states: ${charCounts(states)}`);
      continue;
    }
    if (l.startsWith('<tr><td><b>') || l.startsWith('<b>Server ')) {
      // A per-slot row (three lines in the table, four in the notable form): sorted below.
      const rows: string[] = [];
      while (i < lines.length && (lines[i]!.startsWith('<tr><td><b>') || lines[i]!.startsWith('<b>Server '))) {
        const row: string[] = [];
        while (i < lines.length && lines[i] !== '') row.push(num(lines[i++]!));
        i++;
        rows.push(row.join('\\n'));
      }
      out.push(...[...new Set(rows)].sort());
      continue;
    }
    out.push(num(l));
    i++;
  }
  return out;
}
