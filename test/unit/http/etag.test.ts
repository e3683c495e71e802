// ap_make_etag / ap_set_etag. Expected values measured on Apache 2.4.71 serving a 12-byte
// file "hello world\n" with mtime 2024-01-02 03:04:05.123456789 UTC under each FileETag
// setting (inode numbers as stat reported them there).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BigIntStats, Stats } from 'node:fs';
import { makeEtag, setEtag, etagBitsFor, mtimeMicros, digestEtag, NO_ETAG_NOTE } from '../../../src/server/http/etag.js';
import {
  ETAG_ALL, ETAG_DIGEST, ETAG_INODE, ETAG_MTIME, ETAG_NONE, ETAG_SIZE, ETAG_UNSET,
} from '../../../src/server/core/config.js';
import { makeRequest, MEASURED_AT } from './helpers.js';

const MTIME_NS = 1704164645123456789n;

function bigStat(ino: bigint, size: bigint, mtimeNs = MTIME_NS, file = true): BigIntStats {
  return { ino, size, mtimeNs, mtimeMs: mtimeNs / 1000000n, isFile: () => file } as unknown as BigIntStats;
}
function plainStat(ino: number, size: number, mtimeMs: number): Stats {
  return { ino, size, mtimeMs, isFile: () => true } as unknown as Stats;
}

test('default FileETag (MTime Size): "size-mtime(usec)" in hex — measured', () => {
  const r = makeRequest();
  // Apache 2.4.71: ETag: "c-60dedc04fb580" (12 bytes, 1704164645123456 us)
  assert.equal(makeEtag(r, bigStat(2148563n, 12n), ETAG_UNSET), '"c-60dedc04fb580"');
  // The 1000-byte file with the same mtime: "3e8-60dedc04fb580"
  assert.equal(makeEtag(r, bigStat(1n, 1000n), ETAG_UNSET), '"3e8-60dedc04fb580"');
});

test('FileETag keywords — measured', () => {
  const r = makeRequest();
  // FileETag INode (ino 2148563): "20c8d3"
  assert.equal(makeEtag(r, bigStat(2148563n, 12n), ETAG_INODE), '"20c8d3"');
  // FileETag All (ino 2148721): "20c971-c-60dedc04fb580"
  assert.equal(makeEtag(r, bigStat(2148721n, 12n), ETAG_ALL), '"20c971-c-60dedc04fb580"');
  // FileETag Size: "c"; FileETag MTime: "60dedc04fb580"
  assert.equal(makeEtag(r, bigStat(1n, 12n), ETAG_SIZE), '"c"');
  assert.equal(makeEtag(r, bigStat(1n, 12n), ETAG_MTIME), '"60dedc04fb580"');
  // FileETag INode MTime: inode then mtime
  assert.equal(makeEtag(r, bigStat(0x20c8d3n, 12n), ETAG_INODE | ETAG_MTIME), '"20c8d3-60dedc04fb580"');
  // FileETag None: no ETag header at all
  assert.equal(makeEtag(r, bigStat(1n, 12n), ETAG_NONE), '');
});

test('etagBitsFor keeps httpd\'s +/- quirks — measured', () => {
  // A lone "FileETag +INode" gives the inode only (Apache: ETag: "20c8f1" for ino 2148593)
  const plusInode = etagBitsFor({ etagBits: ETAG_UNSET, etagAdd: ETAG_INODE, etagRemove: ETAG_UNSET });
  assert.equal(plusInode, ETAG_INODE);
  assert.equal(makeEtag(makeRequest(), bigStat(2148593n, 12n), plusInode), '"20c8f1"');
  // A lone "FileETag -MTime" changes nothing (Apache: ETag: "c-60dedc04fb580")
  const minusMtime = etagBitsFor({ etagBits: ETAG_UNSET, etagAdd: ETAG_UNSET, etagRemove: ETAG_MTIME });
  assert.equal(makeEtag(makeRequest(), bigStat(1n, 12n), minusMtime), '"c-60dedc04fb580"');
  // "+Digest" alone digests (Apache: "IlljY7PeQLBvmB+4XYIxLowO1RE=")
  assert.equal(etagBitsFor({ etagBits: ETAG_UNSET, etagAdd: ETAG_DIGEST, etagRemove: ETAG_UNSET }), ETAG_DIGEST);
  // Absolute bits with later +/- from a merge
  assert.equal(etagBitsFor({ etagBits: ETAG_ALL, etagAdd: ETAG_UNSET, etagRemove: ETAG_INODE }), ETAG_MTIME | ETAG_SIZE);
});

