// MD5-crypt: APR's "$apr1$" (apr_md5_encode, htpasswd's default) and the system crypt's
// "$1$", which differ only in the magic string: 1,000 rounds of MD5 over password and salt,
// the salt being up to 8 characters before a '$'.

import { toCrypt64 } from './crypt64.js';

export const APR1_MAGIC = '$apr1$';
export const MD5_MAGIC = '$1$';

/** The salt of an MD5-crypt setting: after the magic, up to 8 characters, stopping at '$'. */
function saltOf(setting: string, magic: string): string {
  let s = setting.startsWith(magic) ? setting.slice(magic.length) : setting;
  const end = s.indexOf('$');
  if (end >= 0) s = s.slice(0, end);
  return s.slice(0, 8);
}

// MD5 in plain JavaScript: the 1,000 rounds hash inputs of a few dozen bytes, where creating
// a node:crypto Hash object per round costs several times the hashing itself.
const K = new Int32Array(64);
for (let i = 0; i < 64; i++) K[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 0x100000000) | 0;
const R = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];

/** MD5 of the concatenated parts. */
function md5(...parts: Uint8Array[]): Uint8Array {
  let len = 0;
  for (const p of parts) len += p.length;
  const nblocks = ((len + 8) >>> 6) + 1;
  const w = new Int32Array(nblocks * 16);
  let i = 0;
  for (const p of parts) {
    for (let j = 0; j < p.length; j++, i++) w[i >> 2]! |= p[j]! << ((i & 3) * 8);
  }
  w[len >> 2]! |= 0x80 << ((len & 3) * 8);
  w[nblocks * 16 - 2] = (len * 8) | 0;
  w[nblocks * 16 - 1] = Math.floor(len / 0x20000000);
  let a0 = 0x67452301, b0 = 0xefcdab89 | 0, c0 = 0x98badcfe | 0, d0 = 0x10325476;
  for (let off = 0; off < w.length; off += 16) {
    let a = a0, b = b0, c = c0, d = d0;
    for (let k = 0; k < 64; k++) {
      let f: number, g: number;
      if (k < 16) { f = (b & c) | (~b & d); g = k; }
      else if (k < 32) { f = (d & b) | (~d & c); g = (5 * k + 1) & 15; }
      else if (k < 48) { f = b ^ c ^ d; g = (3 * k + 5) & 15; }
      else { f = c ^ (b | ~d); g = (7 * k) & 15; }
      f = (f + a + K[k]! + w[off + g]!) | 0;
      a = d; d = c; c = b;
      const s = R[((k >> 4) << 2) | (k & 3)]!;
      b = (b + ((f << s) | (f >>> (32 - s)))) | 0;
    }
    a0 = (a0 + a) | 0; b0 = (b0 + b) | 0; c0 = (c0 + c) | 0; d0 = (d0 + d) | 0;
  }
  const out = new Uint8Array(16);
  const st = [a0, b0, c0, d0];
  for (let j = 0; j < 16; j++) out[j] = (st[j >> 2]! >>> ((j & 3) * 8)) & 0xff;
  return out;
}

/** apr_md5_encode (magic "$apr1$") or crypt's "$1$": the full hash string. */
export function md5Crypt(password: Uint8Array, setting: string, magic: string = APR1_MAGIC): string {
  const salt = saltOf(setting, magic);
  const saltB = Buffer.from(salt, 'latin1');
  const magicB = Buffer.from(magic, 'latin1');
  const pw = password;
  const ctx: Uint8Array[] = [pw, magicB, saltB];
  let final = md5(pw, saltB, pw);
  for (let pl = pw.length; pl > 0; pl -= 16) ctx.push(final.subarray(0, Math.min(pl, 16)));
  const zero = Uint8Array.of(0);
  const first = Uint8Array.of(pw.length > 0 ? pw[0]! : 0);
  for (let i = pw.length; i; i >>= 1) ctx.push(i & 1 ? zero : first);
  final = md5(...ctx);
  const none = new Uint8Array(0);
  for (let i = 0; i < 1000; i++) {
    final = md5(i & 1 ? pw : final, i % 3 ? saltB : none, i % 7 ? pw : none, i & 1 ? final : pw);
  }
  const f = final;
  const out =
    toCrypt64((f[0]! << 16) | (f[6]! << 8) | f[12]!, 4) +
    toCrypt64((f[1]! << 16) | (f[7]! << 8) | f[13]!, 4) +
    toCrypt64((f[2]! << 16) | (f[8]! << 8) | f[14]!, 4) +
    toCrypt64((f[3]! << 16) | (f[9]! << 8) | f[15]!, 4) +
    toCrypt64((f[4]! << 16) | (f[10]! << 8) | f[5]!, 4) +
    toCrypt64(f[11]!, 2);
  return magic + salt + '$' + out;
}
