// The OCSP pieces (src/lib/ocsp.ts) against OpenSSL's own: requests plume builds are read by
// `openssl ocsp -reqin`, the responses `openssl ocsp` signs for the test CA are parsed,
// verified and looked up; times checked as OCSP_check_validity does; the parser fuzzed.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  certIdFor, checkNonce, checkValidity, encodeRequest, encodeTryLater, findStatus, nonceExtension, parseResponse,
  verifyBasic, DerError, RESPONSE_SUCCESSFUL, RESPONSE_TRYLATER, STATUS_GOOD, STATUS_REVOKED, STATUS_UNKNOWN,
} from '../../../src/lib/ocsp.js';

const FIX = path.join(process.cwd(), 'test', 'fixtures', 'tls');
const cert = (n: string): crypto.X509Certificate => new crypto.X509Certificate(fs.readFileSync(path.join(FIX, `${n}.crt`)));
const ca = cert('ca');
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

/** `openssl ocsp` answering a request file as the test CA's responder. */
function respond(req: Buffer): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-ocsp-'));
  try {
    fs.writeFileSync(path.join(dir, 'req.der'), req);
    const r = spawnSync('openssl', ['ocsp', '-index', path.join(FIX, 'index.txt'), '-CA', path.join(FIX, 'ca.crt'),
      '-rsigner', path.join(FIX, 'ca.crt'), '-rkey', path.join(FIX, 'ca.key'), '-reqin', path.join(dir, 'req.der'),
      '-respout', path.join(dir, 'resp.der'), '-nmin', '5']);
    assert.equal(r.status, 0, r.stderr.toString());
    return fs.readFileSync(path.join(dir, 'resp.der'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('a request OpenSSL reads: the CertID and the nonce', { skip: !hasOpenssl && 'openssl not installed' }, () => {
  const id = certIdFor(cert('client'), ca);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-ocsp-'));
  try {
    fs.writeFileSync(path.join(dir, 'req.der'), encodeRequest([id], [nonceExtension()]));
    const r = spawnSync('openssl', ['ocsp', '-reqin', path.join(dir, 'req.der'), '-req_text']);
    const text = r.stdout.toString();
    assert.match(text, /Hash Algorithm: sha1/);
    assert.match(text, /Serial Number: 1003/);
    assert.match(text, /OCSP Nonce:/);
    assert.match(text, new RegExp(`Issuer Name Hash: ${id.nameHash.toString('hex').toUpperCase()}`));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('responses from openssl ocsp: good, revoked, unknown; signature, signer and nonce checked', { skip: !hasOpenssl && 'openssl not installed' }, () => {
  const cases: [string, number][] = [['client', STATUS_GOOD], ['revoked', STATUS_REVOKED], ['server-ec', STATUS_UNKNOWN]];
  for (const [name, want] of cases) {
    const id = certIdFor(cert(name), ca);
    const exts = [nonceExtension()];
    const rsp = parseResponse(respond(encodeRequest([id], exts)));
    assert.equal(rsp.status, RESPONSE_SUCCESSFUL);
    assert.ok(rsp.basic !== null);
    const single = findStatus(rsp.basic, id);
    assert.equal(single?.status, want, name);
    if (want === STATUS_REVOKED) assert.equal(single?.reason, 1);
    assert.equal(checkNonce(exts, rsp.basic), 1);
    assert.equal(checkNonce([nonceExtension()], rsp.basic), 0);
    assert.equal(verifyBasic(rsp.basic, { other: [], trustOther: false, store: [ca] }), undefined);
    assert.equal(verifyBasic(rsp.basic, { other: [], trustOther: false, store: [cert('other-ca')] }), 'certificate verify error');
    assert.equal(verifyBasic(rsp.basic, { other: [ca], trustOther: true, store: [] }), undefined);
    assert.equal(checkValidity(single!, 300, -1), undefined);
  }
  // A response tampered with fails its signature.
  const id = certIdFor(cert('client'), ca);
  const der = respond(encodeRequest([id]));
  const basic = parseResponse(der).basic!;
  const bad = { ...basic, signature: Buffer.from(basic.signature.map((b, i) => (i === 5 ? b ^ 1 : b))) };
  assert.equal(verifyBasic(bad, { other: [], trustOther: false, store: [ca] }), 'signature failure');
  assert.equal(checkNonce([], basic), 2);
});

test('OCSP_check_validity: skew, maximum age, nextUpdate', () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0);
  const id = { nameHash: Buffer.alloc(20), keyHash: Buffer.alloc(20), serial: Buffer.from([1]) };
  const r = (thisOff: number, nextOff: number | null) => ({
    id, status: STATUS_GOOD, reason: -1, thisUpdate: new Date(now + thisOff * 1000), nextUpdate: nextOff === null ? null : new Date(now + nextOff * 1000),
  });
  assert.equal(checkValidity(r(-10, 3600), 300, -1, now), undefined);
  assert.equal(checkValidity(r(400, null), 300, -1, now), 'status not yet valid');
  assert.equal(checkValidity(r(200, null), 300, -1, now), undefined);
  assert.equal(checkValidity(r(-700, null), 300, 600, now), 'status too old');
  assert.equal(checkValidity(r(-7200, -400), 300, -1, now), 'status expired');
  assert.equal(checkValidity(r(-7200, -200), 300, -1, now), undefined);
});

test('tryLater, and the parser fuzzed (bounded)', { skip: !hasOpenssl && 'openssl not installed' }, () => {
  const t = parseResponse(encodeTryLater());
  assert.equal(t.status, RESPONSE_TRYLATER);
  assert.equal(t.basic, null);
  const der = respond(encodeRequest([certIdFor(cert('client'), ca)]));
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let i = 0; i < 2000; i++) {
    const b = Buffer.from(der);
    const k = 1 + rnd(4);
    for (let j = 0; j < k; j++) b[rnd(b.length)] = rnd(256);
    const cut = rnd(3) === 0 ? b.subarray(0, rnd(b.length)) : b;
    try {
      parseResponse(cut);
    } catch (e) {
      assert.ok(e instanceof DerError, String(e));
    }
  }
});

test('responder URLs as apr_uri_parse reads them, and the reader fuzzed (bounded)', async () => {
  const { parseUri } = await import('../../../src/modules/ssl/mod_ssl/ocsp.js');
  assert.deepEqual(parseUri('http://127.0.0.1:8080/ocsp?x=1'), { scheme: 'http', hostname: '127.0.0.1', port: 8080, hostinfo: '127.0.0.1:8080', pathQuery: '/ocsp?x=1' });
  assert.equal(parseUri('http://ocsp.example.com')?.port, 80);
  assert.equal(parseUri('http://ocsp.example.com')?.pathQuery, '/');
  assert.equal(parseUri('http://[::1]:81/')?.hostname, '::1');
  assert.equal(parseUri('http://user@h:82/')?.hostname, 'h');
  assert.equal(parseUri('http://h:port/'), null);
  assert.equal(parseUri('http:///path'), null);
  assert.equal(parseUri('no-scheme'), null);
  let seed = 7;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const alphabet = 'htp:/[]@?#.:0123456789abcxyz%';
  for (let i = 0; i < 3000; i++) {
    let u = rnd(2) === 0 ? 'http://' : '';
    for (let j = rnd(24); j > 0; j--) u += alphabet[rnd(alphabet.length)];
    const p = parseUri(u);
    if (p !== null) {
      assert.ok(p.hostname !== '' && p.port >= 0 && p.port <= 65535, u);
      assert.ok(p.pathQuery.startsWith('/') || p.pathQuery.startsWith('?'), u);
    }
  }
});

test('the responder client against answers that are not OCSP: httpd\'s log lines, no response', async () => {
  const { dispatch, parseUri } = await import('../../../src/modules/ssl/mod_ssl/ocsp.js');
  const net = await import('node:net');
  const answers = [
    'HTTP/1.0 500 Internal Server Error\r\n\r\n',
    'HTTP/1.0 200 OK\r\nContent-Type: application/ocsp-response\r\n\r\nnot DER at all',
    'HTTP/1.0 200 OK\r\nContent-Type: application/ocsp-response\r\n',
    '',
  ];
  const want = [/AH01980: bad response from OCSP server: 500 Internal Server Error/, /AH01988: failed to decode OCSP response data/,
    /AH01983: could not read response header from OCSP server/, /AH02321: empty response from OCSP server/];
  for (const [i, a] of answers.entries()) {
    let got = '';
    const srv = net.createServer((s) => { s.once('data', () => s.end(a)); });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (srv.address() as import('node:net').AddressInfo).port;
      const r = await dispatch(parseUri(`http://127.0.0.1:${port}/`)!, undefined, 5000, Buffer.from('x'), (_l, m) => { got += m + '\n'; });
      assert.equal(r, null);
      assert.match(got, want[i]!);
    } finally {
      srv.close();
    }
  }
});
