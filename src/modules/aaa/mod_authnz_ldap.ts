// mod_authnz_ldap (modules/aaa/mod_authnz_ldap.c): the "ldap" authn provider and the
// ldap-user, ldap-dn, ldap-group, ldap-attribute, ldap-filter and ldap-search authz
// providers, over mod_ldap's connections and cache (its `uldap` functions, httpd's optional
// functions). Authentication searches AuthLDAPURL's base for (&(filter)(attr=user)), binds as
// the one entry found with the password sent, and exports the URL's attributes as
// AUTHENTICATE_<ATTR> (AuthLDAPAuthorizePrefix after authorization). No merger: the most
// specific section using these directives wins whole, as in httpd.

import * as fs from 'node:fs';
import { execLineArg } from '../../server/config/exec-line.js';
import iconv from 'iconv-lite';
import {
  MODULE_API_VERSION, OR_AUTHCFG, RSRC_CONF, defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import { splitWords } from '../../server/config/lexer.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_WARNING, APLOG_TRACE1, levelFor } from '../../server/log/levels.js';
import { compileApacheRegex, pregsub } from '../../server/util-pcre.js';
import {
  AUTH_DENIED, AUTH_GENERAL_ERROR, AUTH_GRANTED, AUTH_USER_NOT_FOUND,
  type AuthnProvider, type AuthnStatus,
} from './mod_authn_core.js';
import {
  AUTHZ_DENIED, AUTHZ_DENIED_NO_USER, AUTHZ_GRANTED, AUTHZ_PROVIDER_VERSION,
  type AuthzProvider, type AuthzStatus,
} from './mod_authz_core.js';
import { parseRequireExpr } from './require-expr.js';
import type { StringExpr } from './auth-string-expr.js';
import { LDAP_SCOPE_ONELEVEL, parseLdapUrl } from '../ldap/ldap-url.js';
import {
  APR_LDAP_NONE, APR_LDAP_SSL, APR_LDAP_STARTTLS, LDAP_COMPARE_TRUE, LDAP_CONSTRAINT_VIOLATION,
  LDAP_FILTER_ERROR, LDAP_INAPPROPRIATE_AUTH, LDAP_INSUFFICIENT_ACCESS, LDAP_INVALID_CREDENTIALS,
  LDAP_NO_SUCH_OBJECT, LDAP_OTHER, LDAP_SUCCESS, ldapErr2String, uldap, type Deref, type Ldc, type Scope,
} from '../ldap/mod_ldap.js';

const AUTHN_PREFIX = 'AUTHENTICATE_';
const AUTHZ_PREFIX = 'AUTHORIZE_';
/** MAX_STRING_LEN: the filter buffer. */
const FILTER_LENGTH = 8192;
const GROUPATTR_MAX_ELTS = 10;

// ---- configuration ------------------------------------------------------------------------

export interface AuthnzLdapDirConfig {
  url: string;
  host: string | undefined;
  port: number;
  basedn: string;
  attribute: string;
  attributes: string[] | undefined;
  scope: Scope;
  filter: string;
  deref: Deref;
  binddn: string | undefined;
  bindpw: string | undefined;
  bindAuthoritative: boolean;
  userIsDn: boolean;
  remoteUserAttribute: string | undefined;
  compareDnOnServer: boolean;
  haveLdapUrl: boolean;
  groupattr: string[];
  groupAttribIsDn: boolean;
  sgAttributes: string[];
  subgroupclasses: string[];
  maxNestingDepth: number;
  /** -1 = unset (LDAPTrustedMode's), else APR_LDAP_*. */
  secure: number;
  authzPrefix: string;
  initialBindAsUser: boolean;
  bindRegex: RegExp | undefined;
  bindSubst: string | undefined;
  searchAsUser: boolean;
  compareAsUser: boolean;
}

function createDirConfig(): AuthnzLdapDirConfig {
  return {
    url: '', host: undefined, port: 0, basedn: '', attribute: 'uid', attributes: undefined, scope: 'sub',
    filter: 'objectclass=*', deref: 'always', binddn: undefined, bindpw: undefined, bindAuthoritative: true,
    userIsDn: false, remoteUserAttribute: undefined, compareDnOnServer: false, haveLdapUrl: false,
    groupattr: [], groupAttribIsDn: true, sgAttributes: [], subgroupclasses: [], maxNestingDepth: 10,
    secure: -1, authzPrefix: AUTHZ_PREFIX, initialBindAsUser: false, bindRegex: undefined, bindSubst: undefined,
    searchAsUser: false, compareAsUser: false,
  };
}

interface ServerConf {
  charsetConfig: string | undefined;
}

/** AuthLDAPCharsetConfig's table (language → charset), read at post-config. */
let charsetConversions: Map<string, string> | null = null;

// ---- directives ---------------------------------------------------------------------------

type Cmd = CmdParms<ServerConf, AuthnzLdapDirConfig>;

function parseUrl(cmd: Cmd, url: string, mode: string | undefined): string | undefined {
  const sec = cmd.dir;
  const res = parseLdapUrl(url);
  if (!res.ok) return res.reason;
  const u = res.url;
  sec.url = url;
  sec.host = sec.host !== undefined ? `${u.host ?? ''} ${sec.host}` : (u.host ?? 'localhost');
  sec.basedn = u.dn ?? '';
  if (u.attrs && u.attrs.length > 0) {
    sec.attributes = [...u.attrs];
    sec.attribute = u.attrs[0]!;
  } else {
    sec.attributes = undefined;
    sec.attribute = 'uid';
  }
  sec.scope = u.scope === LDAP_SCOPE_ONELEVEL ? 'one' : 'sub';
  if (u.filter !== undefined) {
    sec.filter = u.filter.startsWith('(') ? u.filter.slice(1, u.filter.length - 1) : u.filter;
  } else {
    sec.filter = 'objectclass=*';
  }
  if (mode !== undefined) {
    const m = mode.toUpperCase();
    if (m === 'NONE') sec.secure = APR_LDAP_NONE;
    else if (m === 'SSL') sec.secure = APR_LDAP_SSL;
    else if (m === 'TLS' || m === 'STARTTLS') sec.secure = APR_LDAP_STARTTLS;
    else return 'Invalid LDAP connection mode setting: must be one of NONE, SSL, or TLS/STARTTLS';
  }
  if (url.slice(0, 5).toLowerCase() === 'ldaps') {
    sec.secure = APR_LDAP_SSL;
    sec.port = u.port !== 0 ? u.port : 636;
  } else {
    sec.port = u.port !== 0 ? u.port : 389;
  }
  sec.haveLdapUrl = true;
  const scopeName = u.scope === 2 ? 'subtree' : u.scope === 0 ? 'base' : u.scope === 1 ? 'onelevel' : 'unknown';
  cmd.log('authnz_ldap', APLOG_TRACE1, `auth_ldap url parse: \`${url}', Host: ${u.host ?? '(null)'}, Port: ${u.port}, DN: ${u.dn ?? '(null)'}, attrib: ${u.attrs?.[0] ?? '(null)'}, scope: ${scopeName}, filter: ${u.filter ?? '(null)'}, connection mode: ${sec.secure === APR_LDAP_SSL ? 'using SSL' : 'not using SSL'}`);
  return undefined;
}

function setDeref(cmd: Cmd, arg: string): string | undefined {
  const l = arg.toLowerCase();
  if (arg === 'never' || l === 'off') cmd.dir.deref = 'never';
  else if (arg === 'searching') cmd.dir.deref = 'search';
  else if (arg === 'finding') cmd.dir.deref = 'find';
  else if (arg === 'always' || l === 'on') cmd.dir.deref = 'always';
  else return 'Unrecognized value for AuthLDAPDereferenceAliases directive';
  return undefined;
}

function addSubgroupAttribute(cmd: Cmd, arg: string): string | undefined {
  if (cmd.dir.sgAttributes.length === GROUPATTR_MAX_ELTS) return 'Too many AuthLDAPSubGroupAttribute values';
  cmd.dir.sgAttributes.push(arg);
  return undefined;
}

function addSubgroupClass(cmd: Cmd, arg: string): string | undefined {
  if (cmd.dir.subgroupclasses.length > GROUPATTR_MAX_ELTS) return 'Too many AuthLDAPSubGroupClass values';
  cmd.dir.subgroupclasses.push(arg);
  return undefined;
}

function setMaxDepth(cmd: Cmd, arg: string): undefined {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(arg);
  cmd.dir.maxNestingDepth = m === null ? 0 : Number(m[1]) | 0;
  return undefined;
}

function addGroupAttribute(cmd: Cmd, arg: string): string | undefined {
  if (cmd.dir.groupattr.length > GROUPATTR_MAX_ELTS) return 'Too many AuthLDAPGroupAttribute directives';
  cmd.dir.groupattr.push(arg);
  return undefined;
}

function setCharsetConfig(cmd: Cmd, arg: string): undefined {
  cmd.srv.charsetConfig = arg;
  return undefined;
}

function setBindPattern(cmd: Cmd, exp: string, subst: string): string | undefined {
  const re = compileApacheRegex(exp, false);
  if (re === undefined) return `AuthLDAPInitialBindPattern: cannot compile regular expression '${exp}'`;
  cmd.dir.bindRegex = re;
  cmd.dir.bindSubst = subst;
  return undefined;
}

function setBindPassword(cmd: Cmd, arg: string): string | undefined {
  const pw = execLineArg(arg, (p) => cmd.serverRootRelative(p));
  if (typeof pw !== 'string') return pw.error;
  cmd.dir.bindpw = pw;
  if (pw === '') return 'Empty passwords are invalid for AuthLDAPBindPassword';
  return undefined;
}

function flag<K extends 'bindAuthoritative' | 'userIsDn' | 'compareDnOnServer' | 'groupAttribIsDn' | 'initialBindAsUser' | 'searchAsUser' | 'compareAsUser'>(key: K) {
  return (cmd: Cmd, on: boolean): undefined => {
    cmd.dir[key] = on;
    return undefined;
  };
}

function str<K extends 'binddn' | 'remoteUserAttribute' | 'authzPrefix'>(key: K) {
  return (cmd: Cmd, v: string): undefined => {
    cmd.dir[key] = v;
    return undefined;
  };
}

// ---- per-request state --------------------------------------------------------------------

interface ReqState {
  dn: string | undefined;
  user: string | undefined;
  vals: (string | undefined)[] | undefined;
  password: string | undefined;
}

const reqStates = new WeakMap<Request, ReqState>();

function buildRequestConfig(r: Request): ReqState {
  const req: ReqState = { dn: undefined, user: undefined, vals: undefined, password: undefined };
  reqStates.set(r, req);
  debug(r, 'AH01740: ldap authorize: Creating LDAP req structure');
  return req;
}

function debug(r: Request, msg: string): void {
  if (levelFor(r.server.logLevel, 'authnz_ldap') >= APLOG_DEBUG) r.log('authnz_ldap', APLOG_DEBUG, msg);
}

function conf(r: Request): AuthnzLdapDirConfig {
  return self.dir(r) ?? createDirConfig();
}

/** Bytes of a latin1 request string as the text the LDAP client sends (UTF-8 when they are),
 *  converted from the client's charset first with AuthLDAPCharsetConfig. */
function toLdapText(r: Request, s: string): string {
  const bytes = Buffer.from(s, 'latin1');
  if (charsetConversions) {
    const cs = convSet(r);
    if (cs !== undefined && iconv.encodingExists(cs)) return iconv.decode(bytes, cs);
  }
  return bytes.toString('utf8');
}

/** get_conv_set: the charset of the first Accept-Language, or of its two-letter prefix. */
function convSet(r: Request): string | undefined {
  const line = r.headersIn.get('accept-language');
  if (line === undefined || charsetConversions === null) return undefined;
  const cut = line.search(/[,;]/);
  const lang = cut < 0 ? line : line.slice(0, cut);
  let cs = charsetConversions.get(lang);
  if (cs === undefined && lang.length > 3 && lang[2] === '-') cs = charsetConversions.get(lang.slice(0, 2));
  return cs;
}

/** set_request_vars: PREFIX<ATTR> for every URL attribute; REMOTE_USER from one. */
function setRequestVars(r: Request, authn: boolean, vals: readonly (string | undefined)[] | undefined): boolean {
  const sec = conf(r);
  const prefix = authn ? AUTHN_PREFIX : sec.authzPrefix;
  let set = false;
  if (sec.attributes && vals) {
    sec.attributes.forEach((a, i) => {
      const v = vals[i] ?? '';
      r.subprocessEnv.set(prefix + a.toUpperCase(), Buffer.from(v, 'utf8').toString('latin1'));
      if (authn && sec.remoteUserAttribute !== undefined && sec.remoteUserAttribute === a) {
        r.user = Buffer.from(vals[i] ?? '', 'utf8').toString('latin1');
        set = true;
      }
    });
  }
  return set;
}

/** ldap_determine_binddn: AuthLDAPInitialBindPattern applied to the user name. */
function determineBindDn(r: Request, user: string): string {
  const sec = conf(r);
  if (!sec.bindRegex || sec.bindSubst === undefined) return user;
  let result = user;
  const m = sec.bindRegex.exec(user);
  sec.bindRegex.lastIndex = 0;
  if (m) {
    const s = pregsub(sec.bindSubst, m);
    if (s !== undefined) result = s;
  }
  r.subprocessEnv.set('LDAP_BINDASUSER', result);
  return result;
}

/** authn_ldap_build_filter: (&(filter)(attr=user)) with the user's filter characters escaped;
 *  undefined when it does not fit httpd's buffer. */
function buildFilter(r: Request, user: string, filter: string | undefined, sec: AuthnzLdapDirConfig): { filter: string; ok: boolean } {
  const f = filter ?? sec.filter;
  const u = toLdapText(r, user);
  const nofilter = f === '' || f.toLowerCase() === 'none';
  let out = nofilter ? `(${sec.attribute}=` : `(&(${f})(${sec.attribute}=`;
  if (Buffer.byteLength(out) >= FILTER_LENGTH) return { filter: out.slice(0, FILTER_LENGTH - 1), ok: false };
  let len = Buffer.byteLength(out);
  for (const ch of u) {
    const add = '*()\\'.includes(ch) ? `\\${ch}` : ch;
    const n = Buffer.byteLength(add);
    if (len + n >= FILTER_LENGTH - 1) return { filter: out, ok: false };
    out += add;
    len += n;
  }
  const close = nofilter ? ')' : '))';
  if (len + close.length >= FILTER_LENGTH - 1) return { filter: out, ok: false };
  return { filter: out + close, ok: true };
}

/** The filter as the LDAP client parses it: OpenLDAP takes "\*" for a literal '*', ldapts
 *  wants the RFC 4515 "\2a". */
export function ldapFilterForClient(filter: string): string {
  return filter.replace(/\\([^0-9A-Fa-f]|[0-9A-Fa-f](?![0-9A-Fa-f])|$)/g, (_m, c: string) => {
    if (c === '') return '\\5c';
    return `\\${Buffer.from(c, 'utf8').toString('hex').match(/../g)!.join('\\')}`;
  });
}

// ---- authentication -----------------------------------------------------------------------

function mapBindFailure(sec: AuthnzLdapDirConfig, result: number): AuthnStatus {
  if (sec.filter.toLowerCase() === 'none' && result === LDAP_OTHER) return AUTH_USER_NOT_FOUND;
  if (result === LDAP_NO_SUCH_OBJECT) return AUTH_USER_NOT_FOUND;
  // LDAP_SECURITY_ERROR: 0x2f..0x32 (inappropriate auth, invalid credentials, insufficient access)
  if (result === LDAP_INAPPROPRIATE_AUTH || result === LDAP_INVALID_CREDENTIALS || result === LDAP_INSUFFICIENT_ACCESS || result === 0x2f) return AUTH_DENIED;
  if (result === LDAP_CONSTRAINT_VIOLATION) return AUTH_DENIED;
  return AUTH_GENERAL_ERROR;
}

async function checkPassword(r: Request, user: string, password: Uint8Array): Promise<AuthnStatus> {
  const sec = conf(r);
  if (!sec.haveLdapUrl) {
    r.log('authnz_ldap', APLOG_WARNING, 'AH02558: no AuthLDAPURL');
    return AUTH_GENERAL_ERROR;
  }
  // A bind with an empty password always succeeds (an anonymous bind).
  if (password.length === 0) {
    debug(r, 'AH10263: auth_ldap authenticate: empty password specified');
    return AUTH_DENIED;
  }
  // The password up to a NUL, as C reads it.
  const nul = Buffer.from(password).indexOf(0);
  const pwLatin1 = Buffer.from(nul >= 0 ? password.subarray(0, nul) : password).toString('latin1');
  if (pwLatin1 === '') {
    debug(r, 'AH10263: auth_ldap authenticate: empty password specified');
    return AUTH_DENIED;
  }
  const pw = toLdapText(r, pwLatin1);
  if (sec.host === undefined) {
    r.log('authnz_ldap', APLOG_WARNING, 'AH01690: auth_ldap authenticate: no sec->host - weird...?');
    return AUTH_GENERAL_ERROR;
  }
  let binddn = sec.binddn;
  let bindpw = sec.bindpw;
  if (sec.initialBindAsUser) {
    bindpw = pw;
    binddn = toLdapText(r, determineBindDn(r, user));
  }
  const req = buildRequestConfig(r);
  const ldc = uldap.connectionFind(r, sec.host, sec.port, binddn, bindpw, sec.deref, sec.secure);
  debug(r, `AH01691: auth_ldap authenticate: using URL ${sec.url}`);
  const f = buildFilter(r, user, undefined, sec);
  if (!f.ok) {
    r.log('authnz_ldap', APLOG_ERR, `AH02622: auth_ldap authenticate: ldap filter too long (>${FILTER_LENGTH}): ${f.filter}`);
    uldap.connectionClose(ldc);
    return AUTH_GENERAL_ERROR;
  }
  if (levelFor(r.server.logLevel, 'authnz_ldap') >= APLOG_TRACE1) r.log('authnz_ldap', APLOG_TRACE1, `auth_ldap authenticate: final authn filter is ${f.filter}`);
  let res;
  try {
    res = await uldap.checkUserId(r, ldc, sec.url, sec.basedn, sec.scope, sec.attributes, ldapFilterForClient(f.filter), pw);
  } finally {
    uldap.connectionClose(ldc);
  }
  if (res.result !== LDAP_SUCCESS) {
    if (!sec.bindAuthoritative) {
      debug(r, `AH01694: auth_ldap authenticate: user ${user} authentication failed; URI ${r.uri} [${ldc.reason}][${ldapErr2String(res.result)}] (not authoritative)`);
      return AUTH_USER_NOT_FOUND;
    }
    r.log('authnz_ldap', APLOG_INFO, `AH01695: auth_ldap authenticate: user ${user} authentication failed; URI ${r.uri} [${ldc.reason}][${ldapErr2String(res.result)}]`);
    return mapBindFailure(sec, res.result);
  }
  req.dn = res.dn;
  req.user = user;
  req.password = pw;
  req.vals = res.vals;
  if (sec.userIsDn) r.user = Buffer.from(res.dn ?? '', 'utf8').toString('latin1');
  const set = setRequestVars(r, true, req.vals);
  if (sec.remoteUserAttribute !== undefined && !set) {
    r.log('authnz_ldap', APLOG_WARNING, `AH01696: auth_ldap authenticate: REMOTE_USER was to be set with attribute '${sec.remoteUserAttribute}', but this attribute was not requested for in the LDAP query for the user. REMOTE_USER will fall back to username or DN as appropriate.`);
  }
  debug(r, `AH01697: auth_ldap authenticate: accepting ${user}`);
  return AUTH_GRANTED;
}

// ---- authorization ------------------------------------------------------------------------

type OpType = 'search' | 'compare' | 'compare-and-search';

/** get_connection_for_authz: the configured identity, or the user's own after this module
 *  authenticated them and AuthLDAPSearchAsUser / AuthLDAPCompareAsUser say so. */
function connectionForAuthz(r: Request, req: ReqState, type: OpType): Ldc {
  const sec = conf(r);
  let binddn = sec.binddn;
  let bindpw = sec.bindpw;
  if (req.password !== undefined && ((type === 'search' && sec.searchAsUser) || (type === 'compare' && sec.compareAsUser)
    || (type === 'compare-and-search' && sec.compareAsUser && sec.searchAsUser))) {
    binddn = req.dn;
    bindpw = req.password;
  }
  return uldap.connectionFind(r, sec.host!, sec.port, binddn, bindpw, sec.deref, sec.secure);
}

/** get_dn_for_nonldap_authn: the DN of a user another module authenticated. */
async function dnForNonLdapAuthn(r: Request, req: ReqState, ldc: Ldc, tag: string): Promise<AuthzStatus> {
  const sec = conf(r);
  const f = buildFilter(r, r.user!, undefined, sec);
  if (!f.ok) {
    r.log('authnz_ldap', APLOG_ERR, `AH02623: auth_ldap authorize: ldap filter too long (>${FILTER_LENGTH}): ${f.filter}`);
    return AUTHZ_DENIED;
  }
  const res = await uldap.getUserDn(r, ldc, sec.url, sec.basedn, sec.scope, sec.attributes, ldapFilterForClient(f.filter));
  if (res.result !== LDAP_SUCCESS) {
    debug(r, `AH01701: auth_ldap authorise: User DN not found, ${ldc.reason}`);
    return AUTHZ_DENIED;
  }
  req.dn = res.dn;
  req.user = r.user;
  req.vals = res.vals;
  const set = setRequestVars(r, true, req.vals);
  if (sec.remoteUserAttribute !== undefined && !set) {
    r.log('authnz_ldap', APLOG_WARNING, `AH10450: auth_ldap non-ldap authenticate: REMOTE_USER was to be set with attribute '${sec.remoteUserAttribute}', but this attribute was not requested for in the LDAP query for the user. REMOTE_USER will fall back to username or DN as appropriate.`);
  }
  void tag;
  return AUTHZ_GRANTED;
}

/** The start every check shares: the user, the URL, the request state, a connection and the
 *  user's DN. A status when the check ends there. */
async function prologue(r: Request, hostTag: string, blankTag: string, type: OpType): Promise<{ req: ReqState; ldc: Ldc } | AuthzStatus> {
  if (r.user === undefined) return AUTHZ_DENIED_NO_USER;
  const sec = conf(r);
  if (!sec.haveLdapUrl) return AUTHZ_DENIED;
  if (sec.host === undefined) {
    r.log('authnz_ldap', APLOG_WARNING, `AH${hostTag}: auth_ldap authorize: no sec->host - weird...?`);
    return AUTHZ_DENIED;
  }
  const req = reqStates.get(r) ?? buildRequestConfig(r);
  const ldc = connectionForAuthz(r, req, type);
  if (req.dn === undefined) {
    if (r.user === '') r.log('authnz_ldap', APLOG_WARNING, `AH${blankTag}: ldap authorize: Userid is blank, AuthType=${r.apAuthType ?? '(null)'}`);
    const rv = await dnForNonLdapAuthn(r, req, ldc, blankTag);
    if (rv !== AUTHZ_GRANTED) {
      uldap.connectionClose(ldc);
      return rv;
    }
  }
  return { req, ldc };
}

function reasonOf(ldc: Ldc): string {
  return ldc.reason;
}

/** ap_getword_conf repeatedly, stopping at the first empty word. */
function confWords(s: string): string[] {
  const out: string[] = [];
  for (const w of splitWords(s)) {
    if (w === '') break;
    out.push(w);
  }
  return out;
}

const ldapUserProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  async check(r, _args, expr) {
    const p = await prologue(r, '01698', '01699', 'compare');
    if (typeof p === 'number') return p;
    const { req, ldc } = p;
    try {
      const sec = conf(r);
      if (!req.dn) {
        debug(r, "AH01702: auth_ldap authorize: require user: user's DN has not been defined; failing authorization");
        return AUTHZ_DENIED;
      }
      const require = expr(r);
      let result = await uldap.compare(r, ldc, sec.url, req.dn, sec.attribute, toLdapText(r, require));
      if (result === LDAP_COMPARE_TRUE) {
        debug(r, 'AH01703: auth_ldap authorize: require user: authorization successful');
        setRequestVars(r, false, req.vals);
        return AUTHZ_GRANTED;
      }
      debug(r, `AH01704: auth_ldap authorize: require user: authorization failed [${reasonOf(ldc)}][${ldapErr2String(result)}]`);
      for (const w of confWords(require)) {
        result = await uldap.compare(r, ldc, sec.url, req.dn, sec.attribute, toLdapText(r, w));
        if (result === LDAP_COMPARE_TRUE) {
          debug(r, 'AH01705: auth_ldap authorize: require user: authorization successful');
          setRequestVars(r, false, req.vals);
          return AUTHZ_GRANTED;
        }
        debug(r, `AH01706: auth_ldap authorize: require user: authorization failed [${reasonOf(ldc)}][${ldapErr2String(result)}]`);
      }
      debug(r, `AH01707: auth_ldap authorize user: authorization denied for user ${r.user ?? ''} to ${r.uri}`);
      return AUTHZ_DENIED;
    } finally {
      uldap.connectionClose(ldc);
    }
  },
};

const ldapGroupProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  async check(r, _args, expr) {
    const p = await prologue(r, '01708', '10490', 'compare');
    if (typeof p === 'number') return p;
    const { req } = p;
    let ldc = p.ldc;
    try {
      const sec = conf(r);
      const groupattr = sec.groupattr.length > 0 ? sec.groupattr : ['member', 'uniqueMember'];
      const classes = sec.subgroupclasses.length > 0 ? sec.subgroupclasses : ['groupOfNames', 'groupOfUniqueNames'];
      if (r.user === '') r.log('authnz_ldap', APLOG_WARNING, `AH01709: ldap authorize: Userid is blank, AuthType=${r.apAuthType ?? '(null)'}`);
      if (sec.groupAttribIsDn) {
        if (!req.dn) {
          debug(r, `AH01712: auth_ldap authorize: require group: user's DN has not been defined; failing authorization for user ${r.user ?? ''}`);
          return AUTHZ_DENIED;
        }
      } else if (!req.user) {
        req.user = r.user;
      }
      const t = expr(r);
      const group = toLdapText(r, t);
      const member = sec.groupAttribIsDn ? req.dn! : toLdapText(r, req.user!);
      debug(r, `AH01713: auth_ldap authorize: require group: testing for group membership in "${t}"`);
      let result = 0;
      for (const a of groupattr) {
        debug(r, `AH01714: auth_ldap authorize: require group: testing for ${a}: ${sec.groupAttribIsDn ? req.dn! : req.user!} (${t})`);
        result = await uldap.compare(r, ldc, sec.url, group, a, member);
        if (result === LDAP_COMPARE_TRUE) {
          debug(r, `AH01715: auth_ldap authorize: require group: authorization successful (attribute ${a}) [${reasonOf(ldc)}][${result} - ${ldapErr2String(result)}]`);
          setRequestVars(r, false, req.vals);
          return AUTHZ_GRANTED;
        }
        debug(r, `AH01719: auth_ldap authorize: require group "${t}": didn't match with attr ${a} [${reasonOf(ldc)}][${result} - ${ldapErr2String(result)}]`);
      }
      uldap.connectionClose(ldc);
      ldc = connectionForAuthz(r, req, 'compare-and-search');
      debug(r, `AH01716: auth_ldap authorise: require group "${t}": failed [${reasonOf(ldc)}][${result} - ${ldapErr2String(result)}], checking sub-groups`);
      const sgAttrs = sec.sgAttributes.length > 0 ? sec.sgAttributes : ['member', 'uniqueMember'];
      for (const a of groupattr) {
        result = await uldap.checkSubgroups(r, ldc, sec.url, group, a, member, sgAttrs, classes, 0, sec.maxNestingDepth);
        if (result === LDAP_COMPARE_TRUE) {
          debug(r, `AH01717: auth_ldap authorise: require group (sub-group): authorisation successful (attribute ${a}) [${reasonOf(ldc)}][${result} - ${ldapErr2String(result)}]`);
          setRequestVars(r, false, req.vals);
          return AUTHZ_GRANTED;
        }
        // httpd prints the reason and the attribute the other way round here.
        debug(r, `AH01718: auth_ldap authorise: require group (sub-group) "${t}": didn't match with attr ${reasonOf(ldc)} [${a}][${result} - ${ldapErr2String(result)}]`);
      }
      debug(r, `AH01720: auth_ldap authorize group: authorization denied for user ${r.user ?? ''} to ${r.uri}`);
      return AUTHZ_DENIED;
    } finally {
      uldap.connectionClose(ldc);
    }
  },
};

const ldapDnProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  async check(r, _args, expr) {
    const p = await prologue(r, '01721', '01722', 'search');
    if (typeof p === 'number') return p;
    const { req, ldc } = p;
    try {
      const sec = conf(r);
      const t = expr(r);
      if (!req.dn) {
        debug(r, "AH01725: auth_ldap authorize: require dn: user's DN has not been defined; failing authorization");
        return AUTHZ_DENIED;
      }
      const result = await uldap.compareDn(r, ldc, sec.url, req.dn, toLdapText(r, t), sec.compareDnOnServer);
      if (result === LDAP_COMPARE_TRUE) {
        debug(r, 'AH01726: auth_ldap authorize: require dn: authorization successful');
        setRequestVars(r, false, req.vals);
        return AUTHZ_GRANTED;
      }
      debug(r, `AH01727: auth_ldap authorize: require dn "${t}": LDAP error [${reasonOf(ldc)}][${ldapErr2String(result)}]`);
      debug(r, `AH01728: auth_ldap authorize dn: authorization denied for user ${r.user ?? ''} to ${r.uri}`);
      return AUTHZ_DENIED;
    } finally {
      uldap.connectionClose(ldc);
    }
  },
};

/** The attribute=value pairs of `Require ldap-attribute` (ap_getword '=' then ap_getword_conf). */
export function attributePairs(t: string): [string, string][] {
  const out: [string, string][] = [];
  let rest = t;
  while (rest !== '') {
    const eq = rest.indexOf('=');
    let w: string;
    if (eq < 0) { w = rest; rest = ''; } else {
      w = rest.slice(0, eq);
      let j = eq;
      while (rest[j] === '=') j++;
      rest = rest.slice(j);
    }
    const words = splitWordsWithRest(rest);
    out.push([w, words.word]);
    rest = words.rest;
  }
  return out;
}

