// mod_rewrite's configuration parsers (modules/mappers/mod_rewrite.c parseargline,
// cmd_parseflagfield, cmd_rewritecond, cmd_rewriterule): the argument line, the [flags]
// field, the CondPattern kinds, and the substitution template, compiled once per
// configuration (or once per .htaccess file version). Pure functions: the fuzz test drives them.

import { compileApacheRegex } from '../../../server/util-pcre.js';
import { atoi } from '../../../lib/c-numbers.js';

// ---- flags (httpd's RULEFLAG_* / CONDFLAG_*) -----------------------------------------------
export const CONDFLAG_NOCASE = 1 << 1;
export const CONDFLAG_NOTMATCH = 1 << 2;
export const CONDFLAG_ORNEXT = 1 << 3;
export const CONDFLAG_NOVARY = 1 << 4;

export const RULEFLAG_FORCEREDIRECT = 1 << 1;
export const RULEFLAG_LASTRULE = 1 << 2;
export const RULEFLAG_NEWROUND = 1 << 3;
export const RULEFLAG_CHAIN = 1 << 4;
export const RULEFLAG_IGNOREONSUBREQ = 1 << 5;
export const RULEFLAG_NOTMATCH = 1 << 6;
export const RULEFLAG_PROXY = 1 << 7;
export const RULEFLAG_PASSTHROUGH = 1 << 8;
export const RULEFLAG_QSAPPEND = 1 << 9;
export const RULEFLAG_NOCASE = 1 << 10;
export const RULEFLAG_NOESCAPE = 1 << 11;
export const RULEFLAG_NOSUB = 1 << 12;
export const RULEFLAG_STATUS = 1 << 13;
export const RULEFLAG_ESCAPEBACKREF = 1 << 14;
export const RULEFLAG_DISCARDPATHINFO = 1 << 15;
export const RULEFLAG_QSDISCARD = 1 << 16;
export const RULEFLAG_END = 1 << 17;
export const RULEFLAG_ESCAPENOPLUS = 1 << 18;
export const RULEFLAG_QSLAST = 1 << 19;
export const RULEFLAG_QSNONE = 1 << 20;
export const RULEFLAG_ESCAPECTLS = 1 << 21;
export const RULEFLAG_UNSAFE_PREFIX_STAT = 1 << 22;
export const RULEFLAG_UNSAFE_ALLOW3F = 1 << 23;
export const RULEFLAG_UNC = 1 << 24;

/** The flag names `plume explain` prints for a rule's flag bits. */
export const RULE_FLAG_NAMES: readonly [number, string][] = [
  [RULEFLAG_CHAIN, 'C'], [RULEFLAG_LASTRULE, 'L'], [RULEFLAG_END, 'END'], [RULEFLAG_NEWROUND, 'N'],
  [RULEFLAG_FORCEREDIRECT, 'R'], [RULEFLAG_PROXY, 'P'], [RULEFLAG_PASSTHROUGH, 'PT'],
  [RULEFLAG_QSAPPEND, 'QSA'], [RULEFLAG_QSDISCARD, 'QSD'], [RULEFLAG_QSLAST, 'QSL'],
  [RULEFLAG_NOCASE, 'NC'], [RULEFLAG_NOESCAPE, 'NE'], [RULEFLAG_IGNOREONSUBREQ, 'NS'],
  [RULEFLAG_ESCAPEBACKREF, 'B'], [RULEFLAG_ESCAPENOPLUS, 'BNP'], [RULEFLAG_ESCAPECTLS, 'BCTLS'],
  [RULEFLAG_DISCARDPATHINFO, 'DPI'], [RULEFLAG_UNSAFE_PREFIX_STAT, 'UnsafePrefixStat'],
  [RULEFLAG_UNSAFE_ALLOW3F, 'UnsafeAllow3F'], [RULEFLAG_UNC, 'UNC'],
];

export const REWRITE_MAX_ROUNDS = 32000;

