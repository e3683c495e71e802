// The core module (httpd's server/core.c): its directives, configuration and the hooks that
// give a request its default behaviour (map the URL to DocumentRoot, walk directories and
// files, serve static files).

import { parseStringExprCmd } from '../../expr/index.js';
import * as fs from 'node:fs';
import { CmdParms, GLOBAL_ONLY, NOT_IN_HTACCESS, NOT_IN_LOCATION, NOT_IN_FILES, NOT_IN_DIR_LOC_FILE } from '../config/cmd.js';
import {
  defineModule, directive, MODULE_API_VERSION, ACCESS_CONF, RSRC_CONF, OR_ALL, OR_AUTHCFG, OR_FILEINFO,
  OR_INDEXES, OR_LIMIT, OR_OPTIONS, OR_NONE, OR_UNSET, NONFATAL_OVERRIDE, NONFATAL_UNKNOWN,
  HOOK_REALLY_LAST, HOOK_REALLY_FIRST, type DirectiveSpec,
} from '../module.js';
import {
  createCoreDirConfig, createCoreServerConfig, mergeCoreDirConfig, mergeCoreServerConfig,
  OPT_ALL, OPT_EXECCGI, OPT_INCLUDES, OPT_INC_WITH_EXEC, OPT_INDEXES, OPT_MULTI, OPT_NONE, OPT_SYM_LINKS, OPT_SYM_OWNER, OPT_UNSET,
  ETAG_ALL, ETAG_DIGEST, ETAG_INODE, ETAG_MTIME, ETAG_NONE, ETAG_SIZE, ETAG_UNSET,
  coreDir, coreServer, parseTimeout, type CoreDirConfig, type CoreServerConfig, type ServerTokens,
} from './config.js';
import { readDirectives } from './read-directives.js';
import { sectionDirectives } from './section-directives.js';
import { applyLogLevel, DEFAULT_LOG_LEVEL } from '../log/levels.js';
import { splitWords } from '../config/lexer.js';
import { compileWildcard, isWildcard, sortDirectorySections } from './sections.js';
import type { ConfigContext } from '../config/context.js';
import type { ServerRec } from '../server-rec.js';
import type { Request } from '../request/request.js';
import { translateName, mapToStorage, coreTypeChecker, coreOverrideType, defaultHandler, handlerName } from './core-hooks.js';
import { globals } from './globals.js';
import { atoi, strtoi64 } from '../../lib/c-numbers.js';
import { upgradeHandler, upgradeStorage } from '../http/protocols.js';
import { resolveHostSync } from './resolve.js';
import { parseRlimit, type RlimitKind } from './rlimit.js';

type Cmd = CmdParms<CoreServerConfig, CoreDirConfig>;

// ---- Options / AllowOverride ------------------------------------------------------------
const OPTION_BITS: Record<string, number> = {
  indexes: OPT_INDEXES,
  includes: OPT_INCLUDES,
  includesnoexec: OPT_INCLUDES,
  followsymlinks: OPT_SYM_LINKS,
  symlinksifownermatch: OPT_SYM_OWNER,
  execcgi: OPT_EXECCGI,
  multiviews: OPT_MULTI,
  runscripts: OPT_INCLUDES | OPT_INC_WITH_EXEC,
  all: OPT_ALL,
  none: OPT_NONE,
};

function options(cmd: Cmd, raw: string): string | undefined {
  // httpd's set_options: absolute options reset, +/- options adjust; mixing is an error.
  const d = cmd.dir;
  const allowed = cmd.scope.htaccess ? cmd.scope.overrideOpts : OPT_ALL | OPT_SYM_OWNER | OPT_MULTI;
  let first = true;
  let merge = false;
  let allNone = false;
  for (const w0 of splitWords(raw)) {
    let w = w0;
    let action = '';
    if (w.startsWith('+') || w.startsWith('-')) {
      action = w[0]!;
      w = w.slice(1);
      if (!merge && !first && !allNone) return 'Either all Options must start with + or -, or no Option may.';
      merge = true;
    } else if (first) {
      d.opts = OPT_NONE;
    } else if (merge) {
      return 'Either all Options must start with + or -, or no Option may.';
    }
    const lw = w.toLowerCase();
    let opt: number;
    if (lw === 'none' || lw === 'all') {
      const which = lw === 'none' ? 'None' : 'All';
      if (!first) return lw === 'none' ? `'Options None' must be the first Option given.` : `'Options All' must be the first option given.`;
      if (action !== '') return `You may not use 'Options +${which}' or 'Options -${which}'.`;
      allNone = true;
      opt = lw === 'all' ? OPT_ALL : OPT_NONE;
    } else if (lw === 'includes') opt = OPT_INCLUDES | OPT_INC_WITH_EXEC;
    else {
      const bit = OPTION_BITS[lw];
      if (bit === undefined) return `Illegal option ${w}`;
      opt = bit;
    }
    if ((allowed & opt) !== opt) return `Option ${w} not allowed here`;
    if (action === '-') { d.optsRemove |= opt; d.optsAdd &= ~opt; d.opts &= ~opt; }
    else if (action === '+') { d.optsAdd |= opt; d.optsRemove &= ~opt; d.opts |= opt; }
    else d.opts |= opt;
    first = false;
  }
  return undefined;
}

const OVERRIDE_BITS: Record<string, number> = {
  limit: OR_LIMIT, options: OR_OPTIONS, fileinfo: OR_FILEINFO, authconfig: OR_AUTHCFG,
  indexes: OR_INDEXES, all: OR_ALL, none: OR_NONE,
};

