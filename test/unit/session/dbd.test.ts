// mod_session_dbd's parsers and configuration merge: the session key read back as a UUID
// (apr_uuid_parse + apr_uuid_format), SessionDBDCookieName's raw argument, and the merge in
// which a section's default labels win over the labels of the server. Bounded fuzz of both
// parsers (the key is client input, the name configuration input).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomString, seededRandom } from '../../fuzz.js';
import { createDirConfig, mergeDirConfig, parseCookieName, parseUuid } from '../../../src/modules/session/mod_session_dbd.js';

test('parseUuid: 36 hex digits and dashes at 8, 13, 18, 23, formatted in lowercase', () => {
  assert.equal(parseUuid('11111111-2222-3333-4444-555555555555'), '11111111-2222-3333-4444-555555555555');
  assert.equal(parseUuid('ABCDEF01-2345-6789-ABCD-EF0123456789'), 'abcdef01-2345-6789-abcd-ef0123456789');
  // APR allows a hex digit where the dashes go, and skips that character.
  assert.equal(parseUuid('11111111x2222-3333-4444-555555555555'), undefined);
  assert.equal(parseUuid('111111110222203333044440555555555555'), '11111111-2222-3333-4444-555555555555');
  for (const bad of ['', 'notauuid', '11111111-2222-3333-4444-5555555555555', '11111111-2222-3333-4444-55555555555', '1111111-22222-3333-4444-555555555555', '11111111-2222-3333-4444-55555555555g']) {
    assert.equal(parseUuid(bad), undefined, bad);
  }
});

test('parseUuid fuzz: a result is always a formatted lowercase UUID, and parses to itself', () => {
  const rnd = seededRandom(11);
  for (let n = 0; n < 3000; n++) {
    const s = rnd(3) === 0 ? randomString(rnd, '0aF-g', 40) : Array.from({ length: 36 }, (_, i) => ([8, 13, 18, 23].includes(i) && rnd(4) !== 0 ? '-' : '0123456789abcdefABCDEF-x'[rnd(24)])).join('');
    const u = parseUuid(s);
    if (u === undefined) continue;
    assert.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, s);
    assert.equal(parseUuid(u), u);
  }
});

test('parseCookieName: the first word, then the attributes after any white space', () => {
  assert.deepEqual(parseCookieName('s path=/'), { name: 's', attrs: 'path=/', ok: true });
  assert.deepEqual(parseCookieName('  s\t\t Path=/;Version=1 '), { name: 's', attrs: 'Path=/;Version=1 ', ok: true });
  assert.deepEqual(parseCookieName('s'), { name: 's', attrs: '', ok: true });
  assert.deepEqual(parseCookieName(''), { name: undefined, attrs: '', ok: false });
  assert.deepEqual(parseCookieName(' \t'), { name: undefined, attrs: '', ok: false });
  for (const bad of ['a=b', 'a;b', 'a&b']) assert.equal(parseCookieName(bad).ok, false, bad);
});

test('parseCookieName fuzz: the name has no blank, and name and attributes come from the input', () => {
  const rnd = seededRandom(5);
  for (let n = 0; n < 3000; n++) {
    const s = randomString(rnd, 'ab =;&\t/\n', 12);
    const p = parseCookieName(s);
    if (p.name !== undefined) {
      assert.doesNotMatch(p.name, /[ \t]/, s);
      assert.ok(s.includes(p.name), s);
      assert.equal(p.ok, !/[=;&]/.test(p.name), s);
    } else {
      assert.equal(p.ok, false);
    }
    assert.ok(s.endsWith(p.attrs), s);
  }
});

test('merge: cookie names, PerUser and CookieRemove inherit when unset; labels are the section\'s own', () => {
  const server = createDirConfig();
  server.name = 's'; server.nameAttrs = 'path=/'; server.nameSet = true;
  server.peruser = true; server.peruserSet = true;
  server.remove = false; server.removeSet = true;
  server.selectLabel = 'mysel';
  const loc = createDirConfig();
  const m = mergeDirConfig(server, loc);
  assert.equal(m.name, 's');
  assert.equal(m.nameAttrs, 'path=/');
  assert.equal(m.peruser, true);
  assert.equal(m.remove, false);
  assert.equal(m.selectLabel, 'selectsession');
  assert.equal(m.deleteLabel, 'deletesession');
  const d = createDirConfig();
  assert.equal(d.remove, true);
  assert.equal(d.nameSet || d.name2Set || d.peruserSet, false);
});
