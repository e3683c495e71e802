/**
 * The upgrade equivalence corpus (test/upgrade/corpus/<name>/): realistic httpd 2.2
 * configurations, each with a request matrix (path x client address x credentials) and the
 * statuses 2.2 gave. Shared by corpus.test.ts (replays on plume, no Apache needed) and
 * record-corpus.ts (records what real Apache 2.4 answers).
 *
 * A corpus folder holds the configuration tree as the server root (httpd.conf, included
 * files, htdocs/, password files...), with @ROOT@ (the temporary copy) and @PORT@ (a free
 * port) substituted in every text file, plus:
 *   matrix.json    {title, upgrade?: {htaccess?: boolean, keep22Defaults?: boolean}, rows: Row[]}
 *   recorded.json  what Apache 2.4.71 answered (written by record-corpus.ts, never by hand)
 * `modules` is created as a link to /usr/lib/apache2/modules, `logs/` as an empty directory.
 *
 * This file only exports helpers: running it has no effect.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { upgradeConfiguration } from '../../src/upgrade/cli.js';
import { DEFAULT_OPTIONS, type Finding, type UpgradeOptions } from '../../src/upgrade/model.js';
import type { Upgrade } from '../../src/upgrade/engine.js';
import { catalogue } from '../../src/modules/index.js';

export const REPO_ROOT: string = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const CORPUS_DIR: string = path.join(REPO_ROOT, 'test', 'upgrade', 'corpus');
export const APACHE_BIN = '/usr/sbin/apache2';
export const PLUME_BIN: string = path.join(REPO_ROOT, 'bin', 'plume');
const META = new Set(['matrix.json', 'recorded.json', 'README.md']);

export interface Row {
  method?: string;
  path: string;
  client: string;
  user?: string;
  password?: string;
  /** Host header (name-based virtual hosts); default localhost. */
  host?: string;
  headers?: Record<string, string>;
  /** 2.2's status for this request. */
  expect: number;
  /** The status when access is granted, where it is not 200 (405 for POST to a file...). */
  served?: number;
  /** What Apache 2.4 with mod_access_compat answers on the original rules, where that is not
   *  2.2's answer (issue item 4); `why` explains. */
  compat24?: number;
  why?: string;
  /** Response headers 2.2 sent for this request (null: absent), for cases about more than
   *  access control (FilterProvider...). Only the names listed are compared. */
  expectHeaders?: Record<string, string | null>;
}

export interface Matrix {
  title: string;
  upgrade?: { htaccess?: boolean; keep22Defaults?: boolean };
  rows: Row[];
}

export interface Recorded {
  recordedWith: string;
  /** Apache 2.4 + mod_access_compat on the original access rules. */
  compat: number[];
  /** Apache 2.4 (no mod_access_compat) on the upgraded configuration. */
  upgraded: number[];
  /** apache2 -t on the upgraded configuration. */
  syntax: { exit: number; output: string };
  /** For rows with expectHeaders: those headers as Apache 2.4 sent them on the upgraded configuration. */
  upgradedHeaders?: (Record<string, string | null> | null)[];
}

export function listCorpus(): string[] {
  return fs.readdirSync(CORPUS_DIR).filter((n) => fs.existsSync(path.join(CORPUS_DIR, n, 'matrix.json'))).sort();
}

export function loadMatrix(name: string): Matrix {
  return JSON.parse(fs.readFileSync(path.join(CORPUS_DIR, name, 'matrix.json'), 'utf8')) as Matrix;
}

export function loadRecorded(name: string): Recorded | undefined {
  const f = path.join(CORPUS_DIR, name, 'recorded.json');
  return fs.existsSync(f) ? (JSON.parse(fs.readFileSync(f, 'utf8')) as Recorded) : undefined;
}

/** Copies a corpus folder into a fresh temporary server root. */
export function materialise(name: string, port: number): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `plume-upgrade-${name}-`));
  const src = path.join(CORPUS_DIR, name);
  const copy = (from: string, to: string): void => {
    for (const e of fs.readdirSync(from, { withFileTypes: true })) {
      if (from === src && META.has(e.name)) continue;
      const a = path.join(from, e.name);
      const b = path.join(to, e.name);
      if (e.isDirectory()) { fs.mkdirSync(b, { recursive: true }); copy(a, b); continue; }
      const text = fs.readFileSync(a, 'utf8').replace(/@ROOT@/g, root).replace(/@PORT@/g, String(port));
      fs.writeFileSync(b, text);
    }
  };
  copy(src, root);
  fs.mkdirSync(path.join(root, 'logs'), { recursive: true });
  if (!fs.existsSync(path.join(root, 'modules'))) fs.symlinkSync('/usr/lib/apache2/modules', path.join(root, 'modules'));
  fs.chmodSync(root, 0o755);
  return root;
}

/** The modules plume has, as its catalogue says when the test runs. */
export const PLUME_MODULES: ReadonlySet<string> = new Set(catalogue.all.map((m) => m.decl.name));

