// mod_dumpio (modules/debugging/mod_dumpio.c): everything a connection reads and writes,
// logged at LogLevel trace7 in httpd's lines ("mod_dumpio:  dumpio_in (data-HEAP): 16 bytes",
// then the bytes), when DumpIOInput / DumpIOOutput are on for the server the connection came
// to. 2.4 has no DumpIOLogLevel (the spec's table 2.4: always trace7; the directive is
// unknown). It runs as a connection tap (server/connection-tap.ts): the request head is read
// a line at a time (httpd's getline reads), the body in reads of at most 8 KB, and the
// response goes out as httpd's buckets: the head (HEAP), the body (HEAP, or FILE read as
// MMAP), EOS, then EOR after the request and FLUSH, EOC when the connection ends.
//
// DIFFERENCE: the reads of a chunked request body (chunk-size lines, then the data) are not
// shown; plume frames chunks below the tap.

import * as fs from 'node:fs';
import { MODULE_API_VERSION, RSRC_CONF, defineModule, directive, type ProviderDecl } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { ConnRec } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { Brigade, Bucket } from '../../server/filters.js';
import type { ConnectionTap, ConnectionTapProvider } from '../../server/connection-tap.js';
import { APLOG_TRACE7, levelFor } from '../../server/log/levels.js';

export interface DumpioServerConfig {
  enableInput: boolean;
  enableOutput: boolean;
}

function createServerConfig(): DumpioServerConfig {
  return { enableInput: false, enableOutput: false };
}

function setInput(cmd: CmdParms<DumpioServerConfig, unknown>, on: boolean): undefined {
  cmd.srv.enableInput = on;
  return undefined;
}

function setOutput(cmd: CmdParms<DumpioServerConfig, unknown>, on: boolean): undefined {
  cmd.srv.enableOutput = on;
  return undefined;
}

/** dumpio_MAX_STRING_LEN: the bytes of one log line (MAX_STRING_LEN / 4 - 80). */
const MAX_LOGGED = 8192 / 4 - 80;
/** APR maps files up to this size when a FILE bucket is read (APR_MMAP_LIMIT). */
const MMAP_LIMIT = 4 * 1024 * 1024;
/** What a FILE bucket read without mmap gives at a time (APR_BUCKET_BUFF_SIZE). */
const FILE_READ = 8000;

export class DumpioTap implements ConnectionTap {
  constructor(private readonly c: ConnRec, private readonly s: ServerRec, private readonly input: boolean, private readonly output: boolean) {}

  private log(message: string, source: string): void {
    this.s.errorLog.write({ module: 'dumpio', level: APLOG_TRACE7, message, source, client: { ip: this.c.remoteIp, port: this.c.remotePort } });
  }

  /** dumpit: the bucket's summary, then its bytes in lines of at most MAX_LOGGED bytes. */
  private dumpData(name: string, type: string, data: Buffer, readType = type): void {
    this.log(`mod_dumpio:  ${name} (data-${type}): ${data.length} bytes`, 'mod_dumpio.c(58)');
    for (let at = 0; at < data.length; at += MAX_LOGGED) {
      this.log(`mod_dumpio:  ${name} (data-${readType}): ${cText(data, at, Math.min(data.length, at + MAX_LOGGED))}`, 'mod_dumpio.c(100)');
    }
  }

  private dumpMeta(name: string, type: string): void {
    this.log(`mod_dumpio:  ${name} (metadata-${type}): 0 bytes`, 'mod_dumpio.c(58)');
  }

  getline(line: Buffer | null): void {
    if (!this.input) return;
    this.log('mod_dumpio: dumpio_in [getline-blocking] 0 readbytes', 'mod_dumpio.c(135)');
    // null: the client closed the connection (APR_EOF).
    if (line === null) this.log('mod_dumpio: dumpio_in - 70014', 'mod_dumpio.c(150)');
    else if (line.length > 0) {
      // The byte a speculative read looked at comes back as a bucket of its own.
      if (this.peeked && line.length > 1) {
        this.dumpData('dumpio_in', 'HEAP', line.subarray(0, 1));
        this.dumpData('dumpio_in', 'HEAP', line.subarray(1));
      } else {
        this.dumpData('dumpio_in', 'HEAP', line);
      }
    }
    this.peeked = false;
  }

  private peeked = false;

  readBytes(asked: number, data: Buffer): void {
    if (!this.input) return;
    this.log(`mod_dumpio: dumpio_in [readbytes-blocking] ${asked} readbytes`, 'mod_dumpio.c(135)');
    this.dumpData('dumpio_in', 'HEAP', data);
  }

  speculative(next: Buffer): void {
    if (!this.input) return;
    this.log('mod_dumpio: dumpio_in [speculative-nonblocking] 1 readbytes', 'mod_dumpio.c(135)');
    if (next.length > 0) {
      this.dumpData('dumpio_in', 'HEAP', next);
      this.peeked = true;
    }
  }

  /** A head without a body waits for the brigade with the EOS, as httpd sends them. */
  private pendingHead: string | null = null;

