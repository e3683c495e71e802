// mod_cache (modules/cache/mod_cache.c, cache_storage.c, cache_util.c): an RFC 7234 HTTP cache
// in front of the server's own content or a proxy's. By default it answers in the quick
// handler (before the request's phases: CacheQuickHandler On); with CacheQuickHandler Off it is
// a handler, and the CACHE filter marks where in the chain it saves and serves. Storage is a
// provider of the "cache" group found by name (mod_cache_disk's "disk", mod_cache_socache's
// "socache"); see api.ts.

import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  defineModule, directive, MODULE_API_VERSION, DECLINED, OK, HOOK_FIRST, HOOK_REALLY_FIRST, RSRC_CONF, ACCESS_CONF,
  type MaybePromise,
} from '../../../server/module.js';
import type { Request } from '../../../server/request/request.js';
import { HeaderTable } from '../../../server/request/headers.js';
import {
  EOS, FLUSH, FTYPE_CONTENT_SET, FTYPE_PROTOCOL, FTYPE_RESOURCE, bucketPieces, endsResponse,
  type Brigade, type Bucket, type FilterInstance, type FilterSpec,
} from '../../../server/filters.js';
import { runVoid } from '../../../server/hooks.js';
import {
  AP_CONDITION_NOMATCH, conditionIfMatch, conditionIfModifiedSince, conditionIfNoneMatch, conditionIfRange,
  conditionIfUnmodifiedSince, meetsConditions,
} from '../../../server/http/conditional.js';
import { makeContentType } from '../../../server/http/response.js';
import { parseHttpDate } from '../../../server/log/time.js';
import { httpScheme } from '../../../server/core/server-name.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_WARNING } from '../../../server/log/levels.js';
import { emptyControl, varyNames, type CacheControl, type CacheEntity, type CacheInfo, type CacheProvider } from './api.js';
import { checkFreshness, computeExpiry, controlledHeaders, generateName, parseControl, tokenize } from './control.js';
import {
  addCacheDisable, addCacheEnable, addIgnoreHeader, addIgnoreSessionId, createDirConfig, createServerConfig, defaultLockPath,
  mergeDirConfig, mergeServerConfig, parseUrl, setFactor, setHeaderFlag, setKeyBaseUrl, setLockMaxAge, setLockPath,
  setSeconds, uriMeetsConditions, DEFAULT_CACHE_EXPIRE, DEFAULT_CACHE_LMFACTOR, DEFAULT_CACHE_MAXAGE, DEFAULT_CACHE_MAXEXPIRE,
  DEFAULT_CACHE_MINEXPIRE, type CacheDir, type CacheServer, type UrlParts,
} from './config.js';

const MOD = 'cache';

/** Entity headers a 304 must not change (MOD_CACHE_ENTITY_HEADERS). */
const ENTITY_HEADERS = ['Allow', 'Content-Encoding', 'Content-Language', 'Content-Length', 'Content-Location', 'Content-MD5', 'Content-Range', 'Content-Type', 'Last-Modified'];

type Status = 'HIT' | 'MISS' | 'REVALIDATE' | 'INVALIDATE';

/** The per-request state (httpd's cache_request_rec). */
interface CacheReq {
  readonly providers: readonly { readonly name: string; readonly provider: CacheProvider }[];
  key: string | undefined;
  handle: CacheEntity | null;
  staleHandle: CacheEntity | null;
  staleHeaders: HeaderTable | null;
  providerName: string | undefined;
  controlIn: CacheControl;
  inChecked: boolean;
  blockResponse: boolean;
  size: number;
  saveFilter: FilterInstance<SaveState> | null;
  removeUrlFilter: FilterInstance<CacheReq> | null;
  /** The save filter serves the stale entity instead (CacheStaleOnError). */
  serveStale: boolean;
  lockName: string | undefined;
  lockHeld: boolean;
}

interface SaveState {
  cache: CacheReq;
  /** Buckets stored but not yet passed on (CacheReadSize / CacheReadTime). */
  out: Bucket[];
  stored: number;
  since: number;
}

const requestCache = new WeakMap<Request, CacheReq>();

function srv(r: Request): Readonly<CacheServer> {
  return self.server(r.server);
}
function dir(r: Request): Readonly<CacheDir> {
  return self.dir(r);
}

// ---- which providers, which key ----------------------------------------------------------

/** The request URL as the quick handler sees it (r->parsed_uri): the raw path and query. */
function parsedUri(r: Request): UrlParts {
  const u = parseUrl(r.unparsedUri);
  if (u !== undefined) return u;
  return { scheme: undefined, hostname: undefined, portStr: undefined, path: r.uri, query: r.args };
}

/** cache_use_early_url: a forward proxy request or the quick handler use the URL as sent. */
function useEarlyUrl(r: Request): boolean {
  return r.proxyreq === 1 || srv(r).quick !== false;
}

/** cache_get_providers: the storage providers CacheEnable names for this URL, or null. */
function getProviders(r: Request): CacheReq['providers'] | null {
  const d = dir(r);
  if (d.disable === true) return null;
  const conf = srv(r);
  // Nothing enabled anywhere: decided without looking at the URL (the common request).
  if (d.enable.length === 0 && conf.enable.length === 0) return null;
  const parsed = parsedUri(r);
  const p = useEarlyUrl(r) ? parsed.path : r.uri;
  for (const ent of conf.disable) if (uriMeetsConditions(ent, parsed, p)) return null;
  const out: { name: string; provider: CacheProvider }[] = [];
  const add = (type: string): void => {
    const provider = r.rt.ctx.provider('cache', type);
    if (provider === undefined) return;
    if (!out.some((o) => o.provider === provider)) out.push({ name: type, provider });
  };
  for (const ent of d.enable) add(ent.type);
  for (const ent of conf.enable) if (uriMeetsConditions(ent, parsed, p)) add(ent.type);
  return out.length ? out : null;
}

function newCacheReq(providers: CacheReq['providers']): CacheReq {
  return {
    providers, key: undefined, handle: null, staleHandle: null, staleHeaders: null, providerName: undefined,
    controlIn: emptyControl(), inChecked: false, blockResponse: false, size: -1, saveFilter: null, removeUrlFilter: null,
    serveStale: false, lockName: undefined, lockHeld: false,
  };
}

