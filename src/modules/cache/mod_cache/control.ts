// mod_cache's HTTP arithmetic (modules/cache/cache_util.c): the Cache-Control / Pragma
// tokenizer and parser, the RFC 7234 age calculation, the freshness check of a cached entity
// and the expiry a response is stored with. Pure functions over plain values (unit-tested).

import { createHash } from 'node:crypto';
import { emptyControl, type CacheControl, type CacheInfo } from './api.js';

/** CACHE_SEPARATOR. */
export const CACHE_SEPARATOR = ', \t';

/**
 * httpd 2.4's cache_strqtok over a whole value: the tokens between separator characters, a
 * quoted string (with its backslash escapes) kept inside its token as written.
 */
export function tokenize(header: string, sep: string = CACHE_SEPARATOR): string[] {
  const out: string[] = [];
  const n = header.length;
  let i = 0;
  for (;;) {
    while (i < n && sep.includes(header[i]!)) i++;
    if (i >= n) return out;
    const start = i;
    let quoted = false;
    while (i < n) {
      const c = header[i]!;
      if (!quoted) {
        if (c === '"' && !sep.includes('"')) { quoted = true; i++; }
        else if (!sep.includes(c)) i++;
        else break;
      } else if (c === '"') { quoted = false; i++; }
      else if (c === '\\') { i++; if (i < n) i++; }
      else i++;
    }
    out.push(header.slice(start, i));
    if (i < n) i++;
  }
}

/** apr_strtoff with the whole string a decimal number (endp > arg && !*endp). */
function strictInt(s: string | undefined): number | undefined {
  if (s === undefined) return undefined;
  // strtol skips leading white space; a trailing character fails the !*endp check.
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)$/.exec(s);
  return m === null ? undefined : Number(m[1]);
}

/** `token` is `name=value` with a whole decimal value: the value (httpd's apr_strtoff check). */
function valueOf(token: string, name: string): number | undefined {
  if (token[name.length] !== '=') return undefined;
  return strictInt(token.slice(name.length + 1));
}

function startsWithCi(token: string, name: string): boolean {
  return token.length >= name.length && token.slice(0, name.length).toLowerCase() === name;
}

/** ap_cache_control (httpd 2.4): parses Cache-Control and Pragma into `cc` (once). */
export function parseControl(ccHeader: string | undefined, pragmaHeader: string | undefined, cc: CacheControl = emptyControl()): CacheControl {
  if (cc.parsed) return cc;
  cc.parsed = true;
  cc.maxAgeValue = -1;
  cc.maxStaleValue = -1;
  cc.minFreshValue = -1;
  cc.sMaxageValue = -1;
  if (pragmaHeader !== undefined) {
    for (const token of tokenize(pragmaHeader)) if (token.toLowerCase() === 'no-cache') cc.noCache = true;
    cc.pragma = true;
  }
  if (ccHeader !== undefined) {
    for (const token of tokenize(ccHeader)) {
      const t = token.toLowerCase();
      if (startsWithCi(t, 'no-cache')) {
        if (t[8] === '=') cc.noCacheHeader = true;
        else if (t.length === 8) cc.noCache = true;
      } else if (t === 'no-store') cc.noStore = true;
      else if (t === 'no-transform') cc.noTransform = true;
      else if (startsWithCi(t, 'max-age')) {
        const v = valueOf(token, 'max-age');
        if (v !== undefined) { cc.maxAge = true; cc.maxAgeValue = v; }
      } else if (t === 'must-revalidate') cc.mustRevalidate = true;
      else if (startsWithCi(t, 'max-stale')) {
        const v = valueOf(token, 'max-stale');
        if (v !== undefined) { cc.maxStale = true; cc.maxStaleValue = v; }
        else if (t.length === 9) { cc.maxStale = true; cc.maxStaleValue = -1; }
      } else if (startsWithCi(t, 'min-fresh')) {
        const v = valueOf(token, 'min-fresh');
        if (v !== undefined) { cc.minFresh = true; cc.minFreshValue = v; }
      } else if (t === 'only-if-cached') cc.onlyIfCached = true;
      else if (t === 'public') cc.public = true;
      else if (startsWithCi(t, 'private')) {
        if (t[7] === '=') cc.privateHeader = true;
        else if (t.length === 7) cc.private = true;
      } else if (t === 'proxy-revalidate') cc.proxyRevalidate = true;
      else if (startsWithCi(t, 's-maxage')) {
        const v = valueOf(token, 's-maxage');
        if (v !== undefined) { cc.sMaxage = true; cc.sMaxageValue = v; }
      }
    }
    cc.cacheControl = true;
  }
  return cc;
}

/** The header names listed after no-cache= and private= (cache_control_remove takes them out
 *  of what is stored). */
export function controlledHeaders(ccHeader: string | undefined): string[] {
  if (ccHeader === undefined) return [];
  const out: string[] = [];
  for (const token of tokenize(ccHeader)) {
    const t = token.toLowerCase();
    let rest: string | undefined;
    if (startsWithCi(t, 'no-cache') && t[8] === '=') rest = token.slice(9);
    else if (startsWithCi(t, 'private') && t[7] === '=') rest = token.slice(8);
    if (rest !== undefined) out.push(...tokenize(rest, CACHE_SEPARATOR + '"'));
  }
  return out;
}

/** apr_time_sec: whole seconds, rounded towards zero (C integer division). */
function sec(ms: number): number {
  return Math.trunc(ms / 1000);
}

/** ap_cache_current_age (RFC 7234 4.2.3): the age in seconds at `now` of a response whose
 *  Age header said `ageValue` seconds. */
