/**
 * The upgrade assistant's documentation stays in step with the code and the specification:
 *  - docs/upgrade.md's rule table names every rule (and only rules that exist);
 *  - its "Specification rows and rules" table has a line for every row of every table of the
 *    specification (read from ../shared/seed when the specification is there), and each of
 *    those lines names existing rules;
 *  - every rule says which specification rows it answers, or is documented as an extra.
 */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RULES } from '../../src/upgrade/rules/index.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const DOC = fs.readFileSync(path.join(REPO_ROOT, 'docs', 'upgrade.md'), 'utf8');
const SPEC = path.resolve(REPO_ROOT, '..', 'shared', 'seed', '000_ef6ffd7899c9f1fb.txt');

/** The rows of the markdown table that follows a heading. */
function tableAfter(text: string, heading: string): string[][] {
  const at = text.indexOf(heading);
  assert.ok(at >= 0, `heading ${heading}`);
  const rows: string[][] = [];
  let started = false;
  for (const line of text.slice(at).split('\n').slice(1)) {
    if (!line.startsWith('|')) { if (started) break; continue; }
    started = true;
    const cells = line.slice(1, -1).split(' | ').map((c) => c.trim());
    if (/^-+$/.test(cells[0]!.replace(/\|/g, ''))) continue;
    rows.push(cells);
  }
  return rows.slice(1); // without the header
}

/** The first cells of every table of a markdown text. */
function allTableRows(text: string): string[] {
  const out: string[] = [];
  let header = true;
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) { header = true; continue; }
    if (/^\|[-| ]+\|$/.test(line)) continue;
    if (header) { header = false; continue; }
    out.push(line.slice(1).split(' | ')[0]!.replace(/\|$/, '').trim());
  }
  return out;
}

const ruleTable = tableAfter(DOC, '## Rules');
const specTable = tableAfter(DOC, '## Specification rows and rules');
const ids = new Set(RULES.map((r) => r.id));

test('docs/upgrade.md: the rule table names every rule', () => {
  const named = ruleTable.map((r) => r[0]!.replace(/`/g, ''));
  assert.deepEqual(RULES.map((r) => r.id).filter((id) => !named.includes(id)), [], 'rules missing from the table');
  assert.deepEqual(named.filter((n) => !ids.has(n)), [], 'table rows naming no rule');
});

test('docs/upgrade.md: every specification row maps to rules that exist', () => {
  for (const row of specTable) {
    for (const m of row[1]!.matchAll(/`([a-z0-9-]+\.[a-z0-9.-]+)`/g)) assert.ok(ids.has(m[1]!), `${row[0]}: ${m[1]} is not a rule`);
  }
  if (!fs.existsSync(SPEC)) return;
  const spec = fs.readFileSync(SPEC, 'utf8');
  const documented = new Set(specTable.map((r) => r[0]!));
  const missing = allTableRows(spec).filter((first) => !documented.has(first));
  assert.deepEqual(missing, [], 'specification rows without a line in docs/upgrade.md');
});

test('every rule names the specification rows it answers', () => {
  const extras = new Set(['syntax.include-wildcard']);
  for (const r of RULES) {
    if (extras.has(r.id)) { assert.ok(DOC.includes(`\`${r.id}\``)); continue; }
    assert.ok(r.spec.length > 0, `${r.id} has no specification row`);
  }
});
