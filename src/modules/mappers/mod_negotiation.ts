// mod_negotiation (modules/mappers/mod_negotiation.c): content negotiation. MultiViews (a
// type checker that, for a file that does not exist, looks at the files named like it with
// more extensions), type maps (the type-map handler, with Body: variants), Apache's variant
// choice from Accept, Accept-Language, Accept-Charset and Accept-Encoding with LanguagePriority
// and ForceLanguagePriority, the Vary / Alternates / TCN / Content-Location headers, the 406
// page listing the variants, and CacheNegotiatedDocs for HTTP/1.0 clients.

import * as fs from 'node:fs';
import {
  defineModule, directive, DECLINED, OK, HOOK_FIRST, MODULE_API_VERSION, OR_FILEINFO, RSRC_CONF,
  type HookResult,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { coreDir } from '../../server/core/core-module.js';
import { OPT_MULTI } from '../../server/core/config.js';
import { fastRedirect } from '../../server/request/fast-redirect.js';
import { makeEtag, etagBitsFor, mtimeMicros } from '../../server/http/etag.js';
import { meetsConditions } from '../../server/http/conditional.js';
import { escapeHtml } from '../../server/http/response.js';
import { httpDate } from '../../server/log/time.js';
import { escapeUri, findPathInfo } from '../../server/util-script.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { EOS, dataBucket } from '../../server/filters.js';

const CGI_MAGIC_TYPE = 'application/x-httpd-cgi';
const INCLUDES_MAGIC_TYPE = 'text/x-server-parsed-html';
const INCLUDES_MAGIC_TYPE3 = 'text/x-server-parsed-html3';
const MAP_FILE_MAGIC_TYPE = 'application/x-type-map';
const MIME_EXCEPTIONS_NOTE = 'ap-mime-exceptions-list';
const MAX_STRING_LEN = 8192;

const FLP_NONE = 1;
const FLP_PREFER = 2;
const FLP_FALLBACK = 4;

interface NegDirConfig {
  /** ForceLanguagePriority bits; undefined = Prefer. */
  readonly forceLangPriority: number | undefined;
  readonly languagePriority: readonly string[] | undefined;
}

interface NegServerConfig {
  cacheNegotiatedDocs: boolean;
}

type Cmd = CmdParms<NegServerConfig, NegDirConfig>;

// ---- configuration ------------------------------------------------------------------------------

function setLanguagePriority(cmd: Cmd, lang: string): string | undefined {
  const d = cmd.dir as { languagePriority: string[] | undefined };
  (d.languagePriority ??= []).push(lang);
  return undefined;
}

function setForcePriority(cmd: Cmd, w: string): string | undefined {
  const d = cmd.dir as { forceLangPriority: number | undefined };
  const cur = d.forceLangPriority ?? 0;
  const lw = w.toLowerCase();
  if (lw === 'none') {
    if (cur & ~FLP_NONE) return 'Cannot combine ForceLanguagePriority options with None';
    d.forceLangPriority = FLP_NONE;
  } else if (lw === 'prefer') {
    if (cur & FLP_NONE) return 'Cannot combine ForceLanguagePriority options None and Prefer';
    d.forceLangPriority = cur | FLP_PREFER;
  } else if (lw === 'fallback') {
    if (cur & FLP_NONE) return 'Cannot combine ForceLanguagePriority options None and Fallback';
    d.forceLangPriority = cur | FLP_FALLBACK;
  } else {
    return `Invalid ForceLanguagePriority option ${w}`;
  }
  return undefined;
}

// ---- parsing Accept-style lines ------------------------------------------------------------------

interface AcceptRec {
  name: string;
  quality: number;
  level: number;
  charset: string;
}

const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';

/** ap_get_token: a token up to ';' or ',' (or white space unless acceptWhite), quoted strings
 *  kept whole; returns the token and the rest after the white space that follows. */
function getToken(line: string, acceptWhite: boolean): [string, string] {
  let i = 0;
  while (isSpace(line[i])) i++;
  const start = i;
  while (i < line.length && (acceptWhite || !isSpace(line[i])) && line[i] !== ';' && line[i] !== ',') {
    if (line[i++] === '"') while (i < line.length) if (line[i++] === '"') break;
  }
  const tok = line.slice(start, i);
  while (isSpace(line[i])) i++;
  return [tok, line.slice(i)];
}

/** atoq: a quality value read as httpd reads it (at most three decimals; anything odd is 1). */
export function atoq(s: string): number {
  let i = 0;
  if (s === '') return 1;
  while (isSpace(s[i])) i++;
  if (s[i] !== '.' && s[i++] !== '0') return 1;
  if (s[i] === '.') {
    let v = 0;
    const d = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
    if (d(s[++i])) {
      v += (s.charCodeAt(i) - 48) * 100;
      if (d(s[++i])) {
        v += (s.charCodeAt(i) - 48) * 10;
        if (s[++i] !== undefined && s[i]! > '0' && s[i]! <= '9') v += s.charCodeAt(i) - 48;
      }
    }
    return v / 1000;
  }
  return 0;
}

/** get_entry: one media type (or language, encoding, charset) with its parameters. */
function getEntry(line: string): [AcceptRec, string] {
  const res: AcceptRec = { name: '', quality: 1, level: 0, charset: '' };
  let [name, rest] = getToken(line, false);
  res.name = name.toLowerCase();
  if (res.name === 'text/html' && res.level === 0) res.level = 2;
  else if (res.name === INCLUDES_MAGIC_TYPE) res.level = 2;
  else if (res.name === INCLUDES_MAGIC_TYPE3) res.level = 3;
  while (rest[0] === ';') {
    let parm: string;
    [parm, rest] = getToken(rest.slice(1), true);
    let i = 0;
    while (i < parm.length && !isSpace(parm[i]) && parm[i] !== '=') i++;
    if (i >= parm.length) continue;
    const key = parm.slice(0, i).toLowerCase();
    i++;
    while (isSpace(parm[i]) || parm[i] === '=') i++;
    let end: number;
    if (parm[i] === '"') {
      i++;
      for (end = i; end < parm.length && parm[end] !== '\n' && parm[end] !== '\r' && parm[end] !== '"'; end++);
    } else {
      for (end = i; end < parm.length && !isSpace(parm[end]); end++);
    }
    const val = parm.slice(i, end).toLowerCase();
    if (key === 'q' || key === 'qs') res.quality = atoq(val);
    else if (key === 'level') res.level = atoiLoose(val);
    else if (key === 'charset') res.charset = val;
  }
  if (rest[0] === ',') rest = rest.slice(1);
  return [res, rest];
}

function atoiLoose(s: string): number {
  const m = /^\s*([+-]?\d+)/.exec(s);
  return m ? parseInt(m[1]!, 10) : 0;
}

/** do_header_line: the entries of an Accept-style header; undefined when it is absent. */
export function headerLine(line: string | undefined): AcceptRec[] | undefined {
  if (line === undefined) return undefined;
  const out: AcceptRec[] = [];
  let rest = line;
  while (rest !== '') {
    const [rec, r2] = getEntry(rest);
    out.push(rec);
    if (r2 === rest) break;
    rest = r2;
  }
  return out;
}

function languagesLine(line: string): string[] {
  const out: string[] = [];
  let rest = line;
  while (rest !== '') {
    const [tok, r2] = getToken(rest, false);
    out.push(tok.toLowerCase());
    rest = r2[0] === ',' || r2[0] === ';' ? r2.slice(1) : r2;
    if (r2 === rest && tok === '') break;
  }
  return out;
}

// ---- variants --------------------------------------------------------------------------------------

interface Variant {
  subReq: Request | null;
  mimeType: string;
  fileName: string;
  /** Offset of a Body: variant in the map file, 0 for none. */
  body: number;
  contentEncoding: string | undefined;
  contentLanguages: string[] | undefined;
  contentCharset: string;
  description: string;
  langQuality: number;
  encodingQuality: number;
  charsetQuality: number;
  mimeTypeQuality: number;
  sourceQuality: number;
  level: number;
  bytes: number;
  langIndex: number;
  isPseudoHtml: boolean;
  levelMatched: number;
  mimeStars: number;
  definite: boolean;
}

function cleanVariant(): Variant {
  return {
    subReq: null, mimeType: '', fileName: '', body: 0, contentEncoding: undefined, contentLanguages: undefined,
    contentCharset: '', description: '', isPseudoHtml: false, level: 0, levelMatched: 0, bytes: -1, langIndex: -1,
    mimeStars: 0, definite: true, charsetQuality: 1, encodingQuality: 1, langQuality: 1, mimeTypeQuality: 1, sourceQuality: 0,
  };
}

function setMimeFields(v: Variant, a: AcceptRec): void {
  v.mimeType = a.name;
  v.sourceQuality = a.quality;
  v.level = a.level;
  v.contentCharset = a.charset;
  v.isPseudoHtml = a.name === 'text/html' || a.name === INCLUDES_MAGIC_TYPE || a.name === INCLUDES_MAGIC_TYPE3;
}

interface NegState {
  r: Request;
  conf: NegDirConfig;
  dirName: string;
  acceptQ: boolean;
  defaultLangQuality: number;
  accepts: AcceptRec[] | undefined;
  acceptEncodings: AcceptRec[] | undefined;
  acceptCharsets: AcceptRec[] | undefined;
  acceptLangs: AcceptRec[] | undefined;
  vars: Variant[];
  countMultiviewsVariants: number;
  isTransparent: boolean;
  dontFiddleHeaders: boolean;
  uaSupportsTrans: boolean;
  sendAlternates: boolean;
  mayChoose: boolean;
  useRvsa: boolean;
}

function parseAcceptHeaders(r: Request): NegState {
  const h = r.headersIn;
  const accepts = headerLine(h.get('Accept'));
  return {
    r, conf: self.dir(r),
    dirName: r.filename.slice(0, r.filename.lastIndexOf('/') + 1),
    acceptQ: accepts !== undefined && accepts.some((a) => a.quality < 1),
    defaultLangQuality: 1,
    accepts,
    acceptEncodings: headerLine(h.get('Accept-Encoding')),
    acceptLangs: headerLine(h.get('Accept-Language')),
    acceptCharsets: headerLine(h.get('Accept-Charset')),
    vars: [], countMultiviewsVariants: 0,
    isTransparent: false, dontFiddleHeaders: false, uaSupportsTrans: false, sendAlternates: false, mayChoose: true, useRvsa: false,
  };
}

/** parse_negotiate_header: the transparent content negotiation (RFC 2295) the client asks for. */
function parseNegotiateHeader(r: Request, neg: NegState): void {
  const negotiate = r.headersIn.get('Negotiate');
  neg.uaSupportsTrans = false;
  neg.sendAlternates = false;
  neg.mayChoose = true;
  neg.useRvsa = false;
  neg.dontFiddleHeaders = false;
  if (negotiate === undefined) return;
  if (negotiate === 'trans' && (r.headersIn.get('User-Agent') ?? '').startsWith('Lynx')) return;
  neg.mayChoose = false;
  for (const raw of negotiate.split(',')) {
    const tok = raw.trim().toLowerCase();
    if (tok === '') continue;
    if (tok === 'trans' || tok === 'vlist' || tok === 'guess-small' || /^[0-9]/.test(tok) || tok === '*') {
      neg.uaSupportsTrans = true;
      neg.sendAlternates = true;
      if (tok === '1.0') {
        neg.mayChoose = true;
        neg.useRvsa = true;
        neg.dontFiddleHeaders = true;
      } else if (tok[0] === '*') {
        neg.mayChoose = true;
        neg.dontFiddleHeaders = true;
      }
    }
  }
}

function maybeAddDefaultAccepts(neg: NegState, preferScripts: boolean): void {
  if (!neg.accepts) neg.accepts = [{ name: '*/*', quality: 1, level: 0, charset: '' }];
  neg.accepts.push({ name: CGI_MAGIC_TYPE, quality: neg.useRvsa ? 0 : preferScripts ? 2 : 0.001, level: 0, charset: '' });
}


// ---- type maps ------------------------------------------------------------------------------------

type HeaderState = 'eof' | 'seen' | 'sep';

/** A type map read line by line as get_header_line does (continuation lines joined, # comments
 *  skipped). */
export class MapReader {
  pos = 0;
  constructor(readonly text: string) {}
  private gets(): string | null {
    if (this.pos >= this.text.length) return null;
    const nl = this.text.indexOf('\n', this.pos);
    const end = nl < 0 ? this.text.length : Math.min(nl + 1, this.pos + MAX_STRING_LEN - 1);
    const line = this.text.slice(this.pos, end);
    this.pos = end;
    return line;
  }
  header(): { state: HeaderState; line: string } {
    let buf: string | null;
    do {
      buf = this.gets();
      if (buf === null) return { state: 'eof', line: '' };
    } while (buf[0] === '#');
    if (/^[ \t\n\v\f\r]*$/.test(buf)) return { state: 'sep', line: buf };
    if (buf.slice(0, 5).toLowerCase() === 'body:') return { state: 'seen', line: buf };
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) return { state: 'seen', line: buf };
      if (c === '#') {
        const nl = this.text.indexOf('\n', this.pos);
        this.pos = nl < 0 ? this.text.length : nl + 1;
      } else if (isSpace(c)) {
        let p = this.pos;
        while (p < this.text.length && this.text[p] !== '\n' && isSpace(this.text[p])) p++;
        if (this.text[p] === '\n' || p >= this.text.length) { this.pos = p; return { state: 'seen', line: buf }; }
        this.pos = p;
        const nl = this.text.indexOf('\n', this.pos);
        const end = nl < 0 ? this.text.length : nl;
        buf = buf.replace(/\n$/, '') + this.text.slice(this.pos, end) + '\n';
        this.pos = nl < 0 ? end : end + 1;
      } else {
        return { state: 'seen', line: buf };
      }
    }
  }
}

