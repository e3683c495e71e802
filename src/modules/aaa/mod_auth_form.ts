// mod_auth_form (modules/aaa/mod_auth_form.c): authentication by an HTML login form, the
// credentials kept in the session (mod_session, through its 'session_api' provider).
//
//  - check_authn (AuthType form): the user and password come from the request's notes (a
//    login earlier in this request), else from the session ("<AuthName>-user", "-pw"); an
//    AuthFormSitePassphrase hash ("-site", MD5 of user:passphrase) accepts the session without
//    asking the providers; otherwise the AuthFormProvider chain checks them.
//  - A POST to a protected URL that fails is read as a login form (fields AuthFormUsername,
//    AuthFormPassword, AuthFormLocation, AuthFormMethod, AuthFormMimetype, AuthFormBody): a
//    good login is stored in the session and answered with a redirect to the form's location
//    or AuthFormLoginSuccessLocation; with a method field naming another method the request
//    is replayed with it and the kept body (the form-redirect-handler).
//  - Still unauthenticated: a redirect to AuthFormLoginRequiredLocation, else 401 with
//    "Cache-Control: no-store" (unless AuthFormDisableNoStore).
//  - Handlers: form-login-handler (POST only), form-logout-handler (clears the session,
//    AuthFormLogoutLocation answered with 307).

import { createHash } from 'node:crypto';
import {
  ACCESS_CONF, DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_AUTHCFG,
  defineModule, directive, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_CRIT, APLOG_DEBUG, APLOG_ERR, APLOG_TRACE1 } from '../../server/log/levels.js';
import { evalString, isFailure, parseStringExprCmd, type StringExpr } from '../../expr/index.js';
import {
  AUTH_DENIED, AUTH_GENERAL_ERROR, AUTH_GRANTED, AUTH_USER_NOT_FOUND,
  AUTHN_DEFAULT_PROVIDER, AUTHN_PROVIDER_NAME_NOTE,
  authName, authType, lookupAuthnProvider,
  type AuthnProvider, type AuthnStatus, type AuthTypeHandler,
} from './mod_authn_core.js';
import type { SessionApi } from '../session/api.js';
import { noMethodsAllow } from '../../server/core/core-hooks.js';

const FORM_LOGIN_HANDLER = 'form-login-handler';
const FORM_LOGOUT_HANDLER = 'form-logout-handler';
const FORM_REDIRECT_HANDLER = 'form-redirect-handler';
const HUGE_STRING_LEN = 8192;

interface ProviderEntry { readonly name: string; readonly provider: AuthnProvider }

interface FormDir {
  providers: ProviderEntry[] | undefined;
  authoritative: boolean; authoritativeSet: boolean;
  site: string | undefined; siteSet: boolean;
  username: string; usernameSet: boolean;
  password: string; passwordSet: boolean;
  location: string; locationSet: boolean;
  method: string; methodSet: boolean;
  mimetype: string; mimetypeSet: boolean;
  body: string; bodySet: boolean;
  formSize: number; formSizeSet: boolean;
  fakeBasicAuth: boolean; fakeBasicAuthSet: boolean;
  disableNoStore: boolean; disableNoStoreSet: boolean;
  loginSuccess: StringExpr | undefined; loginSuccessSet: boolean;
  loginRequired: StringExpr | undefined; loginRequiredSet: boolean;
  logout: StringExpr | undefined; logoutSet: boolean;
}

function createDirConfig(): FormDir {
  return {
    providers: undefined, authoritative: true, authoritativeSet: false, site: undefined, siteSet: false,
    username: 'httpd_username', usernameSet: false, password: 'httpd_password', passwordSet: false,
    location: 'httpd_location', locationSet: false, method: 'httpd_method', methodSet: false,
    mimetype: 'httpd_mimetype', mimetypeSet: false, body: 'httpd_body', bodySet: false,
    formSize: HUGE_STRING_LEN, formSizeSet: false, fakeBasicAuth: false, fakeBasicAuthSet: false,
    disableNoStore: false, disableNoStoreSet: false, loginSuccess: undefined, loginSuccessSet: false,
    loginRequired: undefined, loginRequiredSet: false, logout: undefined, logoutSet: false,
  };
}