/** One ap_getword_conf word and what follows it (white space skipped). */
function splitWordsWithRest(s: string): { word: string; rest: string } {
  let i = 0;
  while (i < s.length && /\s/.test(s[i]!)) i++;
  let word = '';
  const q = s[i];
  if (q === '"' || q === "'") {
    i++;
    while (i < s.length && s[i] !== q) {
      if (s[i] === '\\' && s[i + 1] === q) i++;
      word += s[i];
      i++;
    }
    if (i < s.length) i++;
  } else {
    while (i < s.length && !/\s/.test(s[i]!)) { word += s[i]; i++; }
  }
  while (i < s.length && /\s/.test(s[i]!)) i++;
  return { word, rest: s.slice(i) };
}

const ldapAttributeProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  async check(r, _args, expr) {
    const p = await prologue(r, '01729', '01730', 'compare');
    if (typeof p === 'number') return p;
    const { req, ldc } = p;
    try {
      const sec = conf(r);
      if (!req.dn) {
        debug(r, "AH01733: auth_ldap authorize: require ldap-attribute: user's DN has not been defined; failing authorization");
        return AUTHZ_DENIED;
      }
      for (const [w, value] of attributePairs(expr(r))) {
        debug(r, `AH01734: auth_ldap authorize: checking attribute ${w} has value ${value}`);
        const result = await uldap.compare(r, ldc, sec.url, req.dn, w, toLdapText(r, value));
        if (result === LDAP_COMPARE_TRUE) {
          debug(r, 'AH01735: auth_ldap authorize: require attribute: authorization successful');
          setRequestVars(r, false, req.vals);
          return AUTHZ_GRANTED;
        }
        debug(r, `AH01736: auth_ldap authorize: require attribute: authorization failed [${reasonOf(ldc)}][${ldapErr2String(result)}]`);
      }
      debug(r, `AH01737: auth_ldap authorize attribute: authorization denied for user ${r.user ?? ''} to ${r.uri}`);
      return AUTHZ_DENIED;
    } finally {
      uldap.connectionClose(ldc);
    }
  },
};

const ldapFilterProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  async check(r, _args, expr) {
    const p = await prologue(r, '01738', '01739', 'search');
    if (typeof p === 'number') return p;
    const { req } = p;
    let ldc = p.ldc;
    try {
      const sec = conf(r);
      if (!req.dn) {
        debug(r, "AH01742: auth_ldap authorize: require ldap-filter: user's DN has not been defined; failing authorization");
        return AUTHZ_DENIED;
      }
      const t = expr(r);
      if (t !== '') {
        debug(r, `AH01743: auth_ldap authorize: checking filter ${t}`);
        const f = buildFilter(r, req.user ?? r.user!, t, sec);
        if (!f.ok) {
          r.log('authnz_ldap', APLOG_ERR, `AH02628: auth_ldap authorize: ldap filter too long (>${FILTER_LENGTH}): ${f.filter}`);
          return AUTHZ_DENIED;
        }
        let result: number;
        let res;
        try {
          res = await uldap.getUserDn(r, ldc, sec.url, sec.basedn, sec.scope, sec.attributes, ldapFilterForClient(f.filter));
          result = res.result;
        } catch {
          result = LDAP_FILTER_ERROR;
        }
        if (result === LDAP_SUCCESS) {
          req.vals = res!.vals;
          debug(r, `AH01744: auth_ldap authorize: checking dn match ${res!.dn ?? ''}`);
          if (sec.compareAsUser) {
            uldap.connectionClose(ldc);
            ldc = connectionForAuthz(r, req, 'compare');
          }
          result = await uldap.compareDn(r, ldc, sec.url, req.dn, res!.dn!, sec.compareDnOnServer);
        }
        if (result === LDAP_COMPARE_TRUE) {
          debug(r, 'AH01745: auth_ldap authorize: require ldap-filter: authorization successful');
          setRequestVars(r, false, req.vals);
          return AUTHZ_GRANTED;
        }
        if (result === LDAP_FILTER_ERROR) {
          debug(r, `AH01746: auth_ldap authorize: require ldap-filter: ${f.filter} authorization failed [${reasonOf(ldc)}][${ldapErr2String(result)}]`);
        } else {
          debug(r, `AH01747: auth_ldap authorize: require ldap-filter: authorization failed [${reasonOf(ldc)}][${ldapErr2String(result)}]`);
        }
      }
      debug(r, `AH01748: auth_ldap authorize filter: authorization denied for user ${r.user ?? ''} to ${r.uri}`);
      return AUTHZ_DENIED;
    } finally {
      uldap.connectionClose(ldc);
    }
  },
};

