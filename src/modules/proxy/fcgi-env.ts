// mod_proxy_fcgi's per-directory configuration and the environment it sends
// (modules/proxy/mod_proxy_fcgi.c): ProxyFCGIBackendType and ProxyFCGISetEnvIf, the
// proxy-fcgi-pathinfo forms applied when the URL is canonicalised, and send_environment's
// SCRIPT_FILENAME handling (the proxy: prefix stripped for GENERIC backends, kept for FPM,
// which expects it) before the CGI variables and the fixups.

import type { Request } from '../../server/request/request.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_TRACE4 } from '../../server/log/levels.js';
import { addCgiVars, addCommonVars } from '../../server/util-script.js';
import {
  EXPR_FLAG_STRING_RESULT, evalBool, evalString, isFailure, parseExprCmd, parseStringExprCmd, unescapeKeep2f,
  type BoolExpr, type ExprMatch, type StringExpr,
} from '../../expr/index.js';

export const MODULE = 'proxy_fcgi';

export type FcgiBackendType = 'FPM' | 'GENERIC';

interface EnvFixup {
  readonly cond: BoolExpr;
  /** undefined: unset mode (`!NAME`). */
  readonly subst: StringExpr | undefined;
  readonly name: string;
}

export interface FcgiDirConfig {
  /** undefined: not set (FPM is assumed, "may be FPM"). */
  readonly backendType: FcgiBackendType | undefined;
  readonly envFixups: readonly EnvFixup[];
}

export function createDirConfig(): FcgiDirConfig {
  return { backendType: undefined, envFixups: [] };
}

export function mergeDirConfig(base: Readonly<FcgiDirConfig>, add: Readonly<FcgiDirConfig>): FcgiDirConfig {
  return {
    backendType: add.backendType ?? base.backendType,
    envFixups: base.envFixups.length === 0 ? add.envFixups : add.envFixups.length === 0 ? base.envFixups : [...base.envFixups, ...add.envFixups],
  };
}

type Cmd = CmdParms<undefined, FcgiDirConfig>;

export function setBackendType(cmd: Cmd, val: string): string | undefined {
  const v = val.toLowerCase();
  if (v !== 'generic' && v !== 'fpm') return "ProxyFCGIBackendType requires one of the following arguments: 'GENERIC', 'FPM'";
  (cmd.dir as { backendType: FcgiBackendType | undefined }).backendType = v === 'fpm' ? 'FPM' : 'GENERIC';
  return undefined;
}

export function addSetEnvIf(cmd: Cmd, cond: string, name: string, value: string | undefined): string | undefined {
  const c = parseExprCmd(cmd, cond, 0, MODULE);
  if (!c.ok) return `Could not parse expression "${cond}": ${c.error}`;
  let subst: StringExpr | undefined;
  if (name.startsWith('!')) {
    if (value !== undefined) return `Third argument ("${value}") is not allowed when using ProxyFCGISetEnvIf's unset mode (${name})`;
    if (name.length === 1) return 'ProxyFCGISetEnvIf: "!" is not a valid variable name';
  } else {
    const text = value ?? '';
    const s = parseStringExprCmd(cmd, text, EXPR_FLAG_STRING_RESULT, MODULE);
    if (!s.ok) return `Could not parse expression "${text}": ${s.error}`;
    subst = s.expr;
  }
  (cmd.dir.envFixups as EnvFixup[]).push({ cond: c.expr, subst, name });
  return undefined;
}

/** FCGI_MAY_BE_FPM: the backend type was not set to GENERIC. */
export function mayBeFpm(d: FcgiDirConfig | undefined): boolean {
  return d !== undefined && d.backendType !== 'GENERIC';
}

/** ap_unescape_url_keep2f(s, 0) in place as httpd leaves the buffer: decoded up to a %00
 *  (which ends the C string). */
function unescapeInPlace(s: string): string {
  const u = unescapeKeep2f(s).value;
  const nul = u.indexOf('\0');
  return nul < 0 ? u : u.slice(0, nul);
}

