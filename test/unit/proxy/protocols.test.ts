// The FastCGI, SCGI and uwsgi codecs: the bytes httpd's modules write (checked against
// captures of Apache 2.4.71 talking to its backends where the layout matters), streaming
// readers fed whole, byte by byte and at random cuts, and bounded fuzz tests that must only
// ever give events/results or the readers' own errors.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  FcgiType, FCGI_HEADER_LEN, FCGI_PARAMS_RECORD_LIMIT, FCGI_RESPONDER, FCGI_KEEP_CONN, FcgiRecordReader, FcgiPairDecoder, HeaderEndScanner,
  encodeEndRequest, encodeHeader, encodeRequest, encodeStream, decodeHeader,
  type FcgiEvent,
} from '../../../src/proxy/protocols/fcgi.js';
import { encodeScgiHeader, ScgiHeaderReader } from '../../../src/proxy/protocols/scgi.js';
import { encodeUwsgiPacket, UwsgiPacketReader } from '../../../src/proxy/protocols/uwsgi.js';

// ---- reference encoders: the FastCGI records built piece by piece, plainly, to check what
// the one-buffer encodeRequest writes against.

/** A whole BEGIN_REQUEST record (header and its 8-byte body). */
function encodeBeginRequest(requestId: number, role: number, flags: number): Buffer {
  const b = Buffer.alloc(FCGI_HEADER_LEN * 2);
  encodeHeader(FcgiType.BEGIN_REQUEST, requestId, 8).copy(b, 0);
  b.writeUInt16BE(role, 8);
  b[10] = flags;
  return b;
}

/** A name or value length: one byte below 128, else four with the top bit set. */
function lengthBytes(n: number): Buffer {
  if (n < 128) return Buffer.from([n]);
  const b = Buffer.alloc(4);
  b.writeUInt32BE((n | 0x80000000) >>> 0, 0);
  return b;
}

/** One name-value pair, encoded. */
function encodePair(name: string, value: string): Buffer {
  return Buffer.concat([lengthBytes(name.length), lengthBytes(value.length), Buffer.from(name, 'latin1'), Buffer.from(value, 'latin1')]);
}

/** The environment as PARAMS records: as many whole pairs in each record as fit within
 *  `limit` bytes of content, a pair too big for any record left out (what was packed before
 *  it goes out first), then the empty record that ends the stream. */
function encodeParams(requestId: number, env: Iterable<readonly [string, string]>, limit = FCGI_PARAMS_RECORD_LIMIT): { records: Buffer[]; skipped: string[] } {
  const records: Buffer[] = [];
  const skipped: string[] = [];
  let batch: Buffer[] = [];
  let size = 0;
  const flush = (): void => {
    if (batch.length === 0) return;
    records.push(Buffer.concat([encodeHeader(FcgiType.PARAMS, requestId, size), ...batch]));
    batch = [];
    size = 0;
  };
  for (const [n, v] of env) {
    const pair = encodePair(n, v);
    if (pair.length > limit) { flush(); skipped.push(n); continue; }
    if (size + pair.length > limit) flush();
    batch.push(pair);
    size += pair.length;
  }
  flush();
  records.push(encodeHeader(FcgiType.PARAMS, requestId, 0));
  return { records, skipped };
}

let seed = 20261126;
const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };

/** Feeds `wire` in random pieces. */
function cuts(wire: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < wire.length;) {
    const n = 1 + rnd(Math.min(40, wire.length - at));
    out.push(wire.subarray(at, at + n));
    at += n;
  }
  return out;
}

/** The stream contents and END_REQUEST a reader finds, with content joined per type. */
function collect(events: FcgiEvent[]): { streams: Map<number, Buffer>; end?: { appStatus: number; protocolStatus: number }; records: number } {
  const streams = new Map<number, Buffer>();
  let end: { appStatus: number; protocolStatus: number } | undefined;
  let records = 0;
  for (const e of events) {
    if (e.kind === 'content') streams.set(e.type, Buffer.concat([streams.get(e.type) ?? Buffer.alloc(0), e.data]));
    else if (e.kind === 'end-request') end = { appStatus: e.appStatus, protocolStatus: e.protocolStatus };
    else if (e.kind === 'record-end') records++;
  }
  return end === undefined ? { streams, records } : { streams, end, records };
}

test('FastCGI: BEGIN_REQUEST as mod_proxy_fcgi sends it (responder, request id 1)', () => {
  assert.equal(encodeBeginRequest(1, FCGI_RESPONDER, 0).toString('hex'), '01010001000800000001000000000000');
  assert.equal(encodeBeginRequest(1, FCGI_RESPONDER, FCGI_KEEP_CONN).toString('hex'), '01010001000800000001010000000000');
  assert.deepEqual(decodeHeader(encodeHeader(FcgiType.STDOUT, 513, 65535, 7)),
    { version: 1, type: 6, requestId: 513, contentLength: 65535, paddingLength: 7 });
  assert.throws(() => encodeHeader(FcgiType.STDIN, 1, 65536), RangeError);
});

