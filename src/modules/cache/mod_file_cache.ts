// mod_file_cache (modules/cache/mod_file_cache.c): CacheFile and MMapFile name files that are
// opened and read when the configuration is read, and served from there for requests whose
// DocumentRoot path is exactly one of them: the translate_name hook maps the URI as the core
// does and notes the cached file; the handler (run late, before the default handler) answers
// GET and HEAD with the Last-Modified, Content-Length and ETag of the stat taken at startup,
// httpd's conditionals, and the bytes read then; ranges are cut by the byterange filter. A
// file changed or replaced later is not seen until a restart, as in httpd. The per-server
// tables are not merged: a <VirtualHost> has only its own files.
//
// DIFFERENCE: Node has neither mmap(2) nor sendfile(2). Both directives read the file's bytes
// into memory at startup (httpd maps MMapFile files and keeps CacheFile files open), so an
// in-place write to a listed file is never seen (httpd's mapping shows it). A range of a
// CacheFile file replaced after startup is cut from the startup bytes (httpd reopens the file
// by name to read a range and sends the new file's bytes at the old offsets).

import * as fs from 'node:fs';
import {
  DECLINED, HOOK_LAST, HOOK_MIDDLE, MODULE_API_VERSION, OK, RSRC_CONF, defineModule, directive,
  type ModuleDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { EOS, type Bucket } from '../../server/filters.js';
import { APLOG_WARNING } from '../../server/log/levels.js';
import { errnoOf } from '../../server/log/error-log.js';
import { toHttpDate } from '../../server/log/time.js';
import { translateName } from '../../server/core/core-hooks.js';
import { coreDir } from '../../server/core/config.js';
import { makeEtag, etagBitsFor } from '../../server/http/etag.js';
import { meetsConditions, rationalizeMtime, updateMtime } from '../../server/http/conditional.js';
import { DEFAULT_LIMIT_REQUEST_BODY } from '../../server/http/http-core.js';
import { discardBody } from '../../server/http/http-in.js';
import { mtimeMicrosOf } from '../../server/request/stat-cache.js';

const MOD = 'file_cache';
/** AP_MAX_SENDFILE: the largest file either directive takes. */
const AP_MAX_SENDFILE = 16777216;

/** One listed file as it was at startup. */
export interface CachedFile {
  readonly filename: string;
  readonly stat: fs.Stats;
  readonly data: Buffer;
  /** Its mtime in ms as Last-Modified uses it. */
  readonly mtimeMs: number;
  /** MMapFile (true) or CacheFile. */
  readonly mmapped: boolean;
}

export interface FileCacheServerConfig {
  /** Absolute path → the file. */
  readonly files: Map<string, CachedFile>;
}

type Cmd = CmdParms<FileCacheServerConfig, unknown>;

/** cache_the_file: stats, checks and reads `filename`, or logs why it is skipped. */
function cacheTheFile(cmd: Cmd, filename: string, mmap: boolean): undefined {
  const fspec = cmd.serverRootRelative(filename);
  if (fspec.includes('\0')) {
    cmd.log(MOD, APLOG_WARNING, `AH00794: invalid file path ${filename}, skipping`, { code: 20023, text: 'The given path was above the root path' });
    return undefined;
  }
  let st: fs.Stats;
  try {
    st = fs.statSync(fspec);
  } catch (e) {
    cmd.log(MOD, APLOG_WARNING, `AH00795: unable to stat(${fspec}), skipping`, errnoOf(e));
    return undefined;
  }
  if (!st.isFile()) {
    cmd.log(MOD, APLOG_WARNING, `AH00796: ${fspec} isn't a regular file, skipping`);
    return undefined;
  }
  if (st.size > AP_MAX_SENDFILE) {
    cmd.log(MOD, APLOG_WARNING, `AH00797: ${fspec} is too large to cache, skipping`);
    return undefined;
  }
  let data: Buffer;
  try {
    data = fs.readFileSync(fspec);
  } catch (e) {
    cmd.log(MOD, APLOG_WARNING, `AH00798: unable to open(${fspec}, O_RDONLY), skipping`, errnoOf(e));
    return undefined;
  }
  if (mmap && st.size === 0) {
    // mmap(2) of zero bytes fails with EINVAL; httpd names the file as written here.
    cmd.log(MOD, APLOG_WARNING, `AH00799: unable to mmap ${filename}, skipping`, { code: 22, text: 'Invalid argument' });
    return undefined;
  }
  // The bytes read are the file's from now on, even if it grew between the stat and the read.
  if (data.length !== st.size) data = data.length > st.size ? data.subarray(0, st.size) : Buffer.concat([data, Buffer.alloc(st.size - data.length)]);
  cmd.srv.files.set(fspec, { filename: fspec, stat: st, data, mtimeMs: mtimeMicrosOf(st, fspec) / 1000, mmapped: mmap });
  return undefined;
}

// ---- hooks -------------------------------------------------------------------------------------

/** The file the translate hook found for a request. */
const matched = new WeakMap<Request, CachedFile>();

/** file_cache_xlat: with files listed, maps the URI as the core does and claims the request
 *  when the path is one of them. */
function fileCacheXlat(r: Request): number {
  const files = self.server(r.server).files;
  if (files.size === 0) return DECLINED;
  const res = translateName(r);
  if (res !== OK || r.filename === '') return res;
  const match = files.get(r.filename);
  if (match === undefined) return DECLINED;
  matched.set(r, match);
  return OK;
}

/** file_cache_handler: a GET (or HEAD) of a listed file with the default handler or a media
 *  type as its handler. */
function fileCacheHandler(r: Request): number | Promise<number> {
  const h = r.handler ?? '';
  if (!/\//.test(h) && h !== '' && h !== 'default-handler') return DECLINED;
  if (r.method !== 'GET' && r.method !== 'HEAD') return DECLINED;
  const match = matched.get(r);
  if (match === undefined) return DECLINED;
  if (r.body && !r.body.done) {
    const discarded = r.inputFilters.length > 0 ? discardBody(r) : r.body.discard(coreDir(r).limitRequestBody ?? DEFAULT_LIMIT_REQUEST_BODY);
    return discarded.then((st) => (st !== OK ? st : serve(r, match)));
  }
  return serve(r, match);
}

function serve(r: Request, f: CachedFile): number | Promise<number> {
  updateMtime(r, f.mtimeMs);
  r.headersOut.set('Last-Modified', toHttpDate(rationalizeMtime(r, r.mtime)));
  r.clength = f.stat.size;
  r.headersOut.set('Content-Length', String(f.stat.size));
  const etag = makeEtag(r, f.stat, etagBitsFor(coreDir(r)));
  if (etag) r.headersOut.set('ETag', etag);
  const cond = meetsConditions(r);
  if (cond !== OK) return cond;
  const bb: Bucket[] = [];
  if (f.stat.size > 0) bb.push({ kind: 'file', path: f.filename, start: 0, length: f.stat.size, cached: f.data });
  bb.push(EOS);
  const w = r.write(bb);
  return w instanceof Promise ? w.then(() => OK) : OK;
}

// ---- the module ----------------------------------------------------------------------------

const self = defineModule<FileCacheServerConfig, unknown>({
  name: 'file_cache_module',
  source: 'mod_file_cache.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ files: new Map() }),
  directives: [
    directive<FileCacheServerConfig, unknown, 'ITERATE'>({ name: 'cachefile', args: 'ITERATE', where: RSRC_CONF, help: 'A space separated list of files to add to the file handle cache at config time', handler: (cmd, f) => cacheTheFile(cmd, f, false) }),
    directive<FileCacheServerConfig, unknown, 'ITERATE'>({ name: 'mmapfile', args: 'ITERATE', where: RSRC_CONF, help: 'A space separated list of files to mmap at config time', handler: (cmd, f) => cacheTheFile(cmd, f, true) }),
  ],
  hooks: {
    translateName: { fn: fileCacheXlat, order: HOOK_MIDDLE },
    handler: { fn: fileCacheHandler, order: HOOK_LAST },
  },
});

export default self;
self.decl satisfies ModuleDecl<FileCacheServerConfig, unknown>;
