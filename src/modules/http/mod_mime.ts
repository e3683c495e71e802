// mod_mime (modules/http/mod_mime.c): content metadata from file name extensions.
//
//  - TypesConfig: the extension → media type map, read once per configuration (post_config)
//    from the main server's file (default conf/mime.types, ServerRoot-relative).
//  - AddType / AddCharset / AddEncoding / AddLanguage / AddHandler / AddInputFilter /
//    AddOutputFilter and their Remove* forms: per-directory extension maps, merged the way
//    httpd merges them (maps overlaid field by field; Remove* entries clear the inherited
//    field, RemoveType overrides TypesConfig too).
//  - The type checker (find_ct): every dot-separated part of the file name after the base
//    name, left to right, case-insensitively; a directory gets httpd/unix-directory.

import * as fs from 'node:fs';
import {
  ACCESS_CONF, DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_FILEINFO, RSRC_CONF,
  defineModule, directive, DIR_MAGIC_TYPE,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import { splitLogicalLines, splitWords } from '../../server/config/lexer.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR, APLOG_WARNING, levelFor } from '../../server/log/levels.js';
import { errnoOf } from '../../server/log/error-log.js';

/** httpd's AP_TYPES_CONFIG_FILE. */
export const DEFAULT_TYPES_CONFIG = 'conf/mime.types';

// MultiviewsMatch bits (mod_mime.c MULTIMATCH_*).
export const MULTIMATCH_UNSET = 0;
export const MULTIMATCH_ANY = 1;
export const MULTIMATCH_NEGOTIATED = 2;
export const MULTIMATCH_HANDLERS = 4;
export const MULTIMATCH_FILTERS = 8;

/** What an extension maps to (httpd's extension_info). An empty forcedType is RemoveType. */
export interface ExtensionInfo {
  forcedType: string | undefined;
  encodingType: string | undefined;
  languageType: string | undefined;
  handler: string | undefined;
  charsetType: string | undefined;
  inputFilters: string | undefined;
  outputFilters: string | undefined;
}
export type ExtensionField = keyof ExtensionInfo;

const EXTENSION_FIELDS: readonly ExtensionField[] = [
  'forcedType', 'encodingType', 'languageType', 'handler', 'charsetType', 'inputFilters', 'outputFilters',
];

export interface MimeDirConfig {
  /** Extension (lowercase, no dot) → info; undefined when nothing was added here or above. */
  extensionMappings: Map<string, ExtensionInfo> | undefined;
  /** Remove* directives of this section, applied to what it inherits when merged. */
  removeMappings: { readonly ext: string; readonly field: ExtensionField }[] | undefined;
  defaultLanguage: string | undefined;
  multimatch: number;
  /** ModMimeUsePathInfo: 0 off, 1 on, 2 unset (effectively off). */
  usePathInfo: 0 | 1 | 2;
}

export interface MimeServerConfig {
  /** TypesConfig as given (only the main server's is used, as in httpd). */
  typesConfig: string | undefined;
}

function emptyInfo(): ExtensionInfo {
  return {
    forcedType: undefined, encodingType: undefined, languageType: undefined, handler: undefined,
    charsetType: undefined, inputFilters: undefined, outputFilters: undefined,
  };
}

/** ap_str_tolower: ASCII letters only. */
export function asciiLower(s: string): string {
  let needs = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) { needs = true; break; }
  }
  if (!needs) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    out += c >= 65 && c <= 90 ? String.fromCharCode(c + 32) : s[i];
  }
  return out;
}

// ---- configuration ------------------------------------------------------------------------

function createMimeDirConfig(): MimeDirConfig {
  return {
    extensionMappings: undefined,
    removeMappings: undefined,
    defaultLanguage: undefined,
    multimatch: MULTIMATCH_UNSET,
    usePathInfo: 2,
  };
}

