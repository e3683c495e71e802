// Turns the listing of tools/gen-html-tables.c (out.txt) into html-tables.ts (written to the current directory).
import fs from 'node:fs';
const lines = fs.readFileSync('out.txt','utf8').split('\n');
let mode=''; const els=[]; const ents=[];
for (const l of lines) {
  if (l==='ELEMENTS'||l==='ENTITIES') { mode=l; continue; }
  if (!l) continue;
  if (mode==='ELEMENTS') {
    const m = /^(\S+) empty=(\d) depr=(\d) endTag=(\d) startTag=(\d) req=(\S*) allowed=(\S*) depr=(\S*)$/.exec(l);
    if (!m) throw new Error(l);
    els.push({name:m[1],empty:+m[2],depr:+m[3],req:m[6]?m[6].split(','):[],allowed:m[7]?m[7].split(','):[]});
  } else { const [n,v]=l.split(' '); ents.push([n,+v]); }
}
// shared attribute groups
const sets = new Map(); let out = '';
const setId = (arr) => { const k = arr.join(' '); if (!sets.has(k)) sets.set(k, sets.size); return sets.get(k); };
const rows = els.map(e => `  ${JSON.stringify(e.name)}: [${e.empty ? 1 : 0}, ${e.depr ? 1 : 0}, A${setId(e.allowed)}, ${e.req.length ? JSON.stringify(e.req.join(' ')) : "''"}],`);
out += '// The HTML 4.01 element and entity tables the HTML parser and mod_proxy_html consult, as\n';
out += "// libxml2 2.9.14 (the library Apache's mod_proxy_html uses) answers them: measured with its\n";
out += '// htmlTagLookup, htmlAttrAllowed and htmlEntityValueLookup (tools/gen-html-tables.c writes the\n';
out += '// listing this file was built from). Facts of the HTML 4.01 DTD; do not edit by hand.\n\n';
for (const [k, i] of sets) out += `const A${i} = ${JSON.stringify(k)};\n`;
out += '\n/** name: [empty, deprecated, allowed attributes (required ones included), required attributes] */\n';
out += 'export const ELEMENT_ROWS: Readonly<Record<string, readonly [0 | 1, 0 | 1, string, string]>> = {\n' + rows.join('\n') + '\n};\n\n';
out += '/** The entities libxml2 knows in HTML, name and code point. */\n';
out += 'export const ENTITY_ROWS = ' + JSON.stringify(ents.map(([n,v])=>n+' '+v).join(' ')) + ';\n';
fs.writeFileSync('html-tables.ts', out);
console.log(sets.size, els.length, ents.length);
