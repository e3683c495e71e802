// `plume htdbm`: a drop-in for Apache's htdbm (support/htdbm.c) on SDBM databases, with the
// same flags (-c -n -b -i -m -B -C -d -s -p -T -l -v -x -t), messages and exit codes. The
// database is changed in memory with APR's algorithm and written back through temporary
// files renamed over NAME.dir and NAME.pag, so Apache's tools and server read it unchanged.
// DIFFERENCE: only SDBM is implemented ("default" means SDBM); GDBM, NDBM and DB report
// "This function has not been implemented on this platform".

import * as fs from 'node:fs';
import { validatePassword } from '../lib/passwords/index.js';
import { DIRFEXT, PAGFEXT, PAIRMAX, Sdbm, isSupportedDbmType } from '../lib/dbm/index.js';
import {
  ERR_BADUSER, ERR_FILEPERM, ERR_PWMISMATCH, ERR_SYNTAX,
  Exit, Getopt, argvBytes, getPassword, mkhash, newCtx, parseCommonOption, processOutput, terminalInput,
  type Output, type PasswordInput,
} from './passwd-common.js';

const PROG = 'htdbm';

const USAGE = `htdbm -- program for manipulating DBM password databases.

Usage: htdbm   [-cimBdpstvx] [-C cost] [-TDBTYPE] database username
                -b[cmBdptsv] [-C cost] [-TDBTYPE] database username password
                -n[imBdpst]  [-C cost] username
                -nb[mBdpst]  [-C cost] username password
                -v[imBdps]   [-C cost] [-TDBTYPE] database username
                -vb[mBdps]   [-C cost] [-TDBTYPE] database username password
                -x                     [-TDBTYPE] database username
                -l                     [-TDBTYPE] database
Options:
   -c   Create a new database.
   -n   Don't update database; display results on stdout.
   -b   Use the password from the command line rather than prompting for it.
   -i   Read password from stdin without verification (for script usage).
   -m   Force MD5 hashing of the password (default).
   -B   Force BCRYPT hashing of the password (very secure).
   -C   Set the computing time used for the bcrypt algorithm
        (higher is more secure but slower, default: 5, valid: 4 to 31).
   -d   Force CRYPT hashing of the password (8 chars max, insecure).
   -s   Force SHA hashing of the password (insecure).
   -p   Do not hash the password (plaintext, insecure).
   -T   DBM Type (SDBM|GDBM|DB|default).
   -l   Display usernames from database on stdout.
   -v   Verify the username/password.
   -x   Remove the username record from database.
   -t   The last param is username comment.
The SHA algorithm does not use a salt and is less secure than the MD5 algorithm.
`;

type Command = 'make' | 'nofile' | 'list' | 'verify' | 'delete';

function usage(io: Output): never {
  io.err(USAGE);
  throw new Exit(ERR_SYNTAX);
}

/** apr_dbm_open_ex for SDBM: the database, or APR's error text. */
function openDb(type: string, name: string, create: boolean): Sdbm | string {
  if (!isSupportedDbmType(type)) {
    const t = type.toLowerCase();
    return t === 'gdbm' || t === 'ndbm' || t === 'db' ? 'This function has not been implemented on this platform' : 'DSO load failed';
  }
  try {
    if (create) {
      for (const ext of [DIRFEXT, PAGFEXT]) {
        const fd = fs.openSync(name + ext, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o666);
        fs.closeSync(fd);
      }
    } else {
      fs.accessSync(name + DIRFEXT, fs.constants.R_OK);
      fs.accessSync(name + PAGFEXT, fs.constants.R_OK);
    }
    return Sdbm.load(name);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'ENOENT') return 'No such file or directory';
    if (code === 'EACCES') return 'Permission denied';
    if (code === 'EISDIR') return 'Is a directory';
    return String((e as Error).message);
  }
}

