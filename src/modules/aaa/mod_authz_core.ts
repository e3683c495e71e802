// mod_authz_core (modules/aaa/mod_authz_core.c): the authorization core of httpd 2.4.
//
//  - `Require [not] provider args...` lines, and the containers <RequireAll>, <RequireAny>,
//    <RequireNone> nested to any depth, build a tree of authz sections per directory config.
//    Side-by-side Require lines form an implicit <RequireAny> (the "default section").
//    As in httpd, the directory config's `section` field is both the result and, while a
//    container's children are walked, the container being built (a stack kept on the C stack
//    of add_authz_section, here on the JS stack of addAuthzSection).
//  - Provider arguments are parsed once, when the configuration is read.
//  - AuthMerging Off|And|Or decides how a section's tree combines with its predecessor's
//    (merge_authz_core_dir_config), AuthzSendForbiddenOnFailure turns the 401 sent to an
//    authenticated user who fails authorization into a 403.
//  - <AuthzProviderAlias provider alias args> registers `alias` as an authz provider that runs
//    `provider args` with the alias's own per-directory configuration merged in.
//  - At check_config time (postConfig here) nested negated containers are flattened by
//    De Morgan, and a container holding only negative directives is refused (AH01624).
//  - Evaluation: accessCheckerEx (authorize_userless) grants without authentication when the
//    tree grants, declines (so authn runs) when the result depends on a user, and refuses with
//    403 (AH01630) otherwise; authChecker (authorize_user) decides after authentication.
//  - Providers of this module: `all`, `env`, `method`, `expr` (an ap_expr condition).
//
// Other modules register authz providers with
//   providers: [{ group: 'authz', name: 'user', version: '0', provider: { parse?, check } }]

import type { AuthApi } from '../../server/auth-api.js';
import {
  ACCESS_CONF, DECLINED, HOOK_LAST, MODULE_API_VERSION, OK, OR_AUTHCFG, RSRC_CONF,
  defineModule, directive, type MaybePromise, type ProviderDecl,
} from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import { mergeVectors } from '../../server/config/build.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { globals } from '../../server/core/globals.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { evalBool, isFailure, parseExprCmd, referencesVariable, type BoolExpr, type ExprFailure } from '../../expr/index.js';

// ---- the provider interface (mod_auth.h's authz_provider) ---------------------------------

/** authz_status values, numbered as mod_auth.h numbers them. */
export const AUTHZ_DENIED = 0;
export const AUTHZ_GRANTED = 1;
export const AUTHZ_NEUTRAL = 2;
export const AUTHZ_GENERAL_ERROR = 3;
export const AUTHZ_DENIED_NO_USER = 4;
export type AuthzStatus =
  | typeof AUTHZ_DENIED | typeof AUTHZ_GRANTED | typeof AUTHZ_NEUTRAL
  | typeof AUTHZ_GENERAL_ERROR | typeof AUTHZ_DENIED_NO_USER;

/** The result of a provider's parse: the parsed form, or Apache's error text. */
export type AuthzParseResult<P> = { readonly ok: true; readonly parsed: P } | { readonly ok: false; readonly error: string };

/** An authz provider (httpd's authz_provider): an optional configuration-time parser of the
 *  Require line's arguments and the request-time check. */
export interface AuthzProvider<P = unknown> {
  /** Called once per Require line when the configuration is read (parse_require_line). */
  parse?(cmd: CmdParms, requireArgs: string): AuthzParseResult<P>;
  /** check_authorization: `parsed` is what parse returned (undefined without a parser). */
  check(r: Request, requireArgs: string, parsed: P): MaybePromise<AuthzStatus>;
}

declare module '../../server/module.js' {
  interface ProviderGroups {
    authz: AuthzProvider;
  }
}

declare module '../../server/request/request.js' {
  interface TraceEvents {
    /** A node of the Require tree evaluated: `raw` before a `not` or <RequireNone> negation,
     *  `result` after it (what AH01626 logs); `limitedOut` when its methods do not apply. */
    authz: { readonly section: AuthzSection; readonly raw: AuthzStatus; readonly result: AuthzStatus; readonly limitedOut: boolean };
    /** One run of authorize_user_core: before authentication (accessCheckerEx) or after
     *  (authChecker), the tree's result and the hook's answer. `compatPrecedence` when the
     *  Order/Allow/Deny rules decided over host-style Require lines (specification 5.4). */
    authz_decision: {
      readonly afterAuthn: boolean; readonly tree: AuthzSection | undefined; readonly result: AuthzStatus | undefined;
      readonly status: number; readonly compatPrecedence: boolean; readonly forbiddenOnFail: boolean | undefined;
    };
  }
}

