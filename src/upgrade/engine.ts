// The upgrade engine: reads a 2.2 configuration (following Include/IncludeOptional and, on
// request, .htaccess files), runs every rule over it and collects findings and edits.
// Rules see the configuration in httpd's reading order, each node with its enclosing sections.

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ConfigNode } from '../server/config/tree.js';
import { splitWords } from '../server/config/lexer.js';
import { Doc } from './doc.js';
import { MARKER, UpgradeParseError, type Finding, type Rule, type Severity, type UpgradeOptions } from './model.js';

export interface Ref {
  readonly doc: Doc;
  readonly node: ConfigNode;
  /** Enclosing sections, outermost first (those around an Include included). */
  readonly sections: readonly ConfigNode[];
}

/** Sections that only make their content conditional (they do not change its context). */
const CONDITIONAL = new Set(['ifmodule', 'ifdefine', 'ifversion']);

export class Upgrade {
  readonly findings: Finding[] = [];
  readonly docs: Doc[] = [];
  readonly htaccess: Doc[] = [];
  /** Include node -> the documents it reads, in order. */
  readonly includes = new Map<ConfigNode, Doc[]>();
  private refCache: Ref[] | undefined;
  private version = 0;

  constructor(readonly main: Doc, readonly serverRoot: string, readonly opts: UpgradeOptions) {
    this.docs.push(main);
  }

  // ---- reading order ------------------------------------------------------------------------

  /** Every node of the server configuration (not .htaccess) in reading order. */
  refs(): readonly Ref[] {
    if (this.refCache) return this.refCache;
    const out: Ref[] = [];
    const seen = new Set<Doc>();
    const walk = (doc: Doc, nodes: readonly ConfigNode[], sections: readonly ConfigNode[]): void => {
      for (const n of nodes) {
        if (n.kind === 'blank' || n.kind === 'comment') continue;
        out.push({ doc, node: n, sections });
        if (n.kind === 'section') walk(doc, n.children ?? [], [...sections, n]);
        const inc = this.includes.get(n);
        if (inc) {
          for (const d of inc) {
            if (seen.has(d)) continue;
            seen.add(d);
            walk(d, d.nodes, sections);
            seen.delete(d);
          }
        }
      }
    };
    walk(this.main, this.main.nodes, []);
    this.refCache = out;
    return out;
  }

  /** The nodes of one .htaccess file. */
  htaccessRefs(doc: Doc): Ref[] {
    const out: Ref[] = [];
    const walk = (nodes: readonly ConfigNode[], sections: readonly ConfigNode[]): void => {
      for (const n of nodes) {
        if (n.kind === 'blank' || n.kind === 'comment') continue;
        out.push({ doc, node: n, sections });
        if (n.kind === 'section') walk(n.children ?? [], [...sections, n]);
      }
    };
    walk(doc.nodes, []);
    return out;
  }

  /** Server configuration and .htaccess nodes together. */
  allRefs(): Ref[] {
    return [...this.refs(), ...this.htaccess.flatMap((d) => this.htaccessRefs(d))];
  }

  /** Directives (not sections) with this name, case-insensitively, everywhere. */
  named(...names: string[]): Ref[] {
    const set = new Set(names.map((n) => n.toLowerCase()));
    return this.allRefs().filter((r) => r.node.kind === 'directive' && set.has(r.node.name.toLowerCase()));
  }

  /** Sections with this name (without '<'). */
  sectionsNamed(...names: string[]): Ref[] {
    const set = new Set(names.map((n) => n.toLowerCase()));
    return this.allRefs().filter((r) => r.node.kind === 'section' && set.has(r.node.name.toLowerCase()));
  }

  /** Bumped by every edit; rules that cache derived data compare it. */
  get editVersion(): number {
    return this.version;
  }

  // ---- modules ------------------------------------------------------------------------------

  /** Module symbols named by LoadModule lines (whatever their conditions). */
  loadedModules(): Set<string> {
    const s = new Set<string>();
    for (const r of this.named('LoadModule')) {
      const w = splitWords(r.node.args);
      if (w[0]) s.add(w[0]);
    }
    return s;
  }

