// mod_reflector (modules/filters/mod_reflector.c): the "reflector" handler answers a POST with
// its own request body, through the response's output filters (so SetOutputFilter DEFLATE
// compresses it), with the request's Content-Length and Content-Type, a Last-Modified of now,
// and the request headers ReflectorHeader names copied (under a new name if one is given).
// OPTIONS is answered with Allow: POST,OPTIONS (and TRACE); other methods get 405.

import { DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_OPTIONS, defineModule, directive, type HookResult } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { EOS, FilterError, dataBucket } from '../../server/filters.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { coreServer } from '../../server/core/config.js';
import { rationalizeMtime, updateMtime } from '../../server/http/conditional.js';
import { setAcceptRanges } from '../../server/http/byterange.js';
import { toHttpDate } from '../../server/log/time.js';

/** ReflectorHeader lines: [request header, response header], in table order. */
interface ReflectorDir {
  readonly headers: [string, string][];
}

/** apr_table_overlay(add, base): this section's entries, then the inherited ones. */
function mergeDirConfig(base: Readonly<ReflectorDir>, add: Readonly<ReflectorDir>): ReflectorDir {
  return { headers: [...add.headers, ...base.headers] };
}

/** make_allow for ap_allow_methods(r, 1, "POST", "OPTIONS"). */
function allow(r: Request): string {
  return coreServer(r.server).traceEnable === 'off' ? 'POST,OPTIONS' : 'POST,OPTIONS,TRACE';
}

async function reflectorHandler(r: Request): Promise<HookResult> {
  if (r.handler !== 'reflector') return DECLINED;
  if (r.method === 'OPTIONS') {
    if (r.assbackwards) return DECLINED;
    r.headersOut.set('Allow', allow(r));
    return OK;
  }
  if (r.method !== 'POST') {
    r.headersOut.set('Allow', allow(r));
    return 405;
  }
  // DIFFERENCE: httpd also answers nothing when the connection is already known to close
  // (keepalive AP_CONN_CLOSE) or the status drops the connection; plume decides that later.
  if (r.main !== null) return OK;
  for (const [from, to] of self.dir(r).headers) {
    // httpd has read repeated request headers into one value joined by ", ".
    const all = r.headersIn.getAll(from);
    if (all.length > 0) r.headersOut.set(to, all.join(', '));
  }
  if (!r.headersOut.has('Last-Modified')) {
    updateMtime(r, Date.now());
    r.headersOut.set('Last-Modified', toHttpDate(rationalizeMtime(r, r.mtime)));
  }
  setAcceptRanges(r);
  const cl = r.headersIn.get('Content-Length');
  if (cl !== undefined) {
    if (!/^[0-9]+$/.test(cl)) {
      r.log('reflector', APLOG_ERR, `AH10243: reflector_handler: invalid content-length '${cl}'`);
      return 400;
    }
    const len = BigInt(cl).toString();
    r.clength = Number(len);
    r.headersOut.set('Content-Length', len);
  }
  const ct = r.headersIn.get('Content-Type');
  if (ct !== undefined) r.contentType = ct;
  for (;;) {
    let piece: Buffer | null;
    try {
      piece = await r.read();
    } catch (e) {
      return e instanceof FilterError ? e.status : 400;
    }
    if (piece === null) break;
    if (piece.length > 0) await r.write([dataBucket(piece)]);
  }
  await r.write([EOS]);
  return OK;
}

type Cmd = CmdParms<undefined, ReflectorDir>;

const self = defineModule<undefined, ReflectorDir>({
  name: 'reflector_module',
  source: 'mod_reflector.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ headers: [] }),
  mergeDirConfig,
  directives: [
    directive<undefined, ReflectorDir, 'TAKE12'>({
      name: 'ReflectorHeader', args: 'TAKE12', where: OR_OPTIONS, help: 'Header to reflect back in the response, with an optional new name.',
      handler: (cmd: Cmd, from: string, to: string | undefined) => { cmd.dir.headers.push([from, to ?? from]); },
    }),
  ],
  hooks: { handler: { fn: reflectorHandler, order: HOOK_MIDDLE } },
});

export default self;
