// mod_asis (modules/generators/mod_asis.c): the send-as-is handler (also the type
// httpd/send-as-is) serves a file that carries its own response header, read as a CGI
// script's (Status, Location, Content-Type, ...): the rest of the file is the body. A local
// Location ("/...") with a 200 or 3xx status is followed internally, as a GET.

import * as fs from 'node:fs';
import { DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, defineModule, type HookResult } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { EOS, type Bucket } from '../../server/filters.js';
import { APLOG_ERR, APLOG_INFO } from '../../server/log/levels.js';
import { MAX_STRING_LEN, scanScriptHeader, type ScriptLine } from '../../server/util-script.js';
import { fsPath } from '../../server/request/stat-cache.js';

const ASIS_MAGIC_TYPE = 'httpd/send-as-is';
const CHUNK = 8192;

/** Reads header lines from the start of a file as apr_file_gets does for httpd's header scan:
 *  a line is at most MAX_STRING_LEN - 2 bytes (a longer one comes in pieces), its CR LF or LF
 *  taken off; rv 0 at the end of the file. `offset()` is where the body starts. */
export function fileLineReader(fd: number): { gets: () => Promise<ScriptLine>; offset: () => number } {
  let buf = Buffer.alloc(0);
  let pos = 0;          // file offset of buf[0]
  let eof = false;
  const fill = async (): Promise<void> => {
    const chunk = Buffer.allocUnsafe(CHUNK);
    const { bytesRead } = await new Promise<{ bytesRead: number }>((res, rej) => {
      fs.read(fd, chunk, 0, CHUNK, pos + buf.length, (e, n) => (e ? rej(e) : res({ bytesRead: n })));
    });
    if (bytesRead === 0) eof = true;
    else buf = Buffer.concat([buf, chunk.subarray(0, bytesRead)]);
  };
  const max = MAX_STRING_LEN - 2;
  const gets = async (): Promise<ScriptLine> => {
    for (;;) {
      const nl = buf.indexOf(0x0a);
      if (nl >= 0 && nl < max) {
        let end = nl;
        if (end > 0 && buf[end - 1] === 0x0d) end--;
        const line = buf.toString('latin1', 0, end);
        buf = buf.subarray(nl + 1);
        pos += nl + 1;
        return { line, rv: 1 };
      }
      if (buf.length >= max) {
        const line = buf.toString('latin1', 0, max);
        buf = buf.subarray(max);
        pos += max;
        return { line, rv: 1 };
      }
      if (eof) {
        if (buf.length === 0) return { line: '', rv: 0 };
        const line = buf.toString('latin1');
        pos += buf.length;
        buf = Buffer.alloc(0);
        return { line, rv: 1 };
      }
      await fill();
    }
  };
  return { gets, offset: () => pos };
}

async function asisHandler(r: Request): Promise<HookResult> {
  if (r.handler !== ASIS_MAGIC_TYPE && r.handler !== 'send-as-is') return DECLINED;
  if (r.method !== 'GET' && r.method !== 'HEAD') return DECLINED;
  if (r.finfo === null) {
    r.log('asis', APLOG_INFO, `AH01233: File does not exist: ${r.filename}`);
    return 404;
  }
  let fd: number;
  try {
    fd = await new Promise<number>((res, rej) => fs.open(fsPath(r.filename), 'r', (e, n) => (e ? rej(e) : res(n))));
  } catch (e) {
    r.log('asis', APLOG_ERR, `AH01234: file permissions deny server access: ${r.filename}`, r.rt.errno(e));
    return 403;
  }
  let start: number;
  try {
    const reader = fileLineReader(fd);
    // httpd ignores what the scan returns: a bad header leaves the status it set (or 200).
    await scanScriptHeader(r, reader.gets, { module: 'asis', noBuffer: true }, { line: '' });
    start = reader.offset();
  } finally {
    fs.close(fd, () => undefined);
  }
  const location = r.headersOut.get('Location');
  if (location !== undefined && location.startsWith('/') && (r.status === 200 || (r.status >= 300 && r.status <= 399))) {
    r.status = 200;
    r.method = 'GET';
    await r.rt.internalRedirectHandler(r, location);
    r.eosSent = true;
    return OK;
  }
  const bb: Bucket[] = [];
  const size = r.finfo.size;
  if (!r.headerOnly && size > start) bb.push({ kind: 'file', path: r.filename, start, length: size - start });
  bb.push(EOS);
  await r.write(bb);
  return OK;
}

const self = defineModule<undefined, undefined>({
  name: 'asis_module',
  source: 'mod_asis.c',
  apiVersion: MODULE_API_VERSION,
  hooks: { handler: { fn: asisHandler, order: HOOK_MIDDLE } },
});

export default self;
