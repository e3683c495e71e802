// The numbers plume's process model runs with, worked out from the loaded MPM's directives as
// httpd's event/worker/prefork check_config do, and the messages each MPM logs for them.
//
// plume runs a fixed pool of worker processes, each serving many connections asynchronously:
//   workers = StartServers (default: the CPUs available), at most ServerLimit and at most the
//             number of processes MaxRequestWorkers allows (MaxRequestWorkers / ThreadsPerChild);
//   share   = ceil(MaxRequestWorkers / workers): the connections one worker serves at once,
//             plume's analogue of ThreadsPerChild. With the event MPM a connection waiting for
//             its next request (keep-alive) holds no share, and up to AsyncRequestWorkerFactor
//             idle connections per free share are kept besides, as event's listener does.
// DIFFERENCE: MinSpareThreads, MaxSpareThreads, MinSpareServers, MaxSpareServers, ThreadLimit
// and ThreadStackSize are accepted and have no effect: the pool does not grow or shrink.

import * as os from 'node:os';
import type { ConfigContext } from '../server/config/context.js';
import { globals } from '../server/core/globals.js';
import { APACHE_COMPAT_VERSION, BUILT, PLUME_VERSION } from '../server/version.js';
import mpmEvent from './mpm_event.js';
import mpmWorker from './mpm_worker.js';
import mpmPrefork from './mpm_prefork.js';
import type { MpmConfig } from './mpm-common.js';

export type MpmName = 'mpm_event' | 'mpm_worker' | 'mpm_prefork';

export interface ProcessModel {
  /** The MPM module loaded (its messages and defaults). */
  readonly mpm: MpmName;
  /** Child slots (ServerLimit): at most this many worker processes exist at once. */
  readonly serverLimit: number;
  /** Worker processes kept running. */
  readonly workers: number;
  /** Connections one worker serves at once. */
  readonly share: number;
  /** Connections one process serves at once (httpd -X): prefork's one, a threaded MPM's
   *  ThreadsPerChild (after check_config). */
  readonly oneProcessLimit: number;
  /** event only: idle keep-alive connections kept per free share (AsyncRequestWorkerFactor). */
  readonly asyncFactor: number | undefined;
  /** Connections a worker accepts before it is replaced; 0 = never. */
  readonly maxConnectionsPerChild: number;
  /** GracefulShutdownTimeout in seconds; 0 = wait for every connection. */
  readonly gracefulShutdownTimeout: number;
  /** ListenBacklog. */
  readonly backlog: number;
}

const DEFAULT_THREADS_PER_CHILD = 25;

function mpmOf(ctx: ConfigContext): { name: MpmName; c: MpmConfig } {
  for (const [name, m] of [['mpm_event', mpmEvent], ['mpm_worker', mpmWorker], ['mpm_prefork', mpmPrefork]] as const) {
    if (ctx.isLoaded(m.decl.name)) return { name, c: m.server(ctx.mainServer) };
  }
  return { name: 'mpm_event', c: { ...emptyConfig } };
}

const emptyConfig: MpmConfig = {
  startServers: undefined, serverLimit: undefined, threadsPerChild: undefined, threadLimit: undefined,
  minSpareThreads: undefined, maxSpareThreads: undefined, minSpareServers: undefined, maxSpareServers: undefined,
  maxRequestWorkers: undefined, maxConnectionsPerChild: undefined, asyncRequestWorkerFactor: undefined, threadStackSize: undefined,
};

/** The process model of a configuration read to serve. `cpus` is for tests. */
export function processModel(ctx: ConfigContext, cpus: number = os.availableParallelism()): ProcessModel {
  const { name, c } = mpmOf(ctx);
  const g = globals(ctx);
  let serverLimit: number;
  let maxWorkers: number;
  let daemonsLimit: number;
  let oneProcessLimit = 1;
  if (name === 'mpm_prefork') {
    serverLimit = clamp(c.serverLimit ?? 256, 1, 200000);
    maxWorkers = clamp(c.maxRequestWorkers ?? 256, 1, serverLimit);
    daemonsLimit = maxWorkers;
  } else {
    // check_config (mpm-common.ts checkThreaded) has brought these within httpd's bounds.
    serverLimit = clamp(c.serverLimit ?? 16, 1, 20000);
    const tpc = Math.max(1, c.threadsPerChild ?? DEFAULT_THREADS_PER_CHILD);
    oneProcessLimit = tpc;
    maxWorkers = Math.max(1, c.maxRequestWorkers ?? 16 * DEFAULT_THREADS_PER_CHILD);
    daemonsLimit = Math.min(serverLimit, Math.max(1, Math.floor(maxWorkers / tpc)));
    maxWorkers = Math.min(maxWorkers, serverLimit * tpc);
  }
  const start = c.startServers !== undefined && c.startServers > 0 ? c.startServers : Math.max(1, cpus);
  const workers = clamp(start, 1, daemonsLimit);
  return {
    mpm: name,
    serverLimit,
    workers,
    share: Math.max(1, Math.ceil(maxWorkers / workers)),
    oneProcessLimit,
    asyncFactor: name === 'mpm_event' ? Math.max(0, c.asyncRequestWorkerFactor ?? 2) : undefined,
    maxConnectionsPerChild: Math.max(0, c.maxConnectionsPerChild ?? 0),
    gracefulShutdownTimeout: g.gracefulShutdownTimeout,
    backlog: g.listenBacklog,
  };
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, Math.trunc(n)));
}

/** The parent's notices, with each MPM's AH numbers (measured on httpd 2.4.71). */
export interface MpmMessages {
  resuming: string;
  built: string;
  sigterm: string;
  sigwinch: string;
  sigusr1: string;
  sighup: string;
}

const TAGS: Record<MpmName, [string, string, string, string, string, string]> = {
  mpm_event: ['AH00489', 'AH00490', 'AH00491', 'AH00492', 'AH00493', 'AH00494'],
  mpm_worker: ['AH00292', 'AH00293', 'AH00295', 'AH00296', 'AH00297', 'AH00298'],
  mpm_prefork: ['AH00163', 'AH00164', 'AH00169', 'AH00170', 'AH00171', 'AH00173'],
};

export function mpmMessages(mpm: MpmName): MpmMessages {
  const [resuming, built, term, winch, usr1, hup] = TAGS[mpm];
  return {
    resuming: `${resuming}: Apache/${APACHE_COMPAT_VERSION} (Unix) plume/${PLUME_VERSION} configured -- resuming normal operations`,
    built: `${built}: Server built: ${BUILT}`,
    sigterm: `${term}: caught SIGTERM, shutting down`,
    sigwinch: `${winch}: caught SIGWINCH, shutting down gracefully`,
    // prefork words the graceful restart differently from event and worker.
    sigusr1: mpm === 'mpm_prefork' ? `${usr1}: Graceful restart requested, doing restart` : `${usr1}: SIGUSR1 received.  Doing graceful restart`,
    sighup: `${hup}: SIGHUP received.  Attempting to restart`,
  };
}
