// plume upgrade: the httpd 2.2 -> 2.4 upgrade assistant's command line.
//   plume upgrade [--check | --diff | --write] [--output FILE] [--format text|json]
//                 [--htaccess DIR]... [--no-htaccess] [--keep-2.2-defaults] [--no-comments]
//                 [--mpm prefork|worker|event] [-d SERVERROOT] [-D NAME]... FILE...
// Exit status: 0 done (and, with --check, nothing to change); 1 --check found something to
// change, or usage errors; 2 a configuration could not be read (nothing is written then).

import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import type { Upgrade } from './engine.js';
import { loadConfiguration } from './load.js';
import { DEFAULT_OPTIONS, UpgradeParseError, type Finding, type UpgradeOptions } from './model.js';
import { formatJson, formatText, summary, unifiedDiff } from './report.js';
import { RULES } from './rules/index.js';

export interface Io {
  out(s: string): void;
  err(s: string): void;
}

const processIo: Io = {
  out: (s) => { process.stdout.write(s); },
  err: (s) => { process.stderr.write(s); },
};

const USAGE = `Usage: plume upgrade [--check | --diff | --write] [--output FILE] [--format text|json]
                     [--htaccess DIR]... [--no-htaccess] [--keep-2.2-defaults] [--no-comments]
                     [--mpm prefork|worker|event] [-d SERVERROOT] [-D NAME]... FILE...
Upgrades an httpd 2.2 configuration (and the files it includes) to 2.4.
  (default)           list the findings: file:line, severity, rule, what changed and how
  --check             exit 1 when something must change, 0 when the input is clean 2.4
                      (confirmed with apache2 -t where Apache 2.4 is installed)
  --apache PATH       the httpd 2.4 binary --check confirms with (default /usr/sbin/apache2)
  --no-apache         do not run it
  --diff              print a unified diff of every file that changes
  --write             rewrite the files in place, keeping FILE.bak
  --output PATH       write the upgraded configuration elsewhere: the main file to PATH, or, when
                      it includes other files (or .htaccess files), the whole tree under directory PATH
  --format json       findings as a JSON array of {file, line, rule, severity, message, before, after}
  --htaccess DIR      look for the .htaccess files under DIR only (repeatable); by default
                      every directory 2.2 reads them in is searched. Only files 2.2 reads
                      (AllowOverride not None) are upgraded.
  --no-htaccess       leave .htaccess files out
  --keep-2.2-defaults write 2.2's value where the configuration relied on a changed default
  --no-comments       do not mark rewrites with "# plume upgrade: <rule>" comments
  --mpm NAME          the MPM 2.2 was built with (default prefork)
  -d SERVERROOT       resolve relative paths (Include...) against SERVERROOT
  -D NAME             read <IfDefine NAME> sections as defined (as httpd -D NAME)
`;

export interface Args {
  mode: 'report' | 'check' | 'diff' | 'write';
  /** --apache PATH ('' for --no-apache): the binary --check confirms a clean result with. */
  apache: string | undefined;
  output: string | undefined;
  format: 'text' | 'json';
  files: string[];
  opts: UpgradeOptions;
}

