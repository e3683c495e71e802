// mod_include: server-side includes, the INCLUDES output filter (httpd's
// modules/filters/mod_include.c). The filter reads the document as it streams (scanner.ts),
// passes text through while printing and runs each element as it is read: the built-in ones
// (elements.ts), `#if expr` on the 2.4 expression engine — or on the 2.2 grammar under
// SSILegacyExprParser (legacy-expr.ts) — and elements other modules provide (mod_cgi's exec,
// api.ts). Directives: XBitHack, SSIErrorMsg, SSITimeFormat, SSIStartTag, SSIEndTag,
// SSIUndefinedEcho, SSILegacyExprParser, SSILastModified, SSIEtag; handler server-parsed.

import {
  defineModule, directive, MODULE_API_VERSION, OR_ALL, OR_LIMIT, OR_OPTIONS, RSRC_CONF, DECLINED, HOOK_LAST,
  type MaybePromise,
} from '../../../server/module.js';
import type { CmdParms } from '../../../server/config/cmd.js';
import type { ConfigContext } from '../../../server/config/context.js';
import type { Request } from '../../../server/request/request.js';
import {
  FTYPE_RESOURCE, EOS, bucketPieces, type Brigade, type Bucket, type FilterInstance, type FilterSpec,
} from '../../../server/filters.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_WARNING } from '../../../server/log/levels.js';
import { coreDir, OPT_INCLUDES, OPT_INC_WITH_EXEC } from '../../../server/core/config.js';
import { updateMtime, rationalizeMtime } from '../../../server/http/conditional.js';
import { toHttpDate } from '../../../server/log/time.js';
import { addCgiVars, addCommonVars } from '../../../server/util-script.js';
import { uidName } from '../../aaa/unix-names.js';
import {
  compilePcre, evalBool, isFailure, parseExpr, EXPR_FLAG_RESTRICTED,
  type BoolExpr, type ExprMatch, type ExprProvider,
} from '../../../expr/index.js';
import { SsiScanner, type SsiArg, type SsiEvent } from './scanner.js';
import type { SsiContext, SsiElementHandler } from './api.js';
import { evalLegacy } from './legacy-expr.js';
import {
  handleComment, handleConfig, handleEcho, handleFlastmod, handleFsize, handleInclude, handlePrintenv, handleSet,
  type DocState,
} from './elements.js';
import { decodeHtml, escapeShellCmd, htTime, unescapeUrl } from './text.js';

export type { SsiContext, SsiElementHandler } from './api.js';

const DEFAULT_ERROR_MSG = '[an error occurred while processing this directive]';
const DEFAULT_TIME_FORMAT = '%A, %d-%b-%Y %H:%M:%S %Z';
const DEFAULT_UNDEFINED_ECHO = '(none)';

type XBitHack = 'off' | 'on' | 'full';

interface IncludeDir {
  readonly errorMsg: string | undefined;
  readonly timeFmt: string | undefined;
  readonly undefinedEcho: string | undefined;
  readonly xbithack: XBitHack | undefined;
  readonly lastModified: boolean | undefined;
  readonly etag: boolean | undefined;
  readonly legacyExpr: boolean | undefined;
}

interface IncludeServer {
  startTag: string;
  endTag: string;
}

type MutableDir = { -readonly [K in keyof IncludeDir]: IncludeDir[K] };

function createDir(): IncludeDir {
  return { errorMsg: undefined, timeFmt: undefined, undefinedEcho: undefined, xbithack: undefined, lastModified: undefined, etag: undefined, legacyExpr: undefined };
}

const MERGE: { readonly [K in keyof IncludeDir]: (b: IncludeDir[K], a: IncludeDir[K]) => IncludeDir[K] } = {
  errorMsg: (b, a) => a ?? b,
  timeFmt: (b, a) => a ?? b,
  undefinedEcho: (b, a) => a ?? b,
  xbithack: (b, a) => a ?? b,
  lastModified: (b, a) => a ?? b,
  etag: (b, a) => a ?? b,
  legacyExpr: (b, a) => a ?? b,
};

