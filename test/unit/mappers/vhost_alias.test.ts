// mod_vhost_alias's %N.M interpolation, with a bounded fuzz of formats and names.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { interpolate } from '../../../src/modules/mappers/mod_vhost_alias.js';

test('interpolation as httpd documents it', () => {
  const n = 'www.domain.example.com';
  assert.equal(interpolate(n, '/s/%0', 80), '/s/www.domain.example.com');
  assert.equal(interpolate(n, '/s/%1', 80), '/s/www');
  assert.equal(interpolate(n, '/s/%-1', 80), '/s/com');
  assert.equal(interpolate(n, '/s/%2+', 80), '/s/domain.example.com');
  assert.equal(interpolate(n, '/s/%-2+', 80), '/s/www.domain.example');
  assert.equal(interpolate(n, '/s/%2.1/%2.-1/%2.2+', 80), '/s/d/n/omain');
  assert.equal(interpolate(n, '/s/%9/%1.9', 80), '/s/_/_');
  assert.equal(interpolate('Host.Example', '/s/%0/%p/%%/', 8080), '/s/host.example/8080/%');
});

test('fuzz: any valid-looking format over any name ends without throwing', () => {
  let seed = 7;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const parts = ['%0', '%1', '%-1', '%2+', '%3.1', '%1.-2+', '%p', '%%', '/', 'x'];
  for (let i = 0; i < 500; i++) {
    let map = '/';
    for (let j = rnd(6); j > 0; j--) map += parts[rnd(parts.length)];
    let name = '';
    for (let j = rnd(30); j > 0; j--) name += 'aB.'[rnd(3)];
    const out = interpolate(name, map, 80);
    // Names are lower-cased, the result bounded by the format and the name.
    assert.equal(out, out.toLowerCase());
    assert.ok(out.length <= map.length * (name.length + 6) + 1);
  }
});
