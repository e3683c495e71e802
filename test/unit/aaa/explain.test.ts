// `plume explain` against the server itself: for the specification's table 5.4 scenarios and
// some table 5.3 rows (the conformance cases' configurations and requests), explain's decision
// must be the status the running server (bin/plume -X) answers, and the error-log lines it
// prints must be the lines the server writes (time, pid and client port aside).

import { test, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { loadCases, materialise, freePort, REPO_ROOT, type LoadedCase, type RequestSpec } from '../../conformance/harness.js';
import { runExplain, type ExplainRequest } from '../../../src/cli/explain/run.js';
import { buildReport, renderText, type ExplainReport } from '../../../src/cli/explain/report.js';

const PLUME = path.join(REPO_ROOT, 'bin', 'plume');

interface Served { root: string; port: number; proc: ChildProcess }
const servers: Served[] = [];
const dirs: string[] = [];

async function waitFor(cond: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' }, () => { s.destroy(); resolve(true); });
    s.on('error', () => resolve(false));
  });
}

/** Materialises a conformance case and starts plume on it. */
async function serve(c: LoadedCase): Promise<Served> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-explain-'));
  fs.chmodSync(root, 0o755);
  const port = await freePort();
  materialise(c.spec, { root, port, port2: port + 1 });
  const proc = spawn(process.execPath, [PLUME, '-X', '-d', root, '-f', path.join(root, 'httpd.conf')], { stdio: 'ignore' });
  const s = { root, port, proc };
  servers.push(s);
  assert.ok(await waitFor(() => canConnect(port), 10000), `plume did not start for ${c.id}`);
  return s;
}

/** One request over a socket from `client`: the status and the error-log lines it made. */
async function ask(s: Served, r: RequestSpec): Promise<{ status: number; errorLog: string[] }> {
  const log = path.join(s.root, 'logs', 'error_log');
  const size = fs.existsSync(log) ? fs.statSync(log).size : 0;
  const head = [`${r.method ?? 'GET'} ${r.path ?? '/'} HTTP/1.1`, `Host: localhost:${s.port}`, 'Connection: close'];
  for (const [k, v] of r.headers ?? []) head.push(`${k}: ${v}`);
  const text = await new Promise<string>((resolve, reject) => {
    let got = '';
    const sock = net.connect({ port: s.port, host: '127.0.0.1', localAddress: r.client ?? '127.0.0.1' }, () => sock.write(head.join('\r\n') + '\r\n\r\n'));
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => { got += d; });
    sock.on('end', () => resolve(got));
    sock.on('error', reject);
  });
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const lines = (): string[] => {
    const all = fs.readFileSync(log);
    return all.subarray(size).toString('latin1').split('\n').filter((l) => l !== '');
  };
  // Error lines are written right after the response; give the server a moment.
  await waitFor(() => lines().length > 0, status >= 400 ? 1000 : 150);
  return { status, errorLog: lines() };
}

async function explain(s: Served, r: RequestSpec): Promise<ExplainReport> {
  const headers: [string, string][] = (r.headers ?? []).map(([k, v]) => [k, v]);
  const req: ExplainRequest = {
    serverRoot: s.root, configFile: path.join(s.root, 'httpd.conf'), defines: [], preDirectives: [], postDirectives: [],
    url: `http://localhost:${s.port}${r.path ?? '/'}`, method: r.method ?? 'GET',
    clientIp: r.client ?? '127.0.0.1', clientPort: 50000, localIp: undefined, user: undefined, password: undefined, headers,
  };
  return buildReport(await runExplain(req), req.url);
}

/** Time, pid and the client's port differ between the two runs. */
function norm(line: string): string {
  return line
    .replace(/^\[[^\]]+\]/, '[<time>]')
    .replace(/\[pid \d+(?::tid \d+)?\]/, '[pid]')
    .replace(/\[client ([0-9a-fA-F.:]+?):\d+\]/, '[client $1]');
}

