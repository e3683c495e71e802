// The AuthLDAPURL parser (apr_ldap_url_parse's reading of RFC 2255 URLs), the filter
// mod_authnz_ldap builds and ldap-attribute's pairs: known answers, APR's error reasons
// (the same texts the ldap/url-bad-* conformance cases recorded from Apache), and a bounded fuzz.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hexUnescape, parseLdapUrl, LDAP_SCOPE_BASE, LDAP_SCOPE_DEFAULT, LDAP_SCOPE_ONELEVEL, LDAP_SCOPE_SUBTREE } from '../../../src/modules/ldap/ldap-url.js';
import { attributePairs, ldapFilterForClient } from '../../../src/modules/aaa/mod_authnz_ldap.js';
import { randomString, seededRandom } from '../../fuzz.js';

function ok(url: string) {
  const r = parseLdapUrl(url);
  assert.ok(r.ok, `${url}: ${r.ok ? '' : r.reason}`);
  return r.url;
}

test('ldap url: host, port, base DN, attributes, scope, filter', () => {
  const u = ok('ldap://ldap.example.com:1389/ou=People,%20o=Airius?uid,cn?one?(posixid=*)');
  assert.equal(u.scheme, 'ldap');
  assert.equal(u.host, 'ldap.example.com');
  assert.equal(u.port, 1389);
  assert.equal(u.dn, 'ou=People, o=Airius');
  assert.deepEqual(u.attrs, ['uid', 'cn']);
  assert.equal(u.scope, LDAP_SCOPE_ONELEVEL);
  assert.equal(u.filter, '(posixid=*)');
});

test('ldap url: defaults and partial forms', () => {
  const a = ok('ldap://host');
  assert.equal(a.port, 0);
  assert.equal(a.dn, undefined);
  assert.equal(a.scope, LDAP_SCOPE_DEFAULT);
  const b = ok('ldaps://h/dc=x??base');
  assert.equal(b.scheme, 'ldaps');
  assert.equal(b.attrs, undefined);
  assert.equal(b.scope, LDAP_SCOPE_BASE);
  assert.equal(ok('LDAP://h/dc=x??SubTree').scope, LDAP_SCOPE_SUBTREE);
  assert.equal(ok('ldap:///dc=x').host, undefined);
  assert.equal(ok('ldap://h1 h2:389/dc=x').host, 'h1 h2');
  assert.equal(ok('<URL:ldap://h/dc=x>').dn, 'dc=x');
  assert.equal(ok('ldap://[::1]:636/dc=x').host, '::1');
  assert.equal(ok('ldap://[::1]:636/dc=x').port, 636);
  assert.deepEqual(ok('ldap://h/dc=x????!bindname=x,e').exts, ['bindname=x', 'e']);
  assert.equal(ok('ldap://h/dc=x????!bindname=x,e').critExts, 1);
});

test('ldap url: APR reasons', () => {
  const reason = (u: string) => { const r = parseLdapUrl(u); assert.ok(!r.ok, u); return r.reason; };
  assert.equal(reason('http://x/dc=a'), 'The scheme was not recognised as a valid LDAP URL scheme.');
  assert.equal(reason('ldap://x/dc=a?uid?deep'), 'Bad scope encountered while parsing LDAP URL.');
  assert.equal(reason('<ldap://x/dc=a'), 'Bad enclosure error while parsing LDAP URL.');
  assert.equal(reason('ldap://x:/dc=a'), 'Bad URL encountered while parsing LDAP URL.');
  assert.equal(reason('ldap://[::1/dc=a'), 'Bad LDAP URL while parsing IPV6 syntax.');
  assert.equal(reason('ldap://x/dc=a?,,'), 'Bad attributes encountered while parsing LDAP URL.');
  assert.equal(reason('ldap://x/dc=a???%00'), 'Bad filter encountered while parsing LDAP URL.');
  assert.equal(reason('ldap://x/dc=a????!'), 'Bad extensions encountered while parsing LDAP URL.');
  assert.equal(reason('ldap://x/dc=a????e?f'), 'Bad URL encountered while parsing LDAP URL.');
});

test('hex unescape', () => {
  assert.equal(hexUnescape('a%20b%2Ac'), 'a b*c');
  assert.equal(hexUnescape('100%'), '100');
});

test('filters for the LDAP client: OpenLDAP\'s "\\*" becomes "\\2a"', () => {
  assert.equal(ldapFilterForClient('(uid=a\\*b)'), '(uid=a\\2ab)');
  assert.equal(ldapFilterForClient('(uid=a\\(\\)\\\\)'), '(uid=a\\28\\29\\5c)');
  assert.equal(ldapFilterForClient('(cn=x\\2a)'), '(cn=x\\2a)');
});

test('ldap-attribute pairs', () => {
  assert.deepEqual(attributePairs('employeeType=staff cn="Bob Brown"'), [['employeeType', 'staff'], ['cn', 'Bob Brown']]);
  assert.deepEqual(attributePairs('a==b'), [['a', 'b']]);
  assert.deepEqual(attributePairs('lonely'), [['lonely', '']]);
});

test('ldap url: random input never throws and parses to consistent parts (fuzz, bounded)', () => {
  const rnd = seededRandom(2255);
  const alphabet = 'ldapsi:/?,=%20<>[]!()*&| hostUuRrLl0123456789';
  const prefixes = ['ldap://', 'ldaps://', 'ldapi://', '<ldap://', 'URL:ldap://', ''];
  for (let i = 0; i < 5000; i++) {
    const s = prefixes[rnd(prefixes.length)]! + randomString(rnd, alphabet, 40);
    const r = parseLdapUrl(s);
    if (r.ok) {
      assert.ok(Number.isInteger(r.url.port), s);
      assert.ok([LDAP_SCOPE_DEFAULT, LDAP_SCOPE_BASE, LDAP_SCOPE_ONELEVEL, LDAP_SCOPE_SUBTREE].includes(r.url.scope), s);
      assert.ok(r.url.attrs === undefined || r.url.attrs.length > 0, s);
      assert.ok(r.url.filter === undefined || r.url.filter !== '', s);
    } else {
      assert.equal(typeof r.reason, 'string');
    }
    attributePairs(s);
    ldapFilterForClient(s);
  }
});
