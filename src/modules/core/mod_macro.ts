// mod_macro: configuration macros, run while the configuration is read (EXEC_ON_READ).
//   <Macro name [/IgnoreEmptyArgs] [/IgnoreBadNesting] $arg1 @arg2 ...>  ...  </Macro>
//   Use name value1 value2 ...      UndefMacro name
//   MacroIgnoreEmptyArgs            MacroIgnoreBadNesting
//
// A macro's body is text, not configuration: the reader keeps its lines unparsed
// (config/tree.ts, RAW_BODY_SECTIONS). `Use` substitutes the values for the argument names in
// every line (an argument starting with '@' is put in double quotes, its '"' and '\' escaped)
// and reads the result as configuration where the Use stands, under the file name httpd gives
// it: `macro 'name' (defined on line N of "file") used on line M of "file"`, which is also
// how a macro used inside itself is recognised. Warnings and errors are httpd's, word for word.
//
// DIFFERENCE: httpd reads a macro's expansion as a stream spliced into the file being read, so
// an expansion may open a section that the file closes after the Use; plume reads each
// expansion as a configuration of its own, whose sections must close inside it
// (docs/differences.md).

import { CmdParms } from '../../server/config/cmd.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { parseConfig, type ConfigNode } from '../../server/config/tree.js';
import type { ConfigContext } from '../../server/config/context.js';
import { defineModule, directive, MODULE_API_VERSION, EXEC_ON_READ, OR_ALL } from '../../server/module.js';
import { APLOG_WARNING } from '../../server/log/levels.js';

type Cmd = CmdParms<undefined, undefined>;

/** Argument names should start with one of these; '@' ones are substituted quoted. */
const ARG_PREFIX = '$%@';
const ESCAPE_ARG = '@';
/** httpd's MAX_STRING_LEN: the longest line a substitution may produce (with its newline). */
const MAX_STRING_LEN = 8192;

interface Macro {
  /** Lower-cased. */
  readonly name: string;
  readonly args: readonly string[];
  /** The body's lines, each with its newline, comment lines left out. */
  readonly contents: readonly string[];
  /** `defined on line N of "file"`. */
  readonly location: string;
  readonly ignoreEmpty: boolean;
}

interface MacroState {
  /** undefined until the first <Macro> (httpd's lazily made table: "no macro defined before"). */
  macros: Map<string, Macro> | undefined;
  ignoreEmpty: boolean;
  ignoreBadNesting: boolean;
}

const states = new WeakMap<ConfigContext, MacroState>();
function state(ctx: ConfigContext): MacroState {
  let s = states.get(ctx);
  if (s === undefined) { s = { macros: undefined, ignoreEmpty: false, ignoreBadNesting: false }; states.set(ctx, s); }
  return s;
}

function warn(cmd: Cmd, text: string): void {
  cmd.ctx.log('macro', APLOG_WARNING, text);
}

/** A logical line as ap_cfg_getline returns it: continuations joined, white space trimmed. */
function logicalText(raw: readonly string[]): string {
  let acc = '';
  for (let i = 0; i < raw.length; i++) {
    const p = raw[i]!.replace(/\r$/, '');
    if (i < raw.length - 1 && p.endsWith('\\')) acc += p.slice(0, -1);
    else acc += p;
  }
  return acc.replace(/^[ \t\r\f\v]+|[ \t\r\f\v]+$/g, '');
}

/** warn_if_non_blank: text after a closing '>' other than blanks or a comment. */
function warnIfNonBlank(cmd: Cmd, what: string, rest: string, line: number): void {
  for (const ch of rest) {
    if (ch === '#') return;
    if (ch !== ' ' && ch !== '\t') {
      warn(cmd, `AH02989: ${what} on line ${line} of ${cmd.file}: ${rest}`);
      return;
    }
  }
}

function words(text: string): string[] {
  const c = new ArgCursor(text.replace(/^[ \t]+/, ''));
  const out: string[] = [];
  while (c.pos < c.text.length) {
    out.push(c.word());
    c.pos += /^[ \t]*/.exec(c.text.slice(c.pos))![0].length;
  }
  return out;
}

const looksLikeArgument = (w: string): boolean => w !== '' && ARG_PREFIX.includes(w[0]!);

/** check_macro_arguments: errors for an empty or repeated name, warnings for the rest. */
function checkArguments(cmd: Cmd, m: { name: string; location: string; args: readonly string[] }): string | undefined {
  const tab = m.args;
  for (let i = 0; i < tab.length; i++) {
    const a = tab[i]!;
    if (a.length === 0) return `macro '${m.name}' (${m.location}): empty argument #${i + 1} name`;
    if (!looksLikeArgument(a)) {
      warn(cmd, `AH02796: macro '${m.name}' (${m.location}) argument name '${a}' (#${i + 1}) without expected prefix, better prefix argument names with one of '${ARG_PREFIX}'.`);
    }
    if (a.startsWith('${')) {
      warn(cmd, `AH03484: macro '${m.name}' (${m.location}) argument name '${a}' (#${i + 1}) clashes with 'Define' syntax '\${...}', better use '$(...)'.`);
    }
    for (let j = i + 1; j < tab.length; j++) {
      const b = tab[j]!;
      if (a === b) {
        return `argument name conflict in macro '${m.name}' (${m.location}): argument '${a}': #${i + 1} and #${j + 1}, change argument names!`;
      }
      const n = Math.min(a.length, b.length);
      if (b.length > 0 && a.slice(0, n) === b.slice(0, n)) {
        warn(cmd, `AH02797: macro '${m.name}' (${m.location}): argument name prefix conflict (${a} #${i + 1} and ${b} #${j + 1}), be careful about your macro definition!`);
      }
    }
  }
  return undefined;
}

