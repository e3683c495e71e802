// mod_authz_groupfile (modules/aaa/mod_authz_groupfile.c): groups from a text file.
//   AuthGroupFile <file>        "group: user user ..." lines (ServerRoot-relative path)
//   Require group <name>...     the user is a member of one of the groups
//   Require file-group          the user is a member of the requested file's group
//                               (needs mod_authz_owner for the file's group name)
// A line is "name: members" where the name ends at the first ':' (trailing blanks dropped) and
// the members are configuration words; '#' lines and blank lines are skipped. Group names
// compare case-insensitively (httpd keeps them in an apr_table), user names exactly.
// httpd re-reads the file on every check; plume parses it once and re-reads it when stat
// shows a change, so an edit is seen on the next request.

import * as fs from 'node:fs';
import {
  MODULE_API_VERSION, OR_AUTHCFG, defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import {
  AUTHZ_DENIED, AUTHZ_DENIED_NO_USER, AUTHZ_GRANTED, AUTHZ_PROVIDER_VERSION, type AuthzProvider,
} from './mod_authz_core.js';
import { authzOwnerGetFileGroup } from './mod_authz_owner.js';
import { parseRequireExpr } from './require-expr.js';
import type { StringExpr } from './auth-string-expr.js';

export interface AuthzGroupfileDirConfig {
  readonly groupFile: string | undefined;
}

function createDirConfig(): AuthzGroupfileDirConfig {
  return { groupFile: undefined };
}

// ---- the group file -----------------------------------------------------------------------

/** user → the groups (lower-cased) whose lines list the user. */
type Membership = ReadonlyMap<string, ReadonlySet<string>>;

interface CachedFile {
  readonly stamp: string;
  readonly members: Membership;
}

const files = new Map<string, CachedFile>();

/** ASCII lower case, as apr_table keys compare. */
export function lowerAscii(s: string): string {
  return /[A-Z]/.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s;
}

/** The logical lines of a configuration-style file (ap_varbuf_cfg_getline): a trailing
 *  backslash joins the next line, and each line is trimmed of surrounding white space. */
export function cfgLines(text: string): string[] {
  const out: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const trimmedEnd = line.replace(/[ \t\r\f\v]+$/, '');
    if (trimmedEnd.endsWith('\\')) {
      pending += trimmedEnd.slice(0, -1);
      continue;
    }
    out.push((pending + line).trim());
    pending = '';
  }
  if (pending !== '') out.push(pending.trim());
  return out;
}

/** Parses a group file into user → groups. */
export function parseGroupFile(text: string): Membership {
  const members = new Map<string, Set<string>>();
  for (const line of cfgLines(text)) {
    if (line === '' || line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    const name = lowerAscii((colon < 0 ? line : line.slice(0, colon)).replace(/\s+$/, ''));
    if (colon < 0) continue;
    let rest = colon + 1;
    while (line.charCodeAt(rest) === 58) rest++;
    const c = new ArgCursor(line.slice(rest));
    while (!c.atEnd()) {
      const w = c.word();
      let set = members.get(w);
      if (!set) members.set(w, (set = new Set()));
      set.add(name);
    }
  }
  return members;
}

/** The membership table of a group file, or the error opening it (ap_pcfg_openfile). */
function groupFile(file: string): Membership | { error: unknown } {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
    if (!st.isFile() && file !== '/dev/null') return { error: Object.assign(new Error('not a regular file'), { code: 'EBADF' }) };
  } catch (e) {
    return { error: e };
  }
  const stamp = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const hit = files.get(file);
  if (hit && hit.stamp === stamp) return hit.members;
  let text: string;
  try {
    text = fs.readFileSync(file, 'latin1');
  } catch (e) {
    return { error: e };
  }
  const members = parseGroupFile(text);
  if (files.size > 256) files.clear();
  files.set(file, { stamp, members });
  return members;
}

/** groups_for_user plus the checks every provider here starts with: the user's groups, or
 *  the result to return. */
