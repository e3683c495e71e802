// Where log lines go: a file (opened for append), a piped command, or stderr. Lines written
// in one turn of the event loop are flushed together with one write, in order; nothing is
// lost at exit. Piped logs follow 2.4: "|cmd" runs the program directly (no shell), "|$cmd"
// through the shell (the 2.2 behaviour), "||cmd" directly as well.
// With worker processes the parent opens every target and the workers write through the
// parent's descriptors (passed at fork): one O_APPEND file description per log file, one pipe
// and one logger program per piped log, owned by the parent (see shareLogTargets()).

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { splitWords } from '../config/lexer.js';

export interface LogSink {
  write(line: string): void;
  flush(): void;
  close(): void;
  readonly description: string;
}

const live = new Set<LogSink>();
process.on('exit', () => {
  for (const s of live) s.flush();
});

abstract class BatchingSink implements LogSink {
  private pending: string[] = [];
  private scheduled = false;
  constructor(readonly description: string, private readonly buffered: boolean) {
    live.add(this);
  }
  write(line: string): void {
    this.pending.push(line);
    if (!this.scheduled) {
      this.scheduled = true;
      if (this.buffered) setTimeout(() => this.flush(), 1000).unref();
      else setImmediate(() => this.flush());
    }
  }
  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const data = this.pending.length === 1 ? this.pending[0]! : this.pending.join('');
    this.pending = [];
    this.emit(data);
  }
  close(): void {
    this.flush();
    live.delete(this);
    this.release();
  }
  protected abstract emit(data: string): void;
  protected abstract release(): void;
}

export class FileSink extends BatchingSink {
  private fd: number;
  constructor(readonly path: string, buffered = false) {
    super(path, buffered);
    this.fd = fs.openSync(path, 'a', 0o644);
  }
  /** The descriptor (O_APPEND) worker processes inherit. */
  get descriptor(): number { return this.fd; }
  protected emit(data: string): void {
    try {
      fs.writeSync(this.fd, data);
    } catch {
      // A full disk must not take the server down; httpd drops the line too.
    }
  }
  /** logrotate: reopen the path (a graceful restart does this). */
  reopen(): void {
    this.flush();
    const old = this.fd;
    this.fd = fs.openSync(this.path, 'a', 0o644);
    fs.closeSync(old);
  }
  protected release(): void {
    try { fs.closeSync(this.fd); } catch { /* already closed */ }
  }
}

export class StderrSink extends BatchingSink {
  constructor() { super('stderr', false); }
  protected emit(data: string): void {
    try { fs.writeSync(2, data); } catch { /* stderr gone */ }
  }
  protected release(): void {}
}

// ---- where piped loggers' stderr goes -----------------------------------------------------------

/** A child's stderr as spawn() takes it: a descriptor of ours, or a stream over a pipe. */
type ChildStderr = number | Writable;

/** httpd starts piped loggers with its own stderr, which ap_open_logs has made the main
 *  server's error log by then; the main error log's own logger (a piped ErrorLog) gets httpd's
 *  stdout instead (log.c, log_child's dummy_stderr). Node cannot make fd 2 the error log, so
 *  each logger is given the error log's descriptor directly. */
let loggerStderr: ChildStderr = 2;

/** The descriptor or stream a program writing into `sink` reads from, if it has one. */
function stderrOf(sink: LogSink): ChildStderr | undefined {
  if (sink instanceof FileSink || sink instanceof SharedPipeSink) return sink.descriptor;
  if (sink instanceof PipeSink) return sink.input;
  if (sink instanceof StderrSink) return 2;
  return undefined;
}

/** ap_open_logs' order: the main error log's logger is started with stdout as its stderr;
 *  every logger started after it (virtual hosts' error logs, CustomLog pipes) writes its
 *  stderr into the main error log. Called with undefined before the main error log opens. */
export function setLoggerStderr(mainErrorLog: LogSink | undefined): void {
  loggerStderr = mainErrorLog === undefined ? 1 : stderrOf(mainErrorLog) ?? 2;
}