function stripParenComments(s: string): string {
  let out = '';
  let i = 0;
  while (i < s.length) {
    if (s[i] === '"') {
      const q = s.indexOf('"', i + 1);
      if (q < 0) return out + s.slice(i);
      out += s.slice(i, q + 1);
      i = q + 1;
    } else if (s[i] === '(') {
      while (i < s.length && s[i] !== ')') { out += ' '; i++; }
      if (i < s.length) { out += ' '; i++; }
    } else {
      out += s[i++];
    }
  }
  return out;
}

/** read_type_map: the variants a type map lists. */
function readTypeMap(neg: NegState, rr: Request): number | { text: Buffer } {
  const r = neg.r;
  neg.countMultiviewsVariants = 0;
  let raw: Buffer;
  try {
    raw = fs.readFileSync(rr.filename);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    r.log('negotiation', APLOG_ERR, `AH00683: cannot access type map file: ${rr.filename}`, r.rt.errno(e));
    return code === 'ENOTDIR' || code === 'ENOENT' ? 404 : 403;
  }
  const text = raw.toString('latin1');
  const rd = new MapReader(text);
  let v = cleanVariant();
  let hasContent = false;
  for (;;) {
    const { state, line } = rd.header();
    if (state === 'seen') {
      const colon = line.indexOf(':');
      if (colon < 0) {
        r.log('negotiation', APLOG_ERR, `AH00681: Syntax error in type map, no ':' in ${r.filename} for header ${line.toLowerCase()}`);
        return 500;
      }
      const name = line.slice(0, colon).toLowerCase();
      let body = line.slice(colon + 1).replace(/^[ \t\n\v\f\r]+/, '');
      if (body === '') {
        r.log('negotiation', APLOG_ERR, `AH00682: Syntax error in type map --- no header body: ${r.filename} for ${name + line.slice(colon)}`);
        return 500;
      }
      body = stripParenComments(body);
      if (name === 'uri') {
        v.fileName = getToken(body, false)[0];
      } else if (name === 'content-type') {
        setMimeFields(v, getEntry(body)[0]);
        hasContent = true;
      } else if (name === 'content-length') {
        const tok = getToken(body, false)[0];
        if (!/^\d+$/.test(tok)) {
          r.log('negotiation', APLOG_ERR, `AH00684: Parse error in type map, Content-Length: '${tok}' in ${r.filename} is invalid.`);
          break;
        }
        v.bytes = Number(tok);
        hasContent = true;
      } else if (name === 'content-language') {
        v.contentLanguages = languagesLine(body);
        hasContent = true;
      } else if (name === 'content-encoding') {
        v.contentEncoding = getToken(body, false)[0];
        hasContent = true;
      } else if (name === 'description') {
        let desc = body.replace(/\n/g, ' ');
        if (desc.length) desc = desc.slice(0, -1);
        v.description = desc;
      } else if (name === 'body') {
        const tag = body.replace(/[ \t\n\v\f\r]+$/, '');
        const start = rd.pos;
        const window = text.slice(start, start + MAX_STRING_LEN - 1);
        const at = window.indexOf(tag);
        if (tag === '' || at < 0) {
          r.log('negotiation', APLOG_ERR, `AH00685: Syntax error in type map, no end tag '${tag}' found in ${r.filename} for Body: content.`);
          break;
        }
        let after = start + at + tag.length;
        while (after < text.length) { if (text[after++] === '\n') break; }
        v.body = start;
        v.bytes = at;
        rd.pos = after;
        v.fileName = rr.filename.slice(rr.filename.lastIndexOf('/') + 1);
      }
    } else {
      if (v.fileName !== '' && hasContent) neg.vars.push(v);
      v = cleanVariant();
      hasContent = false;
      if (state === 'eof') break;
    }
  }
  return { text: raw };
}

