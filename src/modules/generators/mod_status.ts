// mod_status (modules/generators/mod_status.c): the server-status handler (SetHandler
// server-status, or the application/x-httpd-status type). It reads the scoreboard
// (src/mpm/scoreboard.ts) — every worker process of the parent — and prints the HTML page or,
// with ?auto, the machine-readable form; ?refresh[=N] adds a Refresh header, ?notable the
// table-less page. ExtendedStatus (On by default once mod_status is loaded) adds the totals
// and the per-slot table. Layout, field names and number formats measured on Apache 2.4.71
// with the event MPM; numbers go through APR's own printf conversions (apr_snprintf's
// %g prints ".5", not "0.5") on the single-precision values httpd computes. Other modules add
// their sections through the status hook (src/server/status-hook.ts), as httpd's status_hook.

import * as os from 'node:os';
import {
  DECLINED, HOOK_MIDDLE, HOOK_REALLY_FIRST, MODULE_API_VERSION, OK, defineModule, type MaybePromise,
} from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import type { ConfigContext } from '../../server/config/context.js';
import { EOS, type Bucket } from '../../server/filters.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { nowMicros, timeZoneGeneration } from '../../server/log/time.js';
import { escapeLogItem, strftime } from '../../server/log/error-log-format.js';
import { escapeHtml } from '../../server/http/response.js';
import { getServerName } from '../../server/core/server-name.js';
import { BUILT, serverBanner } from '../../server/version.js';
import { kept } from '../../engine/kept-shapes.js';
import { AP_STATUS_EXTENDED, AP_STATUS_NOTABLE, AP_STATUS_SHORT, runStatusHooks } from '../../server/status-hook.js';
import {
  scoreboard, attachScoreboardFromEnv, attachInProcess, detachScoreboard, newSlotView,
  type ScoreboardImage,
  SERVER_DEAD, SERVER_STARTING, SERVER_READY, SERVER_BUSY_READ, SERVER_BUSY_WRITE,
  SERVER_BUSY_KEEPALIVE, SERVER_BUSY_LOG, SERVER_BUSY_DNS, SERVER_CLOSING, SERVER_GRACEFUL,
  SERVER_IDLE_KILL,
} from '../../mpm/scoreboard.js';

const STATUS_MAGIC_TYPE = 'application/x-httpd-status';
const KBYTE = 1024;
const MBYTE = 1048576;
const GBYTE = 1073741824;
/** sysconf(_SC_CLK_TCK): CPU times are kept in ticks. */
const TICK = 100;
/** Scoreboard characters per line of the HTML page. */
const STATUS_MAXLINE = 64;
const DEFAULT_TIME_FORMAT = '%A, %d-%b-%Y %H:%M:%S %Z';
/** apr_brigade_write's heap bucket: ap_rputs output goes down in pieces of about this size
 *  (a page longer than one piece is sent chunked, as httpd sends it). */
const BUCKET_SIZE = 8000;
const f = Math.fround;

// ---- APR's number conversions (apr_snprintf.c: apr_cvt, apr_gcvt, conv_fp) -----------------

const NDIG = 80;

/** C's modf: returns the fraction and leaves the integer part in `modfInt`, with
 *  modf(inf) = 0 (integer part inf). No tuple: status pages format numbers per request. */
let modfInt = 0;
function modf(x: number): number {
  if (!Number.isFinite(x)) { modfInt = x; return Number.isNaN(x) ? x : 0; }
  const i = Math.trunc(x);
  modfInt = i;
  return x - i;
}

/** apr_cvt's digit buffer, reused (one conversion at a time). */
const cvtBuf = new Uint8Array(NDIG + 1);
/** What aprCvt leaves: the digits in cvtBuf[0, cvtLen), the decimal point's position, the sign. */
let cvtLen = 0;
let cvtDecpt = 0;
let cvtNegative = false;

/** apr_cvt: `ndigits` digits (eflag) or digits to `ndigits` places after the point (!eflag),
 *  the decimal point position and the sign, with V7's rounding. No object or string: status
 *  pages format numbers per request. */
