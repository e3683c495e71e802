// The core's section directives, walked in place: <Directory>, <DirectoryMatch>, <Location>,
// <LocationMatch>, <Files>, <FilesMatch>, <VirtualHost>, <Limit>, <LimitExcept>.

import * as path from 'node:path';
import { CmdParms, NOT_IN_DIR_CONTEXT, NOT_IN_FILES, NOT_IN_LOCATION, GLOBAL_ONLY, NOT_IN_LIMIT, NOT_IN_HTACCESS, type WalkScope } from '../config/cmd.js';
import { splitWords } from '../config/lexer.js';
import { directive, ACCESS_CONF, OR_ALL, RSRC_CONF, OR_LIMIT, OR_AUTHCFG, type DirectiveSpec } from '../module.js';
import { SERVER_OVERRIDE, serverConfigOf, dirConfigOf } from '../config/build.js';
import type { CoreDirConfig, CoreServerConfig } from './config.js';
import { compileWildcard, countDirs, isWildcard, newSectionId, IF_CONDITION_ELSE, IF_CONDITION_IF, type Section, type SectionKind } from './sections.js';
import { ArgCursor } from '../config/lexer.js';
import { parseExprCmd, type BoolExpr } from '../../expr/index.js';
import type { ServerAddr } from '../server-rec.js';
import { resolveHostSync } from './resolve.js';

type Cmd = CmdParms<CoreServerConfig, CoreDirConfig>;

interface ParsedSectionArg { pattern: string; regex: RegExp | null }

function compileRegex(cmd: Cmd, src: string): RegExp | string {
  try {
    return new RegExp(src);
  } catch {
    return 'Regex could not be compiled';
  }
}

/** Reads a section's argument: a path, or "~ regex"; *Match sections always take a regex. */
function sectionArg(cmd: Cmd, raw: string, isMatch: boolean): ParsedSectionArg | string {
  const words = splitWords(raw);
  if (words.length === 0 || words[0] === '') return `${cmd.name}> directive requires additional arguments`;
  if (!isMatch && words[0] === '~') {
    if (words.length < 2) return `${cmd.name}> directive requires additional arguments`;
    const re = compileRegex(cmd, words[1]!);
    if (typeof re === 'string') return re;
    return { pattern: words[1]!, regex: re };
  }
  if (words.length > 1) return `Multiple ${cmd.name}> arguments not (yet) supported.`;
  if (isMatch) {
    const re = compileRegex(cmd, words[0]!);
    if (typeof re === 'string') return re;
    return { pattern: words[0]!, regex: re };
  }
  return { pattern: words[0]!, regex: null };
}

function newSection(cmd: Cmd, kind: SectionKind, pattern: string, regex: RegExp | null, wildcard: RegExp | null, depth: number, vector: unknown[]): Section {
  return {
    id: newSectionId(), kind, path: pattern, regex, wildcard, depth, vector,
    file: cmd.file, line: cmd.line, directive: cmd.name,
  };
}

function childScope(cmd: Cmd, sectionPath: string, vector: unknown[], override: number): WalkScope {
  return {
    ...cmd.scope, vector, path: sectionPath, override, parents: [...cmd.scope.parents, cmd.name],
  };
}

/** Creates the section's core config first, so it exists even when no core directive appears. */
function freshVector(cmd: Cmd, sectionPath: string): unknown[] {
  const v: unknown[] = [];
  const core = cmd.ctx.moduleBySymbol('core_module');
  if (core) dirConfigOf(v, core, sectionPath);
  return v;
}

function directorySection(isMatch: boolean) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const err = cmd.checkContext(NOT_IN_DIR_CONTEXT);
    if (err) return err;
    const a = sectionArg(cmd, raw, isMatch);
    if (typeof a === 'string') return a;
    let p = a.pattern;
    let wildcard: RegExp | null = null;
    if (!a.regex) {
      if (p !== '/') {
        p = path.resolve(cmd.ctx.serverRoot, p);
        if (!p.endsWith('/')) p += '/';
      }
      if (isWildcard(p)) wildcard = compileWildcard(p.endsWith('/') && p !== '/' ? p.slice(0, -1) : p, true);
    }
    const vector = freshVector(cmd, p);
    cmd.walk(cmd.node.children ?? [], childScope(cmd, p, vector, OR_ALL | ACCESS_CONF));
    // httpd's d_components: "/" is 0 (always merged first); anything else, regexes included,
    // counts its slashes, which orders the sections (core_reorder_directories).
    const sec = newSection(cmd, 'directory', p, a.regex, wildcard, p === '/' ? 0 : countDirs(p), vector);
    cmd.srv.secDir.push(sec);
    return undefined;
  };
}

