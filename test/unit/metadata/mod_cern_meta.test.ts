// mod_cern_meta's meta-file reader (scan_meta_file); the module against Apache: conformance
// modules/cern-meta.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { parseMetaFile } from '../../../src/modules/metadata/mod_cern_meta.js';
import { seededRandom, randomString } from '../../fuzz.js';

test('parseMetaFile: headers to the end, the special names, the last of a name, CRLF or LF', () => {
  const m = parseMetaFile('X-A: one\r\nx-a:   two\nContent-Type:  Text/HTML; Charset=UTF-8 \t\nStatus: 410 Gone Away\nX-B: b');
  assert.deepEqual(m, { headers: [['x-a', 'two'], ['X-B', 'b']], contentType: 'text/html; Charset=UTF-8', status: 410, statusLine: '410 Gone Away' });
});

test('parseMetaFile: at an empty line only Content-type and Status count (httpd returns before adding the rest)', () => {
  const m = parseMetaFile('X-A: one\nContent-type: Text/Plain\n\nX-After: no\n');
  assert.deepEqual(m, { headers: [], contentType: 'text/plain', status: undefined, statusLine: undefined });
});

test('parseMetaFile: a line without a colon is malformed; a Status without a number keeps only its line', () => {
  assert.equal(parseMetaFile('X-A: one\nno colon here\n'), null);
  assert.deepEqual(parseMetaFile('Status: gone\n'), { headers: [], contentType: undefined, status: undefined, statusLine: 'gone' });
  assert.deepEqual(parseMetaFile(''), { headers: [], contentType: undefined, status: undefined, statusLine: undefined });
});

test('parseMetaFile fuzz: any text gives null or headers without line breaks, never an exception', () => {
  const rnd = seededRandom(0xce7);
  for (let i = 0; i < 20000; i++) {
    const text = randomString(rnd, 'ab: \t\r\n;Content-type Status 0123456789\x00\xff', 80);
    const m = parseMetaFile(text);
    if (m === null) continue;
    for (const [k, v] of m.headers) {
      assert.ok(!k.includes('\n') && !v.includes('\n'), JSON.stringify(text));
      assert.ok(!k.includes(':'), JSON.stringify(text));
    }
    if (m.status !== undefined) assert.ok(Number.isInteger(m.status), JSON.stringify(text));
  }
});