function aprCvt(value: number, ndigits: number, eflag: boolean): void {
  if (ndigits >= NDIG - 1) ndigits = NDIG - 2;
  const buf = cvtBuf.fill(0);
  let arg = value;
  let r2 = 0;
  let negative = false;
  let p = 0;
  if (arg < 0) { negative = true; arg = -arg; }
  cvtNegative = negative;
  arg = modf(arg);
  let fi = modfInt;
  let p1 = NDIG;
  if (fi !== 0) {
    while (p1 > 0 && fi !== 0) {
      const fj = modf(fi / 10);
      fi = modfInt;
      buf[--p1] = Math.trunc((fj + 0.03) * 10) + 48;
      r2++;
    }
    while (p1 < NDIG) buf[p++] = buf[p1++]!;
  } else if (arg > 0) {
    let fj: number;
    while ((fj = arg * 10) < 1) { arg = fj; r2--; }
  }
  p1 = ndigits;
  if (!eflag) p1 += r2;
  if (p1 < 0) { cvtLen = 0; cvtDecpt = -ndigits; return; }
  let decpt = r2;
  while (p <= p1 && p < NDIG) {
    arg = modf(arg * 10);
    buf[p++] = Math.trunc(modfInt) + 48;
  }
  if (p1 >= NDIG) { cvtLen = NDIG - 1; cvtDecpt = decpt; return; }
  p = p1;
  buf[p1] = buf[p1]! + 5;
  while (buf[p1]! > 57) {
    buf[p1] = 48;
    if (p1 > 0) { --p1; buf[p1] = buf[p1]! + 1; } else {
      buf[p1] = 49;
      decpt++;
      if (!eflag) {
        if (p > 0) buf[p] = 48;
        p++;
      }
    }
  }
  let end = 0;
  while (end < p && buf[end] !== 0) end++;
  cvtLen = end;
  cvtDecpt = decpt;
}

/** Digit i of the last conversion; 0 (C's NUL) past its end. */
function digitAt(i: number): number { return i < cvtLen ? cvtBuf[i]! : 0; }

/** Where aprG and aprF put their text together (at most about NDIG + 10 characters). */
const fmtBuf = Buffer.alloc(4 * NDIG);

/** printf's %g (precision 6 by default) as apr_vformatter does it. */
export function aprG(value: number, precision = 6): string {
  let ndigit = precision === 0 ? 1 : precision;
  aprCvt(value, ndigit, true);
  let decpt = cvtDecpt;
  const o = fmtBuf;
  let n = 0;
  if (cvtNegative) o[n++] = 0x2d;
  for (let i = ndigit - 1; i > 0 && digitAt(i) === 0x30; i--) ndigit--;
  if ((decpt >= 0 && decpt - ndigit > 4) || (decpt < 0 && decpt < -3)) {
    decpt--;
    o[n++] = digitAt(0);
    o[n++] = 0x2e;
    for (let i = 1; i < ndigit; i++) o[n++] = digitAt(i);
    o[n++] = 0x65;
    if (decpt < 0) { decpt = -decpt; o[n++] = 0x2d; } else o[n++] = 0x2b;
    if (Math.trunc(decpt / 100) > 0) n += o.write(String(Math.trunc(decpt / 100)), n, 'latin1');
    if (Math.trunc(decpt / 10) > 0) n += o.write(String(Math.trunc((decpt % 100) / 10)), n, 'latin1');
    o[n++] = 0x30 + (decpt % 10);
  } else {
    if (decpt <= 0) {
      if (digitAt(0) !== 0x30) o[n++] = 0x2e;
      while (decpt < 0) { decpt++; o[n++] = 0x30; }
    }
    for (let i = 1; i <= ndigit; i++) {
      o[n++] = digitAt(i - 1);
      if (i === decpt) o[n++] = 0x2e;
    }
    if (ndigit < decpt) {
      while (ndigit++ < decpt) o[n++] = 0x30;
      o[n++] = 0x2e;
    }
  }
  // A trailing point goes (before the NULs of a short conversion are dropped, as in C).
  if (n > 0 && o[n - 1] === 0x2e) n--;
  let k = 0;
  for (let i = 0; i < n; i++) if (o[i] !== 0) o[k++] = o[i]!;
  return o.toString('latin1', 0, k);
}

/** printf's %.Nf as apr_vformatter does it (conv_fp). */
export function aprF(value: number, precision: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return 'inf';
  aprCvt(value, precision, false);
  let decpt = cvtDecpt;
  const o = fmtBuf;
  let n = 0;
  if (cvtNegative) o[n++] = 0x2d;
  let p = 0;
  if (decpt <= 0) {
    o[n++] = 0x30;
    if (precision > 0) {
      o[n++] = 0x2e;
      while (decpt++ < 0) o[n++] = 0x30;
    }
  } else {
    while (decpt-- > 0) { if (p < cvtLen) o[n++] = cvtBuf[p]!; p++; }
    if (precision > 0) o[n++] = 0x2e;
  }
  for (; p < cvtLen; p++) o[n++] = cvtBuf[p]!;
  return o.toString('latin1', 0, n);
}

