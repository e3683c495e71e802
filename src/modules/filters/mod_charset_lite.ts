// mod_charset_lite: translates response bodies (and POST/PUT request bodies) between the
// charset files are stored in (CharsetSourceEnc) and the one sent on the network
// (CharsetDefault) (modules/filters/mod_charset_lite.c). The fixup hook decides per request
// whether a translation is configured; the XLATEOUT and XLATEIN filters are added implicitly
// (unless CharsetOptions NoImplicitAdd) or by name. Only text/* and message/* responses are
// translated unless TranslateAllMimeTypes. 2.4 dropped the DebugLevel option.
// Transcoding is done by iconv-lite (README, "Runtime dependencies").

import iconv from 'iconv-lite';

// iconv-lite reads its table of encodings on first use; read it now, while the server can
// still read its own files (nothing is loaded after privileges are dropped: issue 19 item 7).
// The single-byte and Unicode codecs are in that table; CJK tables load per codec.
iconv.encodingExists('iso-8859-1');
import { defineModule, directive, MODULE_API_VERSION, OR_FILEINFO, DECLINED, HOOK_MIDDLE, HOOK_REALLY_LAST } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import {
  FTYPE_RESOURCE, bucketPieces, dataBucket, EOS,
  type Brigade, type FilterInstance, type FilterSpec, type InputFilterSpec, type Transform,
} from '../../server/filters.js';
import { APLOG_DEBUG, APLOG_ERR } from '../../server/log/levels.js';

export interface CharsetDir {
  source: string | undefined;
  target: string | undefined;
  /** undefined: not set here (implicit add on). */
  implicitAdd: boolean | undefined;
  /** undefined: not set here (text/* and message/* only). */
  translateAll: boolean | undefined;
}

type Cmd = CmdParms<undefined, CharsetDir>;

export function setOption(dc: CharsetDir, flag: string): string | undefined {
  switch (flag.toLowerCase()) {
    case 'implicitadd': dc.implicitAdd = true; return undefined;
    case 'noimplicitadd': dc.implicitAdd = false; return undefined;
    case 'translateallmimetypes': dc.translateAll = true; return undefined;
    case 'notranslateallmimetypes': dc.translateAll = false; return undefined;
    default: return `Invalid CharsetOptions option: ${flag}`;
  }
}

/** A translation from one charset to another, or null when the pair cannot be opened
 *  (apr_xlate_open fails with EINVAL). */
function openXlate(to: string, from: string): { t: Transform } | null {
  if (!iconv.encodingExists(from) || !iconv.encodingExists(to)) return null;
  const dec = iconv.getDecoder(from);
  const enc = iconv.getEncoder(to);
  const t: Transform = {
    write: (data) => {
      const s = dec.write(data);
      return s === '' ? null : enc.write(s);
    },
    end: () => {
      const rest = dec.end() ?? '';
      const a = rest === '' ? Buffer.alloc(0) : enc.write(rest);
      const b = enc.end();
      return b && b.length ? Buffer.concat([a, b]) : a;
    },
  };
  return { t };
}

const EINVAL = { code: 22, text: 'Invalid argument' };

interface ReqInfo {
  dc: CharsetDir;
  outputClaimed: boolean;
  input: Transform | null;
}

const reqInfos = new WeakMap<Request, ReqInfo>();

/** find_code_page (fixups): whether this request has a translation configured. */
function findCodePage(r: Request): number {
  const dc = self.dir(r);
  if (dc.source === undefined || dc.target === undefined) {
    r.log('charset_lite', APLOG_DEBUG, `AH01448: incomplete configuration: src ${dc.source ?? 'unspecified'}, dst ${dc.target ?? 'unspecified'}`, undefined, 'mod_charset_lite.c(216)');
    return DECLINED;
  }
  const fn = r.filename;
  if (fn && (fn.startsWith('redirect:') || fn.startsWith('gone:') || fn.startsWith('passthrough:') || fn.startsWith('forbidden:'))) return DECLINED;
  if (dc.source.toLowerCase() === dc.target.toLowerCase()) return DECLINED;
  const info: ReqInfo = { dc, outputClaimed: false, input: null };
  reqInfos.set(r, info);
  if (r.method === 'PUT' || r.method === 'POST') {
    const x = openXlate(dc.source, dc.target);
    if (x === null) {
      r.log('charset_lite', APLOG_ERR, `AH01449: can't open translation ${dc.target}->${dc.source}`, EINVAL);
      return 500;
    }
    info.input = x.t;
  }
  return DECLINED;
}

/** xlate_insert_filter: the filters added unless NoImplicitAdd or already there by name. */
function insertFilters(r: Request): void {
  const dc = self.dir(r);
  if (dc.implicitAdd === false) return;
  const info = reqInfos.get(r);
  if (!info) return;
  if (!r.outputFilters.some((f) => f.spec.name.toLowerCase() === 'xlateout')) r.rt.addFilter(r, XLATEOUT);
  if (info.input && !r.inputFilters.some((f) => f.spec.name.toLowerCase() === 'xlatein')) r.rt.addInputFilterSpec(r, XLATEIN);
}

