// Tunnels over HTTP/2 (RFC 9113 8.5, RFC 8441) under bin/plume and, in the same test, Apache
// 2.4.71 with the same configuration: a CONNECT stream to a local TCP backend through
// mod_proxy_connect (the 200 with Proxy-agent, then the stream's DATA both ways, flow control
// holding when either end stops reading, the end from the client, from the backend, a reset),
// a port outside AllowCONNECT (403), a CONNECT spelled in lower case with :path (AH10384, 400;
// nghttp2 resets "CONNECT" with :path before either server sees it), and a WebSocket over an
// extended CONNECT (H2WebSockets) through ProxyPass ws:// to a WebSocket origin speaking the
// real handshake, and a CONNECT through a remote proxy (ProxyRemote) whose 407 becomes the
// stream's response. What the client sees and the access log lines ("%r" %>s %b %H) must agree.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { makeSite, startPlume, freePort, waitFor, type Site } from './process-lib.js';

const APACHE = '/usr/sbin/apache2';
const haveApache = fs.existsSync(APACHE) && fs.existsSync('/usr/lib/apache2/modules/mod_http2.so');
const M = '/usr/lib/apache2/modules';
/** Larger than the stream window and the loopback socket buffers together. */
const BIG = 24 * 1024 * 1024;

/** The local backends: echo (echoes, "bye" at the end), closer (answers "last" and closes),
 *  hold (reads nothing until released, then counts), flood (sends BIG bytes at once), and a
 *  WebSocket origin (upper-cases what it gets). */
class Backends {
  readonly closed: net.Socket[] = [];
  /** Backend sockets that ended their writing (a FIN sent). */
  readonly ended: net.Socket[] = [];
  holdSock: net.Socket | null = null;
  holdRelease: (() => void) | null = null;
  floodSock: net.Socket | null = null;
  wsSeen: http.IncomingHttpHeaders[] = [];
  private servers: (net.Server | http.Server)[] = [];
  ports = { echo: 0, closer: 0, hold: 0, flood: 0, ws: 0, remote: 0 };

  async start(): Promise<void> {
    const echo = net.createServer((s) => {
      s.on('data', (d: Buffer) => s.write(d));
      s.on('end', () => s.end('bye'));
      s.on('close', () => this.closed.push(s));
      s.on('error', () => undefined);
    });
    const closer = net.createServer((s) => {
      s.once('data', () => s.end('last', () => this.ended.push(s)));
      s.on('close', () => this.closed.push(s));
      s.on('error', () => undefined);
    });
    const hold = net.createServer((s) => {
      s.pause();
      this.holdSock = s;
      let n = 0;
      this.holdRelease = () => { s.on('data', (d: Buffer) => { n += d.length; }); s.resume(); };
      s.on('end', () => s.end(`got ${n}`));
      s.on('error', () => undefined);
    });
    const flood = net.createServer((s) => {
      this.floodSock = s;
      s.end(Buffer.alloc(BIG, 0x61));
      s.on('error', () => undefined);
    });
    const ws = http.createServer((_q, res) => { res.end('not a websocket'); });
    ws.on('upgrade', (req: http.IncomingMessage, sock: net.Socket) => {
      this.wsSeen.push(req.headers);
      const accept = crypto.createHash('sha1').update(String(req.headers['sec-websocket-key']) + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
      sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      sock.on('data', (d: Buffer) => { if (req.url === '/close') sock.end(d.toString('latin1').toUpperCase(), () => this.ended.push(sock)); else sock.write(d.toString('latin1').toUpperCase()); });
      sock.on('end', () => sock.end('bye'));
      sock.on('close', () => this.closed.push(sock));
      sock.on('error', () => undefined);
    });
    // A remote proxy (ProxyRemote) that wants credentials: its answer is the stream's response.
    const remote = net.createServer((s) => {
      let got = '';
      const on = (d: Buffer): void => {
        got += d.toString('latin1');
        if (!got.includes('\r\n\r\n')) return;
        s.off('data', on);
        s.resume();
        s.write('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="r"\r\nConnection: close\r\nContent-Length: 4\r\n\r\nnope');
      };
      s.on('data', on);
      s.on('end', () => s.end());
      s.on('error', () => undefined);
    });
    this.servers = [echo, closer, hold, flood, ws, remote];
    const names = ['echo', 'closer', 'hold', 'flood', 'ws', 'remote'] as const;
    for (let i = 0; i < names.length; i++) {
      const port = await freePort();
      await new Promise<void>((res) => this.servers[i]!.listen(port, '127.0.0.1', () => res()));
      this.ports[names[i]!] = port;
    }
  }

  async stop(): Promise<void> {
    for (const s of this.servers) {
      if (s instanceof http.Server) s.closeAllConnections();
      await new Promise<void>((res) => s.close(() => res()));
    }
  }
}

function configure(site: Site, b: Backends, blocked: number, chained: number): void {
  site.write([
    `LoadModule http2_module ${M}/mod_http2.so`,
    `LoadModule proxy_module ${M}/mod_proxy.so`,
    `LoadModule proxy_connect_module ${M}/mod_proxy_connect.so`,
    `LoadModule proxy_http_module ${M}/mod_proxy_http.so`,
    `LoadModule proxy_wstunnel_module ${M}/mod_proxy_wstunnel.so`,
    'LogFormat "\\"%r\\" %>s %b %H" h2c',
    `CustomLog ${site.dir}/logs/h2c_log h2c`,
    'LogLevel warn http2:info',
    'Protocols h2c http/1.1',
    'H2Direct on',
    'H2WebSockets on',
    'ProxyRequests On',
    `AllowCONNECT ${b.ports.echo} ${b.ports.closer} ${b.ports.hold} ${b.ports.flood}`,
    `ProxyPass /ws/ ws://127.0.0.1:${b.ports.ws}/`,
    `# ${blocked} is not allowed`,
    `Listen 127.0.0.1:${chained}`,
    `<VirtualHost 127.0.0.1:${chained}>`,
    '  ProxyRequests On',
    `  ProxyRemote * http://127.0.0.1:${b.ports.remote}`,
    '</VirtualHost>',
  ]);
}

function session(port: number): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(`http://127.0.0.1:${port}`);
    s.once('remoteSettings', () => resolve(s));
    s.once('error', reject);
  });
}

