// The WebDAV XML body parser (src/modules/dav/xml.ts), the If: header and Content-Range
// parsers of mod_dav: unit cases and a bounded fuzz run (random and mutated documents
// must parse or throw XmlError, never anything else, and stay within MAX_DEPTH).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { parseXml, XmlError, elemToText, childElems, MAX_DEPTH, type XmlElem } from '../../../src/modules/dav/xml.js';
import { parseIfHeader, contentRangeStart } from '../../../src/modules/dav/mod_dav.js';
import { seededRandom } from '../../fuzz.js';

test('namespaces are numbered in order of first use, prefixes resolved per scope', () => {
  const d = parseXml('<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="http://ex.com/z"><D:set><D:prop><Z:color>red &amp; &#x42;lue</Z:color><Z:size xmlns:Q="urn:q"><Q:a>1</Q:a></Z:size></D:prop></D:set></D:propertyupdate>');
  assert.deepEqual(d.namespaces, ['DAV:', 'http://ex.com/z', 'urn:q']);
  const prop = childElems(childElems(d.root)[0]!)[0]!;
  const [color, size] = childElems(prop) as [XmlElem, XmlElem];
  assert.equal(color.name, 'color');
  assert.deepEqual(color.children, ['red & Blue']);
  assert.equal(elemToText(size, (i) => `ns${i}`), '<ns1:size><ns2:a>1</ns2:a></ns1:size>');
  assert.equal(elemToText(color, (i) => `ns${i}`), '<ns1:color>red &amp; Blue</ns1:color>');
});

test('default namespace, empty elements, CDATA and comments', () => {
  const d = parseXml('<propfind xmlns="DAV:"><!-- c --><prop><getetag/><x xmlns=""/></prop><![CDATA[<raw>]]></propfind>');
  assert.deepEqual(d.namespaces, ['DAV:']);
  const prop = childElems(d.root)[0]!;
  assert.equal(childElems(prop)[1]!.ns, -1);
  assert.ok(d.root.children.includes('<raw>'));
});

test('malformed documents throw XmlError with expat-like codes', () => {
  const bad: [string, number][] = [
    ['<a><b></a>', 7], ['<x:a/>', 27], ['<a/><b/>', 9], ['<a x="1" x="2"/>', 8], ['<a>', 0], ['', 0],
    ['<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>', 4], ['<a>&bogus;</a>', 4], ['<a b=1/>', 4],
  ];
  for (const [doc, code] of bad) {
    assert.throws(() => parseXml(doc), (e: unknown) => e instanceof XmlError && e.code === code, doc);
  }
  assert.throws(() => parseXml('<a>'.repeat(MAX_DEPTH + 1)), XmlError);
});

test('If: header lists, tagged lists and Not', () => {
  assert.deepEqual(parseIfHeader('(<opaquelocktoken:1> ["e"]) (Not <urn:x>)'), [
    { tag: undefined, conds: [{ not: false, kind: 'token', value: 'opaquelocktoken:1' }, { not: false, kind: 'etag', value: '"e"' }] },
    { tag: undefined, conds: [{ not: true, kind: 'token', value: 'urn:x' }] },
  ]);
  assert.equal(parseIfHeader('<http://h/a> (<t>)')![0]!.tag, 'http://h/a');
  assert.equal(parseIfHeader('(<t>'), undefined);
  assert.equal(parseIfHeader('junk'), undefined);
});

test('Content-Range of a PUT', () => {
  assert.equal(contentRangeStart('bytes 1-a/44'), -1);
  assert.equal(contentRangeStart('bytes 5-3/44'), -1);
  assert.equal(contentRangeStart('bytes 0-9/5'), -1);
  assert.equal(contentRangeStart('bytes 2-3/*'), 2);
  assert.equal(contentRangeStart('bytes 0-0/4'), 0);
});

test('fuzz: random and mutated documents parse or throw XmlError (bounded)', () => {
  const rnd = seededRandom(12345);
  const seeds = ['<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>',
    '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:owner><D:href>x</D:href></D:owner></D:lockinfo>'];
  const alphabet = '<>/="\'&;:!?[]-xmlnsD DAV#x41;\n';
  for (let i = 0; i < 3000; i++) {
    let s = seeds[rnd(seeds.length)]!;
    const edits = 1 + rnd(4);
    for (let k = 0; k < edits; k++) {
      const at = rnd(s.length + 1);
      const op = rnd(3);
      if (op === 0) s = s.slice(0, at) + s.slice(at + 1 + rnd(5));
      else if (op === 1) s = s.slice(0, at) + alphabet[rnd(alphabet.length)]! + s.slice(at);
      else s = s.slice(0, at) + s.slice(rnd(s.length));
    }
    try { parseXml(s); } catch (e) { assert.ok(e instanceof XmlError, `${String(e)} for ${JSON.stringify(s)}`); }
  }
});
