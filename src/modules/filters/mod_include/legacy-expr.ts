// mod_include's 2.2 expression grammar for `#if expr` under `SSILegacyExprParser on`: strings
// (bare words joined by single spaces, or 'quoted'), /regex/ after = or !=, the comparisons
// = == != < <= > >=, ! && || and parentheses, -A URI (a subrequest's access check). The tree is
// built the way httpd builds it — token by token, attaching each to the node being filled — so
// the same expressions are accepted and refused with the same messages; strings expand SSI
// variables ($name, ${name}) when evaluated.

import type { MaybePromise } from '../../../server/module.js';

const enum T { String, Re, And, Or, Not, Eq, Ne, RBrace, LBrace, Group, Ge, Le, Gt, Lt, Access }

interface Token {
  type: T;
  value: string;
}

interface Node {
  token: Token;
  parent: Node | null;
  left: Node | null;
  right: Node | null;
  value: boolean;
  done: boolean;
}

const isSpace = (c: string | undefined): boolean => c !== undefined && /[ \t\n\r\f\v]/.test(c);

/** What evaluation needs from the SSI context. */
export interface LegacyEnv {
  /** Expands $var / ${var} (ap_ssi_parse_string). */
  expand(s: string): string;
  /** Matches a POSIX extended regex and keeps the captures for $0-$9 (-1: bad pattern, logged). */
  regex(subject: string, pattern: string): number;
  /** -A: whether a subrequest for the URI would be allowed (status < 400). */
  access(uri: string): MaybePromise<boolean>;
  /** Logs an error line. */
  error(msg: string): void;
}

/** get_ptoken: the next token from `s` at `pos`; null at the end. */
function nextToken(s: string, at: { pos: number }, previous: Token | null): Token | null {
  let p = at.pos;
  while (isSpace(s[p])) p++;
  if (p >= s.length) { at.pos = s.length; return null; }
  const c = s[p]!;
  const two = s[p + 1];
  let type = T.String;
  let unmatched = '';
  let startAt = p;
  switch (c) {
    case '(': at.pos = p + 1; return { type: T.LBrace, value: '' };
    case ')': at.pos = p + 1; return { type: T.RBrace, value: '' };
    case '=': at.pos = p + (two === '=' ? 2 : 1); return { type: T.Eq, value: '' };
    case '!':
      if (two === '=') { at.pos = p + 2; return { type: T.Ne, value: '' }; }
      at.pos = p + 1; return { type: T.Not, value: '' };
    case "'": unmatched = "'"; startAt = p + 1; break;
    case '/':
      if (previous !== null && previous.type === T.Access) break;
      type = T.Re; unmatched = '/'; startAt = p + 1; break;
    case '|':
      if (two === '|') { at.pos = p + 2; return { type: T.Or, value: '' }; }
      break;
    case '&':
      if (two === '&') { at.pos = p + 2; return { type: T.And, value: '' }; }
      break;
    case '>':
      if (two === '=') { at.pos = p + 2; return { type: T.Ge, value: '' }; }
      at.pos = p + 1; return { type: T.Gt, value: '' };
    case '<':
      if (two === '=') { at.pos = p + 2; return { type: T.Le, value: '' }; }
      at.pos = p + 1; return { type: T.Lt, value: '' };
    case '-':
      if (two === 'A') { at.pos = p + 2; return { type: T.Access, value: '' }; }
      break;
  }
  // A string or regex: up to its closing quote, or to white space or an operator.
  let q = startAt;
  let out = '';
  for (; q < s.length; q++) {
    const ch = s[q]!;
    if (ch === '\\') {
      if (q + 1 >= s.length) { out += ch; q++; break; }
      out += s[++q];
      continue;
    }
    if (unmatched !== '') {
      if (ch === unmatched) { unmatched = ''; q++; break; }
    } else if (isSpace(ch)) {
      break;
    } else if ('()=!<>'.includes(ch) || ((ch === '|' || ch === '&') && s[q + 1] === ch)) {
      break;
    }
    out += ch;
  }
  at.pos = q;
  // An unclosed quote or regex is the empty string.
  return { type, value: unmatched !== '' ? '' : out };
}

function makeGroup(t: Token): void {
  t.type = T.Group;
}

function node(token: Token): Node {
  return { token, parent: null, left: null, right: null, value: false, done: false };
}

/**
 * Parses and evaluates a legacy expression (mod_include's parse_expr): true/false, or
 * undefined after logging the error (the element then prints the error message).
 */
