// The ap_expr scanner (httpd's server/util_expr_scan.l, 2.4): a stateful lexer with the
// states INITIAL, str (inside '...' / "..." or a whole string expression), var (after %{),
// vararg (after %{name:), regex and regex_flags. Flex picks the longest match and, between
// equal lengths, the earlier rule; the INITIAL state below does the same. Errors are returned
// as T_ERROR tokens with httpd's message (the parser decides whether it is a syntax error).

export type TokKind =
  | '$end' | 'T_TRUE' | 'T_FALSE' | 'T_ERROR' | 'T_DIGIT' | 'T_ID' | 'T_STRING'
  | 'T_REGEX' | 'T_REGEX_I' | 'T_REGEX_BACKREF' | 'T_OP_UNARY' | 'T_OP_BINARY'
  | 'T_STR_BEGIN' | 'T_STR_END' | 'T_VAR_BEGIN' | 'T_VAR_END'
  | 'T_OP_EQ' | 'T_OP_NE' | 'T_OP_LT' | 'T_OP_LE' | 'T_OP_GT' | 'T_OP_GE'
  | 'T_OP_REG' | 'T_OP_NRE' | 'T_OP_IN'
  | 'T_OP_STR_EQ' | 'T_OP_STR_NE' | 'T_OP_STR_LT' | 'T_OP_STR_LE' | 'T_OP_STR_GT' | 'T_OP_STR_GE'
  | 'T_OP_CONCAT' | 'T_OP_OR' | 'T_OP_AND' | 'T_OP_NOT'
  | "'('" | "')'" | "'{'" | "'}'" | "','" | "':'";

export interface Token {
  readonly kind: TokKind;
  /** T_DIGIT, T_ID, T_STRING, T_REGEX*, T_OP_UNARY/BINARY (name without '-'), T_ERROR (message). */
  readonly text: string;
  /** T_REGEX_BACKREF: 0-9. */
  readonly num: number;
}

/** The scanner jammed (flex's "flex scanner jammed": httpd exits). */
export class ScannerJammed extends Error {}

type State = 'INITIAL' | 'str' | 'var' | 'vararg' | 'regex' | 'regex_flags';

const REGEX_DELIMS = '/#$%^,;:_?|^-!.\'"';

/** Fixed INITIAL-state operator spellings, in rule order (earlier wins on equal length). */
const OPERATORS: readonly (readonly [string, TokKind])[] = [
  ['==', 'T_OP_STR_EQ'], ['=', 'T_OP_STR_EQ'], ['!=', 'T_OP_STR_NE'], ['<', 'T_OP_STR_LT'], ['<=', 'T_OP_STR_LE'],
  ['>', 'T_OP_STR_GT'], ['>=', 'T_OP_STR_GE'], ['=~', 'T_OP_REG'], ['!~', 'T_OP_NRE'],
  ['and', 'T_OP_AND'], ['&&', 'T_OP_AND'], ['or', 'T_OP_OR'], ['||', 'T_OP_OR'], ['not', 'T_OP_NOT'], ['!', 'T_OP_NOT'],
  ['.', 'T_OP_CONCAT'],
  ['-in', 'T_OP_IN'], ['-eq', 'T_OP_EQ'], ['-ne', 'T_OP_NE'], ['-ge', 'T_OP_GE'], ['-le', 'T_OP_LE'], ['-gt', 'T_OP_GT'], ['-lt', 'T_OP_LT'],
  ['lt', 'T_OP_LT'], ['le', 'T_OP_LE'], ['gt', 'T_OP_GT'], ['ge', 'T_OP_GE'], ['ne', 'T_OP_NE'], ['eq', 'T_OP_EQ'], ['in', 'T_OP_IN'],
];

const isAlpha = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isIdChar = (c: number): boolean => isAlpha(c) || isDigit(c) || c === 95;

function tok(kind: TokKind, text = '', num = 0): Token {
  return { kind, text, num };
}

/** httpd's scan buffer is MAX_STRING_LEN (8192) bytes. */
const MAX_STRING_LEN = 8192;

export class Lexer {
  private pos = 0;
  private state: State;
  private readonly stack: State[] = [];
  private buf = '';
  private strDel = '';
  private regexDel = '';
  private regexBuf = '';

  constructor(private readonly src: string, readonly stringMode: boolean) {
    this.state = stringMode ? 'str' : 'INITIAL';
  }

