// mod_lua (httpd's modules/lua/mod_lua.c): the lua-script handler, LuaMapHandler, the
// LuaHook* request hooks, LuaOutputFilter/LuaInputFilter coroutine filters and Lua authz
// providers, with LuaScope, LuaCodeCache, LuaRoot, LuaPackagePath/CPath and LuaInherit. Lua
// runs on wasmoon (Lua 5.4 in WebAssembly; see vm.ts), loaded only when a script first runs.

import * as path from 'node:path';
import {
  DECLINED, DONE, EXEC_ON_READ, HOOK_FIRST, HOOK_LAST, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_ALL, RSRC_CONF,
  defineModule, directive, type HookResult, type HookRegistration,
} from '../../server/module.js';
import type { Request, ConnRec } from '../../server/request/request.js';
import { NOT_IN_DIRECTORY, NOT_IN_FILES, NOT_IN_HTACCESS, type CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import {
  EOS, FTYPE_RESOURCE, FilterError, bucketBytes, dataBucket, type Brigade, type Bucket, type FilterInstance, type FilterSpec,
  type InputFilterInstance, type InputFilterSpec,
} from '../../server/filters.js';
import { APLOG_CRIT, APLOG_ERR, APLOG_TRACE1, APLOG_WARNING, levelFor } from '../../server/log/levels.js';
import { escapeHtml } from '../../server/http/response.js';
import { compilePcre, type CompiledRegex } from '../../expr/index.js';
import type { AuthzProvider, AuthzStatus } from '../aaa/mod_authz_core.js';
import { LuaLoadError, acquireVm, closeAllVms, closeHolder, errText, holderBusy, preloadLua, type LuaCodeCache, type LuaScope, type VmHolder, type VmSpec } from './vm.js';
import { bridge, finishResponse, flushOut, luaReq, register, unregister, type LuaReq } from './api.js';

const MOD = 'lua';
/** mod_lua's AP_LUA_HOOK_FIRST / _LAST: just outside APR_HOOK_FIRST and APR_HOOK_LAST. */
const LUA_HOOK_FIRST = HOOK_FIRST - 1;
const LUA_HOOK_LAST = HOOK_LAST + 1;

// ---- configuration ------------------------------------------------------------------------

type Inherit = 'none' | 'parent-first' | 'parent-last';

interface HookSpec { readonly file: string; readonly func: string }
interface MappedHandler { readonly pattern: CompiledRegex; readonly file: string; readonly func: string }
interface FilterDecl { readonly name: string; readonly file: string; readonly func: string; readonly input: boolean }

interface LuaDir {
  readonly scope: LuaScope | undefined;
  readonly vmMin: number | undefined;
  readonly vmMax: number | undefined;
  readonly inherit: Inherit | undefined;
  readonly codecache: LuaCodeCache | undefined;
  readonly packagePaths: readonly string[];
  readonly packageCPaths: readonly string[];
  readonly mappedHandlers: readonly MappedHandler[];
  readonly mappedFilters: readonly FilterDecl[];
  /** Hook specs by `${hook}_${when}`, as mod_lua's hash. */
  readonly hooks: ReadonlyMap<string, readonly HookSpec[]>;
}

interface LuaServer {
  root: string | undefined;
}

function createDir(): LuaDir {
  return {
    scope: undefined, vmMin: undefined, vmMax: undefined, inherit: undefined, codecache: undefined,
    packagePaths: [], packageCPaths: [], mappedHandlers: [], mappedFilters: [], hooks: new Map(),
  };
}

function appendHooks(first: ReadonlyMap<string, readonly HookSpec[]>, second: ReadonlyMap<string, readonly HookSpec[]>): Map<string, readonly HookSpec[]> {
  const out = new Map<string, readonly HookSpec[]>(first);
  for (const [k, v] of second) out.set(k, [...(out.get(k) ?? []), ...v]);
  return out;
}

/** merge_dir_config: LuaInherit decides whether the parent's lists come before, after, or not at all. */
function mergeDir(base: Readonly<LuaDir>, add: Readonly<LuaDir>): LuaDir {
  const inherit = add.inherit ?? base.inherit;
  const common = {
    scope: add.scope ?? base.scope,
    vmMin: add.vmMin ?? base.vmMin,
    vmMax: add.vmMax ?? base.vmMax,
    inherit,
    codecache: add.codecache ?? base.codecache,
  };
  if (inherit === undefined || inherit === 'parent-first') {
    return {
      ...common,
      packagePaths: [...base.packagePaths, ...add.packagePaths],
      packageCPaths: [...base.packageCPaths, ...add.packageCPaths],
      mappedHandlers: [...base.mappedHandlers, ...add.mappedHandlers],
      mappedFilters: [...base.mappedFilters, ...add.mappedFilters],
      hooks: appendHooks(base.hooks, add.hooks),
    };
  }
  if (inherit === 'parent-last') {
    return {
      ...common,
      packagePaths: [...add.packagePaths, ...base.packagePaths],
      packageCPaths: [...add.packageCPaths, ...base.packageCPaths],
      mappedHandlers: [...add.mappedHandlers, ...base.mappedHandlers],
      mappedFilters: [...add.mappedFilters, ...base.mappedFilters],
      hooks: appendHooks(add.hooks, base.hooks),
    };
  }
  return { ...common, packagePaths: add.packagePaths, packageCPaths: add.packageCPaths, mappedHandlers: add.mappedHandlers, mappedFilters: add.mappedFilters, hooks: add.hooks };
}

// Directive handlers mutate the section's fresh config object (created per section).
type Mutable<T> = { -readonly [K in keyof T]: T[K] };
const mut = (d: LuaDir): Mutable<LuaDir> => d as Mutable<LuaDir>;

function rootPath(cmd: CmdParms<LuaServer, LuaDir>, file: string): string {
  const root = cmd.srv.root;
  return path.isAbsolute(file) ? file : path.resolve(root ?? process.cwd(), file);
}

function addHook(cmd: CmdParms<LuaServer, LuaDir>, name: string, file: string, func: string, when: number): undefined {
  const key = `${name}_${when}`;
  const hooks = new Map(cmd.dir.hooks);
  hooks.set(key, [...(hooks.get(key) ?? []), { file, func }]);
  mut(cmd.dir).hooks = hooks;
  return undefined;
}

function whenOf(w: string | undefined): number | string {
  if (w === undefined) return HOOK_MIDDLE;
  if (w.toLowerCase() === 'early') return LUA_HOOK_FIRST;
  if (w.toLowerCase() === 'late') return LUA_HOOK_LAST;
  return "Third argument must be 'early' or 'late'";
}

const DIR_ONLY = NOT_IN_DIRECTORY | NOT_IN_FILES | NOT_IN_HTACCESS;

/** The Lua authz providers of this configuration generation, by name. */
interface LuaAuthzSpec { readonly name: string; readonly file: string; readonly func: string }

// ---- running Lua ------------------------------------------------------------------------------

const requestVms = new WeakMap<Request, VmHolder>();
/** LuaScope conn states: connections have no close hook here, so the most recent ones are
 *  kept and older ones closed (DIFFERENCE: bounded rather than tied to the connection). */
const connVms = new Map<ConnRec, VmHolder>();
const MAX_CONN_HOLDERS = 64;

function holderFor(r: Request): { req: VmHolder; conn: VmHolder } {
  const top = r.main ?? r;
  let req = requestVms.get(top);
  if (req === undefined) { req = { vms: new Map() }; requestVms.set(top, req); }
  let conn = connVms.get(r.connection);
  if (conn === undefined) {
    conn = { vms: new Map() };
    connVms.set(r.connection, conn);
    if (connVms.size > MAX_CONN_HOLDERS) {
      // The oldest connection whose states are idle goes (one still running a call stays).
      for (const [oldC, oldH] of connVms) {
        if (oldC === r.connection || holderBusy(oldH)) continue;
        connVms.delete(oldC);
        closeHolder(oldH);
        break;
      }
    }
  }
  return { req, conn };
}

function vmSpec(r: Request, file: string): VmSpec {
  const d = self.dir(r);
  return {
    file,
    scope: d.scope ?? 'once',
    codecache: d.codecache ?? 'stat',
    packagePaths: d.packagePaths,
    packageCPaths: d.packageCPaths,
    vmMin: d.vmMin ?? 1,
    vmMax: d.vmMax ?? 1,
  };
}

/** ap_log_perror: a message without the client's address. */
function logServer(r: Request, level: number, message: string): void {
  if (level > levelFor(r.server.logLevel, MOD)) return;
  r.server.errorLog.write({ module: MOD, level, message });
}

type CallOutcome =
  | { kind: 'ok'; value: unknown }
  | { kind: 'nofunc' }
  | { kind: 'loadfail' }
  | { kind: 'error'; message: string };

/** Gets a state for `file`, calls `func(r, ...args)` in it and gives the state back. Output the
 *  function buffered is passed on at the end, unless the caller holds `c` and does it. */
async function callLua(r: Request, file: string, func: string, args: readonly unknown[] = [], held?: LuaReq): Promise<CallOutcome> {
  const spec = vmSpec(r, file);
  const h = holderFor(r);
  let lease;
  try {
    lease = await acquireVm(spec, bridge, h.req, h.conn);
  } catch (e) {
    // A chunk that does not compile is logged with what httpd prints there (lua_tostring of an
    // empty stack slot: the chunk's name); one whose top level fails, with Lua's message.
    const msg = errText(e);
    if (e instanceof LuaLoadError && e.phase === 'run') logServer(r, APLOG_ERR, `AH02613: Error loading ${file}: ${msg}`);
    else logServer(r, APLOG_ERR, `AH01482: Error loading ${file}: @${file}`);
    return { kind: 'loadfail' };
  }
  const c: LuaReq = held ?? luaReq(r);
  const id = register(c);
  try {
    const v = await lease.vm.invoke(func, id, args);
    if (v === '\x01nofunc') return { kind: 'nofunc' };
    return { kind: 'ok', value: v };
  } catch (e) {
    return { kind: 'error', message: errText(e) };
  } finally {
    unregister(id);
    lease.release();
    if (held === undefined) await flushOut(c);
  }
}

/** report_lua_error: status 500, the error added to the output (ap_rputs), AH01471 logged. */
function reportLuaError(c: LuaReq, message: string): void {
  const r = c.r;
  r.status = 500;
  r.contentType = 'text/html';
  const b = Buffer.from(`<h3>Error!</h3>\n<pre>${escapeHtml(message)}</pre>\n`, 'utf8');
  c.out.push(b);
  c.outLen += b.length;
  logServer(r, APLOG_WARNING, `AH01471: Lua error: ${message}`);
}

// ---- the handlers ---------------------------------------------------------------------------

async function luaHandler(r: Request): Promise<HookResult> {
  if (r.handler !== 'lua-script') return DECLINED;
  if (r.finfo === null || r.finfo.isDirectory()) return DECLINED;
  if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `handling [${r.filename}] in mod_lua`);
  if (r.headerOnly) return OK;
  const c = luaReq(r);
  const out = await callLua(r, r.filename, 'handle', [], c);
  // httpd writes "Unable to compile VM" and returns 500: the error page replaces the output.
  if (out.kind === 'loadfail') return 500;
  if (out.kind === 'nofunc') {
    r.log(MOD, APLOG_CRIT, `AH01475: lua: Unable to find entry function 'handle' in ${r.filename} (not a valid function)`);
    return 500;
  }
  let rc = OK;
  if (out.kind === 'error') reportLuaError(c, out.message);
  else if (typeof out.value === 'number') rc = out.value;
  if (rc === OK || rc === DONE) await finishResponse(c);
  else await flushOut(c);
  return rc;
}