export function upgradeOptions(m: Matrix, root: string, extra: Partial<UpgradeOptions> = {}): UpgradeOptions {
  return {
    ...DEFAULT_OPTIONS,
    plumeModules: PLUME_MODULES,
    htaccess: m.upgrade?.htaccess ? [root] : undefined,
    keep22Defaults: m.upgrade?.keep22Defaults ?? false,
    ...extra,
  };
}

/** Runs the assistant on root/httpd.conf and writes every changed file in place. */
export function upgradeInPlace(root: string, opts: UpgradeOptions): Upgrade {
  const u = upgradeConfiguration(path.join(root, 'httpd.conf'), opts);
  for (const d of u.changedDocs()) fs.writeFileSync(d.path, d.text());
  return u;
}

export async function freePort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const p = 30000 + Math.floor(Math.random() * 20000);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(p, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (ok) return p;
  }
  throw new Error('no free port');
}

export interface Running {
  stop(): Promise<void>;
  stderr(): string;
}

/** Starts a server (-X) and waits until it accepts connections. */
export async function startServer(which: 'plume' | 'apache', root: string, port: number): Promise<Running> {
  const args = ['-X', '-d', root, '-f', path.join(root, 'httpd.conf')];
  const proc: ChildProcess = which === 'plume'
    ? spawn(process.execPath, [PLUME_BIN, ...args], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(APACHE_BIN, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  let exited = false;
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (d: string) => { err += d; });
  proc.once('exit', () => { exited = true; });
  const deadline = Date.now() + 15000;
  for (;;) {
    if (exited) throw new Error(`${which} exited while starting: ${err}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`${which} did not start: ${err}`); }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    stderr: () => err,
    stop: () => new Promise<void>((resolve) => {
      if (exited) { resolve(); return; }
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
      setTimeout(() => { if (!exited) proc.kill('SIGKILL'); }, 3000);
    }),
  };
}

export interface Answer {
  status: number;
  /** The headers the row's expectHeaders names (lower-case keys as written there), or null. */
  headers: Record<string, string | null> | null;
}

/** Sends one matrix row; answers the status code and the headers the row asks about. */
export function sendRow(port: number, row: Row): Promise<Answer> {
  const headers: Record<string, string> = { Host: row.host ?? 'localhost', Connection: 'close', ...(row.headers ?? {}) };
  if (row.user !== undefined) headers['Authorization'] = 'Basic ' + Buffer.from(`${row.user}:${row.password ?? ''}`).toString('base64');
  const method = row.method ?? 'GET';
  if (method === 'POST' || method === 'PUT') headers['Content-Length'] = '0';
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: row.path, method, headers, localAddress: row.client, agent: false }, (res) => {
      res.resume();
      res.on('end', () => {
        let got: Record<string, string | null> | null = null;
        if (row.expectHeaders) {
          got = {};
          for (const name of Object.keys(row.expectHeaders)) {
            const v = res.headers[name.toLowerCase()];
            got[name] = v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
          }
        }
        resolve({ status: res.statusCode ?? 0, headers: got });
      });
    });
    req.setTimeout(10000, () => req.destroy(new Error('timeout')));
    req.once('error', reject);
    req.end();
  });
}

/** Sends one matrix row; answers the status code. */
export async function send(port: number, row: Row): Promise<number> {
  return (await sendRow(port, row)).status;
}

export async function runRows(port: number, rows: readonly Row[]): Promise<number[]> {
  return (await runRowsFull(port, rows)).map((a) => a.status);
}

export async function runRowsFull(port: number, rows: readonly Row[]): Promise<Answer[]> {
  const out: Answer[] = [];
  for (const r of rows) out.push(await sendRow(port, r));
  return out;
}

/** `-t` of a server on a root: exit status and output (stderr + stdout). */
export function syntaxCheck(which: 'plume' | 'apache', root: string): { exit: number; output: string } {
  const args = ['-t', '-d', root, '-f', path.join(root, 'httpd.conf')];
  const r = which === 'plume'
    ? spawnSync(process.execPath, [PLUME_BIN, ...args], { encoding: 'utf8' })
    : spawnSync(APACHE_BIN, args, { encoding: 'utf8' });
  return { exit: r.status ?? -1, output: `${r.stderr}${r.stdout}`.replaceAll(root, '@ROOT@').trim() };
}

/** Files of a server root that the assistant reads as configuration (for byte checks). */
export function configFiles(u: Upgrade): { path: string; display: string; original: string; text: string }[] {
  return [...u.docs, ...u.htaccess].map((d) => ({ path: d.path, display: d.display, original: d.original, text: d.text() }));
}

export function findingsFor(u: Upgrade): Finding[] {
  return u.sortedFindings();
}

export function removeRoot(root: string): void {
  fs.rmSync(root, { recursive: true, force: true });
}
