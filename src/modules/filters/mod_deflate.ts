// mod_deflate (modules/filters/mod_deflate.c): the DEFLATE output filter (gzip), the INFLATE
// output filter (for a content-transforming proxy) and the DEFLATE input filter, which
// inflates a request body sent with Content-Encoding: gzip within the DeflateInflate* limits.
//
// Compression runs on pako, a port of zlib whose deflate output is byte for byte zlib's: the
// bodies, their Content-Length and the split between Content-Length and chunked framing are
// those Apache sends (Node's bundled zlib compresses differently). DEFLATE passes output as
// httpd does: a full DeflateBufferSize buffer at a time (with the gzip header in front of
// the first), the rest with EOS, so a body whose compressed form fills no buffer before the
// end gets a Content-Length, others go chunked. Whole static files' compressed forms are kept
// (compressed-cache.ts) so a repeated request is not compressed again.

import * as zlib from 'node:zlib';
import { pako as pakoLib, PAKO_MISSING, type Pako, type PakoStream } from './pako.js';
import {
  defineModule, directive, MODULE_API_VERSION, RSRC_CONF, OR_ALL,
} from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import {
  EOS, FilterError, FTYPE_CONTENT_SET, FTYPE_RESOURCE, bucketPieces, endsResponse,
  type Brigade, type Bucket, type FilterInstance, type FilterSpec, type InputFilterInstance, type InputFilterSpec,
} from '../../server/filters.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_TRACE1, APLOG_WARNING } from '../../server/log/levels.js';
import { coreDir } from '../../server/core/core-module.js';
import { DEFAULT_LIMIT_REQUEST_BODY } from '../../server/http/http-core.js';
import { compressedCache, wholeFile, parseCacheSize, DEFAULT_CACHE_BYTES } from './compressed-cache.js';
import {
  dataBuckets, hasContentCoding, acceptsCoding, parseEtagOpt, replayPasses, responseEncoding, setCodingHeaders, setCodingNote,
  alterEtag, ETAG_ADDSUFFIX, ETAG_NOCHANGE, type CodingNotes, type EtagOpt,
} from './encoding.js';
import { atoi } from '../../lib/c-numbers.js';

// ---- configuration ---------------------------------------------------------------------------

/** Per-server settings (deflate_filter_config); a virtual host starts from the defaults (no
 *  merge in httpd). */
export interface DeflateServer extends CodingNotes {
  /** zlib window bits, 1-15 (httpd stores it negated: raw deflate). */
  windowSize: number;
  memLevel: number;
  /** 1-9, or -1 for zlib's default (6). */
  compressionLevel: number;
  bufferSize: number;
  etagOpt: EtagOpt;
}

/** Per-directory settings (deflate_dirconf_t); the most specific section's replace the rest. */
export interface DeflateDir {
  /** DeflateInflateLimitRequestBody; 0: LimitRequestBody applies to the inflated body. */
  inflateLimit: number;
  ratioLimit: number;
  ratioBurst: number;
}

const INFLATE_RATIO_LIMIT = 200;
const INFLATE_RATIO_BURST = 3;
const DEFAULT_BUFFERSIZE = 8096;
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
const VALIDATION_SIZE = 8;

function createServerConfig(): DeflateServer {
  return {
    windowSize: 15, memLevel: 9, compressionLevel: -1, bufferSize: DEFAULT_BUFFERSIZE,
    noteRatio: undefined, noteInput: undefined, noteOutput: undefined, etagOpt: ETAG_ADDSUFFIX,
  };
}

function createDirConfig(): DeflateDir {
  return { inflateLimit: 0, ratioLimit: INFLATE_RATIO_LIMIT, ratioBurst: INFLATE_RATIO_BURST };
}

type Cmd = CmdParms<DeflateServer, DeflateDir>;

function setWindowSize(cmd: Cmd, arg: string): string | undefined {
  const i = atoi(arg);
  if (i < 1 || i > 15) return 'DeflateWindowSize must be between 1 and 15';
  cmd.srv.windowSize = i;
  return undefined;
}

function setBufferSize(cmd: Cmd, arg: string): string | undefined {
  const n = atoi(arg);
  if (n <= 0) return 'DeflateBufferSize should be positive';
  cmd.srv.bufferSize = n;
  return undefined;
}

function setNote(cmd: Cmd, a: string, b: string | undefined): string | undefined {
  return setCodingNote(cmd.srv, a, b, (t) => `Unknown note type ${t}`);
}

