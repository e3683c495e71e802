// mod_dav (modules/dav/main): WebDAV (RFC 4918 class 1 and 2) over a provider of the `dav`
// group. Its fixup takes every request but GET and POST in a Dav-enabled place for the
// "dav-handler", which answers OPTIONS, PROPFIND, PROPPATCH, MKCOL, PUT, DELETE, COPY, MOVE,
// LOCK and UNLOCK with httpd's status codes, XML bodies and error pages. Access control and
// the rest of the request cycle stay the core's.

import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import {
  ACCESS_CONF, DECLINED, DONE, HOOK_MIDDLE, MODULE_API_VERSION, OK, RSRC_CONF,
  defineModule, directive, type HookResult,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { EOS, dataBucket, FilterError } from '../../server/filters.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { statusLine } from '../../server/http/status.js';
import { escapeHtml } from '../../server/http/response.js';
import { escapeUri } from '../../server/util-script.js';
import { normalizePath } from '../../server/http/uri.js';
import { noMethodsAllow } from '../../server/core/core-hooks.js';
import { coreDir, coreServer } from '../../server/core/config.js';
import { httpScheme } from '../../server/core/server-name.js';
import type { DavFailure, DavLock, DavLockStore, DavRepository, DavResource, DeadProp, DeadProps } from './api.js';
import { activeLock, isLiveProp, propResponse, type PropRequest } from './props.js';
import { XmlError, childElem, childElems, elemToText, isDav, parseXml, type XmlDoc, type XmlElem } from './xml.js';

const DAV_HANDLER = 'dav-handler';
const XML_TYPE = 'text/xml; charset="utf-8"';
const XML_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n';
/** LimitXMLRequestBody's default (AP_DEFAULT_LIMIT_XML_BODY). */
const DEFAULT_LIMIT_XML_BODY = 1000000;
const EXPAT_TEXT = new Map([[4, 'not well-formed (invalid token)'], [7, 'mismatched tag'], [8, 'duplicate attribute'], [9, 'junk after document element'], [27, 'unbound prefix']]);

interface DavDirConfig {
  /** Provider name; undefined = not set, or Dav Off (which httpd also stores as unset: a
   *  subtree of a DAV-enabled place cannot turn it off). */
  provider: string | undefined;
  /** The merge's complaints (AH00578, AH00579), logged for each request, as httpd merges
   *  per request. */
  warnings: readonly string[];
  /** The section's path and DAVBasePath: the repository root handed to the provider. */
  dir: string | undefined;
  base: string | undefined;
  minTimeout: number | undefined;
  depthInfinity: boolean | undefined;
  lockDiscovery: boolean | undefined;
}

function createDirConfig(dirPath: string | undefined): DavDirConfig {
  return { provider: undefined, warnings: [], dir: dirPath, base: undefined, minTimeout: undefined, depthInfinity: undefined, lockDiscovery: undefined };
}

function mergeDirConfig(base: Readonly<DavDirConfig>, add: Readonly<DavDirConfig>): DavDirConfig {
  // plume may merge pre-merged section chains: their complaints carry over
  let warnings = add.warnings.length === 0 ? base.warnings : [...base.warnings, ...add.warnings];
  if (base.provider !== undefined) {
    if (add.provider === undefined) warnings = [...warnings, 'AH00578: "DAV Off" cannot be used to turn off a subtree of a DAV-enabled location.'];
    else if (add.provider.toLowerCase() !== base.provider.toLowerCase()) warnings = [...warnings, 'AH00579: A subtree cannot specify a different DAV provider than its parent.'];
  }
  return {
    provider: add.provider ?? base.provider,
    warnings,
    dir: add.dir ?? base.dir,
    base: add.base ?? base.base,
    minTimeout: add.minTimeout ?? base.minTimeout,
    depthInfinity: add.depthInfinity ?? base.depthInfinity,
    lockDiscovery: add.lockDiscovery ?? base.lockDiscovery,
  };
}

type Cmd = CmdParms<undefined, DavDirConfig>;

function davDirective(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a === 'on') cmd.dir.provider = 'filesystem';
  else if (a === 'off') cmd.dir.provider = undefined;
  else cmd.dir.provider = arg;
  const name = cmd.dir.provider;
  if (name !== undefined && cmd.ctx.provider('dav', name) === undefined) return `Unknown DAV provider: ${arg}`;
  return undefined;
}

function davBasePath(cmd: Cmd, arg: string): string | undefined {
  cmd.dir.base = arg;
  return undefined;
}

function davMinTimeout(cmd: Cmd, arg: string): string | undefined {
  const n = Number.parseInt(arg, 10);
  if (!/^\s*[+-]?\d/.test(arg) || Number.isNaN(n)) cmd.dir.minTimeout = 0;
  else if (n < 0) return 'DAVMinTimeout requires a non-negative integer.';
  else cmd.dir.minTimeout = n;
  return undefined;
}


// ---- helpers -----------------------------------------------------------------------------

/** A failed validation; `parentUri` when it was the parent collection's (a new member of a
 *  locked collection: httpd's DAV_VALIDATE_PARENT answers with a multistatus). */
interface DavError { status: number; desc: string; parentUri?: string }

const ERR_424 = 'An error occurred on another resource, preventing the requested operation on this resource.';
const NO_IF = 'This resource is locked and an "If:" header was not supplied to allow access to the resource.';

function parentResponse(e: DavError): string {
  return `<D:response>\n<D:href>${href(e.parentUri ?? '/', false)}</D:href>\n<D:status>HTTP/1.1 ${statusLine(e.status)}</D:status>\n`
    + `<D:responsedescription>A validation error has occurred on the parent resource, preventing the operation on the resource specified by the Request-URI. The error was: ${e.desc}</D:responsedescription>\n</D:response>\n`;
}

/** A new member of a locked collection (PUT, MKCOL): 207 with the member's 424 and the
 *  parent's error. */