function mergeDir(base: Readonly<IncludeDir>, add: Readonly<IncludeDir>): IncludeDir {
  const out = {} as MutableDir;
  for (const k of Object.keys(MERGE) as (keyof IncludeDir)[]) {
    (out as Record<string, unknown>)[k] = (MERGE[k] as (b: unknown, a: unknown) => unknown)(base[k], add[k]);
  }
  return out;
}

// ---- the variables of a document -------------------------------------------------------------

/** The variables mod_include computes only when read, per variable table (a nested include
 *  shares its parent's table, and so this set). */
const LAZY_NAMES = ['DATE_LOCAL', 'DATE_GMT', 'LAST_MODIFIED', 'USER_NAME'] as const;
const lazyOf = new WeakMap<Map<string, string>, Set<string>>();

/** The document being parsed for each request running the filter (for v() in expressions). */
const docOf = new WeakMap<Request, Doc>();
/** Subrequests made by an include element: their INCLUDES filter shares the includer's variables. */
const includedBy = new WeakMap<Request, Request>();

/** The last regex matched (by #if), for $0-$9. */
interface Backref extends ExprMatch {
  pattern: string;
  groups: number;
  haveMatch: boolean;
}

class Doc implements DocState {
  printing = true;
  condTrue = true;
  /** The current #if chain had a condition that failed. */
  condError = false;
  ifNesting = 0;
  errorStr: string;
  timeFmt: string;
  undefinedEcho: string;
  sizeInBytes = false;
  readonly noExec: boolean;
  readonly legacy: boolean;
  readonly scanner: SsiScanner;
  mtime: number;
  re: Backref | null = null;
  pending: Buffer[] = [];
  pendingBytes = 0;
  started = false;
  ended = false;
  /** Input read since output last went on. */
  bytesRead = 0;

  constructor(readonly r: Request, readonly filter: FilterInstance, readonly handlers: ReadonlyMap<string, SsiElementHandler>) {
    const conf = self.dir(r);
    const sconf = self.server(r.server);
    this.noExec = (coreDir(r).opts & OPT_INC_WITH_EXEC) === 0;
    this.legacy = conf.legacyExpr === true;
    this.errorStr = conf.errorMsg ?? DEFAULT_ERROR_MSG;
    this.timeFmt = conf.timeFmt ?? DEFAULT_TIME_FORMAT;
    this.undefinedEcho = conf.undefinedEcho ?? DEFAULT_UNDEFINED_ECHO;
    this.scanner = new SsiScanner(sconf.startTag, sconf.endTag, r.filename);
    this.mtime = r.finfo !== null ? r.finfo.mtimeMs : 0;
  }

  // ---- SsiContext ----
  parseString(s: string, leaveName = false): string {
    return expandVariables(this, s, leaveName);
  }
  decodeHtml(s: string): string {
    return decodeHtml(s);
  }
  emit(data: string | Buffer): void {
    const b = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    if (b.length === 0) return;
    this.pending.push(b);
    this.pendingBytes += b.length;
  }
  emitError(): void {
    this.emit(this.errorStr);
  }
  flush(): MaybePromise<void> {
    if (this.pending.length === 0) return;
    const bb: Brigade = this.pending.map((data): Bucket => ({ kind: 'data', data }));
    this.pending = [];
    this.pendingBytes = 0;
    return this.filter.pass(bb);
  }
  adoptSubrequest(sub: Request): void {
    includedBy.set(sub, this.r);
  }

  variable(name: string): string | undefined {
    if (name.length === 1 && name >= '0' && name <= '9') return this.backref(Number(name));
    const env = this.r.subprocessEnv;
    let v = env.get(name);
    let key = name;
    if (v === undefined) {
      // apr tables compare names without regard to case.
      const lc = name.toLowerCase();
      for (const [k, val] of env) if (k.toLowerCase() === lc) { v = val; key = k; break; }
      if (v === undefined) return undefined;
    }
    const lazy = lazyOf.get(env);
    if (lazy !== undefined && lazy.has(key)) return this.computeLazy(key) ?? v;
    return v;
  }

