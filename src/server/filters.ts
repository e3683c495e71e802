// Output filters as httpd has them: a chain ordered by filter type (resource, content-set,
// protocol, transcode, connection, network), each filter seeing brigades of buckets and
// passing them on. A filter decides on its first brigade whether it has work and removes
// itself when it has none, so an idle filter costs nothing.

import type { Request } from './request/request.js';
import type { MaybePromise } from './module.js';

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

/** httpd's ap_filter_type values; lower runs first. */
export const FTYPE_RESOURCE = 10;
export const FTYPE_CONTENT_SET = 20;
export const FTYPE_PROTOCOL = 30;
export const FTYPE_TRANSCODE = 40;
export const FTYPE_CONNECTION = 50;
export const FTYPE_NETWORK = 60;

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

/** Inserts a filter into a chain ordered by type (later additions of the same type go after). */
export function insertFilter(chain: FilterInstance[], f: FilterInstance): void {
  let i = chain.length;
  while (i > 0 && chain[i - 1]!.spec.type > f.spec.type) i--;
  chain.splice(i, 0, f);
}

/** Links a chain: each instance's next. */
export function linkChain(chain: FilterInstance[]): FilterInstance | null {
  for (let i = 0; i < chain.length; i++) chain[i]!.next = chain[i + 1] ?? null;
  return chain[0] ?? null;
}