function allowOverride(cmd: Cmd, raw: string): string | undefined {
  if (cmd.checkContext(NOT_IN_LOCATION | NOT_IN_FILES)) {
    cmd.log('core', 4, `AH00114: Useless use of AllowOverride in line ${cmd.line} of ${cmd.file}.`);
  }
  const err = cmd.checkContext(NOT_IN_HTACCESS);
  if (err) return err;
  let override = OR_NONE;
  let overrideOpts = OPT_ALL | OPT_SYM_OWNER | OPT_MULTI;
  for (const w of splitWords(raw)) {
    const eq = w.indexOf('=');
    const k = (eq < 0 ? w : w.slice(0, eq)).toLowerCase();
    const v = eq < 0 ? undefined : w.slice(eq + 1);
    if (k === 'nonfatal') {
      const lv = (v ?? '').toLowerCase();
      if (lv === 'override') override |= NONFATAL_OVERRIDE;
      else if (lv === 'unknown') override |= NONFATAL_UNKNOWN;
      else if (lv === 'all') override |= NONFATAL_OVERRIDE | NONFATAL_UNKNOWN;
      else return `Illegal override option ${w}`;
      continue;
    }
    const bit = OVERRIDE_BITS[k];
    if (bit === undefined) return `Illegal override option ${w}`;
    if (k === 'none') { override = OR_NONE; continue; }
    override |= bit;
    if (k === 'options' && v !== undefined) {
      overrideOpts = 0;
      for (const o of v.split(',')) {
        const ob = OPTION_BITS[o.toLowerCase()];
        if (ob === undefined || o.toLowerCase() === 'none') return `Illegal option ${o}`;
        overrideOpts |= o.toLowerCase() === 'includes' ? OPT_INCLUDES | OPT_INC_WITH_EXEC : ob;
      }
    } else if (k === 'all' || k === 'options') {
      overrideOpts = OPT_ALL | OPT_SYM_OWNER | OPT_MULTI;
    }
  }
  cmd.dir.override = override;
  cmd.dir.overrideOpts = overrideOpts;
  return undefined;
}

function allowOverrideList(cmd: Cmd, raw: string): string | undefined {
  if (cmd.checkContext(NOT_IN_LOCATION | NOT_IN_FILES)) {
    cmd.log('core', 4, `AH00115: Useless use of AllowOverrideList at ${cmd.file}:${cmd.line}`);
  }
  const err = cmd.checkContext(NOT_IN_HTACCESS);
  if (err) return err;
  const words = splitWords(raw);
  if (words.length === 1 && words[0]!.toLowerCase() === 'none') { cmd.dir.overrideList = new Set(); return undefined; }
  cmd.dir.overrideList = new Set(words.map((w) => w.toLowerCase()));
  return undefined;
}

// ---- simple setters ----------------------------------------------------------------------
function documentRoot(cmd: Cmd, dir: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
  if (err) return err;
  let p = cmd.serverRootRelative(dir);
  // httpd checks the directory unless started with -T: a missing one is an error in the
  // main server and a warning in a virtual host.
  if (cmd.ctx.options.documentRootCheck !== false) {
    let isDir = false;
    try { isDir = fs.statSync(p).isDirectory(); } catch { isDir = false; }
    if (!isDir) {
      if (!cmd.server.isVirtual) return `DocumentRoot '${p}' is not a directory, or is not readable`;
      cmd.ctx.logBare('core', 4, `AH00112: Warning: DocumentRoot [${p}] does not exist`);
    }
  }
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  cmd.srv.documentRoot = p;
  return undefined;
}

function serverName(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
  if (err) return err;
  if (/\s/.test(arg)) return `Invalid ServerName "${arg}" use ServerAlias to set multiple server names.`;
  let rest = arg;
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(rest);
  if (scheme) { cmd.server.scheme = scheme[1]!.toLowerCase(); rest = rest.slice(scheme[0].length); }
  let host = rest;
  const v6 = /^\[[^\]]*\]/.exec(rest);
  const portSep = v6 ? rest.indexOf(':', v6[0].length) : rest.lastIndexOf(':');
  if (portSep >= 0) {
    host = rest.slice(0, portSep);
    const port = Number(rest.slice(portSep + 1));
    if (!/^\d+$/.test(rest.slice(portSep + 1)) || port < 1 || port > 65535) return `The port number "${arg}" is outside the appropriate range (i.e., 1..65535).`;
    cmd.server.port = port;
  }
  cmd.server.serverHostname = host;
  cmd.server.explicitlySet.add('serverHostname');
  return undefined;
}

/** ServerAlias names as written, per server (for -S). */
const aliasesAsWritten = new WeakMap<ServerRec, { names: string[]; wild: string[] }>();

export function serverAliasesAsWritten(s: ServerRec): { readonly names: readonly string[]; readonly wild: readonly string[] } {
  return aliasesAsWritten.get(s) ?? { names: [], wild: [] };
}

function serverAlias(cmd: Cmd, raw: string): string | undefined {
  if (!cmd.server.isVirtual) return `ServerAlias only used in <VirtualHost>`;
  let written = aliasesAsWritten.get(cmd.server);
  if (written === undefined) aliasesAsWritten.set(cmd.server, (written = { names: [], wild: [] }));
  for (const w of splitWords(raw)) {
    const lw = w.toLowerCase();
    if (isWildcard(lw)) { cmd.server.wildNames.push(compileWildcard(lw, false)); written.wild.push(w); }
    else { cmd.server.names.push(lw); written.names.push(w); }
  }
  return undefined;
}

function serverAdmin(cmd: Cmd, arg: string): string | undefined {
  cmd.server.serverAdmin = arg;
  cmd.server.explicitlySet.add('serverAdmin');
  return undefined;
}

function nonNegInt(s: string): number | undefined {
  if (!/^\d+$/.test(s)) return undefined;
  return Number(s);
}

function timeout(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
  if (err) return err;
  // httpd reads Timeout with atoi(): seconds, trailing text ignored.
  cmd.server.setLimit('timeout', atoi(arg));
  return undefined;
}

function limitField(key: 'limitRequestLine' | 'limitRequestFieldSize' | 'limitRequestFields', label: string) {
  return (cmd: Cmd, arg: string): string | undefined => {
    const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
    if (err) return err;
    const n = atoi(arg);
    if (n < 0) return `${label} "${arg}" must be a non-negative integer`;
    cmd.server.setLimit(key, n);
    return undefined;
  };
}

function limitRequestBody(cmd: Cmd, arg: string): string | undefined {
  const n = strtoi64(arg);
  if (n.overflow) return 'LimitRequestBody argument is not parsable.';
  if (n.rest !== '' || n.value < 0n) return 'LimitRequestBody requires a non-negative integer.';
  cmd.dir.limitRequestBody = Number(n.value);
  return undefined;
}

/** The largest LimitXMLRequestBody httpd accepts (APR_SIZE_MAX / 6 on 64 bits). */
const XML_BODY_MAX = 3074457345618258601n;

function limitXmlRequestBody(cmd: Cmd, arg: string): string | undefined {
  const n = strtoi64(arg).value;
  if (n < 0n) return 'LimitXMLRequestBody requires a non-negative integer.';
  if (n > XML_BODY_MAX) return `LimitXMLRequestBody must not exceed ${XML_BODY_MAX}`;
  cmd.dir.limitXmlRequestBody = Number(n);
  return undefined;
}

