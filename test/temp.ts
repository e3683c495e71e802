// Temporary directories for tests that leave /tmp as they found it: tempDir() makes one under
// os.tmpdir() and removes it when the test file's process exits (node --test runs each file in
// its own process), however its tests ended. A test that can remove its directory earlier
// (a server's root once the server has stopped) still may; removing twice is harmless.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const made = new Set<string>();

/** Makes every entry under `p` writable and searchable, so that a tree a test made
 *  unreadable (mode 000 files, 0 directories) can be removed by a user who is not root. */
function unlock(p: string): void {
  let st: fs.Stats;
  try { st = fs.lstatSync(p); } catch { return; }
  if (st.isSymbolicLink()) return;
  try { fs.chmodSync(p, st.isDirectory() ? 0o700 : 0o600); } catch { /* not ours */ }
  if (!st.isDirectory()) return;
  let names: string[] = [];
  try { names = fs.readdirSync(p); } catch { return; }
  for (const n of names) unlock(path.join(p, n));
}

/** Removes a directory made by tempDir() (now rather than at exit). */
export function removeTempDir(dir: string): void {
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    unlock(dir);
    try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* reported by the leak check */ }
  }
  made.delete(dir);
}

process.on('exit', () => {
  for (const d of [...made]) removeTempDir(d);
});

/** A new directory under os.tmpdir() named `prefix` + 6 random characters (mkdtemp), removed
 *  at the latest when this process exits. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.add(dir);
  return dir;
}