export const AUTHZ_PROVIDER_GROUP = 'authz';
export const AUTHZ_PROVIDER_VERSION = '0';
/** r.notes key holding the provider name while a provider runs (AUTHZ_PROVIDER_NAME_NOTE). */
export const AUTHZ_PROVIDER_NAME_NOTE = 'authz_provider_name';

export function authzOk<P>(parsed: P): AuthzParseResult<P> {
  return { ok: true, parsed };
}
export function authzError(error: string): AuthzParseResult<never> {
  return { ok: false, error };
}

// ---- hooks into mod_authn_core / the auth type (optional functions in httpd) -----------------

/** What mod_authn_core supplies: ap_auth_type and ap_note_auth_failure. */
export interface AuthnCoreFunctions {
  authType(r: Request): string | undefined;
  noteAuthFailure(r: Request): void;
}
const noAuthn: AuthnCoreFunctions = { authType: () => undefined, noteAuthFailure: () => undefined };
let authn: AuthnCoreFunctions = noAuthn;
/** mod_authn_core registers ap_auth_type / ap_note_auth_failure here (null to unregister). */
export function registerAuthnCoreFunctions(fns: AuthnCoreFunctions | null): void {
  authn = fns ?? noAuthn;
}

// ---- method masks (cmd->limited, section->limited) ----------------------------------------

/** A set of methods: `methods` itself, or every method but those when `except`. Method
 *  names are as httpd numbers them: HEAD is GET (M_GET). */
export interface MethodMask {
  readonly except: boolean;
  readonly methods: ReadonlySet<string>;
}
const ALL_METHODS: MethodMask = { except: true, methods: new Set() };
const NO_METHODS: MethodMask = { except: false, methods: new Set() };

function methodKey(m: string): string {
  return m === 'HEAD' ? 'GET' : m;
}

export function maskFromScope(limited: { readonly methods: ReadonlySet<string>; readonly except: boolean } | undefined): MethodMask {
  if (!limited) return ALL_METHODS;
  const methods = new Set<string>();
  for (const m of limited.methods) methods.add(methodKey(m));
  return { except: limited.except, methods };
}

function maskUnion(a: MethodMask, b: MethodMask): MethodMask {
  if (!a.except && !b.except) return { except: false, methods: new Set([...a.methods, ...b.methods]) };
  if (a.except && b.except) return { except: true, methods: new Set([...a.methods].filter((m) => b.methods.has(m))) };
  const exc = a.except ? a : b;
  const inc = a.except ? b : a;
  return { except: true, methods: new Set([...exc.methods].filter((m) => !inc.methods.has(m))) };
}

export function maskHas(mask: MethodMask, method: string): boolean {
  return mask.methods.has(methodKey(method)) !== mask.except;
}

// ---- the section tree -------------------------------------------------------------------

type LogicOp = 'and' | 'or';
type MergeOp = LogicOp | 'off' | undefined;

/** authz_section_conf: a Require line (provider set) or a container (children). Mutable while
 *  the configuration is read and checked; never changed once requests are served. */
export interface AuthzSection {
  providerName: string | undefined;
  providerArgs: string;
  parsed: unknown;
  provider: AuthzProvider | undefined;
  limited: MethodMask;
  op: LogicOp;
  negate: boolean;
  /** Produced by AuthMerging, not a real container (only for logging). */
  isMerged: boolean;
  children: AuthzSection[];
  /** "file:line" of the Require line, container or AuthMerging that made it (for `plume
   *  explain`); undefined for the implicit <RequireAny> of side-by-side Require lines. */
  where: string | undefined;
}

export interface AuthzCoreDirConfig {
  /** The tree; while a container's children are read, the container being built. */
  section: AuthzSection | undefined;
  /** AuthMerging (undefined = not set). */
  readonly op: MergeOp;
  /** "file:line" of that AuthMerging line. */
  readonly opWhere: string | undefined;
  /** AuthzSendForbiddenOnFailure (undefined = not set). */
  readonly forbiddenOnFail: boolean | undefined;
}

interface MutableDirConfig {
  section: AuthzSection | undefined;
  op: MergeOp;
  opWhere: string | undefined;
  forbiddenOnFail: boolean | undefined;
}

export interface AuthzCoreServerConfig {
  readonly aliases: Map<string, ProviderAlias>;
}

interface ProviderAlias {
  readonly providerName: string;
  readonly alias: string;
  readonly providerArgs: string;
  readonly parsed: unknown;
  readonly vector: unknown[];
  readonly provider: AuthzProvider;
}

/** Every directory config created in this generation (authz_core_first_dir_conf). */
let allDirConfigs: AuthzCoreDirConfig[] = [];
/** Whether a configuration is being read (configs created for .htaccess are not recorded). */
let collecting = false;

