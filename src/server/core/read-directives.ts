// The core directives httpd executes while reading (EXEC_ON_READ): Include, IncludeOptional,
// Define, UnDefine, ServerRoot and the conditional sections <IfModule>, <IfDefine>, <IfFile>,
// <IfDirective>, <IfSection>.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { CmdParms } from '../config/cmd.js';
import { ConfigError } from '../config/errors.js';
import { readConfigFile, describeFsError } from '../config/build.js';
import { compileWildcard, isWildcard } from './sections.js';
import { directive, EXEC_ON_READ, OR_ALL, RSRC_CONF, ACCESS_CONF, type DirectiveSpec } from '../module.js';
import type { CoreDirConfig, CoreServerConfig } from './config.js';

type Cmd = CmdParms<CoreServerConfig, CoreDirConfig>;
const MAX_INCLUDE_DEPTH = 128;
let includeDepth = 0;

/** Splits a conditional section's argument: leading '!' negates. */
function condArg(cmd: Cmd, raw: string): { not: boolean; arg: string } | string {
  let arg = raw.trim();
  if (arg.startsWith('"') && arg.endsWith('"') && arg.length >= 2) arg = arg.slice(1, -1);
  let not = false;
  if (arg.startsWith('!')) { not = true; arg = arg.slice(1); }
  if (arg === '') return `${cmd.name}> directive requires additional arguments`;
  return { not, arg };
}

/** Includes the section's body when `test` holds (after applying '!'). */
function conditional(test: (cmd: Cmd, arg: string) => boolean) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const a = condArg(cmd, raw);
    if (typeof a === 'string') return a;
    if (test(cmd, a.arg) !== a.not) cmd.emit(cmd.expand(cmd.node.source.children ?? []));
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

/** Files an Include names: a file, a directory (its files, sorted, recursively), or a wildcard. */
function includeTargets(cmd: Cmd, spec: string, optional: boolean): string[] | string {
  const full = cmd.serverRootRelative(spec);
  if (!isWildcard(full)) {
    let st: fs.Stats;
    try { st = fs.statSync(full); } catch (e) {
      if (optional) return [];
      return `Could not open configuration file ${full}: ${describeFsError(e)}`;
    }
    if (st.isDirectory()) return listDirectory(full);
    return [full];
  }
  // Wildcards may appear in the last component only... and in directories (httpd 2.4 allows both).
  const parts = full.split('/');
  let bases = ['/'];
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i]!;
    if (part === '') continue;
    const last = i === parts.length - 1;
    const next: string[] = [];
    for (const b of bases) {
      if (!isWildcard(part)) {
        next.push(path.join(b, part));
        continue;
      }
      let names: string[];
      try { names = fs.readdirSync(b).sort(); } catch (e) {
        if (optional) continue;
        return `Could not open config directory ${b}: ${describeFsError(e)}`;
      }
      const re = compileWildcard(part, true);
      for (const n of names) {
        if (n.startsWith('.') && !part.startsWith('.')) continue;
        if (!re.test(n)) continue;
        const p = path.join(b, n);
        if (!last) { try { if (!fs.statSync(p).isDirectory()) continue; } catch { continue; } }
        next.push(p);
      }
    }
    bases = next;
  }
  const files: string[] = [];
  for (const b of bases) {
    let st: fs.Stats;
    try { st = fs.statSync(b); } catch { continue; }
    if (st.isDirectory()) {
      const inner = listDirectory(b);
      if (typeof inner === 'string') return inner;
      files.push(...inner);
    } else files.push(b);
  }
  if (files.length === 0 && !optional) {
    const dir = path.dirname(full);
    return `No matches for the wildcard '${path.basename(full)}' in '${dir}', failing`;
  }
  return files;
}

function listDirectory(dir: string): string[] | string {
  let names: string[];
  try { names = fs.readdirSync(dir).sort(); } catch (e) {
    return `Could not open config directory ${dir}: ${describeFsError(e)}`;
  }
  const out: string[] = [];
  for (const n of names) {
    if (n.startsWith('.')) continue;
    const p = path.join(dir, n);
    let st: fs.Stats;
    try { st = fs.statSync(p); } catch { continue; }
    if (st.isDirectory()) {
      const inner = listDirectory(p);
      if (typeof inner === 'string') return inner;
      out.push(...inner);
    } else out.push(p);
  }
  return out;
}

function include(optional: boolean) {
  return (cmd: Cmd, spec: string): string | undefined => {
    if (includeDepth >= MAX_INCLUDE_DEPTH) {
      return `Exceeded the maximum include directory nesting level of ${MAX_INCLUDE_DEPTH}. You have probably a recursion somewhere.`;
    }
    const files = includeTargets(cmd, spec, optional);
    if (typeof files === 'string') return files;
    for (const f of files) {
      includeDepth++;
      try {
        cmd.ctx.includes.push({ file: f, depth: includeDepth });
        let tree;
        try {
          tree = readConfigFile(f);
        } catch (e) {
          if (e instanceof ConfigError) throw e.wrapIn(cmd.file, cmd.line);
          return `Could not open configuration file ${f}: ${describeFsError(e)}`;
        }
        try {
          cmd.emit(cmd.expand(tree));
        } catch (e) {
          if (e instanceof ConfigError) throw e.wrapIn(cmd.file, cmd.line);
          throw e;
        }
      } finally {
        includeDepth--;
      }
    }
    return undefined;
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
