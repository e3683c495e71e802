// mod_ssl's part of the expression language (ssl_expr_lookup in ssl_engine_vars.c): the
// SSL_* variables and HTTPS, and PeerExtList(oid) — the values of an extension of the client's
// certificate — for <If>, Require expr, SSLRequire, mod_rewrite and the rest.

import type * as crypto from 'node:crypto';
import type { EvalState, ExprProvider, ExprVariable } from '../../../expr/index.js';
import type { ConnRec, Request } from '../../../server/request/request.js';
import { readTlv, children, oid, contents } from '../../../lib/der.js';
import type { SslConn } from './vars.js';

const FIXED = [
  'SSL_PROTOCOL', 'SSL_SESSION_ID', 'SSL_SESSION_RESUMED', 'SSL_CIPHER', 'SSL_CIPHER_EXPORT', 'SSL_CIPHER_USEKEYSIZE',
  'SSL_CIPHER_ALGKEYSIZE', 'SSL_COMPRESS_METHOD', 'SSL_SECURE_RENEG', 'SSL_VERSION_INTERFACE', 'SSL_VERSION_LIBRARY',
  'SSL_TLS_SNI', 'SSL_CLIENT_VERIFY',
];
const CERT_FIELDS = ['M_VERSION', 'M_SERIAL', 'V_START', 'V_END', 'V_REMAIN', 'S_DN', 'I_DN', 'A_SIG', 'A_KEY', 'CERT', 'B64CERT'];
const DN_PARTS = ['C', 'ST', 'SP', 'L', 'O', 'OU', 'CN', 'T', 'I', 'G', 'S', 'D', 'UID', 'Email'];
/** How many repeated values (_0 .. _9) of a DN attribute, SAN entry or chain certificate the
 *  variables reach. */
const REPEATS = 10;

/** Every SSL variable name httpd knows, for the expression parser's table. */
function variableNames(): string[] {
  const out = [...FIXED];
  for (const who of ['CLIENT', 'SERVER']) {
    for (const f of CERT_FIELDS) out.push(`SSL_${who}_${f}`);
    for (const dn of ['S_DN', 'I_DN']) {
      for (const p of DN_PARTS) {
        out.push(`SSL_${who}_${dn}_${p}`);
        for (let i = 0; i < REPEATS; i++) out.push(`SSL_${who}_${dn}_${p}_${i}`);
      }
    }
    for (let i = 0; i < REPEATS; i++) out.push(`SSL_${who}_SAN_Email_${i}`, `SSL_${who}_SAN_DNS_${i}`, `SSL_${who}_SAN_OTHER_msUPN_${i}`);
  }
  for (let i = 0; i < REPEATS; i++) out.push(`SSL_CLIENT_CERT_CHAIN_${i}`);
  return out;
}

/** The string types an extension's value may be (UTF8String, PrintableString, IA5String,
 *  VisibleString, T61String, BMPString). */
const STRING_TAGS = new Set([0x0c, 0x13, 0x16, 0x1a, 0x14, 0x1e]);

/** The values of extension `wanted` in a certificate (ssl_ext_list): a string value as
 *  text, anything else in hexadecimal; null when the certificate has no such extension. */
export function extensionValues(cert: crypto.X509Certificate, wanted: string): string[] | null {
  const der = cert.raw;
  const out: string[] = [];
  try {
    const tbs = children(der, readTlv(der, 0))[0]!;
    const ext = children(der, tbs).find((t) => t.tag === 0xa3);
    if (ext === undefined) return null;
    for (const e of children(der, children(der, ext)[0]!)) {
      const parts = children(der, e);
      if (parts.length < 2 || oid(der, parts[0]!) !== wanted) continue;
      const value = parts[parts.length - 1]!;
      const inner = contents(der, value);
      try {
        const t = readTlv(inner, 0);
        if (STRING_TAGS.has(t.tag)) {
          const raw = contents(inner, t);
          out.push(t.tag === 0x1e ? raw.swap16().toString('utf16le') : raw.toString('utf8'));
          continue;
        }
        if (t.tag === 0x30) {
          // A sequence of strings: each one.
          const items = children(inner, t).filter((x) => STRING_TAGS.has(x.tag));
          if (items.length > 0) { for (const x of items) out.push(contents(inner, x).toString('utf8')); continue; }
        }
      } catch { /* not DER inside: the bytes */ }
      out.push(inner.toString('hex'));
    }
  } catch {
    return null;
  }
  return out.length > 0 ? out : null;
}

export function makeExprProvider(
  lookup: (r: Request, name: string) => string | undefined,
  conn: (c: ConnRec) => SslConn | undefined,
): ExprProvider & { readonly connIsSsl: (c: ConnRec) => boolean } {
  const variables: Record<string, ExprVariable> = {};
  for (const name of variableNames()) variables[name] = (s: EvalState) => lookup(s.r, name) ?? '';
  return {
    variables,
    listFunctions: {
      PeerExtList: {
        fn: (s, arg) => {
          const c = conn(s.r.connection);
          const cert = c?.sock != null ? c.clientCert() : null;
          return cert === null ? null : extensionValues(cert, arg);
        },
      },
    },
    connIsSsl: (c) => conn(c)?.sock != null,
  };
}
