// mod_sed's engine (httpd's modules/filters/sed1.c): runs a compiled script over a stream given
// in pieces. A line is run when its newline has arrived; a piece ending on a newline keeps its
// line back, so that at the end of the stream that line is the last ($). A last line without
// a newline gets one. Pattern, hold and work buffers grow as httpd's do (doubling, 4 KB steps)
// and fail past 8 MB (ENOMEM; a failed s command is APR_EGENERAL). The s///p flag prints only
// under #n, as in Solaris sed; \n in a replacement is a plain n.
//
// Text is latin1: one character per byte.

import * as fs from 'node:fs';
import { step, StepVars, type Regexp } from './regexp.js';
import { SEDERR, type Address, type SedCmd, type SedScript } from './sed-compile.js';

const INIT_BUF_SIZE = 1024;
const MAX_BUF_SIZE = 1024 * 8192;
const SED_ABUFSIZE = 20;

/** An evaluation failure with the status httpd's libsed returns. */
export class SedEvalError extends Error {
  constructor(readonly code: 'ENOMEM' | 'APR_EGENERAL') { super(code); }
}

/** grow_buffer: the new size of a buffer of `cur` bytes asked for `req`. */
function grow(cur: number, req: number): number {
  if (cur >= req) return cur;
  let n = req < cur * 2 ? cur * 2 : req;
  n = (n + 4095) & ~4095;
  if (n > MAX_BUF_SIZE) throw new SedEvalError('ENOMEM');
  return n;
}

export interface SedIo {
  /** Output (sed_write_output). */
  write(s: string): void;
  /** An error message for the error log (AH02998). */
  error(msg: string): void;
}

export class SedEval {
  private lnum = 0;
  /** The pattern space (linebuf up to lspend). */
  private ps = '';
  private hold = '';
  private lsize = INIT_BUF_SIZE;
  private hsize = INIT_BUF_SIZE;
  private gsize = INIT_BUF_SIZE;
  private readonly inar: Uint8Array;
  private appends: SedCmd[] = [];
  private pending: number | undefined;
  private dolflag = false;
  private sflag = false;
  private jflag = false;
  private delflag = false;
  private lreadyflag = false;
  quitflag = false;
  private numpass = 0;
  private readonly fds: number[] = [];

  /** Commands run so far, against `maxSteps` (tests bound scripts that loop for ever, as a
   *  script such as `:a;ba` does in httpd too). */
  private steps = 0;

  constructor(private readonly script: SedScript, private readonly io: SedIo, private readonly maxSteps = Infinity) {
    this.inar = new Uint8Array(script.cmds.length);
  }

  /** sed_init_eval's file opening: every w file, created if missing, written from its start.
   *  Returns false (after logging "cannot open") when one cannot be opened. */
  openFiles(): boolean {
    for (const name of this.script.fnames) {
      try {
        this.fds.push(fs.openSync(name, fs.constants.O_WRONLY | fs.constants.O_CREAT, 0o666));
      } catch {
        this.io.error(SEDERR.COMES.replace('%s', name));
        this.close();
        return false;
      }
    }
    return true;
  }

  close(): void {
    for (const fd of this.fds.splice(0)) {
      try { fs.closeSync(fd); } catch { /* already closed */ }
    }
  }

  private appendLine(len: number): void {
    this.lsize = grow(this.lsize, this.ps.length + len);
  }

  /** sed_eval_buffer. Throws SedEvalError. */
  evalBuffer(buf: string): void {
    if (this.quitflag) return;
    if (!this.script.canBeFinal) {
      const err = this.script.finalError();
      if (err !== undefined) {
        this.io.error(err);
        throw new SedEvalError('APR_EGENERAL');
      }
    }
    if (buf.length && this.lreadyflag) {
      this.lreadyflag = false;
      this.ps = this.ps.slice(0, -1);
      this.execute();
    }
    let pos = 0;
    const len = buf.length;
    while (pos < len) {
      const n = buf.indexOf('\n', pos);
      if (n < 0) break;
      if (n === len - 1) { this.lreadyflag = true; break; }
      this.appendLine(n - pos + 1);
      this.ps += buf.slice(pos, n);
      pos = n + 1;
      this.execute();
      if (this.quitflag) break;
    }
    if (pos < len) {
      this.appendLine(len - pos);
      this.ps += pos === 0 ? buf : buf.slice(pos);
    }
  }