async function parentFailure(r: Request, uri: string, e: DavError): Promise<number> {
  logErr(r, [{ status: 207, desc: 'Error(s) occurred on resources during the validation process.' }]);
  const body = `<D:response>\n<D:href>${href(uri, false)}</D:href>\n<D:status>HTTP/1.1 ${statusLine(424)}</D:status>\n<D:responsedescription>${ERR_424}</D:responsedescription>\n</D:response>\n`
    + parentResponse(e);
  return sendXml(r, 207, multistatus(undefined, body));
}

/** dav_log_err: the error chain, outermost first, as "[dav:error] desc  [status, #0]". */
function logErr(r: Request, errs: readonly DavError[]): void {
  for (const e of errs) r.log('dav', APLOG_ERR, `${e.desc}  [${e.status}, #0]`);
}

/** dav_error_response: a page of mod_dav's own, with a description. */
async function errorResponse(r: Request, status: number, body: string): Promise<number> {
  r.status = status;
  const line = statusLine(status);
  r.statusLine = line;
  r.contentType = 'text/html; charset=ISO-8859-1';
  const text = '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n'
    + `<html>\n<head>\n<title>${line}</title>\n</head><body>\n<h1>${line.slice(4)}</h1>\n<p>${body}</p>\n`
    + r.rt.signature(r, '<hr />\n') + '</body></html>\n';
  await send(r, text);
  return DONE;
}

async function send(r: Request, text: string): Promise<void> {
  const buf = Buffer.from(text, 'utf8');
  r.headersOut.set('Content-Length', String(buf.length));
  r.clength = buf.length;
  await r.write(r.headerOnly ? [EOS] : [dataBucket(buf), EOS]);
}

async function sendXml(r: Request, status: number, text: string): Promise<number> {
  r.status = status;
  r.contentType = XML_TYPE;
  await send(r, text);
  return DONE;
}

/** dav_created: 201 with a page naming the new resource, or 204 when it replaced one. */
async function created(r: Request, uri: string, what: string, replaced: boolean): Promise<number> {
  if (replaced) return 204;
  r.status = 201;
  const locn = escapeUri(uri);
  r.headersOut.set('Location', r.rt.constructUrl(r, locn));
  r.contentType = 'text/html; charset=ISO-8859-1';
  const text = '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n'
    + '<html>\n<head>\n<title>201 Created</title>\n</head><body>\n<h1>Created</h1>\n'
    + `<p>${what} ${escapeHtml(locn)} has been created.</p>\n` + r.rt.signature(r, '<hr />\n') + '</body></html>\n';
  await send(r, text);
  return DONE;
}

/** dav_get_depth: 0, 1, 'infinity', or -1 (logged) for a bad header. */
function getDepth(r: Request, def: 0 | 1 | 'infinity'): 0 | 1 | 'infinity' | -1 {
  const d = r.headersIn.get('Depth');
  if (d === undefined) return def;
  if (d.toLowerCase() === 'infinity') return 'infinity';
  if (d === '0') return 0;
  if (d === '1') return 1;
  r.log('dav', APLOG_ERR, 'AH00580: An invalid Depth header was specified.');
  return -1;
}

/** The body, as XML; undefined when there is none; a status on failure. */
async function readXmlBody(r: Request): Promise<XmlDoc | undefined | number> {
  let buf: Buffer;
  try {
    const limit = coreDir(r).limitXmlRequestBody ?? DEFAULT_LIMIT_XML_BODY;
    const parts: Buffer[] = [];
    let total = 0;
    for (let b = await r.read(); b !== null; b = await r.read()) {
      total += b.length;
      if (limit > 0 && total > limit) {
        r.log('core', APLOG_ERR, `AH00387: XML request body is larger than the configured limit of ${limit}`);
        return 413;
      }
      parts.push(b);
    }
    buf = Buffer.concat(parts);
  } catch (e) {
    if (e instanceof FilterError) return e.status;
    throw e;
  }
  if (buf.length === 0) return undefined;
  try {
    return parseXml(buf);
  } catch (e) {
    if (!(e instanceof XmlError)) throw e;
    if (e.code === 0) r.log('core', APLOG_ERR, 'AH00540: XML parser error (at end). status=20014');
    else r.log('core', APLOG_ERR, `AH00541: XML Parser Error: XML parser error code: ${EXPAT_TEXT.get(e.code) ?? 'not well-formed (invalid token)'} (${e.code})`);
    return 400;
  }
}

/** The href of a resource as mod_dav prints it (escaped, XML-quoted). */
function href(uri: string, collection: boolean): string {
  let u = escapeUri(uri);
  if (collection && !u.endsWith('/')) u += '/';
  return u.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function resourcePath(r: Request): string {
  return (r.filename + r.pathInfo).replace(/\/+$/, '') || '/';
}

// ---- If: header and lock validation (dav_validate_request) -------------------------------

interface IfCond { not: boolean; kind: 'token' | 'etag'; value: string }
interface IfList { tag: string | undefined; conds: IfCond[] }

/** Parses an If: header; undefined when it is malformed. */
export function parseIfHeader(h: string): IfList[] | undefined {
  const lists: IfList[] = [];
  let i = 0;
  let tag: string | undefined;
  const ws = (): void => { while (i < h.length && /\s/.test(h[i]!)) i++; };
  for (;;) {
    ws();
    if (i >= h.length) break;
    if (h[i] === '<') {
      const end = h.indexOf('>', i);
      if (end < 0) return undefined;
      tag = h.slice(i + 1, end);
      i = end + 1;
      continue;
    }
    if (h[i] !== '(') return undefined;
    i++;
    const conds: IfCond[] = [];
    for (;;) {
      ws();
      if (h[i] === ')') { i++; break; }
      let not = false;
      if (h.startsWith('Not', i)) { not = true; i += 3; ws(); }
      if (h[i] === '<') {
        const end = h.indexOf('>', i);
        if (end < 0) return undefined;
        conds.push({ not, kind: 'token', value: h.slice(i + 1, end) });
        i = end + 1;
      } else if (h[i] === '[') {
        const end = h.indexOf(']', i);
        if (end < 0) return undefined;
        conds.push({ not, kind: 'etag', value: h.slice(i + 1, end) });
        i = end + 1;
      } else return undefined;
    }
    lists.push({ tag, conds });
  }
  return lists;
}

/** The URL path of an If: tag (an absolute URI or a path). */
function tagPath(tag: string): string {
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/]*(\/.*)?$/.exec(tag);
  let p = m ? (m[1] ?? '/') : tag;
  try { p = decodeURIComponent(p); } catch { /* left as is */ }
  return p.replace(/\/+$/, '') || '/';
}

