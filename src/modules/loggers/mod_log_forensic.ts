// mod_log_forensic: ForensicLog, a log of every request written twice (modules/loggers/
// mod_log_forensic.c): before anything else runs for it, "+ID|request line|Name:value|..." with
// all of its request headers; once it is logged, "-ID". A request that crashed its process, or
// never finished, is a "+" line without its "-" (httpd's check_forensic script lists them).
//  - ID: the request's UNIQUE_ID (mod_unique_id runs first) or else PID:hex seconds:hex counter;
//    it is also the request's note "forensic-id" (LogFormat %{forensic-id}n).
//  - Escaping: a byte that is not printable ASCII, and '|', ':' and '%', is written as %xx
//    (lower-case hex), so that the separators stay unambiguous.
//  - Internal redirects are not written again (only the request read from the client).
//  - ForensicLog is per server (a virtual host without one uses the main server's); a file
//    name is relative to the ServerRoot, "|program" a piped log.

import {
  defineModule, directive, MODULE_API_VERSION, RSRC_CONF, DECLINED, OK, HOOK_REALLY_FIRST, HOOK_REALLY_LAST,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import { tableGet } from '../../server/apr-table.js';
import { openLogTarget, type LogSink } from '../../server/log/log-writer.js';
import { errnoOf } from '../../server/log/error-log.js';
import { APLOG_ERR } from '../../server/log/levels.js';

/** Per-server configuration (httpd's fcfg): the log's name, its sink once opened. */
interface ForensicServer {
  logname: string | undefined;
  sink: LogSink | undefined;
}

function createServerConfig(): ForensicServer {
  return { logname: undefined, sink: undefined };
}

function mergeServerConfig(base: Readonly<ForensicServer>, add: Readonly<ForensicServer>): ForensicServer {
  return { logname: add.logname ?? base.logname, sink: undefined };
}

function setForensicLog(cmd: CmdParms<ForensicServer, undefined>, name: string): string | undefined {
  cmd.srv.logname = name;
  return undefined;
}

/** %xx for the bytes T_ESCAPE_FORENSIC marks (httpd's gen_test_char.c): not printable ASCII,
 *  and the separators '|', ':' and '%'. */
export function forensicEscape(s: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f && c !== 0x7c && c !== 0x3a && c !== 0x25) continue;
    out += s.slice(from, i) + '%' + (c & 0xff).toString(16).padStart(2, '0');
    from = i + 1;
  }
  return from === 0 ? s : out + s.slice(from);
}

/** The "+" line of a request (without its newline). */
export function forensicLine(id: string, theRequest: string, headers: Iterable<readonly [string, string]>): string {
  let line = `+${id}|${forensicEscape(theRequest)}`;
  for (const [k, v] of headers) line += `|${forensicEscape(k)}:${forensicEscape(v)}`;
  return line;
}

/** The ID of each request logged, by request (httpd's request_config slot). */
const ids = new WeakMap<Request, string>();
/** httpd's next_id: counts the requests this process gave an ID of its own. */
let nextId = 0;

function logBefore(r: Request): number {
  const cfg = self.server(r.server);
  const sink = cfg?.sink;
  if (sink === undefined || r.prev !== null) return DECLINED;
  let id = tableGet(r.subprocessEnv, 'UNIQUE_ID');
  if (id === undefined) {
    nextId = (nextId + 1) >>> 0;
    id = `${process.pid}:${Math.floor(Date.now() / 1000).toString(16)}:${nextId.toString(16)}`;
  }
  ids.set(r, id);
  sink.write(forensicLine(id, r.theRequest, r.headersIn.entries()) + '\n');
  r.notes.set('forensic-id', id);
  return OK;
}

function logAfter(r: Request): number {
  // The request read from the client (the one given an ID), whichever it redirected to.
  let first = r;
  while (first.prev !== null) first = first.prev;
  const sink = self.server(first.server)?.sink;
  const id = ids.get(first);
  if (sink === undefined || id === undefined) return DECLINED;
  sink.write(`-${id}\n`);
  return OK;
}

/** Why the logs could not be opened (httpd's open_logs hook failing: AH00015). */
class OpenError extends Error {}

/** log_init (the open_logs hook): every server's log, one sink per file or program. */
function postConfig(ctx: ConfigContext): string | undefined {
  const sinks = ctx.getScratch('log_forensic.sinks', () => new Map<string, LogSink>());
  try {
    for (const s of [ctx.mainServer, ...ctx.vhosts] as ServerRec[]) {
      const cfg = self.server(s);
      if (cfg === undefined || cfg.logname === undefined || cfg.sink !== undefined) continue;
      cfg.sink = open(ctx, sinks, cfg.logname);
    }
  } catch (e) {
    for (const sink of sinks.values()) sink.close();
    sinks.clear();
    if (e instanceof OpenError) return 'AH00015: Unable to open logs';
    throw e;
  }
  return undefined;
}

function open(ctx: ConfigContext, sinks: Map<string, LogSink>, logname: string): LogSink {
  const pipe = logname.startsWith('|');
  const key = pipe ? logname : ctx.serverRootRelative(logname);
  const known = sinks.get(key);
  if (known !== undefined) return known;
  try {
    const sink = openLogTarget(pipe ? logname : key, (p) => ctx.serverRootRelative(p));
    sinks.set(key, sink);
    return sink;
  } catch (e) {
    const message = pipe ? `AH00650: couldn't spawn forensic log pipe ${logname}` : `AH00651: could not open forensic log file ${key}.`;
    ctx.startupLog.write({ module: 'log_forensic', level: APLOG_ERR, message, errno: errnoOf(e) });
    throw new OpenError(message);
  }
}

function cleanup(ctx: ConfigContext): void {
  const sinks = ctx.getScratch('log_forensic.sinks', () => new Map<string, LogSink>());
  for (const sink of sinks.values()) sink.close();
  sinks.clear();
}

const self = defineModule<ForensicServer, undefined>({
  name: 'log_forensic_module',
  source: 'mod_log_forensic.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive<ForensicServer, undefined, 'TAKE1'>({
      name: 'ForensicLog', args: 'TAKE1', where: RSRC_CONF,
      help: 'the filename of the forensic log',
      handler: setForensicLog,
    }),
  ],
  hooks: {
    postReadRequest: { fn: logBefore, order: HOOK_REALLY_FIRST, predecessors: ['mod_unique_id.c'] },
    logTransaction: { fn: logAfter, order: HOOK_REALLY_LAST },
  },
  configHooks: { postConfig, cleanup },
});

export default self;
