// mod_cache_socache (modules/cache/mod_cache_socache.c): the "socache" storage provider of
// mod_cache, over a small-object cache of the "socache" provider group (`CacheSocache
// shmcb:/path(size)`, dbm, memcache, redis). An entity is one object under its key: a 4-byte
// length, the header record of mod_cache/entry.ts, then the body, at most CacheSocacheMaxSize
// bytes in all; a response with Vary leaves a Vary record under the key and its variants under
// their own keys. Objects live between CacheSocacheMinTime and CacheSocacheMaxTime.
//
// DIFFERENCE: the object's layout is plume's own (entry.ts), as for mod_cache_disk.

import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF, ACCESS_CONF, type ModuleDecl, type MaybePromise } from '../../server/module.js';
import { AP_STATUS_SHORT, type StatusWriter } from '../../server/status-hook.js';
import type { Request } from '../../server/request/request.js';
import { HeaderTable } from '../../server/request/headers.js';
import type { Brigade } from '../../server/filters.js';
import type { SocacheInstance, SocacheSpec } from '../../server/socache.js';
import type { ConfigContext } from '../../server/config/context.js';
import { APLOG_DEBUG, APLOG_EMERG } from '../../server/log/levels.js';
import { emptyControl, varyKey, varyNames, type CacheEntity, type CacheInfo, type CacheProvider } from './mod_cache/api.js';
import { decodeRecord, encodeRecord, type HeaderRecord } from './mod_cache/entry.js';

const MOD = 'cache_socache';
const DEFAULT_MAX_SIZE = 100 * 1024;
const DEFAULT_MAXTIME = 86400;
const DEFAULT_MINTIME = 600;
const UINT32_MAX = 4294967295;

interface SocacheServer {
  spec: SocacheSpec | undefined;
}

interface SocacheDir {
  max: number | undefined;
  /** seconds */
  maxtime: number | undefined;
  mintime: number | undefined;
  readSize: number | undefined;
  /** ms */
  readTime: number | undefined;
}

/** The opened cache of this configuration generation (set at post_config / child_init). */
let instance: SocacheInstance | null = null;

function pack(rec: HeaderRecord, body: Buffer): Buffer {
  const head = encodeRecord(rec);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(head.length, 0);
  return Buffer.concat([len, head, body]);
}

function unpack(obj: Buffer): { rec: HeaderRecord; body: Buffer } | null {
  if (obj.length < 4) return null;
  const n = obj.readUInt32BE(0);
  if (4 + n > obj.length) return null;
  const rec = decodeRecord(obj.subarray(4, 4 + n));
  return rec === null ? null : { rec, body: obj.subarray(4 + n) };
}

/** The object's expiry: the entity's, kept between CacheSocacheMinTime and MaxTime. */
function expiryOf(d: Readonly<SocacheDir>, expire: number): number {
  const now = Date.now();
  const maxt = now + (d.maxtime ?? DEFAULT_MAXTIME) * 1000;
  const mint = now + (d.mintime ?? DEFAULT_MINTIME) * 1000;
  let e = Number.isNaN(expire) ? maxt : expire;
  if (e > maxt) e = maxt;
  if (e < mint) e = mint;
  return e;
}

class SocacheEntity implements CacheEntity {
  private pending: { info: CacheInfo; resp: HeaderTable; req: HeaderTable } | null = null;
  private body: Buffer[] = [];
  private size = 0;
  private gone = false;

  constructor(
    private readonly cache: SocacheInstance,
    private readonly dconf: Readonly<SocacheDir>,
    readonly key: string,
    public info: CacheInfo,
    public respHdrs: HeaderTable,
    public reqHdrs: HeaderTable,
    /** The id the entity is stored under, once known. */
    private id: string | null,
    private stored: Buffer | null,
  ) {}

  get readSize(): number { return this.dconf.readSize ?? 0; }
  get readTime(): number { return this.dconf.readTime ?? 0; }

