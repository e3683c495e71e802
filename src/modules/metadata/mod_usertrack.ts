// mod_usertrack (modules/metadata/mod_usertrack.c): clickstream cookies. With CookieTracking on,
// a request whose Cookie header lacks the tracking cookie gets one (Set-Cookie, or Set-Cookie2
// for CookieStyle Cookie2, in the error headers so error responses carry it too); the value,
// new or found, is the "cookie" note for logging (%{cookie}n).
//
//  - The value is httpd 2.4's: 32 random bits and the request time in microseconds, both in
//    lowercase hex without padding, joined by a dot ("1f2e3d4c.6123456789abc").
//  - CookieExpires is per server (as in httpd, even when written in a directory section or
//    .htaccess): a plain number of seconds, or "[plus] {<num> <type>}*" with mod_expires' type
//    words; Netscape style (the default) writes an expires= date, the other styles max-age=.
//  - The per-directory configuration has no merge: the most specific section replaces the
//    rest whole, so a section that says nothing about cookies has tracking off.
//  - The cookie is spotted with httpd's regular expression, the name escaped:
//    ^NAME=([^;,]+)|[;,][ \t]*NAME=([^;,]+)

import { randomBytes } from 'node:crypto';
import {
  DECLINED, HOOK_REALLY_FIRST, MODULE_API_VERSION, OK, OR_FILEINFO,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { MONTHS } from '../../server/log/time.js';
import { tableSet } from '../../server/apr-table.js';

type CookieStyle = 'unset' | 'netscape' | 'cookie' | 'cookie2';

interface UsertrackServer {
  /** CookieExpires in seconds (a C int in httpd); 0 = a session cookie. */
  expires: number;
}

interface UsertrackDir {
  enabled: boolean;
  style: CookieStyle;
  cookieName: string;
  cookieDomain: string | undefined;
  /** The compiled "spot the cookie" expression for cookieName. */
  regexp: RegExp;
  secure: boolean;
  httpOnly: boolean;
  /** "SameSite=Strict" / "SameSite=Lax" / "SameSite=None". */
  sameSite: string | undefined;
}

const COOKIE_NAME = 'Apache';

/** httpd's set_and_comp_regexp: every character but ASCII letters and digits is taken
 *  literally (httpd backslash-escapes them; here as \x or \u escapes, which JavaScript reads
 *  as the same literal). */
export function cookieRegExp(name: string): RegExp {
  let esc = '';
  for (const ch of name) {
    if (/^[A-Za-z0-9]$/.test(ch)) esc += ch;
    else {
      const c = ch.codePointAt(0)!;
      esc += c < 0x100 ? `\\x${c.toString(16).padStart(2, '0')}` : `\\u{${c.toString(16)}}`;
    }
  }
  return new RegExp(`^${esc}=([^;,]+)|[;,][ \\t]*${esc}=([^;,]+)`, 'u');
}

function createDirConfig(): UsertrackDir {
  return {
    enabled: false, style: 'unset', cookieName: COOKIE_NAME, cookieDomain: undefined,
    regexp: DEFAULT_REGEXP, secure: false, httpOnly: false, sameSite: undefined,
  };
}
const DEFAULT_REGEXP = cookieRegExp(COOKIE_NAME);

// ---- CookieExpires ----------------------------------------------------------------------------

/** C's atol/atoi: leading blanks, a sign, digits; 0 when none. Truncated to a C int. */
function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  if (m === null) return 0;
  return Number(BigInt.asIntN(32, BigInt(m[1]!)));
}

const DAY = 60 * 60 * 24;

/** The unit of one <type> word, matched on a prefix as httpd's strncasecmp calls do. */
function unitSeconds(word: string): number | undefined {
  const w = word.toLowerCase();
  // strncasecmp(word, full, n): a word shorter than n meets its NUL where `full` has a letter.
  const starts = (full: string, n: number): boolean => w.length >= n && w.slice(0, n) === full.slice(0, n);
  if (starts('years', 1)) return DAY * 365;
  if (starts('months', 2)) return DAY * 30;
  if (starts('weeks', 1)) return DAY * 7;
  if (starts('days', 1)) return DAY;
  if (starts('hours', 1)) return 60 * 60;
  if (starts('minutes', 2)) return 60;
  if (starts('seconds', 1)) return 1;
  return undefined;
}