function serverTokens(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  const a = arg.toLowerCase();
  let t: ServerTokens;
  if (a === 'os') t = 'OS';
  else if (a === 'min' || a === 'minimal') t = 'Min';
  else if (a === 'major') t = 'Major';
  else if (a === 'minor') t = 'Minor';
  else if (a === 'prod' || a === 'productonly') t = 'Prod';
  else if (a === 'full') t = 'Full';
  else return `ServerTokens takes 1 argument: 'Prod(uctOnly)', 'Major', 'Minor', 'Min(imal)', 'OS', or 'Full'`;
  globals(cmd.ctx).serverTokens = t;
  return undefined;
}

function serverSignature(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a === 'on' || a === 'off' || a === 'email') cmd.dir.serverSignature = a;
  else return `ServerSignature: use one of: off | on | email`;
  return undefined;
}

function useCanonicalName(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a === 'on' || a === 'off' || a === 'dns') cmd.dir.useCanonicalName = a;
  else return `parameter must be 'on', 'off', or 'dns'`;
  return undefined;
}

function useCanonicalPhysicalPort(cmd: Cmd, on: boolean): string | undefined {
  cmd.dir.useCanonicalPhysicalPort = on ? 'on' : 'off';
  return undefined;
}

function acceptPathInfo(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a === 'on' || a === 'off' || a === 'default') cmd.dir.acceptPathInfo = a;
  else return `AcceptPathInfo must be set to on, off or default`;
  return undefined;
}

function addDefaultCharset(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a === 'off') cmd.dir.addDefaultCharset = null;
  else if (a === 'on') cmd.dir.addDefaultCharset = 'iso-8859-1';
  else cmd.dir.addDefaultCharset = arg;
  return undefined;
}

function forceType(cmd: Cmd, arg: string): string | undefined {
  cmd.dir.forceType = arg.toLowerCase() === 'none' ? 'none' : arg.toLowerCase();
  return undefined;
}

/** SetHandler takes a string expression (httpd 2.4.19+): parsed once; a constant one is
 *  kept as the handler name it gives. */
function setHandler(cmd: Cmd, arg: string): string | undefined {
  const res = parseStringExprCmd(cmd, arg);
  if (!res.ok) return `Can't parse expression : ${res.error}`;
  const constant = res.expr.constant;
  cmd.dir.handler = constant !== undefined ? handlerName(constant) : res.expr;
  return undefined;
}

function allowEncodedSlashes(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a === 'on' || a === 'off' || a === 'nodecode') cmd.dir.allowEncodedSlashes = a;
  else return `AllowEncodedSlashes must be On, Off, or NoDecode`;
  return undefined;
}

/** LimitInternalRecursion redirects [subrequests]: one number sets both (httpd's atoi). */
function limitInternalRecursion(cmd: Cmd, redirects: string, subreqs: string | undefined): string | undefined {
  let limit = atoi(redirects);
  if (limit <= 0) return 'The recursion limit must be greater than zero.';
  if (limit < 4) cmd.log('core', 4, 'AH00119: Limiting internal redirects to very low numbers may cause normal requests to fail.');
  cmd.srv.redirectLimit = limit;
  if (subreqs !== undefined) {
    limit = atoi(subreqs);
    if (limit <= 0) return 'The recursion limit must be greater than zero.';
    if (limit < 4) cmd.log('core', 4, 'AH00120: Limiting the subrequest depth to a very low level may cause normal requests to fail.');
  }
  cmd.srv.subreqLimit = limit;
  return undefined;
}

/** RLimitCPU / RLimitMEM / RLimitNPROC: the limit worked out now, from this process's own
 *  (rlimit.ts); applied to the processes the section's requests start. */
function setRlimit(field: 'rlimitCpu' | 'rlimitMem' | 'rlimitNproc', kind: RlimitKind) {
  return (cmd: Cmd, arg: string, arg2: string | undefined): string | undefined => {
    const euid = typeof process.geteuid === 'function' ? process.geteuid() : 0;
    const lim = parseRlimit(cmd, kind, arg, arg2, euid);
    if (lim !== undefined) cmd.dir[field] = lim;
    return undefined;
  };
}

/** ServerPath: the path prefix of a name-based vhost for clients that send no host name. */
function serverPath(cmd: Cmd, arg: string): string | undefined {
  cmd.server.path = arg;
  return undefined;
}

/**
 * AcceptFilter protocol filter (main server only). On Linux httpd turns any filter but
 * "none" (its default for http and https is "data") into TCP_DEFER_ACCEPT on the listening
 * socket, and says nothing where the platform lacks it (APR_ENOTIMPL).
 * DIFFERENCE: Node cannot set TCP_DEFER_ACCEPT on a listening socket, so plume is that
 * platform: the map is kept (and checked as httpd checks it) but connections are accepted
 * at once, before their first byte (docs/differences.md).
 */
function acceptFilter(cmd: Cmd, proto: string, accf: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  globals(cmd.ctx).acceptFilters.set(proto.toLowerCase(), accf.toLowerCase());
  return undefined;
}

function traceEnable(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a === 'on' || a === 'off' || a === 'extended') cmd.srv.traceEnable = a;
  else return `TraceEnable must be one of 'on', 'off', or 'extended'`;
  return undefined;
}

function hostnameLookups(cmd: Cmd, arg: string): string | undefined {
  const a = arg.toLowerCase();
  if (a === 'on' || a === 'off' || a === 'double') cmd.dir.hostnameLookups = a;
  else return `parameter must be 'on', 'off', or 'double'`;
  return undefined;
}

