// mod_session_crypto (modules/session/mod_session_crypto.c): mod_session's codec that
// encrypts the encoded session, so a cookie store carries it unreadable and unforgeable.
//
// The format is httpd's, so sessions pass between Apache and plume servers sharing a
// passphrase: base64 of an 8-byte SipHash-2-4 MAC (keyed with MD5 of the passphrase) over
// what follows, a 16-byte random salt, the IV, and the CBC ciphertext (PKCS#7 padding) under
// a key derived with PBKDF2-HMAC-SHA1 (4096 iterations) from the passphrase and salt, as
// apr_crypto_passphrase does with the openssl driver.
//
//  - SessionCryptoPassphrase (several: the first encrypts, each is tried to decrypt;
//    "exec:program args" takes the first line the program prints), SessionCryptoPassphraseFile,
//    SessionCryptoCipher (aes256 default, aes192, aes128, 3des192), SessionCryptoDriver
//    (openssl, the one driver there is here).
//  - A session that does not decrypt is no session (mod_session starts an empty one).

import { createCipheriv, createDecipheriv, createHash, pbkdf2Sync, randomBytes } from 'node:crypto';
import { execLineArg } from '../../server/config/exec-line.js';
import * as fs from 'node:fs';
import {
  ACCESS_CONF, MODULE_API_VERSION, OK, OR_AUTHCFG, RSRC_CONF, defineModule, directive,
} from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import { splitWords } from '../../server/config/lexer.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, levelFor } from '../../server/log/levels.js';
import { APR_ECRYPT, APR_EGENERAL, APR_EPADDING, aprStatusError, type SessionCodec } from './api.js';

interface CryptoDir {
  passphrases: string[]; passphrasesSet: boolean;
  cipher: string; cipherSet: boolean;
}

interface CryptoServer {
  library: string | undefined;
  /** The driver's parameters after the library name (apr_crypto_make's "engine=..."). */
  params: string;
}

/** apr's openssl block ciphers (CBC mode): OpenSSL name, key and IV lengths. */
const CIPHERS: ReadonlyMap<string, { name: string; key: number; iv: number }> = new Map([
  ['aes256', { name: 'aes-256-cbc', key: 32, iv: 16 }],
  ['aes192', { name: 'aes-192-cbc', key: 24, iv: 16 }],
  ['aes128', { name: 'aes-128-cbc', key: 16, iv: 16 }],
  ['3des192', { name: 'des-ede3-cbc', key: 24, iv: 8 }],
]);

const MAC_SIZE = 8;
const SALT_SIZE = 16;

// ---- SipHash-2-4 (64-bit), as httpd's ap_siphash24 ------------------------------------------

const M64 = (1n << 64n) - 1n;
const rotl = (x: bigint, b: bigint): bigint => ((x << b) | (x >> (64n - b))) & M64;

export function siphash24(src: Buffer, key: Buffer): Buffer {
  const k0 = key.readBigUInt64LE(0);
  const k1 = key.readBigUInt64LE(8);
  let v0 = k0 ^ 0x736f6d6570736575n;
  let v1 = k1 ^ 0x646f72616e646f6dn;
  let v2 = k0 ^ 0x6c7967656e657261n;
  let v3 = k1 ^ 0x7465646279746573n;
  const round = (): void => {
    v0 = (v0 + v1) & M64; v1 = rotl(v1, 13n); v1 ^= v0; v0 = rotl(v0, 32n);
    v2 = (v2 + v3) & M64; v3 = rotl(v3, 16n); v3 ^= v2;
    v0 = (v0 + v3) & M64; v3 = rotl(v3, 21n); v3 ^= v0;
    v2 = (v2 + v1) & M64; v1 = rotl(v1, 17n); v1 ^= v2; v2 = rotl(v2, 32n);
  };
  const len = src.length;
  const full = len - (len & 7);
  for (let i = 0; i < full; i += 8) {
    const m = src.readBigUInt64LE(i);
    v3 ^= m; round(); round(); v0 ^= m;
  }
  let m = BigInt(len & 0xff) << 56n;
  for (let i = len & 7; i > 0; i--) m |= BigInt(src[full + i - 1]!) << BigInt(8 * (i - 1));
  v3 ^= m; round(); round(); v0 ^= m;
  v2 ^= 0xffn;
  round(); round(); round(); round();
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE((v0 ^ v1 ^ v2 ^ v3) & M64);
  return out;
}

function computeAuth(data: Buffer, passphrase: string): Buffer {
  return siphash24(data, createHash('md5').update(Buffer.from(passphrase, 'latin1')).digest());
}

