// The module catalogue: every module plume has, in httpd's load order. LoadModule activates a
// module; built-in modules are active from the start.
//
// Only the built-in modules' code is imported with the catalogue. Every other module is listed
// by its symbol and file, and its code is loaded (synchronously, require() of the ES module) the
// first time the catalogue is asked for it: when LoadModule names it, or when a listing asks for
// every module. httpd likewise dlopens only what LoadModule names. A configuration is read
// before a worker drops its privileges (mod_unixd), so no module's code is read from disk
// after the switch to User (test/unit/no-lazy-imports.test.ts). A module's place in the list
// is its index in configuration vectors whenever its code is loaded (planModuleIndices), so the
// indices are those of a catalogue that imported everything. Measured on the benchmark's
// configuration (23 modules loaded of 103): a worker's resident set after its first request
// 67.2 MB with every module's code imported, 59.2 MB with this (docs/process-model.md "Memory").
// The modules' code must have no top-level await (require() refuses such a graph).

import { createRequire } from 'node:module';
import { planModuleIndices, type AnyModuleHandle } from '../server/module.js';
import type { ModuleCatalogue } from '../server/config/build.js';
import { core } from '../server/core/core-module.js';
import { CORE_MODULE_INDEX } from '../server/core/config.js';
import { httpCore } from '../server/http/http-core.js';
import so, { BUILT_IN } from './core/mod_so.js';
import watchdog from './core/mod_watchdog.js';
import version from './core/mod_version.js';
import logConfig from './loggers/mod_log_config.js';
import logio from './loggers/mod_logio.js';

const h = (m: unknown): AnyModuleHandle => m as AnyModuleHandle;

/** A module whose code is loaded when the catalogue is first asked for it. */
interface LazyModule {
  readonly symbol: string;
  /** Its file, relative to this one. */
  readonly file: string;
}
const lazy = (symbol: string, file: string): LazyModule => ({ symbol, file });

