// mod_macro's substitution rules (measured against apache2 -t and recorded cases in
// test/conformance/cases/macro and test/golden/cli/macro-*), and a bounded fuzz of macro
// definitions and uses through the configuration reader: any text gives a configuration or a
// ConfigError, never another exception.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfiguration } from '../../../src/server/config/build.js';
import { ConfigError, StartupError } from '../../../src/server/config/errors.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import { catalogue } from '../../../src/modules/index.js';

const ROOT = '/nonexistent/plume-macro-test';

/** The startup warnings of the last load. */
let warnings: string[] = [];

function load(lines: readonly string[]): Promise<ConfigContext> {
  warnings = [];
  const text = [
    'LoadModule mpm_event_module modules/mod_mpm_event.so',
    'LoadModule macro_module modules/mod_macro.so',
    'LoadModule setenvif_module modules/mod_setenvif.so',
    'ServerName localhost',
    'Listen 127.0.0.1:18080',
    ...lines,
  ].join('\n') + '\n';
  return loadConfiguration({
    argv0: 'plume', serverRoot: ROOT, configFile: `${ROOT}/httpd.conf`,
    defines: [], preDirectives: [], postDirectives: [], documentRootCheck: false, preflight: false,
    readConfigFile: () => text,
    startupSink: { description: 'test', write: (l: string) => { warnings.push(...l.split('\n').filter((x) => x !== '')); }, flush: () => {}, close: () => {} },
  }, catalogue);
}

async function errorOf(lines: readonly string[]): Promise<string | undefined> {
  try {
    await load(lines);
    return undefined;
  } catch (e) {
    if (e instanceof ConfigError) return e.detail;
    if (e instanceof StartupError) return e.text;
    throw e;
  }
}

test('Use substitutes the longest name at the earliest place; @ arguments are quoted with " and \\ escaped', async () => {
  // A value that is not a valid regex would fail SetEnvIf: the error text shows the substitution.
  const err = await errorOf([
    '<Macro M $a $ab @q>',
    'SetEnvIf $ab$a @q',
    '</Macro>',
    'Use M X Y "he said \\"(\\"\\\\"',
  ]);
  assert.equal(err, 'SetEnvIf regex could not be compiled.');
  const ok = await errorOf(['<Macro M $a $ab @q>', 'SetEnvIf $ab$a @q v=1', '</Macro>', 'Use M X Y "x\\"y"']);
  assert.equal(ok, undefined);
});

test('a line longer than httpd\'s buffer after substitution is an error, as in httpd', async () => {
  const err = await errorOf(['<Macro M $a>', 'SetEnvIf Host $a$a$a v', '</Macro>', `Use M ${'x'.repeat(3000)}`]);
  assert.match(err ?? '', /^macro 'm' \(defined on line 6 of "[^"]+"\) used on line 9 of "[^"]+" error while substituting: while processing line 1 of macro 'm' \(defined on line 6 of "[^"]+"\) cannot substitute, buffer size too small$/);
});

test('sections inside a macro body need not balance until it is used; nesting warnings as httpd', async () => {
  assert.equal(await errorOf(['<Macro Open $d>', '<Directory $d>', '</Macro>', '<Macro Close>', '</Directory>', '</Directory>', '</Macro>']), undefined);
  assert.deepEqual(warnings.map((w) => w.replace(/^.*\] AH/, 'AH')), [
    `AH02795: bad cumulated nesting (+1) in macro 'open' (defined on line 6 of "${ROOT}/httpd.conf")`,
    `AH02793: bad (negative) nesting on line 2 of macro 'close' (defined on line 9 of "${ROOT}/httpd.conf")`,
    `AH02793: bad (negative) nesting on line 3 of macro 'close' (defined on line 9 of "${ROOT}/httpd.conf")`,
    `AH02795: bad cumulated nesting (-2) in macro 'close' (defined on line 9 of "${ROOT}/httpd.conf")`,
  ]);
});

test('fuzz: random macro texts give a configuration or a ConfigError', async () => {
  let seed = 0x2545f491;
  const rnd = (n: number): number => {
    seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const atoms = ['<Macro', '</Macro>', 'M', '$a', '@b', '$', '@', '"', '\\', ' ', '>', 'Use', 'UndefMacro', '<Directory', '</Directory>', '/x', '#', 'SetEnvIf', 'Host', 'v=1', '${X}', '/IgnoreEmptyArgs', '\n', '\t', 'é'];
  for (let i = 0; i < 300; i++) {
    const n = 1 + rnd(40);
    let text = '';
    for (let j = 0; j < n; j++) text += atoms[rnd(atoms.length)]! + (rnd(3) === 0 ? '\n' : ' ');
    try {
      await load(text.split('\n'));
    } catch (e) {
      if (!(e instanceof ConfigError) && !(e instanceof StartupError)) throw new Error(`fuzz case ${i}: ${JSON.stringify(text)}: ${String(e)}`);
    }
  }
});
