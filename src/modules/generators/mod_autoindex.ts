// mod_autoindex (modules/generators/mod_autoindex.c): the directory listing for a directory
// that mod_dir found no index file for (handler httpd/unix-directory), when Options Indexes
// allows it; AH01276 and 403 otherwise.
//
// The listing has three forms: a plain <ul> (the default), FancyIndexing (a <pre> block with
// columns) and HTMLTable (a <table>, with ids and classes when IndexStyleSheet is set). Every
// entry is looked up through a subrequest, so access control, mod_mime types and encodings
// apply to it: entries the subrequest refuses are left out (ShowForbidden keeps 401/403 ones).
// The query string can choose the sort column (C=N|M|S|D), the order (O=A|D), the form
// (F=0|1|2), version sorting (V=0|1) and a wildcard filter (P=pattern) unless IgnoreClient.
// Output layout measured on Apache 2.4.71 (plain, fancy, table, XHTML, style sheet).

import * as fs from 'node:fs';
import {
  DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_ALL, OR_INDEXES,
  defineModule, directive, type MaybePromise, DIR_MAGIC_TYPE,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { splitWords } from '../../server/config/lexer.js';
import type { Request } from '../../server/request/request.js';
import { coreDir } from '../../server/core/core-module.js';
import { OPT_INDEXES } from '../../server/core/config.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { EOS, type Bucket } from '../../server/filters.js';
import { toHttpDate } from '../../server/log/time.js';
import { makeEtag, etagBitsFor } from '../../server/http/etag.js';
import { escapeUri as escapePath } from '../../lib/urlencoded.js';
import { fsPath, mtimeMicrosOf } from '../../server/request/stat-cache.js';
import { strfsize } from '../../lib/apr-strings.js';
import { unescapeUrlStrict } from '../../lib/urlencoded.js';

// ---- options ------------------------------------------------------------------------------
export const NO_OPTIONS = 1 << 0;
export const ICONS_ARE_LINKS = 1 << 1;
export const SCAN_HTML_TITLES = 1 << 2;
export const SUPPRESS_ICON = 1 << 3;
export const SUPPRESS_LAST_MOD = 1 << 4;
export const SUPPRESS_SIZE = 1 << 5;
export const SUPPRESS_DESC = 1 << 6;
export const SUPPRESS_PREAMBLE = 1 << 7;
export const SUPPRESS_COLSORT = 1 << 8;
export const SUPPRESS_RULES = 1 << 9;
export const FOLDERS_FIRST = 1 << 10;
export const VERSION_SORT = 1 << 11;
export const TRACK_MODIFIED = 1 << 12;
export const FANCY_INDEXING = 1 << 13;
export const TABLE_INDEXING = 1 << 14;
export const IGNORE_CLIENT = 1 << 15;
export const IGNORE_CASE = 1 << 16;
export const EMIT_XHTML = 1 << 17;
export const SHOW_FORBIDDEN = 1 << 18;
export const ADDALTCLASS = 1 << 19;
export const OLD_DATE_FORMAT = 1 << 20;

const OPTION_WORDS: Record<string, number> = {
  fancyindexing: FANCY_INDEXING, foldersfirst: FOLDERS_FIRST, htmltable: TABLE_INDEXING,
  iconsarelinks: ICONS_ARE_LINKS, ignorecase: IGNORE_CASE, ignoreclient: IGNORE_CLIENT,
  scanhtmltitles: SCAN_HTML_TITLES, suppresscolumnsorting: SUPPRESS_COLSORT,
  suppressdescription: SUPPRESS_DESC, suppresshtmlpreamble: SUPPRESS_PREAMBLE,
  suppressicon: SUPPRESS_ICON, suppresslastmodified: SUPPRESS_LAST_MOD, suppresssize: SUPPRESS_SIZE,
  suppressrules: SUPPRESS_RULES, trackmodified: TRACK_MODIFIED, versionsort: VERSION_SORT,
  xhtml: EMIT_XHTML, showforbidden: SHOW_FORBIDDEN, addaltclass: ADDALTCLASS,
  useolddateformat: OLD_DATE_FORMAT,
};

/** NameWidth / DescriptionWidth: a fixed width, '*' (fit the longest), or not set. */
export type Adjust = 'fixed' | 'adjust' | 'unset';

const DEFAULT_ICON_WIDTH = 20;
const DEFAULT_ICON_HEIGHT = 22;
const DEFAULT_NAME_WIDTH = 23;
const DEFAULT_DESC_WIDTH = 23;
/** apr_brigade_write's heap bucket: output is passed down in pieces of about this size. */
const BUCKET_SIZE = 8000;

type ItemType = 'path' | 'type' | 'encoding' | 'none';

/** An icon, alt text, IndexIgnore, HeaderName or ReadmeName entry (httpd's struct item). */
export interface Item {
  readonly type: ItemType;
  /** What it applies to: a file pattern, MIME type or encoding ('' = everything). */
  readonly applyTo: string;
  /** The section path it was configured in, with '*' appended. */
  readonly applyPath: string;
  readonly data: string | undefined;
}

export interface DescEntry {
  readonly pattern: string;
  /** Not readonly: a listing that shortens it shortens the configured text for good, as
   *  httpd does (terminate_description writes into the configuration's string), so later
   *  listings in the same process show it cut even where the width would allow more. */
  description: string;
  readonly fullPath: boolean;
  readonly wildcards: boolean;
}

export interface AutoindexDir {
  defaultIcon: string | undefined;
  styleSheet: string | undefined;
  headInsert: string | undefined;
  opts: number;
  incrementedOpts: number;
  decrementedOpts: number;
  nameWidth: number;
  nameAdjust: Adjust;
  descWidth: number;
  descAdjust: Adjust;
  iconWidth: number;
  iconHeight: number;
  /** IndexOrderDefault: 'N' 'M' 'S' 'D' and 'A' 'D', '' when unset. */
  defaultKeyid: string;
  defaultDirection: string;
  ctype: string | undefined;
  charset: string | undefined;
  /** IndexIgnoreReset: this section's IndexIgnore list does not add to the inherited one. */
  ignoreNoInherit: boolean | undefined;
  iconList: readonly Item[];
  altList: readonly Item[];
  descList: readonly DescEntry[];
  ignList: readonly Item[];
  hdrList: readonly Item[];
  rdmeList: readonly Item[];
}

type Cmd = CmdParms<unknown, AutoindexDir>;

export function createDirConfig(): AutoindexDir {
  return {
    defaultIcon: undefined, styleSheet: undefined, headInsert: undefined,
    opts: 0, incrementedOpts: 0, decrementedOpts: 0,
    nameWidth: DEFAULT_NAME_WIDTH, nameAdjust: 'unset', descWidth: DEFAULT_DESC_WIDTH, descAdjust: 'unset',
    iconWidth: 0, iconHeight: 0, defaultKeyid: '', defaultDirection: '',
    ctype: undefined, charset: undefined, ignoreNoInherit: undefined,
    iconList: [], altList: [], descList: [], ignList: [], hdrList: [], rdmeList: [],
  };
}

/** merge_autoindex_configs: lists are the section's entries then the inherited ones. */
export function mergeDirConfig(base: Readonly<AutoindexDir>, add: Readonly<AutoindexDir>): AutoindexDir {
  let opts: number;
  let incrementedOpts: number;
  let decrementedOpts: number;
  if (add.opts & NO_OPTIONS) {
    // 'None' here also stops incremental settings from being inherited further down.
    opts = NO_OPTIONS;
    incrementedOpts = 0;
    decrementedOpts = 0;
  } else {
    if (add.opts === 0) {
      // Only incremental settings here: they apply on top of the inherited ones.
      incrementedOpts = (base.incrementedOpts | add.incrementedOpts) & ~add.decrementedOpts;
      decrementedOpts = base.decrementedOpts | add.decrementedOpts;
      opts = base.opts & ~NO_OPTIONS;
    } else {
      // Absolute settings here are the new base.
      incrementedOpts = add.incrementedOpts;
      decrementedOpts = add.decrementedOpts;
      opts = add.opts;
    }
    opts |= incrementedOpts;
    opts &= ~decrementedOpts;
  }
  const nameInherit = add.nameAdjust === 'unset';
  const descInherit = add.descAdjust === 'unset';
  return {
    defaultIcon: add.defaultIcon ?? base.defaultIcon,
    styleSheet: add.styleSheet ?? base.styleSheet,
    headInsert: add.headInsert ?? base.headInsert,
    opts, incrementedOpts, decrementedOpts,
    nameWidth: nameInherit ? base.nameWidth : add.nameWidth,
    nameAdjust: nameInherit ? base.nameAdjust : add.nameAdjust,
    descWidth: descInherit ? base.descWidth : add.descWidth,
    descAdjust: descInherit ? base.descAdjust : add.descAdjust,
    iconWidth: add.iconWidth || base.iconWidth,
    iconHeight: add.iconHeight || base.iconHeight,
    defaultKeyid: add.defaultKeyid || base.defaultKeyid,
    defaultDirection: add.defaultDirection || base.defaultDirection,
    ctype: add.ctype ?? base.ctype,
    charset: add.charset ?? base.charset,
    // Not carried into the merged configuration: it only acts where its section is merged
    // onto what it inherits (so after the sections of a walk are merged together, the server
    // level's IndexIgnore list is added again).
    ignoreNoInherit: undefined,
    iconList: add.iconList.concat(base.iconList),
    altList: add.altList.concat(base.altList),
    descList: add.descList.concat(base.descList),
    ignList: add.ignoreNoInherit === true ? add.ignList : add.ignList.concat(base.ignList),
    hdrList: add.hdrList.concat(base.hdrList),
    rdmeList: add.rdmeList.concat(base.rdmeList),
  } satisfies { [K in keyof Required<AutoindexDir>]: AutoindexDir[K] };
}

// ---- directives -----------------------------------------------------------------------------

/** ap_is_matchexp: the string has a '*' or '?'. */
function isMatchExp(s: string): boolean {
  return s.includes('*') || s.includes('?');
}

function makeItem(type: ItemType, to: string | undefined, path: string | undefined, data: string | undefined): Item {
  const t = to ?? '';
  const applyTo = type === 'path' && !isMatchExp(t) ? '*' + t : t;
  return { type, applyTo, applyPath: (path ?? '') + '*', data };
}

function altTarget(type: ItemType, to: string): string {
  if (type === 'path' && to === '**DIRECTORY**') return '^^DIRECTORY^^';
  if (type === 'encoding') return to.toLowerCase();
  return to;
}

function addAlt(type: ItemType) {
  return (cmd: Cmd, alt: string, to: string): undefined => {
    cmd.dir.altList = [...cmd.dir.altList, makeItem(type, altTarget(type, to), cmd.path, alt)];
    return undefined;
  };
}

function addIcon(type: ItemType) {
  return (cmd: Cmd, icon: string, to: string): string | undefined => {
    let iconData = icon;
    if (icon.startsWith('(')) {
      // "(ALT,/icon.gif)": the alt text and the icon together.
      const close = icon.indexOf(')');
      if (close < 0) return 'missing closing paren';
      const comma = icon.indexOf(',');
      const altEnd = comma >= 0 ? comma : icon.length;
      const alt = icon.slice(1, altEnd).replace(/\).*$/, '');
      iconData = comma >= 0 ? icon.slice(comma + 1, close) : '';
      addAlt(type)(cmd, alt, to);
    }
    cmd.dir.iconList = [...cmd.dir.iconList, makeItem(type, altTarget(type, to), cmd.path, iconData)];
    return undefined;
  };
}

