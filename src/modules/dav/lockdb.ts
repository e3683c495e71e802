// A lock database file (mod_dav_fs's DavLockDB, mod_dav_lock's DavGenericLockDB).
// DIFFERENCE: httpd keeps locks in a DBM file (SDBM or Berkeley DB); plume keeps them as
// JSON at the configured path (docs/differences.md). Changes are written to a temporary
// file and renamed over the database (readers never see half a file); a change is serialised
// within the process by a queue and between worker processes by a lock file next to the
// database (`<file>.lck`, created exclusively, holding the owner's pid), as httpd's DBM lock
// serialises its workers. A lock file whose owner is gone, or older than LOCK_STALE_MS, is
// broken.

import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import type { DavLock, DavLockStore } from './api.js';

interface Stored extends DavLock { lockNull: boolean }
interface DbFile { locks: Stored[] }

const queues = new Map<string, Promise<unknown>>();
/** A lock file older than this is left over from a crash (a change takes milliseconds). */
const LOCK_STALE_MS = 10000;

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}

/** Takes the database's lock file; resolves with its release. */
async function lockFile(file: string): Promise<() => Promise<void>> {
  const lck = `${file}.lck`;
  for (let attempt = 0; ; attempt++) {
    try {
      const fh = await fsp.open(lck, 'wx', 0o600);
      try { await fh.writeFile(String(process.pid)); } finally { await fh.close(); }
      return () => fsp.unlink(lck).catch(() => undefined);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    try {
      const [text, st] = await Promise.all([fsp.readFile(lck, 'utf8'), fsp.stat(lck)]);
      const pid = Number(text);
      if ((text !== '' && Number.isInteger(pid) && pid > 0 && pid !== process.pid && !alive(pid)) || Date.now() - st.mtimeMs > LOCK_STALE_MS) {
        await fsp.unlink(lck).catch(() => undefined);
        continue;
      }
    } catch {
      continue; // released meanwhile
    }
    // Another worker is changing the database: try again shortly (a change takes milliseconds).
    await new Promise((res) => setTimeout(res, Math.min(20, 1 + attempt)));
  }
}
const stores = new Map<string, FileLockStore>();

/** The lock store kept in `file` (one object per file and process). */
export function lockStore(file: string): DavLockStore {
  let s = stores.get(file);
  if (s === undefined) { s = new FileLockStore(file); stores.set(file, s); }
  return s;
}

function isBelow(p: string, root: string): boolean {
  return p.length > root.length && p.startsWith(root) && (root.endsWith('/') || p[root.length] === '/');
}

function isLock(x: unknown): x is Stored {
  if (typeof x !== 'object' || x === null) return false;
  const o = x as Record<string, unknown>;
  return typeof o['token'] === 'string' && (o['scope'] === 'exclusive' || o['scope'] === 'shared')
    && (o['depth'] === 0 || o['depth'] === 'infinity') && typeof o['expires'] === 'number'
    && typeof o['root'] === 'string' && typeof o['rootUri'] === 'string'
    && (o['owner'] === undefined || typeof o['owner'] === 'string') && typeof o['lockNull'] === 'boolean';
}

class FileLockStore implements DavLockStore {
  constructor(private readonly file: string) {}

  private async load(): Promise<Stored[]> {
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    let parsed: unknown;
    try { parsed = JSON.parse(text); } catch { return []; }
    const list = (parsed as Partial<DbFile> | null)?.locks;
    if (!Array.isArray(list)) return [];
    const now = Date.now();
    return list.filter(isLock).filter((l) => l.expires === 0 || l.expires > now);
  }

  private async save(locks: Stored[]): Promise<void> {
    const tmp = path.join(path.dirname(this.file), `.${path.basename(this.file)}.${process.pid}.tmp`);
    await fsp.writeFile(tmp, JSON.stringify({ locks } satisfies DbFile));
    await fsp.rename(tmp, this.file);
  }

  /** Runs a read-modify-write step after the previous ones on the same file. */
  private update<T>(fn: (locks: Stored[]) => { locks?: Stored[]; result: T }): Promise<T> {
    const prev = queues.get(this.file) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(async () => {
      const release = await lockFile(this.file);
      try {
        const locks = await this.load();
        const out = fn(locks);
        if (out.locks !== undefined) await this.save(out.locks);
        return out.result;
      } finally {
        await release();
      }
    });
    queues.set(this.file, next);
    return next;
  }

  async covering(p: string): Promise<DavLock[]> {
    const locks = await this.load();
    return locks.filter((l) => l.root === p || (l.depth === 'infinity' && isBelow(p, l.root)));
  }

  async below(p: string): Promise<DavLock[]> {
    return (await this.load()).filter((l) => isBelow(l.root, p));
  }

  async isLockNull(p: string): Promise<boolean> {
    return (await this.load()).some((l) => l.root === p && l.lockNull);
  }

  async lockNullIn(dir: string): Promise<string[]> {
    const names = new Set<string>();
    for (const l of await this.load()) {
      if (l.lockNull && path.dirname(l.root) === dir) names.add(path.basename(l.root));
    }
    return [...names];
  }

  add(lock: DavLock, lockNull: boolean, conflict?: (held: readonly DavLock[]) => string | undefined): Promise<string | undefined> {
    return this.update((locks) => {
      if (conflict !== undefined) {
        const held = locks.filter((l) => l.root === lock.root || (l.depth === 'infinity' && isBelow(lock.root, l.root)) || (lock.depth === 'infinity' && isBelow(l.root, lock.root)));
        const why = conflict(held);
        if (why !== undefined) return { result: why };
      }
      return { locks: [...locks, { ...lock, lockNull }], result: undefined };
    });
  }

  refresh(tokens: readonly string[], expires: number): Promise<DavLock[]> {
    return this.update((locks) => {
      const changed: DavLock[] = [];
      const out = locks.map((l) => {
        if (!tokens.includes(l.token)) return l;
        const n = { ...l, expires };
        changed.push(n);
        return n;
      });
      return { locks: out, result: changed };
    });
  }

  remove(token: string): Promise<void> {
    return this.update((locks) => ({ locks: locks.filter((l) => l.token !== token), result: undefined }));
  }

  removeAt(p: string): Promise<void> {
    return this.update((locks) => ({ locks: locks.filter((l) => l.root !== p && !isBelow(l.root, p)), result: undefined }));
  }

  created(p: string): Promise<void> {
    return this.update((locks) => ({ locks: locks.map((l) => (l.root === p && l.lockNull ? { ...l, lockNull: false } : l)), result: undefined }));
  }
}
