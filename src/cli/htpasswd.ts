// `plume htpasswd`: a drop-in for Apache's htpasswd (support/htpasswd.c) with the same flags
// (-c -n -b -i -m -B -2 -5 -C -r -d -s -p -D -v), messages and exit codes. MD5 (apr1) is the
// default, as on every platform since 2.4. The file is rewritten through a temporary file in
// its directory renamed over it (httpd copies a temporary file over it in place).

import * as fs from 'node:fs';
import { validatePassword } from '../lib/passwords/index.js';
import { writeReplacing } from '../lib/dbm/sdbm.js';
import {
  ERR_BADUSER, ERR_FILEPERM, ERR_GENERAL, ERR_INVALID, ERR_OVERFLOW, ERR_PWMISMATCH, ERR_SYNTAX,
  Exit, Getopt, argvBytes, MAX_STRING_LEN, getPassword, mkhash, newCtx, parseCommonOption, processOutput, terminalInput,
  type Output, type PasswdCtx, type PasswordInput,
} from './passwd-common.js';

const PROG = 'htpasswd';
const NEWFILE = 1;
const NOFILE = 2;
const DELUSER = 4;
const VERIFY = 8;

const USAGE = `Usage:
\thtpasswd [-cimB25dpsDv] [-C cost] [-r rounds] passwordfile username
\thtpasswd -b[cmB25dpsDv] [-C cost] [-r rounds] passwordfile username password

\thtpasswd -n[imB25dps] [-C cost] [-r rounds] username
\thtpasswd -nb[mB25dps] [-C cost] [-r rounds] username password
 -c  Create a new file.
 -n  Don't update file; display results on stdout.
 -b  Use the password from the command line rather than prompting for it.
 -i  Read password from stdin without verification (for script usage).
 -m  Force MD5 hashing of the password (default).
 -2  Force SHA-256 hashing of the password (secure).
 -5  Force SHA-512 hashing of the password (secure).
 -B  Force bcrypt hashing of the password (very secure).
 -C  Set the computing time used for the bcrypt algorithm
     (higher is more secure but slower, default: 5, valid: 4 to 17).
 -r  Set the number of rounds used for the SHA-256, SHA-512 algorithms
     (higher is more secure but slower, default: 5000).
 -d  Force CRYPT hashing of the password (8 chars max, insecure).
 -s  Force SHA-1 hashing of the password (insecure).
 -p  Do not hash the password (plaintext, insecure).
 -D  Delete the specified user.
 -v  Verify password for the specified user.
On other systems than Windows and NetWare the '-p' flag will probably not work.
The SHA-1 algorithm does not use a salt and is less secure than the MD5 algorithm.
`;

interface Args {
  mask: number;
  user: string;
  file: string | undefined;
}

function usage(io: Output): never {
  io.err(USAGE);
  throw new Exit(ERR_SYNTAX);
}

function checkArgs(argv: readonly string[], ctx: PasswdCtx, io: Output): Args {
  if (argv.length < 3) usage(io);
  const g = new Getopt(argv, 'cnmspdBbDiC:r:v25', io, PROG);
  let mask = 0;
  let argsLeft = 2;
  for (;;) {
    const o = g.next();
    if (o === 'eof') break;
    if (o === 'bad') usage(io);
    switch (o.opt) {
      case 'c': mask |= NEWFILE; break;
      case 'n': argsLeft--; mask |= NOFILE; break;
      case 'D': mask |= DELUSER; break;
      case 'v': mask |= VERIFY; break;
      default: {
        const r = parseCommonOption(ctx, o.opt, o.arg, io);
        if (r) {
          io.err(`${PROG}: ${ctx.errstr}\n`);
          throw new Exit(r);
        }
      }
    }
  }
  if (ctx.passwordSource === 'arg') argsLeft++;
  if (mask & (mask - 1)) {
    io.err(`${PROG}: only one of -c -n -v -D may be specified\n`);
    throw new Exit(ERR_SYNTAX);
  }
  if ((mask & VERIFY) && ctx.passwordSource === 'prompt') ctx.passwordSource = 'prompt-verify';
  let i = g.ind;
  if (argv.length - i !== argsLeft) usage(io);
  let file: string | undefined;
  if (!(mask & NOFILE)) {
    if (Buffer.byteLength(argv[i]!, 'latin1') > 4095) {
      io.err(`${PROG}: filename too long\n`);
      throw new Exit(ERR_OVERFLOW);
    }
    file = argv[i++]!;
  }
  const user = argv[i++]!;
  if (user.length > MAX_STRING_LEN - 1) {
    io.err(`${PROG}: username too long (> ${MAX_STRING_LEN - 1})\n`);
    throw new Exit(ERR_OVERFLOW);
  }
  const colon = user.indexOf(':');
  if (colon >= 0) {
    io.err(`${PROG}: username contains illegal character ':'\n`);
    throw new Exit(ERR_BADUSER);
  }
  if (ctx.passwordSource === 'arg') {
    const pw = argv[i]!;
    if (pw.length > MAX_STRING_LEN - 1) {
      io.err(`${PROG}: password too long (> ${MAX_STRING_LEN})\n`);
      throw new Exit(ERR_OVERFLOW);
    }
    ctx.password = Buffer.from(pw, 'latin1');
  }
  return { mask, user, file };
}

