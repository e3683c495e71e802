// mod_rewrite's URI helpers (modules/mappers/mod_rewrite.c is_absolute_uri, escape_backref,
// escape_absolute_uri, ap_escape_uri, ap_scan_vchar_obstext), on latin1 byte strings.

import { RULEFLAG_ESCAPECTLS, RULEFLAG_ESCAPENOPLUS } from './parse.js';
import { escapeUri } from '../../../lib/urlencoded.js';
export { escapeUri };

/** The schemes mod_rewrite knows: [prefix length, whether a query string makes sense]. */
const SCHEMES: readonly [string, boolean][] = [
  ['ajp://', true], ['balancer://', true], ['ftp://', false], ['fcgi://', true], ['gopher://', false],
  ['http://', true], ['https://', true], ['h2://', true], ['h2c://', true], ['ldap://', false],
  ['mailto:', true], ['news:', false], ['nntp://', false], ['scgi://', true], ['ws://', true], ['wss://', true],
];

/** is_absolute_uri: the length of the scheme part ("http://" = 7) or 0; `qs` says whether
 *  the scheme takes a query string. */
export function absoluteUriScheme(uri: string): { len: number; qs: boolean } {
  if (uri.length <= 5 || uri[0] === '/') return NONE;
  const c = uri.charCodeAt(0) | 0x20;
  for (const [s, qs] of SCHEMES) {
    if (s.charCodeAt(0) !== c) continue;
    if (uri.length >= s.length && uri.slice(0, s.length).toLowerCase() === s) return { len: s.length, qs };
  }
  if (c === 0x75 && uri.slice(0, 5).toLowerCase() === 'unix:') return { len: uri[5] === '/' && uri[6] === '/' ? 7 : 5, qs: true };
  return NONE;
}
const NONE = { len: 0, qs: false };

export function isAbsoluteUri(uri: string): number {
  return absoluteUriScheme(uri).len;
}

const HEX = '0123456789abcdef';
const hex2 = (c: number): string => '%' + HEX[c >> 4]! + HEX[c & 15]!;

/** T_VCHAR_OBSTEXT: visible ASCII and obs-text (0x21-0x7e, 0x80-0xff). */
const isVcharObstext = (c: number): boolean => (c >= 0x21 && c <= 0x7e) || c >= 0x80;

/** ap_scan_vchar_obstext: true when the string holds a control character or a blank. */
export function hasCtlOrSpace(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (!isVcharObstext(s.charCodeAt(i))) return true;
  return false;
}

/** escape_backref: [B] escaping of a back-reference, [B=chars], [BNE=chars], [BNP], [BCTLS]. */
export function escapeBackref(path: string, escapeme: string | undefined, noescapeme: string | undefined, flags: number): string {
  const noplus = (flags & RULEFLAG_ESCAPENOPLUS) !== 0;
  const ctls = (flags & RULEFLAG_ESCAPECTLS) !== 0;
  let out = '';
  for (let i = 0; i < path.length; i++) {
    const ch = path[i]!;
    const c = path.charCodeAt(i);
    const selected = (ctls ? !isVcharObstext(c) : escapeme === undefined) || (escapeme !== undefined && escapeme.includes(ch));
    if (selected && (noescapeme === undefined || !noescapeme.includes(ch))) {
      if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95) out += ch;
      else if (c === 32 && !noplus) out += '+';
      else out += hex2(c & 0xff);
    } else {
      out += ch;
    }
  }
  return out;
}


/** escape_absolute_uri: the scheme and host kept, the rest escaped (ldap: each ?-part). */
export function escapeAbsoluteUri(uri: string, scheme: number): string | undefined {
  if (scheme === 0 || uri.length < scheme) return undefined;
  let cp = scheme;
  if (uri[cp - 1] === '/') {
    while (cp < uri.length && uri[cp] !== '/') cp++;
    if (cp >= uri.length || cp + 1 >= uri.length) return uri;
    cp++;
    scheme = cp;
    if (uri.slice(0, 4).toLowerCase() === 'ldap') {
      const tokens: string[] = [];
      let rest = uri.slice(cp);
      let count = 0;
      while (count < 4) {
        const q = rest.indexOf('?');
        if (q < 0) break;
        tokens.push(rest.slice(0, q));
        rest = rest.slice(q + 1);
        count++;
      }
      tokens.push(rest);
      return uri.slice(0, scheme) + tokens.map(escapeUri).join('?');
    }
  }
  return uri.slice(0, scheme) + escapeUri(uri.slice(cp));
}

