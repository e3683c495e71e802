// The byte stream under a connection, as the response writer sees it: write with
// backpressure, stream a file range, and end the connection.

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
}