function interpolate(s: string, values: readonly string[]): string {
  return s.replace(/\$([0-9])/g, (_m, d: string) => values[Number(d)] ?? '');
}

async function mapHandler(r: Request): Promise<HookResult> {
  const d = self.dir(r);
  for (const h of d.mappedHandlers) {
    const m = h.pattern.re.exec(r.uri);
    if (m === null) continue;
    const values = Array.from({ length: 10 }, (_v, i) => m[i] ?? '');
    const file = interpolate(h.file, values);
    const func = interpolate(h.func, values);
    const c = luaReq(r);
    const out = await callLua(r, file, func, [], c);
    if (out.kind === 'loadfail') {
      r.log(MOD, APLOG_CRIT, `AH02330: lua: Failed to obtain Lua interpreter for entry function '${func}' in ${file}`);
      return 500;
    }
    if (out.kind === 'nofunc') {
      r.log(MOD, APLOG_CRIT, `AH02331: lua: Unable to find entry function '${func}' in ${file} (not a valid function)`);
      return 500;
    }
    if (out.kind === 'error') {
      reportLuaError(c, out.message);
      await flushOut(c);
      return 500;
    }
    let rc: number;
    if (typeof out.value === 'number') rc = out.value;
    else {
      r.log(MOD, APLOG_WARNING, `AH02483: lua: Lua handler ${func} in ${file} did not return a value, assuming apache2.OK`);
      rc = OK;
    }
    if (rc !== DECLINED) {
      if (rc === OK || rc === DONE) await finishResponse(c);
      else await flushOut(c);
      return rc;
    }
    await flushOut(c);
  }
  return DECLINED;
}

