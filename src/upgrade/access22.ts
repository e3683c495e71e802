// httpd 2.2's access control, modelled: how Order/Allow/Deny (mod_authz_host, no merger: a
// section that uses any of them replaces the whole host configuration), Satisfy (core,
// merged method by method, so inherited on its own), Require (core, replaced as a list),
// AuthType/AuthName (core, each inherited) and the authentication modules combine along the
// sections a request passes, and what ap_process_request_internal decided:
//   Satisfy All: host rules first (403), then, if a Require applies to the method, authentication
//                (401 without valid credentials, 500 without AuthType) and authorization (401);
//   Satisfy Any: the host rules grant on their own; otherwise a Require line must, else 403.
// Used twice: symbolically (the decision as a formula, which the access rewrite turns into
// Require lines) and concretely (an evaluator for test requests: the expected 2.2 statuses).

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { splitWords } from '../server/config/lexer.js';
import { is } from './engine.js';
import { and, atom, not, or, TRUE, type Atom, type Formula } from './require.js';
import {
  maskHas, selectServer, walkRequest,
  type AccessSection, type Item, type MethodMask, type Model, type ServerModel,
} from './scope.js';

export type Order = 'deny,allow' | 'allow,deny' | 'mutual-failure';

export interface HostEntry {
  readonly kind: 'all' | 'ip' | 'host' | 'env' | 'nenv';
  readonly v: string;
  readonly mask: MethodMask | undefined;
  readonly item: Item;
}

export interface HostConf {
  readonly orders: readonly { readonly mask: MethodMask | undefined; readonly value: Order }[];
  readonly allows: readonly HostEntry[];
  readonly denys: readonly HostEntry[];
  readonly from: AccessSection;
}

export interface RequireLine {
  readonly words: readonly string[];
  readonly mask: MethodMask | undefined;
  readonly item: Item;
}

/** The merged 2.2 state after some sections. Immutable: apply() returns a new one. */
export interface State22 {
  readonly host: HostConf | undefined;
  readonly satisfy: readonly { readonly mask: MethodMask | undefined; readonly value: 'all' | 'any'; readonly item: Item }[];
  readonly requires: readonly RequireLine[] | undefined;
  readonly requiresFrom: AccessSection | undefined;
  readonly authType: string | undefined;
  readonly authName: string | undefined;
  readonly userFile: string | undefined;
  readonly groupFile: string | undefined;
  readonly dbmGroupFile: string | undefined;
  /** Authz*Authoritative Off seen in the merged module configurations. */
  readonly notAuthoritative: readonly string[];
  /** AllowOverride as merged from <Directory> sections (2.2 default All). */
  readonly overrides: ReadonlySet<string>;
  /** SetEnvIf lines from directory contexts (header parser phase), in order. */
  readonly setenv: readonly Item[];
  /** A .htaccess directive its AllowOverride does not allow: httpd answers 500. */
  readonly error: string | undefined;
}

export const INITIAL_22: State22 = {
  host: undefined, satisfy: [], requires: undefined, requiresFrom: undefined, authType: undefined, authName: undefined,
  userFile: undefined, groupFile: undefined, dbmGroupFile: undefined, notAuthoritative: [],
  overrides: new Set(['authconfig', 'fileinfo', 'indexes', 'limit', 'options']), setenv: [], error: undefined,
};

const COMPAT = new Set(['order', 'allow', 'deny']);
const AUTHORITATIVE = new Set(['authzuserauthoritative', 'authzgroupfileauthoritative', 'authzdbmauthoritative', 'authzownerauthoritative',
  'authzldapauthoritative', 'authzdbdauthoritative']);

/** The override class a directive needs in .htaccess (only those the access model reads). */
function overrideClass(name: string): string | undefined {
  const n = name.toLowerCase();
  if (COMPAT.has(n)) return 'limit';
  if (n === 'satisfy' || n === 'require' || n.startsWith('auth')) return 'authconfig';
  if (n.startsWith('setenvif') || n.startsWith('browsermatch')) return 'fileinfo';
  return undefined;
}

