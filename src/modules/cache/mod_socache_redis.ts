// mod_socache_redis (modules/cache/mod_socache_redis.c, httpd 2.4.39+): the "redis"
// small-object cache provider — `SSLSessionCache redis:host:6379[,host2:6379]` — objects kept
// on Redis servers with SETEX, so that several servers share TLS sessions. Keys are the
// user's namespace and the id in hex; a key's server is chosen as apr_redis does (CRC-32).
// Each process keeps one pipelined connection per Redis server, closed after
// RedisConnPoolTTL idle (default 15 s), every command bounded by RedisTimeout (default 5 s);
// a server that fails answers as a miss with httpd's log line and is retried later.

import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { SocacheProvider, SocacheSpec } from '../../server/socache.js';
import type { ServerRec } from '../../server/server-rec.js';
import { APLOG_WARNING } from '../../server/log/levels.js';
import { KvClient, type KvAddress } from '../../lib/kv/client.js';
import { RespParser, encodeCommand, type RespReply } from '../../lib/kv/resp.js';
import { logServer, NetworkCache, serverClients, ttlDirective, type NetworkCacheWords } from './socache-common.js';

interface RedisServerConfig {
  /** RedisConnPoolTTL, ms (RD_DEFAULT_SERVER_TTL: 15 s). */
  ttlMs: number;
  /** RedisTimeout, ms (RD_DEFAULT_SERVER_RWTO: 5 s). */
  timeoutMs: number;
}

const DEFAULT_PORT = 6379;
/** RD_KEY_LEN: longer keys are refused. */
const KEY_MAX = 254;
const RETRY_MS = 5000;

type RdClient = KvClient<null, RespReply>;

const WORDS: NetworkCacheWords = {
  module: 'socache_redis', label: 'Redis server', protocol: 'redis', prefix: 'scache_rd',
  codes: { set: 'AH03478', get: 'AH03479', del: 'AH03481', noHost: 'AH03475', bad: 'AH03474' },
};

class RedisCache extends NetworkCache<null, RespReply> {
  protected validKey(key: string): boolean {
    return key.length < KEY_MAX;
  }

  protected async set(c: RdClient, key: string, seconds: number, data: Buffer): Promise<boolean> {
    const r = await c.request(encodeCommand(['SETEX', key, String(seconds), data]), null);
    return r !== null && r.t === 'simple' && r.v === 'OK';
  }

  protected async get(c: RdClient, key: string): Promise<Buffer | null | undefined> {
    const r = await c.request(encodeCommand(['GET', key]), null);
    return r === null || r.t !== 'bulk' ? undefined : r.v;
  }

  protected async del(c: RdClient, key: string): Promise<boolean> {
    const r = await c.request(encodeCommand(['DEL', key]), null);
    return r !== null && r.t === 'int' && r.v === 1;
  }

  protected async serverStatus(c: RdClient, short: boolean, br: string): Promise<string | null> {
    const r = await c.request(INFO, null);
    if (r === null || r.t !== 'bulk' || r.v === null) return null;
    return redisStatus(r.v.toString('latin1'), short, br);
  }
}

const INFO = encodeCommand(['INFO']);

/** socache_rd_status' lines for one server, from its INFO text (read as apr_redis_stats reads
 *  it: 32-bit figures as unsigned 32-bit numbers, the CPU seconds as whole seconds). */
