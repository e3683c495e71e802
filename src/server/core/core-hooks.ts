// The core's request hooks: URL → DocumentRoot path (translate_name), the directory and
// file walks (map_to_storage), ForceType/SetHandler/AcceptPathInfo (fixups), and the
// default handler that serves static files (httpd's core.c default_handler).

import * as fs from 'node:fs';
import type { Request } from '../request/request.js';
import { DECLINED, OK, DONE } from '../module.js';
import { directoryWalk, fileWalk, serverBase } from '../request/walk.js';
import { APLOG_INFO, APLOG_ERR } from '../log/levels.js';
import { EOS, type Bucket } from '../filters.js';
import { toHttpDate } from '../log/time.js';
import { fileCache } from '../http/file-cache.js';
import { coreDir, coreServer, ETAG_UNSET, ETAG_BACKWARD } from './config.js';
import { makeEtag, etagBitsFor } from '../http/etag.js';
import { mtimeMicrosOf } from '../request/stat-cache.js';
import { meetsConditions } from '../http/conditional.js';
import { isKnownMethod, DEFAULT_LIMIT_REQUEST_BODY } from '../http/http-core.js';
import { discardBody } from '../http/http-in.js';
import { evalString, isFailure } from '../../expr/index.js';

/** DocumentRoot + URI (httpd's core_translate). */
export function translateName(r: Request): number {
  if (!r.uri.startsWith('/') && r.uri !== '*') {
    r.log('core', APLOG_ERR, `AH00126: Invalid URI in request ${r.theRequest}`);
    return 400;
  }
  const root = coreServer(r.server).documentRoot ?? DEFAULT_DOCROOT;
  const sp = r.server.path;
  if (sp !== undefined && sp !== '' && r.uri.startsWith(sp) && (sp.endsWith('/') || r.uri.length === sp.length || r.uri[sp.length] === '/')) {
    // The vhost's ServerPath is not part of the file's path under DocumentRoot.
    const rest = r.uri.slice(sp.length).replace(/^\/+/, '');
    r.filename = root.endsWith('/') ? root + rest : root + '/' + rest;
  } else {
    r.filename = root === '/' ? r.uri : root + r.uri;
  }
  r.canonicalFilename = r.filename;
  return OK;
}
export const DEFAULT_DOCROOT = '/usr/local/apache2/htdocs';

/** Directory walk, then file walk (httpd's core_map_to_storage). The merged result is
 *  left in r.perDirConfig; the location walk is applied after by the lifecycle. */
export function mapToStorage(r: Request): number {
  const d = directoryWalk(r.rt, r, serverBase(r));
  if (typeof d === 'number') return d;
  const f = fileWalk(r.rt, r, d);
  r.perDirConfig = f.vec;
  r.storageWalk = f;
  return OK;
}

/** httpd's do_nothing, the core's last type checker: without mod_mime a request simply has
 *  no type (never "couldn't find types"). */
export function coreTypeChecker(_r: Request): number {
  return OK;
}

/** ForceType, SetHandler and AcceptPathInfo (httpd's core_override_type, a fixup). */
export function coreOverrideType(r: Request): number {
  const c = coreDir(r);
  if (c.forceType !== undefined && c.forceType !== 'none') r.contentType = c.forceType;
  const h = c.handler;
  if (typeof h === 'string') {
    if (h !== 'none') r.handler = h;
  } else if (h !== undefined) {
    const v = evalString(h, r);
    if (isFailure(v)) {
      r.log('core', APLOG_ERR, `AH03154: Can't evaluate handler expression: ${v.error}`);
      return 500;
    }
    const name = handlerName(v);
    if (name !== 'none') r.handler = name;
  }
  if (r.usedPathInfo === 'default' && c.acceptPathInfo !== undefined) r.usedPathInfo = c.acceptPathInfo;
  return OK;
}

/** A SetHandler value as a handler name: lower case, except a proxy:unix URL (its socket
 *  path keeps its case). */
export function handlerName(v: string): string {
  return v.startsWith('proxy:unix') ? v : v.toLowerCase();
}

