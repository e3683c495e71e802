// mod_auth_digest's parsers and client table: the Authorization header (httpd's
// get_digest_rec, fuzzed), the uri attribute (apr_uri_parse as the comparison needs it), the
// shared client table (numbers, lookups, gc when a bucket is full).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAuthorization, parseUri, HdrStatus } from '../../../src/modules/aaa/mod_auth_digest.js';
import { ClientTable, bucketsFor, MIN_SHMEM_SIZE, HASH_DEPTH } from '../../../src/modules/aaa/digest-clients.js';

const NONCE = 'AQAAAAAAAAA=0123456789abcdef0123456789abcdef01234567';

test('a full header: every attribute, quoted strings with escapes, tokens, odd spacing', () => {
  const h = parseAuthorization(`Digest  username="us\\"er", realm = "r e", nonce="${NONCE}",uri="/p/?a=b" , response=abc, qop=auth, nc=00000001, cnonce="c", opaque="1f", algorithm=MD5, extra="x"`);
  assert.equal(h.sts, HdrStatus.Valid);
  assert.equal(h.username, 'us"er');
  assert.equal(h.realm, 'r e');
  assert.equal(h.uri, '/p/?a=b');
  assert.equal(h.digest, 'abc');
  assert.equal(h.messageQop, 'auth');
  assert.equal(h.nonceCount, '00000001');
  assert.equal(h.opaqueNum, 0x1f);
  assert.equal(h.algorithm, 'MD5');
});

test('header status: none, another scheme, missing fields, a nonce of the wrong shape', () => {
  assert.equal(parseAuthorization(undefined).sts, HdrStatus.NoHeader);
  assert.equal(parseAuthorization('Basic dXNlcjpw').sts, HdrStatus.NotDigest);
  assert.equal(parseAuthorization('digest').sts, HdrStatus.Invalid);
  const base = `username="u", realm="r", nonce="${NONCE}", uri="/", response="x"`;
  assert.equal(parseAuthorization(`Digest ${base}`).sts, HdrStatus.Valid, 'qop is checked later (AH10560)');
  assert.equal(parseAuthorization(`Digest ${base}, qop=auth`).sts, HdrStatus.Invalid, 'qop needs cnonce and nc');
  assert.equal(parseAuthorization(`Digest ${base}, qop=auth, nc=1`).sts, HdrStatus.Invalid);
  assert.equal(parseAuthorization(`Digest ${base.replace(NONCE, 'short')}`).sts, HdrStatus.Invalid);
  assert.equal(parseAuthorization(`Digest ${base.replace(NONCE, NONCE.replace('=', 'x'))}`).sts, HdrStatus.Invalid);
});

test('fuzz: random headers never throw, and a Valid one always has its required fields', () => {
  const alphabet = 'Digest ,=" \\\tabcnoqr1=/AQ';
  let seed = 7;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let i = 0; i < 3000; i++) {
    let s = rnd(2) === 0 ? 'Digest ' : '';
    const len = rnd(80);
    for (let j = 0; j < len; j++) s += alphabet[rnd(alphabet.length)];
    if (rnd(3) === 0) s += `, username="a", realm="b", nonce="${NONCE}", uri="/", response="r"`;
    const h = parseAuthorization(s);
    if (h.sts === HdrStatus.Valid) {
      for (const k of ['username', 'realm', 'nonce', 'uri', 'digest'] as const) assert.notEqual(h[k], undefined, `${k} in ${JSON.stringify(s)}`);
    }
  }
});

test('uri attribute parsing: absolute, relative, authority, invalid', () => {
  assert.deepEqual(parseUri('http://h.example:81/p?q#f'), { scheme: 'http', hostname: 'h.example', portStr: '81', port: 81, path: '/p', query: 'q', hostinfo: 'h.example:81' });
  const rel = parseUri('/p/x?a=b');
  assert.equal(rel?.path, '/p/x');
  assert.equal(rel?.query, 'a=b');
  assert.equal(rel?.hostname, undefined);
  assert.equal(parseUri('http://[::1]:8080/')?.hostname, '::1');
  assert.equal(parseUri('http://[::1/p'), null);
  assert.equal(parseUri('http://h:99999/'), null);
  assert.equal(parseUri('http://h')?.path, undefined);
});

test('client table: httpd\'s bucket count, numbers from 1, lookups, gc of a full bucket', () => {
  assert.equal(bucketsFor(1000), 5);
  assert.equal(bucketsFor(2048), 11);
  assert.equal(bucketsFor(MIN_SHMEM_SIZE), 1);
  const t = ClientTable.inMemory(Buffer.alloc(20, 1), MIN_SHMEM_SIZE);
  const removed: number[] = [];
  const keys: number[] = [];
  for (let i = 0; i < HASH_DEPTH; i++) { const k = t.nextOpaque(); keys.push(k); t.add(k, (n) => removed.push(n)); }
  assert.deepEqual(keys, [1, 2, 3, 4, 5]);
  assert.equal(removed.length, 0);
  const c = t.get(2)!;
  c.nonceCount = 7;
  c.ncTime = 123;
  t.save(c);
  assert.equal(t.get(2)?.nonceCount, 7);
  assert.equal(t.get(2)?.ncTime, 123);
  assert.equal(t.get(99), null);
  assert.equal(t.get(0), null);
  // A sixth client: the bucket is full, the least recently used (1) goes.
  t.add(t.nextOpaque(), (n) => removed.push(n));
  assert.deepEqual(removed, [1]);
  assert.equal(t.get(1), null);
  assert.notEqual(t.get(2), null);
  assert.notEqual(t.get(6), null);
  assert.deepEqual(t.counters(), { created: 6, removed: 1, renewed: 0 });
  assert.equal(t.nextOneTimeCounter(), 1);
  assert.equal(t.nextOneTimeCounter(), 2);
});
