// The stat() answers shared by the requests of one event-loop turn
// (src/server/request/stat-cache.ts) must never hide an edit from a request begun after it:
// under a steady load on the same path, every .htaccess or file change is seen by the very
// next request, as httpd's per-request stat() and .htaccess read see it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeSite, startPlume, load, getOnce, type Running } from './process-lib.js';

test('an edit under load is seen by the next request (.htaccess Require, the file itself)', { timeout: 60000 }, async () => {
  const site = await makeSite('statcache', []);
  const d = path.join(site.dir, 'htdocs/d');
  fs.mkdirSync(d, { mode: 0o755 });
  fs.writeFileSync(path.join(d, 'index.html'), 'one\n');
  const htaccess = path.join(d, '.htaccess');
  fs.writeFileSync(htaccess, 'Require all granted\n');
  site.write(['StartServers 1', `<Directory "${d}">`, '  AllowOverride All', '</Directory>']);
  let srv: Running | undefined;
  let stopping = false;
  let running: Promise<unknown> | undefined;
  try {
    srv = await startPlume(site, { workers: 1 });
    // Twenty keep-alive clients on the same path keep every turn busy with its stat() calls.
    running = load(site.port, 'one\n', { clients: 20, keepAlive: 20, perClient: 1e9, until: () => stopping, path: '/d/index.html' });
    const seen: string[] = [];
    for (let i = 0; i < 40; i++) {
      const deny = i % 2 === 0;
      fs.writeFileSync(htaccess, deny ? 'Require all denied\n' : 'Require all granted\n');
      const r = await getOnce(site.port, '/d/index.html');
      if (r.status !== (deny ? 403 : 200)) seen.push(`edit ${i} (${deny ? 'denied' : 'granted'}): ${r.status}`);
    }
    fs.writeFileSync(htaccess, 'Require all granted\n');
    for (let i = 0; i < 20; i++) {
      const body = `version ${i}${'.'.repeat(i)}\n`;
      fs.writeFileSync(path.join(d, 'index.html'), body);
      const r = await getOnce(site.port, '/d/index.html');
      if (r.status !== 200 || r.body.toString() !== body) seen.push(`file ${i}: ${r.status} ${JSON.stringify(r.body.toString())}`);
      fs.rmSync(path.join(d, 'index.html'));
      const gone = await getOnce(site.port, '/d/index.html');
      if (gone.status !== 404) seen.push(`removed ${i}: ${gone.status}`);
    }
    assert.deepEqual(seen, []);
  } finally {
    stopping = true;
    await running?.catch(() => undefined);
    await srv?.stop();
    site.remove();
  }
});
