// mod_proxy's configuration: proxy_server_conf / proxy_dir_conf with httpd's create and merge
// rules (merge_proxy_config, merge_proxy_dir_config) and the directive handlers of mod_proxy.c
// with their messages.

import type { CmdParms } from '../../../server/config/cmd.js';
import { splitWords } from '../../../server/config/lexer.js';
import { dirConfigOf } from '../../../server/config/build.js';
import { NOT_IN_DIR_CONTEXT, NOT_IN_DIRECTORY, NOT_IN_FILES, NOT_IN_HTACCESS } from '../../../server/config/cmd.js';
import { compileWildcard, isWildcard } from '../../../server/core/sections.js';
import { parseTimeout } from '../../../server/core/config.js';
import type { ServerRec } from '../../../server/server-rec.js';
import { APLOG_WARNING } from '../../../server/log/levels.js';
import { ACCESS_CONF, OR_ALL, PROXY_CONF } from '../../../server/module.js';
import type {
  ProxyAlias, ProxyBalancer, ProxyBadHeader, ProxyReverseAlias, ProxyStatusOpt, ProxyVia, ProxyWorker,
} from '../../../proxy/api.js';
import {
  makeBalancer, makeWorker, setBalancerParam, setWorkerParam, findBalancer, findWorker, deSocketfyUrl, type Worker,
} from './workers.js';

export interface ProxyRemote {
  readonly scheme: string;
  readonly protocol: string;
  readonly hostname: string;
  readonly port: number;
  readonly regex: RegExp | undefined;
  readonly useRegex: boolean;
  readonly creds: string | undefined;
}

/** A <Proxy> / <ProxyMatch> section: its URL (prefix, wildcard or regex) and vector. */
export interface ProxySection {
  readonly id: number;
  readonly path: string;
  readonly regex: RegExp | undefined;
  readonly wildcard: RegExp | undefined;
  readonly vector: unknown[];
}

export interface ServerConf {
  proxies: ProxyRemote[];
  aliases: ProxyAlias[];
  noproxies: string[];
  dirconn: { readonly name: string; readonly match: (host: string) => boolean }[];
  workers: ProxyWorker[];
  balancers: ProxyBalancer[];
  secProxy: ProxySection[];
  forward: ProxyWorker;
  reverse: ProxyWorker;
  domain: string | undefined;
  req: boolean | undefined;
  viaopt: ProxyVia | undefined;
  recvBufferSize: number | undefined;
  ioBufferSize: number | undefined;
  maxfwd: number | undefined;
  timeout: number | undefined;
  badopt: ProxyBadHeader | undefined;
  proxyStatus: ProxyStatusOpt | undefined;
  sourceAddress: string | undefined;
  ppinherit: boolean | undefined;
  inherit: boolean | undefined;
  bgrowth: number | undefined;
  balPersist: boolean | undefined;
}

export interface DirConf {
  raliases: ProxyReverseAlias[];
  cookiePaths: ProxyReverseAlias[];
  cookieDomains: ProxyReverseAlias[];
  errorOverride: boolean | undefined;
  errorOverrideCodes: number[];
  preserveHost: boolean | undefined;
  addForwardedHeaders: boolean | undefined;
  interpolateEnv: boolean | undefined;
  alias: ProxyAlias | undefined;
  forward100Continue: boolean | undefined;
  /** The <Proxy> section's URL (p) and regex (for balancer / worker sections). */
  sectionPath: string | undefined;
}

function generic(name: string): ProxyWorker {
  const w = makeWorker(name, undefined, true);
  if (typeof w === 'string') throw new Error(w);
  return w;
}

export function createServerConfig(_s: ServerRec): ServerConf {
  return {
    proxies: [], aliases: [], noproxies: [], dirconn: [], workers: [], balancers: [], secProxy: [],
    forward: generic('http://%%forward%%'), reverse: generic('http://%%reverse%%'),
    domain: undefined, req: undefined, viaopt: undefined, recvBufferSize: undefined, ioBufferSize: undefined, maxfwd: undefined,
    timeout: undefined, badopt: undefined, proxyStatus: undefined, sourceAddress: undefined, ppinherit: undefined,
    inherit: undefined, bgrowth: undefined, balPersist: undefined,
  };
}