// ---- CondPattern kinds ---------------------------------------------------------------------
export const CONDPAT_REGEX = 0;
export const CONDPAT_FILE_EXISTS = 1;
export const CONDPAT_FILE_SIZE = 2;
export const CONDPAT_FILE_LINK = 3;
export const CONDPAT_FILE_DIR = 4;
export const CONDPAT_FILE_XBIT = 5;
export const CONDPAT_LU_URL = 6;
export const CONDPAT_LU_FILE = 7;
export const CONDPAT_STR_LT = 8;
export const CONDPAT_STR_LE = 9;
export const CONDPAT_STR_EQ = 10;
export const CONDPAT_STR_GT = 11;
export const CONDPAT_STR_GE = 12;
export const CONDPAT_INT_LT = 13;
export const CONDPAT_INT_LE = 14;
export const CONDPAT_INT_EQ = 15;
export const CONDPAT_INT_GT = 16;
export const CONDPAT_INT_GE = 17;
export const CONDPAT_AP_EXPR = 18;

// ---- substitution templates ----------------------------------------------------------------
/** One piece of a template (do_expand's cases), resolved at configuration time. */
export type Part =
  | { readonly kind: 'lit'; readonly text: string }
  /** A backslash-escaped character: copied, but never a "safe" query separator. */
  | { readonly kind: 'esc'; readonly text: string }
  | { readonly kind: 'var'; readonly name: string }
  | { readonly kind: 'map'; readonly map: string; readonly key: Template; readonly dflt: Template | undefined }
  /** $N (rule) or %N (condition) back-reference. */
  | { readonly kind: 'ref'; readonly cond: boolean; readonly n: number };

export interface Template {
  readonly source: string;
  readonly parts: readonly Part[];
  /** The whole template is literal text (no expansion at request time). */
  readonly literal: string | undefined;
  /** Contains a look-ahead variable (LA-U / LA-F) or a map lookup: may need to wait. */
  readonly mayWait: boolean;
}

function findClosingCurly(s: string, from: number): number {
  let depth = 1;
  for (let i = from; i < s.length; i++) {
    if (s[i] === '}' && --depth === 0) return i;
    if (s[i] === '{') depth++;
  }
  return -1;
}

function findCharInCurlies(s: string, from: number, c: string): number {
  let depth = 1;
  for (let i = from; i < s.length; i++) {
    if (s[i] === c && depth === 1) return i;
    if (s[i] === '}' && --depth === 0) return -1;
    if (s[i] === '{') depth++;
  }
  return -1;
}

/** Compiles a string as do_expand reads it: `\c`, `%{VAR}`, `${map:key|default}`, `$N`, `%N`. */
export function compileTemplate(source: string): Template {
  const parts: Part[] = [];
  let lit = '';
  let mayWait = false;
  const flush = (): void => {
    if (lit !== '') { parts.push({ kind: 'lit', text: lit }); lit = ''; }
  };
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (c !== '\\' && c !== '$' && c !== '%') { lit += c; i++; continue; }
    if (c === '\\') {
      flush();
      if (i + 1 >= source.length) { parts.push({ kind: 'esc', text: '\\' }); i++; continue; }
      parts.push({ kind: 'esc', text: source[i + 1]! });
      i += 2;
      continue;
    }
    const n = source[i + 1];
    if (n === '{') {
      const end = findClosingCurly(source, i + 2);
      if (end < 0) { lit += c + '{'; i += 2; continue; }
      if (c === '%') {
        flush();
        const name = source.slice(i + 2, end);
        if (/^la-[uf]:./i.test(name)) mayWait = true;
        parts.push({ kind: 'var', name });
        i = end + 1;
        continue;
      }
      const colon = findCharInCurlies(source, i + 2, ':');
      if (colon < 0) { lit += '${'; i += 2; continue; }
      flush();
      const inner = source.slice(i + 2, end);
      const keyStart = colon - (i + 2) + 1;
      const map = inner.slice(0, keyStart - 1);
      const rest = inner.slice(keyStart);
      const bar = findCharInCurlies(rest + '}', 0, '|');
      const key = bar < 0 ? rest : rest.slice(0, bar);
      const dflt = bar < 0 ? undefined : rest.slice(bar + 1);
      parts.push({ kind: 'map', map, key: compileTemplate(key), dflt: dflt === undefined ? undefined : compileTemplate(dflt) });
      mayWait = true;
      i = end + 1;
      continue;
    }
    if (n !== undefined && n >= '0' && n <= '9') {
      flush();
      parts.push({ kind: 'ref', cond: c === '%', n: n.charCodeAt(0) - 48 });
      i += 2;
      continue;
    }
    lit += c;
    i++;
  }
  flush();
  const literal = parts.length === 0 ? '' : parts.length === 1 && parts[0]!.kind === 'lit' ? parts[0]!.text : undefined;
  return { source, parts, literal, mayWait };
}

