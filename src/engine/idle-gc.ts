// Memory back after a burst: under load V8 grows its heap (the young generation above all)
// and keeps it when the load stops, so an idle process would stay at its high-water mark.
// A serving process that has read nothing for a while after reading a lot (the caller's
// activity counter: the per-turn stat() cache's count of reads) runs one full
// garbage collection, which returns the emptied pages to the system.
//
// A worker also runs one full collection before it asks for its listeners (its configuration
// read, its modules' child_init hooks run): what reading the configuration and loading the
// modules left behind is garbage then, and is freed before serving allocates on top of it.
// Measured on the benchmark's configuration: a worker's VmRSS after its first request 59.2 MB
// without it, 58.3 MB with it (median of 3), for one collection of 40-50 ms (on a busy
// machine) while no connection waits on it. (`-X` listens before it could collect, so it does
// not.)
//
// The collector is reached through V8's --expose-gc flag, set at run time (node:v8), so
// that `node bin/plume` needs no extra command-line flag.

import * as v8 from 'node:v8';
import * as vm from 'node:vm';

/** How often the process looks whether it read anything. */
const CHECK_MS = 400;
/** Growth of the resident set since the last collection that makes one worth running. */
const GROWTH_BYTES = 16 * 1024 * 1024;

let started = false;

/** Whether holdYoungGeneration() held it (and startIdleGc should let it grow again). */
let held = false;

/**
 * Keeps V8's young generation at its first size while a worker starts. V8 grows the young
 * generation (up to --max-semi-space-size) when much of it survives a scavenge, which reading
 * a configuration and loading modules does, and keeps it grown: a worker given 8 MB
 * semi-spaces would start 4 MB larger than one given 2 MB (measured: VmRSS at idle 64 against
 * 60 MB on the benchmark kit's configuration). V8 reads the growth factor each time it would
 * grow (it raises a factor under 2 given on the command line to 2 as it starts, hence the flag
 * set here at run time); startIdleGc sets V8's default (2) back, so that the young generation
 * grows under load only. Not when the operator chose a growth factor.
 */
export function holdYoungGeneration(): void {
  const nodeOptions = process.env['NODE_OPTIONS'] ?? '';
  if (process.execArgv.some((a) => a.includes('--semi-space-growth-factor')) || nodeOptions.includes('--semi-space-growth-factor')) return;
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  held = true;
}

function youngGenerationGrows(): void {
  if (!held) return;
  held = false;
  v8.setFlagsFromString('--semi-space-growth-factor=2');
}

/** Starts watching (once per process), after one collection when `collectFirst` (a worker
 *  that has not asked for its listeners yet); does nothing where the collector cannot be
 *  reached. */
export function startIdleGc(activity: () => number, collectFirst = false): void {
  if (started) return;
  started = true;
  let collect: (() => void) | undefined;
  try {
    v8.setFlagsFromString('--expose-gc');
    const g: unknown = vm.runInNewContext('gc');
    if (typeof g === 'function') collect = g as () => void;
  } catch {
    youngGenerationGrows();
    return;
  }
  if (collect === undefined) { youngGenerationGrows(); return; }
  const gc = collect;
  if (collectFirst) gc();
  youngGenerationGrows();
  let seen = activity();
  let busy = false;
  let base = process.memoryUsage.rss();
  const timer = setInterval(() => {
    const n = activity();
    if (n !== seen) { seen = n; busy = true; return; }
    if (!busy) return;
    busy = false;
    if (process.memoryUsage.rss() < base + GROWTH_BYTES) return;
    gc();
    base = process.memoryUsage.rss();
  }, CHECK_MS);
  timer.unref();
}