export function mergeServerConfig(base: Readonly<ServerConf>, add: Readonly<ServerConf>): ServerConf {
  const ppinherit = add.ppinherit ?? base.ppinherit ?? true;
  const inherit = add.inherit ?? base.inherit ?? true;
  return {
    proxies: ppinherit ? [...base.proxies, ...add.proxies] : [...add.proxies],
    // httpd 2.4.71 appends the main server's ProxyPass list before the vhost's whatever
    // ProxyPassInherit says (merge_proxy_config; measured): the main server's mappings win.
    aliases: [...base.aliases, ...add.aliases],
    noproxies: [...base.noproxies, ...add.noproxies],
    dirconn: [...base.dirconn, ...add.dirconn],
    // httpd inherits the main server's workers and balancers when either BalancerInherit or
    // ProxyPassInherit is on (merge_proxy_config): BalancerInherit Off alone changes nothing.
    workers: inherit || ppinherit ? [...base.workers, ...add.workers] : [...add.workers],
    balancers: inherit || ppinherit ? [...base.balancers, ...add.balancers] : [...add.balancers],
    secProxy: [...base.secProxy, ...add.secProxy],
    forward: add.forward, reverse: add.reverse,
    domain: add.domain ?? base.domain,
    req: add.req ?? base.req,
    viaopt: add.viaopt ?? base.viaopt,
    recvBufferSize: add.recvBufferSize ?? base.recvBufferSize,
    ioBufferSize: add.ioBufferSize ?? base.ioBufferSize,
    maxfwd: add.maxfwd ?? base.maxfwd,
    timeout: add.timeout ?? base.timeout,
    badopt: add.badopt ?? base.badopt,
    proxyStatus: add.proxyStatus ?? base.proxyStatus,
    sourceAddress: add.sourceAddress ?? base.sourceAddress,
    ppinherit: add.ppinherit ?? base.ppinherit,
    inherit: add.inherit ?? base.inherit,
    bgrowth: add.bgrowth ?? base.bgrowth,
    balPersist: add.balPersist ?? base.balPersist,
  };
}

export function createDirConfig(_p: string | undefined): DirConf {
  return {
    raliases: [], cookiePaths: [], cookieDomains: [], errorOverride: undefined, errorOverrideCodes: [], preserveHost: undefined,
    addForwardedHeaders: undefined, interpolateEnv: undefined, alias: undefined, forward100Continue: undefined, sectionPath: undefined,
  };
}

export function mergeDirConfig(base: Readonly<DirConf>, add: Readonly<DirConf>): DirConf {
  return {
    raliases: [...add.raliases, ...base.raliases],
    cookiePaths: [...add.cookiePaths, ...base.cookiePaths],
    cookieDomains: [...add.cookieDomains, ...base.cookieDomains],
    errorOverride: add.errorOverride ?? base.errorOverride,
    errorOverrideCodes: add.errorOverride !== undefined ? add.errorOverrideCodes : base.errorOverrideCodes,
    preserveHost: add.preserveHost ?? base.preserveHost,
    addForwardedHeaders: add.addForwardedHeaders ?? base.addForwardedHeaders,
    interpolateEnv: add.interpolateEnv ?? base.interpolateEnv,
    alias: add.alias ?? base.alias,
    forward100Continue: add.forward100Continue ?? base.forward100Continue,
    sectionPath: add.sectionPath ?? base.sectionPath,
  };
}

export type Cmd = CmdParms<ServerConf, DirConf>;

// ---- helpers ----------------------------------------------------------------------------------
/** The worker of `url` in this server (an existing one, or a new one). */
function workerFor(cmd: Cmd, url: string, balancer?: ProxyBalancer): Worker | string {
  const sc = cmd.srv;
  const existing = findWorker(balancer, sc, url);
  if (existing !== undefined && existing.name === (makeWorker(url, balancer) as Worker).name) return existing as Worker;
  const w = makeWorker(url, balancer);
  if (typeof w === 'string') return w;
  if (balancer !== undefined) balancer.workers.push(w); else sc.workers.push(w);
  return w;
}

