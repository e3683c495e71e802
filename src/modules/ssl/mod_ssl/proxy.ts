// The client side of mod_ssl (SSLProxy*, ssl_engine_io.c's proxy handshake): TLS to an HTTPS
// backend for mod_proxy, which finds it in the provider registry (group "ssl_proxy") and never
// imports mod_ssl. The checks after the handshake are httpd's, with 2.4's defaults (the
// specification's row): SSLProxyCheckPeerExpire and SSLProxyCheckPeerName (or the older
// SSLProxyCheckPeerCN) are on unless turned off, so a backend whose certificate is outdated or
// names another host gets a 502 from the proxy, with httpd's log line.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { ServerRec } from '../../../server/server-rec.js';
import { PROTO_DEFAULT, PROTO_TLSV1, PROTO_TLSV1_1, PROTO_TLSV1_2, PROTO_TLSV1_3, type SslProxyConfig } from './config.js';

/** Why a proxy handshake did not give a usable connection: the status for the client (502)
 *  and httpd's log line. */
export class SslProxyError extends Error {
  readonly status = 502;
}

export interface SslProxyProvider {
  /** SSLProxyEngine on for this server. */
  enabled(s: ServerRec): boolean;
  /**
   * TLS over a connected socket to a backend named `host` (SNI unless an IP address, and the
   * name the certificate must match); resolves with the TLS socket once the handshake and the
   * peer checks pass, rejects with an SslProxyError otherwise (the socket is then closed).
   * `perDir` is the request's per-directory vector (with the backend's <Proxy> section merged):
   * SSLProxy* set there override the server's. `alpn`: protocols to propose, one of which the
   * backend must select (ssl_io_filter_handshake's check of "proxy-request-alpn-protos").
   */
  connect(s: ServerRec, socket: net.Socket, host: string, perDir?: readonly unknown[], alpn?: readonly string[]): Promise<tls.TLSSocket>;
}

declare module '../../../server/module.js' {
  interface ProviderGroups {
    ssl_proxy: SslProxyProvider;
  }
}

/** ssl_io_filter_handshake's ALPN check: with protocols proposed, the backend must select one
 *  of them (a server that ignores ALPN fails the handshake). */
function alpnCheck(t: tls.TLSSocket, alpn: readonly string[] | undefined): string | undefined {
  if (alpn === undefined || alpn.length === 0) return undefined;
  const sel = t.alpnProtocol;
  if (sel === false || sel === null || sel === '') return `AH10273: SSL Proxy: Peer did not select any of our ALPN protocols [${alpn.join(',')}].`;
  if (!alpn.includes(sel)) return `AH10274: SSL Proxy: Peer proposed ALPN protocol ${sel} which is none of our proposals [${alpn.join(',')}].`;
  return undefined;
}

/** The lowest and highest protocol of an SSLProxyProtocol set. */
function versions(mask: number): { minVersion: tls.SecureVersion; maxVersion: tls.SecureVersion } {
  const all: [number, tls.SecureVersion][] = [[PROTO_TLSV1, 'TLSv1'], [PROTO_TLSV1_1, 'TLSv1.1'], [PROTO_TLSV1_2, 'TLSv1.2'], [PROTO_TLSV1_3, 'TLSv1.3']];
  const on = all.filter(([b]) => mask & b);
  return { minVersion: on[0]?.[1] ?? 'TLSv1.2', maxVersion: on[on.length - 1]?.[1] ?? 'TLSv1.3' };
}

function pemFiles(file: string | undefined, dir: string | undefined): string[] {
  const out: string[] = [];
  if (file !== undefined) out.push(fs.readFileSync(file, 'latin1'));
  if (dir !== undefined) {
    for (const n of fs.readdirSync(dir).sort()) {
      try { out.push(fs.readFileSync(path.join(dir, n), 'latin1')); } catch { /* not a file */ }
    }
  }
  return out;
}

/** One client certificate of SSLProxyMachineCertificateFile/Path (an X509_INFO with its key). */
export interface MachineCert {
  readonly cert: string;
  readonly key: string;
  readonly x509: crypto.X509Certificate;
}

/** A startup error of the machine certificates: httpd's message, and the certificate it is about. */
export interface MachineCertError {
  readonly message: string;
  readonly cert?: crypto.X509Certificate;
}

const INCOMPLETE = 'AH02252: incomplete client cert configured for SSL proxy (missing or encrypted private key?)';

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?-----END \1-----/g;

/**
 * ssl_init_proxy_certs: the PEM blocks of the machine certificate file, then of each file of
 * the directory, read in order; a certificate followed by its private key is a client
 * certificate, a lone certificate is trusted as an issuer (AH10261). A certificate whose key is
 * missing or encrypted (AH02252) or does not match it (AH02326) is a startup error: the
 * message, or the list.
 */
