// mod_proxy_http's environment variables and 100-continue handling, measured at the backend: a
// bare HTTP server on loopback records, for each request it receives, the connection it came
// on, the request line, the framing headers (Connection, Content-Length, Transfer-Encoding,
// Expect) and the body length; the client records the status lines it got (interim ones
// included). plume's observations are compared with Apache 2.4.71's, recorded in
// test/fixtures/proxy-http-env/apache-2.4.71.json (PROXY_ENV_RECORD=1 rewrites it from
// /usr/sbin/apache2) and, when apache2 is installed, measured live in the same run.
// Pinned: the default reverse worker's proxy-nokeepalive, proxy-nokeepalive,
// force-proxy-request-1.0, proxy-sendchunked / proxy-sendcl (and both), proxy-initial-not-pooled,
// proxy-interim-response (unset, RFC, Suppress), Proxy100Continue On/Off and ping=.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { tempDir, removeTempDir } from '../temp.js';
import { freePort, REPO } from './process-lib.js';
import { startServerCommand } from './proxy-fcgi-server.js';

const FIXTURE = path.join(REPO, 'test/fixtures/proxy-http-env/apache-2.4.71.json');
const APACHE = '/usr/sbin/apache2';
const haveApache = fs.existsSync(APACHE) && fs.existsSync('/usr/lib/apache2/modules/mod_proxy_http.so');
const RECORD = process.env['PROXY_ENV_RECORD'] === '1';

/** A backend that answers every request with 200 and says what it saw. */
function startBackend(): Promise<{ port: number; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const ids = new Map<net.Socket, number>();
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => { /* the proxy may reset */ });
    ids.set(s, ids.size + 1);
    let buf = Buffer.alloc(0);
    let continued = false;
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const lines = head.split('\r\n');
        const target = lines[0]!.split(' ')[1] ?? '';
        const field = (n: string): string | undefined => lines.slice(1).find((l) => l.toLowerCase().startsWith(n + ':'))?.slice(n.length + 1).trim();
        if (field('expect') !== undefined && !continued && !target.includes('no100')) { continued = true; s.write('HTTP/1.1 100 Continue\r\n\r\n'); }
        let rest = buf.subarray(end + 4);
        let body = 0;
        const cl = field('content-length');
        if (cl !== undefined) {
          if (rest.length < Number(cl)) return;
          body = Number(cl);
          rest = rest.subarray(body);
        } else if (field('transfer-encoding') !== undefined) {
          // Chunked: counts the data bytes.
          let pos = 0;
          for (;;) {
            const nl = rest.indexOf('\r\n', pos);
            if (nl < 0) return;
            const n = parseInt(rest.subarray(pos, nl).toString('latin1'), 16);
            if (n === 0) { if (rest.length < nl + 4) return; pos = nl + 4; break; }
            if (rest.length < nl + 2 + n + 2) return;
            body += n;
            pos = nl + 2 + n + 2;
          }
          rest = rest.subarray(pos);
        }
        buf = rest;
        continued = false;
        const framing = ['connection', 'content-length', 'transfer-encoding', 'expect'].map((n) => field(n) !== undefined ? `${n}=${field(n)}` : '').filter((x) => x !== '').join(' ');
        seen.push(`c${ids.get(s)} ${lines[0]} [${framing}] body=${body}`);
        let out = target.includes('interim') ? 'HTTP/1.1 103 Early Hints\r\nLink: </x.css>\r\n\r\n' : '';
        if (target.includes('interim')) out = 'HTTP/1.1 100 Continue\r\n\r\n' + out;
        const text = `ok ${target}\n`;
        out += `HTTP/1.1 200 OK\r\nContent-Length: ${text.length}\r\nContent-Type: text/plain\r\n\r\n${text}`;
        s.write(out);
      }
    });
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => {
    resolve({
      port: (srv.address() as net.AddressInfo).port,
      seen,
      close: () => new Promise((r) => { for (const s of sockets) s.destroy(); srv.close(() => r()); }),
    });
  }));
}

interface Req { readonly head: string; readonly body?: string }

