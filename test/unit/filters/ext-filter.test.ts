// mod_ext_filter's ExtFilterDefine parser: the words and errors of httpd's define_filter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDefine, type ExtFilterDef } from '../../../src/modules/filters/mod_ext_filter.js';
import { tokenizeArgv } from '../../../src/lib/apr-strings.js';

const none = new Map<string, ExtFilterDef>();

function def(raw: string): ExtFilterDef {
  const d = parseDefine(raw, none);
  assert.equal(typeof d, 'object', `${raw}: ${String(d)}`);
  return d as ExtFilterDef;
}

test('cmd="..." is split into argv words without a shell; cmd=word is one word', () => {
  assert.deepEqual(def('f cmd="/bin/sed -e \'s/a b/c/g\' x\\ y"').argv, ['/bin/sed', '-e', 's/a b/c/g', 'x y']);
  assert.deepEqual(def('f cmd=/usr/bin/tr').argv, ['/usr/bin/tr']);
  assert.equal(parseDefine('f cmd=/usr/bin/tr a-z', none), "Unexpected parameter: `a-z'");
});

test('the other parameters, case-insensitive names, values as given', () => {
  const d = def('Name MODE=input ftype=21 intype=text/plain outtype=text/x enableenv=A disableenv=B PreservesContentLength cmd=/bin/cat');
  assert.equal(d.name, 'Name');
  assert.equal(d.mode, 'input');
  assert.equal(d.ftype, 21);
  assert.equal(d.intype, 'text/plain');
  assert.equal(d.outtype, 'text/x');
  assert.equal(d.enableEnv, 'A');
  assert.equal(d.disableEnv, 'B');
  assert.equal(d.preservesContentLength, true);
  assert.equal(def('x cmd=/bin/cat').mode, 'output');
});

test("httpd's error texts", () => {
  assert.equal(parseDefine('x mode=sideways', none), "Invalid mode: `sideways'");
  assert.equal(parseDefine('x colour=blue cmd=/bin/cat', none), "Unexpected parameter: `colour=blue cmd=/bin/cat'");
  assert.equal(parseDefine('x cmd="/bin/cat', none), 'Expected cmd= delimiter');
  assert.equal(parseDefine('x PreservesContentLengthy', none), "mangled argument `PreservesContentLengthy'");
  const defined = new Map([['x', def('x cmd=/bin/cat')]]);
  assert.equal(parseDefine('X cmd=/bin/cat', defined), 'ExtFilter X is already defined');
});

test('fuzz: any input gives a definition or an error text, never an exception (bounded)', () => {
  const alphabet = ['x', ' ', '"', "'", '\\', '=', 'cmd=', 'mode=', 'input', 'ftype=', 'preservescontentlength', '\t', 'a'];
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let i = 0; i < 3000; i++) {
    let s = '';
    const len = rnd(12);
    for (let j = 0; j < len; j++) s += alphabet[rnd(alphabet.length)];
    const d = parseDefine(s, none);
    assert.ok(typeof d === 'string' || Array.isArray(d.argv));
    assert.ok(Array.isArray(tokenizeArgv(s)));
  }
});
