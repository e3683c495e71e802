// The expression corpus the fuzz test replays: seed expressions and deterministic mutations
// of them (a fixed-seed generator), each recorded with Apache 2.4.71's verdict by
// record-corpus.ts. Every expression fits in `<If "...">` on one line: no '"', no newline,
// no "${" (Define substitution).

export const SEEDS: readonly string[] = [
  'true', 'false', '!true', 'true && false || !false', "'a' == 'a'", '1 -eq 01', '1 -lt 2 && 3 -ge 3',
  "%{REQUEST_URI} =~ m#^/x#i", "%{HTTP_HOST} != 'example.com'", "'a' -in { 'b', 'a' }", '-n %{QUERY_STRING}',
  "req('Host') . 'x' = 'y'", "%{toupper:%{escape:?}} = '%3F'", "'127.0.0.1' -ipmatch '127.0.0.0/8'", "-R '::1'",
  "$1 == ''", "'x$1y' == ''", "%{HTTP:X} eq 'y'", "'a' -strcmatch 'A*' and not -z 'x'", '(true) || (false && true)',
  "%{TIME_HOUR} -gt 9 && %{TIME_HOUR} -lt 17", "tolower(%{REQUEST_METHOD}) in { 'get', 'head' }", "-f %{REQUEST_FILENAME}",
  "'abc' =~ /(b)(c)/ && $2 == 'c'", "md5('x') == sha1('y')", "base64(unbase64('Zm9v')) == 'Zm9v'", "%{env:FOO} =~ /bar/",
  "-T %{reqenv:X}", "'a/b' -fnmatch 'a/*'", "%{SERVER_PORT} -ne 80 || %{HTTPS} == 'on'", "'\\101' == 'A'",
  "%{req_novary:Accept} =~ /json/", "file('/etc/hostname') != ''", "'a' . 'b' . %{REMOTE_ADDR} =~ /ab/",
  "! ( %{REQUEST_METHOD} == 'POST' )", "%{IS_SUBREQ} == 'false' && %{THE_REQUEST} =~ m|HTTP/1|",
];

/** Pieces spliced in by the mutations: tokens, fragments and broken ones. */
const PIECES: readonly string[] = [
  '(', ')', '{', '}', ',', ':', "'", '%{', '}', '%{FOO}', '%{req:', '$', '$1', '-', '-x', '-zz', '-in', '-eq', '==', '=', '!=',
  '=~', '!~', '&&', '||', '!', 'and', 'or', 'not', '.', '/', 'm#', '#i', '/i', "'a'", '1', '-1', 'true', 'false', 'foo(',
  'tolower(', "req('x')", '%{HTTP_HOST}', '%{tolower:x}', ' ', '  ', '\\', '\\n', '\\400', '\\19', '\\x41', '%', '?', '@',
  'in', 'lt', 'm', '{ }', "{ 'a' }", "m#(#", "/[/", '%{NOPE}', '-R', "'1.2.3.4/8'", '-ipmatch', '-U', '%{:', '_',
];

/** mulberry32: a small deterministic generator. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function mutate(s: string, rnd: () => number): string {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
  let out = s;
  const n = 1 + Math.floor(rnd() * 3);
  for (let k = 0; k < n; k++) {
    const at = Math.floor(rnd() * (out.length + 1));
    const op = rnd();
    if (op < 0.35) out = out.slice(0, at) + pick(PIECES) + out.slice(at);
    else if (op < 0.6) out = out.slice(0, at) + out.slice(at + 1 + Math.floor(rnd() * 3));
    else if (op < 0.8) out = out.slice(0, at) + pick(PIECES) + out.slice(at + 1);
    else out = out + ' ' + pick(['&&', '||', '==', '-in', '.', '=~']) + ' ' + pick(SEEDS);
  }
  return out;
}

/** Usable in <If "..."> on one line. */
export function embeddable(s: string): boolean {
  return !s.includes('"') && !s.includes('\n') && !s.includes('${') && !s.endsWith('\\') && s.trim() !== '';
}

/** The corpus: the seeds, then `count` mutations (deterministic for a given seed). */
export function corpus(count: number, seed = 20): string[] {
  const rnd = rng(seed);
  const out = new Set<string>(SEEDS);
  while (out.size < SEEDS.length + count) {
    const m = mutate(SEEDS[Math.floor(rnd() * SEEDS.length)]!, rnd);
    if (embeddable(m)) out.add(m);
  }
  return [...out];
}
