// mod_session_dbd (modules/session/mod_session_dbd.c): mod_session's store in an SQL database
// reached through mod_dbd (the 'dbd' provider: httpd's ap_dbd_acquire, one connection per
// request), with statements prepared by DBDPrepareSQL under the labels named here.
//
//  - Anonymous sessions: SessionDBDCookieName NAME [attributes] (Set-Cookie) or
//    SessionDBDCookieName2 (Set-Cookie2) carries a UUID that keys the session's row. A session
//    found under a key that parses as a UUID keeps it while unchanged (the update statement
//    only refreshes the expiry); a changed or new session gets a new UUID (the update moves
//    the row to it, or the insert statement adds one when no row was updated). A session
//    saved empty runs the delete statement, and the cookie is still written with the new key.
//    The cookie goes in both the response headers and the error headers, as httpd writes it.
//  - SessionDBDCookieRemove (On by default) takes the cookie out of the request headers.
//  - SessionDBDPerUser On keys the session by the authenticated user (r->user); saving without
//    a user logs AH01865.
//  - SessionDBDSelectLabel / InsertLabel / UpdateLabel / DeleteLabel: the statements' labels
//    ("selectsession", "insertsession", "updatesession", "deletesession"). Every
//    configuration section starts from these defaults, so a label set at server level does
//    not reach into a <Location> or <Directory> (httpd's merge takes the section's own).
//  - The select statement gets the key and the current time (APR microseconds), the update
//    statement value, expiry, new key, old key; the insert statement value, expiry, key; the
//    delete statement the key. httpd has no cleanup of expired rows (its monitor hook is a
//    stub), and no SessionDBDCleanupLabel directive in 2.4.
//  - The session is read once per main request (httpd keeps it in the notes of r->main or r,
//    under the cookie name or user), and a loaded session makes the response
//    "Cache-Control: no-cache, private".