test('FastCGI: name-value pairs use 1-byte lengths below 128 and 4-byte lengths with the top bit', () => {
  assert.equal(encodePair('A', 'bc').toString('latin1'), '\x01\x02Abc');
  const long = 'v'.repeat(200);
  const p = encodePair('N', long);
  assert.equal(p.subarray(0, 5).toString('hex'), '01800000c8');
  assert.equal(p.length, 1 + 4 + 1 + 200);
  assert.deepEqual(new FcgiPairDecoder().push(p), [['N', long]]);
  // 127 is still one byte, 128 four.
  assert.equal(encodePair('x'.repeat(127), '').length, 1 + 1 + 127);
  assert.equal(encodePair('x'.repeat(128), '').length, 4 + 1 + 128);
});

test('FastCGI: PARAMS packs whole pairs into records of at most 16 KB and skips a pair no record can carry', () => {
  const env: [string, string][] = [['A', 'x'.repeat(10000)], ['B', 'y'.repeat(10000)], ['HUGE', 'z'.repeat(20000)], ['C', '1']];
  const { records, skipped } = encodeParams(1, env);
  assert.deepEqual(skipped, ['HUGE']);
  const lens = records.map((r) => decodeHeader(r).contentLength);
  // A alone (B would overflow), B alone (flushed before the huge one), C, then the empty record.
  assert.deepEqual(lens, [encodePair('A', 'x'.repeat(10000)).length, encodePair('B', 'y'.repeat(10000)).length, 4, 0]);
  for (const r of records) assert.equal(decodeHeader(r).type, FcgiType.PARAMS);
  const dec = new FcgiPairDecoder();
  const got = records.flatMap((r) => dec.push(r.subarray(8)));
  assert.deepEqual(got, env.filter(([n]) => n !== 'HUGE'));
  assert.ok(dec.clean);
  // An empty environment is just the closing record.
  assert.deepEqual(encodeParams(3, []).records.map((r) => r.toString('hex')), ['0104000300000000']);
});

test('FastCGI: STDIN splits at 65535 bytes; empty data is the closing record', () => {
  const data = Buffer.alloc(65535 * 2 + 10, 0x61);
  const recs = encodeStream(FcgiType.STDIN, 1, data);
  const heads = recs.filter((b) => b.length === 8).map((b) => decodeHeader(b).contentLength);
  assert.deepEqual(heads, [65535, 65535, 10]);
  assert.deepEqual(encodeStream(FcgiType.STDIN, 1, Buffer.alloc(0)).map((b) => b.toString('hex')), ['0105000100000000']);
});

test('FastCGI: the record reader finds the same records whole, byte by byte and at random cuts', () => {
  const body = Buffer.from('Status: 201 Created\r\nContent-Type: text/plain\r\n\r\n' + 'b'.repeat(70000), 'latin1');
  const wire = Buffer.concat([
    ...encodeStream(FcgiType.STDERR, 1, Buffer.from('PHP Warning: x')), // unpadded
    ...encodeStream(FcgiType.STDOUT, 1, body, 8), // padded to 8 as PHP-FPM does
    ...encodeStream(FcgiType.STDOUT, 1, Buffer.alloc(0)),
    encodeEndRequest(1, 3, 0),
  ]);
  const whole = collect(new FcgiRecordReader().push(wire));
  assert.deepEqual(whole.streams.get(FcgiType.STDOUT), body);
  assert.equal(whole.streams.get(FcgiType.STDERR)?.toString(), 'PHP Warning: x');
  assert.deepEqual(whole.end, { appStatus: 3, protocolStatus: 0 });
  assert.equal(whole.records, 5);
  const r1 = new FcgiRecordReader();
  const bytes: FcgiEvent[] = [];
  for (let i = 0; i < wire.length; i += 1) bytes.push(...r1.push(wire.subarray(i, i + 1)));
  assert.deepEqual(collect(bytes), whole);
  assert.ok(r1.atBoundary);
  for (let round = 0; round < 5; round++) {
    const r = new FcgiRecordReader();
    assert.deepEqual(collect(cuts(wire).flatMap((c) => r.push(c))), whole);
  }
});

test('FastCGI: content is sliced from the chunk it came in, not copied', () => {
  const wire = Buffer.concat(encodeStream(FcgiType.STDOUT, 1, Buffer.from('hello')));
  const ev = new FcgiRecordReader().push(wire).find((e) => e.kind === 'content');
  assert.ok(ev && ev.kind === 'content');
  assert.equal(ev.data.buffer, wire.buffer);
});

