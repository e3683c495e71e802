// ap_expr's types: the flags (include/ap_expr.h), the syntax tree (a discriminated union,
// httpd's ap_expr_t node ops), the evaluation state closures receive, and the provider
// tables through which the core and other modules (mod_ssl's SSL_* variables, for one)
// supply variables, functions and operators.

import type { Request } from '../server/request/request.js';

/** AP_EXPR_FLAG_SSL_EXPR_COMPAT: comparisons as mod_ssl's old SSLRequire did them. */
export const EXPR_FLAG_SSL_EXPR_COMPAT = 1;
/** AP_EXPR_FLAG_DONT_VARY: request headers read are not added to Vary. */
export const EXPR_FLAG_DONT_VARY = 2;
/** AP_EXPR_FLAG_RESTRICTED: no functions or operators that read files. */
export const EXPR_FLAG_RESTRICTED = 4;
/** AP_EXPR_FLAG_STRING_RESULT: a string expression, not a condition. */
export const EXPR_FLAG_STRING_RESULT = 8;

// ---- evaluation ----------------------------------------------------------------------------

/** The regex captures $0-$9 read: the subject and the match of the last regex with groups. */
export interface ExprMatch {
  source: string | undefined;
  match: RegExpExecArray | null;
}

/** What one evaluation carries (httpd's ap_expr_eval_ctx_t). */
export interface EvalState {
  readonly r: Request;
  /** $0-$9: the caller's (mod_setenvif, mod_rewrite) or the evaluation's own. */
  readonly re: ExprMatch;
  /** Request headers read so far, for Vary ("A, B"); undefined when none (or DONT_VARY). */
  vary: string | undefined;
  readonly dontVary: boolean;
  /** An evaluation error ("Recursion limit reached", "Cannot open file x"). */
  err: string | undefined;
  /** Where the expression was configured (for log messages). */
  readonly file: string;
  readonly line: number;
}

export type MaybePromise<T> = T | Promise<T>;

/** A variable: %{NAME}. */
export type ExprVariable = (s: EvalState) => string;
/** A string function: %{name:arg} or name(arg). */
export type ExprStringFn = (s: EvalState, arg: string) => string;
/** A list function (name(arg) after -in); null is "no list". */
export type ExprListFn = (s: EvalState, arg: string) => readonly string[] | null;
export type ExprUnaryFn = (s: EvalState, arg: string) => MaybePromise<boolean>;
export type ExprBinaryFn = (s: EvalState, left: string, right: string) => boolean;

/** An operator or function declaration. `restricted`: refused under EXPR_FLAG_RESTRICTED.
 *  `prepare` turns the right (or only) argument, when it is a constant string, into the
 *  evaluator at parse time, or returns an error text (-R and -ipmatch parse their subnet). */
export interface ExprFuncDecl<F> {
  readonly fn?: F;
  readonly prepare?: (constArg: string | undefined, name: string) => F | string;
  readonly restricted?: boolean;
  /** The operator answers through a promise (-U, -A, -F run subrequests). */
  readonly async?: boolean;
}

/** What a provider contributes. Names: variables and functions match case-insensitively,
 *  unary operators case-sensitively (as httpd's core_expr_lookup). */
export interface ExprProvider {
  readonly variables?: Readonly<Record<string, ExprVariable>>;
  readonly functions?: Readonly<Record<string, ExprFuncDecl<ExprStringFn>>>;
  readonly listFunctions?: Readonly<Record<string, ExprFuncDecl<ExprListFn>>>;
  readonly unaryOps?: Readonly<Record<string, ExprFuncDecl<ExprUnaryFn>>>;
  readonly binaryOps?: Readonly<Record<string, ExprFuncDecl<ExprBinaryFn>>>;
}

// ---- the syntax tree -------------------------------------------------------------------------

export type WordNode =
  | { readonly k: 'digit'; readonly v: string }
  | { readonly k: 'string'; readonly v: string }
  | { readonly k: 'concat'; readonly a: WordNode; readonly b: WordNode }
  | { readonly k: 'var'; readonly name: string; readonly fn: ExprVariable }
  | { readonly k: 'strfunc'; readonly name: string; readonly fn: ExprStringFn; readonly arg: WordNode }
  | { readonly k: 'backref'; readonly n: number };

export type ListNode =
  | { readonly k: 'list'; readonly items: readonly WordNode[] }
  | { readonly k: 'listfunc'; readonly name: string; readonly fn: ExprListFn; readonly arg: WordNode };

export type CompOp = 'EQ' | 'NE' | 'LT' | 'LE' | 'GT' | 'GE' | 'STR_EQ' | 'STR_NE' | 'STR_LT' | 'STR_LE' | 'STR_GT' | 'STR_GE';

export type CondNode =
  | { readonly k: 'true' }
  | { readonly k: 'false' }
  | { readonly k: 'not'; readonly e: CondNode }
  | { readonly k: 'and'; readonly a: CondNode; readonly b: CondNode }
  | { readonly k: 'or'; readonly a: CondNode; readonly b: CondNode }
  | { readonly k: 'comp'; readonly op: CompOp; readonly a: WordNode; readonly b: WordNode }
  | { readonly k: 'regex'; readonly negate: boolean; readonly a: WordNode; readonly re: RegExp; readonly groups: boolean }
  | { readonly k: 'in'; readonly a: WordNode; readonly list: ListNode }
  | { readonly k: 'unary'; readonly name: string; readonly fn: ExprUnaryFn; readonly async: boolean; readonly a: WordNode }
  | { readonly k: 'binary'; readonly name: string; readonly fn: ExprBinaryFn; readonly a: WordNode; readonly b: WordNode };
