// mod_ratelimit (modules/filters/mod_ratelimit.c): the RATE_LIMIT filter sends a response at the
// rate in the request's "rate-limit" environment variable (KiB/s): pieces of a fifth of a
// second's worth, 200 ms apart, each followed by a FLUSH; "rate-initial-burst" (KiB) is added to
// the first pieces until used up. It runs just above the connection (after the protocol
// filters, as httpd's AP_FTYPE_CONNECTION - 1), in main requests only.

import { MODULE_API_VERSION, defineModule } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { FLUSH, FTYPE_CONNECTION, type Brigade, type Bucket, type FilterSpec } from '../../server/filters.js';
import { APLOG_DEBUG, APLOG_INFO } from '../../server/log/levels.js';
import { tableGet } from '../../server/apr-table.js';

const RATE_INTERVAL_MS = 200;

interface RlState {
  started: boolean;
  chunkSize: number;
  burst: number;
  doSleep: boolean;
  /** Buckets kept for the next call (a piece smaller than a chunk with more to come). */
  held: Brigade;
}

/** C's atoi. */
function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  return m === null ? 0 : Number(BigInt.asIntN(32, BigInt(m[1]!)));
}

function bucketLen(b: Bucket): number {
  return b.kind === 'data' ? b.data.length : b.kind === 'file' ? b.length : 0;
}

/** apr_brigade_partition: the first `len` bytes of `bb` (buckets split as needed) and the rest. */
export function partition(bb: Brigade, len: number): [Brigade, Brigade] {
  const head: Brigade = [];
  let i = 0;
  for (; i < bb.length && len > 0; i++) {
    const b = bb[i]!;
    const n = bucketLen(b);
    if (n <= len) { head.push(b); len -= n; continue; }
    if (b.kind === 'data') {
      head.push({ kind: 'data', data: b.data.subarray(0, len) });
      return [head, [{ kind: 'data', data: b.data.subarray(len) }, ...bb.slice(i + 1)]];
    }
    if (b.kind === 'file') {
      head.push({ ...b, length: len });
      return [head, [{ ...b, start: b.start + len, length: b.length - len }, ...bb.slice(i + 1)]];
    }
  }
  return [head, bb.slice(i)];
}

function start(r: Request, st: RlState): boolean {
  const rl = tableGet(r.subprocessEnv, 'rate-limit');
  if (rl === undefined) return false;
  const speed = Math.imul(atoi(rl), 1024);
  if (speed <= 0) {
    r.log('ratelimit', APLOG_INFO, `AH03488: rl: disabling: rate-limit = ${rl} (too high?)`);
    return false;
  }
  const b = tableGet(r.subprocessEnv, 'rate-initial-burst');
  if (b !== undefined) {
    st.burst = Math.imul(atoi(b), 1024);
    if (st.burst <= 0) {
      r.log('ratelimit', APLOG_INFO, `AH03489: rl: disabling burst: rate-initial-burst = ${b} (too high?)`);
      st.burst = 0;
    }
  }
  st.chunkSize = Math.trunc(speed / (1000 / RATE_INTERVAL_MS));
  return true;
}

const sleep = (ms: number): Promise<void> => new Promise((res) => setTimeout(res, ms));

const rateLimit: FilterSpec<RlState> = {
  name: 'RATE_LIMIT',
  type: FTYPE_CONNECTION - 1,
  init: () => ({ started: false, chunkSize: 0, burst: 0, doSleep: false, held: [] }),
  async filter(f, bb) {
    const st = f.state;
    const r = f.r;
    if (!st.started) {
      if (r.main !== null || !start(r, st)) {
        f.remove();
        return f.pass(bb);
      }
      st.started = true;
    }
    let rest: Brigade = st.held.length ? [...st.held, ...bb] : bb;
    st.held = [];
    while (rest.length > 0) {
      let [piece, after] = partition(rest, st.chunkSize + st.burst);
      // metadata right after the cut goes with this piece
      while (after.length > 0 && bucketLen(after[0]!) === 0 && after[0]!.kind !== 'data' && after[0]!.kind !== 'file') {
        piece.push(after[0]!);
        after = after.slice(1);
      }
      const len = piece.reduce((n, b) => n + bucketLen(b), 0);
      if (st.burst) {
        if (r.wantsLog('ratelimit', APLOG_DEBUG)) r.log('ratelimit', APLOG_DEBUG, `AH03485: rl: burst ${st.burst}; len ${len}`);
        st.burst = len < st.burst ? st.burst - len : 0;
      }
      rest = after;
      const last = piece[piece.length - 1];
      if (last?.kind === 'eos') {
        f.remove();
      } else if (last?.kind !== 'flush') {
        if (rest.length === 0) {
          // Wait for more (the next call).
          st.held = piece;
          return;
        }
        piece.push(FLUSH);
      }
      if (st.doSleep) await sleep(RATE_INTERVAL_MS);
      else st.doSleep = true;
      await f.pass(piece);
    }
  },
};

const self = defineModule<undefined, undefined>({
  name: 'ratelimit_module',
  source: 'mod_ratelimit.c',
  apiVersion: MODULE_API_VERSION,
  filters: [rateLimit as FilterSpec],
});

export default self;
