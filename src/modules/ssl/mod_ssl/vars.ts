// The SSL_* variables (modules/ssl/ssl_engine_vars.c): what a TLS connection, its session and
// its certificates look like to CGI/SSI environments (SSLOptions +StdEnvVars), to LogFormat's
// %{NAME}x and %{NAME}c, and to expressions (%{SSL_*}, %{HTTPS}, SSLRequire).
//
// Distinguished names print as httpd 2.4 prints them (RFC 2253: most specific first, comma
// separated), or as 2.2 did with SSLOptions +LegacyDNStringFormat ("/C=US/O=x/CN=y").

import * as crypto from 'node:crypto';
import type * as tls from 'node:tls';
import type { ServerRec } from '../../../server/server-rec.js';
import { readTlv, children, oid, contents, DerError } from '../../../lib/der.js';
import { APACHE_COMPAT_VERSION } from '../../../server/version.js';

/** What mod_ssl knows about one connection (SSLConnRec). */
export class SslConn {
  private client: crypto.X509Certificate | null | undefined = undefined;
  private clientChain: crypto.X509Certificate[] | undefined = undefined;
  /** The verification result the request hooks computed (SSL_CLIENT_VERIFY). */
  verify: string | undefined = undefined;
  private sessionIdHex: string | undefined = undefined;

  constructor(
    /** null: plain HTTP arrived on the TLS port (answered 400 by the request hooks). */
    readonly sock: tls.TLSSocket | null,
    /** The server whose TLS settings the handshake used (SNI's choice, else the base). */
    readonly handshakeServer: ServerRec,
    /** The host name the client sent with SNI. */
    readonly sni: string | undefined,
    /** The handshake server's first certificate (SSL_SERVER_* when the socket cannot say). */
    private readonly firstCert: crypto.X509Certificate | null,
    /** The ClientHello offered post-handshake authentication (TLS 1.3). */
    readonly pha: boolean,
  ) {}

  /** Whether the client's certificate counts: the handshake host asks for one, or a
   *  directory did (httpd has it only once it asked; see hooks.ts on renegotiation). */
  certRevealed = false;

  /** SSLOCSPEnable found the client's certificate bad (the verify error's text); the request
   *  hooks report it when a directory requires a certificate. */
  ocspFailure: string | undefined = undefined;
  /** The request hooks asked the responder about the client's certificate already. */
  ocspChecked = false;

  /** The plain-HTTP request has been answered: the error is not repeated. */
  plainReported = false;

  private served: crypto.X509Certificate | null | undefined = undefined;
  /** The certificate this connection was served with (RSA or ECDSA: SSL_SERVER_*). */
  get serverCert(): crypto.X509Certificate | null {
    if (this.served === undefined) this.served = this.sock?.getX509Certificate?.() ?? this.firstCert;
    return this.served;
  }

  /** The client's certificate (null: none sent). */
  clientCert(): crypto.X509Certificate | null {
    if (!this.certRevealed) return null;
    if (this.client !== undefined) return this.client;
    this.client = null;
    const raw = this.sock?.getPeerX509Certificate?.();
    if (raw !== undefined) this.client = raw;
    return this.client;
  }

  /** The certificates the client sent after its own (SSL_CLIENT_CERT_CHAIN_n). */
  chain(): crypto.X509Certificate[] {
    if (!this.certRevealed) return [];
    if (this.clientChain !== undefined) return this.clientChain;
    const out: crypto.X509Certificate[] = [];
    const leaf = this.sock?.getPeerCertificate(true);
    let c = leaf?.issuerCertificate;
    const seen = new Set<string>();
    while (c !== undefined && c.raw !== undefined && !seen.has(c.fingerprint256)) {
      seen.add(c.fingerprint256);
      out.push(new crypto.X509Certificate(c.raw));
      if (c.issuerCertificate === c) break;
      c = c.issuerCertificate;
    }
    this.clientChain = out;
    return out;
  }

