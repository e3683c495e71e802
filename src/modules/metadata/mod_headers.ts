// mod_headers (modules/metadata/mod_headers.c): Header and RequestHeader change the request
// and response headers.
//
//  - Three per-directory lists, merged by concatenation (server first, then sections in merge
//    order): RequestHeader entries, `Header [onsuccess]` entries (applied to headers_out) and
//    `Header always` entries (applied to err_headers_out).
//  - RequestHeader runs in fixups (HOOK_LAST). Header runs in the FIXUP_HEADERS_OUT output
//    filter (content-set, added in insert_filter when either Header list has entries), which
//    on its first brigade applies the always list, then the onsuccess list, and removes
//    itself; on the error path the FIXUP_HEADERS_ERR filter (insert_error_filter) applies the
//    always list only. Entries marked `early` run in post_read_request instead (HOOK_FIRST,
//    with the server's configuration), and never later.
//  - Actions: set, setifempty, add, append (apr_table_merge: ", " after the first value, even
//    an empty one), merge (append unless the value is already one of the comma-separated
//    tokens, quotes respected), unset, echo (request headers whose name matches a regex, added
//    to headers_out whatever the list), edit / edit* (regex replacement with $n and format
//    specifiers in the replacement; edit* re-matches the rest of the value, so ^ anchors at
//    each step, as httpd's recursion does), note (the header's value into a request note).
//    set/setifempty/edit of Content-Type in a Header list also change the response type.
//  - Values are format strings: text with \n \r \t \\ escapes and %% %t %D %l %i %b %{VAR}e
//    %{VAR}s, compiled when the configuration is read.
//  - Conditions: env=VAR / env=!VAR (the request environment, case-insensitive), early,
//    expr=EXPR (an ap_expr condition: false skips the entry, an evaluation error is logged and
//    the entry applied); values may be expr=STRING (a string expression; an evaluation error
//    gives ""). Both are parsed once by src/expr.