function errorDocument(cmd: Cmd, code: string, msg: string): string | undefined {
  const n = Number(code);
  if (!/^\d+$/.test(code) || !STATUS_LINES_KNOWN(n) || n < 400 && n !== 0 && !(n >= 300 && n < 400)) {
    return `Unsupported HTTP response code ${code}`;
  }
  const docs = new Map(cmd.dir.errorDocuments ?? []);
  if (msg.toLowerCase() === 'default') {
    docs.set(n, null);
  } else {
    let what: 'msg' | 'local' | 'remote';
    if (/\s/.test(msg)) what = 'msg';
    else if (msg.startsWith('/')) what = 'local';
    else if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(msg) || /^[a-zA-Z]+:/.test(msg) && msg.includes('/')) what = 'remote';
    else what = 'msg';
    if (n === 401 && what === 'remote') {
      cmd.log('core', 4, `AH00113: ${cmd.file}:${cmd.line} cannot use a full URL in a 401 ErrorDocument directive --- ignoring!`);
      return undefined;
    }
    // A leading '"' marks a message, as httpd stores it; either form is a string expression.
    const res = parseStringExprCmd(cmd, what === 'msg' ? '"' + msg : msg);
    if (!res.ok) return `Cannot parse expression in ErrorDocument: ${res.error}`;
    docs.set(n, res.expr);
  }
  cmd.dir.errorDocuments = docs;
  return undefined;
}

// Codes ap_index_of_response knows (anything else maps to 500 and is refused).
const KNOWN_STATUS = new Set([
  100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 306, 307, 308,
  400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 422, 423, 424,
  425, 426, 428, 429, 431, 451, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
]);
function STATUS_LINES_KNOWN(n: number): boolean {
  return KNOWN_STATUS.has(n);
}

/** httpd's set_etag_bits: an absolute keyword (the first one forgets what was inherited) sets
 *  bits and drops the +/- lists gathered so far; +/- keywords accumulate after it. */
function fileETag(cmd: Cmd, raw: string): string | undefined {
  const d = cmd.dir;
  const table: Record<string, number> = {
    size: ETAG_SIZE, mtime: ETAG_MTIME, lmtime: ETAG_MTIME, lastmodified: ETAG_MTIME, inode: ETAG_INODE, digest: ETAG_DIGEST,
  };
  let first = true;
  for (const w of splitWords(raw)) {
    let action = '';
    let word = w;
    if (w.startsWith('+') || w.startsWith('-')) {
      action = w[0]!;
      word = w.slice(1);
    } else if (first) {
      d.etagBits = ETAG_UNSET;
      d.etagAdd = ETAG_UNSET;
      d.etagRemove = ETAG_UNSET;
      first = false;
    }
    const lw = word.toLowerCase();
    let bit: number;
    if (lw === 'none' || lw === 'all') {
      if (action !== '') return `FileETag keyword '${word}' cannot be used with '+' or '-'`;
      bit = lw === 'none' ? ETAG_NONE : ETAG_ALL;
      d.etagBits = bit;
    } else {
      const b = table[lw];
      if (b === undefined) return `Unknown keyword '${word}' for FileETag directive`;
      bit = b;
    }
    if (action === '+') {
      d.etagAdd |= bit;
      d.etagRemove &= ~bit;
    } else if (action === '-') {
      d.etagRemove |= bit;
      d.etagAdd &= ~bit;
    } else {
      d.etagBits |= bit;
      d.etagAdd = ETAG_UNSET;
      d.etagRemove = ETAG_UNSET;
    }
  }
  return undefined;
}

/** EnableSendfile, EnableMMAP: TAKE1 in httpd, with their own wording for a bad value. */
function onOffWord(field: 'enableSendfile' | 'enableMmap') {
  return (cmd: Cmd, arg: string): string | undefined => {
    const a = arg.toLowerCase();
    if (a !== 'on' && a !== 'off') return "parameter must be 'on' or 'off'";
    cmd.dir[field] = a;
    return undefined;
  };
}

function onOff(field: 'enableSendfile' | 'enableMmap' | 'cgiPassAuth' | 'contentDigest') {
  return (cmd: Cmd, on: boolean): string | undefined => {
    cmd.dir[field] = on ? 'on' : 'off';
    return undefined;
  };
}

function defaultType(cmd: Cmd, arg: string): string | undefined {
  // 2.4: DefaultType does nothing; any value other than none/off only earns a warning.
  const a = arg.toLowerCase();
  if (a !== 'off' && a !== 'none') {
    cmd.log('core', 4, `AH00117: Ignoring deprecated use of DefaultType in line ${cmd.line} of ${cmd.file}.`);
  }
  return undefined;
}

function nameVirtualHost(cmd: Cmd, _arg: string): string | undefined {
  // Given once, at the first read (httpd warns once per process).
  if (cmd.ctx.preflight) cmd.ctx.logBare('core', 4, `AH00548: NameVirtualHost has no effect and will be removed in the next release ${cmd.file}:${cmd.line}`);
  return undefined;
}

const MUTEX_MECHS = new Set(['none', 'no', 'default', 'yes', 'fcntl', 'file', 'flock', 'posixsem', 'sem', 'sysvsem', 'pthread']);
const MUTEX_HELP = "(Mutex mechanisms are: 'none', 'default', 'flock:/path/to/file', 'fcntl:/path/to/file', 'file:/path/to/file', 'pthread', 'sysvsem', 'posixsem', 'sem')";
/** Mutex types and the module that registers each (built-in ones: always). */
const MUTEX_TYPES: Record<string, string | undefined> = {
  'default': undefined, 'watchdog-callback': undefined,
  'mpm-accept': 'mpm_prefork_module', 'rewrite-map': 'rewrite_module',
  'ssl-cache': 'ssl_module', 'ssl-stapling': 'ssl_module', 'ssl-stapling-refresh': 'ssl_module',
  'authdigest-client': 'auth_digest_module', 'authdigest-opaque': 'auth_digest_module',
  'authn-socache': 'authn_socache_module', 'proxy-balancer-shm': 'proxy_balancer_module',
};

/** httpd's ap_set_mutex: "Mutex mechanism[:dir] [type ...]". */
function mutex(cmd: Cmd, argv: string[]): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  if (argv.length < 1) return `Mutex requires at least a mechanism argument ${MUTEX_HELP}`;
  const mech = argv[0]!;
  const colon = mech.indexOf(':');
  const meth = (colon < 0 ? mech : mech.slice(0, colon)).toLowerCase();
  const dir = colon < 0 || colon === mech.length - 1 ? undefined : mech.slice(colon + 1);
  if (!MUTEX_MECHS.has(meth)) return `Invalid Mutex argument ${mech} ${MUTEX_HELP}`;
  const none = meth === 'none' || meth === 'no';
  if (!none && dir !== undefined) {
    let ok = false;
    try { ok = fs.statSync(cmd.serverRootRelative(dir)).isDirectory(); } catch { ok = false; }
    if (!ok) return `Invalid Mutex directory in argument ${mech}`;
  }
  const types = argv.length > 1 ? argv.slice(1) : ['default'];
  for (const t of types) {
    const owner = Object.prototype.hasOwnProperty.call(MUTEX_TYPES, t) ? MUTEX_TYPES[t] : null;
    if (owner === null || (owner !== undefined && !cmd.ctx.isLoaded(owner))) return `Mutex type ${t} is not valid`;
    if (none) return `None is not allowed for mutex type ${t}`;
  }
  // DIFFERENCE: plume's processes share no memory that needs a mutex; Mutex is accepted and recorded.
  globals(cmd.ctx).mutexes.push(argv.join(' '));
  return undefined;
}

