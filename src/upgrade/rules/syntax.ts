// Directives whose value rules or syntax changed in 2.3/2.4 (specification 2.3): KeepAlive,
// DefaultType, NameVirtualHost, CacheIgnoreURLSessionIdentifiers, CacheEnable for forward
// proxies, LDAPTrustedClientCert, FilterProvider, Include wildcards.

import type { ConfigNode } from '../../server/config/tree.js';
import type { Rule } from '../model.js';
import { atServerLevel, is, textOf, vhostOf, words, type Ref, type Upgrade } from '../engine.js';

// ---- KeepAlive ----------------------------------------------------------------------------

function keepAlive(u: Upgrade): void {
  const rule = 'syntax.keepalive';
  for (const r of u.named('KeepAlive')) {
    const v = r.node.args.trim();
    if (/^(on|off)$/i.test(v)) continue;
    // httpd 2.2: anything but "Off" (any case) or "0" meant On.
    const on = !(v.toLowerCase() === 'off' || v === '0');
    const after = `KeepAlive ${on ? 'On' : 'Off'}`;
    u.replace(r, [after], rule);
    u.report(rule, r, 'change', `KeepAlive accepts only On or Off in 2.4; 2.2 read "${v}" as ${on ? 'On' : 'Off'} (any value but Off or 0 meant On).`, textOf(r.node), after);
  }
}

// ---- DefaultType --------------------------------------------------------------------------

function defaultType(u: Upgrade): void {
  const rule = 'syntax.default-type';
  for (const r of u.named('DefaultType')) {
    const v = words(r.node)[0] ?? '';
    if (v.toLowerCase() === 'none') continue;
    const before = textOf(r.node);
    u.remove(r, rule, 'no effect in 2.4');
    u.report(rule, r, 'manual',
      `DefaultType has no effect in 2.4 except the warning "Ignoring deprecated use of DefaultType"; 2.2 gave files of unknown type "${v}". `
      + 'Removed. Files whose type mod_mime cannot tell are now sent without a Content-Type header.',
      before, `Give such files a type explicitly: AddType ${v} <extension>..., or ForceType ${v} in the <Directory>/<Files> that holds them.`);
  }
}

// ---- NameVirtualHost ----------------------------------------------------------------------

function nameVirtualHost(u: Upgrade): void {
  const rule = 'syntax.name-virtual-host';
  const declared = new Set<string>();
  for (const r of u.named('NameVirtualHost')) {
    for (const w of words(r.node)) declared.add(normAddr(w));
    const before = textOf(r.node);
    u.remove(r, rule, 'no effect in 2.4');
    u.report(rule, r, 'change',
      'NameVirtualHost has no effect in 2.4 except a warning: an address and port used by more than one <VirtualHost> is name-based implicitly. Removed.',
      before, '');
  }
  // Addresses shared by several virtual hosts without NameVirtualHost: 2.2 served them all
  // from the first such host; 2.4 chooses by ServerName.
  const byAddr = new Map<string, Ref[]>();
  for (const r of u.sectionsNamed('VirtualHost')) {
    for (const a of words(r.node)) {
      const k = normAddr(a);
      const l = byAddr.get(k) ?? [];
      l.push(r);
      byAddr.set(k, l);
    }
  }
  // Only in a configuration written for 2.2 (one that names NameVirtualHost somewhere): in a
  // 2.4 configuration a shared address is simply name-based.
  if (declared.size === 0) return;
  for (const [addr, list] of byAddr) {
    if (list.length < 2 || declared.has(addr) || declared.has(wildPort(addr))) continue;
    const second = list[1]!;
    u.report(rule, second, 'manual',
      `${list.length} virtual hosts share ${addr} but no NameVirtualHost named it: 2.2 served every request for it from the first one (line ${list[0]!.node.line}); 2.4 picks the host by ServerName/ServerAlias.`,
      textOf(second.node), 'Check that each of these virtual hosts has the ServerName its clients use, or remove the ones 2.2 never served.');
  }
}

function normAddr(a: string): string {
  const s = a.toLowerCase();
  return /:\d+$|:\*$/.test(s) && !/^\[[^\]]*$/.test(s) ? s : `${s}:*`;
}

