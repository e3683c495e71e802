// The ap_expr parser: recursive descent over httpd 2.4's grammar (server/util_expr_parse.y),
// with its error messages. httpd's bison parser says "syntax error, unexpected X" and, where
// the parser state allows at most four tokens, ", expecting A or B"; each error point below
// names the tokens bison's state there allows. Names are looked up when their production is
// reduced; a failed lookup ("Variable 'X' does not exist") does not stop the parse, and a
// later syntax error is reported as "syntax error...: <lookup error>", as httpd does.

import { Lexer, ScannerJammed, type Token, type TokKind } from './lexer.js';
import { compilePcre } from './regex.js';
import {
  EXPR_FLAG_RESTRICTED, type CompOp, type CondNode, type ExprFuncDecl, type ExprProvider, type ListNode, type WordNode,
  type ExprStringFn, type ExprListFn, type ExprUnaryFn, type ExprBinaryFn, type ExprVariable,
} from './types.js';

class Abort extends Error {}

const COMP_OPS: Partial<Record<TokKind, CompOp>> = {
  T_OP_EQ: 'EQ', T_OP_NE: 'NE', T_OP_LT: 'LT', T_OP_LE: 'LE', T_OP_GT: 'GT', T_OP_GE: 'GE',
  T_OP_STR_EQ: 'STR_EQ', T_OP_STR_NE: 'STR_NE', T_OP_STR_LT: 'STR_LT', T_OP_STR_LE: 'STR_LE', T_OP_STR_GT: 'STR_GT', T_OP_STR_GE: 'STR_GE',
};

type LookupType = 'Variable' | 'Function' | 'List-returning function' | 'Unary operator' | 'Binary operator';

export type ParseOutcome<T> = { readonly ok: true; readonly node: T } | { readonly ok: false; readonly error: string };

export class Parser {
  private readonly lex: Lexer;
  private t: Token;
  private error: string | undefined;
  private error2: string | undefined;

  constructor(src: string, private readonly stringMode: boolean, private readonly flags: number,
    private readonly providers: readonly ExprProvider[]) {
    this.lex = new Lexer(src, stringMode);
    this.t = { kind: '$end', text: '', num: 0 };
  }

  parseCond(): ParseOutcome<CondNode> {
    return this.run(() => {
      const e = this.expr();
      if (this.t.kind !== '$end') this.syntax(['$end']);
      return e;
    });
  }

  parseString(): ParseOutcome<WordNode> {
    return this.run(() => {
      const s = this.string([]);
      if (this.t.kind !== '$end') this.syntax(['$end']);
      return s;
    });
  }

  private run<T>(body: () => T): ParseOutcome<T> {
    let node: T | undefined;
    try {
      this.advance();
      node = body();
    } catch (e) {
      if (e instanceof ScannerJammed) return { ok: false, error: e.message };
      if (!(e instanceof Abort)) throw e;
    }
    if (this.error !== undefined) return { ok: false, error: this.error2 !== undefined ? `${this.error}: ${this.error2}` : this.error };
    if (this.error2 !== undefined) return { ok: false, error: this.error2 };
    if (node === undefined) return { ok: false, error: 'syntax error' };
    return { ok: true, node };
  }

  // ---- tokens and errors ---------------------------------------------------------------

  /** The lookahead's kind (read through a call, so that checks after advance() are not
   *  narrowed away by the compiler). */
  private peek(): TokKind {
    return this.t.kind;
  }

  private advance(): void {
    this.t = this.lex.next();
    if (this.t.kind === 'T_ERROR') this.error2 = this.t.text;
  }

  /** A bison syntax error in a state allowing `expected` (listed only when 1 to 4). */
  private syntax(expected: readonly TokKind[]): never {
    let msg = `syntax error, unexpected ${this.t.kind}`;
    if (expected.length > 0 && expected.length <= 4) msg += ', expecting ' + expected.join(' or ');
    this.error = msg;
    throw new Abort();
  }

  /** A T_ERROR where the grammar takes one: the parse stops with the scanner's message only. */
  private abortOnError(): void {
    if (this.t.kind === 'T_ERROR') throw new Abort();
  }

  private expect(kind: TokKind, expected: readonly TokKind[]): void {
    if (this.t.kind !== kind) this.syntax(expected);
    this.advance();
  }

  // ---- conditions ----------------------------------------------------------------------

  private expr(): CondNode {
    let left = this.andExpr();
    while (this.t.kind === 'T_OP_OR') {
      this.advance();
      const right = this.andExpr();
      left = { k: 'or', a: left, b: right };
    }
    return left;
  }

