#!/usr/bin/env node
// Generates the TLS conformance cases (test/conformance/cases/ssl/*.json): mod_ssl's
// directives and their errors, SNI selection with httpd's 421/400/403 answers, client
// certificates (required, optional, unknown CA, revoked with and without
// SSLCARevocationCheck), SSLRequire, FakeBasicAuth, the SSL_* variables in logs and headers
// (LegacyDNStringFormat on and off), plain HTTP on the TLS port. The certificates are those of
// test/fixtures/tls (scripts/gen-test-certs.sh), copied into each case's root.
//
//   node test/conformance/gen/ssl.mjs          # rewrite the case files
//   node dist/test/conformance/record.js ssl/  # record them from Apache

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, '..', 'cases', 'ssl');
const MODS = '/usr/lib/apache2/modules';
const load = (...names) => names.map((n) => `LoadModule ${n}_module ${MODS}/mod_${n}.so`);

const T = '@ROOT@/tls';
const BASE = [
  ...load('socache_shmcb', 'ssl', 'headers', 'setenvif'),
  'LogFormat "%h %u \\"%r\\" %>s %b %{SSL_PROTOCOL}x %{SSL_CLIENT_VERIFY}x \\"%{SSL_CLIENT_S_DN}x\\" %{HTTPS}x" plume_case',
  'SSLSessionCache none',
];
const CERT = [`SSLCertificateFile ${T}/server.crt`, `SSLCertificateKeyFile ${T}/server.key`];
/** A TLS virtual host on @PORT@. */
const vhost = (...lines) => ['<VirtualHost 127.0.0.1:@PORT@>', '  ServerName localhost', '  SSLEngine on', ...CERT.map((l) => '  ' + l), ...lines.map((l) => '  ' + l), '</VirtualHost>'];
const FILES = { 'htdocs/index.html': 'hello over TLS\n', 'htdocs/secure/index.html': 'secret\n', 'htdocs/dir/index.html': 'dir\n' };
const get = (p, tls = {}, extra = {}) => ({ method: 'GET', path: p, tls, ...extra });
const CLIENT = { cert: 'client' };

const cases = {};
function add(name, spec) {
  cases[name] = { title: spec.title, tlsFiles: true, conf: [...BASE, ...spec.conf], files: { ...FILES, ...(spec.files ?? {}) }, requests: spec.requests, ...(spec.keepAlive ? { keepAlive: true } : {}), ...(spec.extraLogs ? { extraLogs: spec.extraLogs } : {}) };
}
/** A configuration httpd refuses: the case records its exit and message. */
function refuse(name, title, lines, files) {
  add(name, { title, conf: lines, files, requests: [get('/', {})] });
}