after(() => {
  for (const s of servers) {
    s.proc.kill();
    fs.rmSync(s.root, { recursive: true, force: true });
  }
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const CASES = [
  'authz/table54-compat-deny-location-require',
  'authz/table54-require-denied-location-compat',
  'authz/table53-deny-all',
  'authz/table53-auth-satisfy-all',
  'authz/table53-auth-satisfy-any',
];

let loaded: LoadedCase[] = [];
before(() => {
  loaded = CASES.map((id) => {
    const c = loadCases(id).find((x) => x.id === id);
    assert.ok(c, `conformance case ${id} is missing`);
    return c;
  });
});

for (const id of CASES) {
  test(`explain decides ${id} as the server answers, with the server's error-log lines`, async () => {
    const c = loaded.find((x) => x.id === id)!;
    const s = await serve(c);
    for (const r of c.spec.requests) {
      if (r.raw !== undefined) continue;
      const what = `${r.method ?? 'GET'} ${r.path ?? '/'} from ${r.client ?? '127.0.0.1'}${r.headers ? ' with credentials ' + JSON.stringify(r.headers) : ''}`;
      const served = await ask(s, r);
      if (served.status === 403) assert.ok(served.errorLog.length > 0, `${what}: the server logged nothing`);
      const rep = await explain(s, r);
      assert.equal(rep.decision.status, served.status, `${what}: explain says ${rep.decision.statusLine}, the server answered ${served.status}\n${renderText(rep)}`);
      assert.equal(rep.decision.granted, served.status === 200, what);
      assert.deepEqual(rep.errorLog.map(norm), served.errorLog.map(norm), `${what}: error log`);
    }
  });
}

test('table 5.4 row 1: explain names the Directory rules, the Location Require line and AH01797', async () => {
  const c = loaded.find((x) => x.id === CASES[0])!;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-explain-'));
  dirs.push(root);
  materialise(c.spec, { root, port: 28999, port2: 29000 });
  const rep = buildReport(await runExplain({
    serverRoot: root, configFile: path.join(root, 'httpd.conf'), defines: [], preDirectives: [], postDirectives: [],
    url: 'http://localhost/server-status/index.html', method: 'GET', clientIp: '127.0.0.1', clientPort: 50000,
    localIp: undefined, user: undefined, password: undefined, headers: [],
  }), 'http://localhost/server-status/index.html');
  const conf = path.join(root, 'httpd.conf');
  const lineOf = (text: string): number => fs.readFileSync(conf, 'utf8').split('\n').findIndex((l) => l.trim() === text) + 1;
  assert.deepEqual(rep.merged.map((m) => m.where), [`${conf}:${lineOf(`<Directory "${root}/htdocs/">`)}`, `${conf}:${lineOf('<Location /server-status>')}`]);
  assert.deepEqual(rep.merged[1]!.lines.map((l) => [l.text, l.where]), [['Require local', `${conf}:${lineOf('Require local')}`]]);
  assert.equal(rep.accessCompat?.order.where, `${conf}:${lineOf('Order deny,allow')}`);
  assert.deepEqual(rep.accessCompat?.rules.map((x) => [x.text, x.matched]), [['Deny from all', true]]);
  assert.equal(rep.accessCompat?.verdict, 'denied');
  assert.equal(rep.authz.tree?.children[0]?.directive, 'Require local');
  assert.equal(rep.authz.tree?.children[0]?.where, `${conf}:${lineOf('Require local')}`);
  assert.deepEqual(rep.authz.tree?.children[0]?.verdicts, [], 'the Require line is never reached');
  assert.equal(rep.decision.status, 403);
  assert.equal(rep.decision.by, 'mod_access_compat');
  assert.equal(rep.errorLog.length, 1);
  assert.match(rep.errorLog[0]!, /\[access_compat:error\] .*\[client 127\.0\.0\.1:50000\] AH01797: client denied by server configuration: .*\/htdocs\/server-status\/index\.html$/);
});

test('table 5.4 row 2: the compat rules grant over Require all denied, marked as the specification\'s difference', async () => {
  const c = loaded.find((x) => x.id === CASES[1])!;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-explain-'));
  dirs.push(root);
  materialise(c.spec, { root, port: 28999, port2: 29000 });
  const run = (ip: string): Promise<ExplainReport> => runExplain({
    serverRoot: root, configFile: path.join(root, 'httpd.conf'), defines: [], preDirectives: [], postDirectives: [],
    url: 'http://localhost/server-status/index.html', method: 'GET', clientIp: ip, clientPort: 50000,
    localIp: undefined, user: undefined, password: undefined, headers: [],
  }).then((x) => buildReport(x, 'http://localhost/server-status/index.html'));
  const local = await run('127.0.0.1');
  assert.equal(local.decision.status, 200);
  assert.ok(local.decision.difference?.includes('table 5.4'));
  assert.equal(local.authz.tree?.children[0]?.directive, 'Require all denied');
  assert.deepEqual(local.authz.tree?.children[0]?.verdicts.map((v) => v.result), ['denied']);
  assert.deepEqual(local.accessCompat?.rules.map((x) => [x.text, x.matched]), [['Deny from all', true], ['Allow from 127.0.0.1', true]]);
  assert.deepEqual(local.errorLog, []);
  const other = await run('127.0.0.2');
  assert.equal(other.decision.status, 403);
  assert.equal(other.decision.difference, undefined);
  assert.match(other.errorLog[0] ?? '', /AH01797: client denied by server configuration/);
});

test('the command line: text and JSON output, usage errors', () => {
  const c = loadCases(CASES[3]).find((x) => x.id === CASES[3])!;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-explain-'));
  dirs.push(root);
  materialise(c.spec, { root, port: 28999, port2: 29000 });
  const cli = (...args: string[]): { status: number | null; stdout: string; stderr: string } => {
    const p = spawnSync(process.execPath, [PLUME, 'explain', '-d', root, '-f', 'httpd.conf', ...args], { encoding: 'utf8' });
    return { status: p.status, stdout: p.stdout, stderr: p.stderr };
  };
  const text = cli('http://localhost/v24/f.txt', '--ip', '127.0.0.1', '--user', 'alice', '--password', 'secret');
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /Decision: 200 OK/);
  assert.match(text.stdout, /<RequireAll>\s+httpd\.conf:\d+\s+-> before authentication: denied \(no authenticated user yet\); after authentication: granted/);
  const json = cli('http://localhost/v24/f.txt', '--ip', '127.0.0.2:4321', '--user', 'alice', '--password', 'wrong', '--format', 'json');
  assert.equal(json.status, 0, json.stderr);
  const rep = JSON.parse(json.stdout) as ExplainReport;
  assert.equal(rep.decision.status, 403);
  assert.equal(rep.request.client, '127.0.0.2:4321');
  const bad = cli('--format', 'xml', 'http://localhost/');
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /--format is text or json/);
  const unreadable = spawnSync(process.execPath, [PLUME, 'explain', '-d', root, '-f', 'missing.conf', 'http://localhost/'], { encoding: 'utf8' });
  assert.equal(unreadable.status, 1);
  assert.match(unreadable.stderr, /Could not open configuration file/);
});

