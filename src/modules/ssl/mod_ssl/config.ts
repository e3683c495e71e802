// mod_ssl's configuration (modules/ssl/ssl_engine_config.c): the per-server and per-directory
// records, their merges, and the directive handlers with httpd's argument checks and error
// texts. What these settings do to a connection is in contexts.ts (the TLS contexts built from
// them) and layer.ts / hooks.ts (what they do per connection and per request).

import * as fs from 'node:fs';
import type { CmdParms } from '../../../server/config/cmd.js';
import { GLOBAL_ONLY } from '../../../server/config/cmd.js';
import { splitWords } from '../../../server/config/lexer.js';
import type { SocacheSpec } from '../../../server/socache.js';
import { APLOG_WARNING } from '../../../server/log/levels.js';
import { atoi } from '../../../lib/c-numbers.js';

// ---- protocols (SSL_PROTOCOL_*) ------------------------------------------------------------
export const PROTO_TLSV1 = 1;
export const PROTO_TLSV1_1 = 2;
export const PROTO_TLSV1_2 = 4;
export const PROTO_TLSV1_3 = 8;
export const PROTO_ALL = PROTO_TLSV1 | PROTO_TLSV1_1 | PROTO_TLSV1_2 | PROTO_TLSV1_3;
/** What httpd 2.4 uses when SSLProtocol is not set: "all -SSLv3" (no SSLv3 in OpenSSL 3). */
export const PROTO_DEFAULT = PROTO_ALL;

// ---- client verification (ssl_verify_t) ----------------------------------------------------
export type VerifyMode = 'none' | 'optional' | 'require' | 'optional_no_ca';

// ---- revocation checking (SSL_CRLCHECK_*) --------------------------------------------------
export interface CrlCheck {
  readonly mode: 'none' | 'leaf' | 'chain';
  readonly noCrlForCertOk: boolean;
}

// ---- OCSP checking of client certificates (SSL_OCSPCHECK_*) ---------------------------------
export interface OcspCheck {
  readonly mode: 'off' | 'leaf' | 'on';
  readonly noOcspForCertOk: boolean;
}

// ---- SSLOptions (SSL_OPT_*) ----------------------------------------------------------------
export const OPT_RELSET = 1;
export const OPT_STDENVVARS = 2;
export const OPT_EXPORTCERTDATA = 8;
export const OPT_FAKEBASICAUTH = 16;
export const OPT_STRICTREQUIRE = 32;
export const OPT_OPTRENEGOTIATE = 64;
export const OPT_LEGACYDNFORMAT = 128;

const OPTION_NAMES: Readonly<Record<string, number>> = {
  StdEnvVars: OPT_STDENVVARS,
  ExportCertData: OPT_EXPORTCERTDATA,
  FakeBasicAuth: OPT_FAKEBASICAUTH,
  StrictRequire: OPT_STRICTREQUIRE,
  OptRenegotiate: OPT_OPTRENEGOTIATE,
  LegacyDNStringFormat: OPT_LEGACYDNFORMAT,
};

/** SSLPassPhraseDialog: how an encrypted private key's pass phrase is had. */
export type PassPhraseDialog = { readonly type: 'builtin' } | { readonly type: 'exec'; readonly path: string } | { readonly type: 'pipe'; readonly command: string };

/** SSLProxy* (the client side of mod_proxy's HTTPS backends): modssl_ctx_t for the proxy. */
export interface SslProxyConfig {
  engine: boolean | undefined;
  protocol: number | undefined;
  cipherSuite: string | undefined;
  tls13Ciphers: string | undefined;
  verify: VerifyMode | undefined;
  verifyDepth: number | undefined;
  caFile: string | undefined;
  caPath: string | undefined;
  crlFile: string | undefined;
  crlPath: string | undefined;
  crlCheck: CrlCheck | undefined;
  machineCertFile: string | undefined;
  machineCertPath: string | undefined;
  machineChainFile: string | undefined;
  checkPeerExpire: boolean | undefined;
  checkPeerCn: boolean | undefined;
  checkPeerName: boolean | undefined;
}