// ---- MultiViews ------------------------------------------------------------------------------------

/** read_types_multi: the files in the directory named like the request plus extensions. */
async function readTypesMulti(neg: NegState): Promise<number | { typeMap: Request }> {
  const r = neg.r;
  const slash = r.filename.lastIndexOf('/');
  if (r.filename === '' || !r.filename.startsWith('/') || slash < 0) return DECLINED;
  const filp = r.filename.slice(slash + 1);
  let names: fs.Dirent[];
  try {
    names = await fs.promises.readdir(neg.dirName, { withFileTypes: true });
  } catch (e) {
    r.log('negotiation', APLOG_ERR, `AH00686: cannot read directory for multi: ${neg.dirName}`, r.rt.errno(e));
    return 403;
  }
  let anymatch = false;
  const multi: Variant[] = [];
  for (const d of names) {
    const name = d.name;
    if (!name.startsWith(filp) || name[filp.length] !== '.') continue;
    if (d.isDirectory()) continue;
    anymatch = true;
    const sub = await r.rt.lookupFile(r, neg.dirName + name);
    if (sub.finfo === null || !sub.finfo.isFile()) continue;
    if (sub.handler !== undefined && sub.contentType === undefined) sub.contentType = CGI_MAGIC_TYPE;
    // Every extension of the requested name must be one mod_mime did not know for this file:
    // "index.html" does not match index.foo.html.
    const exc = sub.notes.get(MIME_EXCEPTIONS_NOTE);
    if (exc === undefined) continue;
    const excepts = exc.split('/');
    let n = 0;
    for (const seg of filp.split('.')) {
      if (n < excepts.length && seg === excepts[n]) n++;
    }
    if (n < excepts.length) continue;
    if (sub.status !== 200 || sub.contentType === undefined) continue;
    if (sub.contentType === MAP_FILE_MAGIC_TYPE || sub.handler === 'type-map') {
      return { typeMap: sub };
    }
    const v = cleanVariant();
    v.subReq = sub;
    v.fileName = name;
    if (sub.contentEncoding !== undefined) v.contentEncoding = sub.contentEncoding;
    if (sub.contentLanguages.length) v.contentLanguages = sub.contentLanguages.map((l) => l);
    setMimeFields(v, getEntry(sub.contentType)[0]);
    multi.push(v);
    neg.countMultiviewsVariants++;
  }
  if (anymatch && multi.length === 0) {
    r.log('negotiation', APLOG_ERR, `AH00687: Negotiation: discovered file(s) matching request: ${r.filename} (None could be negotiated).`);
    return 404;
  }
  multi.sort((a, b) => (a.sourceQuality < b.sourceQuality ? 1 : a.sourceQuality > b.sourceQuality ? -1 : a.fileName < b.fileName ? -1 : a.fileName > b.fileName ? 1 : 0));
  neg.vars.push(...multi);
  return OK;
}

