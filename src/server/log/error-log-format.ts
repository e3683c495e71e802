// ErrorLogFormat: compiles a format string once into an ErrorLogFormatter, as httpd's core
// does (server/core.c parse_errorlog_item / server/log.c do_errorlog_format):
//   - items %% %a %{c}a %A %{name}e %E %F %{name}i %k %l %L %{c}L %{C}L %m %M %{name}n %P
//     %T %{g}T %t %{u}t %{m}t %{c}t %{cu}t %{cuz}t (any mix of the letters m u c z) and
//     %{%strftime-format}t, %v %V;
//   - modifiers: '-' (log "-" when the item is empty), '+' (drop the whole line when the
//     item is empty; once-per-request/connection formats only), a number N (the item is
//     only logged for messages of level N or higher-numbered, i.e. %7F shows at debug);
//   - fields: the line is split into fields at non-leading spaces; an empty item removes
//     its whole field (from the preceding space to the next one). "\ " is a space that does
//     not start a field, "% " a zero-width field separator.
// Also home of the strftime(3) implementation shared with mod_log_config's %{format}t.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { errnoLabel, type ErrorLogEntry, type ErrorLogFormatter } from './error-log.js';
import { levelName, APLOG_TRACE8 } from './levels.js';
import { MONTHS } from './time.js';

// ---- escaping ---------------------------------------------------------------------------

const HEX = '0123456789abcdef';

/** Byte values of a string as httpd sees them: code units <= 0xff are bytes (latin1), any
 *  other character is taken as its UTF-8 encoding. */
function hexEscape(code: number): string {
  return '\\x' + HEX[(code >> 4) & 15]! + HEX[code & 15]!;
}

function escapeChar(c: number, quote: boolean): string | undefined {
  switch (c) {
    case 0x08: return '\\b';
    case 0x0a: return '\\n';
    case 0x0d: return '\\r';
    case 0x09: return '\\t';
    case 0x0b: return '\\v';
    case 0x5c: return '\\\\';
    case 0x22: return quote ? '\\"' : '"';
  }
  if (c < 0x20 || c >= 0x7f) {
    if (c <= 0xff) return hexEscape(c);
    let out = '';
    for (const b of Buffer.from(String.fromCodePoint(c), 'utf8')) out += hexEscape(b);
    return out;
  }
  return undefined;
}

// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPE = /[\x00-\x1f"\\\x7f-\uffff]/;

function escapeWith(s: string, quote: boolean): string {
  if (!NEEDS_ESCAPE.test(s)) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) { c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00); i++; }
    }
    const e = escapeChar(c, quote);
    out += e === undefined ? String.fromCharCode(c) : e;
  }
  return out;
}

/** httpd's ap_escape_logitem (access log): \" \\ \n \t \r \b \v and \xhh for other
 *  non-printable bytes. */
export function escapeLogItem(s: string): string {
  return escapeWith(s, true);
}

/** httpd's ap_escape_errorlog_item: as ap_escape_logitem, but '"' is left alone. */
export function escapeErrorLogItem(s: string): string {
  return escapeWith(s, false);
}

// ---- time zone names (%Z) ------------------------------------------------------------------

interface TzNames { std: string; dst: string }
let tzKey: string | undefined | null = null;
let tzNamesCache: TzNames | null = null;

/** Parses the zone names of a POSIX TZ string ("CET-1CEST,M3.5.0,M10.5.0/3", "<+03>-3"). */
function parsePosixTz(s: string): TzNames | null {
  const name = (str: string, at: number): [string, number] | null => {
    if (str[at] === '<') {
      const end = str.indexOf('>', at);
      return end < 0 ? null : [str.slice(at + 1, end), end + 1];
    }
    const m = /^[A-Za-z]{3,}/.exec(str.slice(at));
    return m ? [m[0], at + m[0].length] : null;
  };
  const std = name(s, 0);
  if (!std) return null;
  const off = /^[+-]?\d{1,2}(:\d{1,2}){0,2}/.exec(s.slice(std[1]));
  if (!off) return { std: std[0], dst: std[0] };
  const dst = name(s, std[1] + off[0].length);
  return { std: std[0], dst: dst ? dst[0] : std[0] };
}

