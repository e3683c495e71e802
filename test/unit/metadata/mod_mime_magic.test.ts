// mod_mime_magic's magic-file parser (apprentice/parse) and matcher (softmagic, ascmagic,
// magic_rsl_to_request); the module against Apache: conformance modules/mime-magic-*.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  parseMagicFile, parseMagicLine, strtol, type MagicEntry, type MagicMessage,
  T_BELONG, T_BESHORT, T_BYTE, T_STRING, FLAG_INDIR, FLAG_UNSIGNED,
} from '../../../src/modules/metadata/mod_mime_magic/parse.js';
import { softmagic, ascmagic, rslToType, isTar, formatDesc, type MagicOutput } from '../../../src/modules/metadata/mod_mime_magic/match.js';
import { seededRandom } from '../../fuzz.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.resolve(here, '../../../../test/fixtures/mime-magic/small.magic');
const DEBIAN = '/etc/apache2/magic';

const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');
const line = (s: string): { entry: MagicEntry; ok: boolean; messages: MagicMessage[] } => {
  const messages: MagicMessage[] = [];
  return { ...parseMagicLine(bytes(s), 1, messages), messages };
};
/** The buffer magic_process hands on: the head, then a NUL. */
const data = (s: string | Buffer): Buffer => Buffer.concat([typeof s === 'string' ? bytes(s) : s, Buffer.from([0])]);
const look = (entries: readonly MagicEntry[], content: string | Buffer): { type: string; encoding: string | undefined } | null => {
  const out: MagicOutput = { frags: [], logs: [] };
  const buf = data(content);
  if (!softmagic(entries, buf, out) && !ascmagic(buf, out)) return null;
  return rslToType(out.frags);
};
const pad = (s: string): string => s + ' '.repeat(80);

test('strtol: base 0 as glibc reads it (hex, octal, sign, saturation, no digits)', () => {
  assert.deepEqual(strtol(bytes('0x1F rest'), 0), { value: 31n, end: 4 });
  assert.deepEqual(strtol(bytes('017'), 0), { value: 15n, end: 3 });
  assert.deepEqual(strtol(bytes('  -12'), 0), { value: -12n, end: 5 });
  assert.deepEqual(strtol(bytes('0x'), 0), { value: 0n, end: 1 });
  assert.deepEqual(strtol(bytes('089'), 0), { value: 0n, end: 1 });
  assert.deepEqual(strtol(bytes('abc'), 0), { value: 0n, end: 0 });
  assert.equal(strtol(bytes('99999999999999999999999'), 0).value, (1n << 63n) - 1n);
});

test('parseMagicLine: offset, type, mask, relation, value, description', () => {
  const a = line('0\tbeshort&0xfffe\t=0xfffa\t\taudio/mpeg').entry;
  assert.equal(a.type, T_BESHORT);
  assert.equal(a.mask, 0xfffffffffffffffen); // sign-extended as a short
  assert.equal(a.reln, '=');
  assert.equal(a.value, 0xfffffffffffffffan);
  assert.equal(a.desc, 'audio/mpeg');
  const b = line('>>(4.s-2)\tubyte\t>0x7f\ttext/x-high').entry;
  assert.equal(b.contLevel, 2);
  assert.equal(b.flag, FLAG_INDIR | FLAG_UNSIGNED);
  assert.equal(b.offset, 4);
  assert.equal(b.inOffset, -2n);
  assert.equal(b.type, T_BYTE);
  assert.equal(b.reln, '>');
  assert.equal(b.value, 0x7fn);
  const c = line('0\tstring\t\\x41\\102C\\ D\\n\tapplication/x-escapes').entry;
  assert.equal(c.type, T_STRING);
  assert.deepEqual([...c.valueBytes.subarray(0, c.vallen)], [...bytes('ABC D\n')]);
  const d = line('12\tbelong\tx\t\\bsuffix').entry;
  assert.equal(d.reln, 'x');
  assert.equal(d.nospflag, true);
  assert.equal(d.desc, 'suffix');
  assert.equal(d.type, T_BELONG);
  // "x" at the end of a line is not the any-value relation: it is the value 0.
  const e = line('0\tbyte\tx').entry;
  assert.equal(e.reln, '=');
  assert.equal(e.value, 0n);
  // string/c: "/c" is the value, the rest the description (httpd's old parser).
  const f = line('21\tstring/c\t\\!SCREAM!\taudio/x-mod').entry;
  assert.deepEqual([...f.valueBytes.subarray(0, f.vallen)], [...bytes('/c')]);
  assert.equal(f.desc, '\\!SCREAM!\taudio/x-mod');
  // A description keeps 49 characters.
  assert.equal(line(`0\tstring\tA\t${'d'.repeat(80)}`).entry.desc.length, 49);
});