import { randomUUID } from 'node:crypto';
import {
  DECLINED, MODULE_API_VERSION, OK, OR_AUTHCFG, RSRC_CONF,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { cookieRead, cookieWrite } from '../../server/request/cookies.js';
import { DbdError, type DbdApi, type DbdHandle } from '../database/dbd-api.js';
import { APR_EGENERAL, newSession, type SessionRec, type SessionStore } from './api.js';

export interface SessionDbdDir {
  name: string | undefined; nameAttrs: string | undefined; nameSet: boolean;
  name2: string | undefined; name2Attrs: string | undefined; name2Set: boolean;
  peruser: boolean; peruserSet: boolean;
  remove: boolean; removeSet: boolean;
  selectLabel: string | undefined;
  insertLabel: string | undefined;
  updateLabel: string | undefined;
  deleteLabel: string | undefined;
}

export function createDirConfig(): SessionDbdDir {
  return {
    name: undefined, nameAttrs: undefined, nameSet: false, name2: undefined, name2Attrs: undefined, name2Set: false,
    peruser: false, peruserSet: false, remove: true, removeSet: false,
    selectLabel: 'selectsession', insertLabel: 'insertsession', updateLabel: 'updatesession', deleteLabel: 'deletesession',
  };
}

export function mergeDirConfig(base: Readonly<SessionDbdDir>, add: Readonly<SessionDbdDir>): SessionDbdDir {
  return {
    name: add.nameSet ? add.name : base.name, nameAttrs: add.nameSet ? add.nameAttrs : base.nameAttrs, nameSet: add.nameSet || base.nameSet,
    name2: add.name2Set ? add.name2 : base.name2, name2Attrs: add.name2Set ? add.name2Attrs : base.name2Attrs, name2Set: add.name2Set || base.name2Set,
    peruser: add.peruserSet ? add.peruser : base.peruser, peruserSet: add.peruserSet || base.peruserSet,
    remove: add.removeSet ? add.remove : base.remove, removeSet: add.removeSet || base.removeSet,
    // The section's own labels are never unset (its defaults), so they always win.
    selectLabel: add.selectLabel ?? base.selectLabel,
    insertLabel: add.insertLabel ?? base.insertLabel,
    updateLabel: add.updateLabel ?? base.updateLabel,
    deleteLabel: add.deleteLabel ?? base.deleteLabel,
  };
}

// ---- UUIDs (apr_uuid_parse / apr_uuid_format) ---------------------------------------------

const isXdigit = (c: string | undefined): boolean => c !== undefined && /^[0-9A-Fa-f]$/.test(c);

/** apr_uuid_parse then apr_uuid_format: the key's 16 bytes in lowercase 8-4-4-4-12 form, or
 *  undefined when it is not 36 characters of hex digits with '-' allowed only at positions
 *  8, 13, 18 and 23 (APR accepts a hex digit there too, and skips that character). */
export function parseUuid(key: string): string | undefined {
  if (key.length !== 36) return undefined;
  for (let i = 0; i < 36; i++) {
    const c = key[i];
    if (!isXdigit(c) && !(c === '-' && (i === 8 || i === 13 || i === 18 || i === 23))) return undefined;
  }
  const k = key.toLowerCase();
  return `${k.slice(0, 8)}-${k.slice(9, 13)}-${k.slice(14, 18)}-${k.slice(19, 23)}-${k.slice(24, 36)}`;
}

/** SessionDBDCookieName's raw argument: the first word (split at blanks and tabs) is the name,
 *  the rest, after any white space, its attributes; the name may not be empty nor hold '=',
 *  ';' or '&' (ap_cookie_check_string). */
export function parseCookieName(raw: string): { name: string | undefined; attrs: string; ok: boolean } {
  const m = /^[ \t]*([^ \t]*)(?:[ \t](.*))?$/s.exec(raw)!;
  const name = m[1] === '' ? undefined : m[1]!;
  const attrs = (m[2] ?? '').replace(/^[ \t\n\v\f\r]+/, '');
  const ok = name !== undefined && !/[=&;]/.test(name);
  return { name, attrs, ok };
}

// ---- the database -------------------------------------------------------------------------

const EGENERAL = APR_EGENERAL;

function conf(r: Request): SessionDbdDir {
  return self.dir(r) ?? createDirConfig();
}

/** dbd_init: the request's connection and the statement under `label`, or APR_EGENERAL after
 *  logging why. */
async function dbdInit(r: Request, label: string): Promise<DbdHandle | null> {
  const api: DbdApi | undefined = r.rt.ctx.provider('dbd', 'dbd');
  if (api === undefined) {
    r.log('session_dbd', APLOG_ERR, 'AH01850: You must load mod_dbd to enable AuthDBD functions');
    return null;
  }
  const dbd = await api.acquire(r);
  if (dbd === null) {
    r.log('session_dbd', APLOG_ERR, 'AH01851: failed to acquire database connection');
    return null;
  }
  if (!dbd.prepared.has(label)) {
    r.log('session_dbd', APLOG_ERR, `AH01852: failed to find the prepared statement called '${label}'`);
    return null;
  }
  return dbd;
}

const errText = (dbd: DbdHandle, e: unknown): string => (e instanceof DbdError ? e.message : dbd.error());

/** apr_dbd_pgsql's status for a statement the server refused (PGRES_FATAL_ERROR), which
 *  httpd logs as an errno. */
const PGRES_FATAL_ERROR = 7;
const fatal = { code: PGRES_FATAL_ERROR, text: 'Argument list too long' };

const nowMicros = (): bigint => BigInt(Date.now()) * 1000n;

/** dbd_load: the value of the first row the select statement returns for `key`. */
async function dbdLoad(r: Request, key: string): Promise<{ rv: number; val?: string }> {
  const c = conf(r);
  if (c.selectLabel === undefined) {
    r.log('session_dbd', APLOG_ERR, 'AH01853: no SessionDBDselectlabel has been specified');
    return { rv: EGENERAL };
  }
  const dbd = await dbdInit(r, c.selectLabel);
  if (dbd === null) return { rv: EGENERAL };
  try {
    // Sequential access (APR's seek 0), as httpd asks.
    const res = await dbd.pselect(c.selectLabel, [key, String(nowMicros())], false);
    return { rv: OK, val: res.rows[0]?.[0] };
  } catch (e) {
    r.log('session_dbd', APLOG_ERR, `AH01854: query execution error saving session '${key}' in database using query '${c.selectLabel}': ${errText(dbd, e)}`);
    return { rv: EGENERAL };
  }
}

/** dbd_save: the update statement moves the row of `oldkey` to `newkey`; when there was no
 *  old key or no row changed, the insert statement adds one. */
async function dbdSave(r: Request, oldkey: string | undefined, newkey: string, val: string, expiry: bigint): Promise<number> {
  const c = conf(r);
  if (c.updateLabel === undefined) {
    r.log('session_dbd', APLOG_ERR, 'AH01856: no SessionDBDupdatelabel has been specified');
    return EGENERAL;
  }
  let dbd = await dbdInit(r, c.updateLabel);
  if (dbd === null) return EGENERAL;
  if (oldkey !== undefined) {
    let rows: number;
    try {
      rows = await dbd.pquery(c.updateLabel, [val, String(expiry), newkey, oldkey]);
    } catch (e) {
      // httpd's arguments are one place off its format: the new key shows as the query, the
      // label before the error.
      r.log('session_dbd', APLOG_ERR, `AH01857: query execution error updating session '${oldkey}' using database query '${newkey}': ${c.updateLabel}/${errText(dbd, e)}`);
      return EGENERAL;
    }
    if (rows !== 0) return OK;
  }
  if (c.insertLabel === undefined) {
    r.log('session_dbd', APLOG_ERR, 'AH01858: no SessionDBDinsertlabel has been specified');
    return EGENERAL;
  }
  dbd = await dbdInit(r, c.insertLabel);
  if (dbd === null) return EGENERAL;
  let rows: number;
  try {
    rows = await dbd.pquery(c.insertLabel, [val, String(expiry), newkey]);
  } catch (e) {
    r.log('session_dbd', APLOG_ERR, `AH01859: query execution error inserting session '${newkey}' in database with '${c.insertLabel}': ${errText(dbd, e)}`, fatal);
    return EGENERAL;
  }
  if (rows !== 0) return OK;
  r.log('session_dbd', APLOG_ERR, `AH01860: the session insert query did not cause any rows to be added to the database for session '${newkey}', session not inserted`);
  return EGENERAL;
}

/** dbd_remove: the delete statement for `key` (SQL NULL when the session had none). */
async function dbdRemove(r: Request, key: string | undefined): Promise<number> {
  const c = conf(r);
  if (c.deleteLabel === undefined) {
    r.log('session_dbd', APLOG_ERR, 'AH01862: no SessionDBDdeletelabel has been specified');
    return EGENERAL;
  }
  const dbd = await dbdInit(r, c.deleteLabel);
  if (dbd === null) return EGENERAL;
  try {
    await dbd.pquery(c.deleteLabel, [key ?? null]);
  } catch {
    r.log('session_dbd', APLOG_ERR, `AH01864: query execution error removing session '${key ?? '(null)'}' from database`, fatal);
    return PGRES_FATAL_ERROR;
  }
  return OK;
}

// ---- the store ----------------------------------------------------------------------------

/** The session read for a request, by cookie name or user (httpd's note "mod_session_dbd" +
 *  name in r->main's or r's notes). */
const cache = new WeakMap<Request, Map<string, SessionRec>>();
/** The UUID a session was found under (session_rec's uuid), formatted. */
const uuidOf = new WeakMap<SessionRec, string>();

const store: SessionStore = {
  async load(r) {
    const c = conf(r);
    const m = r.main ?? r;
    let name: string;
    if (c.name2Set && c.name2 !== undefined) name = c.name2;
    else if (c.nameSet && c.name !== undefined) name = c.name;
    else if (c.peruserSet && r.user !== undefined) name = r.user;
    else return { rv: DECLINED };
    const hit = cache.get(m)?.get(name);
    if (hit !== undefined) return { rv: OK, z: hit };
    let key: string | undefined;
    let val: string | undefined;
    if (c.nameSet || c.name2Set) {
      // httpd ignores ap_cookie_read's status: a duplicated cookie reads as none.
      key = cookieRead(r, name, c.remove).value;
      if (key !== undefined) {
        const l = await dbdLoad(r, key);
        if (l.rv !== OK) return { rv: l.rv };
        val = l.val;
      }
    } else if (c.peruser) {
      if (r.user !== undefined) {
        const l = await dbdLoad(r, r.user);
        if (l.rv !== OK) return { rv: l.rv };
        val = l.val;
      }
    } else {
      return { rv: DECLINED };
    }
    const z = newSession();
    if (key !== undefined && val !== undefined) {
      const uuid = parseUuid(key);
      if (uuid !== undefined) uuidOf.set(z, uuid);
    }
    z.encoded = val;
    let byName = cache.get(m);
    if (byName === undefined) cache.set(m, (byName = new Map()));
    byName.set(name, z);
    r.headersOut.add('Cache-Control', 'no-cache, private');
    return { rv: OK, z };
  },
  async save(r, z) {
    const c = conf(r);
    if (c.nameSet || c.name2Set) {
      const oldkey = uuidOf.get(z);
      let newkey: string;
      if (z.dirty || oldkey === undefined) {
        newkey = randomUUID();
        uuidOf.set(z, newkey);
      } else {
        newkey = oldkey;
      }
      const ret = z.encoded !== undefined && z.encoded !== ''
        ? await dbdSave(r, oldkey, newkey, z.encoded, z.expiry)
        : await dbdRemove(r, oldkey);
      if (ret !== OK) return ret;
      if (c.nameSet && c.name !== undefined) cookieWrite(r, false, c.name, newkey, c.nameAttrs, z.maxage, [r.headersOut, r.errHeadersOut]);
      if (c.name2Set && c.name2 !== undefined) cookieWrite(r, true, c.name2, newkey, c.name2Attrs, z.maxage, [r.headersOut, r.errHeadersOut]);
      return OK;
    }
    if (c.peruser) {
      r.headersOut.add('Cache-Control', 'no-cache, private');
      if (r.user !== undefined) return dbdSave(r, r.user, r.user, z.encoded ?? '', z.expiry);
      r.log('session_dbd', APLOG_ERR, `AH01865: peruser sessions can only be saved if a user is logged in, session not saved: ${r.uri}`);
    }
    return DECLINED;
  },
};

// ---- directives ---------------------------------------------------------------------------

type Cmd = CmdParms<unknown, SessionDbdDir>;
const WHERE = RSRC_CONF | OR_AUTHCFG;

function setName(cmd: Cmd, raw: string, v2: boolean): string | undefined {
  const p = parseCookieName(raw);
  if (v2) { cmd.dir.name2 = p.name; cmd.dir.name2Attrs = p.attrs; cmd.dir.name2Set = true; }
  else { cmd.dir.name = p.name; cmd.dir.nameAttrs = p.attrs; cmd.dir.nameSet = true; }
  // The wording of 2.4.71's module (its check differs from the 2.4 branch's source).
  if (p.name === undefined) return `${cmd.name} requires at least one argument!`;
  return p.ok ? undefined : `${cmd.name} cannot contain '=', ';' or '&'.`;
}

function label(field: 'selectLabel' | 'insertLabel' | 'updateLabel' | 'deleteLabel') {
  return (cmd: Cmd, v: string): undefined => { cmd.dir[field] = v; return undefined; };
}

const self = defineModule<unknown, SessionDbdDir>({
  name: 'session_dbd_module',
  source: 'mod_session_dbd.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<unknown, SessionDbdDir, 'TAKE1'>({ name: 'SessionDBDSelectLabel', args: 'TAKE1', where: WHERE, help: 'Query label used to select a new session', handler: label('selectLabel') }),
    directive<unknown, SessionDbdDir, 'TAKE1'>({ name: 'SessionDBDInsertLabel', args: 'TAKE1', where: WHERE, help: 'Query label used to insert a new session', handler: label('insertLabel') }),
    directive<unknown, SessionDbdDir, 'TAKE1'>({ name: 'SessionDBDUpdateLabel', args: 'TAKE1', where: WHERE, help: 'Query label used to update an existing session', handler: label('updateLabel') }),
    directive<unknown, SessionDbdDir, 'TAKE1'>({ name: 'SessionDBDDeleteLabel', args: 'TAKE1', where: WHERE, help: 'Query label used to delete an existing session', handler: label('deleteLabel') }),
    directive<unknown, SessionDbdDir, 'FLAG'>({ name: 'SessionDBDPerUser', args: 'FLAG', where: WHERE, help: 'Save the session per user', handler: (cmd: Cmd, on: boolean) => { cmd.dir.peruser = on; cmd.dir.peruserSet = true; } }),
    directive<unknown, SessionDbdDir, 'FLAG'>({ name: 'SessionDBDCookieRemove', args: 'FLAG', where: WHERE, help: 'Remove the session cookie after session load. On by default.', handler: (cmd: Cmd, on: boolean) => { cmd.dir.remove = on; cmd.dir.removeSet = true; } }),
    directive<unknown, SessionDbdDir, 'RAW_ARGS'>({ name: 'SessionDBDCookieName', args: 'RAW_ARGS', where: WHERE, help: 'The name of the RFC2109 cookie carrying the session key', handler: (cmd: Cmd, raw: string) => setName(cmd, raw, false) }),
    directive<unknown, SessionDbdDir, 'RAW_ARGS'>({ name: 'SessionDBDCookieName2', args: 'RAW_ARGS', where: WHERE, help: 'The name of the RFC2965 cookie carrying the session key', handler: (cmd: Cmd, raw: string) => setName(cmd, raw, true) }),
  ],
  providers: [{ group: 'session_store', name: 'dbd', version: '0', provider: store }],
});

export default self;