function setMemLevel(cmd: Cmd, arg: string): string | undefined {
  const i = atoi(arg);
  if (i < 1 || i > 9) return 'DeflateMemLevel must be between 1 and 9';
  cmd.srv.memLevel = i;
  return undefined;
}

function setEtag(cmd: Cmd, arg: string): string | undefined {
  const opt = parseEtagOpt(arg);
  if (opt === undefined) return "DeflateAlterETAG accepts only 'NoChange', 'AddSuffix', and 'Remove'";
  cmd.srv.etagOpt = opt;
  return undefined;
}

function setCompressionLevel(cmd: Cmd, arg: string): string | undefined {
  const i = atoi(arg);
  if (i < 1 || i > 9) return 'Compression Level must be between 1 and 9';
  cmd.srv.compressionLevel = i;
  return undefined;
}

function setInflateLimit(cmd: Cmd, arg: string): string | undefined {
  // apr_strtoff: leading blanks and a sign, then decimal digits; anything after is an error.
  const m = /^\s*([+-]?)(\d*)(.*)$/s.exec(arg)!;
  if (m[2] === '' || m[3] !== '' || m[1] === '-') {
    if (m[2] !== '' && m[1] === '-' && m[3] === '' && /^0*$/.test(m[2]!)) { cmd.dir.inflateLimit = 0; return undefined; }
    return 'DeflateInflateLimitRequestBody requires a non-negative integer.';
  }
  const v = BigInt(m[2]!);
  if (v > 0x7fffffffffffffffn) return 'DeflateInflateLimitRequestBody is not parsable.';
  cmd.dir.inflateLimit = Number(v);
  return undefined;
}

function setRatioLimit(cmd: Cmd, arg: string): string | undefined {
  const i = atoi(arg);
  if (i <= 0) return 'DeflateInflateRatioLimit must be positive';
  cmd.dir.ratioLimit = i;
  return undefined;
}

function setRatioBurst(cmd: Cmd, arg: string): string | undefined {
  const i = atoi(arg);
  if (i <= 0) return 'DeflateInflateRatioBurst must be positive';
  cmd.dir.ratioBurst = i;
  return undefined;
}

function setCacheSize(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  const n = parseCacheSize(arg);
  if (n === undefined) return 'PlumeCompressedCacheSize takes a size in bytes (with an optional K, M or G)';
  cacheSizeSetting = n;
  return undefined;
}
let cacheSizeSetting: number | undefined;

// ---- the DEFLATE output filter ------------------------------------------------------------------

/** "Not compressing" answers and why, for the trace1 lines httpd writes. */
function skip<S>(f: FilterInstance<S>, bb: Brigade, why?: string): ReturnType<FilterInstance['pass']> {
  if (why !== undefined) f.r.log('deflate', APLOG_TRACE1, why, undefined, 'mod_deflate.c');
  f.remove();
  return f.pass(bb);
}

/** Whether a response of these buckets (ending with EOS) is too small to be worth it: httpd
 *  counts bytes up to 10 + 8 + 50 (gzip header, trailer, and room for the headers added). */
export function tooSmall(bb: Brigade, overhead: number): number | undefined {
  let len = 0;
  for (const b of bb) {
    if (b.kind === 'eos') return len;
    if (b.kind === 'data') len += b.data.length;
    else if (b.kind === 'file') len += b.length;
    if (len > overhead) return undefined;
  }
  return undefined;
}

interface DeflateState {
  /** undefined until the first brigade decided; then the running compressor (null: 304 or
   *  gave up). */
  z: PakoStream | null | undefined;
  /** Output buffers not passed yet (the gzip header, full buffers, the end). */
  out: Buffer[];
  crc: number;
  totalIn: number;
  totalOut: number;
  /** Whole brigades passed so far, for the compressed-file cache (null: not cacheable). */
  record: Buffer[][] | null;
  settings: string;
}

/** pako, there once the configuration was accepted (checkConfig refuses it otherwise). */
function lib(): Pako {
  return pakoLib!;
}
function pakoState(z: PakoStream): PakoStream {
  return z;
}

function u8(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.length);
}

