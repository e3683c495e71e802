// mod_authn_file (modules/aaa/mod_authn_file.c): the "file" authn provider, users and
// password hashes in a text file (AuthUserFile), one "user:hash" per line as htpasswd writes
// them, or "user:realm:md5" digest lines (htdigest) for get_realm_hash.
//
// The file is read as ap_pcfg_openfile / ap_cfg_getline read it (leading and trailing white
// space removed, '#' comments and blank lines skipped, backslash-newline continuations, a
// line too long for httpd's 8 KB buffer ends the reading) and the first line naming the user
// wins. It is parsed once and re-read when its stat changes, so edits are seen on the next
// request; httpd re-reads it on every request, to the same effect.

import * as fs from 'node:fs';
import {
  MODULE_API_VERSION, OR_AUTHCFG, defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { errnoOf } from '../../server/log/error-log.js';
import { APLOG_ERR, levelFor } from '../../server/log/levels.js';
import { authnCacheStore } from '../../server/authn-cache.js';
import {
  AUTH_GENERAL_ERROR, AUTH_USER_FOUND, passwordStatus, AUTH_USER_NOT_FOUND,
  type AuthnProvider, type AuthnStatus, type RealmHashResult,
} from './mod_authn_core.js';

export interface AuthnFileDirConfig {
  /** AuthUserFile, ServerRoot-relative resolved. */
  pwfile: string | undefined;
}

function createDirConfig(): AuthnFileDirConfig {
  return { pwfile: undefined };
}

type Cmd = CmdParms<unknown, AuthnFileDirConfig>;

function setPwFile(cmd: Cmd, file: string): undefined {
  cmd.dir.pwfile = cmd.serverRootRelative(file);
  return undefined;
}

// ---- reading the file ---------------------------------------------------------------------

/** httpd's MAX_STRING_LEN: ap_cfg_getline's buffer in mod_authn_file. */
const MAX_STRING_LEN = 8192;

const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);

/** ap_cfg_getline over a whole file: the logical lines, trimmed. */
export function configLines(text: string): string[] {
  const out: string[] = [];
  const raw = text.split('\n');
  let acc = '';
  for (let i = 0; i < raw.length; i++) {
    let l = raw[i]!;
    if (i === raw.length - 1 && l === '') break;
    if (l.endsWith('\r')) l = l.slice(0, -1);
    // "[^\\]\\[\r]\n" continues the line; the backslash goes.
    if (l.endsWith('\\') && !l.endsWith('\\\\') && i < raw.length - 1) {
      acc += l.slice(0, -1);
      continue;
    }
    acc += l;
    if (acc.length >= MAX_STRING_LEN - 1) break; // APR_ENOSPC: the loop stops here
    let s = 0;
    let e = acc.length;
    while (s < e && isSpace(acc.charCodeAt(s))) s++;
    while (e > s && isSpace(acc.charCodeAt(e - 1))) e--;
    out.push(acc.slice(s, e));
    acc = '';
  }
  return out;
}

/** ap_getword(&line, ':'): the word before the first ':', and the rest after the colons. */
function getword(line: string): [string, string] {
  const i = line.indexOf(':');
  if (i < 0) return [line, ''];
  let j = i;
  while (line[j] === ':') j++;
  return [line.slice(0, i), line.slice(j)];
}

interface ParsedFile {
  readonly stamp: string;
  /** user → the stored hash (first line wins). */
  readonly users: Map<string, string>;
  /** "user:realm" → digest hash (first line wins). */
  readonly realms: Map<string, string>;
}

const files = new Map<string, ParsedFile>();

function parse(text: string, stamp: string): ParsedFile {
  const users = new Map<string, string>();
  const realms = new Map<string, string>();
  for (const l of configLines(text)) {
    if (l === '' || l[0] === '#') continue;
    const [w, rest] = getword(l);
    if (!users.has(w)) users.set(w, getword(rest)[0]);
    const [x, rest2] = getword(rest);
    const k = `${w}:${x}`;
    if (!realms.has(k)) realms.set(k, getword(rest2)[0]);
  }
  return { stamp, users, realms };
}

