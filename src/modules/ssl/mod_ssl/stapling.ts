// OCSP stapling (modules/ssl/ssl_util_stapling.c): with SSLUseStapling on, a client that asks
// for the certificate status in its ClientHello gets the OCSP response for the server's
// certificate in the handshake. Responses come from SSLStaplingCache (kept
// SSLStaplingStandardCacheTimeout when good, SSLStaplingErrorCacheTimeout when not), or from
// the responder (the certificate's AIA URL or SSLStaplingForceURL) when the cached one is
// missing or stale; SSLStaplingReturnResponderErrors and SSLStaplingFakeTryLater decide what a
// client sees when the responder fails. Node asks through the tls.Server 'OCSPRequest' event,
// which may answer asynchronously: the handshake waits, as httpd's stapling callback does.

import * as crypto from 'node:crypto';
import type { ServerRec } from '../../../server/server-rec.js';
import type { SocacheInstance } from '../../../server/socache.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO } from '../../../server/log/levels.js';
import {
  certIdFor, checkValidity, encodeRequest, encodeTryLater, findStatus, parseResponse, reasonText, responderUrls,
  responseStatusText, serialText, RESPONSE_SUCCESSFUL, STATUS_GOOD, STATUS_TEXT, type CertId, type Response,
} from '../../../lib/ocsp.js';
import { certDetails, dispatch, parseUri, type ConnLog, type HttpUri } from './ocsp.js';

/** A server's stapling settings, with modssl_init_stapling's defaults applied. */
export interface StaplingSettings {
  /** The server certificates and their issuers (null: not found). */
  readonly certs: readonly { readonly cert: crypto.X509Certificate; readonly issuer: crypto.X509Certificate | null }[];
  readonly skewSec: number;
  readonly maxAgeSec: number;
  readonly cacheTimeoutSec: number;
  readonly errCacheTimeoutSec: number;
  readonly returnErrors: boolean;
  readonly fakeTryLater: boolean;
  readonly timeoutMs: number;
  readonly forceUrl: string | undefined;
  readonly proxy: HttpUri | undefined;
}

/** What stapling knows of one certificate (httpd's certinfo). */
interface CertInfo {
  /** SHA-1 of the certificate's DER: its key in the cache. */
  readonly idx: Buffer;
  readonly id: CertId;
  readonly uri: string | undefined;
}

/** Where the server logs (the handshake's server). */
export type ServerLog = (level: number, message: string) => void;

/** A certificate's SHA-1 (the certinfo and cache key). */
function digest(der: Uint8Array): Buffer {
  return crypto.createHash('sha1').update(der).digest();
}

/** A server's stapling state for one configuration generation. */
export class Stapler {
  private readonly info = new Map<string, CertInfo>();
  /** Renewals in progress in this process (httpd's refresh mutex, within one process). */
  private readonly renewing = new Map<string, Promise<{ der: Buffer | null; ok: boolean; fatal: boolean }>>();

  constructor(
    readonly s: ServerRec,
    readonly id: string,
    private readonly o: StaplingSettings,
    private readonly cache: () => SocacheInstance | null,
  ) {}

  /** ssl_stapling_init_cert for each certificate, with httpd's startup errors (not fatal). */
  init(log: ServerLog): void {
    this.o.certs.forEach(({ cert, issuer }, i) => {
      if (!this.initCert(cert, issuer, log)) log(APLOG_ERR, `AH02604: Unable to configure certificate ${this.id}:${i} for stapling`);
    });
  }

  private initCert(cert: crypto.X509Certificate, issuer: crypto.X509Certificate | null, log: ServerLog): boolean {
    if (issuer === null) {
      log(APLOG_ERR, `AH02217: ssl_stapling_init_cert: can't retrieve issuer certificate!${certDetails(cert)}`);
      return false;
    }
    const idx = digest(cert.raw);
    const uri = responderUrls(cert)[0];
    if (uri === undefined && this.o.forceUrl === undefined) {
      log(APLOG_ERR, `AH02218: ssl_stapling_init_cert: no OCSP URI in certificate and no SSLStaplingForceURL set${certDetails(cert)}`);
      return false;
    }
    this.info.set(idx.toString('hex'), { idx, id: certIdFor(cert, issuer), uri });
    return true;
  }