export async function evalLegacy(expr: string, file: string, env: LegacyEnv): Promise<boolean | undefined> {
  let root: Node | null = null;
  let current: Node | null = null;
  let regex = 0;
  let error = `AH03188: Invalid expression "${expr}" in file ${file}`;
  const at = { pos: 0 };
  const fail = (msg: string): undefined => { env.error(msg); return undefined; };

  // ---- build the tree ----
  for (;;) {
    const tok = nextToken(expr, at, current !== null ? current.token : null);
    if (tok === null) break;
    const n = node(tok);
    if (current === null) {
      if (tok.type === T.String || tok.type === T.Not || tok.type === T.Access || tok.type === T.LBrace) {
        root = current = n;
        continue;
      }
      return fail(error);
    }
    let attached = false;
    switch (tok.type) {
      case T.String:
        if (current.token.type === T.String) {
          current.token.value = current.token.value + (current.token.value !== '' ? ' ' : '') + tok.value;
          attached = true;
        } else if (current.token.type !== T.Re && current.token.type !== T.RBrace && current.token.type !== T.Group) {
          n.parent = current; current.right = n; current = n;
          attached = true;
        }
        break;
      case T.Re:
        if (current.token.type === T.Eq || current.token.type === T.Ne) {
          n.parent = current; current.right = n; current = n; ++regex;
          attached = true;
        }
        break;
      case T.And: case T.Or:
        if (current.token.type === T.String || current.token.type === T.Re || current.token.type === T.Group) {
          let c: Node | null = current.parent;
          while (c !== null && c.token.type !== T.And && c.token.type !== T.Or && c.token.type !== T.LBrace) c = c.parent;
          if (c === null) {
            n.left = root; root!.parent = n; current = root = n;
          } else {
            n.left = c.right; n.left!.parent = n; n.parent = c; c.right = n; current = n;
          }
          attached = true;
        }
        break;
      case T.Eq: case T.Ne: case T.Ge: case T.Gt: case T.Le: case T.Lt:
        if (current.token.type === T.String) {
          const c = current.parent;
          if (c === null) {
            n.left = root; root!.parent = n; current = root = n;
            attached = true;
          } else if (c.token.type === T.LBrace || c.token.type === T.And || c.token.type === T.Or) {
            n.left = c.right; n.left!.parent = n; n.parent = c; c.right = n; current = n;
            attached = true;
          }
        }
        break;
      case T.RBrace: {
        let c: Node | null = current;
        while (c !== null && c.token.type !== T.LBrace) c = c.parent;
        if (c !== null) { makeGroup(c.token); current = c; attached = true; }
        else error = `AH03189: Unmatched ')' in "${expr}" in file ${file}`;
        break;
      }
      case T.Not: case T.Access: case T.LBrace:
        if (current.token.type !== T.String && current.token.type !== T.Re && current.token.type !== T.RBrace && current.token.type !== T.Group) {
          current.right = n; n.parent = current; current = n;
          attached = true;
        }
        break;
      default:
        break;
    }
    if (!attached) return fail(error);
  }

  // ---- evaluate, bottom up ----
  const str = (n: Node): void => { n.token.value = env.expand(n.token.value); n.value = n.token.value !== ''; };
  let cur: Node | null = root;
  let evalError: string | undefined;
  while (cur !== null) {
    switch (cur.token.type) {
      case T.String:
        str(cur);
        break;
      case T.And: case T.Or: {
        if (cur.left === null || cur.right === null) return fail(`AH01332: Invalid expression "${expr}" in file ${file}`);
        if (!cur.left.done) {
          if (cur.left.token.type === T.String) { str(cur.left); cur.left.done = true; }
          else { cur = cur.left; continue; }
        }
        if (!cur.right.done && regex === 0 && ((cur.token.type === T.And && !cur.left.value) || (cur.token.type === T.Or && cur.left.value))) {
          cur.value = cur.left.value;
        } else {
          if (!cur.right.done) {
            if (cur.right.token.type === T.String) { str(cur.right); cur.right.done = true; }
            else { cur = cur.right; continue; }
          }
          cur.value = cur.token.type === T.And ? cur.left.value && cur.right.value : cur.left.value || cur.right.value;
        }
        break;
      }
      case T.Eq: case T.Ne: {
        if (cur.left === null || cur.right === null || cur.left.token.type !== T.String
          || (cur.right.token.type !== T.String && cur.right.token.type !== T.Re)) {
          return fail(`AH01333: Invalid expression "${expr}" in file ${file}`);
        }
        cur.left.token.value = env.expand(cur.left.token.value);
        cur.right.token.value = env.expand(cur.right.token.value);
        if (cur.right.token.type === T.Re) {
          const m = env.regex(cur.left.token.value, cur.right.token.value);
          // A pattern that does not compile (-1) counts as a match, as in httpd.
          cur.value = m !== 0;
          --regex;
        } else {
          cur.value = cur.left.token.value === cur.right.token.value;
        }
        if (cur.token.type === T.Ne) cur.value = !cur.value;
        break;
      }
      case T.Ge: case T.Gt: case T.Le: case T.Lt: {
        if (cur.left === null || cur.right === null || cur.left.token.type !== T.String || cur.right.token.type !== T.String) {
          return fail(`AH01334: Invalid expression "${expr}" in file ${file}`);
        }
        cur.left.token.value = env.expand(cur.left.token.value);
        cur.right.token.value = env.expand(cur.right.token.value);
        const a = Buffer.from(cur.left.token.value, 'latin1');
        const cmp = Buffer.compare(a, Buffer.from(cur.right.token.value, 'latin1'));
        cur.value = cur.token.type === T.Ge ? cmp >= 0 : cur.token.type === T.Gt ? cmp > 0 : cur.token.type === T.Le ? cmp <= 0 : cmp < 0;
        break;
      }
      case T.Not: case T.Group:
        if (cur.right !== null) {
          if (!cur.right.done) { cur = cur.right; continue; }
          cur.value = cur.right.value;
        } else {
          cur.value = true;
        }
        if (cur.token.type === T.Not) cur.value = !cur.value;
        break;
      case T.Access: {
        if (cur.left !== null || cur.right === null || (cur.right.token.type !== T.String && cur.right.token.type !== T.Re)) {
          return fail(`AH01335: Invalid expression "${expr}" in file ${file}: Token '-A' must be followed by a URI string.`);
        }
        cur.right.token.value = env.expand(cur.right.token.value);
        cur.value = await env.access(cur.right.token.value);
        break;
      }
      default:
        // A regex or '(' left where a value was due; an unmatched ')' reported earlier wins.
        evalError ??= cur.token.type === T.Re ? `AH03190: No operator before regex in expr "${expr}" in file ${file}`
          : cur.token.type === T.LBrace ? `AH03191: Unmatched '(' in "${expr}" in file ${file}`
            : `AH03192: internal parser error in "${expr}" in file ${file}`;
        return fail(evalError);
    }
    cur.done = true;
    cur = cur.parent;
  }
  return root !== null ? root.value : false;
}