  /** The session id in hexadecimal, uppercase (httpd's modssl_SSL_SESSION_id2sz). */
  sessionId(): string {
    if (this.sessionIdHex !== undefined) return this.sessionIdHex;
    this.sessionIdHex = '';
    const der = this.sock?.getSession();
    if (der !== undefined) {
      try {
        // SSL_SESSION ::= SEQUENCE { version, sslVersion, cipher OCTET STRING, sessionID OCTET STRING, ... }
        const seq = readTlv(der, 0);
        const items = children(der, seq);
        const id = items[3];
        if (id !== undefined && id.tag === 0x04) this.sessionIdHex = contents(der, id).toString('hex').toUpperCase();
      } catch (e) {
        if (!(e instanceof DerError)) throw e;
      }
    }
    return this.sessionIdHex;
  }
}

// ---- distinguished names -------------------------------------------------------------------

/** Node's short names for DN attributes (OpenSSL's), and httpd's variable suffixes. */
const DN_SUFFIX: Readonly<Record<string, string>> = {
  C: 'C', ST: 'ST', L: 'L', O: 'O', OU: 'OU', CN: 'CN', title: 'T', initials: 'I', GN: 'G', givenName: 'G',
  SN: 'S', surname: 'S', description: 'D', UID: 'UID', emailAddress: 'Email',
};

/** One attribute of a name: OpenSSL's short name and the value (unescaped). */
interface Ava {
  readonly key: string;
  readonly value: string;
}

/** Parses Node's multi-line DN text ("C=US\nO=x\nCN=y", RFC 2253-escaped values). */
function parseName(text: string): Ava[] {
  const out: Ava[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    for (const part of splitPlus(line)) {
      const eq = part.indexOf('=');
      if (eq < 0) continue;
      out.push({ key: part.slice(0, eq), value: unescape2253(part.slice(eq + 1)) });
    }
  }
  return out;
}

/** A multi-valued RDN ("a=1 + b=2") into its AVAs. */
function splitPlus(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === '\\' && i + 1 < line.length) { cur += ch + line[i + 1]; i++; continue; }
    if (ch === '+' && line[i - 1] === ' ' && line[i + 1] === ' ') { out.push(cur.trimEnd()); cur = ''; i++; continue; }
    cur += ch;
  }
  out.push(cur);
  return out;
}

function unescape2253(v: string): string {
  return v.replace(/\\([0-9A-Fa-f]{2}|.)/g, (_m, g: string) => (g.length === 2 ? String.fromCharCode(parseInt(g, 16)) : g));
}

