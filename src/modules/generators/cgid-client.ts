// The handler's side of mod_cgid's daemon (cgid-daemon.ts has the protocol): each serving
// process keeps one control connection to the daemon, and opens one data connection per
// script, which becomes the script's stdin and stdout once the daemon has started it. The
// script's stderr, its exec failure and its exit come back on the control connection.

import * as net from 'node:net';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { frame, type CgidRequest } from './cgid-daemon.js';

/** A script run by the daemon, as the handler sees it (the shape of a spawned child's pipes). */
export interface DaemonScript {
  /** Settles when the script runs (or could not be executed); rejects when the daemon went
   *  away first. */
  readonly ready: Promise<void>;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** The exec failure the daemon reported. */
  onExecError(fn: (e: NodeJS.ErrnoException) => void): void;
  /** Ends the exchange; a script still running is stopped by the daemon. */
  close(): void;
}

/** One script's reports, as they come on the control connection. */
interface Pending {
  readonly stderr: PassThrough;
  /** Settles the start: null once the script runs, or the exec failure. */
  started: ((e: NodeJS.ErrnoException | null) => void) | null;
  execError: ((e: NodeJS.ErrnoException) => void) | null;
  pendingError: NodeJS.ErrnoException | null;
  exited: boolean;
}

/** The serving process's control connection to one daemon socket. */
interface Link {
  readonly sock: string;
  readonly conn: net.Socket;
  readonly id: number;
  readonly scripts: Map<number, Pending>;
  seq: number;
  closed: boolean;
}

let link: Link | null = null;
let linking: Promise<Link> | null = null;

/** connect_to_daemon: retries while the daemon starts (ENOENT, ECONNREFUSED), waiting 100 ms,
 *  then twice as long each time. */
async function connect(sock: string, attempts: number): Promise<net.Socket> {
  let lastErr: NodeJS.ErrnoException | undefined;
  for (let i = 0; i < attempts; i++) {
    if (i > 0) await new Promise((res) => setTimeout(res, Math.min(100 * 2 ** (i - 1), 1000)));
    try {
      return await new Promise<net.Socket>((resolve, reject) => {
        const c = net.createConnection({ path: sock, allowHalfOpen: true });
        c.once('connect', () => { c.off('error', reject); resolve(c); });
        c.once('error', reject);
      });
    } catch (e) {
      lastErr = e as NodeJS.ErrnoException;
      if (lastErr.code !== 'ENOENT' && lastErr.code !== 'ECONNREFUSED') break;
    }
  }
  throw lastErr ?? new Error('cgid');
}

function request(msg: object): Buffer {
  const json = Buffer.from(JSON.stringify(msg), 'utf8');
  const b = Buffer.allocUnsafe(4 + json.length);
  b.writeUInt32BE(json.length, 0);
  json.copy(b, 4);
  return b;
}

function errnoError(j: { code?: string; errno?: number; message: string }): NodeJS.ErrnoException {
  return Object.assign(new Error(j.message), { code: j.code, errno: j.errno }) as NodeJS.ErrnoException;
}

/** Everything still waiting on a link that closed (the daemon died or was replaced): the
 *  starts fail, the stderr streams end. */
function dropLink(l: Link): void {
  if (l.closed) return;
  l.closed = true;
  if (link === l) link = null;
  for (const p of l.scripts.values()) {
    const s = p.started;
    p.started = null;
    if (s !== null) s(Object.assign(new Error('the cgi daemon closed the connection'), { code: 'ECONNRESET', errno: -104 }));
    p.stderr.end();
  }
  l.scripts.clear();
}

async function openLink(sock: string, attempts: number): Promise<Link> {
  const conn = await connect(sock, attempts);
  conn.write(request({ control: true }));
  return new Promise<Link>((resolve, reject) => {
    let l: Link | null = null;
    let buf: Buffer = Buffer.alloc(0);
    conn.on('data', (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      while (buf.length >= 9) {
        const n = buf.readUInt32BE(5);
        if (buf.length < 9 + n) break;
        const type = buf[0];
        const seq = buf.readUInt32BE(1);
        const payload = buf.subarray(9, 9 + n);
        buf = buf.subarray(9 + n);
        if (l === null) {
          if (type === 0x49 /* I */) { l = { sock, conn, id: seq, scripts: new Map(), seq: 0, closed: false }; resolve(l); }
          continue;
        }
        report(l, type!, seq, payload);
      }
    });
    conn.on('error', () => { /* see close */ });
    // The daemon went away (it does not half-close a control connection).
    conn.on('end', () => { conn.destroy(); });
    conn.on('close', () => {
      if (l === null) reject(Object.assign(new Error('the cgi daemon closed the connection'), { code: 'ECONNRESET', errno: -104 }));
      else dropLink(l);
    });
  });
}

function report(l: Link, type: number, seq: number, payload: Buffer): void {
  const p = l.scripts.get(seq);
  if (p === undefined) return;
  switch (type) {
    case 0x50: /* P: it runs */ {
      const s = p.started;
      p.started = null;
      if (s !== null) s(null);
      break;
    }
    case 0x58: /* X: it could not be executed */ {
      const e = errnoError(JSON.parse(payload.toString('utf8')) as { code?: string; errno?: number; message: string });
      const s = p.started;
      p.started = null;
      if (p.execError !== null) p.execError(e); else p.pendingError = e;
      if (s !== null) s(null);
      break;
    }
    // A copy: the frame's bytes belong to the connection's buffer.
    case 0x45: /* E */ p.stderr.write(Buffer.from(payload)); break;
    case 0x65: /* e */ p.stderr.end(); break;
    case 0x78: /* x */ p.exited = true; l.scripts.delete(seq); break;
    default: break;
  }
}

/** The serving process's link to the daemon on `sock`, opened on first use (and again after
 *  the daemon was restarted). */
async function getLink(sock: string, attempts: number): Promise<Link> {
  if (link !== null && !link.closed && link.sock === sock) return link;
  if (linking === null) {
    if (link !== null && link.sock !== sock) { const old = link; link = null; old.conn.end(); }
    linking = openLink(sock, attempts).then((l) => { link = l; return l; }).finally(() => { linking = null; });
  }
  return linking;
}

/** Has the daemon run `req`; resolves once the request is sent. The daemon reads it greedily,
 *  so a request body may only follow once the connection is the script's (`ready`); ending
 *  stdin needs no wait, and an exec failure comes on the control connection before the end of
 *  the script's stderr. */
export async function runThroughDaemon(sock: string, req: Omit<CgidRequest, 'link' | 'seq'>, attempts: number): Promise<DaemonScript> {
  const l = await getLink(sock, attempts);
  const data = await connect(sock, attempts);
  const seq = (l.seq = (l.seq + 1) >>> 0);
  const p: Pending = { stderr: new PassThrough(), started: null, execError: null, pendingError: null, exited: false };
  const started = new Promise<NodeJS.ErrnoException | null>((res) => { p.started = res; });
  l.scripts.set(seq, p);
  data.on('error', () => { /* the script's end of it: reported by the streams */ });
  data.write(request({ ...req, link: l.id, seq }));
  return {
    ready: started.then((failure) => { if (failure !== null) { data.destroy(); throw failure; } }),
    stdin: data,
    stdout: data,
    stderr: p.stderr,
    onExecError(fn) {
      p.execError = fn;
      const e = p.pendingError;
      if (e !== null) { p.pendingError = null; fn(e); }
    },
    close() {
      data.destroy();
      if (!p.exited && !l.closed && !l.conn.destroyed) l.conn.write(frame('K', seq, null));
    },
  };
}
