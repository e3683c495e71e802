// mod_lua under bin/plume with real Lua (wasmoon): a handler that sleeps blocks only its own
// request, a WebSocket echo handler (r:wsupgrade/wsread/wswrite/wsclose) with a real client,
// LuaScope server keeping its state across requests, and LuaCodeCache stat seeing an edit.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { makeSite, startPlume, getOnce } from './process-lib.js';
import { buildFrame, parseFrame } from '../../src/modules/lua/websocket.js';

function frame(text: string): Buffer {
  const payload = Buffer.from(text);
  const f = buildFrame(1, payload);
  const head = f.subarray(0, f.length - payload.length);
  head[1] = head[1]! | 0x80;
  const mask = Buffer.from([9, 8, 7, 6]);
  return Buffer.concat([head, mask, Buffer.from(payload.map((b, i) => b ^ mask[i & 3]!))]);
}

test('mod_lua: sleeping handlers, WebSocket echo, LuaScope server, LuaCodeCache stat', async () => {
  const site = await makeSite('lua');
  const h = (p: string, t: string): void => fs.writeFileSync(path.join(site.dir, 'htdocs', p), t);
  h('sleep.lua', 'function handle(r)\n  r:sleep(0.4)\n  r:puts("slept")\nend\n');
  h('fast.lua', 'function handle(r)\n  r:puts("fast")\nend\n');
  h('ws.lua', 'function handle(r)\n  if r:wsupgrade() then\n    while true do\n      local line = r:wsread()\n      if line == nil or line == "quit" then r:wsclose() break end\n      r:wswrite("echo:" .. line)\n    end\n  end\nend\n');
  fs.mkdirSync(path.join(site.dir, 'htdocs/srv'));
  h('srv/count.lua', 'n = 0\nfunction handle(r)\n  n = n + 1\n  r:puts("n=" .. n)\nend\n');
  h('edit.lua', 'function handle(r) r:puts("v1") end\n');
  site.write([
    'LoadModule lua_module /usr/lib/apache2/modules/mod_lua.so',
    'AddHandler lua-script .lua',
    // One worker: LuaScope server states are per process, as in httpd's children.
    'StartServers 1', 'MinSpareThreads 1', 'MaxSpareThreads 64',
    `<Directory "${site.dir}/htdocs/srv">`, '  LuaScope server 1 1', '</Directory>',
  ]);
  const srv = await startPlume(site);
  try {
    // A sleeping script does not hold up another request on the same worker.
    const order: string[] = [];
    const slow = getOnce(site.port, '/sleep.lua').then((r) => { order.push('slow'); return r; });
    const quick = await getOnce(site.port, '/fast.lua');
    order.push('fast');
    assert.equal(quick.body.toString(), 'fast');
    assert.equal((await slow).body.toString(), 'slept');
    assert.deepEqual(order, ['fast', 'slow']);

    // LuaScope server: one state kept between requests.
    const counts: string[] = [];
    for (let i = 0; i < 3; i++) counts.push((await getOnce(site.port, '/srv/count.lua')).body.toString());
    assert.deepEqual(counts, ['n=1', 'n=2', 'n=3']);

    // LuaCodeCache stat (the default): an edited script is reloaded.
    assert.equal((await getOnce(site.port, '/edit.lua')).body.toString(), 'v1');
    h('edit.lua', 'function handle(r) r:puts("version 2") end\n');
    assert.equal((await getOnce(site.port, '/edit.lua')).body.toString(), 'version 2');

    // WebSocket echo through r:wsupgrade.
    const sock = net.connect(site.port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const waiters: (() => void)[] = [];
    sock.on('data', (d) => { buf = Buffer.concat([buf, d]); for (const w of waiters.splice(0)) w(); });
    const ended = new Promise<void>((res) => sock.on('close', () => res()));
    const until = async (ok: () => boolean): Promise<void> => { while (!ok()) await new Promise<void>((res) => waiters.push(res)); };
    sock.write('GET /ws.lua HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
    await until(() => buf.includes('\r\n\r\n'));
    const headEnd = buf.indexOf('\r\n\r\n');
    const head = buf.subarray(0, headEnd).toString('latin1');
    assert.match(head, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(head, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/);
    buf = buf.subarray(headEnd + 4);
    const got: string[] = [];
    for (const text of ['one', 'x'.repeat(3000)]) {
      sock.write(frame(text));
      await until(() => typeof parseFrame(buf) === 'object');
      const p = parseFrame(buf);
      assert.ok(typeof p === 'object');
      buf = buf.subarray(p.used);
      got.push(p.frame.payload.toString());
    }
    assert.deepEqual(got, ['echo:one', 'echo:' + 'x'.repeat(3000)]);
    sock.write(frame('quit'));
    await until(() => typeof parseFrame(buf) === 'object');
    const close = parseFrame(buf);
    assert.ok(typeof close === 'object' && close.frame.opcode === 8);
    await ended;
  } finally {
    await srv.stop();
    site.remove();
  }
});
