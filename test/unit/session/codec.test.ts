// mod_session's identity codec and httpd's urlencoded helpers: known answers, a round trip,
// and a bounded fuzz of the decoder (a session cookie is client input).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomString, seededRandom } from '../../fuzz.js';
import { escapeUrlencoded, strtokAll, unescapeUrl, unescapeUrlStrict, unescapeUrlencoded } from '../../../src/lib/urlencoded.js';
import { identityDecode, identityEncode } from '../../../src/modules/session/mod_session.js';
import { newSession } from '../../../src/modules/session/api.js';

test('urlencoded: httpd escapes all but letters, digits and .-*_, space as +', () => {
  assert.equal(escapeUrlencoded('a b~!*._-'), 'a+b%7e%21*._-');
  assert.equal(unescapeUrlencoded('a+b%7e%21'), 'a b~!');
  assert.equal(unescapeUrlencoded('%zz'), undefined);
  assert.equal(unescapeUrlencoded('%00'), undefined);
  assert.deepEqual(strtokAll('&&a=1&&b=2&', '&'), ['a=1', 'b=2']);
});

test('ap_unescape_url: lenient (bad escapes kept, %2f and %00 decoded) and strict forms', () => {
  assert.equal(unescapeUrl('%41%2f%zz+%'), 'A/%zz+%');
  assert.equal(unescapeUrl('plain'), 'plain');
  assert.equal(unescapeUrlStrict('a%20b%7E'), 'a b~');
  for (const bad of ['%zz', '%2f', '%2F', '%00', 'x%4']) assert.equal(unescapeUrlStrict(bad), undefined, bad);
  // Bounded fuzz: the strict form, where it succeeds, agrees with the lenient one.
  const rnd = seededRandom(7);
  for (let n = 0; n < 2000; n++) {
    const s = randomString(rnd, '%2fF0az/+ 41', 10);
    const strict = unescapeUrlStrict(s);
    if (strict !== undefined) assert.equal(strict, unescapeUrl(s), s);
  }
});

test('identity codec: decode skips bad pairs, drops emptied keys, reads the expiry', () => {
  const z = newSession();
  z.entries.set('keep', 'x');
  z.encoded = 'a=1+2&b=%7e&c=&keep=&d&bad=%zz&expiry=99999999999999999';
  identityDecode(z);
  assert.deepEqual([...z.entries], [['a', '1 2'], ['b', '~']]);
  assert.equal(z.expiry, 99999999999999999n);
  assert.equal(z.encoded, undefined);
  identityEncode(z);
  assert.equal(z.encoded, 'a=1+2&b=%7e&expiry=99999999999999999');
});

test('identity codec: encode then decode gives the pairs back (round trip)', () => {
  const z = newSession();
  z.entries.set('user name', 'a&b=c%');
  z.entries.set('k', '\u00e9');
  identityEncode(z);
  const back = newSession();
  back.encoded = z.encoded;
  identityDecode(back);
  assert.deepEqual([...back.entries], [...z.entries]);
});

test('identity codec: random and mutated session strings never throw (fuzz, bounded)', () => {
  const rnd = seededRandom(12345);
  const alphabet = 'ab=&%+0129fzZ \t\u0000\u00ff-.expiry';
  for (let i = 0; i < 5000; i++) {
    const s = randomString(rnd, alphabet, 39);
    const z = newSession();
    z.encoded = s;
    identityDecode(z);
    identityEncode(z);
    assert.equal(typeof z.encoded, 'string');
  }
});
