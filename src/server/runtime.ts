// The running form of one configuration generation: sorted hooks, the filter registry, and
// the services modules call on a request (subrequests, internal redirects, filters, URLs,
// logging). Built once after the configuration is read; read-only afterwards.

import type { ConnectionTap } from './connection-tap.js';
import type { ConfigContext } from './config/context.js';
import { buildHookLists, type HookLists } from './hooks.js';
import type { FilterSpec, Brigade, FilterInstance, InputFilterSpec } from './filters.js';
import { instantiate, instantiateInput, insertFilter, linkChain } from './filters.js';
import { readBody } from './http/http-in.js';
import type { ConnRec, Request } from './request/request.js';
import type { MaybePromise } from './module.js';
import type { ServerRec } from './server-rec.js';
import { errnoOf } from './log/error-log.js';
import * as lifecycle from './request/lifecycle.js';
import * as response from './http/response.js';
import { coreDir, coreServer } from './core/config.js';
import { VirtualHosts } from './core/vhosts.js';
import { constructUrl, getServerName, getServerPort } from './core/server-name.js';
import { serverBanner } from './version.js';
import { globals } from './core/globals.js';
import type { ConnectionLayer, ConnectionProcessor } from './http/connection-layer.js';

export class Runtime {
  readonly hooks: HookLists;
  /** Output filters by lower-cased name (ap_register_output_filter's registry). */
  readonly filters = new Map<string, FilterSpec>();
  /** Input filters by lower-cased name (a name space of their own, as in httpd). */
  readonly inputFilterSpecs = new Map<string, InputFilterSpec>();
  readonly vhosts: VirtualHosts;
  /** What runs below HTTP on accepted connections (mod_ssl's TLS), in load order. */
  readonly connectionLayers: readonly ConnectionLayer[];
  /** A module offers protocols other than HTTP/1.1 (protocols.ts: ALPN, Upgrade, prefaces). */
  readonly protocolSwitching: boolean;
  /** Protocols other than HTTP that take whole connections (mod_echo), in load order. */
  readonly connectionProcessors: readonly ConnectionProcessor[];
  /** Connection-level filters (mod_dumpio): per connection, its tap or null. */
  readonly connectionTaps: readonly ((c: ConnRec) => ConnectionTap | null)[];
  /** Generation counter: caches keyed on configuration compare it. */
  readonly generation: number;
  private static generations = 0;

  constructor(readonly ctx: ConfigContext) {
    this.hooks = buildHookLists(ctx.loaded);
    for (const m of ctx.loaded) {
      for (const f of m.decl.filters ?? []) this.filters.set(f.name.toLowerCase(), f as FilterSpec);
      for (const f of m.decl.inputFilters ?? []) this.inputFilterSpecs.set(f.name.toLowerCase(), f as InputFilterSpec);
    }
    for (const m of ctx.loaded) {
      const conf = m.decl.configuredFilters?.(ctx);
      if (!conf) continue;
      for (const f of conf.output) this.filters.set(f.name.toLowerCase(), f);
      for (const f of conf.input) this.inputFilterSpecs.set(f.name.toLowerCase(), f);
    }
    this.vhosts = new VirtualHosts(ctx);
    this.connectionLayers = ctx.providerNames('connection_layer').map((n) => ctx.provider('connection_layer', n)!.open(ctx)).filter((l): l is ConnectionLayer => l !== null);
    this.protocolSwitching = ctx.providerNames('protocol_switch').length > 0;
    this.connectionProcessors = ctx.providerNames('process_connection').map((n) => ctx.provider('process_connection', n)!.open(ctx)).filter((p): p is ConnectionProcessor => p !== null);
    this.connectionTaps = ctx.providerNames('connection_tap').map((n) => ctx.provider('connection_tap', n)!.open(ctx)).filter((t): t is (c: ConnRec) => ConnectionTap | null => t !== null);
    this.generation = ++Runtime.generations;
  }

  get mainServer(): ServerRec {
    return this.ctx.mainServer;
  }

  // ---- services for modules --------------------------------------------------------------

  /** A subrequest for a URI relative to r (ap_sub_req_lookup_uri): runs every phase up to
   *  fixups; its status is OK (200) or the error it met. `toBeRun`: the caller runs it into a
   *  filter chain afterwards (httpd's non-NULL next_filter), so a quick handler may take it. */
  lookupUri(r: Request, uri: string, method?: string, toBeRun?: boolean): Promise<Request> {
    return lifecycle.subRequestLookupUri(this, r, uri, method, toBeRun);
  }

  /** A subrequest for a file in the same directory (ap_sub_req_lookup_file). */
  lookupFile(r: Request, filename: string): Promise<Request> {
    return lifecycle.subRequestLookupFile(this, r, filename);
  }