/** lua_map_handler_fixups: a request no handler claimed but a LuaMapHandler pattern matches. */
function mapHandlerFixups(r: Request): HookResult {
  if (r.handler !== undefined) return DECLINED;
  for (const h of self.dir(r).mappedHandlers) {
    if (h.pattern.re.test(r.uri)) { r.handler = 'lua-map-handler'; return OK; }
  }
  return DECLINED;
}

/** lua_request_rec_hook_harness: the phase's Lua functions in order, the first answer other
 *  than DECLINED wins. */
function harness(name: string, when: number): (r: Request) => HookResult | Promise<HookResult> {
  const key = `${name}_${when}`;
  return (r) => {
    const specs = self.dir(r).hooks.get(key);
    if (specs === undefined || specs.length === 0) return DECLINED;
    return runHooks(r, name, specs);
  };
}

const quickHarness = harness('quick', HOOK_MIDDLE);

async function runHooks(r: Request, name: string, specs: readonly HookSpec[]): Promise<HookResult> {
  const root = self.server(r.server).root;
  for (const s of specs) {
    const file = path.isAbsolute(s.file) ? s.file : path.resolve(root ?? process.cwd(), s.file);
    const c = luaReq(r);
    const out = await callLua(r, file, s.func, [], c);
    if (out.kind === 'error') {
      reportLuaError(c, out.message);
      await flushOut(c);
      return 500;
    }
    // A quick handler that serves the request: what r:puts wrote goes out with the end of the
    // response, as httpd's buffered ap_rputs output reaches the filters with the EOS of
    // ap_finalize_request_protocol (so the length is known: Content-Length, not chunks).
    if (name === 'quick' && out.kind === 'ok' && out.value === OK) await flushOut(c, [EOS]);
    else await flushOut(c);
    if (out.kind === 'loadfail') {
      r.log(MOD, APLOG_CRIT, `AH01477: lua: Failed to obtain lua interpreter for entry function '${s.func}' in ${s.file}`);
      return 500;
    }
    if (out.kind === 'nofunc') {
      r.log(MOD, APLOG_CRIT, `AH01478: lua: Unable to find entry function '${s.func}' in ${s.file} (not a valid function)`);
      return 500;
    }
    if (typeof out.value !== 'number') {
      r.log(MOD, APLOG_CRIT, `AH03017: Lua hook ${s.file}:${s.func} for phase ${name} did not return a numeric value`);
      return 500;
    }
    if (out.value !== DECLINED) return out.value;
  }
  return DECLINED;
}

