// Configuration sections (<Directory>, <DirectoryMatch>, <Location>, <LocationMatch>,
// <Files>, <FilesMatch>, <If>): each compiled once — regexes, wildcards, depth — with an id
// the merge cache keys on.

import type { BoolExpr } from '../../expr/index.js';

export type SectionKind = 'directory' | 'location' | 'files' | 'if';

export interface Section {
  readonly id: number;
  readonly kind: SectionKind;
  /** The path or pattern as configured (Directory paths absolute, without trailing slash unless "/"). */
  readonly path: string;
  /** Regex sections (~ or *Match). */
  readonly regex: RegExp | null;
  /** Wildcard sections (fnmatch), compiled. */
  readonly wildcard: RegExp | null;
  /** Number of path components (Directory sorting and matching). */
  readonly depth: number;
  /** The section's per-directory configuration vector. */
  readonly vector: unknown[];
  /** Where it was declared. */
  readonly file: string;
  readonly line: number;
  /** The section directive as written: "<Directory", "<FilesMatch"... */
  readonly directive: string;
  /** <If>/<ElseIf>: the condition, parsed once (undefined for <Else>). */
  readonly condition?: BoolExpr | undefined;
  /** <If> (IF_CONDITION_IF), <ElseIf> (both bits), <Else> (IF_CONDITION_ELSE). */
  readonly ifElse?: number | undefined;
}

/** httpd's AP_CONDITION_IF / AP_CONDITION_ELSE bits (<ElseIf> has both). */
export const IF_CONDITION_IF = 1;
export const IF_CONDITION_ELSE = 2;

let nextSectionId = 1;
export function newSectionId(): number {
  return nextSectionId++;
}

/** Compiles an fnmatch pattern; with `pathname` wildcards do not cross '/'. */
export function compileWildcard(pattern: string, pathname: boolean): RegExp {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += pathname ? '[^/]*' : '.*';
    else if (c === '?') re += pathname ? '[^/]' : '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) { re += '\\['; continue; }
      let body = pattern.slice(i + 1, end);
      if (body.startsWith('!')) body = '^' + body.slice(1);
      re += '[' + body.replace(/\\/g, '\\\\') + ']';
      i = end;
    } else if (c === '\\' && i + 1 < pattern.length) {
      re += escapeRegex(pattern[++i]!);
    } else re += escapeRegex(c);
  }
  return new RegExp(re + '$');
}

export function isWildcard(s: string): boolean {
  return /[*?[]/.test(s);
}

export function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** Counts path components as httpd's ap_count_dirs ("/" = 0, "/a" = 1, "/a/b/" = 2). */
export function countDirs(p: string): number {
  let n = 0;
  for (let i = 0; i < p.length; i++) if (p[i] === '/') n++;
  return n;
}

/** httpd's core_reorder_directories: non-regex before regex, then fewer components first (regexes
 *  too, by the slashes in the pattern), then configuration order. */
export function sortDirectorySections(secs: Section[]): Section[] {
  return secs
    .map((s, i) => ({ s, i }))
    .sort((a, b) => {
      const ar = a.s.regex ? 1 : 0;
      const br = b.s.regex ? 1 : 0;
      if (ar !== br) return ar - br;
      if (a.s.depth !== b.s.depth) return a.s.depth - b.s.depth;
      return a.i - b.i;
    })
    .map((x) => x.s);
}
