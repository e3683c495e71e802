// mod_proxy_balancer's per-balancer state and the synchronisation of this process's view of a
// balancer with the shared tables (ap_proxy_share_worker, ap_proxy_sync_balancer).

import type { ConfigContext } from '../../../server/config/context.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { Request } from '../../../server/request/request.js';
import { APLOG_CRIT, APLOG_DEBUG, levelFor } from '../../../server/log/levels.js';
import type { SlotmemInstance, SlotmemProvider } from '../../../server/slotmem.js';
import {
  PROXY_WORKER_INITIALIZED,
  type ProxyApi, type ProxyBalancer, type ProxyServerConf, type ProxyWorker, type ProxyWorkerShared,
} from '../../../proxy/api.js';
import { SharedRecord, WORKER_LAYOUT, slotName } from './shared.js';

/** What this module keeps per balancer (balancer.context). */
export interface BalancerState {
  readonly storage: SlotmemProvider;
  readonly wslot: SlotmemInstance;
  readonly maxWorkers: number;
  readonly record: SharedRecord;
  readonly members: Map<ProxyWorker, SharedRecord>;
  /** The shared s.wupdated this process last synchronised its member list with. */
  wupdated: number;
  readonly conf: ProxyServerConf;
  /** The event-loop turn in which the balanced requests last read the table (turn()). */
  syncedTurn: number;
}

export interface ServerState {
  readonly id: string;
  readonly bslot: SlotmemInstance | undefined;
  /** BalancerPersist, BalancerInherit, ProxyPassInherit as the page reports them. */
  readonly persist: boolean;
}

export const KEY = 'proxy_balancer';

export function stateOf(b: ProxyBalancer): BalancerState | undefined {
  return b.context.get(KEY) as BalancerState | undefined;
}

/** The extra shared balancer fields (not in ProxyBalancerShared). */
export interface BalancerSharedExtra { sname: string; needReset: boolean }
export function extra(b: ProxyBalancer): BalancerSharedExtra {
  return b.s as unknown as BalancerSharedExtra;
}

export function apiOf(ctx: ConfigContext): ProxyApi | undefined {
  return ctx.provider('proxy_api', 'mod_proxy');
}

export function logServer(s: ServerRec, level: number, message: string, errno?: { code: number; text: string }): void {
  if (level > levelFor(s.logLevel, 'proxy_balancer')) return;
  s.errorLog.write({ module: 'proxy_balancer', level, message, errno });
}

export const serverStates = new WeakMap<ServerRec, ServerState>();
export function serverState(s: ServerRec): ServerState | undefined {
  return serverStates.get(s);
}

export function workerInit(w: ProxyWorker): Record<string, string | number | boolean | undefined> {
  const s = w.s;
  return {
    name: s.name, scheme: s.scheme, hostname: s.hostname, udsPath: s.udsPath, route: s.route, redirect: s.redirect,
    hcuri: s.hcuri, hcexpr: s.hcexpr, method: s.method,
    port: s.port, status: s.status | PROXY_WORKER_INITIALIZED, lbset: s.lbset, lbfactor: s.lbfactor, lbstatus: s.lbstatus,
    elected: s.elected, busy: s.busy, transferred: s.transferred, read: s.read, retries: s.retries, errorTime: s.errorTime,
    updated: s.updated, passes: s.passes, pcount: s.pcount, fails: s.fails, fcount: s.fcount, index: s.index,
    interval: s.interval,
  };
}

/** Puts a member's shared state into slot `index` (ap_proxy_share_worker). */
export function shareWorker(st: BalancerState, w: ProxyWorker, index: number, fromSlot: boolean): void {
  const ptr = st.storage.dptr(st.wslot, index);
  if (typeof ptr === 'string') throw new Error(`worker slotmem_dptr failed: ${ptr}`);
  const rec = new SharedRecord(ptr, WORKER_LAYOUT.fields, { ...workerInit(w), index }, fromSlot, () => bumpGeneration(st));
  w.s = rec.view as unknown as ProxyWorkerShared;
  w.s.index = index;
  st.members.set(w, rec);
}

