// mod_cgi (modules/generators/mod_cgi.c): runs CGI scripts (the cgi-script handler, from
// ScriptAlias, AddHandler cgi-script or SetHandler) in a child process of the serving
// process; ScriptLog, ScriptLogLength, ScriptLogBuffer and CGIScriptTimeout. The work is in
// cgi-common.ts, shared with mod_cgid.

import {
  defineModule, directive, DECLINED, MODULE_API_VERSION, RSRC_CONF, ACCESS_CONF, type DirectiveSpec,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import {
  cgiHandler, isCgiRequest, createCgiServerConfig, mergeCgiServerConfig, type CgiDirConfig, type CgiFlavour, type CgiServerConfig,
} from './cgi-common.js';
import { execElement } from './cgi-ssi-exec.js';

type Cmd = CmdParms<CgiServerConfig, CgiDirConfig>;

/** The ScriptLog directives, the same in mod_cgi and mod_cgid. */
export function scriptLogDirectives<DC>(): DirectiveSpec<CgiServerConfig, DC>[] {
  return [
    directive<CgiServerConfig, DC, 'TAKE1'>({
      name: 'ScriptLog', args: 'TAKE1', where: RSRC_CONF, help: 'the name of a log for script debugging info',
      handler: (cmd, arg) => { cmd.srv.logname = cmd.serverRootRelative(arg); return undefined; },
    }),
    directive<CgiServerConfig, DC, 'TAKE1'>({
      name: 'ScriptLogLength', args: 'TAKE1', where: RSRC_CONF, help: 'the maximum length (in bytes) of the script debug log',
      handler: (cmd, arg) => { cmd.srv.logbytes = atol(arg); return undefined; },
    }),
    directive<CgiServerConfig, DC, 'TAKE1'>({
      name: 'ScriptLogBuffer', args: 'TAKE1', where: RSRC_CONF, help: 'the maximum size (in bytes) to record of a POST request',
      handler: (cmd, arg) => { cmd.srv.bufbytes = atol(arg); return undefined; },
    }),
  ];
}

/** C's atol: leading digits (with sign), 0 when none. */
function atol(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  return m ? parseInt(m[1]!, 10) : 0;
}

/** ap_timeout_parameter_parse with seconds as the default unit, exactly: strtoll's number
 *  (none is 0), then the unit by its first letters: s, h, ms, mi; anything else fails. So
 *  "soon" is 0 seconds, as in httpd. Returns ms, or undefined. */
export function timeoutParameter(arg: string): number | undefined {
  const m = /^[ \t\n\v\f\r]*([+-]?\d*)/.exec(arg)!;
  const digits = /\d/.test(m[1]!) ? m[1]! : '';
  const n = digits === '' ? 0 : Number(digits);
  if (n < 0 || !Number.isSafeInteger(n)) return undefined;
  // strtoll leaves its end pointer at the start when it finds no number.
  const rest = digits === '' ? arg : arg.slice(m[0].length);
  const unit = rest === '' ? 's' : rest;
  switch (unit[0]) {
    case 's': return n * 1000;
    case 'h': return n * 3600000;
    case 'm':
      if (unit[1] === 's') return n;
      if (unit[1] === 'i') return n * 60000;
      return undefined;
    default: return undefined;
  }
}

/** CGIScriptTimeout / CGIDScriptTimeout: ap_timeout_parameter_parse, seconds by default. */
export function scriptTimeoutDirective(name: string): DirectiveSpec<CgiServerConfig, CgiDirConfig> {
  return directive<CgiServerConfig, CgiDirConfig, 'TAKE1'>({
    name, args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF,
    help: 'The amount of time to wait between successful reads from the CGI script, in seconds.',
    handler: (cmd: Cmd, arg: string) => {
      const ms = timeoutParameter(arg);
      if (ms === undefined) return `${name} has wrong format`;
      cmd.dir.timeout = ms;
      return undefined;
    },
  });
}

const flavour: CgiFlavour = {
  module: 'cgi',
  tags: { execOff: 'AH02809: ', nphIncluded: 'AH02810: ', notFound: 'AH02811: ', isDir: 'AH02812: ', pathInfo: 'AH02813: ' },
  // What APR's child writes to stderr when exec fails (cgi_child_errfn).
  execFailure: (file, err) => `${errnoText(err)}: exec of '${file}' failed`,
  timeoutWarning: true,
  server: (r) => self.server(r.server),
  dir: (r) => self.dir(r),
};

/** "(13)Permission denied", as APR prints an errno. */
export function errnoText(err: NodeJS.ErrnoException): string {
  const texts: Record<string, [number, string]> = {
    EACCES: [13, 'Permission denied'], ENOENT: [2, 'No such file or directory'], ENOEXEC: [8, 'Exec format error'],
    ENOTDIR: [20, 'Not a directory'], ELOOP: [40, 'Too many levels of symbolic links'], E2BIG: [7, 'Argument list too long'],
    ENOMEM: [12, 'Cannot allocate memory'], ETXTBSY: [26, 'Text file busy'],
  };
  const t = texts[err.code ?? ''];
  return t ? `(${t[0]})${t[1]}` : `(${-(err.errno ?? 0)})${err.message}`;
}

const self = defineModule<CgiServerConfig, CgiDirConfig>({
  name: 'cgi_module',
  source: 'mod_cgi.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: createCgiServerConfig,
  mergeServerConfig: mergeCgiServerConfig,
  // No merge: a section's configuration replaces the one it inherits (httpd's default).
  createDirConfig: () => ({ timeout: undefined }),
  directives: [...scriptLogDirectives<CgiDirConfig>(), scriptTimeoutDirective('CGIScriptTimeout')],
  hooks: {
    handler: (r: Request) => (isCgiRequest(r) ? cgiHandler(flavour, r) : DECLINED),
  },
  // <!--#exec --> for mod_include (httpd's cgi_optfns_retrieve).
  providers: [{ group: 'ssi_element', name: 'exec', version: '0', provider: execElement('cgi') }],
});

export default self;
