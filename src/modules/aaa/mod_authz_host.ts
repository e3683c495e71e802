// mod_authz_host (modules/aaa/mod_authz_host.c): the authz providers that decide by the
// client's address or host name.
//   Require ip <addr>...           full or partial IPv4, a/nn, a/netmask, IPv6[/nn]; parsed once
//   Require host <name>...         double-reverse lookup of the client, then a domain match
//   Require forward-dns <name>...  forward lookup of each name, granted if one is the client
//   Require local                  127.0.0.0/8, ::1, or the connection's own local address
// The host and forward-dns lines are string expressions (`%{VAR}` expands), parsed once.

import {
  MODULE_API_VERSION, defineModule, type MaybePromise, type ProviderDecl,
} from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { promises as dnsp } from 'node:dns';
import {
  AUTHZ_DENIED, AUTHZ_GRANTED, AUTHZ_PROVIDER_VERSION, authzError, authzOk,
  type AuthzProvider, type AuthzStatus,
} from './mod_authz_core.js';
import {
  addrEqual, connAddr, useragentAddr, connLocalAddr, inDomain, parseAddr, parseSubnet, subnetErrorText, subnetTest,
  type IpSubnet,
} from '../../lib/ipsubnet.js';
import { REMOTE_DOUBLE_REV, getRemoteHost } from '../../server/remote-host.js';
import { parseRequireExpr } from './require-expr.js';
import type { StringExpr } from './auth-string-expr.js';

const SRC_FORWARD_DNS = 'mod_authz_host.c(269)';

/** ap_getword_conf until the first empty word, as the providers loop over their arguments. */
function confWords(text: string): string[] {
  const c = new ArgCursor(text);
  const out: string[] = [];
  for (let w = c.word(); w !== ''; w = c.word()) out.push(w);
  return out;
}

// ---- Require ip ---------------------------------------------------------------------------

/** Subnets parsed while one configuration is read, shared between identical words. */
let parsedSubnets: Map<string, IpSubnet> | null = null;

const LOCALHOST_V4 = (parseSubnet('127.0.0.0', '8') as { subnet: IpSubnet }).subnet;
const LOCALHOST_V6 = (parseSubnet('::1', undefined) as { subnet: IpSubnet }).subnet;

/** Parses one `Require ip` word; the error text is httpd's. */
export function parseIpWord(w: string): IpSubnet | string {
  const cached = parsedSubnets?.get(w);
  if (cached) return cached;
  const slash = w.indexOf('/');
  const res = slash < 0 ? parseSubnet(w, undefined) : parseSubnet(w.slice(0, slash), w.slice(slash + 1));
  if (!res.ok) {
    return res.error === 'EINVAL'
      ? `ip address '${w}' appears to be invalid`
      : `ip address '${w}' appears to be invalid: ${subnetErrorText(res.error)}`;
  }
  parsedSubnets?.set(w, res.subnet);
  return res.subnet;
}

const ipProvider: AuthzProvider<readonly IpSubnet[]> = {
  parse(_cmd, args) {
    const words = confWords(args);
    if (words.length === 0) return authzError("'require ip' requires an argument");
    const subnets: IpSubnet[] = [];
    for (const w of words) {
      const s = parseIpWord(w);
      if (typeof s === 'string') return authzError(s);
      subnets.push(s);
    }
    return authzOk(subnets);
  },
  check(r, _args, subnets) {
    const a = useragentAddr(r);
    if (a) for (const s of subnets) if (subnetTest(s, a)) return AUTHZ_GRANTED;
    return AUTHZ_DENIED;
  },
};

// ---- Require host -------------------------------------------------------------------------

