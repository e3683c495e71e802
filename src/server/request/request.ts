// The request record (httpd's request_rec) and connection record (conn_rec). Every field is
// initialised in the constructor so the objects keep one shape on the hot path.

import { readCount } from './stat-cache.js';
import type { ConnectionTap } from '../connection-tap.js';
import type { Stats } from 'node:fs';
import { HeaderTable } from './headers.js';
import type { ServerRec } from '../server-rec.js';
import type { Runtime } from '../runtime.js';
import type { FilterInstance, InputFilterInstance, Brigade } from '../filters.js';
import { DEFAULT_LOG_LEVEL, levelFor, type LogLevelConfig } from '../log/levels.js';
import type { MaybePromise } from '../maybe-promise.js';
import type { Wire } from '../http/wire.js';
import type { Section } from '../core/sections.js';

/** A merged per-directory configuration vector (the walks' result, src/server/request/walk.ts),
 *  named by its key in the runtime's merge cache. */
export interface Merged {
  key: string;
  vec: unknown[];
  /** What merging a given contribution (a section, a parsed .htaccess vector, or another
   *  merged walk) onto this gives: repeated requests follow these object-keyed links instead
   *  of building and hashing key strings. */
  next?: Map<object, Merged>;
}

/** Events `plume explain` records (src/cli/explain.ts). Modules add their own kinds by
 *  declaration merging (mod_authz_core: `authz`, mod_access_compat: `access_compat`). */
export interface TraceEvents {
  /** A walk merged a <Directory>, <Location> or <Files> section (also in r.matchedSections). */
  section: { readonly section: Section };
  /** The directory walk read a .htaccess file: merged (status OK) or refused (the status the
   *  request fails with); `at` is r.matchedSections.length then. */
  htaccess: { readonly file: string; readonly at: number; readonly status: number };
  /** A hook gave a result that decides its phase: run-first hooks any result but DECLINED,
   *  run-all hooks anything but OK and DECLINED. `module` is the module's source name. */
  hook: { readonly phase: string; readonly module: string; readonly status: number };
}

/** The recorder behind `plume explain`: absent when serving, so every report point costs
 *  one undefined check (`r.trace?.record(...)`). */
export interface ExplainTrace {
  record<K extends keyof TraceEvents>(kind: K, event: TraceEvents[K]): void;
}

/** A connection's raw byte stream, taken over from HTTP by a tunnel (mod_proxy's Upgrade). */
export interface RawStream {
  /** What the client sent beyond the current request. */
  readonly head: Buffer;
  write(d: Buffer): boolean;
  end(): void;
  destroy(): void;
  pause(): void;
  resume(): void;
  onData(fn: (d: Buffer) => void): void;
  onEnd(fn: () => void): void;
  onClose(fn: () => void): void;
  onDrain(fn: () => void): void;
  readonly destroyed: boolean;
}

export interface ConnRec {
  readonly id: number;
  /** The socket under the connection. */
  readonly wire: Wire;
  readonly remoteIp: string;
  readonly remotePort: number;
  readonly localIp: string;
  readonly localPort: number;
  /** Requests served on this connection before the current one. */
  keepalives: number;
  /** Whether the connection stays open after this response. */
  keepAlive: boolean;
  aborted: boolean;
  /** The client's host name once looked up (HostnameLookups / Require host). */
  remoteHost: string | undefined;
  /** Bytes read and written for mod_logio (%I %O) of the current request. */
  bytesIn: number;
  bytesOut: number;
  /** Connection-level notes (e.g. the base server for this address:port). */
  readonly notes: Map<string, string>;
  /** The server chosen by address before name-based selection. */
  baseServer: ServerRec;
  /** Per-module connection state (httpd's c->conn_config), by module index: ModuleHandle.conn(). */
  readonly connConfig: unknown[];
  /** The connection this one runs on (httpd's c->master): an HTTP/2 stream's is the TLS or
   *  TCP connection of its session; absent for a primary connection. */
  readonly master?: ConnRec;
  /** Stops serving HTTP on the connection and hands its byte stream over (an HTTP/1.1
   *  connection only; absent where a tunnel cannot be made, as over HTTP/2). */
  detach?(): RawStream;
  /** A connection-level filter watching this connection's bytes (mod_dumpio), if any. */
  readonly tap?: ConnectionTap | null;
}