  private andExpr(): CondNode {
    let left = this.primaryExpr();
    while (this.t.kind === 'T_OP_AND') {
      this.advance();
      const right = this.primaryExpr();
      left = { k: 'and', a: left, b: right };
    }
    return left;
  }

  private primaryExpr(): CondNode {
    const t = this.t;
    switch (t.kind) {
      case 'T_TRUE': this.advance(); return { k: 'true' };
      case 'T_FALSE': this.advance(); return { k: 'false' };
      case 'T_OP_NOT': { this.advance(); const e = this.primaryExpr(); return { k: 'not', e }; }
      case 'T_ERROR': throw new Abort();
      case 'T_OP_UNARY': {
        this.advance();
        const w = this.word();
        return this.unaryOp(t.text, w);
      }
      case "'('": {
        this.advance();
        const e = this.expr();
        this.expect("')'", ['T_OP_OR', 'T_OP_AND', "')'"]);
        return e;
      }
      case 'T_DIGIT': case 'T_ID': case 'T_REGEX_BACKREF': case 'T_STR_BEGIN': case 'T_VAR_BEGIN':
        return this.comparison(this.word());
      default:
        return this.syntax([]);
    }
  }

  private comparison(left: WordNode): CondNode {
    const t = this.t;
    if (t.kind === 'T_OP_BINARY') {
      this.advance();
      const right = this.word();
      return this.binaryOp(t.text, left, right);
    }
    const op = COMP_OPS[t.kind];
    if (op !== undefined) {
      this.advance();
      return { k: 'comp', op, a: left, b: this.word() };
    }
    if (t.kind === 'T_OP_REG' || t.kind === 'T_OP_NRE') {
      this.advance();
      const rt = this.t;
      if (rt.kind !== 'T_REGEX' && rt.kind !== 'T_REGEX_I') this.syntax(['T_REGEX', 'T_REGEX_I']);
      const re = compilePcre(rt.text, rt.kind === 'T_REGEX_I' ? 'i' : '');
      if (re === null) {
        this.error = 'Failed to compile regular expression';
        throw new Abort();
      }
      this.advance();
      return { k: 'regex', negate: t.kind === 'T_OP_NRE', a: left, re: re.re, groups: re.groups > 0 };
    }
    if (t.kind === 'T_OP_IN') {
      this.advance();
      return { k: 'in', a: left, list: this.wordlist() };
    }
    return this.syntax([]);
  }

  private wordlist(): ListNode {
    const t = this.t;
    if (t.kind === 'T_ID') {
      this.advance();
      this.expect("'('", ["'('"]);
      const arg = this.word();
      if (this.t.kind !== "')'") this.syntax(['T_OP_CONCAT', "')'"]);
      // The production is reduced (and the name looked up) before the next token is read.
      const fn = this.lookup<ExprListFn>('List-returning function', this.providers.map((p) => p.listFunctions), t.text, arg);
      this.advance();
      return { k: 'listfunc', name: t.text, fn: fn ?? (() => null), arg };
    }
    if (t.kind === "'{'") {
      this.advance();
      const items = [this.word()];
      while (this.t.kind === "','") {
        this.advance();
        items.push(this.word());
      }
      this.expect("'}'", ["'}'", "','"]);
      return { k: 'list', items };
    }
    return this.syntax(['T_ID', "'{'"]);
  }

  // ---- words and strings ---------------------------------------------------------------

  private word(): WordNode {
    const left = this.primaryWord();
    if (this.t.kind === 'T_OP_CONCAT') {
      this.advance();
      return { k: 'concat', a: left, b: this.word() };
    }
    return left;
  }

  private primaryWord(): WordNode {
    const t = this.t;
    switch (t.kind) {
      case 'T_DIGIT': this.advance(); return { k: 'digit', v: t.text };
      case 'T_VAR_BEGIN': this.advance(); return this.variable();
      case 'T_REGEX_BACKREF': this.advance(); return { k: 'backref', n: t.num };
      case 'T_ID': {
        this.advance();
        this.expect("'('", ["'('"]);
        const arg = this.word();
        if (this.t.kind !== "')'") this.syntax(['T_OP_CONCAT', "')'"]);
        const f = this.stringFunction(t.text, arg);
        this.advance();
        return f;
      }
      case 'T_STR_BEGIN': {
        this.advance();
        if (this.t.kind === 'T_STR_END') {
          this.advance();
          return { k: 'string', v: '' };
        }
        const s = this.string([]);
        this.expect('T_STR_END', ['T_STRING', 'T_REGEX_BACKREF', 'T_STR_END', 'T_VAR_BEGIN']);
        return s;
      }
      default:
        return this.syntax([]);
    }
  }