function mergeDirConfig(base: Readonly<FormDir>, add: Readonly<FormDir>): FormDir {
  const pick = <K extends keyof FormDir, S extends keyof FormDir>(k: K, set: S): FormDir[K] => (add[set] ? add[k] : base[k]);
  return {
    providers: add.providers ?? base.providers,
    authoritative: pick('authoritative', 'authoritativeSet'), authoritativeSet: add.authoritativeSet || base.authoritativeSet,
    site: pick('site', 'siteSet'), siteSet: add.siteSet || base.siteSet,
    username: pick('username', 'usernameSet'), usernameSet: add.usernameSet || base.usernameSet,
    password: pick('password', 'passwordSet'), passwordSet: add.passwordSet || base.passwordSet,
    location: pick('location', 'locationSet'), locationSet: add.locationSet || base.locationSet,
    method: pick('method', 'methodSet'), methodSet: add.methodSet || base.methodSet,
    mimetype: pick('mimetype', 'mimetypeSet'), mimetypeSet: add.mimetypeSet || base.mimetypeSet,
    body: pick('body', 'bodySet'), bodySet: add.bodySet || base.bodySet,
    formSize: pick('formSize', 'formSizeSet'), formSizeSet: add.formSizeSet || base.formSizeSet,
    fakeBasicAuth: pick('fakeBasicAuth', 'fakeBasicAuthSet'), fakeBasicAuthSet: add.fakeBasicAuthSet || base.fakeBasicAuthSet,
    disableNoStore: pick('disableNoStore', 'disableNoStoreSet'), disableNoStoreSet: add.disableNoStoreSet || base.disableNoStoreSet,
    loginSuccess: pick('loginSuccess', 'loginSuccessSet'), loginSuccessSet: add.loginSuccessSet || base.loginSuccessSet,
    loginRequired: pick('loginRequired', 'loginRequiredSet'), loginRequiredSet: add.loginRequiredSet || base.loginRequiredSet,
    logout: pick('logout', 'logoutSet'), logoutSet: add.logoutSet || base.logoutSet,
  };
}

// ---- directives ----------------------------------------------------------------------------

type Cmd = CmdParms<unknown, FormDir>;

function addProvider(cmd: Cmd, name: string): string | undefined {
  const provider = lookupAuthnProvider(cmd.ctx, name);
  if (provider === undefined) return `Unknown Authn provider: ${name}`;
  if (provider.checkPassword === undefined) return `The '${name}' Authn provider doesn't support Form Authentication`;
  (cmd.dir.providers ??= []).push({ name, provider });
  return undefined;
}

function checkString(cmd: Cmd, s: string): string | undefined {
  if (s === '' || s.includes('=') || s.includes('&')) return `${cmd.name} cannot be empty, or contain '=' or '&'.`;
  return undefined;
}

type FieldKey = 'username' | 'password' | 'location' | 'method' | 'mimetype' | 'body';
function field(key: FieldKey): (cmd: Cmd, v: string) => string | undefined {
  return (cmd, v) => {
    cmd.dir[key] = v;
    cmd.dir[`${key}Set`] = true;
    return checkString(cmd, v);
  };
}

type ExprKey = 'loginSuccess' | 'loginRequired' | 'logout';
function exprDirective(key: ExprKey, what: string): (cmd: Cmd, v: string) => string | undefined {
  return (cmd, v) => {
    const res = parseStringExprCmd(cmd, v, 0, 'auth_form');
    if (!res.ok) return `Could not parse ${what} expression '${v}': ${res.error}`;
    cmd.dir[key] = res.expr;
    cmd.dir[`${key}Set`] = true;
    return undefined;
  };
}

