// The request lifecycle (httpd's server/request.c ap_process_request_internal and
// http_request.c). The order of the phases lives in processRequestInternal and nowhere
// else: do not duplicate this logic elsewhere, or the security model will be broken.

import type { Runtime } from '../runtime.js';
import { Request, type Merged } from './request.js';
import { DECLINED, DONE, OK, type MaybePromise } from '../module.js';
import { runAll, runFirst, runQuickHandler, runVoid } from '../hooks.js';
import { ifWalk, locationWalk, serverBase } from './walk.js';
import { coreDir, coreServer, errorDocumentFor } from '../core/config.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_ERR, APLOG_TRACE3 } from '../log/levels.js';
import { sendErrorResponse, finalizeResponse, isValidStatus } from '../http/response.js';
import { dropsConnection } from '../http/keepalive.js';
import { DEFAULT_LOG_LEVEL } from '../log/levels.js';
import { decodeUrlPath } from '../http/uri.js';
import { satisfies } from './satisfy.js';
import { loadRemedy } from '../config/remedies.js';
import { FilterError, type FilterInstance } from '../filters.js';

function declDie(r: Request, status: number, phase: string): number {
  if (status === DECLINED) {
    r.log('core', APLOG_CRIT, `AH00025: configuration error:  couldn't ${phase}: ${r.uri}`);
    // The specification's remedy (7.1): in 2.4 mod_authn_core decides how a user is checked.
    // DIFFERENCE: httpd logs no remedy line.
    if (phase === 'check user' && !r.rt.ctx.isLoaded('authn_core_module')) {
      r.log('core', APLOG_CRIT, loadRemedy(r.rt.ctx, 'authn_core_module', 'AuthType and the check of the user'));
    }
    return 500;
  }
  if (r.wantsLog('core', APLOG_TRACE3)) r.log('core', APLOG_TRACE3, `auth phase '${phase}' gave status ${status}: ${r.uri}`);
  return status;
}

function applyLogLevel(r: Request): void {
  r.logLevel = coreDir(r).logLevel ?? r.server.logLevel ?? DEFAULT_LOG_LEVEL;
}

/** Continues with `k` once `v` is known: synchronously when it already is, so a request whose
 *  hooks all answer at once never waits for the microtask queue. */
function then<T, U>(v: MaybePromise<T>, k: (x: T) => MaybePromise<U>): MaybePromise<U> {
  return v instanceof Promise ? v.then(k) : k(v);
}

/** Every phase from translation to fixups. Returns OK or an HTTP status. The phases run
 *  synchronously until a hook returns a promise. */
export function processRequestInternal(rt: Runtime, r: Request, fileReq = false): MaybePromise<number> {
  r.matchedSections = [];
  if (fileReq) return storagePhase(rt, r);
  // httpd's walk_location_and_if before pre_translate_name (whose merge is then thrown away:
  // with <If> sections it is walked again, their conditions evaluated again, as httpd does),
  // and before translate_name.
  const loc = locationWalk(rt, r, serverBase(r));
  if (!hasIf(loc)) return translatePhase(rt, r, loc);
  return then(ifWalk(rt, r, loc), () => {
    r.matchedSections = [];
    return then(ifWalk(rt, r, locationWalk(rt, r, serverBase(r))), (early) => translatePhase(rt, r, early));
  });
}

function hasIf(m: Merged): boolean {
  return coreDir({ perDirConfig: m.vec }).secIf.length > 0;
}

function translatePhase(rt: Runtime, r: Request, early: Merged): MaybePromise<number> {
  r.perDirConfig = early.vec;
  applyLogLevel(r);
  return then(runFirst(rt.hooks.translateName, r), (t) => (t !== OK ? declDie(r, t, 'translate') : storagePhase(rt, r)));
}

function storagePhase(rt: Runtime, r: Request): MaybePromise<number> {
  r.perDirConfig = r.server.lookupDefaults;
  r.matchedSections = [];
  return then(runFirst(rt.hooks.mapToStorage, r), (m) => {
    if (m !== OK && m !== DECLINED) return m;
    const walked = r.storageWalk;
    const storage: Merged = walked !== null && walked.vec === r.perDirConfig ? walked : { key: 'x' + Math.random(), vec: r.perDirConfig };
    // Rerun the location walk (it overrides map_to_storage's configuration), then <If>.
    return then(ifWalk(rt, r, locationWalk(rt, r, storage)), (full) => {
      r.perDirConfig = full.vec;
      applyLogLevel(r);
      if (r.main !== null) return accessPhase(rt, r);
      return then(runAll(rt.hooks.headerParser, r), (hp) => (hp !== OK ? hp : accessPhase(rt, r)));
    });
  });
}