  setVariable(name: string, value: string): void {
    const env = this.r.subprocessEnv;
    lazyOf.get(env)?.delete(name);
    env.set(name, value);
  }

  allVariables(): [string, string][] {
    const env = this.r.subprocessEnv;
    const lazy = lazyOf.get(env);
    const out: [string, string][] = [];
    for (const [k, v] of env) out.push([k, lazy !== undefined && lazy.has(k) ? (this.computeLazy(k) ?? v) : v]);
    return out;
  }

  private computeLazy(name: string): string | undefined {
    const r = this.r;
    let v: string;
    if (name === 'DATE_LOCAL') v = htTime(r.requestTime, this.timeFmt, false);
    else if (name === 'DATE_GMT') v = htTime(r.requestTime, this.timeFmt, true);
    else if (name === 'LAST_MODIFIED') v = htTime(this.mtime, this.timeFmt, false);
    else if (name === 'USER_NAME') v = (r.finfo !== null ? uidName(r.finfo.uid) : undefined) ?? '<unknown>';
    else return undefined;
    this.setVariable(name, v);
    return v;
  }

  private backref(n: number): string | undefined {
    const re = this.re;
    if (re === null || !re.haveMatch) {
      this.r.log('include', APLOG_WARNING, `AH01329: regex capture $${n} refers to no regex in ${this.r.filename}`);
      return undefined;
    }
    if (re.groups < n) {
      this.r.log('include', APLOG_WARNING, `AH01330: regex capture $${n} is out of range (last regex was: '${re.pattern}') in ${this.r.filename}`);
      return undefined;
    }
    return re.match?.[n] ?? undefined;
  }
}

/** ap_ssi_parse_string: $name and ${name} replaced by the variables' values (nothing for an
 *  unset one, or with `leaveName` the name as written — `${name` loses its brace, as in
 *  httpd), `\$` a literal dollar; a `${` without its `}` ends the string there. */
function expandVariables(doc: Doc, s: string, leaveName = false): string {
  if (!s.includes('$') && !s.includes('\\')) return s;
  let out = '';
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '\\') {
      if (s[i + 1] === '$') { out += '$'; i += 2; } else { out += c; i++; }
      continue;
    }
    if (c !== '$') { out += c; i++; continue; }
    let key = '';
    let next = i + 1;
    if (s[i + 1] === '{') {
      const close = s.indexOf('}', i + 2);
      if (close < 0) {
        doc.r.log('include', APLOG_ERR, `AH01331: Missing '}' on variable "${s.slice(i + 2)}" in ${doc.r.filename}`);
        break;
      }
      key = s.slice(i + 2, close);
      next = close + 1;
    } else {
      let e = i + 1;
      while (e < s.length && /[A-Za-z0-9_]/.test(s[e]!)) e++;
      key = s.slice(i + 1, e);
      next = e;
    }
    if (key === '') { out += '$'; i++; continue; }
    const v = doc.variable(key);
    if (v !== undefined) out += v;
    else if (leaveName) out += s.slice(i, s[i + 1] === '{' ? next - 1 : next);
    i = next;
  }
  return out;
}

// ---- #if expressions -------------------------------------------------------------------------

/** v(), reqenv() and env() read the SSI variables (include_expr_lookup); env() looks at the
 *  request's notes first and the server's own environment last, as httpd's env does. */
const SSI_EXPR: ExprProvider = {
  functions: {
    v: { fn: (s, arg) => docOf.get(s.r)?.variable(arg) ?? '' },
    reqenv: { fn: (s, arg) => docOf.get(s.r)?.variable(arg) ?? '' },
    env: { fn: (s, arg) => s.r.notes.get(arg) ?? docOf.get(s.r)?.variable(arg) ?? process.env[arg] ?? '' },
  },
};

