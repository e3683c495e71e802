// httpd's ap_get_exec_line (server/util.c) for directives that take "exec:/path/prog args"
// (AuthLDAPBindPassword, SessionCryptoPassphrase): the program runs once while the
// configuration is read, in its own directory, and the first line it prints (up to the first
// CR or LF, at most 8191 characters) is the value. Its exit status is not looked at; a program
// that cannot be started prints nothing (APR forks before the exec that fails), so its value
// is empty, as on httpd.

import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { splitWords } from './lexer.js';

/** MAX_STRING_LEN - 1. */
const MAX_LINE = 8191;

/**
 * The value of an `exec:` argument, `arg` itself when it is not one, or `{ error }` with
 * httpd's text. `rootRelative` resolves the program against ServerRoot; `what` names the value
 * in the failure message ("bind password" in both httpd modules that use it).
 */
export function execLineArg(arg: string, rootRelative: (p: string) => string, what = 'bind password'): string | { error: string } {
  if (!(arg.length > 5 && arg.startsWith('exec:'))) return arg;
  const argv = splitWords(arg.slice(5));
  if (argv.length === 0) return { error: `Unable to parse exec arguments from ${arg.slice(5)}` };
  const prog = rootRelative(argv[0]!);
  const r = spawnSync(prog, argv.slice(1), { cwd: path.dirname(prog), encoding: 'latin1', input: '', maxBuffer: 1 << 20 });
  if (r.error !== undefined && (r.error as NodeJS.ErrnoException).code === 'ENOBUFS') return { error: `Unable to get ${what} from exec of ${arg.slice(5)}` };
  const out = r.stdout ?? '';
  const end = out.search(/[\r\n]/);
  return (end < 0 ? out : out.slice(0, end)).slice(0, MAX_LINE);
}
