// EnableSendfile and EnableMMAP: which route a file's body takes for each merged per-directory
// setting (src/server/http/file-cache.ts), and that every route sends the same bytes — whole
// files, single and multiple ranges, HEAD, files rewritten between requests — through a real
// bin/plume. With LogLevel core:trace6 httpd logs "sendfile_nonblocking: N/N" for each file
// piece of 256 bytes or more it hands to sendfile (measured on Apache 2.4.71); plume does too,
// which shows from outside which responses took the EnableSendfile On route.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  fileCache, fileRouteCounts, streamFileRange, READ_NOW_MAX, STREAM_CHUNK, type FileRoute, type FileSink,
} from '../../../src/server/http/file-cache.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

function pattern(size: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

/** Sizes on each side of the routes' thresholds. */
const FILES: Record<string, number> = {
  'small.bin': 1000, // read at once when streamed is not needed
  'mid.bin': 100 * 1024, // over READ_NOW_MAX, kept in memory under EnableMMAP On
  'big.bin': 600 * 1024, // over the in-memory limit, more than two stream chunks
};

/** dir -> [EnableMMAP, EnableSendfile] and the expected route per file. */
const DIRS: Record<string, { mmap: boolean; sendfile: boolean; routes: Record<string, FileRoute> }> = {
  'mm-sf0': { mmap: true, sendfile: false, routes: { 'small.bin': 'memory', 'mid.bin': 'memory', 'big.bin': 'stream-copy' } },
  'mm-sf1': { mmap: true, sendfile: true, routes: { 'small.bin': 'memory', 'mid.bin': 'memory', 'big.bin': 'stream-direct' } },
  'nomm-sf0': { mmap: false, sendfile: false, routes: { 'small.bin': 'stream-copy', 'mid.bin': 'stream-copy', 'big.bin': 'stream-copy' } },
  'nomm-sf1': { mmap: false, sendfile: true, routes: { 'small.bin': 'read-now', 'mid.bin': 'stream-direct', 'big.bin': 'stream-direct' } },
};

let tmp = '';

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-sendfile-'));
  fs.chmodSync(tmp, 0o755);
});

