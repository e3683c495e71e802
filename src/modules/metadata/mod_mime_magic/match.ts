// mod_mime_magic's look at a file's first bytes (httpd's softmagic/match/mget/mcheck/mprint,
// ascmagic, is_tar and magic_rsl_to_request), as httpd does it on 64-bit Linux: the data a test
// reads is a 64-byte window (the C union), converted in place for the big- and little-endian
// types, so a `long` test reads 8 bytes and a 32-bit value with its top bit set is
// sign-extended. The result is the list of printed fragments (the RSL) turned into a type and
// an optional encoding. Pure functions: the fuzz test drives them.

import {
  type MagicEntry, MAXSTRING, FLAG_INDIR, FLAG_UNSIGNED, readU64LE, signExtend,
  T_BYTE, T_SHORT, T_LONG, T_STRING, T_DATE, T_BESHORT, T_BELONG, T_BEDATE, T_LESHORT, T_LELONG, T_LEDATE,
} from './parse.js';

/** httpd's MAXMIMESTRING: one printed fragment is at most 255 characters. */
const MAXMIMESTRING = 256;
/** SMALL_HOWMANY: ascmagic looks for keywords in the first 1024 bytes. */
const SMALL_HOWMANY = 1024;

/** A request error-log line a look produced: an error (APLOG_ERR), one with apr_file_read's
 *  end-of-file status, or text a child program wrote on httpd's stderr. */
export type MagicLog = string | { readonly eof: string } | { readonly raw: string };

/** What a look produced: the fragments printed and the request's error-log lines. */
export interface MagicOutput {
  frags: string[];
  logs: MagicLog[];
}

const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);
const isAlnum = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** mconvert(): the window as the test's type reads it (in place). False for a bad type. */
function mconvert(p: Uint8Array, m: MagicEntry, out: MagicOutput): boolean {
  switch (m.type) {
    case T_BYTE: case T_SHORT: case T_LONG: case T_DATE:
      return true;
    case T_STRING: {
      p[MAXSTRING - 1] = 0;
      for (let k = 0; k < MAXSTRING && p[k] !== 0; k++) if (p[k] === 10) { p[k] = 0; break; }
      return true;
    }
    case T_BESHORT: { const a = p[0]!; p[0] = p[1]!; p[1] = a; return true; }
    case T_LESHORT: return true;
    case T_BELONG: case T_BEDATE: {
      const v = BigInt.asIntN(32, BigInt(((p[0]! << 24) | (p[1]! << 16) | (p[2]! << 8) | p[3]!) >>> 0));
      writeU64LE(p, BigInt.asUintN(64, v));
      return true;
    }
    case T_LELONG: case T_LEDATE: {
      const v = BigInt.asIntN(32, BigInt(((p[3]! << 24) | (p[2]! << 16) | (p[1]! << 8) | p[0]!) >>> 0));
      writeU64LE(p, BigInt.asUintN(64, v));
      return true;
    }
    default:
      out.logs.push(`AH01538: mod_mime_magic: invalid type ${m.type} in mconvert().`);
      return false;
  }
}

function writeU64LE(p: Uint8Array, v: bigint): void {
  for (let k = 0; k < 8; k++) { p[k] = Number(v & 0xffn); v >>= 8n; }
}

/** mget(): the window at the test's offset (following an indirect offset), or null when it
 *  does not fit in the data. */
function mget(buf: Uint8Array, m: MagicEntry, out: MagicOutput): Uint8Array | null {
  let offset = BigInt(m.offset);
  // DIFFERENCE: httpd reads before its buffer for an offset in -64..-1 (undefined behaviour);
  // plume treats every negative offset as out of the data.
  if (offset < 0n || offset + BigInt(MAXSTRING) > BigInt(buf.length)) return null;
  let p = Uint8Array.prototype.slice.call(buf, Number(offset), Number(offset) + MAXSTRING);
  if (!mconvert(p, m, out)) return null;
  if ((m.flag & FLAG_INDIR) !== 0) {
    let base: bigint;
    if (m.inType === T_BYTE) base = BigInt(p[0]!);
    else if (m.inType === T_SHORT) base = BigInt(p[0]! | (p[1]! << 8));
    else base = BigInt.asIntN(64, readU64LE(p, 0));
    offset = BigInt.asIntN(64, base + m.inOffset);
    if (offset < 0n || offset + BigInt(MAXSTRING) > BigInt(buf.length)) return null;
    p = Uint8Array.prototype.slice.call(buf, Number(offset), Number(offset) + MAXSTRING);
    if (!mconvert(p, m, out)) return null;
  }
  return p;
}

