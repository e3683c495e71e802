// The rewriting engine (modules/mappers/mod_rewrite.c lookup_variable, do_expand,
// apply_rewrite_cond, apply_rewrite_rule, apply_rewrite_list). It runs synchronously; a
// look-ahead (LA-U, LA-F, -U, -F) or a prg: map makes it wait, which the generator form
// allows without a second copy of the engine: `drive` runs it to the end, returning a promise
// only if a step had to wait.

import * as fs from 'node:fs';
import type { Request } from '../../../server/request/request.js';
import { APLOG_ERR } from '../../../server/log/levels.js';
import { lstatSince, statSince } from '../../../server/request/stat-cache.js';
import { coreServer } from '../../../server/core/core-module.js';
import { getServerName, getServerPort, httpScheme, matchesRequestVhost } from '../../../server/core/server-name.js';
import { serverBanner } from '../../../server/version.js';
import { globals } from '../../../server/core/globals.js';
import { uidName, gidName } from '../../aaa/unix-names.js';
import { atoi } from '../../../lib/c-numbers.js';
import {
  CONDFLAG_NOCASE, CONDFLAG_NOTMATCH, CONDFLAG_NOVARY, CONDFLAG_ORNEXT,
  CONDPAT_AP_EXPR, CONDPAT_FILE_DIR, CONDPAT_FILE_EXISTS, CONDPAT_FILE_LINK, CONDPAT_FILE_SIZE, CONDPAT_FILE_XBIT,
  CONDPAT_INT_EQ, CONDPAT_INT_GE, CONDPAT_INT_GT, CONDPAT_INT_LE, CONDPAT_INT_LT, CONDPAT_LU_FILE, CONDPAT_LU_URL,
  CONDPAT_STR_EQ, CONDPAT_STR_GE, CONDPAT_STR_GT, CONDPAT_STR_LE, CONDPAT_STR_LT,
  RULEFLAG_CHAIN, RULEFLAG_DISCARDPATHINFO, RULEFLAG_END, RULEFLAG_ESCAPEBACKREF, RULEFLAG_FORCEREDIRECT,
  RULEFLAG_IGNOREONSUBREQ, RULEFLAG_LASTRULE, RULEFLAG_NEWROUND, RULEFLAG_NOESCAPE, RULEFLAG_NOSUB, RULEFLAG_NOTMATCH,
  RULEFLAG_PASSTHROUGH, RULEFLAG_PROXY, RULEFLAG_QSAPPEND, RULEFLAG_QSDISCARD, RULEFLAG_QSLAST, RULEFLAG_QSNONE,
  RULEFLAG_STATUS, RULEFLAG_UNC, RULEFLAG_UNSAFE_ALLOW3F, RULEFLAG_UNSAFE_PREFIX_STAT,
  type Part, type RewriteCond, type RewriteRule, type Template,
} from './parse.js';
import { absoluteUriScheme, escapeBackref, isAbsoluteUri } from './uri.js';
import { lookupMap, type RewriteMapEntry } from './maps.js';
import { resolveVariable } from '../../../expr/index.js';
import { L, rewritelog, traceOn } from './log.js';

// ---- configuration shapes ---------------------------------------------------------------------
export const OPTION_INHERIT = 1 << 1;
export const OPTION_INHERIT_BEFORE = 1 << 2;
export const OPTION_NOSLASH = 1 << 3;
export const OPTION_ANYURI = 1 << 4;
export const OPTION_MERGEBASE = 1 << 5;
export const OPTION_INHERIT_DOWN = 1 << 6;
export const OPTION_INHERIT_DOWN_BEFORE = 1 << 7;
export const OPTION_IGNORE_INHERIT = 1 << 8;
export const OPTION_IGNORE_CONTEXT_INFO = 1 << 9;
export const OPTION_LEGACY_PREFIX_DOCROOT = 1 << 10;
export const OPTION_UNSAFE_PREFIX_STAT = 1 << 12;

export interface RewriteServerConfig {
  enabled: boolean;
  stateSet: boolean;
  options: number;
  optionsSet: boolean;
  maps: Map<string, RewriteMapEntry>;
  /** RewriteCond lines waiting for their RewriteRule. */
  pendingConds: RewriteCond[];
  rules: RewriteRule[];
  /** The server this configuration was made for (httpd's conf->server check). */
  serverId: number;
}

export interface RewriteDirConfig {
  enabled: boolean;
  stateSet: boolean;
  options: number;
  optionsSet: boolean;
  pendingConds: RewriteCond[];
  rules: RewriteRule[];
  /** The section's directory with a trailing slash; undefined at server level. */
  directory: string | undefined;
  baseurl: string | undefined;
  baseurlSet: boolean;
}

// ---- what `plume explain` records ----------------------------------------------------------------
export interface RewriteTraceEvents {
  /** A rule was tried: the input its pattern saw, the captures, what the conditions did. */
  rewrite_rule: {
    readonly rule: RewriteRule;
    readonly perdir: string | undefined;
    readonly input: string;
    readonly matched: boolean;
    readonly captures: readonly string[];
    /** The result of the substitution (undefined for '-', a non-match or failed conditions). */
    readonly result: string | undefined;
    readonly outcome: string;
  };
  rewrite_cond: {
    readonly cond: RewriteCond;
    readonly input: string;
    readonly matched: boolean;
    readonly captures: readonly string[];
    readonly skipped: boolean;
  };
  /** What the hook did with the rule set's result (redirect, internal redirect, file...). */
  rewrite_result: { readonly perdir: string | undefined; readonly text: string };
}

// ---- stepping: synchronous unless a step waits ---------------------------------------------------
export type Step<T> = Generator<Promise<unknown>, T, unknown>;

