// mod_cache_disk (modules/cache/mod_cache_disk.c): the "disk" storage provider of mod_cache.
// An entity is two files under CacheRoot, named by the MD5 of its key as httpd names them
// (CacheDirLevels directories of CacheDirLength characters, then the rest): NAME.header (the
// header record of mod_cache/entry.ts) and NAME.data (the body). A response with Vary leaves a
// Vary record in NAME.header and its variants under NAME.header.vary/. Every file is written
// to a temporary file in CacheRoot and renamed into place, so a reader in any worker process
// sees a whole old file or a whole new one, never a partial one.
//
// DIFFERENCE: the header file's format is plume's own (entry.ts; docs/differences.md), so a
// cache root is not shared with Apache's mod_cache_disk or its htcacheclean.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF, ACCESS_CONF, type ModuleDecl } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { HeaderTable } from '../../server/request/headers.js';
import type { Brigade } from '../../server/filters.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_WARNING } from '../../server/log/levels.js';
import { emptyControl, varyKey, varyNames, type CacheEntity, type CacheInfo, type CacheProvider } from './mod_cache/api.js';
import { decodeRecord, encodeRecord } from './mod_cache/entry.js';
import { generateName } from './mod_cache/control.js';

const MOD = 'cache_disk';
const CACHEFILE_LEN = 20;
const DEFAULT_DIRLEVELS = 2;
const DEFAULT_DIRLENGTH = 2;
const DEFAULT_MIN_FILE_SIZE = 1;
const DEFAULT_MAX_FILE_SIZE = 1000000;
const VARY_SUFFIX = '.vary';

interface DiskServer {
  root: string | undefined;
  dirLevels: number;
  dirLength: number;
}

interface DiskDir {
  minfs: number | undefined;
  maxfs: number | undefined;
  readSize: number | undefined;
  /** ms */
  readTime: number | undefined;
}

/** Where an entity's files are. */
interface Paths {
  header: string;
  data: string;
}

function pathsFor(conf: Readonly<DiskServer>, key: string, inDir?: string): Paths {
  const name = generateName(key, conf.dirLevels, conf.dirLength);
  const base = path.join(inDir ?? conf.root!, name);
  return { header: base + '.header', data: base + '.data' };
}

function tempName(root: string): string {
  return path.join(root, 'aptmp' + randomBytes(6).toString('hex'));
}

/** Writes `data` to a temporary file in the root, then renames it to `to`. */
async function writeAtomic(root: string, to: string, data: Buffer): Promise<void> {
  const tmp = tempName(root);
  try {
    await fs.promises.writeFile(tmp, data, { mode: 0o600 });
    await fs.promises.mkdir(path.dirname(to), { recursive: true });
    await fs.promises.rename(tmp, to);
  } catch (e) {
    await fs.promises.rm(tmp, { force: true });
    throw e;
  }
}

async function readFileOrNull(file: string): Promise<Buffer | null> {
  try {
    return await fs.promises.readFile(file);
  } catch {
    return null;
  }
}

class DiskEntity implements CacheEntity {
  respHdrs: HeaderTable;
  reqHdrs: HeaderTable;
  /** Set when storeHeaders was called; written at commit. */
  private pending: { info: CacheInfo; resp: HeaderTable; req: HeaderTable } | null = null;
  private tmpData: string | null = null;
  private fh: fs.promises.FileHandle | null = null;
  private fileSize = 0;
  private bodyStored = false;
  private gone = false;

  constructor(
    private readonly conf: Readonly<DiskServer>,
    private readonly dconf: Readonly<DiskDir>,
    readonly key: string,
    public info: CacheInfo,
    respHdrs: HeaderTable,
    reqHdrs: HeaderTable,
    /** The files, once known (a stored entity; a new one's are decided by its headers). */
    private paths: Paths | null,
    private readonly bodySize: number,
    private readonly headerOnly = false,
  ) {
    this.respHdrs = respHdrs;
    this.reqHdrs = reqHdrs;
  }

  get readSize(): number { return this.dconf.readSize ?? 0; }
  get readTime(): number { return this.dconf.readTime ?? 0; }

  storeHeaders(_r: Request, info: CacheInfo, resp: HeaderTable, req: HeaderTable): Promise<boolean> {
    this.info = info;
    this.pending = { info, resp, req };
    return Promise.resolve(true);
  }

