// A header table as httpd's apr_table_t: ordered, case-insensitive names, several values
// per name. Used for headers in/out, err_headers_out; names keep the case they were set with.

/** Lower-cased header names, remembered: lookups use the same few constant names. */
const lowerNames = new Map<string, string>();
function lower(name: string): string {
  let k = lowerNames.get(name);
  if (k === undefined) {
    k = name.toLowerCase();
    if (lowerNames.size < 2048) lowerNames.set(name, k);
  }
  return k;
}

export class HeaderTable {
  /** Entries as triples: lower-cased key, name as set, value (one array per table). */
  private e: string[] = [];

  get size(): number { return this.e.length / 3; }

  private find(k: string, from = 0): number {
    const e = this.e;
    for (let i = from; i < e.length; i += 3) if (e[i] === k) return i;
    return -1;
  }
  get(name: string): string | undefined {
    const i = this.find(lower(name));
    return i < 0 ? undefined : this.e[i + 2];
  }
  getAll(name: string): string[] {
    const k = lower(name);
    const e = this.e;
    const out: string[] = [];
    for (let i = 0; i < e.length; i += 3) if (e[i] === k) out.push(e[i + 2]!);
    return out;
  }
  has(name: string): boolean {
    return this.find(lower(name)) >= 0;
  }
  /** apr_table_set: replaces every value of the name with one. */
  set(name: string, value: string): void {
    const k = lower(name);
    const i = this.find(k);
    if (i < 0) { this.e.push(k, name, value); return; }
    const e = this.e;
    e[i + 1] = name;
    e[i + 2] = value;
    for (let j = e.length - 3; j > i; j -= 3) if (e[j] === k) e.splice(j, 3);
  }
  /** apr_table_add: appends another value. */
  add(name: string, value: string): void {
    this.e.push(lower(name), name, value);
  }
  /** apr_table_merge: appends ", value" to the first value (or adds). */
  merge(name: string, value: string): void {
    const k = lower(name);
    const i = this.find(k);
    if (i < 0) { this.e.push(k, name, value); return; }
    const v = this.e[i + 2]!;
    this.e[i + 2] = v === '' ? value : `${v}, ${value}`;
  }
  /** merge(), answering whether the name was there already (one lookup for both). */
  mergeFound(name: string, value: string): boolean {
    const k = lower(name);
    const i = this.find(k);
    if (i < 0) { this.e.push(k, name, value); return false; }
    const v = this.e[i + 2]!;
    this.e[i + 2] = v === '' ? value : `${v}, ${value}`;
    return true;
  }
  unset(name: string): void {
    const k = lower(name);
    const e = this.e;
    for (let j = e.length - 3; j >= 0; j -= 3) if (e[j] === k) e.splice(j, 3);
  }
  clear(): void {
    this.e = [];
  }
  /** The entries as they are (a copy), for restore(). */
  snapshot(): string[] {
    return this.e.slice();
  }
  /** The entries of a snapshot (copied: the table stays modifiable). */
  restore(entries: readonly string[]): void {
    this.e = entries.slice();
  }
  /** [name, value] pairs in order. */
  entries(): [string, string][] {
    const e = this.e;
    const out: [string, string][] = [];
    for (let i = 0; i < e.length; i += 3) out.push([e[i + 1]!, e[i + 2]!]);
    return out;
  }
  /** Entry i (0 <= i < size) in order: its name as set, value, lower-cased name. For loops on
   *  the response path that would otherwise need a closure. */
  nameAt(i: number): string { return this.e[i * 3 + 1]!; }
  valueAt(i: number): string { return this.e[i * 3 + 2]!; }
  keyAt(i: number): string { return this.e[i * 3]!; }
  forEach(fn: (name: string, value: string, key: string) => void): void {
    const e = this.e;
    for (let i = 0; i < e.length; i += 3) fn(e[i + 1]!, e[i + 2]!, e[i]!);
  }
  /** Replaces value i in place (mod_headers edit). */
  mapValues(name: string, fn: (v: string) => string | undefined): void {
    const k = lower(name);
    const e = this.e;
    for (let i = e.length - 3; i >= 0; i -= 3) {
      if (e[i] !== k) continue;
      const v = fn(e[i + 2]!);
      if (v === undefined) e.splice(i, 3);
      else e[i + 2] = v;
    }
  }
  copy(): HeaderTable {
    const t = new HeaderTable();
    t.e = this.e.slice();
    return t;
  }
  /** apr_table_overlay(this, other): other's entries after ours. */
  overlay(other: HeaderTable): HeaderTable {
    const t = this.copy();
    t.e.push(...other.e);
    return t;
  }
}
