// mod_logio: %I %O %S from the connection's byte counts (values measured on Apache 2.4.71
// for `curl http://127.0.0.1:18080/` and a bad-header 400), reset after logging, and %^FB
// with LogIOTrackTTFB.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import logConfig, { compileLogFormat, formatLogLine, type LogFormat } from '../../../src/modules/loggers/mod_log_config.js';
import logio from '../../../src/modules/loggers/mod_logio.js';
import type { LogItemSet } from '../../../src/modules/loggers/log-items-api.js';
import type { Request } from '../../../src/server/request/request.js';
import type { FilterInstance, FilterSpec, Brigade } from '../../../src/server/filters.js';
import { nowMicros } from '../../../src/server/log/time.js';
import { load, configError, makeRequest, requestLine, readLines, flushed } from './helpers.js';

type HookFn = (r: Request) => number | void;
const fnOf = (x: unknown): HookFn => (typeof x === 'function' ? x : (x as { fn: HookFn }).fn) as HookFn;

const logioItems = logio.decl.providers!.find((p) => p.group === 'log_items')!.provider as LogItemSet;

function fmt(s: string): LogFormat {
  return compileLogFormat(s, logioItems) as LogFormat;
}

test('%I is mod_logio\'s: unknown to mod_log_config alone, as in httpd', () => {
  assert.equal(compileLogFormat('%h %I'), 'Unrecognized LogFormat directive %I');
});

test('%I %O %S read the connection counts (measured: GET / and a 400)', () => {
  const { r } = makeRequest({ conn: { bytesIn: 79, bytesOut: 244 } });
  assert.equal(formatLogLine(fmt('I=%I O=%O S=%S FB=%^FB'), r), 'I=79 O=244 S=323 FB=-\n');
  const bad = makeRequest({ conn: { bytesIn: 96, bytesOut: 448 } }).r;
  assert.equal(formatLogLine(fmt('I=%I O=%O S=%S'), bad), 'I=96 O=448 S=544\n');
});

test('the counters start again after mod_log_config has logged the request', async () => {
  const { ctx, root } = await load('CustomLog logs/io.log "I=%I O=%O S=%S"');
  const hooks = [logConfig, logio].map((m) => fnOf(m.decl.hooks!.logTransaction));
  const { r } = makeRequest({ server: ctx.mainServer, conn: { bytesIn: 37, bytesOut: 231 } });
  requestLine(r, 'GET /index.html HTTP/1.1');
  for (const h of hooks) h(r);
  assert.equal(r.connection.bytesIn, 0);
  assert.equal(r.connection.bytesOut, 0);
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/io.log')), ['I=37 O=231 S=268']);
  await logConfig.decl.configHooks?.cleanup?.(ctx);
  // mod_logio's hook is ordered after mod_log_config's.
  const reg = logio.decl.hooks!.logTransaction as { predecessors?: readonly string[] };
  assert.deepEqual(reg.predecessors, ['mod_log_config.c']);
});

test('LogIOTrackTTFB: directive, insert_filter and %^FB', async () => {
  assert.equal(await configError('LogIOTrackTTFB maybe'), 'LogIOTrackTTFB must be On or Off');
  const { ctx } = await load('LogIOTrackTTFB On');
  const added: FilterSpec[] = [];
  const { r } = makeRequest({ server: ctx.mainServer });
  (r.rt as unknown as { addFilter: (r: Request, f: FilterSpec) => void }).addFilter = (_r, f) => { added.push(f); };
  r.perDirConfig = ctx.mainServer.lookupDefaults;
  r.startMicros = nowMicros() - 5000;
  fnOf(logio.decl.hooks!.insertFilter)(r);
  assert.equal(added.length, 1);
  assert.equal(added[0]!.name, 'LOGIO_TTFB_OUT');
  // The filter notes the time once, removes itself and passes the brigade on.
  let passed: Brigade | undefined;
  const state = { r, removed: false, remove(): void { state.removed = true; }, pass(x: Brigade): void { passed = x; } };
  const f = state as unknown as FilterInstance<undefined>;
  const bb: Brigade = [{ kind: 'eos' }];
  await added[0]!.filter(f as FilterInstance, bb);
  assert.equal(passed, bb);
  assert.equal(state.removed, true);
  const v = Number(formatLogLine(fmt('%^FB'), r).trim());
  assert.ok(v >= 5000 && v < 1_000_000, `ttfb ${v}`);
  // Off (the default): no filter, "-".
  const off = await load('LogIOTrackTTFB Off');
  const { r: r2 } = makeRequest({ server: off.ctx.mainServer });
  r2.perDirConfig = off.ctx.mainServer.lookupDefaults;
  const added2: FilterSpec[] = [];
  (r2.rt as unknown as { addFilter: (r: Request, f: FilterSpec) => void }).addFilter = (_r, f) => { added2.push(f); };
  fnOf(logio.decl.hooks!.insertFilter)(r2);
  assert.equal(added2.length, 0);
  assert.equal(formatLogLine(fmt('%^FB'), r2), '-\n');
});
