// Where log lines go: a file (opened for append), a piped command, or stderr. Lines written
// in one turn of the event loop are flushed together with one write, in order; nothing is
// lost at exit. Piped logs follow 2.4: "|cmd" runs the program directly (no shell), "|$cmd"
// through the shell (the 2.2 behaviour), "||cmd" directly as well.

import * as fs from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
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

export class PipeSink extends BatchingSink {
  private child: ChildProcess | null = null;
  private closing = false;
  constructor(readonly command: string, private readonly viaShell: boolean, buffered = false) {
    super('|' + command, buffered);
    this.start();
  }
  private start(): void {
    const opts = { stdio: ['pipe', 'ignore', 'inherit'] as ('pipe' | 'ignore' | 'inherit')[] };
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

/** Opens a log target as ErrorLog/CustomLog spell it. `resolve` makes ServerRoot-relative paths. */
export function openLogTarget(spec: string, resolve: (p: string) => string, buffered = false): LogSink {
  if (spec.startsWith('|')) {
    let cmd = spec.slice(1);
    let shell = false;
    if (cmd.startsWith('|')) cmd = cmd.slice(1);
    else if (cmd.startsWith('$')) { cmd = cmd.slice(1); shell = true; }
    return new PipeSink(cmd.trim(), shell, buffered);
  }
  if (spec === '/dev/stderr') return new StderrSink();
  return new FileSink(resolve(spec), buffered);
}
