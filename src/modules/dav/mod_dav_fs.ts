// mod_dav_fs (modules/dav/fs): the "filesystem" provider of mod_dav. Resources are the
// files and directories under the mapped path; dead properties live next to them in a
// .DAV directory (.DAV/<name> for a file, <dir>/.DAV/.state_for_dir for a collection);
// locks in the DavLockDB file. PUT writes a temporary file in the same directory and
// renames it over the resource, as dav_fs_open_stream does.

import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { NOT_IN_DIR_LOC_FILE } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { globals } from '../../server/core/globals.js';
import { coreDir } from '../../server/core/config.js';
import { etagBitsFor, makeEtag } from '../../server/http/etag.js';
import type {
  DavFailure, DavLockStore, DavProvider, DavRepository, DavResource, DavWriter, DeadProps,
} from './api.js';
import { lockStore } from './lockdb.js';

/** The state directory mod_dav_fs keeps next to resources (DAV_FS_STATE_DIR). */
export const STATE_DIR = '.DAV';
const STATE_FILE_FOR_DIR = '.state_for_dir';
/** httpd's DEFAULT_DAV_LOCKDB, under DefaultRuntimeDir. */
const DEFAULT_LOCKDB = 'davlockdb';

interface FsServerConfig { lockDb: string | undefined }

/** Where a resource's dead properties are kept. DIFFERENCE: httpd's file there is a DBM
 *  database; plume's is JSON (docs/differences.md). */
function propFile(res: DavResource): string {
  return res.collection ? path.join(res.path, STATE_DIR, STATE_FILE_FOR_DIR) : path.join(path.dirname(res.path), STATE_DIR, path.basename(res.path));
}

function statOf(p: string): Promise<fs.BigIntStats | null> {
  return fsp.stat(p, { bigint: true }).then((s) => s, () => null);
}

function makeResource(uri: string, p: string, st: fs.BigIntStats | null): DavResource {
  return { uri, path: p, exists: st !== null, collection: st !== null && st.isDirectory(), stat: st };
}