/** The balancer named by `url`, defined when new (ap_proxy_define_balancer). `alias` is the
 *  front-end path httpd records for the manager page (ap_proxy_update_balancer): "/" when a
 *  <Proxy> section, BalancerMember or ProxySet defines it, the ProxyPass path when ProxyPass
 *  names it (always, defined or not), none for ProxyPassMatch. */
function balancerFor(cmd: Cmd, url: string, alias: string | undefined, update = false): ProxyBalancer {
  const sc = cmd.srv;
  let b = findBalancer(sc, url);
  if (b === undefined) {
    b = makeBalancer(cmd.ctx, url.replace(/^(balancer:\/\/[^/]*).*$/i, '$1'));
    sc.balancers.push(b);
    update = true;
  }
  if (update && alias !== undefined) {
    const m = /^(?:[A-Za-z][A-Za-z0-9+.-]*:)?(?:\/\/([^/?#]*))?([^?#]*)/.exec(alias);
    if (m !== null) {
      b.s.vpath = m[2] ?? '';
      if (m[1] !== undefined) b.s.vhost = m[1].replace(/:\d*$/, '');
    }
  }
  return b;
}

// ---- directives -------------------------------------------------------------------------------
/** ProxyPass / ProxyPassMatch (add_pass). */
export function addPass(isRegex: boolean) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const err0 = cmd.checkContext(NOT_IN_DIRECTORY | NOT_IN_FILES);
    if (err0) return err0;
    const loc = cmd.scope.path;
    let fake: string | undefined = loc;
    let real: string | undefined;
    let useRegex = isRegex;
    let nocanon = false; let interpolate = false; let noquery = false;
    let mapping: 'encoded' | 'servlet' | undefined;
    const params: [string, string][] = [];
    for (const word of splitWords(raw)) {
      if (fake === undefined) {
        if (word === '~') {
          if (isRegex) return "ProxyPassMatch invalid syntax ('~' usage).";
          useRegex = true;
          continue;
        }
        fake = word;
      } else if (real === undefined) {
        real = word;
      } else if (word.toLowerCase() === 'nocanon') nocanon = true;
      else if (word.toLowerCase() === 'interpolate') interpolate = true;
      else if (word.toLowerCase() === 'noquery') noquery = true;
      else {
        const eq = word.indexOf('=');
        if (eq < 0) {
          if (loc !== undefined && real.startsWith('/')) return 'ProxyPass|ProxyPassMatch can not have a path when defined in a location.';
          return "Invalid ProxyPass|ProxyPassMatch parameter. Parameter must be in the form 'key=value'.";
        }
        const k = word.slice(0, eq); const v = word.slice(eq + 1);
        if (k.toLowerCase() === 'mapping') {
          if (v.toLowerCase() === 'encoded') mapping = 'encoded';
          else if (v.toLowerCase() === 'servlet') mapping = 'servlet';
          else return 'unknown mapping';
        } else params.push([k, v]);
      }
    }
    if (real === undefined || fake === undefined) return 'ProxyPass|ProxyPassMatch needs a path when not defined in a location';
    // The alias keeps the URL without its "unix:/path|" part: the socket is the worker's
    // (ap_proxy_de_socketfy in add_pass), found again by name when a request maps to it.
    const realUrl = deSocketfyUrl(real);
    if (realUrl === undefined || (/^unix:/i.test(real) && !real.includes('|'))) return 'ProxyPass|ProxyPassMatch uses an invalid "unix:" URL';
    // In a <Location>/<LocationMatch>, httpd compiles the section's path as a regex only when it
    // has wildcard characters (apr_fnmatch_test): <LocationMatch "^/x/"> is a literal prefix.
    if (loc !== undefined && isWildcard(fake)) useRegex = true;
    let regex: RegExp | undefined;
    if (useRegex) {
      try { regex = new RegExp(fake); } catch { return 'Regular expression could not be compiled.'; }
    }
    let worker: ProxyWorker | undefined;
    let balancer: ProxyBalancer | undefined;
    if (real !== '!') {
      if (/^balancer:\/\/./i.test(real)) {
        balancer = balancerFor(cmd, real, useRegex ? undefined : fake, true);
        for (const [k, v] of params) {
          const e = setBalancerParam(cmd.ctx, balancer, k, v);
          if (e !== undefined) return `ProxyPass ${e}`;
        }
      } else {
        const probe = makeWorker(useRegex ? real.replace(/\$\d.*$/, '') : real, undefined);
        if (typeof probe === 'string') return `ProxyPass ${probe}`;
        const existing = cmd.srv.workers.find((w) => w.name === probe.name && w.udsName === probe.udsName);
        if (existing !== undefined) {
          worker = existing;
          for (const [k, v] of params) {
            cmd.log('proxy', APLOG_WARNING, `AH01146: Ignoring parameter '${k}=${v}' for worker '${existing.name}' because of worker sharing`);
          }
        } else {
          cmd.srv.workers.push(probe);
          worker = probe;
          // A ProxyPassMatch URL with $n substitutions does not reuse connections unless
          // enablereuse=on says so (ap_proxy_define_worker_ex).
          if (useRegex && real.includes('$')) probe.params.disablereuse = true;
          for (const [k, v] of params) {
            const e = setWorkerParam(cmd.ctx, cmd.server, probe, k, v);
            if (e !== undefined) return `ProxyPass ${e}`;
          }
        }
      }
    }
    const alias: ProxyAlias = { fake, real: realUrl, regex, flags: { nocanon, interpolate, noquery }, mapping, balancer, worker };
    if (loc !== undefined) cmd.dir.alias = alias;
    else cmd.srv.aliases.push(alias);
    return undefined;
  };
}

/** ProxyPassReverse (add_pass_reverse); the cookie forms take "from to [interpolate]". */
export function addReverse(kind: 'raliases' | 'cookiePaths' | 'cookieDomains') {
  return (cmd: Cmd, a: string, b: string | undefined, c: string | undefined): string | undefined => {
    let fake: string; let real: string; let interp: string | undefined;
    if (kind === 'raliases') {
      const err0 = cmd.checkContext(NOT_IN_DIRECTORY | NOT_IN_FILES);
      if (err0) return err0;
      const loc = cmd.scope.path;
      if (loc === undefined) {
        if (b === undefined || b.toLowerCase() === 'interpolate') return 'ProxyPassReverse needs a path when not defined in a location';
        fake = a; real = b; interp = c;
      } else {
        if (b !== undefined && b.toLowerCase() !== 'interpolate') return 'ProxyPassReverse can not have a path when defined in a location';
        fake = loc; real = a; interp = b;
      }
    } else {
      fake = a; real = b ?? ''; interp = c;
    }
    const balancer = /^balancer:/i.test(real) ? findBalancer(cmd.srv, real) : undefined;
    const entry: ProxyReverseAlias = { fake, real, interpolate: interp !== undefined, balancer };
    cmd.dir[kind] = [...cmd.dir[kind], entry];
    return undefined;
  };
}

/** <Proxy> / <ProxyMatch> (proxysection). */
export function proxySection(isMatch: boolean) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const err = cmd.checkContext(NOT_IN_DIR_CONTEXT);
    if (err) return err;
    const endp = raw;
    const words = splitWords(endp);
    // `<Proxy>` without an argument is accepted by httpd (its path is the empty string).
    let path = words[0] ?? '';
    let regex: RegExp | undefined;
    let rest = words.slice(1);
    if (!isMatch && path === '~') {
      path = words[1] ?? '';
      rest = words.slice(2);
      isMatch = true;
    }
    if (isMatch) {
      try { regex = new RegExp(path); } catch { return 'Regex could not be compiled'; }
    }
    const vector: unknown[] = [];
    const core = cmd.ctx.moduleBySymbol('core_module');
    if (core) dirConfigOf(vector, core, path);
    const self = cmd.ctx.moduleBySymbol('proxy_module');
    const dc = self ? dirConfigOf(vector, self, path) as DirConf : undefined;
    if (dc !== undefined) dc.sectionPath = path;
    cmd.walk(cmd.node.children ?? [], {
      ...cmd.scope, vector, path, override: OR_ALL | ACCESS_CONF | PROXY_CONF, parents: [...cmd.scope.parents, cmd.name],
    });
    const wildcard = regex === undefined && isWildcard(path) ? compileWildcard(path, false) : undefined;
    cmd.srv.secProxy.push({ id: cmd.line * 1000 + cmd.srv.secProxy.length, path, regex, wildcard, vector });
    // <Proxy balancer://x key=value> / <Proxy http://backend key=value>: parameters for it.
    if (rest.length > 0 || /^balancer:/i.test(path)) {
      if (regex !== undefined && rest.length > 0) return 'Regex could not be compiled';
      const isBal = /^balancer:/i.test(path);
      if (isBal) {
        const b = balancerFor(cmd, path, '/');
        b.sectionConfig = vector;
        for (const kv of rest) {
          const eq = kv.indexOf('=');
          if (eq <= 0) return `Invalid <${cmd.name.slice(1)}> parameter. Parameter must be in the form 'key=value'`;
          const e = setBalancerParam(cmd.ctx, b, kv.slice(0, eq), kv.slice(eq + 1));
          if (e !== undefined) return `<${cmd.name.slice(1)}> ${e} ${kv.slice(0, eq)}`;
        }
      } else if (rest.length > 0) {
        const w = workerFor(cmd, path);
        if (typeof w === 'string') return `<${cmd.name.slice(1)}> ${w}`;
        for (const kv of rest) {
          const eq = kv.indexOf('=');
          if (eq <= 0) return `Invalid <${cmd.name.slice(1)}> parameter. Parameter must be in the form 'key=value'`;
          const e = setWorkerParam(cmd.ctx, cmd.server, w, kv.slice(0, eq), kv.slice(eq + 1));
          if (e !== undefined) return `<${cmd.name.slice(1)}> ${e} ${kv.slice(0, eq)}`;
        }
      }
    }
    return undefined;
  };
}

