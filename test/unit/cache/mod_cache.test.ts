// mod_cache's arithmetic without a server: the Cache-Control tokenizer and parser, the RFC 7234
// age and freshness decisions as httpd computes them, the stored expiry (max-age, Expires,
// the Last-Modified heuristic, the limits), httpd's hashed file names, the URL filters of
// CacheEnable, and the header record format with a bounded fuzz test.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { checkFreshness, computeExpiry, controlledHeaders, currentAge, generateName, parseControl, tokenize } from '../../../src/modules/cache/mod_cache/control.js';
import { emptyControl, varyKey, type CacheInfo } from '../../../src/modules/cache/mod_cache/api.js';
import { decodeRecord, encodeRecord } from '../../../src/modules/cache/mod_cache/entry.js';
import { parseUrl, uriMeetsConditions } from '../../../src/modules/cache/mod_cache/config.js';
import { HeaderTable } from '../../../src/server/request/headers.js';

const LIM = { minex: 0, maxex: 86400_000, defex: 3600_000, factor: 0.1 };

function info(over: Partial<CacheInfo> = {}): CacheInfo {
  return { status: 200, date: 1_000_000, expire: NaN, requestTime: 1_000_000, responseTime: 1_000_000, control: parseControl(undefined, undefined), ...over };
}

test('tokenize (httpd 2.4 cache_strqtok): separators ", \\t", quoted strings kept whole', () => {
  assert.deepEqual(tokenize('max-age=60, no-cache="Set-Cookie, X-A" ,private'), ['max-age=60', 'no-cache="Set-Cookie, X-A"', 'private']);
  assert.deepEqual(tokenize('a="x\\"y", b'), ['a="x\\"y"', 'b']);
  assert.deepEqual(tokenize(''), []);
  assert.deepEqual(tokenize(' ,\t'), []);
});

test('parseControl: the directives mod_cache acts on, strict numbers, Pragma no-cache', () => {
  const c = parseControl('Max-Age=30, s-maxage=10, must-revalidate, private="X", no-cache, max-stale', 'x, no-cache');
  assert.equal(c.maxAge, true); assert.equal(c.maxAgeValue, 30);
  assert.equal(c.sMaxage, true); assert.equal(c.sMaxageValue, 10);
  assert.equal(c.mustRevalidate, true);
  assert.equal(c.private, false); assert.equal(c.privateHeader, true);
  assert.equal(c.noCache, true); assert.equal(c.maxStale, true); assert.equal(c.maxStaleValue, -1);
  assert.equal(c.pragma, true); assert.equal(c.cacheControl, true);
  const bad = parseControl('max-age=1x, max-age, s-maxage=, no-cachex', undefined);
  assert.equal(bad.maxAge, false); assert.equal(bad.maxAgeValue, -1); assert.equal(bad.sMaxage, false); assert.equal(bad.noCache, false);
  assert.deepEqual(controlledHeaders('no-cache="Set-Cookie, X-A", private=X-B, max-age=3'), ['Set-Cookie', 'X-A', 'X-B']);
});

test('currentAge: RFC 7234 4.2.3 with the Age header, response delay and resident time', () => {
  const i = info({ date: 10_000, requestTime: 11_000, responseTime: 12_000 });
  // apparent 2 s, corrected received max(2 s, Age 5 s) = 5 s, delay 1 s, resident 3.5 s: 9.5 s -> 9
  assert.equal(currentAge(i, 5, 15_500), 9);
  assert.equal(currentAge(info({ date: 20_000, responseTime: 10_000, requestTime: 10_000 }), 0, 5_000), 0);
});