/** CookieExpires' argument in seconds, or httpd's error text (exported for the tests). */
export function parseCookieExpires(arg: string): number | string {
  const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  if (isDigit(arg[0]) && isDigit(arg[arg.length - 1])) return atoi(arg);
  const c = new ArgCursor(arg);
  let word = c.word();
  if (word !== '' && word[0]!.toLowerCase() === 'p') word = c.word();
  let total = 0n;
  while (word !== '') {
    if (!isDigit(word[0])) return 'bad expires code, numeric value expected.';
    const num = atoi(word);
    word = c.word();
    if (word === '') return 'bad expires code, missing <type>';
    const factor = unitSeconds(word);
    if (factor === undefined) return 'bad expires code, unrecognized type';
    total += BigInt(factor) * BigInt(num);
    word = c.word();
  }
  // time_t arithmetic, stored into the int cls->expires.
  return Number(BigInt.asIntN(32, BigInt.asIntN(64, total)));
}

function setCookieExpires(cmd: CmdParms<UsertrackServer, UsertrackDir>, arg: string): string | undefined {
  const v = parseCookieExpires(arg);
  if (typeof v === 'string') return v;
  cmd.srv.expires = v;
  return undefined;
}

// ---- the other directives -------------------------------------------------------------------

function setCookieName(cmd: CmdParms<UsertrackServer, UsertrackDir>, name: string): string | undefined {
  cmd.dir.cookieName = name;
  cmd.dir.regexp = cookieRegExp(name);
  return undefined;
}

function setCookieDomain(cmd: CmdParms<UsertrackServer, UsertrackDir>, name: string): string | undefined {
  if (name === '') return 'CookieDomain values may not be null';
  if (name[0] !== '.') return 'CookieDomain values must begin with a dot';
  if (!name.slice(1).includes('.')) return 'CookieDomain values must contain at least one embedded dot';
  cmd.dir.cookieDomain = name;
  return undefined;
}

function setCookieStyle(cmd: CmdParms<UsertrackServer, UsertrackDir>, name: string): string | undefined {
  const n = name.toLowerCase();
  if (n === 'netscape') cmd.dir.style = 'netscape';
  else if (n === 'cookie' || n === 'rfc2109') cmd.dir.style = 'cookie';
  else if (n === 'cookie2' || n === 'rfc2965') cmd.dir.style = 'cookie2';
  else return `Invalid ${cmd.name} keyword: '${name}'`;
  return undefined;
}

function setSameSite(cmd: CmdParms<UsertrackServer, UsertrackDir>, name: string): string | undefined {
  const n = name.toLowerCase();
  if (n === 'strict') cmd.dir.sameSite = 'SameSite=Strict';
  else if (n === 'lax') cmd.dir.sameSite = 'SameSite=Lax';
  else if (n === 'none') cmd.dir.sameSite = 'SameSite=None';
  else return "CookieSameSite accepts 'Strict', 'Lax', or 'None'";
  return undefined;
}

// ---- the cookie --------------------------------------------------------------------------------

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const p2 = (n: number): string => (n < 10 ? '0' + n : String(n));

/** The Netscape expires= date: "Wdy, DD-Mon-YY HH:MM:SS GMT" (exported for the tests). */
export function netscapeDate(ms: number): string {
  const d = new Date(ms);
  return `${DAYS[d.getUTCDay()]}, ${p2(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${p2(d.getUTCFullYear() % 100)} ` +
    `${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())} GMT`;
}

/** The Set-Cookie value for a new cookie `value` (exported for the tests). */
export function cookieHeader(dcfg: Readonly<UsertrackDir>, expires: number, value: string, requestMs: number): string {
  let c = `${dcfg.cookieName}=${value}; path=/`;
  if (expires !== 0) {
    if (dcfg.style === 'unset' || dcfg.style === 'netscape') c += `; expires=${netscapeDate(requestMs + expires * 1000)}`;
    else c += `; max-age=${expires}`;
  }
  if (dcfg.cookieDomain !== undefined) c += `; domain=${dcfg.cookieDomain}${dcfg.style === 'cookie2' ? '; version=1' : ''}`;
  if (dcfg.sameSite !== undefined) c += `; ${dcfg.sameSite}`;
  if (dcfg.secure) c += '; Secure';
  if (dcfg.httpOnly) c += '; HttpOnly';
  return c;
}

