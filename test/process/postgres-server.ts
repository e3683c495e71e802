// A real PostgreSQL (Debian's postgresql package) for mod_dbd's tests: a cluster made by
// initdb as `nobody` (the server refuses to run as root), started on 127.0.0.1 and a unix
// socket directory of its own, stopped by PID. initdb runs once per test process into a
// template that each server copies (a copy takes milliseconds, initdb about a second); the
// template is removed when the process exits.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';

/** The directory of Debian's PostgreSQL binaries (initdb, postgres, psql), or undefined. */
export function postgresBin(): string | undefined {
  let versions: string[] = [];
  try { versions = fs.readdirSync('/usr/lib/postgresql'); } catch { return undefined; }
  const found = versions.filter((v) => /^\d+$/.test(v) && fs.existsSync(`/usr/lib/postgresql/${v}/bin/postgres`))
    .sort((a, b) => Number(a) - Number(b));
  return found.length > 0 ? `/usr/lib/postgresql/${found[found.length - 1]!}/bin` : undefined;
}

/** Whether the tests can run a server: the binaries and a way to become `nobody`. */
export function canRunPostgres(): boolean {
  return postgresBin() !== undefined && (process.getuid?.() !== 0 || fs.existsSync('/usr/bin/setpriv'));
}

/** argv running a command as nobody when we are root: setpriv execs the command in its own
 *  process (runuser would stay as a parent that does not pass on the stop signal). */
function asNobody(cmd: string, args: readonly string[]): [string, string[]] {
  return process.getuid?.() === 0
    ? ['/usr/bin/setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--reset-env', cmd, ...args]]
    : [cmd, [...args]];
}

const NOBODY_UID = 65534;
const NOBODY_GID = 65534;

function chownTree(dir: string): void {
  if (process.getuid?.() !== 0) return;
  fs.chownSync(dir, NOBODY_UID, NOBODY_GID);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) chownTree(p);
    else fs.lchownSync(p, NOBODY_UID, NOBODY_GID);
  }
}

let template: Promise<string> | undefined;

/** initdb once per process (without blocking the event loop: other tests' timers run on):
 *  trust authentication, superuser "postgres", and scram-sha-256 over TCP for the role
 *  "secret" (a password-checking case). */
function templateCluster(): Promise<string> {
  template ??= makeTemplate();
  return template;
}

async function makeTemplate(): Promise<string> {
  const bin = postgresBin();
  if (bin === undefined) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-pgtemplate-'));
  fs.chmodSync(base, 0o755);
  const data = path.join(base, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  chownTree(base);
  process.once('exit', () => fs.rmSync(base, { recursive: true, force: true }));
  const [cmd, args] = asNobody(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions']);
  const r = await new Promise<{ status: number | null; out: string }>((resolve) => {
    const p = spawn(cmd, args, { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    p.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    p.once('error', (e) => resolve({ status: -1, out: String(e) }));
    p.once('close', (status) => resolve({ status, out }));
  });
  if (r.status !== 0) throw new Error(`initdb failed: ${r.out}`);
  // Password authentication for one role, so that a wrong DBDParams password is a real failure.
  const hba = path.join(data, 'pg_hba.conf');
  fs.writeFileSync(hba, 'local all all trust\nhost all secret 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n');
  return base;
}

export interface PostgresServer {
  readonly pid: number;
  readonly port: number;
  /** The unix socket directory. */
  readonly socketDir: string;
  /** Runs SQL with psql as the superuser on database "postgres"; rejects on an error. */
  sql(text: string): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

/** Starts a server with its data under `dir` (created; removed by stop()) on 127.0.0.1:port,
 *  then runs `setupSql` (tables, rows) when given. */
export async function startPostgres(dir: string, port: number, setupSql?: string): Promise<PostgresServer> {
  const bin = postgresBin()!;
  const tpl = await templateCluster();
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const data = path.join(dir, 'data');
  fs.cpSync(path.join(tpl, 'data'), data, { recursive: true, preserveTimestamps: true });
  fs.chmodSync(data, 0o700);
  chownTree(dir);
  const [cmd, args] = asNobody(path.join(bin, 'postgres'), [
    '-D', data, '-k', dir, '-h', '127.0.0.1', '-p', String(port), '-F',
    '-c', 'logging_collector=off', '-c', 'shared_buffers=8MB', '-c', 'max_connections=40', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
  ]);
  const proc: ChildProcess = spawn(cmd, args, { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) {
      // SIGQUIT: PostgreSQL's immediate shutdown (no checkpoint: the data is thrown away).
      try { process.kill(proc.pid!, 'SIGQUIT'); } catch { /* gone */ }
      const k = setTimeout(() => { try { process.kill(-proc.pid!, 'SIGKILL'); } catch { /* gone */ } }, 10000);
      await exited;
      clearTimeout(k);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`postgres did not get ready in 20 s:\n${out}`)), 20000);
    let settled = false;
    const done = (e?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (e === undefined) resolve();
      else void stop().then(() => reject(e));
    };
    const onData = (d: Buffer): void => {
      out += d.toString('utf8');
      if (out.includes('database system is ready to accept connections')) done();
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('error', (e) => done(e));
    proc.once('exit', (code, sig) => done(new Error(`postgres exited (${code ?? sig}) before it was ready:\n${out}`)));
  });
  const sql = (text: string): Promise<void> => new Promise((resolve, reject) => {
    const p = spawn(path.join(bin, 'psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', dir, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-f', '-'],
      { cwd: '/', stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    p.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    p.once('error', reject);
    p.once('close', (status) => (status === 0 ? resolve() : reject(new Error(`psql failed: ${out}`))));
    p.stdin.end(text);
  });
  const srv: PostgresServer = { pid: proc.pid!, port, socketDir: dir, sql, output: () => out, stop };
  if (setupSql !== undefined) {
    try { await sql(setupSql); } catch (e) { await stop(); throw e; }
  }
  return srv;
}
