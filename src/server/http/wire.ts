// The byte stream under a connection, as the response writer sees it: write with
// backpressure, stream a file range, and end the connection.

import type { HeaderTable } from '../request/headers.js';

export interface Wire {
  /** Writes bytes; false means wait for drain() before writing more. */
  write(data: Buffer | string, encoding?: BufferEncoding): boolean;
  /** Resolves when the socket can take more data (or has closed). */
  drain(): Promise<void>;
  /** Streams a file range with backpressure; `sendfile`: the EnableSendfile On route (no copy). */
  sendFile(path: string, start: number, length: number, sendfile?: boolean): Promise<void>;
  /** Collects small writes into one socket write. */
  cork(): void;
  uncork(): void;
  readonly destroyed: boolean;
  /** A transport with framing of its own (an HTTP/2 stream): the response head goes to it as
   *  fields rather than as HTTP/1.1 bytes, and the end of the body is its end. Absent for
   *  HTTP/1.x. */
  readonly framed?: FramedWire;
}

export interface FramedWire {
  /** The response's status and fields (Date and Server first, as the HTTP/1.1 head has them);
   *  `bodyless`: no body follows (HEAD, 204, 304). */
  head(status: number, fields: HeaderTable, date: string, server: string, bodyless: boolean): void;
  /** The end of the response (EOS), with the response's trailers (r->trailers_out) when it
   *  has any. */
  end(trailers?: HeaderTable | null): void;
  /** An interim response (1xx) and its fields (ap_send_interim_response). A 101 is the switch
   *  of an HTTP/2 extended CONNECT (H2WebSockets), answered 200 on the stream; false when the
   *  switch was refused (the stream has its final answer, no tunnel follows). */
  interim(status: number, fields: HeaderTable): boolean;
}
