// mod_heartmonitor: collects the heartbeats of mod_heartbeat servers (httpd's
// modules/cluster/mod_heartmonitor.c) for mod_lbmethod_heartbeat. The singleton watchdog
// "_heartmonitor_" listens on HeartbeatListen (a multicast group: httpd joins it, so a unicast
// address fails as there) and every 5 seconds stores what it heard: in the slotmem table
// "mod_heartmonitor" (HeartbeatMaxServers slots, 10 by default) or, with HeartbeatMaxServers 0,
// in the HeartbeatStorage file (lines "<ip> &ready=N&busy=N&lastseen=S&port=P"). The
// "heartbeat" handler takes the same message as a POST body.

import * as dgram from 'node:dgram';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { CmdParms, GLOBAL_ONLY } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import { DECLINED, defineModule, directive, HOOK_FIRST, MODULE_API_VERSION, OK, RSRC_CONF, type MaybePromise } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import { globals } from '../../server/core/globals.js';
import { errnoOf } from '../../server/log/error-log.js';
import { coreServer } from '../../server/core/config.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_EMERG, APLOG_ERR, APLOG_WARNING, levelFor } from '../../server/log/levels.js';
import { EOS, FLUSH, dataBucket } from '../../server/filters.js';
import { SLOTMEM_TYPE_PREGRAB, type SlotmemInstance, type SlotmemProvider } from '../../server/slotmem.js';
import type { WatchdogState } from '../../server/watchdog.js';
import { DEFAULT_HEARTBEAT_STORAGE, HM_SLOT_SIZE, argsToMap, decodeHbSlot, encodeHbSlot } from '../proxy/balancers/heartbeat-data.js';
import { atoi } from '../../lib/c-numbers.js';
import { parseHbAddress, type HbAddress } from './heartbeat-address.js';

const WATCHDOG_NAME = '_heartmonitor_';
/** HM_UPDATE_SEC: how often the storage is written (ms). */
const UPDATE_INTERVAL = 5000;
/** SEEN_TIMEOUT: a server not heard from for longer is dropped (s). */
const SEEN_TIMEOUT = 30;
/** MAX_MSG_LEN. */
const MAX_MSG_LEN = 1000;

interface HmServer { ip: string; port: number; busy: number; ready: number; seen: number }

interface HmConfig {
  readonly s: ServerRec;
  listen: HbAddress | undefined;
  /** HeartbeatStorage, resolved in DefaultRuntimeDir (undefined: hb.dat there). */
  storagePath: string | undefined;
  /** HeartbeatMaxServers (main server; httpd's maxworkers). */
  maxServers: number | undefined;
}
type Cmd = CmdParms<HmConfig, undefined>;

function runtimeRelative(ctx: ConfigContext, p: string): string {
  return path.isAbsolute(p) ? p : path.join(globals(ctx).runtimeDir ?? ctx.serverRootRelative('logs'), p);
}

function setListen(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  if (cmd.srv.listen !== undefined) return 'HeartbeatListen: May only be specified once.';
  const a = parseHbAddress(arg, 'HeartbeatListen', 'multicast address');
  if (typeof a === 'string') return a;
  cmd.srv.listen = a;
  return undefined;
}

function setStorage(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  cmd.srv.storagePath = runtimeRelative(cmd.ctx, arg);
  return undefined;
}

function setMaxServers(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const n = atoi(arg);
  cmd.srv.maxServers = n;
  if (n !== 0 && n < 10) return 'HeartbeatMaxServers: Should be 0 for file storage, or greater or equal than 10 for slotmem';
  return undefined;
}

// ---- the store ------------------------------------------------------------------------------------

/** This generation's storage and the servers heard from. */
interface Monitor {
  readonly ctx: ConfigContext;
  readonly conf: HmConfig;
  readonly storagePath: string;
  readonly slot: { readonly storage: SlotmemProvider; readonly inst: SlotmemInstance } | undefined;
  readonly servers: Map<string, HmServer>;
  sock: dgram.Socket | undefined;
  wake: (() => void) | undefined;
}

