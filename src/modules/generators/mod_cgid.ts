// mod_cgid (modules/generators/mod_cgid.c): the CGI handler for threaded MPMs, with its own
// module identity (log lines say "cgid", its own AH numbers) and directives: the ScriptLog
// set, CGIDScriptTimeout and ScriptSock. The script runs as in mod_cgi (cgi-common.ts).
// DIFFERENCE: httpd forks scripts from a separate daemon reached over the ScriptSock socket
// (so a big threaded child need not fork); a plume worker is a small process and spawns its
// scripts itself, so ScriptSock is checked and recorded (where the daemon's socket would be)
// but no socket is created (docs/differences.md).

import {
  defineModule, directive, DECLINED, MODULE_API_VERSION, RSRC_CONF,
} from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { globals } from '../../server/core/globals.js';
import {
  cgiHandler, isCgiRequest, createCgiServerConfig, mergeCgiServerConfig, type CgiDirConfig, type CgiFlavour, type CgiServerConfig,
} from './cgi-common.js';
import { errnoText, scriptLogDirectives, scriptTimeoutDirective } from './mod_cgi.js';
import { execElement } from './cgi-ssi-exec.js';

/** httpd's DEFAULT_SCRIPTSOCK, under DefaultRuntimeDir. */
const DEFAULT_SCRIPTSOCK = 'cgisock';

/** Where the daemon's socket would be: ScriptSock (or cgisock) with the parent's pid appended,
 *  relative to DefaultRuntimeDir (ap_runtime_dir_relative). */
let scriptSock: string | undefined;

export function scriptSockPath(): string {
  return scriptSock ?? `${DEFAULT_SCRIPTSOCK}.${process.pid}`;
}

function setScriptSock(cmd: CmdParms<CgiServerConfig, CgiDirConfig>, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  const name = `${arg}.${process.pid}`;
  if (name.startsWith('/')) { scriptSock = name; return undefined; }
  const rt = globals(cmd.ctx).runtimeDir;
  scriptSock = rt !== undefined ? `${rt.replace(/\/$/, '')}/${name}` : cmd.serverRootRelative(name);
  return undefined;
}

const flavour: CgiFlavour = {
  module: 'cgid',
  tags: { execOff: 'AH01262: ', nphIncluded: 'AH01263: ', notFound: 'AH01264: ', isDir: 'AH01265: ', pathInfo: 'AH01266: ' },
  // What the daemon's child writes to the passed stderr when exec fails (cgid_child_errfn).
  execFailure: (file, err) => `AH01241: error spawning CGI child: exec of '${file}' failed (${errnoText(err).replace(/^\(\d+\)/, '')})`,
  timeoutWarning: true,
  server: (r) => self.server(r.server),
  dir: (r) => self.dir(r),
};

const self = defineModule<CgiServerConfig, CgiDirConfig>({
  name: 'cgid_module',
  source: 'mod_cgid.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: createCgiServerConfig,
  mergeServerConfig: mergeCgiServerConfig,
  createDirConfig: () => ({ timeout: undefined }),
  directives: [
    ...scriptLogDirectives<CgiDirConfig>(),
    directive<CgiServerConfig, CgiDirConfig, 'TAKE1'>({
      name: 'ScriptSock', args: 'TAKE1', where: RSRC_CONF,
      help: 'the name of the socket to use for communication with the cgi daemon.', handler: setScriptSock,
    }),
    scriptTimeoutDirective('CGIDScriptTimeout'),
  ],
  hooks: {
    handler: (r: Request) => (isCgiRequest(r) ? cgiHandler(flavour, r) : DECLINED),
  },
  // <!--#exec --> for mod_include (httpd's cgi_optfns_retrieve).
  providers: [{ group: 'ssi_element', name: 'exec', version: '0', provider: execElement('cgid') }],
  configHooks: {
    preConfig: () => { scriptSock = undefined; },
  },
});

export default self;
