// The BYTERANGE filter. apache-ranges.ts holds responses measured on Apache 2.4.71 (status,
// Content-Range, Content-Length, body) for hand-picked and pseudo-random Range headers and
// for the MaxRanges family; the other expectations below were measured there too.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  parseByteRanges, needsByterange, setAcceptRanges, byterangeFilter, newMultipartBoundary,
  multipartBoundary, effectiveLimit,
} from '../../../src/server/http/byterange.js';
import { instantiate, linkChain, EOS, type Brigade, type FilterInstance, type FilterSpec } from '../../../src/server/filters.js';
import { RANGE_CASES, LIMIT_CASES, LIMIT_DIRS } from './apache-ranges.js';
import {
  makeRequest, serveFile, header, bodyOf, H_TXT, A_TXT, H_ETAG, A_ETAG, TEST_BOUNDARY, FAKE_RT,
} from './helpers.js';

const fileFor = (p: string): { content: Buffer; etag: string } => (p === '/h.txt' ? { content: H_TXT, etag: H_ETAG } : { content: A_TXT, etag: A_ETAG });

test('every measured Range header gets Apache\'s response (320 cases)', () => {
  const failures: string[] = [];
  for (const c of RANGE_CASES) {
    const s = serveFile(makeRequest({ headers: [['Range', c.range]] }), { ...fileFor(c.path), path: c.path });
    const problems: string[] = [];
    if (s.status !== c.status) problems.push(`status ${s.status} != ${c.status}`);
    if (c.status !== 416) {
      if (header(s, 'Content-Range') !== c.cr) problems.push(`Content-Range ${header(s, 'Content-Range')} != ${c.cr}`);
      // Apache's chunked responses carry no Content-Length; neither may ours.
      if (header(s, 'Content-Length') !== c.cl) problems.push(`Content-Length ${header(s, 'Content-Length')} != ${c.cl}`);
      const body = bodyOf(s.out).toString('latin1').split(TEST_BOUNDARY).join('@B@');
      if (c.body !== undefined && body !== c.body) problems.push(`body ${JSON.stringify(body)} != ${JSON.stringify(c.body)}`);
      if (c.bodySha1 !== undefined) {
        const sha = createHash('sha1').update(Buffer.from(body, 'latin1')).digest('hex');
        if (body.length !== c.bodyLength || sha !== c.bodySha1) problems.push(`body length ${body.length} != ${c.bodyLength} or digest differs`);
      }
      if (c.status === 206 && c.cr === undefined) {
        if (s.contentType !== `multipart/byteranges; boundary=${TEST_BOUNDARY}`) problems.push(`content type ${s.contentType}`);
      } else if (s.contentType !== 'text/plain') problems.push(`content type ${s.contentType}`);
    }
    if (problems.length) failures.push(`${c.path} ${c.range}: ${problems.join('; ')}`);
  }
  assert.deepEqual(failures, []);
});

test('MaxRanges, MaxRangeOverlaps, MaxRangeReversals — measured', () => {
  const failures: string[] = [];
  for (const c of LIMIT_CASES) {
    const s = serveFile(makeRequest({ headers: [['Range', c.range]], dir: LIMIT_DIRS[c.dir] }), { content: H_TXT, etag: H_ETAG });
    if (s.status !== c.status || header(s, 'Content-Range') !== c.cr) {
      failures.push(`${c.dir} ${c.range}: want ${c.status} ${c.cr ?? ''}, got ${s.status} ${header(s, 'Content-Range') ?? ''}`);
    }
  }
  assert.deepEqual(failures, []);
  // "MaxRanges none" still answers 416 to an unsatisfiable range (measured).
  assert.equal(serveFile(makeRequest({ headers: [['Range', 'bytes=20-']], dir: { maxRanges: 0 } }), { content: H_TXT }).status, 416);
  assert.equal(effectiveLimit(undefined, 200), 200);
  assert.equal(effectiveLimit(-2, 200), 200);
  assert.equal(effectiveLimit(-1, 200), -1);
  assert.equal(effectiveLimit(0, 200), 0);
});

test('Accept-Ranges: "none" under MaxRanges none, else "bytes" — measured', () => {
  const r = makeRequest();
  setAcceptRanges(r, 0);
  assert.equal(r.headersOut.get('Accept-Ranges'), 'none');
  setAcceptRanges(r, undefined);
  assert.equal(r.headersOut.get('Accept-Ranges'), 'bytes');
  setAcceptRanges(r, -1);
  assert.equal(r.headersOut.get('Accept-Ranges'), 'bytes');
  const d = makeRequest({ dir: { maxRanges: 0 } });
  setAcceptRanges(d);
  assert.equal(d.headersOut.get('Accept-Ranges'), 'none');
});

