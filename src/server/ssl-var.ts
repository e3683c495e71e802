// ap_ssl_var_lookup (httpd 2.4's server/ssl.c): the core asks whichever loaded module runs TLS
// for a connection's SSL_* variable. mod_ssl answers as a provider of the group
// `ssl_var_lookup`; without one every lookup is undefined (mod_headers' %{VAR}s gives "(null)").

import type { Request } from './request/request.js';
import type { ConfigContext } from './config/context.js';

/** A module's answer for a request's SSL variable; undefined when it has none. */
export type SslVarLookup = (r: Request, name: string) => string | undefined;

declare module './module.js' {
  interface ProviderGroups {
    ssl_var_lookup: SslVarLookup;
  }
}

const byCtx = new WeakMap<ConfigContext, readonly SslVarLookup[]>();

function lookupsOf(ctx: ConfigContext): readonly SslVarLookup[] {
  let list = byCtx.get(ctx);
  if (list === undefined) {
    list = ctx.providerNames('ssl_var_lookup').map((n) => ctx.provider('ssl_var_lookup', n)).filter((f): f is SslVarLookup => f !== undefined);
    byCtx.set(ctx, list);
  }
  return list;
}

/** The variable's value from the first provider that has one. */
export function sslVarLookup(r: Request, name: string): string | undefined {
  for (const f of lookupsOf(r.rt.ctx)) {
    const v = f(r, name);
    if (v !== undefined) return v;
  }
  return undefined;
}
