// mod_proxy_html (modules/filters/mod_proxy_html.c): the proxy-html output filter, which
// parses a proxied HTML or XHTML response and writes it out again with the URLs in its links
// rewritten by ProxyHTMLURLMap (and, with ProxyHTMLExtended, in event attributes, scripts,
// styles and comments). httpd parses with libxml2's HTML parser, so the document is written as
// that parser understood it: implied html/body/p elements, lower-case names, attributes
// double-quoted, entities decoded and re-escaped, the DOCTYPE replaced by ProxyHTMLDocType's.
// html-parser.ts reproduces that parser's events; this file is httpd's SAX handler over them.
// The charset comes from mod_xml2enc (its 'xml2enc' provider), which ProxyHTMLEnable inserts
// before this filter; ProxyHTMLCharsetOut converts the UTF-8 output through it.

import iconv from 'iconv-lite';
import {
  defineModule, directive, MODULE_API_VERSION, RSRC_CONF, ACCESS_CONF, HOOK_MIDDLE,
} from '../../../server/module.js';
import type { CmdParms } from '../../../server/config/cmd.js';
import type { ConfigContext } from '../../../server/config/context.js';
import type { Request } from '../../../server/request/request.js';
import {
  FTYPE_RESOURCE, bucketPieces, dataBucket, type Brigade, type Bucket, type FilterInstance, type FilterSpec,
} from '../../../server/filters.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_NOTICE, APLOG_TRACE1, APLOG_TRACE2, APLOG_WARNING } from '../../../server/log/levels.js';
import { compileApacheRegex } from '../../../server/util-pcre.js';
import { ArgCursor } from '../../../server/config/lexer.js';
import { evalBool, isFailure, parseExprCmd } from '../../../expr/index.js';
import { ENCIO_INPUT_CHECKS, ENCIO_OUTPUT, codecFor, libxml2Encoding, type Xml2EncApi, type XmlCharEncoding } from '../xml2enc-api.js';
import { HtmlPushParser, tagLookup, type Attr, type HtmlSax } from './html-parser.js';
import {
  M_INTERPOLATE_FROM, M_INTERPOLATE_TO, M_REGEX, interpolateVars, mapEvent, mapFlags, mapLink, mapText,
  type ActiveMap, type UrlMap,
} from './urlmap.js';
import { TextStream, Utf8ThenLatin1 } from './decode.js';

const NORM_LC = 0x1;
const NORM_MSSLASH = 0x2;
const NORM_RESET = 0x4;

const FPI_HTML = '<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01//EN">\n';
const FPI_HTML_LEGACY = '<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">\n';
const FPI_XHTML = '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n';
const FPI_XHTML_LEGACY = '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n';
const FPI_HTML5 = '<!DOCTYPE html>\n';

/** A ProxyHTMLDocType: what is written first, and whether elements are checked against HTML 4
 *  (strict: unknown and deprecated elements dropped; legacy: unknown ones dropped). */
interface DocType {
  readonly text: string;
  readonly enforce: 0 | 1 | 2;
}

export interface ProxyHtmlDir {
  /** Rules in order (httpd keeps a linked list; merging reverses both lists, as httpd does). */
  map: readonly UrlMap[] | undefined;
  doctype: DocType | undefined;
  /** ' />' after empty elements (XHTML); undefined: httpd's default '>' (inherits). */
  xhtmlEtag: boolean | undefined;
  flags: number;
  bufsz: number;
  links: ReadonlyMap<string, readonly string[]> | undefined;
  events: readonly string[] | undefined;
  charsetOut: string | undefined;
  extfix: number;
  metafix: number;
  stripComments: number;
  interp: number;
  enabled: number;
}

function createDirConfig(): ProxyHtmlDir {
  return {
    map: undefined, doctype: undefined, xhtmlEtag: undefined, flags: 0, bufsz: 8192, links: undefined, events: undefined,
    charsetOut: undefined, extfix: 0, metafix: 0, stripComments: 0, interp: 0, enabled: 0,
  };
}