/** format_byte_out. */
function byteOut(bytes: number): string {
  if (bytes < 5 * KBYTE) return `${Math.trunc(bytes)} B`;
  if (bytes < MBYTE / 2) return `${aprF(f(f(bytes) / KBYTE), 1)} kB`;
  if (bytes < GBYTE / 2) return `${aprF(f(f(bytes) / MBYTE), 1)} MB`;
  return `${aprF(f(f(bytes) / GBYTE), 1)} GB`;
}

/** format_kbyte_out. */
function kbyteOut(kbytes: number): string {
  if (kbytes < KBYTE) return `${Math.trunc(kbytes)} kB`;
  if (kbytes < MBYTE) return `${aprF(f(f(kbytes) / KBYTE), 1)} MB`;
  return `${aprF(f(f(kbytes) / MBYTE), 1)} GB`;
}

/** show_time: " 1 day 2 hours 3 minutes 4 seconds", zero units left out. */
export function showTime(tsecs: number): string {
  const secs = tsecs % 60;
  const mins = Math.floor(tsecs / 60) % 60;
  const hrs = Math.floor(tsecs / 3600) % 24;
  const days = Math.floor(tsecs / 86400);
  let s = '';
  if (days) s += ` ${days} day${days === 1 ? '' : 's'}`;
  if (hrs) s += ` ${hrs} hour${hrs === 1 ? '' : 's'}`;
  if (mins) s += ` ${mins} minute${mins === 1 ? '' : 's'}`;
  if (secs) s += ` ${secs} second${secs === 1 ? '' : 's'}`;
  return s;
}

/** The load averages, read at most once a second (the kernel updates them every 5 s). */
let loadAt = -Infinity;
let load: [number, number, number] = [0, 0, 0];
function loadAverage(): [number, number, number] {
  const now = performance.now();
  if (now - loadAt >= 1000) {
    loadAt = now;
    load = os.loadavg() as [number, number, number];
  }
  return load;
}

/** ap_ht_time in local time, remembered for the last two seconds asked (now and the restart). */
const htCache = new Map<number, string>();
let htZone = timeZoneGeneration;
function htTime(micros: number): string {
  const sec = Math.floor(micros / 1e6);
  if (htZone !== timeZoneGeneration) { htZone = timeZoneGeneration; htCache.clear(); }
  let s = htCache.get(sec);
  if (s === undefined) {
    if (htCache.size >= 2) htCache.clear();
    s = strftime(DEFAULT_TIME_FORMAT, new Date(sec * 1000));
    htCache.set(sec, s);
  }
  return s;
}

/** The ?auto form's averages (httpd computes them in single precision). */
export function autoRates(count: number, kbcount: number, durationMs: number, upTime: number): string {
  let s = '';
  if (upTime > 0) {
    s += `ReqPerSec: ${aprG(f(f(count) / f(upTime)))}\n`;
    s += `BytesPerSec: ${aprG(f(f(KBYTE * f(kbcount)) / f(upTime)))}\n`;
  }
  if (count > 0) {
    s += `BytesPerReq: ${aprG(f(f(KBYTE * f(kbcount)) / f(count)))}\n`;
    s += `DurationPerReq: ${aprG(f(f(durationMs) / f(count)))}\n`;
  }
  return s;
}

/** The page's line of averages. */
export function htmlRates(count: number, kbcount: number, durationMs: number, upTime: number): string {
  let s = '<dt>';
  if (upTime > 0) {
    s += `${aprG(f(f(count) / f(upTime)), 3)} requests/sec - `;
    s += `${byteOut(Math.trunc(f(f(KBYTE * f(kbcount)) / f(upTime))))}/second`;
  }
  if (count > 0) {
    if (upTime > 0) s += ' - ';
    s += `${byteOut(Math.trunc(f(f(KBYTE * f(kbcount)) / f(count))))}/request - ${aprG(f(f(durationMs) / f(count)))} ms/request`;
  }
  return s + '</dt>\n';
}

// ---- output ---------------------------------------------------------------------------------