export function currentAge(info: CacheInfo, ageValue: number, now: number): number {
  const apparentAge = Math.max(0, info.responseTime - info.date);
  const correctedReceivedAge = Math.max(apparentAge, ageValue * 1000);
  const responseDelay = info.responseTime - info.requestTime;
  const correctedInitialAge = correctedReceivedAge + responseDelay;
  const residentTime = now - info.responseTime;
  const age = correctedInitialAge + residentTime;
  return sec(age < 0 ? 0 : age);
}

export interface FreshnessInput {
  info: CacheInfo;
  /** The cached Age header, the cached Expires header's presence and Warning value. */
  ageHeader: string | undefined;
  hasExpires: boolean;
  warning: string | undefined;
  /** The request's Cache-Control (parsed). */
  controlIn: CacheControl;
  ignoreCacheControl: boolean;
  /** r->request_time, ms. */
  now: number;
}

export interface FreshnessResult {
  fresh: boolean;
  /** The Age to send (when fresh). */
  age: number;
  /** Warnings to merge into the cached headers (when fresh). */
  warnings: string[];
}

/** The fresh/stale decision of cache_check_freshness, before the thundering-herd lock. */
export function checkFreshness(f: FreshnessInput): FreshnessResult {
  const { info, controlIn } = f;
  const stale: FreshnessResult = { fresh: false, age: 0, warnings: [] };
  if (controlIn.noCache && !f.ignoreCacheControl) return stale;
  if (info.control.noCache || info.control.invalidated) return stale;
  let ageC = 0;
  if (f.ageHeader !== undefined && /^[0-9]+$/.test(f.ageHeader)) ageC = Number(f.ageHeader);
  const age = currentAge(info, ageC, f.now);
  const smaxage = info.control.sMaxageValue;
  const maxageReq = f.ignoreCacheControl ? -1 : controlIn.maxAgeValue;
  const maxageCresp = smaxage !== -1 ? smaxage : info.control.maxAgeValue;
  const maxage = maxageReq === -1 ? maxageCresp : maxageCresp === -1 ? maxageReq : Math.min(maxageReq, maxageCresp);
  let maxstale = 0;
  if (controlIn.maxStale) maxstale = controlIn.maxStaleValue !== -1 ? controlIn.maxStaleValue : 86400 * 365;
  const minfresh = !f.ignoreCacheControl && controlIn.minFresh ? controlIn.minFreshValue : 0;
  if (maxstale && (info.control.mustRevalidate || info.control.proxyRevalidate || smaxage !== -1)) maxstale = 0;
  const lifetime = Number.isNaN(info.expire) ? NaN : sec(info.expire - info.date);
  const fresh = (maxage !== -1 && age < maxage + maxstale - minfresh)
    || (smaxage === -1 && maxage === -1 && !Number.isNaN(lifetime) && age < lifetime + maxstale - minfresh);
  if (!fresh) return stale;
  const warnings: string[] = [];
  if (!((maxage !== -1 && age < maxage) || (!Number.isNaN(lifetime) && lifetime > age))) {
    // httpd 2.4 adds it only beside another warning (its test is warn_head != NULL).
    if (f.warning !== undefined && !f.warning.includes('110')) warnings.push('110 Response is stale');
  }
  if (maxageCresp === -1 && smaxage === -1 && !f.hasExpires && age > 86400) {
    if (f.warning !== undefined && !f.warning.includes('113')) warnings.push('113 Heuristic expiration');
  }
  return { fresh: true, age, warnings };
}

export interface ExpiryLimits {
  /** CacheMinExpire, CacheMaxExpire, CacheDefaultExpire in ms; CacheLastModifiedFactor. */
  minex: number;
  maxex: number;
  defex: number;
  factor: number;
}

/**
 * The expiry time mod_cache stores with a response (cache_save_filter): s-maxage or max-age
 * over Expires, else Expires, else the Last-Modified heuristic, else CacheDefaultExpire. All
 * times in ms; `exp` and `lastmod` NaN when absent or bad.
 */
export function computeExpiry(control: CacheControl, date: number, exp: number, lastmod: number, lim: ExpiryLimits): number {
  let e = exp;
  if (!Number.isNaN(lastmod) && lastmod > date) lastmod = date;
  if (control.sMaxage || control.maxAge) {
    let x = (control.sMaxage ? control.sMaxageValue : control.maxAgeValue) * 1000;
    if (x < lim.minex) x = lim.minex;
    if (x > lim.maxex) x = lim.maxex;
    e = date + x;
  }
  if (Number.isNaN(e)) {
    if (!Number.isNaN(lastmod) && lastmod < date) {
      // httpd truncates (date - lastmod) * factor to whole microseconds.
      let x = Math.trunc((date - lastmod) * 1000 * lim.factor) / 1000;
      if (x < lim.minex) x = lim.minex;
      if (x > lim.maxex) x = lim.maxex;
      e = date + x;
    } else {
      e = date + lim.defex;
    }
  }
  return e;
}

const ENC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@';

/** ap_cache_generate_name: the MD5 of the key in 22 characters of a modified base64, split
 *  into `levels` directories of `length` characters. */
export function generateName(key: string, levels: number, length: number): string {
  const d = createHash('md5').update(key, 'latin1').digest();
  let tmp = '';
  for (let i = 0; i < 15; i += 3) {
    const x = (d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!;
    tmp += ENC[x >> 18]! + ENC[(x >> 12) & 0x3f]! + ENC[(x >> 6) & 0x3f]! + ENC[x & 0x3f]!;
  }
  const x = d[15]!;
  tmp += ENC[x >> 2]! + ENC[(x << 4) & 0x3f]!;
  let out = '';
  let k = 0;
  for (let l = 0; l < levels; l++) {
    out += tmp.slice(k, k + length) + '/';
    k += length;
  }
  return out + tmp.slice(k);
}