/** cache_canonicalise_key: scheme://host:port/path?query, the session identifiers taken out. */
function canonicaliseKey(r: Request, p: string, query: string | undefined, parsed: UrlParts): string {
  const conf = srv(r);
  const base = conf.baseUri;
  let hostname: string;
  if (r.proxyreq === 0 || r.proxyreq === 2) {
    hostname = base?.hostname ?? (r.rt.serverName(r) || '_default_');
  } else {
    hostname = parsed.hostname !== undefined ? parsed.hostname.toLowerCase() : '_default_';
  }
  let scheme: string;
  if (r.proxyreq !== 0 && parsed.scheme !== undefined) scheme = parsed.scheme.toLowerCase();
  else scheme = base?.scheme ?? (isHttps(r) ? 'https' : httpScheme(r));
  let port: string;
  if (r.proxyreq !== 0 && r.proxyreq !== 2) {
    if (parsed.portStr !== undefined) port = ':' + parsed.portStr.toLowerCase();
    else port = ':80';
  } else if (base?.portStr !== undefined) port = ':' + base.portStr;
  else if (base?.hostname !== undefined) port = '';
  else port = ':' + r.rt.serverPort(r);
  let kpath = p;
  let kquery = conf.ignoreQueryString ? undefined : query;
  for (const id of conf.ignoreSessionId ?? []) {
    const semi = kpath.lastIndexOf(';');
    if (semi >= 0 && kpath.startsWith(id, semi + 1) && kpath[semi + 1 + id.length] === '=' && !kpath.slice(semi + id.length + 2).includes('/')) {
      kpath = kpath.slice(0, semi);
      continue;
    }
    if (kquery !== undefined && kquery !== '') {
      let at = -1;
      if (kquery.startsWith(id) && kquery[id.length] === '=') at = 0;
      else {
        const i = kquery.indexOf(`&${id}=`);
        if (i >= 0) at = i + 1;
      }
      if (at >= 0) {
        let q = at > 0 ? kquery.slice(0, at) : '';
        const amp = kquery.indexOf('&', at + id.length + 1);
        if (amp >= 0) q += kquery.slice(amp + 1);
        else if (at > 0) q = q.slice(0, -1);
        kquery = q;
      }
    }
  }
  const key = `${scheme}://${hostname}${port}${kpath}?${kquery ?? ''}`;
  if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH00698: cache: Key for entity ${p}?${query ?? '(null)'} is ${key}`);
  return key;
}

function isHttps(r: Request): boolean {
  return r.subprocessEnv.get('HTTPS') === 'on';
}

function generateKey(r: Request): string {
  const parsed = parsedUri(r);
  if (useEarlyUrl(r)) return canonicaliseKey(r, parsed.path ?? '', parsed.query, parsed);
  return canonicaliseKey(r, r.uri, r.args, parsed);
}

// ---- request checks ---------------------------------------------------------------------------

/** cache_table_getm: every value of a header joined with ','. */
function getm(t: HeaderTable, name: string): string | undefined {
  const v = t.getAll(name);
  return v.length === 0 ? undefined : v.join(',');
}

function controlIn(cache: CacheReq, r: Request): CacheControl {
  if (!cache.controlIn.parsed) parseControl(getm(r.headersIn, 'Cache-Control'), getm(r.headersIn, 'Pragma'), cache.controlIn);
  return cache.controlIn;
}

/** ap_cache_check_no_store. */
function checkNoStore(cache: CacheReq, r: Request): boolean {
  if (!controlIn(cache, r).noStore) return true;
  if (!srv(r).ignoreCacheControl) return false;
  r.log(MOD, APLOG_INFO, `AH02658: Incoming request is asking for a no-store version of ${r.unparsedUri}, but we have been configured to ignore it and serve cached content anyway`);
  return true;
}

/** ap_cache_check_no_cache. */
function checkNoCache(cache: CacheReq, r: Request): boolean {
  if (!controlIn(cache, r).noCache) return true;
  if (!srv(r).ignoreCacheControl) return false;
  r.log(MOD, APLOG_INFO, `AH02657: Incoming request is asking for an uncached version of ${r.unparsedUri}, but we have been configured to ignore it and serve cached content anyway`);
  return true;
}

// ---- the thundering-herd lock ---------------------------------------------------------------

function lockPath(r: Request): string {
  return srv(r).lockPath ?? defaultLockPath();
}

/** cache_try_lock: 'ok' (we go to the backend), 'locked' (another request is on it), 'error'. */
function tryLock(cache: CacheReq, r: Request): 'ok' | 'locked' | 'error' {
  const conf = srv(r);
  if (!conf.lock) return 'ok';
  if (cache.lockHeld) return 'ok';
  if (cache.key === undefined) cache.key = (cache.handle ?? cache.staleHandle)?.key ?? generateKey(r);
  const name = generateName(cache.key, 0, 0);
  const dirName = path.join(lockPath(r), name[0]!, name[1]!);
  try {
    fs.mkdirSync(dirName, { recursive: true, mode: 0o700 });
  } catch (e) {
    r.log(MOD, APLOG_ERR, `AH00778: Could not create a cache lock directory: ${dirName}`, r.rt.errno(e as NodeJS.ErrnoException));
    return 'error';
  }
  const file = path.join(dirName, name);
  cache.lockName = file;
  try {
    const st = fs.statSync(file);
    const now = Date.now();
    if (now - st.mtimeMs > (conf.lockMaxAge ?? DEFAULT_CACHE_MAXAGE * 1000) || now < st.mtimeMs) {
      r.log(MOD, APLOG_INFO, `AH00780: Cache lock file for '${r.uri}' too old, removing: ${file}`);
      fs.rmSync(file, { force: true });
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      r.log(MOD, APLOG_ERR, `AH00779: Could not stat a cache lock file: ${file}`, r.rt.errno(e as NodeJS.ErrnoException));
      return 'error';
    }
  }
  try {
    fs.closeSync(fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600));
    cache.lockHeld = true;
    return 'ok';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EEXIST' ? 'locked' : 'error';
  }
}

/** cache_remove_lock; with a brigade, only once it carries EOS. */
function removeLock(cache: CacheReq, r: Request, bb?: Brigade): void {
  if (!srv(r).lock) return;
  if (bb !== undefined && !endsResponse(bb)) return;
  let file = cache.lockName;
  if (file === undefined) {
    if (cache.key === undefined) cache.key = generateKey(r);
    const name = generateName(cache.key, 0, 0);
    file = path.join(lockPath(r), name[0]!, name[1]!, name);
  }
  cache.lockHeld = false;
  try { fs.rmSync(file, { force: true }); } catch { /* gone already */ }
}

// ---- selecting a cached entity ----------------------------------------------------------------

async function freshEnough(h: CacheEntity, cache: CacheReq, r: Request): Promise<boolean> {
  const conf = srv(r);
  // The request's Cache-Control is read again here (httpd parses into the same struct).
  const res = checkFreshness({
    info: h.info, ageHeader: h.respHdrs.get('Age'), hasExpires: h.respHdrs.has('Expires'), warning: h.respHdrs.get('Warning'),
    controlIn: controlIn(cache, r), ignoreCacheControl: conf.ignoreCacheControl === true, now: r.requestTime,
  });
  if (cache.controlIn.noCache && conf.ignoreCacheControl) {
    r.log(MOD, APLOG_INFO, `AH00781: Incoming request is asking for a uncached version of ${r.unparsedUri}, but we have been configured to ignore it and serve a cached response anyway`);
  }
  if (res.fresh) {
    h.respHdrs.set('Age', String(res.age));
    for (const w of res.warnings) h.respHdrs.merge('Warning', w);
    return true;
  }
  if (cache.controlIn.noCache && !conf.ignoreCacheControl) return false;
  if (h.info.control.noCache || h.info.control.invalidated) return false;
  const lock = tryLock(cache, r);
  if (lock === 'ok') {
    r.log(MOD, APLOG_DEBUG, `AH00782: Cache lock obtained for stale cached URL, revalidating entry: ${r.unparsedUri}`);
    return false;
  }
  if (lock === 'locked') {
    r.log(MOD, APLOG_DEBUG, `AH00783: Cache already locked for stale cached URL, pretend it is fresh: ${r.unparsedUri}`);
    // httpd 2.4 adds the warning only beside another one (warn_head != NULL).
    const w = h.respHdrs.get('Warning');
    if (w !== undefined && !w.includes('110')) h.respHdrs.merge('Warning', '110 Response is stale');
    return true;
  }
  r.log(MOD, APLOG_DEBUG, `AH00784: Attempt to obtain a cache lock for stale cached URL failed, revalidating entry anyway: ${r.unparsedUri}`);
  return false;
}

/** cache_accept_headers: the cached headers (`top`) over `bottom` become r's headers_out. */
function acceptHeaders(r: Request, top: HeaderTable, bottom: HeaderTable, revalidation: boolean): void {
  if (revalidation) {
    const t = new HeaderTable();
    bottom.forEach((n, v) => { if (!(n.toLowerCase() === 'warning' && v[0] === '1')) t.add(n, v); });
    r.headersOut = t;
  } else if (r.headersOut !== bottom) {
    r.headersOut = bottom.copy();
  }
  top.forEach((n) => { if (n.toLowerCase() !== 'warning') r.headersOut.unset(n); });
  top.forEach((n, v) => r.headersOut.add(n, v));
  const ct = r.headersOut.get('Content-Type');
  if (ct !== undefined) {
    r.contentType = ct;
    r.headersOut.unset('Content-Type');
    r.errHeadersOut.unset('Content-Type');
  }
  const lm = r.headersOut.get('Last-Modified');
  if (lm !== undefined) {
    const t = parseHttpDate(lm);
    if (!Number.isNaN(t) && t > r.mtime) r.mtime = t;
  }
}

/** cache_select: OK with cache.handle (fresh), DECLINED (none, or stale: conditional headers
 *  added for revalidation), or 504 for only-if-cached. */
async function cacheSelect(cache: CacheReq, r: Request): Promise<number> {
  if (!checkNoCache(cache, r)) return DECLINED;
  if (cache.key === undefined) cache.key = generateKey(r);
  for (const { name, provider } of cache.providers) {
    const h = await provider.openEntity(r, cache.key);
    if (h === null) continue;
    let mismatch = false;
    for (const token of tokenize(getm(h.respHdrs, 'Vary') ?? '')) {
      const h1 = getm(r.headersIn, token);
      const h2 = getm(h.reqHdrs, token);
      if (h1 !== h2) {
        r.log(MOD, APLOG_DEBUG, 'AH00694: cache_select(): Vary header mismatch.');
        mismatch = true;
        break;
      }
    }
    if (mismatch) continue;
    cache.providerName = name;
    if (conditionIfMatch(r, h.respHdrs) === AP_CONDITION_NOMATCH
      || conditionIfUnmodifiedSince(r, h.respHdrs) === AP_CONDITION_NOMATCH
      || conditionIfNoneMatch(r, h.respHdrs) === AP_CONDITION_NOMATCH
      || conditionIfModifiedSince(r, h.respHdrs) === AP_CONDITION_NOMATCH
      || conditionIfRange(r, h.respHdrs) === AP_CONDITION_NOMATCH) {
      mismatch = true;
    }
    if (mismatch || !(await freshEnough(h, cache, r))) {
      if (cache.controlIn.onlyIfCached) continue;
      cache.staleHeaders = r.headersIn.copy();
      cache.staleHandle = h;
      if (!mismatch) {
        r.log(MOD, APLOG_DEBUG, `AH00695: Cached response for ${r.uri} isn't fresh. Adding conditional request headers.`);
        for (const c of ['If-Match', 'If-Modified-Since', 'If-None-Match', 'If-Range', 'If-Unmodified-Since']) r.headersIn.unset(c);
        const etag = h.respHdrs.get('ETag');
        const lastmod = h.respHdrs.get('Last-Modified');
        if (etag !== undefined || lastmod !== undefined) {
          if (etag !== undefined) r.headersIn.set('If-None-Match', etag);
          if (lastmod !== undefined) r.headersIn.set('If-Modified-Since', lastmod);
          r.headersIn.unset('Range');
        }
      }
      return DECLINED;
    }
    acceptHeaders(r, h.respHdrs, r.headersOut, false);
    cache.handle = h;
    return OK;
  }
  if (cache.controlIn.onlyIfCached) {
    r.log(MOD, APLOG_DEBUG, `AH00696: cache: 'only-if-cached' requested and no cached entity, returning 504 Gateway Timeout for: ${r.uri}`);
    return 504;
  }
  return DECLINED;
}