interface Ctx {
  r: Request;
  repo: DavRepository;
  locks: DavLockStore | undefined;
  conf: DavDirConfig;
  ifLists: IfList[] | undefined;
}

/** The tokens the If: header submits for a resource (lists that apply to it and hold). */
function submittedTokens(c: Ctx, res: DavResource, etag: string, resLocks: readonly DavLock[]): { tokens: Set<string>; failed: boolean } {
  const tokens = new Set<string>();
  if (c.ifLists === undefined) return { tokens, failed: false };
  const uri = res.uri.replace(/\/+$/, '') || '/';
  let applicable = 0;
  let held = 0;
  for (const l of c.ifLists) {
    if (l.tag !== undefined && tagPath(l.tag) !== uri) {
      // A tagged list for another resource still names tokens the client holds.
      for (const cd of l.conds) if (cd.kind === 'token' && !cd.not) tokens.add(cd.value);
      continue;
    }
    applicable++;
    let ok = true;
    for (const cd of l.conds) {
      let v: boolean;
      if (cd.kind === 'token') v = resLocks.some((lk) => lk.token === cd.value);
      else v = cd.value === etag;
      if (cd.not) v = !v;
      if (!v) ok = false;
    }
    if (ok) {
      held++;
      for (const cd of l.conds) if (cd.kind === 'token' && !cd.not) tokens.add(cd.value);
    }
  }
  return { tokens, failed: applicable > 0 && held === 0 };
}

/** dav_validate_request for a resource about to change (and what lies below it): undefined
 *  when allowed, else the error chain. */
async function validate(c: Ctx, res: DavResource, deep: boolean): Promise<DavError | undefined> {
  const locks = c.locks === undefined ? [] : await c.locks.covering(res.path);
  const below = deep && c.locks !== undefined ? await c.locks.below(res.path) : [];
  const etag = res.stat !== null ? (c.repo.liveProps(c.r, res).find(([, n]) => n === 'getetag')?.[2] ?? '') : '';
  const { tokens, failed } = submittedTokens(c, res, etag, locks);
  if (failed) return { status: 412, desc: 'The precondition(s) specified by the "If:" header did not match this resource. At least one failure is because: a State-token was supplied, but it was not found in the locks on this resource.' };
  // one submitted token of the locks on a resource is enough (several shared locks), for the
  // resource itself and for each locked resource below it
  const groups: DavLock[][] = [locks];
  const byRoot = new Map<string, DavLock[]>();
  for (const l of below) byRoot.set(l.root, [...(byRoot.get(l.root) ?? []), l]);
  groups.push(...byRoot.values());
  for (const g of groups) {
    if (g.length === 0 || g.some((l) => tokens.has(l.token))) continue;
    const l = g[0]!;
    const parentUri = !res.exists && l.root !== res.path ? path.posix.dirname(res.uri) : undefined;
    if (c.ifLists === undefined) return parentUri !== undefined ? { status: 423, desc: NO_IF, parentUri } : { status: 423, desc: NO_IF };
    return { status: 423, desc: 'This resource is locked and the "If:" header did not specify one of the locktokens for this resource\'s lock(s).' };
  }
  return undefined;
}

// ---- multistatus -------------------------------------------------------------------------

function multistatus(doc: XmlDoc | undefined, body: string): string {
  let ns = '';
  if (doc !== undefined) for (let i = doc.namespaces.length - 1; i >= 0; i--) ns += ` xmlns:ns${i}="${doc.namespaces[i]!.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"`;
  return `${XML_HEAD}<D:multistatus xmlns:D="DAV:"${ns}>\n${body}</D:multistatus>\n`;
}

async function failuresResponse(r: Request, failures: readonly DavFailure[]): Promise<number> {
  let body = '';
  for (const f of failures) body += `<D:response>\n<D:href>${href(f.uri, false)}</D:href>\n<D:status>HTTP/1.1 ${statusLine(f.status)}</D:status>\n</D:response>\n`;
  return sendXml(r, 207, multistatus(undefined, body));
}

// ---- methods -----------------------------------------------------------------------------

async function methodOptions(c: Ctx, res: DavResource): Promise<number> {
  const r = c.r;
  const lockNull = !res.exists && c.locks !== undefined && await c.locks.isLockNull(res.path);
  r.headersOut.add('DAV', c.locks !== undefined ? '1,2' : '1');
  for (const cl of c.repo.davClasses) r.headersOut.add('DAV', cl);
  r.headersOut.set('MS-Author-Via', 'DAV');
  const trace = coreServer(r.server).traceEnable !== 'off';
  let allow: string[];
  if (!res.exists && !lockNull) allow = ['OPTIONS', 'MKCOL', 'PUT'];
  else if (lockNull) allow = ['OPTIONS', 'MKCOL', 'PUT', 'PROPFIND'];
  else {
    allow = ['OPTIONS', 'GET', 'HEAD', 'POST', 'DELETE'];
    if (trace) allow.push('TRACE');
    allow.push('PROPFIND', 'PROPPATCH', 'COPY', 'MOVE');
    if (!res.collection) allow.push('PUT');
  }
  if (c.locks !== undefined) allow.push('LOCK', 'UNLOCK');
  if (!res.exists && !lockNull && c.locks !== undefined) allow = allow.filter((m) => m !== 'UNLOCK');
  r.headersOut.set('Allow', allow.join(','));
  r.headersOut.set('Content-Length', '0');
  r.clength = 0;
  if (res.exists) {
    // the type of the resource, as the core's OPTIONS reply carries it
    const sub = await r.rt.lookupUri(r, escapeUri(r.uri));
    if (sub.contentType !== undefined) r.contentType = sub.contentType;
  }
  await r.write([EOS]);
  return DONE;
}

