// Satisfy All/Any (httpd's ap_satisfies): mod_access_compat provides the answer for a
// request; without it every request is "no specification" (Satisfy All semantics).

import type { Request } from './request.js';

export type SatisfyMode = 'all' | 'any' | 'nospec';
type SatisfyFn = (r: Request) => SatisfyMode;
let provider: SatisfyFn | null = null;

/** mod_access_compat registers its Satisfy lookup here (an optional function in httpd). */
export function registerSatisfy(fn: SatisfyFn | null): void {
  provider = fn;
}

export function satisfies(r: Request): SatisfyMode {
  return provider ? provider(r) : 'nospec';
}
