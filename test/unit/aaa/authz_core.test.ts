// mod_authz_core: configurations read through the real config reader, evaluated on requests
// with a fake runtime. Expected log lines were measured on Apache 2.4.71 with
// `LogLevel warn authz_core:trace8`.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readConfiguration, mergeVectors, type ModuleCatalogue } from '../../../src/server/config/build.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import { catalogue } from '../../../src/modules/index.js';
import {
  defineModule, DECLINED, MODULE_API_VERSION, OK,
  type AnyModuleHandle, type ProviderDecl,
} from '../../../src/server/module.js';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import { core } from '../../../src/server/core/core-module.js';
import { levelName } from '../../../src/server/log/levels.js';
import authzCore, {
  AUTHZ_DENIED_NO_USER, AUTHZ_GRANTED, AUTHZ_DENIED, authzSomeAuthRequired, registerAuthnCoreFunctions,
  type AuthzProvider,
} from '../../../src/modules/aaa/mod_authz_core.js';
import { tempDir } from '../../temp.js';

// A stand-in for mod_authz_user's `valid-user` and an asynchronous provider.
const validUser: AuthzProvider = {
  check: (r) => (r.user === undefined ? AUTHZ_DENIED_NO_USER : AUTHZ_GRANTED),
};
const slow: AuthzProvider<boolean> = {
  parse: (_cmd, args) => ({ ok: true, parsed: args === 'yes' }),
  check: async (_r, _a, yes) => { await new Promise((res) => setTimeout(res, 1)); return yes ? AUTHZ_GRANTED : AUTHZ_DENIED; },
};
const userProvider: AuthzProvider<readonly string[]> = {
  parse: (_cmd, args) => ({ ok: true, parsed: args.split(/\s+/) }),
  check: (r, _a, users) => (r.user === undefined ? AUTHZ_DENIED_NO_USER : users.includes(r.user) ? AUTHZ_GRANTED : AUTHZ_DENIED),
};
const testProviders: ProviderDecl[] = [
  { group: 'authz', name: 'user', version: '0', provider: userProvider as AuthzProvider },
  { group: 'authz', name: 'valid-user', version: '0', provider: validUser },
  { group: 'authz', name: 'slow', version: '0', provider: slow as AuthzProvider },
];
const testMod = defineModule<undefined, undefined>({
  name: 'authz_test_module', source: 'mod_authz_test.c', apiVersion: MODULE_API_VERSION, providers: testProviders,
});

const h = (m: unknown): AnyModuleHandle => m as AnyModuleHandle;
catalogue.register(h(authzCore));
catalogue.register(h(testMod));
const cat: ModuleCatalogue = {
  all: catalogue.all,
  get builtIn() { return [...catalogue.builtIn, h(authzCore), h(testMod)]; },
  find: (s) => catalogue.find(s),
  register: (m) => catalogue.register(m),
};

let n = 0;
async function load(body: string): Promise<ConfigContext> {
  const dir = tempDir('plume-authz-');
  const file = path.join(dir, 'httpd.conf');
  fs.writeFileSync(file, `ServerRoot ${dir}\nDocumentRoot ${dir}\n${body}\n`);
  n++;
  return readConfiguration({
    argv0: 'plume', serverRoot: dir, configFile: file, defines: [], preDirectives: [], postDirectives: [],
  }, cat);
}

async function configError(body: string): Promise<string> {
  try {
    await load(body);
  } catch (e) {
    return (e as Error).message;
  }
  return '(no error)';
}

interface Logged { module: string; level: string; message: string }

/** A request whose per-dir config is the server defaults merged with the <Location> sections
 *  matching `uri` (prefix match, in configuration order). */
