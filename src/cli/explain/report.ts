// `plume explain`, the report: turns a traced run into what an operator reads — the sections
// and .htaccess files merged (in merge order, with their authorization lines), the effective
// Require tree and mod_access_compat rules with file:line and each one's verdict, the phases
// that ran, the decision and the error-log lines — as text or as JSON.

import * as fs from 'node:fs';
import { parseConfig, type ConfigNode } from '../../server/config/tree.js';
import type { Section } from '../../server/core/sections.js';
import { OK, DECLINED } from '../../server/module.js';
import { statusLine } from '../../server/http/status.js';
import { satisfies } from '../../server/request/satisfy.js';
import authzCore, {
  AUTHZ_DENIED, AUTHZ_DENIED_NO_USER, AUTHZ_GENERAL_ERROR, AUTHZ_GRANTED, AUTHZ_NEUTRAL,
  formatAuthzCommand, maskHas, type AuthzSection, type AuthzStatus, type MethodMask,
} from '../../modules/aaa/mod_authz_core.js';
import accessCompat, { lookupEntry, type AllowDeny } from '../../modules/aaa/mod_access_compat.js';
import { authName, authType } from '../../modules/aaa/mod_authn_core.js';
import { RULEFLAG_NOTMATCH } from '../../modules/mappers/mod_rewrite/parse.js';
import type { ExplainRun, TraceEntry } from './run.js';
import { shortPath } from './run.js';

// ---- the model (also the JSON output) ---------------------------------------------------

export interface SourceLine {
  /** "file:line" (absolute file name). */
  readonly where: string;
  /** The line as written (continuations joined). */
  readonly text: string;
  /** Nesting inside the section (0 = directly in it). */
  readonly depth: number;
}

export interface MergedEntry {
  readonly kind: 'section' | 'htaccess';
  /** `<Directory "/srv/www/">`, `.htaccess`. */
  readonly heading: string;
  readonly where: string;
  /** The authorization lines it holds (Require..., Auth..., Order/Allow/Deny/Satisfy, <Limit>). */
  readonly lines: readonly SourceLine[];
}

export interface Verdict {
  /** "before authentication" (access_checker_ex) or "after authentication" (auth_checker). */
  readonly pass: string;
  /** The provider's or container's own result, before a `not` / <RequireNone> negation. */
  readonly raw: string;
  readonly result: string;
  readonly limitedOut: boolean;
}

export interface TreeNode {
  readonly directive: string;
  readonly where: string | undefined;
  readonly text: string | undefined;
  /** Methods the node applies to, when limited (<Limit>/<LimitExcept>). */
  readonly methods: string | undefined;
  readonly verdicts: readonly Verdict[];
  readonly children: readonly TreeNode[];
}

export interface CompatRule {
  readonly directive: 'Allow' | 'Deny';
  readonly where: string | undefined;
  readonly text: string | undefined;
  readonly matched: boolean;
}

export interface CompatModel {
  readonly order: { readonly value: string; readonly where: string | undefined; readonly text: string | undefined };
  readonly rules: readonly CompatRule[];
  readonly satisfy: { readonly value: string; readonly where: string | undefined; readonly text: string | undefined };
  /** "granted", "denied", "not run" (an earlier phase stopped the request). */
  readonly verdict: string;
}

export interface Phase {
  readonly phase: string;
  readonly module: string;
  readonly outcome: string;
}

export interface Decision {
  /** The final status; null when access is granted and a handler explain does not run decides. */
  readonly status: number | null;
  readonly statusLine: string;
  /** Access granted and the request served (the final status, when known, below 300). */
  readonly granted: boolean;
  /** Who decided, in a few words. */
  readonly by: string;
  /** The phase and the module that produced the final status (translate name [mod_alias],
   *  handler [mod_autoindex]...), when a hook did. */
  readonly phase: string | undefined;
  readonly module: string | undefined;
  readonly reason: string;
  /** Response headers the decision sets (WWW-Authenticate). */
  readonly headers: readonly [string, string][];
  /** Set when the specification's rule made plume differ from Apache 2.4.71. */
  readonly difference: string | undefined;
}

