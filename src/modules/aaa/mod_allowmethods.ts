// mod_allowmethods (modules/aaa/mod_allowmethods.c): AllowMethods restricts the methods a
// directory answers; any other gets 405 (AH01623), checked before any other access check.
// "AllowMethods reset" lifts an inherited restriction.

import {
  defineModule, directive, DECLINED, HOOK_REALLY_FIRST, MODULE_API_VERSION, ACCESS_CONF, type HookResult,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { methodKnownIn } from '../../server/http/http-core.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { coreServer } from '../../server/core/core-module.js';

interface AmConf {
  /** The methods allowed (HEAD counts as GET); undefined = no restriction. */
  readonly allowed: ReadonlySet<string> | undefined;
  readonly allowedSet: boolean;
}

function allowMethods(cmd: CmdParms<undefined, AmConf>, argv: string[]): string | undefined {
  const d = cmd.dir as { allowed: Set<string> | undefined; allowedSet: boolean };
  if (argv.length === 0) return "AllowMethods: No method or 'reset' keyword given";
  if (argv.length === 1 && argv[0]!.toLowerCase() === 'reset') {
    d.allowed = undefined;
    d.allowedSet = true;
    return undefined;
  }
  const set = new Set(d.allowed ?? []);
  for (const m of argv) {
    if (!methodKnownIn(cmd.ctx, m)) return `AllowMethods: Invalid Method '${m}'`;
    set.add(m === 'HEAD' ? 'GET' : m);
  }
  d.allowed = set;
  d.allowedSet = true;
  return undefined;
}

function checkAccess(r: Request): HookResult {
  const conf = self.dir(r);
  if (conf === undefined || conf.allowed === undefined) return DECLINED;
  const m = r.method === 'HEAD' ? 'GET' : r.method;
  if (conf.allowed.has(m)) return DECLINED;
  // The 405's Allow is made from the methods handlers declared: none yet at this point, so
  // only TRACE (when TraceEnable allows it), as httpd answers.
  r.headersOut.set('Allow', coreServer(r.server).traceEnable === 'off' ? '' : 'TRACE');
  r.log('allowmethods', APLOG_ERR, `AH01623: client method denied by server configuration: '${r.method}' to ${r.filename !== '' ? r.filename : 'uri ' + r.uri}`);
  return 405;
}

const self = defineModule<undefined, AmConf>({
  name: 'allowmethods_module',
  source: 'mod_allowmethods.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ allowed: undefined, allowedSet: false }),
  mergeDirConfig: (base, add) => (add.allowedSet ? add : base),
  directives: [
    directive<undefined, AmConf, 'TAKE_ARGV'>({
      name: 'AllowMethods', args: 'TAKE_ARGV', where: ACCESS_CONF, help: 'only allow specific methods', handler: allowMethods,
    }),
  ],
  hooks: {
    accessChecker: { fn: checkAccess, order: HOOK_REALLY_FIRST },
  },
});

export default self;
