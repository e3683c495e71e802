// Writing a response: the output filter chain's protocol end (content length, the HTTP
// header filter with httpd's header order and keep-alive rules, the network writer), and
// generated error pages (ap_send_error_response).

import type { Runtime } from '../runtime.js';
import type { Request } from '../request/request.js';
import type { Brigade, Bucket, FilterInstance } from '../filters.js';
import { linkChain, instantiate, insertFilter, endsResponse, EOS, FilterError, FTYPE_CONTENT_SET, FTYPE_PROTOCOL, FTYPE_NETWORK, type FilterSpec } from '../filters.js';
import { runVoid } from '../hooks.js';
import { coreDir, coreServer, errorDocumentFor } from '../core/config.js';
import { globals } from '../core/globals.js';
import { serverBanner } from '../version.js';
import { getServerName, getServerPort } from '../core/server-name.js';
import { httpDate } from '../log/time.js';
import { APLOG_TRACE6, APLOG_ERR, levelFor } from '../log/levels.js';
import { STATUS_LINES, cannedError, DOCTYPE, lineHasStatus, statusLine } from './status.js';
import { strip304Headers, stripHeaderOnlyResponse } from './conditional.js';
import { byterangeFilter, needsByterange } from './byterange.js';
import { setKeepalive, isLengthUnknown, dropsConnection } from './keepalive.js';
import type { HeaderTable } from '../request/headers.js';
import type { FramedWire, Wire } from './wire.js';
import type { MaybePromise } from '../module.js';

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'));
}

export function isValidStatus(s: number): boolean {
  return s >= 100 && s <= 599;
}

/** ap_psignature: the <address> footer per ServerSignature. */
export function signature(r: Request, prefix: string): string {
  const sig = coreDir(r).serverSignature ?? 'off';
  if (sig === 'off') return '';
  const banner = serverBanner(globals(r.rt.ctx).serverTokens);
  const name = escapeHtml(getServerName(r));
  const port = getServerPort(r);
  if (sig === 'email') {
    const admin = r.server.serverAdmin ?? '[no address given]';
    return `${prefix}<address>${banner} Server at <a href="mailto:${escapeHtml(admin)}">${name}</a> Port ${port}</address>\n`;
  }
  return `${prefix}<address>${banner} Server at ${name} Port ${port}</address>\n`;
}

// ---- the protocol end of the chain ------------------------------------------------------

interface HeaderState { sent: boolean; aborted: boolean }

/** CONTENT_LENGTH + HTTP_HEADER: computes the length when the whole body is in the first
 *  brigade, otherwise uses chunked encoding (HTTP/1.1) or closes the connection. */
const httpHeaderFilter: FilterSpec<HeaderState> = {
  name: 'HTTP_HEADER',
  type: FTYPE_PROTOCOL + 5,
  init: () => ({ sent: false, aborted: false }),
  filter(f, bb) {
    const r = f.r;
    if (!f.state.sent) {
      f.state.sent = true;
      const complete = bb.length > 0 && bb[bb.length - 1]!.kind === 'eos';
      if (complete && r.status !== 304 && r.status !== 204 && !(r.status >= 400 && isLengthUnknown(r)) && !(r.notes.size > 0 && r.notes.has(NO_CONTENT_LENGTH))) {
        // ap_content_length_filter: the whole body is here, so its length is the
        // Content-Length, except a HEAD that sent no body keeps the one set before.
        let len = 0;
        for (const b of bb) if (b.kind === 'data') len += b.data.length; else if (b.kind === 'file') len += b.length;
        if (!(r.headerOnly && len === 0 && r.headersOut.has('Content-Length'))) r.headersOut.set('Content-Length', String(len));
      }
      if (!r.assbackwards && !headersValid(r)) return badHeaders(f.r, f.state, bb);
      // The head waits with the body's first pieces (see the core output filter).
      if (!complete && (bb.length === 0 || bb[bb.length - 1]!.kind !== 'flush')) holdUntilTurnEnd(r.connection.wire);
      writeHead(r);
    } else if (f.state.aborted) {
      // A bad header ended this response; nothing more of it goes out.
      return undefined;
    }
    return f.pass(bb);
  },
};

// ---- check_headers (http_filters.c) ------------------------------------------------------