function escape2253(v: string): string {
  let s = v.replace(/[,+"\\<>;]/g, (c) => '\\' + c);
  if (s.startsWith('#') || s.startsWith(' ')) s = '\\' + s;
  if (s.endsWith(' ') && s.length > 1) s = s.slice(0, -1) + '\\ ';
  return s;
}

/** The whole DN as httpd 2.4 prints it (RFC 2253) or, `legacy`, as 2.2 did. */
export function formatDn(text: string, legacy: boolean): string {
  const avas = parseName(text);
  if (legacy) return avas.map((a) => `/${a.key}=${a.value}`).join('');
  return avas.slice().reverse().map((a) => `${a.key}=${escape2253(a.value)}`).join(',');
}

/** One component: SSL_CLIENT_S_DN_CN ("CN"), or its n-th occurrence ("OU_1"). */
function dnComponent(text: string, suffix: string): string | undefined {
  const m = /^([A-Za-z]+)(?:_(\d+))?$/.exec(suffix);
  if (m === null) return undefined;
  const want = m[1] === 'SP' ? 'ST' : m[1]!;
  const idx = m[2] === undefined ? 0 : Number(m[2]);
  let n = 0;
  for (const a of parseName(text)) {
    if (DN_SUFFIX[a.key] !== want) continue;
    if (n++ === idx) return a.value;
  }
  return undefined;
}

// ---- certificates --------------------------------------------------------------------------

/** OpenSSL's long names of the usual signature algorithms (OBJ_nid2ln). */
const SIG_NAMES: Readonly<Record<string, string>> = {
  '1.2.840.113549.1.1.5': 'sha1WithRSAEncryption',
  '1.2.840.113549.1.1.11': 'sha256WithRSAEncryption',
  '1.2.840.113549.1.1.12': 'sha384WithRSAEncryption',
  '1.2.840.113549.1.1.13': 'sha512WithRSAEncryption',
  '1.2.840.113549.1.1.4': 'md5WithRSAEncryption',
  '1.2.840.113549.1.1.10': 'rsassaPss',
  '1.2.840.10045.4.1': 'ecdsa-with-SHA1',
  '1.2.840.10045.4.3.2': 'ecdsa-with-SHA256',
  '1.2.840.10045.4.3.3': 'ecdsa-with-SHA384',
  '1.2.840.10045.4.3.4': 'ecdsa-with-SHA512',
  '1.3.101.112': 'ED25519',
  '1.3.101.113': 'ED448',
};
const KEY_NAMES: Readonly<Record<string, string>> = {
  rsa: 'rsaEncryption', 'rsa-pss': 'rsassaPss', ec: 'id-ecPublicKey', dsa: 'dsaEncryption', ed25519: 'ED25519', ed448: 'ED448',
};

/** The signature algorithm's name (A_SIG): the certificate's second top-level element. */
function signatureAlgorithm(cert: crypto.X509Certificate): string {
  try {
    const der = cert.raw;
    const top = children(der, readTlv(der, 0));
    const alg = top[1];
    if (alg === undefined) return 'UNKNOWN';
    const id = children(der, alg)[0];
    if (id === undefined) return 'UNKNOWN';
    const o = oid(der, id);
    return SIG_NAMES[o] ?? o;
  } catch {
    return 'UNKNOWN';
  }
}

/** The X.509 version (M_VERSION): the tbsCertificate's explicit [0] field, else 1. */
function certVersion(cert: crypto.X509Certificate): string {
  try {
    const der = cert.raw;
    const tbs = children(der, readTlv(der, 0))[0]!;
    const first = children(der, tbs)[0]!;
    if (first.tag !== 0xa0) return '1';
    const v = children(der, first)[0]!;
    return String(contents(der, v).readUIntBE(0, v.end - v.body) + 1);
  } catch {
    return '1';
  }
}

/** The certificate as PEM, as PEM_write_bio_X509 writes it. */
export function pem(cert: crypto.X509Certificate): string {
  const b64 = cert.raw.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

/** subjectAltName entries of one kind ("DNS", "email", "othername:msUPN"). */
function sanEntries(cert: crypto.X509Certificate, kind: string): string[] {
  const san = cert.subjectAltName;
  if (san === undefined) return [];
  const out: string[] = [];
  for (const part of san.split(/, (?=[A-Za-z ]+:)/)) {
    const c = part.indexOf(':');
    if (c < 0) continue;
    const k = part.slice(0, c);
    let v = part.slice(c + 1);
    if (v.startsWith('"') && v.endsWith('"')) { try { v = JSON.parse(v) as string; } catch { /* as it is */ } }
    if (k === kind) out.push(v);
  }
  return out;
}

/** Days from now to the end of validity (V_REMAIN; 0 when past). */
function remainDays(cert: crypto.X509Certificate): string {
  const end = Date.parse(cert.validTo);
  if (Number.isNaN(end)) return '0';
  const d = Math.floor((end - Date.now()) / 86400000);
  return String(d > 0 ? d : 0);
}

/** SSL_{CLIENT,SERVER}_<rest> for one certificate (ssl_var_lookup_ssl_cert). */
function certVar(cert: crypto.X509Certificate, rest: string, legacy: boolean): string | undefined {
  switch (rest) {
    case 'M_VERSION': return certVersion(cert);
    case 'M_SERIAL': return cert.serialNumber.toUpperCase();
    case 'V_START': return cert.validFrom;
    case 'V_END': return cert.validTo;
    case 'V_REMAIN': return remainDays(cert);
    case 'S_DN': return formatDn(cert.subject, legacy);
    case 'I_DN': return formatDn(cert.issuer, legacy);
    case 'A_SIG': return signatureAlgorithm(cert);
    case 'A_KEY': { const t = cert.publicKey.asymmetricKeyType; return t === undefined ? 'UNKNOWN' : KEY_NAMES[t] ?? t; }
    case 'CERT': return pem(cert);
    case 'B64CERT': return cert.raw.toString('base64');
  }
  if (rest.startsWith('S_DN_')) return dnComponent(cert.subject, rest.slice(5));
  if (rest.startsWith('I_DN_')) return dnComponent(cert.issuer, rest.slice(5));
  const san = /^SAN_(Email|DNS|OTHER_msUPN|OTHER_dnsSRV)_(\d+)$/.exec(rest);
  if (san !== null) {
    const kind = san[1] === 'Email' ? 'email' : san[1] === 'DNS' ? 'DNS' : san[1] === 'OTHER_msUPN' ? 'othername:UPN' : 'othername:SRVName';
    return sanEntries(cert, kind)[Number(san[2])];
  }
  return undefined;
}

// ---- ciphers -------------------------------------------------------------------------------

/** The secret key bits of a cipher (SSL_CIPHER_USEKEYSIZE / ALGKEYSIZE), from its name. */
function cipherBits(name: string): number {
  if (/AES_?256|AES256|CHACHA20|CAMELLIA256|ARIA256/.test(name)) return 256;
  if (/AES_?128|AES128|CAMELLIA128|ARIA128|SEED|IDEA/.test(name)) return 128;
  if (/3DES|DES-CBC3|DES_EDE/.test(name)) return 168;
  if (/RC4/.test(name)) return 128;
  if (/NULL/.test(name)) return 0;
  return 0;
}

// ---- the lookup ----------------------------------------------------------------------------

/** SSL_VERSION_LIBRARY: the library as OpenSSL names itself. */
const LIBRARY = `OpenSSL/${process.versions.openssl.replace(/\+.*$/, '')}`;
const INTERFACE = `mod_ssl/${APACHE_COMPAT_VERSION}`;

/**
 * An SSL variable for a connection (ssl_var_lookup): undefined for an unknown name, or one
 * that has no value here (httpd's NULL / empty). `legacy`: +LegacyDNStringFormat.
 */
export function sslVar(conn: SslConn | undefined, name: string, legacy: boolean): string | undefined {
  const sock = conn?.sock ?? null;
  if (name === 'HTTPS') return sock !== null ? 'on' : 'off';
  if (!name.startsWith('SSL_')) return undefined;
  const v = name.slice(4);
  if (v === 'VERSION_INTERFACE') return INTERFACE;
  if (v === 'VERSION_LIBRARY') return LIBRARY;
  if (sock === null || conn === undefined) return undefined;
  switch (v) {
    case 'PROTOCOL': return sock.getProtocol() ?? undefined;
    case 'SESSION_ID': return conn.sessionId();
    case 'SESSION_RESUMED': return sock.isSessionReused() ? 'Resumed' : 'Initial';
    case 'CIPHER': return sock.getCipher().name;
    case 'CIPHER_EXPORT': return 'false';
    case 'CIPHER_USEKEYSIZE':
    case 'CIPHER_ALGKEYSIZE': return String(cipherBits(sock.getCipher().name));
    case 'COMPRESS_METHOD': return 'NULL';
    case 'SECURE_RENEG': return sock.getProtocol() === 'TLSv1.3' ? 'false' : 'true';
    case 'TLS_SNI': return conn.sni;
    case 'CLIENT_VERIFY': return conn.verify ?? (conn.clientCert() === null ? 'NONE' : 'SUCCESS');
  }
  if (v.startsWith('CLIENT_CERT_CHAIN_')) {
    const n = Number(v.slice(18));
    const c = Number.isInteger(n) ? conn.chain()[n] : undefined;
    return c === undefined ? undefined : pem(c);
  }
  if (v.startsWith('CLIENT_')) {
    const c = conn.clientCert();
    return c === null ? undefined : certVar(c, v.slice(7), legacy);
  }
  if (v.startsWith('SERVER_')) {
    const c = conn.serverCert;
    return c === null ? undefined : certVar(c, v.slice(7), legacy);
  }
  return undefined;
}

/** The variables +StdEnvVars exports (ssl_hook_Fixup's ssl_hook_Fixup_vars), in httpd's order;
 *  the certificates themselves only with +ExportCertData. */
export const STD_ENV_VARS: readonly string[] = [
  'SSL_VERSION_INTERFACE', 'SSL_VERSION_LIBRARY', 'SSL_PROTOCOL', 'SSL_SECURE_RENEG', 'SSL_COMPRESS_METHOD',
  'SSL_CIPHER', 'SSL_CIPHER_EXPORT', 'SSL_CIPHER_USEKEYSIZE', 'SSL_CIPHER_ALGKEYSIZE',
  'SSL_CLIENT_VERIFY', 'SSL_CLIENT_M_VERSION', 'SSL_CLIENT_M_SERIAL', 'SSL_CLIENT_V_START', 'SSL_CLIENT_V_END',
  'SSL_CLIENT_V_REMAIN', 'SSL_CLIENT_S_DN', 'SSL_CLIENT_I_DN', 'SSL_CLIENT_A_KEY', 'SSL_CLIENT_A_SIG',
  'SSL_CLIENT_CERT_RFC4523_CEA',
  'SSL_SERVER_M_VERSION', 'SSL_SERVER_M_SERIAL', 'SSL_SERVER_V_START', 'SSL_SERVER_V_END',
  'SSL_SERVER_S_DN', 'SSL_SERVER_I_DN', 'SSL_SERVER_A_KEY', 'SSL_SERVER_A_SIG', 'SSL_SESSION_ID', 'SSL_SESSION_RESUMED',
];

/** The DN components +StdEnvVars also exports (modssl_var_extract_dns): every attribute of
 *  the client's and the server's subject and issuer names, _n for repeats. */
export function dnEnvVars(conn: SslConn, legacy: boolean, out: Map<string, string>): void {
  void legacy;
  const add = (prefix: string, text: string): void => {
    const counts = new Map<string, number>();
    for (const a of parseName(text)) {
      const suffix = DN_SUFFIX[a.key];
      if (suffix === undefined) continue;
      const n = counts.get(suffix) ?? 0;
      counts.set(suffix, n + 1);
      out.set(n === 0 ? `${prefix}_${suffix}` : `${prefix}_${suffix}_${n}`, a.value);
    }
  };
  const client = conn.clientCert();
  if (client !== null) { add('SSL_CLIENT_S_DN', client.subject); add('SSL_CLIENT_I_DN', client.issuer); }
  const server = conn.serverCert;
  if (server !== null) { add('SSL_SERVER_S_DN', server.subject); add('SSL_SERVER_I_DN', server.issuer); }
}

/** The SAN entries +StdEnvVars exports (modssl_var_extract_san_entries). */
export function sanEnvVars(conn: SslConn, out: Map<string, string>): void {
  const add = (prefix: string, cert: crypto.X509Certificate): void => {
    sanEntries(cert, 'email').forEach((v, i) => out.set(`${prefix}_SAN_Email_${i}`, v));
    sanEntries(cert, 'DNS').forEach((v, i) => out.set(`${prefix}_SAN_DNS_${i}`, v));
  };
  const client = conn.clientCert();
  if (client !== null) add('SSL_CLIENT', client);
  if (conn.serverCert !== null) add('SSL_SERVER', conn.serverCert);
}
