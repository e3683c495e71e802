// mod_proxy_scgi's and mod_proxy_uwsgi's exchanges against scripted servers on loopback (real
// sockets): the request bytes as httpd writes them, the answer's header read from the socket,
// the body streamed until the backend closes, and the errors httpd gives (a bad header line,
// a chunked request body, an answer that is not HTTP).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import type { ServerRec } from '../../../src/server/server-rec.js';
import { core } from '../../../src/server/core/core-module.js';
import { createCoreDirConfig } from '../../../src/server/core/config.js';
import { errnoOf } from '../../../src/server/log/error-log.js';
import type { Brigade } from '../../../src/server/filters.js';
import { OK } from '../../../src/server/module.js';
import { ScgiHeaderReader } from '../../../src/proxy/protocols/scgi.js';
import { UwsgiPacketReader } from '../../../src/proxy/protocols/uwsgi.js';
import { createDirConfig, scgiExchange } from '../../../src/modules/proxy/scgi-exchange.js';
import { uwsgiExchange, uwsgiPathInfo, unescapeUrl } from '../../../src/modules/proxy/uwsgi-exchange.js';

if (core.index < 0) core.index = 0;

/** A few CGI variables in place of the server's whole set (which needs a configuration). */
async function someVars(r: Request): Promise<void> {
  r.headersIn.forEach((name, value) => { r.subprocessEnv.set('HTTP_' + name.toUpperCase().replace(/-/g, '_'), value); });
  r.subprocessEnv.set('GATEWAY_INTERFACE', 'CGI/1.1');
  r.subprocessEnv.set('REQUEST_METHOD', r.method);
  r.subprocessEnv.set('SCRIPT_NAME', r.uri);
}

interface Seen { out: Brigade[]; log: string[] }

function makeRequest(seen: Seen, body: Buffer[] = [], headers: [string, string][] = []): Request {
  const rt = {
    errno: (e: unknown) => errnoOf(e),
    logRequest: (_r: Request, module: string, _l: number, message: string) => { seen.log.push(`[${module}] ${message}`); },
    writeResponse: (r: Request, bb: Brigade) => { seen.out.push(bb); r.headersSent = true; if (bb.some((b) => b.kind === 'eos')) r.eosSent = true; },
    readBody: () => Promise.resolve(body.shift() ?? null),
    lookupUri: () => Promise.resolve({ filename: '', pathInfo: '' }),
  } as unknown as Runtime;
  const r = new Request(rt, { aborted: false, keepAlive: true, localIp: '127.0.0.1', remoteIp: '127.0.0.1', remotePort: 5555 } as unknown as ConnRec, { moduleConfig: [] } as unknown as ServerRec);
  r.uri = '/app/x';
  r.unparsedUri = '/app/x';
  r.filename = 'proxy:scgi://127.0.0.1:4000/x';
  for (const [k, v] of headers) r.headersIn.add(k, v);
  const vec: unknown[] = [];
  vec[core.index] = createCoreDirConfig(undefined);
  r.perDirConfig = vec;
  return r;
}

const text = (out: Brigade[]): string => out.flat().map((b) => (b.kind === 'data' ? b.data.toString('latin1') : b.kind === 'eos' ? '<EOS>' : '')).join('');

/** One connection: collects what the client sent until `complete` says it is all there,
 *  then writes `answer` in 3-byte pieces and closes. */
