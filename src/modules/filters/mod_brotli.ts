// mod_brotli (modules/filters/mod_brotli.c): the BROTLI_COMPRESS output filter on Node's zlib
// Brotli encoder. It compresses for Accept-Encoding: br (not q=0), adds Vary:
// Accept-Encoding once it looks, leaves coded responses, subrequests, 204s, Range answers
// and no-brotli requests alone, alters the ETag as BrotliAlterETag says, and passes output
// as the encoder produces it (so a body the encoder finishes in one go gets a
// Content-Length). Whole static files' compressed forms are kept (compressed-cache.ts).

import * as zlib from 'node:zlib';
import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import {
  EOS, FilterError, FTYPE_CONTENT_SET, bucketPieces, type Brigade, type FilterInstance, type FilterSpec,
} from '../../server/filters.js';
import { APLOG_ERR, APLOG_TRACE1 } from '../../server/log/levels.js';
import { compressedCache, wholeFile } from './compressed-cache.js';
import {
  acceptsCoding, dataBuckets as data, hasContentCoding, parseEtagOpt, replayPasses, responseEncoding, setCodingHeaders, setCodingNote,
  ETAG_ADDSUFFIX, type CodingNotes, type EtagOpt,
} from './encoding.js';
import { atoi } from '../../lib/c-numbers.js';

export interface BrotliServer extends CodingNotes {
  quality: number;
  lgwin: number;
  /** 0: the encoder chooses. */
  lgblock: number;
  etagOpt: EtagOpt;
}

function createServerConfig(): BrotliServer {
  return { quality: 5, lgwin: 18, lgblock: 0, etagOpt: ETAG_ADDSUFFIX, noteRatio: undefined, noteInput: undefined, noteOutput: undefined };
}

type Cmd = CmdParms<BrotliServer, undefined>;

function setNote(cmd: Cmd, a: string, b: string | undefined): string | undefined {
  return setCodingNote(cmd.srv, a, b, (t) => `Unknown BrotliFilterNote type '${t}'`);
}

function setQuality(cmd: Cmd, arg: string): string | undefined {
  const v = atoi(arg);
  if (v < 0 || v > 11) return 'BrotliCompressionQuality must be between 0 and 11';
  cmd.srv.quality = v;
  return undefined;
}

function setWindow(cmd: Cmd, arg: string): string | undefined {
  const v = atoi(arg);
  if (v < 10 || v > 24) return 'BrotliCompressionWindow must be between 10 and 24';
  cmd.srv.lgwin = v;
  return undefined;
}

function setBlock(cmd: Cmd, arg: string): string | undefined {
  const v = atoi(arg);
  if (v < 16 || v > 24) return 'BrotliCompressionMaxInputBlock must be between 16 and 24';
  cmd.srv.lgblock = v;
  return undefined;
}

function setEtag(cmd: Cmd, arg: string): string | undefined {
  const opt = parseEtagOpt(arg);
  if (opt === undefined) return "BrotliAlterETag accepts only 'AddSuffix', 'NoChange' and 'Remove'";
  cmd.srv.etagOpt = opt;
  return undefined;
}

// ---- the encoder -----------------------------------------------------------------------------

/** Node's Brotli stream driven step by step: each call resolves with the output the step made. */
class BrotliEncoder {
  private readonly z: zlib.BrotliCompress;
  private out: Buffer[] = [];
  private failed: Error | null = null;
  totalIn = 0;
  totalOut = 0;
  constructor(c: BrotliServer) {
    const params: Record<number, number> = {
      [zlib.constants.BROTLI_PARAM_QUALITY]: c.quality,
      [zlib.constants.BROTLI_PARAM_LGWIN]: c.lgwin,
    };
    if (c.lgblock !== 0) params[zlib.constants.BROTLI_PARAM_LGBLOCK] = c.lgblock;
    this.z = zlib.createBrotliCompress({ params });
    this.z.on('data', (d: Buffer) => { this.out.push(d); this.totalOut += d.length; });
    this.z.on('error', (e: Error) => { this.failed = e; });
  }
  private take(): Buffer[] {
    if (this.failed) throw this.failed;
    return this.out.splice(0, this.out.length);
  }
  /** BROTLI_OPERATION_PROCESS on `data`. */
  process(data: Buffer): Promise<Buffer[]> {
    this.totalIn += data.length;
    return new Promise((resolve, reject) => {
      this.z.write(data, (err) => (err ? reject(err) : resolve(this.take())));
    });
  }
  /** BROTLI_OPERATION_FLUSH. */
  flush(): Promise<Buffer[]> {
    return new Promise((resolve) => this.z.flush(zlib.constants.BROTLI_OPERATION_FLUSH, () => resolve(this.take())));
  }
  /** BROTLI_OPERATION_FINISH. */
  finish(): Promise<Buffer[]> {
    return new Promise((resolve, reject) => {
      this.z.once('end', () => { try { resolve(this.take()); } catch (e) { reject(e); } });
      this.z.once('error', reject);
      this.z.end();
      this.z.resume();
    });
  }
}

// ---- the filter ------------------------------------------------------------------------------

interface BrotliState {
  /** undefined until the first brigade decided; null when not compressing. */
  enc: BrotliEncoder | null | undefined;
  record: Buffer[][] | null;
  settings: string;
}