/** Classifies an Allow/Deny argument as 2.2 did (apr_ipsubnet_create, else a host name). */
export function hostEntryKind(w: string): 'all' | 'ip' | 'host' | 'env' | 'nenv' {
  const l = w.toLowerCase();
  if (l.startsWith('env=!')) return 'nenv';
  if (l.startsWith('env=')) return 'env';
  if (l === 'all') return 'all';
  if (/^\d+(\.\d+){0,3}(\/\d+(\.\d+){0,3})?$/.test(w) || /^[0-9a-f:.]*:[0-9a-f:.]*(\/\d+)?$/i.test(w)) return 'ip';
  return 'host';
}

function entryValue(kind: HostEntry['kind'], w: string): string {
  if (kind === 'env') return w.slice(4);
  if (kind === 'nenv') return w.slice(5);
  return w;
}

/** Merges one section into the state, as 2.2's per-directory merge does. */
export function apply22(s: State22, sec: AccessSection): State22 {
  const items = sec.items;
  let host = s.host;
  let satisfy = s.satisfy;
  let requires = s.requires;
  let requiresFrom = s.requiresFrom;
  let { authType, authName, userFile, groupFile, dbmGroupFile, error } = s;
  let notAuthoritative = s.notAuthoritative;
  let overrides = s.overrides;
  let setenv = s.setenv;
  const isHt = sec.kind === 'htaccess' || sec.owner?.kind === 'htaccess';
  if (items.some((i) => COMPAT.has(i.node.name.toLowerCase()))) {
    const orders: { mask: MethodMask | undefined; value: Order }[] = [];
    const allows: HostEntry[] = [];
    const denys: HostEntry[] = [];
    for (const i of items) {
      const n = i.node.name.toLowerCase();
      if (n === 'order') {
        const v = i.node.args.trim().toLowerCase();
        if (v === 'allow,deny' || v === 'deny,allow' || v === 'mutual-failure') orders.push({ mask: i.mask, value: v });
      } else if (n === 'allow' || n === 'deny') {
        const w = splitWords(i.node.args);
        if ((w[0] ?? '').toLowerCase() !== 'from') continue;
        for (const x of w.slice(1)) {
          const kind = hostEntryKind(x);
          (n === 'allow' ? allows : denys).push({ kind, v: entryValue(kind, x), mask: i.mask, item: i });
        }
      }
    }
    host = { orders, allows, denys, from: sec };
  }
  let newRequires: RequireLine[] | undefined;
  const authzModules = new Map<string, boolean>();
  for (const i of items) {
    const n = i.node.name.toLowerCase();
    if (isHt) {
      const cls = overrideClass(n);
      if (cls && !overrides.has(cls) && error === undefined) error = `${i.node.name} not allowed here (${i.doc.display}:${i.node.line})`;
    }
    if (n === 'satisfy') {
      const v = i.node.args.trim().toLowerCase();
      if (v === 'all' || v === 'any') satisfy = [...satisfy, { mask: i.mask, value: v, item: i }];
    } else if (n === 'require') {
      (newRequires ??= []).push({ words: splitWords(i.node.args), mask: i.mask, item: i });
    } else if (n === 'authtype') authType = splitWords(i.node.args)[0];
    else if (n === 'authname') authName = splitWords(i.node.args)[0];
    else if (n === 'authuserfile') userFile = splitWords(i.node.args)[0];
    else if (n === 'authgroupfile') { groupFile = splitWords(i.node.args)[0]; authzModules.set('authzgroupfileauthoritative', true); }
    else if (n === 'authdbmgroupfile') { dbmGroupFile = splitWords(i.node.args)[0]; authzModules.set('authzdbmauthoritative', true); }
    else if (AUTHORITATIVE.has(n)) authzModules.set(n, /^off$/i.test(i.node.args.trim()) ? false : true);
    else if (n === 'allowoverride' && !isHt) overrides = parseOverrides(i.node.args);
    else if (n.startsWith('setenvif') || n.startsWith('browsermatch')) setenv = [...setenv, i];
  }
  if (newRequires) { requires = newRequires; requiresFrom = sec; }
  // A module's whole configuration is replaced by a section that sets any of it.
  if (authzModules.size > 0) {
    const keep = notAuthoritative.filter((m) => !authzModules.has(m));
    for (const [m, on] of authzModules) if (!on) keep.push(m);
    notAuthoritative = keep;
  }
  return { host, satisfy, requires, requiresFrom, authType, authName, userFile, groupFile, dbmGroupFile, notAuthoritative, overrides, setenv, error };
}

