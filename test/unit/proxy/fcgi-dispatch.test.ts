// mod_proxy_fcgi's exchange against scripted FastCGI servers on loopback (real sockets, the
// server side written with the codec): records split at every size, STDERR logged as AH01071,
// the header found across records, 304 without a body, and httpd's errors for a bogus
// version or request id, a backend that closes early (AH01067/AH01075, 503) or says nothing
// (504), and a script header that does not parse (AH01070).

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
import { fcgiDoRequest } from '../../../src/modules/proxy/fcgi-dispatch.js';
import {
  FcgiRecordReader, FcgiType, encodeEndRequest, encodeHeader, encodeStream,
} from '../../../src/proxy/protocols/fcgi.js';

if (core.index < 0) core.index = 0;

interface Seen { out: Brigade[]; log: string[]; died: number[] }

function makeRequest(seen: Seen, body: Buffer[] = []): Request {
  const rt = {
    errno: (e: unknown) => errnoOf(e),
    logRequest: (_r: Request, module: string, _level: number, message: string, err?: { code: number; text: string }) => {
      seen.log.push(`[${module}] ${err ? `(${err.code})${err.text}: ` : ''}${message}`);
    },
    writeResponse: (r: Request, bb: Brigade) => {
      seen.out.push(bb);
      r.headersSent = true;
      if (bb.some((b) => b.kind === 'eos')) r.eosSent = true;
    },
    readBody: () => Promise.resolve(body.shift() ?? null),
    die: (_r: Request, status: number) => { seen.died.push(status); },
  } as unknown as Runtime;
  const r = new Request(rt, { aborted: false, keepAlive: true } as ConnRec, {} as ServerRec);
  r.filename = 'proxy:fcgi://127.0.0.1:9000/x/script.php';
  const vec: unknown[] = [];
  vec[core.index] = createCoreDirConfig(undefined);
  r.perDirConfig = vec;
  return r;
}

function bodyOf(out: Brigade[]): string {
  return out.flat().map((b) => (b.kind === 'data' ? b.data.toString('latin1') : b.kind === 'eos' ? '<EOS>' : b.kind === 'flush' ? '' : '?')).join('');
}

/** A one-connection FastCGI server: reads the request up to the empty STDIN record, hands
 *  what it got to `answer`, writes its bytes in pieces of `cut` bytes. */
async function withServer(answer: (stdin: Buffer) => Buffer | 'silent' | 'close', cut: number, run: (port: number) => Promise<void>): Promise<void> {
  const srv = net.createServer((sock) => {
    const rd = new FcgiRecordReader();
    const stdin: Buffer[] = [];
    sock.on('data', async (d: Buffer) => {
      let done = false;
      for (const e of rd.push(d)) {
        if (e.kind === 'content' && e.type === FcgiType.STDIN) stdin.push(Buffer.from(e.data));
        if (e.kind === 'record-end' && e.header.type === FcgiType.STDIN && e.header.contentLength === 0) done = true;
      }
      if (!done) return;
      const a = answer(Buffer.concat(stdin));
      if (a === 'silent') return;
      if (a === 'close') { sock.end(); return; }
      for (let at = 0; at < a.length; at += cut) {
        sock.write(a.subarray(at, at + cut));
        await new Promise((res) => setImmediate(res));
      }
      sock.end();
    });
    sock.on('error', () => undefined);
  });
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res));
  try {
    await run((srv.address() as net.AddressInfo).port);
  } finally {
    srv.close();
  }
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((res, rej) => {
    const s = net.connect(port, '127.0.0.1', () => res(s));
    s.on('error', rej);
  });
}

async function exchange(answer: (stdin: Buffer) => Buffer | 'silent' | 'close', opts: { cut?: number; body?: Buffer[]; timeoutMs?: number; override?: number[] } = {}): Promise<{ seen: Seen; r: Request; status: number }> {
  const seen: Seen = { out: [], log: [], died: [] };
  const r = makeRequest(seen, opts.body);
  let status = -99;
  await withServer(answer, opts.cut ?? 1 << 20, async (port) => {
    const socket = await connect(port);
    const res = await fcgiDoRequest(r, {
      socket, timeoutMs: opts.timeoutMs ?? 5000, ioBufferSize: 8192, flushPackets: 'off', flushWait: 10, keepConn: false, serverPortStr: ':80',
      shouldOverride: (s) => (opts.override ?? []).includes(s),
    }, new Map([['A', 'b']]), () => r.read());
    status = res.status;
    socket.destroy();
  });
  return { seen, r, status };
}

