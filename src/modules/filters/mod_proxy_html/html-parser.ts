// A streaming HTML parser that reports SAX events as libxml2 2.9's HTML push parser does
// (htmlCreatePushParserCtxt / htmlParseChunk with RECOVER and NOBLANKS, the options of Apache's
// mod_proxy_html): names lower-cased, html/head/body/p implied, elements closed by the start
// tags that end them in HTML 4, empty elements ended at once, entities decoded, ignorable
// white space dropped, DOCTYPE and processing instructions swallowed, and what follows the
// end of the root element dropped. The output of mod_proxy_html is a re-serialisation of these
// events, so matching them is matching Apache's output.
//
// Input is text (decoded by the caller); push() parses what is complete and keeps the rest,
// finish() parses the rest as libxml2 does at the end of the stream.

import { ELEMENT_ROWS, ENTITY_ROWS } from './html-tables.js';

export interface ElementDesc {
  readonly name: string;
  readonly empty: boolean;
  readonly deprecated: boolean;
  /** Attributes valid for the element in strict HTML 4 (required ones included). */
  readonly allowed: ReadonlySet<string>;
  readonly required: readonly string[];
}

const ELEMENTS = new Map<string, ElementDesc>();
for (const [name, [empty, depr, allowed, req]] of Object.entries(ELEMENT_ROWS)) {
  ELEMENTS.set(name, {
    name, empty: empty === 1, deprecated: depr === 1,
    allowed: new Set(allowed === '' ? [] : allowed.split(' ')),
    required: req === '' ? [] : req.split(' '),
  });
}

/** htmlTagLookup: the element's HTML 4 description (names compared case-blind). */
export function tagLookup(name: string): ElementDesc | undefined {
  return ELEMENTS.get(name) ?? ELEMENTS.get(name.toLowerCase());
}

const ENTITIES = new Map<string, number>();
{
  const parts = ENTITY_ROWS.split(' ');
  for (let i = 0; i + 1 < parts.length; i += 2) ENTITIES.set(parts[i]!, Number(parts[i + 1]));
}

/** Start tags that end the current element (HTML 4's omitted end tags), by the element ended. */
const START_CLOSE: Readonly<Record<string, string>> = {
  a: 'a fieldset table td th',
  address: 'dd dl dt form li ul',
  b: 'center p td th',
  big: 'p',
  caption: 'col colgroup tbody tfoot thead tr',
  col: 'col colgroup tbody tfoot thead tr',
  colgroup: 'colgroup tbody tfoot thead tr',
  dd: 'dt',
  dir: 'dd dl dt form ul',
  dl: 'form li',
  dt: 'dd dl',
  font: 'center td th',
  form: 'form',
  h1: 'fieldset form li p table', h2: 'fieldset form li p table', h3: 'fieldset form li p table',
  h4: 'fieldset form li p table', h5: 'fieldset form li p table', h6: 'fieldset form li p table',
  head: 'a abbr acronym address b bdo big blockquote body br center cite code dd dfn dir div dl dt em fieldset font form frameset h1 h2 h3 h4 h5 h6 hr i iframe img kbd li listing map menu ol p pre q s samp small span strike strong sub sup table tt u ul var xmp',
  hr: 'form',
  i: 'center p td th',
  legend: 'fieldset',
  li: 'li',
  link: 'body frameset',
  listing: 'dd dl dt fieldset form li table ul',
  menu: 'dd dl dt form ul',
  ol: 'form ul',
  option: 'optgroup option',
  p: 'address blockquote body caption center col colgroup dd dir div dl dt fieldset form frameset h1 h2 h3 h4 h5 h6 head hr li listing menu ol p pre table tbody td tfoot th title tr ul xmp',
  pre: 'dd dl dt fieldset form li table ul',
  s: 'p',
  script: 'noscript',
  small: 'p',
  span: 'td th',
  strike: 'p',
  style: 'body frameset',
  tbody: 'tbody tfoot',
  td: 'tbody td tfoot th tr',
  tfoot: 'tbody',
  th: 'tbody td tfoot th tr',
  thead: 'tbody tfoot',
  title: 'body frameset',
  tr: 'tbody tfoot tr',
  tt: 'p',
  u: 'p td th',
  ul: 'address form menu ol pre',
  xmp: 'dd dl dt fieldset form li table ul',
};
const START_CLOSE_SETS = new Map<string, ReadonlySet<string>>(Object.entries(START_CLOSE).map(([k, v]) => [k, new Set(v.split(' '))]));