test('parseMagicLine: the messages httpd logs for bad lines', () => {
  assert.deepEqual(line('0\tstrang\tfoo').messages.map((m) => m.text), ['AH01524: mod_mime_magic: type strang\tfoo invalid']);
  assert.equal(line('0\tstrang\tfoo').ok, false);
  assert.deepEqual(line('abc\tbyte\t1').messages.map((m) => m.text), ['AH01521: mod_mime_magic: offset abc\tbyte\t1 invalid', 'AH01524: mod_mime_magic: type abc\tbyte\t1 invalid']);
  assert.deepEqual(line('>(4.q+2)\tbyte\t1\tx/y').messages.map((m) => m.text), ['AH01522: mod_mime_magic: indirect offset type q invalid']);
  assert.deepEqual(line('>(4.l+2\tbyte\t1\tx/y').messages.map((m) => m.text), ["AH01523: mod_mime_magic: missing ')' in indirect offset"]);
  const long = line(`0\tstring\t${'0123456789'.repeat(7)}\ttext/long`);
  assert.equal(long.ok, true);
  assert.deepEqual(long.messages.map((m) => m.text), [`AH01526: mod_mime_magic: string too long: ${'0123456789'.repeat(7)}\ttext/long`]);
  assert.equal(long.entry.vallen, 63);
});

test('parseMagicFile: comments, blank lines, white space; a bad line stays in the list with type 0', () => {
  const p = parseMagicFile(bytes('# c\n\n   \t\n  0 string A a/b  \r\n0 strang B\n>1 byte 2 c/d\n'));
  assert.equal(p.entries.length, 3);
  assert.equal(p.errors, 1);
  assert.deepEqual(p.entries.map((e) => [e.lineno, e.type, e.desc]), [[4, T_STRING, 'a/b'], [5, 0, ''], [6, T_BYTE, 'c/d']]);
  const out: MagicOutput = { frags: [], logs: [] };
  assert.equal(softmagic(p.entries, data(pad('Z')), out), false);
  assert.deepEqual(out.logs, ['AH01538: mod_mime_magic: invalid type 0 in mconvert().']);
});

test('the fixture magic file: every kind of test', () => {
  const p = parseMagicFile(fs.readFileSync(FIXTURE));
  assert.equal(p.errors, 0);
  assert.deepEqual(p.messages, []);
  const e = p.entries;
  assert.deepEqual(look(e, pad('PLUME1')), { type: 'application/x-plume-one', encoding: undefined });
  assert.deepEqual(look(e, pad('PLUMEZ')), { type: 'application/x-Plume-Z\t', encoding: 'x-plume-enc' });
  assert.deepEqual(look(e, pad('MULTI 12')), { type: 'text/x-level-one ', encoding: 'x-second' });
  assert.deepEqual(look(e, pad('MULTI 3')), { type: 'text/x-three', encoding: undefined });
  assert.equal(look(e, pad('MULTI 9')), null);
  assert.deepEqual(look(e, pad('PLUME\x99')), { type: 'application/x-masked', encoding: undefined });
  assert.deepEqual(look(e, pad('LXXX')), { type: 'application/x-lelong', encoding: undefined });
  assert.equal(look(e, pad('NOSLASH')), null);
  // rsl_strdup copies one character past each field: the space after the type.
  assert.deepEqual(look(e, pad('TWOWORD')), { type: 'text/x-two ', encoding: 'x-enc ' });
  assert.deepEqual(look(e, pad('\xca\xfe\xba\xbe')), { type: 'application/x-cafe', encoding: undefined });
  assert.deepEqual(look(e, pad('\xfe')), { type: 'application/x-ubyte', encoding: undefined });
  assert.deepEqual(look(e, pad('\x80')), { type: 'application/x-negative-byte', encoding: undefined });
  assert.deepEqual(look(e, pad('ABC D')), { type: 'application/x-escapes', encoding: undefined });
  assert.deepEqual(look(e, pad('TOPanything goes\nsecond')), { type: 'text/x-any-anything ', encoding: 'goes' });
  assert.deepEqual(look(e, pad('VER\x07')), { type: 'text/x-version-7', encoding: undefined });
  // The indirect offset is the byte at 4 ('.', 46) plus 2: past the data.
  assert.equal(look(e, pad('IND\x0a........HERE')), null);
  const out: MagicOutput = { frags: [], logs: [] };
  assert.equal(softmagic(e, data(pad('nothing')), out), true);
  assert.deepEqual(out, { frags: ['application/x-boink'], logs: ['AH01539: mod_mime_magic: BOINK'] });
  // Fewer than 64 bytes (with the NUL): no test can read its window.
  assert.equal(look(e, 'PLUME1 short'), null);
});

