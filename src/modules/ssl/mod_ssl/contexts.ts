// The TLS contexts of a configuration generation (modules/ssl/ssl_engine_init.c): for every
// server with SSLEngine on, its certificates and keys (RSA and ECDSA side by side), chain, CA
// certificates, revocation lists, protocols, ciphers and session settings become one Node
// SecureContext, with httpd's startup checks and messages: a file that cannot be read, a key
// that does not match its certificate, an encrypted key without a pass phrase, a CRL check
// without CRLs. Built once at post_config, in the parent (which refuses to start, or keeps the
// running generation on a restart, when one fails) and again in each worker.

import * as crypto from 'node:crypto';
import * as net from 'node:net';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { execFileSync } from 'node:child_process';
import type { ConfigContext } from '../../../server/config/context.js';
import type { ServerRec } from '../../../server/server-rec.js';
import { APLOG_DEBUG, APLOG_EMERG, APLOG_ERR, APLOG_INFO, APLOG_WARNING } from '../../../server/log/levels.js';
import {
  PROTO_DEFAULT, PROTO_TLSV1, PROTO_TLSV1_1, PROTO_TLSV1_2, PROTO_TLSV1_3,
  type CrlCheck, type PassPhraseDialog, type SslServerConfig, type VerifyMode,
} from './config.js';
import { parseUri, type OcspSettings } from './ocsp.js';
import type { StaplingSettings } from './stapling.js';
import { renewTls13Tickets } from './tickets.js';

/** One server's TLS setup. */
export interface TlsServer {
  readonly s: ServerRec;
  /** ssl_util_vhostid: "name:port". */
  readonly id: string;
  readonly context: tls.SecureContext;
  readonly verify: VerifyMode;
  readonly depth: number;
  /** Ask for a client certificate in the handshake (the server's SSLVerifyClient, or a
   *  directory's: see hooks.ts on per-directory verification). */
  readonly requestCert: boolean;
  /** The handshake fails without a valid client certificate. */
  readonly rejectUnauthorized: boolean;
  readonly crl: CrlCheck;
  readonly hasCa: boolean;
  /** SSLOCSPEnable's client certificate checks (null: off). */
  readonly ocsp: OcspSettings | null;
  /** OCSP stapling (null: SSLUseStapling off). */
  readonly stapling: StaplingSettings | null;
  readonly strictSni: boolean;
  /** The first certificate (SSL_SERVER_* variables). */
  readonly cert: crypto.X509Certificate | null;
  /** What SSLVHostSNIPolicy compares: the server certificate, key, protocol and cipher
   *  settings, and the client verification settings. */
  readonly certCompat: string;
  readonly authCompat: string;
  /** Every server certificate's notAfter, for the expiry warning. */
  readonly certs: readonly { file: string; cert: crypto.X509Certificate }[];
  /** The effective SSLCipherSuite list (per-directory checks compare against it). */
  readonly ciphers: string;
  /** TLS 1.3 is on and its sessions travel in stateless tickets: a client offering TLS 1.3
   *  resumes from the ticket alone, never from the session cache (see layer.ts). */
  /** The host speaks TLS 1.3 (its highest protocol). */
  readonly tls13: boolean;
  readonly statelessTls13: boolean;
}

export interface TlsBuild {
  readonly servers: Map<ServerRec, TlsServer>;
}

/** Names as httpd's ssl_util_vhostid prints a server. */
export function vhostId(s: ServerRec, sc: SslServerConfig): string {
  let port = s.port;
  if (port === 0) port = s.addrs[0]?.port ?? 0;
  if (port === 0) port = sc.engine === 'on' ? 443 : 80;
  return `${s.serverHostname ?? 'localhost'}:${port}`;
}

/** PEM blocks of one kind in a file's text. */
function pemBlocks(text: string, kind: RegExp): string[] {
  const out: string[] = [];
  const re = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) if (kind.test(m[1]!)) out.push(m[0]);
  return out;
}

/** Every PEM certificate in a file (or DER: one certificate). */
function readCerts(file: string): string[] {
  const buf = fs.readFileSync(file);
  const text = buf.toString('latin1');
  if (text.includes('-----BEGIN')) return pemBlocks(text, /CERTIFICATE$/);
  return [new crypto.X509Certificate(buf).toString()];
}

