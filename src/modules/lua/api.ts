// mod_lua's request_rec API, the JavaScript half (httpd's lua_request.c and lua_apr.c): the
// fields a script reads and sets through `r`, its methods, and the header/notes/environment
// tables. Requests are known to Lua by a number; the prelude's stubs call in here with it.
//
// DIFFERENCE: Lua strings cross into JavaScript as UTF-8 text (wasmoon's conversion), so a
// body or WebSocket payload that is not valid UTF-8 does not reach the script byte for byte.

import * as fs from 'node:fs';
import { createHash } from 'node:crypto';
import type { Request } from '../../server/request/request.js';
import type { HeaderTable } from '../../server/request/headers.js';
import { EOS, FLUSH, dataBucket, type Bucket } from '../../server/filters.js';
import { escapeHtml } from '../../server/http/response.js';
import { escapeUrlencoded, unescapeUrlencoded, unescapeUrl } from '../../lib/urlencoded.js';
import { lookupVariable, parseExpr, evalBool, isFailure, compilePcre } from '../../expr/index.js';
import { serverBanner } from '../../server/version.js';
import { globals } from '../../server/core/globals.js';
import { documentRoot } from '../../server/util-script.js';
import { coreDir, OPT_ALL, OPT_EXECCGI, OPT_INCLUDES, OPT_INDEXES, OPT_MULTI, OPT_SYM_LINKS } from '../../server/core/config.js';
import { OR_ALL, OR_AUTHCFG, OR_FILEINFO, OR_INDEXES, OR_LIMIT, OR_NONE, OR_OPTIONS } from '../../server/module.js';
import { DEFAULT_LIMIT_REQUEST_BODY } from '../../server/http/http-core.js';
import { apAuthName, apSomeAuthRequired } from '../../server/auth-api.js';
import type { LuaBridge } from './vm.js';
import { WsConn, acceptKey, buildFrame } from './websocket.js';

/** What the module keeps per request for the API. */
export interface LuaReq {
  readonly r: Request;
  ws: WsConn | null;
  /** Output of r:puts / r:write not passed on yet: as ap_rputs buffers (the OLD_WRITE filter),
   *  a small body reaches the filters whole, with EOS, and gets a Content-Length. */
  out: Buffer[];
  outLen: number;
}

/** A fresh API context for a request. */
export function luaReq(r: Request): LuaReq {
  return { r, ws: null, out: [], outLen: 0 };
}

/** httpd's AP_MIN_BYTES_TO_WRITE: buffered output goes on past this. */
const MIN_BYTES_TO_WRITE = 8000;

/** Passes what r:puts buffered (with `tail` buckets after it). */
export function flushOut(c: LuaReq, tail: readonly Bucket[] = []): Promise<void> | undefined {
  const r = c.r;
  if (r.eosSent) { c.out = []; c.outLen = 0; return undefined; }
  if (c.outLen === 0 && tail.length === 0) return undefined;
  const bb: Bucket[] = c.out.map((b) => dataBucket(b));
  c.out = [];
  c.outLen = 0;
  bb.push(...tail);
  const w = r.write(bb);
  return w instanceof Promise ? w : undefined;
}

const live = new Map<number, LuaReq>();
let nextId = 1;
/** Registers a request for Lua calls; give the id back with unregister(). */
export function register(ctx: LuaReq): number {
  const id = nextId++;
  if (nextId > 0x3fffffff) nextId = 1;
  live.set(id, ctx);
  return id;
}
export function unregister(id: number): void {
  live.delete(id);
}

function req(id: number): LuaReq {
  const c = live.get(id);
  if (c === undefined) throw new Error('request_rec is no longer valid');
  return c;
}

/** Several results for the prelude's ret(): [count, values...] (a Lua sequence; nils kept
 *  by the count). */