/** The per-server record (SSLSrvConfigRec with its modssl_ctx_t); undefined: not set here. */
export interface SslServerConfig {
  engine: 'on' | 'off' | undefined;
  certFiles: readonly string[];
  keyFiles: readonly string[];
  chainFile: string | undefined;
  caFile: string | undefined;
  caPath: string | undefined;
  caDnFile: string | undefined;
  caDnPath: string | undefined;
  crlFile: string | undefined;
  crlPath: string | undefined;
  crlCheck: CrlCheck | undefined;
  verifyClient: VerifyMode | undefined;
  verifyDepth: number | undefined;
  protocol: number | undefined;
  cipherSuite: string | undefined;
  tls13Ciphers: string | undefined;
  honorCipherOrder: boolean | undefined;
  compression: boolean | undefined;
  sessionTickets: boolean | undefined;
  sessionTicketKeyFile: string | undefined;
  insecureReneg: boolean | undefined;
  strictSni: boolean | undefined;
  sniPolicy: 'strict' | 'secure' | 'authonly' | 'insecure' | undefined;
  sessionCacheTimeout: number | undefined;
  openSslConfCmds: readonly (readonly [string, string])[];
  useStapling: boolean | undefined;
  staplingSkew: number | undefined;
  staplingMaxAge: number | undefined;
  staplingCacheTimeout: number | undefined;
  staplingErrCacheTimeout: number | undefined;
  staplingReturnErrors: boolean | undefined;
  staplingFakeTryLater: boolean | undefined;
  staplingTimeout: number | undefined;
  staplingForceUrl: string | undefined;
  ocspEnable: OcspCheck | undefined;
  ocspOverride: boolean | undefined;
  ocspDefaultResponder: string | undefined;
  ocspSkew: number | undefined;
  ocspMaxAge: number | undefined;
  ocspTimeout: number | undefined;
  ocspNonce: boolean | undefined;
  ocspProxyUrl: string | undefined;
  ocspNoVerify: boolean | undefined;
  ocspResponderCertFile: string | undefined;
  passPhraseDialog: PassPhraseDialog | undefined;
  proxy: SslProxyConfig;
  // ---- global only (the main server's record holds them: httpd's SSLModConfigRec) ----
  sessionCache: SocacheSpec | 'none' | undefined;
  staplingCache: SocacheSpec | undefined;
  randomSeeds: readonly string[];
}

/** The per-directory record (SSLDirConfigRec). */
export interface SslDirConfig {
  /** SSLProxy* given in a <Proxy> section (over the server's). */
  proxy: Partial<SslProxyConfig> | undefined;
  requireSsl: boolean | undefined;
  /** SSLRequire expressions, in order (all must hold). */
  requires: readonly SslRequire[];
  options: number;
  optionsAdd: number;
  optionsDel: number;
  cipherSuite: string | undefined;
  verifyClient: VerifyMode | undefined;
  verifyDepth: number | undefined;
  userName: string | undefined;
  renegBufferSize: number | undefined;
}

/** One SSLRequire line: its text (for AH02229) and its evaluator (set once the expression
 *  engine compiled it). */
export interface SslRequire {
  readonly text: string;
  readonly file: string;
  readonly line: number;
  readonly evaluate: SslRequireEval;
}
export type SslRequireEval = (r: import('../../../server/request/request.js').Request) => boolean | string | Promise<boolean | string>;

function newProxy(): SslProxyConfig {
  return {
    engine: undefined, protocol: undefined, cipherSuite: undefined, tls13Ciphers: undefined, verify: undefined,
    verifyDepth: undefined, caFile: undefined, caPath: undefined, crlFile: undefined, crlPath: undefined,
    crlCheck: undefined, machineCertFile: undefined, machineCertPath: undefined, machineChainFile: undefined,
    checkPeerExpire: undefined, checkPeerCn: undefined, checkPeerName: undefined,
  };
}

