// mod_log_forensic's line: the escaping of httpd's T_ESCAPE_FORENSIC and the "+" line's layout
// (the whole module against Apache: conformance case logs/forensic-log).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { forensicEscape, forensicLine } from '../../../src/modules/loggers/mod_log_forensic.js';

test('forensicEscape: the separators, % and every byte outside printable ASCII become %xx', () => {
  assert.equal(forensicEscape('plain text/ok?a=1&b=2'), 'plain text/ok?a=1&b=2');
  assert.equal(forensicEscape('a|b:c%d'), 'a%7cb%3ac%25d');
  assert.equal(forensicEscape('tab\there\x7f\x00'), 'tab%09here%7f%00');
  // Header values arrive as latin1 strings (one char per byte): UTF-8 é is two escapes.
  assert.equal(forensicEscape('\xc3\xa9'), '%c3%a9');
  assert.equal(forensicEscape(''), '');
});

test('forensicLine: +ID, the request line, then Name:value for each header in order', () => {
  assert.equal(
    forensicLine('123:5f0:1', 'GET /a|b HTTP/1.1', [['Host', 'x:80'], ['X-Empty', '']]),
    '+123:5f0:1|GET /a%7cb HTTP/1.1|Host:x%3a80|X-Empty:',
  );
  assert.equal(forensicLine('id', 'GET / HTTP/1.0', []), '+id|GET / HTTP/1.0');
});