/** insert_filter and log_transaction answer nothing: their Lua functions run for effect. */
function voidHarness(name: string, when: number): (r: Request) => Promise<void> | void {
  const h = harness(name, when);
  return (r) => {
    const v = h(r);
    if (v instanceof Promise) return v.then(() => undefined);
    return undefined;
  };
}

/** The log phase ends the request's LuaScope request states. */
async function logTransaction(r: Request): Promise<HookResult> {
  const v = harness('log_transaction', HOOK_FIRST)(r);
  const rc = v instanceof Promise ? await v : v;
  const h = requestVms.get(r);
  if (h !== undefined) { closeHolder(h); requestVms.delete(r); }
  return rc;
}

// ---- filters --------------------------------------------------------------------------------

let filterSeq = 0;

interface LuaFilterState {
  started: boolean;
  broken: boolean;
  key: string;
  id: number;
  release: (() => void) | null;
  vm: { callSync(name: string, ...args: unknown[]): unknown } | null;
}

function findFilterDecl(r: Request, name: string, input: boolean): FilterDecl | undefined {
  const lname = name.toLowerCase();
  return self.dir(r).mappedFilters.find((f) => f.input === input && f.name.toLowerCase() === lname);
}

type Step = readonly [string, string?];

function resume(st: LuaFilterState, data: string | null): Step {
  return st.vm!.callSync('__plume_filter_resume', st.key, data ?? undefined) as Step;
}