function* wait<T>(p: T | Promise<T>): Step<T> {
  if (!(p instanceof Promise)) return p;
  return (yield p) as T;
}

/** Runs a step function to its end: the value, or a promise when some step waited. */
export function drive<T>(g: Step<T>): T | Promise<T> {
  let s = g.next();
  while (!s.done) return resumeLater(g, s.value);
  return s.value;
}

async function resumeLater<T>(g: Step<T>, first: Promise<unknown>): Promise<T> {
  let pending: Promise<unknown> = first;
  for (;;) {
    let v: unknown;
    let s: IteratorResult<Promise<unknown>, T>;
    try {
      v = await pending;
      s = g.next(v);
    } catch (e) {
      s = g.throw(e);
    }
    if (s.done) return s.value;
    pending = s.value;
  }
}

// ---- the rewriting context (httpd's rewrite_ctx) ----------------------------------------------------
export interface Services {
  /** ap_sub_req_lookup_uri / _file for the look-aheads and -U / -F. */
  lookupUri(r: Request, uri: string): Promise<Request>;
  lookupFile(r: Request, file: string): Promise<Request>;
  /** RewriteCond expr: the engine's evaluation, with the regex captures of its last match. */
  evalExpr(r: Request, expr: unknown): ExprOutcome | Promise<ExprOutcome>;
}

export interface ExprOutcome {
  readonly ok: boolean;
  readonly captures: readonly (string | undefined)[] | undefined;
  readonly error: string | undefined;
}

export interface Ctx {
  r: Request;
  uri: string;
  perdir: string | undefined;
  dconf: RewriteDirConfig | undefined;
  maps: ReadonlyMap<string, RewriteMapEntry>;
  varyThis: string | undefined;
  vary: string | undefined;
  /** $N: the rule's match; %N: the last matching condition's. */
  rr: readonly (string | undefined)[] | undefined;
  rc: readonly (string | undefined)[] | undefined;
  services: Services;
  /** RewriteOptions LegacyPrefixDocRoot of the server (reduce_uri then leaves no note). */
  legacyPrefixDocroot: boolean;
  /** The rule whose substitution was applied last (prefix_stat's lastsub). */
  lastsub: RewriteRule | undefined;
}

const asciiUpper = (s: string): string => s.replace(/[a-z]+/g, (m) => m.toUpperCase());

function lookupHeader(name: string, ctx: Ctx): string | undefined {
  const v = ctx.r.headersIn.get(name);
  if (v !== undefined && name.toLowerCase() !== 'host') ctx.varyThis = ctx.varyThis !== undefined ? `${ctx.varyThis}, ${name}` : name;
  return v;
}

function pad2(n: number): string { return n < 10 ? '0' + n : String(n); }

/** lookup_variable for the names that never wait. */
function lookupVariable(varName: string, ctx: Ctx): string {
  const r = ctx.r;
  if (varName.length < 4) return '';
  if (varName[3] === ':') {
    const pre = varName.slice(0, 3).toUpperCase();
    const rest = varName.slice(4);
    if (rest !== '' && pre === 'ENV') return r.notes.get(rest) ?? r.subprocessEnv.get(rest) ?? process.env[rest] ?? '';
    // SSL:… — mod_ssl's variables through the expression engine (empty without mod_ssl).
    if (rest !== '' && pre === 'SSL') return exprVariable(r, rest) ?? '';
    return '';
  }
  if (varName[4] === ':') {
    const rest = varName.slice(5);
    if (rest !== '' && varName.slice(0, 4).toUpperCase() === 'HTTP') return lookupHeader(rest, ctx) ?? '';
    return '';
  }
  const v = asciiUpper(varName);
  const now = (): Date => new Date();
  switch (v) {
    case 'TIME': {
      const d = now();
      const res = `${d.getFullYear()}${pad2(d.getMonth() + 1)}${pad2(d.getDate())}${pad2(d.getHours())}${pad2(d.getMinutes())}${pad2(d.getSeconds())}`;
      if (traceOn(r, 1)) rewritelog(r, 1, ctx.perdir, L.time, `RESULT='${res}'`);
      return res;
    }
    case 'IPV6': {
      const on = r.connection.remoteIp.includes(':') && !/^::ffff:/i.test(r.connection.remoteIp);
      if (traceOn(r, 1)) rewritelog(r, 1, ctx.perdir, L.ipv6, `IPV6='${on ? 'on' : 'off'}'`);
      return on ? 'on' : 'off';
    }
    case 'HTTPS': return exprVariable(r, 'HTTPS') ?? 'off';
    case 'TIME_DAY': return pad2(now().getDate());
    case 'TIME_SEC': return pad2(now().getSeconds());
    case 'TIME_MIN': return pad2(now().getMinutes());
    case 'TIME_MON': return pad2(now().getMonth() + 1);
    case 'TIME_WDAY': return String(now().getDay());
    case 'TIME_YEAR': return String(now().getFullYear()).padStart(4, '0');
    case 'TIME_HOUR': return pad2(now().getHours());
    case 'IS_SUBREQ': return r.main !== null ? 'true' : 'false';
    case 'PATH_INFO': return r.pathInfo;
    case 'AUTH_TYPE': return r.apAuthType ?? '';
    case 'HTTP_HOST': return lookupHeader('Host', ctx) ?? '';
    case 'SERVER_NAME': {
      const n = getServerName(r);
      return n.includes(':') && !n.startsWith('[') ? `[${n}]` : n;
    }
    case 'REMOTE_ADDR': return r.useragentIp;
    case 'SERVER_ADDR': return r.connection.localIp;
    case 'HTTP_ACCEPT': return lookupHeader('Accept', ctx) ?? '';
    case 'THE_REQUEST': return r.theRequest;
    case 'API_VERSION': return '20120211:142';
    case 'HTTP_COOKIE': return lookupHeader('Cookie', ctx) ?? '';
    case 'SERVER_PORT': return String(getServerPort(r));
    case 'REMOTE_HOST': return r.connection.remoteHost ?? r.connection.remoteIp;
    case 'REMOTE_PORT': return String(r.connection.remotePort);
    case 'REMOTE_USER': return r.user ?? '';
    case 'SCRIPT_USER': return r.finfo !== null ? uidName(r.finfo.uid) ?? String(r.finfo.uid) : '<unknown>';
    case 'REQUEST_URI': return r.uri;
    case 'SCRIPT_GROUP': return r.finfo !== null ? gidName(r.finfo.gid) ?? String(r.finfo.gid) : '<unknown>';
    case 'REMOTE_IDENT': return '';
    case 'HTTP_REFERER': return lookupHeader('Referer', ctx) ?? '';
    case 'QUERY_STRING': return r.args ?? '';
    case 'SERVER_ADMIN': return r.server.serverAdmin ?? '';
    case 'DOCUMENT_ROOT': return documentRoot(r);
    case 'HTTP_FORWARDED': return lookupHeader('Forwarded', ctx) ?? '';
    case 'CONTEXT_PREFIX': return r.contextPrefix ?? '';
    case 'REQUEST_METHOD': return r.method;
    case 'REQUEST_SCHEME': return httpScheme(r);
    case 'HTTP_USER_AGENT': return lookupHeader('User-Agent', ctx) ?? '';
    case 'SCRIPT_FILENAME': return r.filename;
    case 'SERVER_PROTOCOL': return r.protocol;
    case 'SERVER_SOFTWARE': return serverBanner(globals(r.rt.ctx).serverTokens);
    case 'CONN_REMOTE_ADDR': return r.connection.remoteIp;
    case 'REQUEST_FILENAME': return r.filename;
    case 'HTTP_PROXY_CONNECTION': return lookupHeader('Proxy-Connection', ctx) ?? '';
    case 'CONTEXT_DOCUMENT_ROOT': return r.contextDocumentRoot ?? documentRoot(r);
    default: return '';
  }
}

