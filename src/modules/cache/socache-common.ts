// What the mod_socache_* modules share: the key an id is stored under on a cache server
// (httpd's "namespace:" + hex id), a server-scoped log line, the "TTL"/timeout directive
// argument as ap_timeout_parameter_parse reads it, and the plumbing of the network caches
// (memcache, redis): one client per listed server, the key's server by apr's CRC-32 hash,
// store/retrieve/remove with httpd's log lines, each server's status lines.

import type { ServerRec } from '../../server/server-rec.js';
import type { SocacheInstance } from '../../server/socache.js';
import type { Request } from '../../server/request/request.js';
import { AP_STATUS_SHORT, type StatusWriter } from '../../server/status-hook.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_ERR, levelFor } from '../../server/log/levels.js';
import { parseServer, type KvAddress, type KvClient } from '../../lib/kv/client.js';

/** The key of `id` under `namespace` ("mod_ssl-sess:" + lowercase hex). */
export function cacheKey(namespace: string, id: Buffer): string {
  return `${namespace}:${id.toString('hex')}`;
}

/** ap_log_error on a server (no request): written when the server's LogLevel allows. */
export function logServer(s: ServerRec, module: string, level: number, message: string): void {
  if (level > levelFor(s.logLevel, module)) return;
  s.errorLog.write({ module, level, message });
}

/** ap_timeout_parameter_parse with default unit seconds: "15", "15s", "500ms", "2mi", "1h";
 *  ms, or undefined when it cannot be read. */
export function parseTimeout(arg: string): number | undefined {
  const m = /^(\d+)(ms|s|mi|h)?$/.exec(arg);
  if (m === null) return undefined;
  const n = Number(m[1]);
  switch (m[2]) {
    case 'ms': return n;
    case 'mi': return n * 60_000;
    case 'h': return n * 3_600_000;
    default: return n * 1000;
  }
}

/** The check both TTL directives make: "X has wrong format" / "X can only be 0 or up to one hour." */
export function ttlDirective(name: string, arg: string): number | string {
  const ms = parseTimeout(arg);
  if (ms === undefined) return `${name} has wrong format`;
  if (ms > 3_600_000) return `${name} can only be 0 or up to one hour.`;
  return ms;
}

/** apr_memcache_hash_default (CRC-32 of the key, its upper 15 bits): the server a key lives
 *  on, the same choice httpd makes, so plume and Apache can share one pool of servers. */
export function keyHash(key: string | Uint8Array): number {
  return (crc32(typeof key === 'string' ? Buffer.from(key, 'latin1') : key) >>> 16) & 0x7fff;
}

/** CRC-32 (IEEE 802.3) of some bytes. */
export function crc32(b: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < b.length; i++) crc = CRC_TABLE[(crc ^ b[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** What a network cache provider says in the log and on the status page. */
export interface NetworkCacheWords {
  /** The module name of its log lines ('socache_memcache'). */
  module: string;
  /** The status line's server label ('Memcached server'). */
  label: string;
  /** The protocol word of the "Failed to Parse <word> Server" line ('memcache'). */
  protocol: string;
  /** The AH codes: store failed, retrieve failed, remove failed, no host, unparsable. */
  codes: { set: string; get: string; del: string; noHost: string; bad: string };
  /** The log lines' prefix ('scache_mc'). */
  prefix: string;
}

/** A cache on a list of servers, one pipelined client each; the protocol's commands are the
 *  subclass's, the key checks, hashing and log lines are here. */
export abstract class NetworkCache<Tag, Reply> implements SocacheInstance {
  constructor(
    private readonly s: ServerRec,
    private readonly namespace: string,
    private readonly clients: readonly KvClient<Tag, Reply>[],
    private readonly words: NetworkCacheWords,
  ) {}

  /** Whether the server takes this key. */
  protected abstract validKey(key: string): boolean;
  /** Stores; true when the server said it did. */
  protected abstract set(c: KvClient<Tag, Reply>, key: string, seconds: number, data: Buffer): Promise<boolean>;
  /** The value, null for a miss, undefined when the server failed. */
  protected abstract get(c: KvClient<Tag, Reply>, key: string): Promise<Buffer | null | undefined>;
  /** Deletes; true when the server said it did. */
  protected abstract del(c: KvClient<Tag, Reply>, key: string): Promise<boolean>;

  private pick(key: string): KvClient<Tag, Reply> {
    return this.clients[keyHash(key) % this.clients.length]!;
  }

  async store(id: Buffer, expiry: number, data: Buffer): Promise<boolean> {
    const key = cacheKey(this.namespace, id);
    if (!this.validKey(key)) return false;
    const seconds = Math.floor((expiry - Date.now()) / 1000);
    if (seconds <= 0) return false;
    if (await this.set(this.pick(key), key, seconds, data)) return true;
    const w = this.words;
    logServer(this.s, w.module, APLOG_CRIT, `${w.codes.set}: ${w.prefix}: error setting key '${key}' with ${data.length} bytes of data`);
    return false;
  }

  async retrieve(id: Buffer): Promise<Buffer | null> {
    const key = cacheKey(this.namespace, id);
    if (!this.validKey(key)) return null;
    const v = await this.get(this.pick(key), key);
    if (v !== undefined) return v;
    const w = this.words;
    logServer(this.s, w.module, APLOG_ERR, `${w.codes.get}: ${w.prefix}: 'retrieve' FAIL`);
    return null;
  }

  async remove(id: Buffer): Promise<void> {
    const key = cacheKey(this.namespace, id);
    if (!this.validKey(key)) return;
    if (await this.del(this.pick(key), key)) return;
    const w = this.words;
    logServer(this.s, w.module, APLOG_DEBUG, `${w.codes.del}: ${w.prefix}: error deleting key '${key}' `);
  }

  /** The statistics the server gives (memcached's "stats", Redis' INFO) as the provider's
   *  status function prints them, or null when the server did not answer. */
  protected abstract serverStatus(c: KvClient<Tag, Reply>, short: boolean, br: string): Promise<string | null>;

  /** socache_mc_status / socache_rd_status: each server's line, then what it says of itself. */
  async status(_r: Request, flags: number, put: StatusWriter): Promise<void> {
    const short = (flags & AP_STATUS_SHORT) !== 0;
    const br = short ? '' : '<br />';
    for (const c of this.clients) {
      put(`${this.words.label}: ${c.addr.host}:${c.addr.port} [${c.up ? 'Up' : 'Down'}]${br}\n`);
      const text = await this.serverStatus(c, short, br);
      if (text !== null) put(text);
    }
  }

  async destroy(): Promise<void> {
    for (const c of this.clients) c.close();
  }
}

/** One client for each `host[:port]` of a provider's argument list, or httpd's error (logged
 *  at crit) for the first it cannot read. */
export function serverClients<C>(s: ServerRec, servers: readonly string[], defaultPort: number, w: NetworkCacheWords, make: (a: KvAddress) => C): C[] | string {
  const clients: C[] = [];
  for (const item of servers) {
    const a = parseServer(item, defaultPort);
    if (typeof a === 'string') {
      const text = a === 'no host' ? `${w.codes.noHost}: Failed to Parse Server, no hostname specified: '${item}'` : `${w.codes.bad}: Failed to Parse ${w.protocol} Server: '${item}'`;
      logServer(s, w.module, APLOG_CRIT, text);
      return text;
    }
    clients.push(make(a));
  }
  return clients;
}
