// mod_ssl's OCSP client (modules/ssl/ssl_engine_ocsp.c, ssl_util_ocsp.c): SSLOCSPEnable asks an
// OCSP responder about each client certificate (the leaf, or the whole chain but the
// self-issued root), over httpd's small HTTP/1.0 POST client (optionally through
// SSLOCSPProxyURL), and checks the answer as httpd does: status, nonce, signature and signer
// (unless SSLOCSPNoverify), the certificate's status and the response's times. OCSP stapling
// (stapling.ts) sends its queries through the same client.

import * as net from 'node:net';
import type * as crypto from 'node:crypto';
import { errnoOf } from '../../../server/log/error-log.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO } from '../../../server/log/levels.js';
import {
  certIdFor, checkNonce, checkValidity, encodeRequest, findStatus, nonceExtension, parseResponse, responderUrls, verifyBasic,
  RESPONSE_SUCCESSFUL, STATUS_GOOD, STATUS_REVOKED, STATUS_TEXT, type Extension, type Response,
} from '../../../lib/ocsp.js';
import { formatDn } from './vars.js';

/** A log line for the connection: level, message, an OS error. */
export type ConnLog = (level: number, message: string, errno?: { code: number; text: string }) => void;

/** An http: URL as apr_uri_parse splits it (what the OCSP client needs). */
export interface HttpUri {
  readonly scheme: string;
  readonly hostname: string;
  readonly port: number;
  /** "host[:port]" as written. */
  readonly hostinfo: string;
  /** Path and query ("/" when none). */
  readonly pathQuery: string;
}

/** apr_uri_parse for the URLs OCSP uses; null when it has no host name. */
export function parseUri(s: string): HttpUri | null {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)/.exec(s);
  if (m === null) return null;
  const scheme = m[1]!;
  let hostinfo = m[2]!;
  const at = hostinfo.lastIndexOf('@');
  if (at >= 0) hostinfo = hostinfo.slice(at + 1);
  let hostname = hostinfo;
  let port = 0;
  const v6 = /^\[([^\]]*)\](?::(\d*))?$/.exec(hostinfo);
  if (v6 !== null) { hostname = v6[1]!; port = v6[2] ? Number(v6[2]) : 0; }
  else {
    const c = hostinfo.lastIndexOf(':');
    if (c >= 0) {
      if (!/^\d*$/.test(hostinfo.slice(c + 1))) return null;
      port = hostinfo.slice(c + 1) === '' ? 0 : Number(hostinfo.slice(c + 1));
      hostname = hostinfo.slice(0, c);
    }
  }
  if (hostname === '' || port > 65535) return null;
  if (port === 0) port = scheme.toLowerCase() === 'http' ? 80 : scheme.toLowerCase() === 'https' ? 443 : 0;
  return { scheme, hostname, port, hostinfo, pathQuery: m[3] === '' ? '/' : m[3]! };
}

const MAX_HEADERS = 256;
const MAX_CONTENT = 2048 * 1024;

/**
 * modssl_dispatch_ocsp_request: POSTs the DER request (HTTP/1.0, Connection: close) and reads
 * the answer until the responder closes; the response, or null with the reason logged.
 */
export function dispatch(uri: HttpUri, proxy: HttpUri | undefined, timeoutMs: number, request: Buffer, log: ConnLog): Promise<Response | null> {
  const target = proxy !== undefined ? `http://${uri.hostname}:${uri.port}${uri.pathQuery}` : uri.pathQuery;
  const head = `POST ${target} HTTP/1.0\r\nHost: ${uri.hostname}:${uri.port}\r\nContent-Type: application/ocsp-request\r\n`
    + `Connection: close\r\nContent-Length: ${request.length}\r\n\r\n`;
  const hop = proxy ?? uri;
  const what = proxy !== undefined ? 'proxy' : 'OCSP responder';
  log(APLOG_DEBUG, `AH01973: connecting to ${what} '${uri.hostinfo}'`);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let connected = false;
    let settled = false;
    const sock = net.connect({ host: hop.hostname, port: hop.port });
    const finish = (r: Response | null): void => {
      if (settled) return;
      settled = true;
      sock.destroy();
      resolve(r);
    };
    sock.setTimeout(timeoutMs, () => {
      if (!connected) log(APLOG_ERR, `AH01974: could not connect to ${what} '${hop.hostinfo}'`, { code: 110, text: 'Connection timed out' });
      else log(APLOG_ERR, 'AH01977: failed reading line from OCSP server', { code: 70007, text: 'The timeout specified has expired' });
      finish(null);
    });
    sock.on('error', (e) => {
      if (settled) return;
      if (!connected) {
        if ((e as { code?: string }).code === 'ENOTFOUND' || (e as { code?: string }).code === 'EAI_AGAIN') {
          log(APLOG_ERR, `AH01972: could not resolve address of ${what} ${hop.hostinfo}`, errnoOf(e));
        } else log(APLOG_ERR, `AH01974: could not connect to ${what} '${hop.hostinfo}'`, errnoOf(e));
      } else {
        log(APLOG_ERR, 'AH01985: error reading response from OCSP server', errnoOf(e));
      }
      finish(null);
    });
    sock.on('connect', () => {
      connected = true;
      log(APLOG_DEBUG, 'AH01975: sending request to OCSP responder');
      sock.write(head);
      sock.write(request);
    });
    sock.on('data', (d: Buffer) => {
      size += d.length;
      if (size > MAX_CONTENT + 64 * 1024) {
        log(APLOG_ERR, `AH01986: OCSP response size exceeds ${MAX_CONTENT} byte limit`);
        finish(null);
        return;
      }
      chunks.push(d);
    });
    sock.on('end', () => finish(readResponse(Buffer.concat(chunks), log)));
  });
}

