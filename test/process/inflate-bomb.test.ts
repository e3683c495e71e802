// A gzip bomb sent to the DEFLATE input filter (mod_deflate) is stopped by the inflate ratio
// limits within a few buffers of output: 400 with AH02649, the worker's memory untouched by
// the 256 MB the body would inflate to, and the server answers the next request.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as zlib from 'node:zlib';
import { makeSite, startPlume, getOnce, waitFor, type Running } from './process-lib.js';

function post(port: number, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`POST /in/index.html HTTP/1.1\r\nHost: localhost\r\nContent-Encoding: gzip\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
      s.write(body);
    });
    let got = '';
    s.on('data', (d: Buffer) => { got += d.toString('latin1'); });
    s.on('close', () => resolve(got));
    s.on('error', reject);
    setTimeout(() => { s.destroy(); reject(new Error(`timeout; got ${JSON.stringify(got)}`)); }, 20000);
  });
}

function rssKb(pid: number): number {
  const m = /^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

test('a gzip bomb to INFLATE: 400 by the ratio limit, memory bounded', { timeout: 60000 }, async () => {
  const site = await makeSite('bomb', []);
  fs.mkdirSync(`${site.dir}/htdocs/in`);
  fs.writeFileSync(`${site.dir}/htdocs/in/index.html`, 'static\n');
  site.write([
    'StartServers 1',
    'LoadModule deflate_module /usr/lib/apache2/modules/mod_deflate.so',
    'LimitRequestBody 0',
    '<Location /in>', '  SetInputFilter DEFLATE', '</Location>',
  ]);
  const bomb = zlib.gzipSync(Buffer.alloc(256 * 1024 * 1024), { level: 9 });
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 1 });
    const worker = srv.workers()[0]!;
    const before = rssKb(worker);
    const answer = await post(site.port, bomb);
    assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
    const after = rssKb(worker);
    // The inflated body never exists: the worker grows by far less than it would be.
    assert.ok(after - before < 64 * 1024, `RSS grew by ${after - before} kB`);
    await waitFor('AH02649 in the error log', () => fs.readFileSync(site.errorLog, 'utf8').includes('AH02649: Inflated content ratio is larger than the configured limit 200 by 3 time(s)'));
    assert.equal((await getOnce(site.port)).status, 200);
  } finally {
    await srv?.stop();
    site.remove();
  }
});