function logLevel(cmd: Cmd, argv: string[]): string | undefined {
  if (argv.length === 0) return 'LogLevel requires at least one argument, Level of verbosity in error logging';
  const base = cmd.scope.path === undefined ? cmd.server.logLevel ?? DEFAULT_LOG_LEVEL : cmd.dir.logLevel ?? DEFAULT_LOG_LEVEL;
  const r = applyLogLevel(base, argv, (m) => cmd.ctx.findModuleShortName(m));
  if (typeof r === 'string') return r;
  if (cmd.scope.path === undefined && !cmd.scope.htaccess) {
    cmd.server.logLevel = r;
    cmd.server.explicitlySet.add('logLevel');
    if (!cmd.server.isVirtual) cmd.ctx.startupLogLevel = r;
  }
  cmd.dir.logLevel = r;
  return undefined;
}

function errorLog(cmd: Cmd, spec: string): string | undefined {
  const err = cmd.checkContext(NOT_IN_DIR_LOC_FILE);
  if (err) return err;
  cmd.server.errorLogSpec = spec;
  cmd.server.explicitlySet.add('errorLog');
  return undefined;
}

function errorLogFormat(cmd: Cmd, a: string, b: string | undefined): string | undefined {
  // "ErrorLogFormat [connection|request] format"
  if (b !== undefined) {
    const kind = a.toLowerCase();
    if (kind !== 'connection' && kind !== 'request') return `ErrorLogFormat type must be one of request, connection`;
    return undefined;
  }
  cmd.srv.errorLogFormat = a;
  return undefined;
}

function accessFileName(cmd: Cmd, raw: string): string | undefined {
  const names = splitWords(raw);
  if (names.length === 0) return 'AccessFileName requires at least one argument, Name(s) of per-directory config files (default: .htaccess)';
  cmd.srv.accessNames = names;
  return undefined;
}

function setFilters(field: 'outputFilters' | 'inputFilters') {
  return (cmd: Cmd, arg: string): string | undefined => {
    cmd.dir[field] = arg.split(';').map((s) => s.trim()).filter(Boolean);
    return undefined;
  };
}

function maxRanges(field: 'maxRanges' | 'maxOverlaps' | 'maxReversals', label: string) {
  return (cmd: Cmd, arg: string): string | undefined => {
    const a = arg.toLowerCase();
    let v: number;
    if (a === 'none') v = 0;
    else if (a === 'default') v = -2;
    else if (a === 'unlimited') v = -1;
    else {
      // atol(): leading white space, a sign, digits; anything after is ignored.
      const n = strtoi64(arg).value;
      if (n <= 0n) return `${label} requires 'none', 'default', 'unlimited' or a positive integer`;
      v = n > 2147483647n ? 2147483647 : Number(n);
    }
    cmd.dir[field] = v;
    return undefined;
  };
}

function httpProtocolOptions(cmd: Cmd, raw: string): string | undefined {
  for (const w of splitWords(raw)) {
    const a = w.toLowerCase();
    if (a === 'strict') cmd.srv.strictProtocol = true;
    else if (a === 'unsafe') cmd.srv.strictProtocol = false;
    else if (a === 'registeredmethods') cmd.srv.registeredMethodsOnly = true;
    else if (a === 'lenientmethods') cmd.srv.registeredMethodsOnly = false;
    else if (a === 'allow0.9') cmd.srv.allowHttp09 = true;
    else if (a === 'require1.0') cmd.srv.allowHttp09 = false;
    else return `HttpProtocolOptions accepts 'Unsafe' or 'Strict' (default), 'RegisteredMethods' or 'LenientMethods' (default), and 'Require1.0' or 'Allow0.9' (default)`;
  }
  return undefined;
}

function protocols(cmd: Cmd, raw: string): string | undefined {
  cmd.srv.protocols = splitWords(raw).map((p) => p.toLowerCase());
  return undefined;
}

function errorDirective(cmd: Cmd, raw: string): string | undefined {
  // The "Error" directive aborts configuration with its message.
  let msg = raw.trim();
  if (msg.startsWith('"') && msg.endsWith('"')) msg = msg.slice(1, -1);
  return msg;
}

function listen(cmd: Cmd, argv: string[]): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  if (argv.length < 1 || argv.length > 2) return 'Listen requires 1 or 2 arguments.';
  const a = argv[0]!;
  const b = argv[1];
  const g = globals(cmd.ctx);
  // apr_parse_addr_port: [host:]port, "[v6]:port"; a lone word that is no number is a host.
  let host: string | undefined;
  let portText: string;
  const v6 = /^\[([^\]]*)\](?::(.*))?$/.exec(a);
  if (v6) { host = v6[1]!; portText = v6[2] ?? ''; }
  else {
    const c = a.lastIndexOf(':');
    if (c >= 0) { host = a.slice(0, c); portText = a.slice(c + 1); }
    else if (/^\d+$/.test(a)) portText = a;
    else { host = a; portText = ''; }
  }
  if (host === '' || (portText !== '' && !/^\d+$/.test(portText))) return 'Invalid address or port';
  if (portText === '') return 'Port must be specified';
  const port = Number(portText);
  if (port < 1 || port > 65535) return 'Invalid address or port';
  if (host === '*') host = undefined;
  if (host !== undefined && resolveHostSync(host) === undefined) {
    cmd.ctx.log('core', 2, `(EAI 2)Name or service not known: AH00077: alloc_listener: failed to set up sockaddr for ${host}`);
    return 'Listen setup failed';
  }
  for (const l of g.listeners) {
    if (l.host === host && l.port === port) return 'Cannot define multiple Listeners on the same IP:port';
  }
  g.listeners.push({ host, port, protocol: b?.toLowerCase() ?? (port === 443 ? 'https' : 'http'), text: a });
  return undefined;
}

