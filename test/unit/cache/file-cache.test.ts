// mod_file_cache's directives: what CacheFile and MMapFile keep (the startup stat and bytes,
// keyed by the ServerRoot-resolved path) and the warnings for files they skip. Requests are
// pinned by test/conformance/cases/modules/file-cache*.json, recorded from Apache 2.4.71.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import fileCache, { type FileCacheServerConfig } from '../../../src/modules/cache/mod_file_cache.js';
import { tempDir } from '../../temp.js';

function run(name: string, root: string, args: string[]): { srv: FileCacheServerConfig; logs: string[] } {
  const d = fileCache.decl.directives!.find((x) => x.name === name)!;
  const srv: FileCacheServerConfig = { files: new Map() };
  const logs: string[] = [];
  const cmd = {
    srv,
    serverRootRelative: (p: string) => (p.startsWith('/') ? p : path.join(root, p)),
    log: (_m: string, _l: number, msg: string, e?: { code: number; text: string }) => { logs.push(e ? `(${e.code})${e.text}: ${msg}` : msg); },
  };
  const handler = d.handler as unknown as (c: typeof cmd, a: string) => string | undefined;
  for (const a of args) assert.equal(handler(cmd, a), undefined);
  return { srv, logs };
}

test('CacheFile/MMapFile keep the startup stat and bytes; a later change is not seen', () => {
  const dir = tempDir('file-cache');
  try {
    fs.writeFileSync(path.join(dir, 'a.txt'), 'first\n');
    fs.writeFileSync(path.join(dir, 'empty'), '');
    fs.mkdirSync(path.join(dir, 'sub'));
    const c = run('cachefile', dir, ['a.txt', 'empty', 'sub', 'none']);
    assert.deepEqual([...c.srv.files.keys()], [path.join(dir, 'a.txt'), path.join(dir, 'empty')]);
    assert.deepEqual(c.logs, [
      `AH00796: ${path.join(dir, 'sub')} isn't a regular file, skipping`,
      `(2)No such file or directory: AH00795: unable to stat(${path.join(dir, 'none')}), skipping`,
    ]);
    const f = c.srv.files.get(path.join(dir, 'a.txt'))!;
    fs.writeFileSync(path.join(dir, 'a.txt'), 'second, longer\n');
    assert.equal(f.data.toString(), 'first\n');
    assert.equal(f.stat.size, 6);
    const m = run('mmapfile', dir, ['empty', 'a.txt']);
    assert.deepEqual(m.logs, ['(22)Invalid argument: AH00799: unable to mmap empty, skipping'], 'an empty file cannot be mapped; named as written');
    assert.equal(m.srv.files.get(path.join(dir, 'a.txt'))!.mmapped, true);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
