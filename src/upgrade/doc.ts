// One configuration file held by the upgrade assistant: its lossless tree (comments, blank
// lines, continuations and quoting kept as written) and the surgical edits made to it.
// Untouched nodes print back byte-identical (printConfig); each edit can leave a marker comment.

import { parseConfig, printConfig, type ConfigNode } from '../server/config/tree.js';
import { ConfigError } from '../server/config/errors.js';
import { MARKER, UpgradeParseError } from './model.js';

export type DocKind = 'main' | 'include' | 'htaccess';

export class Doc {
  /** Set by the first edit. */
  changed = false;
  readonly eol: '\n' | '\r\n';
  private readonly inserted = new WeakSet<ConfigNode>();

  constructor(
    /** Absolute path. */
    readonly path: string,
    /** The name used in findings (as given, or relative to the working directory). */
    readonly display: string,
    readonly kind: DocKind,
    readonly original: string,
    readonly nodes: ConfigNode[],
  ) {
    this.eol = original.includes('\r\n') ? '\r\n' : '\n';
  }

  static parse(path: string, display: string, kind: DocKind, text: string): Doc {
    let nodes: ConfigNode[];
    try {
      nodes = parseConfig(text, display);
    } catch (e) {
      if (e instanceof ConfigError) throw new UpgradeParseError(display, e.line, e.detail.replace(/^.*?:\d+: /, ''));
      throw e;
    }
    const bad = findMissingGt(nodes);
    if (bad) throw new UpgradeParseError(display, bad.line, `<${bad.name}> directive missing closing '>'`);
    return new Doc(path, display, kind, text, nodes);
  }

  /** The file's text after the edits (the original bytes when nothing changed). */
  text(): string {
    if (!this.changed) return this.original;
    let out = printConfig(this.nodes);
    if (!this.original.endsWith('\n') && this.original !== '' && out.endsWith('\n')) out = out.slice(0, -1);
    return out;
  }

  isInserted(n: ConfigNode): boolean {
    return this.inserted.has(n);
  }

  /** The array holding `node` (the file's top level or a section's children). */
  container(node: ConfigNode): ConfigNode[] {
    const find = (list: ConfigNode[]): ConfigNode[] | undefined => {
      if (list.includes(node)) return list;
      for (const n of list) {
        if (n.children) {
          const r = find(n.children);
          if (r) return r;
        }
      }
      return undefined;
    };
    const c = find(this.nodes);
    if (!c) throw new Error(`node not in ${this.display}`);
    return c;
  }

  // ---- building new nodes -----------------------------------------------------------------

  /** Parses generated lines into nodes (so later rules see them as directives). */
  private make(lines: readonly string[], anchor: ConfigNode | undefined): ConfigNode[] {
    if (lines.length === 0) return [];
    const nodes = parseConfig(lines.join('\n') + '\n', this.display);
    const line = anchor?.line ?? 0;
    const fix = (ns: ConfigNode[]): void => {
      for (const n of ns) {
        this.inserted.add(n);
        n.line = line;
        n.firstLine = line;
        n.raw = n.raw.map((r) => this.withEol(r));
        if (n.close) n.close = { line, raw: n.close.raw.map((r) => this.withEol(r)) };
        if (n.children) fix(n.children);
      }
    };
    fix(nodes);
    return nodes;
  }

  private withEol(r: string): string {
    return this.eol === '\r\n' && !r.endsWith('\r') ? r + '\r' : r;
  }

  private marker(indent: string, rule: string, text: string | undefined, comments: boolean): string[] {
    if (!comments) return [];
    return [`${indent}${MARKER} ${rule}${text ? `: ${text}` : ''}`];
  }

  // ---- edits --------------------------------------------------------------------------------

  /** Replaces a node (a section with its content) by new lines at the same indentation. */
  replace(node: ConfigNode, lines: readonly string[], rule: string, comments: boolean, note?: string): ConfigNode[] {
    const c = this.container(node);
    const i = c.indexOf(node);
    const ind = indentOf(node);
    const made = this.make([...this.marker(ind, rule, note, comments), ...lines.map((l) => ind + l)], node);
    c.splice(i, 1, ...made);
    this.changed = true;
    return made;
  }