  /** The Include line (in reading order) that reads a document. */
  includeOf(doc: Doc): Ref | undefined {
    for (const r of this.refs()) {
      if (r.node.kind === 'directive' && this.includes.get(r.node)?.includes(doc)) return r;
    }
    return undefined;
  }

  /** The directory the existing LoadModule lines load from ("modules/" when there are none). */
  moduleDir(): string {
    for (const r of this.named('LoadModule')) {
      const file = splitWords(r.node.args)[1];
      if (file && file.includes('/')) return file.slice(0, file.lastIndexOf('/') + 1);
    }
    return 'modules/';
  }

  /** Adds LoadModule lines after the last one (or near the top of the main file). A guarded
   *  line is wrapped in <IfModule !symbol>, for modules some builds compile in. */
  addLoadModules(mods: readonly { symbol: string; file: string; guard?: boolean }[], rule: string, why: string): Ref | undefined {
    if (mods.length === 0) return undefined;
    const dir = this.moduleDir();
    const lines: string[] = [];
    for (const m of mods) {
      const line = `LoadModule ${m.symbol} ${dir}${m.file}`;
      if (m.guard) lines.push(`<IfModule !${m.symbol}>`, `    ${line}`, '</IfModule>');
      else lines.push(line);
    }
    // After the last LoadModule read unconditionally (or wrapped alone in an <IfModule>): never
    // inside an <IfDefine> or another condition, where the new line would load only sometimes.
    const all = this.named('LoadModule').filter((r) => r.doc.kind !== 'htaccess');
    const plain = all.filter((r) => r.sections.length === 0
      || (r.sections.length === 1 && r.sections[0]!.name.toLowerCase() === 'ifmodule' && isOnlyLoadModule(r.sections[0]!)));
    const last = plain.pop() ?? (all.length > 0 && all.every((r) => r.sections.length > 0) ? undefined : all.pop());
    let made: ConfigNode[];
    let doc: Doc;
    const include = last && last.doc !== this.main ? this.includeOf(last.doc) : undefined;
    if (include) {
      // The modules are loaded from included files (Debian's mods-enabled/*.load): the new
      // lines go right after that Include, in the file that has it.
      doc = include.doc;
      made = doc.insertAfter(include.node, lines, rule, this.opts.comments, why);
    } else if (last) {
      // After the LoadModule (or after an <IfModule> holding only LoadModule lines).
      const wrap = last.sections[last.sections.length - 1];
      const anchor = wrap && wrap.name.toLowerCase() === 'ifmodule' && isOnlyLoadModule(wrap) && last.doc.nodes.includes(wrap) ? wrap : last.node;
      doc = last.doc;
      made = doc.insertAfter(anchor, lines, rule, this.opts.comments, why);
    } else {
      doc = this.main;
      const nodes = this.main.nodes;
      const top = nodes.find((n) => n.kind === 'directive' && n.name.toLowerCase() === 'serverroot');
      let i = nodes.findIndex((n) => n.kind === 'directive' || n.kind === 'section');
      // Not between an earlier rewrite's marker comment and its line.
      while (i > 0 && nodes[i - 1]!.kind === 'comment' && nodes[i - 1]!.args.startsWith(MARKER)) i--;
      const first = i >= 0 ? nodes[i] : undefined;
      made = top ? doc.insertAfter(top, lines, rule, this.opts.comments, why)
        : first ? doc.insertBefore(first, lines, rule, this.opts.comments, why)
          : doc.append(undefined, lines, rule, this.opts.comments, why);
    }
    this.touched();
    const node = made.find((n) => n.kind !== 'comment') ?? made[0]!;
    return { doc, node, sections: [] };
  }

  // ---- findings and edits -------------------------------------------------------------------

  report(rule: string, at: Ref | { doc: Doc; line: number }, severity: Severity, message: string, before = '', after = ''): void {
    const line = 'node' in at ? at.node.firstLine : at.line;
    this.findings.push({ file: at.doc.display, line, rule, severity, message, before, after });
  }

