// How a static file's body reaches the socket, as EnableMMAP and EnableSendfile decide in httpd
// (their merged per-directory values): bytes held in memory (plume's analogue of a mapping),
// read now, or streamed from the file, with or without a copy through a read buffer.
//
// DIFFERENCE: Node has neither mmap(2) nor sendfile(2); docs/differences.md says what the settings
// mean here. The routes were chosen by measurement (docs/benchmarks.md, "EnableSendfile and EnableMMAP").

import * as fs from 'node:fs';
import { fsPath } from '../request/stat-cache.js';

/** Largest file whose bytes EnableMMAP On keeps in memory; all of them together, per process. */
const MAX_FILE = 256 * 1024;
const MAX_TOTAL = 64 * 1024 * 1024;
/** EnableSendfile On reads files up to this size in one synchronous read (cheaper than three thread-pool hops). */
export const READ_NOW_MAX = 32 * 1024;
/** Read size of the streamed routes: one read buffer per response (copy route), or fresh buffers (direct route). */
export const STREAM_CHUNK = 256 * 1024;

/** The route a file's body takes. */
export type FileRoute =
  /** EnableMMAP On, small file: bytes kept in memory, revalidated against the request's stat */
  | 'memory'
  /** EnableSendfile On, EnableMMAP Off (or too big to keep), small file: one synchronous read now */
  | 'read-now'
  /** EnableSendfile On: asynchronous reads into fresh buffers handed to the socket as they are */
  | 'stream-direct'
  /** EnableSendfile Off: asynchronous reads into one read buffer, copied out (as httpd copies without sendfile) */
  | 'stream-copy';

export interface FileBody {
  readonly route: FileRoute;
  /** The whole file's bytes for 'memory' and 'read-now'; undefined when the body is streamed. */
  readonly data: Buffer | undefined;
}

/** How many responses took each route in this process (cheap counters; tests and diagnostics). */
export const fileRouteCounts: Record<FileRoute, number> = { memory: 0, 'read-now': 0, 'stream-direct': 0, 'stream-copy': 0 };

/** A kept file: itself the body returned on a hit (no allocation per request). */
interface Entry extends FileBody { readonly route: 'memory'; readonly data: Buffer; ino: number; size: number; mtimeMs: number; ctimeMs: number }

const STREAM_DIRECT: FileBody = Object.freeze({ route: 'stream-direct', data: undefined });
const STREAM_COPY: FileBody = Object.freeze({ route: 'stream-copy', data: undefined });

/**
 * Small files' bytes kept in memory, keyed by path and validated against the stat the
 * directory walk made for this request (inode, size, mtime, ctime: any write changes ctime),
 * so a file changed between two requests is read again at once.
 */
class FileCache {
  private map = new Map<string, Entry>();
  private total = 0;

  /**
   * The body of the file at `path` (whose stat is `st`) for the merged EnableMMAP (`mmap`) and
   * EnableSendfile (`sendfile`) values, or null when the file cannot be read (httpd's 403).
   */
  body(path: string, st: fs.Stats, mmap: boolean, sendfile: boolean): FileBody | null {
    const size = st.size;
    if (mmap && size <= MAX_FILE) {
      const hit = this.map.get(path);
      if (hit !== undefined && hit.ino === st.ino && hit.size === size && hit.mtimeMs === st.mtimeMs && hit.ctimeMs === st.ctimeMs) {
        fileRouteCounts.memory++;
        return hit;
      }
      let data: Buffer;
      try { data = fs.readFileSync(fsPath(path)); } catch { return null; }
      // Changed since the walk's stat: send it from the file, without keeping it.
      if (data.length !== size) return this.streamed(sendfile);
      if (hit !== undefined) { this.total -= hit.size; this.map.delete(path); }
      if (this.total + size > MAX_TOTAL) { this.map.clear(); this.total = 0; }
      const e: Entry = { route: 'memory', data, ino: st.ino, size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
      this.map.set(path, e);
      this.total += size;
      fileRouteCounts.memory++;
      return e;
    }
    if (sendfile && size <= READ_NOW_MAX) {
      const data = readNow(path, size);
      if (data === null) return null;
      if (data !== undefined) {
        fileRouteCounts['read-now']++;
        return { route: 'read-now', data };
      }
      return this.streamed(true);
    }
    // The file is opened again when the body is sent; what httpd's open would refuse is a 403 now.
    try { fs.accessSync(fsPath(path), fs.constants.R_OK); } catch { return null; }
    return this.streamed(sendfile);
  }

  private streamed(sendfile: boolean): FileBody {
    if (sendfile) { fileRouteCounts['stream-direct']++; return STREAM_DIRECT; }
    fileRouteCounts['stream-copy']++;
    return STREAM_COPY;
  }

  /** Forgets every kept file (tests). */
  clear(): void { this.map.clear(); this.total = 0; }
}

/** The file's `size` bytes read at once; undefined when it holds fewer now; null when unreadable. */
function readNow(path: string, size: number): Buffer | null | undefined {
  let fd: number;
  try { fd = fs.openSync(fsPath(path), 'r'); } catch { return null; }
  try {
    const data = Buffer.allocUnsafe(size);
    let n = 0;
    while (n < size) {
      const got = fs.readSync(fd, data, n, size - n, n);
      if (got <= 0) return undefined;
      n += got;
    }
    return data;
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

export const fileCache = new FileCache();

/** Where a streamed file range goes (the connection). */
export interface FileSink {
  readonly destroyed: boolean;
  /** false: wait for drain() before writing more. The sink may keep `data` until it is sent. */
  write(data: Buffer): boolean;
  drain(): Promise<void>;
}

function readAt(fd: number, buf: Buffer, len: number, pos: number): Promise<number> {
  return new Promise((resolve, reject) => {
    fs.read(fd, buf, 0, len, pos, (err, n) => { if (err) reject(err); else resolve(n); });
  });
}

function closeFd(fd: number): void {
  fs.close(fd, () => { /* nothing to do about a failed close */ });
}

/**
 * Streams `length` bytes of the file from `start` with backpressure. `direct` (EnableSendfile
 * On): each read lands in a fresh buffer handed to the sink as it is; otherwise one read
 * buffer per response is reused and each piece copied out. Every read is asynchronous, so the
 * event loop never waits for the filesystem. A file that ends before the range does calls
 * `short` (the response cannot be completed) and stops.
 */
export async function streamFileRange(
  sink: FileSink, path: string, start: number, length: number, direct: boolean, short: () => void,
): Promise<void> {
  if (length <= 0) return;
  const fd = await new Promise<number>((resolve, reject) => {
    fs.open(fsPath(path), 'r', (err, fd) => { if (err) reject(err); else resolve(fd); });
  });
  try {
    let pos = start;
    let left = length;
    const readBuf = direct ? null : Buffer.allocUnsafe(Math.min(left, STREAM_CHUNK));
    while (left > 0 && !sink.destroyed) {
      const len = Math.min(STREAM_CHUNK, left);
      const buf = readBuf ?? Buffer.allocUnsafe(len);
      const n = await readAt(fd, buf, len, pos);
      if (n <= 0) { short(); return; }
      pos += n;
      left -= n;
      const out = readBuf !== null ? Buffer.from(buf.subarray(0, n)) : n === buf.length ? buf : buf.subarray(0, n);
      if (!sink.write(out)) await sink.drain();
    }
  } finally {
    closeFd(fd);
  }
}