function setFormSize(cmd: Cmd, arg: string): string | undefined {
  if (!/^[ \t]*\+?\d+$/.test(arg) || Number(arg) > Number.MAX_SAFE_INTEGER) return 'AuthCookieFormSize must be a size in bytes, or zero.';
  cmd.dir.formSize = Number(arg);
  cmd.dir.formSizeSet = true;
  return undefined;
}

// ---- the session and the notes ---------------------------------------------------------------

function sessionApi(r: Request): SessionApi | undefined {
  return r.rt.ctx.provider('session_api', 'session');
}

function topRequest(r: Request): Request {
  let m = r;
  while (m.main !== null) m = m.main;
  while (m.prev !== null) m = m.prev;
  return m;
}

interface Sent { user?: string | undefined; pw?: string | undefined; method?: string | undefined; mimetype?: string | undefined }

function setNotesAuth(r: Request, sent: Sent): void {
  const m = topRequest(r);
  const name = authName(m) ?? '';
  if (sent.user !== undefined) m.notes.set(`${name}-user`, sent.user);
  if (sent.pw !== undefined) m.notes.set(`${name}-pw`, sent.pw);
  if (sent.method !== undefined) m.notes.set(`${name}-method`, sent.method);
  if (sent.mimetype !== undefined) m.notes.set(`${name}-mimetype`, sent.mimetype);
}

function getNotesAuth(r: Request): Sent {
  const m = topRequest(r);
  const name = authName(m) ?? '';
  const s: Sent = {
    user: m.notes.get(`${name}-user`), pw: m.notes.get(`${name}-pw`),
    method: m.notes.get(`${name}-method`), mimetype: m.notes.get(`${name}-mimetype`),
  };
  if (s.user !== undefined && s.user !== '') r.user = s.user;
  r.log('auth_form', APLOG_TRACE1, `from notes: user: ${s.user ?? '<null>'}, pw: ${s.pw ?? '<null>'}, method: ${s.method ?? '<null>'}, mimetype: ${s.mimetype ?? '<null>'}`);
  return s;
}

const md5 = (s: string): string => createHash('md5').update(Buffer.from(s, 'latin1')).digest('hex');

async function setSessionAuth(r: Request, user: string | undefined, pw: string | undefined, site: string | undefined): Promise<void> {
  const api = sessionApi(r);
  if (api === undefined) return;
  const name = authName(r) ?? '';
  const hash = site !== undefined && user !== undefined ? md5(`${user}:${site}`) : undefined;
  const { z } = await api.load(r);
  await api.set(r, z, `${name}-user`, user);
  await api.set(r, z, `${name}-pw`, pw);
  await api.set(r, z, `${name}-site`, hash);
}

async function getSessionAuth(r: Request): Promise<{ user?: string | undefined; pw?: string | undefined; hash?: string | undefined }> {
  const api = sessionApi(r);
  if (api === undefined) return {};
  const name = authName(r) ?? '';
  const { z } = await api.load(r);
  const user = (await api.get(r, z, `${name}-user`)).value;
  const pw = (await api.get(r, z, `${name}-pw`)).value;
  const hash = (await api.get(r, z, `${name}-site`)).value;
  if (user !== undefined && user !== '') r.user = user;
  r.log('auth_form', APLOG_TRACE1, `from session: user: ${user ?? '<null>'}, pw: ${pw ?? '<null>'}, site: ${hash ?? '<null>'}`);
  return { user, pw, hash };
}

// ---- the form --------------------------------------------------------------------------------

/** ap_parse_form_data: the pairs of an application/x-www-form-urlencoded body (at most
 *  `size` bytes read), '+' as space and %XX decoded in names and values. */
export function parseFormPairs(body: string): [string, string][] {
  const out: [string, string][] = [];
  const dec = (s: string): string => {
    let o = '';
    for (let i = 0; i < s.length; i++) {
      const c = s[i]!;
      if (c === '+') o += ' ';
      else if (c === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) { o += String.fromCharCode(parseInt(s.slice(i + 1, i + 3), 16)); i += 2; }
      else o += c;
    }
    return o;
  };
  for (const part of body.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    out.push([dec(part.slice(0, eq)), dec(part.slice(eq + 1))]);
  }
  return out;
}