/** ISO 8601 as mod_dav_fs prints creationdate (DAV_STYLE_ISO8601). */
function iso8601(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function errnoStatus(e: unknown): number {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return 403;
  if (code === 'ENOENT' || code === 'ENOTDIR') return 409;
  if (code === 'ENOSPC' || code === 'EDQUOT') return 507;
  return 500;
}

class FsRepository implements DavRepository {
  readonly davClasses = ['<http://apache.org/dav/propset/fs/1>'];
  constructor(readonly locks: DavLockStore | undefined) {}

  async resource(uri: string, p: string): Promise<DavResource> {
    return makeResource(uri, p, await statOf(p));
  }

  async children(res: DavResource): Promise<DavResource[]> {
    let names: string[];
    try { names = await fsp.readdir(res.path); } catch { return []; }
    const out: DavResource[] = [];
    const base = res.uri.endsWith('/') ? res.uri : res.uri + '/';
    for (const n of names) {
      if (n === STATE_DIR) continue;
      const p = path.join(res.path, n);
      const st = await statOf(p);
      if (st === null) continue;
      out.push(makeResource(base + encodeURIComponent(n).replace(/%2F/g, '/'), p, st));
    }
    return out;
  }

  async mkcol(res: DavResource): Promise<string | undefined> {
    try {
      await fsp.mkdir(res.path);
      return undefined;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code ?? 'EIO';
    }
  }

  async openWrite(res: DavResource, offset: number | undefined): Promise<DavWriter> {
    if (offset !== undefined) {
      // A partial PUT writes into the file itself, as httpd's seekable stream does.
      const fh = await fsp.open(res.path, res.exists ? 'r+' : 'w');
      let pos = offset;
      return {
        write: async (chunk) => { await fh.write(chunk, 0, chunk.length, pos); pos += chunk.length; },
        commit: () => fh.close(),
        abort: () => fh.close(),
      };
    }
    const tmp = path.join(path.dirname(res.path), `.davfs.tmp${randomBytes(4).toString('hex')}`);
    const fh = await fsp.open(tmp, 'wx', 0o644);
    let closed = false;
    const close = async (): Promise<void> => { if (!closed) { closed = true; await fh.close(); } };
    return {
      write: async (chunk) => { await fh.write(chunk); },
      commit: async () => { await close(); await fsp.rename(tmp, res.path); },
      abort: async () => { await close(); await fsp.rm(tmp, { force: true }); },
    };
  }

  async remove(res: DavResource): Promise<DavFailure[]> {
    try {
      if (res.collection) await fsp.rm(res.path, { recursive: true });
      else {
        await fsp.unlink(res.path);
        await fsp.rm(propFile(res), { force: true });
      }
      return [];
    } catch (e) {
      return [{ uri: res.uri, status: errnoStatus(e) }];
    }
  }

  async copy(src: DavResource, dst: DavResource, depth: 0 | 'infinity'): Promise<DavFailure[]> {
    try {
      if (src.collection) {
        if (depth === 'infinity') await fsp.cp(src.path, dst.path, { recursive: true, errorOnExist: false, force: true });
        else {
          await fsp.mkdir(dst.path);
          await copyIfExists(propFile(src), path.join(dst.path, STATE_DIR, STATE_FILE_FOR_DIR));
        }
      } else {
        await fsp.copyFile(src.path, dst.path);
        await copyIfExists(propFile(src), propFile(dst));
      }
      return [];
    } catch (e) {
      return [{ uri: dst.uri, status: errnoStatus(e) }];
    }
  }

  async move(src: DavResource, dst: DavResource): Promise<DavFailure[]> {
    try {
      await fsp.rename(src.path, dst.path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EXDEV') return [{ uri: src.uri, status: errnoStatus(e) }];
      const failed = await this.copy(src, dst, 'infinity');
      if (failed.length > 0) return failed;
      return this.remove(src);
    }
    if (!src.collection) {
      const from = propFile(src);
      if (fs.existsSync(from)) {
        await fsp.mkdir(path.dirname(propFile(dst)), { recursive: true });
        await fsp.rename(from, propFile(dst));
      } else await fsp.rm(propFile(dst), { force: true });
    }
    return [];
  }

  async readProps(res: DavResource): Promise<DeadProps | null> {
    let text: string;
    try { text = await fsp.readFile(propFile(res), 'utf8'); } catch { return null; }
    try {
      const db = JSON.parse(text) as DeadProps;
      if (!Array.isArray(db.namespaces) || !Array.isArray(db.props)) return null;
      return db;
    } catch {
      return null;
    }
  }

  async writeProps(res: DavResource, db: DeadProps): Promise<void> {
    const file = propFile(res);
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(db));
    await fsp.rename(tmp, file);
  }

  liveProps(r: Request, res: DavResource): [number, string, string][] {
    const st = res.stat;
    if (st === null) return [];
    const out: [number, string, string][] = [];
    out.push([1, 'creationdate', iso8601(Number(st.ctimeMs))]);
    if (!res.collection) out.push([1, 'getcontentlength', String(st.size)]);
    out.push([1, 'getlastmodified', new Date(Number(st.mtimeMs)).toUTCString()]);
    out.push([1, 'getetag', makeEtag(r, st, etagBitsFor(coreDir(r)))]);
    if (!res.collection) out.push([2, 'executable', (Number(st.mode) & 0o100) !== 0 ? 'T' : 'F']);
    return out;
  }
}

async function copyIfExists(from: string, to: string): Promise<void> {
  try {
    await fsp.mkdir(path.dirname(to), { recursive: true });
    await fsp.copyFile(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

// ---- configuration ------------------------------------------------------------------------

function davLockDb(cmd: CmdParms<FsServerConfig, undefined>, arg: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
  if (err) return err;
  cmd.srv.lockDb = cmd.serverRootRelative(arg);
  return undefined;
}

const provider: DavProvider = {
  open(r: Request): DavRepository {
    const conf = self.server(r.server);
    const file = conf.lockDb ?? path.join(globals(r.rt.ctx).runtimeDir ?? r.rt.ctx.serverRootRelative('logs'), DEFAULT_LOCKDB);
    return new FsRepository(lockStore(file));
  },
};

const self = defineModule<FsServerConfig, undefined>({
  name: 'dav_fs_module',
  source: 'mod_dav_fs.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ lockDb: undefined }),
  mergeServerConfig: (base, add) => ({ lockDb: add.lockDb ?? base.lockDb }),
  directives: [
    directive({ name: 'DAVLockDB', args: 'TAKE1', where: RSRC_CONF, help: 'specify a lock database', handler: davLockDb }),
  ],
  providers: [{ group: 'dav', name: 'filesystem', version: '0', provider }],
});

export default self;
