// Password hashes and SDBM files against what Apache's tools made. The fixtures in fixtures/
// were written by Apache's htpasswd and htdbm (apache2-utils 2.4.71), so the default run checks
// them without Apache; where apache2-utils is installed, files go both ways as well.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  desCrypt, makeHash, md5Crypt, sha1Base64, shaCrypt, systemCrypt, validatePassword, type HashAlgorithm,
} from '../../../src/lib/passwords/index.js';
import { Sdbm, sdbmHash, openDbmReadOnly } from '../../../src/lib/dbm/index.js';
import { htdbmMain } from '../../../src/cli/htdbm.js';
import type { Output } from '../../../src/cli/passwd-common.js';
import { tempDir } from '../../temp.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const FIX = path.join(REPO, 'test', 'unit', 'aaa', 'fixtures');
const HTDBM = '/usr/bin/htdbm';
const HTPASSWD = '/usr/bin/htpasswd';
const haveUtils = fs.existsSync(HTDBM) && fs.existsSync(HTPASSWD);
const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const quiet: Output = { out: () => undefined, err: () => undefined };

test('every entry of an htpasswd file made by Apache htpasswd validates (plain text never does on Unix)', async () => {
  const lines = fs.readFileSync(path.join(FIX, 'htpasswd'), 'latin1').trim().split('\n');
  assert.equal(lines.length, 9);
  for (const line of lines) {
    const [user, hash] = [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)];
    const expectOk = user !== 'plainu';
    assert.equal(await validatePassword(b('secret'), hash), expectOk, `${user} right password`);
    assert.equal(await validatePassword(b('secreT'), hash), false, `${user} wrong password`);
    assert.equal(await validatePassword(b(''), hash), false, `${user} empty password`);
  }
});

test('known answers: DES, MD5 and SHA crypt as glibc/libxcrypt and APR compute them', () => {
  // Values computed by the system crypt(3) and APR on Debian 12.
  assert.equal(desCrypt(b('secret'), 'xQ'), 'xQIzHiCan4SU6');
  assert.equal(desCrypt(b('password123'), 'ab'), 'abJnggxhB/yWI');
  assert.equal(desCrypt(b(''), '..'), '..X8NBuQ4l6uQ');
  assert.equal(desCrypt(b('\xff\x80abc'), 'zZ'), 'zZz4Hs3mt2vc2');
  assert.equal(desCrypt(b('secret'), '!!'), undefined, 'libxcrypt refuses salts outside the alphabet');
  assert.equal(md5Crypt(b('secret'), '$apr1$XSQgUacM$'), '$apr1$XSQgUacM$4FcZnbbiwPnP8JbhxG6CR.');
  assert.equal(shaCrypt(b('secret'), '$5$HJrKoKFM.xgXtxCC$'), '$5$HJrKoKFM.xgXtxCC$GGvbzdvInY2R5MtrNOn2cF3Cmj2G4.WispmmMn08hz8');
  assert.equal(shaCrypt(b('secret'), '$6$rounds=1000$MjWe0MUSvVZhk976$'),
    '$6$rounds=1000$MjWe0MUSvVZhk976$ADjpnGt433b6nF9HKjlN/kQ37UfqayiTe2mHs/Tdvc0ZbKMd.Duu.VII7RjzyR8TWGhi/ujLR4fggJZxQMmQV0');
  assert.equal(sha1Base64(b('secret')), '{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=');
  assert.equal(systemCrypt(b('x'), '$y$j9T$abc$def'), undefined, 'yescrypt is not implemented');
});

test('a NUL ends the password, as in C', async () => {
  assert.equal(await validatePassword(b('secret\0junk'), '{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ='), true);
});

test('hashes made for htpasswd validate, and have Apache\'s shapes', async () => {
  const shapes: Record<HashAlgorithm, RegExp> = {
    md5: /^\$apr1\$[./0-9A-Za-z]{8}\$[./0-9A-Za-z]{22}$/,
    bcrypt: /^\$2y\$05\$[./0-9A-Za-z]{53}$/,
    sha1: /^\{SHA\}[A-Za-z0-9+/]{27}=$/,
    crypt: /^[./0-9A-Za-z]{13}$/,
    plain: /^pw$/,
    sha256: /^\$5\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{43}$/,
    sha512: /^\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{86}$/,
  };
  for (const alg of Object.keys(shapes) as HashAlgorithm[]) {
    const h = await makeHash(alg, b('pw'), { cost: 0 });
    assert.match(h, shapes[alg], alg);
    if (alg !== 'plain') assert.equal(await validatePassword(b('pw'), h), true, alg);
  }
  assert.match(await makeHash('sha512', b('pw'), { cost: 2000 }), /^\$6\$rounds=2000\$/);
});

test('bcrypt and SHA-crypt checks do not block the event loop', async () => {
  for (const hash of [
    '$2y$05$qQHYKQpRGJ68ZMOj1cgkC.8X0RwjnfrYgfD02HaZbMhYzsURf4gEe',
    '$6$miDN33.ClCd.qDCD$rN7Eu5sUbZIiwFgEKWOS4CKZINWOCNgRjrxohoef8THwokxivmYMIe7AxwBvJBWy8kYXFHODHxKVE6zsZ5ByG/',
  ]) {
    let ticks = 0;
    const timer = setInterval(() => { ticks++; }, 0);
    const res = validatePassword(b('secreT'), hash);
    assert.ok(res instanceof Promise, 'validation is asynchronous');
    assert.equal(await res, false);
    clearInterval(timer);
    assert.ok(ticks > 0, 'timers ran while the hash was computed');
  }
});