/** A header name is a token (HttpProtocolOptions Unsafe: any visible character). */
const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VCHAR_RE = /^[\x21-\x7e\x80-\xff]+$/;
/** Field content: visible characters, obs-text, space and tab (CRLF + space/tab is folding). */
const BAD_VALUE_RE = /[^\t\x20-\x7e\x80-\xff]/;
/** Names already found valid (the same few are checked on every response). */
const goodNames = new Set<string>();

/** check_headers: every name and value in headers_out and err_headers_out, in that order; a
 *  folded value (CRLF + space or tab) is unfolded to one space, anything else that is not
 *  field content fails the response (AH02428, AH02429, AH02430). */
function headersValid(r: Request): boolean {
  const strict = coreServer(r.server).strictProtocol !== false;
  return tableValid(r, r.headersOut, strict) && tableValid(r, r.errHeadersOut, strict);
}

function tableValid(r: Request, t: HeaderTable, strict: boolean): boolean {
  let refold: [string, string, string][] | null = null;
  for (let e = 0, n = t.size; e < n; e++) {
    const name = t.nameAt(e);
    const value = t.valueAt(e);
    if (!goodNames.has(name)) {
      if (name === '') {
        r.log('http', APLOG_ERR, 'AH02428: Empty response header name, aborting request');
        return false;
      }
      if (!(strict ? TOKEN_RE : VCHAR_RE).test(name)) {
        r.log('http', APLOG_ERR, `AH02429: Response header name '${name}' contains invalid characters, aborting request`);
        return false;
      }
      if (strict && goodNames.size < 1024) goodNames.add(name);
    }
    if (!BAD_VALUE_RE.test(value)) continue;
    let out = '';
    let pos = 0;
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c === 0x09 || (c >= 0x20 && c !== 0x7f)) continue;
      if (c === 0x0d && value.charCodeAt(i + 1) === 0x0a && (value[i + 2] === ' ' || value[i + 2] === '\t')) {
        out += value.slice(pos, i) + ' ';
        i += 3;
        while (value[i] === ' ' || value[i] === '\t') i++;
        pos = i;
        i--;
        continue;
      }
      r.log('http', APLOG_ERR, `AH02430: Response header '${name}' value of '${value.slice(pos)}' contains invalid characters, aborting request`);
      return false;
    }
    (refold ??= []).push([name, value, out + value.slice(pos)]);
  }
  if (refold !== null) for (const [name, from, to] of refold) t.mapValues(name, (v) => (v === from ? to : v));
  return true;
}

/** A header failed check_headers: the response is dropped. The first time the request dies
 *  with 500 (its error page goes through the filters afresh); if that page fails too (the
 *  same bad header set "always"), a bare 500 with no body ends the connection. */
function badHeaders(r: Request, state: HeaderState, bb: Brigade): MaybePromise<void> {
  state.aborted = true;
  // httpd's content-length filter, above the header filter, counted the dropped body in
  // bytes_sent (%b) and, having seen data, computes no Content-Length for the error page.
  for (const b of bb) if (b.kind === 'data') r.bytesSent += b.data.length; else if (b.kind === 'file') r.bytesSent += b.length;
  r.notes.set(NO_CONTENT_LENGTH, '1');
  r.headersOut.clear();
  r.errHeadersOut.clear();
  r.contentType = undefined;
  r.contentEncoding = undefined;
  r.contentLanguages = [];
  r.clength = 0;
  if (!r.notes.has(CHECK_HEADERS_RECURSION)) {
    r.notes.set(CHECK_HEADERS_RECURSION, 'true');
    return r.rt.die(r, 500, r.status);
  }
  r.status = 500;
  r.statusLine = undefined;
  r.connection.keepAlive = false;
  r.headersSent = true;
  state.sent = true;
  const c = r.connection;
  const framed = c.wire.framed;
  if (framed !== undefined) {
    r.headersOut.set('Content-Length', '0');
    framed.head(500, r.headersOut, httpDate(), serverBanner(globals(r.rt.ctx).serverTokens), true);
    framed.end();
    r.eosSent = true;
    return undefined;
  }
  const head = 'HTTP/1.1 ' + statusLine(500) + '\r\nDate: ' + httpDate() + '\r\nServer: ' + serverBanner(globals(r.rt.ctx).serverTokens) + '\r\nContent-Length: 0\r\n\r\n';
  c.bytesOut += head.length;
  if (c.tap) c.tap.writeHead(head, r.headerOnly || r.status === 304 || r.status === 204);
  c.wire.write(head, 'latin1');
  r.eosSent = true;
  return undefined;
}
const CHECK_HEADERS_RECURSION = 'check_headers_recursion';
/** A note that keeps Content-Length off the error page that follows (httpd's content-length
 *  filter, having seen an error bucket or data, computes none): set by a filter that fails the
 *  request after output began in httpd's terms (mod_ext_filter's abort). */
