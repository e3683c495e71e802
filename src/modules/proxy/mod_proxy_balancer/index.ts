// mod_proxy_balancer (httpd's modules/proxy/mod_proxy_balancer.c): balancer:// URLs for
// mod_proxy. Its pre_request hook picks a member (a sticky session's route from the cookie or
// the URL, else the balancer's lbmethod), post_request puts a member in error for failonstatus
// and failontimeout, and the balancer-manager handler shows and changes balancers and members
// at run time. The balancers' and members' state lives in mod_slotmem_shm tables (shared.ts),
// shared by every process serving the configuration.

import { createHash, randomUUID } from 'node:crypto';
import type { ConfigContext } from '../../../server/config/context.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { Request } from '../../../server/request/request.js';
import { defineModule, MODULE_API_VERSION, DECLINED, OK, HOOK_FIRST } from '../../../server/module.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_EMERG, APLOG_ERR } from '../../../server/log/levels.js';
import type { SlotmemInstance } from '../../../server/slotmem.js';
import { SLOTMEM_TYPE_PERSIST, SLOTMEM_TYPE_CLEARINUSE } from '../../../server/slotmem.js';
import {
  PROXY_WORKER_INITIALIZED, PROXY_WORKER_IN_ERROR, PROXY_WORKER_IGNORE_ERRORS,
  workerIsUsable, workerIsStandby,
  type ProxyApi, type ProxyBalancer, type ProxyBalancerHooks, type ProxyBalancerShared, type ProxyPreRequestResult, type ProxySchemeProvider, type ProxyWorker,

} from '../../../proxy/api.js';
import { SharedRecord, WORKER_LAYOUT, BALANCER_LAYOUT } from './shared.js';
import { balancerHandler } from './manager.js';
import { KEY, apiOf, logServer, serverStates, shareWorker, stateOf, syncBalancer, syncBalancerFor, type BalancerState } from './state.js';

const BALANCER_PREFIX = 'balancer://';

// ---- server ids (make_server_id / make_servers_ids) ------------------------------------------------

function sdbm(s: string): number {
  let h = 0;
  for (const b of Buffer.from(s, 'latin1')) h = (b + (h << 6) + (h << 16) - h) >>> 0;
  return h;
}

function serverId(s: ServerRec, full: boolean): string {
  const md5 = createHash('md5');
  const port = Buffer.alloc(2);
  const addrs = s.isVirtual ? s.addrs : [{ virthost: '', host: '0.0.0.0', port: 0 }];
  for (const a of addrs) {
    md5.update(a.virthost, 'latin1');
    md5.update(a.host === '*' || a.host === '_default_' ? '0.0.0.0' : a.host, 'latin1');
    port.writeUInt16LE(a.port, 0);
    md5.update(port);
    if (!full) break;
  }
  if (s.serverHostname !== undefined) md5.update(s.serverHostname, 'latin1');
  if (full) {
    for (const n of s.names) md5.update(n, 'latin1');
    for (const n of s.wildNames) md5.update(n.source, 'latin1');
  }
  return md5.digest('hex');
}

function serversIds(servers: readonly ServerRec[]): string[] {
  const ids: (string | undefined)[] = [];
  const seen = new Map<string, number>();
  let full = false;
  servers.forEach((s, i) => {
    const id = serverId(s, false);
    const dup = seen.get(id);
    seen.set(id, i);
    if (dup !== undefined) { full = true; ids[dup] = undefined; ids.push(undefined); } else ids.push(id);
  });
  if (full) {
    const taken = new Set<string>();
    servers.forEach((s, i) => {
      if (ids[i] !== undefined) return;
      let id = serverId(s, true);
      if (taken.has(id)) id = `${id}_${i.toString(16)}`; else taken.add(id);
      ids[i] = id;
    });
  }
  return ids.map((x) => `p${sdbm(x ?? '').toString(16)}`);
}

// ---- post_config: the shared tables ---------------------------------------------------------------

function alnum(s: string): string {
  return s.replace(/[^A-Za-z0-9]/g, '_');
}