interface FormResult { rv: number; sent: Sent & { loc?: string | undefined; body?: Buffer | undefined } }

async function getFormAuth(r: Request, conf: FormDir, want: { method: boolean; body: boolean }): Promise<FormResult> {
  const notes = getNotesAuth(r);
  const sent: FormResult['sent'] = { user: notes.user, pw: notes.pw, method: want.method ? notes.method : undefined, mimetype: want.method ? notes.mimetype : undefined };
  if (sent.user && sent.pw) return { rv: OK, sent };
  const ct = r.headersIn.get('Content-Type');
  let pairs: [string, string][] = [];
  let raw: Buffer;
  try {
    raw = await r.readAll();
  } catch {
    return { rv: 400, sent };
  }
  if (ct !== undefined && ct.slice(0, 33).toLowerCase() === 'application/x-www-form-urlencoded') {
    pairs = parseFormPairs(raw.subarray(0, conf.formSize).toString('latin1'));
  }
  // httpd pops the pairs from the end: the first occurrence of a field is the one kept.
  for (let i = pairs.length - 1; i >= 0; i--) {
    const [name, value] = pairs[i]!;
    if (name === conf.username) sent.user = value;
    else if (name === conf.password) sent.pw = value;
    else if (name === conf.location) sent.loc = value;
    else if (want.method && name === conf.method) sent.method = value;
    else if (want.method && name === conf.mimetype) sent.mimetype = value;
    else if (want.body && name === conf.body) sent.body = Buffer.from(value, 'latin1');
  }
  r.log('auth_form', APLOG_TRACE1, `from form: user: ${sent.user ?? '<null>'}, pw: ${sent.pw ?? '<null>'}, method: ${sent.method ?? '<null>'}, mimetype: ${sent.mimetype ?? '<null>'}, location: ${sent.loc ?? '<null>'}`);
  if (sent.user) r.user = sent.user;
  if (!sent.user) {
    r.log('auth_form', APLOG_DEBUG, `AH02982: form parsed, but username field '${conf.username}' was missing or empty, unauthorized`);
    return { rv: 401, sent };
  }
  if (!sent.pw) {
    r.log('auth_form', APLOG_DEBUG, `AH02983: form parsed, but password field '${conf.password}' was missing or empty, unauthorized`);
    return { rv: 401, sent };
  }
  setNotesAuth(r, sent);
  return { rv: OK, sent };
}

function noteCookieAuthFailure(r: Request): void {
  const conf = self.dir(r);
  if (conf.location.includes(':')) r.errHeadersOut.set('Location', conf.location);
}

async function checkAuthn(r: Request, user: string | undefined, pw: string | undefined): Promise<number> {
  const conf = self.dir(r);
  const chain = conf.providers;
  let result: AuthnStatus = AUTH_USER_NOT_FOUND;
  let i = 0;
  for (;;) {
    let provider: AuthnProvider | undefined;
    if (chain === undefined) {
      provider = lookupAuthnProvider(r.rt.ctx, AUTHN_DEFAULT_PROVIDER);
      if (provider?.checkPassword === undefined) {
        r.log('auth_form', APLOG_ERR, 'AH01806: no authn provider configured');
        result = AUTH_GENERAL_ERROR;
        break;
      }
      r.notes.set(AUTHN_PROVIDER_NAME_NOTE, AUTHN_DEFAULT_PROVIDER);
    } else {
      provider = chain[i]!.provider;
      r.notes.set(AUTHN_PROVIDER_NAME_NOTE, chain[i]!.name);
    }
    if (user === undefined || pw === undefined) { result = AUTH_USER_NOT_FOUND; break; }
    result = await provider.checkPassword!(r, user, Buffer.from(pw, 'latin1'));
    r.notes.delete(AUTHN_PROVIDER_NAME_NOTE);
    if (result !== AUTH_USER_NOT_FOUND || chain === undefined) break;
    if (++i >= chain.length) break;
  }
  if (result === AUTH_GRANTED) return OK;
  if (!conf.authoritative && result !== AUTH_DENIED) return DECLINED;
  let code: number;
  if (result === AUTH_DENIED) {
    r.log('auth_form', APLOG_ERR, `AH01807: user '${user}': authentication failure for "${r.uri}": password Mismatch`);
    code = 401;
  } else if (result === AUTH_USER_NOT_FOUND) {
    r.log('auth_form', APLOG_ERR, `AH01808: user '${user}' not found: ${r.uri}`);
    code = 401;
  } else code = 500;
  if (code === 401) noteCookieAuthFailure(r);
  return code;
}

