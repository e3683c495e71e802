// mod_auth_basic's header decoding, mod_authn_core's string expressions, the DBM type rules
// and how the tools replace files. The request-level behaviour (statuses, headers, log lines)
// is pinned by the conformance cases in test/conformance/cases/authn/, recorded from Apache.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { aprBase64Decode } from '../../../src/modules/aaa/mod_auth_basic.js';
import { compileStringExpr, escapeQuotes } from '../../../src/modules/aaa/auth-string-expr.js';
import { isSupportedDbmType, openDbmReadOnly, Sdbm } from '../../../src/lib/dbm/index.js';
import { htpasswdMain } from '../../../src/cli/htpasswd.js';
import type { Output } from '../../../src/cli/passwd-common.js';
import type { Request } from '../../../src/server/request/request.js';
import { escapeErrorlogItem } from '../../../src/server/log/error-log.js';
import { tempDir } from '../../temp.js';

const quiet: Output = { out: () => undefined, err: () => undefined };

test('apr_base64_decode: stops at the first non-alphabet character, tolerates missing padding', () => {
  const d = (s: string): string => aprBase64Decode(s).toString('latin1');
  assert.equal(d(Buffer.from('md5u:secret').toString('base64')), 'md5u:secret');
  assert.equal(d('bWQ1dTpzZWNyZXQ'), 'md5u:secret');
  assert.equal(d('bWQ1dTpzZWNyZXQ=!junk'), 'md5u:secret');
  assert.equal(d('!!!!'), '');
  assert.equal(d('='), '');
  assert.equal(d('Y'), '', 'a single character decodes to nothing');
  assert.equal(d('YWJjZA'), 'abcd');
  assert.equal(d('YWJjZ'), 'abc', 'five characters: the fifth alone is dropped');
  assert.equal(d('YWJj ZGVm'), 'abc', 'a space ends the data');
  assert.equal(aprBase64Decode('/+8A').length, 3);
});

test('string expressions for AuthName/AuthType/AuthBasicFake: literals, escapes, variables, errors', () => {
  const r = {
    headersIn: { get: (n: string) => (n === 'Host' ? 'example.org' : undefined) },
    method: 'GET', uri: '/x', useragentIp: '127.0.0.1', connection: { remoteIp: '127.0.0.1' }, subprocessEnv: new Map([['E', 'env!']]),
    notes: new Map(), server: {}, wantsLog: () => false,
  } as unknown as Request;
  const ok = (src: string): string => {
    const c = compileStringExpr(src);
    assert.ok(c.ok, src);
    return c.expr(r);
  };
  const err = (src: string): string => {
    const c = compileStringExpr(src);
    assert.ok(!c.ok, src);
    return c.error;
  };
  assert.equal(ok('Private Area'), 'Private Area');
  const lit = compileStringExpr('Private');
  assert.equal(lit.ok ? lit.literal : undefined, 'Private', 'a literal compiles to a constant');
  assert.equal(ok('a%{HTTP_HOST}b'), 'aexample.orgb');
  assert.equal(ok('%{REQUEST_METHOD} %{REMOTE_ADDR}'), 'GET 127.0.0.1');
  assert.equal(ok('%{reqenv:E}'), 'env!');
  assert.equal(ok('%{tolower:ABC}'), 'abc');
  assert.equal(ok('100%'), '100%');
  assert.equal(ok('a$1b'), 'ab');
  // httpd's scanner knows octal escapes but not \x: "\x42" is "x42" (measured on 2.4.71).
  assert.equal(ok('x\\101\\x42\\n'), 'xAx42\n');
  assert.equal(err('%{foo}'), "Variable 'foo' does not exist");
  assert.equal(err('%{nofunc:x}'), "Function 'nofunc' does not exist");
  assert.equal(err('%{:true:}'), "syntax error, unexpected ':', expecting T_ID");
  assert.equal(err('%{'), 'syntax error, unexpected T_ERROR, expecting T_ID: Unterminated string or variable');
  assert.equal(err('a\\9'), 'Bad escape sequence');
});

test('ap_escape_quotes: quotes escaped unless already escaped', () => {
  assert.equal(escapeQuotes('Pri "vate"'), 'Pri \\"vate\\"');
  assert.equal(escapeQuotes('a\\"b'), 'a\\"b');
  assert.equal(escapeQuotes('plain'), 'plain');
});

test('the error log escapes messages as httpd does (bytes above 0x7e, controls, backslashes)', () => {
  assert.equal(escapeErrorlogItem('user \xff\xfe\x80 not found'), 'user \\xff\\xfe\\x80 not found');
  assert.equal(escapeErrorlogItem('a\\b"c\t\n\x01'), 'a\\\\b"c\\t\\n\\x01');
  assert.equal(escapeErrorlogItem('plain text'), 'plain text');
});

// DIFFERENCE: "default" is SDBM in plume (Berkeley DB in Debian's APR); GDBM, NDBM and DB are
// not implemented.
test('DBM types: SDBM and default read SDBM files; GDBM, NDBM and DB are not implemented', () => {
  const dir = tempDir('plume-dbmtype-');
  const db = Sdbm.empty();
  db.store(Buffer.from('u'), Buffer.from('{SHA}x'));
  db.save(path.join(dir, 'users'));
  for (const t of ['SDBM', 'sdbm', 'default']) {
    assert.equal(isSupportedDbmType(t), true, t);
    assert.equal(openDbmReadOnly(t, path.join(dir, 'users')).fetch(Buffer.from('u'))!.toString(), '{SHA}x');
  }
  for (const t of ['GDBM', 'NDBM', 'DB']) {
    assert.equal(isSupportedDbmType(t), false, t);
    assert.throws(() => openDbmReadOnly(t, path.join(dir, 'users')), /not been implemented/);
  }
  assert.throws(() => openDbmReadOnly('SDBM', path.join(dir, 'none')), { code: 'ENOENT' });
});

test('a server-side DBM read sees a change on the next open (stat revalidation)', () => {
  const dir = tempDir('plume-dbmcache-');
  const name = path.join(dir, 'u');
  const db = Sdbm.empty();
  db.store(Buffer.from('a'), Buffer.from('1'));
  db.save(name);
  assert.equal(openDbmReadOnly('SDBM', name).fetch(Buffer.from('b')), undefined);
  const db2 = Sdbm.load(name);
  db2.store(Buffer.from('b'), Buffer.from('2'));
  db2.save(name);
  assert.equal(openDbmReadOnly('SDBM', name).fetch(Buffer.from('b'))!.toString(), '2');
});

// DIFFERENCE: htpasswd rewrites the file through a temporary file renamed over it (a new
// inode, never a half-written file); httpd's htpasswd copies over the file in place. The mode
// of an existing file is kept.
test('htpasswd replaces the file through a rename and keeps its mode', async () => {
  const dir = tempDir('plume-htrename-');
  const f = path.join(dir, 'pw');
  assert.equal(await htpasswdMain(['-bcs', f, 'a', 'x'], quiet), 0);
  fs.chmodSync(f, 0o640);
  const before = fs.statSync(f).ino;
  assert.equal(await htpasswdMain(['-bs', f, 'b', 'y'], quiet), 0);
  const st = fs.statSync(f);
  assert.notEqual(st.ino, before);
  assert.equal(st.mode & 0o777, 0o640);
  assert.match(fs.readFileSync(f, 'latin1'), /^a:\{SHA\}[^\n]+\nb:\{SHA\}[^\n]+\n$/);
  assert.deepEqual(fs.readdirSync(dir), ['pw'], 'no temporary file left');
});
