// The server-status page and ?auto form against Apache 2.4.71's (fixtures/, recorded by
// record-fixtures.ts from /usr/sbin/apache2 -X with the same configuration and requests):
// the same lines, field names, order, markup and headers once the values that differ between
// any two runs are masked (numbers, times, version strings, which slot served what).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FIXTURES, SCENARIOS, runScenario, normalizeStatus, type Recorded } from './helpers.js';

for (const s of SCENARIOS) {
  test(`server-status layout: ${s.name}`, async () => {
    const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURES, `${s.name}.json`), 'utf8')) as { answers: Recorded[] };
    const got = await runScenario('plume', s);
    assert.equal(got.length, fixture.answers.length);
    for (let k = 0; k < got.length; k++) {
      const a = fixture.answers[k]!;
      const p = got[k]!;
      assert.equal(p.status, a.status, a.target);
      assert.deepEqual(new Map(p.headers), new Map(a.headers), `${a.target}: headers`);
      assert.deepEqual(normalizeStatus(p.body), normalizeStatus(a.body), `${a.target}: body`);
    }
  });
}
