// Virtual host selection as httpd's vhost.c: first by the address and port the connection
// arrived on (exact address, then "*", then "_default_"), then — when several vhosts share
// that address:port, which in 2.4 makes them name-based implicitly — by the Host header
// against ServerName and ServerAlias, falling back to the first of them.

import type { ConfigContext } from '../config/context.js';
import type { ServerRec } from '../server-rec.js';

export class VirtualHosts {
  private readonly byAddr = new Map<string, readonly ServerRec[]>();
  constructor(private readonly ctx: ConfigContext) {}

  /** The vhosts that may answer on this local address and port ([] = the main server). */
  candidates(localIp: string, localPort: number): readonly ServerRec[] {
    const key = localIp + ' ' + localPort;
    let c = this.byAddr.get(key);
    if (c === undefined) {
      c = this.compute(normalizeIp(localIp), localPort);
      this.byAddr.set(key, c);
    }
    return c;
  }

  private compute(ip: string, port: number): readonly ServerRec[] {
    const exact: ServerRec[] = [];
    const star: ServerRec[] = [];
    const dflt: ServerRec[] = [];
    for (const v of this.ctx.vhosts) {
      for (const a of v.addrs) {
        if (a.port !== 0 && a.port !== port) continue;
        if (a.host === '_default_') { if (!dflt.includes(v)) dflt.push(v); }
        else if (a.host === '*' || a.host === '0.0.0.0' || a.host === '::') { if (!star.includes(v)) star.push(v); }
        else if (normalizeIp(a.host) === ip) { if (!exact.includes(v)) exact.push(v); }
      }
    }
    if (exact.length) return exact;
    if (star.length) return star;
    return dflt;
  }

  /** The server for a request: name-based among the candidates, else the first. */
  select(candidates: readonly ServerRec[], host: string, localPort: number): ServerRec {
    if (candidates.length === 0) return this.ctx.mainServer;
    if (candidates.length === 1) return candidates[0]!;
    if (host === '') return candidates[0]!;
    return this.match(candidates, host, localPort) ?? candidates[0]!;
  }

  /** check_serverpath: for a request without a host name on a name-based address, the first
   *  vhost whose ServerPath begins the URI at a '/' boundary, else the first vhost. */
  selectByPath(candidates: readonly ServerRec[], uri: string): ServerRec {
    if (candidates.length === 0) return this.ctx.mainServer;
    if (candidates.length > 1) {
      for (const v of candidates) {
        const p = v.path;
        if (p !== undefined && p !== '' && uri.startsWith(p) && (p.endsWith('/') || uri.length === p.length || uri[p.length] === '/')) return v;
      }
    }
    return candidates[0]!;
  }

  /** update_server_from_aliases: the first candidate whose ServerName or ServerAlias is
   *  `host`, else the first whose <VirtualHost> address (on this port) was written as `host`;
   *  with no candidates, the main server if its names match. undefined: no server matched
   *  (StrictHostCheck answers 400). */
  match(candidates: readonly ServerRec[], host: string, localPort: number): ServerRec | undefined {
    if (candidates.length === 0) return this.ctx.mainServer.matchesName(host) ? this.ctx.mainServer : undefined;
    for (const v of candidates) if (v.matchesName(host)) return v;
    for (const v of candidates) {
      for (const a of v.addrs) if ((a.port === 0 || a.port === localPort) && a.virthost === host) return v;
    }
    return undefined;
  }
}

function normalizeIp(ip: string): string {
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}
