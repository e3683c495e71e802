// mod_watchdog (built in): the WatchdogInterval setting other modules' periodic tasks use.

import { CmdParms } from '../../server/config/cmd.js';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';

export interface WatchdogConfig { intervalMs: number }
type Cmd = CmdParms<WatchdogConfig, undefined>;

function interval(cmd: Cmd, arg: string): string | undefined {
  const n = Number(arg);
  if (!/^\d+$/.test(arg) || n < 1) return 'Invalid WatchdogInterval value';
  cmd.srv.intervalMs = n * 1000;
  return undefined;
}

export default defineModule<WatchdogConfig, undefined>({
  name: 'watchdog_module',
  source: 'mod_watchdog.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ intervalMs: 1000 }),
  directives: [
    directive({ name: 'WatchdogInterval', args: 'TAKE1', where: RSRC_CONF, help: 'Watchdog interval in seconds', handler: interval }),
  ],
});