  /** string: strpart+ (left-associative concatenation); a leading T_ERROR stops the parse. */
  private string(expectedFirst: readonly TokKind[]): WordNode {
    this.abortOnError();
    let s = this.strpart(expectedFirst.length ? expectedFirst : ['T_ERROR', 'T_STRING', 'T_REGEX_BACKREF', 'T_VAR_BEGIN']);
    while (this.t.kind === 'T_STRING' || this.t.kind === 'T_VAR_BEGIN' || this.t.kind === 'T_REGEX_BACKREF') {
      s = { k: 'concat', a: s, b: this.strpart([]) };
    }
    return s;
  }

  private strpart(expected: readonly TokKind[]): WordNode {
    const t = this.t;
    switch (t.kind) {
      case 'T_STRING': this.advance(); return { k: 'string', v: t.text };
      case 'T_VAR_BEGIN': this.advance(); return this.variable();
      case 'T_REGEX_BACKREF': this.advance(); return { k: 'backref', n: t.num };
      default: return this.syntax(expected);
    }
  }

  /** After T_VAR_BEGIN: NAME } or func:string }. */
  private variable(): WordNode {
    const id = this.t;
    if (id.kind !== 'T_ID') this.syntax(['T_ID']);
    this.advance();
    if (this.t.kind === 'T_VAR_END') {
      const fn = this.lookup<ExprVariable>('Variable', this.providers.map((p) => p.variables), id.text, undefined);
      this.advance();
      return { k: 'var', name: id.text, fn: fn ?? (() => '') };
    }
    if (this.t.kind !== "':'") this.syntax(['T_VAR_END', "':'"]);
    this.advance();
    const arg = this.string([]);
    if (this.peek() !== 'T_VAR_END') this.syntax(['T_STRING', 'T_REGEX_BACKREF', 'T_VAR_BEGIN', 'T_VAR_END']);
    const f = this.stringFunction(id.text, arg);
    this.advance();
    return f;
  }

  // ---- name lookups (httpd's expr_lookup hook) ---------------------------------------------

  private stringFunction(name: string, arg: WordNode): WordNode {
    const fn = this.lookup<ExprStringFn>('Function', this.providers.map((p) => p.functions), name, arg);
    return { k: 'strfunc', name, fn: fn ?? (() => ''), arg };
  }

  private unaryOp(name: string, arg: WordNode): CondNode {
    let isAsync = false;
    const fn = this.lookup<ExprUnaryFn>('Unary operator', this.providers.map((p) => p.unaryOps), name, arg, (d) => { isAsync = d.async === true; });
    return { k: 'unary', name, fn: fn ?? (() => false), async: isAsync, a: arg };
  }

  private binaryOp(name: string, left: WordNode, right: WordNode): CondNode {
    const fn = this.lookup<ExprBinaryFn>('Binary operator', this.providers.map((p) => p.binaryOps), name, right);
    return { k: 'binary', name, fn: fn ?? (() => false), a: left, b: right };
  }

  private lookup<F>(type: LookupType, tables: readonly (Readonly<Record<string, unknown>> | undefined)[], name: string,
    arg: WordNode | undefined, seen?: (d: ExprFuncDecl<F>) => void): F | undefined {
    const caseSensitive = type === 'Unary operator';
    const lower = name.toLowerCase();
    for (const table of tables) {
      if (table === undefined) continue;
      let found: unknown;
      if (caseSensitive) found = Object.prototype.hasOwnProperty.call(table, name) ? table[name] : undefined;
      else {
        for (const key of Object.keys(table)) if (key.toLowerCase() === lower) { found = table[key]; break; }
      }
      if (found === undefined) continue;
      if (type === 'Variable') return found as F;
      const decl = found as ExprFuncDecl<F>;
      if ((this.flags & EXPR_FLAG_RESTRICTED) && decl.restricted) {
        this.error2 = `${type === 'Function' ? '' : '-'}${name} not available in restricted context`;
        return undefined;
      }
      seen?.(decl);
      if (decl.prepare) {
        const r = decl.prepare(arg !== undefined && arg.k === 'string' ? arg.v : undefined, name);
        if (typeof r === 'string') { this.error2 = r; return undefined; }
        return r;
      }
      return decl.fn;
    }
    const prefix = type === 'Unary operator' || type === 'Binary operator' ? '-' : '';
    this.error2 = `${type} '${prefix}${name}' does not exist`;
    return undefined;
  }
}

export type { ExprStringFn, ExprListFn, ExprUnaryFn, ExprBinaryFn, ExprVariable };
