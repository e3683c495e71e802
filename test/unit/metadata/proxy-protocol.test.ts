// mod_remoteip's PROXY protocol parser: v1 lines and v2 binary headers, httpd's messages for
// bad ones, and a bounded fuzz (random and mutated headers never throw, a header is complete
// only within the lengths the protocol allows).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseProxyHeader, ipv6ToString } from '../../../src/modules/metadata/proxy-protocol.js';

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
const b = (s: string): Buffer => Buffer.from(s, 'latin1');

test('v1: TCP4 and TCP6 give the client address as written and the header length', () => {
  const h = 'PROXY TCP4 192.0.2.10 127.0.0.1 4444 80\r\n';
  assert.deepEqual(parseProxyHeader(b(h + 'GET / HTTP/1.1\r\n')), { kind: 'done', ip: '192.0.2.10', port: 4444, length: h.length });
  const r6 = parseProxyHeader(b('PROXY TCP6 2001:DB8::21f:5bff:febf:ce22:8a2e 2001:DB8::1 3333 4444\r\n'));
  assert.equal(r6.kind === 'done' && r6.ip, '2001:DB8::21f:5bff:febf:ce22:8a2e');
  assert.deepEqual(parseProxyHeader(b('PROXY TCP4 192.0.2.10')), { kind: 'more' });
  assert.deepEqual(parseProxyHeader(b('PROXY')), { kind: 'more' });
});

test('v1: httpd\'s messages for bad headers', () => {
  const msg = (s: string): string => { const r = parseProxyHeader(b(s)); return r.kind === 'error' ? r.message : r.kind; };
  assert.match(msg('PROXY FOO 1.2.3.4 1.2.3.4 1 2\r\n'), /^AH03499: .*unknown family 'FOO'/);
  assert.match(msg('PROXY TCP4 1.2.3.x 1.2.3.4 1 2\r\n'), /^AH03500: /);
  assert.match(msg('PROXY TCP4 1.2.3.4 1.2.3.4 x 2\r\n'), /^AH03501: .*port 'x'/);
  assert.match(msg('PROXY TCP4 1.2.3.400 1.2.3.4 1 2\r\n'), /^AH03502: .*family '2', host '1.2.3.400', and port '1'/);
  assert.match(msg('PROXY TCP4 1.2.3.4\r\n'), /^AH03497: .*no destination-address/);
  assert.match(msg('PROXY TCP4 ' + '1'.repeat(120)), /^AH10185: /);
  assert.equal(msg('GET /index.html HTTP/1.1\r\n'), '');
});

test('v2: TCP over IPv4 and IPv6, LOCAL, refused families and lengths', () => {
  const v4 = Buffer.concat([SIG, Buffer.from([0x21, 0x11, 0, 12, 192, 0, 2, 66, 127, 0, 0, 1, 0x01, 0xf0, 0, 80])]);
  assert.deepEqual(parseProxyHeader(Buffer.concat([v4, b('GET')])), { kind: 'done', ip: '192.0.2.66', port: 496, length: 28 });
  assert.deepEqual(parseProxyHeader(v4.subarray(0, 20)), { kind: 'more' });
  const a6 = Buffer.alloc(36);
  a6.writeUInt16BE(0x2001, 0); a6.writeUInt16BE(0x0db8, 2); a6[15] = 5; a6.writeUInt16BE(0x1234, 32);
  const r6 = parseProxyHeader(Buffer.concat([SIG, Buffer.from([0x21, 0x21, 0, 36]), a6]));
  assert.deepEqual(r6, { kind: 'done', ip: '2001:db8::5', port: 0x1234, length: 52 });
  assert.deepEqual(parseProxyHeader(Buffer.concat([SIG, Buffer.from([0x20, 0, 0, 0])])), { kind: 'done', ip: undefined, port: 0, length: 16 });
  const err = (x: Buffer): string => { const r = parseProxyHeader(x); return r.kind === 'error' ? r.message : r.kind; };
  assert.match(err(Buffer.concat([SIG, Buffer.from([0x21, 0x12, 0, 12]), Buffer.alloc(12)])), /^AH10183: .*unsupported protocol 12/);
  assert.match(err(Buffer.concat([SIG, Buffer.from([0x22, 0x11, 0, 12]), Buffer.alloc(12)])), /^AH03507: .*unsupported command 22/);
  assert.match(err(Buffer.concat([SIG, Buffer.from([0x21, 0x11, 0, 4]), Buffer.alloc(4)])), /^AH10597: .*address length 4 too short for TCPv4/);
  assert.match(err(Buffer.concat([SIG, Buffer.from([0x21, 0x11, 0x10, 0])])), /^AH10186: /);
});

test('inet_ntop for IPv6', () => {
  const a = (hex: string): Uint8Array => Buffer.from(hex, 'hex');
  assert.equal(ipv6ToString(a('00000000000000000000000000000001')), '::1');
  assert.equal(ipv6ToString(a('20010db8000000000001000000000001')), '2001:db8::1:0:0:1');
  assert.equal(ipv6ToString(a('00000000000000000000ffffc0000201')), '::ffff:192.0.2.1');
  assert.equal(ipv6ToString(a('20010db8000100020003000400050006')), '2001:db8:1:2:3:4:5:6');
});

test('fuzz: random and mutated headers never throw; a complete header is within the limits', () => {
  let seed = 11;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const seeds = [b('PROXY TCP4 192.0.2.10 127.0.0.1 4444 80\r\nGET'), Buffer.concat([SIG, Buffer.from([0x21, 0x11, 0, 12, 192, 0, 2, 66, 127, 0, 0, 1, 1, 2, 0, 80])])];
  for (let i = 0; i < 5000; i++) {
    let x: Buffer;
    if (rnd(3) === 0) {
      x = Buffer.alloc(rnd(200));
      for (let j = 0; j < x.length; j++) x[j] = rnd(256);
    } else {
      x = Buffer.from(seeds[rnd(2)]!);
      for (let k = rnd(4); k >= 0; k--) x[rnd(x.length)] = rnd(256);
      x = x.subarray(0, rnd(x.length + 1));
    }
    const r = parseProxyHeader(x);
    if (r.kind === 'done') {
      assert.ok(r.length <= x.length && r.length <= 232, `length ${r.length} of ${x.toString('hex')}`);
      assert.ok(r.port >= 0 && r.port <= 65535);
    }
  }
});
