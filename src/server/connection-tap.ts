// Connection-level filters (httpd's AP_FTYPE_CONNECTION filters such as mod_dumpio's
// DUMPIO_IN / DUMPIO_OUT): a module registers a tap in the provider group "connection_tap";
// a connection it wants to watch gets one instance, which the HTTP connection tells what it
// reads and writes below the request: the request head line by line (httpd reads it with
// getline), the body as read, the check for a pipelined request, each response's head and
// brigades, the end of each request (EOR) and of the connection (EOC). A connection no tap
// watches holds null and pays one test per event.

import type { ConfigContext } from './config/context.js';
import type { ConnRec } from './request/request.js';
import type { Brigade } from './filters.js';

export interface ConnectionTap {
  /** A getline read that returned these bytes (a request line, a header line, the empty
   *  line); null: the read met the end of the input (the client closed the connection). */
  getline(line: Buffer | null): void;
  /** A read of the body: `asked` bytes asked for, `data` what came. */
  readBytes(asked: number, data: Buffer): void;
  /** After a response on a kept-alive connection: the one-byte look for a pipelined request. */
  speculative(next: Buffer): void;
  /** A response head as it goes out; `bodyless`: no body follows (HEAD, 304, 204), so httpd
   *  sends the head with the response's EOS. */
  writeHead(head: string, bodyless: boolean): void;
  /** A brigade of the response going out (to the socket); `body` false: its data is dropped. */
  writeBrigade(bb: Brigade, body: boolean): void;
  /** The request is done (httpd's EOR bucket). */
  endRequest(): void;
  /** The connection ends (httpd's FLUSH and EOC buckets). */
  endConnection(): void;
}

/** The provider: per configuration generation, a function giving a connection its tap (or
 *  null when the module does not watch it), or null when it watches nothing at all. */
export interface ConnectionTapProvider {
  open(ctx: ConfigContext): ((c: ConnRec) => ConnectionTap | null) | null;
}

declare module './module.js' {
  interface ProviderGroups {
    connection_tap: ConnectionTapProvider;
  }
}