function fakeBasic(r: Request, conf: FormDir, user: string, pw: string): void {
  if (conf.fakeBasicAuth) r.headersIn.set('Authorization', 'Basic ' + Buffer.from(`${user}:${pw}`, 'latin1').toString('base64'));
}

/** A redirect to an expression's value (302), or 500 when it cannot be evaluated. */
function redirectTo(r: Request, e: StringExpr, code: string, what: string, status = 302): number {
  const v = evalString(e, r);
  if (isFailure(v)) {
    r.log('auth_form', APLOG_ERR, `${code}: Can't evaluate ${what} expression: ${v.error}`);
    return 500;
  }
  r.headersOut.set('Location', v);
  return status;
}

// ---- the hooks and handlers --------------------------------------------------------------------

async function authenticateForm(r: Request): Promise<number> {
  const conf = self.dir(r);
  const current = authType(r);
  if (current === undefined || current.toLowerCase() !== 'form') return DECLINED;
  if (r.proxyreq === 1) {
    r.log('auth_form', APLOG_ERR, `AH01809: form auth cannot be used for proxy requests due to XSS risk, access denied: ${r.uri}`);
    return 500;
  }
  if (authName(r) === undefined) {
    r.log('auth_form', APLOG_ERR, `AH01810: need AuthName: ${r.uri}`);
    return 500;
  }
  r.apAuthType = current;
  let rv = 401;
  const notes = getNotesAuth(r);
  let user = notes.user;
  let pw = notes.pw;
  let hash: string | undefined;
  if (!user || !pw) ({ user, pw, hash } = await getSessionAuth(r));
  if (user !== undefined && hash !== undefined && pw !== undefined && conf.site !== undefined) {
    rv = md5(`${user}:${conf.site}`) === hash ? OK : AUTH_USER_NOT_FOUND;
    if (rv === OK) { fakeBasic(r, conf, user, pw); return OK; }
  }
  if (user !== undefined && pw !== undefined) {
    rv = await checkAuthn(r, user, pw);
    if (rv === OK) { fakeBasic(r, conf, user, pw); return OK; }
  }
  let sentLoc: string | undefined;
  if (rv === 401 && r.method === 'POST' && r.isInitialReq()) {
    const form = await getFormAuth(r, conf, { method: true, body: true });
    rv = form.rv;
    sentLoc = form.sent.loc;
    if (form.sent.body !== undefined && form.sent.mimetype !== undefined) {
      r.headersIn.set('Content-Type', form.sent.mimetype);
      r.keptBody = [form.sent.body];
    } else {
      r.keptBody = [];
    }
    if (form.sent.method !== undefined && form.sent.method !== r.method) r.handler = FORM_REDIRECT_HANDLER;
    if (rv === OK) {
      rv = await checkAuthn(r, form.sent.user, form.sent.pw);
      if (rv === OK) {
        fakeBasic(r, conf, form.sent.user!, form.sent.pw!);
        await setSessionAuth(r, form.sent.user, form.sent.pw, conf.site);
        if (sentLoc !== undefined) { r.headersOut.set('Location', sentLoc); return 302; }
        if (conf.loginSuccess !== undefined) return redirectTo(r, conf.loginSuccess, 'AH02339', 'login success');
      }
    }
  }
  if (rv === 401 && conf.loginRequired !== undefined) return redirectTo(r, conf.loginRequired, 'AH02340', 'login required');
  if (sentLoc !== undefined) { r.headersOut.set('Location', sentLoc); rv = 302; }
  if (rv === 401 && !conf.disableNoStore) {
    r.headersOut.add('Cache-Control', 'no-store');
    r.errHeadersOut.add('Cache-Control', 'no-store');
  }
  return rv;
}