  /** Whether a rule already marked this node in an earlier run (its marker comment is just above). */
  acknowledged(ref: Ref, rule: string): boolean {
    const c = ref.doc.container(ref.node);
    const i = c.indexOf(ref.node);
    for (let j = i - 1; j >= 0; j--) {
      const n = c[j]!;
      if (n.kind !== 'comment') return false;
      if (n.args.startsWith(`${MARKER} ${rule}`)) return true;
    }
    return false;
  }

  replace(ref: Ref, lines: readonly string[], rule: string, note?: string): ConfigNode[] {
    const made = ref.doc.replace(ref.node, lines, rule, this.opts.comments, note);
    this.touched();
    return made;
  }

  remove(ref: Ref, rule: string, why?: string): void {
    ref.doc.remove(ref.node, rule, this.opts.comments, why);
    this.touched();
  }

  drop(ref: Ref): void {
    ref.doc.drop(ref.node);
    this.touched();
  }

  insertAfter(ref: Ref, lines: readonly string[], rule: string, note?: string): ConfigNode[] {
    const made = ref.doc.insertAfter(ref.node, lines, rule, this.opts.comments, note);
    this.touched();
    return made;
  }

  insertBefore(ref: Ref, lines: readonly string[], rule: string, note?: string): ConfigNode[] {
    const made = ref.doc.insertBefore(ref.node, lines, rule, this.opts.comments, note);
    this.touched();
    return made;
  }

  /** Appends lines to a section (or to the main file's top level). */
  append(doc: Doc, section: ConfigNode | undefined, lines: readonly string[], rule: string, note?: string): ConfigNode[] {
    const made = doc.append(section, lines, rule, this.opts.comments, note);
    this.touched();
    return made;
  }

  /** Adds server-wide lines to the main file: after the last top-level directive of the
   *  main file that comes before the first <VirtualHost>, so the value reaches every server. */
  addServerWide(lines: readonly string[], rule: string, note?: string): Ref {
    const nodes = this.main.nodes;
    const firstVhost = nodes.findIndex((n) => n.kind === 'section' && n.name.toLowerCase() === 'virtualhost');
    const limit = firstVhost < 0 ? nodes.length : firstVhost;
    let anchor: ConfigNode | undefined;
    for (let i = 0; i < limit; i++) if (nodes[i]!.kind === 'directive' || nodes[i]!.kind === 'section') anchor = nodes[i];
    const made = anchor ? this.main.insertAfter(anchor, lines, rule, this.opts.comments, note)
      : this.main.append(undefined, lines, rule, this.opts.comments, note);
    this.touched();
    return { doc: this.main, node: made.find((n) => n.kind !== 'comment') ?? made[0]!, sections: [] };
  }

  touched(): void {
    this.refCache = undefined;
    this.version++;
  }

  skipped(rule: Rule): boolean {
    return this.opts.skip.some((s) => (s.endsWith('.') ? rule.id.startsWith(s) : rule.id === s));
  }

  run(rules: readonly Rule[]): void {
    for (const r of rules) if (!this.skipped(r)) r.run(this);
  }

  /** Findings by file (reading order) and line; rules keep their order on one line. */
  sortedFindings(): Finding[] {
    const order = new Map<string, number>();
    [...this.docs, ...this.htaccess].forEach((d, i) => order.set(d.display, i));
    return this.findings.map((f, i) => ({ f, i }))
      .sort((a, b) => (order.get(a.f.file) ?? 0) - (order.get(b.f.file) ?? 0) || a.f.line - b.f.line || a.i - b.i)
      .map((x) => x.f);
  }

  changedDocs(): Doc[] {
    return [...this.docs, ...this.htaccess].filter((d) => d.changed && d.text() !== d.original);
  }
}

function isOnlyLoadModule(section: ConfigNode): boolean {
  return (section.children ?? []).every((c) => c.kind !== 'section' && (c.kind !== 'directive' || c.name.toLowerCase() === 'loadmodule'));
}

// ---- helpers rules share -------------------------------------------------------------------

/** The innermost section that gives a node its context (conditional sections skipped). */
export function contextSection(ref: Ref): ConfigNode | undefined {
  for (let i = ref.sections.length - 1; i >= 0; i--) {
    const s = ref.sections[i]!;
    if (!CONDITIONAL.has(s.name.toLowerCase())) return s;
  }
  return undefined;
}

