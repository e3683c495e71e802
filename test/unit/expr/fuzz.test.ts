// Expression fuzzing. 1) Apache's verdicts on a recorded corpus (seeds and mutations, see
// corpus.ts / record-corpus.ts): plume accepts exactly what httpd 2.4.71 accepts, and gives
// the same message for most refusals. 2) Random byte strings and mutations: the parser, the
// `Require expr` and string parsers never throw, and what they accept compiles and evaluates.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseExpr, parseStringExpr } from '../../../src/expr/index.js';
import { SEEDS, mutate, embeddable } from './corpus.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const recorded = JSON.parse(fs.readFileSync(path.resolve(here, '../../../../test/unit/expr/apache-corpus.json'), 'utf8')) as {
  results: { expr: string; ok: boolean; error?: string }[];
};

test("accept/reject agrees with Apache on every recorded expression", () => {
  const disagree: string[] = [];
  let sameMessage = 0;
  let refused = 0;
  for (const { expr, ok, error } of recorded.results) {
    const r = parseExpr(expr);
    if (r.ok !== ok) disagree.push(`${JSON.stringify(expr)}: Apache ${ok ? 'accepts' : `refuses (${error})`}, plume ${r.ok ? 'accepts' : `refuses (${r.error})`}`);
    if (!ok && !r.ok) {
      refused++;
      // apache2 -t prints the message through the error log, which doubles backslashes.
      if (r.error === error!.replace(/\\\\/g, '\\')) sameMessage++;
    }
  }
  assert.deepEqual(disagree, []);
  assert.ok(recorded.results.length >= 600, 'the corpus is the recorded one');
  // The message is part of what operators see: the same text as httpd's for every refusal.
  assert.equal(sameMessage, refused, `same message for ${sameMessage}/${refused} refusals`);
});

/** mulberry32 with a fixed seed: the same strings every run. */
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

test('random and mutated expressions never throw; accepted ones evaluate', () => {
  const rnd = rng(7);
  const alphabet = "()'{},:%$-=!~<>&|./#\\ abcmintrueflsRZ0123456789_*?@\t";
  const fakeRequest = {
    method: 'GET', uri: '/x', args: 'q', filename: '/tmp/none', pathInfo: '', protocol: 'HTTP/1.1', theRequest: 'GET /x HTTP/1.1',
    headersIn: new Map<string, string>(), headersOut: { merge: () => undefined, get: () => undefined }, errHeadersOut: { get: () => undefined },
    subprocessEnv: new Map<string, string>(), notes: new Map<string, string>(), main: null, user: undefined, status: 200,
    useragentIp: '127.0.0.1', connection: { remoteIp: '127.0.0.1', remotePort: 1, remoteHost: undefined }, server: { scheme: undefined, serverAdmin: undefined },
    finfo: null, mtime: 0, wantsLog: () => false, log: () => undefined,
  };
  let accepted = 0;
  for (let i = 0; i < 4000; i++) {
    let s: string;
    if (i % 2 === 0) {
      const len = Math.floor(rnd() * 30);
      s = '';
      for (let k = 0; k < len; k++) s += alphabet[Math.floor(rnd() * alphabet.length)];
    } else {
      s = mutate(SEEDS[Math.floor(rnd() * SEEDS.length)]!, rnd);
    }
    const b = parseExpr(s);
    parseStringExpr(s);
    // Require expr drops surrounding double quotes; the same parser runs.
    parseExpr(embeddable(s) ? s : s.replace(/"/g, ''));
    if (b.ok && !b.expr.async) {
      accepted++;
      // No file or subrequest operators on the fake request: evaluate the pure ones only.
      if (!/-[dfesLhxFUA]\b|file|filesize|\bREMOTE_HOST|SERVER_|DOCUMENT_ROOT|CONTEXT_|SERVER_SOFTWARE/.test(s)) {
        const v = b.expr.run({ r: fakeRequest as never, re: { source: undefined, match: null }, vary: undefined, dontVary: false, err: undefined, file: '', line: 0 });
        assert.equal(typeof v, 'boolean', s);
      }
    }
  }
  assert.ok(accepted > 100, `some random expressions parse (${accepted})`);
});