function locationSection(isMatch: boolean) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const err = cmd.checkContext(NOT_IN_DIR_CONTEXT);
    if (err) return err;
    const a = sectionArg(cmd, raw, isMatch);
    if (typeof a === 'string') return a;
    const wildcard = !a.regex && isWildcard(a.pattern) ? compileWildcard(a.pattern, true) : null;
    const vector = freshVector(cmd, a.pattern);
    cmd.walk(cmd.node.children ?? [], childScope(cmd, a.pattern, vector, OR_ALL | ACCESS_CONF));
    cmd.srv.secUrl.push(newSection(cmd, 'location', a.pattern, a.regex, wildcard, 0, vector));
    return undefined;
  };
}

function filesSection(isMatch: boolean) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const loc = cmd.scope.parents.find((p) => p === '<Location' || p === '<LocationMatch');
    if (loc) return `${cmd.name}> cannot occur within ${loc}> section`;
    const err = cmd.checkContext(NOT_IN_LIMIT);
    if (err) return err;
    const a = sectionArg(cmd, raw, isMatch);
    if (typeof a === 'string') return a;
    const wildcard = !a.regex && isWildcard(a.pattern) ? compileWildcard(a.pattern, false) : null;
    const vector = freshVector(cmd, a.pattern);
    // Inside a .htaccess file <Files> may only hold what the file's AllowOverride allows.
    const override = cmd.scope.htaccess ? cmd.scope.override : OR_ALL | ACCESS_CONF;
    cmd.walk(cmd.node.children ?? [], childScope(cmd, a.pattern, vector, override));
    const sec = newSection(cmd, 'files', a.pattern, a.regex, wildcard, 0, vector);
    cmd.dir.secFile = [...cmd.dir.secFile, sec];
    return undefined;
  };
}

/** <If>, <ElseIf>, <Else> (httpd's ifsection): the condition is parsed now; the section is
 *  added to the enclosing context's <If> list, an <Else>/<ElseIf> only after an <If>/<ElseIf>
 *  of the same scope. */
function ifSection(ifElse: number) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const err = cmd.checkContext(NOT_IN_LIMIT);
    if (err) return err;
    let condition: BoolExpr | undefined;
    const args = new ArgCursor(raw);
    if (ifElse === IF_CONDITION_ELSE) {
      if (raw !== '') return '<Else> does not take an argument';
    } else {
      if (raw === '') return `${cmd.name}> directive requires additional arguments`;
      const res = parseExprCmd(cmd, args.word());
      if (!res.ok) return `Cannot parse condition clause: ${res.error}`;
      condition = res.expr;
    }
    const vector = freshVector(cmd, '*If');
    const override = cmd.scope.htaccess ? cmd.scope.override : OR_ALL | ACCESS_CONF;
    cmd.walk(cmd.node.children ?? [], childScope(cmd, '*If', vector, override));
    const secs = cmd.dir.secIf;
    if (ifElse & IF_CONDITION_ELSE) {
      const last = secs[secs.length - 1];
      if (last === undefined || !((last.ifElse ?? 0) & IF_CONDITION_IF)) {
        return '<Else> or <ElseIf> section without previous <If> or <ElseIf> section in same scope';
      }
    }
    const sec: Section = { ...newSection(cmd, 'if', raw, null, null, 0, vector), condition, ifElse };
    cmd.dir.secIf = [...secs, sec];
    if (!args.atEnd()) return `Multiple ${cmd.name}> arguments not supported.`;
    return undefined;
  };
}

/** Parses one <VirtualHost> address: ip, ip:port, *:port, [v6]:port, _default_:port, name:port. */
export function parseVhostAddr(text: string, defaultPort: number): ServerAddr | string {
  let host = text;
  let port = defaultPort;
  const v6 = /^\[([^\]]+)\](?::(.*))?$/.exec(text);
  if (v6) {
    host = v6[1]!;
    if (v6[2] !== undefined) {
      if (v6[2] === '*') port = 0;
      else if (!/^\d+$/.test(v6[2])) return `The address or port is invalid`;
      else port = Number(v6[2]);
    }
  } else {
    const c = text.lastIndexOf(':');
    if (c >= 0) {
      host = text.slice(0, c);
      const ps = text.slice(c + 1);
      if (ps === '*') port = 0;
      else if (!/^\d+$/.test(ps) || Number(ps) > 65535) return `The address or port is invalid`;
      else port = Number(ps);
    }
  }
  const virthost = host.toLowerCase();
  if (host === '*' || virthost === '_default_') return { host: host === '*' ? '*' : '_default_', port, text, virthost };
  const ip = resolveHostSync(host);
  if (ip === undefined) return `Cannot resolve host name ${host} --- ignoring!`;
  return { host: ip, port, text, virthost };
}

