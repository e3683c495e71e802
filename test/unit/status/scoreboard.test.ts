// The scoreboard table (src/mpm/scoreboard.ts) without a server: its shape from the MPM
// directives, a worker's slots through a request's life, what the parent's records do to
// them (dead, starting, stopping gracefully), counters surviving a worker's replacement and
// a graceful restart but not a hard one, slots past ThreadsPerChild, SeeRequestTail.

import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readConfiguration } from '../../../src/server/config/build.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import type { Request } from '../../../src/server/request/request.js';
import { catalogue } from '../../../src/modules/index.js';
import {
  createScoreboard, scoreboardGeometry, attachScoreboardFromEnv, detachScoreboard, scoreboard,
  ScoreboardImage, newSlotView, type ScoreConn, type WorkerScoreboard,
  SERVER_DEAD, SERVER_STARTING, SERVER_READY, SERVER_BUSY_READ, SERVER_BUSY_WRITE, SERVER_GRACEFUL,
} from '../../../src/mpm/scoreboard.js';
import { nowMicros } from '../../../src/server/log/time.js';
import { tempDir } from '../../temp.js';

async function config(lines: string[]): Promise<{ ctx: ConfigContext; root: string }> {
  const root = tempDir('plume-sb-');
  fs.mkdirSync(path.join(root, 'logs'));
  const file = path.join(root, 'httpd.conf');
  fs.writeFileSync(file, [
    `ServerRoot ${root}`, 'ServerName sb.example', 'Listen 127.0.0.1:1',
    'LoadModule mpm_event_module modules/mod_mpm_event.so',
    'LoadModule status_module modules/mod_status.so',
    ...lines,
  ].join('\n') + '\n');
  const ctx = await readConfiguration({
    argv0: 'plume', serverRoot: root, configFile: file, defines: [], preDirectives: [], postDirectives: [],
  }, catalogue);
  return { ctx, root };
}

interface FakeConn extends ScoreConn {
  bytesIn: number;
  bytesOut: number;
  localPort: number;
}

function conn(ip = '10.0.0.1'): FakeConn {
  return { remoteIp: ip, remoteHost: undefined, keepalives: 0, idleKeepAlive: false, lingering: false, score: null, bytesIn: 0, bytesOut: 0, localPort: 8080 };
}

function req(c: FakeConn, line: string): Request {
  const r = {
    connection: c, theRequest: line, startMicros: nowMicros(),
    server: { serverHostname: 'vh.example' }, rt: { mainServer: { serverHostname: 'main.example' } },
  };
  return r as unknown as Request;
}

function attach(file: string, slot: number, generation = 0): WorkerScoreboard {
  process.env['PLUME_SCOREBOARD'] = file;
  process.env['PLUME_CHILD_SLOT'] = String(slot);
  process.env['PLUME_GENERATION'] = String(generation);
  return attachWith();
}

let lastCtx: ConfigContext | undefined;
function attachWith(): WorkerScoreboard {
  assert.ok(attachScoreboardFromEnv(lastCtx!));
  assert.ok(scoreboard !== null);
  return scoreboard;
}

function image(file: string): ScoreboardImage {
  return new ScoreboardImage(fs.readFileSync(file));
}

function slot(img: ScoreboardImage, i: number, j: number) {
  return img.slot(i, j, img.process(i), newSlotView());
}

afterEach(() => {
  detachScoreboard();
  delete process.env['PLUME_SCOREBOARD'];
  delete process.env['PLUME_CHILD_SLOT'];
  delete process.env['PLUME_GENERATION'];
});

test('the shape follows the MPM directives as event reads them', async () => {
  assert.deepEqual(scoreboardGeometry((await config([])).ctx), { serverLimit: 16, threadLimit: 64, threadsPerChild: 25, maxServers: 16 });
  assert.deepEqual(scoreboardGeometry((await config(['ThreadsPerChild 10', 'MaxRequestWorkers 50'])).ctx), { serverLimit: 16, threadLimit: 64, threadsPerChild: 10, maxServers: 5 });
  assert.deepEqual(scoreboardGeometry((await config(['ServerLimit 4', 'ThreadLimit 32', 'MaxRequestWorkers 400'])).ctx), { serverLimit: 4, threadLimit: 32, threadsPerChild: 25, maxServers: 4 });
});