/** Every module, in the order httpd lists them (-l, -M, -L): built-ins first. */
const ALL: (AnyModuleHandle | LazyModule)[] = [
  // One module per line, so that adding a module touches one line of its own.
  h(core),
  h(so),
  h(watchdog),
  h(httpCore),
  h(logConfig),
  h(logio),
  h(version),
  lazy('macro_module', './core/mod_macro.js'),
  lazy('mpm_event_module', '../mpm/mpm_event.js'),
  lazy('mpm_worker_module', '../mpm/mpm_worker.js'),
  lazy('mpm_prefork_module', '../mpm/mpm_prefork.js'),
  lazy('unixd_module', './arch/unix/mod_unixd.js'),
  lazy('authn_file_module', './aaa/mod_authn_file.js'),
  lazy('authn_anon_module', './aaa/mod_authn_anon.js'),
  lazy('authn_dbm_module', './aaa/mod_authn_dbm.js'),
  lazy('authn_dbd_module', './aaa/mod_authn_dbd.js'),
  lazy('authn_socache_module', './aaa/mod_authn_socache.js'),
  lazy('authn_core_module', './aaa/mod_authn_core.js'),
  lazy('authz_host_module', './aaa/mod_authz_host.js'),
  lazy('authz_groupfile_module', './aaa/mod_authz_groupfile.js'),
  lazy('authz_user_module', './aaa/mod_authz_user.js'),
  lazy('authz_dbm_module', './aaa/mod_authz_dbm.js'),
  lazy('authz_dbd_module', './aaa/mod_authz_dbd.js'),
  lazy('authz_owner_module', './aaa/mod_authz_owner.js'),
  lazy('ldap_module', './ldap/mod_ldap.js'),
  lazy('authnz_ldap_module', './aaa/mod_authnz_ldap.js'),
  lazy('authz_core_module', './aaa/mod_authz_core.js'),
  lazy('authnz_fcgi_module', './aaa/mod_authnz_fcgi.js'),
  lazy('access_compat_module', './aaa/mod_access_compat.js'),
  lazy('allowmethods_module', './aaa/mod_allowmethods.js'),
  lazy('auth_basic_module', './aaa/mod_auth_basic.js'),
  lazy('auth_digest_module', './aaa/mod_auth_digest.js'),
  lazy('auth_form_module', './aaa/mod_auth_form.js'),
  lazy('session_module', './session/mod_session.js'),
  lazy('session_cookie_module', './session/mod_session_cookie.js'),
  lazy('session_dbd_module', './session/mod_session_dbd.js'),
  lazy('session_crypto_module', './session/mod_session_crypto.js'),
  lazy('cache_module', './cache/mod_cache/index.js'),
  lazy('cache_disk_module', './cache/mod_cache_disk.js'),
  lazy('cache_socache_module', './cache/mod_cache_socache.js'),
  lazy('file_cache_module', './cache/mod_file_cache.js'),
  lazy('socache_shmcb_module', './cache/mod_socache_shmcb.js'),
  lazy('socache_dbm_module', './cache/mod_socache_dbm.js'),
  lazy('socache_memcache_module', './cache/mod_socache_memcache.js'),
  lazy('socache_redis_module', './cache/mod_socache_redis.js'),
  lazy('dbd_module', './database/mod_dbd.js'),
  lazy('slotmem_shm_module', './slotmem/mod_slotmem_shm.js'),
  lazy('slotmem_plain_module', './slotmem/mod_slotmem_plain.js'),
  lazy('lbmethod_byrequests_module', './proxy/balancers/mod_lbmethod_byrequests.js'),
  lazy('lbmethod_bytraffic_module', './proxy/balancers/mod_lbmethod_bytraffic.js'),
  lazy('lbmethod_bybusyness_module', './proxy/balancers/mod_lbmethod_bybusyness.js'),
  lazy('lbmethod_heartbeat_module', './proxy/balancers/mod_lbmethod_heartbeat.js'),
  lazy('buffer_module', './filters/mod_buffer.js'),
  lazy('data_module', './filters/mod_data.js'),
  lazy('ratelimit_module', './filters/mod_ratelimit.js'),
  lazy('dialup_module', './test/mod_dialup.js'),
  lazy('proxy_balancer_module', './proxy/mod_proxy_balancer/index.js'),
  lazy('reqtimeout_module', './filters/mod_reqtimeout.js'),
  lazy('ssl_module', './ssl/mod_ssl/index.js'),
  lazy('filter_module', './filters/mod_filter.js'),
  lazy('reflector_module', './filters/mod_reflector.js'),
  lazy('deflate_module', './filters/mod_deflate.js'),
  lazy('brotli_module', './filters/mod_brotli.js'),
  lazy('substitute_module', './filters/mod_substitute.js'),
  lazy('sed_module', './filters/mod_sed/mod_sed.js'),
  lazy('ext_filter_module', './filters/mod_ext_filter.js'),
  lazy('charset_lite_module', './filters/mod_charset_lite.js'),
  lazy('xml2enc_module', './filters/mod_xml2enc.js'),
  lazy('proxy_html_module', './filters/mod_proxy_html/mod_proxy_html.js'),
  lazy('include_module', './filters/mod_include/mod_include.js'),
  lazy('request_module', './filters/mod_request.js'),
  lazy('bucketeer_module', './debugging/mod_bucketeer.js'),
  lazy('dumpio_module', './debugging/mod_dumpio.js'),
  lazy('echo_module', './echo/mod_echo.js'),
  lazy('log_debug_module', './loggers/mod_log_debug.js'),
  lazy('log_forensic_module', './loggers/mod_log_forensic.js'),
  lazy('mime_module', './http/mod_mime.js'),
  lazy('http2_module', './http2/mod_http2/index.js'),
  lazy('dav_module', './dav/mod_dav.js'),
  lazy('lua_module', './lua/mod_lua.js'),
  lazy('status_module', './generators/mod_status.js'),
  lazy('info_module', './generators/mod_info.js'),
  lazy('autoindex_module', './generators/mod_autoindex.js'),
  lazy('asis_module', './generators/mod_asis.js'),
  lazy('cgid_module', './generators/mod_cgid.js'),
  lazy('cgi_module', './generators/mod_cgi.js'),
  lazy('dav_fs_module', './dav/mod_dav_fs.js'),
  lazy('dav_lock_module', './dav/mod_dav_lock.js'),
  lazy('vhost_alias_module', './mappers/mod_vhost_alias.js'),
  lazy('negotiation_module', './mappers/mod_negotiation.js'),
  lazy('dir_module', './mappers/mod_dir.js'),
  lazy('actions_module', './mappers/mod_actions.js'),
  lazy('speling_module', './mappers/mod_speling.js'),
  lazy('imagemap_module', './mappers/mod_imagemap.js'),
  lazy('userdir_module', './mappers/mod_userdir.js'),
  lazy('alias_module', './mappers/mod_alias.js'),
  lazy('rewrite_module', './mappers/mod_rewrite/index.js'),
  lazy('env_module', './metadata/mod_env.js'),
  lazy('cern_meta_module', './metadata/mod_cern_meta.js'),
  lazy('mime_magic_module', './metadata/mod_mime_magic/index.js'),
  lazy('setenvif_module', './metadata/mod_setenvif.js'),
  lazy('expires_module', './metadata/mod_expires.js'),
  lazy('headers_module', './metadata/mod_headers.js'),
  lazy('usertrack_module', './metadata/mod_usertrack.js'),
  lazy('unique_id_module', './metadata/mod_unique_id.js'),
  lazy('remoteip_module', './metadata/mod_remoteip.js'),
  lazy('proxy_module', './proxy/mod_proxy/index.js'),
  lazy('proxy_http_module', './proxy/mod_proxy_http.js'),
  lazy('proxy_wstunnel_module', './proxy/mod_proxy_wstunnel.js'),
  lazy('proxy_connect_module', './proxy/mod_proxy_connect.js'),
  lazy('proxy_fcgi_module', './proxy/mod_proxy_fcgi.js'),
  lazy('proxy_scgi_module', './proxy/mod_proxy_scgi.js'),
  lazy('proxy_uwsgi_module', './proxy/mod_proxy_uwsgi.js'),
  lazy('proxy_ftp_module', './proxy/mod_proxy_ftp.js'),
  lazy('proxy_hcheck_module', './proxy/mod_proxy_hcheck.js'),
  lazy('proxy_express_module', './proxy/mod_proxy_express.js'),
  lazy('heartbeat_module', './cluster/mod_heartbeat.js'),
  lazy('heartmonitor_module', './cluster/mod_heartmonitor.js'),
  lazy('proxy_http2_module', './proxy/mod_proxy_http2.js'),
  lazy('case_filter_module', './examples/mod_case_filter.js'),
  lazy('case_filter_in_module', './examples/mod_case_filter_in.js'),
];