/** Priorities of misplaced end tags: one closes only elements of lower or equal priority. */
const END_PRIORITY: Readonly<Record<string, number>> = {
  div: 150, td: 160, th: 160, tr: 170, thead: 180, tbody: 180, tfoot: 180, table: 190, head: 200, body: 200, html: 220,
};
function endPriority(name: string): number {
  return END_PRIORITY[name] ?? 100;
}

export type Attr = readonly [name: string, value: string | null];

export interface HtmlSax {
  startElement(name: string, attrs: readonly Attr[] | null): void;
  endElement(name: string): void;
  characters(text: string): void;
  comment(text: string): void;
  /** Content of script and style elements. */
  cdata(text: string): void;
  /** A `<meta>` naming a charset (libxml2's htmlCheckMeta): the caller may switch the decoding
   *  of the text not yet parsed (unparsed() / replaceUnparsed()). */
  encoding?(name: string): void;
}

type State = 'start' | 'misc' | 'prolog' | 'content' | 'startTag' | 'endTag' | 'epilog' | 'eof';

const isBlank = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';
const isAsciiLetter = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
const isDigit = (c: string): boolean => c >= '0' && c <= '9';

/** XML's Char production (IS_CHAR), for one UTF-16 unit or a surrogate pair's first unit. */
function isXmlChar(code: number): boolean {
  if (code < 0x20) return code === 0x9 || code === 0xa || code === 0xd;
  return code <= 0xd7ff || (code >= 0xd800 && code <= 0xdfff) || (code >= 0xe000 && code <= 0xfffd);
}
function dropInvalid(s: string): string {
  let ok = true;
  for (let i = 0; i < s.length; i++) if (!isXmlChar(s.charCodeAt(i))) { ok = false; break; }
  if (ok) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) if (isXmlChar(s.charCodeAt(i))) out += s[i];
  return out;
}

/** A NUL inside the input reads as a space (htmlCurrentChar). */
function nulToSpace(s: string): string {
  return s.indexOf('\0') < 0 ? s : s.replace(/\0/g, ' ');
}

function nameStart(c: string): boolean {
  return isAsciiLetter(c) || c === '_' || c === ':' || c > '\x7f';
}
function nameChar(c: string): boolean {
  return isAsciiLetter(c) || isDigit(c) || c === '_' || c === ':' || c === '.' || c === '-' || c > '\x7f';
}

/** At most this many characters of a tag or attribute name are kept (HTML_PARSER_BUFFER_SIZE). */
const NAME_MAX = 100;
/** Character data is reported in pieces of at most this size (HTML_PARSER_BIG_BUFFER_SIZE). */
const TEXT_PIECE = 1000;

export class HtmlPushParser {
  private buf = '';
  private pos = 0;
  private state: State = 'start';
  private readonly names: string[] = [];
  /** 3 once a head was opened, 10 once a body was (ctxt->html). */
  private seen = 0;
  /** Misplaced html/head/body start tags dropped, whose end tags are dropped too. */
  private depth = 0;
  private terminate = false;
  private encodingSeen = false;

  constructor(private readonly sax: HtmlSax) {}

  /** Parses what the text completes. */
  push(text: string): void {
    if (this.state === 'eof') return;
    this.buf = this.pos > 0 ? this.buf.slice(this.pos) + text : this.buf + text;
    this.pos = 0;
    this.run();
  }

  /** The end of the input: the rest is parsed and open elements are closed. */
  finish(): void {
    this.terminate = true;
    if (this.state !== 'eof') this.run();
    this.state = 'eof';
  }

  /** The text pushed but not parsed yet. */
  unparsed(): string {
    return this.buf.slice(this.pos);
  }
  /** Replaces the text not parsed yet (after a change of the input's charset). */
  replaceUnparsed(text: string): void {
    this.buf = text;
    this.pos = 0;
  }

