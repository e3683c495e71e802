// mod_authnz_fcgi (modules/aaa/mod_authnz_fcgi.c): FastCGI authorizer applications as authn
// and authz providers (AuthnzFcgiDefineProvider, used by AuthBasicProvider and Require), and as
// a check_authn hook of their own (AuthnzFcgiCheckAuthnProvider). Each check is one FastCGI
// exchange in the AUTHORIZER role on a new connection: the CGI environment with
// FCGI_APACHE_ROLE and REMOTE_PASSWD, no STDIN; a 200 answer allows and its Variable-* headers
// become environment variables of the request, any other status denies (with the backend's
// body as the error page when the check_authn hook is authoritative).
//
// The record encoder and reader are the shared FastCGI wire format of src/proxy/protocols
// (httpd's util_fcgi.c); the script header is read by ap_scan_script_header's counterpart.

import * as net from 'node:net';
import {
  DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_FILEINFO, RSRC_CONF, defineModule, directive, type MaybePromise,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { GLOBAL_ONLY } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_ERR, APLOG_TRACE2, APLOG_WARNING } from '../../server/log/levels.js';
import { addCgiVars, addCommonVars, scanScriptHeaderSync, MAX_STRING_LEN, type ScriptHeaderLog, type ScriptLine } from '../../server/util-script.js';
import { setCustomResponse } from '../../server/core/config.js';
import { resolveHostSync } from '../../server/core/resolve.js';
import {
  EXPR_FLAG_DONT_VARY, EXPR_FLAG_RESTRICTED, EXPR_FLAG_STRING_RESULT, evalString, isFailure, parseStringExprCmd, type StringExpr,
} from '../../expr/index.js';
import {
  FCGI_AUTHORIZER, FCGI_PARAMS_RECORD_LIMIT, FCGI_VERSION_1, FcgiItem, FcgiRecordReader, FcgiType, HeaderEndScanner, encodeRequest,
} from '../../proxy/protocols/fcgi.js';
import { aprBase64Decode } from '../../lib/apr-base64.js';
import {
  AUTH_DENIED, AUTH_GENERAL_ERROR, AUTH_GRANTED, AUTHN_PROVIDER_GROUP, AUTHN_PROVIDER_NAME_NOTE, authName, authType, noteAuthFailure,
  type AuthnProvider, type AuthnStatus,
} from './mod_authn_core.js';
import {
  AUTHZ_DENIED, AUTHZ_DENIED_NO_USER, AUTHZ_GENERAL_ERROR, AUTHZ_GRANTED, AUTHZ_PROVIDER_GROUP, AUTHZ_PROVIDER_NAME_NOTE,
  authzError, authzOk, type AuthzProvider, type AuthzStatus,
} from './mod_authz_core.js';

const MODULE = 'authnz_fcgi';

/** FCGI_IO_TIMEOUT: the connect and every read or write (30 s). */
const FCGI_IO_TIMEOUT_MS = 30_000;
/** NON200_RESPONSE_BUF_LEN: the most of a denial's body kept for the error page. */
const NON200_RESPONSE_BUF_LEN = 8192;
/** AP_IOBUFSIZE: httpd reads a record's content in pieces of this size. */
const IOBUFSIZE = 8192;

// ---- configuration --------------------------------------------------------------------------

/** A provider AuthnzFcgiDefineProvider defined (fcgi_provider_conf). */
export interface FcgiProviderConf {
  readonly name: string;
  /** The backend address as written. */
  readonly backend: string;
  readonly host: string;
  readonly port: number;
  /** The addresses to try, in order (resolved when the configuration is read). */
  readonly addrs: readonly string[];
  readonly isAuthn: boolean;
  readonly isAuthz: boolean;
}

export interface FcgiDirConfig {
  /** AuthnzFcgiCheckAuthnProvider's provider ("None" switches an inherited one off). */
  readonly name: string | undefined;
  readonly defaultUser: string | undefined;
  readonly userExpr: StringExpr | undefined;
  readonly authoritative: boolean;
  readonly requireBasicAuth: boolean;
}

type MutableDirConfig = { -readonly [K in keyof FcgiDirConfig]: FcgiDirConfig[K] };

