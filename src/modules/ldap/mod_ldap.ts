// mod_ldap (modules/ldap/util_ldap.c): pooled LDAP connections and the search/compare cache
// mod_authnz_ldap works through (httpd's uldap_* optional functions, exported here as
// `uldap`). The LDAP client is ldapts. Connections are kept per (host, port, bind DN,
// password, deref, security) and handed to one request at a time, rebinding after a user
// bind; operations retry LDAPRetries times when the server is down, as util_ldap does. The
// cache (LDAPCacheEntries/TTL for searches, LDAPOpCacheEntries/TTL for compares) lives in
// the worker process.

import * as fs from 'node:fs';
import * as net from 'node:net';
import { Client, ResultCodeError, type Entry } from 'ldapts';
import {
  MODULE_API_VERSION, RSRC_CONF, OR_AUTHCFG, defineModule, directive,
} from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import { APLOG_DEBUG, APLOG_ERR, levelFor } from '../../server/log/levels.js';
import { parseTimeout } from '../cache/socache-common.js';

// ---- result codes (OpenLDAP's) --------------------------------------------------------------

export const LDAP_SUCCESS = 0;
export const LDAP_OPERATIONS_ERROR = 1;
export const LDAP_COMPARE_FALSE = 5;
export const LDAP_COMPARE_TRUE = 6;
export const LDAP_NO_SUCH_ATTRIBUTE = 16;
export const LDAP_CONSTRAINT_VIOLATION = 19;
export const LDAP_NO_SUCH_OBJECT = 32;
export const LDAP_INAPPROPRIATE_AUTH = 48;
export const LDAP_INVALID_CREDENTIALS = 49;
export const LDAP_INSUFFICIENT_ACCESS = 50;
export const LDAP_OTHER = 80;
export const LDAP_FILTER_ERROR = -7;
export const LDAP_SERVER_DOWN = -1;
export const LDAP_TIMEOUT = -5;
export const LDAP_CONNECT_ERROR = -11;

const ERR_STRINGS: Record<number, string> = {
  0: 'Success', 1: 'Operations error', 2: 'Protocol error', 3: 'Time limit exceeded', 4: 'Size limit exceeded',
  5: 'Compare False', 6: 'Compare True', 7: 'Authentication method not supported', 8: 'Strong(er) authentication required',
  10: 'Referral', 11: 'Administrative limit exceeded', 12: 'Critical extension is unavailable',
  13: 'Confidentiality required', 14: 'SASL bind in progress', 16: 'No such attribute', 17: 'Undefined attribute type',
  18: 'Inappropriate matching', 19: 'Constraint violation', 20: 'Type or value exists', 21: 'Invalid syntax',
  32: 'No such object', 33: 'Alias problem', 34: 'Invalid DN syntax', 35: 'Entry is a leaf',
  36: 'Alias dereferencing problem', 48: 'Inappropriate authentication', 49: 'Invalid credentials',
  50: 'Insufficient access', 51: 'Server is busy', 52: 'Server is unavailable', 53: 'Server is unwilling to perform',
  54: 'Loop detected', 64: 'Naming violation', 65: 'Object class violation', 66: 'Operation not allowed on non-leaf',
  67: 'Operation not allowed on RDN', 68: 'Already exists', 69: 'Cannot modify object class',
  71: 'Operation affects multiple DSAs', 80: 'Other (e.g., implementation specific) error',
  [-1]: "Can't contact LDAP server", [-2]: 'Local error', [-3]: 'Encoding error', [-4]: 'Decoding error',
  [-5]: 'Timed out', [-6]: 'Unknown authentication method', [-7]: 'Bad search filter', [-11]: 'Connect error',
};

/** ldap_err2string. */
export function ldapErr2String(code: number): string {
  return ERR_STRINGS[code] ?? 'Unknown error';
}

function isServerDown(code: number): boolean {
  return code === LDAP_SERVER_DOWN || code === LDAP_CONNECT_ERROR;
}

/** The result code of an ldapts failure: its LDAP code, or server down / timeout. */
function codeOf(e: unknown): number {
  if (e instanceof ResultCodeError) return e.code;
  const msg = e instanceof Error ? e.message : String(e);
  if (/timeout|timed out/i.test(msg)) return LDAP_TIMEOUT;
  if (/filter/i.test(msg)) return LDAP_FILTER_ERROR;
  return LDAP_SERVER_DOWN;
}

// ---- configuration ------------------------------------------------------------------------

export const APR_LDAP_NONE = 0;
export const APR_LDAP_SSL = 1;
export const APR_LDAP_STARTTLS = 2;

export type Deref = 'never' | 'search' | 'find' | 'always';

interface TrustedCert { readonly type: string; readonly path: string; readonly password: string | undefined }

export interface LdapServerConfig {
  cacheBytes: number;
  cacheFile: string | undefined;
  /** ms */
  searchCacheTtl: number;
  searchCacheSize: number;
  compareCacheTtl: number;
  compareCacheSize: number;
  globalCerts: TrustedCert[];
  secure: number;
  secureSet: boolean;
  /** seconds */
  connectionTimeout: number;
  /** seconds; 0 = none */
  opTimeout: number;
  verifySvrCert: boolean;
  /** ms; -1 = unlimited, undefined = not set */
  connectionPoolTtl: number | undefined;
  retries: number;
  /** ms */
  retryDelay: number;
  debugLevel: number;
}

export interface LdapDirConfig {
  chaseReferrals: 'on' | 'off' | 'default';
  referralHopLimit: number | undefined;
}