/** Parsed `#if expr` conditions, by text: a document's conditions are parsed once per process. */
const parsedExprs = new Map<string, BoolExpr | string>();
const MAX_PARSED = 2000;

function parseSsiExpr(ctx: ConfigContext, text: string): BoolExpr | string {
  let e = parsedExprs.get(text);
  if (e === undefined) {
    const res = parseExpr(text, { flags: EXPR_FLAG_RESTRICTED, module: 'include', ctx, first: [SSI_EXPR] });
    e = res.ok ? res.expr : res.error;
    if (parsedExprs.size >= MAX_PARSED) parsedExprs.clear();
    parsedExprs.set(text, e);
  }
  return e;
}

/** An #if/#elif condition: true/false, or undefined after logging why it failed. */
async function condition(doc: Doc, text: string): Promise<boolean | undefined> {
  const r = doc.r;
  if (doc.legacy) {
    return evalLegacy(text, r.filename, {
      expand: (s) => expandVariables(doc, s),
      regex: (subject, pattern) => {
        const re = compilePcre(pattern);
        if (re === null) {
          r.log('include', APLOG_ERR, `AH02667: unable to compile pattern "${pattern}"`);
          return -1;
        }
        re.re.lastIndex = 0;
        const m = re.re.exec(subject);
        doc.re = { source: subject, match: m, pattern, groups: re.groups, haveMatch: m !== null };
        return m !== null ? 1 : 0;
      },
      access: async (uri) => {
        const rr = await r.rt.lookupUri(r, uri);
        if (rr.status < 400) return true;
        r.log('include', APLOG_DEBUG, `AH01336: mod_include: The tested subrequest -A "${uri}" returned an error code.`);
        return false;
      },
      error: (msg) => r.log('include', APLOG_ERR, msg),
    });
  }
  const e = parseSsiExpr(r.rt.ctx, text);
  if (typeof e === 'string') {
    r.log('include', APLOG_ERR, `AH01337: Could not parse expr "${text}" in ${r.filename}: ${e}`);
    return undefined;
  }
  // httpd hands the expression the document's match buffers but never its group count or
  // pattern: after a match $0 is readable, $1-$9 are "out of range (last regex was: '(null)')".
  const re: Backref = doc.re ?? { source: undefined, match: null, pattern: '(null)', groups: 0, haveMatch: false };
  if (!re.haveMatch) re.source = undefined;
  const v = await evalBool(e, r, re);
  if (isFailure(v)) {
    r.log('include', APLOG_ERR, `AH01338: Could not evaluate expr "${text}" in ${r.filename}: ${v.error}`);
    return undefined;
  }
  if (re.source !== undefined) re.haveMatch = true;
  doc.re = re;
  return v;
}

/** An #if or #elif that could not be decided: the error message, and none of the chain's
 *  content printed until a later #elif decides (httpd 2.4.71: "Don't print any of
 *  if/elsif/else content when a conditional evaluation returns an error"). */
function condFailed(doc: Doc): void {
  doc.emitError();
  doc.printing = doc.condTrue = false;
  doc.condError = true;
}

async function handleIf(doc: Doc, args: readonly SsiArg[]): Promise<void> {
  const r = doc.r;
  if (args.length !== 1) {
    r.log('include', doc.printing ? APLOG_ERR : APLOG_WARNING, args.length > 0
      ? `AH01352: too many arguments for if element in ${r.filename}`
      : `AH01353: missing expr argument for if element in ${r.filename}`);
  }
  if (!doc.printing) { doc.ifNesting++; return; }
  if (args.length !== 1) { condFailed(doc); return; }
  const a = args[0]!;
  if (a.name !== 'expr') {
    r.log('include', APLOG_ERR, `AH01354: unknown parameter "${a.name ?? ''}" to tag if in ${r.filename}`);
    condFailed(doc);
    return;
  }
  if (a.value === null) {
    r.log('include', APLOG_ERR, `AH01355: missing expr value for if element in ${r.filename}`);
    condFailed(doc);
    return;
  }
  const v = await condition(doc, a.value);
  if (v === undefined) { condFailed(doc); return; }
  doc.printing = doc.condTrue = v;
  doc.condError = false;
  doc.ifNesting = 0;
}

