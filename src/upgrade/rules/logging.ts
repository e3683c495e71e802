// Logging changes: RewriteLog/RewriteLogLevel -> LogLevel rewrite:traceN, DumpIOLogLevel ->
// LogLevel dumpio:trace7, the DebugLevel option of CharsetOptions/ExtFilterOptions ->
// per-module LogLevel, and piped logs that relied on 2.2's "/bin/sh -c" (-> "|$").

import type { ConfigNode } from '../../server/config/tree.js';
import type { Rule } from '../model.js';
import { textOf, vhostOf, words, type Ref, type Upgrade } from '../engine.js';

/** Sets a per-module log level where the server's LogLevel is: appended to a LogLevel line of
 *  the same server (a later "LogLevel warn" would otherwise reset the module's level), else
 *  written in place of `at`. Answers the line written. */
function moduleLogLevel(u: Upgrade, at: Ref, spec: string, rule: string): string {
  const vh = vhostOf(at);
  const lines = u.named('LogLevel').filter((x) => x.doc.kind !== 'htaccess' && vhostOf(x) === vh && x.sections.every((s) => /^(virtualhost|ifmodule|ifdefine|ifversion)$/i.test(s.name)));
  const plain = at.doc.kind !== 'htaccess' && at.sections.every((s) => /^(virtualhost|ifmodule|ifdefine|ifversion)$/i.test(s.name)) ? lines[lines.length - 1] : undefined;
  const module = spec.split(':')[0]!;
  if (plain) {
    const kept = words(plain.node).filter((w) => !w.toLowerCase().startsWith(`${module}:`));
    const after = `LogLevel ${[...kept, spec].join(' ')}`;
    u.replace(plain, [after], rule);
    u.remove(at, rule, `now "${after}"`);
    return after;
  }
  const after = `LogLevel ${spec}`;
  u.replace(at, [after], rule);
  return after;
}

// ---- RewriteLog / RewriteLogLevel -----------------------------------------------------------

function rewriteLog(u: Upgrade): void {
  const rule = 'logging.rewrite-log';
  const levels = u.named('RewriteLogLevel');
  const logs = u.named('RewriteLog');
  for (const r of levels) {
    const n = parseInt(words(r.node)[0] ?? '0', 10);
    const before = textOf(r.node);
    if (!Number.isFinite(n) || n <= 0) {
      u.remove(r, rule, 'removed in 2.4');
      u.report(rule, r, 'change', 'RewriteLogLevel is gone in 2.4 (LogLevel rewrite:traceN replaces it); level 0 logged nothing, so it is simply removed.', before, '');
      continue;
    }
    const lvl = Math.min(n, 8);
    const after = moduleLogLevel(u, r, `rewrite:trace${lvl}`, rule);
    u.report(rule, r, 'change',
      `RewriteLog and RewriteLogLevel are gone in 2.4; mod_rewrite logs through the error log at the per-module level "rewrite:trace${lvl}" (2.2 level ${n}).`
      + ' Its lines appear in the ErrorLog, tagged [rewrite:traceN].', before, after);
  }
  for (const r of logs) {
    const before = textOf(r.node);
    u.remove(r, rule, 'removed in 2.4');
    u.report(rule, r, 'change', 'RewriteLog is gone in 2.4: mod_rewrite writes to the ErrorLog of the server (filter it with grep "\\[rewrite:").', before, '');
  }
}

// ---- DumpIOLogLevel -----------------------------------------------------------------------------

function dumpioLogLevel(u: Upgrade): void {
  const rule = 'logging.dumpio-log-level';
  for (const r of u.named('DumpIOLogLevel')) {
    const before = textOf(r.node);
    const already = u.named('LogLevel').some((x) => vhostOf(x) === vhostOf(r) && /\bdumpio:/i.test(x.node.args));
    let after = '';
    if (already) u.remove(r, rule, 'no longer supported');
    else after = moduleLogLevel(u, r, 'dumpio:trace7', rule);
    u.report(rule, r, 'change', 'DumpIOLogLevel is no longer supported: mod_dumpio always logs at level trace7, shown when LogLevel allows it for dumpio.', before, after);
  }
}

// ---- DebugLevel option ----------------------------------------------------------------------

