// mod_auth_basic (modules/aaa/mod_auth_basic.c): HTTP Basic authentication, RFC 7617.
//
//  - check_authn: with AuthType Basic, reads "Authorization: Basic base64(user:password)",
//    sets r.user to the name sent (even before it is checked, as httpd does), and asks the
//    AuthBasicProvider chain in order until one knows the user (default provider: file).
//    401 with WWW-Authenticate: Basic realm="AuthName" when no or wrong credentials came,
//    500 when a provider failed; AuthBasicAuthoritative Off passes unknown users on.
//  - AuthBasicUseDigestAlgorithm MD5 checks MD5(user:realm:password) against the providers'
//    digest hashes (get_realm_hash) instead of their password hashes.
//  - AuthBasicFake (fixups, last) replaces the Authorization header with fixed or computed
//    credentials, for backends behind a reverse proxy.
// Base64 is decoded exactly as APR decodes it: up to the first character outside the
// alphabet, NUL-terminated, so garbage gives an empty name rather than an error.

import { PROXYREQ_PROXY } from '../../proxy/api.js';
import { createHash } from 'node:crypto';
import {
  DECLINED, HOOK_LAST, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_AUTHCFG,
  defineModule, directive, type MaybePromise, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR, APLOG_INFO, APLOG_WARNING } from '../../server/log/levels.js';
import {
  AUTH_DENIED, AUTH_GENERAL_ERROR, AUTH_GRANTED, AUTH_USER_FOUND, AUTH_USER_NOT_FOUND,
  AUTHN_DEFAULT_PROVIDER, AUTHN_PROVIDER_NAME_NOTE,
  authName, authType, lookupAuthnProvider,
  type AuthnProvider, type AuthnStatus, type AuthTypeHandler,
} from './mod_authn_core.js';
import { compileStringExpr, type StringExpr } from './auth-string-expr.js';
import { aprBase64Decode } from '../../lib/apr-base64.js';

// ---- configuration ------------------------------------------------------------------------

interface ProviderEntry {
  readonly name: string;
  readonly provider: AuthnProvider;
}

export interface AuthBasicDirConfig {
  /** AuthBasicProvider, in order (undefined = not set: the default "file"). */
  readonly providers: readonly ProviderEntry[] | undefined;
  /** AuthBasicAuthoritative (undefined = not set: On). */
  readonly authoritative: boolean | undefined;
  /** AuthBasicFake: user and password expressions; undefined user = off. */
  readonly fakeUser: StringExpr | undefined;
  readonly fakePass: StringExpr | undefined;
  readonly fakeSet: boolean;
  /** AuthBasicUseDigestAlgorithm (undefined = not set: Off). */
  readonly digestAlgorithm: string | undefined;
}

interface MutableDirConfig {
  providers: ProviderEntry[] | undefined;
  authoritative: boolean | undefined;
  fakeUser: StringExpr | undefined;
  fakePass: StringExpr | undefined;
  fakeSet: boolean;
  digestAlgorithm: string | undefined;
}

function createDirConfig(): AuthBasicDirConfig {
  return { providers: undefined, authoritative: undefined, fakeUser: undefined, fakePass: undefined, fakeSet: false, digestAlgorithm: undefined };
}

function mergeDirConfig(base: Readonly<AuthBasicDirConfig>, add: Readonly<AuthBasicDirConfig>): AuthBasicDirConfig {
  return {
    providers: add.providers ?? base.providers,
    authoritative: add.authoritative ?? base.authoritative,
    fakeUser: add.fakeSet ? add.fakeUser : base.fakeUser,
    fakePass: add.fakeSet ? add.fakePass : base.fakePass,
    fakeSet: add.fakeSet || base.fakeSet,
    digestAlgorithm: add.digestAlgorithm ?? base.digestAlgorithm,
  } satisfies { [K in keyof Required<AuthBasicDirConfig>]: AuthBasicDirConfig[K] };
}

// ---- directives ---------------------------------------------------------------------------

type Cmd = CmdParms<unknown, AuthBasicDirConfig>;

function mutable(c: AuthBasicDirConfig): MutableDirConfig {
  return c as MutableDirConfig;
}

function addAuthnProvider(cmd: Cmd, name: string): string | undefined {
  const provider = lookupAuthnProvider(cmd.ctx, name);
  if (!provider) return `Unknown Authn provider: ${name}`;
  if (!provider.checkPassword) return `The '${name}' Authn provider doesn't support Basic Authentication`;
  const conf = mutable(cmd.dir);
  if (!conf.providers) conf.providers = [];
  conf.providers.push({ name, provider });
  return undefined;
}

function setAuthoritative(cmd: Cmd, on: boolean): undefined {
  mutable(cmd.dir).authoritative = on;
  return undefined;
}