test('checkFreshness: max-age, s-maxage over max-age, request max-age, max-stale, min-fresh, Expires', () => {
  const base = { ageHeader: undefined, hasExpires: false, warning: undefined, ignoreCacheControl: false };
  const ma = info({ control: parseControl('max-age=10', undefined) });
  assert.equal(checkFreshness({ ...base, info: ma, controlIn: parseControl(undefined, undefined), now: 1_009_000 }).fresh, true);
  assert.equal(checkFreshness({ ...base, info: ma, controlIn: parseControl(undefined, undefined), now: 1_010_000 }).fresh, false);
  assert.equal(checkFreshness({ ...base, info: ma, controlIn: parseControl('max-age=5', undefined), now: 1_006_000 }).fresh, false);
  const stale = checkFreshness({ ...base, info: ma, controlIn: parseControl('max-stale=20', undefined), now: 1_015_000 });
  assert.equal(stale.fresh, true);
  // httpd 2.4 adds 110 only beside another warning.
  assert.deepEqual(stale.warnings, []);
  assert.deepEqual(checkFreshness({ ...base, warning: '199 x', info: ma, controlIn: parseControl('max-stale', undefined), now: 1_015_000 }).warnings, ['110 Response is stale']);
  assert.equal(checkFreshness({ ...base, info: ma, controlIn: parseControl('min-fresh=5', undefined), now: 1_006_000 }).fresh, false);
  const mr = info({ control: parseControl('max-age=10, must-revalidate', undefined) });
  assert.equal(checkFreshness({ ...base, info: mr, controlIn: parseControl('max-stale=20', undefined), now: 1_015_000 }).fresh, false);
  const sm = info({ control: parseControl('max-age=100, s-maxage=5', undefined) });
  assert.equal(checkFreshness({ ...base, info: sm, controlIn: emptyControl(), now: 1_006_000 }).fresh, false);
  const ex = info({ expire: 1_030_000 });
  const r = checkFreshness({ ...base, info: ex, controlIn: emptyControl(), now: 1_029_000 });
  assert.equal(r.fresh, true); assert.equal(r.age, 29);
  assert.equal(checkFreshness({ ...base, info: ex, controlIn: emptyControl(), now: 1_030_000 }).fresh, false);
  assert.equal(checkFreshness({ ...base, info: ex, controlIn: parseControl('no-cache', undefined), now: 1_000_000 }).fresh, false);
  assert.equal(checkFreshness({ ...base, ignoreCacheControl: true, info: ex, controlIn: parseControl('no-cache', undefined), now: 1_000_000 }).fresh, true);
  assert.equal(checkFreshness({ ...base, info: info({ expire: 1_030_000, control: { ...emptyControl(), invalidated: true } }), controlIn: emptyControl(), now: 1_000_000 }).fresh, false);
  // An Age header from upstream counts.
  assert.equal(checkFreshness({ ...base, ageHeader: '25', info: ex, controlIn: emptyControl(), now: 1_006_000 }).fresh, false);
});

test('computeExpiry: max-age over Expires, limits, the Last-Modified heuristic, the default', () => {
  const date = 100_000_000;
  assert.equal(computeExpiry(parseControl('max-age=60', undefined), date, date + 5_000, NaN, LIM), date + 60_000);
  assert.equal(computeExpiry(parseControl('s-maxage=7, max-age=60', undefined), date, NaN, NaN, LIM), date + 7_000);
  assert.equal(computeExpiry(parseControl('max-age=999999', undefined), date, NaN, NaN, LIM), date + 86400_000);
  assert.equal(computeExpiry(parseControl('max-age=1', undefined), date, NaN, NaN, { ...LIM, minex: 30_000 }), date + 30_000);
  assert.equal(computeExpiry(parseControl(undefined, undefined), date, date + 5_000, NaN, LIM), date + 5_000);
  // 1000 s since Last-Modified * 0.1 = 100 s
  assert.equal(computeExpiry(parseControl(undefined, undefined), date, NaN, date - 1_000_000, LIM), date + 100_000);
  assert.equal(computeExpiry(parseControl(undefined, undefined), date, NaN, date - 1_000_000, { ...LIM, factor: 0.5, maxex: 60_000 }), date + 60_000);
  // Last-Modified equal to (or after) Date: CacheDefaultExpire
  assert.equal(computeExpiry(parseControl(undefined, undefined), date, NaN, date, LIM), date + 3600_000);
  assert.equal(computeExpiry(parseControl(undefined, undefined), date, NaN, date + 50, LIM), date + 3600_000);
  assert.equal(computeExpiry(parseControl(undefined, undefined), date, NaN, NaN, { ...LIM, defex: 10_000 }), date + 10_000);
});

test('generateName: httpd\'s 22-character MD5 name split into directories', () => {
  const n = generateName('http://localhost:80/a.html?', 0, 0);
  assert.match(n, /^[A-Za-z0-9_@]{22}$/);
  assert.equal(generateName('http://localhost:80/a.html?', 2, 2), `${n.slice(0, 2)}/${n.slice(2, 4)}/${n.slice(4)}`);
  assert.equal(generateName('http://localhost:80/a.html?', 1, 1), `${n[0]}/${n.slice(1)}`);
  assert.notEqual(generateName('http://localhost:80/b.html?', 0, 0), n);
});

