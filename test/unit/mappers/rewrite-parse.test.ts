// mod_rewrite's configuration parsers: the argument line, the [flags] field, CondPatterns,
// substitution templates and RewriteMap specs, with httpd 2.4.71's error texts (measured:
// the rewrite/err-* conformance cases). Then a bounded fuzz of random and mutated
// RewriteRule / RewriteCond lines: the parsers never throw, and what they accept compiles.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CONDFLAG_NOCASE, CONDFLAG_NOTMATCH, CONDFLAG_ORNEXT, CONDPAT_FILE_EXISTS, CONDPAT_INT_EQ, CONDPAT_REGEX,
  CONDPAT_STR_EQ, CONDPAT_STR_GE, RULEFLAG_CHAIN, RULEFLAG_ESCAPEBACKREF, RULEFLAG_FORCEREDIRECT, RULEFLAG_LASTRULE,
  RULEFLAG_NOSUB, RULEFLAG_QSAPPEND, RULEFLAG_QSLAST, RULEFLAG_QSNONE, RULEFLAG_STATUS,
  compileTemplate, parseArgLine, parseCond, parseFlagField, parseRule,
} from '../../../src/modules/mappers/mod_rewrite/parse.js';
import { escapeAbsoluteUri, escapeBackref, absoluteUriScheme } from '../../../src/modules/mappers/mod_rewrite/uri.js';
import { parseMap } from '../../../src/modules/mappers/mod_rewrite/maps.js';
import { tokenizeArgv } from '../../../src/lib/apr-strings.js';

test('parseargline: quotes, backslash-blank, optional third word', () => {
  assert.deepEqual(parseArgLine('^/a$ /b [L]'), { a1: '^/a$', a2: '/b', a3: '[L]' });
  assert.deepEqual(parseArgLine('  "^/x y$"   \'/a b\'  '), { a1: '^/x y$', a2: '/a b', a3: undefined });
  assert.deepEqual(parseArgLine('^/p\\ q$ /b'), { a1: '^/p\\ q$', a2: '/b', a3: undefined });
  assert.deepEqual(parseArgLine('"foo"'), { a1: 'foo', a2: '', a3: undefined });
  assert.equal(parseArgLine('^/only'), undefined);
});

test('flag field: delimiters, blanks, key=value', () => {
  const seen: [string, string][] = [];
  assert.equal(parseFlagField('[ L , R=301,E=a:b ]', (k, v) => { seen.push([k, v]); return undefined; }), undefined);
  assert.deepEqual(seen, [['L', ''], ['R', '301'], ['E', 'a:b']]);
  assert.equal(parseFlagField('L', () => undefined), 'bad flag delimiters');
  assert.equal(parseFlagField('[', () => undefined), 'bad flag delimiters');
});

test('RewriteRule flags and their errors', () => {
  const rule = (s: string) => parseRule(s, [], 'f', 1);
  assert.equal(rule('^/x$ /y [L,Q]').error, "RewriteRule: unknown flag 'Q'");
  assert.equal(rule('^/x$ /y L').error, 'RewriteRule: bad flag delimiters');
  assert.equal(rule('^/x($ /y').error, "RewriteRule: cannot compile regular expression '^/x($'");
  assert.equal(rule('^/x$').error, "RewriteRule: bad argument line '^/x$'");
  assert.equal(rule('^/x$ /y [R=299]').error, "RewriteRule: invalid HTTP response code '299' for flag 'R'");
  assert.equal(rule('^/x$ /y [BNE]').error, "RewriteRule: flag 'BNE' wants a list of characters (i.e. [BNE=...])");
  const r = rule('^/x$ /y [C,L,R=301,QSA,B]').rule!;
  assert.equal(r.flags & (RULEFLAG_CHAIN | RULEFLAG_LASTRULE | RULEFLAG_FORCEREDIRECT | RULEFLAG_QSAPPEND | RULEFLAG_ESCAPEBACKREF),
    RULEFLAG_CHAIN | RULEFLAG_LASTRULE | RULEFLAG_FORCEREDIRECT | RULEFLAG_QSAPPEND | RULEFLAG_ESCAPEBACKREF);
  assert.equal(r.status, 301);
  const g = rule('^/g - [R=410]').rule!;
  assert.equal(g.flags & (RULEFLAG_STATUS | RULEFLAG_NOSUB), RULEFLAG_STATUS | RULEFLAG_NOSUB);
  // A trailing '?' means "no query string" (cut), with QSA "split at the last ?".
  assert.equal(rule('^/a /b?').rule!.output, '/b');
  assert.ok(rule('^/a /b?').rule!.flags & RULEFLAG_QSNONE);
  assert.ok(rule('^/a /b? [QSA]').rule!.flags & RULEFLAG_QSLAST);
  assert.equal(rule('^/a /b [S=2,N=7]').rule!.skip, 2);
  assert.equal(rule('^/a /b [S=2,N=7]').rule!.maxrounds, 7);
});