/** The tzname[] pair glibc would use, from $TZ or /etc/localtime (the TZif footer). */
function tzNames(): TzNames | null {
  const tz = process.env['TZ'];
  if (tzKey === tz && tzKey !== null) return tzNamesCache;
  tzKey = tz;
  tzNamesCache = null;
  let file: string | undefined;
  if (tz === undefined) file = '/etc/localtime';
  else if (tz === '') tzNamesCache = { std: 'UTC', dst: 'UTC' };
  else {
    const t = tz.startsWith(':') ? tz.slice(1) : tz;
    if (t.startsWith('/')) file = t;
    else {
      const f = path.join('/usr/share/zoneinfo', t);
      if (!t.includes('..') && fs.existsSync(f)) file = f;
      else tzNamesCache = parsePosixTz(t);
    }
  }
  if (file !== undefined) {
    try {
      const data = fs.readFileSync(file);
      const end = data.length > 0 && data[data.length - 1] === 0x0a ? data.length - 1 : data.length;
      const start = data.lastIndexOf(0x0a, end - 1);
      if (data.subarray(0, 4).toString('latin1') === 'TZif' && start >= 0) {
        tzNamesCache = parsePosixTz(data.subarray(start + 1, end).toString('latin1'));
      }
    } catch {
      tzNamesCache = tz === undefined ? { std: 'UTC', dst: 'UTC' } : null;
    }
  }
  return tzNamesCache;
}

/** The time zone abbreviation strftime's %Z prints for a local time. */
function zoneName(d: Date): string {
  const names = tzNames();
  if (names) {
    const y = d.getFullYear();
    const jan = new Date(y, 0, 1).getTimezoneOffset();
    const jul = new Date(y, 6, 1).getTimezoneOffset();
    const isDst = d.getTimezoneOffset() < Math.max(jan, jul);
    return isDst ? names.dst : names.std;
  }
  const part = new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' }).formatToParts(d).find((p) => p.type === 'timeZoneName');
  return part ? part.value : '';
}

// ---- strftime -----------------------------------------------------------------------------

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

function dayOfYear(d: Date): number {
  return Math.round((Date.UTC(d.getFullYear(), d.getMonth(), d.getDate()) - Date.UTC(d.getFullYear(), 0, 1)) / 86400000);
}

/** ISO 8601 week-based year and week number. */
function isoWeek(d: Date): [number, number] {
  const t = Date.UTC(d.getFullYear(), d.getMonth(), d.getDate());
  const wd = (new Date(t).getUTCDay() + 6) % 7; // Monday = 0
  const thursday = t + (3 - wd) * 86400000;
  const year = new Date(thursday).getUTCFullYear();
  return [year, 1 + Math.floor((thursday - Date.UTC(year, 0, 1)) / (7 * 86400000))];
}

function gmtOffset(d: Date, colon = false): string {
  const off = -d.getTimezoneOffset();
  const a = Math.abs(off);
  const hh = String(Math.floor(a / 60)).padStart(2, '0');
  const mm = String(a % 60).padStart(2, '0');
  return (off < 0 ? '-' : '+') + hh + (colon ? ':' : '') + mm;
}

/**
 * strftime(3) as glibc does it in the C locale (what httpd's apr_strftime calls), for a
 * local time: every POSIX/GNU conversion, the flags _ - 0 ^ # and a field width, the E/O
 * modifiers (ignored in the C locale). Unknown conversions are copied as written.
 */
