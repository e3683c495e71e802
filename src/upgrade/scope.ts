// Where the directives of a configuration apply: the servers (main and virtual hosts), their
// per-directory sections (<Directory>, <Files>, <Location>, their regex forms, .htaccess files)
// and the order httpd merges them in for a request (directory walk with .htaccess, file walk,
// location walk). Shared by the 2.2 access evaluator and the access rewrite. Pure analysis:
// nothing here touches the request runtime.

import * as path from 'node:path';
import type { ConfigNode } from '../server/config/tree.js';
import { splitWords } from '../server/config/lexer.js';
import type { Doc } from './doc.js';
import { globToRegExp, is, type Upgrade } from './engine.js';

/** Methods a directive applies to (<Limit>/<LimitExcept>); undefined: every method. */
export interface MethodMask {
  readonly except: boolean;
  readonly methods: ReadonlySet<string>;
}

export function methodKey(m: string): string {
  const u = m.toUpperCase();
  return u === 'HEAD' ? 'GET' : u;
}

export function maskHas(mask: MethodMask | undefined, method: string): boolean {
  if (!mask) return true;
  const has = mask.methods.has(methodKey(method));
  return mask.except ? !has : has;
}

export type SectionKind = 'directory' | 'files' | 'location' | 'htaccess' | 'proxy';

export interface Item {
  readonly node: ConfigNode;
  readonly doc: Doc;
  readonly mask: MethodMask | undefined;
  /** The <Limit>/<LimitExcept> section holding the directive, if any. */
  readonly limit: ConfigNode | undefined;
}

export interface AccessSection {
  readonly id: number;
  readonly kind: SectionKind;
  /** The section node; undefined for a .htaccess file (its top level). */
  readonly node: ConfigNode | undefined;
  readonly doc: Doc;
  /** Directory path (absolute, no trailing slash but "/"), URL path or file pattern. */
  readonly arg: string;
  readonly regex: RegExp | undefined;
  /** Glob directories: one pattern per path component. */
  readonly glob: RegExp[] | undefined;
  /** Path components of a non-regex <Directory> (httpd's d_components; "/" has 1). */
  readonly depth: number;
  /** The virtual host the section belongs to (undefined: main server). */
  readonly vhost: ConfigNode | undefined;
  /** <Files> nested in a <Directory> or a .htaccess file. */
  readonly owner: AccessSection | undefined;
  /** Directives applying in this section, in order (nested sections excluded). */
  readonly items: Item[];
  /** Position in reading order. */
  readonly order: number;
  /** A nested <Files> or <Directory> section's children sections. */
  readonly nested: AccessSection[];
  /** Written for both versions (<IfModule [!]mod_authz_core.c>, <IfVersion>): left alone. */
  dual: boolean;
}

export interface ServerModel {
  readonly vhost: ConfigNode | undefined;
  readonly names: string[];
  readonly addrs: string[];
  readonly documentRoot: string;
  readonly aliases: { url: string; target: string; regex: RegExp | undefined }[];
  /** Non-regex directories sorted as httpd does, then regex ones (main's before the vhost's). */
  readonly directories: AccessSection[];
  readonly files: AccessSection[];
  readonly locations: AccessSection[];
  /** Server-level directives (SetEnvIf...). */
  readonly items: Item[];
}

export interface Model {
  readonly servers: ServerModel[];
  readonly main: ServerModel;
  /** .htaccess sections by directory. */
  readonly htaccess: Map<string, AccessSection>;
  readonly sections: AccessSection[];
  readonly accessFileName: string;
  readonly nameVirtualHosts: Set<string>;
}

export interface ModelOptions {
  /** The version <IfVersion> compares with ("2.2.34" for the 2.2 model). */
  readonly version: string;
  /** Modules compiled in (answer <IfModule> without a LoadModule). */
  readonly staticModules: readonly string[];
  readonly defines: readonly string[];
}

export const MODEL_22: ModelOptions = {
  version: '2.2.34',
  staticModules: ['core_module', 'http_core_module', 'so_module', 'mpm_prefork_module', 'log_config_module', 'logio_module'],
  defines: [],
};