  writeHead(head: string, bodyless: boolean): void {
    if (!this.output) return;
    if (bodyless) { this.pendingHead = head; return; }
    this.log('mod_dumpio: dumpio_out', 'mod_dumpio.c(164)');
    this.dumpData('dumpio_out', 'HEAP', Buffer.from(head, 'latin1'));
  }

  writeBrigade(bb: Brigade, body: boolean): void {
    if (!this.output) return;
    const head = this.pendingHead;
    const shown = body ? bb : bb.filter((b) => b.kind === 'eos' || b.kind === 'flush');
    if (head === null && shown.length === 0) return;
    this.log('mod_dumpio: dumpio_out', 'mod_dumpio.c(164)');
    if (head !== null) {
      this.pendingHead = null;
      this.dumpData('dumpio_out', 'HEAP', Buffer.from(head, 'latin1'));
    }
    for (const b of shown) this.dumpBucket(b);
  }

  private dumpBucket(b: Bucket): void {
    switch (b.kind) {
      case 'data':
        this.dumpData('dumpio_out', 'HEAP', b.data);
        return;
      case 'file': {
        // Reading a FILE bucket maps the file (MMAP) or reads a first piece (HEAP).
        const data = fileBytes(b.path, b.start, b.length, b.cached);
        const mapped = b.length <= MMAP_LIMIT;
        this.log(`mod_dumpio:  dumpio_out (data-FILE): ${b.length} bytes`, 'mod_dumpio.c(58)');
        const shown = mapped ? data : data.subarray(0, FILE_READ);
        for (let at = 0; at < shown.length; at += MAX_LOGGED) {
          this.log(`mod_dumpio:  dumpio_out (data-${mapped ? 'MMAP' : 'HEAP'}): ${cText(shown, at, Math.min(shown.length, at + MAX_LOGGED))}`, 'mod_dumpio.c(100)');
        }
        return;
      }
      case 'flush':
        this.dumpMeta('dumpio_out', 'FLUSH');
        return;
      case 'eos':
        this.dumpMeta('dumpio_out', 'EOS');
        return;
    }
  }

  endRequest(): void {
    if (!this.output) return;
    this.log('mod_dumpio: dumpio_out', 'mod_dumpio.c(164)');
    this.dumpMeta('dumpio_out', 'EOR');
  }

  endConnection(): void {
    if (!this.output) return;
    this.log('mod_dumpio: dumpio_out', 'mod_dumpio.c(164)');
    this.dumpMeta('dumpio_out', 'FLUSH');
    this.dumpMeta('dumpio_out', 'EOC');
  }
}

/** The bytes as httpd's "%.*s" prints them: up to the first NUL (its comment calls this
 *  flawed; the error log escapes the rest). */
function cText(data: Buffer, from: number, to: number): string {
  const z = data.indexOf(0, from);
  return data.toString('latin1', from, z >= 0 && z < to ? z : to);
}

function fileBytes(path: string, start: number, length: number, cached: Buffer | undefined): Buffer {
  if (cached) return cached.subarray(start, start + length);
  const n = Math.min(length, MMAP_LIMIT);
  const buf = Buffer.alloc(n);
  try {
    const fd = fs.openSync(path, 'r');
    try { fs.readSync(fd, buf, 0, n, start); } finally { fs.closeSync(fd); }
  } catch {
    return Buffer.alloc(0);
  }
  return buf;
}

const tapProvider: ConnectionTapProvider = {
  open(ctx: ConfigContext): ((c: ConnRec) => ConnectionTap | null) | null {
    if (!ctx.isLoaded('dumpio_module')) return null;
    const servers = [ctx.mainServer, ...ctx.vhosts];
    // Nothing below trace7 or with both switches off anywhere: no tap at all.
    if (!servers.some((s) => { const c = self.server(s); return (c.enableInput || c.enableOutput) && levelFor(s.logLevel, 'dumpio') >= APLOG_TRACE7; })) return null;
    return (c) => {
      const s = c.baseServer;
      const conf = self.server(s);
      if (levelFor(s.logLevel, 'dumpio') < APLOG_TRACE7) return null;
      if (!conf.enableInput && !conf.enableOutput) return null;
      return new DumpioTap(c, s, conf.enableInput, conf.enableOutput);
    };
  },
};

const providers: ProviderDecl[] = [
  { group: 'connection_tap', name: 'dumpio', version: '0', provider: tapProvider },
];

// No merge: a virtual host has its own switches, off unless set there (as in httpd).
const self = defineModule<DumpioServerConfig, unknown>({
  name: 'dumpio_module',
  source: 'mod_dumpio.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  directives: [
    directive({ name: 'DumpIOInput', args: 'FLAG', where: RSRC_CONF, help: 'Enable I/O Dump on Input Data', handler: setInput }),
    directive({ name: 'DumpIOOutput', args: 'FLAG', where: RSRC_CONF, help: 'Enable I/O Dump on Output Data', handler: setOutput }),
  ],
  providers,
});

export default self;
