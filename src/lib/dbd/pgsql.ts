// The "pgsql" database driver (apr-util dbd/apr_dbd_pgsql.c) over the pure-JavaScript `pg`
// client: DBDParams read as libpq's conninfo, statements prepared with SQL PREPARE under their
// label (as apr_dbd_pgsql does, so a bad statement fails when the connection is made) and run
// with their parameters bound as text, results read as text, and errors worded as libpq's
// PQerrorMessage, which Apache logs.

import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import pg from 'pg';
import { CONNINFO_KEYWORDS, conninfoInt, parseConninfo, SSLMODES } from './conninfo.js';
import { pgsqlTypeName, translatePlaceholders } from './placeholders.js';

/** Rows as APR hands them: every value as text, NULL as "" (PQgetvalue's answer for NULL,
 *  which apr_dbd_pgsql's get_entry passes on). */
export interface DbdResults {
  readonly names: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

/** A query or connection failure, with the driver's error text (apr_dbd_error). */
export class DbdError extends Error {}

/** One open connection (apr_dbd_t with its driver). */
export interface DbdConnection {
  readonly driverName: string;
  /** apr_dbd_prepare: translates APR's placeholders and prepares under `label`; resolves to
   *  the driver's error text on failure. */
  prepare(query: string, label: string): Promise<string | undefined>;
  /** apr_dbd_pvselect on a prepared statement: rejects with a DbdError. With `random` false
   *  (APR's seek 0, what mod_authn_dbd and mod_authz_dbd ask for) apr_dbd_pgsql only sends the
   *  query, and an error the server answers with reads as no rows; only a failure to send
   *  rejects. */
  pselect(label: string, args: readonly (string | null)[], random?: boolean): Promise<DbdResults>;
  /** apr_dbd_pvquery: the number of rows affected. */
  pquery(label: string, args: readonly (string | null)[]): Promise<number>;
  /** apr_dbd_query (DBDInitSQL). */
  query(sql: string): Promise<number>;
  /** apr_dbd_check_conn: false once the connection is lost. */
  check(): boolean;
  /** The last error's text (apr_dbd_error). */
  lastError(): string;
  close(): Promise<void>;
}

/** Text values, whatever the column type (apr_dbd_get_entry returns PQgetvalue's text). */
const TEXT_TYPES = { getTypeParser: () => (v: string): string => v };

/** PQerrorMessage's text for a server error: severity, two spaces, message, the LINE and
 *  cursor of the error's position in the query sent, then DETAIL, HINT and CONTEXT lines, as
 *  libpq's default verbosity shows them. */
function serverErrorText(e: pg.DatabaseError, query?: string): string {
  let t = `${e.severity ?? 'ERROR'}:  ${e.message}\n`;
  const pos = e.position === undefined ? NaN : Number(e.position);
  if (query !== undefined && Number.isInteger(pos) && pos > 0) t += errorPosition(query, pos);
  if (e.detail) t += `DETAIL:  ${e.detail}\n`;
  if (e.hint) t += `HINT:  ${e.hint}\n`;
  if (e.where) t += `CONTEXT:  ${e.where}\n`;
  return t;
}

const DISPLAY_SIZE = 60;
const MIN_RIGHT_CUT = 10;

/** libpq's reportErrorPosition (fe-protocol3.c): the query's line holding the 1-based
 *  character position, cut to about 60 columns around it, and a caret under the position.
 *  Tabs show as spaces; every character is one column wide here (libpq measures display
 *  width, which differs for wide characters). */
export function errorPosition(query: string, position: number): string {
  const chars = Array.from(query).map((c) => (c === '\t' ? ' ' : c));
  const loc = position - 1;
  let locLine = 1;
  let ibeg = 0;
  let iend = -1;
  let cno = 0;
  for (; cno < chars.length; cno++) {
    const ch = chars[cno];
    if (ch === '\r' || ch === '\n') {
      if (cno < loc) {
        if (ch === '\r' || cno === 0 || chars[cno - 1] !== '\r') locLine++;
        ibeg = cno + 1;
      } else {
        iend = cno;
        break;
      }
    }
  }
  if (iend < 0) iend = cno;
  if (loc > cno) return '';
  let begTrunc = false;
  let endTrunc = false;
  if (iend - ibeg > DISPLAY_SIZE) {
    if (ibeg + DISPLAY_SIZE >= loc + MIN_RIGHT_CUT) {
      while (iend - ibeg > DISPLAY_SIZE) iend--;
      endTrunc = true;
    } else {
      while (loc + MIN_RIGHT_CUT < iend) { iend--; endTrunc = true; }
      while (iend - ibeg > DISPLAY_SIZE) { ibeg++; begTrunc = true; }
    }
  }
  const prefix = `LINE ${locLine}: ${begTrunc ? '...' : ''}`;
  return `${prefix}${chars.slice(ibeg, iend).join('')}${endTrunc ? '...' : ''}\n${' '.repeat(prefix.length + loc - ibeg)}^\n`;
}

function isDatabaseError(e: unknown): e is pg.DatabaseError {
  return e instanceof pg.DatabaseError;
}

const ERRNO_TEXT: Record<string, string> = {
  ECONNREFUSED: 'Connection refused', ENOENT: 'No such file or directory', EACCES: 'Permission denied',
  ETIMEDOUT: 'Connection timed out', EHOSTUNREACH: 'No route to host', ENETUNREACH: 'Network is unreachable',
  ECONNRESET: 'Connection reset by peer',
};

interface Target {
  /** "at \"127.0.0.1\", port 5432" or "on socket \"/run/postgresql/.s.PGSQL.5432\"". */
  readonly where: string;
  readonly socket: boolean;
}

/** libpq's connection failure text for an error of the socket or the server. */
function connectErrorText(t: Target, e: unknown): string {
  const prefix = `connection to server ${t.where} failed: `;
  if (isDatabaseError(e)) return prefix + serverErrorText(e);
  const code = (e as { code?: string }).code ?? '';
  if (code === 'ECONNREFUSED' || (t.socket && code === 'ENOENT')) {
    return prefix + `${ERRNO_TEXT[code]!}\n\t` + (t.socket
      ? 'Is the server running locally and accepting connections on that socket?\n'
      : 'Is the server running on that host and accepting TCP/IP connections?\n');
  }
  const msg = e instanceof Error ? e.message : String(e);
  if (/timeout/i.test(msg)) return 'timeout expired\n';
  if (msg.startsWith('fe_sendauth')) return prefix + msg + '\n';
  if (/terminated/i.test(msg)) return prefix + 'server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or while processing the request.\n';
  return prefix + (ERRNO_TEXT[code] ?? msg) + '\n';
}

/** DBDParams → a pg client configuration, or libpq's error text. */
function clientConfig(params: string): { config: pg.ClientConfig; target: Target } | { error: string } {
  const parsed = parseConninfo(params);
  if (!parsed.ok) return { error: parsed.error };
  const o = parsed.options;
  // libpq's defaults: PGHOST etc. from the environment, then a unix socket in Debian's
  // directory, the port 5432, the process's user name, a database named after the user.
  const env = (k: string): string | undefined => process.env[k] === '' ? undefined : process.env[k];
  const get = (k: string, envName: string): string | undefined => o.get(k) ?? env(envName);
  const portText = get('port', 'PGPORT') ?? '5432';
  const port = conninfoInt(portText, 'port');
  if (typeof port === 'string') return { error: port };
  if (port < 1 || port > 65535) return { error: `invalid port number: "${portText}"\n` };
  const sslmode = get('sslmode', 'PGSSLMODE') ?? 'prefer';
  if (!SSLMODES.has(sslmode)) return { error: `invalid sslmode value: "${sslmode}"\n` };
  let timeoutMs = 0;
  const ct = get('connect_timeout', 'PGCONNECT_TIMEOUT');
  if (ct !== undefined) {
    const v = conninfoInt(ct, 'connect_timeout');
    if (typeof v === 'string') return { error: v };
    // libpq: a timeout below 2 seconds is 2 seconds; 0 or less is none.
    timeoutMs = v <= 0 ? 0 : Math.max(v, 2) * 1000;
  }
  let user = get('user', 'PGUSER');
  if (user === undefined) {
    try { user = os.userInfo().username; } catch { user = String(process.getuid?.() ?? ''); }
  }
  // Several hosts (a comma-separated list) are tried in turn by libpq; plume takes the first.
  const hostList = (get('host', 'PGHOST') ?? '').split(',')[0]!;
  const hostaddr = (get('hostaddr', 'PGHOSTADDR') ?? '').split(',')[0]!;
  const socketDir = hostaddr === '' && (hostList === '' || hostList.startsWith('/') || hostList.startsWith('@'))
    ? (hostList === '' ? '/var/run/postgresql' : hostList) : undefined;
  const host = socketDir ?? (hostaddr !== '' ? hostaddr : hostList);
  let where: string;
  if (socketDir !== undefined) where = `on socket "${socketDir}/.s.PGSQL.${port}"`;
  else if (hostaddr !== '' || net.isIP(hostList) !== 0) where = `at "${hostList !== '' ? hostList : hostaddr}"${hostaddr !== '' && hostList !== '' && hostList !== hostaddr ? ` (${hostaddr})` : ''}, port ${port}`;
  else where = `at "${hostList}", port ${port}`;
  const password = get('password', 'PGPASSWORD');
  const config: pg.ClientConfig = {
    host, port, user, database: get('dbname', 'PGDATABASE') ?? user,
    // A function, so that pg neither reads ~/.pgpass by itself nor sends an empty password:
    // without one libpq answers the server's request with this error.
    password: () => {
      if (password === undefined) throw new Error('fe_sendauth: no password supplied');
      return password;
    },
    connectionTimeoutMillis: timeoutMs,
    types: TEXT_TYPES,
  };
  const app = get('application_name', 'PGAPPNAME') ?? o.get('fallback_application_name');
  if (app !== undefined) config.application_name = app;
  const options = get('options', 'PGOPTIONS');
  if (options !== undefined) config.options = options;
  const enc = get('client_encoding', 'PGCLIENTENCODING');
  if (enc !== undefined) config.client_encoding = enc;
  if (o.get('keepalives') !== '0') {
    config.keepAlive = true;
    const idle = o.get('keepalives_idle');
    if (idle !== undefined && typeof conninfoInt(idle, 'keepalives_idle') === 'number') config.keepAliveInitialDelayMillis = Number(idle) * 1000;
  }
  // DIFFERENCE: "prefer" and "allow" connect without TLS (libpq tries TLS first under "prefer");
  // "require", "verify-ca" and "verify-full" use TLS as libpq does.
  if (sslmode === 'require' || sslmode === 'verify-ca' || sslmode === 'verify-full') {
    const read = (k: string): Buffer | undefined => {
      const f = o.get(k);
      try { return f === undefined ? undefined : fs.readFileSync(f); } catch { return undefined; }
    };
    const ca = read('sslrootcert');
    config.ssl = {
      rejectUnauthorized: sslmode !== 'require' || ca !== undefined,
      ...(ca !== undefined ? { ca } : {}),
      ...(read('sslcert') !== undefined ? { cert: read('sslcert')! } : {}),
      ...(read('sslkey') !== undefined ? { key: read('sslkey')! } : {}),
      ...(sslmode === 'verify-full' ? {} : { checkServerIdentity: () => undefined }),
    };
  }
  return { config, target: { where, socket: socketDir !== undefined } };
}

class PgsqlConnection implements DbdConnection {
  readonly driverName = 'pgsql';
  private lost = false;
  private error = '';
  /** label → the translated statement text (pg's record of statements it has parsed). */
  private readonly statements = new Map<string, string>();
  /** label → how many values the statement reads (its placeholders). */
  private readonly nargs = new Map<string, number>();
  constructor(private readonly client: pg.Client) {
    client.on('error', (e) => { this.lost = true; this.error = errorText(e); });
    client.on('end', () => { this.lost = true; });
  }

