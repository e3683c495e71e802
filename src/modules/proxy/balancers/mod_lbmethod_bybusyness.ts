// mod_lbmethod_bybusyness: the member with the fewest requests in flight (httpd's
// modules/proxy/balancers/mod_lbmethod_bybusyness.c); among equally busy members the
// byrequests credit (lbstatus) decides, so idle members still share the load by lbfactor.

import { defineModule, MODULE_API_VERSION } from '../../../server/module.js';
import type { ProxyLbMethod, ProxyWorker } from '../../../proxy/api.js';
import { bestWorkerFor, getBestWorker, lbfactor, NOTHING, requireProxy, type IsBest } from './best-worker.js';

function leastBusy(total: { n: number }): IsBest {
  return (cur, prev) => {
    cur.s.lbstatus += lbfactor(cur);
    total.n += lbfactor(cur);
    return prev === undefined || cur.s.busy < prev.s.busy || (cur.s.busy === prev.s.busy && cur.s.lbstatus > prev.s.lbstatus);
  };
}

/** find_best_bybusyness over members, without a request. */
export function findBestBybusyness(workers: readonly ProxyWorker[], retry: (w: ProxyWorker) => void): ProxyWorker | undefined {
  const total = { n: 0 };
  const w = getBestWorker(workers, leastBusy(total), retry);
  if (w !== undefined) w.s.lbstatus -= total.n;
  return w;
}

export const bybusyness: ProxyLbMethod = {
  name: 'bybusyness',
  finder(balancer, r) {
    const total = { n: 0 };
    const w = bestWorkerFor(balancer, r, leastBusy(total));
    if (w !== undefined) w.s.lbstatus -= total.n;
    return w;
  },
  reset(balancer) {
    for (const w of balancer.workers) { w.s.lbstatus = 0; w.s.busy = 0; }
  },
  age: NOTHING,
};

export default defineModule<undefined, undefined>({
  name: 'lbmethod_bybusyness_module',
  source: 'mod_lbmethod_bybusyness.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'proxy_lbmethod', name: 'bybusyness', version: '0', provider: bybusyness }],
  configHooks: { postConfig: (ctx) => requireProxy(ctx, 'lbmethod_bybusyness', 'AH10151') },
});
