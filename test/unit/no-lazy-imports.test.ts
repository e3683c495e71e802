// Nothing is imported after privileges are dropped (issue 19, item 7): a module imported lazily
// on a request path is read from disk after the switch to `User`, and fails where the build sits
// in a directory that user cannot read. Every dynamic import() in the built server is listed
// here with why it runs before the server serves (or outside it); a new one must be added with
// its reason, or made a static import. test/process/privdrop.test.ts runs the build that way.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const distSrc = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/** file (under dist/src) -> why its import() calls are not on a request path. */
const ALLOWED: Readonly<Record<string, string>> = {
  'cli/main.js': 'subcommands (htpasswd, htdbm, upgrade, explain) and the detaching start: command-line tools, never a serving process',
  'modules/core/mod_so.js': 'third-party modules named by LoadModule, imported before the configuration is read',
  'modules/lua/vm.js': "wasmoon, imported by mod_lua's post_config (preloadLua) before the worker becomes User, and only where LoadModule lua_module is",
};

function jsFiles(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) jsFiles(p, out);
    else if (e.name.endsWith('.js')) out.push(p);
  }
  return out;
}

test('every dynamic import() in the server runs before it serves (or in a command-line tool)', () => {
  const found: string[] = [];
  for (const f of jsFiles(distSrc)) {
    const text = fs.readFileSync(f, 'utf8');
    // import( as a call: not "import {", not a string or comment mentioning it.
    if (/(^|[^.\w$'"`])import\s*\(/m.test(text)) found.push(path.relative(distSrc, f).split(path.sep).join('/'));
  }
  const unexplained = found.filter((f) => !(f in ALLOWED));
  assert.deepEqual(unexplained, [], 'dynamic import() outside the list above (make it static, or say why it runs before serving)');
});