async function removeUrl(cache: CacheReq, r: Request): Promise<void> {
  const h = cache.staleHandle ?? cache.handle;
  if (h === null) return;
  r.log(MOD, APLOG_DEBUG, `AH00691: cache: Removing url ${h.key} from the cache`);
  await h.removeUrl(r);
}

/** cache_invalidate: marks the entity of the URL (and of Location / Content-Location on the
 *  same host) invalidated in every provider. */
async function invalidate(cache: CacheReq, r: Request): Promise<void> {
  if (cache.key === undefined) cache.key = generateKey(r);
  const parsed = parsedUri(r);
  const keyOf = (v: string | undefined): string | undefined => {
    if (v === undefined) return undefined;
    const u = parseUrl(v);
    if (u === undefined || parsed.hostname === undefined || u.hostname === undefined || parsed.hostname !== u.hostname) return undefined;
    return canonicaliseKey(r, u.path ?? '', u.query, u);
  };
  const keys = [cache.key, keyOf(r.headersOut.get('Location')), keyOf(r.headersOut.get('Content-Location'))];
  for (const { provider } of cache.providers) {
    for (const k of keys) {
      if (k === undefined) continue;
      const h = await provider.openEntity(r, k);
      if (h !== null) await h.invalidate(r);
      r.log(MOD, APLOG_DEBUG, `AH02468: cache: Attempted to invalidate cached entity with key: ${k}`);
    }
  }
}

// ---- the status (X-Cache, the environment) ---------------------------------------------------

/** cache_status: cache-hit / cache-miss / cache-revalidate / cache-invalidate and cache-status
 *  in the environment; X-Cache and X-Cache-Detail when asked for. */
function cacheStatus(r: Request, headers: HeaderTable, status: Status, reason: string): void {
  r.subprocessEnv.set(`cache-${status.toLowerCase()}`, reason);
  r.subprocessEnv.set('cache-status', reason);
  const d = dir(r);
  const conf = srv(r);
  const host = r.server.serverHostname ?? '';
  if (d.xCache ?? conf.xCache) headers.set('X-Cache', `${status} from ${host}`);
  if (d.xCacheDetail ?? conf.xCacheDetail) headers.set('X-Cache-Detail', `"${reason}" from ${host}`);
}

