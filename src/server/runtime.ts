// The running form of one configuration generation: sorted hooks, the filter registry, and
// the services modules call on a request (subrequests, internal redirects, filters, URLs,
// logging). Built once after the configuration is read; read-only afterwards.

import type { ConfigContext } from './config/context.js';
import { buildHookLists, type HookLists } from './hooks.js';
import type { FilterSpec, Brigade } from './filters.js';
import { instantiate, insertFilter } from './filters.js';
import type { Request } from './request/request.js';
import type { MaybePromise } from './module.js';
import type { ServerRec } from './server-rec.js';
import { errnoOf } from './log/error-log.js';
import * as lifecycle from './request/lifecycle.js';
import * as response from './http/response.js';
import { coreDir, coreServer } from './core/config.js';
import { VirtualHosts } from './core/vhosts.js';
import { constructUrl } from './core/server-name.js';

export class Runtime {
  readonly hooks: HookLists;
  readonly filters = new Map<string, FilterSpec>();
  readonly vhosts: VirtualHosts;
  /** Generation counter: caches keyed on configuration compare it. */
  readonly generation: number;
  private static generations = 0;

  constructor(readonly ctx: ConfigContext) {
    this.hooks = buildHookLists(ctx.loaded);
    for (const m of ctx.loaded) for (const f of m.decl.filters ?? []) this.filters.set(f.name.toLowerCase(), f as FilterSpec);
    this.vhosts = new VirtualHosts(ctx);
    this.generation = ++Runtime.generations;
  }

  get mainServer(): ServerRec {
    return this.ctx.mainServer;
  }

  // ---- services for modules --------------------------------------------------------------

  /** A subrequest for a URI relative to r (ap_sub_req_lookup_uri): runs every phase up to
   *  fixups; its status is OK (200) or the error it met. */
  lookupUri(r: Request, uri: string): Promise<Request> {
    return lifecycle.subRequestLookupUri(this, r, uri);
  }

  /** A subrequest for a file in the same directory (ap_sub_req_lookup_file). */
  lookupFile(r: Request, filename: string): Promise<Request> {
    return lifecycle.subRequestLookupFile(this, r, filename);
  }

  /** Ends the request with an error status (ap_die): ErrorDocument or the canned page. */
  die(r: Request, status: number): MaybePromise<void> {
    return lifecycle.die(this, r, status);
  }

  /** Serves another URI in place of r (ap_internal_redirect). */
  internalRedirect(r: Request, uri: string): Promise<void> {
    return lifecycle.internalRedirect(this, r, uri);
  }

  /** Adds a named output filter to the request (ap_add_output_filter); false if unknown. */
  addOutputFilter(r: Request, name: string): boolean {
    const spec = this.filters.get(name.toLowerCase());
    if (!spec) return false;
    insertFilter(r.outputFilters, instantiate(spec, r));
    return true;
  }

  /** Adds a filter by spec (for modules that own the filter). */
  addFilter<S>(r: Request, spec: FilterSpec<S>): void {
    insertFilter(r.outputFilters, instantiate(spec, r) as never);
  }

  /** Absolute URL for a path on this server (ap_construct_url), honouring UseCanonicalName. */
  constructUrl(r: Request, uri: string): string {
    return constructUrl(r, uri);
  }

  /** The ServerSignature footer for generated pages (ap_psignature). */
  signature(r: Request, prefix: string): string {
    return response.signature(r, prefix);
  }

  /** ap_escape_html. */
  escapeHtml(s: string): string {
    return response.escapeHtml(s);
  }

  // ---- plumbing used by Request ------------------------------------------------------------

  writeResponse(r: Request, bb: Brigade): MaybePromise<void> {
    return response.passBrigade(this, r, bb);
  }

  logRequest(r: Request, module: string, level: number, message: string, err?: { code: number; text: string }, source?: string): void {
    const referer = r.headersIn.get('Referer');
    r.server.errorLog.write({
      module, level, message, source,
      errno: err,
      client: { ip: r.connection.remoteIp, port: r.connection.remotePort },
      referer,
      context: {
        localIp: r.connection.localIp,
        localPort: r.connection.localPort,
        requestHeader: (n) => r.headersIn.get(n),
        env: (n) => r.subprocessEnv.get(n),
        note: (n) => r.notes.get(n),
        serverName: r.server.serverHostname,
        canonicalName: r.hostname,
        keepalives: r.connection.keepalives,
      },
    });
  }

  errno(e: unknown): { code: number; text: string } | undefined {
    return errnoOf(e);
  }

  coreDir = coreDir;
  coreServer = coreServer;
}
