// The HTTP/1 response head a tunnel's handler writes on an HTTP/2 stream (httpd's
// H2_C2_CATCH_H1_OUT): mod_proxy_connect's 200, heads in pieces, interim heads, continuation
// lines, the fields HTTP/2 forbids, the errors (AH03467, AH02955, AH10257), and a bounded fuzz:
// random and mutated heads fed in random pieces never throw and give the same result as fed
// whole.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { H1ResponseCatcher, parseStatusLine, MAX_LINE, type H1Feed } from '../../../src/modules/http2/mod_http2/h1-response.js';
import { seededRandom, randomString } from '../../fuzz.js';

const b = (s: string): Buffer => Buffer.from(s, 'latin1');

test('parseStatusLine: the two masks of parse_status', () => {
  assert.equal(parseStatusLine('HTTP/1.0 200 Connection Established'), 200);
  assert.equal(parseStatusLine('HTTP/1.1 407'), 407);
  assert.equal(parseStatusLine('HTTP/2 101 x'), 101);
  assert.equal(parseStatusLine('HTTP/1.1 2000'), 200);
  assert.equal(parseStatusLine('HTTP/1.1 20'), undefined);
  assert.equal(parseStatusLine('http/1.1 200 OK'), undefined);
  assert.equal(parseStatusLine('HTTP/1.1  200'), undefined);
  assert.equal(parseStatusLine('HTTP/x.1 200'), undefined);
  assert.equal(parseStatusLine(''), undefined);
});

test("mod_proxy_connect's answer becomes the response; what follows is body", () => {
  const c = new H1ResponseCatcher('1-2-3');
  const got = c.feed(b('HTTP/1.0 200 Connection Established\r\nProxy-agent: Apache/2.4.71 (Debian)\r\n\r\nhello'));
  assert.deepEqual(got.heads, [{ status: 200, fields: [['proxy-agent', 'Apache/2.4.71 (Debian)']] }]);
  assert.equal(got.rest?.toString(), 'hello');
  assert.equal(got.error, null);
  // Done: everything after is body, head-like or not.
  assert.equal(c.feed(b('HTTP/1.1 500 x\r\n\r\n')).rest?.toString(), 'HTTP/1.1 500 x\r\n\r\n');
});

test('a head in pieces, interim heads, continuations, merged and dropped fields', () => {
  const c = new H1ResponseCatcher('x');
  assert.deepEqual(c.feed(b('HTTP/1.1 10')), { heads: [], rest: null, error: null });
  let got = c.feed(b('0 Continue\r\n\r\nHTTP/1.1 407 Proxy Auth\r\nX-A: 1\r\n'));
  assert.deepEqual(got.heads, [{ status: 100, fields: [] }]);
  assert.equal(got.rest, null);
  got = c.feed(b('Connection: close\r\nx-a:\t 2\r\nX-Long: a\r\n  b\r\nTransfer-Encoding: chunked\r\n\r'));
  assert.deepEqual(got.heads, []);
  got = c.feed(b('\n'));
  assert.deepEqual(got.heads, [{ status: 407, fields: [['x-a', '1, 2'], ['x-long', 'a b']] }]);
  assert.equal(got.rest?.length, 0);
});

test('errors: a status line that is none, a field without colon, a line too long', () => {
  let got = new H1ResponseCatcher('1-0-1').feed(b('garbage\r\n'));
  assert.deepEqual(got.error, { level: 'debug', message: 'AH03467: h2_c2(1-0-1): unable to parse status line: garbage' });
  got = new H1ResponseCatcher('1-0-1').feed(b('HTTP/1.0 200 OK\r\nno colon\r\n\r\n'));
  assert.deepEqual(got.error, { level: 'warn', message: "AH02955: h2_c2(1-0-1): invalid header[0] 'no colon'" });
  got = new H1ResponseCatcher('1-0-1').feed(b('HTTP/1.0 200 OK\r\n' + 'x'.repeat(MAX_LINE + 1)));
  assert.deepEqual(got.error, { level: 'error', message: 'AH10257: h2_c2(1-0-1): read response, line too long' });
  // A continuation with nothing before it.
  got = new H1ResponseCatcher('1-0-1').feed(b('HTTP/1.0 200 OK\r\n folded\r\n\r\n'));
  assert.equal(got.error?.level, 'debug');
  // A bare LF is kept in the line: the header is then "a: b\n".
  got = new H1ResponseCatcher('1-0-1').feed(b('HTTP/1.0 200 OK\r\na: b\n\r\n'));
  assert.deepEqual(got.heads[0]?.fields, [['a', 'b\n']]);
});

function whole(input: Buffer): H1Feed {
  return new H1ResponseCatcher('f').feed(input);
}

function pieces(input: Buffer, rnd: (n: number) => number): { heads: H1Feed['heads'][number][]; rest: Buffer | null; error: H1Feed['error'] } {
  const c = new H1ResponseCatcher('f');
  const heads: H1Feed['heads'][number][] = [];
  let rest: Buffer | null = null;
  let error: H1Feed['error'] = null;
  let at = 0;
  while (at < input.length && error === null) {
    const n = 1 + rnd(Math.min(40, input.length - at));
    const got = c.feed(input.subarray(at, at + n));
    at += n;
    if (rest !== null) { rest = Buffer.concat([rest, got.rest ?? Buffer.alloc(0)]); continue; }
    heads.push(...got.heads);
    error = got.error;
    if (got.rest !== null) rest = Buffer.concat([got.rest, input.subarray(at)]);
    if (rest !== null) break;
  }
  return { heads, rest, error };
}

test('fuzz: random and mutated heads never throw and parse the same whole or in pieces', () => {
  const rnd = seededRandom(8441);
  const seeds = [
    'HTTP/1.0 200 Connection Established\r\nProxy-agent: x\r\n\r\nbody',
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 407 No\r\nA: 1\r\n b\r\nConnection: close\r\n\r\n',
    'HTTP/1 204 x\r\n\r\n',
  ];
  for (let i = 0; i < 3000; i++) {
    let s: string;
    if (i % 3 === 0) s = randomString(rnd, 'HTP/1.0 2\r\n: \tax', 80);
    else {
      const chars = [...seeds[rnd(seeds.length)]!];
      for (let k = rnd(4); k >= 0; k--) {
        const at = rnd(chars.length);
        const op = rnd(3);
        if (op === 0) chars.splice(at, 1);
        else if (op === 1) chars.splice(at, 0, '\r\n: \t\0x9'[rnd(9)]!);
        else chars[at] = String.fromCharCode(rnd(256));
      }
      s = chars.join('');
    }
    const input = b(s);
    const a = whole(input);
    const p = pieces(input, rnd);
    assert.deepEqual(p.heads, a.heads, JSON.stringify(s));
    assert.deepEqual(p.error, a.error, JSON.stringify(s));
    assert.deepEqual(p.rest?.toString('latin1'), a.rest?.toString('latin1'), JSON.stringify(s));
    for (const h of a.heads) {
      assert.ok(h.status >= 0 && h.status <= 999);
      for (const [n] of h.fields) assert.ok(n === n.toLowerCase() && !['connection', 'upgrade', 'keep-alive', 'transfer-encoding'].includes(n));
    }
  }
});