const ldapSearchProvider: AuthzProvider<StringExpr> = {
  parse: (cmd, args) => parseRequireExpr(args, cmd),
  async check(r, _args, expr) {
    // ldap-search needs no user: the filter alone decides.
    const sec = conf(r);
    if (!sec.haveLdapUrl) return AUTHZ_DENIED;
    if (sec.host === undefined) {
      r.log('authnz_ldap', APLOG_WARNING, 'AH10486: auth_ldap authorize: no sec->host - weird...?');
      return AUTHZ_DENIED;
    }
    const req = reqStates.get(r) ?? buildRequestConfig(r);
    const ldc = connectionForAuthz(r, req, 'search');
    try {
      const t = expr(r);
      if (t !== '') {
        debug(r, `AH02630: auth_ldap authorize: checking filter ${t}`);
        let result: number;
        let res;
        try {
          res = await uldap.getUserDn(r, ldc, sec.url, sec.basedn, sec.scope, sec.attributes, ldapFilterForClient(toLdapText(r, t)));
          result = res.result;
        } catch {
          result = LDAP_FILTER_ERROR;
        }
        if (result === LDAP_SUCCESS && res!.dn) {
          req.dn = res!.dn;
          req.vals = res!.vals;
          debug(r, 'AH02631: auth_ldap authorize: require ldap-search: authorization successful');
          setRequestVars(r, false, req.vals);
          return AUTHZ_GRANTED;
        }
        debug(r, `AH02632: auth_ldap authorize: require ldap-search: ${t} authorization failed [${reasonOf(ldc)}][${ldapErr2String(result)}]`);
      }
      debug(r, `AH02633: auth_ldap authorize search: authorization denied for to ${r.uri}`);
      return AUTHZ_DENIED;
    } finally {
      uldap.connectionClose(ldc);
    }
  },
};