// ---- SDBM ------------------------------------------------------------------------------------

test('sdbm_hash as APR computes it (signed chars)', () => {
  // n = c + 65599 * n, by hand for "ab": 97 * 65599 + 98.
  assert.equal(sdbmHash(b('ab')), 97 * 65599 + 98);
  // The low bits choose the page: a byte >= 0x80 counts as negative.
  assert.notEqual(sdbmHash(b('\xe9')), sdbmHash(b('\x69')));
  assert.equal(sdbmHash(b('\xff')), -1);
});

test('an SDBM database made by Apache htdbm reads back (one page)', () => {
  const db = Sdbm.load(path.join(FIX, 'users'));
  const keys = db.keys().map((k) => k.toString('latin1'));
  assert.deepEqual(keys, ['alice', 'bob', 'carol', 'dave', 'eve']);
  assert.equal(db.fetch(b('dave'))!.toString('latin1').split(':').slice(1).join(':'), 'staff,admin:Dave D');
  assert.equal(db.fetch(b('nobody')), undefined);
});

test('an SDBM database with split pages made by Apache htdbm reads back and validates', async () => {
  const db = openDbmReadOnly('SDBM', path.join(FIX, 'big'));
  assert.equal(db.keys().length, 121);
  for (const i of [0, 1, 2, 50, 99, 120]) {
    const v = db.fetch(b(`user${i}`));
    assert.ok(v, `user${i}`);
    assert.equal(await validatePassword(b(i === 0 ? 'secret' : `secret${i}`), v.toString('latin1')), true);
  }
  assert.equal(db.fetch(b('user121')), undefined);
});

test('SDBM writes are byte-identical to APR\'s for the same operations (fixture rebuilt)', () => {
  // big.pag/big.dir were made by `htdbm -bsTSDBM big userN secretN`, N = 0..120: SHA-1 hashes
  // are unsalted, so replaying the same stores gives the same bytes.
  const db = Sdbm.empty();
  for (let i = 0; i <= 120; i++) db.store(b(`user${i}`), b(sha1Base64(b(i === 0 ? 'secret' : `secret${i}`))));
  assert.ok(db.pagBytes.equals(fs.readFileSync(path.join(FIX, 'big.pag'))), '.pag identical');
  assert.ok(db.dirBytes.equals(fs.readFileSync(path.join(FIX, 'big.dir'))), '.dir identical');
});

test('SDBM store/delete/replace and the pair size limit', () => {
  const db = Sdbm.empty();
  for (let i = 0; i < 500; i++) db.store(b(`k${i}`), b(`v${i}`.repeat(i % 9 + 1)));
  for (let i = 0; i < 500; i += 3) assert.equal(db.delete(b(`k${i}`)), true);
  assert.equal(db.delete(b('k0')), false);
  db.store(b('k1'), b('replaced'));
  for (let i = 0; i < 500; i++) {
    const v = db.fetch(b(`k${i}`));
    if (i % 3 === 0) assert.equal(v, undefined);
    else assert.equal(v!.toString('latin1'), i === 1 ? 'replaced' : `v${i}`.repeat(i % 9 + 1));
  }
  assert.equal(db.keys().length, 500 - 167);
  assert.throws(() => db.store(b('big'), Buffer.alloc(1006)), /too long/);
  const round = Sdbm.fromBuffers(db.pagBytes, db.dirBytes);
  assert.equal(round.fetch(b('k2'))!.toString('latin1'), 'v2v2v2');
});

test('SDBM files go both ways between plume htdbm and Apache htdbm', { skip: !haveUtils && 'apache2-utils not installed' }, async () => {
  const dir = tempDir('plume-sdbm-');
  const a = path.join(dir, 'a');
  const p = path.join(dir, 'p');
  // Apache writes, plume reads and changes, Apache reads back.
  spawnSync(HTDBM, ['-bcTSDBM', a, 'alice', 'secret']);
  for (let i = 0; i < 80; i++) spawnSync(HTDBM, ['-bsTSDBM', a, `u${i}`, `pw${i}`]);
  assert.equal(await htdbmMain(['-vbTSDBM', a, 'alice', 'secret'], quiet), 0);
  assert.equal(await htdbmMain(['-vbTSDBM', a, 'u42', 'pw42'], quiet), 0);
  assert.equal(await htdbmMain(['-bBTSDBM', a, 'bob', 'b0b'], quiet), 0);
  assert.equal(await htdbmMain(['-xTSDBM', a, 'u7'], quiet), 0);
  assert.equal(spawnSync(HTDBM, ['-vbTSDBM', a, 'bob', 'b0b']).status, 0);
  assert.equal(spawnSync(HTDBM, ['-vbTSDBM', a, 'u7', 'pw7']).status, 6);
  assert.equal(spawnSync(HTDBM, ['-vbTSDBM', a, 'u79', 'pw79']).status, 0);
  // plume writes from scratch, Apache reads.
  assert.equal(await htdbmMain(['-bcTSDBM', p, 'carol', 'c4r0l'], quiet), 0);
  for (let i = 0; i < 80; i++) assert.equal(await htdbmMain(['-bsTSDBM', p, `u${i}`, `pw${i}`], quiet), 0);
  assert.equal(spawnSync(HTDBM, ['-vbTSDBM', p, 'carol', 'c4r0l']).status, 0);
  assert.equal(spawnSync(HTDBM, ['-vbTSDBM', p, 'u63', 'pw63']).status, 0);
  const list = spawnSync(HTDBM, ['-lTSDBM', p], { encoding: 'latin1' }).stderr;
  assert.match(list, /Total #records : 81/);
});
