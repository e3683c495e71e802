// mod_data's base64 in pieces, mod_buffer's BufferSize, mod_ratelimit's brigade partition and
// mod_echo's line splitting.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { base64Transform, dataPrefix } from '../../../src/modules/filters/mod_data.js';
import { parseBufferSize } from '../../../src/modules/filters/mod_buffer.js';
import { partition } from '../../../src/modules/filters/mod_ratelimit.js';
import { takeLines } from '../../../src/modules/echo/mod_echo.js';
import type { Brigade } from '../../../src/server/filters.js';

const flat = (v: Buffer | readonly Buffer[] | null): string =>
  v === null ? '' : Buffer.isBuffer(v) ? v.toString('latin1') : v.map((b) => b.toString('latin1')).join('');

test('DATA: the prefix takes the first space out of the type; base64 split anywhere equals base64 of the whole', () => {
  assert.equal(dataPrefix('text/html; charset=utf-8'), 'data:text/html;charset=utf-8;base64,');
  assert.equal(dataPrefix('a/b; x=1; y=2'), 'data:a/b;x=1;;base64,');  // cut at the next space, as httpd does
  assert.equal(dataPrefix(undefined), 'data:;base64,');
  const body = Buffer.from('The quick brown fox jumps over the lazy dog!');
  for (const cuts of [[1], [2, 5], [3, 3, 3], [7, 1, 1, 20]]) {
    const t = base64Transform('P,');
    let out = '';
    let at = 0;
    for (const c of cuts) { out += flat(t.write(body.subarray(at, at + c)) as Buffer | Buffer[] | null); at += c; }
    out += flat(t.write(body.subarray(at)) as Buffer | Buffer[] | null) + flat(t.end() as Buffer | Buffer[] | null);
    assert.equal(out, 'P,' + body.toString('base64'));
  }
});

test('BufferSize: apr_strtoff with trailing text ignored; zero, negative and no digits refused', () => {
  assert.equal(parseBufferSize('4096'), 4096);
  assert.equal(parseBufferSize(' 12k'), 12);
  assert.equal(parseBufferSize('0'), undefined);
  assert.equal(parseBufferSize('-5'), undefined);
  assert.equal(parseBufferSize('lots'), undefined);
});

test('RATE_LIMIT partition cuts data and file buckets at a byte count', () => {
  const bb: Brigade = [
    { kind: 'data', data: Buffer.from('abcdef') },
    { kind: 'file', path: '/f', start: 10, length: 100 },
    { kind: 'eos' },
  ];
  const [a, rest] = partition(bb, 4);
  assert.deepEqual(a, [{ kind: 'data', data: Buffer.from('abcd') }]);
  const [b, rest2] = partition(rest, 52);
  assert.deepEqual(b, [{ kind: 'data', data: Buffer.from('ef') }, { kind: 'file', path: '/f', start: 10, length: 50 }]);
  assert.deepEqual(rest2, [{ kind: 'file', path: '/f', start: 60, length: 50 }, { kind: 'eos' }]);
});

test('echo: complete lines with their LF, the rest kept for later', () => {
  const a = takeLines(Buffer.alloc(0), Buffer.from('one\ntw'));
  assert.deepEqual(a.lines.map(String), ['one\n']);
  const b = takeLines(a.rest, Buffer.from('o\r\nthree\n'));
  assert.deepEqual(b.lines.map(String), ['two\r\n', 'three\n']);
  assert.equal(b.rest.length, 0);
});