function createDirConfig(): AuthzCoreDirConfig {
  const c: MutableDirConfig = { section: undefined, op: undefined, opWhere: undefined, forbiddenOnFail: undefined };
  if (collecting) allDirConfigs.push(c);
  return c;
}

function mergeDirConfig(base: Readonly<AuthzCoreDirConfig>, add: Readonly<AuthzCoreDirConfig>): AuthzCoreDirConfig {
  let section: AuthzSection | undefined;
  let op: MergeOp;
  let opWhere: string | undefined;
  if (add.op === undefined && !add.section && base.section) {
    // Only AuthzSendForbiddenOnFailure set in add: not a new auth config for AuthMerging.
    section = base.section;
    op = base.op;
    opWhere = base.opWhere;
  } else if (add.op === 'off' || add.op === undefined || !(base.section || add.section)) {
    section = add.section;
    op = add.op;
    opWhere = add.opWhere;
  } else {
    if (base.section && add.section) {
      section = {
        providerName: undefined, providerArgs: '', parsed: undefined, provider: undefined,
        limited: maskUnion(base.section.limited, add.section.limited),
        op: add.op, negate: false, isMerged: true,
        children: [base.section, add.section], where: add.opWhere,
      };
    } else {
      section = (base.section ?? add.section)!;
    }
    op = add.op;
    opWhere = add.opWhere;
  }
  return {
    section, op, opWhere,
    forbiddenOnFail: add.forbiddenOnFail === undefined ? base.forbiddenOnFail : add.forbiddenOnFail,
  };
}

function createServerConfig(): AuthzCoreServerConfig {
  return { aliases: new Map() };
}

function mergeServerConfig(base: Readonly<AuthzCoreServerConfig>): AuthzCoreServerConfig {
  return base as AuthzCoreServerConfig;
}

// ---- logging formats --------------------------------------------------------------------

function formatResult(s: AuthzStatus): string {
  return s === AUTHZ_DENIED ? 'denied'
    : s === AUTHZ_GRANTED ? 'granted'
      : s === AUTHZ_DENIED_NO_USER ? 'denied (no authenticated user yet)' : 'neutral';
}

export function formatAuthzCommand(s: AuthzSection): string {
  if (s.provider) return `Require ${s.negate ? 'not ' : ''}${s.providerName ?? ''} ${s.providerArgs}`;
  const kind = s.op === 'and' ? (s.negate ? 'NotAll' : 'All') : (s.negate ? 'None' : 'Any');
  return s.isMerged ? `AuthMerging ${kind}` : `<Require${kind}>`;
}

function defaultSection(): AuthzSection {
  return {
    providerName: undefined, providerArgs: '', parsed: undefined, provider: undefined,
    limited: NO_METHODS, op: 'or', negate: false, isMerged: false, children: [], where: undefined,
  };
}

// ---- provider lookup (case-sensitive, as ap_lookup_provider) ------------------------------

const ALIAS_SCRATCH = 'authz_core:aliases';

function aliasProviders(ctx: ConfigContext): Map<string, AuthzProvider> {
  return ctx.getScratch(ALIAS_SCRATCH, () => new Map<string, AuthzProvider>());
}

function lookupProvider(ctx: ConfigContext, name: string): AuthzProvider | undefined {
  const a = aliasProviders(ctx).get(name);
  if (a) return a;
  for (const m of ctx.loaded) {
    for (const p of m.decl.providers ?? []) {
      if (p.group === AUTHZ_PROVIDER_GROUP && p.name === name) return p.provider as AuthzProvider;
    }
  }
  // Providers registered while the configuration is read (ap_register_auth_provider from a
  // directive: mod_lua's LuaAuthzProvider) are in the configuration's provider registry.
  return ctx.registeredProvider(AUTHZ_PROVIDER_GROUP, name);
}

// ---- directives ---------------------------------------------------------------------------

type Cmd = CmdParms<AuthzCoreServerConfig, AuthzCoreDirConfig>;

function mutable(c: AuthzCoreDirConfig): MutableDirConfig {
  return c as MutableDirConfig;
}