function wildPort(a: string): string {
  return a.replace(/:[^:\]]+$/, ':*');
}

// ---- mod_cache ----------------------------------------------------------------------------

function cacheSessionIdentifiers(u: Upgrade): void {
  const rule = 'syntax.cache-session-identifiers';
  for (const r of u.named('CacheIgnoreURLSessionIdentifiers')) {
    const ids = words(r.node).filter((w) => w.toLowerCase() !== 'none');
    if (ids.length === 0) continue;
    if (u.acknowledged(r, rule)) continue;
    u.insertBefore(r, [], rule, 'each identifier must be the complete parameter name (2.4 matches exactly)');
    u.report(rule, r, 'manual',
      `CacheIgnoreURLSessionIdentifiers matches each identifier exactly in 2.4; 2.2 also matched a partial string (a prefix such as "${ids[0]}" matched "${ids[0]}x=..."). `
      + 'A partial identifier no longer removes the parameter, so the cache keeps one entry per session.',
      textOf(r.node), `Replace each partial identifier (${ids.join(', ')}) with the full parameter name(s) the application uses.`);
  }
}

function cacheEnableProtocol(u: Upgrade): void {
  const rule = 'syntax.cache-enable-protocol';
  const forward = (vh: ConfigNode | undefined): boolean =>
    u.named('ProxyRequests').some((r) => /^on$/i.test(r.node.args.trim()) && (vhostOf(r) === vh || (vh !== undefined && vhostOf(r) === undefined)));
  const ftp = u.loadedModules().has('proxy_ftp_module');
  for (const r of u.named('CacheEnable')) {
    const [type, url] = words(r.node);
    if (!type || !url || /^[a-z][a-z0-9+.-]*:/i.test(url)) continue;
    if (url !== '/' || !forward(vhostOf(r))) continue;
    const scope = vhostOf(r);
    const existing = new Set(u.named('CacheEnable').filter((x) => vhostOf(x) === scope).map((x) => (words(x.node)[1] ?? '').toLowerCase()));
    const add = ['http://', ...(ftp ? ['ftp://'] : [])].filter((p) => !existing.has(p)).map((p) => `CacheEnable ${type} ${p}`);
    if (add.length === 0) continue;
    u.insertAfter(r, add, rule, 'forward-proxy content is cached only when the URL names its protocol');
    u.report(rule, r, 'change',
      'In 2.2 "CacheEnable ... /" also matched content fetched as a forward proxy; in 2.4 the second parameter matches forward-proxied content only when it begins with the protocol.',
      textOf(r.node), add.join('\n'));
  }
}

// ---- LDAPTrustedClientCert ----------------------------------------------------------------

function ldapTrustedClientCert(u: Upgrade): void {
  const rule = 'syntax.ldap-trusted-client-cert';
  for (const r of u.named('LDAPTrustedClientCert')) {
    if (!atServerLevel(r)) continue;
    const vh = vhostOf(r);
    const before = textOf(r.node);
    // Every directory context of this server (or of every server, for the main one) that
    // authenticates against LDAP.
    const targets = u.allRefs().filter((x) => x.node.kind === 'section' && isDirContext(x.node)
      && (vh === undefined || vhostOf(x) === vh) && usesLdap(x.node)
      && !(x.node.children ?? []).some((c) => c.kind === 'directive' && is(c, 'LDAPTrustedClientCert')));
    if (targets.length === 0) {
      u.report(rule, r, 'manual',
        'LDAPTrustedClientCert is a per-directory setting in 2.4; at server level it no longer reaches the directories that authenticate against LDAP.',
        before, 'Move it into every <Directory>/<Location> that uses AuthLDAPURL (none was found in this configuration).');
      continue;
    }
    for (const t of targets) u.append(t.doc, t.node, [before.replace(/^\s+/, '')], rule, 'moved from server level (per-directory only in 2.4)');
    u.remove(r, rule, `moved into ${targets.length} directory context(s)`);
    u.report(rule, r, 'change',
      'LDAPTrustedClientCert is a per-directory setting only in 2.4: it must be in every directory context that needs it. Moved from server level into '
      + targets.map((t) => `<${t.node.name} ${t.node.args}> (${t.doc.display}:${t.node.line})`).join(', ') + '.',
      before, `${before.trim()} (in each of those sections)`);
  }
}

