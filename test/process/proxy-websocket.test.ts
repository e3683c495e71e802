// WebSocket end to end through plume: a real WebSocket echo server on loopback (node's HTTP
// upgrade and a minimal RFC 6455 frame reader/writer, below) behind
// `ProxyPass /ws/ ws://...` (mod_proxy_wstunnel's URLs, tunnelled by mod_proxy_http as in
// httpd 2.4.47+) and behind `ProxyPass /up/ http://... upgrade=websocket` (mod_proxy_http).
// Checked for each: the 101 with the backend's Sec-WebSocket-Accept, a frame the server sends
// first, text and binary frames (one over 64 KB, the 64-bit length form) echoed, a ping
// answered, and the close handshake (the close frame echoed, then both ends closed). Then a
// virtual host with ProxyWebsocketFallbackToProxyHttp Off, where mod_proxy_wstunnel tunnels by
// itself (sending "Upgrade: WebSocket") and its ProxyPass lets requests without Upgrade through
// to the next ProxyPass. The same test passes against Apache 2.4.71 with the same
// configuration (PLUME_WS_SERVER=/usr/sbin/apache2).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { tempDir, removeTempDir } from '../temp.js';
import { freePort } from './process-lib.js';
import { startServerCommand } from './proxy-fcgi-server.js';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const acceptOf = (key: string): string => crypto.createHash('sha1').update(key + GUID).digest('base64');

interface Frame { readonly fin: boolean; readonly opcode: number; readonly payload: Buffer }

/** Frames off the front of `buf` (masked or not); the bytes of an incomplete frame are left. */
function readFrames(buf: Buffer): { frames: Frame[]; rest: Buffer } {
  const frames: Frame[] = [];
  let pos = 0;
  for (;;) {
    if (buf.length - pos < 2) break;
    const b0 = buf[pos]!; const b1 = buf[pos + 1]!;
    let len = b1 & 0x7f;
    let off = pos + 2;
    if (len === 126) { if (buf.length < off + 2) break; len = buf.readUInt16BE(off); off += 2; }
    else if (len === 127) { if (buf.length < off + 8) break; len = Number(buf.readBigUInt64BE(off)); off += 8; }
    const masked = (b1 & 0x80) !== 0;
    const mask = masked ? buf.subarray(off, off + 4) : null;
    if (masked) off += 4;
    if (buf.length < off + len) break;
    const payload = Buffer.from(buf.subarray(off, off + len));
    if (mask !== null) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i & 3]!;
    frames.push({ fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload });
    pos = off + len;
  }
  return { frames, rest: buf.subarray(pos) };
}

/** One frame; a client's is masked (RFC 6455 5.3). */
function frame(opcode: number, payload: Buffer, masked: boolean): Buffer {
  const len = payload.length;
  const ext = len < 126 ? Buffer.alloc(0) : len < 65536 ? Buffer.alloc(2) : Buffer.alloc(8);
  if (len >= 126 && len < 65536) ext.writeUInt16BE(len);
  else if (len >= 65536) ext.writeBigUInt64BE(BigInt(len));
  const head = Buffer.from([0x80 | opcode, (masked ? 0x80 : 0) | (len < 126 ? len : len < 65536 ? 126 : 127)]);
  if (!masked) return Buffer.concat([head, ext, payload]);
  const mask = crypto.randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i]! ^= mask[i & 3]!;
  return Buffer.concat([head, ext, mask, body]);
}

/** The echo server: greets, echoes text and binary, answers ping, echoes close and ends. */
function startEchoServer(): Promise<{ port: number; upgrades: string[]; plain: string[]; close(): Promise<void> }> {
  const upgrades: string[] = [];
  const plain: string[] = [];
  const sockets = new Set<net.Socket>();
  const srv = http.createServer((req, res) => {
    plain.push(`${req.method} ${req.url} upgrade=${req.headers.upgrade ?? '-'}`);
    res.end('no upgrade\n');
  });
  srv.on('upgrade', (req: http.IncomingMessage, sock: net.Socket, head: Buffer) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    upgrades.push(`${req.url} ${req.headers.upgrade}`);
    const key = String(req.headers['sec-websocket-key']);
    sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptOf(key)}\r\n\r\n`);
    sock.write(frame(1, Buffer.from('welcome'), false));
    let buf: Buffer = Buffer.from(head);
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      const { frames, rest } = readFrames(buf);
      buf = rest;
      for (const f of frames) {
        if (f.opcode === 8) { sock.end(frame(8, f.payload, false)); return; }
        if (f.opcode === 9) { sock.write(frame(10, f.payload, false)); continue; }
        sock.write(frame(f.opcode, f.payload, false));
      }
    };
    sock.on('data', onData);
    sock.on('error', () => { /* the proxy may reset */ });
    if (head.length > 0) onData(Buffer.alloc(0));
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({
    port: (srv.address() as net.AddressInfo).port,
    upgrades,
    plain,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); srv.close(() => r()); }),
  })));
}

/** A WebSocket client over a raw socket: frames as they arrive, and when the socket closed. */
class Client {
  private buf: Buffer = Buffer.alloc(0);
  private head: string | null = null;
  readonly frames: Frame[] = [];
  ended = false;
  private waiters: (() => void)[] = [];
  private constructor(readonly sock: net.Socket) {
    sock.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      if (this.head === null) {
        const end = this.buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        this.head = this.buf.subarray(0, end).toString('latin1');
        this.buf = this.buf.subarray(end + 4);
      }
      const { frames, rest } = readFrames(this.buf);
      this.buf = rest;
      this.frames.push(...frames);
      this.wake();
    });
    sock.on('close', () => { this.ended = true; this.wake(); });
    sock.on('error', () => { /* seen as the close */ });
  }
  private wake(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }
  static async open(port: number, urlPath: string, key: string): Promise<Client> {
    const sock = net.connect(port, '127.0.0.1');
    await new Promise<void>((res, rej) => { sock.once('connect', () => res()); sock.once('error', rej); });
    const c = new Client(sock);
    sock.write(`GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    return c;
  }
  get response(): string | null { return this.head; }
  /** Waits (on events, with a bound) until `done` holds. */
  async until(what: string, done: () => boolean, ms = 15000): Promise<void> {
    const end = Date.now() + ms;
    while (!done()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => { const t = setTimeout(r, Math.max(1, end - Date.now())); this.waiters.push(() => { clearTimeout(t); r(); }); });
    }
  }
  send(opcode: number, payload: Buffer): void { this.sock.write(frame(opcode, payload, true)); }
}