function parseOverrides(args: string): Set<string> {
  const out = new Set<string>();
  for (const w of splitWords(args)) {
    const l = w.toLowerCase().replace(/=.*$/, '');
    if (l === 'all') for (const c of ['authconfig', 'fileinfo', 'indexes', 'limit', 'options']) out.add(c);
    else if (l !== 'none') out.add(l);
  }
  return out;
}

/** Whether a .htaccess file is read after these sections (AllowOverride other than None). */
export function htaccessRead22(chain: readonly AccessSection[]): boolean {
  let s = INITIAL_22.overrides;
  for (const sec of chain) {
    if (sec.kind !== 'directory') continue;
    for (const i of sec.items) if (is(i.node, 'AllowOverride')) s = parseOverrides(i.node.args);
  }
  return s.size > 0;
}

export function merge22(chain: readonly AccessSection[]): State22 {
  let s = INITIAL_22;
  for (const sec of chain) s = apply22(s, sec);
  return s;
}

// ---- the decision as a formula ----------------------------------------------------------------

function lastFor<T extends { readonly mask: MethodMask | undefined }>(list: readonly T[], method: string): T | undefined {
  for (let i = list.length - 1; i >= 0; i--) if (maskHas(list[i]!.mask, method)) return list[i];
  return undefined;
}

export function orderFor(h: HostConf | undefined, method: string): Order {
  return (h && lastFor(h.orders, method)?.value) ?? 'deny,allow';
}

function entryFormula(e: HostEntry): Formula {
  switch (e.kind) {
    case 'all': return TRUE;
    case 'ip': return atom({ k: 'ip', v: e.v });
    case 'host': return atom({ k: 'host', v: e.v });
    case 'env': return atom({ k: 'env', v: e.v });
    case 'nenv': return not(atom({ k: 'env', v: e.v }));
  }
}

/** mod_authz_host's answer for a method, as a formula over the client. */
export function hostFormula(h: HostConf | undefined, method: string): Formula {
  if (!h) return TRUE;
  const A = or(h.allows.filter((e) => maskHas(e.mask, method)).map(entryFormula));
  const D = or(h.denys.filter((e) => maskHas(e.mask, method)).map(entryFormula));
  return orderFor(h, method) === 'deny,allow' ? or([not(D), A]) : and([A, not(D)]);
}

/** A 2.2 Require line as an atom; `raw` is its argument text as written (kept for providers
 *  passed through unchanged, so their quoting survives). */
export function requireAtom(words: readonly string[], s: State22, raw = words.join(' ')): Atom {
  const [t, ...rest] = words;
  const l = (t ?? '').toLowerCase();
  if (l === 'valid-user') return { k: 'valid-user' };
  if (l === 'user') return { k: 'user', v: rest };
  if (l === 'group') return { k: s.dbmGroupFile !== undefined && s.groupFile === undefined ? 'dbm-group' : 'group', v: rest };
  if (l === 'file-owner' || l === 'file-group') return { k: l };
  return { k: 'other', v: raw.trim() };
}

export function requiresFor(s: State22, method: string): RequireLine[] {
  return (s.requires ?? []).filter((r) => maskHas(r.mask, method));
}

export function satisfyFor(s: State22, method: string): 'all' | 'any' {
  return lastFor(s.satisfy, method)?.value ?? 'all';
}