  /** sed_finalize_eval: the last line. Throws SedEvalError (mod_sed ignores it). */
  finalize(): void {
    if (this.quitflag) return;
    this.dolflag = true;
    if (this.ps.length > 0) {
      if (this.lreadyflag) {
        this.lreadyflag = false;
        this.ps = this.ps.slice(0, -1);
      } else {
        this.lsize = grow(this.lsize, this.ps.length + 1);
      }
      this.execute();
    }
    this.quitflag = true;
  }

  private wline(s: string): void {
    this.io.write(s);
    this.io.write('\n');
  }

  private match(re: Regexp, gf: boolean, v: StepVars): boolean {
    let p1: number;
    if (gf) {
      if (re.circf) return false;
      v.locs = p1 = v.loc2;
    } else {
      p1 = 0;
      v.locs = -1;
    }
    return step(this.ps, p1, re, v);
  }

  private matchAddr(a: Address, v: StepVars): boolean {
    return a.t === 're' && this.match(a.re, false, v);
  }

  private execute(): void {
    const cmds = this.script.cmds;
    let ipc = 0;
    this.lnum++;
    this.sflag = false;
    if (this.pending !== undefined) {
      ipc = this.pending;
      this.pending = undefined;
    }
    const v = new StepVars();
    while (cmds[ipc]!.command !== '') {
      if (++this.steps > this.maxSteps) throw new Error('sed: step limit');
      const c = cmds[ipc]!;
      const p1 = c.ad1;
      const p2 = c.ad2;
      let yes = false;
      if (p1) {
        if (this.inar[c.index]) {
          if (p2!.t === 'line') {
            if (this.lnum > p2!.n) {
              this.inar[c.index] = 0;
              if (c.negfl) yes = true;
              else { ipc++; continue; }
            } else if (this.lnum === p2!.n) this.inar[c.index] = 0;
          } else if (p2!.t === 're' && this.matchAddr(p2!, v)) this.inar[c.index] = 0;
        } else if (p1.t === 'end') {
          if (!this.dolflag) {
            if (c.negfl) yes = true;
            else { ipc++; continue; }
          }
        } else if (p1.t === 'line') {
          if (this.lnum !== p1.n) {
            if (c.negfl) yes = true;
            else { ipc++; continue; }
          } else if (p2) this.inar[c.index] = 1;
        } else if (this.matchAddr(p1, v)) {
          if (p2) this.inar[c.index] = 1;
        } else if (c.negfl) yes = true;
        else { ipc++; continue; }
      }
      if (!yes && c.negfl) { ipc++; continue; }
      this.command(c, v);
      if (this.quitflag) return;
      if (this.pending !== undefined) return;
      if (this.delflag) break;
      if (this.jflag) {
        this.jflag = false;
        if (c.lb1 === undefined) break;
        ipc = c.lb1;
      } else ipc++;
    }
    if (!this.script.nflag && !this.delflag) this.wline(this.ps);
    if (this.appends.length) this.arout();
    this.delflag = false;
    this.ps = '';
  }

  /** copy_to_linebuf / append_to_linebuf sizes. */
  private setLine(s: string): void {
    this.lsize = grow(this.lsize, s.length + 1);
    this.ps = s;
  }

  private addLine(s: string): void {
    this.lsize = grow(this.lsize, this.ps.length + s.length + 1);
    this.ps += s;
  }

  private setHold(s: string): void {
    if (this.hsize <= s.length + 1) this.hsize = grow(this.hsize, s.length + 1);
    this.hold = s;
  }

  private addHold(s: string): void {
    const req = this.hold.length + s.length + 1;
    if (this.hsize <= req) this.hsize = grow(this.hsize, req);
    this.hold += s;
  }

