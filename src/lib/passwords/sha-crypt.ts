// SHA-crypt: "$5$" (SHA-256) and "$6$" (SHA-512) hashes as glibc/libxcrypt compute them
// (Drepper's specification), which `htpasswd -2` / `-5` write and the server accepts through
// the system crypt(). Default 5,000 rounds; "rounds=N$" clamps N to [1000, 999999999].

import { createHash, hash as oneShot } from 'node:crypto';
import { toCrypt64 } from './crypt64.js';

const ROUNDS_DEFAULT = 5000;
const ROUNDS_MIN = 1000;
const ROUNDS_MAX = 999999999;

const ORDER_256: readonly (readonly [number, number, number])[] = [
  [0, 10, 20], [21, 1, 11], [12, 22, 2], [3, 13, 23], [24, 4, 14],
  [15, 25, 5], [6, 16, 26], [27, 7, 17], [18, 28, 8], [9, 19, 29],
];
const ORDER_512: readonly (readonly [number, number, number])[] = [
  [0, 21, 42], [22, 43, 1], [44, 2, 23], [3, 24, 45], [25, 46, 4], [47, 5, 26], [6, 27, 48],
  [28, 49, 7], [50, 8, 29], [9, 30, 51], [31, 52, 10], [53, 11, 32], [12, 33, 54], [34, 55, 13],
  [56, 14, 35], [15, 36, 57], [37, 58, 16], [59, 17, 38], [18, 39, 60], [40, 61, 19], [62, 20, 41],
];

/** Repeats `src` to exactly `len` bytes. */
function stretch(src: Buffer, len: number): Buffer {
  const out = Buffer.alloc(len);
  for (let i = 0; i < len; i += src.length) src.copy(out, i, 0, Math.min(src.length, len - i));
  return out;
}

/** Rounds hashed between two yields to the event loop in the asynchronous form. */
const SLICE = 1000;

/** The computation as a generator that pauses every SLICE rounds; returns the hash string,
 *  or undefined when the setting is malformed. */
function* shaCryptSteps(password: Uint8Array, setting: string): Generator<void, string | undefined> {
  const is512 = setting.startsWith('$6$');
  if (!is512 && !setting.startsWith('$5$')) return undefined;
  const alg = is512 ? 'sha512' : 'sha256';
  const hlen = is512 ? 64 : 32;
  let rest = setting.slice(3);
  let rounds = ROUNDS_DEFAULT;
  let custom = false;
  const m = /^rounds=([0-9]+)\$/.exec(rest);
  if (m) {
    const n = Number(m[1]);
    rounds = Math.max(ROUNDS_MIN, Math.min(ROUNDS_MAX, n));
    custom = true;
    rest = rest.slice(m[0].length);
  } else if (rest.startsWith('rounds=')) {
    return undefined;
  }
  const end = rest.indexOf('$');
  const salt = (end >= 0 ? rest.slice(0, end) : rest).slice(0, 16);
  const saltB = Buffer.from(salt, 'latin1');
  const pw = Buffer.from(password);

  const b = createHash(alg).update(pw).update(saltB).update(pw).digest();
  const a = createHash(alg).update(pw).update(saltB);
  let cnt = pw.length;
  for (; cnt > hlen; cnt -= hlen) a.update(b);
  a.update(b.subarray(0, cnt));
  for (cnt = pw.length; cnt > 0; cnt >>= 1) a.update(cnt & 1 ? b : pw);
  let alt: Buffer = a.digest();

  const dp = createHash(alg);
  for (let i = 0; i < pw.length; i++) dp.update(pw);
  const p = stretch(dp.digest(), pw.length);
  const ds = createHash(alg);
  for (let i = 0; i < 16 + alt[0]!; i++) ds.update(saltB);
  const sb = stretch(ds.digest(), saltB.length);

  // Each round hashes at most P, S, P and the previous digest: one buffer, one-shot hashes.
  const buf = Buffer.alloc(3 * Math.max(p.length, sb.length, hlen) + hlen);
  for (let r = 0; r < rounds; r++) {
    if (r > 0 && r % SLICE === 0) yield;
    let o = r & 1 ? p.copy(buf, 0) : alt.copy(buf, 0);
    if (r % 3) o += sb.copy(buf, o);
    if (r % 7) o += p.copy(buf, o);
    o += r & 1 ? alt.copy(buf, o) : p.copy(buf, o);
    alt = oneShot(alg, buf.subarray(0, o), 'buffer');
  }

  let out = setting.slice(0, 3) + (custom ? `rounds=${rounds}$` : '') + salt + '$';
  for (const [x, y, z] of is512 ? ORDER_512 : ORDER_256) {
    out += toCrypt64((alt[x]! << 16) | (alt[y]! << 8) | alt[z]!, 4);
  }
  out += is512 ? toCrypt64(alt[63]!, 2) : toCrypt64((alt[31]! << 8) | alt[30]!, 3);
  return out;
}

/** crypt(password, setting) for a "$5$" or "$6$" setting; undefined when malformed. */
export function shaCrypt(password: Uint8Array, setting: string): string | undefined {
  const g = shaCryptSteps(password, setting);
  for (;;) {
    const s = g.next();
    if (s.done) return s.value;
  }
}

/** The same, yielding to the event loop every thousand rounds (the server's form). */
export async function shaCryptAsync(password: Uint8Array, setting: string): Promise<string | undefined> {
  const g = shaCryptSteps(password, setting);
  for (;;) {
    const s = g.next();
    if (s.done) return s.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