// ---- the choice ------------------------------------------------------------------------------------

function mimeMatch(a: AcceptRec, v: Variant): boolean {
  const at = a.name;
  const vt = v.mimeType;
  if (at === '*' || at === '*/*') {
    if (v.mimeStars < 1) v.mimeStars = 1;
    return true;
  }
  if (at.length > 2 && at.endsWith('/*') && vt.startsWith(at.slice(0, -2)) && vt[at.length - 2] === '/') {
    if (v.mimeStars < 2) v.mimeStars = 2;
    return true;
  }
  if (at === vt || (at === 'text/html' && (vt === INCLUDES_MAGIC_TYPE || vt === INCLUDES_MAGIC_TYPE3))) {
    if (a.level >= v.level) {
      v.levelMatched = v.level;
      v.mimeStars = 3;
      return true;
    }
  }
  return false;
}

function levelCmp(a: Variant, b: Variant): number {
  if (a.isPseudoHtml && !b.isPseudoHtml) return 0;
  if (!a.isPseudoHtml && a.mimeType !== b.mimeType) return 0;
  if (a.levelMatched > b.levelMatched) return 1;
  if (a.levelMatched < b.levelMatched) return -1;
  if (a.level < b.level) return 1;
  if (a.level > b.level) return -1;
  return 0;
}

function findLangIndex(list: readonly string[] | undefined, lang: string): number {
  if (!list) return -1;
  for (let i = 0; i < list.length; i++) {
    const l = list[i]!;
    if (lang.slice(0, l.length).toLowerCase() === l.toLowerCase()) return i;
  }
  return -1;
}

function setDefaultLangQuality(neg: NegState): void {
  if (!neg.dontFiddleHeaders && neg.vars.some((v) => v.contentLanguages !== undefined && v.contentLanguages.length > 0)) {
    neg.defaultLangQuality = 0.0001;
    return;
  }
  neg.defaultLangQuality = 1;
}

