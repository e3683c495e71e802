// mod_env (modules/metadata/mod_env.c): SetEnv, UnsetEnv and PassEnv build a per-directory
// table of variables that the fixups hook overlays onto the request's environment.
//
//  - The table is an apr_table_t: names compare case-insensitively, a later SetEnv of the same
//    name replaces the value in place (the first spelling of the name is kept).
//  - UnsetEnv removes the name from this section's table and, when merged, from everything
//    inherited; a SetEnv after it in the same section wins again (httpd's merge order).
//  - PassEnv copies the value from the server's own environment when the directive is read,
//    warning (AH01506) when the variable is not set.
//  - fixups (HOOK_MIDDLE) overlays the table: httpd uses apr_table_overlay, which keeps a
//    variable that is already set (by SetEnvIf, RewriteRule E=, ...) visible to every later
//    apr_table_get. The overlaid value is shadowed, not lost: httpd's ap_add_common_vars
//    (CGI) compresses the table and the SetEnv value then wins; shadowedEnv() exposes it.
//
// The request's subprocessEnv and notes are Maps read with apr_table_t's rules (src/server/apr-table.ts).

import {
  DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_FILEINFO,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { lowerAscii, tableGet } from '../../server/apr-table.js';
import { APLOG_WARNING, levelFor } from '../../server/log/levels.js';

// ---- configuration ---------------------------------------------------------------------------

/** One variable of the table: the name as first written, and its value. */
export interface EnvVar {
  readonly name: string;
  readonly value: string;
}

export interface EnvDirConfig {
  /** SetEnv / PassEnv variables in table order (names unique case-insensitively). */
  readonly vars: EnvVar[];
  /** UnsetEnv names of this section, applied to the inherited table on merge. */
  readonly unsetenv: string[];
}

function createDirConfig(): EnvDirConfig {
  return { vars: [], unsetenv: [] };
}

function indexOfVar(vars: readonly EnvVar[], name: string): number {
  const k = lowerAscii(name);
  for (let i = 0; i < vars.length; i++) if (lowerAscii(vars[i]!.name) === k) return i;
  return -1;
}

/** apr_table_setn on the variable list: replace in place (keeping the first spelling). */
function setVar(vars: EnvVar[], name: string, value: string): void {
  const i = indexOfVar(vars, name);
  if (i < 0) vars.push({ name, value });
  else vars[i] = { name: vars[i]!.name, value };
}

function unsetVar(vars: EnvVar[], name: string): void {
  const k = lowerAscii(name);
  for (let i = vars.length - 1; i >= 0; i--) if (lowerAscii(vars[i]!.name) === k) vars.splice(i, 1);
}

/** httpd's merge_env_dir_configs: inherited table, minus this section's UnsetEnv names, then
 *  this section's variables set over it. The result carries no UnsetEnv of its own. */
function mergeDirConfig(base: Readonly<EnvDirConfig>, add: Readonly<EnvDirConfig>): EnvDirConfig {
  if (add.vars.length === 0 && add.unsetenv.length === 0) return { vars: base.vars.slice(), unsetenv: [] };
  const vars = base.vars.slice();
  for (const name of add.unsetenv) unsetVar(vars, name);
  for (const v of add.vars) setVar(vars, v.name, v.value);
  return { vars, unsetenv: [] };
}

/** A startup warning logged against cmd->server, as ap_log_error(..., cmd->server, ...) does:
 *  the server's own LogLevel filters it, and a <VirtualHost> without a LogLevel of its own
 *  has none yet while the configuration is read, so httpd prints nothing for it. */
function startupWarning(cmd: CmdParms<unknown, EnvDirConfig>, message: string): void {
  const lv = cmd.server.logLevel as typeof cmd.server.logLevel | undefined;
  if (lv === undefined) {
    if (cmd.server.isVirtual) return;
  } else if (levelFor(lv, 'env') < APLOG_WARNING) {
    return;
  }
  cmd.ctx.log('env', APLOG_WARNING, message);
}

/** apr_strtok(name, "=") once: the first token and what follows its terminating '='. */
function strtokEquals(s: string): [string | null, string] {
  let i = 0;
  while (i < s.length && s[i] === '=') i++;
  if (i >= s.length) return [null, ''];
  const end = s.indexOf('=', i);
  if (end < 0) return [s.slice(i), ''];
  return [s.slice(i, end), s.slice(end + 1)];
}

function passEnv(cmd: CmdParms<unknown, EnvDirConfig>, name: string): string | undefined {
  const value = process.env[name];
  if (value !== undefined) setVar(cmd.dir.vars, name, value);
  else startupWarning(cmd, `AH01506: PassEnv variable ${name} was undefined`);
  return undefined;
}

function setEnv(cmd: CmdParms<unknown, EnvDirConfig>, name: string, value: string | undefined): string | undefined {
  if (name.includes('=')) {
    const [env, rest] = strtokEquals(name);
    // glibc prints a NULL %s as "(null)".
    startupWarning(cmd, `AH10032: Spurious usage of '=' in an environment variable name. '${cmd.name} ${env ?? '(null)'} ${rest}' expected instead?`);
  }
  setVar(cmd.dir.vars, name, value ?? '');
  return undefined;
}

function unsetEnv(cmd: CmdParms<unknown, EnvDirConfig>, name: string): string | undefined {
  // Unset here and in whatever this section inherits (the merge applies unsetenv to the base).
  const u = cmd.dir.unsetenv;
  if (!u.some((n) => lowerAscii(n) === lowerAscii(name))) u.push(name);
  unsetVar(cmd.dir.vars, name);
  return undefined;
}

// ---- request time ------------------------------------------------------------------------------

/** Values that the fixup overlaid but an earlier setting of the same variable hides from
 *  apr_table_get (name → [SetEnv value, the value that hides it]). */
const shadowed = new WeakMap<Request, Map<string, [string, string]>>();

/** The SetEnv values hidden by an earlier setting of the same variable. httpd's
 *  ap_add_common_vars (building a CGI environment) compresses r->subprocess_env so that the
 *  last value of each name wins: a CGI sees the SetEnv value. Whoever builds such an
 *  environment applies these (only those whose hiding value is still the current one). */
export function shadowedEnv(r: Request): ReadonlyMap<string, string> | undefined {
  const s = shadowed.get(r);
  if (s === undefined) return undefined;
  const out = new Map<string, string>();
  for (const [name, [value, hiddenBy]] of s) if (tableGet(r.subprocessEnv, name) === hiddenBy) out.set(name, value);
  return out;
}

function fixupEnv(r: Request): number {
  const conf = self.dir(r);
  if (conf === undefined || conf.vars.length === 0) return DECLINED;
  const env = r.subprocessEnv;
  for (const v of conf.vars) {
    const existing = tableGet(env, v.name);
    if (existing === undefined) {
      env.set(v.name, v.value);
    } else if (existing !== v.value) {
      let s = shadowed.get(r);
      if (s === undefined) shadowed.set(r, (s = new Map()));
      s.set(v.name, [v.value, existing]);
    }
  }
  return OK;
}

// ---- the module ------------------------------------------------------------------------------

const self = defineModule<undefined, EnvDirConfig>({
  name: 'env_module',
  source: 'mod_env.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, EnvDirConfig, 'ITERATE'>({
      name: 'PassEnv', args: 'ITERATE', where: OR_FILEINFO,
      help: 'a list of environment variables to pass to CGI.', handler: passEnv,
    }),
    directive<undefined, EnvDirConfig, 'TAKE12'>({
      name: 'SetEnv', args: 'TAKE12', where: OR_FILEINFO,
      help: 'an environment variable name and optional value to pass to CGI.', handler: setEnv,
    }),
    directive<undefined, EnvDirConfig, 'ITERATE'>({
      name: 'UnsetEnv', args: 'ITERATE', where: OR_FILEINFO,
      help: 'a list of variables to remove from the CGI environment.', handler: unsetEnv,
    }),
  ],
  hooks: {
    fixups: { fn: fixupEnv, order: HOOK_MIDDLE },
  },
});

export default self;