/** The <VirtualHost> around a node, if any. */
export function vhostOf(ref: Ref): ConfigNode | undefined {
  return ref.sections.find((s) => s.name.toLowerCase() === 'virtualhost');
}

/** Whether a node is at server level (main server or a virtual host, not a directory context). */
export function atServerLevel(ref: Ref): boolean {
  if (ref.doc.kind === 'htaccess') return false;
  const s = contextSection(ref);
  return !s || s.name.toLowerCase() === 'virtualhost';
}

/** Whether 2.4 reads a node: false inside <IfModule !mod_authz_core.c> (or !authz_core_module,
 *  !mod_access_compat.c...) and <IfVersion> blocks for versions before 2.4 — the 2.2 branch of
 *  configurations written for both versions. */
export function readBy24(ref: Ref): boolean {
  for (const s of ref.sections) {
    const n = s.name.toLowerCase();
    const a = s.args.replace(/\s+/g, ' ').trim();
    if (n === 'ifmodule' && /^!\s*(mod_authz_core\.c|authz_core_module)$/i.test(a)) return false;
    if (n === 'ifversion') {
      const m = /^(!?)\s*(<|<=|>|>=|=|==)?\s*([\d.]+)$/.exec(a.replace(/^(!?)\s*/, '$1'));
      if (!m) continue;
      const v = m[3]!.split('.').map(Number);
      const cmp = (v[0]! - 2) * 100 + ((v[1] ?? 0) - 4);
      const op = m[2] ?? '=';
      let holds = op === '<' ? cmp > 0 : op === '<=' ? cmp >= 0 : op === '>' ? cmp < 0 : op === '>=' ? cmp <= 0 : cmp === 0;
      if (m[1] === '!') holds = !holds;
      if (!holds) return false;
    }
  }
  return true;
}

/** A directive's arguments as httpd splits them. */
export function words(node: ConfigNode): string[] {
  return splitWords(node.args);
}

/** The text of a node as written, joined onto one line (for findings). */
export function textOf(node: ConfigNode): string {
  return node.raw.map((r) => r.replace(/\r$/, '')).join('\n').trim();
}

/** All of a section's text (opening line, content, closing line), for findings. */
export function blockText(node: ConfigNode): string {
  const out: string[] = [];
  const walk = (n: ConfigNode): void => {
    out.push(...n.raw);
    for (const c of n.children ?? []) walk(c);
    if (n.close) out.push(...n.close.raw);
  };
  walk(node);
  return out.map((r) => r.replace(/\r$/, '')).join('\n');
}

/** Same directive name, case-insensitively. */
export function is(node: ConfigNode, ...names: string[]): boolean {
  const n = node.name.toLowerCase();
  return names.some((x) => x.toLowerCase() === n);
}

// ---- loading --------------------------------------------------------------------------------

const MAX_INCLUDE_DEPTH = 128;

/** Reads a configuration and everything it includes (not the .htaccess files: load.ts adds
 *  those); throws UpgradeParseError. */
export function readConfiguration(file: string, opts: UpgradeOptions): Upgrade {
  const abs = path.resolve(file);
  const main = readDoc(abs, file, 'main', undefined);
  const serverRoot = opts.serverRoot !== undefined ? path.resolve(opts.serverRoot) : findServerRoot(main) ?? path.dirname(abs);
  const u = new Upgrade(main, serverRoot, opts);
  expandIncludes(u, main, 0, new Set([abs]));
  return u;
}