function mergeDirConfig(base: Readonly<ProxyHtmlDir>, add: Readonly<ProxyHtmlDir>): ProxyHtmlDir {
  let map: readonly UrlMap[] | undefined;
  if (add.map && base.map) map = [...add.map].reverse().concat([...base.map].reverse());
  else map = add.map ?? base.map;
  const reset = (add.flags & NORM_RESET) !== 0;
  return {
    links: add.links ?? base.links,
    events: add.events ?? base.events,
    charsetOut: add.charsetOut ?? base.charsetOut,
    map,
    doctype: add.doctype ?? base.doctype,
    xhtmlEtag: add.xhtmlEtag ? true : base.xhtmlEtag,
    bufsz: add.bufsz,
    flags: reset ? add.flags ^ NORM_RESET : base.flags | add.flags,
    metafix: reset ? add.metafix : base.metafix | add.metafix,
    extfix: reset ? add.extfix : base.extfix | add.extfix,
    interp: reset ? add.interp : base.interp | add.interp,
    stripComments: reset ? add.stripComments : base.stripComments | add.stripComments,
    enabled: reset ? add.enabled : add.enabled | base.enabled,
  };
}

// ---- directives -----------------------------------------------------------------------------

type Cmd = CmdParms<undefined, ProxyHtmlDir>;

/** Old-style conditions (`var`, `!var`, `var=val`, `!var=val`) become expressions, as httpd's
 *  s/^(!)?(\w+)((=)(.+))?$/reqenv('$2')$1$4'$5'/ makes them. */
function convertOldCondition(cond: string): string {
  const m = /^(!)?(\w+)((=)(.+))?$/s.exec(cond);
  if (!m) return cond;
  let out = `reqenv('${m[2]}')${m[1] ?? ''}${m[4] ?? ''}'${m[5] ?? ''}'`;
  if (cond[0] === '!' && !cond.includes('=')) out = '!' + out.slice(0, -1);
  return out;
}

function setUrlMap(cmd: Cmd, raw: string): string | undefined {
  const args = new ArgCursor(raw);
  const from = args.word();
  const to = args.word();
  const flagWord = args.word();
  const flags = flagWord === '' ? undefined : flagWord;
  let cond: string | undefined = flags !== undefined ? args.word() : undefined;
  if (cond === '') cond = undefined;
  const f = mapFlags(flags);
  let re: RegExp | undefined;
  const icase = flags !== undefined && flags.includes('i');
  if ((f & M_REGEX) && !(f & M_INTERPOLATE_FROM)) {
    re = compileApacheRegex(from, icase);
    // DIFFERENCE: httpd keeps a rule whose pattern does not compile and crashes on it at
    // the first request; plume refuses the configuration.
    if (re === undefined) return `ProxyHTMLURLMap: regular expression could not be compiled: ${from}`;
  }
  let expr;
  if (cond !== undefined) {
    const res = parseExprCmd(cmd, convertOldCondition(cond), 0, 'proxy_html');
    if (!res.ok) return res.error;
    expr = res.expr;
  }
  cmd.dir.map = [...(cmd.dir.map ?? []), { flags: f, fromText: from, re, icase, to, cond: expr }];
  return undefined;
}

function setDoctype(cmd: Cmd, t: string, l: string | undefined): undefined {
  const legacy = l !== undefined && l.toLowerCase() === 'legacy';
  const tl = t.toLowerCase();
  if (tl === 'xhtml') {
    cmd.dir.xhtmlEtag = true;
    cmd.dir.doctype = legacy ? { text: FPI_XHTML_LEGACY, enforce: 1 } : { text: FPI_XHTML, enforce: 2 };
  } else if (tl === 'html') {
    cmd.dir.xhtmlEtag = undefined;
    cmd.dir.doctype = legacy ? { text: FPI_HTML_LEGACY, enforce: 1 } : { text: FPI_HTML, enforce: 2 };
  } else if (tl === 'html5') {
    cmd.dir.xhtmlEtag = undefined;
    cmd.dir.doctype = { text: FPI_HTML5, enforce: 0 };
  } else {
    cmd.dir.doctype = { text: t, enforce: 0 };
    cmd.dir.xhtmlEtag = l !== undefined && (l[0] === 'x' || l[0] === 'X') ? true : undefined;
  }
  return undefined;
}