function multi(...vals: unknown[]): unknown[] {
  return [vals.length, ...vals.map((v) => (v === null ? undefined : v))];
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
const toBuf = (v: unknown): Buffer => Buffer.from(str(v), 'utf8');
const asLua = (s: string | undefined): string | undefined => (s === undefined ? undefined : Buffer.from(s, 'latin1').toString('utf8'));

// ---- fields -----------------------------------------------------------------------------

type Getter = (r: Request, c: LuaReq) => unknown;
const FIELDS: Record<string, Getter> = {
  method: (r) => r.method,
  uri: (r) => r.uri,
  unparsed_uri: (r) => r.unparsedUri,
  the_request: (r) => r.theRequest,
  args: (r) => r.args,
  // NULL in httpd until translate_name gives one (plume's request starts with '').
  filename: (r) => (r.filename === '' ? undefined : r.filename),
  canonical_filename: (r) => (r.canonicalFilename === '' ? undefined : r.canonicalFilename),
  path_info: (r) => r.pathInfo,
  hostname: (r) => r.hostname,
  protocol: (r) => r.protocol,
  status: (r) => r.status,
  content_type: (r) => r.contentType,
  content_encoding: (r) => r.contentEncoding,
  handler: (r) => r.handler,
  user: (r) => r.user,
  ap_auth_type: (r) => r.apAuthType,
  useragent_ip: (r) => r.useragentIp,
  proxyreq: (r) => ['PROXYREQ_NONE', 'PROXYREQ_PROXY', 'PROXYREQ_REVERSE', 'PROXYREQ_RESPONSE'][r.proxyreq],
  range: (r) => r.headersIn.get('Range'),
  document_root: (r) => documentRoot(r),
  context_prefix: (r) => r.contextPrefix ?? '',
  context_document_root: (r) => r.contextDocumentRoot ?? documentRoot(r),
  is_https: (r) => lookupVariable(r, 'HTTPS') === 'on',
  assbackwards: (r) => r.assbackwards,
  is_initial_req: (r) => r.isInitialReq(),
  port: (r) => r.rt.serverPort(r),
  server_name: (r) => r.rt.serverName(r),
  banner: (r) => serverBanner(globals(r.rt.ctx).serverTokens),
  server_built: () => 'Nov 22 2026 00:00:00',
  started: () => Math.floor((performance.timeOrigin) / 1000),
  log_id: () => undefined,
  remaining: (r) => (r.body !== null ? r.body.length : 0),
  limit_req_body: (r) => coreDir(r).limitRequestBody ?? DEFAULT_LIMIT_REQUEST_BODY,
  some_auth_required: (r) => apSomeAuthRequired(r),
  auth_name: (r) => apAuthName(r) ?? '',
  basic_auth_pw: (r) => {
    const a = r.headersIn.get('Authorization');
    const m = a !== undefined ? /^\s*basic\s+(\S+)/i.exec(a) : null;
    if (m === null) return undefined;
    const dec = Buffer.from(m[1]!, 'base64').toString('latin1');
    const i = dec.indexOf(':');
    return i < 0 ? undefined : dec.slice(i + 1);
  },
  options: (r) => luaOptions(coreDir(r).opts),
  allowoverrides: (r) => luaAllowOverrides(coreDir(r).override),
};

/** r.options as mod_lua prints ap_allow_options: six words, an empty one for each option
 *  not in force, joined by single spaces. */
function luaOptions(o: number): string {
  return [
    o & OPT_INDEXES ? 'Indexes' : '', o & OPT_INCLUDES ? 'Includes' : '', o & OPT_SYM_LINKS ? 'FollowSymLinks' : '',
    o & OPT_EXECCGI ? 'ExecCGI' : '', o & OPT_MULTI ? 'MultiViews' : '', (o & OPT_ALL) === OPT_ALL ? 'All' : '',
  ].join(' ');
}

/** r.allowoverrides as mod_lua prints ap_allow_overrides: "All", "None", or five words
 *  (empty when not allowed). An AllowOverride never set is neither (the OR_UNSET bit). */
function luaAllowOverrides(o: number): string {
  if ((o & OR_ALL) === OR_ALL) return 'All';
  if (o === OR_NONE) return 'None';
  return [o & OR_LIMIT ? 'Limit' : '', o & OR_OPTIONS ? 'Options' : '', o & OR_FILEINFO ? 'FileInfo' : '', o & OR_AUTHCFG ? 'AuthCfg' : '', o & OR_INDEXES ? 'Indexes' : ''].join(' ');
}

const SETTERS: Record<string, (r: Request, v: unknown) => void> = {
  status: (r, v) => { r.status = Number(v); r.statusLine = undefined; },
  content_type: (r, v) => { r.contentType = str(v); },
  content_encoding: (r, v) => { r.contentEncoding = str(v); },
  filename: (r, v) => { r.filename = str(v); },
  uri: (r, v) => { r.uri = str(v); },
  args: (r, v) => { r.args = str(v); },
  handler: (r, v) => { r.handler = str(v); },
  user: (r, v) => { r.user = str(v); },
  ap_auth_type: (r, v) => { r.apAuthType = str(v); },
  path_info: (r, v) => { r.pathInfo = str(v); },
  proxyreq: (r, v) => { r.proxyreq = (Math.max(0, Math.min(3, Number(v) | 0)) as 0 | 1 | 2 | 3); },
};

// ---- tables -----------------------------------------------------------------------------

function headerTable(r: Request, which: string): HeaderTable | Map<string, string> {
  switch (which) {
    case 'headers_in': return r.headersIn;
    case 'headers_out': return r.headersOut;
    case 'err_headers_out': return r.errHeadersOut;
    case 'notes': return r.notes;
    default: return r.subprocessEnv;
  }
}

function tableSnapshot(t: HeaderTable | Map<string, string>): Record<string, string> {
  const o: Record<string, string> = {};
  t.forEach((a: string, b: string) => {
    // HeaderTable.forEach gives (name, value); Map.forEach gives (value, key).
    if (t instanceof Map) o[b] = a; else o[a] = asLua(b)!;
  });
  return o;
}

// ---- methods ----------------------------------------------------------------------------

/** r:parseargs: ap_args_to_table (%-escapes decoded, '+' kept, a repeated name keeps its last
 *  value), as the single-value table and the table of value lists. */
function parseArgs(s: string | undefined): unknown[] {
  const single: Record<string, string> = {};
  for (const pair of (s ?? '').split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const k = asLua(unescapeUrl(eq < 0 ? pair : pair.slice(0, eq)))!;
    single[k] = asLua(unescapeUrl(eq < 0 ? '' : pair.slice(eq + 1)))!;
  }
  const many: Record<string, string[]> = {};
  for (const k of Object.keys(single)) many[k] = [single[k]!];
  return multi(single, many);
}

/** A urlencoded body for r:parsebody: '+' is a space, every value kept in the lists. */
function parseForm(s: string): unknown[] {
  const single: Record<string, string> = {};
  const many: Record<string, string[]> = {};
  for (const pair of s.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const k = asLua(unescapeUrlencoded(eq < 0 ? pair : pair.slice(0, eq)) ?? '')!;
    const v = asLua(unescapeUrlencoded(eq < 0 ? '' : pair.slice(eq + 1)) ?? '')!;
    single[k] = v;
    (many[k] ??= []).push(v);
  }
  return multi(single, many);
}

function writeOut(c: LuaReq, data: Buffer): Promise<void> | undefined {
  if (data.length === 0 || c.r.eosSent) return undefined;
  c.out.push(data);
  c.outLen += data.length;
  return c.outLen >= MIN_BYTES_TO_WRITE ? flushOut(c) : undefined;
}

type SyncFn = (c: LuaReq, args: unknown[]) => unknown;
const SYNC: Record<string, SyncFn> = {
  puts: (c, a) => writeOut(c, Buffer.concat(a.map(toBuf))),
  write: (c, a) => writeOut(c, toBuf(a[0])),
  parseargs: (c) => parseArgs(c.r.args),
  escape_html: (_c, a) => multi(escapeHtml(str(a[0]))),
  escape: (_c, a) => multi(escapeUrlencoded(Buffer.from(str(a[0]), 'utf8').toString('latin1'))),
  unescape: (_c, a) => multi(Buffer.from(unescapeUrlencoded(str(a[0])) ?? unescapeUrl(str(a[0])), 'latin1').toString('utf8')),
  base64_encode: (_c, a) => multi(toBuf(a[0]).toString('base64')),
  base64_decode: (_c, a) => multi(Buffer.from(str(a[0]), 'base64').toString('utf8')),
  md5: (_c, a) => multi(createHash('md5').update(toBuf(a[0])).digest('hex')),
  sha1: (_c, a) => multi(createHash('sha1').update(toBuf(a[0])).digest('hex')),
  clock: () => multi(Math.floor(performance.timeOrigin * 1000 + performance.now() * 1000)),
  ssl_var_lookup: (c, a) => multi(lookupVariable(c.r, str(a[0])) ?? ''),
  construct_url: (c, a) => {
    const r = c.r;
    return multi(r.rt.constructUrl(r, str(a[0])));
  },
  expr: (c, a) => {
    const p = parseExpr(str(a[0]), { module: 'lua', ctx: c.r.rt.ctx });
    if (!p.ok) return multi(undefined, p.error);
    const v = evalBool(p.expr, c.r);
    if (v instanceof Promise) return multi(undefined, 'asynchronous expressions are not supported here');
    if (isFailure(v)) return multi(undefined, String((v as { error?: unknown }).error ?? 'evaluation failed'));
    return multi(v);
  },
  regex: (_c, a) => {
    const re = compilePcre(str(a[1]), Number(a[2] ?? 0) & 1 ? 'i' : '');
    if (re === null) return multi(false, `invalid regular expression: ${str(a[1])}`);
    const m = re.re.exec(str(a[0]));
    if (m === null) return multi(false);
    // A Lua sequence here; the prelude renumbers it from 0 as lua_request.c's table is.
    return multi(m.map((v) => v ?? ''));
  },
  stat: (_c, a) => {
    try {
      const st = fs.statSync(str(a[0]));
      return multi({
        mtime: Math.floor(st.mtimeMs * 1000), atime: Math.floor(st.atimeMs * 1000), ctime: Math.floor(st.ctimeMs * 1000),
        size: st.size, filetype: st.isFile() ? 1 : st.isDirectory() ? 2 : 0, protection: st.mode & 0o7777,
      });
    } catch {
      return multi(undefined);
    }
  },
  setcookie: (c, a) => {
    // lua_set_cookie: a table (2.4.8 and later; Path defaults to /) or key, value, secure, expires.
    const t = typeof a[0] === 'object' && a[0] !== null && !Array.isArray(a[0]) ? a[0] as Record<string, unknown> : null;
    const o = t ?? { key: a[0], value: a[1], secure: a[2], expires: a[3] };
    const expires = Math.trunc(Number(o.expires ?? 0)) || 0;
    const path = t !== null ? (o.path === undefined ? '/' : str(o.path)) : '';
    const domain = t !== null && o.domain !== undefined ? str(o.domain) : '';
    const strexp = expires > 0 ? `Expires=${new Date(expires * 1000).toUTCString()};` : '';
    const v = `${escapeUrlencoded(str(o.key))}=${escapeUrlencoded(str(o.value))}; ${o.secure === true ? 'Secure;' : ''} ${strexp} ${o.httponly === true ? 'HttpOnly;' : ''} ${domain ? `Domain=${domain};` : ''} ${path ? `Path=${path};` : ''}`;
    c.r.errHeadersOut.add('Set-Cookie', v);
    return undefined;
  },
  getcookie: (c, a) => {
    const want = str(a[0]);
    const h = c.r.headersIn.get('Cookie') ?? '';
    for (const part of h.split(';')) {
      const eq = part.indexOf('=');
      if (eq < 0) continue;
      if (part.slice(0, eq).trim() === want) return multi(asLua(part.slice(eq + 1).trim()));
    }
    return multi();
  },
  add_output_filter: (c, a) => { c.r.rt.addOutputFilter(c.r, str(a[0])); return undefined; },
  add_input_filter: (c, a) => { c.r.rt.addInputFilter(c.r, str(a[0])); return undefined; },
  internal_redirect: (c, a) => { void a; void c; throw new Error('internal_redirect is not available from Lua in plume'); },
  wsupgrade: (c) => {
    const r = c.r;
    const key = r.headersIn.get('Sec-WebSocket-Key');
    const detach = r.connection.detach;
    if (key === undefined || detach === undefined || r.connection.wire.framed !== undefined) {
      r.log('lua', 5, 'AH02666: Websocket: Upgrade from HTTP to Websocket failed');
      return multi(undefined);
    }
    r.log('lua', 7, `AH03011: Websocket: Got websocket key: ${key}`);
    const date = new Date().toUTCString();
    const head = 'HTTP/1.1 101 Switching Protocols\r\n' +
      `Date: ${date}\r\nServer: ${serverBanner(globals(r.rt.ctx).serverTokens)}\r\n` +
      `Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptKey(key)}\r\n\r\n`;
    r.connection.bytesOut += head.length;
    r.connection.wire.write(head, 'latin1');
    r.status = 101;
    r.headersSent = true;
    r.eosSent = true;
    r.connection.keepAlive = false;
    c.ws = new WsConn(detach.call(r.connection));
    r.log('lua', 7, 'AH03012: Websocket: Upgraded from HTTP to Websocket');
    return multi(true);
  },
};

type AsyncFn = (c: LuaReq, args: unknown[]) => Promise<unknown>;
const ASYNC: Record<string, AsyncFn> = {
  sleep: async (_c, a) => { await new Promise((res) => setTimeout(res, Math.max(0, Number(a[0]) * 1000))); return undefined; },
  usleep: async (_c, a) => { await new Promise((res) => setTimeout(res, Math.max(0, Number(a[0]) / 1000))); return undefined; },
  flush: async (c) => { await flushOut(c, [FLUSH]); return multi(true); },
  requestbody: async (c, a) => {
    const body = await readBody(c.r);
    if (a[0] !== undefined && a[0] !== null) {
      await fs.promises.writeFile(str(a[0]), body);
      return multi(body.length);
    }
    return multi(body.toString('utf8'));
  },
  parsebody: async (c, a) => {
    const r = c.r;
    const ct = r.headersIn.get('Content-Type') ?? '';
    if (r.method !== 'POST' && r.method !== 'PUT') return multi({}, {});
    const max = Number(a[0] ?? 0);
    const body = await readBody(r);
    if (max > 0 && body.length > max) return multi({}, {});
    if (/^application\/x-www-form-urlencoded/i.test(ct)) return parseForm(body.toString('latin1'));
    const m = /^multipart\/form-data.*boundary=("?)([^";]+)\1/i.exec(ct);
    if (m === null) return multi({}, {});
    return parseMultipart(body, m[2]!);
  },
  wsread: async (c) => {
    if (c.ws === null) return multi(undefined);
    const f = await c.ws.read();
    if (f === null) return multi(undefined);
    return multi(f.payload.toString('utf8'), f.fin);
  },
  wswrite: async (c, a) => {
    if (c.ws === null) return multi(false);
    return multi(c.ws.send(buildFrame(0x01, toBuf(a[0]))));
  },
  wsping: async (c) => (c.ws === null ? multi(false) : multi(await c.ws.ping())),
  wsclose: async (c) => { c.ws?.close(); return undefined; },
};

