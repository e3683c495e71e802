// OCSP stapling with bin/plume started for real, a real responder (`openssl ocsp`, signed by
// the test CA) and `openssl s_client -status` as the client:
//  - SSLUseStapling staples the responder's answer ("good"), and keeps serving it from
//    SSLStaplingCache once the responder is gone;
//  - a responder that cannot be reached: SSLStaplingFakeTryLater (on by default) staples a
//    tryLater answer; with SSLStaplingFakeTryLater off nothing is stapled (httpd 2.4.71);
//  - a client that does not ask gets no status.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { makeSite, startPlume, freePort, waitFor, REPO } from './process-lib.js';

const FIX = path.join(REPO, 'test/fixtures/tls');
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

function sClient(port: number, status = true): string {
  const r = spawnSync('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', ...(status ? ['-status'] : [])], { input: '', timeout: 15000 });
  return r.stdout.toString('latin1');
}

test('OCSP stapling: good answers stapled and cached, tryLater or nothing when the responder is gone', { skip: !hasOpenssl && 'openssl not installed' }, async () => {
  const [ocspPort, deadPort, a, b, c] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const responder = spawn('openssl', ['ocsp', '-index', path.join(FIX, 'index.txt'), '-port', String(ocspPort),
    '-rsigner', path.join(FIX, 'ca.crt'), '-rkey', path.join(FIX, 'ca.key'), '-CA', path.join(FIX, 'ca.crt'), '-nmin', '10'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let said = '';
  responder.stderr!.on('data', (d: Buffer) => { said += d.toString(); });
  const site = await makeSite('tls-ocsp');
  // Each host its own certificate: stapled answers are cached by certificate (as httpd's).
  const vhost = (port: number, name: string, more: readonly string[]): string[] => [
    `Listen 127.0.0.1:${port}`,
    `<VirtualHost 127.0.0.1:${port}>`,
    '  ServerName localhost',
    '  SSLEngine on',
    `  SSLCertificateFile ${FIX}/${name}.crt`,
    `  SSLCertificateKeyFile ${FIX}/${name}.key`,
    `  SSLCACertificateFile ${FIX}/ca.crt`,
    '  SSLUseStapling on',
    ...more.map((l) => `  ${l}`),
    '</VirtualHost>',
  ];
  site.write([
    'LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so',
    'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
    `SSLStaplingCache shmcb:${site.dir}/logs/stapling(65536)`,
    ...vhost(a, 'server', [`SSLStaplingForceURL http://127.0.0.1:${ocspPort}/`]),
    ...vhost(b, 'server-ec', [`SSLStaplingForceURL http://127.0.0.1:${deadPort}/`, 'SSLStaplingResponderTimeout 2']),
    ...vhost(c, 'expired', [`SSLStaplingForceURL http://127.0.0.1:${deadPort}/`, 'SSLStaplingFakeTryLater off']),
  ]);
  let plume: Awaited<ReturnType<typeof startPlume>> | null = null;
  try {
    await waitFor('openssl ocsp to listen', () => said.includes('waiting for OCSP client connections'));
    plume = await startPlume(site);
    const first = sClient(a);
    assert.match(first, /OCSP Response Status: successful/);
    assert.match(first, /Cert Status: good/);
    assert.match(first, /Serial Number: 1001/);
    assert.doesNotMatch(sClient(a, false), /OCSP response:/);
    // The responder goes away: the cached answer is still stapled.
    responder.kill('SIGTERM');
    await new Promise<void>((r) => { if (responder.exitCode !== null || responder.signalCode !== null) r(); else responder.once('exit', () => r()); });
    assert.match(sClient(a), /Cert Status: good/);
    // Nobody answers: tryLater (SSLStaplingFakeTryLater on), or no status at all (off).
    assert.match(sClient(b), /OCSP Response Status: trylater \(0x3\)/);
    assert.match(sClient(c), /OCSP response: no response sent/);
    await waitFor('AH01941 in the error log', () => fs.readFileSync(site.errorLog, 'utf8').includes('AH01941'));
    const log = fs.readFileSync(site.errorLog, 'utf8');
    assert.match(log, /AH01974: could not connect to OCSP responder/);
    assert.match(log, /AH01941: stapling_renew_response: responder error/);
  } finally {
    if (responder.exitCode === null && responder.signalCode === null) responder.kill('SIGTERM');
    await plume?.stop();
    site.remove();
  }
});

test('client-initiated renegotiation is refused (SSL_OP_NO_RENEGOTIATION, as httpd 2.4.71)', async () => {
  const port = await freePort();
  const site = await makeSite('tls-reneg');
  site.write([
    'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
    `Listen 127.0.0.1:${port}`,
    `<VirtualHost 127.0.0.1:${port}>`,
    '  ServerName localhost',
    '  SSLEngine on',
    `  SSLCertificateFile ${FIX}/server.crt`,
    `  SSLCertificateKeyFile ${FIX}/server.key`,
    '</VirtualHost>',
  ]);
  let plume: Awaited<ReturnType<typeof startPlume>> | null = null;
  try {
    plume = await startPlume(site);
    const { connect } = await import('node:tls');
    const outcome = await new Promise<string>((resolve) => {
      const s = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, maxVersion: 'TLSv1.2' }, () => {
        s.renegotiate({}, (err) => { resolve(err === null || err === undefined ? 'renegotiated' : `refused: ${err.message}`); s.destroy(); });
      });
      s.on('error', (e) => resolve(`refused: ${e.message}`));
    });
    assert.match(outcome, /^refused/);
  } finally {
    await plume?.stop();
    site.remove();
  }
});
