// mod_sed (modules/filters/mod_sed.c): the Sed output and input filters run a Solaris sed
// script (OutputSed / InputSed lines, compiled in order onto one script per section) over the
// response or request body. A section with a sed directive replaces the enclosing one's
// script whole (mod_sed has no merge). The output filter drops Content-Length, passes what
// each call produced (with a FLUSH after every 50 buffers of 8000 bytes), holds a line until
// its newline comes, and ends a last line without one with a newline. A script that cannot
// be finished ({ left open, a label never defined) or a line past 8 MB fails the body
// (AH02998 / AH10394, AH10395 on input).

import {
  defineModule, directive, MODULE_API_VERSION, ACCESS_CONF, HOOK_MIDDLE, DECLINED,
} from '../../../server/module.js';
import type { CmdParms } from '../../../server/config/cmd.js';
import type { Request } from '../../../server/request/request.js';
import {
  FilterError, FTYPE_RESOURCE, bucketPieces, FLUSH,
  type Bucket, type FilterSpec, type InputFilterSpec,
} from '../../../server/filters.js';
import { APLOG_ERR } from '../../../server/log/levels.js';
import { fileReadSize } from '../bucket-read.js';
import { SedScript } from './sed-compile.js';
import { SedEval, SedEvalError } from './sed-eval.js';

/** MODSED_OUTBUF_SIZE and MAX_TRANSIENT_BUCKETS: a FLUSH goes down after this much output. */
const OUTBUF_SIZE = 8000;
const MAX_TRANSIENT_BUCKETS = 50;

export interface SedDir {
  output: SedScript | undefined;
  input: SedScript | undefined;
}

type Cmd = CmdParms<undefined, SedDir>;

function addExpr(which: 'output' | 'input') {
  return (cmd: Cmd, arg: string): string | undefined => {
    const script = cmd.dir[which] ?? (cmd.dir[which] = new SedScript());
    const err = script.compile(arg);
    if (err === undefined) return undefined;
    cmd.dir[which] = undefined;
    return `Failed to compile sed expression. ${err ?? '(null)'}`;
  };
}

const ERRNO = {
  ENOMEM: { code: 12, text: 'Cannot allocate memory' },
  APR_EGENERAL: { code: 20014, text: 'Internal error (specific information not available)' },
} as const;

/** Evaluations with w files open, closed when the request is logged at the latest. */
const open = new WeakMap<Request, SedEval[]>();

export interface SedState {
  eval: SedEval | undefined;
  /** Output not yet made into buffers, and how many full buffers went since the last FLUSH. */
  out: string[];
  outLen: number;
  buffers: number;
}

function newEval(r: Request, script: SedScript, st: SedState): SedEval | undefined {
  const ev = new SedEval(script, {
    write: (s) => { st.out.push(s); st.outLen += s.length; },
    error: (msg) => r.log('sed', APLOG_ERR, `AH02998: ${msg}`),
  });
  if (!ev.openFiles()) return undefined;
  if (script.fnames.length) {
    const list = open.get(r) ?? [];
    list.push(ev);
    open.set(r, list);
  }
  return ev;
}

/** What was written so far as data buckets; a FLUSH after every 50 full buffers. */
export function takeOutput(st: SedState, into: Bucket[], all: boolean): void {
  if (st.outLen === 0) return;
  let data = st.out.join('');
  st.out = [];
  st.outLen = 0;
  while (data.length >= OUTBUF_SIZE) {
    const room = (MAX_TRANSIENT_BUCKETS - st.buffers) * OUTBUF_SIZE;
    const n = Math.min(room, data.length - (data.length % OUTBUF_SIZE));
    into.push({ kind: 'data', data: Buffer.from(data.slice(0, n), 'latin1') });
    data = data.slice(n);
    st.buffers += n / OUTBUF_SIZE;
    if (st.buffers >= MAX_TRANSIENT_BUCKETS) { into.push(FLUSH); st.buffers = 0; }
  }
  if (data.length === 0) return;
  if (all) {
    into.push({ kind: 'data', data: Buffer.from(data, 'latin1') });
    st.buffers++;
    if (st.buffers >= MAX_TRANSIENT_BUCKETS) { into.push(FLUSH); st.buffers = 0; }
  } else {
    st.out.push(data);
    st.outLen = data.length;
  }
}

/** The failure of an evaluation: logged with its status; the output side fails the response
 *  (500), the input side fails the read, which its reader maps to 400 (ap_map_http_request_error). */