function setLanguageQuality(neg: NegState, v: Variant): void {
  const force = neg.conf.forceLangPriority ?? FLP_PREFER;
  if (!v.contentLanguages || v.contentLanguages.length === 0) {
    if (!neg.dontFiddleHeaders) v.langQuality = neg.defaultLangQuality;
    return;
  }
  if (!neg.acceptLangs) {
    v.definite = false;
  } else {
    let best: AcceptRec | undefined;
    let star: AcceptRec | undefined;
    let fiddleQ = 0;
    let anyMatchOnStar = false;
    const langs: AcceptRec[] = neg.acceptLangs;
    for (const lang of v.contentLanguages) {
      let bestThisTag: AcceptRec | undefined;
      let longest = 0;
      for (let ai = 0; ai < langs.length; ai++) {
        const a: AcceptRec = langs[ai]!;
        if (a.name === '*') {
          if (!star) star = a;
          continue;
        }
        const alen = a.name.length;
        if (lang.length >= alen && lang.startsWith(a.name) && (lang.length === alen || lang[alen] === '-')) {
          if (alen > longest) { longest = alen; bestThisTag = a; }
        }
        if (!bestThisTag && !neg.dontFiddleHeaders) {
          const p = a.name.indexOf('-');
          if (p >= 0 && lang.startsWith(a.name.slice(0, p))) fiddleQ = 0.001;
        }
      }
      if (!best || (bestThisTag && bestThisTag.quality > best.quality)) best = bestThisTag;
      if (!bestThisTag && star) anyMatchOnStar = true;
    }
    if (anyMatchOnStar && ((best && star!.quality > best.quality) || !best)) {
      best = star;
      v.definite = false;
    }
    v.langQuality = best ? best.quality : fiddleQ;
  }
  if (((force & FLP_PREFER) && v.langIndex < 0) || ((force & FLP_FALLBACK) && !v.langQuality)) {
    let bestIdx = -1;
    for (const lang of v.contentLanguages) {
      const idx = findLangIndex(neg.conf.languagePriority, lang);
      if (idx >= 0 && (bestIdx === -1 || idx < bestIdx)) bestIdx = idx;
    }
    if (bestIdx >= 0) {
      if (v.langQuality) {
        if (force & FLP_PREFER) v.langIndex = bestIdx;
      } else if (force & FLP_FALLBACK) {
        v.langIndex = bestIdx;
        v.langQuality = 0.0001;
        v.definite = false;
      }
    }
  }
}

function findContentLength(neg: NegState, v: Variant): number {
  if (v.bytes < 0) {
    if (v.subReq?.finfo) v.bytes = v.subReq.finfo.size;
    else {
      try { v.bytes = fs.statSync(neg.dirName + v.fileName).size; } catch { /* unknown */ }
    }
  }
  return v.bytes;
}

function setAcceptQuality(neg: NegState, v: Variant): void {
  if (!neg.accepts) {
    if (v.mimeType !== '') v.definite = false;
    return;
  }
  let q = 0;
  let qDefinite = true;
  for (const type of neg.accepts) {
    const prev = v.mimeStars;
    if (!mimeMatch(type, v)) continue;
    if (prev === v.mimeStars) continue;
    if (!neg.dontFiddleHeaders && !neg.acceptQ && v.mimeStars === 1) q = 0.01;
    else if (!neg.dontFiddleHeaders && !neg.acceptQ && v.mimeStars === 2) q = 0.02;
    else q = type.quality;
    qDefinite = v.mimeStars === 3;
  }
  v.mimeTypeQuality = q;
  v.definite = v.definite && qDefinite;
}

function setCharsetQuality(neg: NegState, v: Variant): void {
  let charset = v.contentCharset;
  if (!neg.acceptCharsets) {
    if (charset !== '') v.definite = false;
    return;
  }
  if (charset === '') {
    if (!(v.mimeType.startsWith('text/') || v.mimeType === INCLUDES_MAGIC_TYPE || v.mimeType === INCLUDES_MAGIC_TYPE3)) return;
    if (neg.dontFiddleHeaders) return;
    charset = 'iso-8859-1';
  }
  let star: AcceptRec | undefined;
  for (const a of neg.acceptCharsets) {
    if (a.name === charset) { v.charsetQuality = a.quality; return; }
    if (a.name === '*') star = a;
  }
  if (star) {
    v.charsetQuality = star.quality;
    v.definite = false;
    return;
  }
  v.charsetQuality = charset === 'iso-8859-1' ? 1 : 0;
}

function isIdentityEncoding(enc: string | undefined): boolean {
  return enc === undefined || enc === '' || enc === '7bit' || enc === '8bit' || enc === 'binary';
}

function setEncodingQuality(neg: NegState, v: Variant): void {
  let enc = v.contentEncoding;
  if (!neg.acceptEncodings) {
    v.encodingQuality = !enc || isIdentityEncoding(enc) ? 1 : 0.5;
    return;
  }
  let notFound = 0;
  if (!enc || isIdentityEncoding(enc)) {
    enc = 'identity';
    notFound = 0.0001;
  }
  if (enc.startsWith('x-')) enc = enc.slice(2);
  let star: AcceptRec | undefined;
  for (const a of neg.acceptEncodings) {
    const name = a.name.startsWith('x-') ? a.name.slice(2) : a.name;
    if (name === enc) { v.encodingQuality = a.quality; return; }
    if (name === '*') star = a;
  }
  v.encodingQuality = star ? star.quality : notFound;
}

