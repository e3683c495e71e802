// IP subnets as APR parses and tests them (apr_ipsubnet_create / apr_ipsubnet_test), shared by
// `Require ip` (mod_authz_host) and `Allow/Deny from` (mod_access_compat):
//   full addresses (IPv4 dotted quad, any IPv6 form inet_pton accepts), legacy partial IPv4
//   networks ("10.1" = 10.1.0.0/16, only without a mask), "/bits" and IPv4 "/netmask" masks.
// IPv4-mapped IPv6 subnets are refused; an IPv4-mapped client address matches IPv4 subnets.

/** A parsed subnet: four 32-bit words for IPv6, one for IPv4 (network byte order as numbers). */
export interface IpSubnet {
  readonly family: 4 | 6;
  readonly sub: Uint32Array;
  readonly mask: Uint32Array;
}

/** A client address ready for subnet tests. */
export interface IpAddr {
  readonly family: 4 | 6;
  /** IPv4: one word; IPv6: four words. IPv4-mapped IPv6 addresses are stored as IPv4. */
  readonly words: Uint32Array;
}

/** apr_ipsubnet_create's failures: EINVAL "not an IP address at all", EBADIP, EBADMASK. */
export type SubnetError = 'EINVAL' | 'EBADIP' | 'EBADMASK';

export type SubnetResult = { readonly ok: true; readonly subnet: IpSubnet } | { readonly ok: false; readonly error: SubnetError };

/** apr_strerror's text for the two "looked like an IP but is wrong" errors. */
export function subnetErrorText(e: SubnetError): string {
  return e === 'EBADMASK' ? 'The specified network mask is invalid.' : 'The specified IP address is invalid.';
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** APR's looks_like_ip: anything with ':' (IPv6), or only digits and dots. */
function looksLikeIp(s: string): boolean {
  if (s.length === 0) return false;
  if (s.includes(':')) return true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 46 && !isDigit(c)) return false;
  }
  return true;
}

/** APR's inet_pton4 (the BIND 4.9.4 one): exactly four decimal octets, each <= 255; unlike
 *  glibc's it accepts leading zeros ("010" is 10). */
export function parseIpv4(s: string): number | undefined {
  let value = 0;
  let octets = 0;
  let cur = -1;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 46;
    if (isDigit(c)) {
      cur = cur < 0 ? c - 48 : cur * 10 + (c - 48);
      if (cur > 255) return undefined;
    } else if (c === 46) {
      if (cur < 0 || octets === 4) return undefined;
      value = value * 256 + cur;
      octets++;
      cur = -1;
    } else {
      return undefined;
    }
  }
  return octets === 4 ? value >>> 0 : undefined;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** APR's inet_pton6 (the BIND 4.9.4 one): hex groups (any number of leading zeros while the
 *  value fits 16 bits), one "::" (ignored in a full address), an optional trailing dotted
 *  quad, no zone index. Returns the address as four 32-bit words. */
