// The module catalogue loads a module's code only when it is asked for that module (LoadModule),
// and every module keeps the index its place in the catalogue gives it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { catalogue } from '../../../src/modules/index.js';

const indexJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src/modules/index.js');

test('each module of the catalogue has its place as index, under the symbol it was listed by', () => {
  const all = catalogue.all;
  assert.ok(all.length > 90, `only ${all.length} modules`);
  assert.deepEqual(all.map((m) => m.decl.name), [...catalogue.symbols]);
  all.forEach((m, i) => assert.equal(m.index, i, m.decl.name));
  assert.equal(new Set(catalogue.symbols).size, all.length);
  assert.equal(catalogue.find('heartbeat_module'), all[catalogue.symbols.indexOf('heartbeat_module')]);
  assert.equal(catalogue.find('no_such_module'), undefined);
});

test("a module's code is loaded when the catalogue is asked for it, not before", () => {
  // mod_http2 is what imports node:http2: whether Node has loaded http2 tells whether its code
  // ran. A fresh process, so that nothing else has loaded it.
  const script = `
    const { catalogue } = await import(${JSON.stringify(indexJs)});
    const http2 = () => process.moduleLoadList.includes('NativeModule http2');
    const before = http2();
    const m = catalogue.find('http2_module');
    console.log(JSON.stringify({ before, after: http2(), name: m.decl.name, index: m.index, place: catalogue.symbols.indexOf('http2_module') }));
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as {
    before: boolean; after: boolean; name: string; index: number; place: number;
  };
  assert.deepEqual(out, { before: false, after: true, name: 'http2_module', index: out.place, place: out.place });
});