function createDirConfig(): FcgiDirConfig {
  return { name: undefined, defaultUser: undefined, userExpr: undefined, authoritative: true, requireBasicAuth: false };
}

/** One directive sets every field: the section that has it wins whole. */
function mergeDirConfig(base: Readonly<FcgiDirConfig>, add: Readonly<FcgiDirConfig>): FcgiDirConfig {
  return add.name !== undefined ? add : base;
}

interface ProviderTables {
  readonly authn: Map<string, FcgiProviderConf>;
  readonly authz: Map<string, FcgiProviderConf>;
}

const SCRATCH = 'authnz_fcgi:providers';

function tables(ctx: ConfigContext): ProviderTables {
  return ctx.getScratch(SCRATCH, () => ({ authn: new Map(), authz: new Map() }));
}

// ---- directives -------------------------------------------------------------------------------

type Cmd = CmdParms<unknown, FcgiDirConfig>;

/** FCGI_BACKEND_REGEX_STR: fcgi://{hostname|IPv4|[IPv6]}:port[/] (the host as greedy as the
 *  port allows). */
const BACKEND_RE = /^fcgi:\/\/(.*):(\d{1,5})\/?$/;

/** The backend address of AuthnzFcgiDefineProvider split into host and port, or the error. */
export function parseBackendAddress(addr: string): { host: string; port: number } | string {
  const dname = 'AuthnzFcgiDefineProvider';
  const m = BACKEND_RE.exec(addr);
  if (m === null) return `${dname}: backend-address '${addr}' has invalid form`;
  let host = m[1]!;
  if (host.startsWith('[') && host.endsWith(']') && host.length >= 2) host = host.slice(1, -1);
  const port = Number(m[2]!);
  if (port > 65535) return `${dname}: backend-address '${addr}' has invalid port`;
  return { host, port };
}

/** The provider AuthnzFcgiDefineProvider's arguments describe, or Apache's error text (the
 *  address still to be resolved: `addrs` is empty). */
export function parseDefineProvider(argv: readonly string[]): FcgiProviderConf | string {
  const dname = 'AuthnzFcgiDefineProvider';
  let ca = 0;
  if (ca >= argv.length) return `${dname}: No type given`;
  const stype = argv[ca++]!;
  const t = stype.toLowerCase();
  if (t !== 'authn' && t !== 'authz' && t !== 'authnz') return `${dname}: Invalid provider type ${stype}`;
  if (ca >= argv.length) return `${dname}: No provider name given`;
  const name = argv[ca++]!;
  if (ca >= argv.length) return `${dname}: No backend-address given`;
  const backend = argv[ca]!;
  const a = parseBackendAddress(backend);
  if (typeof a === 'string') return a;
  ca++;
  if (ca !== argv.length) return `${dname}: Unexpected parameter ${argv[ca]!}`;
  return { name, backend, host: a.host, port: a.port, addrs: [], isAuthn: t !== 'authz', isAuthz: t !== 'authn' };
}

function defineProvider(cmd: Cmd, argv: string[]): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  // The address is resolved before the arguments after it are checked, as httpd does.
  const p = parseDefineProvider(argv.slice(0, 3));
  if (typeof p === 'string') return p;
  // DIFFERENCE: httpd asks getaddrinfo and tries every address it gives; the configuration
  // reader here is synchronous, so a name is looked up in /etc/hosts (one address).
  const ip = resolveHostSync(p.host);
  if (ip === undefined) {
    // APLOG_STARTUP: the message alone, after getaddrinfo's error.
    cmd.ctx.logBare(MODULE, APLOG_CRIT, `(EAI 2)Name or service not known: AH02530: Address ${p.backend} could not be resolved`);
    return 'AuthnzFcgiDefineProvider: Error resolving backend address';
  }
  if (argv.length > 3) return `AuthnzFcgiDefineProvider: Unexpected parameter ${argv[3]!}`;
  const conf: FcgiProviderConf = { ...p, addrs: [ip] };
  const t = tables(cmd.ctx);
  if (conf.isAuthn) {
    t.authn.set(conf.name, conf);
    cmd.ctx.registerProvider(AUTHN_PROVIDER_GROUP, conf.name, authnProvider);
  }
  if (conf.isAuthz) {
    t.authz.set(conf.name, conf);
    cmd.ctx.registerProvider(AUTHZ_PROVIDER_GROUP, conf.name, authzProvider as AuthzProvider);
  }
  return undefined;
}