export function parseIpv6(s: string): Uint32Array | undefined {
  const bytes = new Uint8Array(16);
  let tp = 0;
  let colonp = -1;
  let i = 0;
  if (s.charCodeAt(0) === 58 && s.charCodeAt(1) !== 58) return undefined;
  if (s.charCodeAt(0) === 58) i = 1;
  let curtok = i;
  let sawXdigit = false;
  let val = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const h = hexValue(c);
    if (h >= 0) {
      val = (val << 4) | h;
      if (val > 0xffff) return undefined;
      sawXdigit = true;
      continue;
    }
    if (c === 58) {
      curtok = i + 1;
      if (!sawXdigit) {
        if (colonp >= 0) return undefined;
        colonp = tp;
        continue;
      }
      if (tp + 2 > 16) return undefined;
      bytes[tp++] = (val >> 8) & 0xff;
      bytes[tp++] = val & 0xff;
      sawXdigit = false;
      val = 0;
      continue;
    }
    if (c === 46 && tp + 4 <= 16) {
      const v4 = parseIpv4(s.slice(curtok));
      if (v4 === undefined) return undefined;
      bytes[tp++] = v4 >>> 24;
      bytes[tp++] = (v4 >>> 16) & 0xff;
      bytes[tp++] = (v4 >>> 8) & 0xff;
      bytes[tp++] = v4 & 0xff;
      sawXdigit = false;
      break;
    }
    return undefined;
  }
  if (sawXdigit) {
    if (tp + 2 > 16) return undefined;
    bytes[tp++] = (val >> 8) & 0xff;
    bytes[tp++] = val & 0xff;
  }
  if (colonp >= 0) {
    const n = tp - colonp;
    for (let k = 1; k <= n; k++) {
      bytes[16 - k] = bytes[colonp + n - k]!;
      bytes[colonp + n - k] = 0;
    }
    tp = 16;
  }
  if (tp !== 16) return undefined;
  const w = new Uint32Array(4);
  for (let k = 0; k < 4; k++) w[k] = ((bytes[4 * k]! << 24) | (bytes[4 * k + 1]! << 16) | (bytes[4 * k + 2]! << 8) | bytes[4 * k + 3]!) >>> 0;
  return w;
}

function isV4Mapped(w: Uint32Array): boolean {
  return w[0] === 0 && w[1] === 0 && w[2] === 0xffff;
}

/** APR's parse_network: the legacy "a.b.c" form, each given octet masked in. */
function parseNetwork(s: string): { sub: number; mask: number } | undefined {
  if (s.length >= 16) return undefined;
  let sub = 0;
  let mask = 0;
  let shift = 24;
  let i = 0;
  while (i < s.length) {
    if (!isDigit(s.charCodeAt(i))) return undefined;
    let j = i;
    while (j < s.length && isDigit(s.charCodeAt(j))) j++;
    const octet = Number(s.slice(i, j));
    if (j < s.length) {
      if (s.charCodeAt(j) !== 46) return undefined;
      j++;
    }
    if (shift < 0) return undefined;
    if (octet > 255) return undefined;
    sub = (sub | (octet << shift)) >>> 0;
    mask = (mask | (0xff << shift)) >>> 0;
    i = j;
    shift -= 8;
  }
  return { sub, mask };
}

/** strtol(s, &end, 10) when it consumes the whole string; undefined otherwise (an empty
 *  string gives 0, which no caller accepts either). */
function strtolWhole(s: string): number | undefined {
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d+)$/.exec(s);
  if (!m) return undefined;
  const n = Number(m[2]);
  return m[1] === '-' ? -n : n;
}

/** apr_ipsubnet_create(ip, mask): `mask` is undefined when no "/" was given. */
export function parseSubnet(ip: string, mask: string | undefined): SubnetResult {
  if (!looksLikeIp(ip)) return { ok: false, error: 'EINVAL' };
  let family: 4 | 6;
  let sub: Uint32Array;
  let msk: Uint32Array;
  const v6 = parseIpv6(ip);
  if (v6) {
    if (isV4Mapped(v6)) return { ok: false, error: 'EBADIP' };
    family = 6;
    sub = v6;
    msk = new Uint32Array([0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff]);
  } else {
    const v4 = parseIpv4(ip);
    family = 4;
    if (v4 !== undefined) {
      sub = new Uint32Array([v4]);
      msk = new Uint32Array([0xffffffff]);
    } else {
      if (mask !== undefined) return { ok: false, error: 'EBADIP' };
      const net = parseNetwork(ip);
      if (!net) return { ok: false, error: 'EBADIP' };
      sub = new Uint32Array([net.sub]);
      msk = new Uint32Array([net.mask]);
    }
  }
  if (mask !== undefined) {
    const maxBits = family === 6 ? 128 : 32;
    const bits = strtolWhole(mask);
    if (bits !== undefined && bits > 0 && bits <= maxBits) {
      msk = new Uint32Array(family === 6 ? 4 : 1);
      let left = bits;
      for (let i = 0; left > 0; i++) {
        const take = Math.min(32, left);
        msk[i] = take === 32 ? 0xffffffff : (0xffffffff << (32 - take)) >>> 0;
        left -= take;
      }
    } else {
      const nm = parseIpv4(mask);
      if (nm === undefined || family !== 4) return { ok: false, error: 'EBADMASK' };
      msk = new Uint32Array([nm]);
    }
  }
  for (let i = 0; i < sub.length; i++) sub[i] = (sub[i]! & msk[i]!) >>> 0;
  return { ok: true, subnet: { family, sub, mask: msk } };
}

