// String expressions (ap_expr with AP_EXPR_FLAG_STRING_RESULT) for AuthType, AuthName,
// AuthBasicFake and the string-valued Require lines (host, forward-dns, user, group,
// dbm-group): parsed once by the expression engine (src/expr) when the configuration is read;
// a literal compiles to a constant. An evaluation failure (already logged) gives "".

import type { Request } from '../../server/request/request.js';
import { evalString, isFailure, parseStringExpr, type ExprCmd } from '../../expr/index.js';

export type StringExpr = (r: Request) => string;
export type CompileResult = { readonly ok: true; readonly expr: StringExpr; readonly literal: string | undefined } | { readonly ok: false; readonly error: string };

/** Compiles a string expression for the directive being read (its file, line and modules). */
export function compileStringExpr(src: string, cmd?: ExprCmd, module = 'core'): CompileResult {
  const res = parseStringExpr(src, cmd === undefined ? { module } : { file: cmd.file, line: cmd.line, ctx: cmd.ctx, module });
  if (!res.ok) return res;
  const e = res.expr;
  if (e.constant !== undefined) {
    const v = e.constant;
    return { ok: true, expr: () => v, literal: v };
  }
  return {
    ok: true,
    literal: undefined,
    expr: (r) => {
      const v = evalString(e, r);
      return isFailure(v) ? '' : v;
    },
  };
}

/** ap_escape_quotes: a backslash before every '"' not already escaped. */
export function escapeQuotes(s: string): string {
  if (!s.includes('"')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      out += c + s[i + 1]!;
      i++;
    } else if (c === '"') {
      out += '\\"';
    } else {
      out += c;
    }
  }
  return out;
}
