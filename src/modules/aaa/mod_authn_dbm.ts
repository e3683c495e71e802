// mod_authn_dbm (modules/aaa/mod_authn_dbm.c): the "dbm" authn provider, users in a DBM
// database (AuthDBMUserFile, of AuthDBMType) as htdbm writes it: key the user name, value
// the password hash, optionally followed by ":" and more (groups, a comment), which is cut.
// Digest hashes (get_realm_hash) are stored under the key "user:realm".
// plume reads SDBM databases ("default" is SDBM here; see src/lib/dbm).

import {
  MODULE_API_VERSION, OR_AUTHCFG, defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { errnoOf } from '../../server/log/error-log.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { authnCacheStore } from '../../server/authn-cache.js';
import { openDbmReadOnly, sdbmStatus } from '../../lib/dbm/index.js';
import {
  AUTH_GENERAL_ERROR, AUTH_USER_FOUND, passwordStatus, AUTH_USER_NOT_FOUND,
  type AuthnProvider, type AuthnStatus, type RealmHashResult,
} from './mod_authn_core.js';

export interface AuthnDbmDirConfig {
  /** AuthDBMUserFile, ServerRoot-relative resolved. */
  pwfile: string | undefined;
  /** AuthDBMType ("default" when not set). */
  dbmtype: string;
}

function createDirConfig(): AuthnDbmDirConfig {
  return { pwfile: undefined, dbmtype: 'default' };
}

type Cmd = CmdParms<unknown, AuthnDbmDirConfig>;

function setPwFile(cmd: Cmd, file: string): undefined {
  cmd.dir.pwfile = cmd.serverRootRelative(file);
  return undefined;
}

function setDbmType(cmd: Cmd, type: string): undefined {
  cmd.dir.dbmtype = type;
  return undefined;
}

/** fetch_dbm_value: the stored value (latin1), undefined when absent, or null after logging
 *  an open failure. */
function fetchDbmValue(r: Request, conf: AuthnDbmDirConfig, key: string): string | undefined | null {
  let db;
  try {
    if (conf.pwfile === undefined) throw Object.assign(new Error('no file'), { code: 'EINVAL' });
    db = openDbmReadOnly(conf.dbmtype, conf.pwfile);
  } catch (e) {
    r.log('authn_dbm', APLOG_ERR, `AH10285: could not open dbm (type ${conf.dbmtype}) file: ${conf.pwfile ?? '(null)'}`, sdbmStatus(e) ?? errnoOf(e) ?? { code: 0, text: String(e) });
    return null;
  }
  const k = Buffer.from(key, 'latin1');
  if (k.length === 0) return undefined;
  try {
    return db.fetch(k)?.toString('latin1');
  } catch {
    return undefined;
  }
}

function checkDbmPassword(r: Request, user: string, password: Uint8Array): AuthnStatus | Promise<AuthnStatus> {
  const conf = self.dir(r) ?? createDirConfig();
  const value = fetchDbmValue(r, conf, user);
  if (value === null) return AUTH_GENERAL_ERROR;
  if (value === undefined) return AUTH_USER_NOT_FOUND;
  // The password is up to the first colon.
  const colon = value.indexOf(':');
  const hash = colon < 0 ? value : value.slice(0, colon);
  const stored = authnCacheStore(r, 'dbm', user, undefined, hash);
  if (stored !== undefined) return stored.then(() => passwordStatus(password, hash));
  return passwordStatus(password, hash);
}

function getDbmRealmHash(r: Request, user: string, realm: string): RealmHashResult | Promise<RealmHashResult> {
  const conf = self.dir(r) ?? createDirConfig();
  const value = fetchDbmValue(r, conf, `${user}:${realm}`);
  if (value === null) return { status: AUTH_GENERAL_ERROR };
  if (value === undefined) return { status: AUTH_USER_NOT_FOUND };
  const colon = value.indexOf(':');
  const hash = colon < 0 ? value : value.slice(0, colon);
  const stored = authnCacheStore(r, 'dbm', user, realm, hash);
  const found: RealmHashResult = { status: AUTH_USER_FOUND, hash };
  return stored === undefined ? found : stored.then(() => found);
}

const dbmProvider: AuthnProvider = { checkPassword: checkDbmPassword, getRealmHash: getDbmRealmHash };

const providers: ProviderDecl[] = [
  { group: 'authn', name: 'dbm', version: '0', provider: dbmProvider },
];

const self = defineModule<unknown, AuthnDbmDirConfig>({
  name: 'authn_dbm_module',
  source: 'mod_authn_dbm.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  directives: [
    directive({ name: 'AuthDBMUserFile', args: 'TAKE1', where: OR_AUTHCFG, help: 'dbm database file containing user IDs and passwords', handler: setPwFile }),
    directive({ name: 'AuthDBMType', args: 'TAKE1', where: OR_AUTHCFG, help: 'what type of DBM file the user file is', handler: setDbmType }),
  ],
  providers,
});

export default self;