export function redisStatus(info: string, short: boolean, br: string): string {
  const kv = new Map<string, string>();
  for (const line of info.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) kv.set(line.slice(0, at), line.slice(at + 1));
  }
  const u32 = (k: string): number => (Number.parseInt(kv.get(k) ?? '0', 10) || 0) >>> 0;
  const i32 = (k: string): number => u32(k) | 0;
  const u64 = (k: string): string => /^\d+/.exec(kv.get(k) ?? '')?.[0] ?? '0';
  const [major, minor, patch] = (kv.get('redis_version') ?? '').split('.').map((x) => (Number.parseInt(x, 10) || 0) >>> 0);
  const version = `${major ?? 0}.${minor ?? 0}.${patch ?? 0}`;
  const hrs = Math.trunc(u32('uptime_in_seconds') / 3600);
  const roleWord = kv.get('role');
  const role = roleWord === 'master' ? 'master' : roleWord === 'slave' ? 'slave' : 'unknown';
  const cluster = u32('cluster_enabled') !== 0 ? 'yes' : 'no';
  if (!short) {
    return `<b>General::</b> Version: <i>${version}</i> [${u32('arch_bits')} bits], PID: <i>${u32('process_id')}</i>, Uptime: <i>${hrs} hrs</i> <br />\n` +
      `<b>Clients::</b> Connected: <i>${i32('connected_clients')}</i>, Blocked: <i>${i32('blocked_clients')}</i> <br />\n` +
      `<b>Memory::</b> Total: <i>${u64('total_system_memory')}</i>, Max: <i>${u64('maxmemory')}</i>, Used: <i>${u64('used_memory')}</i> <br />\n` +
      `<b>CPU::</b> System: <i>${u32('used_cpu_sys')}</i>, User: <i>${u32('used_cpu_user')}</i><br />\n` +
      `<b>Connections::</b> Recd: <i>${u64('total_connections_received')}</i>, Processed: <i>${u64('total_commands_processed')}</i>, Rejected: <i>${u64('rejected_connections')}</i> <br />\n` +
      `<b>Cache::</b> Hits: <i>${u64('keyspace_hits')}</i>, Misses: <i>${u64('keyspace_misses')}</i> <br />\n` +
      `<b>Net::</b> Input bytes: <i>${u64('total_net_input_bytes')}</i>, Output bytes: <i>${u64('total_net_output_bytes')}</i> <br />\n` +
      // httpd prints the connected clients as the connected slaves.
      `<b>Misc::</b> Role: <i>${role}</i>, Connected Slaves: <i>${u32('connected_clients')}</i>, Is Cluster?: <i>${cluster}</i> \n` +
      '<hr><br />\n';
  }
  return `Version: ${version} [${u32('arch_bits')} bits], PID: ${u32('process_id')}, Uptime: ${hrs} hrs ${br}\n` +
    `Clients:: Connected: ${i32('connected_clients')}, Blocked: ${i32('blocked_clients')} ${br}\n` +
    `Memory:: Total: ${u64('total_system_memory')}, Max: ${u64('maxmemory')}, Used: ${u64('used_memory')} ${br}\n` +
    `CPU:: System: ${u32('used_cpu_sys')}, User: ${u32('used_cpu_user')} ${br}\n` +
    `Connections:: Recd: ${u64('total_connections_received')}, Processed: ${u64('total_commands_processed')}, Rejected: ${u64('rejected_connections')} ${br}\n` +
    `Cache:: Hits: ${u64('keyspace_hits')}, Misses: ${u64('keyspace_misses')} ${br}\n` +
    `Net:: Input bytes: ${u64('total_net_input_bytes')}, Output bytes: ${u64('total_net_output_bytes')} ${br}\n` +
    `Misc:: Role: ${role}, Connected Slaves: ${u32('connected_clients')}, Is Cluster?: ${cluster} ${br}\n`;
}

function createServerConfig(): RedisServerConfig {
  return { ttlMs: 15_000, timeoutMs: 5_000 };
}

function redisConnPoolTtl(cmd: CmdParms<RedisServerConfig, undefined>, arg: string): string | undefined {
  const ms = ttlDirective('RedisConnPoolTTL', arg);
  if (typeof ms === 'string') return ms;
  cmd.srv.ttlMs = ms;
  return undefined;
}

function redisTimeout(cmd: CmdParms<RedisServerConfig, undefined>, arg: string): string | undefined {
  const ms = ttlDirective('RedisTimeout', arg);
  if (typeof ms === 'string') return ms;
  cmd.srv.timeoutMs = ms;
  return undefined;
}

const provider: SocacheProvider = {
  create(_ctx, arg): SocacheSpec | string {
    if (arg === undefined || arg === '') return 'List of server names required to create redis socache.';
    const servers = arg.split(',').filter((x) => x !== '');
    return {
      provider: 'redis',
      async init(ctx, s, namespace) {
        const conf = self.index >= 0 ? (self.server(ctx.mainServer) ?? createServerConfig()) : createServerConfig();
        const clients = serverClients(s, servers, DEFAULT_PORT, WORDS, (a) => newClient(s, a, conf));
        return typeof clients === 'string' ? clients : new RedisCache(s, namespace, clients, WORDS);
      },
    };
  },
};

function newClient(s: ServerRec, a: KvAddress, conf: RedisServerConfig): RdClient {
  return new KvClient<null, RespReply>(a, {
    // RedisTimeout 0: apr_redis waits without limit; plume still bounds it (one minute).
    timeoutMs: conf.timeoutMs > 0 ? conf.timeoutMs : 60_000, idleTtlMs: conf.ttlMs, retryMs: RETRY_MS,
    onDown: (why) => logServer(s, 'socache_redis', APLOG_WARNING, `PL02202: Redis server ${a.host}:${a.port} not answering (${why}); cache lookups miss until it is back`),
  }, () => new RespParser());
}

const self = defineModule<RedisServerConfig, undefined>({
  name: 'socache_redis_module',
  source: 'mod_socache_redis.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  directives: [
    directive<RedisServerConfig, undefined, 'TAKE1'>({
      name: 'RedisConnPoolTTL', args: 'TAKE1', where: RSRC_CONF,
      help: 'TTL used for the connection pool with the Redis server(s)',
      handler: redisConnPoolTtl,
    }),
    directive<RedisServerConfig, undefined, 'TAKE1'>({
      name: 'RedisTimeout', args: 'TAKE1', where: RSRC_CONF,
      help: 'R/W timeout used for the connection with the Redis server(s)',
      handler: redisTimeout,
    }),
  ],
  providers: [{ group: 'socache', name: 'redis', version: '0', provider }],
});

export default self;
