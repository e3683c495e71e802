// The error log: httpd's default line format
//   [Sun Nov 22 01:45:49.807104 2026] [module:level] [pid N:tid N] (errno)text: [client ip:port] AHnnnnn: message, referer: X
// or a compiled ErrorLogFormat, written to the server's ErrorLog target.

import { aprCtime, nowMicros } from './time.js';
import { APLOG_DEBUG, levelName } from './levels.js';
import type { LogSink } from './log-writer.js';

export interface ErrorLogEntry {
  readonly module: string;
  readonly level: number;
  /** The message, with its "AHnnnnn: " tag when it has one. */
  readonly message: string;
  /** An OS error, printed "(2)No such file or directory: ". */
  readonly errno?: { readonly code: number; readonly text: string } | undefined;
  readonly client?: { readonly ip: string; readonly port: number } | undefined;
  readonly referer?: string | undefined;
  /** httpd's APLOG_MARK, "file.c(line)": printed by the default format at debug and above. */
  readonly source?: string | undefined;
  /** The request or connection the entry belongs to, for ErrorLogFormat items. */
  readonly context?: ErrorLogContext | undefined;
}

/** What ErrorLogFormat items may read about the request/connection. */
export interface ErrorLogContext {
  readonly localIp?: string;
  readonly localPort?: number;
  readonly requestHeader?: (name: string) => string | undefined;
  readonly env?: (name: string) => string | undefined;
  readonly note?: (name: string) => string | undefined;
  readonly connectionId?: string;
  readonly requestId?: string;
  readonly serverName?: string;
  readonly canonicalName?: string;
  readonly keepalives?: number;
  readonly logId?: string;
}

export type ErrorLogFormatter = (e: ErrorLogEntry, micros: number) => string | null;

const pid = process.pid;

export function formatDefault(e: ErrorLogEntry, micros: number): string {
  let s = `[${aprCtime(micros)}] [${e.module}:${levelName(e.level)}] [pid ${pid}:tid ${pid}] `;
  if (e.source !== undefined && e.level >= APLOG_DEBUG) s += `${e.source}: `;
  if (e.errno) s += `(${errnoLabel(e.errno.code)})${e.errno.text}: `;
  if (e.client) s += `[client ${e.client.ip}:${e.client.port}] `;
  s += e.message;
  if (e.referer) s += `, referer: ${e.referer}`;
  return s;
}

export class ErrorLog {
  constructor(
    readonly sink: LogSink,
    private readonly formatter: ErrorLogFormatter = formatDefault,
  ) {}
  write(e: ErrorLogEntry): void {
    // httpd escapes the message and the referer (ap_escape_errorlog_item in log_error_core).
    if (NEEDS_ESCAPE.test(e.message) || (e.referer !== undefined && NEEDS_ESCAPE.test(e.referer))) {
      e = { ...e, message: escapeErrorlogItem(e.message), referer: e.referer === undefined ? undefined : escapeErrorlogItem(e.referer) };
    }
    const line = this.formatter(e, nowMicros());
    if (line !== null) this.sink.write(line + '\n');
  }
  withFormatter(f: ErrorLogFormatter): ErrorLog {
    return new ErrorLog(this.sink, f);
  }
}

const NEEDS_ESCAPE = /[\x00-\x1f\x7f-\uffff\\]/;
const ESCAPES: Record<string, string> = { '\b': '\\b', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '\\': '\\\\' };

/** ap_escape_errorlog_item: control characters and bytes above 0x7e as \xHH (or \n, \t...),
 *  a backslash doubled; strings hold bytes as latin1 characters (wider ones as UTF-8). */
export function escapeErrorlogItem(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c >= 0x20 && c < 0x7f && ch !== '\\') { out += ch; continue; }
    const named = ESCAPES[ch];
    if (named !== undefined) { out += named; continue; }
    const bytes = c < 256 ? [c] : [...Buffer.from(ch, 'utf8')];
    for (const b of bytes) out += '\\x' + b.toString(16).padStart(2, '0');
  }
  return out;
}

/** APR's status codes for getaddrinfo's errors start here (APR_OS_START_EAIERR): httpd's log
 *  writes such a status as "(EAI n)" (log_error_core), n being getaddrinfo's error number. */
export const APR_OS_START_EAIERR = 670000;

/** How a log line names an error status: the number, or "EAI n" for a getaddrinfo error. */
export function errnoLabel(code: number): string {
  return code >= APR_OS_START_EAIERR && code < APR_OS_START_EAIERR + 50000 ? `EAI ${code - APR_OS_START_EAIERR}` : String(code);
}

/** errno numbers for the Node error codes httpd messages mention. */
const ERRNO: Record<string, [number, string]> = {
  ENOENT: [2, 'No such file or directory'],
  EACCES: [13, 'Permission denied'],
  ENOTDIR: [20, 'Not a directory'],
  EISDIR: [21, 'Is a directory'],
  ELOOP: [40, 'Too many levels of symbolic links'],
  EADDRINUSE: [98, 'Address already in use'],
  EADDRNOTAVAIL: [99, 'Cannot assign requested address'],
  ENAMETOOLONG: [36, 'File name too long'],
  EPERM: [1, 'Operation not permitted'],
  EMFILE: [24, 'Too many open files'],
  ECONNRESET: [104, 'Connection reset by peer'],
  ECONNREFUSED: [111, 'Connection refused'],
  EHOSTUNREACH: [113, 'No route to host'],
  ENETUNREACH: [101, 'Network is unreachable'],
  EPIPE: [32, 'Broken pipe'],
  ETIMEDOUT: [110, 'Connection timed out'],
  EINVAL: [22, 'Invalid argument'],
  ENOSPC: [28, 'No space left on device'],
  ENOMEM: [12, 'Cannot allocate memory'],
  // getaddrinfo's failures as Node names them (dns.lookup), in APR's EAI space: glibc's
  // EAI_NONAME -2, EAI_AGAIN -3, EAI_FAIL -4, EAI_NODATA -5.
  ENOTFOUND: [APR_OS_START_EAIERR + 2, 'Name or service not known'],
  EAI_AGAIN: [APR_OS_START_EAIERR + 3, 'Temporary failure in name resolution'],
  EAI_FAIL: [APR_OS_START_EAIERR + 4, 'Non-recoverable failure in name resolution'],
  EAI_NODATA: [APR_OS_START_EAIERR + 5, 'No address associated with hostname'],
  // APR's own codes, as filters fail (FilterError.code).
  APR_EGENERAL: [20014, 'Internal error (specific information not available)'],
};

export function errnoOf(err: unknown): { code: number; text: string } | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  const e = ERRNO[code];
  return e ? { code: e[0], text: e[1] } : { code: 0, text: code };
}