/** The <Proxy> section a directive sits in, if any. */
function sectionUrl(cmd: Cmd): string | undefined {
  const p = cmd.scope.parents;
  if (p.length > 0 && (p[p.length - 1] === '<Proxy' || p[p.length - 1] === '<ProxyMatch')) return cmd.scope.path;
  return undefined;
}

/** BalancerMember [balancer://name] url [key=value ...] (add_member): words without "=" are the
 *  balancer (unless in a <Proxy> section) then the member; the rest are parameters, a repeated
 *  key keeping its first place with the last value. */
export function addMember(cmd: Cmd, raw: string): string | undefined {
  let path = sectionUrl(cmd);
  let name: string | undefined;
  const params = new Map<string, string>();
  for (const w of splitWords(raw)) {
    const eq = w.indexOf('=');
    if (eq >= 0) params.set(w.slice(0, eq), w.slice(eq + 1));
    else if (path === undefined) path = w;
    else if (name === undefined) name = w;
    else if (sectionUrl(cmd) !== undefined) return 'BalancerMember can not have a balancer name when defined in a location';
    else return 'Invalid BalancerMember parameter. Parameter must be in the form \'key=value\'';
  }
  if (path === undefined) return 'BalancerMember must define balancer name when outside <Proxy > section';
  if (name === undefined) return 'BalancerMember must define remote proxy server';
  if (!/^[^:]*:\/\/[^/]/.test(path)) return `BalancerMember Bad syntax for a balancer name (${path})`;
  const b = balancerFor(cmd, path, '/');
  const w = workerFor(cmd, name, b);
  if (typeof w === 'string') return `BalancerMember ${w}`;
  for (const [k, v] of params) {
    const e = setWorkerParam(cmd.ctx, cmd.server, w, k, v);
    if (e !== undefined) return `BalancerMember ${e}`;
  }
  return undefined;
}