  /** Removes a node; with comments on, the original stays visible as a marker comment. */
  remove(node: ConfigNode, rule: string, comments: boolean, why?: string): void {
    const c = this.container(node);
    const i = c.indexOf(node);
    const was = node.raw.map((r) => r.replace(/\r$/, '').trim()).join(' ').replace(/\\ /g, ' ');
    const made = comments ? this.make([`${indentOf(node)}${MARKER} ${rule}: ${why ?? 'removed'}: ${was}`], node) : [];
    c.splice(i, 1, ...made);
    this.changed = true;
  }

  /** Rewrites a section's opening line in place (its content untouched): `from` -> `to` in
   *  its arguments. */
  retitle(node: ConfigNode, from: string, to: string): void {
    node.raw = node.raw.map((r) => r.split(from).join(to));
    node.args = node.args.split(from).join(to);
    this.changed = true;
  }

  /** Removes a node without any trace (the lines it stood for are rewritten elsewhere). */
  drop(node: ConfigNode): void {
    const c = this.container(node);
    c.splice(c.indexOf(node), 1);
    this.changed = true;
  }

  insertBefore(node: ConfigNode, lines: readonly string[], rule: string, comments: boolean, note?: string): ConfigNode[] {
    const c = this.container(node);
    const ind = indentOf(node);
    const made = this.make([...this.marker(ind, rule, note, comments), ...lines.map((l) => ind + l)], node);
    c.splice(c.indexOf(node), 0, ...made);
    this.changed = true;
    return made;
  }

  insertAfter(node: ConfigNode, lines: readonly string[], rule: string, comments: boolean, note?: string): ConfigNode[] {
    const c = this.container(node);
    const ind = indentOf(node);
    const made = this.make([...this.marker(ind, rule, note, comments), ...lines.map((l) => ind + l)], node);
    c.splice(c.indexOf(node) + 1, 0, ...made);
    this.changed = true;
    return made;
  }

  /** Appends lines at the end of a section's content (or of the file when `section` is undefined). */
  append(section: ConfigNode | undefined, lines: readonly string[], rule: string, comments: boolean, note?: string): ConfigNode[] {
    const list = section ? section.children! : this.nodes;
    const ind = section ? childIndent(section) : topIndent(this.nodes);
    // Keep a trailing run of blank lines after the new lines.
    let at = list.length;
    while (at > 0 && list[at - 1]!.kind === 'blank') at--;
    const made = this.make([...this.marker(ind, rule, note, comments), ...lines.map((l) => ind + l)], section ?? list[at - 1]);
    list.splice(at, 0, ...made);
    this.changed = true;
    return made;
  }
}

/** The leading white space of a node's first physical line. */
export function indentOf(node: ConfigNode): string {
  return /^[ \t]*/.exec(node.raw[0] ?? '')![0];
}

/** The indentation used for a section's content: its first directive's, else one step deeper. */
export function childIndent(section: ConfigNode): string {
  const first = section.children?.find((c) => c.kind === 'directive' || c.kind === 'section' || c.kind === 'comment');
  if (first) return indentOf(first);
  const own = indentOf(section);
  return own + (own.includes('\t') ? '\t' : '    ');
}

/** One indentation step inside a section (the difference between content and opening line). */
export function indentStep(section: ConfigNode): string {
  const own = indentOf(section);
  const inner = childIndent(section);
  return inner.length > own.length && inner.startsWith(own) ? inner.slice(own.length) : '    ';
}

function topIndent(nodes: readonly ConfigNode[]): string {
  const first = nodes.find((c) => c.kind === 'directive');
  return first ? indentOf(first) : '';
}

function findMissingGt(nodes: readonly ConfigNode[]): ConfigNode | undefined {
  for (const n of nodes) {
    if (n.kind !== 'section') continue;
    if (n.missingGt) return n;
    const r = findMissingGt(n.children ?? []);
    if (r) return r;
  }
  return undefined;
}