function addAuthzProvider(cmd: Cmd, raw: string): string | undefined {
  const conf = mutable(cmd.dir);
  const c = new ArgCursor(raw);
  let name = c.word();
  let negate = false;
  if (name.toLowerCase() === 'not') {
    name = c.word();
    negate = true;
  }
  const args = c.rest();
  const provider = lookupProvider(cmd.ctx, name);
  if (!provider) return `Unknown Authz provider: ${name}`;
  const section: AuthzSection = {
    providerName: name, providerArgs: args, parsed: undefined, provider,
    limited: maskFromScope(cmd.scope.limited), op: 'and', negate, isMerged: false, children: [],
    where: `${cmd.file}:${cmd.line}`,
  };
  if (provider.parse) {
    const res = provider.parse(cmd as CmdParms, args);
    if (!res.ok) return res.error;
    section.parsed = res.parsed;
  }
  if (!conf.section) conf.section = defaultSection();
  if (negate && conf.section.op === 'or') {
    return `negative ${cmd.name} directive has no effect in ${formatAuthzCommand(conf.section)} directive`;
  }
  conf.section.limited = maskUnion(conf.section.limited, section.limited);
  conf.section.children.push(section);
  return undefined;
}

function addAuthzSection(cmd: Cmd, raw: string): string | undefined {
  const conf = mutable(cmd.dir);
  if (raw.trim() !== '') return `${cmd.name}> directive doesn't take additional arguments`;
  const oldSection = conf.section;
  const lname = cmd.name.toLowerCase();
  const section: AuthzSection = {
    providerName: undefined, providerArgs: '', parsed: undefined, provider: undefined,
    limited: NO_METHODS,
    op: lname === '<requireall' || lname === '<requirenotall' ? 'and' : 'or',
    negate: lname === '<requirenone' || lname === '<requirenotall',
    isMerged: false, children: [], where: `${cmd.file}:${cmd.line}`,
  };
  conf.section = section;
  try {
    cmd.walk(cmd.node.children ?? [], {
      ...cmd.scope, override: OR_AUTHCFG, parents: [...cmd.scope.parents, cmd.name],
    });
  } finally {
    conf.section = oldSection;
  }
  if (section.children.length === 0) {
    return `${formatAuthzCommand(section)} directive contains no authorization directives`;
  }
  let parent = oldSection;
  if (!parent) parent = conf.section = defaultSection();
  if (section.negate && parent.op === 'or') {
    return `${formatAuthzCommand(section)} directive has no effect in ${formatAuthzCommand(parent)} directive`;
  }
  parent.limited = maskUnion(parent.limited, section.limited);
  if (!section.negate && section.op === parent.op) parent.children.push(...section.children); // associative
  else parent.children.push(section);
  return undefined;
}

function authzMergeSections(cmd: Cmd, arg: string): string | undefined {
  const conf = mutable(cmd.dir);
  const a = arg.toLowerCase();
  if (a === 'off') conf.op = 'off';
  else if (a === 'and') conf.op = 'and';
  else if (a === 'or') conf.op = 'or';
  else return `${cmd.name} must be one of: Off | And | Or`;
  conf.opWhere = `${cmd.file}:${cmd.line}`;
  return undefined;
}

function setForbiddenOnFail(cmd: Cmd, on: boolean): undefined {
  mutable(cmd.dir).forbiddenOnFail = on;
  return undefined;
}

function authzRequireAliasSection(cmd: Cmd, raw: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  if (raw.trim() === '') return `${cmd.name}> directive requires additional arguments`;
  const c = new ArgCursor(raw);
  const providerName = c.word();
  const alias = c.word();
  const providerArgs = c.word();
  const extra = c.word();
  if (providerName === '' || alias === '') return `${cmd.name}> directive requires additional arguments`;
  if (extra !== '') {
    cmd.ctx.log('authz_core', APLOG_WARNING,
      `AH10142: When several arguments (${providerArgs} ${extra}...) are passed to a ${cmd.name} directive, they must be enclosed in quotation marks.  Otherwise, only the first one is taken into account`);
  }
  const vector: unknown[] = [];
  cmd.walk(cmd.node.children ?? [], {
    ...cmd.scope, vector, path: undefined, override: OR_AUTHCFG | ACCESS_CONF,
    parents: [...cmd.scope.parents, cmd.name],
  });
  const provider = lookupProvider(cmd.ctx, providerName);
  if (!provider) return `Unknown Authz provider: ${providerName}`;
  let parsed: unknown = undefined;
  if (provider.parse) {
    const res = provider.parse(cmd as CmdParms, providerArgs);
    if (!res.ok) return `Can't parse 'Require ${providerName} ${providerArgs}': ${res.error}`;
    parsed = res.parsed;
  }
  const rec: ProviderAlias = { providerName, alias, providerArgs, parsed, vector, provider };
  cmd.srv.aliases.set(alias, rec);
  const ctx = cmd.ctx;
  const aliasProvider: AuthzProvider = {
    check(r: Request): MaybePromise<AuthzStatus> {
      const orig = r.perDirConfig;
      r.perDirConfig = mergeVectors(ctx, orig, rec.vector);
      let res: MaybePromise<AuthzStatus>;
      try {
        res = rec.provider.check(r, rec.providerArgs, rec.parsed);
      } catch (e) {
        r.perDirConfig = orig;
        throw e;
      }
      if (res instanceof Promise) return res.finally(() => { r.perDirConfig = orig; });
      r.perDirConfig = orig;
      return res;
    },
  };
  aliasProviders(ctx).set(alias, aliasProvider);
  // Visible to other modules, as ap_register_auth_provider.
  ctx.registerProvider(AUTHZ_PROVIDER_GROUP, alias, aliasProvider);
  return undefined;
}