function listenBacklog(cmd: Cmd, arg: string): string | undefined {
  const n = nonNegInt(arg);
  if (n === undefined || n < 1) return 'ListenBacklog must be > 0';
  globals(cmd.ctx).listenBacklog = n;
  return undefined;
}

function pidFile(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  globals(cmd.ctx).pidFile = arg;
  return undefined;
}

function defaultRuntimeDir(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  const p = cmd.serverRootRelative(arg);
  let ok = false;
  try { ok = fs.statSync(p).isDirectory(); } catch { ok = false; }
  if (!ok) return 'DefaultRuntimeDir must be a valid directory, absolute or relative to ServerRoot';
  globals(cmd.ctx).runtimeDir = p;
  return undefined;
}

function gracefulShutdownTimeout(cmd: Cmd, arg: string): string | undefined {
  const n = nonNegInt(arg);
  if (n === undefined) return `GracefulShutdownTimeout must be a non-negative integer`;
  globals(cmd.ctx).gracefulShutdownTimeout = n;
  return undefined;
}

/** Directives accepted and recorded without run-time effect in plume (each noted in docs). */
function recorded(name: string) {
  return (cmd: Cmd, raw: string): string | undefined => {
    globals(cmd.ctx).recorded.push(`${name} ${raw}`);
    return undefined;
  };
}

// DIFFERENCE: SendBufferSize and ReceiveBufferSize are checked as httpd checks them but set no
// SO_SNDBUF/SO_RCVBUF (Node cannot on TCP sockets); MaxMemFree sizes APR's allocator, which a
// Node process does not have; CoreDumpDirectory is where httpd dumps core, and plume logs an
// uncaught error instead of dumping core. See docs/differences.md.

/** SendBufferSize / ReceiveBufferSize (listen.c): atoi, at least 512 or 0 for the system's. */
function socketBufferSize(name: string) {
  return (cmd: Cmd, raw: string): string | undefined => {
    const err = cmd.checkContext(GLOBAL_ONLY);
    if (err !== undefined) return err;
    const n = atoi(raw);
    if (n < 512 && n !== 0) return `${name} must be >= 512 bytes, or 0 for system default.`;
    globals(cmd.ctx).recorded.push(`${name} ${raw}`);
    return undefined;
  };
}

/** MaxMemFree (mpm_common.c): strtol, negative or out of range refused. */
function maxMemFree(cmd: Cmd, raw: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const n = strtoi64(raw);
  if (n.value < 0n || n.overflow) return `Invalid MaxMemFree value: ${raw}`;
  globals(cmd.ctx).recorded.push(`MaxMemFree ${raw}`);
  return undefined;
}

/** CoreDumpDirectory (mpm_common.c): ServerRoot-relative, an existing directory. */
function coreDumpDirectory(cmd: Cmd, raw: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const dir = cmd.ctx.serverRootRelative(raw);
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch {
    return `CoreDumpDirectory ${dir} does not exist`;
  }
  if (!st.isDirectory()) return `CoreDumpDirectory ${dir} is not a directory`;
  globals(cmd.ctx).recorded.push(`CoreDumpDirectory ${raw}`);
  return undefined;
}

/** CGIVar: REQUEST_URI is the only variable with rules (core.c set_cgi_var). */
function cgiVar(cmd: Cmd, name: string, rule: string): string | undefined {
  const lower = rule.toLowerCase();
  if (name !== 'REQUEST_URI') return `Unrecognized CGI variable: "${name}"`;
  if (lower !== 'current-uri' && lower !== 'original-uri') return "Valid rules for REQUEST_URI are 'current-uri' and 'original-uri'";
  cmd.dir.cgiVarRequestUri = lower;
  return undefined;
}

const ANY = OR_ALL | ACCESS_CONF | RSRC_CONF;
const SRV = RSRC_CONF;
const DIRS = ACCESS_CONF | RSRC_CONF;

