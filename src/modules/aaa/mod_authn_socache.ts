// mod_authn_socache (modules/aaa/mod_authn_socache.c): the "socache" authn provider, a cache
// of the password hashes other providers looked up. `AuthBasicProvider socache file` asks the
// cache first; on a miss "file" answers and hands the hash it read to ap_authn_cache_store
// (src/server/authn-cache.ts), which keeps it for AuthnCacheTimeout seconds under
// "context:user" (basic) or "context:user:realm" (digest) when the provider is one of
// AuthnCacheProvideFor. A hit checks the password against the cached hash without reading the
// password file, so a changed file is seen only when the entry expires, as in httpd. The cache
// is a socache provider's (AuthnCacheSOCache provider[:args]; shmcb by default), namespace
// "authn-socache", shared by the worker processes.
//
// DIFFERENCE: httpd takes a global mutex around each store and gives up when it is busy
// (AH01679); plume's socache providers need no lock (see mod_socache_shmcb.ts), so every store
// is attempted.

import {
  ACCESS_CONF, MODULE_API_VERSION, OR_AUTHCFG, RSRC_CONF, defineModule, directive,
  type ModuleDecl, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { GLOBAL_ONLY } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import type { SocacheInstance, SocacheSpec } from '../../server/socache.js';
import type { AuthnCacheApi } from '../../server/authn-cache.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import {
  AUTH_USER_FOUND, passwordStatus, AUTH_USER_NOT_FOUND,
  type AuthnProvider, type AuthnStatus, type RealmHashResult,
} from './mod_authn_core.js';

const MOD = 'authn_socache';
/** authn_cache_id: the socache namespace and the mutex name. */
const CACHE_ID = 'authn-socache';
/** httpd's default AuthnCacheTimeout, seconds. */
const DEFAULT_TIMEOUT = 300;
/** MAX_VAL_LEN: a cached value must fit 255 bytes to be read back. */
const MAX_VAL_LEN = 256;

export interface AuthnSocacheDirConfig {
  /** AuthnCacheTimeout, seconds (atoi of the argument). */
  timeout: number;
  /** AuthnCacheProvideFor, in order; undefined when not set here. */
  providers: readonly string[] | undefined;
  /** AuthnCacheContext; undefined is httpd's default "directory" (never set explicitly). */
  context: string | undefined;
}

/** Module-global state, as httpd keeps it: one cache for the whole server. */
const state: {
  /** AuthnCacheEnable or AuthnCacheProvideFor was seen somewhere. */
  configured: boolean;
  spec: SocacheSpec | undefined;
  instance: SocacheInstance | null;
} = { configured: false, spec: undefined, instance: null };

export function createDirConfig(): AuthnSocacheDirConfig {
  return { timeout: DEFAULT_TIMEOUT, providers: undefined, context: undefined };
}

/** authn_cache_dircfg_merge: the subsection's values, except that a default timeout or
 *  context and unset providers take the parent's. */
export function mergeDirConfig(base: Readonly<AuthnSocacheDirConfig>, add: Readonly<AuthnSocacheDirConfig>): AuthnSocacheDirConfig {
  return {
    timeout: add.timeout === DEFAULT_TIMEOUT ? base.timeout : add.timeout,
    providers: add.providers ?? base.providers,
    context: add.context ?? base.context,
  };
}

type Cmd = CmdParms<unknown, AuthnSocacheDirConfig>;

function setSocache(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const colon = arg.indexOf(':');
  const name = colon < 0 ? arg : arg.slice(0, colon);
  const p = cmd.ctx.provider('socache', name);
  // httpd names the whole argument twice here, "name:args" included.
  if (p === undefined) return `AuthnCacheSOCache: Unknown socache provider '${arg}'. Maybe you need to load the appropriate socache module (mod_socache_${arg}?)`;
  const spec = p.create(cmd.ctx, colon < 0 ? undefined : arg.slice(colon + 1));
  if (typeof spec === 'string') return `AuthnCacheSOCache: ${spec}`;
  state.spec = spec;
  return undefined;
}

function setEnable(cmd: Cmd): string | undefined {
  state.configured = true;
  return cmd.checkContext(GLOBAL_ONLY);
}

