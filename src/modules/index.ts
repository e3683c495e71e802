// The module catalogue: every module plume has, in httpd's load order. Importing a module
// registers it; LoadModule activates it. Built-in modules are active from the start.

import type { AnyModuleHandle } from '../server/module.js';
import type { ModuleCatalogue } from '../server/config/build.js';
import { core } from '../server/core/core-module.js';
import { CORE_MODULE_INDEX } from '../server/core/config.js';
import { httpCore } from '../server/http/http-core.js';
import so, { BUILT_IN } from './core/mod_so.js';
import watchdog from './core/mod_watchdog.js';
import version from './core/mod_version.js';
import macro from './core/mod_macro.js';
import mpmEvent from '../mpm/mpm_event.js';
import mpmWorker from '../mpm/mpm_worker.js';
import mpmPrefork from '../mpm/mpm_prefork.js';
import mime from './http/mod_mime.js';
import include from './filters/mod_include/mod_include.js';
import request from './filters/mod_request.js';
import dir from './mappers/mod_dir.js';
import autoindex from './generators/mod_autoindex.js';
import status from './generators/mod_status.js';
import info from './generators/mod_info.js';
import cgid from './generators/mod_cgid.js';
import cgi from './generators/mod_cgi.js';
import env from './metadata/mod_env.js';
import setenvif from './metadata/mod_setenvif.js';
import headers from './metadata/mod_headers.js';
import remoteip from './metadata/mod_remoteip.js';
import proxy from './proxy/mod_proxy/index.js';
import proxyHttp from './proxy/mod_proxy_http.js';
import proxyWstunnel from './proxy/mod_proxy_wstunnel.js';
import alias from './mappers/mod_alias.js';
import rewrite from './mappers/mod_rewrite/index.js';
import actions from './mappers/mod_actions.js';
import userdir from './mappers/mod_userdir.js';
import negotiation from './mappers/mod_negotiation.js';
import vhostAlias from './mappers/mod_vhost_alias.js';
import unixd from './arch/unix/mod_unixd.js';
import logConfig from './loggers/mod_log_config.js';
import logio from './loggers/mod_logio.js';
import logDebug from './loggers/mod_log_debug.js';
import authnFile from './aaa/mod_authn_file.js';
import authnDbm from './aaa/mod_authn_dbm.js';
import authnCore from './aaa/mod_authn_core.js';
import authzCore from './aaa/mod_authz_core.js';
import authzHost from './aaa/mod_authz_host.js';
import authzGroupfile from './aaa/mod_authz_groupfile.js';
import authzUser from './aaa/mod_authz_user.js';
import authzDbm from './aaa/mod_authz_dbm.js';
import authzOwner from './aaa/mod_authz_owner.js';
import accessCompat from './aaa/mod_access_compat.js';
import allowmethods from './aaa/mod_allowmethods.js';
import authBasic from './aaa/mod_auth_basic.js';
import authDigest from './aaa/mod_auth_digest.js';
import authForm from './aaa/mod_auth_form.js';
import reqtimeout from './filters/mod_reqtimeout.js';
import filter from './filters/mod_filter.js';
import deflate from './filters/mod_deflate.js';
import brotli from './filters/mod_brotli.js';
import substitute from './filters/mod_substitute.js';
import extFilter from './filters/mod_ext_filter.js';
import charsetLite from './filters/mod_charset_lite.js';
import xml2enc from './filters/mod_xml2enc.js';
import proxyHtml from './filters/mod_proxy_html/mod_proxy_html.js';
import bucketeer from './debugging/mod_bucketeer.js';
import dumpio from './debugging/mod_dumpio.js';
import expires from './metadata/mod_expires.js';
import uniqueId from './metadata/mod_unique_id.js';
import usertrack from './metadata/mod_usertrack.js';
import speling from './mappers/mod_speling.js';
import imagemap from './mappers/mod_imagemap.js';
import asis from './generators/mod_asis.js';
import buffer from './filters/mod_buffer.js';
import data from './filters/mod_data.js';
import ratelimit from './filters/mod_ratelimit.js';
import reflector from './filters/mod_reflector.js';
import echo from './echo/mod_echo.js';
import cache from './cache/mod_cache/index.js';
import cacheDisk from './cache/mod_cache_disk.js';
import cacheSocache from './cache/mod_cache_socache.js';
import socacheShmcb from './cache/mod_socache_shmcb.js';
import socacheDbm from './cache/mod_socache_dbm.js';
import socacheMemcache from './cache/mod_socache_memcache.js';
import socacheRedis from './cache/mod_socache_redis.js';
import slotmemShm from './slotmem/mod_slotmem_shm.js';
import lbmethodByrequests from './proxy/balancers/mod_lbmethod_byrequests.js';
import lbmethodBytraffic from './proxy/balancers/mod_lbmethod_bytraffic.js';
import lbmethodBybusyness from './proxy/balancers/mod_lbmethod_bybusyness.js';
import lbmethodHeartbeat from './proxy/balancers/mod_lbmethod_heartbeat.js';
import proxyBalancer from './proxy/mod_proxy_balancer/index.js';
import ssl from './ssl/mod_ssl/index.js';
import http2 from './http2/mod_http2/index.js';
import authnAnon from './aaa/mod_authn_anon.js';
import caseFilter from './examples/mod_case_filter.js';
import caseFilterIn from './examples/mod_case_filter_in.js';
import proxyFcgi from './proxy/mod_proxy_fcgi.js';
import proxyScgi from './proxy/mod_proxy_scgi.js';
import proxyUwsgi from './proxy/mod_proxy_uwsgi.js';
import proxyHcheck from './proxy/mod_proxy_hcheck.js';
import heartbeat from './cluster/mod_heartbeat.js';
import heartmonitor from './cluster/mod_heartmonitor.js';
import session from './session/mod_session.js';
import sessionCookie from './session/mod_session_cookie.js';
import sessionCrypto from './session/mod_session_crypto.js';
import proxyHttp2 from './proxy/mod_proxy_http2.js';
import dav from './dav/mod_dav.js';
import davFs from './dav/mod_dav_fs.js';
import davLock from './dav/mod_dav_lock.js';
import lua from './lua/mod_lua.js';