function setFixups(cmd: Cmd, arg: string): undefined {
  const a = arg.toLowerCase();
  if (a === 'lowercase') cmd.dir.flags |= NORM_LC;
  else if (a === 'dospath') cmd.dir.flags |= NORM_MSSLASH;
  else if (a === 'reset') cmd.dir.flags |= NORM_RESET;
  return undefined;
}

function setLinks(cmd: Cmd, elt: string, att: string): undefined {
  const links = new Map(cmd.dir.links ?? []);
  links.set(elt, [...(links.get(elt) ?? []), att]);
  cmd.dir.links = links;
  return undefined;
}

/** ap_set_int_slot: strtol, the whole argument a number. */
function setBufSize(cmd: Cmd, arg: string): string | undefined {
  const m = /^[ \t\n\v\f\r]*[+-]?\d+$/.exec(arg);
  let v = parseInt(arg, 10);
  if (Number.isNaN(v)) v = 0;
  cmd.dir.bufsz = v;
  if (arg === '' || !m) return `Invalid value for directive ${cmd.node.name}, expected integer`;
  return undefined;
}

type FlagKey = 'metafix' | 'interp' | 'extfix' | 'stripComments' | 'enabled';
function flagSlot(key: FlagKey) {
  return (cmd: Cmd, on: boolean): undefined => { cmd.dir[key] = on ? 1 : 0; return undefined; };
}

// ---- the SAX handler: httpd's serialiser ---------------------------------------------------

interface SaxCtx {
  readonly r: Request;
  readonly cfg: ProxyHtmlDir;
  readonly maps: readonly ActiveMap[];
  readonly etag: string;
  /** Output not passed on yet. */
  out: string[];
  /** httpd's shared buffer (attribute values, and with ProxyHTMLExtended buffered text). */
  buf: string;
}