  private get name(): string | undefined {
    return this.names[this.names.length - 1];
  }
  private c(k = 0): string {
    return this.buf[this.pos + k] ?? '\0';
  }
  private upper(k: number): string {
    return this.c(k).toUpperCase();
  }
  private avail(): number {
    return this.buf.length - this.pos;
  }
  private skipBlanks(): void {
    while (isBlank(this.c())) this.pos++;
  }

  private namePush(name: string): void {
    if (this.seen < 3 && name === 'head') this.seen = 3;
    if (this.seen < 10 && name === 'body') this.seen = 10;
    this.names.push(name);
  }
  private endCurrent(): void {
    this.sax.endElement(this.name!);
    this.names.pop();
  }

  // ---- htmlAutoClose, htmlCheckImplied, htmlCheckParagraph ------------------------------

  private autoClose(newTag: string): void {
    for (;;) {
      const cur = this.name;
      if (cur === undefined) return;
      const set = START_CLOSE_SETS.get(cur);
      if (!set || !set.has(newTag)) return;
      this.endCurrent();
    }
  }

  private autoCloseOnClose(newTag: string): void {
    const priority = endPriority(newTag);
    let i = this.names.length - 1;
    for (; i >= 0; i--) {
      if (this.names[i] === newTag) break;
      if (endPriority(this.names[i]!) > priority) return;
    }
    if (i < 0) return;
    while (this.name !== newTag) this.endCurrent();
  }

  private autoCloseOnEnd(): void {
    while (this.names.length > 0) this.endCurrent();
  }

  private checkImplied(newTag: string): void {
    if (newTag === 'html') return;
    if (this.names.length === 0) {
      this.namePush('html');
      this.sax.startElement('html', null);
    }
    if (newTag === 'body' || newTag === 'head') return;
    if (this.names.length <= 1 && (newTag === 'script' || newTag === 'style' || newTag === 'meta' || newTag === 'link' || newTag === 'title' || newTag === 'base')) {
      if (this.seen >= 3) return;
      this.namePush('head');
      this.sax.startElement('head', null);
    } else if (newTag !== 'noframes' && newTag !== 'frame' && newTag !== 'frameset') {
      if (this.seen >= 10) return;
      for (const n of this.names) if (n === 'body' || n === 'head') return;
      this.namePush('body');
      this.sax.startElement('body', null);
    }
  }

  private checkParagraph(): void {
    const tag = this.name;
    if (tag === undefined || tag === 'html' || tag === 'head') {
      this.autoClose('p');
      this.checkImplied('p');
      this.namePush('p');
      this.sax.startElement('p', null);
    }
  }

  // ---- character data -------------------------------------------------------------------

  /** areBlanks, for a handler that builds no tree: white space before a tag directly in
   *  html or head (or outside any element), or at the very end of the input, is ignorable. */
  private areBlanks(s: string): boolean {
    for (let i = 0; i < s.length; i++) if (!isBlank(s[i]!)) return false;
    const cur = this.c();
    if (cur === '\0') return true;
    if (cur !== '<') return false;
    const n = this.name;
    return n === undefined || n === 'html' || n === 'head';
  }

  private emitText(s: string): void {
    if (this.areBlanks(s)) return;
    this.checkParagraph();
    this.sax.characters(s);
  }

  private parseCharData(): void {
    const start = this.pos;
    let end = start;
    const buf = this.buf;
    while (end < buf.length) {
      const ch = buf[end]!;
      if (ch === '<' || ch === '&') break;
      end++;
    }
    if (end === start) return;
    // Reported in pieces, each judged on its own for white space (the last one sees what follows).
    let p = start;
    while (end - p > TEXT_PIECE) {
      const piece = dropInvalid(nulToSpace(buf.slice(p, p + TEXT_PIECE)));
      this.pos = p + TEXT_PIECE;
      if (piece) this.emitText(piece);
      p += TEXT_PIECE;
    }
    this.pos = end;
    const piece = dropInvalid(nulToSpace(buf.slice(p, end)));
    if (piece) this.emitText(piece);
  }

