// mod_lbmethod_bybusyness: the member with the fewest requests in flight (httpd's
// modules/proxy/balancers/mod_lbmethod_bybusyness.c); among equally busy members the
// byrequests credit (lbstatus) decides, so idle members still share the load by lbfactor.

import { getBestWorker, type LbMember } from './best-worker.js';

/** find_best_bybusyness. */
export function findBestBybusyness<W extends LbMember>(workers: readonly W[], retry: (w: W) => void): W | null {
  let total = 0;
  const w = getBestWorker(workers, (cur, prev) => {
    cur.s.lbstatus += cur.s.lbfactor;
    total += cur.s.lbfactor;
    return prev === null || cur.s.busy < prev.s.busy || (cur.s.busy === prev.s.busy && cur.s.lbstatus > prev.s.lbstatus);
  }, retry);
  if (w !== null) w.s.lbstatus -= total;
  return w;
}

/** reset: credit and busy counts back to zero. */
export function resetBybusyness(workers: readonly LbMember[]): void {
  for (const w of workers) { w.s.lbstatus = 0; w.s.busy = 0; }
}
