// What the mod_socache_* modules share: the key an id is stored under on a cache server
// (httpd's "namespace:" + hex id), a server-scoped log line, and the "TTL"/timeout directive
// argument as ap_timeout_parameter_parse reads it.

import type { ServerRec } from '../../server/server-rec.js';
import { levelFor } from '../../server/log/levels.js';

/** The key of `id` under `namespace` ("mod_ssl-session:" + lowercase hex). */
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