test('FileETag Digest: base64 SHA-1 of the content, with padding — measured', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-etag-'));
  try {
    const f = path.join(dir, 'h.txt');
    fs.writeFileSync(f, 'hello world\n');
    const r = makeRequest();
    r.filename = f;
    const st = fs.statSync(f, { bigint: true });
    // Apache 2.4.71 with FileETag Digest: ETag: "IlljY7PeQLBvmB+4XYIxLowO1RE="
    assert.equal(makeEtag(r, st, ETAG_DIGEST), '"IlljY7PeQLBvmB+4XYIxLowO1RE="');
    assert.equal(digestEtag(Buffer.from('hello world\n')), '"IlljY7PeQLBvmB+4XYIxLowO1RE="');
    // A digest is never made weak by a recent mtime (the weak rule comes after it in httpd).
    const fresh = makeRequest({ now: Number(st.mtimeNs / 1000000n) + 10 });
    fresh.filename = f;
    assert.equal(makeEtag(fresh, st, ETAG_DIGEST), '"IlljY7PeQLBvmB+4XYIxLowO1RE="');
    // From an open descriptor (ap_set_etag_fd).
    const fd = fs.openSync(f, 'r');
    try {
      assert.equal(makeEtag(makeRequest(), st, ETAG_DIGEST, { fd }), '"IlljY7PeQLBvmB+4XYIxLowO1RE="');
    } finally {
      fs.closeSync(fd);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('weak (W/) when modified less than a second before the request — measured', () => {
  // Apache 2.4.71: a file touched 0.3 s and 0.8 s before the request got W/"c-...",
  // 1.5 s and later a strong tag.
  const mtimeUs = MTIME_NS / 1000n;
  const st = bigStat(1n, 12n);
  const at = (us: bigint): string => {
    const r = makeRequest();
    r.startMicros = Number(us);
    return makeEtag(r, st, ETAG_UNSET);
  };
  assert.equal(at(mtimeUs + 300000n), 'W/"c-60dedc04fb580"');
  assert.equal(at(mtimeUs + 999999n), 'W/"c-60dedc04fb580"');
  assert.equal(at(mtimeUs + 1000000n), '"c-60dedc04fb580"');
  assert.equal(at(mtimeUs + 1500000n), '"c-60dedc04fb580"');
  // An mtime in the future is weak too.
  assert.equal(at(mtimeUs - 5000000n), 'W/"c-60dedc04fb580"');
  // Without startMicros the millisecond request time is used.
  const r = makeRequest({ now: MEASURED_AT });
  r.startMicros = 0;
  assert.equal(makeEtag(r, st, ETAG_UNSET), '"c-60dedc04fb580"');
  // forceWeak
  assert.equal(makeEtag(makeRequest(), st, ETAG_UNSET, { forceWeak: true }), 'W/"c-60dedc04fb580"');
});

test('a variant list validator is appended without its closing quote — measured', () => {
  // Apache 2.4.71 with MultiViews (GET /mv/h → h.en.txt):
  //   ETag: "c-60dedc04fb580;660d4a0f4823c      (sic: no closing quote)
  const st = bigStat(1n, 12n);
  assert.equal(makeEtag(makeRequest(), st, ETAG_UNSET, { vlistValidator: '"660d4a0f4823c"' }), '"c-60dedc04fb580;660d4a0f4823c');
  // A weak validator makes the whole tag weak.
  assert.equal(makeEtag(makeRequest(), st, ETAG_UNSET, { vlistValidator: 'W/"660d4a0f4823c"' }), 'W/"c-60dedc04fb580;660d4a0f4823c');
});

test('mtime in microseconds: exact from BigIntStats, from mtimeMs otherwise', () => {
  assert.equal(mtimeMicros(bigStat(1n, 1n)), 1704164645123456n);
  assert.equal(mtimeMicros(plainStat(1, 1, 1704164645123.4568)), 1704164645123456n);
  assert.equal(makeEtag(makeRequest(), plainStat(2148563, 12, 1704164645123.4568), ETAG_UNSET), '"c-60dedc04fb580"');
  // Not a file (APR_NOFILE in httpd): the mtime alone (0 here).
  assert.equal(makeEtag(makeRequest(), null, ETAG_UNSET), '"0"');
});

test('setEtag sets the header, or the no-etag note for FileETag None', () => {
  const r = makeRequest();
  setEtag(r, bigStat(1n, 12n), ETAG_UNSET);
  assert.equal(r.headersOut.get('ETag'), '"c-60dedc04fb580"');
  assert.equal(r.notes.get(NO_ETAG_NOTE), undefined);
  const n = makeRequest();
  setEtag(n, bigStat(1n, 12n), ETAG_NONE);
  assert.equal(n.headersOut.get('ETag'), undefined);
  assert.equal(n.notes.get('no-etag'), 'omit');
});
