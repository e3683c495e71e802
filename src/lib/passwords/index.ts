// Password hashes as Apache reads and writes them: apr_password_validate (the server side,
// for mod_authn_file / mod_authn_dbm) and passwd_common.c mkhash (htpasswd / htdbm).
//
// Validation follows APR's dispatch: "$2y$"/"$2a$" bcrypt, "$apr1$" APR MD5, "{SHA}" SHA-1,
// anything else to the system crypt(), which on Debian (libxcrypt) also knows "$1$", "$5$",
// "$6$", "$2b$" and traditional DES. A plain-text entry therefore never matches on Unix, as
// htpasswd warns. bcrypt and SHA-crypt run asynchronously in slices so they never block
// other clients.
// DIFFERENCE: libxcrypt's yescrypt ("$y$") and the other rare crypt methods are not supported
// (such entries never match).

import { createHash, createHmac, randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { desCrypt } from './des-crypt.js';
import { APR1_MAGIC, MD5_MAGIC, md5Crypt } from './md5-crypt.js';
import { shaCrypt, shaCryptAsync } from './sha-crypt.js';
import { ITOA64, randomSalt } from './crypt64.js';

export { desCrypt } from './des-crypt.js';
export { md5Crypt } from './md5-crypt.js';
export { shaCrypt, shaCryptAsync } from './sha-crypt.js';

export const SHA1_ID = '{SHA}';

/** apr_sha1_base64: "{SHA}" + base64 of the SHA-1 digest. */
export function sha1Base64(password: Uint8Array): string {
  return SHA1_ID + createHash('sha1').update(password).digest('base64');
}

/** bcryptjs takes strings and hashes their UTF-8 bytes; bytes that are not UTF-8 cannot be
 *  passed through it (undefined). */
function utf8String(password: Uint8Array): string | undefined {
  const s = Buffer.from(password).toString('utf8');
  return Buffer.from(s, 'utf8').equals(Buffer.from(password)) ? s : undefined;
}

/** The system crypt() as libxcrypt answers it: the hash string, or undefined on failure. */
export function systemCrypt(password: Uint8Array, setting: string): string | undefined {
  if (setting.startsWith(MD5_MAGIC)) return md5Crypt(password, setting, MD5_MAGIC);
  if (setting.startsWith('$5$') || setting.startsWith('$6$')) return shaCrypt(password, setting);
  if (setting.startsWith('$') || setting.startsWith('_')) return undefined;
  return desCrypt(password, setting);
}

function isBcrypt(hash: string): boolean {
  return hash.length > 4 && hash[0] === '$' && hash[1] === '2' && (hash[2] === 'a' || hash[2] === 'y' || hash[2] === 'b') && hash[3] === '$';
}

// Successful checks of the slow hashes are remembered under an HMAC of (hash, password) with
// a per-process key, so a busy protected resource does not pay 1,000 MD5 rounds (or bcrypt)
// on every request. Only successes are kept, and the entry is tied to the exact hash string:
// a changed password file changes the hash and misses.
const CACHE_MAX = 1024;
const cacheKey = randomBytes(32);
const verified = new Map<string, true>();

function cacheId(password: Uint8Array, hash: string): string {
  return createHmac('sha256', cacheKey).update(hash).update('\0').update(password).digest('base64');
}

function remember(id: string): void {
  if (verified.size >= CACHE_MAX) {
    const oldest = verified.keys().next().value;
    if (oldest !== undefined) verified.delete(oldest);
  }
  verified.set(id, true);
}

/** apr_password_validate: whether `password` (bytes, up to any NUL) matches `hash`. */
export function validatePassword(password: Uint8Array, hash: string): boolean | Promise<boolean> {
  const nul = password.indexOf(0);
  const pw = nul >= 0 ? password.subarray(0, nul) : password;
  if (hash.startsWith(SHA1_ID)) return sha1Base64(pw) === hash;
  const id = cacheId(pw, hash);
  if (verified.has(id)) return true;
  if (isBcrypt(hash)) {
    const s = utf8String(pw);
    if (s === undefined) return false;
    // bcryptjs knows "$2a$", "$2b$" and "$2y$" as the same algorithm.
    return bcrypt.compare(s, hash).then((ok) => {
      if (ok) remember(id);
      return ok;
    }, () => false);
  }
  if (hash.startsWith('$5$') || hash.startsWith('$6$')) {
    // Thousands of rounds: computed in slices so other clients are served meanwhile.
    return shaCryptAsync(pw, hash).then((sample) => {
      const ok = sample !== undefined && sample === hash;
      if (ok) remember(id);
      return ok;
    });
  }
  const sample = hash.startsWith(APR1_MAGIC) ? md5Crypt(pw, hash, APR1_MAGIC) : systemCrypt(pw, hash);
  const ok = sample !== undefined && sample === hash;
  if (ok) remember(id);
  return ok;
}

// ---- making hashes (htpasswd, htdbm) ----------------------------------------------------

export type HashAlgorithm = 'md5' | 'bcrypt' | 'sha1' | 'crypt' | 'plain' | 'sha256' | 'sha512';

export interface HashOptions {
  /** bcrypt cost (-C), or SHA-crypt rounds (-r); 0 = the default. */
  readonly cost: number;
}

export const BCRYPT_DEFAULT_COST = 5;

/** bcrypt's own base-64 of 16 random bytes (22 characters), for a "$2y$" salt. */
function bcryptSalt(cost: number): string {
  const alphabet = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const b = randomBytes(16);
  let out = '';
  let i = 0;
  while (i < 16) {
    const c1 = b[i++]!;
    out += alphabet[(c1 >> 2) & 0x3f];
    let c = (c1 & 0x03) << 4;
    if (i >= 16) { out += alphabet[c]; break; }
    const c2 = b[i++]!;
    c |= (c2 >> 4) & 0x0f;
    out += alphabet[c];
    c = (c2 & 0x0f) << 2;
    if (i >= 16) { out += alphabet[c]; break; }
    const c3 = b[i++]!;
    c |= (c3 >> 6) & 0x03;
    out += alphabet[c] + alphabet[c3 & 0x3f];
  }
  return `$2b$${String(cost).padStart(2, '0')}$${out}`;
}

/** mkhash: the stored form of `password` under `alg`. bcrypt is asynchronous. The result
 *  is what Apache's tools write ("$2y$" for bcrypt, as APR's encoder does). */
export function makeHash(alg: HashAlgorithm, password: Uint8Array, opts: HashOptions): string | Promise<string> {
  switch (alg) {
    case 'sha1': return sha1Base64(password);
    case 'md5': return md5Crypt(password, randomSalt(8), APR1_MAGIC);
    case 'plain': return Buffer.from(password).toString('latin1');
    case 'crypt': return desCrypt(password, randomSalt(2))!;
    case 'sha256':
    case 'sha512': {
      const m = alg === 'sha256' ? '5' : '6';
      const setting = opts.cost ? `$${m}$rounds=${opts.cost}$${randomSalt(16)}` : `$${m}$${randomSalt(16)}`;
      return shaCrypt(password, setting)!;
    }
    case 'bcrypt': {
      const s = Buffer.from(password).toString('utf8');
      return bcrypt.hash(s, bcryptSalt(opts.cost || BCRYPT_DEFAULT_COST)).then((h) => '$2y$' + h.slice(4));
    }
  }
}

/** Whether a DES-crypt of more than 8 characters lost its tail (htpasswd's warning). */
export function desTruncates(password: Uint8Array, hash: string): boolean {
  return password.length > 8 && desCrypt(password.subarray(0, 8), hash) === hash;
}

export { ITOA64 };