test('a request through its slot: R, W, counted when logged, then waiting again', async () => {
  const { ctx, root } = await config(['ScoreBoardFile logs/sb']);
  lastCtx = ctx;
  const parent = createScoreboard(ctx, { serverLimit: 4, slotsPerChild: 8 });
  try {
    assert.equal(parent.path, path.join(root, 'logs/sb'));
    assert.deepEqual(parent.geometry, { serverLimit: 16, threadLimit: 64, threadsPerChild: 25, maxServers: 16 });
    parent.setChild(1, { pid: process.pid, generation: 0, state: 'ready' });
    const w = attach(parent.path, 1);
    const c = conn();
    w.connOpened(c);
    w.reading(c);
    let img = w.snapshot();
    assert.equal(slot(img, 1, 0).status, SERVER_BUSY_READ);
    assert.equal(img.client(1, 0), '10.0.0.1');
    assert.equal(img.process(1).connections, 1);
    const r = req(c, 'GET /x HTTP/1.1');
    w.requestStart(r);
    img = w.snapshot();
    assert.equal(slot(img, 1, 0).status, SERVER_BUSY_WRITE);
    assert.equal(slot(img, 1, 0).connCount, 1);
    assert.equal(img.request(1, 0), 'GET /x HTTP/1.1');
    assert.equal(img.vhost(1, 0), 'vh.example:8080');
    assert.equal(img.protocol(1, 0), 'http/1.1');
    c.bytesIn = 100;
    c.bytesOut = 924;
    w.requestDone(r);
    // Another reader sees it once the worker wrote (at the end of the event-loop turn).
    await new Promise((res) => setImmediate(res));
    img = image(parent.path);
    const s = slot(img, 1, 0);
    assert.equal(s.status, SERVER_READY);
    assert.equal(s.accessCount, 1);
    assert.equal(s.myAccessCount, 1);
    assert.equal(s.bytesServed, 1024);
    assert.equal(s.connCount, 0);
    assert.ok(s.stopTime >= s.startTime && s.startTime > 0);
    assert.equal(img.request(1, 0), 'GET /x HTTP/1.1', 'the last request stays shown');
    // The next request takes the next slot (the slots take turns).
    w.reading(c);
    assert.equal(slot(w.snapshot(), 1, 1).status, SERVER_BUSY_READ);
    w.connClosed(c);
    img = w.snapshot();
    assert.equal(slot(img, 1, 1).status, SERVER_READY);
    assert.equal(slot(img, 1, 1).accessCount, 0, 'a connection closed before a request: nothing counted');
    assert.equal(img.process(1).connections, 0);
    // Children the parent never recorded have no process: their slots are dead.
    assert.equal(img.process(0).pid, 0);
    assert.equal(slot(img, 0, 0).status, SERVER_DEAD);
    assert.equal(img.configGeneration, 1);
    assert.equal(img.mpmGeneration, 0);
  } finally {
    parent.close();
  }
  assert.equal(fs.existsSync(path.join(root, 'logs/sb')), false, 'the file goes with the parent');
});

test("the parent's records: starting, stopping gracefully, dead; counters survive a replacement", async () => {
  const { ctx } = await config([]);
  lastCtx = ctx;
  const parent = createScoreboard(ctx);
  try {
    assert.match(path.basename(parent.path), new RegExp(`^plume_scoreboard\\.${process.pid}$`));
    parent.setChild(2, { pid: 4242, generation: 0, state: 'starting' });
    let img = image(parent.path);
    assert.equal(slot(img, 2, 0).status, SERVER_STARTING, 'forked, not attached yet');
    assert.equal(slot(img, 2, 30).status, SERVER_DEAD);
    parent.setChild(2, { pid: process.pid, generation: 0, state: 'starting' });
    const w = attach(parent.path, 2);
    const c = conn();
    const r = req(c, 'GET /a HTTP/1.1');
    w.reading(c);
    w.requestStart(r);
    c.bytesOut = 2048;
    w.requestDone(r);
    w.flush();
    img = image(parent.path);
    assert.equal(slot(img, 2, 0).status, SERVER_READY, 'attached: serving');
    parent.setChild(2, { pid: process.pid, generation: 0, state: 'graceful' });
    img = image(parent.path);
    assert.equal(img.process(2).quiescing, true);
    assert.equal(slot(img, 2, 1).status, SERVER_GRACEFUL);
    // The worker goes; a new one takes the child slot and its counters.
    detachScoreboard();
    parent.setChild(2, { pid: 0, generation: 0, state: 'dead' });
    img = image(parent.path);
    assert.equal(img.process(2).pid, 0);
    assert.equal(slot(img, 2, 0).status, SERVER_DEAD);
    assert.equal(slot(img, 2, 0).accessCount, 1, 'a dead slot keeps its count');
    parent.setChild(2, { pid: process.pid, generation: 0, state: 'ready' });
    const w2 = attach(parent.path, 2);
    img = w2.snapshot();
    assert.equal(slot(img, 2, 0).accessCount, 1);
    assert.equal(slot(img, 2, 0).bytesServed, 2048);
    assert.equal(slot(img, 2, 0).myAccessCount, 0, 'this child has served nothing yet');
    // A graceful restart keeps the counters and the restart time; a hard one clears both.
    const restart = img.restartTime;
    assert.equal(parent.newGeneration('graceful'), 1);
    img = image(parent.path);
    assert.equal(img.configGeneration, 2);
    assert.equal(img.mpmGeneration, 1);
    assert.equal(img.restartTime, restart);
    assert.equal(slot(img, 2, 0).accessCount, 1);
    detachScoreboard();
    assert.equal(parent.newGeneration('restart'), 2);
    img = image(parent.path);
    assert.equal(img.configGeneration, 3);
    assert.ok(img.restartTime > restart);
    assert.equal(slot(img, 2, 0).accessCount, 0);
    assert.equal(img.process(2).pid, 0);
  } finally {
    parent.close();
  }
});