/** The first-brigade decisions; true when compressing (headers then already changed). */
function decide(r: Request, c: BrotliServer): boolean {
  if (r.main !== null || r.status === 204 || r.subprocessEnv.has('no-brotli') || r.headersOut.has('Content-Range')) return false;
  const encoding = responseEncoding(r);
  if (encoding !== undefined && hasContentCoding(encoding) !== undefined) return false;
  r.headersOut.merge('Vary', 'Accept-Encoding');
  const accepts = r.headersIn.get('Accept-Encoding');
  if (accepts === undefined || !acceptsCoding(accepts, 'br')) return false;
  setCodingHeaders(r, encoding, 'br', c.etagOpt);
  return true;
}

function setNotes(r: Request, c: BrotliServer, totalIn: number, totalOut: number): void {
  if (c.noteInput !== undefined) r.notes.set(c.noteInput, String(totalIn));
  if (c.noteOutput !== undefined) r.notes.set(c.noteOutput, String(totalOut));
  if (c.noteRatio !== undefined) r.notes.set(c.noteRatio, totalIn > 0 ? String(Math.trunc((totalOut * 100) / totalIn)) : '-');
}

async function compress(f: FilterInstance<BrotliState>, bb: Brigade, c: BrotliServer): Promise<void> {
  const st = f.state;
  const enc = st.enc!;
  const r = f.r;
  const fail = (e: unknown): never => {
    r.log('brotli', APLOG_ERR, 'AH03459: Error while compressing data');
    throw e instanceof FilterError ? e : new FilterError(500);
  };
  for (let i = 0; i < bb.length; i++) {
    const b = bb[i]!;
    if (r.headerOnly && r.bytesSent > 0) {
      f.remove();
      st.enc = null;
      await f.pass(bb.slice(i));
      return;
    }
    if (b.kind === 'data' || b.kind === 'file') {
      await bucketPieces(b, async (piece) => {
        const out = await enc.process(piece).catch(fail);
        if (out.length) {
          st.record?.push(out);
          await f.pass(data(out));
        }
      });
      continue;
    }
    if (b.kind === 'flush') {
      const out = await enc.flush().catch(fail);
      st.record = null;
      await f.pass([...data(out), b]);
      continue;
    }
    const out = await enc.finish().catch(fail);
    setNotes(r, c, enc.totalIn, enc.totalOut);
    f.remove();
    if (st.record !== null) {
      st.record.push(out);
      compressedCache.put(r, st.settings, st.record, enc.totalIn, enc.totalOut);
    }
    await f.pass([...data(out), EOS]);
    return;
  }
}

const BROTLI_COMPRESS: FilterSpec<BrotliState> = {
  name: 'BROTLI_COMPRESS',
  type: FTYPE_CONTENT_SET,
  init: () => ({ enc: undefined, record: null, settings: '' }),
  filter(f, bb) {
    if (bb.length === 0) return;
    const st = f.state;
    const r = f.r;
    const c = self.server(r.server);
    if (st.enc === undefined) {
      if (!decide(r, c) || r.status === 304) {
        st.enc = null;
        f.remove();
        return f.pass(bb);
      }
      st.settings = `br:${c.quality}:${c.lgwin}:${c.lgblock}`;
      if (wholeFile(r, bb)) {
        const hit = compressedCache.get(r, st.settings);
        if (hit !== undefined) {
          f.remove();
          setNotes(r, c, hit.totalIn, hit.totalOut);
          if (r.wantsLog('brotli', APLOG_TRACE1)) r.log('brotli', APLOG_TRACE1, 'compressed form kept from an earlier response');
          return replayPasses(f, hit.passes);
        }
        st.record = [];
      }
      st.enc = new BrotliEncoder(c);
    } else if (st.enc === null) {
      return f.pass(bb);
    }
    return compress(f, bb, c);
  },
};

const self = defineModule<BrotliServer, undefined>({
  name: 'brotli_module',
  source: 'mod_brotli.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  directives: [
    directive<BrotliServer, undefined, 'TAKE12'>({ name: 'BrotliFilterNote', args: 'TAKE12', where: RSRC_CONF, help: 'Set a note to report on compression ratio', handler: setNote }),
    directive<BrotliServer, undefined, 'TAKE1'>({ name: 'BrotliCompressionQuality', args: 'TAKE1', where: RSRC_CONF, help: 'Compression quality between 0 and 11 (higher quality means slower compression)', handler: setQuality }),
    directive<BrotliServer, undefined, 'TAKE1'>({ name: 'BrotliCompressionWindow', args: 'TAKE1', where: RSRC_CONF, help: 'Sliding window size between 10 and 24 (larger windows can improve compression, but require more memory)', handler: setWindow }),
    directive<BrotliServer, undefined, 'TAKE1'>({ name: 'BrotliCompressionMaxInputBlock', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum input block size between 16 and 24 (larger block sizes require more memory)', handler: setBlock }),
    directive<BrotliServer, undefined, 'TAKE1'>({ name: 'BrotliAlterETag', args: 'TAKE1', where: RSRC_CONF, help: "Set how mod_brotli should modify ETag response headers: 'AddSuffix' (default), 'NoChange', 'Remove'", handler: setEtag }),
  ],
  filters: [BROTLI_COMPRESS as FilterSpec],
});

export default self;