function createServerConfig(): LdapServerConfig {
  return {
    cacheBytes: 500000, cacheFile: undefined, searchCacheTtl: 600_000, searchCacheSize: 1024,
    compareCacheTtl: 600_000, compareCacheSize: 1024, globalCerts: [], secure: APR_LDAP_NONE, secureSet: false,
    connectionTimeout: 10, opTimeout: 60, verifySvrCert: true, connectionPoolTtl: undefined, retries: 3,
    retryDelay: 0, debugLevel: 0,
  };
}

/** util_ldap_merge_config: most settings are global (GLOBAL_ONLY), so the main server's win. */
function mergeServerConfig(base: Readonly<LdapServerConfig>, add: Readonly<LdapServerConfig>): LdapServerConfig {
  return {
    cacheBytes: base.cacheBytes,
    cacheFile: base.cacheFile,
    searchCacheTtl: base.searchCacheTtl,
    searchCacheSize: base.searchCacheSize,
    compareCacheTtl: base.compareCacheTtl,
    compareCacheSize: base.compareCacheSize,
    globalCerts: [...base.globalCerts, ...add.globalCerts],
    secure: add.secureSet ? add.secure : base.secure,
    secureSet: add.secureSet || base.secureSet,
    connectionTimeout: base.connectionTimeout,
    opTimeout: base.opTimeout,
    verifySvrCert: base.verifySvrCert,
    connectionPoolTtl: add.connectionPoolTtl ?? base.connectionPoolTtl,
    retries: base.retries,
    retryDelay: base.retryDelay,
    debugLevel: base.debugLevel,
  } satisfies { [K in keyof Required<LdapServerConfig>]: LdapServerConfig[K] };
}

function createDirConfig(): LdapDirConfig {
  return { chaseReferrals: 'on', referralHopLimit: undefined };
}

// ---- directives ---------------------------------------------------------------------------

type Cmd = CmdParms<LdapServerConfig, LdapDirConfig>;

function atol(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  return m === null ? 0 : Number(m[1]);
}

function globalOnly(cmd: Cmd): string | undefined {
  return cmd.checkContext(GLOBAL_ONLY);
}

// DIFFERENCE: no shared memory between worker processes; each keeps its own cache
// (docs/differences.md). LDAPSharedCacheSize/File are checked and logged as in httpd.
function setCacheBytes(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.cacheBytes = atol(v);
  cmd.log('ldap', APLOG_DEBUG, `AH01297: ldap cache: Setting shared memory cache size to ${cmd.srv.cacheBytes} bytes.`);
  return undefined;
}

function setCacheFile(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.cacheFile = cmd.serverRootRelative(v);
  cmd.log('ldap', APLOG_DEBUG, `AH01298: LDAP cache: Setting shared memory cache file to ${cmd.srv.cacheFile}.`);
  return undefined;
}

function setCacheTtl(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.searchCacheTtl = atol(v) * 1000;
  cmd.log('ldap', APLOG_DEBUG, `AH01299: ldap cache: Setting cache TTL to ${atol(v) * 1000000} microseconds.`);
  return undefined;
}

function setCacheEntries(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.searchCacheSize = Math.max(0, atol(v));
  cmd.log('ldap', APLOG_DEBUG, `AH01300: ldap cache: Setting search cache size to ${cmd.srv.searchCacheSize} entries.`);
  return undefined;
}

function setOpCacheTtl(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.compareCacheTtl = atol(v) * 1000;
  cmd.log('ldap', APLOG_DEBUG, `AH01301: ldap cache: Setting operation cache TTL to ${atol(v) * 1000000} microseconds.`);
  return undefined;
}

function setOpCacheEntries(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.compareCacheSize = Math.max(0, atol(v));
  cmd.log('ldap', APLOG_DEBUG, `AH01302: ldap cache: Setting operation cache size to ${cmd.srv.compareCacheSize} entries.`);
  return undefined;
}

const CERT_TYPES = ['CA_DER', 'CA_BASE64', 'CA_CERT7_DB', 'CA_SECMOD', 'CERT_DER', 'CERT_BASE64', 'CERT_PFX', 'CERT_KEY3_DB', 'CERT_NICKNAME', 'KEY_DER', 'KEY_BASE64', 'KEY_PFX'];

function setTrustedGlobalCert(cmd: Cmd, type: string, file: string, password: string | undefined): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  const t = type.toUpperCase();
  if (!CERT_TYPES.includes(t)) {
    return `The certificate type ${type} is not recognised. It should be one of CA_DER, CA_BASE64, CA_CERT7_DB, CA_SECMOD, CERT_DER, CERT_BASE64, CERT_KEY3_DB, CERT_NICKNAME, KEY_DER, KEY_BASE64`;
  }
  cmd.log('ldap', APLOG_DEBUG, `AH01303: LDAP: SSL trusted global cert - ${file} (type ${type})`);
  let p = file;
  if (t !== 'CERT_NICKNAME') {
    p = cmd.serverRootRelative(file);
    if (!fs.existsSync(p)) {
      cmd.log('ldap', APLOG_ERR, `AH01304: LDAP: Could not open SSL trusted certificate authority file - ${p}`);
      return 'Invalid global certificate file path';
    }
  }
  cmd.srv.globalCerts.push({ type: t, path: p, password });
  return undefined;
}

function setTrustedMode(cmd: Cmd, mode: string): string | undefined {
  cmd.log('ldap', APLOG_DEBUG, `AH01307: LDAP: SSL trusted mode - ${mode}`);
  const m = mode.toUpperCase();
  if (m === 'NONE') cmd.srv.secure = APR_LDAP_NONE;
  else if (m === 'SSL') cmd.srv.secure = APR_LDAP_SSL;
  else if (m === 'TLS' || m === 'STARTTLS') cmd.srv.secure = APR_LDAP_STARTTLS;
  else return 'Invalid LDAPTrustedMode setting: must be one of NONE, SSL, or TLS/STARTTLS';
  cmd.srv.secureSet = true;
  return undefined;
}

