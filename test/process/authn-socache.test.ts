// mod_authn_socache across worker processes, with bin/plume started for real (two workers,
// one shmcb cache file): a password hash cached by one worker answers in the other, without
// the password file being read again (the file is changed after the first request: the old
// password still works in both workers, the new one is refused), until AuthnCacheTimeout
// passes; then the file is read again.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { makeSite, startPlume, waitFor, accessLog, PLUME, type Site, type Running } from './process-lib.js';

const OLD = 'alice:$apr1$0ZtFdPzz$GYB0JInCn8wu9aVTCVqwE0\n'; // password "old"
const NEW = 'alice:$apr1$JXaulwYB$FIYMkANPZy.GG9/SXLSt10\n'; // password "new"

/** GET with Basic credentials on a new connection: the status. */
function get(port: number, urlPath: string, user: string, pass: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`no answer for ${urlPath}`)); }, 10000);
    s.on('connect', () => {
      const cred = Buffer.from(`${user}:${pass}`).toString('base64');
      s.write(`GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ${cred}\r\nConnection: close\r\n\r\n`);
    });
    s.on('data', (d: Buffer) => { data += d.toString('latin1'); });
    s.on('error', reject);
    s.on('close', () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.1 (\d+)/.exec(data);
      resolve(m ? Number(m[1]) : 0);
    });
  });
}

/** The worker pid that logged `urlPath` (the access log's last field). */
async function pidOf(site: Site, urlPath: string): Promise<number> {
  let line: string | undefined;
  await waitFor(`the log line of ${urlPath}`, () => (line = accessLog(site.accessLog).lines.find((l) => l.includes(` ${urlPath} `))) !== undefined);
  return Number(line!.slice(line!.lastIndexOf(' ') + 1));
}

function replace(file: string, text: string): void {
  fs.writeFileSync(file + '.new', text);
  fs.renameSync(file + '.new', file);
}

test('authn_socache over shmcb: a hash cached by one worker answers in the other; the file is read again after AuthnCacheTimeout', { timeout: 90000 }, async () => {
  const site = await makeSite('authn-socache');
  const users = path.join(site.dir, 'users');
  fs.writeFileSync(users, OLD);
  for (const d of ['priv', 'short']) {
    fs.mkdirSync(path.join(site.dir, 'htdocs', d));
    fs.writeFileSync(path.join(site.dir, 'htdocs', d, 'a.txt'), `${d}\n`);
  }
  const section = (d: string, extra: string[]): string[] => [
    `<Directory ${site.dir}/htdocs/${d}>`, '  AuthType Basic', '  AuthName cached', '  AuthBasicProvider socache file',
    `  AuthUserFile ${users}`, '  AuthnCacheProvideFor file', ...extra, '  Require valid-user', '</Directory>',
  ];
  site.write([
    'LoadModule authn_core_module /usr/lib/apache2/modules/mod_authn_core.so',
    'LoadModule authn_file_module /usr/lib/apache2/modules/mod_authn_file.so',
    'LoadModule authn_socache_module /usr/lib/apache2/modules/mod_authn_socache.so',
    'LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so',
    'LoadModule authz_user_module /usr/lib/apache2/modules/mod_authz_user.so',
    'LoadModule auth_basic_module /usr/lib/apache2/modules/mod_auth_basic.so',
    'StartServers 2',
    'AuthnCacheSOCache shmcb:logs/authn_cache(65536)',
    'LogLevel warn authn_socache:debug',
    ...section('priv', []),
    ...section('short', ['AuthnCacheTimeout 1']),
  ]);
  let plume: Running | undefined;
  try {
    plume = await startPlume(site, { workers: 2 });
    assert.equal(await get(site.port, '/priv/a.txt?first', 'alice', 'old'), 200);
    const first = await pidOf(site, '/priv/a.txt?first');
    assert.equal(await get(site.port, '/short/a.txt?first', 'alice', 'old'), 200);
    replace(users, NEW);
    // The old password, until a request lands on the other worker: every one a cache hit.
    let other: number | undefined;
    for (let i = 0; i < 40 && other === undefined; i++) {
      const p = `/priv/a.txt?again${i}`;
      assert.equal(await get(site.port, p, 'alice', 'old'), 200, `attempt ${i}: the cached hash answers`);
      const pid = await pidOf(site, p);
      if (pid !== first) other = pid;
    }
    assert.ok(other !== undefined, 'a request was served by the other worker');
    // The file says "new", the cache still "old": refused, in whichever worker.
    assert.equal(await get(site.port, '/priv/a.txt?new', 'alice', 'new'), 401);
    const log = fs.readFileSync(site.errorLog, 'utf8');
    assert.match(log, new RegExp(`\\[pid ${first}[^\\]]*\\].*AH01681: Cached authn credentials for alice in directory`));
    assert.match(log, new RegExp(`\\[pid ${other}[^\\]]*\\].*AH01685: Authn cache: found credentials for alice`));
    // AuthnCacheTimeout 1: the entry expires, the file is read again and its hash cached.
    await waitFor('the short entry to expire', async () => (await get(site.port, '/short/a.txt?poll', 'alice', 'new')) === 200, 10000);
    assert.equal(await get(site.port, '/short/a.txt?old', 'alice', 'old'), 401);
  } finally {
    await plume?.stop();
    site.remove();
  }
});

test('AuthnCacheEnable with no socache module loaded: AH01674 and Configuration Failed, exit 1 (as httpd)', { timeout: 30000 }, async () => {
  const site = await makeSite('authn-socache-none', [
    'LoadModule authn_core_module /usr/lib/apache2/modules/mod_authn_core.so',
    'LoadModule authn_socache_module /usr/lib/apache2/modules/mod_authn_socache.so',
    'AuthnCacheEnable',
  ]);
  try {
    const proc = spawn(process.execPath, [PLUME, '-X', '-d', site.dir, '-f', site.conf], { stdio: 'ignore' });
    const code = await new Promise<number | null>((res) => proc.once('exit', (c) => res(c)));
    assert.equal(code, 1);
    const lines = fs.readFileSync(site.errorLog, 'utf8').trimEnd().split('\n').map((l) => l.replace(/^\[[^\]]+\] /, '').replace(/\[pid [^\]]+\] /, ''));
    assert.deepEqual(lines, [
      '[authn_socache:crit] AH01674: Please select a socache provider with AuthnCacheSOCache (no default found on this platform). Maybe you need to load mod_socache_shmcb or another socache module first',
      'AH00016: Configuration Failed',
    ]);
  } finally {
    site.remove();
  }
});