export function createServerConfig(): SslServerConfig {
  return {
    engine: undefined, certFiles: [], keyFiles: [], chainFile: undefined, caFile: undefined, caPath: undefined,
    caDnFile: undefined, caDnPath: undefined, crlFile: undefined, crlPath: undefined, crlCheck: undefined,
    verifyClient: undefined, verifyDepth: undefined, protocol: undefined, cipherSuite: undefined, tls13Ciphers: undefined,
    honorCipherOrder: undefined, compression: undefined, sessionTickets: undefined, sessionTicketKeyFile: undefined,
    insecureReneg: undefined, strictSni: undefined, sniPolicy: undefined, sessionCacheTimeout: undefined, openSslConfCmds: [],
    useStapling: undefined, staplingSkew: undefined, staplingMaxAge: undefined, staplingCacheTimeout: undefined,
    staplingErrCacheTimeout: undefined, staplingReturnErrors: undefined, staplingFakeTryLater: undefined,
    staplingTimeout: undefined, staplingForceUrl: undefined,
    ocspEnable: undefined, ocspOverride: undefined, ocspDefaultResponder: undefined, ocspSkew: undefined,
    ocspMaxAge: undefined, ocspTimeout: undefined, ocspNonce: undefined, ocspProxyUrl: undefined, ocspNoVerify: undefined,
    ocspResponderCertFile: undefined,
    passPhraseDialog: undefined, proxy: newProxy(), sessionCache: undefined, staplingCache: undefined, randomSeeds: [],
  };
}

const pick = <T>(add: T | undefined, base: T | undefined): T | undefined => (add !== undefined ? add : base);

function mergeProxy(base: Readonly<SslProxyConfig>, add: Readonly<SslProxyConfig>): SslProxyConfig {
  const out = newProxy();
  for (const k of Object.keys(out) as (keyof SslProxyConfig)[]) {
    (out as unknown as Record<string, unknown>)[k] = pick(add[k], base[k]);
  }
  return out;
}

/** ssl_config_server_merge: a virtual host inherits what it does not set; certificate and key
 *  files accumulate (the main server's first), as httpd's cfgMergeArray. */
export function mergeServerConfig(base: Readonly<SslServerConfig>, add: Readonly<SslServerConfig>): SslServerConfig {
  return {
    engine: pick(add.engine, base.engine),
    certFiles: [...base.certFiles, ...add.certFiles],
    keyFiles: [...base.keyFiles, ...add.keyFiles],
    chainFile: pick(add.chainFile, base.chainFile),
    caFile: pick(add.caFile, base.caFile),
    caPath: pick(add.caPath, base.caPath),
    caDnFile: pick(add.caDnFile, base.caDnFile),
    caDnPath: pick(add.caDnPath, base.caDnPath),
    crlFile: pick(add.crlFile, base.crlFile),
    crlPath: pick(add.crlPath, base.crlPath),
    crlCheck: pick(add.crlCheck, base.crlCheck),
    verifyClient: pick(add.verifyClient, base.verifyClient),
    verifyDepth: pick(add.verifyDepth, base.verifyDepth),
    protocol: pick(add.protocol, base.protocol),
    cipherSuite: pick(add.cipherSuite, base.cipherSuite),
    tls13Ciphers: pick(add.tls13Ciphers, base.tls13Ciphers),
    honorCipherOrder: pick(add.honorCipherOrder, base.honorCipherOrder),
    compression: pick(add.compression, base.compression),
    sessionTickets: pick(add.sessionTickets, base.sessionTickets),
    sessionTicketKeyFile: pick(add.sessionTicketKeyFile, base.sessionTicketKeyFile),
    insecureReneg: pick(add.insecureReneg, base.insecureReneg),
    strictSni: pick(add.strictSni, base.strictSni),
    sniPolicy: base.sniPolicy,
    sessionCacheTimeout: pick(add.sessionCacheTimeout, base.sessionCacheTimeout),
    openSslConfCmds: [...base.openSslConfCmds, ...add.openSslConfCmds],
    useStapling: pick(add.useStapling, base.useStapling),
    staplingSkew: pick(add.staplingSkew, base.staplingSkew),
    staplingMaxAge: pick(add.staplingMaxAge, base.staplingMaxAge),
    staplingCacheTimeout: pick(add.staplingCacheTimeout, base.staplingCacheTimeout),
    staplingErrCacheTimeout: pick(add.staplingErrCacheTimeout, base.staplingErrCacheTimeout),
    staplingReturnErrors: pick(add.staplingReturnErrors, base.staplingReturnErrors),
    staplingFakeTryLater: pick(add.staplingFakeTryLater, base.staplingFakeTryLater),
    staplingTimeout: pick(add.staplingTimeout, base.staplingTimeout),
    staplingForceUrl: pick(add.staplingForceUrl, base.staplingForceUrl),
    ocspEnable: pick(add.ocspEnable, base.ocspEnable),
    ocspOverride: pick(add.ocspOverride, base.ocspOverride),
    ocspDefaultResponder: pick(add.ocspDefaultResponder, base.ocspDefaultResponder),
    ocspSkew: pick(add.ocspSkew, base.ocspSkew),
    ocspMaxAge: pick(add.ocspMaxAge, base.ocspMaxAge),
    ocspTimeout: pick(add.ocspTimeout, base.ocspTimeout),
    ocspNonce: pick(add.ocspNonce, base.ocspNonce),
    ocspProxyUrl: pick(add.ocspProxyUrl, base.ocspProxyUrl),
    ocspNoVerify: pick(add.ocspNoVerify, base.ocspNoVerify),
    ocspResponderCertFile: pick(add.ocspResponderCertFile, base.ocspResponderCertFile),
    passPhraseDialog: pick(add.passPhraseDialog, base.passPhraseDialog),
    proxy: mergeProxy(base.proxy, add.proxy),
    sessionCache: base.sessionCache,
    staplingCache: base.staplingCache,
    randomSeeds: base.randomSeeds,
  };
}