/** merge_mime_dir_configs. */
export function mergeMimeDirConfig(base: Readonly<MimeDirConfig>, add: Readonly<MimeDirConfig>): MimeDirConfig {
  let mappings: Map<string, ExtensionInfo> | undefined;
  if (base.extensionMappings && add.extensionMappings) {
    // apr_hash_merge(add, base, overlay): every key of either; both → base overlaid by add.
    mappings = new Map(base.extensionMappings);
    for (const [ext, info] of add.extensionMappings) {
      const b = base.extensionMappings.get(ext);
      if (!b) {
        mappings.set(ext, info);
        continue;
      }
      const merged: ExtensionInfo = { ...b };
      for (const f of EXTENSION_FIELDS) if (info[f] !== undefined) merged[f] = info[f];
      mappings.set(ext, merged);
    }
  } else {
    mappings = base.extensionMappings ?? add.extensionMappings;
    if (mappings && add.removeMappings) mappings = new Map(mappings);
  }
  if (mappings && add.removeMappings) {
    for (const { ext, field } of add.removeMappings) {
      const info = mappings.get(ext);
      if (info && info[field] !== undefined) mappings.set(ext, { ...info, [field]: undefined });
    }
  }
  return {
    extensionMappings: mappings,
    removeMappings: undefined,
    defaultLanguage: add.defaultLanguage ?? base.defaultLanguage,
    multimatch: add.multimatch !== MULTIMATCH_UNSET ? add.multimatch : base.multimatch,
    usePathInfo: (add.usePathInfo & 2) === 0 ? add.usePathInfo : base.usePathInfo,
  } satisfies { [K in keyof Required<MimeDirConfig>]: MimeDirConfig[K] };
}

/** add_extension_info: value and extension lowercased, one leading dot dropped. */
function addExtensionInfo(dir: MimeDirConfig, field: ExtensionField, value: string, ext: string): undefined {
  let key = asciiLower(ext);
  if (key.startsWith('.')) key = key.slice(1);
  if (!dir.extensionMappings) dir.extensionMappings = new Map();
  let info = dir.extensionMappings.get(key);
  if (!info) {
    info = emptyInfo();
    dir.extensionMappings.set(key, info);
  }
  info[field] = asciiLower(value);
  return undefined;
}

/** remove_extension_info: recorded here, applied when this section is merged over another. */
function removeExtensionInfo(dir: MimeDirConfig, field: ExtensionField, ext: string): undefined {
  const name = asciiLower(ext.startsWith('.') ? ext.slice(1) : ext);
  if (!dir.removeMappings) dir.removeMappings = [];
  dir.removeMappings.push({ ext: name, field });
  return undefined;
}

type Cmd = CmdParms<MimeServerConfig, MimeDirConfig>;

const adder = (field: ExtensionField) =>
  (cmd: Cmd, value: string, ext: string): undefined => addExtensionInfo(cmd.dir, field, value, ext);
const remover = (field: ExtensionField) =>
  (cmd: Cmd, ext: string): undefined => removeExtensionInfo(cmd.dir, field, ext);

function multiviewsMatch(cmd: Cmd, include: string): string | undefined {
  // NOT_IN_LOCATION, worded as httpd words it.
  const inLocation = [...cmd.scope.parents].reverse().find((p) => /^<location(match)?$/i.test(p));
  if (inLocation !== undefined) return `MultiviewsMatch cannot occur within ${inLocation}> section`;
  const m = cmd.dir;
  const v = include.toLowerCase();
  if (v === 'any') {
    if (m.multimatch && (m.multimatch & ~MULTIMATCH_ANY)) return 'Any is incompatible with NegotiatedOnly, Filters and Handlers';
    m.multimatch |= MULTIMATCH_ANY;
  } else if (v === 'negotiatedonly') {
    if (m.multimatch && (m.multimatch & ~MULTIMATCH_NEGOTIATED)) return 'NegotiatedOnly is incompatible with Any, Filters and Handlers';
    m.multimatch |= MULTIMATCH_NEGOTIATED;
  } else if (v === 'filters') {
    if (m.multimatch && (m.multimatch & (MULTIMATCH_NEGOTIATED | MULTIMATCH_ANY))) return 'Filters is incompatible with Any and NegotiatedOnly';
    m.multimatch |= MULTIMATCH_FILTERS;
  } else if (v === 'handlers') {
    if (m.multimatch && (m.multimatch & (MULTIMATCH_NEGOTIATED | MULTIMATCH_ANY))) return 'Handlers is incompatible with Any and NegotiatedOnly';
    m.multimatch |= MULTIMATCH_HANDLERS;
  } else {
    return `Unrecognized option '${include}'`;
  }
  return undefined;
}

