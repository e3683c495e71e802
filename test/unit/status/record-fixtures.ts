// Records Apache 2.4.71's server-status answers for the scenarios of helpers.ts into
// fixtures/<scenario>.json (run: npm run build && node dist/test/unit/status/record-fixtures.js).

import * as fs from 'node:fs';
import * as path from 'node:path';
import { FIXTURES, SCENARIOS, runScenario } from './helpers.js';

fs.mkdirSync(FIXTURES, { recursive: true });
for (const s of SCENARIOS) {
  const answers = await runScenario('apache', s);
  fs.writeFileSync(path.join(FIXTURES, `${s.name}.json`), JSON.stringify({ scenario: s, answers }, null, 2) + '\n');
  console.log(`recorded ${s.name}: ${answers.length} answers`);
}
