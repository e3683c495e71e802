// The core's variables, functions and operators (httpd's util_expr_eval.c core_expr_lookup
// tables, 2.4.71): request, request-header, connection and time variables; string
// functions; unary and binary operators. Values httpd leaves NULL are empty strings.

import * as fs from 'node:fs';
import { createHash } from 'node:crypto';
import type { Request, ConnRec } from '../server/request/request.js';
import { APLOG_DEBUG, APLOG_TRACE5 } from '../server/log/levels.js';
import { parseAddr, parseSubnet, subnetTest, useragentAddr } from '../lib/ipsubnet.js';
import { fnmatch, FNM_CASE_BLIND, FNM_PATHNAME } from './fnmatch.js';
import type {
  EvalState, ExprBinaryFn, ExprFuncDecl, ExprProvider, ExprStringFn, ExprUnaryFn, ExprVariable,
} from './types.js';
import { escapeUri } from '../lib/urlencoded.js';
export { escapeUri };

/** MODULE_MAGIC_NUMBER_MAJOR of httpd 2.4. */
const API_VERSION = '20120211';

const pad2 = (n: number): string => (n < 10 ? '0' : '') + n;

/** Adds a request header name to the evaluation's Vary list (never Host, RFC 7231 7.1.4). */
export function addVary(s: EvalState, name: string): void {
  if (s.dontVary || name.toLowerCase() === 'host') return;
  s.vary = s.vary === undefined ? name : s.vary + ', ' + name;
}

// ---- time --------------------------------------------------------------------------------

const timeVar = (f: (d: Date) => string): ExprVariable => () => f(new Date());
const fullTime = (d: Date): string =>
  `${d.getFullYear()}${pad2(d.getMonth() + 1)}${pad2(d.getDate())}${pad2(d.getHours())}${pad2(d.getMinutes())}${pad2(d.getSeconds())}`;

// ---- users and groups of a file (SCRIPT_USER, SCRIPT_GROUP) ---------------------------------

const idNames = new Map<string, Map<number, string>>();
function idName(file: '/etc/passwd' | '/etc/group', id: number): string {
  let m = idNames.get(file);
  if (m === undefined) {
    m = new Map();
    try {
      for (const line of fs.readFileSync(file, 'latin1').split('\n')) {
        const f = line.split(':');
        if (f.length > 2) m.set(Number(f[2]), f[0]!);
      }
    } catch { /* no such file: numbers stay unnamed */ }
    idNames.set(file, m);
  }
  return m.get(id) ?? '';
}

// ---- variables -------------------------------------------------------------------------------

const header = (name: string): ExprVariable => (s) => {
  addVary(s, name);
  return s.r.headersIn.get(name) ?? '';
};

function isIpv6Client(c: ConnRec): boolean {
  return c.remoteIp.includes(':') && !c.remoteIp.toLowerCase().startsWith('::ffff:');
}

function documentRoot(r: Request): string {
  return r.rt.coreServer(r.server).documentRoot ?? '';
}

