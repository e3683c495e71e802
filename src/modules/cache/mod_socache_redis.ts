// mod_socache_redis (modules/cache/mod_socache_redis.c, httpd 2.4.39+): the "redis"
// small-object cache provider — `SSLSessionCache redis:host:6379[,host2:6379]` — objects kept
// on Redis servers with SETEX, so that several servers share TLS sessions. Keys are the
// user's namespace and the id in hex; a key's server is chosen as apr_redis does (CRC-32).
// Each process keeps one pipelined connection per Redis server, closed after
// RedisConnPoolTTL idle (default 15 s), every command bounded by RedisTimeout (default 5 s);
// a server that fails answers as a miss with httpd's log line and is retried later.

import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { SocacheInstance, SocacheProvider, SocacheSpec } from '../../server/socache.js';
import type { ServerRec } from '../../server/server-rec.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { KvClient, parseServer, type KvAddress } from '../../lib/kv/client.js';
import { RespParser, encodeCommand, type RespReply } from '../../lib/kv/resp.js';
import { cacheKey, keyHash, logServer, ttlDirective } from './socache-common.js';

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

class RedisCache implements SocacheInstance {
  constructor(
    private readonly s: ServerRec,
    private readonly namespace: string,
    private readonly clients: readonly RdClient[],
  ) {}

  private pick(key: string): RdClient {
    return this.clients[keyHash(key) % this.clients.length]!;
  }

  async store(id: Buffer, expiry: number, data: Buffer): Promise<boolean> {
    const key = cacheKey(this.namespace, id);
    if (key.length >= KEY_MAX) return false;
    const seconds = Math.floor((expiry - Date.now()) / 1000);
    if (seconds <= 0) return false;
    const r = await this.pick(key).request(encodeCommand(['SETEX', key, String(seconds), data]), null);
    if (r === null || r.t !== 'simple' || r.v !== 'OK') {
      logServer(this.s, 'socache_redis', APLOG_CRIT, `AH03478: scache_rd: error setting key '${key}' with ${data.length} bytes of data`);
      return false;
    }
    return true;
  }

  async retrieve(id: Buffer): Promise<Buffer | null> {
    const key = cacheKey(this.namespace, id);
    if (key.length >= KEY_MAX) return null;
    const r = await this.pick(key).request(encodeCommand(['GET', key]), null);
    if (r === null || r.t !== 'bulk') {
      logServer(this.s, 'socache_redis', APLOG_ERR, `AH03479: scache_rd: 'retrieve' FAIL`);
      return null;
    }
    return r.v;
  }

  async remove(id: Buffer): Promise<void> {
    const key = cacheKey(this.namespace, id);
    if (key.length >= KEY_MAX) return;
    const r = await this.pick(key).request(encodeCommand(['DEL', key]), null);
    if (r === null || r.t !== 'int' || r.v !== 1) {
      logServer(this.s, 'socache_redis', APLOG_DEBUG, `AH03481: scache_rd: error deleting key '${key}' `);
    }
  }

  status(): string {
    return this.clients.map((c) => `Redis server: ${c.addr.host}:${c.addr.port} [${c.up ? 'Up' : 'Down'}]`).join('\n');
  }

  async destroy(): Promise<void> {
    for (const c of this.clients) c.close();
  }
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
        const clients: RdClient[] = [];
        for (const item of servers) {
          const a = parseServer(item, DEFAULT_PORT);
          if (typeof a === 'string') {
            const text = a === 'no host' ? `AH03475: Failed to Parse Server, no hostname specified: '${item}'` : `AH03474: Failed to Parse redis Server: '${item}'`;
            logServer(s, 'socache_redis', APLOG_CRIT, text);
            return text;
          }
          clients.push(newClient(s, a, conf));
        }
        return new RedisCache(s, namespace, clients);
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