/** The window's number as the test's type reads it (unsigned 64-bit), before sign extension. */
function numberOf(p: Uint8Array, type: number): bigint {
  switch (type) {
    case T_BYTE: return BigInt(p[0]!);
    case T_SHORT: case T_BESHORT: case T_LESHORT: return BigInt(p[0]! | (p[1]! << 8));
    default: return readU64LE(p, 0);
  }
}

/** mcheck(). */
function mcheck(p: Uint8Array, m: MagicEntry, out: MagicOutput): boolean {
  if (m.valueBytes[0] === 120 && m.valueBytes[1] === 0 && m.type === T_STRING
    || m.type !== T_STRING && (m.value & 0xffffn) === 0x78n) {
    out.logs.push('AH01539: mod_mime_magic: BOINK');
    return true;
  }
  let l = m.value;
  let v: bigint;
  switch (m.type) {
    case T_BYTE: case T_SHORT: case T_BESHORT: case T_LESHORT:
    case T_LONG: case T_BELONG: case T_LELONG: case T_DATE: case T_BEDATE: case T_LEDATE:
      v = numberOf(p, m.type);
      break;
    case T_STRING: {
      l = 0n;
      let d = 0;
      for (let k = 0; k < m.vallen; k++) {
        d = p[k]! - m.valueBytes[k]!;
        if (d !== 0) break;
      }
      v = BigInt.asUintN(64, BigInt(d));
      break;
    }
    default:
      out.logs.push(`AH01540: mod_mime_magic: invalid type ${m.type} in mcheck().`);
      return false;
  }
  v = signExtend(m, v) & m.mask;
  const unsigned = (m.flag & FLAG_UNSIGNED) !== 0;
  switch (m.reln) {
    case 'x': return true;
    case '!': return v !== l;
    case '=': return v === l;
    case '>': return unsigned ? v > l : BigInt.asIntN(64, v) > BigInt.asIntN(64, l);
    case '<': return unsigned ? v < l : BigInt.asIntN(64, v) < BigInt.asIntN(64, l);
    case '&': return (v & l) === l;
    case '^': return (v & l) !== l;
    default:
      out.logs.push(`AH01550: mod_mime_magic: mcheck: can't happen: invalid relation ${m.reln === '' ? 0 : m.reln.charCodeAt(0)}.`);
      return false;
  }
}