/** ap_rputs into the response: passed down in bucket-sized pieces. */
class Out {
  /** The piece being gathered (a rope: V8 concatenates without copying until it is read). */
  private text = '';
  private readonly pieces: Buffer[] = [];
  put(s: string): void {
    if (this.text.length + s.length > BUCKET_SIZE && this.text.length > 0) this.cut();
    this.text += s;
  }
  private cut(): void {
    // latin1: each character's low byte, as httpd's page bytes are.
    this.pieces.push(Buffer.from(this.text, 'latin1'));
    this.text = '';
  }
  /** Sends the pieces; synchronous while the connection takes them at once. */
  end(r: Request, from = 0): MaybePromise<void> {
    if (this.text.length > 0) this.cut();
    const n = this.pieces.length;
    if (n === 0) return r.write([EOS]);
    for (let i = from; i < n; i++) {
      const bb: Bucket[] = [{ kind: 'data', data: this.pieces[i]! }];
      if (i === n - 1) bb.push(EOS);
      const w = r.write(bb);
      if (w instanceof Promise) return w.then(() => this.end(r, i + 1));
    }
    return undefined;
  }
}

// ---- the page -------------------------------------------------------------------------------

/** Where the scoreboard line is put together (read into a string at once; reused). */
let scoreLine = Buffer.alloc(0);

/** status_flags: the scoreboard character of each state; ' ' marks a disabled slot. */
const FLAGS = Buffer.from('.S_RWKLDCGI', 'latin1');
const DISABLED = 0x20;
const DOT = 0x2e;

const DOCTYPE = '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n';

const KEY =
  '</pre>\n<p>Scoreboard Key:<br />\n' +
  '"<b><code>_</code></b>" Waiting for Connection, \n' +
  '"<b><code>S</code></b>" Starting up, \n' +
  '"<b><code>R</code></b>" Reading Request,<br />\n' +
  '"<b><code>W</code></b>" Sending Reply, \n' +
  '"<b><code>K</code></b>" Keepalive (read), \n' +
  '"<b><code>D</code></b>" DNS Lookup,<br />\n' +
  '"<b><code>C</code></b>" Closing connection, \n' +
  '"<b><code>L</code></b>" Logging, \n' +
  '"<b><code>G</code></b>" Gracefully finishing,<br /> \n' +
  '"<b><code>I</code></b>" Idle cleanup of worker, \n' +
  '"<b><code>.</code></b>" Open slot with no current process<br />\n' +
  '</p>\n';

const ASYNC_HEAD =
  '\n\n<table rules="all" cellpadding="1%">\n' +
  '<tr><th rowspan="2">Slot</th><th rowspan="2">PID</th><th rowspan="2">Stopping</th><th colspan="2">Connections</th>\n' +
  '<th colspan="3">Threads</th><th colspan="4">Async connections</th></tr>\n' +
  '<tr><th>total</th><th>accepting</th><th>busy</th><th>graceful</th><th>idle</th><th>wait-io</th><th>writing</th><th>keep-alive</th><th>closing</th></tr>\n';

const SLOT_TABLE_HEAD =
  '\n\n<table border="0"><tr><th>Srv</th><th>PID</th><th>Acc</th><th>M</th><th>CPU\n</th>' +
  '<th>SS</th><th>Req</th><th>Dur</th><th>Conn</th><th>Child</th><th>Slot</th>' +
  '<th>Client</th><th>Protocol</th><th>VHost</th><th>Request</th></tr>\n\n';

const SLOT_TABLE_LEGEND =
  '</table>\n <hr /> <table>\n' +
  ' <tr><th>Srv</th><td>Child Server number - generation</td></tr>\n' +
  ' <tr><th>PID</th><td>OS process ID</td></tr>\n' +
  ' <tr><th>Acc</th><td>Number of accesses this connection / this child / this slot</td></tr>\n' +
  ' <tr><th>M</th><td>Mode of operation</td></tr>\n' +
  '<tr><th>CPU</th><td>CPU usage, number of seconds</td></tr>\n' +
  '<tr><th>SS</th><td>Seconds since beginning of most recent request</td></tr>\n' +
  ' <tr><th>Req</th><td>Milliseconds required to process most recent request</td></tr>\n' +
  ' <tr><th>Dur</th><td>Sum of milliseconds required to process all requests</td></tr>\n' +
  ' <tr><th>Conn</th><td>Kilobytes transferred this connection</td></tr>\n' +
  ' <tr><th>Child</th><td>Megabytes transferred this child</td></tr>\n' +
  ' <tr><th>Slot</th><td>Total megabytes transferred this slot</td></tr>\n' +
  ' </table>\n';

