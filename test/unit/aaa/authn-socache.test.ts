// mod_authn_socache's configuration rules: the per-directory merge (httpd keeps the parent's
// timeout when the child's is the default 300, the parent's context when the child's is the
// default, the parent's providers when the child has none), AuthnCacheTimeout's atoi, and the
// cache keys of the three kinds of AuthnCacheContext. The request-level behaviour is pinned by
// test/conformance/cases/authn/socache-*.json and test/process/authn-socache.test.ts.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { atoi, constructKey, createDirConfig, mergeDirConfig } from '../../../src/modules/aaa/mod_authn_socache.js';
import type { Request } from '../../../src/server/request/request.js';

test('merge: defaults inherit, anything set replaces (an explicit 300 is a default, as in httpd)', () => {
  const base = { timeout: 60, providers: ['file'], context: 'server' };
  assert.deepEqual(mergeDirConfig(base, createDirConfig()), base);
  assert.deepEqual(mergeDirConfig(base, { timeout: 300, providers: undefined, context: undefined }), base);
  assert.deepEqual(mergeDirConfig(base, { timeout: 0, providers: ['dbm'], context: 'x' }), { timeout: 0, providers: ['dbm'], context: 'x' });
  assert.deepEqual(mergeDirConfig(createDirConfig(), { timeout: 10, providers: undefined, context: 'directory' }), { timeout: 10, providers: undefined, context: 'directory' });
});

test('AuthnCacheTimeout is read with atoi', () => {
  assert.equal(atoi('42'), 42);
  assert.equal(atoi('  -5s'), -5);
  assert.equal(atoi('+7'), 7);
  assert.equal(atoi('abc'), 0);
  assert.equal(atoi(''), 0);
  assert.equal(atoi('99999999999'), 2147483647);
});

test('keys: directory = host + the URI up to its last slash; server = host; any other string as is; digest adds the realm', () => {
  const r = { server: { serverHostname: 'www.example' }, uri: '/a/b/c.html' } as unknown as Request;
  const k = (ctx: string | undefined, realm?: string): string => constructKey(r, ctx, 'alice', realm).toString('latin1');
  assert.equal(k(undefined), 'www.example/a/b:alice');
  assert.equal(k('directory'), 'www.example/a/b:alice');
  assert.equal(k('server'), 'www.example:alice');
  assert.equal(k('shared'), 'shared:alice');
  assert.equal(k('server', 'R'), 'www.example:alice:R');
  const top = { server: { serverHostname: 'h' }, uri: '/x' } as unknown as Request;
  assert.equal(constructKey(top, undefined, 'u', undefined).toString(), 'h:u');
});
