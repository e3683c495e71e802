// mod_lua's WebSocket frames (src/modules/lua/websocket.ts): the handshake key, frames built and
// parsed back, masked client frames, partial input, and a bounded fuzz of the frame parser.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { acceptKey, buildFrame, parseFrame, MAX_PAYLOAD } from '../../../src/modules/lua/websocket.js';
import { parseMultipart } from '../../../src/modules/lua/api.js';
import { seededRandom } from '../../fuzz.js';

test('Sec-WebSocket-Accept of RFC 6455 section 1.3', () => {
  assert.equal(acceptKey('dGhlIHNhbXBsZSBub25jZQ=='), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
});

function masked(opcode: number, payload: Buffer, mask = Buffer.from([1, 2, 3, 4])): Buffer {
  const f = buildFrame(opcode, payload);
  const head = f.subarray(0, f.length - payload.length);
  head[1] = head[1]! | 0x80;
  const body = Buffer.from(payload.map((b, i) => b ^ mask[i & 3]!));
  return Buffer.concat([head, mask, body]);
}

test('frames of the three length forms parse back, masked or not', () => {
  for (const n of [0, 5, 125, 126, 1000, 65535, 65536, 70000]) {
    const payload = Buffer.alloc(n, 0x61 + (n % 26));
    for (const f of [buildFrame(1, payload), masked(1, payload)]) {
      const p = parseFrame(f);
      assert.ok(typeof p === 'object', `length ${n}`);
      assert.equal(p.used, f.length);
      assert.equal(p.frame.fin, true);
      assert.equal(p.frame.opcode, 1);
      assert.deepEqual(p.frame.payload, payload);
    }
  }
});

test('an incomplete frame asks for more; two frames in one buffer come one at a time', () => {
  const f = masked(1, Buffer.from('hello'));
  for (let i = 0; i < f.length; i++) assert.equal(parseFrame(f.subarray(0, i)), 'more');
  const both = Buffer.concat([f, buildFrame(9, Buffer.from('p'))]);
  const a = parseFrame(both);
  assert.ok(typeof a === 'object');
  const b = parseFrame(both.subarray(a.used));
  assert.ok(typeof b === 'object');
  assert.equal(b.frame.opcode, 9);
  assert.equal(b.frame.payload.toString(), 'p');
});

test('a payload over the limit is refused before it is buffered', () => {
  const head = Buffer.alloc(10);
  head[0] = 0x81;
  head[1] = 127;
  head.writeBigUInt64BE(BigInt(MAX_PAYLOAD + 1), 2);
  assert.equal(parseFrame(head), 'toolarge');
});

test('fuzz: random bytes never throw and never claim more than they have (bounded)', () => {
  const rnd = seededRandom(23);
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.alloc(rnd(40));
    for (let j = 0; j < b.length; j++) b[j] = rnd(256);
    const p = parseFrame(b);
    if (typeof p === 'object') {
      assert.ok(p.used <= b.length);
      assert.ok(p.frame.payload.length <= b.length);
    } else {
      assert.ok(p === 'more' || p === 'toolarge');
    }
  }
});

test('multipart bodies as r:parsebody reads them, and fuzzed ones do not throw (bounded)', () => {
  const body = Buffer.from('--B\r\nContent-Disposition: form-data; name="a"\r\n\r\none\r\n--B\r\nContent-Disposition: form-data; name="a"\r\n\r\ntwo\r\n--B--\r\n');
  const [n, single, many] = parseMultipart(body, 'B') as [number, Record<string, string>, Record<string, string[]>];
  assert.equal(n, 2);
  assert.deepEqual(single, { a: 'two' });
  assert.deepEqual(many, { a: ['one', 'two'] });
  const rnd = seededRandom(7);
  const alphabet = '-B\r\n="namefor:; x';
  for (let i = 0; i < 2000; i++) {
    let s = '';
    for (let j = rnd(80); j > 0; j--) s += alphabet[rnd(alphabet.length)];
    parseMultipart(Buffer.from(s, 'latin1'), 'B');
  }
});