export function loadMachineCerts(file: string | undefined, dir: string | undefined): { certs: MachineCert[]; issuers: string[] } | MachineCertError {
  const certs: MachineCert[] = [];
  const issuers: string[] = [];
  for (const text of pemFiles(file, dir)) {
    let pending: { pem: string; x509: crypto.X509Certificate } | null = null;
    const flush = (): void => { if (pending !== null) issuers.push(pending.pem); pending = null; };
    for (const m of text.matchAll(PEM_BLOCK)) {
      const label = m[1] ?? '';
      if (label === 'CERTIFICATE' || label === 'X509 CERTIFICATE' || label === 'TRUSTED CERTIFICATE') {
        flush();
        try { pending = { pem: m[0], x509: new crypto.X509Certificate(m[0]) }; } catch { /* not a certificate */ }
      } else if (label.endsWith('PRIVATE KEY')) {
        if (pending === null) continue;
        if (label === 'ENCRYPTED PRIVATE KEY' || /Proc-Type: 4,ENCRYPTED/.test(m[0])) {
          return { message: INCOMPLETE };
        }
        let key: crypto.KeyObject;
        try { key = crypto.createPrivateKey(m[0]); } catch { return { message: INCOMPLETE }; }
        if (!pending.x509.checkPrivateKey(key)) return { message: 'AH02326: proxy client certificate and private key do not match', cert: pending.x509 };
        certs.push({ cert: pending.pem, key: m[0], x509: pending.x509 });
        pending = null;
      }
    }
    flush();
  }
  return { certs, issuers };
}

/**
 * The client options for one server's SSLProxy* settings (built once per configuration).
 *
 * DIFFERENCE: httpd chooses the client certificate in the handshake (ssl_callback_proxy_cert):
 * the first whose issuer, or one of whose chain certificates' issuer, is in the backend's list
 * of acceptable CAs, or the first when the backend sends no list. Node's TLS client has no
 * certificate callback and does not show that list, so plume sends the first client
 * certificate of SSLProxyMachineCertificateFile, then of SSLProxyMachineCertificatePath (httpd's
 * choice whenever that certificate is acceptable, as the order of the files is meant to make it).
 *
 * DIFFERENCE: httpd's proxy offers TLS 1.3 post-handshake authentication, so that a backend can
 * ask for the client certificate in a <Location> (SSLVerifyClient require there). Node's TLS
 * client cannot offer it; with a machine certificate configured and TLS 1.2 in
 * SSLProxyProtocol, plume speaks TLS 1.2 to the backend, which can then ask by renegotiation
 * (a backend that asks in the handshake gets the certificate either way).
 */
export function proxyOptions(p: Readonly<SslProxyConfig>): tls.ConnectionOptions {
  const ca = pemFiles(p.caFile, p.caPath);
  const crl = p.crlCheck !== undefined && p.crlCheck.mode !== 'none' ? pemFiles(p.crlFile, p.crlPath) : [];
  const machine = loadMachineCerts(p.machineCertFile, p.machineCertPath);
  if ('message' in machine) throw new SslProxyError(machine.message);
  const chain = p.machineChainFile !== undefined ? fs.readFileSync(p.machineChainFile, 'latin1') : '';
  const cipherList = p.cipherSuite ?? 'DEFAULT';
  const mask = p.protocol ?? PROTO_DEFAULT;
  const first = machine.certs[0];
  const v = versions(first !== undefined && (mask & PROTO_TLSV1_2) !== 0 ? mask & ~PROTO_TLSV1_3 : mask);
  const opts: tls.ConnectionOptions = {
    ...v,
    ciphers: p.tls13Ciphers !== undefined ? `${p.tls13Ciphers}:${cipherList}` : cipherList,
    // Lone certificates of the machine files are trusted issuers too (AH10261).
    ca: ca.length + machine.issuers.length > 0 ? [...ca, ...machine.issuers] : undefined,
    crl: crl.length > 0 ? crl : undefined,
    // SSLProxyVerify none (the default) accepts any certificate; require and optional fail the
    // handshake on one that does not verify (a backend always sends one); optional_no_ca is
    // judged after it (verifyCheck).
    rejectUnauthorized: p.verify === 'require' || p.verify === 'optional',
    // The name checks are httpd's own (below), not Node's.
    checkServerIdentity: () => undefined,
  };
  if (first !== undefined) {
    // The chain sent with it: SSLProxyMachineCertificateChainFile's certificates.
    opts.cert = chain !== '' ? `${first.cert}\n${chain}` : first.cert;
    opts.key = first.key;
  }
  return opts;
}

/** modssl_X509_match_name: the host in the certificate's subjectAltName DNS/IP entries, or
 *  its CN when it has none; wildcards in the leftmost label. */
export function matchesName(cert: import('node:crypto').X509Certificate, host: string): boolean {
  return cert.checkHost(host, { subject: 'default', wildcards: true, partialWildcards: false }) !== undefined
    || (net.isIP(host) !== 0 && cert.checkIP(host) !== undefined);
}

/** Verification errors optional_no_ca lets through (ssl_verify_error_is_optional). */
const OPTIONAL_ERRORS = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'CERT_UNTRUSTED']);

/** The verification half of ssl_callback_SSLVerify for the proxy: optional_no_ca's accepted
 *  errors, and SSLProxyVerifyDepth (default 1: the backend's certificate issued by a trusted
 *  CA). The log line when it fails, or undefined. */
