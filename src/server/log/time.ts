// Time formats httpd uses in logs: the error-log stamp ("Sun Nov 22 01:45:49.807104 2026",
// APR's ctime with a zero-padded day) and the access-log %t ("[22/Nov/2026:01:45:49 +0000]").

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
export const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const p2 = (n: number): string => (n < 10 ? '0' + n : String(n));

/** Current time in microseconds since the epoch. */
export function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

/** APR ctime, local time, optionally with microseconds. */
export function aprCtime(micros: number, withMicros = true): string {
  const d = new Date(Math.floor(micros / 1000));
  const us = String(micros % 1000000).padStart(6, '0');
  return `${DAYS[d.getDay()]} ${MONTHS[d.getMonth()]} ${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}${withMicros ? '.' + us : ''} ${d.getFullYear()}`;
}

/** Bumped when the process's time zone changes (process.env.TZ set at run time, as tests do),
 *  so that the local-time strings cached per second are made again. Reading process.env on
 *  every request would cost more than formatting. */
export let timeZoneGeneration = 0;
export function timeZoneChanged(): void {
  timeZoneGeneration++;
  cachedClfSecond = -1;
}

let cachedClfSecond = -1;
let cachedClf = '';
/** The Common Log Format time, local time with the numeric zone offset (cached per second). */
export function clfTime(ms: number): string {
  const sec = Math.floor(ms / 1000);
  if (sec === cachedClfSecond && sec * 1000 === ms) return cachedClf;
  if (sec * 1000 !== ms) return formatClf(new Date(ms));
  cachedClfSecond = sec;
  cachedClf = formatClf(new Date(sec * 1000));
  return cachedClf;
}

function formatClf(d: Date): string {
  const off = -d.getTimezoneOffset();
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  return `${p2(d.getDate())}/${MONTHS[d.getMonth()]}/${d.getFullYear()}:${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())} ${sign}${p2(Math.floor(a / 60))}${p2(a % 60)}`;
}

let cachedHttpDateSecond = -1;
let cachedHttpDate = '';
/** RFC 7231 IMF-fixdate, cached per second (the Date header). */
export function httpDate(ms: number = Date.now()): string {
  const sec = Math.floor(ms / 1000);
  if (sec === cachedHttpDateSecond) return cachedHttpDate;
  cachedHttpDateSecond = sec;
  cachedHttpDate = new Date(sec * 1000).toUTCString();
  return cachedHttpDate;
}

let lastFormattedSecond = -1;
let lastFormatted = '';
/** Formats any time as IMF-fixdate (Last-Modified); the last value is kept, since a busy
 *  server formats the same few modification times over and over. */
export function toHttpDate(ms: number): string {
  const sec = Math.floor(ms / 1000);
  if (sec === lastFormattedSecond) return lastFormatted;
  if (sec === cachedHttpDateSecond) return cachedHttpDate;
  lastFormattedSecond = sec;
  lastFormatted = new Date(sec * 1000).toUTCString();
  return lastFormatted;
}

/** Parses an HTTP date (IMF-fixdate, RFC 850, asctime); NaN when invalid. */
export function parseHttpDate(s: string): number {
  const t = Date.parse(s);
  return t;
}
