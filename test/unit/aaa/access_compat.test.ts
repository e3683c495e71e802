// mod_access_compat, its precedence over host-style Require lines (specification 5.2 rule 5),
// mod_authz_host and the group providers, on configurations read by the real reader and
// requests built with a fake runtime. Verdicts and log lines are those Apache 2.4.71 gives for
// the same configurations (see the authz/ conformance cases), except where marked DIFFERENCE.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readConfiguration, mergeVectors, type ModuleCatalogue } from '../../../src/server/config/build.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import { catalogue } from '../../../src/modules/index.js';
import { OK, type AnyModuleHandle } from '../../../src/server/module.js';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import { core } from '../../../src/server/core/core-module.js';
import { levelName } from '../../../src/server/log/levels.js';
import { satisfies } from '../../../src/server/request/satisfy.js';
import authzCore, { isHostStyle, type AuthzSection } from '../../../src/modules/aaa/mod_authz_core.js';
import accessCompat from '../../../src/modules/aaa/mod_access_compat.js';
import authzHost from '../../../src/modules/aaa/mod_authz_host.js';
import authzUser from '../../../src/modules/aaa/mod_authz_user.js';
import authzGroupfile, { cfgLines, parseGroupFile } from '../../../src/modules/aaa/mod_authz_groupfile.js';
import { tempDir } from '../../temp.js';

const h = (m: unknown): AnyModuleHandle => m as AnyModuleHandle;
const mods = [h(authzHost), h(authzGroupfile), h(authzUser), h(authzCore), h(accessCompat)];
const cat: ModuleCatalogue = {
  all: catalogue.all,
  get builtIn() { return [...catalogue.builtIn, ...mods]; },
  find: (s) => catalogue.find(s),
  register: (m) => catalogue.register(m),
};

