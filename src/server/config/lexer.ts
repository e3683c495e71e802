// The configuration language's lexical rules, as httpd reads them (util.c ap_cfg_getline,
// ap_getword_conf): logical lines with backslash continuation, '#' comments, quoted words.

import { configurationLinesRead } from '../../engine/compiler.js';

export interface LogicalLine {
  /** The text with continuations joined and surrounding white space removed. */
  readonly text: string;
  /** First and last physical line (1-based); httpd reports the last one in errors. */
  readonly firstLine: number;
  readonly line: number;
  /** The physical lines exactly as written (without line terminators). */
  readonly raw: readonly string[];
}

const WS = /[ \t\r\f\v]/;

/** Splits a file into logical lines. Blank and comment lines are kept (kind via text).
 *  As httpd 2.4's ap_cfg_getline: a backslash immediately before the line feed (or CR LF)
 *  joins the next physical line, comments included; "\\ " with trailing white space does not. */
export function splitLogicalLines(source: string): LogicalLine[] {
  const physical = source.split('\n');
  configurationLinesRead(physical.length);
  // The text after the last line feed: a final line without terminator (or nothing).
  const lastTerminated = physical.length - 1;
  if (physical[lastTerminated] === '') physical.pop();
  const out: LogicalLine[] = [];
  let i = 0;
  while (i < physical.length) {
    const first = i;
    const raw: string[] = [];
    let acc = '';
    for (;;) {
      const p = physical[i] ?? '';
      raw.push(p);
      const terminated = i < lastTerminated;
      i++;
      const piece = terminated ? p.replace(/\r$/, '') : p;
      if (terminated && piece.endsWith('\\')) {
        acc += piece.slice(0, -1);
        if (i < physical.length) continue;
        break;
      }
      acc += piece;
      break;
    }
    out.push({ text: trim(acc), firstLine: first + 1, line: i, raw });
  }
  return out;
}

export function trim(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && WS.test(s[a]!)) a++;
  while (b > a && WS.test(s[b - 1]!)) b--;
  return s.slice(a, b);
}

/** A cursor over a directive's argument string. */
export class ArgCursor {
  pos = 0;
  constructor(readonly text: string) {}
  atEnd(): boolean {
    this.skipWs();
    return this.pos >= this.text.length;
  }
  skipWs(): void {
    while (this.pos < this.text.length && WS.test(this.text[this.pos]!)) this.pos++;
  }
  /** The rest of the line after white space (RAW_ARGS). */
  rest(): string {
    this.skipWs();
    return this.text.slice(this.pos);
  }
  /** One word as ap_getword_conf reads it: quotes group, a backslash escapes the quote. */
  word(): string {
    this.skipWs();
    const t = this.text;
    if (this.pos >= t.length) return '';
    const q = t[this.pos];
    if (q === '"' || q === "'") {
      // httpd finds the end skipping backslash-quote and backslash-backslash pairs, then
      // unescapes \\ and \q.
      let end = this.pos + 1;
      while (end < t.length && t[end] !== q) end += t[end] === '\\' && (t[end + 1] === q || t[end + 1] === '\\') ? 2 : 1;
      const w = unescapeConf(t.slice(this.pos + 1, end), q);
      this.pos = end < t.length ? end + 1 : end;
      this.skipWs();
      return w;
    }
    const start = this.pos;
    while (this.pos < t.length && !WS.test(t[this.pos]!)) this.pos++;
    const w = unescapeConf(t.slice(start, this.pos), '');
    this.skipWs();
    return w;
  }
}

function unescapeConf(s: string, quote: string): string {
  if (!s.includes('\\')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && (s[i + 1] === '\\' || (quote !== '' && s[i + 1] === quote))) {
      out += s[i + 1];
      i++;
    } else out += s[i];
  }
  return out;
}

/** Splits an argument string into words (ap_getword_conf repeatedly). */
export function splitWords(text: string): string[] {
  const c = new ArgCursor(text);
  const out: string[] = [];
  while (!c.atEnd()) out.push(c.word());
  return out;
}

/** Apache's ap_resolve_env: ${NAME} from Define'd variables, then the environment.
 *  Undefined names are left as written and reported through `onUndefined` (those with a ':'
 *  silently, as httpd does). */
export function resolveVariables(
  text: string,
  lookup: (name: string) => string | undefined,
  onUndefined: (name: string) => void,
): string {
  if (!text.includes('${')) return text;
  // Any text up to the next } is the name, as ap_resolve_env reads it (${A|b} included).
  return text.replace(/\$\{([^}]*)\}/g, (whole, name: string) => {
    const v = lookup(name);
    if (v === undefined) {
      // A name with a ':' is left without a warning: it is mod_rewrite's ${map:key}.
      if (!name.includes(':')) onUndefined(name);
      return whole;
    }
    return v;
  });
}