function deriveKey(passphrase: string, salt: Buffer, keyLen: number): Buffer {
  return pbkdf2Sync(Buffer.from(passphrase, 'latin1'), salt, 4096, keyLen, 'sha1');
}

function cipherOf(r: Request, conf: CryptoDir): { name: string; key: number; iv: number } | undefined {
  const c = CIPHERS.get(conf.cipher);
  if (c === undefined) {
    r.log('session_crypto', APLOG_ERR, `AH01824: cipher '${conf.cipher}' not recognised by crypto driver. session encryption not possible, options: aes128, aes192, aes256, 3des192`);
  }
  return c;
}

/** encrypt_string: the session's encoded form in httpd's encrypted format. */
export function encryptSession(plain: string, passphrase: string, c: { name: string; key: number; iv: number }): string {
  const salt = randomBytes(SALT_SIZE);
  const iv = randomBytes(c.iv);
  const cipher = createCipheriv(c.name, deriveKey(passphrase, salt, c.key), iv);
  const body = Buffer.concat([salt, iv, cipher.update(Buffer.from(plain, 'latin1')), cipher.final()]);
  return Buffer.concat([computeAuth(body, passphrase), body]).toString('base64');
}

/** decrypt_string: the plain session, or the APR status it failed with (and httpd's debug
 *  lines). */
export function decryptSession(r: Request | undefined, input: string, passphrases: readonly string[], c: { name: string; key: number; iv: number }): string | number {
  const log = (msg: string): void => r?.log('session_crypto', APLOG_DEBUG, msg);
  const m = /^[A-Za-z0-9+/]*/.exec(input)!;
  const decoded = Buffer.from(m[0], 'base64');
  if (decoded.length < MAC_SIZE + SALT_SIZE) {
    log('AH10005: too short to decrypt, aborting');
    return APR_ECRYPT;
  }
  const mac = decoded.subarray(0, MAC_SIZE);
  const rest = decoded.subarray(MAC_SIZE);
  let res = APR_ECRYPT;
  for (const pass of passphrases) {
    if (!computeAuth(rest, pass).equals(mac)) {
      log('AH10006: auth does not match, skipping');
      continue;
    }
    if (rest.length < SALT_SIZE + c.iv) {
      log('AH01836: too short to decrypt, skipping');
      res = APR_ECRYPT;
      continue;
    }
    const salt = rest.subarray(0, SALT_SIZE);
    const iv = rest.subarray(SALT_SIZE, SALT_SIZE + c.iv);
    try {
      const d = createDecipheriv(c.name, deriveKey(pass, salt, c.key), iv);
      return Buffer.concat([d.update(rest.subarray(SALT_SIZE + c.iv)), d.final()]).toString('latin1');
    } catch {
      res = APR_EPADDING;
      log('AH01839: apr_crypto_block_decrypt_finish failed');
    }
  }
  return res;
}

const codec: SessionCodec = {
  encode(r, z) {
    const conf = self.dir(r);
    if (!conf.passphrasesSet || z.encoded === undefined || z.encoded === '') return OK;
    const c = cipherOf(r, conf);
    if (c === undefined) {
      r.log('session_crypto', APLOG_DEBUG, 'AH01841: encrypt session failed', aprStatusError(APR_EGENERAL));
      return APR_EGENERAL;
    }
    z.encoded = encryptSession(z.encoded, conf.passphrases[0]!, c);
    return OK;
  },
  decode(r, z) {
    const conf = self.dir(r);
    if (!conf.passphrasesSet || z.encoded === undefined || z.encoded === '') return OK;
    const c = cipherOf(r, conf);
    const plain = c === undefined ? APR_EGENERAL : decryptSession(r, z.encoded, conf.passphrases, c);
    if (typeof plain === 'number') {
      if (c !== undefined) r.log('session_crypto', APLOG_INFO, 'AH01840: decryption failed', aprStatusError(plain));
      r.log('session_crypto', APLOG_ERR, 'AH01842: decrypt session failed, wrong passphrase?', aprStatusError(plain));
      return plain;
    }
    z.encoded = plain;
    return OK;
  },
};

// ---- directives -----------------------------------------------------------------------------------

type Cmd = CmdParms<CryptoServer, CryptoDir>;

function addPassphrase(cmd: Cmd, arg: string): string | undefined {
  const value = execLineArg(arg, (p) => cmd.serverRootRelative(p));
  if (typeof value !== 'string') return value.error;
  cmd.dir.passphrases.push(value);
  cmd.dir.passphrasesSet = true;
  return undefined;
}