/** The Allow header value for what the default handler accepts. */
export function standardAllow(r: Request): string {
  const trace = coreServer(r.server).traceEnable !== 'off';
  return trace ? 'GET,POST,OPTIONS,HEAD,TRACE' : 'GET,POST,OPTIONS,HEAD';
}

/** httpd's make_allow for a handler that declared no method (r->allowed empty): the Allow
 *  list of its 405 holds TRACE alone (nothing with TraceEnable off). */
export function noMethodsAllow(r: Request): string {
  return coreServer(r.server).traceEnable === 'off' ? '' : 'TRACE';
}

/** httpd's default_handler: discards the request body, then serves the mapped file for
 *  GET, HEAD and POST; OPTIONS gets the Allow list, unknown methods 501, others 405. */
export function defaultHandler(r: Request): number | Promise<number> {
  if (r.body && !r.body.done) {
    // Through the request's input filters when it has any (an INFLATE input filter stops a
    // compressed bomb here too), as ap_discard_request_body reads.
    if (r.inputFilters.length > 0) return discardBody(r).then((st) => (st !== OK ? st : serve(r)));
    return r.body.discard(coreDir(r).limitRequestBody ?? DEFAULT_LIMIT_REQUEST_BODY).then((st) => (st !== OK ? st : serve(r)));
  }
  return serve(r);
}

function serve(r: Request): number | Promise<number> {
  const method = r.method;
  if (method === 'GET' || method === 'HEAD' || method === 'POST') {
    if (!r.finfo) {
      r.log('core', APLOG_INFO, `AH00128: File does not exist: ${r.filename}${r.pathInfo}`);
      return 404;
    }
    if (r.finfo.isDirectory()) {
      r.log('core', APLOG_INFO, `AH00129: Attempt to serve directory: ${r.filename}`);
      return 404;
    }
    if (r.usedPathInfo !== 'on' && r.pathInfo !== '') {
      r.log('core', APLOG_INFO, `AH00130: File does not exist: ${r.filename}${r.pathInfo}`);
      return 404;
    }
    return sendFile(r);
  }
  if (!isKnownMethod(r.rt, method)) {
    r.log('core', APLOG_ERR, `AH00135: Invalid method in request ${r.theRequest}`);
    r.headersOut.set('Allow', standardAllow(r));
    return 501;
  }
  if (method === 'OPTIONS') {
    r.headersOut.set('Allow', standardAllow(r));
    r.headersOut.set('Content-Length', '0');
    r.clength = 0;
    const w = r.write([EOS]);
    return w instanceof Promise ? w.then(() => OK) : OK;
  }
  r.headersOut.set('Allow', standardAllow(r));
  return 405;
}

function sendFile(r: Request): number | Promise<number> {
  const st = r.finfo!;
  const c = coreDir(r);
  // EnableMMAP defaults to On, EnableSendfile to Off (2.4).
  const sendfile = c.enableSendfile === 'on';
  const entry = fileCache.body(r.filename, st, c.enableMmap !== 'off', sendfile);
  if (entry === null) {
    r.log('core', APLOG_ERR, `AH00132: file permissions deny server access: ${r.filename}`, { code: 13, text: 'Permission denied' });
    return 403;
  }
  r.mtime = Math.min(mtimeMicrosOf(st, r.filename) / 1000, r.requestTime);
  r.headersOut.set('Last-Modified', toHttpDate(r.mtime));
  const etag = makeEtag(r, st, etagBitsFor(c), r.vlistValidator !== undefined ? { vlistValidator: r.vlistValidator } : undefined);
  if (etag) r.headersOut.set('ETag', etag);
  r.headersOut.set('Accept-Ranges', 'bytes');
  r.clength = st.size;
  r.headersOut.set('Content-Length', String(st.size));
  const cond = meetsConditions(r);
  const bb: Bucket[] = [];
  if (cond !== OK) {
    r.status = cond;
  } else if (st.size > 0) {
    bb.push({ kind: 'file', path: r.filename, start: 0, length: st.size, cached: entry.data, sendfile });
  }
  bb.push(EOS);
  const w = r.write(bb);
  return w instanceof Promise ? w.then(() => OK) : OK;
}

export { DONE };
