// mod_proxy_connect with bin/plume started for real: an HTTP request and a TLS session (node's
// tls client, through the tunnel, to a local TLS server with the test certificate) go through
// "CONNECT host:port"; the 200 is httpd's "HTTP/1.0 200 Connection Established" with its
// Proxy-agent field, the access log has the CONNECT line with 200 and no body size, a port
// outside AllowCONNECT gets the 403 (each behaviour measured on Apache 2.4.71:
// test/conformance/cases/proxy-connect/).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { makeSite, startPlume, freePort, waitFor, REPO, type Running } from './process-lib.js';
import { startHttpScript, type Backend } from './app-backends.js';
import { randomString, seededRandom } from '../fuzz.js';

/** Sends CONNECT to the proxy and resolves with the socket once the answer's head (until the
 *  empty line) is read; anything after it is pushed back onto the socket. */
function connectThrough(proxyPort: number, target: string): Promise<{ sock: net.Socket; head: string }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(proxyPort, '127.0.0.1', () => sock.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`));
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      sock.off('data', onData);
      sock.off('error', reject);
      sock.pause();
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) sock.unshift(rest);
      resolve({ sock, head: buf.subarray(0, end + 4).toString('latin1') });
    };
    sock.on('data', onData);
    sock.on('error', reject);
  });
}

/** Everything the socket gives until it closes. */
function readAll(s: net.Socket | tls.TLSSocket): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    s.on('data', (d: Buffer) => { data += d.toString('latin1'); });
    s.on('error', reject);
    s.on('close', () => resolve(data));
    s.resume();
  });
}

test('CONNECT: an HTTP request and a TLS session tunnelled through bin/plume', { timeout: 60000 }, async () => {
  const site = await makeSite('proxy-connect');
  const backendPort = await freePort();
  const tlsPort = await freePort();
  let backend: Backend | undefined;
  let plume: Running | undefined;
  const fixtures = path.join(REPO, 'test/fixtures/tls');
  const tlsServer = tls.createServer({ cert: fs.readFileSync(path.join(fixtures, 'server.crt')), key: fs.readFileSync(path.join(fixtures, 'server.key')) }, (s) => {
    s.once('data', (d: Buffer) => s.end(`pong:${d.toString('latin1')}:${s.getProtocol() ?? ''}`));
    s.on('error', () => { /* the client may reset */ });
  });
  try {
    backend = await startHttpScript(site.dir, backendPort);
    await new Promise<void>((res) => tlsServer.listen(tlsPort, '127.0.0.1', res));
    site.write([
      'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
      'LoadModule proxy_connect_module /usr/lib/apache2/modules/mod_proxy_connect.so',
      'ProxyRequests On',
      `AllowCONNECT ${backendPort} ${tlsPort}`,
    ]);
    plume = await startPlume(site, { workers: 1 });

    // Plain HTTP through the tunnel: the backend's answer comes back byte for byte.
    const h = await connectThrough(site.port, `127.0.0.1:${backendPort}`);
    assert.match(h.head, /^HTTP\/1\.0 200 Connection Established\r\nProxy-agent: [^\r]+\r\n\r\n$/);
    h.sock.write('GET /echo/through HTTP/1.1\r\nHost: backend\r\nConnection: close\r\n\r\n');
    const httpAnswer = await readAll(h.sock);
    assert.match(httpAnswer, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(httpAnswer, /\r\n\r\nGET \/echo\/through HTTP\/1\.1\r\nHost: backend\r\nConnection: close\r\n\r\n--body--\n$/);

    // TLS end to end: the proxy relays the handshake and the records without looking at them.
    const t = await connectThrough(site.port, `127.0.0.1:${tlsPort}`);
    assert.match(t.head, /^HTTP\/1\.0 200 Connection Established\r\n/);
    const secure = tls.connect({ socket: t.sock, ca: fs.readFileSync(path.join(fixtures, 'ca.crt')), servername: 'localhost' });
    await new Promise<void>((res, rej) => { secure.once('secureConnect', res); secure.once('error', rej); });
    assert.equal(secure.authorized, true, String(secure.authorizationError));
    secure.write('ping');
    const tlsAnswer = await readAll(secure);
    assert.match(tlsAnswer, /^pong:ping:TLSv1\.[23]$/);
    // The tunnel lasts until both sides have closed (httpd's too).
    t.sock.destroy();

    // A port not in AllowCONNECT.
    const denied = await connectThrough(site.port, '127.0.0.1:9');
    assert.match(denied.head, /^HTTP\/1\.1 403 Proxy Error\r\n/);
    denied.sock.destroy();

    await waitFor('the access log lines', () => fs.readFileSync(site.accessLog, 'latin1').split('\n').filter((l) => l.includes('CONNECT')).length >= 3);
    // A tunnel's line is written when the tunnel has closed on both sides, which may come after
    // the 403's line: the lines are looked up by target, not by position.
    const lines = fs.readFileSync(site.accessLog, 'latin1').split('\n').filter((l) => l.includes('CONNECT'));
    const lineFor = (target: string): string => lines.find((l) => l.includes(`"CONNECT ${target} `)) ?? `no line for ${target}`;
    assert.equal(lines.length, 3, lines.join('\n'));
    assert.match(lineFor(`127.0.0.1:${backendPort}`), new RegExp(`"CONNECT 127\\.0\\.0\\.1:${backendPort} HTTP/1\\.1" 200 - \\d+$`));
    assert.match(lineFor(`127.0.0.1:${tlsPort}`), new RegExp(`"CONNECT 127\\.0\\.0\\.1:${tlsPort} HTTP/1\\.1" 200 - \\d+$`));
    assert.match(lineFor('127.0.0.1:9'), /"CONNECT 127\.0\.0\.1:9 HTTP\/1\.1" 403 \d+ \d+$/);
    await waitFor('the AH00898 line', () => fs.readFileSync(site.errorLog, 'latin1').includes('AH00898'));
    assert.match(fs.readFileSync(site.errorLog, 'latin1'), /AH00898: Connect to remote machine blocked returned by 127\.0\.0\.1:9/);
  } finally {
    await plume?.stop();
    await backend?.stop();
    await new Promise<void>((res) => tlsServer.close(() => res()));
    site.remove();
  }
});

