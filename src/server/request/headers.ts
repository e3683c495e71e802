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
  private keys: string[] = [];   // lowercase
  private names: string[] = [];  // as set
  private vals: string[] = [];

  get size(): number { return this.keys.length; }

  get(name: string): string | undefined {
    const k = lower(name);
    const i = this.keys.indexOf(k);
    return i < 0 ? undefined : this.vals[i];
  }
  getAll(name: string): string[] {
    const k = lower(name);
    const out: string[] = [];
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i] === k) out.push(this.vals[i]!);
    return out;
  }
  has(name: string): boolean {
    return this.keys.includes(lower(name));
  }
  /** apr_table_set: replaces every value of the name with one. */
  set(name: string, value: string): void {
    const k = lower(name);
    const i = this.keys.indexOf(k);
    if (i < 0) { this.add(name, value); return; }
    this.names[i] = name;
    this.vals[i] = value;
    for (let j = this.keys.length - 1; j > i; j--) if (this.keys[j] === k) this.removeAt(j);
  }
  /** apr_table_add: appends another value. */
  add(name: string, value: string): void {
    this.keys.push(lower(name));
    this.names.push(name);
    this.vals.push(value);
  }
  /** apr_table_merge: appends ", value" to the first value (or adds). */
  merge(name: string, value: string): void {
    const i = this.keys.indexOf(lower(name));
    if (i < 0) this.add(name, value);
    else this.vals[i] = this.vals[i] === '' ? value : `${this.vals[i]}, ${value}`;
  }
  unset(name: string): void {
    const k = lower(name);
    for (let j = this.keys.length - 1; j >= 0; j--) if (this.keys[j] === k) this.removeAt(j);
  }
  clear(): void {
    this.keys = []; this.names = []; this.vals = [];
  }
  private removeAt(i: number): void {
    this.keys.splice(i, 1); this.names.splice(i, 1); this.vals.splice(i, 1);
  }
  /** [name, value] pairs in order. */
  entries(): [string, string][] {
    const out: [string, string][] = [];
    for (let i = 0; i < this.keys.length; i++) out.push([this.names[i]!, this.vals[i]!]);
    return out;
  }
  forEach(fn: (name: string, value: string, key: string) => void): void {
    for (let i = 0; i < this.keys.length; i++) fn(this.names[i]!, this.vals[i]!, this.keys[i]!);
  }
  /** Replaces value i in place (mod_headers edit). */
  mapValues(name: string, fn: (v: string) => string | undefined): void {
    const k = lower(name);
    for (let i = this.keys.length - 1; i >= 0; i--) {
      if (this.keys[i] !== k) continue;
      const v = fn(this.vals[i]!);
      if (v === undefined) this.removeAt(i);
      else this.vals[i] = v;
    }
  }
  copy(): HeaderTable {
    const t = new HeaderTable();
    t.keys = this.keys.slice(); t.names = this.names.slice(); t.vals = this.vals.slice();
    return t;
  }
  /** apr_table_overlay(this, other): other's entries after ours. */
  overlay(other: HeaderTable): HeaderTable {
    const t = this.copy();
    other.forEach((n, v) => t.add(n, v));
    return t;
  }
}
