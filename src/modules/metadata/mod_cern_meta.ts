// mod_cern_meta: CERN httpd's meta files (modules/metadata/mod_cern_meta.c). With MetaFiles on,
// a file DIR/NAME is sent with the header lines of DIR/MetaDir/NAMEMetaSuffix (by default
// DIR/.web/NAME.meta), read in the fixups phase:
//  - "Name: value" lines up to the first empty line or the end; a line without a colon is an
//    error (AH01560, 500); the other headers (below) are added only when the file has no empty
//    line, as httpd's scan_meta_file returns at the empty line before adding them;
//  - Content-type sets the response's type (lower-cased before any ';', trailing space
//    dropped), Status its status and status line ("Status: 404 Gone" answers 404 Gone with the
//    file's body); every other name replaces that response header (the last line of a name
//    wins);
//  - the meta file must be reachable as a file subrequest would reach it (<Directory> access
//    rules apply); a meta file that does not exist, or a subrequest that does not answer 200,
//    adds nothing; one that cannot be opened otherwise is a 403 (AH01562).
// Directories and URIs ending in '/' get nothing. MetaFiles is not inherited: a section
// without it turns meta files off (httpd's merge takes the section's own value), MetaDir and
// MetaSuffix are.

import * as fs from 'node:fs';
import {
  defineModule, directive, MODULE_API_VERSION, OR_INDEXES, HOOK_MIDDLE, DECLINED, OK,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR } from '../../server/log/levels.js';

interface CernMetaDir {
  metadir: string | undefined;
  metasuffix: string | undefined;
  metafiles: boolean;
}

const DEFAULT_METADIR = '.web';
const DEFAULT_METASUFFIX = '.meta';
/** httpd reads meta lines into a MAX_STRING_LEN buffer (8192, less the terminator and one). */
const MAX_LINE = 8190;

function createDirConfig(): CernMetaDir {
  return { metadir: undefined, metasuffix: undefined, metafiles: false };
}

function mergeDirConfig(base: Readonly<CernMetaDir>, add: Readonly<CernMetaDir>): CernMetaDir {
  return { metadir: add.metadir ?? base.metadir, metasuffix: add.metasuffix ?? base.metasuffix, metafiles: add.metafiles };
}

type Cmd = CmdParms<undefined, CernMetaDir>;

function setMetaFiles(cmd: Cmd, on: boolean): undefined {
  cmd.dir.metafiles = on;
  return undefined;
}
function setMetaDir(cmd: Cmd, arg: string): undefined {
  cmd.dir.metadir = arg;
  return undefined;
}
function setMetaSuffix(cmd: Cmd, arg: string): undefined {
  cmd.dir.metasuffix = arg;
  return undefined;
}

/** What a meta file says: the headers in order, and the special names; null for a malformed
 *  line (no colon). */
export interface MetaHeaders {
  headers: [string, string][];
  contentType: string | undefined;
  status: number | undefined;
  statusLine: string | undefined;
}

/** scan_meta_file: the lines up to the first empty one (CRLF or LF ends a line). */
export function parseMetaFile(text: string): MetaHeaders | null {
  const out: MetaHeaders = { headers: [], contentType: undefined, status: undefined, statusLine: undefined };
  let at = 0;
  while (at < text.length) {
    let nl = text.indexOf('\n', at);
    let next = nl < 0 ? text.length : nl + 1;
    // apr_file_gets reads at most the buffer's size: a longer line goes on as the next one.
    if ((nl < 0 ? text.length : nl + 1) - at > MAX_LINE) { nl = -1; next = at + MAX_LINE; }
    let line = text.slice(at, nl < 0 ? next : nl);
    if (nl >= 0 && line.endsWith('\r')) line = line.slice(0, -1);
    at = next;
    // httpd returns at the empty line before its other headers are added to the response
    // (only Content-type and Status, set as they are read, take effect): kept as it does.
    if (line === '') {
      out.headers = [];
      return out;
    }
    const colon = line.indexOf(':');
    if (colon < 0) return null;
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^[ \t\n\v\f\r]+/, '');
    const lower = name.toLowerCase();
    if (lower === 'content-type') {
      const v = value.replace(/[ \t\n\v\f\r]+$/, '');
      const semi = v.indexOf(';');
      out.contentType = semi < 0 ? v.toLowerCase() : v.slice(0, semi).toLowerCase() + v.slice(semi);
    } else if (lower === 'status') {
      const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(value);
      if (m !== null) out.status = Number(m[1]);
      out.statusLine = value;
    } else {
      // apr_table_set: a later line of the same name replaces the earlier one.
      const i = out.headers.findIndex(([k]) => k.toLowerCase() === lower);
      if (i >= 0) out.headers.splice(i, 1);
      out.headers.push([name, value]);
    }
  }
  return out;
}

/** add_cern_meta_data (fixups). */
async function addCernMetaData(r: Request): Promise<number> {
  const dconf = self.dir(r);
  if (dconf === undefined || !dconf.metafiles) return DECLINED;
  if (r.finfo === null || r.finfo.isDirectory() || r.uri.endsWith('/')) return DECLINED;
  const lead = r.filename.indexOf('/');
  const last = r.filename.lastIndexOf('/');
  if (last < 0 || last === lead) {
    r.log('cern_meta', APLOG_ERR, `AH01561: internal error in mod_cern_meta: ${r.filename}`);
    return DECLINED;
  }
  const metafile = `${r.filename.slice(0, last)}/${dconf.metadir ?? DEFAULT_METADIR}/${r.filename.slice(last + 1)}${dconf.metasuffix ?? DEFAULT_METASUFFIX}`;
  const rr = await r.rt.lookupFile(r, metafile);
  if (rr.status !== 200) return DECLINED;
  let text: string;
  try {
    text = fs.readFileSync(metafile, 'latin1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return DECLINED;
    r.log('cern_meta', APLOG_ERR, `AH01562: meta file permissions deny server access: ${metafile}`);
    return 403;
  }
  const meta = parseMetaFile(text);
  if (meta === null) {
    r.log('cern_meta', APLOG_ERR, `AH01560: malformed header in meta file: ${r.filename}`);
    return 500;
  }
  if (meta.contentType !== undefined) r.contentType = meta.contentType;
  if (meta.status !== undefined) r.status = meta.status;
  if (meta.statusLine !== undefined) r.statusLine = meta.statusLine;
  for (const [k, v] of meta.headers) r.headersOut.set(k, v);
  return OK;
}

const self = defineModule<undefined, CernMetaDir>({
  name: 'cern_meta_module',
  source: 'mod_cern_meta.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, CernMetaDir, 'FLAG'>({ name: 'MetaFiles', args: 'FLAG', where: OR_INDEXES, help: "Limited to 'on' or 'off'", handler: setMetaFiles }),
    directive<undefined, CernMetaDir, 'TAKE1'>({ name: 'MetaDir', args: 'TAKE1', where: OR_INDEXES, help: 'the name of the directory containing meta files', handler: setMetaDir }),
    directive<undefined, CernMetaDir, 'TAKE1'>({ name: 'MetaSuffix', args: 'TAKE1', where: OR_INDEXES, help: 'the filename suffix for meta files', handler: setMetaSuffix }),
  ],
  hooks: {
    fixups: { fn: addCernMetaData, order: HOOK_MIDDLE },
  },
});

export default self;
