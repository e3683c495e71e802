// mod_autoindex: directive parsing, configuration merging and the small formatting helpers.
// Listings themselves are pinned by the conformance cases modules/autoindex-*, recorded from
// Apache 2.4.71; the values here were checked against the same server.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import autoindex, {
  FANCY_INDEXING, FOLDERS_FIRST, SUPPRESS_SIZE, SUPPRESS_LAST_MOD, NO_OPTIONS, VERSION_SORT,
  mergeDirConfig, strnatcmp, strMatch, fnmatch, type AutoindexDir,
} from '../../../src/modules/generators/mod_autoindex.js';
import { Scope, indexModule, makeCtx } from '../mappers/helpers.js';
import { strfsize } from '../../../src/lib/apr-strings.js';

indexModule(autoindex);

function conf(lines: string[], path?: string): AutoindexDir {
  const { ctx } = makeCtx();
  const s = new Scope<undefined, AutoindexDir>(ctx, autoindex, { path });
  for (const l of lines) assert.equal(s.run(l), undefined, l);
  return s.dir;
}

function err(line: string): string | undefined {
  const { ctx } = makeCtx();
  return new Scope<undefined, AutoindexDir>(ctx, autoindex, {}).run(line);
}

test('strfsize: four characters, as apr_strfsize', () => {
  assert.equal(strfsize(-1), '  - ');
  assert.equal(strfsize(0), '  0 ');
  assert.equal(strfsize(52), ' 52 ');
  assert.equal(strfsize(972), '972 ');
  assert.equal(strfsize(973), '1.0K');
  assert.equal(strfsize(5000), '4.9K');
  assert.equal(strfsize(1100000), '1.0M');
  assert.equal(strfsize(20 * 1024), ' 20K');
  assert.equal(strfsize(9 * 1024 + 1000), ' 10K');
});

test('strnatcmp: digit runs by value, leading zeros as fractions', () => {
  assert.ok(strnatcmp('v1.9.txt', 'v1.10.txt', false) < 0);
  assert.ok(strnatcmp('V2.txt', 'v1.10.txt', false) < 0);
  assert.ok(strnatcmp('V2.txt', 'v1.10.txt', true) > 0);
  assert.ok(strnatcmp('a01', 'a1', false) < 0);
  assert.equal(strnatcmp('abc', 'abc', false), 0);
});

test('wildcards: ap_strcmp_match for icons/IndexIgnore, apr_fnmatch for P= and descriptions', () => {
  assert.ok(strMatch('/d/a.txt', '*.txt'));
  assert.ok(!strMatch('/d/a.txt', '*.gz'));
  assert.ok(strMatch('text/plain', 'TEXT/*', true));
  assert.ok(strMatch('x', '*'));
  assert.ok(fnmatch('[ab]*', 'a.txt'));
  assert.ok(!fnmatch('[ab]*', 'c.txt'));
  assert.ok(!fnmatch('*', '.hidden', { period: true }));
  assert.ok(fnmatch('.*', '.hidden', { period: true }));
  assert.ok(fnmatch('A*', 'a.txt', { caseless: true }));
});

test('IndexOptions: absolute and +/- keywords, keywords without a bit reset the +/- list', () => {
  const a = conf(['IndexOptions FancyIndexing FoldersFirst']);
  assert.equal(a.opts, FANCY_INDEXING | FOLDERS_FIRST);
  const b = conf(['IndexOptions +SuppressSize -FoldersFirst']);
  assert.equal(b.opts, 0);
  assert.equal(b.incrementedOpts, SUPPRESS_SIZE);
  assert.equal(b.decrementedOpts, FOLDERS_FIRST);
  // IconHeight (no +/-) is an absolute keyword: the +SuppressSize before it is forgotten.
  const c = conf(['IndexOptions +SuppressSize IconHeight']);
  assert.equal(c.incrementedOpts, 0);
  assert.equal(c.iconHeight, 22);
  const w = conf(['IndexOptions NameWidth=* DescriptionWidth=40 IconWidth=16 Charset=UTF-8 Type=text/plain']);
  assert.equal(w.nameAdjust, 'adjust');
  assert.equal(w.descWidth, 40);
  assert.equal(w.iconWidth, 16);
  assert.equal(w.charset, 'UTF-8');
  assert.equal(w.ctype, 'text/plain');
  assert.equal(err('IndexOptions +None'), "Cannot combine '+' or '-' with 'None' keyword");
  assert.equal(err('IndexOptions None FancyIndexing'), "Cannot combine other IndexOptions keywords with 'None'");
  assert.equal(err('IndexOptions Bogus'), 'Invalid directory indexing option');
  assert.equal(err('IndexOptions NameWidth=3'), 'NameWidth value must be greater than 5');
  assert.equal(err('IndexOptions DescriptionWidth=5'), 'DescriptionWidth value must be greater than 12');
  assert.equal(err('IndexOptions -IconWidth=3'), "Cannot combine '-' with IconWidth=n");
  assert.equal(err('IndexOrderDefault Up Name'), "First keyword must be 'Ascending' or 'Descending'");
  assert.equal(err('IndexOrderDefault Ascending Foo'), "Second keyword must be 'Name', 'Date', 'Size', or 'Description'");
  assert.equal(err('AddIcon (X /i.gif .txt'), 'missing closing paren');
  assert.equal(err('FancyIndexing on'), 'The FancyIndexing directive is no longer supported. Use IndexOptions FancyIndexing.');
});

test('merging is not associative: two incremental levels merged first become absolute', () => {
  const server = conf(['IndexOptions FancyIndexing FoldersFirst']);
  const d = conf(['IndexOptions +SuppressSize'], '/d/');
  const sub = conf(['IndexOptions +SuppressLastModified'], '/d/sub/');
  // Step by step from the server: FancyIndexing stays.
  const stepwise = mergeDirConfig(mergeDirConfig(server, d), sub);
  assert.equal(stepwise.opts & FANCY_INDEXING, FANCY_INDEXING);
  // As the directory walk does it (sections first, then onto the server): it is lost.
  const walk = mergeDirConfig(server, mergeDirConfig(d, sub));
  assert.equal(walk.opts, SUPPRESS_SIZE | SUPPRESS_LAST_MOD);
  // None stops inheritance; later incremental options start from nothing.
  const none = mergeDirConfig(server, conf(['IndexOptions None'], '/n/'));
  assert.equal(none.opts, NO_OPTIONS);
  const after = mergeDirConfig(none, conf(['IndexOptions +VersionSort'], '/n/x/'));
  assert.equal(after.opts, VERSION_SORT);
});

test('lists: the section’s entries come before the inherited ones; IndexIgnoreReset drops the inherited IndexIgnore', () => {
  const base = conf(['AddIcon /a.gif .txt', 'IndexIgnore *.bak']);
  const add = conf(['AddIcon /b.gif .txt', 'IndexIgnore *.tmp'], '/d/');
  const m = mergeDirConfig(base, add);
  assert.deepEqual(m.iconList.map((i) => i.data), ['/b.gif', '/a.gif']);
  assert.deepEqual(m.ignList.map((i) => i.applyTo), ['*.tmp', '*.bak']);
  const reset = mergeDirConfig(base, conf(['IndexIgnoreReset On', 'IndexIgnore *.tmp'], '/d/'));
  assert.deepEqual(reset.ignList.map((i) => i.applyTo), ['*.tmp']);
  // The flag is not carried into the merged result.
  assert.equal(reset.ignoreNoInherit, undefined);
});
