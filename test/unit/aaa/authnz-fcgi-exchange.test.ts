// mod_authnz_fcgi's reading of an authorizer's answer (handle_response) against scripted
// FastCGI servers on loopback (real sockets; the server side written with the shared codec):
// records cut at every size, padding, STDERR (AH02507), a header across records, the denial's
// body as httpd keeps it (the rest of the piece read with the header's end), and httpd's errors
// for a bogus version (AH02502), request id (AH02503) or record type (AH02508), a header never
// ended (AH02510) and a connection closed early (AH02497, AH02501).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import type { ServerRec } from '../../../src/server/server-rec.js';
import { core } from '../../../src/server/core/core-module.js';
import { createCoreDirConfig } from '../../../src/server/core/config.js';
import { errnoOf } from '../../../src/server/log/error-log.js';
import { SocketInput, handleResponse, type FcgiProviderConf } from '../../../src/modules/aaa/mod_authnz_fcgi.js';
import { FcgiType, encodeEndRequest, encodeHeader, encodeStream } from '../../../src/proxy/protocols/fcgi.js';

if (core.index < 0) core.index = 0;

function makeRequest(log: string[]): Request {
  const rt = {
    errno: (e: unknown) => errnoOf(e),
    logRequest: (_r: Request, module: string, _level: number, message: string, err?: { code: number; text: string }) => {
      log.push(`[${module}] ${err ? `(${err.code})${err.text}: ` : ''}${message}`);
    },
  } as unknown as Runtime;
  const r = new Request(rt, { aborted: false, keepAlive: true } as ConnRec, {} as ServerRec);
  r.filename = '/srv/x/index.html';
  r.method = 'POST';
  const vec: unknown[] = [];
  vec[core.index] = createCoreDirConfig(undefined);
  r.perDirConfig = vec;
  return r;
}

const CONF: FcgiProviderConf = { name: 'p', backend: 'fcgi://127.0.0.1:1/', host: '127.0.0.1', port: 1, addrs: ['127.0.0.1'], isAuthn: true, isAuthz: false };

/** Serves `wire` to one connection in pieces of `cut` bytes, then closes it. */
async function answer(wire: Buffer, cut: number, wantBody = true): Promise<{ rv: string | undefined; body: string | undefined; r: Request; log: string[] }> {
  const srv = net.createServer((sock) => {
    sock.on('error', () => undefined);
    void (async () => {
      for (let at = 0; at < wire.length; at += cut) {
        sock.write(wire.subarray(at, at + cut));
        await new Promise((res) => setImmediate(res));
      }
      sock.end();
    })();
  });
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res));
  const port = (srv.address() as net.AddressInfo).port;
  const log: string[] = [];
  const r = makeRequest(log);
  try {
    const s = await new Promise<net.Socket>((res, rej) => { const c = net.connect(port, '127.0.0.1', () => res(c)); c.on('error', rej); });
    const res = await handleResponse(r, CONF, new SocketInput(s), wantBody);
    s.destroy();
    return { rv: res.rv === undefined ? undefined : `(${res.rv.code})${res.rv.text}`, body: res.body?.toString('latin1'), r, log };
  } finally {
    srv.close();
  }
}

const stdout = (s: string, pad = 8): Buffer[] => [...encodeStream(FcgiType.STDOUT, 1, Buffer.from(s, 'latin1'), pad), encodeHeader(FcgiType.STDOUT, 1, 0)];
const end = encodeEndRequest(1, 0, 0);

test('an answer cut at every size: status, headers, the body after the header, STDERR logged', async () => {
  const wire = Buffer.concat([...encodeStream(FcgiType.STDERR, 1, Buffer.from('app says hi'), 8),
    ...stdout('Status: 403 No\r\nX-A: 1\r\nVariable-U: bob\r\n\r\ndenied\n'), end]);
  for (const cut of [1, 5, 8, 13, 64, 1 << 20]) {
    const a = await answer(wire, cut);
    assert.equal(a.rv, undefined);
    assert.equal(a.r.status, 403);
    assert.equal(a.r.statusLine, '403 No');
    assert.equal(a.r.errHeadersOut.get('X-A'), '1');
    assert.equal(a.r.errHeadersOut.get('Variable-U'), 'bob');
    assert.deepEqual(a.log, ["[authnz_fcgi] AH02507: handle_response: Logged from fcgi://127.0.0.1:1/: 'app says hi'"]);
    // httpd keeps what was read with the header's end: the whole record when it came at once.
    if (cut >= wire.length) assert.equal(a.body, 'denied\n');
    else assert.ok('denied\n'.startsWith(a.body ?? ''), String(a.body));
  }
});