/** An ap_expr variable (HTTPS, mod_ssl's SSL_*), resolved once per configuration. */
const exprVars = new WeakMap<object, Map<string, ((r: Request) => string) | undefined>>();
function exprVariable(r: Request, name: string): string | undefined {
  let m = exprVars.get(r.rt.ctx);
  if (m === undefined) { m = new Map(); exprVars.set(r.rt.ctx, m); }
  let f = m.get(name);
  if (f === undefined && !m.has(name)) {
    f = resolveVariable(name, r.rt.ctx);
    m.set(name, f);
  }
  return f?.(r);
}

export function documentRoot(r: Request): string {
  return coreServer(r.server).documentRoot ?? '/usr/local/apache2/htdocs';
}

/** subreq_ok: not a subrequest, or one for another URI (no infinite recursion). */
function subreqOk(r: Request): boolean {
  return r.main === null || r.main.uri !== r.uri;
}

/** The LA-U / LA-F look-aheads: the variable as a subrequest for the URI/file would see it. */
function* lookAhead(varName: string, ctx: Ctx): Step<string> {
  const r = ctx.r;
  const kind = varName.slice(0, 4).toUpperCase();
  const inner = varName.slice(5);
  if (!subreqOk(r)) return '';
  let rr: Request;
  let path: string;
  if (kind === 'LA-U') {
    path = ctx.perdir !== undefined ? laU(ctx) : ctx.uri;
    rr = yield* wait(ctx.services.lookupUri(r, path));
  } else {
    path = ctx.uri;
    if (ctx.perdir !== undefined && path.startsWith('/')) {
      rr = yield* wait(ctx.services.lookupUri(r, path));
    } else {
      if (ctx.perdir !== undefined) path = (ctx.dconf?.directory ?? '') + path;
      rr = yield* wait(ctx.services.lookupFile(r, path));
    }
  }
  ctx.r = rr;
  const result = yield* variable(inner, ctx);
  ctx.r = r;
  if (traceOn(r, 5)) rewritelog(r, 5, ctx.perdir, kind === 'LA-U' ? L.lookaheadU : L.lookaheadF, `lookahead: path=${path} var=${inner} -> val=${result}`);
  return result;
}

function laU(ctx: Ctx): string {
  if (ctx.uri.startsWith('/')) return ctx.uri;
  const d = ctx.dconf;
  return (d?.baseurl ?? d?.directory ?? '') + ctx.uri;
}

function* variable(varName: string, ctx: Ctx): Step<string> {
  if (varName[4] === ':' && varName.length > 5) {
    const k = varName.slice(0, 4).toUpperCase();
    if (k === 'LA-U' || k === 'LA-F') {
      if (ctx.uri === undefined) return '';
      return yield* lookAhead(varName, ctx);
    }
  }
  return lookupVariable(varName, ctx);
}

/** Tracks do_expand's unsafe_qmark: whether the query separator came from an expansion. */
interface Qmark { value: number; tracking: boolean }

function noteQmark(qm: Qmark | undefined, rule: RewriteRule | undefined, text: string, expanded: boolean): void {
  if (qm === undefined || !qm.tracking || !text.includes('?')) return;
  qm.value = expanded ? 1 : 0;
  if (rule === undefined || !(rule.flags & RULEFLAG_QSLAST)) qm.tracking = false;
}

function backref(p: Extract<Part, { kind: 'ref' }>, ctx: Ctx, rule: RewriteRule | undefined): string {
  const src = p.cond ? ctx.rc : ctx.rr;
  if (src === undefined) return '';
  const v = src[p.n];
  if (v === undefined || v === '') return '';
  if (rule !== undefined && (rule.flags & RULEFLAG_ESCAPEBACKREF)) {
    const esc = escapeBackref(v, rule.escapes, rule.noescapes, rule.flags);
    if (traceOn(ctx.r, 5)) rewritelog(ctx.r, 5, ctx.perdir, L.escapeBackref, `escaping backreference '${v}' to '${esc}'`);
    return esc;
  }
  return v;
}

