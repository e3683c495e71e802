// The SSI elements mod_include itself handles (its handle_* functions): config, echo, set,
// printenv, include, fsize, flastmod, comment, and if/elif/else/endif (whose state lives in
// the document, see Doc in mod_include.ts). Each logs what httpd logs, with its AH number,
// and prints the error message where httpd does. `exec` comes from mod_cgi / mod_cgid.

import * as path from 'node:path';
import type { Stats } from 'node:fs';
import type { Request } from '../../../server/request/request.js';
import { APLOG_ERR, APLOG_WARNING } from '../../../server/log/levels.js';
import { OK } from '../../../server/module.js';
import { strfsize } from '../../../lib/apr-strings.js';
import type { SsiArg, SsiContext } from './api.js';
import { base64Decode, base64Encode, decodeHtml, escapeHtml2, escapeUri, escapeUrlencoded, htTime, unescapeUrl } from './text.js';

/** What the built-in elements need of the document beyond the public context. */
export interface DocState extends SsiContext {
  errorStr: string;
  timeFmt: string;
  undefinedEcho: string;
  sizeInBytes: boolean;
  /** The time LAST_MODIFIED and flastmod's... of the document (ms), for `config timefmt`. */
  readonly mtime: number;
  /** Sets an SSI variable (in the main document's table). */
  setVariable(name: string, value: string): void;
  /** Every variable, lazy ones computed (printenv). */
  allVariables(): [string, string][];
}

const file = (ctx: SsiContext): string => ctx.r.filename;

/** APR_EABOVEROOT, the status apr_filepath_merge gives a path that leaves the directory (an
 *  absolute one included, as httpd logs it). */
const ABOVE_ROOT = { code: 20023, text: 'The given path was above the root path' };

/** The log level of a missing-argument message: an error where it prints, a warning in a
 *  branch that is not printed. */
const levelFor = (ctx: SsiContext): number => (ctx.printing ? APLOG_ERR : APLOG_WARNING);

/** apr_filepath_merge(NULL, p, SECUREROOTTEST | NOTABSOLUTE): a relative path that stays at or
 *  below the document's directory, normalised; undefined otherwise. */
export function secureRelative(p: string): string | undefined {
  if (p.startsWith('/')) return undefined;
  const out: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length === 0) return undefined;
      out.pop();
      continue;
    }
    out.push(seg);
  }
  return out.join('/');
}

function dirOf(r: Request): string {
  return r.filename.slice(0, r.filename.lastIndexOf('/') + 1);
}

/** The decodings, then the encodings, of echo and set ("none", "url", "urlencoded",
 *  "entity", "base64", comma or blank separated). The bad word's message on failure. */
function recode(ctx: SsiContext, value: string, decoding: string, encoding: string, tag: 'echo' | 'set'): string | undefined {
  let v = value;
  const codes = tag === 'echo' ? ['01344', '01345'] : ['01364', '01365'];
  for (const t of decoding.split(/[, \t]+/).filter((x) => x !== '')) {
    const w = t.toLowerCase();
    if (w === 'none') continue;
    if (w === 'url') v = unescapeUrl(v);
    else if (w === 'urlencoded') v = unescapeUrl(v, true);
    else if (w === 'entity') v = decodeHtml(v);
    else if (w === 'base64') v = base64Decode(v);
    else {
      ctx.r.log('include', APLOG_ERR, `AH${codes[0]}: unknown value "${t}" to parameter "decoding" of tag ${tag} in ${file(ctx)}`);
      return undefined;
    }
  }
  for (const t of encoding.split(/[, \t]+/).filter((x) => x !== '')) {
    const w = t.toLowerCase();
    if (w === 'none') continue;
    if (w === 'url') v = escapeUri(v);
    else if (w === 'urlencoded') v = escapeUrlencoded(v);
    else if (w === 'entity') v = escapeHtml2(v);
    else if (w === 'base64') v = base64Encode(v);
    else {
      ctx.r.log('include', APLOG_ERR, `AH${codes[1]}: unknown value "${t}" to parameter "encoding" of tag ${tag} in ${file(ctx)}`);
      return undefined;
    }
  }
  return v;
}

/** `<!--#echo [decoding=..] [encoding=..] var=.. ... -->` */
export function handleEcho(ctx: DocState, args: readonly SsiArg[]): void {
  if (args.length === 0) ctx.r.log('include', levelFor(ctx), `AH01343: missing argument for echo element in ${file(ctx)}`);
  if (!ctx.printing) return;
  if (args.length === 0) { ctx.emitError(); return; }
  let encoding = 'entity';
  let decoding = 'none';
  for (const a of args) {
    if (a.name === null || a.value === null) break;
    const val = decodeHtml(a.value);
    if (a.name === 'var') {
      const v = ctx.variable(ctx.parseString(val));
      if (v === undefined) { ctx.emit(ctx.undefinedEcho); continue; }
      const out = recode(ctx, v, decoding, encoding, 'echo');
      if (out === undefined) { ctx.emitError(); break; }
      ctx.emit(out);
    } else if (a.name === 'decoding') {
      decoding = val;
    } else if (a.name === 'encoding') {
      encoding = val;
    } else {
      ctx.r.log('include', APLOG_ERR, `AH01346: unknown parameter "${a.name}" in tag echo of ${file(ctx)}`);
      ctx.emitError();
      break;
    }
  }
}

