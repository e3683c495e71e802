// mod_session_cookie (modules/session/mod_session_cookie.c): mod_session's store in a cookie.
//
//  - SessionCookieName NAME [attributes] (RFC 2109, Set-Cookie) and SessionCookieName2 (RFC
//    2965, Set-Cookie2); attributes as written, or "HttpOnly;Secure;Version=1" without them.
//    An empty session clears the cookie (Max-Age=0). The cookie goes in the error headers,
//    so an error response carries it too.
//  - SessionMaxAge is always sent as the cookie's Max-Age (2.4.71 has no SessionCookieMaxAge;
//    that directive is httpd trunk's).
//  - SessionCookieRemove On takes the cookie out of the request headers (a backend or CGI
//    does not see it).
//  - The session is read once per main request (internal redirects and subrequests share it),
//    and a loaded session makes the response "Cache-Control: no-cache, private".

import {
  DECLINED, MODULE_API_VERSION, OK, OR_AUTHCFG, RSRC_CONF,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { cookieRead, cookieRemove, cookieWrite } from '../../server/request/cookies.js';
import { newSession, type SessionRec, type SessionStore } from './api.js';

interface CookieDir {
  name: string | undefined; nameAttrs: string | undefined; nameSet: boolean;
  name2: string | undefined; name2Attrs: string | undefined; name2Set: boolean;
  remove: boolean; removeSet: boolean;
}

function createDirConfig(): CookieDir {
  return {
    name: undefined, nameAttrs: undefined, nameSet: false, name2: undefined, name2Attrs: undefined, name2Set: false,
    remove: false, removeSet: false,
  };
}

function mergeDirConfig(base: Readonly<CookieDir>, add: Readonly<CookieDir>): CookieDir {
  return {
    name: add.nameSet ? add.name : base.name, nameAttrs: add.nameSet ? add.nameAttrs : base.nameAttrs, nameSet: add.nameSet || base.nameSet,
    name2: add.name2Set ? add.name2 : base.name2, name2Attrs: add.name2Set ? add.name2Attrs : base.name2Attrs, name2Set: add.name2Set || base.name2Set,
    remove: add.removeSet ? add.remove : base.remove, removeSet: add.removeSet || base.removeSet,
  };
}

/** The session read for a main request, by cookie name (httpd keeps it in the main request's
 *  notes under "mod_session_cookie" + name). */
const cache = new WeakMap<Request, Map<string, SessionRec>>();

const store: SessionStore = {
  load(r) {
    const conf = self.dir(r);
    let m = r;
    while (m.prev !== null) m = m.prev;
    while (m.main !== null) m = m.main;
    let name: string;
    if (conf.name2Set && conf.name2 !== undefined) name = conf.name2;
    else if (conf.nameSet && conf.name !== undefined) name = conf.name;
    else return { rv: DECLINED };
    // Measured on 2.4.71: with SessionCookieRemove On every load parses the (by then cookie-less)
    // request headers again, so the session the output filter saves is a new, empty one and
    // each load adds its Cache-Control; plume keeps that behaviour (conformance
    // session/remove-maxage).
    let byName = cache.get(m);
    const hit = conf.remove ? undefined : byName?.get(name);
    if (hit !== undefined) return { rv: OK, z: hit };
    // httpd ignores ap_cookie_read's status here: a duplicated cookie reads as none.
    const { value } = cookieRead(r, name, conf.remove);
    const z = newSession();
    z.encoded = value;
    if (byName === undefined) cache.set(m, (byName = new Map()));
    byName.set(name, z);
    r.headersOut.add('Cache-Control', 'no-cache, private');
    return { rv: OK, z };
  },
  save(r, z) {
    const conf = self.dir(r);
    const maxage = z.maxage;
    const has = z.encoded !== undefined && z.encoded !== '';
    if (conf.nameSet && conf.name !== undefined) {
      if (has) cookieWrite(r, false, conf.name, z.encoded!, conf.nameAttrs, maxage, [r.errHeadersOut]);
      else cookieRemove(r, false, conf.name, conf.nameAttrs, [r.headersOut, r.errHeadersOut]);
    }
    if (conf.name2Set && conf.name2 !== undefined) {
      if (has) cookieWrite(r, true, conf.name2, z.encoded!, conf.name2Attrs, maxage, [r.errHeadersOut]);
      else cookieRemove(r, true, conf.name2, conf.name2Attrs, [r.headersOut, r.errHeadersOut]);
    }
    return conf.nameSet || conf.name2Set ? OK : DECLINED;
  },
};

/** SessionCookieName's raw argument: the first word is the name, the rest its attributes. */
function setName(cmd: CmdParms<unknown, CookieDir>, raw: string, v2: boolean): string | undefined {
  const m = /^[ \t]*([^ \t]*)[ \t]*(.*)$/s.exec(raw)!;
  const name = m[1]!;
  const attrs = m[2]!;
  if (v2) { cmd.dir.name2 = name; cmd.dir.name2Attrs = attrs; cmd.dir.name2Set = true; }
  else { cmd.dir.name = name; cmd.dir.nameAttrs = attrs; cmd.dir.nameSet = true; }
  if (name === '' || name.includes('=') || name.includes('&')) return `${cmd.name} cannot be empty, or contain '=' or '&'.`;
  return undefined;
}

type Cmd = CmdParms<unknown, CookieDir>;
const WHERE = RSRC_CONF | OR_AUTHCFG;

const self = defineModule<unknown, CookieDir>({
  name: 'session_cookie_module',
  source: 'mod_session_cookie.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<unknown, CookieDir, 'RAW_ARGS'>({ name: 'SessionCookieName', args: 'RAW_ARGS', where: WHERE, help: 'The name of the RFC2109 cookie carrying the session', handler: (cmd: Cmd, raw: string) => setName(cmd, raw, false) }),
    directive<unknown, CookieDir, 'RAW_ARGS'>({ name: 'SessionCookieName2', args: 'RAW_ARGS', where: WHERE, help: 'The name of the RFC2965 cookie carrying the session', handler: (cmd: Cmd, raw: string) => setName(cmd, raw, true) }),
    directive<unknown, CookieDir, 'FLAG'>({ name: 'SessionCookieRemove', args: 'FLAG', where: WHERE, help: "Set to 'On' to remove the session cookie from the headers and hide the cookie from a backend server or process", handler: (cmd: Cmd, on: boolean) => { cmd.dir.remove = on; cmd.dir.removeSet = true; } }),
  ],
  providers: [{ group: 'session_store', name: 'cookie', version: '0', provider: store }],
});

export default self;