/** The optional modules the shipped httpd.conf leaves commented out (spec §9). */
export const OPTIONAL_MODULES: readonly string[] = [];

const requireModule = createRequire(import.meta.url);

/** A place in the catalogue: the module's symbol, its file, its handle once loaded. */
interface Slot {
  readonly symbol: string;
  readonly file: string | undefined;
  handle: AnyModuleHandle | undefined;
}

class Catalogue implements ModuleCatalogue {
  private readonly slots: Slot[] = [];
  private readonly bySymbol = new Map<string, number>();
  constructor(mods: readonly (AnyModuleHandle | LazyModule)[]) {
    planModuleIndices(mods.map((m) => ('decl' in m ? m.decl.name : m.symbol)));
    for (const m of mods) {
      if ('decl' in m) this.register(m);
      else this.reserve({ symbol: m.symbol, file: m.file, handle: undefined });
    }
  }
  /** Every module, each one's code loaded (listings; not the server's startup). */
  get all(): AnyModuleHandle[] {
    return this.slots.map((_, i) => this.load(i));
  }
  get builtIn(): readonly AnyModuleHandle[] {
    return this.slots.filter((s) => BUILT_IN.has(s.symbol)).map((s) => this.load(this.bySymbol.get(s.symbol)!));
  }
  /** The symbols of every module, without loading any. */
  get symbols(): readonly string[] {
    return this.slots.map((s) => s.symbol);
  }
  find(symbol: string): AnyModuleHandle | undefined {
    const i = this.bySymbol.get(symbol);
    return i === undefined ? undefined : this.load(i);
  }
  register(m: AnyModuleHandle): void {
    if (this.bySymbol.has(m.decl.name)) return;
    m.index = this.slots.length;
    this.reserve({ symbol: m.decl.name, file: undefined, handle: m });
  }
  private reserve(slot: Slot): void {
    const index = this.slots.length;
    // The server's layers below the module API read the core's configuration from its fixed
    // slot (core/config.ts); a catalogue that put another module there would break them all.
    if ((index === CORE_MODULE_INDEX) !== (slot.symbol === 'core_module')) {
      throw new Error(`module catalogue: core_module must be registered first (${slot.symbol} at ${index})`);
    }
    this.slots.push(slot);
    this.bySymbol.set(slot.symbol, index);
  }
  private load(index: number): AnyModuleHandle {
    const slot = this.slots[index]!;
    if (slot.handle !== undefined) return slot.handle;
    const m = h((requireModule(slot.file!) as { default: unknown }).default);
    if (m.decl.name !== slot.symbol) throw new Error(`module catalogue: ${slot.file} defines ${m.decl.name}, not ${slot.symbol}`);
    // A module imported by another before the catalogue existed has no index yet.
    if (m.index === -1) m.index = index;
    if (m.index !== index) throw new Error(`module catalogue: ${slot.symbol} has index ${m.index}, not ${index}`);
    slot.handle = m;
    return m;
  }
}

export const catalogue = new Catalogue(ALL);
