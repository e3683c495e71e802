// Access decisions as boolean formulas over request properties, and their 2.4 form: Require
// lines in RequireAll/RequireAny containers. 2.4's evaluation is three-valued (granted, denied,
// denied-for-want-of-a-user); the forms produced keep negation inside <RequireAll> next to a
// positive line, as mod_authz_core requires, and keep host checks and user checks apart so a
// denial by address stays 403 while a missing login stays 401.

/** Something a request has or not. Host atoms need no user; user atoms do. */
export type Atom =
  | { readonly k: 'ip' | 'host' | 'env'; readonly v: string }
  | { readonly k: 'valid-user' | 'file-owner' | 'file-group' }
  | { readonly k: 'user' | 'group' | 'dbm-group'; readonly v: readonly string[] }
  | { readonly k: 'other'; readonly v: string };

export type Formula =
  | { readonly t: 'true' }
  | { readonly t: 'false' }
  | { readonly t: 'atom'; readonly a: Atom }
  | { readonly t: 'not'; readonly f: Formula }
  | { readonly t: 'and'; readonly fs: readonly Formula[] }
  | { readonly t: 'or'; readonly fs: readonly Formula[] };

export const TRUE: Formula = { t: 'true' };
export const FALSE: Formula = { t: 'false' };
export const atom = (a: Atom): Formula => ({ t: 'atom', a });

export function isUserAtom(a: Atom): boolean {
  return a.k !== 'ip' && a.k !== 'host' && a.k !== 'env';
}

export function atomKey(a: Atom): string {
  if (a.k === 'valid-user' || a.k === 'file-owner' || a.k === 'file-group') return a.k;
  if (a.k === 'user' || a.k === 'group' || a.k === 'dbm-group') return `${a.k} ${a.v.join(' ')}`;
  if (a.k === 'ip' || a.k === 'host') return `${a.k} ${a.v.toLowerCase()}`;
  return `${a.k} ${(a as { v: string }).v}`;
}

export function key(f: Formula): string {
  switch (f.t) {
    case 'true': return 'T';
    case 'false': return 'F';
    case 'atom': return atomKey(f.a);
    case 'not': return `!(${key(f.f)})`;
    case 'and': return `&(${f.fs.map(key).join(',')})`;
    case 'or': return `|(${f.fs.map(key).join(',')})`;
  }
}

export function not(f: Formula): Formula {
  if (f.t === 'true') return FALSE;
  if (f.t === 'false') return TRUE;
  if (f.t === 'not') return f.f;
  // De Morgan, so negation only ever wraps an atom.
  if (f.t === 'and') return or(f.fs.map(not));
  if (f.t === 'or') return and(f.fs.map(not));
  return { t: 'not', f };
}

function flat(op: 'and' | 'or', fs: readonly Formula[]): Formula[] {
  const out: Formula[] = [];
  for (const f of fs) {
    if (f.t === op) out.push(...f.fs);
    else out.push(f);
  }
  return out;
}

export function and(fs: readonly Formula[]): Formula {
  const seen = new Set<string>();
  const out: Formula[] = [];
  for (const f of flat('and', fs)) {
    if (f.t === 'true') continue;
    if (f.t === 'false') return FALSE;
    const k = key(f);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(f);
  }
  for (const f of out) if (seen.has(key(not(f)))) return FALSE;
  if (out.length === 0) return TRUE;
  if (out.length === 1) return out[0]!;
  return { t: 'and', fs: out };
}

export function or(fs: readonly Formula[]): Formula {
  const seen = new Set<string>();
  const out: Formula[] = [];
  for (const f of flat('or', fs)) {
    if (f.t === 'false') continue;
    if (f.t === 'true') return TRUE;
    const k = key(f);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(f);
  }
  for (const f of out) if (seen.has(key(not(f)))) return TRUE;
  if (out.length === 0) return FALSE;
  if (out.length === 1) return out[0]!;
  return { t: 'or', fs: out };
}

// ---- rendering ------------------------------------------------------------------------------

function atomLine(a: Atom, negate: boolean): string {
  const n = negate ? 'not ' : '';
  switch (a.k) {
    case 'ip': case 'host': case 'env': return `Require ${n}${a.k} ${a.v}`;
    case 'valid-user': case 'file-owner': case 'file-group': return `Require ${n}${a.k}`;
    case 'user': case 'group': case 'dbm-group': return `Require ${n}${a.k} ${a.v.map(quote).join(' ')}`;
    case 'other': return `Require ${n}${a.v}`;
  }
}

