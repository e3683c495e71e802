// Log targets shared by processes (src/server/log/log-writer.ts): the parent opens a file or a
// piped logger, other processes write through the inherited descriptor. Every line arrives
// whole and none is lost, though each writer sends batches far larger than what a pipe
// delivers in one piece (PIPE_BUF).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { shareLogTargets, beginLogGeneration, sharedLogDescriptors, openLogTarget } from '../../src/server/log/log-writer.js';
import { REPO, waitFor } from './process-lib.js';

const WRITERS = 3;
/** Lines per writer: ROUNDS turns of its event loop, each one batch of LINES / ROUNDS lines. */
const LINES = 30000;
const ROUNDS = 10;
const PAD = 'x'.repeat(130);

/** Runs WRITERS processes writing LINES lines each, in one turn of their event loop, to the
 *  target `spec` through descriptor `fd` (their fd 3, the parent's key `key`). */
async function writers(spec: string, key: string, fd: number): Promise<void> {
  const lib = pathToFileURL(path.join(REPO, 'dist/src/server/log/log-writer.js')).href;
  const script = [
    `import { inheritLogDescriptors, openLogTarget } from ${JSON.stringify(lib)};`,
    `inheritLogDescriptors(new Map([[process.argv[1], 3]]));`,
    `const s = openLogTarget(process.argv[2], (p) => p);`,
    // All writers start together, so that their batches meet in the pipe.
    `while (Date.now() < Number(process.argv[3])) {}`,
    `let i = 0;`,
    `const round = () => { for (const end = i + ${LINES / ROUNDS}; i < end; i++) s.write(process.pid + ' ' + i + ' ${PAD}\\n'); if (i < ${LINES}) setImmediate(round); };`,
    `round();`,
  ].join('\n');
  const start = String(Date.now() + 1500);
  await Promise.all(Array.from({ length: WRITERS }, () => new Promise<void>((resolve, reject) => {
    const p = spawn(process.execPath, ['--input-type=module', '-e', script, key, spec, start], { stdio: ['ignore', 'inherit', 'inherit', fd] });
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer exited ${code}`))));
  })));
}

function check(text: string, extra: number): void {
  const lines = text.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, WRITERS * LINES + extra);
  const next = new Map<string, number>();
  for (const l of lines) {
    const m = /^(\d+) (\d+) x{130}$/.exec(l);
    if (!m) { assert.match(l, /^parent \d+$/); continue; }
    const n = next.get(m[1]!) ?? 0;
    assert.equal(Number(m[2]), n, 'each writer\'s lines in order, none missing');
    next.set(m[1]!, n + 1);
  }
  assert.equal(next.size, WRITERS);
}

test('several processes write whole lines through one piped logger of the parent', { timeout: 60000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-shared-pipe-'));
  try {
    const out = path.join(dir, 'out');
    shareLogTargets();
    beginLogGeneration();
    const spec = `|$cat > ${out}`;
    const sink = openLogTarget(spec, (p) => p);
    const shared = sharedLogDescriptors();
    assert.equal(shared.length, 1);
    assert.equal(shared[0]!.key, `pipe:${spec}#0`);
    for (let i = 0; i < 100; i++) sink.write(`parent ${i}\n`);
    await writers(spec, shared[0]!.key, shared[0]!.fd);
    sink.close();
    await waitFor('the logger to write everything', () => {
      try { return fs.readFileSync(out, 'utf8').split('\n').length > WRITERS * LINES + 100; } catch { return false; }
    }, 10000);
    check(fs.readFileSync(out, 'utf8'), 100);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('several processes append whole lines to one log file of the parent', { timeout: 60000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-shared-file-'));
  try {
    const out = path.join(dir, 'access_log');
    shareLogTargets();
    beginLogGeneration();
    const sink = openLogTarget(out, (p) => p);
    const [shared] = sharedLogDescriptors();
    assert.equal(shared!.key, `file:${out}#0`);
    await writers(out, shared!.key, shared!.fd);
    sink.write('parent 0\n');
    sink.close();
    check(fs.readFileSync(out, 'utf8'), 1);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
