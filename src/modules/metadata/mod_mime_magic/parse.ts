// The magic file of mod_mime_magic (MimeMagicFile, file(1)'s old format as httpd's apprentice()
// and parse() read it): one test per line, "[>...][(]OFFSET[.lsb][+-N)] [u]TYPE[&MASK] [RELN]VALUE
// DESCRIPTION". Values follow httpd on 64-bit Linux: C `long` is 64 bits, numbers are read by
// strtol (base 0, saturating), the offset is cut to an int, masks and values are sign-extended
// to the test's type unless it is unsigned. A line whose type is unknown is an error (AH01524)
// but, as in httpd, its half-filled test stays in the list (type 0: it never matches and logs
// AH01538 per request). Pure functions: the fuzz test drives them.

export const T_BYTE = 1;
export const T_SHORT = 2;
export const T_LONG = 4;
export const T_STRING = 5;
export const T_DATE = 6;
export const T_BESHORT = 7;
export const T_BELONG = 8;
export const T_BEDATE = 9;
export const T_LESHORT = 10;
export const T_LELONG = 11;
export const T_LEDATE = 12;

export const FLAG_INDIR = 1;
export const FLAG_UNSIGNED = 2;

/** httpd's MAXstring: the bytes of a value (and of the data a test looks at). */
export const MAXSTRING = 64;
/** httpd's MAXDESC: a description keeps its first 49 characters. */
const MAXDESC = 50;
/** apr_file_gets(line, BUFSIZ): a longer line is read as several. */
const LINE_MAX = 8191;

const M64 = (1n << 64n) - 1n;

/** One test (httpd's struct magic). Numbers are unsigned 64-bit values (C unsigned long). */
export interface MagicEntry {
  readonly lineno: number;
  flag: number;
  contLevel: number;
  inType: number;
  inOffset: bigint;
  offset: number;
  /** '=', '!', '<', '>', '&', '^' or 'x'; 0 while not reached (a line that failed before). */
  reln: string;
  /** 0: the line's type was invalid (httpd keeps the entry). */
  type: number;
  /** The numeric value (unsigned 64-bit), or the first 8 bytes of a string value read as one. */
  value: bigint;
  /** A string value's bytes (MAXSTRING, zero-filled). */
  valueBytes: Uint8Array;
  vallen: number;
  mask: bigint;
  nospflag: boolean;
  /** The description, latin1, at most 49 characters; a printf format in httpd. */
  desc: string;
}

export interface MagicMessage {
  /** "AH01521: mod_mime_magic: offset ... invalid" as httpd logs it (APLOG_ERR). */
  readonly text: string;
}

export interface ParsedMagic {
  readonly entries: MagicEntry[];
  readonly messages: MagicMessage[];
  /** Lines that failed (httpd's errs); apprentice then returns -1 (the list stays in place). */
  readonly errors: number;
}

const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const hexVal = (c: number): number => {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
};

const LONG_MAX = (1n << 63n) - 1n;
const LONG_MIN = -(1n << 63n);

/** glibc strtol(s + at, &end, 0) on 64-bit: the value (signed, saturated) and where it ended
 *  (`at` itself when no digits were read). */
export function strtol(s: Uint8Array, at: number): { value: bigint; end: number } {
  let i = at;
  while (i < s.length && isSpace(s[i]!)) i++;
  let neg = false;
  if (i < s.length && (s[i] === 43 || s[i] === 45)) { neg = s[i] === 45; i++; }
  let base = 10n;
  if (s[i] === 48 && (s[i + 1] === 120 || s[i + 1] === 88) && i + 2 < s.length && hexVal(s[i + 2]!) >= 0) {
    base = 16n; i += 2;
  } else if (s[i] === 48) {
    base = 8n;
  }
  const start = i;
  let v = 0n;
  let over = false;
  for (; i < s.length; i++) {
    const d = hexVal(s[i]!);
    if (d < 0 || BigInt(d) >= base) break;
    if (!over) {
      v = v * base + BigInt(d);
      if (v > LONG_MAX + 1n) over = true;
    }
  }
  if (i === start) return { value: 0n, end: at };
  if (over || (!neg && v > LONG_MAX)) return { value: neg ? LONG_MIN : LONG_MAX, end: i };
  return { value: neg ? -v : v, end: i };
}

