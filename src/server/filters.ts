// The output and input filter chains, as httpd has them (util_filter.c): filters registered by
// name with a type that orders the chain (resource, content-set, protocol, transcode,
// connection, network), output filters passing brigades of buckets down to the network,
// input filters pulling the request body up from it.
//
// ---- The API, for modules that filter (mod_deflate, mod_substitute, mod_include, ...) -----
//
// Registering: a module lists its filters in its declaration (`filters: [...]` for output,
// `inputFilters: [...]` for input; httpd's ap_register_output_filter / _input_filter). Names
// are case-insensitive and the two directions are separate name spaces (DEFLATE is both).
// A filter's `type` is one of the FTYPE_* constants, plus a small offset where httpd uses
// one (DEFLATE is FTYPE_CONTENT_SET + 1, so it runs after other content-set filters).
//
// Adding a filter to a request (ap_add_output_filter / ap_add_input_filter):
//   r.rt.addOutputFilter(r, 'DEFLATE')      by name; false (nothing added) when unknown
//   r.rt.addInputFilter(r, 'INFLATE')
//   r.rt.addFilter(r, spec)                 a spec the module holds (not by name)
// SetOutputFilter / SetInputFilter (core), AddOutputFilter / AddInputFilter (mod_mime),
// AddOutputFilterByType / FilterChain (mod_filter) and insert_filter hooks all end there. The
// chain is ordered as httpd orders it: by type, and within a type in the order added.
// `r.rt.removeOutputFilter(r, name)` takes a not yet started filter out again.
//
// An output filter (FilterSpec) gets each brigade the handler or the filter above passes:
//   filter(f, bb)   f.state is the filter's per-request state (spec.init), f.r the request.
//                   Call f.pass(bb2) for what goes on (ap_pass_brigade) and return what it
//                   returns: a promise means the socket (or a filter below) is busy — wait for
//                   it before passing more (backpressure). f.remove() takes the filter out
//                   (for the next brigade; pass the current one on yourself).
// Buckets: 'data' (bytes), 'file' (a byte range of a file, read with bucketBytes() or
// bucketPieces() only when the bytes are needed), 'flush', 'eos' (end of the response).
// A filter that changes the body must take Content-Length out of r.headersOut as httpd's do
// (HTTP_HEADER then sets it only when the whole body arrives in one brigade; otherwise the
// response is chunked, or ends with the connection for HTTP/1.0), and alter or drop ETag as
// its module does. Byte ranges are cut from the filtered body by BYTERANGE (a protocol
// filter), and only when that body reaches it in one brigade, as in httpd. Conditional
// requests are decided by the handler before the body is filtered.
// transformFilter() below does the bucket handling for a filter that maps bytes to bytes.
//
// An input filter (InputFilterSpec) is pulled: read(f) resolves to the next piece of the
// body (a Buffer) or null at its end, reading from below with f.readNext(). A failure is a
// thrown FilterError with the HTTP status the request fails with (413, 400, ...). The chain
// ends in HTTP_IN (dechunking, LimitRequestBody). Handlers read the body through the chain
// with r.read() (one piece) or r.readAll(); nobody reads r.body directly except HTTP_IN.
//
// Subrequests: rt.runSubRequest(sub, f.next) runs a looked-up subrequest with its output
// going into the calling filter's chain below the caller (httpd's SUBREQ_CORE).

import * as fs from 'node:fs';
import type { Request } from './request/request.js';
import type { MaybePromise } from './maybe-promise.js';

export type Bucket =
  | { readonly kind: 'data'; readonly data: Buffer }
  /** A byte range of a file, read only by whoever finally needs the bytes: `cached` holds the
   *  whole file when its bytes are in memory already; `sendfile` is the request's EnableSendfile. */
  | { readonly kind: 'file'; readonly path: string; readonly start: number; readonly length: number; readonly cached?: Buffer | undefined; readonly sendfile?: boolean }
  | { readonly kind: 'flush' }
  | { readonly kind: 'eos' };

