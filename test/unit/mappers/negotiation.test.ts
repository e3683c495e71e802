// mod_negotiation's parsers: Accept-style header lines (qualities, levels, charsets) and type
// map files (continuation lines, comments, Body:), with a bounded fuzz of both.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { headerLine, atoq, MapReader } from '../../../src/modules/mappers/mod_negotiation.js';

test('atoq reads qualities as httpd does', () => {
  assert.equal(atoq('0.5'), 0.5);
  assert.equal(atoq('.25'), 0.25);
  assert.equal(atoq('1'), 1);
  assert.equal(atoq('0'), 0);
  assert.equal(atoq('0.1234'), 0.123);
  assert.equal(atoq('0.100'), 0.1);
  assert.equal(atoq('x'), 1);
  assert.equal(atoq(''), 1);
});

test('Accept lines: names lower-cased, q, qs, level, charset; text/html defaults to level 2', () => {
  const a = headerLine('Text/HTML;level=3;q=0.7, text/*; q=0.3, image/png;charset="UTF-8" , */*;q=0')!;
  assert.deepEqual(a.map((x) => [x.name, x.quality, x.level, x.charset]), [
    ['text/html', 0.7, 3, ''], ['text/*', 0.3, 0, ''], ['image/png', 1, 0, 'utf-8'], ['*/*', 0, 0, ''],
  ]);
  assert.equal(headerLine('text/html')![0]!.level, 2);
  assert.equal(headerLine(undefined), undefined);
  assert.deepEqual(headerLine('')!, []);
});

test('type map lines: comments skipped, continuation lines joined, separators', () => {
  const rd = new MapReader('# comment\nURI: a\nContent-Type: text/html;\n  qs=0.5\n\nURI: b\n');
  const seen: string[] = [];
  for (;;) {
    const h = rd.header();
    seen.push(`${h.state}:${h.line.trim()}`);
    if (h.state === 'eof') break;
  }
  assert.deepEqual(seen, ['seen:URI: a', 'seen:Content-Type: text/html;qs=0.5', 'sep:', 'seen:URI: b', 'eof:']);
});

test('fuzz: header lines and type maps never throw and always end', () => {
  let seed = 99;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const alphabet = 'ab/*;=,q0.5 \t"\n#:xBody:--';
  for (let i = 0; i < 1000; i++) {
    let s = '';
    const len = rnd(80);
    for (let j = 0; j < len; j++) s += alphabet[rnd(alphabet.length)];
    const recs = headerLine(s)!;
    for (const r of recs) assert.ok(r.quality >= 0 && r.quality <= 1);
    const rd = new MapReader(s);
    let n = 0;
    while (rd.header().state !== 'eof') assert.ok(++n < 1000);
  }
});
