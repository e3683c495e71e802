// The crypt(3) base-64 alphabet ("./0-9A-Za-z", least significant 6 bits first) and the
// random salts htpasswd draws from it (passwd_common.c generate_salt).

import { randomBytes } from 'node:crypto';

export const ITOA64 = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `n` characters for the low 6*n bits of v, least significant first (crypt's to64). */
export function toCrypt64(v: number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) {
    s += ITOA64[v & 0x3f];
    v >>>= 6;
  }
  return s;
}

/** A random salt of `len` characters from the crypt alphabet. */
export function randomSalt(len: number): string {
  const bytes = randomBytes(len);
  let s = '';
  for (let i = 0; i < len; i++) s += ITOA64[bytes[i]! & 0x3f];
  return s;
}