  /** htmlParseCharRef: the code point, or 0 when invalid. */
  private parseCharRef(): number {
    let val = 0;
    if (this.c() === '&' && this.c(1) === '#' && (this.c(2) === 'x' || this.c(2) === 'X')) {
      this.pos += 3;
      while (this.c() !== ';') {
        const ch = this.c();
        let d: number;
        if (isDigit(ch)) d = ch.charCodeAt(0) - 48;
        else if (ch >= 'a' && ch <= 'f') d = ch.charCodeAt(0) - 87;
        else if (ch >= 'A' && ch <= 'F') d = ch.charCodeAt(0) - 55;
        else break;
        if (val < 0x110000) val = val * 16 + d;
        this.pos++;
      }
      if (this.c() === ';') this.pos++;
    } else if (this.c() === '&' && this.c(1) === '#') {
      this.pos += 2;
      while (this.c() !== ';') {
        const ch = this.c();
        if (!isDigit(ch)) break;
        if (val < 0x110000) val = val * 10 + (ch.charCodeAt(0) - 48);
        this.pos++;
      }
      if (this.c() === ';') this.pos++;
    }
    if (val >= 0x110000) return 0;
    if (val < 0x20) return val === 0x9 || val === 0xa || val === 0xd ? val : 0;
    if ((val >= 0xd800 && val <= 0xdfff) || val === 0xfffe || val === 0xffff) return 0;
    return val;
  }

  /** htmlParseName: an XML name, case kept. */
  private parseName(): string | null {
    if (!nameStart(this.c())) return null;
    const start = this.pos;
    while (nameChar(this.c())) this.pos++;
    return this.buf.slice(start, this.pos);
  }

  /** htmlParseEntityRef: the entity's code point and the name read. */
  private parseEntityRef(): { value: number | undefined; name: string | null } {
    this.pos++; // '&'
    const name = this.parseName();
    if (name === null) return { value: undefined, name: null };
    if (this.c() === ';') {
      const v = ENTITIES.get(name);
      if (v !== undefined) this.pos++;
      return { value: v, name };
    }
    return { value: undefined, name };
  }

  private parseReference(): void {
    if (this.c(1) === '#') {
      const v = this.parseCharRef();
      if (v === 0) return;
      this.checkParagraph();
      this.sax.characters(String.fromCodePoint(v));
      return;
    }
    const { value, name } = this.parseEntityRef();
    this.checkParagraph();
    if (name === null) this.sax.characters('&');
    else if (value === undefined || value <= 0) { this.sax.characters('&'); this.sax.characters(name); }
    else this.sax.characters(String.fromCodePoint(value));
  }

  // ---- markup ---------------------------------------------------------------------------

  /** htmlParseHTMLName: a tag or attribute name, lower-cased. */
  private parseHtmlName(): string | null {
    const ch = this.c();
    if (!isAsciiLetter(ch) && ch !== '_' && ch !== ':' && ch !== '.') return null;
    let out = '';
    let n = 0;
    while (n < NAME_MAX) {
      const c = this.c();
      if (!(isAsciiLetter(c) || isDigit(c) || c === ':' || c === '-' || c === '_' || c === '.')) break;
      out += c;
      n++;
      this.pos++;
    }
    return out.toLowerCase();
  }

  /** htmlParseHTMLAttribute: a value up to `stop` (or, unquoted, a blank or '>'), decoded. */
  private parseAttributeText(stop: string): string {
    let out = '';
    for (;;) {
      const ch = this.c();
      if (ch === '\0' || ch === stop) break;
      if (stop === '' && (ch === '>' || isBlank(ch))) break;
      if (ch === '&') {
        if (this.c(1) === '#') {
          const v = this.parseCharRef();
          // A NUL ends the C string the value is kept in.
          out += v === 0 ? '\0' : String.fromCodePoint(v);
        } else {
          const { value, name } = this.parseEntityRef();
          if (name === null) out += '&';
          else if (value === undefined) out += '&' + name;
          else out += String.fromCodePoint(value);
        }
      } else {
        out += ch;
        this.pos++;
      }
    }
    const nul = out.indexOf('\0');
    return nul < 0 ? out : out.slice(0, nul);
  }

  private parseAttValue(): string {
    const q = this.c();
    if (q === '"' || q === "'") {
      this.pos++;
      const v = this.parseAttributeText(q);
      if (this.c() === q) this.pos++;
      return v;
    }
    return this.parseAttributeText('');
  }

