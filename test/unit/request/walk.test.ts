// The directory walk (httpd's ap_directory_walk): which <Directory> sections apply to a path
// and in which order they merge. Built from a real configuration over a real directory tree.
// Order measured on Apache 2.4.71: plain sections by number of slashes ("/" first), then
// configuration order; regex sections (<Directory ~>, <DirectoryMatch>) after all plain ones,
// also by slashes, then configuration order; the last merged ForceType wins.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readConfiguration } from '../../../src/server/config/build.js';
import { catalogue } from '../../../src/modules/index.js';
import { Runtime } from '../../../src/server/runtime.js';
import { Request, type ConnRec, type Merged } from '../../../src/server/request/request.js';
import { directoryWalk, serverBase } from '../../../src/server/request/walk.js';
import { coreDir, coreServer } from '../../../src/server/core/core-module.js';
import { noteRead, readDone } from '../../../src/server/request/stat-cache.js';
import { ErrorLog, formatDefault } from '../../../src/server/log/error-log.js';
import type { LogSink } from '../../../src/server/log/log-writer.js';
import autoindex, { FANCY_INDEXING, SUPPRESS_ICON, SUPPRESS_SIZE } from '../../../src/modules/generators/mod_autoindex.js';
import { tempDir } from '../../temp.js';

class Sink implements LogSink {
  readonly lines: string[] = [];
  readonly description = 'memory';
  write(line: string): void { this.lines.push(line); }
  flush(): void {}
  close(): void {}
}

const ROOT = fs.realpathSync(tempDir('plume-walk-'));
for (const d of ['htdocs/a/b/c/d', 'htdocs/x1', 'htdocs/y2', 'htdocs/w1/in', 'htdocs/w2']) fs.mkdirSync(`${ROOT}/${d}`, { recursive: true });
for (const f of ['htdocs/r.txt', 'htdocs/a/f.txt', 'htdocs/a/b/f.txt', 'htdocs/a/b/c/f.txt', 'htdocs/a/b/c/d/f.txt', 'htdocs/x1/f.txt', 'htdocs/y2/f.txt', 'htdocs/w1/f.txt', 'htdocs/w1/in/f.txt', 'htdocs/w2/f.txt']) {
  fs.writeFileSync(`${ROOT}/${f}`, 'x\n');
}

/** Each section sets ForceType to its label, so the merged value shows the last applied. */
async function runtime(sections: [string, string][], extra: { top?: string[]; inside?: Record<string, string[]> } = {}): Promise<Runtime> {
  const conf = [`DocumentRoot "${ROOT}/htdocs"`, 'ServerName localhost', ...(extra.top ?? [])];
  for (const [open, label] of sections) {
    const close = open.startsWith('<DirectoryMatch') ? '</DirectoryMatch>' : '</Directory>';
    conf.push(open.replace(/@ROOT@/g, ROOT), `  ForceType text/x-${label}`, ...(extra.inside?.[label] ?? []), close);
  }
  fs.writeFileSync(`${ROOT}/httpd.conf`, conf.join('\n') + '\n');
  const ctx = await readConfiguration({
    argv0: 'plume', serverRoot: ROOT, configFile: `${ROOT}/httpd.conf`, defines: [], preDirectives: [], postDirectives: [],
  }, catalogue);
  ctx.mainServer.errorLog = new ErrorLog(new Sink(), formatDefault);
  return new Runtime(ctx);
}