function postConfig(ctx: ConfigContext): string | undefined {
  const api = apiOf(ctx);
  const main = ctx.mainServer;
  if (api === undefined) {
    logServer(main, APLOG_EMERG, 'AH02230: mod_proxy must be loaded for mod_proxy_balancer');
    return 'AH00016: Configuration Failed';
  }
  const storage = ctx.provider('slotmem', 'shm');
  if (storage === undefined) {
    logServer(main, APLOG_EMERG, "AH01177: Failed to lookup provider 'shm' for 'slotmem': is mod_slotmem_shm loaded??");
    return 'AH00016: Configuration Failed';
  }
  const servers = [main, ...ctx.vhosts];
  const ids = serversIds(servers);
  const child = ctx.child;
  for (const [i, s] of servers.entries()) {
    const conf = api.serverConf(s);
    const persist = conf.balPersist === true;
    const type = persist ? SLOTMEM_TYPE_PERSIST | SLOTMEM_TYPE_CLEARINUSE : 0;
    const id = ids[i]!;
    let bslot: SlotmemInstance | undefined;
    const own = conf.balancers.filter((b) => stateOf(b) === undefined);
    if (own.length > 0) {
      const max = conf.balancers.length + (conf.bgrowth ?? 5);
      logServer(s, APLOG_DEBUG, `AH01178: Doing balancers create: ${BALANCER_LAYOUT.size}, ${conf.balancers.length} (${max})`);
      const made = storage.create(ctx, id, BALANCER_LAYOUT.size, max, type);
      if (typeof made === 'string') {
        logServer(s, APLOG_EMERG, 'AH01179: balancer slotmem_create failed');
        return 'AH00016: Configuration Failed';
      }
      bslot = made;
    }
    serverStates.set(s, { id, bslot, persist });
    if (bslot === undefined) continue;
    for (const [bi, b] of conf.balancers.entries()) {
      if (stateOf(b) !== undefined) continue;
      const sname = `${id}_${alnum(b.name.slice(BALANCER_PREFIX.length))}`;
      const lbmethod = ctx.provider('proxy_lbmethod', b.s.lbpname);
      if (lbmethod === undefined) {
        logServer(s, APLOG_CRIT, `AH02432: Cannot find LB Method: ${b.s.lbpname}`);
        logServer(s, APLOG_EMERG, 'AH01183: Cannot share balancer', { code: 22, text: 'Invalid argument' });
        return 'AH00016: Configuration Failed';
      }
      b.lbmethod = lbmethod;
      const bptr = storage.dptr(bslot, bi);
      if (typeof bptr === 'string') {
        logServer(s, APLOG_EMERG, 'AH01182: balancer slotmem_dptr failed');
        return 'AH00016: Configuration Failed';
      }
      if (!child) storage.fgrab(bslot, bi);
      const vpath = b.s.vpath;
      const nonce = b.params.has('nonce') ? b.s.nonce : randomUUID();
      const init = {
        name: b.s.name, sname, sticky: b.s.sticky, stickyPath: b.s.stickyPath, stickySeparator: b.s.stickySeparator,
        lbpname: b.s.lbpname, nonce, vhost: b.s.vhost, vpath, stickyForce: b.s.stickyForce, scolonsep: b.s.scolonsep,
        forcerecovery: b.s.forcerecovery, inactive: b.s.inactive, needReset: false, timeout: b.s.timeout,
        maxAttempts: b.s.maxAttempts ?? (b.workers.length > 1 ? b.workers.length - 1 : undefined), wupdated: Date.now(), index: bi, gen: 0,
      };
      const record = new SharedRecord(bptr, BALANCER_LAYOUT.fields, init, child);
      b.s = record.view as unknown as ProxyBalancerShared;
      const maxWorkers = b.workers.length + b.growth;
      logServer(s, APLOG_DEBUG, `AH01184: Doing workers create: ${b.name} (${sname}), ${WORKER_LAYOUT.size}, ${maxWorkers} [${bi}]`);
      const wslot = storage.create(ctx, sname, WORKER_LAYOUT.size, Math.max(1, maxWorkers), type);
      if (typeof wslot === 'string') {
        logServer(s, APLOG_EMERG, 'AH01185: worker slotmem_create failed');
        return 'AH00016: Configuration Failed';
      }
      const st: BalancerState = { storage, wslot, maxWorkers, record, members: new Map(), wupdated: b.s.wupdated, conf, syncedTurn: 0 };
      b.context.set(KEY, st);
      for (const [j, w] of b.workers.entries()) {
        if (!child) storage.fgrab(wslot, j);
        shareWorker(st, w, j, child);
        w.localStatus |= PROXY_WORKER_INITIALIZED;
      }
      record.flush();
      for (const rec of st.members.values()) rec.flush();
    }
  }
  return undefined;
}