/** The 2.2 decision for one method as a formula (user atoms need a login). */
export function decisionFormula(s: State22, method: string): Formula {
  const H = hostFormula(s.host, method);
  const reqs = requiresFor(s, method);
  if (reqs.length === 0) return H;
  const U = or(reqs.map((r) => atom(requireAtom(r.words, s, r.item.node.args))));
  return satisfyFor(s, method) === 'any' ? or([H, U]) : and([H, U]);
}

/** The methods named by <Limit>/<LimitExcept> in what the state holds; "*" stands for all others. */
export function methodClasses(s: State22): string[] {
  const names = new Set<string>();
  const add = (m: MethodMask | undefined): void => { if (m) for (const x of m.methods) names.add(x); };
  if (s.host) { for (const o of s.host.orders) add(o.mask); for (const e of [...s.host.allows, ...s.host.denys]) add(e.mask); }
  for (const x of s.satisfy) add(x.mask);
  for (const r of s.requires ?? []) add(r.mask);
  return [...[...names].sort(), '*'];
}

// ---- the concrete evaluator -------------------------------------------------------------------

export interface Request22 {
  readonly method?: string;
  /** URL path. */
  readonly path: string;
  readonly client: string;
  readonly host?: string;
  readonly port?: number;
  readonly user?: string;
  readonly password?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Reverse DNS answers (double-reverse checked): client address -> name. */
  readonly hostnames?: Readonly<Record<string, string>>;
}

export interface Decision22 {
  readonly status: 200 | 401 | 403 | 500;
  readonly why: string;
}

/** What httpd 2.2 answered for a request, as far as access control goes (200 = allowed). */
export function evaluate22(model: Model, req: Request22, index = ['index.html']): Decision22 {
  const server = selectServer(model, req.host, req.port ?? 80);
  const first = evaluateOne(model, server, req, req.path);
  if (first.status !== 200 || !req.path.endsWith('/')) return first;
  // mod_dir: the index file is a subrequest with its own access check.
  for (const name of index) {
    const file = path.join(walkRequest(model, server, { url: req.path }, htaccessRead22).filename, name);
    if (fs.existsSync(file)) return evaluateOne(model, server, req, req.path + name);
  }
  return first;
}

function evaluateOne(model: Model, server: ServerModel, req: Request22, url: string): Decision22 {
  const w = walkRequest(model, server, { url }, htaccessRead22);
  const s = merge22(w.chain);
  if (s.error) return { status: 500, why: s.error };
  const method = req.method ?? 'GET';
  const env = requestEnv(server, s, req, url);
  const hostname = req.hostnames?.[req.client] ?? (req.client === '127.0.0.1' ? 'localhost' : undefined);
  const hostHas = (a: Atom): boolean => {
    if (a.k === 'ip') return ipMatches(a.v, req.client);
    if (a.k === 'host') return hostname !== undefined && inDomain(a.v, hostname);
    if (a.k === 'env') return env.has(a.v);
    return false;
  };
  const hostOk = evalHost(hostFormula(s.host, method), hostHas);
  const reqs = requiresFor(s, method);
  const satisfy = satisfyFor(s, method);
  if (satisfy === 'all') {
    if (!hostOk) return { status: 403, why: 'client denied by server configuration (host rules)' };
    if (reqs.length === 0) return { status: 200, why: 'host rules allow, no Require' };
    return authenticate(s, reqs, req, w.filename);
  }
  if (hostOk) return { status: 200, why: 'host rules allow (Satisfy Any)' };
  if (reqs.length === 0) return { status: 403, why: 'host rules deny and no Require (Satisfy Any)' };
  return authenticate(s, reqs, req, w.filename);
}

function evalHost(f: Formula, has: (a: Atom) => boolean): boolean {
  switch (f.t) {
    case 'true': return true;
    case 'false': return false;
    case 'atom': return has(f.a);
    case 'not': return !evalHost(f.f, has);
    case 'and': return f.fs.every((c) => evalHost(c, has));
    case 'or': return f.fs.some((c) => evalHost(c, has));
  }
}