/** The decisions deflate_out_filter makes on its first brigade; true when it compresses. */
function decide(f: FilterInstance<DeflateState>, bb: Brigade): boolean | 'skip' {
  const r = f.r;
  if (endsResponse(bb)) {
    const small = tooSmall(bb, GZIP_HEADER.length + VALIDATION_SIZE + 50);
    if (small !== undefined) {
      r.log('deflate', APLOG_TRACE1, `Not compressing very small response of ${small} bytes`, undefined, 'mod_deflate.c(614)');
      return 'skip';
    }
  }
  const env = r.subprocessEnv;
  if (r.main !== null || r.status === 204 || env.has('no-gzip') || r.headersOut.has('Content-Range')) {
    const why = r.main !== null ? 'subrequest' : r.status === 204 ? 'no content' : env.has('no-gzip') ? 'no-gzip' : 'content-range';
    r.log('deflate', APLOG_TRACE1, `Not compressing (${why})`, undefined, 'mod_deflate.c(663)');
    return 'skip';
  }
  if (r.contentType === undefined || !r.contentType.startsWith('text/html')) {
    if (env.get('gzip-only-text/html') === '1') {
      r.log('deflate', APLOG_TRACE1, 'Not compressing, (gzip-only-text/html)', undefined, 'mod_deflate.c(679)');
      return 'skip';
    }
  }
  const encoding = responseEncoding(r);
  if (encoding !== undefined) {
    const other = hasContentCoding(encoding);
    if (other !== undefined) {
      r.log('deflate', APLOG_TRACE1, `Not compressing (content-encoding already  set: ${other})`, undefined, 'mod_deflate.c(717)');
      return 'skip';
    }
  }
  r.headersOut.merge('Vary', 'Accept-Encoding');
  if (!env.has('force-gzip')) {
    const ae = r.headersIn.get('Accept-Encoding');
    if (ae === undefined) return 'skip';
    if (!acceptsCoding(ae, 'gzip')) {
      r.log('deflate', APLOG_TRACE1, 'Not compressing (no Accept-Encoding: gzip or q=0)', undefined, 'mod_deflate.c(780)');
      return 'skip';
    }
  } else {
    r.log('deflate', APLOG_TRACE1, 'Forcing compression (force-gzip set)', undefined, 'mod_deflate.c(787)');
  }
  setCodingHeaders(r, encoding, 'gzip', self.server(r.server).etagOpt);
  return true;
}

function settingsKey(c: DeflateServer): string {
  return `gzip:${c.compressionLevel}:${c.windowSize}:${c.memLevel}:${c.bufferSize}`;
}

function deflateOut(f: FilterInstance<DeflateState>, bb: Brigade): ReturnType<FilterInstance['pass']> {
  if (bb.length === 0) return;
  const st = f.state;
  const r = f.r;
  const c = self.server(r.server);
  if (st.z === undefined) {
    const d = decide(f, bb);
    if (d === 'skip') return skip(f, bb);
    if (r.status === 304) {
      st.z = null;
      f.remove();
      return f.pass(bb);
    }
    st.settings = settingsKey(c);
    if (wholeFile(r, bb)) {
      const hit = compressedCache.get(r, st.settings);
      if (hit !== undefined) {
        f.remove();
        // The log says what a fresh compression would have said.
        if (r.wantsLog('deflate', APLOG_DEBUG)) {
          r.log('deflate', APLOG_DEBUG, `AH01384: Zlib: Compressed ${hit.totalIn} to ${hit.totalOut} : URL ${r.uri}`, undefined, 'mod_deflate.c(909)');
        }
        setNotes(r, c, hit.totalIn, hit.totalOut);
        return replayPasses(f, hit.passes);
      }
      st.record = [];
    }
    st.z = new (lib().Deflate)({ level: c.compressionLevel, windowBits: -c.windowSize, memLevel: c.memLevel, chunkSize: c.bufferSize, raw: true });
    const z = st.z;
    z.onData = (chunk: Uint8Array) => { st.out.push(u8(chunk)); st.totalOut += chunk.length; };
    st.out.push(GZIP_HEADER);
  } else if (st.z === null) {
    return f.pass(bb);
  }
  return compressBrigade(f, bb, c);
}

function setNotes(r: Request, c: DeflateServer, totalIn: number, totalOut: number): void {
  if (c.noteInput !== undefined) r.notes.set(c.noteInput, totalIn > 0 ? String(totalIn) : '-');
  if (c.noteOutput !== undefined) r.notes.set(c.noteOutput, totalOut > 0 ? String(totalOut) : '-');
  if (c.noteRatio !== undefined) r.notes.set(c.noteRatio, totalIn > 0 ? String(Math.trunc((totalOut * 100) / totalIn)) : '-');
}

