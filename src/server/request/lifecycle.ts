// The request lifecycle (httpd's server/request.c ap_process_request_internal and
// http_request.c). The order of the phases lives in processRequestInternal and nowhere
// else: do not duplicate this logic elsewhere, or the security model will be broken.

import type { Runtime } from '../runtime.js';
import { Request } from './request.js';
import { DECLINED, DONE, OK } from '../module.js';
import { runAll, runFirst, runVoid } from '../hooks.js';
import { locationWalk, serverBase, type Merged } from './walk.js';
import { mergedKeys } from '../core/core-hooks.js';
import { coreDir } from '../core/core-module.js';
import { APLOG_CRIT, APLOG_ERR, APLOG_TRACE3 } from '../log/levels.js';
import { sendErrorResponse, finalizeResponse, isValidStatus } from '../http/response.js';
import { DEFAULT_LOG_LEVEL } from '../log/levels.js';
import { decodeUrlPath } from '../http/uri.js';
import { satisfies } from './satisfy.js';

function declDie(r: Request, status: number, phase: string): number {
  if (status === DECLINED) {
    r.log('core', APLOG_CRIT, `AH00025: configuration error:  couldn't ${phase}: ${r.uri}`);
    return 500;
  }
  if (r.wantsLog('core', APLOG_TRACE3)) r.log('core', APLOG_TRACE3, `auth phase '${phase}' gave status ${status}: ${r.uri}`);
  return status;
}

function applyLogLevel(r: Request): void {
  r.logLevel = coreDir(r).logLevel ?? r.server.logLevel ?? DEFAULT_LOG_LEVEL;
}

/** Every phase from translation to fixups. Returns OK or an HTTP status. */
export async function processRequestInternal(rt: Runtime, r: Request, fileReq = false): Promise<number> {
  const h = rt.hooks;
  r.matchedSections = [];
  if (!fileReq) {
    const early = locationWalk(rt, r, serverBase(r));
    r.perDirConfig = early.vec;
    applyLogLevel(r);
    const t = await runFirst(h.translateName, r);
    if (t !== OK) return declDie(r, t, 'translate');
  }
  r.perDirConfig = r.server.lookupDefaults;
  r.matchedSections = [];
  const m = await runFirst(h.mapToStorage, r);
  if (m !== OK && m !== DECLINED) return m;
  const storage: Merged = { key: mergedKeys.get(r) ?? 'x' + Math.random(), vec: r.perDirConfig };
  const full = locationWalk(rt, r, storage);
  r.perDirConfig = full.vec;
  applyLogLevel(r);

  if (r.main === null) {
    const hp = await runAll(h.headerParser, r);
    if (hp !== OK) return hp;
  }

  // Authentication and authorization, skipped when an earlier request on the same
  // configuration already passed them (internal redirects and subrequests).
  if (r.prev && r.prev.perDirConfig === r.perDirConfig) {
    r.user = r.prev.user;
    r.apAuthType = r.prev.apAuthType;
  } else if (r.main && r.main.perDirConfig === r.perDirConfig) {
    r.user = r.main.user;
    r.apAuthType = r.main.apAuthType;
  } else {
    const sat = satisfies(r);
    if (sat === 'any') {
      const a = await runAll(h.accessChecker, r);
      if (a !== OK) {
        const st = await authPhases(r, '00028');
        if (st !== OK) return st;
      }
    } else {
      const a = await runAll(h.accessChecker, r);
      if (a !== OK) return declDie(r, a, 'check access (with Satisfy All)');
      const st = await authPhases(r, '00027');
      if (st !== OK) return st;
    }
  }

  const tc = await runFirst(h.typeChecker, r);
  if (tc !== OK) return declDie(r, tc, 'find types');
  const fx = await runAll(h.fixups, r);
  if (fx !== OK) return fx;
  return OK;

  async function authPhases(r: Request, noAuthTag: string): Promise<number> {
    const ax = await runFirst(h.accessCheckerEx, r);
    if (ax === OK) return OK;
    if (ax !== DECLINED) return declDie(r, ax, 'check access');
    const u = await runFirst(h.checkUserId, r);
    if (u !== OK) return declDie(r, u, 'check user');
    if (r.user === undefined) {
      r.log('core', APLOG_ERR, `AH${noAuthTag}: No authentication done but request not allowed without authentication for ${r.uri}. Authentication not configured?`);
      return declDie(r, 500, 'check user');
    }
    const z = await runFirst(h.authChecker, r);
    if (z !== OK) return declDie(r, z, 'check authorization');
    return OK;
  }
}

/** Runs the handler (httpd's ap_invoke_handler). */
async function invokeHandler(rt: Runtime, r: Request): Promise<number> {
  const c = coreDir(r);
  await runVoid(rt.hooks.insertFilter, r);
  for (const name of c.outputFilters ?? []) rt.addOutputFilter(r, name);
  if (r.handler === undefined) {
    r.handler = r.contentType !== undefined ? r.contentType.split(';')[0]!.trim().toLowerCase() : '';
  }
  const res = await runFirst(rt.hooks.handler, r);
  if (res === DECLINED) {
    r.log('core', APLOG_ERR, `AH00524: Handler for ${r.handler} returned invalid result code ${res}`);
    return 500;
  }
  if (res !== OK && res !== DONE && !isValidStatus(res)) {
    r.log('core', APLOG_ERR, `AH00524: Handler for ${r.handler} returned invalid result code ${res}`);
    return 500;
  }
  return res;
}

