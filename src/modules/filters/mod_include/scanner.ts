// The SSI tokenizer of mod_include's INCLUDES filter: finds `<!--#element attr="value" -->`
// (SSIStartTag/SSIEndTag) in a body that arrives in pieces, with mod_include's exact reading
// rules: the element name ends at white space or at the end sequence; an argument is
// name[=value] with a value quoted by ", ' or ` (a backslash escapes only the quote) or ending
// at white space; the end sequence is looked for only where an argument could start. Where a
// piece ends does not change the result. It only reads: the filter executes what it finds.

/** One argument as written (name lowercased); name null when a value came without one,
 *  value null when the name had no `=`. */
export interface SsiArg {
  name: string | null;
  value: string | null;
}

export type SsiEvent =
  /** Document bytes outside elements (passed on while the filter is printing). */
  | { readonly k: 'text'; readonly data: Buffer }
  /** A complete element. `errors` are the reading errors httpd logs while reading it (the
   *  element then produces only the error message). */
  | { readonly k: 'element'; readonly name: string; readonly args: readonly SsiArg[]; readonly error: boolean; readonly errors: readonly string[] };

const enum S {
  PreHead, Directive, DirectiveTail, PreArg, Tail, Arg, ArgName, ArgEq, ArgPreval, ArgVal, ArgValEsc,
}

const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
const isQuote = (c: string): boolean => c === '"' || c === "'" || c === '`';

export class SsiScanner {
  private readonly start: Buffer;
  private readonly end: string;
  private state = S.PreHead;
  /** Bytes at the end of the last piece that begin the start sequence. */
  private held: Buffer | null = null;
  private pos = 0;
  private directive = '';
  private args: SsiArg[] = [];
  private cur: SsiArg = { name: null, value: null };
  private text = '';
  private quote = '';
  private tail = '';
  private error = false;
  private errors: string[] = [];
  private out: SsiEvent[] = [];

  /** `file` names the document in the reading errors ("... in parsed document F"). */
  constructor(startSeq: string, endSeq: string, private readonly file: string) {
    this.start = Buffer.from(startSeq, 'latin1');
    this.end = endSeq;
  }

  /** Reads one piece of the body; the events it completes, in document order. */
  feed(data: Buffer): SsiEvent[] {
    this.out = [];
    let buf = data;
    if (this.held !== null) {
      buf = Buffer.concat([this.held, data]);
      this.held = null;
    }
    let i = 0;
    while (i < buf.length) {
      if (this.state === S.PreHead) {
        i = this.findStart(buf, i);
        continue;
      }
      // Inside an element: character by character (elements are short).
      const stop = buf.length;
      while (i < stop) {
        this.step(String.fromCharCode(buf[i++]!));
        if (this.atHead()) break;
      }
    }
    return this.out;
  }

  /** The end of the body: bytes held as a possible start sequence go out as text; an element
   *  still open is reported as `unfinished`. */
  finish(): { events: SsiEvent[]; unfinished: boolean } {
    const events: SsiEvent[] = [];
    if (this.held !== null) { events.push({ k: 'text', data: this.held }); this.held = null; }
    return { events, unfinished: this.state !== S.PreHead };
  }

  private atHead(): boolean {
    return this.state === S.PreHead;
  }

  private findStart(buf: Buffer, from: number): number {
    const slen = this.start.length;
    const at = buf.indexOf(this.start, from);
    if (at >= 0) {
      if (at > from) this.out.push({ k: 'text', data: buf.subarray(from, at) });
      this.state = S.Directive;
      this.directive = '';
      this.args = [];
      this.error = false;
      this.errors = [];
      return at + slen;
    }
    // No whole start sequence: keep a tail that could begin one for the next piece.
    let keep = buf.length;
    for (let p = Math.max(from, buf.length - slen + 1); p < buf.length; p++) {
      let n = 0;
      while (p + n < buf.length && buf[p + n] === this.start[n]) n++;
      if (p + n === buf.length) { keep = p; break; }
    }
    if (keep > from) this.out.push({ k: 'text', data: buf.subarray(from, keep) });
    if (keep < buf.length) this.held = Buffer.from(buf.subarray(keep));
    return buf.length;
  }