import * as os from 'node:os';
import {
  DECLINED, HOOK_FIRST, HOOK_LAST, MODULE_API_VERSION, OR_FILEINFO,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { ArgCursor } from '../../server/config/lexer.js';
import type { Request } from '../../server/request/request.js';
import type { HeaderTable } from '../../server/request/headers.js';
import { FTYPE_CONTENT_SET, type Brigade, type FilterInstance, type FilterSpec } from '../../server/filters.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_ERR, levelFor, type LogLevelConfig } from '../../server/log/levels.js';
import { nowMicros } from '../../server/log/time.js';
import { lowerAscii, tableGet, tableSet, tableUnset } from '../../server/apr-table.js';
import { compileApacheRegex, pregsub } from '../../server/util-pcre.js';
import {
  evalBool, evalString, isFailure, parseExprCmd, parseStringExprCmd, type BoolExpr, type ExprFailure, type StringExpr,
} from '../../expr/index.js';
import type { MaybePromise } from '../../server/module.js';
import { sslVarLookup } from '../../server/ssl-var.js';
import type { ConfigContext } from '../../server/config/context.js';
import { scoreboard, attachScoreboardFromEnv, attachInProcess, detachScoreboard } from '../../mpm/scoreboard.js';

// ---- format specifiers ---------------------------------------------------------------------

type TagFn = (r: Request, arg: string) => string;

/** One piece of a compiled format string: literal text, or a specifier with its {argument}. */
export type FormatPiece = { readonly text: string } | { readonly fn: TagFn; readonly arg: string };

/** The scoreboard's idle and busy percentages (ap_get_sload), for %i and %b: -1 each when
 *  no slot of the current generation is counted. httpd always keeps a scoreboard; plume's
 *  workers keep theirs once a module attaches them (mod_status does), so a configuration
 *  using %i or %b attaches at child_init, and a .htaccess one at its first use. */
let loadTagsUsed = false;
function serverLoad(ctx: ConfigContext): { idle: number; busy: number } {
  if (scoreboard === null && !attachScoreboardFromEnv(ctx)) attachInProcess(ctx);
  const sb = scoreboard;
  if (sb === null) return { idle: -1, busy: -1 };
  const t = sb.snapshot().tally(false);
  const busy = t.busy + t.graceful;
  const total = t.ready + busy;
  if (total === 0) return { idle: -1, busy: -1 };
  return { idle: Math.trunc((t.ready * 100) / total), busy: Math.trunc((busy * 100) / total) };
}

function childInit(ctx: ConfigContext): void {
  if (loadTagsUsed && !attachScoreboardFromEnv(ctx)) attachInProcess(ctx);
}

/** unwrap_header: CR and LF become spaces. */
function unwrap(s: string): string {
  return s.includes('\n') || s.includes('\r') ? s.replace(/[\r\n]/g, ' ') : s;
}

/** The request's start time in microseconds (apr_time_t r->request_time). */
function requestMicros(r: Request): number {
  return r.startMicros > 0 ? Math.floor(r.startMicros) : Math.floor(r.requestTime * 1000);
}

const FORMAT_TAGS: ReadonlyMap<string, TagFn> = new Map<string, TagFn>([
  ['D', (r) => `D=${nowMicros() - requestMicros(r)}`],
  ['t', (r) => `t=${requestMicros(r)}`],
  ['l', () => {
    const [a, b, c] = os.loadavg();
    return `l=${a!.toFixed(2)}/${b!.toFixed(2)}/${c!.toFixed(2)}`;
  }],
  ['i', (r) => `i=${serverLoad(r.rt.ctx).idle}`],
  ['b', (r) => `b=${serverLoad(r.rt.ctx).busy}`],
  ['e', (r, name) => {
    const v = tableGet(r.subprocessEnv, name);
    return v === undefined ? '(null)' : unwrap(v);
  }],
  ['s', (r, name) => {
    const v = sslVarLookup(r, name);
    return v === undefined || v === '' ? '(null)' : unwrap(v);
  }],
]);

/** parse_misc_string: literal text up to the next '%', with \\ \r \n \t escapes (any other
 *  backslash stays as written). */
function parseMisc(s: string, i: number): [string, number] {
  let out = '';
  while (i < s.length && s[i] !== '%') {
    const c = s[i]!;
    if (c !== '\\') { out += c; i++; continue; }
    const n = s[i + 1];
    if (n === '\\') { out += '\\'; i += 2; }
    else if (n === 'r') { out += '\r'; i += 2; }
    else if (n === 'n') { out += '\n'; i += 2; }
    else if (n === 't') { out += '\t'; i += 2; }
    else { out += '\\'; i++; }
  }
  return [out, i];
}

/** parse_format_string: compiles a value; returns httpd's error text for an unknown specifier. */
export function parseFormat(s: string): FormatPiece[] | string {
  const pieces: FormatPiece[] = [];
  let i = 0;
  while (i < s.length) {
    if (s[i] !== '%') {
      const [text, next] = parseMisc(s, i);
      pieces.push({ text });
      i = next;
      continue;
    }
    i++;
    if (i >= s.length || s[i] === '%') {
      pieces.push({ text: '%' });
      if (i < s.length) i++;
      continue;
    }
    let arg = '';
    if (s[i] === '{') {
      // ap_getword(..., '}'): up to the first '}' (or the end), then every '}' is skipped.
      const end = s.indexOf('}', i + 1);
      if (end < 0) { arg = s.slice(i + 1); i = s.length; }
      else {
        arg = s.slice(i + 1, end);
        i = end;
        while (s[i] === '}') i++;
      }
    }
    const tag = s[i] ?? '';
    const fn = FORMAT_TAGS.get(tag);
    if (fn === undefined) return `Unrecognized header format %${tag}`;
    if (tag === 'i' || tag === 'b') loadTagsUsed = true;
    pieces.push({ fn, arg });
    i++;
  }
  return pieces;
}

// ---- configuration ---------------------------------------------------------------------------

export type HeaderAction = 'set' | 'setifempty' | 'add' | 'append' | 'merge' | 'unset' | 'echo' | 'edit' | 'edit*' | 'note';
const ACTIONS: readonly HeaderAction[] = ['set', 'setifempty', 'add', 'append', 'merge', 'unset', 'echo', 'edit', 'edit*', 'note'];

export type HeaderCondition =
  | { readonly kind: 'none' }
  | { readonly kind: 'early' }
  | { readonly kind: 'env'; readonly name: string; readonly negate: boolean }
  | { readonly kind: 'expr'; readonly expr: BoolExpr };

/** One Header / RequestHeader directive (httpd's header_entry). */
export interface HeaderEntry {
  readonly action: HeaderAction;
  /** The header name (anything from a ':' on dropped); for echo, the name regex's text. */
  readonly header: string;
  /** The compiled value (or edit replacement, or note name). */
  readonly format: readonly FormatPiece[] | undefined;
  /** A value written as expr=STRING. */
  readonly exprOut: StringExpr | undefined;
  /** edit / edit*: the value regex; echo: the header-name regex. */
  readonly regex: RegExp | undefined;
  readonly condition: HeaderCondition;
}

export interface HeadersDirConfig {
  /** RequestHeader. */
  readonly fixupIn: HeaderEntry[];
  /** Header [onsuccess]. */
  readonly fixupOut: HeaderEntry[];
  /** Header always. */
  readonly fixupErr: HeaderEntry[];
}

function createDirConfig(): HeadersDirConfig {
  return { fixupIn: [], fixupOut: [], fixupErr: [] };
}

function mergeDirConfig(base: Readonly<HeadersDirConfig>, add: Readonly<HeadersDirConfig>): HeadersDirConfig {
  return {
    fixupIn: base.fixupIn.concat(add.fixupIn),
    fixupOut: base.fixupOut.concat(add.fixupOut),
    fixupErr: base.fixupErr.concat(add.fixupErr),
  };
}

type Which = 'in' | 'out' | 'err';
type Cmd = CmdParms<undefined, HeadersDirConfig>;

/** Whether a header name is Content-Type in any case (the length test spares the rest). */
function isContentType(name: string): boolean {
  return name.length === 12 && lowerAscii(name) === 'content-type';
}

function prefixCi(s: string, prefix: string): boolean {
  return s.length >= prefix.length && lowerAscii(s.slice(0, prefix.length)) === prefix;
}

/** header_inout_cmd: validates in httpd's order and returns its error texts. */
function headerInout(
  cmd: Cmd, which: Which, actionWord: string, hdrWord: string,
  valueIn: string | undefined, subs: string | undefined, envIn: string | undefined,
): string | undefined {
  const action = ACTIONS.find((a) => a === lowerAscii(actionWord));
  if (action === undefined) {
    return "first argument must be 'add', 'set', 'setifempty', 'append', 'merge', 'unset', 'echo', 'note', 'edit', or 'edit*'.";
  }
  if (which === 'in' && action === 'note') return "RequestHeader does not support the 'note' action";

  let value = valueIn;
  let envclause = envIn;
  let regex: RegExp | undefined;
  if (action === 'edit' || action === 'edit*') {
    if (subs === undefined) return 'Header edit requires a match and a substitution';
    regex = compileApacheRegex(value!, false);
    if (regex === undefined) return 'Header edit regex could not be compiled';
  } else {
    // No replacement here: the fourth word was the condition.
    if (envclause !== undefined) return 'Too many arguments to directive';
    envclause = subs;
  }
  if (action === 'unset') {
    if (value !== undefined) {
      if (envclause !== undefined) return 'header unset takes two arguments';
      envclause = value;
      value = undefined;
    }
  } else if (action === 'echo') {
    if (value !== undefined) {
      if (envclause !== undefined) return 'Header echo takes two arguments';
      envclause = value;
      value = undefined;
    }
    if (which === 'in') return 'Header echo only valid on Header directives';
    regex = compileApacheRegex(hdrWord, false);
    if (regex === undefined) return 'Header echo regex could not be compiled';
  } else if (value === undefined) {
    return 'Header requires three arguments';
  }

  let condition: HeaderCondition = { kind: 'none' };
  if (envclause !== undefined) {
    if (lowerAscii(envclause) === 'early') {
      condition = { kind: 'early' };
    } else if (prefixCi(envclause, 'env=')) {
      const v = envclause.slice(4);
      if (v === '' || v === '!') {
        return 'error: missing environment variable name. envclause should be in the form env=envar ';
      }
      condition = v.startsWith('!') ? { kind: 'env', name: v.slice(1), negate: true } : { kind: 'env', name: v, negate: false };
    } else if (prefixCi(envclause, 'expr=')) {
      const res = parseExprCmd(cmd, envclause.slice(5), 0, 'headers');
      if (!res.ok) return `Can't parse envclause/expression: ${res.error}`;
      condition = { kind: 'expr', expr: res.expr };
    } else {
      return `Unknown parameter: ${envclause}`;
    }
  }

  const colon = hdrWord.indexOf(':');
  const header = colon < 0 ? hdrWord : hdrWord.slice(0, colon);

  // parse_format_string: the value, or for edit the replacement; nothing for unset and echo.
  let format: FormatPiece[] | undefined;
  let exprOut: StringExpr | undefined;
  if (action !== 'unset' && action !== 'echo') {
    const s = action === 'edit' || action === 'edit*' ? subs! : value!;
    if (s.startsWith('expr=')) {
      const res = parseStringExprCmd(cmd, s.slice(5), 0, 'headers');
      if (!res.ok) return `Can't parse value expression : ${res.error}`;
      exprOut = res.expr;
    } else {
      const f = parseFormat(s);
      if (typeof f === 'string') return f;
      format = f;
    }
  }

  const entry: HeaderEntry = { action, header, format, exprOut, regex, condition };
  const list = which === 'in' ? cmd.dir.fixupIn : which === 'err' ? cmd.dir.fixupErr : cmd.dir.fixupOut;
  list.push(entry);
  return undefined;
}

/** header_cmd: `[always|onsuccess] action header [value [replacement]] [condition]`. */
function headerCmd(cmd: Cmd, raw: string, inbound: boolean): string | undefined {
  const a = new ArgCursor(raw);
  const next = (): string => (a.atEnd() ? '' : a.word());
  let which: Which = inbound ? 'in' : 'out';
  let action = next();
  if (!inbound) {
    const l = lowerAscii(action);
    if (l === 'always') { which = 'err'; action = next(); }
    else if (l === 'onsuccess') action = next();
  }
  const hdr = next();
  const value = a.atEnd() ? undefined : a.word();
  const subs = a.atEnd() ? undefined : a.word();
  const envclause = a.atEnd() ? undefined : a.word();
  if (!a.atEnd()) return `${cmd.name} has too many arguments`;
  return headerInout(cmd, which, action, hdr, value, subs, envclause);
}

// ---- request time ------------------------------------------------------------------------------

/** process_tags: the entry's value for this request. */
function processTags(e: HeaderEntry, r: Request): string {
  if (e.exprOut !== undefined) {
    const v = evalString(e.exprOut, r);
    if (!isFailure(v)) return v;
    r.log('headers', APLOG_ERR, `AH02557: Can't evaluate value expression: ${v.error}`);
    return '';
  }
  const f = e.format;
  if (f === undefined) return '';
  if (f.length === 1) {
    const p = f[0]!;
    return 'text' in p ? p.text : p.fn(r, p.arg);
  }
  let out = '';
  for (const p of f) out += 'text' in p ? p.text : p.fn(r, p.arg);
  return out;
}

/** process_regexp: replaces the first match (edit) or every match (edit*); undefined when a
 *  replacement is too long. httpd's edit* recurses on the rest of the value after each match,
 *  so anchors and look-behind see only that rest; the loop below does the same.
 *  DIFFERENCE: on an empty match httpd's edit* recurses on the same text forever (the child
 *  crashes); plume copies one character and goes on, as a global replace does. */
export function processRegexp(e: HeaderEntry, value: string, r: Request): string | undefined {
  const re = e.regex!;
  let out = '';
  let rest = value;
  for (;;) {
    const m = re.exec(rest);
    if (m === null) return out + rest;
    const subs = pregsub(processTags(e, r), m);
    if (subs === undefined) return undefined;
    const so = m.index;
    const eo = so + m[0].length;
    out += rest.slice(0, so) + subs;
    if (e.action === 'edit') return out + rest.slice(eo);
    if (eo === so) {
      if (eo >= rest.length) return out;
      out += rest[eo];
      rest = rest.slice(eo + 1);
    } else {
      rest = rest.slice(eo);
    }
  }
}

/** apr_table_mergen: ", value" after the first value of the name (or a new header). */
function tableMerge(t: HeaderTable, name: string, value: string): void {
  const count = t.getAll(name).length;
  if (count === 0) { t.add(name, value); return; }
  // mapValues visits the values last to first: the first value is the last one visited.
  let seen = 0;
  t.mapValues(name, (v) => (++seen === count ? `${v}, ${value}` : v));
}

/** apr_table_setn: the first value of the name replaced (its spelling kept), the others gone. */
function tableSetHeader(t: HeaderTable, name: string, value: string): void {
  const count = t.getAll(name).length;
  if (count === 0) { t.add(name, value); return; }
  let seen = 0;
  t.mapValues(name, () => (++seen === count ? value : undefined));
}

const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\v' || c === '\f' || c === '\r';

/** The merge action's test: is `token` one of the comma-separated tokens of `val` (quoted
 *  strings kept whole, leading white space skipped, compared exactly)? */
export function hasToken(val: string, token: string): boolean {
  let i = 0;
  while (i < val.length) {
    while (i < val.length && isSpace(val[i]!)) i++;
    const start = i;
    while (i < val.length && val[i] !== ',') {
      if (val[i++] === '"') {
        while (i < val.length) if (val[i++] === '"') break;
      }
    }
    if (i - start === token.length && val.startsWith(token, start)) return true;
    if (i < val.length) i++;
  }
  return false;
}

function conditionHolds(e: HeaderEntry, r: Request, early: boolean): MaybePromise<boolean> {
  const c = e.condition;
  if (early) return c.kind === 'early';
  switch (c.kind) {
    case 'none': return true;
    case 'early': return false;
    case 'expr': {
      const v = evalBool(c.expr, r);
      return v instanceof Promise ? v.then((x) => exprHolds(r, x)) : exprHolds(r, v);
    }
    case 'env': {
      const set = tableGet(r.subprocessEnv, c.name) !== undefined;
      return c.negate ? !set : set;
    }
  }
}

/** A failed evaluation is logged and the entry applied, as httpd does. */
function exprHolds(r: Request, v: boolean | ExprFailure): boolean {
  if (!isFailure(v)) return v;
  r.log('headers', APLOG_ERR, `AH01501: Failed to evaluate expression (${v.error}) - ignoring`);
  return true;
}

/** do_headers_fixup: applies a list to a table; false when an edit replacement failed.
 *  Synchronous unless a condition waits on a subrequest (-U, -A, -F). */
export function applyHeaderEntries(r: Request, headers: HeaderTable, list: readonly HeaderEntry[], early: boolean, start = 0): MaybePromise<boolean> {
  for (let i = start; i < list.length; i++) {
    const e = list[i]!;
    const holds = conditionHolds(e, r, early);
    if (holds instanceof Promise) {
      return holds.then((h) => (h && !applyEntry(r, headers, e) ? false : applyHeaderEntries(r, headers, list, early, i + 1)));
    }
    if (!holds) continue;
    if (!applyEntry(r, headers, e)) return false;
  }
  return true;
}

/** One entry's action on a table; false when an edit replacement failed. */
function applyEntry(r: Request, headers: HeaderTable, e: HeaderEntry): boolean {
  const name = e.header;
  switch (e.action) {
    case 'add':
      headers.add(name, processTags(e, r));
      break;
    case 'append':
      tableMerge(headers, name, processTags(e, r));
      break;
    case 'merge': {
      const cur = headers.get(name);
      const v = processTags(e, r);
      if (cur === undefined) headers.add(name, v);
      else if (!hasToken(cur, v)) tableMerge(headers, name, v);
      break;
    }
    case 'set':
      if (headers !== r.headersIn && isContentType(name)) r.contentType = processTags(e, r);
      tableSetHeader(headers, name, processTags(e, r));
      break;
    case 'setifempty':
      if (headers.get(name) === undefined) {
        if (headers !== r.headersIn && isContentType(name)) r.contentType = processTags(e, r);
        tableSetHeader(headers, name, processTags(e, r));
      }
      break;
    case 'unset':
      headers.unset(name);
      break;
    case 'echo': {
      const re = e.regex!;
      const out = r.headersOut;
      for (const [k, v] of r.headersIn.entries()) if (re.test(k)) out.add(k, v);
      break;
    }
    case 'edit':
    case 'edit*': {
      if (headers !== r.headersIn && isContentType(name) && r.contentType !== undefined) {
        const repl = processRegexp(e, r.contentType, r);
        if (repl === undefined) return false;
        r.contentType = repl;
      }
      if (headers.get(name) !== undefined) {
        const edited: [string, string][] = [];
        const key = lowerAscii(name);
        for (const [k, v] of headers.entries()) {
          if (lowerAscii(k) !== key) continue;
          const repl = processRegexp(e, v, r);
          if (repl === undefined) return false;
          edited.push([k, repl]);
        }
        headers.unset(name);
        for (const [k, v] of edited) headers.add(k, v);
      }
      break;
    }
    case 'note': {
      const noteName = processTags(e, r);
      const v = headers.get(name);
      if (v === undefined) tableUnset(r.notes, noteName);
      else tableSet(r.notes, noteName, v);
      break;
    }
  }
  return true;
}

/** ap_log_error against the request's server (no client address), as httpd's filters log. */
function serverDebug(r: Request, message: string): void {
  const s = r.server;
  const lv = s.logLevel as LogLevelConfig | undefined;
  if (lv === undefined || levelFor(lv, 'headers') < APLOG_DEBUG) return;
  const log = s.errorLog as typeof s.errorLog | undefined;
  log?.write({ module: 'headers', level: APLOG_DEBUG, message });
}

/** FIXUP_HEADERS_OUT (ap_headers_output_filter). */
function headersOutputFilter(f: FilterInstance<undefined>, bb: Brigade): ReturnType<FilterInstance['pass']> {
  const r = f.r;
  const conf = self.dir(r);
  serverDebug(r, 'AH01502: headers: ap_headers_output_filter()');
  f.remove();
  const a = applyHeaderEntries(r, r.errHeadersOut, conf.fixupErr, false);
  if (a instanceof Promise) return a.then(() => thenPass(f, bb, applyHeaderEntries(r, r.headersOut, conf.fixupOut, false)));
  return thenPass(f, bb, applyHeaderEntries(r, r.headersOut, conf.fixupOut, false));
}

function thenPass(f: FilterInstance<undefined>, bb: Brigade, done: MaybePromise<boolean>): ReturnType<FilterInstance['pass']> {
  return done instanceof Promise ? done.then(() => f.pass(bb)) : f.pass(bb);
}

/** FIXUP_HEADERS_ERR (ap_headers_error_filter): the always list only. */
function headersErrorFilter(f: FilterInstance<undefined>, bb: Brigade): ReturnType<FilterInstance['pass']> {
  const r = f.r;
  const conf = self.dir(r);
  serverDebug(r, 'AH01503: headers: ap_headers_error_filter()');
  f.remove();
  return thenPass(f, bb, applyHeaderEntries(r, r.errHeadersOut, conf.fixupErr, false));
}

export const FIXUP_HEADERS_OUT: FilterSpec<undefined> = { name: 'FIXUP_HEADERS_OUT', type: FTYPE_CONTENT_SET, filter: headersOutputFilter };
export const FIXUP_HEADERS_ERR: FilterSpec<undefined> = { name: 'FIXUP_HEADERS_ERR', type: FTYPE_CONTENT_SET, filter: headersErrorFilter };

function insertOutputFilter(r: Request): void {
  const conf = self.dir(r);
  if (conf.fixupOut.length > 0 || conf.fixupErr.length > 0) r.rt.addFilter(r, FIXUP_HEADERS_OUT);
}

function insertErrorFilter(r: Request): void {
  const conf = self.dir(r);
  if (conf.fixupErr.length > 0) r.rt.addFilter(r, FIXUP_HEADERS_ERR);
}

/** RequestHeader in fixups (ap_headers_fixup). */
function headersFixup(r: Request): MaybePromise<number> {
  const conf = self.dir(r);
  if (conf.fixupIn.length === 0) return DECLINED;
  const done = applyHeaderEntries(r, r.headersIn, conf.fixupIn, false);
  return done instanceof Promise ? done.then(() => DECLINED) : DECLINED;
}

/** Whether a configuration has `early` entries (computed once per configuration object). */
const earlyCache = new WeakMap<HeadersDirConfig, boolean>();
function hasEarly(conf: HeadersDirConfig): boolean {
  let v = earlyCache.get(conf);
  if (v === undefined) {
    const early = (e: HeaderEntry): boolean => e.condition.kind === 'early';
    v = conf.fixupIn.some(early) || conf.fixupErr.some(early) || conf.fixupOut.some(early);
    earlyCache.set(conf, v);
  }
  return v;
}

/** `early` entries in post_read_request (ap_headers_early), with the server's configuration. */
function headersEarly(r: Request): number {
  const conf = self.dir(r);
  if (conf === undefined || !hasEarly(conf)) return DECLINED;
  if ((conf.fixupIn.length > 0 && !applyHeaderEntries(r, r.headersIn, conf.fixupIn, true))
    || (conf.fixupErr.length > 0 && !applyHeaderEntries(r, r.errHeadersOut, conf.fixupErr, true))
    || (conf.fixupOut.length > 0 && !applyHeaderEntries(r, r.headersOut, conf.fixupOut, true))) {
    r.log('headers', APLOG_CRIT, 'AH01504: Regular expression replacement failed (replacement too long?)');
    return 500;
  }
  return DECLINED;
}

// ---- the module ------------------------------------------------------------------------------

const self = defineModule<undefined, HeadersDirConfig>({
  name: 'headers_module',
  source: 'mod_headers.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, HeadersDirConfig, 'RAW_ARGS'>({
      name: 'Header', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'an optional condition, an action, header and value followed by optional env clause',
      handler: (cmd: Cmd, raw: string) => headerCmd(cmd, raw, false),
    }),
    directive<undefined, HeadersDirConfig, 'RAW_ARGS'>({
      name: 'RequestHeader', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'an action, header and value followed by optional env clause',
      handler: (cmd: Cmd, raw: string) => headerCmd(cmd, raw, true),
    }),
  ],
  hooks: {
    postReadRequest: { fn: headersEarly, order: HOOK_FIRST },
    fixups: { fn: headersFixup, order: HOOK_LAST },
    insertFilter: { fn: insertOutputFilter, order: HOOK_LAST },
    insertErrorFilter: { fn: insertErrorFilter, order: HOOK_LAST },
  },
  filters: [FIXUP_HEADERS_OUT as FilterSpec, FIXUP_HEADERS_ERR as FilterSpec],
  configHooks: { childInit, cleanup() { if (loadTagsUsed) detachScoreboard(); } },
});

export default self;
