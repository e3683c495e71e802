// Nothing is loaded after privileges are dropped (issue 19, item 7). Apache loads every module
// before it becomes `User`; plume must too: once the server runs as nobody, a file of its own
// build that it had not loaded yet is out of reach when the build sits in a directory only
// root can read (a clone under /root, a 0700 temporary directory). This test copies the build
// (bin/, dist/src, package.json, the runtime dependencies) into a 0700 directory and replays
// recorded conformance cases against that copy, with the cases' own `User nobody`: every
// response path they drive (ranges and the 416 of range-invalid, conditionals, error
// documents, directory listings, server-status, password hashes, logs...) must answer as Apache
// recorded it. PRIVDROP_CASES=all replays every case, PRIVDROP_CASES=<substring> some.
// Only root can drop privileges: as another user the test is skipped (CI runs as root).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import { makeSite, startPlume, uidOf, type Running } from './process-lib.js';
import { applyOverride, compareResults, loadCases, loadExpected, runCase, REPO_ROOT, type LoadedCase, type ServerCommandFactory } from '../conformance/harness.js';

const ROOT = process.getuid?.() === 0;

// The groups whose cases serve responses of every kind, and single cases for the paths
// elsewhere (a bcrypt check, a 401 ErrorDocument, .htaccess reading, request bodies, TRACE,
// name-based virtual hosts, mod_logio).
const GROUPS = ['static/', 'modules/', 'status/', 'keepalive/'];
const SINGLE = new Set([
  'authn/hash-bc4', 'authn/hash-md5u', 'authn/hash-s512u', 'authn/errordocument-401', 'authn/dbm-sdbm-users',
  'authz/htaccess-all', 'sections/htaccess-all', 'sections/files-sections',
  'request/post-static', 'request/chunked-body', 'request/trace', 'request/options', 'request/expect-continue',
  'logs/logio', 'logs/errordocument-redirect-items', 'vhost/name-based', 'config/errordocument-codes',
]);

function selected(): LoadedCase[] {
  const want = process.env['PRIVDROP_CASES'];
  if (want === 'all') return loadCases(undefined);
  if (want !== undefined && want !== '') return loadCases(want);
  // And the first case of every other group, so that a group added later (a new module's
  // cases) is driven here too.
  const firstOfGroup = new Set<string>();
  const seen = new Set<string>();
  for (const c of loadCases(undefined)) {
    const g = c.id.slice(0, c.id.indexOf('/') + 1);
    if (!seen.has(g)) { seen.add(g); firstOfGroup.add(c.id); }
  }
  return loadCases(undefined).filter((c) => GROUPS.some((g) => c.id.startsWith(g)) || SINGLE.has(c.id) || firstOfGroup.has(c.id));
}

const knownGaps = new Set<string>((JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'test/conformance/known-gaps.json'), 'utf8')) as { cases: string[] }).cases);

let outer = '';
let plume = '';

/** Copies what an installed plume consists of: bin/, dist/src, package.json (the "type" of
 *  the build's modules) and each runtime dependency's package directory. */
function copyBuild(to: string): void {
  fs.cpSync(path.join(REPO_ROOT, 'bin'), path.join(to, 'bin'), { recursive: true });
  fs.cpSync(path.join(REPO_ROOT, 'dist', 'src'), path.join(to, 'dist', 'src'), { recursive: true });
  fs.copyFileSync(path.join(REPO_ROOT, 'package.json'), path.join(to, 'package.json'));
  // Each runtime dependency's package directory, and theirs in turn (iconv-lite needs
  // safer-buffer), flat in node_modules as npm installs them.
  const copied = new Set<string>();
  const copyDeps = (pkgFile: string): void => {
    const pkg = JSON.parse(fs.readFileSync(pkgFile, 'utf8')) as { dependencies?: Record<string, string> };
    const req = createRequire(pkgFile);
    for (const dep of Object.keys(pkg.dependencies ?? {})) {
      if (copied.has(dep)) continue;
      copied.add(dep);
      // The first node_modules on Node's lookup path that holds the package (its exports may
      // hide package.json from require.resolve).
      const dir = (req.resolve.paths(dep) ?? []).map((p) => path.join(p, dep)).find((d) => fs.existsSync(path.join(d, 'package.json')));
      assert.ok(dir !== undefined, `runtime dependency ${dep} not installed`);
      fs.cpSync(fs.realpathSync(dir), path.join(to, 'node_modules', dep), { recursive: true });
      copyDeps(path.join(fs.realpathSync(dir), 'package.json'));
    }
  };
  copyDeps(path.join(REPO_ROOT, 'package.json'));
}

