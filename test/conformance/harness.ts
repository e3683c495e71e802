/**
 * Conformance harness: shared logic for recording cases against real Apache
 * httpd (record.ts) and replaying them against plume (conformance.test.ts).
 *
 * A case (test/conformance/cases/<group>/<name>.json) describes a config, a
 * set of files and a list of raw-TCP requests. The harness materialises it
 * into a fresh temp dir, starts a server, sends the requests, parses the
 * responses, collects the log lines written while serving each request,
 * normalises everything that legitimately varies between runs (dates, ports,
 * the temp dir, pids, inode numbers, multipart boundaries) and returns a
 * CaseResult that can be written as the expected file or compared with one.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { parseResponse as parseOcspResponse, responseStatusText, STATUS_TEXT } from '../../src/lib/ocsp.js';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startFcgiEcho, startFtp, startHttpScript, startPhpFpm, startScgi, startUwsgi, type Backend } from '../process/app-backends.js';
import { startPostgres } from '../process/postgres-server.js';
import { startSlapd } from '../process/ldap-server.js';

// ---------------------------------------------------------------------------
// Locations
// ---------------------------------------------------------------------------

/** Repo root: this file is dist/test/conformance/harness.js → up 3. */
export const REPO_ROOT: string = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const CASES_DIR: string = path.join(REPO_ROOT, 'test', 'conformance', 'cases');
export const EXPECTED_DIR: string = path.join(REPO_ROOT, 'test', 'conformance', 'expected');
export const APACHE_BIN = '/usr/sbin/apache2';

// ---------------------------------------------------------------------------
// Case format
// ---------------------------------------------------------------------------

/**
 * A file to materialise. A plain string is the file's content. Keys ending in
 * "/" are directories whatever the value. Placeholders (@ROOT@, @PORT@,
 * @PORT2@) are substituted in contents and symlink targets.
 */
export type FileSpec = string | FileObjectSpec;

export interface FileObjectSpec {
  /** Literal text content. */
  content?: string;
  /** Binary content, base64. */
  base64?: string;
  /** `repeat` repeated `count` times. */
  repeat?: string;
  count?: number;
  /** Make a symlink pointing at this target (relative or absolute). */
  symlink?: string;
  /** Make a directory. */
  dir?: boolean;
  /** Octal permission string, e.g. "0600" (defaults: files 0644, dirs 0755). */
  mode?: string;
  /** mtime as "SECONDS.NANOSECONDS" since the epoch (default FIXED_MTIME), set to the
   *  nanosecond with touch(1) (Node's utimes takes a double: not that precise). */
  mtime?: string;
}

export interface RequestSpec {
  /** Raw bytes to send (placeholders substituted). An array is sent in parts, `gapMs` apart. */
  raw?: string | string[];
  method?: string;
  path?: string;
  /** Protocol for built requests; default HTTP/1.1. */
  version?: string;
  headers?: [string, string][];
  body?: string;
  /** Local address to bind (e.g. 127.0.0.2). */
  client?: string;
  /** Target port, "@PORT@" (default) or "@PORT2@" or a literal number. */
  port?: string;
  /** Number of responses to read from the connection for this request (default 1). */
  responses?: number;
  /** Gap between raw parts in ms (default 300). */
  gapMs?: number;
  /** Half-close (FIN) the client side after sending. */
  end?: boolean;
  /** Give up reading after this many ms (default 5000). */
  timeoutMs?: number;
  /** Speak TLS on this connection (the case's server must have SSLEngine on there). */
  tls?: TlsRequestSpec;
  /** Files (relative to the case's root, placeholders substituted) replaced before this request
   *  is sent, through a rename, with the current time as mtime: a change between requests. */
  writeFiles?: Record<string, string>;
}

/** The client side of a TLS connection. */
export interface TlsRequestSpec {
  /** The SNI name; null sends none (default: none, as for an IP address). */
  servername?: string | null;
  /** A client certificate from test/fixtures/tls: "client" sends client.crt with client.key. */
  cert?: string;
  minVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  /** OpenSSL cipher list the client offers (TLS 1.2 and below). */
  ciphers?: string;
  /** Ask for the certificate status (status_request): the step records what was stapled. */
  requestOCSP?: boolean;
}

/** The certificates and keys TLS cases use (copied into @ROOT@/tls/ with "tlsFiles"). */
export const TLS_FIXTURES: string = path.join(REPO_ROOT, 'test', 'fixtures', 'tls');

export interface CaseSpec {
  /** One line: what Apache behaviour this pins. */
  title: string;
  /** httpd.conf lines after the standard preamble (or the whole file when preamble is false). */
  conf: string[];
  /** Default true. */
  preamble?: boolean;
  files?: Record<string, FileSpec>;
  requests: RequestSpec[];
  /** All requests go over one connection. */
  keepAlive?: boolean;
  /** Compare error-log and access-log lines (default true). */
  logLines?: boolean;
  /**
   * Extra log files (relative to @ROOT@) to collect per request, e.g. per-vhost logs.
   * A file whose name contains "error" is normalised like the error log.
   */
  extraLogs?: string[];
  /** Where the specification deliberately differs from Apache. */
  specOverride?: SpecOverride;
  /**
   * Values that differ on every run (random ids, times in cookies): [regex source, replacement]
   * pairs applied (globally) to header values, bodies and log lines after the standard
   * normalisation, e.g. ["[A-Za-z0-9_-]{27}", "<unique-id>"].
   */
  normalize?: [string, string][];
  /** Copy test/fixtures/tls/ (certificates, keys, CRL) to @ROOT@/tls/. */
  tlsFiles?: boolean;
  /**
   * Run a real OCSP responder (`openssl ocsp`, signed by the test CA, statuses from
   * tls/index.txt) on @OCSPPORT@ while the case runs; implies tlsFiles.
   */
  ocspResponder?: boolean;
  /**
   * Replacements in response bodies on both sides, [regex source, replacement] (flag g), for
   * what a page prints of the server itself (mod_proxy_balancer's "Server Version:" and
   * "Server Built:" lines); Content-Length and logged sizes are restated as for boundaries.
   */
  bodyReplace?: [string, string][];
  /**
   * An application server started for the case (test/process/app-backends.ts): the FastCGI
   * echo responder, the SCGI server or the uwsgi application on @PORT2@; "fcgi-echo-unix" on
   * the unix socket @ROOT@/backend.sock; "php-fpm" a pool on @PORT2@ and @ROOT@/php-fpm.sock;
   * "http" the scripted HTTP/1.1 backend of test/fixtures/proxy-http on @PORT2@; "postgres" a
   * PostgreSQL server (test/process/postgres-server.ts) on 127.0.0.1:@PORT2@ with its socket
   * in @ROOT@/pg, superuser "postgres" (trust), after the case's file `setup.sql` ran in it; "slapd" Debian's OpenLDAP server
   * with test/fixtures/ldap/base.ldif on @PORT2@ (test/process/ldap-server.ts); "ftp" a real FTP
   * server (pyftpdlib, test/fixtures/ftp/server.py) on 127.0.0.1:@PORT2@ serving @ROOT@/ftp
   * (users anonymous and alice/secret), with the options of the case's file `ftp-options.json`.
   */
  backend?: CaseBackend;
}

export type CaseBackend = 'fcgi-echo' | 'fcgi-echo-unix' | 'scgi' | 'uwsgi' | 'php-fpm' | 'http' | 'postgres' | 'slapd' | 'ftp';

export interface SpecOverride {
  reason: string;
  expected: ExpectedOverride;
}

/**
 * A partial expected result. Top-level keys replace Apache's; `requests` is
 * merged index by index (null = keep Apache's), and inside a request
 * `responses` is merged index by index, field by field.
 */
export interface ExpectedOverride {
  startup?: StartupFailure | null;
  stderr?: string[];
  requests?: (StepOverride | null)[];
}

export interface StepOverride {
  responses?: (Partial<RecordedResponse> | null)[];
  errorLog?: string[];
  accessLog?: string[];
  otherLogs?: Record<string, string[]>;
}