test('FastCGI: the end of a script header is found as httpd finds it', () => {
  const at = (...parts: string[]): number[] => {
    const s = new HeaderEndScanner();
    return parts.map((p) => s.scan(Buffer.from(p, 'latin1')));
  };
  assert.deepEqual(at('A: b\n\nbody'), [6]);
  assert.deepEqual(at('A: b\r\n\r\nbody'), [8]);
  assert.deepEqual(at('A: b\r', '\n\r', '\nx'), [-1, -1, 1]);
  // CR LF LF does not end it (httpd's state machine), a further LF does.
  assert.deepEqual(at('A: b\r\n\nx'), [-1]);
  assert.deepEqual(at('A: b\r\n\n\n'), [8]);
  // LF CR LF never does.
  assert.deepEqual(at('A: b\n\r\nx'), [-1]);
});

test('SCGI: the netstring header puts CONTENT_LENGTH and SCGI first and drops GATEWAY_INTERFACE', () => {
  const h = encodeScgiHeader([['GATEWAY_INTERFACE', 'CGI/1.1'], ['CONTENT_LENGTH', '99'], ['REQUEST_METHOD', 'POST'], ['SCGI', 'x'], ['E', '']], 5);
  const s = h.toString('latin1');
  assert.equal(s, '47:CONTENT_LENGTH\x005\x00SCGI\x001\x00REQUEST_METHOD\x00POST\x00E\x00\x00,');
  assert.equal(Number(s.slice(0, s.indexOf(':'))), s.length - s.indexOf(':') - 2);
  const head = new ScgiHeaderReader().push(Buffer.concat([h, Buffer.from('hello')]));
  assert.deepEqual(head?.env, [['CONTENT_LENGTH', '5'], ['SCGI', '1'], ['REQUEST_METHOD', 'POST'], ['E', '']]);
  assert.equal(head?.rest.toString(), 'hello');
  const r = new ScgiHeaderReader();
  let got;
  for (const c of cuts(h)) got = r.push(c) ?? got;
  assert.deepEqual(got?.env, head?.env);
});

test('SCGI: what is not an SCGI header is refused', () => {
  for (const bad of ['x:', '05:CONTENT_LENGTH\x000\x00,', '3:a\x00b,', '2:ab;', ':', '17:CONTENT_LENGTH\x00a\x00,', '5:A\x00b\x00\x00,']) {
    assert.throws(() => new ScgiHeaderReader().push(Buffer.from(bad, 'latin1')), SyntaxError, JSON.stringify(bad));
  }
  assert.throws(() => new ScgiHeaderReader(10).push(Buffer.from('11:')), SyntaxError);
});

test('uwsgi: the packet header is modifier1, a little-endian size, modifier2; variables little-endian', () => {
  const e = encodeUwsgiPacket([['A', 'bc'], ['REQUEST_METHOD', 'GET']]);
  assert.ok(e.ok);
  assert.equal(e.packet.toString('hex'), '001c0000' + '0100' + '41' + '0200' + '6263' + '0e00' + Buffer.from('REQUEST_METHOD').toString('hex') + '0300' + '474554');
  const p = new UwsgiPacketReader().push(Buffer.concat([e.packet, Buffer.from('body')]));
  assert.deepEqual(p?.env, [['A', 'bc'], ['REQUEST_METHOD', 'GET']]);
  assert.equal(p?.rest.toString(), 'body');
  const r = new UwsgiPacketReader();
  let got;
  for (const c of cuts(e.packet)) got = r.push(c) ?? got;
  assert.deepEqual(got?.env, p?.env);
  const big = encodeUwsgiPacket([['X', 'y'.repeat(65531)]]);
  assert.deepEqual(big, { ok: false, size: 65536 });
  assert.ok(encodeUwsgiPacket([['X', 'y'.repeat(65530)]]).ok);
});

test('fuzz: random bytes only give records or the readers\' own errors (bounded)', () => {
  const alphabet = Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 0x80, 0xff, 0x3a, 0x2c, 0x30, 0x31, 0x39, 0x41]);
  for (let round = 0; round < 3000; round++) {
    const len = rnd(96);
    const b = Buffer.alloc(len);
    for (let i = 0; i < len; i++) b[i] = rnd(3) === 0 ? rnd(256) : alphabet[rnd(alphabet.length)]!;
    // The FastCGI reader accepts any bytes (versions and ids are judged by its user), and
    // never returns more content than it was given.
    const fr = new FcgiRecordReader();
    let content = 0;
    for (const c of cuts(b)) for (const e of fr.push(c)) if (e.kind === 'content') content += e.data.length;
    assert.ok(content <= len);
    try { new FcgiPairDecoder(4096).push(b); } catch (e) { assert.ok(e instanceof RangeError, String(e)); }
    try { new ScgiHeaderReader(4096).push(b); } catch (e) { assert.ok(e instanceof SyntaxError, String(e)); }
    try { new UwsgiPacketReader().push(b); } catch (e) { assert.ok(e instanceof SyntaxError, String(e)); }
  }
});