// ---- check_config: De Morgan flattening and the all-negative check ------------------------

function checkSection(ctx: ConfigContext, section: AuthzSection, isConf: boolean): boolean {
  const out: AuthzSection[] = [];
  for (const child of section.children) {
    if (child.children.length > 0 && !child.provider) {
      if (!checkSection(ctx, child, false)) return false;
      if (child.negate && child.op !== section.op) {
        // avoid one level of recursion when De Morgan permits
        for (const g of child.children) out.push({ ...g, negate: !g.negate });
        continue;
      }
    }
    out.push(child);
  }
  section.children = out;
  if (!out.some((c) => !c.negate)) {
    const what = isConf ? '<Directory>, <Location>, or similar' : formatAuthzCommand(section);
    ctx.logBare('authz_core', APLOG_ERR, `AH01624: ${what} directive contains only negative authorization directives`);
    return false;
  }
  return true;
}

function preConfig(): void {
  allDirConfigs = [];
  collecting = true;
}

function checkConfig(ctx: ConfigContext): string | undefined {
  const confs = allDirConfigs;
  allDirConfigs = [];
  collecting = false;
  const seen = new Set<AuthzSection>();
  for (const conf of confs) {
    const s = conf.section;
    if (!s || seen.has(s)) continue;
    seen.add(s);
    if (!checkSection(ctx, s, true)) return 'AH00014: Configuration check failed';
  }
  return undefined;
}

// ---- evaluation (apply_authz_sections) ----------------------------------------------------

/** Where httpd 2.4.71 logs its debug lines (APLOG_MARK), shown by the default log format. */
const SRC_01625 = 'mod_authz_core.c(733)';
const SRC_01626 = 'mod_authz_core.c(815)';
const SRC_01628 = 'mod_authz_core.c(843)';

function combine(op: LogicOp, acc: AuthzStatus, child: AuthzStatus): { acc: AuthzStatus; stop: boolean } {
  if (child === AUTHZ_NEUTRAL) return { acc, stop: false };
  if (op === 'and') {
    if (child === AUTHZ_DENIED) return { acc: child, stop: true };
    if ((child === AUTHZ_DENIED_NO_USER && acc !== AUTHZ_DENIED) || acc === AUTHZ_NEUTRAL) return { acc: child, stop: false };
    return { acc, stop: false };
  }
  if (child === AUTHZ_GRANTED) return { acc: child, stop: true };
  if ((child === AUTHZ_DENIED_NO_USER && acc === AUTHZ_DENIED) || acc === AUTHZ_NEUTRAL) return { acc: child, stop: false };
  return { acc, stop: false };
}

function finish(r: Request, section: AuthzSection, result: AuthzStatus): AuthzStatus {
  const raw = result;
  if (section.negate) {
    if (result === AUTHZ_GRANTED) result = AUTHZ_DENIED;
    else if (result === AUTHZ_DENIED || result === AUTHZ_DENIED_NO_USER) result = AUTHZ_NEUTRAL;
  }
  if (r.wantsLog('authz_core', APLOG_DEBUG)) {
    r.log('authz_core', APLOG_DEBUG, `AH01626: authorization result of ${formatAuthzCommand(section)}: ${formatResult(result)}`, undefined, SRC_01626);
  }
  r.trace?.record('authz', { section, raw, result, limitedOut: false });
  return result;
}

function runChildren(r: Request, section: AuthzSection, from: number, acc: AuthzStatus): MaybePromise<AuthzStatus> {
  const kids = section.children;
  for (let i = from; i < kids.length; i++) {
    const res = applyAuthzSections(r, kids[i]!, section.op);
    if (res instanceof Promise) {
      return res.then((cr) => {
        if (cr === AUTHZ_GENERAL_ERROR) return AUTHZ_GENERAL_ERROR;
        const c = combine(section.op, acc, cr);
        if (c.stop) return finish(r, section, c.acc);
        return runChildren(r, section, i + 1, c.acc);
      });
    }
    if (res === AUTHZ_GENERAL_ERROR) return AUTHZ_GENERAL_ERROR;
    const c = combine(section.op, acc, res);
    acc = c.acc;
    if (c.stop) break;
  }
  return finish(r, section, acc);
}

