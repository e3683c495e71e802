// mod_dbd's interface to other modules (modules/database/mod_dbd.h): httpd's optional
// functions ap_dbd_prepare, ap_dbd_open, ap_dbd_close and ap_dbd_acquire, reached through the
// 'dbd' provider group so that mod_authn_dbd, mod_authz_dbd and mod_session_dbd never import
// mod_dbd itself.

import type { MaybePromise } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { DbdResults } from '../../lib/dbd/pgsql.js';

export { DbdError, type DbdResults } from '../../lib/dbd/pgsql.js';

/** A connection handed to a module (ap_dbd_t): its driver's name, the labels of the
 *  statements prepared on it, and the calls APR's apr_dbd_pvselect / pvquery make. */
export interface DbdHandle {
  readonly driverName: string;
  /** Labels of the prepared statements (ap_dbd_t's `prepared` hash). */
  readonly prepared: ReadonlySet<string>;
  /** Arguments are text, null for SQL NULL; as APR, a statement reads as many as its
   *  placeholders and ignores the rest. */
  /** Runs a prepared statement that returns rows; rejects with a DbdError. `random` is APR's
   *  seek: false (sequential access) reads a server error as no rows, as apr_dbd_pgsql does. */
  pselect(label: string, args: readonly (string | null)[], random?: boolean): Promise<DbdResults>;
  /** Runs a prepared statement that changes rows: the number of rows affected. */
  pquery(label: string, args: readonly (string | null)[]): Promise<number>;
  /** apr_dbd_error: the driver's text for the last error. */
  error(): string;
}

export interface DbdApi {
  /** ap_dbd_prepare: registers `query` (APR's %s placeholders) under `label` in the server's
   *  configuration; an empty query removes an inherited one. Configuration time only. */
  prepare(s: ServerRec, query: string, label: string): void;
  /** ap_dbd_acquire: the request's connection (one per initial request, given back when the
   *  request is logged), or null after logging why. */
  acquire(r: Request): MaybePromise<DbdHandle | null>;
  /** ap_dbd_open / ap_dbd_close: a connection the caller gives back itself. */
  open(s: ServerRec): Promise<DbdHandle | null>;
  close(s: ServerRec, h: DbdHandle): void;
}

declare module '../../server/module.js' {
  interface ProviderGroups {
    dbd: DbdApi;
  }
}

export const DBD_PROVIDER_GROUP = 'dbd';
export const DBD_PROVIDER_NAME = 'dbd';