function addBasicFake(cmd: Cmd, user: string, pass: string | undefined): string | undefined {
  const conf = mutable(cmd.dir);
  if (user.toLowerCase() === 'off') {
    conf.fakeUser = undefined;
    conf.fakePass = undefined;
    conf.fakeSet = true;
    return undefined;
  }
  // Without a password, "password", as mod_ssl's FakeBasicAuth.
  const p = pass ?? 'password';
  const u = compileStringExpr(user, cmd, 'auth_basic');
  if (!u.ok) return `Could not parse fake username expression '${user}': ${u.error}`;
  const pw = compileStringExpr(p, cmd, 'auth_basic');
  if (!pw.ok) return `Could not parse fake password expression associated to user '${user}': ${pw.error}`;
  conf.fakeUser = u.expr;
  conf.fakePass = pw.expr;
  conf.fakeSet = true;
  return undefined;
}

function setUseDigestAlgorithm(cmd: Cmd, alg: string): string | undefined {
  const a = alg.toLowerCase();
  if (a !== 'off' && a !== 'md5') return `Invalid algorithm in AuthBasicUseDigestAlgorithm: ${alg}`;
  mutable(cmd.dir).digestAlgorithm = alg;
  return undefined;
}

// ---- the header ---------------------------------------------------------------------------

export { aprBase64Decode };

/** What the Authorization header yields: the credentials, or the status to answer. */
type Credentials = { readonly user: string; readonly password: Buffer } | number;

function noteBasicAuthFailure(r: Request): void {
  // apr_pstrcat stops at a NULL realm: the header then ends after the opening quote.
  const realm = authName(r);
  r.errHeadersOut.set(r.proxyreq === PROXYREQ_PROXY ? 'Proxy-Authenticate' : 'WWW-Authenticate', realm === undefined ? 'Basic realm="' : `Basic realm="${realm}"`);
}

/** get_basic_auth. */
function getBasicAuth(r: Request): Credentials {
  // A forward proxy request carries its credentials in Proxy-Authorization.
  const line = r.headersIn.get(r.proxyreq === PROXYREQ_PROXY ? 'Proxy-Authorization' : 'Authorization');
  if (line === undefined) {
    noteBasicAuthFailure(r);
    return 401;
  }
  // ap_getword(' '): the scheme up to the first space, then every space after it.
  let sp = line.indexOf(' ');
  if (sp < 0) sp = line.length;
  if (line.slice(0, sp).toLowerCase() !== 'basic') {
    r.log('auth_basic', APLOG_ERR, `AH01614: client used wrong authentication scheme: ${r.uri}`);
    noteBasicAuthFailure(r);
    return 401;
  }
  let i = sp;
  while (line[i] === ' ') i++;
  while (line[i] === ' ' || line[i] === '\t') i++;
  let decoded = aprBase64Decode(line.slice(i));
  const nul = decoded.indexOf(0);
  if (nul >= 0) decoded = decoded.subarray(0, nul);
  const colon = decoded.indexOf(0x3a);
  const user = (colon < 0 ? decoded : decoded.subarray(0, colon)).toString('latin1');
  const password = colon < 0 ? Buffer.alloc(0) : decoded.subarray(colon + 1);
  r.user = user;
  return { user, password };
}

// ---- check_authn ----------------------------------------------------------------------------

function finish(r: Request, conf: AuthBasicDirConfig, user: string, result: AuthnStatus): number {
  if (result === AUTH_GRANTED) return OK;
  if (conf.authoritative === false && result !== AUTH_DENIED) return DECLINED;
  if (result === AUTH_DENIED) {
    r.log('auth_basic', APLOG_ERR, `AH01617: user ${user}: authentication failure for "${r.uri}": Password Mismatch`);
  } else if (result === AUTH_USER_NOT_FOUND) {
    r.log('auth_basic', APLOG_ERR, `AH01618: user ${user} not found: ${r.uri}`);
  } else {
    // The provider has said what went wrong.
    return 500;
  }
  noteBasicAuthFailure(r);
  return 401;
}

function md5Hex(s: Buffer): string {
  return createHash('md5').update(s).digest('hex');
}

/** One provider's answer (check_password, or the realm hash compared with `digest`). */
function askProvider(r: Request, p: AuthnProvider, user: string, password: Buffer, digest: string | undefined, realm: string): MaybePromise<AuthnStatus> {
  if (digest === undefined) return p.checkPassword!(r, user, password);
  if (!p.getRealmHash) {
    r.log('auth_basic', APLOG_ERR, 'AH02493: Authn provider does not support AuthBasicUseDigestAlgorithm');
    return AUTH_GENERAL_ERROR;
  }
  const res = p.getRealmHash(r, user, realm);
  const judge = (h: { status: AuthnStatus; hash?: string }): AuthnStatus =>
    h.status === AUTH_USER_FOUND ? (h.hash === digest ? AUTH_GRANTED : AUTH_DENIED) : h.status;
  return res instanceof Promise ? res.then(judge) : judge(res);
}

