// A connection remembers its last request head (src/server/http/connection.ts, lastHead): the
// same bytes again give the same parse. What the request's handling changes in its headers
// (RequestHeader here) must not leak into the next request, and a head that differs by one
// byte must be parsed afresh.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { makeSite, startPlume, accessLog, waitFor, type Running } from './process-lib.js';

function exchange(port: number, raw: string, answers: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(raw));
    let got = '';
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if ((got.match(/HTTP\/1\.1 \d{3} /g) ?? []).length >= answers && got.endsWith('\n')) s.end();
    });
    s.on('end', () => resolve(got));
    s.on('error', reject);
    setTimeout(() => { s.destroy(); reject(new Error(`timeout; got ${JSON.stringify(got)}`)); }, 10000);
  });
}

test('repeated request heads on one connection: same answers, no header carried over', { timeout: 60000 }, async () => {
  const site = await makeSite('headmemo', []);
  site.write([
    'StartServers 1',
    'LoadModule headers_module /usr/lib/apache2/modules/mod_headers.so',
    'RequestHeader append X-Seen "yes"',
    'LogFormat "%r %>s [%{X-Seen}i] [%{X-Client}i]" seen',
    `CustomLog ${site.dir}/logs/seen_log seen`,
  ]);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 1 });
    const a = 'GET /index.html HTTP/1.1\r\nHost: localhost\r\nX-Client: one\r\n\r\n';
    const b = 'GET /index.html HTTP/1.1\r\nHost: localhost\r\nX-Client: two\r\n\r\n';
    const missing = 'GET /missing.html HTTP/1.1\r\nHost: localhost\r\nX-Client: one\r\n\r\n';
    const raw = a + a + a + b + b + missing + a;
    const got = await exchange(site.port, raw, 7);
    assert.deepEqual([...got.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]), ['200', '200', '200', '200', '200', '404', '200']);
    const log = `${site.dir}/logs/seen_log`;
    // startPlume's own readiness request sends no X-Client: left out.
    const ours = (): string[] => accessLog(log).lines.filter((l) => !l.endsWith('[-]'));
    await waitFor('seven log lines', () => ours().length >= 7);
    assert.deepEqual(ours(), [
      'GET /index.html HTTP/1.1 200 [yes] [one]',
      'GET /index.html HTTP/1.1 200 [yes] [one]',
      'GET /index.html HTTP/1.1 200 [yes] [one]',
      'GET /index.html HTTP/1.1 200 [yes] [two]',
      'GET /index.html HTTP/1.1 200 [yes] [two]',
      'GET /missing.html HTTP/1.1 404 [yes] [one]',
      'GET /index.html HTTP/1.1 200 [yes] [one]',
    ]);
  } finally {
    await srv?.stop();
    site.remove();
  }
});

test('the generated 404 page is built once per process, but never with another vhost\'s signature', { timeout: 60000 }, async () => {
  const site = await makeSite('errpage', []);
  site.write([
    'StartServers 1',
    `<VirtualHost 127.0.0.1:${site.port}>`,
    '  ServerName localhost',
    '</VirtualHost>',
    `<VirtualHost 127.0.0.1:${site.port}>`,
    '  ServerName signed.example',
    '  ServerSignature On',
    '</VirtualHost>',
  ]);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 1 });
    const req = (host: string): string => `GET /missing.html HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    const got = await exchange(site.port, req('localhost') + req('signed.example') + req('localhost') + req('signed.example'), 4);
    const bodies = got.split(/HTTP\/1\.1 404 Not Found\r\n/).slice(1).map((a) => a.slice(a.indexOf('\r\n\r\n') + 4));
    assert.equal(bodies.length, 4);
    assert.doesNotMatch(bodies[0]!, /<address>/);
    assert.match(bodies[0]!, /<p>The requested URL was not found on this server.<\/p>\n<\/body><\/html>\n$/);
    assert.match(bodies[1]!, /<hr>\n<address>.* Server at signed\.example Port \d+<\/address>\n<\/body><\/html>\n$/);
    assert.equal(bodies[2], bodies[0], 'the unsigned page again, byte for byte');
    assert.equal(bodies[3], bodies[1]);
  } finally {
    await srv?.stop();
    site.remove();
  }
});
