// mod_lbmethod_byrequests: weighted request counting (httpd's modules/proxy/balancers/
// mod_lbmethod_byrequests.c). Each pick hands every usable member its lbfactor as credit
// (lbstatus += lbfactor); the member with the most credit is elected and pays back the whole
// credit handed out, so the sum of lbstatus stays constant and members are picked in
// proportion to their factors (1,1,1,2 over a,b,c,d: d twice as often as each of the others).

import { defineModule, MODULE_API_VERSION } from '../../../server/module.js';
import type { ProxyLbMethod, ProxyWorker } from '../../../proxy/api.js';
import { bestWorkerFor, getBestWorker, lbfactor, NOTHING, requireProxy, type IsBest } from './best-worker.js';

/** The credit handed out during one pick (a pick runs to its end without yielding). */
let credited = 0;
const credit: IsBest = (cur, prev) => {
  const f = lbfactor(cur);
  cur.s.lbstatus += f;
  credited += f;
  return prev === undefined || cur.s.lbstatus > prev.s.lbstatus;
};

/** find_best_byrequests over members, without a request (tests, health checks). */
export function findBestByrequests(workers: readonly ProxyWorker[], retry: (w: ProxyWorker) => void): ProxyWorker | undefined {
  credited = 0;
  const w = getBestWorker(workers, credit, retry);
  if (w !== undefined) w.s.lbstatus -= credited;
  return w;
}

export const byrequests: ProxyLbMethod = {
  name: 'byrequests',
  finder(balancer, r) {
    credited = 0;
    const w = bestWorkerFor(balancer, r, credit);
    if (w !== undefined) w.s.lbstatus -= credited;
    return w;
  },
  reset(balancer) {
    for (const w of balancer.workers) w.s.lbstatus = 0;
  },
  age: NOTHING,
};

export default defineModule<undefined, undefined>({
  name: 'lbmethod_byrequests_module',
  source: 'mod_lbmethod_byrequests.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'proxy_lbmethod', name: 'byrequests', version: '0', provider: byrequests }],
  configHooks: { postConfig: (ctx) => requireProxy(ctx, 'lbmethod_byrequests', 'AH10152') },
});
