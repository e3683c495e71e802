// ap_internal_fast_redirect (httpd's server/request.c): a request takes over the resource a
// subrequest found (mod_dir's DirectoryIndex, mod_negotiation's MultiViews) and goes on from
// there without running the phases again.

import type { Request } from './request.js';

/** apr_table_overlay for notes: `a`'s entries, then `b`'s names that `a` lacks. */
export function overlayNotes(a: Map<string, string>, b: Map<string, string>): Map<string, string> {
  const out = new Map(a);
  for (const [k, v] of b) if (!out.has(k)) out.set(k, v);
  return out;
}

/** ap_internal_fast_redirect(rr, r): r becomes the subrequest's resource and goes on from
 *  there (remaining fixups, insert_filter, handler) without running the phases again. */
export function fastRedirect(rr: Request, r: Request): void {
  r.noLocalCopy = r.noLocalCopy && rr.noLocalCopy;
  r.mtime = rr.mtime;
  r.uri = rr.uri;
  r.filename = rr.filename;
  r.canonicalFilename = rr.canonicalFilename;
  r.pathInfo = rr.pathInfo;
  r.args = rr.args;
  r.finfo = rr.finfo;
  r.handler = rr.handler;
  r.contentType = rr.contentType;
  r.contentEncoding = rr.contentEncoding;
  r.contentLanguages = rr.contentLanguages;
  r.perDirConfig = rr.perDirConfig;
  r.matchedSections = rr.matchedSections;
  r.usedPathInfo = rr.usedPathInfo;
  r.notes = overlayNotes(rr.notes, r.notes);
  r.headersOut = rr.headersOut.overlay(r.headersOut);
  r.errHeadersOut = rr.errHeadersOut.overlay(r.errHeadersOut);
  const env = new Map(rr.subprocessEnv);
  for (const [k, v] of r.subprocessEnv) if (!env.has(k)) env.set(k, v);
  r.subprocessEnv = env;
  // httpd moves the subrequest's filter chain over; filters are bound to their request here,
  // so the filters the subrequest added (AddOutputFilter...) are added to r afresh.
  for (const f of rr.outputFilters) {
    if (f.removed) continue;
    if (r.outputFilters.some((g) => g.spec === f.spec)) continue;
    r.rt.addFilter(r, f.spec);
  }
}

