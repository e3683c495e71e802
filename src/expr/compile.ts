// Compiles an ap_expr syntax tree to closures, once per configuration: evaluation walks no
// tree and parses nothing. Conditions that contain no subrequest operator (-U, -A, -F) are
// fully synchronous; the others answer through promises only where those operators are.

import type { CompOp, CondNode, EvalState, ListNode, MaybePromise, WordNode } from './types.js';

export type WordFn = (s: EvalState) => string;
export type CondFn = (s: EvalState) => boolean;
export type AsyncCondFn = (s: EvalState) => MaybePromise<boolean>;

// ---- words -----------------------------------------------------------------------------------

export function compileWord(n: WordNode): WordFn {
  switch (n.k) {
    case 'digit': case 'string': { const v = n.v; return () => v; }
    case 'var': return n.fn;
    case 'backref': { const i = n.n; return (s) => backref(s, i); }
    case 'strfunc': {
      const f = n.fn;
      const arg = n.arg;
      if (arg.k === 'string' || arg.k === 'digit') { const v = arg.v; return (s) => f(s, v); }
      const a = compileWord(arg);
      return (s) => f(s, a(s));
    }
    case 'concat': {
      const parts: WordFn[] = [];
      flattenConcat(n, parts);
      if (parts.length === 2) {
        const [a, b] = parts as [WordFn, WordFn];
        return (s) => a(s) + b(s);
      }
      return (s) => {
        let out = '';
        for (let i = 0; i < parts.length; i++) out += parts[i]!(s);
        return out;
      };
    }
  }
}

function flattenConcat(n: WordNode, out: WordFn[]): void {
  if (n.k === 'concat') {
    flattenConcat(n.a, out);
    flattenConcat(n.b, out);
  } else out.push(compileWord(n));
}

/** $0-$9: empty without a remembered match, or past the groups matched. */
function backref(s: EvalState, n: number): string {
  const m = s.re.match;
  if (m === null || s.re.source === undefined || s.re.source === '') return '';
  return m[n] ?? '';
}

/** The word's value when it is a constant (no variable, function or back-reference). */
export function constantWord(n: WordNode): string | undefined {
  switch (n.k) {
    case 'digit': case 'string': return n.v;
    case 'concat': {
      const a = constantWord(n.a);
      const b = a === undefined ? undefined : constantWord(n.b);
      return a === undefined || b === undefined ? undefined : a + b;
    }
    default: return undefined;
  }
}

// ---- comparisons -------------------------------------------------------------------------------

/** apr_atoi64: optional blanks and sign, then digits up to the first other character,
 *  saturating at the 64-bit limits. */
function atoi64(s: string): bigint {
  const m = /^[ \t\n\v\f\r]*([+-]?)([0-9]*)/.exec(s)!;
  if (m[2] === '') return 0n;
  let v = BigInt(m[2]!);
  if (m[1] === '-') v = -v;
  if (v > 9223372036854775807n) return 9223372036854775807n;
  if (v < -9223372036854775808n) return -9223372036854775808n;
  return v;
}

function intCmp(a: string, b: string): number {
  // Short plain integers (the common case) compare as numbers.
  if (a.length < 15 && b.length < 15 && /^-?[0-9]+$/.test(a) && /^-?[0-9]+$/.test(b)) {
    const x = Number(a);
    const y = Number(b);
    return x < y ? -1 : x === y ? 0 : 1;
  }
  const x = atoi64(a);
  const y = atoi64(b);
  return x < y ? -1 : x === y ? 0 : 1;
}

function strCmp(a: string, b: string): number {
  return a < b ? -1 : a === b ? 0 : 1;
}

/** mod_ssl's strcmplex (AP_EXPR_FLAG_SSL_EXPR_COMPAT): the shorter string is smaller. */
function lexCmp(a: string, b: string): number {
  if (a.length !== b.length) return a.length > b.length ? 1 : -1;
  return strCmp(a, b);
}

