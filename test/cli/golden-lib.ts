/**
 * Shared code for the golden CLI tests (test/golden/cli/<case>/).
 *
 * A case folder holds:
 *   httpd.conf           the configuration; `@ROOT@` stands for the folder's
 *                        temporary copy (also substituted in every other
 *                        copied text file, and in `args`)
 *   args                 the command-line arguments after `-d <root> -f
 *                        <root>/httpd.conf`, one per line (e.g. `-t`)
 *   expected.txt         what real Apache printed: stderr followed by stdout,
 *                        normalised (see `normaliseOutput`)
 *   exit                 Apache's exit code
 *   expected.plume.txt   (optional) what plume must print instead, where it
 *                        deliberately differs from Apache; `reason` says why
 *   exit.plume           (optional) plume's exit code where it differs
 *   reason               (with the two above) why plume differs
 *   anything else        extra files copied beside httpd.conf (sub.conf, conf.d/...)
 *
 * Placeholders in the expected files:
 *   @ROOT@   the temporary copy of the case folder (the -d / -f directory)
 *   @ARGV0@  the short program name Apache prints in front of some messages
 *            (ap_server_argv0 = basename of argv[0]: "apache2" for Apache,
 *            "plume" for plume), e.g. "@ARGV0@: Syntax error on line ..."
 *   @BIN@    argv[0] as the program was started (Apache: /usr/sbin/apache2;
 *            plume: the absolute path of bin/plume), e.g. in the -h usage text
 *   @BINPAD@ as many spaces as @BIN@ has characters: the continuation lines
 *            of the usage text are indented by 7 + strlen(argv[0]) + 1
 *            (main.c usage(): "       %*s [-C ...", pad_len, "")
 *   [<time>] an error-log timestamp such as [Sun Nov 22 02:42:30.206524 2026]
 *   [pid]    an error-log "[pid 3672:tid 3672]" field
 *
 * This file only exports helpers: running it (as `node --test dist/test/`
 * does with every .js file under dist/test) has no effect.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Repo root: this file is dist/test/cli/golden-lib.js → up 3. */
export const REPO_ROOT: string = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const GOLDEN_DIR: string = path.join(REPO_ROOT, 'test', 'golden', 'cli');
export const APACHE_BIN = '/usr/sbin/apache2';
export const PLUME_BIN: string = path.join(REPO_ROOT, 'bin', 'plume');

/** Files of a case folder that describe the case and are not copied. */
export const META_FILES: ReadonlySet<string> = new Set([
  'args',
  'expected.txt',
  'expected.plume.txt',
  'exit',
  'exit.plume',
  'reason',
  'README.md',
]);

export interface GoldenCase {
  name: string;
  dir: string;
}

/** Case folders (sorted), optionally only those whose name contains `filter`. */
export function listCases(filter?: string): GoldenCase[] {
  if (!fs.existsSync(GOLDEN_DIR)) return [];
  return fs
    .readdirSync(GOLDEN_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(GOLDEN_DIR, d.name, 'httpd.conf')))
    .map((d) => d.name)
    .filter((n) => filter === undefined || filter === '' || n.includes(filter))
    .sort()
    .map((name) => ({ name, dir: path.join(GOLDEN_DIR, name) }));
}

/** The case's arguments: one per line; a final newline does not make an empty argument. */
export function readArgs(caseDir: string, root: string): string[] {
  const p = path.join(caseDir, 'args');
  if (!fs.existsSync(p)) return ['-t'];
  let text = fs.readFileSync(p, 'utf8');
  if (text.endsWith('\n')) text = text.slice(0, -1);
  if (text === '') return [];
  return text.split('\n').map((a) => a.split('@ROOT@').join(root));
}

export function readOptional(p: string): string | undefined {
  return fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : undefined;
}

export function readExit(p: string): number | undefined {
  const t = readOptional(p);
  if (t === undefined) return undefined;
  const n = Number.parseInt(t.trim(), 10);
  if (Number.isNaN(n)) throw new Error(`${p}: not an exit code: ${JSON.stringify(t)}`);
  return n;
}