function setVerifySrvCert(cmd: Cmd, on: boolean): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.log('ldap', APLOG_DEBUG, `AH01308: LDAP: SSL verify server certificate - ${on ? 'TRUE' : 'FALSE'}`);
  cmd.srv.verifySvrCert = on;
  return undefined;
}

function setConnectionTimeout(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.connectionTimeout = atol(v);
  cmd.log('ldap', APLOG_DEBUG, `AH01309: ldap connection: Setting connection timeout to ${cmd.srv.connectionTimeout} seconds.`);
  return undefined;
}

// DIFFERENCE: ldapts does not chase referrals (docs/differences.md).
function setChaseReferrals(cmd: Cmd, v: string): string | undefined {
  cmd.log('ldap', APLOG_DEBUG, `AH01311: LDAP: Setting referral chasing ${v}`);
  const l = v.toLowerCase();
  if (l !== 'on' && l !== 'off' && l !== 'default') return "LDAPReferrals must be 'on', 'off', or 'default'";
  cmd.dir.chaseReferrals = l;
  return undefined;
}

function setReferralHopLimit(cmd: Cmd, v: string): string | undefined {
  const n = atol(v);
  if (n <= 0) return "LDAPReferralHopLimit must be greater than zero (Use 'LDAPReferrals Off' to disable referral chasing)";
  cmd.dir.referralHopLimit = n;
  cmd.log('ldap', APLOG_DEBUG, `AH01312: LDAP: Limit chased referrals to maximum of ${n} hops.`);
  return undefined;
}

// DIFFERENCE: ldapts has no debug level to set (docs/differences.md).
function setDebugLevel(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.debugLevel = atol(v);
  return undefined;
}

function setOpTimeout(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  const m = /^[ \t\n\v\f\r]*[+-]?\d+$/.exec(v);
  if (m === null) return 'Timeout not numerical';
  const n = Number(v.trim());
  if (n < 0) return 'Timeout must be non-negative';
  cmd.srv.opTimeout = n;
  cmd.log('ldap', APLOG_DEBUG, `AH01313: ldap connection: Setting op timeout to ${n} seconds.`);
  return undefined;
}

function setConnTtl(cmd: Cmd, v: string): string | undefined {
  let ms: number | undefined = -1;
  if (!v.startsWith('-')) {
    ms = parseTimeout(v);
    if (ms === undefined) return 'LDAPConnectionPoolTTL has wrong format';
  }
  cmd.srv.connectionPoolTtl = ms < 0 ? -1 : ms;
  return undefined;
}

function setRetryDelay(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  if (v.startsWith('-') && parseTimeout(v.slice(1)) !== undefined) return 'LDAPRetryDelay must be >= 0';
  const ms = parseTimeout(v);
  if (ms === undefined) return 'LDAPRetryDelay has wrong format';
  cmd.srv.retryDelay = ms;
  return undefined;
}

function setRetries(cmd: Cmd, v: string): string | undefined {
  const err = globalOnly(cmd); if (err) return err;
  cmd.srv.retries = atol(v) | 0;
  if (cmd.srv.retries < 0) return 'LDAPRetries must be >= 0';
  return undefined;
}

// ---- connections --------------------------------------------------------------------------

/** A connection handle (util_ldap_connection_t) held by one request at a time. */
export interface Ldc {
  readonly key: string;
  readonly hosts: readonly string[];
  readonly port: number;
  readonly binddn: string | undefined;
  readonly bindpw: string | undefined;
  readonly deref: Deref;
  readonly secure: number;
  client: Client | null;
  bound: boolean;
  mustRebind: boolean;
  reason: string;
  lastUsed: number;
  inUse: boolean;
  st: LdapServerConfig;
  chaseReferrals: string;
  /** Left over from a configuration cleaned up while a request held it: unbound when given back. */
  retired?: boolean;
}

const pool = new Map<string, Ldc[]>();

function st(r: Request): LdapServerConfig {
  return self.server(r.server) ?? createServerConfig();
}

/** uldap_connection_find: a free pooled handle for these parameters, or a new one. */
function connectionFind(r: Request, host: string, port: number, binddn: string | undefined, bindpw: string | undefined, deref: Deref, secure: number): Ldc {
  const conf = st(r);
  const sec = secure === -1 ? conf.secure : secure;
  const key = [host, port, binddn ?? '', bindpw ?? '', deref, sec].join('\0');
  let list = pool.get(key);
  if (!list) { list = []; pool.set(key, list); }
  const now = Date.now();
  for (const l of list) {
    if (l.inUse) continue;
    // LDAPConnectionPoolTTL: a connection idle longer is reopened.
    const ttl = conf.connectionPoolTtl ?? -1;
    if (ttl >= 0 && l.client !== null && now - l.lastUsed > ttl) unbind(l);
    l.inUse = true;
    l.st = conf;
    return l;
  }
  const ldc: Ldc = {
    key, hosts: host.split(/\s+/).filter((h) => h !== ''), port, binddn, bindpw, deref, secure: sec,
    client: null, bound: false, mustRebind: false, reason: '', lastUsed: now, inUse: true, st: conf,
    chaseReferrals: (self.dir(r) ?? createDirConfig()).chaseReferrals,
  };
  list.push(ldc);
  return ldc;
}