// ---- TypesConfig --------------------------------------------------------------------------

/** Parses a mime.types file as mime_post_config does: per logical line, the first word is
 *  the type and every further word an extension (lowercased); later lines win. */
export function parseMimeTypes(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of splitLogicalLines(text)) {
    const l = line.text;
    if (l === '' || l.startsWith('#')) continue;
    const words = splitWords(l);
    const ct = words[0]!;
    for (let i = 1; i < words.length; i++) map.set(asciiLower(words[i]!), ct);
  }
  return map;
}

const SCRATCH_KEY = 'mime_module:types';

/** The configuration's TypesConfig map (empty before post_config ran). */
export function typesMap(ctx: ConfigContext): Map<string, string> {
  return ctx.getScratch(SCRATCH_KEY, () => new Map<string, string>());
}

function mimePostConfig(ctx: ConfigContext): string | undefined {
  const sconf = self.server(ctx.mainServer);
  const file = ctx.serverRootRelative(sconf?.typesConfig ?? DEFAULT_TYPES_CONFIG);
  let text: string;
  try {
    text = fs.readFileSync(file, 'latin1');
  } catch (e) {
    if (APLOG_ERR <= levelFor(ctx.startupLogLevel, 'mime')) {
      ctx.startupLog.write({
        module: 'mime', level: APLOG_ERR, errno: errnoOf(e),
        message: `AH01597: could not open mime types config file ${file}.`,
      });
    }
    return 'AH00016: Configuration Failed';
  }
  const parsed = parseMimeTypes(text);
  const map = typesMap(ctx);
  map.clear();
  for (const [k, v] of parsed) map.set(k, v);
  return undefined;
}

// ---- content type analysis (analyze_ct) ----------------------------------------------------

interface ContentType {
  type: string;
  subtype: string;
  params: { attr: string; val: string }[];
}

const TSPECIAL = '()<>@,;:\\"/[]?=';
const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
const isToken = (c: string): boolean => {
  const code = c.charCodeAt(0);
  return code > 32 && code < 127 && !TSPECIAL.includes(c);
};
const isQtext = (c: string): boolean => c.charCodeAt(0) < 128 && c !== '"' && c !== '\\' && c !== '\n';