export type Brigade = Bucket[];

export const EOS: Bucket = Object.freeze({ kind: 'eos' });
export const FLUSH: Bucket = Object.freeze({ kind: 'flush' });
export function dataBucket(data: Buffer | string): Bucket {
  return { kind: 'data', data: typeof data === 'string' ? Buffer.from(data, 'latin1') : data };
}

/** httpd's ap_filter_type values; lower runs first (closer to the handler). */
export const FTYPE_RESOURCE = 10;
export const FTYPE_CONTENT_SET = 20;
export const FTYPE_PROTOCOL = 30;
export const FTYPE_TRANSCODE = 40;
export const FTYPE_CONNECTION = 50;
export const FTYPE_NETWORK = 60;

/** A request or body read failed with an HTTP status (httpd's AP_FILTER_ERROR with an
 *  error bucket). */
export class FilterError extends Error {
  /** The error the filter returned, as an errno name ('EINVAL', 'ENOSPC', 'APR_EGENERAL'):
   *  what a reader logging the failure prints before its message ("(22)Invalid argument: "),
   *  through rt.errno(e). */
  readonly code: string | undefined;
  constructor(readonly status: number, message?: string, code?: string) {
    super(message ?? `filter error ${status}`);
    this.code = code;
  }
}

// ---- output filters -----------------------------------------------------------------------

export interface FilterSpec<S = unknown> {
  /** The name used by SetOutputFilter / AddOutputFilter / AddOutputFilterByType. */
  readonly name: string;
  readonly type: number;
  /** Per-request state created when the filter is added. */
  readonly init?: (r: Request) => S;
  /** Handles one brigade; calls f.pass() for what goes on. */
  readonly filter: (f: FilterInstance<S>, bb: Brigade) => MaybePromise<void>;
}

export class FilterInstance<S = unknown> {
  next: FilterInstance | null = null;
  removed = false;
  constructor(
    readonly spec: FilterSpec<S>,
    readonly r: Request,
    public state: S,
  ) {}
  /** Passes a brigade to the next filter (ap_pass_brigade). */
  pass(bb: Brigade): MaybePromise<void> {
    let n = this.next;
    while (n && n.removed) n = n.next;
    if (!n) return;
    return n.spec.filter(n, bb);
  }
  /** Takes this filter out of the chain (ap_remove_output_filter). */
  remove(): void {
    this.removed = true;
  }
}

/** Creates a filter instance with its initial state. */
export function instantiate<S>(spec: FilterSpec<S>, r: Request): FilterInstance<S> {
  const state = spec.init ? spec.init(r) : (undefined as S);
  return new FilterInstance(spec, r, state);
}

/** Inserts a filter into a chain ordered by type (later additions of the same type go after,
 *  as util_filter.c's INSERT_BEFORE has it). */
export function insertFilter<F extends { readonly spec: { readonly type: number } }>(chain: F[], f: F): void {
  let i = chain.length;
  while (i > 0 && chain[i - 1]!.spec.type > f.spec.type) i--;
  chain.splice(i, 0, f);
}

/** Links a chain: each instance's next. */
export function linkChain(chain: FilterInstance[]): FilterInstance | null {
  for (let i = 0; i < chain.length; i++) chain[i]!.next = chain[i + 1] ?? null;
  return chain[0] ?? null;
}

// ---- reading buckets ----------------------------------------------------------------------

/** The bytes of a bucket (empty for metadata). A file bucket without cached bytes is read
 *  whole: use bucketPieces() for files that may be large. */
export function bucketBytes(b: Bucket): MaybePromise<Buffer> {
  if (b.kind === 'data') return b.data;
  if (b.kind !== 'file') return EMPTY;
  if (b.cached) return b.start === 0 && b.length === b.cached.length ? b.cached : b.cached.subarray(b.start, b.start + b.length);
  return readRange(b.path, b.start, b.length);
}