function walk(rt: Runtime, uri: string): { type: string | undefined; order: string[]; merged: Merged | number; r: Request } {
  const conn = {
    id: 1, remoteIp: '127.0.0.1', remotePort: 50000, localIp: '127.0.0.1', localPort: 80, keepalives: 0,
    keepAlive: false, aborted: false, remoteHost: undefined, bytesIn: 0, bytesOut: 0, notes: new Map(),
    baseServer: rt.mainServer,
  } as unknown as ConnRec;
  const r = new Request(rt, conn, rt.mainServer);
  r.uri = uri;
  r.filename = `${ROOT}/htdocs${uri}`;
  const merged = directoryWalk(rt, r, serverBase(r));
  const byId = new Map(coreServer(rt.mainServer).secDir.map((s) => [s.id, s]));
  const order = r.matchedSections.map((id) => {
    const s = byId.get(id)!;
    return coreDir({ perDirConfig: s.vector }).forceType!.replace('text/x-', '');
  });
  const type = typeof merged === 'number' ? undefined : coreDir({ perDirConfig: merged.vec }).forceType?.replace('text/x-', '');
  return { type, order, merged, r };
}

test('<Directory /> applies to every path, first', async () => {
  const rt = await runtime([['<Directory "@ROOT@/htdocs">', 'docroot'], ['<Directory />', 'root']]);
  assert.deepEqual(walk(rt, '/r.txt').order, ['root', 'docroot']);
  assert.deepEqual(walk(rt, '/a/b/c/d/f.txt').order, ['root', 'docroot']);
  assert.equal(walk(rt, '/a/b/c/d/f.txt').type, 'docroot');
});

test('nested sections at several depths apply shortest first, whatever the configuration order', async () => {
  const rt = await runtime([
    ['<Directory "@ROOT@/htdocs/a/b/c/d">', 'abcd'],
    ['<Directory "@ROOT@/htdocs/a/b/">', 'ab'],
    ['<Directory "@ROOT@/htdocs/a">', 'a'],
    ['<Directory "@ROOT@/htdocs">', 'docroot'],
    ['<Directory "@ROOT@/htdocs/a/b/c">', 'abc'],
  ]);
  assert.deepEqual(walk(rt, '/r.txt').order, ['docroot']);
  assert.deepEqual(walk(rt, '/a/f.txt').order, ['docroot', 'a']);
  assert.deepEqual(walk(rt, '/a/b/f.txt').order, ['docroot', 'a', 'ab']);
  assert.deepEqual(walk(rt, '/a/b/c/f.txt').order, ['docroot', 'a', 'ab', 'abc']);
  assert.deepEqual(walk(rt, '/a/b/c/d/f.txt').order, ['docroot', 'a', 'ab', 'abc', 'abcd']);
  assert.equal(walk(rt, '/a/b/c/d/f.txt').type, 'abcd');
  // A directory itself (no trailing slash) gets its own section; a missing file under it too.
  assert.deepEqual(walk(rt, '/a/b').order, ['docroot', 'a', 'ab']);
  assert.deepEqual(walk(rt, '/a/b/missing').order, ['docroot', 'a', 'ab']);
  assert.deepEqual(walk(rt, '/a/b/c/d/f.txt/extra').order, ['docroot', 'a', 'ab', 'abc', 'abcd']);
});

test('sections of the same depth merge in configuration order; a prefix that is not a whole directory does not match', async () => {
  const rt = await runtime([
    ['<Directory "@ROOT@/htdocs/a">', 'a-first'],
    ['<Directory "@ROOT@/htdocs/a/">', 'a-second'],
    ['<Directory "@ROOT@/htdocs/x">', 'x'],
  ]);
  assert.deepEqual(walk(rt, '/a/f.txt').order, ['a-first', 'a-second']);
  assert.equal(walk(rt, '/a/f.txt').type, 'a-second');
  assert.deepEqual(walk(rt, '/x1/f.txt').order, []);
});

test('wildcard sections match one path component per *', async () => {
  const rt = await runtime([
    ['<Directory "@ROOT@/htdocs/w*">', 'w-star'],
    ['<Directory "@ROOT@/htdocs/w?/in">', 'w-in'],
    ['<Directory "@ROOT@/htdocs/[xy]1">', 'class'],
  ]);
  assert.deepEqual(walk(rt, '/w1/f.txt').order, ['w-star']);
  assert.deepEqual(walk(rt, '/w2/f.txt').order, ['w-star']);
  assert.deepEqual(walk(rt, '/w1/in/f.txt').order, ['w-star', 'w-in']);
  assert.deepEqual(walk(rt, '/x1/f.txt').order, ['class']);
  assert.deepEqual(walk(rt, '/y2/f.txt').order, []);
  assert.deepEqual(walk(rt, '/a/b/f.txt').order, []);
});