function isDirContext(n: ConfigNode): boolean {
  return /^(directory|directorymatch|location|locationmatch|files|filesmatch)$/i.test(n.name);
}

function usesLdap(n: ConfigNode): boolean {
  return (n.children ?? []).some((c) => c.kind === 'directive'
    && (is(c, 'AuthLDAPURL') || (is(c, 'AuthBasicProvider') && /\bldap\b/i.test(c.args)) || /^ldap-/i.test(c.kind === 'directive' && is(c, 'Require') ? c.args.trim() : '')));
}

// ---- FilterProvider -----------------------------------------------------------------------

/** The 2.2 "dispatch match" pair as a 2.4 expression deciding the same, or undefined when it
 *  cannot be read. 2.2's mod_filter (filter_provider / filter_lookup): a leading "!" negates;
 *  "<", "<=", ">", ">=", "=" compare atoi() of the value with atoi() of the rest (so "=text/html"
 *  compares with 0); "/re/flags" is a regex up to the LAST slash, "i" among the flags makes it
 *  case-insensitive; "*" tests that the value is set; "$str" is a case-insensitive substring
 *  test; anything else a case-insensitive comparison of the whole value. An unset value never
 *  matches (so a negated test matches it). 2.4's %{...} reads an unset value as "", so where
 *  the test would hold for "" the expression also says the value is set (-n) or, negated, that
 *  it may be unset (-z). */
export function filterExpression(dispatch: string, match: string): string | undefined {
  let v: string;
  const d = dispatch.toLowerCase();
  const eq = dispatch.indexOf('=');
  if (eq >= 0) {
    const name = dispatch.slice(eq + 1);
    if (!/^[A-Za-z0-9_.-]+$/.test(name)) return undefined;
    if (d.startsWith('env=')) v = `%{reqenv:${name}}`;
    else if (d.startsWith('req=')) v = `%{req:${name}}`;
    else if (d.startsWith('resp=')) v = name.toLowerCase() === 'content-type' ? '%{CONTENT_TYPE}' : `%{resp:${name}}`;
    else return undefined; // 2.2: "FilterProvider: unrecognized dispatch table"
  } else if (d === 'handler') v = '%{HANDLER}';
  else if (d === 'content-type') v = '%{CONTENT_TYPE}';
  else if (/^[A-Za-z0-9_.-]+$/.test(dispatch)) v = `%{resp:${dispatch}}`;
  else return undefined;
  let m = match;
  let negate = false;
  if (m.startsWith('!')) { negate = true; m = m.slice(1); }
  if (/["']/.test(m)) return undefined;
  let e: string;
  /** Whether the test holds for an empty value (then "unset" must be told apart). */
  let onEmpty: boolean;
  const c = m[0] ?? '';
  if (c === '<' || c === '>' || c === '=') {
    const op = m.startsWith('<=') ? 'le' : m.startsWith('>=') ? 'ge' : c === '<' ? 'lt' : c === '>' ? 'gt' : 'eq';
    const n = atoi(m.slice(op === 'le' || op === 'ge' ? 2 : 1));
    e = `${v} -${op} ${n}`;
    onEmpty = op === 'le' ? 0 <= n : op === 'ge' ? 0 >= n : op === 'lt' ? 0 < n : op === 'gt' ? 0 > n : n === 0;
  } else if (c === '/') {
    const end = m.lastIndexOf('/');
    if (end <= 0) return undefined; // 2.2: "Bad regexp syntax"
    const body = m.slice(1, end);
    const icase = m.slice(end + 1).includes('i');
    let re: RegExp;
    try { re = new RegExp(body, icase ? 'i' : ''); } catch { return undefined; }
    e = `${v} =~ m#${body.replace(/(^|[^\\])#/g, '$1\\#')}#${icase ? 'i' : ''}`;
    onEmpty = re.test('');
  } else if (c === '*') {
    e = `-n ${v}`;
    onEmpty = false;
  } else if (c === '$') {
    const s = m.slice(1);
    e = `${v} =~ m#${reEscape(s)}#i`;
    onEmpty = s === '';
  } else {
    e = `${v} =~ m#^${reEscape(m)}$#i`;
    onEmpty = m === '';
  }
  if (c === '*') return negate ? `-z ${v}` : e;
  if (negate) return onEmpty ? `-z ${v} || !(${e})` : `!(${e})`;
  return onEmpty ? `-n ${v} && ${e}` : e;
}

/** C's atoi: optional white space and sign, then digits; 0 when there are none. */
function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  return m ? parseInt(m[1]!, 10) : 0;
}

function reEscape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\#]/g, '\\$&');
}