/** Every file in a directory that holds certificates (SSLCACertificatePath: the hashed links
 *  c_rehash makes, and any PEM file). */
function readDirCerts(dir: string, kind: RegExp): string[] {
  const out: string[] = [];
  let names: string[];
  try { names = fs.readdirSync(dir).sort(); } catch { return out; }
  for (const n of names) {
    try {
      const text = fs.readFileSync(path.join(dir, n), 'latin1');
      for (const b of pemBlocks(text, kind)) if (!out.includes(b)) out.push(b);
    } catch { /* not a readable file */ }
  }
  return out;
}

/** Node's protocol range and the versions inside it to switch off. */
function protocolOptions(mask: number): { minVersion: tls.SecureVersion; maxVersion: tls.SecureVersion; off: number } | null {
  const order: [number, tls.SecureVersion, number][] = [
    [PROTO_TLSV1, 'TLSv1', crypto.constants.SSL_OP_NO_TLSv1],
    [PROTO_TLSV1_1, 'TLSv1.1', crypto.constants.SSL_OP_NO_TLSv1_1],
    [PROTO_TLSV1_2, 'TLSv1.2', crypto.constants.SSL_OP_NO_TLSv1_2],
    [PROTO_TLSV1_3, 'TLSv1.3', crypto.constants.SSL_OP_NO_TLSv1_3],
  ];
  const on = order.filter(([b]) => mask & b);
  if (on.length === 0) return null;
  let off = 0;
  const lo = order.indexOf(on[0]!);
  const hi = order.indexOf(on[on.length - 1]!);
  for (let i = lo; i <= hi; i++) if (!(mask & order[i]![0])) off |= order[i]![2];
  return { minVersion: on[0]![1], maxVersion: on[on.length - 1]![1], off };
}

/** The pass phrase of an encrypted key (SSLPassPhraseDialog), or an error text. Pass phrases
 *  given once are remembered for the process's later reads (a restart, the workers). */
function passPhrase(dialog: PassPhraseDialog, id: string, keyType: string, remembered: Map<string, string>): string | null {
  const known = remembered.get(id);
  if (known !== undefined) return known;
  if (dialog.type === 'exec') {
    try {
      const out = execFileSync(dialog.path, [id, keyType], { encoding: 'latin1', stdio: ['ignore', 'pipe', 'inherit'], timeout: 60_000 });
      const p = out.split('\n')[0] ?? '';
      remembered.set(id, p);
      return p;
    } catch {
      return null;
    }
  }
  if (dialog.type === 'pipe') return null;
  // builtin: asks on the terminal, as httpd does when it starts in the foreground.
  if (!process.stdin.isTTY) return null;
  process.stderr.write(`Enter pass phrase for ${id} (${keyType}): `);
  const buf = Buffer.alloc(1024);
  let n = 0;
  try { n = fs.readSync(0, buf, 0, buf.length, null); } catch { return null; }
  const p = buf.toString('latin1', 0, n).replace(/\r?\n$/, '');
  remembered.set(id, p);
  return p;
}

/** Pass phrases read in this process (for restarts and, through the environment, workers). */
const PASSPHRASES_ENV = 'PLUME_SSL_PASSPHRASES';
function rememberedPhrases(): Map<string, string> {
  const m = new Map<string, string>();
  try {
    const raw = JSON.parse(process.env[PASSPHRASES_ENV] ?? '{}') as Record<string, unknown>;
    for (const [k, v] of Object.entries(raw)) if (typeof v === 'string') m.set(k, v);
  } catch { /* none */ }
  return m;
}
function keepPhrases(m: Map<string, string>): void {
  if (m.size > 0) process.env[PASSPHRASES_ENV] = JSON.stringify(Object.fromEntries(m));
}

/** The kind of a private key, as httpd names it in its pass phrase prompt. */
function keyTypeName(pemText: string): string {
  if (/EC PRIVATE KEY/.test(pemText)) return 'EC';
  if (/DSA PRIVATE KEY/.test(pemText)) return 'DSA';
  return 'RSA';
}

/** The warnings the previous configuration read of this process logged. The serving read that
 *  follows the preflight read at startup (and a restart with the same problems) does not
 *  repeat them: they were logged once, before the server listened. */
