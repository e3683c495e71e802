// Workers and balancers as proxy_util.c defines them: ap_proxy_define_worker, set_worker_param
// and set_balancer_param (mod_proxy.c) with httpd's messages, ap_proxy_get_worker's longest
// match, the status letters, and ap_proxy_canonenc / ap_proxy_canon_netloc.

import type { ConfigContext } from '../../../server/config/context.js';
import type { ServerRec } from '../../../server/server-rec.js';
import { parseTimeout } from '../../../server/core/config.js';
import {
  PROXY_WORKER_STATUS_TABLE, PROXY_WORKER_GENERIC, SCHEME_PORTS, PROXYREQ_NONE, PROXYREQ_REVERSE,
  type ProxyBalancer, type ProxyServerConf, type ProxyWorker, type ProxyWorkerParams, type ProxyWorkerShared, type ProxyReq,
} from '../../../proxy/api.js';

export function newParams(): ProxyWorkerParams {
  return {
    timeout: undefined, connectionTimeout: undefined, ping: undefined, retry: undefined, acquire: undefined, ttl: undefined,
    min: undefined, hmax: undefined, smax: undefined, keepalive: undefined, disablereuse: undefined, enablereuse: undefined,
    flushpackets: undefined, flushwait: undefined, upgrade: undefined, mapping: undefined, iobuffersize: undefined,
    receivebuffersize: undefined, responsefieldsize: undefined, secret: undefined, addressttl: undefined, extra: new Map(),
  };
}

function newShared(name: string, scheme: string, hostname: string, port: number, uds: string): ProxyWorkerShared {
  return {
    name, scheme, hostname, port, udsPath: uds, route: '', redirect: '', status: 0, lbset: 0, lbfactor: 1,
    lbstatus: 0, elected: 0, busy: 0, transferred: 0, read: 0, retries: 0, errorTime: 0, updated: Date.now(),
    passes: 1, pcount: 0, fails: 1, fcount: 0, index: -1,
    // HCHECK_WATHCHDOG_DEFAULT_INTERVAL: 30 s.
    method: 'NONE', interval: 30000, hcuri: '', hcexpr: '',
  };
}

export function portOfScheme(scheme: string): number {
  // Schemes come in lower case almost always: looked up as they are first.
  return PORTS.get(scheme) ?? PORTS.get(scheme.toLowerCase()) ?? 0;
}
const PORTS = new Map(Object.entries(SCHEME_PORTS));

/** A mutable worker, as this module builds it. */
export type Worker = ProxyWorker & { params: ProxyWorkerParams };

/** Splits "unix:/path|http://host/x" (ap_proxy_de_socketfy). */
export function deSocketfy(url: string): { url: string; uds: string | undefined } {
  const bar = url.indexOf('|');
  if (url.slice(0, 5).toLowerCase() !== 'unix:' || bar < 0) return { url, uds: undefined };
  return { url: url.slice(bar + 1), uds: url.slice(5, bar) };
}

/** ap_proxy_de_socketfy: the URL after "unix:/path|", with "scheme:" and "scheme://" made
 *  "scheme://localhost"; undefined when the part after '|' has no scheme. */
export function deSocketfyUrl(url: string): string | undefined {
  const bar = url.indexOf('|', 5);
  if (url.slice(0, 5).toLowerCase() !== 'unix:' || bar < 0) return url;
  const ret = url.slice(bar + 1);
  const c = ret.indexOf(':');
  if (c < 0) return undefined;
  const after = ret.slice(c + 1);
  if (after === '') return ret + '//localhost';
  if (after === '//') return ret + 'localhost';
  return ret;
}

