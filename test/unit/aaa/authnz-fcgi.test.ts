// mod_authnz_fcgi's directive parsing: AuthnzFcgiDefineProvider's type, name and fcgi://
// backend address (httpd's FCGI_BACKEND_REGEX_STR, the IPv6 brackets, the port limit) and
// AuthnzFcgiCheckAuthnProvider's options (Authoritative, DefaultUser, RequireBasicAuth,
// UserExpr, "None"), each error in Apache's wording; the per-directory merge; and a bounded
// fuzz of both parsers (never a throw, an error always in Apache's forms, a parsed result
// always consistent with its input).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import mod, { parseBackendAddress, parseCheckAuthnProvider, parseDefineProvider, type FcgiDirConfig } from '../../../src/modules/aaa/mod_authnz_fcgi.js';
import { parseStringExpr, type StringExpr } from '../../../src/expr/index.js';
import { randomString, seededRandom } from '../../fuzz.js';

const expr = (text: string): { ok: true; expr: StringExpr } | { ok: false; error: string } => {
  const p = parseStringExpr(text, { module: 'authnz_fcgi' });
  return p.ok ? { ok: true, expr: p.expr } : { ok: false, error: p.error };
};

test('backend addresses: host and port, [IPv6], optional slash; invalid forms and ports', () => {
  assert.deepEqual(parseBackendAddress('fcgi://127.0.0.1:9000/'), { host: '127.0.0.1', port: 9000 });
  assert.deepEqual(parseBackendAddress('fcgi://localhost:1'), { host: 'localhost', port: 1 });
  assert.deepEqual(parseBackendAddress('fcgi://[::1]:9000/'), { host: '::1', port: 9000 });
  // The host is what the greedy (.*) leaves before the last ":digits".
  assert.deepEqual(parseBackendAddress('fcgi://::1:9000'), { host: '::1', port: 9000 });
  assert.deepEqual(parseBackendAddress('fcgi://:80/'), { host: '', port: 80 });
  assert.equal(parseBackendAddress('fcgi://h:99999/'), "AuthnzFcgiDefineProvider: backend-address 'fcgi://h:99999/' has invalid port");
  assert.deepEqual(parseBackendAddress('fcgi://h:65535'), { host: 'h', port: 65535 });
  for (const bad of ['http://h:1/', 'fcgi://h/', 'fcgi://h:123456/', 'fcgi://h:1//', 'FCGI://h:1/', 'fcgi://h:1/x', 'fcgi://h:-1']) {
    assert.equal(parseBackendAddress(bad), `AuthnzFcgiDefineProvider: backend-address '${bad}' has invalid form`, bad);
  }
});

test('AuthnzFcgiDefineProvider: types (any case), name, address, and each missing or extra argument', () => {
  const p = parseDefineProvider(['AuthNZ', 'Prov', 'fcgi://127.0.0.1:9/']);
  assert.ok(typeof p !== 'string');
  assert.equal(p.name, 'Prov');
  assert.equal(p.backend, 'fcgi://127.0.0.1:9/');
  assert.equal(p.isAuthn && p.isAuthz, true);
  const n = parseDefineProvider(['authn', 'a', 'fcgi://h:1']);
  assert.ok(typeof n !== 'string' && n.isAuthn && !n.isAuthz);
  const z = parseDefineProvider(['AUTHZ', 'a', 'fcgi://h:1']);
  assert.ok(typeof z !== 'string' && !z.isAuthn && z.isAuthz);
  assert.equal(parseDefineProvider([]), 'AuthnzFcgiDefineProvider: No type given');
  assert.equal(parseDefineProvider(['auth']), 'AuthnzFcgiDefineProvider: Invalid provider type auth');
  assert.equal(parseDefineProvider(['authn']), 'AuthnzFcgiDefineProvider: No provider name given');
  assert.equal(parseDefineProvider(['authn', 'x']), 'AuthnzFcgiDefineProvider: No backend-address given');
  assert.equal(parseDefineProvider(['authn', 'x', 'fcgi://h:1', 'more']), 'AuthnzFcgiDefineProvider: Unexpected parameter more');
  // The address is checked before what follows it.
  assert.equal(parseDefineProvider(['authn', 'x', 'bad', 'more']), "AuthnzFcgiDefineProvider: backend-address 'bad' has invalid form");
});

test('AuthnzFcgiCheckAuthnProvider: defaults, each option (names and On/Off in any case), None', () => {
  const d = parseCheckAuthnProvider(['p'], expr) as FcgiDirConfig;
  assert.deepEqual({ ...d }, { name: 'p', defaultUser: undefined, userExpr: undefined, authoritative: true, requireBasicAuth: false });
  const o = parseCheckAuthnProvider(['p', 'authoritative', 'OFF', 'RequireBasicAuth', 'on', 'DEFAULTUSER', 'guest', 'UserExpr', '%{REMOTE_USER}'], expr) as FcgiDirConfig;
  assert.equal(o.authoritative, false);
  assert.equal(o.requireBasicAuth, true);
  assert.equal(o.defaultUser, 'guest');
  assert.ok(o.userExpr !== undefined);
  // A later option overrides an earlier one.
  assert.equal((parseCheckAuthnProvider(['p', 'Authoritative', 'Off', 'Authoritative', 'On'], expr) as FcgiDirConfig).authoritative, true);
  assert.equal((parseCheckAuthnProvider(['None'], expr) as FcgiDirConfig).name, 'None');
});

