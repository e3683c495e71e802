// mod_sed's regular expressions (httpd's modules/filters/regexp.c): the old ed/Solaris basic
// syntax — . * [...] [^...] ^ (first only) $ (last only) \( \) \{m,n\} \1-\9 \n — compiled
// to a small program and matched by backtracking, with the same quirks: * after nothing, after
// \( or \) is a plain star; ** and \{..\}* are one repetition; a bracket has no escapes and no
// classes; $ and ^ are plain characters elsewhere; a repetition that matched nothing at the
// start of a global substitution's next search fails there (the `locs` rule).
//
// Lines are latin1 strings: one character per byte. Matching stops at a NUL byte (C strings).

/** A compile failure: the message with %s where the script line goes. */
export class RegexpError extends Error {}

export type Rep = { readonly low: number; readonly size: number } | 'star' | undefined;

export type Node =
  | { t: 'chr'; c: number; rep: Rep }
  | { t: 'dot'; rep: Rep }
  | { t: 'ccl'; set: Uint8Array; rep: Rep }
  | { t: 'dol' }
  | { t: 'bra'; n: number }
  | { t: 'ket'; n: number }
  | { t: 'back'; n: number; star: boolean }
  | { t: 'end' };

export interface Regexp {
  /** The expression starts with ^. */
  readonly circf: boolean;
  readonly nodes: readonly Node[];
  /** \( groups. */
  readonly nbra: number;
  /** Bytes the compiled form takes in httpd's 10,000-byte RE space (RESIZE). */
  readonly size: number;
}

const NBRA = 9;
const RANGE_MSG: Record<number, string> = {
  11: 'Range endpoint too large: %s',
  16: 'Bad number: %s',
  25: "``\\digit'' out of range: %s",
  36: 'Illegal or missing delimiter: %s',
  42: '\\( \\) imbalance: %s',
  43: 'Too many \\(: %s',
  44: 'More than 2 numbers given in \\{ \\}: %s',
  45: '} expected after \\: %s',
  46: 'First number exceeds second in \\{ \\}: %s',
  49: '[ ] imbalance: %s',
  50: 'too much command text: %s',
};

function fail(code: number): never {
  throw new RegexpError(RANGE_MSG[code] ?? 'Unknown regexp error code %s\n');
}

/**
 * sed_compile: reads from `src` at `pos` up to the delimiter `eof`. Returns the expression
 * (undefined when empty: the caller reuses the last one) and where reading stopped.
 * `room` is what is left of the RE space; going past it is "too much command text".
 */