function compileComp(op: CompOp, a: WordFn, b: WordFn, sslCompat: boolean): CondFn {
  const int = op.length === 2;
  const cmp = sslCompat ? lexCmp : int ? intCmp : strCmp;
  switch (op) {
    case 'STR_EQ':
      if (!sslCompat) return (s) => a(s) === b(s);
      return (s) => cmp(a(s), b(s)) === 0;
    case 'STR_NE':
      if (!sslCompat) return (s) => a(s) !== b(s);
      return (s) => cmp(a(s), b(s)) !== 0;
    case 'EQ': return (s) => cmp(a(s), b(s)) === 0;
    case 'NE': return (s) => cmp(a(s), b(s)) !== 0;
    case 'LT': case 'STR_LT': return (s) => cmp(a(s), b(s)) < 0;
    case 'LE': case 'STR_LE': return (s) => cmp(a(s), b(s)) <= 0;
    case 'GT': case 'STR_GT': return (s) => cmp(a(s), b(s)) > 0;
    case 'GE': case 'STR_GE': return (s) => cmp(a(s), b(s)) >= 0;
  }
}

function compileIn(a: WordFn, list: ListNode): CondFn {
  if (list.k === 'list') {
    const consts = list.items.map(constantWord);
    if (consts.every((c) => c !== undefined)) {
      const set = new Set(consts as string[]);
      return (s) => set.has(a(s));
    }
    const items = list.items.map(compileWord);
    return (s) => {
      const needle = a(s);
      for (let i = 0; i < items.length; i++) if (items[i]!(s) === needle) return true;
      return false;
    };
  }
  const f = list.fn;
  const arg = compileWord(list.arg);
  return (s) => {
    const needle = a(s);
    const hay = f(s, arg(s));
    return hay !== null && hay.includes(needle);
  };
}

// ---- conditions ----------------------------------------------------------------------------------

export function isAsync(n: CondNode): boolean {
  switch (n.k) {
    case 'unary': return n.async;
    case 'not': return isAsync(n.e);
    case 'and': case 'or': return isAsync(n.a) || isAsync(n.b);
    default: return false;
  }
}

export function compileCond(n: CondNode, sslCompat: boolean): CondFn {
  switch (n.k) {
    case 'true': return () => true;
    case 'false': return () => false;
    case 'not': { const e = compileCond(n.e, sslCompat); return (s) => !e(s); }
    case 'and': {
      const a = compileCond(n.a, sslCompat);
      const b = compileCond(n.b, sslCompat);
      return (s) => a(s) && b(s);
    }
    case 'or': {
      const a = compileCond(n.a, sslCompat);
      const b = compileCond(n.b, sslCompat);
      return (s) => a(s) || b(s);
    }
    case 'comp': return compileComp(n.op, compileWord(n.a), compileWord(n.b), sslCompat);
    case 'regex': {
      const w = compileWord(n.a);
      const re = n.re;
      const neg = n.negate;
      if (!n.groups) return (s) => re.test(w(s)) !== neg;
      return (s) => {
        const subject = w(s);
        const m = re.exec(subject);
        s.re.source = m !== null ? subject : undefined;
        s.re.match = m;
        return (m !== null) !== neg;
      };
    }
    case 'in': return compileIn(compileWord(n.a), n.list);
    case 'unary': {
      const f = n.fn as (s: EvalState, a: string) => boolean;
      const a = compileWord(n.a);
      return (s) => f(s, a(s));
    }
    case 'binary': {
      const f = n.fn;
      const a = compileWord(n.a);
      const b = compileWord(n.b);
      return (s) => f(s, a(s), b(s));
    }
  }
}

/** A condition with subrequest operators: promises only along their paths. */
export function compileAsyncCond(n: CondNode, sslCompat: boolean): AsyncCondFn {
  if (!isAsync(n)) return compileCond(n, sslCompat);
  switch (n.k) {
    case 'not': {
      const e = compileAsyncCond(n.e, sslCompat);
      return (s) => then(e(s), (v) => !v);
    }
    case 'and': {
      const a = compileAsyncCond(n.a, sslCompat);
      const b = compileAsyncCond(n.b, sslCompat);
      return (s) => then(a(s), (v) => (v ? b(s) : false));
    }
    case 'or': {
      const a = compileAsyncCond(n.a, sslCompat);
      const b = compileAsyncCond(n.b, sslCompat);
      return (s) => then(a(s), (v) => (v ? true : b(s)));
    }
    case 'unary': {
      const f = n.fn;
      const a = compileWord(n.a);
      return (s) => f(s, a(s));
    }
    default:
      return compileCond(n, sslCompat);
  }
}

function then<T, U>(v: MaybePromise<T>, k: (x: T) => MaybePromise<U>): MaybePromise<U> {
  return v instanceof Promise ? v.then(k) : k(v);
}