/** Builds a worker for `url` (ap_proxy_define_worker); an error text for a bad URL. */
export function makeWorker(rawUrl: string, balancer: ProxyBalancer | undefined, generic = false): Worker | string {
  const ds = deSocketfy(rawUrl);
  const uds = ds.uds;
  // "unix:/path|http:" names no host: the worker's is "localhost" (ap_proxy_define_worker_ex).
  const url = uds !== undefined && /^[A-Za-z][A-Za-z0-9+.-]*:(\/\/)?$/.test(ds.url) ? ds.url.replace(/:(\/\/)?$/, '://localhost') : ds.url;
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(\[[^\]]*\]|[^/:?#]*)(?::(\d*))?([^]*)$/.exec(url);
  if (m === null) return /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\[?$/.test(url) ? `Unable to parse URL: ${rawUrl}` : `URL must be absolute!: ${rawUrl}`;
  const scheme = m[1]!.toLowerCase();
  const host = m[2]!.toLowerCase();
  if (host === '' && uds === undefined && !scheme.startsWith('balancer')) return `URL must be absolute!: ${rawUrl}`;
  const port = m[3] !== undefined && m[3] !== '' ? Number(m[3]) : portOfScheme(scheme);
  const name = `${scheme}://${host}${m[3] !== undefined && m[3] !== '' ? ':' + m[3] : ''}${m[4] ?? ''}`;
  const w: Worker = {
    name, udsName: uds !== undefined ? rawUrl : undefined, scheme, hostname: host, port, udsPath: uds,
    params: newParams(), s: newShared(name, scheme, host, port, uds ?? ''), localStatus: 0, balancer,
    generic, matchable: /\$\d/.test(name), context: new Map(),
  };
  if (generic) w.s.status |= PROXY_WORKER_GENERIC;
  return w;
}

/** ap_proxy_parse_wstatus: "+H", "-D", "E"... */
export function setWorkerStatus(w: ProxyWorker, val: string): string | undefined {
  let mode = true;
  for (let i = 0; i < val.length; i++) {
    let c = val[i]!;
    if (c === '+') { mode = true; c = val[++i] ?? ''; } else if (c === '-') { mode = false; c = val[++i] ?? ''; }
    const e = PROXY_WORKER_STATUS_TABLE.find((t) => t.flag === c.toUpperCase());
    if (e === undefined) return 'Unknown status parameter option';
    if (mode) w.s.status |= e.bit; else w.s.status &= ~e.bit;
  }
  return undefined;
}

/** ap_proxy_parse_wstatus's counterpart for display ("Init Ok " style). */
export function workerStatusString(w: ProxyWorker): string {
  let out = '';
  for (const e of PROXY_WORKER_STATUS_TABLE) if (w.s.status & e.bit) out += e.name + ' ';
  return out === '' ? 'Ok ' : out;
}

function onOff(val: string, msg: string): boolean | string {
  if (val.toLowerCase() === 'on') return true;
  if (val.toLowerCase() === 'off') return false;
  return msg;
}

function atoi(s: string): number {
  const m = /^[ \t]*([+-]?\d+)/.exec(s);
  return m ? parseInt(m[1]!, 10) : 0;
}

/** set_worker_param (mod_proxy.c): httpd's checks and messages. `others` are the
 *  proxy_worker_param providers (mod_proxy_hcheck). */
export function setWorkerParam(ctx: ConfigContext, s: ServerRec, w: Worker, key: string, val: string): string | undefined {
  const k = key.toLowerCase();
  const p = w.params;
  const timeout = (unit: 's' | 'ms', fmt: string, min: string): number | string => {
    const t = parseTimeout(val, unit);
    if (t === undefined) return fmt;
    if (t < 1) return min;
    return t;
  };
  switch (k) {
    case 'loadfactor': {
      const f = Math.trunc(parseFloat(val) * 100);
      if (!(f >= 100 && f <= 10000)) return 'LoadFactor must be a number between 1..100';
      w.s.lbfactor = f / 100;
      return undefined;
    }
    // 2.4.71 reads retry, ttl and timeout with atoi in whole seconds (no unit suffix):
    // `retry=abc` is 0, `timeout=500ms` is "at least one second" (measured with apache2 -t).
    case 'retry': { const n = atoi(val); if (n < 0) return 'Retry must be a positive value'; p.retry = n * 1000; return undefined; }
    case 'ttl': { const n = atoi(val); if (n < 1) return 'TTL must be at least one second'; p.ttl = n * 1000; return undefined; }
    case 'min': { const n = atoi(val); if (n < 0) return 'Min must be a positive number'; p.min = n; return undefined; }
    case 'max': { const n = atoi(val); if (n < 0) return 'Max must be a positive number'; p.hmax = n; return undefined; }
    case 'smax': { const n = atoi(val); if (n < 0) return 'Smax must be a positive number'; p.smax = n; return undefined; }
    case 'acquire': { const t = timeout('ms', 'Acquire timeout has wrong format', 'Acquire must be at least one millisecond'); if (typeof t === 'string') return t; p.acquire = t; return undefined; }
    case 'timeout': { const n = atoi(val); if (n < 1) return 'Timeout must be at least one second'; p.timeout = n * 1000; return undefined; }
    case 'connectiontimeout': { const t = timeout('s', 'Connectiontimeout has wrong format', 'Connectiontimeout must be at least one millisecond.'); if (typeof t === 'string') return t; p.connectionTimeout = t; return undefined; }
    case 'ping': { const t = timeout('s', 'Ping/Pong timeout has wrong format', 'Ping/Pong timeout must be at least one millisecond'); if (typeof t === 'string') return t; p.ping = t; return undefined; }
    case 'iobuffersize': { const n = atoi(val); if (n < 512 && n !== 0) return 'IOBufferSize must be >= 512 bytes, or 0 for system default.'; p.iobuffersize = n || 8192; return undefined; }
    case 'receivebuffersize': { const n = atoi(val); if (n < 512 && n !== 0) return 'ReceiveBufferSize must be >= 512 bytes, or 0 for system default.'; p.receivebuffersize = n; return undefined; }
    case 'keepalive': { const b = onOff(val, 'KeepAlive must be On|Off'); if (typeof b === 'string') return b; p.keepalive = b; return undefined; }
    case 'disablereuse': { const b = onOff(val, 'DisableReuse must be On|Off'); if (typeof b === 'string') return b; p.disablereuse = b; return undefined; }
    case 'enablereuse': { const b = onOff(val, 'EnableReuse must be On|Off'); if (typeof b === 'string') return b; p.disablereuse = !b; p.enablereuse = b; return undefined; }
    case 'addressttl': {
      if (val === '-1') { p.addressttl = -1; return undefined; }
      const t = parseTimeout(val, 's');
      if (t === undefined || t % 1000 !== 0 || t / 1000 > 2147483647) return 'AddressTTL must be -1 or a number of seconds not exceeding (2147483647)';
      p.addressttl = t / 1000;
      return undefined;
    }
    case 'route': if (val.length >= 64) return 'Route length must be < 64 characters'; w.s.route = val; return undefined;
    case 'redirect': if (val.length >= 64) return 'Redirect length must be < 64 characters'; w.s.redirect = val; return undefined;
    case 'status': return setWorkerStatus(w, val);
    case 'flushpackets': {
      const v = val.toLowerCase();
      if (v !== 'on' && v !== 'off' && v !== 'auto') return 'flushpackets must be on|off|auto';
      p.flushpackets = v;
      return undefined;
    }
    case 'flushwait': {
      // atoi in milliseconds, as 2.4.71 reads it.
      const n = atoi(val);
      if (n > 1000 || n < 0) return 'flushwait must be <= 1000, or 0 for system default of 10 millseconds.';
      p.flushwait = n === 0 ? 10 : n;
      return undefined;
    }
    case 'lbset': { const n = atoi(val); if (n < 0 || n > 99) return 'lbset must be between 0 and 99'; w.s.lbset = n; return undefined; }
    case 'flusher': if (val.length >= 16) return 'flusher name length must be < 16 characters'; p.extra.set(k, val); return undefined;
    case 'secret': if (val.length >= 64) return 'Secret length must be < 64 characters'; p.secret = val; return undefined;
    case 'upgrade': if (val.length >= 16) return 'upgrade protocol length must be < 16 characters'; p.upgrade = val.toLowerCase() === 'any' ? '*' : val; return undefined;
    case 'responsefieldsize': { const n = atoi(val); if (n < 0) return 'ResponseFieldSize must be greater than 0 bytes, or 0 for system default.'; p.responsefieldsize = n || 8192; return undefined; }
    case 'multipathtcp': return 'multipathtcp is not supported on your platform';
    case 'mapping': {
      // Given on ProxyPass only; kept on the worker for the protocol modules.
      const v = val.toLowerCase();
      if (v !== 'encoded' && v !== 'servlet') return `unknown mapping ${val}`;
      p.mapping = v;
      return undefined;
    }
  }
  for (const name of ctx.providerNames('proxy_worker_param')) {
    const r = ctx.provider('proxy_worker_param', name)!.set(ctx, s, w, k, val);
    if (r !== false) return r;
  }
  return 'unknown Worker parameter';
}

/** set_balancer_param (mod_proxy.c). */
export function setBalancerParam(ctx: ConfigContext, b: ProxyBalancer, key: string, val: string): string | undefined {
  const k = key.toLowerCase();
  const bs = b.s;
  b.params.set(k, val);
  switch (k) {
    case 'stickysession': {
      const bar = val.indexOf('|');
      bs.sticky = bar < 0 ? val : val.slice(0, bar);
      bs.stickyPath = bar < 0 ? val : val.slice(bar + 1);
      return undefined;
    }
    case 'stickysessionsep':
      if (val.length !== 1) {
        if (val.toLowerCase() === 'off') { bs.stickySeparator = ''; return undefined; }
        return 'stickysessionsep must be a single character or Off';
      }
      bs.stickySeparator = val;
      return undefined;
    case 'nofailover': { const v = onOff(val, 'failover must be On|Off'); if (typeof v === 'string') return v; bs.stickyForce = v; return undefined; }
    case 'timeout': {
      const t = parseTimeout(val, 's');
      if (t === undefined) return 'Timeout value has wrong format';
      if (t < 10) return 'Timeout must be at least ten milliseconds';
      bs.timeout = t;
      return undefined;
    }
    case 'maxattempts': { const n = atoi(val); if (n < 0) return 'maximum number of attempts must be a positive number'; bs.maxAttempts = n; return undefined; }
    case 'lbmethod': {
      if (val.length > 31) return 'unknown lbmethod';
      const prov = ctx.provider('proxy_lbmethod', val);
      if (prov === undefined) return 'unknown lbmethod';
      b.lbmethod = prov;
      bs.lbpname = val;
      return undefined;
    }
    case 'scolonpathdelim': { const v = onOff(val, 'scolonpathdelim must be On|Off'); if (typeof v === 'string') return v; bs.scolonsep = v; return undefined; }
    case 'failonstatus': {
      b.errStatuses.length = 0;
      for (const t of val.split(/[, ]+/).filter((x) => x !== '')) {
        const n = atoi(t);
        if (!(n >= 100 && n <= 599)) return 'failonstatus must be one or more HTTP response codes';
        b.errStatuses.push(n);
      }
      return undefined;
    }
    case 'failontimeout': { const v = onOff(val, 'failontimeout must be On|Off'); if (typeof v === 'string') return v; b.failOnTimeout = v; return undefined; }
    case 'nonce': if (val.toLowerCase() === 'none') bs.nonce = ''; else { if (val.length > 36) return 'Provided nonce is too large'; bs.nonce = val; } return undefined;
    case 'growth': { const n = atoi(val); if (n < 1 || n > 100) return 'growth must be between 1 and 100'; b.growth = n; return undefined; }
    case 'forcerecovery': { const v = onOff(val, 'forcerecovery must be On|Off'); if (typeof v === 'string') return v; bs.forcerecovery = v; return undefined; }
  }
  return 'unknown Balancer parameter';
}

/** A new balancer "balancer://name" (ap_proxy_define_balancer). */
export function makeBalancer(ctx: ConfigContext, url: string): ProxyBalancer {
  const name = url.toLowerCase().replace(/\/+$/, '');
  return {
    name, workers: [], lbmethod: ctx.provider('proxy_lbmethod', 'byrequests'), growth: 0, errStatuses: [], failOnTimeout: false,
    sectionConfig: undefined, params: new Map(), context: new Map(),
    s: {
      name, sticky: '', stickyPath: '', stickySeparator: '.', stickyForce: false, scolonsep: false, lbpname: 'byrequests',
      nonce: '', timeout: 0, maxAttempts: undefined, forcerecovery: true, inactive: false, vhost: '', vpath: '', wupdated: Date.now(), index: -1,
    },
  };
}

/** ap_proxy_get_balancer: by "balancer://name" (the path after the name is ignored). */
export function findBalancer(conf: ProxyServerConf, url: string): ProxyBalancer | undefined {
  if (url.length < 11 || url.slice(0, 11).toLowerCase() !== 'balancer://') return undefined;
  let end = 11;
  while (end < url.length && url.charCodeAt(end) !== 0x2f) end++;
  const name = url.slice(0, end).toLowerCase();
  // By name in a table made once per server (again when a balancer was added); the first of
  // a name wins, as a walk of the list would find it.
  let t = balancerTables.get(conf);
  if (t === undefined || t.count !== conf.balancers.length) {
    const byName = new Map<string, ProxyBalancer>();
    for (const b of conf.balancers) if (!byName.has(b.name)) byName.set(b.name, b);
    t = { count: conf.balancers.length, byName };
    balancerTables.set(conf, t);
  }
  return t.byName.get(name);
}
const balancerTables = new WeakMap<ProxyServerConf, { count: number; byName: Map<string, ProxyBalancer> }>();

/** ap_proxy_get_worker: the worker whose name is the longest prefix of `url` (scheme and host
 *  case-insensitive); generic workers never match. */
export function findWorker(balancer: ProxyBalancer | undefined, conf: ProxyServerConf, url: string): ProxyWorker | undefined {
  const { url: u } = deSocketfy(url);
  const list = balancer !== undefined ? balancer.workers : conf.workers;
  // Workers named by scheme and host alone (the usual ProxyPass http://host:port): a name can
  // only match within the URL's "scheme://host:port", so the answer is kept per such prefix.
  let t = workerTables.get(list);
  if (t === undefined || t.count !== list.length) {
    t = { count: list.length, hostOnly: list.every((w) => !/[/?#]/.test(w.name.slice(w.name.indexOf('://') + 3))), byPrefix: new Map() };
    workerTables.set(list, t);
  }
  if (!t.hostOnly) return longestWorker(list, lowerSchemeHost(u));
  const sep = u.indexOf('://');
  let end = sep < 0 ? u.length : sep + 3;
  while (end < u.length) { const c = u.charCodeAt(end); if (c === 0x2f || c === 0x3f || c === 0x23) break; end++; }
  const key = end === u.length ? u : u.slice(0, end);
  let w = t.byPrefix.get(key);
  if (w === undefined) {
    w = longestWorker(list, lowerSchemeHost(key)) ?? null;
    if (t.byPrefix.size >= 256) t.byPrefix.clear();
    t.byPrefix.set(key, w);
  }
  return w ?? undefined;
}
const workerTables = new WeakMap<readonly ProxyWorker[], { count: number; hostOnly: boolean; byPrefix: Map<string, ProxyWorker | null> }>();

function longestWorker(list: readonly ProxyWorker[], low: string): ProxyWorker | undefined {
  let best: ProxyWorker | undefined;
  for (const w of list) {
    if (w.generic) continue;
    const n = w.name;
    if (n.length <= (best?.name.length ?? -1)) continue;
    if (low.startsWith(n) && (low.length === n.length || n.endsWith('/') || '/?#'.includes(low[n.length]!) || n.replace(/^[a-z0-9+.-]+:\/\/[^/]*/, '') === '')) best = w;
  }
  return best;
}

function lowerSchemeHost(u: string): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*)([^]*)$/.exec(u);
  return m ? m[1]!.toLowerCase() + m[2]! : u;
}

// ---- URL encoding ----------------------------------------------------------------------------
// httpd's sets (proxy_util.c): characters kept as they are ("allowed") and characters never
// encoded nor decoded ("reserved"), per part of the URL.
const ALLOWED: Record<'url' | 'path' | 'query' | 'fragment' | 'user' | 'fpath', string> = {
  url: "$-_.+!*'(),?/:@&=",
  path: "~$-_.+!*'(),;:@&=",
  query: "$-_.!*'(),;:@&=",
  fragment: "$-_.+!*'(),?/:@&=",
  user: "$-_.+!*'(),;@&=",
  // enc_fpath: mod_proxy_ftp's path with its query.
  fpath: "$-_.+!*'(),?:@&=",
};
const RESERVED: Record<'url' | 'path' | 'query' | 'fragment' | 'user' | 'fpath', string> = {
  url: '', path: '/', query: '+', fragment: '', user: '', fpath: '',
};

/** Per part, the characters canonenc gives back as they are whatever the request (letters,
 *  digits, the reserved and the allowed ones; never '%'): a string of those alone is its own
 *  encoding, the common case, answered without building a copy. */
const UNCHANGED = Object.fromEntries((Object.keys(ALLOWED) as (keyof typeof ALLOWED)[]).map((k) => {
  const t = new Uint8Array(128);
  for (let c = 0; c < 128; c++) if (isAlnum(c)) t[c] = 1;
  for (const ch of ALLOWED[k] + RESERVED[k]) t[ch.charCodeAt(0)] = 1;
  t[0x25] = 0;
  return [k, t];
})) as Record<keyof typeof ALLOWED, Uint8Array>;

function isAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function hex2(c: number): string {
  return '%' + c.toString(16).toUpperCase().padStart(2, '0');
}

/** ap_proxy_canonenc_ex: re-encodes `x` for the given part. A reverse-proxied URL is not
 *  decoded (its path is r->uri, already decoded: a literal '%' becomes %25) unless forced or
 *  AllowEncodedSlashes NoDecode asks to keep %2F; other requests have their escapes decoded
 *  and re-encoded where needed. Strings hold bytes (latin1). undefined on a bad %-escape that had to be decoded. */
export function canonenc(x: string, type: 'url' | 'path' | 'query' | 'fragment' | 'user' | 'fpath', forcedec: boolean, proxyreq: ProxyReq, encodedSlashes = false): string | undefined {
  const same = UNCHANGED[type];
  let k = 0;
  while (k < x.length) { const c = x.charCodeAt(k); if (c >= 128 || same[c] === 0) break; k++; }
  if (k === x.length) return x;
  const reserved = RESERVED[type];
  const allowed = ALLOWED[type];
  const decode = forcedec || encodedSlashes || (proxyreq !== PROXYREQ_NONE && proxyreq !== PROXYREQ_REVERSE);
  let out = '';
  for (let i = 0; i < x.length; i++) {
    let ch = x.charCodeAt(i);
    if (reserved.includes(x[i]!)) { out += x[i]; continue; }
    if (decode && ch === 0x25) {
      const hex = x.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
      const v = parseInt(hex, 16);
      if (v !== 0 && reserved.includes(String.fromCharCode(v))) { out += '%' + hex; i += 2; continue; }
      // NoDecode in a reverse proxy: the escape stays an escape ('%' is encoded below).
      if (!(encodedSlashes && !forcedec && proxyreq === PROXYREQ_REVERSE)) { ch = v; i += 2; }
    }
    const c = String.fromCharCode(ch);
    out += !isAlnum(ch) && !allowed.includes(c) ? hex2(ch) : c;
  }
  return out;
}

/** ap_proxy_canon_netloc: "//user:pass@host:port/rest". */
export function canonNetloc(url: string, defPort: number): { host: string; port: number; rest: string; user: string | undefined; password: string | undefined } | string {
  if (!url.startsWith('//')) return 'Malformed URL';
  let slash = 2;
  while (slash < url.length) { const c = url.charCodeAt(slash); if (c === 0x2f || c === 0x3f || c === 0x23) break; slash++; }
  const netloc = url.slice(2, slash);
  const rest = url.slice(slash);
  // The same few backends are named on every request: their netloc is parsed once.
  let byPort = netlocs.get(defPort);
  if (byPort === undefined) { byPort = new Map(); netlocs.set(defPort, byPort); }
  let nl = byPort.get(netloc);
  if (nl === undefined) {
    nl = parseNetloc(netloc, defPort);
    if (byPort.size >= 256) byPort.clear();
    byPort.set(netloc, nl);
  }
  if (typeof nl === 'string') return nl;
  return { host: nl.host, port: nl.port, rest, user: nl.user, password: nl.password };
}
type Netloc = { readonly host: string; readonly port: number; readonly user: string | undefined; readonly password: string | undefined };
const netlocs = new Map<number, Map<string, Netloc | string>>();

function parseNetloc(netloc: string, defPort: number): Netloc | string {
  let hostport = netloc;
  let user: string | undefined;
  let password: string | undefined;
  const at = netloc.lastIndexOf('@');
  if (at >= 0) {
    const cred = netloc.slice(0, at);
    hostport = netloc.slice(at + 1);
    const c = cred.indexOf(':');
    user = c < 0 ? cred : cred.slice(0, c);
    password = c < 0 ? undefined : cred.slice(c + 1);
  }
  let host = hostport;
  let port = defPort;
  const m = /^(\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(hostport);
  if (m === null) return 'Invalid host/port';
  host = m[1]!;
  if (m[2] !== undefined && m[2] !== '') {
    if (!/^\d+$/.test(m[2]) || Number(m[2]) > 65535) return 'Invalid host/port';
    port = Number(m[2]);
  }
  if (host === '' || /[^A-Za-z0-9.\-_[\]:%]/.test(host)) return 'Invalid host/port';
  return { host: host.toLowerCase(), port, user, password };
}