// ---- the argument line -------------------------------------------------------------------------
export interface ArgLine {
  a1: string;
  a2: string;
  a3: string | undefined;
}

/** parseargline: up to three words, each optionally quoted with " or ', where a backslash
 *  before a blank keeps the blank in the word (the backslash stays too). Undefined when
 *  there is no second word. */
export function parseArgLine(line: string): ArgLine | undefined {
  const isSpace = (c: string | undefined): boolean => c !== undefined && (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v');
  let i = 0;
  const word = (): { text: string; ended: boolean } => {
    const quote = line[i] === '"' || line[i] === "'" ? line[i++]! : '';
    const start = i;
    for (; i < line.length; i++) {
      const c = line[i]!;
      if ((isSpace(c) && quote === '') || c === quote) break;
      if (c === '\\' && isSpace(line[i + 1])) { i++; continue; }
    }
    const text = line.slice(start, i);
    const ended = i >= line.length;
    return { text, ended };
  };
  while (isSpace(line[i])) i++;
  const w1 = word();
  if (w1.ended) return undefined;
  i++;
  while (isSpace(line[i])) i++;
  const w2 = word();
  if (w2.ended) return { a1: w1.text, a2: w2.text, a3: undefined };
  i++;
  while (isSpace(line[i])) i++;
  if (i >= line.length) return { a1: w1.text, a2: w2.text, a3: undefined };
  const w3 = word();
  return { a1: w1.text, a2: w2.text, a3: w3.text };
}

/** cmd_parseflagfield: "[a,b=c, d ]" into key/value pairs handed to `set`. */
export function parseFlagField(field: string, set: (key: string, val: string) => string | undefined): string | undefined {
  if (field.length === 0 || field[0] !== '[' || field[field.length - 1] !== ']') return 'bad flag delimiters';
  // The closing bracket becomes the last separator; note "[" alone is "[" and "]" at once.
  const body = field.length === 1 ? '' : field.slice(1, -1) + ',';
  let k = 0;
  const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
  while (k < body.length) {
    while (isSpace(body[k])) k++;
    if (k >= body.length) break;
    const next = body.indexOf(',', k);
    if (next < 0) break;
    let end = next - 1;
    while (end >= k && isSpace(body[end])) end--;
    const item = body.slice(k, end + 1);
    const eq = item.indexOf('=');
    const key = eq < 0 ? item : item.slice(0, eq);
    const val = eq < 0 ? '' : item.slice(eq + 1);
    const err = set(key, val);
    if (err !== undefined) return err;
    k = next + 1;
  }
  return undefined;
}

// ---- RewriteCond ---------------------------------------------------------------------------------
/** A compiled ap_expr condition, as the expression engine hands it back. */
export interface CondExpr {
  /** Evaluates: true/false, the regex captures of its last match (for %N), or an error. */
  readonly source: string;
}

export interface RewriteCond {
  readonly input: Template;
  /** The pattern as written (with its operator and '!'), for the trace log. */
  readonly patternText: string;
  /** The pattern after the operator (the comparison string), for the comparisons. */
  readonly pattern: string;
  readonly regexp: RegExp | undefined;
  /** `RewriteCond expr "..."`: the compiled expression (its engine's own type). */
  expr: unknown;
  readonly flags: number;
  readonly ptype: number;
  readonly file: string;
  readonly line: number;
}

export interface CondParse {
  cond?: RewriteCond;
  error?: string;
  /** AH00665: NC on a non-regex pattern (the flag is dropped). */
  warning?: string;
  /** The expression text for `RewriteCond expr` (compiled by the caller). */
  exprText?: string;
}

/** cmd_rewritecond, without the expression compilation (the caller does that). */
export function parseCond(raw: string, file: string, line: number): CondParse {
  const args = parseArgLine(raw);
  if (args === undefined) return { error: `RewriteCond: bad argument line '${rawForError(raw)}'` };
  let flags = 0;
  if (args.a3 !== undefined) {
    const err = parseFlagField(args.a3, (key) => {
      const k = key.toLowerCase();
      if (k === 'nocase' || k === 'nc') flags |= CONDFLAG_NOCASE;
      else if (k === 'ornext' || k === 'or') flags |= CONDFLAG_ORNEXT;
      else if (k === 'novary' || k === 'nv') flags |= CONDFLAG_NOVARY;
      else return `unknown flag '${key}'`;
      return undefined;
    });
    if (err !== undefined) return { error: `RewriteCond: ${err}` };
  }
  const patternText = args.a2;
  let a2 = args.a2;
  if (a2[0] === '!') {
    flags |= CONDFLAG_NOTMATCH;
    a2 = a2.slice(1);
  }
  let ptype = CONDPAT_REGEX;
  if (args.a1.toLowerCase() === 'expr') {
    ptype = CONDPAT_AP_EXPR;
  } else if (a2.length >= 2) {
    if (a2[0] === '-') {
      if (a2.length === 2) {
        switch (a2[1]) {
          case 'f': ptype = CONDPAT_FILE_EXISTS; break;
          case 's': ptype = CONDPAT_FILE_SIZE; break;
          case 'd': ptype = CONDPAT_FILE_DIR; break;
          case 'x': ptype = CONDPAT_FILE_XBIT; break;
          case 'h': case 'L': case 'l': ptype = CONDPAT_FILE_LINK; break;
          case 'U': ptype = CONDPAT_LU_URL; break;
          case 'F': ptype = CONDPAT_LU_FILE; break;
        }
      } else if (a2.length >= 4) {
        const op = a2.slice(1, 3);
        const ops: Record<string, number> = { lt: CONDPAT_INT_LT, le: CONDPAT_INT_LE, gt: CONDPAT_INT_GT, ge: CONDPAT_INT_GE, eq: CONDPAT_INT_EQ, ne: CONDPAT_INT_EQ };
        const t = ops[op];
        if (t !== undefined) {
          ptype = t;
          a2 = a2.slice(3);
          // !-ne is -eq
          if (op === 'ne') flags ^= CONDFLAG_NOTMATCH;
        }
      }
    } else if (a2[0] === '>') {
      if (a2[1] === '=') { a2 = a2.slice(2); ptype = CONDPAT_STR_GE; } else { a2 = a2.slice(1); ptype = CONDPAT_STR_GT; }
    } else if (a2[0] === '<') {
      if (a2[1] === '=') { a2 = a2.slice(2); ptype = CONDPAT_STR_LE; } else { a2 = a2.slice(1); ptype = CONDPAT_STR_LT; }
    } else if (a2[0] === '=') {
      ptype = CONDPAT_STR_EQ;
      a2 = a2.slice(1);
      if (a2 === '""') a2 = '';
    }
  }
  let warning: string | undefined;
  if (ptype !== CONDPAT_REGEX && (ptype < CONDPAT_STR_LT || ptype > CONDPAT_STR_GE) && (flags & CONDFLAG_NOCASE)) {
    warning = `AH00665: RewriteCond: NoCase option for non-regex pattern '${a2}' is not supported and will be ignored. (${file}:${line})`;
    flags &= ~CONDFLAG_NOCASE;
  }
  let regexp: RegExp | undefined;
  if (ptype === CONDPAT_REGEX) {
    regexp = compileApacheRegex(a2, (flags & CONDFLAG_NOCASE) !== 0);
    if (regexp === undefined) return { error: `RewriteCond: cannot compile regular expression '${a2}'` };
  }
  const cond: RewriteCond = {
    input: compileTemplate(args.a1), patternText, pattern: a2, regexp, expr: undefined, flags, ptype, file, line,
  };
  return ptype === CONDPAT_AP_EXPR ? { cond, warning, exprText: a2 } : { cond, warning };
}

// ---- RewriteRule ---------------------------------------------------------------------------------
export interface RewriteRule {
  conds: readonly RewriteCond[];
  /** The pattern as written (after a leading '!'), for the trace log. */
  readonly pattern: string;
  readonly regexp: RegExp;
  /** The substitution as configured (a trailing '?' already cut when it means "no query"). */
  readonly output: string;
  readonly template: Template;
  readonly flags: number;
  readonly forcedMimetype: Template | undefined;
  readonly forcedHandler: Template | undefined;
  readonly status: number;
  readonly env: readonly Template[];
  readonly cookies: readonly Template[];
  readonly skip: number;
  readonly maxrounds: number;
  readonly escapes: string | undefined;
  readonly noescapes: string | undefined;
  /** The flags field as written ("[L,R=301]"), for `plume explain`. */
  readonly flagsText: string;
  readonly file: string;
  readonly line: number;
}

/** ap_index_of_response's known statuses (httpd's status_lines); anything else maps to 500. */
const KNOWN_STATUS = new Set([
  100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 306, 307, 308,
  400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 422, 423, 424,
  425, 426, 428, 429, 431, 451, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
]);


function rawForError(raw: string): string {
  return raw;
}

/** cmd_rewriterule. `conds` are the RewriteCond lines collected before it. */
export function parseRule(raw: string, conds: readonly RewriteCond[], file: string, line: number): { rule?: RewriteRule; error?: string } {
  const args = parseArgLine(raw);
  if (args === undefined) return { error: `RewriteRule: bad argument line '${rawForError(raw)}'` };
  let flags = 0;
  let status = 302;
  let skip = 0;
  let maxrounds = REWRITE_MAX_ROUNDS;
  let escapes: string | undefined;
  let noescapes: string | undefined;
  let forcedMimetype: string | undefined;
  let forcedHandler: string | undefined;
  const env: string[] = [];
  const cookies: string[] = [];
  if (args.a3 !== undefined) {
    const err = parseFlagField(args.a3, (fullKey, val) => {
      const c0 = fullKey[0];
      const key = fullKey.slice(1);
      const lk = key.toLowerCase();
      let error = false;
      switch (c0 === undefined ? '' : c0.toLowerCase()) {
        case 'b':
          if (key === '' || lk === 'ackrefescaping') {
            flags |= RULEFLAG_ESCAPEBACKREF;
            if (val !== '') escapes = val;
          } else if (lk === 'ne') {
            if (val !== '') noescapes = val;
            else return "flag 'BNE' wants a list of characters (i.e. [BNE=...])";
          } else if (lk === 'np' || lk === 'ackrefernoplus') {
            flags |= RULEFLAG_ESCAPENOPLUS;
          } else if (lk === 'ctls') {
            flags |= RULEFLAG_ESCAPECTLS | RULEFLAG_ESCAPEBACKREF;
          } else error = true;
          break;
        case 'c':
          if (key === '' || lk === 'hain') flags |= RULEFLAG_CHAIN;
          else if (lk === 'o' || lk === 'ookie') cookies.push(val);
          else error = true;
          break;
        case 'd':
          // httpd accepts any D... flag here without complaint (no error branch).
          if (key === '' || lk === 'pi' || lk === 'iscardpath') flags |= RULEFLAG_DISCARDPATHINFO;
          break;
        case 'e':
          if (key === '' || lk === 'nv') env.push(val);
          else if (lk === 'nd') flags |= RULEFLAG_END;
          else error = true;
          break;
        case 'f':
          if (key === '' || lk === 'orbidden') { flags |= RULEFLAG_STATUS | RULEFLAG_NOSUB; status = 403; } else error = true;
          break;
        case 'g':
          if (key === '' || lk === 'one') { flags |= RULEFLAG_STATUS | RULEFLAG_NOSUB; status = 410; } else error = true;
          break;
        case 'h':
          if (key === '' || lk === 'andler') forcedHandler = val; else error = true;
          break;
        case 'l':
          if (key === '' || lk === 'ast') flags |= RULEFLAG_LASTRULE; else error = true;
          break;
        case 'n':
          if (lk === 'e' || lk === 'oescape') flags |= RULEFLAG_NOESCAPE;
          else if (key === '' || lk === 'ext') {
            flags |= RULEFLAG_NEWROUND;
            if (val !== '') maxrounds = atoi(val);
          } else if (lk === 's' || lk === 'osubreq') flags |= RULEFLAG_IGNOREONSUBREQ;
          else if (lk === 'c' || lk === 'ocase') flags |= RULEFLAG_NOCASE;
          else error = true;
          break;
        case 'p':
          if (key === '' || lk === 'roxy') flags |= RULEFLAG_PROXY;
          else if (lk === 't' || lk === 'assthrough') flags |= RULEFLAG_PASSTHROUGH;
          else error = true;
          break;
        case 'q':
          if (lk === 'sa' || lk === 'sappend') flags |= RULEFLAG_QSAPPEND;
          else if (lk === 'sd' || lk === 'sdiscard') flags |= RULEFLAG_QSDISCARD;
          else if (lk === 'sl' || lk === 'slast') flags |= RULEFLAG_QSLAST;
          else error = true;
          break;
        case 'r':
          if (key === '' || lk === 'edirect') {
            flags |= RULEFLAG_FORCEREDIRECT;
            if (val !== '') {
              let st = 0;
              const lv = val.toLowerCase();
              if (lv === 'permanent') st = 301;
              else if (lv === 'temp') st = 302;
              else if (lv === 'seeother') st = 303;
              else if (val[0]! >= '0' && val[0]! <= '9') {
                st = atoi(val);
                if (st !== 500 && !KNOWN_STATUS.has(st)) return `invalid HTTP response code '${val}' for flag 'R'`;
                if (!(st >= 300 && st <= 399)) flags |= RULEFLAG_STATUS | RULEFLAG_NOSUB;
              }
              status = st;
            }
          } else error = true;
          break;
        case 's':
          if (key === '' || lk === 'kip') skip = atoi(val); else error = true;
          break;
        case 't':
          if (key === '' || lk === 'ype') forcedMimetype = val; else error = true;
          break;
        case 'u':
          if (lk === 'nsafeprefixstat') flags |= RULEFLAG_UNSAFE_PREFIX_STAT;
          else if (lk === 'nsafeallow3f') flags |= RULEFLAG_UNSAFE_ALLOW3F;
          else if (lk === 'nc') flags |= RULEFLAG_UNC;
          else error = true;
          break;
        default:
          error = true;
      }
      return error ? `unknown flag '${fullKey}'` : undefined;
    });
    if (err !== undefined) return { error: `RewriteRule: ${err}` };
  }
  let a1 = args.a1;
  if (a1[0] === '!') {
    flags |= RULEFLAG_NOTMATCH;
    a1 = a1.slice(1);
  }
  const regexp = compileApacheRegex(a1, (flags & RULEFLAG_NOCASE) !== 0);
  if (regexp === undefined) return { error: `RewriteRule: cannot compile regular expression '${a1}'` };
  let output = args.a2;
  if (output === '-') flags |= RULEFLAG_NOSUB;
  if (output.endsWith('?')) {
    if (flags & RULEFLAG_QSAPPEND) {
      flags |= RULEFLAG_QSLAST;
    } else {
      flags |= RULEFLAG_QSNONE;
      output = output.slice(0, -1);
    }
  } else if ((flags & RULEFLAG_QSDISCARD) && !output.includes('?')) {
    flags |= RULEFLAG_QSNONE;
  }
  return {
    rule: {
      conds, pattern: a1, regexp, output, template: compileTemplate(output), flags,
      forcedMimetype: forcedMimetype === undefined ? undefined : compileTemplate(forcedMimetype),
      forcedHandler: forcedHandler === undefined ? undefined : compileTemplate(forcedHandler),
      status, env: env.map(compileTemplate), cookies: cookies.map(compileTemplate), skip, maxrounds, escapes, noescapes,
      flagsText: args.a3 ?? '', file, line,
    },
  };
}