/** Authentication and authorization, skipped when an earlier request on the same
 *  configuration already passed them (internal redirects and subrequests). */
function accessPhase(rt: Runtime, r: Request): MaybePromise<number> {
  const h = rt.hooks;
  if (r.prev && r.prev.perDirConfig === r.perDirConfig) {
    r.user = r.prev.user;
    r.apAuthType = r.prev.apAuthType;
    return typePhase(rt, r);
  }
  if (r.main && r.main.perDirConfig === r.perDirConfig) {
    r.user = r.main.user;
    r.apAuthType = r.main.apAuthType;
    return typePhase(rt, r);
  }
  if (satisfies(r) === 'any') {
    return then(runAll(h.accessChecker, r), (a) => {
      if (a === OK) return typePhase(rt, r);
      return then(authPhases(rt, r, '00028'), (st) => (st !== OK ? st : typePhase(rt, r)));
    });
  }
  return then(runAll(h.accessChecker, r), (a) => {
    if (a !== OK) return declDie(r, a, 'check access (with Satisfy All)');
    return then(authPhases(rt, r, '00027'), (st) => (st !== OK ? st : typePhase(rt, r)));
  });
}

function authPhases(rt: Runtime, r: Request, noAuthTag: string): MaybePromise<number> {
  const h = rt.hooks;
  return then(runFirst(h.accessCheckerEx, r), (ax) => {
    if (ax === OK) return OK;
    if (ax !== DECLINED) return declDie(r, ax, 'check access');
    return then(runFirst(h.checkUserId, r), (u) => {
      if (u !== OK) return declDie(r, u, 'check user');
      if (r.user === undefined) {
        r.log('core', APLOG_ERR, `AH${noAuthTag}: No authentication done but request not allowed without authentication for ${r.uri}. Authentication not configured?`);
        return declDie(r, 500, 'check user');
      }
      return then(runFirst(h.authChecker, r), (z) => (z !== OK ? declDie(r, z, 'check authorization') : OK));
    });
  });
}

function typePhase(rt: Runtime, r: Request): MaybePromise<number> {
  return then(runFirst(rt.hooks.typeChecker, r), (tc) => {
    if (tc !== OK) return declDie(r, tc, 'find types');
    return runAll(rt.hooks.fixups, r);
  });
}

/** Runs the handler (httpd's ap_invoke_handler). Without a configured handler the content
 *  type (without parameters) names it; the configured value is put back afterwards, so %R
 *  logs only a handler that was set. */
export function invokeHandler(rt: Runtime, r: Request): MaybePromise<number> {
  // SetOutputFilter / SetInputFilter first: httpd's core_insert_filter is the first of the
  // insert_filter hooks of the middle (the core is the first module), so its filters come
  // before those of the same type that other modules add.
  addConfiguredFilters(rt, r);
  return then(runVoid(rt.hooks.insertFilter, r), () => {
    const oldHandler = r.handler;
    if (r.handler === undefined) r.handler = r.contentType !== undefined ? handlerForType(r.contentType) : '';
    return then(runFirst(rt.hooks.handler, r), (res) => {
      r.handler = oldHandler;
      if (res === DECLINED) {
        if (r.handler !== undefined && r.filename !== '') {
          r.log('core', APLOG_ERR, `AH00523: handler "${r.handler}" not found for: ${r.filename}`);
        }
        return 500;
      }
      if (res !== OK && res !== DONE && !isValidStatus(res)) {
        r.log('core', APLOG_ERR, `AH00524: Handler for ${r.handler ?? '(null)'} returned invalid result code ${res}`);
        return 500;
      }
      return res;
    });
  });
}

/** SetOutputFilter and SetInputFilter (httpd's core_insert_filter); an unknown name is logged
 *  as ap_add_*_filter logs it. */