const stdout = (s: string, pad = 8): Buffer[] => [...encodeStream(FcgiType.STDOUT, 1, Buffer.from(s, 'latin1'), pad), encodeHeader(FcgiType.STDOUT, 1, 0)];
const end = encodeEndRequest(1, 0, 0);

test('a response split at every size gives the same header and body; STDERR is logged as AH01071', async () => {
  const wire = Buffer.concat([...encodeStream(FcgiType.STDERR, 1, Buffer.from('PHP Notice: x')), ...stdout('Status: 201 Made\r\nContent-Type: text/plain\r\nX-A: 1\r\n\r\nhello\nworld\n'), end]);
  for (const cut of [1, 3, 8, 9, 100, 1 << 20]) {
    const { seen, r, status } = await exchange(() => wire, { cut });
    assert.equal(status, OK);
    assert.equal(r.status, 201);
    assert.equal(r.statusLine, '201 Made');
    assert.equal(r.contentType, 'text/plain');
    assert.equal(r.errHeadersOut.get('X-A'), '1');
    assert.equal(bodyOf(seen.out), 'hello\nworld\n<EOS>');
    assert.deepEqual(seen.log.filter((l) => l.includes('AH01071')), ["[proxy_fcgi] AH01071: Got error 'PHP Notice: x'"]);
  }
});

test('the request body goes as STDIN records', async () => {
  let got = '';
  const { seen } = await exchange((stdin) => { got = stdin.toString(); return Buffer.concat([...stdout('Content-Type: text/plain\n\nok'), end]); }, { body: [Buffer.from('abc'), Buffer.from('def')] });
  assert.equal(got, 'abcdef');
  assert.equal(bodyOf(seen.out), 'ok<EOS>');
});

test('a Content-Length from the script is dropped; a Status of 304 is passed on', async () => {
  const a = await exchange(() => Buffer.concat([...stdout('Content-Length: 99\r\n\r\nshort'), end]));
  assert.equal(a.r.headersOut.get('Content-Length'), undefined);
  assert.equal(bodyOf(a.seen.out), 'short<EOS>');
  const b = await exchange(() => Buffer.concat([...stdout('Status: 304\r\n\r\nbody'), end]));
  assert.equal(b.status, OK);
  assert.equal(b.r.status, 304);
  // The body is passed as httpd passes it; the HTTP layer sends none for a 304.
  assert.equal(bodyOf(b.seen.out), 'body<EOS>');
});

test('a bad script header: 500 sent, AH01070 and AH01075 logged as httpd logs them', async () => {
  const { seen, r, status } = await exchange(() => Buffer.concat([...stdout('bogus line\r\n\r\n'), end]));
  assert.equal(status, OK);
  assert.equal(r.status, 500);
  assert.deepEqual(seen.log, [
    "[proxy_fcgi] malformed header from script 'script.php': Bad header: ",
    '[proxy_fcgi] AH01070: Error parsing script headers',
    '[proxy_fcgi] (22)Invalid argument: AH01075: Error dispatching request to :80: ',
  ]);
});

test('bogus version and request id', async () => {
  const v = Buffer.concat(stdout('X: y\n\n'));
  v[0] = 2;
  const a = await exchange(() => v);
  assert.equal(a.status, 503);
  assert.deepEqual(a.seen.log, ['[proxy_fcgi] AH01068: Got bogus version 2', '[proxy_fcgi] (22)Invalid argument: AH01075: Error dispatching request to :80: ']);
  const w = Buffer.concat(stdout('X: y\n\n'));
  w.writeUInt16BE(7, 2);
  const b = await exchange(() => w);
  assert.deepEqual(b.seen.log[0], '[proxy_fcgi] AH01069: Got bogus rid 7, expected 1');
});

