// The WebDAV provider interface (httpd's mod_dav.h): mod_dav speaks the protocol and asks a
// provider of the `dav` group (mod_dav_fs registers "filesystem") for the repository, the
// dead property database and the lock database; a `dav_lock` provider (mod_dav_lock's
// "generic") may supply the locks instead.

import type { BigIntStats } from 'node:fs';
import type { Request } from '../../server/request/request.js';

/** A resource the repository knows: a file, a collection, or nothing yet (a null resource). */
export interface DavResource {
  /** The URL path (collections without the trailing slash the client may have sent). */
  readonly uri: string;
  /** The filesystem path. */
  readonly path: string;
  readonly exists: boolean;
  readonly collection: boolean;
  readonly stat: BigIntStats | null;
}

export type DavLockScope = 'exclusive' | 'shared';

/** A write lock (dav_lock): `root` is the path of the resource it was taken on. */
export interface DavLock {
  readonly token: string;
  readonly scope: DavLockScope;
  readonly depth: 0 | 'infinity';
  /** The <owner> element as the client sent it, serialised; undefined without one. */
  readonly owner: string | undefined;
  /** Expiry in ms since the epoch; 0 = infinite. */
  readonly expires: number;
  readonly root: string;
  /** The URL path of the lock root (for DAV:lockroot and messages). */
  readonly rootUri: string;
}

/** The locks of a repository (dav_hooks_locks). Paths are filesystem paths. */
export interface DavLockStore {
  /** The unexpired locks that apply to `p`: its own and its ancestors' Depth infinity ones. */
  covering(p: string): Promise<DavLock[]>;
  /** The unexpired locks taken on resources below `p`. */
  below(p: string): Promise<DavLock[]>;
  /** Whether `p` is a lock-null resource (locked, not existing). */
  isLockNull(p: string): Promise<boolean>;
  /** The lock-null names directly in collection `dir`. */
  lockNullIn(dir: string): Promise<string[]>;
  /** Adds the lock unless `conflict`, given the locks it would meet (on its resource, above it
   *  with Depth infinity, below it when it is Depth infinity), names a reason: checked and added
   *  in one step, so two workers cannot both take an exclusive lock. Resolves with the reason. */
  add(lock: DavLock, lockNull: boolean, conflict?: (held: readonly DavLock[]) => string | undefined): Promise<string | undefined>;
  /** Sets a new expiry on the locks with these tokens; returns them. */
  refresh(tokens: readonly string[], expires: number): Promise<DavLock[]>;
  remove(token: string): Promise<void>;
  /** Forgets every lock on `p` and below (after a DELETE or the source of a MOVE). */
  removeAt(p: string): Promise<void>;
  /** The resource at `p` now exists: it is no longer lock-null. */
  created(p: string): Promise<void>;
}

/** A dead property database (dav_hooks_propdb) for one resource: namespace table plus
 *  properties, each stored as its serialised element with nsN prefixes into the table. */
export interface DeadProps {
  namespaces: string[];
  props: DeadProp[];
}
export interface DeadProp { ns: number; name: string; xml: string }

/** An open file being written by PUT (dav_stream). */
export interface DavWriter {
  write(chunk: Buffer): Promise<void>;
  /** Makes the content visible (renames the temporary file over the resource). */
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/** A failed member of a DELETE/COPY/MOVE (becomes a multistatus response). */
export interface DavFailure { readonly uri: string; readonly status: number }

/** The repository as one request sees it (configuration already chosen). */
export interface DavRepository {
  resource(uri: string, path: string): Promise<DavResource>;
  /** The members of a collection, the provider's state directory left out. */
  children(res: DavResource): Promise<DavResource[]>;
  /** Creates the collection; an errno code on failure. */
  mkcol(res: DavResource): Promise<string | undefined>;
  /** Opens the resource for writing at `offset` (a Content-Range PUT) or from scratch. */
  openWrite(res: DavResource, offset: number | undefined): Promise<DavWriter>;
  remove(res: DavResource): Promise<DavFailure[]>;
  copy(src: DavResource, dst: DavResource, depth: 0 | 'infinity'): Promise<DavFailure[]>;
  move(src: DavResource, dst: DavResource): Promise<DavFailure[]>;
  readProps(res: DavResource): Promise<DeadProps | null>;
  writeProps(res: DavResource, db: DeadProps): Promise<void>;
  /** The lock database; undefined when the provider has none configured. */
  readonly locks: DavLockStore | undefined;
  /** The provider's live properties for a resource, in httpd's order: [namespace index
   *  (1 = DAV:, 2 = http://apache.org/dav/props/), name, value]. */
  liveProps(r: Request, res: DavResource): [number, string, string][];
  /** The extra DAV: header compliance classes (`<http://apache.org/dav/propset/fs/1>`). */
  readonly davClasses: readonly string[];
}

/** A `dav` provider: opens its repository for a request. `root` is the repository's root
 *  (DAVBasePath, or the path of the section that enabled DAV), as httpd's get_resource
 *  receives it; the filesystem provider maps by r.filename and does not need it. */
export interface DavProvider {
  open(r: Request, root: string): DavRepository;
}

/** A `dav_lock` provider (mod_dav_lock's generic locks): a lock store for a request, or
 *  undefined when not configured there. */
export interface DavLockProvider {
  open(r: Request): DavLockStore | undefined;
}

declare module '../../server/module.js' {
  interface ProviderGroups {
    dav: DavProvider;
    dav_lock: DavLockProvider;
  }
}
