// mod_lbmethod_bytraffic: the member that moved the fewest bytes for its weight (httpd's
// modules/proxy/balancers/mod_lbmethod_bytraffic.c): traffic = transferred/lbfactor +
// read/lbfactor, in whole numbers as httpd's apr_off_t division; the first member of the
// lowest traffic wins.

import { getBestWorker, type LbMember } from './best-worker.js';

/** find_best_bytraffic. */
export function findBestBytraffic<W extends LbMember>(workers: readonly W[], retry: (w: W) => void): W | null {
  let min = 0;
  return getBestWorker(workers, (cur, prev) => {
    const f = cur.s.lbfactor;
    const traffic = Math.trunc(cur.s.transferred / f) + Math.trunc(cur.s.read / f);
    if (prev === null || traffic < min) {
      min = traffic;
      return true;
    }
    return false;
  }, retry);
}

/** reset: the byte counters back to zero. */
export function resetBytraffic(workers: readonly LbMember[]): void {
  for (const w of workers) { w.s.transferred = 0; w.s.read = 0; }
}