let lastWarnings = new Set<string>();
let thisWarnings = new Set<string>();

/** A startup warning (httpd logs these from post_config). */
export function warn(ctx: ConfigContext, message: string, level = APLOG_WARNING): void {
  thisWarnings.add(message);
  if (!ctx.preflight && lastWarnings.has(message)) return;
  ctx.log('ssl', level, message);
}

/** Called once a read's post_config is done: its warnings become the ones not to repeat. */
export function warningsDone(): void {
  lastWarnings = thisWarnings;
  thisWarnings = new Set();
}

/** A fatal startup error: logged at emerg as httpd does, returned for the caller to refuse. */
class InitError extends Error {}

function fail(ctx: ConfigContext, message: string): never {
  ctx.log('ssl', APLOG_EMERG, message);
  throw new InitError(message);
}

/**
 * Builds the contexts of every SSL server. `dirVerify`: whether a directory of the server asks
 * for client certificates. Returns the setup, or the text to refuse the configuration with
 * (its messages are logged already).
 */
export function buildContexts(
  ctx: ConfigContext,
  serverConf: (s: ServerRec) => SslServerConfig,
  dirVerify: (s: ServerRec) => boolean,
  ticketKeys: Buffer,
): TlsBuild | string {
  const servers = new Map<ServerRec, TlsServer>();
  const phrases = rememberedPhrases();
  try {
    for (const s of [ctx.mainServer, ...ctx.vhosts]) {
      const sc = serverConf(s);
      if (sc.engine !== 'on') continue;
      servers.set(s, buildOne(ctx, s, sc, dirVerify(s), ticketKeys, phrases));
    }
  } catch (e) {
    if (e instanceof InitError) {
      ctx.log('ssl', APLOG_EMERG, 'AH02312: Fatal error initialising mod_ssl, exiting.');
      return 'AH00016: Configuration Failed';
    }
    throw e;
  }
  keepPhrases(phrases);
  return { servers };
}