/** `<!--#config [timefmt=..] [sizefmt=..] [errmsg=..] [echomsg=..] -->` */
export function handleConfig(ctx: DocState, args: readonly SsiArg[]): void {
  if (args.length === 0) ctx.r.log('include', levelFor(ctx), `AH01347: missing argument for config element in ${file(ctx)}`);
  if (!ctx.printing) return;
  if (args.length === 0) { ctx.emitError(); return; }
  for (const a of args) {
    if (a.name === null || a.value === null) break;
    if (a.name === 'errmsg') ctx.errorStr = ctx.parseString(a.value);
    else if (a.name === 'echomsg') ctx.undefinedEcho = ctx.parseString(a.value);
    else if (a.name === 'timefmt') {
      ctx.timeFmt = ctx.parseString(a.value);
      const now = ctx.r.requestTime;
      ctx.setVariable('DATE_LOCAL', htTime(now, ctx.timeFmt, false));
      ctx.setVariable('DATE_GMT', htTime(now, ctx.timeFmt, true));
      ctx.setVariable('LAST_MODIFIED', htTime(ctx.mtime, ctx.timeFmt, false));
    } else if (a.name === 'sizefmt') {
      const v = ctx.parseString(a.value);
      if (v === 'bytes') ctx.sizeInBytes = true;
      else if (v === 'abbrev') ctx.sizeInBytes = false;
      else {
        ctx.r.log('include', APLOG_ERR, `AH01348: unknown value "${v}" to parameter "sizefmt" of tag config in ${file(ctx)}`);
        ctx.emitError();
        break;
      }
    } else {
      ctx.r.log('include', APLOG_ERR, `AH01349: unknown parameter "${a.name}" to tag config in ${file(ctx)}`);
      ctx.emitError();
      break;
    }
  }
}

/** `<!--#set var=.. [decoding=..] [encoding=..] value=.. ... -->` */
export function handleSet(ctx: DocState, args: readonly SsiArg[]): void {
  if (args.length < 2) ctx.r.log('include', levelFor(ctx), `AH01362: missing argument for set element in ${file(ctx)}`);
  if (!ctx.printing) return;
  if (args.length < 2) { ctx.emitError(); return; }
  let encoding = 'none';
  let decoding = 'none';
  let name: string | undefined;
  for (const a of args) {
    if (a.name === null || a.value === null) break;
    if (a.name === 'var') name = ctx.parseString(decodeHtml(a.value));
    else if (a.name === 'decoding') decoding = a.value;
    else if (a.name === 'encoding') encoding = a.value;
    else if (a.name === 'value') {
      if (name === undefined) {
        ctx.r.log('include', APLOG_ERR, `AH01363: variable must precede value in set directive in ${file(ctx)}`);
        ctx.emitError();
        break;
      }
      const v = recode(ctx, ctx.parseString(a.value), decoding, encoding, 'set');
      if (v === undefined) { ctx.emitError(); break; }
      ctx.setVariable(name, v);
    } else {
      ctx.r.log('include', APLOG_ERR, `AH01366: Invalid tag for set directive in ${file(ctx)}`);
      ctx.emitError();
      break;
    }
  }
}

/** `<!--#printenv -->`: every variable as name=value lines, HTML-escaped. */
export function handlePrintenv(ctx: DocState, args: readonly SsiArg[]): void {
  if (args.length > 0) ctx.r.log('include', levelFor(ctx), `AH01367: printenv directive does not take tags in ${file(ctx)}`);
  if (!ctx.printing) return;
  if (args.length > 0) { ctx.emitError(); return; }
  let out = '';
  for (const [k, v] of ctx.allVariables()) out += `${escapeHtml2(k)}=${escapeHtml2(v)}\n`;
  ctx.emit(out);
}

/** find_file: the file an fsize/flastmod attribute names, by file= (relative, at or below the
 *  document) or virtual= (a URI); undefined after logging why not. */
async function findFile(ctx: SsiContext, element: string, tag: string, value: string): Promise<Stats | undefined> {
  const r = ctx.r;
  if (tag === 'file') {
    const rel = secureRelative(value);
    if (rel === undefined) {
      r.log('include', APLOG_ERR, `AH02668: unable to access file "${value}" in parsed file ${r.filename}`, ABOVE_ROOT);
      return undefined;
    }
    const rr = await r.rt.lookupFile(r, dirOf(r) + rel);
    if (rr.status === 200 && rr.finfo !== null) return rr.finfo;
    r.log('include', APLOG_ERR, `AH02670: unable to lookup information about "${value}" in parsed file ${r.filename}`);
    return undefined;
  }
  if (tag === 'virtual') {
    const rr = await r.rt.lookupUri(r, value);
    if (rr.status === 200 && rr.finfo !== null) return rr.finfo;
    r.log('include', APLOG_ERR, `AH01339: unable to get information about "${value}" in parsed file ${r.filename}`);
    return undefined;
  }
  r.log('include', APLOG_ERR, `AH01340: unknown parameter "${tag}" to tag ${element} in ${r.filename}`);
  return undefined;
}

