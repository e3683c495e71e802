// mod_ssl changes: SSLv2 is gone (SSLProtocol, SSLCipherSuite), CRL checking needs
// SSLCARevocationCheck, and the *_DN variables changed format (SSLOptions +LegacyDNStringFormat).

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ConfigNode } from '../../server/config/tree.js';
import type { Rule } from '../model.js';
import { atServerLevel, is, textOf, vhostOf, words, type Ref, type Upgrade } from '../engine.js';
import { includesDirectories, scanFiles } from './include.js';

// ---- SSLv2 ----------------------------------------------------------------------------------

function sslv2(u: Upgrade): void {
  const rule = 'ssl.sslv2';
  for (const r of u.named('SSLProtocol', 'SSLProxyProtocol')) {
    const w = words(r.node);
    const keep = w.filter((x) => !/^[+-]?sslv2$/i.test(x));
    if (keep.length === w.length) continue;
    const before = textOf(r.node);
    if (keep.length === 0 || keep.every((x) => x.startsWith('-'))) {
      u.report(rule, r, 'manual', 'SSLv2 is not supported by 2.4 and this line enables nothing else.', before, `Choose the protocols to offer, e.g. "${r.node.name} all -SSLv3".`);
      continue;
    }
    const after = `${r.node.name} ${keep.join(' ')}`;
    u.replace(r, [after], rule);
    u.report(rule, r, 'change', '2.4 does not support SSLv2 and refuses the SSLv2 keyword; removed from the protocol list.', before, after);
  }
  for (const r of u.named('SSLCipherSuite', 'SSLProxyCipherSuite')) {
    const w = words(r.node);
    const spec = w[w.length - 1] ?? '';
    const parts = spec.split(/[:, ]/);
    const keep = parts.filter((p) => !/^[+!-]?sslv2$/i.test(p));
    if (keep.length === parts.length) continue;
    const before = textOf(r.node);
    const lead = w.length > 1 ? `${w.slice(0, -1).join(' ')} ` : '';
    const after = `${r.node.name} ${lead}${quoteIfNeeded(keep.join(':'))}`;
    u.replace(r, [after], rule);
    u.report(rule, r, 'change', '2.4 does not support SSLv2: its cipher keyword is removed from the cipher list.', before, after);
  }
}