export interface LoadedCase {
  id: string;
  file: string;
  spec: CaseSpec;
}

// ---------------------------------------------------------------------------
// Result format (what expected/<id>.json holds)
// ---------------------------------------------------------------------------

export interface RecordedResponse {
  /** 1xx interim status lines received before the final response. */
  interim?: string[];
  /** Null when no status line came (nothing at all, or an HTTP/0.9 style reply). */
  statusLine: string | null;
  headers: [string, string][];
  /** Body (chunked encoding removed); base64 when bodyBase64 is true. */
  body: string;
  bodyBase64?: boolean;
  /** Set when the response did not complete: "closed" or "timeout". */
  incomplete?: string;
}

export interface RecordedStep {
  /** First line of the request, for readability only (not compared). */
  request: string;
  responses: RecordedResponse[];
  errorLog: string[];
  accessLog: string[];
  otherLogs?: Record<string, string[]>;
  /** With tls.requestOCSP: the stapled OCSP response ("none", "trylater", "successful good"...). */
  stapled?: string;
}

export interface StartupFailure {
  exitCode: number | null;
  stderr: string[];
}

export interface CaseResult {
  /** Present when the server did not come up. */
  startup?: StartupFailure;
  /** stderr lines written while starting (when it did come up). */
  stderr?: string[];
  requests?: RecordedStep[];
}

export interface ExpectedFile extends CaseResult {
  case: string;
  title: string;
  recordedWith: string;
}

// ---------------------------------------------------------------------------
// Preamble and placeholders
// ---------------------------------------------------------------------------

export const PREAMBLE: string[] = [
  'ServerRoot "@ROOT@"',
  'Listen 127.0.0.1:@PORT@',
  'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
  '<IfModule !unixd_module>',
  '  LoadModule unixd_module /usr/lib/apache2/modules/mod_unixd.so',
  '</IfModule>',
  'LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so',
  'LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so',
  'LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so',
  'User nobody',
  'Group nogroup',
  'ServerName localhost',
  'PidFile @ROOT@/logs/httpd.pid',
  'ErrorLog @ROOT@/logs/error_log',
  'LogLevel warn',
  'LogFormat "%h %l %u \\"%r\\" %>s %b" plume_case',
  'CustomLog @ROOT@/logs/access_log plume_case',
  'TypesConfig /etc/mime.types',
  'DocumentRoot "@ROOT@/htdocs"',
];

/** Fixed mtime for every materialised file and directory. */
export const FIXED_MTIME = new Date('2026-01-02T03:04:05Z');

export interface Placeholders {
  root: string;
  port: number;
  port2: number;
  /** The OCSP responder's port (cases with "ocspResponder"). */
  ocspPort?: number;
}

export function substitute(s: string, ph: Placeholders): string {
  const out = s.split('@ROOT@').join(ph.root).split('@PORT2@').join(String(ph.port2)).split('@PORT@').join(String(ph.port));
  return ph.ocspPort !== undefined ? out.split('@OCSPPORT@').join(String(ph.ocspPort)) : out;
}

// ---------------------------------------------------------------------------
// Loading cases
// ---------------------------------------------------------------------------

function isStringPair(v: unknown): v is [string, string] {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string';
}

function validateCase(id: string, v: unknown): CaseSpec {
  const fail = (msg: string): never => {
    throw new Error(`case ${id}: ${msg}`);
  };
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail('not an object');
  const o = v as Record<string, unknown>;
  if (typeof o.title !== 'string' || o.title === '') fail('missing title');
  if (!Array.isArray(o.conf) || !o.conf.every((l) => typeof l === 'string')) fail('conf must be an array of strings');
  if (!Array.isArray(o.requests)) fail('requests must be an array');
  const known = new Set(['title', 'conf', 'preamble', 'files', 'requests', 'keepAlive', 'logLines', 'extraLogs', 'specOverride', 'tlsFiles', 'ocspResponder', 'normalize', 'bodyReplace', 'backend']);
  for (const k of Object.keys(o)) if (!known.has(k)) fail(`unknown key ${k}`);
  if (o.normalize !== undefined && !(Array.isArray(o.normalize) && o.normalize.every(isStringPair))) fail('normalize must be [regex, replacement] pairs');
  for (const [i, r] of (o.requests as unknown[]).entries()) {
    if (typeof r !== 'object' || r === null) fail(`request ${i} not an object`);
    const rq = r as Record<string, unknown>;
    if (rq.raw === undefined && (typeof rq.method !== 'string' || typeof rq.path !== 'string')) {
      fail(`request ${i} needs raw or method+path`);
    }
    if (rq.headers !== undefined && !(Array.isArray(rq.headers) && rq.headers.every(isStringPair))) {
      fail(`request ${i} headers must be [name, value] pairs`);
    }
  }
  if (o.files !== undefined && (typeof o.files !== 'object' || o.files === null)) fail('files must be an object');
  if (o.backend !== undefined && !['fcgi-echo', 'fcgi-echo-unix', 'scgi', 'uwsgi', 'php-fpm', 'http', 'postgres', 'slapd', 'ftp'].includes(o.backend as string)) fail(`unknown backend ${String(o.backend)}`);
  return o as unknown as CaseSpec;
}

export function loadCases(filter?: string): LoadedCase[] {
  const out: LoadedCase[] = [];
  if (!fs.existsSync(CASES_DIR)) return out;
  for (const group of fs.readdirSync(CASES_DIR).sort()) {
    const gdir = path.join(CASES_DIR, group);
    if (!fs.statSync(gdir).isDirectory()) continue;
    for (const f of fs.readdirSync(gdir).sort()) {
      if (!f.endsWith('.json')) continue;
      const id = `${group}/${f.slice(0, -5)}`;
      if (filter !== undefined && filter !== '' && !id.includes(filter)) continue;
      const file = path.join(gdir, f);
      let parsed: unknown;
      try {
        parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
      } catch (e) {
        throw new Error(`case ${id}: invalid JSON in ${file}: ${e instanceof Error ? e.message : String(e)}`);
      }
      out.push({ id, file, spec: validateCase(id, parsed) });
    }
  }
  return out;
}

export function expectedPath(id: string): string {
  return path.join(EXPECTED_DIR, `${id}.json`);
}

export function loadExpected(id: string): ExpectedFile | null {
  const p = expectedPath(id);
  if (!fs.existsSync(p)) return null;
  return JSON.parse(fs.readFileSync(p, 'utf8')) as ExpectedFile;
}

// ---------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      srv.close(() => resolve(true));
    });
  });
}

/** Ports this process has handed out: cases run concurrently, and a port found free but not
 *  yet bound by one case's server must not be handed to another. */
const handedOut = new Set<number>();

/** A free port in 20000-29999 (always five digits, so lengths are stable), never one this
 *  process handed out before (until most of the range has been). */
export async function freePort(exclude: number[] = []): Promise<number> {
  if (handedOut.size > 8000) handedOut.clear();
  for (let i = 0; i < 200; i++) {
    const p = 20000 + Math.floor(Math.random() * 10000);
    if (exclude.includes(p) || handedOut.has(p)) continue;
    handedOut.add(p);
    if (await portIsFree(p)) return p;
  }
  throw new Error('no free port found');
}

// ---------------------------------------------------------------------------
// Materialising a case
// ---------------------------------------------------------------------------

export interface Materialised {
  ph: Placeholders;
  /** Hex inode numbers of every materialised file/dir (for ETag normalisation). */
  inodes: string[];
}

function fileContent(spec: FileSpec, ph: Placeholders): Buffer | null {
  if (typeof spec === 'string') return Buffer.from(substitute(spec, ph), 'utf8');
  if (spec.base64 !== undefined) return Buffer.from(spec.base64, 'base64');
  if (spec.repeat !== undefined) return Buffer.from(substitute(spec.repeat, ph).repeat(spec.count ?? 1), 'utf8');
  if (spec.content !== undefined) return Buffer.from(substitute(spec.content, ph), 'utf8');
  return null;
}

