// The reader mod_proxy_http has over a backend connection (src/modules/proxy/mod_proxy/conn.ts):
// headNow, which takes a response head that came in one read as a whole, must give the lines
// that reading it line by line gives (and leave the stream as that would), or decline; and
// fieldKind (http-response.ts), which sorts the backend's fields by name without lower-casing
// most of them, must agree with a plain case-insensitive lookup.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BackendConn, makeReader } from '../../../src/modules/proxy/mod_proxy/conn.js';
import {
  fieldKind, F_CONNECTION, F_COOKIE, F_DATE, F_HOP, F_PLAIN, F_UPGRADE, F_URL,
} from '../../../src/modules/proxy/http-response.js';
import type { ProxyWorker } from '../../../src/proxy/api.js';
import { seededRandom } from '../../fuzz.js';

/** A connection whose queue holds `bytes` (no socket: the reader only reads the queue). */
function connWith(bytes: Buffer): BackendConn {
  const c = new BackendConn({} as ProxyWorker);
  c.queue = [bytes];
  c.queued = bytes.length;
  return c;
}

/** The lines lineNow gives up to the empty line, and what is left; undefined when a line is
 *  not whole in the buffer (headNow must decline those too). */
function byLines(bytes: Buffer, max: number): { lines: string[]; rest: string } | undefined {
  const c = connWith(bytes);
  const rd = makeReader(c, 5000);
  const lines: string[] = [];
  for (;;) {
    const l = rd.lineNow(max);
    if (l === undefined) return undefined;
    if (l === '') break;
    lines.push(l);
  }
  return { lines, rest: Buffer.concat(c.queue).toString('latin1') };
}

test('headNow: a head in one read as readLine would read it; the body left on the stream', () => {
  const head = 'HTTP/1.1 200 OK\r\nDate: Fri, 27 Nov 2026 10:53:52 GMT\r\nX-A:  v \r\n folded\r\n\r\n';
  const c = connWith(Buffer.from(head + 'body', 'latin1'));
  const rd = makeReader(c, 5000);
  const lines = rd.headNow(8192)!;
  assert.deepEqual(lines, ['HTTP/1.1 200 OK', 'Date: Fri, 27 Nov 2026 10:53:52 GMT', 'X-A:  v ', ' folded']);
  rd.skip(head.length);
  assert.equal(rd.readNow(100)?.toString(), 'body');
  // Declined: a bare LF, an HTTP/0.9 answer, a line of `max` bytes, a head not yet whole.
  assert.equal(makeReader(connWith(Buffer.from('HTTP/1.1 200 OK\nA: b\r\n\r\n')), 5000).headNow(8192), undefined);
  assert.equal(makeReader(connWith(Buffer.from('<html>\r\n\r\n')), 5000).headNow(8192), undefined);
  assert.equal(makeReader(connWith(Buffer.from('HTTP/1.1 200 OK\r\nA: 123456\r\n\r\n')), 5000).headNow(9), undefined);
  assert.equal(makeReader(connWith(Buffer.from('HTTP/1.1 200 OK\r\nA: b\r\n')), 5000).headNow(8192), undefined);
  // The reader is made once per connection and timeout.
  const k = connWith(Buffer.alloc(0));
  assert.equal(makeReader(k, 5000), makeReader(k, 5000));
  assert.notEqual(makeReader(k, 100), makeReader(k, 5000));
});

test('fuzz: headNow gives what line-by-line reading gives, or declines (bounded)', () => {
  const rnd = seededRandom(2311);
  const pieces = ['HTTP/1.1 200 OK', 'HTTP/1.0 404', 'A: b', ' x', '\t', ':', 'Date: x', '\r', '\n', '\r\n', '\r\n', 'B: c\r\n', ' ', 'HTTP/', 'q'];
  let taken = 0;
  for (let i = 0; i < 4000; i++) {
    let s = rnd(4) === 0 ? '' : 'HTTP/1.1 200 OK\r\n';
    for (let j = rnd(12); j > 0; j--) s += pieces[rnd(pieces.length)]!;
    if (rnd(3) > 0) s += '\r\n\r\nBODY';
    const bytes = Buffer.from(s, 'latin1');
    const max = 4 + rnd(80);
    const rd = makeReader(connWith(bytes), 5000);
    const lines = rd.headNow(max);
    if (lines === undefined) continue;
    taken++;
    const want = byLines(bytes, max);
    assert.ok(want !== undefined, JSON.stringify(s));
    assert.deepEqual(lines, want.lines, JSON.stringify(s));
    let n = 0;
    for (const l of lines) n += l.length + 2;
    rd.skip(n + 2);
    const c = connWith(bytes);
    const r2 = makeReader(c, 5000);
    r2.headNow(max);
    r2.skip(n + 2);
    assert.equal(Buffer.concat(c.queue).toString('latin1'), want.rest, JSON.stringify(s));
  }
  assert.ok(taken > 100, `only ${taken} heads taken whole`);
});

test('fieldKind agrees with a case-insensitive lookup', () => {
  const kinds = new Map<string, number>([
    ['date', F_DATE], ['expires', F_DATE], ['last-modified', F_DATE],
    ['location', F_URL], ['content-location', F_URL], ['uri', F_URL], ['destination', F_URL],
    ['set-cookie', F_COOKIE], ['connection', F_CONNECTION], ['upgrade', F_UPGRADE],
    ['keep-alive', F_HOP], ['proxy-authenticate', F_HOP], ['te', F_HOP], ['trailer', F_HOP],
  ]);
  const rnd = seededRandom(77);
  const names = [...kinds.keys(), 'etag', 'content-length', 'content-type', 'accept-ranges', 'server', 'x-date', 'dat', 'locatio',
    'set-cookie2', 'keep-alivf', 'connectioN', 'te ', 'trailers', 'proxy-authorization', 'cache-control', 'x'];
  for (const n of names) {
    for (let i = 0; i < 20; i++) {
      let v = '';
      for (const ch of n) v += rnd(2) === 0 ? ch.toUpperCase() : ch;
      assert.equal(fieldKind(v), kinds.get(n.toLowerCase()) ?? F_PLAIN, v);
    }
  }
});