  private nameDone(name: string): void {
    if (name === '') {
      this.error = true;
      this.errors.push(`AH01368: missing directive name in parsed document ${this.file}`);
      this.directive = '';
    } else {
      this.directive = name.toLowerCase();
    }
  }

  private emit(): void {
    this.out.push({ k: 'element', name: this.directive, args: this.args, error: this.error, errors: this.errors });
    this.state = S.PreHead;
  }

  private step(c: string): void {
    const end = this.end;
    switch (this.state) {
      case S.Directive:
        if (isSpace(c)) { this.nameDone(this.directive); this.state = S.PreArg; return; }
        this.directive += c;
        if (c === end[0]) { this.state = S.DirectiveTail; this.pos = 1; this.tailCheck(); }
        return;
      case S.DirectiveTail:
        if (c === end[this.pos]) { this.directive += c; this.pos++; this.tailCheck(); return; }
        this.state = S.Directive;
        this.step(c);
        return;
      case S.PreArg:
        if (isSpace(c)) return;
        if (c === end[0]) { this.state = S.Tail; this.pos = 0; this.tail = ''; this.step(c); return; }
        this.state = S.Arg;
        this.step(c);
        return;
      case S.Tail:
        if (c === end[this.pos]) {
          this.tail += c;
          if (++this.pos === end.length) this.emit();
          return;
        } else {
          // Not the end sequence: what was taken for it starts an argument.
          const again = this.tail + c;
          this.tail = '';
          this.state = S.Arg;
          for (const ch of again) this.step(ch);
        }
        return;
      case S.Arg:
        this.cur = { name: null, value: null };
        this.args.push(this.cur);
        if (isQuote(c)) {
          this.error = true;
          this.errors.push(`AH01369: missing argument name for value to tag ${this.directive} in ${this.file}`);
          this.quote = c;
          this.text = '';
          this.state = S.ArgVal;
          return;
        }
        this.text = '';
        this.state = S.ArgName;
        this.step(c);
        return;
      case S.ArgName:
        if (isSpace(c) || c === '=') {
          if (this.text === '') {
            this.error = true;
            this.errors.push(`AH01370: missing argument name for value to tag ${this.directive} in ${this.file}`);
            this.cur.name = '';
          } else {
            this.cur.name = this.text.toLowerCase();
          }
          this.state = S.ArgEq;
          this.step(c);
          return;
        }
        this.text += c;
        return;
      case S.ArgEq:
        if (isSpace(c)) return;
        if (c === '=') { this.state = S.ArgPreval; return; }
        this.cur.value = null;
        this.state = S.PreArg;
        this.step(c);
        return;
      case S.ArgPreval:
        if (isSpace(c)) return;
        this.state = S.ArgVal;
        this.text = '';
        if (isQuote(c)) { this.quote = c; return; }
        this.quote = '';
        this.step(c);
        return;
      case S.ArgVal:
        if (this.quote !== '' && c === '\\') { this.text += c; this.state = S.ArgValEsc; return; }
        if ((this.quote !== '' && c === this.quote) || (this.quote === '' && isSpace(c))) {
          // A backslash before the quote character was only there to escape it.
          const q = this.quote;
          this.cur.value = q === '' ? this.text : this.text.split('\\' + q).join(q);
          this.state = S.PreArg;
          return;
        }
        this.text += c;
        return;
      case S.ArgValEsc:
        this.state = S.ArgVal;
        if (c === this.quote) { this.text += c; return; }
        this.step(c);
        return;
      default:
        return;
    }
  }

  /** After an end-sequence character following the element name: the whole sequence ends
   *  the element (the name loses it). */
  private tailCheck(): void {
    if (this.pos < this.end.length) return;
    this.nameDone(this.directive.slice(0, this.directive.length - this.end.length));
    this.emit();
  }
}