  async prepare(query: string, label: string): Promise<string | undefined> {
    const t = translatePlaceholders(query);
    const types = t.types.length > 0 ? ` (${t.types.map(pgsqlTypeName).join(',')})` : '';
    const sql = `PREPARE ${label}${types} AS ${t.sql}`;
    try {
      await this.client.query(sql);
    } catch (e) {
      return this.fail(e, sql);
    }
    this.statements.set(label, t.sql);
    this.nargs.set(label, t.types.length);
    // The statement exists on the server under its label: pg binds to it by name once it
    // believes it parsed it, instead of sending a Parse of its own.
    const parsed = (this.client as unknown as { connection?: { parsedStatements?: Record<string, string> } }).connection?.parsedStatements;
    if (parsed !== undefined) parsed[label] = t.sql;
    return undefined;
  }

  private fail(e: unknown, query?: string): string {
    this.error = errorText(e, query);
    if (!isDatabaseError(e)) this.lost = true;
    return this.error;
  }

  /** apr_dbd_pvselect / pvquery read as many values as the statement has placeholders; more
   *  are ignored. A null value is SQL NULL. */
  private async run(label: string, args: readonly (string | null)[]): Promise<pg.QueryArrayResult<(string | null)[]>> {
    const text = this.statements.get(label);
    if (text === undefined) throw new DbdError(this.error = `ERROR:  prepared statement "${label}" does not exist\n`);
    try {
      return await this.client.query<(string | null)[]>({ name: label, text, values: args.slice(0, this.nargs.get(label) ?? args.length), rowMode: 'array', types: TEXT_TYPES });
    } catch (e) {
      throw new DbdError(this.fail(e));
    }
  }

