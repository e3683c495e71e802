// V8's optimising compiler waits until a server process serves.
//
// Starting a process loads about a hundred ES modules: Node's module loader resolves and links
// every one, and that work runs hot enough for V8 to optimise parts of it (and Node's shared
// argument validators, whose use just after then completes the count). The optimising
// compiler's own code then sits in the process's resident set: pages of the node binary
// touched for those few compilations, 4.5 MB per process (measured against `node --no-opt`),
// although nothing a server does at startup needs it. So bin/plume turns it off before it
// imports the server, and it is turned on again when there is work to optimise: by the first
// connection a process serves (an idle worker stays without it), by the parent once its
// workers are started, by a tool (plume upgrade, htpasswd...) at once. The request path is
// optimised as before, when requests come.
//
// A large configuration is worth optimising while it is read: after LARGE_CONFIGURATION_LINES
// lines the compiler is turned on (20,000 virtual hosts, 160,000 lines, were read in 2.3 s
// without it and 1.1 s with it).
//
// Nothing happens when the operator's own Node flags already choose the compilers
// (--opt, --no-opt, --turbofan, --jitless, --max-opt, in the command line or NODE_OPTIONS).

import * as v8 from 'node:v8';

const CHOSEN = /--(?:no-)?(?:opt|turbofan|max-opt)\b|--jitless\b/;

let deferred = false;

/** Turns V8's optimising compiler off for the startup of this process (see above). */
export function deferOptimisingCompiler(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env['NODE_OPTIONS'] ?? '',
): boolean {
  if (deferred || CHOSEN.test([...execArgv, nodeOptions].join(' '))) return false;
  v8.setFlagsFromString('--no-opt');
  deferred = true;
  return true;
}

/** Turns it on again (once; nothing when it was not deferred). */
export function resumeOptimisingCompiler(): void {
  if (!deferred) return;
  deferred = false;
  v8.setFlagsFromString('--opt');
}

/** Lines of configuration read in this process so far (counted while deferred). */
let lines = 0;
const LARGE_CONFIGURATION_LINES = 10_000;

/** The configuration reader read `n` more lines: past LARGE_CONFIGURATION_LINES, resume. */
export function configurationLinesRead(n: number): void {
  if (!deferred) return;
  lines += n;
  if (lines > LARGE_CONFIGURATION_LINES) resumeOptimisingCompiler();
}

/** Whether the compiler is deferred now (for tests). */
export function optimisingCompilerDeferred(): boolean {
  return deferred;
}