const cString = (b: Uint8Array): string => {
  let e = b.indexOf(0);
  if (e < 0) e = b.length;
  return Buffer.from(b.buffer, b.byteOffset, e).toString('latin1');
};

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** apr_ctime() of a time in seconds (local time, "Sat Sep 01 00:00:00 1990"). */
function aprCtime(sec: bigint): string {
  const d = new Date(Number(sec) * 1000);
  if (Number.isNaN(d.getTime())) return '';
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${DAYS[d.getDay()]} ${MONTHS[d.getMonth()]} ${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())} ${d.getFullYear()}`;
}

/** apr_snprintf(desc, arg) for the conversions a magic description can hold. */
export function formatDesc(desc: string, arg: string | bigint): string {
  let out = '';
  for (let i = 0; i < desc.length; i++) {
    const ch = desc[i]!;
    if (ch !== '%') { out += ch; continue; }
    const mm = /^([-+ #0]*)(\d*)(?:\.(\d+))?(l{0,2}|h{0,2}|q|z|j|t)?([diouxXcsp%])/.exec(desc.slice(i + 1));
    if (mm === null) { out += ch; continue; }
    i += mm[0].length;
    const flags = mm[1]!;
    const width = mm[2] === '' ? 0 : Number(mm[2]);
    const conv = mm[5]!;
    let s: string;
    if (conv === '%') { out += '%'; continue; }
    const n = typeof arg === 'bigint' ? arg : 0n;
    switch (conv) {
      case 's': s = typeof arg === 'string' ? arg : String(arg); if (mm[3] !== undefined) s = s.slice(0, Number(mm[3])); break;
      case 'c': s = String.fromCharCode(Number(n & 0xffn)); break;
      case 'd': case 'i': s = String(mm[4]?.startsWith('l') === true ? BigInt.asIntN(64, n) : BigInt.asIntN(32, n)); break;
      case 'u': s = String(mm[4]?.startsWith('l') === true ? n : BigInt.asUintN(32, n)); break;
      case 'x': s = (mm[4]?.startsWith('l') === true ? n : BigInt.asUintN(32, n)).toString(16); break;
      case 'X': s = (mm[4]?.startsWith('l') === true ? n : BigInt.asUintN(32, n)).toString(16).toUpperCase(); break;
      case 'o': s = (mm[4]?.startsWith('l') === true ? n : BigInt.asUintN(32, n)).toString(8); break;
      default: s = ''; break;
    }
    if (s.length < width) s = flags.includes('-') ? s.padEnd(width) : s.padStart(width, flags.includes('0') && conv !== 's' ? '0' : ' ');
    out += s;
  }
  return out.length >= MAXMIMESTRING ? out.slice(0, MAXMIMESTRING - 1) : out;
}

/** mprint(). */
function mprint(p: Uint8Array, m: MagicEntry, out: MagicOutput): void {
  switch (m.type) {
    case T_STRING:
      out.frags.push(formatDesc(m.desc, m.reln === '=' ? cString(m.valueBytes) : cString(p)));
      return;
    case T_DATE: case T_BEDATE: case T_LEDATE:
      out.frags.push(formatDesc(m.desc, aprCtime(BigInt.asIntN(64, readU64LE(p, 0)))));
      return;
    case T_BYTE: case T_SHORT: case T_BESHORT: case T_LESHORT: case T_LONG: case T_BELONG: case T_LELONG:
      out.frags.push(formatDesc(m.desc, signExtend(m, numberOf(p, m.type)) & m.mask));
      return;
    default:
      out.logs.push(`AH01537: mod_mime_magic: invalid m->type (${m.type}) in mprint().`);
  }
}

/** match(): the first top-level test that matches, with its continuations. */
export function softmagic(entries: readonly MagicEntry[], buf: Uint8Array, out: MagicOutput): boolean {
  for (let i = 0; i < entries.length; i++) {
    const m = entries[i]!;
    const p = mget(buf, m, out);
    if (p === null || !mcheck(p, m, out)) {
      // Flush its continuations.
      while (i + 1 < entries.length && entries[i + 1]!.contLevel !== 0) i++;
      continue;
    }
    mprint(p, m, out);
    let needSeparator = m.desc !== '';
    let contLevel = 1;
    for (let j = i + 1; j < entries.length && entries[j]!.contLevel !== 0; j++) {
      const c = entries[j]!;
      if (contLevel >= c.contLevel) {
        if (contLevel > c.contLevel) contLevel = c.contLevel;
        const q = mget(buf, c, out);
        if (q !== null && mcheck(q, c, out)) {
          if (needSeparator && !c.nospflag && c.desc !== '') {
            out.frags.push(' ');
            needSeparator = false;
          }
          mprint(q, c, out);
          if (c.desc !== '') needSeparator = true;
          contLevel++;
        }
      }
    }
    return true;
  }
  return false;
}

const L_HTML = 'text/html';
const L_PLAIN = 'text/plain';
const NAMES: ReadonlyMap<string, string> = new Map<string, string>([
  ['<html>', L_HTML], ['<HTML>', L_HTML], ['<head>', L_HTML], ['<HEAD>', L_HTML],
  ['<title>', L_HTML], ['<TITLE>', L_HTML], ['<h1>', L_HTML], ['<H1>', L_HTML],
  ['<!--', L_HTML], ['<!DOCTYPE HTML', L_HTML],
  ['/*', L_PLAIN], ['#include', L_PLAIN], ['char', L_PLAIN], ['The', L_PLAIN], ['the', L_PLAIN],
  ['double', L_PLAIN], ['extern', L_PLAIN], ['float', L_PLAIN], ['real', L_PLAIN],
  ['struct', L_PLAIN], ['union', L_PLAIN], ['CFLAGS', L_PLAIN], ['LDFLAGS', L_PLAIN],
  ['all:', L_PLAIN], ['.PRECIOUS', L_PLAIN], ['.ascii', L_PLAIN], ['.asciiz', L_PLAIN],
  ['.byte', L_PLAIN], ['.even', L_PLAIN], ['.globl', L_PLAIN], ['clr', L_PLAIN],
  ['(input,', L_PLAIN], ['dcl', L_PLAIN],
  ['Received:', 'message/rfc822'], ['>From', 'message/rfc822'], ['Return-Path:', 'message/rfc822'], ['Cc:', 'message/rfc822'],
  ['Newsgroups:', 'message/news'], ['Path:', 'message/news'], ['Organization:', 'message/news'],
]);

/** ascmagic(): troff, Fortran, keywords of the first 1024 bytes, tar. */
export function ascmagic(buf: Uint8Array, out: MagicOutput): boolean {
  const at = (k: number): number => (k < buf.length ? buf[k]! : 0);
  if (at(0) === 46) {
    let tp = 1;
    while (isSpace(at(tp))) tp++;
    if ((isAlnum(at(tp)) || at(tp) === 92) && (isAlnum(at(tp + 1)) || at(tp) === 34)) {
      out.frags.push('application/x-troff');
      return true;
    }
  }
  if ((at(0) === 99 || at(0) === 67) && isSpace(at(1))) {
    out.frags.push('text/plain');
    return true;
  }
  const small = Math.min(buf.length, SMALL_HOWMANY);
  const head = buf.subarray(0, small);
  const hasEscapes = head.includes(0x1b);
  let end = head.indexOf(0);
  if (end < 0) end = small;
  const text = Buffer.from(head.buffer, head.byteOffset, end).toString('latin1');
  for (const token of text.split(/[ \t\n\r\f]+/)) {
    if (token === '') continue;
    const type = NAMES.get(token);
    if (type !== undefined) {
      out.frags.push(type);
      if (hasEscapes) out.frags.push(' (with escape sequences)');
      return true;
    }
  }
  if (isTar(buf) !== 0) {
    out.frags.push('application/x-tar');
    return true;
  }
  return false;
}

/** from_oct(). */
function fromOct(buf: Uint8Array, where: number, digs: number): number {
  const at = (k: number): number => (k < buf.length ? buf[k]! : 0);
  while (isSpace(at(where))) {
    where++;
    if (--digs <= 0) return -1;
  }
  let value = 0;
  while (digs > 0 && at(where) >= 48 && at(where) <= 55) {
    value = value * 8 + (at(where++) - 48);
    --digs;
  }
  if (digs > 0 && at(where) !== 0 && !isSpace(at(where))) return -1;
  return value;
}

/** is_tar(): 0 no, 1 old tar, 2 POSIX tar. */
export function isTar(buf: Uint8Array): number {
  if (buf.length < 512) return 0;
  const recsum = fromOct(buf, 148, 8);
  let sum = 0;
  for (let k = 0; k < 512; k++) sum += buf[k]!;
  for (let k = 148; k < 156; k++) sum -= buf[k]!;
  sum += 32 * 8;
  if (sum !== recsum) return 0;
  const magic = [117, 115, 116, 97, 114, 32, 32, 0];
  for (let k = 0; k < 8; k++) {
    if (buf[257 + k] !== magic[k]) return 1;
    if (magic[k] === 0) break;
  }
  return 2;
}

/** magic_rsl_to_request(): the fragments (the trailing newline httpd adds excluded) as a type
 *  and an encoding, lower-cased; null when they do not make one (DECLINED). httpd copies one
 *  character past each field when there is one (rsl_strdup), which is kept. */
export function rslToType(frags: readonly string[]): { type: string; encoding: string | undefined } | null {
  if (frags.length === 0) return null;
  const s = frags.join('');
  type State = 0 | 1 | 2 | 3 | 4;
  let state: State = 0;
  let typeStart = 0;
  let typeLen = 0;
  let encStart = 0;
  let encLen = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isSpace(c)) {
      if (state === 0 || state === 3) continue;
      if (state === 1) return null;
      if (state === 2) { state = 3; continue; }
      break;
    }
    if (state === 1 && c === 47) { typeLen++; state = 2; continue; }
    if (state === 0) { state = 1; typeStart = i; typeLen = 1; }
    else if (state === 1 || state === 2) typeLen++;
    else if (state === 3) { state = 4; encStart = i; encLen = 1; }
    else encLen++;
  }
  if (state !== 2 && state !== 3 && state !== 4) return null;
  const type = s.slice(typeStart, typeStart + typeLen + 1);
  const encoding = state === 4 ? s.slice(encStart, encStart + encLen + 1).toLowerCase() : undefined;
  return { type, encoding };
}

