// mod_dav with lock tokens a recorded case cannot carry: LOCK, then PUT with the token in an
// If: header, a refresh, UNLOCK; a lock-null resource made real by PUT; a shared lock beside
// another; what stays on disk (the .DAV property files, the lock file, no temporary files).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeSite, startPlume, ROOT, type Running } from './process-lib.js';

interface Res { status: number; headers: Headers; body: string }

async function dav(port: number, method: string, p: string, headers: Record<string, string> = {}, body?: string): Promise<Res> {
  const res = await fetch(`http://127.0.0.1:${port}${p}`, { method, headers, body });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

const LOCK = (scope: string): string => `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:${scope}/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>t</D:owner></D:lockinfo>`;

/** A site with a world-writable DAV directory and lock directory, served by `workers` workers. */
async function davSite(name: string, workers: number): Promise<{ site: Awaited<ReturnType<typeof makeSite>>; davDir: string }> {
  const site = await makeSite(name);
  const davDir = path.join(site.dir, 'htdocs/dav');
  for (const d of [davDir, path.join(site.dir, 'lock')]) {
    fs.mkdirSync(d, { mode: 0o777 });
    fs.chmodSync(d, 0o777);
  }
  site.write([
    `StartServers ${workers}`,
    'LoadModule dav_module /usr/lib/apache2/modules/mod_dav.so',
    'LoadModule dav_fs_module /usr/lib/apache2/modules/mod_dav_fs.so',
    `DavLockDB ${site.dir}/lock/lockdb`,
    `<Directory "${davDir}">`, '  Dav On', '</Directory>',
  ]);
  return { site, davDir };
}

test('mod_dav: lock tokens, refresh, unlock, lock-null, shared locks, files on disk', { timeout: 60000 }, async () => {
  const { site, davDir } = await davSite('dav', 1);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 1 });
    const port = site.port;
    // a lock-null resource, made real by a PUT that submits its token
    let r = await dav(port, 'LOCK', '/dav/f.txt', { Timeout: 'Second-100' }, LOCK('exclusive'));
    assert.equal(r.status, 200);
    const token = /^<(opaquelocktoken:[0-9a-f-]{36})>$/.exec(r.headers.get('lock-token') ?? '')?.[1];
    assert.ok(token, 'Lock-Token header');
    assert.equal((await dav(port, 'GET', '/dav/f.txt')).status, 404);
    assert.equal((await dav(port, 'PUT', '/dav/f.txt', {}, 'x')).status, 423);
    assert.equal((await dav(port, 'PUT', '/dav/f.txt', { If: '(<opaquelocktoken:00000000-0000-0000-0000-000000000000>)' }, 'x')).status, 412);
    assert.equal((await dav(port, 'PUT', '/dav/f.txt', { If: `(<${token}>)` }, 'first\n')).status, 201);
    assert.equal((await dav(port, 'PUT', '/dav/f.txt', { If: `<http://127.0.0.1:${port}/dav/f.txt> (<${token}>)` }, 'second\n')).status, 204);
    assert.equal((await dav(port, 'GET', '/dav/f.txt')).body, 'second\n');
    // a refresh names the lock in If: and gets a new timeout
    r = await dav(port, 'LOCK', '/dav/f.txt', { If: `(<${token}>)`, Timeout: 'Second-500' });
    assert.equal(r.status, 200);
    assert.match(r.body, /<D:timeout>Second-(499|500)<\/D:timeout>/);
    assert.equal(r.headers.get('lock-token'), null);
    // PROPFIND shows the lock; UNLOCK frees the resource
    r = await dav(port, 'PROPFIND', '/dav/f.txt', { Depth: '0' }, '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>');
    assert.ok(r.body.includes(`<D:href>${token}</D:href>`));
    assert.equal((await dav(port, 'UNLOCK', '/dav/f.txt', { 'Lock-Token': `<${token}>` })).status, 204);
    assert.equal((await dav(port, 'PUT', '/dav/f.txt', {}, 'third\n')).status, 204);
    // two shared locks coexist; an exclusive one is refused then
    const s1 = await dav(port, 'LOCK', '/dav/f.txt', {}, LOCK('shared'));
    const s2 = await dav(port, 'LOCK', '/dav/f.txt', {}, LOCK('shared'));
    assert.deepEqual([s1.status, s2.status], [200, 200]);
    assert.equal((await dav(port, 'LOCK', '/dav/f.txt', {}, LOCK('exclusive'))).status, 423);
    const t1 = s1.headers.get('lock-token')!;
    assert.equal((await dav(port, 'PUT', '/dav/f.txt', { If: `(${t1})` }, 'shared\n')).status, 204);
    // dead properties live in .DAV next to the file; no temporary file is left behind
    const pp = '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><x xmlns="urn:x">1</x></D:prop></D:set></D:propertyupdate>';
    assert.equal((await dav(port, 'PROPPATCH', '/dav/f.txt', { If: `(${t1})` }, pp)).status, 207);
    assert.ok(fs.existsSync(path.join(davDir, '.DAV/f.txt')));
    assert.deepEqual(fs.readdirSync(davDir).sort(), ['.DAV', 'f.txt']);
    assert.ok(fs.existsSync(path.join(site.dir, 'lock/lockdb')));
    if (ROOT) assert.equal(fs.statSync(path.join(davDir, 'f.txt')).uid, 65534, 'written as User nobody');
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('mod_dav: concurrent exclusive LOCKs on one resource through two workers: exactly one is granted', { timeout: 60000 }, async () => {
  const { site } = await davSite('davrace', 2);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 2 });
    const port = site.port;
    for (const name of ['a.txt', 'b.txt']) {
      const all = await Promise.all(Array.from({ length: 12 }, () => dav(port, 'LOCK', `/dav/${name}`, { Connection: 'close' }, LOCK('exclusive'))));
      assert.deepEqual(all.map((x) => x.status).sort(), [200, ...Array(11).fill(423)], name);
    }
    const db = JSON.parse(fs.readFileSync(path.join(site.dir, 'lock/lockdb'), 'utf8')) as { locks: { rootUri: string }[] };
    assert.deepEqual(db.locks.map((l) => l.rootUri).sort(), ['/dav/a.txt', '/dav/b.txt']);
    assert.deepEqual(fs.readdirSync(path.join(site.dir, 'lock')), ['lockdb'], 'no lock file or temporary file left');
  } finally {
    await srv?.stop();
    site.remove();
  }
});