const EMPTY = Buffer.alloc(0);
/** How much of a file a filter reads at a time (httpd reads file buckets in 8 KB pieces, or
 *  maps them whole; a larger piece costs fewer reads). */
export const FILE_PIECE = 64 * 1024;

/** Calls `each` with the bytes of a bucket piece by piece (a file in `pieceSize` reads,
 *  FILE_PIECE by default), waiting for what `each` returns before the next piece: the reader
 *  is never ahead of the filter. A data bucket is one piece. */
export function bucketPieces(b: Bucket, each: (data: Buffer) => MaybePromise<void>, pieceSize = FILE_PIECE): MaybePromise<void> {
  if (b.kind !== 'file' || b.length <= pieceSize) {
    const v = bucketBytes(b);
    return v instanceof Promise ? v.then(each) : each(v);
  }
  const cached = b.cached;
  if (cached) {
    const go = (pos: number): MaybePromise<void> => {
      const end = b.start + b.length;
      for (; pos < end; pos += pieceSize) {
        const r = each(cached.subarray(pos, Math.min(end, pos + pieceSize)));
        if (r instanceof Promise) { const n = pos + pieceSize; return r.then(() => go(n)); }
      }
      return undefined;
    };
    return go(b.start);
  }
  return (async () => {
    const fh = await fs.promises.open(b.path, 'r');
    try {
      let pos = b.start;
      const end = b.start + b.length;
      while (pos < end) {
        const n = Math.min(pieceSize, end - pos);
        const buf = Buffer.allocUnsafe(n);
        const { bytesRead } = await fh.read(buf, 0, n, pos);
        if (bytesRead === 0) throw new FilterError(500, `short read of ${b.path}`);
        pos += bytesRead;
        await each(bytesRead === n ? buf : buf.subarray(0, bytesRead));
      }
    } finally {
      await fh.close();
    }
  })();
}

async function readRange(path: string, start: number, length: number): Promise<Buffer> {
  const fh = await fs.promises.open(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(buf, got, length - got, start + got);
      if (bytesRead === 0) throw new FilterError(500, `short read of ${path}`);
      got += bytesRead;
    }
    return buf;
  } finally {
    await fh.close();
  }
}

/** Whether a brigade ends the response (its last bucket is EOS). */
export function endsResponse(bb: Brigade): boolean {
  return bb.length > 0 && bb[bb.length - 1]!.kind === 'eos';
}

/** The byte length of the data and file buckets of a brigade. */
export function brigadeLength(bb: Brigade): number {
  let n = 0;
  for (const b of bb) if (b.kind === 'data') n += b.data.length; else if (b.kind === 'file') n += b.length;
  return n;
}

// ---- a byte-transforming output filter -------------------------------------------------------

/** What a transforming filter does with the bytes (each may answer at once or later). */
export interface Transform {
  /** Bytes of the body in; bytes out (none, one buffer, several). */
  write(data: Buffer): MaybePromise<Buffer | readonly Buffer[] | null>;
  /** A FLUSH bucket came: everything held so far out (optional). */
  flush?(): MaybePromise<Buffer | readonly Buffer[] | null>;
  /** EOS: the rest out. */
  end(): MaybePromise<Buffer | readonly Buffer[] | null>;
}

export interface TransformOptions {
  /** Pass the output on once this many bytes are pending and more input follows (mod_deflate's
   *  DeflateBufferSize); by default output goes on at the end of each input brigade. */
  readonly passAt?: number;
  /** Keep pending output at the end of an input brigade that does not end the response (a
   *  filter whose module passes only full buffers, FLUSH and EOS: mod_deflate); the output
   *  waits in `held`, which the filter keeps in its state from one brigade to the next. */
  readonly holdAtBrigadeEnd?: boolean;
  readonly held?: Bucket[];
}

