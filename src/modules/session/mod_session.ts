// mod_session (modules/session/mod_session.c): a session of key/value pairs kept for a URL
// space, loaded from and saved to a store module (mod_session_cookie), encoded by codecs.
//
//  - Session On enables it for a directory or location; SessionMaxAge gives sessions an
//    expiry (written as the "expiry" key, APR microseconds) that every save pushes forward;
//    SessionExpiryUpdateInterval skips saves that would only move the expiry a little.
//  - The session is loaded in fixups (SessionEnv On puts its encoded form in HTTP_SESSION and
//    drops a client's "Session" request header) and saved by the MOD_SESSION_OUT filter for
//    the main request and each internal redirect, before the response headers go: a session
//    that is neither dirty nor has a max age is not written.
//  - SessionHeader names a response header whose urlencoded pairs are merged into the
//    session (and the header removed) — how a backend or CGI changes the session.
//  - SessionInclude / SessionExclude: URL prefixes (of r.uri, byte compare).
//  - A session that fails to decode, or has expired, is replaced by an empty one.
// Other modules use it through the 'session_api' provider (httpd's optional functions).

import {
  DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_AUTHCFG, RSRC_CONF,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import type { ConfigContext } from '../../server/config/context.js';
import { FTYPE_CONTENT_SET, type FilterSpec } from '../../server/filters.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_TRACE2, APLOG_WARNING } from '../../server/log/levels.js';
import { escapeUrlencoded, strtokAll, unescapeUrlencoded } from '../../lib/urlencoded.js';
import { aprStatusError, newSession, type SessionApi, type SessionCodec, type SessionRec, type SessionStore } from './api.js';

interface SessionDir {
  enabled: boolean; enabledSet: boolean;
  maxage: number; maxageSet: boolean;
  header: string | undefined; headerSet: boolean;
  env: boolean; envSet: boolean;
  includes: string[];
  excludes: string[];
  /** SessionExpiryUpdateInterval in microseconds. */
  expiryUpdate: bigint; expiryUpdateSet: boolean;
}

const SESSION_EXPIRY = 'expiry';
const APR_GENERAL = 20014; // APR_EGENERAL, the status httpd's functions return

function createDirConfig(): SessionDir {
  return {
    enabled: false, enabledSet: false, maxage: 0, maxageSet: false, header: undefined, headerSet: false,
    env: false, envSet: false, includes: [], excludes: [], expiryUpdate: 0n, expiryUpdateSet: false,
  };
}

function mergeDirConfig(base: Readonly<SessionDir>, add: Readonly<SessionDir>): SessionDir {
  return {
    enabled: add.enabledSet ? add.enabled : base.enabled, enabledSet: add.enabledSet || base.enabledSet,
    maxage: add.maxageSet ? add.maxage : base.maxage, maxageSet: add.maxageSet || base.maxageSet,
    header: add.headerSet ? add.header : base.header, headerSet: add.headerSet || base.headerSet,
    env: add.envSet ? add.env : base.env, envSet: add.envSet || base.envSet,
    includes: [...base.includes, ...add.includes],
    excludes: [...base.excludes, ...add.excludes],
    expiryUpdate: add.expiryUpdateSet ? add.expiryUpdate : base.expiryUpdate,
    expiryUpdateSet: add.expiryUpdateSet || base.expiryUpdateSet,
  };
}

/** C's atol: leading blanks, a sign, digits; 0 without them. */
function atol(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  return m === null ? 0 : parseInt(m[1]!, 10);
}

/** apr_atoi64 (strtoll): saturates at the 64-bit limits. */
function atoi64(s: string): bigint {
  const n = BigInt(/^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s)?.[1] ?? '0');
  const max = (1n << 63n) - 1n;
  return n > max ? max : n < -max - 1n ? -max - 1n : n;
}

const nowMicros = (): bigint => BigInt(Date.now()) * 1000n;
const USEC = 1_000_000n;

// ---- the identity codec ---------------------------------------------------------------------