async function handleElif(doc: Doc, args: readonly SsiArg[]): Promise<void> {
  const r = doc.r;
  if (args.length !== 1) {
    r.log('include', doc.ifNesting === 0 ? APLOG_ERR : APLOG_WARNING, args.length > 0
      ? `AH01356: too many arguments for if element in ${r.filename}`
      : `AH01357: missing expr argument for if element in ${r.filename}`);
  }
  if (doc.ifNesting > 0) return;
  if (args.length !== 1) { condFailed(doc); return; }
  const a = args[0]!;
  if (a.name !== 'expr') {
    r.log('include', APLOG_ERR, `AH01358: unknown parameter "${a.name ?? ''}" to tag if in ${r.filename}`);
    condFailed(doc);
    return;
  }
  if (a.value === null) {
    r.log('include', APLOG_ERR, `AH01359: missing expr in elif statement: ${r.filename}`);
    condFailed(doc);
    return;
  }
  if (doc.condTrue) { doc.printing = false; return; }
  const v = await condition(doc, a.value);
  if (v === undefined) { condFailed(doc); return; }
  doc.printing = doc.condTrue = v;
}

function handleElse(doc: Doc, args: readonly SsiArg[]): void {
  const r = doc.r;
  if (args.length > 0) r.log('include', doc.ifNesting === 0 ? APLOG_ERR : APLOG_WARNING, `AH01360: else directive does not take tags in ${r.filename}`);
  if (doc.ifNesting > 0) return;
  if (args.length > 0) { if (doc.printing) doc.emitError(); return; }
  // After a condition that failed, else leaves printing as the chain left it (2.4.71).
  if (doc.condError) return;
  if (doc.condTrue) doc.printing = false;
  else doc.printing = doc.condTrue = true;
}

function handleEndif(doc: Doc, args: readonly SsiArg[]): void {
  const r = doc.r;
  if (args.length > 0) r.log('include', doc.ifNesting === 0 ? APLOG_ERR : APLOG_WARNING, `AH01361: endif directive does not take tags in ${r.filename}`);
  if (doc.ifNesting > 0) { doc.ifNesting--; return; }
  if (args.length > 0) { doc.emitError(); return; }
  doc.printing = doc.condTrue = true;
  doc.condError = false;
}

type Builtin = (doc: Doc, args: readonly SsiArg[]) => MaybePromise<void>;
const BUILTINS: ReadonlyMap<string, Builtin> = new Map<string, Builtin>([
  ['if', handleIf], ['elif', handleElif], ['else', handleElse], ['endif', handleEndif],
  ['set', handleSet], ['echo', handleEcho], ['fsize', handleFsize], ['flastmod', handleFlastmod],
  ['config', handleConfig], ['comment', handleComment], ['include', handleInclude], ['printenv', handlePrintenv],
]);

// ---- the filter --------------------------------------------------------------------------------

/** Element handlers other modules provide, per configuration (ap_register_include_handler). */
const handlersOf = new WeakMap<ConfigContext, ReadonlyMap<string, SsiElementHandler>>();

function handlersFor(ctx: ConfigContext): ReadonlyMap<string, SsiElementHandler> {
  let h = handlersOf.get(ctx);
  if (h === undefined) {
    const m = new Map<string, SsiElementHandler>();
    for (const name of ctx.providerNames('ssi_element')) {
      const fn = ctx.provider('ssi_element', name);
      if (fn !== undefined) m.set(name.toLowerCase(), fn);
    }
    handlersOf.set(ctx, (h = m));
  }
  return h;
}