/** do_expand for templates that never wait. */
export function expandSync(t: Template, ctx: Ctx, rule: RewriteRule | undefined, qm: Qmark | undefined): string {
  if (t.literal !== undefined) {
    noteQmark(qm, rule, t.literal, false);
    return t.literal;
  }
  let out = '';
  for (const p of t.parts) {
    let s: string;
    switch (p.kind) {
      case 'lit': s = p.text; noteQmark(qm, rule, s, false); break;
      case 'esc': s = p.text; break;
      case 'var': s = lookupVariable(p.name, ctx); noteQmark(qm, rule, s, true); break;
      case 'ref': s = backref(p, ctx, rule); noteQmark(qm, rule, s, true); break;
      case 'map': s = ''; break;
    }
    out += s;
  }
  return out;
}

/** do_expand. */
export function* expand(t: Template, ctx: Ctx, rule: RewriteRule | undefined, qm: Qmark | undefined): Step<string> {
  if (!t.mayWait) return expandSync(t, ctx, rule, qm);
  let out = '';
  for (const p of t.parts) {
    let s: string;
    switch (p.kind) {
      case 'lit': s = p.text; noteQmark(qm, rule, s, false); break;
      case 'esc': s = p.text; break;
      case 'var': s = yield* variable(p.name, ctx); noteQmark(qm, rule, s, true); break;
      case 'ref': s = backref(p, ctx, rule); noteQmark(qm, rule, s, true); break;
      case 'map': {
        const key = yield* expand(p.key, ctx, rule, undefined);
        let v = yield* wait(lookupMap(ctx.r, ctx.maps, p.map, key));
        if (v === undefined && p.dflt !== undefined) {
          const d = yield* expand(p.dflt, ctx, rule, undefined);
          if (d !== '') v = d;
        }
        s = v ?? '';
        noteQmark(qm, rule, s, true);
        break;
      }
    }
    out += s;
  }
  return out;
}

function expandAny(t: Template, ctx: Ctx, rule: RewriteRule | undefined, qm: Qmark | undefined): Step<string> | string {
  return t.mayWait ? expand(t, ctx, rule, qm) : expandSync(t, ctx, rule, qm);
}

function* expandStep(t: Template, ctx: Ctx, rule: RewriteRule | undefined, qm: Qmark | undefined): Step<string> {
  const v = expandAny(t, ctx, rule, qm);
  return typeof v === 'string' ? v : yield* v;
}

// ---- conditions ---------------------------------------------------------------------------------
/** apr_stat for the file tests, through the core's stat answers (shared by the requests read
 *  in the same turn, as the walks share them). */
function statOf(r: Request, p: string, link: boolean): fs.Stats | undefined {
  try {
    return link ? lstatSince(p, r.readSeq) : statSince(p, r.readSeq);
  } catch {
    return undefined;
  }
}

/** compare_lexicography: the longer string is greater; equal lengths compare bytes. */
function compareLex(a: string, b: string): number {
  if (a.length !== b.length) return a.length > b.length ? 1 : -1;
  for (let i = 0; i < a.length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return x > y ? 1 : -1;
  }
  return 0;
}

/** strcasecmp: the sign of the first difference, ASCII case folded. */
function strcasecmp(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x >= 65 && x <= 90) x += 32;
    if (y >= 65 && y <= 90) y += 32;
    if (x !== y) return x - y;
  }
  return a.length - b.length;
}

const matchGroups = (m: RegExpExecArray): (string | undefined)[] => Array.from(m);