function isText(buf: Buffer): boolean {
  return !buf.includes(0);
}

function copyTree(src: string, dst: string, root: string, top: boolean): void {
  fs.mkdirSync(dst, { recursive: true });
  for (const ent of fs.readdirSync(src, { withFileTypes: true })) {
    if (top && META_FILES.has(ent.name)) continue;
    const s = path.join(src, ent.name);
    const d = path.join(dst, ent.name);
    if (ent.isDirectory()) {
      copyTree(s, d, root, false);
    } else if (ent.isSymbolicLink()) {
      fs.symlinkSync(fs.readlinkSync(s).split('@ROOT@').join(root), d);
    } else {
      const buf = fs.readFileSync(s);
      if (isText(buf)) fs.writeFileSync(d, buf.toString('utf8').split('@ROOT@').join(root));
      else fs.writeFileSync(d, buf);
    }
  }
}

/** Copy a case folder (without its meta files) into a fresh temp dir, substituting @ROOT@. */
export function materialise(caseDir: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-cli-'));
  copyTree(caseDir, root, root, true);
  return root;
}

export function removeTree(root: string): void {
  fs.rmSync(root, { recursive: true, force: true });
}

export interface RunResult {
  stdout: string;
  stderr: string;
  /** Exit code; null when killed by a signal (see `signal`). */
  status: number | null;
  signal: NodeJS.Signals | null;
  error?: string;
}

/** Run a command in `cwd` with no stdin, collecting stdout and stderr. */
export function run(cmd: string, args: string[], cwd: string, timeoutMs = 30000): RunResult {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, LANG: 'C', LC_ALL: 'C' },
  });
  const out: RunResult = { stdout: r.stdout ?? '', stderr: r.stderr ?? '', status: r.status, signal: r.signal };
  if (r.error !== undefined) out.error = r.error.message;
  return out;
}

function safeRealpath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

/**
 * Normalise what a program printed: the temp root becomes @ROOT@, error-log
 * timestamps become [<time>] and "[pid N:tid N]" becomes [pid].
 */
export function normaliseOutput(text: string, root: string): string {
  let out = text.split(root).join('@ROOT@');
  const real = safeRealpath(root);
  if (real !== root) out = out.split(real).join('@ROOT@');
  out = out.replace(/\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? \d{4}\]/g, '[<time>]');
  out = out.replace(/\[pid \d+(?::tid \d+)?\]/g, '[pid]');
  return out;
}

/**
 * Apache-only normalisation for recording: argv[0] (/usr/sbin/apache2) becomes
 * @BIN@ and the short name in "apache2: ..." prefixes becomes @ARGV0@.
 */
export function normaliseApacheNames(text: string): string {
  let out = text.split(APACHE_BIN).join('@BIN@');
  out = out.replace(/(^|: )apache2: /gm, '$1@ARGV0@: ');
  out = out.replace(new RegExp(`^ {7} {${APACHE_BIN.length}} (?=\\[)`, 'gm'), '       @BINPAD@ ');
  return out;
}

/** Substitute the program-name placeholders of an expected file for a given program. */
export function fillNames(expected: string, argv0: string, bin: string): string {
  return expected
    .split('@ARGV0@')
    .join(argv0)
    .split('@BINPAD@')
    .join(' '.repeat(bin.length))
    .split('@BIN@')
    .join(bin);
}

/** A readable line diff for assertion messages. */
export function describeDiff(expected: string, actual: string): string {
  const e = expected.split('\n');
  const a = actual.split('\n');
  const lines: string[] = [];
  const n = Math.max(e.length, a.length);
  for (let i = 0; i < n; i++) {
    if (e[i] === a[i]) continue;
    if (e[i] !== undefined) lines.push(`  line ${i + 1} expected: ${JSON.stringify(e[i])}`);
    if (a[i] !== undefined) lines.push(`  line ${i + 1} actual:   ${JSON.stringify(a[i])}`);
    if (lines.length > 40) {
      lines.push('  ...');
      break;
    }
  }
  return lines.join('\n');
}
