// Shared fixtures for the http unit tests: a bare Request with the core per-dir config in
// place, and a filter chain that collects what reaches its end.

import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import type { ServerRec } from '../../../src/server/server-rec.js';
import { core } from '../../../src/server/core/core-module.js';
import { createCoreDirConfig, type CoreDirConfig } from '../../../src/server/core/config.js';
import { instantiate, linkChain, EOS, type Brigade, type FilterInstance, type FilterSpec } from '../../../src/server/filters.js';
import { byterangeFilter, needsByterange, setMultipartBoundary, setRangeErrorHandler } from '../../../src/server/http/byterange.js';
import { meetsConditions } from '../../../src/server/http/conditional.js';

/** Apache's clock when the cases were measured (the test machine's date). */
export const MEASURED_AT = Date.UTC(2026, 10, 22, 3, 0, 0);

/** The measured files. */
export const H_TXT = Buffer.from('hello world\n', 'latin1');
export const A_TXT = (() => {
  const b = Buffer.alloc(1000);
  for (let i = 0; i < 1000; i++) b[i] = 33 + ((i * 7) % 90);
  return b;
})();
/** Both files: mtime 2024-01-02 03:04:05.123456789 UTC. */
export const FILE_MTIME_MS = 1704164645123.4568;
export const FILE_LM = 'Tue, 02 Jan 2024 03:04:05 GMT';
export const H_ETAG = '"c-60dedc04fb580"';
export const A_ETAG = '"3e8-60dedc04fb580"';

const rt = {
  errno: () => undefined,
  logRequest: () => undefined,
} as unknown as Runtime;

export const FAKE_RT: Runtime = rt;

if (core.index < 0) core.index = 0;

export interface RequestOptions {
  method?: string;
  headers?: ReadonlyArray<readonly [string, string]>;
  now?: number;
  dir?: Partial<CoreDirConfig>;
}

export function makeRequest(o: RequestOptions = {}): Request {
  const r = new Request(rt, {} as ConnRec, {} as ServerRec);
  r.method = o.method ?? 'GET';
  r.headerOnly = r.method === 'HEAD';
  r.requestTime = o.now ?? MEASURED_AT;
  r.startMicros = r.requestTime * 1000;
  // The HTTP parser trims header values, as httpd's does.
  for (const [k, v] of o.headers ?? []) r.headersIn.add(k, v.trim());
  const vec: unknown[] = [];
  vec[core.index] = { ...createCoreDirConfig(undefined), ...o.dir };
  r.perDirConfig = vec;
  return r;
}

export const TEST_BOUNDARY = '0123456789abcdef';

export interface Served {
  status: number;
  /** The status the 416 handler was called with, if it was. */
  error?: number;
  headers: [string, string][];
  contentType: string | undefined;
  /** The brigades that reached the end of the chain. */
  out: Brigade[];
}

/** Bytes of the collected brigades (file buckets read from their cached buffer). */
export function bodyOf(out: Brigade[]): Buffer {
  const parts: Buffer[] = [];
  for (const bb of out) for (const b of bb) {
    if (b.kind === 'data') parts.push(b.data);
    else if (b.kind === 'file') parts.push(b.cached!.subarray(b.start, b.start + b.length));
  }
  return Buffer.concat(parts);
}

/** What httpd's default handler does for a file (headers, ap_meets_conditions, the file
 *  bucket) followed by the BYTERANGE filter when the request has a Range. */
export function serveFile(
  r: Request,
  file: { content: Buffer; etag?: string; lm?: string; mtimeMs?: number; path?: string; noType?: boolean },
): Served {
  r.mtime = file.mtimeMs ?? FILE_MTIME_MS;
  if (r.contentType === undefined && file.noType !== true) r.contentType = 'text/plain';
  r.headersOut.set('Last-Modified', file.lm ?? FILE_LM);
  if (file.etag !== undefined) r.headersOut.set('ETag', file.etag);
  r.headersOut.set('Accept-Ranges', 'bytes');
  r.headersOut.set('Content-Length', String(file.content.length));
  const out: Brigade[] = [];
  const cond = meetsConditions(r);
  if (cond !== 0) {
    r.status = cond;
    return { status: r.status, headers: r.headersOut.entries(), contentType: r.contentType, out };
  }
  let error: number | undefined;
  setRangeErrorHandler((_r, status) => { error = status; });
  setMultipartBoundary(rt, TEST_BOUNDARY);
  const collector: FilterSpec<null> = { name: 'COLLECT', type: 100, init: () => null, filter: (_f, bb) => { out.push(bb); } };
  const chain: FilterInstance[] = [];
  if (needsByterange(r)) chain.push(instantiate(byterangeFilter, r) as unknown as FilterInstance);
  chain.push(instantiate(collector, r) as unknown as FilterInstance);
  const head = linkChain(chain)!;
  const bucket = { kind: 'file' as const, path: file.path ?? '/x', start: 0, length: file.content.length, cached: file.content };
  void head.spec.filter(head, [bucket, EOS]);
  return {
    status: error ?? r.status,
    ...(error !== undefined ? { error } : {}),
    headers: r.headersOut.entries(),
    contentType: r.contentType,
    out,
  };
}

export function header(s: Served, name: string): string | undefined {
  const l = name.toLowerCase();
  return s.headers.find(([k]) => k.toLowerCase() === l)?.[1];
}