async function contentTypeOf(r: Request, res: DavResource, lockNull: boolean): Promise<string | undefined> {
  if (!res.exists && !lockNull) return undefined;
  if (res.uri === r.uri && r.contentType !== undefined) return r.contentType;
  const sub = await r.rt.lookupUri(r, escapeUri(res.uri));
  return sub.contentType;
}

async function methodPropfind(c: Ctx, res: DavResource): Promise<number> {
  const r = c.r;
  const lockNull = !res.exists && c.locks !== undefined && await c.locks.isLockNull(res.path);
  if (!res.exists && !lockNull) return 404;
  const depth = getDepth(r, 'infinity');
  if (depth === -1) return 400;
  if (depth === 'infinity' && c.conf.depthInfinity !== true) {
    return errorResponse(r, 403, `PROPFIND requests with a Depth of "infinity" are not allowed for ${escapeHtml(r.uri)}.`);
  }
  const doc = await readXmlBody(r);
  if (typeof doc === 'number') return doc;
  let req: PropRequest = { kind: 'allprop' };
  if (doc !== undefined) {
    if (!isDav(doc, doc.root, 'propfind')) {
      r.log('dav', APLOG_ERR, 'AH00585: The "propfind" element was not found.');
      return 400;
    }
    const prop = childElem(doc, doc.root, 'DAV:', 'prop');
    if (prop !== undefined) req = { kind: 'prop', doc, names: childElems(prop) };
    else if (childElem(doc, doc.root, 'DAV:', 'propname') !== undefined) req = { kind: 'propname' };
    else if (childElem(doc, doc.root, 'DAV:', 'allprop') !== undefined) req = { kind: 'allprop' };
    else {
      r.log('dav', APLOG_ERR, 'AH00586: The "propfind" element does not contain one of the required child elements (the specific command).');
      return 400;
    }
  }
  const now = Date.now();
  let body = '';
  const one = async (x: DavResource, isLockNull: boolean): Promise<void> => {
    body += propResponse(href(x.uri, x.collection), {
      res: x,
      lockNull: isLockNull,
      dead: x.exists ? await c.repo.readProps(x) : null,
      live: c.repo.liveProps(r, x),
      locks: c.locks === undefined ? undefined : await c.locks.covering(x.path),
      lockDiscovery: c.conf.lockDiscovery !== false,
      contentType: await contentTypeOf(r, x, isLockNull),
    }, req, now);
  };
  const walk = async (x: DavResource, isLockNull: boolean, d: 0 | 1 | 'infinity'): Promise<void> => {
    await one(x, isLockNull);
    if (d === 0 || !x.collection) return;
    for (const ch of await c.repo.children(x)) await walk(ch, false, d === 1 ? 0 : d);
    if (c.locks !== undefined) {
      for (const n of await c.locks.lockNullIn(x.path)) {
        const p = path.join(x.path, n);
        const ch = await c.repo.resource((x.uri.endsWith('/') ? x.uri : x.uri + '/') + n, p);
        if (!ch.exists) await one(ch, true);
      }
    }
  };
  await walk(res, lockNull, depth);
  return sendXml(r, 207, multistatus(doc, body));
}

interface PatchOp { set: boolean; el: XmlElem }

async function methodProppatch(c: Ctx, res: DavResource): Promise<number> {
  const r = c.r;
  if (!res.exists) return 404;
  const doc = await readXmlBody(r);
  if (typeof doc === 'number') return doc;
  if (doc === undefined || !isDav(doc, doc.root, 'propertyupdate')) {
    r.log('dav', APLOG_ERR, 'AH00587: The request body does not contain a "propertyupdate" element.');
    return 400;
  }
  const v = await validate(c, res, false);
  if (v !== undefined) {
    const outer = { status: v.status, desc: `Could not PROPPATCH ${escapeHtml(r.uri)} due to a failed precondition (e.g. locks).` };
    logErr(r, [outer, v]);
    return v.status;
  }
  const ops: PatchOp[] = [];
  for (const op of childElems(doc.root)) {
    const set = isDav(doc, op, 'set');
    if (!set && !isDav(doc, op, 'remove')) continue;
    const prop = childElem(doc, op, 'DAV:', 'prop');
    if (prop === undefined) {
      r.log('dav', APLOG_ERR, 'AH00589: A "prop" element is missing inside the propertyupdate command.');
      return 400;
    }
    for (const el of childElems(prop)) ops.push({ set, el });
  }
  const nameOf = (el: XmlElem): string => (el.ns < 0 ? `<${el.name}/>` : `<ns${el.ns}:${el.name}/>`);
  const errs = ops.map((o) => (isLiveProp(o.el.ns < 0 ? '' : doc.namespaces[o.el.ns]!, o.el.name) ? 'Property is read-only.' : undefined));
  let body = '';
  const errLog: string[] = [];
  if (errs.some((e) => e !== undefined)) {
    for (let i = 0; i < ops.length; i++) {
      const e = errs[i];
      const op = ops[i]!;
      body += `<D:propstat>\n<D:prop>${nameOf(op.el)}\r\n</D:prop>\n`;
      if (e !== undefined) {
        errLog.push(`${e}  [409, #201]`);
        body += `<D:status>HTTP/1.1 409 (status)</D:status>\n<D:responsedescription>\n${e}</D:responsedescription>\n`;
      } else {
        const d = op.set ? 'Attempted DAV:set operation could not be completed due to other errors.' : 'Attempted DAV:remove operation could not be completed due to other errors.';
        if (!errLog.some((l) => l.startsWith(d))) errLog.unshift(`${d}  [424, #0]`);
        body += `<D:status>HTTP/1.1 424 (status)</D:status>\n<D:responsedescription>\n${d}</D:responsedescription>\n`;
      }
      body += '</D:propstat>\n';
    }
    for (const l of errLog) r.log('dav', APLOG_ERR, l);
  } else {
    const db: DeadProps = (await c.repo.readProps(res)) ?? { namespaces: [], props: [] };
    // every namespace of the request goes into the database's table (dav_map_namespaces)
    const map = doc.namespaces.map((u) => {
      let k = db.namespaces.indexOf(u);
      if (k < 0) { k = db.namespaces.length; db.namespaces.push(u); }
      return k;
    });
    for (const op of ops) {
      const ns = op.el.ns < 0 ? -1 : map[op.el.ns]!;
      const rest = db.props.filter((p) => !(p.name === op.el.name && p.ns === ns));
      if (op.set) {
        const lang = op.el.lang !== undefined ? ` xml:lang="${op.el.lang.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"` : '';
        const xml = elemToText(op.el, (i) => `ns${map[i]!}`, op.el.ns < 0 ? ' xmlns=""' + lang : lang);
        const p: DeadProp = { ns, name: op.el.name, xml };
        const idx = db.props.findIndex((q) => q.name === op.el.name && q.ns === ns);
        if (idx >= 0) { db.props[idx] = p; } else { rest.push(p); db.props = rest; }
      } else db.props = rest;
    }
    await c.repo.writeProps(res, db);
    body += '<D:propstat>\n<D:prop>\n';
    // apr_xml_empty_elem ends each name with APR_EOL_STR
    for (const op of ops) body += nameOf(op.el) + '\r\n';
    body += '</D:prop>\n<D:status>HTTP/1.1 200 OK</D:status>\n</D:propstat>\n';
  }
  return sendXml(r, 207, multistatus(doc, `<D:response>\n<D:href>${href(res.uri, res.collection)}</D:href>\n${body}</D:response>\n`));
}

