// URL escapes as httpd reads and writes them (server/util.c): ap_unescape_url (lenient, as
// the callers that ignore its result use it, and strict), ap_escape_urlencoded and
// ap_unescape_urlencoded, ap_escape_uri (ap_os_escape_path, partial), with httpd's failure rule (a malformed or NUL escape is an error
// the caller sees), which mod_session's decoder depends on.

const hexDigit = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);

const PERCENT_ESCAPE = /%([0-9A-Fa-f]{2})/g;
const decodeEscape = (_m: string, h: string): string => String.fromCharCode(parseInt(h, 16));

/** ap_unescape_url where its result is not looked at (mod_rewrite's int:unescape, the digest
 *  URI comparison, mod_ext_filter's QUERY_STRING_UNESCAPED): every %XX decoded, a malformed
 *  escape kept as it is. */
export function unescapeUrl(s: string): string {
  return s.includes('%') ? s.replace(PERCENT_ESCAPE, decodeEscape) : s;
}

/** ap_unescape_url when it must succeed: undefined for a malformed escape or one that
 *  decodes to '/' or NUL (httpd's HTTP_BAD_REQUEST and HTTP_NOT_FOUND). */
export function unescapeUrlStrict(s: string): string | undefined {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '%') { out += c; continue; }
    if (!hexDigit(s.charCodeAt(i + 1)) || !hexDigit(s.charCodeAt(i + 2))) return undefined;
    const code = parseInt(s.slice(i + 1, i + 3), 16);
    if (code === 0 || code === 0x2f) return undefined;
    out += String.fromCharCode(code);
    i += 2;
  }
  return out;
}

/** ap_escape_urlencoded: everything but ASCII letters, digits and `.-*_` as %xx (lowercase),
 *  space as `+`; the string is taken byte for byte (latin1). */
export function escapeUrlencoded(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) & 0xff;
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 0x2e || c === 0x2d || c === 0x2a || c === 0x5f) out += String.fromCharCode(c);
    else if (c === 0x20) out += '+';
    else out += '%' + (c < 16 ? '0' : '') + c.toString(16);
  }
  return out;
}

/** ap_unescape_urlencoded: `+` is a space, %XX decoded; undefined where httpd fails (a
 *  malformed escape, or one that decodes to NUL). */
export function unescapeUrlencoded(s: string): string | undefined {
  if (!s.includes('%')) return s.includes('+') ? s.replace(/\+/g, ' ') : s;
  let out = '';
  let bad = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === '+') out += ' ';
    else if (ch !== '%') out += ch;
    else if (!hexDigit(s.charCodeAt(i + 1)) || !hexDigit(s.charCodeAt(i + 2))) { bad = true; out += '%'; }
    else {
      const v = parseInt(s.slice(i + 1, i + 3), 16);
      if (v === 0) bad = true;
      out += String.fromCharCode(v);
      i += 2;
    }
  }
  return bad ? undefined : out;
}

/** apr_strtok's tokens: the non-empty runs between separator characters. */
export function strtokAll(s: string, seps: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (const ch of s) {
    if (seps.includes(ch)) { if (cur !== '') out.push(cur); cur = ''; } else cur += ch;
  }
  if (cur !== '') out.push(cur);
  return out;
}

/** ap_escape_uri (ap_os_escape_path with partial=1): all but alphanumerics and
 *  $-_.+!*'(),:;@&=/~ as lowercase %hex. The string's characters are bytes; a wider one (from
 *  UTF-8 configuration text) goes out as its UTF-8 bytes. */
export function escapeUri(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c < 128 && "$-_.+!*'(),:;@&=/~".includes(s[i]!))) out += s[i];
    else if (c < 256) out += '%' + (c < 16 ? '0' : '') + c.toString(16);
    else for (const b of Buffer.from(s[i]!, 'utf8')) out += '%' + (b < 16 ? '0' : '') + b.toString(16);
  }
  return out;
}