/** session_identity_encode: the pairs urlencoded and joined with '&', the expiry included. */
export function identityEncode(z: SessionRec): void {
  if (z.expiry !== 0n) z.entries.set(SESSION_EXPIRY, String(z.expiry));
  let out = '';
  for (const [k, v] of z.entries) out += (out === '' ? '' : '&') + escapeUrlencoded(k) + '=' + escapeUrlencoded(v);
  z.encoded = out;
}

/** session_identity_decode: pairs in, an empty value removes its key, a pair that does not
 *  unescape is skipped; "expiry" sets the expiry. */
export function identityDecode(z: SessionRec): void {
  if (z.encoded === undefined) return;
  for (const pair of strtokAll(z.encoded, '&')) {
    const parts = strtokAll(pair, '=');
    const key = parts[0];
    if (key === undefined) continue;
    const val = parts[1];
    if (val === undefined) { z.entries.delete(key); continue; }
    const k = unescapeUrlencoded(key);
    const v = unescapeUrlencoded(val);
    if (k === undefined || v === undefined) continue;
    if (k === SESSION_EXPIRY) z.expiry = atoi64(v);
    else z.entries.set(k, v);
  }
  z.encoded = undefined;
}

// ---- load and save -------------------------------------------------------------------------

function included(r: Request, conf: SessionDir): boolean {
  let inc = true;
  if (conf.includes.length > 0) inc = conf.includes.some((p) => r.uri.startsWith(p));
  if (inc && conf.excludes.length > 0) inc = !conf.excludes.some((p) => r.uri.startsWith(p));
  return inc;
}

/** The store and codec providers of a configuration, looked up once per configuration
 *  generation rather than on every load. */
const providersOf = new WeakMap<ConfigContext, { stores: SessionStore[]; codecs: SessionCodec[] }>();

function providers(r: Request): { stores: SessionStore[]; codecs: SessionCodec[] } {
  const ctx = r.rt.ctx;
  let p = providersOf.get(ctx);
  if (p === undefined) {
    p = { stores: [], codecs: [] };
    for (const n of ctx.providerNames('session_store')) { const x = ctx.provider('session_store', n); if (x !== undefined) p.stores.push(x); }
    for (const n of ctx.providerNames('session_codec')) { const x = ctx.provider('session_codec', n); if (x !== undefined) p.codecs.push(x); }
    providersOf.set(ctx, p);
  }
  return p;
}

/** ap_session_load: status 0 with the session (undefined where sessions are off). */
async function sessionLoad(r: Request): Promise<{ status: number; z: SessionRec | undefined }> {
  const conf = self.dir(r);
  if (conf === undefined || !conf.enabled) return { status: 0, z: undefined };
  if (!included(r, conf)) {
    r.log('session', APLOG_DEBUG, `AH01814: excluded by configuration for: ${r.uri}`);
    return { status: 0, z: undefined };
  }
  let found: { rv: number; z?: SessionRec } = { rv: DECLINED };
  for (const s of providers(r).stores) { found = await s.load(r); if (found.rv !== DECLINED) break; }
  if (found.rv === DECLINED) {
    r.log('session', APLOG_WARNING, `AH01815: session is enabled but no session modules have been configured, session not loaded: ${r.uri}`);
    return { status: APR_GENERAL, z: undefined };
  }
  if (found.rv !== OK) {
    r.log('session', APLOG_ERR, `AH01816: error while loading the session, session not loaded: ${r.uri}`, aprStatusError(found.rv));
    return { status: found.rv, z: undefined };
  }
  const now = nowMicros();
  let z = found.z;
  if (z !== undefined) {
    let rv = OK;
    // Run-all: the codecs first (they undo their encoding), the identity decoder really last.
    for (const c of providers(r).codecs) { const v = await c.decode(r, z); if (v !== OK && v !== DECLINED) { rv = v; break; } }
    if (rv === OK) identityDecode(z);
    else {
      r.log('session', APLOG_ERR, `AH01817: error while decoding the session, session not loaded: ${r.uri}`, aprStatusError(rv));
      // 2.4.71 drops the record and starts a new one the store does not hold, so the next load
      // of this request decodes (and complains about) the stored session again (measured:
      // conformance session/crypto-read), and what is set on the new one is not kept.
      z = undefined;
    }
    if (z !== undefined && z.expiry !== 0n && z.expiry < now) {
      r.log('session', APLOG_TRACE2, 'session is expired');
      z = undefined;
    }
  }
  if (z === undefined) z = newSession();
  if (conf.maxage !== 0) {
    if (z.expiry === 0n) z.expiry = now + BigInt(conf.maxage) * USEC;
    z.maxage = conf.maxage;
  }
  return { status: 0, z };
}

