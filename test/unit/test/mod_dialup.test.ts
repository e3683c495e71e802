// mod_dialup's standards (modem_bitrates: BITRATE_TO_BYTES kept in an integer) and the pieces a
// file goes out in (dialup_send_pulse); bounded fuzz of the standard's name.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { MODEM_STANDARDS, modemRate, pulses } from '../../../src/modules/test/mod_dialup.js';
import { randomString, seededRandom } from '../../fuzz.js';

const UNKNOWN = 'mod_dialup: Unknown Modem Standard specified.';

test('the standards and their bytes per second', () => {
  assert.equal(modemRate('V.21'), 12);
  assert.equal(modemRate('V.26bis'), 300);
  assert.equal(modemRate('V.32'), 1200);
  assert.equal(modemRate('V.34'), 3600);
  assert.equal(modemRate('V.92'), 7000);
  assert.equal(modemRate('i-was-rich-and-got-a-leased-line'), 187500);
  assert.equal(modemRate('v.26BIS'), 300);
  assert.equal(modemRate('V.90'), UNKNOWN);
  assert.equal(modemRate(''), UNKNOWN);
  assert.equal(modemRate('V.92 '), UNKNOWN);
});

test('pieces: a second\'s worth each, the end with the first shorter one', () => {
  assert.deepEqual(pulses(14500, 7000), [
    { start: 0, length: 7000, last: false }, { start: 7000, length: 7000, last: false }, { start: 14000, length: 500, last: true },
  ]);
  // A multiple of the rate: an empty last piece a second later (the EOS bucket left over).
  assert.deepEqual(pulses(14000, 7000), [
    { start: 0, length: 7000, last: false }, { start: 7000, length: 7000, last: false }, { start: 14000, length: 0, last: true },
  ]);
  assert.deepEqual(pulses(0, 12), [{ start: 0, length: 0, last: true }]);
  assert.deepEqual(pulses(11, 12), [{ start: 0, length: 11, last: true }]);
});

test('fuzz: pieces cover the file exactly; names other than the six are refused', () => {
  const rnd = seededRandom(5600);
  for (let i = 0; i < 2000; i++) {
    const size = rnd(100000);
    const bps = MODEM_STANDARDS[rnd(MODEM_STANDARDS.length)]![1];
    const p = pulses(size, bps);
    assert.equal(p.reduce((n, x) => n + x.length, 0), size);
    assert.equal(p.length, Math.floor(size / bps) + 1);
    assert.ok(p.every((x, k) => x.start === k * bps && x.last === (k === p.length - 1)));
  }
  const names = new Set(MODEM_STANDARDS.map(([n]) => n.toLowerCase()));
  for (let i = 0; i < 5000; i++) {
    const s = randomString(rnd, 'Vv.2913468bis -', 8);
    const r = modemRate(s);
    if (names.has(s.toLowerCase())) assert.equal(typeof r, 'number');
    else assert.equal(r, UNKNOWN);
  }
});