export const NO_CONTENT_LENGTH = 'plume-no-content-length';

function chunked(r: Request): boolean {
  return (r as Request & { chunked?: boolean }).chunked === true;
}

/** fixup_vary: the Vary fields' names, each once (first spelling kept), comma-joined. */
function fixupVary(out: HeaderTable): void {
  const seen = new Set<string>();
  const names: string[] = [];
  for (const v of out.getAll('Vary')) {
    for (const n of v.split(/[,\s]+/)) {
      if (n === '') continue;
      const k = n.toLowerCase();
      if (seen.has(k)) continue;
      seen.add(k);
      names.push(n);
    }
  }
  if (names.length > 0) out.set('Vary', names.join(','));
}

/** The Server header's product string for the request's configuration (ServerTokens is
 *  global), looked up once per configuration. */
let bannerCtx: object | null = null;
let bannerText = '';
function banner(r: Request): string {
  const ctx = r.rt.ctx;
  if (ctx !== bannerCtx) {
    bannerText = serverBanner(globals(ctx).serverTokens);
    bannerCtx = ctx;
  }
  return bannerText;
}

/** Serialises the status line and headers (ap_http_header_filter / ap_set_keepalive). */
function writeHead(r: Request): void {
  r.headersSent = true;
  if (r.assbackwards) return;
  const c = r.connection;
  const status = r.status;
  let out = r.headersOut;
  if (r.errHeadersOut.size) out = r.errHeadersOut.overlay(out);
  r.headersOut = out;
  if (status === 304 || status === 204) stripHeaderOnlyResponse(r);
  if (r.notes.size > 0 && r.notes.has('no-etag')) out.unset('ETag');
  // force-no-vary drops Vary and answers as HTTP/1.0; otherwise each field name appears once
  // in Vary (httpd's fixup_vary: filters that each add Accept-Encoding say it once).
  if (r.subprocessEnv.size > 0 && r.subprocessEnv.has('force-no-vary')) {
    out.unset('Vary');
    r.protoNum = 1000;
    r.subprocessEnv.set('force-response-1.0', '1');
  } else if (out.has('Vary')) {
    fixupVary(out);
  }
  const framed = c.wire.framed;
  if (framed !== undefined) { framedHead(r, out, framed); return; }
  // httpd answers every version with HTTP/1.1, unless force-response-1.0 is set.
  let proto = 'HTTP/1.1';
  if (r.subprocessEnv.size > 0 && r.subprocessEnv.has('force-response-1.0')) { proto = 'HTTP/1.0'; c.keepAlive = false; }
  const useChunked = setKeepalive(r, out);
  if (useChunked) {
    (r as Request & { chunked?: boolean }).chunked = true;
    out.merge('Transfer-Encoding', 'chunked');
    out.unset('Content-Length');
  }
  // Content-Type, Content-Encoding and Content-Language come last, as httpd adds them.
  const ct = makeContentType(r);
  if (ct !== undefined && status !== 304) out.set('Content-Type', ct);
  if (r.contentEncoding) out.set('Content-Encoding', r.contentEncoding);
  if (r.contentLanguages.length) out.set('Content-Language', contentLanguage(r, out));
  if (status === 304) strip304Headers(out);
  // A HEAD answered with an empty body gets no 'Content-Length: 0' (httpd's header filter).
  if (r.headerOnly && out.get('Content-Length') === '0') out.unset('Content-Length');
  const line = r.statusLine && lineHasStatus(r.statusLine, status) ? r.statusLine : statusLine(status);
  const server = out.get('Server');
  // A proxied response keeps the origin's Date (httpd's basic_http_header for r->proxyreq).
  const proxyDate = r.proxyreq !== 0 ? out.get('Date') : undefined;
  // Concatenated, not joined: the wire copies the pieces straight into the bytes it sends
  // (cheaper than making one flat string first).
  // Date is the request's time, as httpd's basic_http_header has it (so an Expires computed
  // from the request time is exactly max-age after Date).
  let head = proto + ' ' + line + '\r\nDate: ' + (proxyDate ?? httpDate(r.requestTime > 0 ? r.requestTime : Date.now())) + '\r\nServer: ' + (server ?? banner(r)) + '\r\n';
  for (let i = 0, n = out.size; i < n; i++) {
    const key = out.keyAt(i);
    if (key === 'date' || key === 'server') continue;
    head += out.nameAt(i) + ': ' + out.valueAt(i) + '\r\n';
  }
  head += '\r\n';
  r.headersOut = out;
  c.bytesOut += head.length;
  if (c.tap) c.tap.writeHead(head, r.headerOnly || r.status === 304 || r.status === 204);
  c.wire.write(head, 'latin1');
}

