// mod_authn_core (modules/aaa/mod_authn_core.c): the authentication core of httpd 2.4.
//
//  - AuthType and AuthName, both string expressions evaluated per request; "AuthType None"
//    switches authentication off. They are what ap_auth_type / ap_auth_name answer, which
//    mod_authz_core and the auth modules (mod_auth_basic, ...) ask through
//    registerAuthnCoreFunctions, as httpd's optional functions.
//  - <AuthnProviderAlias provider alias> registers `alias` as an authn provider that runs
//    `provider` with the section's directives merged into the request's configuration.
//  - A check_authn hook that runs last: with no AuthType a request is let through
//    unauthenticated (the core then refuses it, AH00027), with an AuthType no module handled
//    it is a 500 (AH01796).
//  - The authn provider interface (mod_auth.h's authn_provider): check_password for Basic,
//    get_realm_hash for Digest and AuthBasicUseDigestAlgorithm. Modules add providers with
//      providers: [{ group: 'authn', name: 'file', version: '0', provider: { checkPassword, getRealmHash } }]
//    and auth schemes (Basic, Digest, ...) note failures through the 'auth_type' group.

import {
  HOOK_LAST, MODULE_API_VERSION, OK, OR_AUTHCFG, ACCESS_CONF, RSRC_CONF,
  defineModule, directive, type MaybePromise,
} from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import { mergeVectors } from '../../server/config/build.js';
import { ArgCursor } from '../../server/config/lexer.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { registerAuthnCoreFunctions } from './mod_authz_core.js';
import { compileStringExpr, escapeQuotes, type StringExpr } from './auth-string-expr.js';
import type { AuthApi } from '../../server/auth-api.js';
import { validatePassword } from '../../lib/passwords/index.js';

// ---- the provider interface (mod_auth.h's authn_provider) ---------------------------------

/** authn_status values, numbered as mod_auth.h numbers them. */
export const AUTH_DENIED = 0;
export const AUTH_GRANTED = 1;
export const AUTH_USER_FOUND = 2;
export const AUTH_USER_NOT_FOUND = 3;
export const AUTH_GENERAL_ERROR = 4;
export type AuthnStatus =
  | typeof AUTH_DENIED | typeof AUTH_GRANTED | typeof AUTH_USER_FOUND
  | typeof AUTH_USER_NOT_FOUND | typeof AUTH_GENERAL_ERROR;

/** ap_password_validate's answer for `password` against a stored `hash`, as the status a
 *  check_password gives (synchronous where the hash's check is). */
export function passwordStatus(password: Uint8Array, hash: string): MaybePromise<AuthnStatus> {
  const ok = validatePassword(password, hash);
  if (ok instanceof Promise) return ok.then((v) => (v ? AUTH_GRANTED : AUTH_DENIED));
  return ok ? AUTH_GRANTED : AUTH_DENIED;
}

/** What get_realm_hash answers: AUTH_USER_FOUND with the stored MD5(user:realm:password). */
export interface RealmHashResult {
  readonly status: AuthnStatus;
  readonly hash?: string;
}

/** An authn provider. `user` is the name as sent (bytes as latin1 characters), `password`
 *  the password's bytes. Either function may be missing, as in httpd. */
export interface AuthnProvider {
  checkPassword?(r: Request, user: string, password: Uint8Array): MaybePromise<AuthnStatus>;
  getRealmHash?(r: Request, user: string, realm: string): MaybePromise<RealmHashResult>;
}

/** An authentication scheme's side of ap_note_auth_failure (the note_auth_failure hook):
 *  registered under the AuthType it serves ("Basic", "Digest"), matched case-insensitively. */
export interface AuthTypeHandler {
  noteAuthFailure(r: Request): void;
}

declare module '../../server/module.js' {
  interface ProviderGroups {
    authn: AuthnProvider;
    auth_type: AuthTypeHandler;
  }
}

export const AUTHN_PROVIDER_GROUP = 'authn';
export const AUTHN_PROVIDER_VERSION = '0';
export const AUTHN_DEFAULT_PROVIDER = 'file';
/** r.notes key holding the provider name while a provider runs (AUTHN_PROVIDER_NAME_NOTE). */
export const AUTHN_PROVIDER_NAME_NOTE = 'authn_provider_name';

// ---- configuration ------------------------------------------------------------------------

