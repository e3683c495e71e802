// PCRE patterns (httpd's ap_pregcomp) as JavaScript regular expressions: leading inline
// options such as (?i) become flags, and PCRE spellings JavaScript lacks are rewritten
// (\A \z \Z anchors, (?P<name> groups, POSIX [:classes:] in brackets). A pattern neither
// accepts is refused: the caller reports "Failed to compile regular expression".

const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alpha: 'a-zA-Z', digit: '0-9', alnum: 'a-zA-Z0-9', upper: 'A-Z', lower: 'a-z', space: ' \\t\\n\\r\\f\\v',
  xdigit: '0-9A-Fa-f', punct: '!-\\/:-@\\[-`{-~', blank: ' \\t', cntrl: '\\x00-\\x1f\\x7f', print: ' -~', graph: '!-~',
  word: '\\w',
};

export interface CompiledRegex {
  readonly re: RegExp;
  /** Capturing groups in the pattern (httpd's re_nsub). */
  readonly groups: number;
}

/** Whether a pattern has a {n}, {n,} or {n,m} quantifier with a number PCRE refuses ("number
 *  too big in {} quantifier": over 65535), which JavaScript would accept. Escaped braces and
 *  braces inside a character class are not quantifiers. */
export function pcreQuantifierTooBig(pattern: string): boolean {
  if (!pattern.includes('{')) return false;
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') { i++; continue; }
    if (inClass) { if (c === ']') inClass = false; continue; }
    if (c === '[') { inClass = true; if (pattern[i + 1] === ']') i++; continue; }
    if (c !== '{') continue;
    const m = /^\{(\d+)(?:,(\d*))?\}/.exec(pattern.slice(i));
    if (m !== null && (Number(m[1]) > 65535 || (m[2] !== undefined && m[2] !== '' && Number(m[2]) > 65535))) return true;
  }
  return false;
}

/** Compiles a PCRE pattern; `flags` may hold 'i'. Null when it does not compile. */
export function compilePcre(pattern: string, flags = ''): CompiledRegex | null {
  if (pcreQuantifierTooBig(pattern)) return null;
  let src = pattern;
  let f = flags;
  const m = /^\(\?([imsx]+)\)/.exec(src);
  if (m) {
    src = src.slice(m[0].length);
    for (const c of m[1]!) {
      if (c === 'x') src = src.replace(/\\#/g, '\u0000').replace(/#.*$/gm, '').replace(/\s+/g, '').replace(/\u0000/g, '\\#');
      else if (!f.includes(c)) f += c;
    }
  }
  if (src.includes('\\') || src.includes('(?P') || src.includes('[:')) {
    src = src
      .replace(/\\A/g, '^').replace(/\\[zZ]/g, '$')
      .replace(/\(\?P</g, '(?<').replace(/\(\?P=(\w+)\)/g, '\\k<$1>')
      .replace(/\[:(\^?)([a-z]+):\]/g, (all, neg: string, name: string) => {
        const cls = POSIX_CLASSES[name];
        return cls === undefined || neg !== '' ? all : cls;
      });
  }
  let re: RegExp;
  try {
    re = new RegExp(src, f);
  } catch {
    return null;
  }
  let groups = 0;
  try {
    groups = new RegExp(src + '|', f).exec('')!.length - 1;
  } catch {
    groups = 0;
  }
  // PCRE refuses a back-reference \1-\9 to a group the pattern does not have; JavaScript
  // would read it as an octal escape.
  for (const m of src.matchAll(/(\\*)\\([1-9])/g)) {
    if (m[1]!.length % 2 === 0 && Number(m[2]) > groups) return null;
  }
  return { re, groups };
}
