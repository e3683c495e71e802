// APR's base64 decoder (apr_base64_decode, ap_pbase64decode): the leading run of base64
// characters decoded, whatever follows it ignored; used by every reader of Basic credentials.

/** APR's pr2six: the value of a base64 character, 64 for anything else. */
const PR2SIX = new Uint8Array(256).fill(64);
{
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < 64; i++) PR2SIX[alphabet.charCodeAt(i)] = i;
}

/** apr_base64_decode over latin1 text: decodes the leading run of base64 characters. */
export function aprBase64Decode(text: string): Buffer {
  let n = 0;
  for (let c = text.charCodeAt(0); n < text.length && c < 256 && PR2SIX[c]! <= 63; c = text.charCodeAt(++n));
  const v = (i: number): number => PR2SIX[text.charCodeAt(i)]!;
  const out: number[] = [];
  let i = 0;
  let left = n;
  while (left > 4) {
    out.push(((v(i) << 2) | (v(i + 1) >> 4)) & 0xff, ((v(i + 1) << 4) | (v(i + 2) >> 2)) & 0xff, ((v(i + 2) << 6) | v(i + 3)) & 0xff);
    i += 4;
    left -= 4;
  }
  if (left > 1) out.push(((v(i) << 2) | (v(i + 1) >> 4)) & 0xff);
  if (left > 2) out.push(((v(i + 1) << 4) | (v(i + 2) >> 2)) & 0xff);
  if (left > 3) out.push(((v(i + 2) << 6) | v(i + 3)) & 0xff);
  return Buffer.from(out);
}
