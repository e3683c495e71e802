// mod_mime_magic (modules/metadata/mod_mime_magic.c): a file's type from its first bytes, for
// files nothing else typed. MimeMagicFile names the magic file (file(1)'s old format, parse.ts),
// read once per configuration for every server that has one (AH01521-AH01526 for bad lines;
// after a server's file had errors, httpd stops reading the files of the servers after it).
// The type checker runs after mod_mime's and only when no type was set; it gives:
//  - a directory httpd/unix-directory, an empty file text/plain, a device/fifo/socket
//    application/octet-stream;
//  - NAME@DIGITS the type (encoding, languages) a file subrequest for NAME gets;
//  - a file starting with compress/gzip/pack magic: `gzip -dcq FILE` is run (in the file's
//    directory) and its first 4096 bytes looked at; found, the type is theirs and the
//    Content-Encoding x-compress or x-gzip;
//  - else the magic tests on the first 4096 bytes, then the keyword and tar heuristics
//    (match.ts); nothing found: no type.
// The result of a look is kept per file version (device, inode, size, mtime, ctime) in each
// process, with the request error-log lines it produced, which are logged again on each use.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import {
  defineModule, directive, MODULE_API_VERSION, RSRC_CONF, HOOK_MIDDLE, DECLINED, OK,
  DIR_MAGIC_TYPE, type MaybePromise,
} from '../../../server/module.js';
import type { CmdParms } from '../../../server/config/cmd.js';
import type { ConfigContext } from '../../../server/config/context.js';
import type { ServerRec } from '../../../server/server-rec.js';
import type { Request } from '../../../server/request/request.js';
import { APLOG_ERR, levelFor } from '../../../server/log/levels.js';
import { errnoOf } from '../../../server/log/error-log.js';
import { parseMagicFile, type MagicEntry } from './parse.js';
import { softmagic, ascmagic, rslToType, type MagicOutput, type MagicLog } from './match.js';

/** httpd creates a module's server configuration for a <VirtualHost> only when one of its
 *  directives appears there; without one the virtual host shares the main server's object
 *  (and its tests), as plume's fixup does too. */
interface MagicServer {
  magicfile: string | undefined;
}

/** HOWMANY: the bytes looked at. */
const HOWMANY = 4096;
const MIME_BINARY_UNKNOWN = 'application/octet-stream';
const MIME_TEXT_UNKNOWN = 'text/plain';
/** apr_file_read's status at the end of the pipe. */
const APR_EOF = { code: 70014, text: 'End of file found' };

/** The compressed formats httpd recognises (compr[]): magic, encoding. */
const COMPRESSED: readonly (readonly [number, number, string])[] = [
  [0o37, 0o235, 'x-compress'],
  [0o37, 0o213, 'x-gzip'],
  [0o37, 0o36, 'x-gzip'],
];

function createServerConfig(): MagicServer {
  return { magicfile: undefined };
}

function mergeServerConfig(base: Readonly<MagicServer>, add: Readonly<MagicServer>): MagicServer {
  return { magicfile: add.magicfile ?? base.magicfile };
}

function setMagicFile(cmd: CmdParms<MagicServer, undefined>, arg: string): undefined {
  cmd.srv.magicfile = arg;
  return undefined;
}

/** The tests each server uses, set by post_config (httpd's conf->magic). */
let tables = new WeakMap<ServerRec, readonly MagicEntry[]>();

/** magic_init + apprentice: each server's file, in httpd's server-list order (a virtual host
 *  sharing the main server's configuration reads the same file again, as httpd does); the
 *  first file that cannot be read or has a bad line ends the loop (that server keeps the lines
 *  it read), and the servers after it with a configuration of their own get no tests. */