test('indirect offsets, signed and unsigned comparisons, & and ^', () => {
  const p = parseMagicFile(bytes([
    '0\tstring\tIND',
    '>(4.b+2)\tstring\tHERE\tapplication/x-indirect',
    '0\tbyte\t&0x03\tapplication/x-bits',
    '0\tbyte\t^0x40\tapplication/x-not-bit',
    '0\tbelong\t<0\tapplication/x-negative-long',
  ].join('\n')));
  assert.deepEqual(look(p.entries, pad('IND.\x08.....HERE')), { type: 'application/x-indirect', encoding: undefined });
  assert.deepEqual(look(p.entries, pad('\x07')), { type: 'application/x-bits', encoding: undefined });
  assert.deepEqual(look(p.entries, pad('\x01')), { type: 'application/x-not-bit', encoding: undefined });
  // The byte at 4 is a newline, which the string test's window turned into a NUL: offset 2.
  assert.equal(look(p.entries, pad('IND.\n.....HERE')), null);
  const q = parseMagicFile(bytes('0\tbelong\t<0\tapplication/x-negative-long'));
  assert.deepEqual(look(q.entries, pad('\x80\x00\x00\x00')), { type: 'application/x-negative-long', encoding: undefined });
});

test("Debian's magic file parses without errors and types common formats", { skip: !fs.existsSync(DEBIAN) }, () => {
  const p = parseMagicFile(fs.readFileSync(DEBIAN));
  assert.equal(p.errors, 0);
  assert.ok(p.entries.length > 300);
  const e = p.entries;
  assert.equal(look(e, Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(80)]))?.type, 'image/png');
  assert.equal(look(e, pad('GIF89a'))?.type, 'image/gif');
  assert.equal(look(e, Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(80, 0x41)]))?.type, 'image/jpeg');
  assert.equal(look(e, pad('%PDF-1.4'))?.type, 'application/pdf');
  assert.equal(look(e, pad('#!/bin/sh\necho'))?.type, 'application/x-shellscript');
  assert.equal(look(e, pad('<html>\n<body>'))?.type, 'text/html');
  assert.equal(look(e, pad('PK\x03\x04'))?.type, 'application/x-zip');
  assert.equal(look(e, pad('lorem ipsum dolor')), null);
});

test('ascmagic: troff, Fortran, keywords (whole tokens, first 1024 bytes, up to a NUL), escapes', () => {
  const run = (s: string): string[] | null => {
    const out: MagicOutput = { frags: [], logs: [] };
    return ascmagic(data(s), out) ? out.frags : null;
  };
  assert.deepEqual(run('.TH X 1\n'), ['application/x-troff']);
  assert.deepEqual(run('C     FORTRAN\n'), ['text/plain']);
  assert.deepEqual(run('x <title>t</title>'), null);
  assert.deepEqual(run('x\n<title>\nt'), ['text/html']);
  assert.deepEqual(run('<!DOCTYPE HTML>'), null);
  assert.deepEqual(run('Received: x'), ['message/rfc822']);
  assert.deepEqual(run('Path: x'), ['message/news']);
  assert.deepEqual(run('\x1b[1m the'), ['text/plain', ' (with escape sequences)']);
  assert.deepEqual(run('x\x00 the'), null);
  assert.deepEqual(run(`${'x'.repeat(1030)} the`), null);
  // With the escape note, httpd's type and encoding are "text/plain " and "(with ".
  assert.deepEqual(rslToType(['text/plain', ' (with escape sequences)']), { type: 'text/plain ', encoding: '(with ' });
});

