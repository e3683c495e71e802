// mod_xml2enc (modules/filters/mod_xml2enc.c): the xml2enc output filter, which finds the
// charset of an HTML or XML response (the Content-Type's charset, a byte order mark or an
// XML declaration's "<?xm", a <meta http-equiv="Content-Type"> in the first 4 KB, else
// xml2EncDefault or ISO-8859-1) and converts the body to UTF-8 when the markup filters'
// parser (libxml2 in httpd) cannot read that charset itself; it drops the <meta> it read and
// says charset=utf-8 in the Content-Type. With ENCIO_OUTPUT it converts UTF-8 back to a
// charset (mod_proxy_html's ProxyHTMLCharsetOut). Other modules use it through the 'xml2enc'
// provider (xml2enc-api.ts; httpd's optional functions). xml2EncAlias adds charset names,
// xml2StartParse drops what comes before the first of the named elements (the filter added
// by name only, as in httpd).
// Conversion is iconv-lite's (README, "Runtime dependencies").

import iconv from 'iconv-lite';
import { defineModule, directive, MODULE_API_VERSION, OR_ALL, RSRC_CONF } from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import {
  FTYPE_RESOURCE, bucketBytes, dataBucket, type Brigade, type Bucket, type FilterInstance, type FilterSpec,
} from '../../server/filters.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_WARNING } from '../../server/log/levels.js';
import {
  ENCIO, ENCIO_INPUT, ENCIO_INPUT_CHECKS, ENCIO_OUTPUT, ENCIO_SKIPTO, haveEncoding, libxml2Encoding,
  type Xml2EncApi, type Xml2EncCharset, type XmlCharEncoding,
} from './xml2enc-api.js';

iconv.encodingExists('iso-8859-1');

/** What is read before sniffing, unless the response is shorter (BUF_MIN). */
const BUF_MIN = 4096;
const ENC_INITIALISED = 0x100;

export interface Xml2EncDir {
  defaultCharset: string | undefined;
  defaultEncoding: XmlCharEncoding;
  skipto: string[] | undefined;
}

// ---- libxml2's charset names ---------------------------------------------------------------

/** xml2EncAlias names (upper-cased) → charset; libxml2 keeps them process-wide. */
let aliases = new Map<string, string>();


/** xmlParseCharEncoding: the encoding libxml2 handles itself for a charset name. */
export function parseCharEncoding(name: string): XmlCharEncoding {
  const alias = aliases.get(name.toUpperCase());
  return libxml2Encoding(alias ?? name);
}

/** xmlGetCharEncodingName. */
function charEncodingName(e: XmlCharEncoding): string | undefined {
  switch (e) {
    case 'none': case 'error': return undefined;
    case 'utf-8': return 'UTF-8';
    case 'utf-16le': case 'utf-16be': return 'UTF-16';
    case 'ebcdic': return 'EBCDIC';
    case 'ucs-4le': case 'ucs-4be': case 'ucs-4-2143': case 'ucs-4-3412': return 'ISO-10646-UCS-4';
    case 'ucs-2': return 'ISO-10646-UCS-2';
    case 'shift_jis': return 'Shift-JIS';
    default: return e.toUpperCase();
  }
}

/** xmlDetectCharEncoding: a byte order mark or the start of an XML declaration. */
function detectCharEncoding(b: Buffer): XmlCharEncoding {
  if (b.length >= 4) {
    const [a, c, d, e] = [b[0]!, b[1]!, b[2]!, b[3]!];
    if (a === 0 && c === 0 && d === 0 && e === 0x3c) return 'ucs-4be';
    if (a === 0x3c && c === 0 && d === 0 && e === 0) return 'ucs-4le';
    if (a === 0 && c === 0 && d === 0x3c && e === 0) return 'ucs-4-2143';
    if (a === 0 && c === 0x3c && d === 0 && e === 0) return 'ucs-4-3412';
    if (a === 0x4c && c === 0x6f && d === 0xa7 && e === 0x94) return 'ebcdic';
    if (a === 0x3c && c === 0x3f && d === 0x78 && e === 0x6d) return 'utf-8';
    if (a === 0x3c && c === 0 && d === 0x3f && e === 0) return 'utf-16le';
    if (a === 0 && c === 0x3c && d === 0 && e === 0x3f) return 'utf-16be';
  }
  if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return 'utf-8';
  if (b.length >= 2) {
    if (b[0] === 0xfe && b[1] === 0xff) return 'utf-16be';
    if (b[0] === 0xff && b[1] === 0xfe) return 'utf-16le';
  }
  return 'none';
}

