/**
 * Records what real Apache 2.4 answers for the upgrade corpus (test/upgrade/corpus/):
 *   compat    the original 2.2 access rules, run with mod_access_compat (every other rule of
 *             the assistant applied, so 2.4 can start: MPM, mod_unixd, ...)
 *   upgraded  the assistant's output, without mod_access_compat
 *   syntax    apache2 -t on the assistant's output
 * and writes test/upgrade/corpus/<name>/recorded.json. Replayed by corpus.test.ts.
 *
 *   npm run build && node dist/test/upgrade/record-corpus.js [name-filter]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  APACHE_BIN, CORPUS_DIR, freePort, listCorpus, loadMatrix, materialise, removeRoot, runRows, runRowsFull, startServer, syntaxCheck,
  upgradeInPlace, upgradeOptions, type Recorded,
} from './corpus-lib.js';

async function record(name: string): Promise<Recorded> {
  const m = loadMatrix(name);
  const version = spawnSync(APACHE_BIN, ['-v'], { encoding: 'utf8' }).stdout.split('\n')[0]!.replace(/^Server version:\s*/, '');
  // The original access rules on 2.4 with mod_access_compat.
  let port = await freePort();
  let root = materialise(name, port);
  upgradeInPlace(root, upgradeOptions(m, root, { skip: ['access.require'] }));
  let srv = await startServer('apache', root, port);
  const compat = await runRows(port, m.rows);
  await srv.stop();
  removeRoot(root);
  // The upgraded configuration.
  port = await freePort();
  root = materialise(name, port);
  upgradeInPlace(root, upgradeOptions(m, root));
  const syntax = syntaxCheck('apache', root);
  srv = await startServer('apache', root, port);
  const answers = await runRowsFull(port, m.rows);
  await srv.stop();
  removeRoot(root);
  const upgraded = answers.map((a) => a.status);
  const rec: Recorded = { recordedWith: version, compat, upgraded, syntax };
  if (m.rows.some((r) => r.expectHeaders)) rec.upgradedHeaders = answers.map((a) => a.headers);
  return rec;
}

const filter = process.argv[2] ?? '';
for (const name of listCorpus().filter((n) => n.includes(filter))) {
  try {
    const r = await record(name);
    fs.writeFileSync(path.join(CORPUS_DIR, name, 'recorded.json'), JSON.stringify(r, null, 2) + '\n');
    const m = loadMatrix(name);
    const bad = m.rows.map((row, i) => ({ row, i })).filter(({ row, i }) => r.upgraded[i] !== row.expect || r.compat[i] !== (row.compat24 ?? row.expect)
      || (row.expectHeaders !== undefined && JSON.stringify(r.upgradedHeaders?.[i]) !== JSON.stringify(row.expectHeaders)));
    process.stdout.write(`${name}: recorded${bad.length ? ` (${bad.length} row(s) differ from matrix.json: ${bad.map(({ row, i }) => `#${i} ${row.method ?? 'GET'} ${row.path} ${row.client}${row.user ? ` ${row.user}` : ''} expect ${row.expect}${row.compat24 ? `/compat ${row.compat24}` : ''} got compat ${r.compat[i]} upgraded ${r.upgraded[i]}`).join('; ')})` : ''}${r.syntax.output !== 'Syntax OK' ? ` syntax: ${r.syntax.output}` : ''}\n`);
  } catch (e) {
    process.stdout.write(`${name}: FAILED ${(e as Error).message}\n`);
  }
}