/** ProxySet [url] key=value ... (set_proxy_param). */
export function proxySet(cmd: Cmd, raw: string): string | undefined {
  const words = splitWords(raw);
  // In a <Proxy> section the section names the worker or balancer; elsewhere the first word
  // does, whatever it looks like, and it must exist already (set_proxy_param).
  const section = sectionUrl(cmd);
  const name = section ?? words.shift() ?? '';
  if (/^balancer:\/\//i.test(name)) {
    if (findBalancer(cmd.srv, name) === undefined && section === undefined) return `ProxySet can not find '${name}' Balancer.`;
    const b = balancerFor(cmd, name, '/');
    for (const kv of words) {
      const eq = kv.indexOf('=');
      if (eq < 0) return 'Invalid ProxySet parameter. Parameter must be in the form \'key=value\'';
      const e = setBalancerParam(cmd.ctx, b, kv.slice(0, eq), kv.slice(eq + 1));
      if (e !== undefined) return `ProxySet: ${e} ${kv.slice(0, eq)}=${kv.slice(eq + 1)}; ${b.name}`;
    }
    return undefined;
  }
  if (findWorker(undefined, cmd.srv, name) === undefined && section === undefined) return `ProxySet can not find '${name}' Worker.`;
  const w = workerFor(cmd, name);
  if (typeof w === 'string') return `ProxySet ${w}`;
  for (const kv of words) {
    const eq = kv.indexOf('=');
    if (eq < 0) return 'Invalid ProxySet parameter. Parameter must be in the form \'key=value\'';
    const e = setWorkerParam(cmd.ctx, cmd.server, w, kv.slice(0, eq), kv.slice(eq + 1));
    if (e !== undefined) return `ProxySet: ${e} ${kv.slice(0, eq)}=${kv.slice(eq + 1)}; ${w.name}`;
  }
  return undefined;
}

