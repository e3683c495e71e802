// mod_substitute (modules/filters/mod_substitute.c): the SUBSTITUTE output filter, s/// edits
// of the response body line by line. Flags: i (case-blind), n (a plain string, not a regular
// expression), f (flatten: rebuild the line after each pattern; the default unless only one
// pattern is configured) and q (quick: splice buckets, the next pattern does not see across
// a replacement). SubstituteMaxLineLength (1 MB by default in 2.4) bounds a line as httpd's
// checks do: a line assembled from several pieces, or left without a newline at the end, may
// be at most that long; a matching line is also held to it while replacements are made. A
// line too long fails the response (AH01328; a 500 while nothing was sent).
// SubstituteInheritBefore puts inherited patterns before the section's own.
//
// Bytes are handled as latin1 text, so a pattern sees bytes as httpd's PCRE does (no UTF-8).

import {
  defineModule, directive, MODULE_API_VERSION, OR_FILEINFO,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import {
  FilterError, FTYPE_RESOURCE, bucketPieces, type Brigade, type Bucket, type FilterInstance, type FilterSpec,
} from '../../server/filters.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { compilePcre } from '../../expr/index.js';
import { fileReadSize } from './bucket-read.js';

export const AP_SUBST_MAX_LINE_LENGTH = 1024 * 1024;
/** Buckets collected before they are flushed down the chain (AP_MAX_BUCKETS). */
const AP_MAX_BUCKETS = 1000;
const AP_MAX_REG_MATCH = 10;

interface Pattern {
  /** The regular expression, or undefined for a plain string (flag n). */
  readonly re: RegExp | undefined;
  /** The plain string, lower-cased when case-blind. */
  readonly lit: string;
  readonly ci: boolean;
  readonly to: string;
  readonly flatten: boolean;
}

export interface SubstituteDir {
  patterns: Pattern[];
  maxLineLength: number;
  maxLineLengthSet: boolean;
  inheritBefore: boolean | undefined;
}

function createDirConfig(): SubstituteDir {
  return { patterns: [], maxLineLength: AP_SUBST_MAX_LINE_LENGTH, maxLineLengthSet: false, inheritBefore: undefined };
}

function mergeDirConfig(base: Readonly<SubstituteDir>, over: Readonly<SubstituteDir>): SubstituteDir {
  const inheritBefore = over.inheritBefore ?? base.inheritBefore;
  return {
    inheritBefore,
    patterns: inheritBefore === true ? [...base.patterns, ...over.patterns] : [...over.patterns, ...base.patterns],
    maxLineLength: over.maxLineLengthSet ? over.maxLineLength : base.maxLineLength,
    maxLineLengthSet: over.maxLineLengthSet || base.maxLineLengthSet,
  };
}

/** ASCII letters down only (apr_tolower in the C locale). */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

type Cmd = CmdParms<undefined, SubstituteDir>;

/** set_pattern: s<d>from<d>to[<d>flags], any delimiter, the last one optional. */
function setPattern(cmd: Cmd, line: string): string | undefined {
  if (line === '' || line[0]!.toLowerCase() !== 's') return 'Bad Substitute format, must be an s/// pattern';
  const delim = line[1];
  let from: string | undefined;
  let to: string | undefined;
  let flags: string | undefined;
  if (delim !== undefined) {
    const d1 = line.indexOf(delim, 2);
    if (d1 < 0) { from = line.slice(2); }
    else {
      from = line.slice(2, d1);
      const d2 = line.indexOf(delim, d1 + 1);
      if (d2 < 0) to = line.slice(d1 + 1);
      else { to = line.slice(d1 + 1, d2); flags = line.slice(d2 + 1); }
    }
  }
  if (delim === undefined || from === undefined || from === '' || to === undefined) {
    return 'Bad Substitute format, must be a complete s/// pattern';
  }
  let ci = false;
  let plain = false;
  let flatten = true;
  for (const c of (flags ?? '').toLowerCase()) {
    if (c === 'i') ci = true;
    else if (c === 'n') plain = true;
    else if (c === 'f') flatten = true;
    else if (c === 'q') flatten = false;
    else return 'Bad Substitute flag, only s///[infq] are supported';
  }
  let re: RegExp | undefined;
  if (!plain) {
    const compiled = compilePcre(from, ci ? 'i' : '');
    if (compiled === null) return 'Substitute could not compile regex';
    re = compiled.re;
  }
  // A C string: the replacement ends at a NUL.
  const nul = to.indexOf('\0');
  cmd.dir.patterns.push({ re, lit: ci ? asciiLower(from) : from, ci, to: nul < 0 ? to : to.slice(0, nul), flatten });
  return undefined;
}

function setMaxLineLength(cmd: Cmd, arg: string): string | undefined {
  const err = "SubstituteMaxLineLength must be a non-negative integer optionally suffixed with 'b', 'k', 'm' or 'g'.";
  // apr_strtoff: blanks, a sign and digits; without digits nothing is read.
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d+)/.exec(arg);
  let max = 0;
  let rest = arg;
  if (m) {
    max = Number(m[2]) * (m[1] === '-' ? -1 : 1);
    rest = arg.slice(m[0].length);
    if (!Number.isSafeInteger(max)) return err;
  }
  const u = rest.toLowerCase();
  if (u === 'k') max *= 1024;
  else if (u === 'm') max *= 1024 * 1024;
  else if (u === 'g') max *= 1024 * 1024 * 1024;
  else if (u !== '' && u !== 'b') return err;
  if (max < 0) return err;
  cmd.dir.maxLineLength = max;
  cmd.dir.maxLineLengthSet = true;
  return undefined;
}

