// The cache servers' reply parsers (src/lib/kv): RESP2 for Redis, memcached's text protocol,
// fed whole and byte by byte, and a bounded fuzz that must only ever yield replies or throw
// the parsers' own protocol errors; memcached's stats and Redis' INFO as the socache
// providers' status lines print them.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { RespParser, RespProtocolError, encodeCommand } from '../../../src/lib/kv/resp.js';
import { McParser, McProtocolError, encodeSet, validKey, type McCommand } from '../../../src/lib/kv/memcache-text.js';
import { parseServer } from '../../../src/lib/kv/client.js';
import { memcacheStatus } from '../../../src/modules/cache/mod_socache_memcache.js';
import { redisStatus } from '../../../src/modules/cache/mod_socache_redis.js';

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
  const alphabet = Buffer.from('+-:$*0123456789\r\nVALUEND STORED_ERRORabcSTAT ', 'latin1');
  for (let round = 0; round < 2000; round++) {
    const len = rnd(64);
    const b = Buffer.alloc(len);
    for (let i = 0; i < len; i++) b[i] = rnd(4) === 0 ? rnd(256) : alphabet[rnd(alphabet.length)]!;
    try { new RespParser().push(b); } catch (e) { assert.ok(e instanceof RespProtocolError, String(e)); }
    try { new McParser().push(b, ['get', 'set', 'delete', 'get']); } catch (e) { assert.ok(e instanceof McProtocolError, String(e)); }
    try {
      const out = new McParser().push(Buffer.concat([Buffer.from('STAT ', 'latin1'), b]), ['stats', 'get']);
      for (const r of out) assert.ok(r.t === 'stats' || r.t === 'value' || r.t === 'error');
    } catch (e) { assert.ok(e instanceof McProtocolError, String(e)); }
    // The INFO text of a Redis server: any text gives the lines, never an exception.
    const text = redisStatus(b.toString('latin1'), rnd(2) === 0, '<br />');
    assert.match(text, /^(<b>General::<\/b> )?Version: /);
  }
});

test('memcached: stats, whole and split at every byte; an error line', () => {
  const wire = Buffer.from('STAT pid 42\r\nSTAT version 1.6.21\r\nSTAT rusage_user 1.500000\r\nEND\r\n', 'latin1');
  for (let cut = 0; cut <= wire.length; cut++) {
    const p = new McParser();
    const expect: McCommand[] = ['stats'];
    const out = [...p.push(wire.subarray(0, cut), expect), ...p.push(wire.subarray(cut), expect)];
    assert.equal(out.length, 1);
    const r = out[0]!;
    assert.equal(r.t, 'stats');
    if (r.t === 'stats') assert.deepEqual([...r.v], [['pid', '42'], ['version', '1.6.21'], ['rusage_user', '1.500000']]);
  }
  assert.deepEqual(new McParser().push(Buffer.from('ERROR\r\n'), ['stats']), [{ t: 'error', v: 'ERROR' }]);
  assert.throws(() => new McParser().push(Buffer.from('VALUE x\r\n'), ['stats']), McProtocolError);
});

test('socache_mc_status / socache_rd_status lines from a server\'s figures', () => {
  const st = new Map([['version', '1.6.21'], ['pointer_size', '64'], ['pid', '42'], ['uptime', '7300'], ['rusage_system', '0.250000'],
    ['rusage_user', '1.5'], ['curr_items', '3'], ['total_items', '9'], ['bytes', '12345678901'], ['cmd_get', '5'], ['get_hits', '4'], ['get_misses', '1'],
    ['limit_maxbytes', '67108864'], ['threads', '4']]);
  const short = memcacheStatus(st, true, '');
  assert.match(short, /^Version: 1\.6\.21 \[64 bits\], PID: 42, Uptime: 2 hrs \n/);
  assert.match(short, /\nStorage:: Total Items: 9, Current Items: 3, Bytes: 12345678901 \n/);
  assert.match(short, /\nCPU:: System: 250000, User: 1000005 \n/);
  assert.match(short, /\nCache:: Gets: 5, Sets: 0, Hits: 4, Misses: 1 \n/);
  assert.match(short, /\nMisc:: Evictions: 0, MaxMem: 67108864, Threads: 4 \n$/);
  assert.match(memcacheStatus(st, false, '<br />'), /^<b>Version:<\/b> <i>1\.6\.21<\/i> \[64 bits\], PID: <i>42<\/i>, Uptime: <i>2 hrs<\/i> <br \/>\n[\s\S]*<hr><br \/>\n$/);
  const info = '# Server\r\nredis_version:7.0.15\r\narch_bits:64\r\nprocess_id:99\r\nuptime_in_seconds:3600\r\n# Clients\r\nconnected_clients:2\r\n' +
    'used_memory:1000\r\nused_cpu_sys:0.123\r\nkeyspace_hits:7\r\nrole:master\r\ncluster_enabled:0\r\n';
  const rd = redisStatus(info, true, '');
  assert.match(rd, /^Version: 7\.0\.15 \[64 bits\], PID: 99, Uptime: 1 hrs \n/);
  assert.match(rd, /\nClients:: Connected: 2, Blocked: 0 \n/);
  assert.match(rd, /\nCPU:: System: 0, User: 0 \n/);
  assert.match(rd, /\nCache:: Hits: 7, Misses: 0 \n/);
  assert.match(rd, /\nMisc:: Role: master, Connected Slaves: 2, Is Cluster\?: no \n$/);
  assert.match(redisStatus(info, false, '<br />'), /<b>Misc::<\/b> Role: <i>master<\/i>, Connected Slaves: <i>2<\/i>, Is Cluster\?: <i>no<\/i> \n<hr><br \/>\n$/);
});