/** The body as ap_get_client_block reads it for mod_lua: with a Content-Length, that many bytes
 *  and no more (what an input filter adds past it is never read); chunked, to the end. */
async function readBody(r: Request): Promise<Buffer> {
  const declared = r.body !== null && !r.body.chunked ? r.body.length : -1;
  if (declared < 0) return r.readAll();
  const parts: Buffer[] = [];
  let got = 0;
  while (got < declared) {
    const b = await r.read();
    if (b === null) break;
    parts.push(b);
    got += b.length;
  }
  const all = Buffer.concat(parts);
  return all.length > declared ? all.subarray(0, declared) : all;
}

/** multipart/form-data as lua_request.c's req_parsebody reads it: name → value. */
export function parseMultipart(body: Buffer, boundary: string): unknown[] {
  const single: Record<string, string> = {};
  const many: Record<string, string[]> = {};
  const sep = Buffer.from('--' + boundary, 'latin1');
  let pos = body.indexOf(sep);
  let guard = 0;
  while (pos >= 0 && guard++ < 10000) {
    const start = pos + sep.length;
    const next = body.indexOf(sep, start);
    if (next < 0) break;
    const part = body.subarray(start, next);
    const headEnd = part.indexOf('\r\n\r\n');
    if (headEnd >= 0) {
      const head = part.subarray(0, headEnd).toString('latin1');
      const nm = /name="([^"]*)"/i.exec(head);
      if (nm !== null) {
        let val = part.subarray(headEnd + 4);
        if (val.length >= 2 && val[val.length - 2] === 0x0d && val[val.length - 1] === 0x0a) val = val.subarray(0, val.length - 2);
        const v = val.toString('utf8');
        single[nm[1]!] = v;
        (many[nm[1]!] ??= []).push(v);
      }
    }
    pos = next;
  }
  return multi(single, many);
}