function outputFilterSpec(name: string): FilterSpec<LuaFilterState> {
  return {
    name,
    type: FTYPE_RESOURCE,
    init: () => ({ started: false, broken: false, key: '', id: 0, release: null, vm: null }),
    filter: async (f: FilterInstance<LuaFilterState>, bb: Brigade) => {
      const r = f.r;
      const st = f.state;
      if (!st.started) {
        const decl = findFilterDecl(r, name, false);
        if (decl === undefined) { f.remove(); return f.pass(bb); }
        const prefix = await startedPrefix(r, st, decl);
        if (prefix === 'error') throw new FilterError(500, 'lua filter setup failed');
        if (prefix === 'skip') { f.remove(); return f.pass(bb); }
        r.headersOut.unset('Content-Length');
        r.headersOut.unset('Content-MD5');
        r.headersOut.unset('ETag');
        if (prefix.length) await f.pass([dataBucket(Buffer.from(prefix, 'utf8'))]);
      }
      if (st.broken) return;
      const out: Bucket[] = [];
      for (const b of bb) {
        const bytes = await bucketBytes(b);
        const res = resume(st, bytes.toString('utf8'));
        if (res[0] === 'yield') {
          if (res[1]) out.push(dataBucket(Buffer.from(res[1], 'utf8')));
          continue;
        }
        st.broken = true;
        st.release?.(); st.release = null;
        r.log(MOD, APLOG_ERR, `AH02663: lua: Error while executing filter: ${res[1] ?? ''}`);
        f.remove();
        throw new FilterError(500, 'lua filter failed');
      }
      if (bb.length && bb[bb.length - 1]!.kind === 'eos') {
        const res = resume(st, null);
        if (res[0] === 'yield' && res[1]) out.push(dataBucket(Buffer.from(res[1], 'utf8')));
        out.push(bb[bb.length - 1]!);
        st.release?.(); st.release = null;
        // The EOS bucket's own (empty) read went to Lua above; keep the order: data, then EOS.
        const eosIdx = out.findIndex((x) => x.kind === 'eos');
        if (eosIdx !== out.length - 1) out.push(...out.splice(eosIdx, 1));
      }
      if (out.length) await f.pass(out);
    },
  };
}

/** The state's first yield value: the prefix the filter sends before any bucket. */
async function startedPrefix(r: Request, st: LuaFilterState, decl: FilterDecl): Promise<string | 'skip' | 'error'> {
  const root = self.server(r.server).root;
  const file = path.isAbsolute(decl.file) ? decl.file : path.resolve(root ?? process.cwd(), decl.file);
  const h = holderFor(r);
  let lease;
  try {
    lease = await acquireVm(vmSpec(r, file), bridge, h.req, h.conn);
  } catch (e) {
    logServer(r, APLOG_ERR, `AH01482: Error loading ${file}: ${errText(e)}`);
    r.log(MOD, APLOG_CRIT, `AH02328: lua: Failed to obtain lua interpreter for ${decl.func} ${decl.file}`);
    return 'error';
  }
  st.id = register(luaReq(r));
  st.key = `f${++filterSeq}`;
  st.vm = lease.vm;
  const vm = lease.vm;
  st.release = () => { unregister(st.id); if (!vm.closed) vm.callSync('__plume_filter_end', st.key); lease.release(); };
  const res = vm.callSync('__plume_filter_start', st.key, decl.func, st.id) as Step;
  if (res[0] === 'nofunc') {
    r.log(MOD, APLOG_CRIT, `AH02329: lua: Unable to find entry function '${decl.func}' in ${decl.file} (not a valid function)`);
    st.release(); st.release = null;
    return 'error';
  }
  if (res[0] !== 'yield') { st.release(); st.release = null; return 'skip'; }
  st.started = true;
  return res[1] ?? '';
}

function inputFilterSpec(name: string): InputFilterSpec<LuaFilterState & { done: boolean }> {
  return {
    name,
    type: FTYPE_RESOURCE,
    init: () => ({ started: false, broken: false, key: '', id: 0, release: null, vm: null, done: false }),
    read: async (f: InputFilterInstance<LuaFilterState & { done: boolean }>) => {
      const r = f.r;
      const st = f.state;
      if (st.done) return null;
      let prefix = '';
      if (!st.started) {
        const decl = findFilterDecl(r, name, true);
        if (decl === undefined) { f.remove(); return f.readNext(); }
        const p = await startedPrefix(r, st, decl);
        if (p === 'error') throw new FilterError(500, 'lua filter setup failed');
        if (p === 'skip') { f.remove(); return f.readNext(); }
        // lua_input_filter_handle passes nothing of the first yield on (unlike the output side).
        void p;
      }
      const chunk = await f.readNext();
      let out = prefix;
      if (chunk === null) {
        const res = resume(st, null);
        if (res[0] === 'yield' && res[1]) out += res[1];
        st.done = true;
        st.release?.(); st.release = null;
        return out.length ? Buffer.from(out, 'utf8') : null;
      }
      const res = resume(st, chunk.toString('utf8'));
      if (res[0] !== 'yield') {
        st.release?.(); st.release = null;
        r.log(MOD, APLOG_ERR, `AH02663: lua: Error while executing filter: ${res[1] ?? ''}`);
        throw new FilterError(500, 'lua filter failed');
      }
      out += res[1] ?? '';
      return Buffer.from(out, 'utf8');
    },
  };
}

