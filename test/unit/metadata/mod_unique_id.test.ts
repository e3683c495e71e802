// mod_unique_id's id layout: 27 base64url characters over stamp, root, counter, connection id.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeUniqueId } from '../../../src/modules/metadata/mod_unique_id.js';

const ROOT = Buffer.from('00112233445566778899', 'hex');

test('the 20-byte record is stamp, root, counter and connection id, big-endian, as base64url', () => {
  const id = encodeUniqueId(0x5f5e1000, ROOT, 0x0102, 7);
  assert.equal(id.length, 27);
  assert.match(id, /^[A-Za-z0-9_-]{27}$/);
  const raw = Buffer.from(id + 'A', 'base64url').subarray(0, 20);
  assert.equal(raw.toString('hex'), '5f5e1000' + '00112233445566778899' + '0102' + '00000007');
});

test('the counter is taken modulo 65535, as httpd does (not 65536)', () => {
  const a = encodeUniqueId(1, ROOT, 65535, 1);
  const b = encodeUniqueId(1, ROOT, 0, 1);
  assert.equal(a, b);
  assert.notEqual(encodeUniqueId(1, ROOT, 65536, 1), b);
});

test('ids differ by root alone (two processes in the same second on the same connection slot)', () => {
  const other = Buffer.from(ROOT);
  other[9] = 0x98;
  assert.notEqual(encodeUniqueId(1, ROOT, 5, 1), encodeUniqueId(1, other, 5, 1));
});
