// mod_authz_dbm (modules/aaa/mod_authz_dbm.c): groups from a DBM file.
//   AuthDBMGroupFile <file>     the database (ServerRoot-relative; name.dir + name.pag for SDBM)
//   AuthzDBMType <type>         default | SDBM (the types plume reads; see src/lib/dbm)
//   Require dbm-group <g>...    the user is in one of the groups (replaces `Require group`)
//   Require dbm-file-group      the user is in the requested file's group (needs mod_authz_owner)
// The value under "user:realm" (else "user") is "g1,g2" or "password:g1,g2[:ignored]", so one
// file can hold both passwords and groups. Group names compare exactly here.

import {
  MODULE_API_VERSION, OR_AUTHCFG, defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { openDbmReadOnly } from '../../lib/dbm/index.js';
import {
  AUTHZ_DENIED, AUTHZ_DENIED_NO_USER, AUTHZ_GENERAL_ERROR, AUTHZ_GRANTED, AUTHZ_PROVIDER_VERSION,
  type AuthzProvider, type AuthzStatus,
} from './mod_authz_core.js';
import { apAuthName } from '../../server/auth-api.js';
import { authzOwnerGetFileGroup } from './mod_authz_owner.js';
import { parseRequireExpr } from './require-expr.js';
import type { StringExpr } from './auth-string-expr.js';

export interface AuthzDbmDirConfig {
  readonly groupFile: string | undefined;
  readonly dbmType: string;
}

function createDirConfig(): AuthzDbmDirConfig {
  return { groupFile: undefined, dbmType: 'default' };
}

/** get_dbm_grp: the group list of a user (undefined when absent), or the open error. */
function dbmGroups(r: Request, conf: AuthzDbmDirConfig, user: string): string | undefined | { error: unknown } {
  let db;
  try {
    db = openDbmReadOnly(conf.dbmType, conf.groupFile!);
  } catch (e) {
    return { error: e };
  }
  const fetch = (k: string): string | undefined => {
    try {
      return db.fetch(Buffer.from(k, 'latin1'))?.toString('latin1');
    } catch {
      return undefined;
    }
  };
  const val = fetch(`${user}:${apAuthName(r) ?? ''}`) ?? fetch(user);
  if (val === undefined) return undefined;
  const colon = val.indexOf(':');
  if (colon < 0) return val;
  const groups = val.slice(colon + 1);
  const colon2 = groups.indexOf(':');
  return colon2 < 0 ? groups : groups.slice(0, colon2);
}

/** ap_getword(',') repeatedly: the names of a comma list (a leading comma gives an empty one). */
function commaWords(list: string): string[] {
  const out: string[] = [];
  let rest = list;
  while (rest !== '') {
    const i = rest.indexOf(',');
    if (i < 0) { out.push(rest); break; }
    out.push(rest.slice(0, i));
    let j = i;
    while (rest.charCodeAt(j) === 44) j++;
    rest = rest.slice(j);
  }
  return out;
}

function errnoOf(r: Request, e: unknown): { code: number; text: string } | undefined {
  const code = (e as { code?: unknown }).code;
  if (code === 'APR_ENOTIMPL') return { code: 20023, text: 'This function has not been implemented on this platform' };
  return r.rt.errno(e);
}

function lookupGroups(r: Request, tags: readonly [string, string, string], openFailure: AuthzStatus): string | AuthzStatus {
  const user = r.user;
  if (user === undefined) return AUTHZ_DENIED_NO_USER;
  const conf = self.dir(r);
  if (!conf || conf.groupFile === undefined) {
    r.log('authz_dbm', APLOG_ERR, `AH${tags[0]}: No group file was specified in the configuration`);
    return AUTHZ_DENIED;
  }
  const groups = dbmGroups(r, conf, user);
  if (typeof groups === 'object') {
    r.log('authz_dbm', APLOG_ERR, `AH01799: could not open dbm (type ${conf.dbmType}) group access file: ${conf.groupFile}`, errnoOf(r, groups.error));
    return openFailure;
  }
  if (groups === undefined) {
    r.log('authz_dbm', APLOG_ERR,
      `AH${tags[1]}: Authorization of user ${user} to access ${r.uri} failed, reason: user doesn't appear in DBM group file (${conf.groupFile}).`);
    return AUTHZ_DENIED;
  }
  return groups;
}

function notInGroups(r: Request, tag: string): AuthzStatus {
  r.log('authz_dbm', APLOG_ERR,
    `AH${tag}: Authorization of user ${r.user ?? ''} to access ${r.uri} failed, reason: user is not part of the 'require'ed group(s).`);
  return AUTHZ_DENIED;
}

const dbmGroupProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  check(r, _args, expr) {
    const groups = lookupGroups(r, ['01798', '01800', '01801'], AUTHZ_GENERAL_ERROR);
    if (typeof groups === 'number') return groups;
    const have = commaWords(groups);
    // ap_getword_white: words separated by white space, no quoting.
    for (const w of expr(r).split(/[ \t\n\r\f\v]+/)) {
      if (w !== '' && have.includes(w)) return AUTHZ_GRANTED;
    }
    return notInGroups(r, '01801');
  },
};

/** Whether mod_authz_owner is loaded in the current configuration (its optional function). */
let ownerLoaded = false;

const dbmFileGroupProvider: AuthzProvider<undefined> = {
  check(r) {
    const groups = lookupGroups(r, ['01802', '01804', '01805'], AUTHZ_DENIED);
    if (typeof groups === 'number') return groups;
    // DIFFERENCE: httpd calls a NULL optional function (and crashes) without mod_authz_owner.
    const fileGroup = ownerLoaded ? authzOwnerGetFileGroup(r) : undefined;
    if (fileGroup !== undefined && commaWords(groups).includes(fileGroup)) return AUTHZ_GRANTED;
    return notInGroups(r, '01805');
  },
};

// ---- directives and module ------------------------------------------------------------------

type Cmd = CmdParms<undefined, AuthzDbmDirConfig>;

interface MutableDirConfig {
  groupFile: string | undefined;
  dbmType: string;
}

function setGroupFile(cmd: Cmd, arg: string): undefined {
  (cmd.dir as MutableDirConfig).groupFile = cmd.serverRootRelative(arg);
  return undefined;
}

function setDbmType(cmd: Cmd, arg: string): undefined {
  (cmd.dir as MutableDirConfig).dbmType = arg;
  return undefined;
}

const providers: ProviderDecl[] = [
  { group: 'authz', name: 'dbm-group', version: AUTHZ_PROVIDER_VERSION, provider: dbmGroupProvider as AuthzProvider },
  { group: 'authz', name: 'dbm-file-group', version: AUTHZ_PROVIDER_VERSION, provider: dbmFileGroupProvider as AuthzProvider },
];

const self = defineModule<undefined, AuthzDbmDirConfig>({
  name: 'authz_dbm_module',
  source: 'mod_authz_dbm.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  // No merger: the most specific section using these directives wins whole, as in httpd.
  directives: [
    directive({ name: 'AuthDBMGroupFile', args: 'TAKE1', where: OR_AUTHCFG, help: 'database file containing group names and member user IDs', handler: setGroupFile }),
    directive({ name: 'AuthzDBMType', args: 'TAKE1', where: OR_AUTHCFG, help: 'what type of DBM file the group file is', handler: setDbmType }),
  ],
  configHooks: {
    checkConfig(ctx) {
      ownerLoaded = ctx.loaded.some((m) => m.decl.name === 'authz_owner_module');
    },
  },
  providers,
});

export default self;