/**
 * Runs one brigade through `t`, passing the output down as httpd's transforming filters do:
 * input read piece by piece (file buckets included), output passed on at `passAt` bytes, at a
 * FLUSH (with the FLUSH) and at EOS (with the EOS), each pass waited for (backpressure).
 */
export function transformBrigade<S>(f: FilterInstance<S>, bb: Brigade, t: Transform, opts: TransformOptions = {}): MaybePromise<void> {
  if (opts.holdAtBrigadeEnd && opts.held === undefined) throw new Error('transformBrigade: holdAtBrigadeEnd needs a held array kept in the filter state');
  const out: Bucket[] = opts.held ?? [];
  let pending = brigadeLength(out);
  const passAt = opts.passAt ?? Infinity;
  const add = (v: Buffer | readonly Buffer[] | null): void => {
    if (v === null) return;
    if (Buffer.isBuffer(v)) { if (v.length) { out.push({ kind: 'data', data: v }); pending += v.length; } return; }
    for (const b of v) if (b.length) { out.push({ kind: 'data', data: b }); pending += b.length; }
  };
  const passOut = (extra?: Bucket): MaybePromise<void> => {
    if (extra) out.push(extra);
    if (out.length === 0) return;
    const send = out.splice(0, out.length);
    pending = 0;
    return f.pass(send);
  };
  const onData = (data: Buffer): MaybePromise<void> => {
    if (data.length === 0) return;
    const v = t.write(data);
    const after = (o: Buffer | readonly Buffer[] | null): MaybePromise<void> => {
      add(o);
      if (pending >= passAt) return passOut();
    };
    return v instanceof Promise ? v.then(after) : after(v);
  };
  const step = (b: Bucket): MaybePromise<void> => {
    if (b.kind === 'data' || b.kind === 'file') return bucketPieces(b, onData);
    if (b.kind === 'flush') {
      const v = t.flush ? t.flush() : null;
      return v instanceof Promise ? v.then((o) => { add(o); return passOut(b); }) : (add(v), passOut(b));
    }
    const v = t.end();
    return v instanceof Promise ? v.then((o) => { add(o); return passOut(b); }) : (add(v), passOut(b));
  };
  for (let i = 0; i < bb.length; i++) {
    const res = step(bb[i]!);
    if (res instanceof Promise) {
      return (async () => {
        await res;
        for (let j = i + 1; j < bb.length; j++) await step(bb[j]!);
        if (!opts.holdAtBrigadeEnd && !endsResponse(bb) && bb[bb.length - 1]?.kind !== 'flush') await passOut();
      })();
    }
  }
  if (!opts.holdAtBrigadeEnd && !endsResponse(bb) && bb[bb.length - 1]?.kind !== 'flush') return passOut();
  return undefined;
}

// ---- input filters -------------------------------------------------------------------------

export interface InputFilterSpec<S = unknown> {
  /** The name used by SetInputFilter / AddInputFilter. */
  readonly name: string;
  readonly type: number;
  readonly init?: (r: Request) => S;
  /** The next piece of the body, or null at its end; throws a FilterError to fail the
   *  request with its status. */
  readonly read: (f: InputFilterInstance<S>) => Promise<Buffer | null>;
}

export class InputFilterInstance<S = unknown> {
  next: InputFilterInstance | null = null;
  removed = false;
  constructor(
    readonly spec: InputFilterSpec<S>,
    readonly r: Request,
    public state: S,
  ) {}
  /** Reads from the filter below (ap_get_brigade on f->next). */
  readNext(): Promise<Buffer | null> {
    let n = this.next;
    while (n && n.removed) n = n.next;
    if (!n) return Promise.resolve(null);
    return n.spec.read(n);
  }
  /** Takes this filter out of the chain (ap_remove_input_filter). */
  remove(): void {
    this.removed = true;
  }
}

export function instantiateInput<S>(spec: InputFilterSpec<S>, r: Request): InputFilterInstance<S> {
  const state = spec.init ? spec.init(r) : (undefined as S);
  return new InputFilterInstance(spec, r, state);
}