/** The request body, read on demand (httpd's input filter chain reduced to what HTTP needs). */
export interface RequestBody {
  /** Declared Content-Length, or -1 for chunked. */
  readonly length: number;
  readonly chunked: boolean;
  /** Reads the whole body (honouring LimitRequestBody: rejects with a FilterError, 413). */
  read(limit: number): Promise<Buffer>;
  /** The next piece of the body as it arrives, null at its end (httpd's HTTP_IN filter);
   *  rejects with a FilterError carrying the status (400, 408, 413). Modules read through
   *  the input filter chain instead: `r.read()`. */
  next(limit: number): Promise<Buffer | null>;
  /** Reads and drops the body (ap_discard_request_body); resolves to an HTTP status or OK. */
  discard(limit: number): Promise<number>;
  /** True once the body has been consumed. */
  readonly done: boolean;
}

export type AcceptPathInfo = 'default' | 'on' | 'off';

export class Request {
  // ---- identity and request line -------------------------------------------------------
  theRequest = '';
  method = 'GET';
  protocol = 'HTTP/1.1';
  /** 1000 * major + minor (HTTP/1.1 = 1001, HTTP/0.9 = 9). */
  protoNum = 1001;
  /** HTTP/0.9: no status line or headers in the response. */
  assbackwards = false;
  headerOnly = false;
  unparsedUri = '';
  /** The decoded, normalised URL path. */
  uri = '';
  /** The query string (without '?'), undefined when there was none. */
  args: string | undefined = undefined;
  hostname = '';
  /** The client's address as the request sees it (r->useragent_ip: mod_remoteip may set it
   *  from a proxy header); the connection's peer otherwise. */
  useragentIp: string;
  /** Host header port when given. */
  parsedPort = 0;
  requestTime = 0;          // ms since epoch
  startMicros = 0;

  // ---- headers and tables --------------------------------------------------------------
  headersIn = new HeaderTable();
  headersOut = new HeaderTable();
  errHeadersOut = new HeaderTable();
  /** Trailer fields of the response (httpd's r->trailers_out: what a proxied HTTP/2 backend
   *  sent after its body; logged by %{...}^to); null until a module sets one. */
  trailersOut: HeaderTable | null = null;
  subprocessEnv = new Map<string, string>();
  notes = new Map<string, string>();

  /** PROXYREQ_* of src/proxy/api.ts (r->proxyreq): 0 none, 1 forward, 2 reverse, 3 response. */
  proxyreq: 0 | 1 | 2 | 3 = 0;

  // ---- mapping --------------------------------------------------------------------------
  filename = '';
  canonicalFilename = '';
  pathInfo = '';
  finfo: Stats | null = null;
  usedPathInfo: AcceptPathInfo = 'default';
  /** ap_set_context_info: the URL prefix and directory that mapped this request (mod_alias,
   *  mod_userdir); undefined = none (CONTEXT_PREFIX "", CONTEXT_DOCUMENT_ROOT the DocumentRoot). */
  contextPrefix: string | undefined = undefined;
  contextDocumentRoot: string | undefined = undefined;
  /** ap_set_document_root: this request's DocumentRoot (mod_vhost_alias); undefined = the server's. */
  documentRoot: string | undefined = undefined;
  /** r->vlist_validator: the validator of a negotiated resource's variant list (mod_negotiation),
   *  joined into the ETag of the chosen variant. */
  vlistValidator: string | undefined = undefined;
  /** Per-directory configuration vector for this request (merged). */
  perDirConfig: unknown[] = [];
  /** Section ids merged, for the merge cache key and `plume explain`. */
  matchedSections: number[] = [];
  /** `plume explain`'s recorder (undefined when serving). */
  trace: ExplainTrace | undefined = undefined;
  /** The merge-cache node the storage walk ended on (core's map_to_storage), for the
   *  location step; null until that walk ran. */
  storageWalk: Merged | null = null;
  /** The socket-read count when this request was read: stat() answers taken since then may
   *  serve it (src/server/request/stat-cache.ts). */
  readonly readSeq: number = readCount();