/** The bridge the Lua states call. */
export const bridge: LuaBridge = {
  get(id, key) {
    if (id === 0 && key === 'banner') return serverBanner('Full');
    const c = req(id);
    const g = FIELDS[key];
    if (g === undefined) return undefined;
    const v = g(c.r, c);
    return typeof v === 'string' ? asLua(v) : v;
  },
  set(id, key, value) {
    const c = req(id);
    const s = SETTERS[key];
    if (s === undefined) throw new Error(`Unsupported field: ${key}`);
    s(c.r, value);
  },
  call(id, name, args) {
    const f = SYNC[name];
    if (f === undefined) throw new Error(`r:${name} is not available in plume's mod_lua`);
    return f(req(id), args);
  },
  callAsync(id, name, args) {
    const f = ASYNC[name];
    if (f === undefined) return Promise.reject(new Error(`r:${name} is not available in plume's mod_lua`));
    return f(req(id), args);
  },
  tableGet(id, which, key) {
    const t = headerTable(req(id).r, which);
    return asLua(t.get(str(key)));
  },
  tableSet(id, which, key, value) {
    const t = headerTable(req(id).r, which);
    const k = str(key);
    if (value === undefined || value === null) { if (t instanceof Map) t.delete(k); else t.unset(k); return; }
    const v = Buffer.from(str(value), 'utf8').toString('latin1');
    t.set(k, v);
  },
  tablePairs(id, which) {
    return tableSnapshot(headerTable(req(id).r, which));
  },
  log(id, level, source, line, message) {
    const r = req(id).r;
    if (!r.wantsLog('lua', level)) return;
    // ap_log_rerror with the script's position as the source file (its directory dropped).
    const file = source.replace(/^@/, '');
    r.log('lua', level, message, undefined, `${file.slice(file.lastIndexOf('/') + 1)}(${line})`);
  },
};

/** Ends a handler's response: the buffered output and EOS down the chain, unless it went. */
export function finishResponse(c: LuaReq): Promise<void> | void {
  return flushOut(c, [EOS]);
}