test('a backend closing before END_REQUEST: AH01067, AH01075 and 503; one saying nothing: 504', async () => {
  const a = await exchange(() => 'close');
  assert.equal(a.status, 503);
  assert.deepEqual(a.seen.log, ['[proxy_fcgi] AH01067: Failed to read FastCGI header', '[proxy_fcgi] (70014)End of file found: AH01075: Error dispatching request to :80: ']);
  const b = await exchange(() => 'silent', { timeoutMs: 200 });
  assert.equal(b.status, 504);
  assert.deepEqual(b.seen.log, ['[proxy_fcgi] (70007)The timeout specified has expired: AH01075: Error dispatching request to :80: (polling)']);
});

test('ProxyErrorOverride: the backend body is dropped and the error page served', async () => {
  const { seen, r, status } = await exchange(() => Buffer.concat([...stdout('Status: 404\r\nContent-Type: text/plain\r\n\r\nmine'), end]), { override: [404] });
  assert.equal(status, OK);
  assert.equal(r.status, 200);
  assert.deepEqual(seen.died, [404]);
  assert.equal(bodyOf(seen.out), '');
});

/** flushpackets: the script's output in two STDOUT records, the second sent only when the test
 *  says (`release`, called from what the response got); which brigades carried a FLUSH. */
async function flushRun(flushPackets: 'on' | 'off' | 'auto', flushWait: number, releaseOn: 'flush' | 'data'): Promise<string> {
  const seen: Seen = { out: [], log: [], died: [] };
  const r = makeRequest(seen);
  let release: () => void = () => undefined;
  const released = new Promise<void>((res) => { release = res; });
  const rt = r.rt as unknown as { writeResponse: (r: Request, bb: Brigade) => void };
  const write = rt.writeResponse;
  rt.writeResponse = (rq, bb) => {
    write(rq, bb);
    if (releaseOn === 'flush' ? bb.some((b) => b.kind === 'flush') : bb.some((b) => b.kind === 'data' && b.data.includes('one'))) release();
  };
  const srv = net.createServer((sock) => {
    const rd = new FcgiRecordReader();
    sock.on('data', async (d: Buffer) => {
      if (!rd.push(d).some((e) => e.kind === 'record-end' && e.header.type === FcgiType.STDIN && e.header.contentLength === 0)) return;
      sock.write(Buffer.concat(encodeStream(FcgiType.STDOUT, 1, Buffer.from('Content-Type: text/plain\r\n\r\none', 'latin1'), 0)));
      // Nothing flushed: the test lets go after two seconds (and the assertion shows it).
      const t = setTimeout(release, 2000);
      await released;
      clearTimeout(t);
      sock.end(Buffer.concat([...encodeStream(FcgiType.STDOUT, 1, Buffer.from('two', 'latin1'), 0), encodeHeader(FcgiType.STDOUT, 1, 0), encodeEndRequest(1, 0, 0)]));
    });
    sock.on('error', () => undefined);
  });
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res));
  try {
    const socket = await connect((srv.address() as net.AddressInfo).port);
    await fcgiDoRequest(r, {
      socket, timeoutMs: 5000, ioBufferSize: 8192, flushPackets, flushWait, keepConn: false, serverPortStr: ':80', shouldOverride: () => false,
    }, new Map([['A', 'b']]), () => r.read());
    socket.destroy();
  } finally {
    srv.close();
  }
  return seen.out.flat().map((b) => (b.kind === 'data' ? b.data.toString('latin1') : b.kind === 'flush' ? '<FLUSH>' : b.kind === 'eos' ? '<EOS>' : '')).join('');
}

test('flushpackets=auto flushes once the backend is quiet for flushwait= ms, not while it keeps sending; on always, off never', async () => {
  assert.equal(await flushRun('auto', 20, 'flush'), 'one<FLUSH>two<EOS>');
  assert.equal(await flushRun('auto', 1000, 'data'), 'onetwo<EOS>');
  assert.equal(await flushRun('on', 1000, 'flush'), 'one<FLUSH>two<EOS>');
  assert.equal(await flushRun('off', 10, 'data'), 'onetwo<EOS>');
});