/** apply_rewrite_cond. */
function* applyCond(c: RewriteCond, ctx: Ctx): Step<boolean> {
  const r = ctx.r;
  const input = c.ptype !== CONDPAT_AP_EXPR ? yield* expandStep(c.input, ctx, undefined, undefined) : '';
  let rc = false;
  let captures: readonly (string | undefined)[] | undefined;
  switch (c.ptype) {
    case CONDPAT_FILE_EXISTS: { const st = statOf(r, input, false); rc = st !== undefined && st.isFile(); break; }
    case CONDPAT_FILE_SIZE: { const st = statOf(r, input, false); rc = st !== undefined && st.isFile() && st.size > 0; break; }
    case CONDPAT_FILE_LINK: { const st = statOf(r, input, true); rc = st !== undefined && st.isSymbolicLink(); break; }
    case CONDPAT_FILE_DIR: { const st = statOf(r, input, false); rc = st !== undefined && st.isDirectory(); break; }
    case CONDPAT_FILE_XBIT: { const st = statOf(r, input, false); rc = st !== undefined && (st.mode & 0o111) !== 0; break; }
    case CONDPAT_LU_URL:
      if (input !== '' && subreqOk(r)) {
        const rsub = yield* wait(ctx.services.lookupUri(r, input));
        rc = rsub.status < 400;
        if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.condU, `RewriteCond URI (-U check: path=${input} -> status=${rsub.status}`);
      }
      break;
    case CONDPAT_LU_FILE:
      if (input !== '' && subreqOk(r)) {
        const rsub = yield* wait(ctx.services.lookupFile(r, input));
        rc = rsub.status < 300 && statOf(r, rsub.filename, false) !== undefined;
        if (traceOn(r, 5)) rewritelog(r, 5, undefined, L.condF, `RewriteCond file (-F check: path=${input} -> file=${rsub.filename} status=${rsub.status}`);
      }
      break;
    case CONDPAT_STR_GE: rc = ((c.flags & CONDFLAG_NOCASE) ? Math.sign(strcasecmp(input, c.pattern)) : compareLex(input, c.pattern)) >= 0; break;
    case CONDPAT_STR_GT: rc = ((c.flags & CONDFLAG_NOCASE) ? Math.sign(strcasecmp(input, c.pattern)) : compareLex(input, c.pattern)) >= 1; break;
    case CONDPAT_STR_LE: rc = ((c.flags & CONDFLAG_NOCASE) ? Math.sign(strcasecmp(input, c.pattern)) : compareLex(input, c.pattern)) <= 0; break;
    case CONDPAT_STR_LT: rc = ((c.flags & CONDFLAG_NOCASE) ? Math.sign(strcasecmp(input, c.pattern)) : compareLex(input, c.pattern)) <= -1; break;
    case CONDPAT_STR_EQ: rc = (c.flags & CONDFLAG_NOCASE) ? strcasecmp(input, c.pattern) === 0 : input === c.pattern; break;
    case CONDPAT_INT_GE: rc = atoi(input) >= atoi(c.pattern); break;
    case CONDPAT_INT_GT: rc = atoi(input) > atoi(c.pattern); break;
    case CONDPAT_INT_LE: rc = atoi(input) <= atoi(c.pattern); break;
    case CONDPAT_INT_LT: rc = atoi(input) < atoi(c.pattern); break;
    case CONDPAT_INT_EQ: rc = atoi(input) === atoi(c.pattern); break;
    case CONDPAT_AP_EXPR: {
      const res = yield* wait(ctx.services.evalExpr(r, c.expr));
      if (res.error !== undefined) {
        if (traceOn(r, 1)) rewritelog(r, 1, ctx.perdir, L.exprFailed, `RewriteCond: expr='${c.patternText}' evaluation failed: ${res.error}`);
        rc = false;
      } else {
        rc = res.ok;
      }
      if (rc && !(c.flags & CONDFLAG_NOTMATCH) && res.captures !== undefined) ctx.rc = captures = res.captures;
      break;
    }
    default: {
      const m = c.regexp!.exec(input);
      rc = m !== null;
      if (m !== null && !(c.flags & CONDFLAG_NOTMATCH)) ctx.rc = captures = matchGroups(m);
    }
  }
  if (c.flags & CONDFLAG_NOTMATCH) rc = !rc;
  if (traceOn(r, 4)) rewritelog(r, 4, ctx.perdir, L.cond, `RewriteCond: input='${input}' pattern='${c.patternText}'${(c.flags & CONDFLAG_NOCASE) ? ' [NC]' : ''} => ${rc ? 'matched' : 'not-matched'}`);
  r.trace?.record('rewrite_cond', { cond: c, input, matched: rc, captures: (captures ?? []).map((x) => x ?? ''), skipped: false });
  return rc;
}

// ---- rules --------------------------------------------------------------------------------------
export const RULE_RC_NOMATCH = 0;
export const RULE_RC_MATCH = 1;
export const RULE_RC_NOSUB = 2;
export const RULE_RC_STATUS_SET = 3;

export const ACTION_NORMAL = 1;
export const ACTION_NOESCAPE = 2;
export const ACTION_STATUS = 4;
export const ACTION_STATUS_SET = 8;

/** splitout_queryargs. */
function splitoutQueryargs(r: Request, flags: number): void {
  if (flags & RULEFLAG_QSNONE) {
    if (traceOn(r, 2)) rewritelog(r, 2, undefined, L.qsNone, 'discarding query string, no parse from substitution');
    r.args = undefined;
    return;
  }
  const abs = absoluteUriScheme(r.filename);
  if (abs.len && !abs.qs) {
    r.args = undefined;
    return;
  }
  if (flags & RULEFLAG_QSDISCARD) {
    r.args = undefined;
    if (traceOn(r, 2)) rewritelog(r, 2, undefined, L.qsDiscard, 'discarding query string');
  }
  const q = (flags & RULEFLAG_QSLAST) ? r.filename.lastIndexOf('?') : r.filename.indexOf('?', abs.len);
  if (q >= abs.len && q >= 0) {
    const olduri = r.filename;
    const qs = r.filename.slice(q + 1);
    r.filename = r.filename.slice(0, q);
    if (flags & RULEFLAG_QSAPPEND) {
      if (qs !== '') r.args = `${qs}&${r.args ?? ''}`;
    } else {
      r.args = qs;
    }
    if (r.args !== undefined) {
      if (r.args === '') r.args = undefined;
      else if (r.args.endsWith('&')) r.args = r.args.slice(0, -1);
    }
    if (traceOn(r, 3)) rewritelog(r, 3, undefined, L.split, `split uri=${olduri} -> uri=${r.filename}, args=${r.args ?? '<none>'}`);
  }
}


/** reduce_uri: strips http[s]://ourhost[:port] from r.filename. */
function reduceUri(r: Request, legacyPrefixDocroot: boolean): void {
  const scheme = httpScheme(r);
  const l = scheme.length;
  const f = r.filename;
  if (!(f.length > l + 3 && f.slice(0, l).toLowerCase() === scheme.toLowerCase() && f.slice(l, l + 3) === '://')) return;
  let cp = l + 3;
  const hostStart = cp;
  while (cp < f.length && f[cp] !== '/' && f[cp] !== ':') cp++;
  const host = f.slice(hostStart, cp);
  let port: number;
  let url: string;
  const defaultPort = scheme.toLowerCase() === 'https' ? 443 : 80;
  if (f[cp] === ':') {
    const ps = cp + 1;
    cp = ps;
    while (cp < f.length && f[cp] !== '/') cp++;
    port = atoi(f.slice(ps, cp)) & 0xffff;
    url = f.slice(cp);
    if (url === '') url = '/';
  } else if (f[cp] === '/') {
    port = defaultPort;
    url = f.slice(cp);
  } else {
    port = defaultPort;
    url = '/';
  }
  if (matchesRequestVhost(r, host, port)) {
    if (traceOn(r, 3)) rewritelog(r, 3, undefined, L.reduce, `reduce ${r.filename} -> ${url}`);
    r.filename = url;
    if (!legacyPrefixDocroot) r.notes.set('mod_rewrite_uri_reduced', 'true');
  }
}