  storeHeaders(_r: Request, info: CacheInfo, resp: HeaderTable, req: HeaderTable): Promise<boolean> {
    this.info = info;
    this.pending = { info, resp, req };
    return Promise.resolve(true);
  }

  storeBody(r: Request, data: Buffer): Promise<boolean> {
    if (this.gone) return Promise.resolve(false);
    this.size += data.length;
    const max = this.dconf.max ?? DEFAULT_MAX_SIZE;
    if (this.size > max) {
      r.log(MOD, APLOG_DEBUG, `AH02378: URL ${this.key} failed the buffer size check (${this.size}>${max})`);
      this.gone = true;
      this.body = [];
      return Promise.resolve(false);
    }
    this.body.push(Buffer.from(data));
    return Promise.resolve(true);
  }

  endBody(r: Request): Promise<boolean> {
    if (this.gone) return Promise.resolve(false);
    const cl = r.headersOut.get('Content-Length');
    if (cl !== undefined && (!/^[0-9]+$/.test(cl) || Number(cl) !== this.size)) {
      r.log(MOD, APLOG_DEBUG, `AH02381: URL ${this.key} didn't receive complete response, not caching`);
      this.gone = true;
      return Promise.resolve(false);
    }
    return Promise.resolve(true);
  }

  async commit(r: Request): Promise<boolean> {
    const p = this.pending;
    if (p === null || this.gone) return false;
    const expiry = expiryOf(this.dconf, p.info.expire);
    let id = this.id;
    if (id === null) {
      const names = varyNames(p.resp.get('Vary'));
      if (names.length) {
        if (!(await this.cache.store(Buffer.from(this.key), expiry, pack({ kind: 'vary', key: this.key, names, expire: p.info.expire }, Buffer.alloc(0))))) return false;
        id = varyKey(this.key, names, r.headersIn);
      } else {
        id = this.key;
      }
      this.id = id;
    }
    const body = this.stored ?? Buffer.concat(this.body);
    const obj = pack({ kind: 'entity', key: this.key, info: p.info, respHdrs: p.resp, reqHdrs: p.req, headerOnly: r.headerOnly }, body);
    if (obj.length > (this.dconf.max ?? DEFAULT_MAX_SIZE)) {
      r.log(MOD, APLOG_DEBUG, `AH02374: URL ${this.key} failed the buffer size check (${obj.length}>${this.dconf.max ?? DEFAULT_MAX_SIZE})`);
      return false;
    }
    const ok = await this.cache.store(Buffer.from(id), expiry, obj);
    if (ok) {
      this.stored = body;
      this.pending = null;
    }
    return ok;
  }

  recallBody(): Brigade {
    const b = this.stored;
    return b === null || b.length === 0 ? [] : [{ kind: 'data', data: b }];
  }

  remove(): void {
    this.gone = true;
    this.body = [];
  }

  async removeUrl(r: Request): Promise<void> {
    if (this.id === null) return;
    r.log(MOD, APLOG_DEBUG, `AH02387: Removing ${this.key} from the cache`);
    await this.cache.remove(Buffer.from(this.id));
  }

  async invalidate(): Promise<void> {
    if (this.id === null || this.stored === null) return;
    this.info.control.invalidated = true;
    await this.cache.store(Buffer.from(this.id), expiryOf(this.dconf, this.info.expire),
      pack({ kind: 'entity', key: this.key, info: this.info, respHdrs: this.respHdrs, reqHdrs: this.reqHdrs, headerOnly: false }, this.stored));
  }
}