before(() => {
  if (!ROOT) return;
  outer = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-privdrop-'));
  fs.chmodSync(outer, 0o700);
  copyBuild(path.join(outer, 'plume'));
  plume = path.join(outer, 'plume', 'bin', 'plume');
});

after(() => {
  if (outer !== '') fs.rmSync(outer, { recursive: true, force: true });
});

const command: ServerCommandFactory = (root) => ({
  cmd: process.execPath,
  args: [plume, '-X', '-d', root, '-f', path.join(root, 'httpd.conf')],
});

test('the copy is out of nobody\'s reach', { skip: ROOT ? false : 'needs root (User nobody)' }, () => {
  assert.equal(fs.statSync(outer).mode & 0o777, 0o700);
  assert.equal(fs.statSync(outer).uid, 0);
});

for (const c of selected()) {
  const todo = knownGaps.has(c.id) ? 'known gap (test/conformance/known-gaps.json)' : undefined;
  test(`from a 0700 directory as nobody: ${c.id}`, { timeout: 60000, todo, skip: ROOT ? false : 'needs root (User nobody)' }, async (t) => {
    const recorded = loadExpected(c.id);
    if (recorded === null) {
      t.skip(`no expected file for ${c.id}`);
      return;
    }
    const expected = applyOverride(recorded, c.spec.specOverride);
    const actual = await runCase(c, command, { expected });
    const diffs = compareResults(expected, actual, c.spec.logLines !== false);
    assert.ok(diffs.length === 0, `${c.id}: ${c.spec.title}\n` + diffs.join('\n'));
  });
}

/** One raw exchange on a new connection, read to the server's close. */
function exchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(raw));
    let got = '';
    s.on('data', (d: Buffer) => { got += d.toString('latin1'); });
    s.on('end', () => resolve(got));
    s.on('error', reject);
    s.setTimeout(20000, () => { s.destroy(); reject(new Error(`timeout; got ${JSON.stringify(got)}`)); });
  });
}

test('workers started from a 0700 directory answer every range path as nobody', { timeout: 90000, skip: ROOT ? false : 'needs root (User nobody)' }, async () => {
  const site = await makeSite('privdrop-workers', ['StartServers 1']);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 1, plume });
    const nobody = Number(/^nobody:[^:]*:(\d+):/m.exec(fs.readFileSync('/etc/passwd', 'utf8'))?.[1]);
    assert.ok(srv.workers().length > 0);
    for (const w of srv.workers()) assert.equal(uidOf(w), nobody, `worker ${w} runs as nobody`);
    const ask = (range: string): Promise<string> => exchange(site.port, `GET /index.html HTTP/1.1\r\nHost: localhost\r\nRange: ${range}\r\nConnection: close\r\n\r\n`);
    assert.match(await ask('bytes=99999-'), /^HTTP\/1\.1 416 Requested Range Not Satisfiable\r\n/);
    assert.match(await ask('bytes=0-3'), /^HTTP\/1\.1 206 Partial Content\r\n[^]*\r\n\r\nplum$/);
    assert.match(await ask('bytes=0-0,2-2'), /^HTTP\/1\.1 206 Partial Content\r\n[^]*Content-Type: multipart\/byteranges; boundary=/);
    assert.doesNotMatch(fs.readFileSync(site.errorLog, 'utf8'), /AH00526|ERR_MODULE_NOT_FOUND/);
  } finally {
    await srv?.stop();
    site.remove();
  }
});