function buildOne(ctx: ConfigContext, s: ServerRec, sc: SslServerConfig, dirVerify: boolean, ticketKeys: Buffer, phrases: Map<string, string>): TlsServer {
  const id = vhostId(s, sc);
  ctx.log('ssl', APLOG_INFO, `AH01914: Configuring server ${id} for SSL protocol`);
  if (sc.certFiles.length === 0) {
    fail(ctx, `AH02572: Failed to configure at least one certificate and key for ${id}`);
  }
  // Certificates and keys pair up in order; a later pair of the same key type replaces an
  // earlier one (the main server's, inherited first).
  const byType = new Map<string, { cert: string; key: crypto.KeyObject; keyPem: string; passphrase: string | undefined; file: string; x509: crypto.X509Certificate }>();
  const extraCa: string[] = [];
  sc.certFiles.forEach((certFile, i) => {
    const keyFile = sc.keyFiles[i] ?? certFile;
    const keyId = `${id}:${i}`;
    let certs: string[];
    try { certs = readCerts(certFile); } catch {
      fail(ctx, `AH02561: Failed to configure certificate ${keyId}, check ${certFile}`);
    }
    if (certs.length === 0) fail(ctx, `AH02561: Failed to configure certificate ${keyId}, check ${certFile}`);
    const x509 = new crypto.X509Certificate(certs[0]!);
    let keyText: string;
    try { keyText = fs.readFileSync(keyFile, 'latin1'); } catch {
      fail(ctx, `AH02564: Failed to configure encrypted (?) private key ${keyId}, check ${keyFile}`);
    }
    const keyBlock = pemBlocks(keyText, /PRIVATE KEY$/)[0];
    if (keyBlock === undefined) fail(ctx, `AH02564: Failed to configure encrypted (?) private key ${keyId}, check ${keyFile}`);
    let passphrase: string | undefined;
    let key: crypto.KeyObject;
    const encrypted = /ENCRYPTED/.test(keyBlock);
    try {
      if (encrypted) {
        const p = passPhrase(sc.passPhraseDialog ?? { type: 'builtin' }, id, keyTypeName(keyBlock), phrases);
        if (p === null) fail(ctx, `AH02564: Failed to configure encrypted (?) private key ${keyId}, check ${keyFile}`);
        passphrase = p;
      }
      key = crypto.createPrivateKey({ key: keyBlock, passphrase });
    } catch (e) {
      if (e instanceof InitError) throw e;
      if (encrypted) {
        fail(ctx, `AH02564: Failed to configure encrypted (?) private key ${keyId}, check ${keyFile}`);
      }
      fail(ctx, `AH02564: Failed to configure encrypted (?) private key ${keyId}, check ${keyFile}`);
    }
    if (!x509.checkPrivateKey(key)) {
      fail(ctx, `AH02565: Certificate and private key ${keyId} from ${certFile} and ${keyFile} do not match`);
    }
    ctx.log('ssl', APLOG_INFO, `AH02568: Certificate and private key ${keyId} configured from ${certFile} and ${keyFile}`);
    if (x509.ca) warn(ctx, `AH01906: ${keyId} server certificate is a CA certificate (BasicConstraints: CA == TRUE !?)`);
    const name = s.serverHostname;
    // checkIP throws for a name that is not an address (Node 20): asked only of addresses.
    if (name !== undefined && x509.checkHost(name) === undefined && (net.isIP(name) === 0 || x509.checkIP(name) === undefined)) {
      warn(ctx, `AH01909: ${keyId} server certificate does NOT include an ID which matches the server name`);
    }
    // plume's own check: httpd serves an expired certificate without a word.
    const end = Date.parse(x509.validTo);
    if (!Number.isNaN(end) && end < Date.now()) {
      warn(ctx, `PL02211: ${keyId} server certificate from ${certFile} expired on ${x509.validTo}`);
    }
    byType.set(key.asymmetricKeyType ?? 'unknown', { cert: certs.join('\n'), key, keyPem: keyBlock, passphrase, file: certFile, x509 });
    extraCa.push(...certs.slice(1));
  });
  let chain = '';
  if (sc.chainFile !== undefined) {
    try {
      const c = readCerts(sc.chainFile);
      chain = c.join('\n');
      ctx.log('ssl', APLOG_DEBUG, `AH01904: Configuring server certificate chain (${c.length} CA certificate${c.length === 1 ? '' : 's'})`);
    } catch {
      fail(ctx, 'AH01903: Failed to configure CA certificate chain!');
    }
  }
  // Client verification: the CAs, and the revocation lists when checking is on.
  const ca: string[] = [];
  if (sc.caFile !== undefined) {
    try { ca.push(...readCerts(sc.caFile)); } catch { fail(ctx, `AH02210: Failed to load SSLCACertificateFile: ${sc.caFile}`); }
  }
  if (sc.caPath !== undefined) ca.push(...readDirCerts(sc.caPath, /CERTIFICATE$/));
  const verify = sc.verifyClient ?? 'none';
  const wantsCerts = verify !== 'none' || dirVerify;
  if (wantsCerts && ca.length === 0 && verify !== 'optional_no_ca') {
    warn(ctx, 'AH01897: Init: Oops, you want to request client authentication, but no CAs are known for verification!? [Hint: SSLCACertificate*]');
  }
  const crl = sc.crlCheck ?? { mode: 'none', noCrlForCertOk: false };
  const crls: string[] = [];
  if (sc.crlFile === undefined && sc.crlPath === undefined) {
    if (crl.mode !== 'none') fail(ctx, `AH01899: Host ${id}: CRL checking has been enabled, but neither SSLCARevocationFile nor SSLCARevocationPath is configured`);
  } else if (crl.mode === 'none') {
    warn(ctx, `AH01902: Host ${id}: X.509 CRL storage locations configured, but CRL checking (SSLCARevocationCheck) is not enabled`);
  } else {
    if (sc.crlFile !== undefined) {
      try { crls.push(...pemBlocks(fs.readFileSync(sc.crlFile, 'latin1'), /X509 CRL$/)); } catch {
        fail(ctx, `AH01901: Host ${id}: unable to configure X.509 CRL storage for certificate revocation`);
      }
    }
    if (sc.crlPath !== undefined) crls.push(...readDirCerts(sc.crlPath, /X509 CRL$/));
  }
  const ocsp = ocspSettings(ctx, sc, ca);
  const stapling = sc.useStapling === true ? staplingSettings(sc, byType, chain, ca) : null;
  const proto = protocolOptions(sc.protocol ?? PROTO_DEFAULT);
  if (proto === null) fail(ctx, 'AH02231: No SSL protocols available [hint: SSLProtocol]');
  // httpd 2.4.71 refuses client-initiated renegotiation at OpenSSL's level (a TLS 1.2 client
  // asking gets a no_renegotiation alert); testssl.sh reports a server without it as open to
  // a renegotiation DoS.
  let secureOptions = proto.off | crypto.constants.SSL_OP_NO_SSLv3 | crypto.constants.SSL_OP_NO_COMPRESSION
    | (crypto.constants.SSL_OP_NO_RENEGOTIATION ?? 0);
  if (sc.honorCipherOrder === true) secureOptions |= crypto.constants.SSL_OP_CIPHER_SERVER_PREFERENCE;
  if (sc.sessionTickets === false) secureOptions |= crypto.constants.SSL_OP_NO_TICKET;
  if (sc.insecureReneg === true) secureOptions |= crypto.constants.SSL_OP_ALLOW_UNSAFE_LEGACY_RENEGOTIATION;
  // SSLOpenSSLConfCmd: the commands Node's TLS options can carry (see config: others are refused).
  const conf = openSslConf(sc.openSslConfCmds);
  secureOptions |= conf.setOptions;
  secureOptions &= ~conf.clearOptions;
  const cipherList = conf.cipherString ?? sc.cipherSuite ?? 'DEFAULT';
  const tls13 = conf.ciphersuites ?? sc.tls13Ciphers;
  const types = [...byType.values()];
  const maxVersion = conf.maxVersion ?? proto.maxVersion;
  const options: tls.SecureContextOptions = {
    cert: types.map((t) => (chain !== '' ? `${t.cert}\n${chain}` : t.cert)),
    key: types.map((t) => ({ pem: t.keyPem, passphrase: t.passphrase })),
    ca: ca.length > 0 ? ca : undefined,
    crl: crls.length > 0 ? crls : undefined,
    ciphers: tls13 !== undefined ? `${tls13}:${cipherList}` : cipherList,
    minVersion: conf.minVersion ?? proto.minVersion,
    maxVersion,
    secureOptions,
    honorCipherOrder: sc.honorCipherOrder === true,
    sessionTimeout: sc.sessionCacheTimeout ?? 300,
    sessionIdContext: crypto.createHash('md5').update(id).digest('hex'),
    ticketKeys: sc.sessionTicketKeyFile !== undefined ? readTicketKeys(ctx, sc.sessionTicketKeyFile) : ticketKeys,
    ecdhCurve: conf.curves,
    sigalgs: conf.sigalgs,
    // DHE: SSLOpenSSLConfCmd DHParameters, else DH parameters appended to the first certificate
    // file, else OpenSSL's automatic choice by key size (httpd's SSL_CTX_set_dh_auto).
    dhparam: conf.dhparam ?? dhFromCertFile(sc.certFiles[0]) ?? 'auto',
  };
  let context: tls.SecureContext;
  try {
    context = tls.createSecureContext(options);
  } catch (e) {
    const msg = (e as Error).message;
    if (/cipher/i.test(msg)) {
      ctx.log('ssl', APLOG_EMERG, 'AH01898: Unable to configure permitted SSL ciphers');
      fail(ctx, `SSL Library Error: ${msg}`);
    }
    if (conf.used) ctx.log('ssl', APLOG_EMERG, `AH02407: "SSLOpenSSLConfCmd" failed for ${id}`);
    fail(ctx, `SSL Library Error: ${msg}`);
  }
  // Without SSLSessionTicketKeyFile httpd runs on OpenSSL's own ticket keys, which renew the
  // ticket of a TLS 1.3 resumption (tickets.ts).
  if (maxVersion === 'TLSv1.3' && (secureOptions & crypto.constants.SSL_OP_NO_TICKET) === 0 && sc.sessionTicketKeyFile === undefined) {
    renewTls13Tickets(context, ticketKeys);
  }
  const certCompat = JSON.stringify([
    sc.protocol ?? PROTO_DEFAULT, sc.cipherSuite ?? null, sc.tls13Ciphers ?? null, [...sc.certFiles].sort(), [...sc.keyFiles].sort(),
  ]);
  const authCompat = JSON.stringify([
    sc.verifyDepth ?? 1, verify, sc.caPath ?? null, sc.caFile ?? null, sc.caDnPath ?? null, sc.caDnFile ?? null,
    sc.crlFile ?? null, sc.crlPath ?? null, crl, sc.openSslConfCmds,
  ]);
  return {
    s, id, context, verify, depth: sc.verifyDepth ?? 1,
    requestCert: wantsCerts,
    rejectUnauthorized: verify === 'require',
    crl, hasCa: ca.length > 0, ocsp, stapling, strictSni: sc.strictSni === true,
    cert: types[0]?.x509 ?? null, certCompat, authCompat,
    certs: types.map((t) => ({ file: t.file, cert: t.x509 })),
    ciphers: cipherList,
    tls13: maxVersion === 'TLSv1.3',
    statelessTls13: maxVersion === 'TLSv1.3' && (secureOptions & crypto.constants.SSL_OP_NO_TICKET) === 0,
  };
}