test('fuzz: encode then decode gives the environment back, whatever its bytes (bounded)', () => {
  for (let round = 0; round < 300; round++) {
    const env: [string, string][] = [];
    const n = rnd(12);
    for (let i = 0; i < n; i++) {
      const name = 'N' + String(i) + 'x'.repeat(rnd(3) === 0 ? 130 + rnd(200) : rnd(10));
      let value = '';
      const vl = rnd(4) === 0 ? rnd(3000) : rnd(20);
      for (let j = 0; j < vl; j++) value += String.fromCharCode(1 + rnd(255));
      env.push([name, value]);
    }
    const { records } = encodeParams(1, env, 64 + rnd(4000));
    const dec = new FcgiPairDecoder();
    const rd = new FcgiRecordReader();
    const got: [string, string][] = [];
    for (const c of cuts(Buffer.concat(records))) for (const e of rd.push(c)) if (e.kind === 'content') got.push(...dec.push(e.data));
    const { skipped } = encodeParams(1, env, 64);
    assert.ok(got.length <= env.length && got.length >= env.length - skipped.length);
    for (const [k, v] of got) assert.equal(env.find(([n]) => n === k)?.[1], v);
    const scgiEnv = env.filter(([k]) => !k.includes('\0'));
    const s = new ScgiHeaderReader().push(encodeScgiHeader(scgiEnv.map(([k, v]) => [k, v.replace(/\0/g, '.')] as const), 0));
    assert.equal(s?.env.length, scgiEnv.length + 2);
    const u = encodeUwsgiPacket(env);
    if (u.ok) assert.deepEqual(new UwsgiPacketReader().push(u.packet)?.env, env);
  }
});

test('fuzz: encodeRequest gives the bytes of BEGIN_REQUEST, encodeParams and encodeStream one after the other (bounded)', () => {
  for (let round = 0; round < 300; round++) {
    const env = new Map<string, string>();
    const n = rnd(14);
    for (let i = 0; i < n; i++) {
      const name = 'N' + String(i) + 'x'.repeat(rnd(3) === 0 ? 130 + rnd(200) : rnd(30));
      let value = '';
      const vl = rnd(4) === 0 ? rnd(3000) : rnd(40);
      for (let j = 0; j < vl; j++) value += String.fromCharCode(1 + rnd(255));
      env.set(name, value);
    }
    const limit = 64 + rnd(4000);
    const flags = rnd(2) === 0 ? FCGI_KEEP_CONN : 0;
    const body = rnd(3) === 0 ? undefined : Buffer.alloc(rnd(3) === 0 ? rnd(200000) : rnd(50), 0x61 + rnd(26));
    const piece = 512 + rnd(90000);
    const params = encodeParams(7, env, limit);
    const stdin: Buffer[] = [];
    if (body !== undefined) {
      for (let at = 0; at < body.length; at += piece) stdin.push(...encodeStream(FcgiType.STDIN, 7, body.subarray(at, Math.min(body.length, at + piece))));
      stdin.push(...encodeStream(FcgiType.STDIN, 7, Buffer.alloc(0)));
    }
    const want = Buffer.concat([encodeBeginRequest(7, FCGI_RESPONDER, flags), ...params.records, ...stdin]);
    const got = encodeRequest(7, FCGI_RESPONDER, flags, env, limit, body, piece);
    assert.ok(got.data.equals(want), `round ${round}`);
    assert.deepEqual(got.skipped ?? [], params.skipped);
  }
});

test('fuzz: wouldEndRequest tells, chunk by chunk, whether the END_REQUEST record ends in it (bounded)', () => {
  for (let round = 0; round < 200; round++) {
    const wire = Buffer.concat([
      ...encodeStream(FcgiType.STDERR, 1, Buffer.alloc(rnd(30), 0x65)),
      ...encodeStream(FcgiType.STDOUT, 1, Buffer.alloc(rnd(300), 0x62), 1 + rnd(8)),
      ...encodeStream(FcgiType.STDOUT, 1, Buffer.alloc(0)),
      encodeEndRequest(1, rnd(4), 0),
    ]);
    const rd = new FcgiRecordReader();
    let told = 0;
    let ended = 0;
    for (const c of cuts(wire)) {
      const will = rd.wouldEndRequest(c);
      const ev = rd.push(c);
      const ends = ev.some((e) => e.kind === 'record-end' && e.header.type === FcgiType.END_REQUEST);
      assert.equal(will, ends);
      if (will) told++;
      if (ends) ended++;
    }
    assert.equal(told, 1);
    assert.equal(ended, 1);
  }
});