/** The filter's first brigade: the variables (the document's own, or its includer's), and the
 *  headers a parsed document cannot keep. */
async function setUp(doc: Doc): Promise<void> {
  const r = doc.r;
  const conf = self.dir(r);
  const parent = includedBy.get(r);
  if (parent !== undefined && r.main !== null) {
    // A nested include keeps the including document's variables (and its LAST_MODIFIED).
    r.subprocessEnv = r.main.subprocessEnv;
    doc.mtime = r.main.finfo !== null ? r.main.finfo.mtimeMs : doc.mtime;
  } else {
    addCommonVars(r);
    await addCgiVars(r);
    addIncludeVars(r);
  }
  r.headersOut.unset('Content-Length');
  const gexec = r.finfo !== null && (r.finfo.mode & 0o010) !== 0;
  if (conf.lastModified === true) {
    if (r.finfo !== null && !r.headersOut.has('Last-Modified')) {
      updateMtime(r, r.finfo.mtimeMs);
      r.headersOut.set('Last-Modified', toHttpDate(rationalizeMtime(r, r.mtime)));
    }
  } else if (conf.xbithack === 'full' && gexec) {
    updateMtime(r, r.finfo!.mtimeMs);
    r.headersOut.set('Last-Modified', toHttpDate(rationalizeMtime(r, r.mtime)));
  } else {
    r.headersOut.unset('Last-Modified');
  }
  if (r.args !== undefined) {
    r.subprocessEnv.set('QUERY_STRING', r.args);
    r.subprocessEnv.set('QUERY_STRING_UNESCAPED', escapeShellCmd(unescapeUrl(r.args)));
  }
}

/** add_include_vars: the document's own variables. */
function addIncludeVars(r: Request): void {
  const e = r.subprocessEnv;
  const lazy = new Set<string>();
  for (const n of LAZY_NAMES) { e.set(n, ''); lazy.add(n); }
  lazyOf.set(e, lazy);
  e.set('DOCUMENT_URI', r.uri);
  e.set('DOCUMENT_ARGS', r.args ?? '');
  if (r.pathInfo !== '') e.set('DOCUMENT_PATH_INFO', r.pathInfo);
  // USER_NAME after DOCUMENT_PATH_INFO, as httpd's table has them.
  e.delete('USER_NAME');
  e.set('USER_NAME', '');
  const slash = r.filename.lastIndexOf('/');
  e.set('DOCUMENT_NAME', r.filename !== '' && slash >= 0 ? r.filename.slice(slash + 1) : r.uri);
  if (r.args !== undefined) e.set('QUERY_STRING_UNESCAPED', escapeShellCmd(unescapeUrl(r.args)));
}

async function runElement(doc: Doc, ev: Extract<SsiEvent, { k: 'element' }>): Promise<void> {
  const r = doc.r;
  for (const m of ev.errors) r.log('include', APLOG_ERR, m);
  if (ev.error) {
    if (doc.printing) doc.emitError();
    return;
  }
  const builtin = BUILTINS.get(ev.name);
  if (builtin !== undefined) { await builtin(doc, ev.args); return; }
  const other = doc.handlers.get(ev.name);
  if (other !== undefined) { await other(doc, ev.args); return; }
  r.log('include', APLOG_ERR, `AH01371: unknown directive "${ev.name}" in parsed doc ${r.filename}`);
  if (doc.printing) doc.emitError();
}

/** httpd's AP_MIN_BYTES_TO_WRITE: output read from more than this much input goes on; and
 *  the size of its file reads (APR_BUCKET_BUFF_SIZE). */
const MIN_BYTES_TO_WRITE = 8000;

/** Runs the events of one piece of the document. Output goes on as httpd's filter passes it
 *  (which decides between Content-Length and chunked): before each element, what the page
 *  printed so far; after more than 8000 bytes of input. */
