// mod_sed's script compiler (httpd's modules/filters/sed0.c, Solaris sed): each OutputSed or
// InputSed line is compiled onto the same script, so labels, { } blocks and the last regular
// expression carry from one directive to the next. Errors are Solaris sed's sentences with
// the script line; their quirks are kept: text after } or a :label is not read, b and :
// take the rest of the line as the label (7 characters at most), s flags come in the order
// g, N, p, P, w, a bad address expression is reported as the command it then looks like, an
// over-long line (1000 characters) is silently skipped.

import { compileRegexp, RegexpError, type Regexp } from './regexp.js';

/** httpd's RE space (RESIZE) shared by every expression, text and replacement. */
const RESIZE = 10000;
/** A script line's maximum (LBSIZE). */
const LBSIZE = 1000;
const SED_NLINES = 256;
const SED_LABSIZE = 50;
const NWFILES = 11;
const APR_PATH_MAX = 4096;

export const SEDERR = {
  CGMES: 'command garbled: %s',
  SMMES: 'Space missing before filename: %s',
  TMMES: 'too much command text: %s',
  LTLMES: 'label too long: %s',
  ULMES: 'undefined label: %s',
  DLMES: 'duplicate labels: %s',
  TMLMES: 'too many labels: %s',
  AD0MES: 'no addresses allowed: %s',
  AD1MES: 'only one address allowed: %s',
  TOOBIG: 'suffix too large: %s',
  TMOMES: "too many {'s",
  TMCMES: "too many }'s",
  NRMES: 'first RE may not be null',
  UCMES: 'unrecognized command: %s',
  TMWFMES: 'too many files in w commands',
  COMES: 'cannot open %s',
  TMLNMES: 'too many line numbers',
  TMAMES: 'too many appends after line %s',
  TMRMES: 'too many reads after line %s',
  DOORNG: "``\\digit'' out of range: %s",
  EDMOSUB: 'ending delimiter missing on substitution: %s',
  EDMOSTR: 'ending delimiter missing on string: %s',
  FNTL: 'file name too long: %s',
  CLTL: 'command line too long',
  TSNTSS: 'transform strings not the same size: %s',
  INTERNAL: 'internal sed error',
} as const;

export type Address = { readonly t: 'end' } | { readonly t: 'line'; readonly n: number } | { readonly t: 're'; readonly re: Regexp };

/** One command (httpd's sed_reptr_t); `next` is the following index. */
export interface SedCmd {
  readonly index: number;
  ad1: Address | undefined;
  ad2: Address | undefined;
  /** The command letter; '{' compiles to 'b' with the address negated; '' ends the script. */
  command: string;
  negfl: boolean;
  /** Where a branch goes (an index), or undefined: the end of the script. */
  lb1: number | undefined;
  re1: Regexp | undefined;
  rhs: string;
  /** a, i, c text; r file name. */
  text: string;
  /** y's table (256 bytes). */
  ytab: Uint8Array | undefined;
  /** s: 0, 999 (g) or the occurrence to replace. */
  gfl: number;
  /** s: 1 (p), 2 (P). */
  pfl: number;
  /** w file index, -1 for none. */
  findex: number;
}

interface Label {
  asc: string;
  chain: number | undefined;
  address: number | undefined;
}

class CompileError extends Error {
  constructor(readonly sedMessage: string | null) { super(sedMessage ?? '(null)'); }
}

/** A compiled script (sed_commands_t), extended by each compile() call. */
export class SedScript {
  readonly cmds: SedCmd[] = [];
  /** Write files (w, s///w) in order of first use. */
  readonly fnames: string[] = [];
  /** #n on a directive's first line: no automatic printing. */
  nflag = false;
  /** Line numbers used by addresses (at most 255). */
  private nlno = 0;
  private readonly labels: Label[] = [{ asc: '', chain: undefined, address: undefined }];
  private depth = 0;
  private readonly cmpend: number[] = [];
  private lastre: Regexp | undefined;
  /** Bytes used in the RE space. */
  private p = 0;
  canBeFinal = true;