const h = (m: unknown): AnyModuleHandle => m as AnyModuleHandle;

/** Every module, in the order httpd lists them (-l, -M, -L): built-ins first. */
const ALL: AnyModuleHandle[] = [
  // One module per line, so that adding a module touches one line of its own.
  h(core),
  h(so),
  h(watchdog),
  h(httpCore),
  h(logConfig),
  h(logio),
  h(version),
  h(macro),
  h(mpmEvent),
  h(mpmWorker),
  h(mpmPrefork),
  h(unixd),
  h(authnFile),
  h(authnAnon),
  h(authnDbm),
  h(authnCore),
  h(authzHost),
  h(authzGroupfile),
  h(authzUser),
  h(authzDbm),
  h(authzOwner),
  h(authzCore),
  h(accessCompat),
  h(allowmethods),
  h(authBasic),
  h(authDigest),
  h(authForm),
  h(session),
  h(sessionCookie),
  h(sessionCrypto),
  h(cache),
  h(cacheDisk),
  h(cacheSocache),
  h(socacheShmcb),
  h(socacheDbm),
  h(socacheMemcache),
  h(socacheRedis),
  h(slotmemShm),
  h(lbmethodByrequests),
  h(lbmethodBytraffic),
  h(lbmethodBybusyness),
  h(lbmethodHeartbeat),
  h(buffer),
  h(data),
  h(ratelimit),
  h(proxyBalancer),
  h(reqtimeout),
  h(ssl),
  h(filter),
  h(reflector),
  h(deflate),
  h(brotli),
  h(substitute),
  h(extFilter),
  h(charsetLite),
  h(xml2enc),
  h(proxyHtml),
  h(include),
  h(request),
  h(bucketeer),
  h(dumpio),
  h(echo),
  h(logDebug),
  h(mime),
  h(http2),
  h(dav),
  h(lua),
  h(status),
  h(info),
  h(autoindex),
  h(asis),
  h(cgid),
  h(cgi),
  h(davFs),
  h(davLock),
  h(vhostAlias),
  h(negotiation),
  h(dir),
  h(actions),
  h(speling),
  h(imagemap),
  h(userdir),
  h(alias),
  h(rewrite),
  h(env),
  h(setenvif),
  h(expires),
  h(headers),
  h(usertrack),
  h(uniqueId),
  h(remoteip),
  h(proxy),
  h(proxyHttp),
  h(proxyWstunnel),
  h(proxyFcgi),
  h(proxyScgi),
  h(proxyUwsgi),
  h(proxyHcheck),
  h(heartbeat),
  h(heartmonitor),
  h(proxyHttp2),
  h(caseFilter),
  h(caseFilterIn),
];

/** The optional modules the shipped httpd.conf leaves commented out (spec §9). */
export const OPTIONAL_MODULES: readonly string[] = [];

class Catalogue implements ModuleCatalogue {
  readonly all: AnyModuleHandle[] = [];
  private readonly bySymbol = new Map<string, AnyModuleHandle>();
  constructor(mods: readonly AnyModuleHandle[]) {
    for (const m of mods) this.register(m);
  }
  get builtIn(): readonly AnyModuleHandle[] {
    return this.all.filter((m) => BUILT_IN.has(m.decl.name));
  }
  find(symbol: string): AnyModuleHandle | undefined {
    return this.bySymbol.get(symbol);
  }
  register(m: AnyModuleHandle): void {
    if (this.bySymbol.has(m.decl.name)) return;
    m.index = this.all.length;
    // The server's layers below the module API read the core's configuration from its fixed
    // slot (core/config.ts); a catalogue that put another module there would break them all.
    if ((m.index === CORE_MODULE_INDEX) !== (m.decl.name === 'core_module')) {
      throw new Error(`module catalogue: core_module must be registered first (${m.decl.name} at ${m.index})`);
    }
    this.all.push(m);
    this.bySymbol.set(m.decl.name, m);
  }
}

export const catalogue = new Catalogue(ALL);
