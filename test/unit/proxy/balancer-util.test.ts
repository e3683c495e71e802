// mod_proxy_balancer's small parsers as httpd's: the sticky route in the URL (get_path_param,
// with and without ';' as a delimiter) and in the Cookie header (get_cookie_param), and
// apr_strfsize's byte counts on the balancer-manager page.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { getPathParam, getCookieParam } from '../../../src/modules/proxy/mod_proxy_balancer/index.js';
import { strfsize } from '../../../src/modules/proxy/mod_proxy_balancer/manager.js';

test('get_path_param: the value after name= up to the next delimiter', () => {
  assert.equal(getPathParam('balancer://app/x?jsessionid=abc.one&y=1', 'jsessionid', false), 'abc.one');
  assert.equal(getPathParam('balancer://app/x;jsessionid=abc.two', 'jsessionid', false), 'abc.two');
  assert.equal(getPathParam('balancer://app/x;jsessionid=abc.two?q', 'jsessionid', true), 'abc.two');
  assert.equal(getPathParam('balancer://app/x;jsessionid=abc;x=y', 'jsessionid', false), 'abc;x=y');
  assert.equal(getPathParam('balancer://app/jsessionid/x?jsessionid=r', 'jsessionid', false), 'r', 'a later occurrence followed by =');
  assert.equal(getPathParam('balancer://app/x?jsessionid=', 'jsessionid', false), undefined);
  assert.equal(getPathParam('balancer://app/x', '', false), undefined);
});

test('get_cookie_param: a cookie at the start or after ; , or a blank', () => {
  assert.equal(getCookieParam('ROUTEID=.one', 'ROUTEID'), '.one');
  assert.equal(getCookieParam('a=1; ROUTEID=x.two; b=2', 'ROUTEID'), 'x.two');
  assert.equal(getCookieParam('a=1,ROUTEID=x.three', 'ROUTEID'), 'x.three');
  assert.equal(getCookieParam('XROUTEID=no; ROUTEID = yes', 'ROUTEID'), ' yes', 'blanks before = skipped, not after (httpd)');
  assert.equal(getCookieParam('XROUTEID=no', 'ROUTEID'), undefined);
  assert.equal(getCookieParam(undefined, 'ROUTEID'), undefined);
});

test('apr_strfsize', () => {
  assert.equal(strfsize(0), '  0 ');
  assert.equal(strfsize(519), '519 ');
  assert.equal(strfsize(972), '972 ');
  assert.equal(strfsize(973), '1.0K');
  assert.equal(strfsize(1536), '1.5K');
  assert.equal(strfsize(10 * 1024), ' 10K');
  assert.equal(strfsize(5 * 1024 * 1024), '5.0M');
  assert.equal(strfsize(-1), '  - ');
});
