// mod_buffer (modules/filters/mod_buffer.c): the BUFFER filters gather a body into bigger
// pieces. Output: everything is held until the end of the response, a FLUSH, or more than
// BufferSize bytes are held (so a response made in many small writes goes out whole, with a
// Content-Length). Input: the body is read ahead from the client up to BufferSize bytes at a
// time. Both step aside in subrequests.

import { MODULE_API_VERSION, ACCESS_CONF, defineModule, directive } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { FTYPE_CONTENT_SET, brigadeLength, type Brigade, type FilterSpec, type InputFilterSpec } from '../../server/filters.js';

const DEFAULT_BUFFER_SIZE = 128 * 1024;

interface BufferDir {
  /** BufferSize, undefined when not set here. */
  size: number | undefined;
}

function bufferSize(r: { perDirConfig: readonly unknown[] }): number {
  return self.dir(r).size ?? DEFAULT_BUFFER_SIZE;
}

/** apr_strtoff(…, NULL, 10): blanks, a sign, digits, anything after ignored; the size must
 *  come out above zero (exported for the tests). */
export function parseBufferSize(arg: string): number | undefined {
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d+)/.exec(arg);
  if (m === null) return undefined;
  const n = BigInt(m[1] + m[2]!);
  if (n <= 0n || n > 0x7fffffffffffffffn) return undefined;
  return Number(n);
}

function setBufferSize(cmd: CmdParms<undefined, BufferDir>, arg: string): string | undefined {
  const n = parseBufferSize(arg);
  if (n === undefined) return 'BufferSize must be a size in bytes, and greater than zero';
  cmd.dir.size = n;
  return undefined;
}

interface OutState { started: boolean; held: Brigade; size: number }

const bufferOut: FilterSpec<OutState> = {
  name: 'BUFFER',
  type: FTYPE_CONTENT_SET,
  init: () => ({ started: false, held: [], size: DEFAULT_BUFFER_SIZE }),
  async filter(f, bb) {
    const st = f.state;
    if (!st.started) {
      if (f.r.main !== null) {
        f.remove();
        return f.pass(bb);
      }
      st.started = true;
      st.size = bufferSize(f.r);
    }
    if (bb.length === 0) return f.pass(bb);
    for (const b of bb) {
      if (b.kind === 'eos' || b.kind === 'flush') {
        st.held.push(b);
        const out = st.held;
        st.held = [];
        await f.pass(out);
        continue;
      }
      if (brigadeLength(st.held) > st.size) {
        const out = st.held;
        st.held = [];
        await f.pass(out);
      }
      st.held.push(b);
    }
  },
};

interface InState { queue: Buffer[]; eos: boolean }

const bufferIn: InputFilterSpec<InState> = {
  name: 'BUFFER',
  type: FTYPE_CONTENT_SET,
  init: () => ({ queue: [], eos: false }),
  async read(f) {
    if (!f.r.isInitialReq()) {
      f.remove();
      return f.readNext();
    }
    const st = f.state;
    if (st.queue.length === 0 && !st.eos) {
      let remaining = bufferSize(f.r);
      while (!st.eos && remaining > 0) {
        const piece = await f.readNext();
        if (piece === null) st.eos = true;
        else { st.queue.push(piece); remaining -= piece.length; }
      }
    }
    if (st.queue.length === 0) {
      f.remove();
      return null;
    }
    const out = st.queue.length === 1 ? st.queue[0]! : Buffer.concat(st.queue);
    st.queue = [];
    return out;
  },
};

const self = defineModule<undefined, BufferDir>({
  name: 'buffer_module',
  source: 'mod_buffer.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ size: undefined }),
  mergeDirConfig: (base, add) => ({ size: add.size ?? base.size }),
  directives: [
    directive<undefined, BufferDir, 'TAKE1'>({ name: 'BufferSize', args: 'TAKE1', where: ACCESS_CONF, help: 'Maximum size of the buffer used by the buffer filter', handler: setBufferSize }),
  ],
  filters: [bufferOut as FilterSpec],
  inputFilters: [bufferIn as InputFilterSpec],
});

export default self;