after(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// ---------------------------------------------------------------- routes, in process

class Collect implements FileSink {
  readonly chunks: Buffer[] = [];
  destroyed = false;
  /** write() answers false every `every` writes, to exercise the drain wait. */
  constructor(private readonly every = 0) {}
  write(data: Buffer): boolean {
    this.chunks.push(data);
    return this.every === 0 || this.chunks.length % this.every !== 0;
  }
  drain(): Promise<void> { return new Promise((r) => setImmediate(r)); }
  get bytes(): Buffer { return Buffer.concat(this.chunks); }
}

function delta(before: Record<FileRoute, number>): FileRoute[] {
  return (Object.keys(fileRouteCounts) as FileRoute[]).filter((k) => fileRouteCounts[k] !== before[k]);
}

describe('file routes (in process)', () => {
  test('each EnableMMAP / EnableSendfile combination takes its route, with the file\'s bytes', () => {
    const dir = path.join(tmp, 'routes');
    fs.mkdirSync(dir);
    fileCache.clear();
    let seed = 1;
    for (const [name, size] of Object.entries(FILES)) fs.writeFileSync(path.join(dir, name), pattern(size, seed++));
    for (const [d, cfg] of Object.entries(DIRS)) {
      for (const name of Object.keys(FILES)) {
        const file = path.join(dir, name);
        const st = fs.statSync(file);
        // Twice: the second answer of the memory route comes from what the first kept.
        for (let round = 0; round < 2; round++) {
          const before = { ...fileRouteCounts };
          const body = fileCache.body(file, st, cfg.mmap, cfg.sendfile);
          assert.ok(body !== null, `${d}/${name}`);
          assert.equal(body.route, cfg.routes[name], `${d}/${name} round ${round}`);
          assert.deepEqual(delta(before), [body.route], `${d}/${name}: counted once`);
          if (body.route === 'memory' || body.route === 'read-now') assert.ok(body.data?.equals(fs.readFileSync(file)), `${d}/${name} bytes`);
          else assert.equal(body.data, undefined);
        }
      }
    }
    assert.ok(READ_NOW_MAX < 100 * 1024 && READ_NOW_MAX >= 1000);
  });

  test('a kept file rewritten between requests is read again (same size, same mtime: ctime changed)', () => {
    const file = path.join(tmp, 'rewritten.bin');
    const T = 1700000000; // whole seconds: utimes sets exactly this
    fs.writeFileSync(file, pattern(5000, 7));
    fs.utimesSync(file, T, T);
    const st1 = fs.statSync(file);
    assert.ok(fileCache.body(file, st1, true, false)?.data?.equals(pattern(5000, 7)));
    fs.writeFileSync(file, pattern(5000, 8));
    fs.utimesSync(file, T, T); // mtime back to what it was
    const st2 = fs.statSync(file);
    assert.equal(st2.mtimeMs, st1.mtimeMs);
    assert.ok(fileCache.body(file, st2, true, false)?.data?.equals(pattern(5000, 8)));
    fs.writeFileSync(file, pattern(3000, 9));
    assert.ok(fileCache.body(file, fs.statSync(file), true, true)?.data?.equals(pattern(3000, 9)));
  });

  test('a file that changed size after the walk\'s stat is streamed, not kept', () => {
    const file = path.join(tmp, 'shrunk.bin');
    fs.writeFileSync(file, pattern(4000, 10));
    const stale = fs.statSync(file);
    fs.writeFileSync(file, pattern(2000, 11));
    for (const [mmap, sendfile, route] of [[true, false, 'stream-copy'], [true, true, 'stream-direct'], [false, true, 'stream-direct']] as const) {
      const body = fileCache.body(file, stale, mmap, sendfile);
      assert.equal(body?.route, route, `mmap ${mmap} sendfile ${sendfile}`);
    }
  });

  test('a file that cannot be opened is refused (httpd\'s 403)', { skip: process.getuid?.() === 0 ? 'root reads every file' : false }, () => {
    const file = path.join(tmp, 'secret.bin');
    fs.writeFileSync(file, 'x'.repeat(100), { mode: 0o000 });
    const st = fs.statSync(file);
    for (const mmap of [true, false]) for (const sendfile of [true, false]) assert.equal(fileCache.body(file, st, mmap, sendfile), null);
  });

  test('streamed ranges: both routes send exactly the range, across read chunks, with backpressure', async () => {
    const size = STREAM_CHUNK * 2 + 12345;
    const data = pattern(size, 12);
    const file = path.join(tmp, 'stream.bin');
    fs.writeFileSync(file, data);
    const ranges: [number, number][] = [[0, size], [1, 1], [0, STREAM_CHUNK], [STREAM_CHUNK - 10, 20], [1000, STREAM_CHUNK * 2], [size - 1, 1], [7, size - 7]];
    for (const direct of [false, true]) {
      for (const [start, length] of ranges) {
        const sink = new Collect(2);
        let short = 0;
        await streamFileRange(sink, file, start, length, direct, () => { short++; });
        assert.equal(short, 0);
        assert.ok(sink.bytes.equals(data.subarray(start, start + length)), `direct ${direct} ${start}+${length}`);
        assert.ok(sink.chunks.every((c) => c.length <= STREAM_CHUNK));
      }
      // A sink that went away stops the reading.
      const gone = new Collect();
      gone.destroyed = true;
      await streamFileRange(gone, file, 0, size, direct, () => undefined);
      assert.equal(gone.chunks.length, 0);
    }
  });

  test('the copy route hands out copies, the direct route the read buffers themselves', async () => {
    const size = STREAM_CHUNK + 5000;
    const file = path.join(tmp, 'bufs.bin');
    fs.writeFileSync(file, pattern(size, 13));
    const copy = new Collect();
    await streamFileRange(copy, file, 0, size, false, () => undefined);
    const direct = new Collect();
    await streamFileRange(direct, file, 0, size, true, () => undefined);
    // Direct: each chunk is a whole buffer of its own, as read. Copy: the same bytes.
    assert.deepEqual(direct.chunks.map((c) => c.length), [STREAM_CHUNK, 5000]);
    assert.ok(direct.chunks.every((c) => c.byteOffset === 0 && c.buffer.byteLength === c.length));
    assert.ok(copy.bytes.equals(direct.bytes));
    assert.notEqual(copy.chunks[0]!.buffer, copy.chunks[1]!.buffer);
  });

  test('a file shorter than the range stops the stream and reports it', async () => {
    const file = path.join(tmp, 'short.bin');
    fs.writeFileSync(file, pattern(1000, 14));
    for (const direct of [false, true]) {
      const sink = new Collect();
      let short = 0;
      await streamFileRange(sink, file, 0, 5000, direct, () => { short++; });
      assert.equal(short, 1);
      assert.ok(sink.bytes.equals(pattern(1000, 14)));
    }
  });
});

// ---------------------------------------------------------------- the same bytes from a running plume

interface Got { status: number; headers: http.IncomingHttpHeaders; body: Buffer }

function get(port: number, urlPath: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, method, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.setTimeout(10000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

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

async function waitListening(port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`plume exited: ${stderr()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('plume did not start');
}

describe('the same bytes on every route (bin/plume -X)', () => {
  let root = '';
  let port = 0;
  let server: ChildProcess | null = null;
  let errText = '';
  const content = new Map<string, Buffer>();

  before(async () => {
    root = path.join(tmp, 'server');
    const htdocs = path.join(root, 'htdocs');
    fs.mkdirSync(path.join(root, 'logs'), { recursive: true });
    let seed = 100;
    for (const d of Object.keys(DIRS)) {
      fs.mkdirSync(path.join(htdocs, d), { recursive: true });
      for (const [name, size] of Object.entries(FILES)) {
        const b = pattern(size, seed++);
        fs.writeFileSync(path.join(htdocs, d, name), b);
        content.set(`${d}/${name}`, b);
      }
    }
    // nomm-sf1 gets its settings from a .htaccess: the merged per-directory value counts.
    fs.writeFileSync(path.join(htdocs, 'nomm-sf1', '.htaccess'), 'EnableMMAP Off\nEnableSendfile On\n');
    fs.chmodSync(root, 0o755);
    port = await freePort();
    const conf = [
      `ServerRoot "${root}"`,
      `Listen 127.0.0.1:${port}`,
      'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
      '<IfModule !unixd_module>',
      '  LoadModule unixd_module /usr/lib/apache2/modules/mod_unixd.so',
      '</IfModule>',
      'LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so',
      'LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so',
      'ServerName localhost',
      `PidFile ${root}/logs/httpd.pid`,
      `ErrorLog ${root}/logs/error_log`,
      'LogLevel warn core:trace6',
      'TypesConfig /etc/mime.types',
      `DocumentRoot "${htdocs}"`,
      `<Directory "${htdocs}">`,
      '  AllowOverride None',
      '  Require all granted',
      '</Directory>',
      `<Directory "${htdocs}/mm-sf1">`,
      '  EnableSendfile On',
      '</Directory>',
      `<Directory "${htdocs}/nomm-sf0">`,
      '  EnableMMAP Off',
      '</Directory>',
      `<Directory "${htdocs}/nomm-sf1">`,
      '  AllowOverride FileInfo',
      '</Directory>',
    ];
    if (process.getuid?.() === 0) conf.push('User nobody', 'Group nogroup');
    fs.writeFileSync(path.join(root, 'httpd.conf'), conf.join('\n') + '\n');
    server = spawn(process.execPath, [path.join(REPO, 'bin/plume'), '-X', '-d', root, '-f', path.join(root, 'httpd.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    server.stderr?.on('data', (d: Buffer) => { errText += d.toString(); });
    await waitListening(port, server, () => errText);
  });

  after(() => {
    if (server && server.exitCode === null) server.kill('SIGTERM');
  });

  /** sendfile_nonblocking trace lines logged since `from` (bytes into the error log): the
   *  error log is written asynchronously, so this polls (generous deadline) until `want`
   *  lines are there, and returns them all. */
  async function traces(from: number, want: number): Promise<string[]> {
    const read = (): string[] => fs.readFileSync(path.join(root, 'logs/error_log'), 'latin1').slice(from)
      .split('\n').filter((l) => l.includes('sendfile_nonblocking')).map((l) => l.replace(/^.*\] /, ''));
    const deadline = Date.now() + 20000;
    while (read().length < want && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return read();
  }
  const logSize = (): number => fs.statSync(path.join(root, 'logs/error_log')).size;

  test('whole files, HEAD and conditional GETs: identical bytes; only EnableSendfile On traces sendfile', async () => {
    const from = logSize();
    const expected: string[] = [];
    for (const [d, cfg] of Object.entries(DIRS)) {
      for (const name of Object.keys(FILES)) {
        const want = content.get(`${d}/${name}`)!;
        for (let i = 0; i < 2; i++) {
          const r = await get(port, `/${d}/${name}`);
          assert.equal(r.status, 200, `${d}/${name}`);
          assert.equal(r.headers['content-length'], String(want.length));
          assert.ok(r.body.equals(want), `${d}/${name}: body differs (round ${i})`);
        }
        const head = await get(port, `/${d}/${name}`, {}, 'HEAD');
        assert.equal(head.status, 200);
        assert.equal(head.body.length, 0);
        const etag = String(head.headers['etag']);
        const notModified = await get(port, `/${d}/${name}`, { 'If-None-Match': etag });
        assert.equal(notModified.status, 304);
        // (requests are sequential, so the trace lines come in this order)
        if (cfg.sendfile) expected.push(...Array<string>(2).fill(`sendfile_nonblocking: ${want.length}/${want.length}`));
      }
    }
    assert.deepEqual(await traces(from, expected.length), expected);
  });

  test('ranges: single, open-ended, suffix and multiple ranges give the same bytes on every route', async () => {
    for (const d of Object.keys(DIRS)) {
      for (const name of Object.keys(FILES)) {
        const want = content.get(`${d}/${name}`)!;
        const n = want.length;
        const singles: [string, number, number][] = [
          ['bytes=0-0', 0, 0], ['bytes=10-299', 10, 299], [`bytes=${n - 300}-`, n - 300, n - 1], ['bytes=-500', n - 500, n - 1],
          [`bytes=100-${n + 1000}`, 100, n - 1],
        ];
        if (n > STREAM_CHUNK) singles.push([`bytes=${STREAM_CHUNK - 50}-${STREAM_CHUNK + 49}`, STREAM_CHUNK - 50, STREAM_CHUNK + 49]);
        for (const [range, a, b] of singles) {
          const r = await get(port, `/${d}/${name}`, { Range: range });
          assert.equal(r.status, 206, `${d}/${name} ${range}`);
          assert.equal(r.headers['content-range'], `bytes ${a}-${b}/${n}`);
          assert.ok(r.body.equals(want.subarray(a, b + 1)), `${d}/${name} ${range}: body differs`);
        }
        const multi = await get(port, `/${d}/${name}`, { Range: 'bytes=0-99,500-899' });
        assert.equal(multi.status, 206);
        const boundary = /boundary=(\S+)/.exec(String(multi.headers['content-type']))![1]!;
        const parts = multi.body.toString('latin1').split(`--${boundary}`).slice(1, -1)
          .map((p) => Buffer.from(p.slice(p.indexOf('\r\n\r\n') + 4, -2), 'latin1'));
        assert.equal(parts.length, 2);
        assert.ok(parts[0]!.equals(want.subarray(0, 100)) && parts[1]!.equals(want.subarray(500, 900)), `${d}/${name} multipart`);
      }
    }
  });

  test('files rewritten between requests: every route sends the new bytes', async () => {
    let seed = 500;
    for (const d of Object.keys(DIRS)) {
      for (const name of Object.keys(FILES)) {
        const file = path.join(root, 'htdocs', d, name);
        for (const size of [FILES[name]!, FILES[name]! - 333]) {
          const b = pattern(size, seed++);
          fs.writeFileSync(file, b);
          fs.utimesSync(file, 1700000000, 1700000000); // the same mtime every time
          const whole = await get(port, `/${d}/${name}`);
          assert.ok(whole.body.equals(b), `${d}/${name} (${size} bytes): stale body`);
          const part = await get(port, `/${d}/${name}`, { Range: 'bytes=200-999' });
          assert.ok(part.body.equals(b.subarray(200, 1000)), `${d}/${name} (${size} bytes): stale range`);
        }
      }
    }
  });
});