async function bodyPresent(r: Request): Promise<boolean | number> {
  try {
    const b = await r.read();
    if (b === null) return false;
    while ((await r.read()) !== null) { /* drain */ }
    return b.length > 0 || r.body !== null;
  } catch (e) {
    if (e instanceof FilterError) return e.status;
    throw e;
  }
}

async function methodMkcol(c: Ctx, res: DavResource): Promise<number> {
  const r = c.r;
  const hasBody = await bodyPresent(r);
  if (typeof hasBody === 'number') return hasBody;
  if (hasBody) {
    return 415;
  }
  if (res.exists) {
    r.headersOut.set('Allow', noMethodsAllow(r));
    return 405;
  }
  const v = await validate(c, res, false);
  if (v !== undefined && v.parentUri !== undefined) return parentFailure(r, res.uri, v);
  if (v !== undefined) {
    logErr(r, [{ status: v.status, desc: `Could not MKCOL ${escapeHtml(r.uri)} due to a failed precondition (e.g. locks).` }, v]);
    return v.status;
  }
  const code = await c.repo.mkcol(res);
  if (code !== undefined) {
    const status = code === 'ENOENT' || code === 'ENOTDIR' ? 409 : code === 'EEXIST' ? 405 : code === 'EACCES' || code === 'EPERM' ? 403 : 500;
    const err = code === 'ENOENT' ? { code: 2, text: 'No such file or directory' } : undefined;
    r.log('dav', APLOG_ERR, `${status === 409 ? 'Cannot create collection; intermediate collection does not exist.' : 'Unable to create collection.'}  [${status}, #0]`, err);
    return status;
  }
  if (c.locks !== undefined) await c.locks.created(res.path);
  return created(r, r.uri, 'Collection', false);
}

/** The start offset of a Content-Range PUT; -1 when the header is malformed. */
export function contentRangeStart(h: string): number {
  const m = /^bytes\s+(\d+)-(\d+)\/(\d+|\*)$/.exec(h.trim());
  if (!m) return -1;
  const start = Number(m[1]);
  const end = Number(m[2]);
  if (end < start || (m[3] !== '*' && Number(m[3]) <= end)) return -1;
  return start;
}

async function methodPut(c: Ctx, res: DavResource): Promise<number> {
  const r = c.r;
  let offset: number | undefined;
  const range = r.headersIn.get('Content-Range');
  if (range !== undefined) {
    const s = contentRangeStart(range);
    if (s < 0) return errorResponse(r, 400, `Malformed Content-Range header for PUT ${escapeHtml(r.uri)}.`);
    offset = s;
  }
  if (res.collection) return errorResponse(r, 409, 'Cannot PUT to a collection.');
  const v = await validate(c, res, false);
  if (v !== undefined) {
    if (v.parentUri !== undefined) return parentFailure(r, res.uri, v);
    logErr(r, [v]);
    return v.status;
  }
  let w;
  try {
    w = await c.repo.openWrite(res, offset);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const status = code === 'ENOENT' || code === 'ENOTDIR' ? 409 : code === 'EACCES' || code === 'EPERM' ? 403 : 500;
    logErr(r, [{ status, desc: `Unable to PUT new contents for ${escapeHtml(r.uri)}.` }]);
    r.log('dav', APLOG_ERR, `An error occurred while opening a resource for writing: ${res.path}.  [${status}, #0]`, code === 'ENOENT' ? { code: 2, text: 'No such file or directory' } : r.rt.errno(e));
    return status;
  }
  try {
    for (let b = await r.read(); b !== null; b = await r.read()) await w.write(b);
    await w.commit();
  } catch (e) {
    await w.abort();
    if (e instanceof FilterError) return e.status;
    logErr(r, [{ status: 500, desc: `Unable to PUT new contents for ${escapeHtml(r.uri)}.` }]);
    return 500;
  }
  if (c.locks !== undefined) await c.locks.created(res.path);
  return created(r, r.uri, 'Resource', res.exists);
}