test('slots past ThreadsPerChild are used when every other is busy, and shared past ThreadLimit', async () => {
  const { ctx } = await config(['ThreadsPerChild 2', 'ThreadLimit 3', 'MaxRequestWorkers 32']);
  lastCtx = ctx;
  const parent = createScoreboard(ctx);
  try {
    parent.setChild(0, { pid: process.pid, generation: 0, state: 'ready' });
    const w = attach(parent.path, 0);
    const conns = [conn(), conn(), conn(), conn()];
    const reqs = conns.map((c, k) => req(c, `GET /${k} HTTP/1.1`));
    for (const r of reqs) w.requestStart(r);
    let img = w.snapshot();
    assert.deepEqual([0, 1, 2].map((j) => slot(img, 0, j).status), [SERVER_BUSY_WRITE, SERVER_BUSY_WRITE, SERVER_BUSY_WRITE]);
    for (const r of reqs) w.requestDone(r);
    img = w.snapshot();
    assert.deepEqual([0, 1, 2].map((j) => slot(img, 0, j).status), [SERVER_READY, SERVER_READY, SERVER_DEAD]);
    const total = [0, 1, 2].reduce((n, j) => n + slot(img, 0, j).accessCount, 0);
    assert.equal(total, 4, 'every request counted, the fourth in a shared slot');
  } finally {
    parent.close();
  }
});

test('SeeRequestTail keeps the last 63 characters of a long request line', async () => {
  const { ctx } = await config(['SeeRequestTail On']);
  lastCtx = ctx;
  const parent = createScoreboard(ctx);
  try {
    parent.setChild(0, { pid: process.pid, generation: 0, state: 'ready' });
    const w = attach(parent.path, 0);
    const line = `GET /${'a'.repeat(80)}/tail HTTP/1.1`;
    w.requestStart(req(conn(), line));
    assert.equal(w.snapshot().request(0, 0), line.slice(line.length - 63));
    w.requestTail = false;
    w.requestStart(req(conn(), line));
    assert.equal(w.snapshot().request(0, 1), line.slice(0, 63));
  } finally {
    parent.close();
  }
});

test('a connection opened under an earlier table is counted by the table that serves its request', async () => {
  const { ctx } = await config(['ScoreBoardFile logs/sb']);
  lastCtx = ctx;
  const parent = createScoreboard(ctx, { serverLimit: 4, slotsPerChild: 8 });
  try {
    parent.setChild(1, { pid: process.pid, generation: 0, state: 'ready' });
    parent.setChild(2, { pid: process.pid, generation: 0, state: 'ready' });
    const before = attach(parent.path, 1);
    const c = conn();
    before.connOpened(c);
    before.reading(c);
    assert.equal(before.snapshot().process(1).connections, 1);
    const after = attach(parent.path, 2);
    assert.notEqual(after, before);
    const r = req(c, 'GET /y HTTP/1.1');
    after.requestStart(r);
    assert.equal(slot(after.snapshot(), 2, 0).status, SERVER_BUSY_WRITE);
    after.requestDone(r);
    after.connClosed(c);
    const img = after.snapshot();
    assert.equal(slot(img, 2, 0).status, SERVER_READY);
    assert.equal(slot(img, 2, 0).accessCount, 1);
    assert.equal(img.request(2, 0), 'GET /y HTTP/1.1');
    assert.equal(img.process(2).connections, 0, 'not counted as open where it was not opened');
  } finally {
    parent.close();
  }
});
