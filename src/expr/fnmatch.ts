// apr_fnmatch for -fnmatch (APR_FNM_PATHNAME: wildcards do not cross '/'), -strmatch (no
// flags: '*' crosses '/') and -strcmatch (APR_FNM_CASE_BLIND). '*', '?', '[...]' with '!' or
// '^' negation and ranges, '\' quoting the next character. The pattern is a run-time value,
// so compiled patterns are kept in a small cache.

export const FNM_PATHNAME = 1;
export const FNM_CASE_BLIND = 2;

const cache = new Map<string, RegExp>();

function compile(pattern: string, flags: number): RegExp {
  const key = flags + '\u0000' + pattern;
  let re = cache.get(key);
  if (re !== undefined) return re;
  const pathname = (flags & FNM_PATHNAME) !== 0;
  let src = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') src += pathname ? '[^/]*' : '[^]*';
    else if (c === '?') src += pathname ? '[^/]' : '[^]';
    else if (c === '[') {
      let j = i + 1;
      let neg = false;
      if (pattern[j] === '!' || pattern[j] === '^') { neg = true; j++; }
      let body = '';
      let first = true;
      let closed = false;
      for (; j < pattern.length; j++) {
        const d = pattern[j]!;
        if (d === ']' && !first) { closed = true; break; }
        first = false;
        if (d === '\\' && j + 1 < pattern.length) { body += '\\' + pattern[++j]; continue; }
        if (d === '-' && body !== '' && pattern[j + 1] !== ']' && j + 1 < pattern.length) { body += '-'; continue; }
        body += /[\]\\^-]/.test(d) ? '\\' + d : d;
      }
      if (!closed) { src += '\\['; continue; }
      src += (pathname ? '(?!/)' : '') + (neg ? '[^' : '[') + body + ']';
      i = j;
    } else if (c === '\\' && i + 1 < pattern.length) {
      src += escape(pattern[++i]!);
    } else src += escape(c);
  }
  try {
    re = new RegExp(src + '$', (flags & FNM_CASE_BLIND) !== 0 ? 'i' : '');
  } catch {
    re = /(?!)/;
  }
  if (cache.size >= 512) cache.clear();
  cache.set(key, re);
  return re;
}

function escape(c: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(c) ? '\\' + c : c;
}

/** Whether `str` matches `pattern` (apr_fnmatch(pattern, str, flags) == APR_SUCCESS). */
export function fnmatch(pattern: string, str: string, flags: number): boolean {
  return compile(pattern, flags).test(str);
}
