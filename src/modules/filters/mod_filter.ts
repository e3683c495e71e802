// mod_filter (modules/filters/mod_filter.c): smart filters. FilterDeclare names a filter slot,
// FilterProvider gives it providers (registered output filters) chosen per response by a 2.4
// expression, FilterChain puts slots on the request's chain (+name, @name, -name, =name, !),
// FilterProtocol says what a provider does to the response, FilterTrace logs what passes, and
// AddOutputFilterByType (moved here in 2.4) is a slot per filter chosen by Content-Type.
//
// As in httpd, a slot's providers are tried last-declared first, on the response's first
// brigade (so the handler's headers and Content-Type are known), and only for a 200 unless
// filter-errordocs is set. Slots live in the section that declares them: a FilterProvider in
// another section declares a slot of its own there, which replaces the outer one when the
// sections merge.

import {
  defineModule, directive, MODULE_API_VERSION, OR_OPTIONS, OR_FILEINFO, RSRC_CONF, ACCESS_CONF, HOOK_MIDDLE,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import {
  FTYPE_CONNECTION, FTYPE_CONTENT_SET, FTYPE_NETWORK, FTYPE_PROTOCOL, FTYPE_RESOURCE, instantiate,
  type Brigade, type FilterInstance, type FilterSpec,
} from '../../server/filters.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_TRACE2, APLOG_TRACE4, APLOG_WARNING } from '../../server/log/levels.js';
import { evalBool, isFailure, parseExprCmd, type BoolExpr } from '../../expr/index.js';

// httpd's AP_FILTER_PROTO_* bits.
export const PROTO_CHANGE = 0x01;
export const PROTO_CHANGE_LENGTH = 0x02;
export const PROTO_NO_BYTERANGE = 0x04;
export const PROTO_NO_PROXY = 0x08;
export const PROTO_NO_CACHE = 0x10;
export const PROTO_TRANSFORM = 0x20;

interface Provider {
  /** The registered output filter that does the work. */
  readonly spec: FilterSpec;
  readonly expr: BoolExpr | undefined;
  readonly types: readonly string[] | undefined;
}

/** A smart filter slot (the ap_filter_rec_t filter_declare makes). Its providers and
 *  protocol flags are completed by later directives of the same section. */
interface SmartFilter {
  readonly name: string;
  type: number;
  /** Tried in this order: the last FilterProvider first. */
  providers: Provider[];
  protoFlags: number;
  debug: number;
  readonly spec: FilterSpec<HarnessState>;
}

export interface FilterDir {
  /** Slots by name (case-sensitive, as httpd's hash). */
  live: Map<string, SmartFilter>;
  /** The chain; null marks a reset (`!` or `=`): what came before it is dropped. */
  chain: (string | null)[] | undefined;
}

function createDirConfig(): FilterDir {
  return { live: new Map(), chain: undefined };
}

/** filter_merge: slots overlaid (the inner section's win); chains joined, a reset in either
 *  dropping what precedes it. */
function mergeDirConfig(base: Readonly<FilterDir>, add: Readonly<FilterDir>): FilterDir {
  let live: Map<string, SmartFilter>;
  if (add.live.size === 0) live = base.live;
  else if (base.live.size === 0) live = add.live;
  else live = new Map([...base.live, ...add.live]);
  let chain: (string | null)[] | undefined;
  if (base.chain !== undefined && add.chain !== undefined) {
    const out: (string | null)[] = [];
    for (const n of [...base.chain, ...add.chain]) {
      if (n === null) out.length = 0;
      out.push(n);
    }
    chain = out;
  } else {
    chain = add.chain ?? base.chain;
  }
  return { live, chain };
}

/** Protocol flags FilterProtocol gave registered filters as providers (httpd sets them on the
 *  filter's own record, for every smart filter using it). */
let providerFlags = new Map<string, number>();

type Cmd = CmdParms<undefined, FilterDir>;

/** The section's slots, writable while its directives are read. */
function liveOf(cmd: Cmd): Map<string, SmartFilter> {
  return cmd.dir.live;
}

function declare(cmd: Cmd, fname: string, place: string | undefined): SmartFilter {
  let type = FTYPE_RESOURCE;
  if (place !== undefined) {
    const p = place.toUpperCase();
    if (p === 'CONTENT_SET') type = FTYPE_CONTENT_SET;
    else if (p === 'PROTOCOL') type = FTYPE_PROTOCOL;
    else if (p === 'CONNECTION') type = FTYPE_CONNECTION;
    else if (p === 'NETWORK') type = FTYPE_NETWORK;
  }
  const sf: SmartFilter = {
    name: fname, type, providers: [], protoFlags: 0, debug: 0,
    spec: undefined as unknown as FilterSpec<HarnessState>,
  };
  (sf as { spec: FilterSpec<HarnessState> }).spec = harnessSpec(sf);
  liveOf(cmd).set(fname, sf);
  return sf;
}

function filterDeclare(cmd: Cmd, fname: string, place: string | undefined): string | undefined {
  declare(cmd, fname, place);
  return undefined;
}

/** The registered output filter `name` among the modules loaded so far
 *  (ap_get_output_filter_handle). */
function registeredFilter(cmd: Cmd, name: string): FilterSpec | undefined {
  const lc = name.toLowerCase();
  for (const m of cmd.ctx.loaded) {
    for (const f of m.decl.filters ?? []) if (f.name.toLowerCase() === lc) return f;
  }
  return undefined;
}

function addProvider(cmd: Cmd, fname: string, pname: string, exprText: string | undefined, types: readonly string[] | undefined): string | undefined {
  const spec = registeredFilter(cmd, pname);
  if (spec === undefined) return `Unknown filter provider ${pname}`;
  let sf = liveOf(cmd).get(fname);
  if (sf === undefined) {
    sf = declare(cmd, fname, undefined);
    sf.type = spec.type;
  }
  let expr: BoolExpr | undefined;
  if (exprText !== undefined) {
    const parsed = parseExprCmd(cmd as CmdParms<unknown, unknown>, exprText, 0, 'filter');
    if (!parsed.ok) return `Error parsing FilterProvider expression:${parsed.error}`;
    expr = parsed.expr;
  }
  sf.providers.unshift({ spec, expr, types });
  return undefined;
}

function filterProvider(cmd: Cmd, fname: string, pname: string, expr: string): string | undefined {
  return addProvider(cmd, fname, pname, expr, undefined);
}

function chainOf(cmd: Cmd): (string | null)[] {
  if (cmd.dir.chain === undefined) cmd.dir.chain = [];
  return cmd.dir.chain;
}

function filterChain(cmd: Cmd, arg: string): string | undefined {
  const chain = chainOf(cmd);
  const name = arg.slice(1);
  switch (arg[0]) {
    case '+': chain.push(name); break;
    case '@': chain.unshift(name); break;
    case '-': {
      // httpd unlinks the matching entries after the first (any case), or the first alone.
      if (chain.length > 0) {
        if (chain[0] !== null && chain[0]!.toLowerCase() === name.toLowerCase()) chain.shift();
        else {
          for (let i = 1; i < chain.length; i++) {
            const n = chain[i];
            if (n !== null && n !== undefined && n.toLowerCase() === name.toLowerCase()) { chain.splice(i, 1); i--; }
          }
        }
      }
      break;
    }
    case '!': chain.length = 0; chain.push(null); break;
    case '=': chain.length = 0; chain.push(null, name); break;
    default: chain.push(arg);
  }
  return undefined;
}

function filterTrace(cmd: Cmd, fname: string, level: string): string | undefined {
  const sf = liveOf(cmd).get(fname);
  if (sf === undefined) return `Undeclared smart filter ${fname}`;
  const m = /^\s*([+-]?\d+)/.exec(level);
  sf.debug = m ? Number(m[1]) : 0;
  return undefined;
}

function filterProtocol(cmd: Cmd, fname: string, pname: string, proto: string | undefined): string | undefined {
  const sf = liveOf(cmd).get(fname);
  if (sf === undefined) return 'FilterProtocol: No such filter';
  let providerName: string | undefined;
  if (proto === undefined) { proto = pname; }
  else {
    const p = sf.providers.find((x) => x.spec.name.toLowerCase() === pname.toLowerCase());
    if (p === undefined) return 'FilterProtocol: No such provider for this filter';
    providerName = p.spec.name.toLowerCase();
  }
  let flags = 0;
  for (const arg of proto.split(/[;, \t]+/)) {
    if (arg === '') continue;
    const a = arg.toLowerCase();
    if (a === 'change=yes') flags |= PROTO_CHANGE | PROTO_CHANGE_LENGTH;
    if (a === 'change=no') flags &= ~(PROTO_CHANGE | PROTO_CHANGE_LENGTH);
    else if (a === 'change=1:1') flags |= PROTO_CHANGE;
    else if (a === 'byteranges=no') flags |= PROTO_NO_BYTERANGE;
    else if (a === 'proxy=no') flags |= PROTO_NO_PROXY;
    else if (a === 'proxy=transform') flags |= PROTO_TRANSFORM;
    else if (a === 'cache=no') flags |= PROTO_NO_CACHE;
  }
  if (providerName !== undefined) providerFlags.set(providerName, flags);
  else sf.protoFlags = flags;
  return undefined;
}

function filterByType(cmd: Cmd, argv: string[]): string | undefined {
  if (argv.length < 2) return 'AddOutputFilterByType requires at least two arguments';
  const types = argv.slice(1);
  for (const pname of argv[0]!.split(';')) {
    if (pname === '') continue;
    const fname = 'BYTYPE:' + pname;
    const seen = liveOf(cmd).has(fname);
    const err = addProvider(cmd, fname, pname, undefined, types);
    if (err !== undefined) return err;
    if (!seen) filterChain(cmd, fname);
  }
  return undefined;
}

// ---- the harness: the smart filter on a request ------------------------------------------------

interface HarnessState {
  /** The chosen provider's filter, running with its own state; null: none matched. */
  inner: FilterInstance | null | undefined;
}

/** Range headers taken off while a length-changing smart filter is on the chain. */
const savedRange = new WeakMap<Request, string>();

/** filter_trace: the filter's name and each bucket, at debug (FilterTrace 1). */
function trace(r: Request, sf: SmartFilter, bb: Brigade): void {
  if (sf.debug !== 1 || !r.wantsLog('filter', APLOG_DEBUG)) return;
  r.log('filter', APLOG_DEBUG, `AH01375: ${sf.name}`, undefined, 'mod_filter.c(86)');
  for (const b of bb) {
    const type = b.kind === 'data' ? 'HEAP' : b.kind === 'file' ? 'FILE' : b.kind === 'flush' ? 'FLUSH' : 'EOS';
    const len = b.kind === 'data' ? b.data.length : b.kind === 'file' ? b.length : 0;
    r.log('filter', APLOG_DEBUG, `AH01376: ${sf.name}: type: ${type}, length: ${len}`, undefined, 'mod_filter.c(91)');
  }
}

/** The first provider whose condition holds (filter_lookup), with its protocol effects. */
function lookup(r: Request, sf: SmartFilter): Provider | undefined {
  for (const p of sf.providers) {
    let match = false;
    const pname = p.spec.name;
    if (p.expr !== undefined) {
      const v = evalBool(p.expr, r);
      // Provider conditions do not wait (no -U/-F subrequests here).
      if (v instanceof Promise) {
        r.log('filter', APLOG_ERR, 'AH01379: Error evaluating filter dispatch condition: asynchronous expression');
      } else if (isFailure(v)) {
        r.log('filter', APLOG_ERR, `AH01379: Error evaluating filter dispatch condition: ${v.error}`);
      } else {
        match = v;
      }
      if (r.wantsLog('filter', APLOG_TRACE2)) r.log('filter', APLOG_TRACE2, `Expression condition for '${pname}' ${match ? 'matched' : 'did not match'}`, undefined, 'mod_filter.c(159)');
    } else if (r.contentType !== undefined) {
      const ct = r.contentType;
      const m = /[; \t]/.exec(ct);
      const base = m ? ct.slice(0, m.index) : ct;
      if (r.wantsLog('filter', APLOG_TRACE4)) r.log('filter', APLOG_TRACE4, `Content-Type '${ct}' ...`, undefined, 'mod_filter.c(168)');
      for (const t of p.types ?? []) {
        if (t === base) {
          if (r.wantsLog('filter', APLOG_TRACE4)) r.log('filter', APLOG_TRACE4, `... matched '${t}'`, undefined, 'mod_filter.c(174)');
          match = true;
          break;
        }
        if (r.wantsLog('filter', APLOG_TRACE4)) r.log('filter', APLOG_TRACE4, `... did not match '${t}'`, undefined, 'mod_filter.c(180)');
      }
      if (r.wantsLog('filter', APLOG_TRACE2)) r.log('filter', APLOG_TRACE2, `Content-Type condition for '${pname}' ${match ? 'matched' : 'did not match'}`, undefined, 'mod_filter.c(185)');
    } else if (r.wantsLog('filter', APLOG_TRACE2)) {
      r.log('filter', APLOG_TRACE2, `Content-Type condition for '${pname}' did not match: no Content-Type`, undefined, 'mod_filter.c(191)');
    }
    if (!match) continue;
    const flags = providerFlags.get(pname.toLowerCase()) ?? 0;
    if (flags & PROTO_CHANGE) {
      r.headersOut.unset('Content-MD5');
      r.headersOut.unset('ETag');
      if (flags & PROTO_CHANGE_LENGTH) r.headersOut.unset('Content-Length');
    }
    if (flags & PROTO_NO_CACHE) {
      r.headersOut.unset('Last-Modified');
      r.headersOut.add('Cache-Control', 'no-cache');
    }
    if (flags & PROTO_NO_BYTERANGE) {
      r.headersOut.set('Accept-Ranges', 'none');
    } else {
      const range = savedRange.get(r);
      if (range !== undefined) {
        r.headersIn.set('Range', range);
        savedRange.delete(r);
      }
    }
    return p;
  }
  return undefined;
}

function harnessSpec(sf: SmartFilter): FilterSpec<HarnessState> {
  return {
    name: sf.name,
    get type() { return sf.type; },
    init: () => ({ inner: undefined }),
    filter(f: FilterInstance<HarnessState>, bb: Brigade) {
      const r = f.r;
      const st = f.state;
      if (st.inner === undefined) {
        if (r.status !== 200 && !r.subprocessEnv.has('filter-errordocs')) {
          st.inner = null;
          f.remove();
          return f.pass(bb);
        }
        trace(r, sf, bb);
        const p = lookup(r, sf);
        if (p === undefined) {
          st.inner = null;
          f.remove();
          return f.pass(bb);
        }
        st.inner = instantiate(p.spec, r);
      } else {
        trace(r, sf, bb);
      }
      const inner = st.inner;
      if (inner === null || inner.removed) {
        f.remove();
        return f.pass(bb);
      }
      // The provider passes straight to what follows the slot.
      inner.next = f.next;
      return inner.spec.filter(inner, bb);
    },
  } as FilterSpec<HarnessState>;
}

/** filter_insert: the merged chain's slots onto the request, in order. */
function insertFilters(r: Request): void {
  const cfg = self.dir(r);
  const chain = cfg?.chain;
  if (chain === undefined || chain.length === 0) return;
  let start = 0;
  for (let i = 0; i < chain.length; i++) if (chain[i] === null) start = i + 1;
  let ranges = true;
  for (let i = start; i < chain.length; i++) {
    const name = chain[i]!;
    const sf = cfg.live.get(name);
    if (sf === undefined) {
      r.log('filter', APLOG_WARNING, `AH01380: Unknown filter ${name} not added`);
      continue;
    }
    r.rt.addFilter(r, sf.spec);
    if (ranges && (sf.protoFlags & (PROTO_NO_BYTERANGE | PROTO_CHANGE_LENGTH))) {
      const range = r.headersIn.get('Range');
      if (range !== undefined) savedRange.set(r, range);
      r.headersIn.unset('Range');
      ranges = false;
    }
  }
}

const self = defineModule<undefined, FilterDir>({
  name: 'filter_module',
  source: 'mod_filter.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, FilterDir, 'TAKE12'>({ name: 'FilterDeclare', args: 'TAKE12', where: OR_OPTIONS, help: 'filter-name [filter-type]', handler: filterDeclare }),
    directive<undefined, FilterDir, 'TAKE3'>({ name: 'FilterProvider', args: 'TAKE3', where: OR_OPTIONS, help: 'filter-name provider-name match-expression', handler: filterProvider }),
    directive<undefined, FilterDir, 'ITERATE'>({ name: 'FilterChain', args: 'ITERATE', where: OR_OPTIONS, help: 'list of filter names with optional [+-=!@]', handler: filterChain }),
    directive<undefined, FilterDir, 'TAKE2'>({ name: 'FilterTrace', args: 'TAKE2', where: RSRC_CONF | ACCESS_CONF, help: 'filter-name debug-level', handler: filterTrace }),
    directive<undefined, FilterDir, 'TAKE_ARGV'>({ name: 'AddOutputFilterByType', args: 'TAKE_ARGV', where: OR_FILEINFO, help: 'output filter name followed by one or more content-types', handler: filterByType }),
    directive<undefined, FilterDir, 'TAKE23'>({ name: 'FilterProtocol', args: 'TAKE23', where: OR_OPTIONS, help: 'filter-name [provider-name] protocol-args', handler: filterProtocol }),
  ],
  hooks: { insertFilter: { fn: insertFilters, order: HOOK_MIDDLE } },
  configHooks: {
    preConfig: () => { providerFlags = new Map(); },
  },
});

export default self;
