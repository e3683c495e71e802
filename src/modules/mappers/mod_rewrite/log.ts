// mod_rewrite's trace log (do_rewritelog): at `LogLevel rewrite:traceN` each step is logged as
// "HOST LOGNAME USER [SERVER/sid#ID][rid#ID/initial|subreq[/redir#N]] [perdir DIR] TEXT",
// with the source line Apache 2.4.71's mod_rewrite.c logs it from. The message is formatted
// only when the level is enabled.

import type { Request } from '../../../server/request/request.js';
import { APLOG_DEBUG } from '../../../server/log/levels.js';
import { getServerName } from '../../../server/core/server-name.js';

/** Source lines of mod_rewrite.c in Apache 2.4.71 for each trace message. */
export const L = {
  qsNone: 846, qsDiscard: 862, split: 893, reduce: 954, startsWith: 998, prefixStatNoLast: 1039, prefixStatCompare: 1043,
  stripPrefix: 1087, addSubstPrefix: 1105, cacheFailed: 1777, mapFailedTxt: 1782, mapOkTxt: 1788, cacheOkTxt: 1793,
  rndChosen: 1799, cacheFailedDbm: 1833, mapFailedDbm: 1838, mapOkDbm: 1844, cacheOkDbm: 1851, mapFailedPrg: 1905,
  multipleSql: 1572, mapFailedSql: 1861, mapOkSql: 1866, cacheFailedSql: 1877, mapFailedSqlCached: 1882,
  mapOkSqlCached: 1888, cacheOkSql: 1895, mapOkPrg: 1910, mapFailedInt: 1920, mapOkInt: 1925, lookaheadU: 2023, lookaheadF: 2058, time: 2081, ipv6: 2090,
  escapeBackref: 2604, unsetEnv: 2709, setEnv: 2719, setCookie: 2825, skipCookie: 2828, condU: 4212, condF: 4227,
  exprFailed: 4286, cond: 4314, mimeType: 4334, handler: 4348, pathInfo: 4387, stripPerdir: 4398, applying: 4407,
  rewrite: 4495, unsafe3f: 4497, forcing: 4516, addPerdir: 4534, addRoot: 4548, proxy: 4575, explicitRedirect: 4590,
  implicitRedirect: 4612, lastsub: 4688, passthrough: 4738, endFlag: 4747, declineEnd: 4948, declineUri: 4958,
  initUri: 5016, initFilename: 5020, already: 5032, goProxy: 5107, escapeRedirect: 5117, queryRedirect: 5135,
  redirectTo: 5152, localPath: 5177, prefixFailed: 5229, prefixed: 5235, goAhead: 5239, passThrough: 5244,
  dDeclineEnd: 5313, dInit: 5343, dGoProxy: 5418, dReplacePrefix: 5434, dEscapeRedirect: 5474, dQueryRedirect: 5491,
  dRedirectTo: 5508, dIgnoring: 5540, dReplaceBase: 5554, dStripDocroot: 5575, dContext: 5596, dInternal: 5608,
  dPassThrough: 5616, forceType: 5633, forceHandler: 5642,
} as const;

const ridOf = new WeakMap<Request, string>();
let ridSeq = 0;
const sidOf = new WeakMap<object, string>();

/** Stand-ins for httpd's server_rec and request_rec pointers: stable per object, in the
 *  same hexadecimal form. */
function ptr(n: number): string {
  return (0x7f0000000000 + n * 0x4a8).toString(16);
}

export function rid(r: Request): string {
  let s = ridOf.get(r);
  if (s === undefined) { s = ptr(0x100000 + ++ridSeq); ridOf.set(r, s); }
  return s;
}

export function sid(r: Request): string {
  let s = sidOf.get(r.server);
  if (s === undefined) { s = ptr(r.server.id + 1); sidOf.set(r.server, s); }
  return s;
}

/** Whether the trace message at this rewrite level (1-8) would be written. */
export function traceOn(r: Request, level: number): boolean {
  return r.wantsLog('rewrite', APLOG_DEBUG + level);
}

/** do_rewritelog: callers check traceOn first so nothing is formatted when it is off. */
export function rewritelog(r: Request, level: number, perdir: string | undefined, line: number, text: string): void {
  let redir = 0;
  for (let p = r.prev; p !== null; p = p.prev) redir++;
  const rhost = r.connection.remoteHost ?? r.connection.remoteIp;
  const user = r.user === undefined ? '-' : r.user === '' ? '""' : r.user;
  const where = `${r.main !== null ? 'subreq' : 'initial'}${redir ? `/redir#${redir}` : ''}`;
  const msg = `${rhost} - ${user} [${getServerName(r)}/sid#${sid(r)}][rid#${rid(r)}/${where}] ${perdir !== undefined ? `[perdir ${perdir}] ` : ''}${text}`;
  r.log('rewrite', APLOG_DEBUG + level, msg, undefined, `mod_rewrite.c(${line})`);
}