test('negative offsets never match (DIFFERENCE: httpd reads before its buffer for -64..-1)', () => {
  const p = parseMagicFile(bytes('-1\tbyte\tx\ta/neg\n0\tstring\tN\n>(1.b-100)\tbyte\tx\ta/ind-neg\n'));
  assert.equal(p.errors, 0);
  assert.equal(look(p.entries, pad('A')), null);
  assert.equal(look(p.entries, pad('N\x05')), null);
});

test('isTar: a ustar header by its checksum', () => {
  const h = Buffer.alloc(512);
  h.write('file.txt', 0, 'latin1');
  h.write('ustar  \0', 257, 'latin1');
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'latin1');
  assert.equal(isTar(h), 2);
  h.write('xxxxx', 257, 'latin1');
  assert.equal(isTar(h), 0);
  assert.equal(isTar(Buffer.alloc(100)), 0);
});

test('rslToType: leading space, no slash, type only, type and encoding', () => {
  assert.equal(rslToType([]), null);
  assert.equal(rslToType(['']), null);
  assert.equal(rslToType(['not a type']), null);
  assert.equal(rslToType(['text']), null);
  assert.deepEqual(rslToType(['  ', 'image/png']), { type: 'image/png', encoding: undefined });
  assert.deepEqual(rslToType(['text/', 'plain']), { type: 'text/plain', encoding: undefined });
  assert.deepEqual(rslToType(['a/b', ' ', 'X-Gzip']), { type: 'a/b ', encoding: 'x-gzip' });
});

test('formatDesc: the printf conversions a description may hold', () => {
  assert.equal(formatDesc('text/x-%s', 'abc'), 'text/x-abc');
  assert.equal(formatDesc('v%d.%%', 7n), 'v7.%');
  assert.equal(formatDesc('%lu', 0xffffffffffffffffn), '18446744073709551615');
  assert.equal(formatDesc('%ld', 0xffffffffffffffffn), '-1');
  assert.equal(formatDesc('%x', 255n), 'ff');
  assert.equal(formatDesc('%s', 'x'.repeat(300)).length, 255);
});

test('parser and matcher fuzz: random magic lines and random contents never throw', () => {
  const rnd = seededRandom(0x3a61c);
  const pieces = ['0', '>', '>>', '(', ')', '.b', '.s', '.l', '.q', '+', '-', '4', '0x', 'ff', '\t', ' ', 'u', 'byte', 'short', 'long', 'string',
    'date', 'beshort', 'belong', 'bedate', 'leshort', 'lelong', 'ledate', '&', '^', '=', '<', '>', '!', 'x', '\\', '\\x4', '\\07', '\\n', '\\b',
    'text/plain', 'a/b', '%s', '%d', '%ld', '%', 'A', '\n', '#', '\0', '\xff', '120', '0x78', '-1', '2147483648', '99999999999999999999'];
  const entries: MagicEntry[] = [];
  for (let i = 0; i < 300; i++) {
    let text = '';
    for (let k = rnd(40); k > 0; k--) text += pieces[rnd(pieces.length)];
    const p = parseMagicFile(bytes(text));
    for (const m of p.messages) assert.match(m.text, /^AH015(2[1-6]): mod_mime_magic: /);
    for (const e of p.entries) {
      assert.ok(e.desc.length <= 49);
      assert.ok(e.vallen >= 0 && e.vallen <= 63);
      assert.ok(Number.isInteger(e.offset));
      entries.push(e);
    }
  }
  for (let i = 0; i < 400; i++) {
    const len = rnd(300);
    const buf = Buffer.alloc(len + 1);
    for (let k = 0; k < len; k++) buf[k] = rnd(4) === 0 ? rnd(256) : 'AIND0\x1f\x8b PLUME\n<html>'.charCodeAt(rnd(18));
    const out: MagicOutput = { frags: [], logs: [] };
    const start = rnd(entries.length);
    if (softmagic(entries.slice(start, start + 60), buf, out) || ascmagic(buf, out)) {
      const r = rslToType(out.frags);
      if (r !== null) {
        assert.ok(r.type.includes('/'));
        assert.ok(r.encoding === undefined || r.encoding === r.encoding.toLowerCase());
      }
    }
    for (const l of out.logs) assert.equal(typeof l, 'string');
  }
});
