// ap_expr, plume's one expression engine (httpd's server/util_expr_*.c and include/ap_expr.h):
// parse once at configuration time (parseExpr / parseExprCmd), evaluate per request
// (evalBool / evalString). Other modules add variables, functions and operators through
// providers of group 'expr' (src/expr/README.md).

import type { Request, ConnRec } from '../server/request/request.js';
import type { ConfigContext } from '../server/config/context.js';
import { APLOG_ERR, APLOG_TRACE4 } from '../server/log/levels.js';
import { Parser } from './parser.js';
import { coreProvider } from './builtins.js';
import { compileAsyncCond, compileCond, compileWord, constantWord, isAsync, type AsyncCondFn, type WordFn } from './compile.js';
import {
  EXPR_FLAG_DONT_VARY, EXPR_FLAG_SSL_EXPR_COMPAT, EXPR_FLAG_STRING_RESULT,
  type CondNode, type EvalState, type ExprMatch, type ExprProvider, type MaybePromise, type WordNode,
} from './types.js';

export * from './types.js';
export { compilePcre, pcreQuantifierTooBig, type CompiledRegex } from './regex.js';
export { fnmatch, FNM_PATHNAME, FNM_CASE_BLIND } from './fnmatch.js';
export { escapeUri, unescapeKeep2f, addVary } from './builtins.js';

declare module '../server/module.js' {
  interface ProviderGroups {
    /** ap_expr variables, functions and operators a module adds (mod_ssl: SSL_*, PeerExtList). */
    expr: ExprProvider & {
      /** Whether a connection is TLS, for the core's HTTPS variable. */
      readonly connIsSsl?: (c: ConnRec) => boolean;
    };
  }
}

/** Where and how an expression was configured. */
export interface ExprParseOptions {
  /** EXPR_FLAG_* bits. */
  readonly flags?: number;
  readonly file?: string;
  readonly line?: number;
  /** The short name of the module evaluating it ('core', 'headers'): its LogLevel applies. */
  readonly module?: string;
  /** The configuration being read: the 'expr' providers of its loaded modules join the core's. */
  readonly ctx?: ConfigContext;
  /** Providers consulted before the core's and the modules' (httpd's lookup function given to
   *  ap_expr_parse: mod_include's v(), reqenv() and env() over the SSI variables). */
  readonly first?: readonly ExprProvider[];
}

interface ExprInfo {
  readonly source: string;
  readonly file: string;
  readonly line: number;
  readonly module: string;
  readonly flags: number;
}

/** A parsed condition. */
export interface BoolExpr extends ExprInfo {
  readonly kind: 'bool';
  readonly ast: CondNode;
  /** Whether evaluation can wait (on a -U, -A or -F subrequest). */
  readonly async: boolean;
  readonly run: AsyncCondFn;
}

/** A parsed string expression. */
export interface StringExpr extends ExprInfo {
  readonly kind: 'string';
  readonly ast: WordNode;
  /** The value when it involves no variable, function or back-reference. */
  readonly constant: string | undefined;
  readonly run: WordFn;
}

export type CompiledExpr = BoolExpr | StringExpr;

export type ParseResult<E> = { readonly ok: true; readonly expr: E } | { readonly ok: false; readonly error: string };

/** An evaluation that failed ("Recursion limit reached", "Cannot open file x"); httpd's -1. */
export interface ExprFailure {
  readonly error: string;
}

// ---- providers -----------------------------------------------------------------------------------

let plainCore: ExprProvider | undefined;

function providersFor(ctx: ConfigContext | undefined, first: readonly ExprProvider[] = []): ExprProvider[] {
  const extra: ExprProvider[] = [];
  const ssl: ((c: ConnRec) => boolean)[] = [];
  const group = ctx?.providers.get('expr') as ReadonlyMap<string, ExprProvider & { connIsSsl?: (c: ConnRec) => boolean }> | undefined;
  if (group !== undefined) {
    for (const p of group.values()) {
      extra.push(p);
      if (p.connIsSsl !== undefined) ssl.push(p.connIsSsl);
    }
  }
  const core = ssl.length === 0 ? (plainCore ??= coreProvider([])) : coreProvider(ssl);
  return first.length === 0 ? [core, ...extra] : [...first, core, ...extra];
}