export interface ExplainReport {
  readonly request: {
    readonly method: string; readonly url: string; readonly uri: string;
    /** Set when a fixup (mod_dir's DirectoryIndex) made r the subrequest's resource: the URL
     *  path it ends with. That subrequest's own checks are not traced. */
    readonly redirectedTo: string | undefined;
    /** The request served is an internal redirect of the one asked for (mod_rewrite). */
    readonly internalRedirect: boolean;
    readonly client: string; readonly server: string; readonly filename: string; readonly pathInfo: string;
    readonly user: string | undefined; readonly authType: string | undefined; readonly authName: string | undefined;
  };
  readonly serverRoot: string;
  /** mod_rewrite: every rule and condition tried, in order, and what each hook made of it. */
  readonly rewrite: readonly RewriteStep[];
  readonly merged: readonly MergedEntry[];
  readonly authz: { readonly tree: TreeNode | undefined; readonly forbiddenOnFailure: boolean };
  readonly accessCompat: CompatModel | undefined;
  readonly satisfy: string;
  readonly phases: readonly Phase[];
  readonly decision: Decision;
  readonly errorLog: readonly string[];
  readonly startup: readonly string[];
}

/** One line of the rewriting trace: a rule tried, one of its conditions, or a result. */
export interface RewriteStep {
  readonly kind: 'rule' | 'cond' | 'result';
  /** "per-directory DIR" or "server" (rules and results). */
  readonly context: string;
  readonly where: string | undefined;
  /** The directive as written (rules and conditions). */
  readonly text: string;
  readonly input: string | undefined;
  readonly captures: readonly string[];
  readonly matched: boolean;
  readonly result: string | undefined;
  /** Flags of a matching rule, as configured. */
  readonly flags: string | undefined;
}

function rewriteSteps(run: ExplainRun): RewriteStep[] {
  const out: RewriteStep[] = [];
  // A rule's conditions are evaluated (and recorded) before its outcome is known: they are
  // listed under the rule.
  let conds: RewriteStep[] = [];
  const ctxOf = (perdir: string | undefined): string => (perdir === undefined ? 'server' : `per-directory ${perdir}`);
  for (const e of run.events) {
    if (e.kind === 'rewrite_rule') {
      const rule = e.event.rule;
      const flagged = e.event.matched && e.event.outcome !== 'conditions not met' && rule.flagsText !== '';
      out.push({
        kind: 'rule', context: ctxOf(e.event.perdir), where: `${rule.file}:${rule.line}`,
        text: `RewriteRule ${(rule.flags & RULEFLAG_NOTMATCH) ? '!' : ''}${rule.pattern} ${rule.template.source}${rule.flagsText !== '' ? ' ' + rule.flagsText : ''}`,
        input: e.event.input, captures: e.event.captures, matched: e.event.matched,
        result: e.event.result !== undefined ? `${e.event.outcome}: ${e.event.result}` : e.event.outcome,
        flags: flagged ? rule.flagsText : undefined,
      });
      out.push(...conds);
      conds = [];
    } else if (e.kind === 'rewrite_cond') {
      const c = e.event.cond;
      conds.push({
        kind: 'cond', context: '', where: `${c.file}:${c.line}`, text: `RewriteCond ${c.input.source} ${c.patternText}`,
        input: e.event.skipped ? undefined : e.event.input, captures: e.event.captures, matched: e.event.matched,
        result: e.event.skipped ? 'not evaluated ([OR] already true)' : e.event.matched ? 'true' : 'false', flags: undefined,
      });
    } else if (e.kind === 'rewrite_result') {
      out.push({ kind: 'result', context: ctxOf(e.event.perdir), where: undefined, text: e.event.text, input: undefined, captures: [], matched: true, result: undefined, flags: undefined });
    }
  }
  return out;
}

// ---- source lines -----------------------------------------------------------------------

/** The configuration files' lossless trees, read once per report (for the lines' text). */
class Sources {
  private readonly files = new Map<string, ConfigNode[] | null>();
  private readonly byLine = new Map<string, ConfigNode>();

  nodes(file: string): ConfigNode[] | null {
    let n = this.files.get(file);
    if (n === undefined) {
      try {
        n = parseConfig(fs.readFileSync(file, 'latin1'), file);
      } catch {
        n = null;
      }
      this.files.set(file, n);
      const index = (list: readonly ConfigNode[]): void => {
        for (const x of list) {
          if (x.kind === 'directive' || x.kind === 'section') this.byLine.set(`${x.file}:${x.line}`, x);
          if (x.children) index(x.children);
        }
      };
      if (n) index(n);
    }
    return n;
  }

  node(where: string | undefined): ConfigNode | undefined {
    if (where === undefined) return undefined;
    const colon = where.lastIndexOf(':');
    this.nodes(where.slice(0, colon));
    return this.byLine.get(where);
  }

  text(where: string | undefined): string | undefined {
    const n = this.node(where);
    return n ? nodeText(n) : undefined;
  }
}

