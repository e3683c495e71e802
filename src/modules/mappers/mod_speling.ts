// mod_speling (modules/mappers/mod_speling.c): a GET or HEAD for a file that does not exist is
// compared with the names in its directory, case-insensitively: one best candidate answers
// 301 to it, several (or only names sharing the base name) answer 300 with httpd's list of
// documents (the "variant-list" note the error page shows, and VARIANTS in the environment).
//
//  - httpd's spdist: miscapitalised, one pair of characters transposed, one character missing,
//    one extra, one mistyped; CheckCaseOnly keeps only the first; CheckBasenameMatch (on by
//    default) adds names whose part before the first dot matches ("common basename").
//  - Candidates keep directory order (readdir's, "." and ".." first, as APR reads them) and are
//    sorted by quality; a lone best one redirects, a tie or only base-name matches make a list.
//  - The configuration has no merge: the most specific section's replaces the others whole.

import * as fs from 'node:fs';
import {
  DECLINED, HOOK_LAST, MODULE_API_VERSION, OK, OR_OPTIONS,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_INFO } from '../../server/log/levels.js';
import { escapeUri } from '../../server/util-script.js';
import { escapeHtml } from '../../server/http/response.js';
import { fsPath } from '../../server/request/stat-cache.js';

interface SpelingDir {
  enabled: boolean;
  checkCaseOnly: boolean;
  checkBasenameMatch: boolean;
}

const createConfig = (): SpelingDir => ({ enabled: false, checkCaseOnly: false, checkBasenameMatch: true });

/** httpd's sp_reason, best first. */
export const enum Reason {
  Identical = 0, Miscapitalized, Transposition, MissingChar, ExtraChar, SimpleTypo, VeryDifferent,
}

const REASON_TEXT = [
  'identical', 'miscapitalized', 'transposed characters', 'character missing',
  'extra character', 'mistyped character', 'common basename',
];

/** ASCII lowercase, as apr_tolower / strcasecmp compare in the C locale. */
function lower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/** spdist: how `t` (a name in the directory) differs from `s` (the name asked for). */
export function spdist(s: string, t: string): Reason {
  const ls = lower(s), lt = lower(t);
  let i = 0;
  while (i < ls.length && i < lt.length && ls[i] === lt[i]) i++;
  if (i === ls.length && i === lt.length) return Reason.Miscapitalized;
  const rs = ls.slice(i), rt = lt.slice(i);
  if (rs.length > 0) {
    if (rt.length > 0) {
      if (rs.length > 1 && rt.length > 1 && rs[0] === rt[1] && rt[0] === rs[1] && rs.slice(2) === rt.slice(2)) return Reason.Transposition;
      if (rs.slice(1) === rt.slice(1)) return Reason.SimpleTypo;
    }
    if (rs.slice(1) === rt) return Reason.ExtraChar;
  }
  if (rt.length > 0 && rs === rt.slice(1)) return Reason.MissingChar;
  return Reason.VeryDifferent;
}

interface Candidate {
  readonly name: string;
  readonly quality: Reason;
}

/** The candidates among `entries` (in directory order) for the name `bad`, sorted best first
 *  (stable); null when `bad` itself is there (exported for the tests). */
export function findCandidates(bad: string, entries: readonly string[], cfg: Readonly<SpelingDir>): Candidate[] | null {
  const out: Candidate[] = [];
  const lbad = lower(bad);
  const dot = bad.indexOf('.');
  const dotloc = dot < 0 ? bad.length : dot;
  for (const name of entries) {
    if (name === bad) return null;
    if (lower(name) === lbad) {
      out.push({ name, quality: Reason.Miscapitalized });
      continue;
    }
    if (!cfg.checkCaseOnly) {
      const q = spdist(bad, name);
      if (q !== Reason.VeryDifferent) {
        out.push({ name, quality: q });
        continue;
      }
    }
    if (cfg.checkBasenameMatch) {
      const d = name.indexOf('.');
      const entloc = d < 0 ? name.length : d;
      if (dotloc === entloc && lower(bad.slice(0, dotloc)) === lower(name.slice(0, dotloc))) {
        out.push({ name, quality: Reason.VeryDifferent });
      }
    }
  }
  return out.sort((a, b) => a.quality - b.quality);
}

/** The directory's names as apr_dir_read gives them: "." and "..", then readdir's order. */
async function readNames(dir: string): Promise<string[] | null> {
  let d: fs.Dir;
  try {
    d = await fs.promises.opendir(fsPath(dir) as string, { encoding: 'latin1' });
  } catch {
    return null;
  }
  const names = ['.', '..'];
  try {
    for await (const e of d) names.push(e.name);
  } catch {
    // a directory that fails half way is read as far as it went, as httpd's loop stops
  }
  return names;
}