/** analyze_ct: splits "type/subtype; a=b" or returns a warning (AHnnnnn: text). */
export function analyzeContentType(s: string): ContentType | { warning: string } {
  let cp = 0;
  const at = (i: number): string | undefined => s[i];
  while (isSpace(at(cp))) cp++;
  if (cp >= s.length) return { warning: `AH01598: mod_mime: analyze_ct: cannot get media type from '${s}'` };
  const typeStart = cp;
  do cp++; while (cp < s.length && s[cp] !== '/' && !isSpace(s[cp]) && s[cp] !== ';');
  if (cp >= s.length || s[cp] === ';') return { warning: `AH01599: Cannot get media type from '${s}'` };
  while (isSpace(at(cp))) cp++;
  if (s[cp] !== '/') return { warning: `AH01600: mod_mime: analyze_ct: cannot get media type from '${s}'` };
  // httpd keeps the type up to the '/' (including any white space before it).
  const type = s.slice(typeStart, cp);
  cp++;
  while (isSpace(at(cp))) cp++;
  if (cp >= s.length) return { warning: 'AH01601: Cannot get media subtype.' };
  const subStart = cp;
  do cp++; while (cp < s.length && !isSpace(s[cp]) && s[cp] !== ';');
  const subtype = s.slice(subStart, cp);
  while (isSpace(at(cp))) cp++;
  const ct: ContentType = { type, subtype, params: [] };
  if (cp >= s.length) return ct;

  cp++; // the ';'
  while (s[cp] === ' ' || s[cp] === '\t' || s[cp] === '\n') cp++;
  if (cp >= s.length) return { warning: 'AH01602: Cannot get media parameter.' };
  let mp = cp;
  let attribute: string | undefined;
  let quoted = false;
  const trimDup = (a: number, b: number): string => s.slice(a, b).replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, '');
  while (cp < s.length) {
    if (attribute === undefined) {
      const c = s[cp]!;
      if (isToken(c)) { cp++; continue; }
      if (c === ' ' || c === '\t' || c === '\n') { cp++; continue; }
      if (c === '=') {
        attribute = trimDup(mp, cp);
        if (attribute === '') return { warning: 'AH01603: Cannot get media parameter.' };
        cp++;
        while (s[cp] === ' ' || s[cp] === '\t' || s[cp] === '\n') cp++;
        if (cp >= s.length) return { warning: 'AH01604: Cannot get media parameter.' };
        mp = cp;
        continue;
      }
      return { warning: 'AH01605: Cannot get media parameter.' };
    }
    if (mp === cp) {
      if (s[cp] === '"') { quoted = true; cp++; } else quoted = false;
    }
    if (quoted) {
      while (quoted && cp < s.length) {
        const c = s[cp]!;
        if (isQtext(c)) cp++;
        else if (c === '\\' && cp + 1 < s.length && s.charCodeAt(cp + 1) < 128) cp += 2;
        else if (c === '"') {
          cp++;
          while (s[cp] === ' ' || s[cp] === '\t' || s[cp] === '\n') cp++;
          if (cp < s.length && s[cp] !== ';') return { warning: 'AH01606: Cannot get media parameter.' };
          quoted = false;
        } else return { warning: 'AH01607: Cannot get media parameter.' };
      }
    } else {
      for (;;) {
        if (cp < s.length && isToken(s[cp]!)) cp++;
        else if (cp >= s.length || s[cp] === ';') break;
        else return { warning: 'AH01608: Cannot get media parameter.' };
      }
    }
    const value = trimDup(mp, cp);
    if (value === '') return { warning: 'AH01609: Cannot get media parameter.' };
    ct.params.push({ attr: attribute, val: value });
    quoted = false;
    attribute = undefined;
    if (cp >= s.length) break;
    cp++;
    mp = cp;
  }
  return ct;
}

// ---- the type checker (find_ct) -------------------------------------------------------------

/** What find_ct decided, applied to the request by the hook (kept separate for tests). */
export interface MimeResult {
  contentType: string | undefined;
  contentEncoding: string | undefined;
  contentLanguages: string[];
  handler: string | undefined;
  outputFilters: string[];
  inputFilters: string[];
  /** File name parts that carried no metadata (base name first), when any part did. */
  exceptions: string[] | undefined;
  warnings: string[];
}

