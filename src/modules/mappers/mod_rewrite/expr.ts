// `RewriteCond expr "..."`: the adapter to the ap_expr engine (src/expr): parsed once at
// configuration time, with AP_EXPR_FLAG_DONT_VARY for [NV]; evaluated per request, its last
// regex match giving %N (httpd's ap_expr_exec_re).

import type { CmdParms } from '../../../server/config/cmd.js';
import type { Request } from '../../../server/request/request.js';
import { EXPR_FLAG_DONT_VARY, evalBool, isFailure, parseExprCmd, type BoolExpr, type ExprMatch } from '../../../expr/index.js';
import { CONDFLAG_NOVARY } from './parse.js';

export interface CondExprResult {
  readonly ok: boolean;
  readonly captures: readonly (string | undefined)[] | undefined;
  readonly error: string | undefined;
}

/** Parses the expression; the compiled form or the parser's error text. */
export function compileCondExpr(cmd: CmdParms<unknown, unknown>, text: string, condFlags: number): BoolExpr | string {
  const res = parseExprCmd(cmd, text, (condFlags & CONDFLAG_NOVARY) ? EXPR_FLAG_DONT_VARY : 0, 'rewrite');
  return res.ok ? res.expr : res.error;
}

function result(v: boolean | { error: string }, re: ExprMatch): CondExprResult {
  if (isFailure(v)) return { ok: false, captures: undefined, error: v.error };
  return { ok: v, captures: re.match !== null ? Array.from(re.match) : undefined, error: undefined };
}

/** Evaluates a compiled condition expression (waits only for -U/-A/-F subrequests). */
export function evalCondExpr(r: Request, expr: unknown): CondExprResult | Promise<CondExprResult> {
  const re: ExprMatch = { source: undefined, match: null };
  const v = evalBool(expr as BoolExpr, r, re);
  return v instanceof Promise ? v.then((x) => result(x, re)) : result(v, re);
}
