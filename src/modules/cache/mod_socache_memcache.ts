// mod_socache_memcache (modules/cache/mod_socache_memcache.c): the "memcache" small-object
// cache provider, objects kept on one or more memcached servers —
// `SSLSessionCache memcache:host1:11211,host2:11211` — so that several servers behind a load
// balancer share TLS sessions. Keys are the user's namespace and the id in hex; the server a
// key lives on is chosen by apr_memcache's CRC-32 hash. Each process keeps one pipelined
// connection per memcached server, closed after MemcacheConnTTL idle (default 15 s); a server
// that fails or times out answers as a miss, with httpd's log line, and is retried later.

import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { SocacheProvider, SocacheSpec } from '../../server/socache.js';
import type { ServerRec } from '../../server/server-rec.js';
import { APLOG_WARNING } from '../../server/log/levels.js';
import { KvClient, type KvAddress } from '../../lib/kv/client.js';
import { McParser, STATS_COMMAND, encodeDelete, encodeGet, encodeSet, validKey, type McCommand, type McReply } from '../../lib/kv/memcache-text.js';
import { logServer, NetworkCache, serverClients, ttlDirective, type NetworkCacheWords } from './socache-common.js';

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

const WORDS: NetworkCacheWords = {
  module: 'socache_memcache', label: 'Memcached server', protocol: 'memcache', prefix: 'scache_mc',
  codes: { set: 'AH00790', get: 'AH00791', del: 'AH00793', noHost: 'AH00787', bad: 'AH00786' },
};

class MemcacheCache extends NetworkCache<McCommand, McReply> {
  protected validKey(key: string): boolean {
    return validKey(key);
  }

  protected async set(c: McClient, key: string, seconds: number, data: Buffer): Promise<boolean> {
    const r = await c.request(encodeSet(key, seconds, data), 'set');
    return r !== null && r.t === 'status' && r.v === 'STORED';
  }

  protected async get(c: McClient, key: string): Promise<Buffer | null | undefined> {
    const r = await c.request(encodeGet(key), 'get');
    if (r === null || r.t === 'error') return undefined;
    return r.t === 'value' ? r.v : null;
  }

  protected async del(c: McClient, key: string): Promise<boolean> {
    const r = await c.request(encodeDelete(key), 'delete');
    return r !== null && r.t === 'status' && r.v === 'DELETED';
  }

  protected async serverStatus(c: McClient, short: boolean, br: string): Promise<string | null> {
    const r = await c.request(STATS_COMMAND, 'stats');
    if (r === null || r.t !== 'stats') return null;
    return memcacheStatus(r.v, short, br);
  }
}

/** apr_memcache_stats' reading of a 32-bit figure (strtoul into an apr_uint32_t). */
function u32(v: string | undefined): number {
  const n = Number.parseInt(v ?? '0', 10);
  return Number.isFinite(n) ? n >>> 0 : 0;
}

/** A 64-bit figure (apr_atoi64). */
function u64(v: string | undefined): string {
  return /^\d+/.exec(v ?? '')?.[0] ?? '0';
}

/** stat_read_rtime: "seconds.microseconds" as an apr_time_t, printed as httpd casts it (unsigned). */
function rtime(v: string | undefined): number {
  const [secs, usecs] = (v ?? '').split(/[:.]/).filter((x) => x !== '');
  if (secs === undefined || usecs === undefined) return 0;
  return (Number.parseInt(secs, 10) * 1e6 + Number.parseInt(usecs, 10)) % 4294967296;
}

/** socache_mc_status' lines for one server. */
export function memcacheStatus(st: ReadonlyMap<string, string>, short: boolean, br: string): string {
  const g = (k: string): number => u32(st.get(k));
  const version = st.get('version') ?? '';
  const hrs = Math.trunc(g('uptime') / 3600);
  if (!short) {
    return `<b>Version:</b> <i>${version}</i> [${g('pointer_size')} bits], PID: <i>${g('pid')}</i>, Uptime: <i>${hrs} hrs</i> <br />\n` +
      `<b>Clients::</b> Structures: <i>${g('connection_structures')}</i>, Total: <i>${g('total_connections')}</i>, Current: <i>${g('curr_connections')}</i> <br />\n` +
      `<b>Storage::</b> Total Items: <i>${g('total_items')}</i>, Current Items: <i>${g('curr_items')}</i>, Bytes: <i>${u64(st.get('bytes'))}</i> <br />\n` +
      `<b>CPU::</b> System: <i>${rtime(st.get('rusage_system'))}</i>, User: <i>${rtime(st.get('rusage_user'))}</i> <br />\n` +
      `<b>Cache::</b> Gets: <i>${g('cmd_get')}</i>, Sets: <i>${g('cmd_set')}</i>, Hits: <i>${g('get_hits')}</i>, Misses: <i>${g('get_misses')}</i> <br />\n` +
      `<b>Net::</b> Input bytes: <i>${u64(st.get('bytes_read'))}</i>, Output bytes: <i>${u64(st.get('bytes_written'))}</i> <br />\n` +
      `<b>Misc::</b> Evictions: <i>${u64(st.get('evictions'))}</i>, MaxMem: <i>${g('limit_maxbytes')}</i>, Threads: <i>${g('threads')}</i> <br />\n` +
      '<hr><br />\n';
  }
  const i32 = (k: string): number => g(k) | 0;
  return `Version: ${version} [${g('pointer_size')} bits], PID: ${g('pid')}, Uptime: ${hrs} hrs ${br}\n` +
    `Clients:: Structures: ${i32('connection_structures')}, Total: ${i32('total_connections')}, Current: ${g('curr_connections')} ${br}\n` +
    `Storage:: Total Items: ${g('total_items')}, Current Items: ${g('curr_items')}, Bytes: ${u64(st.get('bytes'))} ${br}\n` +
    `CPU:: System: ${rtime(st.get('rusage_system'))}, User: ${rtime(st.get('rusage_user'))} ${br}\n` +
    `Cache:: Gets: ${g('cmd_get')}, Sets: ${g('cmd_set')}, Hits: ${g('get_hits')}, Misses: ${g('get_misses')} ${br}\n` +
    `Net:: Input bytes: ${u64(st.get('bytes_read'))}, Output bytes: ${u64(st.get('bytes_written'))} ${br}\n` +
    `Misc:: Evictions: ${u64(st.get('evictions'))}, MaxMem: ${g('limit_maxbytes')}, Threads: ${g('threads')} ${br}\n`;
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
        const clients = serverClients(s, servers, DEFAULT_PORT, WORDS, (a) => newClient(s, a, ttlMs));
        return typeof clients === 'string' ? clients : new MemcacheCache(s, namespace, clients, WORDS);
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