/** ap_session_save. */
async function sessionSave(r: Request, z: SessionRec | undefined): Promise<number> {
  if (z === undefined) return 0;
  const now = nowMicros();
  const initialExpiry = z.expiry;
  const conf = self.dir(r);
  if (z.written) {
    r.log('session', APLOG_ERR, `AH01818: attempt made to save the session twice, session not saved: ${r.uri}`);
    return APR_GENERAL;
  }
  if (z.expiry !== 0n && z.expiry < now) {
    r.log('session', APLOG_WARNING, `AH01819: attempt made to save a session when the session had already expired, session not saved: ${r.uri}`);
    return APR_GENERAL;
  }
  if (conf.maxage !== 0) {
    z.expiry = now + BigInt(conf.maxage) * USEC;
    z.maxage = conf.maxage;
  }
  if (z.dirty && z.maxage !== 0) z.expiry = now + BigInt(z.maxage) * USEC;
  if (!z.dirty && conf.expiryUpdate !== 0n && z.expiry - initialExpiry < conf.expiryUpdate) return 0;
  if (!z.dirty && z.maxage === 0) return 0;
  // Run-all: the identity encoder really first, then the codecs.
  identityEncode(z);
  for (const c of providers(r).codecs) {
    const v = await c.encode(r, z);
    if (v !== OK && v !== DECLINED) {
      r.log('session', APLOG_ERR, `AH01820: error while encoding the session, session not saved: ${r.uri}`, aprStatusError(v));
      return v;
    }
  }
  let rv = DECLINED;
  for (const s of providers(r).stores) { rv = await s.save(r, z); if (rv !== DECLINED) break; }
  if (rv === DECLINED) {
    r.log('session', APLOG_WARNING, `AH01821: session is enabled but no session modules have been configured, session not saved: ${r.uri}`);
    return APR_GENERAL;
  }
  if (rv !== OK) {
    r.log('session', APLOG_ERR, `AH01822: error while saving the session, session not saved: ${r.uri}`, aprStatusError(rv));
    return rv;
  }
  z.written = true;
  return 0;
}

const api: SessionApi = {
  load: sessionLoad,
  async get(r, z, key) {
    let zz = z;
    if (zz === undefined) {
      const l = await sessionLoad(r);
      if (l.status !== 0) return { status: l.status, value: undefined };
      zz = l.z;
    }
    return { status: 0, value: zz?.entries.get(key) };
  },
  async set(r, z, key, value) {
    let zz = z;
    if (zz === undefined) {
      const l = await sessionLoad(r);
      if (l.status !== 0) return l.status;
      zz = l.z;
    }
    if (zz !== undefined) {
      if (value !== undefined) zz.entries.set(key, value);
      else zz.entries.delete(key);
      zz.dirty = true;
    }
    return 0;
  },
  save: sessionSave,
};

// ---- the output filter and fixups -------------------------------------------------------------

/** MOD_SESSION_OUT: on the first brigade, saves the session of the main request and of every
 *  internal redirect after it, then leaves the chain. */
const sessionOut: FilterSpec<undefined> = {
  name: 'MOD_SESSION_OUT',
  type: FTYPE_CONTENT_SET,
  async filter(f, bb) {
    let r: Request | null = f.r.main ?? f.r;
    while (r !== null) {
      const conf = self.dir(r);
      const { z } = await sessionLoad(r);
      if (z !== undefined && !z.written) {
        if (conf.headerSet && conf.header !== undefined) {
          const override = r.errHeadersOut.get(conf.header) ?? r.headersOut.get(conf.header);
          if (override !== undefined) {
            r.errHeadersOut.unset(conf.header);
            r.headersOut.unset(conf.header);
            z.encoded = override;
            z.dirty = true;
            identityDecode(z);
          }
        }
        await sessionSave(r, z);
      }
      r = r.next;
    }
    f.remove();
    return f.pass(bb);
  },
};

