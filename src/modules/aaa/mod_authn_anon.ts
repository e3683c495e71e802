// mod_authn_anon (modules/aaa/mod_authn_core.c's sibling, modules/aaa/mod_authn_anon.c): the
// "anon" authn provider, anonymous access FTP-style — a user ID from the Anonymous list (or
// any with "*", or none with Anonymous_NoUserID) and, as the password, an e-mail address
// (Anonymous_MustGiveEmail, Anonymous_VerifyEmail), logged with Anonymous_LogEmail.
// As in httpd the directory configuration has no merge: the most specific section's wins whole.

import { defineModule, directive, MODULE_API_VERSION, OR_AUTHCFG, type ProviderDecl } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_INFO } from '../../server/log/levels.js';
import { AUTH_DENIED, AUTH_GRANTED, AUTH_USER_FOUND, AUTH_USER_NOT_FOUND, type AuthnProvider, type AuthnStatus } from './mod_authn_core.js';

/** authn_anon_config_rec. */
interface AnonDir {
  users: string[];
  anyUserId: boolean;
  noUserId: boolean;
  logEmail: boolean;
  verifyEmail: boolean;
  mustEmail: boolean;
}

function createDirConfig(): AnonDir {
  return { users: [], anyUserId: false, noUserId: false, logEmail: true, verifyEmail: false, mustEmail: true };
}

type Cmd = CmdParms<undefined, AnonDir>;

/** anon_set_string_slots. */
function anonymous(cmd: Cmd, arg: string): string | undefined {
  if (arg === '') return 'Anonymous string cannot be empty, use Anonymous_NoUserId';
  if (!cmd.dir.anyUserId) {
    if (arg === '*') cmd.dir.anyUserId = true;
    else cmd.dir.users.push(arg);
  }
  return undefined;
}

const flag = (k: 'noUserId' | 'logEmail' | 'verifyEmail' | 'mustEmail') => (cmd: Cmd, on: boolean): undefined => {
  cmd.dir[k] = on;
  return undefined;
};

/** check_anonymous. */
function checkPassword(r: Request, user: string, password: Uint8Array): AuthnStatus {
  const conf = self.dir(r);
  if (conf === undefined || (conf.users.length === 0 && !conf.anyUserId)) return AUTH_USER_NOT_FOUND;
  let res: AuthnStatus = AUTH_USER_NOT_FOUND;
  if (user === '') {
    if (conf.noUserId) res = AUTH_USER_FOUND;
  } else if (conf.anyUserId) {
    res = AUTH_USER_FOUND;
  } else {
    const lower = user.toLowerCase();
    if (conf.users.some((u) => u.toLowerCase() === lower)) res = AUTH_USER_FOUND;
  }
  const sent = Buffer.from(password).toString('latin1');
  if (res === AUTH_USER_FOUND && (!conf.mustEmail || sent !== '') && (!conf.verifyEmail || (sent.includes('@') && sent.includes('.')))) {
    if (conf.logEmail && r.isInitialReq()) r.log('authn_anon', APLOG_INFO, `AH01672: Anonymous: Passwd <${sent}> Accepted`);
    return AUTH_GRANTED;
  }
  return res === AUTH_USER_NOT_FOUND ? res : AUTH_DENIED;
}

const anonProvider: AuthnProvider = { checkPassword };
const providers: ProviderDecl[] = [{ group: 'authn', name: 'anon', version: '0', provider: anonProvider }];

const self = defineModule<undefined, AnonDir>({
  name: 'authn_anon_module',
  source: 'mod_authn_anon.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  directives: [
    directive<undefined, AnonDir, 'ITERATE'>({ name: 'Anonymous', args: 'ITERATE', where: OR_AUTHCFG, help: 'a space-separated list of user IDs', handler: anonymous }),
    directive<undefined, AnonDir, 'FLAG'>({ name: 'Anonymous_MustGiveEmail', args: 'FLAG', where: OR_AUTHCFG, help: "Limited to 'on' or 'off'", handler: flag('mustEmail') }),
    directive<undefined, AnonDir, 'FLAG'>({ name: 'Anonymous_NoUserId', args: 'FLAG', where: OR_AUTHCFG, help: "Limited to 'on' or 'off'", handler: flag('noUserId') }),
    directive<undefined, AnonDir, 'FLAG'>({ name: 'Anonymous_VerifyEmail', args: 'FLAG', where: OR_AUTHCFG, help: "Limited to 'on' or 'off'", handler: flag('verifyEmail') }),
    directive<undefined, AnonDir, 'FLAG'>({ name: 'Anonymous_LogEmail', args: 'FLAG', where: OR_AUTHCFG, help: "Limited to 'on' or 'off'", handler: flag('logEmail') }),
  ],
  providers,
});

export default self;