export class PipeSink extends BatchingSink {
  private child: ChildProcess | null = null;
  private closing = false;
  private readonly stderr: ChildStderr = loggerStderr;
  constructor(readonly command: string, private readonly viaShell: boolean, buffered = false) {
    super('|' + command, buffered);
    this.start();
  }
  /** The pipe into the logger program (while it runs). */
  get input(): Writable | undefined {
    return this.child?.stdin ?? undefined;
  }
  private start(): void {
    const opts = { stdio: ['pipe', 'ignore', this.stderr] as ('pipe' | 'ignore' | ChildStderr)[] };
    if (this.viaShell) {
      this.child = spawn('/bin/sh', ['-c', this.command], opts);
    } else {
      const argv = splitWords(this.command);
      this.child = spawn(argv[0]!, argv.slice(1), opts);
    }
    this.child.on('error', () => { /* reported by the exit handler */ });
    this.child.stdin?.on('error', () => { /* the reader went away; it is restarted */ });
    this.child.on('exit', () => {
      // httpd restarts a piped logger that died (reliable piped logs).
      if (!this.closing) setTimeout(() => this.start(), 100).unref();
    });
  }
  protected emit(data: string): void {
    this.child?.stdin?.write(data);
  }
  protected release(): void {
    this.closing = true;
    this.child?.stdin?.end();
  }
}

/** The most a write to a pipe may hold and still reach the reader whole, never mixed with
 *  another process's write (POSIX PIPE_BUF on Linux). */
const PIPE_BUF = 4096;

/** Writes `data` to a pipe shared with other processes: in pieces of at most PIPE_BUF bytes
 *  cut after a newline, so that no line is mixed with another writer's (a single line longer
 *  than PIPE_BUF goes alone, as httpd's does). */
function writePipe(fd: number, data: string): void {
  if (data.length <= PIPE_BUF && Buffer.byteLength(data) <= PIPE_BUF) {
    fs.writeSync(fd, data);
    return;
  }
  const buf = Buffer.from(data);
  let from = 0;
  while (from < buf.length) {
    let end = Math.min(buf.length, from + PIPE_BUF);
    if (end < buf.length) {
      const nl = buf.lastIndexOf(0x0a, end - 1);
      if (nl >= from) end = nl + 1;
      else { const next = buf.indexOf(0x0a, end); end = next < 0 ? buf.length : next + 1; }
    }
    let off = from;
    while (off < end) off += fs.writeSync(fd, buf, off, end - off);
    from = end;
  }
}

/**
 * A piped log the parent shares with its worker processes (httpd's reliable piped logs): the
 * pipe is a FIFO opened read-write by the parent and unlinked at once, so its descriptor is a
 * plain blocking pipe that workers inherit and write to directly; the parent keeps the read
 * end too, and a logger program that dies is started again on the same pipe without losing
 * what was written meanwhile.
 */