async function compressBrigade(f: FilterInstance<DeflateState>, bb: Brigade, c: DeflateServer): Promise<void> {
  const st = f.state;
  const z = st.z!;
  const r = f.r;
  // Full buffers go on as they fill (httpd passes each one), the gzip header with the first.
  const passFull = async (): Promise<void> => {
    if (st.out.length === 0 || (st.out.length === 1 && st.out[0] === GZIP_HEADER)) return;
    const pieces = st.out.splice(0, st.out.length);
    st.record?.push(pieces);
    await f.pass(dataBuckets(pieces));
  };
  for (const b of bb) {
    if (r.headerOnly && r.bytesSent > 0) {
      // A HEAD whose length could not be known anyway: stop compressing.
      f.remove();
      st.z = null;
      await f.pass(bb.slice(bb.indexOf(b)));
      return;
    }
    if (b.kind === 'data' || b.kind === 'file') {
      await bucketPieces(b, async (data) => {
        st.crc = zlib.crc32(data, st.crc);
        st.totalIn += data.length;
        z.push(data, false);
        await passFull();
      });
      continue;
    }
    if (b.kind === 'flush') {
      z.push(new Uint8Array(0), lib().constants.Z_SYNC_FLUSH);
      if (z.err) {
        r.log('deflate', APLOG_ERR, `AH01385: Zlib error ${z.err} flushing zlib output buffer (${z.msg})`);
        throw new FilterError(500);
      }
      const pieces = st.out.splice(0, st.out.length);
      st.record = null;
      await f.pass([...dataBuckets(pieces), b]);
      continue;
    }
    // EOS: the rest of the stream, the trailer (CRC and length), notes, the end.
    z.push(new Uint8Array(0), true);
    const trailer = Buffer.allocUnsafe(VALIDATION_SIZE);
    trailer.writeUInt32LE(st.crc >>> 0, 0);
    trailer.writeUInt32LE(st.totalIn % 0x100000000, 4);
    st.out.push(trailer);
    if (r.wantsLog('deflate', APLOG_DEBUG)) {
      r.log('deflate', APLOG_DEBUG, `AH01384: Zlib: Compressed ${st.totalIn} to ${st.totalOut} : URL ${r.uri}`, undefined, 'mod_deflate.c(909)');
    }
    setNotes(r, c, st.totalIn, st.totalOut);
    f.remove();
    const pieces = st.out.splice(0, st.out.length);
    if (st.record !== null) {
      st.record.push(pieces);
      compressedCache.put(r, st.settings, st.record, st.totalIn, st.totalOut);
    }
    await f.pass([...dataBuckets(pieces), EOS]);
    return;
  }
}

export const DEFLATE: FilterSpec<DeflateState> = {
  name: 'DEFLATE',
  type: FTYPE_CONTENT_SET,
  init: () => ({ z: undefined, out: [], crc: 0, totalIn: 0, totalOut: 0, record: null, settings: '' }),
  filter: deflateOut,
};

// ---- gzip streams in: the INFLATE output filter and the DEFLATE input filter ---------------------

/** httpd's check_gzip: whether the outermost non-identity coding in `hdrs` (or, for the
 *  output filter, err_headers_out then r->content_encoding) is gzip; if so it is taken off. */
export function checkGzip(r: Request, input: boolean): boolean {
  type Where = 'in' | 'out' | 'err' | 'r';
  let where: Where = input ? 'in' : 'out';
  const table = (w: Where) => (w === 'in' ? r.headersIn : w === 'out' ? r.headersOut : r.errHeadersOut);
  let encoding = input ? r.headersIn.get('Content-Encoding') : r.headersOut.get('Content-Encoding');
  if (encoding === undefined && !input) {
    encoding = r.errHeadersOut.get('Content-Encoding');
    where = 'err';
    if (encoding === undefined) { encoding = r.contentEncoding; where = 'r'; }
  }
  const store = (v: string | undefined): void => {
    if (where === 'r') r.contentEncoding = v;
    else if (v === undefined) table(where).unset('Content-Encoding');
    else table(where).set('Content-Encoding', v);
  };
  let found = false;
  if (encoding !== undefined && encoding !== '') {
    const isGzip = (t: string) => { const l = t.toLowerCase(); return l === 'gzip' || l === 'x-gzip'; };
    if (isGzip(encoding)) { found = true; store(undefined); }
    else if (encoding.includes(',')) {
      let rest = encoding;
      for (;;) {
        const comma = rest.lastIndexOf(',');
        if (comma < 0) {
          if (isGzip(rest)) { found = true; store(undefined); }
          break;
        }
        const tok = rest.slice(comma + 1).replace(/^\s+/, '');
        if (isGzip(tok)) { rest = rest.slice(0, comma); store(rest); found = true; }
        else if (tok === '' || tok.toLowerCase() === 'identity') { rest = rest.slice(0, comma); continue; }
        break;
      }
    }
  }
  if (where !== 'r' && r.contentEncoding !== undefined) r.contentEncoding = table(where).get('Content-Encoding');
  return found;
}