/** substitute_macro_args on one line: each earliest occurrence of an argument name (the
 *  longest at the same place) is replaced, the scan resuming after as many characters as the
 *  unquoted value has, as httpd's does. */
function substituteLine(line: string, names: readonly string[], values: readonly string[], used: boolean[] | undefined): string | { error: string } {
  let buf = line;
  let ptr = 0;
  for (;;) {
    let chosen = -1;
    let which = -1;
    let chosenLen = 0;
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      const found = buf.indexOf(name, ptr);
      if (found >= 0 && (chosen < 0 || found < chosen || (found === chosen && chosenLen < name.length))) {
        chosen = found;
        chosenLen = name.length;
        which = i;
      }
    }
    if (chosen < 0) return buf;
    const name = names[which]!;
    const value = values[which]!;
    if (name !== value) {
      const quote = name[0] === ESCAPE_ARG;
      const inserted = quote ? `"${value.replace(/["\\]/g, (c) => '\\' + c)}"` : value;
      if (buf.length - name.length + inserted.length >= MAX_STRING_LEN) return { error: 'cannot substitute, buffer size too small' };
      buf = buf.slice(0, chosen) + inserted + buf.slice(chosen + name.length);
    }
    ptr = chosen + value.length;
    if (used !== undefined) used[which] = true;
  }
}

/** process_content: the body with the values substituted, or httpd's error. */
function processContent(m: Macro, values: readonly string[], used: boolean[] | undefined): string[] | string {
  const out: string[] = [];
  for (let i = 0; i < m.contents.length; i++) {
    const line = m.contents[i]!;
    if (line.length >= MAX_STRING_LEN) return `while processing line ${i + 1} of macro '${m.name}' (${m.location}) macro too long`;
    const r = substituteLine(line, m.args, values, used);
    if (typeof r !== 'string') return `while processing line ${i + 1} of macro '${m.name}' (${m.location}) ${r.error}`;
    out.push(r);
  }
  return out;
}

/** get_lines_till_end_token over the body the reader kept: the lines, and the nesting
 *  warnings httpd gives while reading them. */
function bodyLines(cmd: Cmd, where: string, ignoreNesting: boolean): string[] | string {
  const node = cmd.node.source;
  const start = node.line;
  let any = 1;
  const lines: string[] = [];
  const count = (first: string, line: number): void => {
    if (first.startsWith('</')) {
      any--;
      if (!ignoreNesting && any < 0) warn(cmd, `AH02793: bad (negative) nesting on line ${line - start} of ${where}`);
    } else if (first.startsWith('<')) {
      any++;
    }
  };
  for (const n of node.children ?? []) {
    if (n.kind === 'comment') continue;
    const text = n.kind === 'blank' ? logicalText(n.raw) : logicalText(n.raw);
    if (text.startsWith('#')) continue;
    const first = new ArgCursor(text).word();
    if (first !== '') count(first, n.line);
    lines.push(text + '\n');
  }
  if (node.unclosed === true || node.close === undefined) return 'expected token not found: </Macro>';
  const closeText = logicalText(node.close.raw);
  count('</', node.close.line);
  warnIfNonBlank(cmd, "AH02794: non blank chars found after directive closing", closeText.slice(closeText.lastIndexOf('>') + 1), node.close.line);
  if (!ignoreNesting && any !== 0) warn(cmd, `AH02795: bad cumulated nesting (${any > 0 ? '+' : ''}${any}) in ${where}`);
  return lines;
}

