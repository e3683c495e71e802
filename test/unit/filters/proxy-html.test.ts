// mod_proxy_html's pieces: the libxml2-compatible HTML push parser (events as libxml2 2.9
// reports them, input in any chunks), the ProxyHTMLURLMap rules, the UTF-8-then-Latin-1
// decoding, and a bounded fuzz run of the parser. The whole filter is pinned against Apache by
// the conformance cases in test/conformance/cases/proxy_html/.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HtmlPushParser, tagLookup, type Attr } from '../../../src/modules/filters/mod_proxy_html/html-parser.js';
import { mapEvent, mapFlags, mapLink, mapText, interpolateVars, M_REGEX, type ActiveMap } from '../../../src/modules/filters/mod_proxy_html/urlmap.js';
import { Utf8ThenLatin1 } from '../../../src/modules/filters/mod_proxy_html/decode.js';
import { parseCharEncoding } from '../../../src/modules/filters/mod_xml2enc.js';
import { seededRandom } from '../../fuzz.js';

/** The document as mod_proxy_html writes it without rules (its pcharacters escaping, empty
 *  elements without an end tag), plus a check that every end event closes an open element. */
function serialise(chunks: readonly string[]): { out: string; nested: boolean } {
  const stack: string[] = [];
  let nested = true;
  let out = '';
  const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
  const p = new HtmlPushParser({
    startElement(name: string, attrs: readonly Attr[] | null) {
      stack.push(name);
      out += '<' + name + (attrs ?? []).map(([n, v]) => (v === null ? ' ' + n : ` ${n}="${esc(v)}"`)).join('') + '>';
    },
    endElement(name: string) {
      // libxml2 drops an element whose start tag never ends without an end event: an end
      // event closes the innermost open element of its name.
      const at = stack.lastIndexOf(name);
      if (at < 0) nested = false; else stack.length = at;
      if (!tagLookup(name)?.empty) out += `</${name}>`;
    },
    characters(t: string) { out += esc(t); },
    comment(t: string) { out += `<!--${t}-->`; },
    cdata(t: string) { out += t; },
  });
  for (const c of chunks) p.push(c);
  p.finish();
  return { out, nested };
}

const html = (doc: string): string => serialise([doc]).out;

test('implied html, head, body and p; names lower-cased; attributes quoted', () => {
  assert.equal(html('fóó\n'), '<html><body><p>fóó\n</p></body></html>');
  assert.equal(html('<TITLE>t</TITLE><P CLASS=a>x'), '<html><head><title>t</title></head><body><p class="a">x</p></body></html>');
  assert.equal(html('<input type=checkbox checked>'), '<html><body><input type="checkbox" checked></body></html>');
});

test('start tags close the elements HTML 4 lets them end; misplaced end tags are ignored', () => {
  assert.equal(html('<p>a<p>b<ul><li>1<li>2</ul>'), '<html><body><p>a</p><p>b</p><ul><li>1</li><li>2</li></ul></body></html>');
  assert.equal(html('<table><tr><td>1<td>2</table>'), '<html><body><table><tr><td>1</td><td>2</td></tr></table></body></html>');
  assert.equal(html('<div>x</span></div>'), '<html><body><div>x</div></body></html>');
  assert.equal(html('<b>1<i>2</b>3</i>'), '<html><body><b>1<i>2</i></b>3</body></html>');
});

test('entities decoded (unknown ones kept), white space around structure dropped', () => {
  assert.equal(html('<p>&copy;&#65;&#x42;&bogus;&amp</p>'), '<html><body><p>©AB&amp;bogus;&amp;amp</p></body></html>');
  assert.equal(html('<html>\n <head>\n <title>t</title>\n </head>\n</html>'), '<html><head><title>t</title></head></html>');
  assert.equal(html('<a href="x?a=1&amp;b=&lt;">l</a>'), '<html><body><a href="x?a=1&amp;b=&lt;">l</a></body></html>');
});

test('script and style are text up to their own end tag; DOCTYPE and processing instructions vanish', () => {
  assert.equal(html('<script>if (a<b) x="</p>";</script>'), '<html><head><script>if (a<b) x="</p>";</script></head></html>');
  assert.equal(html('<!DOCTYPE html><?xml version="1.0"?><p>x</p>'), '<html><body><p>x</p></body></html>');
  assert.equal(html('<p>a<!-- c -->b</p>'), '<html><body><p>a<!-- c -->b</p></body></html>');
});