function authenticate(s: State22, reqs: readonly RequireLine[], req: Request22, _filename: string): Decision22 {
  if (!s.authType) return { status: 500, why: 'Require without AuthType ("AuthType not set!")' };
  if (s.authType.toLowerCase() !== 'basic') return { status: 500, why: `AuthType ${s.authType} is not modelled` };
  if (req.user === undefined) return { status: 401, why: 'no credentials' };
  if (!s.userFile) return { status: 500, why: 'no AuthUserFile' };
  const users = readPasswords(s.userFile);
  if (users === undefined) return { status: 500, why: `cannot read ${s.userFile}` };
  const hash = users.get(req.user);
  if (hash === undefined || !verifyPassword(hash, req.password ?? '')) return { status: 401, why: 'bad user or password' };
  const groups = s.groupFile ? readGroups(s.groupFile) : new Map<string, Set<string>>();
  for (const r of reqs) {
    const a = requireAtom(r.words, s);
    if (a.k === 'valid-user') return { status: 200, why: 'valid-user' };
    if (a.k === 'user' && a.v.includes(req.user)) return { status: 200, why: 'user listed' };
    if (a.k === 'group' && a.v.some((g) => groups.get(g)?.has(req.user!))) return { status: 200, why: 'group member' };
  }
  return { status: 401, why: 'user does not meet the Require lines' };
}

// ---- environment (mod_setenvif) ---------------------------------------------------------------

function requestEnv(server: ServerModel, s: State22, req: Request22, url: string): Set<string> {
  const env = new Map<string, string>();
  const headers = new Map<string, string>();
  for (const [k, v] of Object.entries(req.headers ?? {})) headers.set(k.toLowerCase(), v);
  if (req.host) headers.set('host', req.host);
  const run = (items: readonly Item[]): void => {
    for (const i of items) {
      const n = i.node.name.toLowerCase();
      const w = splitWords(i.node.args);
      let attr: string;
      let re: string;
      let sets: string[];
      let nocase = n.endsWith('nocase');
      if (n.startsWith('browsermatch')) { attr = 'User-Agent'; re = w[0] ?? ''; sets = w.slice(1); } else if (n.startsWith('setenvif')) {
        if (n === 'setenvifexpr') continue;
        attr = w[0] ?? ''; re = w[1] ?? ''; sets = w.slice(2);
      } else continue;
      const a = attr.toLowerCase();
      const value = a === 'remote_addr' ? req.client : a === 'request_uri' ? url : a === 'request_method' ? (req.method ?? 'GET')
        : a === 'remote_host' ? (req.hostnames?.[req.client] ?? req.client) : a === 'request_protocol' ? 'HTTP/1.1'
          : headers.get(a) ?? env.get(attr);
      if (value === undefined) continue;
      let ok: boolean;
      try { ok = new RegExp(re, nocase ? 'i' : '').test(value); } catch { ok = false; }
      nocase = false;
      if (!ok) continue;
      for (const x of sets) {
        if (x.startsWith('!')) env.delete(x.slice(1));
        else { const eq = x.indexOf('='); if (eq < 0) env.set(x, '1'); else env.set(x.slice(0, eq), x.slice(eq + 1)); }
      }
    }
  };
  run(server.items.filter((i) => /^(setenvif|browsermatch)/i.test(i.node.name)));
  run(s.setenv);
  return new Set(env.keys());
}

// ---- addresses and names ----------------------------------------------------------------------

/** 2.2's IP test: full address, partial ("10.1"), a/nn or a/netmask (IPv4). */
export function ipMatches(spec: string, client: string): boolean {
  if (spec.includes(':')) return spec.toLowerCase() === client.toLowerCase();
  const c = client.split('.').map(Number);
  if (c.length !== 4) return false;
  const [net, mask] = spec.split('/') as [string, string | undefined];
  const parts = net.replace(/\.$/, '').split('.').map(Number);
  let bits: number;
  if (mask === undefined) bits = parts.length * 8;
  else if (/^\d+$/.test(mask)) bits = Number(mask);
  else bits = mask.split('.').map(Number).reduce((acc, o) => acc + ((o >>> 0).toString(2).match(/1/g)?.length ?? 0), 0);
  while (parts.length < 4) parts.push(0);
  const toInt = (p: number[]): number => ((p[0]! << 24) | (p[1]! << 16) | (p[2]! << 8) | p[3]!) >>> 0;
  const m = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (toInt(parts) & m) === (toInt(c) & m);
}

