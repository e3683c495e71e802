// mod_heartbeat: announces this server's capacity to a mod_heartmonitor (httpd's
// modules/cluster/mod_heartbeat.c). Once a second (WatchdogInterval) the singleton watchdog
// sends one UDP datagram "v=1&ready=N&busy=N" to HeartbeatAddress (a multicast group, or any
// address): the scoreboard's worker slots of the current generation waiting for a request,
// and those serving one.

import * as dgram from 'node:dgram';
import { CmdParms, GLOBAL_ONLY } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import { APLOG_WARNING, levelFor } from '../../server/log/levels.js';
import { errnoOf } from '../../server/log/error-log.js';
import { WATCHDOG_SINGLETON } from '../../server/watchdog.js';
import { scoreboard, attachScoreboardFromEnv, attachInProcess, detachScoreboard } from '../../mpm/scoreboard.js';
import { parseHbAddress, type HbAddress } from './heartbeat-address.js';

/** MSG_VERSION. */
const MSG_VERSION = 1;

interface HbConfig {
  /** HeartbeatAddress (its presence is httpd's ctx->active). */
  address: HbAddress | undefined;
}
type Cmd = CmdParms<HbConfig, undefined>;

function setAddress(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  if (cmd.srv.address !== undefined) return 'HeartbeatAddress: May only be specified once.';
  const a = parseHbAddress(arg, 'HeartbeatAddress', 'address');
  if (typeof a === 'string') return a;
  cmd.srv.address = a;
  return undefined;
}

/** The ready and busy worker slots (hb_monitor's scoreboard walk). */
export function capacity(): { ready: number; busy: number } {
  const sb = scoreboard;
  if (sb === null) return { ready: 0, busy: 0 };
  const t = sb.snapshot().tally(false);
  return { ready: t.ready, busy: t.busy + t.graceful };
}

function warn(ctx: ConfigContext, message: string, e: unknown): void {
  const s = ctx.mainServer;
  if (APLOG_WARNING > levelFor(s.logLevel, 'heartbeat')) return;
  s.errorLog.write({ module: 'heartbeat', level: APLOG_WARNING, message, errno: errnoOf(e) });
}

/** hb_monitor: one datagram; a socket made and closed per beat, as httpd's. */
function beat(ctx: ConfigContext, to: HbAddress): Promise<void> {
  const { ready, busy } = capacity();
  const msg = Buffer.from(`v=${MSG_VERSION}&ready=${ready}&busy=${busy}`, 'latin1');
  return new Promise((resolve) => {
    let sock: dgram.Socket;
    try {
      sock = dgram.createSocket('udp4');
    } catch (e) {
      warn(ctx, 'AH02097: Heartbeat: apr_socket_create failed', e);
      resolve();
      return;
    }
    const done = (): void => { try { sock.close(); } catch { /* closed */ } resolve(); };
    sock.once('error', (e) => { warn(ctx, 'AH02099: Heartbeat: apr_socket_sendto failed', e); done(); });
    sock.bind(0, () => {
      try {
        sock.setMulticastLoopback(true);
      } catch (e) {
        warn(ctx, 'AH02098: Heartbeat: apr_mcast_loopback failed', e);
        done();
        return;
      }
      sock.send(msg, to.port, to.host, (e) => {
        if (e !== null && e !== undefined) warn(ctx, 'AH02099: Heartbeat: apr_socket_sendto failed', e);
        done();
      });
    });
  });
}

function postConfig(ctx: ConfigContext): void {
  if (ctx.preflight) return;
  const to = mod.server(ctx.mainServer).address;
  if (to === undefined) return;
  // hb_watchdog_need: the singleton hook-mode watchdog, stepping at WatchdogInterval.
  ctx.provider('watchdog', 'mod_watchdog')?.needHooks(ctx, WATCHDOG_SINGLETON, { step: () => beat(ctx, to) });
}

/** The scoreboard hb_monitor reads: httpd's always exists; plume's workers keep theirs
 *  up to date once attached (as mod_status attaches them). */
function childInit(ctx: ConfigContext): void {
  if (mod.server(ctx.mainServer).address === undefined) return;
  if (!attachScoreboardFromEnv(ctx)) attachInProcess(ctx);
}

function cleanup(ctx: ConfigContext): void {
  if (mod.server(ctx.mainServer).address !== undefined) detachScoreboard();
}

const mod = defineModule<HbConfig, undefined>({
  name: 'heartbeat_module',
  source: 'mod_heartbeat.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ address: undefined }),
  directives: [
    directive({ name: 'HeartbeatAddress', args: 'TAKE1', where: RSRC_CONF, help: 'Address to send heartbeat requests', handler: setAddress }),
  ],
  configHooks: { postConfig, childInit, cleanup },
});
export default mod;