  next(): Token {
    for (;;) {
      const t = this.scan();
      if (t !== null) return t;
    }
  }

  private error(msg: string): Token {
    return tok('T_ERROR', msg);
  }

  private append(s: string): Token | null {
    this.buf += s;
    if (this.buf.length >= MAX_STRING_LEN) return this.error('String too long');
    return null;
  }

  /** Returns the pending string and leaves the input where it is (flex's yyless(0)). */
  private flushString(): Token {
    const s = this.buf;
    this.buf = '';
    return tok('T_STRING', s);
  }

  private scan(): Token | null {
    switch (this.state) {
      case 'INITIAL': return this.scanInitial();
      case 'str': case 'vararg': return this.scanStr();
      case 'var': return this.scanVar();
      case 'regex': return this.scanRegex();
      case 'regex_flags': return this.scanRegexFlags();
    }
  }

  private scanInitial(): Token | null {
    const s = this.src;
    const i = this.pos;
    if (i >= s.length) return tok('$end');
    const c = s.charCodeAt(i);
    const ch = s[i]!;
    // Whitespace.
    if (ch === ' ' || ch === '\t' || ch === '\n') {
      let j = i;
      while (j < s.length && (s[j] === ' ' || s[j] === '\t' || s[j] === '\n')) j++;
      this.pos = j;
      return null;
    }
    if (ch === '"' || ch === "'") {
      this.pos++;
      this.buf = '';
      this.strDel = ch;
      this.state = 'str';
      return tok('T_STR_BEGIN');
    }
    if (ch === '%' && s[i + 1] === '{') {
      this.pos += 2;
      this.stack.push(this.state);
      this.state = 'var';
      return tok('T_VAR_BEGIN');
    }
    if (ch === '$' && isDigit(s.charCodeAt(i + 1))) {
      this.pos += 2;
      return tok('T_REGEX_BACKREF', '', s.charCodeAt(i + 1) - 48);
    }
    // Longest match among the remaining rules; the earliest rule wins a tie.
    let bestLen = 0;
    let best: (() => Token | null) | null = null;
    const offer = (len: number, make: () => Token | null): void => {
      if (len > bestLen) { bestLen = len; best = make; }
    };
    if (ch === 'm' && i + 1 < s.length && REGEX_DELIMS.includes(s[i + 1]!)) {
      offer(2, () => { this.regexDel = s[i + 1]!; this.regexBuf = ''; this.state = 'regex'; return null; });
    }
    if (ch === '/') offer(1, () => { this.regexDel = '/'; this.regexBuf = ''; this.state = 'regex'; return null; });
    for (const [spell, kind] of OPERATORS) {
      if (s.startsWith(spell, i)) offer(spell.length, () => tok(kind));
    }
    if (ch === '-' && i + 1 < s.length && (isAlpha(s.charCodeAt(i + 1)) || s[i + 1] === '_')) {
      offer(2, () => tok('T_OP_UNARY', s[i + 1]!));
      let j = i + 2;
      while (j < s.length && (isIdChar(s.charCodeAt(j)))) j++;
      if (j > i + 2) offer(j - i, () => tok('T_OP_BINARY', s.slice(i + 1, j)));
    }
    if (s.startsWith('true', i)) offer(4, () => tok('T_TRUE'));
    if (s.startsWith('false', i)) offer(5, () => tok('T_FALSE'));
    {
      let j = i;
      if (s[j] === '-') j++;
      const d0 = j;
      while (j < s.length && isDigit(s.charCodeAt(j))) j++;
      if (j > d0) offer(j - i, () => tok('T_DIGIT', s.slice(i, j)));
    }
    if (isAlpha(c)) {
      let j = i + 1;
      while (j < s.length && isIdChar(s.charCodeAt(j))) j++;
      offer(j - i, () => tok('T_ID', s.slice(i, j)));
    }
    if ('(){},:'.includes(ch)) offer(1, () => tok(`'${ch}'` as TokKind));
    if (best === null) {
      this.pos++;
      return this.error(`Parse error near '${ch}'`);
    }
    this.pos = i + bestLen;
    return (best as () => Token | null)();
  }