/** uldap_connection_close: back to the pool (the connection stays open). */
function connectionClose(ldc: Ldc): void {
  ldc.inUse = false;
  ldc.lastUsed = Date.now();
  if (ldc.retired === true) unbind(ldc);
}

/** uldap_connection_cleanup for every pooled handle (httpd registers it on the pool the
 *  handles live in): the end of the configuration (stop, restart) unbinds them all, so no open
 *  LDAP connection keeps the process running; a handle a request still holds is unbound when
 *  given back. */
function cleanup(): void {
  for (const list of pool.values()) {
    for (const l of list) {
      if (l.inUse) l.retired = true;
      else unbind(l);
    }
  }
  pool.clear();
}

function unbind(ldc: Ldc): void {
  const c = ldc.client;
  ldc.client = null;
  ldc.bound = false;
  if (c) c.unbind().catch(() => undefined);
}

function tlsOptions(conf: LdapServerConfig): import('node:tls').ConnectionOptions {
  const ca: Buffer[] = [];
  for (const c of conf.globalCerts) {
    if (c.type === 'CA_BASE64' || c.type === 'CA_DER') {
      try {
        const data = fs.readFileSync(c.path);
        if (c.type === 'CA_DER') ca.push(Buffer.from(`-----BEGIN CERTIFICATE-----\n${data.toString('base64')}\n-----END CERTIFICATE-----\n`));
        else ca.push(data);
      } catch { /* reported when the directive was read */ }
    }
  }
  return { rejectUnauthorized: conf.verifySvrCert, ...(ca.length > 0 ? { ca } : {}) };
}

async function openClient(ldc: Ldc, host: string): Promise<Client> {
  const conf = ldc.st;
  const scheme = ldc.secure === APR_LDAP_SSL ? 'ldaps' : 'ldap';
  const h = host;
  const url = h.includes(':') && !h.startsWith('[') && /:\d+$/.test(h) ? `${scheme}://${h}` : `${scheme}://${h}:${ldc.port}`;
  const name = h.replace(/:\d+$/, '');
  // Node refuses an IP address as a TLS server name (SNI); the certificate is still checked.
  const tls = { ...tlsOptions(conf), ...(net.isIP(name) === 0 ? { servername: name } : {}) };
  const client = new Client({
    url,
    timeout: conf.opTimeout > 0 ? conf.opTimeout * 1000 : 0,
    connectTimeout: conf.connectionTimeout > 0 ? conf.connectionTimeout * 1000 : 0,
    // ldapts speaks TLS from the start whenever it is given TLS options.
    ...(ldc.secure === APR_LDAP_SSL ? { tlsOptions: tls } : {}),
    strictDN: false,
  });
  if (ldc.secure === APR_LDAP_STARTTLS) await client.startTLS(tls);
  return client;
}

/** uldap_connection_open: connect (trying each host) and bind as the handle's DN. */
async function connectionOpen(ldc: Ldc): Promise<number> {
  if (ldc.bound && !ldc.mustRebind && ldc.client) {
    ldc.reason = 'LDAP: connection open successful (already bound)';
    return LDAP_SUCCESS;
  }
  let rc = LDAP_SERVER_DOWN;
  let failures = 0;
  while (failures <= ldc.st.retries) {
    if (failures > 0 && ldc.st.retryDelay > 0) await sleep(ldc.st.retryDelay);
    rc = await simpleBind(ldc, ldc.binddn ?? '', ldc.bindpw ?? '');
    if (rc === LDAP_SUCCESS) break;
    failures++;
    if (!isServerDown(rc) && rc !== LDAP_TIMEOUT) break;
    unbind(ldc);
  }
  if (rc !== LDAP_SUCCESS) {
    unbind(ldc);
    ldc.reason = 'LDAP: ldap_simple_bind() failed';
  } else {
    ldc.bound = true;
    ldc.mustRebind = false;
    ldc.reason = 'LDAP: connection open successful';
  }
  return rc;
}

function sleep(ms: number): Promise<void> {
  return new Promise((res) => setTimeout(res, ms));
}

/** uldap_simple_bind, opening the client first when there is none. */
async function simpleBind(ldc: Ldc, dn: string, pw: string): Promise<number> {
  if (ldc.client === null) {
    let lastErr: unknown;
    for (const host of ldc.hosts.length > 0 ? ldc.hosts : ['localhost']) {
      try {
        const c = await openClient(ldc, host);
        ldc.client = c;
        break;
      } catch (e) { lastErr = e; }
    }
    if (ldc.client === null) return codeOf(lastErr);
  }
  try {
    await ldc.client.bind(dn, pw);
    return LDAP_SUCCESS;
  } catch (e) {
    const code = codeOf(e);
    if (code === LDAP_SERVER_DOWN && ldc.hosts.length > 1) {
      // Try the other hosts of the list.
      unbind(ldc);
      for (const host of ldc.hosts.slice(1)) {
        try {
          const c = await openClient(ldc, host);
          await c.bind(dn, pw);
          ldc.client = c;
          return LDAP_SUCCESS;
        } catch (e2) {
          const c2 = codeOf(e2);
          if (c2 !== LDAP_SERVER_DOWN) return c2;
        }
      }
    }
    return code;
  }
}

// ---- the cache ----------------------------------------------------------------------------

interface SearchNode { dn: string; bindpw: string | undefined; vals: (string | undefined)[] | undefined; lastbind: number }
interface CompareNode { result: number; lastcompare: number; sgl: string[] | null | undefined }
interface UrlNode {
  search: Map<string, SearchNode>;
  compare: Map<string, CompareNode>;
  dnCompare: Map<string, string>;
}

const urlCache = new Map<string, UrlNode>();