function isVariantBetterRvsa(v: Variant, best: Variant | undefined, bestq: { q: number }): boolean {
  if (v.encodingQuality === 0) return false;
  const q = v.mimeTypeQuality * v.sourceQuality * v.charsetQuality * v.langQuality;
  if (q <= 0) return false;
  if (q > bestq.q) { bestq.q = q; return true; }
  if (q === bestq.q && best && v.encodingQuality > best.encodingQuality) { bestq.q = q; return true; }
  return false;
}

function isVariantBetter(neg: NegState, v: Variant, best: Variant | undefined, bestq: { q: number }): boolean {
  if (v.encodingQuality === 0 || v.langQuality === 0 || v.sourceQuality === 0 || v.charsetQuality === 0 || v.mimeTypeQuality === 0) return false;
  const q = Math.fround(v.mimeTypeQuality * v.sourceQuality);
  if (q === 0 || q < bestq.q) return false;
  if (q > bestq.q || !best) { bestq.q = q; return true; }
  if (v.langQuality < best.langQuality) return false;
  if (v.langQuality > best.langQuality) { bestq.q = q; return true; }
  if (best.langIndex !== -1 && (v.langIndex === -1 || v.langIndex > best.langIndex)) return false;
  if (v.langIndex !== -1 && (best.langIndex === -1 || v.langIndex < best.langIndex)) { bestq.q = q; return true; }
  const lev = levelCmp(v, best);
  if (lev === -1) return false;
  if (lev === 1) { bestq.q = q; return true; }
  if (v.charsetQuality < best.charsetQuality) return false;
  if (v.charsetQuality > best.charsetQuality
    || (v.contentCharset !== '' && v.contentCharset !== 'iso-8859-1' && (best.contentCharset === '' || best.contentCharset === 'iso-8859-1'))) {
    bestq.q = q;
    return true;
  }
  if (v.encodingQuality < best.encodingQuality) return false;
  if (v.encodingQuality > best.encodingQuality) { bestq.q = q; return true; }
  if (findContentLength(neg, v) >= findContentLength(neg, best)) return false;
  bestq.q = q;
  return true;
}

const ALG_CHOICE = 1;
const ALG_LIST = 2;

function discardByEnv(v: Variant, discard: number): boolean {
  if (isIdentityEncoding(v.contentEncoding) || v.contentEncoding === 'identity') return false;
  return discard === 1 || (discard === 2 && !v.mimeType.startsWith('text/html'));
}

function bestMatch(neg: NegState): { alg: number; best: Variant | undefined } {
  const env = neg.r.subprocessEnv;
  let preferred = env.get('prefer-language');
  let mayDiscard = 0;
  if (env.has('no-gzip')) mayDiscard = 1;
  else if (env.get('gzip-only-text/html') === '1') mayDiscard = 2;
  setDefaultLangQuality(neg);
  for (;;) {
    let best: Variant | undefined;
    const bestq = { q: 0 };
    for (const v of neg.vars) {
      if (mayDiscard && discardByEnv(v, mayDiscard)) continue;
      if (preferred !== undefined && !(v.contentLanguages ?? []).includes(preferred)) continue;
      setAcceptQuality(neg, v);
      if (preferred !== undefined) {
        v.langQuality = 1;
        v.definite = true;
      } else {
        setLanguageQuality(neg, v);
      }
      setEncodingQuality(neg, v);
      setCharsetQuality(neg, v);
      if (neg.mayChoose) {
        if (neg.useRvsa ? isVariantBetterRvsa(v, best, bestq) : isVariantBetter(neg, v, best, bestq)) best = v;
      }
    }
    const alg = neg.useRvsa ? (best && best.definite && bestq.q > 0 ? ALG_CHOICE : ALG_LIST) : bestq.q > 0 ? ALG_CHOICE : ALG_LIST;
    if (preferred !== undefined && (!best || alg !== ALG_CHOICE)) {
      preferred = undefined;
      continue;
    }
    return { alg, best };
  }
}

