// OCSP (RFC 6960) on Node's crypto: the request DER for certificates (CertID with SHA-1, an
// optional nonce), the response parsed, its signature checked, the signer found and judged, a
// status looked up by CertID and its times checked — the pieces of OpenSSL's OCSP API that
// mod_ssl's OCSP client (SSLOCSPEnable) and OCSP stapling (SSLUseStapling) use.

import * as crypto from 'node:crypto';
import { readTlv, children, oid, contents, encodeTlv, encodeOid, readTime, DerError, type Tlv } from './der.js';

export { DerError };

const OID_SHA1 = '1.3.14.3.2.26';
const OID_NONCE = '1.3.6.1.5.5.7.48.1.2';
const OID_BASIC = '1.3.6.1.5.5.7.48.1.1';
const OID_OCSP_SIGNING = '1.3.6.1.5.5.7.3.9';

/** OCSPResponseStatus. */
export const RESPONSE_SUCCESSFUL = 0;
export const RESPONSE_TRYLATER = 3;
const RESPONSE_STATUS_TEXT = ['successful', 'malformedrequest', 'internalerror', 'trylater', '(unknown)', 'sigrequired', 'unauthorized'];
export function responseStatusText(n: number): string {
  return RESPONSE_STATUS_TEXT[n] ?? '(UNKNOWN)';
}

/** V_OCSP_CERTSTATUS_*. */
export const STATUS_GOOD = 0;
export const STATUS_REVOKED = 1;
export const STATUS_UNKNOWN = 2;
export const STATUS_TEXT = ['good', 'revoked', 'unknown'] as const;

/** OCSP_crl_reason_str. */
const REASON_TEXT = ['unspecified', 'keyCompromise', 'cACompromise', 'affiliationChanged', 'superseded',
  'cessationOfOperation', 'certificateHold', '(UNKNOWN)', 'removeFromCRL'];
export function reasonText(n: number): string {
  return REASON_TEXT[n] ?? '(UNKNOWN)';
}

/** A certificate's identity in OCSP (SHA-1 hashes of its issuer's name and key, its serial). */
export interface CertId {
  readonly nameHash: Buffer;
  readonly keyHash: Buffer;
  /** The serial number INTEGER's contents. */
  readonly serial: Buffer;
}

/** The DER pieces of a certificate OCSP needs. */
interface CertParts {
  readonly serial: Buffer;
  readonly subject: Buffer;
  readonly issuer: Buffer;
  /** The subjectPublicKey BIT STRING's bits (without the unused-bits octet). */
  readonly key: Buffer;
}

function certParts(cert: crypto.X509Certificate): CertParts {
  const der = cert.raw;
  const top = readTlv(der, 0);
  const tbs = children(der, top)[0];
  if (tbs === undefined) throw new DerError('no tbsCertificate');
  const f = children(der, tbs);
  let i = f[0]?.tag === 0xa0 ? 1 : 0;
  const serial = f[i++];
  i++; // signature algorithm
  const issuer = f[i++];
  i++; // validity
  const subject = f[i++];
  const spki = f[i++];
  if (serial === undefined || issuer === undefined || subject === undefined || spki === undefined) throw new DerError('short tbsCertificate');
  const bits = children(der, spki)[1];
  if (bits === undefined || bits.tag !== 0x03) throw new DerError('no subjectPublicKey');
  return {
    serial: contents(der, serial),
    subject: Buffer.from(der.subarray(subject.start, subject.end)),
    issuer: Buffer.from(der.subarray(issuer.start, issuer.end)),
    key: contents(der, bits).subarray(1),
  };
}

const sha1 = (b: Uint8Array): Buffer => crypto.createHash('sha1').update(b).digest();

/** OCSP_cert_to_id: the CertID of `cert`, issued by `issuer`. */
export function certIdFor(cert: crypto.X509Certificate, issuer: crypto.X509Certificate): CertId {
  const c = certParts(cert);
  const i = certParts(issuer);
  return { nameHash: sha1(i.subject), keyHash: sha1(i.key), serial: c.serial };
}

/** The serial as OpenSSL's i2a_ASN1_INTEGER prints it (hex, upper case). */
export function serialText(id: CertId): string {
  const h = id.serial.toString('hex').toUpperCase().replace(/^(00)+(?=.)/, '');
  return h === '' ? '00' : h;
}

function sameId(a: CertId, b: CertId): boolean {
  return a.nameHash.equals(b.nameHash) && a.keyHash.equals(b.keyHash) && a.serial.equals(b.serial);
}

function encodeCertId(id: CertId): Buffer {
  return encodeTlv(0x30,
    encodeTlv(0x30, encodeOid(OID_SHA1), Buffer.from([0x05, 0x00])),
    encodeTlv(0x04, id.nameHash), encodeTlv(0x04, id.keyHash), encodeTlv(0x02, id.serial));
}