  async storeBody(r: Request, data: Buffer): Promise<boolean> {
    if (this.gone) return false;
    try {
      if (this.fh === null) {
        this.tmpData = tempName(this.conf.root!);
        this.fh = await fs.promises.open(this.tmpData, 'wx', 0o600);
        this.fileSize = 0;
      }
      await this.fh.write(data);
    } catch (e) {
      r.log(MOD, APLOG_ERR, `AH00731: Error when writing cache file for URL ${this.key}`, r.rt.errno(e as NodeJS.ErrnoException));
      await this.discard();
      return false;
    }
    this.fileSize += data.length;
    const maxfs = this.dconf.maxfs ?? DEFAULT_MAX_FILE_SIZE;
    if (this.fileSize > maxfs) {
      r.log(MOD, APLOG_DEBUG, `AH00732: URL ${this.key} failed the size check (${this.fileSize}>${maxfs})`);
      await this.discard();
      return false;
    }
    return true;
  }

  async endBody(r: Request): Promise<boolean> {
    if (this.gone) return false;
    if (this.fh !== null) {
      try { await this.fh.close(); } catch { await this.discard(); return false; }
      this.fh = null;
    }
    // A HEAD response has no body to check (httpd checks only when !header_only).
    if (r.headerOnly) return true;
    if (r.connection.aborted) {
      r.log(MOD, APLOG_INFO, `AH00733: Discarding body for URL ${this.key} because connection has been aborted.`);
      await this.discard();
      return false;
    }
    const minfs = this.dconf.minfs ?? DEFAULT_MIN_FILE_SIZE;
    if (this.fileSize < minfs) {
      r.log(MOD, APLOG_DEBUG, `AH00734: URL ${this.key} failed the size check (${this.fileSize}<${minfs})`);
      await this.discard();
      return false;
    }
    const cl = r.headersOut.get('Content-Length');
    if (cl !== undefined && (!/^[0-9]+$/.test(cl) || Number(cl) !== this.fileSize)) {
      r.log(MOD, APLOG_DEBUG, `AH00735: URL ${this.key} didn't receive complete response, not caching`);
      await this.discard();
      return false;
    }
    this.bodyStored = true;
    return true;
  }

  private async discard(): Promise<void> {
    this.gone = true;
    if (this.fh !== null) { try { await this.fh.close(); } catch { /* closed */ } this.fh = null; }
    if (this.tmpData !== null) { await fs.promises.rm(this.tmpData, { force: true }); this.tmpData = null; }
  }

  async commit(r: Request): Promise<boolean> {
    const p = this.pending;
    if (p === null || this.gone) return false;
    const root = this.conf.root!;
    try {
      let paths = this.paths;
      if (paths === null) {
        const base = pathsFor(this.conf, this.key);
        const names = varyNames(p.resp.get('Vary'));
        if (names.length) {
          await writeAtomic(root, base.header, encodeRecord({ kind: 'vary', key: this.key, names, expire: p.info.expire }));
          paths = pathsFor(this.conf, varyKey(this.key, names, r.headersIn), base.header + VARY_SUFFIX);
        } else {
          paths = base;
        }
        this.paths = paths;
      }
      const headerOnly = r.headerOnly;
      await writeAtomic(root, paths.header, encodeRecord({ kind: 'entity', key: this.key, info: p.info, respHdrs: p.resp, reqHdrs: p.req, headerOnly }));
      if (headerOnly) {
        await this.discard();
        await fs.promises.rm(paths.data, { force: true });
      } else if (this.bodyStored) {
        if (this.tmpData !== null) {
          await fs.promises.rename(this.tmpData, paths.data);
          this.tmpData = null;
        } else {
          await writeAtomic(root, paths.data, Buffer.alloc(0));
        }
      }
      this.pending = null;
      r.log(MOD, APLOG_DEBUG, `AH00737: commit_entity: Headers and body for URL ${this.key} cached.`);
      return true;
    } catch (e) {
      await this.removeUrl(r);
      r.log(MOD, APLOG_DEBUG, `AH00736: commit_entity: URL '${this.key}' not cached due to earlier disk error.`, r.rt.errno(e as NodeJS.ErrnoException));
      return false;
    }
  }

  recallBody(): Brigade {
    if (this.paths === null || this.bodySize <= 0) return [];
    return [{ kind: 'file', path: this.paths.data, start: 0, length: this.bodySize }];
  }

  remove(): void {
    void this.discard();
  }