  /**
   * stapling_cb: `log` writes as httpd's server-level lines, `clog` with the client (the
   * responder client's lines). The DER to staple for the certificate Node hands over, or null (no status in
   * the handshake); an Error fails the handshake (httpd's fatal alert when a renewal cannot
   * even be attempted).
   */
  async respond(certDer: Buffer | undefined, log: ConnLog, clog: ConnLog): Promise<Buffer | null | Error> {
    log(APLOG_DEBUG, 'AH01951: stapling_cb: OCSP Stapling callback called');
    if (certDer === undefined) return null;
    const cinf = this.info.get(digest(certDer).toString('hex'));
    if (cinf === undefined) {
      log(APLOG_INFO, 'AH01926: stapling_get_certinfo: stapling not supported for certificate');
      return null;
    }
    log(APLOG_DEBUG, 'AH01952: stapling_cb: retrieved cached certificate data');
    let got = await this.cached(cinf, log);
    if (got === 'noack') return null;
    if (got === null) {
      log(APLOG_DEBUG, 'AH01954: stapling_cb: renewing cached response');
      const key = cinf.idx.toString('hex');
      let p = this.renewing.get(key);
      if (p === undefined) {
        log(APLOG_DEBUG, 'AH03238: stapling_cb: still must refresh cached response after obtaining refresh mutex');
        p = this.renew(cinf, log, clog).finally(() => this.renewing.delete(key));
        this.renewing.set(key, p);
      } else {
        log(APLOG_DEBUG, 'AH03237: stapling_cb: don\'t need to refresh cached response after obtaining refresh mutex');
      }
      const r = await p;
      if (r.fatal) {
        log(APLOG_ERR, 'AH01955: stapling_cb: fatal error renewing response');
        return new Error('OCSP stapling: fatal error renewing response');
      }
      if (r.der !== null && r.ok) log(APLOG_DEBUG, 'AH03040: stapling_cb: success renewing response');
      got = r.der === null ? null : { der: r.der, ok: r.ok };
    }
    if (got !== null && (got.ok || this.o.returnErrors)) {
      log(APLOG_DEBUG, 'AH01956: stapling_cb: setting response');
      return got.der;
    }
    log(APLOG_DEBUG, 'AH01957: stapling_cb: no suitable response available');
    return null;
  }

  /** get_and_check_cached_response: a usable cached response, null (renew it), or 'noack'. */
  private async cached(cinf: CertInfo, log: ConnLog): Promise<{ der: Buffer; ok: boolean } | null | 'noack'> {
    const cache = this.cache();
    const stored = cache === null ? null : await cache.retrieve(cinf.idx);
    if (stored === null) {
      log(APLOG_DEBUG, 'AH01930: stapling_get_cached_response: cache miss');
      return null;
    }
    if (stored.length <= 1) {
      log(APLOG_ERR, 'AH01931: stapling_get_cached_response: response length invalid??');
      return null;
    }
    const okWhenStored = stored[0] !== 0;
    const der = Buffer.from(stored.subarray(1));
    let rsp: Response;
    try { rsp = parseResponse(der); } catch {
      log(APLOG_ERR, 'AH01932: stapling_get_cached_response: response parse error??');
      return null;
    }
    log(APLOG_DEBUG, 'AH01933: stapling_get_cached_response: cache hit');
    log(APLOG_DEBUG, 'AH01953: stapling_cb: retrieved cached response');
    if (this.check(cinf, rsp, false, log).ack) return { der, ok: okWhenStored };
    // Stale: renewed at once if it was good when stored; an error response waits out its time.
    if (okWhenStored) return null;
    if (!this.o.returnErrors) return 'noack';
    return { der, ok: false };
  }

