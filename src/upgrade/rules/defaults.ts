// Defaults that changed (specification 2.2). Where the 2.2 configuration relied on the old
// default, --keep-2.2-defaults writes the 2.2 value explicitly; otherwise a note says what
// changes. AllowOverride is special: .htaccess files that 2.2 read (and that hold access
// rules) would silently stop applying, so when they are known the override is kept.

import * as path from 'node:path';
import type { ConfigNode } from '../../server/config/tree.js';
import type { Rule } from '../model.js';
import { atServerLevel, is, textOf, vhostOf, words, type Ref, type Upgrade } from '../engine.js';

// ---- AllowOverride ------------------------------------------------------------------------

interface DirSection { ref: Ref; dir: string }

function plainDirectories(u: Upgrade): DirSection[] {
  const out: DirSection[] = [];
  for (const r of u.sectionsNamed('Directory')) {
    const p = words(r.node)[0];
    if (!p || p === '~' || /[*?[]/.test(p)) continue;
    out.push({ ref: r, dir: path.resolve(u.serverRoot, p) });
  }
  return out;
}

function covers(dir: string, target: string): boolean {
  return dir === '/' || target === dir || target.startsWith(dir.endsWith('/') ? dir : dir + '/');
}

/** The AllowOverride that applies to a directory from <Directory> sections (undefined: none does). */
function overrideFor(dirs: readonly DirSection[], target: string, vh: ConfigNode | undefined | 'any'): DirSection | undefined {
  let best: DirSection | undefined;
  for (const d of dirs) {
    const dvh = vhostOf(d.ref);
    if (vh !== 'any' && dvh !== undefined && dvh !== vh) continue;
    if (!covers(d.dir, target)) continue;
    if (!(d.ref.node.children ?? []).some((c) => c.kind === 'directive' && is(c, 'AllowOverride'))) continue;
    if (!best || d.dir.length >= best.dir.length) best = d;
  }
  return best;
}

function allowOverride(u: Upgrade): void {
  const rule = 'defaults.allow-override';
  const dirs = plainDirectories(u);
  // Directories 2.2 served with the default (AllowOverride All): document roots and aliased
  // directories that no <Directory> gives an AllowOverride.
  const served: { dir: string; ref: Ref; vh: ConfigNode | undefined }[] = [];
  for (const r of u.named('DocumentRoot')) {
    const p = words(r.node)[0];
    if (p) served.push({ dir: path.resolve(u.serverRoot, p), ref: r, vh: vhostOf(r) });
  }
  for (const r of u.named('Alias', 'AliasMatch')) {
    const w = words(r.node);
    if (w.length >= 2 && !is(r.node, 'AliasMatch')) served.push({ dir: path.resolve(u.serverRoot, w[1]!), ref: r, vh: vhostOf(r) });
  }
  const relying = served.filter((s) => overrideFor(dirs, s.dir, s.vh) === undefined);
  const htaccessRelying = u.htaccess.filter((d) => {
    const dir = path.dirname(d.path);
    return overrideFor(dirs, dir, 'any') === undefined && d.nodes.some((n) => n.kind === 'directive' || n.kind === 'section');
  });
  if (relying.length === 0 && htaccessRelying.length === 0) return;
  const rootSection = dirs.find((d) => d.dir === '/' && vhostOf(d.ref) === undefined && d.ref.doc.kind !== 'htaccess');
  if (u.opts.keep22Defaults) {
    if (rootSection) {
      u.append(rootSection.ref.doc, rootSection.ref.node, ['AllowOverride All'], rule, '2.2 default kept (--keep-2.2-defaults)');
      u.report(rule, rootSection.ref, 'change', allowMsg(relying.map((s) => s.dir)), textOf(rootSection.ref.node), 'AllowOverride All');
    } else {
      const ref = u.addServerWide(['<Directory />', '    AllowOverride All', '</Directory>'], rule, '2.2 default kept (--keep-2.2-defaults)');
      u.report(rule, ref, 'change', allowMsg(relying.map((s) => s.dir)), '', '<Directory />\n    AllowOverride All\n</Directory>');
    }
    return;
  }
  if (htaccessRelying.length > 0) {
    // Keep the .htaccess files working where they are: AllowOverride All in the most specific
    // <Directory> that holds them, or a new <Directory> for their directory.
    const done = new Set<ConfigNode | string>();
    for (const d of htaccessRelying) {
      const dir = path.dirname(d.path);
      let best: DirSection | undefined;
      for (const s of dirs) {
        if (vhostOf(s.ref) !== undefined || s.ref.doc.kind === 'htaccess' || s.dir === '/') continue;
        if (covers(s.dir, dir) && (!best || s.dir.length > best.dir.length)) best = s;
      }
      const key = best ? best.ref.node : dir;
      if (done.has(key)) continue;
      done.add(key);
      const why = `${d.display} holds directives that 2.2 applied (its default was AllowOverride All); 2.4's default None would ignore the file`;
      if (best) {
        u.append(best.ref.doc, best.ref.node, ['AllowOverride All'], rule, 'keeps the .htaccess files below working');
        u.report(rule, best.ref, 'change', `${why}. AllowOverride All added to <Directory ${best.ref.node.args}>.`, textOf(best.ref.node), 'AllowOverride All');
      } else {
        const lines = [`<Directory "${dir}">`, '    AllowOverride All', '</Directory>'];
        const ref = u.addServerWide(lines, rule, 'keeps the .htaccess file working');
        u.report(rule, ref, 'change', `${why}. A <Directory> section with AllowOverride All added for it.`, '', lines.join('\n'));
      }
    }
    return;
  }
  const first = relying[0]!;
  u.report(rule, first.ref, 'note',
    `${allowMsg(relying.map((s) => s.dir))} If .htaccess files there must still apply, add AllowOverride (e.g. All) to their <Directory>, or run with --keep-2.2-defaults`
    + (u.opts.htaccess === false ? ' (.htaccess files were not searched: --no-htaccess).' : ' (no .htaccess file was found there today).'),
    textOf(first.ref.node), '');
}

function allowMsg(dirs: readonly string[]): string {
  const list = [...new Set(dirs)];
  return `AllowOverride defaults to None in 2.4 (All in 2.2): .htaccess files under ${list.slice(0, 3).join(', ')}${list.length > 3 ? ', ...' : ''} are no longer read.`;
}

// ---- simple server-wide defaults ----------------------------------------------------------

function serverDefault(u: Upgrade, rule: string, directive: string, old: string, now: string, extra: string): void {
  if (u.named(directive).length > 0) return;
  const msg = `${directive} defaults to ${now} in 2.4 (${old} in 2.2) and this configuration does not set it.${extra}`;
  if (u.opts.keep22Defaults) {
    const line = `${directive} ${old}`;
    const ref = u.addServerWide([line], rule, '2.2 default kept (--keep-2.2-defaults)');
    u.report(rule, ref, 'change', msg, '', line);
    return;
  }
  u.report(rule, { doc: u.main, line: 0 }, 'note', `${msg} --keep-2.2-defaults writes "${directive} ${old}".`, '', '');
}

function servesFiles(u: Upgrade): boolean {
  return u.named('DocumentRoot', 'Alias').length > 0;
}

// ---- SSLProxyCheckPeerCN / SSLProxyCheckPeerExpire ------------------------------------------

function sslProxyCheck(u: Upgrade, rule: string, directive: string): void {
  for (const r of u.named('SSLProxyEngine')) {
    if (!/^on$/i.test(r.node.args.trim()) || !atServerLevel(r)) continue;
    const vh = vhostOf(r);
    const set = u.named(directive).some((x) => vhostOf(x) === vh || (vh !== undefined && vhostOf(x) === undefined && atServerLevel(x)));
    if (set) continue;
    const msg = `${directive} defaults to On in 2.4 (Off in 2.2): a proxied request to an HTTPS backend whose certificate `
      + `${directive.endsWith('CN') ? 'names another host' : 'has expired'} now fails with 502 Bad Gateway.`;
    if (u.opts.keep22Defaults) {
      const line = `${directive} Off`;
      u.insertAfter(r, [line], rule, '2.2 default kept (--keep-2.2-defaults)');
      u.report(rule, r, 'change', msg, textOf(r.node), line);
    } else {
      u.report(rule, r, 'note', `${msg} Fix the backend certificates, or write "${directive} Off" (--keep-2.2-defaults does).`, textOf(r.node), '');
    }
  }
}

// ---- htpasswd -----------------------------------------------------------------------------

function htpasswdMd5(u: Upgrade): void {
  const rule = 'defaults.htpasswd-md5';
  const r = u.named('AuthUserFile')[0];
  if (!r) return;
  u.report(rule, r, 'note',
    'htpasswd hashes new passwords with MD5 ($apr1$) on every platform in 2.4; 2.2\'s htpasswd used crypt() on Unix. Existing entries keep working; '
    + 'scripts that expect crypt() hashes must pass -d (plume htpasswd -d ...).', textOf(r.node), '');
}

// ---- mod_proxy_scgi PATH_INFO ---------------------------------------------------------------

function proxyScgi(u: Upgrade): void {
  const rule = 'defaults.proxy-scgi-pathinfo';
  const users = u.allRefs().filter((r) => r.node.kind === 'directive' && /\bscgi:\/\//i.test(r.node.args)
    && (is(r.node, 'ProxyPass') || is(r.node, 'ProxyPassMatch') || is(r.node, 'RewriteRule') || is(r.node, 'BalancerMember')));
  const servers = new Map<ConfigNode | undefined, Ref>();
  for (const r of users) if (!servers.has(vhostOf(r))) servers.set(vhostOf(r), r);
  for (const [vh, r] of servers) {
    const set = u.allRefs().some((x) => x.node.kind === 'directive' && /\bproxy-scgi-pathinfo\b/i.test(x.node.args) && (vhostOf(x) === vh || vhostOf(x) === undefined));
    if (set) continue;
    const msg = 'mod_proxy_scgi no longer creates PATH_INFO by default in 2.4 (2.2 sent its best guess); applications that read PATH_INFO need the proxy-scgi-pathinfo variable.';
    if (u.opts.keep22Defaults) {
      const line = 'SetEnvIf Request_URI . proxy-scgi-pathinfo';
      u.insertBefore(r, [line], rule, '2.2 behaviour kept (--keep-2.2-defaults)');
      u.report(rule, r, 'change', msg, textOf(r.node), line);
    } else {
      u.report(rule, r, 'note', `${msg} Add "SetEnvIf Request_URI . proxy-scgi-pathinfo" (--keep-2.2-defaults does).`, textOf(r.node), '');
    }
  }
}

// ---- mod_reqtimeout -------------------------------------------------------------------------

function reqtimeout(u: Upgrade): void {
  const rule = 'defaults.reqtimeout';
  const load = u.named('LoadModule').find((r) => words(r.node)[0] === 'reqtimeout_module');
  if (!load || u.named('RequestReadTimeout').length > 0) return;
  const msg = 'mod_reqtimeout is loaded and RequestReadTimeout is not set: 2.4 then applies default timeouts '
    + '(header=20-40,MinRate=500 body=20,MinRate=500); 2.2 applied none. Slow clients that 2.2 waited for now get 408.';
  if (u.opts.keep22Defaults) {
    const lines = ['<IfModule reqtimeout_module>', '    RequestReadTimeout header=0 body=0', '</IfModule>'];
    const ref = u.addServerWide(lines, rule, '2.2 default kept (--keep-2.2-defaults)');
    u.report(rule, ref, 'change', msg, textOf(load.node), lines.join('\n'));
  } else {
    u.report(rule, load, 'note', `${msg} "RequestReadTimeout header=0 body=0" keeps 2.2's behaviour (--keep-2.2-defaults writes it).`, textOf(load.node), '');
  }
}

export const defaultsRules: Rule[] = [
  { id: 'defaults.allow-override', title: 'AllowOverride default All -> None', spec: ['2.2 AllowOverride', '7.3 AllowOverride'], run: allowOverride },
  {
    id: 'defaults.enable-sendfile', title: 'EnableSendfile default On -> Off', spec: ['2.2 EnableSendfile'],
    run: (u) => { if (servesFiles(u)) serverDefault(u, 'defaults.enable-sendfile', 'EnableSendfile', 'On', 'Off', ' Static files are copied through user space instead of sendfile().'); },
  },
  {
    id: 'defaults.file-etag', title: 'FileETag default INode MTime Size -> MTime Size', spec: ['2.2 FileETag'],
    run: (u) => { if (servesFiles(u)) serverDefault(u, 'defaults.file-etag', 'FileETag', 'INode MTime Size', 'MTime Size', ' ETags change once after the upgrade (caches revalidate), and no longer differ between servers that share the files.'); },
  },
  { id: 'defaults.ssl-proxy-check-peer-cn', title: 'SSLProxyCheckPeerCN default Off -> On', spec: ['2.2 SSLProxyCheckPeerCN', '2.5 SSLProxyCheckPeer 502', '7.2 502'], run: (u) => sslProxyCheck(u, 'defaults.ssl-proxy-check-peer-cn', 'SSLProxyCheckPeerCN') },
  { id: 'defaults.ssl-proxy-check-peer-expire', title: 'SSLProxyCheckPeerExpire default Off -> On', spec: ['2.2 SSLProxyCheckPeerExpire', '2.5 SSLProxyCheckPeer 502', '7.2 502'], run: (u) => sslProxyCheck(u, 'defaults.ssl-proxy-check-peer-expire', 'SSLProxyCheckPeerExpire') },
  { id: 'defaults.htpasswd-md5', title: 'htpasswd hashes with MD5 by default', spec: ['2.2 htpasswd password hash'], run: htpasswdMd5 },
  { id: 'defaults.proxy-scgi-pathinfo', title: 'mod_proxy_scgi PATH_INFO (proxy-scgi-pathinfo)', spec: ['2.2 mod_proxy_scgi PATH_INFO'], run: proxyScgi },
  { id: 'defaults.reqtimeout', title: 'mod_reqtimeout default timeouts', spec: ['2.2 mod_reqtimeout', '8 mod_reqtimeout default timeout values'], run: reqtimeout },
];