function passphraseFile(cmd: Cmd, file: string): string | undefined {
  const p = cmd.serverRootRelative(file);
  let text: string;
  try {
    text = fs.readFileSync(p, 'latin1');
  } catch (e) {
    const msg = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'No such file or directory' : (e as Error).message;
    return `${cmd.name}: Could not open file ${p}: ${msg}`;
  }
  for (const line of text.split('\n')) {
    for (const w of splitWords(line.trim())) {
      if (w.startsWith('#')) break;
      const err = addPassphrase(cmd, w);
      if (err !== undefined) return err;
    }
  }
  return undefined;
}

function setDriver(cmd: Cmd, raw: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const words = splitWords(raw);
  cmd.srv.library = words[0] ?? '';
  cmd.srv.params = words.slice(1).join(' ');
  return undefined;
}

/**
 * The engine the driver parameters name (apr-util's openssl crypto_make: whitespace-separated
 * words, "key=value" or "key", keys compared without case; "engine" is the only key, the
 * others are ignored). undefined: none ("engine" without "=" names none either).
 */
export function driverEngine(params: string): string | undefined {
  let engine: string | undefined;
  for (const word of splitWords(params)) {
    const eq = word.indexOf('=');
    const key = (eq >= 0 ? word.slice(0, eq) : word).trimEnd();
    if (key.toLowerCase() === 'engine') engine = eq >= 0 ? word.slice(eq + 1) : undefined;
  }
  return engine;
}

function postConfig(ctx: ConfigContext): string | undefined {
  for (const s of [ctx.mainServer, ...ctx.vhosts]) {
    const { library: lib, params } = self.server(s);
    if (lib === undefined) continue;
    if (lib !== 'openssl') {
      ctx.logNoServer('session_crypto', APLOG_ERR, `AH01846: The crypto library '${lib}' could not be found`);
      return 'AH00016: Configuration Failed';
    }
    // DIFFERENCE: httpd's openssl driver does its ciphers with the OpenSSL engine "engine="
    // names, and fails when the engine does not load (APR_ENOENGINE) or initialise; Node
    // cannot put an engine under one cipher, so plume refuses every engine, as httpd on an
    // OpenSSL without engines (Debian's 3.x: engine=rdrand, engine=dynamic) does.
    if (driverEngine(params) !== undefined) {
      ctx.log('session_crypto', APLOG_ERR, `(100010)Error string not specified yet: AH01848: The crypto library '${lib}' could not be initialised`);
      return 'AH00016: Configuration Failed';
    }
    if (!ctx.child && !ctx.preflight && APLOG_INFO <= levelFor(s.logLevel, 'session_crypto')) ctx.log('session_crypto', APLOG_INFO, `AH01849: The crypto library '${lib}' was loaded successfully`);
  }
  return undefined;
}

const self = defineModule<CryptoServer, CryptoDir>({
  name: 'session_crypto_module',
  source: 'mod_session_crypto.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ library: 'openssl', params: '' }),
  createDirConfig: () => ({ passphrases: [], passphrasesSet: false, cipher: 'aes256', cipherSet: false }),
  mergeDirConfig: (base, add) => ({
    passphrases: add.passphrasesSet ? add.passphrases : base.passphrases,
    passphrasesSet: add.passphrasesSet || base.passphrasesSet,
    cipher: add.cipherSet ? add.cipher : base.cipher,
    cipherSet: add.cipherSet || base.cipherSet,
  }),
  directives: [
    directive<CryptoServer, CryptoDir, 'ITERATE'>({ name: 'SessionCryptoPassphrase', args: 'ITERATE', where: RSRC_CONF | OR_AUTHCFG, help: 'The passphrase(s) used to encrypt the session. First will be used for encryption, all phrases will be accepted for decryption', handler: addPassphrase }),
    directive<CryptoServer, CryptoDir, 'TAKE1'>({ name: 'SessionCryptoPassphraseFile', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'File containing passphrase(s) used to encrypt the session, one per line. First will be used for encryption, all phrases will be accepted for decryption', handler: passphraseFile }),
    directive<CryptoServer, CryptoDir, 'TAKE1'>({ name: 'SessionCryptoCipher', args: 'TAKE1', where: RSRC_CONF | OR_AUTHCFG, help: 'The underlying crypto cipher to use', handler: (cmd: Cmd, c: string) => { cmd.dir.cipher = c; cmd.dir.cipherSet = true; } }),
    directive<CryptoServer, CryptoDir, 'RAW_ARGS'>({ name: 'SessionCryptoDriver', args: 'RAW_ARGS', where: RSRC_CONF, help: 'The underlying crypto library driver to use', handler: setDriver }),
  ],
  configHooks: { postConfig },
  providers: [{ group: 'session_codec', name: 'crypto', version: '0', provider: codec }],
});

export default self;