function retry(api: ProxyApi | undefined, w: ProxyWorker, s: ServerRec): void {
  api?.retryWorker('BALANCER', w, s);
}

/** get_path_param: `name=value` in the URL up to the next delimiter. */
export function getPathParam(url: string, name: string, scolon: boolean): string | undefined {
  if (name === '') return undefined;
  const delims = scolon ? ';?&' : '?&';
  for (let at = url.indexOf(name); at >= 0; at = url.indexOf(name, at + 1)) {
    const p = at + name.length;
    if (url[p] === '=' && p + 1 < url.length) {
      let v = url.slice(p + 1);
      // apr_strtok: leading delimiters skipped, then up to the next one.
      let k = 0;
      while (k < v.length && delims.includes(v[k]!)) k++;
      v = v.slice(k);
      let e = 0;
      while (e < v.length && !delims.includes(v[e]!)) e++;
      return e === 0 ? undefined : v.slice(0, e);
    }
  }
  return undefined;
}

/** get_cookie_param: the value of cookie `name` in the Cookie header. */
export function getCookieParam(cookies: string | undefined, name: string): string | undefined {
  if (cookies === undefined || name === '') return undefined;
  for (let at = cookies.indexOf(name); at >= 0; at = cookies.indexOf(name, at + 1)) {
    const before = at === 0 ? '' : cookies[at - 1]!;
    if (!(at === 0 || before === ';' || before === ',' || /\s/.test(before))) continue;
    let p = at + name.length;
    while (p < cookies.length && /\s/.test(cookies[p]!)) p++;
    if (cookies[p] !== '=' || p + 1 >= cookies.length) continue;
    let v = cookies.slice(p + 1);
    const semi = v.indexOf(';');
    if (semi >= 0) v = v.slice(0, semi);
    const comma = v.indexOf(',');
    if (comma >= 0) v = v.slice(0, comma);
    return v;
  }
  return undefined;
}

function findRouteWorker(b: ProxyBalancer, route: string, r: Request, recursion: number, api: ProxyApi | undefined): ProxyWorker | undefined {
  for (const standby of [false, true]) {
    for (const w of b.workers) {
      if (workerIsStandby(w) !== standby) continue;
      if (w.s.route === '' || w.s.route !== route) continue;
      if (workerIsUsable(w)) return w;
      retry(api, w, r.server);
      if (workerIsUsable(w)) return w;
      if (w.s.redirect !== '' && recursion < b.workers.length) {
        const rw = findRouteWorker(b, w.s.redirect, r, recursion + 1, api);
        if (rw !== undefined && !workerIsUsable(rw)) retry(api, rw, r.server);
        if (rw !== undefined && workerIsUsable(rw)) return rw;
      }
    }
  }
  return undefined;
}

/** What the sticky session names: its member (if usable), the route and the sticky name. */
interface SessionRoute { worker: ProxyWorker | undefined; route: string | undefined; sticky: string | undefined }