function magicInit(ctx: ConfigContext): undefined {
  tables = new WeakMap();
  const quiet = ctx.child === true;
  const main = ctx.mainServer;
  // httpd links each <VirtualHost> in right after the main server: its list, which this loop
  // follows, has the virtual hosts last-defined first.
  const servers = [main, ...[...ctx.vhosts].reverse()];
  const mainConf = self.server(main);
  const shared = (s: ServerRec): boolean => s !== main && self.server(s) === mainConf;
  let mainEntries: readonly MagicEntry[] | undefined;
  let stopped = false;
  for (const s of servers) {
    const conf = self.server(s);
    if (stopped) {
      if (shared(s) && mainEntries !== undefined) tables.set(s, mainEntries);
      continue;
    }
    if (conf.magicfile === undefined) continue;
    // DIFFERENCE: httpd logs a virtual host's lines to that host's ErrorLog; plume writes them
    // to the startup log (the main server's error log).
    const wants = !quiet && APLOG_ERR <= levelFor(s.logLevel, 'mime_magic');
    const file = ctx.serverRootRelative(conf.magicfile);
    let data: Buffer;
    try {
      data = fs.readFileSync(file);
    } catch (e) {
      if (wants) {
        ctx.startupLog.write({ module: 'mime_magic', level: APLOG_ERR, errno: errnoOf(e), message: `AH01515: mod_mime_magic: can't read magic file ${file}` });
      }
      // apprentice() emptied the list first: a server sharing the main server's loses it too.
      if (shared(s)) mainEntries = undefined;
      stopped = true;
      continue;
    }
    const parsed = parseMagicFile(data);
    if (wants) for (const m of parsed.messages) ctx.startupLog.write({ module: 'mime_magic', level: APLOG_ERR, message: m.text });
    const entries = parsed.entries.length > 0 ? parsed.entries : undefined;
    if (entries !== undefined) tables.set(s, entries);
    if (s === main || shared(s)) mainEntries = entries;
    if (parsed.errors > 0) stopped = true;
  }
  // Servers sharing the main server's configuration see its list as it was left.
  for (const s of servers) {
    if (!shared(s)) continue;
    if (mainEntries !== undefined) tables.set(s, mainEntries);
    else tables.delete(s);
  }
  if (mainEntries !== undefined) tables.set(main, mainEntries);
  else tables.delete(main);
  return undefined;
}

// ---- the per-file-version cache ----------------------------------------------------------------

interface Look {
  readonly table: readonly MagicEntry[];
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  /** The fragments printed (without httpd's closing newline), or null: DECLINED. */
  readonly frags: readonly string[] | null;
  readonly encoding: string | undefined;
  readonly logs: readonly MagicLog[];
}

const LOOKS_MAX = 4096;
const looks = new Map<string, Look>();

function remember(filename: string, look: Look): void {
  if (looks.size >= LOOKS_MAX) {
    const first = looks.keys().next();
    if (first.done !== true) looks.delete(first.value);
  }
  looks.set(filename, look);
}

// ---- looking at a file ----------------------------------------------------------------------

/** uncompress(): the first bytes `gzip -dcq FILE` writes (one read of up to 4096 bytes, as
 *  httpd's apr_file_read on the pipe; empty when it wrote nothing), and what gzip wrote on its
 *  stderr, which is httpd's error log. */
function uncompress(filename: string): Promise<{ data: Buffer; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('gzip', ['-dcq', filename], { cwd: path.dirname(filename), stdio: ['ignore', 'pipe', 'pipe'] });
    const parts: Buffer[] = [];
    let errText = '';
    let got = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      child.stdout.destroy();
      child.stderr.destroy();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      resolve({ data: Buffer.concat(parts).subarray(0, HOWMANY), stderr: errText });
    };
    child.on('error', finish);
    child.on('close', finish);
    child.stderr.on('data', (b: Buffer) => { errText += b.toString('latin1'); });
    child.stdout.on('data', (b: Buffer) => {
      parts.push(b);
      got += b.length;
      if (got >= HOWMANY) finish();
    });
    child.stdout.on('error', finish);
    child.stderr.on('error', () => { /* closed by finish */ });
  });
}

/** tryit(). */
async function tryit(table: readonly MagicEntry[], filename: string, buf: Uint8Array, out: MagicOutput, state: { encoding: string | undefined }, checkZ: boolean): Promise<boolean> {
  if (checkZ) {
    const z = COMPRESSED.find(([a, b]) => buf.length >= 2 && buf[0] === a && buf[1] === b);
    if (z !== undefined) {
      const inner = await uncompress(filename);
      if (inner.stderr !== '') out.logs.push({ raw: inner.stderr });
      if (inner.data.length === 0) {
        out.logs.push({ eof: `AH01554: mod_mime_magic: read failed from uncompress of ${filename}` });
        return true;
      }
      state.encoding = z[2];
      const copy = Buffer.from(inner.data);
      copy[copy.length - 1] = 0;
      if (await tryit(table, filename, copy, out, state, false)) return true;
    }
  }
  if (softmagic(table, buf, out)) return true;
  if (ascmagic(buf, out)) return true;
  return false;
}

