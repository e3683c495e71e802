// mod_access_compat (modules/aaa/mod_access_compat.c): httpd 2.2's host-based access control,
// kept in 2.4 for configurations that still use it.
//   order deny,allow | allow,deny | mutual-failure   (per method, <Limit> aware)
//   allow from / deny from  all | env=VAR | env=!VAR | full or partial IP | a/nn | a/netmask |
//                           IPv6 | host name or domain (double-reverse lookup of the client)
//   Satisfy All | Any                                  (per method, read by the lifecycle)
// The access_checker hook (HOOK_MIDDLE) answers OK or 403 with AH01797. The module has no
// merger: the most specific section that uses one of its directives replaces the whole
// configuration, as in httpd (a section that uses none inherits the parent's).
//
// Where a merged configuration holds both these directives and host-style Require lines, the
// specification (section 5.2 rule 5, table 5.4) gives these directives precedence: see
// compatDecides below and registerCompatPrecedence in mod_authz_core.

import {
  HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_AUTHCFG, OR_LIMIT,
  defineModule, directive, type MaybePromise,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { registerSatisfy, type SatisfyMode } from '../../server/request/satisfy.js';
import {
  envHas, maskFromScope, maskHas, registerCompatPrecedence, type MethodMask,
} from './mod_authz_core.js';
import { useragentAddr, inDomain, parseSubnet, subnetErrorText, subnetTest, type IpSubnet } from '../../lib/ipsubnet.js';
import { REMOTE_DOUBLE_REV, getRemoteHost } from '../../server/remote-host.js';

export type Order = 'deny,allow' | 'allow,deny' | 'mutual-failure';

/** One `from` word of an Allow or Deny line; `where` is the line's "file:line" (for
 *  `plume explain`). */
export type AllowDeny = (
  | { readonly kind: 'env' | 'nenv' | 'host'; readonly mask: MethodMask; readonly from: string }
  | { readonly kind: 'all'; readonly mask: MethodMask }
  | { readonly kind: 'ip'; readonly mask: MethodMask; readonly ip: IpSubnet }
) & { readonly where?: string | undefined };

/** A per-method setting: the last assignment whose mask holds the method wins. */
export interface PerMethod<T> {
  readonly mask: MethodMask;
  readonly value: T;
  /** "file:line" of the directive. */
  readonly where: string | undefined;
}

declare module '../../server/request/request.js' {
  interface TraceEvents {
    /** An Allow or Deny rule matched the request. */
    access_compat_match: { readonly rule: AllowDeny };
    /** check_dir_access's answer: the configuration read, the Order applied, the verdict. */
    access_compat: { readonly conf: AccessCompatDirConfig | undefined; readonly order: Order | undefined; readonly granted: boolean };
  }
}

export interface AccessCompatDirConfig {
  readonly orders: readonly PerMethod<Order>[];
  readonly allows: readonly AllowDeny[];
  readonly denys: readonly AllowDeny[];
  readonly satisfy: readonly PerMethod<'all' | 'any'>[];
}

interface MutableDirConfig {
  orders: PerMethod<Order>[];
  allows: AllowDeny[];
  denys: AllowDeny[];
  satisfy: PerMethod<'all' | 'any'>[];
}

function createDirConfig(): AccessCompatDirConfig {
  const c: MutableDirConfig = { orders: [], allows: [], denys: [], satisfy: [] };
  return c;
}

function lookup<T>(list: readonly PerMethod<T>[], method: string): T | undefined {
  return lookupEntry(list, method)?.value;
}

/** The setting in force for a method (the Order or Satisfy line that applies), or undefined. */
export function lookupEntry<T>(list: readonly PerMethod<T>[], method: string): PerMethod<T> | undefined {
  for (let i = list.length - 1; i >= 0; i--) if (maskHas(list[i]!.mask, method)) return list[i]!;
  return undefined;
}

// ---- directives ---------------------------------------------------------------------------

type Cmd = CmdParms<undefined, AccessCompatDirConfig>;

function mutable(c: AccessCompatDirConfig): MutableDirConfig {
  return c as MutableDirConfig;
}

function setOrder(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a !== 'allow,deny' && a !== 'deny,allow' && a !== 'mutual-failure') return 'unknown order';
  mutable(cmd.dir).orders.push({ mask: maskFromScope(cmd.scope.limited), value: a, where: `${cmd.file}:${cmd.line}` });
  return undefined;
}