async function methodDelete(c: Ctx, res: DavResource): Promise<number> {
  const r = c.r;
  if (!res.exists) return 404;
  const depth = getDepth(r, 'infinity');
  if (depth === -1) return 400;
  if (res.collection && depth !== 'infinity') {
    r.log('dav', APLOG_ERR, 'AH00582: Depth must be "infinity" for DELETE of a collection.');
    return 400;
  }
  const v = await validate(c, res, true);
  if (v !== undefined) {
    logErr(r, [{ status: v.status, desc: `Could not DELETE ${escapeHtml(r.uri)} due to a failed precondition (e.g. locks).` }, v]);
    return v.status;
  }
  const failures = await c.repo.remove(res);
  if (c.locks !== undefined) await c.locks.removeAt(res.path);
  if (failures.length === 1 && failures[0]!.uri === res.uri) {
    logErr(r, [{ status: failures[0]!.status, desc: `Could not DELETE ${escapeHtml(r.uri)}.` }]);
    return failures[0]!.status;
  }
  if (failures.length > 0) return failuresResponse(r, failures);
  return 204;
}

async function methodCopyMove(c: Ctx, res: DavResource, isMove: boolean): Promise<number> {
  const r = c.r;
  if (!res.exists) return 404;
  const dest = r.headersIn.get('Destination');
  if (dest === undefined) {
    r.log('dav', APLOG_ERR, 'AH00591: The request is missing a Destination header.');
    return 400;
  }
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/.exec(dest);
  if (m === null) {
    const desc = /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(dest) || dest.startsWith('/') ? 'Destination URI must be an absolute URI.' : 'Invalid syntax in Destination URI.';
    r.log('dav', APLOG_ERR, `AH00592: ${desc}`);
    return 400;
  }
  if (m[4] !== undefined || m[5] !== undefined) {
    r.log('dav', APLOG_ERR, 'AH00592: Destination URI contains invalid components (a query or a fragment).');
    return 400;
  }
  const scheme = m[1]!.toLowerCase();
  const want = httpScheme(r);
  const port = r.connection.localPort;
  if (scheme !== want) {
    const hp = /:(\d+)$/.exec(m[2]!);
    const p = hp ? Number(hp[1]) : scheme === 'https' ? 443 : scheme === 'http' ? 80 : 0;
    return errorResponse(r, 502, `Destination URI refers to different scheme or port (${m[1]}://hostname:${p})\n(want: ${want}://hostname:${port})`);
  }
  const destPath = normalizePath(m[3] || '/', false);
  if (destPath === null) {
    r.log('core', APLOG_ERR, `AH10244: invalid URI path (${m[3]})`);
    return errorResponse(r, 400, 'Destination URI had an error.');
  }
  const sub = await r.rt.lookupUri(r, destPath, r.method);
  if (sub.status !== 200) {
    const auth = sub.errHeadersOut.get('WWW-Authenticate');
    if (sub.status === 401 && auth !== undefined) r.errHeadersOut.set('WWW-Authenticate', auth);
    return errorResponse(r, sub.status, 'Destination URI had an error.');
  }
  const dconf = self.dir(sub);
  if (dconf.provider === undefined) {
    // dav_get_resource finds no provider there: 405, as httpd answers
    logErr(r, [{ status: 405, desc: `DAV not enabled for ${escapeHtml(sub.uri)}` }]);
    r.headersOut.set('Allow', noMethodsAllow(r));
    return 405;
  }
  if (dconf.provider !== c.conf.provider) {
    return errorResponse(r, 502, 'Destination URI is handled by a different repository than the source URI. MOVE or COPY between repositories is not possible.');
  }
  const dpath = resourcePath(sub);
  const dst = await c.repo.resource(sub.uri, dpath);
  const ow = r.headersIn.get('Overwrite');
  let overwrite = true;
  if (ow !== undefined) {
    if (ow === 'F' || ow === 'f') overwrite = false;
    else if (ow !== 'T' && ow !== 't') {
      r.log('dav', APLOG_ERR, 'AH00581: An invalid Overwrite header was specified.');
      return 400;
    }
  }
  if (dst.exists && !overwrite) return errorResponse(r, 412, 'Destination is not empty and Overwrite is not "T"');
  if (dst.path === res.path) return errorResponse(r, 403, 'Source and Destination URIs are the same.');
  const depth = getDepth(r, 'infinity');
  if (depth === -1) return 400;
  if (depth === 1) {
    r.log('dav', APLOG_ERR, 'AH00593: Depth must be "0" or "infinity" for COPY or MOVE.');
    return 400;
  }
  if (isMove && res.collection && depth !== 'infinity') {
    r.log('dav', APLOG_ERR, 'AH00594: Depth must be "infinity" when moving a collection.');
    return 400;
  }
  if (isMove) {
    const v = await validate(c, res, true);
    if (v !== undefined) {
      logErr(r, [{ status: v.status, desc: `Could not ${isMove ? 'MOVE' : 'COPY'} ${escapeHtml(r.uri)} due to a failed precondition on the source (e.g. locks).` }, v]);
      return v.status;
    }
  }
  const vd = await validate(c, dst, true);
  if (vd !== undefined && vd.parentUri !== undefined) {
    // DAV_VALIDATE_USE_424: the whole request fails with 424, the parent's error as body
    logErr(r, [{ status: 424, desc: `Could not MOVE/COPY ${escapeHtml(r.uri)} due to a failed precondition on the destination (e.g. locks).` }, { status: 424, desc: ERR_424 }]);
    return sendXml(r, 424, multistatus(undefined, parentResponse(vd)));
  }
  if (vd !== undefined) {
    logErr(r, [{ status: vd.status, desc: `Could not MOVE/COPY ${escapeHtml(r.uri)} due to a failed precondition on the destination (e.g. locks).` }, vd]);
    return vd.status;
  }
  const inside = (a: string, b: string): boolean => b.startsWith(a + '/');
  if (res.collection && depth === 'infinity' && inside(res.path, dst.path)) return errorResponse(r, 403, 'Source collection contains the Destination.');
  if (res.collection && inside(dst.path, res.path)) return errorResponse(r, 403, 'Destination collection contains the Source and Overwrite has been specified.');
  if (isMove && c.locks !== undefined) await c.locks.removeAt(res.path);
  let failures: DavFailure[] = [];
  if (dst.exists) {
    failures = await c.repo.remove(dst);
    if (c.locks !== undefined) await c.locks.removeAt(dst.path);
  }
  if (failures.length === 0) failures = isMove ? await c.repo.move(res, dst) : await c.repo.copy(res, dst, depth);
  if (failures.length > 0) {
    const st = failures[0]!.status;
    logErr(r, [{ status: st, desc: `Could not MOVE/COPY ${escapeHtml(r.uri)}.` }]);
    if (failures.length === 1) return st;
    return failuresResponse(r, failures);
  }
  return created(r, sub.uri, 'Destination', dst.exists);
}

