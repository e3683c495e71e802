// What a piece of work leaves in V8's old generation when only scavenges run: the bytes an
// object graph promotes when something keeps it alive past the young generation.

import * as v8 from 'node:v8';
import * as vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as (o?: { type: 'minor' | 'major'; execution: 'sync' }) => void;
v8.setFlagsFromString('--no-expose-gc');

const oldSpace = (): number => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;

/** Runs `round` `rounds` times with a scavenge after each, and returns how much the old
 *  generation grew (bytes), starting from a full collection. */
export function promotedBy(rounds: number, round: (i: number) => void): number {
  gc({ type: 'major', execution: 'sync' });
  const before = oldSpace();
  for (let i = 0; i < rounds; i++) {
    round(i);
    gc({ type: 'minor', execution: 'sync' });
  }
  return oldSpace() - before;
}
