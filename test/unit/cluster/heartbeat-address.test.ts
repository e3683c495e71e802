// The HeartbeatAddress / HeartbeatListen address reader (apr_parse_addr_port + an IPv4
// apr_sockaddr_info_get), with the answers measured on Apache 2.4.71 (conformance heartbeat/),
// and a bounded fuzz: any text gives an address or one of httpd's messages, never a throw.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseHbAddress } from '../../../src/modules/cluster/heartbeat-address.js';
import { seededRandom } from '../../fuzz.js';

const A = (text: string): ReturnType<typeof parseHbAddress> => parseHbAddress(text, 'HeartbeatAddress', 'address');

test('addresses as Apache reads them', () => {
  assert.deepEqual(A('239.0.0.1:27999'), { host: '239.0.0.1', port: 27999 });
  assert.deepEqual(A('localhost:80'), { host: '127.0.0.1', port: 80 });
  assert.equal(A('127.0.0.1'), 'HeartbeatAddress: No port provided in address');
  assert.equal(A('127.0.0.1:x'), 'HeartbeatAddress: No port provided in address');
  assert.equal(A('127.0.0.1:'), 'HeartbeatAddress: No port provided in address');
  assert.equal(A('[::1]'), 'HeartbeatAddress: No port provided in address');
  assert.equal(A('80'), 'HeartbeatAddress: No host provided in address');
  assert.equal(A(':80'), 'HeartbeatAddress: Unable to parse address.');
  assert.equal(A('127.0.0.1:0'), 'HeartbeatAddress: Unable to parse address.');
  assert.equal(A('239.1.1.1:70000'), 'HeartbeatAddress: Unable to parse address.');
  assert.equal(A('[::1]:80'), 'HeartbeatAddress: apr_sockaddr_info_get failed.');
  assert.equal(A('a:b:80'), 'HeartbeatAddress: apr_sockaddr_info_get failed.');
  assert.equal(parseHbAddress('[::1]:80', 'HeartbeatListen', 'multicast address'), 'HeartbeatListen: apr_sockaddr_info_get failed on multicast address');
  assert.equal(parseHbAddress('239.0.0.1', 'HeartbeatListen', 'multicast address'), 'HeartbeatListen: No port provided in multicast address');
});

test('fuzz: any text gives an IPv4 address with a port in range, or a message', () => {
  const alphabet = ['1', '2', '0', '9', '.', ':', '[', ']', 'a', 'x', ' ', '-', '%', '239', '127.0.0.1', '65535', '65536', '::'];
  const rnd = seededRandom(0x2545f491);
  for (let i = 0; i < 3000; i++) {
    let s = '';
    for (let k = rnd(8); k >= 0; k--) s += alphabet[rnd(alphabet.length)];
    const r = A(s);
    if (typeof r === 'string') assert.match(r, /^HeartbeatAddress: /, s);
    else {
      assert.match(r.host, /^\d+\.\d+\.\d+\.\d+$/, s);
      assert.ok(r.port >= 1 && r.port <= 65535, s);
    }
  }
});
