// The header record of a cached entity, as plume's cache providers store it (mod_cache_disk's
// .header file, the headers part of a mod_cache_socache object): one JSON document, version 1,
// either an entity (its key, cache_info and the response and request headers) or a Vary
// record (the header names a response varies on; the variants are stored under varyKey()).
//
// DIFFERENCE: httpd writes a binary disk_cache_info_t followed by CRLF-separated header
// lines; plume's format is its own (docs/differences.md), so a cache root is not shared with
// Apache or htcacheclean. The reader checks every field and answers null for anything else
// (a truncated, foreign or corrupt file is a miss, never an error).

import { HeaderTable } from '../../../server/request/headers.js';
import { emptyControl, type CacheControl, type CacheInfo } from './api.js';

export const ENTRY_FORMAT = 1;

export type HeaderRecord =
  | {
    readonly kind: 'entity'; readonly key: string; readonly info: CacheInfo; readonly respHdrs: HeaderTable; readonly reqHdrs: HeaderTable;
    /** Stored from a HEAD request: there is no body (httpd's disk_info.header_only). */
    readonly headerOnly: boolean;
  }
  | { readonly kind: 'vary'; readonly key: string; readonly names: readonly string[]; readonly expire: number };

function tableOut(t: HeaderTable): [string, string][] {
  return t.entries();
}

function num(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}

/** The record as bytes. */
export function encodeRecord(rec: HeaderRecord): Buffer {
  if (rec.kind === 'vary') {
    return Buffer.from(JSON.stringify({ v: ENTRY_FORMAT, kind: 'vary', key: rec.key, names: rec.names, expire: num(rec.expire) }), 'utf8');
  }
  const i = rec.info;
  return Buffer.from(JSON.stringify({
    v: ENTRY_FORMAT, kind: 'entity', key: rec.key,
    info: { status: i.status, date: num(i.date), expire: num(i.expire), requestTime: num(i.requestTime), responseTime: num(i.responseTime), control: i.control },
    resp: tableOut(rec.respHdrs), req: tableOut(rec.reqHdrs), headerOnly: rec.headerOnly,
  }), 'utf8');
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObj(v: Json | undefined): v is { [k: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A time field: a finite number, or null for "bad date" (NaN). */
function time(v: Json | undefined): number | undefined {
  if (v === null) return NaN;
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** A header list: [name, value] string pairs with no line breaks in them. */
function table(v: Json | undefined): HeaderTable | undefined {
  if (!Array.isArray(v)) return undefined;
  const t = new HeaderTable();
  for (const e of v) {
    if (!Array.isArray(e) || e.length !== 2) return undefined;
    const [n, val] = e;
    if (typeof n !== 'string' || typeof val !== 'string' || n === '' || /[\r\n:]/.test(n) || /[\r\n]/.test(val)) return undefined;
    t.add(n, val);
  }
  return t;
}

function control(v: Json | undefined): CacheControl | undefined {
  if (!isObj(v)) return undefined;
  const c = emptyControl();
  for (const k of Object.keys(c) as (keyof CacheControl)[]) {
    const x = v[k];
    const want = typeof c[k];
    if (typeof x !== want) return undefined;
    if (want === 'number' && !Number.isInteger(x)) return undefined;
    (c as unknown as Record<string, boolean | number>)[k] = x as boolean | number;
  }
  return c;
}

/** Parses a stored record; null when it is not one this version wrote, whole. */
export function decodeRecord(buf: Buffer): HeaderRecord | null {
  let j: Json;
  try {
    j = JSON.parse(buf.toString('utf8')) as Json;
  } catch {
    return null;
  }
  if (!isObj(j) || j.v !== ENTRY_FORMAT || typeof j.key !== 'string') return null;
  if (j.kind === 'vary') {
    const names = j.names;
    const expire = time(j.expire);
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string' && n !== '') || expire === undefined) return null;
    return { kind: 'vary', key: j.key, names: names as string[], expire };
  }
  if (j.kind !== 'entity' || !isObj(j.info)) return null;
  const i = j.info;
  const status = i.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 999) return null;
  const date = time(i.date);
  const expire = time(i.expire);
  const requestTime = time(i.requestTime);
  const responseTime = time(i.responseTime);
  const ctl = control(i.control);
  const respHdrs = table(j.resp);
  const reqHdrs = table(j.req);
  if (typeof j.headerOnly !== 'boolean') return null;
  if (date === undefined || expire === undefined || requestTime === undefined || responseTime === undefined || ctl === undefined || respHdrs === undefined || reqHdrs === undefined) return null;
  return { kind: 'entity', key: j.key, info: { status, date, expire, requestTime, responseTime, control: ctl }, respHdrs, reqHdrs, headerOnly: j.headerOnly };
}