function urlNode(conf: LdapServerConfig, url: string): UrlNode | undefined {
  if (conf.searchCacheSize <= 0 && conf.compareCacheSize <= 0) return undefined;
  let n = urlCache.get(url);
  if (!n) { n = { search: new Map(), compare: new Map(), dnCompare: new Map() }; urlCache.set(url, n); }
  return n;
}

function cacheInsert<V>(m: Map<string, V>, max: number, key: string, v: V): void {
  if (max <= 0) return;
  m.delete(key);
  while (m.size >= max) m.delete(m.keys().next().value!);
  m.set(key, v);
}

/** Empties every cache (tests, and a restart). */
export function clearLdapCaches(): void {
  urlCache.clear();
}

function attrValues(entry: Entry, attr: string): string[] {
  const want = attr.toLowerCase();
  for (const [k, v] of Object.entries(entry)) {
    if (k.toLowerCase() !== want) continue;
    const arr = Array.isArray(v) ? v : [v];
    return arr.map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
  }
  return [];
}

export type Scope = 'base' | 'one' | 'sub';

interface UserResult { result: number; dn?: string; vals?: (string | undefined)[] }

async function searchUser(ldc: Ldc, basedn: string, scope: Scope, attrs: readonly string[] | undefined, filter: string): Promise<{ code: number; entries?: Entry[] }> {
  try {
    const { searchEntries } = await ldc.client!.search(basedn, {
      scope, filter, attributes: attrs ? [...attrs] : [], derefAliases: ldc.deref, sizeLimit: 2,
    });
    return { code: LDAP_SUCCESS, entries: searchEntries };
  } catch (e) {
    const code = codeOf(e);
    // A size limit exceeded search found more than one entry.
    if (code === 4) return { code: LDAP_SUCCESS, entries: [{ dn: '' }, { dn: '' }] };
    return { code };
  }
}

function collectVals(entry: Entry, attrs: readonly string[] | undefined): (string | undefined)[] | undefined {
  if (!attrs) return undefined;
  return attrs.map((a) => {
    const v = attrValues(entry, a);
    return v.length === 0 ? undefined : v.join('; ');
  });
}

/** What one try of an LDAP operation gives: the answer, or a failure to try again (`why`
 *  becomes the connection's reason, `result` the code given if the retries run out). */
type Attempt<T> = { done: T } | { retry: string; result: number };

/**
 * httpd's retry loop around an LDAP operation (util_ldap.c's start_over): each try on an opened
 * connection, at most LDAPRetries retries LDAPRetryDelay apart, the connection unbound after a
 * try that failed in a way worth retrying. `giveUp` is the answer when the connection cannot
 * be opened or the retries are spent (the last result code).
 */
async function withRetries<T>(ldc: Ldc, giveUp: (result: number) => T, attempt: (failures: number) => Promise<Attempt<T>>): Promise<T> {
  const conf = ldc.st;
  let failures = 0;
  let result = LDAP_SUCCESS;
  for (;;) {
    if (failures > conf.retries) return giveUp(result);
    if (failures > 0 && conf.retryDelay > 0) await sleep(conf.retryDelay);
    result = await connectionOpen(ldc);
    if (result !== LDAP_SUCCESS) return giveUp(result);
    const a = await attempt(failures);
    if ('done' in a) return a.done;
    ldc.reason = a.retry;
    result = a.result;
    unbind(ldc);
    failures++;
  }
}

/** A try that failed with the server down, or (`timeoutToo`) timed out, is tried again. */
function retryOn(result: number, timeoutToo: boolean, down: string, timeout: string): { retry: string; result: number } | undefined {
  if (isServerDown(result)) return { retry: down, result };
  if (timeoutToo && result === LDAP_TIMEOUT) return { retry: timeout, result };
  return undefined;
}

/** The search cache's entry for `filter`, dropped when older than LDAPCacheTTL. */
function cachedSearch(ldc: Ldc, curl: UrlNode | undefined, filter: string): SearchNode | undefined {
  const node = curl?.search.get(filter);
  if (node !== undefined && Date.now() - node.lastbind > ldc.st.searchCacheTtl) {
    curl!.search.delete(filter);
    return undefined;
  }
  return node;
}

/** The search for the user's entry, of uldap_cache_checkuserid and uldap_cache_getuserdn:
 *  exactly one entry, else their answer; a server down (and with `timeoutToo` a timeout) is
 *  tried again. */
async function searchOneUser(ldc: Ldc, basedn: string, scope: Scope, attrs: readonly string[] | undefined, filter: string, timeoutToo: boolean): Promise<Attempt<UserResult> | { entry: Entry }> {
  const s = await searchUser(ldc, basedn, scope, attrs, filter);
  const again = retryOn(s.code, timeoutToo, 'ldap_search_ext_s() for user failed with server down', 'ldap_search_ext_s() for user failed with timeout');
  if (again !== undefined) return again;
  if (s.code !== LDAP_SUCCESS) {
    ldc.reason = 'ldap_search_ext_s() for user failed';
    return { done: { result: s.code } };
  }
  const entries = s.entries!;
  if (entries.length !== 1) {
    ldc.reason = entries.length === 0 ? 'User not found' : 'User is not unique (search found two or more matches)';
    return { done: { result: LDAP_NO_SUCH_OBJECT } };
  }
  return { entry: entries[0]! };
}

