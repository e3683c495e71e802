// mod_charset_lite: CharsetOptions words and their errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setOption, type CharsetDir } from '../../../src/modules/filters/mod_charset_lite.js';

const fresh = (): CharsetDir => ({ source: undefined, target: undefined, implicitAdd: undefined, translateAll: undefined });

test('CharsetOptions flags, case-insensitive', () => {
  const d = fresh();
  assert.equal(setOption(d, 'noimplicitadd'), undefined);
  assert.equal(d.implicitAdd, false);
  assert.equal(setOption(d, 'ImplicitAdd'), undefined);
  assert.equal(d.implicitAdd, true);
  assert.equal(setOption(d, 'TRANSLATEALLMIMETYPES'), undefined);
  assert.equal(d.translateAll, true);
  assert.equal(setOption(d, 'NoTranslateAllMimeTypes'), undefined);
  assert.equal(d.translateAll, false);
});

test('DebugLevel is gone in 2.4 and rejected with httpd\'s text', () => {
  assert.equal(setOption(fresh(), 'DebugLevel=4'), 'Invalid CharsetOptions option: DebugLevel=4');
  assert.equal(setOption(fresh(), ''), 'Invalid CharsetOptions option: ');
});