/** 2.2's in_domain: the name equals the domain or ends with "." + domain. */
export function inDomain(domain: string, name: string): boolean {
  const d = domain.toLowerCase().replace(/^\./, '');
  const n = name.toLowerCase();
  return n === d || n.endsWith('.' + d);
}

// ---- password and group files -----------------------------------------------------------------

function readPasswords(file: string): Map<string, string> | undefined {
  let text: string;
  try { text = fs.readFileSync(file, 'utf8'); } catch { return undefined; }
  const m = new Map<string, string>();
  for (const line of text.split('\n')) {
    const l = line.replace(/\r$/, '');
    if (l === '' || l.startsWith('#')) continue;
    const i = l.indexOf(':');
    if (i > 0 && !m.has(l.slice(0, i))) m.set(l.slice(0, i), l.slice(i + 1));
  }
  return m;
}

function readGroups(file: string): Map<string, Set<string>> {
  const m = new Map<string, Set<string>>();
  let text = '';
  try { text = fs.readFileSync(file, 'utf8'); } catch { return m; }
  for (const line of text.split('\n')) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    m.set(line.slice(0, i).trim(), new Set(line.slice(i + 1).trim().split(/\s+/).filter(Boolean)));
  }
  return m;
}

/** The hashes 2.2's htpasswd wrote on Unix that the evaluator checks: {SHA} and $apr1$. */
export function verifyPassword(hash: string, pw: string): boolean {
  if (hash.startsWith('{SHA}')) return crypto.createHash('sha1').update(pw).digest('base64') === hash.slice(5);
  if (hash.startsWith('$apr1$')) {
    const salt = hash.slice(6).split('$')[0]!;
    return apr1(pw, salt) === hash;
  }
  return false;
}

const ITOA64 = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** APR's MD5-based crypt ($apr1$). */
export function apr1(pw: string, salt: string): string {
  const p = Buffer.from(pw, 'utf8');
  const s = Buffer.from(salt.slice(0, 8), 'utf8');
  const md5 = (...parts: Buffer[]): Buffer => { const h = crypto.createHash('md5'); for (const x of parts) h.update(x); return h.digest(); };
  const alt = md5(p, s, p);
  const ctx: Buffer[] = [p, Buffer.from('$apr1$'), s];
  for (let i = p.length; i > 0; i -= 16) ctx.push(alt.subarray(0, Math.min(16, i)));
  for (let i = p.length; i > 0; i >>= 1) ctx.push(i & 1 ? Buffer.from([0]) : p.subarray(0, 1));
  let fin = md5(...ctx);
  for (let i = 0; i < 1000; i++) {
    const parts: Buffer[] = [];
    parts.push(i & 1 ? p : fin);
    if (i % 3) parts.push(s);
    if (i % 7) parts.push(p);
    parts.push(i & 1 ? fin : p);
    fin = md5(...parts);
  }
  const to64 = (v: number, n: number): string => { let r = ''; while (n-- > 0) { r += ITOA64[v & 0x3f]; v >>= 6; } return r; };
  const f = fin;
  let out = '';
  out += to64((f[0]! << 16) | (f[6]! << 8) | f[12]!, 4);
  out += to64((f[1]! << 16) | (f[7]! << 8) | f[13]!, 4);
  out += to64((f[2]! << 16) | (f[8]! << 8) | f[14]!, 4);
  out += to64((f[3]! << 16) | (f[9]! << 8) | f[15]!, 4);
  out += to64((f[4]! << 16) | (f[10]! << 8) | f[5]!, 4);
  out += to64(f[11]!, 2);
  return `$apr1$${salt.slice(0, 8)}$${out}`;
}