test('regex sections apply after every plain section, ordered by slashes then configuration order', async () => {
  const rt = await runtime([
    ['<Directory ~ "/htdocs/(x|y)[0-9]+">', 'regex'],
    ['<Directory "@ROOT@/htdocs/x1">', 'plain'],
    ['<DirectoryMatch "/htdocs/y">', 'match'],
    ['<DirectoryMatch "^/">', 'one-slash'],
    ['<Directory "@ROOT@/htdocs">', 'docroot'],
  ]);
  assert.deepEqual(walk(rt, '/x1/f.txt').order, ['docroot', 'plain', 'one-slash', 'regex']);
  assert.equal(walk(rt, '/x1/f.txt').type, 'regex');
  assert.deepEqual(walk(rt, '/y2/f.txt').order, ['docroot', 'one-slash', 'regex', 'match']);
  assert.equal(walk(rt, '/y2/f.txt').type, 'match');
  assert.deepEqual(walk(rt, '/r.txt').order, ['docroot', 'one-slash']);
  assert.deepEqual(walk(rt, '/x1/').order, ['docroot', 'plain', 'one-slash', 'regex']);
});

test('regex sections are matched against the walked filename: the file path, or the directory as requested', async () => {
  const rt = await runtime([
    ['<DirectoryMatch "f\\.txt$">', 'file'],
    ['<DirectoryMatch "/x1/f">', 'file-prefix'],
    ['<Directory ~ "/x1">', 'dir'],
    ['<DirectoryMatch "/x1$">', 'no-slash'],
    ['<DirectoryMatch "/x1/$">', 'slash'],
  ]);
  // Ordered by slashes in the pattern: 0, 1, 2, 1, 2 -> file, dir, no-slash, file-prefix, slash.
  assert.deepEqual(walk(rt, '/x1/f.txt').order, ['file', 'dir', 'file-prefix']);
  assert.deepEqual(walk(rt, '/x1/f.txt/pi').order, ['file', 'dir', 'file-prefix']);
  assert.deepEqual(walk(rt, '/x1/').order, ['dir', 'slash']);
  assert.deepEqual(walk(rt, '/x1').order, ['dir', 'no-slash']);
  assert.deepEqual(walk(rt, '/x1/nope').order, ['dir']);
});

test('the walk sets filename, path info and finfo', async () => {
  const rt = await runtime([]);
  const f = walk(rt, '/a/b/f.txt/more/x');
  assert.equal(f.r.filename, `${ROOT}/htdocs/a/b/f.txt`);
  assert.equal(f.r.pathInfo, '/more/x');
  assert.ok(f.r.finfo?.isFile());
  const m = walk(rt, '/a/nope/deeper');
  assert.equal(m.r.filename, `${ROOT}/htdocs/a/nope`);
  assert.equal(m.r.pathInfo, '/deeper');
  assert.equal(m.r.finfo, null);
  const d = walk(rt, '/a/b');
  assert.equal(d.r.filename, `${ROOT}/htdocs/a/b`);
  assert.ok(d.r.finfo?.isDirectory());
});