// ---- configuration hooks ------------------------------------------------------------------

function postConfig(ctx: ConfigContext): string | undefined {
  if (!ctx.isLoaded('ldap_module')) {
    ctx.logNoServer('authnz_ldap', APLOG_ERR, 'AH01749: Module mod_ldap missing. Mod_ldap (aka. util_ldap) must be loaded in order for mod_authnz_ldap to function properly');
    return 'AH00016: Configuration Failed';
  }
  charsetConversions = null;
  const name = self.server(ctx.mainServer)?.charsetConfig;
  if (name === undefined) return undefined;
  const file = name.startsWith('/') ? name : `${ctx.serverRoot}/${name}`;
  let text: string;
  try {
    text = fs.readFileSync(file, 'latin1');
  } catch (e) {
    const code = (e as { code?: string }).code === 'ENOENT' ? '(2)No such file or directory' : `(13)Permission denied`;
    ctx.logNoServer('authnz_ldap', APLOG_ERR, `${code}: AH01751: could not open charset conversion config file ${file}.`);
    return 'AH00016: Configuration Failed';
  }
  const map = new Map<string, string>();
  for (const line of text.split('\n')) {
    const l = line.replace(/\r$/, '').trim();
    if (l.startsWith('#') || l === '') continue;
    const words = splitWords(l);
    if (words.length >= 2) map.set(words[0]!.toLowerCase(), words[1]!);
  }
  charsetConversions = map;
  if (!map.has('utf-8')) {
    ctx.logNoServer('authnz_ldap', APLOG_ERR, `AH01752: could not find the UTF-8 charset in the file ${file}.`);
    return 'AH00016: Configuration Failed';
  }
  return undefined;
}

// ---- module -------------------------------------------------------------------------------

const authnProvider: AuthnProvider = { checkPassword };

const providers: ProviderDecl[] = [
  { group: 'authn', name: 'ldap', version: '0', provider: authnProvider },
  { group: 'authz', name: 'ldap-user', version: AUTHZ_PROVIDER_VERSION, provider: ldapUserProvider as AuthzProvider },
  { group: 'authz', name: 'ldap-group', version: AUTHZ_PROVIDER_VERSION, provider: ldapGroupProvider as AuthzProvider },
  { group: 'authz', name: 'ldap-dn', version: AUTHZ_PROVIDER_VERSION, provider: ldapDnProvider as AuthzProvider },
  { group: 'authz', name: 'ldap-attribute', version: AUTHZ_PROVIDER_VERSION, provider: ldapAttributeProvider as AuthzProvider },
  { group: 'authz', name: 'ldap-filter', version: AUTHZ_PROVIDER_VERSION, provider: ldapFilterProvider as AuthzProvider },
  { group: 'authz', name: 'ldap-search', version: AUTHZ_PROVIDER_VERSION, provider: ldapSearchProvider as AuthzProvider },
];