const coreDirectives: DirectiveSpec<CoreServerConfig, CoreDirConfig>[] = [
  ...readDirectives,
  ...sectionDirectives,
  directive({ name: 'AccessFileName', args: 'RAW_ARGS', where: SRV, help: 'Name(s) of per-directory config files (default: .htaccess)', handler: accessFileName }),
  directive({ name: 'DocumentRoot', args: 'TAKE1', where: SRV, help: 'Root directory of the document tree', handler: documentRoot }),
  directive({ name: 'ErrorDocument', args: 'TAKE2', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'Change responses for HTTP errors', handler: errorDocument }),
  directive({ name: 'AllowOverride', args: 'RAW_ARGS', where: ACCESS_CONF, help: 'Controls what groups of directives can be configured by per-directory config files', handler: allowOverride }),
  directive({ name: 'AllowOverrideList', args: 'RAW_ARGS', where: ACCESS_CONF, help: 'Controls what individual directives can be configured by per-directory config files', handler: allowOverrideList }),
  directive({ name: 'Options', args: 'RAW_ARGS', where: OR_OPTIONS | ACCESS_CONF | RSRC_CONF, help: 'Set a number of attributes for a given directory', handler: options }),
  directive({ name: 'DefaultType', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'the default media type for otherwise untyped files (DEPRECATED)', handler: defaultType }),
  directive({ name: 'FileETag', args: 'RAW_ARGS', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'Specify components used to construct a file\'s ETag', handler: fileETag }),
  directive({ name: 'EnableMMAP', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'Controls whether memory-mapping may be used to read files', handler: onOffWord('enableMmap') }),
  directive({ name: 'EnableSendfile', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'Controls whether sendfile may be used to transmit files', handler: onOffWord('enableSendfile') }),
  directive({ name: 'CGIPassAuth', args: 'FLAG', where: OR_AUTHCFG | ACCESS_CONF, help: 'Controls whether HTTP authorization headers, normally hidden, will be passed to scripts', handler: onOff('cgiPassAuth') }),
  directive({ name: 'ContentDigest', args: 'FLAG', where: OR_OPTIONS | ACCESS_CONF | RSRC_CONF, help: 'whether or not to send a Content-MD5 header with each request', handler: onOff('contentDigest') }),
  directive({ name: 'ServerName', args: 'TAKE1', where: SRV, help: 'The hostname and port of the server', handler: serverName }),
  directive({ name: 'ServerAlias', args: 'RAW_ARGS', where: SRV, help: 'A name or names alternately used to access the server', handler: serverAlias }),
  directive({ name: 'ServerAdmin', args: 'TAKE1', where: SRV, help: 'The email address of the server administrator', handler: serverAdmin }),
  directive({ name: 'ServerSignature', args: 'TAKE1', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'En-/disable server signature (on|off|email)', handler: serverSignature }),
  directive({ name: 'ServerTokens', args: 'TAKE1', where: SRV, help: "Tag the server HTTP response header with ('Prod(uctOnly)', 'Major', 'Minor', 'Min(imal)', 'OS', or 'Full')", handler: serverTokens }),
  directive({ name: 'ServerPath', args: 'TAKE1', where: SRV, help: 'The pathname the server can be reached at', handler: serverPath }),
  directive({ name: 'Timeout', args: 'TAKE1', where: SRV, help: 'Timeout duration (sec)', handler: timeout }),
  directive({ name: 'UseCanonicalName', args: 'TAKE1', where: DIRS, help: "How to work out the ServerName : Port when constructing URLs", handler: useCanonicalName }),
  directive({ name: 'UseCanonicalPhysicalPort', args: 'FLAG', where: DIRS, help: "Whether to use the physical Port when constructing URLs", handler: useCanonicalPhysicalPort }),
  directive({ name: 'HostnameLookups', args: 'TAKE1', where: DIRS, help: '"on" to enable, "off" to disable reverse DNS lookups, or "double" to enable double-reverse DNS lookups', handler: hostnameLookups }),
  directive({ name: 'AcceptPathInfo', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'Set to on or off for PATH_INFO to be accepted by handlers, or default for the per-handler preference', handler: acceptPathInfo }),
  directive({ name: 'AddDefaultCharset', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'The name of the default charset to add to any Content-Type without one or \'Off\' to disable', handler: addDefaultCharset }),
  directive({ name: 'ForceType', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'a mime type that overrides other configured type', handler: forceType }),
  directive({ name: 'SetHandler', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'a handler name that overrides any other configured handler', handler: setHandler }),
  directive({ name: 'SetOutputFilter', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'filter (or ; delimited list of filters) to be run on the request content', handler: setFilters('outputFilters') }),
  directive({ name: 'SetInputFilter', args: 'TAKE1', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'filter (or ; delimited list of filters) to be run on the request body', handler: setFilters('inputFilters') }),
  directive({ name: 'AllowEncodedSlashes', args: 'TAKE1', where: SRV, help: 'Allow URLs containing \'/\' encoded as \'%2F\'', handler: allowEncodedSlashes }),
  directive({ name: 'LimitInternalRecursion', args: 'TAKE12', where: RSRC_CONF, help: 'maximum recursion depth of internal redirects and subrequests', handler: limitInternalRecursion }),
  directive({ name: 'TraceEnable', args: 'TAKE1', where: SRV, help: "'on' (default), 'off' or 'extended' to trace request body content", handler: traceEnable }),
  directive({ name: 'LimitRequestBody', args: 'TAKE1', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'Limit (in bytes) on maximum size of request message body', handler: limitRequestBody }),
  directive({ name: 'LimitXMLRequestBody', args: 'TAKE1', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'Limit (in bytes) on maximum size of an XML-based request body', handler: limitXmlRequestBody }),
  directive({ name: 'LimitRequestLine', args: 'TAKE1', where: SRV, help: 'Limit on maximum size of an HTTP request line', handler: limitField('limitRequestLine', 'LimitRequestLine') }),
  directive({ name: 'LimitRequestFieldsize', args: 'TAKE1', where: SRV, help: 'Limit on maximum size of an HTTP request header field', handler: limitField('limitRequestFieldSize', 'LimitRequestFieldsize') }),
  directive({ name: 'LimitRequestFields', args: 'TAKE1', where: SRV, help: 'Limit (0 = unlimited) on max number of header fields in a request message', handler: limitField('limitRequestFields', 'LimitRequestFields') }),
  directive({ name: 'MaxRanges', args: 'TAKE1', where: DIRS, help: 'Maximum number of Ranges in a request before returning the entire resource, or 0 for unlimited', handler: maxRanges('maxRanges', 'MaxRanges') }),
  directive({ name: 'MaxRangeOverlaps', args: 'TAKE1', where: DIRS, help: 'Maximum number of overlaps in Ranges in a request before returning the entire resource, or 0 for unlimited', handler: maxRanges('maxOverlaps', 'MaxRangeOverlaps') }),
  directive({ name: 'MaxRangeReversals', args: 'TAKE1', where: DIRS, help: 'Maximum number of reversals in Ranges in a request before returning the entire resource, or 0 for unlimited', handler: maxRanges('maxReversals', 'MaxRangeReversals') }),
  directive({ name: 'LogLevel', args: 'TAKE_ARGV', where: DIRS, help: 'Level of verbosity in error logging', handler: logLevel }),
  directive({ name: 'ErrorLog', args: 'TAKE1', where: SRV, help: 'The filename of the error log', handler: errorLog }),
  directive({ name: 'ErrorLogFormat', args: 'TAKE12', where: SRV, help: 'Format string for the ErrorLog', handler: errorLogFormat }),
  directive({ name: 'NameVirtualHost', args: 'TAKE1', where: SRV, help: 'A numeric IP address:port, or the name of a host', handler: nameVirtualHost }),
  directive({ name: 'Mutex', args: 'TAKE_ARGV', where: SRV, help: 'mutex (or "default") and mechanism', handler: mutex }),
  directive({ name: 'HttpProtocolOptions', args: 'RAW_ARGS', where: SRV, help: "'Allow0.9' or 'Require1.0' (default); 'RegisteredMethods' or 'LenientMethods' (default); 'Unsafe' or 'Strict' (default). Sets HTTP acceptance rules", handler: httpProtocolOptions }),
  directive({ name: 'Protocols', args: 'RAW_ARGS', where: SRV, help: 'Controls which protocols are allowed', handler: protocols }),
  directive({ name: 'ProtocolsHonorOrder', args: 'FLAG', where: SRV, help: "'off' (default) or 'on' to respect given order of protocols, by default the client specified order determines selection", handler: (cmd: Cmd, on: boolean) => { cmd.srv.protocolsHonorOrder = on; return undefined; } }),
  directive({ name: 'Error', args: 'RAW_ARGS', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'Generate error message from within configuration', handler: errorDirective }),
  directive({ name: 'Listen', args: 'TAKE_ARGV', where: SRV, help: 'A port number or a numeric IP address and a port number, and an optional protocol', handler: listen }),
  directive({ name: 'ListenBacklog', args: 'TAKE1', where: SRV, help: 'Maximum length of the queue of pending connections, as used by listen(2)', handler: listenBacklog }),
  directive({ name: 'PidFile', args: 'TAKE1', where: SRV, help: 'A file for logging the server process ID', handler: pidFile }),
  directive({ name: 'DefaultRuntimeDir', args: 'TAKE1', where: SRV, help: 'Base directory for temporary files', handler: defaultRuntimeDir }),
  directive({ name: 'GracefulShutdownTimeout', args: 'TAKE1', where: SRV, help: 'Maximum time in seconds to wait for child processes to complete transactions during shutdown', handler: gracefulShutdownTimeout }),
  directive({ name: 'SendBufferSize', args: 'TAKE1', where: SRV, help: 'Send buffer size in bytes', handler: socketBufferSize('SendBufferSize') }),
  directive({ name: 'ReceiveBufferSize', args: 'TAKE1', where: SRV, help: 'Receive buffer size in bytes', handler: socketBufferSize('ReceiveBufferSize') }),
  directive({ name: 'MaxMemFree', args: 'TAKE1', where: SRV, help: 'Maximum number of 1k blocks a particular child\'s allocator may hold.', handler: maxMemFree }),
  directive({ name: 'CoreDumpDirectory', args: 'TAKE1', where: SRV, help: 'The location of the directory Apache changes to before dumping core', handler: coreDumpDirectory }),
  directive({ name: 'ScoreBoardFile', args: 'TAKE1', where: SRV, help: 'A file for Apache to maintain runtime process management information', handler: recorded('ScoreBoardFile') }),
  directive({ name: 'ExtendedStatus', args: 'FLAG', where: SRV, help: '"On" to track extended status information, "Off" to disable', handler: (cmd: Cmd, on: boolean) => cmd.checkContext(GLOBAL_ONLY) ?? void (globals(cmd.ctx).extendedStatus = on) }),
  directive({ name: 'SeeRequestTail', args: 'FLAG', where: SRV, help: 'For extended status, "on" to see the last 63 chars of the request line, "off" (default) to see the first 63', handler: (cmd: Cmd, on: boolean) => cmd.checkContext(GLOBAL_ONLY) ?? void (globals(cmd.ctx).seeRequestTail = on) }),
  directive({ name: 'RLimitCPU', args: 'TAKE12', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'Soft/hard limits for max CPU usage in seconds', handler: setRlimit('rlimitCpu', 'cpu') }),
  directive({ name: 'RLimitMEM', args: 'TAKE12', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'Soft/hard limits for max memory usage per process', handler: setRlimit('rlimitMem', 'mem') }),
  directive({ name: 'RLimitNPROC', args: 'TAKE12', where: OR_ALL | ACCESS_CONF | RSRC_CONF, help: 'soft/hard limits for max number of processes per uid', handler: setRlimit('rlimitNproc', 'nproc') }),
  directive({ name: 'MergeTrailers', args: 'FLAG', where: SRV, help: 'merge request trailers into request headers or not', handler: (cmd: Cmd, on: boolean) => { cmd.srv.mergeTrailers = on; return undefined; } }),
  directive({ name: 'MergeSlashes', args: 'FLAG', where: SRV, help: 'Controls whether consecutive slashes in the URI path are merged', handler: (cmd: Cmd, on: boolean) => { cmd.srv.mergeSlashes = on; return undefined; } }),
  directive({ name: 'StrictHostCheck', args: 'FLAG', where: SRV, help: 'Controls whether a hostname match is required', handler: (cmd: Cmd, on: boolean) => { cmd.srv.strictHostCheck = on; return undefined; } }),
  directive({ name: 'QualifyRedirectURL', args: 'FLAG', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'Controls whether the REDIRECT_URL environment variable is fully qualified', handler: (cmd: Cmd, on: boolean) => { cmd.dir.qualifyRedirectUrl = on ? 'on' : 'off'; return undefined; } }),
  directive({ name: 'CGIVar', args: 'TAKE2', where: OR_FILEINFO | ACCESS_CONF | RSRC_CONF, help: 'Controls how some CGI variables are set', handler: cgiVar }),
  directive({ name: 'RegisterHttpMethod', args: 'ITERATE', where: SRV, help: 'Registers non-standard HTTP methods', handler: (cmd: Cmd, m: string) => { globals(cmd.ctx).registeredMethods.add(m); return undefined; } }),
  directive({ name: 'AcceptFilter', args: 'TAKE2', where: SRV, help: 'Set the Accept Filter to use for a protocol', handler: acceptFilter }),
];

