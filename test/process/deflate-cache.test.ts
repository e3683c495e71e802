// mod_deflate's kept compressed files (src/modules/filters/compressed-cache.ts) in a running
// server: repeated requests get the same bytes, a file changed on disk is compressed afresh
// at once, and PlumeCompressedCacheSize 0 serves the same answers without keeping anything.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as zlib from 'node:zlib';
import { makeSite, startPlume, type Running } from './process-lib.js';

function get(port: number, p: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, headers: { 'Accept-Encoding': 'gzip', Connection: 'close' }, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
    });
    req.on('error', reject);
  });
}

function page(word: string): string {
  let s = '<html><body>\n';
  for (let i = 0; i < 3000; i++) s += `<p>${word} ${(i * 7919) % 1000} ${i}</p>\n`;
  return s + '</body></html>\n';
}

for (const size of ['32M', '0']) {
  test(`compressed static files with PlumeCompressedCacheSize ${size}`, { timeout: 60000 }, async () => {
    const site = await makeSite('deflate', []);
    site.write([
      'StartServers 1',
      'LoadModule deflate_module /usr/lib/apache2/modules/mod_deflate.so',
      `PlumeCompressedCacheSize ${size}`,
      `<Directory "${site.dir}/htdocs">`, '  SetOutputFilter DEFLATE', '</Directory>',
    ]);
    const file = `${site.dir}/htdocs/page.html`;
    fs.writeFileSync(file, page('alpha'));
    let srv: Running | undefined;
    try {
      srv = await startPlume(site, { workers: 1 });
      const a = await get(site.port, '/page.html');
      const b = await get(site.port, '/page.html');
      assert.equal(a.status, 200);
      assert.equal(a.headers['content-encoding'], 'gzip');
      assert.equal(a.headers.vary, 'Accept-Encoding');
      assert.equal(zlib.gunzipSync(a.body).toString(), page('alpha'));
      assert.ok(a.body.equals(b.body), 'the same bytes the second time');
      assert.deepEqual([a.headers['content-length'], a.headers['transfer-encoding']], [b.headers['content-length'], b.headers['transfer-encoding']]);
      // Same size, new bytes: the next request sees them.
      fs.writeFileSync(file, page('gamma'));
      const c = await get(site.port, '/page.html');
      assert.equal(zlib.gunzipSync(c.body).toString(), page('gamma'));
    } finally {
      await srv?.stop();
      site.remove();
    }
  });
}
