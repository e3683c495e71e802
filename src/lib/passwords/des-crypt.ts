// Traditional DES crypt(3) (the 13-character "CRYPT" hashes of `htpasswd -d`), as glibc and
// libxcrypt compute it: 25 DES encryptions of a zero block under the password's first 8
// characters (7 bits each), with the E expansion perturbed by the 12-bit salt. libxcrypt
// refuses salts outside [./0-9A-Za-z]; so does this (the result is then no hash at all).

const ITOA64 = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// The standard DES tables (FIPS 46), 1-based bit positions.
const IP = [
  58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4,
  62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
  57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3,
  61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7,
];
const FP = [
  40, 8, 48, 16, 56, 24, 64, 32, 39, 7, 47, 15, 55, 23, 63, 31,
  38, 6, 46, 14, 54, 22, 62, 30, 37, 5, 45, 13, 53, 21, 61, 29,
  36, 4, 44, 12, 52, 20, 60, 28, 35, 3, 43, 11, 51, 19, 59, 27,
  34, 2, 42, 10, 50, 18, 58, 26, 33, 1, 41, 9, 49, 17, 57, 25,
];
const PC1_C = [57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36];
const PC1_D = [63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, 14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4];
const SHIFTS = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1];
const PC2_C = [14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2];
const PC2_D = [41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32];
const E0 = [
  32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17,
  16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1,
];
const P = [16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10, 2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25];
const S: readonly (readonly number[])[] = [
  [14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7, 0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
    4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0, 15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13],
  [15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10, 3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
    0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15, 13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9],
  [10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8, 13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
    13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7, 1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12],
  [7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15, 13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
    10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4, 3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14],
  [2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9, 14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
    4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14, 11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3],
  [12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11, 10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
    9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6, 4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13],
  [4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1, 13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
    1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2, 6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12],
  [13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7, 1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
    7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8, 2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11],
];

/** The 16 round keys (48 bits each) of a 64-bit key given as bits. */
function keySchedule(key: Uint8Array): Uint8Array[] {
  const c = PC1_C.map((p) => key[p - 1]!);
  const d = PC1_D.map((p) => key[p - 1]!);
  const ks: Uint8Array[] = [];
  for (let i = 0; i < 16; i++) {
    for (let k = 0; k < SHIFTS[i]!; k++) {
      c.push(c.shift()!);
      d.push(d.shift()!);
    }
    const sub = new Uint8Array(48);
    for (let j = 0; j < 24; j++) {
      sub[j] = c[PC2_C[j]! - 1]!;
      sub[j + 24] = d[PC2_D[j]! - 28 - 1]!;
    }
    ks.push(sub);
  }
  return ks;
}

function encryptBlock(block: Uint8Array, ks: readonly Uint8Array[], e: readonly number[]): void {
  const lr = new Uint8Array(64);
  for (let j = 0; j < 64; j++) lr[j] = block[IP[j]! - 1]!;
  let l = lr.subarray(0, 32);
  let r = lr.subarray(32, 64);
  const pre = new Uint8Array(48);
  const f = new Uint8Array(32);
  for (let i = 0; i < 16; i++) {
    const sub = ks[i]!;
    for (let j = 0; j < 48; j++) pre[j] = r[e[j]! - 1]! ^ sub[j]!;
    for (let j = 0; j < 8; j++) {
      const t = 6 * j;
      const k = S[j]![(pre[t]! << 5) | (pre[t + 5]! << 4) | (pre[t + 1]! << 3) | (pre[t + 2]! << 2) | (pre[t + 3]! << 1) | pre[t + 4]!]!;
      const o = 4 * j;
      f[o] = (k >> 3) & 1;
      f[o + 1] = (k >> 2) & 1;
      f[o + 2] = (k >> 1) & 1;
      f[o + 3] = k & 1;
    }
    const nr = new Uint8Array(32);
    for (let j = 0; j < 32; j++) nr[j] = l[j]! ^ f[P[j]! - 1]!;
    l = r;
    r = nr;
  }
  // The halves are swapped before the final permutation.
  const pre64 = new Uint8Array(64);
  pre64.set(r, 0);
  pre64.set(l, 32);
  for (let j = 0; j < 64; j++) block[j] = pre64[FP[j]! - 1]!;
}

/** crypt(password, setting) for a traditional DES setting (two salt characters, anything
 *  after them ignored). undefined when the setting is not a valid DES salt. */
export function desCrypt(password: Uint8Array, setting: string): string | undefined {
  if (setting.length < 2) return undefined;
  const s0 = ITOA64.indexOf(setting[0]!);
  const s1 = ITOA64.indexOf(setting[1]!);
  if (s0 < 0 || s1 < 0) return undefined;
  const e = E0.slice();
  const salt = [s0, s1];
  for (let i = 0; i < 2; i++) {
    for (let j = 0; j < 6; j++) {
      if ((salt[i]! >> j) & 1) {
        const a = 6 * i + j;
        const t = e[a]!;
        e[a] = e[a + 24]!;
        e[a + 24] = t;
      }
    }
  }
  const key = new Uint8Array(64);
  for (let i = 0, n = 0; n < 8 && n < password.length && password[n] !== 0; n++) {
    const c = password[n]!;
    for (let j = 0; j < 7; j++, i++) key[i] = (c >> (6 - j)) & 1;
    i++;
  }
  const ks = keySchedule(key);
  const block = new Uint8Array(66);
  const b64 = block.subarray(0, 64);
  for (let i = 0; i < 25; i++) encryptBlock(b64, ks, e);
  let out = setting[0]! + setting[1]!;
  for (let i = 0; i < 11; i++) {
    let c = 0;
    for (let j = 0; j < 6; j++) c = (c << 1) | block[6 * i + j]!;
    out += ITOA64[c];
  }
  return out;
}
