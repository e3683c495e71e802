// The parsers of the filter modules, with bounded fuzzing: Accept-Encoding and Content-Encoding
// tokens (mod_deflate, mod_brotli), mod_expires codes, mod_substitute patterns and the gzip
// header of the DEFLATE input filter (through a real request body in the conformance cases;
// here its token readers).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptsCoding, getToken, hasContentCoding } from '../../../src/modules/filters/encoding.js';
import { checkCode } from '../../../src/modules/metadata/mod_expires.js';

test('Accept-Encoding as mod_deflate reads it', () => {
  const yes = ['gzip', 'GZIP', 'deflate, gzip', 'gzip;q=0.5', 'gzip;q=0.0001', 'gzip ;q=1', 'br, gzip;level=1', 'gzip;q=', 'gzip;', 'gzip;q=0.0000'];
  const no = ['', 'x-gzip', '*', 'deflate', 'gzip;q=0', 'gzip; q=0.0', 'gzip;q=0.00', 'gzip;q=0.000', 'gzip;q=0.', 'br;q=1, identity'];
  for (const v of yes) assert.equal(acceptsCoding(v, 'gzip'), true, v);
  for (const v of no) assert.equal(acceptsCoding(v, 'gzip'), false, v);
  // mod_brotli's tests (t/modules/brotli.t qvalues).
  for (const [q, ok] of [['', true], [' ', true], [';', true], [';q=', true], [';q=0', false], [';q=0.', false], [';q=0.0', false], [';q=0.00', false], [';q=0.000', false], [';q=0.0000', true]] as const) {
    assert.equal(acceptsCoding('br' + q, 'br'), ok, `br${q}`);
  }
});

test('content codings: the first that is not identity-like', () => {
  assert.equal(hasContentCoding('identity'), undefined);
  assert.equal(hasContentCoding('identity, 7bit,8bit , binary'), undefined);
  assert.equal(hasContentCoding('identity, gzip'), 'gzip');
  assert.equal(hasContentCoding('Identity'), 'Identity');
  assert.deepEqual(getToken('  "a,b" c', 0, false), ['"a,b"', 8]);
});

test('mod_expires codes in both syntaxes', () => {
  assert.deepEqual(checkCode('A3600'), { code: 'A3600' });
  assert.deepEqual(checkCode('M0'), { code: 'M0' });
  assert.deepEqual(checkCode('access plus 1 hour'), { code: 'A3600' });
  assert.deepEqual(checkCode('now 1 mo 2 d'), { code: `A${30 * 86400 + 2 * 86400}` });
  assert.deepEqual(checkCode('modification plus 10 years 6 months 2 weeks 3 days 12 hours 30 minutes 19 seconds'),
    { code: `M${10 * 365 * 86400 + 6 * 30 * 86400 + 14 * 86400 + 3 * 86400 + 12 * 3600 + 30 * 60 + 19}` });
  assert.deepEqual(checkCode('later'), { error: "bad expires code, unrecognised <base> 'later'" });
  assert.deepEqual(checkCode('access plus x'), { error: "bad expires code, numeric value expected <num> 'x'" });
  assert.deepEqual(checkCode('access plus 3'), { error: 'bad expires code, missing <type>' });
  assert.deepEqual(checkCode('access plus 3 m'), { error: "bad expires code, unrecognised <type>'m'" });
});

/** A small seeded generator: the same inputs on every run. */
function rng(seed: number): () => number {
  let x = seed;
  return () => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) / 4294967296; };
}

test('fuzz (bounded): the token readers and the expires parser never throw and always end', () => {
  const rand = rng(0x5eed);
  const alphabet = ['g', 'z', 'i', 'p', 'b', 'r', ';', ',', ' ', '\t', 'q', '=', '0', '.', '1', '"', '*', 'a', 'm', 'y', 'd', 'h', 's', 'A', 'M', 'n', 'o', 'w'];
  for (let n = 0; n < 3000; n++) {
    let s = '';
    const len = Math.floor(rand() * 24);
    for (let i = 0; i < len; i++) s += alphabet[Math.floor(rand() * alphabet.length)];
    assert.equal(typeof acceptsCoding(s, 'gzip'), 'boolean');
    assert.equal(typeof acceptsCoding(s, 'br'), 'boolean');
    const c = hasContentCoding(s);
    assert.ok(c === undefined || (c.length > 0 && s.includes(c)));
    const e = checkCode(s);
    assert.ok('code' in e ? /^[AM]/.test(e.code) : e.error.startsWith('bad expires code'), s);
  }
});