function debugLevel(u: Upgrade): void {
  const rule = 'logging.debug-level';
  for (const r of u.named('CharsetOptions', 'ExtFilterOptions')) {
    const w = words(r.node);
    const dl = w.find((x) => /^debuglevel=/i.test(x));
    if (!dl) continue;
    const level = parseInt(dl.slice(dl.indexOf('=') + 1), 10);
    const rest = w.filter((x) => x !== dl);
    const module = /^charsetoptions$/i.test(r.node.name) ? 'charset_lite' : 'ext_filter';
    const before = textOf(r.node);
    const lines: string[] = [];
    if (rest.length > 0) lines.push(`${r.node.name} ${rest.join(' ')}`);
    const htaccess = r.doc.kind === 'htaccess';
    if (level > 0 && !htaccess) lines.push(`LogLevel ${module}:debug`);
    if (lines.length > 0) u.replace(r, lines, rule);
    else u.remove(r, rule, 'DebugLevel option removed in 2.4');
    u.report(rule, r, htaccess && level > 0 ? 'manual' : 'change',
      `The DebugLevel option of ${r.node.name} is removed in 2.4; per-module LogLevel (${module}) replaces it.`,
      before, htaccess && level > 0 ? `${lines.join('\n')}\nLogLevel is not allowed in .htaccess: add "LogLevel ${module}:debug" to the server configuration.` : lines.join('\n'));
  }
}

// ---- piped logs -----------------------------------------------------------------------------

/** Shell syntax a 2.2 piped-log command may rely on (2.2 ran it with /bin/sh -c). */
const SHELL = /[|&;<>()$`*?[\]~{}'"\\]|(^|\s)[A-Za-z_][A-Za-z0-9_]*=/;

/** The command of a piped log target ("|cmd", "||cmd", "|$cmd"), or undefined. */
function pipeCommand(target: string): { shell: boolean; cmd: string } | undefined {
  if (!target.startsWith('|')) return undefined;
  if (target.startsWith('|$')) return { shell: true, cmd: target.slice(2) };
  if (target.startsWith('||')) return { shell: false, cmd: target.slice(2) };
  return { shell: false, cmd: target.slice(1) };
}

function pipedLogs(u: Upgrade): void {
  const rule = 'logging.piped-log-shell';
  for (const r of u.named('ErrorLog', 'CustomLog', 'TransferLog', 'GlobalLog')) {
    const target = words(r.node)[0] ?? '';
    const p = pipeCommand(target);
    if (!p || p.shell || target.startsWith('||')) continue;
    if (!SHELL.test(p.cmd.trim())) continue;
    const rewritten = rewritePipe(r.node);
    const before = textOf(r.node);
    if (rewritten === undefined) {
      u.report(rule, r, 'manual', 'This piped log command uses shell syntax: 2.2 ran it with /bin/sh -c, 2.4 runs it directly.', before, 'Write "|$" instead of "|" in front of the command to run it through the shell.');
      continue;
    }
    u.replace(r, [rewritten.trimStart()], rule);
    u.report(rule, r, 'change',
      `The piped log command "${p.cmd.trim()}" uses shell syntax: 2.2 ran piped logs with /bin/sh -c, 2.4 runs them directly unless the pipe is written "|$".`,
      before, rewritten.trim());
  }
}

/** The line with "|" turned into "|$" in the log target, keeping everything else as written. */
function rewritePipe(node: ConfigNode): string | undefined {
  if (node.raw.length !== 1) return undefined;
  const line = node.raw[0]!.replace(/\r$/, '');
  const m = /^(\s*\S+\s+["']?\|)/.exec(line);
  if (!m) return undefined;
  return line.slice(0, m[1]!.length) + '$' + line.slice(m[1]!.length);
}

export const loggingRules: Rule[] = [
  { id: 'logging.rewrite-log', title: 'RewriteLog/RewriteLogLevel become LogLevel rewrite:traceN', spec: ['2.3 LogLevel'], run: rewriteLog },
  { id: 'logging.dumpio-log-level', title: 'DumpIOLogLevel removed (LogLevel dumpio:trace7)', spec: ['2.3 DumpIOLogLevel'], run: dumpioLogLevel },
  { id: 'logging.debug-level', title: 'DebugLevel option of CharsetOptions/ExtFilterOptions removed', spec: ['2.3 DebugLevel option'], run: debugLevel },
  { id: 'logging.piped-log-shell', title: 'Piped logs run without a shell ("|$" keeps the shell)', spec: ['2.5 Piped log commands'], run: pipedLogs },
];

