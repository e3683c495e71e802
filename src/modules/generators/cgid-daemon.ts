// mod_cgid's CGI daemon (cgid_server in modules/generators/mod_cgid.c) and the handler's side
// of its socket. The server's first process (the parent, or the -X process) starts the daemon
// before it serves; the daemon binds the ScriptSock Unix socket (mode 0700, owned by User when
// started as root), drops to User/Group and, for each connection, runs the script the request
// describes, so the serving processes never fork.
//
// The exchange on one connection:
//   handler -> daemon: a 4-byte big-endian length and a JSON request (script, argv, cwd,
//                      environment), then the request body; half-closing the connection ends
//                      the script's stdin.
//   daemon -> handler: frames of one type byte and a 4-byte length: 'O' stdout bytes, 'E' stderr
//                      bytes, 'o' end of stdout, 'e' end of stderr, 'X' exec failure (JSON errno),
//                      'P' the script's pid once it runs, 'x' its exit.
// A handler done with a script that has not exited stops it (SIGTERM, then SIGKILL), as httpd's
// cleanup_script does with the pid the daemon reported; the daemon does the same when the
// handler's connection fails.
// DIFFERENCE: httpd's daemon hands the connection itself to the script as stdin and stdout and
// receives the handler's stderr descriptor over the socket; Node cannot pass descriptors over a
// Unix socket, so this daemon relays the three streams in frames (docs/differences.md).

import * as net from 'node:net';
import * as fs from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough, type Readable, type Writable } from 'node:stream';

/** What the handler asks the daemon to run. */
export interface CgidRequest {
  readonly file: string;
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
}

/** How the parent starts the daemon (passed in the environment, as JSON). */
export interface CgidDaemonOptions {
  readonly sock: string;
  /** Drop to these when started as root (httpd's ap_unixd_setup_child). */
  readonly user: string | null;
  readonly uid: number | null;
  readonly gid: number | null;
}

export const DAEMON_ENV = 'PLUME_CGID_DAEMON';
const KILL_GRACE_MS = 3000;
const MAX_REQUEST = 16 * 1024 * 1024;

function frame(type: string, payload: Buffer): Buffer {
  const h = Buffer.allocUnsafe(5);
  h[0] = type.charCodeAt(0);
  h.writeUInt32BE(payload.length, 1);
  return payload.length === 0 ? h : Buffer.concat([h, payload]);
}

// ---- the daemon --------------------------------------------------------------------------------

function serveConnection(conn: net.Socket): void {
  let head: Buffer = Buffer.alloc(0);
  let child: ChildProcess | null = null;
  let exited = false;
  const onData = (d: Buffer): void => {
    head = head.length === 0 ? d : Buffer.concat([head, d]);
    if (head.length < 4) return;
    const len = head.readUInt32BE(0);
    if (len > MAX_REQUEST) { conn.destroy(); return; }
    if (head.length < 4 + len) return;
    conn.off('data', onData);
    let req: CgidRequest;
    try {
      req = JSON.parse(head.subarray(4, 4 + len).toString('utf8')) as CgidRequest;
    } catch {
      conn.destroy();
      return;
    }
    const rest = head.subarray(4 + len);
    child = run(conn, req, rest, () => { exited = true; });
  };
  conn.on('data', onData);
  conn.on('error', () => { /* the handler went away: see close */ });
  conn.on('close', () => {
    const c = child;
    if (c === null || exited || c.pid === undefined) return;
    c.kill('SIGTERM');
    const t = setTimeout(() => { if (!exited) c.kill('SIGKILL'); }, KILL_GRACE_MS);
    t.unref();
    c.once('exit', () => clearTimeout(t));
  });
}

function run(conn: net.Socket, req: CgidRequest, first: Buffer, onExit: () => void): ChildProcess {
  const child = spawn(req.file, req.argv.slice(1), {
    argv0: req.argv[0], cwd: req.cwd, env: req.env, stdio: ['pipe', 'pipe', 'pipe'],
  });
  const send = (type: string, payload: Buffer): void => { if (!conn.destroyed) conn.write(frame(type, payload)); };
  // The connection ends once stdout and stderr have ended and the script has exited.
  let open = 3;
  const ended = (): void => { if (--open === 0) conn.end(); };
  child.on('error', (e: NodeJS.ErrnoException) => {
    send('X', Buffer.from(JSON.stringify({ code: e.code, errno: e.errno, message: e.message })));
    if (child.pid === undefined) ended();
  });
  child.on('exit', () => { onExit(); send('x', Buffer.alloc(0)); ended(); });
  if (child.pid !== undefined) send('P', Buffer.from(String(child.pid)));
  child.stdout!.on('data', (d: Buffer) => send('O', d));
  child.stdout!.on('end', () => { send('o', Buffer.alloc(0)); ended(); });
  child.stderr!.on('data', (d: Buffer) => send('E', d));
  child.stderr!.on('end', () => { send('e', Buffer.alloc(0)); ended(); });
  const stdin = child.stdin!;
  stdin.on('error', () => { /* the script stopped reading */ });
  if (first.length > 0) stdin.write(first);
  conn.pipe(stdin);
  return child;
}

