// mod_authz_dbd (modules/aaa/mod_authz_dbd.c): authorization from an SQL database through
// mod_dbd. `Require dbd-group g1 g2` grants when AuthzDBDQuery (one row per group of the user)
// returns one of the groups; `Require dbd-login` / `dbd-logout` run AuthzDBDQuery as an update
// for the user (a login or logout flag) and grant, then redirect: to the Referer with
// AuthzDBDLoginToReferer On, else to the URL AuthzDBDRedirectQuery returns.

import {
  ACCESS_CONF, MODULE_API_VERSION, defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import { NOT_IN_HTACCESS, type CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { DbdError, type DbdApi } from '../database/dbd-api.js';
import {
  AUTHZ_DENIED, AUTHZ_DENIED_NO_USER, AUTHZ_GENERAL_ERROR, AUTHZ_GRANTED, AUTHZ_PROVIDER_VERSION,
  type AuthzProvider, type AuthzStatus,
} from './mod_authz_core.js';
import { parseRequireExpr } from './require-expr.js';
import type { StringExpr } from './auth-string-expr.js';

export interface AuthzDbdDirConfig {
  /** AuthzDBDQuery's statement label. */
  readonly query: string | undefined;
  /** AuthzDBDRedirectQuery's statement label. */
  readonly redirQuery: string | undefined;
  /** AuthzDBDLoginToReferer; undefined = unset (off). */
  readonly redirect: boolean | undefined;
}

type Mutable = { -readonly [K in keyof AuthzDbdDirConfig]: AuthzDbdDirConfig[K] };

function createDirConfig(): AuthzDbdDirConfig {
  return { query: undefined, redirQuery: undefined, redirect: undefined };
}

function mergeDirConfig(base: Readonly<AuthzDbdDirConfig>, add: Readonly<AuthzDbdDirConfig>): AuthzDbdDirConfig {
  return { query: add.query ?? base.query, redirQuery: add.redirQuery ?? base.redirQuery, redirect: add.redirect ?? base.redirect };
}

type Cmd = CmdParms<unknown, AuthzDbdDirConfig>;

let labelNum = 0;

function prepareQuery(field: 'query' | 'redirQuery') {
  return (cmd: Cmd, query: string): string | undefined => {
    const err = cmd.checkContext(NOT_IN_HTACCESS);
    if (err !== undefined) return err;
    const dbd = cmd.ctx.provider('dbd', 'dbd');
    if (dbd === undefined) return 'You must load mod_dbd to enable AuthzDBD functions';
    const label = `authz_dbd_${++labelNum}`;
    dbd.prepare(cmd.server, query, label);
    (cmd.dir as Mutable)[field] = label;
    return undefined;
  };
}

function setLoginToReferer(cmd: Cmd, on: boolean): undefined {
  (cmd.dir as Mutable).redirect = on;
  return undefined;
}

function dbdApi(r: Request): DbdApi | undefined {
  return r.rt.ctx.provider('dbd', 'dbd');
}

function errText(e: unknown): string {
  return e instanceof DbdError ? e.message : '???';
}

/** authz_dbd_login: runs the login/logout update, then sets up the redirect; true = OK. */
async function login(r: Request, action: 'login' | 'logout'): Promise<boolean> {
  const cfg = self.dir(r) ?? createDirConfig();
  const user = r.user ?? '';
  if (cfg.query === undefined) {
    r.log('authz_dbd', APLOG_ERR, `AH01642: No query configured for ${action}!`);
    return false;
  }
  const dbd = (await dbdApi(r)?.acquire(r)) ?? null;
  if (dbd === null) {
    r.log('authz_dbd', APLOG_ERR, `AH02902: No db handle available for ${action}! Check your database access`);
    return false;
  }
  if (!dbd.prepared.has(cfg.query)) {
    r.log('authz_dbd', APLOG_ERR, `AH01643: Error retrieving Query for ${action}!`);
    return false;
  }
  try {
    const n = await dbd.pquery(cfg.query, [user]);
    if (n !== 1) r.log('authz_dbd', APLOG_WARNING, `AH01644: authz_dbd: ${action} of user ${user} updated ${n} rows`);
  } catch (e) {
    r.log('authz_dbd', APLOG_ERR, `AH01645: authz_dbd: query for ${action} failed; user ${user} [${errText(e)}]`);
    return false;
  }
  let newuri: string | undefined;
  if (cfg.redirect === true) newuri = r.headersIn.get('referer');
  if (newuri === undefined && cfg.redirQuery !== undefined) {
    if (!dbd.prepared.has(cfg.redirQuery)) {
      r.log('authz_dbd', APLOG_ERR, 'AH01646: authz_dbd: no redirect query!');
    } else {
      try {
        const res = await dbd.pselect(cfg.redirQuery, [user]);
        const first = res.rows[0];
        if (first !== undefined) newuri = first[0] ?? '';
      } catch (e) {
        r.log('authz_dbd', APLOG_ERR, `AH01648: authz_dbd/redirect for ${action} of ${user} [${errText(e)}]`);
      }
    }
  }
  if (newuri !== undefined) {
    r.status = 302;
    r.errHeadersOut.set('Location', newuri);
  }
  return true;
}

/** authz_dbd_group_query: the user's groups, or null after logging why. */
async function groupsOf(r: Request): Promise<string[] | null> {
  const cfg = self.dir(r) ?? createDirConfig();
  const user = r.user ?? '';
  if (cfg.query === undefined) {
    r.log('authz_dbd', APLOG_ERR, 'AH01649: No query configured for dbd-group!');
    return null;
  }
  const dbd = (await dbdApi(r)?.acquire(r)) ?? null;
  if (dbd === null) {
    r.log('authz_dbd', APLOG_ERR, 'AH02903: No db handle available for dbd-query! Check your database access');
    return null;
  }
  if (!dbd.prepared.has(cfg.query)) {
    r.log('authz_dbd', APLOG_ERR, 'AH01650: Error retrieving query for dbd-group!');
    return null;
  }
  try {
    const res = await dbd.pselect(cfg.query, [user]);
    return res.rows.map((row) => row[0] ?? '');
  } catch (e) {
    r.log('authz_dbd', APLOG_ERR, `AH01652: authz_dbd, in groups query for ${user} [${errText(e)}]`);
    return null;
  }
}

const groupProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  async check(r, _args, expr): Promise<AuthzStatus> {
    if (r.user === undefined) return AUTHZ_DENIED_NO_USER;
    const groups = await groupsOf(r);
    if (groups === null) return AUTHZ_GENERAL_ERROR;
    // ap_getword_white: words separated by white space, no quoting.
    for (const w of expr(r).split(/[ \t\n\r\f\v]+/)) {
      if (w !== '' && groups.includes(w)) return AUTHZ_GRANTED;
    }
    return AUTHZ_DENIED;
  },
};

function loginProvider(action: 'login' | 'logout'): AuthzProvider<undefined> {
  return {
    async check(r): Promise<AuthzStatus> {
      if (r.user === undefined) return AUTHZ_DENIED_NO_USER;
      return (await login(r, action)) ? AUTHZ_GRANTED : AUTHZ_DENIED;
    },
  };
}

const providers: ProviderDecl[] = [
  { group: 'authz', name: 'dbd-group', version: AUTHZ_PROVIDER_VERSION, provider: groupProvider as AuthzProvider },
  { group: 'authz', name: 'dbd-login', version: AUTHZ_PROVIDER_VERSION, provider: loginProvider('login') as AuthzProvider },
  { group: 'authz', name: 'dbd-logout', version: AUTHZ_PROVIDER_VERSION, provider: loginProvider('logout') as AuthzProvider },
];

const self = defineModule<unknown, AuthzDbdDirConfig>({
  name: 'authz_dbd_module',
  source: 'mod_authz_dbd.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: 'AuthzDBDLoginToReferer', args: 'FLAG', where: ACCESS_CONF, help: 'Whether to redirect to referer on successful login', handler: setLoginToReferer }),
    directive({ name: 'AuthzDBDQuery', args: 'TAKE1', where: ACCESS_CONF, help: 'SQL query for DBD Authz or login', handler: prepareQuery('query') }),
    directive({ name: 'AuthzDBDRedirectQuery', args: 'TAKE1', where: ACCESS_CONF, help: 'SQL query to get per-user redirect URL after login', handler: prepareQuery('redirQuery') }),
  ],
  configHooks: {
    preConfig() { labelNum = 0; },
  },
  providers,
});

export default self;