function configuredFilters(ctx: ConfigContext): { output: FilterSpec[]; input: InputFilterSpec[] } {
  const names = filterNames.get(ctx) ?? new Map<string, boolean>();
  const output: FilterSpec[] = [];
  const input: InputFilterSpec[] = [];
  for (const [n, isInput] of names) {
    if (isInput) input.push(inputFilterSpec(n) as unknown as InputFilterSpec);
    else output.push(outputFilterSpec(n) as unknown as FilterSpec);
  }
  return { output, input };
}

/** Filter names LuaOutputFilter / LuaInputFilter registered, per configuration generation. */
const filterNames = new WeakMap<ConfigContext, Map<string, boolean>>();

// ---- authz providers ------------------------------------------------------------------------

interface LuaAuthzParsed { readonly spec: LuaAuthzSpec; readonly args: readonly string[] }

function luaAuthzProvider(spec: LuaAuthzSpec): AuthzProvider<LuaAuthzParsed> {
  return {
    parse: (_cmd, requireArgs) => ({ ok: true, parsed: { spec, args: requireArgs.trim() === '' ? [] : requireArgs.trim().split(/\s+/) } }),
    check: async (r, _line, parsed): Promise<AuthzStatus> => {
      const out = await callLua(r, parsed.spec.file, parsed.spec.func, parsed.args);
      if (out.kind === 'loadfail') {
        r.log(MOD, APLOG_ERR, `AH02314: Unable to compile VM for authz provider ${parsed.spec.name}`);
        return 3 as AuthzStatus;
      }
      if (out.kind === 'nofunc') {
        r.log(MOD, APLOG_CRIT, `AH02319: Unable to find entry function '${parsed.spec.func}' in ${parsed.spec.file} (not a valid function)`);
        return 3 as AuthzStatus;
      }
      if (out.kind === 'error') {
        r.log(MOD, APLOG_ERR, `AH02316: Error executing authz provider ${parsed.spec.name}: ${out.message}`);
        return 3 as AuthzStatus;
      }
      if (typeof out.value !== 'number') {
        r.log(MOD, APLOG_ERR, `AH02317: Error: authz provider ${parsed.spec.name} did not return integer`);
        return 3 as AuthzStatus;
      }
      const v = out.value;
      if (v >= 0 && v <= 4) return v as AuthzStatus;
      r.log(MOD, APLOG_ERR, `AH02318: Error: authz provider ${parsed.spec.name}: invalid return value ${v}`);
      return 3 as AuthzStatus;
    },
  };
}

// ---- the directive table ----------------------------------------------------------------------

type Cmd = CmdParms<LuaServer, LuaDir>;

const hookDirective = (name: string, hook: string, help: string) =>
  directive<LuaServer, LuaDir, 'TAKE2'>({
    name, args: 'TAKE2', where: OR_ALL, help,
    handler: (cmd: Cmd, file, func) => addHook(cmd, hook, file, func, HOOK_MIDDLE),
  });

const hookWhenDirective = (name: string, hook: string, help: string, dirOnly: boolean) =>
  directive<LuaServer, LuaDir, 'TAKE23'>({
    name, args: 'TAKE23', where: OR_ALL, help,
    handler: (cmd: Cmd, file, func, when) => {
      if (dirOnly) { const e = cmd.checkContext(DIR_ONLY); if (e) return e; }
      const w = whenOf(when);
      if (typeof w === 'string') return w;
      return addHook(cmd, hook, file, func, w);
    },
  });