async function runEvents(doc: Doc, events: readonly SsiEvent[], inputBytes: number): Promise<void> {
  if (doc.bytesRead > MIN_BYTES_TO_WRITE && doc.pending.length > 0) await doc.flush();
  if (doc.bytesRead > MIN_BYTES_TO_WRITE) doc.bytesRead = 0;
  doc.bytesRead += inputBytes;
  for (const ev of events) {
    if (ev.k === 'text') {
      if (doc.printing) doc.emit(ev.data);
    } else {
      if (doc.pending.length > 0) await doc.flush();
      await runElement(doc, ev);
    }
  }
}

async function includesFilter(f: FilterInstance<Doc | null>, bb: Brigade): Promise<void> {
  const r = f.r;
  let doc = f.state;
  if (doc === null) {
    if ((coreDir(r).opts & OPT_INCLUDES) === 0) {
      r.log('include', APLOG_WARNING, `AH01374: mod_include: Options +Includes (or IncludesNoExec) wasn't set, INCLUDES filter removed: ${r.uri}`);
      f.remove();
      return f.pass(bb);
    }
    doc = f.state = new Doc(r, f as FilterInstance, handlersFor(r.rt.ctx));
    docOf.set(r, doc);
  }
  if (doc.ended) return f.pass(bb);
  if (!doc.started) {
    doc.started = true;
    await setUp(doc);
  }
  doc.bytesRead = 0;
  for (const b of bb) {
    if (b.kind === 'data' || b.kind === 'file') {
      await bucketPieces(b, (data) => runEvents(doc!, doc!.scanner.feed(data), data.length), MIN_BYTES_TO_WRITE);
    } else if (b.kind === 'flush') {
      await doc.flush();
      await f.pass([b]);
    } else {
      // End of the document.
      doc.ended = true;
      const end = doc.scanner.finish();
      if (end.events.length > 0 && doc.printing) for (const ev of end.events) if (ev.k === 'text') doc.emit(ev.data);
      if (end.unfinished) {
        r.log('include', APLOG_ERR, `AH01372: SSI directive was not properly finished at the end of parsed document ${r.filename}`);
        if (doc.printing) doc.emitError();
      }
      if (!doc.printing) r.log('include', APLOG_WARNING, `AH01373: missing closing endif directive in parsed document ${r.filename}`);
      const out: Brigade = doc.pending.map((data): Bucket => ({ kind: 'data', data }));
      doc.pending = [];
      doc.pendingBytes = 0;
      out.push(EOS);
      await f.pass(out);
      return;
    }
  }
  await doc.flush();
}

const INCLUDES: FilterSpec<Doc | null> = {
  name: 'INCLUDES',
  type: FTYPE_RESOURCE,
  init(r) {
    // includes_setup: no 304 from a local copy unless XBitHack full with the group-execute
    // bit; no ETag unless SSIETag on.
    const conf = self.dir(r);
    const gexec = r.finfo !== null && (r.finfo.mode & 0o010) !== 0;
    if (conf.xbithack !== 'full' || !gexec) r.noLocalCopy = true;
    if (conf.etag !== true) r.notes.set('no-etag', '');
    return null;
  },
  filter: includesFilter,
};

/** include_fixup: the server-parsed handler becomes the default handler with INCLUDES; under
 *  XBitHack On/Full an executable text/html file gets INCLUDES too. */
function includeFixup(r: Request): number {
  if (r.handler === 'server-parsed') {
    if (r.contentType === undefined || r.contentType === '') r.contentType = 'text/html';
    r.handler = 'default-handler';
  } else {
    const x = self.dir(r).xbithack;
    if (x === undefined || x === 'off') return DECLINED;
    if (r.finfo === null || (r.finfo.mode & 0o100) === 0) return DECLINED;
    if (r.contentType === undefined || !r.contentType.startsWith('text/html')) return DECLINED;
  }
  r.rt.addFilter(r, INCLUDES);
  return DECLINED;
}

