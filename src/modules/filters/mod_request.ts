// mod_request: keeping a request body for subrequests (httpd's modules/filters/mod_request.c).
// KeptBodySize N (per directory) adds the KEEP_BODY input filter, which keeps a copy of up
// to N bytes of the body as it is read (a larger body is a 413 with AH01412/AH01413); a
// subrequest of a request with a kept body reads it again through KEPT_BODY, with the
// Content-Length of what was kept.

import { defineModule, directive, MODULE_API_VERSION, ACCESS_CONF, HOOK_MIDDLE } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { FTYPE_CONTENT_SET, FilterError, type InputFilterInstance, type InputFilterSpec } from '../../server/filters.js';
import { APLOG_ERR } from '../../server/log/levels.js';

interface RequestDir {
  /** Bytes of the body to keep; undefined when not set here (0: keep nothing). */
  readonly keepBody: number | undefined;
}

/** The kept body of a request (or of the main request of a subrequest), if any. */
function keptBody(r: Request): readonly Buffer[] | undefined {
  let m: Request | null = r;
  while (m !== null) {
    if (m.keptBody !== null) return m.keptBody;
    m = m.main;
  }
  return undefined;
}

interface KeepState { remaining: number; limit: number; started: boolean }

const KEEP_BODY: InputFilterSpec<KeepState> = {
  name: 'KEEP_BODY',
  type: FTYPE_CONTENT_SET,
  init: (r) => ({ remaining: 0, limit: self.dir(r).keepBody ?? 0, started: false }),
  async read(f: InputFilterInstance<KeepState>): Promise<Buffer | null> {
    const r = f.r;
    const st = f.state;
    if (!st.started) {
      st.started = true;
      if (st.limit === 0 || r.keptBody !== null) { f.remove(); return f.readNext(); }
      const cl = r.headersIn.get('Content-Length');
      if (cl !== undefined) {
        if (!/^[0-9]+$/.test(cl)) {
          r.log('request', APLOG_ERR, `AH01411: Invalid Content-Length '${cl}'`);
          f.remove();
          throw new FilterError(413);
        }
        const n = Number(cl);
        if (st.limit < n) {
          r.log('request', APLOG_ERR, `AH01412: Requested content-length of ${n} is larger than the configured limit of ${st.limit}`);
          f.remove();
          throw new FilterError(413);
        }
      }
      r.keptBody = [];
      st.remaining = st.limit;
    }
    const b = await f.readNext();
    if (b === null) return null;
    if (b.length > st.remaining) {
      r.keptBody = null;
      r.log('request', APLOG_ERR, `AH01413: Requested content-length of ${b.length} is larger than the configured limit of ${st.limit}`);
      throw new FilterError(413);
    }
    st.remaining -= b.length;
    r.keptBody?.push(Buffer.from(b));
    return b;
  },
};

interface KeptState { pieces: readonly Buffer[]; at: number }

const KEPT_BODY: InputFilterSpec<KeptState> = {
  name: 'KEPT_BODY',
  type: FTYPE_CONTENT_SET,
  init(r) {
    const pieces = keptBody(r) ?? [];
    r.headersIn.unset('Transfer-Encoding');
    r.headersIn.set('Content-Length', String(pieces.reduce((n, b) => n + b.length, 0)));
    return { pieces, at: 0 };
  },
  read(f: InputFilterInstance<KeptState>): Promise<Buffer | null> {
    const st = f.state;
    if (st.at < st.pieces.length) return Promise.resolve(st.pieces[st.at++]!);
    return f.readNext();
  },
};

function insertFilter(r: Request): void {
  if (r.main !== null && keptBody(r.main) !== undefined) r.rt.addInputFilterSpec(r, KEPT_BODY);
  else if ((self.dir(r).keepBody ?? 0) > 0) r.rt.addInputFilterSpec(r, KEEP_BODY);
}

type Cmd = CmdParms<undefined, { keepBody: number | undefined }>;

const self = defineModule<undefined, RequestDir>({
  name: 'request_module',
  source: 'mod_request.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ keepBody: undefined }),
  mergeDirConfig: (base, add) => ({ keepBody: add.keepBody ?? base.keepBody }),
  directives: [
    directive<undefined, { keepBody: number | undefined }, 'TAKE1'>({
      name: 'KeptBodySize', args: 'TAKE1', where: ACCESS_CONF,
      help: 'Maximum size of request bodies kept aside for use by filters',
      handler: (cmd: Cmd, arg: string) => {
        if (!/^[0-9]+$/.test(arg)) return 'KeptBodySize must be a valid size in bytes, or zero.';
        cmd.dir.keepBody = Number(arg);
        return undefined;
      },
    }),
  ],
  hooks: { insertFilter: { fn: insertFilter, order: HOOK_MIDDLE } },
  inputFilters: [KEEP_BODY as InputFilterSpec, KEPT_BODY as InputFilterSpec],
});

export default self;
