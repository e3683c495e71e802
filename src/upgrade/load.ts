// Loading a 2.2 configuration for the upgrade assistant: the main file, everything it
// includes, and the .htaccess files httpd 2.2 reads — found without being told (under every
// document root, Alias target and <Directory> path, and in the directories above them), by
// AccessFileName (the first name that exists in a directory wins, as in 2.2), and kept only
// where 2.2 reads them: the AllowOverride merged from the <Directory> sections for that
// directory is not None (2.2's default was All). A file 2.2 ignored stays untouched.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { splitWords } from '../server/config/lexer.js';
import { htaccessRead22 } from './access22.js';
import { is, readConfiguration, readDoc, type Upgrade } from './engine.js';
import type { Doc } from './doc.js';
import type { UpgradeOptions } from './model.js';
import { buildModel, walkRequest, type Model } from './scope.js';

/** Reads a configuration, what it includes and the .htaccess files 2.2 reads. */
export function loadConfiguration(file: string, opts: UpgradeOptions): Upgrade {
  const u = readConfiguration(file, opts);
  if (opts.htaccess !== false) loadHtaccess(u, opts.htaccess ?? []);
  return u;
}

const WILD = /[*?[]/;
/** Bounds on the search (a document root holding a whole file archive must not stall it). */
const MAX_DEPTH = 32;
const MAX_DIRS = 50000;

function loadHtaccess(u: Upgrade, dirs: readonly string[]): void {
  const names = accessFileNames(u);
  const candidates = new Set<string>();
  if (dirs.length > 0) {
    for (const d of dirs) searchTree(path.resolve(d), candidates);
  } else {
    const roots = servedRoots(u);
    for (const r of roots) searchTree(r, candidates);
    // 2.2 also reads the files in every directory above a root (from "/" down).
    for (const r of roots) for (let d = path.dirname(r); ; d = path.dirname(d)) { candidates.add(d); if (d === '/') break; }
  }
  const found: Doc[] = [];
  for (const dir of [...candidates].sort()) {
    for (const name of names) {
      const f = path.join(dir, name);
      let st: fs.Stats;
      try { st = fs.statSync(f); } catch { continue; }
      if (!st.isFile()) continue;
      const rel = path.relative(process.cwd(), f);
      found.push(readDoc(f, rel.startsWith('..') ? f : rel, 'htaccess', undefined));
      break; // the first name found is the one 2.2 reads
    }
  }
  if (found.length === 0) return;
  u.htaccess.push(...found);
  // Keep only the files some server's directory walk reads.
  const model = buildModel(u);
  const ignored = found.filter((d) => !readBy22(model, path.dirname(d.path)));
  if (ignored.length === 0) return;
  const drop = new Set(ignored);
  const keep = u.htaccess.filter((d) => !drop.has(d));
  u.htaccess.length = 0;
  u.htaccess.push(...keep);
  u.touched();
  for (const d of ignored) {
    u.report('defaults.allow-override', { doc: d, line: 0 }, 'note',
      '2.2 never read this file: AllowOverride None applies to its directory. It is left as it is and stays inactive in 2.4 (its AllowOverride is not changed).', '', '');
  }
}

/** Whether 2.2 reads the access file of a directory (for a request to a file in it). */
function readBy22(model: Model, dir: string): boolean {
  const key = dir.length > 1 && dir.endsWith('/') ? dir.slice(0, -1) : dir;
  const h = model.htaccess.get(key);
  if (!h) return false;
  const probe = path.join(dir, '__plume_probe__.html');
  return model.servers.some((s) => walkRequest(model, s, { url: '', file: probe }, htaccessRead22).chain.includes(h));
}

/** The names AccessFileName gives (the main server's; every server's other names after them). */
function accessFileNames(u: Upgrade): string[] {
  const out: string[] = [];
  const all = u.refs().filter((r) => r.node.kind === 'directive' && is(r.node, 'AccessFileName'));
  const top = all.filter((r) => !r.sections.some((s) => /^virtualhost$/i.test(s.name)));
  for (const r of [...top.slice(-1), ...all]) for (const w of splitWords(r.node.args)) if (!out.includes(w)) out.push(w);
  return out.length > 0 ? out : ['.htaccess'];
}

/** Where requests are mapped to files: every DocumentRoot, Alias/ScriptAlias target and
 *  <Directory> path (wildcards up to their first wildcard component). */
function servedRoots(u: Upgrade): string[] {
  const out = new Set<string>();
  const add = (p: string): void => {
    let d = path.resolve(u.serverRoot, p);
    if (WILD.test(d)) {
      const parts = d.split('/');
      const i = parts.findIndex((x) => WILD.test(x));
      d = parts.slice(0, i).join('/') || '/';
    }
    if (d !== '/') out.add(d.replace(/\/+$/, ''));
  };
  for (const r of u.refs()) {
    if (r.node.kind === 'directive' && is(r.node, 'DocumentRoot')) {
      const w = splitWords(r.node.args)[0];
      if (w) add(w);
    } else if (r.node.kind === 'directive' && is(r.node, 'Alias', 'ScriptAlias')) {
      const w = splitWords(r.node.args)[1];
      if (w) add(w);
    } else if (r.node.kind === 'section' && is(r.node, 'Directory')) {
      const w = splitWords(r.node.args)[0];
      if (w && w !== '~') add(w);
    }
  }
  if (!u.refs().some((r) => r.node.kind === 'directive' && is(r.node, 'DocumentRoot'))) add('htdocs');
  return [...out];
}

/** Every directory under a root (the root included), bounded in depth and number. */
function searchTree(root: string, into: Set<string>): void {
  const walk = (dir: string, depth: number): void => {
    if (depth > MAX_DEPTH || into.size >= MAX_DIRS || into.has(dir)) return;
    let ents: fs.Dirent[];
    try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    into.add(dir);
    for (const e of ents) if (e.isDirectory()) walk(path.join(dir, e.name), depth + 1);
  };
  walk(root, 0);
}
