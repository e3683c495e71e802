// mod_dir (modules/mappers/mod_dir.c): trailing-slash redirects, DirectoryIndex files and
// FallbackResource, all in the fixups phase (HOOK_LAST), as httpd 2.4 does:
//  - a directory requested without a trailing slash gets a 301 to the slash URL
//    (DirectorySlash, default On);
//  - a directory requested with the slash is served by the first DirectoryIndex name whose
//    subrequest is 200 and a regular file, through a fast internal redirect (the request takes
//    the subrequest's place and goes on to its handler), or a DirectoryIndexRedirect;
//  - a request for nothing in the file system with no handler is served by FallbackResource.
// When nothing applies the request goes on with handler httpd/unix-directory (mod_autoindex
// or the core's default handler answer it).

import { fastRedirect, overlayNotes } from '../../server/request/fast-redirect.js';
import {
  DECLINED, HOOK_LAST, MODULE_API_VERSION, OK, OR_INDEXES,
  defineModule, directive, DIR_MAGIC_TYPE,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { splitWords } from '../../server/config/lexer.js';
import type { Request } from '../../server/request/request.js';
import { escapeUri as escapePath } from '../../lib/urlencoded.js';

/** AP_DEFAULT_INDEX. */
export const DEFAULT_INDEX = 'index.html';
/** mod_rewrite's internal redirect handler (REWRITE_REDIRECT_HANDLER_NAME). */
const REWRITE_REDIRECT_HANDLER = 'redirect-handler';

export interface DirConfig {
  /** DirectoryIndex names; [] after "DirectoryIndex disabled"; undefined = not set here. */
  indexNames: string[] | undefined;
  /** DirectorySlash; undefined = unset (behaves as On). */
  doSlash: boolean | undefined;
  /** DirectoryCheckHandler; undefined = unset (behaves as Off). */
  checkHandler: boolean | undefined;
  /** DirectoryIndexRedirect: a 3xx status, 0 for Off, undefined unset (Off). */
  redirectIndex: number | undefined;
  /** FallbackResource (possibly "disabled"). */
  dflt: string | undefined;
}

type Cmd = CmdParms<unknown, DirConfig>;

function createDirConfig(): DirConfig {
  return { indexNames: undefined, doSlash: undefined, checkHandler: undefined, redirectIndex: undefined, dflt: undefined };
}

export function mergeDirConfig(base: Readonly<DirConfig>, add: Readonly<DirConfig>): DirConfig {
  return {
    indexNames: add.indexNames ?? base.indexNames,
    doSlash: add.doSlash ?? base.doSlash,
    checkHandler: add.checkHandler ?? base.checkHandler,
    redirectIndex: add.redirectIndex ?? base.redirectIndex,
    dflt: add.dflt ?? base.dflt,
  } satisfies { [K in keyof Required<DirConfig>]: DirConfig[K] };
}

/** add_index: names add to the list of this context; "disabled" alone empties it. */
function addIndex(cmd: Cmd, raw: string): undefined {
  const d = cmd.dir;
  if (!d.indexNames) d.indexNames = [];
  const words = splitWords(raw);
  if (words.length === 1 && words[0]!.toLowerCase() === 'disabled') {
    d.indexNames.length = 0;
    return undefined;
  }
  d.indexNames.push(...words);
  return undefined;
}

export const isHttpRedirect = (status: number): boolean => status >= 300 && status <= 399;

/** configure_redirect. */
export function parseIndexRedirect(arg: string): number | string {
  const a = arg.toLowerCase();
  if (a === 'on') return 302;
  if (a === 'off') return 0;
  if (a === 'permanent') return 301;
  if (a === 'temp') return 302;
  if (a === 'seeother') return 303;
  if (/^[0-9]/.test(arg)) {
    const status = parseInt(arg, 10); // atoi
    if (!isHttpRedirect(status)) return 'DirectoryIndexRedirect only accepts values between 300 and 399';
    return status;
  }
  return 'DirectoryIndexRedirect ON|OFF|permanent|temp|seeother|3xx';
}

// ---- request time ---------------------------------------------------------------------------


/** apr_table_overlay(a, b) for notes: a's values win on lookup (apr_table_get finds the first). */

/** Takes a failed or redirecting subrequest's notes and headers into r (apr_table_overlay). */
function adoptHeaders(r: Request, rr: Request): void {
  r.notes = overlayNotes(r.notes, rr.notes);
  r.headersOut = r.headersOut.overlay(rr.headersOut);
  r.errHeadersOut = r.errHeadersOut.overlay(rr.errHeadersOut);
}

export { fastRedirect };

/** The URI ap_sub_req_lookup_uri looks up for `name`: a relative name is taken in the
 *  directory of r's URI (re-escaped, as the name is an escaped URI). */
export function subRequestUri(r: Request, name: string): string {
  if (name.startsWith('/')) return name;
  return escapePath(r.uri.slice(0, r.uri.lastIndexOf('/') + 1)) + name;
}

/** The subrequest found a servable resource: 200 and a regular file (or a proxy). */
function servable(rr: Request): boolean {
  return rr.status === 200 && (rr.handler === 'proxy-server' || (rr.finfo !== null && rr.finfo.isFile()));
}

/** fixup_dflt: FallbackResource for a request that maps to nothing and has no handler. */
async function fixupDflt(r: Request, d: Readonly<DirConfig>): Promise<number> {
  let name = d.dflt;
  if (name === undefined || name.toLowerCase() === 'disabled') return DECLINED;
  if (r.args !== undefined) name = `${name}?${r.args}`;
  const rr = await r.rt.lookupUri(r, subRequestUri(r, name), undefined, true);
  if (servable(rr)) {
    fastRedirect(rr, r);
    return OK;
  }
  let errorNotfound = 0;
  if (isHttpRedirect(rr.status)) {
    adoptHeaders(r, rr);
    errorNotfound = rr.status;
  } else if (rr.status && rr.status !== 404 && rr.status !== 200) {
    errorNotfound = rr.status;
  }
  return errorNotfound || DECLINED;
}

/** fixup_dir: a request that maps to a directory. */
async function fixupDir(r: Request, d: Readonly<DirConfig>): Promise<number> {
  // In case mod_mime wasn't present, and no handler was assigned.
  if (!r.handler) r.handler = DIR_MAGIC_TYPE;
  // Never tolerate path_info on dir requests.
  if (r.pathInfo !== '') return DECLINED;

  if (r.uri === '' || !r.uri.endsWith('/')) {
    if (d.doSlash === false) return DECLINED;
    // Browsers that cannot follow a redirect of a non-GET request (redirect-carefully);
    // HEAD is M_GET in httpd.
    if (r.method !== 'GET' && r.method !== 'HEAD' && r.subprocessEnv.has('redirect-carefully')) return DECLINED;
    const ifile = escapePath(r.uri) + '/' + (r.args !== undefined ? `?${r.args}` : '');
    r.headersOut.set('Location', r.rt.constructUrl(r, ifile));
    return 301;
  }

  // Running between mod_rewrite's fixup and its redirect handler, or someone else's handler
  // took over (DirectoryCheckHandler): step aside without leaking the directory type.
  if (r.handler === REWRITE_REDIRECT_HANDLER || (d.checkHandler === true && r.handler !== DIR_MAGIC_TYPE)) {
    if (r.contentType === DIR_MAGIC_TYPE) r.contentType = undefined;
    return DECLINED;
  }

  const names = d.indexNames ?? [DEFAULT_INDEX];
  let errorNotfound = 0;
  for (let i = 0; i < names.length; i++) {
    const last = i === names.length - 1;
    let name = names[i]!;
    // The arguments go with the index, so that the redirect gets them right.
    if (r.args !== undefined) name = `${name}?${r.args}`;
    const rr = await r.rt.lookupUri(r, subRequestUri(r, name), undefined, true);
    // The lookup is liberal (/foo/index.html may be /foo with path info): insist on a file.
    if (servable(rr)) {
      if (d.redirectIndex !== undefined && isHttpRedirect(d.redirectIndex)) {
        r.headersOut.set('Location', r.rt.constructUrl(r, rr.uri));
        return d.redirectIndex;
      }
      fastRedirect(rr, r);
      return OK;
    }
    // A redirect (or, for the last name, 406/401) goes to the client.
    if (isHttpRedirect(rr.status) || (rr.status === 406 && last) || (rr.status === 401 && last)) {
      adoptHeaders(r, rr);
      return rr.status;
    }
    // Any other error is kept rather than letting a listing through.
    if (rr.status && rr.status !== 404 && rr.status !== 200) errorNotfound = rr.status;
  }
  if (errorNotfound) return errorNotfound;

  // What we tried, for mod_autoindex.
  r.notes.set('dir-index-names', d.indexNames ? d.indexNames.join(',') : DEFAULT_INDEX);
  return DECLINED;
}

/** dir_fixups. */
function dirFixups(r: Request): number | Promise<number> {
  if (r.finfo !== null && r.finfo.isDirectory()) return fixupDir(r, self.dir(r));
  if (r.finfo === null && !r.handler) {
    const d = self.dir(r);
    // Fast path: nothing configured, nothing to do.
    if (d.dflt === undefined) return DECLINED;
    return fixupDflt(r, d);
  }
  return DECLINED;
}

const self = defineModule<unknown, DirConfig>({
  name: 'dir_module',
  source: 'mod_dir.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<unknown, DirConfig, 'TAKE1'>({
      name: 'FallbackResource', args: 'TAKE1', where: OR_INDEXES, help: 'Set a default handler',
      handler: (cmd, arg) => { cmd.dir.dflt = arg; },
    }),
    directive<unknown, DirConfig, 'RAW_ARGS'>({
      name: 'DirectoryIndex', args: 'RAW_ARGS', where: OR_INDEXES, help: 'a list of file names',
      handler: addIndex,
    }),
    directive<unknown, DirConfig, 'FLAG'>({
      name: 'DirectorySlash', args: 'FLAG', where: OR_INDEXES, help: 'On or Off',
      handler: (cmd, on) => { cmd.dir.doSlash = on; },
    }),
    directive<unknown, DirConfig, 'FLAG'>({
      name: 'DirectoryCheckHandler', args: 'FLAG', where: OR_INDEXES, help: 'On or Off',
      handler: (cmd, on) => { cmd.dir.checkHandler = on; },
    }),
    directive<unknown, DirConfig, 'TAKE1'>({
      name: 'DirectoryIndexRedirect', args: 'TAKE1', where: OR_INDEXES, help: 'On, Off, or a 3xx status code.',
      handler: (cmd, arg) => {
        const v = parseIndexRedirect(arg);
        if (typeof v === 'string') return v;
        cmd.dir.redirectIndex = v;
        return undefined;
      },
    }),
  ],
  hooks: {
    fixups: { fn: dirFixups, order: HOOK_LAST },
  },
});

export default self;