test('single range: header order and values — measured', () => {
  // Apache 2.4.71, GET /h.txt with Range: bytes=0-4:
  //   Last-Modified, ETag, Accept-Ranges, Content-Length: 5, Content-Range: bytes 0-4/12
  const s = serveFile(makeRequest({ headers: [['Range', 'bytes=0-4']] }), { content: H_TXT, etag: H_ETAG });
  assert.equal(s.status, 206);
  assert.deepEqual(s.headers, [
    ['Last-Modified', 'Tue, 02 Jan 2024 03:04:05 GMT'], ['ETag', H_ETAG], ['Accept-Ranges', 'bytes'],
    ['Content-Length', '5'], ['Content-Range', 'bytes 0-4/12'],
  ]);
  assert.equal(bodyOf(s.out).toString(), 'hello');
});

test('multipart layout, part header capitalisation and AddDefaultCharset — measured', () => {
  // Apache 2.4.71, Range: bytes=0-1,5-6 (boundary shown as B):
  const B = TEST_BOUNDARY;
  const s = serveFile(makeRequest({ headers: [['Range', 'bytes=0-1,5-6']] }), { content: H_TXT, etag: H_ETAG });
  assert.equal(s.status, 206);
  assert.equal(s.contentType, `multipart/byteranges; boundary=${B}`);
  assert.equal(header(s, 'Content-Length'), '186');
  assert.equal(header(s, 'Content-Range'), undefined);
  assert.equal(bodyOf(s.out).toString('latin1'),
    `\r\n--${B}\r\nContent-type: text/plain\r\nContent-range: bytes 0-1/12\r\n\r\nhe` +
    `\r\n--${B}\r\nContent-type: text/plain\r\nContent-range: bytes 5-6/12\r\n\r\n w` +
    `\r\n--${B}--\r\n`);
  // With AddDefaultCharset On the parts carry the charset (the multipart type does not):
  //   Content-type: text/plain; charset=iso-8859-1, Content-Length: 226 for bytes=0-1,3-4
  const cs = serveFile(makeRequest({ headers: [['Range', 'bytes=0-1,3-4']], dir: { addDefaultCharset: 'iso-8859-1' } }), { content: H_TXT });
  assert.equal(header(cs, 'Content-Length'), '226');
  assert.match(bodyOf(cs.out).toString('latin1'), /\r\nContent-type: text\/plain; charset=iso-8859-1\r\nContent-range: bytes 0-1\/12\r\n/);
  assert.equal(cs.contentType, `multipart/byteranges; boundary=${B}`);
  // No content type at all (ap_make_content_type gives NULL): no Content-type line.
  const nt = serveFile(makeRequest({ headers: [['Range', 'bytes=0-1,3-4']] }), { content: H_TXT, noType: true });
  assert.equal(bodyOf(nt.out).toString('latin1').startsWith(`\r\n--${B}\r\nContent-range: bytes 0-1/12\r\n\r\nhe`), true);
});

test('more than 32 ranges: passed on every 32, without Content-Length — measured', () => {
  // Apache 2.4.71 answered 32 ranges with Content-Length: 2818 and 33 or more with
  // Transfer-Encoding: chunked (HTTP/1.1) and no Content-Length.
  const many = (n: number): string => 'bytes=' + Array.from({ length: n }, (_, i) => `${i * 10}-${i * 10 + 2}`).join(',');
  const s32 = serveFile(makeRequest({ headers: [['Range', many(32)]] }), { content: A_TXT, etag: A_ETAG });
  assert.equal(s32.out.length, 1);
  assert.equal(header(s32, 'Content-Length'), '2818');
  const s33 = serveFile(makeRequest({ headers: [['Range', many(33)]] }), { content: A_TXT, etag: A_ETAG });
  assert.equal(s33.status, 206);
  assert.equal(header(s33, 'Content-Length'), undefined);
  assert.equal(s33.out.length, 2);
  assert.equal(s33.out[0]!.some((b) => b.kind === 'eos'), false);
  assert.equal(s33.out[1]![s33.out[1]!.length - 1]!.kind, 'eos');
  // The first brigade holds ranges 1..33 (the 33rd range is index 32).
  assert.equal(s33.out[0]!.filter((b) => b.kind === 'file').length, 33);
  const s65 = serveFile(makeRequest({ headers: [['Range', many(65)]] }), { content: A_TXT, etag: A_ETAG });
  assert.equal(s65.out.length, 3);
});