/** Sends `raw` then ends the writing side after `endAfterMs`; resolves with what came back. */
function exchange(port: number, raw: Buffer, endAfterMs: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => { s.write(raw); setTimeout(() => s.end(), endAfterMs); });
    let data = '';
    const t = setTimeout(() => s.destroy(), 5000);
    s.on('data', (d: Buffer) => { data += d.toString('latin1'); });
    s.on('error', () => { /* a reset is an answer too */ });
    s.on('close', () => { clearTimeout(t); resolve(data); });
  });
}

test('fuzz: random CONNECT targets and random bytes after the head never break the server', { timeout: 120000 }, async () => {
  const site = await makeSite('proxy-connect-fuzz');
  const backendPort = await freePort();
  let backend: Backend | undefined;
  let plume: Running | undefined;
  try {
    backend = await startHttpScript(site.dir, backendPort);
    site.write([
      'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
      'LoadModule proxy_connect_module /usr/lib/apache2/modules/mod_proxy_connect.so',
      'ProxyRequests On',
      `AllowCONNECT 1-1023 ${backendPort}`,
      'Timeout 2',
    ]);
    plume = await startPlume(site, { workers: 1 });
    const worker = plume.workers()[0];
    const rnd = seededRandom(0xc0ec7);
    const targets = [`127.0.0.1:${backendPort}`, '127.0.0.1:9', '[::1]:9', 'localhost:1', `127.0.0.1:${backendPort}x`, '127.0.0.1:', ':443', '[::1', `127.0.0.1:${backendPort + 65536}`];
    for (let i = 0; i < 40; i++) {
      const target = rnd(3) === 0 ? randomString(rnd, 'abc.1:[]9-+%/', 16) : targets[rnd(targets.length)]!;
      const tail = Buffer.from(Array.from({ length: rnd(64) }, () => rnd(256)));
      const extra = rnd(2) === 0 ? '' : `X-${randomString(rnd, 'abc', 4)}: ${randomString(rnd, 'xyz \t', 8)}\r\n`;
      const raw = Buffer.concat([Buffer.from(`CONNECT ${target} HTTP/1.${rnd(2)}\r\nHost: ${target}\r\n${extra}\r\n`, 'latin1'), tail]);
      const got = await exchange(site.port, raw, 50);
      // An answer, if any, starts with a status line (the tunnel's 200 or an error page);
      // what follows a 200 is the backend's reply to the random bytes, or nothing.
      if (got !== '') assert.match(got, /^HTTP\/1\.[01] \d{3} /, `${JSON.stringify(target)} -> ${JSON.stringify(got.slice(0, 80))}`);
    }
    // No worker died on the way (the MPM may have started more of them under load).
    assert.equal(plume.proc.exitCode, null);
    assert.doesNotMatch(fs.readFileSync(site.errorLog, 'latin1'), /exit signal|AH00052|TypeError|RangeError|ReferenceError/);
    assert.ok(plume.workers().includes(worker!));
    const h = await connectThrough(site.port, `127.0.0.1:${backendPort}`);
    assert.match(h.head, /^HTTP\/1\.0 200 Connection Established\r\n/);
    h.sock.write('GET /echo/after HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n');
    assert.match(await readAll(h.sock), /GET \/echo\/after HTTP\/1\.1/);
  } finally {
    await plume?.stop();
    await backend?.stop();
    site.remove();
  }
});
