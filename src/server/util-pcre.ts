// Regular expressions as httpd compiles and substitutes them (server/util_pcre.c's ap_pregcomp
// over PCRE2 with RegexDefaultOptions, util.c's ap_pregsub): PCRE spellings translated to
// JavaScript's, and $0..$9 substitution. Used by mod_setenvif, mod_headers and mod_rewrite.

import { pcreQuantifierTooBig } from '../expr/index.js';

/** httpd's AP_MAX_REG_MATCH: $0..$9. */
export const AP_MAX_REG_MATCH = 10;
/** httpd's AP_PREGSUB_MAXLEN (HUGE_STRING_LEN * 8). */
export const AP_PREGSUB_MAXLEN = 8192 * 8;

const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alpha: 'A-Za-z', digit: '0-9', alnum: 'A-Za-z0-9', upper: 'A-Z', lower: 'a-z',
  space: '\\t\\n\\v\\f\\r ', blank: ' \\t', xdigit: '0-9A-Fa-f', word: '\\w',
  punct: '!-\\/:-@\\[-`{-~', cntrl: '\\x00-\\x1f\\x7f', print: '\\x20-\\x7e', graph: '\\x21-\\x7e',
  ascii: '\\x00-\\x7f',
};
/** PCRE's \s without UTF: ASCII white space only (JavaScript's \s adds U+00A0 and others). */
const PCRE_SPACE = '\\t\\n\\v\\f\\r ';

function escapeLiteral(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

/** Translates a PCRE pattern into JavaScript syntax; undefined where the two cannot agree
 *  (the caller then reports "could not be compiled"). Covers what configurations use: POSIX
 *  classes, \A \z \Z, \Q..\E, leading (?i)/(?s)/(?m), (?P<name>), (?#...), a ']' first in a
 *  class, and PCRE's ASCII-only \s and \h. */
export function translatePcre(src: string): { source: string; flags: string } | undefined {
  let out = '';
  let flags = '';
  let i = 0;
  const lead = /^\(\?([a-z]+)\)/.exec(src);
  if (lead) {
    for (const f of lead[1]!) {
      if (f === 'i' || f === 'm') { if (!flags.includes(f)) flags += f; }
      else if (f !== 's') return undefined;
    }
    i = lead[0].length;
  }
  let inClass = false;
  let classStart = false;
  while (i < src.length) {
    const c = src[i]!;
    if (c === '\\') {
      const n = src[i + 1];
      if (n === undefined) return undefined; // PCRE: "\ at end of pattern"
      if (n === 'Q') {
        const end = src.indexOf('\\E', i + 2);
        const lit = end < 0 ? src.slice(i + 2) : src.slice(i + 2, end);
        out += escapeLiteral(lit);
        i = end < 0 ? src.length : end + 2;
        if (lit !== '') classStart = false;
        continue;
      }
      classStart = false;
      i += 2;
      switch (n) {
        case 'E': continue;
        case 's': out += inClass ? PCRE_SPACE : `[${PCRE_SPACE}]`; continue;
        case 'h': out += inClass ? ' \\t\\xa0' : '[ \\t\\xa0]'; continue;
        case 'e': out += '\\x1b'; continue;
        case 'a': out += '\\x07'; continue;
        default: break;
      }
      if (!inClass) {
        if (n === 'A') { out += '(?<![\\s\\S])'; continue; }
        if (n === 'z') { out += '(?![\\s\\S])'; continue; }
        if (n === 'Z') { out += '(?=\\n?(?![\\s\\S]))'; continue; }
        if (n === 'g') {
          const g = /^(?:\{(\d+)\}|(\d+))/.exec(src.slice(i));
          if (!g) return undefined;
          out += '\\' + (g[1] ?? g[2]!);
          i += g[0].length;
          continue;
        }
        if (n === 'G' || n === 'K' || n === 'R' || n === 'X' || n === 'C') return undefined;
      }
      out += c + n;
      continue;
    }
    if (inClass) {
      if (c === '[' && src[i + 1] === ':') {
        const end = src.indexOf(':]', i + 2);
        if (end >= 0) {
          const name = src.slice(i + 2, end);
          const cls = POSIX_CLASSES[name];
          if (cls === undefined) return undefined; // includes negated [:^x:]
          out += cls;
          i = end + 2;
          classStart = false;
          continue;
        }
      }
      if (c === ']') {
        if (classStart) out += '\\]';
        else { out += ']'; inClass = false; }
      } else {
        out += c;
      }
      classStart = false;
      i++;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += '[';
      i++;
      if (src[i] === '^') { out += '^'; i++; }
      classStart = true;
      continue;
    }
    if (c === '(' && src[i + 1] === '?') {
      if (src.startsWith('(?P<', i)) { out += '(?<'; i += 4; continue; }
      const named = /^\(\?P=(\w+)\)/.exec(src.slice(i));
      if (named) { out += `\\k<${named[1]}>`; i += named[0].length; continue; }
      if (src[i + 2] === '#') {
        const end = src.indexOf(')', i);
        if (end < 0) return undefined;
        i = end + 1;
        continue;
      }
    }
    out += c;
    i++;
  }
  if (inClass) return undefined;
  return { source: out, flags };
}

/** ap_pregcomp: compiles a PCRE pattern with httpd's default options (RegexDefaultOptions
 *  DOTALL DOLLAR_ENDONLY: '.' matches a newline, '$' only the very end), optionally without
 *  case. Undefined when the pattern does not compile. */
export function compileApacheRegex(pattern: string, icase: boolean): RegExp | undefined {
  if (pcreQuantifierTooBig(pattern)) return undefined;
  const t = translatePcre(pattern);
  if (t === undefined) return undefined;
  let flags = 's' + t.flags;
  if (icase && !flags.includes('i')) flags += 'i';
  try {
    return new RegExp(t.source, flags);
  } catch {
    return undefined;
  }
}

/** ap_pregsub: $0..$9 become the captured text (nothing for a group that did not take part),
 *  a backslash makes the next character literal. Undefined when the result would exceed
 *  AP_PREGSUB_MAXLEN (httpd's AP_REG_ESPACE). */
export function pregsub(template: string, groups: ArrayLike<string | undefined> | null): string | undefined {
  if (!template.includes('$') && !template.includes('\\')) return template.length >= AP_PREGSUB_MAXLEN ? undefined : template;
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i]!;
    if (c === '$' && i + 1 < template.length && template.charCodeAt(i + 1) >= 48 && template.charCodeAt(i + 1) <= 57) {
      const no = template.charCodeAt(++i) - 48;
      if (groups && no < groups.length && no < AP_MAX_REG_MATCH) out += groups[no] ?? '';
      continue;
    }
    if (c === '\\' && i + 1 < template.length) {
      out += template[++i];
      continue;
    }
    out += c;
  }
  return out.length >= AP_PREGSUB_MAXLEN ? undefined : out;
}
