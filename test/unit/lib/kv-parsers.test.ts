// The cache servers' reply parsers (src/lib/kv): RESP2 for Redis, memcached's text protocol,
// fed whole and byte by byte, and a bounded fuzz that must only ever yield replies or throw
// the parsers' own protocol errors.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { RespParser, RespProtocolError, encodeCommand } from '../../../src/lib/kv/resp.js';
import { McParser, McProtocolError, encodeSet, validKey, type McCommand } from '../../../src/lib/kv/memcache-text.js';
import { parseServer } from '../../../src/lib/kv/client.js';

test('RESP: commands are arrays of bulk strings', () => {
  assert.equal(encodeCommand(['SETEX', 'k', '30', Buffer.from('v\r\n')]).toString('latin1'), '*4\r\n$5\r\nSETEX\r\n$1\r\nk\r\n$2\r\n30\r\n$3\r\nv\r\n\r\n');
});

test('RESP: every reply type, whole and split at every byte', () => {
  const wire = Buffer.from('+OK\r\n-ERR bad\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*2\r\n$1\r\nx\r\n:1\r\n*-1\r\n$0\r\n\r\n', 'latin1');
  const want = [
    { t: 'simple', v: 'OK' }, { t: 'error', v: 'ERR bad' }, { t: 'int', v: 42 }, { t: 'bulk', v: Buffer.from('abc') },
    { t: 'bulk', v: null }, { t: 'array', v: [{ t: 'bulk', v: Buffer.from('x') }, { t: 'int', v: 1 }] }, { t: 'array', v: null },
    { t: 'bulk', v: Buffer.alloc(0) },
  ];
  assert.deepEqual(new RespParser().push(wire), want);
  const p = new RespParser();
  const got = [];
  for (let i = 0; i < wire.length; i++) got.push(...p.push(wire.subarray(i, i + 1)));
  assert.deepEqual(got, want);
});

test('RESP: what is not RESP is refused', () => {
  assert.throws(() => new RespParser().push(Buffer.from('?x\r\n')), RespProtocolError);
  assert.throws(() => new RespParser().push(Buffer.from('$abc\r\n')), RespProtocolError);
  assert.throws(() => new RespParser().push(Buffer.from('$3\r\nabcXY')), RespProtocolError);
});

test('memcached: get hit and miss, set, delete, errors, split at every byte', () => {
  const wire = Buffer.from('VALUE k 0 3\r\nabc\r\nEND\r\nEND\r\nSTORED\r\nNOT_FOUND\r\nSERVER_ERROR out of memory\r\n', 'latin1');
  const cmds: McCommand[] = ['get', 'get', 'set', 'delete', 'set'];
  const want = [
    { t: 'value', v: Buffer.from('abc') }, { t: 'value', v: null }, { t: 'status', v: 'STORED' }, { t: 'status', v: 'NOT_FOUND' },
    { t: 'error', v: 'SERVER_ERROR out of memory' },
  ];
  assert.deepEqual(new McParser().push(wire, [...cmds]), want);
  const p = new McParser();
  const due = [...cmds];
  const got = [];
  for (let i = 0; i < wire.length; i++) got.push(...p.push(wire.subarray(i, i + 1), due));
  assert.deepEqual(got, want);
  assert.equal(due.length, 0);
});

test('memcached: keys and set encoding', () => {
  assert.ok(validKey('mod_ssl-session:abcdef'));
  assert.ok(!validKey('a b'));
  assert.ok(!validKey('x'.repeat(251)));
  assert.equal(encodeSet('k', 30, Buffer.from('v')).toString('latin1'), 'set k 0 30 1\r\nv\r\n');
  assert.throws(() => new McParser().push(Buffer.from('VALUE k 0 1\r\nxy\r\nEND\r\n'), ['get']), McProtocolError);
});

test('server lists: host:port, host, [v6]:port', () => {
  assert.deepEqual(parseServer('127.0.0.1:6380', 6379), { host: '127.0.0.1', port: 6380 });
  assert.deepEqual(parseServer('cache', 11211), { host: 'cache', port: 11211 });
  assert.deepEqual(parseServer('[::1]:11212', 11211), { host: '::1', port: 11212 });
  assert.equal(parseServer(':11211', 11211), 'no host');
  assert.equal(parseServer('h:99999', 11211), 'bad port');
});

test('fuzz: random bytes only give replies or protocol errors (bounded)', () => {
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const alphabet = Buffer.from('+-:$*0123456789\r\nVALUEND STORED_ERRORabc', 'latin1');
  for (let round = 0; round < 2000; round++) {
    const len = rnd(64);
    const b = Buffer.alloc(len);
    for (let i = 0; i < len; i++) b[i] = rnd(4) === 0 ? rnd(256) : alphabet[rnd(alphabet.length)]!;
    try { new RespParser().push(b); } catch (e) { assert.ok(e instanceof RespProtocolError, String(e)); }
    try { new McParser().push(b, ['get', 'set', 'delete', 'get']); } catch (e) { assert.ok(e instanceof McProtocolError, String(e)); }
  }
});