/** uldap_cache_checkuserid: find the user's entry, then bind as it with the password. */
async function checkUserId(_r: Request, ldc: Ldc, url: string, basedn: string, scope: Scope, attrs: readonly string[] | undefined, filter: string, bindpw: string): Promise<UserResult> {
  const conf = ldc.st;
  const curl = urlNode(conf, url);
  const node = cachedSearch(ldc, curl, filter);
  if (node?.bindpw && node.bindpw === bindpw) {
    ldc.reason = 'Authentication successful (cached)';
    return { result: LDAP_SUCCESS, dn: node.dn, vals: node.vals ? [...node.vals] : undefined };
  }
  return withRetries<UserResult>(ldc, (result) => ({ result }), async (failures) => {
    const found = await searchOneUser(ldc, basedn, scope, attrs, filter, true);
    if (!('entry' in found)) return found;
    const dn = found.entry.dn;
    if (bindpw === '') {
      ldc.reason = 'Empty password not allowed';
      return { done: { result: LDAP_INVALID_CREDENTIALS, dn } };
    }
    const result = await simpleBind(ldc, dn, bindpw);
    const again = retryOn(result, failures === 0, 'ldap_simple_bind() to check user credentials failed with server down', 'ldap_simple_bind() to check user credentials timed out');
    if (again !== undefined) return again;
    if (result !== LDAP_SUCCESS) {
      ldc.reason = 'ldap_simple_bind() to check user credentials failed';
      unbind(ldc);
      return { done: { result, dn } };
    }
    ldc.mustRebind = true;
    const vals = collectVals(found.entry, attrs);
    if (curl) cacheInsert(curl.search, conf.searchCacheSize, filter, { dn, bindpw, vals, lastbind: Date.now() });
    ldc.reason = 'Authentication successful';
    return { done: { result: LDAP_SUCCESS, dn, vals } };
  });
}

/** uldap_cache_getuserdn: the user's DN and attributes, without checking a password. */
async function getUserDn(_r: Request, ldc: Ldc, url: string, basedn: string, scope: Scope, attrs: readonly string[] | undefined, filter: string): Promise<UserResult> {
  const conf = ldc.st;
  const curl = urlNode(conf, url);
  const node = cachedSearch(ldc, curl, filter);
  if (node !== undefined) {
    ldc.reason = 'Search successful (cached)';
    return { result: LDAP_SUCCESS, dn: node.dn, vals: node.vals ? [...node.vals] : undefined };
  }
  return withRetries<UserResult>(ldc, (result) => ({ result }), async () => {
    const found = await searchOneUser(ldc, basedn, scope, attrs, filter, false);
    if (!('entry' in found)) return found;
    const entry = found.entry;
    const vals = collectVals(entry, attrs);
    if (curl) {
      const old = curl.search.get(filter);
      if (!old || old.dn !== entry.dn) cacheInsert(curl.search, conf.searchCacheSize, filter, { dn: entry.dn, bindpw: undefined, vals, lastbind: Date.now() });
    }
    ldc.reason = 'Search successful';
    return { done: { result: LDAP_SUCCESS, dn: entry.dn, vals } };
  });
}

function compareKey(dn: string, attrib: string, value: string): string {
  return `${dn}\0${attrib}\0${value}`;
}

/** uldap_cache_compare. */
async function compare(_r: Request, ldc: Ldc, url: string, dn: string, attrib: string, value: string): Promise<number> {
  const conf = ldc.st;
  const curl = urlNode(conf, url);
  const key = compareKey(dn, attrib, value);
  if (curl) {
    const node = curl.compare.get(key);
    if (node) {
      if (Date.now() - node.lastcompare > conf.compareCacheTtl) curl.compare.delete(key);
      else {
        ldc.reason = node.result === LDAP_COMPARE_TRUE ? 'Comparison true (cached)'
          : node.result === LDAP_COMPARE_FALSE ? 'Comparison false (cached)'
            : node.result === LDAP_NO_SUCH_ATTRIBUTE ? 'Comparison no such attribute (cached)'
              : `Comparison undefined: (0): Success (adding to cache)`;
        return node.result;
      }
    }
  }
  return withRetries<number>(ldc, (result) => result, async (failures) => {
    let result: number;
    try {
      result = (await ldc.client!.compare(dn, attrib, value)) ? LDAP_COMPARE_TRUE : LDAP_COMPARE_FALSE;
    } catch (e) {
      result = codeOf(e);
    }
    const again = retryOn(result, failures === 0, 'ldap_compare_s() failed with server down', 'ldap_compare_s() failed with timeout');
    if (again !== undefined) return again;
    ldc.reason = 'Comparison complete';
    if (result === LDAP_COMPARE_TRUE || result === LDAP_COMPARE_FALSE || result === LDAP_NO_SUCH_ATTRIBUTE) {
      if (curl) {
        const old = curl.compare.get(key);
        cacheInsert(curl.compare, conf.compareCacheSize, key, { result, lastcompare: Date.now(), sgl: old?.sgl });
      }
      ldc.reason = result === LDAP_COMPARE_TRUE ? 'Comparison true (adding to cache)'
        : result === LDAP_COMPARE_FALSE ? 'Comparison false (adding to cache)' : 'Comparison no such attribute (adding to cache)';
    }
    return { done: result };
  });
}

