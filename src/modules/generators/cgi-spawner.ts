// mod_cgi's side of the CGI spawner (cgi-spawner-program.ts has the program and its protocol):
// each serving process starts its own spawner on its first script, so the scripts have the
// serving process's identity as spawned ones would, and runs its scripts through it. A script
// gets a connection of its own, which the spawner makes its stdin and stdout; the spawner
// reports its exec failure, stderr and exit on the control connection. Both are driven through
// their libuv handles (TcpStream), so a script costs no stream objects here.
//
// Where the spawner cannot be used, runScript() answers null and the caller spawns from Node:
// no perl, a spawner that would not start, arguments or environment that a C string cannot
// carry (spawn rejects them as before), or too many scripts at once for the spawner's select().

import { spawn, type ChildProcess } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as util from 'node:util';
import { connectStream, type TcpStream } from '../../server/http/tcp-stream.js';
import { SPAWNER_PROGRAM } from './cgi-spawner-program.js';

/** Where a script's stderr goes (text in latin1, as it comes; then its end). */
export interface StderrSink {
  write(text: string): void;
  end(): void;
}

/** A script the spawner runs, as the handler sees it. */
export interface SpawnedScript {
  /** Its stdin and stdout. */
  readonly conn: TcpStream;
  stderr(sink: StderrSink): void;
  onExecError(fn: (e: NodeJS.ErrnoException) => void): void;
  /** The request is over: a script still running is stopped (SIGTERM, SIGKILL 3 s later). */
  reap(): void;
}

/** How long a script has after SIGTERM before SIGKILL (APR_KILL_AFTER_TIMEOUT). */
const KILL_GRACE_MS = 3000;
/** execve's system call number, by platform: the spawner calls it directly (else through Perl's
 *  exec, which sets the environment through %ENV in the forked child). */
const EXECVE: Readonly<Record<string, number>> = { 'linux-x64': 59, 'linux-arm64': 221 };
/** Scripts at once per spawner: its select() handles descriptors below 1024, two a script. */
const MAX_RUNNING = 400;

/** One script's reports, as they come on the control connection. */
interface Pending {
  sink: StderrSink | null;
  early: string[] | null;
  errEnded: boolean;
  exited: boolean;
  execError: ((e: NodeJS.ErrnoException) => void) | null;
  pendingError: NodeJS.ErrnoException | null;
  /** The program, named in an exec failure's error. */
  readonly file: string;
  /** Called once it has exited (or the spawner went away). */
  onExit: (() => void) | null;
}

interface Spawner {
  readonly proc: ChildProcess;
  readonly sock: string;
  readonly dir: string;
  readonly key: Buffer;
  readonly control: TcpStream;
  readonly scripts: Map<number, Pending>;
  seq: number;
  closed: boolean;
}

let spawner: Spawner | null = null;
let starting: Promise<Spawner | null> | null = null;
/** Set once the spawner could not be started: Node's spawn from then on. */
let unavailable = process.env.PLUME_CGI_SPAWNER_OFF === '1';

function connect(sock: string): Promise<TcpStream | null> {
  return new Promise((resolve) => {
    const p = connectStream({ path: sock }, (err, s) => resolve(err === null ? s : null));
    if (p === null) resolve(null);
  });
}

function message(key: Buffer, payload: string): Buffer {
  const n = Buffer.byteLength(payload, 'utf8');
  const b = Buffer.allocUnsafe(20 + n);
  key.copy(b, 0);
  b.writeUInt32BE(n, 16);
  b.write(payload, 20, 'utf8');
  return b;
}

/** Everything still waiting on a spawner that went away: stderr ends, nothing can be stopped. */
function drop(s: Spawner): void {
  if (s.closed) return;
  s.closed = true;
  if (spawner === s) spawner = null;
  for (const p of s.scripts.values()) {
    exited(p);
    endStderr(p);
  }
  s.scripts.clear();
  s.control.destroy();
  try { fs.rmSync(s.dir, { recursive: true, force: true }); } catch { /* the spawner removed it */ }
}

function exited(p: Pending): void {
  p.exited = true;
  const f = p.onExit;
  p.onExit = null;
  if (f !== null) f();
}

function endStderr(p: Pending): void {
  if (p.errEnded) return;
  p.errEnded = true;
  if (p.sink !== null) p.sink.end();
}

function report(s: Spawner, type: number, seq: number, payload: Buffer): void {
  const p = s.scripts.get(seq);
  if (p === undefined) return;
  switch (type) {
    case 0x58: /* X */ {
      const errno = -Number(payload.toString('latin1'));
      const code = util.getSystemErrorName(errno);
      const file = p.file;
      // The error Node's spawn gives for the same failure.
      const e = Object.assign(new Error(`spawn ${file} ${code}`), { errno, code, syscall: `spawn ${file}`, path: file }) as NodeJS.ErrnoException;
      if (p.execError !== null) p.execError(e); else p.pendingError = e;
      break;
    }
    case 0x45: /* E */ {
      const text = payload.toString('latin1');
      if (p.sink !== null) p.sink.write(text); else (p.early ??= []).push(text);
      break;
    }
    case 0x65: /* e */ endStderr(p); break;
    case 0x78: /* x */ exited(p); break;
    default: break;
  }
  if (p.exited && p.errEnded) s.scripts.delete(seq);
}