function quoteIfNeeded(s: string): string {
  return /[\s"]/.test(s) || s === '' ? `"${s.replace(/"/g, '\\"')}"` : s;
}

// ---- SSLCARevocationCheck -------------------------------------------------------------------

function revocationCheck(u: Upgrade): void {
  const rule = 'ssl.ca-revocation-check';
  const pairs: [string[], string, string][] = [
    [['SSLCARevocationFile', 'SSLCARevocationPath'], 'SSLCARevocationCheck', 'chain no_crl_for_cert_ok'],
    [['SSLProxyCARevocationFile', 'SSLProxyCARevocationPath'], 'SSLProxyCARevocationCheck', 'chain'],
  ];
  for (const [sources, check, value] of pairs) {
    const done = new Set<ConfigNode | undefined>();
    for (const r of u.named(...sources)) {
      if (!atServerLevel(r)) continue;
      const vh = vhostOf(r);
      if (done.has(vh)) continue;
      done.add(vh);
      const has = u.named(check).some((x) => vhostOf(x) === vh || (vh !== undefined && vhostOf(x) === undefined));
      if (has) continue;
      const after = `${check} ${value}`;
      u.insertAfter(r, [after], rule, 'CRLs are checked only when this says so');
      u.report(rule, r, 'change',
        `2.4 checks the CRLs named by ${r.node.name} only when ${check} is configured (default none); 2.2 checked the whole chain`
        + (value.includes('no_crl_for_cert_ok') ? ' and accepted certificates for which no CRL was found (the no_crl_for_cert_ok flag).' : '.'),
        textOf(r.node), after);
    }
  }
}

// ---- *_DN variables ------------------------------------------------------------------------

/** The full-DN variables whose format changed (their _CN, _O... components did not). */
export const DN_VAR = /\bSSL_(?:CLIENT|SERVER)_[SI]_DN\b(?!_)/;

const DN_USERS = ['SetEnvIf', 'SetEnvIfNoCase', 'BrowserMatch', 'RewriteCond', 'RewriteRule', 'LogFormat', 'CustomLog', 'ErrorLogFormat',
  'Header', 'RequestHeader', 'SSLRequire', 'Require', 'SetEnvIfExpr', '<If>'];

function legacyDn(u: Upgrade): void {
  const rule = 'ssl.legacy-dn-string-format';
  const uses: Ref[] = [];
  for (const r of u.allRefs()) {
    const text = r.node.kind === 'section' ? `${r.node.name} ${r.node.args}` : r.node.args;
    if (DN_VAR.test(text) && (r.node.kind === 'section' || DN_USERS.some((d) => is(r.node, d)))) uses.push(r);
  }
  // FakeBasicAuth uses the subject DN as the user name: the password file holds 2.2-format DNs.
  for (const r of u.named('SSLOptions')) if (/\bFakeBasicAuth\b/i.test(r.node.args)) uses.push(r);
  // SSI pages that echo or test the variables.
  const ssi: string[] = [];
  for (const d of includesDirectories(u)) {
    for (const f of scanFiles(d.dir, d.extensions)) {
      let text: string;
      try { text = fs.readFileSync(f, 'utf8'); } catch { continue; }
      if (DN_VAR.test(text)) ssi.push(f);
    }
  }
  if (uses.length === 0 && ssi.length === 0) return;
  if (u.named('SSLOptions').some((r) => /\bLegacyDNStringFormat\b/i.test(r.node.args))) return;
  // One SSLOptions +LegacyDNStringFormat per server that uses them (main covers the vhosts
  // that do not set SSLOptions themselves).
  const servers = new Set<ConfigNode | undefined>();
  for (const r of uses) servers.add(r.doc.kind === 'htaccess' ? undefined : vhostOf(r));
  if (ssi.length > 0) servers.add(undefined);
  for (const vh of servers) {
    const serverLevel = u.named('SSLOptions').filter((x) => atServerLevel(x) && vhostOf(x) === vh);
    const at = serverLevel[serverLevel.length - 1];
    const where = uses.find((x) => (x.doc.kind === 'htaccess' ? undefined : vhostOf(x)) === vh);
    const why = `uses ${where ? `${where.node.name} at ${where.doc.display}:${where.node.line}` : `SSI pages (${ssi.slice(0, 3).map((f) => path.basename(f)).join(', ')})`}`;
    if (at) {
      const w = words(at.node);
      const relative = w.every((x) => /^[+-]/.test(x));
      const after = `SSLOptions ${w.join(' ')} ${relative ? '+' : ''}LegacyDNStringFormat`;
      const before = textOf(at.node);
      u.replace(at, [after], rule);
      u.report(rule, at, 'change', dnMessage(why), before, after);
    } else if (vh) {
      const vref = u.sectionsNamed('VirtualHost').find((x) => x.node === vh)!;
      u.append(vref.doc, vh, ['SSLOptions +LegacyDNStringFormat'], rule);
      u.report(rule, vref, 'change', dnMessage(why), textOf(vh), 'SSLOptions +LegacyDNStringFormat');
    } else {
      const ref = u.addServerWide(['SSLOptions +LegacyDNStringFormat'], rule);
      u.report(rule, where ?? ref, 'change', dnMessage(why), where ? textOf(where.node) : '', 'SSLOptions +LegacyDNStringFormat');
    }
  }
  // A directory-level SSLOptions without +/- replaces the inherited options (and would drop it).
  for (const r of u.named('SSLOptions')) {
    if (atServerLevel(r) || /\bLegacyDNStringFormat\b/i.test(r.node.args)) continue;
    const w = words(r.node);
    if (w.some((x) => /^[+-]/.test(x))) continue;
    const before = textOf(r.node);
    const after = `SSLOptions ${w.join(' ')} LegacyDNStringFormat`;
    u.replace(r, [after], rule);
    u.report(rule, r, 'change', 'This SSLOptions replaces the inherited options, so it must name LegacyDNStringFormat too.', before, after);
  }
}

function dnMessage(why: string): string {
  return `The default format of the SSL_*_DN variables changed in 2.4 (RFC 2253 order and escaping); this configuration ${why}, which relied on 2.2's format. `
    + 'SSLOptions +LegacyDNStringFormat restores it.';
}

/** 2.2's "shm:" and "shmht:" session caches: 2.4 has only the shmcb socache provider (its
 *  "shm" name is gone), so the cache is written as shmcb with the same file and size. */
function sessionCacheShm(u: Upgrade): void {
  const rule = 'ssl.session-cache-shm';
  for (const r of u.named('SSLSessionCache')) {
    const arg = words(r.node)[0] ?? '';
    const m = /^(shm|shmht):(.*)$/i.exec(arg);
    if (!m) continue;
    const before = textOf(r.node);
    const after = `SSLSessionCache shmcb:${m[2]}`;
    u.replace(r, [after], rule);
    u.report(rule, r, 'change', `2.4 has no "${m[1]}" session cache ("'${m[1]}' session cache not supported"); shmcb, 2.2's default shared-memory cache, keeps sessions in shared memory the same way (mod_socache_shmcb).`, before, after);
  }
}

export const sslRules: Rule[] = [
  { id: 'ssl.session-cache-shm', title: 'SSLSessionCache shm:/shmht: becomes shmcb:', spec: ['9.4 built separately'], run: sessionCacheShm },
  { id: 'ssl.sslv2', title: 'SSLv2 removed from SSLProtocol and SSLCipherSuite', spec: ['2.5 The SSLv2 protocol'], run: sslv2 },
  { id: 'ssl.ca-revocation-check', title: 'SSLCARevocationCheck added where CRLs are configured', spec: ['2.3 SSLCARevocationCheck'], run: revocationCheck },
  { id: 'ssl.legacy-dn-string-format', title: 'SSLOptions +LegacyDNStringFormat where *_DN variables are used', spec: ['2.3 SSLOptions'], run: legacyDn },
];
