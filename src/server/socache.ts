// The small-object cache provider interface (httpd's ap_socache.h): a store of short binary
// objects keyed by short binary ids, each with an expiry time, that a module (mod_ssl's
// session cache, later mod_auth_digest's nonces, mod_cache_socache, RewriteMap caches) finds
// by name in the provider registry, group "socache": "shmcb", "dbm", "memcache", "redis".
//
// A provider parses its argument once per configuration (create: the text after "name:" in
// `SSLSessionCache shmcb:/path(512000)`), then each serving process opens an instance (init).
// Every call is asynchronous and bounded in time; a cache that cannot answer (a server gone,
// a file unreadable) answers as a miss and logs, never throws: the caller then does without.

import type { ConfigContext } from './config/context.js';
import type { ServerRec } from './server-rec.js';
import type { MaybePromise } from './module.js';
import type { Request } from './request/request.js';
import type { StatusWriter } from './status-hook.js';

/** What the user of a cache tells the provider about the objects (ap_socache_hints). */
export interface SocacheHints {
  /** Typical and largest id length, bytes. */
  readonly avgIdLen: number;
  /** Typical object size, bytes. */
  readonly avgObjSize: number;
  /** Typical lifetime of an object, seconds. */
  readonly expiryInterval: number;
}

/** An opened cache. `expiry` is an absolute time in ms since the epoch. */
export interface SocacheInstance {
  store(id: Buffer, expiry: number, data: Buffer): Promise<boolean>;
  /** The object, or null when absent, expired or the cache could not be read. */
  retrieve(id: Buffer): Promise<Buffer | null>;
  remove(id: Buffer): Promise<void>;
  /**
   * The provider's part of the server-status page (ap_socache_provider_t's status), called
   * by the cache's user from its status hook: HTML, or with AP_STATUS_SHORT in `flags` the
   * ?auto form's "Key: value" lines, worded as the httpd provider words them.
   */
  status(r: Request, flags: number, put: StatusWriter): MaybePromise<void>;
  /** Releases files and connections (the configuration generation ends). */
  destroy(): Promise<void>;
}

/** A parsed cache argument, ready to be opened in each process. */
export interface SocacheSpec {
  /** The provider's name ("shmcb"). */
  readonly provider: string;
  /**
   * Opens the cache. `create`: this process sets the cache up for a new configuration
   * generation (the parent, or the single -X process: a shmcb file is made afresh); false in
   * the worker processes, which attach to what the parent made. `namespace` keeps the users of
   * one cache server apart ("mod_ssl-sess").
   */
  init(ctx: ConfigContext, s: ServerRec, namespace: string, hints: SocacheHints, create: boolean): Promise<SocacheInstance | string>;
}

export interface SocacheProvider {
  /** Parses the argument after "name:" (undefined when there was no colon); an error text
   *  worded as httpd words it, or the spec. */
  create(ctx: ConfigContext, arg: string | undefined): SocacheSpec | string;
}

declare module './module.js' {
  interface ProviderGroups {
    socache: SocacheProvider;
  }
}
