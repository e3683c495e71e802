// mod_mime_magic's startup lines for a magic file with bad lines (the conformance harness does
// not collect lines written before the first request). Apache 2.4.71 with this configuration
// writes these six lines twice to the ErrorLog (its first configuration pass, then the one it
// serves with), tabs escaped as \t, and starts; the lines that parsed type files.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeSite, startPlume, getOnce, waitFor, type Running } from './process-lib.js';

const BAD = [
  '# bad lines',
  '0\tstrang\tfoo\ttext/x-bad',
  'abc\tstring\tx\ttext/x',
  '>(4.q+2)\tstring\tY\ttext/y',
  '>(4.l+2\tstring\tZ\ttext/z',
  `0\tstring\t${'0123456789'.repeat(7)}\ttext/long`,
  '0\tstring\tGOOD\ttext/x-good',
  '',
].join('\n');

const EXPECTED = [
  'AH01524: mod_mime_magic: type strang\\tfoo\\ttext/x-bad invalid',
  'AH01521: mod_mime_magic: offset abc\\tstring\\tx\\ttext/x invalid',
  'AH01524: mod_mime_magic: type abc\\tstring\\tx\\ttext/x invalid',
  'AH01522: mod_mime_magic: indirect offset type q invalid',
  "AH01523: mod_mime_magic: missing ')' in indirect offset",
  `AH01526: mod_mime_magic: string too long: ${'0123456789'.repeat(7)}\\ttext/long`,
];

test('bad magic lines: logged as Apache logs them at startup, twice; the good lines still type files', { timeout: 60000 }, async () => {
  const site = await makeSite('mimemagic', [
    'LoadModule mime_magic_module /usr/lib/apache2/modules/mod_mime_magic.so',
    'MimeMagicFile conf/bad.magic',
    'StartServers 1',
  ]);
  fs.mkdirSync(path.join(site.dir, 'conf'));
  fs.writeFileSync(path.join(site.dir, 'conf/bad.magic'), BAD);
  fs.writeFileSync(path.join(site.dir, 'htdocs/good'), `GOOD${' '.repeat(80)}\n`);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 1 });
    const res = await getOnce(site.port, '/good');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/x-good');
    await waitFor('the per-request AH01538 lines', () => fs.readFileSync(site.errorLog, 'latin1').includes('AH01538'));
    const lines = fs.readFileSync(site.errorLog, 'latin1').split('\n')
      .filter((l) => l.includes('[mime_magic:error]') && !l.includes('[client '))
      .map((l) => l.replace(/^.*\[mime_magic:error\] \[pid \d+:tid \d+\] /, ''));
    assert.deepEqual(lines, [...EXPECTED, ...EXPECTED]);
    const perRequest = fs.readFileSync(site.errorLog, 'latin1').split('\n').filter((l) => l.includes('[client 127.0.0.1'));
    // Two lines kept with type 0 (strang, abc): each logs AH01538 when its window fits.
    assert.equal(perRequest.filter((l) => l.endsWith('AH01538: mod_mime_magic: invalid type 0 in mconvert().')).length, 2);
  } finally {
    await srv?.stop();
    site.remove();
  }
});
