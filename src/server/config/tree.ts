// The lossless configuration tree: every directive, section, comment and blank line of a
// file with its position and original text (httpd's ap_directive_t tree, plus trivia so the
// upgrade assistant can rewrite a file without disturbing what it does not change).

import { splitLogicalLines, ArgCursor, trim } from './lexer.js';
import { ConfigError } from './errors.js';

export interface ConfigNode {
  kind: 'directive' | 'section' | 'comment' | 'blank';
  /** Directive or section name as written (sections without the '<'). */
  name: string;
  /** Raw argument text; for sections without the closing '>'. */
  args: string;
  file: string;
  /** Last physical line of the logical line (httpd's line number). */
  line: number;
  firstLine: number;
  /** Physical lines of this node's opening line, as written. */
  raw: readonly string[];
  /** Sections: their content. */
  children?: ConfigNode[];
  /** Sections: the closing line. */
  close?: { line: number; raw: readonly string[] };
  /** Sections: the opening line had no closing '>'. */
  missingGt?: boolean;
  /** Sections: the file ended inside it, under an outermost conditional section (which
   *  httpd reads to the end of the file when true, and refuses when false). */
  unclosed?: boolean;
}

/** The sections httpd runs while reading (EXEC_ON_READ): a true one reads its body up to its
 *  end tag or, without one, to the end of the file (ap_build_cont_config). */
const READ_TIME_CONDITIONALS: ReadonlySet<string> = new Set(['ifmodule', 'ifdefine', 'iffile', 'ifdirective', 'ifsection']);

/** Sections whose body is text, not configuration: mod_macro's <Macro> reads its lines itself
 *  (get_lines_till_end_token) up to the matching end tag, counting nested openers of its own
 *  name only, so sections inside it need not balance. Its lines are kept flat, unparsed. */
const RAW_BODY_SECTIONS: ReadonlySet<string> = new Set(['macro']);

/** Parses a file's text into the lossless tree; throws ConfigError for unbalanced sections. */
export function parseConfig(source: string, file: string): ConfigNode[] {
  const lines = splitLogicalLines(source);
  const root: ConfigNode[] = [];
  const stack: ConfigNode[] = [];
  const top = (): ConfigNode[] => (stack.length ? stack[stack.length - 1]!.children! : root);
  /** Inside a raw-body section: the section and how deep its own name is nested. */
  let raw: { node: ConfigNode; opener: string; closer: string; depth: number } | undefined;
  for (const l of lines) {
    const base = { file, line: l.line, firstLine: l.firstLine, raw: l.raw };
    if (raw !== undefined) {
      const body = raw.node.children!;
      if (l.text === '') { body.push({ kind: 'blank', name: '', args: '', ...base }); continue; }
      if (l.text.startsWith('#')) { body.push({ kind: 'comment', name: '', args: l.text, ...base }); continue; }
      const cur = new ArgCursor(l.text);
      const first = cur.word();
      const lower = first.toLowerCase();
      if (lower === raw.closer && --raw.depth === 0) {
        raw.node.close = { line: l.line, raw: l.raw };
        stack.pop();
        raw = undefined;
        continue;
      }
      if (lower === raw.opener) raw.depth++;
      body.push({ kind: 'directive', name: first, args: cur.rest(), ...base });
      continue;
    }
    if (l.text === '') { top().push({ kind: 'blank', name: '', args: '', ...base }); continue; }
    if (l.text.startsWith('#')) { top().push({ kind: 'comment', name: '', args: l.text, ...base }); continue; }
    const cur = new ArgCursor(l.text);
    const word = cur.word();
    const rest = cur.rest();
    // A line whose first word is empty (a lone '""') holds no directive: httpd skips it.
    if (word === '') { top().push({ kind: 'blank', name: '', args: '', ...base }); continue; }
    if (word.startsWith('</')) {
      const closeName = word.slice(2).replace(/>$/, '');
      const open = stack[stack.length - 1];
      if (!open) {
        throw new ConfigError(file, l.line, `${word.replace(/>$/, '')}> without matching <${closeName}> section`, 'read');
      }
      if (!word.endsWith('>')) throw new ConfigError(file, l.line, `${word}> directive missing closing '>'`, 'read');
      if (open.name.toLowerCase() !== closeName.toLowerCase()) {
        throw new ConfigError(file, l.line, `Expected </${open.name}> but saw </${closeName}>`, 'read');
      }
      open.close = { line: l.line, raw: l.raw };
      stack.pop();
      continue;
    }
    if (word.startsWith('<') && word.length > 1) {
      let name = word.slice(1);
      let args = rest;
      let missingGt = false;
      if (name.endsWith('>') && args === '') {
        name = name.slice(0, -1);
      } else {
        // The last '>' closes the opener (httpd's strrchr): text after it is ignored.
        const t = trim(args);
        const gt = t.lastIndexOf('>');
        if (gt >= 0) args = trim(t.slice(0, gt));
        else missingGt = true;
      }
      const node: ConfigNode = { kind: 'section', name, args, ...base, children: [] };
      if (missingGt) node.missingGt = true;
      top().push(node);
      stack.push(node);
      const lower = name.toLowerCase();
      if (RAW_BODY_SECTIONS.has(lower)) raw = { node, opener: '<' + lower, closer: `</${lower}>`, depth: 1 };
      continue;
    }
    top().push({ kind: 'directive', name: word, args: rest, ...base });
  }
  // A raw-body section the file ends in is left to its module (mod_macro: "expected token not
  // found"); the sections around it are closed as far as the reader is concerned.
  if (raw !== undefined) {
    raw.node.unclosed = true;
    stack.pop();
  }
  if (stack.length && READ_TIME_CONDITIONALS.has(stack[0]!.name.toLowerCase())) {
    for (const open of stack) open.unclosed = true;
  } else if (stack.length) {
    const open = stack[stack.length - 1]!;
    throw new ConfigError(file, open.line, `${file}:${open.line}: <${open.name}> was not closed.`, 'read');
  }
  return root;
}

/** Serialises a tree back to text exactly (for unchanged nodes) — the upgrade assistant's writer. */
export function printConfig(nodes: readonly ConfigNode[]): string {
  const out: string[] = [];
  const walk = (ns: readonly ConfigNode[]): void => {
    for (const n of ns) {
      out.push(...n.raw);
      if (n.children) walk(n.children);
      if (n.close) out.push(...n.close.raw);
    }
  };
  walk(nodes);
  return out.length ? out.join('\n') + '\n' : '';
}

/** A node as build.ts's expansion step (expandNodes) hands it to the directive handlers, with
 *  the parsed node it came from. */
export interface ExpandedNode {
  readonly name: string;
  readonly args: string;
  readonly file: string;
  readonly line: number;
  readonly children: readonly ExpandedNode[] | undefined;
  readonly source: ConfigNode;
}
