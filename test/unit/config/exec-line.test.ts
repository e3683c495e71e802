// ap_get_exec_line for "exec:" directive arguments (src/server/config/exec-line.ts).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { execLineArg } from '../../../src/server/config/exec-line.js';

const asIs = (p: string): string => p;

test('exec: arguments: the first line the program prints, up to CR or LF', () => {
  assert.equal(execLineArg('plain', asIs), 'plain');
  assert.equal(execLineArg('exec:', asIs), 'exec:');
  assert.equal(execLineArg('exec:/bin/echo secret word', asIs), 'secret word');
  assert.equal(execLineArg("exec:/bin/sh -c 'printf \"a\\rb\\nc\"'", asIs), 'a');
  assert.equal(execLineArg('exec:/bin/true', asIs), '');
  // The program is found relative to ServerRoot.
  assert.equal(execLineArg('exec:echo x', (p) => `/bin/${p}`), 'x');
  // Neither the exit status nor a failed exec is an error (APR has forked already): no line.
  assert.equal(execLineArg('exec:/nonexistent/prog a', asIs), '');
  assert.equal(execLineArg("exec:/bin/sh -c 'echo out; exit 3'", asIs), 'out');
  // The program runs in its own directory.
  assert.equal(execLineArg('exec:/bin/pwd', asIs), fs.realpathSync('/bin'));
  assert.equal((execLineArg("exec:/bin/sh -c 'head -c 9000 /dev/zero | tr \\\\0 x'", asIs) as string).length, 8191);
  assert.deepEqual(execLineArg('exec:   ', asIs), { error: 'Unable to parse exec arguments from    ' });
});