/** fully_qualify_uri. */
function fullyQualifyUri(r: Request): void {
  if (r.method === 'CONNECT') return;
  if (isAbsoluteUri(r.filename)) return;
  let host = getServerName(r);
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  const port = getServerPort(r);
  const scheme = httpScheme(r);
  const dflt = scheme.toLowerCase() === 'https' ? 443 : 80;
  r.filename = `${scheme}://${host}${port === dflt ? '' : ':' + port}${r.filename.startsWith('/') ? '' : '/'}${r.filename}`;
}

/** force_type_handler: [T=...] and [H=...] remembered in notes for the type checker. */
function* forceTypeHandler(p: RewriteRule, ctx: Ctx): Step<void> {
  if (p.forcedMimetype !== undefined) {
    const t = (yield* expandStep(p.forcedMimetype, ctx, p, undefined)).replace(/[A-Z]+/g, (m) => m.toLowerCase());
    if (t !== '') {
      if (traceOn(ctx.r, 2)) rewritelog(ctx.r, 2, ctx.perdir, L.mimeType, `remember ${ctx.r.filename} to have MIME-type '${t}'`);
      ctx.r.notes.set('rewrite-forced-mimetype', t);
    }
  }
  if (p.forcedHandler !== undefined) {
    const h = (yield* expandStep(p.forcedHandler, ctx, p, undefined)).replace(/[A-Z]+/g, (m) => m.toLowerCase());
    if (h !== '') {
      if (traceOn(ctx.r, 2)) rewritelog(ctx.r, 2, ctx.perdir, L.handler, `remember ${ctx.r.filename} to have Content-handler '${h}'`);
      ctx.r.notes.set('rewrite-forced-handler', h);
    }
  }
}