/** The core module. */
export const core = defineModule<CoreServerConfig, CoreDirConfig>({
  name: 'core_module',
  source: 'core.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => createCoreServerConfig(),
  mergeServerConfig: mergeCoreServerConfig,
  createDirConfig: createCoreDirConfig,
  mergeDirConfig: mergeCoreDirConfig,
  directives: coreDirectives,
  hooks: {
    translateName: { fn: translateName, order: HOOK_REALLY_LAST },
    mapToStorage: [{ fn: upgradeStorage, order: HOOK_REALLY_FIRST }, { fn: mapToStorage, order: HOOK_REALLY_LAST }],
    typeChecker: { fn: coreTypeChecker, order: HOOK_REALLY_LAST },
    fixups: { fn: coreOverrideType, order: HOOK_REALLY_FIRST },
    handler: [{ fn: upgradeHandler, order: HOOK_REALLY_FIRST }, { fn: defaultHandler, order: HOOK_REALLY_LAST }],
  },
  configHooks: { checkConfig: reorderDirectories },
});

/** httpd's ap_core_reorder_directories, for the main server and each virtual host (whose
 *  list is the main server's sections followed by its own). */
function reorderDirectories(ctx: ConfigContext): undefined {
  for (const s of [ctx.mainServer, ...ctx.vhosts]) {
    const c = coreServer(s);
    c.secDir = sortDirectorySections(c.secDir);
  }
  return undefined;
}

// Modules may read the core's configuration from here or from core/config.ts; the server's
// own layers below the module API use core/config.ts.
export { coreDir, coreServer, parseTimeout };
export type { Request };