function authenticateBasicUser(r: Request): MaybePromise<number> {
  const type = authType(r);
  if (type === undefined || type.toLowerCase() !== 'basic') return DECLINED;
  const realm = authName(r);
  if (realm === undefined) {
    r.log('auth_basic', APLOG_ERR, `AH01615: need AuthName: ${r.uri}`);
    return 500;
  }
  r.apAuthType = type;
  const cred = getBasicAuth(r);
  if (typeof cred === 'number') return cred;
  const { user, password } = cred;
  const conf = self.dir(r) ?? createDirConfig();

  let digest: string | undefined;
  if (conf.digestAlgorithm !== undefined && conf.digestAlgorithm.toLowerCase() === 'md5') {
    digest = md5Hex(Buffer.concat([Buffer.from(`${user}:${realm}:`, 'latin1'), password]));
  }

  let chain: readonly ProviderEntry[];
  if (conf.providers) {
    chain = conf.providers;
  } else {
    const dflt = lookupAuthnProvider(r.rt.ctx, AUTHN_DEFAULT_PROVIDER);
    if (!dflt || !dflt.checkPassword) {
      r.log('auth_basic', APLOG_ERR, 'AH01616: No Authn provider configured');
      return finish(r, conf, user, AUTH_GENERAL_ERROR);
    }
    chain = [{ name: AUTHN_DEFAULT_PROVIDER, provider: dflt }];
  }

  const step = (idx: number): MaybePromise<number> => {
    for (let i = idx; i < chain.length; i++) {
      const e = chain[i]!;
      r.notes.set(AUTHN_PROVIDER_NAME_NOTE, e.name);
      let res: MaybePromise<AuthnStatus>;
      try {
        res = askProvider(r, e.provider, user, password, digest, realm);
      } catch (err) {
        r.notes.delete(AUTHN_PROVIDER_NAME_NOTE);
        throw err;
      }
      if (res instanceof Promise) {
        return res.then((v) => {
          r.notes.delete(AUTHN_PROVIDER_NAME_NOTE);
          if (v !== AUTH_USER_NOT_FOUND || i + 1 >= chain.length) return finish(r, conf, user, v);
          return step(i + 1);
        }, (err: unknown) => {
          r.notes.delete(AUTHN_PROVIDER_NAME_NOTE);
          throw err;
        });
      }
      r.notes.delete(AUTHN_PROVIDER_NAME_NOTE);
      if (res !== AUTH_USER_NOT_FOUND || i + 1 >= chain.length) return finish(r, conf, user, res);
    }
    return finish(r, conf, user, AUTH_USER_NOT_FOUND);
  };
  return step(0);
}

// ---- AuthBasicFake (fixups) -----------------------------------------------------------------

function authenticateBasicFake(r: Request): number {
  const conf = self.dir(r);
  if (!conf || !conf.fakeUser) return DECLINED;
  const user = conf.fakeUser(r);
  if (user === '') {
    r.log('auth_basic', APLOG_WARNING, `AH02458: AuthBasicFake: empty username expression for URI '${r.uri}', ignoring`);
    r.headersIn.unset('Authorization');
    return DECLINED;
  }
  const pass = conf.fakePass ? conf.fakePass(r) : '';
  if (pass === '') {
    r.log('auth_basic', APLOG_WARNING, `AH02459: AuthBasicFake: empty password expression for URI '${r.uri}', ignoring`);
    r.headersIn.unset('Authorization');
    return DECLINED;
  }
  const line = 'Basic ' + Buffer.from(`${user}:${pass}`, 'latin1').toString('base64');
  r.headersIn.set('Authorization', line);
  if (r.wantsLog('auth_basic', APLOG_INFO)) r.log('auth_basic', APLOG_INFO, `AH02457: AuthBasicFake: "Authorization: ${line}"`);
  return OK;
}

// ---- the module -----------------------------------------------------------------------------

const basicHandler: AuthTypeHandler = { noteAuthFailure: noteBasicAuthFailure };

const providers: ProviderDecl[] = [
  { group: 'auth_type', name: 'Basic', version: '0', provider: basicHandler },
];

const self = defineModule<unknown, AuthBasicDirConfig>({
  name: 'auth_basic_module',
  source: 'mod_auth_basic.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: 'AuthBasicProvider', args: 'ITERATE', where: OR_AUTHCFG, help: 'specify the auth providers for a directory or location', handler: addAuthnProvider }),
    directive({ name: 'AuthBasicAuthoritative', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'Off' to allow access control to be passed along to lower modules if the UserID is not known to this module", handler: setAuthoritative }),
    directive({ name: 'AuthBasicFake', args: 'TAKE12', where: OR_AUTHCFG, help: "Fake basic authentication using the given expressions for username and password, 'off' to disable. Password defaults to 'password' if missing.", handler: addBasicFake }),
    directive({ name: 'AuthBasicUseDigestAlgorithm', args: 'TAKE1', where: OR_AUTHCFG, help: "Set to 'MD5' to use the auth provider's authentication check for digest auth, using a hash of 'user:realm:pass'", handler: setUseDigestAlgorithm }),
  ],
  hooks: {
    checkUserId: { fn: authenticateBasicUser, order: HOOK_MIDDLE },
    fixups: { fn: authenticateBasicFake, order: HOOK_LAST },
  },
  providers,
});

export default self;