  constructor() {
    this.alloc();
  }

  private alloc(): SedCmd {
    const c: SedCmd = {
      index: this.cmds.length, ad1: undefined, ad2: undefined, command: '', negfl: false, lb1: undefined,
      re1: undefined, rhs: '', text: '', ytab: undefined, gfl: 0, pfl: 0, findex: -1,
    };
    this.cmds.push(c);
    this.labels[0]!.address = c.index;
    return c;
  }

  private get rep(): SedCmd {
    return this.cmds[this.cmds.length - 1]!;
  }

  /**
   * sed_compile_string: compiles one directive's script. Returns the error message on
   * failure (the script must then not be used), or undefined; a message httpd has no text
   * for is null (httpd prints "(null)").
   */
  compile(script: string): string | null | undefined {
    try {
      this.fcomp(script);
    } catch (e) {
      if (e instanceof CompileError) return e.sedMessage;
      throw e;
    }
    this.canBeFinal = this.finalError() === undefined;
    return undefined;
  }

  /** sed_get_finalize_error: what makes the script unusable at run time. */
  finalError(): string | undefined {
    if (this.depth) return SEDERR.TMOMES;
    for (let i = 1; i < this.labels.length; i++) {
      const lab = this.labels[i]!;
      if (lab.address === undefined) return SEDERR.ULMES.replace('%s', lab.asc);
      if (lab.chain !== undefined) return SEDERR.INTERNAL;
    }
    return undefined;
  }

  /** The script split into lines as rline does: a backslash keeps the next character, a
   *  backslash at the very end ends the script there. */
  private static lines(s: string): { lines: string[]; tooLong: number } {
    const lines: string[] = [];
    let cur = '';
    let tooLong = -1;
    let q = 0;
    for (;;) {
      let ended = false;
      let truncated = false;
      cur = '';
      while (q < s.length) {
        const t = s[q++]!;
        if (t === '\n') { ended = true; break; }
        cur += t;
        if (t === '\\') {
          if (q >= s.length) return { lines, tooLong };
          cur += s[q++]!;
        }
      }
      if (cur.length > LBSIZE) truncated = true;
      if (truncated) { tooLong = lines.length; return { lines, tooLong }; }
      lines.push(cur);
      if (!ended) return { lines, tooLong };
    }
  }