const provider: CacheProvider = {
  createEntity(r, key, size) {
    const d = self.dir(r);
    if (instance === null) return Promise.resolve(null);
    if (r.status === 206) {
      r.log(MOD, APLOG_DEBUG, `AH02345: URL ${key} partial content response not cached`);
      return Promise.resolve(null);
    }
    const max = d.max ?? DEFAULT_MAX_SIZE;
    if (size >= 0 && size > max) {
      r.log(MOD, APLOG_DEBUG, `AH02346: URL ${key} failed the buffer size check (${size} > ${max})`);
      return Promise.resolve(null);
    }
    const info: CacheInfo = { status: r.status, date: NaN, expire: NaN, requestTime: 0, responseTime: 0, control: emptyControl() };
    return Promise.resolve(new SocacheEntity(instance, d, key, info, new HeaderTable(), new HeaderTable(), null, null));
  },

  async openEntity(r, key) {
    if (instance === null) return null;
    let id = key;
    let obj = await instance.retrieve(Buffer.from(id));
    if (obj === null) return null;
    let got = unpack(obj);
    if (got !== null && got.rec.kind === 'vary') {
      id = varyKey(key, got.rec.names, r.headersIn);
      obj = await instance.retrieve(Buffer.from(id));
      if (obj === null) return null;
      got = unpack(obj);
    }
    if (got === null || got.rec.kind !== 'entity') {
      r.log(MOD, APLOG_DEBUG, `AH02352: Key not found in cache: ${key}`);
      return null;
    }
    const rec = got.rec;
    if (rec.key !== key) return null;
    if (rec.headerOnly && !r.headerOnly) {
      r.log(MOD, APLOG_DEBUG, `AH02353: HEAD request cached, non-HEAD requested, ignoring: ${key}`);
      return null;
    }
    return new SocacheEntity(instance, self.dir(r), key, rec.info, rec.respHdrs, rec.reqHdrs, id, Buffer.from(got.body));
  },
};

// ---- configuration ----------------------------------------------------------------------------

function strtoff(s: string): number | undefined {
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)/.exec(s);
  return m === null ? undefined : Number(m[1]);
}

type Cmd = { srv: SocacheServer; dir: SocacheDir; ctx: ConfigContext };

function setSocache(cmd: Cmd, arg: string): string | undefined {
  const colon = arg.indexOf(':');
  const name = colon < 0 ? arg : arg.slice(0, colon);
  const p = cmd.ctx.provider('socache', name);
  if (p === undefined) return `Unknown socache provider '${name}'. Maybe you need to load the appropriate socache module (mod_socache_${name}?)`;
  const spec = p.create(cmd.ctx, colon < 0 ? undefined : arg.slice(colon + 1));
  if (typeof spec === 'string') return spec;
  cmd.srv.spec = spec;
  return undefined;
}

function seconds(field: 'maxtime' | 'mintime', message: string) {
  return (cmd: Cmd, arg: string): string | undefined => {
    const v = strtoff(arg);
    if (v === undefined || v < 0) return message;
    cmd.dir[field] = v;
    return undefined;
  };
}

/** socache_status_hook: the cache's provider's figures in a "mod_cache_socache Status" box
 *  (or after a "ModCacheSocacheStatus" line with ?auto); nothing when no cache is open. */
function statusHook(r: Request, flags: number, put: StatusWriter): MaybePromise<void> {
  const c = instance;
  if (c === null) return undefined;
  const short = (flags & AP_STATUS_SHORT) !== 0;
  put(short ? 'ModCacheSocacheStatus\n' : STATUS_HEAD);
  const w = c.status(r, flags, put);
  if (short) return w;
  if (w instanceof Promise) return w.then(() => put(STATUS_TAIL));
  put(STATUS_TAIL);
  return undefined;
}

const STATUS_HEAD = '<hr>\n<table cellspacing=0 cellpadding=0>\n<tr><td bgcolor="#000000">\n' +
  '<b><font color="#ffffff" face="Arial,Helvetica">mod_cache_socache Status:</font></b>\n' +
  '</td></tr>\n<tr><td bgcolor="#ffffff">\n';
const STATUS_TAIL = '</td></tr>\n</table>\n';

