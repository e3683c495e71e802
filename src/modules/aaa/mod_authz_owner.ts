// mod_authz_owner (modules/aaa/mod_authz_owner.c): `Require file-owner` grants when the
// authenticated user's name is the name of the requested file's owner. It also provides the
// file's group name (authz_owner_get_file_group) to the `file-group` providers of
// mod_authz_groupfile and mod_authz_dbm, which are only usable while this module is loaded.

import * as fs from 'node:fs';
import { MODULE_API_VERSION, defineModule, type ProviderDecl } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import {
  AUTHZ_DENIED, AUTHZ_DENIED_NO_USER, AUTHZ_GRANTED, AUTHZ_PROVIDER_VERSION, type AuthzProvider,
} from './mod_authz_core.js';
import { gidName, uidName } from './unix-names.js';

function fail(r: Request, tag: string, reason: string, err?: { code: number; text: string }): void {
  r.log('authz_owner', APLOG_ERR,
    `AH${tag}: Authorization of user ${r.user ?? '(null)'} to access ${r.uri} failed, reason: ${reason}`, err);
}

function statFile(r: Request): fs.Stats | { error: unknown } {
  try {
    return fs.statSync(r.filename);
  } catch (e) {
    return { error: e };
  }
}

const fileOwnerProvider: AuthzProvider<undefined> = {
  check(r) {
    if (r.user === undefined) return AUTHZ_DENIED_NO_USER;
    if (r.filename === '') {
      fail(r, '01633', 'no filename available');
      return AUTHZ_DENIED;
    }
    const st = statFile(r);
    if ('error' in st) {
      fail(r, '01634', `could not stat file ${r.filename}`, r.rt.errno(st.error));
      return AUTHZ_DENIED;
    }
    const owner = uidName(st.uid);
    if (owner === undefined) {
      fail(r, '01636', 'could not get name of file owner');
      return AUTHZ_DENIED;
    }
    if (owner !== r.user) {
      fail(r, '01637', `file owner ${owner} does not match.`);
      return AUTHZ_DENIED;
    }
    return AUTHZ_GRANTED;
  },
};

/** authz_owner_get_file_group: the group name of the requested file, or undefined after
 *  logging why not. */
export function authzOwnerGetFileGroup(r: Request): string | undefined {
  if (r.filename === '') {
    fail(r, '01638', 'no filename available');
    return undefined;
  }
  const st = statFile(r);
  if ('error' in st) {
    fail(r, '01639', `could not stat file ${r.filename}`, r.rt.errno(st.error));
    return undefined;
  }
  const group = gidName(st.gid);
  if (group === undefined) {
    fail(r, '01641', 'could not get name of file group');
    return undefined;
  }
  return group;
}

const providers: ProviderDecl[] = [
  { group: 'authz', name: 'file-owner', version: AUTHZ_PROVIDER_VERSION, provider: fileOwnerProvider as AuthzProvider },
];

const self = defineModule<undefined, undefined>({
  name: 'authz_owner_module',
  source: 'mod_authz_owner.c',
  apiVersion: MODULE_API_VERSION,
  providers,
});

export default self;