const SECTION_KIND: Record<string, { kind: SectionKind; regex: boolean }> = {
  directory: { kind: 'directory', regex: false },
  directorymatch: { kind: 'directory', regex: true },
  files: { kind: 'files', regex: false },
  filesmatch: { kind: 'files', regex: true },
  location: { kind: 'location', regex: false },
  locationmatch: { kind: 'location', regex: true },
  proxy: { kind: 'proxy', regex: false },
  proxymatch: { kind: 'proxy', regex: true },
};

/** "mod_authz_host.c" / "authz_host_module" / "prefork.c" -> the module symbol. */
export function moduleSymbol(name: string): string {
  const n = name.trim();
  if (n.endsWith('_module')) return n;
  const b = n.replace(/\.c$/, '').replace(/^mod_/, '');
  if (['prefork', 'worker', 'event'].includes(b)) return `mpm_${b}_module`;
  if (b === 'core') return 'core_module';
  if (b === 'http_core') return 'http_core_module';
  return `${b}_module`;
}

function compareVersion(a: string, b: string): number {
  const pa = a.split('.').map((x) => parseInt(x, 10) || 0);
  const pb = b.split('.').map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

/** Whether a conditional section's content is read. */
export function conditionHolds(n: ConfigNode, loaded: ReadonlySet<string>, opts: ModelOptions): boolean {
  const name = n.name.toLowerCase();
  const w = splitWords(n.args);
  if (name === 'ifmodule') {
    let a = w[0] ?? '';
    const neg = a.startsWith('!');
    if (neg) a = a.slice(1);
    const has = loaded.has(moduleSymbol(a));
    return neg ? !has : has;
  }
  if (name === 'ifdefine') {
    let a = w[0] ?? '';
    const neg = a.startsWith('!');
    if (neg) a = a.slice(1);
    const has = opts.defines.includes(a);
    return neg ? !has : has;
  }
  if (name === 'ifversion') {
    let op = '=';
    let v = w[0] ?? '';
    if (w.length >= 2) { op = w[0]!; v = w[1]!; }
    const neg = op.startsWith('!');
    if (neg) op = op.slice(1);
    let r: boolean;
    if (op === '~' || (v.startsWith('/') && v.endsWith('/'))) {
      const re = new RegExp(v.startsWith('/') ? v.slice(1, -1) : v);
      r = re.test(opts.version);
    } else {
      const c = compareVersion(opts.version, v);
      const partial = v.split('.').length;
      const cp = compareVersion(opts.version.split('.').slice(0, partial).join('.'), v);
      r = op === '=' || op === '==' ? cp === 0 : op === '>' ? c > 0 && cp !== 0 : op === '>=' ? c >= 0 || cp === 0 : op === '<' ? c < 0 && cp !== 0 : op === '<=' ? c <= 0 || cp === 0 : false;
    }
    return neg ? !r : r;
  }
  return true;
}

const CONDITIONAL = new Set(['ifmodule', 'ifdefine', 'ifversion']);

function normDir(p: string, root: string): string {
  let d = path.isAbsolute(p) ? p : path.resolve(root, p);
  d = d.replace(/\/+/g, '/');
  if (d.length > 1 && d.endsWith('/')) d = d.slice(0, -1);
  return d;
}

/** Builds the model of a configuration (server configuration plus the .htaccess files read). */
export function buildModel(u: Upgrade, base: ModelOptions = MODEL_22): Model {
  const opts: ModelOptions = { ...base, defines: [...base.defines, ...u.opts.defines] };
  const loaded = new Set<string>([...opts.staticModules, ...u.loadedModules()]);
  const sections: AccessSection[] = [];
  let order = 0;
  const mainItems: Item[] = [];
  const vhostItems = new Map<ConfigNode, Item[]>();
  const vhosts: ConfigNode[] = [];
  const nameVirtualHosts = new Set<string>();
  let accessFileName = '.htaccess';

  const makeSection = (kind: SectionKind, node: ConfigNode | undefined, doc: Doc, rawArg: string, regexFlag: boolean,
    vhost: ConfigNode | undefined, owner: AccessSection | undefined): AccessSection => {
    const w = splitWords(rawArg);
    let arg = w[0] ?? '';
    let regex: RegExp | undefined;
    if (arg === '~' && w[1] !== undefined) { regexFlag = true; arg = w[1]; }
    if (regexFlag) {
      try { regex = new RegExp(arg); } catch { regex = /(?!)/; }
    }
    let depth = 0;
    let glob: RegExp[] | undefined;
    if (kind === 'directory' && !regexFlag) {
      arg = normDir(arg, u.serverRoot);
      depth = arg === '/' ? 1 : arg.split('/').length;
      if (/[*?[]/.test(arg)) glob = arg.split('/').slice(1).map(globToRegExp);
    }
    if (kind === 'directory' && node === undefined) depth = arg === '/' ? 1 : arg.split('/').length;
    const s: AccessSection = { id: sections.length, kind, node, doc, arg, regex, glob, depth, vhost, owner, items: [], order: order++, nested: [], dual: false };
    sections.push(s);
    return s;
  };

  // Walks nodes, collecting directives into `sink` (with the <Limit> mask) and opening sections.
  const walk = (doc: Doc, nodes: readonly ConfigNode[], vhost: ConfigNode | undefined, current: AccessSection | undefined,
    sink: Item[], mask: MethodMask | undefined, limit: ConfigNode | undefined): void => {
    for (const n of nodes) {
      if (n.kind === 'blank' || n.kind === 'comment') continue;
      if (n.kind === 'directive') {
        sink.push({ node: n, doc, mask, limit });
        if (!current && is(n, 'NameVirtualHost')) for (const a of splitWords(n.args)) nameVirtualHosts.add(a.toLowerCase());
        if (!current && is(n, 'AccessFileName')) accessFileName = splitWords(n.args)[0] ?? accessFileName;
        const inc = u.includes.get(n);
        if (inc) for (const d of inc) walk(d, d.nodes, vhost, current, sink, mask, limit);
        continue;
      }
      const name = n.name.toLowerCase();
      if (CONDITIONAL.has(name)) {
        if (current && (name === 'ifversion' || /authz_core|access_compat/i.test(n.args))) current.dual = true;
        if (conditionHolds(n, loaded, opts)) walk(doc, n.children ?? [], vhost, current, sink, mask, limit);
        continue;
      }
      if (name === 'limit' || name === 'limitexcept') {
        const methods = new Set(splitWords(n.args).map(methodKey));
        walk(doc, n.children ?? [], vhost, current, sink, { except: name === 'limitexcept', methods }, n);
        continue;
      }
      if (name === 'virtualhost') {
        if (current) continue;
        vhosts.push(n);
        const items: Item[] = [];
        vhostItems.set(n, items);
        walk(doc, n.children ?? [], n, undefined, items, undefined, undefined);
        continue;
      }
      const k = SECTION_KIND[name];
      if (!k) continue; // <If>, <Proxy>, <AuthnProviderAlias>...: not modelled
      const owner = current && (k.kind === 'files' && (current.kind === 'directory' || current.kind === 'htaccess')) ? current : undefined;
      if (current && !owner) continue; // httpd refuses other nestings
      const s = makeSection(k.kind, n, doc, n.args, k.regex, vhost, owner);
      if (owner) owner.nested.push(s);
      walk(doc, n.children ?? [], vhost, s, s.items, undefined, undefined);
    }
  };
  walk(u.main, u.main.nodes, undefined, undefined, mainItems, undefined, undefined);

  const htaccess = new Map<string, AccessSection>();
  for (const d of u.htaccess) {
    const dir = normDir(path.dirname(d.path), '/');
    const s = makeSection('htaccess', undefined, d, dir, false, undefined, undefined);
    walk(d, d.nodes, undefined, s, s.items, undefined, undefined);
    htaccess.set(dir, s);
  }

  const serverOf = (vhost: ConfigNode | undefined, items: readonly Item[], inherit: ServerModel | undefined): ServerModel => {
    const get = (name: string): string | undefined => {
      const it = [...items].reverse().find((i) => is(i.node, name));
      return it ? splitWords(it.node.args)[0] : undefined;
    };
    const names: string[] = [];
    const sn = get('ServerName');
    if (sn) names.push(sn.replace(/^[a-z]+:\/\//i, '').replace(/:\d+$/, '').toLowerCase());
    for (const i of items) if (is(i.node, 'ServerAlias')) names.push(...splitWords(i.node.args).map((x) => x.toLowerCase()));
    const dr = get('DocumentRoot');
    const documentRoot = dr !== undefined ? normDir(dr, u.serverRoot) : inherit?.documentRoot ?? normDir('htdocs', u.serverRoot);
    const aliases: ServerModel['aliases'] = [];
    for (const i of items) {
      if (!is(i.node, 'Alias', 'ScriptAlias', 'AliasMatch', 'ScriptAliasMatch')) continue;
      const w = splitWords(i.node.args);
      if (w.length < 2) continue;
      const rx = /match$/i.test(i.node.name);
      let regex: RegExp | undefined;
      if (rx) { try { regex = new RegExp(w[0]!); } catch { continue; } }
      aliases.push({ url: w[0]!, target: w[1]!, regex });
    }
    if (inherit) aliases.push(...inherit.aliases);
    const own = sections.filter((s) => s.vhost === vhost && !s.owner && s.kind !== 'htaccess');
    const base = inherit ? sections.filter((s) => s.vhost === undefined && !s.owner && s.kind !== 'htaccess') : [];
    const dirsAll = [...base, ...own].filter((s) => s.kind === 'directory');
    const plain = dirsAll.filter((s) => !s.regex).sort((a, b) => a.depth - b.depth || a.order - b.order);
    const rx = dirsAll.filter((s) => s.regex);
    return {
      vhost,
      names,
      addrs: vhost ? splitWords(vhost.args).map((a) => a.toLowerCase()) : [],
      documentRoot,
      aliases,
      directories: [...plain, ...rx],
      files: [...base, ...own].filter((s) => s.kind === 'files'),
      locations: [...base, ...own].filter((s) => s.kind === 'location'),
      items: inherit ? [...inherit.items, ...items] : [...items],
    };
  };
  const main = serverOf(undefined, mainItems, undefined);
  const servers = [main, ...vhosts.map((v) => serverOf(v, vhostItems.get(v) ?? [], main))];
  return { servers, main, htaccess, sections, accessFileName, nameVirtualHosts };
}

// ---- the walk ---------------------------------------------------------------------------------

export interface WalkRequest {
  /** The URL path (no query string). */
  readonly url: string;
  /** A file name to walk instead of translating the URL (no <Location> then). */
  readonly file?: string;
  /** Regex sections assumed to match (for probes), in addition to those that do. */
  readonly force?: ReadonlySet<AccessSection>;
  /** Regex sections assumed not to match. */
  readonly exclude?: ReadonlySet<AccessSection>;
  /** The path is a directory (the walk covers it too). */
  readonly isDir?: boolean;
}

export interface Walk {
  readonly filename: string;
  /** Sections in merge order. */
  readonly chain: AccessSection[];
}

/** URL -> file name (Alias/AliasMatch/ScriptAlias, else DocumentRoot). */
export function translate(server: ServerModel, url: string): string {
  for (const a of server.aliases) {
    if (a.regex) {
      const m = a.regex.exec(url);
      if (m) return a.target.replace(/\$(\d)/g, (_x, d: string) => m[Number(d)] ?? '');
      continue;
    }
    if (aliasMatches(a.url, url)) return a.target + url.slice(a.url.length);
  }
  return server.documentRoot + url;
}

/** mod_alias's prefix test: path segments must match whole (a trailing slash in the alias counts). */
function aliasMatches(alias: string, url: string): boolean {
  if (!url.startsWith(alias)) return false;
  return alias.endsWith('/') || url.length === alias.length || url[alias.length] === '/';
}

function dirMatches(s: AccessSection, prefix: string): boolean {
  if (s.glob) {
    const comps = prefix === '/' ? [''] : prefix.split('/').slice(1);
    if (comps.length !== s.glob.length) return false;
    return s.glob.every((g, i) => g.test(comps[i]!));
  }
  return s.arg === prefix;
}

function fileMatches(s: AccessSection, base: string, force: ReadonlySet<AccessSection> | undefined, exclude: ReadonlySet<AccessSection> | undefined): boolean {
  if (force?.has(s)) return true;
  if (exclude?.has(s)) return false;
  if (s.regex) return s.regex.test(base);
  return globToRegExp(s.arg).test(base);
}

function locationMatches(s: AccessSection, url: string, force: ReadonlySet<AccessSection> | undefined, exclude: ReadonlySet<AccessSection> | undefined): boolean {
  if (force?.has(s)) return true;
  if (exclude?.has(s)) return false;
  if (s.regex) return s.regex.test(url);
  if (/[*?[]/.test(s.arg)) return globToRegExp(s.arg).test(url) || globToRegExp(s.arg + '*').test(url);
  return url.startsWith(s.arg);
}

/** The sections httpd merges for a request, in order. `allowHtaccess` says whether a .htaccess
 *  file in a directory is read given the sections merged so far (2.2: AllowOverride != None). */
export function walkRequest(model: Model, server: ServerModel, req: WalkRequest,
  allowHtaccess: (chain: readonly AccessSection[]) => boolean): Walk {
  const filename = req.file ?? translate(server, req.url);
  const chain: AccessSection[] = [];
  // Directory walk: the directory holding the file (or the directory itself).
  const isDir = req.isDir ?? req.url.endsWith('/');
  const dirPath = normDir(isDir ? filename : path.dirname(filename), '/');
  const comps = dirPath === '/' ? [] : dirPath.split('/').slice(1);
  const prefixes = ['/'];
  for (let i = 0; i < comps.length; i++) prefixes.push('/' + comps.slice(0, i + 1).join('/'));
  const plain = server.directories.filter((s) => !s.regex);
  for (let i = 0; i < prefixes.length; i++) {
    const p = prefixes[i]!;
    for (const s of plain) if (s.depth === i + 1 && dirMatches(s, p)) chain.push(s);
    const h = model.htaccess.get(p);
    if (h && allowHtaccess(chain)) chain.push(h);
  }
  for (const s of server.directories) {
    if (!s.regex) continue;
    if (req.force?.has(s) || (!req.exclude?.has(s) && s.regex.test(dirPath + '/'))) chain.push(s);
  }
  // File walk: server <Files>, then those nested in the directories applied.
  const base = isDir ? path.basename(dirPath) : path.basename(filename);
  for (const s of server.files) if (fileMatches(s, base, req.force, req.exclude)) chain.push(s);
  for (const d of [...chain]) for (const s of d.nested) if (s.kind === 'files' && fileMatches(s, base, req.force, req.exclude)) chain.push(s);
  // Location walk.
  if (req.file === undefined) for (const s of server.locations) if (locationMatches(s, req.url, req.force, req.exclude)) chain.push(s);
  return { filename, chain };
}

/** The server that answers a request (name-based among hosts sharing an address, as 2.2
 *  does for NameVirtualHost addresses; otherwise the first host matching the address). */
export function selectServer(model: Model, host: string | undefined, port: number): ServerModel {
  const h = (host ?? '').replace(/:\d+$/, '').toLowerCase();
  const candidates = model.servers.filter((s) => s.vhost && s.addrs.some((a) => addrMatchesPort(a, port)));
  if (candidates.length === 0) return model.main;
  const nameBased = candidates.filter((s) => s.addrs.some((a) => model.nameVirtualHosts.has(a) || model.nameVirtualHosts.has(a.replace(/:[^:]*$/, ':*'))));
  if (nameBased.length === 0) return candidates[0]!;
  for (const s of nameBased) if (s.names.some((n) => n === h || (n.includes('*') && globToRegExp(n).test(h)))) return s;
  return nameBased[0]!;
}

function addrMatchesPort(a: string, port: number): boolean {
  const m = /:(\d+|\*)$/.exec(a);
  if (!m) return true;
  return m[1] === '*' || Number(m[1]) === port;
}