function walk(dir: string, visit: (p: string, st: fs.Stats) => void): void {
  for (const name of fs.readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = fs.lstatSync(p);
    if (st.isDirectory()) walk(p, visit);
    visit(p, st);
  }
}

export function materialise(spec: CaseSpec, ph: Placeholders): Materialised {
  const root = ph.root;
  fs.mkdirSync(path.join(root, 'htdocs'), { recursive: true });
  fs.mkdirSync(path.join(root, 'logs'), { recursive: true });
  const conf = (spec.preamble === false ? [] : PREAMBLE).concat(spec.conf).map((l) => substitute(l, ph));
  fs.writeFileSync(path.join(root, 'httpd.conf'), conf.join('\n') + '\n');
  if (spec.tlsFiles === true) {
    fs.mkdirSync(path.join(root, 'tls'));
    for (const f of fs.readdirSync(TLS_FIXTURES)) fs.copyFileSync(path.join(TLS_FIXTURES, f), path.join(root, 'tls', f));
  }
  const modes = new Map<string, number>();
  const mtimes = new Map<string, string>();
  for (const [rel, fspec] of Object.entries(spec.files ?? {})) {
    const target = path.join(root, substitute(rel, ph));
    if (!target.startsWith(root + path.sep)) throw new Error(`file path escapes root: ${rel}`);
    const isDir = rel.endsWith('/') || (typeof fspec === 'object' && fspec.dir === true);
    if (isDir) {
      fs.mkdirSync(target, { recursive: true });
    } else {
      fs.mkdirSync(path.dirname(target), { recursive: true });
      if (typeof fspec === 'object' && fspec.symlink !== undefined) {
        fs.symlinkSync(substitute(fspec.symlink, ph), target);
      } else {
        fs.writeFileSync(target, fileContent(fspec, ph) ?? Buffer.alloc(0));
      }
    }
    if (typeof fspec === 'object' && fspec.mode !== undefined) modes.set(path.resolve(target), parseInt(fspec.mode, 8));
    if (typeof fspec === 'object' && fspec.mtime !== undefined) mtimes.set(path.resolve(target), fspec.mtime);
  }
  const inodes: string[] = [];
  walk(root, (p, st) => {
    if (st.isSymbolicLink()) {
      fs.lutimesSync(p, FIXED_MTIME, FIXED_MTIME);
      return;
    }
    const mode = modes.get(path.resolve(p)) ?? (st.isDirectory() ? 0o755 : 0o644);
    fs.chmodSync(p, mode);
    fs.utimesSync(p, FIXED_MTIME, FIXED_MTIME);
    const mtime = mtimes.get(path.resolve(p));
    if (mtime !== undefined && spawnSync('touch', ['-m', '-d', '@' + mtime, p]).status !== 0) throw new Error(`touch -d @${mtime} ${p} failed`);
    inodes.push(fs.statSync(p, { bigint: true }).ino.toString(16));
  });
  fs.chmodSync(root, 0o755);
  fs.utimesSync(root, FIXED_MTIME, FIXED_MTIME);
  return { ph, inodes };
}

// ---------------------------------------------------------------------------
// Server process
// ---------------------------------------------------------------------------

export interface ServerCommand {
  cmd: string;
  args: string[];
}

export type ServerCommandFactory = (root: string) => ServerCommand;

export const apacheCommand: ServerCommandFactory = (root) => ({
  cmd: APACHE_BIN,
  args: ['-X', '-d', root, '-f', path.join(root, 'httpd.conf')],
});

export const plumeCommand: ServerCommandFactory = (root) => ({
  cmd: process.execPath,
  args: [path.join(REPO_ROOT, 'bin', 'plume'), '-X', '-d', root, '-f', path.join(root, 'httpd.conf')],
});

interface RunningServer {
  proc: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
  hasExited: () => boolean;
}

function launch(cmd: ServerCommand, root: string): RunningServer {
  const proc = spawn(cmd.cmd, cmd.args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  let err = '';
  let done = false;
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (d: string) => {
    err += d;
  });
  proc.stdout?.resume();
  const exited = new Promise<number | null>((resolve) => {
    proc.once('error', (e: Error) => {
      err += `spawn error: ${e.message}\n`;
      done = true;
      resolve(null);
    });
    proc.once('close', (code: number | null) => {
      done = true;
      resolve(code);
    });
  });
  return { proc, stderr: () => err, exited, hasExited: () => done };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A connection to the server on `port` once something accepts one (null until then), half
 *  closed at once without a byte sent. `served` settles when the server closes its side: it
 *  reads the end of an empty connection only once it serves connections, and closes it
 *  without a word (httpd and plume alike). */
interface ReadyProbe {
  readonly served: Promise<void>;
  destroy(): void;
}

function connectProbe(port: number): Promise<ReadyProbe | null> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.removeAllListeners('error');
      const served = new Promise<void>((done) => {
        s.once('end', () => done());
        s.once('close', () => done());
        s.once('error', () => done());
      });
      s.resume();
      s.end();
      resolve({ served, destroy: () => s.destroy() });
    });
    s.once('error', () => {
      s.destroy();
      resolve(null);
    });
  });
}

/** A stapled OCSP response in a word or two: its status, and when successful the status of
 *  the certificate it speaks of. */
function summariseOcsp(der: Buffer | null): string {
  // Node's client reports a handshake without a stapled response as null.
  if (der === null || der.length === 0) return 'none';
  try {
    const r = parseOcspResponse(der);
    const text = responseStatusText(r.status);
    const single = r.basic?.responses[0];
    return single === undefined ? text : `${text} ${STATUS_TEXT[single.status] ?? 'unknown'}`;
  } catch {
    return 'unparsable';
  }
}

/** `openssl ocsp` answering for the test CA on `port`, once it listens. */
async function startOcspResponder(root: string, port: number): Promise<RunningServer> {
  const tlsDir = path.join(root, 'tls');
  const r = launch({
    cmd: 'openssl',
    args: ['ocsp', '-index', path.join(tlsDir, 'index.txt'), '-port', String(port), '-rsigner', path.join(tlsDir, 'ca.crt'),
      '-rkey', path.join(tlsDir, 'ca.key'), '-CA', path.join(tlsDir, 'ca.crt')],
  }, root);
  // It says so on stderr once it listens (a probe connection would stall it: it serves one
  // connection at a time and waits on an empty one).
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && !r.hasExited()) {
    if (r.stderr().includes('waiting for OCSP client connections')) return r;
    await sleep(25);
  }
  await stopServer(r);
  throw new Error(`openssl ocsp did not listen on ${port}: ${r.stderr()}`);
}

/** The application server of a case with "backend", once it is ready. */
function startCaseBackend(kind: CaseBackend, root: string, port: number): Promise<Backend> {
  switch (kind) {
    case 'fcgi-echo': return startFcgiEcho(root, port);
    case 'fcgi-echo-unix': return startFcgiEcho(root, path.join(root, 'backend.sock'));
    case 'scgi': return startScgi(root, port);
    case 'uwsgi': return startUwsgi(root, port);
    case 'php-fpm': return startPhpFpm(path.join(root, 'php-fpm'), port, path.join(root, 'php-fpm.sock'));
    case 'http': return startHttpScript(root, port);
    case 'postgres': {
      const setup = path.join(root, 'setup.sql');
      return startPostgres(path.join(root, 'pg'), port, fs.existsSync(setup) ? fs.readFileSync(setup, 'utf8') : undefined)
        .then((pg) => ({ pid: pg.pid, output: pg.output, stop: pg.stop }));
    }
    case 'slapd': return startSlapd(path.join(root, 'slapd'), port);
    case 'ftp': {
      const ftpRoot = path.join(root, 'ftp');
      fs.mkdirSync(ftpRoot, { recursive: true });
      return startFtp(root, port, ftpRoot, path.join(root, 'ftp-options.json'));
    }
  }
}