/** read_response: the status line must be 2xx; headers are skipped; the body is the DER. */
function readResponse(all: Buffer, log: ConnLog): Response | null {
  let at = 0;
  const line = (): string | null => {
    const nl = all.indexOf(0x0a, at);
    if (nl < 0) return null;
    let s = all.toString('latin1', at, nl);
    at = nl + 1;
    if (s.endsWith('\r')) s = s.slice(0, -1);
    return s;
  };
  if (all.length === 0) {
    log(APLOG_ERR, 'AH02321: empty response from OCSP server');
    log(APLOG_ERR, 'AH01980: bad response from OCSP server: (none)');
    return null;
  }
  const status = line();
  const sp = status?.indexOf(' ') ?? -1;
  const rest = status !== null && sp >= 0 ? status.slice(sp + 1) : null;
  const code = rest !== null ? parseInt(rest, 10) : NaN;
  if (status === null || !status.startsWith('HTTP/') || rest === null || !(code >= 200 && code <= 299)) {
    log(APLOG_ERR, `AH01980: bad response from OCSP server: ${rest ?? status ?? '(none)'}`);
    return null;
  }
  let count = 0;
  for (;;) {
    const h = line();
    if (h === null) {
      log(APLOG_ERR, 'AH01983: could not read response header from OCSP server');
      return null;
    }
    if (h === '') break;
    if (++count >= MAX_HEADERS) {
      log(APLOG_ERR, `AH01982: could not read response headers from OCSP server, exceeded maximum count (${MAX_HEADERS})`);
      return null;
    }
    log(APLOG_DEBUG, `AH01981: OCSP response header: ${h}`);
  }
  const body = all.subarray(at);
  if (body.length > MAX_CONTENT) {
    log(APLOG_ERR, `AH01986: OCSP response size exceeds ${MAX_CONTENT} byte limit`);
    return null;
  }
  log(APLOG_DEBUG, `AH01987: OCSP response: got ${body.length} bytes, ${body.length} total`);
  try {
    return parseResponse(body);
  } catch {
    log(APLOG_ERR, 'AH01988: failed to decode OCSP response data');
    return null;
  }
}

/** A server's OCSP settings, resolved at configuration time. */
export interface OcspSettings {
  readonly mode: 'leaf' | 'chain';
  readonly noOcspForCertOk: boolean;
  readonly forceDefault: boolean;
  readonly defaultResponder: string | undefined;
  readonly skewSec: number;
  readonly maxAgeSec: number;
  readonly timeoutMs: number;
  readonly nonce: boolean;
  readonly proxy: HttpUri | undefined;
  readonly noVerify: boolean;
  /** SSLOCSPResponderCertificateFile (trusted as signers: OCSP_TRUSTOTHER). */
  readonly responderCerts: readonly crypto.X509Certificate[];
  /** The CA certificates (the verification store). */
  readonly store: readonly crypto.X509Certificate[];
}

/** ssl_log_cxerror's certificate details. */
export function certDetails(c: crypto.X509Certificate): string {
  const dn = (s: string): string => formatDn(s, false) || '-empty-';
  const serial = c.serialNumber.toUpperCase().replace(/^(00)+(?=.)/, '');
  return ` [subject: ${dn(c.subject)} / issuer: ${dn(c.issuer)} / serial: ${serial} / notbefore: ${c.validFrom} / notafter: ${c.validTo}]`;
}