function addProvider(cmd: Cmd, arg: string): undefined {
  cmd.dir.providers = [...(cmd.dir.providers ?? []), arg];
  state.configured = true;
  return undefined;
}

/** atoi: leading white space, a sign, digits; 0 when none. */
export function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  if (m === null) return 0;
  const n = Number(m[1]);
  // C's int wraps; keep it within 32 bits as httpd's atoi result does on glibc (saturating).
  return Math.max(-2147483648, Math.min(2147483647, n));
}

function setTimeout(cmd: Cmd, arg: string): undefined {
  cmd.dir.timeout = atoi(arg);
  return undefined;
}

function setContext(cmd: Cmd, arg: string): undefined {
  cmd.dir.context = arg;
  return undefined;
}

// ---- the cache -------------------------------------------------------------------------------

/** construct_key: "directory" is the server name plus the URI up to its last slash, "server"
 *  the server name, anything else itself; then ":user" and, for digest, ":realm". */
export function constructKey(r: Request, context: string | undefined, user: string, realm: string | undefined): Buffer {
  const host = r.server.serverHostname ?? '';
  let c: string;
  if (context === undefined || context === 'directory') {
    const slash = r.uri.lastIndexOf('/');
    c = host + (slash < 0 ? '' : r.uri.slice(0, slash));
  } else if (context === 'server') {
    c = host;
  } else {
    c = context;
  }
  return Buffer.from(realm === undefined ? `${c}:${user}` : `${c}:${user}:${realm}`, 'latin1');
}

function contextName(d: Readonly<AuthnSocacheDirConfig>): string {
  return d.context ?? 'directory';
}

/** ap_authn_cache_store: keeps a provider's hash if that provider's answers are cached here;
 *  a promise (settled once stored and logged) when it stores, nothing when it does not. */
function cacheStore(r: Request, module: string, user: string, realm: string | undefined, data: string): Promise<void> | undefined {
  const d = self.dir(r);
  const cache = state.instance;
  if (!state.configured || cache === null || d?.providers === undefined) return undefined;
  if (!d.providers.includes(module)) return undefined;
  const key = constructKey(r, d.context, user, realm);
  const expiry = Date.now() + d.timeout * 1000;
  const done = (ok: boolean): void => {
    if (ok) r.log(MOD, APLOG_DEBUG, `AH01681: Cached authn credentials for ${user} in ${contextName(d)}`, undefined, 'mod_authn_socache.c(335)');
    else r.log(MOD, APLOG_ERR, `AH01682: Failed to cache authn credentials for ${module} in ${contextName(d)}`);
  };
  return cache.store(key, expiry, Buffer.from(data, 'latin1')).then(done, () => done(false));
}

const cacheApi: AuthnCacheApi = { store: cacheStore };

/** The cached value for the key, null for a miss (logged as the caller's codes say). */
async function lookup(r: Request, key: Buffer, user: string, codes: readonly [[string, string], [string, string], string]): Promise<Buffer | null> {
  const cache = state.instance!;
  let v: Buffer | null;
  try {
    v = await cache.retrieve(key);
  } catch {
    v = null;
  }
  if (v === null) {
    r.log(MOD, APLOG_DEBUG, `${codes[0][0]}: Authn cache: no credentials found for ${user}`, undefined, codes[0][1]);
    return null;
  }
  if (v.length >= MAX_VAL_LEN) {
    // httpd's buffer is too small: the provider answers APR_ENOSPC.
    r.log(MOD, APLOG_ERR, `${codes[2]}: Error accessing authentication cache`, { code: 28, text: 'No space left on device' });
    return null;
  }
  r.log(MOD, APLOG_DEBUG, `${codes[1][0]}: Authn cache: found credentials for ${user}`, undefined, codes[1][1]);
  return v;
}

function active(r: Request): Readonly<AuthnSocacheDirConfig> | undefined {
  const d = self.dir(r);
  if (!state.configured || state.instance === null || d?.providers === undefined) return undefined;
  return d;
}