  private command(c: SedCmd, v: StepVars): void {
    switch (c.command) {
      case 'a':
      case 'r':
        if (this.appends.length >= SED_ABUFSIZE) {
          this.io.error((c.command === 'a' ? SEDERR.TMAMES : SEDERR.TMRMES).replace('%s', String(this.lnum)));
        } else this.appends.push(c);
        break;
      case 'c':
        this.delflag = true;
        if (!this.inar[c.index] || this.dolflag) this.wline(c.text);
        break;
      case 'd':
        this.delflag = true;
        break;
      case 'D': {
        const nl = cString(this.ps).indexOf('\n');
        if (nl < 0) { this.delflag = true; return; }
        this.setLine(cString(this.ps.slice(nl + 1)));
        this.jflag = true;
        break;
      }
      case '=':
        this.wline(String(this.lnum | 0));
        break;
      case 'g':
        this.setLine(cString(this.hold));
        break;
      case 'G':
        this.addLine('\n');
        this.addLine(cString(this.hold));
        break;
      case 'h':
        this.setHold(cString(this.ps));
        break;
      case 'H':
        this.addHold('\n');
        this.addHold(cString(this.ps));
        break;
      case 'i':
        this.wline(c.text);
        break;
      case 'b':
        this.jflag = true;
        break;
      case 'l':
        this.list();
        break;
      case 'n':
        if (!this.script.nflag) this.wline(this.ps);
        if (this.appends.length) this.arout();
        this.ps = '';
        this.pending = c.index + 1;
        break;
      case 'N':
        if (this.appends.length) this.arout();
        this.addLine('\n');
        this.pending = c.index + 1;
        break;
      case 'p':
        this.wline(this.ps);
        break;
      case 'P':
        this.wline(firstLine(this.ps));
        break;
      case 'q':
        if (!this.script.nflag) this.wline(this.ps);
        if (this.appends.length) this.arout();
        this.quitflag = true;
        break;
      case 's': {
        const done = this.substitute(c, v);
        if (c.pfl && this.script.nflag && done) {
          this.wline(c.pfl === 1 ? this.ps : firstLine(this.ps));
        }
        if (done && c.findex >= 0) this.writeFile(c.findex, cString(this.ps));
        break;
      }
      case 't':
        if (!this.sflag) break;
        this.sflag = false;
        this.jflag = true;
        break;
      case 'w':
        if (c.findex >= 0) this.writeFile(c.findex, cString(this.ps));
        break;
      case 'x': {
        const line = cString(this.ps);
        this.gsize = grow(this.gsize, line.length + 1);
        this.setLine(cString(this.hold));
        this.setHold(line);
        break;
      }
      case 'y': {
        const tab = c.ytab!;
        const line = this.ps;
        let out = '';
        let i = 0;
        for (; i < line.length; i++) {
          const ch = line.charCodeAt(i);
          if (ch === 0) break;
          out += String.fromCharCode(tab[ch]!);
        }
        this.ps = out + line.slice(i);
        break;
      }
    }
  }

  private writeFile(index: number, line: string): void {
    const fd = this.fds[index];
    if (fd === undefined) return;
    try { fs.writeSync(fd, Buffer.from(line + '\n', 'latin1')); } catch { /* apr_file_printf's result is not checked */ }
  }

  /** substitute + dosub; true when a replacement was made. Throws APR_EGENERAL when a buffer
   *  cannot grow. httpd rebuilds the whole line at each replacement; here the finished part
   *  is kept apart (`head`) and matching goes on in the rest (`tail`), which is the same
   *  since an expression never looks back; the buffer sizes are counted as httpd's grow. */
  private substitute(c: SedCmd, v: StepVars): boolean {
    const re = c.re1!;
    if (!this.match(re, false, v)) return false;
    this.numpass = 0;
    this.sflag = false;
    const st: SubState = { head: [], headLen: 0, tail: this.ps, pos: 0, cut: false };
    try {
      this.dosub(c.rhs, c.gfl, v, st);
      if (c.gfl && !re.circf) {
        while (st.tail.charCodeAt(st.pos) > 0) {
          v.locs = st.pos;
          if (!step(st.tail, st.pos, re, v)) break;
          this.dosub(c.rhs, c.gfl, v, st);
        }
      }
    } catch (e) {
      if (e instanceof SedEvalError) throw new SedEvalError('APR_EGENERAL');
      throw e;
    } finally {
      if (st.head.length) this.ps = st.head.join('') + st.tail;
    }
    return this.sflag;
  }

