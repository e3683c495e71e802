// mod_log_debug (modules/loggers/mod_log_debug.c): `LogMessage message [hook=name]
// [expr=condition]` writes a message (a string expression) to the error log at info level
// when a request passes the named hook (log_transaction by default) in a context where the
// line applies. The message and the condition are parsed once by src/expr (DONT_VARY).
//
// Hooks: every request hook httpd's module registers. plume has no quick_handler or
// pre_translate_name phase of its own: their entries run first in translate_name, in httpd's
// order (quick_handler with the server's configuration, as httpd runs it before any walk).

import {
  ACCESS_CONF, DECLINED, HOOK_FIRST, MODULE_API_VERSION, RSRC_CONF,
  defineModule, directive, type MaybePromise,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO } from '../../server/log/levels.js';
import {
  EXPR_FLAG_DONT_VARY, evalBool, evalString, isFailure, parseExprCmd, parseStringExprCmd,
  type BoolExpr, type ExprFailure, type StringExpr,
} from '../../expr/index.js';

const HOOKS = [
  'log_transaction', 'quick_handler', 'handler', 'translate_name', 'map_to_storage', 'fixups', 'type_checker',
  'check_access', 'check_access_ex', 'check_authn', 'check_authz', 'insert_filter', 'pre_translate_name',
] as const;
type HookName = (typeof HOOKS)[number];

interface MsgEntry {
  readonly message: StringExpr;
  readonly condition: BoolExpr | undefined;
  /** undefined: every hook ("all" or "*"). */
  readonly hook: HookName | undefined;
}

interface LogDebugDirConfig {
  entries: readonly MsgEntry[];
}

function createDirConfig(): LogDebugDirConfig {
  return { entries: [] };
}

function mergeDirConfig(base: Readonly<LogDebugDirConfig>, add: Readonly<LogDebugDirConfig>): LogDebugDirConfig {
  if (base.entries.length === 0) return add;
  if (add.entries.length === 0) return base;
  return { entries: base.entries.concat(add.entries) };
}

type Cmd = CmdParms<undefined, LogDebugDirConfig>;

function logMessage(cmd: Cmd, msg: string, a2: string | undefined, a3: string | undefined): string | undefined {
  const m = parseStringExprCmd(cmd, msg, EXPR_FLAG_DONT_VARY, 'log_debug');
  if (!m.ok) return `Could not parse message expression '${msg}': ${m.error}`;
  let hook: HookName | undefined = 'log_transaction';
  let hookSet = false;
  let condition: BoolExpr | undefined;
  for (const arg of [a2, a3]) {
    if (arg === undefined) break;
    const lower = arg.toLowerCase();
    if (lower.startsWith('hook=')) {
      const name = arg.slice(5);
      const found = HOOKS.find((h) => h === name.toLowerCase());
      if (found !== undefined) hook = found;
      else if (name === '*' || name.toLowerCase() === 'all') hook = undefined;
      else return `Invalid hook name: ${name}`;
      hookSet = true;
    } else if (lower.startsWith('expr=')) {
      const text = arg.slice(5);
      const c = parseExprCmd(cmd, text, EXPR_FLAG_DONT_VARY, 'log_debug');
      if (!c.ok) return `Could not parse expression '${text}': ${c.error}`;
      condition = c.expr;
    } else {
      return `Invalid argument ${arg}`;
    }
  }
  if (!hookSet) hook = 'log_transaction';
  cmd.dir.entries = [...cmd.dir.entries, { message: m.expr, condition, hook }];
  return undefined;
}

// ---- request time ----------------------------------------------------------------------------

function writeMessage(r: Request, e: MsgEntry, hook: HookName): void {
  let msg = evalString(e.message, r);
  if (isFailure(msg)) {
    r.log('log_debug', APLOG_ERR, `AH00641: Can't evaluate message expression: ${msg.error}`);
    msg = '(null)';
  }
  if (r.wantsLog('log_debug', APLOG_DEBUG)) {
    r.log('log_debug', APLOG_INFO, `${msg} (${hook} hook, ${e.message.file}:${e.message.line})`);
  } else {
    r.log('log_debug', APLOG_INFO, msg);
  }
}

/** do_debug_log: the entries of `entries` for this hook, in order. */
function debugLog(r: Request, entries: readonly MsgEntry[], hook: HookName, start = 0): MaybePromise<void> {
  if (!r.wantsLog('log_debug', APLOG_INFO) && !entries.some((e) => e.condition?.async === true)) return;
  for (let i = start; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.hook !== undefined && e.hook !== hook) continue;
    if (e.condition !== undefined) {
      const v = evalBool(e.condition, r);
      if (v instanceof Promise) {
        return v.then((x) => {
          if (conditionHolds(r, x)) writeMessage(r, e, hook);
          return debugLog(r, entries, hook, i + 1);
        });
      }
      if (!conditionHolds(r, v)) continue;
    }
    writeMessage(r, e, hook);
  }
}

function conditionHolds(r: Request, v: boolean | ExprFailure): boolean {
  if (!isFailure(v)) return v;
  r.log('log_debug', APLOG_ERR, `AH00640: Can't evaluate condition: ${v.error}`);
  return false;
}

function at(hook: HookName) {
  return (r: Request): MaybePromise<number> => {
    const entries = self.dir(r).entries;
    if (entries.length === 0) return DECLINED;
    const done = debugLog(r, entries, hook);
    return done instanceof Promise ? done.then(() => DECLINED) : DECLINED;
  };
}

/** translate_name, preceded by what httpd runs before it: quick_handler (main requests, with
 *  the server's configuration) and pre_translate_name. */
function translateName(r: Request): MaybePromise<number> {
  if (r.main === null && r.prev === null) {
    const server = self.dirIn(r.server.lookupDefaults)?.entries ?? [];
    if (server.length > 0) {
      const q = debugLog(r, server, 'quick_handler');
      if (q instanceof Promise) return q.then(() => translateRest(r));
    }
  }
  return translateRest(r);
}

function translateRest(r: Request): MaybePromise<number> {
  const entries = self.dir(r).entries;
  if (entries.length === 0) return DECLINED;
  const p = debugLog(r, entries, 'pre_translate_name');
  if (p instanceof Promise) return p.then(() => at('translate_name')(r));
  return at('translate_name')(r);
}

function insertFilter(r: Request): MaybePromise<void> {
  const entries = self.dir(r).entries;
  if (entries.length === 0) return;
  return debugLog(r, entries, 'insert_filter');
}

// ---- the module -----------------------------------------------------------------------------------

const first = HOOK_FIRST;

const self = defineModule<undefined, LogDebugDirConfig>({
  name: 'log_debug_module',
  source: 'mod_log_debug.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, LogDebugDirConfig, 'TAKE123'>({
      name: 'LogMessage', args: 'TAKE123', where: RSRC_CONF | ACCESS_CONF,
      help: 'Log a debug message to the error log if this config block is used for  a request',
      handler: logMessage,
    }),
  ],
  hooks: {
    logTransaction: { fn: at('log_transaction'), order: first },
    handler: { fn: at('handler'), order: first },
    translateName: { fn: translateName, order: first },
    mapToStorage: { fn: at('map_to_storage'), order: first },
    fixups: { fn: at('fixups'), order: first },
    typeChecker: { fn: at('type_checker'), order: first },
    accessChecker: { fn: at('check_access'), order: first },
    accessCheckerEx: { fn: at('check_access_ex'), order: first },
    checkUserId: { fn: at('check_authn'), order: first },
    authChecker: { fn: at('check_authz'), order: first },
    insertFilter: { fn: insertFilter, order: first },
  },
});

export default self;
