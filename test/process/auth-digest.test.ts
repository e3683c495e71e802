// mod_auth_digest end to end on real processes: a client answering the challenge is let in
// and gets a correct rspauth; with AuthDigestNcCheck a replayed nonce-count is refused even
// when the replay reaches another worker process (the client table is shared); one-time
// nonces (AuthDigestNonceLifetime 0) are spent once and replaced through nextnonce. The table
// file goes when the server stops.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { makeSite, startPlume, waitFor } from './process-lib.js';

const md5 = (s: string): string => createHash('md5').update(s, 'latin1').digest('hex');

function get(port: number, uri: string, auth?: string): Promise<{ status: number; head: string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    s.on('data', (d: Buffer) => { data += d.toString('latin1'); });
    s.on('error', reject);
    s.on('end', () => resolve({ status: Number(data.slice(9, 12)), head: data.split('\r\n\r\n')[0]! }));
    s.end(`GET ${uri} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${auth ? `Authorization: ${auth}\r\n` : ''}\r\n`);
  });
}

function param(head: string, header: string, name: string): string | undefined {
  const line = head.split('\r\n').find((l) => l.toLowerCase().startsWith(header.toLowerCase() + ':'));
  return line === undefined ? undefined : new RegExp(`${name}="?([^",]*)"?`).exec(line)?.[1];
}

function answer(o: { nonce: string; uri: string; nc: string; opaque?: string | undefined; pass?: string }): { auth: string; ha1: string; cnonce: string } {
  const ha1 = md5(`alice:Members:${o.pass ?? 'secret'}`);
  const cnonce = 'f00d';
  const resp = md5(`${ha1}:${o.nonce}:${o.nc}:${cnonce}:auth:${md5(`GET:${o.uri}`)}`);
  let auth = `Digest username="alice", realm="Members", nonce="${o.nonce}", uri="${o.uri}", response="${resp}", qop=auth, nc=${o.nc}, cnonce="${cnonce}"`;
  if (o.opaque !== undefined) auth += `, opaque="${o.opaque}"`;
  return { auth, ha1, cnonce };
}

test('digest authentication across two worker processes', { timeout: 60000 }, async () => {
  const site = await makeSite('digest', ['StartServers 2']);
  try {
    fs.mkdirSync(path.join(site.dir, 'htdocs/p'));
    fs.mkdirSync(path.join(site.dir, 'htdocs/o'));
    fs.writeFileSync(path.join(site.dir, 'htdocs/p/index.html'), 'private\n');
    fs.writeFileSync(path.join(site.dir, 'htdocs/o/index.html'), 'once\n');
    fs.writeFileSync(path.join(site.dir, 'digest'), `alice:Members:${md5('alice:Members:secret')}\n`);
    const auth = (p: string, extra: string[]): string[] => [
      `<Location ${p}>`, 'AuthType Digest', 'AuthName Members', `AuthUserFile ${site.dir}/digest`, ...extra, 'Require valid-user', '</Location>'];
    site.write([
      'LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so',
      'LoadModule authn_core_module /usr/lib/apache2/modules/mod_authn_core.so',
      'LoadModule authn_file_module /usr/lib/apache2/modules/mod_authn_file.so',
      'LoadModule authz_user_module /usr/lib/apache2/modules/mod_authz_user.so',
      'LoadModule auth_digest_module /usr/lib/apache2/modules/mod_auth_digest.so',
      'StartServers 2',
      ...auth('/p', ['AuthDigestNcCheck On']),
      ...auth('/o', ['AuthDigestNonceLifetime 0']),
    ]);
    const srv = await startPlume(site, { workers: 2 });
    try {
      const shm = path.join(site.dir, 'logs', `authdigest_shm.${srv.pid}`);
      assert.ok(fs.existsSync(shm), 'the parent made the client table');

      const ch = await get(site.port, '/p/');
      assert.equal(ch.status, 401);
      const nonce = param(ch.head, 'WWW-Authenticate', 'nonce')!;
      const opaque = param(ch.head, 'WWW-Authenticate', 'opaque');
      assert.match(opaque ?? '', /^[0-9a-f]+$/, 'a client number (AuthDigestNcCheck)');
      assert.equal(param(ch.head, 'WWW-Authenticate', 'qop'), 'auth');

      const a1 = answer({ nonce, uri: '/p/', nc: '00000001', opaque });
      const ok = await get(site.port, '/p/', a1.auth);
      assert.equal(ok.status, 200);
      const rspauth = md5(`${a1.ha1}:${nonce}:00000001:${a1.cnonce}:auth:${md5(':/p/')}`);
      assert.equal(param(ok.head, 'Authentication-Info', 'rspauth'), rspauth);

      // The same nonce-count again, on new connections (either worker may take them): refused.
      for (let i = 0; i < 4; i++) assert.equal((await get(site.port, '/p/', a1.auth)).status, 401);
      // A higher count passes, once.
      const a2 = answer({ nonce, uri: '/p/', nc: '00000002', opaque });
      assert.equal((await get(site.port, '/p/', a2.auth)).status, 200);
      assert.equal((await get(site.port, '/p/', a2.auth)).status, 401);
      assert.equal((await get(site.port, '/p/', answer({ nonce, uri: '/p/', nc: '00000003', opaque, pass: 'wrong' }).auth)).status, 401);

      // One-time nonces: the first use passes and brings the next nonce; a second use is stale.
      const oc = await get(site.port, '/o/');
      const on = param(oc.head, 'WWW-Authenticate', 'nonce')!;
      const oo = param(oc.head, 'WWW-Authenticate', 'opaque');
      const first = await get(site.port, '/o/', answer({ nonce: on, uri: '/o/', nc: '00000001', opaque: oo }).auth);
      assert.equal(first.status, 200);
      const next = param(first.head, 'Authentication-Info', 'nextnonce')!;
      assert.ok(next !== undefined && next !== on);
      const again = await get(site.port, '/o/', answer({ nonce: on, uri: '/o/', nc: '00000002', opaque: oo }).auth);
      assert.equal(again.status, 401);
      assert.equal(param(again.head, 'WWW-Authenticate', 'stale'), 'true');
      // The stale challenge's nonce is now the one to use (it replaced the nextnonce).
      const fresh = param(again.head, 'WWW-Authenticate', 'nonce')!;
      assert.equal((await get(site.port, '/o/', answer({ nonce: fresh, uri: '/o/', nc: '00000001', opaque: oo }).auth)).status, 200);

      // The error log is flushed after the response goes out.
      await waitFor('AH01794 in the error log', () => fs.readFileSync(site.errorLog, 'utf8').includes('AH01794'));
      const log = fs.readFileSync(site.errorLog, 'utf8');
      assert.match(log, /AH01774: Warning, possible replay attack: nonce-count check failed: 1 is not above 1 for nonce /);
      assert.match(log, /AH01794: user alice: password mismatch: \/p\//);
      await srv.stop();
      assert.ok(!fs.existsSync(shm), 'the client table is removed at shutdown');
    } finally {
      await srv.stop();
    }
  } finally {
    site.remove();
  }
});