function request(ctx: ConfigContext, uri: string, method = 'GET'): { r: Request; logs: Logged[] } {
  const logs: Logged[] = [];
  const rt = {
    ctx,
    logRequest(_r: Request, module: string, level: number, message: string) {
      logs.push({ module, level: levelName(level), message });
    },
  } as unknown as Runtime;
  const conn = { remoteIp: '127.0.0.1', notes: new Map() } as unknown as ConnRec;
  const s = ctx.mainServer;
  const r = new Request(rt, conn, s);
  r.method = method;
  r.uri = uri;
  r.filename = '/srv/htdocs' + uri;
  r.logLevel = { level: 4, modules: new Map([['authz_core', 15]]) };
  let vec = s.lookupDefaults;
  for (const sec of core.server(s).secUrl) {
    if (uri.startsWith(sec.path)) vec = mergeVectors(ctx, vec, sec.vector);
  }
  r.perDirConfig = vec;
  return { r, logs };
}

const hooks = authzCore.decl.hooks!;
type Fn = (r: Request) => number | Promise<number>;
const fnOf = (x: unknown): Fn => (typeof x === 'function' ? x : (x as { fn: Fn }).fn) as Fn;
const accessEx = fnOf(hooks.accessCheckerEx);
const authz = fnOf(hooks.authChecker);
const lines = (logs: Logged[]): string[] => logs.map((l) => `[${l.module}:${l.level}] ${l.message}`);