/** The OCSP client's settings, with httpd's defaults (5 minutes of skew, any age, 10 s). */
function ocspSettings(ctx: ConfigContext, sc: SslServerConfig, ca: readonly string[]): OcspSettings | null {
  const mode = sc.ocspEnable?.mode ?? 'off';
  let responderCerts: crypto.X509Certificate[] = [];
  // httpd reads the file whether or not OCSP is on (ssl_init_ocsp_certificates).
  if (sc.ocspResponderCertFile !== undefined) {
    ctx.log('ssl', APLOG_DEBUG, 'Configuring Trusted OCSP certificates');
    try {
      responderCerts = readCerts(sc.ocspResponderCertFile).map((p) => new crypto.X509Certificate(p));
    } catch { responderCerts = []; }
    if (responderCerts.length === 0) {
      ctx.log('ssl', APLOG_ERR, 'Unable to configure OCSP Trusted Certificates');
      throw new InitError('Unable to configure OCSP Trusted Certificates');
    }
  }
  if (mode === 'off') return null;
  const proxy = sc.ocspProxyUrl !== undefined ? parseUri(sc.ocspProxyUrl) ?? undefined : undefined;
  return {
    mode: mode === 'leaf' ? 'leaf' : 'chain',
    noOcspForCertOk: sc.ocspEnable?.noOcspForCertOk === true,
    forceDefault: sc.ocspOverride === true,
    defaultResponder: sc.ocspDefaultResponder,
    skewSec: sc.ocspSkew ?? 300,
    maxAgeSec: sc.ocspMaxAge ?? -1,
    timeoutMs: (sc.ocspTimeout ?? 10) * 1000,
    nonce: sc.ocspNonce !== false,
    proxy,
    noVerify: sc.ocspNoVerify === true,
    responderCerts,
    store: ca.map((p) => new crypto.X509Certificate(p)),
  };
}