function nodeText(n: ConfigNode): string {
  const args = n.args.replace(/\s+/g, ' ').trim();
  if (n.kind === 'section') return `<${n.name}${args !== '' ? ' ' + args : ''}>`;
  return `${n.name}${args !== '' ? ' ' + args : ''}`;
}

/** Directives that take part in authentication and authorization. */
function isAuthLine(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'order' || n === 'allow' || n === 'deny' || n === 'satisfy' || n.startsWith('auth') || n.startsWith('require');
}

/** Sections looked into for such lines (conditions and method limits as written). */
const CONTAINERS = new Set(['limit', 'limitexcept', 'ifmodule', 'ifdefine', 'ifversion', 'ifdirective', 'ifsection', 'iffile']);

function authLines(nodes: readonly ConfigNode[], depth: number, out: SourceLine[]): void {
  for (const n of nodes) {
    if (n.kind === 'directive' && isAuthLine(n.name)) {
      out.push({ where: `${n.file}:${n.line}`, text: nodeText(n), depth });
    } else if (n.kind === 'section' && n.children) {
      const name = n.name.toLowerCase();
      if (!isAuthLine(name) && !CONTAINERS.has(name)) continue;
      const inner: SourceLine[] = [];
      authLines(n.children, depth + 1, inner);
      if (inner.length === 0 && !isAuthLine(name)) continue;
      out.push({ where: `${n.file}:${n.line}`, text: nodeText(n), depth }, ...inner);
    }
  }
}

// ---- building the report ----------------------------------------------------------------

function statusName(s: AuthzStatus | undefined): string {
  switch (s) {
    case AUTHZ_GRANTED: return 'granted';
    case AUTHZ_DENIED: return 'denied';
    case AUTHZ_DENIED_NO_USER: return 'denied (no authenticated user yet)';
    case AUTHZ_NEUTRAL: return 'neutral';
    case AUTHZ_GENERAL_ERROR: return 'error';
    default: return 'none';
  }
}

function hookStatus(st: number): string {
  if (st === OK) return 'OK';
  if (st === DECLINED) return 'DECLINED';
  return statusLine(st).trim();
}

function methodsText(m: MethodMask): string | undefined {
  if (m.except && m.methods.size === 0) return undefined;
  const list = [...m.methods].join(' ');
  return m.except ? `all but ${list}` : list === '' ? 'none' : list;
}

interface Pass {
  readonly afterAuthn: boolean;
  readonly verdicts: Map<AuthzSection, { raw: AuthzStatus; result: AuthzStatus; limitedOut: boolean }>;
}

function passes(events: readonly TraceEntry[]): Pass[] {
  const out: Pass[] = [];
  let cur = new Map<AuthzSection, { raw: AuthzStatus; result: AuthzStatus; limitedOut: boolean }>();
  for (const e of events) {
    if (e.kind === 'authz') cur.set(e.event.section, { raw: e.event.raw, result: e.event.result, limitedOut: e.event.limitedOut });
    else if (e.kind === 'authz_decision') {
      out.push({ afterAuthn: e.event.afterAuthn, verdicts: cur });
      cur = new Map();
    }
  }
  return out;
}

function treeNode(s: AuthzSection, all: readonly Pass[], src: Sources, implicit: boolean): TreeNode {
  const verdicts: Verdict[] = [];
  for (const p of all) {
    const v = p.verdicts.get(s);
    if (!v) continue;
    verdicts.push({
      pass: p.afterAuthn ? 'after authentication' : 'before authentication',
      raw: statusName(v.raw), result: statusName(v.result), limitedOut: v.limitedOut,
    });
  }
  let directive = formatAuthzCommand(s).trim();
  if (implicit) directive += ' (implicit: side-by-side Require lines)';
  return {
    directive,
    where: s.where,
    text: s.provider ? undefined : src.text(s.where),
    methods: methodsText(s.limited),
    verdicts,
    children: s.children.map((c) => treeNode(c, all, src, c.where === undefined && !c.provider && !c.isMerged)),
  };
}

