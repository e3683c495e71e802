// mod_usertrack: CookieExpires' two syntaxes (httpd's prefix matching of type words, its
// errors), the cookie spotting expression and the Set-Cookie text for each style.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cookieHeader, cookieRegExp, netscapeDate, parseCookieExpires } from '../../../src/modules/metadata/mod_usertrack.js';

test('CookieExpires: a number of seconds, or [plus] {num type}* with type words matched on a prefix', () => {
  assert.equal(parseCookieExpires('120'), 120);
  assert.equal(parseCookieExpires('12 34'), 12);               // atol of the whole argument
  assert.equal(parseCookieExpires('60 seconds'), 60);
  assert.equal(parseCookieExpires('plus 1 hours 2 minutes 3 seconds'), 3723);
  assert.equal(parseCookieExpires('p 2 w'), 2 * 7 * 86400);    // any word starting with p
  assert.equal(parseCookieExpires('1 mo'), 30 * 86400);        // two letters tell months from minutes
  assert.equal(parseCookieExpires('1 Y 1 d'), 366 * 86400);
  assert.equal(parseCookieExpires(''), 0);
  assert.equal(parseCookieExpires('plus 3 m'), 'bad expires code, unrecognized type');
  assert.equal(parseCookieExpires('3 fortnights'), 'bad expires code, unrecognized type');
  assert.equal(parseCookieExpires('plus x days'), 'bad expires code, numeric value expected.');
  assert.equal(parseCookieExpires('plus 3'), 'bad expires code, missing <type>');
  assert.equal(parseCookieExpires('100 years'), -1141367296);  // time_t stored into a C int
});

test('the cookie is found as the first NAME= or after ; or , (spaces and tabs allowed); the name is literal', () => {
  const re = cookieRegExp('Apache');
  const val = (h: string): string | undefined => { const m = re.exec(h); return m === null ? undefined : m[2] ?? m[1]; };
  assert.equal(val('Apache=a.b'), 'a.b');
  assert.equal(val('x=1;\tApache=v; y'), 'v');
  assert.equal(val('x=1,Apache=w'), 'w');
  assert.equal(val('MyApache=no'), undefined);
  assert.equal(val('x=1; MyApache=no'), undefined);
  assert.equal(cookieRegExp('a.b').test('axb=1'), false);
  assert.equal(cookieRegExp('a.b').test('a.b=1'), true);
  assert.equal(cookieRegExp('(x').test('(x=1'), true);
});

test('Set-Cookie text for each style, with httpd\'s attribute order', () => {
  const base = { enabled: true, cookieName: 'n', cookieDomain: undefined, regexp: /x/, secure: false, httpOnly: false, sameSite: undefined } as const;
  const t = Date.UTC(2026, 10, 26, 19, 40, 0);
  assert.equal(netscapeDate(t), 'Thu, 26-Nov-26 19:40:00 GMT');
  assert.equal(cookieHeader({ ...base, style: 'unset' }, 0, 'v', t), 'n=v; path=/');
  assert.equal(cookieHeader({ ...base, style: 'netscape' }, 60, 'v', t), 'n=v; path=/; expires=Thu, 26-Nov-26 19:41:00 GMT');
  assert.equal(cookieHeader({ ...base, style: 'cookie', cookieDomain: '.a.b' }, 60, 'v', t), 'n=v; path=/; max-age=60; domain=.a.b');
  assert.equal(cookieHeader({ ...base, style: 'cookie2', cookieDomain: '.a.b', sameSite: 'SameSite=None', secure: true, httpOnly: true }, 0, 'v', t),
    'n=v; path=/; domain=.a.b; version=1; SameSite=None; Secure; HttpOnly');
});
