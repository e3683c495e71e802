// Deterministic randomness for the bounded fuzz tests: the same seed gives the same inputs on
// every machine, so a failure found once can be replayed.

/** A linear congruential generator: rnd(n) is an integer in [0, n). */
export function seededRandom(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s % n;
  };
}

/** A string of up to maxLen characters drawn from `alphabet`. */
export function randomString(rnd: (n: number) => number, alphabet: string, maxLen: number): string {
  let s = '';
  for (let j = rnd(maxLen + 1); j > 0; j--) s += alphabet[rnd(alphabet.length)];
  return s;
}
