// Protocol selection (httpd's ap_select_protocol, server/protocol.c) with Protocols and
// ProtocolsHonorOrder, the upgrade splice of mod_http2 (a bounded fuzz of its frame reader),
// and the Link fields server push follows.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCoreServerConfig, CORE_MODULE_INDEX } from '../../../src/server/core/config.js';
import { selectProtocol, isAllowedProtocol, type ProtocolSwitcher, type ProtocolConn } from '../../../src/server/http/protocols.js';
import { ServerRec } from '../../../src/server/server-rec.js';
import { PrefaceSplicer, PREFACE, literalBlock, stream1Headers } from '../../../src/modules/http2/mod_http2/upgrade.js';
import { preloadLinks, tlsAcceptable } from '../../../src/modules/http2/mod_http2/session.js';
import { makeCtx } from '../mappers/helpers.js';

function server(protocols: string[] | undefined, honor?: boolean): ServerRec {
  const s = new ServerRec(0, false, '/srv/plume/httpd.conf', 0);
  const c = createCoreServerConfig();
  c.protocols = protocols;
  c.protocolsHonorOrder = honor;
  s.moduleConfig[CORE_MODULE_INDEX] = c;
  return s;
}

/** A ctx whose protocol modules are `names`, proposing what the client offers of them. */
function ctxWith(names: string[]): ReturnType<typeof makeCtx>['ctx'] {
  const { ctx } = makeCtx();
  const sw: ProtocolSwitcher = {
    propose(_c, _r, _s, offers, proposals) { for (const n of names) if (offers === null || offers.includes(n)) proposals.push(n); },
    switchTo: () => false,
    direct: () => null,
  };
  ctx.getScratch('core:protocolSwitchers', () => [sw]);
  return ctx;
}

const TLS: ProtocolConn = { tls: { protocol: 'TLSv1.3', cipher: 'TLS_AES_128_GCM_SHA256' }, protocol: 'http/1.1' };

test('without Protocols only http/1.1 is chosen, and only when offered', () => {
  const ctx = ctxWith(['h2']);
  assert.equal(selectProtocol(ctx, TLS, null, server(undefined), ['h2', 'http/1.1']), 'http/1.1');
  assert.equal(selectProtocol(ctx, TLS, null, server(undefined), ['h2']), undefined);
  assert.equal(isAllowedProtocol(server(undefined), 'h2'), false);
  assert.equal(isAllowedProtocol(server(['h2', 'http/1.1']), 'h2'), true);
});

test('ProtocolsHonorOrder on (the default): the server order wins; off: the client order', () => {
  const ctx = ctxWith(['h2']);
  // The client prefers http/1.1; the server lists h2 first.
  assert.equal(selectProtocol(ctx, TLS, null, server(['h2', 'http/1.1']), ['http/1.1', 'h2']), 'h2');
  assert.equal(selectProtocol(ctx, TLS, null, server(['h2', 'http/1.1'], true), ['http/1.1', 'h2']), 'h2');
  assert.equal(selectProtocol(ctx, TLS, null, server(['h2', 'http/1.1'], false), ['http/1.1', 'h2']), 'http/1.1');
  assert.equal(selectProtocol(ctx, TLS, null, server(['http/1.1', 'h2'], true), ['h2', 'http/1.1']), 'http/1.1');
  assert.equal(selectProtocol(ctx, TLS, null, server(['http/1.1', 'h2'], false), ['h2', 'http/1.1']), 'h2');
  // A protocol not configured is never chosen, whatever the module proposes.
  assert.equal(selectProtocol(ctx, TLS, null, server(['http/1.1']), ['h2', 'http/1.1']), 'http/1.1');
  assert.equal(selectProtocol(ctxWith([]), TLS, null, server(['h2', 'http/1.1']), ['h2']), undefined);
});

