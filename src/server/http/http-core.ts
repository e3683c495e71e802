// http_core (httpd's modules/http/http_core.c): KeepAlive, KeepAliveTimeout,
// MaxKeepAliveRequests, and the TRACE handler.

import { CmdParms, NOT_IN_DIR_LOC_FILE } from '../config/cmd.js';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF, DECLINED, OK, HOOK_REALLY_FIRST } from '../module.js';
import { parseTimeout } from '../core/core-module.js';
import { coreServer } from '../core/core-module.js';
import type { Request } from '../request/request.js';
import { APLOG_ERR } from '../log/levels.js';

type Cmd = CmdParms<undefined, undefined>;

function keepAlive(cmd: Cmd, on: boolean): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
  if (err) return err;
  cmd.server.setLimit('keepAlive', on);
  return undefined;
}

function keepAliveTimeout(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
  if (err) return err;
  const ms = parseTimeout(arg);
  if (ms === undefined) return 'KeepAliveTimeout has wrong format';
  cmd.server.setLimit('keepAliveTimeout', ms);
  return undefined;
}

function maxKeepAliveRequests(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
  if (err) return err;
  const n = Number.parseInt(arg, 10);
  cmd.server.setLimit('maxKeepAliveRequests', Number.isNaN(n) ? 0 : n);
  return undefined;
}

/** TRACE: echo the request (ap_send_http_trace), unless TraceEnable Off. */
async function traceHandler(r: Request): Promise<number> {
  if (r.method !== 'TRACE') return DECLINED;
  const t = coreServer(r.server).traceEnable ?? 'on';
  if (t === 'off') {
    r.log('http', APLOG_ERR, `AH00669: TRACE denied by server configuration`);
    r.headersOut.set('Allow', 'GET,POST,OPTIONS,HEAD');
    return 405;
  }
  if (r.body && t !== 'extended') {
    r.log('http', APLOG_ERR, `AH00670: TRACE with a request body is not allowed`);
    return 413;
  }
  let body = r.theRequest + '\r\n';
  r.headersIn.forEach((n, v) => { body += `${n}: ${v}\r\n`; });
  body += '\r\n';
  r.contentType = 'message/http';
  await r.write([{ kind: 'data', data: Buffer.from(body, 'latin1') }]);
  await r.write([{ kind: 'eos' }]);
  return OK;
}

export const httpCore = defineModule<undefined, undefined>({
  name: 'http_module',
  source: 'http_core.c',
  apiVersion: MODULE_API_VERSION,
  directives: [
    directive({ name: 'KeepAliveTimeout', args: 'TAKE1', where: RSRC_CONF, help: 'Keep-Alive timeout duration (sec)', handler: keepAliveTimeout }),
    directive({ name: 'MaxKeepAliveRequests', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of Keep-Alive requests per connection, or 0 for infinite', handler: maxKeepAliveRequests }),
    directive({ name: 'KeepAlive', args: 'FLAG', where: RSRC_CONF, help: 'Whether persistent connections should be On or Off', handler: keepAlive }),
  ],
  hooks: { handler: { fn: traceHandler, order: HOOK_REALLY_FIRST } },
});
