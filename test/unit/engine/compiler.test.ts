// V8's optimising compiler is off while a plume process starts and on again once it serves
// (src/engine/compiler.ts), unless the operator's Node flags choose the compilers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { deferOptimisingCompiler, optimisingCompilerDeferred } from '../../../src/engine/compiler.js';

const MODULE = new URL('../../../src/engine/compiler.js', import.meta.url).href;

/** Runs `body` in a fresh node with V8's natives syntax (to ask whether a function is
 *  optimised: %GetOptimizationStatus, bit 16) and returns what it printed as JSON. warm()
 *  waits for the compiler's background jobs and calls the function once more, so that the
 *  answer does not depend on how soon a compiler thread got a CPU (under the parallel test run
 *  it sometimes had not). */
function inFreshNode(body: string): Record<string, unknown> {
  const script = `
    import { deferOptimisingCompiler, resumeOptimisingCompiler, optimisingCompilerDeferred, configurationLinesRead } from ${JSON.stringify(MODULE)};
    const optimised = (f) => (%GetOptimizationStatus(f) & 16) !== 0;
    const warm = (f) => { let t = 0; for (let n = 0; n < 400; n++) t += f(n); %WaitForBackgroundOptimization(); return t + f(1); };
    ${body}`;
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

test('deferred, hot code stays unoptimised; resumed, hot code is optimised again', () => {
  const out = inFreshNode(`
    const out = { deferred: deferOptimisingCompiler([], '') , during: optimisingCompilerDeferred() };
    function startup(k) { let s = 0; for (let i = 0; i < 5000; i++) s += (i * k) % 7; return s; }
    warm(startup);
    out.startupOptimised = optimised(startup);
    resumeOptimisingCompiler();
    out.after = optimisingCompilerDeferred();
    function serving(k) { let s = 0; for (let i = 0; i < 5000; i++) s += (i * k) % 7; return s; }
    warm(serving);
    out.servingOptimised = optimised(serving);
    console.log(JSON.stringify(out));`);
  assert.deepEqual(out, { deferred: true, during: true, startupOptimised: false, after: false, servingOptimised: true });
});

test('without deferral the same code is optimised at once (the check above can tell)', () => {
  const out = inFreshNode(`
    function startup(k) { let s = 0; for (let i = 0; i < 5000; i++) s += (i * k) % 7; return s; }
    warm(startup);
    console.log(JSON.stringify({ startupOptimised: optimised(startup) }));`);
  assert.deepEqual(out, { startupOptimised: true });
});

test('a configuration past 10,000 lines is read with the optimising compiler on', () => {
  const out = inFreshNode(`
    deferOptimisingCompiler([], '');
    configurationLinesRead(6000);
    const small = optimisingCompilerDeferred();
    configurationLinesRead(4000);
    const at = optimisingCompilerDeferred();
    configurationLinesRead(1);
    console.log(JSON.stringify({ small, at, past: optimisingCompilerDeferred() }));`);
  assert.deepEqual(out, { small: true, at: true, past: false });
});

test("the operator's own compiler flags are left alone", () => {
  for (const [argv, env] of [
    [['--jitless'], ''],
    [['--no-opt'], ''],
    [['--max-opt=2'], ''],
    [[], '--turbofan --max-old-space-size=512'],
    [['--opt'], ''],
  ] as const) {
    assert.equal(deferOptimisingCompiler(argv, env), false, `${argv.join(' ')} ${env}`);
  }
  assert.equal(optimisingCompilerDeferred(), false);
});
