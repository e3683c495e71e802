// mod_include: "#if expr" uses 2.4's expression parser; pages written for 2.2's syntax need
// SSILegacyExprParser (found by reading the SSI pages under directories with Options Includes).
// Error documents served through mod_include are affected the same way.

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ConfigNode } from '../../server/config/tree.js';
import type { Doc } from '../doc.js';
import type { Rule } from '../model.js';
import { is, textOf, vhostOf, words, type Ref, type Upgrade } from '../engine.js';

export interface IncludesDir {
  /** The <Directory> section, or undefined for a .htaccess file. */
  section: ConfigNode | undefined;
  doc: Doc;
  dir: string;
  extensions: string[];
  line: number;
}

/** Extensions mod_include parses (AddOutputFilter INCLUDES, AddHandler server-parsed). */
function ssiExtensions(u: Upgrade): string[] {
  const ext = new Set<string>();
  for (const r of u.named('AddOutputFilter', 'AddHandler', 'AddType')) {
    const w = words(r.node);
    const what = (w[0] ?? '').toLowerCase();
    if ((is(r.node, 'AddOutputFilter') && what.split(';').includes('includes'))
      || (is(r.node, 'AddHandler') && what === 'server-parsed')
      || (is(r.node, 'AddType') && what === 'text/x-server-parsed-html')) {
      for (const e of w.slice(1)) ext.add(e.startsWith('.') ? e.toLowerCase() : `.${e.toLowerCase()}`);
    }
  }
  if (ext.size === 0) ext.add('.shtml');
  return [...ext];
}

function enablesIncludes(nodes: readonly ConfigNode[]): ConfigNode | undefined {
  return nodes.find((c) => c.kind === 'directive' && is(c, 'Options') && words(c).some((w) => /^\+?includes(noexec)?$/i.test(w)));
}

