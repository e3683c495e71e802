// DBM files as apr_dbm opens them, by type name (AuthDBMType, AuthzDBMType, htdbm -T).
// plume reads and writes SDBM only; "default" means SDBM here.
// DIFFERENCE: Debian's APR uses Berkeley DB for "default" and also offers GDBM, NDBM and DB;
// plume reports those types as not implemented (the error apr_dbm gives for a type it lacks).
//
// Server-side reads go through a cache revalidated by stat, so a database is parsed once and
// a change made by htdbm is seen on the next request.

import * as fs from 'node:fs';
import { DIRFEXT, PAGFEXT, Sdbm, SdbmError } from './sdbm.js';

export { Sdbm, SdbmError, sdbmHash, writeReplacing, DIRFEXT, PAGFEXT, PAIRMAX } from './sdbm.js';

/** The DBM types plume implements, as `-V` and the docs list them. */
export const SUPPORTED_DBM_TYPES: readonly string[] = ['SDBM'];

/** Whether a type name (case-insensitive, as apr_dbm compares) is one plume reads. */
export function isSupportedDbmType(type: string): boolean {
  const t = type.toLowerCase();
  return t === 'sdbm' || t === 'default';
}

/** The error for a type plume does not implement (APR_ENOTIMPL). */
export function notImplemented(): SdbmError {
  return new SdbmError('APR_ENOTIMPL', 'This function has not been implemented on this platform');
}

interface Cached {
  readonly db: Sdbm;
  readonly dirStamp: string;
  readonly pagStamp: string;
}
const cache = new Map<string, Cached>();

function stamp(st: fs.Stats): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/** Opens a DBM file read-only for the server: the parsed database, shared while the files do
 *  not change. Throws the file system error (or SdbmError) apr_dbm_open would report. */
export function openDbmReadOnly(type: string, name: string): Sdbm {
  if (!isSupportedDbmType(type)) throw notImplemented();
  const dst = fs.statSync(name + DIRFEXT);
  const pst = fs.statSync(name + PAGFEXT);
  const ds = stamp(dst);
  const ps = stamp(pst);
  const c = cache.get(name);
  if (c && c.dirStamp === ds && c.pagStamp === ps) return c.db;
  const db = Sdbm.load(name);
  if (cache.size > 256) cache.clear();
  cache.set(name, { db, dirStamp: ds, pagStamp: ps });
  return db;
}

/** The status an SdbmError is logged with, as APR gives it (APR_ENOTIMPL 70023 for a type
 *  plume does not read); undefined for any other error (a system error: errnoOf). */
export function sdbmStatus(e: unknown): { code: number; text: string } | undefined {
  if (!(e instanceof SdbmError)) return undefined;
  if (e.code === 'APR_ENOTIMPL') return { code: 70023, text: e.message };
  if (e.code === 'ENOSPC') return { code: 28, text: 'No space left on device' };
  if (e.code === 'EINVAL') return { code: 22, text: 'Invalid argument' };
  return undefined;
}
