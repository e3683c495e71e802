// APR's subnet rules (apr_ipsubnet_create / apr_ipsubnet_test) as Require ip and Allow/Deny
// from use them; the accept/refuse verdicts and error kinds were checked against Apache 2.4.71
// (`Require ip` startup errors and `Allow from` matches).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  addrEqual, inDomain, parseAddr, parseIpv4, parseIpv6, parseSubnet, subnetErrorText, subnetTest,
} from '../../../src/lib/ipsubnet.js';
import { parseIpWord } from '../../../src/modules/aaa/mod_authz_host.js';
import { parseFrom } from '../../../src/modules/aaa/mod_access_compat.js';
import type { MethodMask } from '../../../src/modules/aaa/mod_authz_core.js';

function matches(subnet: string, ip: string): boolean {
  const slash = subnet.indexOf('/');
  const r = slash < 0 ? parseSubnet(subnet, undefined) : parseSubnet(subnet.slice(0, slash), subnet.slice(slash + 1));
  assert.ok(r.ok, `${subnet} parses`);
  const a = parseAddr(ip);
  assert.ok(a, `${ip} parses`);
  return subnetTest(r.subnet, a);
}

function error(subnet: string): string | undefined {
  const slash = subnet.indexOf('/');
  const r = slash < 0 ? parseSubnet(subnet, undefined) : parseSubnet(subnet.slice(0, slash), subnet.slice(slash + 1));
  return r.ok ? undefined : r.error;
}

test("APR's inet_pton4: four octets of at most 255, leading zeros allowed", () => {
  assert.equal(parseIpv4('127.0.0.1'), 0x7f000001);
  assert.equal(parseIpv4('255.255.255.255'), 0xffffffff);
  assert.equal(parseIpv4('127.0.0.01'), 0x7f000001);
  assert.equal(parseIpv4('010.0.0.0001'), 0x0a000001);
  for (const bad of ['127.0.0', '1.2.3.4.5', '1.2.3.256', '1..2.3', '', ' 1.2.3.4', '1.2.3.4 ', '1.2.3.4.']) {
    assert.equal(parseIpv4(bad), undefined, bad);
  }
});

test("APR's inet_pton6 (BIND 4.9.4): what Apache 2.4.71 accepts in Require ip", () => {
  const hex = (s: string): string | undefined => {
    const w = parseIpv6(s);
    return w ? [...w].map((x) => x.toString(16).padStart(8, '0')).join('') : undefined;
  };
  assert.equal(hex('::1'), '00000000000000000000000000000001');
  assert.equal(hex('::1.2.3.4'), '00000000000000000000000001020304', 'IPv4-compatible, not mapped');
  assert.equal(hex('::ffff:1.2.3.4'), '00000000000000000000ffff01020304');
  assert.equal(hex('1:2:3:4:5:6:1.2.3.4'), '00010002000300040005000601020304');
  assert.equal(hex('00000::1'), '00000000000000000000000000000001', 'leading zeros while the group fits 16 bits');
  assert.equal(hex('ABCD::ef'), 'abcd00000000000000000000000000ef');
  assert.notEqual(hex('::1:'), undefined, 'a trailing colon after :: is accepted');
  assert.notEqual(hex('::1.2.3.04'), undefined);
  for (const bad of ['1:', ':1', ':::', '1::2::3', '10000::1', '1:2:3:4:5:6:7:1.2.3.4', '::1.2.3.4:5', '1.2.3.4::', '[::1]', 'fe80::1%lo', '1:2:3:4:5:6:7:8:9']) {
    assert.equal(hex(bad), undefined, bad);
  }
});

test('full, partial, CIDR and netmask IPv4 subnets', () => {
  assert.ok(matches('127.0.0.1', '127.0.0.1'));
  assert.ok(!matches('127.0.0.1', '127.0.0.2'));
  assert.ok(matches('127', '127.9.8.7'));
  assert.ok(matches('127.0', '127.0.200.1'));
  assert.ok(!matches('127.1', '127.0.0.1'));
  assert.ok(matches('127.', '127.0.0.1'), 'a trailing dot is allowed');
  assert.ok(matches('127.0.0.01', '127.0.0.1'), 'leading zeros are allowed');
  assert.ok(matches('10.0.0.0/255.255.255.000', '10.0.0.9'));
  assert.ok(matches('127.0.0.0/31', '127.0.0.1'));
  assert.ok(!matches('127.0.0.0/31', '127.0.0.2'));
  assert.ok(matches('127.0.0.2/31', '127.0.0.3'), 'host bits beyond the mask are cleared');
  assert.ok(matches('127.0.0.0/255.255.255.254', '127.0.0.1'));
  assert.ok(!matches('127.0.0.0/255.255.255.254', '127.0.0.2'));
  assert.ok(matches('10.0.0.0/255.0.255.0', '10.7.0.9'), 'non-contiguous netmasks are taken as written');
  assert.ok(matches('0.0.0.0/1', '127.255.255.255'));
  assert.ok(matches('127.0.0.1/+32', '127.0.0.1'), 'strtol accepts a sign');
});