/** add_desc: a pattern with '/' or wildcards is matched with fnmatch, else as a substring. */
function addDesc(cmd: Cmd, desc: string, to: string): undefined {
  const fullPath = to.includes('/');
  const wildcards = fullPath || /[*?[]/.test(to);
  const pattern = wildcards ? (fullPath ? '*/' : '*') + to + '*' : to;
  cmd.dir.descList = [...cmd.dir.descList, { pattern, description: desc, fullPath, wildcards }];
  return undefined;
}

function addIgnore(cmd: Cmd, ext: string): undefined {
  cmd.dir.ignList = [...cmd.dir.ignList, makeItem('none', ext, cmd.path, undefined)];
  return undefined;
}

function addHeader(list: 'hdrList' | 'rdmeList') {
  return (cmd: Cmd, name: string): undefined => {
    cmd.dir[list] = [...cmd.dir[list], makeItem('none', undefined, cmd.path, name)];
    return undefined;
  };
}

/** add_opts: absolute keywords set, +/- keywords adjust what is inherited. */
function addOpts(cmd: Cmd, raw: string): string | undefined {
  const d = cmd.dir;
  let opts = d.opts;
  let optsAdd = d.incrementedOpts;
  let optsRemove = d.decrementedOpts;
  for (const word of splitWords(raw)) {
    let w = word;
    let action = '';
    if (w.startsWith('+') || w.startsWith('-')) {
      action = w[0]!;
      w = w.slice(1);
    }
    const lw = w.toLowerCase();
    let option = OPTION_WORDS[lw] ?? 0;
    if (option === 0) {
      if (lw === 'none') {
        if (action !== '') return "Cannot combine '+' or '-' with 'None' keyword";
        opts = NO_OPTIONS;
        optsAdd = 0;
        optsRemove = 0;
      } else if (lw === 'iconwidth') {
        d.iconWidth = action !== '-' ? DEFAULT_ICON_WIDTH : 0;
      } else if (lw.startsWith('iconwidth=')) {
        if (action === '-') return "Cannot combine '-' with IconWidth=n";
        d.iconWidth = atoi(w.slice(10));
      } else if (lw === 'iconheight') {
        d.iconHeight = action !== '-' ? DEFAULT_ICON_HEIGHT : 0;
      } else if (lw.startsWith('iconheight=')) {
        if (action === '-') return "Cannot combine '-' with IconHeight=n";
        d.iconHeight = atoi(w.slice(11));
      } else if (lw === 'namewidth') {
        if (action !== '-') return "NameWidth with no value may only appear as '-NameWidth'";
        d.nameWidth = DEFAULT_NAME_WIDTH;
        d.nameAdjust = 'fixed';
      } else if (lw.startsWith('namewidth=')) {
        if (action === '-') return "Cannot combine '-' with NameWidth=n";
        if (w[10] === '*') d.nameAdjust = 'adjust';
        else {
          const width = atoi(w.slice(10));
          if (width && width < 5) return 'NameWidth value must be greater than 5';
          d.nameWidth = width;
          d.nameAdjust = 'fixed';
        }
      } else if (lw === 'descriptionwidth') {
        if (action !== '-') return "DescriptionWidth with no value may only appear as '-DescriptionWidth'";
        d.descWidth = DEFAULT_DESC_WIDTH;
        d.descAdjust = 'fixed';
      } else if (lw.startsWith('descriptionwidth=')) {
        if (action === '-') return "Cannot combine '-' with DescriptionWidth=n";
        if (w[17] === '*') d.descAdjust = 'adjust';
        else {
          const width = atoi(w.slice(17));
          if (width && width < 12) return 'DescriptionWidth value must be greater than 12';
          d.descWidth = width;
          d.descAdjust = 'fixed';
        }
      } else if (lw.startsWith('type=')) {
        d.ctype = w.slice(5);
      } else if (lw.startsWith('charset=')) {
        d.charset = w.slice(8);
      } else {
        return 'Invalid directory indexing option';
      }
      option = 0;
    }
    // Every keyword goes through this step, even those that set no option bit: an absolute
    // one (no +/-) forgets the +/- adjustments made so far.
    if (action === '') {
      opts |= option;
      optsAdd = 0;
      optsRemove = 0;
    } else if (action === '+') {
      optsAdd |= option;
      optsRemove &= ~option;
    } else {
      optsRemove |= option;
      optsAdd &= ~option;
    }
  }
  if ((opts & NO_OPTIONS) && (opts & ~NO_OPTIONS)) return "Cannot combine other IndexOptions keywords with 'None'";
  d.incrementedOpts = optsAdd;
  d.decrementedOpts = optsRemove;
  d.opts = opts;
  return undefined;
}

/** C's atoi: leading digits (with an optional sign), 0 when none. */
function atoi(s: string): number {
  const m = /^\s*([+-]?\d+)/.exec(s);
  return m ? parseInt(m[1]!, 10) : 0;
}

function setDefaultOrder(cmd: Cmd, direction: string, key: string): string | undefined {
  const dir = direction.toLowerCase();
  if (dir === 'ascending') cmd.dir.defaultDirection = 'A';
  else if (dir === 'descending') cmd.dir.defaultDirection = 'D';
  else return "First keyword must be 'Ascending' or 'Descending'";
  const k = key.toLowerCase();
  if (k === 'name') cmd.dir.defaultKeyid = 'N';
  else if (k === 'date') cmd.dir.defaultKeyid = 'M';
  else if (k === 'size') cmd.dir.defaultKeyid = 'S';
  else if (k === 'description') cmd.dir.defaultKeyid = 'D';
  else return "Second keyword must be 'Name', 'Date', 'Size', or 'Description'";
  return undefined;
}

function setString(field: 'defaultIcon' | 'styleSheet' | 'headInsert') {
  return (cmd: Cmd, value: string): undefined => {
    cmd.dir[field] = value;
    return undefined;
  };
}

// ---- matching -------------------------------------------------------------------------------

/** ap_strcmp_match / ap_strcasecmp_match: '*' and '?' wildcards; true on a match. */
export function strMatch(str: string, exp: string, caseless = false): boolean {
  const s = caseless ? str.toLowerCase() : str;
  const e = caseless ? exp.toLowerCase() : exp;
  return matchFrom(s, 0, e, 0);
}

function matchFrom(s: string, x: number, e: string, y: number): boolean {
  for (; y < e.length; ++y, ++x) {
    if (x >= s.length && e[y] !== '*') return false;
    if (e[y] === '*') {
      while (e[++y] === '*');
      if (y >= e.length) return true;
      while (x < s.length) {
        if (matchFrom(s, x++, e, y)) return true;
      }
      return false;
    }
    if (e[y] !== '?' && s[x] !== e[y]) return false;
  }
  return x >= s.length;
}

/** apr_fnmatch with no flags (or APR_FNM_PERIOD | NOESCAPE for the P= filter). */
export function fnmatch(pattern: string, name: string, opts: { period?: boolean; noescape?: boolean; caseless?: boolean } = {}): boolean {
  if (opts.period && name.startsWith('.') && !pattern.startsWith('.')) return false;
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) { re += '\\['; continue; }
      let body = pattern.slice(i + 1, end);
      if (body.startsWith('!') || body.startsWith('^')) body = '^' + body.slice(1);
      re += '[' + body.replace(/\\/g, '\\\\') + ']';
      i = end;
    } else if (c === '\\' && !opts.noescape && i + 1 < pattern.length) {
      re += pattern[++i]!.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(re + '$', opts.caseless ? 'is' : 's').test(name);
}