/** magic_process(): fragments (httpd's RSL without its final newline) or a status. */
/** What is known without reading the file (fsmagic), or the look kept for this version. */
function quickLook(r: Request, table: readonly MagicEntry[]): Look | undefined {
  const st = r.finfo!;
  const base = { table, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
  if (st.isDirectory()) return { ...base, frags: [DIR_MAGIC_TYPE], encoding: undefined, logs: [] };
  if (!st.isFile()) return { ...base, frags: [MIME_BINARY_UNKNOWN], encoding: undefined, logs: [] };
  if (st.size === 0) return { ...base, frags: [MIME_TEXT_UNKNOWN], encoding: undefined, logs: [] };
  const hit = looks.get(r.filename);
  if (hit !== undefined && hit.table === table && hit.dev === st.dev && hit.ino === st.ino && hit.size === st.size
    && hit.mtimeMs === st.mtimeMs && hit.ctimeMs === st.ctimeMs) return hit;
  return undefined;
}

async function lookAt(r: Request, table: readonly MagicEntry[]): Promise<Look | number> {
  const st = r.finfo!;
  const base = { table, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
  let fd: number;
  try {
    fd = fs.openSync(r.filename, 'r');
  } catch {
    r.log('mime_magic', APLOG_ERR, `AH01512: mod_mime_magic: can't read \`${r.filename}'`);
    return DECLINED;
  }
  const buf = Buffer.alloc(HOWMANY + 1);
  let n: number;
  try {
    n = fs.readSync(fd, buf, 0, HOWMANY, 0);
  } catch (e) {
    fs.closeSync(fd);
    r.log('mime_magic', APLOG_ERR, `AH01513: mod_mime_magic: read failed: ${r.filename}`, errnoOf(e));
    return 500;
  }
  fs.closeSync(fd);
  if (n === 0) return DECLINED;
  buf[n] = 0;
  const out: MagicOutput = { frags: [], logs: [] };
  const state = { encoding: undefined as string | undefined };
  const found = await tryit(table, r.filename, buf.subarray(0, n + 1), out, state, true);
  const look: Look = { ...base, frags: found ? out.frags : null, encoding: state.encoding, logs: out.logs };
  remember(r.filename, look);
  return look;
}

/** Where NAME@DIGITS's '@' is, or -1. */
function revisionAt(fn: string): number {
  let pos = fn.length - 1;
  const digit = (i: number): boolean => fn.charCodeAt(i) >= 48 && fn.charCodeAt(i) <= 57;
  if (pos < 0 || !digit(pos)) return -1;
  while (pos >= 0 && digit(pos)) pos--;
  return pos < 0 || fn[pos] !== '@' ? -1 : pos;
}

/** revision_suffix(): NAME@DIGITS typed as NAME. */
async function revisionSuffix(r: Request, pos: number): Promise<boolean> {
  const sub = await r.rt.lookupFile(r, r.filename.slice(0, pos));
  if (sub.contentType === undefined) return false;
  r.contentType = sub.contentType;
  if (sub.contentEncoding !== undefined) r.contentEncoding = sub.contentEncoding;
  if (sub.contentLanguages.length > 0) r.contentLanguages = [...sub.contentLanguages];
  return true;
}

/** ap_content_type_tolower: the part before any ';' in lower case. */
function contentTypeToLower(t: string): string {
  const semi = t.indexOf(';');
  return semi < 0 ? t.toLowerCase() : t.slice(0, semi).toLowerCase() + t.slice(semi);
}

/** magic_find_ct (type_checker, after mod_mime); synchronous unless the file must be read
 *  or a revision suffix looked up. */
function magicFindCt(r: Request): MaybePromise<number> {
  if (r.finfo === null || r.filename === '') return DECLINED;
  if (r.contentType !== undefined) return DECLINED;
  const table = tables.get(r.server);
  if (table === undefined) return DECLINED;
  const at = revisionAt(r.filename);
  if (at >= 0) return revisionSuffix(r, at).then((typed) => (typed ? DECLINED : magicProcess(r, table)));
  return magicProcess(r, table);
}

function magicProcess(r: Request, table: readonly MagicEntry[]): MaybePromise<number> {
  const quick = quickLook(r, table);
  if (quick !== undefined) return apply(r, quick);
  return lookAt(r, table).then((look) => (typeof look === 'number' ? look : apply(r, look)));
}

/** magic_rsl_to_request, with the look's log lines. */
function apply(r: Request, look: Look): number {
  for (const line of look.logs) {
    if (typeof line === 'string') r.log('mime_magic', APLOG_ERR, line);
    else if ('raw' in line) r.rt.mainServer.errorLog.sink.write(line.raw);
    else r.log('mime_magic', APLOG_ERR, line.eof, APR_EOF);
  }
  if (look.encoding !== undefined) r.contentEncoding = look.encoding;
  if (look.frags === null) return DECLINED;
  const result = rslToType(look.frags);
  if (result === null) return DECLINED;
  r.contentType = contentTypeToLower(result.type);
  if (result.encoding !== undefined) r.contentEncoding = result.encoding;
  return OK;
}

const self = defineModule<MagicServer, undefined>({
  name: 'mime_magic_module',
  source: 'mod_mime_magic.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive<MagicServer, undefined, 'TAKE1'>({ name: 'MimeMagicFile', args: 'TAKE1', where: RSRC_CONF, help: 'Path to MIME Magic file (in file(1) format)', handler: setMagicFile }),
  ],
  hooks: {
    typeChecker: { fn: magicFindCt, order: HOOK_MIDDLE, predecessors: ['mod_mime.c'] },
  },
  configHooks: {
    postConfig: magicInit,
  },
});

export default self;