/** AH00554, logged by ap_pcfg_openfile on the main server. */
function logNotRegular(r: Request, file: string): void {
  const s = r.rt.mainServer;
  if (APLOG_ERR > levelFor(s.logLevel, 'core')) return;
  s.errorLog.write({ module: 'core', level: APLOG_ERR, message: `AH00554: Access to file ${file} denied by server: not a regular file` });
}

/** ap_pcfg_openfile plus the parse: the parsed file, or the error to log. */
function openPasswordFile(r: Request, file: string): ParsedFile | { readonly code: number; readonly text: string } {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    return errnoOf(e) ?? { code: 0, text: String(e) };
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() && file !== '/dev/null') {
      logNotRegular(r, file);
      return { code: 9, text: 'Bad file descriptor' };
    }
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    const cached = files.get(file);
    if (cached && cached.stamp === stamp) return cached;
    const parsed = parse(fs.readFileSync(fd, 'latin1'), stamp);
    if (files.size > 256) files.clear();
    files.set(file, parsed);
    return parsed;
  } catch (e) {
    return errnoOf(e) ?? { code: 0, text: String(e) };
  } finally {
    fs.closeSync(fd);
  }
}

// ---- the provider -------------------------------------------------------------------------

function checkPassword(r: Request, user: string, password: Uint8Array): AuthnStatus | Promise<AuthnStatus> {
  const conf = self.dir(r);
  const file = conf?.pwfile;
  if (file === undefined) {
    r.log('authn_file', APLOG_ERR, 'AH01619: AuthUserFile not specified in the configuration');
    return AUTH_GENERAL_ERROR;
  }
  const f = openPasswordFile(r, file);
  if (!('users' in f)) {
    r.log('authn_file', APLOG_ERR, `AH01620: Could not open password file: ${file}`, f);
    return AUTH_GENERAL_ERROR;
  }
  const hash = f.users.get(user);
  if (hash === undefined) return AUTH_USER_NOT_FOUND;
  const stored = authnCacheStore(r, 'file', user, undefined, hash);
  if (stored !== undefined) return stored.then(() => passwordStatus(password, hash));
  return passwordStatus(password, hash);
}

function getRealmHash(r: Request, user: string, realm: string): RealmHashResult | Promise<RealmHashResult> {
  const conf = self.dir(r);
  const file = conf?.pwfile;
  if (file === undefined) {
    r.log('authn_file', APLOG_ERR, 'AH01621: AuthUserFile not specified in the configuration');
    return { status: AUTH_GENERAL_ERROR };
  }
  const f = openPasswordFile(r, file);
  if (!('users' in f)) {
    r.log('authn_file', APLOG_ERR, `AH01622: Could not open password file: ${file}`, f);
    return { status: AUTH_GENERAL_ERROR };
  }
  const hash = f.realms.get(`${user}:${realm}`);
  if (hash === undefined) return { status: AUTH_USER_NOT_FOUND };
  const stored = authnCacheStore(r, 'file', user, realm, hash);
  const found: RealmHashResult = { status: AUTH_USER_FOUND, hash };
  return stored === undefined ? found : stored.then(() => found);
}

const fileProvider: AuthnProvider = { checkPassword, getRealmHash };

const providers: ProviderDecl[] = [
  { group: 'authn', name: 'file', version: '0', provider: fileProvider },
];

// ---- the module -----------------------------------------------------------------------------

const self = defineModule<unknown, AuthnFileDirConfig>({
  name: 'authn_file_module',
  source: 'mod_authn_file.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  directives: [
    directive({ name: 'AuthUserFile', args: 'TAKE1', where: OR_AUTHCFG, help: 'text file containing user IDs and passwords', handler: setPwFile }),
  ],
  providers,
});

export default self;