interface Opened { status: number; headers: http2.IncomingHttpHeaders; q: http2.ClientHttp2Stream }

function open(s: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const q = s.request(headers, { endStream: false });
    q.once('response', (h) => resolve({ status: Number(h[':status']), headers: h, q }));
    q.once('error', reject);
  });
}

/** Reads until `n` bytes came (or the stream ended), as latin1. */
function read(q: http2.ClientHttp2Stream, n: number): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const on = (d: Buffer): void => { got += d.toString('latin1'); if (got.length >= n) done(); };
    const done = (): void => { q.off('data', on); q.off('end', done); resolve(got); };
    q.on('data', on);
    q.once('end', done);
  });
}

/** Everything until the stream's end. */
function rest(q: http2.ClientHttp2Stream): Promise<{ body: string; rst: number }> {
  return new Promise((resolve) => {
    let body = '';
    q.on('data', (d: Buffer) => { body += d.toString('latin1'); });
    q.once('close', () => resolve({ body, rst: q.rstCode ?? 0 }));
    q.resume();
  });
}

/** Waits until what the client has not yet sent stops going down (sampled for 100 ms): the
 *  server's window for the stream is used up and not opened again. */
async function stalled(q: http2.ClientHttp2Stream): Promise<void> {
  let last = -1;
  let same = 0;
  await waitFor('the stream to stop sending', () => {
    const n = q.writableLength;
    same = n === last ? same + 1 : 0;
    last = n;
    return n === 0 || same >= 4;
  }, 20000);
}

function ping(s: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve) => { s.ping(() => resolve()); });
}

interface Seen {
  tunnel: { status: number; agent: boolean; date: boolean; echoed: string; big: number; tail: string };
  closer: { first: string; openAfterBackendClosed: boolean; tail: string };
  reset: boolean;
  inbound: { stalled: boolean; answer: string };
  outbound: { stalled: boolean; got: number };
  blocked: { status: number; title: string };
  lower: { status: number; dateFirst: boolean };
  ws: { status: number; echoed: string; tail: string; firstOpen: boolean; closeTail: string };
  chained: { status: number; auth: string; body: string };
  log: string[];
}

