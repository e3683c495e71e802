// C's number readers as httpd applies them to directive arguments (glibc semantics).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { atoi, strtoi64 } from '../../../src/lib/c-numbers.js';

test('atoi: blanks, sign, digits, trailing text ignored, no digits is 0', () => {
  assert.equal(atoi(' 12abc'), 12);
  assert.equal(atoi('\t-7'), -7);
  assert.equal(atoi('+5x'), 5);
  assert.equal(atoi('x'), 0);
  assert.equal(atoi(''), 0);
  assert.equal(atoi('- 5'), 0);
  assert.equal(atoi('1x'), 1);
});

test('atoi: (int)strtol — wraps past 32 bits, -1 once strtol saturates', () => {
  assert.equal(atoi('2147483647'), 2147483647);
  assert.equal(atoi('2147483648'), -2147483648);
  assert.equal(atoi('4294967297'), 1);
  assert.equal(atoi('99999999999999999999'), -1);
  assert.equal(atoi('-99999999999999999999'), 0);
  assert.equal(atoi('000000000000012'), 12);
});

test('strtoi64: value, overflow and the rest', () => {
  assert.deepEqual(strtoi64(' 42 rest'), { value: 42n, overflow: false, rest: ' rest' });
  assert.deepEqual(strtoi64('abc'), { value: 0n, overflow: false, rest: 'abc' });
  assert.equal(strtoi64('9223372036854775808').overflow, true);
  assert.equal(strtoi64('-9223372036854775809').value, -9223372036854775808n);
});
