// Malformed and hostile requests against a running bin/plume on loopback: oversized request
// lines and headers, bad methods, path traversal (raw, percent-encoded, NUL, backslash),
// bad protocol versions, bad chunk sizes and Content-Length values, bad Host headers.
// Every expected status was measured on Apache httpd 2.4.71 with the same configuration
// (BAD_REQUESTS_SERVER=apache replays the table against /usr/sbin/apache2 as a self-check).
// Besides the status, each answer must not contain a byte of the file outside the
// DocumentRoot, and the server must still answer normally afterwards.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const SECRET = 'OUTSIDE-THE-DOCROOT-7f3a9c';
const APACHE = process.env['BAD_REQUESTS_SERVER'] === 'apache';

/** No status line expected: the connection closes without an answer. */
const NONE = 0;
/** An HTTP/0.9 answer: the body alone. */
const BODY_ONLY = -1;

interface Row {
  name: string;
  raw: string;
  /** Expected status, NONE or BODY_ONLY. */
  status: number;
  /** Half-close after sending (the client says it has nothing more). */
  end?: boolean;
}

const H = 'Host: localhost\r\nConnection: close\r\n';
const get = (target: string, version = 'HTTP/1.1'): string => `GET ${target} ${version}\r\n${H}\r\n`;
const post = (headers: string, body: string): string => `POST /index.html HTTP/1.1\r\n${H}${headers}\r\n${body}`;
const chunked = (body: string): string => post('Transfer-Encoding: chunked\r\n', body);