test('RewriteCond patterns and flags', () => {
  const cond = (s: string) => parseCond(s, 'f', 3);
  assert.equal(cond('%{X} -f').cond!.ptype, CONDPAT_FILE_EXISTS);
  assert.equal(cond('%{X} =""').cond!.pattern, '');
  assert.equal(cond('%{X} =abc').cond!.ptype, CONDPAT_STR_EQ);
  assert.equal(cond('%{X} >=m').cond!.ptype, CONDPAT_STR_GE);
  const ne = cond('%{X} -ne7').cond!;
  assert.equal(ne.ptype, CONDPAT_INT_EQ);
  assert.ok(ne.flags & CONDFLAG_NOTMATCH);
  assert.equal(cond('%{X} !-ne7').cond!.flags & CONDFLAG_NOTMATCH, 0);
  assert.equal(cond('%{X} -nx').cond!.ptype, CONDPAT_REGEX);
  const nc = cond('%{X} -f [NC]');
  assert.equal(nc.warning, "AH00665: RewriteCond: NoCase option for non-regex pattern '-f' is not supported and will be ignored. (f:3)");
  assert.equal(nc.cond!.flags & CONDFLAG_NOCASE, 0);
  assert.ok(cond('%{X} ^a [nocase,ornext]').cond!.flags & CONDFLAG_ORNEXT);
  assert.equal(cond('%{X} ^a [OR,XX]').error, "RewriteCond: unknown flag 'XX'");
  assert.equal(cond('%{X} [a-').error, "RewriteCond: cannot compile regular expression '[a-'");
  assert.equal(cond('expr "1 == 1"').exprText, '1 == 1');
});

test('templates: escapes, variables, maps with defaults, back-references', () => {
  const t = compileTemplate('\\$1$1%1%{HTTP_HOST}${m:%{X}|d$1}${nomap}%{unclosed');
  assert.deepEqual(t.parts.map((p) => p.kind), ['esc', 'lit', 'ref', 'ref', 'var', 'map', 'lit']);
  assert.equal(t.mayWait, true);
  assert.equal(compileTemplate('/plain').literal, '/plain');
  assert.equal(compileTemplate('%{LA-U:REQUEST_FILENAME}').mayWait, true);
});

test('escaping: [B] variants, absolute URIs, schemes', () => {
  assert.equal(escapeBackref('foo/bar/ baz\r', undefined, undefined, RULEFLAG_ESCAPEBACKREF), 'foo%2fbar%2f+baz%0d');
  assert.equal(escapeBackref('foo/bar/ baz/', '/', undefined, RULEFLAG_ESCAPEBACKREF), 'foo%2fbar%2f baz%2f');
  assert.equal(escapeAbsoluteUri('http://h/a b?c', 7), 'http://h/a%20b%3fc');
  assert.equal(escapeAbsoluteUri('http://h', 7), 'http://h');
  assert.deepEqual(absoluteUriScheme('HTTPS://x/'), { len: 8, qs: true });
  assert.deepEqual(absoluteUriScheme('ldap://x/'), { len: 7, qs: false });
  assert.equal(absoluteUriScheme('/http://x').len, 0);
});

