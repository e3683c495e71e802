// mod_ext_filter: filters that run an external program (modules/filters/mod_ext_filter.c).
// ExtFilterDefine names a filter and the program behind it; each request that uses the filter
// starts the program (without a shell: the cmd= words are its argv), writes the body to its
// stdin and passes what it prints on stdout down the chain (output filters) or up to the
// handler (input filters), streaming, with backpressure both ways. ExtFilterOptions sets where
// the program's stderr goes and whether a program that cannot start fails the request
// (Onfail=abort, the default) or is skipped (Onfail=remove). 2.4 dropped DebugLevel.

import { spawn, type ChildProcess } from 'node:child_process';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF, ACCESS_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import {
  FilterError, FTYPE_RESOURCE, bucketPieces, dataBucket, EOS,
  type Brigade, type FilterInstance, type FilterSpec, type InputFilterInstance, type InputFilterSpec,
} from '../../server/filters.js';
import { APLOG_ERR, APLOG_TRACE1 } from '../../server/log/levels.js';
import { errnoOf } from '../../server/log/error-log.js';
import { NO_CONTENT_LENGTH } from '../../server/http/response.js';
import { addCgiVars, addCommonVars, createEnvironment } from '../../server/util-script.js';
import { tokenizeArgv } from '../../lib/apr-strings.js';
import { unescapeUrl } from '../../lib/urlencoded.js';

export interface ExtFilterDef {
  readonly name: string;
  readonly mode: 'output' | 'input';
  readonly ftype: number;
  /** argv[0] is the program. */
  readonly argv: readonly string[];
  readonly intype: string | undefined;
  readonly outtype: string | undefined;
  readonly preservesContentLength: boolean;
  readonly enableEnv: string | undefined;
  readonly disableEnv: string | undefined;
}

interface ExtFilterServer {
  /** Definitions by lower-cased name. */
  readonly defs: Map<string, ExtFilterDef>;
}

interface ExtFilterDir {
  /** undefined: not set here (NoLogStderr). */
  logStderr: boolean | undefined;
  /** undefined: not set here (abort). */
  onfailRemove: boolean | undefined;
}

type Cmd = CmdParms<ExtFilterServer, ExtFilterDir>;

// ---- ExtFilterDefine ---------------------------------------------------------------------

/** ap_getword_white: the next blank-separated word and the rest after the blanks. */
function wordWhite(s: string): [string, string] {
  let i = 0;
  while (i < s.length && !/\s/.test(s[i]!)) i++;
  const w = s.slice(0, i);
  while (i < s.length && /\s/.test(s[i]!)) i++;
  return [w, s.slice(i)];
}

/** parse_cmd: cmd="prog arg ..." (words as apr_tokenize_to_argv splits them) or cmd=prog
 *  (one word); returns the argv and the rest, or httpd's error text. */
function parseCmd(args: string): { argv: string[]; rest: string } | string {
  if (args.startsWith('"')) {
    let i = 1;
    let escaping = false;
    while (i < args.length && (args[i] !== '"' || escaping)) {
      if (escaping) escaping = false;
      else if (args[i] === '\\') escaping = true;
      i++;
    }
    if (args[i] !== '"') return 'Expected cmd= delimiter';
    const argv = tokenizeArgv(args.slice(1, i));
    if (argv.length === 0) return 'Invalid cmd= parameter';
    return { argv, rest: args.slice(i + 1) };
  }
  const [w, rest] = wordWhite(args);
  return { argv: [w], rest };
}