  private fcomp(script: string): void {
    const { lines } = SedScript.lines(script);
    // "command line too long" is reported by rline but fcomp then returns success: the
    // script stops at that line.
    let op = this.lastre;
    // fcomp's local compile arguments: the \( count of the last s expression compiled.
    let nbra = 0;
    let li = 0;
    if (lines.length === 0) return;
    if (lines[0]![0] === '#') {
      if (lines[0]![1] === 'n') this.nflag = true;
      li = 1;
    }
    for (; li < lines.length; li++) {
      const line = lines[li]!;
      let cp = 0;
      const ch = (i: number): string => (i < line.length ? line[i]! : '\0');
      const err = (fmt: string): never => { throw new CompileError(fmt.replace('%s', line)); };
      comploop: for (;;) {
        while (ch(cp) === ' ' || ch(cp) === '\t') cp++;
        if (ch(cp) === '\0' || ch(cp) === '#') break;
        if (ch(cp) === ';') { cp++; continue; }
        let rep = this.rep;
        // address(): none, an empty expression (the last one again), or one.
        const a1 = this.address(line, cp);
        if (a1.status === 'error') err(SEDERR.CGMES);
        if (a1.status === 'empty') {
          cp = a1.cp;
          if (op) rep.ad1 = { t: 're', re: op };
          else throw new CompileError(SEDERR.NRMES);
        } else if (a1.status === 'none') {
          cp = a1.cp;
          rep.ad1 = undefined;
        } else if (a1.status === 'ok') {
          cp = a1.cp;
          rep.ad1 = a1.addr;
          if (a1.addr.t === 're') op = a1.addr.re;
          this.p = a1.end;
          if (ch(cp) === ',' || ch(cp) === ';') {
            cp++;
            const a2 = this.address(line, cp);
            if (a2.status === 'error' || a2.status === 'none') err(SEDERR.CGMES);
            cp = a2.cp;
            if (a2.status === 'empty') rep.ad2 = op ? { t: 're', re: op } : undefined;
            else if (a2.status === 'ok') {
              rep.ad2 = a2.addr;
              if (a2.addr.t === 're') op = a2.addr.re;
              this.p = a2.end;
            }
          } else rep.ad2 = undefined;
        }
        if (this.p > RESIZE - 1) err(SEDERR.TMMES);
        while (ch(cp) === ' ' || ch(cp) === '\t') cp++;
        let c: string;
        for (;;) {
          c = ch(cp++);
          if (c !== '!') break;
          rep.negfl = true;
        }
        switch (c) {
          case '{': {
            rep.command = 'b';
            rep.negfl = !rep.negfl;
            this.cmpend[this.depth++] = rep.index;
            this.alloc();
            if (ch(cp) === '\0') break comploop;
            continue comploop;
          }
          case '}': {
            if (rep.ad1) err(SEDERR.AD0MES);
            if (--this.depth < 0) { this.depth = 0; throw new CompileError(SEDERR.TMCMES); }
            this.cmds[this.cmpend[this.depth]!]!.lb1 = rep.index;
            // The rest of the line is not read.
            break comploop;
          }
          case '=':
            rep.command = '=';
            if (rep.ad2) err(SEDERR.AD1MES);
            break;
          case ':': {
            if (rep.ad1) err(SEDERR.AD0MES);
            while (ch(cp) === ' ') cp++;
            const label = line.slice(cp);
            if (label.length >= 8) err(SEDERR.LTLMES);
            const found = this.labels.find((l) => l.asc === label);
            if (found) {
              if (found.address !== undefined) err(SEDERR.DLMES);
              this.dechain(found, rep.index);
              found.address = rep.index;
            } else {
              if (this.labels.length + 1 >= SED_LABSIZE) err(SEDERR.TMLMES);
              this.labels.push({ asc: label, chain: undefined, address: rep.index });
            }
            break comploop;
          }
          case 'a': case 'c': case 'i': {
            rep.command = c;
            if (c !== 'c' && rep.ad2) err(SEDERR.AD1MES);
            if (ch(cp) === '\\') cp++;
            if (ch(cp++) !== '\n') err(SEDERR.CGMES);
            const t = this.text(line, cp, RESIZE - 1 - this.p);
            if (t === undefined) throw new CompileError(null);
            rep.text = t.text;
            cp = t.cp;
            this.p += t.text.length + 1;
            break;
          }
          case 'g': case 'G': case 'h': case 'H': case 'n': case 'N': case 'p': case 'P':
          case 'd': case 'l': case 'x':
            rep.command = c;
            break;
          case 'D':
            rep.command = 'D';
            rep.lb1 = 0;
            break;
          case 'q':
            rep.command = 'q';
            if (rep.ad2) err(SEDERR.AD1MES);
            break;
          case 't': case 'b': {
            rep.command = c;
            while (ch(cp) === ' ') cp++;
            if (ch(cp) === '\0') {
              this.chainTo(this.labels[0]!, rep.index);
              break;
            }
            const label = line.slice(cp);
            if (label.length >= 8) err(SEDERR.LTLMES);
            cp = line.length;
            const found = this.labels.find((l) => l.asc === label);
            if (found) {
              if (found.address !== undefined) rep.lb1 = found.address;
              else this.chainTo(found, rep.index);
            } else {
              if (this.labels.length + 1 >= SED_LABSIZE) err(SEDERR.TMLMES);
              this.labels.push({ asc: label, chain: rep.index, address: undefined });
            }
            break;
          }
          case 'r': {
            rep.command = 'r';
            if (rep.ad2) err(SEDERR.AD1MES);
            if (ch(cp++) !== ' ') err(SEDERR.CGMES);
            const t = this.text(line, cp, RESIZE - 1 - this.p);
            if (t === undefined) throw new CompileError(null);
            rep.text = t.text;
            cp = t.cp;
            this.p += t.text.length + 1;
            break;
          }
          case 's': {
            rep.command = 's';
            const sseof = ch(cp++);
            let re: Regexp | undefined;
            let after: number;
            try {
              const r = compileRegexp(line, cp, sseof, RESIZE - 1 - this.p);
              re = r.re;
              after = r.pos;
            } catch (e) {
              if (e instanceof RegexpError) throw new CompileError(e.message.replace('%s', line));
              throw e;
            }
            cp = after;
            if (re === undefined) {
              if (op) rep.re1 = op;
              else throw new CompileError(SEDERR.NRMES);
            } else {
              rep.re1 = op = re;
              nbra = re.nbra;
              this.p += re.size;
            }
            // compsub: the replacement, backslash pairs kept as written.
            let rhs = '';
            for (;;) {
              if (this.p + rhs.length > RESIZE - 1) err(SEDERR.TMMES);
              const q = ch(cp++);
              if (q === '\\') {
                if (this.p + rhs.length + 1 > RESIZE - 1) err(SEDERR.TMMES);
                const d = ch(cp++);
                if (d > String.fromCharCode(48 + nbra) && d <= '9') err(SEDERR.DOORNG);
                if (d === '\0') err(SEDERR.EDMOSUB);
                rhs += q + d;
                continue;
              }
              if (q === sseof) break;
              if (q === '\0') err(SEDERR.EDMOSUB);
              rhs += q;
            }
            rep.rhs = rhs;
            this.p += rhs.length + 1;
            if (ch(cp) === 'g') { cp++; rep.gfl = 999; }
            if (ch(cp) >= '1' && ch(cp) <= '9') {
              let i = ch(cp++).charCodeAt(0) - 48;
              while (ch(cp) >= '0' && ch(cp) <= '9') {
                i = i * 10 + ch(cp).charCodeAt(0) - 48;
                if (i > 512) err(SEDERR.TOOBIG);
                cp++;
              }
              rep.gfl = i;
            }
            if (ch(cp) === 'p') { cp++; rep.pfl = 1; }
            if (ch(cp) === 'P') { cp++; rep.pfl = 2; }
            if (ch(cp) === 'w') {
              cp++;
              cp = this.wfile(line, cp, rep, err);
            }
            break;
          }
          case 'w':
            rep.command = 'w';
            cp = this.wfile(line, cp, rep, err);
            break;
          case 'y': {
            rep.command = 'y';
            const sseof = ch(cp++);
            const y = this.ycomp(line, cp, sseof, err);
            rep.ytab = y.tab;
            cp = y.cp;
            this.p += 256;
            break;
          }
          default:
            err(SEDERR.UCMES);
        }
        // done:
        this.alloc();
        const nc = ch(cp++);
        if (nc !== '\0') {
          if (nc === ';') continue;
          err(SEDERR.CGMES);
        }
        break;
      }
    }
    this.lastre = op;
  }

