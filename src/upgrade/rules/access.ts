// Access control (specification 5.2, 5.3, 5.4 and issue item 4): Order/Allow/Deny/Satisfy and
// 2.2's Require lines become 2.4 Require lines with the decisions the 2.2 server made.
//
// How: every request a configuration can receive passes an ordered list of sections (the
// directory walk with .htaccess files, <Files>, <Location>); along it 2.2 merged the host rules
// (replaced whole by a section that sets any of Order/Allow/Deny), Satisfy (inherited method
// by method), Require (replaced as a list) and AuthType (inherited). The rule walks probe
// requests through every section, computes 2.2's merged state after each one (access22.ts),
// and writes in each section that changed it one Require block expressing the full decision
// (2.4 replaces the Require lines of the parent section, AuthMerging Off). A section whose 2.2
// decision depends on which other sections apply gets no single block: mod_access_compat is
// kept there and a manual finding says why. A final pass replays every probe on the 2.4 result.

import type { ConfigNode } from '../../server/config/tree.js';
import { splitWords } from '../../server/config/lexer.js';
import type { Doc } from '../doc.js';
import { indentStep } from '../doc.js';
import type { Rule } from '../model.js';
import { blockText, is, readBy24, textOf, type Upgrade } from '../engine.js';
import {
  apply22, decisionFormula, hostFormula, INITIAL_22, merge22, methodClasses, orderFor, requireAtom, requiresFor, satisfyFor, htaccessRead22,
  type State22,
} from '../access22.js';
import { and, atom, or, render, TRUE, type Formula } from '../require.js';
import {
  buildModel, maskHas, walkRequest, MODEL_22,
  type AccessSection, type Item, type Model, type ServerModel, type WalkRequest,
} from '../scope.js';

const COMPAT = new Set(['order', 'allow', 'deny', 'satisfy']);
const AUTHORITATIVE = new Set(['authzuserauthoritative', 'authzgroupfileauthoritative', 'authzdbmauthoritative', 'authzownerauthoritative',
  'authzldapauthoritative', 'authzdbdauthoritative']);
/** Require providers 2.2 did not have: a section using them is written for 2.4 already. */
const MODERN = new Set(['all', 'ip', 'host', 'local', 'env', 'expr', 'method', 'forward-dns', 'not']);
const CONTAINERS = new Set(['requireall', 'requireany', 'requirenone']);

interface SecInfo {
  readonly sec: AccessSection;
  readonly compat: Item[];
  readonly requires: Item[];
  readonly authoritative: Item[];
  readonly authType: Item[];
  /** Uses 2.4 authorization (containers or 2.4 providers). */
  readonly modern: boolean;
  /** Changes 2.2's host rules, Satisfy or Require list. */
  readonly changes: boolean;
}

function hasContainers(nodes: readonly ConfigNode[]): boolean {
  for (const n of nodes) {
    if (n.kind !== 'section') continue;
    const l = n.name.toLowerCase();
    if (CONTAINERS.has(l)) return true;
    if (/^(directory|directorymatch|files|filesmatch|location|locationmatch|virtualhost)$/.test(l)) continue;
    if (hasContainers(n.children ?? [])) return true;
  }
  return false;
}

function describe(sec: AccessSection): SecInfo {
  const compat: Item[] = [];
  const requires: Item[] = [];
  const authoritative: Item[] = [];
  const authType: Item[] = [];
  let modern = false;
  for (const i of sec.items) {
    const n = i.node.name.toLowerCase();
    if (COMPAT.has(n)) compat.push(i);
    else if (n === 'require') {
      requires.push(i);
      if (MODERN.has((splitWords(i.node.args)[0] ?? '').toLowerCase())) modern = true;
    } else if (AUTHORITATIVE.has(n)) authoritative.push(i);
    else if (n === 'authtype') authType.push(i);
  }
  const nodes = sec.node ? sec.node.children ?? [] : sec.doc.nodes;
  if (hasContainers(nodes)) modern = true;
  return { sec, compat, requires, authoritative, authType, modern, changes: compat.length > 0 || requires.length > 0 };
}

// ---- probes -------------------------------------------------------------------------------

interface Probe {
  readonly server: ServerModel;
  readonly req: WalkRequest;
  readonly label: string;
  /** A regex section is assumed to match (a request that may never come). */
  readonly forced?: AccessSection;
}

function urlFor(server: ServerModel, dir: string): string | undefined {
  const root = server.documentRoot;
  if (dir === root) return '';
  if (dir.startsWith(root + '/')) return dir.slice(root.length);
  for (const a of server.aliases) {
    if (a.regex) continue;
    const t = a.target.replace(/\/$/, '');
    if (dir === t) return a.url.replace(/\/$/, '');
    if (dir.startsWith(t + '/')) return a.url.replace(/\/$/, '') + dir.slice(t.length);
  }
  return undefined;
}

function sampleName(pattern: string): string {
  return pattern.replace(/\[!?\^?([^\]])[^\]]*\]/g, '$1').replace(/[*?]/g, 'x') || 'x';
}

const PROBE = '__plume_probe__.html';