test('explain follows the request past access control: the phase and module of the final status, as the server answers (issue 19 item 14)', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-explain-'));
  fs.chmodSync(root, 0o755);
  const port = await freePort();
  fs.mkdirSync(path.join(root, 'htdocs', 'noindex'), { recursive: true });
  fs.mkdirSync(path.join(root, 'htdocs', 'dir'), { recursive: true });
  fs.mkdirSync(path.join(root, 'logs'));
  fs.writeFileSync(path.join(root, 'htdocs', 'dir', 'index.html'), 'hi\n');
  fs.writeFileSync(path.join(root, 'httpd.conf'), [
    `ServerRoot "${root}"`, `Listen 127.0.0.1:${port}`,
    'LoadModule mpm_event_module modules/mod_mpm_event.so', 'LoadModule authz_core_module modules/mod_authz_core.so',
    'LoadModule dir_module modules/mod_dir.so', 'LoadModule alias_module modules/mod_alias.so',
    'LoadModule autoindex_module modules/mod_autoindex.so', 'LoadModule mime_module modules/mod_mime.so',
    'ServerName localhost', `DocumentRoot "${root}/htdocs"`, 'ErrorLog logs/error_log', 'TypesConfig /etc/mime.types',
    `<Directory "${root}/htdocs">`, '    Require all granted', '    Options -Indexes', '</Directory>',
    'DirectoryIndex index.html', 'Redirect /old http://example.test/new', '',
  ].join('\n'));
  const proc = spawn(process.execPath, [PLUME, '-X', '-d', root, '-f', path.join(root, 'httpd.conf')], { stdio: 'ignore' });
  const s: Served = { root, port, proc };
  servers.push(s);
  assert.ok(await waitFor(() => canConnect(port), 10000), 'plume did not start');
  const want: [string, number, string | undefined, string | undefined, RegExp][] = [
    ['/noindex/', 403, 'handler', 'mod_autoindex', /AH01276: Cannot serve directory .*\/noindex\/: No matching DirectoryIndex \(index\.html\) found, and server-generated directory index forbidden by Options directive/],
    ['/missing.html', 404, 'handler', 'core', /the handler phase \[core\] answered 404/],
    ['/old/x', 302, 'translate name', 'mod_alias', /redirect to http:\/\/example\.test\/new\/x/],
    ['/dir', 301, 'fixups', 'mod_dir', /redirect to http:\/\/localhost(:\d+)?\/dir\//],
    ['/dir/index.html', 200, 'handler', 'core', /serves the request/],
  ];
  for (const [p, status, phase, module, reason] of want) {
    const served = await ask(s, { path: p });
    assert.equal(served.status, status, `${p}: the server`);
    const rep = await explain(s, { path: p });
    assert.equal(rep.decision.status, served.status, `${p}\n${renderText(rep)}`);
    assert.equal(rep.decision.phase, phase, p);
    assert.equal(rep.decision.module, module, p);
    assert.match(rep.decision.reason, reason, p);
    assert.equal(rep.decision.granted, status === 200, p);
    assert.notEqual(rep.decision.statusLine, 'granted', p);
    assert.deepEqual(rep.errorLog.map(norm), served.errorLog.map(norm), `${p}: error log`);
    if (status === 301 || status === 302) assert.ok(rep.decision.headers.some(([n]) => n === 'Location'), p);
  }
  const text = renderText(await explain(s, { path: '/noindex/' }));
  assert.match(text, /^  handler \[mod_autoindex\]: 403 Forbidden$/m);
  assert.match(text, /^Decision: 403 Forbidden \(access granted, then the handler phase \[mod_autoindex\] answered 403: AH01276: /m);
});