/** <Macro name args...>: records the macro (a redefinition replaces it, with a warning). */
function macroSection(cmd: Cmd, raw: string): string | undefined {
  const st = state(cmd.ctx);
  const macros = (st.macros ??= new Map());
  if (raw.trim() === '') return '<Macro macro definition: empty name';
  const opener = logicalText(cmd.node.source.raw);
  warnIfNonBlank(cmd, "AH02801: non blank chars found after <Macro closing '>'", opener.slice(opener.lastIndexOf('>') + 1), cmd.line);
  const c = new ArgCursor(raw);
  const name = c.word().toLowerCase();
  if (name === '') return '<Macro macro definition: name not found';
  const old = macros.get(name);
  if (old !== undefined) {
    warn(cmd, `AH02802: macro '${name}' multiply defined: ${old.location}, redefined on line ${cmd.line} of "${cmd.file}"`);
  }
  const location = `defined on line ${cmd.line} of "${cmd.file}"`;
  const where = `macro '${name}' (${location})`;
  if (looksLikeArgument(name)) warn(cmd, `AH02803: ${where} better prefix a macro name with any of '${ARG_PREFIX}'`);
  // The modifiers: '/IgnoreEmptyArgs', '/IgnoreBadNesting' before the argument names.
  let rest = c.text.slice(c.pos);
  let ignoreEmpty = false;
  let ignoreBadNesting = false;
  while (rest.startsWith('/')) {
    const flag = /^\S*/.exec(rest)![0];
    if (flag.toLowerCase().startsWith('/ignoreemptyargs')) { ignoreEmpty = true; rest = rest.slice('/IgnoreEmptyArgs'.length); }
    else if (flag.toLowerCase().startsWith('/ignorebadnesting')) { ignoreBadNesting = true; rest = rest.slice('/IgnoreBadNesting'.length); }
    else { warn(cmd, `AH02804: ${where}: unknown flag '${flag}'`); rest = rest.slice(flag.length); }
    if (rest === '') break;
    rest = rest.slice(1);
  }
  const args = words(rest);
  const err = checkArguments(cmd, { name, location, args });
  if (err !== undefined) return err;
  const lines = bodyLines(cmd, where, st.ignoreBadNesting || ignoreBadNesting);
  if (typeof lines === 'string') return `${where}\n\tcontents error: ${lines}`;
  const macro: Macro = { name, args, contents: lines, location, ignoreEmpty };
  // check_macro_contents
  if (lines.length === 0) {
    warn(cmd, `AH02799: macro '${name}' (${location}): empty contents!`);
  } else {
    const used = args.map(() => false);
    const r = processContent(macro, args, used);
    if (typeof r === 'string') return `${where}\n\tcontents checking error: ${r}`;
    used.forEach((u, i) => { if (!u) warn(cmd, `AH02800: macro '${name}' (${location}): argument '${args[i]}' (#${i + 1}) never used`); });
  }
  macros.set(name, macro);
  return undefined;
}

/** Use name values...: the macro's expansion, read where the Use stands. */
function useMacro(cmd: Cmd, raw: string): string | undefined {
  const st = state(cmd.ctx);
  if (st.macros === undefined) return 'no macro defined before Use';
  const c = new ArgCursor(raw);
  const name = c.word().toLowerCase();
  if (name === '') return 'no macro name specified with Use';
  const m = st.macros.get(name);
  if (m === undefined) return `macro '${name}' undefined`;
  if (cmd.file.includes(`macro '${m.name}'`)) return `recursive use of macro '${m.name}' is invalid`;
  const values = words(c.text.slice(c.pos));
  if (values.length !== m.args.length) {
    return `macro '${m.name}' (${m.location}) used with ${values.length} arguments instead of ${m.args.length}`;
  }
  const where = `macro '${m.name}' (${m.location}) used on line ${cmd.line} of "${cmd.file}"`;
  if (!st.ignoreEmpty && !m.ignoreEmpty) {
    values.forEach((v, i) => { if (v === '') warn(cmd, `AH02798: ${where}: empty argument #${i + 1}`); });
  }
  const lines = processContent(m, values, undefined);
  if (typeof lines === 'string') return `${where} error while substituting: ${lines}`;
  const nodes: ConfigNode[] = parseConfig(lines.join(''), where);
  cmd.emit(cmd.expand(nodes));
  return undefined;
}

function undefMacro(cmd: Cmd, name: string): string | undefined {
  const st = state(cmd.ctx);
  if (st.macros === undefined) return 'no macro defined before UndefMacro';
  if (name === '') return 'no macro name specified with UndefMacro';
  const key = name.toLowerCase();
  if (!st.macros.has(key)) return `cannot remove undefined macro '${key}'`;
  st.macros.delete(key);
  return undefined;
}

const R = EXEC_ON_READ | OR_ALL;

const self = defineModule<undefined, undefined>({
  name: 'macro_module',
  source: 'mod_macro.c',
  apiVersion: MODULE_API_VERSION,
  directives: [
    directive({ name: '<Macro', args: 'RAW_ARGS', where: R, section: true, help: 'Beginning of a macro definition section.', handler: macroSection }),
    directive({ name: 'Use', args: 'RAW_ARGS', where: R, help: 'Use of a macro.', handler: useMacro }),
    directive({ name: 'UndefMacro', args: 'TAKE1', where: R, help: 'Remove a macro definition.', handler: undefMacro }),
    directive({ name: 'MacroIgnoreEmptyArgs', args: 'NO_ARGS', where: R, help: 'Globally ignore warnings about empty arguments.', handler: (cmd: Cmd) => { state(cmd.ctx).ignoreEmpty = true; return undefined; } }),
    directive({ name: 'MacroIgnoreBadNesting', args: 'NO_ARGS', where: R, help: 'Globally ignore warnings about bad nesting.', handler: (cmd: Cmd) => { state(cmd.ctx).ignoreBadNesting = true; return undefined; } }),
  ],
});

export default self;
