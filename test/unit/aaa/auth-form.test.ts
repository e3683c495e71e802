// mod_auth_form's form parser (ap_parse_form_data's pairs): known answers and a bounded fuzz
// (the body of a login POST is client input).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomString, seededRandom } from '../../fuzz.js';
import { parseFormPairs } from '../../../src/modules/aaa/mod_auth_form.js';

test('form pairs: + and %XX decoded in names and values, pairs without = skipped', () => {
  assert.deepEqual(parseFormPairs('httpd_username=u+1&httpd_password=p%26w&x&&a%3Db=c=d'),
    [['httpd_username', 'u 1'], ['httpd_password', 'p&w'], ['a=b', 'c=d']]);
  assert.deepEqual(parseFormPairs('k=%zz%4'), [['k', '%zz%4']]);
});

test('form pairs: random bodies never throw (fuzz, bounded)', () => {
  const rnd = seededRandom(7);
  const alphabet = 'ab=&%+09fZ \u0000\u00ff';
  for (let i = 0; i < 5000; i++) {
    const s = randomString(rnd, alphabet, 49);
    for (const [k, v] of parseFormPairs(s)) { assert.equal(typeof k, 'string'); assert.equal(typeof v, 'string'); }
  }
});