  async removeUrl(r: Request): Promise<void> {
    const p = this.paths;
    await this.discard();
    if (p === null) return;
    for (const f of [p.header, p.data]) {
      r.log(MOD, APLOG_DEBUG, `AH00711: Deleting ${f} from cache.`);
      try { await fs.promises.rm(f, { force: true }); } catch (e) {
        r.log(MOD, APLOG_DEBUG, `AH00712: Failed to delete headers file ${f} from cache.`, r.rt.errno(e as NodeJS.ErrnoException));
      }
    }
    // Empty directories up to the root go too (as remove_url prunes them).
    let d = path.dirname(p.header);
    const root = this.conf.root!;
    while (d.length > root.length && d.startsWith(root)) {
      try { await fs.promises.rmdir(d); } catch { break; }
      d = path.dirname(d);
    }
  }

  async invalidate(r: Request): Promise<void> {
    // DIFFERENCE: Apache 2.4.71 leaves a header file its next lookup cannot read (AH00717);
    // plume rewrites the record whole with the invalidated mark (docs/differences.md).
    if (this.paths === null) return;
    this.info.control.invalidated = true;
    try {
      await writeAtomic(this.conf.root!, this.paths.header, encodeRecord({ kind: 'entity', key: this.key, info: this.info, respHdrs: this.respHdrs, reqHdrs: this.reqHdrs, headerOnly: this.headerOnly }));
    } catch (e) {
      r.log(MOD, APLOG_WARNING, `AH00736: commit_entity: URL '${this.key}' not cached due to earlier disk error.`, r.rt.errno(e as NodeJS.ErrnoException));
    }
  }
}

const provider: CacheProvider = {
  createEntity(r, key, size) {
    const conf = self.server(r.server);
    const dconf = self.dir(r);
    if (conf.root === undefined) return Promise.resolve(null);
    if (r.status === 206) {
      r.log(MOD, APLOG_DEBUG, `AH00700: URL ${key} partial content response not cached`);
      return Promise.resolve(null);
    }
    const maxfs = dconf.maxfs ?? DEFAULT_MAX_FILE_SIZE;
    const minfs = dconf.minfs ?? DEFAULT_MIN_FILE_SIZE;
    if (size > maxfs) {
      r.log(MOD, APLOG_DEBUG, `AH00701: URL ${key} failed the size check (${size} > ${maxfs})`);
      return Promise.resolve(null);
    }
    if (size >= 0 && size < minfs) {
      r.log(MOD, APLOG_DEBUG, `AH00702: URL ${key} failed the size check (${size} < ${minfs})`);
      return Promise.resolve(null);
    }
    const info: CacheInfo = { status: r.status, date: NaN, expire: NaN, requestTime: 0, responseTime: 0, control: emptyControl() };
    return Promise.resolve(new DiskEntity(conf, dconf, key, info, new HeaderTable(), new HeaderTable(), null, 0));
  },

  async openEntity(r, key) {
    const conf = self.server(r.server);
    if (conf.root === undefined) return null;
    let paths = pathsFor(conf, key);
    let buf = await readFileOrNull(paths.header);
    if (buf === null) return null;
    let rec = decodeRecord(buf);
    if (rec !== null && rec.kind === 'vary') {
      paths = pathsFor(conf, varyKey(key, rec.names, r.headersIn), paths.header + VARY_SUFFIX);
      buf = await readFileOrNull(paths.header);
      if (buf === null) return null;
      rec = decodeRecord(buf);
    }
    if (rec === null || rec.kind !== 'entity') {
      r.log(MOD, APLOG_DEBUG, `AH00709: Cannot load header file: ${paths.header}`);
      return null;
    }
    if (rec.key !== key) {
      r.log(MOD, APLOG_ERR, `AH00716: File '${paths.data}' of key '${rec.key}' does not match key '${key}'`);
      return null;
    }
    if (rec.headerOnly && !r.headerOnly) {
      r.log(MOD, APLOG_DEBUG, `AH00707: HEAD request cached, non-HEAD requested, ignoring: ${paths.header}`);
      return null;
    }
    let size = 0;
    if (!rec.headerOnly) {
      try {
        size = (await fs.promises.stat(paths.data)).size;
      } catch {
        r.log(MOD, APLOG_DEBUG, `AH00710: Cannot open data file ${paths.data}`);
        return null;
      }
    }
    return new DiskEntity(conf, self.dir(r), key, rec.info, rec.respHdrs, rec.reqHdrs, paths, size, rec.headerOnly);
  },
};