let dirs = 0;
async function load(body: string): Promise<ConfigContext> {
  const dir = tempDir('plume-compat-');
  const file = path.join(dir, 'httpd.conf');
  fs.writeFileSync(file, `ServerRoot ${dir}\nServerName localhost\nDocumentRoot ${dir}\n${body.split('@ROOT@').join(dir)}\n`);
  dirs++;
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

/** A request from `ip` whose configuration merges the <Location> sections matching `uri`. */
function request(ctx: ConfigContext, uri: string, ip = '127.0.0.1', method = 'GET'): { r: Request; logs: string[] } {
  const logs: string[] = [];
  const rt = {
    ctx,
    logRequest(_r: Request, module: string, level: number, message: string) {
      logs.push(`[${module}:${levelName(level)}] ${message}`);
    },
    errno: () => undefined,
  } as unknown as Runtime;
  const conn = { remoteIp: ip, localIp: '127.0.0.1', notes: new Map(), remoteHost: undefined } as unknown as ConnRec;
  const s = ctx.mainServer;
  const r = new Request(rt, conn, s);
  r.method = method;
  r.uri = uri;
  r.filename = '/srv/htdocs' + uri;
  let vec = s.lookupDefaults;
  for (const sec of core.server(s).secUrl) if (uri.startsWith(sec.path)) vec = mergeVectors(ctx, vec, sec.vector);
  r.perDirConfig = vec;
  return { r, logs };
}

type Fn = (r: Request) => number | Promise<number>;
const fnOf = (x: unknown): Fn => (typeof x === 'function' ? x : (x as { fn: Fn }).fn) as Fn;
const access = fnOf(accessCompat.decl.hooks!.accessChecker);
const accessEx = fnOf(authzCore.decl.hooks!.accessCheckerEx);

/** The verdict of both access phases under Satisfy All, as the lifecycle runs them. */
async function verdict(ctx: ConfigContext, uri: string, ip = '127.0.0.1', method = 'GET'): Promise<number> {
  const { r } = request(ctx, uri, ip, method);
  const a = await access(r);
  if (a !== OK) return a;
  return accessEx(r);
}

test('Order, Allow and Deny: the three orders, last match semantics', async () => {
  const ctx = await load([
    '<Location /da>', 'Order deny,allow', 'Deny from all', 'Allow from 127.0.0.1', '</Location>',
    '<Location /ad>', 'Order allow,deny', 'Allow from 127.0.0.0/8', 'Deny from 127.0.0.2', '</Location>',
    '<Location /mf>', 'Order mutual-failure', 'Allow from 127.0', 'Deny from 127.0.0.2', '</Location>',
    '<Location /empty>', 'Order allow,deny', '</Location>',
  ].join('\n'));
  assert.equal(await verdict(ctx, '/da'), OK);
  assert.equal(await verdict(ctx, '/da', '127.0.0.2'), 403);
  assert.equal(await verdict(ctx, '/ad'), OK);
  assert.equal(await verdict(ctx, '/ad', '127.0.0.2'), 403);
  assert.equal(await verdict(ctx, '/mf'), OK);
  assert.equal(await verdict(ctx, '/mf', '127.0.0.2'), 403);
  assert.equal(await verdict(ctx, '/mf', '10.0.0.1'), 403);
  assert.equal(await verdict(ctx, '/empty'), 403);
  const { r, logs } = request(ctx, '/da', '127.0.0.2');
  assert.equal(await access(r), 403);
  assert.deepEqual(logs, ['[access_compat:error] AH01797: client denied by server configuration: /srv/htdocs/da']);
});

test('env= and env=! look the variable up case-insensitively', async () => {
  const ctx = await load('<Location /e>\nOrder deny,allow\nDeny from env=!Let_In\n</Location>');
  const { r } = request(ctx, '/e');
  assert.equal(await access(r), 403);
  const b = request(ctx, '/e');
  b.r.subprocessEnv.set('LET_IN', '1');
  assert.equal(await access(b.r), OK);
});

test('<Limit> scopes Order, Allow/Deny and Satisfy to its methods', async () => {
  const ctx = await load([
    '<Location /l>', 'Order allow,deny', 'Allow from all',
    '<Limit POST>', 'Deny from all', 'Satisfy Any', '</Limit>',
    '<Limit PUT>', 'Order mutual-failure', '</Limit>',
    '<LimitExcept GET PUT>', 'Order deny,allow', '</LimitExcept>', '</Location>',
  ].join('\n'));
  assert.equal(await verdict(ctx, '/l'), OK);
  assert.equal(await verdict(ctx, '/l', '127.0.0.1', 'HEAD'), OK, 'HEAD is GET');
  assert.equal(await verdict(ctx, '/l', '127.0.0.1', 'PUT'), OK, 'mutual-failure: allowed, not denied');
  // POST: deny,allow (LimitExcept), denied by the POST-only Deny, then allowed by Allow from all.
  assert.equal(await verdict(ctx, '/l', '127.0.0.1', 'POST'), OK);
  assert.equal(await verdict(ctx, '/l', '127.0.0.1', 'DELETE'), OK);
  assert.equal(satisfies(request(ctx, '/l', '127.0.0.1', 'POST').r), 'any');
  assert.equal(satisfies(request(ctx, '/l').r), 'nospec');
});

test('no merger: a deeper section with any of the directives replaces the parent rules', async () => {
  const ctx = await load([
    '<Location /p>', 'Order deny,allow', 'Deny from all', '</Location>',
    '<Location /p/allow>', 'Allow from 127.0.0.1', '</Location>',
    '<Location /p/other>', 'AuthMerging Or', '</Location>',
  ].join('\n'));
  assert.equal(await verdict(ctx, '/p/x', '127.0.0.2'), 403);
  assert.equal(await verdict(ctx, '/p/allow/x', '127.0.0.2'), OK, 'deny,allow with no Deny left admits');
  assert.equal(await verdict(ctx, '/p/other/x', '127.0.0.2'), 403, 'a section without them inherits');
});

test('DIFFERENCE (spec 5.2 rule 5, table 5.4): granting Order/Allow/Deny decide over host-style Require lines', async () => {
  const ctx = await load([
    '<Location />', 'Require all denied', '</Location>',
    '<Location /server-status>', 'Order deny,allow', 'Deny from all', 'Allow from 127.0.0.1', '</Location>',
    '<Location /user>', 'Require valid-user', 'Order allow,deny', 'Allow from all', '</Location>',
    '<Location /any>', 'Require ip 10.0.0.1', 'Order allow,deny', 'Allow from all', 'Satisfy Any', '</Location>',
    '<Location /plain>', 'Require ip 10.0.0.1', '</Location>',
  ].join('\n'));
  // Apache 2.4.71 answers 403 here (AH01630); the specification answers 200.
  assert.equal(await verdict(ctx, '/server-status'), OK);
  // The Order/Allow/Deny rules refuse 127.0.0.2: 403 either way.
  assert.equal(await verdict(ctx, '/server-status', '127.0.0.2'), 403);
  // A tree that needs a user still runs authentication (DECLINED), as in Apache.
  assert.equal(await verdict(ctx, '/user'), -1);
  // Satisfy Any keeps Apache's meaning; the lifecycle decides there.
  assert.equal(await verdict(ctx, '/any'), 403);
  // Without Order/Allow/Deny in force nothing changes.
  assert.equal(await verdict(ctx, '/plain'), 403);
});

test('isHostStyle: only all, env, ip, host, local and forward-dns lines', async () => {
  const ctx = await load([
    '<Location /a>', '<RequireAll>', 'Require ip 127.0.0.1', 'Require not env X', '</RequireAll>', 'Require local', '</Location>',
    '<Location /b>', 'Require ip 127.0.0.1', 'Require user bob', '</Location>',
  ].join('\n'));
  const tree = (uri: string): AuthzSection => authzCore.dir(request(ctx, uri).r).section!;
  assert.equal(isHostStyle(tree('/a')), true);
  assert.equal(isHostStyle(tree('/b')), false);
});

test('Require ip, local and host on client addresses', async () => {
  const ctx = await load([
    '<Location /ip>', 'Require ip 10.1 192.168.0.0/255.255.0.0 ::1', '</Location>',
    '<Location /local>', 'Require local', '</Location>',
  ].join('\n'));
  assert.equal(await verdict(ctx, '/ip', '10.1.2.3'), OK);
  assert.equal(await verdict(ctx, '/ip', '192.168.7.7'), OK);
  assert.equal(await verdict(ctx, '/ip', '::1'), OK);
  assert.equal(await verdict(ctx, '/ip', '::ffff:10.1.0.1'), OK);
  assert.equal(await verdict(ctx, '/ip', '10.2.0.1'), 403);
  assert.equal(await verdict(ctx, '/local', '127.8.9.10'), OK);
  assert.equal(await verdict(ctx, '/local', '::1'), OK);
  assert.equal(await verdict(ctx, '/local', '10.0.0.1'), 403);
});

test('configuration errors of the old directives', async () => {
  assert.match(await configError('<Location />\nOrder deny, allow\n</Location>'), /order takes one argument, 'allow,deny', 'deny,allow', or 'mutual-failure'/);
  assert.match(await configError('<Location />\nAllow 10.0.0.1\n</Location>'), /allow requires at least two arguments/);
  assert.match(await configError('<Location />\nDeny to 10.0.0.1 10.0.0.2\n</Location>'), /allow and deny must be followed by 'from'/);
  assert.match(await configError('<Location />\nSatisfy some\n</Location>'), /Satisfy either 'any' or 'all'\./);
  assert.match(await configError('Order deny,allow'), /order not allowed here/);
});

test('group files: names end at the first colon, members are config words, groups compare case-insensitively', () => {
  const m = parseGroupFile('# comment\nstaff : alice "bob b"\n\nAdmins:alice\nempty:\nnocolon alice\n  wheel::root \\\n carol\n');
  assert.deepEqual([...(m.get('alice') ?? [])].sort(), ['admins', 'staff']);
  assert.deepEqual([...(m.get('bob b') ?? [])], ['staff']);
  assert.deepEqual([...(m.get('root') ?? [])], ['wheel']);
  assert.deepEqual([...(m.get('carol') ?? [])], ['wheel']);
  assert.equal(m.get('nocolon'), undefined);
  assert.deepEqual(cfgLines('a \\\nb\r\n  c  '), ['a b', 'c']);
});

test('DIFFERENCE: Require file-group without mod_authz_owner denies (httpd crashes)', async () => {
  // No AuthType here, so the denial is a 403 (AH01630) rather than a 401.
  const dir = tempDir('plume-fg-');
  fs.writeFileSync(path.join(dir, 'groups'), 'root: alice\n');
  const ctx = await load(`<Location /fg>\nAuthGroupFile ${dir}/groups\nRequire file-group\n</Location>`);
  const { r } = request(ctx, '/fg');
  r.user = 'alice';
  r.filename = path.join(dir, 'groups');
  const authz = fnOf(authzCore.decl.hooks!.authChecker);
  assert.equal(await authz(r), 403);
});
