// The lbmethods' schedules, as httpd's algorithms give them: byrequests' weighted credit,
// bytraffic's bytes per weight, bybusyness' requests in flight, heartbeat's random pick by
// announced capacity; and the member walk they share (lbsets, hot spares, hot standbys,
// draining members, retry of members in error).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { getBestWorker } from '../../../src/modules/proxy/balancers/best-worker.js';
import {
  PROXY_WORKER_INITIALIZED as WS_INITIALIZED, PROXY_WORKER_DISABLED as WS_DISABLED, PROXY_WORKER_IN_ERROR as WS_IN_ERROR,
  PROXY_WORKER_HOT_STANDBY as WS_HOT_STANDBY, PROXY_WORKER_HOT_SPARE as WS_HOT_SPARE, PROXY_WORKER_DRAIN as WS_DRAIN,
  type ProxyWorker, type ProxyWorkerShared,
} from '../../../src/proxy/api.js';
import { findBestByrequests } from '../../../src/modules/proxy/balancers/mod_lbmethod_byrequests.js';
import { findBestBytraffic } from '../../../src/modules/proxy/balancers/mod_lbmethod_bytraffic.js';
import { findBestBybusyness } from '../../../src/modules/proxy/balancers/mod_lbmethod_bybusyness.js';
import { findBestHeartbeat } from '../../../src/modules/proxy/balancers/mod_lbmethod_heartbeat.js';
import { parseHeartbeatFile, encodeHbSlot, decodeHbSlot, addHbSlot, argsToMap, type HbServer } from '../../../src/modules/proxy/balancers/heartbeat-data.js';

type M = ProxyWorker;

/** A member as mod_proxy makes it: loadfactor 1 (lbfactor 1 → 100 in httpd's hundredths),
 *  initialized in this process. */
function member(name: string, over: Partial<ProxyWorkerShared> = {}): M {
  const s = { name, status: WS_INITIALIZED, lbset: 0, lbstatus: 0, lbfactor: 1, busy: 0, transferred: 0, read: 0, ...over } as ProxyWorkerShared;
  return { name, s, localStatus: WS_INITIALIZED } as unknown as M;
}
const noRetry = (): void => {};

function schedule(ws: M[], n: number, find: (ws: M[]) => M | undefined): string {
  let out = '';
  for (let i = 0; i < n; i++) out += find(ws)?.name ?? '-';
  return out;
}

test('byrequests: equal factors rotate; a disabled member is left out', () => {
  const ws = ['a', 'b', 'c', 'd'].map((n) => member(n));
  assert.equal(schedule(ws, 8, (w) => findBestByrequests(w, noRetry)), 'abcdabcd');
  const ws2 = ['a', 'b', 'c', 'd'].map((n) => member(n));
  ws2[1]!.s.status |= WS_DISABLED;
  assert.equal(schedule(ws2, 9, (w) => findBestByrequests(w, noRetry)), 'acdacdacd');
  // The sum of the credit is unchanged by a pick.
  assert.equal(ws2.reduce((t, w) => t + w.s.lbstatus, 0), 0);
});

test('byrequests: factors 1,1,1,2 give d twice the others\' share, in httpd\'s order', () => {
  const ws = [member('a'), member('b'), member('c'), member('d', { lbfactor: 2 })];
  const s = schedule(ws, 10, (w) => findBestByrequests(w, noRetry));
  // The credit walk: d leads with 200 after one round, ties go to the earlier member.
  assert.equal(s, 'dabcddabcd');
  assert.deepEqual([...'abcd'].map((c) => [...s].filter((x) => x === c).length), [2, 2, 2, 4]);
});

test('the member walk: lbsets, hot spares, hot standbys, draining, retry', () => {
  // lbset 1 serves only when lbset 0 has no usable member.
  const a = member('a');
  const b = member('b', { lbset: 1 });
  assert.equal(schedule([a, b], 3, (w) => findBestByrequests(w, noRetry)), 'aaa');
  a.s.status |= WS_IN_ERROR;
  const retried: string[] = [];
  assert.equal(findBestByrequests([a, b], (w) => retried.push(w.name))?.name, 'b');
  assert.deepEqual(retried, ['a'], 'a member in error is offered a retry');
  // A retry that clears the error makes it usable at once.
  assert.equal(findBestByrequests([a, b], (w) => { w.s.status &= ~WS_IN_ERROR; })?.name, 'a');

  // A hot standby serves only when nothing else of its set can.
  const x = member('x');
  const sb = member('sb', { status: WS_INITIALIZED | WS_HOT_STANDBY });
  assert.equal(schedule([x, sb], 2, (w) => findBestByrequests(w, noRetry)), 'xx');
  x.s.status |= WS_DISABLED;
  assert.equal(findBestByrequests([x, sb], noRetry)?.name, 'sb');

  // A hot spare stands in for each unusable (or draining) member of its set, no more.
  const p = member('p');
  const q = member('q', { status: WS_INITIALIZED | WS_DRAIN });
  const spare = member('r', { status: WS_INITIALIZED | WS_HOT_SPARE });
  const seq = schedule([p, q, spare], 4, (w) => findBestByrequests(w, noRetry));
  assert.equal(seq, 'prpr', 'the draining q is replaced by the spare r');
  q.s.status = WS_INITIALIZED;
  assert.equal(schedule([p, q, spare], 4, (w) => findBestByrequests(w, noRetry)).includes('r'), false);

  // Nothing usable: null.
  assert.equal(getBestWorker([member('z', { status: WS_INITIALIZED | WS_DISABLED })], () => true, noRetry), undefined);
});