/** A gzip member being inflated: header (with its optional fields), raw inflate, trailer. */
class GzipInflater {
  private header: Buffer = Buffer.alloc(0);
  private headerDone = false;
  private flags = 0;
  private z: PakoStream | null = null;
  /** The trailer bytes once the deflate stream ended. */
  trailer: Buffer | null = null;
  crc = 0;
  totalIn = 0;
  totalOut = 0;
  /** Output produced by the last write. */
  out: Buffer[] = [];
  constructor(private readonly windowSize: number, private readonly bufferSize: number, private readonly onChunk: (g: GzipInflater) => void,
    /** The output filter checks the compression method byte (the input filter does not). */
    private readonly checkMethod = false) {}

  /** Whether any of the gzip header was seen. */
  get started(): boolean {
    return this.headerDone || this.header.length > 0;
  }

  get headerRead(): boolean {
    return this.headerDone;
  }

  /** The header's flag byte, as httpd prints it (%02x). */
  get flagsHex(): string {
    // A C char, signed: %02x of a byte over 0x7f prints its sign extension.
    return this.flags >= 0x80 ? ((0xffffff00 | this.flags) >>> 0).toString(16) : this.flags.toString(16).padStart(2, '0');
  }

  /** The bytes held while reading the header. */
  get held(): Buffer {
    return this.header;
  }

  /** Where the header stands: 'magic' or 'flags' errors, or 'ok' / 'more'. */
  private parseHeader(): 'ok' | 'more' | 'magic' | 'flags' | 'method' {
    const h = this.header;
    if (h.length < 10) return 'more';
    if (this.checkMethod && h[2] !== 8) return 'method';
    if (h[0] !== 0x1f || h[1] !== 0x8b) return 'magic';
    this.flags = h[3]!;
    if (this.flags & 0xe0) return 'flags';
    let p = 10;
    if (this.flags & 0x04) {
      if (h.length < p + 2) return 'more';
      p += 2 + h.readUInt16LE(p);
      if (h.length < p) return 'more';
    }
    for (const bit of [0x08, 0x10]) {
      if (this.flags & bit) {
        const z = h.indexOf(0, p);
        if (z < 0) return 'more';
        p = z + 1;
      }
    }
    if (this.flags & 0x02) { p += 2; if (h.length < p) return 'more'; }
    this.header = h.subarray(p);
    return 'ok';
  }

  /** Takes compressed bytes; returns a parse failure or nothing. */
  write(data: Buffer): 'magic' | 'flags' | 'method' | 'extra' | { zerr: number; msg: string } | undefined {
    if (this.trailer !== null) {
      if (this.trailer.length >= VALIDATION_SIZE) return 'extra';
      this.trailer = Buffer.concat([this.trailer, data]);
      return undefined;
    }
    if (!this.headerDone) {
      this.header = this.header.length ? Buffer.concat([this.header, data]) : data;
      const h = this.parseHeader();
      if (h === 'more') return undefined;
      if (h !== 'ok') return h;
      this.headerDone = true;
      data = this.header;
      this.header = Buffer.alloc(0);
      const z = new (lib().Inflate)({ windowBits: -this.windowSize, chunkSize: this.bufferSize, raw: true });
      z.onData = (chunk: Uint8Array) => {
        const b = u8(chunk);
        this.out.push(b);
        this.crc = zlib.crc32(b, this.crc);
        this.totalOut += b.length;
        this.totalIn = pakoState(z).strm.total_in;
        this.onChunk(this);
      };
      this.z = z;
      if (data.length === 0) return undefined;
    }
    const z = this.z!;
    z.push(data, false);
    const ps = pakoState(z);
    this.totalIn = ps.strm.total_in;
    if (z.err && z.err !== lib().constants.Z_BUF_ERROR) return { zerr: z.err, msg: z.msg };
    if (ps.ended) {
      const left = ps.strm.avail_in;
      this.trailer = Buffer.from(data.subarray(data.length - left));
    }
    return undefined;
  }
}