// LimitRequestLine 100, LimitRequestFieldSize 100, LimitRequestFields 10, LimitRequestBody 10.
const ROWS: Row[] = [
  // request line and header limits
  { name: 'request line over LimitRequestLine', raw: get('/index.html?' + 'a'.repeat(200)), status: 414 },
  { name: 'request line of limit + 1 characters (httpd accepts it)', raw: get('/index.html?' + 'a'.repeat(101 - 'GET /index.html? HTTP/1.1'.length)), status: 200 },
  { name: 'request line of limit + 2 characters', raw: get('/index.html?' + 'a'.repeat(102 - 'GET /index.html? HTTP/1.1'.length)), status: 414 },
  { name: 'request line without end, over the limit', raw: 'GET /' + 'a'.repeat(17000), status: 414 }, // past the 16000 bytes httpd reads (two 8000-byte reads) before it notices the overflow,
  { name: 'request line without end, closed', raw: 'GET /' + 'a'.repeat(300), status: NONE, end: true },
  { name: 'header line over LimitRequestFieldSize', raw: `GET /index.html HTTP/1.1\r\n${H}X-Long: ${'b'.repeat(200)}\r\n\r\n`, status: 400 },
  { name: 'header of limit + 1 characters', raw: `GET /index.html HTTP/1.1\r\n${H}X-L: ${'b'.repeat(101 - 5)}\r\n\r\n`, status: 200 },
  { name: 'header of limit + 2 characters', raw: `GET /index.html HTTP/1.1\r\n${H}X-L: ${'b'.repeat(102 - 5)}\r\n\r\n`, status: 400 },
  { name: 'folded header over the limit', raw: `GET /index.html HTTP/1.1\r\n${H}X-F: ${'b'.repeat(60)}\r\n ${'c'.repeat(60)}\r\n\r\n`, status: 400 },
  { name: 'repeated header merged over the limit', raw: `GET /index.html HTTP/1.1\r\n${H}X-R: ${'b'.repeat(60)}\r\nX-R: ${'c'.repeat(60)}\r\n\r\n`, status: 400 },
  { name: 'more header fields than LimitRequestFields', raw: `GET /index.html HTTP/1.1\r\n${H}${Array.from({ length: 9 }, (_, i) => `X-${i}: v\r\n`).join('')}\r\n`, status: 400 },
  { name: 'as many header fields as LimitRequestFields', raw: `GET /index.html HTTP/1.1\r\n${H}${Array.from({ length: 8 }, (_, i) => `X-${i}: v\r\n`).join('')}\r\n`, status: 200 },
  // methods and request-line syntax
  { name: 'method with a non-token character', raw: `G@T /index.html HTTP/1.1\r\n${H}\r\n`, status: 400 },
  { name: 'unknown method', raw: `FOO /index.html HTTP/1.1\r\n${H}\r\n`, status: 501 },
  { name: 'lowercase method', raw: `get /index.html HTTP/1.1\r\n${H}\r\n`, status: 501 },
  { name: 'known method not allowed on a file', raw: `DELETE /index.html HTTP/1.1\r\n${H}\r\n`, status: 405 },
  { name: 'POST to a static file', raw: post('Content-Length: 3\r\n', 'abc'), status: 200 },
  { name: 'leading space', raw: ` GET /index.html HTTP/1.1\r\n${H}\r\n`, status: 400 },
  { name: 'tab between method and URI', raw: `GET\t/index.html HTTP/1.1\r\n${H}\r\n`, status: 400 },
  { name: 'two spaces after the method', raw: `GET  /index.html HTTP/1.1\r\n${H}\r\n`, status: 400 },
  { name: 'trailing space after the protocol', raw: `GET /index.html HTTP/1.1 \r\n${H}\r\n`, status: 400 },
  { name: 'extra token after the protocol', raw: `GET /index.html HTTP/1.1 x\r\n${H}\r\n`, status: 400 },
  { name: 'method alone', raw: 'GET\r\n\r\n', status: 400 },
  { name: 'garbage line', raw: 'HELLO\r\n\r\n', status: 400 },
  { name: 'control character in the URI', raw: `GET /index\x01.html HTTP/1.1\r\n${H}\r\n`, status: 400 },
  { name: 'raw NUL byte in the request line', raw: `GET /index.html\x00/../../secret.txt HTTP/1.1\r\n${H}\r\n`, status: 400 },
  { name: 'bare LF line ends', raw: 'GET /index.html HTTP/1.1\nHost: localhost\nConnection: close\n\n', status: 400 },
  { name: 'fragment in the request target', raw: get('/index.html#x'), status: 400 },
  { name: 'userinfo in an absolute URI', raw: get('http://user:pw@localhost/index.html'), status: 400 },
  { name: 'relative request target', raw: get('index.html'), status: 400 },
  { name: 'ftp scheme', raw: get('ftp://localhost/index.html'), status: 400 },
  { name: 'asterisk target with GET', raw: get('*'), status: 400 },
  // protocol versions
  { name: 'HTTP/1.2', raw: get('/index.html', 'HTTP/1.2'), status: 200 },
  { name: 'HTTP/2.0 in a request line', raw: get('/index.html', 'HTTP/2.0'), status: 200 },
  { name: 'leading zero in the version', raw: get('/index.html', 'HTTP/01.1'), status: 400 },
  { name: 'two-digit minor version', raw: get('/index.html', 'HTTP/1.10'), status: 400 },
  { name: 'lowercase protocol', raw: get('/index.html', 'http/1.1'), status: 400 },
  { name: 'HTTP/0.9 written out', raw: get('/index.html', 'HTTP/0.9'), status: 400 },
  { name: 'version without minor', raw: get('/index.html', 'HTTP/1'), status: 400 },
  { name: 'other protocol', raw: get('/index.html', 'FOO/1.1'), status: 400 },
  { name: 'HTTP/0.9 simple request', raw: 'GET /index.html\r\n', status: BODY_ONLY },
  { name: 'HTTP/0.9 HEAD', raw: 'HEAD /index.html\r\n', status: 400 },
  { name: 'HTTP/0.9 traversal (error page without status line)', raw: 'GET /../secret.txt\r\n', status: BODY_ONLY },
  // traversal attempts: never a byte from outside the DocumentRoot
  { name: 'dot-dot above the root', raw: get('/../secret.txt'), status: 400 },
  { name: 'dot-dot after a directory', raw: get('/sub/../../secret.txt'), status: 400 },
  { name: 'encoded dot-dot', raw: get('/%2e%2e/secret.txt'), status: 400 },
  { name: 'encoded dot-dot, uppercase', raw: get('/%2E%2E/secret.txt'), status: 400 },
  { name: 'half-encoded dot-dot', raw: get('/.%2e/secret.txt'), status: 400 },
  { name: 'encoded dot-dot after a directory', raw: get('/sub/%2e%2e/%2e%2e/secret.txt'), status: 400 },
  { name: 'dot-dot with encoded slash', raw: get('/..%2fsecret.txt'), status: 404 },
  { name: 'encoded dot-dot-slash', raw: get('/%2e%2e%2fsecret.txt'), status: 404 },
  { name: 'dot-dot with encoded backslashes', raw: get('/sub/..%5c..%5csecret.txt'), status: 404 },
  { name: 'dot-dot with raw backslashes', raw: get('/sub/..\\..\\secret.txt'), status: 404 },
  { name: 'double slash before dot-dot', raw: get('//../secret.txt'), status: 400 },
  { name: 'absolute URI with dot-dot', raw: get('http://localhost/../secret.txt'), status: 400 },
  { name: 'dot-dot with a query', raw: get('/../secret.txt?x=1'), status: 400 },
  { name: 'encoded NUL', raw: get('/index.html%00.txt'), status: 404 },
  { name: 'truncated escape', raw: get('/index.html%2'), status: 400 },
  { name: 'invalid escape', raw: get('/index%zz.html'), status: 400 },
  { name: 'dot-dot that stays inside', raw: get('/sub/../index.html'), status: 200 },
  { name: 'encoded dot-dot that stays inside', raw: get('/sub/%2e%2e/index.html'), status: 200 },
  { name: 'dot segment', raw: get('/./index.html'), status: 200 },
  // request bodies
  { name: 'chunk size not hex', raw: chunked('zz\r\nhello\r\n0\r\n\r\n'), status: 400 },
  { name: 'negative chunk size', raw: chunked('-5\r\nhello\r\n0\r\n\r\n'), status: 400 },
  { name: 'chunk size with 0x', raw: chunked('0x5\r\nhello\r\n0\r\n\r\n'), status: 400 },
  { name: 'chunk size line with bare LF', raw: chunked('5\nhello\r\n0\r\n\r\n'), status: 400 },
  { name: 'chunk data longer than its size', raw: chunked('3\r\nhello\r\n0\r\n\r\n'), status: 400 },
  { name: 'chunk size overflowing 64 bits', raw: chunked('fffffffffffffffff\r\nhello\r\n0\r\n\r\n'), status: 413 },
  { name: 'chunk size with extension and spaces', raw: chunked('5 ;a=b\r\nhello\r\n0\r\n\r\n'), status: 200 },
  { name: 'chunked body over LimitRequestBody', raw: chunked('6\r\n012345\r\n6\r\n012345\r\n0\r\n\r\n'), status: 413 },
  { name: 'chunked not the last coding', raw: post('Transfer-Encoding: chunked, gzip\r\n', '0\r\n\r\n'), status: 400 },
  { name: 'unknown transfer coding', raw: post('Transfer-Encoding: gzip\r\n', ''), status: 400 },
  { name: 'Content-Length not a number', raw: post('Content-Length: abc\r\n', ''), status: 400 },
  { name: 'negative Content-Length', raw: post('Content-Length: -1\r\n', ''), status: 400 },
  { name: 'Content-Length with a sign', raw: post('Content-Length: +3\r\n', 'abc'), status: 400 },
  { name: 'empty Content-Length', raw: post('Content-Length:\r\n', ''), status: 400 },
  { name: 'two different Content-Length', raw: post('Content-Length: 3\r\nContent-Length: 4\r\n', 'abcd'), status: 400 },
  { name: 'two equal Content-Length', raw: post('Content-Length: 3\r\nContent-Length: 3\r\n', 'abc'), status: 400 },
  { name: 'Content-Length over 2^63', raw: post('Content-Length: 99999999999999999999\r\n', 'abc'), status: 400 },
  { name: 'Content-Length with leading zero', raw: post('Content-Length: 03\r\n', 'abc'), status: 200 },
  { name: 'Content-Length over LimitRequestBody', raw: post('Content-Length: 11\r\n', '01234567890'), status: 413 },
  { name: 'Content-Length and chunked', raw: post('Content-Length: 3\r\nTransfer-Encoding: chunked\r\n', '3\r\nabc\r\n0\r\n\r\n'), status: 200 },
  { name: 'unknown expectation', raw: `GET /index.html HTTP/1.1\r\n${H}Expect: nothing\r\n\r\n`, status: 417 },
  // Host
  { name: 'HTTP/1.1 without Host', raw: 'GET /index.html HTTP/1.1\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'empty Host on HTTP/1.1', raw: 'GET /index.html HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'Host with a space', raw: 'GET /index.html HTTP/1.1\r\nHost: bad host\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'Host with a slash', raw: 'GET /index.html HTTP/1.1\r\nHost: a/b\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'Host with dot-dot', raw: 'GET /index.html HTTP/1.1\r\nHost: a..b\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'Host with a bad port', raw: 'GET /index.html HTTP/1.1\r\nHost: localhost:abc\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'Host with port 0', raw: 'GET /index.html HTTP/1.1\r\nHost: localhost:0\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'numeric Host', raw: 'GET /index.html HTTP/1.1\r\nHost: 123\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'two Host headers', raw: 'GET /index.html HTTP/1.1\r\nHost: localhost\r\nHost: other\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'IPv4 Host', raw: 'GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', status: 200 },
  { name: 'IPv6 Host with port', raw: 'GET /index.html HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\n\r\n', status: 200 },
  { name: 'unclosed IPv6 Host', raw: 'GET /index.html HTTP/1.1\r\nHost: [::1\r\nConnection: close\r\n\r\n', status: 400 },
  { name: 'HTTP/1.0 without Host', raw: 'GET /index.html HTTP/1.0\r\n\r\n', status: 200 },
  // header syntax
  { name: 'header without colon', raw: `GET /index.html HTTP/1.1\r\n${H}NoColon\r\n\r\n`, status: 400 },
  { name: 'space before the colon', raw: `GET /index.html HTTP/1.1\r\n${H}X-Sp : v\r\n\r\n`, status: 400 },
  { name: 'empty field name', raw: `GET /index.html HTTP/1.1\r\n${H}: v\r\n\r\n`, status: 400 },
  { name: 'control character in a value', raw: `GET /index.html HTTP/1.1\r\n${H}X-C: a\x01b\r\n\r\n`, status: 400 },
  { name: 'NUL in a value', raw: `GET /index.html HTTP/1.1\r\n${H}X-N: a\x00b\r\n\r\n`, status: 400 },
  { name: 'folding before any field', raw: `GET /index.html HTTP/1.1\r\n X: a\r\n${H}\r\n`, status: 400 },
  { name: 'obs-fold continuation', raw: `GET /index.html HTTP/1.1\r\n${H}X-F: a\r\n  b\r\n\r\n`, status: 200 },
  // cut short
  { name: 'closed inside the request line', raw: 'GET /index.ht', status: NONE, end: true },
  { name: 'closed inside the headers', raw: 'GET /index.html HTTP/1.1\r\nHost: localhost\r\n', status: 400, end: true },
  { name: 'closed inside a chunked body', raw: chunked('5\r\nhel'), status: 400, end: true },
];

interface Answer {
  status: number;
  text: string;
}

let dir = '';
let port = 0;
let server: ChildProcess | null = null;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address() as net.AddressInfo;
      s.close(() => resolve(a.port));
    });
  });
}