/** Reads the command line (exported for tests). */
export function parseUpgradeArgs(argv: readonly string[]): Args | string {
  let mode = 'report' as Args['mode'];
  let output: string | undefined;
  let apache: string | undefined;
  let format: Args['format'] = 'text';
  const files: string[] = [];
  let htaccess: string[] | undefined | false;
  let comments = true;
  let keep = false;
  let serverRoot: string | undefined;
  let mpm: UpgradeOptions['mpm'] = 'prefork';
  const skip: string[] = [];
  const defines: string[] = [];
  const setMode = (m: Args['mode']): string | undefined => {
    if (mode !== 'report' && mode !== m) return `--${m} cannot be combined with --${mode}`;
    mode = m;
    return undefined;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string | undefined => {
      const eq = a.indexOf('=');
      if (a.startsWith('--') && eq > 0) return a.slice(eq + 1);
      const v = argv[i + 1];
      if (v === undefined) return undefined;
      i++;
      return v;
    };
    const name = a.startsWith('--') && a.includes('=') ? a.slice(0, a.indexOf('=')) : /^-D./.test(a) ? '-D' : a;
    let e: string | undefined;
    switch (name) {
      case '--check': e = setMode('check'); break;
      case '--diff': e = setMode('diff'); break;
      case '--write': e = setMode('write'); break;
      case '--output': case '-o': {
        const v = value();
        if (v === undefined) return `${a} needs a file name`;
        output = v;
        break;
      }
      case '--format': {
        const v = value();
        if (v !== 'text' && v !== 'json') return '--format takes text or json';
        format = v;
        break;
      }
      case '--no-htaccess': htaccess = false; break;
      case '--htaccess': {
        if (htaccess === false || htaccess === undefined) htaccess = [];
        if (a.includes('=')) { htaccess.push(a.slice(a.indexOf('=') + 1)); break; }
        const next = argv[i + 1];
        if (next !== undefined && !next.startsWith('-') && isDir(next)) { htaccess.push(next); i++; }
        break;
      }
      case '--keep-2.2-defaults': keep = true; break;
      case '--no-apache': apache = ''; break;
      case '--apache': {
        const v = value();
        if (v === undefined) return '--apache needs the path of the apache2 (httpd 2.4) binary';
        apache = v;
        break;
      }
      case '--no-comments': comments = false; break;
      case '--mpm': {
        const v = value();
        if (v !== 'prefork' && v !== 'worker' && v !== 'event') return '--mpm takes prefork, worker or event';
        mpm = v;
        break;
      }
      case '--skip': {
        const v = value();
        if (v === undefined) return '--skip needs a rule id';
        skip.push(...v.split(','));
        break;
      }
      case '-D': {
        const v = a.length > 2 && !a.startsWith('--') ? a.slice(2) : value();
        if (v === undefined || v === '') return '-D needs a name';
        defines.push(v);
        break;
      }
      case '-d': case '--server-root': {
        const v = value();
        if (v === undefined) return `${a} needs a directory`;
        serverRoot = v;
        break;
      }
      case '-h': case '--help': return '';
      default:
        if (a.startsWith('-') && a !== '-') return `unknown option ${a}`;
        files.push(a);
    }
    if (e) return e;
  }
  if (files.length === 0) return 'no configuration file given';
  if (output !== undefined && files.length > 1) return '--output takes one configuration file';
  if (output !== undefined && mode === 'write') return '--output cannot be combined with --write';
  return {
    mode, output, apache, format, files,
    opts: { ...DEFAULT_OPTIONS, comments, keep22Defaults: keep, htaccess, serverRoot, mpm, skip, defines },
  };
}

function isDir(p: string): boolean {
  try { return fs.statSync(p).isDirectory(); } catch { return false; }
}

/** Runs every rule over one configuration. */
export function upgradeConfiguration(file: string, opts: UpgradeOptions): Upgrade {
  const u = loadConfiguration(file, opts);
  u.run(RULES);
  return u;
}

