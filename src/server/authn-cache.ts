// ap_authn_cache_store (httpd's include/mod_auth.h): the optional function mod_authn_socache
// registers and the authn providers (file, dbm) call with each password hash they looked up,
// so that the "socache" provider can answer from the cache next time. Here mod_authn_socache
// registers a provider of the group `authn_cache`; without it loaded the call costs a lookup
// once per configuration and then nothing.

import type { Request } from './request/request.js';
import type { ConfigContext } from './config/context.js';

export interface AuthnCacheApi {
  /** Caches `data` (the hash) that provider `module` found for `user` (and `realm`, digest);
   *  a promise when it stores (the caller goes on once it has, as httpd's call returns). */
  store(r: Request, module: string, user: string, realm: string | undefined, data: string): Promise<void> | undefined;
}

declare module './module.js' {
  interface ProviderGroups {
    authn_cache: AuthnCacheApi;
  }
}

const byCtx = new WeakMap<ConfigContext, AuthnCacheApi | null>();

/** AUTHN_CACHE_STORE of httpd's authn modules: hands the hash to mod_authn_socache if loaded. */
export function authnCacheStore(r: Request, module: string, user: string, realm: string | undefined, data: string): Promise<void> | undefined {
  const ctx = r.rt.ctx;
  let api = byCtx.get(ctx);
  if (api === undefined) {
    api = ctx.provider('authn_cache', 'ap_authn_cache_store') ?? null;
    byCtx.set(ctx, api);
  }
  return api === null ? undefined : api.store(r, module, user, realm, data);
}