test('RewriteMap specs', () => {
  const rel = (p: string): string => (p.startsWith('/') ? p : '/srv/' + p);
  const noDbd = (): boolean => false;
  assert.equal(parseMap('m', 'int:capitalize', undefined, 0, rel, noDbd), 'RewriteMap: internal map not found:capitalize');
  assert.equal(parseMap('m', 'dbm=foo:/x', undefined, 0, rel, noDbd), 'RewriteMap: dbm type foo is invalid');
  assert.equal(parseMap('m', 'dbm/x', undefined, 0, rel, noDbd), 'RewriteMap: bad map:dbm/x');
  assert.equal(parseMap('m', 'txt:/nonexistent/x', undefined, 0, rel, noDbd), 'RewriteMap: file for map m not found:/nonexistent/x');
  assert.equal(parseMap('m', 'dbd:SELECT 1', undefined, 0, rel, noDbd), 'RewriteMap types dbd and fastdbd require mod_dbd!');
  // With mod_dbd the statement is prepared under the map's name; fastdbd: is the cached kind.
  const prepared: [string, string][] = [];
  const dbd = (query: string, label: string): boolean => { prepared.push([query, label]); return true; };
  const plain = parseMap('users', 'dbd:SELECT home FROM u WHERE name = %s', undefined, 0, rel, dbd);
  const fast = parseMap('hosts', 'FastDBD:SELECT h FROM v WHERE k = %s', undefined, 0, rel, dbd);
  assert.ok(typeof plain !== 'string' && typeof fast !== 'string');
  assert.equal(plain.type, 'dbd');
  assert.equal(fast.type, 'fastdbd');
  assert.deepEqual(prepared, [['SELECT home FROM u WHERE name = %s', 'users'], ['SELECT h FROM v WHERE k = %s', 'hosts']]);
  assert.deepEqual(tokenizeArgv('/bin/x "a b" c\\ d'), ['/bin/x', 'a b', 'c d']);
});

// ---- fuzz ---------------------------------------------------------------------------------------
/** A small deterministic PRNG (mulberry32), so a failure reproduces. */
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

const PIECES = [
  '^', '$', '/', '(', ')', '.*', '[', ']', '\\', ' ', '"', "'", '!', '-', '=', '<', '>', '%{', '}', '${', ':', '|',
  '$1', '%1', '?', '&', ',', 'L', 'R=301', 'NC', 'OR', 'QSA', 'B=/', 'BNE=', 'E=a:b', 'CO=a:b:c', 'N=3', 'S=', 'T=',
  '-f', '-d', '-lt', 'expr', 'HTTP_HOST', 'x', '\t', '[', ']', '\u00e9',
];

const SEEDS = [
  '^/a$ /b [L]', '^/(.*)$ /x?$1 [QSA,R=302]', '%{HTTP_HOST} ^www\\. [NC,OR]', '. index.php [L]',
  '^ - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]', '%{REQUEST_FILENAME} !-f', '^(.*)$ ${map:$1|d} [B,NE]',
];

test('fuzz: random and mutated rule and condition lines never throw', () => {
  const rand = rng(0x5eed);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;
  for (let i = 0; i < 4000; i++) {
    let line: string;
    if (i % 2 === 0) {
      line = '';
      const n = 1 + Math.floor(rand() * 12);
      for (let k = 0; k < n; k++) line += pick(PIECES);
    } else {
      const s = pick(SEEDS).split('');
      const edits = 1 + Math.floor(rand() * 4);
      for (let k = 0; k < edits; k++) {
        const at = Math.floor(rand() * (s.length + 1));
        const op = rand();
        if (op < 0.4) s.splice(at, 0, pick(PIECES));
        else if (op < 0.7) s.splice(at, 1);
        else s.splice(at, 1, pick(PIECES));
      }
      line = s.join('');
    }
    const rr = parseRule(line, [], 'fuzz', i);
    assert.ok((rr.rule === undefined) !== (rr.error === undefined), line);
    if (rr.rule) assert.ok(rr.rule.regexp instanceof RegExp);
    const cc = parseCond(line, 'fuzz', i);
    assert.ok((cc.cond === undefined) !== (cc.error === undefined), line);
    compileTemplate(line);
  }
});