const URL_HELP = 'URL to define LDAP connection. This should be an RFC 2255 compliant\nURL of the form ldap://host[:port]/basedn[?attrib[?scope[?filter]]].\n<ul>\n<li>Host is the name of the LDAP server. Use a space separated list of hosts \nto specify redundant servers.\n<li>Port is optional, and specifies the port to connect to.\n<li>basedn specifies the base DN to start searches from\n<li>Attrib specifies what attribute to search for in the directory. If not provided, it defaults to <b>uid</b>.\n<li>Scope is the scope of the search, and can be either <b>sub</b> or <b>one</b>. If not provided, the default is <b>sub</b>.\n<li>Filter is a filter to use in the search. If not provided, defaults to <b>(objectClass=*)</b>.\n</ul>\nSearches are performed using the attribute and the filter combined. For example, assume that the\nLDAP URL is <b>ldap://ldap.airius.com/ou=People, o=Airius?uid?sub?(posixid=*)</b>. Searches will\nbe done using the filter <b>(&((posixid=*))(uid=<i>username</i>))</b>, where <i>username</i>\nis the user name passed by the HTTP client. The search will be a subtree search on the branch <b>ou=People, o=Airius</b>.';

const self = defineModule<ServerConf, AuthnzLdapDirConfig>({
  name: 'authnz_ldap_module',
  source: 'mod_authnz_ldap.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  createServerConfig: () => ({ charsetConfig: undefined }),
  directives: [
    directive({ name: 'AuthLDAPURL', args: 'TAKE12', where: OR_AUTHCFG, help: URL_HELP, handler: parseUrl }),
    directive({ name: 'AuthLDAPBindDN', args: 'TAKE1', where: OR_AUTHCFG, help: 'DN to use to bind to LDAP server. If not provided, will do an anonymous bind.', handler: str('binddn') }),
    directive({ name: 'AuthLDAPBindPassword', args: 'TAKE1', where: OR_AUTHCFG, help: 'Password to use to bind to LDAP server. If not provided, will do an anonymous bind.', handler: setBindPassword }),
    directive({ name: 'AuthLDAPBindAuthoritative', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'on' to return failures when user-specific bind fails - defaults to on.", handler: flag('bindAuthoritative') }),
    directive({ name: 'AuthLDAPRemoteUserIsDN', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'on' to set the REMOTE_USER environment variable to be the full DN of the remote user. By default, this is set to off, meaning that the REMOTE_USER variable will contain whatever value the remote user sent.", handler: flag('userIsDn') }),
    directive({ name: 'AuthLDAPRemoteUserAttribute', args: 'TAKE1', where: OR_AUTHCFG, help: 'Override the user supplied username and place the contents of this attribute in the REMOTE_USER environment variable.', handler: str('remoteUserAttribute') }),
    directive({ name: 'AuthLDAPCompareDNOnServer', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'on' to force auth_ldap to do DN compares (for the \"require dn\" directive) using the server, and set it 'off' to do the compares locally (at the expense of possible false matches). See the documentation for a complete description of this option.", handler: flag('compareDnOnServer') }),
    directive({ name: 'AuthLDAPSubGroupAttribute', args: 'ITERATE', where: OR_AUTHCFG, help: 'Attribute labels used to define sub-group (or nested group) membership in groups - defaults to member and uniqueMember', handler: addSubgroupAttribute }),
    directive({ name: 'AuthLDAPSubGroupClass', args: 'ITERATE', where: OR_AUTHCFG, help: 'LDAP objectClass values used to identify sub-group instances - defaults to groupOfNames and groupOfUniqueNames', handler: addSubgroupClass }),
    directive({ name: 'AuthLDAPMaxSubGroupDepth', args: 'TAKE1', where: OR_AUTHCFG, help: 'Maximum subgroup nesting depth to be evaluated - defaults to 10 (top-level group = 0)', handler: setMaxDepth }),
    directive({ name: 'AuthLDAPGroupAttribute', args: 'ITERATE', where: OR_AUTHCFG, help: 'A list of attribute labels used to identify the user members of groups - defaults to member and uniquemember', handler: addGroupAttribute }),
    directive({ name: 'AuthLDAPGroupAttributeIsDN', args: 'FLAG', where: OR_AUTHCFG, help: "If set to 'on', auth_ldap uses the DN that is retrieved from the server for subsequent group comparisons. If set to 'off', auth_ldap uses the string provided by the client directly. Defaults to 'on'.", handler: flag('groupAttribIsDn') }),
    directive({ name: 'AuthLDAPDereferenceAliases', args: 'TAKE1', where: OR_AUTHCFG, help: 'Determines how aliases are handled during a search. Can be one of the values "never", "searching", "finding", or "always". Defaults to always.', handler: setDeref }),
    directive({ name: 'AuthLDAPCharsetConfig', args: 'TAKE1', where: RSRC_CONF, help: 'Character set conversion configuration file. If omitted, character set conversion is disabled.', handler: setCharsetConfig }),
    directive({ name: 'AuthLDAPAuthorizePrefix', args: 'TAKE1', where: OR_AUTHCFG, help: "The prefix to add to environment variables set during successful authorization, default 'AUTHORIZE_'", handler: str('authzPrefix') }),
    directive({ name: 'AuthLDAPInitialBindAsUser', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'on' to perform the initial DN lookup with the basic auth credentials instead of anonymous or hard-coded credentials", handler: flag('initialBindAsUser') }),
    directive({ name: 'AuthLDAPInitialBindPattern', args: 'TAKE2', where: OR_AUTHCFG, help: "The regex and substitution to determine a username that can bind based on an HTTP basic auth username", handler: setBindPattern }),
    directive({ name: 'AuthLDAPSearchAsUser', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'on' to perform authorization-based searches with the users credentials, when this module has also performed authentication.  Does not affect nested groups lookup.", handler: flag('searchAsUser') }),
    directive({ name: 'AuthLDAPCompareAsUser', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'on' to perform authorization-based compares with the users credentials, when this module has also performed authentication.  Does not affect nested groups lookups.", handler: flag('compareAsUser') }),
  ],
  configHooks: { postConfig },
  providers,
});

export default self;