export function strftime(fmt: string, d: Date): string {
  let out = '';
  for (let i = 0; i < fmt.length; i++) {
    const ch = fmt[i]!;
    if (ch !== '%') { out += ch; continue; }
    const start = i;
    let pad: string | undefined;   // '_' spaces, '0' zeros, '-' none
    let upcase = false;
    let swapcase = false;
    let j = i + 1;
    for (; j < fmt.length; j++) {
      const f = fmt[j]!;
      if (f === '_' || f === '-' || f === '0') pad = f;
      else if (f === '^') upcase = true;
      else if (f === '#') swapcase = true;
      else break;
    }
    let width = -1;
    if (j < fmt.length && fmt[j]! >= '1' && fmt[j]! <= '9') {
      width = 0;
      while (j < fmt.length && fmt[j]! >= '0' && fmt[j]! <= '9') width = width * 10 + (fmt.charCodeAt(j++) - 48);
    }
    if (fmt[j] === 'E' || fmt[j] === 'O') j++;
    if (j >= fmt.length) { out += fmt.slice(start); break; }
    const conv = fmt[j]!;
    i = j;
    const num = (v: number, digits: number, defPad: '0' | '_' = '0'): string => {
      const p = pad ?? defPad;
      const neg = v < 0;
      let s = String(Math.abs(v));
      // '-' drops the default padding; an explicit width still pads, with spaces.
      if (p !== '-') s = s.padStart((width >= 0 ? width : digits) - (neg ? 1 : 0), p === '_' ? ' ' : '0');
      else if (width >= 0) s = s.padStart(width - (neg ? 1 : 0), ' ');
      return neg ? '-' + s : s;
    };
    const str = (s: string, lowerOnSwap = false): string => {
      let v = s;
      if (upcase) v = v.toUpperCase();
      else if (swapcase) v = lowerOnSwap ? v.toLowerCase() : v.toUpperCase();
      if (width > v.length) v = v.padStart(width, pad === '0' ? '0' : ' ');
      return v;
    };
    const hour12 = d.getHours() % 12 === 0 ? 12 : d.getHours() % 12;
    switch (conv) {
      case 'a': out += str(DAY_NAMES[d.getDay()]!.slice(0, 3)); break;
      case 'A': out += str(DAY_NAMES[d.getDay()]!); break;
      case 'b': case 'h': out += str(MONTHS[d.getMonth()]!); break;
      case 'B': out += str(MONTH_NAMES[d.getMonth()]!); break;
      case 'c': out += str(strftime('%a %b %e %H:%M:%S %Y', d)); break;
      case 'C': out += num(Math.floor(d.getFullYear() / 100), 2); break;
      case 'd': out += num(d.getDate(), 2); break;
      case 'D': out += str(strftime('%m/%d/%y', d)); break;
      case 'e': out += num(d.getDate(), 2, '_'); break;
      case 'F': out += str(strftime('%Y-%m-%d', d)); break;
      case 'g': out += num(isoWeek(d)[0] % 100, 2); break;
      case 'G': out += num(isoWeek(d)[0], 1); break;
      case 'H': out += num(d.getHours(), 2); break;
      case 'I': out += num(hour12, 2); break;
      case 'j': out += num(dayOfYear(d) + 1, 3); break;
      case 'k': out += num(d.getHours(), 2, '_'); break;
      case 'l': out += num(hour12, 2, '_'); break;
      case 'm': out += num(d.getMonth() + 1, 2); break;
      case 'M': out += num(d.getMinutes(), 2); break;
      case 'n': out += '\n'; break;
      case 'p': out += str(d.getHours() < 12 ? 'AM' : 'PM', true); break;
      case 'P': out += str(d.getHours() < 12 ? 'am' : 'pm'); break;
      case 'r': out += str(strftime('%I:%M:%S %p', d)); break;
      case 'R': out += str(strftime('%H:%M', d)); break;
      case 's': out += num(Math.floor(d.getTime() / 1000), 1); break;
      case 'S': out += num(d.getSeconds(), 2); break;
      case 't': out += '\t'; break;
      case 'T': out += str(strftime('%H:%M:%S', d)); break;
      case 'u': out += num(d.getDay() === 0 ? 7 : d.getDay(), 1); break;
      case 'U': out += num(Math.floor((dayOfYear(d) + 7 - d.getDay()) / 7), 2); break;
      case 'V': out += num(isoWeek(d)[1], 2); break;
      case 'w': out += num(d.getDay(), 1); break;
      case 'W': out += num(Math.floor((dayOfYear(d) + 7 - ((d.getDay() + 6) % 7)) / 7), 2); break;
      case 'x': out += str(strftime('%m/%d/%y', d)); break;
      case 'X': out += str(strftime('%H:%M:%S', d)); break;
      case 'y': out += num(d.getFullYear() % 100, 2); break;
      case 'Y': out += num(d.getFullYear(), 1); break;
      case 'z': out += str(gmtOffset(d)); break;
      case 'Z': out += str(zoneName(d), true); break;
      case '%': out += '%'; break;
      default: out += fmt.slice(start, j + 1);
    }
  }
  return out;
}

