// The remedies of the specification's startup messages (section 7.1): Apache's message is kept
// exactly, and the line after it says what to do: which module provides a directive httpd did
// not know (with the LoadModule line to add), that plume does not have a module yet, or what
// replaced a directive 2.4 removed. Which module provides which directive comes from Apache's
// reference manual (directive-modules.ts, keyed by Apache's module names); whether plume has
// the module is asked of the catalogue when the message is made, so the remedy follows the
// modules plume gains.

import { DIRECTIVE_MODULES } from './directive-modules.js';
import type { ConfigContext } from './context.js';

/** Directives 2.4 removed, with what replaced them. */
const REMOVED: Readonly<Record<string, string>> = {
  rewritelog: 'RewriteLog was removed in 2.4: mod_rewrite writes its log to the error log; set LogLevel rewrite:traceN (N from 1 to 8) instead',
  rewriteloglevel: 'RewriteLogLevel was removed in 2.4: set LogLevel rewrite:traceN (N from 1 to 8) instead',
};

/** Modules with a remedy of their own beyond loading them. */
const OR_ELSE: Readonly<Record<string, string>> = {
  access_compat_module: ', or replace Order, Allow, Deny and Satisfy by 2.4\'s Require directives (mod_authz_core, mod_authz_host)',
};

/** Where mod_so records the directory of the configuration's LoadModule lines (as written). */
export const MODULE_DIR_SCRATCH = 'so:moduleDir';

/** The module file name Apache gives a module: mod_unixd.so for unixd_module. */
function moduleFile(symbol: string): string {
  return `mod_${symbol.replace(/_module$/, '')}.so`;
}

/** Apache's name of a module: mod_unixd for unixd_module. */
export function apacheModuleName(symbol: string): string {
  return `mod_${symbol.replace(/_module$/, '')}`;
}

/** The LoadModule line that loads `symbol`, in the directory the configuration's other
 *  LoadModule lines use (modules/, as httpd's own layout, when it has none). */
export function loadModuleLine(ctx: ConfigContext, symbol: string): string {
  const dir = ctx.getScratch<{ dir: string | undefined }>(MODULE_DIR_SCRATCH, () => ({ dir: undefined })).dir ?? 'modules';
  return `LoadModule ${symbol} ${dir}/${moduleFile(symbol)}`;
}

/** The remedy for a module `symbol` that is needed and not loaded. `what` says what needs it. */
export function loadRemedy(ctx: ConfigContext, symbol: string, what: string, several = false): string {
  const name = apacheModuleName(symbol);
  if (ctx.catalogue?.find(symbol) === undefined) {
    const [are, them] = several ? ['are', 'them'] : ['is', 'it'];
    return `Remedy: ${what} ${are} provided by ${name}, which plume does not have yet: remove ${them}, or keep ${them} inside <IfModule ${symbol}>`;
  }
  if (ctx.isLoaded(symbol)) {
    return `Remedy: ${name} is loaded, but plume's ${name} does not have ${what} yet`;
  }
  return `Remedy: load ${name}, which provides ${what}: ${loadModuleLine(ctx, symbol)}${OR_ELSE[symbol] ?? ''}`;
}

/** A directive httpd did not know, where it was met. */
export interface UnknownDirective {
  /** As written ('<Proxy' for a section). */
  readonly shown: string;
  readonly file: string;
  readonly line: number;
}

/** The module a directive belongs to in Apache 2.4, if the manual names one. */
export function providingModule(shown: string): string | undefined {
  const key = shown.replace(/^</, '').toLowerCase();
  return Object.prototype.hasOwnProperty.call(DIRECTIVE_MODULES, key) ? DIRECTIVE_MODULES[key] : undefined;
}

/**
 * The remedy lines for unknown directives: the first is the one httpd stopped at; the others
 * are every other directive of the configuration no loaded module provides, so that one run
 * names every module missing (one line per module, its directives listed). Directives
 * neither the manual nor the list of removed ones knows get no line (a misspelling: httpd's
 * own message says so).
 */
export function unknownDirectiveRemedies(ctx: ConfigContext, first: UnknownDirective, others: readonly UnknownDirective[]): string[] {
  const where = (d: UnknownDirective): string =>
    d === first ? `'${d.shown}'` : `'${d.shown}' (line ${d.line}${d.file === first.file ? '' : ` of ${d.file}`})`;
  // One entry per module (or per removed directive), in the order the configuration meets them.
  const entries = new Map<string, { removed: string | undefined; list: UnknownDirective[] }>();
  for (const d of [first, ...others]) {
    const key = d.shown.replace(/^</, '').toLowerCase();
    const removed = Object.prototype.hasOwnProperty.call(REMOVED, key) ? REMOVED[key] : undefined;
    const symbol = removed === undefined ? providingModule(d.shown) : `removed:${key}`;
    if (symbol === undefined) continue;
    let e = entries.get(symbol);
    if (!e) entries.set(symbol, (e = { removed, list: [] }));
    if (!e.list.some((x) => x.shown.toLowerCase() === d.shown.toLowerCase())) e.list.push(d);
  }
  const lines: string[] = [];
  for (const [symbol, { removed, list }] of entries) {
    if (removed !== undefined) {
      const d = list[0]!;
      lines.push(`Remedy: ${removed}${d === first ? '' : ` (line ${d.line}${d.file === first.file ? '' : ` of ${d.file}`})`}`);
      continue;
    }
    const named = list.slice(0, 3).map(where).join(', ') + (list.length > 3 ? `, and ${list.length - 3} more` : '');
    lines.push(loadRemedy(ctx, symbol, named, list.length > 1));
  }
  return lines;
}
