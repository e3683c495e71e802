#!/usr/bin/env node
// The httpd-tests gate: runs Apache's own test suite (the runner of ../shared/httpd-tests, see
// docs/httpd-tests.md) against bin/plume and fails when a file passes fewer subtests than the
// count recorded in test/httpd-tests-counts.json. A file below its count is run once more on
// its own before it is called a drop, so that one slow moment of a busy machine does not fail
// the gate; a file above its count is reported so the counts can be raised (`--update`).
//
//   node tools/httpd-tests-gate.mjs [--update] [--runner PATH] [--port N]
//
// Without the runner (a machine without the shared material) the gate says so and passes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const countsFile = path.join(root, 'test', 'httpd-tests-counts.json');
const args = process.argv.slice(2);
let update = false;
let runner = process.env.HTTPD_TESTS_RUNNER ?? '';
let port = '8529';
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--update') update = true;
  else if (args[i] === '--runner') runner = args[++i];
  else if (args[i] === '--port') port = args[++i];
  else { console.error(`httpd-tests-gate: unknown argument ${args[i]}`); process.exit(2); }
}
if (!runner) {
  runner = [path.join(root, '..', 'shared', 'httpd-tests', 'run'), '/work/shared/httpd-tests/run']
    .find((p) => fs.existsSync(p)) ?? '';
}
if (!runner || !fs.existsSync(runner)) {
  console.log('httpd-tests-gate: no httpd-tests runner on this machine (../shared/httpd-tests/run); skipped');
  process.exit(0);
}

/** Runs the suite (or some files) and returns file -> passed subtests. */
function run(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-gate-'));
  try {
    const table = path.join(dir, 'table.md');
    const r = spawnSync(runner, ['--port', port, '--table', table, ...files], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    if (!fs.existsSync(table)) {
      // The runner could not run the suite at all (its Debian packages, the www-data user): that
      // is the machine, not plume; say so loudly and do not count it as a drop.
      console.error(`httpd-tests-gate: the runner wrote no table (exit ${r.status}); gate skipped`);
      process.exit(0);
    }
    const passed = new Map();
    for (const line of fs.readFileSync(table, 'utf8').split('\n')) {
      const cells = line.split('|').map((c) => c.trim());
      if (cells.length < 8 || !cells[1].startsWith('t/')) continue;
      passed.set(cells[1], Number(cells[3]) || 0);
    }
    return passed;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const counts = fs.existsSync(countsFile) ? JSON.parse(fs.readFileSync(countsFile, 'utf8')) : {};
const got = run([]);
let total = 0;
for (const n of got.values()) total += n;
console.log(`httpd-tests-gate: ${got.size} files, plume passed ${total} subtests`);

if (update) {
  const out = Object.fromEntries([...got.entries()].sort(([a], [b]) => a.localeCompare(b)));
  fs.writeFileSync(countsFile, JSON.stringify(out, null, 1) + '\n');
  console.log(`httpd-tests-gate: wrote ${path.relative(root, countsFile)}`);
  process.exit(0);
}

let below = Object.keys(counts).filter((f) => (got.get(f) ?? 0) < counts[f]);
if (below.length) {
  console.log(`httpd-tests-gate: below the recorded count, running again on their own: ${below.join(' ')}`);
  const again = run(below);
  for (const f of below) got.set(f, Math.max(got.get(f) ?? 0, again.get(f) ?? 0));
  below = below.filter((f) => (got.get(f) ?? 0) < counts[f]);
}
for (const [f, n] of got) if (n > (counts[f] ?? 0)) console.log(`httpd-tests-gate: ${f} passes ${n}, recorded ${counts[f] ?? 0} (raise it with --update)`);
if (below.length) {
  for (const f of below) console.error(`httpd-tests-gate: ${f} passed ${got.get(f) ?? 0}, recorded ${counts[f]}`);
  console.error('httpd-tests-gate: FAILED: a file of Apache\'s test suite passes fewer subtests than before');
  process.exit(1);
}
console.log('httpd-tests-gate: no file below its recorded count');