/** The proxy-fcgi-pathinfo forms of proxy_fcgi_canon, on the canonical path (no leading '/').
 *  Returns whether a later directory walk is wanted ("full"). */
export function applyPathinfo(r: Request, path: string): boolean {
  const type = r.subprocessEnv.get('proxy-fcgi-pathinfo');
  if (type === undefined) return false;
  const t = type.toLowerCase();
  if (t === 'full') return true;
  if (t === 'first-dot' || t === 'last-dot') {
    const dot = t === 'first-dot' ? path.indexOf('.') : path.lastIndexOf('.');
    if (dot >= 0) {
      const slash = path.indexOf('/', dot);
      if (slash >= 0) r.pathInfo = unescapeInPlace(path.slice(slash));
    }
    return false;
  }
  // The form from before the choices: the whole path, for the server to fix up.
  r.pathInfo = '/' + path;
  if (t === 'unescape') r.pathInfo = unescapeInPlace(r.pathInfo);
  if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH01061: set r->path_info to ${r.pathInfo}`);
  return false;
}

/** send_environment up to the records: SCRIPT_FILENAME's prefix, the CGI variables, the
 *  ProxyFCGISetEnvIf fixups. False when a fixup's condition failed (AH10241). */
export function buildEnvironment(r: Request, d: FcgiDirConfig | undefined): boolean | Promise<boolean> {
  if (r.filename !== '') {
    let fname: string | undefined;
    if (r.filename.startsWith('proxy:balancer://')) fname = r.filename.slice(17);
    if (!mayBeFpm(d)) {
      // Under FPM the prefix stays: after an internal redirect on PATH_INFO, FPM would take
      // PATH_TRANSLATED for SCRIPT_FILENAME without it (as with mod_fastcgi and Action).
      if (r.filename.startsWith('proxy:fcgi://')) fname = r.filename.slice(13);
      if (fname !== undefined && r.args !== undefined && r.args !== '') {
        const q = fname.lastIndexOf('?');
        if (q >= 0 && fname.slice(q + 1) === r.args) fname = fname.slice(0, q);
      }
    }
    if (fname !== undefined) {
      const slash = fname.indexOf('/');
      r.filename = slash < 0 ? '' : fname.slice(slash);
    }
  }
  addCommonVars(r);
  // Synchronous unless PATH_TRANSLATED needs a lookup or a fixup waits.
  const cgi = addCgiVars(r);
  if (cgi !== undefined) return cgi.then(() => fixCgiVars(r, d));
  if (d === undefined || d.envFixups.length === 0) return true;
  return fixCgiVars(r, d);
}

/** fix_cgivars: the ProxyFCGISetEnvIf lines in order; a condition's $1.. reach its value. */
async function fixCgiVars(r: Request, d: FcgiDirConfig | undefined): Promise<boolean> {
  if (d === undefined) return true;
  for (const f of d.envFixups) {
    const re: ExprMatch = { source: undefined, match: null };
    let v = evalBool(f.cond, r, re);
    if (v instanceof Promise) v = await v;
    if (isFailure(v)) {
      r.log(MODULE, APLOG_ERR, `AH10241: fix_cgivars: Condition eval returned -1: ${v.error}`);
      return false;
    }
    if (!v) continue;
    if (f.subst === undefined) {
      r.subprocessEnv.delete(f.name.slice(1));
      continue;
    }
    const val = evalString(f.subst, r, re);
    if (isFailure(val)) {
      r.log(MODULE, APLOG_INFO, `AH03514: Error evaluating expression for replacement of ${f.name}: '${val.error}'`);
      continue;
    }
    if (r.wantsLog(MODULE, APLOG_TRACE4)) {
      r.log(MODULE, APLOG_TRACE4, `fix_cgivars: override ${f.name} from '${r.subprocessEnv.get(f.name) ?? '(null)'}' to '${val}'`);
    }
    r.subprocessEnv.set(f.name, val);
  }
  return true;
}