async function scenario(site: Site, b: Backends, blocked: number, chained: number, before: number): Promise<Seen> {
  const file = path.join(site.dir, 'logs/h2c_log');
  const lines = (): string[] => { try { return fs.readFileSync(file, 'latin1').split('\n').filter((l) => l !== ''); } catch { return []; } };
  await waitFor('the lines logged before', () => lines().length >= before);
  const s = await session(site.port);
  const connect = (port: number): http2.OutgoingHttpHeaders => ({ ':method': 'CONNECT', ':authority': `127.0.0.1:${port}` });
  try {
    // Data both ways through the tunnel, more than a window's worth back, then the client's end.
    const t = await open(s, connect(b.ports.echo));
    t.q.write('hello');
    const echoed = await read(t.q, 5);
    const chunk = Buffer.alloc(300000, 0x7a);
    t.q.write(chunk);
    const back = await read(t.q, chunk.length);
    const tEnd = rest(t.q);
    t.q.end();
    const tunnel = { status: t.status, agent: typeof t.headers['proxy-agent'] === 'string', date: t.headers['date'] !== undefined, echoed, big: back.length, tail: (await tEnd).body };

    // The backend closes first: the stream stays open until the client ends its side.
    const nEnded = b.ended.length;
    const c = await open(s, connect(b.ports.closer));
    c.q.write('x');
    const first = await read(c.q, 4);
    await waitFor('the closer backend to end', () => b.ended.length > nEnded);
    await ping(s);
    await ping(s);
    const openAfterBackendClosed = !c.q.readableEnded && !c.q.closed;
    const cEnd = rest(c.q);
    c.q.end();
    const closer = { first, openAfterBackendClosed, tail: (await cEnd).body };

    // The client resets the stream: the backend connection is closed.
    const nClosed2 = b.closed.length;
    const r = await open(s, connect(b.ports.echo));
    r.q.write('ping');
    await read(r.q, 4);
    r.q.close(http2.constants.NGHTTP2_CANCEL);
    await waitFor('the backend of the reset tunnel to close', () => b.closed.length > nClosed2);

    // Inbound flow control: the backend reads nothing, so the stream's window runs out.
    const h = await open(s, connect(b.ports.hold));
    let written = false;
    h.q.write(Buffer.alloc(BIG, 0x62), () => { written = true; });
    await stalled(h.q);
    const inStalled = !written && h.q.writableLength > 0;
    await waitFor('the hold backend', () => b.holdRelease !== null);
    b.holdRelease!();
    b.holdRelease = null;
    const hEnd = rest(h.q);
    h.q.end();
    const inbound = { stalled: inStalled, answer: (await hEnd).body };

    // Outbound flow control: the client reads nothing, so the backend's data waits there.
    b.floodSock = null;
    const f = await open(s, connect(b.ports.flood));
    f.q.pause();
    await waitFor('the client window to run out', () => f.q.state.localWindowSize === 0, 20000);
    await waitFor('the flood backend', () => b.floodSock !== null);
    await ping(s);
    const outStalled = b.floodSock!.writableLength > 0;
    const fEnd = rest(f.q);
    f.q.end();
    const outbound = { stalled: outStalled, got: (await fEnd).body.length };

    // A port outside AllowCONNECT.
    const x = await open(s, connect(blocked));
    const xBody = await rest(x.q);
    const blockedAnswer = { status: x.status, title: /<title>([^<]*)<\/title>/.exec(xBody.body)?.[1] ?? '' };

    // "connect" in lower case with :path (Node adds it): 400, AH10384.
    const l = await open(s, { ':method': 'connect', ':authority': `127.0.0.1:${b.ports.echo}`, ':path': '/x' });
    void (await rest(l.q));
    const lower = { status: l.status, dateFirst: Object.keys(l.headers).indexOf('date') < Object.keys(l.headers).indexOf('content-length') };

    // A WebSocket over an extended CONNECT, to the origin through ProxyPass ws://.
    const wsHead = (p: string): http2.OutgoingHttpHeaders => ({
      ':method': 'CONNECT', ':protocol': 'websocket', ':scheme': 'http', ':path': p,
      ':authority': `127.0.0.1:${site.port}`, 'sec-websocket-version': '13',
    });
    const w = await open(s, wsHead('/ws/echo'));
    w.q.write('over h2');
    const wEchoed = await read(w.q, 7);
    const wEnd = rest(w.q);
    w.q.end();
    const wTail = (await wEnd).body;
    const nEnded3 = b.ended.length;
    const w2 = await open(s, wsHead('/ws/close'));
    w2.q.write('last');
    await read(w2.q, 4);
    await waitFor('the websocket origin to end', () => b.ended.length > nEnded3);
    await ping(s);
    await ping(s);
    const firstOpen = !w2.q.readableEnded && !w2.q.closed;
    const w2End = rest(w2.q);
    w2.q.end();
    const ws = { status: w.status, echoed: wEchoed, tail: wTail, firstOpen, closeTail: (await w2End).body };

    // Through a remote proxy that answers 407: its answer is the stream's response.
    const s2 = await session(chained);
    try {
      const p = await open(s2, connect(b.ports.echo));
      const body = await read(p.q, 4);
      const pEnd = rest(p.q);
      p.q.end();
      await pEnd;
      const chainedAnswer = { status: p.status, auth: String(p.headers['proxy-authenticate']), body };
      await waitFor('the access log lines', () => lines().length >= before + 10);
      return { tunnel, closer, reset: true, inbound, outbound, blocked: blockedAnswer, lower, ws, chained: chainedAnswer, log: lines().slice(before).sort() };
    } finally {
      s2.close();
    }
  } finally {
    s.close();
  }
}