function log(s: ServerRec, level: number, message: string, e?: unknown): void {
  if (level > levelFor(s.logLevel, 'heartmonitor')) return;
  s.errorLog.write({ module: 'heartmonitor', level, message, errno: e === undefined ? undefined : errnoOf(e) });
}

/** hm_slotmem_update_stat: the server's slot updated, or a slot grabbed for it. */
function slotUpdate(m: Monitor, s: HmServer): void {
  const { storage, inst } = m.slot!;
  let found = false;
  storage.doall(inst, (mem, id) => {
    const old = decodeHbSlot(mem);
    if (old.ip !== s.ip) return 'success';
    found = true;
    storage.put(inst, id, encodeHbSlot({ ip: s.ip, busy: s.busy, ready: s.ready, seenUs: s.seen * 1000, id: old.id }));
    return 'success';
  });
  if (found) return;
  const id = storage.grab(inst);
  if (typeof id !== 'number') return;
  storage.put(inst, id, encodeHbSlot({ ip: s.ip, busy: s.busy, ready: s.ready, seenUs: s.seen * 1000, id }));
}

/** hm_slotmem_remove_stat. */
function slotRemove(m: Monitor, s: HmServer): void {
  const { storage, inst } = m.slot!;
  let id: number | undefined;
  storage.doall(inst, (mem) => {
    const old = decodeHbSlot(mem);
    if (old.ip === s.ip) id = old.id;
    return 'success';
  });
  if (id !== undefined) storage.release(inst, id);
}

function line(ip: string, ready: number, busy: number, seen: number, port: number): string {
  return `${ip} &ready=${ready >>> 0}&busy=${busy >>> 0}&lastseen=${seen >>> 0}&port=${port >>> 0}\n`;
}

/** Writes the storage file through a temporary one and a rename (apr_file_mktemp, then
 *  mode 0444 and apr_file_rename), with httpd's messages for each step that fails. */
function replaceFile(m: Monitor, text: string, codes: readonly [string, string, string, string, string]): void {
  const s = m.conf.s;
  const tmp = `${m.storagePath}.tmp.${randomBytes(4).toString('hex').slice(0, 6)}`;
  let fd: number;
  try {
    fd = fs.openSync(tmp, 'wx', 0o600);
  } catch (e) {
    log(s, APLOG_CRIT, `${codes[0]}: Unable to open tmp file: ${m.storagePath}.tmp.XXXXXX`, e);
    return;
  }
  try {
    fs.writeSync(fd, text, null, 'latin1');
  } catch (e) {
    log(s, APLOG_CRIT, `${codes[1]}: Unable to flush file: ${tmp}`, e);
    fs.closeSync(fd);
    return;
  }
  try { fs.closeSync(fd); } catch (e) { log(s, APLOG_CRIT, `${codes[2]}: Unable to close file: ${tmp}`, e); return; }
  try { fs.chmodSync(tmp, 0o444); } catch (e) { log(s, APLOG_CRIT, `${codes[3]}: Unable to set file permissions on ${tmp}`, e); return; }
  try {
    fs.renameSync(tmp, m.storagePath);
  } catch (e) {
    log(s, APLOG_CRIT, `${codes[4]}: Unable to move file: ${tmp} -> ${m.storagePath}`, e);
    try { fs.unlinkSync(tmp); } catch { /* gone */ }
  }
}

/** hm_file_update_stat: one server's line replaced (or added) in the storage file; the other
 *  lines kept, their lastseen aged by the file's age. */
