// mod_data (modules/filters/mod_data.c): the DATA output filter turns a response into an RFC 2397
// data URL, "data:TYPE;base64,..." served as text/plain. The type is the response's content
// type with its first space taken out ("text/html; charset=x" → "text/html;charset=x"); a known
// Content-Length is restated for the encoded body. Subrequests pass through untouched.

import { MODULE_API_VERSION, defineModule } from '../../server/module.js';
import type { Request } from '../../server/request/request.js';
import { FTYPE_RESOURCE, transformBrigade, type FilterSpec, type Transform } from '../../server/filters.js';

/** The "data:...;base64," prefix for a content type (exported for the tests). */
export function dataPrefix(contentType: string | undefined): string {
  let type = contentType ?? '';
  let charset = '';
  const sp = type.indexOf(' ');
  if (sp >= 0) {
    charset = type.slice(sp + 1);
    type = type.slice(0, sp);
    const end = charset.indexOf(' ');
    if (end >= 0) charset = charset.slice(0, end);
  }
  return `data:${type}${charset};base64,`;
}

/** Base64 in pieces: whole groups of three bytes as they come, the rest with padding at the end. */
export function base64Transform(prefix: string): Transform {
  let held: Buffer = Buffer.from(prefix, 'latin1');
  let tail: Buffer = Buffer.alloc(0);
  const take = (): Buffer | null => { const h = held; held = Buffer.alloc(0); return h.length ? h : null; };
  return {
    write(data) {
      const all = tail.length ? Buffer.concat([tail, data]) : data;
      const whole = all.length - (all.length % 3);
      tail = Buffer.from(all.subarray(whole));
      const enc = Buffer.from(all.subarray(0, whole).toString('base64'), 'latin1');
      const pre = take();
      return pre ? [pre, enc] : enc;
    },
    end() {
      const enc = Buffer.from(tail.toString('base64'), 'latin1');
      tail = Buffer.alloc(0);
      const pre = take();
      return pre ? [pre, enc] : enc;
    },
  };
}

interface DataState { t: Transform | null }

function start(r: Request): Transform {
  const prefix = dataPrefix(r.contentType);
  const cl = r.headersOut.get('Content-Length');
  if (cl !== undefined) {
    if (/^[0-9]+$/.test(cl) && Number(cl) < 0x7fffffff) {
      const len = prefix.length + Math.ceil(Number(cl) / 3) * 4;
      r.clength = len;
      r.headersOut.set('Content-Length', String(len));
    } else {
      r.headersOut.unset('Content-Length');
    }
  }
  r.contentType = 'text/plain';
  return base64Transform(prefix);
}

const dataFilter: FilterSpec<DataState> = {
  name: 'DATA',
  type: FTYPE_RESOURCE,
  init: () => ({ t: null }),
  filter(f, bb) {
    if (f.state.t === null) {
      if (!f.r.isInitialReq()) {
        f.remove();
        return f.pass(bb);
      }
      f.state.t = start(f.r);
    }
    if (bb.length === 0) return f.pass(bb);
    return transformBrigade(f, bb, f.state.t);
  },
};

const self = defineModule<undefined, undefined>({
  name: 'data_module',
  source: 'mod_data.c',
  apiVersion: MODULE_API_VERSION,
  filters: [dataFilter as FilterSpec],
});

export default self;
