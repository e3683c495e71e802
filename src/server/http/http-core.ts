// http_core (httpd's modules/http/http_core.c): KeepAlive, KeepAliveTimeout,
// MaxKeepAliveRequests, TRACE (ap_send_http_trace) and OPTIONS * (both answered at
// map_to_storage, before any access check, as httpd does), and the method registry.

import { CmdParms, NOT_IN_DIR_LOC_FILE } from '../config/cmd.js';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF, DECLINED, DONE, HOOK_MIDDLE } from '../module.js';
import { parseTimeout, coreServer } from '../core/config.js';
import type { Request } from '../request/request.js';
import { APLOG_INFO } from '../log/levels.js';
import type { Runtime } from '../runtime.js';
import { globals } from '../core/globals.js';
import { FilterError, type Bucket } from '../filters.js';

/** LimitRequestBody when not configured (1 GiB since httpd 2.4.54; 0 = unlimited). */
export const DEFAULT_LIMIT_REQUEST_BODY = 1073741824;

/** The methods httpd knows by number (ap_method_number_of); others are M_INVALID unless
 *  registered (RegisterHttpMethod, <Limit>). */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'PROPFIND', 'PROPPATCH',
  'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'VERSION-CONTROL', 'CHECKOUT', 'UNCHECKOUT', 'CHECKIN',
  'UPDATE', 'LABEL', 'REPORT', 'MKWORKSPACE', 'MKACTIVITY', 'BASELINE-CONTROL', 'MERGE',
]);

/** Whether a method is not M_INVALID. */
export function isKnownMethod(rt: Runtime, method: string): boolean {
  return methodKnownIn(rt.ctx, method);
}

/** The same, while the configuration is read. */
export function methodKnownIn(ctx: Runtime['ctx'], method: string): boolean {
  return KNOWN_METHODS.has(method) || globals(ctx).registeredMethods.has(method);
}

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

/** ap_send_http_trace: echo the request as message/http (a map_to_storage hook, so no
 *  access control applies), unless TraceEnable off (405 with an empty Allow). */
export async function sendHttpTrace(r: Request): Promise<number> {
  if (r.method !== 'TRACE') return DECLINED;
  let o: Request = r;
  while (o.prev) o = o.prev;
  const t = coreServer(o.server).traceEnable ?? 'on';
  if (t === 'off') {
    o.notes.set('error-notes', 'TRACE denied by server configuration');
    r.headersOut.set('Allow', '');
    return 405;
  }
  let echoed: Buffer | undefined;
  if (r.body) {
    if (t !== 'extended') {
      r.log('http', APLOG_INFO, `AH01595: ${r.method} with body is not allowed for ${r.uri}`);
      o.notes.set('error-notes', 'TRACE with a request body is not allowed');
      return 413;
    }
    if (r.body.length > 65536) {
      o.notes.set('error-notes', 'Extended TRACE request bodies cannot exceed 64k\n');
      return 413;
    }
    try {
      // Through the input filters, as ap_get_client_block reads.
      echoed = await r.readAll();
    } catch (e) {
      if (e instanceof FilterError) return e.status;
      throw e;
    }
    if (echoed.length > 65536) {
      o.notes.set('error-notes', 'Extended TRACE request bodies cannot exceed 64k\n');
      return 413;
    }
  }
  let head = r.theRequest + '\r\n';
  r.headersIn.forEach((n, v) => { head += `${n}: ${v}\r\n`; });
  head += '\r\n';
  r.contentType = 'message/http';
  const bb: Bucket[] = [{ kind: 'data', data: Buffer.from(head, 'latin1') }];
  if (echoed && echoed.length) bb.push({ kind: 'data', data: echoed });
  await r.write(bb);
  return DONE;
}

/** map_to_storage: TRACE, and OPTIONS * answered at once with no Allow header
 *  (http_send_options). */
function httpMapToStorage(r: Request): number | Promise<number> {
  if (r.method === 'TRACE') return sendHttpTrace(r);
  return r.method === 'OPTIONS' && r.uri === '*' ? DONE : DECLINED;
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
  hooks: {
    mapToStorage: { fn: httpMapToStorage, order: HOOK_MIDDLE },
  },
});
