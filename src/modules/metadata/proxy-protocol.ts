// The PROXY protocol header (haproxy's proxy-protocol.txt, versions 1 and 2) as mod_remoteip
// reads it at the start of a connection (remoteip_input_filter): an incremental parser fed the
// connection's first bytes, which says when it needs more, when the header is complete (with
// the client's address and how many bytes it took), or why it is refused — in httpd's words.

import { parseIpv4, parseIpv6 } from '../../lib/ipsubnet.js';

const V2SIG = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const MIN_HDR_LEN = 15;
const MIN_V2_HDR_LEN = 16;
/** sizeof(proxy_v1): the longest v1 line httpd reads, CRLF included. */
const V1_MAX = 108;
/** sizeof(proxy_v2): signature, command, family, length and the largest (AF_UNIX) address. */
const V2_MAX = 16 + 216;

export type ProxyResult =
  | { readonly kind: 'more' }
  /** `ip` undefined: v1 UNKNOWN, the connection's own address stands. */
  | { readonly kind: 'done'; readonly ip: string | undefined; readonly port: number; readonly length: number; readonly leftOver?: number }
  | { readonly kind: 'error'; readonly message: string };

const MORE: ProxyResult = { kind: 'more' };

/** inet_ntop for IPv6 (glibc's: the longest run of two or more zero groups becomes "::",
 *  an IPv4-mapped or -compatible address ends in dotted quad). */
export function ipv6ToString(b: Uint8Array): string {
  const g: number[] = [];
  for (let i = 0; i < 16; i += 2) g.push((b[i]! << 8) | b[i + 1]!);
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  if (bestLen < 2) best = -1;
  const v4tail = best === 0 && (bestLen === 6 || (bestLen === 5 && g[5] === 0xffff));
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (i === best) {
      out += i === 0 ? '::' : ':';
      i += bestLen - 1;
      continue;
    }
    if (v4tail && i === 6) {
      out += `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
      break;
    }
    out += g[i]!.toString(16) + (i < 7 ? ':' : '');
  }
  return out;
}

/** A v1 line (without CRLF): PROXY {TCP4|TCP6|UNKNOWN} client dest client-port dest-port. */
function parseV1(line: string, length: number, unknownRead: number): ProxyResult {
  const words = line.split(' ').filter((w) => w !== '');
  const err = (m: string): ProxyResult => ({ kind: 'error', message: m });
  const family = words[1];
  if (family === undefined) return err(`AH03497: RemoteIPProxyProtocol: no family found in header '${line}'`);
  if (family === 'UNKNOWN') return { kind: 'done', ip: undefined, port: 0, length, leftOver: unknownRead };
  let valid: RegExp;
  if (family === 'TCP4') valid = /^[0-9.]*$/;
  else if (family === 'TCP6') valid = /^[0-9a-fA-F:]*$/;
  else return err(`AH03499: RemoteIPProxyProtocol: unknown family '${family}' in header '${line}'`);
  const host = words[2];
  if (host === undefined) return err(`AH03497: RemoteIPProxyProtocol: no client-address found in header '${line}'`);
  if (!valid.test(host)) return err(`AH03500: RemoteIPProxyProtocol: invalid client-address '${host}' found in header '${line}'`);
  if (words[3] === undefined) return err(`AH03497: RemoteIPProxyProtocol: no destination-address found in header '${line}'`);
  const ps = words[4];
  if (ps === undefined) return err(`AH03497: RemoteIPProxyProtocol: no client-port found in header '${line}'`);
  // sscanf("%hu"): leading digits (after blanks and a sign), wrapped to 16 bits.
  const pm = /^[+-]?[0-9]+/.exec(ps);
  if (pm === null) return err(`AH03501: RemoteIPProxyProtocol: error parsing port '${ps}' in header '${line}'`);
  const port = ((Number(pm[0]) % 65536) + 65536) % 65536;
  const ok = family === 'TCP4' ? parseIpv4(host) !== undefined : parseIpv6(host) !== undefined;
  if (!ok) {
    return err(`AH03502: RemoteIPProxyProtocol: error converting family '${family === 'TCP4' ? 2 : 10}', host '${host}', and port '${port}' to sockaddr; header was '${line}'`);
  }
  return { kind: 'done', ip: host, port, length };
}

function parseV2(h: Buffer, length: number): ProxyResult {
  const cmd = h[12]!;
  const fam = h[13]!;
  const len = h.readUInt16BE(14);
  const err = (m: string): ProxyResult => ({ kind: 'error', message: m });
  // LOCAL: the proxy's own connection (a health check): its address stands (httpd 2.4.71).
  if ((cmd & 0xf) === 0x00) return { kind: 'done', ip: undefined, port: 0, length };
  if ((cmd & 0xf) !== 0x01) return err(`AH03507: RemoteIPProxyProtocol: unsupported command ${cmd.toString(16).padStart(2, '0')}`);
  if (fam === 0x11) {
    if (len < 12) return err(`AH10597: RemoteIPProxyProtocol: address length ${len} too short for TCPv4`);
    return { kind: 'done', ip: `${h[16]}.${h[17]}.${h[18]}.${h[19]}`, port: h.readUInt16BE(24), length };
  }
  if (fam === 0x21) {
    if (len < 36) return err(`AH10598: RemoteIPProxyProtocol: address length ${len} too short for TCPv6`);
    return { kind: 'done', ip: ipv6ToString(h.subarray(16, 32)), port: h.readUInt16BE(48), length };
  }
  return err(`AH10183: RemoteIPProxyProtocol: unsupported protocol ${fam.toString(16).padStart(2, '0')}`);
}

/**
 * Looks at the first bytes of a connection: `more` until the header is complete; then the
 * client's address and the header's length (the bytes after it are the HTTP request).
 */
export function parseProxyHeader(buf: Buffer): ProxyResult {
  if (buf.length < MIN_HDR_LEN) return MORE;
  if (buf.subarray(0, 12).equals(V2SIG) && (buf[12]! & 0xf0) === 0x20) {
    if (buf.length < MIN_V2_HDR_LEN) return MORE;
    const need = MIN_V2_HDR_LEN + buf.readUInt16BE(14);
    if (need > V2_MAX) return { kind: 'error', message: 'AH10186: RemoteIPProxyProtocol protocol header length too long' };
    if (buf.length < need) return MORE;
    return parseV2(buf, need);
  }
  if (buf.subarray(0, 6).toString('latin1') !== 'PROXY ') {
    // Not a PROXY header: httpd drops the connection without a word.
    return { kind: 'error', message: '' };
  }
  const lim = Math.min(buf.length, V1_MAX);
  const cr = buf.subarray(0, lim).indexOf('\r\n');
  if (cr < 0) {
    if (buf.length >= V1_MAX) {
      return { kind: 'error', message: `AH10185: RemoteIPProxyProtocol header too long, got ${buf.length - MIN_HDR_LEN} expected ${V1_MAX - MIN_HDR_LEN}` };
    }
    return MORE;
  }
  // What httpd has read when it parses the line: the first 15 bytes, then up to the next LF
  // (a line of exactly 15 bytes is followed by the next one).
  let read = cr + 2;
  if (read <= MIN_HDR_LEN) {
    const lf = buf.indexOf(0x0a, MIN_HDR_LEN);
    read = lf < 0 ? buf.length : Math.min(lf + 1, V1_MAX);
  }
  return parseV1(buf.subarray(0, cr).toString('latin1'), cr + 2, read);
}
