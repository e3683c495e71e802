// What mod_cgi and mod_cgid share (httpd's modules/generators/cgi_common.h): the checks before a
// script runs, the child process with its environment, the request body to its stdin, its
// stdout read with a timeout between reads (CGIScriptTimeout / CGIDScriptTimeout, else
// Timeout), its stderr lines in the error log as they come, the header scan, nph- output
// straight to the client, and the ScriptLog of failed scripts.

import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import type { Readable } from 'node:stream';
import type { Request } from '../../server/request/request.js';
import { DECLINED, OK, type HookResult } from '../../server/module.js';
import { coreDir } from '../../server/core/core-module.js';
import { limitedCommand, scriptExecFailure } from '../../server/core/rlimit.js';
import { OPT_EXECCGI } from '../../server/core/config.js';
import { APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { aprCtime } from '../../server/log/time.js';
import { EOS, FLUSH, FilterError, dataBucket } from '../../server/filters.js';
import {
  addCgiVars, addCommonVars, createEnvironment, scanScriptHeader, MAX_STRING_LEN, type ScriptLine,
} from '../../server/util-script.js';
import { runScript, type StderrSink } from './cgi-spawner.js';
import type { TcpStream } from '../../server/http/tcp-stream.js';

/** httpd's CGI_MAGIC_TYPE: a content type that also selects the CGI handler. */
export const CGI_MAGIC_TYPE = 'application/x-httpd-cgi';
/** DEFAULT_LOGBYTES and DEFAULT_BUFBYTES. */
export const DEFAULT_LOGBYTES = 10385760;
export const DEFAULT_BUFBYTES = 1024;
/** HUGE_STRING_LEN: a stderr line is read in pieces of at most this size - 1. */
const HUGE_STRING_LEN = 8192;
/** How long a script that outlived its request has after SIGTERM before SIGKILL
 *  (APR_KILL_AFTER_TIMEOUT). */
const KILL_GRACE_MS = 3000;

export interface CgiServerConfig {
  /** ScriptLog (server-root relative); undefined = none. */
  logname: string | undefined;
  /** ScriptLogLength. */
  logbytes: number;
  /** ScriptLogBuffer. */
  bufbytes: number;
}

export interface CgiDirConfig {
  /** CGIScriptTimeout / CGIDScriptTimeout in ms; undefined = the server's Timeout. */
  timeout: number | undefined;
}

export function createCgiServerConfig(): CgiServerConfig {
  return { logname: undefined, logbytes: DEFAULT_LOGBYTES, bufbytes: DEFAULT_BUFBYTES };
}

/** merge_cgi_config: a virtual host with its own ScriptLog takes its whole configuration. */
export function mergeCgiServerConfig(base: Readonly<CgiServerConfig>, add: Readonly<CgiServerConfig>): CgiServerConfig {
  return add.logname !== undefined ? { ...add } : { ...base };
}

/** The module-specific part: the log identity, AH numbers of the checks, the exec failure
 *  text the child writes to its stderr, and the module's configuration. */
export interface CgiFlavour {
  readonly module: string;
  readonly tags: { readonly execOff: string; readonly nphIncluded: string; readonly notFound: string; readonly isDir: string; readonly pathInfo: string };
  execFailure(file: string, err: NodeJS.ErrnoException): string;
  /** Whether a timeout is first logged as AH01220 (the CGI bucket of both modules). */
  readonly timeoutWarning: boolean;
  server(r: Request): CgiServerConfig;
  dir(r: Request): CgiDirConfig;
  /** Runs the script somewhere else than in this process (mod_cgid's daemon); a returned
   *  number is the handler's status (the daemon cannot be reached). Absent: spawned here. */
  start?(r: Request, argv: string[], env: Record<string, string>, cwd: string): Promise<ScriptProcess | number>;
}

/** A script's stdin: a pipe, or the connection a daemon or the spawner handed it. */
export interface ScriptInput {
  /** `done` once the piece is taken (with the error when the script stopped reading). */
  write(b: Buffer, done: (e: Error | null | undefined) => void): unknown;
  end(): unknown;
}

/** A script's stdout (a Node stream, or a TcpStream). */
export interface ScriptStdout {
  on(event: 'data', fn: (chunk: Buffer) => void): unknown;
  on(event: 'end' | 'close', fn: () => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  pause(): unknown;
  resume(): unknown;
  isPaused(): boolean;
}

/** A running script's pipes, wherever it runs. */
export interface ScriptProcess {
  readonly stdin: ScriptInput;
  readonly stdout: ScriptStdout;
  /** Hands its stderr to `sink`. */
  stderr(sink: StderrSink): void;
  /** Called with the error when the script could not be executed. */
  onExecError(fn: (e: NodeJS.ErrnoException) => void): void;
  /** Settles once stdin may be written to (mod_cgid: the daemon has handed the connection to
   *  the script); absent when it may be at once. */
  readonly ready?: Promise<void>;
  /** The request is over: a script still running is stopped. */
  reap(): void;
}

// ---- ScriptLog ---------------------------------------------------------------------------------

/** Opens the ScriptLog for appending unless it is unset or already over ScriptLogLength. */
function openScriptLog(conf: CgiServerConfig): number | undefined {
  if (conf.logname === undefined) return undefined;
  try {
    if (fs.statSync(conf.logname).size > conf.logbytes) return undefined;
  } catch {
    // not there yet: created below
  }
  try {
    return fs.openSync(conf.logname, 'a');
  } catch {
    return undefined;
  }
}

function logHead(r: Request, ret: number): string {
  return `%% [${aprCtime(Date.now() * 1000, false)}] ${r.method} ${r.uri}${r.args !== undefined ? '?' + r.args : ''} ${r.protocol}\n%% ${ret} ${r.filename}\n`;
}

/** log_scripterror: an error line (the message carries its AH number) and a ScriptLog entry. */
export function logScriptError(fl: CgiFlavour, r: Request, ret: number, tag: string, error: string): number {
  r.log(fl.module, APLOG_ERR, `${tag}stderr from ${r.filename}: ${error}`);
  const fd = openScriptLog(fl.server(r));
  if (fd === undefined) return ret;
  try {
    fs.writeSync(fd, logHead(r, ret) + `%error\n${error}\n`);
  } finally {
    fs.closeSync(fd);
  }
  return ret;
}

// ---- the script process ----------------------------------------------------------------------

/** The script's stdout as a queue of chunks read with a timeout; the stream is paused while
 *  the queue is full, so a fast script waits for a slow client. */
class ScriptOutput {
  private readonly chunks: Buffer[] = [];
  private queued = 0;
  private ended = false;
  private wake: (() => void) | null = null;
  constructor(private readonly stream: ScriptStdout) {
    stream.on('data', (c: Buffer) => {
      this.chunks.push(c);
      this.queued += c.length;
      if (this.queued >= 65536) stream.pause();
      this.notify();
    });
    const end = (): void => { this.ended = true; this.notify(); };
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', end);
  }
  private notify(): void {
    const w = this.wake;
    this.wake = null;
    if (w) w();
  }
  /** The next chunk, null at the end, 'timeout' when nothing came for `ms`. */
  async read(ms: number): Promise<Buffer | null | 'timeout'> {
    if (this.chunks.length === 0 && !this.ended) {
      const got = await new Promise<boolean>((res) => {
        const t = setTimeout(() => { this.wake = null; res(false); }, ms);
        this.wake = () => { clearTimeout(t); res(true); };
      });
      if (!got) return 'timeout';
    }
    const c = this.chunks.shift();
    if (c === undefined) return null;
    this.queued -= c.length;
    if (this.queued < 65536 && this.stream.isPaused()) this.stream.resume();
    return c;
  }
  /** What is queued now, without waiting. */
  takeQueued(): Buffer[] {
    const all = this.chunks.splice(0);
    this.queued = 0;
    if (this.stream.isPaused()) this.stream.resume();
    return all;
  }
  get done(): boolean {
    return this.ended && this.chunks.length === 0;
  }
  /** Puts back what a header line did not use. */
  unshift(c: Buffer): void {
    if (c.length) { this.chunks.unshift(c); this.queued += c.length; }
  }
}

/** The script's stderr: each line goes to the error log (log_script_err) while the request
 *  runs, or into the ScriptLog's %stderr part once the request has failed. */
class ScriptErrors implements StderrSink {
  private partial = '';
  private ended = false;
  private readonly endWaiters: (() => void)[] = [];
  /** Set when the lines go to the ScriptLog (log_script) instead of the error log. */
  collect: string[] | null = null;
  constructor(private readonly onLine: (line: string) => void, private readonly rewrite: ((raw: string) => string) | null = null) {}
  /** The end of stderr. */
  end(): void {
    if (this.ended) return;
    if (this.partial !== '') { const p = this.partial; this.partial = ''; this.emit(p); }
    this.ended = true;
    for (const w of this.endWaiters.splice(0)) w();
  }
  /** A line as it would come from the child (for an exec failure). */
  inject(line: string): void {
    this.write(line + '\n');
  }
  /** Text of stderr as it comes (latin1). */
  write(s: string): void {
    let buf = this.partial + s;
    for (;;) {
      const nl = buf.indexOf('\n');
      if (nl < 0 || nl >= HUGE_STRING_LEN - 1) {
        // apr_file_gets hands out at most HUGE_STRING_LEN - 1 bytes at a time.
        if (buf.length >= HUGE_STRING_LEN - 1) { this.emit(buf.slice(0, HUGE_STRING_LEN - 1)); buf = buf.slice(HUGE_STRING_LEN - 1); continue; }
        break;
      }
      this.emit(buf.slice(0, nl + 1));
      buf = buf.slice(nl + 1);
    }
    this.partial = buf;
  }
  private emit(raw: string): void {
    if (this.rewrite !== null) raw = this.rewrite(raw);
    if (this.collect) { this.collect.push(raw); return; }
    let line = raw;
    if (line.endsWith('\n')) line = line.slice(0, line.endsWith('\r\n') ? -2 : -1);
    this.onLine(line);
  }
  /** Resolves when stderr has closed, or after `ms`. */
  whenEnded(ms: number): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((res) => {
      const t = setTimeout(res, ms);
      this.endWaiters.push(() => { clearTimeout(t); res(); });
    });
  }
}

/** Stops a script that is still running when its request is over: SIGTERM, then SIGKILL. */
function reap(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  child.kill('SIGTERM');
  const t = setTimeout(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); }, KILL_GRACE_MS);
  t.unref();
  child.once('exit', () => clearTimeout(t));
}

