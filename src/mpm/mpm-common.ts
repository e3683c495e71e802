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

/** httpd's check_config of MaxRequestWorkers against ThreadsPerChild (worker and event).
 *  At the first read the warning goes bare to stderr (AH00511, AH00513); when the
 *  configuration is read again to serve, it is logged (AH00512, AH00514). */
export function checkThreaded(c: MpmConfig, ctx: ConfigContext, mpmName: string): void {
  const tpc = c.threadsPerChild ?? 25;
  const mrw = c.maxRequestWorkers;
  if (mrw === undefined) return;
  let workers = mrw;
  if (workers < tpc) {
    if (ctx.preflight) {
      ctx.logBare(mpmName, APLOG_WARNING, `AH00511: WARNING: MaxRequestWorkers of ${workers} is less than ThreadsPerChild of ${tpc}, increasing to ${tpc}. MaxRequestWorkers must be at least as large as the number of threads in a single server.`);
    } else {
      ctx.log(mpmName, APLOG_WARNING, `AH00512: MaxRequestWorkers of ${workers} is less than ThreadsPerChild of ${tpc}, increasing to match`);
    }
    workers = tpc;
  }
  if (workers % tpc !== 0) {
    const nearest = Math.floor(workers / tpc) * tpc;
    if (ctx.preflight) {
      ctx.logBare(mpmName, APLOG_WARNING, `AH00513: WARNING: MaxRequestWorkers of ${workers} is not an integer multiple of ThreadsPerChild of ${tpc}, decreasing to nearest multiple ${nearest}, for a maximum of ${nearest / tpc} servers.`);
    } else {
      ctx.log(mpmName, APLOG_WARNING, `AH00514: MaxRequestWorkers of ${workers} is not an integer multiple of ThreadsPerChild of ${tpc}, decreasing to nearest multiple ${nearest}`);
    }
    workers = nearest;
  }
  c.maxRequestWorkers = workers;
}
