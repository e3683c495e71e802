// mod_lbmethod_bytraffic: the member that moved the fewest bytes for its weight (httpd's
// modules/proxy/balancers/mod_lbmethod_bytraffic.c): traffic = transferred/lbfactor +
// read/lbfactor, in whole numbers as httpd's apr_off_t division (lbfactor in hundredths);
// the first member of the lowest traffic wins.

import { defineModule, MODULE_API_VERSION } from '../../../server/module.js';
import type { ProxyLbMethod, ProxyWorker } from '../../../proxy/api.js';
import { bestWorkerFor, getBestWorker, lbfactor, NOTHING, requireProxy, type IsBest } from './best-worker.js';

function fewestBytes(): IsBest {
  let min = 0;
  return (cur, prev) => {
    const f = lbfactor(cur);
    const traffic = Math.trunc(cur.s.transferred / f) + Math.trunc(cur.s.read / f);
    if (prev === undefined || traffic < min) {
      min = traffic;
      return true;
    }
    return false;
  };
}

/** find_best_bytraffic over members, without a request. */
export function findBestBytraffic(workers: readonly ProxyWorker[], retry: (w: ProxyWorker) => void): ProxyWorker | undefined {
  return getBestWorker(workers, fewestBytes(), retry);
}

export const bytraffic: ProxyLbMethod = {
  name: 'bytraffic',
  finder: (balancer, r) => bestWorkerFor(balancer, r, fewestBytes()),
  reset(balancer) {
    for (const w of balancer.workers) { w.s.transferred = 0; w.s.read = 0; }
  },
  age: NOTHING,
};

export default defineModule<undefined, undefined>({
  name: 'lbmethod_bytraffic_module',
  source: 'mod_lbmethod_bytraffic.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'proxy_lbmethod', name: 'bytraffic', version: '0', provider: bytraffic }],
  configHooks: { postConfig: (ctx) => requireProxy(ctx, 'lbmethod_bytraffic', 'AH10150') },
});