function filterProvider(u: Upgrade): void {
  const rule = 'syntax.filter-provider';
  for (const r of u.named('FilterProvider')) {
    const w = words(r.node);
    if (w.length !== 4) continue; // 2.4: name, provider, one expression
    const [name, provider, dispatch, match] = w as [string, string, string, string];
    const expr = filterExpression(dispatch, match);
    const before = textOf(r.node);
    if (expr === undefined) {
      u.report(rule, r, 'manual', 'FilterProvider takes a boolean expression in 2.4 instead of 2.2\'s dispatch criterion and match string; this pair could not be translated.',
        before, `Write FilterProvider ${name} ${provider} "<expression>" with the condition "${dispatch} ${match}" (see the ap_expr documentation).`);
      continue;
    }
    const after = `FilterProvider ${name} ${provider} "${expr}"`;
    u.replace(r, [after], rule);
    u.report(rule, r, 'change', `FilterProvider takes a boolean expression in 2.4; 2.2's dispatch "${dispatch}" with match "${match}" becomes ${expr}.`, before, after);
  }
  // 2.2's FilterDeclare could also name a dispatch criterion (its second word was a type
  // in 2.2 too); nothing else to rewrite there.
}

// ---- Include with a wildcard that matches nothing -----------------------------------------

function includeWildcard(u: Upgrade): void {
  const rule = 'syntax.include-wildcard';
  for (const r of u.named('Include')) {
    const spec = words(r.node)[0] ?? '';
    if (!/[*?[]/.test(spec)) continue;
    const docs = u.includes.get(r.node);
    if (docs && docs.length > 0) continue;
    const after = `IncludeOptional ${r.node.args}`;
    const before = textOf(r.node);
    u.replace(r, [after], rule);
    u.report(rule, r, 'change', `The wildcard "${spec}" matches no file: 2.2 accepted that, 2.4 refuses to start ("No matches for the wildcard"); IncludeOptional keeps 2.2's behaviour.`, before, after);
  }
}

export const syntaxRules: Rule[] = [
  { id: 'syntax.keepalive', title: 'KeepAlive values other than On/Off', spec: ['2.3 KeepAlive'], run: keepAlive },
  { id: 'syntax.default-type', title: 'DefaultType removed', spec: ['2.3 DefaultType', '7.1 Ignoring deprecated use of DefaultType'], run: defaultType },
  { id: 'syntax.name-virtual-host', title: 'NameVirtualHost removed; shared addresses are name-based', spec: ['2.3 NameVirtualHost'], run: nameVirtualHost },
  { id: 'syntax.cache-session-identifiers', title: 'CacheIgnoreURLSessionIdentifiers matches exactly', spec: ['2.3 CacheIgnoreURLSessionIdentifiers'], run: cacheSessionIdentifiers },
  { id: 'syntax.cache-enable-protocol', title: 'CacheEnable for forward-proxied content needs the protocol', spec: ['2.3 CacheEnable'], run: cacheEnableProtocol },
  { id: 'syntax.ldap-trusted-client-cert', title: 'LDAPTrustedClientCert is per-directory only', spec: ['2.3 LDAPTrustedClientCert'], run: ldapTrustedClientCert },
  { id: 'syntax.filter-provider', title: 'FilterProvider takes an expression', spec: ['2.3 FilterProvider'], run: filterProvider },
  { id: 'syntax.include-wildcard', title: 'Include wildcards that match nothing (IncludeOptional)', spec: [], run: includeWildcard },
];