/** Processes a request to the end: phases, handler, error handling (ap_process_request). */
export async function processRequest(rt: Runtime, r: Request): Promise<void> {
  let status: number;
  try {
    status = await processRequestInternal(rt, r);
    if (status === OK) status = await invokeHandler(rt, r);
  } catch (e) {
    r.log('core', APLOG_ERR, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
    status = 500;
  }
  await die(rt, r, status);
}

/** httpd's ap_die: DONE/OK finish, errors go through ErrorDocument or the canned page. */
export async function die(rt: Runtime, r: Request, type: number): Promise<void> {
  if (type === DONE || type === OK) {
    if (!r.eosSent && type === OK && r.status >= 400 && !r.headersSent) {
      await sendErrorResponse(rt, r, 0);
      return;
    }
    await finalizeResponse(rt, r);
    return;
  }
  let recursiveError = 0;
  let status = type;
  if (r.status !== 200 && r.prev) {
    // An error while serving an ErrorDocument: report the original.
    recursiveError = type;
    let o: Request = r;
    while (o.prev && o.prev.status !== 200) o = o.prev;
    status = o.status;
  }
  r.status = status;
  if (dropsConnection(status)) r.connection.keepAlive = false;
  const custom = recursiveError ? undefined : errorDocumentFor(r, status);
  if (custom !== undefined && custom !== '' && !custom.startsWith('"')) {
    if (custom.startsWith('/')) {
      if (r.method !== 'HEAD') r.method = 'GET';
      await internalRedirectTo(rt, r, custom, true);
      return;
    }
    r.status = 302;
    r.headersOut.set('Location', custom);
  }
  await sendErrorResponse(rt, r, recursiveError);
}

export function errorDocumentFor(r: Request, status: number): string | undefined {
  const docs = coreDir(r).errorDocuments;
  if (!docs) return undefined;
  return docs.get(status);
}

function dropsConnection(status: number): boolean {
  return status === 400 || status === 408 || status === 411 || status === 413 || status === 414 || status === 500 || status === 503 || status === 501;
}

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
  n.headersIn = r.headersIn;
  n.body = r.body;
  n.expecting100 = r.expecting100;
  n.unparsedUri = uri;
  const { path, args } = splitUri(uri);
  const decoded = decodeUrlPath(path);
  n.uri = typeof decoded === 'number' ? path : decoded;
  n.args = args;
  n.logLevel = r.logLevel;
  return n;
}

/** ap_internal_redirect: serves `uri` instead; the new request carries REDIRECT_* vars. */
export async function internalRedirect(rt: Runtime, r: Request, uri: string): Promise<void> {
  await internalRedirectTo(rt, r, uri, false);
}

async function internalRedirectTo(rt: Runtime, r: Request, uri: string, forError: boolean): Promise<void> {
  let depth = 0;
  for (let p: Request | null = r; p; p = p.prev) depth++;
  if (depth > 10) {
    r.log('core', APLOG_ERR, `AH00124: Request exceeded the limit of 10 internal redirects due to probable configuration error. Use 'LimitInternalRecursion' to increase the limit if necessary. Use 'LogLevel debug' to get a backtrace.`);
    r.status = 500;
    await sendErrorResponse(rt, r, 0);
    return;
  }
  const n = cloneForRedirect(rt, r, uri);
  n.prev = r;
  r.next = n;
  for (const [k, v] of r.subprocessEnv) n.subprocessEnv.set('REDIRECT_' + k, v);
  if (r.args !== undefined) n.subprocessEnv.set('REDIRECT_QUERY_STRING', r.args);
  n.subprocessEnv.set('REDIRECT_URL', r.uri);
  if (forError) {
    n.subprocessEnv.set('REDIRECT_STATUS', String(r.status));
    n.errHeadersOut = r.errHeadersOut;
  }
  const errHeaders = r.errHeadersOut;
  let status: number;
  try {
    status = await processRequestInternal(rt, n);
    if (status === OK) status = await invokeHandler(rt, n);
  } catch (e) {
    n.log('core', APLOG_ERR, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
    status = 500;
  }
  if (forError) {
    // The error document is served with the original status.
    if (status === OK && !n.headersSent) n.status = r.status;
  }
  void errHeaders;
  await die(rt, n, status);
}

/** ap_sub_req_lookup_uri: a subrequest through every phase up to fixups. */
export async function subRequestLookupUri(rt: Runtime, r: Request, uri: string): Promise<Request> {
  const n = cloneForRedirect(rt, r, uri);
  n.main = r;
  n.method = 'GET';
  n.headerOnly = false;
  n.body = null;
  n.subprocessEnv = new Map(r.subprocessEnv);
  n.user = r.user;
  n.apAuthType = r.apAuthType;
  let st: number;
  try {
    st = await processRequestInternal(rt, n);
  } catch {
    st = 500;
  }
  n.status = st === OK ? 200 : st;
  return n;
}

/** ap_sub_req_lookup_file: a subrequest for a file in r's directory. */
export async function subRequestLookupFile(rt: Runtime, r: Request, filename: string): Promise<Request> {
  const n = cloneForRedirect(rt, r, r.uri);
  n.main = r;
  n.method = 'GET';
  n.body = null;
  n.filename = filename;
  n.perDirConfig = r.perDirConfig;
  let st: number;
  try {
    st = await processRequestInternal(rt, n, true);
  } catch {
    st = 500;
  }
  n.status = st === OK ? 200 : st;
  return n;
}