  private dosub(rhs: string, n: number, v: StepVars, st: SubState): void {
    const tail = st.tail;
    if (n > 0 && n < 999) {
      this.numpass++;
      if (n !== this.numpass) { st.pos = v.loc2; return; }
    }
    this.sflag = true;
    let outLen = st.headLen + v.loc1;
    this.gsize = grow(this.gsize, outLen + 1);
    let repl = '';
    const place = (from: number, to: number): void => {
      const len = Math.max(0, to - from);
      this.gsize = grow(this.gsize, outLen + len + 1);
      repl += tail.slice(from, from + len);
      outLen += len;
    };
    for (let i = 0; i < rhs.length; i++) {
      let ch = rhs[i]!;
      if (ch === '&') place(v.loc1, v.loc2);
      else {
        if (ch === '\\') {
          ch = rhs[++i] ?? '';
          if (ch >= '1' && ch <= '9') {
            const g = ch.charCodeAt(0) - 49;
            place(v.bras[g]!, v.kets[g]!);
            continue;
          }
        }
        repl += ch;
        outLen++;
      }
      if (outLen >= this.gsize) this.gsize = grow(this.gsize, this.gsize + 1024);
    }
    // The rest is copied as a C string: up to a NUL (there is none after the first time).
    const rest = st.cut ? tail.slice(v.loc2) : cString(tail.slice(v.loc2));
    st.cut = true;
    this.gsize = grow(this.gsize, outLen + rest.length + 1);
    this.lsize = grow(this.lsize, outLen + rest.length + 1);
    st.head.push(tail.slice(0, v.loc1), repl);
    st.headLen = outLen;
    st.tail = rest;
    st.pos = 0;
  }

  /** The l command: unprintable bytes escaped, lines folded at 71 characters. */
  private list(): void {
    const line = cString(this.ps);
    let buf = '';
    const put = (s: string): void => {
      for (const ch of s) {
        buf += ch;
        if (buf.length >= 71) {
          this.wline(buf + '\\');
          buf = '';
        }
      }
    };
    for (let i = 0; i < line.length; i++) {
      const b = line.charCodeAt(i);
      if (b >= 0o40) {
        if (b === 0o177) { put('\\177'); continue; }
        if (b >= 0o177) {
          // isprint() is false above 126 in the C locale; the byte is a signed char.
          const sc = b - 256;
          put('\\' + String.fromCharCode((sc >> 6) + 48) + String.fromCharCode(((sc >> 3) & 7) + 48) + String.fromCharCode((sc & 7) + 48));
        } else put(line[i]!);
      } else if (b === 10) put('\n');
      else put('\\' + b.toString(8).padStart(2, '0'));
    }
    this.wline(buf);
  }

  /** arout: a texts and r files queued for after the line. */
  private arout(): void {
    const list = this.appends;
    this.appends = [];
    for (const c of list) {
      if (c.command === 'a') this.wline(c.text);
      else {
        let data: Buffer;
        try { data = fs.readFileSync(c.text); } catch { continue; }
        if (data.length) this.io.write(data.toString('latin1'));
      }
    }
  }
}

/** A substitution under way: the line is head + tail; matching goes on in tail at pos. */
interface SubState {
  head: string[];
  headLen: number;
  tail: string;
  pos: number;
  /** The rest was cut at a NUL once. */
  cut: boolean;
}

/** A C string: up to the first NUL. */
function cString(s: string): string {
  const z = s.indexOf('\0');
  return z < 0 ? s : s.slice(0, z);
}

/** Up to the first newline or NUL (P). */
function firstLine(s: string): string {
  let i = 0;
  while (i < s.length && s[i] !== '\n' && s[i] !== '\0') i++;
  return s.slice(0, i);
}