// ---- configuration ----------------------------------------------------------------------------

/** atoi: leading blanks, a sign, digits (0 when none). */
function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)/.exec(s);
  return m === null ? 0 : Number(m[1]);
}

/** apr_strtoff(..., NULL, 10): a leading decimal number; undefined when there is none. */
function strtoff(s: string): number | undefined {
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)/.exec(s);
  return m === null ? undefined : Number(m[1]);
}

type Cmd = { srv: DiskServer; dir: DiskDir };

function sizeSetter(field: 'minfs' | 'maxfs' | 'readSize', message: string) {
  return (cmd: Cmd, arg: string): string | undefined => {
    const v = strtoff(arg);
    if (v === undefined || v < 0) return message;
    cmd.dir[field] = v;
    return undefined;
  };
}

const self = defineModule<DiskServer, DiskDir>({
  name: 'cache_disk_module',
  source: 'mod_cache_disk.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ root: undefined, dirLevels: DEFAULT_DIRLEVELS, dirLength: DEFAULT_DIRLENGTH }),
  createDirConfig: () => ({ minfs: undefined, maxfs: undefined, readSize: undefined, readTime: undefined }),
  mergeDirConfig: (base, add) => ({
    minfs: add.minfs ?? base.minfs,
    maxfs: add.maxfs ?? base.maxfs,
    readSize: add.readSize ?? base.readSize,
    readTime: add.readTime ?? base.readTime,
  }),
  directives: [
    directive<DiskServer, DiskDir, 'TAKE1'>({
      name: 'CacheRoot', args: 'TAKE1', where: RSRC_CONF, help: 'The directory to store cache files',
      handler: (cmd, arg) => { cmd.srv.root = arg.length > 1 ? arg.replace(/\/+$/, '') : arg; },
    }),
    directive<DiskServer, DiskDir, 'TAKE1'>({
      name: 'CacheDirLevels', args: 'TAKE1', where: RSRC_CONF, help: 'The number of levels of subdirectories in the cache',
      handler: (cmd, arg) => {
        const v = atoi(arg);
        if (v < 1) return 'CacheDirLevels value must be an integer greater than 0';
        if (v * cmd.srv.dirLength > CACHEFILE_LEN) return 'CacheDirLevels*CacheDirLength value must not be higher than 20';
        cmd.srv.dirLevels = v;
        return undefined;
      },
    }),
    directive<DiskServer, DiskDir, 'TAKE1'>({
      name: 'CacheDirLength', args: 'TAKE1', where: RSRC_CONF, help: 'The number of characters in subdirectory names',
      handler: (cmd, arg) => {
        const v = atoi(arg);
        if (v < 1) return 'CacheDirLength value must be an integer greater than 0';
        if (v * cmd.srv.dirLevels > CACHEFILE_LEN) return 'CacheDirLevels*CacheDirLength value must not be higher than 20';
        cmd.srv.dirLength = v;
        return undefined;
      },
    }),
    directive<DiskServer, DiskDir, 'TAKE1'>({
      name: 'CacheMinFileSize', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The minimum file size to cache a document',
      handler: sizeSetter('minfs', 'CacheMinFileSize argument must be a non-negative integer representing the min size of a file to cache in bytes.'),
    }),
    directive<DiskServer, DiskDir, 'TAKE1'>({
      name: 'CacheMaxFileSize', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The maximum file size to cache a document',
      handler: sizeSetter('maxfs', 'CacheMaxFileSize argument must be a non-negative integer representing the max size of a file to cache in bytes.'),
    }),
    directive<DiskServer, DiskDir, 'TAKE1'>({
      name: 'CacheReadSize', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The maximum quantity of data to attempt to read and cache in one go',
      handler: sizeSetter('readSize', 'CacheReadSize argument must be a non-negative integer representing the max amount of data to cache in go.'),
    }),
    directive<DiskServer, DiskDir, 'TAKE1'>({
      name: 'CacheReadTime', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF, help: 'The maximum time taken to attempt to read and cache in go',
      handler: (cmd, arg) => {
        const v = strtoff(arg);
        if (v === undefined || v < 0) return 'CacheReadTime argument must be a non-negative integer representing the max amount of time taken to cache in go.';
        cmd.dir.readTime = v;
        return undefined;
      },
    }),
  ],
  providers: [{ group: 'cache', name: 'disk', version: '0', provider }],
});

export default self;
self.decl satisfies ModuleDecl<DiskServer, DiskDir>;