/** Stop the server by its PID: SIGTERM, then SIGKILL after a timeout. */
async function stopServer(srv: RunningServer, timeoutMs = 3000): Promise<void> {
  if (srv.hasExited() || srv.proc.pid === undefined) return;
  const pid = srv.proc.pid;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const t = await Promise.race([srv.exited.then(() => 'exited'), sleep(timeoutMs).then(() => 'timeout')]);
  if (t === 'timeout' && !srv.hasExited()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    await Promise.race([srv.exited, sleep(2000)]);
  }
}

// ---------------------------------------------------------------------------
// Raw TCP client and HTTP response parser
// ---------------------------------------------------------------------------

class Conn {
  buf: Buffer = Buffer.alloc(0);
  closed = false;
  localPort = 0;
  /** What the server stapled (tls.requestOCSP), summarised; undefined when not asked. */
  stapled: string | undefined = undefined;
  private waiters: (() => void)[] = [];

  private constructor(readonly sock: net.Socket) {
    sock.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      this.notify();
    });
    const onClose = (): void => {
      this.closed = true;
      this.notify();
    };
    sock.on('end', onClose);
    sock.on('close', onClose);
    sock.on('error', onClose);
  }

  static async open(port: number, localAddress: string | undefined, timeoutMs: number, tlsSpec?: TlsRequestSpec): Promise<Conn> {
    const c = await Conn.openTcp(port, localAddress, timeoutMs);
    if (tlsSpec === undefined) return c;
    const raw = c.sock;
    raw.removeAllListeners('data');
    raw.removeAllListeners('end');
    raw.removeAllListeners('close');
    raw.removeAllListeners('error');
    const opts: tls.ConnectionOptions = {
      socket: raw, rejectUnauthorized: false,
      minVersion: tlsSpec.minVersion ?? 'TLSv1', maxVersion: tlsSpec.maxVersion,
      ciphers: tlsSpec.ciphers !== undefined ? `${tlsSpec.ciphers}:@SECLEVEL=0` : 'DEFAULT:@SECLEVEL=0',
    };
    if (tlsSpec.servername !== undefined && tlsSpec.servername !== null) opts.servername = tlsSpec.servername;
    if (tlsSpec.cert !== undefined) {
      opts.cert = fs.readFileSync(path.join(TLS_FIXTURES, `${tlsSpec.cert}.crt`));
      opts.key = fs.readFileSync(path.join(TLS_FIXTURES, `${tlsSpec.cert}.key`));
    }
    if (tlsSpec.requestOCSP === true) (opts as tls.ConnectionOptions & { requestOCSP?: boolean }).requestOCSP = true;
    const t = tls.connect(opts);
    let stapled: string | undefined = tlsSpec.requestOCSP === true ? 'none' : undefined;
    t.on('OCSPResponse', (der: Buffer | null) => { stapled = summariseOcsp(der); });
    // A failed handshake is part of the answer: the connection then reads as closed.
    t.on('error', () => { /* reported through 'close' */ });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      t.once('secureConnect', () => { clearTimeout(timer); resolve(); });
      t.once('close', () => { clearTimeout(timer); resolve(); });
    });
    const tc = new Conn(t);
    tc.localPort = c.localPort;
    tc.stapled = stapled;
    return tc;
  }

  private static openTcp(port: number, localAddress: string | undefined, timeoutMs: number): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const opts: net.NetConnectOpts = { host: '127.0.0.1', port };
      if (localAddress !== undefined) opts.localAddress = localAddress;
      const sock = net.connect(opts);
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new Error(`connect to ${port} timed out`));
      }, timeoutMs);
      sock.once('connect', () => {
        clearTimeout(timer);
        sock.removeAllListeners('error');
        const c = new Conn(sock);
        c.localPort = sock.localPort ?? 0;
        resolve(c);
      });
      sock.once('error', (e: Error) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Resolve on the next data/close event or at the deadline. */
  waitChange(deadline: number): Promise<void> {
    return new Promise((resolve) => {
      const ms = Math.max(0, deadline - Date.now());
      const timer = setTimeout(() => resolve(), ms);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  write(data: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.sock.destroyed || !this.sock.writable) {
        resolve();
        return;
      }
      this.sock.write(Buffer.from(data, 'latin1'), () => resolve());
    });
  }

  end(): void {
    if (!this.sock.destroyed) this.sock.end();
  }

  destroy(): void {
    this.sock.destroy();
  }
}

interface RawResponse {
  interim: string[];
  statusLine: string | null;
  headers: [string, string][];
  body: Buffer;
  incomplete?: string;
}

type ParseOutcome = { kind: 'more' } | { kind: 'done'; response: RawResponse; consumed: number };

function indexOfCrlfCrlf(buf: Buffer, from: number): number {
  return buf.indexOf('\r\n\r\n', from, 'latin1');
}

function parseHeaderBlock(text: string): { statusLine: string; headers: [string, string][] } {
  const lines = text.split('\r\n');
  const statusLine = lines[0] ?? '';
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (line === '') continue;
    const i = line.indexOf(':');
    if (i < 0) {
      headers.push([line, '']);
      continue;
    }
    headers.push([line.slice(0, i), line.slice(i + 1).trim()]);
  }
  return { statusLine, headers };
}

function headerValue(headers: [string, string][], name: string): string | undefined {
  const n = name.toLowerCase();
  for (const [k, v] of headers) if (k.toLowerCase() === n) return v;
  return undefined;
}

/** Decode a chunked body starting at `start`. */
function parseChunked(buf: Buffer, start: number): { body: Buffer; end: number } | null {
  const parts: Buffer[] = [];
  let pos = start;
  for (;;) {
    const le = buf.indexOf('\r\n', pos, 'latin1');
    if (le < 0) return null;
    const sizeText = buf.toString('latin1', pos, le).split(';')[0]?.trim() ?? '';
    const size = parseInt(sizeText, 16);
    if (Number.isNaN(size)) throw new Error(`bad chunk size line: ${JSON.stringify(buf.toString('latin1', pos, le))}`);
    pos = le + 2;
    if (size === 0) {
      // trailer section up to an empty line
      for (;;) {
        const te = buf.indexOf('\r\n', pos, 'latin1');
        if (te < 0) return null;
        const empty = te === pos;
        pos = te + 2;
        if (empty) return { body: Buffer.concat(parts), end: pos };
      }
    }
    if (buf.length < pos + size + 2) return null;
    parts.push(buf.subarray(pos, pos + size));
    pos += size + 2;
  }
}

/** Try to parse one complete response (including preceding 1xx) from buf. */
function parseResponse(buf: Buffer, closed: boolean, isHead: boolean): ParseOutcome {
  const interim: string[] = [];
  let pos = 0;
  for (;;) {
    if (buf.length - pos < 5 && !closed) {
      // Wait until we can tell whether a status line is coming.
      if (buf.length - pos === 0 || 'HTTP/'.startsWith(buf.toString('latin1', pos))) return { kind: 'more' };
    }
    if (buf.toString('latin1', pos, pos + 5) !== 'HTTP/') {
      // HTTP/0.9 style (or garbage): everything until close is the body.
      if (!closed) return { kind: 'more' };
      return { kind: 'done', response: { interim, statusLine: null, headers: [], body: buf.subarray(pos) }, consumed: buf.length };
    }
    const he = indexOfCrlfCrlf(buf, pos);
    if (he < 0) {
      if (!closed) return { kind: 'more' };
      const { statusLine, headers } = parseHeaderBlock(buf.toString('latin1', pos));
      return { kind: 'done', response: { interim, statusLine, headers, body: Buffer.alloc(0), incomplete: 'closed' }, consumed: buf.length };
    }
    const { statusLine, headers } = parseHeaderBlock(buf.toString('latin1', pos, he));
    const bodyStart = he + 4;
    const code = parseInt(statusLine.split(' ')[1] ?? '', 10);
    if (code >= 100 && code < 200 && code !== 101) {
      interim.push(statusLine);
      pos = bodyStart;
      continue;
    }
    const done = (body: Buffer, end: number, incomplete?: string): ParseOutcome => {
      const response: RawResponse = { interim, statusLine, headers, body };
      if (incomplete !== undefined) response.incomplete = incomplete;
      return { kind: 'done', response, consumed: end };
    };
    if (isHead || code === 204 || code === 304 || code === 101) return done(Buffer.alloc(0), bodyStart);
    const te = headerValue(headers, 'transfer-encoding');
    if (te !== undefined && te.toLowerCase().includes('chunked')) {
      const r = parseChunked(buf, bodyStart);
      if (r === null) {
        if (!closed) return { kind: 'more' };
        return done(buf.subarray(bodyStart), buf.length, 'closed');
      }
      return done(r.body, r.end);
    }
    const cl = headerValue(headers, 'content-length');
    if (cl !== undefined && /^\d+$/.test(cl)) {
      const n = parseInt(cl, 10);
      if (buf.length - bodyStart < n) {
        if (!closed) return { kind: 'more' };
        return done(buf.subarray(bodyStart), buf.length, 'closed');
      }
      return done(buf.subarray(bodyStart, bodyStart + n), bodyStart + n);
    }
    if (!closed) return { kind: 'more' };
    return done(buf.subarray(bodyStart), buf.length);
  }
}