/** Parses a socket address string (Node's remoteAddress) for subnet tests. */
export function parseAddr(ip: string): IpAddr | undefined {
  const v4 = parseIpv4(ip);
  if (v4 !== undefined) return { family: 4, words: new Uint32Array([v4]) };
  const v6 = parseIpv6(ip);
  if (!v6) return undefined;
  if (isV4Mapped(v6)) return { family: 4, words: new Uint32Array([v6[3]!]) };
  return { family: 6, words: v6 };
}

/** apr_ipsubnet_test. */
export function subnetTest(s: IpSubnet, a: IpAddr): boolean {
  if (s.family !== a.family) return false;
  for (let i = 0; i < s.sub.length; i++) {
    if (((a.words[i]! & s.mask[i]!) >>> 0) !== s.sub[i]) return false;
  }
  return true;
}

/** apr_sockaddr_equal on two parsed addresses (IPv4-mapped equals IPv4). */
export function addrEqual(a: IpAddr, b: IpAddr): boolean {
  if (a.family !== b.family) return false;
  for (let i = 0; i < a.words.length; i++) if (a.words[i] !== b.words[i]) return false;
  return true;
}

const addrCache = new WeakMap<object, IpAddr | null>();

/** The parsed client address of a connection, parsed once per connection. */
export function connAddr(conn: { readonly remoteIp: string }): IpAddr | undefined {
  let a = addrCache.get(conn);
  if (a === undefined) {
    a = parseAddr(conn.remoteIp) ?? null;
    addrCache.set(conn, a);
  }
  return a ?? undefined;
}

const uaCache = new WeakMap<object, { ip: string; addr: IpAddr | null }>();

/** The parsed address of the request's client (r->useragent_addr): the connection's, unless
 *  mod_remoteip set another. */
export function useragentAddr(r: { readonly useragentIp: string; readonly connection: { readonly remoteIp: string } }): IpAddr | undefined {
  if (r.useragentIp === r.connection.remoteIp) return connAddr(r.connection);
  let e = uaCache.get(r);
  if (e === undefined || e.ip !== r.useragentIp) {
    e = { ip: r.useragentIp, addr: parseAddr(r.useragentIp) ?? null };
    uaCache.set(r, e);
  }
  return e.addr ?? undefined;
}

/** The parsed local address of a connection. */
const localCache = new WeakMap<object, IpAddr | null>();
export function connLocalAddr(conn: { readonly localIp: string }): IpAddr | undefined {
  let a = localCache.get(conn);
  if (a === undefined) {
    a = parseAddr(conn.localIp) ?? null;
    localCache.set(conn, a);
  }
  return a ?? undefined;
}

/** in_domain (mod_authz_host / mod_access_compat): `what` ends with `domain` on a label boundary. */
export function inDomain(domain: string, what: string): boolean {
  const dl = domain.length;
  const wl = what.length;
  if (wl < dl) return false;
  if (what.slice(wl - dl).toLowerCase() !== domain.toLowerCase()) return false;
  if (wl === dl) return true;
  return domain.charCodeAt(0) === 46 || what.charCodeAt(wl - dl - 1) === 46;
}