/** ProxyRemote / ProxyRemoteMatch (add_proxy). */
export function addRemote(useRegex: boolean) {
  return (cmd: Cmd, f: string, r: string, creds: string | undefined): string | undefined => {
    let regex: RegExp | undefined;
    if (useRegex) {
      try { regex = new RegExp(f); } catch { return 'Regular expression for ProxyRemoteMatch could not be compiled.'; }
    } else if (f !== '*' && !/^[a-z0-9+.-]+(:\/\/.*)?$/i.test(f)) {
      return 'ProxyRemote: Bad syntax for a remote proxy server';
    }
    const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(\[[^\]]*\]|[^/:]+)(?::(\d+))?\/?$/.exec(r);
    if (m === null) return 'ProxyRemote: Bad syntax for a remote proxy server';
    const port = m[3] !== undefined ? Number(m[3]) : (m[1]!.toLowerCase() === 'https' ? 443 : 80);
    if (m[3] !== undefined && (port < 1 || port > 65535)) return 'ProxyRemote: Bad syntax for a remote proxy server (bad port number)';
    cmd.srv.proxies.push({
      scheme: f, protocol: m[1]!.toLowerCase(), hostname: m[2]!.toLowerCase(), port, regex, useRegex,
      creds: creds !== undefined ? Buffer.from(creds, 'latin1').toString('base64') : undefined,
    });
    return undefined;
  };
}

/** NoProxy host/domain/subnet (set_proxy_dirconn). */
export function noProxy(cmd: Cmd, arg: string): string | undefined {
  const low = arg.toLowerCase();
  let match: (host: string) => boolean;
  const net = /^(\d+(?:\.\d+){0,3})\.?(?:\/(\d+))?$/.exec(low);
  if (net !== null) {
    const quads = net[1]!.split('.').map(Number);
    const bits = net[2] !== undefined ? Number(net[2]) : quads.length * 8;
    const ip = quads.concat([0, 0, 0, 0]).slice(0, 4).reduce((a, q) => (a * 256) + q, 0);
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    match = (host: string): boolean => {
      const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(host);
      if (m === null) return false;
      const h = m.slice(1, 5).map(Number).reduce((a, q) => (a * 256) + q, 0);
      return ((h & mask) >>> 0) === ((ip & mask) >>> 0);
    };
  } else if (low.startsWith('.')) {
    match = (host: string): boolean => host.toLowerCase().endsWith(low);
  } else {
    match = (host: string): boolean => host.toLowerCase() === low;
  }
  cmd.srv.dirconn.push({ name: low, match });
  return undefined;
}