/** The head of a response on a transport with its own framing (HTTP/2's H2_RESPONSE filter in
 *  place of HTTP_HEADER): the same fields, without the HTTP/1.1 connection management
 *  (Connection, Keep-Alive, Transfer-Encoding). */
function framedHead(r: Request, out: HeaderTable, framed: FramedWire): void {
  const status = r.status;
  const ct = makeContentType(r);
  if (ct !== undefined && status !== 304) out.set('Content-Type', ct);
  if (r.contentEncoding) out.set('Content-Encoding', r.contentEncoding);
  if (r.contentLanguages.length) out.set('Content-Language', contentLanguage(r, out));
  if (status === 304) strip304Headers(out);
  if (r.headerOnly && out.get('Content-Length') === '0') out.unset('Content-Length');
  r.headersOut = out;
  const server = out.get('Server') ?? serverBanner(globals(r.rt.ctx).serverTokens);
  framed.head(status, out, httpDate(r.requestTime > 0 ? r.requestTime : Date.now()), server, r.headerOnly || status === 304 || status === 204);
}

/** The languages of the response, then those of a Content-Language field already set,
 *  comma-joined without spaces (httpd's header filter). */
function contentLanguage(r: Request, out: HeaderTable): string {
  const langs = r.contentLanguages.slice();
  const field = out.get('Content-Language');
  if (field !== undefined) {
    for (const t of field.split(',')) {
      const tok = t.trim();
      if (tok !== '' && !langs.some((l) => l.toLowerCase() === tok.toLowerCase())) langs.push(tok);
    }
  }
  return langs.join(',');
}

/** ap_make_content_type: AddDefaultCharset for text/plain and text/html without charset. */
export function makeContentType(r: Request): string | undefined {
  const t = r.contentType;
  if (t === undefined) return undefined;
  const cs = coreDir(r).addDefaultCharset;
  if (!cs) return t;
  const key = cs + '\n' + t;
  let v = withCharset.get(key);
  if (v === undefined) {
    v = t;
    if (!/;\s*charset=/i.test(t)) {
      const base = t.split(';')[0]!.trim().toLowerCase();
      if (base === 'text/plain' || base === 'text/html') v = `${t}; charset=${cs}`;
    }
    if (withCharset.size >= 1024) withCharset.clear();
    withCharset.set(key, v);
  }
  return v;
}
const withCharset = new Map<string, string>();