/** The core's variable table; HTTPS asks the connection tests providers register. */
function coreVariables(sslTests: readonly ((c: ConnRec) => boolean)[]): Record<string, ExprVariable> {
  return {
    TIME_YEAR: timeVar((d) => String(d.getFullYear())),
    TIME_MON: timeVar((d) => pad2(d.getMonth() + 1)),
    TIME_DAY: timeVar((d) => pad2(d.getDate())),
    TIME_HOUR: timeVar((d) => pad2(d.getHours())),
    TIME_MIN: timeVar((d) => pad2(d.getMinutes())),
    TIME_SEC: timeVar((d) => pad2(d.getSeconds())),
    TIME_WDAY: timeVar((d) => String(d.getDay())),
    TIME: timeVar(fullTime),
    SERVER_SOFTWARE: (s) => s.r.rt.serverBanner(),
    API_VERSION: () => API_VERSION,

    HTTP_USER_AGENT: header('User-Agent'),
    HTTP_PROXY_CONNECTION: header('Proxy-Connection'),
    HTTP_REFERER: header('Referer'),
    HTTP_COOKIE: header('Cookie'),
    HTTP_FORWARDED: header('Forwarded'),
    HTTP_HOST: header('Host'),
    HTTP_ACCEPT: header('Accept'),

    REQUEST_METHOD: (s) => s.r.method,
    REQUEST_SCHEME: (s) => s.r.server.scheme ?? 'http',
    REQUEST_URI: (s) => s.r.uri,
    REQUEST_FILENAME: (s) => s.r.filename,
    REMOTE_HOST: (s) => s.r.connection.remoteHost ?? s.r.connection.remoteIp,
    REMOTE_IDENT: () => '',
    REMOTE_USER: (s) => s.r.user ?? '',
    SERVER_ADMIN: (s) => s.r.server.serverAdmin ?? '[no address given]',
    SERVER_NAME: (s) => {
      const n = s.r.rt.serverName(s.r);
      return n.includes(':') && !n.startsWith('[') ? `[${n}]` : n;
    },
    SERVER_PORT: (s) => String(s.r.rt.serverPort(s.r)),
    SERVER_PROTOCOL: (s) => s.r.protocol,
    SCRIPT_FILENAME: (s) => s.r.filename,
    PATH_INFO: (s) => s.r.pathInfo,
    QUERY_STRING: (s) => s.r.args ?? '',
    IS_SUBREQ: (s) => (s.r.main !== null ? 'true' : 'false'),
    DOCUMENT_ROOT: (s) => documentRoot(s.r),
    AUTH_TYPE: (s) => s.r.apAuthType ?? '',
    THE_REQUEST: (s) => s.r.theRequest,
    CONTENT_TYPE: (s) => s.r.contentType ?? '',
    HANDLER: (s) => s.r.handler ?? '',
    REQUEST_LOG_ID: () => '',
    SCRIPT_USER: (s) => (s.r.finfo !== null ? idName('/etc/passwd', s.r.finfo.uid) : ''),
    SCRIPT_GROUP: (s) => (s.r.finfo !== null ? idName('/etc/group', s.r.finfo.gid) : ''),
    DOCUMENT_URI: (s) => s.r.subprocessEnv.get('DOCUMENT_URI') ?? s.r.uri,
    LAST_MODIFIED: (s) => fullTime(new Date(s.r.mtime)),
    CONTEXT_PREFIX: (s) => s.r.contextPrefix ?? '',
    CONTEXT_DOCUMENT_ROOT: (s) => s.r.contextDocumentRoot ?? documentRoot(s.r),
    REQUEST_STATUS: (s) => (s.r.status ? String(s.r.status) : ''),
    REMOTE_ADDR: (s) => s.r.useragentIp,
    REMOTE_PORT: (s) => String(s.r.connection.remotePort),

    HTTPS: (s) => {
      for (const t of sslTests) if (t(s.r.connection)) return 'on';
      return 'off';
    },
    IPV6: (s) => (isIpv6Client(s.r.connection) ? 'on' : 'off'),
    CONN_LOG_ID: () => '',
    CONN_REMOTE_ADDR: (s) => s.r.connection.remoteIp,
    HTTP2: () => 'off',
  };
}

// ---- string functions ------------------------------------------------------------------------

const fn = (f: ExprStringFn, restricted = false): ExprFuncDecl<ExprStringFn> => ({ fn: f, restricted });

const asciiLower = (s: string): string => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
const asciiUpper = (s: string): string => s.replace(/[a-z]+/g, (m) => m.toUpperCase());


/** ap_unescape_url_keep2f(s, 0): %2F stays encoded; a bad escape or %00 gives undefined
 *  (and the string as far as decoded, which httpd throws away). */
export function unescapeKeep2f(s: string): { readonly ok: boolean; readonly bad: boolean; readonly value: string } {
  if (!s.includes('%')) return { ok: true, bad: false, value: s };
  let out = '';
  let badesc = false;
  let badpath = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '%') { out += c; continue; }
    const h = s.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(h)) { badesc = true; out += '%'; continue; }
    const v = parseInt(h, 16);
    if (v === 0) { badpath = true; out += '\u0000'; i += 2; continue; }
    if (v === 0x2f) { out += s.slice(i, i + 3); i += 2; continue; }
    out += String.fromCharCode(v);
    i += 2;
  }
  return { ok: !badesc && !badpath, bad: badesc, value: out };
}