function compatModel(run: ExplainRun, src: Sources): CompatModel | undefined {
  const r = run.r;
  if (accessCompat.index < 0) return undefined;
  const conf = accessCompat.dir(r);
  if (!conf || (conf.orders.length === 0 && conf.allows.length === 0 && conf.denys.length === 0 && conf.satisfy.length === 0)) return undefined;
  const matched = new Set<AllowDeny>();
  let verdict = 'not run';
  for (const e of run.events) {
    if (e.kind === 'access_compat_match') matched.add(e.event.rule);
    else if (e.kind === 'access_compat') verdict = e.event.order === undefined ? 'granted (no rules)' : e.event.granted ? 'granted' : 'denied';
  }
  const rules: CompatRule[] = [];
  const add = (directive: 'Allow' | 'Deny', list: readonly AllowDeny[]): void => {
    for (const a of list) {
      if (!maskHas(a.mask, r.method)) continue;
      const prev = rules.find((x) => x.directive === directive && x.where === a.where && a.where !== undefined);
      if (prev) {
        if (matched.has(a)) rules[rules.indexOf(prev)] = { ...prev, matched: true };
        continue;
      }
      rules.push({ directive, where: a.where, text: src.text(a.where), matched: matched.has(a) });
    }
  };
  const order = lookupEntry(conf.orders, r.method);
  const sat = lookupEntry(conf.satisfy, r.method);
  // The order the rules are read in, as check_dir_access reads them.
  if ((order?.value ?? 'deny,allow') === 'deny,allow') { add('Deny', conf.denys); add('Allow', conf.allows); }
  else { add('Allow', conf.allows); add('Deny', conf.denys); }
  return {
    order: { value: order?.value ?? 'deny,allow (default)', where: order?.where, text: src.text(order?.where) },
    rules,
    satisfy: { value: sat?.value ?? 'All (default)', where: sat?.where, text: src.text(sat?.where) },
    verdict,
  };
}

function mergedEntries(run: ExplainRun, src: Sources): MergedEntry[] {
  const sections = new Map<number, Section>();
  const htaccess: { file: string; at: number; status: number }[] = [];
  for (const e of run.events) {
    if (e.kind === 'section') sections.set(e.event.section.id, e.event.section);
    else if (e.kind === 'htaccess') htaccess.push(e.event);
  }
  const out: MergedEntry[] = [];
  const addHtaccess = (at: number): void => {
    for (const h of htaccess) {
      if (h.at !== at) continue;
      const lines: SourceLine[] = [];
      authLines(src.nodes(h.file) ?? [], 0, lines);
      out.push({ kind: 'htaccess', heading: h.status === OK ? '.htaccess' : `.htaccess (refused: ${statusLine(h.status).trim()}, see the error log)`, where: `${h.file}:1`, lines });
    }
  };
  const ids = run.r.matchedSections;
  for (let i = 0; i < ids.length; i++) {
    addHtaccess(i);
    const sec = sections.get(ids[i]!);
    if (!sec) continue;
    const where = `${sec.file}:${sec.line}`;
    const node = src.node(where);
    const lines: SourceLine[] = [];
    if (node?.children) authLines(node.children, 0, lines);
    out.push({ kind: 'section', heading: node ? nodeText(node) : `${sec.directive} ${sec.path}>`, where, lines });
  }
  addHtaccess(ids.length);
  return out;
}

/** The phases as an operator reads them (httpd's hook names). */
const PHASE_NAMES: Readonly<Record<string, string>> = {
  postReadRequest: 'post-read request', translateName: 'translate name', mapToStorage: 'map to storage',
  headerParser: 'header parser', accessChecker: 'access checker', accessCheckerEx: 'authorization without a user (access_checker_ex)',
  checkUserId: 'authentication', authChecker: 'authorization (auth_checker)', typeChecker: 'type checker', fixups: 'fixups',
  handler: 'handler', insertFilter: 'insert filter', logTransaction: 'log transaction', insertErrorFilter: 'insert error filter',
};

/** "mod_alias.c" -> "mod_alias"; the core's hooks are "core". */
function moduleName(source: string): string {
  const b = source.replace(/\.c$/, '');
  return b === 'http_core' || b === 'core' ? 'core' : b;
}

/** Hook events the access-control part of the report already shows in its own words. */
function shownByAccess(e: { phase: string; module: string }): boolean {
  const m = moduleName(e.module);
  return (e.phase === 'accessChecker' && m === 'mod_access_compat')
    || ((e.phase === 'accessCheckerEx' || e.phase === 'authChecker') && m === 'mod_authz_core')
    || e.phase === 'checkUserId';
}

/** The hook that produced a status (the last one that gave it), if one did. */
function producer(run: ExplainRun, status: number): { phase: string; module: string } | undefined {
  for (let i = run.events.length - 1; i >= 0; i--) {
    const e = run.events[i]!;
    if (e.kind === 'hook' && e.event.status === status) return { phase: PHASE_NAMES[e.event.phase] ?? e.event.phase, module: moduleName(e.event.module) };
  }
  return undefined;
}

