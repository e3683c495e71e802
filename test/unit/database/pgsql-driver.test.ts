// The pgsql driver against a real PostgreSQL (Debian's, started on loopback for this file):
// connections from DBDParams, statements prepared under their label with APR's placeholders,
// values as text (NULL as ""), libpq's error texts, and a server error on a sequential select
// read as no rows (apr_dbd_pgsql's seek 0).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { openPgsql, type DbdConnection } from '../../../src/lib/dbd/pgsql.js';
import { canRunPostgres, startPostgres, type PostgresServer } from '../../process/postgres-server.js';
import { freePort } from '../../process/process-lib.js';

const skip = canRunPostgres() ? false : 'no PostgreSQL under /usr/lib/postgresql';
let srv: PostgresServer | undefined;
let dir = '';
let params = '';

before(async () => {
  if (skip) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-pgdrv-'));
  fs.chmodSync(dir, 0o755);
  const port = await freePort();
  srv = await startPostgres(path.join(dir, 'pg'), port,
    "CREATE TABLE t (name text, n integer, flag boolean, note text); INSERT INTO t VALUES ('a', 1, true, NULL), ('b', 2, false, 'x');");
  params = `host=127.0.0.1 port=${port} user=postgres dbname=postgres`;
});

after(async () => {
  await srv?.stop();
  if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
});

async function connect(p = params): Promise<DbdConnection> {
  const r = await openPgsql(p);
  if ('error' in r) throw new Error(r.error);
  return r.conn;
}

test('prepared statement with %s and %d, values as text, NULL as ""', { skip }, async () => {
  const c = await connect();
  try {
    assert.equal(await c.prepare('SELECT n, flag, note FROM t WHERE name = %s OR n = %d ORDER BY n', 'q_1'), undefined);
    const r = await c.pselect('q_1', ['a', '2']);
    assert.deepEqual(r.names, ['n', 'flag', 'note']);
    assert.deepEqual(r.rows, [['1', 't', ''], ['2', 'f', 'x']]);
    // Run again: bound to the statement prepared on the server, not parsed again.
    assert.deepEqual((await c.pselect('q_1', ['b', '0'])).rows, [['2', 'f', 'x']]);
    assert.equal(await c.prepare("UPDATE t SET note = %s WHERE name = 'a'", 'u_1'), undefined);
    assert.equal(await c.pquery('u_1', ['y']), 1);
  } finally {
    await c.close();
  }
});

test('values beyond the placeholders are ignored, null binds SQL NULL (apr_dbd_pvbquery as mod_session_dbd calls it)', { skip }, async () => {
  const c = await connect();
  try {
    assert.equal(await c.prepare('SELECT n FROM t WHERE name = %s', 'x_1'), undefined);
    assert.deepEqual((await c.pselect('x_1', ['b', '12345'])).rows, [['2']]);
    assert.equal(await c.prepare('SELECT count(*) FROM t WHERE %s IS NULL', 'x_2'), undefined);
    assert.deepEqual((await c.pselect('x_2', [null])).rows, [['2']]);
    assert.equal(await c.prepare('DELETE FROM t WHERE name = %s', 'x_3'), undefined);
    assert.equal(await c.pquery('x_3', [null, 'extra']), 0);
  } finally {
    await c.close();
  }
});

test('a statement the server refuses: libpq text with LINE and caret', { skip }, async () => {
  const c = await connect();
  try {
    const err = await c.prepare('SELECT x FROM nope WHERE a = %s', 'bad_1');
    assert.equal(err, 'ERROR:  relation "nope" does not exist\nLINE 1: PREPARE bad_1 (varchar) AS SELECT x FROM nope WHERE a = $1\n                                                 ^\n');
  } finally {
    await c.close();
  }
});

test('an execution error: no rows for a sequential select, an error for a random one', { skip }, async () => {
  const c = await connect();
  try {
    assert.equal(await c.prepare('SELECT 1 / %d', 'div_1'), undefined);
    assert.deepEqual(await c.pselect('div_1', ['0']), { names: [], rows: [] });
    await assert.rejects(c.pselect('div_1', ['0'], true), /ERROR: {2}division by zero\n/);
    assert.ok(c.check());
  } finally {
    await c.close();
  }
});

test("connection failures worded as libpq's", { skip }, async () => {
  const port = await freePort();
  const refused = await openPgsql(`host=127.0.0.1 port=${port} user=postgres`);
  assert.deepEqual(refused, { error: `connection to server at "127.0.0.1", port ${port} failed: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?\n` });
  const nodb = await openPgsql(params.replace('dbname=postgres', 'dbname=nope'));
  assert.ok('error' in nodb && /failed: FATAL: {2}database "nope" does not exist\n$/.test(nodb.error));
  assert.deepEqual(await openPgsql('host=127.0.0.1 bogus=1'), { error: 'invalid connection option "bogus"\n' });
  assert.deepEqual(await openPgsql('port=x'), { error: 'invalid integer value "x" for connection option "port"\n' });
  // A unix socket directory.
  const sock = await openPgsql(`host=${srv!.socketDir} port=${srv!.port} user=postgres dbname=postgres`);
  assert.ok('conn' in sock);
  await sock.conn.close();
});
