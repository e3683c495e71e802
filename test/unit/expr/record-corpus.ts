// Records Apache 2.4.71's verdict on every corpus expression: `apache2 -t` on a configuration
// holding `<If "EXPR">`, and the parser's message when it refuses. Writes
// test/unit/expr/apache-corpus.json, which fuzz.test.ts replays without Apache:
//   node dist/test/unit/expr/record-corpus.js [count]

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { corpus } from './corpus.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(here, '../../../../test/unit/expr/apache-corpus.json');
const count = Number(process.argv[2] ?? 600);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-expr-corpus-'));
const base = [
  `ServerRoot ${dir}`, 'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
  'LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so', 'ServerName localhost',
  `ErrorLog ${dir}/error_log`, `PidFile ${dir}/pid`, 'Listen 127.0.0.1:1',
];
const results: { expr: string; ok: boolean; error?: string }[] = [];
try {
  for (const e of corpus(count)) {
    fs.writeFileSync(path.join(dir, 'httpd.conf'), [...base, `<If "${e}">`, '</If>', ''].join('\n'), 'latin1');
    const r = spawnSync('/usr/sbin/apache2', ['-t', '-f', path.join(dir, 'httpd.conf')], { encoding: 'latin1' });
    const text = `${r.stderr}${r.stdout}`;
    if (r.status === 0) { results.push({ expr: e, ok: true }); continue; }
    const m = /Cannot parse condition clause: (.*)/.exec(text);
    results.push({ expr: e, ok: false, error: m ? m[1]! : text.trim().split('\n')[0]! });
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
fs.writeFileSync(out, JSON.stringify({ recordedWith: 'Apache/2.4.71', results }, null, 1) + '\n');
console.log(`recorded ${results.length} expressions (${results.filter((x) => x.ok).length} accepted) into ${out}`);