/** The options of AuthnzFcgiCheckAuthnProvider, or Apache's error text. `parseUserExpr`
 *  compiles UserExpr's expression (an error text when it does not parse). */
export function parseCheckAuthnProvider(
  argv: readonly string[], parseUserExpr: (text: string) => { ok: true; expr: StringExpr } | { ok: false; error: string },
): FcgiDirConfig | string {
  const dname = 'AuthnzFcgiCheckAuthnProvider';
  const dc: MutableDirConfig = createDirConfig();
  let ca = 0;
  if (ca >= argv.length) return `${dname}: No provider given`;
  dc.name = argv[ca++]!;
  if (dc.name.toLowerCase() === 'none' && ca < argv.length) return 'Options aren\'t supported with "None"';
  while (ca < argv.length) {
    const v = argv[ca++]!;
    // Every option takes a value (httpd's message has no space before "needs").
    if (ca >= argv.length) return `${dname}: ${v}needs an argument`;
    const val = argv[ca++]!;
    const opt = v.toLowerCase();
    let bad = false;
    if (opt === 'authoritative' || opt === 'requirebasicauth') {
      const onOff = val.toLowerCase();
      if (onOff !== 'on' && onOff !== 'off') bad = true;
      else if (opt === 'authoritative') dc.authoritative = onOff === 'on';
      else dc.requireBasicAuth = onOff === 'on';
    } else if (opt === 'defaultuser') {
      dc.defaultUser = val;
    } else if (opt === 'userexpr') {
      const e = parseUserExpr(val);
      if (!e.ok) return `${dname}: Error parsing '${val}': '${e.error}'`;
      dc.userExpr = e.expr;
    } else {
      return `${dname}: Unexpected option '${v}'`;
    }
    if (bad) return `${dname}: Bad argument '${val}' to option '${v}'`;
  }
  return dc;
}

function checkAuthnProvider(cmd: Cmd, argv: string[]): string | undefined {
  const res = parseCheckAuthnProvider(argv, (text) => parseStringExprCmd(cmd, text, EXPR_FLAG_DONT_VARY | EXPR_FLAG_RESTRICTED | EXPR_FLAG_STRING_RESULT, MODULE));
  if (typeof res === 'string') return res;
  Object.assign(cmd.dir as MutableDirConfig, res);
  return undefined;
}

// ---- the exchange (req_rsp) -------------------------------------------------------------------

type AprError = { readonly code: number; readonly text: string };
const APR_EINVAL: AprError = { code: 22, text: 'Invalid argument' };
const APR_EOF: AprError = { code: 70014, text: 'End of file found' };
const APR_TIMEUP: AprError = { code: 70007, text: 'The timeout specified has expired' };

const HEADER_LOG: ScriptHeaderLog = { module: MODULE, noBuffer: true };

/** setupenv: the CGI variables with the authorizer's own, without the responder's. */
async function setupEnv(r: Request, password: string | undefined, role: string | undefined): Promise<void> {
  addCommonVars(r);
  const cgi = addCgiVars(r);
  if (cgi !== undefined) await cgi;
  const e = r.subprocessEnv;
  e.set('FCGI_ROLE', 'AUTHORIZER');
  if (role !== undefined) e.set('FCGI_APACHE_ROLE', role);
  if (password !== undefined) e.set('REMOTE_PASSWD', password);
  for (const n of ['CONTENT_LENGTH', 'PATH_INFO', 'PATH_TRANSLATED', 'SCRIPT_NAME', 'HTTP_KEEP_ALIVE', 'HTTP_TE', 'HTTP_TRAILER', 'HTTP_TRANSFER_ENCODING', 'HTTP_UPGRADE']) {
    e.delete(n);
  }
  e.set('HTTP_CONNECTION', 'close');
}