/** do_expand_env: [E=name:value], [E=!name]. */
function* expandEnv(p: RewriteRule, ctx: Ctx): Step<void> {
  for (const t of p.env) {
    const name = yield* expandStep(t, ctx, undefined, undefined);
    if (name.startsWith('!')) {
      ctx.r.subprocessEnv.delete(name.slice(1));
      if (traceOn(ctx.r, 5)) rewritelog(ctx.r, 5, undefined, L.unsetEnv, `unsetting env variable '${name.slice(1)}'`);
    } else {
      const colon = name.indexOf(':');
      const k = colon < 0 ? name : name.slice(0, colon);
      const v = colon < 0 ? '' : name.slice(colon + 1);
      ctx.r.subprocessEnv.set(k, v);
      if (traceOn(ctx.r, 5)) rewritelog(ctx.r, 5, undefined, L.setEnv, `setting env variable '${k}' to '${v}'`);
    }
  }
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** apr_strtok: tokens between runs of separators. */
function strtok(s: string, sep: string): string[] {
  return s.split(sep).filter((t) => t !== '');
}

const cookiesSet = new WeakMap<Request, Set<string>>();

/** add_cookie: [CO=name:value:domain[:lifetime[:path[:secure[:httponly[:samesite]]]]]]. */
function addCookie(r: Request, s: string): void {
  let sep = ':';
  if (s.startsWith(';')) { sep = ';'; s = s.slice(1); }
  const t = strtok(s, sep);
  const [name, val, domain] = t;
  if (name === undefined || val === undefined || domain === undefined) return;
  let rmain = r;
  while (rmain.main !== null) rmain = rmain.main;
  const pool = poolOwner(rmain);
  let done = cookiesSet.get(pool);
  if (done === undefined) { done = new Set(); cookiesSet.set(pool, done); }
  if (done.has(name)) {
    if (traceOn(rmain, 5)) rewritelog(rmain, 5, undefined, L.skipCookie, `skipping already set cookie '${name}'`);
    return;
  }
  const expires = t[3];
  const path = expires !== undefined ? t[4] : undefined;
  const secure = path !== undefined ? t[5] : undefined;
  const httponly = secure !== undefined ? t[6] : undefined;
  const samesite = httponly !== undefined ? t[7] : undefined;
  let expTime: string | undefined;
  if (expires !== undefined) {
    const mins = atoi(expires);
    if (mins) {
      const d = new Date(r.requestTime + mins * 60000);
      expTime = `${DAYS[d.getUTCDay()]}, ${pad2(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${String(d.getUTCFullYear()).padStart(4, '0')} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())} GMT`;
    }
  }
  const truthy = (v: string | undefined, word: string): boolean => v !== undefined && (v.toLowerCase() === 'true' || v === '1' || v.toLowerCase() === word);
  let cookie = `${name}=${val}; path=${path ?? '/'}; domain=${domain}`;
  if (expires !== undefined && expTime !== undefined) cookie += `; expires=${expTime}`;
  if (truthy(secure, 'secure')) cookie += '; secure';
  if (truthy(httponly, 'httponly')) cookie += '; HttpOnly';
  if (samesite !== undefined && samesite !== '0' && samesite.toLowerCase() !== 'false') cookie += `; SameSite=${samesite}`;
  rmain.errHeadersOut.add('Set-Cookie', cookie);
  done.add(name);
  if (traceOn(rmain, 5)) rewritelog(rmain, 5, undefined, L.setCookie, `setting cookie '${cookie}'`);
}

const AP_IS_SLASH = (c: string | undefined): boolean => c === '/';

/** apply_rewrite_rule. */
function* applyRule(p: RewriteRule, ctx: Ctx): Step<number> {
  const r = ctx.r;
  ctx.uri = r.filename;
  const perdir = ctx.perdir;
  let isProxyreq = false;
  if (perdir !== undefined) {
    isProxyreq = r.proxyreq !== 0 && r.filename.startsWith('proxy:');
    if (r.pathInfo !== '') {
      if (traceOn(r, 3)) rewritelog(r, 3, perdir, L.pathInfo, `add path info postfix: ${ctx.uri} -> ${ctx.uri}${r.pathInfo}`);
      ctx.uri = ctx.uri + r.pathInfo;
    }
    if (!isProxyreq && ctx.uri.length >= perdir.length && ctx.uri.startsWith(perdir)) {
      if (traceOn(r, 3)) rewritelog(r, 3, perdir, L.stripPerdir, `strip per-dir prefix: ${ctx.uri} -> ${ctx.uri.slice(perdir.length)}`);
      ctx.uri = ctx.uri.slice(perdir.length);
    }
  }
  if (traceOn(r, 3)) rewritelog(r, 3, perdir, L.applying, `applying pattern '${p.pattern}' to uri '${ctx.uri}'`);
  const m = p.regexp.exec(ctx.uri);
  const notmatch = (p.flags & RULEFLAG_NOTMATCH) !== 0;
  const tried = r.trace;
  if ((m !== null) === notmatch) {
    tried?.record('rewrite_rule', { rule: p, perdir, input: ctx.uri, matched: false, captures: [], result: undefined, outcome: 'pattern does not match' });
    return RULE_RC_NOMATCH;
  }
  ctx.varyThis = undefined;
  ctx.rc = undefined;
  ctx.rr = notmatch || m === null ? undefined : matchGroups(m);
  const captures = (ctx.rr ?? []).map((x) => x ?? '');
  const conds = p.conds;
  for (let i = 0; i < conds.length; i++) {
    let c = conds[i]!;
    const rc = yield* applyCond(c, ctx);
    if (c.flags & CONDFLAG_NOVARY) ctx.varyThis = undefined;
    if (c.flags & CONDFLAG_ORNEXT) {
      if (!rc) {
        ctx.varyThis = undefined;
        continue;
      }
      while (i < conds.length && (c.flags & CONDFLAG_ORNEXT)) {
        c = conds[++i]!;
        if (c !== undefined && tried) tried.record('rewrite_cond', { cond: c, input: '', matched: true, captures: [], skipped: true });
      }
    } else if (!rc) {
      tried?.record('rewrite_rule', { rule: p, perdir, input: ctx.uri, matched: true, captures, result: undefined, outcome: 'conditions not met' });
      return RULE_RC_NOMATCH;
    }
    if (ctx.varyThis !== undefined) {
      ctx.vary = ctx.vary !== undefined ? `${ctx.vary}, ${ctx.varyThis}` : ctx.varyThis;
      ctx.varyThis = undefined;
    }
  }
  let newuri = '';
  if (!(p.flags & RULEFLAG_NOSUB)) {
    const qm: Qmark | undefined = (p.flags & RULEFLAG_UNSAFE_ALLOW3F) ? undefined : { value: -1, tracking: true };
    newuri = yield* expandStep(p.template, ctx, p, qm);
    if (traceOn(r, 2)) rewritelog(r, 2, perdir, L.rewrite, `rewrite '${ctx.uri}' -> '${newuri}'`);
    if (qm !== undefined && qm.value > 0) {
      r.log('rewrite', APLOG_ERR, 'AH10508: Unsafe URL with %3f URL rewritten without UnsafeAllow3F');
      r.status = 403;
      tried?.record('rewrite_rule', { rule: p, perdir, input: ctx.uri, matched: true, captures, result: newuri, outcome: '403: a ? from a back-reference or variable (AH10508; UnsafeAllow3F allows it)' });
      return RULE_RC_STATUS_SET;
    }
  }
  yield* expandEnv(p, ctx);
  for (const t of p.cookies) addCookie(ctx.r, yield* expandStep(t, ctx, undefined, undefined));
  if (p.flags & RULEFLAG_NOSUB) {
    yield* forceTypeHandler(p, ctx);
    if (p.flags & RULEFLAG_STATUS) {
      if (traceOn(r, 2)) rewritelog(r, 2, perdir, L.forcing, `forcing responsecode ${p.status} for ${r.filename}`);
      r.status = p.status;
    }
    tried?.record('rewrite_rule', { rule: p, perdir, input: ctx.uri, matched: true, captures, result: undefined, outcome: (p.flags & RULEFLAG_STATUS) ? `status ${p.status}` : 'matched (no substitution)' });
    return RULE_RC_NOSUB;
  }
  let prefixAdded = false;
  if (!isProxyreq && !newuri.startsWith('/') && !isAbsoluteUri(newuri)) {
    if (perdir !== undefined) {
      if (traceOn(r, 3)) rewritelog(r, 3, perdir, L.addPerdir, `add per-dir prefix: ${newuri} -> ${perdir}${newuri}`);
      newuri = perdir + newuri;
      prefixAdded = true;
    } else if (!(p.flags & (RULEFLAG_PROXY | RULEFLAG_FORCEREDIRECT))) {
      if (traceOn(r, 3)) rewritelog(r, 3, perdir, L.addRoot, `add root prefix: ${newuri} -> /${newuri}`);
      newuri = '/' + newuri;
      prefixAdded = true;
    }
  }
  r.filename = newuri;
  if (perdir !== undefined && (p.flags & RULEFLAG_DISCARDPATHINFO)) r.pathInfo = '';
  splitoutQueryargs(r, p.flags);
  const done = (outcome: string): number => {
    tried?.record('rewrite_rule', { rule: p, perdir, input: ctx.uri, matched: true, captures, result: r.filename + (r.args !== undefined ? '?' + r.args : ''), outcome });
    return RULE_RC_MATCH;
  };
  if (p.flags & RULEFLAG_PROXY) {
    fullyQualifyUri(r);
    if (traceOn(r, 2)) rewritelog(r, 2, perdir, L.proxy, `forcing proxy-throughput with ${r.filename}`);
    r.filename = 'proxy:' + r.filename;
    return done('proxy [P]');
  }
  if (p.flags & RULEFLAG_FORCEREDIRECT) {
    fullyQualifyUri(r);
    if (traceOn(r, 2)) rewritelog(r, 2, perdir, L.explicitRedirect, `explicitly forcing redirect with ${r.filename}`);
    r.status = p.status;
    return done(`redirect [R=${p.status}]`);
  }
  reduceUri(r, ctx.legacyPrefixDocroot);
  if (isAbsoluteUri(r.filename)) {
    if (traceOn(r, 2)) rewritelog(r, 2, perdir, L.implicitRedirect, `implicitly forcing redirect (rc=${p.status} with ${r.filename}`);
    r.status = p.status;
    return done(`redirect (absolute URL, ${p.status})`);
  }
  if (!((p.flags & RULEFLAG_UNC) || prefixAdded)) {
    if (!AP_IS_SLASH(p.output[0]) || !AP_IS_SLASH(p.output[1])) {
      let k = 0;
      while (AP_IS_SLASH(r.filename[k]) && AP_IS_SLASH(r.filename[k + 1])) k++;
      if (k) r.filename = r.filename.slice(k);
    }
  }
  yield* forceTypeHandler(p, ctx);
  return done('rewritten');
}

/** apply_rewrite_list: the rule set; the ACTION_* result (0: nothing changed). */
export function* applyRewriteList(ctx: Ctx, rules: readonly RewriteRule[]): Step<number> {
  const r = ctx.r;
  const perdir = ctx.perdir;
  let round = 1;
  let changed = 0;
  ctx.lastsub = undefined;
  loop: for (;;) {
    for (let i = 0; i < rules.length; i++) {
      let p = rules[i]!;
      if (r.main !== null && (p.flags & (RULEFLAG_IGNOREONSUBREQ | RULEFLAG_FORCEREDIRECT))) continue;
      ctx.vary = undefined;
      const rc = yield* applyRule(p, ctx);
      if (rc !== RULE_RC_NOMATCH) {
        if (!(p.flags & RULEFLAG_NOSUB)) {
          if (traceOn(r, 2)) rewritelog(r, 2, perdir, L.lastsub, `setting lastsub to rule with output ${p.output}`);
          ctx.lastsub = p;
        }
        if (r.filename.length > 2 * r.server.limitRequestLine) {
          r.log('rewrite', APLOG_ERR, `RewriteRule '${p.pattern}' and URI '${r.uri}' exceeded maximum length (${2 * r.server.limitRequestLine})`);
          r.status = 500;
          return ACTION_STATUS;
        }
        if (ctx.vary !== undefined) {
          const old = r.headersOut.get('Vary');
          r.headersOut.set('Vary', old !== undefined ? `${old}, ${ctx.vary}` : ctx.vary);
        }
        if (rc === RULE_RC_STATUS_SET) return ACTION_STATUS_SET;
        if (p.flags & RULEFLAG_STATUS) return ACTION_STATUS;
        if (rc !== RULE_RC_NOSUB) changed = (p.flags & RULEFLAG_NOESCAPE) ? ACTION_NOESCAPE : ACTION_NORMAL;
        if (p.flags & RULEFLAG_PASSTHROUGH) {
          if (traceOn(r, 2)) rewritelog(r, 2, perdir, L.passthrough, `forcing '${r.filename}' to get passed through to next API URI-to-filename handler`);
          r.filename = 'passthrough:' + r.filename;
          changed = ACTION_NORMAL;
          break loop;
        }
        if (p.flags & RULEFLAG_END) {
          if (traceOn(r, 8)) rewritelog(r, 8, perdir, L.endFlag, 'Rule has END flag, no further rewriting for this request');
          markEnd(r);
          break loop;
        }
        if (p.flags & (RULEFLAG_PROXY | RULEFLAG_LASTRULE)) break loop;
        if (p.flags & RULEFLAG_NEWROUND) {
          if (++round >= p.maxrounds) {
            r.log('rewrite', APLOG_ERR, `AH02596: RewriteRule '${p.pattern}' and URI '${r.uri}' exceeded maximum number of rounds (${p.maxrounds}) via the [N] flag`);
            r.status = 500;
            return ACTION_STATUS;
          }
          continue loop;
        }
        if (p.skip > 0) i = Math.min(rules.length, i + p.skip);
      } else {
        while (i < rules.length && (p.flags & RULEFLAG_CHAIN)) {
          i++;
          p = rules[i]!;
          if (p === undefined) break;
        }
      }
    }
    break;
  }
  return changed;
}

/** The request that owns r's pool: an internal redirect shares its predecessor's pool
 *  (httpd's internal_internal_redirect), a subrequest has its own. */
export function poolOwner(r: Request): Request {
  let p = r;
  while (p.prev !== null) p = p.prev;
  return p;
}

/** The END flag's mark, kept with the pool as httpd keeps it (pool userdata): it holds for
 *  the internal redirects that follow, not for subrequests. */
const endMarks = new WeakSet<Request>();
function markEnd(r: Request): void {
  endMarks.add(poolOwner(r));
}
export function endMarked(r: Request): boolean {
  return endMarks.has(poolOwner(r));
}

export { RULEFLAG_UNSAFE_PREFIX_STAT, RULEFLAG_QSAPPEND };