// ---- directives ----------------------------------------------------------------------------------

type Cmd = CmdParms<IncludeServer, MutableDir>;

function setTag(which: 'startTag' | 'endTag', name: string) {
  return (cmd: Cmd, tag: string): string | undefined => {
    if (/\s/.test(tag)) return `${name} may not contain any whitespaces`;
    cmd.srv[which] = tag;
    return undefined;
  };
}

const self = defineModule<IncludeServer, IncludeDir>({
  name: 'include_module',
  source: 'mod_include.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ startTag: '<!--#', endTag: '-->' }),
  createDirConfig: createDir,
  mergeDirConfig: mergeDir,
  directives: [
    directive<IncludeServer, MutableDir, 'TAKE1'>({
      name: 'XBitHack', args: 'TAKE1', where: OR_OPTIONS, help: 'Off, On, or Full',
      handler: (cmd: Cmd, arg: string) => {
        const v = arg.toLowerCase();
        if (v !== 'off' && v !== 'on' && v !== 'full') return 'XBitHack must be set to Off, On, or Full';
        cmd.dir.xbithack = v;
        return undefined;
      },
    }),
    directive<IncludeServer, MutableDir, 'TAKE1'>({
      name: 'SSIErrorMsg', args: 'TAKE1', where: OR_ALL, help: 'a string',
      handler: (cmd: Cmd, arg: string) => { cmd.dir.errorMsg = arg; },
    }),
    directive<IncludeServer, MutableDir, 'TAKE1'>({
      name: 'SSITimeFormat', args: 'TAKE1', where: OR_ALL, help: 'a strftime(3) formatted string',
      handler: (cmd: Cmd, arg: string) => { cmd.dir.timeFmt = arg; },
    }),
    directive<IncludeServer, MutableDir, 'TAKE1'>({
      name: 'SSIStartTag', args: 'TAKE1', where: RSRC_CONF, help: 'SSI Start String Tag',
      handler: setTag('startTag', 'SSIStartTag'),
    }),
    directive<IncludeServer, MutableDir, 'TAKE1'>({
      name: 'SSIEndTag', args: 'TAKE1', where: RSRC_CONF, help: 'SSI End String Tag',
      handler: setTag('endTag', 'SSIEndTag'),
    }),
    directive<IncludeServer, MutableDir, 'TAKE1'>({
      name: 'SSIUndefinedEcho', args: 'TAKE1', where: OR_ALL, help: 'String to be displayed if an echoed variable is undefined',
      handler: (cmd: Cmd, arg: string) => { cmd.dir.undefinedEcho = arg; },
    }),
    directive<IncludeServer, MutableDir, 'FLAG'>({
      name: 'SSILegacyExprParser', args: 'FLAG', where: OR_LIMIT,
      help: "Whether to use the legacy expression parser compatible with <= 2.2.x. Limited to 'on' or 'off'",
      handler: (cmd: Cmd, on: boolean) => { cmd.dir.legacyExpr = on; },
    }),
    directive<IncludeServer, MutableDir, 'FLAG'>({
      name: 'SSILastModified', args: 'FLAG', where: OR_LIMIT,
      help: "Whether to set the last modified header or respect an existing header. Limited to 'on' or 'off'",
      handler: (cmd: Cmd, on: boolean) => { cmd.dir.lastModified = on; },
    }),
    directive<IncludeServer, MutableDir, 'FLAG'>({
      name: 'SSIEtag', args: 'FLAG', where: OR_LIMIT,
      help: "Whether to allow the generation of ETags within the server. Existing ETags will be preserved. Limited to 'on' or 'off'",
      handler: (cmd: Cmd, on: boolean) => { cmd.dir.etag = on; },
    }),
  ],
  hooks: { fixups: { fn: includeFixup, order: HOOK_LAST } },
  filters: [INCLUDES as FilterSpec],
});

export default self;
