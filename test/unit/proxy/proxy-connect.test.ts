// mod_proxy_connect's parsers: AllowCONNECT arguments (set_allowed_ports, with C's strtol and
// the int it is stored in), allowed_port's default of 443 and 563, and the CONNECT target
// (apr_uri_parse_hostinfo); bounded fuzz of both with seeded input.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { allowedPort, parseAllowConnect, parseHostinfo } from '../../../src/modules/proxy/mod_proxy_connect.js';
import { randomString, seededRandom } from '../../fuzz.js';

const NUMERIC = 'AllowCONNECT: port numbers must be numeric';

test('AllowCONNECT: single ports and ranges', () => {
  assert.deepEqual(parseAllowConnect('443'), { first: 443, last: 443 });
  assert.deepEqual(parseAllowConnect('1024-65535'), { first: 1024, last: 65535 });
  assert.deepEqual(parseAllowConnect('007'), { first: 7, last: 7 });
  // strtol after the dash takes a sign: "1--5" is the (empty) range 1..-5, "1-+5" is 1..5.
  assert.deepEqual(parseAllowConnect('1--5'), { first: 1, last: -5 });
  assert.deepEqual(parseAllowConnect('1-+5'), { first: 1, last: 5 });
  // strtol saturates at LONG_MAX and the int keeps the low 32 bits.
  assert.deepEqual(parseAllowConnect('99999999999999999999'), { first: -1, last: -1 });
  assert.deepEqual(parseAllowConnect('4294967739'), { first: 443, last: 443 });
});

test('AllowCONNECT: httpd\'s argument errors', () => {
  assert.equal(parseAllowConnect('https'), NUMERIC);
  assert.equal(parseAllowConnect(''), NUMERIC);
  assert.equal(parseAllowConnect('-1'), NUMERIC);
  assert.equal(parseAllowConnect(' 1'), NUMERIC);
  assert.equal(parseAllowConnect('443x'), "Cannot parse '443x' as port number");
  assert.equal(parseAllowConnect('1000-'), "Cannot parse '' as port number");
  assert.equal(parseAllowConnect('1000-2x'), "Cannot parse '2x' as port number");
  assert.equal(parseAllowConnect('1-2-3'), "Cannot parse '2-3' as port number");
  assert.equal(parseAllowConnect('1-x'), "Cannot parse 'x' as port number");
});

test('allowed_port: 443 and 563 without AllowCONNECT, else the listed ranges', () => {
  assert.equal(allowedPort([], 443), true);
  assert.equal(allowedPort([], 563), true);
  assert.equal(allowedPort([], 80), false);
  const list = [{ first: 80, last: 80 }, { first: 8000, last: 8100 }];
  assert.equal(allowedPort(list, 443), false);
  assert.equal(allowedPort(list, 80), true);
  assert.equal(allowedPort(list, 8050), true);
  assert.equal(allowedPort(list, 8101), false);
  assert.equal(allowedPort([{ first: 5, last: 1 }], 3), false);
});

test('the CONNECT target: host:port, [v6]:port, the port as an unsigned short', () => {
  assert.deepEqual(parseHostinfo('example.com:443'), { host: 'example.com', port: 443 });
  assert.deepEqual(parseHostinfo('[::1]:8443'), { host: '::1', port: 8443 });
  assert.deepEqual(parseHostinfo('h:65979'), { host: 'h', port: 443 });
  assert.deepEqual(parseHostinfo('h:'), { host: 'h', port: 0 });
  assert.equal(parseHostinfo('example.com'), undefined);
  assert.equal(parseHostinfo('[::1]8443'), undefined);
  assert.equal(parseHostinfo('[::1'), undefined);
  assert.equal(parseHostinfo('a:b:443'), undefined);
  assert.equal(parseHostinfo('h:44x'), undefined);
});

test('fuzz: AllowCONNECT arguments never throw, and agree with a plain reading of N and N-M', () => {
  const rnd = seededRandom(0x0c0ec7);
  for (let i = 0; i < 20000; i++) {
    const arg = randomString(rnd, '0123456789--+ x\t\0', 12);
    const r = parseAllowConnect(arg);
    if (typeof r === 'string') {
      assert.ok(r === NUMERIC || /^Cannot parse '[^']*' as port number$/.test(r), r);
      if (!/^\d/.test(arg)) assert.equal(r, NUMERIC);
      continue;
    }
    assert.ok(Number.isInteger(r.first) && Number.isInteger(r.last));
    assert.ok(r.first >= -(2 ** 31) && r.first < 2 ** 31 && r.last >= -(2 ** 31) && r.last < 2 ** 31);
    const m = /^(\d{1,9})(?:-(\d{1,9}))?$/.exec(arg);
    if (m !== null) assert.deepEqual(r, { first: Number(m[1]), last: Number(m[2] ?? m[1]) });
  }
});

test('fuzz: CONNECT targets never throw; a parsed port is an unsigned short', () => {
  const rnd = seededRandom(4431);
  for (let i = 0; i < 20000; i++) {
    const t = randomString(rnd, 'ab.1:[]9-+ 0', 14);
    const r = parseHostinfo(t);
    if (r === undefined) continue;
    assert.ok(Number.isInteger(r.port) && r.port >= 0 && r.port <= 65535, t);
    assert.ok(t.startsWith('[') ? t.startsWith(`[${r.host}]:`) : t.startsWith(`${r.host}:`), t);
  }
});
