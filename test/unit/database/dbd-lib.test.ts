// mod_dbd's parsers: APR's placeholder rewriting (apr_dbd_prepare for pgsql), libpq's conninfo
// strings (DBDParams) and libpq's error-position lines, with fuzz tests.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { translatePlaceholders, pgsqlTypeName, AprDbdType } from '../../../src/lib/dbd/placeholders.js';
import { parseConninfo, conninfoInt } from '../../../src/lib/dbd/conninfo.js';
import { errorPosition } from '../../../src/lib/dbd/pgsql.js';
import { randomString, seededRandom } from '../../fuzz.js';

test('placeholders: %s and %d become $1..$n with their types', () => {
  const t = translatePlaceholders('SELECT pw FROM users WHERE name = %s AND realm = %s AND uid = %d');
  assert.equal(t.sql, 'SELECT pw FROM users WHERE name = $1 AND realm = $2 AND uid = $3');
  assert.deepEqual(t.types, [AprDbdType.STRING, AprDbdType.STRING, AprDbdType.INT]);
  assert.equal(t.nvals, 3);
});

test('placeholders: %% is a literal %, a % before a non-letter stays', () => {
  assert.equal(translatePlaceholders("SELECT 1 WHERE a LIKE 'x%%' AND b = %s").sql, "SELECT 1 WHERE a LIKE 'x%' AND b = $1");
  assert.equal(translatePlaceholders('a % b %1 %').sql, 'a % b %1 %');
  assert.equal(translatePlaceholders('%%s').sql, '%s');
});

test('placeholders: the long forms (%hhd, %lld, %lf, %pDt...) and unknown letters', () => {
  const t = translatePlaceholders('%hhd %hu %lld %lu %lf %pDt %pDz %pDb %x %hx %pDq');
  assert.equal(t.sql, '$1 $2 $3 $4 $5 $6 $7 $8 $9 $10x $11Dq');
  assert.deepEqual(t.types.map(pgsqlTypeName), ['smallint', 'smallint', 'bigint', 'bigint', 'double precision', 'text', 'timestamp with time zone', 'bytea', 'varchar', 'varchar', 'varchar']);
  // A BLOB takes three more values in APR.
  assert.equal(t.nvals, 14);
});

test('placeholders fuzz: the count of $n equals the placeholders, %% never survives as a pair from input', () => {
  const rnd = seededRandom(1717);
  for (let i = 0; i < 3000; i++) {
    const q = randomString(rnd, '%sdhlupDtzbx $1aZ%%\'', 40);
    const t = translatePlaceholders(q);
    const refs = t.sql.match(/\$\d+/g) ?? [];
    const literalDollars = (q.match(/\$\d+/g) ?? []).length;
    assert.ok(refs.length >= t.types.length, q);
    assert.equal(refs.length - literalDollars >= 0, true, q);
    assert.ok(t.nvals >= t.types.length, q);
    // Translating a string without '%' changes nothing.
    const plain = q.replace(/%/g, '');
    assert.equal(translatePlaceholders(plain).sql, plain);
  }
});

test('conninfo: keyword=value pairs, spaces around =, quotes and escapes', () => {
  const r = parseConninfo("host = 127.0.0.1 port=5432  user='a b' password='it\\'s' dbname=x\\ y");
  assert.ok(r.ok);
  assert.deepEqual([...r.options], [['host', '127.0.0.1'], ['port', '5432'], ['user', 'a b'], ['password', "it's"], ['dbname', 'x y']]);
  assert.deepEqual(parseConninfo(''), { ok: true, options: new Map() });
});

test("conninfo: libpq's errors", () => {
  assert.deepEqual(parseConninfo('host=127.0.0.1 bogus=1'), { ok: false, error: 'invalid connection option "bogus"\n' });
  assert.deepEqual(parseConninfo('host=127.0.0.1 user'), { ok: false, error: 'missing "=" after "user" in connection info string\n' });
  assert.deepEqual(parseConninfo('user x=1'), { ok: false, error: 'missing "=" after "user" in connection info string\n' });
  assert.deepEqual(parseConninfo("user='abc"), { ok: false, error: 'unterminated quoted string in connection info string\n' });
  assert.deepEqual(parseConninfo('=x'), { ok: false, error: 'invalid connection option ""\n' });
  assert.equal(conninfoInt('12ab', 'port'), 'invalid integer value "12ab" for connection option "port"\n');
  assert.equal(conninfoInt(' 42 ', 'port'), 42);
});

test('conninfo: a postgresql:// URI', () => {
  const r = parseConninfo('postgresql://u%40x:p@db.example:6543/app?sslmode=require&application_name=plume');
  assert.ok(r.ok);
  assert.deepEqual(Object.fromEntries(r.options), { user: 'u@x', password: 'p', host: 'db.example', port: '6543', dbname: 'app', sslmode: 'require', application_name: 'plume' });
  assert.deepEqual(parseConninfo('postgres://h/d?nope=1'), { ok: false, error: 'invalid URI query parameter: "nope"\n' });
});

test('conninfo fuzz: never throws; a parsed string re-quoted parses to the same options', () => {
  const rnd = seededRandom(4242);
  for (let i = 0; i < 3000; i++) {
    const s = randomString(rnd, "hostuserdbnameport= '\\\t\nxa1", 50);
    const r = parseConninfo(s);
    if (!r.ok) {
      assert.match(r.error, /\n$/);
      continue;
    }
    const again = [...r.options].map(([k, v]) => `${k}='${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`).join(' ');
    const r2 = parseConninfo(again);
    assert.ok(r2.ok, again);
    assert.deepEqual([...r2.options], [...r.options]);
  }
});

test("errorPosition: libpq's LINE and caret, cut to 60 columns", () => {
  const q = 'PREPARE authn_dbd_1 (varchar) AS SELECT pw FROM nope WHERE name = $1';
  assert.equal(errorPosition(q, q.indexOf('nope') + 1),
    'LINE 1: PREPARE authn_dbd_1 (varchar) AS SELECT pw FROM nope WHERE n...\n' +
    ' '.repeat(56) + '^\n');
  assert.equal(errorPosition('SELECT\n  nope\nFROM x', 10), 'LINE 2:   nope\n          ^\n');
  assert.equal(errorPosition('SELECT 1', 20), '');
  const long = 'SELECT ' + 'a, '.repeat(40) + 'zz FROM t';
  const out = errorPosition(long, long.indexOf('zz') + 1);
  assert.match(out, /^LINE 1: \.\.\./);
  const [line, caret] = out.split('\n');
  assert.equal(line![caret!.indexOf('^')], 'z');
});

test('errorPosition fuzz: the caret sits under the character at the position', () => {
  const rnd = seededRandom(99);
  for (let i = 0; i < 2000; i++) {
    const q = randomString(rnd, 'abc xyz\n()', 150);
    if (q.length === 0) continue;
    const pos = 1 + rnd(q.length);
    const out = errorPosition(q, pos);
    if (q[pos - 1] === '\n' || q[pos - 1] === '\r') continue;
    const [line, caret] = out.split('\n');
    assert.equal(line![caret!.indexOf('^')], q[pos - 1], JSON.stringify([q, pos, out]));
  }
});