// ---- parsing -------------------------------------------------------------------------------------

/** Parses a condition (or, with EXPR_FLAG_STRING_RESULT, see parseStringExpr) once, at
 *  configuration time. The error is httpd's parser message, without any prefix. */
export function parseExpr(text: string, opts: ExprParseOptions = {}): ParseResult<BoolExpr> {
  const flags = (opts.flags ?? 0) & ~EXPR_FLAG_STRING_RESULT;
  const res = new Parser(text, false, flags, providersFor(opts.ctx, opts.first)).parseCond();
  if (!res.ok) return res;
  const sslCompat = (flags & EXPR_FLAG_SSL_EXPR_COMPAT) !== 0;
  const async = isAsync(res.node);
  return {
    ok: true,
    expr: {
      kind: 'bool', source: text, file: opts.file ?? '', line: opts.line ?? 0, module: opts.module ?? 'core', flags,
      ast: res.node, async, run: async ? compileAsyncCond(res.node, sslCompat) : compileCond(res.node, sslCompat),
    },
  };
}

/** Parses a string expression (AP_EXPR_FLAG_STRING_RESULT): text with %{VAR}, %{func:arg}
 *  and $0-$9. */
export function parseStringExpr(text: string, opts: ExprParseOptions = {}): ParseResult<StringExpr> {
  const flags = (opts.flags ?? 0) | EXPR_FLAG_STRING_RESULT;
  const res = new Parser(text, true, flags, providersFor(opts.ctx, opts.first)).parseString();
  if (!res.ok) return res;
  return {
    ok: true,
    expr: {
      kind: 'string', source: text, file: opts.file ?? '', line: opts.line ?? 0, module: opts.module ?? 'core', flags,
      ast: res.node, constant: constantWord(res.node), run: compileWord(res.node),
    },
  };
}

/** What the *Cmd parsers read from a directive's CmdParms. */
export interface ExprCmd {
  readonly file: string;
  readonly line: number;
  readonly ctx: ConfigContext;
}

/** parseExpr for a directive handler: file, line and providers from the directive. */
export function parseExprCmd(cmd: ExprCmd, text: string, flags = 0, module = 'core'): ParseResult<BoolExpr> {
  return parseExpr(text, { flags, file: cmd.file, line: cmd.line, module, ctx: cmd.ctx });
}

/** parseStringExpr for a directive handler. */
export function parseStringExprCmd(cmd: ExprCmd, text: string, flags = 0, module = 'core'): ParseResult<StringExpr> {
  return parseStringExpr(text, { flags, file: cmd.file, line: cmd.line, module, ctx: cmd.ctx });
}

// ---- evaluation ----------------------------------------------------------------------------------

function newState(e: ExprInfo, r: Request, re: ExprMatch | undefined): EvalState {
  return {
    r, re: re ?? { source: undefined, match: null }, vary: undefined,
    dontVary: (e.flags & EXPR_FLAG_DONT_VARY) !== 0, err: undefined, file: e.file, line: e.line,
  };
}

function finishBool(e: BoolExpr, s: EvalState, v: boolean): boolean | ExprFailure {
  const r = s.r;
  if (s.err !== undefined) {
    r.log(e.module, APLOG_ERR, `Evaluation of expression from ${e.file}:${e.line} failed: ${s.err}`);
    return { error: s.err };
  }
  if (r.wantsLog(e.module, APLOG_TRACE4)) r.log(e.module, APLOG_TRACE4, `Evaluation of expression from ${e.file}:${e.line} gave: ${v ? 1 : 0}`);
  if (s.vary !== undefined) r.headersOut.merge('Vary', s.vary);
  return v;
}

