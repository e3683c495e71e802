// A worker's young generation: held at its first size while the worker starts (reading a
// configuration makes V8 grow it), free to grow under load once startIdleGc has run. Each case
// runs in a Node process of its own, started with a worker's semi-space flag (the V8 flags are
// process-wide).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

const idleGc = new URL('../../../src/engine/idle-gc.js', import.meta.url).href;

/** Sizes of the young generation (bytes): first, after survivors while held, after survivors
 *  once the worker has started. */
function youngSizes(nodeFlags: string[]): { first: number; held: number; grown: number } {
  const script = `
    import * as v8 from 'node:v8';
    const { holdYoungGeneration, startIdleGc } = await import(${JSON.stringify(idleGc)});
    const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
    // Objects that survive a scavenge or two, as a configuration's do.
    const churn = () => { let keep = []; for (let i = 0; i < 400000; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 60000) keep = []; } };
    holdYoungGeneration();
    const first = young();
    churn();
    const held = young();
    startIdleGc(() => 0, true);
    churn();
    process.stdout.write(JSON.stringify({ first, held, grown: young() }));
    process.exit(0);
  `;
  const out = execFileSync(process.execPath, [...nodeFlags, '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  return JSON.parse(out) as { first: number; held: number; grown: number };
}

const MB = 1024 * 1024;

test('the young generation stays small while a worker starts, then grows under load', () => {
  const s = youngSizes(['--max-semi-space-size=8']);
  assert.ok(s.held <= 4 * MB, `held at ${s.held} bytes (first ${s.first})`);
  assert.ok(s.grown >= 8 * MB, `grown to ${s.grown} bytes once started`);
});

test("the operator's growth factor is left alone", () => {
  const s = youngSizes(['--max-semi-space-size=8', '--semi-space-growth-factor=2']);
  assert.ok(s.held >= 8 * MB, `grew to ${s.held} bytes while starting`);
});