/** apr_off_t with thousands separators (`sizefmt="bytes"`). */
function commify(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** `<!--#fsize file|virtual=.. ... -->` */
export async function handleFsize(ctx: DocState, args: readonly SsiArg[]): Promise<void> {
  if (args.length === 0) ctx.r.log('include', levelFor(ctx), `AH01350: missing argument for fsize element in ${file(ctx)}`);
  if (!ctx.printing) return;
  if (args.length === 0) { ctx.emitError(); return; }
  for (const a of args) {
    if (a.name === null || a.value === null) break;
    const st = await findFile(ctx, 'fsize', a.name, ctx.parseString(decodeHtml(a.value)));
    if (st === undefined) { ctx.emitError(); break; }
    ctx.emit(ctx.sizeInBytes ? commify(st.size) : strfsize(st.size));
  }
}

/** `<!--#flastmod file|virtual=.. ... -->` */
export async function handleFlastmod(ctx: DocState, args: readonly SsiArg[]): Promise<void> {
  if (args.length === 0) ctx.r.log('include', levelFor(ctx), `AH01351: missing argument for flastmod element in ${file(ctx)}`);
  if (!ctx.printing) return;
  if (args.length === 0) { ctx.emitError(); return; }
  for (const a of args) {
    if (a.name === null || a.value === null) break;
    const st = await findFile(ctx, 'flastmod', a.name, ctx.parseString(decodeHtml(a.value)));
    if (st === undefined) { ctx.emitError(); break; }
    ctx.emit(htTime(st.mtimeMs, ctx.timeFmt, false));
  }
}

/**
 * `<!--#include virtual|file=.. [onerror=..] ... -->`: each in turn, as a subrequest whose output
 * takes the element's place; after a failure the following virtual/file attributes are skipped
 * until an onerror attribute, which is tried instead; the error message when nothing worked.
 */
export async function handleInclude(ctx: DocState, args: readonly SsiArg[]): Promise<void> {
  const r = ctx.r;
  if (args.length === 0) r.log('include', levelFor(ctx), `AH01341: missing argument for include element in ${file(ctx)}`);
  if (!ctx.printing) return;
  if (args.length === 0) { ctx.emitError(); return; }
  let lastError = false;
  for (const a of args) {
    if (a.name === null || a.value === null) break;
    const tag = a.name;
    if (tag !== 'virtual' && tag !== 'file' && tag !== 'onerror') {
      r.log('include', APLOG_ERR, `AH01342: unknown parameter "${tag}" to tag include in ${file(ctx)}`);
      ctx.emitError();
      break;
    }
    const raw = decodeHtml(a.value);
    const target = ctx.parseString(raw);
    let rr: Request | undefined;
    let error: string | undefined;
    let why: { code: number; text: string } | undefined;
    if (tag === 'file') {
      const rel = secureRelative(target);
      if (rel === undefined) { error = `unable to include file "${raw}" in parsed file ${r.filename}`; why = ABOVE_ROOT; }
      else rr = await r.rt.lookupFile(r, path.join(dirOf(r), rel));
    } else if ((tag === 'virtual' && !lastError) || (tag === 'onerror' && lastError)) {
      // With a kept body (mod_request), the subrequest repeats the request's method.
      rr = await r.rt.lookupUri(r, target, r.keptBody !== null ? r.method : undefined, true);
    } else {
      continue;
    }
    let status = 0;
    if (error === undefined && rr !== undefined) {
      if (rr.status !== 200) {
        error = `unable to include "${raw}" in parsed file ${r.filename}, subrequest setup returned ${rr.status}`;
      } else if (ctx.noExec && rr.contentType !== undefined && !rr.contentType.startsWith('text/')) {
        error = `unable to include potential exec "${raw}" in parsed file ${r.filename}, content type not text/*`;
      } else {
        ctx.adoptSubrequest(rr);
        await ctx.flush();
        status = await r.rt.runSubRequest(rr, ctx.filter.next);
        if (status !== OK) error = `unable to include "${raw}" in parsed file ${r.filename}, subrequest returned ${status}`;
      }
    }
    if (error !== undefined) {
      r.log('include', APLOG_ERR, error, why);
      if (lastError) break;
      lastError = true;
    } else {
      lastError = false;
    }
  }
  if (lastError) ctx.emitError();
}

/** `<!--#comment ... -->` */
export function handleComment(): void {
  // Nothing: the element and its text are dropped.
}
