// The string work of SSI elements, as mod_include and httpd's util.c do it: entity decoding
// (decodehtml), the echo/set encodings (entity, url, urlencoded, base64 and their decodings),
// shell escaping of QUERY_STRING_UNESCAPED, and ap_ht_time. Strings hold bytes (latin1), as
// the document's bytes are: nothing here assumes UTF-8.

import { strftime } from '../../../server/log/error-log-format.js';
import { escapeUri } from '../../../expr/index.js';

/** ISO-8859-1 entity names decodehtml knows (by name length, as mod_include's table). */
const ENTITIES: ReadonlyMap<string, number> = new Map(Object.entries({
  lt: 0x3c, gt: 0x3e, amp: 0x26, ETH: 0xd0, eth: 0xf0, quot: 0x22,
  Auml: 0xc4, Euml: 0xcb, Iuml: 0xcf, Ouml: 0xd6, Uuml: 0xdc, auml: 0xe4, euml: 0xeb, iuml: 0xef, ouml: 0xf6, uuml: 0xfc, yuml: 0xff,
  Acirc: 0xc2, Aring: 0xc5, AElig: 0xc6, Ecirc: 0xca, Icirc: 0xce, Ocirc: 0xd4, Ucirc: 0xdb, THORN: 0xde, szlig: 0xdf,
  acirc: 0xe2, aring: 0xe5, aelig: 0xe6, ecirc: 0xea, icirc: 0xee, ocirc: 0xf4, ucirc: 0xfb, thorn: 0xfe,
  Agrave: 0xc0, Aacute: 0xc1, Atilde: 0xc3, Ccedil: 0xc7, Egrave: 0xc8, Eacute: 0xc9, Igrave: 0xcc, Iacute: 0xcd,
  Ntilde: 0xd1, Ograve: 0xd2, Oacute: 0xd3, Otilde: 0xd5, Oslash: 0xd8, Ugrave: 0xd9, Uacute: 0xda, Yacute: 0xdd,
  agrave: 0xe0, aacute: 0xe1, atilde: 0xe3, ccedil: 0xe7, egrave: 0xe8, eacute: 0xe9, igrave: 0xec, iacute: 0xed,
  ntilde: 0xf1, ograve: 0xf2, oacute: 0xf3, otilde: 0xf5, oslash: 0xf8, ugrave: 0xf9, uacute: 0xfa, yacute: 0xfd,
}));

/**
 * decodehtml: `&name;` for the ISO-8859-1 names above and `&#N;` decimal references. An unknown
 * name stays as written; a numeric reference to a control or unused character is dropped
 * (`&#00;` too); an `&` with no `;` after it is plain text.
 */
export function decodeHtml(s: string): string {
  let i = s.indexOf('&');
  if (i < 0) return s;
  let out = s.slice(0, i);
  while (i < s.length) {
    const c = s[i]!;
    if (c !== '&') { out += c; i++; continue; }
    const semi = s.indexOf(';', i + 1);
    if (semi < 0) { out += s.slice(i); break; }
    if (s[i + 1] === '#') {
      let j = i + 2;
      let val = 0;
      while (j < semi && s.charCodeAt(j) >= 48 && s.charCodeAt(j) <= 57) { val = val * 10 + s.charCodeAt(j) - 48; j++; }
      const drop = j < semi || val <= 8 || (val >= 11 && val <= 31) || (val >= 127 && val <= 160) || val >= 256;
      if (!drop) out += String.fromCharCode(val);
      i = semi + 1;
      continue;
    }
    const name = s.slice(i + 1, semi);
    const code = name.length >= 2 && name.length <= 6 ? ENTITIES.get(name) : undefined;
    if (code === undefined) { out += '&'; i++; continue; }
    out += String.fromCharCode(code);
    i = semi + 1;
  }
  return out;
}

/** ap_escape_html2(s, 0): < > & " as entities. */
export function escapeHtml2(s: string): string {
  return /[<>&"]/.test(s) ? s.replace(/[<>&"]/g, (c) => (c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '&' ? '&amp;' : '&quot;')) : s;
}

/** ap_escape_uri (ap_os_escape_path, partial). */
export { escapeUri };

/** ap_escape_urlencoded: all but alphanumerics and .-*_ as %xx (lowercase hex), space as +. */
export function escapeUrlencoded(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 0x2e || c === 0x2d || c === 0x2a || c === 0x5f) out += s[i];
    else if (c === 0x20) out += '+';
    else out += '%' + (c < 16 ? '0' : '') + (c & 0xff).toString(16);
  }
  return out;
}

const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9A-Fa-f]$/.test(c);

/** ap_unescape_url / ap_unescape_urlencoded (`plus`: '+' is a space): %XX decoded wherever it
 *  is well formed (the string is decoded even where httpd's return code complains), a bad
 *  escape kept as written. */
export function unescapeUrl(s: string, plus = false): string {
  if (!s.includes('%') && !(plus && s.includes('+'))) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (plus && c === '+') out += ' ';
    else if (c === '%' && isHex(s[i + 1]) && isHex(s[i + 2])) { out += String.fromCharCode(parseInt(s.slice(i + 1, i + 3), 16)); i += 2; }
    else out += c;
  }
  return out;
}

/** apr_pbase64encode of the string's bytes. */
export function base64Encode(s: string): string {
  return Buffer.from(s, 'latin1').toString('base64');
}

/** apr_pbase64decode: decoding stops at the first character outside the alphabet. */
export function base64Decode(s: string): string {
  const m = /^[A-Za-z0-9+/]*/.exec(s);
  return Buffer.from(m ? m[0] : '', 'base64').toString('latin1');
}

/** ap_escape_shell_cmd: a backslash before each character a shell would act on. */
export function escapeShellCmd(s: string): string {
  return s.replace(/[&;`'"|*?~<>^()[\]{}$\\\n]/g, (c) => '\\' + c);
}

/** ap_ht_time: `fmt` (strftime) for a time in ms, local or GMT (where %Z reads "GMT" and %z
 *  "+0000", '%%' kept as it is). */
export function htTime(ms: number, fmt: string, gmt: boolean): string {
  if (!gmt) return strftime(fmt, new Date(ms));
  const f = fmt.replace(/%([%Zz])/g, (m, c: string) => (c === '%' ? m : c === 'Z' ? 'GMT' : '+0000'));
  // strftime formats the local fields of a Date; shift so those read as UTC.
  const d = new Date(ms);
  return strftime(f, new Date(ms + d.getTimezoneOffset() * 60000));
}
