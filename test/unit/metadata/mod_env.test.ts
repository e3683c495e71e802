// mod_env: directive errors and warnings as apache2 -t 2.4.71 prints them, the per-directory
// merge, and the fixup overlay (measured: an existing variable stays visible, %{VAR}e and
// env= look names up case-insensitively).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { configure, errorOf, hook, makeRequest } from './helpers.js';
import env, { shadowedEnv, type EnvDirConfig } from '../../../src/modules/metadata/mod_env.js';
import { tableGet, tableSet, tableUnset } from '../../../src/server/apr-table.js';
import { DECLINED, OK } from '../../../src/server/module.js';

const dirOf = (v: unknown[]): EnvDirConfig => env.dirIn(v)!;

test('argument errors are httpd\'s', () => {
  assert.equal(errorOf('SetEnv'), 'SetEnv takes 1-2 arguments, an environment variable name and optional value to pass to CGI.');
  assert.equal(errorOf('SetEnv A b c'), 'SetEnv takes 1-2 arguments, an environment variable name and optional value to pass to CGI.');
  assert.equal(errorOf('PassEnv'), 'PassEnv requires at least one argument, a list of environment variables to pass to CGI.');
  assert.equal(errorOf('UnsetEnv'), 'UnsetEnv requires at least one argument, a list of variables to remove from the CGI environment.');
  assert.equal(errorOf('SetEnv A'), '');
  assert.equal(errorOf('UnsetEnv A B'), '');
});

test('SetEnv without a value sets the empty string', () => {
  const c = configure(['SetEnv A']);
  assert.deepEqual(dirOf(c.section).vars, [{ name: 'A', value: '' }]);
});

test("AH10032: '=' in a SetEnv name, with apr_strtok's split", () => {
  const cases: [string, string][] = [
    ['SetEnv A=b', "'SetEnv A b' expected instead?"],
    ['SetEnv A=b=c d', "'SetEnv A b=c' expected instead?"],
    ['SetEnv A==b', "'SetEnv A =b' expected instead?"],
    ['SetEnv =b', "'SetEnv b ' expected instead?"],
    ['SetEnv =', "'SetEnv (null) ' expected instead?"],
    ['SetEnv == x', "'SetEnv (null) ' expected instead?"],
  ];
  for (const [line, tail] of cases) {
    const c = configure([line]);
    assert.equal(c.error, undefined, line);
    assert.deepEqual(c.log, [`[env:warn] AH10032: Spurious usage of '=' in an environment variable name. ${tail}`], line);
  }
});

test('AH01506 for each undefined PassEnv variable; a defined one is copied', () => {
  process.env.PLUME_TEST_PASSENV = 'passed';
  delete process.env.PLUME_NOPE_X;
  delete process.env.PLUME_NOPE_Y;
  const c = configure(['PassEnv PLUME_NOPE_X PLUME_NOPE_Y PLUME_TEST_PASSENV']);
  assert.deepEqual(c.log, [
    '[env:warn] AH01506: PassEnv variable PLUME_NOPE_X was undefined',
    '[env:warn] AH01506: PassEnv variable PLUME_NOPE_Y was undefined',
  ]);
  assert.deepEqual(dirOf(c.section).vars, [{ name: 'PLUME_TEST_PASSENV', value: 'passed' }]);
});

test('startup warnings follow the server\'s log level: silent in a <VirtualHost> without LogLevel', () => {
  assert.deepEqual(configure(['PassEnv PLUME_NOPE_VH'], { vhost: true }).log, []);
  assert.deepEqual(configure(['SetEnv A=b'], { vhost: true }).log, []);
  assert.deepEqual(configure(['PassEnv PLUME_NOPE_VH'], { vhost: true, logLevel: true }).log,
    ['[env:warn] AH01506: PassEnv variable PLUME_NOPE_VH was undefined']);
  assert.deepEqual(configure(['PassEnv PLUME_NOPE_D'], { path: '/tmp' }).log,
    ['[env:warn] AH01506: PassEnv variable PLUME_NOPE_D was undefined']);
});

test('names compare case-insensitively; the first spelling is kept', () => {
  const c = configure(['SetEnv foo 1', 'SetEnv FOO 2', 'SetEnv bar 3']);
  assert.deepEqual(dirOf(c.section).vars, [{ name: 'foo', value: '2' }, { name: 'bar', value: '3' }]);
});

test('merge: UnsetEnv removes inherited variables; SetEnv after UnsetEnv in a section wins', () => {
  const c = configure(['UnsetEnv A', 'SetEnv C 3', 'UnsetEnv d'], { path: '/x', serverLines: ['SetEnv A 1', 'SetEnv B 2', 'SetEnv D 4'] });
  assert.deepEqual(dirOf(c.merged).vars, [{ name: 'B', value: '2' }, { name: 'C', value: '3' }]);
  const c2 = configure(['UnsetEnv A', 'SetEnv A 9'], { path: '/x', serverLines: ['SetEnv A 1'] });
  assert.deepEqual(dirOf(c2.merged).vars, [{ name: 'A', value: '9' }]);
  const c3 = configure(['SetEnv A 9', 'UnsetEnv A'], { path: '/x', serverLines: ['SetEnv A 1'] });
  assert.deepEqual(dirOf(c3.merged).vars, []);
  // Merging does not touch its inputs.
  assert.deepEqual(dirOf(c3.section).vars, []);
  assert.deepEqual(dirOf(c3.server.lookupDefaults).vars, [{ name: 'A', value: '1' }]);
});

test('fixups overlays the variables; a variable already set stays visible (apr_table_overlay)', () => {
  const c = configure(['SetEnv SEIVAR fromsetenv', 'SetEnv PLAIN plainval']);
  const { r } = makeRequest(c, { env: [['SEIVAR', 'fromsetenvif']] });
  assert.equal(hook(env, 'fixups')(r), OK);
  assert.equal(tableGet(r.subprocessEnv, 'SEIVAR'), 'fromsetenvif');
  assert.equal(tableGet(r.subprocessEnv, 'plain'), 'plainval');
  // What a CGI environment (ap_add_common_vars) sees instead.
  assert.deepEqual([...shadowedEnv(r)!], [['SEIVAR', 'fromsetenv']]);
  r.subprocessEnv.set('SEIVAR', 'changed later');
  assert.deepEqual([...shadowedEnv(r)!], []);
});

test('fixups declines without variables', () => {
  const c = configure([]);
  const { r } = makeRequest(c);
  assert.equal(hook(env, 'fixups')(r), DECLINED);
  assert.equal(r.subprocessEnv.size, 0);
});

test('table helpers follow apr_table_t', () => {
  const m = new Map<string, string>([['Foo', '1'], ['bar', '2']]);
  assert.equal(tableGet(m, 'FOO'), '1');
  tableSet(m, 'foo', '3');
  assert.deepEqual([...m], [['Foo', '3'], ['bar', '2']]);
  tableSet(m, 'Baz', '4');
  tableUnset(m, 'BAR');
  assert.deepEqual([...m], [['Foo', '3'], ['Baz', '4']]);
  assert.equal(tableGet(m, 'nope'), undefined);
});
