// ProxyHTMLURLMap rules of mod_proxy_html (modules/filters/mod_proxy_html.c): their flags, and
// the three ways they are applied — to a link attribute (one match, at the start for a plain
// string), to an event attribute and to script, style and comment text (every match). The
// string edits follow httpd's in-place C edits, quirks included, so the output is Apache's.

import { pregsub } from '../../../server/util-pcre.js';
import type { BoolExpr } from '../../../expr/index.js';

export const M_HTML = 0x01;
export const M_EVENTS = 0x02;
export const M_CDATA = 0x04;
export const M_REGEX = 0x08;
export const M_ATSTART = 0x10;
export const M_ATEND = 0x20;
export const M_LAST = 0x40;
export const M_NOTLAST = 0x80;
export const M_INTERPOLATE_TO = 0x100;
export const M_INTERPOLATE_FROM = 0x200;

export interface UrlMap {
  readonly flags: number;
  /** The pattern as written (kept for interpolation). */
  readonly fromText: string;
  /** The compiled pattern of an R rule (none for a plain string, or for an R rule with v,
   *  compiled per request after interpolation). */
  readonly re: RegExp | undefined;
  readonly icase: boolean;
  readonly to: string;
  readonly cond: BoolExpr | undefined;
}

/** A rule as used for one request (after ProxyHTMLInterp's conditions and ${...}). */
export interface ActiveMap {
  readonly flags: number;
  readonly from: string;
  readonly re: RegExp | undefined;
  readonly to: string;
}

/** The flags of a rule: h, e and c take it out of links, events and text; ^ $ R L l V v. */
export function mapFlags(flags: string | undefined): number {
  const has = (c: string): boolean => flags !== undefined && flags.includes(c);
  return (has('h') ? 0 : M_HTML) | (has('e') ? 0 : M_EVENTS) | (has('c') ? 0 : M_CDATA)
    | (has('^') ? M_ATSTART : 0) | (has('$') ? M_ATEND : 0) | (has('R') ? M_REGEX : 0)
    | (has('L') ? M_LAST : 0) | (has('l') ? M_NOTLAST : 0)
    | (has('V') ? M_INTERPOLATE_TO : 0) | (has('v') ? M_INTERPOLATE_FROM : 0);
}

/** Matches a regular expression against `s` from `offs` as regexec on `s + offs` does (^ at
 *  offs); the match position is relative to offs. */
function execAt(re: RegExp, s: string, offs: number): RegExpExecArray | null {
  re.lastIndex = 0;
  return re.exec(offs === 0 ? s : s.slice(offs));
}

function subst(to: string, m: RegExpExecArray): string {
  return pregsub(to, m) ?? '';
}

/** A link attribute's value: the first rule that matches (an R rule with l lets the next
 *  rules try too); a plain string matches case-blind at the start only. */
export function mapLink(value: string, maps: readonly ActiveMap[]): string {
  let buf = value;
  let numMatch = 0;
  for (const m of maps) {
    if (!(m.flags & M_HTML)) continue;
    if (m.flags & M_REGEX) {
      const hit = m.re ? execAt(m.re, buf, 0) : null;
      if (hit) {
        numMatch++;
        buf = buf.slice(0, hit.index) + subst(m.to, hit) + buf.slice(hit.index + hit[0].length);
      }
    } else if (buf.slice(0, m.from.length).toLowerCase() === m.from.toLowerCase() && buf.length >= m.from.length) {
      buf = m.to + buf.slice(m.from.length);
      break;
    }
    if (numMatch > 0 && !(m.flags & M_NOTLAST)) break;
  }
  return buf;
}

/** Every match of an R rule replaced, from left to right. */
function replaceAll(buf: string, re: RegExp, to: string): { buf: string; n: number } {
  let offs = 0;
  let n = 0;
  for (;;) {
    if (offs > buf.length) break;
    const hit = execAt(re, buf, offs);
    if (!hit) break;
    const subs = subst(to, hit);
    const at = offs + hit.index;
    buf = buf.slice(0, at) + subs + buf.slice(at + hit[0].length);
    offs = at + subs.length;
    n++;
    // DIFFERENCE: httpd loops for ever on an empty match; plume steps past the character
    // after it.
    if (hit[0].length === 0) offs++;
  }
  return { buf, n };
}

/** An event attribute's value (ProxyHTMLExtended): every match of each rule; L stops after
 *  a rule that matched. */
export function mapEvent(value: string, maps: readonly ActiveMap[]): string {
  let buf = value;
  for (const m of maps) {
    if (!(m.flags & M_EVENTS)) continue;
    let numMatch = 0;
    if (m.flags & M_REGEX) {
      if (!m.re) continue;
      const r = replaceAll(buf, m.re, m.to);
      buf = r.buf;
      numMatch = r.n;
    } else {
      // DIFFERENCE: an empty pattern makes httpd loop for ever; plume skips the rule.
      if (m.from === '') continue;
      let found = buf.indexOf(m.from);
      if ((m.flags & M_ATSTART) && found !== 0) continue;
      // DIFFERENCE: httpd decides where to look next before making its in-place edit, so a
      // second match with a replacement of another length edits the wrong bytes, or crashes
      // the child (a negative memmove length); plume replaces each match.
      while (found >= 0) {
        if ((m.flags & M_ATEND) && found + m.from.length < buf.length) {
          found = buf.indexOf(m.from, found + m.from.length);
          continue;
        }
        buf = buf.slice(0, found) + m.to + buf.slice(found + m.from.length);
        numMatch++;
        found = buf.indexOf(m.from, found + m.to.length);
      }
    }
    if (numMatch && (m.flags & M_LAST)) break;
  }
  return buf;
}

/** Script, style and (with ProxyHTMLExtended) comment text: every match of every rule. */
export function mapText(text: string, maps: readonly ActiveMap[]): string {
  let buf = text;
  for (const m of maps) {
    if (!(m.flags & M_CDATA)) continue;
    if (m.flags & M_REGEX) {
      if (m.re) buf = replaceAll(buf, m.re, m.to).buf;
      continue;
    }
    if (m.from === '') continue;
    const sFrom = m.from.length;
    const sTo = m.to.length;
    let match = 0;
    for (let found = buf.indexOf(m.from); found >= 0; found = match + sTo <= buf.length ? buf.indexOf(m.from, match + sTo) : -1) {
      match = found;
      if ((m.flags & M_ATSTART) && match !== 0) break;
      if ((m.flags & M_ATEND) && match < buf.length - sFrom) continue;
      buf = buf.slice(0, match) + m.to + buf.slice(match + sFrom);
    }
  }
  return buf;
}

/** interpolate_vars: ${VAR} and ${VAR|default} from the request's environment. */
export function interpolateVars(str: string, env: ReadonlyMap<string, string>, trace?: (v: string, rep: string) => void): string {
  // Bounded: httpd substitutes again from the start each time, so a variable naming itself
  // would never end.
  for (let guard = 0; guard < 1000; guard++) {
    const start = str.indexOf('${');
    if (start < 0) break;
    const end = str.indexOf('}', start + 2);
    if (end < 0) break;
    let delim = str.indexOf('|', start + 2);
    if (delim >= end) delim = -1;
    const v = delim >= 0 ? str.slice(start + 2, delim) : str.slice(start + 2, end);
    let rep = env.get(v);
    if (rep === undefined) rep = delim >= 0 ? str.slice(delim + 1, end) : '';
    str = str.slice(0, start) + rep + str.slice(end + 1);
    trace?.(v, rep);
  }
  return str;
}
