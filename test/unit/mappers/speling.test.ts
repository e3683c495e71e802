// mod_speling: httpd's spdist distances and the candidate list (order, CheckCaseOnly,
// CheckBasenameMatch, the exact name present).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Reason, findCandidates, spdist } from '../../../src/modules/mappers/mod_speling.js';

test('spdist classifies one-edit differences as httpd does', () => {
  assert.equal(spdist('good.html', 'GOOD.html'), Reason.Miscapitalized);
  assert.equal(spdist('godo.html', 'good.html'), Reason.Transposition);
  assert.equal(spdist('god.html', 'good.html'), Reason.MissingChar);
  assert.equal(spdist('goood.html', 'good.html'), Reason.ExtraChar);
  assert.equal(spdist('go_d.html', 'good.html'), Reason.SimpleTypo);
  assert.equal(spdist('dogo.html', 'good.html'), Reason.VeryDifferent);
  assert.equal(spdist('good.htmlx', 'good.html'), Reason.ExtraChar);
  assert.equal(spdist('good.htm', 'good.html'), Reason.MissingChar);
  assert.equal(spdist('', 'a'), Reason.MissingChar);
});

const ON = { enabled: true, checkCaseOnly: false, checkBasenameMatch: true };

test('candidates are sorted by quality, stably, in directory order', () => {
  const c = findCandidates('several.html', ['.', '..', 'several.txt', 'several1.html', 'several0.html'], ON)!;
  assert.deepEqual(c.map((x) => x.name), ['several1.html', 'several0.html', 'several.txt']);
  assert.deepEqual(c.map((x) => x.quality), [Reason.MissingChar, Reason.MissingChar, Reason.VeryDifferent]);
});

test('the exact name present means no candidates at all (null)', () => {
  assert.equal(findCandidates('a.txt', ['A.TXT', 'a.txt'], ON), null);
});

test('CheckCaseOnly and CheckBasenameMatch', () => {
  const names = ['good.html', 'good.txt', 'GOD.html'];
  assert.deepEqual(findCandidates('god.html', names, { ...ON, checkCaseOnly: true })!.map((x) => x.name), ['GOD.html']);
  assert.deepEqual(findCandidates('good.pdf', names, { ...ON, checkCaseOnly: true })!.map((x) => x.name), ['good.html', 'good.txt']);
  assert.deepEqual(findCandidates('good.pdf', names, { ...ON, checkBasenameMatch: false }), []);
});