function userGroups(r: Request, tags: readonly [string, string, string]): ReadonlySet<string> | typeof AUTHZ_DENIED | typeof AUTHZ_DENIED_NO_USER {
  const user = r.user;
  if (user === undefined) return AUTHZ_DENIED_NO_USER;
  const file = self.dir(r)?.groupFile;
  if (file === undefined) {
    r.log('authz_groupfile', APLOG_ERR, `AH${tags[0]}: No group file was specified in the configuration`);
    return AUTHZ_DENIED;
  }
  const m = groupFile(file);
  if ('error' in m) {
    r.log('authz_groupfile', APLOG_ERR, `AH${tags[1]}: Could not open group file: ${file}`, r.rt.errno(m.error));
    return AUTHZ_DENIED;
  }
  const groups = (m as Membership).get(user);
  if (!groups || groups.size === 0) {
    r.log('authz_groupfile', APLOG_ERR,
      `AH${tags[2]}: Authorization of user ${user} to access ${r.uri} failed, reason: user doesn't appear in group file (${file}).`);
    return AUTHZ_DENIED;
  }
  return groups;
}

// ---- providers ------------------------------------------------------------------------------

const SRC_01667 = 'mod_authz_groupfile.c(199)';
const SRC_01671 = 'mod_authz_groupfile.c(266)';

const groupProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  check(r, _args, expr) {
    const groups = userGroups(r, ['01664', '01665', '01666']);
    if (typeof groups === 'number') return groups;
    const c = new ArgCursor(expr(r));
    for (let w = c.word(); w !== ''; w = c.word()) if (groups.has(lowerAscii(w))) return AUTHZ_GRANTED;
    if (r.wantsLog('authz_groupfile', APLOG_DEBUG)) {
      r.log('authz_groupfile', APLOG_DEBUG,
        `AH01667: Authorization of user ${r.user ?? ''} to access ${r.uri} failed, reason: user is not part of the 'require'ed group(s).`,
        undefined, SRC_01667);
    }
    return AUTHZ_DENIED;
  },
};

/** Whether mod_authz_owner is loaded in the current configuration (its optional function). */
let ownerLoaded = false;

const fileGroupProvider: AuthzProvider<undefined> = {
  check(r) {
    const groups = userGroups(r, ['01668', '01669', '01670']);
    if (typeof groups === 'number') return groups;
    // DIFFERENCE: httpd calls a NULL optional function (and crashes) without mod_authz_owner.
    if (!ownerLoaded) return AUTHZ_DENIED;
    const fileGroup = authzOwnerGetFileGroup(r);
    if (fileGroup === undefined) return AUTHZ_DENIED;
    if (groups.has(lowerAscii(fileGroup))) return AUTHZ_GRANTED;
    if (r.wantsLog('authz_groupfile', APLOG_DEBUG)) {
      r.log('authz_groupfile', APLOG_DEBUG,
        `AH01671: Authorization of user ${r.user ?? ''} to access ${r.uri} failed, reason: user is not part of the 'require'ed file group.`,
        undefined, SRC_01671);
    }
    return AUTHZ_DENIED;
  },
};

// ---- directives and module ------------------------------------------------------------------

type Cmd = CmdParms<undefined, AuthzGroupfileDirConfig>;

function setGroupFile(cmd: Cmd, arg: string): undefined {
  (cmd.dir as { groupFile: string | undefined }).groupFile = cmd.serverRootRelative(arg);
  return undefined;
}

const providers: ProviderDecl[] = [
  { group: 'authz', name: 'group', version: AUTHZ_PROVIDER_VERSION, provider: groupProvider as AuthzProvider },
  { group: 'authz', name: 'file-group', version: AUTHZ_PROVIDER_VERSION, provider: fileGroupProvider as AuthzProvider },
];

const self = defineModule<undefined, AuthzGroupfileDirConfig>({
  name: 'authz_groupfile_module',
  source: 'mod_authz_groupfile.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  // No merger: the most specific section with AuthGroupFile wins whole, as in httpd.
  directives: [
    directive({ name: 'AuthGroupFile', args: 'TAKE1', where: OR_AUTHCFG, help: 'text file containing group names and member user IDs', handler: setGroupFile }),
  ],
  configHooks: {
    checkConfig(ctx) {
      ownerLoaded = ctx.loaded.some((m) => m.decl.name === 'authz_owner_module');
    },
  },
  providers,
});

export default self;
