// Modules (specification 2.4, 7.1, 9): the LoadModule lines 2.4 needs (the MPM, mod_unixd,
// mod_authn_core, mod_authz_core, mod_filter, mod_access_compat while something kept needs it,
// mod_cache_disk, the lbmethod modules), modules 2.4 removed, third-party modules that must be
// rebuilt, and notes for modules whose behaviour changed.

import type { Rule } from '../model.js';
import { readBy24, textOf, words, type Ref, type Upgrade } from '../engine.js';
import { conditionHolds, type ModelOptions } from '../scope.js';
import { DIRECTIVE_MODULES } from '../../server/config/directive-modules.js';

/** httpd 2.2's standard modules (the modules/ tree of 2.2.x). */
const STANDARD_22 = new Set([
  'authn_file', 'authn_dbm', 'authn_anon', 'authn_dbd', 'authn_default', 'authn_alias', 'authz_host', 'authz_groupfile',
  'authz_user', 'authz_dbm', 'authz_owner', 'authz_default', 'authnz_ldap', 'auth_basic', 'auth_digest', 'cache',
  'disk_cache', 'mem_cache', 'file_cache', 'dbd', 'dumpio', 'echo', 'case_filter', 'case_filter_in', 'example',
  'ext_filter', 'include', 'filter', 'substitute', 'charset_lite', 'deflate', 'reqtimeout', 'status', 'autoindex', 'asis',
  'info', 'suexec', 'cgi', 'cgid', 'mime', 'log_config', 'log_forensic', 'logio', 'ldap', 'vhost_alias', 'negotiation',
  'dir', 'imagemap', 'actions', 'speling', 'userdir', 'alias', 'rewrite', 'so', 'env', 'mime_magic', 'cern_meta',
  'expires', 'headers', 'ident', 'usertrack', 'unique_id', 'setenvif', 'version', 'proxy', 'proxy_connect', 'proxy_ftp',
  'proxy_http', 'proxy_ajp', 'proxy_balancer', 'proxy_scgi', 'ssl', 'dav', 'dav_fs', 'dav_lock', 'bucketeer',
  'optional_hook_export', 'optional_hook_import', 'optional_fn_import', 'optional_fn_export', 'isapi', 'nw_ssl',
]);

/** httpd 2.4's standard modules. */
const STANDARD_24 = new Set([
  'access_compat', 'actions', 'alias', 'allowmethods', 'asis', 'auth_basic', 'auth_digest', 'auth_form', 'authn_anon',
  'authn_core', 'authn_dbd', 'authn_dbm', 'authn_file', 'authn_socache', 'authnz_fcgi', 'authnz_ldap', 'authz_core',
  'authz_dbd', 'authz_dbm', 'authz_groupfile', 'authz_host', 'authz_owner', 'authz_user', 'autoindex', 'brotli', 'buffer',
  'bucketeer', 'cache', 'cache_disk', 'cache_socache', 'case_filter', 'case_filter_in', 'cern_meta', 'cgi', 'cgid',
  'charset_lite', 'data', 'dav', 'dav_fs', 'dav_lock', 'dbd', 'deflate', 'dialup', 'dir', 'dumpio', 'echo', 'env',
  'expires', 'ext_filter', 'file_cache', 'filter', 'headers', 'heartbeat', 'heartmonitor', 'http2', 'ident', 'imagemap',
  'include', 'info', 'lbmethod_bybusyness', 'lbmethod_byrequests', 'lbmethod_bytraffic', 'lbmethod_heartbeat', 'ldap',
  'log_config', 'log_debug', 'log_forensic', 'logio', 'lua', 'macro', 'md', 'mime', 'mime_magic', 'mpm_event',
  'mpm_prefork', 'mpm_worker', 'negotiation', 'proxy', 'proxy_ajp', 'proxy_balancer', 'proxy_connect', 'proxy_express',
  'proxy_fcgi', 'proxy_fdpass', 'proxy_ftp', 'proxy_hcheck', 'proxy_html', 'proxy_http', 'proxy_http2', 'proxy_scgi',
  'proxy_uwsgi', 'proxy_wstunnel', 'ratelimit', 'reflector', 'remoteip', 'reqtimeout', 'request', 'rewrite', 'sed',
  'session', 'session_cookie', 'session_crypto', 'session_dbd', 'setenvif', 'slotmem_plain', 'slotmem_shm', 'socache_dbm',
  'socache_memcache', 'socache_redis', 'socache_shmcb', 'speling', 'ssl', 'status', 'substitute', 'suexec', 'unique_id',
  'unixd', 'userdir', 'usertrack', 'version', 'vhost_alias', 'watchdog', 'xml2enc', 'privileges', 'systemd', 'so',
  'optional_hook_export', 'optional_hook_import', 'optional_fn_import', 'optional_fn_export', 'isapi', 'nw_ssl',
]);