// ---- SNI and name-based hosts --------------------------------------------------------------
const two = (aExtra = [], bExtra = [], strict = false) => [
  ...(strict ? ['SSLStrictSNIVHostCheck on'] : []),
  '<VirtualHost 127.0.0.1:@PORT@>', '  ServerName a.example', '  DocumentRoot "@ROOT@/a"', '  SSLEngine on', ...CERT.map((l) => '  ' + l), ...aExtra.map((l) => '  ' + l), '</VirtualHost>',
  '<VirtualHost 127.0.0.1:@PORT@>', '  ServerName b.example', '  DocumentRoot "@ROOT@/b"', '  SSLEngine on', ...bExtra.map((l) => '  ' + l), '</VirtualHost>',
];
const AB = { 'a/index.html': 'site a\n', 'b/index.html': 'site b\n' };
const hostGet = (sni, host, p = '/index.html') => ({ method: 'GET', path: p, tls: { servername: sni }, headers: host === null ? [] : [['Host', host]] });
// ---- serving over TLS ------------------------------------------------------------------------
add('basic-tls13', { title: 'A TLS virtual host serves a file over TLS 1.3; SSL_PROTOCOL and HTTPS in the access log', conf: vhost(), requests: [get('/index.html')] });
add('basic-tls12', { title: 'A client limited to TLS 1.2 gets TLS 1.2', conf: vhost(), requests: [get('/index.html', { maxVersion: 'TLSv1.2' })] });
add('plain-http-on-tls-port', { title: "Plain HTTP sent to the TLS port gets httpd's 400 page with the 'speaking plain HTTP' reason", conf: vhost(), requests: [{ method: 'GET', path: '/index.html' }] });
add('plain-http10-on-tls-port', { title: 'An HTTP/1.0 request in plain text on the TLS port: 400, connection closed', conf: vhost(), requests: [{ raw: 'GET / HTTP/1.0\r\n\r\n' }] });
add('keepalive-two-requests', { title: 'Two requests over one kept-alive TLS connection', conf: vhost(), keepAlive: true, requests: [get('/index.html'), get('/dir/index.html')] });
add('dir-redirect-https', { title: "mod_dir's trailing-slash redirect on a TLS host says https:// (ap_http_scheme)", conf: vhost(), requests: [get('/dir')] });
add('https-in-if', { title: '<If "%{HTTPS} == \'on\'"> and %{SSL_PROTOCOL} in expressions', conf: vhost('<If "%{HTTPS} == \'on\' && %{SSL_PROTOCOL} =~ /^TLSv1/">', '  Header set X-Tls yes', '</If>', '<Else>', '  Header set X-Tls no', '</Else>'), requests: [get('/index.html')] });
add('https-off-on-plain-port', { title: 'HTTPS is off on a plain listener of the same server', conf: ['Listen 127.0.0.1:@PORT2@', ...vhost(), '<If "%{HTTPS} == \'on\'">', '  Header set X-Tls yes', '</If>', '<Else>', '  Header set X-Tls no', '</Else>'], requests: [{ method: 'GET', path: '/index.html', port: '@PORT2@' }] });
add('stdenvvars-header', { title: 'SSLOptions +StdEnvVars puts SSL_* in the environment (read by Header %{..}e)', conf: vhost('<Location />', '  SSLOptions +StdEnvVars', '</Location>', 'Header set X-Proto "%{SSL_PROTOCOL}e"', 'Header set X-Https "%{HTTPS}e"', 'Header set X-Iface "%{SSL_VERSION_INTERFACE}e"', 'Header set X-Server-Dn "%{SSL_SERVER_S_DN}e"', 'Header set X-Server-Cn "%{SSL_SERVER_S_DN_CN}e"', 'Header set X-Server-Serial "%{SSL_SERVER_M_SERIAL}e"', 'Header set X-Server-Sig "%{SSL_SERVER_A_SIG}e"', 'Header set X-Server-Key "%{SSL_SERVER_A_KEY}e"', 'Header set X-Server-Start "%{SSL_SERVER_V_START}e"'), requests: [get('/index.html')] });
add('no-stdenvvars-header', { title: 'Without +StdEnvVars only HTTPS is in the environment', conf: vhost('Header set X-Proto "%{SSL_PROTOCOL}e"', 'Header set X-Https "%{HTTPS}e"'), requests: [get('/index.html')] });
add('stdenvvars-client', { title: '+StdEnvVars with a client certificate: the client DN variables, 2.4 format', conf: vhost(`SSLCACertificateFile ${T}/ca.crt`, 'SSLVerifyClient optional', 'SSLOptions +StdEnvVars', 'Header set X-Dn "%{SSL_CLIENT_S_DN}e"', 'Header set X-Idn "%{SSL_CLIENT_I_DN}e"', 'Header set X-Ou "%{SSL_CLIENT_S_DN_OU}e"', 'Header set X-Email "%{SSL_CLIENT_S_DN_Email}e"', 'Header set X-San "%{SSL_CLIENT_SAN_Email_0}e"', 'Header set X-Verify "%{SSL_CLIENT_VERIFY}e"', 'Header set X-Version "%{SSL_CLIENT_M_VERSION}e"'), requests: [get('/index.html', CLIENT)] });
add('legacy-dn-format', { title: 'SSLOptions +LegacyDNStringFormat: SSL_CLIENT_S_DN and _I_DN as 2.2 printed them', conf: vhost(`SSLCACertificateFile ${T}/ca.crt`, 'SSLVerifyClient optional', 'SSLOptions +StdEnvVars +LegacyDNStringFormat', 'Header set X-Dn "%{SSL_CLIENT_S_DN}e"', 'Header set X-Idn "%{SSL_CLIENT_I_DN}e"'), requests: [get('/index.html', CLIENT)] });
add('legacy-dn-format-log', { title: '%{SSL_CLIENT_S_DN}x in the access log follows +LegacyDNStringFormat of the directory', conf: vhost(`SSLCACertificateFile ${T}/ca.crt`, 'SSLVerifyClient optional', '<Location /secure>', '  SSLOptions +LegacyDNStringFormat', '</Location>'), requests: [get('/index.html', CLIENT), get('/secure/index.html', CLIENT)] });