/** The network end: writes buckets to the socket, with chunked framing when needed. */
const coreOutputFilter: FilterSpec<null> = {
  name: 'CORE',
  type: FTYPE_NETWORK,
  filter(f, bb) {
    const r = f.r;
    const w = r.connection.wire;
    const tap = r.connection.tap;
    const ch = chunked(r);
    const body = !r.headerOnly && r.status !== 304 && r.status !== 204;
    if (tap) tap.writeBrigade(bb, body);
    // Pieces of a response passed in several brigades (mod_include between its subrequests, a
    // subrequest's own output) are held and leave together, as httpd's core output filter sets
    // small writes aside until a FLUSH, the end of the request or THRESHOLD_MIN_WRITE: at EOS,
    // at a FLUSH bucket, past HOLD_MAX bytes, or at the end of this event-loop turn at the latest.
    const last = bb.length > 0 ? bb[bb.length - 1]! : null;
    if (last !== null && last.kind !== 'eos' && last.kind !== 'flush') holdUntilTurnEnd(w);
    let pending: Promise<void> | null = null;
    const run = async (from: number): Promise<void> => {
      for (let i = from; i < bb.length; i++) await writeBucket(bb[i]!);
    };
    const writeBucket = (b: Bucket): MaybePromise<void> => {
      if (b.kind === 'eos') {
        r.eosSent = true;
        if (ch && body) { w.write('0\r\n\r\n'); r.connection.bytesOut += 5; }
        releaseHeld(w);
        // HTTP/1.1's last chunk carries no trailers (httpd 2.4's chunk filter writes none);
        // an HTTP/2 stream ends with them (mod_http2 sends r->trailers_out).
        w.framed?.end(r.trailersOut);
        return;
      }
      if (b.kind === 'flush') { releaseHeld(w); return; }
      if (!body) return;
      if (b.kind === 'data') {
        if (b.data.length === 0) return;
        r.bytesSent += b.data.length;
        r.connection.bytesOut += b.data.length;
        if (ch) { const h = b.data.length.toString(16) + '\r\n'; w.write(h); r.connection.bytesOut += h.length + 2; }
        const ok = w.write(b.data);
        if (ch) w.write('\r\n');
        return ok ? undefined : w.drain();
      }
      // file bucket
      r.bytesSent += b.length;
      r.connection.bytesOut += b.length;
      if (ch) { const h = b.length.toString(16) + '\r\n'; w.write(h); r.connection.bytesOut += h.length + 2; }
      // httpd's core output filter traces what it hands to sendfile (files of 256 bytes or more).
      if (b.sendfile === true && b.length >= 256 && levelFor(r.logLevel, 'core') >= APLOG_TRACE6) {
        r.log('core', APLOG_TRACE6, `sendfile_nonblocking: ${b.length}/${b.length}`, undefined, 'core_filters.c(852)');
      }
      if (b.cached) {
        const ok = w.write(b.start === 0 && b.length === b.cached.length ? b.cached : b.cached.subarray(b.start, b.start + b.length));
        if (ch) w.write('\r\n');
        return ok ? undefined : w.drain();
      }
      const p = w.sendFile(b.path, b.start, b.length, b.sendfile === true);
      return ch ? p.then(() => { w.write('\r\n'); }) : p;
    };
    for (let i = 0; i < bb.length; i++) {
      const res = writeBucket(bb[i]!);
      if (res instanceof Promise) {
        pending = res.then(() => run(i + 1));
        return pending;
      }
    }
    return undefined;
  },
};

/** Wires corked by holdUntilTurnEnd, uncorked at the latest when the turn ends. */
const heldWires = new Set<Wire>();
let heldTimer = false;
function releaseAllHeld(): void {
  heldTimer = false;
  for (const w of heldWires) w.uncork();
  heldWires.clear();
}
function holdUntilTurnEnd(w: Wire): void {
  if (w.framed !== undefined || heldWires.has(w)) return;
  heldWires.add(w);
  w.cork();
  if (!heldTimer) { heldTimer = true; setImmediate(releaseAllHeld); }
}
function releaseHeld(w: Wire): void {
  if (heldWires.delete(w)) w.uncork();
}

/** SUBREQ_CORE (httpd's ap_sub_req_output_filter): a subrequest's output goes on into the
 *  parent's chain below the filter that ran it; its EOS stays behind. */
const subreqCoreFilter: FilterSpec<null> = {
  name: 'SUBREQ_CORE',
  type: FTYPE_CONTENT_SET,
  filter(f, bb) {
    const r = f.r;
    r.headersSent = true;
    let out = bb;
    if (endsResponse(bb)) { r.eosSent = true; out = bb.slice(0, -1); }
    for (const b of out) if (b.kind === 'data') r.bytesSent += b.data.length; else if (b.kind === 'file') r.bytesSent += b.length;
    if (out.length === 0 || r.subreqNext === null) return;
    return r.subreqNext.spec.filter(r.subreqNext, out);
  },
};

