// RFC 2255 LDAP URLs as APR-util's apr_ldap_url_parse reads them (the parser AuthLDAPURL
// uses): ldap[s|i]://host[ host2][:port]/basedn?attr1,attr2?scope?filter?extensions, with an
// optional "<...>" enclosure and "URL:" prefix, %XX escapes in every part. Errors carry APR's
// reason text, which httpd returns as the directive's error.

export const LDAP_SCOPE_BASE = 0;
export const LDAP_SCOPE_ONELEVEL = 1;
export const LDAP_SCOPE_SUBTREE = 2;
export const LDAP_SCOPE_DEFAULT = -1;

export interface LdapUrl {
  readonly scheme: 'ldap' | 'ldaps' | 'ldapi';
  /** The host part (a space separated list is kept as written), undefined when empty. */
  readonly host: string | undefined;
  /** 0 when not given. */
  readonly port: number;
  readonly dn: string | undefined;
  readonly attrs: readonly string[] | undefined;
  readonly scope: number;
  readonly filter: string | undefined;
  readonly exts: readonly string[] | undefined;
  readonly critExts: number;
}

export type LdapUrlResult = { readonly ok: true; readonly url: LdapUrl } | { readonly ok: false; readonly reason: string };

const REASON = {
  param: 'Either the LDAP URL, or the URL structure was NULL. Oops.',
  scheme: 'The scheme was not recognised as a valid LDAP URL scheme.',
  enclosure: 'Bad enclosure error while parsing LDAP URL.',
  url: 'Bad URL encountered while parsing LDAP URL.',
  ipv6: 'Bad LDAP URL while parsing IPV6 syntax.',
  attrs: 'Bad attributes encountered while parsing LDAP URL.',
  scope: 'Bad scope encountered while parsing LDAP URL.',
  filter: 'Bad filter encountered while parsing LDAP URL.',
  exts: 'Bad extensions encountered while parsing LDAP URL.',
} as const;

function fail(reason: string): LdapUrlResult {
  return { ok: false, reason };
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** apr_ldap_pvt_hex_unescape: "%XX" becomes the byte; a '%' not followed by two characters
 *  is dropped with what follows it, as the C loop does (it reads the next two characters
 *  whatever they are). Works on latin1 text (one character per byte). */
export function hexUnescape(s: string): string {
  if (!s.includes('%')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== '%') { out += s[i]; continue; }
    // The C code stops at the terminating NUL after the '%' or after its first digit.
    if (i + 1 >= s.length) break;
    const hi = hexValue(s.charCodeAt(i + 1));
    if (i + 2 >= s.length) break;
    const lo = hexValue(s.charCodeAt(i + 2));
    out += String.fromCharCode((((hi < 0 ? 0 : hi) << 4) + (lo < 0 ? 0 : lo)) & 0xff);
    i += 2;
  }
  // The result is a C string: an escaped NUL ends it.
  const nul = out.indexOf('\0');
  return nul < 0 ? out : out.slice(0, nul);
}

/** str2charray with "," : the non-empty pieces; undefined when there are none. */
function commaArray(s: string): string[] | undefined {
  const parts = s.split(',').filter((p) => p !== '');
  if (parts.length === 0) return undefined;
  return parts.map(hexUnescape);
}

function str2scope(p: string): number {
  switch (p.toLowerCase()) {
    case 'one': case 'onetree': return LDAP_SCOPE_ONELEVEL;
    case 'base': return LDAP_SCOPE_BASE;
    case 'sub': case 'subtree': return LDAP_SCOPE_SUBTREE;
    default: return -1;
  }
}

/** skip_url_prefix: the scheme and what follows "scheme://", after "<" and "URL:". */
function skipPrefix(url: string): { rest: string; enclosed: boolean; scheme: LdapUrl['scheme'] } | undefined {
  let p = url;
  let enclosed = false;
  if (p.startsWith('<')) { p = p.slice(1); enclosed = true; }
  if (p.slice(0, 4).toLowerCase() === 'url:') p = p.slice(4);
  for (const scheme of ['ldap', 'ldaps', 'ldapi'] as const) {
    const prefix = `${scheme}://`;
    if (p.slice(0, prefix.length).toLowerCase() === prefix) return { rest: p.slice(prefix.length), enclosed, scheme };
  }
  return undefined;
}