async function openCache(ctx: ConfigContext): Promise<string | undefined> {
  const spec = self.server(ctx.mainServer).spec;
  if (spec === undefined) return undefined;
  const c = await spec.init(ctx, ctx.mainServer, 'mod_cache_socache', { avgIdLen: 64, avgObjSize: 2048, expiryInterval: 60 }, !ctx.child);
  if (typeof c === 'string') {
    ctx.log(MOD, APLOG_EMERG, `AH02393: failed to initialise ${spec.provider} cache`);
    return 'AH00016: Configuration Failed';
  }
  instance = c;
  return undefined;
}

const self = defineModule<SocacheServer, SocacheDir>({
  name: 'cache_socache_module',
  source: 'mod_cache_socache.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ spec: undefined }),
  mergeServerConfig: (base, add) => ({ spec: add.spec ?? base.spec }),
  createDirConfig: () => ({ max: undefined, maxtime: undefined, mintime: undefined, readSize: undefined, readTime: undefined }),
  mergeDirConfig: (base, add) => ({
    max: add.max ?? base.max,
    maxtime: add.maxtime ?? base.maxtime,
    mintime: add.mintime ?? base.mintime,
    readSize: add.readSize ?? base.readSize,
    readTime: add.readTime ?? base.readTime,
  }),
  directives: [
    directive<SocacheServer, SocacheDir, 'TAKE1'>({ name: 'CacheSocache', args: 'TAKE1', where: RSRC_CONF, help: 'The shared object cache to store cache files', handler: setSocache }),
    directive<SocacheServer, SocacheDir, 'TAKE1'>({
      name: 'CacheSocacheMaxTime', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The maximum cache expiry age to cache a document in seconds',
      handler: seconds('maxtime', 'CacheSocacheMaxTime argument must be the maximum amount of time in seconds to cache an entry.'),
    }),
    directive<SocacheServer, SocacheDir, 'TAKE1'>({
      name: 'CacheSocacheMinTime', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The minimum cache expiry age to cache a document in seconds',
      handler: seconds('mintime', 'CacheSocacheMinTime argument must be the minimum amount of time in seconds to cache an entry.'),
    }),
    directive<SocacheServer, SocacheDir, 'TAKE1'>({
      name: 'CacheSocacheMaxSize', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The maximum cache entry size (headers and body) to cache a document',
      handler: (cmd, arg) => {
        const v = strtoff(arg);
        if (v === undefined || v < 1024 || v > UINT32_MAX) return `CacheSocacheMaxSize argument must be a integer representing the max size of a cached entry (headers and body), at least 1024 and at most (${UINT32_MAX}U)`;
        cmd.dir.max = v;
        return undefined;
      },
    }),
    directive<SocacheServer, SocacheDir, 'TAKE1'>({
      name: 'CacheSocacheReadSize', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The maximum quantity of data to attempt to read and cache in one go',
      handler: (cmd, arg) => {
        const v = strtoff(arg);
        if (v === undefined || v < 0) return 'CacheSocacheReadSize argument must be a non-negative integer representing the max amount of data to cache in go.';
        cmd.dir.readSize = v;
        return undefined;
      },
    }),
    directive<SocacheServer, SocacheDir, 'TAKE1'>({
      name: 'CacheSocacheReadTime', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The maximum time taken to attempt to read and cache in go',
      handler: (cmd, arg) => {
        const v = strtoff(arg);
        if (v === undefined || v < 0) return 'CacheSocacheReadTime argument must be a non-negative integer representing the max amount of time taken to cache in go.';
        cmd.dir.readTime = v;
        return undefined;
      },
    }),
  ],
  configHooks: {
    preConfig() { instance = null; },
    postConfig: openCache,
    async cleanup() {
      const c = instance;
      instance = null;
      if (c !== null) await c.destroy();
    },
  },
  providers: [
    { group: 'cache', name: 'socache', version: '0', provider },
    { group: 'status_hook', name: 'mod_cache_socache', version: '0', provider: { status: statusHook } },
  ],
});

export default self;
self.decl satisfies ModuleDecl<SocacheServer, SocacheDir>;