test('the header across records; the body of later records is not kept; no body wanted', async () => {
  const wire = Buffer.concat([...encodeStream(FcgiType.STDOUT, 1, Buffer.from('Status: 401\r\nX-B:'), 1), ...encodeStream(FcgiType.STDOUT, 1, Buffer.from(' 2\r\n\r\nfirst'), 1),
    ...encodeStream(FcgiType.STDOUT, 1, Buffer.from(' second'), 1), encodeHeader(FcgiType.STDOUT, 1, 0), end]);
  const a = await answer(wire, 1 << 20);
  assert.equal(a.r.status, 401);
  assert.equal(a.r.errHeadersOut.get('X-B'), '2');
  assert.equal(a.body, 'first');
  const b = await answer(wire, 1 << 20, false);
  assert.equal(b.body, undefined);
});

test('a Content-Length from the authorizer is dropped; Content-Type sets the request\'s', async () => {
  const a = await answer(Buffer.concat([...stdout('Content-Length: 5\r\nContent-Type: text/x-a\r\n\r\n'), end]), 1 << 20);
  assert.equal(a.rv, undefined);
  assert.equal(a.r.headersOut.get('Content-Length'), undefined);
  assert.equal(a.r.contentType, 'text/x-a');
});

test('httpd\'s errors: bogus version, request id, record type; header never ended; early close; bad header', async () => {
  const v = Buffer.concat(stdout('X: y\r\n\r\n'));
  v[0] = 2;
  assert.deepEqual((await answer(v, 1 << 20)).log, ['[authnz_fcgi] AH02502: handle_response: Got bogus FastCGI header version 2']);
  const rid = Buffer.concat([...encodeStream(FcgiType.STDOUT, 3, Buffer.from('X: y\r\n\r\n')), end]);
  const r2 = await answer(rid, 1 << 20);
  assert.equal(r2.rv, '(22)Invalid argument');
  assert.deepEqual(r2.log, ['[authnz_fcgi] AH02503: handle_response: Got bogus FastCGI header request id 3, expected 1']);
  const odd = await answer(Buffer.concat([encodeHeader(11, 1, 2), Buffer.from('zz'), ...stdout('X: y\r\n\r\n'), end]), 1 << 20);
  assert.equal(odd.rv, undefined);
  assert.deepEqual(odd.log, ['[authnz_fcgi] AH02508: handle_response: Got bogus FastCGI record type 11']);
  const noEnd = await answer(Buffer.concat([...stdout('Status: 200\r\n'), end]), 1 << 20);
  assert.equal(noEnd.rv, '(22)Invalid argument');
  assert.deepEqual(noEnd.log, ['[authnz_fcgi] AH02510: handle_response: Never reached end of script headers']);
  const early = await answer(Buffer.concat(stdout('X: y\r\n\r\n')), 3);
  assert.equal(early.rv, '(70014)End of file found');
  assert.deepEqual(early.log, ["[authnz_fcgi] AH02497: Couldn't read from backend fcgi://127.0.0.1:1/",
    '[authnz_fcgi] (70014)End of file found: AH02501: handle_response: Error occurred before reading entire header']);
  const cut = await answer(Buffer.concat(stdout('X: y\r\n\r\n')).subarray(0, 12), 1 << 20);
  assert.equal(cut.rv, '(70014)End of file found');
  assert.deepEqual(cut.log, ["[authnz_fcgi] AH02497: Couldn't read from backend fcgi://127.0.0.1:1/"]);
  const bad = await answer(Buffer.concat([...stdout('no colon here\r\n\r\n'), end]), 1 << 20);
  assert.equal(bad.rv, '(22)Invalid argument');
  assert.equal(bad.r.status, 500);
  assert.deepEqual(bad.log, ["[authnz_fcgi] malformed header from script 'index.html': Bad header: ",
    '[authnz_fcgi] AH02506: handle_response: Error parsing script headers from fcgi://127.0.0.1:1/']);
});
