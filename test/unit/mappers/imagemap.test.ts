// mod_imagemap's map-file reader: fields as httpd splits them, vertices as its sscanf loop
// reads them, and a bounded fuzz (map files are written by site authors, coordinates come in
// the query string).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomString, seededRandom } from '../../fuzz.js';
import { parseMap, vertices } from '../../../src/modules/mappers/mod_imagemap.js';

test('map lines: blank, comment, one-field lines and entries', () => {
  const lines = parseMap('# c\n\n  rect  a.html "T" 0,0 5,5  \nlonely\n');
  assert.deepEqual(lines[0], { kind: 'comment', text: ' c' });
  assert.deepEqual(lines[1], { kind: 'blank' });
  assert.deepEqual(lines[2], { kind: 'entry', directive: 'rect', value: 'a.html', rest: '"T" 0,0 5,5' });
  assert.deepEqual(lines[3], { kind: 'short', line: 4 });
});

test('vertices: comma or space separated pairs', () => {
  assert.deepEqual(vertices(' 0,0 10,10').pts, [[0, 0], [10, 10]]);
  // httpd's scan stops where its pointer lands on a comma after the second number.
  assert.deepEqual(vertices('1 2, 3 4').pts, [[1, 2]]);
  assert.deepEqual(vertices('1,2 3,4').pts, [[1, 2], [3, 4]]);
  assert.deepEqual(vertices('x').pts, []);
});

test('map files and vertex lists of random text never throw (fuzz, bounded)', () => {
  const rnd = seededRandom(99);
  const alphabet = 'rectpoly 0129,.-e"#\n\\\t';
  for (let i = 0; i < 3000; i++) {
    const s = randomString(rnd, alphabet, 79);
    parseMap(s);
    assert.ok(vertices(s).pts.length <= 100);
  }
});
