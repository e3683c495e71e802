// mod_dialup (modules/test/mod_dialup.c, httpd 2.4.71): ModemStandard paces a static file's
// response at a modem's rate. Its handler (run just before the core's default handler) takes
// GET and HEAD requests for a file when the directory has a standard, sets Last-Modified,
// ETag, Accept-Ranges and Content-Length as the default handler does, and sends one
// second's worth of the file at once and another every second after, each followed by a
// flush; the end of the response goes with the last piece shorter than a second's worth
// (a file of N bytes at B bytes a second takes floor(N / B) seconds). A conditional request
// whose conditions are not met is left to the core handler (AH01869, logged at error level).
//
// DIFFERENCE: Apache 2.4.71 (event MPM) sends the first second's worth and then nothing more
// (its timed callback never resumes the response; measured: the client waits until it gives
// up, no access log line); plume goes on every second as the module means to, and the request
// is finished with its last piece (httpd's handler would register its one-second callback even
// when the first piece was the last, finishing the request a second later).

import * as fs from 'node:fs';
import { defineModule, directive, DECLINED, OK, MODULE_API_VERSION, ACCESS_CONF, HOOK_REALLY_LAST } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { EOS, FLUSH, type Bucket } from '../../server/filters.js';
import { coreDir } from '../../server/core/config.js';
import { makeEtag, etagBitsFor } from '../../server/http/etag.js';
import { meetsConditions } from '../../server/http/conditional.js';
import { setAcceptRanges } from '../../server/http/byterange.js';
import { mtimeMicrosOf } from '../../server/request/stat-cache.js';
import { toHttpDate } from '../../server/log/time.js';

const MOD = 'dialup';

/** BITRATE_TO_BYTES(kbit/s) = 1000 * x / 8, kept in an apr_size_t (V.21's 12.5 is 12). */
const bytesOf = (kbits: number): number => Math.floor((1000 * kbits) / 8);

/** modem_bitrates: the standards and their bytes per second. */
export const MODEM_STANDARDS: ReadonlyArray<readonly [string, number]> = [
  ['V.21', bytesOf(0.1)],
  ['V.26bis', bytesOf(2.4)],
  ['V.32', bytesOf(9.6)],
  ['V.34', bytesOf(28.8)],
  ['V.92', bytesOf(56.0)],
  ['i-was-rich-and-got-a-leased-line', bytesOf(1500)],
];

/** Per-directory configuration (dialup_dcfg_t); no merge function, as httpd's: the nearest
 *  section with a ModemStandard wins whole. */
interface DialupDir { bytesPerSecond: number }

/** cmd_modem_standard: the rate of a standard named without regard to case, or httpd's error. */
export function modemRate(input: string): number | string {
  const low = input.toLowerCase();
  for (const [name, bps] of MODEM_STANDARDS) if (name.toLowerCase() === low) return bps;
  return 'mod_dialup: Unknown Modem Standard specified.';
}

function setModemStandard(cmd: CmdParms<undefined, DialupDir>, input: string): string | undefined {
  cmd.dir.bytesPerSecond = 0;
  const r = modemRate(input);
  if (typeof r === 'string') return r;
  cmd.dir.bytesPerSecond = r;
  return undefined;
}

/** The pieces a file of `size` bytes goes out in at `bps` bytes a second (dialup_send_pulse):
 *  [start, length, last] per pulse; the end of the response goes with the first piece shorter
 *  than `bps`, after an empty last piece when the size is a multiple of it. */
export function pulses(size: number, bps: number): Array<{ start: number; length: number; last: boolean }> {
  const out: Array<{ start: number; length: number; last: boolean }> = [];
  for (let start = 0; ; start += bps) {
    const length = Math.min(bps, size - start);
    const last = length < bps;
    out.push({ start, length, last });
    if (last) return out;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((res) => setTimeout(res, ms));

/** dialup_handler. */
async function dialupHandler(r: Request): Promise<number> {
  // M_GET: HEAD too.
  if ((r.method !== 'GET' && r.method !== 'HEAD') || r.finfo === null || r.finfo === undefined || r.finfo.isDirectory()) return DECLINED;
  const bps = self.dir(r)?.bytesPerSecond ?? 0;
  if (bps === 0) return DECLINED;
  const st = r.finfo;
  let fd: fs.promises.FileHandle;
  try {
    fd = await fs.promises.open(r.filename, 'r');
  } catch {
    return DECLINED;
  }
  try {
    const c = coreDir(r);
    r.mtime = Math.min(mtimeMicrosOf(st, r.filename) / 1000, r.requestTime);
    r.headersOut.set('Last-Modified', toHttpDate(r.mtime));
    const etag = makeEtag(r, st, etagBitsFor(c));
    if (etag) r.headersOut.set('ETag', etag);
    setAcceptRanges(r);
    r.clength = st.size;
    r.headersOut.set('Content-Length', String(st.size));
    if (meetsConditions(r) !== OK) {
      r.log(MOD, APLOG_ERR, 'AH01869: dialup: declined, meets conditions, good luck core handler');
      return DECLINED;
    }
    const plan = pulses(st.size, bps);
    for (let i = 0; i < plan.length; i++) {
      if (i > 0) await sleep(1000);
      if (r.connection.aborted) {
        // HTTP_INTERNAL_SERVER_ERROR from the pulse: nothing more can reach the client.
        r.log(MOD, APLOG_ERR, i === 0 ? 'AH01870: dialup: failed, send pulse' : 'AH01868: dialup: pulse returned: 500');
        if (i === 0) return 500;
        r.connection.keepAlive = false;
        r.eosSent = true;
        return OK;
      }
      const p = plan[i]!;
      const bb: Bucket[] = [];
      if (p.length > 0) {
        const buf = Buffer.allocUnsafe(p.length);
        const { bytesRead } = await fd.read(buf, 0, p.length, p.start);
        bb.push({ kind: 'data', data: bytesRead === p.length ? buf : buf.subarray(0, bytesRead) });
      }
      if (p.last) bb.push(EOS);
      else bb.push(FLUSH);
      const w = r.write(bb);
      if (w instanceof Promise) await w;
    }
    return OK;
  } finally {
    await fd.close();
  }
}

const self = defineModule<undefined, DialupDir>({
  name: 'dialup_module',
  source: 'mod_dialup.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ bytesPerSecond: 0 }),
  directives: [
    directive<undefined, DialupDir, 'TAKE1'>({
      name: 'ModemStandard', args: 'TAKE1', where: ACCESS_CONF,
      help: "Modem Standard to.. simulate. Must be one of: 'V.21', 'V.26bis', 'V.32', 'V.34', or 'V.92'",
      handler: setModemStandard,
    }),
  ],
  hooks: {
    // APR_HOOK_ALMOST_LAST: after every other handler, before the core's.
    handler: { fn: dialupHandler, order: HOOK_REALLY_LAST - 1 },
  },
});
export default self;