/** Links the request's chain on first use: module filters, byteranges, header, network. */
function startChain(rt: Runtime, r: Request): FilterInstance {
  const chain = r.outputFilters;
  if (r.subreqNext !== null) {
    // A subrequest run into its parent's chain: its own content filters, then SUBREQ_CORE.
    insertFilter(chain, instantiate(subreqCoreFilter as FilterSpec<unknown>, r));
    const head = linkChain(chain)!;
    r.filterHead = head;
    return head;
  }
  if (needsByterange(r)) insertFilter(chain, instantiate(byterangeFilter as FilterSpec<unknown>, r));
  insertFilter(chain, instantiate(httpHeaderFilter as FilterSpec<unknown>, r));
  insertFilter(chain, instantiate(coreOutputFilter as FilterSpec<unknown>, r));
  const head = linkChain(chain)!;
  r.filterHead = head;
  return head;
}

export function passBrigade(rt: Runtime, r: Request, bb: Brigade): MaybePromise<void> {
  let head = r.filterHead;
  if (!head) head = startChain(rt, r);
  while (head.removed && head.next) head = head.next;
  r.filterHead = head;
  const w = r.connection.wire;
  w.cork();
  try {
    return head.spec.filter(head, bb);
  } finally {
    w.uncork();
  }
}

/** Sends EOS if the handler did not (ap_finalize_request_protocol). */
export function finalizeResponse(rt: Runtime, r: Request): MaybePromise<void> {
  if (r.eosSent) return undefined;
  return passBrigade(rt, r, [EOS]);
}

/** ap_send_error_response: the generated page (or ErrorDocument text) for r.status.
 *  Synchronous unless a filter or the socket makes it wait. */
export function sendErrorResponse(rt: Runtime, r: Request, recursiveError: number): MaybePromise<void> {
  if (r.headersSent) {
    // Too late for an error page: the body was under way.
    r.connection.keepAlive = false;
    return finalizeResponse(rt, r);
  }
  const status = r.status;
  let location = r.headersOut.get('Location') ?? r.errHeadersOut.get('Location');
  if (status === 204 || status === 304) return finalizeResponse(rt, r);
  if (!r.assbackwards) {
    const tmp = r.headersOut;
    // The Allow list of a 405/501 (httpd's make_allow): what the handler declared.
    const allow = status === 405 || status === 501 ? tmp.get('Allow') : undefined;
    r.headersOut = r.errHeadersOut;
    r.errHeadersOut = tmp;
    r.errHeadersOut.clear();
    if ((status >= 300 && status < 400) || status === 201) {
      if (location) r.headersOut.set('Location', location);
      else location = '';
    }
    r.contentLanguages = [];
    r.contentEncoding = undefined;
    r.clength = 0;
    r.contentType = r.subprocessEnv.has('suppress-error-charset') ? 'text/html' : 'text/html; charset=iso-8859-1';
    if (status === 405 || status === 501) {
      r.headersOut.set('Allow', allow ?? (coreServer(r.server).traceEnable === 'off' ? 'GET,POST,OPTIONS,HEAD' : 'GET,POST,OPTIONS,HEAD,TRACE'));
    }
    // The generated page gets no default charset added: it carries its own.
  }
  // Filters the handler added do not apply to the error page.
  r.outputFilters = [];
  r.filterHead = null;
  const inserted = runVoid(rt.hooks.insertErrorFilter, r);
  if (inserted instanceof Promise) return inserted.then(() => sendErrorBody(rt, r, location, recursiveError));
  return sendErrorBody(rt, r, location, recursiveError);
}

/** The error page's body (or none for HEAD) down the chain. httpd writes the page into a
 *  buffer and reads what is left of the request body (ap_finalize_request_protocol's
 *  ap_discard_request_body) before anything goes out: a body that cannot be read (cut short,
 *  too large) turns the answer into that error, with the first one in its "Additionally"
 *  note, Content-Length left out, and the dropped page counted in %b. */
function sendErrorBody(rt: Runtime, r: Request, location: string | undefined, recursiveError: number): MaybePromise<void> {
  const body = r.body;
  if (body !== null && !body.done && r.main === null && r.connection.keepAlive && !dropsConnection(r.status)) {
    return discardThrough(r).then((st) => {
      if (st === 0) return sendErrorPage(rt, r, location, recursiveError);
      r.connection.keepAlive = false;
      if (!r.headerOnly) r.bytesSent += errorPageLength(r, location, recursiveError);
      r.notes.set(NO_CONTENT_LENGTH, '1');
      return r.rt.die(r, st, r.status);
    });
  }
  return sendErrorPage(rt, r, location, recursiveError);
}

/** Reads and drops the rest of r's body through its input filters: 0, or the status the
 *  read failed with (400 cut short, 408, 413). */