function findSessionRoute(b: ProxyBalancer, r: Request, url: string, api: ProxyApi | undefined): SessionRoute {
  if (b.s.sticky === '') return { worker: undefined, route: undefined, sticky: undefined };
  let sticky: string | undefined;
  // The query is part of the URL httpd looks in (r->filename).
  const full = r.args !== undefined && !url.includes('?') ? `${url}?${r.args}` : url;
  let route = getPathParam(full, b.s.stickyPath, b.s.scolonsep);
  if (route !== undefined) {
    r.log('proxy_balancer', APLOG_DEBUG, `AH01159: Found value ${route} for stickysession ${b.s.stickyPath}`);
    sticky = b.s.stickyPath;
  } else {
    route = getCookieParam(r.headersIn.get('Cookie'), b.s.sticky);
    if (route !== undefined) {
      sticky = b.s.sticky;
      r.log('proxy_balancer', APLOG_DEBUG, `AH01160: Found value ${route} for stickysession ${b.s.sticky}`);
    }
  }
  if (route !== undefined && b.s.stickySeparator !== '') {
    const dot = route.indexOf(b.s.stickySeparator);
    route = dot < 0 ? undefined : route.slice(dot + 1);
  }
  if (route === undefined || route === '') return { worker: undefined, route, sticky };
  r.log('proxy_balancer', APLOG_DEBUG, `AH01161: Found route ${route}`);
  const w = findRouteWorker(b, route, r, 1, api);
  if (w !== undefined && route !== w.s.route) {
    r.subprocessEnv.set('BALANCER_ROUTE_CHANGED', '1');
    r.log('proxy_balancer', APLOG_DEBUG, `AH01162: Route changed from ${route} to ${w.s.route}`);
  }
  return { worker: w, route, sticky };
}

function forceRecovery(b: ProxyBalancer, s: ServerRec, api: ProxyApi | undefined): void {
  for (const w of b.workers) {
    if ((w.s.status & PROXY_WORKER_IN_ERROR) === 0) return;
    retry(api, w, s);
    if ((w.s.status & PROXY_WORKER_IN_ERROR) === 0) return;
  }
  if (!b.s.forcerecovery) return;
  for (const w of b.workers) {
    w.s.retries++;
    w.s.status &= ~PROXY_WORKER_IN_ERROR;
    logServer(s, APLOG_DEBUG, `AH01165: ${b.s.name}: Forcing recovery for worker (${w.s.hostname}:${w.s.port})`);
  }
}

/** The lbmethod's choice; a promise only when none is usable at once and timeout= lets the
 *  request wait for one. */
function findBestWorker(b: ProxyBalancer, r: Request): ProxyWorker | undefined | Promise<ProxyWorker | undefined> {
  const candidate = b.lbmethod?.finder(b, r);
  if (candidate !== undefined) {
    candidate.s.elected++;
    return candidate;
  }
  return b.s.timeout > 0 ? waitBestWorker(b, r) : undefined;
}

/** All busy or in error: wait and try again (their state can change in other processes). */
async function waitBestWorker(b: ProxyBalancer, r: Request): Promise<ProxyWorker | undefined> {
  let candidate: ProxyWorker | undefined;
  const timeout = b.s.timeout;
  const step = timeout / 100;
  for (let t = 0; t < timeout && candidate === undefined; t += step) {
    await new Promise((res) => setTimeout(res, step));
    syncBalancer(b, r);
    candidate = b.lbmethod?.finder(b, r);
    if (candidate !== undefined) candidate.s.elected++;
  }
  return candidate;
}

/** The scheme modules whose canon handlers a member URL goes to, decided once per
 *  configuration and scheme: those that declare other schemes alone would decline it. */
let lastChain: { readonly ctx: ConfigContext; readonly scheme: string; readonly list: readonly ProxySchemeProvider[] } | undefined;

function canonChain(r: Request, url: string): readonly ProxySchemeProvider[] {
  const ctx = r.rt.ctx;
  // The previous member URL's scheme, the usual case, is recognised without cutting it out.
  const last = lastChain;
  if (last !== undefined && last.ctx === ctx && url.charCodeAt(last.scheme.length) === 0x3a && url.startsWith(last.scheme)) return last.list;
  const chains = ctx.getScratch('proxy_balancer:schemes', () => new Map<string, readonly ProxySchemeProvider[]>());
  const colon = url.indexOf(':');
  const scheme = colon < 0 ? '' : url.slice(0, colon);
  let list = chains.get(scheme);
  if (list === undefined) {
    const low = scheme.toLowerCase();
    list = ctx.providerNames('proxy_scheme').filter((n) => n !== 'balancer')
      .map((n) => ctx.provider('proxy_scheme', n)).filter((p) => p !== undefined)
      .filter((p) => p.schemes === undefined || p.schemes.includes(low));
    if (chains.size < 64) chains.set(scheme, list);
  }
  lastChain = { ctx, scheme, list };
  return list;
}