const TABLE_MODE: Record<number, string> = {
  [SERVER_READY]: '_', [SERVER_STARTING]: '<b>S</b>', [SERVER_BUSY_READ]: '<b>R</b>',
  [SERVER_BUSY_WRITE]: '<b>W</b>', [SERVER_BUSY_KEEPALIVE]: '<b>K</b>', [SERVER_BUSY_LOG]: '<b>L</b>',
  [SERVER_BUSY_DNS]: '<b>D</b>', [SERVER_CLOSING]: '<b>C</b>', [SERVER_DEAD]: '.',
  [SERVER_GRACEFUL]: 'G', [SERVER_IDLE_KILL]: 'I',
};

const NOTABLE_MODE: Record<number, string> = {
  [SERVER_READY]: 'Ready', [SERVER_STARTING]: 'Starting', [SERVER_BUSY_READ]: '<b>Read</b>',
  [SERVER_BUSY_WRITE]: '<b>Write</b>', [SERVER_BUSY_KEEPALIVE]: '<b>Keepalive</b>', [SERVER_BUSY_LOG]: '<b>Logging</b>',
  [SERVER_BUSY_DNS]: '<b>DNS lookup</b>', [SERVER_CLOSING]: '<b>Closing</b>', [SERVER_DEAD]: 'Dead',
  [SERVER_GRACEFUL]: 'Graceful', [SERVER_IDLE_KILL]: 'Dying',
};

interface Options {
  refresh: string | undefined;
  notable: boolean;
  auto: boolean;
}

/** The table-driven query parser: each option is found anywhere in the query string. */
function parseOptions(args: string | undefined): Options {
  const o: Options = { refresh: undefined, notable: false, auto: false };
  if (args === undefined) return o;
  const at = args.indexOf('refresh');
  if (at >= 0) {
    let t = 0;
    if (args[at + 7] === '=') {
      const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(args.slice(at + 8));
      t = m ? Number.parseInt(m[1]!, 10) : 0;
    }
    o.refresh = String(t < 1 ? 10 : t);
  }
  if (args.includes('notable')) o.notable = true;
  if (args.includes('auto')) o.auto = true;
  return o;
}

/** status_handler; other requests are declined at once (no promise, no microtask). */
function statusHandler(r: Request): MaybePromise<number> {
  if (r.handler !== 'server-status' && r.handler !== STATUS_MAGIC_TYPE) return DECLINED;
  return serveStatus(r);
}

function serveStatus(r: Request): MaybePromise<number> {
  const sb = scoreboard;
  if (sb === null) {
    r.log('status', APLOG_ERR, 'AH01237: Server status unavailable in inetd mode');
    return 500;
  }
  if (r.method !== 'GET' && r.method !== 'HEAD') return DECLINED;
  r.contentType = 'text/html; charset=ISO-8859-1';
  const opts = parseOptions(r.args);
  if (opts.refresh !== undefined) r.headersOut.set('Refresh', opts.refresh);
  if (opts.auto) r.contentType = 'text/plain; charset=ISO-8859-1';
  // A HEAD request gets the page too (its length, when it comes in one piece): the HTTP
  // filters drop the body, as httpd's do.
  const out = new Out();
  kept.page = out;
  const page = renderStatus(out, r, sb.snapshot(), sb.extended, opts, nowMicros());
  if (page instanceof Promise) return page.then(() => out.end(r)).then(() => OK);
  const sent = out.end(r);
  return sent instanceof Promise ? sent.then(() => OK) : OK;
}