/** OCSP stapling's settings (modssl_init_stapling's defaults), with each certificate's issuer
 *  found in its own file, the chain file or the CA certificates (stapling_get_issuer). */
function staplingSettings(
  sc: SslServerConfig, byType: ReadonlyMap<string, { cert: string; x509: crypto.X509Certificate }>, chain: string, ca: readonly string[],
): StaplingSettings {
  const pool: crypto.X509Certificate[] = [];
  for (const t of byType.values()) for (const p of pemBlocks(t.cert, /CERTIFICATE$/).slice(1)) pool.push(new crypto.X509Certificate(p));
  if (chain !== '') for (const p of pemBlocks(chain, /CERTIFICATE$/)) pool.push(new crypto.X509Certificate(p));
  for (const p of ca) pool.push(new crypto.X509Certificate(p));
  const certs = [...byType.values()].map((t) => ({
    cert: t.x509,
    issuer: pool.find((i) => t.x509.checkIssued(i) && t.x509.verify(i.publicKey)) ?? null,
  }));
  return {
    certs,
    skewSec: sc.staplingSkew ?? 300,
    maxAgeSec: sc.staplingMaxAge ?? -1,
    cacheTimeoutSec: sc.staplingCacheTimeout ?? 3600,
    errCacheTimeoutSec: sc.staplingErrCacheTimeout ?? 600,
    returnErrors: sc.staplingReturnErrors !== false,
    fakeTryLater: sc.staplingFakeTryLater !== false,
    timeoutMs: (sc.staplingTimeout ?? 10) * 1000,
    forceUrl: sc.staplingForceUrl,
    proxy: sc.ocspProxyUrl !== undefined ? parseUri(sc.ocspProxyUrl) ?? undefined : undefined,
  };
}