export function compileRegexp(src: string, pos: number, eof: string, room: number): { re: Regexp | undefined; pos: number } {
  let sp = pos;
  const getc = (): string => (sp < src.length ? src[sp++]! : (sp++, '\0'));
  const peekc = (): string => (sp < src.length ? src[sp]! : '\0');
  let c = getc();
  if (c === eof || c === '\n') {
    if (c === '\n') sp--;
    return { re: undefined, pos: sp };
  }
  // The compiled form starts one byte in (the circf byte); `ep` counts bytes as httpd lays them.
  let ep = 1;
  const endbuf = room;
  const nodes: Node[] = [];
  let lastep: Node | undefined;
  let lastRepeatable = false;
  const brackets: number[] = [];
  let nbra = 0;
  let closed = 0;
  let circf = false;
  if (c === '^') circf = true;
  else sp--;
  for (;;) {
    if (ep >= endbuf) fail(50);
    c = getc();
    const startsInterval = c === '\\' && peekc() === '{';
    if (c !== '*' && !startsInterval) { lastep = undefined; lastRepeatable = false; }
    if (c === eof) {
      nodes.push({ t: 'end' });
      ep += 1;
      if (brackets.length) fail(42);
      return { re: { circf, nodes, nbra, size: ep }, pos: sp };
    }
    let lit: string | undefined;
    switch (c) {
      case '.': {
        const n: Node = { t: 'dot', rep: undefined };
        nodes.push(n); ep += 1; lastep = n; lastRepeatable = true;
        continue;
      }
      case '\n':
        fail(36);
        break;
      case '*':
        if (lastep === undefined || !lastRepeatable) {
          // After nothing, after \( or \): a plain star (httpd's defchar).
          lit = '*';
          break;
        }
        if (lastep.t === 'chr' || lastep.t === 'dot' || lastep.t === 'ccl') {
          if (lastep.rep === undefined) lastep.rep = 'star';
        } else if (lastep.t === 'back') lastep.star = true;
        continue;
      case '$':
        if (peekc() !== eof && peekc() !== '\n') { lit = '$'; break; }
        nodes.push({ t: 'dol' }); ep += 1; lastep = undefined; lastRepeatable = false;
        continue;
      case '[': {
        if (ep + 17 >= endbuf) fail(50);
        const set = new Uint8Array(256);
        let high = false;
        let lc = 0;
        let neg = false;
        let cc = getc().charCodeAt(0) & 0xff;
        if (cc === 0x5e) { neg = true; cc = getc().charCodeAt(0) & 0xff; }
        do {
          if (cc === 0 || cc === 10) fail(49);
          if ((cc & 0x80) && !high) { high = true; if (ep + 1 + 32 >= endbuf) fail(50); }
          if (cc === 0x2d && lc !== 0) {
            cc = getc().charCodeAt(0) & 0xff;
            if (cc === 0x5d) { set[0x2d] = 1; break; }
            if ((cc & 0x80) && !high) { high = true; if (ep + 1 + 32 >= endbuf) fail(50); }
            while (lc < cc) set[lc++] = 1;
          }
          lc = cc;
          set[cc] = 1;
          cc = getc().charCodeAt(0) & 0xff;
        } while (cc !== 0x5d);
        // A plain class never matches a byte above 127 unless it names one (CXCL).
        const final = new Uint8Array(256);
        for (let i = 1; i < 256; i++) {
          const inSet = set[i] === 1 && (high || i < 128);
          final[i] = (neg ? !inSet : inSet) ? 1 : 0;
        }
        const n: Node = { t: 'ccl', set: final, rep: undefined };
        nodes.push(n); ep += 1 + (high ? 32 : 16); lastep = n; lastRepeatable = true;
        continue;
      }
      case '\\': {
        c = getc();
        switch (c) {
          case '(':
            if (nbra >= NBRA) fail(43);
            brackets.push(nbra);
            nodes.push({ t: 'bra', n: nbra++ }); ep += 2;
            lastep = nodes[nodes.length - 1]; lastRepeatable = false;
            continue;
          case ')': {
            if (brackets.length === 0) fail(42);
            nodes.push({ t: 'ket', n: brackets.pop()! }); ep += 2;
            lastep = nodes[nodes.length - 1]; lastRepeatable = false;
            closed++;
            continue;
          }
          case '{': {
            if (lastep === undefined) { lit = '{'; break; }
            let cflg = 0;
            let low = 0;
            let high = 0;
            let i = 0;
            for (;;) {
              c = getc();
              i = 0;
              do {
                if (c >= '0' && c <= '9') i = 10 * i + (c.charCodeAt(0) - 48);
                else fail(16);
                c = getc();
              } while (c !== '\\' && c !== ',');
              if (i >= 255) fail(11);
              if (cflg === 0) low = i; else high = i;
              if (c === ',') {
                if (cflg++) fail(44);
                c = getc();
                if (c === '\\') { high = 255; break; }
                sp--;
                continue;
              }
              break;
            }
            if (getc() !== '}') fail(45);
            if (!cflg) high = low;
            else if (high < low) fail(46);
            ep += 2;
            const size = high === 255 ? 20000 : high - low;
            if (lastep.t === 'chr' || lastep.t === 'dot' || lastep.t === 'ccl') {
              if (lastep.rep === undefined || lastep.rep === 'star') lastep.rep = { low, size };
            }
            // DIFFERENCE: httpd marks a \) or \( with the interval bits and its matcher then
            // reads garbage; plume ignores an interval there.
            continue;
          }
          case '\n':
            fail(36);
            break;
          case 'n':
            lit = '\n';
            break;
          default:
            if (c >= '1' && c <= '9') {
              const n = c.charCodeAt(0) - 49;
              if (n >= closed) fail(25);
              const node: Node = { t: 'back', n, star: false };
              nodes.push(node); ep += 2; lastep = node; lastRepeatable = true;
              continue;
            }
            lit = c;
        }
        break;
      }
      default:
        lit = c;
    }
    if (lit === '\0' && sp > src.length) {
      // The script ended inside the expression: httpd reads on past the line's end through
      // memory that, as recorded, holds the delimiter; what follows (the replacement) is
      // then missing. The expression ends with the line.
      nodes.push({ t: 'end' });
      ep += 1;
      if (brackets.length) fail(42);
      return { re: { circf, nodes, nbra, size: ep }, pos: sp };
    }
    const n: Node = { t: 'chr', c: lit!.charCodeAt(0) & 0xff, rep: undefined };
    nodes.push(n); ep += 2; lastep = n; lastRepeatable = true;
  }
}