/** A word as the configuration reader reads it back (quoted when it holds blanks or quotes). */
function quote(w: string): string {
  return /[\s"'\\]/.test(w) || w === '' ? `"${w.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : w;
}

/** Host atoms of one kind side by side merge into one line ("Require ip a b"): in an OR
 *  context the line grants when any matches; negated in an AND context it denies when any does. */
function mergeLines(items: readonly { a: Atom; negate: boolean }[]): string[] {
  const out: string[] = [];
  const groups = new Map<string, string[]>();
  const orderKeys: string[] = [];
  for (const { a, negate } of items) {
    if (a.k === 'ip' || a.k === 'host' || a.k === 'env') {
      const k = `${negate ? 'not ' : ''}${a.k}`;
      if (!groups.has(k)) { groups.set(k, []); orderKeys.push(k); }
      groups.get(k)!.push(a.v);
    } else {
      orderKeys.push(`#${out.length}`);
      out.push(atomLine(a, negate));
    }
  }
  const lines: string[] = [];
  let single = 0;
  for (const k of orderKeys) {
    if (k.startsWith('#')) { lines.push(out[single++]!); continue; }
    lines.push(`Require ${k} ${groups.get(k)!.join(' ')}`);
  }
  return lines;
}

/** The Require lines for a formula at the top of a section (an implicit <RequireAny>). */
export function render(f: Formula, step = '    '): string[] {
  return renderAny(f, step);
}

function renderAny(f: Formula, step: string): string[] {
  switch (f.t) {
    case 'true': return ['Require all granted'];
    case 'false': return ['Require all denied'];
    case 'atom': return [atomLine(f.a, false)];
    case 'not': return ['<RequireAll>', `${step}Require all granted`, `${step}${atomLine((f.f as { a: Atom }).a, true)}`, '</RequireAll>'];
    case 'and': return ['<RequireAll>', ...renderAll(f.fs, step).map((l) => step + l), '</RequireAll>'];
    case 'or': {
      const atoms: { a: Atom; negate: boolean }[] = [];
      const lines: string[] = [];
      const flush = (): void => { lines.push(...mergeLines(atoms)); atoms.length = 0; };
      for (const c of f.fs) {
        if (c.t === 'atom') { atoms.push({ a: c.a, negate: false }); continue; }
        flush();
        lines.push(...renderAny(c, step));
      }
      flush();
      return lines;
    }
  }
}

function renderAll(fs: readonly Formula[], step: string): string[] {
  const lines: string[] = [];
  const atoms: { a: Atom; negate: boolean }[] = [];
  let positive = false;
  const flush = (): void => { lines.push(...mergeLines(atoms)); atoms.length = 0; };
  for (const c of fs) {
    if (c.t === 'atom') { atoms.push({ a: c.a, negate: false }); positive = true; continue; }
    if (c.t === 'not') { atoms.push({ a: (c.f as { a: Atom }).a, negate: true }); continue; }
    flush();
    if (c.t === 'or') {
      lines.push('<RequireAny>', ...renderAny(c, step).map((l) => step + l), '</RequireAny>');
      positive = true;
    } else {
      lines.push(...renderAny(c, step));
      positive = true;
    }
  }
  flush();
  if (!positive) lines.unshift('Require all granted');
  return lines;
}

/** A formula's decision for a request, three-valued as mod_authz_core decides
 *  ('granted', 'denied', 'no-user': authentication needed). `has` answers atoms; user atoms
 *  answer undefined while no user is known. */
export function decide(f: Formula, has: (a: Atom) => boolean | undefined): 'granted' | 'denied' | 'no-user' {
  switch (f.t) {
    case 'true': return 'granted';
    case 'false': return 'denied';
    case 'atom': {
      const v = has(f.a);
      return v === undefined ? 'no-user' : v ? 'granted' : 'denied';
    }
    case 'not': {
      const v = decide(f.f, has);
      return v === 'granted' ? 'denied' : v === 'denied' ? 'granted' : 'no-user';
    }
    case 'and': {
      let r: 'granted' | 'denied' | 'no-user' = 'granted';
      for (const c of f.fs) {
        const v = decide(c, has);
        if (v === 'denied') return 'denied';
        if (v === 'no-user') r = 'no-user';
      }
      return r;
    }
    case 'or': {
      let r: 'granted' | 'denied' | 'no-user' = 'denied';
      for (const c of f.fs) {
        const v = decide(c, has);
        if (v === 'granted') return 'granted';
        if (v === 'no-user') r = 'no-user';
      }
      return r;
    }
  }
}
