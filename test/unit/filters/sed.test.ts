// mod_sed's script compiler, regular expressions and engine (src/modules/filters/mod_sed/):
// Solaris sed as httpd's sed0.c/sed1.c/regexp.c have it, the scripts of httpd-tests'
// t/modules/sed.t, input split at every point, the 8 MB buffer limit; bounded fuzzing of the
// compiler and of the engine on random input cut at random places.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { compileRegexp, step, StepVars } from '../../../src/modules/filters/mod_sed/regexp.js';
import { SedScript } from '../../../src/modules/filters/mod_sed/sed-compile.js';
import { SedEval, SedEvalError } from '../../../src/modules/filters/mod_sed/sed-eval.js';
import { seededRandom, randomString } from '../../fuzz.js';

function compile(lines: readonly string[]): SedScript {
  const s = new SedScript();
  for (const l of lines) {
    const err = s.compile(l);
    if (err !== undefined) throw new Error(`compile ${JSON.stringify(l)}: ${err}`);
  }
  return s;
}

/** Runs a script over input given in pieces; the output, the logged errors, the failure. */
function run(lines: readonly string[] | SedScript, pieces: readonly string[], maxSteps = Infinity): { out: string; errors: string[]; failed?: string } {
  const script = lines instanceof SedScript ? lines : compile(lines);
  let out = '';
  const errors: string[] = [];
  const ev = new SedEval(script, { write: (s) => { out += s; }, error: (m) => errors.push(m) }, maxSteps);
  try {
    for (const p of pieces) ev.evalBuffer(p);
    ev.finalize();
  } catch (e) {
    if (e instanceof SedEvalError) return { out, errors, failed: e.code };
    if (e instanceof Error && e.message === 'sed: step limit') return { out, errors, failed: 'loop' };
    throw e;
  }
  return { out, errors };
}

const sed = (lines: readonly string[], input: string): string => run(lines, [input]).out;

function compileError(lines: readonly string[]): string | null | undefined {
  const s = new SedScript();
  for (const l of lines) {
    const err = s.compile(l);
    if (err !== undefined) return err;
  }
  return undefined;
}