test('AuthnzFcgiCheckAuthnProvider: errors worded as Apache words them', () => {
  const D = 'AuthnzFcgiCheckAuthnProvider';
  assert.equal(parseCheckAuthnProvider([], expr), `${D}: No provider given`);
  assert.equal(parseCheckAuthnProvider(['NONE', 'Authoritative', 'On'], expr), 'Options aren\'t supported with "None"');
  assert.equal(parseCheckAuthnProvider(['p', 'Authoritative'], expr), `${D}: Authoritativeneeds an argument`);
  assert.equal(parseCheckAuthnProvider(['p', 'Authoritative', 'yes'], expr), `${D}: Bad argument 'yes' to option 'Authoritative'`);
  assert.equal(parseCheckAuthnProvider(['p', 'RequireBasicAuth', '1'], expr), `${D}: Bad argument '1' to option 'RequireBasicAuth'`);
  assert.equal(parseCheckAuthnProvider(['p', 'ChildrenOrderedLast', 'On'], expr), `${D}: Unexpected option 'ChildrenOrderedLast'`);
  const e = parseCheckAuthnProvider(['p', 'UserExpr', '%{foo'], expr);
  assert.ok(typeof e === 'string' && e.startsWith(`${D}: Error parsing '%{foo': '`), String(e));
  // An option is checked for its value before its name.
  assert.equal(parseCheckAuthnProvider(['p', 'Nonsense'], expr), `${D}: Nonsenseneeds an argument`);
});

test('per-directory merge: the section with the directive wins whole', () => {
  const merge = mod.decl.mergeDirConfig!;
  const create = mod.decl.createDirConfig!;
  const base = parseCheckAuthnProvider(['a', 'Authoritative', 'Off', 'DefaultUser', 'u'], expr) as FcgiDirConfig;
  const empty = create(undefined);
  assert.equal(merge(base, empty), base);
  const over = parseCheckAuthnProvider(['b'], expr) as FcgiDirConfig;
  const m = merge(base, over);
  assert.equal(m.name, 'b');
  assert.equal(m.authoritative, true);
  assert.equal(m.defaultUser, undefined);
  assert.deepEqual({ ...empty }, { name: undefined, defaultUser: undefined, userExpr: undefined, authoritative: true, requireBasicAuth: false });
});

test('fuzz: the parsers never throw; errors are Apache\'s, results agree with their input', () => {
  const rnd = seededRandom(0x2494);
  const words = ['authn', 'authz', 'authnz', 'AuthNZ', 'x', 'None', 'none', 'Authoritative', 'RequireBasicAuth', 'DefaultUser', 'UserExpr',
    'On', 'off', 'yes', '%{REMOTE_USER}', '%{', 'fcgi://h:1/', 'fcgi://[::1]:65536', 'fcgi://a:b:9', ''];
  const defineErr = /^AuthnzFcgiDefineProvider: (No type given|Invalid provider type .*|No provider name given|No backend-address given|backend-address '.*' has invalid (form|port)|Unexpected parameter .*)$/s;
  const checkErr = /^(AuthnzFcgiCheckAuthnProvider: (No provider given|.*needs an argument|Bad argument '.*' to option '.*'|Unexpected option '.*'|Error parsing '.*': '.*')|Options aren't supported with "None")$/s;
  for (let i = 0; i < 3000; i++) {
    const argv: string[] = [];
    for (let n = rnd(6); n > 0; n--) argv.push(rnd(3) === 0 ? randomString(rnd, 'fcgi:/[]0123456789ahz%{}.-', 20) : words[rnd(words.length)]!);
    const d = parseDefineProvider(argv);
    if (typeof d === 'string') {
      assert.match(d, defineErr, JSON.stringify(argv));
    } else {
      assert.equal(argv.length, 3);
      assert.equal(d.name, argv[1]);
      assert.equal(d.isAuthn || d.isAuthz, true);
      assert.ok(d.port >= 0 && d.port <= 65535);
    }
    const c = parseCheckAuthnProvider(argv, expr);
    if (typeof c === 'string') {
      assert.match(c, checkErr, JSON.stringify(argv));
    } else {
      assert.equal(c.name, argv[0]);
      assert.equal(argv.length % 2, 1);
      if (c.name!.toLowerCase() === 'none') assert.equal(argv.length, 1);
    }
    const a = (rnd(2) === 0 ? 'fcgi://' : '') + randomString(rnd, 'fcgi:/[]0123456789h.', 24);
    const b = parseBackendAddress(a);
    if (typeof b === 'string') {
      assert.match(b, /^AuthnzFcgiDefineProvider: backend-address '.*' has invalid (form|port)$/s);
    } else {
      assert.ok(a.startsWith('fcgi://'), a);
      assert.equal(b.port, Number(/:(\d{1,5})\/?$/.exec(a)![1]), a);
      assert.ok(a.startsWith(`fcgi://${b.host}:`) || a.startsWith(`fcgi://[${b.host}]:`), a);
    }
  }
});