test('WebSocket through mod_proxy_wstunnel (ws://) and mod_proxy_http (upgrade=websocket)', async (t) => {
  const backend = await startEchoServer();
  const root = tempDir('plume-ws-');
  let srv: Awaited<ReturnType<typeof startServerCommand>> | undefined;
  try {
    fs.mkdirSync(path.join(root, 'logs'));
    fs.mkdirSync(path.join(root, 'htdocs'));
    const port = await freePort();
    const off = await freePort();
    const m = (n: string): string => `LoadModule ${n}_module /usr/lib/apache2/modules/mod_${n}.so`;
    fs.writeFileSync(path.join(root, 'httpd.conf'), [
      `ServerRoot "${root}"`, `Listen 127.0.0.1:${port}`, m('mpm_event'), m('authz_core'),
      m('proxy'), m('proxy_http'), m('proxy_wstunnel'),
      'ServerName localhost', `PidFile ${root}/logs/httpd.pid`, `ErrorLog ${root}/logs/error_log`, 'LogLevel warn',
      `DocumentRoot "${root}/htdocs"`,
      `ProxyPass /ws/ ws://127.0.0.1:${backend.port}/`,
      `ProxyPass /up/ http://127.0.0.1:${backend.port}/ upgrade=websocket`,
      // ProxyWebsocketFallbackToProxyHttp Off: mod_proxy_wstunnel tunnels by itself, and its
      // ProxyPass takes only requests with an Upgrade header (the others go to the next one).
      `Listen 127.0.0.1:${off}`,
      `<VirtualHost 127.0.0.1:${off}>`,
      '  ProxyWebsocketFallbackToProxyHttp Off',
      `  ProxyPass /ws/ ws://127.0.0.1:${backend.port}/`,
      `  ProxyPass / http://127.0.0.1:${backend.port}/plain/`,
      '</VirtualHost>',
    ].join('\n') + '\n');
    srv = await startServerCommand(process.env.PLUME_WS_SERVER ?? 'plume', root, port);

    for (const [p, prefix] of [[port, '/ws/'], [port, '/up/'], [off, '/ws/']] as const) {
      await t.test(`${p === off ? 'fallback off ' : ''}${prefix}: handshake, frames both ways, ping, close`, async () => {
        const key = crypto.randomBytes(16).toString('base64');
        const c = await Client.open(p, `${prefix}echo?x=1`, key);
        await c.until('the 101 and the greeting', () => c.frames.length >= 1);
        assert.match(c.response!, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
        assert.match(c.response!, new RegExp(`\r\nSec-WebSocket-Accept: ${acceptOf(key).replace(/[+/]/g, '\\$&')}(\r\n|$)`, 'i'));
        assert.match(c.response!, /\r\nUpgrade: websocket(\r\n|$)/i);
        assert.deepEqual([c.frames[0]!.opcode, c.frames[0]!.payload.toString()], [1, 'welcome']);
        const big = crypto.randomBytes(70000);
        c.send(1, Buffer.from('hello through the proxy'));
        c.send(2, big);
        c.send(9, Buffer.from('p1'));
        await c.until('three answers', () => c.frames.length >= 4);
        assert.deepEqual([c.frames[1]!.opcode, c.frames[1]!.payload.toString()], [1, 'hello through the proxy']);
        assert.equal(c.frames[2]!.opcode, 2);
        assert.ok(c.frames[2]!.payload.equals(big), 'the 70000-byte binary frame comes back intact');
        assert.deepEqual([c.frames[3]!.opcode, c.frames[3]!.payload.toString()], [10, 'p1']);
        const code = Buffer.from([0x03, 0xe8]);
        c.send(8, Buffer.concat([code, Buffer.from('bye')]));
        await c.until('the close frame and the end of the connection', () => c.ended);
        const close = c.frames[4];
        assert.ok(close !== undefined && close.opcode === 8, 'the close frame is echoed');
        assert.equal(close.payload.readUInt16BE(0), 1000);
        assert.equal(close.payload.subarray(2).toString(), 'bye');
        assert.equal(c.frames.length, 5);
      });
    }
    await t.test('fallback off: without Upgrade, the ws:// ProxyPass passes the request on to the next one', async () => {
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: off, path: '/ws/echo', agent: false }, (r) => {
          let body = '';
          r.on('data', (d: Buffer) => { body += d.toString(); });
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        }).on('error', reject);
      });
      assert.deepEqual(res, { status: 200, body: 'no upgrade\n' });
      assert.deepEqual(backend.plain, ['GET /plain/ws/echo upgrade=-']);
    });
    await t.test('the backend saw the upgrades with their paths', () => {
      assert.deepEqual(backend.upgrades, ['/echo?x=1 websocket', '/echo?x=1 websocket', '/echo?x=1 WebSocket']);
    });
  } finally {
    await srv?.stop();
    await backend.close();
    removeTempDir(root);
  }
});