function fileUpdate(m: Monitor, srv: HmServer): void {
  const now = Date.now();
  let out = '';
  let updated = false;
  let text: string | undefined;
  let mtime = now;
  try {
    text = fs.readFileSync(m.storagePath, 'latin1');
    mtime = fs.statSync(m.storagePath).mtimeMs;
  } catch {
    text = undefined;
  }
  if (text !== undefined) {
    const fage = Math.trunc((now - mtime) / 1000);
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    for (const buf of lines) {
      const sp = buf.indexOf(' ');
      const ip = sp < 0 ? undefined : buf.slice(0, sp);
      if (ip === undefined || buf.startsWith('#')) {
        out += `${buf}\n`;
      } else if (ip !== srv.ip) {
        const t = argsToMap(buf.slice(sp));
        const busy = t.has('busy') ? atoi(t.get('busy')!) : 0;
        const ready = t.has('ready') ? atoi(t.get('ready')!) : 0;
        const seen = t.has('lastseen') ? atoi(t.get('lastseen')!) : SEEN_TIMEOUT;
        const port = t.has('port') ? atoi(t.get('port')!) : 80;
        out += line(ip, ready, busy, fage + seen, port);
      } else {
        out += line(srv.ip, srv.ready, srv.busy, Math.trunc((now - srv.seen) / 1000), srv.port);
        updated = true;
      }
    }
  }
  if (!updated) out += line(srv.ip, srv.ready, srv.busy, Math.trunc((now - srv.seen) / 1000), srv.port);
  replaceFile(m, out, ['AH02074', 'AH02077', 'AH02078', 'AH02079', 'AH02080']);
}

/** hm_update_stats: every server heard from into the storage. */
function updateStats(m: Monitor): void {
  const now = Date.now();
  if (m.slot !== undefined) {
    for (const srv of m.servers.values()) {
      if (Math.trunc((now - srv.seen) / 1000) > SEEN_TIMEOUT) slotRemove(m, srv); else slotUpdate(m, srv);
    }
    return;
  }
  let out = '';
  for (const srv of m.servers.values()) {
    const seen = Math.trunc((now - srv.seen) / 1000);
    if (seen <= SEEN_TIMEOUT) out += line(srv.ip, srv.ready, srv.busy, seen, srv.port);
  }
  replaceFile(m, out, ['AH02081', 'AH02082', 'AH02083', 'AH02084', 'AH02085']);
}

/** hm_processmsg: a datagram "v=1&ready=N&busy=N[&port=P]". */
function processMessage(m: Monitor, msg: Buffer, from: dgram.RemoteInfo): void {
  const t = argsToMap(msg.subarray(0, MAX_MSG_LEN).toString('latin1'));
  const fromText = `${from.address}:${from.port}`;
  const busy = t.get('busy');
  const ready = t.get('ready');
  if (t.get('v') === undefined || busy === undefined || ready === undefined) {
    log(m.conf.s, APLOG_CRIT, `AH02087: malformed message from ${fromText}`);
    return;
  }
  log(m.conf.s, APLOG_DEBUG, `AH02086: ${fromText} busy=${busy} ready=${ready}`);
  const port = t.has('port') ? atoi(t.get('port')!) : 80;
  let srv = m.servers.get(from.address);
  if (srv === undefined) {
    srv = { ip: from.address, port, busy: 0, ready: 0, seen: 0 };
    m.servers.set(from.address, srv);
  }
  srv.busy = atoi(busy);
  srv.ready = atoi(ready);
  srv.seen = Date.now();
}

/** hm_listen: bound to the group's address and port, a member of the group. */
function listen(m: Monitor, a: HbAddress): Promise<dgram.Socket | undefined> {
  const s = m.conf.s;
  return new Promise((resolve) => {
    let sock: dgram.Socket;
    try {
      sock = dgram.createSocket({ type: 'udp4', reuseAddr: true });
    } catch (e) {
      log(s, APLOG_CRIT, 'AH02068: Failed to create listening socket.', e);
      resolve(undefined);
      return;
    }
    const bindFailed = (e: Error): void => {
      log(s, APLOG_CRIT, 'AH02071: Failed to bind on socket.', e);
      log(s, APLOG_CRIT, 'AH02090: Unable to listen for connections!', e);
      try { sock.close(); } catch { /* closed */ }
      resolve(undefined);
    };
    sock.once('error', bindFailed);
    sock.bind(a.port, a.host, () => {
      sock.off('error', bindFailed);
      try {
        sock.addMembership(a.host);
      } catch (e) {
        log(s, APLOG_CRIT, 'AH02072: Failed to join multicast group', e);
        log(s, APLOG_CRIT, 'AH02090: Unable to listen for connections!', e);
        sock.close();
        resolve(undefined);
        return;
      }
      try {
        sock.setMulticastLoopback(true);
      } catch (e) {
        log(s, APLOG_CRIT, 'AH02073: Failed to accept localhost mulitcast on socket.', e);
        log(s, APLOG_CRIT, 'AH02090: Unable to listen for connections!', e);
        sock.close();
        resolve(undefined);
        return;
      }
      sock.on('message', (msg, from) => processMessage(m, msg, from));
      sock.on('error', (e) => log(s, APLOG_CRIT, 'AH02089: recvfrom failed', e));
      resolve(sock);
    });
  });
}