/** find_ct's walk over the file name's extensions. `r` holds the values already set. */
export function findContentType(
  resourceName: string,
  conf: Readonly<MimeDirConfig>,
  types: ReadonlyMap<string, string>,
  start: { contentType: string | undefined; contentEncoding: string | undefined; contentLanguages: readonly string[]; handler: string | undefined },
): MimeResult {
  const res: MimeResult = {
    contentType: start.contentType,
    contentEncoding: start.contentEncoding,
    contentLanguages: start.contentLanguages.slice(),
    handler: start.handler,
    outputFilters: [],
    inputFilters: [],
    exceptions: undefined,
    warnings: [],
  };
  let charset: string | undefined;
  let foundMetadata = false;
  const slash = resourceName.lastIndexOf('/');
  let fn = slash < 0 ? resourceName : resourceName.slice(slash + 1);

  // The base name is the first exception; leading dots belong to it (".png" is no png).
  let lead = 0;
  while (fn[lead] === '.') lead++;
  const dot = fn.indexOf('.', lead);
  const exceptions: string[] = [];
  if (dot >= 0) {
    exceptions.push(fn.slice(0, dot));
    fn = fn.slice(dot + 1);
  } else {
    exceptions.push(fn);
    fn = '';
  }
  const mappings = conf.extensionMappings;
  if (fn !== '') {
    for (const extcase of fn.split('.')) {
      if (extcase === '') continue; // "bad..html"
      const ext = asciiLower(extcase);
      let found = false;
      const exinfo = mappings?.get(ext);
      if (exinfo === undefined || exinfo.forcedType === undefined) {
        const type = types.get(ext);
        if (type !== undefined) {
          res.contentType = type;
          found = true;
        }
      }
      if (exinfo !== undefined) {
        // An empty forced type is RemoveType: no type from TypesConfig either.
        if (exinfo.forcedType) {
          res.contentType = exinfo.forcedType;
          found = true;
        }
        if (exinfo.charsetType !== undefined) {
          charset = exinfo.charsetType;
          found = true;
        }
        if (exinfo.languageType !== undefined) {
          res.contentLanguages.push(exinfo.languageType);
          found = true;
        }
        if (exinfo.encodingType !== undefined) {
          res.contentEncoding = res.contentEncoding ? `${res.contentEncoding}, ${exinfo.encodingType}` : exinfo.encodingType;
          found = true;
        }
        // Handlers and filters are no negotiation metadata unless MultiviewsMatch says so.
        if (exinfo.handler !== undefined) {
          res.handler = exinfo.handler;
          if (conf.multimatch & MULTIMATCH_HANDLERS) found = true;
        }
        if (exinfo.inputFilters !== undefined) {
          for (const f of exinfo.inputFilters.split(';')) if (f !== '') res.inputFilters.push(f);
          if (conf.multimatch & MULTIMATCH_FILTERS) found = true;
        }
        if (exinfo.outputFilters !== undefined) {
          for (const f of exinfo.outputFilters.split(';')) if (f !== '') res.outputFilters.push(f);
          if (conf.multimatch & MULTIMATCH_FILTERS) found = true;
        }
      }
      if (found || (conf.multimatch & MULTIMATCH_ANY)) foundMetadata = true;
      else exceptions.push(extcase);
    }
  }
  if (foundMetadata) res.exceptions = exceptions;

  if (res.contentType !== undefined) {
    const ctp = analyzeContentType(res.contentType);
    if ('warning' in ctp) {
      res.warnings.push(ctp.warning);
    } else {
      let ct = `${ctp.type}/${ctp.subtype}`;
      let override = false;
      for (const p of ctp.params) {
        if (charset !== undefined && p.attr === 'charset') {
          if (!override) {
            ct += `; charset=${charset}`;
            override = true;
          }
        } else {
          ct += `; ${p.attr}=${p.val}`;
        }
      }
      if (charset !== undefined && !override) ct += `; charset=${charset}`;
      res.contentType = ct;
    }
  }
  if (res.contentLanguages.length === 0 && conf.defaultLanguage !== undefined) {
    res.contentLanguages.push(conf.defaultLanguage);
  }
  return res;
}

/** find_ct's answer depends only on the last path segment and the merged configuration: it
 *  is computed once per (configuration, name) when the request starts with nothing set. */
