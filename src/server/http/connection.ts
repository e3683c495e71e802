// One client connection: reads HTTP/1.x requests as httpd's protocol.c does (request-line
// and header limits, Host rules, bodies by Content-Length or chunked), runs each through
// the lifecycle, and keeps the connection alive by the KeepAlive rules.

import type * as net from 'node:net';
import * as fs from 'node:fs';
import type { Runtime } from '../runtime.js';
import { Request, type ConnRec, type RequestBody } from '../request/request.js';
import type { Wire } from './wire.js';
import type { ServerRec } from '../server-rec.js';
import { processRequest, die } from '../request/lifecycle.js';
import { runAll } from '../hooks.js';
import { OK } from '../module.js';
import { nowMicros } from '../log/time.js';
import { decodeUrlPath } from './uri.js';
import { APLOG_DEBUG, APLOG_INFO, APLOG_ERR } from '../log/levels.js';

let nextConnId = 0;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export class HttpConnection implements ConnRec, Wire {
  readonly id = nextConnId++;
  readonly remoteIp: string;
  readonly remotePort: number;
  readonly localIp: string;
  readonly localPort: number;
  keepalives = 0;
  keepAlive = true;
  aborted = false;
  remoteHost: string | undefined = undefined;
  bytesIn = 0;
  bytesOut = 0;
  readonly notes = new Map<string, string>();
  baseServer: ServerRec;
  readonly wire: Wire = this;
  private buf: Buffer = Buffer.alloc(0);
  private busy = false;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private bodyWaiter: (() => void) | null = null;
  private candidates: readonly ServerRec[];

  constructor(private readonly socket: net.Socket, private readonly rt: Runtime) {
    this.remoteIp = normIp(socket.remoteAddress ?? '');
    this.remotePort = socket.remotePort ?? 0;
    this.localIp = normIp(socket.localAddress ?? '');
    this.localPort = socket.localPort ?? 0;
    this.candidates = rt.vhosts.candidates(this.localIp, this.localPort);
    this.baseServer = this.candidates[0] ?? rt.mainServer;
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', () => { this.aborted = true; });
    socket.on('close', () => { this.closed = true; this.aborted = true; this.clearTimer(); this.bodyWaiter?.(); this.drainWaiters(); });
    socket.on('drain', () => this.drainWaiters());
    this.armTimer(this.baseServer.timeout * 1000);
  }

  // ---- Wire ----------------------------------------------------------------------------
  get destroyed(): boolean { return this.closed || this.socket.destroyed; }
  write(data: Buffer | string): boolean {
    if (this.destroyed) return true;
    return this.socket.write(data);
  }
  private waiters: (() => void)[] = [];
  drain(): Promise<void> {
    if (this.destroyed || !this.socket.writableNeedDrain) return Promise.resolve();
    return new Promise((res) => this.waiters.push(res));
  }
  private drainWaiters(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  async sendFile(path: string, start: number, length: number): Promise<void> {
    if (length <= 0) return;
    const fh = await fs.promises.open(path, 'r');
    try {
      let pos = start;
      let left = length;
      const chunk = Buffer.allocUnsafe(Math.min(left, 256 * 1024));
      while (left > 0 && !this.destroyed) {
        const { bytesRead } = await fh.read(chunk, 0, Math.min(chunk.length, left), pos);
        if (bytesRead <= 0) break;
        pos += bytesRead;
        left -= bytesRead;
        const ok = this.socket.write(Buffer.from(chunk.subarray(0, bytesRead)));
        if (!ok) await this.drain();
      }
    } finally {
      await fh.close();
    }
  }
  cork(): void { this.socket.cork(); }
  uncork(): void { this.socket.uncork(); }

  // ---- timers -----------------------------------------------------------------------------
  private armTimer(ms: number): void {
    this.clearTimer();
    if (ms > 0) this.timer = setTimeout(() => this.onTimeout(), ms);
  }
  private clearTimer(): void {
    if (this.timer) { clearTimeout(this.timer); this.timer = null; }
  }
  private onTimeout(): void {
    // Idle between requests, or a client too slow: close (httpd logs nothing at warn).
    this.socket.destroy();
  }

  // ---- reading requests -----------------------------------------------------------------
  private onData(d: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    if (this.bodyWaiter) { const w = this.bodyWaiter; this.bodyWaiter = null; w(); return; }
    if (!this.busy) this.tryRequest();
  }

  private tryRequest(): void {
    if (this.busy || this.closed) return;
    const s = this.baseServer;
    // Skip blank lines before a request line (httpd tolerates them).
    let start = 0;
    while (start < this.buf.length && (this.buf[start] === 0x0d || this.buf[start] === 0x0a)) start++;
    if (start) this.buf = this.buf.subarray(start);
    if (this.buf.length === 0) return;
    const lineEnd = this.buf.indexOf(0x0a);
    if (lineEnd < 0) {
      if (this.buf.length > s.limitRequestLine + 2) this.fail(414, this.buf.subarray(0, 100).toString('latin1'), 'line');
      return;
    }
    if (lineEnd > s.limitRequestLine + 1) { this.fail(414, this.buf.subarray(0, lineEnd).toString('latin1'), 'line'); return; }
    // Find the end of the headers.
    let pos = lineEnd + 1;
    const headerLines: string[] = [];
    for (;;) {
      const nl = this.buf.indexOf(0x0a, pos);
      if (nl < 0) {
        if (this.buf.length - pos > s.limitRequestFieldSize + 2) { this.failHeader(this.buf.subarray(0, lineEnd), 'size', this.buf.subarray(pos, pos + 80).toString('latin1')); }
        return;
      }
      let line = this.buf.subarray(pos, nl).toString('latin1');
      if (line.endsWith('\r')) line = line.slice(0, -1);
      pos = nl + 1;
      if (line === '') break;
      if (line.length > s.limitRequestFieldSize) { this.failHeader(this.buf.subarray(0, lineEnd), 'size', line); return; }
      headerLines.push(line);
      if (s.limitRequestFields && headerLines.length > s.limitRequestFields) { this.failHeader(this.buf.subarray(0, lineEnd), 'count', ''); return; }
    }
    let requestLine = this.buf.subarray(0, lineEnd).toString('latin1');
    if (requestLine.endsWith('\r')) requestLine = requestLine.slice(0, -1);
    const headBytes = pos;
    this.buf = this.buf.subarray(pos);
    this.busy = true;
    this.clearTimer();
    void this.handle(requestLine, headerLines, headBytes);
  }

  private newRequest(): Request {
    const r = new Request(this.rt, this, this.baseServer);
    r.requestTime = Date.now();
    r.startMicros = nowMicros();
    this.bytesIn = 0;
    this.bytesOut = 0;
    return r;
  }

  /** A request that failed before it could be parsed: 414 or 400 with httpd's log line. */
  private fail(status: number, line: string, what: 'line'): void {
    void what;
    this.busy = true;
    const r = this.newRequest();
    r.theRequest = line.length > 0 ? line : '';
    r.status = status;
    r.method = 'GET';
    r.protoNum = 1001;
    r.log('core', APLOG_INFO, `AH00565: request failed: client's request-line exceeds LimitRequestLine (longer than ${this.baseServer.limitRequestLine})`);
    this.keepAlive = false;
    void this.finishEarly(r, status);
  }

  private failHeader(lineBuf: Buffer, why: 'size' | 'count', field: string): void {
    this.busy = true;
    const r = this.newRequest();
    let line = lineBuf.toString('latin1');
    if (line.endsWith('\r')) line = line.slice(0, -1);
    this.parseRequestLine(r, line);
    this.keepAlive = false;
    if (why === 'size') {
      const name = field.split(':')[0]!.slice(0, 80);
      r.notes.set('error-notes', `Size of a request header field exceeds server limit.<br />\n<pre>\n${this.rt.escapeHtml(name)}\n</pre>\n`);
      r.log('core', APLOG_INFO, `AH00561: Request header exceeds LimitRequestFieldSize: ${name}`);
    } else {
      r.notes.set('error-notes', "The number of request header fields exceeds this server's limit.");
      r.log('core', APLOG_INFO, `AH00563: Number of request headers exceeds the limit`);
    }
    void this.finishEarly(r, 400);
  }

  private async finishEarly(r: Request, status: number): Promise<void> {
    r.status = status;
    this.keepAlive = false;
    try {
      await die(this.rt, r, status);
      await runAll(this.rt.hooks.logTransaction, r);
    } finally {
      this.endConnection();
    }
  }

  /** Parses "METHOD URI PROTOCOL"; returns an HTTP status on error. */
  private parseRequestLine(r: Request, line: string): number {
    r.theRequest = line;
    const parts = line.split(' ');
    if (parts.length === 2 && parts[1] !== '') {
      // HTTP/0.9 "GET /path".
      r.method = parts[0]!;
      r.protocol = 'HTTP/0.9';
      r.protoNum = 9;
      r.assbackwards = true;
      r.unparsedUri = parts[1]!;
      return r.method === 'GET' ? OK : 400;
    }
    if (parts.length !== 3 || parts[0] === '' || parts[1] === '') return 400;
    r.method = parts[0]!;
    r.unparsedUri = parts[1]!;
    r.protocol = parts[2]!;
    const pm = /^HTTP\/(\d)\.(\d)$/.exec(r.protocol);
    if (!pm) return 400;
    r.protoNum = Number(pm[1]) * 1000 + Number(pm[2]);
    if (!TOKEN.test(r.method)) return 400;
    if (r.protoNum >= 2000) return 505;
    return OK;
  }

  private async handle(requestLine: string, headerLines: string[], headBytes: number): Promise<void> {
    const r = this.newRequest();
    this.bytesIn = headBytes;
    let st = this.parseRequestLine(r, requestLine);
    if (st === OK) {
      for (const l of headerLines) {
        if (l[0] === ' ' || l[0] === '\t') { st = 400; r.log('core', APLOG_DEBUG, `AH02427: Line folding encountered`); break; }
        const c = l.indexOf(':');
        if (c <= 0) {
          st = 400;
          r.notes.set('error-notes', "Request header field is missing ':' separator.<br />\n<pre>\n" + this.rt.escapeHtml(l.slice(0, 80)) + '</pre>\n');
          r.log('core', APLOG_DEBUG, `AH00564: Request header field is missing ':' separator: ${l.slice(0, 80)}`);
          break;
        }
        const name = l.slice(0, c);
        if (!TOKEN.test(name)) { st = 400; break; }
        r.headersIn.add(name, l.slice(c + 1).trim());
      }
    }
    r.headerOnly = r.method === 'HEAD';
    if (st === OK) st = this.readHostAndUri(r);
    if (st === OK) st = this.setupBody(r);
    if (st !== OK) {
      this.keepAlive = false;
      r.status = st;
      await die(this.rt, r, st);
      await runAll(this.rt.hooks.logTransaction, r);
      this.endConnection();
      return;
    }
    r.perDirConfig = r.server.lookupDefaults;
    r.logLevel = r.server.logLevel;
    try {
      const pr = await runAll(this.rt.hooks.postReadRequest, r);
      if (pr !== OK) {
        r.status = pr;
        await die(this.rt, r, pr);
      } else {
        await processRequest(this.rt, r);
      }
      // Whatever of the body the handler did not read is discarded before the next request.
      if (r.body && !r.body.done && this.keepAlive) {
        const d = await r.body.discard(0);
        if (d !== OK) this.keepAlive = false;
      }
      let last: Request = r;
      while (last.next) last = last.next;
      await runAll(this.rt.hooks.logTransaction, last);
    } catch (e) {
      this.keepAlive = false;
      r.log('core', APLOG_ERR, `AH00526: internal error: ${(e as Error).stack ?? String(e)}`);
      if (!r.headersSent) {
        try { r.status = 500; await die(this.rt, r, 500); } catch { /* connection gone */ }
      }
    }
    if (this.keepAlive && !this.destroyed) {
      this.busy = false;
      this.armTimer(r.server.keepAliveTimeout);
      if (this.buf.length) this.tryRequest();
    } else {
      this.endConnection();
    }
  }

  private endConnection(): void {
    this.busy = true;
    this.clearTimer();
    if (!this.socket.destroyed) this.socket.end();
  }

  /** Host header, absolute URIs, vhost selection and the decoded path (ap_read_request). */
  private readHostAndUri(r: Request): number {
    let uri = r.unparsedUri;
    let host = r.headersIn.get('Host');
    if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(uri)) {
      const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/([^/?#]*)(.*)$/.exec(uri)!;
      host = m[1]!;
      uri = m[2] || '/';
    } else if (uri === '*' && r.method === 'OPTIONS') {
      // OPTIONS * is answered by the server itself.
    } else if (!uri.startsWith('/')) {
      r.log('core', APLOG_ERR, `AH10388: Invalid URI in request ${r.theRequest}`);
      return 400;
    }
    if (r.protoNum >= 1001 && host === undefined) {
      r.log('core', APLOG_ERR, `AH00569: client sent HTTP/1.1 request without hostname (see RFC2616 section 14.23): ${r.unparsedUri}`);
      return 400;
    }
    if (host !== undefined) {
      const hm = /^(\[[0-9a-fA-F:.]+\]|[^:]*)(?::(\d*))?$/.exec(host);
      if (!hm || /[^A-Za-z0-9.\-_[\]:]/.test(hm[1]!)) {
        r.log('core', APLOG_ERR, `AH00550: Client sent malformed Host header: ${host}`);
        return 400;
      }
      r.hostname = hm[1]!.toLowerCase().replace(/\.$/, '');
      r.parsedPort = hm[2] ? Number(hm[2]) : 0;
    }
    r.server = this.rt.vhosts.select(this.candidates, r.hostname);
    const q = uri.indexOf('?');
    const path = q < 0 ? uri : uri.slice(0, q);
    r.args = q < 0 ? undefined : uri.slice(q + 1);
    if (path === '*') { r.uri = '*'; return OK; }
    const decoded = decodeUrlPath(path, r);
    if (typeof decoded === 'number') return decoded;
    r.uri = decoded;
    return OK;
  }

  private setupBody(r: Request): number {
    const te = r.headersIn.get('Transfer-Encoding');
    const cl = r.headersIn.get('Content-Length');
    if (te !== undefined) {
      if (te.toLowerCase() !== 'chunked') {
        r.log('core', APLOG_INFO, `AH02555: Unknown Transfer-Encoding: ${te}; using read-until-close`);
        return 400;
      }
      r.headersIn.unset('Content-Length');
      r.body = this.makeBody(r, -1, true);
      return OK;
    }
    if (cl !== undefined) {
      if (!/^\d+$/.test(cl.trim())) {
        r.log('core', APLOG_INFO, `AH00590: Invalid Content-Length`);
        return 400;
      }
      const n = Number(cl.trim());
      if (n > 0) r.body = this.makeBody(r, n, false);
    }
    const expect = r.headersIn.get('Expect');
    if (expect !== undefined && r.protoNum >= 1001) {
      if (expect.toLowerCase() === '100-continue') r.expecting100 = true;
      else {
        r.log('core', APLOG_INFO, `AH00570: client sent an unrecognized expectation value of Expect: ${expect}`);
        return 417;
      }
    }
    return OK;
  }

  private waitData(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((res) => { this.bodyWaiter = res; });
  }

  private makeBody(r: Request, length: number, chunkedBody: boolean): RequestBody {
    const conn = this;
    let done = false;
    const take = async (limit: number, keep: boolean): Promise<Buffer | number> => {
      if (r.expecting100 && !r.headersSent) {
        conn.socket.write(`HTTP/1.1 100 Continue\r\n\r\n`);
        r.expecting100 = false;
      }
      const parts: Buffer[] = [];
      let total = 0;
      if (!chunkedBody) {
        if (limit > 0 && length > limit) {
          r.log('core', APLOG_ERR, `AH00117: Requested content-length of ${length} is larger than the configured limit of ${limit}`.replace('AH00117', 'AH01587'));
          conn.keepAlive = false;
          return 413;
        }
        let left = length;
        while (left > 0) {
          if (conn.buf.length === 0) {
            if (conn.closed) return 400;
            await conn.waitData();
            continue;
          }
          const n = Math.min(left, conn.buf.length);
          if (keep) parts.push(conn.buf.subarray(0, n));
          conn.buf = conn.buf.subarray(n);
          conn.bytesIn += n;
          left -= n;
        }
        done = true;
        return keep ? Buffer.concat(parts) : Buffer.alloc(0);
      }
      // chunked
      for (;;) {
        let nl = conn.buf.indexOf(0x0a);
        while (nl < 0) {
          if (conn.closed) return 400;
          await conn.waitData();
          nl = conn.buf.indexOf(0x0a);
        }
        const sizeLine = conn.buf.subarray(0, nl).toString('latin1').replace(/\r$/, '').split(';')[0]!.trim();
        if (!/^[0-9a-fA-F]+$/.test(sizeLine)) return 400;
        const size = parseInt(sizeLine, 16);
        conn.buf = conn.buf.subarray(nl + 1);
        conn.bytesIn += nl + 1;
        if (size === 0) {
          // trailers until empty line
          for (;;) {
            let e = conn.buf.indexOf(0x0a);
            while (e < 0) { if (conn.closed) return 400; await conn.waitData(); e = conn.buf.indexOf(0x0a); }
            const l = conn.buf.subarray(0, e).toString('latin1').replace(/\r$/, '');
            conn.buf = conn.buf.subarray(e + 1);
            if (l === '') break;
          }
          done = true;
          return keep ? Buffer.concat(parts) : Buffer.alloc(0);
        }
        total += size;
        if (limit > 0 && total > limit) {
          conn.keepAlive = false;
          r.log('core', APLOG_ERR, `AH01591: Read content-length of ${total} is larger than the configured limit of ${limit}`);
          return 413;
        }
        while (conn.buf.length < size + 2) { if (conn.closed) return 400; await conn.waitData(); }
        if (keep) parts.push(conn.buf.subarray(0, size));
        conn.buf = conn.buf.subarray(size + 2);
        conn.bytesIn += size + 2;
      }
    };
    return {
      length, chunked: chunkedBody,
      get done() { return done; },
      async read(limit: number): Promise<Buffer> {
        const v = await take(limit, true);
        if (typeof v === 'number') throw Object.assign(new Error('body'), { status: v });
        return v;
      },
      async discard(limit: number): Promise<number> {
        const v = await take(limit, false);
        return typeof v === 'number' ? v : OK;
      },
    };
  }
}

function normIp(ip: string): string {
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}