/** hm_watchdog_callback. */
function callback(m: Monitor, a: HbAddress): (state: WatchdogState) => void | Promise<void> {
  let failed = false;
  return async (state) => {
    const s = m.conf.s;
    switch (state) {
      case 'starting': {
        m.sock = await listen(m, a);
        if (m.sock === undefined) { failed = true; return; }
        log(s, APLOG_DEBUG, `AH02091: ${WATCHDOG_NAME} listener started.`);
        return;
      }
      case 'running':
        // httpd's callback writes the storage, then receives for HM_UPDATE_SEC before returning.
        if (failed || m.sock === undefined) return;
        updateStats(m);
        await new Promise<void>((res) => {
          const t = setTimeout(() => { m.wake = undefined; res(); }, UPDATE_INTERVAL);
          t.unref();
          m.wake = () => { clearTimeout(t); res(); };
        });
        return;
      case 'stopping':
        log(s, APLOG_DEBUG, `AH02092: stopping ${WATCHDOG_NAME} listener.`);
        m.wake?.();
        try { m.sock?.close(); } catch { /* closed */ }
        m.sock = undefined;
        return;
    }
  };
}

/** The monitor of this generation (the heartbeat handler writes through it). */
let current: Monitor | undefined;

function postConfig(ctx: ConfigContext): string | undefined {
  current = undefined;
  if (ctx.preflight) return undefined;
  const conf = mod.server(ctx.mainServer);
  const s = ctx.mainServer;
  if (ctx.provider('watchdog', 'mod_watchdog') === undefined) {
    log(s, APLOG_CRIT, 'AH02093: mod_watchdog is required');
    return 'AH02093: mod_watchdog is required';
  }
  // 2.4.71 sets up the storage of an active monitor only (one without HeartbeatListen starts
  // without mod_slotmem_shm).
  if (conf.listen === undefined) return undefined;
  const maxServers = conf.maxServers ?? 10;
  let slot: Monitor['slot'];
  if (maxServers !== 0) {
    const storage = ctx.provider('slotmem', 'shm');
    if (storage === undefined) {
      log(s, APLOG_EMERG, "AH02284: failed to lookup provider 'shm' for 'slotmem', maybe you need to load mod_slotmem_shm?");
      return "AH02284: failed to lookup provider 'shm' for 'slotmem', maybe you need to load mod_slotmem_shm?";
    }
    const inst = storage.create(ctx, 'mod_heartmonitor', HM_SLOT_SIZE, maxServers, SLOTMEM_TYPE_PREGRAB);
    if (typeof inst === 'string') {
      log(s, APLOG_EMERG, 'AH02285: slotmem_create for status failed');
      return 'AH02285: slotmem_create for status failed';
    }
    slot = { storage, inst };
  }
  const m: Monitor = {
    ctx, conf, storagePath: conf.storagePath ?? runtimeRelative(ctx, DEFAULT_HEARTBEAT_STORAGE), slot, servers: new Map(), sock: undefined, wake: undefined,
  };
  current = m;
  const wd = ctx.provider('watchdog', 'mod_watchdog')!;
  const inst = wd.getInstance(ctx, WATCHDOG_NAME, false, true);
  if (inst === 'enotimpl') {
    log(s, APLOG_CRIT, `AH02094: Failed to create watchdog instance (${WATCHDOG_NAME})`);
    return `AH02094: Failed to create watchdog instance (${WATCHDOG_NAME})`;
  }
  wd.registerCallback(inst, 0, m, callback(m, conf.listen));
  if (!ctx.child) log(s, APLOG_DEBUG, `AH02096: wd callback ${WATCHDOG_NAME}`);
  return undefined;
}

