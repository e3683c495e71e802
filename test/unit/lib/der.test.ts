// The DER reader (src/lib/der.ts) on a real certificate and CRL, and a bounded fuzz: it must
// never read past its input nor throw anything but DerError.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readTlv, children, oid, integerHex, DerError } from '../../../src/lib/der.js';
import { REPO } from '../../process/process-lib.js';

const FIX = path.join(REPO, 'test/fixtures/tls');

test('a certificate: its serial and signature algorithm', () => {
  const cert = new crypto.X509Certificate(fs.readFileSync(path.join(FIX, 'server.crt')));
  const der = cert.raw;
  const top = children(der, readTlv(der, 0));
  assert.equal(top.length, 3);
  const tbs = children(der, top[0]!);
  assert.equal(integerHex(der, tbs[1]!), cert.serialNumber.toUpperCase());
  assert.equal(oid(der, children(der, top[1]!)[0]!), '1.2.840.113549.1.1.11');
});

test('fuzz: truncations and random bytes (bounded)', () => {
  const der = new crypto.X509Certificate(fs.readFileSync(path.join(FIX, 'client.crt'))).raw;
  const walk = (b: Buffer): void => {
    const t = readTlv(b, 0);
    assert.ok(t.end <= b.length);
    if (t.tag & 0x20) for (const c of children(b, t)) { assert.ok(c.end <= t.end); if (c.tag === 0x06) oid(b, c); }
  };
  for (let n = 0; n < der.length; n += 7) {
    try { walk(der.subarray(0, n)); } catch (e) { assert.ok(e instanceof DerError, String(e)); }
  }
  let seed = 7;
  const rnd = (k: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % k; };
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.from(der.subarray(0, 40 + rnd(200)));
    for (let j = 0; j < 4; j++) b[rnd(b.length)] = rnd(256);
    try { walk(b); } catch (e) { assert.ok(e instanceof DerError, String(e)); }
  }
});
