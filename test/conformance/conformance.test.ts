/**
 * Replay the recorded conformance cases against plume.
 *
 * For every case in test/conformance/cases with a recorded
 * test/conformance/expected/<id>.json, start `node bin/plume -X -d <root>
 * -f <root>/httpd.conf`, send the same requests, and compare the normalised
 * responses and log lines with what Apache produced.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { applyOverride, compareResults, loadCases, loadExpected, plumeCommand, runCase } from './harness.js';

const cases = loadCases(process.env.CONFORMANCE_FILTER);
let compared = 0;
let matched = 0;
let skipped = 0;

for (const c of cases) {
  test(c.id, { timeout: 60000 }, async (t) => {
    const recorded = loadExpected(c.id);
    if (recorded === null) {
      skipped++;
      t.skip(`no expected file for ${c.id}; run npm run conformance:record`);
      return;
    }
    compared++;
    const expected = applyOverride(recorded, c.spec.specOverride);
    const actual = await runCase(c, plumeCommand, { expected });
    const diffs = compareResults(expected, actual, c.spec.logLines !== false);
    if (diffs.length === 0) matched++;
    assert.ok(diffs.length === 0, `${c.id}: ${c.spec.title}\n` + diffs.join('\n'));
  });
}

after(() => {
  if (skipped > 0) console.log(`(${skipped} conformance cases skipped: no expected file)`);
  console.log(`conformance: ${matched}/${compared} cases match Apache`);
});