test('the end of the input as libxml2 counts it in bytes: a last ASCII byte is text unchecked, a last non-ASCII character parses as text', () => {
  // Found by tools/proxy-html-difftest against libxml2.
  assert.equal(html('<ul><li>\x05'), '<html><body><ul><li>\x05</li></ul></body></html>');
  assert.equal(html('<ul><li>x\x05'), '<html><body><ul><li>x</li></ul></body></html>');
  assert.equal(html('<ul><li>\u00e9'), '<html><body><ul><li>\u00e9</li></ul></body></html>');
  assert.equal(html('<ul><li>\ufffe'), '<html><body><ul><li></li></ul></body></html>');
  assert.equal(html('<p>a<'), '<html><body><p>a');
});

test('the same events whatever the chunks the input comes in (but a script end tag cut in two)', () => {
  // libxml2 looks for a script's end tag in what it has: cut inside "</script>" the script
  // runs on to the end of the document, in Apache as here.
  const doc = '<html><head><title>T</title></head><body onload="f()">\n<p>one &amp; two<br><img src=\'x.png\' alt="a > b"><!-- c --></p><table><tr><td>x</table></body></html>';
  const whole = html(doc);
  for (const size of [1, 2, 3, 7, 50]) {
    const parts: string[] = [];
    for (let i = 0; i < doc.length; i += size) parts.push(doc.slice(i, i + size));
    assert.equal(serialise(parts).out, whole, `chunks of ${size}`);
  }
});

test('a <meta> charset is reported once, for the caller to switch the decoding', () => {
  const seen: string[] = [];
  const p = new HtmlPushParser({
    startElement() {}, endElement() {}, characters() {}, comment() {}, cdata() {},
    encoding: (n) => seen.push(n),
  });
  p.push('<meta charset=" iso-8859-2"><meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>x</p>');
  p.finish();
  assert.deepEqual(seen, ['iso-8859-2']);
});

test('element table: empty and deprecated elements and their attributes, as libxml2 has them', () => {
  assert.equal(tagLookup('br')?.empty, true);
  assert.equal(tagLookup('center')?.deprecated, true);
  assert.equal(tagLookup('IMG')?.required.join(), 'src,alt');
  assert.equal(tagLookup('a')?.allowed.has('href'), true);
  assert.equal(tagLookup('a')?.allowed.has('target'), false);
  assert.equal(tagLookup('blink'), undefined);
});

const map = (from: string, to: string, flags?: string): ActiveMap => {
  const f = mapFlags(flags);
  return { flags: f, from, to, re: f & M_REGEX ? new RegExp(from, 's' + (flags?.includes('i') ? 'i' : '')) : undefined };
};

test('links: a plain string at the start, case-blind, first rule wins; R with $n; l lets later rules run', () => {
  assert.equal(mapLink('HTTP://B/x', [map('http://b/', '/f/'), map('/f/', '/no/')]), '/f/x');
  assert.equal(mapLink('/a http://b/', [map('http://b/', '/f/')]), '/a http://b/');
  assert.equal(mapLink('http://b/img/p', [map('^http://b/(img|css)/', '/s/$1/', 'R'), map('/s/', '/no/')]), '/s/img/p');
  assert.equal(mapLink('http://b/a/x', [map('^http://b/a/', '/1/', 'Rl'), map('^/1/(.*)', '/2/$1', 'R')]), '/2/x');
  assert.equal(mapLink('http://b/x', [map('http://b/', '/f/', 'h')]), 'http://b/x');
});

test('events and text: every match; ^ and $ anchor plain strings; L stops after a matching rule', () => {
  assert.equal(mapEvent("go('http://b/1');go('http://b/2')", [map('http://b/', '/f/')]), "go('/f/1');go('/f/2')");
  assert.equal(mapEvent('a;b;', [map(';', '!', '$')]), 'a;b!');
  assert.equal(mapEvent('x y', [map('x', 'X', 'L'), map('y', 'Y')]), 'X y');
  assert.equal(mapText('u=http://b/1 v=http://b/2', [map('http://b/', '/f/')]), 'u=/f/1 v=/f/2');
  assert.equal(mapText('var a; var b;', [map('var', 'VAR', '^')]), 'VAR a; var b;');
  assert.equal(mapText('a http://b/c', [map('http://b/', '/f/', 'c')]), 'a http://b/c');
  assert.equal(mapText('x1 x22', [map('x(\\d+)', 'y$1', 'R')]), 'y1 y22');
});