function makeProbes(model: Model): Probe[] {
  const out: Probe[] = [];
  for (const server of model.servers) {
    const name = server.vhost ? `<VirtualHost ${server.vhost.args}>${server.names[0] ? ` ${server.names[0]}` : ''}` : 'the main server';
    const dirUrls = new Set<string>(['']);
    const files = new Set<string>();
    const fileProbes: string[] = [];
    const plainDirs = server.directories.filter((d) => !d.regex);
    for (const d of plainDirs) {
      const arg = d.glob ? '/' + d.arg.split('/').slice(1).map(sampleName).join('/') : d.arg;
      const url = urlFor(server, arg);
      if (url !== undefined) dirUrls.add(url);
      else if (!server.vhost || d.vhost === server.vhost) fileProbes.push(arg === '/' ? '/' + PROBE : `${arg}/${PROBE}`);
    }
    for (const dir of model.htaccess.keys()) {
      const url = urlFor(server, dir);
      if (url !== undefined) dirUrls.add(url);
      else if (!server.vhost) fileProbes.push(`${dir}/${PROBE}`);
    }
    const allFiles = [...server.files, ...plainDirs.flatMap((d) => d.nested), ...[...model.htaccess.values()].flatMap((h) => h.nested)];
    /** File names that are exactly a <Files> pattern: a <FilesMatch> matches them or never. */
    const literal = new Set<string>();
    for (const f of allFiles) {
      if (f.regex) continue;
      files.add(sampleName(f.arg));
      if (!/[*?[]/.test(f.arg)) literal.add(f.arg);
    }
    const urls: string[] = [];
    for (const u of dirUrls) {
      urls.push(`${u}/${PROBE}`);
      for (const f of files) urls.push(`${u}/${f}`);
    }
    for (const l of server.locations) {
      if (l.regex) continue;
      const base = l.arg.replace(/\/$/, '');
      urls.push(l.arg, `${base}/${PROBE}`);
      for (const f of files) urls.push(`${base}/${f}`);
    }
    const regexes = [...server.directories.filter((d) => d.regex), ...allFiles.filter((f) => f.regex), ...server.locations.filter((l) => l.regex)];
    const regexSet = new Set(regexes);
    for (const url of new Set(urls)) {
      out.push({ server, req: { url, exclude: regexSet }, label: `${url} on ${name}` });
      const baseName = url.slice(url.lastIndexOf('/') + 1);
      for (const r of regexes) {
        if (r.kind === 'files' && literal.has(baseName) && !r.regex!.test(baseName)) continue; // that file never matches it
        out.push({ server, req: { url, force: new Set([r]), exclude: regexSet }, forced: r, label: `${url} on ${name} (when ${r.node ? `<${r.node.name} ${r.node.args}>` : r.arg} matches)` });
      }
    }
    for (const f of fileProbes) out.push({ server, req: { url: '', file: f, exclude: regexSet }, label: `${f} on ${name}` });
  }
  return out;
}

// ---- rendering a state --------------------------------------------------------------------------

/** The 2.4 block for a merged 2.2 state (method classes split with <Limit>/<LimitExcept>). */
export function renderState(s: State22, step: string): string[] {
  const classes = methodClasses(s);
  const forms = classes.map((m) => render(decisionFormula(s, m === '*' ? '*OTHER*' : m), step));
  const keys = forms.map((f) => f.join('\n'));
  if (new Set(keys).size === 1) return forms[0]!;
  const groups = new Map<string, string[]>();
  classes.forEach((m, i) => { const g = groups.get(keys[i]!) ?? []; g.push(m); groups.set(keys[i]!, g); });
  const named = classes.filter((m) => m !== '*');
  const out: string[] = [];
  for (const [k, ms] of groups) {
    const body = k.split('\n').map((l) => step + l);
    if (ms.includes('*')) {
      const others = named.filter((m) => !ms.includes(m));
      out.push(`<LimitExcept ${others.join(' ')}>`, ...body, '</LimitExcept>');
    } else {
      out.push(`<Limit ${ms.join(' ')}>`, ...body, '</Limit>');
    }
  }
  return out;
}

function methodsText(f: (m: string) => Formula, methods: ReadonlySet<string>): string {
  const m = [...methods][0] ?? '*';
  return norm(render(f(m === '*' ? '*OTHER*' : m))).replace(/\n/g, '; ');
}

function norm(lines: readonly string[]): string {
  return lines.map((l) => l.trim().replace(/\s+/g, ' ')).join('\n');
}

/** A short account of what 2.2 decided, for findings. */
function account(s: State22): string {
  const parts: string[] = [];
  for (const m of methodClasses(s)) {
    const meth = m === '*' ? '*OTHER*' : m;
    const h = hostFormula(s.host, meth);
    const host = h.t === 'true' ? 'every client' : h.t === 'false' ? 'no client' : `clients matching ${render(h).map((l) => l.replace(/^\s*/, '')).filter((l) => l.startsWith('Require')).map((l) => l.slice(8)).join(', ')}`;
    const reqs = requiresFor(s, meth);
    const sat = satisfyFor(s, meth);
    let d: string;
    if (reqs.length === 0) d = `allowed ${host}`;
    else if (sat === 'any') d = `${host} without login, anyone else after login (Satisfy Any)`;
    else d = `${host}, and only after login (Satisfy All)`;
    const prefix = m === '*' ? (methodClasses(s).length > 1 ? 'other methods: ' : '') : `${m}: `;
    parts.push(prefix + d + (s.host ? ` [Order ${orderFor(s.host, meth)}]` : ''));
  }
  return parts.join('; ');
}

// ---- the rule ---------------------------------------------------------------------------------

/** A <Files> section whose 2.2 decision depends on the directory: its own block for requests
 *  no listed directory applies to, and a copy of the section nested in each listed directory
 *  (2.4 merges <Files> nested in a <Directory> after the top-level ones, the deepest last). */
interface PerDir {
  kind: 'perdir';
  state: State22;
  lines: string[];
  copies: Map<AccessSection, { state: State22; lines: string[] }>;
}

type Final =
  | { kind: 'block'; state: State22; lines: string[] }
  | PerDir
  | { kind: 'merge'; op: 'and' | 'or'; user: State22; lines: string[] }
  | { kind: 'kept' }
  | { kind: 'opaque' };

/** 2.4's authorization for a request passing these sections (AuthMerging Off: a section's
 *  Require lines replace what came before; And/Or: combine with it). */
function replay24(chain: readonly AccessSection[], finals: ReadonlyMap<AccessSection, Final>):
  { formula: ((m: string) => Formula) | undefined; used: State22[]; last: AccessSection | undefined } | 'unverifiable' {
  let cur: ((m: string) => Formula) | undefined;
  const used: State22[] = [];
  let last: AccessSection | undefined;
  for (const sec of chain) {
    const f = finals.get(sec);
    if (!f) continue;
    if (f.kind === 'kept' || f.kind === 'opaque') return 'unverifiable';
    last = sec;
    if (f.kind === 'block' || f.kind === 'perdir') {
      let st = f.state;
      if (f.kind === 'perdir') {
        // The copy nested in the last directory of the walk that has one, else the section's own.
        for (const d of chain) { const c = f.copies.get(d); if (c) st = c.state; }
      }
      used.push(st);
      cur = (m) => decisionFormula(st, m);
    } else {
      const prev = cur;
      const u = f.user;
      const op = f.op;
      used.push(u);
      cur = (m) => {
        const mine = decisionFormula(u, m);
        const p = prev?.(m);
        return p === undefined ? mine : op === 'and' ? and([p, mine]) : or([p, mine]);
      };
    }
  }
  return { formula: cur, used, last };
}

function accessRule(u: Upgrade): void {
  const model = buildModel(u, MODEL_22);
  const infos = new Map<AccessSection, SecInfo>();
  for (const s of model.sections) infos.set(s, describe(s));
  const anyCompat = [...infos.values()].some((i) => i.compat.length > 0 && !i.sec.dual);
  const anyDbmGroup = [...infos.values()].some((i) => i.sec.items.some((x) => is(x.node, 'AuthDBMGroupFile')))
    && [...infos.values()].some((i) => i.requires.some((r) => /^group\b/i.test(r.node.args.trim())));
  const anyModern = [...infos.values()].some((i) => i.modern && !i.sec.dual);
  const anyAuthType = [...infos.values()].some((i) => i.authType.length > 0);
  if (!anyCompat && !anyDbmGroup && !(anyAuthType && !anyModern)) return;

  const step = (s: AccessSection): string => (s.node ? indentStep(s.node) : '    ');
  const probes = makeProbes(model);
  const chains: { probe: Probe; chain: AccessSection[]; states: State22[] }[] = [];
  for (const p of probes) {
    const chain = walkRequest(model, p.server, p.req, htaccessRead22).chain;
    const states: State22[] = [];
    let s = INITIAL_22;
    for (const sec of chain) { s = apply22(s, sec); states.push(s); }
    chains.push({ probe: p, chain, states });
  }
  // <Proxy> sections decide proxy requests on their own (no directory applies to them).
  for (const sec of model.sections) {
    if (sec.kind !== 'proxy') continue;
    const label = `proxy requests matching <${sec.node!.name} ${sec.node!.args}>`;
    chains.push({ probe: { server: model.main, req: { url: '' }, label }, chain: [sec], states: [apply22(INITIAL_22, sec)] });
  }

  // Sections left alone: written for both versions, or 2.4 authorization mixed with 2.2's.
  const kept = new Map<AccessSection, string>();
  const opaque = new Set<AccessSection>();
  for (const i of infos.values()) if (i.sec.dual) opaque.add(i.sec);
  const mixedReported = new Set<AccessSection>();
  for (const c of chains) {
    const modern = c.chain.filter((s) => infos.get(s)!.modern && !s.dual);
    const compat = c.chain.filter((s) => infos.get(s)!.compat.length > 0 && !s.dual);
    if (modern.length === 0 || compat.length === 0) continue;
    for (const s of compat) if (!kept.has(s)) kept.set(s, `mixed with 2.4 Require lines (${modern.map(where).join(', ')}) for ${c.probe.label}`);
    for (const m of modern) {
      if (mixedReported.has(m)) continue;
      mixedReported.add(m);
      const at = m.node ?? firstNode(m);
      u.report('access.mixed', { doc: m.doc, line: at?.line ?? 0 }, 'manual',
        'This section uses 2.4 authorization (Require all/ip/host/local/env or <RequireAll>/<RequireAny>/<RequireNone>) while sections merged with it for the same requests use '
        + `Order/Allow/Deny (${compat.map(where).join(', ')}). When a merged configuration holds both kinds, the mod_access_compat directives take precedence over the mod_authz_host ones `
        + '(specification 5.2 rule 5): e.g. "Order deny,allow / Deny from all" in <Directory> and "Require local" in <Location> deny the local client (403), while "Require all denied" in <Directory> '
        + 'and "Order deny,allow / Deny from all / Allow from 127.0.0.1" in <Location> let it in (200). Those sections are left unchanged and mod_access_compat stays loaded.',
        at ? textOf(at) : '', 'Rewrite the Order/Allow/Deny sections by hand into Require lines, then remove mod_access_compat.');
    }
  }

  // What each section should say in 2.4, from the probes where it has the last word.
  interface Want { lines: string[]; state: State22; label: string; before: State22 }
  const desired = new Map<AccessSection, Map<string, Want>>();
  const seenAt = new Map<AccessSection, Want>();
  const addTo = (m: Map<AccessSection, Map<string, Want>>, s: AccessSection, w: Want): void => {
    const d = m.get(s) ?? new Map<string, Want>();
    const k = norm(w.lines);
    if (!d.has(k)) d.set(k, w);
    m.set(s, d);
  };
  /** Every probe's view of a section that has the last word (for the AuthMerging form). */
  const lastWord = new Map<AccessSection, Want[]>();
  /** The walks in which a section has the last word (for the nested <Files> form). */
  const lastWordChains = new Map<AccessSection, { chain: AccessSection[]; idx: number; want: Want }[]>();
  const authNeeds = new Map<AccessSection, Map<string, Want>>();
  // Requests that surely come decide first; those that exist only if a regex section matches
  // decide for the sections no other request reaches.
  const decided = new Set<AccessSection>();
  const ordered = [...chains.filter((c) => !c.probe.forced), ...chains.filter((c) => c.probe.forced)];
  let firstForced = true;
  for (const c of ordered) {
    if (c.probe.forced && firstForced) {
      firstForced = false;
      for (const s of desired.keys()) decided.add(s);
    }
    let last = -1;
    for (let i = 0; i < c.chain.length; i++) {
      const sec = c.chain[i]!;
      const inf = infos.get(sec)!;
      const before = i > 0 ? c.states[i - 1]! : INITIAL_22;
      if (inf.changes || inf.modern) {
        if (!seenAt.has(sec)) seenAt.set(sec, { lines: renderState(c.states[i]!, step(sec)), state: c.states[i]!, label: c.probe.label, before });
        last = i;
      } else if (inf.authType.length > 0 && last < 0) {
        addTo(authNeeds, sec, { lines: renderState(c.states[i]!, step(sec)), state: c.states[i]!, label: c.probe.label, before });
      }
    }
    if (last >= 0 && !decided.has(c.chain[last]!)) {
      const sec = c.chain[last]!;
      const final = c.states[c.states.length - 1] ?? INITIAL_22;
      const w = { lines: renderState(final, step(sec)), state: final, label: c.probe.label, before: last > 0 ? c.states[last - 1]! : INITIAL_22 };
      addTo(desired, sec, w);
      const lc = lastWordChains.get(sec) ?? [];
      lc.push({ chain: c.chain, idx: last, want: w });
      lastWordChains.set(sec, lc);
      const l = lastWord.get(sec) ?? [];
      l.push(w);
      lastWord.set(sec, l);
    }
  }

  /** The AuthMerging form for a section that only sets Require lines: 2.2 combined the host
   *  rules it inherits with its Require lines (Satisfy All: both, Any: either), which 2.4
   *  says with "AuthMerging And|Or" next to the Require lines alone. */
  const mergeForm = (s: AccessSection): Final | undefined => {
    const inf = infos.get(s)!;
    const views = lastWord.get(s) ?? [];
    if (inf.compat.length > 0 || inf.requires.length === 0 || views.length === 0) return undefined;
    let op: 'and' | 'or' | undefined;
    for (const v of views) {
      if ((v.before.requires ?? []).length > 0) return undefined;
      for (const m of methodClasses(v.state)) {
        const sat = satisfyFor(v.state, m === '*' ? '*OTHER*' : m) === 'any' ? 'or' : 'and';
        if (op !== undefined && op !== sat) return undefined;
        op = sat;
      }
    }
    const final = views[0]!.state;
    const user: State22 = { ...INITIAL_22, requires: final.requires, groupFile: final.groupFile, dbmGroupFile: final.dbmGroupFile };
    const lines = [`AuthMerging ${op === 'or' ? 'Or' : 'And'}`, ...renderState(user, step(s))];
    return { kind: 'merge', op: op ?? 'and', user, lines };
  };
  /** Whether the host rules a Require-only section inherits ever matter (else plain Require lines do). */
  const inheritsHostRules = (s: AccessSection): boolean =>
    (lastWord.get(s) ?? []).some((v) => methodClasses(v.state).some((m) => hostFormula(v.before.host, m === '*' ? '*OTHER*' : m).t !== 'true'));

  /** The nested form for a <Files>/<FilesMatch> section whose 2.2 decision depends on the
   *  directory (its host rules merged with the authentication of a <Directory>, WordPress
   *  style): the decision for each directory that changes it is written in a copy of the
   *  section nested in that directory. Undefined where that cannot reproduce 2.2 (the walks
   *  disagree within one directory, another <Files> section decides after this one...). */
  const perDirForm = (s: AccessSection): { final: PerDir } | { why: string } => {
    if (s.kind !== 'files' || !s.node) return { why: 'not a <Files> section' };
    const views = lastWordChains.get(s) ?? [];
    if (views.length === 0) return { why: 'no request reaches it' };
    const isKey = (x: AccessSection): boolean => (x.kind === 'directory' || x.kind === 'htaccess') && x.node !== s.node
      && (infos.get(x)!.changes || infos.get(x)!.authType.length > 0);
    interface Group { key: AccessSection | undefined; lines: string; want: Want; chains: AccessSection[][] }
    const groups = new Map<AccessSection | undefined, Group>();
    for (const v of views) {
      let key: AccessSection | undefined;
      for (let i = 0; i < v.idx; i++) if (isKey(v.chain[i]!)) key = v.chain[i]!;
      // Another <Files> section deciding after this one in 2.2 would be overridden by a copy.
      if (v.chain.slice(v.idx + 1).some((x) => x.kind === 'files' && (infos.get(x)!.changes || infos.get(x)!.modern))) return { why: 'another <Files> section decides after it' };
      if (key && s.owner && v.chain.indexOf(key) < v.chain.indexOf(s.owner)) return { why: `the directory deciding (${where(key)}) comes before the one holding it` };
      if (key && key.kind === 'directory' && !key.node) return { why: 'no section to nest in' };
      const k = norm(v.want.lines);
      const g = groups.get(key);
      if (g && g.lines !== k) return { why: `within ${key ? where(key) : 'the same directories'} it decides "${g.lines.replace(/\n/g, '; ')}" for some requests and "${k.replace(/\n/g, '; ')}" for others` };
      if (g) g.chains.push(v.chain); else groups.set(key, { key, lines: k, want: v.want, chains: [v.chain] });
    }
    const rank = (x: AccessSection): number => (x.kind === 'directory' && x.regex ? 1e6 : 0)
      + (x.kind === 'htaccess' ? (x.arg === '/' ? 1 : x.arg.split('/').length) * 10 + 5 : x.depth * 10);
    const keyed = [...groups.values()].filter((g) => g.key).sort((a, b) => rank(a.key!) - rank(b.key!) || a.key!.order - b.key!.order);
    const base = groups.get(undefined) ?? keyed[0]!;
    const copies = new Map<AccessSection, { state: State22; lines: string[] }>();
    for (const g of keyed) {
      if (g === base) continue;
      // What applies without a copy here: the nearest copy on the way, else the section's own.
      const inherited = g.chains.map((ch) => {
        let got = base.lines;
        for (const x of ch) { const c = copies.get(x); if (c) got = norm(c.lines); }
        return got;
      });
      if (inherited.every((x) => x === g.lines)) continue;
      copies.set(g.key!, { state: g.want.state, lines: g.want.lines });
    }
    // The base group's walks must not pass a directory that got a copy.
    if (base.key === undefined || keyed.includes(base)) {
      for (const ch of base.chains) if (ch.some((x) => copies.has(x))) return { why: 'a directory with its own decision lies above the one deciding by default' };
    }
    if (copies.size === 0) return { why: 'no directory changes its decision' };
    return { final: { kind: 'perdir', state: base.want.state, lines: base.want.lines, copies } };
  };

  // Decide each section's 2.4 form.
  const finals = new Map<AccessSection, Final>();
  const decide = (): void => {
    finals.clear();
    for (const inf of infos.values()) {
      const s = inf.sec;
      if (opaque.has(s) || (inf.modern && !inf.compat.length)) { finals.set(s, { kind: 'opaque' }); continue; }
      if (!inf.changes) continue;
      if (kept.has(s)) { finals.set(s, { kind: 'kept' }); continue; }
      if (inf.compat.length === 0 && inheritsHostRules(s)) {
        const mf = mergeForm(s);
        if (mf) { finals.set(s, mf); continue; }
      }
      const d = desired.get(s);
      let nested = '';
      if (d && d.size > 1 && s.kind === 'files') {
        const pd = perDirForm(s);
        if ('final' in pd) { finals.set(s, pd.final); continue; }
        nested = `; no copy of it nested in the directories gives those decisions either (${pd.why})`;
      }
      if (d && d.size > 1) {
        const list = [...d.values()];
        kept.set(s, `its 2.2 decision depends on which other sections apply: ${list.slice(0, 2).map((x) => `for ${x.label} it is "${norm(x.lines).replace(/\n/g, '; ')}"`).join(', but ')}${nested}`);
        finals.set(s, { kind: 'kept' });
        continue;
      }
      const w = d ? [...d.values()][0]! : seenAt.get(s);
      const state = w?.state ?? apply22(INITIAL_22, s);
      finals.set(s, { kind: 'block', state, lines: w?.lines ?? renderState(state, step(s)) });
    }
    for (const [s, d] of authNeeds) {
      if (finals.has(s) || kept.has(s)) continue;
      if (d.size > 1) continue; // reported by the verification below
      const w = [...d.values()][0]!;
      finals.set(s, { kind: 'block', state: w.state, lines: w.lines });
    }
  };
  decide();

  // Replay every probe on the 2.4 result; a mismatch keeps mod_access_compat for the section.
  const mismatch = new Map<AccessSection, string>();
  const hypothetical = new Map<AccessSection, string>();
  for (let round = 0; round < 4; round++) {
    let changed = false;
    for (const c of chains) {
      const r = replay24(c.chain, finals);
      if (r === 'unverifiable') continue;
      const final = c.states[c.states.length - 1] ?? INITIAL_22;
      const methods = new Set<string>(methodClasses(final));
      for (const f of r.used) for (const m of methodClasses(f)) methods.add(m);
      let bad: string | undefined;
      for (const m of methods) {
        const meth = m === '*' ? '*OTHER*' : m;
        const want = decisionFormula(final, meth);
        const got = r.formula?.(meth);
        if (got === undefined) {
          if (want.t !== 'true' || final.authType !== undefined) bad = `2.4 would have no Require line for it${final.authType !== undefined ? ' and answer 500 (AuthType without Require)' : ''}`;
        } else if (norm(render(got)) !== norm(render(want))) {
          bad = `2.2 decided "${norm(render(want)).replace(/\n/g, '; ')}"`;
        }
        if (bad) break;
      }
      if (!bad) continue;
      if (c.probe.forced && !kept.has(c.probe.forced)) {
        const key = c.probe.forced;
        if (!hypothetical.has(key)) hypothetical.set(key, `for ${c.probe.label} ${bad}, while the 2.4 form gives "${r.formula ? methodsText(r.formula, methods) : 'no Require line'}"`);
        continue;
      }
      const relevant = c.chain.filter((s) => infos.get(s)!.changes || infos.get(s)!.authType.length > 0);
      const culprit = r.last ?? relevant[relevant.length - 1];
      if (culprit && !kept.has(culprit) && infos.get(culprit)!.changes) {
        kept.set(culprit, `no Require block written here gives 2.2's decision for every request it applies to (for ${c.probe.label} ${bad})`);
        changed = true;
      } else if (culprit && !mismatch.has(culprit)) {
        mismatch.set(culprit, `for ${c.probe.label} ${bad}`);
      }
    }
    if (!changed) break;
    decide();
  }
  // A section that keeps mod_access_compat keeps it for every section merged with it: 2.4
  // combines Require lines and Order/Allow/Deny by its own rules (both must pass), so a
  // half-converted merge would decide neither as 2.2 nor as 2.4 with mod_access_compat does.
  if (kept.size > 0) {
    for (let grew = true; grew;) {
      grew = false;
      for (const c of chains) {
        const k = c.chain.find((x) => kept.has(x));
        if (!k) continue;
        for (const x of c.chain) {
          const inf = infos.get(x)!;
          if (kept.has(x) || opaque.has(x) || !(inf.changes || inf.authType.length > 0)) continue;
          kept.set(x, `it is merged with ${where(k)}, which keeps them, for ${c.probe.label}`);
          grew = true;
        }
      }
    }
    decide();
  }
  for (const [s, why] of hypothetical) {
    const at = s.node ?? s.items[0]?.node;
    if (!at) continue;
    u.report('access.regex-section', { doc: s.doc, line: at.line }, 'manual',
      `Requests this regex section matches may be decided differently by 2.4: ${why}. In 2.2 its host rules and Satisfy combined with the Require lines of sections merged later; `
      + 'in 2.4 a later <Location> with Require lines decides alone. Only requests this pattern matches are concerned.',
      textOf(at), `If such requests exist, add the refusal to the later section (e.g. <If "%{REQUEST_FILENAME} =~ m#...#"> Require all denied </If>).`);
  }
  for (const [s, why] of mismatch) {
    const at = s.items[0];
    if (!at || kept.has(s)) continue;
    u.report('access.kept-compat', { doc: at.doc, line: at.node.line }, 'manual',
      `The rewrite cannot reproduce 2.2's decision here: ${why}.`, textOf(at.node), 'Check the Require lines of this section by hand.');
  }

  // ---- findings about 2.2 vs 2.4 with mod_access_compat (issue item 4) ----
  compatDifferences(u, chains, infos);

  // ---- edits ----
  const htaccessNeedsAuthConfig = new Set<AccessSection>();
  for (const inf of infos.values()) {
    const s = inf.sec;
    const f = finals.get(s);
    if (f?.kind === 'kept') {
      const at = inf.compat[0] ?? inf.requires[0];
      if (at) {
        u.report('access.kept-compat', { doc: at.doc, line: at.node.line }, 'manual',
          `Order/Allow/Deny/Satisfy kept (mod_access_compat stays loaded): ${kept.get(s)}.`, inf.compat.map((i) => textOf(i.node)).join('\n'),
          'Decide how these requests should be authorized in 2.4 and write the Require lines by hand.');
      }
      continue;
    }
    if (f?.kind === 'perdir') {
      const accessItems = [...inf.compat, ...inf.requires];
      const before = blockBefore(s, accessItems);
      placeBlock(u, s, inf, f.lines);
      const opener = `<${s.node!.name} ${s.node!.args}>`;
      const written: string[] = [];
      for (const [k, c] of f.copies) {
        const st = step(k);
        const block = [opener, ...c.lines.map((l) => st + l), `</${s.node!.name}>`];
        u.append(k.doc, k.node, block, 'access.require', `the decision for ${opener} in this directory`);
        written.push(`in ${where(k)}:\n${block.join('\n')}`);
        if (k.kind === 'htaccess') htaccessNeedsAuthConfig.add(k);
      }
      u.report('access.require', { doc: accessItems[0]!.doc, line: Math.min(...accessItems.map((i) => i.node.line)) }, 'change',
        `2.2 merged this section's host rules with the authentication of the directory a request is in, so its decision depends on the directory: `
        + `${[...f.copies.keys()].map(where).join(', ')} ${f.copies.size === 1 ? 'changes' : 'change'} it. 2.4 lets a section's Require lines replace the inherited ones, `
        + `so the section keeps the decision for requests elsewhere (${account(f.state)}) and a copy of it nested in each of those directories `
        + `(2.4 merges <Files> nested in a <Directory> after the top-level ones) says what 2.2 decided there.`,
        before, [f.lines.join('\n'), ...written].join('\n'));
      if (s.kind === 'htaccess' || s.owner?.kind === 'htaccess') htaccessNeedsAuthConfig.add(s.owner ?? s);
      continue;
    }
    if (f?.kind !== 'block' && f?.kind !== 'merge') continue;
    const lines = f.lines;
    const accessItems = [...inf.compat, ...inf.requires];
    const existing = inf.requires.filter((i) => !i.limit).map((i) => textOf(i.node));
    const onlyRequires = inf.compat.length === 0 && inf.requires.every((i) => !i.limit);
    const state = f.kind === 'block' ? f.state : merge22(chainFor(chains, s));
    if (f.kind === 'merge') {
      const userLines = lines.slice(1);
      const before = blockBefore(s, accessItems);
      if (onlyRequires && norm(existing) === norm(userLines)) {
        u.insertBefore({ doc: inf.requires[0]!.doc, node: inf.requires[0]!.node, sections: [] }, [lines[0]!], 'access.require');
      } else {
        placeBlock(u, s, inf, lines);
      }
      u.report('access.require', { doc: accessItems[0]!.doc, line: Math.min(...accessItems.map((i) => i.node.line)) }, 'change',
        `2.2 decided: ${account(state)}. In 2.2 the Require lines of this section combined with the host rules it inherits (Satisfy ${f.op === 'and' ? 'All: both must pass' : 'Any: either suffices'}); `
        + `in 2.4 a section's Require lines replace the inherited ones unless "AuthMerging ${f.op === 'and' ? 'And' : 'Or'}" combines them, which keeps 2.2's decision wherever the section applies.`,
        before, lines.join('\n'));
      continue;
    }
    if (onlyRequires && inf.requires.length > 0 && norm(existing) === norm(lines)) continue;
    if (inf.compat.length === 0 && inf.requires.length > 0 && requiresAlreadySay(inf, f.state)) continue;
    if (accessItems.length === 0) {
      // An AuthType section with no Require anywhere above it: 2.4 would answer 500.
      const lastAuth = [...s.items].reverse().find((i) => /^auth/i.test(i.node.name))!;
      u.insertAfter({ doc: lastAuth.doc, node: lastAuth.node, sections: [] }, lines, 'access.authtype-without-require');
      u.report('access.authtype-without-require', { doc: lastAuth.doc, line: inf.authType[0]!.node.line }, 'change',
        '2.2 served these requests without a login: AuthType/AuthName here, but no Require line applies to them. 2.4 answers such requests 500 '
        + '("AH01627: AuthType configured with no corresponding authorization directives"); the Require line written here keeps 2.2\'s decision.',
        inf.authType.map((i) => textOf(i.node)).join('\n'), lines.join('\n'));
      continue;
    }
    const before = blockBefore(s, accessItems);
    placeBlock(u, s, inf, lines);
    const dbm = inf.requires.some((r) => /^group\b/i.test(r.node.args.trim())) && lines.some((l) => /Require( not)? dbm-group/.test(l));
    if (dbm) {
      u.report('access.dbm-group', { doc: inf.requires[0]!.doc, line: inf.requires[0]!.node.line }, 'change',
        'With mod_authz_dbm (AuthDBMGroupFile), 2.4 spells the group requirement "Require dbm-group"; "Require group" now belongs to mod_authz_groupfile.', before, lines.join('\n'));
    }
    if (inf.compat.length > 0 || !dbm) {
      u.report('access.require', { doc: accessItems[0]!.doc, line: Math.min(...accessItems.map((i) => i.node.line)) }, 'change',
        `2.2 decided: ${account(state)}. Written as 2.4 Require lines with the same decisions (mod_authz_host replaces Order/Allow/Deny; 2.4 evaluates the block as a whole and a child section's Require lines replace its parent's).`,
        before, lines.join('\n'));
    }
    if (s.kind === 'htaccess' || s.owner?.kind === 'htaccess') htaccessNeedsAuthConfig.add(s.owner ?? s);
  }
  // Anything left that no analysis reached (a section kind not modelled): say so.
  const covered = new Set<ConfigNode>();
  for (const inf of infos.values()) if (finals.get(inf.sec)?.kind === 'kept' || inf.sec.dual) for (const i of inf.compat) covered.add(i.node);
  for (const r of u.allRefs()) {
    if (r.node.kind !== 'directive' || !COMPAT.has(r.node.name.toLowerCase()) || covered.has(r.node) || !readBy24(r)) continue;
    u.report('access.kept-compat', r, 'manual',
      `${r.node.name} is left as written: it is in a ${r.sections.length ? `<${r.sections[r.sections.length - 1]!.name}>` : 'server-level'} context this assistant does not analyse, so mod_access_compat stays loaded for it.`,
      textOf(r.node), 'Write the equivalent Require lines by hand.');
  }
  // Require is an AuthConfig directive: .htaccess files under "AllowOverride Limit" need it.
  const widened = new Set<ConfigNode>();
  for (const h of htaccessNeedsAuthConfig) allowAuthConfig(u, model, h, widened);
}

function where(s: AccessSection): string {
  const n = s.node ?? firstNode(s);
  return s.node ? `<${s.node.name} ${s.node.args}> at ${s.doc.display}:${s.node.line}` : `${s.doc.display}${n ? `:${n.line}` : ''}`;
}

function firstNode(s: AccessSection): ConfigNode | undefined {
  return s.items[0]?.node;
}

function chainFor(chains: readonly { chain: AccessSection[] }[], s: AccessSection): AccessSection[] {
  for (const c of chains) {
    const i = c.chain.indexOf(s);
    if (i >= 0) return c.chain.slice(0, i + 1);
  }
  return [s];
}

/** Whether a section's own Require lines, read by 2.4 (lines limited to other methods do not
 *  count; a method no line names is granted), already give the decision wanted. */
function requiresAlreadySay(inf: SecInfo, want: State22): boolean {
  const lines = inf.requires.map((i) => ({ words: splitWords(i.node.args), mask: i.mask, raw: i.node.args }));
  const methods = new Set(methodClasses(want));
  for (const i of inf.requires) if (i.mask) for (const m of i.mask.methods) methods.add(m);
  for (const m of methods) {
    const meth = m === '*' ? '*OTHER*' : m;
    const mine = lines.filter((l) => maskHas(l.mask, meth));
    const own = mine.length === 0 ? TRUE : or(mine.map((l) => atom(requireAtom(l.words, INITIAL_22, l.raw))));
    if (norm(render(own)) !== norm(render(decisionFormula(want, meth)))) return false;
  }
  return true;
}

/** The original text of the lines a rewrite replaces (whole <Limit> blocks included). */
function blockBefore(s: AccessSection, items: readonly Item[]): string {
  const parts: { line: number; text: string }[] = [];
  const limits = new Set<ConfigNode>();
  for (const i of items) {
    if (i.limit && withinSection(s, i.limit)) {
      if (!limits.has(i.limit)) { limits.add(i.limit); parts.push({ line: i.limit.firstLine, text: blockText(i.limit) }); }
    } else parts.push({ line: i.node.firstLine, text: textOf(i.node) });
  }
  return parts.sort((a, b) => a.line - b.line).map((p) => p.text).join('\n');
}

/** Replaces a section's access lines (and <Limit> blocks left empty) with the 2.4 block. */
function placeBlock(u: Upgrade, s: AccessSection, inf: SecInfo, lines: readonly string[]): void {
  const items = [...inf.compat, ...inf.requires];
  const top = (i: Item): ConfigNode => (i.limit && withinSection(s, i.limit) ? i.limit : i.node);
  const ordered = items.slice().sort((a, b) => top(a).firstLine - top(b).firstLine || a.node.firstLine - b.node.firstLine);
  const first = ordered[0]!;
  const doc = first.doc;
  u.insertBefore({ doc, node: top(first), sections: [] }, lines, 'access.require');
  const limits = new Set<ConfigNode>();
  for (const i of items) {
    i.doc.drop(i.node);
    if (i.limit) limits.add(i.limit);
  }
  for (const l of limits) {
    if ((l.children ?? []).some((c) => c.kind === 'directive' || c.kind === 'section')) continue;
    const d = docOf(items, l);
    if (d) d.drop(l);
  }
  u.touched();
}

function withinSection(s: AccessSection, n: ConfigNode): boolean {
  const nodes = s.node ? s.node.children ?? [] : s.doc.nodes;
  const find = (list: readonly ConfigNode[]): boolean => list.some((c) => c === n || (c.kind === 'section' && !/^(files|filesmatch)$/i.test(c.name) && find(c.children ?? [])));
  return find(nodes);
}

function docOf(items: readonly Item[], limit: ConfigNode): Doc | undefined {
  return items.find((i) => i.limit === limit)?.doc;
}

/** Authz*Authoritative are gone in 2.4: each Require line is one alternative of the
 *  (implicit) <RequireAny>, which is what "Off" asked for. */
function authoritative(u: Upgrade): void {
  const rule = 'access.authz-authoritative';
  for (const r of u.named(...[...AUTHORITATIVE])) {
    const off = /^off$/i.test(r.node.args.trim());
    const before = textOf(r.node);
    u.remove(r, rule, 'removed in 2.4');
    u.report(rule, r, 'change',
      `${r.node.name} is removed in 2.4. ${off ? '"Off" let other modules decide when this one did not match; in 2.4 Require lines side by side form an implicit <RequireAny>, which expresses the same.'
        : '"On" (the default) made this module\'s refusal final; in 2.4 each Require line is one alternative of the (implicit) <RequireAny>, and <RequireAll>/<RequireNone> express stricter combinations.'}`,
      before, '');
  }
}

/** Adds AuthConfig to the AllowOverride that governs a .htaccess file converted to Require. */
function allowAuthConfig(u: Upgrade, model: Model, h: AccessSection, widened: Set<ConfigNode>): void {
  const rule = 'access.htaccess-override';
  const server = model.main;
  const w = walkRequest(model, server, { url: '', file: `${h.arg}/x` }, htaccessRead22);
  let governing: Item | undefined;
  for (const sec of w.chain) {
    if (sec.kind !== 'directory') continue;
    for (const i of sec.items) if (is(i.node, 'AllowOverride')) governing = i;
  }
  if (!governing || widened.has(governing.node)) return;
  widened.add(governing.node);
  const classes = splitWords(governing.node.args).map((x) => x.toLowerCase());
  if (classes.includes('all') || classes.includes('authconfig')) return;
  // 2.2 never read a file under AllowOverride None: it must not become active now.
  if (classes.includes('none')) return;
  const before = textOf(governing.node);
  const after = `AllowOverride ${splitWords(governing.node.args).join(' ')} AuthConfig`.replace(/\s+/g, ' ');
  u.replace({ doc: governing.doc, node: governing.node, sections: [] }, [after.trim()], rule);
  u.report(rule, { doc: governing.doc, line: governing.node.line }, 'change',
    `${h.doc.display} now authorizes with Require, an AuthConfig directive in 2.4 (Order/Allow/Deny were Limit directives); the AllowOverride that governs it must allow AuthConfig or every request there fails with 500.`,
    before, after.trim());
}

// ---- where 2.4 + mod_access_compat would not reproduce 2.2 -------------------------------------

function compatDifferences(u: Upgrade, chains: readonly { probe: Probe; chain: AccessSection[]; states: State22[] }[], infos: ReadonlyMap<AccessSection, SecInfo>): void {
  const done = new Set<string>();
  const once = (k: string): boolean => { if (done.has(k)) return false; done.add(k); return true; };
  for (const c of chains) {
    let prev = INITIAL_22;
    for (let i = 0; i < c.chain.length; i++) {
      const sec = c.chain[i]!;
      const inf = infos.get(sec)!;
      const s = c.states[i]!;
      const setsHost = inf.compat.some((x) => !is(x.node, 'Satisfy'));
      const setsSatisfy = inf.compat.some((x) => is(x.node, 'Satisfy'));
      if (setsHost && !setsSatisfy && prev.satisfy.some((x) => x.value === 'any') && once(`sat-lost:${sec.id}`)) {
        const from = prev.satisfy.find((x) => x.value === 'any')!.item;
        u.report('access.compat-satisfy-inheritance', { doc: inf.compat[0]!.doc, line: inf.compat[0]!.node.line }, 'note',
          `In 2.2 this section inherits "Satisfy Any" from ${from.doc.display}:${from.node.line} (core merged Satisfy on its own); mod_access_compat stores Satisfy with Order/Allow/Deny, `
          + 'so on 2.4 with mod_access_compat this section would fall back to Satisfy All. The Require block written here keeps 2.2\'s decision.', textOf(inf.compat[0]!.node), '');
      }
      if (setsSatisfy && !setsHost && prev.host !== undefined && once(`host-lost:${sec.id}`)) {
        const at = inf.compat.find((x) => is(x.node, 'Satisfy'))!;
        u.report('access.compat-satisfy-inheritance', { doc: at.doc, line: at.node.line }, 'note',
          `In 2.2 this section sets only Satisfy and keeps the Order/Allow/Deny of ${prev.host.from.doc.display}${prev.host.from.node ? `:${prev.host.from.node.line}` : ''}; mod_access_compat stores them together, `
          + 'so on 2.4 with mod_access_compat the section would lose those host rules. The Require block written here keeps 2.2\'s decision.', textOf(at.node), '');
      }
      prev = s;
    }
    const final = c.states[c.states.length - 1] ?? INITIAL_22;
    for (const m of methodClasses(final)) {
      const meth = m === '*' ? '*OTHER*' : m;
      const sat = [...final.satisfy].reverse().find((x) => maskHas(x.mask, meth));
      if (sat?.value === 'any' && requiresFor(final, meth).length === 0 && hostFormula(final.host, meth).t !== 'true' && once(`any-noreq:${sat.item.node.line}:${sat.item.doc.path}`)) {
        u.report('access.compat-satisfy-any', { doc: sat.item.doc, line: sat.item.node.line }, 'note',
          `"Satisfy Any" with host rules that refuse some clients and no Require line: 2.2 refused those clients (403), but 2.4 with mod_access_compat lets them in (200) (for ${c.probe.label}). `
          + 'The Require block written here keeps 2.2\'s 403.', textOf(sat.item.node), '');
      }
    }
    if (final.authType !== undefined && (final.requires === undefined || final.requires.length === 0) && decisionFormula(final, 'GET').t !== 'false') {
      const at = [...c.chain].reverse().find((s) => infos.get(s)!.authType.length > 0);
      if (at && once(`authtype:${at.id}`)) {
        const n = infos.get(at)!.authType[0]!;
        u.report('access.compat-authtype-parent', { doc: n.doc, line: n.node.line }, 'note',
          `AuthType is set here but no Require applies to ${c.probe.label}: 2.2 served it without a login; 2.4 answers 500 ("AH01627: AuthType configured with no corresponding authorization directives"). `
          + 'Typical when AuthType/AuthName/AuthUserFile sit in a parent section and Require only in a child; the rewrite adds the Require line 2.2\'s decision implies.', textOf(n.node), '');
      }
    }
  }
  // Allow lines that never granted: Order allow,deny evaluates Deny last, and "Deny from all" matches everyone.
  for (const inf of infos.values()) {
    if (inf.compat.length === 0) continue;
    const s = apply22(INITIAL_22, inf.sec);
    const h = s.host;
    if (!h) continue;
    for (const m of methodClasses(s)) {
      const meth = m === '*' ? '*OTHER*' : m;
      if (orderFor(h, meth) === 'deny,allow') continue;
      const denyAll = h.denys.some((e) => e.kind === 'all' && maskHas(e.mask, meth));
      const allows = h.allows.filter((e) => e.kind !== 'all' && maskHas(e.mask, meth));
      if (!denyAll || allows.length === 0) continue;
      const a = allows[0]!.item;
      if (!once(`never:${a.doc.path}:${a.node.line}`)) continue;
      u.report('access.never-granting-allow', { doc: a.doc, line: a.node.line }, 'note',
        `With "Order allow,deny" the Deny lines are evaluated last, so "Deny from all" also refused the clients this Allow line names: in 2.2 it never granted anything. `
        + `The upgrading notes' 2.4 form (Require ip next to Require valid-user) would let those clients in; the Require block written here keeps 2.2's refusal.`,
        textOf(a.node), '');
    }
  }
}

export const accessRules: Rule[] = [
  { id: 'access.authz-authoritative', title: 'Authz*Authoritative removed (RequireAny/RequireAll express it)', spec: ['5.2 rule 3'], run: authoritative },
  {
    id: 'access.require',
    title: 'Order/Allow/Deny/Satisfy become Require/RequireAll/RequireAny with the same decisions',
    spec: ['2.4 mod_authz_host', '5.1 directives', '5.2 rule 1', '5.2 rule 2', '5.3 equivalences', '7.2 403'],
    run: accessRule,
  },
  { id: 'access.regex-section', title: 'Regex sections whose 2.2 combination 2.4 cannot express (manual)', spec: ['5.2 rule 4'], run: () => undefined },
  { id: 'access.kept-compat', title: 'Sections with no exact 2.4 form keep mod_access_compat (manual)', spec: ['5.2 rule 4'], run: () => undefined },
  { id: 'access.mixed', title: 'Old and new authorization mixed: precedence warning', spec: ['5.2 rule 5', '5.4 merge scenarios'], run: () => undefined },
  { id: 'access.dbm-group', title: 'Require group under mod_authz_dbm becomes Require dbm-group', spec: ['2.4 mod_authz_dbm', '5.1 Require dbm-group'], run: () => undefined },
  { id: 'access.htaccess-override', title: 'AllowOverride gains AuthConfig where .htaccess files now use Require', spec: ['7.3 AllowOverride'], run: () => undefined },
  { id: 'access.authtype-without-require', title: 'AuthType with no Require: Require all granted keeps 2.2 (AH01627)', spec: ['issue item 4'], run: () => undefined },
  { id: 'access.compat-satisfy-inheritance', title: 'Satisfy inherited on its own in 2.2, with Order/Allow/Deny in mod_access_compat', spec: ['issue item 4'], run: () => undefined },
  { id: 'access.compat-satisfy-any', title: 'Satisfy Any without Require: 403 in 2.2, 200 in 2.4 + mod_access_compat', spec: ['issue item 4'], run: () => undefined },
  { id: 'access.compat-authtype-parent', title: 'AuthType in a parent, Require in a child: 500 in 2.4', spec: ['issue item 4'], run: () => undefined },
  { id: 'access.never-granting-allow', title: 'Allow lines that never granted (Order allow,deny with Deny from all)', spec: ['issue item 4', '5.3 equivalences'], run: () => undefined },
];