  private checkMeta(attrs: readonly Attr[]): void {
    let http = false;
    let content: string | null = null;
    for (const [n, v] of attrs) {
      if (v === null) continue;
      const ln = n.toLowerCase();
      if (ln === 'http-equiv' && v.toLowerCase() === 'content-type') http = true;
      else if (ln === 'charset') this.checkEncodingDirect(v);
      else if (ln === 'content') content = v;
    }
    if (http && content !== null) {
      const lc = content.toLowerCase();
      let i = lc.indexOf('charset');
      if (i < 0) return;
      i += 7;
      if (isBlank(content[i] ?? '')) i = content.indexOf('=');
      if (i >= 0 && content[i] === '=') this.checkEncodingDirect(content.slice(i + 1));
    }
  }

  private checkEncodingDirect(enc: string): void {
    if (this.encodingSeen) return;
    this.encodingSeen = true;
    const name = enc.replace(/^[ \t]+/, '');
    this.sax.encoding?.(name);
  }

  /** htmlParseStartTag: -1 failed, 0 done, 1 discarded (misplaced html/head/body). */
  private parseStartTag(): number {
    this.pos++; // '<'
    const name = this.parseHtmlName();
    if (name === null) {
      while (this.c() !== '\0' && this.c() !== '>') this.pos++;
      return -1;
    }
    this.autoClose(name);
    this.checkImplied(name);
    let discard = false;
    if (this.names.length > 0 && name === 'html') { discard = true; this.depth++; }
    if (this.names.length !== 1 && name === 'head') { discard = true; this.depth++; }
    if (name === 'body') for (const n of this.names) if (n === 'body') { discard = true; this.depth++; }
    const attrs: Attr[] = [];
    this.skipBlanks();
    while (this.c() !== '\0' && this.c() !== '>' && !(this.c() === '/' && this.c(1) === '>')) {
      const an = this.parseHtmlName();
      if (an !== null) {
        this.skipBlanks();
        let v: string | null = null;
        if (this.c() === '=') {
          this.pos++;
          this.skipBlanks();
          v = this.parseAttValue();
        }
        if (!attrs.some((a) => a[0] === an)) attrs.push([an, v]);
      } else {
        while (this.c() !== '\0' && !isBlank(this.c()) && this.c() !== '>' && !(this.c() === '/' && this.c(1) === '>')) this.pos++;
      }
      this.skipBlanks();
    }
    if (name === 'meta' && attrs.length > 0) this.checkMeta(attrs);
    if (!discard) {
      this.namePush(name);
      this.sax.startElement(name, attrs.length > 0 ? attrs : null);
    }
    return discard ? 1 : 0;
  }

  private parseEndTag(): void {
    this.pos += 2;
    const name = this.parseHtmlName();
    if (name === null) return;
    this.skipBlanks();
    if (this.c() !== '>') while (this.c() !== '\0' && this.c() !== '>') this.pos++;
    if (this.c() === '>') this.pos++;
    if (this.depth > 0 && (name === 'html' || name === 'body' || name === 'head')) {
      this.depth--;
      return;
    }
    if (!this.names.includes(name)) return;
    this.autoCloseOnClose(name);
    if (this.name === name) this.endCurrent();
  }

  private parseComment(): void {
    // '<!--' already checked; the text runs to '-->' (or '--!>').
    const start = this.pos + 4;
    let i = start;
    const buf = this.buf;
    for (;;) {
      const j = buf.indexOf('--', i);
      if (j < 0) break;
      if (buf[j + 2] === '>') {
        this.pos = j + 3;
        this.sax.comment(dropInvalid(nulToSpace(buf.slice(start, j))));
        return;
      }
      if (buf[j + 2] === '!' && buf[j + 3] === '>') {
        this.pos = j + 4;
        this.sax.comment(dropInvalid(nulToSpace(buf.slice(start, j))));
        return;
      }
      i = j + 1;
    }
    // Not terminated: libxml2 reports nothing and the rest of the input is consumed.
    this.pos = buf.length;
  }