const directives = [
  directive<LuaServer, LuaDir, 'TAKE1'>({
    name: 'LuaRoot', args: 'TAKE1', where: OR_ALL, help: 'Specify the base path for resolving relative paths for mod_lua directives',
    handler: (cmd: Cmd, root) => { cmd.srv.root = root; },
  }),
  directive<LuaServer, LuaDir, 'TAKE1'>({
    name: 'LuaPackagePath', args: 'TAKE1', where: OR_ALL, help: 'Add a directory to lua\'s package.path',
    handler: (cmd: Cmd, p) => { mut(cmd.dir).packagePaths = [...cmd.dir.packagePaths, rootPath(cmd, p)]; },
  }),
  directive<LuaServer, LuaDir, 'TAKE1'>({
    name: 'LuaPackageCPath', args: 'TAKE1', where: OR_ALL, help: 'Add a directory to lua\'s package.cpath',
    // DIFFERENCE: Lua runs in WebAssembly, where C modules cannot be loaded; the path is set
    // (package.cpath) as Apache sets it, and a require that needs a C module fails as Lua
    // fails for a missing one.
    handler: (cmd: Cmd, p) => { mut(cmd.dir).packageCPaths = [...cmd.dir.packageCPaths, rootPath(cmd, p)]; },
  }),
  directive<LuaServer, LuaDir, 'TAKE3'>({
    name: 'LuaAuthzProvider', args: 'TAKE3', where: RSRC_CONF | EXEC_ON_READ, help: 'Provide an authorization provider',
    handler: (cmd: Cmd, name, file, func) => {
      const spec: LuaAuthzSpec = { name, file: rootPath(cmd, file), func };
      cmd.ctx.registerProvider('authz', name, luaAuthzProvider(spec));
    },
  }),
  hookDirective('LuaQuickHandler', 'quick', 'Provide a hook for the quick handler of request processing'),
  hookWhenDirective('LuaHookTranslateName', 'translate_name', 'Provide a hook for the translate name phase of request processing', true),
  hookDirective('LuaHookFixups', 'fixups', 'Provide a hook for the fixups phase of request processing'),
  hookDirective('LuaHookMapToStorage', 'map_to_storage', 'Provide a hook for the map_to_storage phase of request processing'),
  hookWhenDirective('LuaHookCheckUserID', 'check_user_id', 'Provide a hook for the check_user_id phase of request processing', false),
  hookDirective('LuaHookTypeChecker', 'type_checker', 'Provide a hook for the type_checker phase of request processing'),
  hookWhenDirective('LuaHookAccessChecker', 'access_checker', 'Provide a hook for the access_checker phase of request processing', false),
  hookWhenDirective('LuaHookAuthChecker', 'auth_checker', 'Provide a hook for the auth_checker phase of request processing', false),
  hookDirective('LuaHookInsertFilter', 'insert_filter', 'Provide a hook for the insert_filter phase of request processing'),
  directive<LuaServer, LuaDir, 'TAKE2'>({
    name: 'LuaHookLog', args: 'TAKE2', where: OR_ALL, help: 'Provide a hook for the logging phase of request processing',
    handler: (cmd: Cmd, file, func) => addHook(cmd, 'log_transaction', file, func, HOOK_FIRST),
  }),
  directive<LuaServer, LuaDir, 'TAKE123'>({
    name: 'LuaScope', args: 'TAKE123', where: OR_ALL, help: 'One of once, request, conn, server -- default is once',
    handler: (cmd: Cmd, scope, min, max) => {
      const d = mut(cmd.dir);
      if (scope === 'once' || scope === 'request' || scope === 'conn' || scope === 'thread') { d.scope = scope; return undefined; }
      if (scope === 'server') {
        d.scope = 'server';
        let vmin = min !== undefined ? parseInt(min, 10) || 0 : 1;
        let vmax = max !== undefined ? parseInt(max, 10) || 0 : 1;
        if (vmin === 0) vmin = 1;
        if (vmax < vmin) vmax = vmin;
        d.vmMin = vmin;
        d.vmMax = vmax;
        return undefined;
      }
      return `Invalid value for LuaScope, '${scope}', acceptable values are: 'once', 'request', 'conn', 'thread', 'server'`;
    },
  }),
  directive<LuaServer, LuaDir, 'TAKE1'>({
    name: 'LuaInherit', args: 'TAKE1', where: OR_ALL, help: 'Controls how Lua scripts in parent contexts are merged with the current  context: none|parent-last|parent-first (default: parent-first) ',
    handler: (cmd: Cmd, arg) => {
      const a = arg.toLowerCase();
      if (a === 'none' || a === 'parent-first' || a === 'parent-last') { mut(cmd.dir).inherit = a; return undefined; }
      return `LuaInherit type of '${arg}' not recognized, valid options are 'none', 'parent-first', and 'parent-last'`;
    },
  }),
  directive<LuaServer, LuaDir, 'TAKE1'>({
    name: 'LuaCodeCache', args: 'TAKE1', where: OR_ALL, help: 'Controls the behavior of the in-memory code cache  context: stat|forever|never (default: stat) ',
    handler: (cmd: Cmd, arg) => {
      const a = arg.toLowerCase();
      if (a === 'stat' || a === 'forever' || a === 'never') { mut(cmd.dir).codecache = a; return undefined; }
      return `LuaCodeCache type of '${arg}' not recognized, valid options are 'never', 'stat', and 'forever'`;
    },
  }),
  directive<LuaServer, LuaDir, 'TAKE23'>({
    name: 'LuaMapHandler', args: 'TAKE23', where: OR_ALL, help: 'Map a path to a lua handler',
    handler: (cmd: Cmd, match, file, func) => {
      const e = cmd.checkContext(DIR_ONLY);
      if (e) return e;
      const re = compilePcre(match);
      if (re === null) return 'Invalid regex pattern!';
      mut(cmd.dir).mappedHandlers = [...cmd.dir.mappedHandlers, { pattern: re, file, func: func ?? 'handle' }];
      return undefined;
    },
  }),
  ...(['LuaOutputFilter', 'LuaInputFilter'] as const).map((n) => directive<LuaServer, LuaDir, 'TAKE3'>({
    name: n, args: 'TAKE3', where: OR_ALL,
    help: n === 'LuaOutputFilter' ? 'Registers a Lua function as an output filter' : 'Registers a Lua function as an input filter',
    handler: (cmd: Cmd, filter, file, func) => {
      const e = cmd.checkContext(DIR_ONLY);
      if (e) return e;
      const input = n === 'LuaInputFilter';
      mut(cmd.dir).mappedFilters = [...cmd.dir.mappedFilters, { name: filter, file, func, input }];
      let names = filterNames.get(cmd.ctx);
      if (names === undefined) { names = new Map(); filterNames.set(cmd.ctx, names); }
      names.set(filter, input);
      return undefined;
    },
  })),
];