// ---- ctime variants (ap_recent_ctime_ex) ----------------------------------------------------

const CTIME_USEC = 1;
const CTIME_COMPACT = 2;
const CTIME_GMTOFF = 4;
const CTIME_MSEC = 8;

const p2 = (n: number): string => (n < 10 ? '0' + n : String(n));

/** ap_recent_ctime_ex: "Sun Nov 22 01:45:49[.usec|.msec] 2026[ +hhmm]" or the compact
 *  "2026-11-22 01:45:49[.usec|.msec][ +hhmm]". */
export function ctimeEx(micros: number, option: number): string {
  const d = new Date(Math.floor(micros / 1000));
  const us = ((micros % 1000000) + 1000000) % 1000000;
  let s: string;
  if (option & CTIME_COMPACT) {
    s = `${String(d.getFullYear()).padStart(4, '0')}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} `;
  } else {
    s = `${DAY_NAMES[d.getDay()]!.slice(0, 3)} ${MONTHS[d.getMonth()]} ${p2(d.getDate())} `;
  }
  s += `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  if (option & CTIME_USEC) s += '.' + String(us).padStart(6, '0');
  else if (option & CTIME_MSEC) s += '.' + String(Math.floor(us / 1000)).padStart(3, '0');
  if (!(option & CTIME_COMPACT)) s += ' ' + String(d.getFullYear()).padStart(4, '0');
  if (option & CTIME_GMTOFF) s += ' ' + gmtOffset(d);
  return s;
}

// ---- the format compiler ---------------------------------------------------------------------

/** Which ErrorLogFormat line a format is for: the main line, or a once-per-request /
 *  once-per-connection line ("ErrorLogFormat request|connection ..."). */
export type ErrorLogFormatKind = 'main' | 'request' | 'connection';

/** An item: returns its text, '' when it has nothing to show. */
type ItemFn = (e: ErrorLogEntry, micros: number) => string;

const FLAG_FIELD_SEP = 1;
const FLAG_REQUIRED = 2;
const FLAG_NULL_AS_HYPHEN = 4;
const FLAG_MESSAGE = 8;

interface Item {
  fn: ItemFn | null;
  flags: number;
  minLevel: number;
}

const pid = process.pid;

function hasRequest(e: ErrorLogEntry): boolean {
  return e.context?.requestHeader !== undefined;
}

function timeItem(arg: string | undefined): ItemFn {
  let option = 0;
  if (arg !== undefined) {
    if (arg === 'u') option = CTIME_USEC;
    else if (!arg.includes('%')) {
      for (const c of arg) {
        if (c === 'm') option |= CTIME_MSEC;
        else if (c === 'u') option |= CTIME_USEC;
        else if (c === 'c') option |= CTIME_COMPACT;
        else if (c === 'z') option |= CTIME_GMTOFF;
      }
    } else {
      const f = arg;
      return (_e, micros) => strftime(f, new Date(Math.floor(micros / 1000)));
    }
  }
  return (_e, micros) => ctimeEx(micros, option);
}

/** The handler for an item letter (httpd's errorlog_hash), or undefined when unknown. */
function handlerFor(letter: string, arg: string | undefined): ItemFn | undefined {
  switch (letter) {
    case 'a':
      // The request's client (useragent) address, or with {c} the connection's peer.
      return (e) => (e.client ? `${e.client.ip}:${e.client.port}` : '');
    case 'A':
      return (e) => (e.context?.localIp !== undefined ? `${e.context.localIp}:${e.context.localPort ?? 0}` : '');
    case 'e':
      return (e) => {
        const v = arg === undefined ? undefined : e.context?.env?.(arg);
        return v === undefined ? '' : escapeErrorLogItem(v);
      };
    case 'E':
      return (e) => (e.errno ? `(${errnoLabel(e.errno.code)})${e.errno.text}` : '');
    case 'F':
      // Source file and line of the log call, where the message has one (httpd's APLOG_MARK).
      return (e) => e.source ?? '';
    case 'i':
      return (e) => {
        const v = arg === undefined ? undefined : e.context?.requestHeader?.(arg);
        return v === undefined ? '' : escapeErrorLogItem(v);
      };
    case 'k':
      return (e) => (e.context?.keepalives !== undefined ? String(e.context.keepalives) : '');
    case 'l':
      return (e) => (e.level < 0 ? '' : levelName(e.level));
    case 'L':
      if (arg !== undefined && arg.toLowerCase() === 'c') {
        const connOnly = arg === 'C';
        return (e) => {
          if (connOnly && hasRequest(e)) return '';
          return e.context?.connectionId ?? '';
        };
      }
      return (e) => (hasRequest(e) ? e.context?.requestId ?? e.context?.logId ?? '' : '');
    case 'm':
      return (e) => e.module;
    case 'n':
      return (e) => {
        const v = arg === undefined ? undefined : e.context?.note?.(arg);
        return v === undefined ? '' : escapeErrorLogItem(v);
      };
    case 'P':
      return () => String(pid);
    case 'T':
      // Node serves requests on one thread: its id is the process id (as %{g}T).
      return () => String(pid);
    case 't':
      return timeItem(arg);
    case 'v':
      return (e) => e.context?.serverName ?? '';
    case 'V':
      return (e) => (hasRequest(e) ? e.context?.canonicalName ?? '' : '');
  }
  return undefined;
}

/** parse_errorlog_misc_string: literal text up to '%' or a non-leading space. */
function parseMisc(s: string, pos: number): [string, number] {
  let d = '';
  let atStart = true;
  let i = pos;
  while (i < s.length && s[i] !== '%' && (s[i] !== ' ' || atStart)) {
    const c = s[i]!;
    if (c !== '\\') {
      if (c !== ' ') atStart = false;
      d += c;
      i++;
      continue;
    }
    i++;
    if (i >= s.length) { d += '\\'; break; }
    const n = s[i]!;
    if (n === 'r') d += '\r';
    else if (n === 'n') d += '\n';
    else if (n === 't') d += '\t';
    else d += n;
    i++;
  }
  return [d, i];
}

/** parse_errorlog_item: one item from `pos`; returns [item, next position] or an error. */
function parseItem(s: string, pos: number, item: Item): number | string {
  let i = pos;
  if (s[i] !== '%') {
    if (s[i] === ' ') item.flags |= FLAG_FIELD_SEP;
    const [text, next] = parseMisc(s, i);
    item.fn = () => text;
    return next;
  }
  i++;
  if (s[i] === ' ') {
    item.flags |= FLAG_FIELD_SEP;
    return parseItem(s, i + 1, item);
  }
  if (s[i] === '%') {
    item.fn = () => '%';
    return i + 1;
  }
  let arg: string | undefined;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '{') {
      i++;
      const end = s.indexOf('}', i);
      if (end < 0) { arg = s.slice(i); i = s.length; }
      else {
        arg = s.slice(i, end);
        i = end;
        while (s[i] === '}') i++;
      }
    } else if (c === '+') {
      item.flags |= FLAG_REQUIRED; i++;
    } else if (c === '-') {
      item.flags |= FLAG_NULL_AS_HYPHEN; i++;
    } else if (c >= '0' && c <= '9') {
      let n = 0;
      while (i < s.length && s[i]! >= '0' && s[i]! <= '9') n = n * 10 + (s.charCodeAt(i++) - 48);
      item.minLevel = n;
    } else if (c === 'M') {
      item.fn = null;
      item.flags |= FLAG_MESSAGE;
      return i + 1;
    } else {
      const fn = handlerFor(c, arg);
      if (!fn) return `Unrecognized error log format directive %${c}`;
      item.fn = fn;
      return i + 1;
    }
  }
  return 'Ran off end of error log format parsing args to some directive';
}

/** parse_errorlog_string: the items of a format, or httpd's error text. */
function parseFormat(fmt: string, kind: ErrorLogFormatKind): Item[] | string {
  const items: Item[] = [];
  const main = kind === 'main';
  let seenMessage = false;
  let pos = 0;
  while (pos < fmt.length) {
    const item: Item = { fn: null, flags: 0, minLevel: 0 };
    const r = parseItem(fmt, pos, item);
    if (typeof r === 'string') return r;
    pos = r;
    items.push(item);
    if (item.flags & FLAG_MESSAGE) {
      if (!main) return '%M cannot be used in once-per-request or once-per-connection formats';
      seenMessage = true;
    }
    if (main && item.flags & FLAG_REQUIRED) return "The '+' flag cannot be used in the main error log format";
    if (!main && item.minLevel) {
      return 'The loglevel cannot be used as a condition in once-per-request or once-per-connection formats';
    }
    if (item.minLevel > APLOG_TRACE8) return 'The specified loglevel modifier is out of range';
  }
  if (main && !seenMessage) return "main ErrorLogFormat must contain message format string '%M'";
  return items;
}

/**
 * Compiles an ErrorLogFormat string once. Returns the formatter, or httpd's error text for a
 * bad format. The formatter returns null when the line is not to be written: an empty line,
 * or (once-per-request/connection formats) a '+' item that had nothing to show.
 *
 * The message (%M) is escaped as httpd escapes error-log text (ap_escape_errorlog_item).
 * For once-per-request/connection lines pass an entry with level -1 and no message.
 */
export function compileErrorLogFormat(fmt: string, kind: ErrorLogFormatKind = 'main'): ErrorLogFormatter | string {
  const items = parseFormat(fmt, kind);
  if (typeof items === 'string') return items;
  const n = items.length;
  const fns = items.map((it) => it.fn);
  const flags = items.map((it) => it.flags);
  const levels = items.map((it) => it.minLevel);
  return (e: ErrorLogEntry, micros: number): string | null => {
    // do_errorlog_format
    let buf = '';
    let fieldStart = 0;
    let skipping = false;
    for (let i = 0; i < n; i++) {
      const fl = flags[i]!;
      if (fl & FLAG_FIELD_SEP) {
        if (skipping) skipping = false;
        else fieldStart = buf.length;
      }
      if (fl & FLAG_MESSAGE) {
        buf += escapeErrorLogItem(e.message);
      } else if (skipping) {
        continue;
      } else if (e.level !== -1 && levels[i]! > e.level) {
        buf = buf.slice(0, fieldStart);
        skipping = true;
      } else {
        const v = fns[i]!(e, micros);
        if (v === '') {
          if (fl & FLAG_REQUIRED) return null;
          if (fl & FLAG_NULL_AS_HYPHEN) buf += '-';
          else {
            buf = buf.slice(0, fieldStart);
            skipping = true;
          }
        } else {
          buf += v;
        }
      }
    }
    return buf === '' ? null : buf;
  };
}

/** The once-per-connection / once-per-request lines and the main format of a server, as the
 *  ErrorLogFormat directive builds them (core.c set_errorlog_format). */
export interface ErrorLogFormats {
  main: ErrorLogFormatter | undefined;
  connection: ErrorLogFormatter[];
  request: ErrorLogFormatter[];
}

/**
 * Applies one ErrorLogFormat directive (`ErrorLogFormat [connection|request] format`) to a
 * server's formats, as httpd's set_errorlog_format: one argument sets the main format; with
 * two, "connection" / "request" (any case) add a once-per line. Returns httpd's error text.
 */
export function applyErrorLogFormat(formats: ErrorLogFormats, arg1: string, arg2: string | undefined): string | undefined {
  if (arg2 === undefined) {
    const f = compileErrorLogFormat(arg1, 'main');
    if (typeof f === 'string') return f;
    formats.main = f;
    return undefined;
  }
  const kind = arg1.toLowerCase();
  if (kind !== 'connection' && kind !== 'request') return 'ErrorLogFormat type must be one of request, connection';
  if (arg2 === '') return undefined;
  const f = compileErrorLogFormat(arg2, kind);
  if (typeof f === 'string') return f;
  formats[kind].push(f);
  return undefined;
}