// ---- matching ----------------------------------------------------------------------------------

class LineTooLong extends Error {}

/** ap_pregsub: $0-$9 are the match and its groups, \c is c; `maxlen` (0: none) bounds it. */
function regsub(template: string, m: RegExpExecArray, maxlen: number): string {
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i]!;
    if (c === '$' && i + 1 < template.length && template[i + 1]! >= '0' && template[i + 1]! <= '9') {
      const no = template.charCodeAt(++i) - 48;
      const g = no < AP_MAX_REG_MATCH ? m[no] : undefined;
      if (g !== undefined && g !== '') out += g;
      continue;
    }
    if (c === '\\' && i + 1 < template.length) { out += template[++i]; continue; }
    out += c;
  }
  if (maxlen > 0 && out.length >= maxlen) throw new LineTooLong();
  return out;
}

/** do_pattmatch: every pattern over a line, bucket by bucket; the line's buckets out. */
function patternMatch(line: string, cfg: SubstituteDir): string[] {
  let segs = [line];
  const max = cfg.maxLineLength;
  const forceQuick = cfg.patterns.length === 1;
  for (const p of cfg.patterns) {
    const flatten = p.flatten && !forceQuick;
    const next: string[] = [];
    for (const seg of segs) {
      if (seg.length === 0) { next.push(seg); continue; }
      let pos = 0;
      let have = false;
      let vb = '';
      const out: string[] = [];
      if (p.re === undefined) {
        let spaceLeft = max;
        const hay = p.ci ? asciiLower(seg) : seg;
        const replLen = p.to.length;
        for (let idx = hay.indexOf(p.lit, pos); idx >= 0; idx = hay.indexOf(p.lit, pos)) {
          have = true;
          const len = idx - pos;
          if (flatten) {
            if (vb.length + len + replLen > max) throw new LineTooLong();
            vb += seg.slice(pos, idx) + p.to;
          } else {
            if (spaceLeft < len + replLen) throw new LineTooLong();
            spaceLeft -= len + replLen;
            out.push(seg.slice(pos, idx), p.to);
          }
          pos = idx + p.lit.length;
        }
        if (have) {
          if (flatten) next.push(vb + seg.slice(pos));
          else {
            if (spaceLeft < seg.length - pos) throw new LineTooLong();
            out.push(seg.slice(pos));
            next.push(...out);
          }
        } else next.push(seg);
        continue;
      }
      let spaceLeft = max;
      const re = p.re;
      for (;;) {
        if (pos > seg.length) break;
        // Matched afresh from pos, as ap_regexec_len on the rest: ^ matches there too.
        const rest = seg.slice(pos);
        re.lastIndex = 0;
        const m = re.exec(rest);
        if (m === null) break;
        have = true;
        const so = m.index;
        let eo = so + m[0].length;
        if (flatten) {
          if (vb.length + so >= max) throw new LineTooLong();
          vb += rest.slice(0, so);
          vb += regsub(p.to, m, max - vb.length);
        } else {
          if (spaceLeft <= so) throw new LineTooLong();
          spaceLeft -= so;
          const repl = regsub(p.to, m, spaceLeft);
          spaceLeft -= repl.length;
          out.push(rest.slice(0, so), repl);
        }
        if (eo === so) {
          // DIFFERENCE: httpd loops for ever on an empty match (s/x*/y/); the character after
          // it is kept and matching goes on past it.
          if (so >= rest.length) { pos = seg.length + 1; break; }
          if (flatten) vb += rest[so]; else out.push(rest[so]!);
          eo = so + 1;
        }
        pos += eo;
      }
      const tail = pos <= seg.length ? seg.slice(pos) : '';
      if (have) {
        if (flatten) next.push(vb + tail);
        else { out.push(tail); next.push(...out); }
      } else next.push(seg);
    }
    segs = next;
  }
  return segs;
}

