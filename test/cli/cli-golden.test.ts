/**
 * Golden CLI tests: plume's command line must print what Apache httpd prints.
 *
 * For every folder in test/golden/cli (see golden-lib.ts for the layout),
 * copy it to a temp dir, run
 *
 *   node <repo>/bin/plume -d <tmp> -f <tmp>/httpd.conf <args>
 *
 * and compare stderr followed by stdout (normalised: temp dir → @ROOT@,
 * error-log timestamps → [<time>], pids → [pid]) and the exit code with
 * expected.txt / exit — or expected.plume.txt / exit.plume where plume
 * deliberately differs (the folder's `reason` says why).
 *
 * In the expected files @ARGV0@ stands for the short program name ("plume"),
 * @BIN@ for argv[0] as started (the absolute path of bin/plume) and @BINPAD@
 * for as many spaces as @BIN@ is long (usage text indentation).
 *
 * Set CLI_GOLDEN_FILTER to run only the cases whose name contains it.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const goldenGaps = new Set<string>((JSON.parse(fs.readFileSync(new URL('../../../test/golden/cli/known-gaps.json', import.meta.url), 'utf8')) as { cases: string[] }).cases);
import {
  PLUME_BIN,
  describeDiff,
  fillNames,
  listCases,
  materialise,
  normaliseOutput,
  readArgs,
  readExit,
  readOptional,
  removeTree,
  run,
} from './golden-lib.js';

/** What plume prints where Apache prints ap_server_argv0 ("apache2"). */
const PLUME_ARGV0 = 'plume';
/** What plume prints where Apache prints argv[0] ("/usr/sbin/apache2"). */
const PLUME_ARGV0_FULL = PLUME_BIN;

const cases = listCases(process.env.CLI_GOLDEN_FILTER);
let matched = 0;
let compared = 0;

for (const c of cases) {
  test(`cli golden: ${c.name}`, { timeout: 60000, todo: goldenGaps.has(c.name) ? 'known gap (test/golden/cli/known-gaps.json)' : undefined }, () => {
    const plumeExpected = readOptional(path.join(c.dir, 'expected.plume.txt'));
    const apacheExpected = readOptional(path.join(c.dir, 'expected.txt'));
    const expectedRaw = plumeExpected ?? apacheExpected;
    const expectedExit = readExit(path.join(c.dir, 'exit.plume')) ?? readExit(path.join(c.dir, 'exit'));
    assert.ok(
      expectedRaw !== undefined && expectedExit !== undefined,
      `${c.name}: no expected.txt/exit recorded; run node dist/test/cli/record-golden.js ${c.name}`,
    );
    assert.ok(fs.existsSync(PLUME_BIN), `${PLUME_BIN} does not exist yet`);
    compared++;
    const expected = fillNames(expectedRaw, PLUME_ARGV0, PLUME_ARGV0_FULL);
    const root = materialise(c.dir);
    try {
      const args = readArgs(c.dir, root);
      const r = run(process.execPath, [PLUME_BIN, '-d', root, '-f', path.join(root, 'httpd.conf'), ...args], root);
      const actual = normaliseOutput(r.stderr + r.stdout, root);
      const problems: string[] = [];
      if (r.status === null) problems.push(`plume did not exit by itself (${r.signal ?? r.error ?? 'unknown'})`);
      else if (r.status !== expectedExit) problems.push(`exit code: expected ${expectedExit}, got ${r.status}`);
      if (actual !== expected) {
        problems.push(
          'output differs:\n' +
            describeDiff(expected, actual) +
            `\n--- expected (${plumeExpected !== undefined ? 'expected.plume.txt' : 'expected.txt'})\n${expected}--- actual\n${actual}---`,
        );
      }
      if (problems.length === 0) matched++;
      assert.ok(problems.length === 0, `${c.name}: plume ${args.join(' ')}\n${problems.join('\n')}`);
    } finally {
      removeTree(root);
    }
  });
}

after(() => {
  console.log(`cli golden: ${matched}/${compared} cases match`);
});