async function run(argv: readonly string[], io: Output, input: PasswordInput): Promise<number> {
  const ctx = newCtx();
  if (argv.length < 3) usage(io);
  const g = new Getopt(argv, 'cnmspdBbtivxlC:T:', io, PROG);
  let cmd: Command = 'make';
  let needFile = true;
  let needUser = true;
  let needCmnt = false;
  let create = false;
  let rdonly = false;
  let type = 'default';
  let argsLeft = 2;
  let bad = false;
  for (;;) {
    const o = g.next();
    if (o === 'eof') break;
    if (o === 'bad') { bad = true; break; }
    switch (o.opt) {
      case 'c': create = true; break;
      case 'n': needFile = false; cmd = 'nofile'; argsLeft--; break;
      case 'l': needUser = false; cmd = 'list'; rdonly = true; argsLeft--; break;
      case 't': needCmnt = true; argsLeft++; break;
      case 'T': type = o.arg ?? ''; break;
      case 'v': rdonly = true; cmd = 'verify'; break;
      case 'x': cmd = 'delete'; break;
      default: {
        const r = parseCommonOption(ctx, o.opt, o.arg, io);
        if (r) {
          io.err(`Error: ${ctx.errstr}\n`);
          return r;
        }
      }
    }
  }
  if (ctx.passwordSource === 'arg') argsLeft++;
  let i = g.ind;
  if (bad || argv.length - i !== argsLeft) usage(io);

  let filename = '';
  let db: Sdbm | undefined;
  if (needFile) {
    filename = argv[i++]!;
    const d = openDb(type, filename, create);
    if (typeof d === 'string') {
      io.err(`Error opening database ${filename}\n${d}\n`);
      return ERR_FILEPERM;
    }
    db = d;
  }
  let username: string | undefined;
  if (needUser) {
    username = argv[i++]!;
    if (username.length > 64 || username.length < 1) {
      io.err('Invalid username length\n');
      return ERR_BADUSER;
    }
    if (username.includes(':')) {
      io.err('Username contains invalid characters\n');
      return ERR_BADUSER;
    }
  }
  if (ctx.passwordSource === 'arg') ctx.password = Buffer.from(argv[i++]!, 'latin1');
  const comment = needCmnt ? argv[i++] : undefined;

  let changed = false;
  let hash = '';
  switch (cmd) {
    case 'verify': {
      if (ctx.password === undefined) {
        const r = getPassword(ctx, input, io);
        if (r !== 0) {
          io.err(`Error: ${ctx.errstr}\n`);
          return r;
        }
      }
      const rec = db!.fetch(Buffer.from(username!, 'latin1'));
      if (rec === undefined) {
        io.err(`The user '${username}' could not be found in database\n`);
        return ERR_BADUSER;
      }
      const s = rec.toString('latin1');
      const colon = s.indexOf(':');
      const ok = await validatePassword(ctx.password!, colon >= 0 ? s.slice(0, colon) : s);
      if (!ok) {
        io.err(`Password mismatch for user '${username}'\n`);
        return ERR_PWMISMATCH;
      }
      io.err(`Password validated for user '${username}'\n`);
      break;
    }
    case 'delete':
      if (!db!.delete(Buffer.from(username!, 'latin1'))) {
        io.err(`Cannot find user '${username}' in database\n`);
        return ERR_BADUSER;
      }
      username = undefined;
      changed = true;
      break;
    case 'list': {
      const keys = db!.keys();
      if (keys.length === 0) {
        io.err(`Empty database -- ${filename}\n`);
        break;
      }
      io.err(`Dumping records from database -- ${filename}\n`);
      io.err(`    ${'Username'.padEnd(32)} Comment\n`);
      for (const k of keys) {
        const v = db!.fetch(k) ?? Buffer.alloc(0);
        let line = `    ${k.toString('latin1').padEnd(32)}`;
        const c = v.indexOf(0x3a);
        if (c >= 0) line += ` ${v.subarray(c + 1).toString('latin1')}`;
        io.err(line + '\n');
      }
      io.err(`Total #records : ${keys.length}\n`);
      break;
    }
    default: {
      const res = await mkhash(ctx, input, io);
      if (res.code !== 0) {
        io.err(`Error: ${ctx.errstr}\n`);
        return res.code;
      }
      hash = res.hash;
    }
  }
  if (needFile && !rdonly) {
    if (username !== undefined) {
      const key = Buffer.from(username, 'latin1');
      if (db!.fetch(key) !== undefined) changed = true;
      const val = Buffer.from(comment === undefined ? hash : `${hash}:${comment}`, 'latin1');
      if (key.length + val.length > PAIRMAX) return ERR_FILEPERM;
      db!.store(key, val);
    }
    try {
      db!.save(filename);
    } catch {
      return ERR_FILEPERM;
    }
    io.out(`Database ${filename} ${create ? 'created' : changed ? 'modified' : 'updated'}.\n`);
  }
  if (cmd === 'nofile') {
    io.err(comment === undefined ? `${username}:${hash}\n` : `${username}:${hash}:${comment}\n`);
  }
  return 0;
}

/** Runs htdbm with `args` (without the program name); returns the exit status. */
export async function htdbmMain(args: string[], io: Output = processOutput, input: PasswordInput = terminalInput): Promise<number> {
  try {
    return await run([PROG, ...argvBytes(args)], io, input);
  } catch (e) {
    if (e instanceof Exit) return e.code;
    throw e;
  }
}
