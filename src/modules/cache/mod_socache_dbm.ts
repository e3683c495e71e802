// mod_socache_dbm (modules/cache/mod_socache_dbm.c): the "dbm" small-object cache provider,
// `SSLSessionCache dbm:/path/to/datafile`: objects kept in an SDBM database (APR's default
// DBM type, plume's src/lib/dbm) shared by the worker processes through the file. Each value
// is stored as httpd stores it: the expiry time (apr_time_t, microseconds, host byte order)
// followed by the data; expired entries are skipped on read and swept when the cache is set
// up. An object that with its key does not fit an SDBM pair (1008 bytes) is not stored, as
// with httpd's SDBM.
//
// DIFFERENCE: httpd serialises access through a global mutex; here each operation reads the
// database, changes it and writes it back through a rename, so readers never see a torn file
// and a store racing another process's may be lost (a cache miss later, never wrong data).
// The parent running as root gives the files to User (httpd's try_chown); workers that may
// not create files in the directory rewrite the files in place (a reader meeting a file
// half-written reads a miss).

import * as fs from 'node:fs';
import { defineModule, MODULE_API_VERSION } from '../../server/module.js';
import type { SocacheInstance, SocacheProvider, SocacheSpec } from '../../server/socache.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { Request } from '../../server/request/request.js';
import { AP_STATUS_SHORT, type StatusWriter } from '../../server/status-hook.js';
import { Sdbm, PAIRMAX, DIRFEXT, PAGFEXT } from '../../lib/dbm/index.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import { logServer } from './socache-common.js';
import type { ConfigContext } from '../../server/config/context.js';
import { unixdConfig } from '../arch/unix/mod_unixd.js';

class DbmCache implements SocacheInstance {
  constructor(private readonly s: ServerRec, private readonly file: string, private readonly owner: boolean) {}

  private load(): Sdbm | null {
    try { return Sdbm.load(this.file); } catch { return null; }
  }

  private save(db: Sdbm): boolean {
    try {
      try {
        db.save(this.file, 0o600);
      } catch (e) {
        // A worker running as User may not create files in the directory (httpd's workers
        // write the files the parent gave them): the files are rewritten in place.
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EACCES' && code !== 'EPERM') throw e;
        db.saveInPlace(this.file);
      }
      return true;
    } catch (e) {
      logServer(this.s, 'socache_dbm', APLOG_ERR, `AH00807: Cannot open socache DBM file \`${this.file}' for writing (store)`);
      return false;
    }
  }

  async store(id: Buffer, expiry: number, data: Buffer): Promise<boolean> {
    const val = Buffer.alloc(8 + data.length);
    val.writeBigInt64LE(BigInt(expiry) * 1000n, 0);
    data.copy(val, 8);
    if (id.length + val.length > PAIRMAX) {
      logServer(this.s, 'socache_dbm', APLOG_DEBUG, `AH00805: data size too large for DBM socache: ${id.length + val.length} >= ${PAIRMAX}`);
      return false;
    }
    const db = this.load() ?? Sdbm.empty();
    try { db.store(id, val); } catch {
      logServer(this.s, 'socache_dbm', APLOG_ERR, `AH00808: Cannot store socache object to DBM file \`${this.file}'`);
      return false;
    }
    return this.save(db);
  }

  async retrieve(id: Buffer): Promise<Buffer | null> {
    const db = this.load();
    const val = db?.fetch(id);
    if (val === undefined || val.length < 8) return null;
    const expiry = Number(val.readBigInt64LE(0) / 1000n);
    if (expiry <= Date.now()) return null;
    return Buffer.from(val.subarray(8));
  }

  async remove(id: Buffer): Promise<void> {
    const db = this.load();
    if (db !== null && db.delete(id)) this.save(db);
  }

  /** Drops the expired entries (httpd's socache_dbm_expire). */
  expire(): void {
    const db = this.load();
    if (db === null) return;
    const now = BigInt(Date.now()) * 1000n;
    let dropped = 0;
    for (const k of db.keys()) {
      const v = db.fetch(k);
      if (v === undefined || v.length < 8 || v.readBigInt64LE(0) <= now) { db.delete(k); dropped++; }
    }
    if (dropped > 0) this.save(db);
  }

  /** socache_dbm_status: every entry of the file (expired ones too) and the size of their
   *  values, as httpd counts them. */
  status(_r: Request, flags: number, put: StatusWriter): void {
    let elts = 0;
    let size = 0;
    const db = this.load();
    if (db !== null) {
      for (const k of db.keys()) {
        const v = db.fetch(k);
        if (v === undefined) continue;
        elts++;
        size += v.length;
      }
    }
    const avg = size > 0 && elts > 0 ? Math.trunc(size / elts) : 0;
    if ((flags & AP_STATUS_SHORT) === 0) {
      put('cache type: <b>DBM</b>, maximum size: <b>unlimited</b><br>');
      put(`current entries: <b>${elts}</b>, current size: <b>${size}</b> bytes<br>`);
      put(`average entry size: <b>${avg}</b> bytes<br>`);
    } else {
      put('CacheType: DBM\nCacheMaximumSize: unlimited\n');
      put(`CacheCurrentEntries: ${elts}\nCacheCurrentSize: ${size}\nCacheAvgEntrySize: ${avg}\n`);
    }
  }

  async destroy(): Promise<void> {
    if (!this.owner) return;
    for (const ext of [DIRFEXT, PAGFEXT]) { try { fs.unlinkSync(this.file + ext); } catch { /* gone */ } }
  }
}

/** try_chown: the parent running as root gives the files to the User the workers run as. */
function chownToUser(ctx: ConfigContext, file: string): void {
  if (process.geteuid?.() !== 0 || !ctx.isLoaded('unixd_module')) return;
  const u = unixdConfig(ctx);
  if (u.userId === 0xffffffff) return;
  for (const ext of [DIRFEXT, PAGFEXT]) {
    try { fs.chownSync(file + ext, u.userId, -1); } catch { /* the workers will log why they cannot write */ }
  }
}

const provider: SocacheProvider = {
  create(ctx, arg): SocacheSpec | string {
    if (arg === undefined || arg === '') return 'Invalid cache file path ';
    const file = ctx.serverRootRelative(arg);
    return {
      provider: 'dbm',
      async init(c, s, _namespace, _hints, create) {
        const cache = new DbmCache(s, file, create);
        if (create) {
          try {
            Sdbm.empty().save(file, 0o600);
            chownToUser(c, file);
          } catch {
            const text = `AH00804: Cannot create socache DBM file \`${file}'`;
            logServer(s, 'socache_dbm', APLOG_ERR, text);
            return text;
          }
        } else {
          cache.expire();
        }
        return cache;
      },
    };
  },
};

const self = defineModule<undefined, undefined>({
  name: 'socache_dbm_module',
  source: 'mod_socache_dbm.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'socache', name: 'dbm', version: '0', provider }],
});

export default self;
