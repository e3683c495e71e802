// The Require lines httpd parses as string expressions (ap_expr_parse_cmd with
// AP_EXPR_FLAG_STRING_RESULT): host, forward-dns, user, group, dbm-group. Parsed once when the
// configuration is read and evaluated per request; a literal line costs a constant.

import { compileStringExpr, type StringExpr } from './auth-string-expr.js';
import { authzError, authzOk, type AuthzParseResult } from './mod_authz_core.js';
import type { ExprCmd } from '../../expr/index.js';

export function parseRequireExpr(args: string, cmd?: ExprCmd): AuthzParseResult<StringExpr> {
  const c = compileStringExpr(args, cmd, 'authz_core');
  return c.ok ? authzOk(c.expr) : authzError(`Cannot parse expression in require line: ${c.error}`);
}