/** Sends requests one after another on one client connection; per request, the status lines
 *  received up to its final response. A request with Expect sends its body after a 100
 *  Continue or after 1 s without one (as curl does). */
async function conversation(port: number, reqs: readonly Req[]): Promise<string[][]> {
  const c = net.connect(port, '127.0.0.1');
  await new Promise<void>((res, rej) => { c.once('connect', () => res()); c.once('error', rej); });
  let data = Buffer.alloc(0);
  let wake: (() => void) | null = null;
  let closed = false;
  c.on('data', (d: Buffer) => { data = Buffer.concat([data, d]); wake?.(); });
  c.on('close', () => { closed = true; wake?.(); });
  c.on('error', () => { /* closed */ });
  const waitData = (ms: number): Promise<void> => new Promise((r) => { const t = setTimeout(() => { wake = null; r(); }, ms); wake = () => { clearTimeout(t); wake = null; r(); }; });
  /** One response off the front of `data`: its status line, or undefined if incomplete. */
  const take = (): { line: string; final: boolean } | undefined => {
    const end = data.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const head = data.subarray(0, end).toString('latin1');
    const line = head.split('\r\n')[0]!;
    const status = Number(line.split(' ')[1]);
    const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
    const len = status < 200 ? 0 : cl ? Number(cl[1]) : 0;
    if (data.length < end + 4 + len) return undefined;
    data = data.subarray(end + 4 + len);
    return { line, final: status >= 200 };
  };
  const out: string[][] = [];
  try {
    for (const q of reqs) {
      const lines: string[] = [];
      c.write(q.head);
      let bodySent = q.body === undefined;
      const expectAt = Date.now() + 1000;
      for (;;) {
        const got = take();
        if (got !== undefined) {
          lines.push(got.line);
          if (got.final) break;
          if (!bodySent && got.line.includes(' 100 ')) { c.write(q.body!); bodySent = true; }
          continue;
        }
        if (closed) { lines.push('(closed)'); break; }
        if (!bodySent && Date.now() >= expectAt) { c.write(q.body!); bodySent = true; }
        await waitData(bodySent ? 15000 : Math.max(1, expectAt - Date.now()));
      }
      out.push(lines);
      if (closed) break;
    }
  } finally {
    c.destroy();
  }
  return out;
}

const H = 'Host: localhost\r\n';
const get = (p: string): Req => ({ head: `GET ${p} HTTP/1.1\r\n${H}\r\n` });
const postCl = (p: string, n: number): Req => ({ head: `POST ${p} HTTP/1.1\r\n${H}Content-Length: ${n}\r\n\r\n${'x'.repeat(n)}` });
const chunk = (n: number): string => `${n.toString(16)}\r\n${'y'.repeat(n)}\r\n`;
const postCh = (p: string, n: number): Req => ({ head: `POST ${p} HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n${chunk(n)}0\r\n\r\n` });
const postExp = (p: string, n: number): Req => ({ head: `POST ${p} HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: ${n}\r\n\r\n`, body: 'x'.repeat(n) });
const BIG = 40000;

/** Conversations (each on its own client connection), by name. */
const CONVERSATIONS: readonly (readonly [string, readonly Req[]])[] = [
  ...['w', 'nka', 'f10', 'sch', 'scl', 'both', 'def'].map((p): [string, Req[]] => [p, [
    get(`/${p}/a`), get(`/${p}/b`), postCl(`/${p}/c`, 5), postCh(`/${p}/d`, 7), postCl(`/${p}/e`, BIG), postCh(`/${p}/f`, BIG),
  ]]),
  ['initial-not-pooled-1', [get('/inp/a'), get('/inp/b')]],
  ['initial-not-pooled-2', [get('/inp/c'), get('/inp/d')]],
  ...['w', 'irfc', 'noexp'].map((p): [string, Req[]] => [`interim-${p}`, [get(`/${p}/interim`), postExp(`/${p}/interim2`, 3), postExp(`/${p}/plain`, 3)]]),
  ['interim-suppress', [get('/isup/interim')]],
  ['ping', [postCl('/ping/a', 4), get('/ping/b'), postCl('/ping/no100', 4)]],
];