const ctMemo = new WeakMap<Readonly<MimeDirConfig>, Map<string, MimeResult>>();
function memoFindContentType(
  resourceName: string, conf: Readonly<MimeDirConfig>, types: ReadonlyMap<string, string>, start: Parameters<typeof findContentType>[3],
): MimeResult {
  const slash = resourceName.lastIndexOf('/');
  const name = slash < 0 ? resourceName : resourceName.slice(slash + 1);
  let m = ctMemo.get(conf);
  if (m === undefined) { m = new Map(); ctMemo.set(conf, m); }
  let res = m.get(name);
  if (res === undefined) {
    res = findContentType(name, conf, types, start);
    if (m.size >= 4096) m.clear();
    m.set(name, res);
  }
  return res;
}

const NOTHING_SET = { contentType: undefined, contentEncoding: undefined, contentLanguages: [], handler: undefined } as const;

/** The note mod_negotiation reads: the name parts that carried no metadata, '/'-joined
 *  (httpd stores an array; '/' cannot occur in a file name part). */
export const MIME_EXCEPTIONS_NOTE = 'ap-mime-exceptions-list';

function findCt(r: Request): number {
  if (r.finfo !== null && r.finfo.isDirectory()) {
    r.contentType = DIR_MAGIC_TYPE;
    return OK;
  }
  if (r.filename === '') return DECLINED;
  const conf = self.dir(r);
  const resourceName = conf.usePathInfo & 1 ? r.filename + r.pathInfo : r.filename;
  // Remembered when nothing but a handler is set yet (a proxied request has its handler from
  // the translation): the handler only stands until an extension names another, so the answer
  // found without it is the answer with it, the handler kept where no extension set one.
  const memo = r.contentType === undefined && r.contentEncoding === undefined && r.contentLanguages.length === 0;
  const res = memo
    ? memoFindContentType(resourceName, conf, typesMap(r.rt.ctx), NOTHING_SET)
    : findContentType(resourceName, conf, typesMap(r.rt.ctx), r);
  r.contentType = res.contentType;
  r.contentEncoding = res.contentEncoding;
  // The answer may be the remembered one: the request gets its own list.
  if (res.contentLanguages.length !== 0) r.contentLanguages = res.contentLanguages.slice();
  else if (r.contentLanguages.length !== 0) r.contentLanguages = [];
  // An extension's handler is for requests served here: a proxied one keeps proxy-server.
  if (r.proxyreq === 0 && (!memo || res.handler !== undefined)) r.handler = res.handler;
  for (const name of res.inputFilters) {
    if (!r.rt.addInputFilter(r, name)) r.log('core', APLOG_ERR, `AH00082: an unknown filter was not added: ${name}`);
  }
  for (const name of res.outputFilters) {
    if (!r.rt.addOutputFilter(r, name)) r.log('core', APLOG_ERR, `AH00082: an unknown filter was not added: ${name}`);
  }
  if (res.exceptions !== undefined) r.notes.set(MIME_EXCEPTIONS_NOTE, res.exceptions.join('/'));
  for (const w of res.warnings) serverLog(r, APLOG_WARNING, w);
  // find_ct: no content type found leaves the phase to the next type checker (mod_lua's).
  return r.contentType === undefined ? DECLINED : OK;
}

/** ap_log_error on the request's server (no client part). */
function serverLog(r: Request, level: number, message: string): void {
  const s = r.server;
  if (level > levelFor(s.logLevel, 'mime')) return;
  s.errorLog.write({ module: 'mime', level, message });
}

// ---- the module -----------------------------------------------------------------------------