// ---- conversion (apr_xlate) ---------------------------------------------------------------

interface Converter {
  write(b: Buffer): Buffer;
  end(): Buffer;
}

/** apr_xlate_open(to, from): null when iconv cannot convert between them. */
function openXlate(to: string, from: string): Converter | null {
  if (!iconv.encodingExists(from) || !iconv.encodingExists(to)) return null;
  const dec = iconv.getDecoder(from);
  const enc = iconv.getEncoder(to);
  return {
    write: (b) => { const s = dec.write(b); return s === '' ? EMPTY : enc.write(s); },
    end: () => {
      const s = dec.end() ?? '';
      const a = s === '' ? EMPTY : enc.write(s);
      const z = enc.end();
      return z && z.length ? Buffer.concat([a, z]) : a;
    },
  };
}
const EMPTY = Buffer.alloc(0);

// ---- the filter -----------------------------------------------------------------------------

interface Xml2Ctx {
  enc: XmlCharEncoding;
  encoding: string | undefined;
  flags: number;
  conv: Converter | null;
  /** The response held until there is enough to sniff. */
  saved: Bucket[];
}

const requestCtx = new WeakMap<Request, Xml2Ctx>();

const SEEK_META_CTYPE = /<meta[^>]*http-equiv[ \t\r\n='"]*content-type[^>]*>/i;
const SEEK_CHARSET = /charset=([A-Za-z0-9_-]+)/i;

/** sniff_encoding; returns the bytes without the <meta> it read, and where that <meta> was
 *  (what xml2StartParse searches). */
function sniffEncoding(r: Request, ctx: Xml2Ctx, buf: Buffer): { pieces: Buffer[]; bytes: number } {
  const ctype = r.contentType;
  let pieces = [buf];
  let bytes = buf.length;
  if (ctype !== undefined) {
    r.log('xml2enc', APLOG_DEBUG, `AH01430: Content-Type is ${ctype}`);
    const at = ctype.toLowerCase().indexOf('charset=');
    if (at >= 0) {
      const rest = ctype.slice(at + 8);
      const m = /^[^ ;]*/.exec(rest)!;
      ctx.encoding = m[0];
      r.log('xml2enc', APLOG_INFO, `AH01431: Got charset ${ctx.encoding} from HTTP headers`);
      ctx.enc = parseCharEncoding(ctx.encoding);
    }
  }
  if (ctx.enc === 'none') {
    ctx.enc = detectCharEncoding(buf);
    if (haveEncoding(ctx.enc)) {
      r.log('xml2enc', APLOG_INFO, 'AH01432: Got charset from XML rules.');
      ctx.encoding = charEncodingName(ctx.enc);
    }
  }
  // The search stops at a NUL, as regexec on the C string does.
  const text = buf.toString('latin1');
  const nul = text.indexOf('\0');
  const meta = SEEK_META_CTYPE.exec(nul < 0 ? text : text.slice(0, nul));
  if (meta) {
    const so = meta.index;
    const eo = so + meta[0].length;
    bytes = so;
    if (ctx.encoding === undefined) {
      const cs = SEEK_CHARSET.exec(meta[0]);
      if (cs) {
        ctx.encoding = cs[1]!;
        ctx.enc = parseCharEncoding(ctx.encoding);
        if (haveEncoding(ctx.enc)) r.log('xml2enc', APLOG_INFO, `AH01433: Got charset ${ctx.encoding} from HTML META`);
      }
    }
    // The buckets around the cut stay apart (mod_proxy_html's ProxyHTMLMeta reads the first).
    pieces = [buf.subarray(0, so), buf.subarray(eo)];
  }
  const cfg = self.dir(r);
  if (!haveEncoding(ctx.enc)) {
    if (ctx.encoding === undefined) ctx.encoding = cfg.defaultCharset ?? 'ISO-8859-1';
    r.log('xml2enc', APLOG_DEBUG, `AH01434: Charset ${ctx.encoding} not supported by libxml2; trying apr_xlate`);
    const conv = openXlate('utf-8', ctx.encoding);
    if (conv) {
      ctx.conv = conv;
      ctx.enc = 'utf-8';
    } else {
      r.log('xml2enc', APLOG_ERR, `AH01435: Charset ${ctx.encoding} not supported.  Consider aliasing it?`);
    }
  }
  if (!haveEncoding(ctx.enc)) {
    r.log('xml2enc', APLOG_WARNING, 'AH01436: No usable charset information; using configuration default');
    ctx.enc = cfg.defaultEncoding === 'none' ? 'iso-8859-1' : cfg.defaultEncoding;
  }
  if (ctype !== undefined && ctx.encoding !== undefined) {
    const m = SEEK_CHARSET.exec(ctype);
    if (!m) r.contentType = ctype + ';charset=utf-8';
    else {
      const vs = m.index + 'charset='.length;
      r.contentType = ctype.slice(0, vs) + 'utf-8' + ctype.slice(vs + m[1]!.length);
    }
  }
  return { pieces, bytes };
}

/** fix_skipto: drops what comes before the first of the xml2StartParse elements. */
function fixSkipto(r: Request, ctx: Xml2Ctx, pieces: Buffer[], bytes: number): Buffer[] {
  const cfg = self.dir(r);
  if (cfg.skipto === undefined || !(ctx.flags & ENCIO_SKIPTO)) return pieces;
  const text = pieces[0]!.subarray(0, bytes).toString('latin1');
  let p = text.indexOf('<');
  while (p >= 0) {
    for (const name of cfg.skipto) {
      if (text.slice(p + 1, p + 1 + name.length).toLowerCase() === name.toLowerCase()) {
        r.log('xml2enc', APLOG_DEBUG, `AH01428: Skipped to first <${name}> element`);
        return [pieces[0]!.subarray(p), ...pieces.slice(1)];
      }
    }
    p = text.indexOf('<', p + 1);
  }
  r.log('xml2enc', APLOG_WARNING, 'AH01429: Failed to find start of recognised HTML!');
  return pieces;
}

function isMarkupType(ct: string): boolean {
  const semi = ct.indexOf(';');
  const mtype = (semi < 0 ? ct : ct.slice(0, semi)).toLowerCase();
  if (mtype.startsWith('text/') || mtype === 'application/xml') return true;
  return mtype.length > 7 && mtype.endsWith('+xml') && mtype.indexOf('+xml') === mtype.length - 4;
}

async function xml2encFilter(f: FilterInstance<Xml2Ctx>, bb: Brigade): Promise<void> {
  const ctx = f.state;
  const r = f.r;
  if (r.contentType === undefined || !isMarkupType(r.contentType)) {
    f.remove();
    const held = ctx.saved.splice(0);
    return f.pass(held.length ? [...held, ...bb] : bb);
  }
  ctx.saved.push(...bb);
  if (!(ctx.flags & ENC_INITIALISED)) {
    let len = 0;
    let eos = false;
    for (const b of ctx.saved) {
      if (b.kind === 'data') len += b.data.length;
      else if (b.kind === 'file') len += b.length;
      else if (b.kind === 'eos') eos = true;
    }
    if (len < BUF_MIN && !eos) {
      // Not enough to sniff: keep it (file buckets are read now, as httpd sets them aside).
      for (let i = 0; i < ctx.saved.length; i++) {
        const b = ctx.saved[i]!;
        if (b.kind === 'file') ctx.saved[i] = dataBucket(await bucketBytes(b));
      }
      return;
    }
    const parts: Buffer[] = [];
    const meta: Bucket[] = [];
    for (const b of ctx.saved) {
      if (b.kind === 'data' || b.kind === 'file') parts.push(await bucketBytes(b));
      else meta.push(b);
    }
    const sniffed = sniffEncoding(r, ctx, Buffer.concat(parts));
    const pieces = fixSkipto(r, ctx, sniffed.pieces, sniffed.bytes).filter((b) => b.length > 0);
    r.headersOut.unset('Content-Length');
    ctx.flags |= ENC_INITIALISED;
    requestCtx.set(r, ctx);
    ctx.saved = [...pieces.map((b) => dataBucket(b)), ...meta.filter((b) => b.kind !== 'eos')];
    if (meta.some((b) => b.kind === 'eos')) ctx.saved.push({ kind: 'eos' });
  }
  const conv = ctx.conv;
  const held = ctx.saved.splice(0);
  if (conv === null) {
    f.remove();
    return f.pass(held);
  }
  const out: Bucket[] = [];
  for (const b of held) {
    if (b.kind === 'data' || b.kind === 'file') {
      const o = conv.write(await bucketBytes(b));
      if (o.length) out.push(dataBucket(o));
    } else if (b.kind === 'eos') {
      const o = conv.end();
      if (o.length) out.push(dataBucket(o));
      out.push(b);
      f.remove();
    } else {
      out.push(b);
    }
  }
  if (out.length) return f.pass(out);
}

const XML2ENC: FilterSpec<Xml2Ctx> = {
  name: 'xml2enc',
  type: FTYPE_RESOURCE,
  init: (r) => ({ enc: 'none', encoding: undefined, flags: self.dir(r).skipto !== undefined ? ENCIO_SKIPTO : 0, conv: null, saved: [] }),
  filter: xml2encFilter,
};

// ---- the optional functions --------------------------------------------------------------------

const api: Xml2EncApi = {
  charset(r: Request): Xml2EncCharset {
    const ctx = requestCtx.get(r);
    if (!ctx || !(ctx.flags & ENC_INITIALISED)) return { status: 'again', enc: 'none', encoding: undefined };
    return { status: haveEncoding(ctx.enc) ? 'ok' : 'error', enc: ctx.enc, encoding: ctx.encoding };
  },
  filter(r: Request, enc: string | undefined, mode: number): boolean {
    let conv: Converter | null = null;
    let flags = mode ^ ENCIO;
    let ok = true;
    if ((mode & ENCIO) === ENCIO_OUTPUT) { conv = openXlate(enc ?? '', 'utf-8'); ok = conv !== null; flags |= ENC_INITIALISED; }
    else if ((mode & ENCIO) === ENCIO_INPUT) { conv = openXlate('utf-8', enc ?? ''); ok = conv !== null; flags |= ENC_INITIALISED; }
    else if ((mode & ENCIO) !== ENCIO_INPUT_CHECKS) {
      r.log('xml2enc', APLOG_ERR, `AH01426: xml2enc: bad mode ${mode.toString(16)}`);
      ok = false;
    }
    if (!ok) {
      if ((mode & ENCIO) === ENCIO_OUTPUT || (mode & ENCIO) === ENCIO_INPUT) {
        r.log('xml2enc', APLOG_ERR, `AH01427: xml2enc: Charset ${enc ?? '(null)'} not supported.`, { code: 22, text: 'Invalid argument' });
      }
      return false;
    }
    const inst = r.rt.addFilter(r, XML2ENC);
    inst.state = { enc: 'none', encoding: undefined, flags, conv, saved: [] };
    return true;
  },
  parseCharEncoding,
};

// ---- configuration -----------------------------------------------------------------------

type Cmd = CmdParms<undefined, Xml2EncDir>;

function setDefault(cmd: Cmd, charset: string): string | undefined {
  const e = parseCharEncoding(charset);
  cmd.dir.defaultCharset = charset;
  cmd.dir.defaultEncoding = e;
  if (e === 'none') return 'Default charset not found';
  if (e === 'error') return 'Invalid or unsupported default charset';
  return undefined;
}

function setAlias(cmd: Cmd, charset: string, alias: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  aliases.set(alias.toUpperCase(), charset);
  return undefined;
}

const self = defineModule<undefined, Xml2EncDir>({
  name: 'xml2enc_module',
  source: 'mod_xml2enc.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ defaultCharset: undefined, defaultEncoding: 'none', skipto: undefined }),
  mergeDirConfig: (base, add) => ({
    defaultEncoding: add.defaultEncoding === 'none' ? base.defaultEncoding : add.defaultEncoding,
    defaultCharset: add.defaultCharset ?? base.defaultCharset,
    skipto: add.skipto ?? base.skipto,
  }),
  directives: [
    directive<undefined, Xml2EncDir, 'TAKE1'>({ name: 'xml2EncDefault', args: 'TAKE1', where: OR_ALL, help: 'Usage: xml2EncDefault charset', handler: setDefault }),
    directive<undefined, Xml2EncDir, 'ITERATE2'>({ name: 'xml2EncAlias', args: 'ITERATE2', where: RSRC_CONF, help: 'EncodingAlias charset alias [more aliases]', handler: setAlias }),
    directive<undefined, Xml2EncDir, 'ITERATE'>({
      name: 'xml2StartParse', args: 'ITERATE', where: OR_ALL, help: 'Ignore anything in front of the first of these elements',
      handler: (cmd: Cmd, el: string) => { (cmd.dir.skipto ??= []).push(el); },
    }),
  ],
  configHooks: {
    preConfig: () => { aliases = new Map(); },
  },
  providers: [{ group: 'xml2enc', name: 'xml2enc', version: '0', provider: api }],
  filters: [XML2ENC as FilterSpec],
});

export default self;
