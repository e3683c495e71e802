// httpd's cookie utilities (server/util_cookies.c), shared by the modules that keep state in
// cookies (mod_session_cookie): writing a cookie with its Max-Age and attributes, clearing
// one, and reading one out of the Cookie/Cookie2 headers (optionally removing it, so that a
// backend never sees it).

import type { Request } from './request.js';
import type { HeaderTable } from './headers.js';
import { APLOG_DEBUG, APLOG_ERR } from '../log/levels.js';

/** The attributes of a cookie written without any configured (util_cookies.h). */
export const COOKIE_DEFAULT_ATTRS = 'HttpOnly;Secure;Version=1';
/** The attributes of a clearing cookie written without any configured. */
export const COOKIE_CLEAR_ATTRS = 'Version=1';

function userOf(r: Request): string {
  return r.user ?? '(null)';
}

/** ap_cookie_write (RFC 2109, Set-Cookie) and ap_cookie_write2 (RFC 2965, Set-Cookie2). */
export function cookieWrite(r: Request, v2: boolean, name: string, val: string, attrs: string | undefined, maxage: number, tables: readonly HeaderTable[]): void {
  const buffer = maxage !== 0 ? `Max-Age=${maxage};` : '';
  const c = `${name}=${val};${buffer}${attrs !== undefined && attrs !== '' ? attrs : COOKIE_DEFAULT_ATTRS}`;
  r.log('core', APLOG_DEBUG, `${v2 ? 'AH00008' : 'AH00007'}: ap_cookie: user '${userOf(r)}' set ${v2 ? 'cookie2' : 'cookie'}: '${c}'`);
  for (const t of tables) t.add(v2 ? 'Set-Cookie2' : 'Set-Cookie', c);
}

/** ap_cookie_remove / ap_cookie_remove2: an empty cookie with Max-Age=0. */
export function cookieRemove(r: Request, v2: boolean, name: string, attrs: string | undefined, tables: readonly HeaderTable[]): void {
  const c = `${name}=;Max-Age=0;${attrs ?? COOKIE_CLEAR_ATTRS}`;
  r.log('core', APLOG_DEBUG, `${v2 ? 'AH00010' : 'AH00009'}: ap_cookie: user '${userOf(r)}' removed ${v2 ? 'cookie2' : 'cookie'}: '${c}'`);
  for (const t of tables) t.add(v2 ? 'Set-Cookie2' : 'Set-Cookie', c);
}

const nonEmpty = (s: string, sep: string): string[] => s.split(sep).filter((x) => x !== '');

/** ap_cookie_read: the value of cookie `name` in the Cookie and Cookie2 headers; status
 *  non-zero (and AH00011) when the client sent it twice with different values. With `remove`
 *  the cookie is taken out of the request headers. */
export function cookieRead(r: Request, name: string, remove: boolean): { status: number; value: string | undefined } {
  const prefix = name + '=';
  let encoded: string | undefined;
  let duplicated = false;
  const kept: [string, string][] = [];
  for (const header of ['Cookie', 'Cookie2']) {
    for (const line of r.headersIn.getAll(header)) {
      let out = '';
      let sep = '';
      let cookies = 0;
      let eat = false;
      for (const part of nonEmpty(line, ',')) {
        for (const item of nonEmpty(part, ';')) {
          const trim = item.replace(/^[ \t\n\v\f\r]+/, '');
          if (trim.startsWith(prefix)) {
            const v = trim.slice(prefix.length);
            if (encoded !== undefined && encoded !== v) duplicated = true;
            encoded = v;
            eat = true;
          } else {
            if (trim[0] !== '$') { cookies++; eat = false; }
            // Measured on 2.4.71 (conformance session/dbd-cookie-remove): no separator
            // before the first cookie kept, so "s=K; c=3" leaves " c=3".
            if (!eat) out += (out === '' ? '' : sep) + item;
          }
          sep = ';';
        }
        sep = ',';
      }
      if (cookies > 0) kept.push([header, out]);
    }
  }
  if (duplicated) {
    r.log('core', APLOG_ERR, `AH00011: ap_cookie: client submitted cookie '${name}' more than once: ${r.uri}`);
    return { status: 20014, value: undefined };
  }
  if (remove) {
    r.headersIn.unset('Cookie');
    r.headersIn.unset('Cookie2');
    for (const [h, v] of kept) r.headersIn.add(h, v);
  }
  return { status: 0, value: encoded };
}