export function createDirConfig(): SslDirConfig {
  return {
    proxy: undefined, requireSsl: undefined, requires: [], options: OPT_RELSET, optionsAdd: 0, optionsDel: 0,
    cipherSuite: undefined, verifyClient: undefined, verifyDepth: undefined, userName: undefined, renegBufferSize: undefined,
  };
}

/** ssl_config_perdir_merge: SSLOptions with +/- add to and take from the parent's; a list
 *  without them replaces it; SSLRequire lines accumulate. */
export function mergeDirConfig(base: Readonly<SslDirConfig>, add: Readonly<SslDirConfig>): SslDirConfig {
  let options: number, optionsAdd: number, optionsDel: number;
  if (add.options & OPT_RELSET) {
    optionsAdd = (base.optionsAdd & ~add.optionsDel) | add.optionsAdd;
    optionsDel = (base.optionsDel & ~add.optionsAdd) | add.optionsDel;
    options = (base.options & ~optionsDel) | optionsAdd;
  } else {
    options = add.options;
    optionsAdd = add.optionsAdd;
    optionsDel = add.optionsDel;
  }
  return {
    proxy: add.proxy === undefined ? base.proxy : base.proxy === undefined ? add.proxy : { ...base.proxy, ...add.proxy },
    requireSsl: pick(add.requireSsl, base.requireSsl),
    requires: [...base.requires, ...add.requires],
    options, optionsAdd, optionsDel,
    cipherSuite: pick(add.cipherSuite, base.cipherSuite),
    verifyClient: pick(add.verifyClient, base.verifyClient),
    verifyDepth: pick(add.verifyDepth, base.verifyDepth),
    userName: pick(add.userName, base.userName),
    renegBufferSize: pick(add.renegBufferSize, base.renegBufferSize),
  };
}

// ---- argument checks shared by the handlers -------------------------------------------------

export type Cmd = CmdParms<SslServerConfig, SslDirConfig>;

/** ssl_cmd_check_file: ServerRoot-relative, and a non-empty file. */
export function checkFile(cmd: Cmd, arg: string): string | { path: string } {
  const p = cmd.serverRootRelative(arg);
  try {
    const st = fs.statSync(p);
    if (st.isFile() && st.size > 0) return { path: p };
  } catch { /* below */ }
  return `${cmd.name}: file '${p}' does not exist or is empty`;
}

/** ssl_cmd_check_dir. */
export function checkDir(cmd: Cmd, arg: string): string | { path: string } {
  const p = cmd.serverRootRelative(arg);
  try {
    if (fs.statSync(p).isDirectory()) return { path: p };
  } catch { /* below */ }
  return `${cmd.name}: directory '${p}' does not exist`;
}

/** ssl_cmd_protocol_parse: words with optional +/-; a word without either replaces what came
 *  before (with httpd's AH02532 warning). */
