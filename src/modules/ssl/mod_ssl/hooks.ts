// mod_ssl's request hooks (modules/ssl/ssl_engine_kernel.c): what TLS means to a request.
//  - post_read_request (ssl_hook_ReadReq): plain HTTP on the TLS port gets httpd's 400 page;
//    the SNI name and the Host header must select servers with compatible TLS settings
//    (AH02031 400, AH02032 421), and SSLStrictSNIVHostCheck refuses clients without SNI (403).
//  - access (ssl_hook_Access): SSLRequireSSL, per-directory client verification, SSLRequire,
//    SSLUserName.
//  - check_user_id (ssl_hook_UserCheck): SSLOptions +FakeBasicAuth, +StrictRequire.
//  - auth_checker (ssl_hook_Auth): +StrictRequire.
//  - fixups (ssl_hook_Fixup): HTTPS=on, +StdEnvVars, +ExportCertData for CGI and SSI.
//
// DIFFERENCE: httpd asks for a client certificate a directory requires by renegotiating
// (TLS 1.2) or with post-handshake authentication (TLS 1.3); Node can do neither on a server
// socket it did not create, so a server whose directories ask for client certificates asks
// for one (optionally) in the handshake itself, and the directory's requirement is checked
// against what the client sent there. Clients with a certificate send it once, up front; the
// answers (200, 403 and their log lines) are httpd's. SSLRenegBufferSize still limits the
// request body of such a request (413), as httpd's buffering does.

import type { Request } from '../../../server/request/request.js';
import { DECLINED } from '../../../server/module.js';
import { APLOG_ERR, APLOG_INFO, APLOG_DEBUG, APLOG_WARNING, levelFor } from '../../../server/log/levels.js';
import {
  OPT_EXPORTCERTDATA, OPT_FAKEBASICAUTH, OPT_LEGACYDNFORMAT, OPT_STDENVVARS, OPT_STRICTREQUIRE,
  type SslDirConfig, type SslServerConfig, type VerifyMode,
} from './config.js';
import type { TlsServer } from './contexts.js';
import { cipherSet } from './ciphers.js';
import { certDetails, verifyChain, type ConnLog } from './ocsp.js';
import { SslConn, STD_ENV_VARS, dnEnvVars, formatDn, pem, sanEnvVars, sslVar } from './vars.js';

/** What the hooks need from the module (its configuration handles and the generation's TLS). */
export interface HookEnv {
  dir(r: Request): SslDirConfig;
  server(r: Request): SslServerConfig;
  conn(r: Request): SslConn | undefined;
  tls(r: Request, s: Request['server']): TlsServer | undefined;
  /** Whether the connection's address has name-based virtual hosts. */
  nameBased(r: Request): boolean;
  /** SSLVHostSNIPolicy. */
  sniPolicy(r: Request): 'strict' | 'secure' | 'authonly' | 'insecure';
}

const DEFAULT_RENEG_BUFFER = 128 * 1024;

/** The verification a request sees (SSL_CLIENT_VERIFY), computed once per connection and
 *  depth: SUCCESS, GENEROUS, NONE or FAILED:reason. */
export function verifyResult(conn: SslConn, mode: VerifyMode, depth: number, t: TlsServer | undefined): string {
  const cert = conn.clientCert();
  if (cert === null) return 'NONE';
  const handle = (conn.sock as unknown as { _handle?: { verifyError?: () => (Error & { code?: string }) | null } } | null)?._handle;
  const err = handle?.verifyError?.() ?? null;
  if (err === null) {
    if (conn.ocspFailure !== undefined) return `FAILED:${conn.ocspFailure}`;
    // SSLVerifyDepth: the certificates above the client's own, the trusted CA included.
    const chain = conn.chain().length;
    if (chain > depth) return 'FAILED:certificate chain too long';
    return 'SUCCESS';
  }
  const code = err.code ?? '';
  if (code === 'UNABLE_TO_GET_CRL' && t?.crl.noCrlForCertOk === true) return 'SUCCESS';
  // optional_no_ca lets such a client in, with the failure in SSL_CLIENT_VERIFY (httpd 2.4.71
  // reports FAILED:reason there, not GENEROUS).
  void mode;
  return `FAILED:${err.message}`;
}