async function serve(complete: (got: Buffer) => boolean, answer: string, run: (sock: net.Socket) => Promise<void>): Promise<Buffer> {
  let got = Buffer.alloc(0);
  const srv = net.createServer((s) => {
    s.on('data', async (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (!complete(got)) return;
      const a = Buffer.from(answer, 'latin1');
      for (let i = 0; i < a.length; i += 3) { s.write(a.subarray(i, i + 3)); await new Promise((res) => setImmediate(res)); }
      s.end();
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res));
  const sock = net.connect((srv.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise((res) => sock.once('connect', res));
  try { await run(sock); } finally { sock.destroy(); srv.close(); }
  return got;
}

const scgiComplete = (got: Buffer): boolean => {
  try {
    const h = new ScgiHeaderReader().push(got);
    return h !== undefined && h.rest.length >= Number(h.env[0]![1]);
  } catch { return false; }
};

test('SCGI: netstring with CONTENT_LENGTH first, the body, then the answer streamed', async () => {
  const seen: Seen = { out: [], log: [] };
  const r = makeRequest(seen, [Buffer.from('abc')], [['Content-Length', '3'], ['X-Foo', 'bar']]);
  let res: Awaited<ReturnType<typeof scgiExchange>> | undefined;
  const got = await serve(scgiComplete, 'Status: 202 Fine\r\nContent-Type: text/plain\r\nContent-Length: 99\r\n\r\nbody text', async (socket) => {
    res = await scgiExchange(r, { socket, hostname: '127.0.0.1', port: 4000, timeoutMs: 5000 }, createDirConfig(), someVars);
  });
  const head = new ScgiHeaderReader().push(got)!;
  assert.deepEqual(head.env.slice(0, 2), [['CONTENT_LENGTH', '3'], ['SCGI', '1']]);
  assert.ok(head.env.some(([k, v]) => k === 'HTTP_X_FOO' && v === 'bar'));
  assert.ok(!head.env.some(([k]) => k === 'GATEWAY_INTERFACE'));
  assert.equal(head.rest.toString(), 'abc');
  assert.equal(res?.status, OK);
  assert.equal(r.status, 202);
  assert.equal(r.headersOut.get('Content-Length'), undefined);
  assert.equal(text(seen.out), 'body text<EOS>');
});

test('SCGI: a local Location becomes an internal redirect; ProxySCGISendfile names a file', async () => {
  const seen: Seen = { out: [], log: [] };
  const r = makeRequest(seen);
  let res: Awaited<ReturnType<typeof scgiExchange>> | undefined;
  await serve(scgiComplete, 'Location: /there\r\n\r\n', async (socket) => {
    res = await scgiExchange(r, { socket, hostname: '127.0.0.1', port: 4000, timeoutMs: 5000 }, createDirConfig(), someVars);
  });
  assert.deepEqual(res?.follow, { type: 'redirect', location: '/there' });
  const r2 = makeRequest(seen);
  const conf = { ...createDirConfig(), sendfile: 'X-Sendfile' };
  await serve(scgiComplete, 'X-Sendfile: /srv/f.txt\r\n\r\n', async (socket) => {
    res = await scgiExchange(r2, { socket, hostname: '127.0.0.1', port: 4000, timeoutMs: 5000 }, conf, someVars);
  });
  assert.deepEqual(res?.follow, { type: 'sendfile', location: '/srv/f.txt' });
  assert.equal(r2.headersOut.get('X-Sendfile'), undefined);
});

test('SCGI: a bad header line is a 500 with the line read last (AH00860); a chunked body is refused', async () => {
  const seen: Seen = { out: [], log: [] };
  const r = makeRequest(seen);
  let res: Awaited<ReturnType<typeof scgiExchange>> | undefined;
  await serve(scgiComplete, 'no colon\r\n\r\nrest', async (socket) => {
    res = await scgiExchange(r, { socket, hostname: '127.0.0.1', port: 4000, timeoutMs: 5000 }, createDirConfig(), someVars);
  });
  assert.equal(res?.status, 500);
  assert.deepEqual(seen.log, ["[proxy_scgi] malformed header from script 'x': Bad header: rest", '[proxy_scgi] AH00860: error reading response headers from 127.0.0.1:4000']);
  const r2 = makeRequest(seen, [], [['Transfer-Encoding', 'chunked']]);
  await serve(() => true, '', async (socket) => {
    res = await scgiExchange(r2, { socket, hostname: '127.0.0.1', port: 4000, timeoutMs: 5000 }, createDirConfig(), someVars);
  });
  assert.equal(res?.status, 411);
});

test('uwsgi: PATH_INFO from the URL path, decoded, leading slashes folded', () => {
  const seen: Seen = { out: [], log: [] };
  const r = makeRequest(seen);
  assert.deepEqual(uwsgiPathInfo(r, 'uwsgi://h:3031//app/a%20b'), { filename: 'proxy:uwsgi://h:3031//app/a b', pathInfo: '/app/a b' });
  assert.deepEqual(uwsgiPathInfo(r, 'uwsgi://h:3031'), { filename: 'proxy:uwsgi://h:3031', pathInfo: '/' });
  assert.equal(uwsgiPathInfo(r, 'uwsgi://h/a%2Fb'), undefined);
  assert.deepEqual(seen.log, ['[proxy_uwsgi] AH10100: unable to decode uwsgi uri: uwsgi://h/a%2Fb']);
  assert.equal(unescapeUrl('%zz'), undefined);
});

test('uwsgi: the packet, then an HTTP status line and header from the application', async () => {
  const seen: Seen = { out: [], log: [] };
  const r = makeRequest(seen, [], [['Authorization', 'Basic eDp5']]);
  r.subprocessEnv.set('PATH_INFO', '/x');
  let status = -1;
  const got = await serve((g) => g.length >= 4 && g.length >= 4 + g.readUInt16LE(1), 'HTTP/1.1 201 Made\r\nContent-Type: text/x\r\nX-Long: a\r\n  b\r\n\r\nhello', async (socket) => {
    status = await uwsgiExchange(r, { socket, hostname: 'h', port: 3031, timeoutMs: 5000, shouldOverride: () => false }, someVars);
  });
  const p = new UwsgiPacketReader().push(got)!;
  const env = new Map(p.env);
  assert.equal(env.get('HTTP_AUTHORIZATION'), 'Basic eDp5');
  // SCRIPT_NAME "/app/x" cut by PATH_INFO's length.
  assert.equal(env.get('SCRIPT_NAME'), '/app');
  assert.equal(status, OK);
  assert.equal(r.status, 201);
  assert.equal(r.statusLine, '201 Made');
  assert.equal(r.contentType, 'text/x');
  assert.equal(r.headersOut.get('X-Long'), 'a b');
  assert.equal(text(seen.out), 'hello<EOS>');
});

test('uwsgi: an answer that is not HTTP is a 502; a bad header line too', async () => {
  for (const answer of ['Status: 200\r\n\r\n', 'HTTP/1.1 200 OK\r\nbad line\r\n\r\n']) {
    const seen: Seen = { out: [], log: [] };
    const r = makeRequest(seen);
    let status = -1;
    await serve((g) => g.length >= 4 && g.length >= 4 + g.readUInt16LE(1), answer, async (socket) => {
      status = await uwsgiExchange(r, { socket, hostname: 'h', port: 3031, timeoutMs: 5000, shouldOverride: () => false }, someVars);
    });
    assert.equal(status, 502);
  }
});