/** The ratio check (check_ratio): false once the ratio stayed at or over the limit more
 *  than `burst` times in a row. */
function ratioOk(g: GzipInflater, hits: { n: number }, dc: DeflateDir): boolean {
  if (g.totalIn === 0) return true;
  const ratio = Math.trunc(g.totalOut / g.totalIn);
  if (ratio < dc.ratioLimit) { hits.n = 0; return true; }
  return ++hits.n <= dc.ratioBurst;
}

interface InflateInState {
  g: GzipInflater | null | undefined;
  done: boolean;
  /** The trailer was checked. */
  checked: boolean;
}

/** The DEFLATE input filter (deflate_in_filter): a body sent with Content-Encoding: gzip is
 *  inflated; the inflated size is held to DeflateInflateLimitRequestBody (or LimitRequestBody)
 *  and the ratio to DeflateInflateRatioLimit / Burst, checked every output buffer, so a bomb
 *  is stopped within one buffer of output. Failures are httpd's: 413 for the size limit,
 *  400 for the rest (ap_map_http_request_error on the handler's read). */
async function deflateIn(f: InputFilterInstance<InflateInState>): Promise<Buffer | null> {
  const st = f.state;
  const r = f.r;
  if (st.g === undefined) {
    if (!r.isInitialReq() || r.headersIn.has('Content-Range') || !checkGzip(r, true)) {
      f.remove();
      st.g = null;
      return f.readNext();
    }
    const c = self.server(r.server);
    const dc = self.dir(r) ?? createDirConfig();
    const limit = dc.inflateLimit !== 0 ? dc.inflateLimit : (coreDir(r).limitRequestBody ?? DEFAULT_LIMIT_REQUEST_BODY);
    const hits = { n: 0 };
    st.g = new GzipInflater(c.windowSize, c.bufferSize, (g) => {
      if (limit && g.totalOut > limit) {
        r.log('deflate', APLOG_WARNING, `AH02648: Inflated content length of ${g.totalOut} is larger than the configured limit of ${limit}`);
        throw new FilterError(413, undefined, 'ENOSPC');
      }
      if (!ratioOk(g, hits, dc)) {
        r.log('deflate', APLOG_WARNING, `AH02649: Inflated content ratio is larger than the configured limit ${dc.ratioLimit} by ${dc.ratioBurst} time(s)`);
        throw new FilterError(400, undefined, 'EINVAL');
      }
    });
    r.headersIn.unset('Content-Length');
    r.headersIn.unset('Content-MD5');
  } else if (st.g === null) {
    return f.readNext();
  }
  const g = st.g;
  for (;;) {
    if (g.out.length) return g.out.length === 1 ? g.out.pop()! : Buffer.concat(g.out.splice(0, g.out.length));
    if (st.done) return null;
    const data = await f.readNext();
    if (data === null) {
      if (g.trailer === null || g.trailer.length < VALIDATION_SIZE) {
        if (g.trailer === null && g.totalIn === 0 && !g.started) { st.done = true; return null; }
        r.log('deflate', APLOG_ERR, g.trailer === null && !g.headerRead
          ? 'AH02619: Encountered premature end-of-stream while reading inflate header'
          : 'AH02481: Encountered premature end-of-stream while inflating');
        throw new FilterError(400, undefined, 'APR_EGENERAL');
      }
      st.done = true;
      continue;
    }
    const e = g.write(data);
    if (e === 'magic') { r.log('deflate', APLOG_WARNING, 'AH01387: Zlib: Invalid header'); throw new FilterError(400, undefined, 'APR_EGENERAL'); }
    if (e === 'flags') { r.log('deflate', APLOG_WARNING, `AH01388: Zlib: Invalid flags ${g.flagsHex}`); throw new FilterError(400, undefined, 'APR_EGENERAL'); }
    if (e === 'extra') { r.log('deflate', APLOG_ERR, 'AH02482: Encountered extra data after compressed data'); throw new FilterError(400, undefined, 'APR_EGENERAL'); }
    if (typeof e === 'object') { r.log('deflate', APLOG_WARNING, `AH01392: Zlib error ${e.zerr} inflating data (${e.msg})`); throw new FilterError(400, undefined, 'APR_EGENERAL'); }
    if (g.trailer !== null && g.trailer.length >= VALIDATION_SIZE && !st.checked) {
      st.checked = true;
      if (r.wantsLog('deflate', APLOG_DEBUG)) r.log('deflate', APLOG_DEBUG, `AH01393: Zlib: Inflated ${g.totalIn} to ${g.totalOut} : URL ${r.uri}`, undefined, 'mod_deflate.c(1467)');
      if (g.trailer.readUInt32LE(0) !== (g.crc >>> 0)) { r.log('deflate', APLOG_WARNING, 'AH01394: Zlib: CRC error inflating data'); throw new FilterError(400, undefined, 'APR_EGENERAL'); }
      const len = g.trailer.readUInt32LE(4);
      if (len !== g.totalOut % 0x100000000) {
        r.log('deflate', APLOG_WARNING, `AH01395: Zlib: Length ${g.totalOut} of inflated data does not match expected value ${len}`);
        throw new FilterError(400, undefined, 'APR_EGENERAL');
      }
      if (g.trailer.length > VALIDATION_SIZE) { r.log('deflate', APLOG_ERR, 'AH02485: Encountered extra data after compressed data'); throw new FilterError(400, undefined, 'APR_EGENERAL'); }
    }
  }
}