/** One extension (extnID, extnValue) as it is written. */
export interface Extension {
  readonly id: string;
  readonly critical: boolean;
  /** The extnValue OCTET STRING's contents. */
  readonly value: Buffer;
}

function encodeExtension(e: Extension): Buffer {
  return encodeTlv(0x30, encodeOid(e.id), ...(e.critical ? [Buffer.from([0x01, 0x01, 0xff])] : []), encodeTlv(0x04, e.value));
}

/** A nonce extension as OpenSSL's OCSP_request_add1_nonce makes it: 16 random bytes, wrapped
 *  in an OCTET STRING inside extnValue. */
export function nonceExtension(): Extension {
  return { id: OID_NONCE, critical: false, value: encodeTlv(0x04, crypto.randomBytes(16)) };
}

/** An OCSPRequest for the CertIDs, unsigned, with request extensions (a nonce). */
export function encodeRequest(ids: readonly CertId[], extensions: readonly Extension[] = []): Buffer {
  const list = encodeTlv(0x30, ...ids.map((id) => encodeTlv(0x30, encodeCertId(id))));
  const parts: Buffer[] = [list];
  if (extensions.length > 0) parts.push(encodeTlv(0xa2, encodeTlv(0x30, ...extensions.map(encodeExtension))));
  return encodeTlv(0x30, encodeTlv(0x30, ...parts));
}

/** OCSPResponseStatus TRYLATER with no body (OCSP_response_create). */
export function encodeTryLater(): Buffer {
  return encodeTlv(0x30, encodeTlv(0x0a, Buffer.from([RESPONSE_TRYLATER])));
}

/** One SingleResponse. */
export interface SingleResponse {
  readonly id: CertId;
  readonly status: number;
  /** CRLReason, -1 when none. */
  readonly reason: number;
  readonly thisUpdate: Date;
  readonly nextUpdate: Date | null;
}

/** A BasicOCSPResponse. */
export interface BasicResponse {
  /** tbsResponseData, as signed. */
  readonly tbs: Buffer;
  readonly sigAlg: string;
  readonly signature: Buffer;
  readonly certs: readonly crypto.X509Certificate[];
  /** ResponderID: the Name's DER (byName) or the key's SHA-1 (byKey). */
  readonly responder: { readonly name: Buffer } | { readonly keyHash: Buffer };
  readonly responses: readonly SingleResponse[];
  readonly extensions: readonly Extension[];
}

export interface Response {
  readonly status: number;
  readonly basic: BasicResponse | null;
  /** The whole response, as received. */
  readonly der: Buffer;
}

function readExtensions(der: Buffer, t: Tlv): Extension[] {
  const out: Extension[] = [];
  for (const e of children(der, t)) {
    const f = children(der, e);
    const id = f[0];
    const last = f[f.length - 1];
    if (id === undefined || last === undefined || last.tag !== 0x04) throw new DerError('bad extension');
    out.push({ id: oid(der, id), critical: f.length === 3 && der[f[1]!.body] !== 0, value: contents(der, last) });
  }
  return out;
}

function readCertId(der: Buffer, t: Tlv): CertId {
  const f = children(der, t);
  if (f.length < 4 || f[1]!.tag !== 0x04 || f[2]!.tag !== 0x04 || f[3]!.tag !== 0x02) throw new DerError('bad CertID');
  return { nameHash: contents(der, f[1]!), keyHash: contents(der, f[2]!), serial: contents(der, f[3]!) };
}

function readSingle(der: Buffer, t: Tlv): SingleResponse {
  const f = children(der, t);
  const [cid, st, tu] = f;
  if (cid === undefined || st === undefined || tu === undefined) throw new DerError('short SingleResponse');
  let status: number;
  let reason = -1;
  if (st.tag === 0x80) status = STATUS_GOOD;
  else if (st.tag === 0x82) status = STATUS_UNKNOWN;
  else if (st.tag === 0xa1) {
    status = STATUS_REVOKED;
    const r = children(der, st)[1];
    if (r !== undefined && r.tag === 0xa0) {
      const e = children(der, r)[0];
      if (e !== undefined && e.tag === 0x0a && e.end > e.body) reason = der[e.end - 1]!;
    }
  } else throw new DerError('bad CertStatus');
  let nextUpdate: Date | null = null;
  for (const x of f.slice(3)) {
    if (x.tag === 0xa0) {
      const inner = children(der, x)[0];
      if (inner !== undefined) nextUpdate = readTime(der, inner);
    }
  }
  return { id: readCertId(der, cid), status, reason, thisUpdate: readTime(der, tu), nextUpdate };
}