const base = (symbol: string): string => symbol.replace(/_module$/, '');

function loadRefs(u: Upgrade): { ref: Ref; symbol: string; file: string }[] {
  return u.named('LoadModule').map((r) => {
    const w = words(r.node);
    return { ref: r, symbol: w[0] ?? '', file: w[1] ?? '' };
  });
}

function need(u: Upgrade, symbol: string): boolean {
  return !u.loadedModules().has(symbol);
}

/** Adds one LoadModule line (guarded for modules some builds compile in). */
function add(u: Upgrade, rule: string, symbol: string, message: string, why: string, guard = false): void {
  if (!need(u, symbol)) return;
  const line = `LoadModule ${symbol} ${u.moduleDir()}mod_${base(symbol)}.so`;
  const ref = u.addLoadModules([{ symbol, file: `mod_${base(symbol)}.so`, guard }], rule, why);
  u.report(rule, ref ?? { doc: u.main, line: 0 }, 'change', message, '', guard ? `<IfModule !${symbol}>\n    ${line}\n</IfModule>` : line);
}

const directiveUsed = (u: Upgrade, ...names: string[]): Ref | undefined => u.named(...names)[0];

// ---- the rules ------------------------------------------------------------------------------

function mpm(u: Upgrade): void {
  if ([...u.loadedModules()].some((m) => /^mpm_.*_module$/.test(m))) return;
  const m = u.opts.mpm;
  add(u, 'modules.mpm', `mpm_${m}_module`,
    `httpd 2.2 compiled its MPM in; 2.4 loads it as a module. ${m} is loaded (2.2's default on Unix${m === 'prefork' ? '' : ': chosen with --mpm'}); `
    + 'the <IfModule mpm_*_module> / <IfModule prefork.c> sections of the configuration decide which tuning applies.',
    '2.4 loads the MPM as a module', true);
}

/** Whether the configuration was written for a 2.4 build: it loads its MPM as a module (2.2
 *  compiled the MPM in). Such a configuration that never loads mod_unixd or mod_log_config
 *  comes from a build that compiled them in (Debian's), which refuses a LoadModule for them. */
function writtenFor24(u: Upgrade): boolean {
  return u.named('LoadModule').some((r) => /^mpm_\w+_module$/.test(words(r.node)[0] ?? '') && !r.doc.isInserted(r.node));
}

function unixd(u: Upgrade): void {
  const r = directiveUsed(u, 'User', 'Group', 'Suexec');
  if (!r || writtenFor24(u)) return;
  add(u, 'modules.unixd', 'unixd_module',
    `User and Group are provided by mod_unixd in 2.4 ("Invalid command 'User'" without it); ${r.node.name} is used at ${r.doc.display}:${r.node.line}.`,
    'provides User and Group', true);
}

const AUTHN_DIRECTIVES = ['AuthType', 'AuthName', 'AuthUserFile', 'AuthBasicProvider', 'AuthDigestProvider', 'AuthDBMUserFile', 'AuthGroupFile', 'AuthDBMGroupFile'];

function authnCore(u: Upgrade): void {
  const r = directiveUsed(u, ...AUTHN_DIRECTIVES) ?? u.sectionsNamed('AuthnProviderAlias')[0];
  if (!r) return;
  add(u, 'modules.authn-core', 'authn_core_module',
    'mod_authn_core provides AuthType, AuthName and AuthnProviderAlias in 2.4; without it requests that need a login fail with "configuration error: couldn\'t check user".',
    'core authentication (AuthType, AuthName)');
}

