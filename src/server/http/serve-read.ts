// What follows the reading of a request's head, the same for an HTTP/1.x connection
// (connection.ts) and an HTTP/2 stream (mod_http2's stream.ts): post_read_request, the checks
// of ap_post_read_request (only http and https absolute URIs when no forward proxy took the
// request; the URL path decoded), then the
// request's phases or its error response; and the internal error of a step that threw.

import type { Runtime } from '../runtime.js';
import type { Request } from '../request/request.js';
import { processRequest, die } from '../request/lifecycle.js';
import { runAll } from '../hooks.js';
import { OK, type MaybePromise } from '../module.js';
import { decodeUrlPath } from './uri.js';
import { isHttpScheme } from './protocol.js';
import { APLOG_ERR } from '../log/levels.js';

/** post_read_request, then the lifecycle (or die with the status a step answered);
 *  `scheme`: the request target's scheme when it was an absolute URI. */
export function serveReadRequest(rt: Runtime, r: Request, scheme: string | undefined): MaybePromise<void> {
  const pr = runAll(rt.hooks.postReadRequest, r);
  if (pr instanceof Promise) return pr.then((v) => afterPostRead(rt, r, v, scheme));
  return afterPostRead(rt, r, pr, scheme);
}

function afterPostRead(rt: Runtime, r: Request, postRead: number, scheme: string | undefined): MaybePromise<void> {
  let st = postRead;
  // Only http and https absolute URIs, unless a forward proxy took the request (proxy_detect
  // at post_read_request): those go to the proxy's scheme handlers.
  if (st === OK && scheme !== undefined && r.proxyreq === 0 && !isHttpScheme(scheme)) st = 400;
  if (st === OK) st = decodeRequestPath(r);
  if (st !== OK) {
    r.status = st;
    return die(rt, r, st);
  }
  return processRequest(rt, r);
}

/** The URL path %-decoded in place (ap_unescape_url's checks); a forward proxy request's URI
 *  is the absolute URL, passed on as it came. */
function decodeRequestPath(r: Request): number {
  const uri = r.uri;
  if (uri === '*' || uri === '' || r.proxyreq !== 0) return OK;
  const decoded = decodeUrlPath(uri, r);
  if (typeof decoded === 'number') return decoded;
  r.uri = decoded;
  return OK;
}

/** A step threw: logged (AH00526), and a 500 when nothing was sent yet. */
export async function requestFailed(rt: Runtime, r: Request, e: unknown): Promise<void> {
  r.log('core', APLOG_ERR, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
  if (!r.headersSent) {
    try { r.status = 500; await die(rt, r, 500); } catch { /* connection gone */ }
  }
}