function addConfiguredFilters(rt: Runtime, r: Request): void {
  const c = coreDir(r);
  if (c.outputFilters !== undefined) {
    for (const name of c.outputFilters) {
      if (!rt.addOutputFilter(r, name)) r.log('core', APLOG_ERR, `AH00082: an unknown filter was not added: ${name}`);
    }
  }
  if (c.inputFilters !== undefined) {
    for (const name of c.inputFilters) {
      if (!rt.addInputFilter(r, name)) r.log('core', APLOG_ERR, `AH00082: an unknown filter was not added: ${name}`);
    }
  }
}

/** The handler name a content type stands for: its media type, trailing blanks removed. */
const typeHandlers = new Map<string, string>();
function handlerForType(t: string): string {
  let h = typeHandlers.get(t);
  if (h === undefined) {
    h = t.split(';')[0]!.replace(/ +$/, '');
    if (typeHandlers.size >= 1024) typeHandlers.clear();
    typeHandlers.set(t, h);
  }
  return h;
}

function internalError(r: Request, e: unknown): number {
  // A filter failed and logged why: the request ends with its status (httpd's filters return
  // an error the handler maps to a status; once the head went out the connection is cut).
  if (e instanceof FilterError) return e.status;
  r.log('core', APLOG_ERR, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
  return 500;
}

/** The phases then the handler; a thrown error or a rejected promise is a 500. */
function runRequest(rt: Runtime, r: Request): MaybePromise<number> {
  let v: MaybePromise<number>;
  try {
    v = then(processRequestInternal(rt, r), (st) => (st === OK ? invokeHandler(rt, r) : st));
  } catch (e) {
    return internalError(r, e);
  }
  return v instanceof Promise ? v.catch((e: unknown) => internalError(r, e)) : v;
}

/** Processes a request to the end: the quick handlers, else the phases and the handler; then
 *  error handling (ap_process_request). */
export function processRequest(rt: Runtime, r: Request): MaybePromise<void> {
  if (rt.hooks.quickHandler !== null) return then(runQuick(rt, r), (status) => die(rt, r, status));
  return then(runRequest(rt, r), (status) => die(rt, r, status));
}

/** httpd's ap_run_quick_handler(r, 0) before ap_process_request_internal: a quick handler that
 *  answers anything but DECLINED decides the request without the phases. */
function runQuick(rt: Runtime, r: Request): MaybePromise<number> {
  // What httpd's read_request leaves there: the server's defaults (no section walked yet).
  r.perDirConfig = r.server.lookupDefaults;
  let v: MaybePromise<number>;
  try {
    v = then(runQuickHandler(rt.hooks.quickHandler!, r, false), (st) => (st === DECLINED ? runRequest(rt, r) : st));
  } catch (e) {
    return internalError(r, e);
  }
  return v instanceof Promise ? v.catch((e: unknown) => internalError(r, e)) : v;
}

/**
 * httpd's ap_die_r: DONE/OK finish, errors go through ErrorDocument or the canned page.
 * `recursiveError` is the status the request carried in (an internal redirect inherits its
 * parent's): anything but 200 means an error while serving an ErrorDocument, reported on the
 * first failing request with the "Additionally..." note and no second ErrorDocument.
 */
export function die(rt: Runtime, r: Request, type: number, recursiveError = 200): MaybePromise<void> {
  // The common case: the handler sent everything.
  if ((type === DONE || type === OK) && r.eosSent) return;
  // A handler that served the request by an internal redirect (mod_rewrite's per-directory
  // result): the last request of the chain answered (ap_finalize_request_protocol).
  if ((type === DONE || type === OK) && r.next !== null) {
    let last = r.next;
    while (last.next !== null) last = last.next;
    if (last.eosSent) return;
  }
  return dieSlow(rt, r, type, recursiveError);
}

/** The rest of ap_die_r; synchronous for a generated error page (no promise unless the
 *  socket or a filter makes it wait), asynchronous for an ErrorDocument URL. */
function dieSlow(rt: Runtime, r: Request, type: number, recursiveError: number): MaybePromise<void> {
  if (type === DONE || type === OK) {
    if (!r.eosSent && type === OK && r.status >= 400 && !r.headersSent && r.prev === null) {
      return sendErrorResponse(rt, r, 0);
    }
    return finalizeResponse(rt, r);
  }
  let first: Request = r;
  let custom: string | undefined;
  if (recursiveError !== 200) {
    while (first.prev && first.prev.status !== 200) first = first.prev;
  } else {
    custom = errorDocumentFor(r, type);
    recursiveError = 0;
  }
  r.status = type;
  // The authentication modules answer 401 for proxy requests too: a forward proxy's is 407.
  if (type === 401 && r.proxyreq === 1) r.status = 407;
  if (dropsConnection(type)) r.connection.keepAlive = false;
  if (custom !== undefined && custom !== '' && !custom.startsWith('"')) {
    if (custom.startsWith('/')) return errorDocumentRedirect(rt, r, custom);
    r.status = 302;
    r.headersOut.set('Location', custom);
  }
  return sendErrorResponse(rt, first, recursiveError);
}

/** An ErrorDocument naming a local URL: served by an internal redirect. */
async function errorDocumentRedirect(rt: Runtime, r: Request, custom: string): Promise<void> {
  r.noLocalCopy = true;
  r.subprocessEnv.set('REQUEST_METHOD', r.method);
  const notes = r.notes.get('error-notes');
  if (notes !== undefined) r.subprocessEnv.set('ERROR_NOTES', notes);
  // The ErrorDocument is fetched with GET (a HEAD stays header-only); the original
  // method is put back for %<m.
  const method = r.method;
  r.method = 'GET';
  await internalRedirectTo(rt, r, custom, false);
  r.method = method;
}

export { errorDocumentFor };

// ---- internal redirects and subrequests ---------------------------------------------------

function splitUri(uri: string): { path: string; args: string | undefined } {
  const q = uri.indexOf('?');
  return q < 0 ? { path: uri, args: undefined } : { path: uri.slice(0, q), args: uri.slice(q + 1) };
}

function cloneForRedirect(rt: Runtime, r: Request, uri: string): Request {
  const n = new Request(rt, r.connection, r.server);
  n.theRequest = r.theRequest;
  n.method = r.method;
  n.protocol = r.protocol;
  n.protoNum = r.protoNum;
  n.assbackwards = r.assbackwards;
  n.headerOnly = r.headerOnly;
  n.hostname = r.hostname;
  n.parsedPort = r.parsedPort;
  n.requestTime = r.requestTime;
  n.startMicros = r.startMicros;
  n.useragentIp = r.useragentIp;
  n.headersIn = r.headersIn;
  n.body = r.body;
  n.expecting100 = r.expecting100;
  n.unparsedUri = uri;
  const { path, args } = splitUri(uri);
  const decoded = decodeUrlPath(path);
  n.uri = typeof decoded === 'number' ? path : decoded;
  n.args = args;
  n.logLevel = r.logLevel;
  n.perDirConfig = r.server.lookupDefaults;
  return n;
}

/** ap_internal_redirect: serves `uri` instead; the new request carries REDIRECT_* vars. */
export async function internalRedirect(rt: Runtime, r: Request, uri: string): Promise<void> {
  await internalRedirectTo(rt, r, uri, false);
}

/** ap_internal_redirect_handler: as internalRedirect, but a request that had a handler passes
 *  its content type on to the new request before that one is processed (mod_asis). */
export async function internalRedirectHandler(rt: Runtime, r: Request, uri: string): Promise<void> {
  await internalRedirectTo(rt, r, uri, true);
}

/** The request an internal redirect of r to `uri` serves (internal_internal_redirect without
 *  running it): the status, error headers and Location carried over, the environment renamed
 *  REDIRECT_*. `plume explain` follows a handler's redirect with it. */
export function redirectRequest(rt: Runtime, r: Request, uri: string): Request {
  const n = cloneForRedirect(rt, r, uri);
  n.prev = r;
  r.next = n;
  if (r.main !== null) {
    // A subrequest's redirect stays a subrequest of the same request: its output goes on into
    // the parent's chain where r's went, without r's own filters (they stay with r).
    n.main = r.main;
    n.subreqNext = r.subreqNext;
    n.body = null;
  }
  n.status = r.status;
  if (r.status >= 300 && r.status < 400) {
    const loc = r.headersOut.get('Location');
    if (loc !== undefined) n.headersOut.set('Location', loc);
  }
  n.errHeadersOut = r.errHeadersOut;
  n.noLocalCopy = r.noLocalCopy;
  // A module (mod_rewrite) can ask for the Vary header to follow the redirect.
  if (r.notes.has('redirect-keeps-vary')) {
    n.notes.set('redirect-keeps-vary', '');
    const vary = r.headersOut.get('Vary');
    if (vary !== undefined) n.headersOut.set('Vary', vary);
  }
  // A type map's variant list validator stays with the variant it redirects to.
  n.vlistValidator = r.vlistValidator;
  // (REDIRECT_URL and REDIRECT_QUERY_STRING are CGI variables, made when a script runs.)
  for (const [k, v] of r.subprocessEnv) n.subprocessEnv.set('REDIRECT_' + k, v);
  n.subprocessEnv.set('REDIRECT_STATUS', String(r.status));
  return n;
}

/** Default LimitInternalRecursion (AP_DEFAULT_MAX_INTERNAL_REDIRECTS, _MAX_SUBREQ_DEPTH). */
const DEFAULT_RECURSION_LIMIT = 10;

/**
 * ap_is_recursion_limit_exceeded: checked before a new internal redirect or subrequest of r.
 * Walks from r to the original request counting internal redirects (prev links) and
 * subrequest levels (main links) against LimitInternalRecursion; over either limit it logs
 * AH00124/AH00125 (and at debug the chain, AH00121-AH00123) and answers true.
 */
export function recursionLimitExceeded(r: Request): boolean {
  const conf = coreServer(r.server);
  const rlimit = conf.redirectLimit ?? DEFAULT_RECURSION_LIMIT;
  const slimit = conf.subreqLimit ?? DEFAULT_RECURSION_LIMIT;
  let redirects = 0;
  let subreqs = 0;
  let top: Request = r;
  while (top.prev !== null || top.main !== null) {
    if (top.prev !== null) {
      if (++redirects >= rlimit) {
        r.log('core', APLOG_ERR, `AH00124: Request exceeded the limit of ${rlimit} internal redirects due to probable configuration error. Use 'LimitInternalRecursion' to increase the limit if necessary. Use 'LogLevel debug' to get a backtrace.`);
        logBacktrace(r);
        return true;
      }
      top = top.prev;
    }
    if (top.prev === null && top.main !== null) {
      if (++subreqs >= slimit) {
        r.log('core', APLOG_ERR, `AH00125: Request exceeded the limit of ${slimit} subrequest nesting levels due to probable configuration error. Use 'LimitInternalRecursion' to increase the limit if necessary. Use 'LogLevel debug' to get a backtrace.`);
        logBacktrace(r);
        return true;
      }
      top = top.main;
    }
  }
  return false;
}

/** The chain of requests that led to r, at debug level. */
function logBacktrace(r: Request): void {
  if (!r.wantsLog('core', APLOG_DEBUG)) return;
  r.log('core', APLOG_DEBUG, `AH00121: r->uri = ${r.uri}`);
  let top: Request | null = r;
  while (top !== null && (top.prev !== null || top.main !== null)) {
    if (top.prev !== null) {
      top = top.prev;
      r.log('core', APLOG_DEBUG, `AH00122: redirected from r->uri = ${top.uri}`);
    }
    if (top.prev === null && top.main !== null) {
      top = top.main;
      r.log('core', APLOG_DEBUG, `AH00123: subrequested from r->uri = ${top.uri}`);
    }
  }
}

async function internalRedirectTo(rt: Runtime, r: Request, uri: string, keepType: boolean): Promise<void> {
  if (recursionLimitExceeded(r)) {
    await die(rt, r, 500, r.status);
    return;
  }
  // httpd's internal_internal_redirect: the new request inherits the status (an ErrorDocument
  // is served with the error's status), the error headers and, for a redirect status, the
  // Location; the environment is renamed REDIRECT_*.
  const n = redirectRequest(rt, r, uri);
  if (keepType && r.handler !== undefined) n.contentType = r.contentType;
  let status: number;
  try {
    // post_read_request runs again for the new request (mod_setenvif, mod_headers early).
    status = await runAll(rt.hooks.postReadRequest, n);
    if (status === OK) {
      // ap_internal_redirect asks the quick handlers first, as ap_process_request does.
      status = rt.hooks.quickHandler !== null ? await runQuickHandler(rt.hooks.quickHandler, n, false) : DECLINED;
      if (status === DECLINED) {
        status = await processRequestInternal(rt, n);
        if (status === OK) status = await invokeHandler(rt, n);
      }
    }
  } catch (e) {
    n.log('core', APLOG_ERR, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
    status = 500;
  }
  await die(rt, n, status, n.status);
}

/** ap_sub_req_lookup_uri (ap_sub_req_method_uri with a method): a subrequest through every
 *  phase up to fixups. `toBeRun`: the caller will run the subrequest into a filter chain (httpd's
 *  next_filter is not NULL), so the quick handlers are asked first (lookup=1); one that answers
 *  OK can serve it, and the phases are skipped. */
export async function subRequestLookupUri(rt: Runtime, r: Request, uri: string, method = 'GET', toBeRun = false): Promise<Request> {
  // A relative URI is taken from r's directory (re-escaped, since r.uri is decoded).
  if (!uri.startsWith('/')) {
    const dir = r.uri.slice(0, r.uri.lastIndexOf('/') + 1).replace(/[%?]/g, (c) => (c === '%' ? '%25' : '%3f'));
    uri = dir + uri;
  }
  const n = cloneForRedirect(rt, r, uri);
  n.main = r;
  // The subrequest's URI is parsed afresh: no port from the Host header (ap_get_server_port
  // then falls back to the server's).
  n.parsedPort = 0;
  n.method = method;
  n.headerOnly = false;
  n.body = null;
  n.subprocessEnv = new Map(r.subprocessEnv);
  n.user = r.user;
  n.apAuthType = r.apAuthType;
  // Too deep: the subrequest is a 500 without running (httpd cannot return none).
  if (recursionLimitExceeded(r)) { n.status = 500; return n; }
  let st: number;
  try {
    st = toBeRun && rt.hooks.quickHandler !== null ? await runQuickHandler(rt.hooks.quickHandler, n, true) : DECLINED;
    if (st === DECLINED) st = await processRequestInternal(rt, n);
  } catch {
    st = 500;
  }
  n.status = st === OK ? 200 : st;
  return n;
}

/** ap_run_sub_req: the handler of a looked-up subrequest, its output into `next`. */
export async function runSubRequest(rt: Runtime, sub: Request, next: FilterInstance | null): Promise<number> {
  sub.subreqNext = next;
  let st: number;
  try {
    // ap_run_sub_req: the quick handlers first, unless the subrequest maps to an existing file.
    st = rt.hooks.quickHandler !== null && !(sub.filename !== '' && sub.finfo !== null) ? await runQuickHandler(rt.hooks.quickHandler, sub, false) : DECLINED;
    if (st !== OK) st = await invokeHandler(rt, sub);
  } catch (e) {
    st = internalError(sub, e);
  }
  if (st === DONE) st = OK;
  // ap_finalize_sub_req_protocol: the subrequest's EOS (SUBREQ_CORE drops it).
  if (!sub.eosSent && (st === OK || sub.headersSent)) await finalizeResponse(rt, sub);
  return st;
}

/** ap_sub_req_lookup_file: a subrequest for a file in r's directory. */
export async function subRequestLookupFile(rt: Runtime, r: Request, filename: string): Promise<Request> {
  const n = cloneForRedirect(rt, r, r.uri);
  n.main = r;
  n.parsedPort = 0;
  n.method = 'GET';
  n.body = null;
  n.filename = filename;
  // A file in r's own directory gets the matching URI (<Location> sections then apply to it),
  // a directory entry with its trailing slash, as ap_sub_req_lookup_file/_dirent do.
  const fdir = r.filename.slice(0, r.filename.lastIndexOf('/') + 1);
  if (fdir !== '' && filename.startsWith(fdir)) {
    const rest = filename.slice(fdir.length);
    const slash = rest.indexOf('/');
    if (rest !== '' && (slash < 0 || slash === rest.length - 1)) n.uri = r.uri.slice(0, r.uri.lastIndexOf('/') + 1) + rest;
  }
  n.perDirConfig = r.perDirConfig;
  if (recursionLimitExceeded(r)) { n.status = 500; return n; }
  let st: number;
  try {
    st = await processRequestInternal(rt, n, true);
  } catch {
    st = 500;
  }
  n.status = st === OK ? 200 : st;
  return n;
}
