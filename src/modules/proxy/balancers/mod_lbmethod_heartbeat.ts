// mod_lbmethod_heartbeat: members chosen at random in proportion to the free capacity their
// servers announce by heartbeat (httpd's modules/proxy/balancers/mod_lbmethod_heartbeat.c).
// The heartbeats come from mod_heartmonitor's slotmem table when it has one, else from the
// HeartbeatStorage file; a server not heard from in 10 seconds gets nothing.

import { randomInt } from 'node:crypto';
import { workerIsUsable as isUsable, type ProxyWorker as LbMember } from '../../../proxy/api.js';
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
): W | undefined {
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
  let candidate: W | undefined;
  if (openslots > 0) {
    const p = pick(0, openslots);
    let c = 0;
    for (const server of up) {
      if (p >= c && p <= c + server.ready) candidate = workerOf.get(server);
      c += server.ready;
    }
  }
  return candidate;
}

// ---- the module ----------------------------------------------------------------------------------

import * as fs from 'node:fs';
import * as path from 'node:path';
import { CmdParms, GLOBAL_ONLY } from '../../../server/config/cmd.js';
import type { ConfigContext } from '../../../server/config/context.js';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../../server/module.js';
import { globals } from '../../../server/core/globals.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_NOTICE, levelFor } from '../../../server/log/levels.js';
import type { ProxyLbMethod, ProxyWorker } from '../../../proxy/api.js';
import type { SlotmemInstance } from '../../../server/slotmem.js';
import { DEFAULT_HEARTBEAT_STORAGE, parseHeartbeatFile, decodeHbSlot, addHbSlot } from './heartbeat-data.js';
import { NOTHING } from './best-worker.js';

interface HbConfig { path: string | undefined }
type Cmd = CmdParms<HbConfig, undefined>;

function runtimeRelative(ctx: ConfigContext, p: string): string {
  return path.isAbsolute(p) ? p : path.join(globals(ctx).runtimeDir ?? ctx.serverRootRelative('logs'), p);
}

/** mod_heartmonitor's table, when it made one (this generation). */
let hmTable: { ctx: ConfigContext; inst: SlotmemInstance } | undefined;

function finder(balancer: Parameters<ProxyLbMethod['finder']>[0], r: Parameters<ProxyLbMethod['finder']>[1]): ProxyWorker | undefined {
  const ctx = r.rt.ctx;
  const conf = mod.server(r.server);
  const file = conf.path ?? runtimeRelative(ctx, DEFAULT_HEARTBEAT_STORAGE);
  const api = ctx.provider('proxy_api', 'mod_proxy');
  if (api === undefined) return undefined;
  let servers;
  const storage = ctx.provider('slotmem', 'shm');
  if (hmTable !== undefined && hmTable.ctx === ctx && storage !== undefined) {
    servers = new Map();
    const now = Date.now() * 1000;
    const m = servers;
    storage.doall(hmTable.inst, (mem) => { addHbSlot(m, decodeHbSlot(mem), now); });
  } else {
    let text: string;
    try {
      text = fs.readFileSync(file, 'latin1');
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      r.log('lbmethod_heartbeat', APLOG_ERR, `AH01213: lb_heartbeat: Unable to read heartbeats at '${file}'`, { code: err.errno === undefined ? 0 : -err.errno, text: err.message });
      return undefined;
    }
    servers = parseHeartbeatFile(text);
  }
  return findBestHeartbeat(balancer.workers, servers, (w) => w.s.hostname, (w) => { api.retryWorker('BALANCER', w, r.server); },
    (w) => r.log('lbmethod_heartbeat', APLOG_DEBUG, `AH01214: lb_heartbeat: No server for worker ${w.s.name}`));
}

export const heartbeat: ProxyLbMethod = { name: 'heartbeat', finder, reset: NOTHING, age: NOTHING };

function postConfig(ctx: ConfigContext): void {
  hmTable = undefined;
  const s = ctx.mainServer;
  const notice = (m: string): void => { if (APLOG_NOTICE <= levelFor(s.logLevel, 'lbmethod_heartbeat')) s.errorLog.write({ module: 'lbmethod_heartbeat', level: APLOG_NOTICE, message: m }); };
  const storage = ctx.provider('slotmem', 'shm');
  if (storage === undefined) {
    notice("AH02281: Failed to lookup provider 'shm' for 'slotmem'. Maybe you need to load mod_slotmem_shm?");
    return;
  }
  const inst = storage.attach(ctx, 'mod_heartmonitor');
  if (typeof inst === 'string') {
    notice('AH02282: No slotmem from mod_heartmonitor');
    return;
  }
  notice('AH02283: Using slotmem from mod_heartmonitor');
  hmTable = { ctx, inst };
}

const mod = defineModule<HbConfig, undefined>({
  name: 'lbmethod_heartbeat_module',
  source: 'mod_lbmethod_heartbeat.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ path: undefined }),
  mergeServerConfig: (base, add) => ({ path: add.path ?? base.path }),
  directives: [
    directive({
      name: 'HeartbeatStorage', args: 'TAKE1', where: RSRC_CONF, help: 'Path to read heartbeat data.',
      handler: (cmd: Cmd, p: string) => {
        const err = cmd.checkContext(GLOBAL_ONLY);
        if (err !== undefined) return err;
        cmd.srv.path = runtimeRelative(cmd.ctx, p);
        return undefined;
      },
    }),
  ],
  providers: [{ group: 'proxy_lbmethod', name: 'heartbeat', version: '0', provider: heartbeat }],
  configHooks: { postConfig },
});
export default mod;
