// RLimitCPU, RLimitMEM and RLimitNPROC (httpd's ap_unixd_set_rlimit in os/unix/unixd.c): the
// resource limits of the processes a request starts (CGI scripts, mod_include's exec cmd).
//
// A directive's value is worked out when the configuration is read, from the limits of the
// process reading it, as httpd does with getrlimit(): the first argument is the soft limit (or
// "max": the current hard limit), the second, if any, the hard limit. The memory limit is the
// address space (RLIMIT_AS), as httpd chooses on Linux.
//
// Node cannot set a child's limits between fork and exec, so a limited program is started
// through util-linux's prlimit(1), which sets them on itself and then executes the program with
// the same arguments and environment: one more exec per script, only where a limit is set (no
// shell, so nothing in the arguments is interpreted). prlimit reports a program it cannot execute
// on its stderr; scriptExecFailure() turns that line back into the errno httpd's child reports.
//
// DIFFERENCE: httpd's event MPM forks scripts from worker threads that block nearly every
// signal, and the mask survives exec: SIGXCPU at the soft CPU limit is held, so only the hard
// limit (SIGKILL) stops a busy script. Scripts started here have no signal blocked: SIGXCPU ends
// them at the soft limit (docs/differences.md).

import * as fs from 'node:fs';
import { APLOG_ERR } from '../log/levels.js';
import { strtoi64 } from '../../lib/c-numbers.js';

/** One limit; Infinity is RLIM_INFINITY ("unlimited"). */
export interface ResourceLimit {
  readonly soft: number;
  readonly hard: number;
}

export type RlimitKind = 'cpu' | 'mem' | 'nproc';

/** The limits a section sets (undefined: inherited, or none). */
export interface ResourceLimits {
  readonly rlimitCpu: ResourceLimit | undefined;
  readonly rlimitMem: ResourceLimit | undefined;
  readonly rlimitNproc: ResourceLimit | undefined;
}

/** The lines of /proc/self/limits each kind is read from, and prlimit's option for it. */
const KINDS: Record<RlimitKind, { line: string; option: string }> = {
  cpu: { line: 'Max cpu time', option: '--cpu' },
  mem: { line: 'Max address space', option: '--as' },
  nproc: { line: 'Max processes', option: '--nproc' },
};

/** getrlimit() for one kind, from /proc/self/limits; undefined when it cannot be read. */
export function currentLimit(kind: RlimitKind): ResourceLimit | undefined {
  let text: string;
  try {
    text = fs.readFileSync('/proc/self/limits', 'latin1');
  } catch {
    return undefined;
  }
  const want = KINDS[kind].line;
  for (const line of text.split('\n')) {
    if (!line.startsWith(want)) continue;
    const f = line.slice(want.length).trim().split(/\s+/);
    const n = (s: string | undefined): number => (s === 'unlimited' ? Infinity : Number(s));
    const soft = n(f[0]);
    const hard = n(f[1]);
    if (Number.isNaN(soft) || Number.isNaN(hard)) return undefined;
    return { soft, hard };
  }
  return undefined;
}

/** C's atol, cast to rlim_t: strtol's number (0 without digits); rlim_t is unsigned, so a
 *  negative number wraps to a huge one, which is no limit. */
function atol(s: string): number {
  const v = strtoi64(s).value;
  return v < 0n ? Infinity : Number(v);
}

/** What the directive's handler needs of its command: a way to log at startup. */
interface RlimitCmd {
  readonly name: string;
  log(module: string, level: number, message: string): void;
}

/**
 * ap_unixd_set_rlimit: the limit `arg` [`arg2`] sets, starting from the limit this process has
 * now; undefined when that cannot be read (httpd logs AH02172 and sets nothing).
 */
export function parseRlimit(cmd: RlimitCmd, kind: RlimitKind, arg: string, arg2: string | undefined, euid: number): ResourceLimit | undefined {
  const now = currentLimit(kind);
  if (now === undefined) {
    cmd.log('core', APLOG_ERR, `AH02172: ${cmd.name}: getrlimit failed`);
    return undefined;
  }
  const first = arg.trim();
  const cur = first.toLowerCase() === 'max' ? now.hard : atol(first);
  const max = arg2 !== undefined && arg2.trim() !== '' ? atol(arg2.trim()) : 0;
  let { soft, hard } = now;
  if (euid !== 0) {
    // Only root can raise a hard limit.
    soft = cur;
    if (max !== 0 && max > now.hard) cmd.log('core', APLOG_ERR, `AH02174: Must be uid 0 to raise maximum ${cmd.name}`);
    else if (max !== 0) hard = max;
  } else {
    if (cur !== 0) soft = cur;
    if (max !== 0) hard = max;
  }
  return { soft, hard };
}

const PRLIMIT = '/usr/bin/prlimit';
let prlimitFound: boolean | undefined;

/** The program and arguments that run `file` with `args` under the section's limits: `file`
 *  itself when no limit is set. `missing` is told once when prlimit is not installed (the
 *  program then runs without the limits). */
export function limitedCommand(l: ResourceLimits, file: string, args: readonly string[], missing: () => void): { file: string; args: string[]; limited: boolean } {
  if (l.rlimitCpu === undefined && l.rlimitMem === undefined && l.rlimitNproc === undefined) return { file, args: [...args], limited: false };
  if (prlimitFound === undefined) prlimitFound = fs.existsSync(PRLIMIT);
  if (!prlimitFound) {
    missing();
    return { file, args: [...args], limited: false };
  }
  const opts: string[] = [];
  const v = (n: number): string => (n === Infinity ? 'unlimited' : String(n));
  const add = (kind: RlimitKind, lim: ResourceLimit | undefined): void => {
    if (lim !== undefined) opts.push(`${KINDS[kind].option}=${v(lim.soft)}:${v(lim.hard)}`);
  };
  add('cpu', l.rlimitCpu);
  add('mem', l.rlimitMem);
  add('nproc', l.rlimitNproc);
  return { file: PRLIMIT, args: [...opts, '--', file, ...args], limited: true };
}

/** strerror() texts prlimit prints, by errno name. */
const ERRNO_BY_TEXT: ReadonlyMap<string, { code: string; errno: number }> = new Map([
  ['Permission denied', { code: 'EACCES', errno: 13 }],
  ['No such file or directory', { code: 'ENOENT', errno: 2 }],
  ['Exec format error', { code: 'ENOEXEC', errno: 8 }],
  ['Not a directory', { code: 'ENOTDIR', errno: 20 }],
  ['Too many levels of symbolic links', { code: 'ELOOP', errno: 40 }],
  ['Argument list too long', { code: 'E2BIG', errno: 7 }],
  ['Cannot allocate memory', { code: 'ENOMEM', errno: 12 }],
  ['Text file busy', { code: 'ETXTBSY', errno: 26 }],
  ['Resource temporarily unavailable', { code: 'EAGAIN', errno: 11 }],
]);

/** The exec failure a line of a limited program's stderr reports (prlimit's "failed to execute
 *  FILE: TEXT"), as the error Node's spawn would have given; null for any other line. */
export function scriptExecFailure(line: string, file: string): NodeJS.ErrnoException | null {
  const head = `prlimit: failed to execute ${file}: `;
  if (!line.startsWith(head)) return null;
  const text = line.slice(head.length).replace(/\r?\n$/, '');
  const e: NodeJS.ErrnoException = new Error(text);
  const known = ERRNO_BY_TEXT.get(text);
  if (known !== undefined) {
    e.code = known.code;
    e.errno = -known.errno;
  }
  return e;
}