// ---- protocols and ciphers ---------------------------------------------------------------
add('protocol-tls12-only', { title: 'SSLProtocol -all +TLSv1.2: a TLS 1.3-only client fails, a 1.2 client is served', conf: ['SSLProtocol -all +TLSv1.2', ...vhost()], requests: [get('/index.html', { minVersion: 'TLSv1.3' }), get('/index.html')] });
add('protocol-tls13-only', { title: 'SSLProtocol TLSv1.3: a client limited to TLS 1.2 fails', conf: ['SSLProtocol TLSv1.3', ...vhost()], requests: [get('/index.html', { maxVersion: 'TLSv1.2' }), get('/index.html')] });
add('protocol-minus-sslv2', { title: 'SSLProtocol all -SSLv2: a minus SSLv2 is accepted (and ignored)', conf: ['SSLProtocol all -SSLv2 -SSLv3', ...vhost()], requests: [get('/index.html')] });
refuse('protocol-sslv2', 'SSLProtocol SSLv2: "SSLProtocol: SSLv2 is no longer supported" (specification row)', ['SSLProtocol +SSLv2', ...vhost()]);
refuse('protocol-sslv3', 'SSLProtocol +SSLv3: OpenSSL has no SSLv3', ['SSLProtocol all +SSLv3', ...vhost()]);
refuse('protocol-illegal', "SSLProtocol with an unknown word: Illegal protocol 'TLSv9'", ['SSLProtocol TLSv9', ...vhost()]);
add('cipher-tls12-choice', { title: 'SSLCipherSuite: a TLS 1.2 client gets the one cipher allowed', conf: ['SSLCipherSuite ECDHE-RSA-AES256-GCM-SHA384', 'LogFormat "%h \\"%r\\" %>s %{SSL_PROTOCOL}x %{SSL_CIPHER}x %{SSL_CIPHER_USEKEYSIZE}x" plume_case', ...vhost()], requests: [get('/index.html', { maxVersion: 'TLSv1.2' })] });
add('cipher-no-overlap', { title: 'SSLCipherSuite with no cipher the client offers: the handshake fails', conf: ['SSLCipherSuite ECDHE-RSA-AES256-GCM-SHA384', ...vhost()], requests: [get('/index.html', { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' })] });
add('honor-cipher-order-on', { title: "SSLHonorCipherOrder on: the server's first choice wins", conf: ['SSLCipherSuite ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384', 'SSLHonorCipherOrder on', 'LogFormat "%h \\"%r\\" %>s %{SSL_CIPHER}x" plume_case', ...vhost()], requests: [get('/index.html', { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256' })] });
add('honor-cipher-order-off', { title: "SSLHonorCipherOrder off: the client's first choice wins", conf: ['SSLCipherSuite ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384', 'SSLHonorCipherOrder off', 'LogFormat "%h \\"%r\\" %>s %{SSL_CIPHER}x" plume_case', ...vhost()], requests: [get('/index.html', { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256' })] });
add('cipher-tls13-form', { title: 'SSLCipherSuite TLSv1.3 TLS_CHACHA20_POLY1305_SHA256 (the TLS 1.3 form)', conf: ['SSLCipherSuite TLSv1.3 TLS_CHACHA20_POLY1305_SHA256', 'LogFormat "%h \\"%r\\" %>s %{SSL_PROTOCOL}x %{SSL_CIPHER}x" plume_case', ...vhost()], requests: [get('/index.html')] });
refuse('cipher-tls13-in-location', 'SSLCipherSuite TLSv1.3 inside <Location>: refused', [...vhost('<Location /x>', '  SSLCipherSuite TLSv1.3 TLS_AES_128_GCM_SHA256', '</Location>')]);
refuse('cipher-bad-protocol', "SSLCipherSuite FOO list: protocol 'FOO' not supported", ['SSLCipherSuite FOO ALL', ...vhost()]);
add('rsa-and-ecdsa', { title: 'RSA and ECDSA certificates side by side: the client picks by its cipher', conf: ['LogFormat "%h \\"%r\\" %>s %{SSL_CIPHER}x %{SSL_SERVER_A_KEY}x" plume_case', ...vhost(`SSLCertificateFile ${T}/server-ec.crt`, `SSLCertificateKeyFile ${T}/server-ec.key`)], requests: [get('/index.html', { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' }), get('/index.html', { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' })] });
refuse('compression-on', 'SSLCompression on: no compression methods in OpenSSL', ['SSLCompression on', ...vhost()]);
add('compression-off', { title: 'SSLCompression off is accepted; SSL_COMPRESS_METHOD is NULL', conf: ['SSLCompression off', 'LogFormat "%h \\"%r\\" %>s %{SSL_COMPRESS_METHOD}x" plume_case', ...vhost()], requests: [get('/index.html')] });
add('session-tickets-off', { title: 'SSLSessionTickets off and SSLInsecureRenegotiation off are accepted', conf: ['SSLSessionTickets off', 'SSLInsecureRenegotiation off', ...vhost()], requests: [get('/index.html')] });
add('openssl-conf-min-protocol', { title: 'SSLOpenSSLConfCmd MinProtocol TLSv1.3: a TLS 1.2 client fails', conf: [...vhost('SSLOpenSSLConfCmd MinProtocol TLSv1.3')], requests: [get('/index.html', { maxVersion: 'TLSv1.2' }), get('/index.html')] });
refuse('openssl-conf-unknown', 'SSLOpenSSLConfCmd with an unknown command', [...vhost('SSLOpenSSLConfCmd NoSuchThing x')]);
add('random-seed', { title: 'SSLRandomSeed startup/connect builtin is accepted', conf: ['SSLRandomSeed startup builtin', 'SSLRandomSeed connect builtin', ...vhost()], requests: [get('/index.html')] });
refuse('random-seed-bad-context', 'SSLRandomSeed with an unknown context', ['SSLRandomSeed later builtin', ...vhost()]);

// ---- configuration errors ------------------------------------------------------------------
refuse('engine-optional', "SSLEngine optional: removed in 2.4.64 (AH10510)", ['<VirtualHost 127.0.0.1:@PORT@>', '  SSLEngine optional', '</VirtualHost>']);
refuse('sni-policy-bad', 'SSLVHostSNIPolicy with an unknown policy', ['SSLVHostSNIPolicy lax', ...vhost()]);
add('sni-policy-authonly', { title: 'SSLVHostSNIPolicy authonly: another certificate on the Host-selected host is allowed', conf: ['SSLVHostSNIPolicy authonly', ...two([], [`SSLCertificateFile ${T}/server-ec.crt`, `SSLCertificateKeyFile ${T}/server-ec.key`])], files: AB, requests: [hostGet('a.example', 'b.example')] });
add('sni-policy-strict', { title: 'SSLVHostSNIPolicy strict: any other host than the SNI one is refused (421)', conf: ['SSLVHostSNIPolicy strict', ...two([], CERT)], files: AB, requests: [hostGet('a.example', 'b.example'), hostGet('a.example', 'a.example')] });
add('no-sni-incompatible-421', { title: 'No SNI and a Host naming a host with other TLS settings: 421 (default host as no SNI was provided)', conf: two([], [`SSLCertificateFile ${T}/server-ec.crt`, `SSLCertificateKeyFile ${T}/server-ec.key`]), files: AB, requests: [hostGet(null, 'b.example')] });
refuse('engine-bad-arg', 'SSLEngine maybe: Argument must be On, Off, or Optional', ['<VirtualHost 127.0.0.1:@PORT@>', '  SSLEngine maybe', '</VirtualHost>']);
refuse('cert-missing-file', "SSLCertificateFile naming a missing file: file '...' does not exist or is empty", ['<VirtualHost 127.0.0.1:@PORT@>', '  SSLEngine on', `  SSLCertificateFile ${T}/nope.crt`, '</VirtualHost>']);
refuse('key-mismatch', 'A key that does not match its certificate: AH02565, startup fails', ['<VirtualHost 127.0.0.1:@PORT@>', '  ServerName localhost', '  SSLEngine on', `  SSLCertificateFile ${T}/server.crt`, `  SSLCertificateKeyFile ${T}/stray.key`, '</VirtualHost>']);
refuse('verify-bad-arg', "SSLVerifyClient sometimes: Invalid argument", [...vhost('SSLVerifyClient sometimes')]);
refuse('verify-depth-negative', 'SSLVerifyDepth -1: Invalid argument', [...vhost('SSLVerifyDepth -1')]);
refuse('options-illegal', "SSLOptions +Bogus: Illegal option 'Bogus'", [...vhost('<Location />', '  SSLOptions +Bogus', '</Location>')]);
refuse('crlcheck-bad-arg', "SSLCARevocationCheck sometimes: Invalid argument", [...vhost('SSLCARevocationCheck sometimes')]);
refuse('session-cache-unknown', "SSLSessionCache with an unknown provider: the list of known names", ['SSLSessionCache bogus:/tmp/x', ...vhost()]);
refuse('session-cache-small', 'SSLSessionCache shmcb with too small a size', ['SSLSessionCache shmcb:@ROOT@/logs/scache(100)', ...vhost()]);
refuse('session-cache-in-vhost', 'SSLSessionCache inside <VirtualHost>', [...vhost('SSLSessionCache none')]);
refuse('session-timeout-negative', 'SSLSessionCacheTimeout -5: Invalid argument', ['SSLSessionCacheTimeout -5', ...vhost()]);
refuse('ca-path-missing', "SSLCACertificatePath naming a missing directory", [...vhost(`SSLCACertificatePath ${T}/nodir`)]);
refuse('require-syntax-error', 'SSLRequire with a syntax error', [...vhost('<Location />', '  SSLRequire %{SSL_CIPHER} eq', '</Location>')]);
refuse('passphrase-bad', 'SSLPassPhraseDialog with an unknown form', ['SSLPassPhraseDialog sometimes', ...vhost()]);
add('passphrase-exec', { title: 'SSLPassPhraseDialog exec: decrypts an encrypted key', conf: ['SSLPassPhraseDialog exec:@ROOT@/pp.sh', '<VirtualHost 127.0.0.1:@PORT@>', '  ServerName localhost', '  SSLEngine on', `  SSLCertificateFile ${T}/server.crt`, `  SSLCertificateKeyFile ${T}/server-enc.key`, '</VirtualHost>'], files: { 'pp.sh': { content: '#!/bin/sh\necho plume\n', mode: '0755' } }, requests: [get('/index.html')] });
refuse('ssllog-deprecated', 'SSLLog: no longer supported', ['SSLLog /tmp/x', ...vhost()]);

// ---- client certificates ---------------------------------------------------------------------
const CA = `SSLCACertificateFile ${T}/ca.crt`;
add('verify-require-no-cert', { title: 'SSLVerifyClient require at the host: no certificate, no response', conf: vhost(CA, 'SSLVerifyClient require'), requests: [get('/index.html')] });
add('verify-require-good-cert', { title: 'SSLVerifyClient require: a good certificate is served; its DN in the log', conf: vhost(CA, 'SSLVerifyClient require'), requests: [get('/index.html', CLIENT)] });
add('verify-require-unknown-ca', { title: 'SSLVerifyClient require: a certificate from an unknown CA fails the handshake', conf: vhost(CA, 'SSLVerifyClient require'), requests: [get('/index.html', { cert: 'stranger' })] });
add('verify-optional-none', { title: 'SSLVerifyClient optional without a certificate: served, SSL_CLIENT_VERIFY NONE', conf: vhost(CA, 'SSLVerifyClient optional'), requests: [get('/index.html')] });
add('verify-optional-unknown-ca', { title: 'SSLVerifyClient optional with a certificate from an unknown CA: the handshake fails', conf: vhost(CA, 'SSLVerifyClient optional'), requests: [get('/index.html', { cert: 'stranger' })] });
add('verify-optional-no-ca', { title: 'SSLVerifyClient optional_no_ca with an unknown CA: served, GENEROUS', conf: vhost(CA, 'SSLVerifyClient optional_no_ca'), requests: [get('/index.html', { cert: 'stranger' })] });
add('verify-depth-zero', { title: 'SSLVerifyDepth 0 refuses a certificate issued by a CA', conf: vhost(CA, 'SSLVerifyClient require', 'SSLVerifyDepth 0'), requests: [get('/index.html', CLIENT)] });
add('crl-chain-revoked', { title: 'SSLCARevocationCheck chain with the CRL: the revoked certificate fails, the good one is served', conf: vhost(CA, `SSLCARevocationFile ${T}/ca.crl`, 'SSLCARevocationCheck chain', 'SSLVerifyClient require'), requests: [get('/index.html', { cert: 'revoked' }), get('/index.html', CLIENT)] });
add('crl-leaf-revoked', { title: 'SSLCARevocationCheck leaf with the CRL: the revoked certificate fails', conf: vhost(CA, `SSLCARevocationFile ${T}/ca.crl`, 'SSLCARevocationCheck leaf', 'SSLVerifyClient require'), requests: [get('/index.html', { cert: 'revoked' }), get('/index.html', CLIENT)] });
add('crl-without-check', { title: 'A CRL file without SSLCARevocationCheck: no revocation checking (specification row), the revoked certificate is served', conf: vhost(CA, `SSLCARevocationFile ${T}/ca.crl`, 'SSLVerifyClient require'), requests: [get('/index.html', { cert: 'revoked' })] });
add('verify-per-location', { title: '<Location> SSLVerifyClient require: 403 without a certificate, 200 with one', conf: vhost(CA, '<Location /secure>', '  SSLVerifyClient require', '  SSLVerifyDepth 5', '</Location>'), requests: [get('/secure/index.html'), get('/secure/index.html', CLIENT), get('/index.html')] });
add('require-ssl-plain-port', { title: 'SSLRequireSSL on a plain listener: 403 and AH02219', conf: ['Listen 127.0.0.1:@PORT2@', ...vhost(), '<Location /secure>', '  SSLRequireSSL', '</Location>'], requests: [{ method: 'GET', path: '/secure/index.html', port: '@PORT2@' }, get('/secure/index.html')] });
add('sslrequire-dn', { title: 'SSLRequire on the client DN: granted for O=ASF, denied for another OU', conf: vhost(CA, 'SSLVerifyClient require', '<Location /secure>', '  SSLRequire %{SSL_CLIENT_S_DN_O} eq "ASF" and %{SSL_CLIENT_S_DN_OU} in {"httpd-test", "httpd"}', '</Location>', '<Location /dir>', '  SSLRequire %{SSL_CLIENT_S_DN_OU} eq "Staff"', '</Location>'), requests: [get('/secure/index.html', CLIENT), get('/dir/index.html', CLIENT)] });
add('sslrequire-constants', { title: 'SSLRequire on constants ("a" < "b", 2 < 10) and a regex on the cipher', conf: vhost('<Location />', '  SSLRequire "a" < "b"', '  SSLRequire 2 lt 10', '  SSLRequire %{SSL_CIPHER} !~ m/^(EXP|NULL)-/', '</Location>'), requests: [get('/index.html')] });
add('sslrequire-peerextlist', { title: 'SSLRequire "Lemons" in PeerExtList(oid): the client certificate extension', conf: vhost(CA, 'SSLVerifyClient require', '<Location /secure>', '  SSLRequire "Lemons" in PeerExtList("1.3.6.1.4.1.18060.12.0")', '</Location>', '<Location /dir>', '  SSLRequire "Apples" in PeerExtList("1.3.6.1.4.1.18060.12.0")', '</Location>'), requests: [get('/secure/index.html', CLIENT), get('/dir/index.html', CLIENT)] });
const FAKE_USERS = 'files';
add('fakebasicauth', { title: 'SSLOptions +FakeBasicAuth: the client DN becomes the Basic user, checked against the password file', conf: [...load('authn_file', 'auth_basic', 'authz_user', 'authn_core'), ...vhost(CA, 'SSLVerifyClient require', '<Location /secure>', '  SSLOptions +FakeBasicAuth', '  AuthType Basic', '  AuthName "Snake Oil Authentication"', '  AuthUserFile @ROOT@/htpasswd', '  Require valid-user', '</Location>')], files: { htpasswd: '/C=US/ST=California/O=ASF/OU=httpd-test/CN=client_ok/emailAddress=alice@example.com:xxj31ZMTZzkVA\n' }, requests: [get('/secure/index.html', CLIENT)] });
add('fakebasicauth-spoof', { title: 'FakeBasicAuth: a Basic header with a DN and "password" is a spoof (AH02035, 403)', conf: [...load('authn_file', 'auth_basic', 'authz_user', 'authn_core'), ...vhost(CA, 'SSLVerifyClient optional', '<Location /secure>', '  SSLOptions +FakeBasicAuth', '  AuthType Basic', '  AuthName "x"', '  AuthUserFile @ROOT@/htpasswd', '  Require valid-user', '</Location>')], files: { htpasswd: '/CN=x:xxj31ZMTZzkVA\n' }, requests: [get('/secure/index.html', {}, { headers: [['Authorization', 'Basic ' + Buffer.from('/CN=x:password').toString('base64')]] })] });
add('ssl-username', { title: 'SSLUserName SSL_CLIENT_S_DN_CN: the user in the access log', conf: vhost(CA, 'SSLVerifyClient require', 'SSLUserName SSL_CLIENT_S_DN_CN'), requests: [get('/index.html', CLIENT)] });
add('strict-require', { title: 'SSLOptions +StrictRequire: an SSLRequireSSL denial stands even with Satisfy-any access', conf: ['Listen 127.0.0.1:@PORT2@', ...vhost(), '<Location /secure>', '  SSLRequireSSL', '  SSLOptions +StrictRequire', '</Location>'], requests: [{ method: 'GET', path: '/secure/index.html', port: '@PORT2@' }] });

add('sni-selects-vhost', { title: 'SNI and Host name the same host: each name-based TLS host serves its own site', conf: two([], CERT), files: AB, requests: [hostGet('a.example', 'a.example'), hostGet('b.example', 'b.example')] });
add('sni-compatible-other-host', { title: 'SNI a.example, Host b.example, same TLS settings: b is served', conf: two([], CERT), files: AB, requests: [hostGet('a.example', 'b.example')] });
add('sni-incompatible-421', { title: 'SNI a.example, Host b.example with other TLS settings: 421 and AH02032', conf: two([], [`SSLCertificateFile ${T}/server-ec.crt`, `SSLCertificateKeyFile ${T}/server-ec.key`]), files: AB, requests: [hostGet('a.example', 'b.example')] });
add('sni-verify-differs-421', { title: 'SNI a.example, Host b.example where b requires client certificates: 421', conf: two([], [...CERT, CA, 'SSLVerifyClient require']), files: AB, requests: [hostGet('a.example', 'b.example')] });
add('sni-no-host-400', { title: 'SNI given but no Host header (HTTP/1.0): 400 and AH02031', conf: two([], CERT), files: AB, requests: [{ raw: 'GET /index.html HTTP/1.0\r\n\r\n', tls: { servername: 'a.example' } }] });
add('no-sni-default-host', { title: 'No SNI: the first host of the address does the handshake, Host selects the site', conf: two([], CERT), files: AB, requests: [hostGet(null, 'b.example'), hostGet(null, 'a.example')] });
add('strict-sni-403', { title: 'SSLStrictSNIVHostCheck on: a client without SNI gets 403 with the SNI reason', conf: two([], CERT, true), files: AB, requests: [hostGet(null, 'a.example'), hostGet('a.example', 'a.example')] });
add('sni-unknown-name', { title: 'SNI naming no host: the first host handshakes; Host decides the site', conf: two([], CERT), files: AB, requests: [hostGet('c.example', 'a.example')] });

fs.mkdirSync(OUT, { recursive: true });
const names = new Set(Object.keys(cases).map((n) => `${n}.json`));
for (const f of fs.readdirSync(OUT)) if (f.endsWith('.json') && !names.has(f)) fs.unlinkSync(path.join(OUT, f));
for (const [name, spec] of Object.entries(cases)) fs.writeFileSync(path.join(OUT, `${name}.json`), JSON.stringify(spec, null, 2) + '\n');
console.log(`${names.size} cases in ${path.relative(process.cwd(), OUT)}`);
