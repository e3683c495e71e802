// The MPM directives (httpd's mpm_common.c and the event/worker/prefork modules), shared by
// plume's three MPM modules. plume's process model is event-style on Node's cluster; the
// numbers keep their httpd meaning (MaxRequestWorkers caps connections served at once).

import { CmdParms, GLOBAL_ONLY } from '../server/config/cmd.js';
import { directive, RSRC_CONF, type DirectiveSpec } from '../server/module.js';
import { APLOG_INFO, APLOG_WARNING } from '../server/log/levels.js';
import type { ConfigContext } from '../server/config/context.js';

export interface MpmConfig {
  startServers: number | undefined;
  serverLimit: number | undefined;
  threadsPerChild: number | undefined;
  threadLimit: number | undefined;
  minSpareThreads: number | undefined;
  maxSpareThreads: number | undefined;
  minSpareServers: number | undefined;
  maxSpareServers: number | undefined;
  maxRequestWorkers: number | undefined;
  maxConnectionsPerChild: number | undefined;
  asyncRequestWorkerFactor: number | undefined;
  threadStackSize: number | undefined;
}

export function createMpmConfig(): MpmConfig {
  return {
    startServers: undefined, serverLimit: undefined, threadsPerChild: undefined, threadLimit: undefined,
    minSpareThreads: undefined, maxSpareThreads: undefined, minSpareServers: undefined, maxSpareServers: undefined,
    maxRequestWorkers: undefined, maxConnectionsPerChild: undefined, asyncRequestWorkerFactor: undefined, threadStackSize: undefined,
  };
}

type Cmd = CmdParms<MpmConfig, undefined>;
type NumField = Exclude<keyof MpmConfig, never>;

function num(field: NumField, mpmName: string) {
  return (cmd: Cmd, arg: string): string | undefined => {
    const err = cmd.checkContext(GLOBAL_ONLY);
    if (err) return err;
    if (cmd.node.name.toLowerCase() === 'maxclients') {
      cmd.ctx.logNoServer(mpmName, APLOG_INFO, 'AH00521: MaxClients is deprecated, use MaxRequestWorkers instead.');
    }
    if (cmd.node.name.toLowerCase() === 'maxrequestsperchild') {
      cmd.ctx.logNoServer('core', APLOG_INFO, 'AH00545: MaxRequestsPerChild is deprecated, use MaxConnectionsPerChild instead.');
    }
    const n = field === 'asyncRequestWorkerFactor' ? Number(arg) : Number.parseInt(arg, 10);
    cmd.srv[field] = Number.isNaN(n) ? 0 : n;
    return undefined;
  };
}

