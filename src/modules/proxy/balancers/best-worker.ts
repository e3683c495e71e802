// What every lbmethod shares (httpd's proxy_balancer_get_best_worker in proxy_util.c): the
// walk over a balancer's members by lbset, in which the usable members of the lowest set
// compete through the lbmethod's is_best callback, hot spares stand in for unusable members of
// their set, and hot standbys are the last resort; a member in error is offered a retry first.

import { APLOG_DEBUG, APLOG_EMERG } from '../../../server/log/levels.js';
import type { Request } from '../../../server/request/request.js';
import {
  workerIsUsable, workerIsSpare, workerIsStandby, workerIsDrain,
  type ProxyBalancer, type ProxyLbMethod, type ProxyWorker,
} from '../../../proxy/api.js';

/** httpd keeps lbfactor as the loadfactor times 100 (1..100 → 100..10000): lbstatus, the
 *  balancer-manager's "Load", counts in those units. */
export function lbfactor(w: ProxyWorker): number {
  return Math.round(w.s.lbfactor * 100);
}

/** is_best: whether `current` beats `prevBest` (undefined: none yet); may update its state. */
export type IsBest = (current: ProxyWorker, prevBest: ProxyWorker | undefined) => boolean;

/** proxy_balancer_get_best_worker over `workers`; `retry` is mod_proxy's ap_proxy_retry_worker. */
export function getBestWorker(workers: readonly ProxyWorker[], isBest: IsBest, retry: (w: ProxyWorker) => void): ProxyWorker | undefined {
  let best: ProxyWorker | undefined;
  let maxLbset = 0;
  // Made when a set has spares or standbys (most have neither).
  let spares: ProxyWorker[] | undefined;
  let standbys: ProxyWorker[] | undefined;
  for (let cur = 0; best === undefined && cur <= maxLbset; cur++) {
    let unusable = 0;
    if (spares !== undefined) spares.length = 0;
    if (standbys !== undefined) standbys.length = 0;
    for (const w of workers) {
      if (w.s.lbset > maxLbset) maxLbset = w.s.lbset;
      if (w.s.lbset !== cur) continue;
      // A draining member that is neither spare nor standby counts as one to replace.
      if (workerIsDrain(w)) {
        if (!workerIsSpare(w) && !workerIsStandby(w)) unusable++;
        continue;
      }
      if (!workerIsUsable(w)) retry(w);
      if (workerIsSpare(w)) {
        if (workerIsUsable(w)) (spares ??= []).push(w);
      } else if (workerIsStandby(w)) {
        if (workerIsUsable(w)) (standbys ??= []).push(w);
      } else if (workerIsUsable(w)) {
        if (isBest(w, best)) best = w;
      } else {
        unusable++;
      }
    }
    if (spares !== undefined) {
      for (let i = 0; i < spares.length && i < unusable; i++) {
        if (isBest(spares[i]!, best)) best = spares[i]!;
      }
    }
    if (best === undefined && standbys !== undefined) {
      for (const w of standbys) if (isBest(w, best)) best = w;
    }
  }
  return best;
}

/** ap_proxy_balancer_get_best_worker for a request: the walk with mod_proxy's retry and
 *  httpd's debug lines (AH10122, AH10123). */
export function bestWorkerFor(balancer: ProxyBalancer, r: Request, isBest: IsBest): ProxyWorker | undefined {
  const method = balancer.lbmethod?.name ?? balancer.s.lbpname;
  if (r.wantsLog('proxy', APLOG_DEBUG)) r.log('proxy', APLOG_DEBUG, `AH10122: proxy: Entering ${method} for BALANCER (${balancer.s.name})`);
  const api = r.rt.ctx.provider('proxy_api', 'mod_proxy');
  const best = getBestWorker(balancer.workers, isBest, (w) => { api?.retryWorker('BALANCER', w, r.server); });
  if (best !== undefined) {
    if (r.wantsLog('proxy', APLOG_DEBUG)) r.log('proxy', APLOG_DEBUG, `AH10123: proxy: ${method} selected worker "${best.s.name}" : busy ${best.s.busy} : lbstatus ${best.s.lbstatus}`);
  }
  return best;
}

/** The lbmethods' reset and age when they have nothing to do. */
export const NOTHING = (): void => {};

export type { ProxyLbMethod };

/** The lbmethods' post_config: mod_proxy must be there (AH10150-AH10152 at emerg). */
export function requireProxy(ctx: import('../../../server/config/context.js').ConfigContext, module: string, code: string): string | undefined {
  if (ctx.provider('proxy_api', 'mod_proxy') !== undefined) return undefined;
  ctx.mainServer.errorLog.write({ module, level: APLOG_EMERG, message: `${code}: mod_proxy must be loaded for mod_${module}` });
  return 'AH00016: Configuration Failed';
}