  // ---- content --------------------------------------------------------------------------
  contentType: string | undefined = undefined;
  handler: string | undefined = undefined;
  contentEncoding: string | undefined = undefined;
  contentLanguages: string[] = [];
  /** File modification time for Last-Modified (ms), 0 = none. */
  mtime = 0;
  clength = -1;

  // ---- outcome ----------------------------------------------------------------------------
  status = 200;
  statusLine: string | undefined = undefined;
  user: string | undefined = undefined;
  apAuthType: string | undefined = undefined;
  bytesSent = 0;
  /** Set when the response head has gone out. */
  headersSent = false;
  /** Set when EOS passed through the chain. */
  eosSent = false;
  /** The response is not to be cached/revalidated with a local copy (ap_meets_conditions). */
  noLocalCopy = false;
  /** ErrorDocument recursion guard and error state. */
  errorResponseSent = false;
  /** ap_custom_response: error texts or URLs set for this request by a module, by status
   *  (a text begins with '"', as ErrorDocument keeps it); consulted before ErrorDocument. */
  customResponses: Map<number, string> | null = null;
  logLevel: LogLevelConfig = DEFAULT_LOG_LEVEL;
  /** Expect: 100-continue and not yet answered. */
  expecting100 = false;
  readBodyCalled = false;

  // ---- relations -------------------------------------------------------------------------
  prev: Request | null = null;
  next: Request | null = null;
  main: Request | null = null;
  body: RequestBody | null = null;
  /** The request body as mod_request kept it for subrequests (httpd's r->kept_body), or null. */
  keptBody: Buffer[] | null = null;

  // ---- output ------------------------------------------------------------------------------
  outputFilters: FilterInstance[] = [];
  /** The first filter of the linked chain (set when the response starts). */
  filterHead: FilterInstance | null = null;
  /** A subrequest run into its parent's chain: the filter its output goes to (SUBREQ_CORE). */
  subreqNext: FilterInstance | null = null;

  // ---- input ---------------------------------------------------------------------------------
  inputFilters: InputFilterInstance[] = [];
  /** The first input filter of the linked chain (set on the first read). */
  inputHead: InputFilterInstance | null = null;

  constructor(
    readonly rt: Runtime,
    readonly connection: ConnRec,
    public server: ServerRec,
  ) {
    this.useragentIp = connection.remoteIp;
  }

  isInitialReq(): boolean {
    return this.main === null && this.prev === null;
  }

  /** Whether a module's message at this level would be logged (check before formatting). */
  wantsLog(module: string, level: number): boolean {
    return level <= levelFor(this.logLevel, module);
  }

  /** Logs a request message with the client address, as ap_log_rerror. `source` is httpd's
   *  APLOG_MARK ("mod_authz_core.c(815)"), shown at debug and trace levels. */
  log(module: string, level: number, message: string, err?: { code: number; text: string }, source?: string): void {
    if (level > levelFor(this.logLevel, module)) return;
    this.rt.logRequest(this, module, level, message, err, source);
  }

  /** The next piece of the request body through the input filters (ap_get_brigade on
   *  r->input_filters), null at its end; rejects with a FilterError (its status). */
  read(): Promise<Buffer | null> {
    return this.rt.readBody(this);
  }

  /** The whole request body through the input filters. */
  async readAll(): Promise<Buffer> {
    const parts: Buffer[] = [];
    for (let b = await this.read(); b !== null; b = await this.read()) parts.push(b);
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /** Sends a brigade down the output filter chain (ap_pass_brigade on r->output_filters). */
  write(bb: Brigade): MaybePromise<void> {
    return this.rt.writeResponse(this, bb);
  }
}
