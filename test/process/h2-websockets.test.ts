// H2WebSockets (RFC 8441) under bin/plume: an HTTP/2 extended CONNECT for "websocket" is
// served as the HTTP/1.1 WebSocket handshake (a GET with Upgrade: websocket and a key of the
// server's), so mod_proxy_http carries it to a ws:// backend; the backend's 101 is answered
// 200 on the stream and the stream's DATA is the tunnel. A 101 with the wrong
// Sec-WebSocket-Accept and a resource that answers 200 without switching get 502, as
// mod_http2's H2_C2_WS_OUT filter answers; with H2WebSockets off the setting is not
// announced. The backend is a real node:http server speaking the handshake.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type * as net from 'node:net';
import { makeSite, startPlume, freePort, waitFor } from './process-lib.js';

const M = '/usr/lib/apache2/modules';

interface Seen { url: string; method: string; headers: http.IncomingHttpHeaders }

/** A WebSocket origin: /echo switches and echoes what it gets in upper case, /wrong switches
 *  with a wrong Sec-WebSocket-Accept. */
function backend(seen: Seen[]): http.Server {
  const srv = http.createServer((_req, res) => { res.end('not a websocket'); });
  srv.on('upgrade', (req: http.IncomingMessage, sock: net.Socket) => {
    seen.push({ url: req.url ?? '', method: req.method ?? '', headers: req.headers });
    const key = String(req.headers['sec-websocket-key'] ?? '');
    const accept = req.url === '/wrong' ? 'd3JvbmcK' : crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
    sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nX-Origin: ws\r\n\r\n`);
    sock.on('data', (d: Buffer) => { sock.write(d.toString('latin1').toUpperCase()); });
    sock.on('end', () => sock.end());
    sock.on('error', () => undefined);
  });
  return srv;
}

/** An HTTP/2 session once the server's SETTINGS arrived. */
function connect(port: number): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(`http://127.0.0.1:${port}`);
    s.once('remoteSettings', () => resolve(s));
    s.once('error', reject);
  });
}

interface Opened { status: number; headers: http2.IncomingHttpHeaders; stream: http2.ClientHttp2Stream }

function extendedConnect(s: http2.ClientHttp2Session, path: string, port: number): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const stream = s.request({
      ':method': 'CONNECT', ':protocol': 'websocket', ':scheme': 'http', ':path': path,
      ':authority': `127.0.0.1:${port}`, 'sec-websocket-version': '13', 'origin': 'http://example.org',
    }, { endStream: false });
    stream.once('response', (headers) => resolve({ status: Number(headers[':status']), headers, stream }));
    stream.once('error', reject);
  });
}

function readUntil(stream: http2.ClientHttp2Stream, want: string): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const on = (d: Buffer): void => {
      got += d.toString('latin1');
      if (got.length >= want.length) { stream.off('data', on); resolve(got); }
    };
    stream.on('data', on);
  });
}

test('H2WebSockets: extended CONNECT tunnelled through mod_proxy_http, 502 when the switch fails', async () => {
  const seen: Seen[] = [];
  const be = backend(seen);
  const bePort = await freePort();
  await new Promise<void>((res) => be.listen(bePort, '127.0.0.1', res));
  const offPort = await freePort();
  const site = await makeSite('h2ws');
  site.write([
    `LoadModule http2_module ${M}/mod_http2.so`,
    `LoadModule proxy_module ${M}/mod_proxy.so`,
    `LoadModule proxy_http_module ${M}/mod_proxy_http.so`,
    `LoadModule proxy_wstunnel_module ${M}/mod_proxy_wstunnel.so`,
    'Protocols h2c http/1.1',
    'H2WebSockets on',
    `ProxyPass /ws/ ws://127.0.0.1:${bePort}/`,
    `Listen 127.0.0.1:${offPort}`,
    `<VirtualHost 127.0.0.1:${offPort}>`,
    '  H2WebSockets off',
    '</VirtualHost>',
  ]);
  const run = await startPlume(site);
  try {
    const s = await connect(site.port);
    assert.equal(s.remoteSettings.enableConnectProtocol, true, 'SETTINGS_ENABLE_CONNECT_PROTOCOL announced');
    // The switch: 200 with the origin's fields but the handshake's own, then bytes both ways.
    const ok = await extendedConnect(s, '/ws/echo', site.port);
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['x-origin'], 'ws');
    assert.equal(ok.headers['sec-websocket-accept'], undefined);
    assert.equal(ok.headers['upgrade'], undefined);
    // Measured on Apache 2.4.71: the switch's 200 and the 502s carry no Date or Server.
    assert.equal(ok.headers['date'], undefined);
    ok.stream.write('hello over h2');
    assert.equal(await readUntil(ok.stream, 'HELLO OVER H2'), 'HELLO OVER H2');
    ok.stream.write(' again');
    assert.equal(await readUntil(ok.stream, ' AGAIN'), ' AGAIN');
    // What the origin saw: the HTTP/1.1 handshake mod_http2 makes of the CONNECT.
    const h = seen[0]!;
    assert.equal(h.method, 'GET');
    assert.equal(h.url, '/echo');
    assert.equal(h.headers['upgrade'], 'websocket');
    assert.match(String(h.headers['connection']), /upgrade/i);
    assert.equal(Buffer.from(String(h.headers['sec-websocket-key']), 'base64').length, 16);
    assert.equal(h.headers['sec-websocket-version'], '13');
    assert.equal(h.headers['origin'], 'http://example.org');
    // The request body of unknown length, ended at once: Content-Length: 0 (as from Apache).
    assert.equal(h.headers['content-length'], '0');
    const closed = new Promise<void>((res) => ok.stream.once('close', () => res()));
    ok.stream.end();
    await closed;
    // A 101 whose Sec-WebSocket-Accept does not answer the key: 502 and AH10463.
    const wrong = await extendedConnect(s, '/ws/wrong', site.port);
    assert.equal(wrong.status, 502);
    assert.equal(wrong.headers['content-length'], '0');
    assert.equal(wrong.headers['date'], undefined);
    await waitFor('AH10463 in the error log', () => /AH10463: h2_c2\(\d+-\d+-\d+\): websocket CONNECT, 101 response without 'Sec-WebSocket-Accept: d3JvbmcK' but expected /.test(fs.readFileSync(site.errorLog, 'utf8')));
    // A resource that answers 200 without switching (a static file): 502.
    const plain = await extendedConnect(s, '/index.html', site.port);
    assert.equal(plain.status, 502);
    plain.stream.resume();
    s.close();
    // H2WebSockets off: the setting is not announced (a client may not send :protocol).
    const off = await connect(offPort);
    assert.notEqual(off.remoteSettings.enableConnectProtocol, true);
    off.close();
  } finally {
    await run.stop();
    site.remove();
    be.closeAllConnections();
    await new Promise<void>((res) => be.close(() => res()));
  }
});
