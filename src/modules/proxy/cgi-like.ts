// What mod_proxy_scgi and mod_proxy_uwsgi share: the request body as httpd's
// ap_setup_client_block(REQUEST_CHUNKED_ERROR) allows it (a Content-Length body only), sending
// it to the backend as it is read, reading the backend's header lines from the socket, and
// streaming the rest of the socket to the client until the backend closes.

import type { ByteStream } from '../../proxy/api.js';
import type { Request } from '../../server/request/request.js';
import { OK } from '../../server/module.js';
import { APLOG_INFO } from '../../server/log/levels.js';
import { EOS, FLUSH, dataBucket } from '../../server/filters.js';
import { MAX_STRING_LEN, addCgiVars, addCommonVars, type ScriptLine } from '../../server/util-script.js';
import { BackendReader, writeTo } from './backend-reader.js';

/** ap_setup_client_block(r, REQUEST_CHUNKED_ERROR): the body length (r->remaining), or the
 *  status refusing a chunked body (AH01593: 411, or 400 when a Content-Length came too). */
export function setupClientBlockChunkedError(r: Request): { status: number; remaining: number } {
  const tenc = r.headersIn.get('Transfer-Encoding');
  const lenp = r.headersIn.get('Content-Length');
  if (tenc !== undefined) {
    if (tenc.toLowerCase() !== 'chunked') {
      r.log('http', APLOG_INFO, `AH01592: Unknown Transfer-Encoding ${tenc}`);
      return { status: 501, remaining: 0 };
    }
    r.log('http', APLOG_INFO, `AH01593: chunked Transfer-Encoding forbidden: ${r.uri}`);
    return { status: lenp !== undefined ? 400 : 411, remaining: 0 };
  }
  const remaining = lenp !== undefined && /^[0-9]+$/.test(lenp) ? Number(lenp) : 0;
  return { status: OK, remaining };
}

/** send_request_body of both modules: the body as it is read, to the backend. Returns OK, or
 *  503 when the backend does not take it (`sendFailed` logs), 500 when the client's body
 *  cannot be read (`readFailed` logs). */
export async function sendBody(
  r: Request, sock: ByteStream, remaining: number,
  sendFailed: (e: { code: number; text: string } | undefined) => void, readFailed: () => void,
): Promise<number> {
  if (remaining <= 0) return OK;
  try {
    for (let b = await r.read(); b !== null; b = await r.read()) {
      const e = await writeTo(sock, b);
      if (e !== undefined) { sendFailed(r.rt.errno(e)); return 503; }
    }
  } catch {
    readFailed();
    return 500;
  }
  return OK;
}

/** Header lines from the backend for ap_scan_script_header_err (getsfunc over the socket):
 *  CRs dropped, 0 at the end of the stream or for a line too long, -1 on a timeout. */
export function socketLines(reader: BackendReader, timeoutMs: number): () => Promise<ScriptLine> {
  return async () => {
    const max = MAX_STRING_LEN - 2;
    let line = '';
    for (;;) {
      const c = await reader.read(timeoutMs);
      if (c === 'timeout') return { line, rv: -1 };
      if (c === null) return { line, rv: 0 };
      for (let i = 0; i < c.length; i++) {
        const b = c[i]!;
        if (b === 0x0a) { reader.unshift(c.subarray(i + 1)); return { line, rv: 1 }; }
        if (b !== 0x0d) {
          line += String.fromCharCode(b);
          if (line.length >= max) { reader.unshift(c.subarray(i + 1)); return { line, rv: 0 }; }
        }
      }
    }
  };
}

/** The rest of the backend's output to the client until it closes, then EOS. A read error or
 *  timeout cuts the response (the connection is not kept), as a broken backend does in httpd. */
export async function streamToClient(r: Request, reader: BackendReader, timeoutMs: number): Promise<number> {
  for (;;) {
    if (r.connection.aborted) return OK;
    const c = await reader.read(timeoutMs);
    if (c === 'timeout' || (c === null && reader.failure !== undefined)) {
      r.connection.keepAlive = false;
      if (!r.headersSent) await r.write([FLUSH]);
      r.eosSent = true;
      return OK;
    }
    if (c === null) break;
    await r.write([dataBucket(c)]);
  }
  await r.write([EOS]);
  return OK;
}

/** ap_add_common_vars then ap_add_cgi_vars: the CGI environment in r.subprocessEnv. */
export async function addStandardVars(r: Request): Promise<void> {
  addCommonVars(r);
  await addCgiVars(r);
}

export type AddVars = (r: Request) => Promise<void>;