function authzCore(u: Upgrade): void {
  const r = directiveUsed(u, 'Require') ?? u.sectionsNamed('RequireAll', 'RequireAny', 'RequireNone')[0] ?? u.named(...COMPAT).find(readBy24);
  if (!r) return;
  add(u, 'modules.authz-core', 'authz_core_module',
    'mod_authz_core provides Require and the <RequireAll>/<RequireAny>/<RequireNone> containers in 2.4 ("Invalid command \'Require\'" without it).',
    'provides Require');
}

/** The provider modules the Require lines name. */
function authzProviders(u: Upgrade): void {
  const rule = 'modules.authz-providers';
  const wanted = new Map<string, string>();
  for (const r of u.named('Require')) {
    const w = words(r.node);
    const p = (w[0] === 'not' ? w[1] : w[0])?.toLowerCase();
    if (p === 'ip' || p === 'host' || p === 'local' || p === 'forward-dns') wanted.set('authz_host_module', p);
    else if (p === 'user' || p === 'valid-user') wanted.set('authz_user_module', p);
    else if (p === 'group') wanted.set('authz_groupfile_module', p);
    else if (p === 'dbm-group') wanted.set('authz_dbm_module', p);
    else if (p === 'file-owner' || p === 'file-group') wanted.set('authz_owner_module', p);
  }
  for (const [symbol, p] of wanted) {
    add(u, rule, symbol, `"Require ${p}" is provided by mod_${base(symbol)} in 2.4.`, `provides Require ${p}`);
  }
}

const COMPAT = ['Order', 'Allow', 'Deny', 'Satisfy'];

function accessCompat(u: Upgrade): void {
  const rule = 'modules.access-compat';
  const kept = u.named(...COMPAT).find(readBy24);
  const loaded = loadRefs(u).find((l) => l.symbol === 'access_compat_module');
  if (kept && !loaded) {
    add(u, rule, 'access_compat_module',
      `Order/Allow/Deny/Satisfy are kept where no exact Require form exists (see the access.* findings); mod_access_compat provides them in 2.4 ("Invalid command 'Order'" without it). ${kept.node.name} at ${kept.doc.display}:${kept.node.line}.`,
      'still needed by the Order/Allow/Deny lines kept');
    return;
  }
  if (!kept && loaded && u.findings.some((f) => f.rule.startsWith('access.') && f.severity === 'change')) {
    const before = textOf(loaded.ref.node);
    u.remove(loaded.ref, rule, 'nothing uses it any more');
    u.report(rule, loaded.ref, 'change', 'mod_access_compat exists only for configurations that still use Order/Allow/Deny/Satisfy; none is left.', before, '');
  }
}

function filter(u: Upgrade): void {
  const r = directiveUsed(u, 'AddOutputFilterByType', 'FilterProvider', 'FilterDeclare', 'FilterChain', 'FilterProtocol', 'FilterTrace');
  if (!r) return;
  add(u, 'modules.filter', 'filter_module',
    `${r.node.name} is provided by mod_filter in 2.4 (AddOutputFilterByType moved there from the core: "Invalid command 'AddOutputFilterByType'" without it).`,
    `provides ${r.node.name}`);
}