interface Probe {
  filename: string;
  contentType: string | undefined;
  contentEncoding: string | undefined;
}

/** find_item: the first entry whose section and pattern (or type/encoding) match. */
function findItem(p: Probe, list: readonly Item[], pathOnly: boolean): string | undefined {
  const path = p.filename;
  const ct = p.contentType !== undefined ? fieldNoParam(p.contentType) : undefined;
  for (const item of list) {
    if (path[0] !== '^' && !strMatch(path, item.applyPath)) continue;
    if (item.applyTo === '') return item.data;
    if (item.type === 'path' || path[0] === '^') {
      if (strMatch(path, item.applyTo)) return item.data;
    } else if (!pathOnly) {
      if (p.contentEncoding === undefined) {
        if (item.type === 'type' && ct !== undefined && strMatch(ct, item.applyTo, true)) return item.data;
      } else if (item.type === 'encoding' && strMatch(p.contentEncoding, item.applyTo, true)) {
        return item.data;
      }
    }
  }
  return undefined;
}

function findDefault(name: string, list: readonly Item[]): string | undefined {
  return findItem({ filename: name, contentType: undefined, contentEncoding: undefined }, list, true);
}

/** find_desc: the first AddDescription whose pattern matches (name only unless it has '/'). */
function findDesc(d: AutoindexDir, full: string): DescEntry | undefined {
  const slash = full.lastIndexOf('/');
  const only = slash < 0 ? full : full.slice(slash + 1);
  for (const t of d.descList) {
    const name = t.fullPath ? full : only;
    const found = t.wildcards ? fnmatch(t.pattern, name) : name.includes(t.pattern);
    if (found) return t;
  }
  return undefined;
}

/** ignore_entry: IndexIgnore patterns are matched against the file name. */
function ignoreEntry(d: AutoindexDir, path: string): boolean {
  const slash = path.lastIndexOf('/');
  const tt = slash < 0 ? path : path.slice(slash + 1);
  for (const item of d.ignList) {
    const s = item.applyTo.lastIndexOf('/');
    const ap = s < 0 ? item.applyTo : item.applyTo.slice(s + 1);
    if (strMatch(path, item.applyPath) && strMatch(tt, ap)) return true;
  }
  return false;
}

function fieldNoParam(v: string): string {
  const semi = v.indexOf(';');
  return semi < 0 ? v : v.slice(0, semi).replace(/\s+$/, '');
}