test('IPv6 subnets, and IPv4-mapped clients matching IPv4 subnets', () => {
  assert.ok(matches('::1', '::1'));
  assert.ok(matches('2001:db8::/32', '2001:db8:1::5'));
  assert.ok(!matches('2001:db8::/32', '2001:db9::1'));
  assert.ok(matches('fe80::/10', 'febf::1'));
  assert.ok(!matches('::1', '127.0.0.1'));
  assert.ok(matches('127.0.0.0/8', '::ffff:127.0.0.9'));
  assert.ok(!matches('::1', '::ffff:0.0.0.1'));
});

test('what apr_ipsubnet_create refuses, and how', () => {
  assert.equal(error('example.com'), 'EINVAL');
  assert.equal(error(''), 'EINVAL');
  assert.equal(error('127.0.0.300'), 'EBADIP');
  assert.equal(error('1.2.3.4.5'), 'EBADIP');
  assert.equal(error('.'), 'EBADIP');
  assert.equal(error('::ffff:127.0.0.1'), 'EBADIP');
  assert.equal(error('1:2'), 'EBADIP');
  assert.equal(error('0/0'), 'EBADIP', 'a partial address with a mask');
  assert.equal(error('::1/0'), 'EBADMASK');
  assert.equal(error('1.2.3.4/-1'), 'EBADMASK');
  assert.equal(error('fe80::1%eth0'), 'EBADIP');
  assert.equal(error('10.1/16'), 'EBADIP', 'a partial address takes no mask');
  assert.equal(error('10.0.0.0/33'), 'EBADMASK');
  assert.equal(error('10.0.0.0/0'), 'EBADMASK');
  assert.equal(error('10.0.0.0/'), 'EBADMASK');
  assert.equal(error('10.0.0.0/8x'), 'EBADMASK');
  assert.equal(error('2001:db8::/129'), 'EBADMASK');
  assert.equal(error('2001:db8::/255.255.0.0'), 'EBADMASK');
  assert.equal(subnetErrorText('EBADIP'), 'The specified IP address is invalid.');
  assert.equal(subnetErrorText('EBADMASK'), 'The specified network mask is invalid.');
});

test('Require ip word errors are worded as httpd words them', () => {
  assert.equal(parseIpWord('example.com'), "ip address 'example.com' appears to be invalid");
  assert.equal(parseIpWord('10.0.0.0/33'), "ip address '10.0.0.0/33' appears to be invalid: The specified network mask is invalid.");
  assert.equal(parseIpWord('127.0.0.300'), "ip address '127.0.0.300' appears to be invalid: The specified IP address is invalid.");
  assert.equal(typeof parseIpWord('10.1'), 'object');
});

test('Allow/Deny from: the kinds of `from` words and their errors', () => {
  const all: MethodMask = { except: true, methods: new Set() };
  const kind = (w: string): string => {
    const r = parseFrom(w, all);
    return typeof r === 'string' ? `error: ${r}` : r.kind;
  };
  assert.equal(kind('all'), 'all');
  assert.equal(kind('ALL'), 'all');
  assert.equal(kind('env=FOO'), 'env');
  assert.equal(kind('Env=!FOO'), 'nenv');
  assert.equal(kind('10.1'), 'ip');
  assert.equal(kind('10.0.0.0/8'), 'ip');
  assert.equal(kind('example.com'), 'host');
  assert.equal(kind('.example.com'), 'host');
  assert.equal(kind('example.com/8'), 'error: An IP address was expected');
  assert.equal(kind('10.0.0.0/40'), 'error: The specified network mask is invalid.');
  assert.equal(kind('10.0.0.256'), 'error: The specified IP address is invalid.');
  assert.equal(kind('foo#bar'), 'error: No comments are allowed here');
});

test('in_domain matches whole labels, case-insensitively', () => {
  assert.ok(inDomain('example.com', 'www.example.com'));
  assert.ok(inDomain('example.com', 'EXAMPLE.COM'));
  assert.ok(inDomain('.example.com', 'www.example.com'));
  assert.ok(!inDomain('.example.com', 'example.com'));
  assert.ok(!inDomain('ample.com', 'www.example.com'));
  assert.ok(inDomain('.com', 'x.com'));
  assert.ok(!inDomain('www.example.com', 'example.com'));
});

test('addresses compare across the IPv4-mapped form', () => {
  assert.ok(addrEqual(parseAddr('127.0.0.1')!, parseAddr('::ffff:127.0.0.1')!));
  assert.ok(!addrEqual(parseAddr('127.0.0.1')!, parseAddr('::1')!));
  assert.equal(parseAddr('not an address'), undefined);
});