async function checkPassword(r: Request, user: string, password: Uint8Array): Promise<AuthnStatus> {
  const d = active(r);
  if (d === undefined) return AUTH_USER_NOT_FOUND;
  const v = await lookup(r, constructKey(r, d.context, user, undefined), user, [['AH01684', 'mod_authn_socache.c(382)'], ['AH01685', 'mod_authn_socache.c(388)'], 'AH01686']);
  if (v === null) return AUTH_USER_NOT_FOUND;
  // The value is read as a C string: up to its first NUL.
  const nul = v.indexOf(0);
  const hash = (nul < 0 ? v : v.subarray(0, nul)).toString('latin1');
  return passwordStatus(password, hash);
}

async function getRealmHash(r: Request, user: string, realm: string): Promise<RealmHashResult> {
  const d = active(r);
  if (d === undefined) return { status: AUTH_USER_NOT_FOUND };
  const v = await lookup(r, constructKey(r, d.context, user, realm), user, [['AH01687', 'mod_authn_socache.c(427)'], ['AH01688', 'mod_authn_socache.c(433)'], 'AH01689']);
  if (v === null) return { status: AUTH_USER_NOT_FOUND };
  return { status: AUTH_USER_FOUND, hash: v.toString('latin1') };
}

const socacheProvider: AuthnProvider = { checkPassword, getRealmHash };

// ---- startup ------------------------------------------------------------------------------

/** authn_cache_post_config (and child_init): opens the cache when something asked for it. */
async function openCache(ctx: ConfigContext): Promise<string | undefined> {
  if (!state.configured) return undefined;
  let spec = state.spec;
  if (spec === undefined) {
    // AP_SOCACHE_DEFAULT_PROVIDER, created without arguments.
    const p = ctx.provider('socache', 'shmcb');
    const made = p?.create(ctx, undefined);
    if (made === undefined) {
      ctx.logNoServer(MOD, APLOG_CRIT, 'AH01674: Please select a socache provider with AuthnCacheSOCache (no default found on this platform). Maybe you need to load mod_socache_shmcb or another socache module first');
      return 'AH00016: Configuration Failed';
    }
    if (typeof made === 'string') {
      ctx.logNoServer(MOD, APLOG_CRIT, `AH02612: failed to create mod_socache_shmcb socache instance: ${made}`);
      return 'AH00016: Configuration Failed';
    }
    spec = made;
  }
  const c = await spec.init(ctx, ctx.mainServer, CACHE_ID, { avgIdLen: 64, avgObjSize: 32, expiryInterval: 60 }, !ctx.child);
  if (typeof c === 'string') {
    ctx.logNoServer(MOD, APLOG_CRIT, `AH01677: failed to initialise ${CACHE_ID} cache`);
    return 'AH00016: Configuration Failed';
  }
  state.instance = c;
  return undefined;
}

// ---- the module -----------------------------------------------------------------------------

const providers: ProviderDecl[] = [
  { group: 'authn', name: 'socache', version: '0', provider: socacheProvider },
  { group: 'authn_cache', name: 'ap_authn_cache_store', version: '0', provider: cacheApi },
];

const self = defineModule<unknown, AuthnSocacheDirConfig>({
  name: 'authn_socache_module',
  source: 'mod_authn_socache.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: 'AuthnCacheSOCache', args: 'TAKE1', where: RSRC_CONF, help: 'socache provider for authn cache', handler: setSocache }),
    directive({ name: 'AuthnCacheEnable', args: 'NO_ARGS', where: RSRC_CONF, help: 'enable socache configuration in htaccess even if not enabled anywhere else', handler: setEnable }),
    directive({ name: 'AuthnCacheProvideFor', args: 'ITERATE', where: OR_AUTHCFG, help: 'Determine what authn providers to cache for', handler: addProvider }),
    directive({ name: 'AuthnCacheTimeout', args: 'TAKE1', where: OR_AUTHCFG, help: 'Timeout (secs) for cached credentials', handler: setTimeout }),
    directive({ name: 'AuthnCacheContext', args: 'TAKE1', where: ACCESS_CONF, help: 'Context for authn cache', handler: setContext }),
  ],
  configHooks: {
    preConfig() {
      state.configured = false;
      state.spec = undefined;
      state.instance = null;
    },
    postConfig: openCache,
    async cleanup() {
      const c = state.instance;
      state.instance = null;
      if (c !== null) await c.destroy();
    },
  },
  providers,
});

export default self;
self.decl satisfies ModuleDecl<unknown, AuthnSocacheDirConfig>;