/** Writes the page for `img` (the whole of httpd's status_handler output). */
function renderStatus(out: { put(s: string): void }, r: Request, img: ScoreboardImage, extended: boolean, opts: Options, now: number): MaybePromise<void> {
  const g = img.geometry;
  const { serverLimit, threadLimit, threadsPerChild, maxServers } = g;
  const mpmGen = img.mpmGeneration;
  const short = opts.auto;
  const t = img.tally(extended);
  const procs = t.processes;
  const { ready, busy, graceful, count, kbcount, threadBusy, threadIdle, threadGraceful } = t;
  const tu = t.utime;
  const ts = t.stime;
  const durationGlobal = t.duration;
  // The scoreboard characters; slots past the configured processes and threads are left out.
  const stat = t.stat;
  for (let i = 0; i < serverLimit; i++) {
    const row = i * threadLimit;
    if (t.rowUsed[i] === 0) {
      // Every slot of this child is dead: shown as '.' up to ThreadsPerChild of the
      // configured processes, left out past them.
      if (i < maxServers) {
        stat.fill(DOT, row, row + Math.min(threadsPerChild, threadLimit));
        stat.fill(DISABLED, row + Math.min(threadsPerChild, threadLimit), row + threadLimit);
      } else {
        stat.fill(DISABLED, row, row + threadLimit);
      }
      continue;
    }
    const slots = t.rowSlots[i]!;
    for (let j = 0; j < slots; j++) {
      const k = row + j;
      const res = stat[k]!;
      stat[k] = (i >= maxServers || j >= threadsPerChild) && res === SERVER_DEAD ? DISABLED : FLAGS[res] ?? 0x3f;
    }
    // The slots past those (dead, past ThreadsPerChild) are left out.
    stat.fill(DISABLED, row + slots, row + threadLimit);
  }
  const ws = newSlotView();
  const upTime = Math.max(0, Math.floor((now - img.restartTime) / 1e6)) >>> 0;
  const [l1, l5, l15] = loadAverage();
  const durationMs = Math.trunc(durationGlobal / 1000);
  const put = (s: string): void => out.put(s);

  // DIFFERENCE: plume's banner and build date, and "event" whatever MPM module is loaded
  // (plume's process model is event-style); docs/differences.md.
  if (!short) {
    put(`${DOCTYPE}<html><head>\n<title>Apache Status</title>\n</head><body>\n<h1>Apache Server Status for `);
    put(`${escapeHtml(getServerName(r))} (via ${r.connection.localIp})</h1>\n\n`);
    put(`<dl><dt>Server Version: ${serverBanner('Full')}</dt>\n`);
    put('<dt>Server MPM: event</dt>\n');
    put(`<dt>Server Built: ${BUILT}\n</dt></dl><hr /><dl>\n`);
    put(`<dt>Current Time: ${htTime(now)}</dt>\n`);
    put(`<dt>Restart Time: ${htTime(img.restartTime)}</dt>\n`);
    put(`<dt>Parent Server Config. Generation: ${img.configGeneration}</dt>\n`);
    put(`<dt>Parent Server MPM Generation: ${mpmGen}</dt>\n`);
    put(`<dt>Server uptime: ${showTime(upTime)}</dt>\n`);
    put(`<dt>Server load: ${aprF(l1, 2)} ${aprF(l5, 2)} ${aprF(l15, 2)}</dt>\n`);
  } else {
    put(`${getServerName(r)}\n`);
    put(`ServerVersion: ${serverBanner('Full')}\n`);
    put('ServerMPM: event\n');
    put(`Server Built: ${BUILT}\n`);
    put(`CurrentTime: ${htTime(now)}\n`);
    put(`RestartTime: ${htTime(img.restartTime)}\n`);
    put(`ParentServerConfigGeneration: ${img.configGeneration}\n`);
    put(`ParentServerMPMGeneration: ${mpmGen}\n`);
    put(`ServerUptimeSeconds: ${upTime}\n`);
    put(`ServerUptime:${showTime(upTime)}\n`);
    put(`Load1: ${aprF(l1, 2)}\nLoad5: ${aprF(l5, 2)}\nLoad15: ${aprF(l15, 2)}\n`);
  }

  if (extended) {
    const cpu = tu + ts;
    const cpuLoad = (): number => f(f(f(cpu) / TICK) / f(upTime)) * 100;
    if (short) {
      put(`Total Accesses: ${count}\nTotal kBytes: ${kbcount}\nTotal Duration: ${durationMs}\n`);
      put(`CPUUser: ${aprG(f(f(tu) / TICK))}\nCPUSystem: ${aprG(f(f(ts) / TICK))}\nCPUChildrenUser: 0\nCPUChildrenSystem: 0\n`);
      if (cpu) put(`CPULoad: ${aprG(cpuLoad())}\n`);
      put(`Uptime: ${upTime}\n`);
      put(autoRates(count, kbcount, durationMs, upTime));
    } else {
      put(`<dt>Total accesses: ${count} - Total Traffic: ${kbyteOut(kbcount)} - Total Duration: ${durationMs}</dt>\n`);
      put(`<dt>CPU Usage: u${aprG(f(f(tu) / TICK))} s${aprG(f(f(ts) / TICK))} cu0 cs0`);
      put(cpu ? ` - ${aprG(cpuLoad(), 3)}% CPU load</dt>\n` : '</dt>\n');
      put(htmlRates(count, kbcount, durationMs, upTime));
    }
  }

  if (!short) {
    put(`<dt>${busy} requests currently being processed, ${graceful} workers gracefully restarting, ${ready} idle workers</dt>\n</dl>`);
  } else {
    put(`BusyWorkers: ${busy}\nGracefulWorkers: ${graceful}\nIdleWorkers: ${ready}\n`);
  }

  // The event MPM's per-process table (async connection states).
  let connections = 0;
  let writing = 0;
  let keepAlive = 0;
  let closing = 0;
  let waitIo = 0;
  let stopping = 0;
  let processes = 0;
  let busyWorkers = 0;
  let idleWorkers = 0;
  let gracefulWorkers = 0;
  if (!short) put(ASYNC_HEAD);
  for (let i = 0; i < serverLimit; i++) {
    const ps = procs[i]!;
    if (ps.pid === 0) continue;
    connections += ps.connections;
    writing += ps.writing;
    keepAlive += ps.keepAlive;
    closing += ps.closing;
    waitIo += ps.waitIo;
    busyWorkers += threadBusy[i]!;
    idleWorkers += threadIdle[i]!;
    gracefulWorkers += threadGraceful[i]!;
    processes++;
    if (ps.quiescing) stopping++;
    if (!short) {
      const old = ps.generation !== mpmGen ? ' (old gen)' : '';
      put(`<tr><td>${i}</td><td>${ps.pid}</td><td>${ps.quiescing ? 'yes' : 'no'}${old}</td>` +
        `<td>${ps.connections}</td><td>${ps.notAccepting ? 'no' : 'yes'}</td>` +
        `<td>${threadBusy[i]}</td><td>${threadGraceful[i]}</td><td>${threadIdle[i]}</td>` +
        `<td>${ps.waitIo}</td><td>${ps.writing}</td><td>${ps.keepAlive}</td><td>${ps.closing}</td></tr>\n`);
    }
  }
  if (!short) {
    put(`<tr><td>Sum</td><td>${processes}</td><td>${stopping}</td><td>${connections}</td><td>&nbsp;</td>` +
      `<td>${busyWorkers}</td><td>${gracefulWorkers}</td><td>${idleWorkers}</td>` +
      `<td>${waitIo}</td><td>${writing}</td><td>${keepAlive}</td><td>${closing}</td></tr>\n</table>\n`);
  } else {
    put(`Processes: ${processes}\nStopping: ${stopping}\nConnsTotal: ${connections}\n` +
      `ConnsAsyncWaitIO: ${waitIo}\nConnsAsyncWriting: ${writing}\nConnsAsyncKeepAlive: ${keepAlive}\nConnsAsyncClosing: ${closing}\n`);
  }

  // The scoreboard itself.
  put(short ? 'Scoreboard: ' : '<pre>');
  const need = stat.length + Math.ceil(stat.length / STATUS_MAXLINE);
  if (scoreLine.length < need) scoreLine = Buffer.allocUnsafeSlow(need);
  const line = scoreLine;
  let n = 0;
  let written = 0;
  for (let i = 0; i < serverLimit; i++) {
    const row = i * threadLimit;
    // A row's characters end where its disabled slots begin (see above).
    const dots = i < maxServers ? Math.min(threadsPerChild, threadLimit) : 0;
    if (short && t.rowUsed[i] === 0) {
      // A dead child's row: its dots at once.
      line.fill(DOT, n, n + dots);
      n += dots;
      written += dots;
      continue;
    }
    const end = row + (t.rowUsed[i] === 0 ? dots : t.rowSlots[i]!);
    for (let k = row; k < end; k++) {
      const c = stat[k]!;
      if (c === DISABLED) continue;
      line[n++] = c;
      if (written % STATUS_MAXLINE === STATUS_MAXLINE - 1 && !short) line[n++] = 0x0a;
      written++;
    }
  }
  put(line.toString('latin1', 0, n));
  if (short) {
    put('\n');
  } else {
    put(KEY);
    if (!extended) {
      put('PID Key: <br />\n<pre>\n');
      let k = 0;
      for (let i = 0; i < serverLimit; i++) {
        for (let j = 0; j < threadLimit; j++) {
          const c = stat[i * threadLimit + j]!;
          if (c === DOT) continue;
          put(`   ${procs[i]!.pid} in state: ${String.fromCharCode(c)} `);
          if (++k >= 3) { put('\n'); k = 0; } else put(',');
        }
      }
      put('\n</pre>\n');
    }
  }

  if (extended && !short) {
    put(opts.notable ? '<hr /><h2>Server Details</h2>\n\n' : SLOT_TABLE_HEAD);
    for (let i = 0; i < serverLimit; i++) {
      if (t.rowUsed[i] === 0) continue; // no slot of it served anything
      const ps = procs[i]!;
      for (let j = 0; j < t.rowSlots[i]!; j++) {
        img.slot(i, j, ps, ws);
        if (ws.accessCount === 0 && (ws.status === SERVER_READY || ws.status === SERVER_DEAD)) continue;
        const reqTime = ws.startTime === 0 ? 0 : Math.max(0, Math.trunc((ws.stopTime - ws.startTime) / 1000));
        const ss = Math.trunc((now - ws.lastUsed) / 1e6);
        const dur = Math.trunc(ws.duration / 1000);
        const dead = ws.status === SERVER_DEAD;
        const client = escapeHtml(img.client(i, j));
        const request = escapeHtml(escapeLogItem(img.request(i, j)));
        const protocol = escapeHtml(img.protocol(i, j));
        const vhost = escapeHtml(img.vhost(i, j));
        if (opts.notable) {
          put(`<b>Server ${i}-${ps.generation}</b> (${dead ? '-' : ps.pid}): ${ws.connCount}|${ws.myAccessCount}|${ws.accessCount} [`);
          put(NOTABLE_MODE[ws.status] ?? '?STATE?');
          put(`] u${aprG(f(f(ws.utime) / TICK))} s${aprG(f(f(ws.stime) / TICK))} cu0 cs0\n ${ss} ${reqTime} ${dur}(`);
          put(`${byteOut(ws.connBytes)}|${byteOut(ws.myBytesServed)}|${byteOut(ws.bytesServed)})\n`);
          put(` <i>${client} {${request}}</i> <i>(${protocol})</i> <b>[${vhost}]</b><br />\n\n`);
        } else {
          put(`<tr><td><b>${i}-${ps.generation}</b></td><td>${dead ? '-' : ps.pid}</td><td>${ws.connCount}/${ws.myAccessCount}/${ws.accessCount}`);
          put(`</td><td>${TABLE_MODE[ws.status] ?? '?'}`);
          put(`\n</td><td>${aprF(f(f(ws.utime + ws.stime) / TICK), 2)}</td><td>${ss}</td><td>${reqTime}</td><td>${dur}`);
          put(`</td><td>${aprF(f(f(ws.connBytes) / KBYTE), 1)}</td><td>${aprF(f(f(ws.myBytesServed) / MBYTE), 2)}</td><td>${aprF(f(f(ws.bytesServed) / MBYTE), 2)}\n`);
          put(`</td><td>${client}</td><td>${protocol}</td><td nowrap>${vhost}</td><td nowrap>${request}</td></tr>\n\n`);
        }
      }
    }
    if (!opts.notable) put(SLOT_TABLE_LEGEND);
  } else if (!short) {
    put('<hr />To obtain a full report with current status information you need to use the <code>ExtendedStatus On</code> directive.\n');
  }

  // The other modules' sections (ap_run_status_hook: mod_proxy's balancers, mod_ssl's and
  // mod_cache_socache's caches), whatever ExtendedStatus says.
  const hooks = runStatusHooks(r, (short ? AP_STATUS_SHORT : 0) | (opts.notable ? AP_STATUS_NOTABLE : 0) | (extended ? AP_STATUS_EXTENDED : 0), put);
  if (hooks instanceof Promise) return hooks.then(() => pageEnd(r, short, put));
  pageEnd(r, short, put);
  return undefined;
}