interface OutState { ready: boolean; noop: boolean; t: Transform | null }

const XLATEOUT: FilterSpec<OutState> = {
  name: 'XLATEOUT',
  type: FTYPE_RESOURCE,
  init: () => ({ ready: false, noop: false, t: null }),
  filter(f, bb) {
    const st = f.state;
    const r = f.r;
    if (!st.ready) {
      st.ready = true;
      const info = reqInfos.get(r);
      // One instance per request translates (a second one of the same name does nothing).
      if (!info || info.outputClaimed) st.noop = true;
      else {
        info.outputClaimed = true;
        const dc = info.dc;
        const mt = r.contentType?.toLowerCase();
        if (mt !== undefined && (mt.startsWith('text/') || mt.startsWith('message/') || dc.translateAll === true)) {
          const x = openXlate(dc.target!, dc.source!);
          if (x === null) {
            r.log('charset_lite', APLOG_ERR, `AH01453: can't open translation ${dc.source}->${dc.target}`, EINVAL);
            st.noop = true;
          } else {
            st.t = x.t;
            // httpd keeps Content-Length only when apr_xlate reports both charsets single-byte,
            // which Debian's APR (iconv) never does: it is always dropped.
            r.headersOut.unset('Content-Length');
          }
        } else st.noop = true;
      }
    }
    if (st.noop) return f.pass(bb);
    // The translated bytes go on as they are made and EOS on its own (send_downstream,
    // send_eos): the response is not seen whole by the content-length filter.
    return translateBrigade(f, bb, st.t!);
  },
};

async function translateBrigade(f: FilterInstance<OutState>, bb: Brigade, t: Transform): Promise<void> {
  for (const b of bb) {
    if (b.kind === 'data' || b.kind === 'file') {
      await bucketPieces(b, async (d) => {
        const out = await t.write(d);
        const bufs = out === null ? [] : Buffer.isBuffer(out) ? [out] : out;
        const nonEmpty = bufs.filter((x) => x.length > 0);
        if (nonEmpty.length > 0) await f.pass(nonEmpty.map((x) => dataBucket(x)));
      });
    } else if (b.kind === 'flush') {
      await f.pass([b]);
    } else {
      const out = await t.end();
      const bufs = out === null ? [] : Buffer.isBuffer(out) ? [out] : out;
      const nonEmpty = bufs.filter((x) => x.length > 0);
      if (nonEmpty.length > 0) await f.pass(nonEmpty.map((x) => dataBucket(x)));
      await f.pass([EOS]);
    }
  }
}

interface InState { t: Transform | null; ended: boolean; started: boolean }

const XLATEIN: InputFilterSpec<InState> = {
  name: 'XLATEIN',
  type: FTYPE_RESOURCE,
  init: () => ({ t: null, ended: false, started: false }),
  async read(f) {
    const st = f.state;
    if (!st.started) {
      st.started = true;
      const info = reqInfos.get(f.r);
      st.t = info?.input ?? null;
      if (info) info.input = null;
    }
    if (st.t === null) return f.readNext();
    for (;;) {
      if (st.ended) return null;
      const b = await f.readNext();
      const out = b === null ? await st.t.end() : await st.t.write(b);
      if (b === null) st.ended = true;
      const buf = out === null ? null : Buffer.isBuffer(out) ? out : Buffer.concat(out);
      if (buf && buf.length) return buf;
      if (b === null) return null;
    }
  },
};

const self = defineModule<undefined, CharsetDir>({
  name: 'charset_lite_module',
  source: 'mod_charset_lite.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ source: undefined, target: undefined, implicitAdd: undefined, translateAll: undefined }),
  mergeDirConfig: (base, add) => ({
    source: add.source ?? base.source,
    target: add.target ?? base.target,
    implicitAdd: add.implicitAdd ?? base.implicitAdd,
    translateAll: add.translateAll ?? base.translateAll,
  }),
  directives: [
    directive<undefined, CharsetDir, 'TAKE1'>({
      name: 'CharsetSourceEnc', args: 'TAKE1', where: OR_FILEINFO, help: 'source (html,cgi,ssi) file charset',
      handler: (cmd: Cmd, a: string) => { cmd.dir.source = a; },
    }),
    directive<undefined, CharsetDir, 'TAKE1'>({
      name: 'CharsetDefault', args: 'TAKE1', where: OR_FILEINFO, help: 'name of default charset',
      handler: (cmd: Cmd, a: string) => { cmd.dir.target = a; },
    }),
    directive<undefined, CharsetDir, 'ITERATE'>({
      name: 'CharsetOptions', args: 'ITERATE', where: OR_FILEINFO, help: 'valid options: ImplicitAdd, NoImplicitAdd, TranslateAllMimeTypes, NoTranslateAllMimeTypes',
      handler: (cmd: Cmd, a: string) => setOption(cmd.dir, a),
    }),
  ],
  hooks: {
    fixups: { fn: findCodePage, order: HOOK_MIDDLE },
    insertFilter: { fn: insertFilters, order: HOOK_REALLY_LAST },
  },
  filters: [XLATEOUT as FilterSpec],
  inputFilters: [XLATEIN as InputFilterSpec],
});

export default self;
