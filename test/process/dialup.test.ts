// mod_dialup with bin/plume started for real: a static file under ModemStandard V.92 (7000 bytes
// a second) comes whole, the first second's worth at once and the rest a second at a time, so
// a file of 2 * 7000 + 500 bytes takes two seconds (bounds with a generous upper tolerance: the
// lower one is the pacing, the upper only catches a stall). A directory without a standard is
// served at once.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { makeSite, startPlume, type Running } from './process-lib.js';

/** GET `urlPath`; the bytes of the whole answer, when the first body bytes came and when it ended. */
function timedGet(port: number, urlPath: string): Promise<{ head: string; body: Buffer; firstMs: number; firstBody: number; totalMs: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    let firstMs = -1;
    let firstBody = 0;
    const chunks: Buffer[] = [];
    const s = net.connect(port, '127.0.0.1', () => s.write(`GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`));
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      if (firstMs < 0) firstMs = Date.now() - t0;
      // What had come within 500 ms of the first bytes: the first second's worth at most.
      if (Date.now() - t0 - firstMs < 500) firstBody = Buffer.concat(chunks).length;
    });
    s.on('error', reject);
    s.on('close', () => {
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      const headLen = end + 4;
      resolve({ head: all.subarray(0, end).toString('latin1'), body: all.subarray(headLen), firstMs, firstBody: firstBody - headLen, totalMs: Date.now() - t0 });
    });
  });
}

test('ModemStandard V.92: 14500 bytes in about two seconds, whole', { timeout: 60000 }, async () => {
  const site = await makeSite('dialup');
  let plume: Running | undefined;
  try {
    const content = Buffer.from(Array.from({ length: 14500 }, (_, i) => 0x41 + (i % 26)));
    fs.mkdirSync(path.join(site.dir, 'htdocs/modem'));
    fs.writeFileSync(path.join(site.dir, 'htdocs/modem/f.txt'), content);
    fs.writeFileSync(path.join(site.dir, 'htdocs/f.txt'), content);
    site.write([
      'LoadModule dialup_module /usr/lib/apache2/modules/mod_dialup.so',
      `<Directory "${site.dir}/htdocs/modem">`,
      '  ModemStandard V.92',
      '</Directory>',
    ]);
    plume = await startPlume(site, { workers: 1 });

    const paced = await timedGet(site.port, '/modem/f.txt');
    assert.match(paced.head, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(paced.head, /\r\nContent-Length: 14500\r\n/i);
    assert.ok(paced.body.equals(content), `body of ${paced.body.length} bytes`);
    // Pieces at 0, 1 and 2 seconds: at least two seconds, minus timer slack.
    assert.ok(paced.totalMs >= 1900, `took ${paced.totalMs} ms`);
    assert.ok(paced.totalMs < 10000, `took ${paced.totalMs} ms`);
    assert.ok(paced.firstBody <= 7000, `${paced.firstBody} bytes in the first half second`);

    const plain = await timedGet(site.port, '/f.txt');
    assert.ok(plain.body.equals(content));
    assert.ok(plain.totalMs < paced.totalMs, `unpaced ${plain.totalMs} ms, paced ${paced.totalMs} ms`);
  } finally {
    await plume?.stop();
    site.remove();
  }
});