function setSatisfy(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a !== 'all' && a !== 'any') return "Satisfy either 'any' or 'all'.";
  mutable(cmd.dir).satisfy.push({ mask: maskFromScope(cmd.scope.limited), value: a, where: `${cmd.file}:${cmd.line}` });
  return undefined;
}

/** Parses one `from` word of Allow/Deny (allow_cmd). */
export function parseFrom(where: string, mask: MethodMask): AllowDeny | string {
  const lw = where.toLowerCase();
  if (lw.startsWith('env=!')) return { kind: 'nenv', mask, from: where.slice(5) };
  if (lw.startsWith('env=')) return { kind: 'env', mask, from: where.slice(4) };
  if (lw === 'all') return { kind: 'all', mask };
  const slash = where.indexOf('/');
  if (slash >= 0) {
    const res = parseSubnet(where.slice(0, slash), where.slice(slash + 1));
    if (!res.ok) return res.error === 'EINVAL' ? 'An IP address was expected' : subnetErrorText(res.error);
    return { kind: 'ip', mask, ip: res.subnet };
  }
  const res = parseSubnet(where, undefined);
  if (res.ok) return { kind: 'ip', mask, ip: res.subnet };
  if (res.error !== 'EINVAL') return subnetErrorText(res.error);
  if (where.includes('#')) return 'No comments are allowed here';
  return { kind: 'host', mask, from: where };
}

function allowDeny(isAllow: boolean) {
  return (cmd: Cmd, from: string, where: string): string | undefined => {
    if (from.toLowerCase() !== 'from') return "allow and deny must be followed by 'from'";
    const a = parseFrom(where, maskFromScope(cmd.scope.limited));
    if (typeof a === 'string') return a;
    const d = mutable(cmd.dir);
    (isAllow ? d.allows : d.denys).push({ ...a, where: `${cmd.file}:${cmd.line}` });
    return undefined;
  };
}

// ---- the access checker (check_dir_access) ------------------------------------------------

/** A rule matched: reported to `plume explain` when it traces the request. */
function matched(r: Request, rule: AllowDeny): true {
  r.trace?.record('access_compat_match', { rule });
  return true;
}

/** find_allowdeny from entry `from` on; resumes after the one DNS lookup a host entry needs. */
function findAllowDeny(r: Request, list: readonly AllowDeny[], from: number): MaybePromise<boolean> {
  const method = r.method;
  for (let i = from; i < list.length; i++) {
    const a = list[i]!;
    if (!maskHas(a.mask, method)) continue;
    switch (a.kind) {
      case 'env':
        if (envHas(r.subprocessEnv, a.from)) return matched(r, a);
        break;
      case 'nenv':
        if (!envHas(r.subprocessEnv, a.from)) return matched(r, a);
        break;
      case 'all':
        return matched(r, a);
      case 'ip': {
        const addr = useragentAddr(r);
        if (addr && subnetTest(a.ip, addr)) return matched(r, a);
        break;
      }
      case 'host': {
        const remote = getRemoteHost(r, REMOTE_DOUBLE_REV);
        if (remote instanceof Promise) return remote.then(() => findAllowDeny(r, list, i));
        if (remote.host !== undefined && !remote.isIp && inDomain(a.from, remote.host)) return matched(r, a);
        break;
      }
    }
  }
  return false;
}

/** The requests these directives granted by their own rules (for compatDecides). */
const grantedByRules = new WeakMap<Request, boolean>();