/** Evaluates a section tree for a request (apply_authz_sections). */
export function applyAuthzSections(r: Request, section: AuthzSection, parentOp: LogicOp): MaybePromise<AuthzStatus> {
  if (!maskHas(section.limited, r.method)) {
    const res = parentOp === 'and' ? AUTHZ_GRANTED : AUTHZ_NEUTRAL;
    if (r.wantsLog('authz_core', APLOG_DEBUG)) {
      r.log('authz_core', APLOG_DEBUG,
        `AH01625: authorization result of ${formatAuthzCommand(section)}: ${formatResult(res)} (directive limited to other methods)`, undefined, SRC_01625);
    }
    r.trace?.record('authz', { section, raw: res, result: res, limitedOut: true });
    return res;
  }
  if (section.provider) {
    r.notes.set(AUTHZ_PROVIDER_NAME_NOTE, section.providerName ?? '');
    let res: MaybePromise<AuthzStatus>;
    try {
      res = section.provider.check(r, section.providerArgs, section.parsed);
    } catch (e) {
      r.notes.delete(AUTHZ_PROVIDER_NAME_NOTE);
      throw e;
    }
    if (res instanceof Promise) {
      return res.then((v) => {
        r.notes.delete(AUTHZ_PROVIDER_NAME_NOTE);
        return finish(r, section, v);
      }, (e: unknown) => {
        r.notes.delete(AUTHZ_PROVIDER_NAME_NOTE);
        throw e;
      });
    }
    r.notes.delete(AUTHZ_PROVIDER_NAME_NOTE);
    return finish(r, section, res);
  }
  return runChildren(r, section, 0, AUTHZ_NEUTRAL);
}

// ---- the hooks (authorize_user_core) ------------------------------------------------------

function decide(r: Request, conf: AuthzCoreDirConfig, res: AuthzStatus, afterAuthn: boolean): number {
  if (res === AUTHZ_GRANTED) return OK;
  if (res === AUTHZ_DENIED_NO_USER) {
    if (afterAuthn) {
      r.log('authz_core', APLOG_ERR, `AH01629: authorization failure (no authenticated user): ${r.uri}`);
      if (r.user !== undefined) authn.noteAuthFailure(r);
      return 401;
    }
    return DECLINED;
  }
  if (res === AUTHZ_DENIED || res === AUTHZ_NEUTRAL) {
    if (!afterAuthn || authn.authType(r) === undefined) {
      r.log('authz_core', APLOG_ERR, `AH01630: client denied by server configuration: ${r.filename !== '' ? r.filename : 'uri ' + r.uri}`);
      return 403;
    }
    r.log('authz_core', APLOG_ERR, `AH01631: user ${r.user ?? '(null)'}: authorization failure for "${r.uri}": `);
    if (conf.forbiddenOnFail === true) return 403;
    if (r.user !== undefined) authn.noteAuthFailure(r);
    return 401;
  }
  return 500;
}

// ---- precedence of mod_access_compat (specification 5.2 rule 5, table 5.4) ------------------

/** The providers that stand for 2.2's host-based access control ("Allow/Deny from"). */
const HOST_STYLE_PROVIDERS = new Set(['all', 'env', 'ip', 'host', 'local', 'forward-dns']);
const hostStyleCache = new WeakMap<AuthzSection, boolean>();

/** Whether every Require line of a tree is host-style (none can depend on a user). */
export function isHostStyle(s: AuthzSection): boolean {
  let v = hostStyleCache.get(s);
  if (v === undefined) {
    v = s.provider ? HOST_STYLE_PROVIDERS.has(s.providerName ?? '') : s.children.every(isHostStyle);
    hostStyleCache.set(s, v);
  }
  return v;
}

let compatDecides: ((r: Request) => boolean) | null = null;

/** mod_access_compat registers here whether its Order/Allow/Deny rules granted a request
 *  under Satisfy All (null to unregister). */
export function registerCompatPrecedence(fn: ((r: Request) => boolean) | null): void {
  compatDecides = fn;
}