  /** The str and vararg states (string contents, function arguments). */
  private scanStr(): Token | null {
    const s = this.src;
    const i = this.pos;
    const inArg = this.state === 'vararg';
    if (i >= s.length) {
      if (inArg) return this.error('Unterminated string or variable');
      if (!this.stringMode) return this.error('Unterminated string or variable');
      const t = this.flushString();
      this.state = 'INITIAL';
      return t;
    }
    const ch = s[i]!;
    if (!inArg && (ch === '"' || ch === "'")) {
      if (ch === this.strDel) {
        if (this.buf === '') {
          this.pos++;
          this.state = 'INITIAL';
          return tok('T_STR_END');
        }
        return this.flushString();
      }
      this.pos++;
      return this.append(ch);
    }
    if (ch === '\n') {
      this.pos++;
      return this.error('Unterminated string or variable');
    }
    if (ch === '\\') {
      if (i + 1 >= s.length) throw new ScannerJammed('flex scanner jammed');
      let j = i + 1;
      while (j < s.length && isDigit(s.charCodeAt(j))) j++;
      const digits = s.slice(i + 1, j);
      if (digits.length > 0) {
        let k = 0;
        while (k < digits.length && k < 3 && digits.charCodeAt(k) <= 55) k++;
        // [0-9]+ is longer than the octal rule's match: a bad escape.
        if (digits.length > k || k === 0) {
          this.pos = j;
          return this.error('Bad escape sequence');
        }
        this.pos = i + 1 + k;
        const v = parseInt(digits.slice(0, k), 8);
        if (v > 0xff) return this.error('Escape sequence out of bound');
        return this.append(String.fromCharCode(v));
      }
      const e = s[i + 1]!;
      this.pos = i + 2;
      const map: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f' };
      return this.append(map[e] ?? e);
    }
    if (ch === '$' && isDigit(s.charCodeAt(i + 1))) {
      if (this.buf !== '') return this.flushString();
      this.pos += 2;
      return tok('T_REGEX_BACKREF', '', s.charCodeAt(i + 1) - 48);
    }
    if (ch === '%' && s[i + 1] === '{') {
      if (this.buf !== '') return this.flushString();
      this.pos += 2;
      this.stack.push(this.state);
      this.state = 'var';
      return tok('T_VAR_BEGIN');
    }
    if (inArg) {
      if (ch === '}') {
        if (this.buf !== '') return this.flushString();
        this.pos++;
        this.state = this.stack.pop() ?? 'INITIAL';
        return tok('T_VAR_END');
      }
      if (ch === '"' || ch === "'") throw new ScannerJammed('flex scanner jammed');
      if (ch === '%' || ch === '$') { this.pos++; return this.append(ch); }
    } else if (ch === '%' || ch === '}' || ch === '$') {
      this.pos++;
      return this.append(ch);
    }
    let j = i;
    while (j < s.length && !'\\\n"\'%}$'.includes(s[j]!)) j++;
    this.pos = j;
    return this.append(s.slice(i, j));
  }

  private scanVar(): Token | null {
    const s = this.src;
    const i = this.pos;
    if (i >= s.length) return this.error('Unterminated string or variable');
    const ch = s[i]!;
    if (isAlpha(s.charCodeAt(i))) {
      let j = i + 1;
      while (j < s.length && isIdChar(s.charCodeAt(j))) j++;
      this.pos = j;
      return tok('T_ID', s.slice(i, j));
    }
    this.pos++;
    if (ch === '}') {
      this.state = this.stack.pop() ?? 'INITIAL';
      return tok('T_VAR_END');
    }
    if (ch === ':') {
      this.state = 'vararg';
      this.buf = '';
      return tok("':'");
    }
    if (ch === '\n') return this.error('Unterminated string or variable');
    return this.error(`Invalid character in variable name '${ch}'`);
  }

  private scanRegex(): Token | null {
    const s = this.src;
    for (;;) {
      if (this.pos >= s.length) return tok('$end');
      const ch = s[this.pos++]!;
      if (ch === this.regexDel) {
        this.state = 'regex_flags';
        return null;
      }
      this.regexBuf += ch;
      if (this.regexBuf.length >= MAX_STRING_LEN) return this.error('Regexp too long');
    }
  }

  private scanRegexFlags(): Token {
    this.state = 'INITIAL';
    if (this.src[this.pos] === 'i') {
      this.pos++;
      return tok('T_REGEX_I', this.regexBuf);
    }
    return tok('T_REGEX', this.regexBuf);
  }
}
