// Decoding of the document for the HTML parser. libxml2 reads a document it was told is UTF-8
// (or given no charset) as UTF-8 until the first byte sequence that is not, and from there on
// as ISO-8859-1 ("Input is not proper UTF-8, indicate encoding !"); other charsets through
// their converter (iconv-lite here).

export interface TextStream {
  /** The iconv-lite name of what the stream decodes (to re-encode text not parsed yet). */
  readonly codec: string;
  write(b: Buffer): string;
  end(): string;
  /** Bytes held for a character not complete yet. */
  pending?(): Buffer;
}

/** The length of the UTF-8 sequence starting at i: 0 if invalid, -1 if cut by the end. */
function seqLength(b: Buffer, i: number): number {
  const c = b[i]!;
  let n: number;
  let min: number;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) { n = 2; min = 0x80; }
  else if (c >= 0xe0 && c <= 0xef) { n = 3; min = 0x800; }
  else if (c >= 0xf0 && c <= 0xf4) { n = 4; min = 0x10000; }
  else return 0;
  let cp = c & (n === 2 ? 0x1f : n === 3 ? 0x0f : 0x07);
  for (let k = 1; k < n; k++) {
    if (i + k >= b.length) return -1;
    const x = b[i + k]!;
    if ((x & 0xc0) !== 0x80) return 0;
    cp = (cp << 6) | (x & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

export class Utf8ThenLatin1 implements TextStream {
  private latin1 = false;
  private held: Buffer = Buffer.alloc(0);

  get codec(): string {
    return this.latin1 ? 'latin1' : 'utf8';
  }

  write(input: Buffer): string {
    const b = this.held.length ? Buffer.concat([this.held, input]) : input;
    this.held = Buffer.alloc(0);
    if (this.latin1) return b.toString('latin1');
    let i = 0;
    while (i < b.length) {
      if (b[i]! < 0x80) { i++; continue; }
      const n = seqLength(b, i);
      if (n > 0) { i += n; continue; }
      if (n === -1) {
        this.held = Buffer.from(b.subarray(i));
        return b.toString('utf8', 0, i);
      }
      this.latin1 = true;
      return b.toString('utf8', 0, i) + b.toString('latin1', i);
    }
    return b.toString('utf8');
  }

  end(): string {
    const h = this.held;
    this.held = Buffer.alloc(0);
    // A sequence cut by the end of the document is not UTF-8 either.
    return h.length ? h.toString('latin1') : '';
  }

  pending(): Buffer {
    return this.held;
  }
}
