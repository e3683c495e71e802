// mod_reqtimeout (modules/filters/mod_reqtimeout.c): RequestReadTimeout limits the time a
// client may take to send the request headers and the request body, extended by MinRate as
// data arrives, up to a maximum. Loaded with nothing configured it applies httpd 2.4's
// defaults: header=20-40,MinRate=500 body=20,MinRate=500 (handshake=0).
//
//  - The connection's base server (chosen by address, before the Host header is read) decides
//    whether the module times the connection at all and what the header stage allows; the
//    body stage comes from the server the request was routed to (measured on httpd 2.4.71).
//  - On a timeout httpd logs "AH01382: Request header|body read timeout" at info on the
//    connection, through the base server's error log; the HTTP layer then answers as for any
//    read timeout (408 once the request line is in, nothing before; keep-alive ends).
//  - handshake= is parsed and stored as httpd does; it times TLS handshakes, which plume
//    does not do (it only keeps the module enabled when header=0 body=0 are set).
// The HTTP layer (src/server/http/connection.ts) runs the timers; this module supplies the
// limits, resolved once per server, and the log line, through the "read_timeout" provider.

import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { ConnRec } from '../../server/request/request.js';
import { splitWords } from '../../server/config/lexer.js';
import { APLOG_INFO, levelFor } from '../../server/log/levels.js';
import type { ReadStage, ReadTimeoutProvider } from '../../server/http/connection.js';

/** One stage as configured (reqtimeout_stage_t): seconds, seconds, bytes per second. */
export interface StageConfig {
  readonly timeout: number;
  /** 0: no maximum. */
  readonly maxTimeout: number;
  /** 0: no MinRate. */
  readonly minRate: number;
}

/** Per-server configuration; an undefined stage was not set here (httpd's UNSET). */
export interface ReqtimeoutServer {
  handshake: StageConfig | undefined;
  header: StageConfig | undefined;
  body: StageConfig | undefined;
  /** What the connection layer needs, computed on first use (never merged). */
  resolved: Resolved | undefined;
}

interface Resolved {
  readonly enabled: boolean;
  readonly header: ReadStage | null;
  readonly body: ReadStage | null;
}

/** httpd's MRT_DEFAULT_* values. */
const DEFAULT_HEADER: StageConfig = { timeout: 20, maxTimeout: 40, minRate: 500 };
const DEFAULT_BODY: StageConfig = { timeout: 20, maxTimeout: 0, minRate: 500 };
/** A server whose configuration was never created: every stage unset. */
const UNSET_CONFIG: ReqtimeoutServer = { handshake: undefined, header: undefined, body: undefined, resolved: undefined };

function createServerConfig(): ReqtimeoutServer {
  return { handshake: undefined, header: undefined, body: undefined, resolved: undefined };
}

/** reqtimeout_merge_srv_config: each stage the virtual host does not set is inherited. */
function mergeServerConfig(base: Readonly<ReqtimeoutServer>, add: Readonly<ReqtimeoutServer>): ReqtimeoutServer {
  return {
    handshake: add.handshake ?? base.handshake,
    header: add.header ?? base.header,
    body: add.body ?? base.body,
    resolved: undefined,
  };
}

/** A stage in the connection layer's units; null when the stage sets no limit (0). */
function toReadStage(c: StageConfig): ReadStage | null {
  if (c.timeout <= 0) return null;
  // apr_time_from_sec(1) / rate: whole microseconds per byte.
  const msPerByte = c.minRate > 0 ? Math.trunc(1000000 / c.minRate) / 1000 : 0;
  return { timeoutMs: c.timeout * 1000, maxTimeoutMs: c.maxTimeout * 1000, msPerByte };
}

function resolve(cfg: ReqtimeoutServer): Resolved {
  let r = cfg.resolved;
  if (r === undefined) {
    // reqtimeout_init: disabled for a server that sets header=0 and body=0 (the handshake
    // stage, unset or 0, does not count).
    const enabled = !((cfg.handshake?.timeout ?? 0) <= 0 && cfg.header?.timeout === 0 && cfg.body?.timeout === 0);
    r = { enabled, header: toReadStage(cfg.header ?? DEFAULT_HEADER), body: toReadStage(cfg.body ?? DEFAULT_BODY) };
    cfg.resolved = r;
  }
  return r;
}

function serverConf(s: ServerRec): ReqtimeoutServer {
  return self.server(s) ?? UNSET_CONFIG;
}

