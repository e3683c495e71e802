// The input end of the filter chain: HTTP_IN (httpd's ap_http_filter, reading the body as the
// connection frames it: Content-Length or chunked, LimitRequestBody) under the request's
// input filters, linked on the first read.

import type { Request } from '../request/request.js';
import { FilterError, FTYPE_PROTOCOL, type InputFilterInstance, type InputFilterSpec, instantiateInput } from '../filters.js';
import { coreDir } from '../core/config.js';
import { DEFAULT_LIMIT_REQUEST_BODY } from './http-core.js';

/** HTTP_IN: the body's pieces as they arrive; nothing for a request without a body. */
export const httpInFilter: InputFilterSpec<null> = {
  name: 'HTTP_IN',
  type: FTYPE_PROTOCOL,
  read(f) {
    const r = f.r;
    const body = r.body;
    if (body === null || body.done) return Promise.resolve(null);
    return body.next(coreDir(r).limitRequestBody ?? DEFAULT_LIMIT_REQUEST_BODY);
  },
};

/** The next piece of r's body through its input filters. */
export function readBody(r: Request): Promise<Buffer | null> {
  let head = r.inputHead;
  if (head === null) {
    const chain = r.inputFilters;
    chain.push(instantiateInput(httpInFilter as InputFilterSpec<unknown>, r) as InputFilterInstance);
    for (let i = 0; i < chain.length; i++) chain[i]!.next = chain[i + 1] ?? null;
    head = chain[0]!;
  }
  while (head.removed && head.next) head = head.next;
  r.inputHead = head;
  return head.spec.read(head);
}

/** Reads and drops what is left of r's body through its input filters (httpd's
 *  ap_discard_request_body); resolves to OK (0) or the status reading failed with. */
export async function discardBody(r: Request): Promise<number> {
  try {
    while ((await readBody(r)) !== null) { /* dropped */ }
    return 0;
  } catch (e) {
    if (e instanceof FilterError) return e.status;
    throw e;
  }
}
