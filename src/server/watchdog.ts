// The watchdog interface (httpd's mod_watchdog.h): periodic tasks of modules, run by
// mod_watchdog in the serving processes. A module finds the provider in group "watchdog"
// (name "mod_watchdog") and, in its post_config, gets a named watchdog and registers a
// callback with its interval (ap_watchdog_get_instance, ap_watchdog_register_callback), or
// joins the hook-mode watchdogs "_singleton_" / "_default_" that step at WatchdogInterval
// (httpd's watchdog_need / watchdog_init / watchdog_step / watchdog_exit hooks).

import type { ConfigContext } from './config/context.js';

/** AP_WD_TM_SLICE: the watchdog's tick, and the shortest callback interval (ms). */
export const WD_TM_SLICE = 100;
/** AP_WATCHDOG_SINGLETON, AP_WATCHDOG_DEFAULT: the hook-mode watchdogs. */
export const WATCHDOG_SINGLETON = '_singleton_';
export const WATCHDOG_DEFAULT = '_default_';

/** AP_WATCHDOG_STATE_*: a callback is called once 'starting', then 'running' each interval,
 *  and 'stopping' when the configuration generation ends. */
export type WatchdogState = 'starting' | 'running' | 'stopping';
/** A callback; a promise keeps the next call back until it settles (one call at a time). */
export type WatchdogCallback = (state: WatchdogState) => void | Promise<void>;

/** A named watchdog (ap_watchdog_t). `singleton`: it runs in one serving process only (httpd:
 *  the child holding the watchdog mutex); otherwise in each. */
export interface Watchdog {
  readonly name: string;
  readonly singleton: boolean;
}

/** A module's part in a hook-mode watchdog: init once it runs, step at WatchdogInterval. */
export interface WatchdogHooks {
  init?(): void;
  step(): void | Promise<void>;
  exit?(): void;
}

export interface WatchdogProvider {
  /** ap_watchdog_get_instance: the watchdog of that name (made on first use). `parent`
   *  watchdogs are not available with process MPMs: 'enotimpl', as httpd's forked MPMs. */
  getInstance(ctx: ConfigContext, name: string, parent: boolean, singleton: boolean): Watchdog | 'enotimpl';
  /** ap_watchdog_register_callback: 'eexist' when that callback with that data is there. */
  registerCallback(w: Watchdog, intervalMs: number, data: object, cb: WatchdogCallback): 'success' | 'eexist';
  /** ap_watchdog_set_callback_interval: 'eof' when the callback is not registered. */
  setCallbackInterval(w: Watchdog, intervalMs: number, data: object, cb: WatchdogCallback): 'success' | 'eof';
  /** watchdog_need + watchdog_init/step/exit for the hook-mode watchdog `name`. */
  needHooks(ctx: ConfigContext, name: typeof WATCHDOG_SINGLETON | typeof WATCHDOG_DEFAULT, hooks: WatchdogHooks): void;
}

declare module './module.js' {
  interface ProviderGroups {
    watchdog: WatchdogProvider;
  }
}