/** uldap_cache_comparedn: a string compare, or (onServer) a base search of reqdn. */
async function compareDn(_r: Request, ldc: Ldc, url: string, dn: string, reqdn: string, onServer: boolean): Promise<number> {
  if (!onServer) {
    if (dn !== reqdn) { ldc.reason = 'DN Comparison FALSE (direct strcmp())'; return LDAP_COMPARE_FALSE; }
    ldc.reason = 'DN Comparison TRUE (direct strcmp())';
    return LDAP_COMPARE_TRUE;
  }
  const conf = ldc.st;
  const curl = urlNode(conf, url);
  if (curl && curl.dnCompare.has(reqdn)) {
    ldc.reason = 'DN Comparison TRUE (cached)';
    return LDAP_COMPARE_TRUE;
  }
  return withRetries<number>(ldc, (result) => result, async (failures) => {
    let entries: Entry[] = [];
    let result: number;
    try {
      entries = (await ldc.client!.search(reqdn, { scope: 'base', filter: '(objectclass=*)', attributes: ['1.1'], derefAliases: ldc.deref })).searchEntries;
      result = LDAP_SUCCESS;
    } catch (e) {
      result = codeOf(e);
    }
    const again = retryOn(result, failures === 0, 'DN Comparison ldap_search_ext_s() failed with server down', 'DN Comparison ldap_search_ext_s() failed with timeout');
    if (again !== undefined) return again;
    if (result !== LDAP_SUCCESS) {
      ldc.reason = 'DN Comparison ldap_search_ext_s() failed';
      return { done: result };
    }
    const searchdn = entries[0]?.dn ?? '';
    if (dn !== searchdn) {
      ldc.reason = 'DN Comparison FALSE (checked on server)';
      return { done: LDAP_COMPARE_FALSE };
    }
    if (curl) cacheInsert(curl.dnCompare, conf.compareCacheSize, reqdn, dn);
    ldc.reason = 'DN Comparison TRUE (checked on server)';
    return { done: LDAP_COMPARE_TRUE };
  });
}

/** uldap_get_subgroups: the members of a group that are themselves groups. */
async function getSubgroups(r: Request, ldc: Ldc, url: string, dn: string, sgAttrs: readonly string[], sgClasses: readonly string[]): Promise<string[] | null> {
  const found = await withRetries<{ entry: Entry | undefined } | null>(ldc, () => null, async (failures) => {
    let entry: Entry | undefined;
    let result: number;
    try {
      entry = (await ldc.client!.search(dn, { scope: 'base', attributes: [...sgAttrs], derefAliases: ldc.deref })).searchEntries[0];
      result = LDAP_SUCCESS;
    } catch (e) {
      result = codeOf(e);
    }
    const again = retryOn(result, failures === 0, 'ldap_search_ext_s() for subgroups failed with server down', 'ldap_search_ext_s() for subgroups failed with timeout');
    if (again !== undefined) return again;
    if (result !== LDAP_SUCCESS) {
      ldc.reason = 'ldap_search_ext_s() for subgroups failed';
      return { done: null };
    }
    return { done: { entry } };
  });
  if (found === null) return null;
  const entry = found.entry;
  const groups: string[] = [];
  if (entry) {
    for (const a of sgAttrs) {
      for (const v of attrValues(entry, a)) {
        let res = LDAP_COMPARE_FALSE;
        for (const cls of sgClasses) {
          res = await compare(r, ldc, url, v, 'objectClass', cls);
          if (res === LDAP_COMPARE_TRUE) break;
        }
        if (res === LDAP_COMPARE_TRUE) groups.push(v);
      }
    }
  }
  // httpd pops them off its array: last found first.
  return groups.length > 0 ? groups.reverse() : null;
}

/** uldap_cache_check_subgroups: is `value` in a group nested in `dn`, down to maxDepth. */
async function checkSubgroups(r: Request, ldc: Ldc, url: string, dn: string, attrib: string, value: string, sgAttrs: readonly string[], sgClasses: readonly string[], depth: number, maxDepth: number): Promise<number> {
  if (depth >= maxDepth) return LDAP_COMPARE_FALSE;
  let result = LDAP_COMPARE_FALSE;
  let cls: string | undefined;
  for (const c of sgClasses) {
    result = await compare(r, ldc, url, dn, 'objectClass', c);
    if (result === LDAP_COMPARE_TRUE) { cls = c; break; }
  }
  if (result !== LDAP_COMPARE_TRUE) {
    ldc.reason = 'DN failed group verification.';
    return result;
  }
  const conf = ldc.st;
  const curl = urlNode(conf, url);
  const key = compareKey(dn, 'objectClass', cls!);
  const node = curl?.compare.get(key);
  let sgl: string[] | null;
  if (node && node.sgl !== undefined) {
    sgl = node.sgl;
    if (sgl) debug(r, `AH01288: Making local copy of SGL for group (${dn})(objectClass=${cls!}) `);
  } else {
    debug(r, `AH01289: no cached SGL for ${dn}, retrieving from LDAP`);
    sgl = await getSubgroups(r, ldc, url, dn, sgAttrs, sgClasses);
    if (!sgl) debug(r, `AH01290: no subgroups for ${dn}`);
    if (curl) {
      const n = curl.compare.get(key);
      if (n) n.sgl = sgl;
      else cacheInsert(curl.compare, conf.compareCacheSize, key, { result: LDAP_COMPARE_TRUE, lastcompare: Date.now(), sgl });
    }
  }
  result = LDAP_COMPARE_FALSE;
  if (!sgl) return result;
  for (const group of sgl) {
    result = await compare(r, ldc, url, group, attrib, value);
    if (result === LDAP_COMPARE_TRUE) {
      debug(r, `AH01295: Found user ${r.user ?? ''} in a subgroup (${group}) at level ${depth + 1} of ${maxDepth}.`);
      return result;
    }
    debug(r, `AH01296: User ${r.user ?? ''} not found in subgroup (${group}) at level ${depth + 1} of ${maxDepth}.`);
    result = await checkSubgroups(r, ldc, url, group, attrib, value, sgAttrs, sgClasses, depth + 1, maxDepth);
    if (result === LDAP_COMPARE_TRUE) return result;
  }
  return result;
}

