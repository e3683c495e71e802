// The Node flags plume gives the processes it starts: its workers (by the parent,
// src/mpm/parent.ts) and mod_cgid's daemon. Every V8 flag plume chooses is here, with the
// measurement that chose it; an operator's own flag (command line or NODE_OPTIONS) always wins.

import * as os from 'node:os';

/** Node's flags for a worker: the parent's, and unless the operator chose otherwise,
 *  - a young generation of at most 8 MB per semi-space (V8's default lets it grow to 16 MB).
 *    Measured on the benchmark kit's /proxied/1k.html at 50 connections (plume -X pinned with
 *    --single-threaded-gc, --trace-gc): one scavenge per 55 requests with 2 MB, 115 with 4 MB,
 *    225-270 with 8 MB, 270 with 16 MB; each scavenge copies the live state of every request
 *    waiting on the backend, so the collector's time per request fell about fourfold from
 *    2 to 8 MB (2.2 µs per request at 8 MB in a 13,700 requests/s run), and a worker's CPU per
 *    proxied request (user) went from 51-64 to 30-37 µs (3 runs each, same minutes; Apache 20-22).
 *    Idle memory does not grow with it: the worker holds its young generation small while it
 *    starts (idle-gc.ts holdYoungGeneration): 61 MB at start against 60 MB with 2 MB;
 *  - when there are at least as many workers as CPUs, V8's collector on the worker's own thread
 *    (--single-threaded-gc): its parallel and concurrent helper threads can only take CPU from
 *    the other workers then, and the main thread waits on them. Measured with 2 workers on 2
 *    CPUs under the 404 load: 40 % less time in scavenges (about 0.4 s against 0.67 s per
 *    worker in 10 s), a third as many pauses over 1 ms, the same requests per second. */
export function workerExecArgv(
  parent: readonly string[] = process.execArgv,
  nodeOptions = process.env['NODE_OPTIONS'] ?? '',
  workers = 1,
  cpus = os.availableParallelism(),
): string[] {
  const given = (flag: string): boolean => parent.some((a) => a.includes(flag)) || nodeOptions.includes(flag);
  const out = [...parent];
  if (!given('--max-semi-space-size')) out.push(`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`);
  const gcThreads = ['single-threaded', 'parallel-scavenge', 'concurrent-marking', 'parallel-marking', 'v8-pool-size'];
  if (workers >= cpus && !gcThreads.some(given)) out.push('--single-threaded-gc');
  return out;
}
const WORKER_SEMI_SPACE_MB = 8;

/** mod_cgid's daemon (src/modules/generators/mod_cgid.ts): a small young generation keeps the
 *  daemon's memory, and so each fork of it, small. */
export const CGID_DAEMON_EXEC_ARGV: readonly string[] = ['--max-semi-space-size=1'];