/** Directories where SSI is on (sections and .htaccess files). */
export function includesDirectories(u: Upgrade): IncludesDir[] {
  const extensions = ssiExtensions(u);
  const out: IncludesDir[] = [];
  for (const r of u.sectionsNamed('Directory')) {
    const o = enablesIncludes(r.node.children ?? []);
    const p = words(r.node)[0];
    if (!o || !p || /[*?[]/.test(p) || p === '~') continue;
    out.push({ section: r.node, doc: r.doc, dir: path.resolve(u.serverRoot, p), extensions, line: r.node.line });
  }
  for (const d of u.htaccess) {
    const o = enablesIncludes(d.nodes);
    if (o) out.push({ section: undefined, doc: d, dir: path.dirname(d.path), extensions, line: o.line });
  }
  return out;
}

/** Files under a directory with one of the extensions (bounded walk). */
export function scanFiles(dir: string, extensions: readonly string[], limit = 5000): string[] {
  const out: string[] = [];
  const walk = (d: string, depth: number): void => {
    if (depth > 16 || out.length >= limit) return;
    let ents: fs.Dirent[];
    try { ents = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
    for (const e of ents) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (e.isFile() && extensions.some((x) => e.name.toLowerCase().endsWith(x))) out.push(p);
      if (out.length >= limit) return;
    }
  };
  walk(dir, 0);
  return out.sort();
}

const IF_EXPR = /<!--#(?:if|elif)\s+expr\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')/gi;

/** Whether an #if expr condition is written in 2.2's syntax ($var, "a" = "b", /regex/). */
export function isLegacyExpr(e: string): boolean {
  if (/%\{|\bv\(|-[a-zA-Z]\s|=~|==/.test(e) && !/(^|[^\\])\$[A-Za-z{]/.test(e)) return false;
  return /(^|[^\\])\$[A-Za-z{]/.test(e) || /=\s*\/.*\/\s*$/.test(e) || /^\s*"[^"]*"\s*!?=\s*"/.test(e) || /(^|\s)!?=(\s|$)/.test(e);
}

function legacyPages(files: readonly string[]): { file: string; line: number; expr: string }[] {
  const out: { file: string; line: number; expr: string }[] = [];
  for (const f of files) {
    let text: string;
    try { text = fs.readFileSync(f, 'utf8'); } catch { continue; }
    IF_EXPR.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = IF_EXPR.exec(text))) {
      const e = m[1] ?? m[2] ?? '';
      if (isLegacyExpr(e)) {
        out.push({ file: f, line: text.slice(0, m.index).split('\n').length, expr: e });
        break;
      }
    }
  }
  return out;
}

function ssiLegacyExpr(u: Upgrade): void {
  const rule = 'include.ssi-legacy-expr';
  if (u.named('SSILegacyExprParser').length > 0) return;
  for (const d of includesDirectories(u)) {
    const pages = legacyPages(scanFiles(d.dir, d.extensions));
    if (pages.length === 0) continue;
    const first = pages[0]!;
    const where = `${path.relative(d.dir, first.file) || first.file}:${first.line}`;
    const msg = `mod_include parses "#if expr" with 2.4's expression parser; ${pages.length} page(s) under ${d.dir} use 2.2's syntax (${where}: expr="${first.expr}"). `
      + 'SSILegacyExprParser on restores 2.2\'s parser for this directory.';
    const made = u.append(d.doc, d.section, ['SSILegacyExprParser on'], rule);
    void made;
    u.report(rule, { doc: d.doc, line: d.line }, 'change', msg, d.section ? `<${d.section.name} ${d.section.args}>` : '', 'SSILegacyExprParser on');
  }
}

/** The DocumentRoot that serves a node's server (its virtual host's, else the main server's;
 *  2.2's default when none is set). */
function documentRootFor(u: Upgrade, ref: Ref): string {
  const vh = vhostOf(ref);
  const roots = u.named('DocumentRoot').filter((r) => r.doc.kind !== 'htaccess');
  const own = vh ? roots.filter((r) => vhostOf(r) === vh).pop() : undefined;
  const main = roots.filter((r) => vhostOf(r) === undefined).pop();
  const w = words((own ?? main)?.node ?? { args: '' } as ConfigNode)[0];
  return path.resolve(u.serverRoot, w ?? 'htdocs');
}

function errorDocuments(u: Upgrade): void {
  const rule = 'include.error-documents';
  const dirs = includesDirectories(u);
  if (dirs.length === 0) return;
  const aliases = u.named('Alias').map((r) => words(r.node)).filter((w) => w.length >= 2);
  for (const r of u.named('ErrorDocument')) {
    const target = (words(r.node)[1] ?? '').replace(/[?#].*$/, '');
    if (!target.startsWith('/')) continue;
    // The URL maps through an Alias, else under the DocumentRoot of the server it belongs to.
    const alias = aliases.find((w) => target === w[0] || target.startsWith(w[0]!.endsWith('/') ? w[0]! : `${w[0]}/`));
    const file = alias ? path.join(alias[1]!, target.slice(alias[0]!.length)) : path.join(documentRootFor(u, r), target);
    const inSsi = dirs.some((d) => file.startsWith(d.dir + path.sep) || file === d.dir);
    if (!inSsi) continue;
    u.report(rule, r, 'note',
      `This error document (${file}) is served from a directory where mod_include runs: 2.4 evaluates its "#if expr" elements with the new parser, so pages written for 2.2 (such as 2.2's multi-language error pages) need the new syntax or SSILegacyExprParser on for that directory.`,
      textOf(r.node), '');
    return;
  }
}

export const includeRules: Rule[] = [
  { id: 'include.ssi-legacy-expr', title: 'SSILegacyExprParser where SSI pages use the 2.2 #if expr syntax', spec: ['2.3 SSILegacyExprParser', '2.4 mod_include'], run: ssiLegacyExpr },
  { id: 'include.error-documents', title: 'Error documents served through mod_include', spec: ['2.4 mod_include'], run: errorDocuments },
];