/** Runs the scheme modules' canon handlers on the member's URL (ap_proxy_canon_url). */
function canonUrl(r: Request, url: string): { status: number; url: string } {
  r.filename = `proxy:${url}`;
  for (const p of canonChain(r, url)) {
    const rc = p.canon(r, url);
    if (rc === DECLINED) continue;
    if (rc === OK) return { status: OK, url: r.filename.startsWith('proxy:') ? r.filename.slice(6) : url };
    return { status: rc, url };
  }
  return { status: OK, url };
}

/** The member chosen by the lbmethod (a promise's answer when it waited): 503 when none. */
function bestElected(b: ProxyBalancer, r: Request, url: string, found: SessionRoute, chosen: ProxyWorker | undefined): ProxyPreRequestResult {
  if (chosen === undefined) {
    if (b.workers.length > 0) r.log('proxy_balancer', APLOG_ERR, `AH01170: ${b.s.name}: All workers are in error state`);
    else r.log('proxy_balancer', APLOG_ERR, `AH01171: ${b.s.name}: No workers in balancer`);
    return { status: 503 };
  }
  if (b.s.sticky !== '') r.subprocessEnv.set('BALANCER_ROUTE_CHANGED', '1');
  return elected(b, r, url, found, chosen);
}

/** The rest of pre_request once a member is chosen: busy, the environment, its URL. */
function elected(b: ProxyBalancer, r: Request, url: string, found: SessionRoute, chosen: ProxyWorker): ProxyPreRequestResult {
  chosen.s.busy++;
  r.subprocessEnv.set('BALANCER_NAME', b.s.name);
  r.subprocessEnv.set('BALANCER_WORKER_NAME', chosen.s.name);
  r.subprocessEnv.set('BALANCER_WORKER_ROUTE', chosen.s.route);
  // balancer_fixup: the member's URL and the path after the balancer's name.
  const scheme = url.indexOf('://');
  const slash = scheme < 0 ? -1 : url.indexOf('/', scheme + 3);
  const path = slash < 0 ? '' : url.slice(slash);
  const fixed = canonUrl(r, `${chosen.s.name}${path}`);
  if (found.route !== undefined) {
    r.notes.set('session-sticky', found.sticky ?? '');
    r.notes.set('session-route', found.route);
    r.subprocessEnv.set('BALANCER_SESSION_STICKY', found.sticky ?? '');
    r.subprocessEnv.set('BALANCER_SESSION_ROUTE', found.route);
  }
  if (r.wantsLog('proxy_balancer', APLOG_DEBUG)) r.log('proxy_balancer', APLOG_DEBUG, `AH01172: ${b.s.name}: worker (${chosen.s.name}) rewritten to ${fixed.url}`);
  return { status: fixed.status, worker: chosen, balancer: b, url: fixed.url };
}