/** Writes a file through a temporary file and rename, keeping the original as FILE.bak. */
export function writeAtomically(file: string, text: string, keepBackup: boolean, create = false): string | undefined {
  let mode = 0o644;
  try {
    mode = fs.statSync(file).mode;
  } catch (e) {
    if (!create) throw e;
  }
  let bak: string | undefined;
  if (keepBackup) {
    bak = `${file}.bak`;
    for (let n = 1; fs.existsSync(bak); n++) bak = `${file}.bak.${n}`;
    fs.copyFileSync(file, bak, fs.constants.COPYFILE_EXCL);
  }
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.plume-upgrade-${process.pid}.tmp`);
  try {
    const fd = fs.openSync(tmp, 'wx', mode & 0o7777);
    try {
      fs.writeFileSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    try { fs.unlinkSync(tmp); } catch { /* not created */ }
    throw e;
  }
  return bak;
}

/** The directory that holds every one of these files. */
function commonDir(files: readonly string[]): string {
  let dir = path.dirname(files[0]!);
  for (const f of files) while (dir !== '/' && !f.startsWith(dir + '/')) dir = path.dirname(dir);
  return dir;
}

/** Writes a configuration tree under `out` (created; it must be empty or new). */
export function writeTree(out: string, files: readonly { path: string; text: string }[]): string | undefined {
  if (fs.existsSync(out)) {
    if (!fs.statSync(out).isDirectory()) return `--output ${out}: the configuration has ${files.length} files (Include, .htaccess), so --output names a directory, and ${out} is a file`;
    if (fs.readdirSync(out).length > 0) return `--output ${out}: the directory is not empty`;
  }
  const base = commonDir(files.map((f) => f.path));
  for (const f of files) {
    const to = path.join(out, path.relative(base, f.path));
    fs.mkdirSync(path.dirname(to), { recursive: true });
    writeAtomically(to, f.text, false, true);
  }
  return undefined;
}

/** What the command's caller knows: the modules plume has (asked of its catalogue by the
 *  plume command line), the Apache binary --check may ask to confirm a clean result. */
export interface UpgradeEnv {
  readonly plumeModules?: ReadonlySet<string>;
  /** undefined: /usr/sbin/apache2 (or $APACHE2) when installed; '': never run Apache. */
  readonly apache?: string;
}

/** The Apache 2.4 binary to confirm with, if any. */
function apacheBinary(env: UpgradeEnv, flag: string | undefined): string | undefined {
  const want = flag ?? env.apache ?? process.env['APACHE2'] ?? '/usr/sbin/apache2';
  if (want === '') return undefined;
  try {
    fs.accessSync(want, fs.constants.X_OK);
    return want;
  } catch {
    return undefined;
  }
}

/** `apache2 -t` on a configuration (Debian's envvars file beside it is read first, as
 *  apache2ctl does). */
function apacheSyntax(bin: string, u: Upgrade, defines: readonly string[]): { ok: boolean; output: string } {
  const args = ['-t', '-d', u.serverRoot, '-f', u.main.path, ...defines.flatMap((d) => ['-D', d])];
  const envvars = path.join(path.dirname(u.main.path), 'envvars');
  const r = fs.existsSync(envvars)
    ? spawnSync('/bin/sh', ['-c', '. "$0" && exec "$@"', envvars, bin, ...args], { encoding: 'utf8', timeout: 60000 })
    : spawnSync(bin, args, { encoding: 'utf8', timeout: 60000 });
  return { ok: r.status === 0, output: `${r.stderr ?? ''}${r.stdout ?? ''}`.trim() };
}

export async function upgradeMain(argv: string[], io: Io = processIo, env: UpgradeEnv = {}): Promise<number> {
  const parsed = parseUpgradeArgs(argv);
  if (typeof parsed === 'string') {
    if (parsed !== '') io.err(`plume upgrade: ${parsed}\n`);
    io.err(USAGE);
    return parsed === '' ? 0 : 1;
  }
  const a: Args = env.plumeModules ? { ...parsed, opts: { ...parsed.opts, plumeModules: env.plumeModules } } : parsed;
  // Read and analyse everything first: a parse error anywhere writes nothing.
  const runs: Upgrade[] = [];
  for (const f of a.files) {
    try {
      runs.push(upgradeConfiguration(f, a.opts));
    } catch (e) {
      if (e instanceof UpgradeParseError) {
        io.err(`plume upgrade: ${e.file}:${e.line}: ${e.detail}\n`);
        io.err('plume upgrade: nothing was written.\n');
        return 2;
      }
      throw e;
    }
  }
  const findings: Finding[] = runs.flatMap((u) => u.sortedFindings());
  const changed = runs.flatMap((u) => u.changedDocs());
  switch (a.mode) {
    case 'check': {
      const must = findings.filter((f) => f.severity !== 'note');
      // Nothing to change: where Apache 2.4 is installed, it must accept the files as they are
      // before the configuration is called clean.
      let refused: string | undefined;
      let confirmed = false;
      const bin = must.length === 0 && changed.length === 0 ? apacheBinary(env, a.apache) : undefined;
      if (bin) {
        for (const u of runs) {
          const r = apacheSyntax(bin, u, a.opts.defines);
          if (!r.ok) { refused = `${u.main.display}: ${bin} -t does not accept it:\n${r.output.split('\n').map((l) => `  ${l}`).join('\n')}\n`; break; }
        }
        confirmed = refused === undefined;
      }
      if (a.format === 'json') io.out(formatJson(must));
      else {
        io.out(formatText(must));
        if (must.length > 0 || changed.length > 0) io.out(summary(must, changed.length));
        else if (refused) io.out(`Nothing for the assistant to change, but ${refused}`);
        else io.out(`Clean 2.4 configuration: nothing to change${confirmed ? ` (${bin} -t: Syntax OK)` : ''}.\n`);
      }
      return must.length > 0 || changed.length > 0 || refused !== undefined ? 1 : 0;
    }
    case 'diff':
      for (const d of changed) io.out(unifiedDiff(d.original, d.text(), d.display, `${d.display} (upgraded)`));
      if (a.format === 'json') io.err(formatJson(findings));
      return 0;
    case 'write': {
      for (const d of changed) {
        const bak = writeAtomically(d.path, d.text(), true);
        io.err(`plume upgrade: wrote ${d.display} (original kept as ${d.display}${bak!.slice(d.path.length)})\n`);
      }
      if (a.format === 'json') io.out(formatJson(findings));
      else io.out(formatText(findings) + summary(findings, changed.length));
      return 0;
    }
    case 'report':
    default: {
      if (a.output !== undefined) {
        const u = runs[0]!;
        const all = [...u.docs, ...u.htaccess];
        if (all.length === 1) {
          writeAtomically(a.output, u.main.text(), false, true);
        } else {
          // A configuration of several files: the whole tree goes to a directory, each file at
          // its place relative to the directory that holds them all.
          const e = writeTree(a.output, all.map((d) => ({ path: d.path, text: d.text() })));
          if (e) { io.err(`plume upgrade: ${e}\n`); return 1; }
          io.err(`plume upgrade: wrote ${all.length} files (${changed.length} changed) under ${a.output}/\n`);
        }
      }
      if (a.format === 'json') io.out(formatJson(findings));
      else io.out(formatText(findings) + summary(findings, changed.length));
      return 0;
    }
  }
}
