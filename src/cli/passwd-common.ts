// What htpasswd and htdbm share (httpd's support/passwd_common.c and apr_getopt): option
// scanning with APR's messages, the hash options (-m -B -2 -5 -d -s -p -C -r), reading the
// password (-b argument, -i stdin, or a prompt on the terminal) and making the hash.

import * as fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { makeHash, desTruncates, type HashAlgorithm } from '../lib/passwords/index.js';

// Exit codes (passwd_common.h).
export const ERR_FILEPERM = 1;
export const ERR_SYNTAX = 2;
export const ERR_PWMISMATCH = 3;
export const ERR_INTERRUPTED = 4;
export const ERR_OVERFLOW = 5;
export const ERR_BADUSER = 6;
export const ERR_INVALID = 7;
export const ERR_RANDOM = 8;
export const ERR_GENERAL = 9;

/** httpd's MAX_STRING_LEN in the support tools. */
export const MAX_STRING_LEN = 256;

/** Thrown to end the program with a status (the tools' exit()). */
export class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** Text written to stderr and stdout, gathered so tests can drive the tools in-process. */
export interface Output {
  err(s: string): void;
  out(s: string): void;
}

/** The tools work on bytes, held as latin1 strings (one character per byte), as C does. */
export const processOutput: Output = {
  err: (s) => { fs.writeSync(2, Buffer.from(s, 'latin1')); },
  out: (s) => { fs.writeSync(1, Buffer.from(s, 'latin1')); },
};

/** Node decodes argv as UTF-8: back to the bytes the shell passed, as latin1 strings. */
export function argvBytes(args: readonly string[]): string[] {
  return args.map((a) => Buffer.from(a, 'utf8').toString('latin1'));
}

// ---- apr_getopt ---------------------------------------------------------------------------

export type GetoptResult = { readonly opt: string; readonly arg: string | undefined } | 'eof' | 'bad';

/** apr_getopt over argv (argv[0] is the program), as a stateful scanner. */
export class Getopt {
  ind = 1;
  private place = '';
  constructor(private readonly argv: readonly string[], private readonly opts: string, private readonly io: Output, private readonly prog: string) {}

  next(): GetoptResult {
    if (this.place === '') {
      if (this.ind >= this.argv.length || !this.argv[this.ind]!.startsWith('-')) return 'eof';
      this.place = this.argv[this.ind]!;
      if (this.place.length > 1 && this.place[1] === '-') {
        this.ind++;
        this.place = '';
        return 'eof';
      }
      this.place = this.place.slice(1);
      if (this.place === '') {
        // a lone "-": no option letter
        this.ind++;
        return 'eof';
      }
    }
    const opt = this.place[0]!;
    this.place = this.place.slice(1);
    const at = opt === ':' ? -1 : this.opts.indexOf(opt);
    if (at < 0) {
      if (opt === '-') return 'eof';
      if (this.place === '') this.ind++;
      this.io.err(`${this.prog}: illegal option -- ${opt}\n`);
      return 'bad';
    }
    if (this.opts[at + 1] !== ':') {
      if (this.place === '') this.ind++;
      return { opt, arg: undefined };
    }
    let arg: string;
    if (this.place !== '') {
      arg = this.place;
    } else if (this.argv.length <= ++this.ind) {
      this.place = '';
      this.io.err(`${this.prog}: option requires an argument -- ${opt}\n`);
      return 'bad';
    } else {
      arg = this.argv[this.ind]!;
    }
    this.place = '';
    this.ind++;
    return { opt, arg };
  }
}

// ---- the password context -------------------------------------------------------------------

export type PasswordSource = 'prompt' | 'prompt-verify' | 'arg' | 'stdin';

export interface PasswdCtx {
  alg: HashAlgorithm;
  passwordSource: PasswordSource;
  /** -C / -r (0 = not given). */
  cost: number;
  password: Buffer | undefined;
  errstr: string;
}

export function newCtx(): PasswdCtx {
  return { alg: 'md5', passwordSource: 'prompt', cost: 0, password: undefined, errstr: '' };
}

/** parse_common_options: 0, or an exit code with ctx.errstr set. */
export function parseCommonOption(ctx: PasswdCtx, opt: string, arg: string | undefined, io: Output): number {
  switch (opt) {
    case 'b': ctx.passwordSource = 'arg'; break;
    case 'i': ctx.passwordSource = 'stdin'; break;
    case 'm': ctx.alg = 'md5'; break;
    case '2': ctx.alg = 'sha256'; break;
    case '5': ctx.alg = 'sha512'; break;
    case 's': ctx.alg = 'sha1'; break;
    case 'p':
      ctx.alg = 'plain';
      io.err('Warning: storing passwords as plain text might just not work on this platform.\n');
      break;
    case 'd': ctx.alg = 'crypt'; break;
    case 'B': ctx.alg = 'bcrypt'; break;
    case 'C':
    case 'r': {
      const a = arg ?? '';
      const m = /^[ \t\n\v\f\r]*[+-]?[0-9]+$/.exec(a);
      const num = m ? parseInt(a, 10) : NaN;
      if (!m || !(num > 0)) {
        ctx.errstr = 'argument to -C/-r must be a positive integer';
        return ERR_SYNTAX;
      }
      ctx.cost = num;
      break;
    }
    default:
      io.err(`parse_common_options(): BUG: invalid option ${opt}\n`);
      throw new Exit(ERR_SYNTAX);
  }
  return 0;
}