// ---- the filters --------------------------------------------------------------------------------

/** Puts `f` where the last CACHE marker filter is (cache_replace_filter); true when there was one. */
function replaceMarker(r: Request, f: FilterInstance): boolean {
  const chain = r.outputFilters;
  let from = -1;
  for (let i = 0; i < chain.length; i++) if (chain[i]!.spec === cacheFilter && !chain[i]!.removed) from = i;
  if (from < 0) return false;
  const at = chain.indexOf(f);
  if (at < 0) return false;
  chain.splice(at, 1);
  const idx = at < from ? from - 1 : from;
  chain.splice(idx, 1, f);
  return true;
}

/** CACHE_OUT: throws away what the handler made, and sends the cached response instead. */
function cacheOutFilter(f: FilterInstance<CacheReq | null>, bb: Brigade): ReturnType<FilterSpec['filter']> {
  const r = f.r;
  const cache = f.state;
  if (cache === null || cache.handle === null) {
    r.log(MOD, APLOG_ERR, 'AH00762: CACHE/CACHE_OUT filter enabled while caching is disabled, ignoring');
    f.remove();
    return f.pass(bb);
  }
  r.log(MOD, APLOG_DEBUG, 'AH00763: cache: running CACHE_OUT filter');
  const eos = bb.findIndex((b) => b.kind === 'eos');
  if (eos < 0) return;
  const h = cache.handle;
  const ct = h.respHdrs.get('Content-Type');
  if (ct !== undefined) r.contentType = ct;
  r.status = h.info.status;
  f.remove();
  r.log(MOD, APLOG_DEBUG, `AH00764: cache: serving ${r.uri}`);
  const body = h.recallBody(r);
  const rest = bb.slice(eos);
  return body instanceof Promise ? body.then((b) => f.pass([...b, ...rest])) : f.pass([...body, ...rest]);
}

const cacheOutSpec: FilterSpec<CacheReq | null> = { name: 'CACHE_OUT', type: FTYPE_CONTENT_SET - 1, init: () => null, filter: cacheOutFilter };
const cacheOutSubreqSpec: FilterSpec<CacheReq | null> = { name: 'CACHE_OUT_SUBREQ', type: FTYPE_CONTENT_SET - 1, init: () => null, filter: cacheOutFilter };

/** CACHE_REMOVE_URL: still in the chain at the end means the stale entity is to go. */
/** httpd inserts HTTP_HEADER when it reads the request, so the cache's protocol filters come
 *  after it (what they set in headers_out is not sent); plume's is FTYPE_PROTOCOL + 5, added
 *  when the response starts. */
const AFTER_HTTP_HEADER = FTYPE_PROTOCOL + 6;

const removeUrlSpec: FilterSpec<CacheReq | null> = {
  name: 'CACHE_REMOVE_URL',
  type: AFTER_HTTP_HEADER,
  init: () => null,
  filter(f, bb) {
    const cache = f.state;
    f.remove();
    if (cache === null) {
      f.r.log(MOD, APLOG_DEBUG, 'AH00775: cache: CACHE_REMOVE_URL enabled unexpectedly');
      return f.pass(bb);
    }
    return removeUrl(cache, f.r).then(() => f.pass(bb));
  },
};

/** CACHE_INVALIDATE: a successful PUT/POST/DELETE invalidates the cached entity. */
const invalidateSpec: FilterSpec<CacheReq | null> = {
  name: 'CACHE_INVALIDATE',
  type: AFTER_HTTP_HEADER,
  init: () => null,
  filter(f, bb) {
    const r = f.r;
    const cache = f.state;
    f.remove();
    if (cache === null) {
      r.log(MOD, APLOG_DEBUG, `AH02465: cache: CACHE_INVALIDATE enabled unexpectedly: ${r.uri}`);
      return f.pass(bb);
    }
    if (r.status > 299) {
      r.log(MOD, APLOG_DEBUG, `AH02466: cache: response status to '${r.method}' method is ${r.status} (>299), not invalidating cached entity: ${r.uri}`);
      return f.pass(bb);
    }
    r.log(MOD, APLOG_DEBUG, `AH02467: cache: Invalidating all cached entities in response to '${r.method}' request for ${r.uri}`);
    return invalidate(cache, r).then(() => {
      cacheStatus(r, r.headersOut, 'INVALIDATE', `cache invalidated by ${r.method}`);
      return f.pass(bb);
    });
  },
};

/** CACHE: a marker the operator places (SetOutputFilter CACHE) for CacheQuickHandler Off. */
const cacheFilter: FilterSpec<null> = {
  name: 'CACHE',
  type: FTYPE_RESOURCE,
  init: () => null,
  filter(f, bb) {
    const r = f.r;
    if (srv(r).quick !== false) {
      r.log(MOD, APLOG_WARNING, `AH00776: cache: CACHE filter was added in quick handler mode and will be ignored: ${r.unparsedUri}`);
    } else {
      r.log(MOD, APLOG_DEBUG, `AH00777: cache: CACHE filter was added twice, or was added where the cache has been bypassed and will be ignored: ${r.unparsedUri}`);
    }
    f.remove();
    return f.pass(bb);
  },
};

/** headers_out with err_headers_out over it, Content-Type and Content-Encoding filled in
 *  (cache_merge_headers_out). */
function mergeHeadersOut(r: Request): HeaderTable {
  const t = r.headersOut.overlay(r.errHeadersOut);
  if (r.contentType !== undefined && !t.has('Content-Type')) {
    const ct = makeContentType(r);
    if (ct !== undefined) t.set('Content-Type', ct);
  }
  if (r.contentEncoding !== undefined && !t.has('Content-Encoding')) t.set('Content-Encoding', r.contentEncoding);
  return t;
}

const HOP_BY_HOP = ['Connection', 'Keep-Alive', 'Proxy-Authenticate', 'Proxy-Authorization', 'TE', 'Trailers', 'Transfer-Encoding', 'Upgrade'];

/** ap_cache_cacheable_headers: hop-by-hop headers and CacheIgnoreHeaders taken out. */
function cacheableHeaders(t: HeaderTable, conf: Readonly<CacheServer>): HeaderTable {
  const out = t.copy();
  for (const h of HOP_BY_HOP) out.unset(h);
  for (const h of conf.ignoreHeaders ?? []) out.unset(h);
  return out;
}

function cacheableHeadersOut(r: Request): HeaderTable {
  const out = cacheableHeaders(mergeHeadersOut(r), srv(r));
  for (const h of controlledHeaders(getm(out, 'Cache-Control'))) out.unset(h);
  return out;
}