const hooks: ProxyBalancerHooks = {
  sync: syncBalancerFor,
  preRequest(_worker, balancerIn, r, conf, url) {
    let b = balancerIn;
    if (b === undefined && url.slice(0, BALANCER_PREFIX.length).toLowerCase() !== BALANCER_PREFIX) return { status: DECLINED };
    const api = apiOf(r.rt.ctx);
    if (b === undefined) {
      b = api?.getBalancer(conf, url);
      if (b === undefined) return { status: DECLINED };
    }
    syncBalancer(b, r);
    forceRecovery(b, r.server, api);
    const found = findSessionRoute(b, r, url, api);
    const chosen = found.worker;
    if (chosen !== undefined) {
      if (b.lbmethod?.updateLbStatus !== undefined) {
        b.lbmethod.updateLbStatus(b, chosen, r.server);
      } else {
        let total = 0;
        for (const w of b.workers) {
          if (workerIsUsable(w)) {
            const f = Math.round(w.s.lbfactor * 100);
            w.s.lbstatus += f;
            total += f;
          }
        }
        chosen.s.lbstatus -= total;
      }
      chosen.s.elected++;
    } else if (found.route !== undefined && b.s.stickyForce) {
      if (b.workers.some((w) => w.s.route !== '' && w.s.route === found.route)) {
        r.log('proxy_balancer', APLOG_ERR, `AH01167: ${b.s.name}: All workers are in error state for route (${found.route})`);
        return { status: 503 };
      }
    }
    if (chosen !== undefined) return elected(b, r, url, found, chosen);
    const best = findBestWorker(b, r);
    if (best instanceof Promise) return best.then((w) => bestElected(b, r, url, found, w));
    return bestElected(b, r, url, found, best);
  },

  postRequest(worker, balancer, r) {
    const b = balancer;
    if (b === undefined) return DECLINED;
    // decrement_busy_count: httpd's request-pool cleanup. mod_proxy calls this once after each
    // try whose pre_request here elected `worker` (and so counted it busy), with its balancer.
    if (worker.s.busy > 0) worker.s.busy--;
    if (b.errStatuses.length > 0 && (worker.s.status & PROXY_WORKER_IGNORE_ERRORS) === 0) {
      for (const val of b.errStatuses) {
        if (r.status === val) {
          r.log('proxy_balancer', APLOG_ERR, `AH01174: ${b.s.name}: Forcing worker (${worker.s.name}) into error state due to status code ${val} matching 'failonstatus' balancer parameter`);
          worker.s.status |= PROXY_WORKER_IN_ERROR;
          worker.s.errorTime = Date.now();
          break;
        }
      }
    }
    if (b.failOnTimeout && (worker.s.status & PROXY_WORKER_IGNORE_ERRORS) === 0 && r.notes.has('proxy_timedout')) {
      r.log('proxy_balancer', APLOG_ERR, `AH02460: ${b.s.name}: Forcing worker (${worker.s.name}) into error state due to timeout and 'failontimeout' parameter being set`);
      worker.s.status |= PROXY_WORKER_IN_ERROR;
      worker.s.errorTime = Date.now();
    }
    if (r.wantsLog('proxy_balancer', APLOG_DEBUG)) r.log('proxy_balancer', APLOG_DEBUG, `AH01176: proxy_balancer_post_request for (${b.s.name})`);
    return OK;
  },
};

/** proxy_balancer_canon: balancer:// URLs keep their raw path (canonicalised per member later). */
const scheme: ProxySchemeProvider = {
  // balancer:// URLs alone: mod_proxy does not ask it for the others.
  schemes: ['balancer'],
  canon(r, url) {
    if (url.slice(0, 9).toLowerCase() !== 'balancer:') return DECLINED;
    const api = apiOf(r.rt.ctx);
    if (api === undefined) return DECLINED;
    const net = api.canonNetloc(url.slice(9), 0);
    if (typeof net === 'string') {
      r.log('proxy_balancer', APLOG_ERR, `AH01157: error parsing URL ${url.slice(9)}: ${net}`);
      return 400;
    }
    const rest = net.rest.startsWith('/') ? net.rest.slice(1) : net.rest;
    r.filename = `proxy:${BALANCER_PREFIX}${net.host}/${rest}`;
    return OK;
  },
  async handle() {
    return DECLINED;
  },
};


export default defineModule<undefined, undefined>({
  name: 'proxy_balancer_module',
  source: 'mod_proxy_balancer.c',
  apiVersion: MODULE_API_VERSION,
  hooks: { handler: { fn: balancerHandler, order: HOOK_FIRST } },
  providers: [
    { group: 'proxy_balancer', name: 'balancer', version: '0', provider: hooks },
    { group: 'proxy_scheme', name: 'balancer', version: '0', provider: scheme },
  ],
  configHooks: { postConfig },
});