test('H2ModernTLSOnly: TLS 1.2 needs an AEAD cipher with forward secrecy', () => {
  assert.equal(tlsAcceptable({ protocol: 'TLSv1.3', cipher: 'TLS_AES_256_GCM_SHA384' }), true);
  assert.equal(tlsAcceptable({ protocol: 'TLSv1.2', cipher: 'ECDHE-RSA-AES128-GCM-SHA256' }), true);
  assert.equal(tlsAcceptable({ protocol: 'TLSv1.2', cipher: 'AES128-SHA' }), false);
  assert.equal(tlsAcceptable({ protocol: 'TLSv1.1', cipher: 'ECDHE-RSA-AES128-GCM-SHA256' }), false);
});

test('Link fields: rel=preload targets are pushed, nopush ones are not', () => {
  assert.deepEqual(preloadLinks('</a.css>; rel=preload; as=style, </b.js>; rel="preload"; nopush, </c>; rel=next'), ['/a.css']);
  assert.deepEqual(preloadLinks('</x.png>;rel="prefetch preload"'), ['/x.png']);
  assert.deepEqual(preloadLinks('garbage, <'), []);
});

function settingsFrame(n: number): Buffer {
  const f = Buffer.alloc(9 + n * 6);
  f.writeUIntBE(n * 6, 0, 3);
  f[3] = 0x4;
  return f;
}

test('the upgrade splice: stream 1 HEADERS right after the preface and the first frame, whatever the chunking', () => {
  const insert = stream1Headers(literalBlock([[':method', 'GET'], [':path', '/'], ['x-long', 'v'.repeat(300)]]))!;
  assert.equal(insert.readUIntBE(0, 3), insert.length - 9);
  assert.equal(insert[3], 0x1);
  assert.equal(insert.readUInt32BE(5), 1);
  const after = Buffer.from('rest of the frames');
  const input = Buffer.concat([PREFACE, settingsFrame(2), after]);
  const want = Buffer.concat([PREFACE, settingsFrame(2), insert, after]);
  for (let cut = 0; cut <= input.length; cut++) {
    const sp = new PrefaceSplicer(insert);
    const out = [...sp.feed(input.subarray(0, cut)), ...sp.feed(input.subarray(cut)), ...sp.flush()];
    assert.deepEqual(Buffer.concat(out), want, `cut at ${cut}`);
  }
});

test('the upgrade splice, fuzzed: never throws, never loses or reorders input, inserts at most once', () => {
  let seed = 0x2f6b1a3;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) >>> 0; return seed % n; };
  const insert = Buffer.from('<INSERT>');
  for (let i = 0; i < 2000; i++) {
    const parts: Buffer[] = [];
    if (rnd(3) > 0) parts.push(rnd(4) === 0 ? PREFACE.subarray(0, rnd(24)) : PREFACE);
    const len = rnd(5) === 0 ? rnd(70000) : rnd(64);
    const hdr = Buffer.alloc(9);
    hdr.writeUIntBE(Math.min(len, 0xffffff), 0, 3);
    hdr[3] = rnd(10);
    parts.push(hdr.subarray(0, rnd(10)));
    const tail = Buffer.alloc(rnd(200));
    for (let k = 0; k < tail.length; k++) tail[k] = rnd(256);
    parts.push(tail);
    const input = Buffer.concat(parts);
    const sp = new PrefaceSplicer(insert);
    const out: Buffer[] = [];
    for (let at = 0; at < input.length;) {
      const n = 1 + rnd(40);
      out.push(...sp.feed(input.subarray(at, at + n)));
      at += n;
    }
    out.push(...sp.flush());
    const all = Buffer.concat(out);
    const k = all.indexOf(insert);
    const without = k < 0 ? all : Buffer.concat([all.subarray(0, k), all.subarray(k + insert.length)]);
    assert.deepEqual(without, input);
    if (k >= 0) assert.equal(all.indexOf(insert, k + 1), -1);
  }
});