export function setVia(cmd: Cmd, arg: string): string | undefined {
  const v = arg.toLowerCase();
  if (v !== 'off' && v !== 'on' && v !== 'block' && v !== 'full') return 'ProxyVia must be one of: off | on | full | block';
  cmd.srv.viaopt = v;
  return undefined;
}

export function setBadHeader(cmd: Cmd, arg: string): string | undefined {
  const v = arg.toLowerCase();
  if (v !== 'iserror' && v !== 'ignore' && v !== 'startbody') return 'ProxyBadHeader must be one of: IsError | Ignore | StartBody';
  cmd.srv.badopt = v === 'iserror' ? 'error' : v === 'ignore' ? 'ignore' : 'body';
  return undefined;
}

export function setStatus(cmd: Cmd, arg: string): string | undefined {
  const v = arg.toLowerCase();
  if (v === 'off' || v === 'on') cmd.srv.proxyStatus = v;
  else if (v === 'full') cmd.srv.proxyStatus = 'full';
  else return 'ProxyStatus must be one of: off | on | full';
  return undefined;
}

export function setTimeout_(cmd: Cmd, arg: string): string | undefined {
  const t = parseTimeout(arg, 's');
  if (t === undefined || t < 1) return 'Proxy Timeout must be at least 1 second.';
  cmd.srv.timeout = t;
  return undefined;
}

export function setErrorOverride(cmd: Cmd, arg: string): string | undefined {
  const low = arg.toLowerCase();
  const d = cmd.dir;
  if (low === 'on') { d.errorOverride = true; d.errorOverrideCodes = []; return undefined; }
  if (low === 'off') { d.errorOverride = false; d.errorOverrideCodes = []; return undefined; }
  if (d.errorOverride !== true) return 'ProxyErrorOverride: status codes to intercept can only be applied to ProxyErrorOverride on';
  if (!/^\d+$/.test(arg)) return 'ProxyErrorOverride: status codes to intercept must be numeric';
  const n = Number(arg);
  if (!(n >= 400 && n <= 599)) return 'ProxyErrorOverride: status codes to intercept must be valid HTTP Status Codes >=400 && <600';
  d.errorOverrideCodes = [...d.errorOverrideCodes, n].sort((a, b) => a - b);
  return undefined;
}

/** ProxyIOBufferSize, ProxyReceiveBufferSize.
 *  DIFFERENCE: ProxyReceiveBufferSize (and receivebuffersize=) is checked as httpd checks it
 *  but sets no SO_RCVBUF: Node cannot set a TCP socket's receive buffer (libuv's
 *  uv_recv_buffer_size is exposed for UDP only); the kernel's autotuning applies, as with 0
 *  (docs/differences.md). */
export function setSize(field: 'ioBufferSize' | 'recvBufferSize', msg: string) {
  return (cmd: Cmd, arg: string): string | undefined => {
    // atoi / atol, as httpd: what is not a number is 0 (the system default).
    const n = parseInt(arg, 10) || 0;
    if (n < 512 && n !== 0) return msg;
    if (field === 'ioBufferSize') {
      cmd.srv.ioBufferSize = n === 0 ? 8192 : n;
      return undefined;
    }
    cmd.srv.recvBufferSize = n;
    return undefined;
  };
}

export function setMaxForwards(cmd: Cmd, arg: string): string | undefined {
  // atol, as httpd: a value that is not a number is 0.
  const n = parseInt(arg, 10);
  cmd.srv.maxfwd = Number.isNaN(n) ? 0 : n;
  return undefined;
}

export function setDomain(cmd: Cmd, arg: string): string | undefined {
  if (!arg.startsWith('.')) return 'ProxyDomain: domain name must start with a dot.';
  cmd.srv.domain = arg;
  return undefined;
}

export function setGrowth(cmd: Cmd, arg: string): string | undefined {
  const n = parseInt(arg, 10);
  if (!(n >= 0 && n <= 1000)) return 'BalancerGrowth must be between 0 and 1000';
  cmd.srv.bgrowth = n;
  return undefined;
}

export { NOT_IN_FILES, NOT_IN_HTACCESS };