test('${VAR} and ${VAR|default} from the environment', () => {
  const env = new Map([['A', '/a'], ['B', '${A}/b']]);
  assert.equal(interpolateVars('${A}/x/${C|def}/${D}', env), '/a/x/def/');
  assert.equal(interpolateVars('${B}', env), '/a/b');
});

test('UTF-8 until the first byte that is not, Latin-1 from there', () => {
  const d = new Utf8ThenLatin1();
  assert.equal(d.write(Buffer.from([0x61, 0xc3])), 'a');
  assert.equal(d.write(Buffer.from([0xa9, 0x20, 0xe9, 0xc3, 0xa9])), 'é éÃ©');
  assert.equal(d.codec, 'latin1');
});

test('libxml2 charset names, with xml2EncAlias', () => {
  assert.equal(parseCharEncoding('iso-latin-1'), 'iso-8859-1');
  assert.equal(parseCharEncoding('UTF8'), 'utf-8');
  assert.equal(parseCharEncoding('windows-1252'), 'error');
  assert.equal(parseCharEncoding(''), 'none');
});

test('fuzz: random and mutated markup parses in any chunking without throwing, events nested', () => {
  const rnd = seededRandom(4242);
  const seeds = [
    '<html><head><title>t</title></head><body><p class=a>x &amp; y<br><a href="u">l</a></p></body></html>',
    '<table><tr><td>1<td>2</table><script>a<b</script><style>p{}</style><!-- c --><?pi x?>',
    '<!DOCTYPE html><ul><li>a<li>b</ul><select><option>1<option>2</select>&#169;&copy;&bogus;',
  ];
  const alphabet = '<>/="\'&;#!?-abcdhilprstxyz \n\t\0é&#x41;<p><b></i><!--';
  for (let i = 0; i < 2000; i++) {
    let s = seeds[rnd(seeds.length)]!;
    for (let k = 1 + rnd(6); k > 0; k--) {
      const at = rnd(s.length + 1);
      const op = rnd(3);
      const piece = alphabet.slice(rnd(alphabet.length), rnd(alphabet.length) + 1 + rnd(6));
      if (op === 0) s = s.slice(0, at) + piece + s.slice(at);
      else if (op === 1) s = s.slice(0, at) + s.slice(at + 1 + rnd(8));
      else s = s.slice(0, at) + piece + s.slice(at + piece.length);
    }
    const whole = serialise([s]);
    // A lone '<' or '&' left at the very end stops libxml2 before it closes what is open.
    if (!/[<&]$/.test(s)) assert.ok(whole.nested, `events not nested for ${JSON.stringify(s)}`);
    const cut = 1 + rnd(Math.max(1, s.length));
    const split = serialise([s.slice(0, cut), s.slice(cut)]);
    assert.equal(typeof split.out, 'string');
  }
});

test('empty matches: a rule matching the empty string steps past it, an empty plain pattern is skipped', () => {
  // DIFFERENCE: httpd loops for ever on both.
  assert.equal(mapText('ab', [map('x*', '-', 'R')]), '-a-b-');
  assert.equal(mapEvent('ab', [map('', '-')]), 'ab');
  assert.equal(mapText('ab', [map('', '-')]), 'ab');
});

test('bad regex: a ProxyHTMLURLMap R pattern that does not compile is refused at startup', async () => {
  const { spawnSync } = await import('node:child_process');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-proxyhtml-'));
  try {
    fs.writeFileSync(path.join(dir, 'httpd.conf'), [
      'LoadModule mpm_event_module x.so', 'LoadModule unixd_module x.so', 'LoadModule authz_core_module x.so',
      'LoadModule xml2enc_module x.so', 'LoadModule proxy_html_module x.so', 'ServerName localhost', 'Listen 127.0.0.1:1',
      'ProxyHTMLURLMap "^(unclosed" /x/ R', '',
    ].join('\n'));
    const res = spawnSync(process.execPath, [path.resolve('bin/plume'), '-t', '-d', dir, '-f', path.join(dir, 'httpd.conf')], { encoding: 'utf8' });
    assert.notEqual(res.status, 0);
    assert.match(res.stderr, /Syntax error on line 8 of .*httpd\.conf:\nProxyHTMLURLMap: regular expression could not be compiled: \^\(unclosed/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