// A walk made while a socket read is handled is kept for the other requests of that turn, by
// the stat cache's rule (src/server/request/stat-cache.ts): they get what a walk of their own
// would give them, and a request of a later turn walks again.
test('a walk serves the other requests of its turn on the same path, and not a later turn\'s', async () => {
  const rt = await runtime([[`<Directory "@ROOT@/htdocs/a">`, 'a'], [`<Directory "@ROOT@/htdocs/a/b">`, 'b']]);
  const created = `${ROOT}/htdocs/a/b/later.txt`;
  fs.rmSync(created, { force: true });
  noteRead();
  let first, second, missing, stillMissing;
  try {
    first = walk(rt, '/a/b/f.txt/more/x');
    second = walk(rt, '/a/b/f.txt/more/x');
    missing = walk(rt, '/a/b/later.txt');
    fs.writeFileSync(created, 'x\n');
    stillMissing = walk(rt, '/a/b/later.txt');
  } finally {
    readDone();
  }
  assert.equal(second.merged, first.merged);
  assert.equal(second.type, 'b');
  assert.deepEqual(second.order, ['a', 'b']);
  assert.equal(second.r.filename, `${ROOT}/htdocs/a/b/f.txt`);
  assert.equal(second.r.pathInfo, '/more/x');
  assert.equal(second.r.finfo, first.r.finfo);
  assert.ok(second.r.finfo?.isFile());
  // Both read in the same turn as the answers they were given (a client that created the file
  // first would be read in a later turn).
  assert.equal(missing.r.finfo, null);
  assert.equal(stillMissing.r.finfo, null);
  assert.deepEqual(stillMissing.order, ['a', 'b']);
  await new Promise((resolve) => setImmediate(resolve));
  noteRead();
  try {
    const next = walk(rt, '/a/b/later.txt');
    assert.ok(next.r.finfo?.isFile());
    assert.equal(next.r.filename, created);
    assert.deepEqual(next.order, ['a', 'b']);
  } finally {
    readDone();
    fs.rmSync(created, { force: true });
  }
});

test("a walk made in a read's continuations (a subrequest after an await) serves its turn; one made with no read in the turn is not kept", async () => {
  const rt = await runtime([[`<Directory "@ROOT@/htdocs/a">`, 'a']]);
  await new Promise((resolve) => setImmediate(resolve));
  noteRead();
  readDone();
  await Promise.resolve();
  const first = walk(rt, '/a/b/f.txt');
  const second = walk(rt, '/a/b/f.txt');
  assert.ok(first.r.finfo?.isFile());
  assert.equal(second.r.finfo, first.r.finfo);
  assert.equal(second.merged, first.merged);
  // The turn count has gone up, and no socket was read since: nothing taken now is kept.
  await new Promise((resolve) => setImmediate(resolve));
  const third = walk(rt, '/a/b/f.txt');
  const fourth = walk(rt, '/a/b/f.txt');
  assert.ok(third.r.finfo?.isFile());
  assert.notEqual(third.r.finfo, first.r.finfo);
  assert.notEqual(fourth.r.finfo, third.r.finfo);
});

const AUTOINDEX_SO = '/usr/lib/apache2/modules/mod_autoindex.so';

test('the sections of a walk are merged with each other first, then onto the server level', { skip: !fs.existsSync(AUTOINDEX_SO) }, async () => {
  // mod_autoindex's merge is not associative: two incremental IndexOptions levels merged
  // together become absolute and replace the server's FancyIndexing (measured on Apache).
  const rt = await runtime([
    ['<Directory "@ROOT@/htdocs/a">', 'a'],
    ['<Directory "@ROOT@/htdocs/a/b">', 'ab'],
  ], {
    top: [`LoadModule autoindex_module ${AUTOINDEX_SO}`, 'IndexOptions FancyIndexing'],
    inside: { a: ['IndexOptions +SuppressSize'], ab: ['IndexOptions +SuppressIcon'] },
  });
  const opts = (uri: string): number => {
    const m = walk(rt, uri).merged;
    assert.ok(typeof m !== 'number');
    return autoindex.dir({ perDirConfig: m.vec }).opts;
  };
  assert.equal(opts('/a/f.txt'), FANCY_INDEXING | SUPPRESS_SIZE);
  assert.equal(opts('/a/b/f.txt'), SUPPRESS_SIZE | SUPPRESS_ICON);
  assert.equal(opts('/r.txt'), FANCY_INDEXING);
});
