// mod_heartbeat, mod_heartmonitor and mod_lbmethod_heartbeat on real processes: one plume
// sends its capacity by multicast once a second (mod_heartbeat), another receives it
// (mod_heartmonitor, the slotmem table) and balances by it (lbmethod=heartbeat), together
// with heartbeats two more backends POST to its "heartbeat" handler. Members whose servers
// report no free slot get nothing; the member with the most free slots gets most requests.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as dgram from 'node:dgram';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { makeSite, startPlume, freePort, waitFor } from './process-lib.js';

/** A multicast group of our own for this run, and the address this host's datagrams to it come
 *  from (what mod_heartmonitor records), or undefined when multicast does not loop back here. */
async function probeMulticast(group: string, port: number): Promise<string | undefined> {
  const rx = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  const tx = dgram.createSocket('udp4');
  try {
    await new Promise<void>((resolve, reject) => { rx.once('error', reject); rx.bind(port, group, () => resolve()); });
    rx.addMembership(group);
    const got = new Promise<string | undefined>((resolve) => {
      const t = setTimeout(() => resolve(undefined), 2000);
      rx.once('message', (_m, from) => { clearTimeout(t); resolve(from.address); });
    });
    await new Promise<void>((resolve) => tx.bind(0, () => resolve()));
    tx.setMulticastLoopback(true);
    tx.send('probe', port, group);
    return await got;
  } catch {
    return undefined;
  } finally {
    rx.close();
    tx.close();
  }
}

function get(port: number, path: string): Promise<{ status: number; body: string; type: string | undefined }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString('latin1'); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: res.headers['content-type'] }));
    }).on('error', reject);
  });
}

/** A heartbeat POSTed to the monitor's handler from `from` (the address it records). */
function postBeat(port: number, from: string, body: string): Promise<{ status: number; body: string; length: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/hb', method: 'POST', localAddress: from, agent: false, headers: { 'Content-Length': body.length } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => { text += d.toString('latin1'); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, length: res.headers['content-length'] }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('a plume with mod_heartbeat announces its capacity; a plume with mod_heartmonitor and lbmethod_heartbeat balances by the capacities reported', async (t) => {
  const hbPort = await freePort();
  const group = `239.255.${(hbPort >> 8) & 255}.${hbPort & 255}`;
  const source = await probeMulticast(group, hbPort);
  if (source === undefined) { t.skip('no multicast loopback on this host (mod_heartbeat sends by multicast)'); return; }

  // The backends: on the sender's address, on 127.0.0.2 and on 127.0.0.3.
  const hosts = [source, '127.0.0.2', '127.0.0.3'];
  const bport = await freePort();
  const backends: http.Server[] = [];
  for (const h of hosts) {
    const s = http.createServer((_q, r) => { r.end(`${h}\n`); });
    await new Promise<void>((resolve) => s.listen(bport, h, resolve));
    backends.push(s);
  }
  const sender = await makeSite('heartbeat', [
    'LoadModule heartbeat_module /usr/lib/apache2/modules/mod_heartbeat.so',
    `HeartbeatAddress ${group}:${hbPort}`,
  ]);
  const monitor = await makeSite('heartmonitor', [
    'LoadModule slotmem_shm_module /usr/lib/apache2/modules/mod_slotmem_shm.so',
    'LoadModule heartmonitor_module /usr/lib/apache2/modules/mod_heartmonitor.so',
    'LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so',
    'LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so',
    'LoadModule proxy_balancer_module /usr/lib/apache2/modules/mod_proxy_balancer.so',
    'LoadModule lbmethod_heartbeat_module /usr/lib/apache2/modules/mod_lbmethod_heartbeat.so',
    'LogLevel warn heartmonitor:debug lbmethod_heartbeat:notice',
    `HeartbeatListen ${group}:${hbPort}`,
    '<Proxy balancer://hb>',
    ...hosts.map((h) => `  BalancerMember http://${h}:${bport}`),
    '  ProxySet lbmethod=heartbeat',
    '</Proxy>',
    'ProxyPass /hb !',
    'ProxyPass /app balancer://hb',
    '<Location /hb>',
    '  SetHandler heartbeat',
    '</Location>',
  ]);
  const m = await startPlume(monitor, { workers: 1 });
  const s = await startPlume(sender, { workers: 1 });
  t.after(async () => {
    await s.stop();
    await m.stop();
    for (const b of backends) await new Promise<void>((resolve) => b.close(() => resolve()));
    sender.remove();
    monitor.remove();
  });
  const log = (): string => fs.readFileSync(monitor.errorLog, 'latin1');
  assert.match(log(), /AH02283: Using slotmem from mod_heartmonitor/);

  // The sender's beats arrive, in httpd's format, with its free worker slots.
  const beat = new RegExp(`AH02086: ${source.replace(/\./g, '\\.')}:\\d+ busy=(\\d+) ready=(\\d+)`);
  await waitFor('a heartbeat from the sender', () => beat.test(log()), 15000);
  assert.ok(Number(beat.exec(log())![2]) > 0, 'the sender reports free slots');

  // The two others report no free slot: the sender's member gets the requests once the
  // monitor has stored its beats (every 5 s). (httpd's pick is over 0..total inclusive, so the
  // last server in the list wins the draw of exactly `total`, whatever its free slots: about
  // one request in total+1 goes to 127.0.0.3, never to 127.0.0.2.)
  for (const h of ['127.0.0.2', '127.0.0.3']) {
    const r = await postBeat(monitor.port, h, 'v=1&ready=0&busy=9');
    assert.deepEqual(r, { status: 200, body: 'OK', length: '2' });
  }
  await waitFor('requests balanced to the sender', async () => (await get(monitor.port, '/app/')).body === `${source}\n`, 15000);
  const first = new Map<string, number>();
  for (let i = 0; i < 20; i++) {
    const b = (await get(monitor.port, '/app/')).body.trim();
    first.set(b, (first.get(b) ?? 0) + 1);
  }
  assert.equal(first.get('127.0.0.2') ?? 0, 0, `${[...first]}`);
  assert.ok((first.get(source) ?? 0) >= 14, `${[...first]}`);

  // 127.0.0.3 now announces far more free slots than the sender: it takes nearly everything;
  // 127.0.0.2 (no free slot) still gets nothing.
  await postBeat(monitor.port, '127.0.0.3', 'v=1&ready=4000&busy=1');
  const counts = new Map<string, number>();
  for (let i = 0; i < 20; i++) {
    const b = (await get(monitor.port, '/app/')).body.trim();
    counts.set(b, (counts.get(b) ?? 0) + 1);
  }
  assert.equal(counts.get('127.0.0.2') ?? 0, 0, `${[...counts]}`);
  assert.ok((counts.get('127.0.0.3') ?? 0) >= 15, `${[...counts]}`);

  // The handler takes POST only.
  assert.equal((await get(monitor.port, '/hb')).status, 405);
});