/** The Timeout: header as an expiry (ms since the epoch, 0 = infinite), DavMinTimeout applied. */
function lockExpiry(r: Request, conf: DavDirConfig, now: number): number {
  const h = r.headersIn.get('Timeout');
  let expires = 0;
  if (h !== undefined) {
    for (const part of h.split(',')) {
      const t = part.trim();
      if (t === 'Infinite') { expires = 0; break; }
      const m = /^Second-(\d+)$/.exec(t);
      if (m) { expires = now + Number(m[1]) * 1000; break; }
    }
  }
  const min = conf.minTimeout ?? 0;
  if (min > 0 && expires !== 0 && expires < now + min * 1000) expires = now + min * 1000;
  return expires;
}

async function methodLock(c: Ctx, res: DavResource): Promise<number> {
  const r = c.r;
  if (c.locks === undefined) return 405;
  const depth = getDepth(r, 'infinity');
  if (depth === -1) return 400;
  if (depth === 1) {
    r.log('dav', APLOG_ERR, 'AH00595: Depth must be 0 or "infinity" for LOCK.');
    return 400;
  }
  const doc = await readXmlBody(r);
  if (typeof doc === 'number') return doc;
  const now = Date.now();
  const expires = lockExpiry(r, c.conf, now);
  if (doc === undefined) {
    // a refresh: the If: header names the lock(s)
    const v = await validate(c, res, false);
    const locks = await c.locks.covering(res.path);
    const tokens = (c.ifLists ?? []).flatMap((l) => l.conds.filter((cd) => cd.kind === 'token' && !cd.not).map((cd) => cd.value));
    const mine = locks.filter((l) => tokens.includes(l.token));
    if (v !== undefined || mine.length === 0) {
      const e = v ?? { status: 412, desc: 'The lock refresh for the specified resource failed. No lock token was specified in the "If:" header.' };
      logErr(r, [{ status: e.status, desc: `Could not LOCK ${escapeHtml(r.uri)} due to a failed precondition (e.g. other locks).` }, e]);
      return e.status;
    }
    const refreshed = await c.locks.refresh(mine.map((l) => l.token), expires);
    return sendXml(r, 200, `${XML_HEAD}<D:prop xmlns:D="DAV:">\n<D:lockdiscovery>\n${refreshed.map((l) => activeLock(l, now)).join('')}\n</D:lockdiscovery>\n</D:prop>`);
  }
  if (!isDav(doc, doc.root, 'lockinfo')) {
    logErr(r, [{ status: 400, desc: 'The lock refresh for the specified resource failed. The request body is not a "lockinfo" element.' }]);
    return 400;
  }
  const scopeEl = childElem(doc, doc.root, 'DAV:', 'lockscope');
  const typeEl = childElem(doc, doc.root, 'DAV:', 'locktype');
  const scopeChild = scopeEl !== undefined ? childElems(scopeEl)[0] : undefined;
  const typeChild = typeEl !== undefined ? childElems(typeEl)[0] : undefined;
  const scope = scopeChild !== undefined && isDav(doc, scopeChild, 'exclusive') ? 'exclusive' : scopeChild !== undefined && isDav(doc, scopeChild, 'shared') ? 'shared' : undefined;
  if (scope === undefined || typeChild === undefined || !isDav(doc, typeChild, 'write')) {
    logErr(r, [{ status: 400, desc: 'An unknown/invalid lockscope or locktype was specified.' }]);
    return 400;
  }
  const ownerEl = childElem(doc, doc.root, 'DAV:', 'owner');
  let owner: string | undefined;
  if (ownerEl !== undefined) {
    const decl = doc.namespaces.map((u, i) => ` xmlns:ns${i}="${u.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"`).join('');
    owner = elemToText(ownerEl, (i) => `ns${i}`, decl);
  }
  // conflicts with the locks there are (dav_lock_query / dav_validate_request)
  const existing = await c.locks.covering(res.path);
  const below = depth === 'infinity' ? await c.locks.below(res.path) : [];
  const conflictWith = (all: readonly DavLock[]): string | undefined => {
    if (scope === 'exclusive' && all.length > 0) return 'Existing lock(s) on the requested resource prevent an exclusive lock.';
    if (scope === 'shared' && all.some((l) => l.scope === 'exclusive')) return 'The requested resource is already locked exclusively.';
    return undefined;
  };
  let conflict = conflictWith([...existing, ...below]);
  if (conflict !== undefined) {
    logErr(r, [{ status: 423, desc: `Could not LOCK ${escapeHtml(r.uri)} due to a failed precondition (e.g. other locks).` }, { status: 423, desc: conflict }]);
    return 423;
  }
  const v = await validate(c, res, false);
  if (v !== undefined && v.status !== 423) {
    logErr(r, [{ status: v.status, desc: `Could not LOCK ${escapeHtml(r.uri)} due to a failed precondition (e.g. other locks).` }, v]);
    return v.status;
  }
  let lockNull = false;
  if (!res.exists) {
    const parent = await c.repo.resource(path.posix.dirname(res.uri), path.dirname(res.path));
    if (!parent.collection) {
      logErr(r, [{ status: 409, desc: `The parent resource of ${escapeHtml(r.uri)} does not exist or is not a collection.` }]);
      return 409;
    }
    lockNull = true;
  }
  const lock: DavLock = {
    token: `opaquelocktoken:${randomUUID()}`, scope, depth: depth === 0 ? 0 : 'infinity', owner, expires,
    root: res.path, rootUri: res.uri,
  };
  // Checked again where the lock is added: another request may have taken one meanwhile.
  conflict = await c.locks.add(lock, lockNull, conflictWith);
  if (conflict !== undefined) {
    logErr(r, [{ status: 423, desc: `Could not LOCK ${escapeHtml(r.uri)} due to a failed precondition (e.g. other locks).` }, { status: 423, desc: conflict }]);
    return 423;
  }
  r.headersOut.set('Lock-Token', `<${lock.token}>`);
  return sendXml(r, 200, `${XML_HEAD}<D:prop xmlns:D="DAV:">\n<D:lockdiscovery>\n${activeLock(lock, now)}\n</D:lockdiscovery>\n</D:prop>`);
}