function authorizeUserCore(r: Request, afterAuthn: boolean): MaybePromise<number> {
  const conf = self.dir(r);
  if (!conf || !conf.section) {
    const st = authn.authType(r) !== undefined ? 500 : OK;
    r.trace?.record('authz_decision', { afterAuthn, tree: undefined, result: undefined, status: st, compatPrecedence: false, forbiddenOnFail: conf?.forbiddenOnFail });
    if (st === 500) {
      r.log('authz_core', APLOG_ERR, 'AH01627: AuthType configured with no corresponding authorization directives');
      return 500;
    }
    if (r.wantsLog('authz_core', APLOG_DEBUG)) r.log('authz_core', APLOG_DEBUG, 'AH01628: authorization result: granted (no directives)', undefined, SRC_01628);
    return OK;
  }
  const res = applyAuthzSections(r, conf.section, 'and');
  if (res instanceof Promise) return res.then((v) => decideWithCompat(r, conf, v, afterAuthn));
  return decideWithCompat(r, conf, res, afterAuthn);
}

function decideWithCompat(r: Request, conf: AuthzCoreDirConfig, res: AuthzStatus, afterAuthn: boolean): number {
  // DIFFERENCE: httpd 2.4.71 requires both the Order/Allow/Deny rules and the Require lines to
  // pass under Satisfy All; the specification (5.2 rule 5, second row of table 5.4) lets the
  // mod_access_compat rules decide when the merged configuration holds both kinds. Only trees
  // of host-style Require lines give way: a tree that needs a user still runs authentication.
  if ((res === AUTHZ_DENIED || res === AUTHZ_NEUTRAL) && !afterAuthn && compatDecides !== null
    && compatDecides(r) && conf.section !== undefined && isHostStyle(conf.section)) {
    r.trace?.record('authz_decision', { afterAuthn, tree: conf.section, result: res, status: OK, compatPrecedence: true, forbiddenOnFail: conf.forbiddenOnFail });
    return OK;
  }
  const st = decide(r, conf, res, afterAuthn);
  r.trace?.record('authz_decision', { afterAuthn, tree: conf.section, result: res, status: st, compatPrecedence: false, forbiddenOnFail: conf.forbiddenOnFail });
  return st;
}

function authorizeUserless(r: Request): MaybePromise<number> {
  return authorizeUserCore(r, false);
}

function authorizeUser(r: Request): MaybePromise<number> {
  return authorizeUserCore(r, true);
}

/** ap_some_auth_required: whether the request's method is subject to authorization. */
export function authzSomeAuthRequired(r: Request): boolean {
  if (self.index < 0) return false;
  const conf = self.dir(r);
  return !!conf?.section && maskHas(conf.section.limited, r.method);
}

// ---- this module's providers ------------------------------------------------------------

/** apr_table_get on a Map: exact name, then ASCII case-insensitively. */
export function envHas(m: ReadonlyMap<string, string>, name: string): boolean {
  if (m.has(name)) return true;
  const k = name.toLowerCase();
  for (const key of m.keys()) if (key.length === name.length && key.toLowerCase() === k) return true;
  return false;
}

const envProvider: AuthzProvider<readonly string[]> = {
  parse(_cmd, args) {
    const words: string[] = [];
    const c = new ArgCursor(args);
    for (;;) {
      const w = c.word();
      if (w === '') break;
      words.push(w);
    }
    return authzOk(words);
  },
  check(r, _args, names) {
    for (const n of names) if (envHas(r.subprocessEnv, n)) return AUTHZ_GRANTED;
    return AUTHZ_DENIED;
  },
};

const allProvider: AuthzProvider<boolean> = {
  parse(_cmd, args) {
    const a = args.toLowerCase();
    if (a === 'granted') return authzOk(true);
    if (a === 'denied') return authzOk(false);
    return authzError("Argument for 'Require all' must be 'granted' or 'denied'");
  },
  check(_r, _args, granted) {
    return granted ? AUTHZ_GRANTED : AUTHZ_DENIED;
  },
};

/** `Require expr`: the condition parsed once (surrounding double quotes dropped); a false
 *  condition that reads REMOTE_USER means "denied, no user yet", so authentication runs. */
interface RequireExpr {
  readonly expr: BoolExpr;
  readonly wantUser: boolean;
}

const exprProvider: AuthzProvider<RequireExpr> = {
  parse(cmd, args) {
    let text = args;
    if (text.startsWith('"') && text.length > 1 && text.endsWith('"')) text = text.slice(1, -1);
    const res = parseExprCmd(cmd, text, 0, 'authz_core');
    if (!res.ok) return authzError(`Cannot parse expression in require line: ${res.error}`);
    return authzOk({ expr: res.expr, wantUser: referencesVariable(res.expr, 'REMOTE_USER') });
  },
  check(r, _args, info) {
    const v = evalBool(info.expr, r);
    return v instanceof Promise ? v.then((x) => exprVerdict(r, info, x)) : exprVerdict(r, info, v);
  },
};