export function verifyCheck(p: Readonly<SslProxyConfig>, sock: tls.TLSSocket): string | undefined {
  const mode = p.verify ?? 'none';
  if (mode === 'none') return undefined;
  const err = sock.authorizationError as (Error & { code?: string }) | null | undefined;
  if (err !== null && err !== undefined) {
    const code = (err as { code?: string }).code ?? String(err);
    if (mode !== 'optional_no_ca' || !OPTIONAL_ERRORS.has(code)) return `AH02039: Certificate Verification: Error: ${err.message ?? code}`;
    return undefined;
  }
  let n = 0;
  const seen = new Set<string>();
  for (let c = sock.getPeerCertificate(true); c !== undefined && c.raw !== undefined && !seen.has(c.fingerprint256); c = c.issuerCertificate) {
    seen.add(c.fingerprint256);
    n++;
    if (c.issuerCertificate === c) break;
  }
  const depth = p.verifyDepth ?? 1;
  if (n - 1 > depth) return `AH02040: Certificate Verification: Certificate Chain too long (chain has ${n - 1} certificates, but maximum allowed are only ${depth})`;
  return undefined;
}

/** The checks after the handshake (ssl_io_filter_handshake, proxy side); the log line of the
 *  first that fails, or undefined. */
export function peerCheck(p: Readonly<SslProxyConfig>, sock: tls.TLSSocket, host: string): string | undefined {
  const cert = sock.getPeerX509Certificate();
  if (p.checkPeerExpire !== false) {
    const now = Date.now();
    if (cert === undefined || Date.parse(cert.validFrom) >= now || Date.parse(cert.validTo) <= now) {
      return 'AH02004: SSL Proxy: Peer certificate is expired';
    }
  }
  if (p.checkPeerName !== false && (p.checkPeerCn !== false || p.checkPeerName === true)) {
    if (cert === undefined || !matchesName(cert, host)) return `AH02411: SSL Proxy: Peer certificate does not match for hostname ${host}`;
  } else if (p.checkPeerCn === true) {
    const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert?.subject ?? '')?.[1] ?? '';
    let match = cn.toLowerCase() === host.toLowerCase();
    if (!match && cn.startsWith('*.')) {
      const dot = host.indexOf('.');
      match = dot >= 0 && host.slice(dot).toLowerCase() === cn.slice(1).toLowerCase();
    }
    if (!match) return `AH02005: SSL Proxy: Peer certificate CN mismatch: Certificate CN: ${cn} Requested hostname: ${host}`;
  }
  return undefined;
}

/** The provider for one configuration generation. */
export function makeProxyProvider(conf: (s: ServerRec) => Readonly<SslProxyConfig> | undefined, dirConf?: (v: readonly unknown[]) => Partial<SslProxyConfig> | undefined): SslProxyProvider {
  const built = new WeakMap<Readonly<SslProxyConfig>, tls.ConnectionOptions>();
  // The server's settings with a <Proxy> section's over them, made once per pair.
  const mergedFor = new WeakMap<object, WeakMap<object, SslProxyConfig>>();
  const effective = (s: ServerRec, perDir: readonly unknown[] | undefined): Readonly<SslProxyConfig> | undefined => {
    const base = conf(s);
    const over = perDir !== undefined && dirConf !== undefined ? dirConf(perDir) : undefined;
    if (base === undefined || over === undefined) return base;
    let m = mergedFor.get(base);
    if (m === undefined) { m = new WeakMap(); mergedFor.set(base, m); }
    let v = m.get(over);
    if (v === undefined) { v = { ...base, ...over }; m.set(over, v); }
    return v;
  };
  return {
    enabled: (s) => conf(s)?.engine === true,
    connect(s, socket, host, perDir, alpn) {
      const p = effective(s, perDir);
      if (p === undefined || p.engine !== true) return Promise.reject(new SslProxyError('AH00961: HTTPS: failed to enable ssl support (is mod_ssl loaded?)'));
      let opts = built.get(p);
      if (opts === undefined) {
        try { opts = proxyOptions(p); } catch (e) { return Promise.reject(e instanceof SslProxyError ? e : new SslProxyError(`AH02003: SSL Proxy connect failed: ${(e as Error).message}`)); }
        built.set(p, opts);
      }
      return new Promise((resolve, reject) => {
        const t = tls.connect({ ...opts, socket, servername: net.isIP(host) === 0 ? host : undefined, ...(alpn !== undefined && alpn.length > 0 ? { ALPNProtocols: [...alpn] } : {}) });
        t.once('secureConnect', () => {
          const failed = verifyCheck(p, t) ?? peerCheck(p, t, host) ?? alpnCheck(t, alpn);
          if (failed !== undefined) { t.destroy(); reject(new SslProxyError(failed)); return; }
          t.removeAllListeners('error');
          resolve(t);
        });
        t.once('error', (e) => { t.destroy(); reject(new SslProxyError(`AH02003: SSL Proxy connect failed: ${e.message}`)); });
      });
    },
  };
}
