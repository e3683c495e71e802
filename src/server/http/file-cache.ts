// Small static files kept in memory, keyed by path and validated against the stat the
// directory walk already made (inode, size, mtime): a changed file is re-read at once.

import * as fs from 'node:fs';
import { fsPath } from '../request/walk.js';

const MAX_FILE = 256 * 1024;
const MAX_TOTAL = 64 * 1024 * 1024;

interface Entry { ino: number; size: number; mtimeMs: number; data: Buffer | undefined }

class FileCache {
  private map = new Map<string, Entry>();
  private total = 0;

  /** The file's bytes when small (undefined for large files), or null when unreadable. */
  get(path: string, st: fs.Stats): { data: Buffer | undefined } | null {
    const hit = this.map.get(path);
    if (hit && hit.ino === st.ino && hit.size === st.size && hit.mtimeMs === st.mtimeMs) return hit;
    if (st.size > MAX_FILE) {
      try { fs.accessSync(fsPath(path), fs.constants.R_OK); } catch { return null; }
      return { data: undefined };
    }
    let data: Buffer;
    try { data = fs.readFileSync(fsPath(path)); } catch { return null; }
    if (data.length !== st.size) return { data: undefined };
    if (hit) this.total -= hit.size;
    if (this.total + data.length > MAX_TOTAL) { this.map.clear(); this.total = 0; }
    const e = { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, data };
    this.map.set(path, e);
    this.total += data.length;
    return e;
  }
}

export const fileCache = new FileCache();
