// mod_logio: bytes on the wire per request and time to first byte, for mod_log_config
// (modules/loggers/mod_logio.c):
//   %I  bytes received, request line and headers included (connection.bytesIn)
//   %O  bytes sent, headers included (connection.bytesOut)
//   %S  the two together
//   %^FB microseconds from the request's start to the first byte of the response, with
//        LogIOTrackTTFB On (else "-").
// The HTTP layer counts the bytes on the connection; this module reads them when the request
// is logged and resets them afterwards, as httpd's logio_transaction does.

import {
  defineModule, directive, MODULE_API_VERSION, OR_ALL, OK, HOOK_MIDDLE, HOOK_LAST,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { FTYPE_RESOURCE, type FilterInstance, type FilterSpec, type Brigade } from '../../server/filters.js';
import { nowMicros } from '../../server/log/time.js';
import { logItem, requestBeginMicros, type LogItemSet } from './log-items-api.js';

/** Per-directory configuration (logio_dirconf_t): LogIOTrackTTFB. */
export interface LogioDir {
  trackTtfb: boolean;
}

function createDirConfig(): LogioDir {
  return { trackTtfb: false };
}

/** Time to first byte per request (µs), recorded by the LOGIO_TTFB_OUT filter. */
const ttfb = new WeakMap<Request, number>();

/** %I %O %S and %^FB for mod_log_config (its `log_items` provider). */
const logItems: LogItemSet = new Map([
  ['I', logItem((r) => String(r.connection.bytesIn))],
  ['O', logItem((r) => String(r.connection.bytesOut))],
  ['S', logItem((r) => String(r.connection.bytesIn + r.connection.bytesOut))],
  ['^FB', logItem((r) => {
    const t = ttfb.get(r);
    return t ? String(t) : '-';
  })],
]);

const ttfbFilter: FilterSpec<undefined> = {
  name: 'LOGIO_TTFB_OUT',
  type: FTYPE_RESOURCE,
  filter(f: FilterInstance<undefined>, bb: Brigade) {
    const r = f.r;
    if (self.dir(r)?.trackTtfb && !ttfb.has(r)) {
      ttfb.set(r, nowMicros() - requestBeginMicros(r));
    }
    f.remove();
    return f.pass(bb);
  },
};

function insertFilter(r: Request): void {
  if (self.dir(r)?.trackTtfb) r.rt.addFilter(r, ttfbFilter);
}

/** logio_transaction: after mod_log_config wrote the line, the counters start again. */
function logTransaction(r: Request): number {
  const c = r.connection;
  c.bytesIn = 0;
  c.bytesOut = 0;
  return OK;
}

function trackTtfb(cmd: CmdParms<undefined, LogioDir>, on: boolean): undefined {
  cmd.dir.trackTtfb = on;
  return undefined;
}

const self = defineModule<undefined, LogioDir>({
  name: 'logio_module',
  source: 'mod_logio.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  // No merge: a section that sets LogIOTrackTTFB replaces the inherited setting (httpd has none).
  directives: [
    directive<undefined, LogioDir, 'FLAG'>({
      name: 'LogIOTrackTTFB', args: 'FLAG', where: OR_ALL,
      help: "Set to 'ON' to enable tracking time to first byte",
      handler: trackTtfb,
    }),
  ],
  hooks: {
    insertFilter: { fn: insertFilter, order: HOOK_LAST },
    logTransaction: { fn: logTransaction, order: HOOK_MIDDLE, predecessors: ['mod_log_config.c'] },
  },
  filters: [ttfbFilter as FilterSpec],
  // logio_pre_config's ap_register_log_handler calls.
  providers: [{ group: 'log_items', name: 'logio', version: '0', provider: logItems }],
});

export default self;