  private parsePI(): void {
    this.pos += 2;
    const target = this.parseName();
    if (target === null) return;
    while (this.c() !== '\0' && this.c() !== '>') this.pos++;
    if (this.c() === '>') this.pos++;
  }

  private parseDoctype(): void {
    this.pos += 9;
    this.skipBlanks();
    this.parseName();
    this.skipBlanks();
    const word = this.buf.slice(this.pos, this.pos + 6).toUpperCase();
    const literal = (): void => {
      const q = this.c();
      if (q !== '"' && q !== "'") return;
      this.pos++;
      while (this.c() !== '\0' && this.c() !== q) this.pos++;
      if (this.c() === q) this.pos++;
    };
    if (word === 'SYSTEM' || word === 'PUBLIC') {
      this.pos += 6;
      this.skipBlanks();
      literal();
      this.skipBlanks();
      if (word === 'PUBLIC') literal();
    }
    this.skipBlanks();
    while (this.c() !== '\0' && this.c() !== '>') this.pos++;
    if (this.c() === '>') this.pos++;
  }

  /** htmlParseLookupSequence from the current position: the offset of `seq`, or -1; with
   *  `skipQuoted`, quoted stretches are passed over. */
  private lookup(seq: string, skipQuoted: boolean): number {
    const buf = this.buf;
    if (!skipQuoted) {
      const i = buf.indexOf(seq, this.pos);
      return i < 0 ? -1 : i - this.pos;
    }
    let q = '';
    for (let i = this.pos; i < buf.length; i++) {
      const ch = buf[i]!;
      if (q) { if (ch === q) q = ''; continue; }
      if (ch === '"' || ch === "'") { q = ch; continue; }
      if (ch === seq) return i - this.pos;
    }
    return -1;
  }
  private lookupCommentEnd(): boolean {
    let i = this.pos;
    for (;;) {
      const j = this.buf.indexOf('--', i);
      if (j < 0) return false;
      if (this.buf[j + 2] === '>' || (this.buf[j + 2] === '!' && this.buf[j + 3] === '>')) return true;
      i = j + 1;
    }
  }
  private atDoctype(): boolean {
    return this.c() === '<' && this.c(1) === '!' && this.buf.slice(this.pos + 2, this.pos + 9).toUpperCase() === 'DOCTYPE';
  }

  // ---- htmlParseTryOrFinish ---------------------------------------------------------------

