// The connection's fate after a response (httpd's ap_set_keepalive) and the marks the
// response's protocol filters read. Below both the response writer (response.ts) and the
// byterange filter, which each use it.

import type { Request } from '../request/request.js';
import type { HeaderTable } from '../request/headers.js';

/** Requests whose error response follows a body httpd's CONTENT_LENGTH filter had already
 *  seen (a failed request body read, a 416 from the byterange filter): it has no
 *  Content-Length. */
const lengthUnknown = new WeakSet<Request>();

export function markLengthUnknown(r: Request): void {
  lengthUnknown.add(r);
}

export function isLengthUnknown(r: Request): boolean {
  return lengthUnknown.has(r);
}

/**
 * ap_set_keepalive: decides whether the connection stays open after this response and adds
 * the Connection / Keep-Alive fields to `out`. Returns whether the body is to be chunked:
 * as in httpd, a body of unknown length on an HTTP/1.1 connection not already closing is
 * chunked even when a later condition then closes the connection.
 */
export function setKeepalive(r: Request, out: HeaderTable): boolean {
  const c = r.connection;
  const status = r.status;
  const hasLength = out.has('Content-Length');
  const connHdr = r.headersIn.get('Connection');
  const wantsClose = connHdr !== undefined && hasToken(connHdr, 'close');
  const s = r.server;
  const left = s.maxKeepAliveRequests - c.keepalives;
  const outConn = out.get('Connection');
  const wimpy = outConn !== undefined && hasToken(outConn, 'close');
  let kaSent = false;
  let useChunked = false;
  const keep = c.keepAlive
    && !r.expecting100
    && (r.headerOnly || status === 304 || status === 204 || hasLength
      || (r.protoNum >= 1001 && (useChunked = true)))
    && s.keepAlive && s.keepAliveTimeout > 0
    && (s.maxKeepAliveRequests === 0 || left > 0)
    && !dropsConnection(status)
    && !wimpy && !wantsClose
    && !(r.subprocessEnv.size > 0 && r.subprocessEnv.has('nokeepalive') && !r.headersIn.has('Via'))
    && ((kaSent = connHdr !== undefined && hasToken(connHdr, 'keep-alive')) || r.protoNum >= 1001);
  if (keep) {
    c.keepalives++;
    if (kaSent) {
      const secs = Math.floor(s.keepAliveTimeout / 1000);
      out.set('Keep-Alive', s.maxKeepAliveRequests ? `timeout=${secs}, max=${left}` : `timeout=${secs}`);
      out.merge('Connection', 'Keep-Alive');
    }
  } else {
    if (!wimpy) out.merge('Connection', 'close');
    // The last request allowed on a kept-alive connection still counts (%k).
    if (c.keepAlive && s.maxKeepAliveRequests && left === 0) c.keepalives++;
    c.keepAlive = false;
  }
  return useChunked;
}

/** ap_find_token: whether a comma/space separated header value holds a token (any case). */
function hasToken(value: string, token: string): boolean {
  const v = value.toLowerCase();
  let i = v.indexOf(token);
  while (i >= 0) {
    const before = i === 0 ? ' ' : v[i - 1]!;
    const after = i + token.length >= v.length ? ' ' : v[i + token.length]!;
    if ((before === ' ' || before === ',' || before === '\t') && (after === ' ' || after === ',' || after === '\t' || after === ';')) return true;
    i = v.indexOf(token, i + 1);
  }
  return false;
}

export function dropsConnection(status: number): boolean {
  return status === 400 || status === 408 || status === 411 || status === 413 || status === 414 || status === 500 || status === 503 || status === 501;
}