function hostCheck(r: Request, args: string, expr: StringExpr, remote: { host: string | undefined; isIp: boolean }): AuthzStatus {
  if (remote.host === undefined || remote.isIp) {
    r.log('authz_host', APLOG_ERR,
      `AH01753: access check of '${args}' to ${r.uri} failed, reason: unable to get the remote host name`);
    return AUTHZ_DENIED;
  }
  // '#' never occurs in a host name: what follows it is a comment, and is never matched
  // ('Require host example.com # example.org later' must not admit example.org).
  const require = expr(r);
  let names = require;
  const hash = names.indexOf('#');
  if (hash >= 0) {
    if (hash === 0) {
      r.log('authz_host', APLOG_ERR, `AH10120: authz_host authorize: dubious empty 'Require host ${require}' with only comment`);
      return AUTHZ_DENIED;
    }
    r.log('authz_host', APLOG_WARNING, `AH10121: authz_host authorize: ignoring comment in 'Require host ${require}'`);
    names = names.slice(0, hash);
  }
  for (const w of confWords(names)) if (inDomain(w, remote.host)) return AUTHZ_GRANTED;
  return AUTHZ_DENIED;
}

const hostProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  check(r, args, expr) {
    const remote = getRemoteHost(r, REMOTE_DOUBLE_REV);
    if (remote instanceof Promise) return remote.then((h) => hostCheck(r, args, expr, h));
    return hostCheck(r, args, expr, remote);
  },
};

// ---- Require forward-dns ------------------------------------------------------------------

async function forwardDnsCheck(r: Request, require: string): Promise<AuthzStatus> {
  const client = connAddr(r.connection);
  const c = new ArgCursor(require);
  for (let w = c.word(); w !== ''; w = c.word()) {
    // A configuration comment ends the list; "name#..." still counts "name".
    let name = w;
    const hash = w.indexOf('#');
    if (hash === 0) break;
    if (hash > 0) name = w.slice(0, hash);
    let addrs: { address: string }[] | undefined;
    try {
      addrs = await dnsp.lookup(name, { all: true });
    } catch {
      addrs = undefined;
    }
    if (addrs) {
      for (const a of addrs) {
        const p = parseAddr(a.address);
        const match = p !== undefined && client !== undefined && addrEqual(p, client);
        if (r.wantsLog('authz_host', APLOG_DEBUG)) {
          r.log('authz_host', APLOG_DEBUG, `AH03355: access check for ${r.connection.remoteIp} as '${name}': ${match ? 'yes' : 'no'}`, undefined, SRC_FORWARD_DNS);
        }
        if (match) return AUTHZ_GRANTED;
      }
    } else {
      r.log('authz_host', APLOG_WARNING, `AH03356: No sockaddr info for "${name}"`);
    }
    if (hash > 0) break;
  }
  return AUTHZ_DENIED;
}

const forwardDnsProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  check(r, _args, expr): MaybePromise<AuthzStatus> {
    return forwardDnsCheck(r, expr(r));
  },
};

// ---- Require local ------------------------------------------------------------------------

const localProvider: AuthzProvider<undefined> = {
  check(r) {
    const a = connAddr(r.connection);
    if (!a) return AUTHZ_DENIED;
    const local = connLocalAddr(r.connection);
    if ((local && addrEqual(local, a)) || subnetTest(LOCALHOST_V4, a) || subnetTest(LOCALHOST_V6, a)) return AUTHZ_GRANTED;
    return AUTHZ_DENIED;
  },
};

// ---- the module -----------------------------------------------------------------------------

const providers: ProviderDecl[] = [
  { group: 'authz', name: 'ip', version: AUTHZ_PROVIDER_VERSION, provider: ipProvider as AuthzProvider },
  { group: 'authz', name: 'host', version: AUTHZ_PROVIDER_VERSION, provider: hostProvider as AuthzProvider },
  { group: 'authz', name: 'forward-dns', version: AUTHZ_PROVIDER_VERSION, provider: forwardDnsProvider as AuthzProvider },
  { group: 'authz', name: 'local', version: AUTHZ_PROVIDER_VERSION, provider: localProvider as AuthzProvider },
];

const self = defineModule<undefined, undefined>({
  name: 'authz_host_module',
  source: 'mod_authz_host.c',
  apiVersion: MODULE_API_VERSION,
  configHooks: {
    // Identical subnets are parsed once per configuration read, not in .htaccess files.
    preConfig() { parsedSubnets = new Map(); },
    checkConfig() { parsedSubnets = null; },
  },
  providers,
});

export default self;
