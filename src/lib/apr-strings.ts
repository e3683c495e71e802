// Small string helpers of APR and httpd's util.c that more than one module uses:
// apr_strfsize (mod_autoindex's size column, mod_include's `sizefmt="abbrev"`),
// apr_tokenize_to_argv (mod_ext_filter's cmd=, mod_rewrite's prg: maps).

/** apr_strfsize: a size in four characters ("  5 ", "1.2K", "973K", " 12M"). */
export function strfsize(size: number): string {
  if (size < 0) return '  - ';
  if (size < 973) return String(size).padStart(3, ' ') + ' ';
  const ord = 'KMGTPE';
  let o = 0;
  let n = size;
  for (;;) {
    let remain = n % 1024;
    n = Math.floor(n / 1024);
    if (n >= 973) { ++o; continue; }
    if (n < 9 || (n === 9 && remain < 973)) {
      remain = Math.floor((remain * 5 + 256) / 512);
      if (remain >= 10) { ++n; remain = 0; }
      return `${n}.${remain}${ord[o]}`;
    }
    if (remain >= 512) ++n;
    return String(n).padStart(3, ' ') + ord[o];
  }
}

/** apr_tokenize_to_argv: words separated by blanks, "..." and '...' quoting, backslash escapes. */
export function tokenizeArgv(s: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (i >= s.length) break;
    let w = '';
    let quote = '';
    if (s[i] === '"' || s[i] === "'") quote = s[i++]!;
    for (; i < s.length; i++) {
      const c = s[i]!;
      if (quote === '' && (c === ' ' || c === '\t')) break;
      if (quote !== '' && c === quote) { i++; break; }
      if (c === '\\' && i + 1 < s.length) { w += s[++i]; continue; }
      w += c;
    }
    out.push(w);
  }
  return out;
}