/** signextend(): a value as the test's type reads it, unless the test is unsigned. */
export function signExtend(m: Pick<MagicEntry, 'flag' | 'type'>, v: bigint): bigint {
  if ((m.flag & FLAG_UNSIGNED) !== 0) return BigInt.asUintN(64, v);
  switch (m.type) {
    case T_BYTE: return BigInt.asUintN(64, BigInt.asIntN(8, v));
    case T_SHORT: case T_BESHORT: case T_LESHORT: return BigInt.asUintN(64, BigInt.asIntN(16, v));
    default: return BigInt.asUintN(64, v);
  }
}

const TYPES: readonly [string, number][] = [
  ['byte', T_BYTE], ['short', T_SHORT], ['long', T_LONG], ['string', T_STRING], ['date', T_DATE],
  ['beshort', T_BESHORT], ['belong', T_BELONG], ['bedate', T_BEDATE],
  ['leshort', T_LESHORT], ['lelong', T_LELONG], ['ledate', T_LEDATE],
];

const latin1 = (b: Uint8Array, from: number, to = b.length): string => Buffer.from(b.buffer, b.byteOffset + from, Math.max(0, to - from)).toString('latin1');

/** getstr(): C escapes up to an unescaped space; returns the bytes and where the scan stopped
 *  (after the character that ended it). */
function getstr(l: Uint8Array, at: number, messages: MagicMessage[]): { bytes: Uint8Array; len: number; end: number } {
  const out = new Uint8Array(MAXSTRING);
  let p = 0;
  let s = at;
  const origin = at;
  while (s < l.length) {
    let c = l[s++]!;
    if (isSpace(c)) break;
    if (p >= MAXSTRING - 1) {
      messages.push({ text: `AH01526: mod_mime_magic: string too long: ${latin1(l, origin)}` });
      break;
    }
    if (c !== 92) { out[p++] = c; continue; }
    if (s >= l.length) { s++; break; }
    c = l[s++]!;
    switch (c) {
      case 110: out[p++] = 10; break;
      case 114: out[p++] = 13; break;
      case 98: out[p++] = 8; break;
      case 116: out[p++] = 9; break;
      case 102: out[p++] = 12; break;
      case 118: out[p++] = 11; break;
      case 48: case 49: case 50: case 51: case 52: case 53: case 54: case 55: {
        let val = c - 48;
        if (s < l.length && l[s]! >= 48 && l[s]! <= 55) {
          val = (val << 3) | (l[s++]! - 48);
          if (s < l.length && l[s]! >= 48 && l[s]! <= 55) val = (val << 3) | (l[s++]! - 48);
        }
        out[p++] = val & 0xff;
        break;
      }
      case 120: {
        let val = 120;
        const a = s < l.length ? hexVal(l[s]!) : -1;
        if (a >= 0) {
          s++; val = a;
          const b = s < l.length ? hexVal(l[s]!) : -1;
          if (b >= 0) {
            s++; val = (val << 4) + b;
            const c3 = s < l.length ? hexVal(l[s]!) : -1;
            if (c3 >= 0) { s++; val = (val << 4) + c3; }
          }
        }
        out[p++] = val & 0xff;
        break;
      }
      default: out[p++] = c;
    }
  }
  return { bytes: out, len: p, end: Math.min(s, l.length) };
}

/** parse(): one line (leading white space and the trailing one already removed). The entry is
 *  returned even when the line fails, as httpd links it before parsing. */