/** connect_to_peer: each address in turn; the socket, or the last failure (logged). */
function connectToPeer(r: Request, conf: FcgiProviderConf): Promise<net.Socket | AprError> {
  const tryAt = (i: number): Promise<net.Socket | AprError> => new Promise((resolve) => {
    const addr = conf.addrs[i]!;
    const s = net.connect({ host: addr, port: conf.port, noDelay: true });
    const timer = setTimeout(() => s.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), FCGI_IO_TIMEOUT_MS);
    s.once('connect', () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      s.destroy();
      const rv = r.rt.errno(err) ?? APR_EINVAL;
      const last = i + 1 >= conf.addrs.length;
      const level = last ? APLOG_ERR : APLOG_DEBUG;
      if (r.wantsLog(MODULE, level)) {
        const shown = addr.includes(':') ? `[${addr}]` : addr;
        r.log(MODULE, level, `AH02495: attempt to connect to ${shown}:${conf.port} (${conf.backend}) failed`, rv);
      }
      resolve(last ? rv : tryAt(i + 1));
    });
  });
  return tryAt(0);
}

/** Reads the socket's data as it comes: a chunk, null at its end, or the error. */
export class SocketInput {
  private readonly queue: Buffer[] = [];
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  constructor(private readonly s: net.Socket) {
    s.on('data', (d: Buffer) => { this.queue.push(d); this.notify(); });
    s.on('end', () => { this.ended = true; this.notify(); });
    s.on('error', (e) => { this.failure = e; this.ended = true; this.notify(); });
    s.on('close', () => { this.ended = true; this.notify(); });
  }
  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
  /** The next chunk, null at the end, an error, or 'timeout'. */
  async read(): Promise<Buffer | null | Error | 'timeout'> {
    for (;;) {
      const c = this.queue.shift();
      if (c !== undefined) return c;
      if (this.failure !== undefined) return this.failure;
      if (this.ended) return null;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await new Promise<boolean>((resolve) => {
        this.wake = () => resolve(false);
        timer = setTimeout(() => resolve(true), FCGI_IO_TIMEOUT_MS);
      });
      clearTimeout(timer);
      if (timedOut) { this.wake = undefined; return 'timeout'; }
    }
  }
}

/** getsfunc_BRIGADE over the header's bytes: a line up to LF with its CRs dropped; 0 when
 *  the data ends before a LF or the line does not fit. */
function bufferLines(buf: Buffer): { gets: () => ScriptLine; rest: () => Buffer } {
  let at = 0;
  const gets = (): ScriptLine => {
    const max = MAX_STRING_LEN - 2;
    let line = '';
    while (at < buf.length && line.length < max) {
      const c = buf[at++]!;
      if (c === 0x0a) return { line, rv: 1 };
      if (c !== 0x0d) line += String.fromCharCode(c);
    }
    return { line, rv: 0 };
  };
  return { gets, rest: () => buf.subarray(at) };
}

/** handle_response: the records up to END_REQUEST. The script header is read into the
 *  request (status, headers); `wantBody` keeps what followed the header in the piece read
 *  with its end (httpd flattens its brigade then), at most NON200_RESPONSE_BUF_LEN bytes. */
