// The core directives httpd executes while reading (EXEC_ON_READ): Include, IncludeOptional,
// Define, UnDefine, ServerRoot and the conditional sections <IfModule>, <IfDefine>, <IfFile>,
// <IfDirective>, <IfSection>.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { CmdParms } from '../config/cmd.js';
import { ConfigError } from '../config/errors.js';
import { describeFsError } from '../config/build.js';
import { parseConfig } from '../config/tree.js';
import { splitWords } from '../config/lexer.js';
import { compileWildcard } from './sections.js';
import { directive, EXEC_ON_READ, OR_ALL, RSRC_CONF, ACCESS_CONF, type DirectiveSpec } from '../module.js';
import type { CoreDirConfig, CoreServerConfig } from './config.js';

type Cmd = CmdParms<CoreServerConfig, CoreDirConfig>;
const MAX_INCLUDE_DEPTH = 128;
let includeDepth = 0;

/** Splits a conditional section's argument as httpd's start_cond_section does: a '!' as
 *  the very first character negates, then the first word (quotes and escapes as
 *  ap_getword_conf) is tested — so `!"path"` negates and `"!path"` tests "!path". */
function condArg(cmd: Cmd, raw: string): { not: boolean; arg: string } | string {
  let rest = raw.trimStart();
  const not = rest.startsWith('!');
  if (not) rest = rest.slice(1);
  const arg = splitWords(rest)[0] ?? '';
  if (arg === '') return `${cmd.name}> directive requires additional arguments`;
  return { not, arg };
}

/** Includes the section's body when `test` holds (after applying '!'). */
function conditional(test: (cmd: Cmd, arg: string) => boolean) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const a = condArg(cmd, raw);
    if (typeof a === 'string') return a;
    if (test(cmd, a.arg) !== a.not) cmd.emit(cmd.expand(cmd.node.source.children ?? []));
    // A false section is skipped up to its end tag (ap_soak_end_container), which must be there.
    else if (cmd.node.source.unclosed === true) return `Expected </${cmd.node.source.name}> before end of configuration`;
    return undefined;
  };
}

const ifModule = conditional((cmd, arg) => cmd.ctx.isLoaded(arg));
const ifDefine = conditional((cmd, arg) => cmd.ctx.defines.has(arg));
const ifFile = conditional((cmd, arg) => fs.existsSync(cmd.serverRootRelative(arg)));
const ifDirective = conditional((cmd, arg) => cmd.ctx.directives.has(arg.toLowerCase()));
const ifSection = conditional((cmd, arg) => cmd.ctx.directives.has('<' + arg.toLowerCase().replace(/^</, '')));

function define(cmd: Cmd, name: string, value: string | undefined): string | undefined {
  if (name.includes(':')) return `Variable name must not contain ':'`;
  cmd.ctx.defines.set(name, value ?? '');
  return undefined;
}

function undefine(cmd: Cmd, name: string): string | undefined {
  if (name.includes(':')) return `Variable name must not contain ':'`;
  cmd.ctx.defines.delete(name);
  return undefined;
}

function serverRoot(cmd: Cmd, dir: string): string | undefined {
  const p = path.resolve(dir);
  let st: fs.Stats | undefined;
  try { st = fs.statSync(p); } catch { st = undefined; }
  if (!st || !st.isDirectory()) return `ServerRoot must be a valid directory`;
  cmd.ctx.serverRoot = p;
  return undefined;
}

/** apr_fnmatch_test: does the text hold a wildcard ('*', '?', or '[' with a closing ']')? */
function hasWildcard(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '*' || c === '?') return true;
    if (c === '\\') { i++; continue; }
    if (c === '[') return s.indexOf(']', i + 1) >= 0;
  }
  return false;
}

/** Where an Include's files are read, in httpd's order (ap_process_fnmatch_configs). Each
 *  file is handed to `read` as it is found, so that an error stops the walk where httpd
 *  stops. Returns an error text. */
type ReadFile = (file: string) => string | undefined;

/** A file or a directory: a directory's entries (all but . and ..) sorted, recursively. */
function includePlain(file: string, read: ReadFile): string | undefined {
  let st: fs.Stats | undefined;
  try { st = fs.statSync(file); } catch { st = undefined; }
  if (st?.isDirectory()) {
    let names: string[];
    try { names = fs.readdirSync(file); } catch (e) {
      return `Could not open config directory ${file}: ${describeFsError(e)}`;
    }
    names.sort(byBytes);
    for (const n of names) {
      const err = includePlain(path.join(file, n), read);
      if (err !== undefined) return err;
    }
    return undefined;
  }
  return read(file);
}