function exprVerdict(r: Request, info: RequireExpr, v: boolean | ExprFailure): AuthzStatus {
  if (v === true) return AUTHZ_GRANTED;
  if (isFailure(v)) {
    r.log('authz_core', APLOG_ERR, `AH02320: Error evaluating expression in 'Require expr': ${v.error}`);
    return AUTHZ_GENERAL_ERROR;
  }
  return info.wantUser ? AUTHZ_DENIED_NO_USER : AUTHZ_DENIED;
}

/** Methods ap_method_number_of knows (HEAD maps to GET). */
const BUILTIN_METHODS = new Set([
  'GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'PROPFIND', 'PROPPATCH',
  'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'VERSION-CONTROL', 'CHECKOUT', 'UNCHECKOUT', 'CHECKIN',
  'UPDATE', 'LABEL', 'REPORT', 'MKWORKSPACE', 'MKACTIVITY', 'BASELINE-CONTROL', 'MERGE',
]);

const methodProvider: AuthzProvider<MethodMask> = {
  parse(cmd, args) {
    const methods = new Set<string>();
    const c = new ArgCursor(args);
    for (;;) {
      const w = c.word();
      if (w === '') break;
      if (!BUILTIN_METHODS.has(w) && !registeredByLimit(cmd, w)) return authzError(`Invalid Method '${w}'`);
      methods.add(methodKey(w));
    }
    return authzOk({ except: false, methods });
  },
  check(r, _args, allowed) {
    return maskHas(allowed, r.method) ? AUTHZ_GRANTED : AUTHZ_DENIED;
  },
};

/** A method registered (ap_method_register) by then: RegisterHttpMethod, or named in the
 *  enclosing <Limit>/<LimitExcept>. */
function registeredByLimit(cmd: CmdParms, m: string): boolean {
  return globals(cmd.ctx).registeredMethods.has(m) || (cmd.scope.limited?.methods.has(m) ?? false);
}

const providers: ProviderDecl[] = [
  { group: 'authz', name: 'env', version: AUTHZ_PROVIDER_VERSION, provider: envProvider as AuthzProvider },
  { group: 'authz', name: 'all', version: AUTHZ_PROVIDER_VERSION, provider: allProvider as AuthzProvider },
  { group: 'authz', name: 'method', version: AUTHZ_PROVIDER_VERSION, provider: methodProvider as AuthzProvider },
  { group: 'authz', name: 'expr', version: AUTHZ_PROVIDER_VERSION, provider: exprProvider as AuthzProvider },
  // httpd's authz_some_auth_required optional function (server/auth-api.ts).
  { group: 'auth_api', name: 'authz_core', version: '0', provider: { someAuthRequired: authzSomeAuthRequired } satisfies AuthApi },
];

// ---- the module -----------------------------------------------------------------------------

const self = defineModule<AuthzCoreServerConfig, AuthzCoreDirConfig>({
  name: 'authz_core_module',
  source: 'mod_authz_core.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive({ name: '<AuthzProviderAlias', args: 'RAW_ARGS', where: RSRC_CONF, section: true, help: "container for grouping an authorization provider's directives under a provider alias", handler: authzRequireAliasSection }),
    directive({ name: 'Require', args: 'RAW_ARGS', where: OR_AUTHCFG, help: 'specifies authorization directives which one must pass (or not) for a request to suceeed', handler: addAuthzProvider }),
    directive({ name: '<RequireAll', args: 'RAW_ARGS', where: OR_AUTHCFG, section: true, help: 'container for grouping authorization directives of which none must fail and at least one must pass for a request to succeed', handler: addAuthzSection }),
    directive({ name: '<RequireAny', args: 'RAW_ARGS', where: OR_AUTHCFG, section: true, help: 'container for grouping authorization directives of which one must pass for a request to succeed', handler: addAuthzSection }),
    directive({ name: '<RequireNone', args: 'RAW_ARGS', where: OR_AUTHCFG, section: true, help: 'container for grouping authorization directives of which none must pass for a request to succeed', handler: addAuthzSection }),
    directive({ name: 'AuthMerging', args: 'TAKE1', where: OR_AUTHCFG, help: "controls how a <Directory>, <Location>, or similar directive's authorization directives are combined with those of its predecessor", handler: authzMergeSections }),
    directive({ name: 'AuthzSendForbiddenOnFailure', args: 'FLAG', where: OR_AUTHCFG, help: "Controls if an authorization failure should result in a '403 FORBIDDEN' response instead of the HTTP-conforming '401 UNAUTHORIZED'", handler: setForbiddenOnFail }),
  ],
  hooks: {
    authChecker: { fn: authorizeUser, order: HOOK_LAST },
    accessCheckerEx: { fn: authorizeUserless, order: HOOK_LAST },
  },
  configHooks: { preConfig, checkConfig },
  providers,
});

export default self;