test('configuration errors worded as Apache words them', async () => {
  assert.match(await configError('<Location />\nRequire foo\n</Location>'), /Unknown Authz provider: foo/);
  assert.match(await configError('<Location />\nRequire All granted\n</Location>'), /Unknown Authz provider: All/);
  assert.match(await configError('<Location />\nRequire\n</Location>'), /Unknown Authz provider: $/m);
  assert.match(await configError('<Location />\nRequire all foo\n</Location>'), /Argument for 'Require all' must be 'granted' or 'denied'/);
  assert.match(await configError('<Location />\nRequire method FOO\n</Location>'), /Invalid Method 'FOO'/);
  assert.match(await configError('<Location />\nRequire method get\n</Location>'), /Invalid Method 'get'/);
  assert.match(await configError('<Location />\nRequire not all granted\n</Location>'), /negative Require directive has no effect in <RequireAny> directive/);
  assert.match(await configError('<Location />\n<RequireAll>\n</RequireAll>\n</Location>'), /<RequireAll> directive contains no authorization directives/);
  assert.match(await configError('<Location />\n<RequireAll x>\nRequire all granted\n</RequireAll>\n</Location>'), /<RequireAll> directive doesn't take additional arguments/);
  assert.match(await configError('<Location />\n<RequireNone>\nRequire all granted\n</RequireNone>\n</Location>'), /<RequireNone> directive has no effect in <RequireAny> directive/);
  assert.match(await configError('<Location />\nAuthMerging x\n</Location>'), /AuthMerging must be one of: Off \| And \| Or/);
  assert.match(await configError('Require all granted'), /Require not allowed here/);
  assert.match(await configError('<Location />\n<RequireAll>\nRequire not all granted\n</RequireAll>\n</Location>'), /Configuration check failed/);
});

test('Require all denied: 403 and AH01630 with the filename', async () => {
  const ctx = await load('<Location />\nRequire all denied\n</Location>');
  const { r, logs } = request(ctx, '/index.html');
  assert.equal(await accessEx(r), 403);
  assert.deepEqual(lines(logs), [
    '[authz_core:debug] AH01626: authorization result of Require all denied: denied',
    '[authz_core:debug] AH01626: authorization result of <RequireAny>: denied',
    '[authz_core:error] AH01630: client denied by server configuration: /srv/htdocs/index.html',
  ]);
  assert.equal(authzSomeAuthRequired(r), true);
});

test('no directives: granted', async () => {
  const ctx = await load('');
  const { r, logs } = request(ctx, '/x');
  assert.equal(await accessEx(r), OK);
  assert.deepEqual(lines(logs), ['[authz_core:debug] AH01628: authorization result: granted (no directives)']);
  assert.equal(authzSomeAuthRequired(r), false);
});

test('<Limit POST> does not apply to GET', async () => {
  const ctx = await load('<Location /lim>\n<Limit POST>\nRequire all denied\n</Limit>\n</Location>');
  const g = request(ctx, '/lim');
  assert.equal(await accessEx(g.r), OK);
  assert.deepEqual(lines(g.logs), ['[authz_core:debug] AH01625: authorization result of <RequireAny>: granted (directive limited to other methods)']);
  assert.equal(authzSomeAuthRequired(g.r), false);
  const p = request(ctx, '/lim', 'POST');
  assert.equal(await accessEx(p.r), 403);
  assert.equal(authzSomeAuthRequired(p.r), true);
});

test('<RequireNone> in <RequireAll> is flattened by De Morgan', async () => {
  const ctx = await load('<Location /none>\n<RequireAll>\nRequire all granted\n<RequireNone>\nRequire env FOO\nRequire method GET\n</RequireNone>\n</RequireAll>\n</Location>');
  const g = request(ctx, '/none');
  assert.equal(await accessEx(g.r), 403);
  assert.deepEqual(lines(g.logs), [
    '[authz_core:debug] AH01626: authorization result of Require all granted: granted',
    '[authz_core:debug] AH01626: authorization result of Require not env FOO: neutral',
    '[authz_core:debug] AH01626: authorization result of Require not method GET: denied',
    '[authz_core:debug] AH01626: authorization result of <RequireAll>: denied',
    '[authz_core:debug] AH01626: authorization result of <RequireAny>: denied',
    '[authz_core:error] AH01630: client denied by server configuration: /srv/htdocs/none',
  ]);
  const p = request(ctx, '/none', 'POST');
  assert.equal(await accessEx(p.r), OK);
  const e = request(ctx, '/none', 'POST');
  e.r.subprocessEnv.set('foo', '');
  assert.equal(await accessEx(e.r), 403);
});

test('AuthMerging And combines with the predecessor', async () => {
  const ctx = await load('<Location />\nRequire all granted\n</Location>\n<Location /m>\nAuthMerging And\nRequire method POST\n</Location>');
  const { r, logs } = request(ctx, '/m');
  assert.equal(await accessEx(r), 403);
  assert.deepEqual(lines(logs).slice(0, 5), [
    '[authz_core:debug] AH01626: authorization result of Require all granted: granted',
    '[authz_core:debug] AH01626: authorization result of <RequireAny>: granted',
    '[authz_core:debug] AH01626: authorization result of Require method POST: denied',
    '[authz_core:debug] AH01626: authorization result of <RequireAny>: denied',
    '[authz_core:debug] AH01626: authorization result of AuthMerging All: denied',
  ]);
  // Without AuthMerging the later section replaces the earlier one.
  const ctx2 = await load('<Location />\nRequire all denied\n</Location>\n<Location /m>\nRequire all granted\n</Location>');
  assert.equal(await accessEx(request(ctx2, '/m').r), OK);
  // AuthMerging Or: either grants.
  const ctx3 = await load('<Location />\nRequire all granted\n</Location>\n<Location /m>\nAuthMerging Or\nRequire all denied\n</Location>');
  assert.equal(await accessEx(request(ctx3, '/m').r), OK);
  // Only AuthzSendForbiddenOnFailure in the later section: the tree is inherited.
  const ctx4 = await load('<Location />\nRequire all denied\n</Location>\n<Location /m>\nAuthzSendForbiddenOnFailure On\n</Location>');
  assert.equal(await accessEx(request(ctx4, '/m').r), 403);
});

test('a needed user: DECLINED before authn, then 401 / 403 after', async () => {
  const ctx = await load('<Location />\nRequire valid-user\n</Location>\n<Location /f>\nAuthzSendForbiddenOnFailure On\n</Location>');
  const a = request(ctx, '/x');
  assert.equal(await accessEx(a.r), DECLINED);
  assert.equal(await authz(a.r), 401);
  assert.ok(lines(a.logs).includes('[authz_core:error] AH01629: authorization failure (no authenticated user): /x'));
  const b = request(ctx, '/x');
  b.r.user = 'joe';
  assert.equal(await authz(b.r), OK);

  // Denied for an authenticated user with an AuthType: 401, or 403 with AuthzSendForbiddenOnFailure.
  const ctx2 = await load('<Location />\n<RequireAll>\nRequire valid-user\nRequire all denied\n</RequireAll>\n</Location>\n<Location /f>\nAuthzSendForbiddenOnFailure On\n</Location>');
  registerAuthnCoreFunctions({ authType: () => 'Basic', noteAuthFailure: () => undefined });
  try {
    const c = request(ctx2, '/x');
    c.r.user = 'joe';
    assert.equal(await authz(c.r), 401);
    assert.ok(lines(c.logs).includes('[authz_core:error] AH01631: user joe: authorization failure for "/x": '));
    const d = request(ctx2, '/f');
    d.r.user = 'joe';
    assert.equal(await authz(d.r), 403);
  } finally {
    registerAuthnCoreFunctions(null);
  }
});

test('asynchronous providers', async () => {
  const ctx = await load('<Location />\n<RequireAll>\nRequire slow yes\nRequire all granted\n</RequireAll>\n</Location>\n<Location /no>\n<RequireAny>\nRequire slow no\nRequire env X\n</RequireAny>\n</Location>');
  assert.equal(await accessEx(request(ctx, '/ok').r), OK);
  assert.equal(await accessEx(request(ctx, '/no').r), 403);
});

test('<AuthzProviderAlias>', async () => {
  const ctx = await load('<AuthzProviderAlias all myall granted>\n</AuthzProviderAlias>\n<Location />\nRequire myall\n</Location>');
  const { r, logs } = request(ctx, '/a');
  assert.equal(await accessEx(r), OK);
  assert.deepEqual(lines(logs), [
    '[authz_core:debug] AH01626: authorization result of Require myall : granted',
    '[authz_core:debug] AH01626: authorization result of <RequireAny>: granted',
  ]);
  assert.match(await configError('<Location />\n<AuthzProviderAlias all x granted>\n</AuthzProviderAlias>\n</Location>'), /cannot occur within|not allowed/);
});

test('Require env with no names denies', async () => {
  const ctx = await load('<Location />\nRequire env\n</Location>');
  const { r, logs } = request(ctx, '/e');
  assert.equal(await accessEx(r), 403);
  assert.equal(lines(logs)[0], '[authz_core:debug] AH01626: authorization result of Require env : denied');
});

test('Require user bob for joe: the sequence Apache logs (AH01631, 401 / 403)', async () => {
  const ctx = await load('<Location />\nRequire user bob\n</Location>\n<Location /f>\nAuthzSendForbiddenOnFailure On\n</Location>');
  registerAuthnCoreFunctions({ authType: () => 'Basic', noteAuthFailure: () => undefined });
  try {
    for (const [uri, status] of [['/x', 401], ['/f', 403]] as const) {
      const { r, logs } = request(ctx, uri);
      assert.equal(await accessEx(r), DECLINED);
      r.user = 'joe';
      assert.equal(await authz(r), status);
      assert.deepEqual(lines(logs), [
        '[authz_core:debug] AH01626: authorization result of Require user bob: denied (no authenticated user yet)',
        '[authz_core:debug] AH01626: authorization result of <RequireAny>: denied (no authenticated user yet)',
        '[authz_core:debug] AH01626: authorization result of Require user bob: denied',
        '[authz_core:debug] AH01626: authorization result of <RequireAny>: denied',
        `[authz_core:error] AH01631: user joe: authorization failure for "${uri}": `,
      ]);
    }
  } finally {
    registerAuthnCoreFunctions(null);
  }
});