/** ap_escape_path_segment: like the URI escape, with '/' escaped too. */
function escapePathSegment(s: string): string {
  return escapeUri(s).replace(/\//g, '%2f');
}

function qstr(q: number): string {
  let s = q.toFixed(3);
  if (s[4] === '0') {
    s = s.slice(0, 4);
    if (s[3] === '0') {
      s = s.slice(0, 3);
      if (s[2] === '0') s = s.slice(0, 1);
    }
  }
  return s;
}

/** set_neg_headers: Vary over the dimensions the variants differ in, Alternates, TCN. */
function setNegHeaders(r: Request, neg: NegState, alg: number): void {
  const hdrs = r.errHeadersOut;
  let sType: string | undefined;
  let sLang: string | undefined;
  let sEnc: string | undefined;
  let sCharset: string | undefined;
  let first = true;
  let byType = false, byLang = false, byCharset = false, byEnc = false;
  const alts: string[] = [];
  for (const v of neg.vars) {
    const lang = v.contentLanguages && v.contentLanguages.length ? v.contentLanguages.join(',') : undefined;
    if (first) {
      sType = v.mimeType; sCharset = v.contentCharset; sLang = lang; sEnc = v.contentEncoding;
    } else {
      if (!byType && (sType ?? '') !== v.mimeType) byType = true;
      if (!byCharset && (sCharset ?? '') !== v.contentCharset) byCharset = true;
      if (!byLang && (sLang ?? '') !== (lang ?? '')) byLang = true;
      if (!byEnc && (sEnc ?? '') !== (v.contentEncoding ?? '')) byEnc = true;
    }
    first = false;
    if (!neg.sendAlternates) continue;
    let a = `{"${escapePathSegment(v.fileName)}" ${qstr(v.sourceQuality)}`;
    if (v.mimeType !== '') a += ` {type ${v.mimeType}}`;
    if (v.contentCharset !== '') a += ` {charset ${v.contentCharset}}`;
    if (lang) a += ` {language ${lang}}`;
    if (v.contentEncoding) a += ` {encoding ${v.contentEncoding}}`;
    let len: number;
    if (!(v.subReq && v.subReq.handler !== undefined) && (len = findContentLength(neg, v)) >= 0) a += ` {length ${len}}`;
    alts.push(a + '}');
  }
  if (neg.sendAlternates && neg.vars.length) hdrs.merge('Alternates', alts.join(', '));
  if (neg.isTransparent || byType || byLang || byCharset || byEnc) {
    const parts = [neg.isTransparent ? 'negotiate' : '', byType ? 'accept' : '', byLang ? 'accept-language' : '', byCharset ? 'accept-charset' : '', byEnc ? 'accept-encoding' : ''].filter((x) => x);
    hdrs.merge('Vary', parts.join(', '));
  }
  if (neg.isTransparent) hdrs.set('TCN', alg === ALG_LIST ? 'list' : 'choice');
}

function makeVariantList(neg: NegState): string {
  let s = 'Available variants:\n<ul>\n';
  for (const v of neg.vars) {
    s += `<li><a href="${escapePathSegment(v.fileName)}">${escapeHtml(v.fileName)}</a> ${v.description}`;
    if (v.mimeType !== '') s += `, type ${v.mimeType}`;
    if (v.contentLanguages && v.contentLanguages.length) s += `, language ${v.contentLanguages.join(',')}`;
    if (v.contentCharset !== '') s += `, charset ${v.contentCharset}`;
    if (v.contentEncoding !== undefined) s += `, encoding ${v.contentEncoding}`;
    s += '</li>\n';
  }
  return s + '</ul>\n';
}

async function setupChoiceResponse(r: Request, neg: NegState, v: Variant): Promise<number> {
  let sub = v.subReq;
  if (sub === null) {
    sub = await r.rt.lookupFile(r, neg.dirName + v.fileName);
    if (sub.status !== 200 && !sub.errHeadersOut.has('TCN')) return sub.status;
    v.subReq = sub;
  }
  if (neg.isTransparent && sub.errHeadersOut.has('TCN')) return 506;
  if (sub.handler === 'type-map') return 506;
  const subVary = sub.errHeadersOut.get('Vary');
  if (subVary !== undefined) {
    r.errHeadersOut.set('Variant-Vary', subVary);
    r.errHeadersOut.set('Vary', subVary);
    sub.errHeadersOut.unset('Vary');
  }
  r.errHeadersOut.set('Content-Location', escapePathSegment(v.fileName));
  setNegHeaders(r, neg, ALG_CHOICE);
  return 0;
}

async function doNegotiation(r: Request, neg: NegState, preferScripts: boolean): Promise<{ status: number; best: Variant | undefined; noCache?: boolean }> {
  if (r.method === 'GET' || r.method === 'HEAD') {
    neg.isTransparent = true;
    if (r.pathInfo !== '') neg.isTransparent = false;
    for (const v of neg.vars) if (v.fileName.includes('/') || v.body) neg.isTransparent = false;
  }
  if (neg.isTransparent) parseNegotiateHeader(r, neg);
  else neg.mayChoose = true;
  maybeAddDefaultAccepts(neg, preferScripts);
  const { alg, best } = bestMatch(neg);
  if (alg === ALG_LIST) {
    neg.sendAlternates = true;
    setNegHeaders(r, neg, alg);
    (r.main ?? r).notes.set('variant-list', makeVariantList(neg));
    if (neg.isTransparent && neg.uaSupportsTrans) return { status: 300, best };
    if (!best) {
      r.log('negotiation', APLOG_ERR, `AH00690: no acceptable variant: ${r.filename}`);
      return { status: 406, best };
    }
  }
  if (neg.isTransparent) {
    const res = await setupChoiceResponse(r, neg, best!);
    if (res !== 0) return { status: res, best };
  } else {
    setNegHeaders(r, neg, alg);
  }
  // r->no_cache; MultiViews' fast redirect then takes the variant's (unset) value instead.
  const noCache = !self.server(r.server).cacheNegotiatedDocs && r.protoNum < 1001 && neg.countMultiviewsVariants !== 1;
  return { status: OK, best, noCache };
}

// ---- hooks --------------------------------------------------------------------------------------------

/** handle_map_file: the type-map handler. */
async function handleMapFile(r: Request): Promise<HookResult> {
  const neg = parseAcceptHeaders(r);
  const map = readTypeMap(neg, r);
  if (typeof map === 'number') return map;
  // set_vlist_validator: the map's own ETag validates the list of variants.
  r.vlistValidator = makeEtag(r, r.finfo, etagBitsFor(coreDir(r))) || undefined;
  const { status, best, noCache } = await doNegotiation(r, neg, false);
  if (status !== 0) return status;
  const b = best!;
  if (b.body) {
    if (r.method !== 'GET' && r.method !== 'HEAD' && r.method !== 'POST') return 405;
    // HTTP/1.0 caches cannot tell variants apart: unless CacheNegotiatedDocs, a response chosen
    // among several is marked as not to be cached (r->no_cache: an Expires of now).
    if (noCache && !r.headersOut.has('Expires')) r.headersOut.set('Expires', httpDate(r.requestTime));
    r.headersOut.set('Accept-Ranges', 'bytes');
    r.clength = b.bytes;
    r.headersOut.set('Content-Length', String(b.bytes));
    if (b.mimeType !== '') r.contentType = b.contentCharset !== '' ? `${b.mimeType}; charset=${b.contentCharset}` : b.mimeType;
    if (b.contentLanguages && b.contentLanguages.length) r.contentLanguages = b.contentLanguages.slice();
    if (b.contentEncoding) r.contentEncoding = b.contentEncoding;
    const cond = meetsConditions(r);
    if (cond !== OK) return cond;
    while ((await r.read()) !== null) { /* the body is not for a map's content */ }
    await r.write([dataBucket(map.text.subarray(b.body, b.body + b.bytes)), EOS]);
    return OK;
  }
  let uri = r.uri;
  if (r.pathInfo !== '') uri = uri.slice(0, findPathInfo(uri, r.pathInfo));
  const udir = escapeUri(uri.slice(0, uri.lastIndexOf('/') + 1));
  const target = r.args !== undefined ? `${udir}${b.fileName}${r.pathInfo}?${r.args}` : `${udir}${b.fileName}${r.pathInfo}`;
  await r.rt.internalRedirect(r, target);
  r.eosSent = true;
  return OK;
}

/** handle_multi: MultiViews, as a type checker that runs first. */
function handleMulti(r: Request): HookResult | Promise<HookResult> {
  if (r.finfo !== null || !(coreDir(r).opts & OPT_MULTI)) return DECLINED;
  return (async () => {
    const neg = parseAcceptHeaders(r);
    const found = await readTypesMulti(neg);
    if (typeof found === 'object') {
      neg.vars = [];
      if (found.typeMap.status !== 200) return found.typeMap.status;
      const m = readTypeMap(neg, found.typeMap);
      if (typeof m === 'number') return m;
    } else if (found !== OK) {
      return found;
    }
    if (neg.vars.length === 0) return DECLINED;
    const preferScripts = (r.method !== 'GET' && r.method !== 'HEAD') || r.args !== undefined || r.pathInfo !== '';
    const { status, best } = await doNegotiation(r, neg, preferScripts);
    if (status !== 0) return status;
    let sub = best!.subReq;
    if (sub === null) {
      sub = await r.rt.lookupFile(r, neg.dirName + best!.fileName);
      if (sub.status !== 200) return sub.status;
    }
    if (sub.args === undefined) sub.args = r.args;
    fastRedirect(sub, r);
    r.mtime = 0;
    // The variant list's validator: the request for the missing name carries its directory's
    // modification time (httpd's directory walk leaves it in r->finfo), an mtime-only tag.
    try {
      const st = await fs.promises.stat(neg.dirName);
      const m = mtimeMicros(st);
      const weak = BigInt(r.requestTime) * 1000n - m < 1000000n;
      r.vlistValidator = `${weak ? 'W/' : ''}"${m.toString(16)}"`;
    } catch {
      r.vlistValidator = undefined;
    }
    return OK;
  })();
}

/** fix_encoding: the Content-Encoding as the client spelled it (x-gzip or gzip). */
function fixEncoding(r: Request): HookResult {
  let enc = r.contentEncoding;
  if (!enc) return DECLINED;
  if (enc.startsWith('x-')) enc = enc.slice(2);
  const accepts = headerLine(r.headersIn.get('Accept-Encoding'));
  if (!accepts) return DECLINED;
  let xEnc: string | undefined;
  for (const a of accepts) {
    if (a.name === enc) { r.contentEncoding = a.name; return OK; }
    if (a.name.startsWith('x-') && a.name.slice(2) === enc) xEnc = a.name;
  }
  if (xEnc !== undefined) { r.contentEncoding = xEnc; return OK; }
  return DECLINED;
}

function isMapHandler(r: Request): boolean {
  return r.handler === 'type-map' || r.handler === MAP_FILE_MAGIC_TYPE;
}

const self = defineModule<NegServerConfig, NegDirConfig>({
  name: 'negotiation_module',
  source: 'mod_negotiation.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ cacheNegotiatedDocs: false }),
  mergeServerConfig: (base, add) => ({ cacheNegotiatedDocs: add.cacheNegotiatedDocs || base.cacheNegotiatedDocs }),
  createDirConfig: () => ({ forceLangPriority: undefined, languagePriority: undefined }),
  mergeDirConfig: (base, add) => ({
    forceLangPriority: add.forceLangPriority ?? base.forceLangPriority,
    languagePriority: add.languagePriority ?? base.languagePriority,
  }),
  directives: [
    directive<NegServerConfig, NegDirConfig, 'FLAG'>({
      name: 'CacheNegotiatedDocs', args: 'FLAG', where: RSRC_CONF, help: "Either 'on' or 'off' (default)",
      handler: (cmd, on) => { cmd.srv.cacheNegotiatedDocs = on; return undefined; },
    }),
    directive<NegServerConfig, NegDirConfig, 'ITERATE'>({
      name: 'LanguagePriority', args: 'ITERATE', where: OR_FILEINFO, help: 'space-delimited list of MIME language abbreviations', handler: setLanguagePriority,
    }),
    directive<NegServerConfig, NegDirConfig, 'ITERATE'>({
      name: 'ForceLanguagePriority', args: 'ITERATE', where: OR_FILEINFO, help: 'Force LanguagePriority elections, either None, or Fallback and/or Prefer', handler: setForcePriority,
    }),
  ],
  hooks: {
    fixups: fixEncoding,
    typeChecker: { fn: handleMulti, order: HOOK_FIRST },
    handler: (r: Request) => (isMapHandler(r) ? handleMapFile(r) : DECLINED),
  },
});

export default self;