async function discardThrough(r: Request): Promise<number> {
  try {
    while ((await r.read()) !== null) { /* dropped */ }
    return 0;
  } catch (e) {
    if (e instanceof FilterError) return e.status;
    throw e;
  }
}

/** The length of the page sendErrorPage would send. */
function errorPageLength(r: Request, location: string | undefined, recursiveError: number): number {
  const custom = errorDocumentFor(r, r.status);
  if (custom && custom.startsWith('"') && !recursiveError) return Buffer.byteLength(custom.slice(1), 'latin1');
  return Buffer.byteLength(generatedPage(r.status, r, location, recursiveError), 'latin1');
}

function sendErrorPage(rt: Runtime, r: Request, location: string | undefined, recursiveError: number): MaybePromise<void> {
  const status = r.status;
  if (r.headerOnly) return passBrigade(rt, r, [EOS]);
  const custom = errorDocumentFor(r, status);
  let body: string;
  if (custom && custom.startsWith('"') && !recursiveError) {
    body = custom.slice(1);
  } else if (custom === undefined && !recursiveError && FIXED_PAGES.has(status) && signature(r, '') === '' && !r.notes.has('variant-list') && moduleStatusLine(r, status) === undefined) {
    // The same page for every request: built once (read-only from then on; nothing downstream
    // writes into the buffers it is given).
    let page = fixedPages.get(status);
    if (page === undefined) {
      page = Buffer.from(generatedPage(status, r, location, 0), 'latin1');
      fixedPages.set(status, page);
    }
    return passBrigade(rt, r, [{ kind: 'data', data: page }, EOS]);
  } else {
    // A module's status line without a reason gets "Unknown Reason" for the response's
    // status line too (ap_send_error_response rewrites r->status_line).
    const own = moduleStatusLine(r, status);
    if (own !== undefined) r.statusLine = own;
    body = generatedPage(status, r, location, recursiveError);
  }
  return passBrigade(rt, r, [{ kind: 'data', data: Buffer.from(body, 'latin1') }, EOS]);
}

/** Statuses whose generated page says nothing about the request (ap_send_error_response's
 *  canned texts without the method, location, notes or Expect header in them). */
const FIXED_PAGES: ReadonlySet<number> = new Set([401, 404, 406, 407, 408, 410]);
/** Those pages when ServerSignature is off, built once per process. */
const fixedPages = new Map<number, Buffer>();

/** A status line a module set (mod_proxy's "502 Proxy Error"), when ap_send_error_response
 *  accepts it for the page's title: it begins with the status, then a space and a letter or
 *  digit ("Unknown Reason" is added when it has no reason). */
function moduleStatusLine(r: Request, status: number): string | undefined {
  const sl = r.statusLine;
  if (sl === undefined || r.status !== status) return undefined;
  const m = /^(\d{3})(?:$|(\s)(?:$|[A-Za-z0-9]))/.exec(sl);
  if (m === null || Number(m[1]) !== status) return undefined;
  if (sl.length === 3) return sl + ' Unknown Reason';
  if (sl.length === 4) return sl + 'Unknown Reason';
  return sl;
}

/** ap_send_error_response's page for `status`. */
function generatedPage(status: number, r: Request, location: string | undefined, recursiveError: number): string {
  const own = moduleStatusLine(r, status);
  const title = own ?? statusLine(status);
  const h1 = own !== undefined ? own.slice(4) : STATUS_LINES.get(status) ?? '';
  let body = DOCTYPE + `<html><head>\n<title>${title}</title>\n</head><body>\n<h1>${h1}</h1>\n`;
  body += cannedError(status, {
    method: r.method, location: location ?? '', admin: r.server.serverAdmin ?? '[no address given]',
    errorNotes: r.notes.get('error-notes'), escape: escapeHtml,
    expect: status === 417 ? r.headersIn.get('Expect') : undefined,
    variantList: r.notes.get('variant-list'),
    verboseErrorTo: r.notes.get('verbose-error-to'),
  });
  if (recursiveError) {
    body += `<p>Additionally, a ${statusLine(recursiveError)}\nerror was encountered while trying to use an ErrorDocument to handle the request.</p>\n`;
  }
  body += signature(r, '<hr>\n');
  body += '</body></html>\n';
  return body;
}
