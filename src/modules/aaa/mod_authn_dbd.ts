// mod_authn_dbd (modules/aaa/mod_authn_dbd.c): the "dbd" authn provider, users looked up in an
// SQL database through mod_dbd. AuthDBDUserPWQuery (Basic) selects the password hash for a user,
// AuthDBDUserRealmQuery (Digest) the MD5(user:realm:password) for a user and realm; the first
// row's first column is the hash, and its other columns become AUTHENTICATE_<COLUMN>
// variables. Hashes are checked as mod_authn_file's are (bcrypt, apr1, SHA-1, crypt, plain).

import {
  ACCESS_CONF, MODULE_API_VERSION, defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import { NOT_IN_HTACCESS, type CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { authnCacheStore } from '../../server/authn-cache.js';
import { DbdError, type DbdApi, type DbdResults } from '../database/dbd-api.js';
import {
  AUTH_GENERAL_ERROR, AUTH_USER_FOUND, passwordStatus, AUTH_USER_NOT_FOUND,
  type AuthnProvider, type AuthnStatus, type RealmHashResult,
} from './mod_authn_core.js';

export interface AuthnDbdDirConfig {
  /** The label of AuthDBDUserPWQuery's statement. */
  readonly user: string | undefined;
  /** The label of AuthDBDUserRealmQuery's statement. */
  readonly realm: string | undefined;
}

function createDirConfig(): AuthnDbdDirConfig {
  return { user: undefined, realm: undefined };
}

function mergeDirConfig(base: Readonly<AuthnDbdDirConfig>, add: Readonly<AuthnDbdDirConfig>): AuthnDbdDirConfig {
  return { user: add.user ?? base.user, realm: add.realm ?? base.realm };
}

type Cmd = CmdParms<unknown, AuthnDbdDirConfig>;

/** Statement labels are numbered across the whole configuration, as httpd's static counter. */
let labelNum = 0;

function prepareQuery(field: 'user' | 'realm') {
  return (cmd: Cmd, query: string): string | undefined => {
    const err = cmd.checkContext(NOT_IN_HTACCESS);
    if (err !== undefined) return err;
    const dbd = cmd.ctx.provider('dbd', 'dbd');
    if (dbd === undefined) return 'You must load mod_dbd to enable AuthDBD functions';
    const label = `authn_dbd_${++labelNum}`;
    dbd.prepare(cmd.server, query, label);
    (cmd.dir as { -readonly [K in keyof AuthnDbdDirConfig]: AuthnDbdDirConfig[K] })[field] = label;
    return undefined;
  };
}

const AUTHN_PREFIX = 'AUTHENTICATE_';

/** The extra columns of the first row as AUTHENTICATE_<NAME> (letters and digits upper-cased,
 *  anything else '_'). */
function setColumns(r: Request, res: DbdResults, row: readonly string[]): void {
  for (let i = 1; i < res.names.length; i++) {
    const name = res.names[i]!.replace(/[^A-Za-z0-9]/g, '_').toUpperCase();
    r.subprocessEnv.set(AUTHN_PREFIX + name, row[i] ?? '');
  }
}

function dbdApi(r: Request): DbdApi | undefined {
  return r.rt.ctx.provider('dbd', 'dbd');
}

type Lookup = { status: typeof AUTH_GENERAL_ERROR | typeof AUTH_USER_NOT_FOUND } | { status: typeof AUTH_USER_FOUND; value: string };

/** Acquires the request's connection and runs the statement; logs failures with the codes of
 *  the caller (Basic or Digest). */
async function lookup(r: Request, label: string | undefined, args: readonly string[], who: string, codes: readonly string[], directiveName: string): Promise<Lookup> {
  // DIFFERENCE: httpd calls a null optional function (and the child crashes) when no AuthDBD
  // directive was read; here the missing query is reported below.
  const api = dbdApi(r);
  const dbd = api === undefined ? null : await api.acquire(r);
  if (dbd === null) {
    r.log('authn_dbd', APLOG_ERR, `${codes[0]!}: Failed to acquire database connection to look up user '${who}'`);
    return { status: AUTH_GENERAL_ERROR };
  }
  if (label === undefined) {
    r.log('authn_dbd', APLOG_ERR, `${codes[1]!}: No ${directiveName} has been specified`);
    return { status: AUTH_GENERAL_ERROR };
  }
  if (!dbd.prepared.has(label)) {
    r.log('authn_dbd', APLOG_ERR, `${codes[2]!}: A prepared statement could not be found for ${directiveName} with the key '${label}'`);
    return { status: AUTH_GENERAL_ERROR };
  }
  let res: DbdResults;
  try {
    res = await dbd.pselect(label, args);
  } catch (e) {
    const text = e instanceof DbdError ? e.message : dbd.error();
    r.log('authn_dbd', APLOG_ERR, `${codes[3]!}: Query execution error looking up '${who}' in database [${text}]`);
    return { status: AUTH_GENERAL_ERROR };
  }
  const row = res.rows[0];
  if (row === undefined || row[0] === undefined) return { status: AUTH_USER_NOT_FOUND };
  setColumns(r, res, row);
  return { status: AUTH_USER_FOUND, value: row[0] };
}

async function checkPassword(r: Request, user: string, password: Uint8Array): Promise<AuthnStatus> {
  const conf = self.dir(r) ?? createDirConfig();
  const found = await lookup(r, conf.user, [user], user, ['AH01653', 'AH01654', 'AH01655', 'AH01656'], 'AuthDBDUserPWQuery');
  if (found.status !== AUTH_USER_FOUND) return found.status;
  // AUTHN_CACHE_STORE: mod_authn_socache keeps the hash when it caches "dbd".
  await authnCacheStore(r, 'dbd', user, undefined, found.value);
  return passwordStatus(password, found.value);
}

async function getRealmHash(r: Request, user: string, realm: string): Promise<RealmHashResult> {
  const conf = self.dir(r) ?? createDirConfig();
  const found = await lookup(r, conf.realm, [user, realm], `${user}:${realm}`, ['AH01658', 'AH01659', 'AH01660', 'AH01661'], 'AuthDBDUserRealmQuery');
  if (found.status !== AUTH_USER_FOUND) return { status: found.status };
  await authnCacheStore(r, 'dbd', user, realm, found.value);
  return { status: AUTH_USER_FOUND, hash: found.value };
}

const dbdProvider: AuthnProvider = { checkPassword, getRealmHash };

const providers: ProviderDecl[] = [
  { group: 'authn', name: 'dbd', version: '0', provider: dbdProvider },
];

const self = defineModule<unknown, AuthnDbdDirConfig>({
  name: 'authn_dbd_module',
  source: 'mod_authn_dbd.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: 'AuthDBDUserPWQuery', args: 'TAKE1', where: ACCESS_CONF, help: 'Query used to fetch password for user', handler: prepareQuery('user') }),
    directive({ name: 'AuthDBDUserRealmQuery', args: 'TAKE1', where: ACCESS_CONF, help: 'Query used to fetch password for user+realm', handler: prepareQuery('realm') }),
  ],
  configHooks: {
    preConfig() { labelNum = 0; },
  },
  providers,
});

export default self;