test('URL filters: a path prefix matches local URLs only; a scheme filter matches proxied URLs', () => {
  const local = { url: parseUrl('/cache/')!, pathlen: 7 };
  assert.equal(uriMeetsConditions(local, parseUrl('/cache/x')!, '/cache/x'), true);
  assert.equal(uriMeetsConditions(local, parseUrl('/cachex')!, '/cachex'), false);
  assert.equal(uriMeetsConditions(local, parseUrl('http://h/cache/x')!, '/cache/x'), false);
  const proxy = { url: parseUrl('http://.example.com')!, pathlen: 1 };
  proxy.url.path = '/';
  assert.equal(uriMeetsConditions(proxy, parseUrl('http://www.example.com/a')!, '/a'), true);
  assert.equal(uriMeetsConditions(proxy, parseUrl('http://www.example.org/a')!, '/a'), false);
  assert.equal(uriMeetsConditions(proxy, parseUrl('http://www.example.com:8080/a')!, '/a'), false);
  assert.equal(uriMeetsConditions(proxy, parseUrl('https://www.example.com/a')!, '/a'), false);
});

test('header record: an entity and a Vary record round-trip; varyKey separates variants', () => {
  const resp = new HeaderTable();
  resp.add('ETag', '"x"');
  resp.add('Set-Cookie', 'a=1');
  resp.add('Set-Cookie', 'b=2');
  const req = new HeaderTable();
  req.add('Accept-Language', 'en');
  const i = info({ expire: 5, control: parseControl('max-age=5', undefined) });
  const back = decodeRecord(encodeRecord({ kind: 'entity', key: 'k', info: i, respHdrs: resp, reqHdrs: req, headerOnly: false }));
  assert.ok(back !== null && back.kind === 'entity');
  assert.deepEqual(back.respHdrs.entries(), resp.entries());
  assert.deepEqual(back.info, i);
  const bad = decodeRecord(encodeRecord({ kind: 'entity', key: 'k', info: info(), respHdrs: resp, reqHdrs: req, headerOnly: true }));
  assert.ok(bad !== null && bad.kind === 'entity' && Number.isNaN(bad.info.expire) && bad.headerOnly);
  const v = decodeRecord(encodeRecord({ kind: 'vary', key: 'k', names: ['Accept-Language'], expire: 9 }));
  assert.deepEqual(v, { kind: 'vary', key: 'k', names: ['Accept-Language'], expire: 9 });
  const fr = new HeaderTable();
  fr.add('accept-language', 'fr');
  assert.notEqual(varyKey('k', ['Accept-Language'], req), varyKey('k', ['Accept-Language'], fr));
  assert.equal(varyKey('k', ['A', 'B'], req), varyKey('k', ['b', 'a'], req));
});

test('header record: foreign, truncated and mutated input is refused, never thrown (bounded fuzz)', () => {
  const resp = new HeaderTable();
  resp.add('Content-Type', 'text/html');
  const good = encodeRecord({ kind: 'entity', key: 'http://h:80/?', info: info({ expire: 7 }), respHdrs: resp, reqHdrs: new HeaderTable(), headerOnly: false });
  for (const b of [Buffer.alloc(0), Buffer.from('null'), Buffer.from('[]'), Buffer.from('{"v":2}'), good.subarray(0, good.length - 1)]) {
    assert.equal(decodeRecord(b), null);
  }
  assert.equal(decodeRecord(Buffer.from(good.toString().replace('"text/html"', '"a\\r\\nb"'))), null);
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const alphabet = Buffer.from('{}[]",:0123456789.-etruflsnaxkvy\\ \u0000');
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.from(good);
    const edits = 1 + rnd(4);
    for (let e = 0; e < edits; e++) b[rnd(b.length)] = alphabet[rnd(alphabet.length)]!;
    const rec = decodeRecord(b.subarray(0, b.length - rnd(3)));
    if (rec !== null && rec.kind === 'entity') {
      assert.ok(Number.isInteger(rec.info.status) && rec.info.status >= 100 && rec.info.status <= 999);
      for (const [n, v] of rec.respHdrs.entries()) assert.ok(!/[\r\n:]/.test(n) && !/[\r\n]/.test(v));
    }
  }
});