export class SharedPipeSink extends BatchingSink {
  private child: ChildProcess | null = null;
  private closing = false;
  private readonly stderr: ChildStderr = loggerStderr;
  private readonly wfd: number;
  private readonly rfd: number;
  constructor(readonly command: string, private readonly viaShell: boolean, buffered = false) {
    super('|' + command, buffered);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-log-'));
    const fifo = path.join(dir, 'pipe');
    try {
      execFileSync('mkfifo', ['-m', '600', fifo], { stdio: 'ignore' });
      // O_RDWR first: the FIFO then has a writer, so opening its read end does not block.
      this.wfd = fs.openSync(fifo, fs.constants.O_RDWR);
      this.rfd = fs.openSync(fifo, fs.constants.O_RDONLY);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    this.start();
  }
  /** The descriptor worker processes inherit and write to. */
  get descriptor(): number { return this.wfd; }
  private start(): void {
    const opts = { stdio: [this.rfd, 'ignore', this.stderr] as (number | 'ignore' | ChildStderr)[] };
    if (this.viaShell) {
      this.child = spawn('/bin/sh', ['-c', this.command], opts);
    } else {
      const argv = splitWords(this.command);
      this.child = spawn(argv[0]!, argv.slice(1), opts);
    }
    this.child.on('error', () => { /* reported by the exit handler */ });
    this.child.on('exit', () => {
      this.child = null;
      if (!this.closing) setTimeout(() => { if (!this.closing) this.start(); }, 100).unref();
    });
  }
  protected emit(data: string): void {
    try { writePipe(this.wfd, data); } catch { /* the pipe is gone: drop the lines, as httpd does */ }
  }
  protected release(): void {
    this.closing = true;
    // The logger reads on until every worker holding the pipe has gone too.
    try { fs.closeSync(this.wfd); } catch { /* closed */ }
    try { fs.closeSync(this.rfd); } catch { /* closed */ }
  }
}

/** A log target opened by the parent, written through the descriptor a worker inherited. */
class InheritedSink extends BatchingSink {
  constructor(description: string, private readonly fd: number, private readonly pipe: boolean, buffered: boolean) {
    super(description, buffered);
  }
  protected emit(data: string): void {
    try {
      if (this.pipe) writePipe(this.fd, data);
      else fs.writeSync(this.fd, data);
    } catch {
      // A full disk or a gone logger must not take the worker down; httpd drops the line too.
    }
  }
  protected release(): void {
    try { fs.closeSync(this.fd); } catch { /* already closed */ }
  }
}

// ---- sharing the targets with worker processes ------------------------------------------------

/** Parent: piped logs are SharedPipeSinks (set before any target is opened). */
let sharing = false;
/** Worker: target key -> the descriptor inherited from the parent. */
let inherited: ReadonlyMap<string, number> | undefined;
/** How often each target key was opened in this generation: the second CustomLog to the same
 *  file gets a key of its own, in the parent and in the worker alike. */
let occurrences = new Map<string, number>();
/** The parent's targets of the generation being opened, with the keys workers look them up by. */
let collected: { key: string; sink: SharedPipeSink | FileSink }[] = [];

/** Parent: from now on piped logs are opened so that worker processes can share them. */
export function shareLogTargets(): void {
  sharing = true;
}

/** Parent: a configuration generation starts opening its log targets. */
export function beginLogGeneration(): void {
  occurrences = new Map();
  collected = [];
}

/** Parent: the descriptors of the targets opened since beginLogGeneration() and still open,
 *  by key, for the worker processes of that generation. */
export function sharedLogDescriptors(): { key: string; fd: number }[] {
  const out: { key: string; fd: number }[] = [];
  for (const c of collected) if (live.has(c.sink)) out.push({ key: c.key, fd: c.sink.descriptor });
  return out;
}

/** Worker: the targets the parent opened, by key, and the descriptors they arrived on. */
export function inheritLogDescriptors(fds: ReadonlyMap<string, number>): void {
  inherited = fds;
}

function targetKey(kind: string, name: string): string {
  const base = `${kind}:${name}`;
  const n = occurrences.get(base) ?? 0;
  occurrences.set(base, n + 1);
  return `${base}#${n}`;
}

/** Opens a log target as ErrorLog/CustomLog spell it. `resolve` makes ServerRoot-relative paths.
 *  In a worker process, a target the parent opened is written through its descriptor. */
export function openLogTarget(spec: string, resolve: (p: string) => string, buffered = false): LogSink {
  if (spec === '/dev/stderr') return new StderrSink();
  const pipe = spec.startsWith('|');
  const key = targetKey(pipe ? 'pipe' : 'file', pipe ? spec : resolve(spec));
  const fd = inherited?.get(key);
  if (fd !== undefined) return new InheritedSink(pipe ? spec : resolve(spec), fd, pipe, buffered);
  if (pipe) {
    let cmd = spec.slice(1);
    let shell = false;
    if (cmd.startsWith('|')) cmd = cmd.slice(1);
    else if (cmd.startsWith('$')) { cmd = cmd.slice(1); shell = true; }
    if (!sharing) return new PipeSink(cmd.trim(), shell, buffered);
    const sink = new SharedPipeSink(cmd.trim(), shell, buffered);
    collected.push({ key, sink });
    return sink;
  }
  const sink = new FileSink(resolve(spec), buffered);
  if (sharing) collected.push({ key, sink });
  return sink;
}
