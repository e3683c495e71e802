// .htaccess files: parsed once per (file, allowed overrides) and revalidated by stat on
// every use, so an edit is seen on the next request without re-reading unchanged files.

import { statSince, fsPath } from './stat-cache.js';
import * as fs from 'node:fs';
import type { Runtime } from '../runtime.js';
import type { Request } from './request.js';
import { parseConfig } from '../config/tree.js';
import { expandNodes, walkNodes, dirConfigOf } from '../config/build.js';
import { ConfigError } from '../config/errors.js';

export type HtaccessResult =
  | { kind: 'none' }
  | { kind: 'error'; status: number; message: string; errno?: { code: number; text: string } | undefined }
  | { kind: 'ok'; key: string; vector: unknown[] };

interface Entry {
  ino: number; size: number; mtimeMs: number; ctimeMs: number;
  result: HtaccessResult;
}

const caches = new WeakMap<Runtime, Map<string, Entry>>();
const NONE: HtaccessResult = { kind: 'none' };
let parseSeq = 0;

/** What the walk allows at this level: AllowOverride and AllowOverrideList. */
export interface Overrides {
  readonly override: number;
  readonly overrideOpts: number;
  readonly overrideList: ReadonlySet<string> | undefined;
}

export function readHtaccess(rt: Runtime, r: Request, file: string, c: Overrides): HtaccessResult {
  let st: fs.Stats | undefined;
  try {
    // A missing file answers undefined rather than an exception (most directories have none).
    st = statSince(file, r.readSeq);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return NONE;
    return { kind: 'error', status: 403, message: '', errno: rt.errno(e) };
  }
  if (st === undefined || !st.isFile()) return NONE;
  let cache = caches.get(rt);
  if (!cache) { cache = new Map(); caches.set(rt, cache); }
  const listKey = c.overrideList ? [...c.overrideList].sort().join(',') : '';
  const key = `${file}\0${r.server.id}\0${c.override}\0${c.overrideOpts}\0${listKey}`;
  const hit = cache.get(key);
  if (hit && hit.ino === st.ino && hit.size === st.size && hit.mtimeMs === st.mtimeMs && hit.ctimeMs === st.ctimeMs) return hit.result;
  let text: string;
  try {
    text = fs.readFileSync(fsPath(file), 'latin1');
  } catch (e) {
    return { kind: 'error', status: 403, message: '', errno: rt.errno(e) };
  }
  const dir = file.slice(0, file.lastIndexOf('/') + 1);
  const result = parse(rt, r, file, dir, text, c);
  cache.set(key, { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, result });
  return result;
}

function parse(rt: Runtime, r: Request, file: string, dir: string, text: string, c: Overrides): HtaccessResult {
  const vector: unknown[] = [];
  const core = rt.ctx.moduleBySymbol('core_module');
  if (core) dirConfigOf(vector, core, dir);
  try {
    const nodes = expandNodes(rt.ctx, parseConfig(text, file));
    walkNodes(rt.ctx, nodes, {
      server: r.server, vector, path: dir, override: c.override & ~32, overrideOpts: c.overrideOpts,
      overrideList: c.overrideList ?? null, parents: [], limited: undefined, htaccess: true,
    });
  } catch (e) {
    if (e instanceof ConfigError) return { kind: 'error', status: 500, message: e.detail };
    throw e;
  }
  return { kind: 'ok', key: `${++parseSeq}`, vector };
}
