// mod_cgid's CGI daemon (cgid_server in modules/generators/mod_cgid.c): the process the
// server's first process (the parent, or the -X process) starts before it serves. It binds the
// ScriptSock Unix socket (mode 0700, owned by User when started as root), drops to User/Group
// and runs the scripts the handlers describe, so the serving processes never fork: forking a
// process costs in proportion to its memory, and a serving process is large.
//
// This file is the daemon's whole program and imports only Node's net, fs and child_process,
// so the process stays small (its fork per script is what it exists to make cheap).
//
// Two kinds of connection (the handler's side is cgid-client.ts):
//   control  one per serving process, opened with the request {"control":true}; the daemon
//            answers with an 'I' frame carrying the process's link id. On it the daemon reports,
//            per script: 'P' it runs (its pid), 'X' it could not be executed (JSON errno),
//            'E' bytes of its stderr, 'e' the end of its stderr, 'x' its exit. The handler sends
//            'K' to stop a script its request no longer needs (SIGTERM, then SIGKILL 3 s later,
//            httpd's cleanup_nonchild_process); a control connection that closes stops that
//            link's scripts the same way.
//   data     one per script: the request (link id, sequence number, file, argv, cwd,
//            environment) and nothing more until the handler has seen 'P'; the connection
//            itself then becomes the script's stdin and stdout, as httpd's daemon hands it over,
//            so the output goes to the handler without passing through the daemon.
// Every message is a 4-byte big-endian length and JSON (requests), or a frame of one type
// byte, a 4-byte sequence number and a 4-byte length (the control connection's reports).

import * as net from 'node:net';
import * as fs from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';

/** How the parent starts the daemon (passed in the environment, as JSON). */
export interface CgidDaemonOptions {
  readonly sock: string;
  /** Drop to these when started as root (httpd's ap_unixd_setup_child). */
  readonly user: string | null;
  readonly uid: number | null;
  readonly gid: number | null;
}

/** A data connection's request: the script and where its reports go. */
export interface CgidRequest {
  /** The link id of the serving process's control connection, and this script's number on it. */
  readonly link: number;
  readonly seq: number;
  readonly file: string;
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
}

export const DAEMON_ENV = 'PLUME_CGID_DAEMON';
const KILL_GRACE_MS = 3000;
const MAX_REQUEST = 16 * 1024 * 1024;

export function frame(type: string, seq: number, payload: Buffer | null): Buffer {
  const n = payload === null ? 0 : payload.length;
  const b = Buffer.allocUnsafe(9 + n);
  b[0] = type.charCodeAt(0);
  b.writeUInt32BE(seq >>> 0, 1);
  b.writeUInt32BE(n, 5);
  if (payload !== null) payload.copy(b, 9);
  return b;
}

/** Reads one length-prefixed JSON message from a fresh connection, then stops reading. */
function readRequest(conn: net.Socket, done: (msg: unknown, rest: Buffer) => void): void {
  let head: Buffer = Buffer.alloc(0);
  const onData = (d: Buffer): void => {
    head = head.length === 0 ? d : Buffer.concat([head, d]);
    if (head.length < 4) return;
    const len = head.readUInt32BE(0);
    if (len > MAX_REQUEST) { conn.destroy(); return; }
    if (head.length < 4 + len) return;
    conn.off('data', onData);
    conn.pause();
    let msg: unknown;
    try {
      msg = JSON.parse(head.subarray(4, 4 + len).toString('utf8'));
    } catch {
      conn.destroy();
      return;
    }
    done(msg, head.subarray(4 + len));
  };
  conn.on('data', onData);
}

// ---- the daemon --------------------------------------------------------------------------------

interface Running { child: ChildProcess; exited: boolean }

/** A serving process's control connection and its scripts still running. */
interface Link { conn: net.Socket; scripts: Map<number, Running> }

const links = new Map<number, Link>();
// Link ids differ from one daemon to the next, so a request that reaches a restarted daemon
// with its predecessor's link id is not taken for another process's.
let nextLink = (Math.random() * 0x7fffffff) >>> 0;

function stop(r: Running): void {
  if (r.exited) return;
  r.child.kill('SIGTERM');
  const t = setTimeout(() => { if (!r.exited) r.child.kill('SIGKILL'); }, KILL_GRACE_MS);
  t.unref();
  r.child.once('exit', () => clearTimeout(t));
}