/** pcharacters: text with & < > " escaped. */
function escapeText(s: string): string {
  return /[&<>"]/.test(s) ? s.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;')) : s;
}

/** normalise: ProxyHTMLFixups lowercase (ASCII letters) and dospath (\ to /). */
function normalise(flags: number, s: string): string {
  if (flags & NORM_LC) s = s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
  if (flags & NORM_MSSLASH) s = s.replace(/\\/g, '/');
  return s;
}

function dumpContent(ctx: SaxCtx): void {
  ctx.out.push(mapText(ctx.buf, ctx.maps));
}

function makeSax(ctx: SaxCtx): HtmlSax {
  const cfg = ctx.cfg;
  const enforce = cfg.doctype?.enforce ?? 0;
  return {
    characters(text) {
      ctx.out.push(escapeText(text));
    },
    cdata(text) {
      if (cfg.extfix) ctx.buf += text;
      else ctx.out.push(text);
    },
    comment(text) {
      if (cfg.stripComments) return;
      if (cfg.extfix) ctx.buf += '<!--' + text + '-->';
      else ctx.out.push('<!--', text, '-->');
    },
    endElement(name) {
      const desc = tagLookup(name);
      if (enforce === 2 && (!desc || desc.deprecated)) return;
      if (enforce === 1 && !desc) return;
      if (ctx.buf !== '') {
        dumpContent(ctx);
        ctx.buf = '';
      }
      if (!desc || !desc.empty) ctx.out.push(`</${name}>`);
    },
    startElement(name, attrs) {
      const r = ctx.r;
      const desc = tagLookup(name);
      if (enforce === 2 && (!desc || desc.deprecated)) {
        r.log('proxy_html', APLOG_DEBUG, `AH01416: Bogus HTML element ${name} dropped`);
        return;
      }
      if (enforce === 1 && !desc) {
        r.log('proxy_html', APLOG_DEBUG, `AH01417: Deprecated HTML element ${name} dropped`);
        return;
      }
      ctx.out.push('<', name);
      let required = enforce > 0 && desc ? desc.required.length : 0;
      if (attrs) {
        const linkAttrs = cfg.links?.get(name);
        for (const [an, av] of attrs as readonly Attr[]) {
          if (desc && enforce > 0) {
            if (desc.required.includes(an)) required--;
            else if (!desc.allowed.has(an)) {
              r.log('proxy_html', APLOG_DEBUG, `AH01418: Bogus HTML attribute ${an} of ${name} dropped`);
              continue;
            }
          }
          if (av === null) {
            ctx.buf = '';
            ctx.out.push(' ', an);
            continue;
          }
          let v = av;
          if (linkAttrs && linkAttrs.includes(an)) v = mapLink(v, ctx.maps);
          else if (cfg.extfix && cfg.events && cfg.events.includes(an)) v = mapEvent(v, ctx.maps);
          if (cfg.flags !== 0) v = normalise(cfg.flags, v);
          ctx.out.push(' ', an, '="', escapeText(v), '"');
          ctx.buf = '';
        }
      }
      ctx.buf = '';
      ctx.out.push(desc && desc.empty ? ctx.etag : '>');
      if (enforce > 0 && required > 0) {
        r.log('proxy_html', APLOG_DEBUG, `AH01420: HTML element ${name} is missing ${required} required attributes`);
      }
    },
  };
}

// ---- per request ----------------------------------------------------------------------------

/** fixup_rules (ProxyHTMLInterp): conditions evaluated, ${...} interpolated. */
function fixupRules(r: Request, cfg: ProxyHtmlDir): ActiveMap[] {
  const out: ActiveMap[] = [];
  const trace = r.wantsLog('proxy_html', APLOG_TRACE1)
    ? (v: string, rep: string) => r.log('proxy_html', APLOG_TRACE1, `Interpolating ${v}  =>  ${rep}`)
    : undefined;
  for (const m of cfg.map ?? []) {
    if (m.cond) {
      const ok = evalBool(m.cond, r);
      // Conditions are synchronous expressions (no async providers in reqenv/env tests).
      if (ok instanceof Promise) continue;
      if (isFailure(ok)) { r.log('proxy_html', APLOG_ERR, `AH01421: Error evaluating expr: ${ok.error}`); continue; }
      if (!ok) continue;
    }
    let from = m.fromText;
    let re = m.re;
    if (m.flags & M_INTERPOLATE_FROM) {
      from = interpolateVars(from, r.subprocessEnv, trace);
      if (from === '') continue;
      // httpd compiles the interpolated pattern without the rule's i flag.
      if (m.flags & M_REGEX) re = compileApacheRegex(from, false);
    }
    const to = m.flags & M_INTERPOLATE_TO ? interpolateVars(m.to, r.subprocessEnv, trace) : m.to;
    out.push({ flags: m.flags, from, re, to });
  }
  return out;
}

function activeMaps(cfg: ProxyHtmlDir): ActiveMap[] {
  return (cfg.map ?? []).map((m) => ({ flags: m.flags, from: m.fromText, re: m.re, to: m.to }));
}

const SEEK_META = /<meta[^>]*(http-equiv)[^>]*>/gi;

/** metafix (ProxyHTMLMeta): <meta http-equiv> elements become response headers; the
 *  Content-Type one is cut from the document (its position is returned). */
function metafix(r: Request, text: string): { start: number; end: number } | undefined {
  let ret: { start: number; end: number } | undefined;
  SEEK_META.lastIndex = 0;
  for (let m = SEEK_META.exec(text); m; m = SEEK_META.exec(text)) {
    const tag = m[0];
    let p = tag.toLowerCase().indexOf('http-equiv', tag.indexOf(m[1]!) ) + 10;
    do p++; while (p < tag.length && !/[A-Za-z]/.test(tag[p]!));
    let q = p;
    while (q < tag.length && /[A-Za-z0-9-]/.test(tag[q]!)) q++;
    const header = tag.slice(p, q);
    let content: string | undefined;
    if (header.slice(0, 8).toLowerCase() !== 'content-') {
      let c = tag.indexOf('content');
      if (c >= 0) {
        c += 7;
        while (c < tag.length && /\s/.test(tag[c]!)) c++;
        if (tag[c] === '=') {
          do c++; while (c < tag.length && /\s/.test(tag[c]!));
          const d = tag[c];
          if (d === '"' || d === "'") {
            const e = tag.indexOf(d, c + 1);
            if (e >= 0) content = tag.slice(c + 1, e);
          } else {
            let e = c;
            while (e < tag.length && !/\s/.test(tag[e]!) && tag[e] !== '>') e++;
            content = tag.slice(c, e);
          }
        }
      }
    } else if (header.slice(0, 12).toLowerCase() === 'content-type') {
      ret = { start: m.index, end: m.index + tag.length };
    }
    if (header !== '' && content !== undefined) {
      if (r.wantsLog('proxy_html', APLOG_TRACE2)) r.log('proxy_html', APLOG_TRACE2, `Adding header [${header}: ${content}] from HTML META`);
      r.headersOut.set(header, content);
    }
  }
  return ret;
}

interface FilterState {
  init: boolean;
  sax: SaxCtx | null;
  parser: HtmlPushParser | null;
  decoder: TextStream | null;
  /** The first bytes, held until there are four (httpd's rbuf). */
  head: Buffer[];
  headLen: number;
  /** Read as ISO-8859-1 for want of a charset (libxml2's guess), until a <meta> names one. */
  guessed: boolean;
}

function xml2enc(r: Request): Xml2EncApi | undefined {
  return r.rt.ctx.provider('xml2enc', 'xml2enc');
}

function decoderFor(enc: XmlCharEncoding): TextStream {
  if (enc === 'utf-8') return new Utf8ThenLatin1();
  // No charset (no mod_xml2enc): libxml2 guesses ISO-8859-1 at the first non-ASCII byte,
  // unless a <meta> names a charset first.
  if (enc === 'none') return { codec: 'latin1', write: (b) => b.toString('latin1'), end: () => '' };
  const codec = codecFor(enc);
  const d = iconv.getDecoder(codec);
  return { codec, write: (b) => d.write(b), end: () => d.end() ?? '' };
}

/** check_filter_init: whether this response is one to rewrite. */
function checkInit(f: FilterInstance<FilterState>): boolean {
  const st = f.state;
  const r = f.r;
  if (st.init) return st.sax !== null;
  st.init = true;
  const cfg = self.dir(r);
  let err: string | undefined;
  if (!r.subprocessEnv.has('PROXY_HTML_FORCE')) {
    const ct = r.contentType?.toLowerCase();
    if (!r.proxyreq) err = 'Non-proxy request; not inserting proxy-html filter';
    else if (ct === undefined) err = 'No content-type; bailing out of proxy-html filter';
    else if (!ct.startsWith('text/html') && !ct.startsWith('application/xhtml+xml')) err = 'Non-HTML content; not inserting proxy-html filter';
  }
  if (!cfg.links) err = 'No links configured: nothing for proxy-html filter to do';
  if (err !== undefined) {
    if (r.wantsLog('proxy_html', APLOG_TRACE1)) r.log('proxy_html', APLOG_TRACE1, err);
    f.remove();
    return false;
  }
  r.headersOut.unset('Content-Length');
  st.sax = {
    r, cfg, maps: cfg.interp ? fixupRules(r, cfg) : activeMaps(cfg), etag: cfg.xhtmlEtag ? ' />' : '>', out: [], buf: '',
  };
  return true;
}

/** Starts the parser on the first four bytes or more (shorter documents go out untouched). */
function startParser(f: FilterInstance<FilterState>, first: Buffer): void {
  const st = f.state;
  const r = f.r;
  const ctx = st.sax!;
  const api = xml2enc(r);
  let enc: XmlCharEncoding = 'none';
  const cs = api?.charset(r);
  if (!api || cs!.status !== 'ok') {
    if (!api) r.log('proxy_html', APLOG_WARNING, 'AH01422: No i18n support found.  Install mod_xml2enc if required');
    r.contentType = 'text/html;charset=utf-8';
  } else {
    enc = cs!.enc;
    if (ctx.cfg.charsetOut !== undefined) {
      let cenc = cs!.encoding ?? '(null)';
      if (ctx.cfg.charsetOut[0] !== '*') cenc = ctx.cfg.charsetOut;
      api.filter(r, cenc, ENCIO_OUTPUT);
      r.contentType = 'text/html;charset=' + cenc;
    } else {
      r.contentType = 'text/html;charset=utf-8';
    }
  }
  ctx.out.push(ctx.cfg.doctype?.text ?? '');
  const decoder = decoderFor(enc);
  st.decoder = decoder;
  st.guessed = enc === 'none';
  const sax = makeSax(ctx);
  const parser = new HtmlPushParser({
    ...sax,
    encoding: (name) => switchEncoding(st, api, name),
  });
  st.parser = parser;
  // The first four bytes open the parser; ProxyHTMLMeta reads the rest of the first piece.
  const open = first.subarray(0, 4);
  const rest = first.subarray(4);
  parser.push(decoder.write(open));
  const m = ctx.cfg.metafix ? metafix(r, rest.toString('latin1')) : undefined;
  if (m) {
    parser.push(decoder.write(rest.subarray(0, m.start)));
    parser.push(decoder.write(rest.subarray(m.end)));
  } else parser.push(decoder.write(rest));
}

/** htmlCheckEncodingDirect: a <meta> naming a charset switches the decoding of the rest of
 *  the input, once, unless it names UTF-16/UCS-4 over input read as UTF-8. */
function switchEncoding(st: FilterState, api: Xml2EncApi | undefined, name: string): void {
  const parser = st.parser;
  const old = st.decoder;
  if (!parser || !old) return;
  const enc = api ? api.parseCharEncoding(name) : libxml2Encoding(name);
  let codec: string | undefined;
  if (enc !== 'error' && enc !== 'none') {
    if ((enc === 'utf-16le' || enc === 'utf-16be' || enc === 'ucs-4le' || enc === 'ucs-4be') && old instanceof Utf8ThenLatin1) return;
    // UTF-8 keeps the converter there is; without one (no charset given) the rest is UTF-8.
    if (enc === 'utf-8' && !st.guessed) return;
    codec = enc === 'utf-8' ? 'utf8' : codecFor(enc);
  } else if (iconv.encodingExists(name)) codec = name;
  if (codec === undefined) return;
  st.guessed = false;
  const raw = Buffer.concat([iconv.encode(parser.unparsed(), old.codec), old.pending?.() ?? Buffer.alloc(0)]);
  let next: TextStream;
  if (codec === 'utf8') next = new Utf8ThenLatin1();
  else {
    const d = iconv.getDecoder(codec);
    next = { codec, write: (b) => d.write(b), end: () => d.end() ?? '' };
  }
  st.decoder = next;
  parser.replaceUnparsed(next.write(raw));
}

function takeOut(ctx: SaxCtx): Bucket[] {
  if (ctx.out.length === 0) return [];
  const s = ctx.out.join('');
  ctx.out = [];
  return s === '' ? [] : [dataBucket(Buffer.from(s, 'utf8'))];
}

async function proxyHtmlFilter(f: FilterInstance<FilterState>, bb: Brigade): Promise<void> {
  if (!checkInit(f)) return f.pass(bb);
  const st = f.state;
  const ctx = st.sax!;
  for (const b of bb) {
    if (b.kind === 'eos') {
      if (st.parser) {
        const rest = st.decoder!.end();
        if (rest) st.parser.push(rest);
        st.parser.finish();
        await f.pass([...takeOut(ctx), b]);
      } else {
        const head = st.head.length ? [dataBucket(Buffer.concat(st.head))] : [];
        st.head = [];
        await f.pass([...takeOut(ctx), ...head, b]);
      }
      continue;
    }
    if (b.kind === 'flush') {
      if (st.parser) await f.pass([...takeOut(ctx), b]);
      continue;
    }
    await bucketPieces(b, (data) => {
      if (st.parser) {
        st.parser.push(st.decoder!.write(data));
        return;
      }
      st.head.push(data);
      st.headLen += data.length;
      if (st.headLen < 4) return;
      const first = Buffer.concat(st.head);
      st.head = [];
      startParser(f, first);
    });
  }
  const out = takeOut(ctx);
  if (out.length) await f.pass(out);
}

const PROXY_HTML: FilterSpec<FilterState> = {
  name: 'proxy-html',
  type: FTYPE_RESOURCE,
  init: () => ({ init: false, sax: null, parser: null, decoder: null, head: [], headLen: 0, guessed: false }),
  filter: proxyHtmlFilter,
};

/** proxy_html_insert: ProxyHTMLEnable adds xml2enc (sniffing) and proxy-html. */
function insertFilters(r: Request): void {
  const cfg = self.dir(r);
  if (!cfg.enabled) return;
  xml2enc(r)?.filter(r, undefined, ENCIO_INPUT_CHECKS);
  r.rt.addFilter(r, PROXY_HTML);
}

function checkConfig(ctx: ConfigContext): void {
  if (!ctx.isLoaded('xml2enc_module')) {
    ctx.logNoServer('proxy_html', APLOG_NOTICE, 'AH01425: I18n support in mod_proxy_html requires mod_xml2enc. Without it, non-ASCII characters in proxied pages are likely to display incorrectly.');
  }
}

const self = defineModule<undefined, ProxyHtmlDir>({
  name: 'proxy_html_module',
  source: 'mod_proxy_html.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, ProxyHtmlDir, 'ITERATE'>({
      name: 'ProxyHTMLEvents', args: 'ITERATE', where: RSRC_CONF | ACCESS_CONF, help: 'Strings to be treated as scripting events',
      handler: (cmd: Cmd, a: string) => { cmd.dir.events = [...(cmd.dir.events ?? []), a]; },
    }),
    directive<undefined, ProxyHtmlDir, 'ITERATE2'>({ name: 'ProxyHTMLLinks', args: 'ITERATE2', where: RSRC_CONF | ACCESS_CONF, help: 'Declare HTML Attributes', handler: setLinks }),
    directive<undefined, ProxyHtmlDir, 'RAW_ARGS'>({ name: 'ProxyHTMLURLMap', args: 'RAW_ARGS', where: RSRC_CONF | ACCESS_CONF, help: 'Map URL From To', handler: setUrlMap }),
    directive<undefined, ProxyHtmlDir, 'TAKE12'>({ name: 'ProxyHTMLDoctype', args: 'TAKE12', where: RSRC_CONF | ACCESS_CONF, help: '(HTML|XHTML) [Legacy]', handler: setDoctype }),
    directive<undefined, ProxyHtmlDir, 'ITERATE'>({ name: 'ProxyHTMLFixups', args: 'ITERATE', where: RSRC_CONF | ACCESS_CONF, help: 'Options are lowercase, dospath', handler: setFixups }),
    directive<undefined, ProxyHtmlDir, 'FLAG'>({ name: 'ProxyHTMLMeta', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Fix META http-equiv elements', handler: flagSlot('metafix') }),
    directive<undefined, ProxyHtmlDir, 'FLAG'>({ name: 'ProxyHTMLInterp', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Support interpolation and conditions in URLMaps', handler: flagSlot('interp') }),
    directive<undefined, ProxyHtmlDir, 'FLAG'>({ name: 'ProxyHTMLExtended', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Map URLs in Javascript and CSS', handler: flagSlot('extfix') }),
    directive<undefined, ProxyHtmlDir, 'FLAG'>({ name: 'ProxyHTMLStripComments', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Strip out comments', handler: flagSlot('stripComments') }),
    directive<undefined, ProxyHtmlDir, 'TAKE1'>({ name: 'ProxyHTMLBufSize', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'Buffer size', handler: setBufSize }),
    directive<undefined, ProxyHtmlDir, 'TAKE1'>({
      name: 'ProxyHTMLCharsetOut', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'Usage: ProxyHTMLCharsetOut charset',
      handler: (cmd: Cmd, a: string) => { cmd.dir.charsetOut = a; },
    }),
    directive<undefined, ProxyHtmlDir, 'FLAG'>({ name: 'ProxyHTMLEnable', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF, help: 'Enable proxy-html and xml2enc filters', handler: flagSlot('enabled') }),
  ],
  hooks: {
    insertFilter: { fn: insertFilters, order: HOOK_MIDDLE, successors: ['mod_filter.c'] },
  },
  configHooks: { checkConfig },
  filters: [PROXY_HTML as FilterSpec],
});

export default self;
