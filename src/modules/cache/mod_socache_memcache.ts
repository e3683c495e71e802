// mod_socache_memcache (modules/cache/mod_socache_memcache.c): the "memcache" small-object
// cache provider, objects kept on one or more memcached servers —
// `SSLSessionCache memcache:host1:11211,host2:11211` — so that several servers behind a load
// balancer share TLS sessions. Keys are the user's namespace and the id in hex; the server a
// key lives on is chosen by apr_memcache's CRC-32 hash. Each process keeps one pipelined
// connection per memcached server, closed after MemcacheConnTTL idle (default 15 s); a server
// that fails or times out answers as a miss, with httpd's log line, and is retried later.

import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { SocacheInstance, SocacheProvider, SocacheSpec } from '../../server/socache.js';
import type { ServerRec } from '../../server/server-rec.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { KvClient, parseServer, type KvAddress } from '../../lib/kv/client.js';
import { McParser, encodeDelete, encodeGet, encodeSet, validKey, type McCommand, type McReply } from '../../lib/kv/memcache-text.js';
import { cacheKey, keyHash, logServer, ttlDirective } from './socache-common.js';

interface MemcacheServerConfig {
  /** MemcacheConnTTL, ms (MC_DEFAULT_SERVER_TTL: 15 s). */
  ttlMs: number;
}

const DEFAULT_PORT = 11211;
/** How long one memcached operation may take (apr_memcache's default socket timeout). */
const TIMEOUT_MS = 5000;
/** A failed server is left alone this long (apr_memcache retries a dead server later). */
const RETRY_MS = 5000;

type McClient = KvClient<McCommand, McReply>;

class MemcacheCache implements SocacheInstance {
  constructor(
    private readonly s: ServerRec,
    private readonly namespace: string,
    private readonly clients: readonly McClient[],
  ) {}

  private pick(key: string): McClient {
    return this.clients[keyHash(key) % this.clients.length]!;
  }

  async store(id: Buffer, expiry: number, data: Buffer): Promise<boolean> {
    const key = cacheKey(this.namespace, id);
    if (!validKey(key)) return false;
    const seconds = Math.floor((expiry - Date.now()) / 1000);
    if (seconds <= 0) return false;
    const r = await this.pick(key).request(encodeSet(key, seconds, data), 'set');
    if (r === null || r.t !== 'status' || r.v !== 'STORED') {
      logServer(this.s, 'socache_memcache', APLOG_CRIT, `AH00790: scache_mc: error setting key '${key}' with ${data.length} bytes of data`);
      return false;
    }
    return true;
  }

  async retrieve(id: Buffer): Promise<Buffer | null> {
    const key = cacheKey(this.namespace, id);
    if (!validKey(key)) return null;
    const r = await this.pick(key).request(encodeGet(key), 'get');
    if (r === null || r.t === 'error') {
      logServer(this.s, 'socache_memcache', APLOG_ERR, `AH00791: scache_mc: 'retrieve' FAIL`);
      return null;
    }
    return r.t === 'value' ? r.v : null;
  }

  async remove(id: Buffer): Promise<void> {
    const key = cacheKey(this.namespace, id);
    if (!validKey(key)) return;
    const r = await this.pick(key).request(encodeDelete(key), 'delete');
    if (r === null || r.t !== 'status' || r.v !== 'DELETED') {
      logServer(this.s, 'socache_memcache', APLOG_DEBUG, `AH00793: scache_mc: error deleting key '${key}' `);
    }
  }

  status(): string {
    return this.clients.map((c) => `Memcached server: ${c.addr.host}:${c.addr.port} [${c.up ? 'Up' : 'Down'}]`).join('\n');
  }

  async destroy(): Promise<void> {
    for (const c of this.clients) c.close();
  }
}

function createServerConfig(): MemcacheServerConfig {
  return { ttlMs: 15_000 };
}

function memcacheConnTtl(cmd: CmdParms<MemcacheServerConfig, undefined>, arg: string): string | undefined {
  const ms = ttlDirective('MemcacheConnTTL', arg);
  if (typeof ms === 'string') return ms;
  cmd.srv.ttlMs = ms;
  return undefined;
}

const provider: SocacheProvider = {
  create(_ctx, arg): SocacheSpec | string {
    if (arg === undefined || arg === '') return 'List of server names required to create memcache socache.';
    const servers = arg.split(',').filter((x) => x !== '');
    const spec: SocacheSpec = {
      provider: 'memcache',
      async init(ctx, s, namespace) {
        const main = ctx.mainServer;
        const ttlMs = self.index >= 0 ? (self.server(main) ?? createServerConfig()).ttlMs : 15_000;
        const clients: McClient[] = [];
        for (const item of servers) {
          const a = parseServer(item, DEFAULT_PORT);
          if (typeof a === 'string') {
            const text = a === 'no host' ? `AH00787: Failed to Parse Server, no hostname specified: '${item}'` : `AH00786: Failed to Parse memcache Server: '${item}'`;
            logServer(s, 'socache_memcache', APLOG_CRIT, text);
            return text;
          }
          clients.push(newClient(s, a, ttlMs));
        }
        return new MemcacheCache(s, namespace, clients);
      },
    };
    return spec;
  },
};

function newClient(s: ServerRec, a: KvAddress, ttlMs: number): McClient {
  return new KvClient<McCommand, McReply>(a, {
    timeoutMs: TIMEOUT_MS, idleTtlMs: ttlMs, retryMs: RETRY_MS,
    // plume's own line: httpd's apr_memcache marks the server dead silently.
    onDown: (why) => logServer(s, 'socache_memcache', APLOG_WARNING, `PL02201: memcached server ${a.host}:${a.port} not answering (${why}); cache lookups miss until it is back`),
  }, () => new McParser());
}

const self = defineModule<MemcacheServerConfig, undefined>({
  name: 'socache_memcache_module',
  source: 'mod_socache_memcache.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  directives: [
    directive<MemcacheServerConfig, undefined, 'TAKE1'>({
      name: 'MemcacheConnTTL', args: 'TAKE1', where: RSRC_CONF,
      help: 'TTL used for the connection pool with the Memcache server(s)',
      handler: memcacheConnTtl,
    }),
  ],
  providers: [{ group: 'socache', name: 'memcache', version: '0', provider }],
});

export default self;