export const DEFLATE_IN: InputFilterSpec<InflateInState> = {
  name: 'DEFLATE',
  type: FTYPE_CONTENT_SET,
  init: () => ({ g: undefined, done: false, checked: false }),
  read: deflateIn,
};

interface InflateOutState {
  g: GzipInflater | null | undefined;
}

/** The INFLATE output filter (inflate_out_filter): a gzip-coded response is sent decoded. */
function inflateOut(f: FilterInstance<InflateOutState>, bb: Brigade): ReturnType<FilterInstance['pass']> {
  if (bb.length === 0) return;
  const st = f.state;
  const r = f.r;
  if (st.g === undefined) {
    if (!r.isInitialReq() || r.status === 204 || r.headersOut.has('Content-Range') || !checkGzip(r, false)) {
      st.g = null;
      return skip(f, bb);
    }
    r.headersOut.unset('Content-Length');
    r.headersOut.unset('Content-MD5');
    const c = self.server(r.server);
    if (c.etagOpt !== ETAG_NOCHANGE) alterEtag(r, 'gunzip', c.etagOpt);
    if (r.status === 304) { st.g = null; return skip(f, bb); }
    const dc = self.dir(r) ?? createDirConfig();
    const hits = { n: 0 };
    st.g = new GzipInflater(c.windowSize, c.bufferSize, (g) => {
      if (!ratioOk(g, hits, dc)) {
        r.log('deflate', APLOG_WARNING, `AH02650: Inflated content ratio is larger than the configured limit ${dc.ratioLimit} by ${dc.ratioBurst} time(s)`);
        throw new FilterError(500);
      }
    }, true);
  } else if (st.g === null) {
    return f.pass(bb);
  }
  return inflateBrigade(f, bb);
}

async function inflateBrigade(f: FilterInstance<InflateOutState>, bb: Brigade): Promise<void> {
  const g = f.state.g!;
  const r = f.r;
  const take = (): Bucket[] => dataBuckets(g.out.splice(0, g.out.length));
  for (const b of bb) {
    if (b.kind === 'data' || b.kind === 'file') {
      await bucketPieces(b, async (data) => {
        if (f.state.g === null) { await f.pass([{ kind: 'data', data }]); return; }
        const e = g.write(data);
        if (e === 'method') {
          // Not deflated after all: the rest goes on as it is.
          r.log('deflate', APLOG_DEBUG, 'AH01404: inflate: data not deflated!', undefined, 'mod_deflate.c(1770)');
          f.state.g = null;
          await f.pass([{ kind: 'data', data: g.held }]);
          return;
        }
        if (e === 'magic') { r.log('deflate', APLOG_ERR, 'AH01405: inflate: bad header'); throw new FilterError(500); }
        if (e === 'flags') { r.log('deflate', APLOG_ERR, `AH02620: inflate: bad flags ${g.flagsHex}`); throw new FilterError(500); }
        if (typeof e === 'object') { r.log('deflate', APLOG_WARNING, `AH01409: Zlib error ${e.zerr} inflating data (${e.msg})`); throw new FilterError(500); }
        // Full buffers go on while input remains (inflate_out_filter); what the end of the
        // stream leaves in the buffer waits for EOS.
        if (g.trailer !== null) {
          if (g.out.length > 1) await f.pass(dataBuckets(g.out.splice(0, g.out.length - 1)));
        } else if (g.out.length) {
          await f.pass(take());
        }
      });
      continue;
    }
    if (b.kind === 'flush') { await f.pass([...take(), b]); continue; }
    f.remove();
    if (f.state.g === null) { await f.pass([b]); return; }
    if (r.wantsLog('deflate', APLOG_DEBUG)) r.log('deflate', APLOG_DEBUG, `AH01398: Zlib: Inflated ${g.totalIn} to ${g.totalOut} : URL ${r.uri}`, undefined, 'mod_deflate.c(1659)');
    const t = g.trailer;
    if (t === null || t.length < VALIDATION_SIZE) { r.log('deflate', APLOG_ERR, 'AH01401: Zlib: Validation bytes not present'); throw new FilterError(500); }
    if (t.readUInt32LE(0) !== (g.crc >>> 0)) { r.log('deflate', APLOG_ERR, 'AH01399: Zlib: Checksum of inflated stream invalid'); throw new FilterError(500); }
    if (t.readUInt32LE(4) !== g.totalOut % 0x100000000) { r.log('deflate', APLOG_ERR, 'AH01400: Zlib: Length of inflated stream invalid'); throw new FilterError(500); }
    await f.pass([...take(), EOS]);
    return;
  }
}