export function parseMagicLine(line: Uint8Array, lineno: number, messages: MagicMessage[]): { entry: MagicEntry; ok: boolean } {
  const l = line;
  const m: MagicEntry = {
    lineno, flag: 0, contLevel: 0, inType: 0, inOffset: 0n, offset: 0, reln: '', type: 0,
    value: 0n, valueBytes: new Uint8Array(MAXSTRING), vallen: 0, mask: 0n, nospflag: false, desc: '',
  };
  let i = 0;
  const at = (k: number): number => (k < l.length ? l[k]! : 0);
  while (at(i) === 62) { i++; m.contLevel++; }
  if (m.contLevel !== 0 && at(i) === 40) { i++; m.flag |= FLAG_INDIR; }
  const off = strtol(l, i);
  m.offset = Number(BigInt.asIntN(32, off.value));
  if (off.end === i) messages.push({ text: `AH01521: mod_mime_magic: offset ${latin1(l, i)} invalid` });
  i = off.end;
  if ((m.flag & FLAG_INDIR) !== 0) {
    m.inType = T_LONG;
    if (at(i) === 46) {
      i++;
      const c = at(i);
      if (c === 108) m.inType = T_LONG;
      else if (c === 115) m.inType = T_SHORT;
      else if (c === 98) m.inType = T_BYTE;
      else messages.push({ text: `AH01522: mod_mime_magic: indirect offset type ${c === 0 ? '' : String.fromCharCode(c)} invalid` });
      i++;
    }
    const sign = at(i);
    if (sign === 43 || sign === 45) i++;
    let t = i;
    if (isDigit(at(i))) {
      const r = strtol(l, i);
      m.inOffset = sign === 45 ? -r.value : r.value;
      t = r.end;
    }
    if (at(t) !== 41) messages.push({ text: 'AH01523: mod_mime_magic: missing \')\' in indirect offset' });
    i = t + 1;
  }
  while (isDigit(at(i))) i++;
  while (isSpace(at(i))) i++;
  if (at(i) === 117) { i++; m.flag |= FLAG_UNSIGNED; }
  let found = false;
  for (const [name, type] of TYPES) {
    let k = 0;
    while (k < name.length && at(i + k) === name.charCodeAt(k)) k++;
    if (k === name.length) { m.type = type; i += k; found = true; break; }
  }
  if (!found) {
    messages.push({ text: `AH01524: mod_mime_magic: type ${latin1(l, Math.min(i, l.length))} invalid` });
    return { entry: m, ok: false };
  }
  if (at(i) === 38) {
    const r = strtol(l, i + 1);
    m.mask = signExtend(m, r.value);
    i = r.end;
  } else {
    m.mask = M64;
  }
  while (isSpace(at(i))) i++;
  const c = at(i);
  let getDesc = false;
  if (c === 62 || c === 60 || c === 38 || c === 94 || c === 61 || (c === 33 && m.type !== T_STRING)) {
    m.reln = String.fromCharCode(c);
    i++;
  } else if (c === 120 && isSpace(at(i + 1))) {
    m.reln = 'x';
    i++;
    getDesc = true;
  } else {
    m.reln = '=';
  }
  if (!getDesc) {
    while (isSpace(at(i))) i++;
    if (m.type === T_STRING) {
      const g = getstr(l, i, messages);
      m.valueBytes = g.bytes;
      m.vallen = g.len;
      m.value = readU64LE(g.bytes, 0);
      i = g.end;
    } else if (m.reln !== 'x') {
      const r = strtol(l, i);
      m.value = signExtend(m, r.value);
      i = r.end;
    }
  }
  while (isSpace(at(i))) i++;
  if (at(i) === 8) { i++; m.nospflag = true; }
  else if (at(i) === 92 && at(i + 1) === 98) { i += 2; m.nospflag = true; }
  let end = Math.min(l.length, i + MAXDESC - 1);
  const nul = l.indexOf(0, i);
  if (nul >= 0 && nul < end) end = nul;
  m.desc = latin1(l, Math.min(i, l.length), end);
  return { entry: m, ok: true };
}

export function readU64LE(b: Uint8Array, at: number): bigint {
  let v = 0n;
  for (let k = 7; k >= 0; k--) v = (v << 8n) | BigInt(b[at + k] ?? 0);
  return v;
}

/** apprentice(): every line of the file, in order. */
export function parseMagicFile(data: Uint8Array): ParsedMagic {
  const entries: MagicEntry[] = [];
  const messages: MagicMessage[] = [];
  let errors = 0;
  let at = 0;
  let lineno = 1;
  while (at < data.length) {
    const nl = data.indexOf(10, at);
    let next = nl < 0 ? data.length : nl + 1;
    if (next - at > LINE_MAX) next = at + LINE_MAX;
    let end = next;
    // strlen(): a NUL ends the line as C reads it.
    const nul = data.indexOf(0, at);
    if (nul >= 0 && nul < end) end = nul;
    while (end > at && isSpace(data[end - 1]!)) end--;
    let start = at;
    while (start < end && isSpace(data[start]!)) start++;
    const lno = lineno++;
    at = next;
    if (start === end || data[start] === 35) continue;
    const { entry, ok } = parseMagicLine(data.subarray(start, end), lno, messages);
    entries.push(entry);
    if (!ok) errors++;
  }
  return { entries, messages, errors };
}