// ---- the module -------------------------------------------------------------------------------

const hooks: HookRegistration = {
  // lua_quick_harness: the server's LuaQuickHandler functions (the quick handler runs before
  // any <Location> or <Directory> is merged), never for a subrequest only looked up.
  quickHandler: { fn: (r: Request, lookup: boolean) => (lookup ? DECLINED : quickHarness(r)), order: HOOK_FIRST },
  handler: [
    { fn: mapHandler, order: LUA_HOOK_FIRST },
    { fn: luaHandler, order: HOOK_MIDDLE },
  ],
  translateName: [
    { fn: harness('translate_name', LUA_HOOK_FIRST), order: LUA_HOOK_FIRST },
    { fn: harness('translate_name', HOOK_MIDDLE), order: HOOK_MIDDLE },
    { fn: harness('translate_name', LUA_HOOK_LAST), order: LUA_HOOK_LAST },
  ],
  fixups: [
    { fn: harness('fixups', HOOK_MIDDLE), order: HOOK_MIDDLE },
    { fn: mapHandlerFixups, order: LUA_HOOK_LAST - 2 },
  ],
  mapToStorage: { fn: harness('map_to_storage', HOOK_MIDDLE), order: HOOK_MIDDLE },
  checkUserId: { fn: harness('check_user_id', HOOK_MIDDLE), order: HOOK_MIDDLE },
  typeChecker: { fn: harness('type_checker', HOOK_MIDDLE), order: HOOK_MIDDLE },
  accessChecker: [
    { fn: harness('access_checker', LUA_HOOK_FIRST), order: LUA_HOOK_FIRST },
    { fn: harness('access_checker', HOOK_MIDDLE), order: HOOK_MIDDLE },
    { fn: harness('access_checker', LUA_HOOK_LAST), order: LUA_HOOK_LAST },
  ],
  authChecker: [
    { fn: harness('auth_checker', LUA_HOOK_FIRST), order: LUA_HOOK_FIRST },
    { fn: harness('auth_checker', HOOK_MIDDLE), order: HOOK_MIDDLE },
    { fn: harness('auth_checker', LUA_HOOK_LAST), order: LUA_HOOK_LAST },
  ],
  insertFilter: { fn: voidHarness('insert_filter', HOOK_MIDDLE), order: HOOK_MIDDLE },
  logTransaction: { fn: logTransaction, order: HOOK_FIRST },
};

const self = defineModule<LuaServer, LuaDir>({
  name: 'lua_module',
  source: 'mod_lua.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ root: undefined }),
  mergeServerConfig: (base, add) => ({ root: add.root ?? base.root }),
  createDirConfig: () => createDir(),
  mergeDirConfig: mergeDir,
  directives,
  hooks,
  configuredFilters,
  configHooks: {
    // Loaded before privileges are dropped (the worker runs post_config as root).
    postConfig: async () => { await preloadLua(); },
    cleanup: () => { closeAllVms(); for (const h of connVms.values()) closeHolder(h); connVms.clear(); },
  },
});

export default self;