/** check_speling (fixups, last). */
async function checkSpeling(r: Request): Promise<number> {
  const cfg = self.dir(r);
  if (!cfg.enabled) return DECLINED;
  if (r.method !== 'GET' && r.method !== 'HEAD') return DECLINED;
  if (r.finfo !== null) return DECLINED;
  if (r.proxyreq !== 0 || r.filename === '') return DECLINED;
  if (r.main !== null) return DECLINED;
  const filoc = r.filename.lastIndexOf('/');
  if (filoc < 0 || r.uri === '/') return DECLINED;
  const good = r.filename.slice(0, filoc);
  const bad = r.filename.slice(filoc + 1);
  const postgood = bad + r.pathInfo;
  if (postgood.length > r.uri.length || !r.uri.endsWith(postgood)) return DECLINED;
  const url = r.uri.slice(0, r.uri.length - postgood.length);
  const names = await readNames(good === '' ? '/' : good);
  if (names === null) return DECLINED;
  const candidates = findCandidates(bad, names, cfg);
  if (candidates === null || candidates.length === 0) return OK;

  const ref = r.headersIn.get('Referer');
  const query = r.args;
  const first = candidates[0]!;
  if (first.quality !== Reason.VeryDifferent && (candidates.length === 1 || first.quality !== candidates[1]!.quality)) {
    let nuri = escapeUri(url + first.name + r.pathInfo);
    if (query !== undefined) nuri += '?' + query;
    r.headersOut.set('Location', r.rt.constructUrl(r, nuri));
    if (r.wantsLog('speling', APLOG_INFO)) {
      r.log('speling', APLOG_INFO, ref !== undefined
        ? `AH03224: Fixed spelling: ${r.uri} to ${nuri} from ${ref}`
        : `AH03225: Fixed spelling: ${r.uri} to ${nuri}`);
    }
    return 301;
  }

  let t = `The document name you requested (<code>${escapeHtml(r.uri)}</code>) could not be found on this server.\n` +
    'However, we found documents with names similar to the one you requested.<p>Available documents:\n<ul>\n';
  const v: string[] = [];
  candidates.forEach((c, i) => {
    const reason = REASON_TEXT[c.quality]!;
    const vuri = url + c.name + r.pathInfo + (query !== undefined ? '?' + query : '');
    // httpd joins the pieces of each entry with ',' as well as the entries (apr_array_pstrcat).
    v.push('"', escapeUri(vuri), '";"', reason, '"');
    t += `<li><a href="${escapeUri(vuri)}">${escapeHtml(vuri)}</a> (${reason})\n`;
    if (i > 0 && i < candidates.length - 1 && c.quality !== Reason.VeryDifferent && candidates[i + 1]!.quality === Reason.VeryDifferent) {
      t += '</ul>\nFurthermore, the following related documents were found:\n<ul>\n';
    }
  });
  t += '</ul>\n';
  if (ref !== undefined) t += `Please consider informing the owner of the referring page <tt>${escapeHtml(ref)}</tt> about the broken link.\n`;
  r.notes.set('variant-list', t);
  const variants = v.join(',');
  const prev = r.subprocessEnv.get('VARIANTS');
  r.subprocessEnv.set('VARIANTS', prev === undefined ? variants : `${prev}, ${variants}`);
  if (r.wantsLog('speling', APLOG_INFO)) {
    r.log('speling', APLOG_INFO, ref !== undefined
      ? `AH03226: Spelling fix: ${r.uri}: ${candidates.length} candidates from ${ref}`
      : `AH03227: Spelling fix: ${r.uri}: ${candidates.length} candidates`);
  }
  return 300;
}

type Cmd = CmdParms<SpelingDir, SpelingDir>;

const self = defineModule<SpelingDir, SpelingDir>({
  name: 'speling_module',
  source: 'mod_speling.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: createConfig,
  createDirConfig: createConfig,
  directives: [
    directive<SpelingDir, SpelingDir, 'FLAG'>({ name: 'CheckSpelling', args: 'FLAG', where: OR_OPTIONS, help: 'whether or not to fix miscapitalized/misspelled requests', handler: (cmd: Cmd, on: boolean) => { cmd.dir.enabled = on; } }),
    directive<SpelingDir, SpelingDir, 'FLAG'>({ name: 'CheckCaseOnly', args: 'FLAG', where: OR_OPTIONS, help: 'whether or not to fix only miscapitalized requests', handler: (cmd: Cmd, on: boolean) => { cmd.dir.checkCaseOnly = on; } }),
    directive<SpelingDir, SpelingDir, 'FLAG'>({ name: 'CheckBasenameMatch', args: 'FLAG', where: OR_OPTIONS, help: 'whether or not to fix files with the same base name', handler: (cmd: Cmd, on: boolean) => { cmd.dir.checkBasenameMatch = on; } }),
  ],
  hooks: { fixups: { fn: checkSpeling, order: HOOK_LAST } },
});

export default self;