/**
 * Evaluates a condition for a request (ap_expr_exec_re): true, false, or a failure (logged
 * here at error level, as httpd logs it). Request headers it read are merged into the
 * response's Vary unless EXPR_FLAG_DONT_VARY. `re` receives (and supplies) $0-$9. Synchronous
 * unless the expression is `async`.
 */
export function evalBool(e: BoolExpr, r: Request, re?: ExprMatch): MaybePromise<boolean | ExprFailure> {
  const s = newState(e, r, re);
  const v = e.run(s);
  if (v instanceof Promise) return v.then((x) => finishBool(e, s, x));
  return finishBool(e, s, v);
}

/** Evaluates a string expression (ap_expr_str_exec_re); a failure is logged and returned. */
export function evalString(e: StringExpr, r: Request, re?: ExprMatch): string | ExprFailure {
  if (e.constant !== undefined) return e.constant;
  const s = newState(e, r, re);
  const v = e.run(s);
  if (s.err !== undefined) {
    r.log(e.module, APLOG_ERR, `Evaluation of expression from ${e.file}:${e.line} failed: ${s.err}`);
    return { error: s.err };
  }
  if (r.wantsLog(e.module, APLOG_TRACE4)) r.log(e.module, APLOG_TRACE4, `Evaluation of string expression from ${e.file}:${e.line} gave: ${v}`);
  return v;
}

/** Whether an evaluation result is a failure. */
export function isFailure<T>(v: T | ExprFailure): v is ExprFailure {
  return typeof v === 'object' && v !== null && 'error' in v;
}

// ---- variables by name (mod_rewrite's %{VAR}, mod_include) -------------------------------------------

/** The getter of an ap_expr variable (case-insensitive name), resolved once; undefined when no
 *  such variable exists. Reading it adds nothing to Vary. */
export function resolveVariable(name: string, ctx?: ConfigContext): ((r: Request) => string) | undefined {
  const lower = name.toLowerCase();
  for (const p of providersFor(ctx)) {
    const vars = p.variables;
    if (vars === undefined) continue;
    for (const key of Object.keys(vars)) {
      if (key.toLowerCase() !== lower) continue;
      const f = vars[key]!;
      return (r) => f({ r, re: { source: undefined, match: null }, vary: undefined, dontVary: true, err: undefined, file: '', line: 0 });
    }
  }
  return undefined;
}

/** An ap_expr variable's value for a request, or undefined when no such variable exists
 *  (per-request convenience; resolve once with resolveVariable on hot paths). */
export function lookupVariable(r: Request, name: string): string | undefined {
  return resolveVariable(name, r.rt.ctx)?.(r);
}

// ---- what an expression uses ---------------------------------------------------------------------

function wordUses(n: WordNode, name: string): boolean {
  switch (n.k) {
    case 'var': return n.name.toUpperCase() === name;
    case 'concat': return wordUses(n.a, name) || wordUses(n.b, name);
    case 'strfunc': return wordUses(n.arg, name);
    default: return false;
  }
}

function condUses(n: CondNode, name: string): boolean {
  switch (n.k) {
    case 'not': return condUses(n.e, name);
    case 'and': case 'or': return condUses(n.a, name) || condUses(n.b, name);
    case 'comp': case 'binary': return wordUses(n.a, name) || wordUses(n.b, name);
    case 'regex': case 'unary': return wordUses(n.a, name);
    case 'in': return wordUses(n.a, name) || (n.list.k === 'list' ? n.list.items.some((w) => wordUses(w, name)) : wordUses(n.list.arg, name));
    default: return false;
  }
}

/** Whether the expression reads variable `name` (mod_authz_core: REMOTE_USER makes a false
 *  `Require expr` "denied, no user" so that authentication runs). */
export function referencesVariable(e: CompiledExpr, name: string): boolean {
  const upper = name.toUpperCase();
  return e.kind === 'bool' ? condUses(e.ast, upper) : wordUses(e.ast, upper);
}