async function methodUnlock(c: Ctx, res: DavResource): Promise<number> {
  const r = c.r;
  if (c.locks === undefined) return 405;
  const h = r.headersIn.get('Lock-Token');
  if (h === undefined) {
    r.log('dav', APLOG_ERR, `AH00596: Unlock failed (${r.filename}):  No Lock-Token specified in header`);
    return 400;
  }
  const m = /^<(.*)>$/.exec(h.trim());
  if (m === null) {
    logErr(r, [{ status: 400, desc: 'The Lock-Token header was malformed.' }]);
    return 400;
  }
  const token = m[1]!;
  const locks = await c.locks.covering(res.path);
  if (!locks.some((l) => l.token === token)) {
    logErr(r, [{ status: 400, desc: 'The locktoken specified in the "Lock-Token:" header did not specify one of this resource\'s locktoken(s).' }]);
    return 400;
  }
  await c.locks.remove(token);
  return 204;
}

// ---- hooks -------------------------------------------------------------------------------

/** The merge's AH00578/AH00579, once per request, on the main error log (httpd's
 *  ap_log_error with no server). */
function davHeaderParser(r: Request): HookResult {
  if (r.main !== null) return DECLINED;
  const w = self.dir(r).warnings;
  for (const message of w) r.rt.mainServer.errorLog.write({ module: 'dav', level: APLOG_ERR, message });
  return DECLINED;
}

function davFixups(r: Request): HookResult {
  if (r.assbackwards && r.main === null) return DECLINED;
  const conf = self.dir(r);
  if (conf.provider === undefined) return DECLINED;
  // the filesystem provider lets the core serve GET (and HEAD)
  if (r.method === 'GET' || r.method === 'HEAD') return DECLINED;
  if (r.method === 'POST') return DECLINED;
  r.handler = DAV_HANDLER;
  return OK;
}

async function davHandler(r: Request): Promise<HookResult> {
  if (r.handler !== DAV_HANDLER) return DECLINED;
  const conf = self.dir(r);
  const name = conf.provider;
  if (name === undefined) return DECLINED;
  const provider = r.rt.ctx.provider('dav', name);
  if (provider === undefined) return 500;
  const repo = provider.open(r, conf.base ?? conf.dir ?? '/');
  const ifh = r.headersIn.get('If');
  let ifLists: IfList[] | undefined;
  if (ifh !== undefined) {
    ifLists = parseIfHeader(ifh);
    if (ifLists === undefined) {
      logErr(r, [{ status: 400, desc: 'Invalid If-header: unclosed "<" or unexpected tokens found.' }]);
      return 400;
    }
  }
  // a repository without locks of its own uses mod_dav_lock's generic ones, when loaded there
  const locks = repo.locks ?? r.rt.ctx.provider('dav_lock', 'generic')?.open(r);
  const c: Ctx = { r, repo, locks, conf, ifLists };
  const res = await repo.resource(r.uri.replace(/\/+$/, '') || '/', resourcePath(r));
  switch (r.method) {
    case 'OPTIONS': return methodOptions(c, res);
    case 'PUT': return methodPut(c, res);
    case 'DELETE': return methodDelete(c, res);
    case 'PROPFIND': return methodPropfind(c, res);
    case 'PROPPATCH': return methodProppatch(c, res);
    case 'MKCOL': return methodMkcol(c, res);
    case 'COPY': return methodCopyMove(c, res, false);
    case 'MOVE': return methodCopyMove(c, res, true);
    case 'LOCK': return methodLock(c, res);
    case 'UNLOCK': return methodUnlock(c, res);
    default: break;
  }
  return DECLINED;
}

const self = defineModule<undefined, DavDirConfig>({
  name: 'dav_module',
  source: 'mod_dav.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: 'DAV', args: 'TAKE1', where: ACCESS_CONF, help: 'specify the DAV provider for a directory or location', handler: davDirective }),
    directive({ name: 'DAVBasePath', args: 'TAKE1', where: ACCESS_CONF, help: 'specify the DAV repository base URL', handler: davBasePath }),
    directive({ name: 'DAVMinTimeout', args: 'TAKE1', where: ACCESS_CONF | RSRC_CONF, help: 'specify minimum allowed timeout', handler: davMinTimeout }),
    directive({ name: 'DAVDepthInfinity', args: 'FLAG', where: ACCESS_CONF | RSRC_CONF, help: 'allow Depth infinity PROPFIND requests', handler: (cmd: Cmd, on: boolean) => { cmd.dir.depthInfinity = on; } }),
    directive({ name: 'DAVLockDiscovery', args: 'FLAG', where: ACCESS_CONF | RSRC_CONF, help: 'allow lock discovery by PROPFIND requests', handler: (cmd: Cmd, on: boolean) => { cmd.dir.lockDiscovery = on; } }),
  ],
  hooks: {
    headerParser: { fn: davHeaderParser, order: HOOK_MIDDLE },
    fixups: { fn: davFixups, order: HOOK_MIDDLE },
    handler: { fn: davHandler, order: HOOK_MIDDLE },
  },
});

export default self;