const provider: ReadTimeoutProvider = {
  header(s) {
    const r = resolve(serverConf(s));
    return r.enabled ? r.header : undefined;
  },
  body(s) {
    return resolve(serverConf(s)).body;
  },
  timedOut(c: ConnRec, stage) {
    // ap_log_cerror: the base server's error log and log level, with the client's address.
    const s = c.baseServer;
    if (APLOG_INFO > levelFor(s.logLevel, 'reqtimeout')) return;
    s.errorLog.write({
      module: 'reqtimeout', level: APLOG_INFO,
      message: `AH01382: Request ${stage} read timeout`,
      client: { ip: c.remoteIp, port: c.remotePort },
      context: { localIp: c.localIp, localPort: c.localPort, keepalives: c.keepalives },
    });
  },
};

// ---- RequestReadTimeout ------------------------------------------------------------------

/** C's strtol(s, &end, 10) stored in an int: the value (the low 32 bits of the saturated
 *  long) and the text from where parsing stopped (all of `s` when there is no number). */
function strtolInt(s: string): { value: number; rest: string } {
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d+)/.exec(s);
  if (m === null) return { value: 0, rest: s };
  const LONG_MAX = 9223372036854775807n;
  let v = BigInt(m[2]!);
  if (v > LONG_MAX) v = m[1] === '-' ? LONG_MAX + 1n : LONG_MAX;
  if (m[1] === '-') v = -v;
  return { value: Number(BigInt.asIntN(32, v)), rest: s.slice(m[0].length) };
}

/** parse_int: a non-negative decimal integer filling the whole text. */
function parseInt32(text: string): number | string {
  const { value, rest } = strtolInt(text);
  if (rest === text) return `Value '${text}' not numerical`;
  if (rest !== '') return `Cannot parse '${rest}'`;
  if (value < 0) return 'Value must be non-negative';
  return value;
}

/** set_reqtimeout_param: "timeout[-maxtimeout][,MinRate=rate]" for one stage. */
function parseStage(val: string): StageConfig | string {
  let timeout: number | string;
  let maxTimeout: number | string = 0;
  let minRate: number | string = 0;
  const at = val.toLowerCase().indexOf(',minrate=');
  if (at >= 0) {
    let initial = val.slice(0, at);
    minRate = parseInt32(val.slice(at + ',minrate='.length));
    if (typeof minRate === 'string') return minRate;
    if (minRate === 0) return 'Minimum data rate must be larger than 0';
    const dash = initial.indexOf('-');
    if (dash >= 0) {
      maxTimeout = parseInt32(initial.slice(dash + 1));
      if (typeof maxTimeout === 'string') return maxTimeout;
      initial = initial.slice(0, dash);
    }
    timeout = parseInt32(initial);
  } else {
    if (val.includes('-')) return 'Must set MinRate option if using timeout range';
    timeout = parseInt32(val);
  }
  if (typeof timeout === 'string') return timeout;
  if (maxTimeout !== 0 && timeout >= maxTimeout) return 'Maximum timeout must be larger than initial timeout';
  return { timeout, maxTimeout, minRate };
}

/** set_reqtimeouts: key=value words; a later stage setting replaces an earlier one. */
function requestReadTimeout(cmd: CmdParms<ReqtimeoutServer, undefined>, raw: string): string | undefined {
  const conf = cmd.srv;
  for (const word of splitWords(raw)) {
    const eq = word.indexOf('=');
    if (eq < 0) return "Invalid RequestReadTimeout parameter. Parameter must be in the form 'key=value'";
    const key = word.slice(0, eq);
    const val = word.slice(eq + 1);
    const k = key.toLowerCase();
    const stage = k === 'handshake' || k === 'header' || k === 'body' ? parseStage(val) : 'Unknown RequestReadTimeout parameter';
    if (typeof stage === 'string') return `RequestReadTimeout: ${key}=${val}: ${stage}`;
    if (k === 'handshake') conf.handshake = stage;
    else if (k === 'header') conf.header = stage;
    else conf.body = stage;
  }
  return undefined;
}

const self = defineModule<ReqtimeoutServer, undefined>({
  name: 'reqtimeout_module',
  source: 'mod_reqtimeout.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive<ReqtimeoutServer, undefined, 'RAW_ARGS'>({
      name: 'RequestReadTimeout', args: 'RAW_ARGS', where: RSRC_CONF,
      help: 'Set various timeout parameters for TLS handshake and/or reading request headers and body',
      handler: requestReadTimeout,
    }),
  ],
  providers: [{ group: 'read_timeout', name: 'reqtimeout', version: '0', provider }],
});

export default self;
