// The cache storage API (modules/cache/mod_cache.h): the "cache" provider group through which
// mod_cache finds its storage back ends by name ("disk" from mod_cache_disk, "socache" from
// mod_cache_socache), the entity a provider opens or creates, and the shared helpers a provider
// needs (the header record format of entry.ts, the Vary key). No provider imports mod_cache's
// module code, nor mod_cache a provider's.

import type { MaybePromise } from '../../../server/module.js';
import type { Request } from '../../../server/request/request.js';
import type { Brigade } from '../../../server/filters.js';
import type { HeaderTable } from '../../../server/request/headers.js';

/** The Cache-Control / Pragma tokens mod_cache acts on (httpd's cache_control_t); -1 = absent. */
export interface CacheControl {
  parsed: boolean;
  cacheControl: boolean;
  pragma: boolean;
  noCache: boolean;
  noCacheHeader: boolean;
  noStore: boolean;
  noTransform: boolean;
  maxAge: boolean;
  maxAgeValue: number;
  maxStale: boolean;
  maxStaleValue: number;
  minFresh: boolean;
  minFreshValue: number;
  mustRevalidate: boolean;
  onlyIfCached: boolean;
  public: boolean;
  private: boolean;
  privateHeader: boolean;
  proxyRevalidate: boolean;
  sMaxage: boolean;
  sMaxageValue: number;
  /** The entity was invalidated (a POST/PUT/DELETE went through): revalidate before use. */
  invalidated: boolean;
}

export function emptyControl(): CacheControl {
  return {
    parsed: false, cacheControl: false, pragma: false, noCache: false, noCacheHeader: false, noStore: false,
    noTransform: false, maxAge: false, maxAgeValue: -1, maxStale: false, maxStaleValue: -1, minFresh: false,
    minFreshValue: -1, mustRevalidate: false, onlyIfCached: false, public: false, private: false,
    privateHeader: false, proxyRevalidate: false, sMaxage: false, sMaxageValue: -1, invalidated: false,
  };
}

/** What is known of a cached response (httpd's cache_info); times in ms since the epoch,
 *  NaN where httpd has APR_DATE_BAD. */
export interface CacheInfo {
  status: number;
  date: number;
  expire: number;
  requestTime: number;
  responseTime: number;
  control: CacheControl;
}

/** An opened (or newly created) cache entity of one provider (httpd's cache_handle_t with its
 *  provider's object). openEntity returns it with its headers recalled. */
export interface CacheEntity {
  readonly key: string;
  info: CacheInfo;
  /** The cached response headers and the request headers it answered (for Vary). */
  respHdrs: HeaderTable;
  reqHdrs: HeaderTable;
  /** Writes the headers (kept until commit for a new entity). False: could not. */
  storeHeaders(r: Request, info: CacheInfo, respHdrs: HeaderTable, reqHdrs: HeaderTable): Promise<boolean>;
  /** Takes one piece of the body; false: the provider gives up on this entity. */
  storeBody(r: Request, data: Buffer): Promise<boolean>;
  /** The body ended (EOS): the provider's final checks; false: not cacheable after all. */
  endBody(r: Request): Promise<boolean>;
  /** Makes the stored entity visible to other requests (rename into place). */
  commit(r: Request): Promise<boolean>;
  /** The cached body as buckets. */
  recallBody(r: Request): MaybePromise<Brigade>;
  /** Forgets the entity without touching storage (remove_entity). */
  remove(): void;
  /** Removes the entity from storage. */
  removeUrl(r: Request): Promise<void>;
  /** Marks the stored entity invalidated (it must be revalidated before it is served). */
  invalidate(r: Request): Promise<void>;
  /** How many body bytes the save filter passes to storeBody before it sends them on
   *  (CacheReadSize; 0 = no limit) and how long it may spend (CacheReadTime, ms; 0 = none). */
  readonly readSize: number;
  readonly readTime: number;
}

/** A storage back end (httpd's cache_provider). */
export interface CacheProvider {
  /** A new entity for `key`, or null when this provider declines (size limits, no root). */
  createEntity(r: Request, key: string, size: number): Promise<CacheEntity | null>;
  /** The stored entity for `key` with its headers, or null. */
  openEntity(r: Request, key: string): Promise<CacheEntity | null>;
}

declare module '../../../server/module.js' {
  interface ProviderGroups {
    cache: CacheProvider;
  }
}

/**
 * The key of a variant: the entity key with the values of the request headers named by Vary,
 * in sorted order (httpd's regen_key), so that each variant is stored apart.
 */
export function varyKey(key: string, varyNames: readonly string[], headersIn: HeaderTable): string {
  const names = varyNames.map((n) => n.toLowerCase()).sort();
  let out = key;
  for (const n of names) {
    const v = headersIn.getAll(n);
    out += `\u0000${n}:${v.length === 0 ? '\u0001' : v.join(',')}`;
  }
  return out;
}

/** The header names of a Vary value, as mod_cache splits it. */
export function varyNames(vary: string | undefined): string[] {
  if (vary === undefined) return [];
  const out: string[] = [];
  for (const part of vary.split(',')) {
    const t = part.trim();
    if (t !== '' && !out.some((o) => o.toLowerCase() === t.toLowerCase())) out.push(t);
  }
  return out;
}