/** determine_responder_uri. */
function responderFor(o: OcspSettings, cert: crypto.X509Certificate, log: ConnLog): HttpUri | null {
  const s = o.forceDefault ? o.defaultResponder : (responderUrls(cert)[0] ?? o.defaultResponder);
  if (s === undefined) {
    log(APLOG_DEBUG, 'AH01918: no OCSP responder specified in certificate and no default configured');
    return null;
  }
  const u = parseUri(s);
  if (u === null) {
    log(APLOG_DEBUG, `AH01919: failed to parse OCSP responder URI '${s}'`);
    return null;
  }
  if (u.scheme.toLowerCase() !== 'http') {
    log(APLOG_DEBUG, `AH01920: cannot handle OCSP responder URI '${s}'`);
    return null;
  }
  return u;
}

/** verify_ocsp_status: the status of one certificate (issued by `issuer`). */
async function statusOf(o: OcspSettings, cert: crypto.X509Certificate, issuer: crypto.X509Certificate, log: ConnLog): Promise<number> {
  const uri = responderFor(o, cert, log);
  if (uri === null) return o.noOcspForCertOk ? STATUS_GOOD : 2;
  const id = certIdFor(cert, issuer);
  const exts: Extension[] = o.nonce ? [nonceExtension()] : [];
  const resp = await dispatch(uri, o.proxy, o.timeoutMs, encodeRequest([id], exts), log);
  if (resp === null) return 2;
  if (resp.status !== RESPONSE_SUCCESSFUL) {
    log(APLOG_ERR, `AH01922: OCSP response not successful: ${resp.status}`);
    return 2;
  }
  const basic = resp.basic;
  if (basic === null) {
    log(APLOG_ERR, 'AH01923: could not retrieve OCSP basic response');
    return 2;
  }
  if (o.nonce && checkNonce(exts, basic) !== 1) {
    log(APLOG_ERR, 'AH01924: Bad OCSP responder answer (bad nonce)');
    return 2;
  }
  if (!o.noVerify) {
    const why = verifyBasic(basic, { other: o.responderCerts, trustOther: o.responderCerts.length > 0, store: o.store });
    if (why !== undefined) {
      log(APLOG_ERR, 'AH01925: failed to verify the OCSP response');
      log(APLOG_ERR, `SSL Library Error: error:13800065:OCSP routines::${why}`);
      return 2;
    }
  }
  const single = findStatus(basic, id);
  if (single === undefined) {
    log(APLOG_ERR, `AH02272: failed to retrieve OCSP response status${certDetails(cert)}`);
    return 2;
  }
  let rc = single.status;
  if (rc !== 2 && checkValidity(single, o.skewSec, o.maxAgeSec) !== undefined) {
    log(APLOG_ERR, `AH02273: OCSP response outside validity period${certDetails(cert)}`);
    rc = 2;
  }
  const level = single.status === STATUS_GOOD ? APLOG_INFO : APLOG_ERR;
  log(level, `AH03239: OCSP validation completed, certificate status: ${STATUS_TEXT[single.status] ?? 'unknown'} (${single.status}, ${single.reason})${certDetails(cert)}`);
  return rc;
}

/** The verification failure OCSP gives a certificate: X509_V_ERR_CERT_REVOKED (23) or
 *  X509_V_ERR_APPLICATION_VERIFICATION (50). */
export interface OcspFailure {
  readonly errnum: number;
  readonly text: string;
  readonly depth: number;
}

/**
 * modssl_verify_ocsp over a verified chain (`chain[0]` the client's certificate, each followed
 * by its issuer): in OpenSSL's order (from the top down), each certificate but self-issued ones
 * with SSLOCSPEnable on, the client's only with leaf. The first failure, or null.
 */
export async function verifyChain(o: OcspSettings, chain: readonly crypto.X509Certificate[], log: ConnLog): Promise<OcspFailure | null> {
  for (let depth = chain.length - 1; depth >= 0; depth--) {
    if (o.mode === 'leaf' && depth !== 0) continue;
    const cert = chain[depth]!;
    const issuer = chain[depth + 1];
    // A self-issued certificate (the root) is not asked about.
    if (cert.checkIssued(cert)) continue;
    if (issuer === undefined) return { errnum: 50, text: 'application verification failure', depth };
    const rv = await statusOf(o, cert, issuer, log);
    if (rv === STATUS_GOOD) continue;
    if (rv === STATUS_REVOKED) return { errnum: 23, text: 'certificate revoked', depth };
    return { errnum: 50, text: 'application verification failure', depth };
  }
  return null;
}
