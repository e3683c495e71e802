// User and group names of numeric ids, as apr_uid_name_get / apr_gid_name_get find them
// (getpwuid_r / getgrgid_r through the "files" source): /etc/passwd and /etc/group are parsed
// once and re-read when they change.

import * as fs from 'node:fs';

interface IdTable {
  readonly stamp: string;
  readonly names: ReadonlyMap<number, string>;
}

const tables = new Map<string, IdTable>();

function table(file: string): ReadonlyMap<number, string> {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return new Map();
  }
  const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
  const t = tables.get(file);
  if (t && t.stamp === stamp) return t.names;
  const names = new Map<number, string>();
  let text = '';
  try {
    text = fs.readFileSync(file, 'latin1');
  } catch {
    text = '';
  }
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const f = line.split(':');
    if (f.length < 3) continue;
    const id = Number(f[2]);
    // The first entry for an id wins, as getpwuid returns the first match.
    if (Number.isInteger(id) && !names.has(id)) names.set(id, f[0]!);
  }
  tables.set(file, { stamp, names });
  return names;
}

/** apr_uid_name_get: the user name of a uid, or undefined. */
export function uidName(uid: number): string | undefined {
  return table('/etc/passwd').get(uid);
}

/** apr_gid_name_get: the group name of a gid, or undefined. */
export function gidName(gid: number): string | undefined {
  return table('/etc/group').get(gid);
}