/** default_build_command: argv[0] is the script; a query string without '=' gives the
 *  remaining arguments, split at '+', unescaped, shell metacharacters escaped. */
export function buildArgv(r: Request): string[] {
  const argv = [r.filename];
  const args = r.args;
  if (args !== undefined && args !== '' && !args.includes('=')) {
    for (const w of args.split('+').slice(0, 4094)) argv.push(escapeShellCmd(unescapeUrl(w)));
  }
  return argv;
}

function unescapeUrl(s: string): string {
  return s.replace(/%([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** ap_escape_shell_cmd. */
export function escapeShellCmd(s: string): string {
  return s.replace(/[&;`'"|*?~<>^()[\]{}$\\\n\x0A\xFF]/g, (c) => '\\' + c);
}

/** Runs the script: the spawn's own failure (a script that cannot be executed) becomes the
 *  line httpd's child writes to its stderr before it exits. */
async function runChild(fl: CgiFlavour, r: Request, argv: string[], env: Record<string, string>): Promise<{ child: ScriptProcess; out: ScriptOutput; err: ScriptErrors } | number> {
  const dir = r.filename.slice(0, r.filename.lastIndexOf('/') + 1) || '/';
  // RLimitCPU/MEM/NPROC: the script started through prlimit (rlimit.ts), whose report of a
  // script it cannot execute becomes the line httpd's child writes.
  const cmd = limitedCommand(coreDir(r), r.filename, argv.slice(1), () => prlimitMissing(r));
  const rewrite = cmd.limited
    ? (raw: string): string => {
      const e = scriptExecFailure(raw, r.filename);
      return e === null ? raw : fl.execFailure(r.filename, e) + '\n';
    }
    : null;
  const fullArgv = [cmd.limited ? cmd.file : argv[0]!, ...cmd.args];
  let child: ScriptProcess;
  if (fl.start !== undefined) {
    const started = await fl.start(r, fullArgv, env, dir);
    if (typeof started === 'number') return started;
    child = started;
  } else {
    // The spawner forks it (cgi-spawner.ts): a fork of this large process costs far more.
    // DIFFERENCE: the script's parent is the spawner, its stdin and stdout one socket.
    const s = await runScript(cmd.file, fullArgv, env, dir);
    child = s !== null ? {
      stdin: connInput(s.conn), stdout: s.conn, stderr: (sink) => { s.stderr(sink); },
      onExecError: (fn) => { s.onExecError(fn); }, reap: () => { s.reap(); },
    } : spawnHere(cmd.file, cmd.args, cmd.limited ? undefined : argv[0], dir, env);
  }
  const err = new ScriptErrors((line) => { logScriptError(fl, r, r.status, 'AH01215: ', line); }, rewrite);
  child.stderr(err);
  const out = new ScriptOutput(child.stdout);
  child.onExecError((e) => { err.inject(fl.execFailure(r.filename, e)); });
  return { child, out, err };
}

/** The script spawned from this process, with pipes (no spawner). */
function spawnHere(file: string, args: string[], argv0: string | undefined, cwd: string, env: Record<string, string>): ScriptProcess {
  const proc = spawn(file, args, { argv0, cwd, env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  proc.stdin!.on('error', () => { /* the script stopped reading: reported on write */ });
  return {
    stdin: proc.stdin!, stdout: proc.stdout!, stderr: (sink) => { streamStderr(proc.stderr!, sink); },
    onExecError: (fn) => { proc.on('error', fn); },
    reap: () => { reap(proc); },
  };
}

/** A stderr pipe's text into `sink`. */
export function streamStderr(stream: Readable, sink: StderrSink): void {
  stream.setEncoding('latin1');
  stream.on('data', (s: string) => sink.write(s));
  const end = (): void => sink.end();
  stream.on('end', end);
  stream.on('close', end);
  stream.on('error', end);
}

/** The spawner's connection as the script's stdin: a piece is taken once the connection has
 *  it (or, past its high-water mark, once it drained); a failed write (the script stopped
 *  reading) is reported to that piece and every later one, while its output is still read. */
function connInput(conn: TcpStream): ScriptInput {
  let failed: Error | null = null;
  const waiting: ((e: Error | null | undefined) => void)[] = [];
  const settle = (e: Error | undefined): void => { for (const w of waiting.splice(0)) w(e); };
  conn.onWriteError = (e) => { failed = e; settle(e); };
  conn.on('drain', () => settle(undefined));
  conn.on('close', () => {
    failed ??= Object.assign(new Error('write EPIPE'), { errno: -32, code: 'EPIPE', syscall: 'write' });
    settle(failed);
  });
  return {
    write(b, done) {
      if (failed !== null) { done(failed); return; }
      if (conn.write(b)) { done(undefined); return; }
      if (failed !== null) done(failed); else waiting.push(done);
    },
    end() { conn.end(); },
  };
}

let prlimitWarned = false;

/** prlimit(1) is not installed: said once per process; scripts then run without the limits. */
export function prlimitMissing(r: Request): void {
  if (prlimitWarned) return;
  prlimitWarned = true;
  r.log('core', APLOG_WARNING, 'RLimitCPU, RLimitMEM and RLimitNPROC need prlimit(1) from util-linux, which is not installed: scripts run without these limits');
}

// ---- the handler -------------------------------------------------------------------------------

function scriptTimeout(fl: CgiFlavour, r: Request): number {
  const t = fl.dir(r).timeout;
  return t !== undefined && t > 0 ? t : r.server.timeout * 1000;
}

/** Whether the request's handler is a CGI one (checked before any promise is made). */
export function isCgiRequest(r: Request): boolean {
  return r.handler === 'cgi-script' || r.handler === CGI_MAGIC_TYPE;
}

/** The handler of mod_cgi and mod_cgid (cgi_handler / cgid_handler). */
export async function cgiHandler(fl: CgiFlavour, r: Request): Promise<HookResult> {
  if (r.handler !== CGI_MAGIC_TYPE && r.handler !== 'cgi-script') return DECLINED;
  const isIncluded = r.protocol === 'INCLUDED';
  const base = r.filename.slice(r.filename.lastIndexOf('/') + 1);
  const nph = base.startsWith('nph-');
  const conf = fl.server(r);
  const scriptAliased = r.notes.get('alias-forced-type')?.toLowerCase() === 'cgi-script';
  if (!(coreDir(r).opts & OPT_EXECCGI) && !scriptAliased) {
    return logScriptError(fl, r, 403, fl.tags.execOff, 'Options ExecCGI is off in this directory');
  }
  if (nph && isIncluded) return logScriptError(fl, r, 403, fl.tags.nphIncluded, 'attempt to include NPH CGI script');
  if (r.finfo === null) return logScriptError(fl, r, 404, fl.tags.notFound, 'script not found or unable to stat');
  if (r.finfo.isDirectory()) return logScriptError(fl, r, 403, fl.tags.isDir, 'attempt to invoke directory as script');
  if (r.usedPathInfo === 'off' && r.pathInfo !== '') {
    return logScriptError(fl, r, 404, fl.tags.pathInfo, "AcceptPathInfo off disallows user's path");
  }

  addCommonVars(r);
  await addCgiVars(r);
  const env = createEnvironment(r.subprocessEnv);
  const timeout = scriptTimeout(fl, r);

  const started = await runChild(fl, r, buildArgv(r), env);
  if (typeof started === 'number') return started;
  const { child, out, err } = started;
  try {
    // The request body goes to the script before its output is read (cgi_handle_request),
    // piece by piece as it arrives; the first ScriptLogBuffer bytes are kept for the ScriptLog.
    let dbuf = '';
    const keep = conf.logname !== undefined ? conf.bufbytes : 0;
    const stdin = child.stdin;
    let broken = false;
    try {
      for (let b = await r.read(); b !== null; b = await r.read()) {
        if (dbuf.length < keep) dbuf += b.subarray(0, keep - dbuf.length).toString('latin1');
        if (broken) continue; // the script stopped reading: the rest is soaked up
        if (child.ready !== undefined) await child.ready.catch(() => undefined);
        const e = await writeAll(stdin, b, timeout);
        if (e !== undefined) {
          broken = true;
          r.log(fl.module, APLOG_ERR, `AH02651: Error writing request body to script ${r.filename}`, e instanceof Error ? r.rt.errno(e) : e);
        }
      }
    } catch (e) {
      r.log(fl.module, APLOG_ERR, 'AH01225: Error reading request entity data', r.rt.errno(e));
      return e instanceof FilterError ? e.status : 400;
    }
    stdin.end();
    return await handleResponse(fl, r, nph, out, err, timeout, dbuf);
  } finally {
    child.reap();
  }
}

/** Writes one piece to the script's stdin and waits until the pipe took it; the error when
 *  the script stopped reading. */
function writeAll(stdin: ScriptInput, b: Buffer, timeout: number): Promise<{ code: number; text: string } | Error | undefined> {
  return new Promise((res) => {
    // A script that does not read for Timeout seconds is given up on, as APR's pipe timeout does.
    const t = setTimeout(() => res({ code: 70007, text: 'The timeout specified has expired' }), timeout);
    stdin.write(b, (e) => { clearTimeout(t); res(e ?? undefined); });
  });
}

/** Reads stdout for the header scan: a line without CR/LF; 0 at the end of the output (or a
 *  line that does not fit); -1 on a timeout (logged as AH01220). */
function headerReader(fl: CgiFlavour, r: Request, out: ScriptOutput, err: ScriptErrors, timeout: number): () => Promise<ScriptLine> {
  let cur: Buffer = Buffer.alloc(0);
  return async () => {
    let line = '';
    for (;;) {
      if (cur.length === 0) {
        const c = await readStdout(fl, r, out, err, timeout);
        if (c === 'timeout') return { line, rv: -1 };
        if (c === null) return { line, rv: 0 };
        cur = c;
      }
      let i = 0;
      for (; i < cur.length; i++) {
        const b = cur[i]!;
        if (b === 0x0a) {
          out.unshift(cur.subarray(i + 1));
          cur = Buffer.alloc(0);
          return { line, rv: 1 };
        }
        if (b !== 0x0d) {
          if (line.length >= MAX_STRING_LEN - 1) {
            out.unshift(cur.subarray(i));
            cur = Buffer.alloc(0);
            return { line, rv: 0 };
          }
          line += String.fromCharCode(b);
        }
      }
      cur = Buffer.alloc(0);
    }
  };
}

/** One read of the script's stdout, as the CGI bucket does it: at the end of the output the
 *  stderr lines written before it are logged first. */
async function readStdout(fl: CgiFlavour, r: Request, out: ScriptOutput, err: ScriptErrors, timeout: number): Promise<Buffer | null | 'timeout'> {
  const c = await out.read(timeout);
  if (c === 'timeout') {
    if (fl.timeoutWarning) r.log(fl.module, APLOG_WARNING, `AH01220: Timeout waiting for output from CGI script ${r.filename}`);
    return c;
  }
  if (c === null) await err.whenEnded(timeout);
  return c;
}

/** cgi_handle_response. */
async function handleResponse(fl: CgiFlavour, r: Request, nph: boolean, out: ScriptOutput, err: ScriptErrors, timeout: number, dbuf: string): Promise<HookResult> {
  if (nph) return sendNph(fl, r, out, err, timeout);
  const sbuf = { line: '' };
  const gets = headerReader(fl, r, out, err, timeout);
  let ret = await scanScriptHeader(r, gets, { module: fl.module }, sbuf);
  if (r.subprocessEnv.get('ap_trust_cgilike_cl') === undefined) r.headersOut.unset('Content-Length');
  r.headersOut.unset('Transfer-Encoding');
  if (ret !== OK) {
    ret = await logScript(fl, r, ret, dbuf, sbuf.line, ret === 504 ? null : out, err, timeout);
    if (ret === 304) { r.status = 304; return OK; }
    return ret;
  }
  const location = r.headersOut.get('Location');
  if (location !== undefined && r.status === 200) {
    await discard(out, timeout);
    await err.whenEnded(timeout);
    if (location.startsWith('/')) {
      r.method = 'GET';
      r.headersIn.unset('Content-Length');
      await r.rt.internalRedirect(r, location);
      // The redirect's response went out through its own request.
      r.eosSent = true;
      return OK;
    }
    return 302;
  }
  await sendBody(fl, r, out, err, timeout);
  return OK;
}

async function discard(out: ScriptOutput, timeout: number): Promise<void> {
  for (;;) {
    const c = await out.read(timeout);
    if (c === null || c === 'timeout') return;
  }
}

/** The body as it comes: what is there already goes out in the first brigade (with EOS when
 *  the script has finished, so a quick script's response has a Content-Length), the rest as
 *  it is read. */
async function sendBody(fl: CgiFlavour, r: Request, out: ScriptOutput, err: ScriptErrors, timeout: number): Promise<void> {
  const first = out.takeQueued();
  if (out.done) {
    await err.whenEnded(timeout);
    await r.write([...first.map((b) => dataBucket(b)), EOS]);
    return;
  }
  // Not finished yet: what there is goes out now, the header with it (httpd's content-length
  // filter meets a read that would block and flushes), so the body is chunked.
  await r.write(first.length ? first.map((b) => dataBucket(b)) : [FLUSH]);
  for (;;) {
    if (r.connection.aborted) return;
    const c = await readStdout(fl, r, out, err, timeout);
    if (c === 'timeout') {
      // The response is cut off where it stands: no last chunk, the connection closes.
      r.connection.keepAlive = false;
      r.eosSent = true;
      return;
    }
    if (c === null) break;
    await r.write([dataBucket(c)]);
  }
  await r.write([EOS]);
}

/** An nph- script's output goes to the client as it is, past the protocol filters; the
 *  connection is not kept open. */
async function sendNph(fl: CgiFlavour, r: Request, out: ScriptOutput, err: ScriptErrors, timeout: number): Promise<HookResult> {
  const w = r.connection.wire;
  r.headersSent = true;
  r.connection.keepAlive = false;
  for (;;) {
    const c = await readStdout(fl, r, out, err, timeout);
    if (c === 'timeout' || c === null) break;
    if (r.headerOnly) continue;
    r.connection.bytesOut += c.length;
    if (!w.write(c)) await w.drain();
  }
  r.eosSent = true;
  await err.whenEnded(timeout);
  return OK;
}

/** log_script: a failed script's ScriptLog entry (request headers, the POSTed data kept, the
 *  response's error headers, the header line that failed, the rest of stdout and stderr);
 *  without a ScriptLog (or over ScriptLogLength) the output is dropped and stderr logged. */
async function logScript(fl: CgiFlavour, r: Request, ret: number, dbuf: string, sbuf: string, out: ScriptOutput | null, err: ScriptErrors, timeout: number): Promise<number> {
  const fd = openScriptLog(fl.server(r));
  if (fd === undefined) {
    if (out) {
      await discard(out, timeout);
      await err.whenEnded(timeout);
    }
    return ret;
  }
  err.collect = [];
  const rest: Buffer[] = [];
  if (out) {
    for (;;) {
      const c = await out.read(timeout);
      if (c === null || c === 'timeout') break;
      rest.push(c);
    }
    await err.whenEnded(timeout);
  }
  let text = logHead(r, ret) + '%request\n';
  r.headersIn.forEach((name, value) => { text += `${name}: ${value}\n`; });
  if ((r.method === 'POST' || r.method === 'PUT') && dbuf !== '') text += `\n${dbuf}\n`;
  text += '%response\n';
  r.errHeadersOut.forEach((name, value) => { text += `${name}: ${value}\n`; });
  if (sbuf !== '') text += sbuf + '\n';
  if (rest.length) {
    text += '%stdout\n';
    for (const b of rest) text += b.toString('latin1') + '\n';
  }
  const lines = err.collect;
  if (lines.length) text += '%stderr\n' + lines.join('') + '\n';
  try {
    fs.writeSync(fd, Buffer.from(text, 'latin1'));
  } finally {
    fs.closeSync(fd);
  }
  return ret;
}