/** The AH message the producing module logged for the request, if any. */
function loggedReason(run: ExplainRun, module: string): string | undefined {
  const tag = module.replace(/^mod_/, '');
  for (let i = run.errorLog.length - 1; i >= 0; i--) {
    const l = run.errorLog[i]!;
    if (!l.includes(`[${tag}:`)) continue;
    const m = /\] (AH\d{5}: .*)$/.exec(l);
    if (m) return m[1];
  }
  return undefined;
}

function phasesOf(run: ExplainRun): Phase[] {
  const out: Phase[] = [];
  const r = run.r;
  const any = run.stage === 'lifecycle' && satisfies(r) === 'any';
  let sawAfter = false;
  for (const e of run.events) {
    if (e.kind === 'hook') {
      if (shownByAccess(e.event)) continue;
      const st = e.event.status;
      let outcome = hookStatus(st);
      if (e.event.phase === 'handler' && st === OK) outcome = `OK (${statusLine(r.status).trim()})`;
      out.push({ phase: PHASE_NAMES[e.event.phase] ?? e.event.phase, module: moduleName(e.event.module), outcome });
      continue;
    }
    if (e.kind === 'access_compat') {
      let outcome = e.event.order === undefined ? 'OK (no Order/Allow/Deny rules)' : e.event.granted ? `OK (Order ${e.event.order}: allowed)` : `403 (Order ${e.event.order}: denied)`;
      if (any && e.event.order !== undefined) outcome += e.event.granted ? '; Satisfy Any: enough on its own' : '; Satisfy Any: authentication and Require may still grant';
      out.push({ phase: 'access checker', module: 'mod_access_compat', outcome });
    } else if (e.kind === 'authz_decision') {
      const ev = e.event;
      if (ev.afterAuthn && !sawAfter) {
        sawAfter = true;
        out.push({ phase: 'authentication', module: authType(r) !== undefined ? `AuthType ${authType(r)!}` : 'mod_authn_core', outcome: `OK (user ${r.user ?? '(none)'})` });
      }
      const what = ev.tree === undefined ? 'no Require lines' : `Require tree: ${statusName(ev.result)}`;
      let outcome = `${hookStatus(ev.status)} (${what})`;
      if (ev.compatPrecedence) outcome = `OK (${what}; the Order/Allow/Deny rules granted the request and take precedence)`;
      else if (ev.status === DECLINED) outcome = `DECLINED (${what}: authentication runs)`;
      out.push({ phase: ev.afterAuthn ? 'authorization (auth_checker)' : 'authorization without a user (access_checker_ex)', module: 'mod_authz_core', outcome });
    }
  }
  const last = out[out.length - 1];
  if (!sawAfter && run.stage === 'lifecycle' && last?.outcome.startsWith('DECLINED') === true && run.status !== OK) {
    // Authentication ran after the DECLINED and stopped the request.
    const type = authType(r);
    out.push({
      phase: 'authentication', module: type !== undefined ? `AuthType ${type}` : 'mod_authn_core',
      outcome: `${hookStatus(run.status)} (${r.headersIn.get('Authorization') === undefined ? 'no credentials sent' : `credentials${r.user !== undefined ? ` for user ${r.user}` : ''} not accepted`})`,
    });
  }
  return out;
}