  private chainTo(lab: Label, index: number): void {
    if (lab.chain === undefined) { lab.chain = index; return; }
    let pt = this.cmds[lab.chain]!;
    while (pt.lb1 !== undefined) pt = this.cmds[pt.lb1]!;
    pt.lb1 = index;
  }

  private dechain(lab: Label, address: number): void {
    if (lab.chain === undefined) return;
    let rep = this.cmds[lab.chain]!;
    while (rep.lb1 !== undefined) {
      const next = rep.lb1;
      rep.lb1 = address;
      rep = this.cmds[next]!;
    }
    rep.lb1 = address;
    lab.chain = undefined;
  }

  private address(line: string, cp: number):
    | { status: 'none' | 'empty' | 'error'; cp: number }
    | { status: 'ok'; cp: number; addr: Address; end: number } {
    const ch = (i: number): string => (i < line.length ? line[i]! : '\0');
    const c = ch(cp);
    if (c === '$') {
      if (this.p > RESIZE - 2) return { status: 'error', cp };
      return { status: 'ok', cp: cp + 1, addr: { t: 'end' }, end: this.p + 2 };
    }
    if (c === '/' || c === '\\') {
      if (c === '\\') cp++;
      const sseof = ch(cp++);
      try {
        const r = compileRegexp(line, cp, sseof, RESIZE - 1 - this.p);
        if (r.re === undefined) return { status: 'empty', cp: r.pos };
        return { status: 'ok', cp: r.pos, addr: { t: 're', re: r.re }, end: this.p + r.re.size };
      } catch (e) {
        // httpd reports nothing here: the address is taken as absent and the command is
        // read from where the expression began.
        if (e instanceof RegexpError) return { status: 'none', cp };
        throw e;
      }
    }
    let rcp = cp;
    let lno = 0;
    while (ch(rcp) >= '0' && ch(rcp) <= '9') lno = lno * 10 + ch(rcp++).charCodeAt(0) - 48;
    if (rcp > cp) {
      if (this.p > RESIZE - 3) return { status: 'error', cp };
      // "too many line numbers", then reported as a garbled command.
      if (++this.nlno >= SED_NLINES) return { status: 'error', cp };
      return { status: 'ok', cp: rcp, addr: { t: 'line', n: lno }, end: this.p + 3 };
    }
    return { status: 'none', cp };
  }