export interface AuthnCoreDirConfig {
  /** AuthType (undefined = "None" or not set; see typeSet). */
  readonly authType: StringExpr | undefined;
  readonly typeSet: boolean;
  /** AuthName. */
  readonly authName: StringExpr | undefined;
}

interface MutableDirConfig {
  authType: StringExpr | undefined;
  typeSet: boolean;
  authName: StringExpr | undefined;
}

interface ProviderAlias {
  readonly providerName: string;
  readonly vector: unknown[];
  readonly provider: AuthnProvider;
}

export interface AuthnCoreServerConfig {
  readonly aliases: Map<string, ProviderAlias>;
}

function createDirConfig(): AuthnCoreDirConfig {
  return { authType: undefined, typeSet: false, authName: undefined };
}

function mergeDirConfig(base: Readonly<AuthnCoreDirConfig>, add: Readonly<AuthnCoreDirConfig>): AuthnCoreDirConfig {
  return {
    authType: add.typeSet ? add.authType : base.authType,
    typeSet: add.typeSet || base.typeSet,
    authName: add.authName ?? base.authName,
  } satisfies { [K in keyof Required<AuthnCoreDirConfig>]: AuthnCoreDirConfig[K] };
}

function createServerConfig(): AuthnCoreServerConfig {
  return { aliases: new Map() };
}

// ---- directives ---------------------------------------------------------------------------

type Cmd = CmdParms<AuthnCoreServerConfig, AuthnCoreDirConfig>;

function mutable(c: AuthnCoreDirConfig): MutableDirConfig {
  return c as MutableDirConfig;
}

/** "None" as a literal AuthType means no authentication. */
const NONE: StringExpr = () => 'None';

function setAuthType(cmd: Cmd, word: string): string | undefined {
  const res = compileStringExpr(word, cmd, 'authn_core');
  if (!res.ok) return `Cannot parse expression '${word}' in AuthType: ${res.error}`;
  const conf = mutable(cmd.dir);
  conf.authType = res.literal !== undefined && res.literal.toLowerCase() === 'none' ? NONE : res.expr;
  conf.typeSet = true;
  return undefined;
}

function setAuthName(cmd: Cmd, word: string): string | undefined {
  const res = compileStringExpr(word, cmd, 'authn_core');
  if (!res.ok) return `Cannot parse expression '${word}' in AuthName: ${res.error}`;
  mutable(cmd.dir).authName = res.expr;
  return undefined;
}

const ALIAS_SCRATCH = 'authn_core:aliases';

/** Providers registered by <AuthnProviderAlias> in this generation, by exact name. */
function aliasProviders(ctx: ConfigContext): Map<string, AuthnProvider> {
  return ctx.getScratch(ALIAS_SCRATCH, () => new Map<string, AuthnProvider>());
}

/** ap_lookup_provider for the authn group: aliases first, then loaded modules' providers
 *  (names compared exactly, as httpd's provider hash does). */
export function lookupAuthnProvider(ctx: ConfigContext, name: string): AuthnProvider | undefined {
  const a = aliasProviders(ctx).get(name);
  if (a) return a;
  for (const m of ctx.loaded) {
    for (const p of m.decl.providers ?? []) {
      if (p.group === AUTHN_PROVIDER_GROUP && p.name === name) return p.provider as AuthnProvider;
    }
  }
  // Providers registered while the configuration is read (AuthnzFcgiDefineProvider).
  return ctx.registeredProvider(AUTHN_PROVIDER_GROUP, name);
}

/** Runs `fn` with the alias section's directives merged into the request's configuration. */
function withAliasConfig<T>(ctx: ConfigContext, r: Request, rec: ProviderAlias, fn: () => MaybePromise<T>): MaybePromise<T> {
  const orig = r.perDirConfig;
  r.perDirConfig = mergeVectors(ctx, orig, rec.vector);
  let res: MaybePromise<T>;
  try {
    res = fn();
  } catch (e) {
    r.perDirConfig = orig;
    throw e;
  }
  if (res instanceof Promise) return res.finally(() => { r.perDirConfig = orig; });
  r.perDirConfig = orig;
  return res;
}