/** Parses an OCSPResponse (d2i_OCSP_RESPONSE and OCSP_response_get1_basic); throws DerError. */
export function parseResponse(input: Uint8Array): Response {
  const der = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  const top = readTlv(der, 0);
  if (top.tag !== 0x30 || top.end !== der.length) throw new DerError('not an OCSPResponse');
  const f = children(der, top);
  const st = f[0];
  if (st === undefined || st.tag !== 0x0a || st.end === st.body) throw new DerError('no responseStatus');
  const status = der[st.end - 1]!;
  const rb = f[1];
  if (rb === undefined) return { status, basic: null, der };
  if (rb.tag !== 0xa0) throw new DerError('bad responseBytes');
  const seq = children(der, rb)[0];
  if (seq === undefined) throw new DerError('bad responseBytes');
  const [type, octets] = children(der, seq);
  if (type === undefined || octets === undefined || octets.tag !== 0x04) throw new DerError('bad responseBytes');
  if (oid(der, type) !== OID_BASIC) return { status, basic: null, der };
  return { status, basic: parseBasic(contents(der, octets)), der };
}

function parseBasic(der: Buffer): BasicResponse {
  const top = readTlv(der, 0);
  const [tbsT, alg, sig, certsT] = children(der, top);
  if (tbsT === undefined || alg === undefined || sig === undefined || sig.tag !== 0x03) throw new DerError('short BasicOCSPResponse');
  const algOid = children(der, alg)[0];
  if (algOid === undefined) throw new DerError('no signature algorithm');
  const certs: crypto.X509Certificate[] = [];
  if (certsT !== undefined && certsT.tag === 0xa0) {
    const seq = children(der, certsT)[0];
    if (seq !== undefined) {
      for (const c of children(der, seq)) {
        try { certs.push(new crypto.X509Certificate(der.subarray(c.start, c.end))); } catch { throw new DerError('bad certificate'); }
      }
    }
  }
  const tf = children(der, tbsT);
  let i = tf[0]?.tag === 0xa0 ? 1 : 0;
  const rid = tf[i++];
  i++; // producedAt
  const list = tf[i++];
  if (rid === undefined || list === undefined) throw new DerError('short ResponseData');
  let responder: BasicResponse['responder'];
  const ridInner = children(der, rid)[0];
  if (ridInner === undefined) throw new DerError('bad ResponderID');
  if (rid.tag === 0xa1) responder = { name: Buffer.from(der.subarray(ridInner.start, ridInner.end)) };
  else if (rid.tag === 0xa2 && ridInner.tag === 0x04) responder = { keyHash: contents(der, ridInner) };
  else throw new DerError('bad ResponderID');
  const extT = tf[i];
  const extensions = extT !== undefined && extT.tag === 0xa1 && children(der, extT)[0] !== undefined ? readExtensions(der, children(der, extT)[0]!) : [];
  return {
    tbs: Buffer.from(der.subarray(tbsT.start, tbsT.end)),
    sigAlg: oid(der, algOid),
    signature: contents(der, sig).subarray(1),
    certs,
    responder,
    responses: children(der, list).map((s) => readSingle(der, s)),
    extensions,
  };
}

/** OCSP_resp_find_status: the response about `id`. */
export function findStatus(b: BasicResponse, id: CertId): SingleResponse | undefined {
  return b.responses.find((r) => sameId(r.id, id));
}

/** OCSP_check_nonce: 1 both equal, 2 neither has one, 3 only the request, -1 only the
 *  response, 0 they differ. */
export function checkNonce(request: readonly Extension[], b: BasicResponse): number {
  const q = request.find((e) => e.id === OID_NONCE);
  const r = b.extensions.find((e) => e.id === OID_NONCE);
  if (q === undefined && r === undefined) return 2;
  if (q !== undefined && r === undefined) return 3;
  if (q === undefined) return -1;
  return q.value.equals(r!.value) ? 1 : 0;
}

/** OCSP_check_validity: thisUpdate not in the future (beyond `skewSec`), not older than
 *  `maxAgeSec` (when ≥ 0), nextUpdate not past; the reason when not. */
export function checkValidity(r: SingleResponse, skewSec: number, maxAgeSec: number, now = Date.now()): string | undefined {
  const t = r.thisUpdate.getTime();
  if (t > now + skewSec * 1000) return 'status not yet valid';
  if (maxAgeSec >= 0 && t < now - maxAgeSec * 1000) return 'status too old';
  if (r.nextUpdate !== null) {
    const n = r.nextUpdate.getTime();
    if (n < now - skewSec * 1000) return 'status expired';
    if (n < t) return 'nextupdate before thisupdate';
  }
  return undefined;
}