  /** Ends the request with an error status (ap_die): ErrorDocument or the canned page.
   *  `recursiveError`: the status already being answered when this one arose (ap_die_r's),
   *  which the page then mentions; 200 (the default) for none. */
  die(r: Request, status: number, recursiveError = 200): MaybePromise<void> {
    return lifecycle.die(this, r, status, recursiveError);
  }

  /** Serves another URI in place of r (ap_internal_redirect). */
  internalRedirect(r: Request, uri: string): Promise<void> {
    return lifecycle.internalRedirect(this, r, uri);
  }

  /** ap_internal_redirect_handler: as internalRedirect, the content type carried over. */
  internalRedirectHandler(r: Request, uri: string): Promise<void> {
    return lifecycle.internalRedirectHandler(this, r, uri);
  }

  /** Adds a named output filter to the request (ap_add_output_filter); false if unknown. */
  addOutputFilter(r: Request, name: string): boolean {
    const spec = this.filters.get(name.toLowerCase());
    if (!spec) return false;
    insertFilter(r.outputFilters, instantiate(spec, r));
    if (r.filterHead !== null) linkChain(r.outputFilters);
    return true;
  }

  /** Adds a filter by spec (for modules that own the filter); returns its instance. A filter
   *  added while the response is under way (by a filter, as mod_proxy_html adds xml2enc) is
   *  linked into the running chain in its place. */
  addFilter<S>(r: Request, spec: FilterSpec<S>): FilterInstance<S> {
    const f = instantiate(spec, r);
    insertFilter(r.outputFilters, f as unknown as FilterInstance);
    if (r.filterHead !== null) linkChain(r.outputFilters);
    return f;
  }

  /** The output filter registered under `name` (ap_get_output_filter_handle). */
  outputFilter(name: string): FilterSpec | undefined {
    return this.filters.get(name.toLowerCase());
  }

  /** Takes the not yet started output filters named `name` out of r's chain
   *  (ap_remove_output_filter_byhandle); true when one was there. */
  removeOutputFilter(r: Request, name: string): boolean {
    const lc = name.toLowerCase();
    let found = false;
    for (const f of r.outputFilters) {
      if (f.spec.name.toLowerCase() === lc && !f.removed) { f.remove(); found = true; }
    }
    return found;
  }

  /** Adds a named input filter to the request (ap_add_input_filter); false if unknown. */
  addInputFilter(r: Request, name: string): boolean {
    const spec = this.inputFilterSpecs.get(name.toLowerCase());
    if (!spec) return false;
    this.addInputFilterSpec(r, spec);
    return true;
  }

  /** Adds an input filter by spec. Filters added after the body started being read apply
   *  to what is left of it. */
  addInputFilterSpec<S>(r: Request, spec: InputFilterSpec<S>): void {
    const f = instantiateInput(spec, r);
    if (r.inputHead !== null) {
      // The chain is linked: put the filter in place by type.
      let prev: typeof r.inputHead | null = null;
      let cur: typeof r.inputHead | null = r.inputHead;
      while (cur !== null && cur.spec.type <= spec.type) { prev = cur; cur = cur.next; }
      (f as unknown as { next: typeof cur }).next = cur;
      if (prev === null) r.inputHead = f as never; else prev.next = f as never;
      return;
    }
    insertFilter(r.inputFilters, f as never);
  }

  /** The next piece of the request body through r's input filters (ap_get_brigade). */
  readBody(r: Request): Promise<Buffer | null> {
    return readBody(r);
  }

  /** Runs a subrequest made by lookupUri/lookupFile (ap_run_sub_req): its handler's output
   *  goes through its own filters, then into `next` (the calling filter's f.next), without
   *  its EOS. Resolves to the handler's status (OK, or an error the caller reports). */
  runSubRequest(sub: Request, next: FilterInstance | null): Promise<number> {
    return lifecycle.runSubRequest(this, sub, next);
  }

  /** Absolute URL for a path on this server (ap_construct_url), honouring UseCanonicalName. */
  constructUrl(r: Request, uri: string): string {
    return constructUrl(r, uri);
  }

  /** ap_get_server_name (UseCanonicalName). */
  serverName(r: Request): string {
    return getServerName(r);
  }

  /** ap_get_server_port (UseCanonicalName, UseCanonicalPhysicalPort). */
  serverPort(r: Request): number {
    return getServerPort(r);
  }

  /** ap_get_server_banner: the product string per ServerTokens. */
  serverBanner(): string {
    return serverBanner(globals(this.ctx).serverTokens);
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
      client: { ip: r.useragentIp, port: r.connection.remotePort },
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