export function parseProtocol(cmd: Cmd, raw: string): number | string {
  let set = 0;
  for (const word of splitWords(raw)) {
    let w = word;
    let action = '';
    if (w.startsWith('+') || w.startsWith('-')) { action = w[0]!; w = w.slice(1); }
    let bit: number;
    const lw = w.toLowerCase();
    if (lw === 'sslv2') {
      if (action === '-') continue;
      return 'SSLProtocol: SSLv2 is no longer supported';
    } else if (lw === 'sslv3') {
      // OpenSSL 3 is built without SSLv3 (OPENSSL_NO_SSL3).
      if (action !== '-') return 'SSLv3 not supported by this version of OpenSSL';
      continue;
    } else if (lw === 'tlsv1') bit = PROTO_TLSV1;
    else if (lw === 'tlsv1.1') bit = PROTO_TLSV1_1;
    else if (lw === 'tlsv1.2') bit = PROTO_TLSV1_2;
    else if (lw === 'tlsv1.3') bit = PROTO_TLSV1_3;
    else if (lw === 'all') bit = PROTO_ALL;
    else return `${cmd.name}: Illegal protocol '${w}'`;
    if (action === '-') set &= ~bit;
    else if (action === '+') set |= bit;
    else {
      if (set !== 0) cmd.log('ssl', APLOG_WARNING, `AH02532: ${cmd.name}: Protocol '${w}' overrides already set parameter(s). Check if a +/- prefix is missing.`);
      set = bit;
    }
  }
  return set;
}

/** ssl_cmd_verify_parse. */
export function parseVerify(cmd: Cmd, arg: string): VerifyMode | string {
  const a = arg.toLowerCase();
  if (a === 'none' || a === 'off') return 'none';
  if (a === 'optional') return 'optional';
  if (a === 'require' || a === 'on') return 'require';
  if (a === 'optional_no_ca') return 'optional_no_ca';
  return `${cmd.name}: Invalid argument '${arg}'`;
}

/** ssl_cmd_verify_depth_parse: atoi, at least 0. */
export function parseDepth(cmd: Cmd, arg: string): number | string {
  const n = atoi(arg);
  if (n >= 0) return n;
  return `${cmd.name}: Invalid argument '${arg}'`;
}

/** ssl_cmd_crlcheck_parse. */
export function parseCrlCheck(cmd: Cmd, raw: string): CrlCheck | string {
  const words = splitWords(raw);
  const first = words.shift() ?? '';
  const m = first.toLowerCase();
  if (m !== 'none' && m !== 'leaf' && m !== 'chain') return `${cmd.name}: Invalid argument '${first}'`;
  let noCrlForCertOk = false;
  for (const w of words) {
    if (w.toLowerCase() === 'no_crl_for_cert_ok') noCrlForCertOk = true;
    else return `${cmd.name}: Invalid argument '${w}'`;
  }
  return { mode: m, noCrlForCertOk };
}

/** ssl_cmd_ocspcheck_parse: off, leaf or on, then no_ocsp_for_cert_ok. */
export function parseOcspCheck(cmd: Cmd, raw: string): OcspCheck | string {
  const words = splitWords(raw);
  const first = words.shift() ?? '';
  const m = first.toLowerCase();
  if (m !== 'off' && m !== 'leaf' && m !== 'on') return `${cmd.name}: Invalid argument '${first}'`;
  let noOcspForCertOk = false;
  for (const w of words) {
    if (w.toLowerCase() === 'no_ocsp_for_cert_ok') noOcspForCertOk = true;
    else return `${cmd.name}: Invalid argument '${w}'`;
  }
  return { mode: m, noOcspForCertOk };
}

/** SSLOptions. */
export function parseOptions(dc: SslDirConfig, raw: string): string | undefined {
  let first = true;
  for (const word of splitWords(raw)) {
    let w = word;
    let action = '';
    if (w.startsWith('+') || w.startsWith('-')) { action = w[0]!; w = w.slice(1); }
    else if (first) { dc.options = 0; first = false; }
    const key = Object.keys(OPTION_NAMES).find((k) => k.toLowerCase() === w.toLowerCase());
    if (key === undefined) return `SSLOptions: Illegal option '${w}'`;
    const opt = OPTION_NAMES[key]!;
    if (action === '-') { dc.optionsAdd &= ~opt; dc.optionsDel |= opt; dc.options &= ~opt; }
    else if (action === '+') { dc.optionsAdd |= opt; dc.optionsDel &= ~opt; dc.options |= opt; }
    else { dc.options = opt; dc.optionsAdd = opt; dc.optionsDel = 0; }
  }
  return undefined;
}


export { GLOBAL_ONLY };
