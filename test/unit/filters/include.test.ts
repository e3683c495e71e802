// mod_include's reading and 2.2 expression grammar: the scanner gives the same elements
// wherever the body is cut into pieces, and neither it nor the legacy expression parser ever
// throws on arbitrary input (bounded fuzz). Behaviour against Apache is pinned by the
// conformance cases include/* and Apache's own t/modules/include.t.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SsiScanner, type SsiEvent } from '../../../src/modules/filters/mod_include/scanner.js';
import { evalLegacy, type LegacyEnv } from '../../../src/modules/filters/mod_include/legacy-expr.js';
import { decodeHtml, escapeUrlencoded, unescapeUrl, base64Decode } from '../../../src/modules/filters/mod_include/text.js';
import { secureRelative } from '../../../src/modules/filters/mod_include/elements.js';

/** Events with adjacent text joined (how text is cut depends on the pieces). */
function norm(events: SsiEvent[]): string[] {
  const out: string[] = [];
  let text = '';
  for (const e of events) {
    if (e.k === 'text') { text += e.data.toString('latin1'); continue; }
    if (text !== '') { out.push('T:' + text); text = ''; }
    out.push(`E:${e.name}:${e.error}:${JSON.stringify(e.args)}`);
  }
  if (text !== '') out.push('T:' + text);
  return out;
}

function scan(doc: string, cuts: number[], start = '<!--#', end = '-->'): { events: string[]; unfinished: boolean } {
  const s = new SsiScanner(start, end, '/doc');
  const all: SsiEvent[] = [];
  let at = 0;
  for (const c of [...cuts, doc.length]) {
    all.push(...s.feed(Buffer.from(doc.slice(at, c), 'latin1')));
    at = c;
  }
  const fin = s.finish();
  all.push(...fin.events);
  return { events: norm(all), unfinished: fin.unfinished };
}

const DOC = 'a<!--#echo var="X" -->b<!--#printenv-->c<!--#set var=\'q\' value="a\\"b" -->d<!-- no --><!--#if expr="$a = /x/" -->e<!--#echo var=x-->y -->f<!--';

test('elements are read the same wherever the body is cut', () => {
  const whole = scan(DOC, []);
  assert.deepEqual(whole.events.slice(0, 3), ['T:a', 'E:echo:false:[{"name":"var","value":"X"}]', 'T:b']);
  assert.ok(whole.events.includes('E:set:false:[{"name":"var","value":"q"},{"name":"value","value":"a\\"b"}]'));
  // An unquoted value runs to white space, past the end sequence.
  assert.ok(whole.events.includes('E:echo:false:[{"name":"var","value":"x-->y"}]'));
  // A lone "<!--" at the end is text.
  assert.equal(whole.events[whole.events.length - 1], 'T:f<!--');
  for (let i = 1; i < DOC.length; i++) {
    assert.deepEqual(scan(DOC, [i]).events, whole.events, `cut at ${i}`);
  }
  const bytes = Array.from({ length: DOC.length - 1 }, (_, i) => i + 1);
  assert.deepEqual(scan(DOC, bytes).events, whole.events, 'byte by byte');
});

test('reading errors: missing names, an element left open at the end', () => {
  const r = scan('<!--# echo --><!--#echo "x" --><!--#echo =x --><!--#echo var="a"', []);
  assert.match(r.events[0]!, /^E::true:/);
  assert.match(r.events[1]!, /^E:echo:true:/);
  assert.match(r.events[2]!, /^E:echo:true:/);
  assert.equal(r.unfinished, true);
});

test('start and end sequences of other shapes', () => {
  const r = scan('x--->echo var="A" --->y', [], '--->', '--->');
  assert.deepEqual(r.events, ['T:x', 'E:echo:false:[{"name":"var","value":"A"}]', 'T:y']);
  const p = scan('----->echo var="A" --->', [2], '--->', '--->');
  assert.deepEqual(p.events, ['T:--', 'E:echo:false:[{"name":"var","value":"A"}]']);
});

function env(vars: Record<string, string>): LegacyEnv & { errors: string[] } {
  const errors: string[] = [];
  return {
    errors,
    expand: (s) => s.replace(/\$\{?([A-Za-z0-9_]+)\}?/g, (_m, n: string) => vars[n] ?? ''),
    regex: (subject, pattern) => (new RegExp(pattern).test(subject) ? 1 : 0),
    access: () => true,
    error: (m) => { errors.push(m); },
  };
}

test('the 2.2 expression grammar', async () => {
  const e = env({ x: 'hello world', e: '' });
  assert.equal(await evalLegacy('$x = /hel+o/', '/f', e), true);
  assert.equal(await evalLegacy('$x != /nope/ && !$e', '/f', e), true);
  assert.equal(await evalLegacy("'a b' < b", '/f', e), true);
  assert.equal(await evalLegacy('a b c = "a b c"', '/f', e), false);
  assert.equal(await evalLegacy("a b c = 'a b c'", '/f', e), true);
  assert.equal(await evalLegacy('(a = b) || (c = c)', '/f', e), true);
  assert.equal(await evalLegacy('-A /x', '/f', e), true);
  assert.equal(await evalLegacy('= foo', '/f', e), undefined);
  assert.equal(await evalLegacy('(a', '/f', e), undefined);
  assert.equal(await evalLegacy('a )', '/f', e), undefined);
  assert.equal(await evalLegacy('/x/', '/f', e), undefined);
  assert.deepEqual(e.errors, [
    'AH03188: Invalid expression "= foo" in file /f',
    'AH03191: Unmatched \'(\' in "(a" in file /f',
    'AH03189: Unmatched \')\' in "a )" in file /f',
    'AH03188: Invalid expression "/x/" in file /f',
  ]);
});

test('fuzz: random and mutated documents and expressions never throw', async () => {
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const alphabet = ['<!--#', '-->', '"', "'", '`', '\\', '=', ' ', 'echo', 'var', 'if', 'expr', '$', '{', '}', '(', ')', '!', '&&', '||', '/', '<', '>', '-A', 'a', '\n', '\u00ff'];
  const make = (k: number): string => Array.from({ length: k }, () => alphabet[rnd(alphabet.length)]).join('');
  for (let i = 0; i < 3000; i++) {
    const doc = make(rnd(40));
    const cuts = [rnd(doc.length + 1)].sort((a, b) => a - b);
    const a = scan(doc, []);
    assert.deepEqual(scan(doc, cuts).events, a.events, JSON.stringify(doc));
    const ex = make(rnd(12));
    const v = await evalLegacy(ex, '/f', env({ a: 'x' }));
    assert.ok(v === true || v === false || v === undefined);
  }
});

test('string helpers: entities, url encodings, base64, secure relative paths', () => {
  assert.equal(decodeHtml('a&amp;b&lt;&#65;&#7;&bogus;&eacute;&'), 'a&b<A&bogus;\u00e9&');
  assert.equal(escapeUrlencoded('a b&c/~'), 'a+b%26c%2f%7e');
  assert.equal(unescapeUrl('%41%2f%zz+'), 'A/%zz+');
  assert.equal(unescapeUrl('%41+b', true), 'A b');
  assert.equal(base64Decode('aGVsbG8=!!'), 'hello');
  assert.equal(secureRelative('a/./b/../c'), 'a/c');
  assert.equal(secureRelative('../x'), undefined);
  assert.equal(secureRelative('/etc/passwd'), undefined);
});
