// mod_proxy_scgi's request and answer (modules/proxy/mod_proxy_scgi.c): the CGI environment
// as one SCGI netstring, the body as it is, then the backend's CGI-style header read from the
// socket and the rest streamed to the client; ProxySCGISendfile and ProxySCGIInternalRedirect
// turn a header of the answer into a file subrequest or an internal redirect, done once the
// backend connection is closed (httpd's proxy request_status hook).

import type { ByteStream } from '../../proxy/api.js';
import type { Request } from '../../server/request/request.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { OK } from '../../server/module.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';
import { scanScriptHeader } from '../../server/util-script.js';
import { encodeScgiHeader } from '../../proxy/protocols/scgi.js';
import { BackendReader, writeTo } from './backend-reader.js';
import { addStandardVars, sendBody, setupClientBlockChunkedError, socketLines, streamToClient, type AddVars } from './cgi-like.js';

export const MODULE = 'proxy_scgi';

/** httpd's SCGI_DEF_PORT. */
export const SCGI_DEF_PORT = 4000;

/** The values On stands for. */
const SENDFILE_ON = 'X-Sendfile';
const REDIRECT_ON = 'Location';

/** ProxySCGISendfile and ProxySCGIInternalRedirect: a header name, or Off (`*Off`); neither
 *  set means not configured here (sendfile off, redirects on Location). */
export interface ScgiConfigState {
  sendfile: string | undefined;
  sendfileOff: boolean;
  internalRedirect: string | undefined;
  redirectOff: boolean;
}

export function createDirConfig(): ScgiConfigState {
  return { sendfile: undefined, sendfileOff: false, internalRedirect: undefined, redirectOff: false };
}

export function mergeDirConfig(base: Readonly<ScgiConfigState>, add: Readonly<ScgiConfigState>): ScgiConfigState {
  const sf = add.sendfile !== undefined || add.sendfileOff ? add : base;
  const ir = add.internalRedirect !== undefined || add.redirectOff ? add : base;
  return { sendfile: sf.sendfile, sendfileOff: sf.sendfileOff, internalRedirect: ir.internalRedirect, redirectOff: ir.redirectOff };
}

type Cmd = CmdParms<undefined, ScgiConfigState>;

export function setSendfile(cmd: Cmd, arg: string): undefined {
  const d = cmd.dir;
  const v = arg.toLowerCase();
  d.sendfileOff = v === 'off';
  d.sendfile = v === 'off' ? undefined : v === 'on' ? SENDFILE_ON : arg;
  return undefined;
}

export function setInternalRedirect(cmd: Cmd, arg: string): undefined {
  const d = cmd.dir;
  const v = arg.toLowerCase();
  d.redirectOff = v === 'off';
  d.internalRedirect = v === 'off' ? undefined : v === 'on' ? REDIRECT_ON : arg;
  return undefined;
}

/** What the answer asked for, done after the connection is released. */
export type ScgiFollowUp =
  | { readonly type: 'none' }
  | { readonly type: 'redirect'; readonly location: string }
  | { readonly type: 'sendfile'; readonly location: string };

export interface ScgiBackend {
  readonly socket: ByteStream;
  readonly hostname: string;
  readonly port: number;
  readonly timeoutMs: number;
}

/** Steps three of scgi_handler: the request, then the answer. */
export async function scgiExchange(r: Request, b: ScgiBackend, conf: ScgiConfigState | undefined, addVars: AddVars = addStandardVars): Promise<{ status: number; follow: ScgiFollowUp }> {
  const none: ScgiFollowUp = { type: 'none' };
  const setup = setupClientBlockChunkedError(r);
  if (setup.status !== OK) return { status: setup.status, follow: none };
  // send_headers
  await addVars(r);
  const head = encodeScgiHeader(r.subprocessEnv, setup.remaining);
  const failedSend = (e: { code: number; text: string } | undefined): void => {
    r.log(MODULE, APLOG_ERR, `AH00858: sending data to ${b.hostname}:${b.port} failed`, e);
  };
  const e = await writeTo(b.socket, head);
  if (e !== undefined) { failedSend(r.rt.errno(e)); return { status: 503, follow: none }; }
  // send_request_body
  const st = await sendBody(r, b.socket, setup.remaining, failedSend, () => r.log(MODULE, APLOG_ERR, 'AH00859: receiving request body failed'));
  if (st !== OK) return { status: st, follow: none };
  // pass_response
  const reader = new BackendReader(b.socket);
  const status = await scanScriptHeader(r, socketLines(reader, b.timeoutMs), { module: MODULE, noBuffer: true }, { line: '' });
  if (status !== OK) {
    r.log(MODULE, APLOG_ERR, `AH00860: error reading response headers from ${b.hostname}:${b.port}`);
    r.statusLine = undefined;
    return { status, follow: none };
  }
  if (r.subprocessEnv.get('ap_trust_cgilike_cl') === undefined) r.headersOut.unset('Content-Length');
  r.headersOut.unset('Transfer-Encoding');
  if (conf?.sendfile !== undefined) {
    const h = conf.sendfile;
    const inErr = r.errHeadersOut.get(h);
    const location = inErr ?? r.headersOut.get(h);
    if (location !== undefined) {
      if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH00861: Found ${h}: ${location} - preparing subrequest.`);
      if (inErr !== undefined) r.errHeadersOut.unset(h); else r.headersOut.unset(h);
      return { status: OK, follow: { type: 'sendfile', location } };
    }
  }
  if (r.status === 200 && conf?.redirectOff !== true) {
    const h = conf?.internalRedirect ?? REDIRECT_ON;
    const inErr = r.errHeadersOut.get(h);
    const location = inErr ?? r.headersOut.get(h);
    if (location !== undefined && location.startsWith('/')) {
      if (h.toLowerCase() !== 'location') {
        if (inErr !== undefined) r.errHeadersOut.unset(h); else r.headersOut.unset(h);
      }
      return { status: OK, follow: { type: 'redirect', location } };
    }
  }
  return { status: await streamToClient(r, reader, b.timeoutMs), follow: none };
}

/** scgi_request_status: the internal redirect or the file subrequest the answer asked for. */
export async function scgiFollowUp(r: Request, follow: ScgiFollowUp): Promise<number> {
  if (follow.type === 'redirect') {
    if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH00862: Internal redirect to ${follow.location}`);
    r.statusLine = undefined;
    // HEAD stays HEAD (httpd passes it around as GET).
    if (r.method !== 'GET' && r.method !== 'HEAD') r.method = 'GET';
    r.headersIn.unset('Content-Length');
    await r.rt.internalRedirectHandler(r, follow.location);
    r.eosSent = true;
    return OK;
  }
  if (follow.type === 'sendfile') {
    if (r.wantsLog(MODULE, APLOG_DEBUG)) r.log(MODULE, APLOG_DEBUG, `AH00863: File subrequest to ${follow.location}`);
    const rr = await r.rt.lookupFile(r, follow.location);
    if (rr.status === 200 && rr.finfo !== null) {
      // The file goes through this request's own filters (rr's next filter is r's chain).
      if (r.filterHead === null) await r.write([]);
      await r.rt.runSubRequest(rr, r.filterHead);
      return OK;
    }
    const filetype = rr.finfo === null ? 0 : rr.finfo.isDirectory() ? 2 : rr.finfo.isFile() ? 1 : 0;
    r.log(MODULE, APLOG_ERR, `AH00864: Subrequest to file '${follow.location}' not possible. (rr->status=${rr.status}, rr->finfo.filetype=${filetype})`);
    return 500;
  }
  return OK;
}
