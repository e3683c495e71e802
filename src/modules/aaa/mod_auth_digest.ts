// mod_auth_digest (modules/aaa/mod_auth_digest.c): HTTP Digest authentication (RFC 2617,
// qop=auth, MD5), as httpd 2.4.71 has it — measured on it, since that release changed the
// module from the 2.4 sources: RFC 2069 requests (no qop) are refused (AH10560), MD5-sess and
// auth-int are refused at configuration time, the nonce-count must rise (AH01774, "is not
// above"), a one-time nonce is spent once (AH01779).
//
//  - post_read_request: the Authorization header parsed once, on the initial request.
//  - check_authn (AuthType Digest): uri, opaque, realm and algorithm checked, the user's
//    MD5(user:realm:password) asked from the AuthDigestProvider chain (get_realm_hash: file,
//    dbm, an <AuthnProviderAlias>), the response compared, then the nonce (its hash, its age
//    against AuthDigestNonceLifetime, one-time nonces) and, with AuthDigestNcCheck, the
//    nonce-count. 401 with a WWW-Authenticate challenge (stale=true when only the nonce was
//    wrong), 400 for a uri that is not the request's.
//  - note_auth_failure ('auth_type' provider "Digest"): the challenge, for mod_authz_core.
//  - fixups: Authentication-Info (rspauth, nextnonce when the nonce is about to expire).
// The nonce is base64 of the request time (an 8-byte apr_time_t) followed by the hex SHA-1 of
// the server secret, the realm, that base64 and the opaque, as httpd makes it.

