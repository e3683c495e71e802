// plume upgrade: the httpd 2.2 -> 2.4 upgrade assistant's command line.
//   plume upgrade [--check | --diff | --write] [--output FILE] [--format text|json]
//                 [--htaccess DIR]... [--no-htaccess] [--keep-2.2-defaults] [--no-comments]
//                 [--mpm prefork|worker|event] [-d SERVERROOT] [-D NAME]... FILE...
// Exit status: 0 done (and, with --check, nothing to change); 1 --check found something to
// change, or usage errors; 2 a configuration could not be read (nothing is written then).

import * as fs from 'node:fs';
import * as path from 'node:path';
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
  output: string | undefined;
  format: 'text' | 'json';
  files: string[];
  opts: UpgradeOptions;
}

/** Reads the command line (exported for tests). */
export function parseUpgradeArgs(argv: readonly string[]): Args | string {
  let mode = 'report' as Args['mode'];
  let output: string | undefined;
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
    mode, output, format, files,
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

export async function upgradeMain(argv: string[], io: Io = processIo): Promise<number> {
  const a = parseUpgradeArgs(argv);
  if (typeof a === 'string') {
    if (a !== '') io.err(`plume upgrade: ${a}\n`);
    io.err(USAGE);
    return a === '' ? 0 : 1;
  }
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
      if (a.format === 'json') io.out(formatJson(must));
      else {
        io.out(formatText(must));
        io.out(must.length === 0 ? 'Clean 2.4 configuration: nothing to change.\n' : summary(must, changed.length));
      }
      return must.length > 0 || changed.length > 0 ? 1 : 0;
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
