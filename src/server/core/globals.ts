// Server-wide settings that belong to no one server (httpd keeps them in globals):
// Listen addresses, PidFile, ServerTokens, Mutex lines, and MPM limits.

import type { ConfigContext } from '../config/context.js';
import type { ServerTokens } from './config.js';

export interface ListenSpec {
  /** Address to bind, undefined for all addresses. */
  readonly host: string | undefined;
  readonly port: number;
  readonly protocol: string;
  readonly text: string;
}

export interface Globals {
  listeners: ListenSpec[];
  listenBacklog: number;
  pidFile: string | undefined;
  runtimeDir: string | undefined;
  serverTokens: ServerTokens;
  mutexes: string[];
  gracefulShutdownTimeout: number;
  extendedStatus: boolean | undefined;
  /** SeeRequestTail: mod_status shows the last 63 characters of long request lines. */
  seeRequestTail: boolean;
  registeredMethods: Set<string>;
  /** Directives accepted for compatibility with no run-time effect in plume. */
  recorded: string[];
  /** AcceptFilter: protocol -> filter name, lower case (httpd's accf_map). */
  acceptFilters: Map<string, string>;
}

export function globals(ctx: ConfigContext): Globals {
  return ctx.getScratch<Globals>('core:globals', () => ({
    listeners: [],
    listenBacklog: 511,
    pidFile: undefined,
    runtimeDir: undefined,
    serverTokens: 'Full',
    mutexes: [],
    gracefulShutdownTimeout: 0,
    extendedStatus: undefined,
    seeRequestTail: false,
    registeredMethods: new Set(),
    recorded: [],
    acceptFilters: new Map([['http', 'data'], ['https', 'data']]),
  }));
}