export async function handleResponse(r: Request, conf: FcgiProviderConf, input: SocketInput, wantBody: boolean): Promise<{ rv: AprError | undefined; body: Buffer | undefined }> {
  const fn = 'handle_response';
  const rd = new FcgiRecordReader();
  const scanner = new HeaderEndScanner();
  let headerParts: Buffer[] = [];
  let seenEndOfHeaders = false;
  let body: Buffer | undefined;
  let stderr: Buffer[] = [];
  /** Content bytes of the current record read so far (httpd reads it 8 KB at a time). */
  let inRecord = 0;
  for (;;) {
    const c = await input.read();
    if (c === null || c instanceof Error || c === 'timeout') {
      const rv = c === 'timeout' ? APR_TIMEUP : c === null ? APR_EOF : (r.rt.errno(c) ?? APR_EOF);
      r.log(MODULE, APLOG_ERR, `AH02497: Couldn't read from backend ${conf.backend}`);
      if (rd.atBoundary) r.log(MODULE, APLOG_ERR, `AH02501: ${fn}: Error occurred before reading entire header`, rv);
      else if (rd.type !== 0 && inRecord >= rd.contentLength) r.log(MODULE, APLOG_ERR, `AH02509: ${fn}: Error occurred reading padding`, rv);
      return { rv, body };
    }
    rd.begin(c);
    for (let it = rd.next(); it !== FcgiItem.None; it = rd.next()) {
      if (it === FcgiItem.Header) {
        inRecord = 0;
        if (rd.version !== FCGI_VERSION_1) {
          r.log(MODULE, APLOG_ERR, `AH02502: ${fn}: Got bogus FastCGI header version ${rd.version}`);
          return { rv: APR_EINVAL, body };
        }
        if (rd.requestId !== 1) {
          r.log(MODULE, APLOG_ERR, `AH02503: ${fn}: Got bogus FastCGI header request id ${rd.requestId}, expected 1`);
          return { rv: APR_EINVAL, body };
        }
      } else if (it === FcgiItem.Content) {
        const d = rd.data;
        const pieceStart = inRecord;
        inRecord += d.length;
        if (rd.type === FcgiType.STDOUT) {
          if (seenEndOfHeaders) continue;
          const end = scanner.scan(d);
          if (end < 0) { headerParts.push(Buffer.from(d)); continue; }
          seenEndOfHeaders = true;
          headerParts.push(d);
          const all = headerParts.length === 1 ? d : Buffer.concat(headerParts);
          headerParts = [];
          const lines = bufferLines(all);
          const status = scanScriptHeaderSync(r, lines.gets, HEADER_LOG, { line: '' });
          if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH02504: ${fn}: script header parsing -> ${status}/${r.status}`);
          if (r.subprocessEnv.get('ap_trust_cgilike_cl') === undefined) r.headersOut.unset('Content-Length');
          r.headersOut.unset('Transfer-Encoding');
          if (wantBody) {
            // The rest of httpd's read buffer: this record's piece up to AP_IOBUFSIZE.
            const rest = lines.rest();
            const pieceEnd = Math.min(d.length, IOBUFSIZE - (pieceStart % IOBUFSIZE));
            const keep = Math.max(0, rest.length - (d.length - pieceEnd));
            body = Buffer.from(rest.subarray(0, Math.min(keep, NON200_RESPONSE_BUF_LEN)));
          }
          if (status !== OK) {
            r.status = status;
            r.log(MODULE, APLOG_ERR, `AH02506: ${fn}: Error parsing script headers from ${conf.backend}`);
            return { rv: APR_EINVAL, body };
          }
        } else if (rd.type === FcgiType.STDERR) {
          stderr.push(d);
        }
      } else if (it === FcgiItem.RecordEnd) {
        const type = rd.type;
        if (type === FcgiType.STDERR && stderr.length > 0) {
          const text = Buffer.concat(stderr).toString('latin1');
          stderr = [];
          for (let at = 0; at < text.length; at += IOBUFSIZE) {
            r.log(MODULE, APLOG_WARNING, `AH02507: ${fn}: Logged from ${conf.backend}: '${text.slice(at, at + IOBUFSIZE)}'`);
          }
        } else if (type === FcgiType.END_REQUEST) {
          if (!seenEndOfHeaders) {
            r.log(MODULE, APLOG_ERR, `AH02510: ${fn}: Never reached end of script headers`);
            return { rv: APR_EINVAL, body };
          }
          return { rv: undefined, body };
        } else if (type !== FcgiType.STDOUT && type !== FcgiType.STDERR) {
          r.log(MODULE, APLOG_ERR, `AH02508: ${fn}: Got bogus FastCGI record type ${type}`);
        }
      }
    }
  }
}

/** req_rsp: one exchange with the authorizer. The backend's status is left in r.status (500
 *  when the exchange failed); the subprocess environment is put back as it was, plus the
 *  Variable-* headers of a 200 answer. Returns the body wanted by the check_authn hook. */
async function reqRsp(r: Request, conf: FcgiProviderConf, password: string | undefined, role: string | undefined, wantBody: boolean): Promise<Buffer | undefined> {
  const fn = 'req_rsp';
  const saved = new Map(r.subprocessEnv);
  await setupEnv(r, password, role);
  let rv: AprError | undefined;
  let body: Buffer | undefined;
  const s = await connectToPeer(r, conf);
  if (s instanceof net.Socket) {
    const input = new SocketInput(s);
    s.setTimeout(FCGI_IO_TIMEOUT_MS, () => s.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
    if (r.wantsLog(MODULE, APLOG_TRACE2)) {
      for (const [k, v] of r.subprocessEnv) r.log(MODULE, APLOG_TRACE2, `send_environment: '${k}': '${k === 'REMOTE_PASSWD' ? 'XXXXXXXX' : v}'`);
    }
    const req = encodeRequest(1, FCGI_AUTHORIZER, 0, r.subprocessEnv, FCGI_PARAMS_RECORD_LIMIT, undefined, 0);
    for (const name of req.skipped ?? []) {
      r.log(MODULE, APLOG_WARNING, `AH02499: couldn't encode envvar '${name}' in ${FCGI_PARAMS_RECORD_LIMIT} bytes`);
    }
    const werr = await new Promise<Error | undefined>((resolve) => s.write(req.data, (e) => resolve(e ?? undefined)));
    if (werr !== undefined) {
      rv = r.rt.errno(werr) ?? APR_EINVAL;
      r.log(MODULE, APLOG_ERR, `AH02498: Sending data to ${conf.backend} failed`, rv);
      r.log(MODULE, APLOG_ERR, `AH02511: ${fn}: Failed writing request to ${conf.backend}`, rv);
    } else {
      // The responder owns the request body: no STDIN record is sent to an authorizer.
      const res = await handleResponse(r, conf, input, wantBody);
      rv = res.rv;
      body = res.body;
      if (rv !== undefined) r.log(MODULE, APLOG_ERR, `AH02514: ${fn}: Failed handling response from ${conf.backend}`, rv);
    }
    s.destroy();
  } else {
    rv = s;
  }
  if (rv !== undefined) r.status = 500;
  else if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH02515: ${fn}: Received HTTP status ${r.status}`);
  const env = r.subprocessEnv;
  env.clear();
  for (const [k, v] of saved) env.set(k, v);
  if (r.status === 200) {
    // A 200 answer's Variable-* headers become variables (the name after the prefix) and
    // leave the response.
    const vars = new Map<string, [string, string]>();
    r.errHeadersOut.forEach((name, value) => {
      if (name.length >= 9 && name.slice(0, 9).toLowerCase() === 'variable-') {
        const k = name.toLowerCase();
        const had = vars.get(k);
        vars.set(k, [had !== undefined ? had[0] : name, value]);
      }
    });
    for (const [name, value] of vars.values()) {
      if (r.wantsLog(MODULE, APLOG_TRACE2)) r.log(MODULE, APLOG_TRACE2, `moving ${name}->${value}`);
      r.errHeadersOut.unset(name);
      env.set(name.slice(9), value);
    }
  }
  return body;
}

function logProviderInfo(r: Request, conf: FcgiProviderConf): void {
  if (!r.wantsLog(MODULE, APLOG_DEBUG)) return;
  const a = conf.addrs[0]!;
  r.log(MODULE, APLOG_DEBUG, `AH02496: name ${conf.name}, backend ${conf.backend}, host ${conf.host}, port ${conf.port}, first address ${a.includes(':') ? `[${a}]` : a}:${conf.port}, ${conf.isAuthn ? 'N' : '_'}${conf.isAuthz ? 'Z' : '_'}`);
}

/** The authnz provider that granted this request (so Require of the same name grants). */
const successfulAuthnz = new WeakMap<Request, string>();

// ---- ap_get_basic_auth_pw -------------------------------------------------------------------

/** ap_get_basic_auth_pw: the password (r.user set from the credentials), or the status. */
function getBasicAuthPw(r: Request): string | number {
  const t = authType(r);
  if (t === undefined || t.toLowerCase() !== 'basic') return DECLINED;
  if (authName(r) === undefined) {
    r.log('core', APLOG_ERR, `AH00572: need AuthName: ${r.uri}`);
    return 500;
  }
  const line = r.headersIn.get(r.proxyreq === 1 ? 'Proxy-Authorization' : 'Authorization');
  if (line === undefined) {
    noteAuthFailure(r);
    return 401;
  }
  let sp = line.indexOf(' ');
  if (sp < 0) sp = line.length;
  if (line.slice(0, sp).toLowerCase() !== 'basic') {
    if (r.wantsLog('core', 6)) r.log('core', 6, `AH00573: client used wrong authentication scheme: ${r.uri}`);
    noteAuthFailure(r);
    return 401;
  }
  let i = sp;
  while (line[i] === ' ') i++;
  while (line[i] === ' ' || line[i] === '\t') i++;
  let decoded = aprBase64Decode(line.slice(i)).toString('latin1');
  const nul = decoded.indexOf('\0');
  if (nul >= 0) decoded = decoded.slice(0, nul);
  const colon = decoded.indexOf(':');
  r.user = colon < 0 ? decoded : decoded.slice(0, colon);
  r.notes.set('AP_GET_BASIC_AUTH_PW_NOTE', '1');
  r.apAuthType = 'Basic';
  return colon < 0 ? '' : decoded.slice(colon + 1);
}

// ---- check_authn ------------------------------------------------------------------------------

async function fcgiCheckAuthn(r: Request): Promise<number> {
  const fn = 'fcgi_check_authn';
  const d = self.dir(r);
  const prov = d?.name;
  if (prov === undefined || prov.toLowerCase() === 'none') return DECLINED;
  const type = authType(r);
  if (r.wantsLog(MODULE, APLOG_DEBUG)) {
    r.log(MODULE, APLOG_DEBUG, `AH02516: ${fn}, prov ${prov}, authoritative ${d.authoritative ? 'yes' : 'no'}, require-basic ${d.requireBasicAuth ? 'yes' : 'no'}, user expr? ${d.userExpr ? 'yes' : 'no'} type ${type ?? '(null)'}`);
  }
  let password: string | undefined;
  if (type !== undefined && type.toLowerCase() === 'basic') {
    const res = getBasicAuthPw(r);
    if (typeof res === 'number') {
      if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH02517: ${fn}: couldn't retrieve basic auth password`);
      if (d.requireBasicAuth) return res;
    } else {
      password = res;
    }
  }
  const conf = tables(r.rt.ctx).authn.get(prov);
  if (conf === undefined) {
    r.log(MODULE, APLOG_CRIT, `AH02518: ${fn}: can't find config for provider ${prov}`);
    return 500;
  }
  logProviderInfo(r, conf);
  const body = await reqRsp(r, conf, password, 'AUTHENTICATOR', true);
  if (r.status === 200) {
    if (d.userExpr !== undefined) {
      const user = evalString(d.userExpr, r);
      if (isFailure(user)) {
        r.log(MODULE, APLOG_ERR, `AH02521: ${fn}: Failure extracting user after calling authorizer: ${user.error}`);
        r.status = 500;
      } else if (user !== '') {
        r.user = user;
        if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH02519: ${fn}: Setting user to '${r.user}'`);
      } else if (d.defaultUser !== undefined) {
        r.user = d.defaultUser;
      } else {
        r.log(MODULE, APLOG_ERR, `AH02520: ${fn}: Failure extracting user after calling authorizer: user expression yielded empty string (variable not set?)`);
        r.status = 500;
      }
    }
    if (conf.isAuthz) successfulAuthnz.set(r, conf.name);
  } else if (body !== undefined && body.length > 0) {
    // The backend's status, headers and body go to the client, when it decides.
    if (!d.authoritative) {
      r.log(MODULE, APLOG_WARNING, `AH02522: ${fn}: Ignoring response body from non-authoritative authorizer`);
    } else {
      if (body.length === NON200_RESPONSE_BUF_LEN) r.log(MODULE, APLOG_WARNING, `AH02523: ${fn}: possible overflow handling response body`);
      let text = body.toString('latin1');
      const nul = text.indexOf('\0');
      if (nul >= 0) text = text.slice(0, nul);
      setCustomResponse(r, r.status, text);
    }
  }
  return r.status === 200 ? OK : d.authoritative ? r.status : DECLINED;
}

// ---- the providers --------------------------------------------------------------------------

async function fcgiCheckPassword(r: Request, user: string, password: Uint8Array): Promise<AuthnStatus> {
  const fn = 'fcgi_check_password';
  const prov = r.notes.get(AUTHN_PROVIDER_NAME_NOTE);
  if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH02524: ${fn}(${user}, XXX): provider ${prov ?? '(null)'}`);
  if (prov === undefined) {
    r.log(MODULE, APLOG_CRIT, `AH02525: ${fn}: provider note isn't set`);
    return AUTH_GENERAL_ERROR;
  }
  const conf = tables(r.rt.ctx).authn.get(prov);
  if (conf === undefined) {
    r.log(MODULE, APLOG_CRIT, `AH02526: ${fn}: can't find config for provider ${prov}`);
    return AUTH_GENERAL_ERROR;
  }
  logProviderInfo(r, conf);
  // A C string: the password ends at a NUL.
  let pw = Buffer.from(password).toString('latin1');
  const nul = pw.indexOf('\0');
  if (nul >= 0) pw = pw.slice(0, nul);
  // Combined authn and authz: FCGI_APACHE_ROLE is not set.
  await reqRsp(r, conf, pw, conf.isAuthz ? undefined : 'AUTHENTICATOR', false);
  if (r.status === 200) {
    if (conf.isAuthz) successfulAuthnz.set(r, conf.name);
    return AUTH_GRANTED;
  }
  return r.status === 500 ? AUTH_GENERAL_ERROR : AUTH_DENIED;
}

const authnProvider: AuthnProvider = { checkPassword: fcgiCheckPassword };

function fcgiAuthzCheck(r: Request, requireLine: string): MaybePromise<AuthzStatus> {
  const fn = 'fcgi_authz_check';
  const prov = r.notes.get(AUTHZ_PROVIDER_NAME_NOTE);
  if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH02527: ${fn}(${requireLine})`);
  if (prov === undefined) {
    r.log(MODULE, APLOG_CRIT, `AH02528: ${fn}: provider note isn't set`);
    return AUTHZ_GENERAL_ERROR;
  }
  const conf = tables(r.rt.ctx).authz.get(prov);
  if (conf === undefined) {
    r.log(MODULE, APLOG_CRIT, `AH02529: ${fn}: can't find config for provider ${prov}`);
    return AUTHZ_GENERAL_ERROR;
  }
  logProviderInfo(r, conf);
  if (r.user === undefined) return AUTHZ_DENIED_NO_USER;
  if (conf.isAuthn) {
    // Combined: the application already answered in the authentication phase.
    return successfulAuthnz.get(r) === conf.name ? AUTHZ_GRANTED : AUTHZ_DENIED;
  }
  return reqRsp(r, conf, undefined, 'AUTHORIZER', false).then(() =>
    r.status === 200 ? AUTHZ_GRANTED : r.status === 500 ? AUTHZ_GENERAL_ERROR : AUTHZ_DENIED);
}

