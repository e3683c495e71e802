// mod_proxy_http's backend response parsing (src/modules/proxy/http-response.ts): the status
// line check, header lines under each ProxyBadHeader policy, the chunked decoder fed in
// arbitrary pieces, and a bounded fuzz run that must never throw anything but ChunkError.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChunkedDecoder, ChunkError, headerLine, parseStatusLine, dateCanon, clearConnection } from '../../../src/modules/proxy/http-response.js';

test('status lines as apr_date_checkmask "HTTP/#.# ###*"', () => {
  assert.deepEqual(parseStatusLine('HTTP/1.1 200 OK'), { major: 1, minor: 1, status: 200, statusLine: '200 OK' });
  assert.deepEqual(parseStatusLine('HTTP/1.0 404'), { major: 1, minor: 0, status: 404, statusLine: '404 ' });
  assert.equal(parseStatusLine('HTTP/1.1 OK'), undefined);
  assert.equal(parseStatusLine('<html>'), undefined);
  assert.equal(parseStatusLine('HTTP/9.9 200 OK')?.major, 9);
});

test('header lines and ProxyBadHeader', () => {
  assert.deepEqual(headerLine('X-A:  v  ', 'error', false), { kind: 'field', name: 'X-A', value: 'v' });
  assert.deepEqual(headerLine('garbage', 'error', true), { kind: 'error' });
  assert.deepEqual(headerLine('garbage', 'ignore', true), { kind: 'ignore' });
  assert.deepEqual(headerLine('garbage', 'body', true), { kind: 'body', sawHeaders: true });
  assert.deepEqual(headerLine('HTTP/1.1 200 OK', 'error', true), { kind: 'ignore' });
  assert.equal(dateCanon('Sunday, 06-Nov-94 08:49:37 GMT'), 'Sun, 06 Nov 1994 08:49:37 GMT');
  assert.equal(dateCanon('not a date'), 'not a date');
  const h = new Map([['Connection', 'close, X-Drop'], ['X-Drop', '1'], ['X-Keep', '2']]);
  assert.equal(clearConnection((n) => h.get(n), (n) => { h.delete(n); }), true);
  assert.deepEqual([...h.keys()], ['X-Keep']);
});

test('chunked decoding in any split, with trailers and what follows', () => {
  const wire = Buffer.from('5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT');
  for (let cut = 1; cut < wire.length; cut++) {
    const d = new ChunkedDecoder();
    const out: Buffer[] = [];
    let rest = '';
    for (const part of [wire.subarray(0, cut), wire.subarray(cut)]) {
      if (d.done) { rest += part.toString(); continue; }
      const r = d.push(part);
      out.push(...r.data);
      if (r.rest !== null) rest += r.rest.toString();
    }
    assert.equal(Buffer.concat(out).toString(), 'hello world');
    assert.ok(d.done);
    assert.deepEqual(d.trailers, [['X-T', '1']]);
    assert.equal(rest, 'NEXT');
  }
  assert.throws(() => new ChunkedDecoder().push(Buffer.from('zz\r\n')), ChunkError);
  assert.throws(() => new ChunkedDecoder().push(Buffer.from('1\r\nab\r\n')), ChunkError);
});

test('fuzz: random bytes never break the parsers (bounded)', () => {
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const alphabet = '0123456789abcdefABCDEF;:= \t\r\nHTTP/1.';
  for (let i = 0; i < 3000; i++) {
    const len = rnd(80);
    let s = '';
    for (let j = 0; j < len; j++) s += rnd(4) === 0 ? String.fromCharCode(rnd(256)) : alphabet[rnd(alphabet.length)]!;
    parseStatusLine(s);
    headerLine(s, (['error', 'ignore', 'body'] as const)[rnd(3)]!, rnd(2) === 0);
    const d = new ChunkedDecoder();
    try {
      const r = d.push(Buffer.from(s, 'latin1'), 64);
      for (const b of r.data) assert.ok(b.length > 0);
    } catch (e) {
      assert.ok(e instanceof ChunkError, String(e));
    }
  }
});
