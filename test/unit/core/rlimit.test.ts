// RLimitCPU/MEM/NPROC's arguments (ap_unixd_set_rlimit) and the prlimit command they give.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { currentLimit, limitedCommand, parseRlimit, scriptExecFailure, type ResourceLimits } from '../../../src/server/core/rlimit.js';

function cmd(name: string): { name: string; lines: string[]; log(module: string, level: number, message: string): void } {
  const lines: string[] = [];
  return { name, lines, log: (_m, _l, message) => { lines.push(message); } };
}

test('the soft limit, "max" for the current hard one, and an optional hard limit, as httpd reads them', () => {
  const cpu = currentLimit('cpu');
  assert.ok(cpu !== undefined);
  const c = cmd('RLimitCPU');
  assert.deepEqual(parseRlimit(c, 'cpu', '5', undefined, 0), { soft: 5, hard: cpu.hard });
  assert.deepEqual(parseRlimit(c, 'cpu', '5', '7', 0), { soft: 5, hard: 7 });
  assert.deepEqual(parseRlimit(c, 'cpu', 'MAX', undefined, 0), { soft: cpu.hard, hard: cpu.hard });
  // atol: leading digits only; "max" as the second argument is no number (hard unchanged).
  assert.deepEqual(parseRlimit(c, 'cpu', '12abc', 'max', 0), { soft: 12, hard: cpu.hard });
  // As root a zero leaves the limit as it is; otherwise the soft limit becomes 0.
  assert.deepEqual(parseRlimit(c, 'cpu', 'none', undefined, 0), cpu);
  assert.deepEqual(parseRlimit(c, 'cpu', '0', undefined, 1000), { soft: 0, hard: cpu.hard });
  assert.deepEqual(c.lines, []);
  const nproc = currentLimit('nproc')!;
  const n = cmd('RLimitNPROC');
  assert.equal(parseRlimit(n, 'nproc', '10', String(nproc.hard === Infinity ? 1 : nproc.hard + 1), 1000)?.soft, 10);
  if (nproc.hard !== Infinity) assert.deepEqual(n.lines, ['AH02174: Must be uid 0 to raise maximum RLimitNPROC']);
});

test('the command: the program itself without limits, prlimit with soft:hard pairs otherwise', () => {
  const none: ResourceLimits = { rlimitCpu: undefined, rlimitMem: undefined, rlimitNproc: undefined };
  assert.deepEqual(limitedCommand(none, '/s.cgi', ['a'], () => assert.fail('no warning')), { file: '/s.cgi', args: ['a'], limited: false });
  const some: ResourceLimits = { rlimitCpu: { soft: 1, hard: Infinity }, rlimitMem: { soft: 1000, hard: 2000 }, rlimitNproc: undefined };
  let warned = false;
  const c = limitedCommand(some, '/s.cgi', ['-x; rm'], () => { warned = true; });
  if (warned) assert.deepEqual(c, { file: '/s.cgi', args: ['-x; rm'], limited: false });
  else assert.deepEqual(c, { file: '/usr/bin/prlimit', args: ['--cpu=1:unlimited', '--as=1000:2000', '--', '/s.cgi', '-x; rm'], limited: true });
});

test("prlimit's exec failure is read back as the errno; other lines are not", () => {
  const e = scriptExecFailure('prlimit: failed to execute /a b.cgi: Permission denied\n', '/a b.cgi');
  assert.equal(e?.code, 'EACCES');
  assert.equal(e?.errno, -13);
  assert.equal(scriptExecFailure('prlimit: failed to execute /other: Permission denied\n', '/a b.cgi'), null);
  assert.equal(scriptExecFailure('Permission denied\n', '/a b.cgi'), null);
});

test('fuzz: any arguments give a limit of non-negative numbers, and no exception (bounded)', () => {
  const alphabet = ['0', '1', '9', 'max', 'MAX', '-', '+', ' ', 'x', '18446744073709551615', ''];
  let seed = 7;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const word = (): string => Array.from({ length: rnd(4) }, () => alphabet[rnd(alphabet.length)]).join('');
  for (let i = 0; i < 500; i++) {
    for (const kind of ['cpu', 'mem', 'nproc'] as const) {
      const l = parseRlimit(cmd('RLimitX'), kind, word(), rnd(2) === 0 ? undefined : word(), rnd(2) === 0 ? 0 : 1000);
      assert.ok(l !== undefined && l.soft >= 0 && l.hard >= 0);
    }
  }
});
