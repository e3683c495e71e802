// mod_session_crypto: SipHash-2-4 against the reference vector, a session Apache 2.4.71
// encrypted decrypting here, round trips with every cipher, and random cookies never
// decrypting or throwing (bounded fuzz).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomString, seededRandom } from '../../fuzz.js';
import { decryptSession, driverEngine, encryptSession, siphash24 } from '../../../src/modules/session/mod_session_crypto.js';

const AES256 = { name: 'aes-256-cbc', key: 32, iv: 16 };

test('SipHash-2-4: the reference vector (key 00..0f, message 00..0e)', () => {
  const key = Buffer.from([...Array(16).keys()]);
  const msg = Buffer.from([...Array(15).keys()]);
  assert.equal(siphash24(msg, key).readBigUInt64LE(0), 0xa129ca6149be45e5n);
});

test('a session encrypted by Apache 2.4.71 (passphrase "secret", aes256) decrypts', () => {
  const fromApache = 'aidzvqduBzd+Qnx66yJFUJjGf80fvJezRvgUiV4Tc+ViQw4CGhyfV3MM2APMlILjpjfeJR4kt7cdDKudKoqqrj0mQx87jfLy';
  assert.equal(decryptSession(undefined, fromApache, ['secret'], AES256), 'user=bob&role=admin');
  assert.equal(typeof decryptSession(undefined, fromApache, ['other'], AES256), 'number');
});

test('round trips with each cipher, the second passphrase accepted', () => {
  for (const c of [AES256, { name: 'aes-128-cbc', key: 16, iv: 16 }, { name: 'aes-192-cbc', key: 24, iv: 16 }, { name: 'des-ede3-cbc', key: 24, iv: 8 }]) {
    const enc = encryptSession('a=1&b=%7e', 'p2', c);
    assert.equal(decryptSession(undefined, enc, ['p1', 'p2'], c), 'a=1&b=%7e');
  }
});

test('random cookies never decrypt and never throw (fuzz, bounded)', () => {
  const rnd = seededRandom(2024);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';
  for (let i = 0; i < 500; i++) {
    const s = randomString(rnd, alphabet, 120);
    assert.equal(typeof decryptSession(undefined, s, ['secret'], AES256), 'number');
  }
});

test('SessionCryptoDriver parameters: only engine=<name> names an engine (apr-util openssl crypto_make), keys without case, "engine" alone names none', () => {
  assert.equal(driverEngine(''), undefined);
  assert.equal(driverEngine('foo a=b'), undefined);
  assert.equal(driverEngine('engine'), undefined);
  assert.equal(driverEngine('engine=rdrand'), 'rdrand');
  assert.equal(driverEngine('ENGINE=x other'), 'x');
  assert.equal(driverEngine('engine='), '');
  assert.equal(driverEngine('"engine=two words"'), 'two words');
});