/** ap_find_token: `tok` among the tokens of a header value (case-insensitive). */
function findToken(value: string | undefined, tok: string): boolean {
  if (value === undefined) return false;
  return value.split(/[^!#$%&'*+\-.^_`|~0-9A-Za-z]+/).some((t) => t.toLowerCase() === tok);
}

function get2(r: Request, name: string): string | undefined {
  return r.errHeadersOut.get(name) ?? r.headersOut.get(name);
}

function badDate(s: string | undefined): number {
  if (s === undefined) return NaN;
  const t = parseHttpDate(s);
  // apr_date_parse_http answers 0 (APR_DATE_BAD) for the epoch itself too.
  return Number.isNaN(t) || t === 0 ? NaN : Math.floor(t / 1000) * 1000;
}

/** The save filter's decision on the first brigade (cache_save_filter's set-up half). */
async function saveSetup(f: FilterInstance<SaveState>, bb: Brigade): Promise<void> {
  const r = f.r;
  const st = f.state;
  const cache = st.cache;
  const conf = srv(r);
  const d = dir(r);
  if ((d.staleOnError ?? true) && r.status >= 500) {
    cache.removeUrlFilter?.remove();
    const sh = cache.staleHandle;
    if (sh !== null && !sh.info.control.mustRevalidate && !sh.info.control.proxyRevalidate) {
      cache.handle = sh;
      cache.serveStale = true;
      r.headersOut = sh.respHdrs;
      const ct = sh.respHdrs.get('Content-Type');
      if (ct !== undefined) r.contentType = ct;
      const w = r.errHeadersOut.get('Warning');
      if (w === undefined || !w.includes('111')) r.errHeadersOut.merge('Warning', '111 Revalidation failed');
      cacheStatus(r, r.headersOut, 'HIT', `cache hit: ${r.status} status; stale content returned`);
      removeLock(cache, r);
      return serveStaleOut(f, bb);
    }
  }
  const query = useEarlyUrl(r) ? parsedUri(r).query : r.args;
  const exps = get2(r, 'Expires');
  let exp = exps !== undefined ? badDate(exps) : NaN;
  let lastmods = get2(r, 'Last-Modified');
  let lastmod = NaN;
  if (lastmods !== undefined) {
    lastmod = badDate(lastmods);
    if (Number.isNaN(lastmod)) lastmods = undefined;
  }
  const etag = get2(r, 'Etag');
  let ccOut = getm(r.errHeadersOut, 'Cache-Control');
  let pragma = getm(r.errHeadersOut, 'Pragma');
  if (ccOut === undefined && pragma === undefined) {
    ccOut = getm(r.headersOut, 'Cache-Control');
    pragma = getm(r.headersOut, 'Pragma');
  }
  if (r.status === 304 && cache.staleHandle !== null) {
    if (ccOut === undefined && pragma === undefined) {
      ccOut = getm(cache.staleHandle.respHdrs, 'Cache-Control');
      pragma = getm(cache.staleHandle.respHdrs, 'Pragma');
    }
    const ct = cache.staleHandle.respHdrs.get('Content-Type');
    if (ct !== undefined) r.contentType = ct;
  }
  const control = parseControl(ccOut, pragma);
  let reason: string | undefined;
  if (![200, 203, 206, 300, 301, 304].includes(r.status) && exps === undefined && ccOut === undefined) {
    reason = `Response status ${r.status}`;
  }
  const storeExpired = d.storeExpired === true;
  if (reason !== undefined) { /* noop */ }
  else if (!control.sMaxage && !control.maxAge && !storeExpired && exps !== undefined && Number.isNaN(exp)) reason = `Broken expires header: ${exps}`;
  else if (!control.sMaxage && !control.maxAge && !storeExpired && !Number.isNaN(exp) && exp < r.requestTime) reason = 'Expires header already expired; not cacheable';
  else if (!storeExpired && (control.mustRevalidate || control.proxyRevalidate) && (!control.sMaxageValue || (!control.sMaxage && !control.maxAgeValue)) && lastmods === undefined && etag === undefined) reason = 's-maxage or max-age zero and no Last-Modified or Etag; not cacheable';
  else if (!conf.ignoreQueryString && query !== undefined && exps === undefined && !control.maxAge && !control.sMaxage) reason = 'Query string present but no explicit expiration time';
  else if (r.status === 304 && cache.handle === null && cache.staleHandle === null) reason = 'HTTP Status 304 Not Modified';
  else if (r.status === 200 && lastmods === undefined && etag === undefined && exps === undefined && !d.noLastModIgnore && !control.maxAge && !control.sMaxage) reason = 'No Last-Modified; Etag; Expires; Cache-Control:max-age or Cache-Control:s-maxage headers';
  else if (!d.storeNoStore && control.noStore) reason = 'Cache-Control: no-store present';
  else if (!d.storePrivate && control.private) reason = 'Cache-Control: private present';
  else if (r.headersIn.has('Authorization') && !(control.sMaxage || control.mustRevalidate || control.proxyRevalidate || control.public)) reason = 'Authorization required';
  else if (findToken(r.headersOut.get('Vary'), '*')) reason = "Vary header contains '*'";
  else if (r.subprocessEnv.has('no-cache')) reason = "environment variable 'no-cache' is set";
  else if (cache.staleHandle !== null && !Number.isNaN(badDate(r.headersOut.get('Date'))) && badDate(r.headersOut.get('Date')) < cache.staleHandle.info.date) {
    reason = 'updated entity is older than cached entity';
    r.log(MOD, APLOG_DEBUG, 'AH02474: cache: Removing CACHE_REMOVE_URL filter.');
    cache.removeUrlFilter?.remove();
  } else if (r.status === 304 && cache.staleHandle !== null) {
    const left = cache.staleHandle.respHdrs;
    const changed: string[] = [];
    for (const h of ['ETag', ...ENTITY_HEADERS]) {
      const h1 = getm(left, h);
      const h2 = getm(r.headersOut, h);
      if (h1 !== undefined && h2 !== undefined && h1 !== h2) changed.push(h);
    }
    if (changed.length) reason = `contradiction: 304 Not Modified; but ${changed.join(', ')} modified`;
  }
  if (r.status === 304) for (const h of ENTITY_HEADERS) r.headersOut.unset(h);

  if (reason !== undefined && r.status === 304 && cache.staleHandle !== null) {
    r.log(MOD, APLOG_INFO, `AH02473: cache: ${cache.key ?? ''} responded with an uncacheable 304, retrying the request ${r.unparsedUri}. Reason: ${reason}`);
    cacheStatus(r, r.headersOut, 'MISS', `conditional cache miss: 304 was uncacheable, entity removed: ${reason}`);
    cache.removeUrlFilter?.remove();
    await removeUrl(cache, r);
    removeLock(cache, r);
    f.remove();
    for (const c of ['If-Match', 'If-Modified-Since', 'If-None-Match', 'If-Range', 'If-Unmodified-Since']) r.headersIn.unset(c);
    r.status = 200;
    await r.rt.internalRedirect(r, r.unparsedUri);
    cache.blockResponse = true;
    return;
  }
  const cl = get2(r, 'Content-Length');
  let size = -1;
  if (cl !== undefined) {
    if (/^[0-9]+$/.test(cl)) size = Number(cl);
    else reason ??= 'invalid content length';
  }
  if (reason !== undefined) {
    r.log(MOD, APLOG_DEBUG, `AH00768: cache: ${cache.key ?? ''} not cached for request ${r.unparsedUri}. Reason: ${reason}`);
    cacheStatus(r, r.headersOut, 'MISS', reason);
    f.remove();
    removeLock(cache, r);
    await f.pass(bb);
    return;
  }
  cache.inChecked = true;
  if (cl === undefined) {
    let all = false;
    size = 0;
    for (const b of bb) {
      if (b.kind === 'eos') { all = true; break; }
      if (b.kind === 'data') size += b.data.length;
      else if (b.kind === 'file') size += b.length;
    }
    if (!all) size = -1;
  }
  cache.size = size;
  let ok = false;
  let info: CacheInfo | undefined;
  if (cache.staleHandle !== null) {
    if (r.status === 304) {
      cache.handle = cache.staleHandle;
      info = cache.handle.info;
      ok = true;
    } else {
      cache.staleHandle.remove();
      cache.staleHandle = null;
      if (cache.staleHeaders !== null) r.headersIn = cache.staleHeaders;
    }
  }
  if (cache.handle === null) {
    if (cache.key === undefined) cache.key = generateKey(r);
    for (const { name, provider } of cache.providers) {
      const h = await provider.createEntity(r, cache.key, size);
      if (h !== null) { cache.handle = h; cache.providerName = name; ok = true; break; }
    }
    info = { status: r.status, date: NaN, expire: NaN, requestTime: 0, responseTime: 0, control: emptyControl() };
  }
  if (!ok || cache.handle === null || info === undefined) {
    cacheStatus(r, r.headersOut, 'MISS', 'cache miss: cache unwilling to store response');
    f.remove();
    removeLock(cache, r);
    await f.pass(bb);
    return;
  }
  r.log(MOD, APLOG_DEBUG, `AH00769: cache: Caching url ${cache.key ?? ''} for request ${r.unparsedUri}`);
  r.log(MOD, APLOG_DEBUG, 'AH00770: cache: Removing CACHE_REMOVE_URL filter.');
  cache.removeUrlFilter?.remove();
  info.control = control;
  const dates = get2(r, 'Date');
  const now = Date.now();
  info.date = dates !== undefined ? badDate(dates) : NaN;
  if (Number.isNaN(info.date)) info.date = now;
  const date = info.date;
  info.responseTime = now;
  info.requestTime = r.requestTime;
  if (!Number.isNaN(lastmod) && lastmod > date) r.log(MOD, APLOG_DEBUG, 'AH00771: cache: Last modified is in the future, replacing with now');
  info.expire = computeExpiry(control, date, exp, lastmod, {
    minex: d.minex ?? DEFAULT_CACHE_MINEXPIRE, maxex: d.maxex ?? DEFAULT_CACHE_MAXEXPIRE,
    defex: d.defex ?? DEFAULT_CACHE_EXPIRE, factor: d.factor ?? DEFAULT_CACHE_LMFACTOR,
  });
  exp = info.expire;
  const h = cache.handle;
  if (cache.staleHandle !== null) {
    r.headersOut = mergeHeadersOut(r);
    r.errHeadersOut.clear();
    acceptHeaders(r, r.headersOut, h.respHdrs, true);
  }
  const stored = await h.storeHeaders(r, info, cacheableHeadersOut(r), cacheableHeaders(r.headersIn, conf));
  if (cache.staleHandle !== null) {
    // A revalidated entity: its headers refreshed, the cached body served (or a 304).
    r.status = info.status;
    r.statusLine = undefined;
    let committed = stored;
    if (stored) committed = await h.commit(r);
    if (cache.staleHeaders !== null) r.headersIn = cache.staleHeaders;
    const status = meetsConditions(r);
    let out: Brigade;
    if (status !== OK) {
      r.status = status;
      for (const e of ENTITY_HEADERS) r.headersOut.unset(e);
      out = [FLUSH];
    } else {
      const body = await h.recallBody(r);
      out = [...body, EOS];
    }
    cache.blockResponse = true;
    if (!committed) {
      r.log(MOD, APLOG_DEBUG, 'AH00772: cache: updating headers with store_headers failed. Removing cached url.');
      await cache.staleHandle.removeUrl(r);
      cacheStatus(r, r.headersOut, 'REVALIDATE', 'conditional cache hit: entity refresh failed');
    } else {
      cacheStatus(r, r.headersOut, 'REVALIDATE', 'conditional cache hit: entity refreshed');
    }
    removeLock(cache, r);
    r.log(MOD, APLOG_DEBUG, `AH02971: cache: serving ${r.uri} (revalidated)`);
    await f.pass(out);
    return;
  }
  if (!stored) {
    r.log(MOD, APLOG_DEBUG, 'AH00774: cache: store_headers failed');
    cacheStatus(r, r.headersOut, 'MISS', 'cache miss: store_headers failed');
    f.remove();
    removeLock(cache, r);
    await f.pass(bb);
    return;
  }
  cacheStatus(r, r.headersOut, 'MISS', 'cache miss: attempting entity save');
  await saveStore(f, bb);
}

/** cache_save_store: the body into the provider piece by piece, then on down the chain. */
async function saveStore(f: FilterInstance<SaveState>, bb: Brigade): Promise<void> {
  const r = f.r;
  const st = f.state;
  const cache = st.cache;
  const h = cache.handle!;
  let failed = false;
  for (let i = 0; i < bb.length; i++) {
    const b = bb[i]!;
    if (failed) { st.out.push(b); continue; }
    if (b.kind === 'data' || b.kind === 'file') {
      await bucketPieces(b, async (data) => {
        if (failed || data.length === 0) return;
        if (!(await h.storeBody(r, data))) failed = true;
        st.stored += data.length;
      });
      st.out.push(b);
      if (failed) {
        r.log(MOD, APLOG_DEBUG, `AH00765: cache: Cache provider's store_body failed for URI ${r.uri}`);
        f.remove();
        removeLock(cache, r);
        continue;
      }
      const full = h.readSize > 0 && st.stored >= h.readSize;
      const late = h.readTime > 0 && Date.now() - st.since >= h.readTime;
      if (full || late) {
        st.stored = 0;
        st.since = Date.now();
        await f.pass(st.out.splice(0));
      }
      continue;
    }
    if (b.kind === 'eos') {
      const ok = (await h.endBody(r)) && (await h.commit(r));
      if (!ok) {
        r.log(MOD, APLOG_DEBUG, `AH00765: cache: Cache provider's store_body failed for URI ${r.uri}`);
        await h.removeUrl(r);
      }
      removeLock(cache, r);
    }
    st.out.push(b);
    if (b.kind === 'flush') await f.pass(st.out.splice(0));
  }
  if (st.out.length && (h.readSize === 0 && h.readTime === 0 || failed || endsResponse(st.out))) await f.pass(st.out.splice(0));
}

/** The save filter turned into CACHE_OUT for a stale entity (CacheStaleOnError). */
function serveStaleOut(f: FilterInstance<SaveState>, bb: Brigade): Promise<void> {
  const r = f.r;
  const h = f.state.cache.handle!;
  const eos = bb.findIndex((b) => b.kind === 'eos');
  if (eos < 0) return Promise.resolve();
  const ct = h.respHdrs.get('Content-Type');
  if (ct !== undefined) r.contentType = ct;
  r.status = h.info.status;
  f.remove();
  return Promise.resolve(h.recallBody(r)).then((body) => f.pass([...body, ...bb.slice(eos)]));
}

function saveFilter(f: FilterInstance<SaveState>, bb: Brigade): ReturnType<FilterSpec['filter']> {
  if ((f.state as SaveState | null) === null) {
    f.r.log(MOD, APLOG_ERR, 'AH00767: CACHE/CACHE_SAVE filter enabled while caching is disabled, ignoring');
    f.remove();
    return f.pass(bb);
  }
  const cache = f.state.cache;
  if (cache.serveStale) return serveStaleOut(f, bb);
  if (cache.blockResponse) return;
  if (cache.inChecked) return saveStore(f, bb);
  return saveSetup(f, bb);
}

const noSave = (): SaveState => null as unknown as SaveState;
const saveSpec: FilterSpec<SaveState> = { name: 'CACHE_SAVE', type: FTYPE_CONTENT_SET + 1, init: noSave, filter: saveFilter };
const saveSubreqSpec: FilterSpec<SaveState> = { name: 'CACHE_SAVE_SUBREQ', type: FTYPE_CONTENT_SET - 1, init: noSave, filter: saveFilter };

function addSaveFilters(cache: CacheReq, r: Request): void {
  const spec = r.main !== null ? saveSubreqSpec : saveSpec;
  r.log(MOD, APLOG_DEBUG, r.main !== null ? `AH00756: Adding CACHE_SAVE_SUBREQ filter for ${r.uri}` : `AH00757: Adding CACHE_SAVE filter for ${r.uri}`);
  const f = r.rt.addFilter(r, spec);
  f.state = { cache, out: [], stored: 0, since: Date.now() };
  if (replaceMarker(r, f as unknown as FilterInstance)) r.log(MOD, APLOG_DEBUG, `AH00758: Replacing CACHE with CACHE_SAVE filter for ${r.uri}`);
  cache.saveFilter = f;
  requestCache.set(r, cache);
  r.log(MOD, APLOG_DEBUG, `AH00759: Adding CACHE_REMOVE_URL filter for ${r.uri}`);
  const ru = r.rt.addFilter(r, removeUrlSpec);
  ru.state = cache;
  cache.removeUrlFilter = ru as FilterInstance<CacheReq>;
}

/** Serves the selected entity: CACHE_OUT first in the chain, an EOS to set it going. */
function serveHit(cache: CacheReq, r: Request): Promise<number> {
  const spec = r.main !== null ? cacheOutSubreqSpec : cacheOutSpec;
  const out = r.rt.addFilter(r, spec);
  out.state = cache;
  if (replaceMarker(r, out as unknown as FilterInstance)) r.log(MOD, APLOG_DEBUG, `AH00761: Replacing CACHE with CACHE_OUT filter for ${r.uri}`);
  // Nothing before CACHE_OUT: the response is restored as it was saved. Apache 2.4.71 runs
  // none of the content filters the insert_filter hooks add on a hit either (measured: mod_headers'
  // FIXUP_HEADERS_OUT does not run), so those go too.
  for (const f of r.outputFilters) {
    if (f !== (out as unknown as FilterInstance) && f.spec.type <= FTYPE_CONTENT_SET) f.remove();
  }
  return Promise.resolve(r.write([EOS])).then(() => OK);
}

// ---- the quick handler and the handler ----------------------------------------------------------

function methodCheck(cache: CacheReq, r: Request, quickTags: boolean): boolean {
  switch (r.method) {
    case 'PUT': case 'POST': case 'DELETE': {
      r.log(MOD, APLOG_DEBUG, `AH0${quickTags ? '2461' : '2463'}: PUT/POST/DELETE: Adding CACHE_INVALIDATE filter for ${r.uri}`);
      const f = r.rt.addFilter(r, invalidateSpec);
      f.state = cache;
      return false;
    }
    case 'GET': case 'HEAD':
      // HEAD has httpd's method number M_GET.
      return true;
    default:
      r.log(MOD, APLOG_DEBUG, `AH0${quickTags ? '2462' : '2464'}: cache: Method '${r.method}' not cacheable by mod_cache, ignoring: ${r.uri}`);
      return false;
  }
}

/** The quick handler: synchronous (no promise) for a URL no CacheEnable covers. */
function quickHandler(r: Request, lookup: boolean): MaybePromise<number> {
  if (srv(r).quick === false) return DECLINED;
  const providers = getProviders(r);
  if (providers === null) return DECLINED;
  return quickHandlerCached(r, lookup, providers);
}

async function quickHandlerCached(r: Request, lookup: boolean, providers: CacheReq['providers']): Promise<number> {
  const cache = newCacheReq(providers);
  if (!checkNoStore(cache, r)) return DECLINED;
  if (r.headersIn.has('Authorization')) return DECLINED;
  if (!methodCheck(cache, r, true)) return DECLINED;
  const rv = await cacheSelect(cache, r);
  if (rv !== OK) {
    if (rv !== DECLINED) return rv;
    if (!lookup) {
      if (tryLock(cache, r) === 'ok') {
        addSaveFilters(cache, r);
      } else {
        r.log(MOD, APLOG_DEBUG, `AH00752: Cache locked for url, not caching response: ${r.uri}`);
        if (cache.staleHeaders !== null) r.headersIn = cache.staleHeaders;
      }
    } else if (cache.staleHeaders !== null) {
      r.log(MOD, APLOG_DEBUG, `AH00753: Restoring request headers for ${r.uri}`);
      r.headersIn = cache.staleHeaders;
    }
    return DECLINED;
  }
  cacheStatus(r, r.headersOut, 'HIT', 'cache hit');
  if (lookup && cache.staleHeaders !== null) {
    r.log(MOD, APLOG_DEBUG, 'AH00754: Restoring request headers.');
    r.headersIn = cache.staleHeaders;
  }
  const cond = meetsConditions(r);
  if (cond !== OK) return lookup ? DECLINED : cond;
  if (lookup) return OK;
  // The quick handler runs before any filter was added: the insert_filter hooks now.
  await runVoid(r.rt.hooks.insertFilter, r);
  return serveHit(cache, r);
}

function cacheHandler(r: Request): MaybePromise<number> {
  if (srv(r).quick !== false) return DECLINED;
  const providers = getProviders(r);
  if (providers === null) return DECLINED;
  return cacheHandlerCached(r, providers);
}

async function cacheHandlerCached(r: Request, providers: CacheReq['providers']): Promise<number> {
  const cache = newCacheReq(providers);
  if (!checkNoStore(cache, r)) return DECLINED;
  if (!methodCheck(cache, r, false)) return DECLINED;
  const rv = await cacheSelect(cache, r);
  if (rv !== OK) {
    if (rv !== DECLINED) return rv;
    if (tryLock(cache, r) === 'ok') addSaveFilters(cache, r);
    else r.log(MOD, APLOG_DEBUG, `AH00760: Cache locked for url, not caching response: ${r.uri}`);
    return DECLINED;
  }
  cacheStatus(r, r.headersOut, 'HIT', 'cache hit');
  const cond = meetsConditions(r);
  if (cond !== OK) return cond;
  return serveHit(cache, r);
}

/** cache_insert_error_filter: an error page of ours (5xx) replaced by the stale entity. */
function insertErrorFilter(r: Request): void {
  if (r.status < 500) return;
  if (!(dir(r).staleOnError ?? true)) return;
  const cache = requestCache.get(r);
  if (cache === undefined) return;
  cache.removeUrlFilter?.remove();
  const sh = cache.staleHandle;
  if (sh === null || cache.saveFilter === null || sh.info.control.mustRevalidate || sh.info.control.proxyRevalidate || sh.info.control.sMaxage) return;
  cache.handle = sh;
  cache.serveStale = true;
  const f = r.rt.addFilter(r, r.main !== null ? cacheOutSubreqSpec : cacheOutSpec);
  f.state = cache;
  r.errHeadersOut = sh.respHdrs;
  const w = r.errHeadersOut.get('Warning');
  if (w === undefined || !w.includes('111')) r.errHeadersOut.merge('Warning', '111 Revalidation failed');
  cacheStatus(r, r.errHeadersOut, 'HIT', `cache hit: ${r.status} status; stale content returned`);
  removeLock(cache, r);
}

// ---- the module -----------------------------------------------------------------------------------

type D<S extends Parameters<typeof directive>[0]['args']> = Parameters<typeof directive<CacheServer, CacheDir, S>>[0];
const d = <S extends Parameters<typeof directive>[0]['args']>(spec: D<S>) => directive<CacheServer, CacheDir, S>(spec);
const dirFlag = (field: 'noLastModIgnore' | 'storeExpired' | 'storePrivate' | 'storeNoStore' | 'staleOnError') =>
  (cmd: { dir: CacheDir }, on: boolean): undefined => { cmd.dir[field] = on; return undefined; };
const srvFlag = (field: 'ignoreCacheControl' | 'ignoreQueryString' | 'lock' | 'quick') =>
  (cmd: { srv: CacheServer }, on: boolean): undefined => { cmd.srv[field] = on; return undefined; };

const self = defineModule<CacheServer, CacheDir>({
  name: 'cache_module',
  source: 'mod_cache.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  createDirConfig,
  mergeDirConfig,
  directives: [
    d({ name: 'CacheEnable', args: 'TAKE12', where: RSRC_CONF | ACCESS_CONF, help: 'A cache type and partial URL prefix below which caching is enabled', handler: addCacheEnable }),
    d({ name: 'CacheDisable', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'A partial URL prefix below which caching is disabled', handler: addCacheDisable }),
    d({ name: 'CacheMaxExpire', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The maximum time in seconds to cache a document', handler: setSeconds('maxex') }),
    d({ name: 'CacheMinExpire', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The minimum time in seconds to cache a document', handler: setSeconds('minex') }),
    d({ name: 'CacheDefaultExpire', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The default time in seconds to cache a document', handler: setSeconds('defex') }),
    d({ name: 'CacheQuickHandler', args: 'FLAG', where: RSRC_CONF, help: 'Run the cache in the quick handler, default on', handler: srvFlag('quick') }),
    d({ name: 'CacheIgnoreNoLastMod', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Ignore Responses where there is no Last Modified Header', handler: dirFlag('noLastModIgnore') }),
    d({ name: 'CacheIgnoreCacheControl', args: 'FLAG', where: RSRC_CONF, help: 'Ignore requests from the client for uncached content', handler: srvFlag('ignoreCacheControl') }),
    d({ name: 'CacheStoreExpired', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Ignore expiration dates when populating cache, resulting in an If-Modified-Since request to the backend on retrieval', handler: dirFlag('storeExpired') }),
    d({ name: 'CacheStorePrivate', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: "Ignore 'Cache-Control: private' and store private content", handler: dirFlag('storePrivate') }),
    d({ name: 'CacheStoreNoStore', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: "Ignore 'Cache-Control: no-store' and store sensitive content", handler: dirFlag('storeNoStore') }),
    d({ name: 'CacheIgnoreHeaders', args: 'ITERATE', where: RSRC_CONF, help: 'A space separated list of headers that should not be stored by the cache', handler: addIgnoreHeader }),
    d({ name: 'CacheIgnoreQueryString', args: 'FLAG', where: RSRC_CONF, help: 'Ignore query-string when caching', handler: srvFlag('ignoreQueryString') }),
    d({ name: 'CacheIgnoreURLSessionIdentifiers', args: 'ITERATE', where: RSRC_CONF, help: 'A space separated list of session identifiers that should be ignored for creating the key of the cached entity.', handler: addIgnoreSessionId }),
    d({ name: 'CacheLastModifiedFactor', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The factor used to estimate Expires date from LastModified date', handler: setFactor }),
    d({ name: 'CacheLock', args: 'FLAG', where: RSRC_CONF, help: 'Enable or disable the thundering herd lock.', handler: srvFlag('lock') }),
    d({ name: 'CacheLockPath', args: 'TAKE1', where: RSRC_CONF, help: "The thundering herd lock path. Defaults to the '/mod_cache-lock' directory in the system temp directory.", handler: setLockPath }),
    d({ name: 'CacheLockMaxAge', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum age of any thundering herd lock.', handler: setLockMaxAge }),
    d({ name: 'CacheHeader', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Add a X-Cache header to responses. Default is off.', handler: setHeaderFlag('xCache') }),
    d({ name: 'CacheDetailHeader', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Add a X-Cache-Detail header to responses. Default is off.', handler: setHeaderFlag('xCacheDetail') }),
    d({ name: 'CacheKeyBaseURL', args: 'TAKE1', where: RSRC_CONF, help: 'Override the base URL of reverse proxied cache keys.', handler: setKeyBaseUrl }),
    d({ name: 'CacheStaleOnError', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Serve stale content on 5xx errors if present. Defaults to on.', handler: dirFlag('staleOnError') }),
  ],
  hooks: {
    quickHandler: { fn: quickHandler, order: HOOK_FIRST },
    handler: { fn: cacheHandler, order: HOOK_REALLY_FIRST },
    insertErrorFilter: insertErrorFilter,
  },
  filters: [
    cacheFilter as FilterSpec, saveSpec as FilterSpec, saveSubreqSpec as FilterSpec, cacheOutSpec as FilterSpec,
    cacheOutSubreqSpec as FilterSpec, removeUrlSpec as FilterSpec, invalidateSpec as FilterSpec,
  ],
});

export default self;
self.decl satisfies import('../../../server/module.js').ModuleDecl<CacheServer, CacheDir>;