/** Match positions: loc1..loc2 the match, bras/kets the groups. */
export class StepVars {
  loc1 = 0;
  loc2 = 0;
  /** Where a global substitution's next search starts (-1: none). */
  locs = -1;
  readonly bras: number[] = new Array<number>(NBRA).fill(0);
  readonly kets: number[] = new Array<number>(NBRA).fill(0);
}

/** The byte at i, 0 at the end and at a NUL. */
function at(s: string, i: number): number {
  return i < s.length ? s.charCodeAt(i) : 0;
}

/** sed_step: the first match at or after p1. */
export function step(s: string, p1: number, re: Regexp, v: StepVars): boolean {
  if (re.circf) {
    v.loc1 = p1;
    return advance(s, p1, re.nodes, 0, v);
  }
  for (;;) {
    if (advance(s, p1, re.nodes, 0, v)) { v.loc1 = p1; return true; }
    if (at(s, p1++) === 0) return false;
  }
}

function one(n: Node, ch: number): boolean {
  switch (n.t) {
    case 'chr': return ch === n.c;
    case 'dot': return ch !== 0;
    case 'ccl': return n.set[ch] === 1;
    default: return false;
  }
}

function advance(s: string, lp: number, nodes: readonly Node[], ep: number, v: StepVars): boolean {
  for (;;) {
    const n = nodes[ep++]!;
    switch (n.t) {
      case 'end':
        v.loc2 = lp;
        return true;
      case 'dol':
        if (at(s, lp) === 0) continue;
        return false;
      case 'bra':
        v.bras[n.n] = lp;
        continue;
      case 'ket':
        v.kets[n.n] = lp;
        continue;
      case 'back': {
        const bbeg = v.bras[n.n]!;
        const ct = v.kets[n.n]! - bbeg;
        if (!n.star) {
          if (same(s, bbeg, lp, ct)) { lp += ct; continue; }
          return false;
        }
        const curlp = lp;
        // DIFFERENCE: httpd loops for ever on an empty group repeated (\(\)\1*); plume
        // takes it once.
        if (ct <= 0) continue;
        while (same(s, bbeg, lp, ct)) lp += ct;
        while (lp >= curlp) {
          if (advance(s, lp, nodes, ep, v)) return true;
          lp -= ct;
        }
        return false;
      }
      default: {
        const rep = n.rep;
        if (rep === undefined) {
          if (one(n, at(s, lp))) { lp++; continue; }
          return false;
        }
        let curlp: number;
        if (rep === 'star') {
          curlp = lp;
          while (one(n, at(s, lp++)));
        } else {
          let low = rep.low;
          while (low-- > 0) if (!one(n, at(s, lp++))) return false;
          curlp = lp;
          let size = rep.size;
          while (size-- > 0) if (!one(n, at(s, lp++))) break;
          if (size < 0) lp++;
        }
        do {
          if (--lp === v.locs) break;
          if (advance(s, lp, nodes, ep, v)) return true;
        } while (lp > curlp);
        return false;
      }
    }
  }
}

/** strncmp(a, b, n) == 0 on the line. */
function same(s: string, a: number, b: number, n: number): boolean {
  for (let i = 0; i < n; i++) {
    const x = at(s, a + i);
    if (x !== at(s, b + i)) return false;
    if (x === 0) return true;
  }
  return true;
}