  private run(): void {
    const term = this.terminate;
    for (;;) {
      let avail = this.avail();
      if (avail === 0 && term) {
        this.autoCloseOnEnd();
        if (this.state !== 'eof') this.state = 'eof';
      }
      if (avail < 1) return;
      if (this.c() === '\0') { this.pos++; continue; }
      switch (this.state) {
        case 'eof':
          return;
        case 'start':
          this.skipBlanks();
          if (this.atDoctype()) {
            if (!term && this.lookup('>', true) < 0) return;
            this.parseDoctype();
            this.state = 'prolog';
          } else this.state = 'misc';
          break;
        case 'misc':
        case 'prolog': {
          this.skipBlanks();
          avail = this.avail();
          if (avail < 1) return;
          if (this.state === 'prolog' && avail < 2) return;
          let next: string;
          if (avail < 2) { if (!term) return; next = ' '; } else next = this.c(1);
          const cur = this.c();
          if (cur === '<' && next === '!' && this.c(2) === '-' && this.c(3) === '-') {
            if (!term && !this.lookupCommentEnd()) return;
            this.parseComment();
          } else if (cur === '<' && next === '?') {
            if (!term && this.lookup('>', false) < 0) return;
            this.parsePI();
          } else if (this.state === 'misc' && this.atDoctype()) {
            if (!term && this.lookup('>', true) < 0) return;
            this.parseDoctype();
            this.state = 'prolog';
          } else if (cur === '<' && next === '!' && avail < (this.state === 'misc' ? 9 : 4)) {
            return;
          } else {
            this.state = 'content';
          }
          break;
        }
        case 'epilog': {
          const cur = this.c();
          if (isBlank(cur)) { this.parseCharData(); return; }
          if (avail < 2) return;
          if (cur === '<' && this.c(1) === '!' && this.c(2) === '-' && this.c(3) === '-') {
            if (!term && !this.lookupCommentEnd()) return;
            this.parseComment();
          } else if (cur === '<' && this.c(1) === '?') {
            if (!term && this.lookup('>', false) < 0) return;
            this.parsePI();
          } else if (cur === '<' && this.c(1) === '!' && avail < 4) {
            return;
          } else {
            this.state = 'eof';
            return;
          }
          break;
        }
        case 'startTag': {
          let next: string;
          if (avail < 2) { if (!term) return; next = ' '; } else next = this.c(1);
          if (this.c() !== '<') { this.state = 'content'; break; }
          if (next === '/') { this.state = 'endTag'; break; }
          if (!term && this.lookup('>', true) < 0) return;
          const failed = this.parseStartTag();
          const name = this.name;
          if (failed === -1 || name === undefined) {
            if (this.c() === '>') this.pos++;
            break;
          }
          const info = tagLookup(name);
          if (this.c() === '/' && this.c(1) === '>') {
            this.pos += 2;
            this.endCurrent();
            this.state = 'content';
            break;
          }
          if (this.c() === '>') this.pos++;
          else {
            if (this.name === name) this.names.pop();
            this.state = 'content';
            break;
          }
          if (info && info.empty) this.endCurrent();
          this.state = 'content';
          break;
        }
        case 'content': {
          // One byte left at the end (libxml2 counts bytes: an ASCII character).
          if (avail === 1 && term && this.c() < '\x80') {
            const cur = this.c();
            if (cur !== '<' && cur !== '&') {
              // The last character is reported as it is (no check that XML allows it).
              if (!isBlank(cur)) {
                this.checkParagraph();
                this.sax.characters(cur);
              }
              this.pos++;
              break;
            }
          }
          // libxml2 counts bytes: one non-ASCII character is two or more.
          if (avail < 2 && this.c() < '\x80') return;
          const cur = this.c();
          const next = this.c(1);
          const n = this.name;
          if (n === 'script' || n === 'style') {
            if (!term) {
              const idx = this.lookup('</', false);
              if (idx < 0) return;
              if (this.pos + idx + 2 >= this.buf.length) return;
            }
            this.parseScript(n);
            if (cur === '<' && next === '/') this.state = 'endTag';
            break;
          }
          if (this.atDoctype()) {
            if (!term && this.lookup('>', true) < 0) return;
            this.parseDoctype();
          } else if (cur === '<' && next === '!' && this.c(2) === '-' && this.c(3) === '-') {
            if (!term && !this.lookupCommentEnd()) return;
            this.parseComment();
          } else if (cur === '<' && next === '?') {
            if (!term && this.lookup('>', false) < 0) return;
            this.parsePI();
          } else if (cur === '<' && next === '!' && avail < 4) {
            return;
          } else if (cur === '<' && next === '/') {
            this.state = 'endTag';
          } else if (cur === '<' && isAsciiLetter(next)) {
            this.state = 'startTag';
          } else if (cur === '<') {
            this.sax.characters('<');
            this.pos++;
          } else {
            if (!term && this.lookup('<', false) < 0) return;
            let ch = cur;
            while (ch !== '<' && this.pos < this.buf.length) {
              if (ch === '&') this.parseReference();
              else this.parseCharData();
              ch = this.c();
            }
          }
          break;
        }
        case 'endTag':
          if (avail < 2) return;
          if (!term && this.lookup('>', false) < 0) return;
          this.parseEndTag();
          this.state = this.names.length === 0 ? 'epilog' : 'content';
          break;
      }
    }
  }

  /** htmlParseScript in recovery mode: text up to the end tag of the current element. */
  private parseScript(name: string): void {
    const buf = this.buf;
    const start = this.pos;
    let i = start;
    for (;;) {
      const j = buf.indexOf('</', i);
      if (j < 0) { i = buf.length; break; }
      if (buf.slice(j + 2, j + 2 + name.length).toLowerCase() === name) { i = j; break; }
      i = j + 1;
    }
    this.pos = i;
    let p = start;
    while (p < i) {
      const e = Math.min(i, p + TEXT_PIECE);
      const piece = dropInvalid(nulToSpace(buf.slice(p, e)));
      if (piece) this.sax.cdata(piece);
      p = e;
    }
  }
}