/** Starts this process's spawner: null when it cannot be (perl missing, or it failed). */
async function start(): Promise<Spawner | null> {
  // The socket's private directory: under TMPDIR, or /tmp when the serving process (by now
  // running as User) may not write there (a TMPDIR private to the user who started plume).
  let dir: string | undefined;
  for (const base of new Set([os.tmpdir(), '/tmp'])) {
    try {
      dir = fs.mkdtempSync(path.join(base, 'plume-cgi-'));
      break;
    } catch { /* the next place */ }
  }
  if (dir === undefined) return null;
  const sock = path.join(dir, 's');
  const key = crypto.randomBytes(16);
  const proc = spawn('perl', ['-'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PLUME_CGI_SPAWNER: `${sock}\n${key.toString('hex')}\n${EXECVE[`${process.platform}-${process.arch}`] ?? ''}` },
  });
  const answer = await new Promise<string>((resolve) => {
    let text = '';
    proc.once('error', () => resolve('error'));
    proc.once('exit', () => resolve('error'));
    proc.stdout!.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (text.includes('\n')) resolve(text);
    });
    proc.stdin!.on('error', () => { /* it went away: see exit */ });
    proc.stdin!.write(SPAWNER_PROGRAM + '\n__END__\n');
  });
  proc.stdout!.destroy();
  const control = answer === 'ready\n' ? await connect(sock) : null;
  if (control === null) {
    proc.kill('SIGKILL');
    try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* none */ }
    return null;
  }
  // Neither keeps the serving process alive; its stdin pipe closing tells the spawner it ended.
  proc.unref();
  (proc.stdin as unknown as { unref(): void }).unref();
  control.unref();
  const s: Spawner = { proc, sock, dir, key, control, scripts: new Map(), seq: 0, closed: false };
  control.allowHalfOpen = true;
  let buf: Buffer = Buffer.alloc(0);
  control.on('data', (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
    let at = 0;
    while (buf.length - at >= 9) {
      const n = buf.readUInt32BE(at + 5);
      if (buf.length - at < 9 + n) break;
      report(s, buf[at]!, buf.readUInt32BE(at + 1), buf.subarray(at + 9, at + 9 + n));
      at += 9 + n;
    }
    buf = at === buf.length ? Buffer.alloc(0) : buf.subarray(at);
  });
  control.on('end', () => drop(s));
  control.on('close', () => drop(s));
  proc.once('exit', () => drop(s));
  control.write(message(key, 'C'));
  process.once('exit', () => { try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* gone */ } });
  return s;
}

async function getSpawner(): Promise<Spawner | null> {
  if (spawner !== null && !spawner.closed) return spawner;
  if (unavailable) return null;
  starting ??= start().then((s) => {
    starting = null;
    if (s === null) unavailable = true;
    spawner = s;
    return s;
  });
  return starting;
}

/** The request to run a script; null when a string has a NUL or a variable's name is not one
 *  (spawn's own checks then apply, as before). */
function runRequest(seq: number, file: string, cwd: string, argv: readonly string[], env: Record<string, string>): string | null {
  let text = `R\0${seq}\0${file}\0${cwd}\0${argv.length}`;
  if (file.includes('\0') || cwd.includes('\0')) return null;
  for (const a of argv) {
    if (a.includes('\0')) return null;
    text += '\0' + a;
  }
  for (const k in env) {
    const v = env[k]!;
    if (k === '' || k.includes('=') || k.includes('\0') || v.includes('\0')) return null;
    text += '\0' + k + '=' + v;
  }
  return text;
}

/** Runs `file` with `argv` (argv[0] included) in `cwd` with exactly `env`, through the
 *  spawner; null: spawn it here instead. */
export async function runScript(file: string, argv: readonly string[], env: Record<string, string>, cwd: string): Promise<SpawnedScript | null> {
  const s = await getSpawner();
  if (s === null || s.scripts.size >= MAX_RUNNING) return null;
  const seq = (s.seq = (s.seq + 1) >>> 0);
  const text = runRequest(seq, file, cwd, argv, env);
  if (text === null) return null;
  const conn = await connect(s.sock);
  if (conn === null || s.closed) {
    conn?.destroy();
    return null;
  }
  const p: Pending = { sink: null, early: null, errEnded: false, exited: false, execError: null, pendingError: null, file, onExit: null };
  s.scripts.set(seq, p);
  conn.allowHalfOpen = true;
  conn.write(message(s.key, text));
  return {
    conn,
    stderr(sink) {
      p.sink = sink;
      const early = p.early;
      p.early = null;
      if (early !== null) for (const t of early) sink.write(t);
      if (p.errEnded) sink.end();
    },
    onExecError(fn) {
      p.execError = fn;
      const e = p.pendingError;
      if (e !== null) { p.pendingError = null; fn(e); }
    },
    reap() {
      if (p.exited || s.closed) { conn.destroy(); return; }
      s.control.write(frame(0x4b /* K */, seq));
      // The connection stays open, what comes read and dropped, until the script has gone: a
      // script still reading or writing meets the signal, as a spawned one would, not a reset
      // connection (closing it with unread bytes resets it).
      conn.on('data', () => undefined);
      conn.resume();
      conn.on('end', () => conn.destroy());
      p.onExit = () => conn.destroy();
      const t = setTimeout(() => {
        if (!p.exited && !s.closed) s.control.write(frame(0x6b /* k */, seq));
        conn.destroy();
      }, KILL_GRACE_MS);
      t.unref();
    },
  };
}

function frame(type: number, seq: number): Buffer {
  const b = Buffer.alloc(9);
  b[0] = type;
  b.writeUInt32BE(seq, 1);
  return b;
}