export const INFLATE: FilterSpec<InflateOutState> = {
  name: 'INFLATE',
  type: FTYPE_RESOURCE - 1,
  init: () => ({ g: undefined }),
  filter: inflateOut,
};

// ---- the module --------------------------------------------------------------------------------

const self = defineModule<DeflateServer, DeflateDir>({
  name: 'deflate_module',
  source: 'mod_deflate.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  createDirConfig,
  directives: [
    directive<DeflateServer, DeflateDir, 'TAKE12'>({ name: 'DeflateFilterNote', args: 'TAKE12', where: RSRC_CONF, help: 'Set a note to report on compression ratio', handler: setNote }),
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'DeflateWindowSize', args: 'TAKE1', where: RSRC_CONF, help: 'Set the Deflate window size (1-15)', handler: setWindowSize }),
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'DeflateBufferSize', args: 'TAKE1', where: RSRC_CONF, help: 'Set the Deflate Buffer Size', handler: setBufferSize }),
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'DeflateMemLevel', args: 'TAKE1', where: RSRC_CONF, help: 'Set the Deflate Memory Level (1-9)', handler: setMemLevel }),
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'DeflateCompressionLevel', args: 'TAKE1', where: RSRC_CONF, help: 'Set the Deflate Compression Level (1-9)', handler: setCompressionLevel }),
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'DeflateInflateLimitRequestBody', args: 'TAKE1', where: OR_ALL, help: 'Set a limit on size of inflated input', handler: setInflateLimit }),
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'DeflateInflateRatioLimit', args: 'TAKE1', where: OR_ALL, help: `Set the inflate ratio limit above which inflation is aborted (default: ${INFLATE_RATIO_LIMIT})`, handler: setRatioLimit }),
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'DeflateInflateRatioBurst', args: 'TAKE1', where: OR_ALL, help: `Set the maximum number of following inflate ratios above limit (default: ${INFLATE_RATIO_BURST})`, handler: setRatioBurst }),
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'DeflateAlterETag', args: 'TAKE1', where: RSRC_CONF, help: "Set how mod_deflate should modify ETAG response headers: 'AddSuffix' (default), 'NoChange' (2.2.x behavior), 'Remove'", handler: setEtag }),
    // DIFFERENCE: plume's own directive (httpd keeps no compressed responses).
    directive<DeflateServer, DeflateDir, 'TAKE1'>({ name: 'PlumeCompressedCacheSize', args: 'TAKE1', where: RSRC_CONF, help: 'Memory for compressed static files kept per process (bytes, K, M or G; 0 = off)', handler: setCacheSize }),
  ],
  configHooks: {
    preConfig: () => { cacheSizeSetting = undefined; },
    checkConfig: () => (pakoLib === null ? PAKO_MISSING : undefined),
    childInit: () => { compressedCache.setLimit(cacheSizeSetting ?? DEFAULT_CACHE_BYTES); },
  },
  filters: [DEFLATE as FilterSpec, INFLATE as FilterSpec],
  inputFilters: [DEFLATE_IN as InputFilterSpec],
});

export default self;