export function makeHooks(env: HookEnv) {
  /** ssl_hook_ReadReq. */
  function postReadRequest(r: Request): number {
    const conn = env.conn(r);
    if (conn === undefined) return DECLINED;
    if (conn.sock === null) {
      if (conn.plainReported) return DECLINED;
      conn.plainReported = true;
      r.notes.set('error-notes', "Reason: You're speaking plain HTTP to an SSL-enabled server port.<br />\n Instead use the HTTPS scheme to access this URL, please.<br />\n");
      r.connection.keepAlive = false;
      return 400;
    }
    if (!r.isInitialReq()) return DECLINED;
    const hs = env.tls(r, conn.handshakeServer);
    if (conn.sni !== undefined && r.hostname === '') {
      r.log('ssl', APLOG_ERR, `AH02031: Hostname ${conn.sni} provided via SNI, but no hostname provided in HTTP request`);
      return 400;
    }
    if (r.server !== conn.handshakeServer && r.hostname !== '') {
      // SSLVHostSNIPolicy (httpd 2.4.66): may the Host header pick a host whose TLS setup
      // differs from the one the handshake used (CVE-2025-23048)?
      const policy = env.sniPolicy(r);
      const mine = env.tls(r, r.server);
      const blocked = policy === 'strict'
        || (policy !== 'insecure' && (mine === undefined || hs === undefined || mine.authCompat !== hs.authCompat))
        || (policy === 'secure' && mine !== undefined && hs !== undefined && mine.certCompat !== hs.certCompat);
      if (blocked) {
        const how = conn.sni !== undefined ? `${conn.sni} provided via SNI` : `${conn.handshakeServer.serverHostname ?? ''} (default host as no SNI was provided)`;
        r.log('ssl', APLOG_ERR, `AH02032: Hostname ${how} and hostname ${r.hostname} provided via HTTP have no compatible SSL setup for policy '${policy}'`);
        return 421;
      }
    }
    if (conn.sni !== undefined) {
      // SNI given: checked above.
    } else if ((env.server(r).strictSni === true || hs?.strictSni === true) && env.nameBased(r)) {
      r.log('ssl', APLOG_INFO, 'AH02033: No hostname was provided via SNI for a name based virtual host');
      r.notes.set('error-notes', 'Reason: The client software did not provide a hostname using Server Name Indication (SNI), which is required to access this server.<br />\n');
      return 403;
    }
    if (r.wantsLog('ssl', APLOG_DEBUG)) {
      const c = r.connection;
      const which = c.keepalives <= 0 ? 'Initial (No.1)' : `Subsequent (No.${c.keepalives + 1})`;
      r.log('ssl', APLOG_DEBUG, `AH02034: ${which} HTTPS request received for child ${c.id} (server ${env.tls(r, r.server)?.id ?? r.server.serverHostname ?? ''})`);
    }
    return DECLINED;
  }

  function forbid(r: Request): number {
    r.notes.set('ssl-access-forbidden', '1');
    return 403;
  }

  /** ssl_hook_Access. */
  async function accessChecker(r: Request): Promise<number> {
    const dc = env.dir(r);
    const conn = env.conn(r);
    const ssl = conn !== undefined && conn.sock !== null;
    if (dc.requireSsl === true && !ssl) {
      r.log('ssl', APLOG_ERR, `AH02219: access to ${r.filename} failed, reason: SSL connection required`);
      return forbid(r);
    }
    if (!ssl || conn === undefined) return DECLINED;
    const sc = env.server(r);
    const t = env.tls(r, r.server);
    // Per-directory SSLCipherSuite (ssl_hook_Access_classic): TLS 1.2 and below only (httpd
    // 2.4.71 leaves a TLS 1.3 connection's cipher as it is).
    // DIFFERENCE: httpd sets the directory's list on the connection and renegotiates; Node
    // cannot change a connection's cipher list, so a connection whose cipher is in the list is
    // served as it is, and one whose cipher is not is refused as a failed renegotiation is.
    const dirCiphers = dc.cipherSuite ?? (r.server !== conn.handshakeServer ? sc.cipherSuite : undefined);
    const proto = conn.sock.getProtocol();
    if (dirCiphers !== undefined && proto !== 'TLSv1.3' && (t === undefined || dirCiphers !== t.ciphers)) {
      const allowed = cipherSet(dirCiphers);
      if (allowed === null) {
        r.log('ssl', APLOG_WARNING, 'AH02253: Unable to reconfigure (per-directory) permitted SSL ciphers');
        if (APLOG_ERR <= levelFor(r.server.logLevel, 'ssl')) {
          r.server.errorLog.write({ module: 'ssl', level: APLOG_ERR, message: 'SSL Library Error: error:0A0000B9:SSL routines::no cipher match' });
        }
        return 403;
      }
      if (!allowed.has(conn.sock.getCipher().name)) {
        // An HTTP/2 stream cannot renegotiate its connection: mod_http2 answers the 403 with
        // a stream reset asking for HTTP/1.1 (ssl_hook_Access_classic on c->master).
        if (r.connection.master !== undefined) { r.notes.set('ssl-renegotiate-forbidden', 'cipher-suite'); return 403; }
        if (r.wantsLog('ssl', APLOG_DEBUG)) r.log('ssl', APLOG_DEBUG, 'AH02220: Reconfigured cipher suite will force renegotiation');
        r.log('ssl', APLOG_ERR, 'AH02261: Re-negotiation handshake failed');
        r.log('ssl', APLOG_INFO, `PL02216: the connection's cipher ${conn.sock.getCipher().name} is not in this directory's SSLCipherSuite, and plume cannot renegotiate to another`);
        return 403;
      }
    }
    // Per-directory client verification (ssl_hook_Access_modern / _classic).
    const dirMode = dc.verifyClient;
    const srvMode = sc.verifyClient ?? 'none';
    const needStrict = dirMode === 'require' || srvMode === 'require';
    const needPeer = needStrict || dirMode === 'optional' || dirMode === 'optional_no_ca' || srvMode === 'optional' || srvMode === 'optional_no_ca';
    if (needPeer) {
      const mode: VerifyMode = dirMode ?? srvMode;
      const depth = dc.verifyDepth ?? sc.verifyDepth ?? 1;
      const inPlace = t?.verify ?? 'none';
      const changes = inPlace === 'none' || (needStrict && inPlace !== 'require');
      if (changes && r.connection.master !== undefined) {
        // Not on an HTTP/2 stream (ssl_hook_Access_*: c->master): 403, answered by mod_http2
        // with a stream reset asking for HTTP/1.1.
        r.notes.set('ssl-renegotiate-forbidden', 'verify-client');
        return 403;
      }
      if (changes && conn.sock.getProtocol() === 'TLSv1.3' && !conn.pha) {
        // ssl_hook_Access_modern: TLS 1.3 without the client's post_handshake_auth extension.
        r.log('ssl', APLOG_ERR, 'AH10158: cannot perform post-handshake authentication');
        if (APLOG_ERR <= levelFor(r.server.logLevel, 'ssl')) {
          r.server.errorLog.write({ module: 'ssl', level: APLOG_ERR, message: 'SSL Library Error: error:0A000117:SSL routines::extension not received' });
        }
        r.notes.set('error-notes', 'Reason: Cannot perform Post-Handshake Authentication.<br />');
        return 403;
      }
      if (changes) {
        // What httpd buffers before it renegotiates (fill_reneg_buffer).
        const limit = dc.renegBufferSize ?? DEFAULT_RENEG_BUFFER;
        const body = r.body;
        if (body !== null && body !== undefined && !body.done && body.length > limit) {
          r.log('ssl', APLOG_ERR, `AH02018: request body exceeds maximum size (${limit}) for SSL buffer`);
          r.log('ssl', APLOG_ERR, 'AH10228: could not buffer message body to allow TLS Post-Handshake Authentication to proceed');
          return 413;
        }
        if (r.wantsLog('ssl', APLOG_DEBUG)) r.log('ssl', APLOG_DEBUG, 'AH10129: verify client post handshake');
        conn.certRevealed = true;
        // SSLOCSPEnable: the certificate the "renegotiation" brought is asked about now, as
        // httpd's verify callback does during it; a bad answer fails it (AH02261).
        const leaf = conn.clientCert();
        if (t?.ocsp != null && leaf !== null && conn.ocspChecked === false && verifyResult(conn, mode, depth, t) === 'SUCCESS') {
          conn.ocspChecked = true;
          const log: ConnLog = (level, message, errno) => r.log('ssl', level, message, errno);
          const chain = [leaf, ...conn.chain()];
          const f = await verifyChain(t.ocsp, chain, log);
          if (f !== null) {
            const cert = chain[f.depth] ?? leaf;
            if (r.wantsLog('ssl', APLOG_INFO)) r.log('ssl', APLOG_INFO, `AH02276: Certificate Verification: Error (${f.errnum}): ${f.text}${certDetails(cert)}`);
            else r.log('ssl', APLOG_ERR, `AH02039: Certificate Verification: Error (${f.errnum}): ${f.text}`);
            conn.ocspFailure = f.text;
            conn.verify = `FAILED:${f.text}`;
            r.log('ssl', APLOG_ERR, 'AH02261: Re-negotiation handshake failed');
            if (APLOG_ERR <= levelFor(r.server.logLevel, 'ssl')) {
              r.server.errorLog.write({ module: 'ssl', level: APLOG_ERR, message: 'SSL Library Error: error:0A000086:SSL routines::certificate verify failed' });
            }
            return 403;
          }
        }
      }
      conn.verify = verifyResult(conn, mode, depth, t);
      if (needStrict && conn.verify !== 'SUCCESS' && conn.verify !== 'GENEROUS') {
        if (conn.verify === 'NONE') {
          r.log('ssl', APLOG_ERR, 'AH02263: Re-negotiation handshake failed: Client certificate missing');
        } else {
          r.log('ssl', APLOG_INFO, `AH02276: Certificate Verification: Error: ${conn.verify.slice(7)}`);
          r.log('ssl', APLOG_ERR, 'AH02262: Re-negotiation handshake failed: Client verification failed');
        }
        return 403;
      }
    }
    if ((dc.options & OPT_FAKEBASICAUTH) === 0 && dc.userName !== undefined) {
      const v = sslVar(conn, dc.userName, (dc.options & OPT_LEGACYDNFORMAT) !== 0);
      if (v !== undefined && v !== '') r.user = v;
      else r.log('ssl', APLOG_WARNING, `AH02227: Failed to set r->user to '${dc.userName}'`);
    }
    for (const req of dc.requires) {
      let ok: boolean | string;
      try { ok = await req.evaluate(r); } catch (e) { ok = (e as Error).message; }
      if (typeof ok === 'string') {
        r.log('ssl', APLOG_ERR, `AH02265: access to ${r.filename} failed, reason: Failed to execute SSL requirement expression: ${ok}`);
        return forbid(r);
      }
      if (!ok) {
        r.log('ssl', APLOG_INFO, `AH02266: Access to ${r.filename} denied for ${r.connection.remoteIp} (requirement expression not fulfilled)`);
        r.log('ssl', APLOG_INFO, `AH02228: Failed expression: ${req.text}`);
        r.log('ssl', APLOG_ERR, `AH02229: access to ${r.filename} failed, reason: SSL requirement expression not fulfilled`);
        return forbid(r);
      }
    }
    return DECLINED;
  }

  /** ssl_hook_UserCheck. */
  function checkUserId(r: Request): number {
    const dc = env.dir(r);
    if ((dc.options & OPT_STRICTREQUIRE) !== 0 && r.notes.has('ssl-access-forbidden')) return 403;
    if (!r.isInitialReq()) return DECLINED;
    const auth = r.headersIn.get('Authorization');
    if (auth !== undefined) {
      const sp = auth.indexOf(' ');
      if ((sp < 0 ? auth : auth.slice(0, sp)).toLowerCase() === 'basic') {
        const decoded = Buffer.from(auth.slice(sp + 1).replace(/^[ \t]+/, ''), 'base64').toString('latin1');
        const colon = decoded.indexOf(':');
        const user = colon < 0 ? decoded : decoded.slice(0, colon);
        const pass = colon < 0 ? '' : decoded.slice(colon + 1);
        if (user.startsWith('/') && pass === 'password') {
          r.log('ssl', APLOG_ERR, `AH02035: Encountered FakeBasicAuth spoof: ${user}`);
          return 403;
        }
      }
    }
    const conn = env.conn(r);
    const cert = conn?.sock != null ? conn.clientCert() : null;
    if (cert === null || (dc.options & OPT_FAKEBASICAUTH) === 0 || r.user !== undefined) return DECLINED;
    // X509_NAME_oneline: the 2.2 form of the DN, whatever LegacyDNStringFormat says.
    const line = `Basic ${Buffer.from(`${formatDn(cert.subject, true)}:password`, 'latin1').toString('base64')}`;
    r.headersIn.set('Authorization', line);
    r.log('ssl', APLOG_INFO, `AH02036: Faking HTTP Basic Auth header: "Authorization: ${line}"`);
    return DECLINED;
  }

  /** ssl_hook_Auth. */
  function authChecker(r: Request): number {
    const dc = env.dir(r);
    if ((dc.options & OPT_STRICTREQUIRE) !== 0 && r.notes.has('ssl-access-forbidden')) return 403;
    return DECLINED;
  }

  /** ssl_hook_Fixup. */
  function fixups(r: Request): number {
    const conn = env.conn(r);
    if (conn === undefined || conn.sock === null) return DECLINED;
    const dc = env.dir(r);
    const legacy = (dc.options & OPT_LEGACYDNFORMAT) !== 0;
    const envs = r.subprocessEnv;
    envs.set('HTTPS', 'on');
    if (dc.userName !== undefined) {
      const v = sslVar(conn, dc.userName, legacy);
      if (v !== undefined && v !== '') r.user = v;
      else r.log('ssl', APLOG_WARNING, `AH02227: Failed to set r->user to '${dc.userName}'`);
    }
    if (dc.options & OPT_STDENVVARS) {
      dnEnvVars(conn, legacy, envs);
      sanEnvVars(conn, envs);
      for (const name of STD_ENV_VARS) {
        const v = sslVar(conn, name, legacy);
        if (v !== undefined) envs.set(name, v);
      }
      if (conn.sni !== undefined) envs.set('SSL_TLS_SNI', conn.sni);
    }
    if (dc.options & OPT_EXPORTCERTDATA) {
      if (conn.serverCert !== null) envs.set('SSL_SERVER_CERT', pem(conn.serverCert));
      const client = conn.clientCert();
      if (client !== null) envs.set('SSL_CLIENT_CERT', pem(client));
      conn.chain().forEach((c, i) => envs.set(`SSL_CLIENT_CERT_CHAIN_${i}`, pem(c)));
    }
    return DECLINED;
  }

  return { postReadRequest, accessChecker, checkUserId, authChecker, fixups };
}
