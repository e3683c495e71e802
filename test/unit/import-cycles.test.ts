// No runtime import cycles in src/ (issue 19, item 22): the layers import downward
// (configuration reader -> module API -> request -> HTTP -> server). The check runs madge on
// the built JavaScript (dist/src), where TypeScript has erased type-only imports, so what it
// sees is exactly what Node loads, dynamic import() included. `npm run cycles` runs the same.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';
import * as fs from 'node:fs';

const here = path.dirname(fileURLToPath(import.meta.url));
// dist/test/unit -> dist/src
const distSrc = path.resolve(here, '../../src');

// madge is a devDependency: a node_modules installed before it was added lacks it (run
// `npm install`); CI installs from the lock file and always runs the check.
function madgeCli(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('madge/bin/cli.js');
  } catch {
    return undefined;
  }
}
const cli = madgeCli();

test('src/ has no runtime import cycles (madge on the built JavaScript)', { skip: cli === undefined ? 'madge is not installed (npm install)' : false }, () => {
  assert.ok(fs.existsSync(path.join(distSrc, 'server', 'module.js')), `built sources expected in ${distSrc}`);
  assert.ok(cli !== undefined);
  // madge exits 1 when it finds a cycle; the JSON on stdout is what is asserted.
  const run = spawnSync(process.execPath, [cli, '--circular', '--json', '--no-spinner', '--extensions', 'js', distSrc], { encoding: 'utf8' });
  assert.equal(run.error, undefined);
  const cycles = JSON.parse(run.stdout) as string[][];
  assert.deepEqual(cycles.map((c) => c.join(' > ')), []);
});
