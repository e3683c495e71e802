// mod_userdir (modules/mappers/mod_userdir.c): /~user/... URLs mapped to a directory of the
// user's (UserDir public_html: ~user/public_html), to a directory named after the user
// (UserDir /usr/web: /usr/web/user; UserDir /home/*/www: /home/user/www), or redirected
// (UserDir http://example.com/*/web: a 302 to http://example.com/user/web/...). Several
// alternatives are tried in turn, the first that exists wins (the last one is used whether it
// exists or not). "UserDir disabled [user...]" and "UserDir enabled [user...]" switch users or
// everyone off and on. As in httpd 2.4, nothing is mapped until a UserDir names a directory.
//
// DIFFERENCE: home directories come from /etc/passwd (re-read when it changes), not from
// other NSS sources (getpwnam would ask LDAP and the like too): a lookup per request may not
// start a process.

import * as fs from 'node:fs';
import {
  DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, RSRC_CONF,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { ArgCursor } from '../../server/config/lexer.js';

// ---- configuration ------------------------------------------------------------------------

type Global = 'default' | 'enable' | 'disable';

export interface UserdirServerConfig {
  readonly globallyDisabled: Global;
  /** The UserDir alternatives as written (undefined: none configured). */
  readonly userdir: string | undefined;
  /** User names, lower-cased (httpd's tables compare without case). */
  readonly enabledUsers: Set<string>;
  readonly disabledUsers: Set<string>;
}

interface Mutable {
  globallyDisabled: Global;
  userdir: string | undefined;
  enabledUsers: Set<string>;
  disabledUsers: Set<string>;
}

function createServerConfig(): UserdirServerConfig {
  return { globallyDisabled: 'default', userdir: undefined, enabledUsers: new Set(), disabledUsers: new Set() };
}

/** The user lists are not merged: a virtual host's own (possibly empty) lists stand. */
function mergeServerConfig(base: Readonly<UserdirServerConfig>, add: Readonly<UserdirServerConfig>): UserdirServerConfig {
  return {
    globallyDisabled: add.globallyDisabled !== 'default' ? add.globallyDisabled : base.globallyDisabled,
    userdir: add.userdir ?? base.userdir,
    enabledUsers: add.enabledUsers,
    disabledUsers: add.disabledUsers,
  } satisfies { [K in keyof Required<UserdirServerConfig>]: UserdirServerConfig[K] };
}

function setUserDir(cmd: CmdParms<UserdirServerConfig, unknown>, raw: string): string | undefined {
  const conf = cmd.srv as Mutable;
  const c = new ArgCursor(raw);
  const kw = c.word();
  if (kw === '') return 'UserDir requires an argument.';
  const k = kw.toLowerCase();
  let table: Set<string>;
  if (k === 'disable' || k === 'disabled') {
    if (c.atEnd()) { conf.globallyDisabled = 'disable'; return undefined; }
    table = conf.disabledUsers;
  } else if (k === 'enable' || k === 'enabled') {
    if (c.atEnd()) { conf.globallyDisabled = 'enable'; return undefined; }
    table = conf.enabledUsers;
  } else {
    conf.userdir = raw;
    return undefined;
  }
  while (!c.atEnd()) {
    const u = c.word();
    if (u === '') break;
    table.add(u.toLowerCase());
  }
  return undefined;
}

// ---- home directories -------------------------------------------------------------------------

let passwd: { stamp: string; homes: Map<string, string> } | undefined;

/** apr_uid_homepath_get: the user's home directory from /etc/passwd. */
export function homeOf(user: string, file = '/etc/passwd'): string | undefined {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return undefined;
  }
  const stamp = `${file}:${st.ino}:${st.size}:${st.mtimeMs}`;
  if (passwd === undefined || passwd.stamp !== stamp) {
    const homes = new Map<string, string>();
    let text = '';
    try { text = fs.readFileSync(file, 'latin1'); } catch { /* unreadable: no homes */ }
    for (const line of text.split('\n')) {
      const f = line.split(':');
      if (f.length >= 6 && f[0] !== '' && !homes.has(f[0]!)) homes.set(f[0]!, f[5]!);
    }
    passwd = { stamp, homes };
  }
  return passwd.homes.get(user);
}

// ---- translate_name ------------------------------------------------------------------------------

function translateUserdir(r: Request): number {
  const uri = r.uri;
  if (uri[0] !== '/' || uri[1] !== '~') return DECLINED;
  const conf = self.server(r.server);
  const userdirs = conf.userdir;
  if (userdirs === undefined) return DECLINED;
  const slash = uri.indexOf('/', 2);
  const user = slash < 0 ? uri.slice(2) : uri.slice(2, slash);
  // The rest of the path after "/~user", its slash included ("" for "/~user").
  const dname = slash < 0 ? '' : uri.slice(slash);
  // No name, "." or "..": not a user.
  if (user === '' || user === '.' || user === '..') return DECLINED;
  const lower = user.toLowerCase();
  if (conf.disabledUsers.has(lower)) return DECLINED;
  if (conf.globallyDisabled === 'disable' && !conf.enabledUsers.has(lower)) return DECLINED;

  const c = new ArgCursor(userdirs);
  while (!c.atEnd()) {
    let userdir = c.word();
    const last = c.atEnd();
    let filename: string | undefined;
    let prefix: string | undefined;
    const isAbsolute = userdir.startsWith('/');
    const star = userdir.indexOf('*');
    if (star >= 0) {
      prefix = userdir.slice(0, star);
      userdir = userdir.slice(star + 1);
    }
    if (userdir === '' || isAbsolute) {
      if (prefix !== undefined) {
        if (prefix.includes(':') && !isAbsolute) {
          r.headersOut.set('Location', prefix + user + userdir + dname);
          return 302;
        }
        filename = prefix + user + userdir;
      } else {
        filename = `${userdir}/${user}`;
      }
    } else if (prefix !== undefined && prefix.includes(':')) {
      r.headersOut.set('Location', prefix + user + dname);
      return 302;
    } else {
      const home = homeOf(user);
      if (home !== undefined) filename = `${home}/${userdir}`;
    }
    // The last alternative is used whether it exists or not (a handler may serve it).
    if (filename !== undefined && (last || exists(filename))) {
      r.filename = filename + dname;
      r.contextPrefix = uri.slice(0, uri.length - dname.length);
      r.contextDocumentRoot = filename;
      r.notes.set('mod_userdir_user', user);
      return OK;
    }
  }
  return DECLINED;
}

function exists(path: string): boolean {
  try {
    fs.statSync(path);
    return true;
  } catch {
    return false;
  }
}

// ---- the module -----------------------------------------------------------------------------------

const self = defineModule<UserdirServerConfig, unknown>({
  name: 'userdir_module',
  source: 'mod_userdir.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive({ name: 'UserDir', args: 'RAW_ARGS', where: RSRC_CONF, help: "the public subdirectory in users' home directories, or 'disabled', or 'disabled username username...', or 'enabled username username...'", handler: setUserDir }),
  ],
  hooks: {
    translateName: { fn: translateUserdir, order: HOOK_MIDDLE, predecessors: ['mod_alias.c'], successors: ['mod_vhost_alias.c'] },
  },
});

export default self;