function hasRules(conf: AccessCompatDirConfig, method: string): boolean {
  if (lookup(conf.orders, method) !== undefined) return true;
  for (const a of conf.allows) if (maskHas(a.mask, method)) return true;
  for (const a of conf.denys) if (maskHas(a.mask, method)) return true;
  return false;
}

function finish(r: Request, conf: AccessCompatDirConfig, order: Order, ok: boolean): number {
  r.trace?.record('access_compat', { conf, order, granted: ok });
  if (!ok) {
    r.log('access_compat', APLOG_ERR,
      `AH01797: client denied by server configuration: ${r.filename !== '' ? r.filename : 'uri ' + r.uri}`);
    return 403;
  }
  if (hasRules(conf, r.method)) grantedByRules.set(r, true);
  return OK;
}

function then(v: MaybePromise<boolean>, f: (b: boolean) => MaybePromise<number>): MaybePromise<number> {
  return v instanceof Promise ? v.then(f) : f(v);
}

function checkDirAccess(r: Request): MaybePromise<number> {
  const conf = self.dir(r);
  // No rules at all (the usual case): deny,allow with nothing denied.
  if (!conf || (conf.orders.length === 0 && conf.allows.length === 0 && conf.denys.length === 0)) {
    r.trace?.record('access_compat', { conf, order: undefined, granted: true });
    return OK;
  }
  const order = lookup(conf.orders, r.method) ?? 'deny,allow';
  if (order === 'allow,deny') {
    return then(findAllowDeny(r, conf.allows, 0), (allowed) =>
      then(findAllowDeny(r, conf.denys, 0), (denied) => finish(r, conf, order, allowed && !denied)));
  }
  if (order === 'deny,allow') {
    return then(findAllowDeny(r, conf.denys, 0), (denied) =>
      then(findAllowDeny(r, conf.allows, 0), (allowed) => finish(r, conf, order, allowed || !denied)));
  }
  return then(findAllowDeny(r, conf.allows, 0), (allowed) =>
    allowed ? then(findAllowDeny(r, conf.denys, 0), (denied) => finish(r, conf, order, !denied)) : finish(r, conf, order, false));
}

/** access_compat_ap_satisfies: Satisfy for the request's method. */
function satisfies(r: Request): SatisfyMode {
  if (self.index < 0) return 'nospec';
  const conf = self.dir(r);
  if (!conf) return 'nospec';
  return lookup(conf.satisfy, r.method) ?? 'nospec';
}

/** DIFFERENCE (specification 5.2 rule 5, table 5.4): Order/Allow/Deny that apply to this
 *  request granted it under Satisfy All, so they decide over host-style Require lines. */
function compatDecides(r: Request): boolean {
  return grantedByRules.get(r) === true && satisfies(r) !== 'any';
}

registerSatisfy(satisfies);
registerCompatPrecedence(compatDecides);

// ---- the module -----------------------------------------------------------------------------

const FROM_HELP = "'from' followed by hostnames or IP-address wildcards";

const self = defineModule<undefined, AccessCompatDirConfig>({
  name: 'access_compat_module',
  source: 'mod_access_compat.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  // No merger: the more specific configuration replaces the parent's whole, as in httpd.
  directives: [
    directive({ name: 'order', args: 'TAKE1', where: OR_LIMIT, help: "'allow,deny', 'deny,allow', or 'mutual-failure'", handler: setOrder }),
    directive({ name: 'allow', args: 'ITERATE2', where: OR_LIMIT, help: FROM_HELP, handler: allowDeny(true) }),
    directive({ name: 'deny', args: 'ITERATE2', where: OR_LIMIT, help: FROM_HELP, handler: allowDeny(false) }),
    directive({ name: 'Satisfy', args: 'TAKE1', where: OR_AUTHCFG, help: "access policy if both allow and require used ('all' or 'any')", handler: setSatisfy }),
  ],
  hooks: {
    accessChecker: { fn: checkDirAccess, order: HOOK_MIDDLE },
  },
});

export default self;