async function loginHandler(r: Request): Promise<number> {
  if (r.handler !== FORM_LOGIN_HANDLER) return DECLINED;
  if (r.method !== 'POST') {
    r.log('auth_form', APLOG_ERR, `AH01811: the ${FORM_LOGIN_HANDLER} only supports the POST method for ${r.uri}`);
    r.headersOut.set('Allow', noMethodsAllow(r));
    return 405;
  }
  const conf = self.dir(r);
  const form = await getFormAuth(r, conf, { method: false, body: false });
  let rv = form.rv;
  if (rv === OK) {
    rv = await checkAuthn(r, form.sent.user, form.sent.pw);
    if (rv === OK) {
      await setSessionAuth(r, form.sent.user, form.sent.pw, conf.site);
      if (form.sent.loc !== undefined) { r.headersOut.set('Location', form.sent.loc); return 302; }
      if (conf.loginSuccess !== undefined) return redirectTo(r, conf.loginSuccess, 'AH02341', 'login success');
      return 200;
    }
  }
  if (rv === 401 && conf.loginRequired !== undefined) return redirectTo(r, conf.loginRequired, 'AH02342', 'login required');
  return rv;
}

async function logoutHandler(r: Request): Promise<number> {
  if (r.handler !== FORM_LOGOUT_HANDLER) return DECLINED;
  const conf = self.dir(r);
  await setSessionAuth(r, undefined, undefined, undefined);
  r.headersOut.add('Cache-Control', 'no-store');
  r.errHeadersOut.add('Cache-Control', 'no-store');
  if (conf.logout !== undefined) {
    const v = evalString(conf.logout, r);
    if (isFailure(v)) {
      r.log('auth_form', APLOG_ERR, `AH02343: Can't evaluate logout expression: ${v.error}`);
      return 500;
    }
    r.headersOut.add('Location', v);
    return 307;
  }
  return 200;
}

/** form-redirect-handler: the login POST replayed with the form's method and kept body. */
async function redirectHandler(r: Request): Promise<number> {
  if (r.handler !== FORM_REDIRECT_HANDLER) return DECLINED;
  const s = getNotesAuth(r);
  if (r.keptBody !== null && s.method !== undefined && s.mimetype !== undefined) {
    r.log('auth_form', APLOG_DEBUG, `AH01812: internal redirect to method '${s.method}' and body mimetype '${s.mimetype}' for the uri: ${r.uri}`);
    const rr = await r.rt.lookupUri(r, r.uri, s.method);
    r.status = await r.rt.runSubRequest(rr, null);
  } else {
    r.log('auth_form', APLOG_ERR, `AH01813: internal redirect requested but one or all of method, mimetype or body are NULL: ${r.uri}`);
    return 500;
  }
  return r.status === 200 || r.status === OK ? OK : r.status;
}

const formHandler: AuthTypeHandler = { noteAuthFailure: noteCookieAuthFailure };

function postConfig(ctx: ConfigContext): string | undefined {
  if (ctx.provider('session_api', 'session') === undefined) {
    ctx.logNoServer('auth_form', APLOG_CRIT, 'AH02617: You must load mod_session to enable the mod_auth_form functions');
    return 'AH00016: Configuration Failed';
  }
  if (!ctx.isLoaded('request_module')) {
    ctx.logNoServer('auth_form', APLOG_CRIT, 'AH02618: You must load mod_request to enable the mod_auth_form functions');
    return 'AH00016: Configuration Failed';
  }
  return undefined;
}