// ---- reading passwords ----------------------------------------------------------------------

/** Where prompts read from: the terminal, or stdin when there is none (as getpass does). */
export interface PasswordInput {
  /** Prints `prompt` and reads one line without echo. */
  prompt(prompt: string, io: Output): string;
  /** Reads all of stdin (bytes). */
  stdin(): Buffer;
}

function readLineFromFd(fd: number): string {
  const chunks: number[] = [];
  const b = Buffer.alloc(1);
  for (;;) {
    let n: number;
    try {
      n = fs.readSync(fd, b, 0, 1, null);
    } catch (e) {
      if ((e as { code?: string }).code === 'EAGAIN') continue;
      break;
    }
    if (n === 0 || b[0] === 0x0a) break;
    chunks.push(b[0]!);
  }
  return Buffer.from(chunks).toString('latin1');
}

export const terminalInput: PasswordInput = {
  prompt(prompt, io) {
    let tty = -1;
    try {
      tty = fs.openSync('/dev/tty', 'r+');
    } catch { /* no terminal: stdin, as getpass */ }
    if (tty < 0) {
      io.err(prompt);
      return readLineFromFd(0);
    }
    try {
      fs.writeSync(tty, prompt);
      spawnSync('stty', ['-echo'], { stdio: [tty, 'ignore', 'ignore'] });
      const line = readLineFromFd(tty);
      spawnSync('stty', ['echo'], { stdio: [tty, 'ignore', 'ignore'] });
      fs.writeSync(tty, '\n');
      return line;
    } finally {
      fs.closeSync(tty);
    }
  },
  stdin() {
    try {
      return fs.readFileSync(0);
    } catch {
      return Buffer.alloc(0);
    }
  },
};

/** get_password: 0, or an exit code with ctx.errstr set. */
export function getPassword(ctx: PasswdCtx, input: PasswordInput, io: Output): number {
  const tooLong = (): number => {
    ctx.errstr = `password too long (>${MAX_STRING_LEN - 1})`;
    return ERR_OVERFLOW;
  };
  if (ctx.passwordSource === 'stdin') {
    const buf = input.stdin();
    if (buf.length >= MAX_STRING_LEN) return tooLong();
    let end = buf.length;
    if (end >= 1 && buf[end - 1] === 0x0a) {
      end--;
      if (end >= 1 && buf[end - 1] === 0x0d) end--;
    }
    ctx.password = cString(buf.subarray(0, end));
    return 0;
  }
  if (ctx.passwordSource === 'prompt-verify') {
    const pw = input.prompt('Enter password: ', io);
    if (pw.length > MAX_STRING_LEN) return tooLong();
    ctx.password = Buffer.from(pw, 'latin1');
    return 0;
  }
  const pw = input.prompt('New password: ', io);
  if (pw.length > MAX_STRING_LEN) return tooLong();
  const again = input.prompt('Re-type new password: ', io);
  if (pw !== again) {
    ctx.errstr = 'password verification error';
    return ERR_PWMISMATCH;
  }
  ctx.password = Buffer.from(pw, 'latin1');
  return 0;
}

/** The bytes up to the first NUL (a C string). */
export function cString(b: Buffer): Buffer {
  const n = b.indexOf(0);
  return n >= 0 ? b.subarray(0, n) : b;
}

/** mkhash: 0 with ctx.errstr unset and the hash returned, or an exit code. */
export async function mkhash(ctx: PasswdCtx, input: PasswordInput, io: Output): Promise<{ code: number; hash: string }> {
  if (ctx.cost !== 0 && ctx.alg !== 'bcrypt' && ctx.alg !== 'sha256' && ctx.alg !== 'sha512') {
    io.err('Warning: Ignoring -C/-r argument for this algorithm.\n');
  }
  if (ctx.password === undefined) {
    const r = getPassword(ctx, input, io);
    if (r !== 0) return { code: r, hash: '' };
  }
  const pw = ctx.password!;
  if (ctx.alg === 'bcrypt') {
    const cost = ctx.cost || 5;
    if (cost < 4 || cost > 17) {
      ctx.errstr = 'Unable to encode with bcrypt: Invalid argument';
      return { code: ERR_PWMISMATCH, hash: '' };
    }
    return { code: 0, hash: await makeHash('bcrypt', pw, { cost }) };
  }
  const hash = await makeHash(ctx.alg, pw, { cost: ctx.cost });
  if (ctx.alg === 'crypt' && desTruncates(pw, hash)) {
    io.err('Warning: Password truncated to 8 characters by CRYPT algorithm.\n');
  }
  return { code: 0, hash };
}