test('416: the error response, no Content-Range — measured', () => {
  // Apache 2.4.71: Range: bytes=20- on a 12-byte file → 416 with the canned page and only
  // Date, Server, Connection, Content-Type (the filter hands over to ap_die).
  const s = serveFile(makeRequest({ headers: [['Range', 'bytes=20-']] }), { content: H_TXT, etag: H_ETAG });
  assert.equal(s.error, 416);
  assert.equal(s.out.length, 0);
  assert.equal(header(s, 'Content-Range'), undefined);
});

test('file buckets are windowed, never read', () => {
  const r = makeRequest({ headers: [['Range', 'bytes=0-0,3-6']] });
  const out: Brigade[] = [];
  const collector: FilterSpec<null> = { name: 'C', type: 100, init: () => null, filter: (_f, bb) => { out.push(bb); } };
  const chain: FilterInstance[] = [instantiate(byterangeFilter, r) as unknown as FilterInstance, instantiate(collector, r) as unknown as FilterInstance];
  const head = linkChain(chain)!;
  // A body made of a data bucket and a file bucket without cached bytes.
  void head.spec.filter(head, [
    { kind: 'data', data: Buffer.from('abcd') },
    { kind: 'file', path: '/nonexistent/file', start: 100, length: 8 },
    EOS,
  ]);
  const bb = out[0]!;
  const parts = bb.filter((b) => b.kind !== 'data' || !b.data.toString().startsWith('\r\n--'));
  assert.deepEqual(parts.map((b) => (b.kind === 'data' ? ['data', b.data.toString()] : b.kind === 'file' ? ['file', b.start, b.length] : [b.kind])), [
    ['data', 'a'],
    ['data', 'd'], ['file', 100, 3],
    ['eos'],
  ]);
});

test('the filter steps aside', () => {
  const run = (r: ReturnType<typeof makeRequest>, bb: Brigade): { out: Brigade[]; removed: boolean } => {
    const out: Brigade[] = [];
    const collector: FilterSpec<null> = { name: 'C', type: 100, init: () => null, filter: (_f, b) => { out.push(b); } };
    const br = instantiate(byterangeFilter, r) as unknown as FilterInstance;
    const head = linkChain([br, instantiate(collector, r) as unknown as FilterInstance])!;
    void head.spec.filter(head, bb);
    return { out, removed: br.removed };
  };
  const body = (): Brigade => [{ kind: 'data', data: Buffer.from('hello world\n') }, EOS];
  // Not the whole response in the first brigade (a streaming CGI: Apache 2.4.71 sent 200).
  let r = makeRequest({ headers: [['Range', 'bytes=1-2']] });
  let res = run(r, [{ kind: 'data', data: Buffer.from('hello ') }]);
  assert.equal(res.removed, true);
  assert.equal(r.status, 200);
  // An empty body.
  r = makeRequest({ headers: [['Range', 'bytes=1-2']] });
  res = run(r, [EOS]);
  assert.equal(res.removed, true);
  assert.equal(r.status, 200);
  // A status other than 200.
  r = makeRequest({ headers: [['Range', 'bytes=1-2']] });
  r.status = 404;
  res = run(r, body());
  assert.equal(r.status, 404);
  assert.equal(bodyOf(res.out).toString(), 'hello world\n');
  // Already a range, or already multipart.
  r = makeRequest({ headers: [['Range', 'bytes=1-2']] });
  r.headersOut.set('Content-Range', 'bytes 0-11/20');
  res = run(r, body());
  assert.equal(r.status, 200);
  r = makeRequest({ headers: [['Range', 'bytes=1-2']] });
  r.headersOut.set('Content-Type', 'multipart/byteranges; boundary=x');
  res = run(r, body());
  assert.equal(r.status, 200);
  // "bytes=" with nothing: the status set on the way is put back.
  r = makeRequest({ headers: [['Range', 'bytes=']] });
  res = run(r, body());
  assert.equal(r.status, 200);
  assert.equal(bodyOf(res.out).toString(), 'hello world\n');
});