/** Node's digest name for a signature algorithm OID (null: the key decides, as Ed25519). */
function digestFor(sigAlg: string): string | null | undefined {
  switch (sigAlg) {
    case '1.2.840.113549.1.1.5': case '1.2.840.10045.4.1': return 'sha1';
    case '1.2.840.113549.1.1.14': case '1.2.840.10045.4.3.1': return 'sha224';
    case '1.2.840.113549.1.1.11': case '1.2.840.10045.4.3.2': return 'sha256';
    case '1.2.840.113549.1.1.12': case '1.2.840.10045.4.3.3': return 'sha384';
    case '1.2.840.113549.1.1.13': case '1.2.840.10045.4.3.4': return 'sha512';
    case '1.3.101.112': case '1.3.101.113': return null;
    default: return undefined;
  }
}

/** Whether `signer` matches the response's ResponderID. */
function isResponder(b: BasicResponse, signer: crypto.X509Certificate): boolean {
  const p = certParts(signer);
  if ('name' in b.responder) return p.subject.equals(b.responder.name);
  return sha1(p.key).equals(b.responder.keyHash);
}

/** Whether `cert` was issued by `issuer` (names and signature). */
function issuedBy(cert: crypto.X509Certificate, issuer: crypto.X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

function inDate(c: crypto.X509Certificate, now: number): boolean {
  return Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
}

export interface VerifyOptions {
  /** Certificates given to trust as responders (SSLOCSPResponderCertificateFile). */
  readonly other: readonly crypto.X509Certificate[];
  /** OCSP_TRUSTOTHER: a signer found among `other` needs no chain. */
  readonly trustOther: boolean;
  /** The trust store (SSLCACertificateFile/Path). */
  readonly store: readonly crypto.X509Certificate[];
  readonly now?: number;
}

/**
 * OCSP_basic_verify: the signer is found (among the given certificates, then the response's),
 * the signature checked with its key, its chain built to the trust store (unless trusted
 * directly), and it must be the issuer of the certificates the response speaks of, or be
 * issued by it for OCSP signing. The reason when it fails.
 */
export function verifyBasic(b: BasicResponse, o: VerifyOptions): string | undefined {
  const now = o.now ?? Date.now();
  let signer = o.other.find((c) => isResponder(b, c));
  const trusted = signer !== undefined && o.trustOther;
  if (signer === undefined) signer = b.certs.find((c) => isResponder(b, c));
  if (signer === undefined) return 'signer certificate not found';
  const digest = digestFor(b.sigAlg);
  if (digest === undefined) return 'unsupported signature algorithm';
  let ok = false;
  try { ok = crypto.verify(digest, b.tbs, signer.publicKey, b.signature); } catch { ok = false; }
  if (!ok) return 'signature failure';
  if (trusted) return undefined;
  // The signer's chain up to a certificate of the store.
  const pool = [...b.certs, ...o.other];
  const chain: crypto.X509Certificate[] = [signer];
  for (let depth = 0; depth < 10; depth++) {
    const top = chain[chain.length - 1]!;
    if (!inDate(top, now)) return 'certificate verify error';
    const anchor = o.store.find((c) => c.raw.equals(top.raw)) ?? (o.store.find((c) => issuedBy(top, c)));
    if (anchor !== undefined) {
      if (!anchor.raw.equals(top.raw)) chain.push(anchor);
      return checkIssuer(b, chain);
    }
    const next = pool.find((c) => !chain.includes(c) && issuedBy(top, c));
    if (next === undefined) return 'certificate verify error';
    chain.push(next);
  }
  return 'certificate verify error';
}

/** ocsp_check_issuer: the signer is the CA of every CertID, or its delegate (issued by it, with
 *  the OCSPSigning extended key usage). */
function checkIssuer(b: BasicResponse, chain: readonly crypto.X509Certificate[]): string | undefined {
  const signer = chain[0]!;
  const sp = certParts(signer);
  const matches = (p: CertParts, id: CertId): boolean => sha1(p.subject).equals(id.nameHash) && sha1(p.key).equals(id.keyHash);
  if (b.responses.every((r) => matches(sp, r.id))) return undefined;
  const issuer = chain[1];
  if (issuer === undefined) return 'root ca not trusted';
  const ip = certParts(issuer);
  if (!b.responses.every((r) => matches(ip, r.id))) return 'response contains no revocation data';
  const eku = signer.keyUsage;
  if (eku === undefined || !eku.includes(OID_OCSP_SIGNING)) return 'missing ocspsigning usage';
  return undefined;
}

/** The OCSP responder URLs a certificate names (Authority Information Access). */
export function responderUrls(cert: crypto.X509Certificate): string[] {
  const out: string[] = [];
  for (const line of (cert.infoAccess ?? '').split('\n')) {
    const m = /^OCSP - URI:(.*)$/.exec(line.trim());
    if (m !== null) out.push(m[1]!);
  }
  return out;
}