function virtualHost(cmd: Cmd, raw: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  const words = splitWords(raw);
  if (words.length === 0) return `<VirtualHost> directive requires additional arguments`;
  const v = cmd.ctx.newVirtualHost(cmd.file, cmd.line);
  for (const w of words) {
    const a = parseVhostAddr(w, 0);
    if (typeof a === 'string') {
      if (a.startsWith('Cannot resolve')) {
        cmd.ctx.log('core', 3, `AH00547: Could not resolve host name ${w.replace(/:.*$/, '')} -- ignoring!`);
        continue;
      }
      return a;
    }
    v.addrs.push(a);
  }
  for (const m of cmd.ctx.loaded) dirConfigOf(v.lookupDefaults, m, undefined);
  const core = cmd.ctx.moduleBySymbol('core_module');
  if (core) serverConfigOf(cmd.ctx, v, core);
  cmd.walk(cmd.node.children ?? [], {
    server: v, vector: v.lookupDefaults, path: undefined, override: SERVER_OVERRIDE, overrideOpts: 0,
    overrideList: null, parents: [...cmd.scope.parents, '<VirtualHost'], limited: undefined, htaccess: false,
  });
  return undefined;
}

const KNOWN_METHODS = new Set([
  'GET', 'PUT', 'POST', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY',
  'MOVE', 'LOCK', 'UNLOCK', 'VERSION-CONTROL', 'CHECKOUT', 'UNCHECKOUT', 'CHECKIN', 'UPDATE', 'LABEL', 'REPORT',
  'MKWORKSPACE', 'MKACTIVITY', 'BASELINE-CONTROL', 'MERGE', 'INVALID', 'HEAD',
]);

function limitSection(except: boolean) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const methods = splitWords(raw);
    if (methods.length === 0) return `<${except ? 'LimitExcept' : 'Limit'}> directive requires additional arguments`;
    const set = new Set<string>();
    for (const m of methods) {
      if (m === 'TRACE' && !except) return `TRACE cannot be controlled by <Limit>, see TraceEnable`;
      set.add(m);
      if (m === 'GET') set.add('HEAD');
    }
    if (cmd.scope.limited) return `${cmd.name}> cannot occur within <Limit> or <LimitExcept> section`;
    cmd.walk(cmd.node.children ?? [], {
      ...cmd.scope, parents: [...cmd.scope.parents, cmd.name], limited: { methods: set, except },
    });
    return undefined;
  };
}

/** Whether a <Limit>/<LimitExcept> scope applies to a method. */
export function limitApplies(limited: { readonly methods: ReadonlySet<string>; readonly except: boolean } | undefined, method: string): boolean {
  if (!limited) return true;
  return limited.methods.has(method) !== limited.except;
}

export { KNOWN_METHODS };

const S = RSRC_CONF;
export const sectionDirectives: DirectiveSpec<CoreServerConfig, CoreDirConfig>[] = [
  directive({ name: '<Directory', args: 'RAW_ARGS', where: S, help: 'Container for directives affecting resources located in the specified directories', handler: directorySection(false), section: true }),
  directive({ name: '<DirectoryMatch', args: 'RAW_ARGS', where: S, help: 'Container for directives affecting resources located in the specified directories', handler: directorySection(true), section: true }),
  directive({ name: '<Location', args: 'RAW_ARGS', where: S, help: 'Container for directives affecting resources accessed through the specified URL paths', handler: locationSection(false), section: true }),
  directive({ name: '<LocationMatch', args: 'RAW_ARGS', where: S, help: 'Container for directives affecting resources accessed through the specified URL paths', handler: locationSection(true), section: true }),
  directive({ name: '<Files', args: 'RAW_ARGS', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'Container for directives affecting files matching specified patterns', handler: filesSection(false), section: true }),
  directive({ name: '<FilesMatch', args: 'RAW_ARGS', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'Container for directives affecting files matching specified patterns', handler: filesSection(true), section: true }),
  directive({ name: '<If', args: 'RAW_ARGS', where: OR_ALL, help: 'Container for directives to be conditionally applied', handler: ifSection(IF_CONDITION_IF), section: true }),
  directive({ name: '<ElseIf', args: 'RAW_ARGS', where: OR_ALL, help: 'Container for directives to be conditionally applied', handler: ifSection(IF_CONDITION_IF | IF_CONDITION_ELSE), section: true }),
  directive({ name: '<Else', args: 'RAW_ARGS', where: OR_ALL, help: 'Container for directives to be conditionally applied', handler: ifSection(IF_CONDITION_ELSE), section: true }),
  directive({ name: '<VirtualHost', args: 'RAW_ARGS', where: S, help: 'Container to map directives to a particular virtual host, takes one or more host addresses', handler: virtualHost, section: true }),
  directive({ name: '<Limit', args: 'RAW_ARGS', where: OR_LIMIT | OR_AUTHCFG, help: 'Container for authentication directives when accessed using specified HTTP methods', handler: limitSection(false), section: true }),
  directive({ name: '<LimitExcept', args: 'RAW_ARGS', where: OR_LIMIT | OR_AUTHCFG, help: 'Container for authentication directives to be conditionally applied when accessed using methods other than those specified', handler: limitSection(true), section: true }),
];

export { NOT_IN_FILES, NOT_IN_HTACCESS };