/** apr_pescape_ldap with APR_ESCAPE_LDAP_ALL: DN and filter specials as \xx. */
function escapeLdap(s: string): string {
  let out = '';
  for (const c of s) {
    if ('\\,+"<>;=*()\u0000'.includes(c) || c === '#') out += '\\' + c.charCodeAt(0).toString(16).padStart(2, '0');
    else out += c;
  }
  return out;
}

const MAX_FILE_SIZE = 10 * 1024 * 1024;

function readFileFn(s: EvalState, file: string): string {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    s.err = `Cannot open file ${file}`;
    return '';
  }
  try {
    const st = fs.fstatSync(fd);
    if (st.size > MAX_FILE_SIZE) {
      s.err = `File ${file} too large`;
      return '';
    }
    if (st.size === 0) return '';
    const buf = Buffer.alloc(st.size);
    let got = 0;
    try {
      while (got < buf.length) {
        const n = fs.readSync(fd, buf, got, buf.length - got, got);
        if (n === 0) break;
        got += n;
      }
    } catch {
      s.err = `Cannot read from file ${file}`;
      return '';
    }
    // httpd returns a C string: it ends at the first NUL.
    const text = buf.subarray(0, got).toString('latin1');
    const nul = text.indexOf('\u0000');
    return nul < 0 ? text : text.slice(0, nul);
  } finally {
    fs.closeSync(fd);
  }
}

/** A C string ends at its first NUL (unbase64 of data holding 0x00 is truncated there). */
const cString = (s: string): string => {
  const i = s.indexOf('\u0000');
  return i < 0 ? s : s.slice(0, i);
};

const FUNCTIONS: Record<string, ExprFuncDecl<ExprStringFn>> = {
  osenv: fn((_s, a) => process.env[a] ?? ''),
  env: fn((s, a) => s.r.notes.get(a) ?? s.r.subprocessEnv.get(a) ?? process.env[a] ?? ''),
  resp: fn((s, a) => s.r.headersOut.get(a) ?? s.r.errHeadersOut.get(a) ?? ''),
  req: fn((s, a) => { addVary(s, a); return s.r.headersIn.get(a) ?? ''; }),
  http: fn((s, a) => { addVary(s, a); return s.r.headersIn.get(a) ?? ''; }),
  note: fn((s, a) => s.r.notes.get(a) ?? ''),
  reqenv: fn((s, a) => s.r.subprocessEnv.get(a) ?? ''),
  req_novary: fn((s, a) => s.r.headersIn.get(a) ?? ''),
  tolower: fn((_s, a) => asciiLower(a)),
  toupper: fn((_s, a) => asciiUpper(a)),
  escape: fn((_s, a) => escapeUri(a)),
  unescape: fn((s, a) => {
    const u = unescapeKeep2f(a);
    if (u.ok) return u.value;
    if (s.r.wantsLog('core', APLOG_DEBUG)) {
      s.r.log('core', APLOG_DEBUG, `AH00538: ${u.bad ? 'Bad' : 'Forbidden'} % escape in unescape('${a}') at ${s.file}:${s.line}`);
    }
    return '';
  }),
  file: fn(readFileFn, true),
  filesize: fn((_s, a) => {
    try {
      const st = fs.statSync(a);
      return st.isFile() && st.size > 0 ? String(st.size) : '0';
    } catch {
      return '0';
    }
  }, true),
  base64: fn((_s, a) => Buffer.from(a, 'latin1').toString('base64')),
  unbase64: fn((_s, a) => cString(Buffer.from(a, 'base64').toString('latin1'))),
  sha1: fn((_s, a) => createHash('sha1').update(Buffer.from(a, 'latin1')).digest('hex')),
  md5: fn((_s, a) => createHash('md5').update(Buffer.from(a, 'latin1')).digest('hex')),
  ldap: fn((_s, a) => escapeLdap(a)),
};

// ---- operators -------------------------------------------------------------------------------

function statOrNull(p: string, link = false): fs.Stats | null {
  try {
    return link ? fs.lstatSync(p) : fs.statSync(p);
  } catch {
    return null;
  }
}