async function readResponse(conn: Conn, isHead: boolean, deadline: number): Promise<RawResponse> {
  for (;;) {
    const out = parseResponse(conn.buf, conn.closed, isHead);
    if (out.kind === 'done') {
      conn.buf = conn.buf.subarray(out.consumed);
      return out.response;
    }
    if (Date.now() >= deadline) {
      // Give up: report whatever arrived.
      const partial = parseResponse(conn.buf, true, isHead);
      conn.buf = Buffer.alloc(0);
      if (partial.kind === 'done') {
        partial.response.incomplete = 'timeout';
        return partial.response;
      }
      return { interim: [], statusLine: null, headers: [], body: Buffer.alloc(0), incomplete: 'timeout' };
    }
    await conn.waitChange(deadline);
  }
}

// ---------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------

interface NormContext {
  root: string;
  bodyReplace?: [string, string][] | undefined;
  port: number;
  port2: number;
  inodes: string[];
  clientPorts: number[];
  /** Body lengths changed by boundary normalisation in the current step (raw → normalised), applied to access-log lines. */
  lengthRewrites: Map<number, number>;
  /** The case's own normalisations (CaseSpec.normalize), compiled. */
  patterns?: readonly (readonly [RegExp, string])[];
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function replaceNumber(s: string, n: number, token: string): string {
  return s.replace(new RegExp(`(?<![0-9A-Za-z.])${n}(?![0-9A-Za-z])`, 'g'), token);
}

function normText(s: string, ctx: NormContext, clientPorts: boolean): string {
  let out = s.split(ctx.root).join('@ROOT@');
  // /tmp may be reached through a symlink (realpath) — normalise that too.
  const real = safeRealpath(ctx.root);
  if (real !== ctx.root) out = out.split(real).join('@ROOT@');
  // mod_rewrite's trace shows the root without its leading slash (RewriteBase substitution).
  if (ctx.root.startsWith('/')) out = out.split(' ' + ctx.root.slice(1)).join(' @ROOT-NOSLASH@');
  out = replaceNumber(out, ctx.port, '@PORT@');
  out = replaceNumber(out, ctx.port2, '@PORT2@');
  if (clientPorts) for (const cp of ctx.clientPorts) out = replaceNumber(out, cp, '@CLIENTPORT@');
  if (ctx.patterns !== undefined) for (const [re, to] of ctx.patterns) out = out.replace(re, to);
  return out;
}

function safeRealpath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

const NO_PORT_HEADERS = new Set(['content-length', 'content-range', 'etag', 'last-modified', 'date', 'age', 'keep-alive']);

function normResponse(raw: RawResponse, ctx: NormContext): RecordedResponse {
  const dateHeader = raw.headers.find(([k]) => k.toLowerCase() === 'date')?.[1];
  let headers: [string, string][] = raw.headers.map(([k, v]) => {
    const lk = k.toLowerCase();
    if (lk === 'date') return [k, '<date>'];
    // An Expires from the time of the request (mod_expires "access" codes): stated relative
    // to the response's Date; an absolute one in the past or far from now is kept as it is.
    if (lk === 'expires' && dateHeader !== undefined) {
      const d = Date.parse(dateHeader);
      const e = Date.parse(v);
      if (!Number.isNaN(d) && !Number.isNaN(e) && e >= d && e - d < 400 * 86400 * 1000) return [k, `<date>+${Math.round((e - d) / 1000)}s`];
    }
    // mod_proxy_connect's "Proxy-agent" carries the banner, as Server does.
    if (lk === 'server' || lk === 'proxy-agent') return [k, '<server>'];
    // Apache builds Allow from a hash table, so its order varies between runs: sort it.
    if (lk === 'allow') return [k, v.split(',').map((m) => m.trim()).filter((m) => m !== '').sort().join(',')];
    if (lk === 'etag') {
      let val = v;
      for (const ino of ctx.inodes) val = val.replace(new RegExp(`(?<=["-])${ino}(?=-)`, 'g'), '<inode>');
      return [k, val];
    }
    if (NO_PORT_HEADERS.has(lk)) return [k, ctx.patterns === undefined ? v : ctx.patterns.reduce((acc, [re, to]) => acc.replace(re, to), v)];
    if (lk === 'www-authenticate' || lk === 'authentication-info' || lk === 'proxy-authenticate' || lk === 'proxy-authentication-info') return [k, normText(normDigestNonces(v), ctx, false)];
    return [k, normText(v, ctx, false)];
  });
  let bodyBuf = raw.body;
  // Multipart boundary: random in Apache; replace it everywhere.
  const ct = headerValue(headers, 'content-type');
  const bm = ct === undefined ? null : /boundary=("?)([^";\s]+)\1/i.exec(ct);
  if (bm !== null && bm[2] !== undefined) {
    const boundary = bm[2];
    const re = new RegExp(escapeRe(boundary), 'g');
    headers = headers.map(([k, v]) => [k, v.replace(re, '<boundary>')]);
    const rawLen = bodyBuf.length;
    bodyBuf = Buffer.from(bodyBuf.toString('latin1').replace(re, '<boundary>'), 'latin1');
    // Content-Length depends on the boundary's length: restate it for the normalised body
    // (only if it was right for the raw body, so a wrong length still shows).
    headers = headers.map(([k, v]) => (k.toLowerCase() === 'content-length' && v === String(rawLen) ? [k, String(bodyBuf.length)] : [k, v]));
    if (rawLen !== bodyBuf.length) ctx.lengthRewrites.set(rawLen, bodyBuf.length);
  }
  if (ctx.bodyReplace !== undefined && ctx.bodyReplace.length > 0) {
    const rawLen = bodyBuf.length;
    let t = bodyBuf.toString('latin1');
    for (const [re, to] of ctx.bodyReplace) t = t.replace(new RegExp(re, 'g'), to);
    bodyBuf = Buffer.from(t, 'latin1');
    headers = headers.map(([k, v]) => (k.toLowerCase() === 'content-length' && v === String(rawLen) ? [k, String(bodyBuf.length)] : [k, v]));
    if (rawLen !== bodyBuf.length) ctx.lengthRewrites.set(rawLen, bodyBuf.length);
  }
  // The product in a ServerSignature footer is the server's own (Apache's "Apache/2.4.71
  // (Debian)", plume's banner), like the Server header: compare the rest of the line.
  const sigRe = /<address>[^<]*? Server at /g;
  const bodyText = bodyBuf.toString('latin1');
  if (sigRe.test(bodyText)) {
    const rawLen = bodyBuf.length;
    bodyBuf = Buffer.from(bodyText.replace(sigRe, '<address><server> Server at '), 'latin1');
    headers = headers.map(([k, v]) => (k.toLowerCase() === 'content-length' && v === String(rawLen) ? [k, String(bodyBuf.length)] : [k, v]));
    if (rawLen !== bodyBuf.length) ctx.lengthRewrites.set(rawLen, bodyBuf.length);
  }
  const out: RecordedResponse = { statusLine: raw.statusLine, headers, body: '' };
  if (raw.interim.length > 0) out.interim = raw.interim;
  let text: string | null = null;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bodyBuf);
  } catch {
    text = null;
  }
  if (text === null) {
    out.body = bodyBuf.toString('base64');
    out.bodyBase64 = true;
  } else {
    out.body = normText(text, ctx, false);
  }
  if (raw.incomplete !== undefined) out.incomplete = raw.incomplete;
  // Reorder keys for a stable layout.
  const ordered: RecordedResponse = { statusLine: out.statusLine, headers: out.headers, body: out.body };
  if (out.interim !== undefined) ordered.interim = out.interim;
  if (out.bodyBase64 === true) ordered.bodyBase64 = true;
  if (out.incomplete !== undefined) ordered.incomplete = out.incomplete;
  return ordered;
}