/** define_filter: the definition or httpd's error text. */
export function parseDefine(raw: string, defined: ReadonlyMap<string, ExtFilterDef>): ExtFilterDef | string {
  let [name, args] = wordWhite(raw.trimStart());
  // httpd's check for a missing name never fires (ap_getword_white gives ""): an empty name
  // defines a filter nobody can use, and the server starts.
  if (defined.has(name.toLowerCase())) return `ExtFilter ${name} is already defined`;
  let mode: 'output' | 'input' = 'output';
  let ftype = FTYPE_RESOURCE;
  let argv: string[] = [];
  let intype: string | undefined;
  let outtype: string | undefined;
  let preserves = false;
  let enableEnv: string | undefined;
  let disableEnv: string | undefined;
  const starts = (p: string): boolean => args.slice(0, p.length).toLowerCase() === p;
  while (args !== '') {
    args = args.replace(/^\s+/, '');
    if (args === '') break;
    let token: string;
    if (starts('preservescontentlength')) {
      [token, args] = wordWhite(args);
      if (token.toLowerCase() !== 'preservescontentlength') return `mangled argument \`${token}'`;
      preserves = true;
    } else if (starts('mode=')) {
      [token, args] = wordWhite(args.slice(5));
      const t = token.toLowerCase();
      if (t === 'output') mode = 'output';
      else if (t === 'input') mode = 'input';
      else return `Invalid mode: \`${token}'`;
    } else if (starts('ftype=')) {
      [token, args] = wordWhite(args.slice(6));
      ftype = atoi(token);
    } else if (starts('enableenv=')) {
      [enableEnv, args] = wordWhite(args.slice(10));
    } else if (starts('disableenv=')) {
      [disableEnv, args] = wordWhite(args.slice(11));
    } else if (starts('intype=')) {
      [intype, args] = wordWhite(args.slice(7));
    } else if (starts('outtype=')) {
      [outtype, args] = wordWhite(args.slice(8));
    } else if (starts('cmd=')) {
      const c = parseCmd(args.slice(4));
      if (typeof c === 'string') return c;
      argv = c.argv;
      args = c.rest;
    } else {
      return `Unexpected parameter: \`${args}'`;
    }
  }
  return { name, mode, ftype, argv, intype, outtype, preservesContentLength: preserves, enableEnv, disableEnv };
}

/** C atoi: leading blanks, a sign, digits; 0 when there are none. */
function atoi(s: string): number {
  const m = /^\s*([+-]?\d+)/.exec(s);
  return m ? parseInt(m[1]!, 10) | 0 : 0;
}

function defineFilter(cmd: Cmd, raw: string): string | undefined {
  const def = parseDefine(raw, cmd.srv.defs);
  if (typeof def === 'string') return def;
  cmd.srv.defs.set(def.name.toLowerCase(), def);
  return undefined;
}

function addOption(cmd: Cmd, arg: string): string | undefined {
  switch (arg.toLowerCase()) {
    case 'logstderr': cmd.dir.logStderr = true; return undefined;
    case 'nologstderr': cmd.dir.logStderr = false; return undefined;
    case 'onfail=remove': cmd.dir.onfailRemove = true; return undefined;
    case 'onfail=abort': cmd.dir.onfailRemove = false; return undefined;
    default: return `Invalid ExtFilterOptions option: ${arg}`;
  }
}

// ---- running the program -----------------------------------------------------------------

/** find_filter_def: the request's server's definition, else the main server's. */
function findDef(r: Request, lname: string): ExtFilterDef | undefined {
  return self.server(r.server).defs.get(lname) ?? self.server(r.rt.mainServer).defs.get(lname);
}

/** A started program: its stdout read as it comes, stdin written with backpressure. */
class ExtProcess {
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private waiter: (() => void) | null = null;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private stdinError: Error | null = null;