// ---- output ----------------------------------------------------------------------------------

/** Buffered output passed down in bucket-sized pieces, as ap_rputs does. */
class Out {
  private buf: string[] = [];
  private len = 0;
  constructor(private readonly r: Request) {}
  put(...parts: string[]): void {
    for (const s of parts) {
      if (this.len + s.length > BUCKET_SIZE && this.len > 0) this.pending.push(this.take());
      this.buf.push(s);
      this.len += s.length;
    }
  }
  readonly pending: string[] = [];
  private take(): string {
    const s = this.buf.join('');
    this.buf = [];
    this.len = 0;
    return s;
  }
  /** Sends what was written so far (a subrequest's output follows). */
  async flush(): Promise<void> {
    if (this.len > 0) this.pending.push(this.take());
    for (const s of this.pending.splice(0)) await this.r.write([{ kind: 'data', data: Buffer.from(s, 'latin1') }]);
  }
  async end(): Promise<void> {
    if (this.len > 0) this.pending.push(this.take());
    const parts = this.pending.splice(0);
    for (let i = 0; i < parts.length; i++) {
      const bb: Bucket[] = [{ kind: 'data', data: Buffer.from(parts[i]!, 'latin1') }];
      if (i === parts.length - 1) bb.push(EOS);
      await this.r.write(bb);
    }
    if (parts.length === 0) await this.r.write([EOS]);
  }
}

const DOCTYPE_HTML = '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n<html>\n';
const DOCTYPE_XHTML = '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN"\n"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">\n';

function emitPreamble(out: Out, d: AutoindexDir, xhtml: boolean, title: string): void {
  out.put(xhtml ? DOCTYPE_XHTML : DOCTYPE_HTML, ' <head>\n  <title>Index of ', title, '</title>\n');
  if (d.styleSheet !== undefined) {
    out.put('  <link rel="stylesheet" href="', d.styleSheet, '" type="text/css"', xhtml ? ' />\n' : '>\n');
  }
  if (d.headInsert !== undefined) out.put(d.headInsert);
  out.put(' </head>\n <body>\n');
}