import { PROXYREQ_PROXY } from '../../proxy/api.js';
import { createHash } from 'node:crypto';
import {
  DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_AUTHCFG, RSRC_CONF,
  defineModule, directive, type MaybePromise, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import { globals } from '../../server/core/globals.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, levelFor } from '../../server/log/levels.js';
import {
  AUTH_DENIED, AUTH_GENERAL_ERROR, AUTH_USER_FOUND, AUTH_USER_NOT_FOUND,
  AUTHN_DEFAULT_PROVIDER, AUTHN_PROVIDER_NAME_NOTE,
  authName, authType, lookupAuthnProvider,
  type AuthnProvider, type AuthnStatus, type AuthTypeHandler, type RealmHashResult,
} from './mod_authn_core.js';
import {
  ClientTable, DEFAULT_SHMEM_SIZE, MIN_SHMEM_SIZE, NONCE_LEN, bucketsFor, serverSecret,
  type DigestClient,
} from './digest-clients.js';
import { unescapeUrl } from '../../lib/urlencoded.js';

// ---- configuration ------------------------------------------------------------------------

interface ProviderEntry {
  readonly name: string;
  readonly provider: AuthnProvider;
}

/** No merge, as in httpd: the most specific section with a digest directive wins whole. */
export interface AuthDigestDirConfig {
  readonly providers: readonly ProviderEntry[] | undefined;
  /** AuthDigestNonceLifetime in seconds: > 0 a lifetime, 0 one-time nonces, < 0 forever. */
  readonly nonceLifetime: number;
  readonly checkNc: boolean;
  /** AuthDigestDomain, as the challenge's `, domain="..."` text. */
  readonly uriList: string | undefined;
}

interface MutableDirConfig {
  providers: ProviderEntry[] | undefined;
  nonceLifetime: number;
  checkNc: boolean;
  uriList: string | undefined;
}

const DEFAULT_NONCE_LIFETIME = 300;
const NEXTNONCE_DELTA = 30;

function createDirConfig(): AuthDigestDirConfig {
  return { providers: undefined, nonceLifetime: DEFAULT_NONCE_LIFETIME, checkNc: false, uriList: undefined };
}

/** AuthDigestShmemSize (server-wide: the last one read counts, as httpd's static). */
let shmemSize = DEFAULT_SHMEM_SIZE;

// ---- directives ---------------------------------------------------------------------------

type Cmd = CmdParms<unknown, AuthDigestDirConfig>;

function mutable(c: AuthDigestDirConfig): MutableDirConfig {
  return c as MutableDirConfig;
}

function addAuthnProvider(cmd: Cmd, name: string): string | undefined {
  const provider = lookupAuthnProvider(cmd.ctx, name);
  if (!provider) return `Unknown Authn provider: ${name}`;
  if (!provider.getRealmHash) return `The '${name}' Authn provider doesn't support Digest Authentication`;
  const conf = mutable(cmd.dir);
  if (!conf.providers) conf.providers = [];
  conf.providers.push({ name, provider });
  return undefined;
}

/** Only "auth" is left (httpd 2.4.71); the challenge always offers qop="auth". */
function setQop(_cmd: Cmd, op: string): string | undefined {
  if (op.toLowerCase() !== 'auth') return "AuthDigestQop is deprecated: only 'auth' is supported";
  return undefined;
}

/** strtol: leading blanks, a sign, digits; the rest must be blanks or nothing. */
function parseLong(t: string, base: 10 | 16): { value: number; rest: string } {
  const digits = base === 10 ? '[0-9]' : '[0-9a-fA-F]';
  const m = new RegExp(`^[ \\t\\n\\v\\f\\r]*([+-]?)(${base === 16 ? '(?:0[xX])?' : ''}${digits}+)?`).exec(t)!;
  if (m[2] === undefined) return { value: 0, rest: t };
  const v = parseInt(m[2].replace(/^0[xX]/, ''), base);
  return { value: m[1] === '-' ? -v : v, rest: t.slice(m[0].length) };
}

function setNonceLifetime(cmd: Cmd, t: string): string | undefined {
  const { value, rest } = parseLong(t, 10);
  if (rest !== '' && !/^[ \t\n\v\f\r]/.test(rest)) return `Invalid time in AuthDigestNonceLifetime: ${t}`;
  mutable(cmd.dir).nonceLifetime = value;
  return undefined;
}

function setNcCheck(cmd: Cmd, on: boolean): undefined {
  mutable(cmd.dir).checkNc = on;
  return undefined;
}

/** MD5 is the only algorithm left; the challenge always names it "MD5". */
function setAlgorithm(_cmd: Cmd, alg: string): string | undefined {
  if (alg.toLowerCase() !== 'md5') return `Unsupported algorithm in AuthDigestAlgorithm: ${alg}`;
  return undefined;
}

function setUriList(cmd: Cmd, uri: string): undefined {
  const c = mutable(cmd.dir);
  c.uriList = c.uriList === undefined ? `, domain="${uri}"` : `${c.uriList.slice(0, -1)} ${uri}"`;
  return undefined;
}

function setShmemSize(cmd: Cmd, arg: string): string | undefined {
  let { value: size, rest } = parseLong(arg, 10);
  rest = rest.replace(/^[ \t\n\v\f\r]+/, '');
  const unit = rest[0];
  if (unit === undefined || unit === 'b' || unit === 'B') { /* bytes */ } else if (unit === 'k' || unit === 'K') size *= 1024;
  else if (unit === 'm' || unit === 'M') size *= 1048576;
  else return `Invalid size in AuthDigestShmemSize: ${arg}`;
  if (size < MIN_SHMEM_SIZE) return `size in AuthDigestShmemSize too small: ${size} < ${MIN_SHMEM_SIZE}`;
  shmemSize = size;
  logServer(cmd.server, APLOG_DEBUG, `AH01763: Set shmem-size: ${size}, num-buckets: ${bucketsFor(size)}`, 'mod_auth_digest.c(586)');
  return undefined;
}

// ---- shared state ---------------------------------------------------------------------------

let table: ClientTable | null = null;

function logServer(s: ServerRec, level: number, message: string, source?: string): void {
  if (level > levelFor(s.logLevel, 'auth_digest')) return;
  s.errorLog.write({ module: 'auth_digest', level, message, source });
}

function tableDir(ctx: ConfigContext): string {
  return globals(ctx).runtimeDir ?? ctx.serverRootRelative('logs');
}

function postConfig(ctx: ConfigContext): string | undefined {
  table?.close();
  table = null;
  const secret = serverSecret();
  try {
    if (ctx.child) {
      const slot = Number(process.env['PLUME_CHILD_SLOT'] ?? '0');
      const t = ClientTable.attach(ClientTable.fileName(tableDir(ctx), process.ppid), Number.isFinite(slot) ? slot : 0);
      if (typeof t === 'string') throw new Error(t);
      table = t;
    } else if (ctx.defines.has('DEBUG') || ctx.defines.has('ONE_PROCESS')) {
      table = ClientTable.inMemory(secret, shmemSize);
    } else {
      table = ClientTable.create(ClientTable.fileName(tableDir(ctx), process.pid), secret, shmemSize);
    }
  } catch (e) {
    // As httpd when its segment cannot be made: digest works, without nonce-count checks and
    // one-time nonces.
    const file = ClientTable.fileName(tableDir(ctx), ctx.child ? process.ppid : process.pid);
    logServer(ctx.mainServer, APLOG_ERR, `AH01762: Failed to create shared memory segment on file ${file}: ${(e as Error).message}`);
    logServer(ctx.mainServer, APLOG_ERR, 'AH01760: failed to initialize shm - all nonce-count checking and one-time nonces disabled');
    table = null;
  }
  return undefined;
}

function cleanup(ctx: ConfigContext): void {
  if (table === null) return;
  if (!ctx.child) table.remove();
  table.close();
  table = null;
}

function preConfig(ctx: ConfigContext): void {
  shmemSize = DEFAULT_SHMEM_SIZE;
  if (!secretLogged) {
    secretLogged = true;
    serverSecret();
    ctx.logNoServer('auth_digest', APLOG_DEBUG, 'AH01757: generating secret for digest authentication');
  }
}
let secretLogged = false;

function getClient(r: Request, key: number, logged: boolean): DigestClient | null {
  if (table === null) return null;
  const c = table.get(key);
  if (logged) {
    if (c !== null) r.log('auth_digest', APLOG_DEBUG, `AH01764: client ${key} found`, undefined, 'mod_auth_digest.c(709)');
    else r.log('auth_digest', APLOG_DEBUG, `AH01765: client ${key} not found`, undefined, 'mod_auth_digest.c(713)');
  }
  return c;
}

/** gen_client: a new client number and its entry. */
function genClient(r: Request): DigestClient | null {
  const t = table;
  if (t === null) return null;
  const key = t.nextOpaque();
  const c = t.add(key, (removed) => {
    const n = t.counters();
    logServer(r.server, APLOG_INFO, `AH01766: gc'd ${removed} client entries. Total new clients: ${(n.created - n.renewed) >>> 0}; Total removed clients: ${n.removed}; Total renewed clients: ${n.renewed}`);
  });
  logServer(r.server, APLOG_DEBUG, `AH01768: allocated new client ${key}`, 'mod_auth_digest.c(912)');
  return c;
}

// ---- the Authorization header ---------------------------------------------------------------

export const enum HdrStatus { NoHeader, NotDigest, Invalid, Valid }

/** A parsed Authorization header and what the request made of it (httpd's digest_header_rec). */
export interface DigestHeader {
  sts: HdrStatus;
  scheme: string;
  username: string | undefined;
  realm: string | undefined;
  nonce: string | undefined;
  uri: string | undefined;
  digest: string | undefined;
  algorithm: string | undefined;
  cnonce: string | undefined;
  opaque: string | undefined;
  opaqueNum: number;
  messageQop: string | undefined;
  nonceCount: string | undefined;
  readonly rawRequestUri: string;
  readonly method: string;
  nonceTime: number;
  neededAuth: boolean;
  ha1: string;
  client: DigestClient | null;
}

const headers = new WeakMap<Request, DigestHeader>();

const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';

/** get_digest_rec: the name=value pairs, quoted strings with backslash escapes. */
function parseDigestHeader(line: string | undefined, into: DigestHeader): void {
  if (line === undefined) { into.sts = HdrStatus.NoHeader; return; }
  let i = 0;
  while (isSpace(line[i])) i++;
  let j = i;
  while (j < line.length && !isSpace(line[j])) j++;
  into.scheme = line.slice(i, j);
  i = j;
  while (isSpace(line[i])) i++;
  if (into.scheme.toLowerCase() !== 'digest') { into.sts = HdrStatus.NotDigest; return; }
  const n = line.length;
  while (i < n) {
    while (isSpace(line[i])) i++;
    let key = '';
    while (i < n && line[i] !== '=' && line[i] !== ',' && !isSpace(line[i])) key += line[i++];
    while (isSpace(line[i])) i++;
    let value = '';
    if (line[i] === '=') {
      i++;
      while (isSpace(line[i])) i++;
      if (line[i] === '"') {
        i++;
        while (i < n && line[i] !== '"') {
          if (line[i] === '\\' && i + 1 < n) i++;
          value += line[i++];
        }
        if (i < n) i++;
      } else {
        while (i < n && line[i] !== ',' && !isSpace(line[i])) value += line[i++];
      }
    }
    while (i < n && line[i] !== ',') i++;
    if (i < n) i++;
    switch (key.toLowerCase()) {
      case 'username': into.username = value; break;
      case 'realm': into.realm = value; break;
      case 'nonce': into.nonce = value; break;
      case 'uri': into.uri = value; break;
      case 'response': into.digest = value; break;
      case 'algorithm': into.algorithm = value; break;
      case 'cnonce': into.cnonce = value; break;
      case 'opaque': into.opaque = value; break;
      case 'qop': into.messageQop = value; break;
      case 'nc': into.nonceCount = value; break;
      default: break;
    }
  }
  // The time part of a nonce is the base64 of 8 bytes: 12 characters ending in '='.
  const nonceOk = into.nonce !== undefined && into.nonce.length === NONCE_LEN && into.nonce[NONCE_TIME_LEN - 1] === '=';
  if (into.username === undefined || into.realm === undefined || !nonceOk || into.uri === undefined || into.digest === undefined
    || (into.messageQop !== undefined && (into.cnonce === undefined || into.nonceCount === undefined))) {
    into.sts = HdrStatus.Invalid;
    return;
  }
  if (into.opaque !== undefined) into.opaqueNum = parseLong(into.opaque, 16).value >>> 0;
  into.sts = HdrStatus.Valid;
}

function newHeader(r: Pick<Request, 'unparsedUri' | 'method'>): DigestHeader {
  return {
    sts: HdrStatus.NoHeader, scheme: '', username: undefined, realm: undefined, nonce: undefined, uri: undefined,
    digest: undefined, algorithm: undefined, cnonce: undefined, opaque: undefined, opaqueNum: 0, messageQop: undefined,
    nonceCount: undefined, rawRequestUri: r.unparsedUri, method: r.method, nonceTime: 0, neededAuth: false, ha1: '', client: null,
  };
}

/** The parsed form of an Authorization header (for tests and `plume explain`). */
export function parseAuthorization(line: string | undefined, unparsedUri = '/', method = 'GET'): DigestHeader {
  const h = newHeader({ unparsedUri, method });
  parseDigestHeader(line, h);
  return h;
}

/** A forward proxy request authenticates with Proxy-Authorization / Proxy-Authenticate /
 *  Proxy-Authentication-Info (the core turns its 401 into 407); any other with the
 *  Authorization fields. mod_proxy has marked the request by post_read_request. */
function authorizationField(r: Request): string {
  return r.proxyreq === PROXYREQ_PROXY ? 'Proxy-Authorization' : 'Authorization';
}

/** post_read_request: parse the header of the initial request once. */
function parseHeader(r: Request): number {
  if (!r.isInitialReq()) return DECLINED;
  const h = newHeader(r);
  headers.set(r, h);
  parseDigestHeader(r.headersIn.get(authorizationField(r)), h);
  return DECLINED;
}

/** The header record of the request this one came from (the initial request). */
function headerOf(r: Request): DigestHeader {
  let m = r;
  while (m.main !== null) m = m.main;
  while (m.prev !== null) m = m.prev;
  let h = headers.get(m);
  if (h === undefined) {
    h = newHeader(m);
    parseDigestHeader(m.headersIn.get(authorizationField(m)), h);
    headers.set(m, h);
  }
  return h;
}

// ---- nonces ---------------------------------------------------------------------------------

const NONCE_TIME_LEN = 12;

function md5(s: string): string {
  return createHash('md5').update(s, 'latin1').digest('hex');
}

function nonceHash(timeStr: string, opaque: string | undefined, realm: string): string {
  const h = createHash('sha1').update(table?.secret ?? serverSecret()).update(realm, 'latin1').update(timeStr, 'latin1');
  if (opaque !== undefined) h.update(opaque, 'latin1');
  return h.digest('hex');
}

/** gen_nonce: base64 of the time (request time, or the one-time counter), then the hash. */
function genNonce(micros: number, opaque: string | undefined, realm: string, conf: AuthDigestDirConfig): string {
  let t: bigint;
  if (conf.nonceLifetime !== 0) t = BigInt(micros);
  else if (table !== null) t = BigInt(table.nextOneTimeCounter());
  else t = 42n;
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(t);
  const timeStr = b.toString('base64');
  return timeStr + nonceHash(timeStr, opaque, realm);
}

// ---- the challenge ------------------------------------------------------------------------

function noteDigestFailure(r: Request, conf: AuthDigestDirConfig, resp: DigestHeader, staleIn: boolean): void {
  let stale = staleIn;
  let opaque = '';
  if (resp.opaque === undefined) {
    if (conf.checkNc || conf.nonceLifetime === 0) {
      resp.client = genClient(r);
      if (resp.client !== null) opaque = resp.client.key.toString(16);
    }
  } else {
    resp.client = getClient(r, resp.opaqueNum, true);
    if (resp.client === null) {
      // The client was dropped from the table (or never was): a new number, stale.
      resp.client = genClient(r);
      if (resp.client !== null) {
        opaque = resp.client.key.toString(16);
        stale = true;
        table?.noteRenewed();
      }
    } else {
      // (httpd 2.4.71 keeps the client's nonce-count: it starts again when the client uses
      // the newer nonce, see checkNc.)
      opaque = resp.opaque;
    }
  }
  const realm = authName(r) ?? '';
  const nonce = genNonce(r.startMicros, opaque, realm, conf);
  if (resp.client !== null && conf.nonceLifetime === 0) {
    resp.client.lastNonce = nonce;
    table?.save(resp.client);
  }
  const opaqueParam = opaque !== '' ? `, opaque="${opaque}"` : '';
  // No domain= for a proxy request.
  const domain = r.proxyreq !== 0 ? '' : conf.uriList ?? '';
  r.errHeadersOut.merge(r.proxyreq === PROXYREQ_PROXY ? 'Proxy-Authenticate' : 'WWW-Authenticate', `Digest realm="${realm}", nonce="${nonce}", algorithm=MD5${opaqueParam}${domain}${stale ? ', stale=true' : ''}, qop="auth"`);
}

/** ap_note_auth_failure for AuthType Digest. */
function noteAuthFailure(r: Request): void {
  const resp = headerOf(r);
  resp.neededAuth = true;
  noteDigestFailure(r, confOf(r), resp, false);
}

function confOf(r: Request): AuthDigestDirConfig {
  return self.dir(r) ?? createDirConfig();
}

// ---- check_authn ------------------------------------------------------------------------------

/** get_hash: the providers in order until one knows the user. */
function getHash(r: Request, user: string, realm: string, conf: AuthDigestDirConfig): MaybePromise<RealmHashResult> {
  let chain: readonly ProviderEntry[];
  if (conf.providers) {
    chain = conf.providers;
  } else {
    const dflt = lookupAuthnProvider(r.rt.ctx, AUTHN_DEFAULT_PROVIDER);
    if (!dflt || !dflt.getRealmHash) {
      r.log('auth_digest', APLOG_ERR, 'AH01770: No Authn provider configured');
      return { status: AUTH_GENERAL_ERROR };
    }
    chain = [{ name: AUTHN_DEFAULT_PROVIDER, provider: dflt }];
  }
  const step = (i: number): MaybePromise<RealmHashResult> => {
    for (; i < chain.length; i++) {
      const e = chain[i]!;
      r.notes.set(AUTHN_PROVIDER_NAME_NOTE, e.name);
      let res: MaybePromise<RealmHashResult>;
      try {
        res = e.provider.getRealmHash!(r, user, realm);
      } catch (err) {
        r.notes.delete(AUTHN_PROVIDER_NAME_NOTE);
        throw err;
      }
      if (res instanceof Promise) {
        const next = i + 1;
        return res.then((v) => {
          r.notes.delete(AUTHN_PROVIDER_NAME_NOTE);
          return v.status !== AUTH_USER_NOT_FOUND || next >= chain.length ? v : step(next);
        }, (err: unknown) => { r.notes.delete(AUTHN_PROVIDER_NAME_NOTE); throw err; });
      }
      r.notes.delete(AUTHN_PROVIDER_NAME_NOTE);
      if (res.status !== AUTH_USER_NOT_FOUND) return res;
    }
    return { status: AUTH_USER_NOT_FOUND };
  };
  return step(0);
}

interface ParsedUri {
  scheme: string | undefined;
  hostname: string | undefined;
  portStr: string | undefined;
  port: number;
  path: string | undefined;
  query: string | undefined;
  hostinfo: string | undefined;
}

/** apr_uri_parse, enough for the comparison: absolute URI, path, or authority (CONNECT). */
export function parseUri(u: string): ParsedUri | null {
  const out: ParsedUri = { scheme: undefined, hostname: undefined, portStr: undefined, port: 0, path: undefined, query: undefined, hostinfo: undefined };
  let rest = u;
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(rest);
  if (m !== null) {
    out.scheme = m[1];
    rest = rest.slice(m[0].length);
    let end = rest.search(/[/?]/);
    if (end < 0) end = rest.length;
    const hostinfo = rest.slice(0, end);
    out.hostinfo = hostinfo;
    rest = rest.slice(end);
    const at = hostinfo.lastIndexOf('@');
    const hp = at >= 0 ? hostinfo.slice(at + 1) : hostinfo;
    let colon: number;
    if (hp.startsWith('[')) {
      const close = hp.indexOf(']');
      if (close < 0) return null;
      out.hostname = hp.slice(1, close);
      colon = hp[close + 1] === ':' ? close + 1 : -1;
    } else {
      colon = hp.lastIndexOf(':');
      out.hostname = colon >= 0 ? hp.slice(0, colon) : hp;
    }
    if (colon >= 0) {
      const ps = hp.slice(colon + 1);
      if (ps !== '') {
        if (!/^[0-9]+$/.test(ps)) return null;
        out.portStr = ps;
        out.port = Number(ps);
        if (out.port > 65535) return null;
      }
    }
  }
  const q = rest.indexOf('?');
  const p = q < 0 ? rest : rest.slice(0, q);
  if (p !== '' || m === null) out.path = p;
  if (q >= 0) out.query = rest.slice(q + 1);
  return out;
}

function defaultPort(r: Request): number {
  return (r.server.scheme ?? 'http').toLowerCase() === 'https' ? 443 : 80;
}

/** The uri attribute against the request line (the request-uri may have been rewritten by a
 *  proxy, so a plain comparison is followed by a component one). */
function checkUri(r: Request, resp: DigestHeader): number {
  const uri = resp.uri!;
  if (uri === resp.rawRequestUri) return OK;
  const src = parseUri(resp.rawRequestUri) ?? { scheme: undefined, hostname: undefined, portStr: undefined, port: 0, path: resp.rawRequestUri, query: undefined, hostinfo: undefined };
  const rUri: ParsedUri = {
    scheme: src.scheme !== undefined && src.scheme !== '' ? src.scheme : 'http',
    hostname: src.hostname !== undefined && src.hostname !== '' ? unescapeUrl(src.hostname) : r.rt.serverName(r),
    portStr: src.portStr,
    port: src.portStr !== undefined && src.portStr !== '' ? src.port : r.rt.serverPort(r),
    path: src.path !== undefined && src.path !== '' ? unescapeUrl(src.path) : src.path,
    query: src.query !== undefined && src.query !== '' ? unescapeUrl(src.query) : src.query,
    hostinfo: src.hostinfo,
  };
  const d = parseUri(uri);
  if (d === null) {
    r.log('auth_digest', APLOG_ERR, `AH01783: invalid uri <${uri}> in Authorization header`);
    return 400;
  }
  if (d.hostname !== undefined) d.hostname = unescapeUrl(d.hostname);
  if (d.path !== undefined) d.path = unescapeUrl(d.path);
  if (d.query !== undefined) {
    d.query = unescapeUrl(d.query);
  } else if (rUri.query !== undefined && r.subprocessEnv.has('AuthDigestEnableQueryStringHack')) {
    // MSIE left the query string out of the uri attribute (and hashed the uri as it sent it).
    r.log('auth_digest', APLOG_INFO, `AH01784: applying AuthDigestEnableQueryStringHack to uri <${resp.rawRequestUri}>`);
    d.query = rUri.query;
  }
  if (r.method === 'CONNECT') {
    if (rUri.hostinfo === undefined || uri !== rUri.hostinfo) {
      r.log('auth_digest', APLOG_ERR, `AH01785: uri mismatch - <${uri}> does not match request-uri <${rUri.hostinfo ?? '(null)'}>`);
      return 400;
    }
    return OK;
  }
  const hasHost = d.hostname !== undefined && d.hostname !== '';
  const mismatch =
    (hasHost && d.hostname!.toLowerCase() !== rUri.hostname!.toLowerCase())
    || (d.portStr !== undefined && d.port !== rUri.port)
    || (hasHost && d.portStr === undefined && rUri.port !== defaultPort(r))
    || (d.path !== rUri.path
      && (d.path === undefined || rUri.path === undefined || d.path !== rUri.path)
      && !(d.path !== undefined && rUri.path === undefined && src.hostname !== undefined && d.path === '*'))
    || (d.query !== rUri.query && (d.query === undefined || rUri.query === undefined || d.query !== rUri.query));
  if (mismatch) {
    r.log('auth_digest', APLOG_ERR, `AH01786: uri mismatch - <${uri}> does not match request-uri <${resp.rawRequestUri}>`);
    return 400;
  }
  return OK;
}

/** check_nonce: the hash, the age, one-time nonces. */
function checkNonce(r: Request, resp: DigestHeader, conf: AuthDigestDirConfig, realm: string): number {
  const nonce = resp.nonce!;
  const timeStr = nonce.slice(0, NONCE_TIME_LEN);
  const hash = nonceHash(timeStr, resp.opaque, realm);
  const tb = Buffer.from(timeStr, 'base64');
  const t = tb.length >= 8 ? Number(tb.readBigInt64LE(0)) : 0;
  resp.nonceTime = t;
  if (hash !== nonce.slice(NONCE_TIME_LEN)) {
    r.log('auth_digest', APLOG_ERR, `AH01776: invalid nonce ${nonce} received - hash is not ${hash}`);
    noteDigestFailure(r, conf, resp, true);
    return 401;
  }
  const dt = r.startMicros - t;
  if (conf.nonceLifetime > 0 && dt < 0) {
    r.log('auth_digest', APLOG_ERR, `AH01777: invalid nonce ${nonce} received - user attempted time travel`);
    noteDigestFailure(r, conf, resp, true);
    return 401;
  }
  if (conf.nonceLifetime > 0) {
    if (dt > conf.nonceLifetime * 1e6) {
      r.log('auth_digest', APLOG_INFO, `AH01778: user ${r.user ?? '(null)'}: nonce expired (${Math.floor(dt / 1e6).toFixed(2)} seconds old - max lifetime ${conf.nonceLifetime.toFixed(2)}) - sending new nonce`);
      noteDigestFailure(r, conf, resp, true);
      return 401;
    }
  } else if (conf.nonceLifetime === 0) {
    const client = resp.opaque !== undefined ? getClient(r, resp.opaqueNum, false) : null;
    if (client !== null && client.lastNonce !== nonce) {
      r.log('auth_digest', APLOG_INFO, `AH01779: user ${r.user ?? '(null)'}: one-time-nonce ${nonce} already used - sending new nonce`);
      noteDigestFailure(r, conf, resp, true);
      return 401;
    }
    resp.client = client;
  }
  return OK;
}

/** check_nc: with AuthDigestNcCheck, the nonce-count must rise. */
function checkNc(r: Request, resp: DigestHeader, conf: AuthDigestDirConfig): number {
  if (!conf.checkNc || table === null) return OK;
  const snc = resp.nonceCount!;
  const { value: nc, rest } = parseLong(snc, 16);
  if (rest !== '' && !/^[ \t\n\v\f\r]/.test(rest)) {
    r.log('auth_digest', APLOG_ERR, `AH01773: invalid nc ${snc} received - not a number`);
    noteDigestFailure(r, conf, resp, false);
    return 401;
  }
  const client = resp.client ?? getClient(r, resp.opaqueNum, false);
  if (client === null) {
    r.log('auth_digest', APLOG_ERR, `AH10618: client ${resp.opaqueNum} is no longer known - sending new nonce`);
    noteDigestFailure(r, conf, resp, true);
    return 401;
  }
  // The count rises within one nonce; a newer nonce (a later time) starts it again, an older
  // one is refused (measured on httpd 2.4.71).
  const fresh = client.ncTime === 0 || resp.nonceTime > client.ncTime;
  if (!fresh && (resp.nonceTime !== client.ncTime || nc <= client.nonceCount)) {
    r.log('auth_digest', APLOG_ERR, `AH01774: Warning, possible replay attack: nonce-count check failed: ${nc} is not above ${client.nonceCount} for nonce ${resp.nonce!}`);
    noteDigestFailure(r, conf, resp, false);
    return 401;
  }
  client.nonceCount = nc;
  client.ncTime = resp.nonceTime;
  table.save(client);
  resp.client = client;
  return OK;
}

function authenticateDigestUser(r: Request): MaybePromise<number> {
  const type = authType(r);
  if (type === undefined || type.toLowerCase() !== 'digest') return DECLINED;
  const realm = authName(r);
  if (realm === undefined) {
    r.log('auth_digest', APLOG_ERR, `AH01780: need AuthName: ${r.uri}`);
    return 500;
  }
  const resp = headerOf(r);
  resp.neededAuth = true;
  const conf = confOf(r);

  if (resp.sts !== HdrStatus.Valid) {
    if (resp.sts === HdrStatus.NotDigest) {
      r.log('auth_digest', APLOG_ERR, `AH01781: client used wrong authentication scheme \`${resp.scheme}': ${r.uri}`);
    } else if (resp.sts === HdrStatus.Invalid) {
      r.log('auth_digest', APLOG_ERR, `AH01782: missing user, realm, nonce, uri, digest, cnonce, or nonce_count in authorization header: ${r.uri}`);
    }
    noteDigestFailure(r, conf, resp, false);
    return 401;
  }

  r.user = resp.username!;
  r.apAuthType = 'Digest';

  const u = checkUri(r, resp);
  if (u !== OK) return u;

  if (resp.opaque !== undefined && resp.opaqueNum === 0) {
    r.log('auth_digest', APLOG_ERR, `AH01787: received invalid opaque - got \`${resp.opaque}'`);
    noteDigestFailure(r, conf, resp, false);
    return 401;
  }
  if (resp.realm !== realm) {
    r.log('auth_digest', APLOG_ERR, `AH01788: realm mismatch - got \`${resp.realm!}' but expected \`${realm}'`);
    noteDigestFailure(r, conf, resp, false);
    return 401;
  }
  if (resp.algorithm !== undefined && resp.algorithm.toLowerCase() !== 'md5') {
    r.log('auth_digest', APLOG_ERR, `AH01789: unknown algorithm \`${resp.algorithm}' received: ${r.uri}`);
    noteDigestFailure(r, conf, resp, false);
    return 401;
  }

  const finish = (res: RealmHashResult): number => {
    const user = r.user!;
    const status: AuthnStatus = res.status;
    if (status === AUTH_USER_NOT_FOUND) {
      r.log('auth_digest', APLOG_ERR, `AH01790: user \`${user}' in realm \`${realm}' not found: ${r.uri}`);
      noteDigestFailure(r, conf, resp, false);
      return 401;
    }
    if (status === AUTH_DENIED) {
      r.log('auth_digest', APLOG_ERR, `AH01791: user \`${user}' in realm \`${realm}' denied by provider: ${r.uri}`);
      noteDigestFailure(r, conf, resp, false);
      return 401;
    }
    if (status !== AUTH_USER_FOUND) return 500;
    resp.ha1 = res.hash ?? '';
    if (resp.messageQop === undefined || resp.messageQop.toLowerCase() !== 'auth') {
      r.log('auth_digest', APLOG_ERR, `AH10560: invalid or missing qop value '${resp.messageQop ?? '(null)'}', RFC 2069 is no longer supported: ${r.uri}`);
      noteDigestFailure(r, conf, resp, false);
      return 401;
    }
    const ha2 = md5(`${resp.method}:${resp.uri!}`);
    const expected = md5(`${resp.ha1}:${resp.nonce!}:${resp.nonceCount!}:${resp.cnonce!}:${resp.messageQop}:${ha2}`);
    if (resp.digest !== expected) {
      r.log('auth_digest', APLOG_ERR, `AH01794: user ${user}: password mismatch: ${r.uri}`);
      noteDigestFailure(r, conf, resp, false);
      return 401;
    }
    const n = checkNonce(r, resp, conf, realm);
    if (n !== OK) return n;
    return checkNc(r, resp, conf);
  };
  const res = getHash(r, resp.username!, realm, conf);
  return res instanceof Promise ? res.then(finish) : finish(res);
}

// ---- Authentication-Info (fixups) -------------------------------------------------------------

function addAuthInfo(r: Request): number {
  const resp = headers.get(r);
  if (resp === undefined || !resp.neededAuth || resp.sts !== HdrStatus.Valid) return OK;
  const conf = confOf(r);
  let nextnonce = '';
  if (conf.nonceLifetime > 0) {
    // A new nonce when this one expires within 30 seconds.
    if (r.startMicros - resp.nonceTime > (conf.nonceLifetime - NEXTNONCE_DELTA) * 1e6) {
      nextnonce = `, nextnonce="${genNonce(r.startMicros, resp.opaque, authName(r) ?? '', conf)}"`;
    }
  } else if (conf.nonceLifetime === 0 && resp.client !== null) {
    const nonce = genNonce(0, resp.opaque, authName(r) ?? '', conf);
    nextnonce = `, nextnonce="${nonce}"`;
    resp.client.lastNonce = nonce;
    table?.save(resp.client);
  }
  const ha2 = md5(`:${resp.uri!}`);
  const rspauth = md5(`${resp.ha1}:${resp.nonce!}:${resp.nonceCount ?? ''}:${resp.cnonce ?? ''}:${resp.messageQop ?? ''}:${ha2}`);
  let ai = `rspauth="${rspauth}"${nextnonce}`;
  if (resp.cnonce !== undefined) ai += `, cnonce="${resp.cnonce.replace(/(?<!\\)"/g, '\\"')}"`;
  if (resp.nonceCount !== undefined) ai += `, nc=${resp.nonceCount}`;
  if (resp.messageQop !== undefined) ai += `, qop=${resp.messageQop}`;
  r.headersOut.merge(r.proxyreq === PROXYREQ_PROXY ? 'Proxy-Authentication-Info' : 'Authentication-Info', ai);
  return OK;
}

// ---- the module -------------------------------------------------------------------------------

const digestHandler: AuthTypeHandler = { noteAuthFailure };

const providers: ProviderDecl[] = [
  { group: 'auth_type', name: 'Digest', version: '0', provider: digestHandler },
];

const self = defineModule<unknown, AuthDigestDirConfig>({
  name: 'auth_digest_module',
  source: 'mod_auth_digest.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  directives: [
    directive({ name: 'AuthDigestProvider', args: 'ITERATE', where: OR_AUTHCFG, help: 'specify the auth providers for a directory or location', handler: addAuthnProvider }),
    directive({ name: 'AuthDigestQop', args: 'ITERATE', where: OR_AUTHCFG, help: 'A list of quality-of-protection options', handler: setQop }),
    directive({ name: 'AuthDigestNonceLifetime', args: 'TAKE1', where: OR_AUTHCFG, help: 'Maximum lifetime of the server nonce (seconds)', handler: setNonceLifetime }),
    directive({ name: 'AuthDigestNcCheck', args: 'FLAG', where: OR_AUTHCFG, help: 'Whether or not to check the nonce-count sent by the client', handler: setNcCheck }),
    directive({ name: 'AuthDigestAlgorithm', args: 'TAKE1', where: OR_AUTHCFG, help: 'The algorithm used for the hash calculation', handler: setAlgorithm }),
    directive({ name: 'AuthDigestDomain', args: 'ITERATE', where: OR_AUTHCFG, help: "A list of URI's which belong to the same protection space as the current URI", handler: setUriList }),
    directive({ name: 'AuthDigestShmemSize', args: 'TAKE1', where: RSRC_CONF, help: 'The amount of shared memory to allocate for keeping track of clients', handler: setShmemSize }),
  ],
  hooks: {
    postReadRequest: { fn: parseHeader, order: HOOK_MIDDLE },
    checkUserId: { fn: authenticateDigestUser, order: HOOK_MIDDLE },
    fixups: { fn: addAuthInfo, order: HOOK_MIDDLE },
  },
  configHooks: { preConfig, postConfig, cleanup },
  providers,
});

export default self;
