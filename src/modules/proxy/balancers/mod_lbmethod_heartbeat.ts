// mod_lbmethod_heartbeat: members chosen at random in proportion to the free capacity their
// servers announce by heartbeat (httpd's modules/proxy/balancers/mod_lbmethod_heartbeat.c).
// The heartbeats come from mod_heartmonitor's slotmem table when it has one, else from the
// HeartbeatStorage file; a server not heard from in 10 seconds gets nothing.

import { randomInt } from 'node:crypto';
import { isUsable, type LbMember } from './best-worker.js';
import type { HbServer } from './heartbeat-data.js';

/** LBM_HEARTBEAT_MAX_LASTSEEN, seconds. */
export const MAX_LASTSEEN = 10;

/** ap_random_pick(min, max): an integer in [min, max]. */
export function randomPick(min: number, max: number): number {
  return min + randomInt(max - min + 1);
}

/** find_best_hb over the servers read from the heartbeats. `host(w)`: the member's backend
 *  host (hostname_ex); `noServer(w)`: AH01214's debug line. */
export function findBestHeartbeat<W extends LbMember>(
  workers: readonly W[], servers: ReadonlyMap<string, HbServer>, host: (w: W) => string,
  retry: (w: W) => void, noServer: (w: W) => void, pick: (min: number, max: number) => number = randomPick,
): W | null {
  let openslots = 0;
  const up: HbServer[] = [];
  // httpd's server->worker: the last usable member on that server.
  const workerOf = new Map<HbServer, W>();
  for (const w of workers) {
    const server = servers.get(host(w));
    if (server === undefined) { noServer(w); continue; }
    if (!isUsable(w)) retry(w);
    if (isUsable(w)) {
      workerOf.set(server, w);
      if (server.seen < MAX_LASTSEEN) {
        openslots += server.ready;
        up.push(server);
      }
    }
  }
  let candidate: W | null = null;
  if (openslots > 0) {
    const p = pick(0, openslots);
    let c = 0;
    for (const server of up) {
      if (p >= c && p <= c + server.ready) candidate = workerOf.get(server) ?? null;
      c += server.ready;
    }
  }
  return candidate;
}
