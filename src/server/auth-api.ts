// ap_auth_type, ap_auth_name and ap_some_auth_required (httpd 2.4's server/core.c): core
// functions whose answers live in mod_authn_core and mod_authz_core. httpd reaches them through
// optional functions those modules register; here they register providers of the group
// `auth_api`, and a module that needs the answers (mod_lua's r.auth_name, mod_authz_dbm's realm)
// asks this file instead of importing another module. Without the modules loaded, every answer
// is httpd's "none": no type, no realm, no authorization required.

import type { Request } from './request/request.js';
import type { ConfigContext } from './config/context.js';

/** The part of the auth API one module answers; a missing member is answered by another. */
export interface AuthApi {
  authType?: (r: Request) => string | undefined;
  authName?: (r: Request) => string | undefined;
  someAuthRequired?: (r: Request) => boolean;
}

declare module './module.js' {
  interface ProviderGroups {
    auth_api: AuthApi;
  }
}

const byCtx = new WeakMap<ConfigContext, AuthApi>();

function apiOf(ctx: ConfigContext): AuthApi {
  let api = byCtx.get(ctx);
  if (api === undefined) {
    const merged: AuthApi = {};
    for (const n of ctx.providerNames('auth_api')) {
      const p = ctx.provider('auth_api', n);
      if (p === undefined) continue;
      merged.authType ??= p.authType;
      merged.authName ??= p.authName;
      merged.someAuthRequired ??= p.someAuthRequired;
    }
    api = merged;
    byCtx.set(ctx, api);
  }
  return api;
}

/** ap_auth_type: the AuthType in force ("None" is none). */
export function apAuthType(r: Request): string | undefined {
  const f = apiOf(r.rt.ctx).authType;
  return f === undefined ? undefined : f(r);
}

/** ap_auth_name: the realm with its double quotes escaped. */
export function apAuthName(r: Request): string | undefined {
  const f = apiOf(r.rt.ctx).authName;
  return f === undefined ? undefined : f(r);
}

/** ap_some_auth_required: whether authorization applies to the request's method. */
export function apSomeAuthRequired(r: Request): boolean {
  const f = apiOf(r.rt.ctx).someAuthRequired;
  return f === undefined ? false : f(r);
}