function serveControl(conn: net.Socket, rest: Buffer): void {
  const id = nextLink;
  nextLink = (nextLink + 1) >>> 0;
  const link: Link = { conn, scripts: new Map() };
  links.set(id, link);
  let buf: Buffer = rest;
  const take = (): void => {
    while (buf.length >= 9) {
      const n = buf.readUInt32BE(5);
      if (buf.length < 9 + n) break;
      const type = buf[0];
      const seq = buf.readUInt32BE(1);
      buf = buf.subarray(9 + n);
      if (type === 0x4b /* K */) {
        const r = link.scripts.get(seq);
        if (r !== undefined) stop(r);
      }
    }
  };
  conn.on('data', (d: Buffer) => { buf = buf.length === 0 ? d : Buffer.concat([buf, d]); take(); });
  conn.resume();
  conn.on('error', () => { /* the serving process went away: see close */ });
  conn.on('end', () => { conn.destroy(); });
  conn.on('close', () => {
    links.delete(id);
    for (const r of link.scripts.values()) stop(r);
  });
  conn.write(frame('I', id, null));
  take();
}

function serveData(conn: net.Socket, req: CgidRequest, rest: Buffer): void {
  const link = links.get(req.link);
  // The handler sends nothing past the request before 'P'; anything else is not ours.
  if (link === undefined || rest.length > 0) { conn.destroy(); return; }
  const send = (type: string, payload: Buffer | null): void => {
    if (!link.conn.destroyed) link.conn.write(frame(type, req.seq, payload));
  };
  const failed = (e: NodeJS.ErrnoException): void => {
    send('X', Buffer.from(JSON.stringify({ code: e.code, errno: e.errno, message: e.message })));
    send('e', null);
    send('x', null);
  };
  let child: ChildProcess;
  try {
    child = spawn(req.file, req.argv.slice(1), {
      argv0: req.argv[0], cwd: req.cwd, env: req.env, stdio: [conn, conn, 'pipe'],
    });
  } catch (e) {
    conn.destroy();
    failed(e as NodeJS.ErrnoException);
    return;
  }
  // The script holds the connection now; the daemon's copy is closed (not shut down).
  conn.destroy();
  if (child.pid === undefined) {
    child.once('error', failed);
    return;
  }
  const r: Running = { child, exited: false };
  link.scripts.set(req.seq, r);
  send('P', Buffer.from(String(child.pid)));
  let open = 2;
  const finished = (): void => {
    if (--open > 0) return;
    link.scripts.delete(req.seq);
    send('x', null);
  };
  const err = child.stderr!;
  err.on('data', (d: Buffer) => send('E', d));
  err.on('end', () => { send('e', null); finished(); });
  err.on('error', () => { /* ends too */ });
  child.on('error', () => { /* a kill that came too late */ });
  child.on('exit', () => { r.exited = true; finished(); });
}

function serveConnection(conn: net.Socket): void {
  conn.on('error', () => { /* the handler went away */ });
  readRequest(conn, (msg, rest) => {
    if (msg !== null && typeof msg === 'object' && (msg as { control?: unknown }).control === true) serveControl(conn, rest);
    else serveData(conn, msg as CgidRequest, rest);
  });
}

/** The daemon process's main: bind, drop privileges, serve until told to stop. */
export function daemonMain(opts: CgidDaemonOptions): void {
  const root = typeof process.geteuid === 'function' && process.geteuid() === 0;
  // A socket left by an earlier daemon of this parent (a restart) is replaced, as httpd unlinks
  // the name before binding.
  try { fs.unlinkSync(opts.sock); } catch { /* none */ }
  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false }, serveConnection);
  const old = process.umask(0o077);
  server.listen({ path: opts.sock, backlog: 511 }, () => {
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
    const quit = (): void => {
      // Only its own socket: a newer daemon may have bound the same name since.
      try { if (fs.statSync(opts.sock).ino === ino) fs.unlinkSync(opts.sock); } catch { /* gone */ }
      process.exit(0);
    };
    process.on('SIGTERM', quit);
    process.on('SIGINT', quit);
    process.on('SIGHUP', quit);
    // The parent went away without stopping us (the IPC channel closed).
    process.on('disconnect', quit);
    process.send?.('ready');
  });
  server.on('error', (e: NodeJS.ErrnoException) => {
    process.umask(old);
    process.send?.({ error: e.code ?? String(e), errno: e.errno ?? 0 });
    process.exit(1);
  });
}

if (process.env[DAEMON_ENV] !== undefined && process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) {
  const opts = JSON.parse(process.env[DAEMON_ENV]!) as CgidDaemonOptions;
  delete process.env[DAEMON_ENV];
  daemonMain(opts);
}