/** do_emit_plain: a text file in a <pre> block with <, > and & escaped. */
function emitPlain(out: Out, text: string): void {
  out.put('<pre>\n', text.replace(/[<>&]/g, (c) => (c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&amp;')), '</pre>\n');
}

function isHtmlType(ct: string): boolean {
  const t = fieldNoParam(ct).toLowerCase();
  return t === 'text/html' || t === 'application/xhtml+xml' || t === 'text/x-server-parsed-html';
}

function readFile(file: string): string | undefined {
  try { return fs.readFileSync(fsPath(file), 'latin1'); } catch { return undefined; }
}

/** Looks a HeaderName/ReadmeName file up; only a regular file found with 200 counts. */
async function lookupDoc(r: Request, name: string | undefined, withArgs: boolean): Promise<Request | undefined> {
  if (name === undefined) return undefined;
  const uri = withArgs && r.args !== undefined ? `${name}?${r.args}` : name;
  const accept = r.headersIn.get('Accept');
  const acceptEnc = r.headersIn.get('Accept-Encoding');
  r.headersIn.set('Accept', 'text/html, text/plain');
  r.headersIn.unset('Accept-Encoding');
  let rr: Request | undefined;
  try {
    rr = await r.rt.lookupUri(r, uri);
  } finally {
    if (accept !== undefined) r.headersIn.set('Accept', accept); else r.headersIn.unset('Accept');
    if (acceptEnc !== undefined) r.headersIn.set('Accept-Encoding', acceptEnc);
  }
  if (rr.status !== 200 || !rr.filename || !rr.finfo || !rr.finfo.isFile()) return undefined;
  return rr;
}

/** emit_head: the preamble, the HeaderName file (HTML as is, text in <pre>) or the <h1>. */
async function emitHead(r: Request, out: Out, d: AutoindexDir, headerName: string | undefined, suppressAmble: boolean, xhtml: boolean, title: string): Promise<void> {
  let emitAmble = true;
  let emitH1 = true;
  const rr = await lookupDoc(r, headerName, true);
  if (rr && rr.contentType !== undefined) {
    if (isHtmlType(rr.contentType)) {
      emitAmble = false;
      emitH1 = false;
      if (!suppressAmble) emitPreamble(out, d, xhtml, title);
      const text = readFile(rr.filename);
      if (text === undefined) {
        emitAmble = suppressAmble;
        emitH1 = true;
      } else {
        // The subrequest's output goes out after what was written so far.
        await out.flush();
        out.put(text);
        await out.flush();
      }
    } else if (rr.contentType.slice(0, 5).toLowerCase() === 'text/') {
      const text = readFile(rr.filename);
      if (text !== undefined) {
        emitPreamble(out, d, xhtml, title);
        emitAmble = false;
        emitPlain(out, text);
        emitH1 = false;
      }
    }
  }
  if (emitAmble) emitPreamble(out, d, xhtml, title);
  if (emitH1) {
    out.put(d.styleSheet !== undefined ? '  <h1 id="indextitle">Index of ' : '<h1>Index of ', title, '</h1>\n');
  }
}

/** emit_tail: the ReadmeName file, the server signature unless a readme was shown, the end. */
async function emitTail(r: Request, out: Out, readmeName: string | undefined, suppressAmble: boolean): Promise<void> {
  let suppressPost = false;
  let suppressSig = false;
  const rr = await lookupDoc(r, readmeName, false);
  if (rr && rr.contentType !== undefined) {
    if (isHtmlType(rr.contentType)) {
      const text = readFile(rr.filename);
      if (text !== undefined) {
        await out.flush();
        out.put(text);
        await out.flush();
        suppressSig = true;
        suppressPost = suppressAmble;
      }
    } else if (rr.contentType.slice(0, 5).toLowerCase() === 'text/') {
      const text = readFile(rr.filename);
      if (text !== undefined) {
        emitPlain(out, text);
        suppressSig = true;
      }
    }
  }
  if (!suppressSig) out.put(r.rt.signature(r, ''));
  if (!suppressPost) out.put('</body></html>\n');
}

/** One listed entry (httpd's struct ent). */
interface Ent {
  name: string;
  icon: string | undefined;
  alt: string | undefined;
  desc: string | undefined;
  /** The AddDescription the text came from (see DescEntry.description). */
  descSource: DescEntry | undefined;
  size: number;
  lm: number;
  isdir: boolean;
}

interface SortSpec {
  key: string;
  ascending: boolean;
  versionSort: boolean;
  ignoreCase: boolean;
}

/** find_title: the <title> of an HTML file (ScanHTMLTitles), line breaks made spaces. */
function findTitle(rr: Request): string | undefined {
  if (rr.status !== 200 || rr.contentType === undefined || rr.contentEncoding !== undefined) return undefined;
  if (!isHtmlType(rr.contentType)) return undefined;
  let fd: number;
  try { fd = fs.openSync(fsPath(rr.filename), 'r'); } catch { return undefined; }
  const buf = Buffer.alloc(8191);
  let n: number;
  try { n = fs.readSync(fd, buf, 0, buf.length, 0); } catch { n = 0; } finally { fs.closeSync(fd); }
  if (n <= 0) return undefined;
  let text = buf.toString('latin1', 0, n);
  const nul = text.indexOf('\0');
  if (nul >= 0) text = text.slice(0, nul);
  const find = '<title>';
  for (let x = 0, p = 0; x < text.length; x++) {
    if (text[x]!.toLowerCase() === find[p]) {
      if (++p === find.length) {
        let rest = text.slice(x + 1);
        const lt = rest.indexOf('<');
        if (lt >= 0) rest = rest.slice(0, lt);
        // A leading line break is skipped, later ones become spaces.
        let out = '';
        for (let i = 0; i < rest.length; i++) {
          const c = rest[i]!;
          if (c === '\r' || c === '\n') { if (out.length > 0) out += ' '; } else out += c;
        }
        return out;
      }
    } else p = 0;
  }
  return undefined;
}

/** The parent directory entry (make_parent_entry); none for "/". */
function makeParentEntry(opts: number, d: AutoindexDir, r: Request): Ent | undefined {
  const name = parentUri(r.uri);
  if (name === undefined) return undefined;
  const testpath = r.filename.replace(/\/$/, '') + '/..';
  if (ignoreEntry(d, testpath)) return undefined;
  const e: Ent = { name, icon: undefined, alt: undefined, desc: undefined, descSource: undefined, size: -1, lm: -1, isdir: false };
  if (opts & FANCY_INDEXING) {
    e.icon = findDefault(testpath, d.iconList) ?? findDefault('^^DIRECTORY^^', d.iconList);
    e.alt = findDefault(testpath, d.altList) ?? findDefault('^^DIRECTORY^^', d.altList) ?? 'PARENTDIR';
    e.descSource = findDesc(d, testpath);
    e.desc = e.descSource?.description;
  }
  return e;
}

/** The normalised URI of uri + "../", undefined above the root. */
function parentUri(uri: string): string | undefined {
  const base = uri.endsWith('/') ? uri : uri + '/';
  const segs = base.split('/').slice(1, -1);
  if (segs.length === 0) return undefined;
  const out: string[] = [];
  for (const s of [...segs, '..']) {
    if (s === '.' || s === '') continue;
    if (s === '..') {
      if (out.length === 0) return undefined;
      out.pop();
    } else out.push(s);
  }
  return '/' + out.map((s) => s + '/').join('');
}

async function makeEntry(r: Request, name: string, full: string, st: fs.Stats, opts: number, d: AutoindexDir, pattern: string | undefined): Promise<Ent | undefined> {
  if (name === '.' || name === '..') return undefined;
  if (pattern !== undefined && !fnmatch(pattern, name, { period: true, noescape: true, caseless: (opts & IGNORE_CASE) !== 0 })) return undefined;
  if (ignoreEntry(d, full)) return undefined;
  const isDir = st.isDirectory();
  if (!isDir && !st.isFile()) return undefined;
  const rr = await r.rt.lookupFile(r, isDir ? full + '/' : full);
  const okStatus = rr.status === 200 || (rr.status >= 200 && rr.status < 400);
  const forbidden = (opts & SHOW_FORBIDDEN) !== 0 && (rr.status === 401 || rr.status === 403);
  if (!okStatus && !forbidden) return undefined;
  const e: Ent = { name: isDir ? name + '/' : name, icon: undefined, alt: undefined, desc: undefined, descSource: undefined, size: -1, lm: -1, isdir: false };
  if (opts & (FANCY_INDEXING | TABLE_INDEXING)) {
    e.lm = st.mtimeMs;
    const probe: Probe = { filename: full, contentType: rr.contentType, contentEncoding: rr.contentEncoding };
    if (isDir) {
      if (opts & FOLDERS_FIRST) e.isdir = true;
      e.icon = findItem(probe, d.iconList, true) ?? findDefault('^^DIRECTORY^^', d.iconList);
      e.alt = findItem(probe, d.altList, true) ?? findDefault('^^DIRECTORY^^', d.altList) ?? 'DIR';
    } else {
      e.icon = findItem(probe, d.iconList, false);
      e.alt = findItem(probe, d.altList, false);
      e.size = st.size;
    }
    e.descSource = findDesc(d, full);
    e.desc = e.descSource?.description;
    if (e.desc === undefined && (opts & SCAN_HTML_TITLES) && !isDir) e.desc = findTitle(rr);
  }
  return e;
}

/** apr_strnatcmp / apr_strnatcasecmp: digit runs compare by value. */
export function strnatcmp(a: string, b: string, fold: boolean): number {
  let ai = 0;
  let bi = 0;
  const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  const isSpace = (c: string | undefined): boolean => c !== undefined && /\s/.test(c);
  for (;;) {
    let ca = a[ai];
    let cb = b[bi];
    while (isSpace(ca)) ca = a[++ai];
    while (isSpace(cb)) cb = b[++bi];
    if (isDigit(ca) && isDigit(cb)) {
      const fractional = ca === '0' || cb === '0';
      const r = fractional ? compareLeft(a, ai, b, bi) : compareRight(a, ai, b, bi);
      if (r !== 0) return r;
    }
    if (ca === undefined && cb === undefined) return 0;
    if (fold) {
      ca = ca?.toUpperCase();
      cb = cb?.toUpperCase();
    }
    if ((ca ?? '') < (cb ?? '')) return -1;
    if ((ca ?? '') > (cb ?? '')) return 1;
    ++ai;
    ++bi;
  }
}

function compareRight(a: string, ai: number, b: string, bi: number): number {
  let bias = 0;
  const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  for (;; ai++, bi++) {
    const ca = a[ai];
    const cb = b[bi];
    if (!isDigit(ca) && !isDigit(cb)) return bias;
    if (!isDigit(ca)) return -1;
    if (!isDigit(cb)) return 1;
    if (ca! < cb!) { if (!bias) bias = -1; } else if (ca! > cb!) { if (!bias) bias = 1; }
  }
}

function compareLeft(a: string, ai: number, b: string, bi: number): number {
  const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  for (;; ai++, bi++) {
    const ca = a[ai];
    const cb = b[bi];
    if (!isDigit(ca) && !isDigit(cb)) return 0;
    if (!isDigit(ca)) return -1;
    if (!isDigit(cb)) return 1;
    if (ca! < cb!) return -1;
    if (ca! > cb!) return 1;
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** dsortf: parent first, folders first if asked, then the key, then the name. */
function compareEntries(e1: Ent, e2: Ent, s: SortSpec): number {
  if (e1.name[0] === '/') return -1;
  if (e2.name[0] === '/') return 1;
  if (e1.isdir !== e2.isdir) return e1.isdir ? -1 : 1;
  const [c1, c2] = s.ascending ? [e1, e2] : [e2, e1];
  let result = 0;
  switch (s.key) {
    case 'M':
      if (c1.lm !== c2.lm) return c1.lm > c2.lm ? 1 : -1;
      break;
    case 'S':
      if (c1.size !== c2.size) return c1.size > c2.size ? 1 : -1;
      break;
    case 'D':
      result = s.versionSort ? strnatcmp(c1.desc ?? '', c2.desc ?? '', false) : cmp(c1.desc ?? '', c2.desc ?? '');
      if (result) return result;
      break;
  }
  if (s.versionSort) {
    if (s.ignoreCase) result = strnatcmp(c1.name, c2.name, true);
    if (!result) result = strnatcmp(c1.name, c2.name, false);
  }
  if (!result && s.ignoreCase) result = cmp(c1.name.toLowerCase(), c2.name.toLowerCase());
  if (!result) result = cmp(c1.name, c2.name);
  return result;
}


const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const p2 = (n: number): string => (n < 10 ? '0' + n : String(n));

/** The last-modified column: "%Y-%m-%d %H:%M  " (or "%d-%b-%Y %H:%M  "), local time. */
function formatDate(ms: number, old: boolean): string {
  const t = new Date(ms);
  const hm = `${p2(t.getHours())}:${p2(t.getMinutes())}  `;
  return old
    ? `${p2(t.getDate())}-${MONTHS[t.getMonth()]}-${t.getFullYear()} ${hm}`
    : `${t.getFullYear()}-${p2(t.getMonth() + 1)}-${p2(t.getDate())} ${hm}`;
}

/** terminate_description: cut to the width, tags count nothing and entities one. */
function terminateDescription(d: AutoindexDir, desc: string, opts: number, width: number): string {
  let maxsize = width;
  if (d.descAdjust === 'unset') {
    if (opts & SUPPRESS_ICON) maxsize += 6;
    if (opts & SUPPRESS_LAST_MOD) maxsize += 19;
    if (opts & SUPPRESS_SIZE) maxsize += 7;
  }
  let x = 0;
  for (; x < desc.length && (maxsize > 0 || desc[x] === '<'); x++) {
    if (desc[x] === '<') {
      while (desc[x] !== '>') {
        if (x >= desc.length) { maxsize = 0; break; }
        ++x;
      }
    } else if (desc[x] === '&') {
      --maxsize;
      for (; desc[x] !== ';'; ++x) {
        if (x >= desc.length) { maxsize = 0; break; }
      }
    } else {
      --maxsize;
    }
  }
  if (!maxsize && x < desc.length) return desc.slice(0, x - 1) + '>';
  return desc;
}

/** The description cut to the column; a configured text stays cut (see DescEntry). */
function shortDescription(d: AutoindexDir, e: Ent, opts: number, width: number): string {
  const text = terminateDescription(d, e.desc!, opts, width);
  if (text !== e.desc && e.descSource) e.descSource.description = text;
  return text;
}

/** ap_os_escape_path (not partial): a ':' in the first segment gets a "./" prefix. */
function escapeEntryPath(name: string): string {
  const colon = name.indexOf(':');
  const slash = name.indexOf('/');
  const prefix = colon >= 0 && (slash < 0 || colon < slash) ? './' : '';
  return prefix + escapePath(name);
}

function escHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'));
}

interface Columns {
  keyid: string;
  direction: string;
  colargs: string;
}

function emitLink(out: Out, anchor: string, column: string, c: Columns, nosort: boolean): void {
  if (nosort) { out.put(anchor); return; }
  const dir = c.keyid === column && c.direction === 'A' ? 'D' : 'A';
  out.put('<a href="?C=', column, ';O=', dir, c.colargs, '">', anchor, '</a>');
}

function iconImg(out: Out, d: AutoindexDir, src: string, alt: string, xhtml: boolean): void {
  out.put('<img src="', escHtml(src), '" alt="', alt, '"');
  if (d.iconWidth) out.put(` width="${d.iconWidth}"`);
  if (d.iconHeight) out.put(` height="${d.iconHeight}"`);
  out.put(xhtml ? ' />' : '>');
}

/** output_directories: the listing itself in the chosen form. */
function outputDirectories(out: Out, ents: readonly Ent[], d: AutoindexDir, opts: number, c: Columns): void {
  const staticColumns = (opts & SUPPRESS_COLSORT) !== 0;
  const xhtml = (opts & EMIT_XHTML) !== 0;
  const ss = d.styleSheet !== undefined;
  let nameWidth = d.nameWidth;
  let descWidth = d.descWidth;
  if ((opts & (FANCY_INDEXING | TABLE_INDEXING)) === FANCY_INDEXING) {
    if (d.nameAdjust === 'adjust') for (const e of ents) nameWidth = Math.max(nameWidth, e.name.length);
    if (d.descAdjust === 'adjust') for (const e of ents) if (e.desc !== undefined) descWidth = Math.max(descWidth, e.desc.length);
  }
  const pad = (n: number): string => (n > 0 ? ' '.repeat(n) : '');
  let breakrow = '';
  if (opts & TABLE_INDEXING) {
    let cols = 1;
    out.put(ss ? '  <table id="indexlist">\n   <tr class="indexhead">' : '  <table>\n   <tr>');
    if (!(opts & SUPPRESS_ICON)) {
      out.put('<th', ss ? ' class="indexcolicon">' : ' valign="top">');
      const blank = findDefault('^^BLANKICON^^', d.iconList);
      if (blank !== undefined) {
        iconImg(out, d, blank, '[ICO]', xhtml);
        out.put('</th>');
      } else out.put('&nbsp;</th>');
      ++cols;
    }
    out.put('<th', ss ? ' class="indexcolname">' : '>');
    emitLink(out, 'Name', 'N', c, staticColumns);
    if (!(opts & SUPPRESS_LAST_MOD)) {
      out.put('</th><th', ss ? ' class="indexcollastmod">' : '>');
      emitLink(out, 'Last modified', 'M', c, staticColumns);
      ++cols;
    }
    if (!(opts & SUPPRESS_SIZE)) {
      out.put('</th><th', ss ? ' class="indexcolsize">' : '>');
      emitLink(out, 'Size', 'S', c, staticColumns);
      ++cols;
    }
    if (!(opts & SUPPRESS_DESC)) {
      out.put('</th><th', ss ? ' class="indexcoldesc">' : '>');
      emitLink(out, 'Description', 'D', c, staticColumns);
      ++cols;
    }
    if (!(opts & SUPPRESS_RULES)) {
      breakrow = `   <tr${ss ? ' class="indexbreakrow"' : ''}><th colspan="${cols}"><hr${xhtml ? ' /' : ''}></th></tr>\n`;
    }
    out.put('</th></tr>\n', breakrow);
  } else if (opts & FANCY_INDEXING) {
    out.put('<pre>');
    if (!(opts & SUPPRESS_ICON)) {
      const blank = findDefault('^^BLANKICON^^', d.iconList);
      if (blank !== undefined) {
        iconImg(out, d, blank, 'Icon ', xhtml);
        out.put(' ');
      } else out.put('      ');
    }
    emitLink(out, 'Name', 'N', c, staticColumns);
    out.put(pad(nameWidth - 4), ' ');
    if (!(opts & SUPPRESS_LAST_MOD)) {
      emitLink(out, 'Last modified', 'M', c, staticColumns);
      out.put('      ');
    }
    if (!(opts & SUPPRESS_SIZE)) {
      emitLink(out, 'Size', 'S', c, staticColumns);
      out.put('  ');
    }
    if (!(opts & SUPPRESS_DESC)) emitLink(out, 'Description', 'D', c, staticColumns);
    out.put(!(opts & SUPPRESS_RULES) ? `<hr${xhtml ? ' /' : ''}>` : '\n');
  } else {
    out.put('<ul>');
  }

  const oldDate = (opts & OLD_DATE_FORMAT) !== 0;
  for (let x = 0; x < ents.length; x++) {
    const e = ents[x]!;
    const anchor = escHtml(escapeEntryPath(e.name));
    let t2 = x === 0 && e.name[0] === '/' ? 'Parent Directory' : e.name;
    const iconSrc = e.icon ?? d.defaultIcon;
    if (opts & TABLE_INDEXING) {
      if (ss) {
        const cls = (x & 1) ? 'odd' : 'even';
        out.put('   <tr class="', cls, (opts & ADDALTCLASS) && e.alt !== undefined ? '-' + e.alt.toLowerCase() : '', '">');
      } else out.put('<tr>');
      if (!(opts & SUPPRESS_ICON)) {
        out.put('<td', ss ? ' class="indexcolicon">' : ' valign="top">');
        if (opts & ICONS_ARE_LINKS) out.put('<a href="', anchor, '">');
        if (iconSrc !== undefined) iconImg(out, d, iconSrc, `[${e.alt ?? '   '}]`, xhtml);
        else out.put('&nbsp;');
        out.put((opts & ICONS_ARE_LINKS) ? '</a></td>' : '</td>');
      }
      if (d.nameAdjust === 'adjust') {
        out.put('<td', ss ? ' class="indexcolname">' : '>', '<a href="', anchor, '">', escHtml(t2), '</a>');
      } else {
        let nwidth = t2.length;
        if (nwidth > nameWidth) {
          t2 = t2.slice(0, nameWidth - 3) + '..>';
          nwidth = nameWidth;
        }
        out.put('<td', ss ? ' class="indexcolname">' : '>', '<a href="', anchor, '">', escHtml(t2), '</a>', pad(nameWidth - nwidth));
      }
      if (!(opts & SUPPRESS_LAST_MOD)) {
        if (e.lm !== -1) out.put('</td><td', ss ? ' class="indexcollastmod">' : ' align="right">', formatDate(e.lm, oldDate));
        else out.put('</td><td', ss ? ' class="indexcollastmod">&nbsp;' : '>&nbsp;');
      }
      if (!(opts & SUPPRESS_SIZE)) {
        out.put('</td><td', ss ? ' class="indexcolsize">' : ' align="right">', strfsize(e.size));
      }
      if (!(opts & SUPPRESS_DESC)) {
        if (e.desc !== undefined) {
          out.put('</td><td', ss ? ' class="indexcoldesc">' : '>',
            d.descAdjust === 'adjust' ? e.desc : shortDescription(d, e, opts, descWidth));
        } else {
          out.put('</td><td', ss ? ' class="indexcoldesc">' : '>', '&nbsp;');
        }
      }
      out.put('</td></tr>\n');
    } else if (opts & FANCY_INDEXING) {
      if (!(opts & SUPPRESS_ICON)) {
        if (opts & ICONS_ARE_LINKS) out.put('<a href="', anchor, '">');
        if (iconSrc !== undefined) iconImg(out, d, iconSrc, `[${e.alt ?? '   '}]`, xhtml);
        else out.put('     ');
        out.put((opts & ICONS_ARE_LINKS) ? '</a> ' : ' ');
      }
      let nwidth = t2.length;
      if (nwidth > nameWidth) {
        t2 = t2.slice(0, nameWidth - 3) + '..>';
        nwidth = nameWidth;
      }
      out.put('<a href="', anchor, '">', escHtml(t2), '</a>', pad(nameWidth - nwidth), ' ');
      if (!(opts & SUPPRESS_LAST_MOD)) out.put(e.lm !== -1 ? formatDate(e.lm, oldDate) : ' '.repeat(19));
      if (!(opts & SUPPRESS_SIZE)) out.put(strfsize(e.size), '  ');
      if (!(opts & SUPPRESS_DESC) && e.desc !== undefined) out.put(shortDescription(d, e, opts, descWidth));
      out.put('\n');
    } else {
      out.put('<li><a href="', anchor, '"> ', escHtml(t2), '</a></li>\n');
    }
  }
  if (opts & TABLE_INDEXING) out.put(breakrow, '</table>\n');
  else if (opts & FANCY_INDEXING) out.put(!(opts & SUPPRESS_RULES) ? `<hr${xhtml ? ' /' : ''}></pre>\n` : '</pre>\n');
  else out.put('</ul>\n');
}

interface ListEntry { name: string; full: string; st: fs.Stats }

/** Reads the directory, following symbolic links (entries whose target is gone are skipped). */
function readDirectory(dir: string): ListEntry[] | NodeJS.ErrnoException {
  // In the file system's own order (readdir), as httpd reads it: the listing is sorted later,
  // but the subrequests (and what they log) follow this order.
  const names: string[] = [];
  try {
    const d = fs.opendirSync(fsPath(dir), { encoding: 'latin1' });
    try {
      for (let e = d.readSync(); e !== null; e = d.readSync()) names.push(e.name);
    } finally {
      d.closeSync();
    }
  } catch (e) {
    return e as NodeJS.ErrnoException;
  }
  const out: ListEntry[] = [];
  for (const name of names) {
    const full = dir + name;
    try {
      out.push({ name, full, st: fs.statSync(fsPath(full)) });
    } catch {
      // A dangling link or an entry that vanished.
    }
  }
  return out;
}

/** index_directory: options from the query string, then the page. */
async function indexDirectory(r: Request, d: AutoindexDir): Promise<number> {
  const dir = r.filename;
  const listing = readDirectory(dir);
  if (listing instanceof Error) {
    r.log('autoindex', APLOG_ERR, `AH01275: Can't open directory for index: ${r.filename}`, r.rt.errno(listing));
    return 403;
  }
  let opts = d.opts;
  r.contentType = `${d.ctype ?? 'text/html'};charset=${d.charset ?? 'ISO-8859-1'}`;
  if ((opts & TRACK_MODIFIED) && r.finfo) {
    r.mtime = Math.min(mtimeMicrosOf(r.finfo, r.filename) / 1000, r.requestTime);
    r.headersOut.set('Last-Modified', toHttpDate(r.mtime));
    const etag = makeEtag(r, r.finfo, etagBitsFor(coreDir(r)));
    if (etag) r.headersOut.set('ETag', etag);
  }
  if (r.headerOnly) {
    await r.write([EOS]);
    return OK;
  }
  let keyid = d.defaultKeyid || 'N';
  let direction = d.defaultDirection || 'A';
  let pattern: string | undefined;
  let colargs = '';
  if (opts & IGNORE_CLIENT) {
    opts |= SUPPRESS_COLSORT;
  } else {
    let fval = '';
    let vval = '';
    let ppre = '';
    let epattern = '';
    let q = r.args ?? '';
    const endsField = (i: number): boolean => i >= q.length || q[i] === '&' || q[i] === ';';
    while (q.length > 0) {
      const c2 = q[2];
      if (q[0] === 'C' && q[1] === '=' && c2 !== undefined && 'NMSD'.includes(c2) && endsField(3)) {
        keyid = c2;
        q = q.slice(4);
      } else if (q[0] === 'O' && q[1] === '=' && (c2 === 'A' || c2 === 'D') && endsField(3)) {
        direction = c2;
        q = q.slice(4);
      } else if (q[0] === 'F' && q[1] === '=' && c2 !== undefined && '012'.includes(c2) && endsField(3)) {
        if (c2 === '0') opts &= ~(FANCY_INDEXING | TABLE_INDEXING);
        else if (c2 === '1') opts = (opts | FANCY_INDEXING) & ~TABLE_INDEXING;
        else opts |= FANCY_INDEXING | TABLE_INDEXING;
        fval = ';F=' + c2;
        q = q.slice(4);
      } else if (q[0] === 'V' && q[1] === '=' && (c2 === '0' || c2 === '1') && endsField(3)) {
        if (c2 === '0') opts &= ~VERSION_SORT; else opts |= VERSION_SORT;
        vval = ';V=' + c2;
        q = q.slice(4);
      } else if (q[0] === 'P' && q[1] === '=') {
        let eos = 2;
        while (eos < q.length && q[eos] !== '&' && q[eos] !== ';') ++eos;
        if (eos === 2) {
          pattern = undefined;
        } else {
          const decoded = unescapeUrlStrict(q.slice(2, eos));
          if (decoded === undefined) pattern = undefined;
          else {
            pattern = decoded;
            ppre = ';P=';
            epattern = escapePath(decoded);
          }
        }
        q = eos < q.length && eos + 1 < q.length ? q.slice(eos + 1) : '';
      } else {
        // A syntax error ends the parsing.
        q = '';
      }
    }
    colargs = fval + vval + ppre + epattern;
  }

  let title = escHtml(r.uri);
  while (title.length > 1 && title.endsWith('/')) title = title.slice(0, -1);

  const out = new Out(r);
  const xhtml = (opts & EMIT_XHTML) !== 0;
  const suppressAmble = (opts & SUPPRESS_PREAMBLE) !== 0;
  await emitHead(r, out, d, findItem(probeOf(r), d.hdrList, false), suppressAmble, xhtml, title);

  const ents: Ent[] = [];
  const parent = makeParentEntry(opts, d, r);
  if (parent) ents.push(parent);
  for (const le of listing) {
    const e = await makeEntry(r, le.name, le.full, le.st, opts, d, pattern);
    if (e) ents.push(e);
  }
  const spec: SortSpec = {
    key: keyid, ascending: direction === 'A',
    versionSort: (opts & VERSION_SORT) !== 0, ignoreCase: (opts & IGNORE_CASE) !== 0,
  };
  ents.sort((a, b) => compareEntries(a, b, spec));
  outputDirectories(out, ents, d, opts, { keyid, direction, colargs });
  await emitTail(r, out, findItem(probeOf(r), d.rdmeList, false), suppressAmble);
  await out.end();
  return OK;
}

function probeOf(r: Request): Probe {
  return { filename: r.filename, contentType: r.contentType, contentEncoding: r.contentEncoding };
}

/** handle_autoindex: only for httpd/unix-directory and GET (or HEAD); other requests are
 *  declined at once (no promise, no microtask). */
function handleAutoindex(r: Request): MaybePromise<number> {
  if (r.handler !== DIR_MAGIC_TYPE) return DECLINED;
  if (r.method !== 'GET' && r.method !== 'HEAD') return DECLINED;
  return autoindexRequest(r);
}

async function autoindexRequest(r: Request): Promise<number> {
  const d = self.dir(r);
  const core = coreDir(r);
  if (core.opts & OPT_INDEXES) {
    if (r.body && !r.body.done) {
      const st = await r.body.discard(core.limitRequestBody ?? 0);
      if (st !== OK) return st;
    }
    if (!r.filename.endsWith('/')) r.filename += '/';
    return indexDirectory(r, d);
  }
  const names = r.notes.get('dir-index-names');
  r.log('autoindex', APLOG_ERR, `AH01276: Cannot serve directory ${r.filename}: No matching DirectoryIndex (${names ?? 'none'}) found, and server-generated directory index forbidden by Options directive`);
  return 403;
}

const P = OR_INDEXES;
const self = defineModule<undefined, AutoindexDir>({
  name: 'autoindex_module',
  source: 'mod_autoindex.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: 'AddIcon', args: 'ITERATE2', where: P, help: 'an icon URL followed by one or more filenames', handler: addIcon('path') }),
    directive({ name: 'AddIconByType', args: 'ITERATE2', where: P, help: 'an icon URL followed by one or more MIME types', handler: addIcon('type') }),
    directive({ name: 'AddIconByEncoding', args: 'ITERATE2', where: P, help: 'an icon URL followed by one or more content encodings', handler: addIcon('encoding') }),
    directive({ name: 'AddAlt', args: 'ITERATE2', where: P, help: 'alternate descriptive text followed by one or more filenames', handler: addAlt('path') }),
    directive({ name: 'AddAltByType', args: 'ITERATE2', where: P, help: 'alternate descriptive text followed by one or more MIME types', handler: addAlt('type') }),
    directive({ name: 'AddAltByEncoding', args: 'ITERATE2', where: P, help: 'alternate descriptive text followed by one or more content encodings', handler: addAlt('encoding') }),
    directive({ name: 'IndexOptions', args: 'RAW_ARGS', where: P, help: 'one or more index options [+|-][]', handler: addOpts }),
    directive({ name: 'IndexOrderDefault', args: 'TAKE2', where: P, help: '{Ascending,Descending} {Name,Size,Description,Date}', handler: setDefaultOrder }),
    directive({ name: 'IndexIgnore', args: 'ITERATE', where: P, help: 'one or more file extensions', handler: addIgnore }),
    directive({ name: 'IndexIgnoreReset', args: 'FLAG', where: P, help: 'Reset the inherited list of IndexIgnore filenames', handler: (cmd: Cmd, on: boolean) => { cmd.dir.ignoreNoInherit = on; return undefined; } }),
    directive({ name: 'AddDescription', args: 'ITERATE2', where: P, help: 'Descriptive text followed by one or more filenames', handler: addDesc }),
    directive({ name: 'HeaderName', args: 'TAKE1', where: P, help: 'a filename', handler: addHeader('hdrList') }),
    directive({ name: 'ReadmeName', args: 'TAKE1', where: P, help: 'a filename', handler: addHeader('rdmeList') }),
    directive({ name: 'FancyIndexing', args: 'RAW_ARGS', where: OR_ALL, help: 'The FancyIndexing directive is no longer supported. Use IndexOptions FancyIndexing.', handler: () => 'The FancyIndexing directive is no longer supported. Use IndexOptions FancyIndexing.' }),
    directive({ name: 'DefaultIcon', args: 'TAKE1', where: P, help: 'an icon URL', handler: setString('defaultIcon') }),
    directive({ name: 'IndexStyleSheet', args: 'TAKE1', where: P, help: 'URL to style sheet', handler: setString('styleSheet') }),
    directive({ name: 'IndexHeadInsert', args: 'TAKE1', where: P, help: 'String to insert in HTML HEAD section', handler: setString('headInsert') }),
  ],
  hooks: {
    handler: { fn: handleAutoindex, order: HOOK_MIDDLE },
  },
});

export default self;
