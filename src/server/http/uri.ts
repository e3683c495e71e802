// URL path decoding and normalisation as httpd 2.4 does it (ap_normalize_path,
// ap_unescape_url, ap_getparents): dot segments resolved, never above the root;
// %2F refused unless AllowEncodedSlashes; %00 and bad escapes refused.

import type { Request } from '../request/request.js';
import { APLOG_INFO, APLOG_ERR } from '../log/levels.js';
import { coreDir, coreServer } from '../core/config.js';

/** Removes "." and ".." segments; returns null when ".." would climb above "/" (with
 *  `aboveRoot` 'ignore', such a ".." is dropped instead, as ap_normalize_path leaves the path
 *  when the caller ignores its failure). */
export function normalizePath(p: string, mergeSlashes: boolean, aboveRoot: 'fail' | 'ignore' = 'fail'): string | null {
  // Nothing to do without a dot segment or an empty one (the common case).
  if (p.charCodeAt(0) === 0x2f && !p.includes('/.') && (!mergeSlashes || !p.includes('//'))) return p;
  const segs = p.split('/');
  const out: string[] = [];
  for (let i = 1; i < segs.length; i++) {
    const s = segs[i]!;
    const last = i === segs.length - 1;
    if (s === '.') { if (last) out.push(''); continue; }
    if (s === '..') {
      if (out.length === 0) {
        if (aboveRoot === 'fail') return null;
        if (last) out.push('');
        continue;
      }
      out.pop();
      if (last) out.push('');
      continue;
    }
    if (s === '' && mergeSlashes && !last) continue;
    out.push(s);
  }
  return '/' + out.join('/');
}

const UNRESERVED_ESCAPE = /%([0-9A-Fa-f]{2})/g;
function decodeUnreserved(whole: string, hex: string): string {
  const c = String.fromCharCode(parseInt(hex, 16));
  return /^[A-Za-z0-9\-._~]$/.test(c) ? c : whole;
}

/** Decodes the URL path of a request; an HTTP status on failure. */
export function decodeUrlPath(path: string, r?: Request): string | number {
  const ae = r ? coreDir({ perDirConfig: r.server.lookupDefaults }).allowEncodedSlashes ?? 'off' : 'off';
  const merge = r ? coreServer(r.server).mergeSlashes !== false : true;
  // Normalise before decoding (the encoded form), as httpd 2.4.71 does, with the escaped
  // unreserved characters (letters, digits, "-._~") decoded first: "%2e%2e" is "..".
  const pre = normalizePath(path.includes('%') ? path.replace(UNRESERVED_ESCAPE, decodeUnreserved) : path, merge);
  if (pre === null) {
    r?.log('core', APLOG_ERR, `AH10244: invalid URI path (${r.unparsedUri})`);
    return 400;
  }
  if (!pre.includes('%')) return pre;
  let out = '';
  for (let i = 0; i < pre.length; i++) {
    const c = pre[i]!;
    if (c !== '%') { out += c; continue; }
    const hex = pre.slice(i + 1, i + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) {
      r?.log('core', APLOG_ERR, `AH10244: invalid URI path (${r.unparsedUri})`);
      return 400;
    }
    const code = parseInt(hex, 16);
    if (code === 0) {
      if (ae === 'off') r?.log('core', APLOG_INFO, `AH00026: found %2f (encoded '/') in URI path (${r.unparsedUri}), returning 404`);
      return 404;
    }
    if (code === 0x2f) {
      if (ae === 'off') {
        r?.log('core', APLOG_INFO, `AH00026: found %2f (encoded '/') in URI path (${r.unparsedUri}), returning 404`);
        return 404;
      }
      out += ae === 'nodecode' ? pre.slice(i, i + 3) : '/';
      i += 2;
      continue;
    }
    out += String.fromCharCode(code);
    i += 2;
  }
  // Decoding %2F may have made new "//", "/./" or "/../" segments (AllowEncodedSlashes On):
  // normalised again, a ".." at the root dropped (httpd ignores this second pass's failure).
  const post = normalizePath(out, merge, 'ignore')!;
  return Buffer.from(post, 'latin1').toString('latin1');
}