function evalError(r: Request, e: unknown, ah: string, status: number): FilterError {
  if (!(e instanceof SedEvalError)) throw e;
  r.log('sed', APLOG_ERR, ah, ERRNO[e.code]);
  return new FilterError(status, ah, e.code);
}

const SED_OUT: FilterSpec<SedState> = {
  name: 'Sed',
  type: FTYPE_RESOURCE,
  init: () => ({ eval: undefined, out: [], outLen: 0, buffers: 0 }),
  async filter(f, bb) {
    const r = f.r;
    const script = self.dir(r).output;
    const st = f.state;
    if (script === undefined) {
      f.remove();
      return f.pass(bb);
    }
    if (st.eval === undefined) {
      if (bb.length === 0) return;
      if (bb[0]!.kind === 'eos') {
        f.remove();
        return f.pass(bb);
      }
      const ev = newEval(r, script, st);
      if (ev === undefined) throw new FilterError(500, 'sed init', 'APR_EGENERAL');
      st.eval = ev;
      r.headersOut.unset('Content-Length');
    }
    const ev = st.eval;
    const pass: Bucket[] = [];
    for (const b of bb) {
      if (b.kind === 'eos') {
        try { ev.finalize(); } catch (e) { if (!(e instanceof SedEvalError)) throw e; }
        ev.close();
        takeOutput(st, pass, true);
        pass.push(b);
        continue;
      }
      if (b.kind === 'flush') {
        takeOutput(st, pass, true);
        pass.push(b);
        continue;
      }
      try {
        await bucketPieces(b, async (data) => {
          ev.evalBuffer(data.toString('latin1'));
          // httpd passes on at its 50th buffer, in the middle of evaluating.
          takeOutput(st, pass, false);
          const flushAt = pass.lastIndexOf(FLUSH);
          if (flushAt >= 0) await f.pass(pass.splice(0, flushAt + 1));
        }, fileReadSize(r));
      } catch (e) {
        ev.close();
        throw evalError(r, e, 'AH10394: error evaluating sed on output', 500);
      }
    }
    takeOutput(st, pass, true);
    st.buffers = 0;
    if (pass.length) await f.pass(pass);
  },
};

interface SedInState extends SedState {
  /** Output ready for the reader; null once the end went up. */
  ready: Buffer[];
  ended: boolean;
}

const SED_IN: InputFilterSpec<SedInState> = {
  name: 'Sed',
  type: FTYPE_RESOURCE,
  init: () => ({ eval: undefined, out: [], outLen: 0, buffers: 0, ready: [], ended: false }),
  async read(f) {
    const r = f.r;
    const script = self.dir(r).input;
    const st = f.state;
    if (script === undefined) return f.readNext();
    if (st.eval === undefined) {
      if (!r.isInitialReq()) {
        f.remove();
        return f.readNext();
      }
      const ev = newEval(r, script, st);
      if (ev === undefined) throw new FilterError(400, 'sed init', 'APR_EGENERAL');
      st.eval = ev;
    }
    const ev = st.eval;
    while (st.ready.length === 0 && !st.ended) {
      const data = await f.readNext();
      if (data === null) {
        try { ev.finalize(); } catch (e) { if (!(e instanceof SedEvalError)) throw e; }
        ev.close();
        st.ended = true;
      } else {
        try {
          ev.evalBuffer(data.toString('latin1'));
        } catch (e) {
          ev.close();
          throw evalError(r, e, 'AH10395: error evaluating sed on input', 400);
        }
      }
      if (st.outLen) {
        st.ready.push(Buffer.from(st.out.join(''), 'latin1'));
        st.out = [];
        st.outLen = 0;
      }
    }
    return st.ready.shift() ?? null;
  },
};

function closeFiles(r: Request): void {
  const list = open.get(r);
  if (list === undefined) return;
  open.delete(r);
  for (const ev of list) ev.close();
}

const self = defineModule<undefined, SedDir>({
  name: 'sed_module',
  source: 'mod_sed.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ output: undefined, input: undefined }),
  directives: [
    directive<undefined, SedDir, 'TAKE1'>({ name: 'OutputSed', args: 'TAKE1', where: ACCESS_CONF, help: 'Sed regular expression for Response', handler: addExpr('output') }),
    directive<undefined, SedDir, 'TAKE1'>({ name: 'InputSed', args: 'TAKE1', where: ACCESS_CONF, help: 'Sed regular expression for Request', handler: addExpr('input') }),
  ],
  hooks: { logTransaction: { fn: (r: Request) => { closeFiles(r); return DECLINED; }, order: HOOK_MIDDLE } },
  filters: [SED_OUT as FilterSpec],
  inputFilters: [SED_IN as InputFilterSpec],
});

export default self;