  /** text(): leading blanks off, a backslash takes the next character, blanks after each
   *  newline off; undefined when it does not fit in `room` bytes. */
  private text(line: string, cp: number, room: number): { text: string; cp: number } | undefined {
    let q = cp;
    while (line[q] === '\t' || line[q] === ' ') q++;
    let out = '';
    for (;;) {
      if (out.length > room) return undefined;
      let c = q < line.length ? line[q++]! : (q++, '\0');
      if (c === '\\') c = q < line.length ? line[q++]! : (q++, '\0');
      if (c === '\0') return { text: out, cp: q - 1 };
      out += c;
      if (c === '\n') while (line[q] === '\t' || line[q] === ' ') q++;
    }
  }

  private wfile(line: string, cp: number, rep: SedCmd, err: (fmt: string) => never): number {
    if ((line[cp++] ?? '\0') !== ' ') err(SEDERR.SMMES);
    const t = this.text(line, cp, APR_PATH_MAX - 1);
    if (t === undefined) err(SEDERR.FNTL);
    const name = t!.text;
    const known = this.fnames.lastIndexOf(name);
    if (known >= 0) { rep.findex = known; return t!.cp; }
    if (this.fnames.length >= NWFILES) throw new CompileError(SEDERR.TMWFMES);
    this.fnames.push(name);
    rep.findex = this.fnames.length - 1;
    return t!.cp;
  }

  private ycomp(line: string, cp: number, sseof: string, err: (fmt: string) => never): { tab: Uint8Array; cp: number } {
    const ch = (i: number): string => (i < line.length ? line[i]! : '\0');
    if (this.p + 0o377 > RESIZE - 1) err(SEDERR.TMMES);
    let tsp = cp;
    for (;;) {
      const c = ch(tsp);
      if (c === sseof) break;
      if (c === '\\') tsp++;
      if (c === '\0' || c === '\n') err(SEDERR.EDMOSTR);
      tsp++;
    }
    tsp++;
    const tab = new Uint8Array(256);
    let sp = cp;
    for (;;) {
      let c = ch(sp++);
      if (c === sseof) break;
      if (c === '\\' && ch(sp) === 'n') { sp++; c = '\n'; }
      const ci = c.charCodeAt(0) & 0xff;
      let to = ch(tsp++);
      if (to === '\\' && ch(tsp) === 'n') { to = '\n'; tsp++; }
      tab[ci] = to.charCodeAt(0) & 0xff;
      // httpd reports "transform strings not the same size" here and goes on.
    }
    if (ch(tsp) !== sseof) {
      if (ch(tsp) === '\0') err(SEDERR.EDMOSTR);
      err(SEDERR.TSNTSS);
    }
    for (let i = 0; i < 256; i++) if (tab[i] === 0) tab[i] = i;
    return { tab, cp: tsp + 1 };
  }
}
