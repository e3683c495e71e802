// mod_lbmethod_byrequests: weighted request counting (httpd's modules/proxy/balancers/
// mod_lbmethod_byrequests.c). Each pick hands every usable member its lbfactor as credit
// (lbstatus += lbfactor); the member with the most credit is elected and pays back the whole
// credit handed out, so the sum of lbstatus stays constant and members are picked in
// proportion to their factors (1,1,1,2 over a,b,c,d: d twice as often as each of the others).

import { getBestWorker, type LbMember } from './best-worker.js';

/** find_best_byrequests. */
export function findBestByrequests<W extends LbMember>(workers: readonly W[], retry: (w: W) => void): W | null {
  let total = 0;
  const w = getBestWorker(workers, (cur, prev) => {
    cur.s.lbstatus += cur.s.lbfactor;
    total += cur.s.lbfactor;
    return prev === null || cur.s.lbstatus > prev.s.lbstatus;
  }, retry);
  if (w !== null) w.s.lbstatus -= total;
  return w;
}

/** reset: every member's credit back to zero. */
export function resetByrequests(workers: readonly LbMember[]): void {
  for (const w of workers) w.s.lbstatus = 0;
}
