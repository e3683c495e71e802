/**
 * Record the golden CLI outputs from real Apache httpd.
 *
 *   node dist/test/cli/record-golden.js [filter] [--keep]
 *
 * For every folder in test/golden/cli (or those whose name contains
 * `filter`), copy it to a temp dir (substituting @ROOT@), run
 *
 *   /usr/sbin/apache2 -d <tmp> -f <tmp>/httpd.conf <args>
 *
 * and write expected.txt (stderr then stdout, normalised: see golden-lib.ts)
 * and exit. expected.plume.txt / exit.plume / reason are never touched.
 *
 * `node --test dist/test/` runs every .js file under dist/test, this one
 * included: under the test runner (NODE_TEST_CONTEXT set) it does nothing.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  APACHE_BIN,
  GOLDEN_DIR,
  listCases,
  materialise,
  normaliseApacheNames,
  normaliseOutput,
  readArgs,
  readOptional,
  removeTree,
  run,
} from './golden-lib.js';

function main(): void {
  const argv = process.argv.slice(2);
  const keep = argv.includes('--keep');
  const filter = argv.find((a) => !a.startsWith('--'));
  if (!fs.existsSync(APACHE_BIN)) {
    console.error(`record-golden: ${APACHE_BIN} not found; Apache httpd 2.4 is needed to record`);
    process.exit(2);
  }
  const cases = listCases(filter);
  if (cases.length === 0) {
    console.error(`record-golden: no case folders in ${GOLDEN_DIR} match ${JSON.stringify(filter ?? '')}`);
    process.exit(2);
  }
  let changed = 0;
  const errors: string[] = [];
  for (const c of cases) {
    const root = materialise(c.dir);
    try {
      const args = readArgs(c.dir, root);
      const r = run(APACHE_BIN, ['-d', root, '-f', path.join(root, 'httpd.conf'), ...args], root);
      if (r.status === null) {
        errors.push(`${c.name}: apache2 did not exit by itself (${r.signal ?? r.error ?? 'unknown'})`);
        console.log(`${c.name} ... ERROR (no exit: ${r.signal ?? r.error ?? ''})`);
        continue;
      }
      const text = normaliseApacheNames(normaliseOutput(r.stderr + r.stdout, root));
      const expPath = path.join(c.dir, 'expected.txt');
      const exitPath = path.join(c.dir, 'exit');
      const before = readOptional(expPath);
      const beforeExit = readOptional(exitPath);
      const exitText = `${r.status}\n`;
      const isChange = before !== text || beforeExit !== exitText;
      if (isChange) changed++;
      fs.writeFileSync(expPath, text);
      fs.writeFileSync(exitPath, exitText);
      const first = text.split('\n')[0] ?? '';
      const mark = before === undefined ? ' (new)' : isChange ? ' (CHANGED)' : '';
      console.log(`${c.name} ... exit ${r.status}: ${first.length > 100 ? first.slice(0, 100) + '...' : first}${mark}`);
    } finally {
      if (keep) console.log(`  kept ${root}`);
      else removeTree(root);
    }
  }
  console.log(`\nrecorded ${cases.length - errors.length}/${cases.length} cases (${changed} new or changed)`);
  if (errors.length > 0) {
    console.log('errors:\n' + errors.map((e) => `  ${e}`).join('\n'));
    process.exit(1);
  }
}

if (process.env.NODE_TEST_CONTEXT === undefined) main();