function cacheDisk(u: Upgrade): void {
  const rule = 'modules.cache-disk';
  for (const l of loadRefs(u)) {
    if (l.symbol === 'disk_cache_module') {
      const dir = l.file.includes('/') ? l.file.slice(0, l.file.lastIndexOf('/') + 1) : '';
      const after = `LoadModule cache_disk_module ${dir}mod_cache_disk.so`;
      const before = textOf(l.ref.node);
      u.replace(l.ref, [after], rule);
      u.report(rule, l.ref, 'change', 'mod_disk_cache is called mod_cache_disk in 2.4 (built and loaded separately); its directives keep their names and "CacheEnable disk" is unchanged.', before, after);
    } else if (l.symbol === 'mem_cache_module') {
      const before = textOf(l.ref.node);
      u.remove(l.ref, rule, 'mod_mem_cache was removed in 2.4');
      u.report(rule, l.ref, 'manual', 'mod_mem_cache was removed in 2.4.', before,
        'Use mod_cache_disk (CacheEnable disk) or mod_cache_socache (CacheEnable socache) for the "CacheEnable mem" lines.');
    }
  }
  for (const r of u.named('CacheEnable')) {
    if ((words(r.node)[0] ?? '').toLowerCase() === 'mem' && !u.acknowledged(r, rule)) {
      u.insertBefore(r, [], rule, 'mod_mem_cache is gone: use disk or socache');
      u.report(rule, r, 'manual', 'CacheEnable mem needs mod_mem_cache, which 2.4 removed.', textOf(r.node), 'Write "CacheEnable disk ..." (mod_cache_disk) or "CacheEnable socache ..." (mod_cache_socache).');
    }
  }
  // <IfModule> sections that name mod_disk_cache would never apply again.
  for (const r of u.sectionsNamed('IfModule')) {
    const arg = words(r.node)[0] ?? '';
    const m = /^(!?)(mod_disk_cache\.c|disk_cache_module)$/.exec(arg);
    if (!m) continue;
    const to = m[2] === 'disk_cache_module' ? 'cache_disk_module' : 'mod_cache_disk.c';
    const before = `<IfModule ${arg}>`;
    r.doc.retitle(r.node, m[2]!, to);
    u.touched();
    u.report(rule, r, 'change', `mod_disk_cache is mod_cache_disk in 2.4: without the new name this section would never apply.`, before, `<IfModule ${m[1]}${to}>`);
  }
  // CacheEnable disk with no module to serve it.
  const usesDisk = u.named('CacheEnable').some((r) => (words(r.node)[0] ?? '').toLowerCase() === 'disk');
  if (usesDisk) add(u, rule, 'cache_disk_module', '"CacheEnable disk" needs mod_cache_disk, which 2.4 builds and loads separately.', 'serves CacheEnable disk');
}

