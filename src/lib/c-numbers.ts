// C's number readers as httpd calls them on directive arguments: strtol / apr_strtoi64 and
// atoi. One implementation for every module (their quirks are part of Apache's behaviour:
// trailing text ignored, no digits read as 0, an int that wraps).

const INT64_MAX = 9223372036854775807n;

/** strtol-style parsing (apr_strtoi64): leading white space, a sign, decimal digits; returns
 *  the value (saturated at the 64-bit limits), whether it overflowed, and the text after it. */
export function strtoi64(text: string): { value: bigint; overflow: boolean; rest: string } {
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d*)/.exec(text)!;
  if (m[2] === '') return { value: 0n, overflow: false, rest: text };
  let v = BigInt(m[2]!);
  let overflow = false;
  if (v > INT64_MAX) { v = INT64_MAX + (m[1] === '-' ? 1n : 0n); overflow = true; }
  return { value: m[1] === '-' ? -v : v, overflow, rest: text.slice(m[0].length) };
}

/** glibc's atoi(): (int)strtol(s, NULL, 10) — saturated at 64 bits, then cut to 32 (so
 *  "4294967297" is 1 and "99999999999999999999" is -1). */
export function atoi(text: string): number {
  const m = /^[ \t\n\v\f\r]*[+-]?\d{1,9}(?!\d)/.exec(text);
  if (m !== null) return parseInt(m[0], 10);
  return Number(BigInt.asIntN(32, strtoi64(text).value));
}
