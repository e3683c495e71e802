// What other modules give mod_log_config (httpd's mod_log_config.h and its optional function
// ap_register_log_handler): LogFormat items under a tag. A module declares its items as a
// provider of the group `log_items` (one provider per module, a map from tag to item), so an
// item exists only where its module is loaded: `%{SSL_PROTOCOL}x` without mod_ssl is
// "Unrecognized LogFormat directive %x", as in httpd.

import type { Request } from '../../server/request/request.js';

/** An item's text for the request; null or undefined for none (logged as "-"). */
export type LogItemFn = (r: Request, arg: string) => string | null | undefined;
/** An item whose argument is looked at once, when the format is compiled. */
export type LogItemFactory = (arg: string) => (r: Request) => string | null | undefined;

export interface LogItemHandler {
  readonly make: LogItemFactory;
  /** Whether the item looks at the original request of an internal redirect chain by default
   *  (as %s %U %T %D %r do) rather than the final one. */
  readonly wantOrigDefault: boolean;
}

/** A module's items: tags of one letter ("I") or '^' and two letters ("^FB"). */
export type LogItemSet = ReadonlyMap<string, LogItemHandler>;

declare module '../../server/module.js' {
  interface ProviderGroups {
    log_items: LogItemSet;
  }
}

/** An item computed per request from its argument. */
export function logItem(fn: LogItemFn, wantOrigDefault = false): LogItemHandler {
  return { make: (arg) => (r) => fn(r, arg), wantOrigDefault };
}

/** The request's start in microseconds since the epoch (httpd's r->request_time). Uses
 *  r.startMicros when the HTTP layer set it, else r.requestTime (ms). */
export function requestBeginMicros(r: Request): number {
  return Math.floor(r.startMicros > 0 ? r.startMicros : r.requestTime * 1000);
}