/** apr_ldap_url_parse. */
export function parseLdapUrl(input: string): LdapUrlResult {
  const pre = skipPrefix(input);
  if (pre === undefined) return fail(REASON.scheme);
  let url = pre.rest;
  if (pre.enclosed) {
    if (!url.endsWith('>')) return fail(REASON.enclosure);
    url = url.slice(0, -1);
  }
  // The C code works on a NUL-terminated copy: nothing after a NUL exists.
  const nul = url.indexOf('\0');
  if (nul >= 0) url = url.slice(0, nul);

  let port = 0;
  let dn: string | undefined;
  let attrs: string[] | undefined;
  let scope = LDAP_SCOPE_DEFAULT;
  let filter: string | undefined;
  let exts: string[] | undefined;
  let critExts = 0;

  // The host and port end at the first '/'.
  const slash = url.indexOf('/');
  let hostport = slash < 0 ? url : url.slice(0, slash);
  let p: string | undefined = slash < 0 ? undefined : url.slice(slash + 1);
  let portText: string | undefined;
  let hostText: string;
  if (hostport.startsWith('[')) {
    const close = hostport.indexOf(']');
    if (close < 0) return fail(REASON.ipv6);
    hostText = hostport.slice(1, close);
    const after = hostport.slice(close + 1);
    const colon = after.indexOf(':');
    portText = colon < 0 ? undefined : after.slice(colon + 1);
  } else {
    const colon = hostport.indexOf(':');
    hostText = colon < 0 ? hostport : hostport.slice(0, colon);
    portText = colon < 0 ? undefined : hostport.slice(colon + 1);
  }
  if (portText !== undefined) {
    const unescaped = hexUnescape(portText);
    if (unescaped === '') return fail(REASON.url);
    port = atoi(unescaped);
  }
  hostport = hexUnescape(hostText);
  const host = hostport === '' ? undefined : hostport;

  // ldap://host:port??dn (no '/'): the old form with the DN after "??".
  if (p === undefined && portText !== undefined) {
    const q = portText.indexOf('?');
    if (q >= 0 && portText[q + 1] === '?') dn = hexUnescape(portText.slice(q + 2));
  }
  const done = (): LdapUrlResult => ({ ok: true, url: { scheme: pre.scheme, host, port, dn, attrs, scope, filter, exts, critExts } });
  if (p === undefined) return done();

  const next = (s: string): [string, string | undefined] => {
    const q = s.indexOf('?');
    return q < 0 ? [s, undefined] : [s.slice(0, q), s.slice(q + 1)];
  };
  let [part, rest] = next(p);
  dn = hexUnescape(part);
  if (rest === undefined) return done();

  [part, rest] = next(rest);
  if (part !== '') {
    attrs = commaArray(part);
    if (attrs === undefined) return fail(REASON.attrs);
  }
  if (rest === undefined) return done();

  [part, rest] = next(rest);
  if (part !== '') {
    scope = str2scope(hexUnescape(part));
    if (scope === -1) return fail(REASON.scope);
  }
  if (rest === undefined) return done();

  [part, rest] = next(rest);
  if (part !== '') {
    const f = hexUnescape(part);
    if (f === '') return fail(REASON.filter);
    filter = f;
  }
  if (rest === undefined) return done();

  if (rest.includes('?')) return fail(REASON.url);
  exts = commaArray(rest);
  if (exts === undefined) return fail(REASON.exts);
  for (let i = 0; i < exts.length; i++) {
    let e = exts[i]!;
    if (e.startsWith('!')) { e = e.slice(1); critExts++; }
    if (e === '') return fail(REASON.exts);
    exts[i] = e;
  }
  return done();
}

/** C's atoi: optional white space and sign, then digits; 0 when none; wraps like a 32-bit int. */
function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d*)/.exec(s)!;
  if (m[2] === '') return 0;
  const v = Number(BigInt.asIntN(32, BigInt(m[2]!)));
  return m[1] === '-' ? -v | 0 : v;
}