// ---- the filter -----------------------------------------------------------------------------------

interface SubstState {
  started: boolean;
  /** The line begun and not finished, in the pieces it came in. */
  line: string[];
}

function lineTooLong(r: Request): FilterError {
  r.log('substitute', APLOG_ERR, `AH01328: Line too long, URI ${r.uri}`);
  return new FilterError(500);
}

async function substitute(f: FilterInstance<SubstState>, bb: Brigade, cfg: SubstituteDir): Promise<void> {
  const st = f.state;
  const r = f.r;
  const max = cfg.maxLineLength;
  const pass: Bucket[] = [];
  const emit = (segs: string[]): void => {
    for (const s of segs) if (s.length) pass.push({ kind: 'data', data: Buffer.from(s, 'latin1') });
  };
  const passOn = async (): Promise<void> => {
    if (pass.length === 0) return;
    await f.pass(pass.splice(0, pass.length));
  };
  try {
    for (const b of bb) {
      if (b.kind === 'eos') {
        if (st.line.length > 0) {
          const flat = st.line.join('');
          st.line = [];
          if (flat.length > max) throw new LineTooLong();
          emit(patternMatch(flat, cfg));
        }
        pass.push(b);
        await passOn();
        continue;
      }
      if (b.kind === 'flush') { pass.push(b); await passOn(); continue; }
      // One read of the bucket at a time, each a turn of httpd's loop (a pass at its end).
      await bucketPieces(b, async (data) => {
        let buff = data.toString('latin1');
        let num = 0;
        while (buff.length > 0) {
          const nl = buff.indexOf('\n');
          if (nl < 0) { st.line.push(buff); break; }
          let line = buff.slice(0, nl + 1);
          buff = buff.slice(nl + 1);
          if (st.line.length > 0) {
            st.line.push(line);
            line = st.line.join('');
            st.line = [];
            if (line.length > max) throw new LineTooLong();
          }
          const segs = patternMatch(line, cfg);
          num += segs.length;
          emit(segs);
          if (num > AP_MAX_BUCKETS) {
            pass.push({ kind: 'flush' });
            await passOn();
            num = 0;
          }
        }
        await passOn();
      }, fileReadSize(r));
    }
  } catch (e) {
    if (e instanceof LineTooLong) throw lineTooLong(r);
    throw e;
  }
}

const SUBSTITUTE: FilterSpec<SubstState> = {
  name: 'SUBSTITUTE',
  type: FTYPE_RESOURCE,
  init: () => ({ started: false, line: [] }),
  filter(f, bb) {
    if (!f.state.started) {
      f.state.started = true;
      f.r.headersOut.unset('Content-Length');
    }
    if (bb.length === 0) return;
    return substitute(f, bb, self.dir(f.r));
  },
};

const self = defineModule<undefined, SubstituteDir>({
  name: 'substitute_module',
  source: 'mod_substitute.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, SubstituteDir, 'TAKE1'>({ name: 'Substitute', args: 'TAKE1', where: OR_FILEINFO, help: 'Pattern to filter the response content (s/foo/bar/[inf])', handler: setPattern }),
    directive<undefined, SubstituteDir, 'TAKE1'>({ name: 'SubstituteMaxLineLength', args: 'TAKE1', where: OR_FILEINFO, help: 'Maximum line length', handler: setMaxLineLength }),
    directive<undefined, SubstituteDir, 'FLAG'>({
      name: 'SubstituteInheritBefore', args: 'FLAG', where: OR_FILEINFO, help: 'Apply inherited patterns before those of the current context',
      handler: (cmd: Cmd, on: boolean) => { cmd.dir.inheritBefore = on; },
    }),
  ],
  filters: [SUBSTITUTE as FilterSpec],
});

export default self;
