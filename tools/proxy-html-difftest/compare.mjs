// Differential test of plume's HTML parser (mod_proxy_html) against libxml2: random documents made of
// HTML tokens, serialised by both; prints the first differences. After npx tsc and building
// libxml2-sax.c: node tools/proxy-html-difftest/compare.mjs SEED COUNT
import { execFileSync } from 'node:child_process';
import { HtmlPushParser, tagLookup } from '../../dist/src/modules/filters/mod_proxy_html/html-parser.js';
import { Utf8ThenLatin1 } from '../../dist/src/modules/filters/mod_proxy_html/decode.js';
const esc = (s) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
function mine(doc) {
  const b = Buffer.from(doc, 'utf8');
  if (b.length < 4) return doc;
  let out = '';
  const p = new HtmlPushParser({
    startElement(n, a) { out += '<' + n + (a ?? []).map(([k, v]) => v === null ? ' ' + k : ` ${k}="${esc(v)}"`).join('') + '>'; },
    endElement(n) { if (!tagLookup(n)?.empty) out += `</${n}>`; },
    characters(t) { out += esc(t); }, comment(t) { out += `<!--${t}-->`; }, cdata(t) { out += t; },
  });
  const dec = new Utf8ThenLatin1(); p.push(dec.write(b.subarray(0, 4))); p.push(dec.write(b.subarray(4))); const r = dec.end(); if (r) p.push(r); p.finish();
  return out;
}
let s = Number(process.argv[2] ?? 1);
const rnd = (n) => { s = (s * 1103515245 + 12345) & 0x7fffffff; return s % n; };
const toks = ["<a href=\"x&amp;y\">", "<td nowrap>", "<input value='a\"b'>", "<img alt=\"a>b\">", "<p class=\"unterminated>", "<!--unterminated", "<script>if(a</b)</script>", "</script >", "</SCRIPT>", "<STYLE>x</style", "<!doctype html public \"x\" \"y\">", "<?xml version=\"1.0\"?>", "\ufeff", "\ufffe", "&#0;", "&#x110000;", "&#xD800;", "&nbsp", "&NotAnEntity;", "&lt", "&#65", "<isindex>", "<basefont>", "<embed>", "<col>", "<colgroup>", "<caption>", "<thead>", "<tbody>", "<tfoot>", "<th>", "<optgroup>", "<legend>", "<fieldset>", "<address>", "<menu>", "<dir>", "<pre>", "<xmp>", "<listing>", "<hr>", "<area>", "<map>", "<font>", "<small>", "<big>", "<tt>", "<u>", "<s>", "<strike>", "<noscript>", "<iframe>", "<applet>", "<label>", "<button>", "<q>", "<blockquote>", "<ins>", "<del>", "<html>", "</html>", "<head>", "</head>", "<body>", "</body>", "<p>", "</p>", "<div>", "</div>", "<table>", "<tr>", "<td>", "</td>", "</tr>", "</table>", "<li>", "<ul>", "</ul>", "<b>", "</b>", "<i>", "</i>", "<a href=x>", "</a>", "<br>", "<br/>", "<img src=\"y\">", "<title>", "</title>", "<script>", "</script>", "<style>", "</style>", "<meta x=1>", "<link>", "<form>", "</form>", "<select>", "<option>", "<frameset>", "<frame>", "<noframes>", "<foo>", "</foo>", "<!-- c -->", "<!DOCTYPE html>", "<?pi?>", "text", " ", "\n", "  \n ", "&amp;", "&copy;", "&#65;", "&x;", "<", "&", ">", "\"", "'", "</", "<!", "<?", "<h1>", "</h1>", "<dl>", "<dt>", "<dd>", "<center>", "<span>", "</span>", "<textarea>", "</textarea>", "<object>", "<param>", "<base>", "\u00e9", "\u0000", "\r", "\u0005", "<a b=\"1\" b=2 c>", "<p/>", "<x:y>", "<_a>", "<1>", "</ >", "< p>", "<meta charset=utf-8>"];
const docs = [];
for (let i = 0; i < Number(process.argv[3] ?? 3000); i++) { let d = ''; for (let k = rnd(40); k > 0; k--) d += toks[rnd(toks.length)]; docs.push(d); }
const theirs = execFileSync(process.env.LIBXML2_SAX ?? '/tmp/libxml2-sax', { input: docs.join('\x01'), maxBuffer: 1 << 28 }).toString('utf8').split('\x01');
let bad = 0;
for (let i = 0; i < docs.length; i++) { const m = mine(docs[i]); if (m !== theirs[i]) { bad++; if (bad <= 4) console.log('DOC ', JSON.stringify(docs[i]), '\nLIB ', JSON.stringify(theirs[i]), '\nMINE', JSON.stringify(m), '\n'); } }
console.log(`${bad}/${docs.length} differ`);
