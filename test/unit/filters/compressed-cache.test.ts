// The compressed-file cache (src/modules/filters/compressed-cache.ts): entries found only for
// the same file version and encoder settings, least recently used evicted past the budget.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Stats } from 'node:fs';
import { compressedCache, parseCacheSize, wholeFile } from '../../../src/modules/filters/compressed-cache.js';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import type { ServerRec } from '../../../src/server/server-rec.js';
import { EOS } from '../../../src/server/filters.js';

function req(filename: string, st: Partial<Stats>): Request {
  const r = new Request({} as Runtime, {} as ConnRec, {} as ServerRec);
  r.filename = filename;
  r.finfo = { ino: 1, size: 10, mtimeMs: 5, ctimeMs: 5, ...st } as Stats;
  return r;
}

test('an entry is found for the same file version and settings only', () => {
  compressedCache.setLimit(1024);
  const r = req('/x/a.html', {});
  compressedCache.put(r, 'gzip:6', [[Buffer.from('abc')], [Buffer.from('de')]], 10, 5);
  const hit = compressedCache.get(req('/x/a.html', {}), 'gzip:6');
  assert.ok(hit);
  assert.equal(hit.passes.length, 2);
  assert.equal(hit.totalOut, 5);
  assert.equal(compressedCache.get(req('/x/a.html', {}), 'gzip:1'), undefined);
  // A changed file (ctime moves on any write) is a miss, and the stale entry goes.
  assert.equal(compressedCache.get(req('/x/a.html', { ctimeMs: 6 }), 'gzip:6'), undefined);
  assert.equal(compressedCache.get(req('/x/a.html', {}), 'gzip:6'), undefined);
  assert.equal(compressedCache.size, 0);
});

test('memory stays within the budget: least recently used out first; 0 turns it off', () => {
  compressedCache.setLimit(100);
  const big = Buffer.alloc(20);
  for (const n of ['a', 'b', 'c', 'd']) compressedCache.put(req('/x/' + n, {}), 's', [[big]], 40, 20);
  assert.ok(compressedCache.get(req('/x/a', {}), 's'));
  compressedCache.put(req('/x/e', {}), 's', [[big]], 40, 20);
  compressedCache.put(req('/x/f', {}), 's', [[big]], 40, 20);
  assert.ok(compressedCache.size <= 100);
  assert.ok(compressedCache.get(req('/x/a', {}), 's'), 'recently used kept');
  assert.equal(compressedCache.get(req('/x/b', {}), 's'), undefined, 'least recently used evicted');
  // An entry over a quarter of the budget is not kept at all.
  compressedCache.put(req('/x/huge', {}), 's', [[Buffer.alloc(30)]], 60, 30);
  assert.equal(compressedCache.get(req('/x/huge', {}), 's'), undefined);
  compressedCache.setLimit(0);
  assert.equal(compressedCache.size, 0);
  compressedCache.put(req('/x/g', {}), 's', [[big]], 40, 20);
  assert.equal(compressedCache.get(req('/x/g', {}), 's'), undefined);
});

test('only a whole static file with its EOS is cacheable', () => {
  const r = req('/x/a.html', { size: 10 });
  assert.equal(wholeFile(r, [{ kind: 'file', path: '/x/a.html', start: 0, length: 10 }, EOS]), true);
  assert.equal(wholeFile(r, [{ kind: 'file', path: '/x/a.html', start: 2, length: 8 }, EOS]), false);
  assert.equal(wholeFile(r, [{ kind: 'file', path: '/x/a.html', start: 0, length: 10 }]), false);
  assert.equal(wholeFile(r, [{ kind: 'data', data: Buffer.alloc(10) }, EOS]), false);
});

test('PlumeCompressedCacheSize values', () => {
  assert.equal(parseCacheSize('0'), 0);
  assert.equal(parseCacheSize('1024'), 1024);
  assert.equal(parseCacheSize('16M'), 16 * 1024 * 1024);
  assert.equal(parseCacheSize('2k'), 2048);
  assert.equal(parseCacheSize('1G'), 1024 ** 3);
  assert.equal(parseCacheSize('-1'), undefined);
  assert.equal(parseCacheSize('12X'), undefined);
});
