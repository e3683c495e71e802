// mod_proxy_http2's Link reverse mapping (h2_proxy_link_reverse_map): the links' URIs through
// ProxyPassReverse (relative ones on the backend's h2c URL and back, absolute ones on its http
// URL moved onto it), parameters skipped as httpd's parser skips them, and a bounded fuzz run:
// any value comes back unchanged without a matching ProxyPassReverse, and the parser always ends.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Request } from '../../../src/server/request/request.js';
import { PROXYREQ_REVERSE, type ProxyDirConf, type ProxyReverseAlias } from '../../../src/proxy/api.js';
import { linkReverseMap } from '../../../src/modules/proxy/mod_proxy_http2.js';

function request(): Request {
  return {
    proxyreq: PROXYREQ_REVERSE,
    rt: { constructUrl: (_r: Request, u: string) => `http://front:8080${u}` },
    wantsLog: () => false,
  } as unknown as Request;
}

function dconf(raliases: ProxyReverseAlias[]): ProxyDirConf {
  return { raliases, interpolateEnv: false } as unknown as ProxyDirConf;
}

const REAL = 'http://b:81';
const PSU = 'h2c://b:81';
const mapped = dconf([{ real: 'h2c://b:81/', fake: '/c/', interpolate: false, balancer: undefined }]);

test('links through ProxyPassReverse', () => {
  const r = request();
  assert.equal(linkReverseMap(r, mapped, REAL, PSU, '</a.css>; rel=preload'), '</c/a.css>; rel=preload');
  assert.equal(linkReverseMap(r, mapped, REAL, PSU, '<http://b:81/n>;rel="next" ;title="x, y", <http://o/x>'), '<http://front:8080/c/n>;rel="next" ;title="x, y", <http://o/x>');
  assert.equal(linkReverseMap(r, mapped, REAL, PSU, '<h2c://b:81/z>'), '<http://front:8080/c/z>');
  // The parser stops at what is not a link: what follows is left alone.
  assert.equal(linkReverseMap(r, mapped, REAL, PSU, 'junk, </a>'), 'junk, </a>');
  assert.equal(linkReverseMap(r, mapped, REAL, PSU, '</a>; =x, </b>'), '</c/a>; =x, </b>');
  // Not a reverse proxy request: unchanged.
  const fwd = { ...request(), proxyreq: 1 } as unknown as Request;
  assert.equal(linkReverseMap(fwd, mapped, REAL, PSU, '</a>'), '</a>');
});

test('fuzz: unchanged without a mapping, always ends', () => {
  const r = request();
  const none = dconf([]);
  const alphabet = '<>;=",/ \tab:h2c.';
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let k = 0; k < 3000; k++) {
    let s = '';
    const len = rnd(40);
    for (let i = 0; i < len; i++) s += alphabet[rnd(alphabet.length)];
    assert.equal(linkReverseMap(r, none, REAL, PSU, s), s);
    assert.equal(typeof linkReverseMap(r, mapped, REAL, PSU, s), 'string');
  }
});