const authzProvider: AuthzProvider<undefined> = {
  // Allowed: Require [not] provider-name, nothing after it.
  parse: (_cmd, requireLine) => requireLine !== ''
    ? authzError("mod_authnz_fcgi doesn't support restrictions on providers (i.e., multiple require args)")
    : authzOk(undefined),
  check: (r, requireLine) => fcgiAuthzCheck(r, requireLine),
};

// ---- the module -------------------------------------------------------------------------------

const self = defineModule<unknown, FcgiDirConfig>({
  name: 'authnz_fcgi_module',
  source: 'mod_authnz_fcgi.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: 'AuthnzFcgiDefineProvider', args: 'TAKE_ARGV', where: RSRC_CONF, help: 'Define a FastCGI authn and/or authz provider', handler: defineProvider }),
    directive({ name: 'AuthnzFcgiCheckAuthnProvider', args: 'TAKE_ARGV', where: OR_FILEINFO, help: 'Enable/disable a FastCGI authorizer to handle check_authn phase', handler: checkAuthnProvider }),
  ],
  hooks: {
    // Before mod_auth_basic, so that a denial's own response is not replaced by its.
    checkUserId: { fn: fcgiCheckAuthn, order: HOOK_MIDDLE, successors: ['mod_auth_basic.c'] },
  },
  configHooks: {
    preConfig(ctx) {
      const t = tables(ctx);
      t.authn.clear();
      t.authz.clear();
    },
  },
});

export default self;