test('HTTP/2 CONNECT tunnels and WebSockets, the same on plume and on Apache', { timeout: 120000 }, async () => {
  const b = new Backends();
  await b.start();
  const blocked = await freePort();
  const chained = await freePort();
  const site = await makeSite('h2-connect');
  try {
    configure(site, b, blocked, chained);
    const plume = await startPlume(site);
    let mine: Seen;
    try {
      mine = await scenario(site, b, blocked, chained, 1);
    } finally {
      await plume.stop();
    }
    const e = `127.0.0.1:${b.ports.echo}`;
    assert.deepEqual(mine.tunnel, { status: 200, agent: true, date: false, echoed: 'hello', big: 300000, tail: 'bye' });
    assert.deepEqual(mine.closer, { first: 'last', openAfterBackendClosed: true, tail: '' });
    assert.deepEqual(mine.inbound, { stalled: true, answer: `got ${BIG}` });
    assert.deepEqual(mine.outbound, { stalled: true, got: BIG });
    assert.deepEqual(mine.blocked, { status: 403, title: '403 Proxy Error' });
    assert.deepEqual(mine.lower, { status: 400, dateFirst: true });
    assert.deepEqual(mine.ws, { status: 200, echoed: 'OVER H2', tail: 'bye', firstOpen: true, closeTail: '' });
    assert.deepEqual(mine.chained, { status: 407, auth: 'Basic realm="r"', body: 'nope' });
    assert.equal(mine.log.filter((l) => l === `"CONNECT ${e} HTTP/2.0" 200 - HTTP/2.0`).length, 3);
    assert.ok(mine.log.includes(`"CONNECT 127.0.0.1:${blocked} HTTP/2.0" 403 353 HTTP/2.0`), mine.log.join('\n'));
    assert.ok(mine.log.includes('"connect /x HTTP/2.0" 400 266 HTTP/2.0'), mine.log.join('\n'));
    assert.ok(mine.log.includes('"GET /ws/echo HTTP/2.0" 101 - HTTP/2.0'), mine.log.join('\n'));
    assert.match(fs.readFileSync(site.errorLog, 'latin1'), /\[http2:info\] .*AH10384: h2_stream\(\d+-\d+-\d+,IDLE\): Request to CONNECT with :scheme or :path specified, sending 400 answer/);
    assert.equal(b.wsSeen[0]?.['upgrade'], 'websocket');

    if (!haveApache) return;
    fs.rmSync(path.join(site.dir, 'logs/h2c_log'), { force: true });
    // httpd has mod_unixd built in.
    fs.writeFileSync(site.conf, fs.readFileSync(site.conf, 'utf8').replace(/^LoadModule unixd_module.*\n/m, ''));
    const start = spawnSync(APACHE, ['-d', site.dir, '-f', site.conf, '-k', 'start'], { encoding: 'utf8' });
    assert.equal(start.status, 0, start.stderr);
    let theirs: Seen;
    try {
      await waitFor('apache', () => fs.existsSync(site.pidFile));
      theirs = await scenario(site, b, blocked, chained, 0);
    } finally {
      spawnSync(APACHE, ['-d', site.dir, '-f', site.conf, '-k', 'stop']);
      await waitFor('apache to stop', () => !fs.existsSync(site.pidFile)).catch(() => undefined);
    }
    const { log: myLog, ...myAnswers } = mine;
    const { log: theirLog, ...theirAnswers } = theirs;
    assert.deepEqual(myAnswers, theirAnswers);
    assert.deepEqual(myLog, theirLog);
  } finally {
    site.remove();
    await b.stop();
  }
});