function byBytes(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The wildcard walk: `dir` is a directory, `rest` the components still to match. */
function includeWildcard(dir: string, rest: string, optional: boolean, read: ReadFile): string | undefined {
  const slash = rest.indexOf('/');
  const part = slash < 0 ? rest : rest.slice(0, slash);
  const tail = slash < 0 ? undefined : rest.slice(slash + 1);
  if (!hasWildcard(part)) {
    const p = path.join(dir, part);
    if (tail === undefined) return includePlain(p, read);
    return includeWildcard(p, tail, optional, read);
  }
  let entries: fs.Dirent[];
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch (e) {
    if (optional) return undefined;
    return `Include/IncludeOptional: Could not open directory ${dir}: ${describeFsError(e)}`;
  }
  const re = compileWildcard(part, true);
  const matches: string[] = [];
  for (const e of entries) {
    // APR_FNM_PERIOD: a leading dot is matched only by a leading dot in the pattern.
    if (e.name.startsWith('.') && !part.startsWith('.')) continue;
    if (!re.test(e.name)) continue;
    if (tail !== undefined && !isDirectoryEntry(dir, e)) continue;
    matches.push(e.name);
  }
  if (matches.length === 0) {
    if (optional) return undefined;
    return `Include/IncludeOptional: No matches for the wildcard '${part}' in '${dir}', failing`;
  }
  matches.sort(byBytes);
  for (const m of matches) {
    const p = path.join(dir, m);
    const err = tail === undefined ? includePlain(p, read) : includeWildcard(p, tail, optional, read);
    if (err !== undefined) return err;
  }
  return undefined;
}

function isDirectoryEntry(dir: string, e: fs.Dirent): boolean {
  if (e.isDirectory()) return true;
  if (!e.isSymbolicLink()) return false;
  try { return fs.statSync(path.join(dir, e.name)).isDirectory(); } catch { return false; }
}

function include(optional: boolean) {
  return (cmd: Cmd, spec: string): string | undefined => {
    const full = cmd.serverRootRelative(spec);
    const read: ReadFile = (f) => {
      if (includeDepth >= MAX_INCLUDE_DEPTH) {
        return `Exceeded maximum include depth of ${MAX_INCLUDE_DEPTH}, There appears to be a recursion.`;
      }
      let text: string;
      try {
        const read = cmd.ctx.options.readConfigFile;
        text = read ? read(f) : fs.readFileSync(f, 'latin1');
      } catch (e) {
        if (optional && (e as { code?: string }).code === 'ENOENT') return undefined;
        return `Could not open configuration file ${f}: ${describeFsError(e)}`;
      }
      cmd.ctx.includes.push({ file: f, depth: includeDepth + 1, line: cmd.line });
      includeDepth++;
      const deferred = cmd.ctx.deferredErrors.length;
      try {
        cmd.emit(cmd.expand(parseConfig(text, f)));
        for (const d of cmd.ctx.deferredErrors.slice(deferred)) d.error = d.error.wrapIn(cmd.file, cmd.line);
      } catch (e) {
        if (e instanceof ConfigError) throw e.wrapIn(cmd.file, cmd.line);
        throw e;
      } finally {
        includeDepth--;
      }
      return undefined;
    };
    if (!hasWildcard(full)) return includePlain(full, read);
    // The part before the first wildcard component is taken as it is.
    const parts = full.split('/');
    let i = 1;
    while (i < parts.length - 1 && !hasWildcard(parts[i]!)) i++;
    const dir = parts.slice(0, i).join('/') || '/';
    return includeWildcard(dir, parts.slice(i).join('/'), optional, read);
  };
}

const R = EXEC_ON_READ | RSRC_CONF | ACCESS_CONF | OR_ALL;

export const readDirectives: DirectiveSpec<CoreServerConfig, CoreDirConfig>[] = [
  directive({ name: 'Include', args: 'TAKE1', where: R, help: 'Name(s) of the config file(s) to be included; fails if the wildcard does not match at least one file', handler: include(false) }),
  directive({ name: 'IncludeOptional', args: 'TAKE1', where: R, help: 'Name or pattern of the config file(s) to be included; ignored if the file does not exist or the pattern does not match any files', handler: include(true) }),
  directive({ name: 'Define', args: 'TAKE12', where: R, help: 'Define a variable, optionally to a value.  Same as passing -D to the command line.', handler: define }),
  directive({ name: 'UnDefine', args: 'TAKE1', where: R, help: 'Undefine the existence of a variable. Undo a Define.', handler: undefine }),
  directive({ name: 'ServerRoot', args: 'TAKE1', where: RSRC_CONF | EXEC_ON_READ, help: 'Common directory of server-related files (logs, confs, etc.)', handler: serverRoot }),
  directive({ name: '<IfModule', args: 'RAW_ARGS', where: R, help: 'Container for directives based on existence of specified modules', handler: ifModule, section: true }),
  directive({ name: '<IfDefine', args: 'RAW_ARGS', where: R, help: 'Container for directives based on existence of command line defines', handler: ifDefine, section: true }),
  directive({ name: '<IfFile', args: 'RAW_ARGS', where: R, help: 'Container for directives based on existence of files on disk', handler: ifFile, section: true }),
  directive({ name: '<IfDirective', args: 'RAW_ARGS', where: R, help: 'Container for directives based on existence of named directive', handler: ifDirective, section: true }),
  directive({ name: '<IfSection', args: 'RAW_ARGS', where: R, help: 'Container for directives based on existence of named section', handler: ifSection, section: true }),
];