function lbmethod(u: Upgrade): void {
  const rule = 'modules.lbmethod';
  const balancers = u.allRefs().some((r) => /balancer:\/\//i.test(`${r.node.name} ${r.node.args}`)) || u.loadedModules().has('proxy_balancer_module');
  if (!balancers) return;
  const methods = new Set<string>();
  for (const r of u.allRefs()) {
    const m = /\blbmethod=([a-z]+)/i.exec(r.node.args);
    if (m) methods.add(m[1]!.toLowerCase());
  }
  if (methods.size === 0) methods.add('byrequests');
  for (const m of methods) {
    if (!['byrequests', 'bytraffic', 'bybusyness', 'heartbeat'].includes(m)) continue;
    add(u, rule, `lbmethod_${m}_module`,
      `Each load-balancing method is a module of its own in 2.4; the balancers here use lbmethod=${m}${methods.size === 1 && m === 'byrequests' ? ' (the default)' : ''}.`,
      `provides lbmethod=${m}`);
  }
  add(u, rule, 'slotmem_shm_module', 'mod_proxy_balancer keeps its shared state through mod_slotmem_shm in 2.4.', 'needed by mod_proxy_balancer');
}

/** Modules some 2.4 builds compile in (Debian's: mod_log_config, mod_logio, mod_version,
 *  mod_unixd); such a build refuses "LoadModule" for them, so the line is guarded. */
const OFTEN_BUILT_IN = new Set(['log_config_module', 'logio_module', 'version_module', 'unixd_module', 'watchdog_module', 'so_module']);

function builtIn(u: Upgrade): void {
  const rule = 'modules.built-in';
  for (const l of loadRefs(u)) {
    if (!OFTEN_BUILT_IN.has(l.symbol)) continue;
    const guarded = l.ref.sections.some((s) => s.name.toLowerCase() === 'ifmodule' && s.args.replace(/\s/g, '') === `!${l.symbol}`);
    if (guarded) continue;
    const before = textOf(l.ref.node);
    const lines = [`<IfModule !${l.symbol}>`, `    ${before}`, '</IfModule>'];
    u.replace(l.ref, lines, rule, 'some 2.4 builds compile this module in');
    u.report(rule, l.ref, 'change',
      `${l.symbol} is compiled into some 2.4 builds (Debian's), which refuse to load it again ("module ${l.symbol} is built-in and can't be loaded"); the line is wrapped so it loads only where the module is not built in.`,
      before, lines.join('\n'));
  }
}

function removed(u: Upgrade): void {
  const rule = 'modules.removed';
  const gone: Record<string, string> = {
    authn_default_module: 'mod_authn_default was removed in 2.4 (mod_authn_core answers for unconfigured authentication).',
    authz_default_module: 'mod_authz_default was removed in 2.4 (mod_authz_core decides when no Require applies).',
    authn_alias_module: 'mod_authn_alias was removed: AuthnProviderAlias is provided by mod_authn_core in 2.4.',
  };
  for (const l of loadRefs(u)) {
    const why = gone[l.symbol];
    if (!why) continue;
    const before = textOf(l.ref.node);
    u.remove(l.ref, rule, 'module removed in 2.4');
    u.report(rule, l.ref, 'change', why, before, '');
  }
}

function thirdParty(u: Upgrade): void {
  const rule = 'modules.third-party';
  for (const l of loadRefs(u)) {
    const b = base(l.symbol);
    if (STANDARD_22.has(b) || STANDARD_24.has(b)) continue;
    if (u.acknowledged(l.ref, rule)) continue;
    u.insertBefore(l.ref, [], rule, 'rebuild this module against 2.4 before loading it');
    u.report(rule, l.ref, 'manual',
      `${l.symbol} is not a standard httpd module: every module must be recompiled against 2.4 before it is loaded (many 2.2 modules build unchanged; some need the source changes listed in the API update overview).`,
      textOf(l.ref.node), `Rebuild ${l.file || l.symbol} for httpd 2.4 (or install the 2.4 package of it).`);
  }
}

function davLockDb(u: Upgrade): void {
  const rule = 'modules.dav-lockdb';
  for (const r of u.named('DavLockDB')) {
    if (u.acknowledged(r, rule)) continue;
    const file = words(r.node)[0] ?? '';
    u.insertBefore(r, [], rule, 'delete the 2.2 lock database before starting 2.4');
    u.report(rule, r, 'manual', 'mod_dav_fs changed the format of the DavLockDB file on systems with inodes; 2.4 cannot use the 2.2 file.', textOf(r.node),
      `Stop the server and delete ${file}* (the old lock database) before starting 2.4.`);
  }
}

function deflateNote(u: Upgrade): void {
  const deflate = loadRefs(u).find((l) => l.symbol === 'deflate_module');
  if (!deflate) return;
  u.report('modules.deflate', deflate.ref, 'note',
    'mod_deflate skips compression when it knows the added overhead would exceed the data (very small responses are now sent uncompressed).', textOf(deflate.ref.node), '');
}

function autoindexNote(u: Upgrade): void {
  const autoindex = loadRefs(u).find((l) => l.symbol === 'autoindex_module');
  if (!autoindex) return;
  if (!u.named('IndexOptions', 'AddDescription').some((r) => /scanhtmltitles|\.xhtml|adddescription/i.test(`${r.node.name} ${r.node.args}`))) return;
  u.report('modules.autoindex-xhtml', autoindex.ref, 'note',
    'mod_autoindex now extracts titles (ScanHTMLTitles) and shows descriptions for .xhtml files, which 2.2 ignored: directory listings may show more text.', textOf(autoindex.ref.node), '');
}

function substituteNote(u: Upgrade): void {
  const subst = u.named('Substitute')[0];
  if (!subst) return;
  u.report('modules.substitute-line-limit', subst, 'note',
    'mod_substitute limits a line to 1 MB in 2.4 (SubstituteMaxLineLength); responses with longer lines fail instead of being rewritten.', textOf(subst.node), '');
}


// ---- every module the 2.4 configuration needs ------------------------------------------------

/** Modules another module needs loaded in 2.4 (its providers, its shared memory, its base). */
const DEPENDS: Readonly<Record<string, readonly string[]>> = {
  proxy_balancer_module: ['proxy_module', 'slotmem_shm_module'],
  lbmethod_byrequests_module: ['proxy_balancer_module'],
  lbmethod_bytraffic_module: ['proxy_balancer_module'],
  lbmethod_bybusyness_module: ['proxy_balancer_module'],
  lbmethod_heartbeat_module: ['proxy_balancer_module'],
  proxy_http_module: ['proxy_module'], proxy_ftp_module: ['proxy_module'], proxy_connect_module: ['proxy_module'],
  proxy_ajp_module: ['proxy_module'], proxy_scgi_module: ['proxy_module'], proxy_fcgi_module: ['proxy_module'],
  proxy_uwsgi_module: ['proxy_module'], proxy_wstunnel_module: ['proxy_module'], proxy_express_module: ['proxy_module'],
  proxy_fdpass_module: ['proxy_module'], proxy_http2_module: ['proxy_module'],
  proxy_hcheck_module: ['proxy_module', 'watchdog_module'],
  proxy_html_module: ['xml2enc_module'],
  cache_disk_module: ['cache_module'], cache_socache_module: ['cache_module'],
  dav_fs_module: ['dav_module'], dav_lock_module: ['dav_module'],
  authnz_ldap_module: ['ldap_module'],
  authn_dbd_module: ['dbd_module'], authz_dbd_module: ['dbd_module'], session_dbd_module: ['session_module', 'dbd_module'],
  session_cookie_module: ['session_module'], session_crypto_module: ['session_module'],
  heartbeat_module: ['watchdog_module'], heartmonitor_module: ['watchdog_module'],
};

/** Module symbols 2.4 builds always compile in. */
const STATIC_24 = ['core_module', 'so_module', 'http_core_module'];

/** socache provider names (SSLSessionCache, SSLStaplingCache, AuthnCacheSOCache, CacheSocache). */
const SOCACHE: Readonly<Record<string, string>> = {
  shmcb: 'socache_shmcb_module', dbm: 'socache_dbm_module', memcache: 'socache_memcache_module', dc: 'socache_dc_module', redis: 'socache_redis_module',
};

/** Authentication providers (AuthBasicProvider, AuthDigestProvider). */
const AUTHN_PROVIDERS: Readonly<Record<string, string>> = {
  file: 'authn_file_module', dbm: 'authn_dbm_module', anon: 'authn_anon_module', dbd: 'authn_dbd_module', ldap: 'authnz_ldap_module', socache: 'authn_socache_module',
};

/** Whether 2.4 reads a node, given the modules loaded and the -D names: every enclosing
 *  <IfModule>/<IfDefine>/<IfVersion> holds, and it is not the 2.2 branch of a dual section. */
function readWith(ref: Ref, loaded: ReadonlySet<string>, opts: ModelOptions): boolean {
  if (!readBy24(ref)) return false;
  return ref.sections.every((s) => !/^(ifmodule|ifdefine|ifversion)$/i.test(s.name) || conditionHolds(s, loaded, opts));
}

/** The modules a directive needs in 2.4 beyond the one that provides it. */
function providersOf(ref: Ref): { symbol: string; why: string }[] {
  const n = ref.node.name.toLowerCase();
  const w = words(ref.node);
  const out: { symbol: string; why: string }[] = [];
  if (n === 'sslsessioncache' || n === 'sslstaplingcache' || n === 'authncachesocache' || n === 'cachesocache') {
    const name = (w[0] ?? '').replace(/:.*$/, '').toLowerCase();
    const sym = SOCACHE[name === 'shm' || name === 'shmht' ? 'shmcb' : name];
    if (sym) out.push({ symbol: sym, why: `${ref.node.name} ${name} needs the socache provider "${name}", a module of its own in 2.4` });
  }
  if (n === 'authbasicprovider' || n === 'authdigestprovider') {
    for (const p of w) {
      const sym = AUTHN_PROVIDERS[p.toLowerCase()];
      if (sym) out.push({ symbol: sym, why: `${ref.node.name} ${p} needs the "${p}" authentication provider` });
    }
  }
  if (n === 'authtype' && /^basic$/i.test(w[0] ?? '')) out.push({ symbol: 'auth_basic_module', why: 'AuthType Basic is provided by mod_auth_basic' });
  if (n === 'authtype' && /^digest$/i.test(w[0] ?? '')) out.push({ symbol: 'auth_digest_module', why: 'AuthType Digest is provided by mod_auth_digest' });
  if (n === 'cacheenable' && /^socache$/i.test(w[0] ?? '')) out.push({ symbol: 'cache_socache_module', why: 'CacheEnable socache needs mod_cache_socache' });
  return out;
}

/** Every directive 2.4 reads must come from a loaded module, and every loaded module must have
 *  the modules it depends on: the LoadModule lines missing are added (issue 19 item 16). */
function needed(u: Upgrade): void {
  const rule = 'modules.needed';
  const builtIn = writtenFor24(u) ? [...STATIC_24, ...OFTEN_BUILT_IN] : STATIC_24;
  const opts: ModelOptions = { version: '2.4.71', staticModules: builtIn, defines: u.opts.defines };
  for (let round = 0; round < 8; round++) {
    const loaded = new Set([...builtIn, ...u.loadedModules()]);
    const want = new Map<string, { why: string; at: Ref | undefined }>();
    for (const r of u.allRefs()) {
      if (r.node.kind !== 'directive' && r.node.kind !== 'section') continue;
      if (!readWith(r, loaded, opts)) continue;
      const name = r.node.name.toLowerCase();
      if (r.node.kind === 'directive' && name === 'loadmodule') continue;
      const sym = DIRECTIVE_MODULES[name];
      if (sym && !loaded.has(sym) && !want.has(sym)) want.set(sym, { why: `${r.node.kind === 'section' ? `<${r.node.name}>` : r.node.name} is provided by mod_${base(sym)} in 2.4 ("Invalid command '${r.node.kind === 'section' ? `<${r.node.name}` : r.node.name}'" without it)`, at: r });
      if (r.node.kind === 'directive') for (const p of providersOf(r)) if (!loaded.has(p.symbol) && !want.has(p.symbol)) want.set(p.symbol, { why: p.why, at: r });
    }
    for (const m of loaded) {
      for (const d of DEPENDS[m] ?? []) if (!loaded.has(d) && !want.has(d)) want.set(d, { why: `mod_${base(m)} needs mod_${base(d)} in 2.4`, at: undefined });
    }
    if (want.size === 0) { staticIfModules(u, loaded); return; }
    for (const [sym, w] of want) {
      const line = `LoadModule ${sym} ${u.moduleDir()}mod_${base(sym)}.so`;
      const guard = OFTEN_BUILT_IN.has(sym);
      const ref = u.addLoadModules([{ symbol: sym, file: `mod_${base(sym)}.so`, guard }], rule, w.why.replace(/ \(.*$/, ''));
      u.report(rule, ref ?? { doc: u.main, line: 0 }, 'change',
        `${w.why}${w.at ? ` (${w.at.doc.display}:${w.at.node.line})` : ''}.`, '', guard ? `<IfModule !${sym}>\n    ${line}\n</IfModule>` : line);
    }
  }
}

/** <IfModule mod_x.c> sections for a module no LoadModule loads: a 2.2 build that compiled
 *  the module in read them; 2.4 skips them until the module is loaded. Reported (a note), since
 *  only `httpd -l` on the 2.2 server tells whether it was compiled in. */
function staticIfModules(u: Upgrade, loaded: ReadonlySet<string>): void {
  const seen = new Set<string>();
  for (const r of u.sectionsNamed('IfModule')) {
    const arg = words(r.node)[0] ?? '';
    if (arg.startsWith('!') || r.doc.kind === 'htaccess') continue;
    const sym = arg.endsWith('_module') ? arg : `${arg.replace(/\.c$/, '').replace(/^mod_/, '')}_module`;
    const b = base(sym);
    if (loaded.has(sym) || seen.has(sym) || !STANDARD_22.has(b) || b === 'so' || /^mpm_|^(prefork|worker|event)$/.test(b)) continue;
    if (!(r.node.children ?? []).some((c) => c.kind === 'directive' || c.kind === 'section')) continue;
    seen.add(sym);
    u.report('modules.needed', r, 'note',
      `No LoadModule loads mod_${b}, so 2.4 skips this <IfModule ${arg}> section. If the 2.2 server had mod_${b} compiled in ("httpd -l" lists mod_${b}.c), 2.2 applied it: add "LoadModule ${sym} modules/mod_${b}.so" to keep it.`,
      `<IfModule ${arg}>`, '');
  }
}

/** The modules the upgraded configuration loads that plume cannot run yet (issue 19 item 20):
 *  Apache 2.4 runs the result; plume refuses such a LoadModule until it has the module. */
function plumeSupport(u: Upgrade): void {
  const have = u.opts.plumeModules;
  if (!have) return;
  const opts: ModelOptions = { version: '2.4.71', staticModules: STATIC_24, defines: u.opts.defines };
  const loaded = new Set([...STATIC_24, ...u.loadedModules()]);
  const missing = new Map<string, Ref>();
  for (const l of loadRefs(u)) {
    if (!l.symbol || have.has(l.symbol) || missing.has(l.symbol) || !readWith(l.ref, loaded, opts)) continue;
    // A line guarded by <IfModule !symbol> loads nothing where the module is compiled in.
    missing.set(l.symbol, l.ref);
  }
  if (missing.size === 0) return;
  const names = [...missing.keys()].map((m) => `mod_${base(m)}`);
  const first = [...missing.values()][0]!;
  u.report('modules.plume-support', first, 'note',
    `The upgraded configuration loads ${missing.size} module(s) plume cannot run yet: ${names.join(', ')}. Apache httpd 2.4 runs it as written; plume stops at the first such LoadModule until it has the module.`,
    [...missing.values()].map((r) => textOf(r.node)).join('\n'), '');
}

export const modulesRules: Rule[] = [
  { id: 'modules.removed', title: 'LoadModule of modules 2.4 removed (authn_default, authz_default, authn_alias)', spec: ['2.3 AuthnProviderAlias', '9.1 versions'], run: removed },
  { id: 'modules.cache-disk', title: 'mod_disk_cache -> mod_cache_disk, mod_mem_cache removed', spec: ['2.4 mod_cache_disk, mod_lbmethod_bybusyness', '9.4 built separately'], run: cacheDisk },
  { id: 'modules.lbmethod', title: 'lbmethod modules (mod_lbmethod_bybusyness ...) loaded where balancers use them', spec: ['2.4 mod_cache_disk, mod_lbmethod_bybusyness', '9.4 built separately'], run: lbmethod },
  { id: 'modules.built-in', title: 'LoadModule of modules some 2.4 builds compile in is guarded', spec: ['9.4 LoadModule commented out'], run: builtIn },
  { id: 'modules.mpm', title: 'The MPM is loaded as a module', spec: ['9.4 LoadModule commented out'], run: mpm },
  { id: 'modules.unixd', title: 'mod_unixd for User/Group', spec: ['2.4 mod_unixd', '7.1 Invalid command \'User\''], run: unixd },
  { id: 'modules.authn-core', title: 'mod_authn_core where authentication is used', spec: ['2.4 mod_authn_core', '7.1 couldn\'t check user', '2.3 AuthnProviderAlias'], run: authnCore },
  { id: 'modules.authz-core', title: 'mod_authz_core where Require is used', spec: ['7.1 Invalid command \'Require\' or \'Order\''], run: authzCore },
  { id: 'modules.authz-providers', title: 'The modules of the Require providers used (mod_authz_host ...)', spec: ['2.4 mod_authz_host'], run: authzProviders },
  { id: 'modules.access-compat', title: 'mod_access_compat only while something kept needs it', spec: ['2.4 mod_access_compat', '5.2 rule 4', '7.1 Invalid command \'Require\' or \'Order\''], run: accessCompat },
  { id: 'modules.filter', title: 'mod_filter for AddOutputFilterByType and FilterProvider', spec: ['2.3 AddOutputFilterByType', '2.4 mod_filter', '7.1 Invalid command \'AddOutputFilterByType\''], run: filter },
  { id: 'modules.needed', title: 'Every module the 2.4 configuration needs (directives, providers, dependencies)', spec: ['9.4 built separately', '7.1 Invalid command \'User\''], run: needed },
  { id: 'modules.plume-support', title: 'Modules the result loads that plume cannot run yet (note)', spec: ['9.1 versions'], run: plumeSupport },
  { id: 'modules.dav-lockdb', title: 'DavLockDB: delete the 2.2 lock database', spec: ['2.4 mod_dav_fs'], run: davLockDb },
  { id: 'modules.third-party', title: 'Third-party modules must be rebuilt for 2.4', spec: ['9.2 recompiled'], run: thirdParty },
  { id: 'modules.deflate', title: 'mod_deflate skips compression that would not pay', spec: ['2.4 mod_deflate'], run: deflateNote },
  { id: 'modules.autoindex-xhtml', title: 'mod_autoindex reads .xhtml titles and descriptions', spec: ['2.4 mod_autoindex'], run: autoindexNote },
  { id: 'modules.substitute-line-limit', title: 'mod_substitute 1 MB line limit', spec: ['2.4 mod_substitute', '8 mod_substitute maximum line length'], run: substituteNote },
];

