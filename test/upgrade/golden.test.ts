/**
 * Golden tests of the upgrade rules (test/upgrade/golden/<case>/), in the manner of Caddy's
 * adapter tests. A case folder holds:
 *   httpd.conf        the 2.2 input (@ROOT@ = the temporary copy of the folder); other files
 *                     beside it are copied too (included files, .htaccess, SSI pages...)
 *   args              (optional) extra command-line options, one per line
 *   expected/         every file the assistant changes, as it must read afterwards
 *   findings.txt      the findings, one per line: "FILE:LINE SEVERITY RULE"
 *   apache-t          (optional) run apache2 -t on the result where Apache is installed
 *   plume-modules     (optional) the modules plume has, one symbol a line (else not known)
 * Every case is also upgraded a second time: nothing may change then.
 * UPGRADE_GOLDEN_UPDATE=1 rewrites expected/ and findings.txt from the current output.
 */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseUpgradeArgs, upgradeConfiguration } from '../../src/upgrade/cli.js';
import { RULES } from '../../src/upgrade/rules/index.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const GOLDEN = path.join(REPO_ROOT, 'test', 'upgrade', 'golden');
const UPDATE = process.env['UPGRADE_GOLDEN_UPDATE'] === '1';
const META = new Set(['args', 'expected', 'findings.txt', 'apache-t', 'plume-modules', 'README.md']);

function copyCase(src: string, dst: string, root: string): void {
  for (const e of fs.readdirSync(src, { withFileTypes: true })) {
    if (src === path.dirname(dst) && META.has(e.name)) continue;
    const a = path.join(src, e.name);
    const b = path.join(dst, e.name);
    if (e.isDirectory()) { fs.mkdirSync(b, { recursive: true }); copyCase(a, b, root); continue; }
    fs.writeFileSync(b, fs.readFileSync(a, 'utf8').replaceAll('@ROOT@', root));
  }
}

function materialise(name: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `plume-golden-${name}-`));
  const src = path.join(GOLDEN, name);
  for (const e of fs.readdirSync(src, { withFileTypes: true })) {
    if (META.has(e.name)) continue;
    const a = path.join(src, e.name);
    const b = path.join(root, e.name);
    if (e.isDirectory()) { fs.mkdirSync(b, { recursive: true }); copyCase(a, b, root); } else fs.writeFileSync(b, fs.readFileSync(a, 'utf8').replaceAll('@ROOT@', root));
  }
  fs.mkdirSync(path.join(root, 'logs'), { recursive: true });
  if (!fs.existsSync(path.join(root, 'modules'))) fs.symlinkSync('/usr/lib/apache2/modules', path.join(root, 'modules'));
  return root;
}

function argsOf(name: string, root: string): string[] {
  const f = path.join(GOLDEN, name, 'args');
  if (!fs.existsSync(f)) return [];
  return fs.readFileSync(f, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean).map((l) => l.replaceAll('@ROOT@', root));
}

const cases = fs.readdirSync(GOLDEN).filter((n) => fs.existsSync(path.join(GOLDEN, n, 'httpd.conf'))).sort();
const seenRules = new Set<string>();

for (const name of cases) {
  test(`golden: ${name}`, () => {
    const root = materialise(name);
    const prev = process.cwd();
    process.chdir(root);
    try {
      const a = parseUpgradeArgs([...argsOf(name, root), 'httpd.conf']);
      assert.ok(typeof a !== 'string', String(a));
      if (typeof a === 'string') return;
      const pm = path.join(GOLDEN, name, 'plume-modules');
      if (fs.existsSync(pm)) a.opts = { ...a.opts, plumeModules: new Set(fs.readFileSync(pm, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean)) };
      const u = upgradeConfiguration('httpd.conf', a.opts);
      const findings = u.sortedFindings().map((f) => `${f.file.replaceAll(root, '@ROOT@')}:${f.line} ${f.severity} ${f.rule}`);
      for (const f of u.findings) seenRules.add(f.rule);
      const changed = new Map<string, string>();
      for (const d of u.changedDocs()) changed.set(path.relative(root, d.path), d.text().replaceAll(root, '@ROOT@'));
      const expDir = path.join(GOLDEN, name, 'expected');
      const findingsFile = path.join(GOLDEN, name, 'findings.txt');
      if (UPDATE) {
        fs.rmSync(expDir, { recursive: true, force: true });
        for (const [rel, text] of changed) {
          fs.mkdirSync(path.dirname(path.join(expDir, rel)), { recursive: true });
          fs.writeFileSync(path.join(expDir, rel), text);
        }
        fs.writeFileSync(findingsFile, findings.join('\n') + '\n');
      }
      const expected = new Map<string, string>();
      const walk = (d: string): void => {
        if (!fs.existsSync(d)) return;
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
          const p = path.join(d, e.name);
          if (e.isDirectory()) walk(p); else expected.set(path.relative(expDir, p), fs.readFileSync(p, 'utf8'));
        }
      };
      walk(expDir);
      assert.deepEqual([...changed.keys()].sort(), [...expected.keys()].sort(), 'files changed');
      for (const [rel, text] of expected) assert.equal(changed.get(rel), text, rel);
      assert.deepEqual(findings, fs.readFileSync(findingsFile, 'utf8').split('\n').filter(Boolean), 'findings');
      // Idempotent.
      for (const d of u.changedDocs()) fs.writeFileSync(d.path, d.text());
      const again = upgradeConfiguration('httpd.conf', a.opts);
      assert.deepEqual(again.changedDocs().map((d) => d.display), [], 'a second run changes nothing');
      // A second run rewrites nothing; only manual steps still open may be reported again.
      const open = new Set(u.findings.filter((f) => f.severity === 'manual').map((f) => f.rule));
      assert.deepEqual(again.findings.filter((f) => f.severity === 'change' || (f.severity === 'manual' && !open.has(f.rule))).map((f) => `${f.file}:${f.line} ${f.rule}`), [], 'a second run finds nothing new to change');
      if (fs.existsSync(path.join(GOLDEN, name, 'apache-t')) && fs.existsSync('/usr/sbin/apache2')) {
        const r = spawnSync('/usr/sbin/apache2', ['-t', '-d', root, '-f', path.join(root, 'httpd.conf')], { encoding: 'utf8' });
        assert.equal(`${r.stderr}${r.stdout}`.trim(), 'Syntax OK', 'apache2 -t on the upgraded configuration');
      }
    } finally {
      process.chdir(prev);
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
}

test('golden: every rule has a case that shows it', () => {
  const missing = RULES.map((r) => r.id).filter((id) => !seenRules.has(id));
  assert.deepEqual(missing, []);
});