function decisionOf(run: ExplainRun, phases: readonly Phase[]): Decision {
  const r = run.r;
  const headers: [string, string][] = [];
  const wa = r.errHeadersOut.get('WWW-Authenticate') ?? r.headersOut.get('WWW-Authenticate');
  if (wa !== undefined) headers.push(['WWW-Authenticate', wa]);
  const lastDecision = [...run.events].reverse().find((e) => e.kind === 'authz_decision');
  const compat = [...run.events].reverse().find((e) => e.kind === 'access_compat');
  const difference = lastDecision?.kind === 'authz_decision' && lastDecision.event.compatPrecedence
    ? 'specification 5.2 rule 5 / table 5.4: the Order/Allow/Deny rules decide over the Require lines here; Apache 2.4.71 would also apply the Require lines (see docs/differences.md)'
    : undefined;
  const location = r.headersOut.get('Location') ?? r.errHeadersOut.get('Location');
  if (location !== undefined) headers.push(['Location', location]);
  if (run.status === OK) {
    const h = run.handler;
    if (h !== undefined && 'status' in h) {
      // Access was granted; the handler phase produced the final status.
      const st = h.status;
      const p = producer(run, st) ?? (st === 200 ? producer(run, OK) : undefined);
      const logged = p ? loggedReason(run, p.module) : undefined;
      const by = p ? `${p.module} (${p.phase})` : 'the handler';
      const reason = st < 300
        ? `access granted; ${p ? `the ${p.phase} phase [${p.module}]` : 'the handler'} serves the request`
        : `access granted, then ${p ? `the ${p.phase} phase [${p.module}]` : 'the handler'} answered ${st}${logged ? `: ${logged}` : ''}`;
      return { status: st, statusLine: statusLine(st).trim(), granted: st < 300, by, phase: p?.phase, module: p?.module, reason, headers, difference };
    }
    const hs = h !== undefined && 'notRun' in h ? null : handlerStatus(run);
    return {
      status: hs, statusLine: hs !== null ? statusLine(hs).trim() : 'granted', granted: hs === null || hs < 300,
      by: phases.length ? phases[phases.length - 1]!.module : 'no access control', phase: undefined, module: undefined,
      reason: `access granted; ${h !== undefined && 'notRun' in h ? `handler "${h.notRun}" answers (explain does not run it: it would reach another program or server)` : handlerOutlook(run)}`, headers, difference,
    };
  }
  const st = run.status;
  let by = 'core';
  let reason: string;
  const made = producer(run, st);
  if (made !== undefined && run.stage === 'lifecycle' && !['access checker', 'authentication', 'authorization (auth_checker)', 'authorization without a user (access_checker_ex)'].includes(made.phase)) {
    // A phase outside access control ended the request (a Redirect at translation, mod_dir's
    // trailing-slash redirect in fixups, a 404 from map to storage...).
    const logged = loggedReason(run, made.module);
    const what = st >= 300 && st < 400 && location !== undefined ? `redirect to ${location}` : logged ?? statusLine(st).trim();
    return {
      status: st, statusLine: statusLine(st).trim(), granted: false, by: `${made.module} (${made.phase})`, phase: made.phase, module: made.module,
      reason: `the ${made.phase} phase [${made.module}] answered ${st}: ${what}`, headers, difference,
    };
  }
  if (run.stage === 'request') {
    reason = 'the request was refused while it was read, before any configuration section applied';
  } else if (compat?.kind === 'access_compat' && !compat.event.granted && st === 403 && lastDecision === undefined) {
    by = 'mod_access_compat';
    reason = `Order ${compat.event.order ?? ''}: the Allow/Deny rules deny this client`;
  } else if (lastDecision?.kind === 'authz_decision' && lastDecision.event.status === st) {
    by = 'mod_authz_core';
    const ev = lastDecision.event;
    if (st === 401) reason = ev.result === AUTHZ_DENIED_NO_USER ? 'a user is required and none was authenticated' : `user ${r.user ?? ''} is authenticated but the Require tree does not grant them`;
    else if (st === 500 && ev.tree === undefined) reason = 'AuthType is set but there are no Require lines';
    else reason = `the Require tree's result is ${statusName(ev.result)}`;
  } else if (st === 401) {
    by = authType(r) !== undefined ? `authentication (AuthType ${authType(r)!})` : 'authentication';
    reason = r.headersIn.get('Authorization') === undefined ? 'no credentials were sent' : 'the credentials were not accepted';
  } else if (phases.length === 0) {
    const bad = mergedEntries(run, new Sources()).find((m) => m.kind === 'htaccess' && m.heading !== '.htaccess');
    reason = bad !== undefined
      ? `${bad.where.replace(/:1$/, '')} could not be used (see the error log)`
      : 'the request stopped before the access phases (translation or the directory walk: see the error log)';
  } else {
    reason = 'see the error log';
  }
  const phase = by === 'mod_access_compat' ? 'access checker' : by === 'mod_authz_core' ? (lastDecision?.kind === 'authz_decision' && lastDecision.event.afterAuthn ? 'authorization (auth_checker)' : 'authorization without a user (access_checker_ex)') : st === 401 ? 'authentication' : undefined;
  return { status: st, statusLine: statusLine(st).trim(), granted: false, by, phase, module: phase !== undefined ? by.replace(/^authentication.*/, authType(r) !== undefined ? `mod_auth_${authType(r)!.toLowerCase()}` : 'mod_authn_core') : undefined, reason, headers, difference };
}

/** After access is granted the handler decides; for a plain file it is the default handler's 200. */
function handlerStatus(run: ExplainRun): number | null {
  const r = run.r;
  if (r.handler !== undefined) return null;
  if (r.finfo?.isFile() && r.pathInfo === '') return 200;
  if (r.finfo === null) return 404;
  return null;
}

function handlerOutlook(run: ExplainRun): string {
  const r = run.r;
  if (r.handler !== undefined) return `handler "${r.handler}" answers`;
  if (r.finfo?.isFile() && r.pathInfo === '') return 'the default handler serves the file';
  if (r.finfo === null) return 'no such file: 404 unless a handler serves the URL';
  if (r.finfo?.isDirectory()) return 'a directory: mod_dir / mod_autoindex answer';
  return 'the handler answers';
}