test('bytraffic: the fewest bytes per weight, the first one on a tie', () => {
  const a = member('a', { transferred: 1000, read: 1000 });
  const b = member('b', { transferred: 500, read: 600 });
  const c = member('c', { transferred: 3000, read: 0, lbfactor: 3 });
  assert.equal(findBestBytraffic([a, b, c], noRetry)?.name, 'c'); // 10 < 11 < 20
  c.s.read = 400; // 10 + 1 = 11: b (5 + 6 = 11) came first
  assert.equal(findBestBytraffic([a, b, c], noRetry)?.name, 'b');
  // Whole-number division, as httpd's apr_off_t: 199/100 + 199/100 = 2 < 3.
  const d = member('d', { transferred: 199, read: 199 });
  const e = member('e', { transferred: 300, read: 0 });
  assert.equal(findBestBytraffic([e, d], noRetry)?.name, 'd');
});

test('bybusyness: the fewest requests in flight; byrequests credit among equals', () => {
  const a = member('a', { busy: 3 });
  const b = member('b', { busy: 1 });
  const c = member('c', { busy: 1 });
  assert.equal(findBestBybusyness([a, b, c], noRetry)?.name, 'b');
  assert.equal(findBestBybusyness([a, b, c], noRetry)?.name, 'c', 'b paid its credit: c leads the tie');
  c.s.busy = 0;
  assert.equal(schedule([a, b, c], 3, (w) => findBestBybusyness(w, noRetry)), 'ccc');
});

test('heartbeat: the storage file, slot records, and the pick by announced capacity', () => {
  const text = '# comment\n10.0.0.1 ready=40&busy=10&lastseen=2&port=8080\n10.0.0.2 ready=20&busy=0&lastseen=1\n10.0.0.3 ready=50&busy=5&lastseen=11\nbroken\n';
  const servers = parseHeartbeatFile(text);
  assert.deepEqual(servers.get('10.0.0.1'), { ip: '10.0.0.1', busy: 10, ready: 40, port: 8080, id: 0, seen: 2 });
  assert.equal(servers.get('10.0.0.2')!.ready, 5, 'idle and ready: a quarter');
  assert.equal(servers.get('10.0.0.2')!.port, 80);
  assert.equal(servers.size, 3);
  assert.deepEqual([...argsToMap('a=1&b&c=%20x')], [['a', '1'], ['b', '1'], ['c', ' x']]);

  const hosts = new Map([['w1', '10.0.0.1'], ['w2', '10.0.0.2'], ['w3', '10.0.0.3'], ['w4', '10.9.9.9']]);
  const ws = ['w1', 'w2', 'w3', 'w4'].map((n) => member(n));
  const missing: string[] = [];
  const pickAt = (n: number) => findBestHeartbeat(ws, servers, (w) => hosts.get(w.name)!, noRetry, (w) => missing.push(w.name), (min, max) => {
    assert.deepEqual([min, max], [0, 45], 'open slots: 40 + 5 (w3 not seen for 11 s)');
    return n;
  });
  assert.equal(pickAt(0)?.name, 'w1');
  assert.equal(pickAt(39)?.name, 'w1');
  assert.equal(pickAt(40)?.name, 'w2', 'the boundary belongs to the later server, as httpd\'s loop');
  assert.equal(pickAt(45)?.name, 'w2');
  assert.ok(missing.includes('w4'));

  // No capacity: nobody.
  const none: Map<string, HbServer> = new Map([['10.0.0.1', { ip: '10.0.0.1', busy: 3, ready: 0, port: 80, id: 0, seen: 0 }]]);
  assert.equal(findBestHeartbeat(ws, none, (w) => hosts.get(w.name)!, noRetry, noRetry), undefined);

  // mod_heartmonitor's slot records.
  const now = 1_800_000_000_000_000;
  const rec = decodeHbSlot(encodeHbSlot({ ip: '10.0.0.7', busy: 2, ready: 8, seenUs: now - 3_500_000, id: 4 }));
  assert.deepEqual(rec, { ip: '10.0.0.7', busy: 2, ready: 8, seenUs: now - 3_500_000, id: 4 });
  const m = new Map<string, HbServer>();
  addHbSlot(m, rec, now);
  assert.deepEqual(m.get('10.0.0.7'), { ip: '10.0.0.7', busy: 2, ready: 8, port: 0, id: 4, seen: 3 });
});
