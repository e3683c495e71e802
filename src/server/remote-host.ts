// The client's host name as httpd's ap_get_remote_host / ap_get_useragent_host find it: a
// reverse lookup (getnameinfo with NI_NAMEREQD, lower-cased) done at most once per connection,
// and for REMOTE_DOUBLE_REV (Require host, Allow/Deny from a name) a forward lookup of that
// name that must give the client's address back ("double reverse"), also once per connection.
// HostnameLookups On|Double in the request's configuration makes the plain lookups happen too.
// Lookups go through the libuv thread pool (dns.lookupService / dns.lookup use the system
// resolver, /etc/hosts included, as APR does): they never block the event loop.

import { promises as dnsp } from 'node:dns';
import type { MaybePromise } from './module.js';
import type { ConnRec, Request } from './request/request.js';
import { coreDir } from './core/config.js';
import { addrEqual, connAddr, parseAddr } from '../lib/ipsubnet.js';

/** ap_get_remote_host's `type`. */
export const REMOTE_HOST = 0;
export const REMOTE_NAME = 1;
export const REMOTE_NOLOOKUP = 2;
export const REMOTE_DOUBLE_REV = 3;
export type RemoteLookupType = typeof REMOTE_HOST | typeof REMOTE_NAME | typeof REMOTE_NOLOOKUP | typeof REMOTE_DOUBLE_REV;

export interface RemoteHost {
  /** The name, the IP address (isIp) or undefined (NULL in httpd). */
  readonly host: string | undefined;
  readonly isIp: boolean;
}

/** conn->double_reverse: 1 verified, -1 failed; absent = not tried. */
const doubleReverse = new WeakMap<ConnRec, 1 | -1>();

async function reverseLookup(ip: string): Promise<string | undefined> {
  try {
    const { hostname } = await dnsp.lookupService(ip, 0);
    return hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/** do_double_reverse: the forward lookup of the name must include the client's address. */
async function forwardConfirms(c: ConnRec): Promise<1 | -1> {
  const known = doubleReverse.get(c);
  if (known !== undefined) return known;
  let res: 1 | -1 = -1;
  const name = c.remoteHost;
  const client = connAddr(c);
  if (name !== undefined && name !== '' && client) {
    try {
      const addrs = await dnsp.lookup(name, { all: true });
      for (const a of addrs) {
        const p = parseAddr(a.address);
        if (p && addrEqual(p, client)) { res = 1; break; }
      }
    } catch {
      res = -1;
    }
  }
  doubleReverse.set(c, res);
  return res;
}

function answer(c: ConnRec, type: RemoteLookupType): RemoteHost {
  if (type === REMOTE_DOUBLE_REV && doubleReverse.get(c) === -1) return { host: undefined, isIp: false };
  if (c.remoteHost !== undefined && c.remoteHost !== '') return { host: c.remoteHost, isIp: false };
  if (type === REMOTE_HOST || type === REMOTE_DOUBLE_REV) return { host: undefined, isIp: false };
  return { host: c.remoteIp, isIp: true };
}

/** ap_get_remote_host(r->connection, r->per_dir_config, type, &is_ip). */
export function getRemoteHost(r: Request, type: RemoteLookupType): MaybePromise<RemoteHost> {
  const c = r.connection;
  const lookups = coreDir(r)?.hostnameLookups ?? 'off';
  const needName = type !== REMOTE_NOLOOKUP && c.remoteHost === undefined && (type === REMOTE_DOUBLE_REV || lookups !== 'off');
  const needDouble = type === REMOTE_DOUBLE_REV && !doubleReverse.has(c);
  if (!needName && !needDouble) return answer(c, type);
  return (async () => {
    if (needName) {
      const name = await reverseLookup(c.remoteIp);
      c.remoteHost = name ?? '';
      if (name !== undefined && lookups === 'double') {
        if ((await forwardConfirms(c)) !== 1) c.remoteHost = '';
      }
    }
    if (type === REMOTE_DOUBLE_REV) await forwardConfirms(c);
    return answer(c, type);
  })();
}