test('regexp: the ed syntax — ^ and $ only at the ends, * after nothing is plain, \\{m,n\\}, groups and back-references', () => {
  const m = (re: string, s: string): string | null => {
    const c = compileRegexp(re + '/', 0, '/', 10000).re!;
    const v = new StepVars();
    return step(s, 0, c, v) ? s.slice(v.loc1, v.loc2) : null;
  };
  assert.equal(m('a*b', 'xaaab'), 'aaab');
  assert.equal(m('*a', 'x*a'), '*a');
  assert.equal(m('^*a', '*a'), '*a');
  assert.equal(m('a^b', 'a^b'), 'a^b');
  assert.equal(m('a$b', 'a$b'), 'a$b');
  assert.equal(m('b$', 'abab'), 'b');
  assert.equal(m('^b', 'ab'), null);
  assert.equal(m('a\\{2,3\\}', 'aaaa'), 'aaa');
  assert.equal(m('a\\{2\\}', 'aaaa'), 'aa');
  assert.equal(m('a\\{2,\\}', 'aaaaa'), 'aaaaa');
  assert.equal(m('a**', 'aa'), 'aa');
  assert.equal(m('\\(ab\\)*', 'xab*'), 'ab*', '* after \\) is a plain star');
  assert.equal(m('\\(a\\)\\1', 'xaa'), 'aa');
  assert.equal(m('\\(a*\\)b\\1', 'aabaa'), 'aabaa');
  assert.equal(m('[]a]*', ']a]b'), ']a]');
  assert.equal(m('[^a-c]', 'abcd'), 'd');
  assert.equal(m('[a-]', 'x-'), '-');
  assert.equal(m('[\\n]', 'n'), 'n');
  assert.equal(m('a\\nb', 'a\nb'), 'a\nb');
  assert.equal(m('.', '\n'), '\n');
  assert.equal(m('[^a]', '\u00e9'), '\u00e9', 'a negated class takes bytes above 127');
  assert.equal(m('[a-z]', '\u00e9'), null, 'a plain class does not');
  assert.equal(m('a\\.b', 'axb'), null);
  assert.throws(() => compileRegexp('a\\(b/', 0, '/', 10000), /imbalance/);
  assert.throws(() => compileRegexp('a\\{x\\}/', 0, '/', 10000), /Bad number/);
  assert.throws(() => compileRegexp('a\\{3,2\\}/', 0, '/', 10000), /First number exceeds/);
  assert.throws(() => compileRegexp('a\\{300\\}/', 0, '/', 10000), /Range endpoint too large/);
  assert.throws(() => compileRegexp('[ab/', 0, '/', 10000), /\[ \] imbalance/);
  assert.throws(() => compileRegexp('\\1/', 0, '/', 10000), /out of range/);
  assert.throws(() => compileRegexp('\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(a/', 0, '/', 10000), /Too many \\\(/);
  assert.throws(() => compileRegexp('abcdef/', 0, '/', 6), /too much command text/);
});

test('httpd-tests t/modules/sed.t scripts: s/foo/bar/g on foobar (newline added), on input, s/foo/barbarbarbar/g grows', () => {
  assert.equal(sed(['s/foo/bar/g'], 'foobar'), 'barbar\n');
  assert.equal(sed(['s/foo/bar/g'], 'foo'.repeat(1024)), 'bar'.repeat(1024) + '\n');
  // The "too large" script: 8 MB of foo on one line cannot be held.
  const big = run(['s/foo/barbarbarbar/g'], Array.from({ length: 9 }, () => 'foo'.repeat(1024 * 1024 / 3 * 3 / 3)));
  assert.equal(big.failed, 'ENOMEM');
  assert.equal(big.out, '');
});

test('commands: p under #n, d D n N, ranges, !, $, =, y, q, hold space, labels across directives, blocks', () => {
  const seven = Array.from({ length: 7 }, (_, i) => `line ${i + 1}\n`).join('');
  assert.equal(sed(['#n', 's/line/L/p', '/7/p'], seven), 'L 1\nL 2\nL 3\nL 4\nL 5\nL 6\nL 7\nL 7\n');
  assert.equal(sed(['s/a/b/p'], 'a\nc\n'), 'b\nc\n', 's///p prints only under #n');
  assert.equal(sed(['/2/,/4/d'], seven), 'line 1\nline 5\nline 6\nline 7\n');
  assert.equal(sed(['2,3!d'], seven), 'line 2\nline 3\n');
  assert.equal(sed(['5,2p'], seven).split('\n').filter((l) => l === 'line 5').length, 2, 'a range ending before it starts is one line');
  assert.equal(sed(['1!G', 'h', '$!d'], '1\n2\n3\n'), '3\n2\n1\n');
  assert.equal(sed([':a', 's/x/y/', 'ta'], 'xxx\n'), 'yyy\n');
  assert.equal(sed(['/a/{s/a/A/;s/b/B/;}'], 'ab\ncb\n'), 'AB\ncb\n');
  assert.equal(sed(['/a/{', 's/a/A/', '}', 's/b/B/'], 'ab\ncb\n'), 'AB\ncB\n');
  assert.equal(sed(['/x/{p;};p'], 'x\n'), 'x\nx\n', 'what follows } on its line is not read');
  assert.equal(sed(['='], 'a\nb\n'), '1\na\n2\nb\n');
  assert.equal(sed(['y/abc/xyz/'], 'aabbcc\n'), 'xxyyzz\n');
  assert.equal(sed(['y/a\\nb/x_y/'], 'a\nb\n'), 'x\ny\n');
  assert.equal(sed(['2q'], '1\n2\n3\n'), '1\n2\n');
  assert.equal(sed(['n;d'], '1\n2\n3\n4\n'), '1\n3\n');
  assert.equal(sed(['$!N;s/\\n/ /'], '1\n2\n3\n'), '1 2\n3\n');
  assert.equal(sed(['N;P;D'], '1\n2\n3\n'), '1\n2\n', 'N on the last line ends without printing (Solaris)');
  assert.equal(sed(['x;G'], '1\n2\n'), '\n1\n1\n2\n');
  assert.equal(sed(['/1/h;/3/x;/4/g;$G'], '1\n2\n3\n4\n'), '1\n2\n1\n3\n3\n');
  assert.equal(sed(['H;$!d;x'], 'a\nb\n'), '\na\nb\n');
  assert.equal(sed(['$s/$/ END/'], 'a\nb\n'), 'a\nb END\n');
  assert.equal(sed(['1d;$d'], 'a\nb\nc\n'), 'b\n');
  assert.equal(sed(['1;2d'], 'a\nb\nc\n'), 'c\n', '; separates the two addresses of a range too');
  assert.equal(sed(['/a/b', 's/x/y/', '/zzz/b', 's/q/Q/'], 'a x q\n'), 'a x Q\n', 'an unlabeled b goes to the next unlabeled branch');
  assert.equal(sed(['//p'].slice(1).concat(['/a/p', '//d']), 'a\nb\n'), 'a\nb\n', '// is the last expression, across directives');
  assert.equal(sed(['s/b/B/', 't', 's/$/!/'], 'b\nc\n'), 'B\nc!\n');
});

test('s: g, N, & and \\1-\\9, \\n is n, empty matches, ^ only once with g', () => {
  assert.equal(sed(['s/x*/-/g'], 'abc\n'), '-a-b-c-\n');
  assert.equal(sed(['s/b*/-/g'], 'abc\n'), '-a-c-\n');
  assert.equal(sed(['s/a/b/2'], 'aaa\n'), 'aba\n');
  assert.equal(sed(['s/a/b/2g'.replace('2g', 'g2')], 'aaaa\n'), 'abaa\n');
  assert.equal(sed(['s/\\(a\\)\\(b\\)/\\2\\1/g'], 'abab\n'), 'baba\n');
  assert.equal(sed(['s/[0-9][0-9]*/<&>/g'], 'a1b22\n'), 'a<1>b<22>\n');
  assert.equal(sed(['s/a/X\\nY\\&/'], 'a\n'), 'XnY&\n');
  assert.equal(sed(['s/^a/b/g'], 'aaa\n'), 'baa\n');
  assert.equal(sed(['s/a\\{2\\}/X/g'], 'aaaaa\n'), 'XXa\n');
  assert.equal(sed(['s|/|:|g'], '/a/b\n'), ':a:b\n');
});

test('l: escapes, the signed byte quirk, folding at 71', () => {
  assert.equal(sed(['l;d'], 'a\tb\u0001\u007f\n'), 'a\\11b\\01\\177\n');
  assert.equal(sed(['l;d'], '\u00e9\n'), '\\/51\n');
  const long = 'x'.repeat(100);
  assert.equal(sed(['l;d'], long + '\n'), 'x'.repeat(71) + '\\\n' + 'x'.repeat(29) + '\n');
});

test('lines across pieces: every split point gives the output of the whole; $ is the last line', () => {
  const input = 'one foo\ntwo\nthree foo\n\nlast foo';
  const script = ['s/foo/bar/g', '$s/$/ [end]/', '2d'];
  const whole = sed(script, input);
  assert.equal(whole, 'one bar\nthree bar\n\nlast bar [end]\n');
  for (let i = 0; i <= input.length; i++) {
    for (let j = i; j <= input.length; j += 3) {
      assert.equal(run(script, [input.slice(0, i), input.slice(i, j), input.slice(j)]).out, whole, `split at ${i}, ${j}`);
    }
  }
  assert.equal(sed(['$d'], 'a\nb\n'), 'a\n', 'a piece ending on a newline holds its line back for $');
});

test('compile errors: Solaris wording with the script line; quirks of the address and the flags', () => {
  assert.equal(compileError(['s/a/b/x']), 'command garbled: s/a/b/x');
  assert.equal(compileError(['s/a/b/pg']), 'command garbled: s/a/b/pg');
  assert.equal(compileError(['a text']), 'command garbled: a text');
  assert.equal(compileError(['s/a\\(/b/']), '\\( \\) imbalance: s/a\\(/b/');
  assert.equal(compileError(['b verylonglabel']), 'label too long: b verylonglabel');
  assert.equal(compileError(['s/abc']), 'ending delimiter missing on substitution: s/abc');
  assert.equal(compileError(['//p']), 'first RE may not be null');
  assert.equal(compileError(['}']), "too many }'s");
  assert.equal(compileError(['1,2=']), 'only one address allowed: 1,2=');
  assert.equal(compileError(['1:a']), 'no addresses allowed: 1:a');
  assert.equal(compileError(['k']), 'unrecognized command: k');
  assert.equal(compileError(['y/abc/de/']), 'ending delimiter missing on string: y/abc/de/');
  assert.equal(compileError(['y/ab/cde/']), 'transform strings not the same size: y/ab/cde/');
  assert.equal(compileError(['s/a/\\1/']), "``\\digit'' out of range: s/a/\\1/");
  assert.equal(compileError(['/a\\{x\\}/p']), 'command garbled: /a\\{x\\}/p');
  assert.equal(compileError(['w/tmp/x']), 'Space missing before filename: w/tmp/x');
  assert.equal(compileError(['s/a/b/513']), 'suffix too large: s/a/b/513');
  assert.equal(compileError([':a', ':a']), 'duplicate labels: :a');
  assert.equal(compileError([':']), 'duplicate labels: :');
  assert.equal(compileError(['p ;p']), 'command garbled: p ;p');
  assert.equal(compileError(['1! p']), 'unrecognized command: 1! p');
  assert.equal(compileError(['r/x']), 'command garbled: r/x');
  assert.equal(compileError([Array.from({ length: 12 }, (_, i) => `w /tmp/f${i}`)[0]!].concat(Array.from({ length: 11 }, (_, i) => `w /tmp/g${i}`))), 'too many files in w commands');
  assert.equal(compileError([Array.from({ length: 260 }, (_, i) => `${i + 1}p`).join(';')]), undefined, 'a line longer than 1000 characters is skipped');
  assert.equal(compileError(Array.from({ length: 256 }, (_, i) => `${i + 1}p`)), `command garbled: 256p`);
  assert.equal(compileError(Array.from({ length: 49 }, (_, i) => `:l${i}`)), 'too many labels: :l48');
  assert.equal(compileError(['s/' + 'a'.repeat(990) + '/b/']), undefined);
  assert.match(compileError(Array.from({ length: 12 }, () => 's/' + 'a'.repeat(450) + '/b/')) ?? '', /^too much command text: s\/a+\/b\/$/);
  // A line with a backslash at its very end compiles nothing.
  const s = new SedScript();
  assert.equal(s.compile('p\\'), undefined);
  assert.equal(run(s, ['x\n']).out, 'x\n');
});

test('run-time: a script left unfinished fails each body with its sentence', () => {
  const open = new SedScript();
  assert.equal(open.compile('/a/{'), undefined);
  assert.deepEqual(run(open, ['a\n']), { out: '', errors: ["too many {'s"], failed: 'APR_EGENERAL' });
  const lab = new SedScript();
  assert.equal(lab.compile('b nowhere'), undefined);
  assert.deepEqual(run(lab, ['a\n']), { out: '', errors: ['undefined label: nowhere'], failed: 'APR_EGENERAL' });
  // Defined by a later directive, it is fine.
  assert.equal(lab.compile(':nowhere'), undefined);
  assert.deepEqual(run(lab, ['a\n']), { out: 'a\n', errors: [] });
});

test('buffers: a line up to the 8 MB buffer passes, one byte more is ENOMEM; hold space too; s fails APR_EGENERAL', () => {
  const max = 8 * 1024 * 1024;
  assert.equal(run(['p'], ['x'.repeat(max - 1) + '\n', 'y\n']).out.length, 2 * max + 4);
  assert.equal(run(['s/^/</'], ['x'.repeat(max - 1) + '\n', 'y\n']).failed, 'APR_EGENERAL', 'the work buffer cannot take the line and one more byte');
  assert.equal(run(['p'], ['x'.repeat(max) + '\n', 'y\n']).failed, 'ENOMEM');
  assert.equal(run(['H;$!d'], Array.from({ length: 9 }, () => 'x'.repeat(1024 * 1024 - 1) + '\n')).failed, 'ENOMEM');
  assert.equal(run(['s/x/&&/g'], ['x'.repeat(5 * 1024 * 1024) + '\n', 'y\n']).failed, 'APR_EGENERAL');
  // 20 appends per line at most: the 21st is logged and dropped.
  const s = new SedScript();
  for (let i = 0; i < 21; i++) s.compile(`r /nonexistent/${i}`);
  assert.deepEqual(run(s, ['a\n']).errors, ['too many reads after line 1']);
});

test('w and r files: w writes from the start without truncating, r appends a file after the line', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-sed-'));
  try {
    const out = path.join(dir, 'out.txt');
    fs.writeFileSync(out, '0123456789abcdef\n');
    fs.writeFileSync(path.join(dir, 'foot.txt'), 'FOOT');
    const script = compile([`/k/w ${out}`, `s/x/X/w ${out}`, `2r ${path.join(dir, 'foot.txt')}`]);
    const ev = new SedEval(script, { write: () => {}, error: () => {} });
    let text = '';
    const ev2 = new SedEval(script, { write: (s) => { text += s; }, error: () => {} });
    assert.equal(ev2.openFiles(), true);
    ev2.evalBuffer('k1\nx2\n');
    ev2.finalize();
    ev2.close();
    assert.equal(text, 'k1\nX2\nFOOT');
    assert.equal(fs.readFileSync(out, 'latin1'), 'k1\nX2\n6789abcdef\n');
    const bad = compile([`w ${path.join(dir, 'no', 'x')}`]);
    const errs: string[] = [];
    assert.equal(new SedEval(bad, { write: () => {}, error: (m) => errs.push(m) }).openFiles(), false);
    assert.deepEqual(errs, [`cannot open ${path.join(dir, 'no', 'x')}`]);
    void ev;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('fuzz (bounded): the compiler never throws and always ends; scripts that compile give the same output however the input is cut', () => {
  const rnd = seededRandom(0x5ed);
  const alphabet = 'spdDnNgGhHxyq=l!{};:bt/\\()*.^$[]-,0123 \taxy&#\n';
  const pieces = ['s/a/b/', 's/\\(x*\\)y/[\\1]/g', '/a/,/y/', '1,3', '$', '!', '{', '}', 'p', 'P', 'N', 'D', 'G', 'h', 'x', 'y/ax/xa/', ':l', 'b l', 't', 'bl', ';', 's/[^a]*$/#/2', '=', 'n', 'q', 'g', 'H', 'l', 'd'];
  for (let i = 0; i < 600; i++) {
    const s = new SedScript();
    const lines: string[] = [];
    for (let k = rnd(4) + 1; k > 0; k--) {
      let line = '';
      if (rnd(3) === 0) line = randomString(rnd, alphabet, 20);
      else for (let m = rnd(5) + 1; m > 0; m--) line += pieces[rnd(pieces.length)];
      lines.push(line);
    }
    let ok = true;
    for (const l of lines) {
      const r = s.compile(l);
      assert.ok(r === undefined || r === null || typeof r === 'string');
      if (r !== undefined) { ok = false; break; }
    }
    if (!ok) continue;
    const input = randomString(rnd, 'axy\n\n', 60);
    const whole = run(s, [input], 20000);
    if (whole.failed === 'loop') continue;
    for (let t = 0; t < 4; t++) {
      const cuts: string[] = [];
      let at = 0;
      while (at < input.length) { const n = rnd(8) + 1; cuts.push(input.slice(at, at + n)); at += n; }
      const split = run(s, cuts, 20000);
      if (split.failed === undefined && whole.failed === undefined) {
        assert.equal(split.out, whole.out, `script ${JSON.stringify(lines)} on ${JSON.stringify(input)} cut as ${JSON.stringify(cuts)}`);
      }
    }
  }
});

test('output buffering: 8000-byte buffers, a FLUSH after every 50, the rest held until the call ends', async () => {
  const { takeOutput } = await import('../../../src/modules/filters/mod_sed/mod_sed.js');
  const st = { eval: undefined, out: ['x'.repeat(8000 * 60 + 10)], outLen: 8000 * 60 + 10, buffers: 0 };
  const into: import('../../../src/server/filters.js').Bucket[] = [];
  takeOutput(st, into, false);
  assert.deepEqual(into.map((b) => (b.kind === 'data' ? b.data.length : b.kind)), [400000, 'flush', 80000]);
  assert.equal(st.buffers, 10);
  assert.equal(st.outLen, 10, 'a part buffer waits');
  takeOutput(st, into, true);
  assert.deepEqual(into.map((b) => (b.kind === 'data' ? b.data.length : b.kind)), [400000, 'flush', 80000, 10]);
  assert.equal(st.outLen, 0);
});
