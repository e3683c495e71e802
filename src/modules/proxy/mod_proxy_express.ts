// mod_proxy_express: mass reverse proxying by host name (modules/proxy/mod_proxy_express.c).
// With ProxyExpressEnable on, translate_name (before mod_rewrite's and mod_proxy's) looks up the
// request's server name (ap_get_server_name: the Host the client asked for, under
// UseCanonicalName Off) in the DBM file ProxyExpressDBMFile (of type ProxyExpressDBMType); a
// name found there is a reverse proxy request to the stored backend URL plus the request's
// URI: r.filename "proxy:BACKEND/URI", the proxy-server handler. A name not found, a request
// already bound for the proxy, or a DBM file that cannot be opened (silently, as httpd on
// APR-util 1.6) leaves the request to the other modules.
//
// DIFFERENCE (none in behaviour): httpd's code means to add a ProxyPassReverse "/" entry for each
// backend it proxies to, but its loop adds one only where an entry for that backend exists
// already, which changes nothing; plume adds none, so Location headers of a backend are passed
// on as httpd passes them (measured: unchanged).

import {
  defineModule, directive, MODULE_API_VERSION, OR_FILEINFO, DECLINED, OK, HOOK_FIRST,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { getServerName } from '../../server/core/server-name.js';
import { APLOG_DEBUG } from '../../server/log/levels.js';
import { openDbmReadOnly } from '../../lib/dbm/index.js';
import { PROXYREQ_REVERSE } from '../../proxy/api.js';

/** Per-server configuration (express_server_conf). */
interface ExpressServer {
  dbmfile: string | undefined;
  dbmtype: string | undefined;
  enabled: boolean;
}

function createServerConfig(): ExpressServer {
  return { dbmfile: undefined, dbmtype: undefined, enabled: false };
}

/** server_merge: a virtual host's own values, else the main server's; enabled stays on once
 *  the main server turned it on (httpd merges it as "overrides ? overrides : base"). */
function mergeServerConfig(base: Readonly<ExpressServer>, add: Readonly<ExpressServer>): ExpressServer {
  return { dbmfile: add.dbmfile ?? base.dbmfile, dbmtype: add.dbmtype ?? base.dbmtype, enabled: add.enabled || base.enabled };
}

type Cmd = CmdParms<ExpressServer, undefined>;

function setEnabled(cmd: Cmd, on: boolean): undefined {
  cmd.srv.enabled = on;
  return undefined;
}
function setDbmFile(cmd: Cmd, arg: string): undefined {
  cmd.srv.dbmfile = cmd.ctx.serverRootRelative(arg);
  return undefined;
}
function setDbmType(cmd: Cmd, arg: string): undefined {
  cmd.srv.dbmtype = arg;
  return undefined;
}

const MOD = 'proxy_express';

/** xlate_name. */
function xlateName(r: Request): number {
  const sc = self.server(r.server);
  if (sc === undefined || !sc.enabled) return DECLINED;
  const debug = r.wantsLog(MOD, APLOG_DEBUG);
  if (debug) r.log(MOD, APLOG_DEBUG, 'AH01001: proxy_express: Enabled', undefined, 'mod_proxy_express.c(135)');
  if (sc.dbmfile === undefined || r.filename.startsWith('proxy:')) return DECLINED;
  const type = sc.dbmtype ?? 'default';
  if (debug) r.log(MOD, APLOG_DEBUG, `AH01002: proxy_express: Opening DBM file: ${sc.dbmfile} (${type})`, undefined, 'mod_proxy_express.c(141)');
  let backend: string | undefined;
  const name = getServerName(r);
  try {
    const db = openDbmReadOnly(type, sc.dbmfile);
    if (debug) r.log(MOD, APLOG_DEBUG, `AH01003: proxy_express: looking for ${name}`, undefined, 'mod_proxy_express.c(171)');
    const key = Buffer.from(name, 'latin1');
    backend = key.length === 0 ? undefined : db.fetch(key)?.toString('latin1');
  } catch {
    // httpd built on APR-util 1.6 (Debian's 2.4.71) declines without a word; with 1.7 it logs
    // AH10276. Measured: nothing logged for a missing SDBM file.
    return DECLINED;
  }
  if (backend === undefined) return DECLINED;
  if (debug) r.log(MOD, APLOG_DEBUG, `AH01004: proxy_express: found ${name} -> ${backend}`, undefined, 'mod_proxy_express.c(185)');
  r.filename = `proxy:${backend}${r.uri}`;
  r.handler = 'proxy-server';
  r.proxyreq = PROXYREQ_REVERSE;
  if (debug) r.log(MOD, APLOG_DEBUG, `AH01005: proxy_express: rewritten as: ${r.filename}`, undefined, 'mod_proxy_express.c(191)');
  return OK;
}

const self = defineModule<ExpressServer, undefined>({
  name: 'proxy_express_module',
  source: 'mod_proxy_express.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive<ExpressServer, undefined, 'FLAG'>({ name: 'ProxyExpressEnable', args: 'FLAG', where: OR_FILEINFO, help: 'Enable the ProxyExpress functionality', handler: setEnabled }),
    directive<ExpressServer, undefined, 'TAKE1'>({ name: 'ProxyExpressDBMFile', args: 'TAKE1', where: OR_FILEINFO, help: 'Location of ProxyExpressDBMFile file', handler: setDbmFile }),
    directive<ExpressServer, undefined, 'TAKE1'>({ name: 'ProxyExpressDBMType', args: 'TAKE1', where: OR_FILEINFO, help: 'Type of ProxyExpressDBMFile file', handler: setDbmType }),
  ],
  hooks: {
    translateName: { fn: xlateName, order: HOOK_FIRST },
  },
});

export default self;