/** A heartbeat field as 2.4.71's handler reads it: a whole integer, else `fallback` with a
 *  warning. */
function field(r: Request, value: string, code: string, what: string, fallback: number, ok: (n: number) => boolean): number {
  const n = /^\s*[+-]?\d+$/.test(value) ? Number(value) : Number.NaN;
  if (Number.isSafeInteger(n) && ok(n)) return n;
  r.log('heartmonitor', APLOG_WARNING, `${code}: Invalid ${what} value: ${value}, using ${what === 'port' ? 'default ' : ''}${fallback}`);
  return fallback;
}

/** hm_handler (2.4.71): "SetHandler heartbeat" takes a heartbeat as a POST body and stores it
 *  at once; 503 when this server does not listen for heartbeats, 400 without busy and ready. */
function handler(r: Request): MaybePromise<number> {
  if (r.handler !== 'heartbeat') return DECLINED;
  if (r.method !== 'POST') {
    // The handler declares no method: make_allow's list holds TRACE alone.
    r.headersOut.set('Allow', coreServer(r.server).traceEnable === 'off' ? '' : 'TRACE');
    return 405;
  }
  const m = current;
  if (m === undefined || m.conf.listen === undefined) {
    r.log('heartmonitor', APLOG_ERR, 'AH10561: Heartbeat monitoring not active');
    return 503;
  }
  return (async () => {
    let body: Buffer;
    try {
      body = await r.readAll();
    } catch (e) {
      const st = (e as { status?: number }).status;
      return typeof st === 'number' ? st : 400;
    }
    const t = argsToMap(body.subarray(0, MAX_MSG_LEN).toString('latin1'));
    const busy = t.get('busy');
    const ready = t.get('ready');
    if (busy === undefined || ready === undefined) {
      r.log('heartmonitor', APLOG_ERR, 'AH10563: Missing required parameters: busy and/or ready');
      return 400;
    }
    const port = t.get('port');
    const srv: HmServer = {
      ip: r.connection.remoteIp,
      port: port === undefined ? 80 : field(r, port, 'AH10564', 'port', 80, (n) => n >= 1 && n <= 65535),
      busy: field(r, busy, 'AH10565', 'busy', 0, (n) => n >= -2147483648 && n <= 2147483647),
      ready: field(r, ready, 'AH10566', 'ready', 0, (n) => n >= -2147483648 && n <= 2147483647),
      seen: Date.now(),
    };
    if (m.slot !== undefined) slotUpdate(m, srv); else fileUpdate(m, srv);
    r.contentType = 'text/plain';
    r.headersOut.set('Content-Length', '2');
    await r.write([dataBucket('OK'), FLUSH]);
    await r.write([EOS]);
    return OK;
  })();
}

const mod = defineModule<HmConfig, undefined>({
  name: 'heartmonitor_module',
  source: 'mod_heartmonitor.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: (s) => ({ s, listen: undefined, storagePath: undefined, maxServers: undefined }),
  directives: [
    directive({ name: 'HeartbeatListen', args: 'TAKE1', where: RSRC_CONF, help: 'Address to listen for heartbeat requests', handler: setListen }),
    directive({ name: 'HeartbeatStorage', args: 'TAKE1', where: RSRC_CONF, help: 'Path to store heartbeat data.', handler: setStorage }),
    directive({ name: 'HeartbeatMaxServers', args: 'TAKE1', where: RSRC_CONF, help: 'Max number of servers when using slotmem (instead file) to store heartbeat data.', handler: setMaxServers }),
  ],
  hooks: { handler: { fn: handler, order: HOOK_FIRST, successors: ['mod_proxy.c'] } },
  configHooks: { postConfig },
});
export default mod;