/** A "DH PARAMETERS" block in a certificate file (httpd's modssl_dh_from_file). */
function dhFromCertFile(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  try { return pemBlocks(fs.readFileSync(file, 'latin1'), /^DH PARAMETERS$/)[0]; } catch { return undefined; }
}

function readTicketKeys(ctx: ConfigContext, file: string): Buffer {
  let b: Buffer;
  try { b = fs.readFileSync(file); } catch { fail(ctx, `PL02212: Failed to open ticket key file ${file}`); }
  if (b.length < 48) fail(ctx, `PL02213: Failed to read 48 bytes from ${file}`);
  return b.subarray(0, 48);
}

/** SSLOpenSSLConfCmd names plume carries out, through Node's TLS options. */
export const CONF_COMMANDS: ReadonlySet<string> = new Set([
  'CipherString', 'Ciphersuites', 'MinProtocol', 'MaxProtocol', 'Curves', 'Groups', 'ECDHParameters',
  'SignatureAlgorithms', 'DHParameters', 'Options',
]);

interface ConfEffect {
  cipherString?: string;
  ciphersuites?: string;
  minVersion?: tls.SecureVersion;
  maxVersion?: tls.SecureVersion;
  curves?: string;
  sigalgs?: string;
  dhparam?: Buffer;
  setOptions: number;
  clearOptions: number;
  used: boolean;
}

const CONF_OPTIONS: Readonly<Record<string, number>> = {
  SessionTicket: crypto.constants.SSL_OP_NO_TICKET,
  Compression: crypto.constants.SSL_OP_NO_COMPRESSION,
  ServerPreference: crypto.constants.SSL_OP_CIPHER_SERVER_PREFERENCE,
  UnsafeLegacyRenegotiation: crypto.constants.SSL_OP_ALLOW_UNSAFE_LEGACY_RENEGOTIATION,
  NoRenegotiation: crypto.constants.SSL_OP_NO_RENEGOTIATION ?? 0,
  PrioritizeChaCha: crypto.constants.SSL_OP_PRIORITIZE_CHACHA ?? 0,
};
/** Options whose "on" means the SSL_OP_NO_* bit is clear. */
const CONF_NEGATED = new Set(['SessionTicket', 'Compression']);

function toVersion(v: string): tls.SecureVersion | undefined {
  return v === 'TLSv1' || v === 'TLSv1.1' || v === 'TLSv1.2' || v === 'TLSv1.3' ? v : undefined;
}

function openSslConf(cmds: readonly (readonly [string, string])[]): ConfEffect {
  const e: ConfEffect = { setOptions: 0, clearOptions: 0, used: cmds.length > 0 };
  for (const [name, value] of cmds) {
    switch (name) {
      case 'CipherString': e.cipherString = value; break;
      case 'Ciphersuites': e.ciphersuites = value; break;
      case 'MinProtocol': e.minVersion = toVersion(value); break;
      case 'MaxProtocol': e.maxVersion = toVersion(value); break;
      case 'Curves': case 'Groups': case 'ECDHParameters': e.curves = value; break;
      case 'SignatureAlgorithms': e.sigalgs = value; break;
      case 'DHParameters': e.dhparam = fs.readFileSync(value); break;
      case 'Options':
        for (const w of value.split(',')) {
          const neg = w.startsWith('-');
          const k = w.replace(/^[-+]/, '');
          const bit = CONF_OPTIONS[k];
          if (bit === undefined) continue;
          const set = CONF_NEGATED.has(k) ? neg : !neg;
          if (set) e.setOptions |= bit; else e.clearOptions |= bit;
        }
        break;
    }
  }
  return e;
}

/** Whether an SSLOpenSSLConfCmd Options value names only options plume knows. */
export function knownConfOptions(value: string): string | undefined {
  for (const w of value.split(',')) {
    const k = w.replace(/^[-+]/, '');
    if (CONF_OPTIONS[k] === undefined) return k;
  }
  return undefined;
}
