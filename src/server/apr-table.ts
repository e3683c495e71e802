// Case-insensitive access to the request's Map-based tables (subprocess_env, notes, headers
// kept as Maps) with apr_table_t's rules: apr_table_get/set/unset compare names with
// strcasecmp (ASCII only) and keep the spelling first stored.

/** ASCII lowercase (apr compares keys with strcasecmp, which ignores non-ASCII letters). */
export function lowerAscii(s: string): string {
  return /[A-Z]/.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s;
}

/** The key under which a name is stored, compared as apr_table_get does; undefined if absent. */
export function tableKey(m: ReadonlyMap<string, string>, name: string): string | undefined {
  if (m.has(name)) return name;
  if (m.size === 0) return undefined;
  const k = lowerAscii(name);
  for (const key of m.keys()) if (key.length === name.length && lowerAscii(key) === k) return key;
  return undefined;
}

/** apr_table_get on a Map: exact name first, then case-insensitively. */
export function tableGet(m: ReadonlyMap<string, string>, name: string): string | undefined {
  const v = m.get(name);
  if (v !== undefined) return v;
  const key = tableKey(m, name);
  return key === undefined ? undefined : m.get(key);
}

/** apr_table_set on a Map: replaces the value under the existing spelling of the name. */
export function tableSet(m: Map<string, string>, name: string, value: string): void {
  const key = tableKey(m, name);
  m.set(key ?? name, value);
}

/** apr_table_unset on a Map: every spelling of the name. */
export function tableUnset(m: Map<string, string>, name: string): void {
  m.delete(name);
  if (m.size === 0) return;
  const k = lowerAscii(name);
  for (const key of [...m.keys()]) if (key.length === name.length && lowerAscii(key) === k) m.delete(key);
}
