// The session API (modules/session/mod_session.h): the session record, and the two provider
// groups through which the session modules meet without reaching into each other.
//
//  - 'session_api' ("session", from mod_session): httpd's optional functions ap_session_load,
//    ap_session_get, ap_session_set and ap_session_save, which mod_auth_form and other
//    modules call.
//  - 'session_store': the session_load / session_save hooks (run-first), implemented by the
//    store modules (mod_session_cookie); 'session_codec': session_encode / session_decode
//    (run-all), where a codec such as mod_session_crypto transforms `encoded`.

import type { MaybePromise } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';

export interface SessionRec {
  /** The key/value pairs, in insertion order (an apr_table). */
  entries: Map<string, string>;
  /** The encoded form: what a store read or will write. */
  encoded: string | undefined;
  /** Expiry in microseconds since the epoch (APR time, a 64-bit integer), 0n = none. */
  expiry: bigint;
  /** SessionMaxAge in seconds, 0 = none. */
  maxage: number;
  dirty: boolean;
  written: boolean;
}

/** The APR status codes the session modules return, with the text httpd logs for them. */
export const APR_EGENERAL = 20014;
export const APR_ECRYPT = 100005;
export const APR_EPADDING = 100006;

/** apr_strerror's text for a status a store or codec returns: APR_EGENERAL, an errno
 *  (apr_dbd_pgsql's PGRES_FATAL_ERROR, 7, reads as E2BIG's text), or APR's text for a code it
 *  does not name. */
export function aprStatusError(code: number): { code: number; text: string } {
  if (code === APR_EGENERAL) return { code, text: 'Internal error (specific information not available)' };
  if (code === 7) return { code, text: 'Argument list too long' };
  return { code, text: 'Error string not specified yet' };
}

export function newSession(): SessionRec {
  return { entries: new Map(), encoded: undefined, expiry: 0n, maxage: 0, dirty: false, written: false };
}

/** Hook results, as httpd's: OK (0) or DECLINED (-1) or an error status. */
export interface SessionStore {
  /** Finds the session of the request, or DECLINED when this store is not configured there. */
  load(r: Request): MaybePromise<{ rv: number; z?: SessionRec }>;
  save(r: Request, z: SessionRec): MaybePromise<number>;
}

export interface SessionCodec {
  /** Runs after the identity encoder (the codec transforms z.encoded). */
  encode(r: Request, z: SessionRec): MaybePromise<number>;
  /** Runs before the identity decoder. */
  decode(r: Request, z: SessionRec): MaybePromise<number>;
}

/** mod_session's optional functions; a status of 0 is success. */
export interface SessionApi {
  load(r: Request): Promise<{ status: number; z: SessionRec | undefined }>;
  get(r: Request, z: SessionRec | undefined, key: string): Promise<{ status: number; value: string | undefined }>;
  set(r: Request, z: SessionRec | undefined, key: string, value: string | undefined): Promise<number>;
  save(r: Request, z: SessionRec | undefined): Promise<number>;
}

declare module '../../server/module.js' {
  interface ProviderGroups {
    session_api: SessionApi;
    session_store: SessionStore;
    session_codec: SessionCodec;
  }
}
