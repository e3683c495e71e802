// The status hook (httpd's optional hook "status_hook" of mod_status.h): mod_status calls it
// while writing the server-status page, after the scoreboard and the per-slot table and before
// the signature, so that other modules add their own sections (mod_proxy's "Proxy LoadBalancer
// Status"). A module offers it as a provider in the group "status_hook"; mod_status runs every
// one in module load order. Neither side imports the other: both meet here.

import type { ConfigContext } from './config/context.js';
import type { Request } from './request/request.js';
import type { MaybePromise } from './module.js';

/** AP_STATUS_SHORT: the ?auto form (plain "Key: value" lines, no HTML). */
export const AP_STATUS_SHORT = 0x1;
/** AP_STATUS_NOTABLE: ?notable (no tables in the page). */
export const AP_STATUS_NOTABLE = 0x2;
/** AP_STATUS_EXTENDED: ExtendedStatus is on. */
export const AP_STATUS_EXTENDED = 0x4;

/** What a status hook writes with (ap_rputs on the status page, in order with the rest). */
export type StatusWriter = (text: string) => void;

export interface StatusHookProvider {
  /** Adds this module's part of the page for request `r`; `flags` holds AP_STATUS_* bits. A
   *  section that asks a server first (a memcached's statistics) returns a promise. */
  status(r: Request, flags: number, put: StatusWriter): MaybePromise<void>;
}

declare module './module.js' {
  interface ProviderGroups {
    status_hook: StatusHookProvider;
  }
}

const byContext = new WeakMap<ConfigContext, readonly StatusHookProvider[]>();

/** The status hooks of a configuration, in module load order (looked up once per configuration). */
export function statusHooks(ctx: ConfigContext): readonly StatusHookProvider[] {
  let hooks = byContext.get(ctx);
  if (hooks === undefined) {
    hooks = ctx.providerNames('status_hook').map((n) => ctx.provider('status_hook', n)!);
    byContext.set(ctx, hooks);
  }
  return hooks;
}

/** ap_run_status_hook: every module's section, in order (one after the other when a section
 *  waits for something); synchronous while every section is. */
export function runStatusHooks(r: Request, flags: number, put: StatusWriter, from = 0): MaybePromise<void> {
  const hooks = statusHooks(r.rt.ctx);
  for (let i = from; i < hooks.length; i++) {
    const w = hooks[i]!.status(r, flags, put);
    if (w instanceof Promise) return w.then(() => runStatusHooks(r, flags, put, i + 1));
  }
  return undefined;
}
