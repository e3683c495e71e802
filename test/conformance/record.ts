/**
 * Record the expected results of the conformance cases from real Apache httpd.
 *
 *   node dist/test/conformance/record.js [filter]
 *
 * Runs every case (or those whose id contains `filter`) on
 * `/usr/sbin/apache2 -X -d <root> -f <root>/httpd.conf` and writes
 * test/conformance/expected/<case-id>.json.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { APACHE_BIN, EXPECTED_DIR, apacheCommand, expectedPath, loadCases, runCase, stableStringify, toExpectedFile } from './harness.js';

function apacheVersion(): string {
  try {
    const out = execFileSync(APACHE_BIN, ['-v'], { encoding: 'utf8' });
    const m = /Server version:\s*(\S+)/.exec(out);
    return m?.[1] ?? 'Apache';
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(APACHE_BIN)) {
    console.error(`record: ${APACHE_BIN} not found; Apache httpd 2.4 is needed to record`);
    process.exit(2);
  }
  const filter = process.argv[2];
  const keep = process.argv.includes('--keep');
  const cases = loadCases(filter);
  if (cases.length === 0) {
    console.error(`record: no cases match ${JSON.stringify(filter ?? '')}`);
    process.exit(2);
  }
  const version = apacheVersion();
  let ok = 0;
  let startupFailures = 0;
  const errors: string[] = [];
  const t0 = Date.now();
  for (const [i, c] of cases.entries()) {
    const label = `[${i + 1}/${cases.length}] ${c.id}`;
    const t = Date.now();
    try {
      const result = await runCase(c, apacheCommand, { keep });
      const file = toExpectedFile(c, result, version);
      const p = expectedPath(c.id);
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, stableStringify(file) + '\n');
      let summary: string;
      if (result.startup !== undefined) {
        startupFailures++;
        summary = `startup failure (exit ${String(result.startup.exitCode)}): ${result.startup.stderr[0] ?? ''}`;
      } else {
        const statuses = (result.requests ?? []).map((s) => s.responses.map((r) => (r.statusLine ?? '(none)').replace(/^HTTP\/\S+ /, '')).join('+'));
        const incomplete = (result.requests ?? []).some((s) => s.responses.some((r) => r.incomplete !== undefined));
        summary = statuses.join(', ') + (incomplete ? '  [incomplete response!]' : '');
      }
      ok++;
      console.log(`${label} ... ${summary} (${Date.now() - t} ms)`);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      errors.push(`${c.id}: ${msg}`);
      console.log(`${label} ... ERROR ${msg}`);
    }
  }
  console.log(`\nrecorded ${ok}/${cases.length} cases from ${version} (${startupFailures} startup failures) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  if (filter === undefined) {
    // Expected files whose case no longer exists.
    const ids = new Set(cases.map((c) => c.id));
    const orphans: string[] = [];
    const scan = (dir: string, rel: string): void => {
      if (!fs.existsSync(dir)) return;
      for (const f of fs.readdirSync(dir)) {
        const p = path.join(dir, f);
        const r = rel === '' ? f : `${rel}/${f}`;
        if (fs.statSync(p).isDirectory()) scan(p, r);
        else if (f.endsWith('.json') && !ids.has(r.slice(0, -5))) orphans.push(p);
      }
    };
    scan(EXPECTED_DIR, '');
    if (orphans.length > 0) console.log('expected files without a case (delete them?):\n' + orphans.map((o) => `  ${o}`).join('\n'));
  }
  if (errors.length > 0) {
    console.log('errors:\n' + errors.map((e) => `  ${e}`).join('\n'));
    process.exit(1);
  }
}

if (process.env.NODE_TEST_CONTEXT !== undefined) {
  // `node --test dist/test/` runs every .js file under a test/ directory, this one
  // included: never record from there, just show up as a skipped entry.
  const { test } = await import('node:test');
  test('conformance/record.js is the recorder CLI, not a test', { skip: 'run it with npm run conformance:record' }, () => {});
} else {
  await main();
}