function authnAliasSection(cmd: Cmd, raw: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  if (raw.trim() === '') return `${cmd.name}> directive requires additional arguments`;
  const c = new ArgCursor(raw);
  const providerName = c.word();
  const alias = c.word();
  if (providerName === '' || alias === '') return `${cmd.name}> directive requires additional arguments`;
  if (providerName.toLowerCase() === alias.toLowerCase()) {
    return 'The alias provider name must be different from the base provider name.';
  }
  if (lookupAuthnProvider(cmd.ctx, alias)) {
    return `The alias provider ${alias} has already be registered previously as either a base provider or an alias provider.`;
  }
  const vector: unknown[] = [];
  cmd.walk(cmd.node.children ?? [], {
    ...cmd.scope, vector, path: undefined, override: OR_AUTHCFG | ACCESS_CONF,
    parents: [...cmd.scope.parents, cmd.name],
  });
  const provider = lookupAuthnProvider(cmd.ctx, providerName);
  if (!provider) return `Unknown Authn provider: ${providerName}`;
  const rec: ProviderAlias = { providerName, vector, provider };
  cmd.srv.aliases.set(alias, rec);
  const ctx = cmd.ctx;
  const aliasProvider: AuthnProvider = {
    checkPassword: (r, user, password) =>
      withAliasConfig(ctx, r, rec, () => rec.provider.checkPassword ? rec.provider.checkPassword(r, user, password) : AUTH_GENERAL_ERROR),
  };
  if (provider.getRealmHash) {
    aliasProvider.getRealmHash = (r, user, realm) =>
      withAliasConfig(ctx, r, rec, () => rec.provider.getRealmHash!(r, user, realm));
  }
  aliasProviders(ctx).set(alias, aliasProvider);
  // Visible to ctx.provider('authn', alias) too, as ap_register_auth_provider makes it.
  let g = ctx.providers.get(AUTHN_PROVIDER_GROUP);
  if (!g) ctx.providers.set(AUTHN_PROVIDER_GROUP, (g = new Map()));
  g.set(alias.toLowerCase(), aliasProvider);
  return undefined;
}

// ---- ap_auth_type, ap_auth_name, ap_note_auth_failure -------------------------------------

/** ap_auth_type: the AuthType in force for the request ("None" counts as none). */
export function authType(r: Request): string | undefined {
  const conf = self.dir(r);
  if (!conf || !conf.authType) return undefined;
  if (conf.authType === NONE) return undefined;
  const t = conf.authType(r);
  return t.toLowerCase() === 'none' ? undefined : t;
}

/** ap_auth_name: the realm, with its double quotes escaped. */
export function authName(r: Request): string | undefined {
  const conf = self.dir(r);
  if (!conf || !conf.authName) return undefined;
  return escapeQuotes(conf.authName(r));
}

/** ap_note_auth_failure: lets the request's authentication scheme ask for credentials. */
export function noteAuthFailure(r: Request): void {
  const type = authType(r);
  if (type === undefined) {
    r.log('core', APLOG_ERR, `AH00571: need AuthType to note auth failure: ${r.uri}`);
    return;
  }
  r.rt.ctx.provider('auth_type', type)?.noteAuthFailure(r);
}

// Installed when this file is imported; answers nothing where the module is not loaded (no
// AuthType can be configured then), exactly as httpd without mod_authn_core.
registerAuthnCoreFunctions({ authType, noteAuthFailure });

// ---- the hook -------------------------------------------------------------------------------

function authenticateNoUser(r: Request): number {
  const type = authType(r);
  if (type === undefined) return OK;
  r.log('authn_core', APLOG_ERR, `AH01796: AuthType ${type} configured without corresponding module`);
  return 500;
}

// ---- the module -----------------------------------------------------------------------------

const self = defineModule<AuthnCoreServerConfig, AuthnCoreDirConfig>({
  name: 'authn_core_module',
  source: 'mod_authn_core.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: 'AuthType', args: 'TAKE1', where: OR_AUTHCFG, help: 'an HTTP authorization type (e.g., "Basic")', handler: setAuthType }),
    directive({ name: 'AuthName', args: 'TAKE1', where: OR_AUTHCFG, help: 'the authentication realm (e.g. "Members Only")', handler: setAuthName }),
    directive({ name: '<AuthnProviderAlias', args: 'RAW_ARGS', where: RSRC_CONF, section: true, help: "container for grouping an authentication provider's directives under a provider alias", handler: authnAliasSection }),
  ],
  hooks: {
    checkUserId: { fn: authenticateNoUser, order: HOOK_LAST },
  },
  // httpd's authn_ap_auth_type/authn_ap_auth_name optional functions (server/auth-api.ts).
  providers: [{ group: 'auth_api', name: 'authn_core', version: '0', provider: { authType, authName } satisfies AuthApi }],
});

export default self;