function isRegularFile(f: string): boolean {
  try {
    return fs.statSync(f).isFile();
  } catch {
    return false;
  }
}

function accessible(f: string, mode: number): boolean {
  try {
    fs.accessSync(f, mode);
    return true;
  } catch {
    return false;
  }
}

function canCreate(f: string): boolean {
  try {
    const fd = fs.openSync(f, 'a');
    fs.closeSync(fd);
    return true;
  } catch {
    return false;
  }
}

/** The lines of a file as apr_file_gets returns them, each with its newline if it had one. */
function linesOf(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (;;) {
    const nl = text.indexOf('\n', start);
    if (nl < 0) {
      if (start < text.length) out.push(text.slice(start));
      return out;
    }
    out.push(text.slice(start, nl + 1));
    start = nl + 1;
  }
}

async function run(argv: readonly string[], io: Output, input: PasswordInput): Promise<number> {
  const ctx = newCtx();
  const { mask, user, file } = checkArgs(argv, ctx, io);
  let existing = false;
  if (file !== undefined) {
    existing = isRegularFile(file);
    if (existing) {
      if (!accessible(file, fs.constants.R_OK | fs.constants.W_OK)) {
        io.err(`${PROG}: cannot open file ${file} for read/write access\n`);
        return ERR_FILEPERM;
      }
    } else {
      if (!(mask & NEWFILE)) {
        io.err(`${PROG}: cannot modify file ${file}; use '-c' to create it\n`);
        return ERR_FILEPERM;
      }
      if (!canCreate(file)) {
        io.err(`${PROG}: cannot create file ${file}\n`);
        return ERR_FILEPERM;
      }
    }
  }

  let record = '';
  if ((mask & (DELUSER | VERIFY)) === 0) {
    const { code, hash } = await mkhash(ctx, input, io);
    if (code !== 0) {
      io.err(`${PROG}: ${ctx.errstr}\n`);
      return code;
    }
    record = `${user}:${hash}\n`;
    if (record.length >= MAX_STRING_LEN) {
      io.err(`${PROG}: resultant record too long\n`);
      return ERR_OVERFLOW;
    }
    if (mask & NOFILE) {
      io.out(record + '\n');
      return 0;
    }
  }

  let out = '';
  let found = 0;
  if (existing && !(mask & NEWFILE)) {
    let text: string;
    try {
      text = fs.readFileSync(file!, 'latin1');
    } catch {
      io.err(`${PROG}: unable to read file ${file}\n`);
      return ERR_FILEPERM;
    }
    for (const line of linesOf(text)) {
      const scratch = line.replace(/^[ \t\n\v\f\r]+/, '');
      if (scratch === '' || scratch[0] === '#') {
        out += line;
        continue;
      }
      const colon = scratch.indexOf(':');
      if (colon < 0) {
        io.err(`${PROG}: The file ${file} does not appear to be a valid htpasswd file.\n`);
        return ERR_INVALID;
      }
      if (scratch.slice(0, colon) !== user) {
        out += line;
        continue;
      }
      found++;
      if (mask & DELUSER) {
        io.err('Deleting ');
      } else if (mask & VERIFY) {
        const rest = scratch.slice(colon + 1);
        const m = /^[^\r\n]*/.exec(rest)![0];
        if (m.length === 0) {
          io.err(`Empty hash for user ${user}\n`);
          return ERR_INVALID;
        }
        if (ctx.password === undefined) {
          const r = getPassword(ctx, input, io);
          if (r !== 0) {
            io.err(`${ctx.errstr}\n`);
            return r;
          }
        }
        let ok: boolean;
        try {
          ok = await validatePassword(ctx.password!, m);
        } catch {
          io.err('Could not verify password: Internal error\n');
          return ERR_GENERAL;
        }
        if (!ok) {
          io.err('password verification failed\n');
          return ERR_PWMISMATCH;
        }
      } else {
        io.err('Updating ');
        out += record;
      }
    }
  }
  if (!found) {
    if (mask & DELUSER) {
      io.err(`User ${user} not found\n`);
      return 0;
    }
    if (mask & VERIFY) {
      io.err(`User ${user} not found\n`);
      return ERR_BADUSER;
    }
    io.err('Adding ');
    out += record;
  }
  if (mask & VERIFY) {
    io.err(`Password for user ${user} correct.\n`);
    return 0;
  }
  io.err(`password for user ${user}\n`);
  try {
    writeReplacing(file!, Buffer.from(out, 'latin1'), 0o666 & ~process.umask());
  } catch {
    io.err(`${PROG}: unable to update file ${file}\n`);
    return ERR_FILEPERM;
  }
  return 0;
}

/** Runs htpasswd with `args` (without the program name); returns the exit status. */
export async function htpasswdMain(args: string[], io: Output = processOutput, input: PasswordInput = terminalInput): Promise<number> {
  try {
    return await run([PROG, ...argvBytes(args)], io, input);
  } catch (e) {
    if (e instanceof Exit) return e.code;
    throw e;
  }
}
