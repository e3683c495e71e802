// SSLRequire (deprecated in 2.4, kept working): a boolean expression on the expression engine
// in its SSL-compatible form (EXPR_FLAG_SSL_EXPR_COMPAT: "and"/"or", "in {..}", m/../,
// %{SSL_*} variables, PeerExtList), compiled once when the directive is read.

import type { CmdParms } from '../../../server/config/cmd.js';
import { parseExprCmd, evalBool, isFailure, EXPR_FLAG_SSL_EXPR_COMPAT } from '../../../expr/index.js';
import type { Cmd, SslRequire } from './config.js';

/** The SSLRequire line compiled, or the parser's message. */
export function compileRequire(cmd: Cmd, raw: string): SslRequire | string {
  const res = parseExprCmd(cmd as unknown as CmdParms<unknown, unknown>, raw, EXPR_FLAG_SSL_EXPR_COMPAT, 'ssl');
  if (!res.ok) return res.error;
  const expr = res.expr;
  return {
    text: raw,
    file: cmd.file,
    line: cmd.line,
    evaluate: (r) => {
      const v = evalBool(expr, r);
      const settle = (x: boolean | { error: string }): boolean | string => (isFailure(x) ? x.error : x);
      return v instanceof Promise ? v.then(settle) : settle(v);
    },
  };
}
