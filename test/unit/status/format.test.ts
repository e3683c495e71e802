// mod_status's numbers as httpd prints them: APR's own %g and %.Nf conversions (".5", not
// "0.5"; six significant digits) on the single-precision values mod_status computes. The
// vectors are figures real Apache 2.4 servers printed, and the recorded ?auto answers of
// fixtures/ (whose averages are recomputed from the totals printed with them).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { aprG, aprF, showTime, autoRates, htmlRates } from '../../../src/modules/generators/mod_status.js';
import { FIXTURES, type Recorded } from './helpers.js';

const f = Math.fround;

test('%g as apr_snprintf prints it', () => {
  assert.equal(aprG(0), '0');
  assert.equal(aprG(1), '1');
  assert.equal(aprG(1024), '1024');
  assert.equal(aprG(f(3 / 20), 3), '.15');
  // ReqPerSec / BytesPerSec of a server with 13950 accesses, 51791 kB in 310069 s.
  assert.equal(aprG(f(f(13950) / f(310069))), '.04499');
  assert.equal(aprG(f(f(1024 * f(51791)) / f(310069))), '171.039');
  // A page's "4.03 requests/sec ... 1212.18 ms/request" (2213598 accesses, 2683287086 ms,
  // 6 days 8 hours 27 minutes 13 seconds up) and its CPU times.
  const up = 548833;
  assert.equal(aprG(f(f(2213598) / f(up)), 3), '4.03');
  assert.equal(aprG(f(f(2683287086) / f(2213598))), '1212.18');
  assert.equal(aprG(f(f(5071) / 100)), '50.71');
  assert.equal(aprG(f(f(2206) / 100)), '22.06');
  assert.equal(aprG(f(f(1114600) / 100)), '11146');
  assert.equal(aprG(f(f(258438) / 100)), '2584.38');
  assert.equal(aprG(f(28 / 3)), '9.33333');
  assert.equal(aprG(-2.5), '-2.5');
  // An infinity (httpd's CPULoad in a server's first second, cpu / 0): APR's %g has no
  // case for them and prints "0.e+79" — measured with libapr-1 0.7.2's apr_snprintf.
  assert.equal(aprG(Infinity), '0.e+79');
  assert.equal(aprG(f(f(f(5) / 100) / f(0)) * 100), '0.e+79');
});

test('%.Nf as apr_snprintf prints it', () => {
  assert.equal(aprF(0.23, 2), '0.23');
  assert.equal(aprF(3.52, 2), '3.52');
  assert.equal(aprF(0, 2), '0.00');
  assert.equal(aprF(f(0 / 1024), 1), '0.0');
  assert.equal(aprF(f(f(1368) / 1048576), 2), '0.00');
  assert.equal(aprF(f(f(5120) / 1024), 1), '5.0');
  assert.equal(aprF(f(f(3072000) / 1048576), 2), '2.93');
  assert.equal(aprF(12.5, 0), '13');
});

test('show_time', () => {
  assert.equal(showTime(0), '');
  assert.equal(showTime(1), ' 1 second');
  assert.equal(showTime(60), ' 1 minute');
  assert.equal(showTime(3600 + 2), ' 1 hour 2 seconds');
  assert.equal(showTime(548833), ' 6 days 8 hours 27 minutes 13 seconds');
});

test('the averages of the recorded ?auto answers and pages, recomputed from their totals', () => {
  let autos = 0;
  let pages = 0;
  for (const file of fs.readdirSync(FIXTURES)) {
    const { answers } = JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')) as { answers: Recorded[] };
    for (const a of answers) {
      if (a.target.includes('auto')) {
        const v = new Map(a.body.split('\n').filter((l) => l.includes(': ')).map((l) => l.split(': ') as [string, string]));
        if (!v.has('Total Accesses')) continue;
        const lines = a.body.split('\n').filter((l) => /^(ReqPerSec|BytesPerSec|BytesPerReq|DurationPerReq): /.test(l));
        const expected = lines.length ? lines.join('\n') + '\n' : '';
        assert.equal(autoRates(Number(v.get('Total Accesses')), Number(v.get('Total kBytes')), Number(v.get('Total Duration')), Number(v.get('Uptime'))), expected, file);
        autos++;
      } else {
        const t = /<dt>Total accesses: (\d+) - Total Traffic: (\d+) kB - Total Duration: (\d+)<\/dt>/.exec(a.body);
        if (!t) continue;
        const up = Number(/ServerUptimeSeconds|Server uptime: +(\d+) seconds?</.exec(a.body)?.[1] ?? NaN);
        const line = /<dt>[^<]*(?:requests\/sec|\/request)[^<]*<\/dt>\n/.exec(a.body)?.[0];
        assert.equal(htmlRates(Number(t[1]), Number(t[2]), Number(t[3]), up), line, file);
        pages++;
      }
    }
  }
  assert.ok(autos >= 2 && pages >= 2, `${autos} ?auto answers, ${pages} pages`);
});