function pageEnd(r: Request, short: boolean, put: (s: string) => void): void {
  if (!short) {
    put(r.rt.signature(r, '<hr />\n'));
    put('</body></html>\n');
  }
}

// ---- the scoreboard's request hooks -----------------------------------------------------------

/** The request is read: its slot shows W, the request line, the client and the vhost. */
function requestStarted(r: Request): number {
  scoreboard?.requestStart(r);
  return OK;
}

/** After the access log is written and before mod_logio starts its counters again (httpd's
 *  ap_increment_counts, which takes mod_logio's bytes of the request read and written). */
function requestLogged(r: Request): number {
  scoreboard?.requestDone(r);
  return OK;
}

/** child_init: the worker joins its parent's scoreboard; one process (-X) keeps its own. */
function childInit(ctx: ConfigContext): void {
  if (!attachScoreboardFromEnv(ctx)) attachInProcess(ctx);
}

const self = defineModule<undefined, undefined>({
  name: 'status_module',
  source: 'mod_status.c',
  apiVersion: MODULE_API_VERSION,
  hooks: {
    handler: { fn: statusHandler, order: HOOK_MIDDLE },
    postReadRequest: { fn: requestStarted, order: HOOK_REALLY_FIRST },
    logTransaction: { fn: requestLogged, order: HOOK_MIDDLE, predecessors: ['mod_log_config.c'], successors: ['mod_logio.c'] },
  },
  configHooks: {
    childInit,
    cleanup() { detachScoreboard(); },
  },
});

export default self;