export function normErrorLine(line: string, ctx: NormContext): string {
  let out = line.replace(/^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? \d{4}\]/, '[<time>]');
  out = out.replace(/\[pid \d+(?::tid \d+)?\]/g, '[pid]');
  out = out.replace(/\[(client|remote) ([0-9a-fA-F.:]+?):\d+\]/g, '[$1 $2]');
  // mod_rewrite's trace lines name the server_rec and request_rec by address.
  out = out.replace(/\/sid#[0-9a-f]+\]\[rid#[0-9a-f]+\//g, '/sid#<ptr>][rid#<ptr>/');
  out = normDigestNonces(out).replace(/(AH01776: .* - hash is not )[0-9a-f]{40}$/, '$1<hash>');
  return normText(out, ctx, true);
}

/** mod_dumpio's trace of a response head holds the Server header, whose product differs
 *  between the servers: it becomes <server>, and the byte count logged before it is restated
 *  for the normalised head. */
function normDumpioServer(lines: string[]): string[] {
  for (let i = 1; i < lines.length; i++) {
    const m = /^(.*dumpio_out \(data-HEAP\): HTTP\/.*?\\r\\nServer: )([^\\]*)(\\r\\n.*)$/.exec(lines[i]!);
    if (m === null) continue;
    let delta = '<server>'.length - m[2]!.length;
    let line = m[1]! + '<server>' + m[3]!;
    const d = /\\r\\nDate: [A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\\r\\n/.exec(line);
    if (d !== null) {
      line = line.replace(d[0], '\\r\\nDate: <date>\\r\\n');
      delta += '<date>'.length - 29;
    }
    lines[i] = line;
    lines[i - 1] = lines[i - 1]!.replace(/(dumpio_out \(data-HEAP\): )(\d+)( bytes)$/, (_all, a: string, n: string, b: string) => a + String(Number(n) + delta) + b);
  }
  return lines;
}

/** mod_auth_digest's nonces: base64 of the time, then a SHA-1 keyed by the server's random
 *  secret (the shape is kept: 11 base64 characters, '=', 40 hex digits). */
function normDigestNonces(s: string): string {
  return s.replace(/(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{11}=[0-9a-f]{40}(?![0-9a-f])/g, '<nonce>');
}

/**
 * stderr lines: like error-log lines, plus the program name that prefixes some
 * startup messages ("apache2: Syntax error on line ...") becomes "<server>:".
 */
function normStderr(text: string, ctx: NormContext): string[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    // Node.js runtime warnings are not server behaviour.
    .filter((l) => !/^\(node:\d+\) /.test(l) && !l.startsWith('(Use `node --trace-'))
    .map((l) => normErrorLine(l, ctx).replace(/^(?:apache2|httpd|plume|node):\s/, '<server>: '));
}

// ---------------------------------------------------------------------------
// Log collection
// ---------------------------------------------------------------------------

const ERROR_LOG = 'logs/error_log';
const ACCESS_LOG = 'logs/access_log';

function fileSize(p: string): number {
  try {
    return fs.statSync(p).size;
  } catch {
    return 0;
  }
}

/** Whether the case's configuration loads mod_dbd. */
function usesDbd(spec: CaseSpec): boolean {
  return spec.conf.some((l) => /^\s*LoadModule\s+dbd_module\s/i.test(l));
}

function fileHas(p: string, text: string): boolean {
  try {
    return fs.readFileSync(p, 'latin1').includes(text);
  } catch {
    return false;
  }
}

function newLines(p: string, from: number): string[] {
  let data: Buffer;
  try {
    data = fs.readFileSync(p);
  } catch {
    return [];
  }
  if (data.length <= from) return [];
  const text = data.subarray(from).toString('utf8');
  const lines = text.split('\n');
  lines.pop(); // incomplete tail (or '' after the final newline)
  return lines;
}

// ---------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------

function buildRequest(r: RequestSpec, ph: Placeholders, keepAlive: boolean, port: number): string[] {
  if (r.raw !== undefined) {
    const parts = Array.isArray(r.raw) ? r.raw : [r.raw];
    return parts.map((p) => substitute(p, ph));
  }
  const method = r.method ?? 'GET';
  const version = r.version ?? 'HTTP/1.1';
  const given = (r.headers ?? []).map(([k, v]): [string, string] => [k, substitute(v, ph)]);
  const has = (n: string): boolean => given.some(([k]) => k.toLowerCase() === n);
  const lines = [`${method} ${substitute(r.path ?? '/', ph)} ${version}`];
  if (!has('host')) lines.push(`Host: localhost:${port}`);
  if (!keepAlive && !has('connection')) lines.push('Connection: close');
  for (const [k, v] of given) lines.push(`${k}: ${v}`);
  const body = r.body === undefined ? '' : substitute(r.body, ph);
  if (r.body !== undefined && !has('content-length') && !has('transfer-encoding')) {
    lines.push(`Content-Length: ${Buffer.byteLength(body, 'latin1')}`);
  }
  return [lines.join('\r\n') + '\r\n\r\n' + body];
}

function requestMethod(parts: string[]): string {
  const first = parts.join('');
  return (first.split(/[ \r\n]/)[0] ?? '').toUpperCase();
}

function firstLine(parts: string[]): string {
  return (parts.join('').split('\r\n')[0] ?? '').split('\n')[0] ?? '';
}

function targetPort(r: RequestSpec, ph: Placeholders): number {
  if (r.port === undefined) return ph.port;
  return parseInt(substitute(r.port, ph), 10);
}

export interface RunOptions {
  /** When replaying, the expected result tells how many log lines to wait for. */
  expected?: CaseResult;
  /** Keep the temp dir (for debugging). */
  keep?: boolean;
}

/** Run one case against the server started by `command` and return the normalised result. */
export async function runCase(c: LoadedCase, command: ServerCommandFactory, opts: RunOptions = {}): Promise<CaseResult> {
  const spec = c.spec;
  // Under /tmp whatever TMPDIR says: the cases were recorded with roots there, and a body that
  // prints the root (a CGI's environment) is as long as the root's name, which the access
  // log's byte count shows. The root is removed after the case (.ci/run checks /tmp too).
  const root = fs.mkdtempSync(path.join('/tmp', 'plume-case-'));
  fs.chmodSync(root, 0o755);
  const port = await freePort();
  const port2 = await freePort([port]);
  const ph: Placeholders = { root, port, port2 };
  if (spec.ocspResponder === true) ph.ocspPort = await freePort([port, port2]);
  let server: RunningServer | null = null;
  let responder: RunningServer | null = null;
  let backend: Backend | null = null;
  try {
    const mat = materialise(spec.ocspResponder === true ? { ...spec, tlsFiles: true } : spec, ph);
    if (ph.ocspPort !== undefined) responder = await startOcspResponder(root, ph.ocspPort);
    if (spec.backend !== undefined) backend = await startCaseBackend(spec.backend, root, port2);
    const ctx: NormContext = { root, port, port2, inodes: mat.inodes, clientPorts: [], lengthRewrites: new Map(), bodyReplace: spec.bodyReplace };
    if (spec.normalize !== undefined) ctx.patterns = spec.normalize.map(([re, to]) => [new RegExp(re, 'g'), to] as const);
    server = launch(command(root), root);

    // Wait until the server accepts connections (or exits).
    const startDeadline = Date.now() + 10000;
    let probe: ReadyProbe | null = null;
    while (Date.now() < startDeadline) {
      if (server.hasExited()) break;
      probe = await connectProbe(port);
      if (probe !== null) break;
      await sleep(25);
    }
    if (probe === null) {
      if (!server.hasExited()) {
        await stopServer(server);
        return { startup: { exitCode: null, stderr: normStderr(server.stderr() + '\n<harness: server did not listen within 10 s>', ctx) } };
      }
      const code = await server.exited;
      return { startup: { exitCode: code, stderr: normStderr(server.stderr(), ctx) } };
    }
    // The listening socket accepts before the server has started (its child_init hooks, the
    // AH00489 notice); what it logs then belongs to the start, not to the first request. Wait
    // for the notice, or (below LogLevel notice, which does not show it) for the server to close
    // the probe, which it does only once it serves (at most 2 s), then a little longer. A
    // configuration with mod_dbd waits for the notice alone: plume sets up its pools after it
    // starts serving (docs/differences.md), and their failures are logged at the start.
    let served = false;
    void probe.served.then(() => { served = true; });
    const asyncStart = usesDbd(spec);
    const noticeDeadline = Date.now() + 2000;
    while (Date.now() < noticeDeadline && !(served && !asyncStart) && !fileHas(path.join(root, ERROR_LOG), 'resuming normal operations')) await sleep(10);
    probe.destroy();
    await sleep(50);
    const stderrAtStart = normStderr(server.stderr(), ctx);

    const logs = [ERROR_LOG, ACCESS_LOG, ...(spec.extraLogs ?? [])];
    const steps: RecordedStep[] = [];
    const replay = opts.expected !== undefined;
    let slowReads = false;
    let slowLogs = false;
    let conn: Conn | null = null;
    const keepAlive = spec.keepAlive === true;
    let stapledNow: string | undefined;
    for (const [i, r] of spec.requests.entries()) {
      for (const [rel, content] of Object.entries(r.writeFiles ?? {})) {
        const target = path.join(root, substitute(rel, ph));
        if (!target.startsWith(root + path.sep)) throw new Error(`file path escapes root: ${rel}`);
        fs.writeFileSync(target + '.new', substitute(content, ph));
        fs.chmodSync(target + '.new', 0o644);
        fs.renameSync(target + '.new', target);
      }
      const rport = targetPort(r, ph);
      const parts = buildRequest(r, ph, keepAlive, rport);
      const sizes = logs.map((l) => fileSize(path.join(root, l)));
      if (conn === null || !keepAlive) {
        try {
          conn = await Conn.open(rport, r.client ?? spec.requests[0]?.client, 5000, r.tls ?? (keepAlive ? spec.requests[0]?.tls : undefined));
        } catch (e) {
          const why = e instanceof Error ? e.message : String(e);
          const srv = server;
          if (srv.hasExited()) {
            const code = await srv.exited;
            throw new Error(`request ${i + 1}: cannot connect (${why}): the server exited with code ${String(code)} during the case; stderr:\n${srv.stderr()}`);
          }
          throw new Error(`request ${i + 1}: cannot connect to port ${rport} (${why})`);
        }
        ctx.clientPorts.push(conn.localPort);
        stapledNow = conn.stapled;
      } else stapledNow = undefined;
      const isHead = requestMethod(parts) === 'HEAD';
      // Apache answers within milliseconds; when replaying, give up sooner (and
      // sooner still once something in this case timed out) so a server that
      // hangs cannot stall the whole suite.
      const readMs = r.timeoutMs ?? (replay ? (slowReads ? 500 : 2000) : 5000);
      const deadline = Date.now() + readMs;
      const c2 = conn;
      const sending = (async (): Promise<void> => {
        for (const [pi, p] of parts.entries()) {
          if (pi > 0) await sleep(r.gapMs ?? 300);
          await c2.write(p);
        }
        if (r.end === true) c2.end();
      })();
      const responses: RawResponse[] = [];
      const count = r.responses ?? 1;
      for (let k = 0; k < count; k++) responses.push(await readResponse(conn, isHead, deadline));
      if (responses.some((x) => x.incomplete === 'timeout')) slowReads = true;
      await sending;
      if (!keepAlive) {
        conn.destroy();
        conn = null;
      }
      // Collect the log lines written while serving this request.
      const gotBytes = responses.some((x) => x.statusLine !== null || x.body.length > 0);
      const expStep = opts.expected?.requests?.[i];
      const lineCounts = (): number[] => logs.map((l, j) => newLines(path.join(root, l), sizes[j] ?? 0).length);
      const logDeadline = Date.now() + (replay ? (slowLogs ? 100 : 500) : 1000);
      if (expStep !== undefined) {
        const want = [expStep.errorLog.length, expStep.accessLog.length, ...(spec.extraLogs ?? []).map((l) => expStep.otherLogs?.[l]?.length ?? 0)];
        const short = (): boolean => lineCounts().some((n, j) => n < (want[j] ?? 0));
        while (Date.now() < logDeadline && short()) await sleep(10);
        if (short()) slowLogs = true;
        await sleep(30);
      } else if (gotBytes) {
        const accessWanted = responses.filter((x) => x.statusLine !== null || x.body.length > 0).length;
        while (Date.now() < logDeadline && lineCounts().slice(1).reduce((a, b) => a + b, 0) < accessWanted) await sleep(10);
        await sleep(60);
      } else {
        await sleep(150);
      }
      const collected = logs.map((l, j) => newLines(path.join(root, l), sizes[j] ?? 0));
      ctx.lengthRewrites.clear();
      const normResponses = responses.map((x) => normResponse(x, ctx));
      const normAccess = (l: string): string => {
        let out = normText(l, ctx, true);
        for (const [from, to] of ctx.lengthRewrites) out = replaceNumber(out, from, String(to));
        return out;
      };
      const step: RecordedStep = {
        request: normText(firstLine(parts), ctx, false),
        responses: normResponses,
        errorLog: normDumpioServer((collected[0] ?? []).map((l) => normErrorLine(l, ctx))),
        accessLog: (collected[1] ?? []).map(normAccess),
      };
      if (stapledNow !== undefined) step.stapled = stapledNow;
      if (spec.extraLogs !== undefined && spec.extraLogs.length > 0) {
        const other: Record<string, string[]> = {};
        spec.extraLogs.forEach((l, j) => {
          // A log whose file name contains "error" is normalised like the error log.
          const isError = path.basename(l).includes('error');
          other[l] = (collected[j + 2] ?? []).map((x) => (isError ? normErrorLine(x, ctx) : normAccess(x)));
        });
        step.otherLogs = other;
      }
      steps.push(step);
    }
    if (conn !== null) conn.destroy();
    const result: CaseResult = { stderr: stderrAtStart, requests: steps };
    return result;
  } finally {
    if (server !== null) await stopServer(server);
    if (responder !== null) await stopServer(responder);
    if (backend !== null) await backend.stop();
    if (opts.keep !== true) fs.rmSync(root, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// Expected files: writing, overriding, comparing
// ---------------------------------------------------------------------------

/** JSON with 2-space indent, but short string arrays/pairs kept on one line. */
export function stableStringify(v: unknown, indent = ''): string {
  const next = indent + '  ';
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    if (v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string') {
      return `[${JSON.stringify(v[0])}, ${JSON.stringify(v[1])}]`;
    }
    return '[\n' + v.map((x) => next + stableStringify(x, next)).join(',\n') + '\n' + indent + ']';
  }
  if (typeof v === 'object' && v !== null) {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    if (entries.length === 0) return '{}';
    return '{\n' + entries.map(([k, x]) => `${next}${JSON.stringify(k)}: ${stableStringify(x, next)}`).join(',\n') + '\n' + indent + '}';
  }
  return JSON.stringify(v);
}

export function toExpectedFile(c: LoadedCase, result: CaseResult, recordedWith: string): ExpectedFile {
  const out: ExpectedFile = { case: c.id, title: c.spec.title, recordedWith };
  if (result.startup !== undefined) out.startup = result.startup;
  if (result.stderr !== undefined) out.stderr = result.stderr;
  if (result.requests !== undefined) {
    out.requests = result.requests.map((s) => {
      const step: RecordedStep = { request: s.request, responses: s.responses, errorLog: s.errorLog, accessLog: s.accessLog };
      if (s.otherLogs !== undefined) step.otherLogs = s.otherLogs;
      if (s.stapled !== undefined) step.stapled = s.stapled;
      return step;
    });
  }
  return out;
}

/** Apply a case's specOverride to Apache's recorded result. */
export function applyOverride(exp: CaseResult, ov: SpecOverride | undefined): CaseResult {
  if (ov === undefined) return exp;
  const out: CaseResult = JSON.parse(JSON.stringify(exp)) as CaseResult;
  const e = ov.expected;
  if (e.startup !== undefined) {
    if (e.startup === null) delete out.startup;
    else out.startup = e.startup;
  }
  if (e.stderr !== undefined) out.stderr = e.stderr;
  if (e.requests !== undefined && out.requests !== undefined) {
    e.requests.forEach((so, i) => {
      const step = out.requests?.[i];
      if (so === null || step === undefined) return;
      if (so.errorLog !== undefined) step.errorLog = so.errorLog;
      if (so.accessLog !== undefined) step.accessLog = so.accessLog;
      if (so.otherLogs !== undefined) step.otherLogs = so.otherLogs;
      so.responses?.forEach((ro, j) => {
        const resp = step.responses[j];
        if (ro === null || resp === undefined) return;
        step.responses[j] = { ...resp, ...ro };
      });
    });
  }
  return out;
}

function groupHeaders(h: [string, string][]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const [k, v] of h) {
    const lk = k.toLowerCase();
    const list = m.get(lk) ?? [];
    list.push(v);
    m.set(lk, list);
  }
  return m;
}

function textDiff(label: string, exp: string, act: string): string {
  const el = exp.split('\n');
  const al = act.split('\n');
  let i = 0;
  while (i < el.length && i < al.length && el[i] === al[i]) i++;
  const from = Math.max(0, i - 2);
  const out = [`${label} differs at line ${i + 1} (expected ${exp.length} chars, got ${act.length}):`];
  for (let j = from; j < Math.min(el.length, i + 3); j++) out.push(`  - ${JSON.stringify(el[j])}`);
  for (let j = from; j < Math.min(al.length, i + 3); j++) out.push(`  + ${JSON.stringify(al[j])}`);
  return out.join('\n');
}

function linesDiff(label: string, exp: string[], act: string[]): string[] {
  if (exp.length === act.length && exp.every((l, i) => l === act[i])) return [];
  return [`${label}:\n` + exp.map((l) => `  - ${l}`).join('\n') + (exp.length ? '\n' : '') + act.map((l) => `  + ${l}`).join('\n')];
}

/**
 * Compare an expected result with an actual one. Header names compare
 * case-insensitively, values exactly; the order of headers with different
 * names is not compared, the order of repeated headers is. Returns a list of
 * human-readable differences (empty = match).
 */
export function compareResults(exp: CaseResult, act: CaseResult, compareLogs: boolean): string[] {
  const d: string[] = [];
  if (exp.startup !== undefined || act.startup !== undefined) {
    if (exp.startup === undefined) {
      d.push(`server failed to start (exit ${String(act.startup?.exitCode)}), Apache started:\n` + (act.startup?.stderr ?? []).map((l) => `  ${l}`).join('\n'));
      return d;
    }
    if (act.startup === undefined) {
      d.push(`server started, but Apache refused to start (exit ${String(exp.startup.exitCode)}):\n` + exp.startup.stderr.map((l) => `  ${l}`).join('\n'));
      return d;
    }
    if (exp.startup.exitCode !== act.startup.exitCode) d.push(`startup exit code: expected ${String(exp.startup.exitCode)}, got ${String(act.startup.exitCode)}`);
    d.push(...linesDiff('startup stderr', exp.startup.stderr, act.startup.stderr));
    return d;
  }
  d.push(...linesDiff('stderr at startup', exp.stderr ?? [], act.stderr ?? []));
  const es = exp.requests ?? [];
  const as = act.requests ?? [];
  for (let i = 0; i < Math.max(es.length, as.length); i++) {
    const e = es[i];
    const a = as[i];
    if (e === undefined || a === undefined) {
      d.push(`request ${i + 1}: missing on one side`);
      continue;
    }
    const pfx = `request ${i + 1} (${e.request})`;
    if (e.responses.length !== a.responses.length) d.push(`${pfx}: expected ${e.responses.length} responses, got ${a.responses.length}`);
    for (let j = 0; j < Math.min(e.responses.length, a.responses.length); j++) {
      const er = e.responses[j];
      const ar = a.responses[j];
      if (er === undefined || ar === undefined) continue;
      const rp = e.responses.length > 1 ? `${pfx} response ${j + 1}` : pfx;
      if (er.statusLine !== ar.statusLine) d.push(`${rp}: status line: expected ${JSON.stringify(er.statusLine)}, got ${JSON.stringify(ar.statusLine)}`);
      if ((er.interim ?? []).join('|') !== (ar.interim ?? []).join('|')) {
        d.push(`${rp}: interim responses: expected ${JSON.stringify(er.interim ?? [])}, got ${JSON.stringify(ar.interim ?? [])}`);
      }
      if ((er.incomplete ?? '') !== (ar.incomplete ?? '')) d.push(`${rp}: incomplete: expected ${String(er.incomplete)}, got ${String(ar.incomplete)}`);
      const eh = groupHeaders(er.headers);
      const ah = groupHeaders(ar.headers);
      for (const [k, ev] of eh) {
        const av = ah.get(k);
        if (av === undefined) d.push(`${rp}: missing header ${k}: ${ev.join(' | ')}`);
        else if (ev.join('\u0000') !== av.join('\u0000')) d.push(`${rp}: header ${k}: expected ${JSON.stringify(ev)}, got ${JSON.stringify(av)}`);
      }
      for (const [k, av] of ah) if (!eh.has(k)) d.push(`${rp}: unexpected header ${k}: ${av.join(' | ')}`);
      if ((er.bodyBase64 ?? false) !== (ar.bodyBase64 ?? false) || er.body !== ar.body) {
        d.push(textDiff(`${rp}: body${er.bodyBase64 === true ? ' (base64)' : ''}`, er.body, ar.body));
      }
    }
    if (e.stapled !== a.stapled) d.push(`${pfx}: stapled OCSP response: expected ${String(e.stapled)}, got ${String(a.stapled)}`);
    if (compareLogs) {
      d.push(...linesDiff(`${pfx}: error log`, e.errorLog, a.errorLog));
      d.push(...linesDiff(`${pfx}: access log`, e.accessLog, a.accessLog));
      const keys = new Set([...Object.keys(e.otherLogs ?? {}), ...Object.keys(a.otherLogs ?? {})]);
      for (const k of keys) d.push(...linesDiff(`${pfx}: ${k}`, e.otherLogs?.[k] ?? [], a.otherLogs?.[k] ?? []));
    }
  }
  return d;
}

// `node --test dist/test/` also runs this library file on its own: make that a
// visible skipped entry rather than a phantom passing test.
if (process.env.NODE_TEST_CONTEXT !== undefined && process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { test } = await import('node:test');
  test('conformance/harness.js is the harness library, not a test', { skip: 'library' }, () => {});
}