function debug(r: Request, msg: string): void {
  if (levelFor(r.server.logLevel, 'ldap') >= APLOG_DEBUG) r.log('ldap', APLOG_DEBUG, msg);
}

/** uldap_ssl_supported: ldapts speaks TLS (Node's). */
function sslSupported(): boolean {
  return true;
}

/** The functions mod_authnz_ldap uses (httpd's uldap_* optional functions). */
export const uldap = {
  connectionFind, connectionClose, checkUserId, getUserDn, compare, compareDn, checkSubgroups, sslSupported,
};

/** Whether mod_ldap is loaded (mod_authnz_ldap needs it, as in httpd). */
export function ldapStatusServer(s: ServerRec): LdapServerConfig | undefined {
  return self.server(s);
}

// ---- the module ---------------------------------------------------------------------------

const self = defineModule<LdapServerConfig, LdapDirConfig>({
  name: 'ldap_module',
  source: 'util_ldap.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  createDirConfig,
  configHooks: { cleanup },
  directives: [
    directive({ name: 'LDAPSharedCacheSize', args: 'TAKE1', where: RSRC_CONF, help: 'Set the size of the shared memory cache (in bytes). Use 0 to disable the shared memory cache. (default: 500000)', handler: setCacheBytes }),
    directive({ name: 'LDAPSharedCacheFile', args: 'TAKE1', where: RSRC_CONF, help: 'Set the file name for the shared memory cache.', handler: setCacheFile }),
    directive({ name: 'LDAPCacheEntries', args: 'TAKE1', where: RSRC_CONF, help: 'Set the maximum number of entries that are possible in the LDAP search cache. Use 0 or -1 to disable the search cache (default: 1024)', handler: setCacheEntries }),
    directive({ name: 'LDAPCacheTTL', args: 'TAKE1', where: RSRC_CONF, help: 'Set the maximum time (in seconds) that an item can be cached in the LDAP search cache. Use 0 for no limit. (default 600)', handler: setCacheTtl }),
    directive({ name: 'LDAPOpCacheEntries', args: 'TAKE1', where: RSRC_CONF, help: 'Set the maximum number of entries that are possible in the LDAP compare cache. Use 0 or -1 to disable the compare cache (default: 1024)', handler: setOpCacheEntries }),
    directive({ name: 'LDAPOpCacheTTL', args: 'TAKE1', where: RSRC_CONF, help: 'Set the maximum time (in seconds) that an item is cached in the LDAP operation cache. Use 0 for no limit. (default: 600)', handler: setOpCacheTtl }),
    directive({ name: 'LDAPTrustedGlobalCert', args: 'TAKE23', where: RSRC_CONF, help: 'Takes three arguments; the first argument is the cert type of the second argument, one of CA_DER, CA_BASE64, CA_CERT7_DB, CA_SECMOD, CERT_DER, CERT_BASE64, CERT_KEY3_DB, CERT_NICKNAME, KEY_DER, or KEY_BASE64. The second argument specifes the file and/or directory containing the trusted CA certificates (and global client certs for Netware). The third argument is an optional passphrase if applicable.', handler: setTrustedGlobalCert }),
    directive({ name: 'LDAPTrustedMode', args: 'TAKE1', where: RSRC_CONF | OR_AUTHCFG, help: 'Specify the type of security that should be applied to an LDAP connection. One of; NONE, SSL or STARTTLS.', handler: setTrustedMode }),
    directive({ name: 'LDAPVerifyServerCert', args: 'FLAG', where: RSRC_CONF, help: 'Set to \'ON\' requires that the server certificate be verified before a secure LDAP connection can be establish.  Default \'ON\'', handler: setVerifySrvCert }),
    directive({ name: 'LDAPConnectionTimeout', args: 'TAKE1', where: RSRC_CONF, help: 'Specify the LDAP socket connection timeout in seconds (default: 10)', handler: setConnectionTimeout }),
    directive({ name: 'LDAPReferrals', args: 'TAKE1', where: OR_AUTHCFG, help: "Choose whether referrals are chased ['ON'|'OFF'|'DEFAULT'].  Default 'ON'", handler: setChaseReferrals }),
    directive({ name: 'LDAPReferralHopLimit', args: 'TAKE1', where: OR_AUTHCFG, help: 'Limit the number of referral hops that LDAP can follow. (Integer value, Consult LDAP SDK documentation for applicability and defaults', handler: setReferralHopLimit }),
    directive({ name: 'LDAPLibraryDebug', args: 'TAKE1', where: RSRC_CONF, help: 'Enable debugging in LDAP SDK (Default: off, values: SDK specific', handler: setDebugLevel }),
    directive({ name: 'LDAPTimeout', args: 'TAKE1', where: RSRC_CONF, help: 'Specify the LDAP bind/search timeout in seconds (0 = no limit). Default: 60', handler: setOpTimeout }),
    directive({ name: 'LDAPConnectionPoolTTL', args: 'TAKE1', where: RSRC_CONF, help: 'Specify the maximum amount of time a bound connection can sit idle and still be considered valid for reuse(0 = no pool, -1 = no limit, n = time in seconds). Default: -1', handler: setConnTtl }),
    directive({ name: 'LDAPRetries', args: 'TAKE1', where: RSRC_CONF, help: 'Specify the number of times a failed LDAP operation should be retried (0 = no retries). Default: 3', handler: setRetries }),
    directive({ name: 'LDAPRetryDelay', args: 'TAKE1', where: RSRC_CONF, help: 'Specify the delay between retries of a failed LDAP operation (0 = no delay). Default: 0', handler: setRetryDelay }),
  ],
});

export default self;