/** -R and -ipmatch: the subnet is a constant, parsed when the expression is. */
function subnetOp<F>(make: (test: (ip: string) => boolean) => F) {
  return (arg: string | undefined, name: string): F | string => {
    if (arg === undefined) return `-${name} requires subnet/netmask as constant argument`;
    const slash = arg.indexOf('/');
    const res = parseSubnet(slash < 0 ? arg : arg.slice(0, slash), slash < 0 ? undefined : arg.slice(slash + 1));
    if (!res.ok) return 'parsing of subnet/netmask failed';
    const subnet = res.subnet;
    return make((ip) => {
      const a = parseAddr(ip);
      return a !== undefined && subnetTest(subnet, a);
    });
  };
}

/** ap_sub_req_lookup_uri for -U and -A: true when the subrequest's status is below 400. */
async function urlSubrequest(s: EvalState, arg: string): Promise<boolean> {
  const r = s.r;
  if (r.main !== null && r.main.uri === r.uri) return false;
  const rr = await r.rt.lookupUri(r, arg);
  if (r.wantsLog('core', APLOG_TRACE5)) r.log('core', APLOG_TRACE5, `Subrequest for -U ${arg} at ${s.file}:${s.line} gave status: ${rr.status}`);
  return rr.status < 400;
}

/** ap_sub_req_lookup_file for -F: below 300 and the file exists. */
async function fileSubrequest(s: EvalState, arg: string): Promise<boolean> {
  const r = s.r;
  const rr = await r.rt.lookupFile(r, arg);
  if (r.wantsLog('core', APLOG_TRACE5)) r.log('core', APLOG_TRACE5, `Subrequest for -F ${arg} at ${s.file}:${s.line} gave status: ${rr.status}`);
  return rr.status < 300 && statOrNull(rr.filename) !== null;
}

const unary = (f: ExprUnaryFn, restricted = false): ExprFuncDecl<ExprUnaryFn> => ({ fn: f, restricted });
const isLink = (_s: EvalState, a: string): boolean => statOrNull(a, true)?.isSymbolicLink() === true;

const UNARY: Record<string, ExprFuncDecl<ExprUnaryFn>> = {
  n: unary((_s, a) => a !== ''),
  z: unary((_s, a) => a === ''),
  R: {
    prepare: subnetOp<ExprUnaryFn>((test) => (s) => {
      const a = useragentAddr(s.r);
      return a !== undefined && test(s.r.useragentIp);
    }),
  },
  T: unary((_s, a) => {
    if (a === '') return false;
    const l = a.toLowerCase();
    switch (a[0]) {
      case 'o': case 'O': return l !== 'off';
      case 'n': case 'N': return l !== 'no';
      case 'f': case 'F': return l !== 'false';
      case '0': return a.length !== 1;
      default: return true;
    }
  }),
  d: unary((_s, a) => statOrNull(a)?.isDirectory() === true, true),
  e: unary((_s, a) => statOrNull(a) !== null, true),
  f: unary((_s, a) => statOrNull(a)?.isFile() === true, true),
  s: unary((_s, a) => { const st = statOrNull(a); return st !== null && st.isFile() && st.size > 0; }, true),
  L: unary(isLink, true),
  h: unary(isLink, true),
  x: unary((_s, a) => { const st = statOrNull(a, true); return st !== null && (st.mode & 0o111) !== 0; }, true),
  F: { fn: fileSubrequest, async: true },
  U: { fn: urlSubrequest, async: true },
  A: { fn: urlSubrequest, async: true },
};

const BINARY: Record<string, ExprFuncDecl<ExprBinaryFn>> = {
  ipmatch: { prepare: subnetOp<ExprBinaryFn>((test) => (_s, left) => test(left)) },
  fnmatch: { fn: (_s, a, b) => fnmatch(b, a, FNM_PATHNAME) },
  strmatch: { fn: (_s, a, b) => fnmatch(b, a, 0) },
  strcmatch: { fn: (_s, a, b) => fnmatch(b, a, FNM_CASE_BLIND) },
};

/** The core's provider; HTTPS consults the given TLS connection tests. */
export function coreProvider(sslTests: readonly ((c: ConnRec) => boolean)[]): ExprProvider {
  return { variables: coreVariables(sslTests), functions: FUNCTIONS, unaryOps: UNARY, binaryOps: BINARY };
}