function config(root: string, port: number, backend: number): string {
  const m = (n: string): string => `LoadModule ${n}_module /usr/lib/apache2/modules/mod_${n}.so`;
  const b = `http://127.0.0.1:${backend}`;
  return [
    `ServerRoot "${root}"`, `Listen 127.0.0.1:${port}`, m('mpm_event'),
    '<IfModule !unixd_module>', `  ${m('unixd')}`, '</IfModule>',
    m('authz_core'), m('setenvif'), m('proxy'), m('proxy_http'),
    'ServerName localhost', `PidFile ${root}/logs/httpd.pid`, `ErrorLog ${root}/logs/error_log`, 'LogLevel warn',
    `DocumentRoot "${root}/htdocs"`,
    'SetEnvIf Request_URI ^/nka/ proxy-nokeepalive',
    'SetEnvIf Request_URI ^/f10/ force-proxy-request-1.0',
    'SetEnvIf Request_URI ^/sch/ proxy-sendchunked',
    'SetEnvIf Request_URI ^/scl/ proxy-sendcl',
    'SetEnvIf Request_URI ^/both/ proxy-sendchunked proxy-sendcl',
    'SetEnvIf Request_URI ^/isup/ proxy-interim-response=Suppress',
    'SetEnvIf Request_URI ^/irfc/ proxy-interim-response=RFC',
    'SetEnvIf Request_URI ^/inp/ proxy-initial-not-pooled',
    ...['w', 'nka', 'f10', 'sch', 'scl', 'both', 'isup', 'irfc', 'inp', 'noexp'].map((p) => `ProxyPass /${p}/ ${b}/${p}/`),
    `ProxyPass /ping/ ${b}/ping/ ping=1`,
    '<Location /noexp/>', '  Proxy100Continue Off', '</Location>',
    // No ProxyPass worker: the default reverse worker.
    '<Location /def/>', `  SetHandler "proxy:${b}"`, '</Location>',
  ].join('\n') + '\n';
}

type Observed = Record<string, { client: string[]; backend: string[] }>;

async function observe(server: 'plume' | string): Promise<Observed> {
  const root = tempDir('plume-proxyenv-');
  const backend = await startBackend();
  try {
    fs.mkdirSync(path.join(root, 'logs'));
    fs.mkdirSync(path.join(root, 'htdocs'));
    const port = await freePort();
    fs.writeFileSync(path.join(root, 'httpd.conf'), config(root, port, backend.port));
    const srv = await startServerCommand(server, root, port);
    const out: Observed = {};
    try {
      for (const [name, reqs] of CONVERSATIONS) {
        const before = backend.seen.length;
        const client = await conversation(port, reqs);
        out[name] = { client: client.map((l) => l.join(' | ')), backend: backend.seen.slice(before).map((l) => l.replace(root, '@ROOT@')) };
      }
    } finally {
      await srv.stop();
    }
    // Backend connection numbers are the order the backend saw them in: what matters is
    // which requests shared one.
    let n = 0;
    const renumber = new Map<string, string>();
    for (const k of Object.keys(out)) {
      out[k]!.backend = out[k]!.backend.map((l) => l.replace(/^c\d+/, (c) => {
        if (!renumber.has(c)) renumber.set(c, `c${++n}`);
        return renumber.get(c)!;
      }));
    }
    return out;
  } finally {
    await backend.close();
    removeTempDir(root);
  }
}

if (RECORD) {
  test('record Apache 2.4.71', async () => {
    const a = await observe(APACHE);
    fs.mkdirSync(path.dirname(FIXTURE), { recursive: true });
    fs.writeFileSync(FIXTURE, JSON.stringify(a, null, 1) + '\n');
  });
} else {
  test('mod_proxy_http environment variables and 100-continue, as Apache 2.4.71', async (t) => {
    const recorded = JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as Observed;
    const plume = await observe('plume');
    const live = haveApache ? await observe(APACHE) : undefined;
    for (const [name] of CONVERSATIONS) {
      await t.test(name, () => {
        assert.deepEqual(plume[name], recorded[name], `${name}: plume against the recorded Apache answer`);
        if (live) assert.deepEqual(plume[name], live[name], `${name}: plume against Apache now`);
      });
    }
  });
}
