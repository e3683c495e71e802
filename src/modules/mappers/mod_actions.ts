// mod_actions (modules/mappers/mod_actions.c): Action runs a CGI script for a handler or media
// type (the script gets the requested path as PATH_INFO; "virtual" allows a path with no file
// behind it); Script runs one for a request method (GET only with a query string). Both answer
// with an internal redirect to the script, after every other handler declined.

import {
  defineModule, directive, DECLINED, OK, HOOK_LAST, MODULE_API_VERSION, OR_FILEINFO, ACCESS_CONF, RSRC_CONF,
  type HookResult,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { globals } from '../../server/core/globals.js';
import { methodKnownIn } from '../../server/http/http-core.js';
import { escapeUri } from '../../server/util-script.js';
import { APLOG_INFO } from '../../server/log/levels.js';

interface ActionDirConfig {
  /** Action: handler or media type -> the script, and whether it is virtual. */
  readonly actions: ReadonlyMap<string, { readonly script: string; readonly virtual: boolean }>;
  /** Script: method -> script. */
  readonly scripted: ReadonlyMap<string, string>;
  readonly configured: boolean;
}

type Cmd = CmdParms<undefined, ActionDirConfig>;

function createDirConfig(): ActionDirConfig {
  return { actions: new Map(), scripted: new Map(), configured: false };
}

/** apr_table_overlay: this section's actions over the inherited ones; scripts per method. */
function mergeDirConfig(base: Readonly<ActionDirConfig>, add: Readonly<ActionDirConfig>): ActionDirConfig {
  const actions = new Map(base.actions);
  for (const [k, v] of add.actions) actions.set(k, v);
  const scripted = new Map(base.scripted);
  for (const [k, v] of add.scripted) scripted.set(k, v);
  return { actions, scripted, configured: base.configured || add.configured };
}

function addAction(cmd: Cmd, type: string, script: string, option: string | undefined): string | undefined {
  if (option !== undefined && option.toLowerCase() !== 'virtual') return `unrecognized option '${option}'`;
  (cmd.dir.actions as Map<string, { script: string; virtual: boolean }>).set(type, { script, virtual: option !== undefined });
  (cmd.dir as { configured: boolean }).configured = true;
  return undefined;
}

function setScript(cmd: Cmd, method: string, script: string): string | undefined {
  if (method === 'TRACE') return 'TRACE not allowed for Script';
  if (cmd.scope.htaccess) {
    // A .htaccess file cannot register a new method.
    if (!methodKnownIn(cmd.ctx, method)) {
      return `Could not register method '${method}' for Script`;
    }
  } else {
    globals(cmd.ctx).registeredMethods.add(method);
  }
  (cmd.dir.scripted as Map<string, string>).set(method, script);
  (cmd.dir as { configured: boolean }).configured = true;
  return undefined;
}

/** action_handler: runs for every request no other handler took. */
function actionHandler(r: Request): HookResult | Promise<HookResult> {
  const conf = self.dir(r);
  if (conf === undefined || !conf.configured) return DECLINED;
  // HEAD is GET to httpd's method numbers; a GET script only serves requests with a query.
  const method = r.method === 'HEAD' ? 'GET' : r.method;
  let script = method === 'GET' ? (r.args !== undefined ? conf.scripted.get('GET') : undefined) : conf.scripted.get(method);
  // A script that maps back here would loop.
  if (script !== undefined && r.prev !== null && r.prev.prev !== null) return DECLINED;
  const action = r.handler;
  const a = action !== undefined && action !== '' ? conf.actions.get(action) : undefined;
  if (a !== undefined) {
    if (!a.virtual && r.finfo === null) {
      r.log('actions', APLOG_INFO, `AH00652: File does not exist: ${r.filename}`);
      return 404;
    }
    script = a.script;
    // The script sees it as REDIRECT_HANDLER.
    r.subprocessEnv.set('HANDLER', action!);
    if (a.virtual) r.notes.set('virtual_script', '1');
  }
  if (script === undefined) return DECLINED;
  const target = script + escapeUri(r.uri) + (r.args !== undefined ? '?' + r.args : '');
  return r.rt.internalRedirect(r, target).then(() => {
    r.eosSent = true;
    return OK;
  });
}

const self = defineModule<undefined, ActionDirConfig>({
  name: 'actions_module',
  source: 'mod_actions.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, ActionDirConfig, 'TAKE23'>({
      name: 'Action', args: 'TAKE23', where: OR_FILEINFO, help: 'a media type followed by a script name', handler: addAction,
    }),
    directive<undefined, ActionDirConfig, 'TAKE2'>({
      name: 'Script', args: 'TAKE2', where: ACCESS_CONF | RSRC_CONF, help: 'a method followed by a script name', handler: setScript,
    }),
  ],
  hooks: {
    handler: { fn: actionHandler, order: HOOK_LAST },
  },
});

export default self;
