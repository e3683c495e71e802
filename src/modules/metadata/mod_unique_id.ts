// mod_unique_id (modules/metadata/mod_unique_id.c): every request gets UNIQUE_ID in its
// environment, 27 characters of base64url (RFC 4648, no padding) over 20 bytes that httpd 2.4
// lays out as: the request's second (4 bytes, big-endian), 10 random bytes drawn once per serving
// process, a 16-bit counter (big-endian; the process's counter modulo 65535, started at a
// random value) and the connection's id (4 bytes, big-endian).
//
// The random root tells processes apart (httpd draws it in child_init, as here), the counter
// and the second tell requests of one process apart. An internal redirect keeps its original
// request's id (REDIRECT_UNIQUE_ID), as httpd's post_read_request hook does.

import { randomBytes } from 'node:crypto';
import { DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, defineModule } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { tableGet, tableSet } from '../../server/apr-table.js';

const ROOT_SIZE = 10;
/** stamp (4) + root (10) + counter (2) + connection id (4). */
const RECORD_SIZE = 4 + ROOT_SIZE + 2 + 4;

/** The process's identity and counter (httpd's cur_unique_id.root and cur_unique_counter). */
let root: Buffer = randomBytes(ROOT_SIZE);
let counter: number = randomBytes(4).readUInt32BE(0);

/** Draws a new root and counter start: each serving process does it once (child_init). */
export function reseed(): void {
  root = randomBytes(ROOT_SIZE);
  counter = randomBytes(4).readUInt32BE(0);
}

/** The 27-character id of a request made at `seconds` on connection `connId`, with counter
 *  value `count` and process root `rootBytes` (exported for the tests). */
export function encodeUniqueId(seconds: number, rootBytes: Buffer, count: number, connId: number): string {
  const rec = Buffer.alloc(RECORD_SIZE);
  rec.writeUInt32BE(seconds >>> 0, 0);
  rootBytes.copy(rec, 4, 0, ROOT_SIZE);
  rec.writeUInt16BE(count % 0xffff, 4 + ROOT_SIZE);
  rec.writeUInt32BE(connId >>> 0, 4 + ROOT_SIZE + 2);
  // 20 bytes make 26⅔ sextets: httpd keeps 27 characters and no padding, which is exactly
  // base64url without its '=' padding.
  return rec.toString('base64url');
}

function generate(r: Request): string {
  const count = counter;
  counter = (counter + 1) >>> 0;
  return encodeUniqueId(Math.floor(r.requestTime / 1000), root, count, r.connection.id);
}

/** set_unique_id (post_read_request): an internal redirect carries its original id on. */
function setUniqueId(r: Request): number {
  let id: string | undefined;
  if (r.prev !== null) id = tableGet(r.subprocessEnv, 'REDIRECT_UNIQUE_ID');
  // DIFFERENCE: httpd reuses r->log_id when an error-log line already made one through this
  // module's generate_log_id hook; plume's core makes no log ids (%L logs "-"), so there is none.
  if (id === undefined) id = generate(r);
  tableSet(r.subprocessEnv, 'UNIQUE_ID', id);
  return DECLINED;
}

const self = defineModule<undefined, undefined>({
  name: 'unique_id_module',
  source: 'mod_unique_id.c',
  apiVersion: MODULE_API_VERSION,
  hooks: { postReadRequest: { fn: setUniqueId, order: HOOK_MIDDLE } },
  configHooks: { childInit: reseed },
});

export default self;