  constructor(readonly child: ChildProcess) {
    const out = child.stdout!;
    out.on('data', (d: Buffer) => {
      this.chunks.push(d);
      // Hold the program back until its output has gone on (backpressure from below).
      out.pause();
      this.wake();
    });
    out.on('end', () => { this.ended = true; this.wake(); });
    out.on('error', () => { this.ended = true; this.wake(); });
    child.stdin!.on('error', (e) => { this.stdinError = e; });
    this.exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  /** What the program has printed so far (resuming it), without waiting. */
  take(): Buffer[] {
    const got = this.chunks.splice(0, this.chunks.length);
    if (!this.ended) this.child.stdout!.resume();
    return got;
  }

  /** The next output of the program, or null at its end. */
  async next(): Promise<Buffer | null> {
    for (;;) {
      if (this.chunks.length > 0) {
        const b = this.chunks.length === 1 ? this.chunks.pop()! : Buffer.concat(this.chunks.splice(0, this.chunks.length));
        if (!this.ended) this.child.stdout!.resume();
        return b;
      }
      if (this.ended) return null;
      await new Promise<void>((resolve) => { this.waiter = resolve; this.child.stdout!.resume(); });
    }
  }

  /** Writes to the program's stdin; resolves when it can take more. While it cannot,
   *  `onOutput` (if given) is called each time the program printed something, to pass that
   *  on (the program may be waiting for its output to be read before it reads more). */
  write(data: Buffer, onOutput?: () => Promise<void> | void): Promise<void> | undefined {
    const stdin = this.child.stdin!;
    if (this.stdinError || stdin.destroyed) return undefined;
    if (stdin.write(data)) return undefined;
    if (!onOutput) {
      return new Promise((resolve) => {
        const done = (): void => { stdin.off('drain', done); stdin.off('close', done); resolve(); };
        stdin.on('drain', done);
        stdin.on('close', done);
      });
    }
    return (async () => {
      let drained = false;
      const done = (): void => { drained = true; this.wake(); };
      stdin.once('drain', done);
      stdin.once('close', done);
      try {
        while (!drained) {
          if (this.chunks.length > 0) { await onOutput(); continue; }
          await new Promise<void>((resolve) => { this.waiter = resolve; });
        }
      } finally {
        stdin.off('drain', done);
        stdin.off('close', done);
      }
    })();
  }

  endInput(): void {
    this.child.stdin!.end();
  }

  wait(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }
}

// The program's exit status is not looked at: httpd 2.4 neither waits for it nor logs it (the
// AH10451-AH10453 checks exist only in httpd's trunk).

function dirConf(r: Request): { logStderr: boolean; onfailRemove: boolean } {
  const d = self.dir(r);
  return { logStderr: d.logStderr ?? false, onfailRemove: d.onfailRemove ?? false };
}

/** Whether the definition applies to this request (intype, enableenv, disableenv). */
function isNoop(r: Request, def: ExtFilterDef): boolean {
  if (def.intype !== undefined) {
    const ct = def.mode === 'input' ? r.headersIn.get('Content-Type') : r.contentType;
    if (ct === undefined || ct === null) return true;
    const semi = ct.indexOf(';');
    if ((semi < 0 ? ct : ct.slice(0, semi)).toLowerCase() !== def.intype.toLowerCase()) return true;
  }
  if (def.enableEnv !== undefined && !r.subprocessEnv.has(def.enableEnv)) return true;
  if (def.disableEnv !== undefined && r.subprocessEnv.has(def.disableEnv)) return true;
  return false;
}

/** init_ext_filter_process: the environment as for a CGI script plus DOCUMENT_URI,
 *  DOCUMENT_PATH_INFO and QUERY_STRING_UNESCAPED, then the program started (no shell). */
async function startProcess(r: Request, def: ExtFilterDef, logStderr: boolean): Promise<ExtProcess | NodeJS.ErrnoException> {
  await addCgiVars(r);
  addCommonVars(r);
  r.subprocessEnv.set('DOCUMENT_URI', r.uri);
  r.subprocessEnv.set('DOCUMENT_PATH_INFO', r.pathInfo);
  if (r.args !== undefined) {
    const un = unescapeUrl(r.args);
    r.subprocessEnv.set('QUERY_STRING_UNESCAPED', un.replace(/[&;`'"|*?~<>^()[\]{}$\\\n\xFF]/g, (c) => '\\' + c));
  }
  const env = createEnvironment(r.subprocessEnv);
  // DIFFERENCE: a definition without cmd= is accepted as by httpd, which then has no program
  // to start; here starting it fails as a program that does not exist does (ENOENT).
  if (def.argv.length === 0) return Object.assign(new Error('no such file'), { code: 'ENOENT', errno: -2 });
  const child = spawn(def.argv[0]!, def.argv.slice(1), { env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  const started = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
    child.once('spawn', () => resolve(null));
    child.once('error', (e: NodeJS.ErrnoException) => resolve(e));
  });
  if (started) return started;
  // The program's stderr: the request's server's error log with LogStderr; otherwise httpd's
  // own stderr, which is the main server's error log.
  const sink = (logStderr ? r.server : r.rt.mainServer).errorLog.sink;
  child.stderr!.on('data', (d: Buffer) => sink.write(d.toString('latin1')));
  return new ExtProcess(child);
}

function traceFiltering(r: Request, def: ExtFilterDef, noop: boolean, logStderr: boolean): void {
  if (!r.wantsLog('ext_filter', APLOG_TRACE1)) return;
  const cfg = `ExtFilterOptions ${logStderr ? 'LogStderr' : 'NoLogStderr'} ${def.preservesContentLength ? 'PreservesContentLength' : '!PreserveContentLength'} ExtFilterInType ${def.intype ?? '*/*'} ExtFilterOuttype ${def.outtype ?? '(unchanged)'}`;
  r.log('ext_filter', APLOG_TRACE1, `${noop ? 'NOT ' : ''}filtering \`${r.uri || r.filename}' of type \`${r.contentType ?? '(unspecified)'}' through \`${def.argv[0]}', cfg ${cfg}`);
}

// ---- the output filter ---------------------------------------------------------------------

/** The state both filters start from. */
interface StartState {
  noop: boolean;
  proc: ExtProcess | null;
  def: ExtFilterDef | undefined;
}

/** What an output or input filter does first: finds its definition, decides whether it is a
 *  no-op here (EnableEnv / DisableEnv), starts the program (`started` runs once it is) and
 *  logs what fails; `failed` then asks the caller to remove or abort as ExtFilterOptions say. */
async function startFilter(r: Request, st: StartState, specName: string, lname: string, started?: (def: ExtFilterDef) => void):
  Promise<{ failed: boolean; errno: { code: number; text: string } | undefined; dc: ExtFilterDir }> {
  const def = findDef(r, lname);
  const dc = dirConf(r);
  if (!def) {
    r.log('ext_filter', APLOG_ERR, `AH01459: couldn't find definition of filter '${specName}'`);
    return { failed: true, errno: undefined, dc };
  }
  st.def = def;
  st.noop = isNoop(r, def);
  if (!st.noop) {
    const p = await startProcess(r, def, dc.logStderr);
    if (!(p instanceof ExtProcess)) {
      const errno = errnoOf(p);
      r.log('ext_filter', APLOG_ERR, `AH01458: couldn't create child process to run \`${def.argv[0]}'`, errno);
      return { failed: true, errno, dc };
    }
    st.proc = p;
    started?.(def);
  }
  traceFiltering(r, def, st.noop, dc.logStderr);
  return { failed: false, errno: undefined, dc };
}

interface OutState {
  started: boolean;
  noop: boolean;
  proc: ExtProcess | null;
  def: ExtFilterDef | undefined;
}

function outputSpec(lname: string, name: string, ftype: number): FilterSpec<OutState> {
  return {
    name, type: ftype,
    init: () => ({ started: false, noop: false, proc: null, def: undefined }),
    filter: (f, bb) => outputFilter(f, bb, lname),
  };
}

/** Output held at the end of the body before it goes on in pieces: below this the program's
 *  whole output goes down with EOS in one brigade, as httpd's ef_unified_filter passes it (so
 *  the response gets a Content-Length). */
// DIFFERENCE: httpd holds the program's whole output at EOS, however large; here memory is
// bounded and output past 4 MB goes on in pieces (the response is then chunked).
const HOLD_AT_EOS = 4 * 1024 * 1024;

async function outputFilter(f: FilterInstance<OutState>, bb: Brigade, lname: string): Promise<void> {
  const st = f.state;
  const r = f.r;
  if (!st.started) {
    st.started = true;
    const { failed, errno, dc } = await startFilter(r, st, f.spec.name, lname, (def) => {
      if (def.outtype !== undefined) r.contentType = def.outtype;
      if (!def.preservesContentLength) r.headersOut.unset('Content-Length');
    });
    if (failed) {
      r.log('ext_filter', APLOG_ERR, `AH01467: can't initialise output filter ${f.spec.name}: ${dc.onfailRemove ? 'removing' : 'aborting'}`, errno);
      f.remove();
      if (dc.onfailRemove) return f.pass(bb);
      // httpd passes an error bucket: the 500 page then goes out without a Content-Length.
      r.notes.set(NO_CONTENT_LENGTH, '1');
      throw new FilterError(500);
    }
  }
  if (st.noop) {
    f.remove();
    return f.pass(bb);
  }
  const p = st.proc!;
  const passOut = (): Promise<void> | void => {
    const got = p.take();
    if (got.length > 0) return f.pass(got.map((d) => dataBucket(d)));
  };
  let eos = false;
  for (const b of bb) {
    if (b.kind === 'eos') { eos = true; break; }
    if (b.kind === 'data' || b.kind === 'file') await bucketPieces(b, (d) => p.write(d, passOut));
  }
  if (!eos) {
    // What the program printed so far goes on (httpd reads its output until it would block).
    await passOut();
    return;
  }
  p.endInput();
  let held: Buffer[] = [];
  let size = 0;
  for (let d = await p.next(); d !== null; d = await p.next()) {
    held.push(d);
    size += d.length;
    if (size >= HOLD_AT_EOS) {
      const out = held;
      held = [];
      size = 0;
      await f.pass(out.map((x) => dataBucket(x)));
    }
  }
  await p.wait();
  await f.pass([...held.map((x) => dataBucket(x)), EOS]);
}

// ---- the input filter -------------------------------------------------------------------------

interface InState {
  started: boolean;
  noop: boolean;
  proc: ExtProcess | null;
  def: ExtFilterDef | undefined;
  feeding: Promise<void> | null;
  done: boolean;
  error: FilterError | null;
}

function inputSpec(lname: string, name: string, ftype: number): InputFilterSpec<InState> {
  return {
    name, type: ftype,
    init: () => ({ started: false, noop: false, proc: null, def: undefined, feeding: null, done: false, error: null }),
    read: (f) => inputRead(f, lname),
  };
}

async function inputRead(f: InputFilterInstance<InState>, lname: string): Promise<Buffer | null> {
  const st = f.state;
  const r = f.r;
  if (!st.started) {
    st.started = true;
    const { failed: err, errno, dc } = await startFilter(r, st, f.spec.name, lname);
    if (err) {
      r.log('ext_filter', APLOG_ERR, `AH01470: can't initialise input filter ${f.spec.name}: ${dc.onfailRemove ? 'removing' : 'aborting'}`, errno);
      f.remove();
      if (dc.onfailRemove) return f.readNext();
      throw new FilterError(500);
    }
    if (!st.noop) st.feeding = feedInput(f);
  }
  if (st.noop) {
    f.remove();
    return f.readNext();
  }
  if (st.done) return null;
  const p = st.proc!;
  const d = await p.next();
  if (d !== null) return d;
  await st.feeding;
  if (st.error) throw st.error;
  st.done = true;
  return null;
}

/** Reads the body from below into the program's stdin, then closes it. */
async function feedInput(f: InputFilterInstance<InState>): Promise<void> {
  const p = f.state.proc!;
  try {
    for (let b = await f.readNext(); b !== null; b = await f.readNext()) await p.write(b);
  } catch (e) {
    f.state.error = e instanceof FilterError ? e : new FilterError(500, String(e));
    p.child.kill('SIGTERM');
  } finally {
    p.endInput();
  }
}

// ---- the module ---------------------------------------------------------------------------------

function configuredFilters(ctx: ConfigContext): { output: FilterSpec[]; input: InputFilterSpec[] } {
  const output = new Map<string, FilterSpec>();
  const input = new Map<string, InputFilterSpec>();
  const servers: ServerRec[] = [ctx.mainServer, ...ctx.vhosts];
  for (const s of servers) {
    for (const [lname, def] of self.server(s).defs) {
      if (def.mode === 'output') output.set(lname, outputSpec(lname, def.name, def.ftype) as unknown as FilterSpec);
      else input.set(lname, inputSpec(lname, def.name, def.ftype) as unknown as InputFilterSpec);
    }
  }
  return { output: [...output.values()], input: [...input.values()] };
}

const self = defineModule<ExtFilterServer, ExtFilterDir>({
  name: 'ext_filter_module',
  source: 'mod_ext_filter.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ defs: new Map() }),
  createDirConfig: () => ({ logStderr: undefined, onfailRemove: undefined }),
  mergeDirConfig: (base, add) => ({
    logStderr: add.logStderr ?? base.logStderr,
    onfailRemove: add.onfailRemove ?? base.onfailRemove,
  }),
  directives: [
    directive<ExtFilterServer, ExtFilterDir, 'RAW_ARGS'>({
      name: 'ExtFilterDefine', args: 'RAW_ARGS', where: RSRC_CONF, help: 'Define an external filter',
      handler: defineFilter,
    }),
    directive<ExtFilterServer, ExtFilterDir, 'ITERATE'>({
      name: 'ExtFilterOptions', args: 'ITERATE', where: ACCESS_CONF, help: 'valid options: LogStderr, NoLogStderr',
      handler: addOption,
    }),
  ],
  configuredFilters,
});

export default self;