export function mpmDirectives(mpmName: string, withThreads: boolean): DirectiveSpec<MpmConfig, undefined>[] {
  const d: DirectiveSpec<MpmConfig, undefined>[] = [
    directive({ name: 'StartServers', args: 'TAKE1', where: RSRC_CONF, help: 'Number of child processes launched at server startup', handler: num('startServers', mpmName) }),
    directive({ name: 'ServerLimit', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of child processes for this run of Apache', handler: num('serverLimit', mpmName) }),
    directive({ name: 'MaxRequestWorkers', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of threads alive at the same time', handler: num('maxRequestWorkers', mpmName) }),
    directive({ name: 'MaxClients', args: 'TAKE1', where: RSRC_CONF, help: 'Deprecated name of MaxRequestWorkers', handler: num('maxRequestWorkers', mpmName) }),
    directive({ name: 'MaxConnectionsPerChild', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of connections a particular child serves before dying.', handler: num('maxConnectionsPerChild', mpmName) }),
    directive({ name: 'MaxRequestsPerChild', args: 'TAKE1', where: RSRC_CONF, help: 'Deprecated name of MaxConnectionsPerChild', handler: num('maxConnectionsPerChild', mpmName) }),
  ];
  if (withThreads) {
    d.push(
      directive({ name: 'MinSpareThreads', args: 'TAKE1', where: RSRC_CONF, help: 'Minimum number of idle threads, to handle request spikes', handler: num('minSpareThreads', mpmName) }),
      directive({ name: 'MaxSpareThreads', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of idle threads', handler: num('maxSpareThreads', mpmName) }),
      directive({ name: 'ThreadsPerChild', args: 'TAKE1', where: RSRC_CONF, help: 'Number of threads each child creates', handler: num('threadsPerChild', mpmName) }),
      directive({ name: 'ThreadLimit', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of worker threads per child process for this run of Apache - Upper limit for ThreadsPerChild', handler: num('threadLimit', mpmName) }),
      directive({ name: 'ThreadStackSize', args: 'TAKE1', where: RSRC_CONF, help: 'Size in bytes of stack used by threads handling client connections', handler: num('threadStackSize', mpmName) }),
    );
  } else {
    d.push(
      directive({ name: 'MinSpareServers', args: 'TAKE1', where: RSRC_CONF, help: 'Minimum number of idle children, to handle request spikes', handler: num('minSpareServers', mpmName) }),
      directive({ name: 'MaxSpareServers', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of idle children', handler: num('maxSpareServers', mpmName) }),
    );
  }
  if (mpmName === 'mpm_event') {
    d.push(directive({ name: 'AsyncRequestWorkerFactor', args: 'TAKE1', where: RSRC_CONF, help: 'How many additional connects will be accepted per idle worker thread', handler: num('asyncRequestWorkerFactor', mpmName) }));
  }
  return d;
}

/** httpd's compile-time limits and defaults for the threaded MPMs (event, worker). */
const MAX_SERVER_LIMIT = 20000;
const MAX_THREAD_LIMIT = 100000;
const DEFAULT_SERVER_LIMIT = 16;
const DEFAULT_THREAD_LIMIT = 64;
const DEFAULT_THREADS_PER_CHILD = 25;

/**
 * httpd's check_config of the threaded MPMs (event.c, worker.c): ServerLimit, ThreadLimit,
 * ThreadsPerChild, MaxRequestWorkers (default ServerLimit 16 x ThreadsPerChild 25, whatever
 * those are set to), StartServers and MinSpareThreads brought within bounds, each with its
 * warning. At the first read the warning goes bare to stderr (AH00497, AH00511 ...); when the
 * configuration is read again to serve, it is logged (AH00498, AH00512 ...). worker's numbers
 * are event's less 197 (AH00314 for AH00511 ...), its texts the same (measured on 2.4.71).
 * The adjusted values are stored back, for the process model and the scoreboard.
 */
export function checkThreaded(c: MpmConfig, ctx: ConfigContext, mpmName: string): void {
  const ah = (eventTag: number): string => `AH${String(mpmName === 'mpm_worker' ? eventTag - 197 : eventTag).padStart(5, '0')}`;
  const warn = (pre: number, first: string, again: string): void => {
    if (ctx.preflight) ctx.logBare(mpmName, APLOG_WARNING, `${ah(pre)}: WARNING: ${first}`);
    else ctx.log(mpmName, APLOG_WARNING, `${ah(pre + 1)}: ${again}`);
  };
  /** A count below 1, raised to 1. */
  const raisedToOne = (name: string, v: number, tag: number): number => {
    warn(tag, `${name} of ${v} not allowed, increasing to 1.`, `${name} of ${v} not allowed, increasing to 1`);
    return 1;
  };
  /** ServerLimit and ThreadLimit: within the compile-time maximum (warning `tag`) and at
   *  least 1 (warning `tag` + 2). */
  const withinBuild = (name: string, v: number, max: number, unit: string, tag: number): number => {
    if (v > max) {
      warn(tag, `${name} of ${v} exceeds compile-time limit of ${max} ${unit}, decreasing to ${max}.`,
        `${name} of ${v} exceeds compile-time limit of ${max}, decreasing to match`);
      return max;
    }
    return v < 1 ? raisedToOne(name, v, tag + 2) : v;
  };
  const serverLimit = withinBuild('ServerLimit', c.serverLimit ?? DEFAULT_SERVER_LIMIT, MAX_SERVER_LIMIT, 'servers', 497);
  const threadLimit = withinBuild('ThreadLimit', c.threadLimit ?? DEFAULT_THREAD_LIMIT, MAX_THREAD_LIMIT, 'threads', 502);
  let tpc = c.threadsPerChild ?? DEFAULT_THREADS_PER_CHILD;
  if (tpc > threadLimit) {
    warn(507, `ThreadsPerChild of ${tpc} exceeds ThreadLimit of ${threadLimit} threads, decreasing to ${threadLimit}. To increase, please see the ThreadLimit directive.`,
      `ThreadsPerChild of ${tpc} exceeds ThreadLimit of ${threadLimit}, decreasing to match`);
    tpc = threadLimit;
  } else if (tpc < 1) {
    tpc = raisedToOne('ThreadsPerChild', tpc, 509);
  }
  let workers = c.maxRequestWorkers ?? DEFAULT_SERVER_LIMIT * DEFAULT_THREADS_PER_CHILD;
  if (workers < tpc) {
    warn(511, `MaxRequestWorkers of ${workers} is less than ThreadsPerChild of ${tpc}, increasing to ${tpc}. MaxRequestWorkers must be at least as large as the number of threads in a single server.`,
      `MaxRequestWorkers of ${workers} is less than ThreadsPerChild of ${tpc}, increasing to match`);
    workers = tpc;
  }
  let daemons = Math.floor(workers / tpc);
  if (workers % tpc !== 0) {
    const nearest = daemons * tpc;
    warn(513, `MaxRequestWorkers of ${workers} is not an integer multiple of ThreadsPerChild of ${tpc}, decreasing to nearest multiple ${nearest}, for a maximum of ${daemons} servers.`,
      `MaxRequestWorkers of ${workers} is not an integer multiple of ThreadsPerChild of ${tpc}, decreasing to nearest multiple ${nearest}`);
    workers = nearest;
  }
  if (daemons > serverLimit) {
    warn(515, `MaxRequestWorkers of ${workers} would require ${daemons} servers and would exceed ServerLimit of ${serverLimit}, decreasing to ${serverLimit * tpc}. To increase, please see the ServerLimit directive.`,
      `MaxRequestWorkers of ${workers} would require ${daemons} servers and exceed ServerLimit of ${serverLimit}, decreasing to ${serverLimit * tpc}`);
    daemons = serverLimit;
    workers = serverLimit * tpc;
  }
  if (c.startServers !== undefined && c.startServers < 1) c.startServers = raisedToOne('StartServers', c.startServers, 517);
  if (c.minSpareThreads !== undefined && c.minSpareThreads < 1) {
    warn(519, `MinSpareThreads of ${c.minSpareThreads} not allowed, increasing to 1 to avoid almost certain server failure. Please read the documentation.`,
      `MinSpareThreads of ${c.minSpareThreads} not allowed, increasing to 1`);
    c.minSpareThreads = 1;
  }
  c.serverLimit = serverLimit;
  c.threadLimit = threadLimit;
  c.threadsPerChild = tpc;
  c.maxRequestWorkers = workers;
}