function makeCookie(r: Request, dcfg: UsertrackDir): void {
  const micros = r.startMicros !== 0 ? r.startMicros : r.requestTime * 1000;
  const value = `${randomBytes(4).readUInt32LE(0).toString(16)}.${micros.toString(16)}`;
  const expires = self.server(r.server).expires;
  r.errHeadersOut.add(dcfg.style === 'cookie2' ? 'Set-Cookie2' : 'Set-Cookie', cookieHeader(dcfg, expires, value, r.requestTime));
  tableSet(r.notes, 'cookie', value);
}

/** spot_cookie (fixups, really first): the tracking cookie found is noted; else one is made. */
function spotCookie(r: Request): number {
  const dcfg = self.dir(r);
  if (!dcfg.enabled || r.main !== null) return DECLINED;
  // httpd reads repeated request headers into one value joined by ", ".
  const all = r.headersIn.getAll('Cookie');
  const header = all.length > 1 ? all.join(', ') : all[0];
  if (header !== undefined) {
    const m = dcfg.regexp.exec(header);
    if (m !== null) {
      const value = m[2] ?? m[1];
      if (value !== undefined) tableSet(r.notes, 'cookie', value);
      return DECLINED;
    }
  }
  makeCookie(r, dcfg);
  return OK;
}

type Cmd = CmdParms<UsertrackServer, UsertrackDir>;

const self = defineModule<UsertrackServer, UsertrackDir>({
  name: 'usertrack_module',
  source: 'mod_usertrack.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ expires: 0 }),
  createDirConfig,
  // No merges, as in httpd: a virtual host starts with no CookieExpires of its own, and the most
  // specific section's settings replace the others whole.
  directives: [
    directive<UsertrackServer, UsertrackDir, 'TAKE1'>({ name: 'CookieExpires', args: 'TAKE1', where: OR_FILEINFO, help: 'an expiry date code', handler: setCookieExpires }),
    directive<UsertrackServer, UsertrackDir, 'TAKE1'>({ name: 'CookieDomain', args: 'TAKE1', where: OR_FILEINFO, help: 'domain to which this cookie applies', handler: setCookieDomain }),
    directive<UsertrackServer, UsertrackDir, 'TAKE1'>({ name: 'CookieStyle', args: 'TAKE1', where: OR_FILEINFO, help: "'Netscape', 'Cookie' (RFC2109), or 'Cookie2' (RFC2965)", handler: setCookieStyle }),
    directive<UsertrackServer, UsertrackDir, 'FLAG'>({ name: 'CookieTracking', args: 'FLAG', where: OR_FILEINFO, help: 'whether or not to enable cookies', handler: (cmd: Cmd, on: boolean) => { cmd.dir.enabled = on; } }),
    directive<UsertrackServer, UsertrackDir, 'TAKE1'>({ name: 'CookieName', args: 'TAKE1', where: OR_FILEINFO, help: 'name of the tracking cookie', handler: setCookieName }),
    directive<UsertrackServer, UsertrackDir, 'TAKE1'>({ name: 'CookieSameSite', args: 'TAKE1', where: OR_FILEINFO, help: 'SameSite setting', handler: setSameSite }),
    directive<UsertrackServer, UsertrackDir, 'FLAG'>({ name: 'CookieSecure', args: 'FLAG', where: OR_FILEINFO, help: 'is cookie secure', handler: (cmd: Cmd, on: boolean) => { cmd.dir.secure = on; } }),
    directive<UsertrackServer, UsertrackDir, 'FLAG'>({ name: 'CookieHttpOnly', args: 'FLAG', where: OR_FILEINFO, help: 'is cookie http only', handler: (cmd: Cmd, on: boolean) => { cmd.dir.httpOnly = on; } }),
  ],
  hooks: { fixups: { fn: spotCookie, order: HOOK_REALLY_FIRST } },
});

export default self;