export function buildReport(run: ExplainRun, url: string): ExplainReport {
  const r = run.r;
  const src = new Sources();
  const all = passes(run.events);
  const conf = authzCore.index >= 0 ? authzCore.dir(r) : undefined;
  const root = conf?.section;
  const phases = phasesOf(run);
  const s = r.server;
  return {
    request: {
      method: r.method, url, uri: run.uri !== '' ? run.uri : r.uri,
      redirectedTo: run.uri !== '' && r.uri !== run.uri ? r.uri : undefined,
      internalRedirect: r.prev !== null,
      client: r.connection.remoteIp.includes(':') ? `[${r.connection.remoteIp}]:${r.connection.remotePort}` : `${r.connection.remoteIp}:${r.connection.remotePort}`,
      server: s.isVirtual ? `${s.serverHostname ?? ''} (<VirtualHost> at ${s.defnFile}:${s.defnLine})` : `${s.serverHostname ?? ''} (main server)`,
      filename: r.filename, pathInfo: r.pathInfo, user: r.user,
      authType: run.stage === 'lifecycle' ? authType(r) : undefined,
      authName: run.stage === 'lifecycle' ? authName(r) : undefined,
    },
    serverRoot: run.ctx.serverRoot,
    rewrite: rewriteSteps(run),
    merged: mergedEntries(run, src),
    authz: {
      tree: root ? treeNode(root, all, src, root.where === undefined && !root.isMerged) : undefined,
      forbiddenOnFailure: conf?.forbiddenOnFail === true,
    },
    accessCompat: compatModel(run, src),
    satisfy: run.stage === 'lifecycle' ? satisfies(r) : 'nospec',
    phases,
    decision: decisionOf(run, phases),
    errorLog: run.errorLog,
    startup: run.startup,
  };
}

// ---- text ---------------------------------------------------------------------------------

function loc(root: string, where: string | undefined): string {
  if (where === undefined) return '';
  const colon = where.lastIndexOf(':');
  return `${shortPath(root, where.slice(0, colon))}:${where.slice(colon + 1)}`;
}

function verdictText(vs: readonly Verdict[], twoPasses: boolean): string {
  if (vs.length === 0) return 'not evaluated';
  return vs.map((v) => {
    let t = v.limitedOut ? `${v.result} (limited to other methods)` : v.raw !== v.result ? `${v.raw} -> ${v.result} (negated)` : v.result;
    if (twoPasses) t = `${v.pass}: ${t}`;
    return t;
  }).join('; ');
}

/** Rows of columns, each column but the last padded to its widest cell (capped). */
function table(rows: readonly (readonly string[])[], out: string[]): void {
  const widths: number[] = [];
  for (const row of rows) row.forEach((c, i) => { if (i < row.length - 1) widths[i] = Math.min(Math.max(widths[i] ?? 0, c.length), 64); });
  for (const row of rows) {
    out.push(row.map((c, i) => (i < row.length - 1 ? c.padEnd(widths[i] ?? 0) : c)).join('  ').trimEnd());
  }
}

