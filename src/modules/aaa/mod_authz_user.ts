// mod_authz_user (modules/aaa/mod_authz_user.c): the authz providers that decide by the
// authenticated user.
//   Require valid-user        any authenticated user
//   Require user <name>...    one of the names (case-sensitive, as strcmp)
// Without a user yet both answer AUTHZ_DENIED_NO_USER, so mod_authz_core runs authentication
// first. The `user` line is a string expression (`%{VAR}` expands), parsed once.

import { MODULE_API_VERSION, defineModule, type ProviderDecl } from '../../server/module.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { APLOG_DEBUG } from '../../server/log/levels.js';
import { parseRequireExpr } from './require-expr.js';
import type { StringExpr } from './auth-string-expr.js';
import {
  AUTHZ_DENIED, AUTHZ_DENIED_NO_USER, AUTHZ_GRANTED, AUTHZ_PROVIDER_VERSION, type AuthzProvider,
} from './mod_authz_core.js';

const userProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  check(r, _args, expr) {
    const user = r.user;
    if (user === undefined) return AUTHZ_DENIED_NO_USER;
    const c = new ArgCursor(expr(r));
    for (let w = c.word(); w !== ''; w = c.word()) if (w === user) return AUTHZ_GRANTED;
    if (r.wantsLog('authz_user', APLOG_DEBUG)) {
      r.log('authz_user', APLOG_DEBUG,
        `AH01663: access to ${r.uri} failed, reason: user '${user}' does not meet 'require'ments for user to be allowed access`,
        undefined, 'mod_authz_user.c(77)');
    }
    return AUTHZ_DENIED;
  },
};

const validUserProvider: AuthzProvider<undefined> = {
  check(r) {
    return r.user === undefined ? AUTHZ_DENIED_NO_USER : AUTHZ_GRANTED;
  },
};

const providers: ProviderDecl[] = [
  { group: 'authz', name: 'user', version: AUTHZ_PROVIDER_VERSION, provider: userProvider as AuthzProvider },
  { group: 'authz', name: 'valid-user', version: AUTHZ_PROVIDER_VERSION, provider: validUserProvider as AuthzProvider },
];

const self = defineModule<undefined, undefined>({
  name: 'authz_user_module',
  source: 'mod_authz_user.c',
  apiVersion: MODULE_API_VERSION,
  providers,
});

export default self;