  /** stapling_check_response: whether to send it (ack) and whether it is good (ok). */
  private check(cinf: CertInfo, rsp: Response, fresh: boolean, log: ConnLog): { ack: boolean; ok: boolean } {
    if (rsp.status !== RESPONSE_SUCCESSFUL) return { ack: this.o.returnErrors, ok: false };
    if (rsp.basic === null) {
      log(APLOG_ERR, 'AH01934: stapling_check_response: Error Parsing Response!');
      return { ack: false, ok: false };
    }
    const single = findStatus(rsp.basic, cinf.id);
    if (single === undefined) {
      log(APLOG_ERR, 'AH01935: stapling_check_response: certificate ID not present in response!');
      return { ack: this.o.returnErrors, ok: false };
    }
    let ack = true;
    let ok = false;
    if (checkValidity(single, this.o.skewSec, this.o.maxAgeSec) === undefined) ok = true;
    else {
      if (fresh) log(APLOG_ERR, 'AH01936: stapling_check_response: response times invalid');
      else log(APLOG_DEBUG, 'AH01937: stapling_check_response: cached response expired');
      ack = false;
    }
    if (single.status !== STATUS_GOOD && fresh) {
      log(APLOG_ERR, `AH02969: stapling_check_response: response has certificate status ${STATUS_TEXT[single.status] ?? 'unknown'} (reason: ${single.reason >= 0 ? reasonText(single.reason) : 'n/a'}) for serial number ${serialText(cinf.id)}`);
    }
    return { ack, ok };
  }

  /** stapling_renew_response: asks the responder and caches what it said. */
  private async renew(cinf: CertInfo, log: ConnLog, clog: ConnLog): Promise<{ der: Buffer | null; ok: boolean; fatal: boolean }> {
    log(APLOG_DEBUG, 'AH01938: stapling_renew_response: querying responder');
    const url = this.o.forceUrl ?? cinf.uri;
    if (url === undefined) {
      log(APLOG_ERR, 'AH02621: stapling_renew_response: no uri for responder');
      return { der: null, ok: false, fatal: true };
    }
    const uri = parseUri(url);
    if (uri === null) {
      log(APLOG_ERR, `AH01939: stapling_renew_response: Error parsing uri ${url}`);
      return { der: null, ok: false, fatal: true };
    }
    if (uri.scheme !== 'http') {
      log(APLOG_ERR, `AH01940: stapling_renew_response: Unsupported uri ${url}`);
      return { der: null, ok: false, fatal: true };
    }
    // DIFFERENCE: httpd copies the client's status_request extensions into the query; Node
    // does not expose them, so the query carries none.
    const rsp = await dispatch(uri, this.o.proxy, this.o.timeoutMs, encodeRequest([cinf.id]), clog);
    let der: Buffer;
    let ok = false;
    if (rsp === null) {
      log(APLOG_ERR, 'AH01941: stapling_renew_response: responder error');
      // httpd 2.4.71 then staples nothing and the handshake goes on (measured; conformance
      // ssl/stapling-fake-trylater-off); nothing is cached, the next client asks again.
      if (!this.o.fakeTryLater) return { der: null, ok: false, fatal: false };
      // httpd 2.4.71 keeps its fake tryLater as a good answer: stapled whatever
      // SSLStaplingReturnResponderErrors says, cached for SSLStaplingStandardCacheTimeout, and
      // renewed at once by a client that may not see errors (measured; conformance
      // ssl/stapling-responder-down, ssl/stapling-return-errors-off).
      der = encodeTryLater();
      ok = true;
    } else {
      der = rsp.der;
      if (rsp.status === RESPONSE_SUCCESSFUL) {
        log(APLOG_DEBUG, 'AH01942: stapling_renew_response: query response received');
        ok = this.check(cinf, rsp, true, log).ok;
        if (!ok) log(APLOG_ERR, 'AH01943: stapling_renew_response: error in retrieved response!');
      } else {
        log(APLOG_DEBUG, `AH01944: stapling_renew_response: responder error ${responseStatusText(rsp.status)}`);
      }
    }
    const cache = this.cache();
    const expiry = Date.now() + (ok ? this.o.cacheTimeoutSec : this.o.errCacheTimeoutSec) * 1000;
    const stored = cache !== null && await cache.store(cinf.idx, expiry, Buffer.concat([Buffer.from([ok ? 1 : 0]), der]));
    if (!stored) {
      log(APLOG_ERR, 'AH01929: stapling_cache_response: OCSP response session store error!');
      log(APLOG_ERR, 'AH01945: stapling_renew_response: error caching response!');
    }
    return { der, ok, fatal: false };
  }
}