export function readDoc(abs: string, display: string, kind: Doc['kind'], at: { file: string; line: number } | undefined): Doc {
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (e) {
    const msg = `could not read ${display}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
    if (at) throw new UpgradeParseError(at.file, at.line, msg);
    throw new UpgradeParseError(display, 0, msg);
  }
  return Doc.parse(abs, display, kind, text);
}

function findServerRoot(doc: Doc): string | undefined {
  for (const n of doc.nodes) {
    if (n.kind === 'directive' && n.name.toLowerCase() === 'serverroot') {
      const w = splitWords(n.args)[0];
      if (w) return path.resolve(w);
    }
  }
  return undefined;
}

function expandIncludes(u: Upgrade, doc: Doc, depth: number, chain: Set<string>): void {
  const visit = (nodes: readonly ConfigNode[]): void => {
    for (const n of nodes) {
      if (n.kind === 'section') visit(n.children ?? []);
      if (n.kind !== 'directive' || !is(n, 'Include', 'IncludeOptional')) continue;
      const optional = is(n, 'IncludeOptional');
      const spec = splitWords(n.args)[0];
      if (!spec) throw new UpgradeParseError(doc.display, n.line, `${n.name} takes one argument`);
      if (spec.includes('${')) continue; // resolved at start-up from Define/environment: not followed
      const target = path.isAbsolute(spec) ? spec : path.join(u.serverRoot, spec);
      const files = resolveInclude(target, optional, doc.display, n.line);
      if (depth + 1 > MAX_INCLUDE_DEPTH) throw new UpgradeParseError(doc.display, n.line, 'Include nesting too deep');
      const docs: Doc[] = [];
      for (const f of files) {
        if (chain.has(f)) throw new UpgradeParseError(doc.display, n.line, `Include of ${f} makes a loop`);
        let d = u.docs.find((x) => x.path === f);
        if (!d) {
          d = readDoc(f, displayName(f, spec, target), 'include', { file: doc.display, line: n.line });
          u.docs.push(d);
          chain.add(f);
          expandIncludes(u, d, depth + 1, chain);
          chain.delete(f);
        }
        docs.push(d);
      }
      u.includes.set(n, docs);
    }
  };
  visit(doc.nodes);
}

function displayName(file: string, spec: string, target: string): string {
  const rel = path.relative(process.cwd(), file);
  return !rel.startsWith('..') && !path.isAbsolute(spec) && target !== file ? rel : rel.startsWith('..') ? file : rel;
}

const WILD = /[*?[]/;

/** Include's file list: a file, a directory (every file in it, recursively, sorted) or a
 *  wildcard pattern (matches sorted; dot files only when the pattern starts with '.'). */
export function resolveInclude(target: string, optional: boolean, file: string, line: number): string[] {
  if (!WILD.test(target)) {
    let st: fs.Stats;
    try {
      st = fs.statSync(target);
    } catch {
      if (optional) return [];
      throw new UpgradeParseError(file, line, `could not open configuration file ${target}: No such file or directory`);
    }
    if (st.isDirectory()) return listDir(target);
    return [target];
  }
  const parts = target.split('/');
  let bases = [parts[0] === '' ? '/' : parts[0]!];
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i]!;
    if (p === '') continue;
    const next: string[] = [];
    for (const b of bases) {
      if (!WILD.test(p)) {
        next.push(path.join(b, p));
        continue;
      }
      let names: string[];
      try {
        names = fs.readdirSync(b).sort();
      } catch {
        continue;
      }
      const re = globToRegExp(p);
      for (const name of names) if (re.test(name) && (p.startsWith('.') || !name.startsWith('.'))) next.push(path.join(b, name));
    }
    bases = next;
  }
  const out: string[] = [];
  for (const b of bases) {
    try {
      const st = fs.statSync(b);
      if (st.isDirectory()) out.push(...listDir(b));
      else out.push(b);
    } catch { /* vanished */ }
  }
  return out;
}

function listDir(dir: string): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = fs.statSync(p);
    if (st.isDirectory()) out.push(...listDir(p));
    else out.push(p);
  }
  return out;
}

/** An fnmatch pattern (*, ?, [...]) as a regular expression over one path component. */
export function globToRegExp(p: string): RegExp {
  let re = '^';
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = p.indexOf(']', i + 2);
      if (end < 0) { re += '\\['; continue; }
      let body = p.slice(i + 1, end);
      if (body.startsWith('!') || body.startsWith('^')) body = '^' + body.slice(1);
      re += '[' + body.replace(/\\/g, '\\\\') + ']';
      i = end;
    } else if (c === '\\' && i + 1 < p.length) re += '\\' + p[++i];
    else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(re + '$');
}
