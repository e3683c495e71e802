// SSLProxyMachineCertificateFile end to end: bin/plume proxies to a real Apache httpd backend
// over TLS whose <Location /v> says SSLVerifyClient require (httpd then asks for the client
// certificate after the handshake: renegotiation under TLS 1.2, post-handshake authentication
// under TLS 1.3). plume presents the machine certificate set for the server and the one set in
// a <Proxy> section; without one the backend answers 403.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as http from 'node:http';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { makeSite, startPlume, freePort, waitFor, REPO, ROOT } from './process-lib.js';
import { tempDir, removeTempDir } from '../temp.js';

const TLS = path.join(REPO, 'test/fixtures/tls');
const APACHE = '/usr/sbin/apache2';
const haveApache = fs.existsSync(APACHE) && fs.existsSync('/usr/lib/apache2/modules/mod_ssl.so');

function get(port: number, p: string): Promise<{ status: number; cn: string | undefined }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, cn: res.headers['x-cn'] as string | undefined }));
    }).on('error', reject);
  });
}

test('SSLProxyMachineCertificateFile: the client certificate reaches a backend that asks for it in a <Location>', { skip: haveApache ? false : 'apache2 with mod_ssl is not installed', timeout: 60000 }, async () => {
  const root = tempDir('plume-sslproxy-backend-');
  fs.chmodSync(root, 0o755);
  fs.mkdirSync(path.join(root, 'logs'));
  fs.writeFileSync(path.join(root, 'v'), 'verified\n');
  const aport = await freePort();
  const m = (n: string): string => `LoadModule ${n}_module /usr/lib/apache2/modules/mod_${n}.so`;
  fs.writeFileSync(path.join(root, 'httpd.conf'), [
    `ServerRoot "${root}"`, `Listen 127.0.0.1:${aport}`, m('mpm_event'), m('authz_core'), m('ssl'), m('headers'), m('alias'),
    ...(ROOT ? ['User nobody', 'Group nogroup'] : []),
    'ServerName localhost', `PidFile ${root}/logs/httpd.pid`, `ErrorLog ${root}/logs/error_log`, `DocumentRoot "${root}"`,
    'SSLEngine on', `SSLCertificateFile ${TLS}/server.crt`, `SSLCertificateKeyFile ${TLS}/server.key`, `SSLCACertificateFile ${TLS}/ca.crt`,
    `Alias /c "${root}"`,
    '<LocationMatch "/v$">', '  SSLVerifyClient require', '  Header always set X-CN "%{SSL_CLIENT_S_DN_CN}s"', '</LocationMatch>',
  ].join('\n') + '\n');
  const apache = spawn(APACHE, ['-d', root, '-f', path.join(root, 'httpd.conf'), '-D', 'FOREGROUND'], { stdio: 'ignore' });
  const site = await makeSite('sslproxy');
  const vport = await freePort();
  const aHost = await freePort();
  site.write([
    m('proxy'), m('proxy_http'), m('ssl'),
    'SSLProxyEngine On',
    `SSLProxyCACertificateFile ${TLS}/ca.crt`,
    `ProxyPass /c/ https://localhost:${aport}/c/`,
    `Listen 127.0.0.1:${aHost}`,
    `<VirtualHost 127.0.0.1:${aHost}>`,
    '  SSLProxyEngine On',
    '  SSLProxyVerify require',
    `  SSLProxyCACertificateFile ${TLS}/ca.crt`,
    `  SSLProxyMachineCertificateFile ${TLS}/client.pem`,
    `  ProxyPass /a/ https://localhost:${aport}/`,
    '</VirtualHost>',
    `Listen 127.0.0.1:${vport}`,
    `<VirtualHost 127.0.0.1:${vport}>`,
    '  SSLProxyEngine On',
    `  SSLProxyCACertificateFile ${TLS}/ca.crt`,
    `  ProxyPass /b/ https://localhost:${aport}/`,
    `  <Proxy https://localhost:${aport}>`,
    `    SSLProxyMachineCertificateFile ${TLS}/client.pem`,
    '  </Proxy>',
    '</VirtualHost>',
  ]);
  let run: Awaited<ReturnType<typeof startPlume>> | undefined;
  try {
    await waitFor('the Apache backend', () => new Promise<boolean>((resolve) => {
      https.get({ host: '127.0.0.1', port: aport, path: '/', rejectUnauthorized: false, agent: false }, (res) => { res.resume(); resolve(true); }).on('error', () => resolve(false));
    }), 15000);
    run = await startPlume(site);
    assert.deepEqual(await get(aHost, '/a/v'), { status: 200, cn: 'client_ok' });
    assert.deepEqual(await get(vport, '/b/v'), { status: 200, cn: 'client_ok' });
    // No machine certificate: the backend refuses (403), and says why in its log.
    assert.equal((await get(site.port, '/c/v')).status, 403);
    await waitFor('the backend log line', () => fs.readFileSync(path.join(root, 'logs/error_log'), 'latin1').includes('AH10158: cannot perform post-handshake authentication')
      || fs.readFileSync(path.join(root, 'logs/error_log'), 'latin1').includes('AH02263'), 10000);
  } finally {
    await run?.stop();
    site.remove();
    const gone = new Promise<void>((r) => apache.once('exit', () => r()));
    if (apache.exitCode === null) apache.kill('SIGTERM');
    await gone;
    removeTempDir(root);
  }
});
