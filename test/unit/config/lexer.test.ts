/**
 * The configuration lexer against what Apache httpd 2.4.71 was measured to do (apache2 -t
 * on the same lines): line continuation and quoted words.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveVariables, splitLogicalLines, splitWords } from '../../../src/server/config/lexer.js';

const texts = (source: string): string[] => splitLogicalLines(source).map((l) => l.text);

test('a backslash right before the line feed joins the next line, comments included', () => {
  // "# comment \" + "Bogus" is one comment line for httpd: Bogus is never seen.
  assert.deepEqual(texts('# a comment \\\nBogus directive\nServerAdmin x\n'), ['# a comment Bogus directive', 'ServerAdmin x']);
  assert.deepEqual(texts('ServerAdmin \\\n    a b\n'), ['ServerAdmin     a b']);
  // The logical line reports its last physical line.
  assert.deepEqual(splitLogicalLines('A \\\nB \\\nC\nD\n').map((l) => [l.firstLine, l.line]), [[1, 3], [4, 4]]);
});

test('CR LF line ends continue too', () => {
  assert.deepEqual(texts('ServerAdmin \\\r\na\r\n'), ['ServerAdmin a']);
});

test('white space after the backslash stops the continuation', () => {
  // Measured: "DefaultType \ " then "text/plain" is DefaultType with argument "\" and an
  // unknown directive text/plain on the next line.
  assert.deepEqual(texts('DefaultType \\ \ntext/plain\n'), ['DefaultType \\', 'text/plain']);
});

test('a doubled backslash at the end of a line still continues it', () => {
  assert.deepEqual(texts('DefaultType \\\\\ntext/plain\n'), ['DefaultType \\text/plain']);
});

test('a backslash on a last line without a line feed is kept', () => {
  assert.deepEqual(texts('ServerAdmin a\nServerAdmin \\'), ['ServerAdmin a', 'ServerAdmin \\']);
});

test('quoted words: backslash-quote and backslash-backslash pairs', () => {
  // "a\\" closes after the pair: the word is a\ and b follows.
  assert.deepEqual(splitWords('"a\\\\" b'), ['a\\', 'b']);
  // "a\" b" is one word with a quote inside.
  assert.deepEqual(splitWords('"a\\" b"'), ['a" b']);
  // Other backslashes stay.
  assert.deepEqual(splitWords('"a\\d" \'x\\\'y\''), ['a\\d', "x'y"]);
  // Unquoted: a doubled backslash becomes one, a quote is an ordinary character.
  assert.deepEqual(splitWords('a\\\\b c"d e"'), ['a\\b', 'c"d', 'e"']);
  // An unterminated quote runs to the end of the line.
  assert.deepEqual(splitWords('"abc'), ['abc']);
});

test('resolveVariables: the name runs to the next }, a name with a colon (a RewriteMap lookup) is left without a warning', () => {
  const undefinedNames: string[] = [];
  const vars = new Map([['X', 'a|b'], ['A|b', 'piped']]);
  const out = resolveVariables('${X} ${A|b} ${m:$1|q} ${Z} ${Y?=d}', (n) => vars.get(n), (n) => undefinedNames.push(n));
  assert.equal(out, 'a|b piped ${m:$1|q} ${Z} ${Y?=d}');
  assert.deepEqual(undefinedNames, ['Z', 'Y?=d']);
});