  async pselect(label: string, args: readonly (string | null)[], random = false): Promise<DbdResults> {
    let r: pg.QueryArrayResult<(string | null)[]>;
    try {
      r = await this.run(label, args);
    } catch (e) {
      if (!random && !this.lost && this.statements.has(label)) return { names: [], rows: [] };
      throw e;
    }
    return { names: r.fields.map((f) => f.name), rows: r.rows.map((row) => row.map((v) => v ?? '')) };
  }

  async pquery(label: string, args: readonly (string | null)[]): Promise<number> {
    return (await this.run(label, args)).rowCount ?? 0;
  }

  async query(sql: string): Promise<number> {
    try {
      const r = await this.client.query(sql);
      return (Array.isArray(r) ? 0 : r.rowCount) ?? 0;
    } catch (e) {
      throw new DbdError(this.fail(e, sql));
    }
  }

  check(): boolean {
    return !this.lost;
  }

  lastError(): string {
    return this.error;
  }

  async close(): Promise<void> {
    this.lost = true;
    try { await this.client.end(); } catch { /* already gone */ }
  }
}

function errorText(e: unknown, query?: string): string {
  if (isDatabaseError(e)) return serverErrorText(e, query);
  const msg = e instanceof Error ? e.message : String(e);
  if (/terminat|ECONNRESET|EPIPE/.test(msg)) return 'server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or while processing the request.\n';
  return msg.endsWith('\n') ? msg : msg + '\n';
}

/** apr_dbd_open_ex for pgsql: a connection, or libpq's error text. */
export async function openPgsql(params: string): Promise<{ conn: DbdConnection } | { error: string }> {
  const cc = clientConfig(params);
  if ('error' in cc) return cc;
  const client = new pg.Client(cc.config);
  // Errors after the connection is made arrive as 'error' events; until then connect() rejects.
  client.on('error', () => { /* handled by the connection's own listener */ });
  try {
    await client.connect();
  } catch (e) {
    try { await client.end(); } catch { /* not connected */ }
    return { error: connectErrorText(cc.target, e) };
  }
  return { conn: new PgsqlConnection(client) };
}

/** Whether the keyword names a libpq option (for tests and -t checks). */
export function isConninfoKeyword(k: string): boolean {
  return CONNINFO_KEYWORDS.has(k);
}