function exchange(raw: string, end: boolean): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write(Buffer.from(raw, 'latin1'));
      if (end) sock.end();
    });
    const timer = setTimeout(() => sock.destroy(), 4000);
    sock.on('data', (d: Buffer) => chunks.push(d));
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      if (text === '') { resolve({ status: NONE, text }); return; }
      const m = /^HTTP\/1\.[01] (\d{3}) /.exec(text);
      resolve({ status: m ? Number(m[1]) : BODY_ONLY, text });
    });
    sock.on('timeout', () => reject(new Error('timeout')));
  });
}

async function waitListening(): Promise<void> {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('server did not start');
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-bad-requests-'));
  port = await freePort();
  fs.mkdirSync(path.join(dir, 'htdocs/sub'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'logs'));
  fs.writeFileSync(path.join(dir, 'htdocs/index.html'), 'inside\n');
  fs.writeFileSync(path.join(dir, 'htdocs/sub/s.txt'), 'sub\n');
  fs.writeFileSync(path.join(dir, 'secret.txt'), SECRET + '\n');
  fs.chmodSync(dir, 0o755);
  const conf = [
    `ServerRoot "${dir}"`,
    `Listen 127.0.0.1:${port}`,
    'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
    '<IfModule !unixd_module>',
    '  LoadModule unixd_module /usr/lib/apache2/modules/mod_unixd.so',
    '</IfModule>',
    'LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so',
    'LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so',
    'LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so',
    'ServerName localhost',
    `PidFile ${dir}/logs/httpd.pid`,
    `ErrorLog ${dir}/logs/error_log`,
    'LogLevel warn',
    'TypesConfig /etc/mime.types',
    `DocumentRoot "${dir}/htdocs"`,
    'LimitRequestLine 100',
    'LimitRequestFieldSize 100',
    'LimitRequestFields 10',
    'LimitRequestBody 10',
  ];
  if (process.getuid?.() === 0) conf.push('User nobody', 'Group nogroup');
  fs.writeFileSync(path.join(dir, 'httpd.conf'), conf.join('\n') + '\n');
  const cmd = APACHE ? '/usr/sbin/apache2' : process.execPath;
  const args = APACHE ? ['-X', '-d', dir, '-f', path.join(dir, 'httpd.conf')] : [path.join(REPO, 'bin/plume'), '-X', '-d', dir, '-f', path.join(dir, 'httpd.conf')];
  server = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  await waitListening();
});

after(() => {
  if (server && server.exitCode === null) server.kill('SIGTERM');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('malformed requests get Apache\'s statuses and never a byte from outside the DocumentRoot', async () => {
  const wrong: string[] = [];
  for (const row of ROWS) {
    const a = await exchange(row.raw, row.end === true);
    if (a.status !== row.status) wrong.push(`${row.name}: expected ${row.status}, got ${a.status} (${JSON.stringify(a.text.slice(0, 60))})`);
    assert.ok(!a.text.includes(SECRET), `${row.name}: served the file outside the DocumentRoot`);
  }
  assert.deepEqual(wrong, []);
});

test('the server keeps answering after the malformed requests', async () => {
  const a = await exchange(get('/index.html'), false);
  assert.equal(a.status, 200);
  assert.ok(a.text.endsWith('\r\n\r\ninside\n'));
  const b = await exchange(`GET /sub/s.txt HTTP/1.1\r\nHost: localhost\r\n\r\nGET /index.html HTTP/1.1\r\n${H}\r\n`, false);
  assert.equal((b.text.match(/HTTP\/1\.1 200 OK/g) ?? []).length, 2);
});