test('needsByterange: only a "bytes=" Range header (Request-Range is ignored) — measured', () => {
  assert.equal(needsByterange(makeRequest()), false);
  assert.equal(needsByterange(makeRequest({ headers: [['Range', 'bytes=0-1']] })), true);
  assert.equal(needsByterange(makeRequest({ headers: [['Range', 'Bytes=0-1']] })), true);
  assert.equal(needsByterange(makeRequest({ headers: [['Range', 'bytes = 0-1']] })), false);
  assert.equal(needsByterange(makeRequest({ headers: [['Range', 'items=0-1']] })), false);
  // Apache 2.4.71: Request-Range: bytes=1-2 alone → 200 with the whole file.
  assert.equal(needsByterange(makeRequest({ headers: [['Request-Range', 'bytes=1-2']] })), false);
  const r09 = makeRequest({ headers: [['Range', 'bytes=0-1']] });
  r09.assbackwards = true;
  assert.equal(needsByterange(r09), false);
});

test('an old MSIE 3 User-Agent still gets multipart/byteranges — measured', () => {
  const s = serveFile(makeRequest({ headers: [['Range', 'bytes=1-2,4-5'], ['User-Agent', 'Mozilla/2.0 (compatible; MSIE 3.02; Windows 95)']] }), { content: H_TXT });
  assert.equal(s.contentType, `multipart/byteranges; boundary=${TEST_BOUNDARY}`);
});

test('HEAD gets the same 206 headers — measured', () => {
  // Apache 2.4.71: HEAD with Range: bytes=1-2 → 206, Content-Length: 2, Content-Range: bytes 1-2/12;
  // bytes=1-2,4-5 → 206 multipart, Content-Length: 186.
  const one = serveFile(makeRequest({ method: 'HEAD', headers: [['Range', 'bytes=1-2']] }), { content: H_TXT });
  assert.equal(one.status, 206);
  assert.equal(header(one, 'Content-Length'), '2');
  assert.equal(header(one, 'Content-Range'), 'bytes 1-2/12');
  const two = serveFile(makeRequest({ method: 'HEAD', headers: [['Range', 'bytes=1-2,4-5']] }), { content: H_TXT });
  assert.equal(header(two, 'Content-Length'), '186');
});

test('parseByteRanges merges neighbours and counts overlaps and reversals', () => {
  assert.deepEqual(parseByteRanges('0-1,1-2', 12), { count: 1, ranges: [[0, 2]], overlaps: 1, reversals: 0 });
  assert.deepEqual(parseByteRanges('0-1,2-3', 12), { count: 1, ranges: [[0, 3]], overlaps: 1, reversals: 0 });
  assert.deepEqual(parseByteRanges('1-2,0-0', 12), { count: 1, ranges: [[0, 2]], overlaps: 1, reversals: 1 });
  assert.deepEqual(parseByteRanges('3-4,0-1', 12), { count: 2, ranges: [[3, 4], [0, 1]], overlaps: 0, reversals: 0 });
  assert.deepEqual(parseByteRanges('-3,-2', 12), { count: 1, ranges: [[9, 11]], overlaps: 1, reversals: 0 });
  assert.deepEqual(parseByteRanges('5-,0-', 12), { count: 1, ranges: [[0, 11]], overlaps: 0, reversals: 0 });
  assert.deepEqual(parseByteRanges('20-,30-40', 12), { count: -1, ranges: [], overlaps: 0, reversals: 0 });
  assert.equal(parseByteRanges('0-5,8-10,2-9', 12).tooLarge, true);
  assert.equal(parseByteRanges('1-2,x', 12).count, 0);
  assert.equal(parseByteRanges('', 12).count, 0);
});

test('multipart boundary: 64 random bits in hex without leading zeros, one per generation', () => {
  for (let i = 0; i < 200; i++) assert.match(newMultipartBoundary(), /^[1-9a-f][0-9a-f]{0,15}$/);
  const rtA = {};
  const rtB = {};
  const ra = makeRequest();
  Object.defineProperty(ra, 'rt', { value: rtA });
  const rb = makeRequest();
  Object.defineProperty(rb, 'rt', { value: rtB });
  assert.equal(multipartBoundary(ra), multipartBoundary(ra));
  assert.notEqual(multipartBoundary(ra), multipartBoundary(rb));
  assert.equal(typeof multipartBoundary(makeRequest()), 'string');
  void FAKE_RT;
});
