// What every lbmethod shares (httpd's proxy_balancer_get_best_worker in proxy_util.c): the
// walk over a balancer's members by lbset, in which the usable members of the lowest set
// compete through the lbmethod's is_best callback, hot spares stand in for unusable members of
// their set, and hot standbys are the last resort; a member in error is offered a retry first.

/** Worker status bits (mod_proxy.h PROXY_WORKER_*). */
export const WS_INITIALIZED = 0x0001;
export const WS_IGNORE_ERRORS = 0x0002;
export const WS_DRAIN = 0x0004;
export const WS_GENERIC = 0x0008;
export const WS_IN_SHUTDOWN = 0x0010;
export const WS_DISABLED = 0x0020;
export const WS_STOPPED = 0x0040;
export const WS_IN_ERROR = 0x0080;
export const WS_HOT_STANDBY = 0x0100;
export const WS_FREE = 0x0200;
export const WS_HC_FAIL = 0x0400;
export const WS_HOT_SPARE = 0x0800;
export const WS_NOT_USABLE = WS_IN_SHUTDOWN | WS_DISABLED | WS_STOPPED | WS_IN_ERROR | WS_HC_FAIL;

/** The shared state of a member that the lbmethods read and write. */
export interface LbShared {
  status: number;
  lbset: number;
  lbstatus: number;
  lbfactor: number;
  busy: number;
  transferred: number;
  read: number;
}

export interface LbMember { readonly s: LbShared }

export function isUsable(w: LbMember): boolean {
  return (w.s.status & WS_NOT_USABLE) === 0 && (w.s.status & WS_INITIALIZED) !== 0;
}

/** is_best: whether `current` beats `prevBest` (null: none yet); may update its own state. */
export type IsBest<W extends LbMember> = (current: W, prevBest: W | null) => boolean;

/** proxy_balancer_get_best_worker. `retry` is mod_proxy's ap_proxy_retry_worker. */
export function getBestWorker<W extends LbMember>(workers: readonly W[], isBest: IsBest<W>, retry: (w: W) => void): W | null {
  let best: W | null = null;
  let maxLbset = 0;
  const spares: W[] = [];
  const standbys: W[] = [];
  for (let cur = 0; best === null && cur <= maxLbset; cur++) {
    let unusable = 0;
    spares.length = 0;
    standbys.length = 0;
    for (const w of workers) {
      if (w.s.lbset > maxLbset) maxLbset = w.s.lbset;
      if (w.s.lbset !== cur) continue;
      // A draining member that is neither spare nor standby counts as one to replace.
      if ((w.s.status & WS_DRAIN) !== 0) {
        if ((w.s.status & (WS_HOT_SPARE | WS_HOT_STANDBY)) === 0) unusable++;
        continue;
      }
      if (!isUsable(w)) retry(w);
      if ((w.s.status & WS_HOT_SPARE) !== 0) {
        if (isUsable(w)) spares.push(w);
      } else if ((w.s.status & WS_HOT_STANDBY) !== 0) {
        if (isUsable(w)) standbys.push(w);
      } else if (isUsable(w)) {
        if (isBest(w, best)) best = w;
      } else {
        unusable++;
      }
    }
    for (let i = 0; i < spares.length && i < unusable; i++) {
      if (isBest(spares[i]!, best)) best = spares[i]!;
    }
    if (best === null) {
      for (const w of standbys) if (isBest(w, best)) best = w;
    }
  }
  return best;
}