export function renderText(rep: ExplainReport): string {
  const root = rep.serverRoot;
  const out: string[] = [];
  const q = rep.request;
  out.push(`${q.method} ${q.url} from ${q.client}`);
  out.push(`  server:   ${q.server}`);
  out.push(`  URL path: ${q.uri}`);
  if (q.redirectedTo !== undefined) {
    out.push(q.internalRedirect
      ? `  served as ${q.redirectedTo} (an internal redirect, mod_rewrite's; the rest of this report is about it)`
      : `  served as ${q.redirectedTo} (a fixup's subrequest, e.g. DirectoryIndex; its own checks are not traced)`);
  }
  if (q.filename !== '') out.push(`  file:     ${q.filename}${q.pathInfo !== '' ? ` (path info ${q.pathInfo})` : ''}`);
  if (q.authType !== undefined) out.push(`  auth:     AuthType ${q.authType}${q.authName !== undefined ? `, AuthName "${q.authName}"` : ''}${q.user !== undefined ? `, user ${q.user}` : ''}`);
  out.push(`  (file:line relative to ServerRoot ${root})`);
  out.push('');

  if (rep.rewrite.length > 0) {
    out.push('Rewriting (mod_rewrite), every rule tried, in order:');
    const rows: string[][] = [];
    let lastContext = '';
    for (const st of rep.rewrite) {
      if (st.kind !== 'cond' && st.context !== lastContext) {
        rows.push([`  [${st.context}]`, '', '']);
        lastContext = st.context;
      }
      if (st.kind === 'result') { rows.push([`    => ${st.text}`, '', '']); continue; }
      const cap = st.captures.length > 0 ? `  captures ${st.captures.map((c, i) => `${st.kind === 'cond' ? '%' : '$'}${i}=${JSON.stringify(c)}`).join(' ')}` : '';
      if (st.kind === 'rule') {
        rows.push([`    ${st.text}`, loc(root, st.where), `input '${st.input ?? ''}' -> ${st.result ?? ''}${cap}${st.flags !== undefined ? `  flags ${st.flags}` : ''}`]);
      } else {
        rows.push([`      ${st.text}`, loc(root, st.where), st.input === undefined ? `-> ${st.result ?? ''}` : `input '${st.input}' -> ${st.result ?? ''}${cap}`]);
      }
    }
    table(rows, out);
    out.push('');
  }

  out.push('Sections merged, in merge order:');
  if (rep.merged.length === 0) out.push('  (none: the server-wide configuration only)');
  const secRows: string[][] = [];
  rep.merged.forEach((m, i) => {
    if (m.kind === 'htaccess') secRows.push([`  ${i + 1}. ${loc(root, m.where).replace(/:1$/, '')}${m.heading !== '.htaccess' ? ' ' + m.heading.slice(10) : ''}`]);
    else secRows.push([`  ${i + 1}. ${m.heading}`, loc(root, m.where)]);
    for (const l of m.lines) secRows.push([`       ${'  '.repeat(l.depth)}${l.text}`, loc(root, l.where)]);
  });
  table(secRows, out);
  out.push('');

  const twoPasses = new Set(flatVerdicts(rep.authz.tree).map((v) => v.pass)).size > 1;
  out.push('Require tree (mod_authz_core), as merged, with each verdict:');
  if (!rep.authz.tree) out.push('  (no Require lines apply)');
  else {
    const rows: string[][] = [];
    treeRows(rep.authz.tree, 1, root, twoPasses, rows);
    table(rows, out);
  }
  if (rep.authz.forbiddenOnFailure) out.push('  AuthzSendForbiddenOnFailure On');
  out.push('');

  const c = rep.accessCompat;
  if (c) {
    out.push('Order/Allow/Deny (mod_access_compat; the most specific section using them wins whole):');
    const rows: string[][] = [];
    rows.push([`  Order ${c.order.value}`, loc(root, c.order.where), '']);
    for (const rule of c.rules) rows.push([`  ${rule.text ?? rule.directive}`, loc(root, rule.where), rule.matched ? '-> matches' : '-> no match']);
    rows.push([`  Satisfy ${c.satisfy.value}`, loc(root, c.satisfy.where), '']);
    table(rows, out);
    out.push(`  -> ${c.verdict}`);
    out.push('');
  }

  out.push('Phases, as the server ran them:');
  if (rep.phases.length === 0) out.push('  (no access phase ran)');
  for (const p of rep.phases) out.push(`  ${p.phase} [${p.module}]: ${p.outcome}`);
  out.push('');

  const d = rep.decision;
  out.push(`Decision: ${d.statusLine} (${d.granted || d.phase !== undefined && d.reason.startsWith('access granted') ? d.reason : `${d.by}: ${d.reason}`})`);
  for (const [n, v] of d.headers) out.push(`  ${n}: ${v}`);
  if (d.difference !== undefined) out.push(`  DIFFERENCE: ${d.difference}`);
  out.push('');
  out.push('Error log:');
  if (rep.errorLog.length === 0) out.push('  (nothing at this LogLevel)');
  for (const l of rep.errorLog) out.push(`  ${l}`);
  if (rep.startup.length) {
    out.push('');
    out.push('Startup messages:');
    for (const l of rep.startup) out.push(`  ${l}`);
  }
  return out.join('\n') + '\n';
}

function flatVerdicts(n: TreeNode | undefined): Verdict[] {
  if (!n) return [];
  return [...n.verdicts, ...n.children.flatMap(flatVerdicts)];
}

function treeRows(n: TreeNode, depth: number, root: string, twoPasses: boolean, rows: string[][]): void {
  const pad = '  '.repeat(depth);
  const methods = n.methods !== undefined ? ` [methods: ${n.methods}]` : '';
  rows.push([`${pad}${n.directive}${methods}`, loc(root, n.where), `-> ${verdictText(n.verdicts, twoPasses)}`]);
  for (const c of n.children) treeRows(c, depth + 1, root, twoPasses, rows);
}
