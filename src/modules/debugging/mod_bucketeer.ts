// mod_bucketeer (modules/debugging/mod_bucketeer.c): the BUCKETEER output filter, httpd's tool
// for testing filters against bodies that come in pieces. In a text/* response, ^B (0x02)
// ends a bucket, ^F (0x06) adds a FLUSH and ^P (0x10) passes what was collected down the
// chain; the control characters themselves are dropped, and so is Content-Length.

import { defineModule, MODULE_API_VERSION } from '../../server/module.js';
import { FTYPE_RESOURCE, bucketPieces, type Brigade, type Bucket, type FilterInstance, type FilterSpec } from '../../server/filters.js';
import { fileReadSize } from '../filters/bucket-read.js';

const BUCKET = 0x02;
const PASS = 0x10;
const FLUSH_CHAR = 0x06;

interface BucketeerState {
  started: boolean;
  /** What is collected for the next pass. */
  out: Bucket[];
}

async function cut(f: FilterInstance<BucketeerState>, bb: Brigade): Promise<void> {
  const st = f.state;
  for (const b of bb) {
    if (b.kind === 'eos') {
      st.out.push(b);
      const send = st.out.splice(0, st.out.length);
      await f.pass(send);
      return;
    }
    // FLUSH buckets are dropped: the control characters decide what streams.
    if (b.kind === 'flush') continue;
    await bucketPieces(b, async (data) => {
      let last = 0;
      for (let i = 0; i < data.length; i++) {
        const c = data[i]!;
        if (c !== BUCKET && c !== PASS && c !== FLUSH_CHAR) continue;
        if (i > last) st.out.push({ kind: 'data', data: Buffer.from(data.subarray(last, i)) });
        last = i + 1;
        if (c === FLUSH_CHAR) st.out.push({ kind: 'flush' });
        if (c === PASS) await f.pass(st.out.splice(0, st.out.length));
      }
      if (last < data.length) st.out.push({ kind: 'data', data: Buffer.from(data.subarray(last)) });
    }, fileReadSize(f.r));
  }
}

const BUCKETEER: FilterSpec<BucketeerState> = {
  name: 'BUCKETEER',
  type: FTYPE_RESOURCE - 1,
  init: () => ({ started: false, out: [] }),
  filter(f, bb) {
    const r = f.r;
    if (!f.state.started) {
      if (r.contentType === undefined || !r.contentType.startsWith('text/')) {
        f.remove();
        return f.pass(bb);
      }
      f.state.started = true;
      r.headersOut.unset('Content-Length');
    }
    return cut(f, bb);
  },
};

const self = defineModule<undefined, undefined>({
  name: 'bucketeer_module',
  source: 'mod_bucketeer.c',
  apiVersion: MODULE_API_VERSION,
  filters: [BUCKETEER as FilterSpec],
});

export default self;