function insertFilter(r: Request): void {
  r.rt.addFilter(r, sessionOut);
}

async function fixups(r: Request): Promise<number> {
  const conf = self.dir(r);
  const { z } = await sessionLoad(r);
  if (conf.env) {
    if (z !== undefined) {
      identityEncode(z);
      if (z.encoded !== undefined) {
        r.subprocessEnv.set('HTTP_SESSION', z.encoded);
        z.encoded = undefined;
      }
    }
    r.headersIn.unset('Session');
  }
  return OK;
}

type Cmd = CmdParms<unknown, SessionDir>;
const WHERE = RSRC_CONF | OR_AUTHCFG;

const self = defineModule<unknown, SessionDir>({
  name: 'session_module',
  source: 'mod_session.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<unknown, SessionDir, 'FLAG'>({ name: 'Session', args: 'FLAG', where: WHERE, help: 'on if a session should be maintained for these URLs', handler: (cmd: Cmd, on: boolean) => { cmd.dir.enabled = on; cmd.dir.enabledSet = true; } }),
    directive<unknown, SessionDir, 'TAKE1'>({ name: 'SessionMaxAge', args: 'TAKE1', where: WHERE, help: 'length of time for which a session should be valid. Zero to disable', handler: (cmd: Cmd, a: string) => { cmd.dir.maxage = atol(a); cmd.dir.maxageSet = true; } }),
    directive<unknown, SessionDir, 'TAKE1'>({ name: 'SessionHeader', args: 'TAKE1', where: WHERE, help: 'output header, if present, whose contents will be injected into the session.', handler: (cmd: Cmd, a: string) => { cmd.dir.header = a; cmd.dir.headerSet = true; } }),
    directive<unknown, SessionDir, 'FLAG'>({ name: 'SessionEnv', args: 'FLAG', where: WHERE, help: 'on if a session should be written to the CGI environment. Defaults to off', handler: (cmd: Cmd, on: boolean) => { cmd.dir.env = on; cmd.dir.envSet = true; } }),
    directive<unknown, SessionDir, 'TAKE1'>({ name: 'SessionInclude', args: 'TAKE1', where: WHERE, help: 'URL prefixes to include in the session. Defaults to all URLs', handler: (cmd: Cmd, a: string) => { cmd.dir.includes.push(a); } }),
    directive<unknown, SessionDir, 'TAKE1'>({ name: 'SessionExclude', args: 'TAKE1', where: WHERE, help: 'URL prefixes to exclude from the session. Defaults to no URLs', handler: (cmd: Cmd, a: string) => { cmd.dir.excludes.push(a); } }),
    directive<unknown, SessionDir, 'TAKE1'>({
      name: 'SessionExpiryUpdateInterval', args: 'TAKE1', where: WHERE,
      help: "time interval for which a session's expiry time may change without having to be rewritten. Zero to disable",
      handler: (cmd: Cmd, a: string) => {
        const n = Number(BigInt.asIntN(32, BigInt(atol(a))));
        if (n < 0) return 'SessionExpiryUpdateInterval must be zero (disable) or a positive value';
        cmd.dir.expiryUpdate = BigInt(n) * USEC;
        cmd.dir.expiryUpdateSet = true;
        return undefined;
      },
    }),
  ],
  hooks: {
    insertFilter: { fn: insertFilter, order: HOOK_MIDDLE },
    insertErrorFilter: { fn: insertFilter, order: HOOK_MIDDLE },
    fixups: { fn: fixups, order: HOOK_MIDDLE },
  },
  filters: [sessionOut as FilterSpec],
  providers: [{ group: 'session_api', name: 'session', version: '0', provider: api }],
});

export default self;