const self = defineModule<unknown, FormDir>({
  name: 'auth_form_module',
  source: 'mod_auth_form.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<unknown, FormDir, 'ITERATE'>({ name: 'AuthFormProvider', args: 'ITERATE', where: OR_AUTHCFG, help: 'specify the auth providers for a directory or location', handler: addProvider }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormUsername', args: 'TAKE1', where: OR_AUTHCFG, help: 'The field of the login form carrying the username', handler: field('username') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormPassword', args: 'TAKE1', where: OR_AUTHCFG, help: 'The field of the login form carrying the password', handler: field('password') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormLocation', args: 'TAKE1', where: OR_AUTHCFG, help: 'The field of the login form carrying the URL to redirect on successful login.', handler: field('location') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormMethod', args: 'TAKE1', where: OR_AUTHCFG, help: 'The field of the login form carrying the original request method.', handler: field('method') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormMimetype', args: 'TAKE1', where: OR_AUTHCFG, help: 'The field of the login form carrying the original request mimetype.', handler: field('mimetype') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormBody', args: 'TAKE1', where: OR_AUTHCFG, help: 'The field of the login form carrying the urlbase64 encoded original request body.', handler: field('body') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormSize', args: 'TAKE1', where: ACCESS_CONF, help: 'Maximum size of body parsed by the form parser', handler: setFormSize }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormLoginRequiredLocation', args: 'TAKE1', where: OR_AUTHCFG, help: 'If set, redirect the browser to this URL if a login form is required.', handler: exprDirective('loginRequired', 'login required') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormLoginSuccessLocation', args: 'TAKE1', where: OR_AUTHCFG, help: 'If set, redirect the browser to this URL on successful login.', handler: exprDirective('loginSuccess', 'login success') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormLogoutLocation', args: 'TAKE1', where: OR_AUTHCFG, help: 'If set, redirect the browser to this URL on logout.', handler: exprDirective('logout', 'logout required') }),
    directive<unknown, FormDir, 'TAKE1'>({ name: 'AuthFormSitePassphrase', args: 'TAKE1', where: OR_AUTHCFG, help: 'If set, use this passphrase to determine whether the user should be authenticated.', handler: (cmd: Cmd, v: string) => { cmd.dir.site = v; cmd.dir.siteSet = true; } }),
    directive<unknown, FormDir, 'FLAG'>({ name: 'AuthFormAuthoritative', args: 'FLAG', where: OR_AUTHCFG, help: 'Set to \'Off\' to allow access control to be passed along to lower modules if the UserID is not known to this module', handler: (cmd: Cmd, on: boolean) => { cmd.dir.authoritative = on; cmd.dir.authoritativeSet = true; } }),
    directive<unknown, FormDir, 'FLAG'>({ name: 'AuthFormFakeBasicAuth', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'On' to pass through authentication to the rest of the server as a basic authentication header.", handler: (cmd: Cmd, on: boolean) => { cmd.dir.fakeBasicAuth = on; cmd.dir.fakeBasicAuthSet = true; } }),
    directive<unknown, FormDir, 'FLAG'>({ name: 'AuthFormDisableNoStore', args: 'FLAG', where: OR_AUTHCFG, help: "Set to 'on' to stop the sending of a Cache-Control no-store header with the login screen.", handler: (cmd: Cmd, on: boolean) => { cmd.dir.disableNoStore = on; cmd.dir.disableNoStoreSet = true; } }),
  ],
  hooks: {
    checkUserId: { fn: authenticateForm, order: HOOK_MIDDLE },
    handler: [
      { fn: loginHandler, order: HOOK_MIDDLE },
      { fn: logoutHandler, order: HOOK_MIDDLE },
      { fn: redirectHandler, order: HOOK_MIDDLE },
    ],
  },
  configHooks: { postConfig },
  providers: [{ group: 'auth_type', name: 'form', version: '0', provider: formHandler } as ProviderDecl],
});

export default self;