/** A member's fields other than its counters were written: the balancer's generation changes
 *  (after them, at the same flush), so that the other processes read the members again. A
 *  random value: two processes bumping at once still leave a value each reader has not seen. */
function bumpGeneration(st: BalancerState): void {
  (st.record.view as { gen: number }).gen = Math.random();
}

// ---- balancing ------------------------------------------------------------------------------------

/** The event-loop turns, counted while balanced requests come (the count moves on in the
 *  check phase after a turn that read a table). */
let turnCount = 1;
let turnEnding = false;
function endTurn(): void { turnCount++; turnEnding = false; }
function turn(): number {
  if (!turnEnding) { turnEnding = true; setImmediate(endTurn); }
  return turnCount;
}

/** ap_proxy_sync_balancer for a balanced request, plus this process's refresh of the shared
 *  state: the balancer's and its members' fields as the table has them; members another
 *  process added. The requests of one event-loop turn read the balancer's slot once: within
 *  the turn this process's copy has every change it made, and another process's changes are
 *  seen from the next turn on, as they are written (its changes go to the table at the end of
 *  its turns, with a new generation in the balancer's slot). The members' slots are read only
 *  when the balancer's slot changed; their counters come with this process's own additions
 *  (shared.ts). */
export function syncBalancer(b: ProxyBalancer, r: Request): void {
  const st = stateOf(b);
  if (st === undefined) return;
  const now = turn();
  if (st.syncedTurn === now) return;
  st.syncedTurn = now;
  if (!st.record.load()) return;
  syncMembers(b, st, r.rt.ctx, r.server);
}

/** syncBalancer outside a request, every field as the table has it now, this process's counts
 *  added first (the balancer-manager's page, the health checker's watchdog: ap_proxy_sync_balancer). */
export function syncBalancerFor(b: ProxyBalancer, ctx: ConfigContext, s: ServerRec): void {
  const st = stateOf(b);
  if (st === undefined) return;
  for (const rec of st.members.values()) rec.flushStats();
  st.record.load();
  syncMembers(b, st, ctx, s);
}

function syncMembers(b: ProxyBalancer, st: BalancerState, ctx: ConfigContext, s: ServerRec): void {
  if (st.members.size <= 1) {
    for (const rec of st.members.values()) rec.load();
  } else {
    // The members' slots in one read of the table, not one read per member.
    let loaded = 0;
    st.storage.doall(st.wslot, (mem, id) => {
      for (const rec of st.members.values()) if (rec.id === id) { rec.load(mem); loaded++; break; }
    });
    // A member whose slot the walk did not give (not marked in use): read on its own.
    if (loaded < st.members.size) for (const rec of st.members.values()) rec.load();
  }
  if (b.s.wupdated <= st.wupdated) return;
  const lbmethod = ctx.provider('proxy_lbmethod', b.s.lbpname);
  if (lbmethod === undefined) {
    logServer(s, APLOG_CRIT, `AH02433: Cannot find LB Method: ${b.s.lbpname}`);
    return;
  }
  b.lbmethod = lbmethod;
  const api = apiOf(ctx);
  const known = new Set([...st.members.values()].map((x) => x.id));
  for (let i = 0; i < st.maxWorkers; i++) {
    if (known.has(i)) continue;
    const ptr = st.storage.dptr(st.wslot, i);
    if (typeof ptr === 'string') break;
    const name = slotName(ptr.read());
    if (name === '' || api === undefined) continue;
    const w = api.defineWorker(ctx, s, b, name);
    if (typeof w === 'string') continue;
    if (!b.workers.includes(w)) b.workers.push(w);
    shareWorker(st, w, i, true);
    w.localStatus |= PROXY_WORKER_INITIALIZED;
    logServer(s, APLOG_DEBUG, `AH02403: grabbing shm[${i}] for worker: ${w.s.name}`);
  }
  if (extra(b).needReset) {
    b.lbmethod.reset(b, s);
    extra(b).needReset = false;
  }
  st.wupdated = b.s.wupdated;
}