const self = defineModule<MimeServerConfig, MimeDirConfig>({
  name: 'mime_module',
  source: 'mod_mime.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ typesConfig: undefined }),
  createDirConfig: createMimeDirConfig,
  mergeDirConfig: mergeMimeDirConfig,
  directives: [
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE2'>({
      name: 'AddCharset', args: 'ITERATE2', where: OR_FILEINFO,
      help: 'a charset (e.g., iso-2022-jp), followed by one or more file extensions',
      handler: adder('charsetType'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE2'>({
      name: 'AddEncoding', args: 'ITERATE2', where: OR_FILEINFO,
      help: 'an encoding (e.g., gzip), followed by one or more file extensions',
      handler: adder('encodingType'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE2'>({
      name: 'AddHandler', args: 'ITERATE2', where: OR_FILEINFO,
      help: 'a handler name followed by one or more file extensions',
      handler: adder('handler'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE2'>({
      name: 'AddInputFilter', args: 'ITERATE2', where: OR_FILEINFO,
      help: 'input filter name (or ; delimited names) followed by one or more file extensions',
      handler: adder('inputFilters'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE2'>({
      name: 'AddLanguage', args: 'ITERATE2', where: OR_FILEINFO,
      help: 'a language (e.g., fr), followed by one or more file extensions',
      handler: adder('languageType'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE2'>({
      name: 'AddOutputFilter', args: 'ITERATE2', where: OR_FILEINFO,
      help: 'output filter name (or ; delimited names) followed by one or more file extensions',
      handler: adder('outputFilters'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE2'>({
      name: 'AddType', args: 'ITERATE2', where: OR_FILEINFO,
      help: 'a mime type followed by one or more file extensions',
      handler: adder('forcedType'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'TAKE1'>({
      name: 'DefaultLanguage', args: 'TAKE1', where: OR_FILEINFO,
      help: 'language to use for documents with no other language file extension',
      handler: (cmd, lang) => { cmd.dir.defaultLanguage = lang; },
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE'>({
      name: 'MultiviewsMatch', args: 'ITERATE', where: OR_FILEINFO,
      help: 'NegotiatedOnly (default), Handlers and/or Filters, or Any',
      handler: multiviewsMatch,
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE'>({
      name: 'RemoveCharset', args: 'ITERATE', where: OR_FILEINFO, help: 'one or more file extensions',
      handler: remover('charsetType'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE'>({
      name: 'RemoveEncoding', args: 'ITERATE', where: OR_FILEINFO, help: 'one or more file extensions',
      handler: remover('encodingType'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE'>({
      name: 'RemoveHandler', args: 'ITERATE', where: OR_FILEINFO, help: 'one or more file extensions',
      handler: remover('handler'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE'>({
      name: 'RemoveInputFilter', args: 'ITERATE', where: OR_FILEINFO, help: 'one or more file extensions',
      handler: remover('inputFilters'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE'>({
      name: 'RemoveLanguage', args: 'ITERATE', where: OR_FILEINFO, help: 'one or more file extensions',
      handler: remover('languageType'),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE'>({
      name: 'RemoveOutputFilter', args: 'ITERATE', where: OR_FILEINFO, help: 'one or more file extensions',
      handler: remover('outputFilters'),
    }),
    // RemoveType adds an empty type so that it also hides the TypesConfig entry.
    directive<MimeServerConfig, MimeDirConfig, 'ITERATE'>({
      name: 'RemoveType', args: 'ITERATE', where: OR_FILEINFO, help: 'one or more file extensions',
      handler: (cmd, ext) => addExtensionInfo(cmd.dir, 'forcedType', '', ext),
    }),
    directive<MimeServerConfig, MimeDirConfig, 'TAKE1'>({
      name: 'TypesConfig', args: 'TAKE1', where: RSRC_CONF, help: 'the MIME types config file',
      handler: (cmd, file) => { cmd.srv.typesConfig = file; },
    }),
    directive<MimeServerConfig, MimeDirConfig, 'FLAG'>({
      name: 'ModMimeUsePathInfo', args: 'FLAG', where: ACCESS_CONF,
      help: "Set to 'yes' to allow mod_mime to use path info for type checking",
      handler: (cmd, on) => { cmd.dir.usePathInfo = on ? 1 : 0; },
    }),
  ],
  hooks: {
    typeChecker: { fn: findCt, order: HOOK_MIDDLE },
  },
  configHooks: {
    postConfig: mimePostConfig,
  },
});

export default self;