/** The daemon process's main: bind, drop privileges, serve until told to stop. */
export function daemonMain(opts: CgidDaemonOptions): void {
  const root = typeof process.geteuid === 'function' && process.geteuid() === 0;
  // A socket left by an earlier daemon of this parent (a restart) is replaced, as httpd unlinks
  // the name before binding.
  try { fs.unlinkSync(opts.sock); } catch { /* none */ }
  const server = net.createServer({ allowHalfOpen: true }, serveConnection);
  const old = process.umask(0o077);
  server.listen(opts.sock, () => {
    process.umask(old);
    let ino = -1;
    try {
      ino = fs.statSync(opts.sock).ino;
      if (root && opts.uid !== null) fs.chownSync(opts.sock, opts.uid, -1);
      if (root && opts.gid !== null && opts.uid !== null) {
        process.setgid!(opts.gid);
        if (opts.user !== null) (process as unknown as { initgroups(u: string, g: number): void }).initgroups(opts.user, opts.gid);
        process.setuid!(opts.uid);
      }
    } catch (e) {
      process.stderr.write(`cgid: ${String(e)}\n`);
      process.exit(1);
    }
    const stop = (): void => {
      // Only its own socket: a newer daemon may have bound the same name since.
      try { if (fs.statSync(opts.sock).ino === ino) fs.unlinkSync(opts.sock); } catch { /* gone */ }
      process.exit(0);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    process.on('SIGHUP', stop);
    // The parent went away without stopping us (the IPC channel closed).
    process.on('disconnect', stop);
    process.send?.('ready');
  });
  server.on('error', (e: NodeJS.ErrnoException) => {
    process.umask(old);
    process.send?.({ error: e.code ?? String(e), errno: e.errno ?? 0 });
    process.exit(1);
  });
}

// ---- the handler's side -------------------------------------------------------------------------

/** A script run by the daemon, as the handler sees it (the shape of a spawned child's pipes). */
export interface DaemonScript {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** The exec failure the daemon reported. */
  onExecError(fn: (e: NodeJS.ErrnoException) => void): void;
  /** Ends the exchange; a script still running is stopped by the daemon. */
  close(): void;
}

/** Connects to the daemon (retrying while it starts) and sends the request. */
export async function runThroughDaemon(sock: string, req: CgidRequest, attempts: number): Promise<DaemonScript> {
  let conn: net.Socket | undefined;
  let lastErr: NodeJS.ErrnoException | undefined;
  for (let i = 0; i < attempts && conn === undefined; i++) {
    if (i > 0) await new Promise((res) => setTimeout(res, Math.min(100 * 2 ** (i - 1), 1000)));
    try {
      conn = await new Promise<net.Socket>((resolve, reject) => {
        const c = net.createConnection({ path: sock, allowHalfOpen: true });
        c.once('connect', () => { c.off('error', reject); resolve(c); });
        c.once('error', reject);
      });
    } catch (e) {
      lastErr = e as NodeJS.ErrnoException;
    }
  }
  if (conn === undefined) throw lastErr ?? new Error('cgid');
  const c = conn;
  const json = Buffer.from(JSON.stringify(req), 'utf8');
  const len = Buffer.allocUnsafe(4);
  len.writeUInt32BE(json.length, 0);
  c.write(Buffer.concat([len, json]));
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let execError: ((e: NodeJS.ErrnoException) => void) | null = null;
  let pendingError: NodeJS.ErrnoException | null = null;
  let buf: Buffer = Buffer.alloc(0);
  let outEnded = false;
  let errEnded = false;
  let pid = 0;
  let exited = false;
  const endAll = (): void => {
    if (!outEnded) { outEnded = true; stdout.end(); }
    if (!errEnded) { errEnded = true; stderr.end(); }
  };
  c.on('data', (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
    while (buf.length >= 5) {
      const n = buf.readUInt32BE(1);
      if (buf.length < 5 + n) break;
      const type = String.fromCharCode(buf[0]!);
      const payload = buf.subarray(5, 5 + n);
      buf = buf.subarray(5 + n);
      switch (type) {
        case 'O': if (!outEnded) stdout.write(payload); break;
        case 'E': if (!errEnded) stderr.write(payload); break;
        case 'o': if (!outEnded) { outEnded = true; stdout.end(); } break;
        case 'e': if (!errEnded) { errEnded = true; stderr.end(); } break;
        case 'P': pid = Number(payload.toString('latin1')); break;
        case 'x': exited = true; break;
        case 'X': {
          const j = JSON.parse(payload.toString('utf8')) as { code?: string; errno?: number; message: string };
          const e = Object.assign(new Error(j.message), { code: j.code, errno: j.errno }) as NodeJS.ErrnoException;
          if (execError) execError(e); else pendingError = e;
          break;
        }
        default: break;
      }
    }
  });
  c.on('end', endAll);
  c.on('close', endAll);
  c.on('error', () => { /* the daemon went away: the streams end */ });
  return {
    stdin: c,
    stdout,
    stderr,
    onExecError(fn) {
      execError = fn;
      if (pendingError !== null) { const e = pendingError; pendingError = null; fn(e); }
    },
    close() {
      c.destroy();
      if (pid <= 0 || exited) return;
      const p = pid;
      try { process.kill(p, 'SIGTERM'); } catch { return; }
      const t = setTimeout(() => { try { process.kill(p, 'SIGKILL'); } catch { /* gone */ } }, KILL_GRACE_MS);
      t.unref();
    },
  };
}

if (process.env[DAEMON_ENV] !== undefined && process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) {
  const opts = JSON.parse(process.env[DAEMON_ENV]!) as CgidDaemonOptions;
  delete process.env[DAEMON_ENV];
  daemonMain(opts);
}
