// mod_cgi's scripts forked by the CGI spawner (cgi-spawner.ts) behave as scripts spawned from
// the serving process: the same site is served once with the spawner turned off
// (PLUME_CGI_SPAWNER_OFF=1, Node's spawn) and once with it, and the answers and log lines
// compared — environment and its order, argv from an ISINDEX query, working directory, a large
// POST body through stdin, stderr lines, an exec failure, a script without #!, an nph- script,
// a script that does not read its body, a hung script stopped after CGIScriptTimeout. Also:
// the script's parent is the spawner, a child of the serving process, and the spawner and its
// socket directory are gone once the server has stopped.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as http from 'node:http';
import { makeSite, startPlume, waitFor, alive, type Site } from './process-lib.js';

function request(port: number, p: string, body?: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method: body === undefined ? 'GET' : 'POST', agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
    });
    req.setTimeout(20000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

const CT = "printf 'Content-Type: text/plain\\n\\n'\n";
const SCRIPTS: Record<string, [string, number]> = {
  'env.cgi': [`#!/bin/sh\n${CT}env\necho "argc=$# argv=$*"\npwd\n`, 0o755],
  'echo.cgi': ["#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\n\\n'\ncat\n", 0o755],
  'err.cgi': [`#!/bin/sh\necho "first problem" >&2\n${CT}echo out\necho "second problem" >&2\n`, 0o755],
  'noexec.cgi': [`#!/bin/sh\n${CT}echo never\n`, 0o644],
  'noshebang.cgi': [`${CT}echo "sh ran me"\n`, 0o755],
  'nph-raw.cgi': ["#!/bin/sh\nprintf 'HTTP/1.0 299 Fine\\r\\nContent-Type: text/plain\\r\\n\\r\\nnph body\\n'\n", 0o755],
  'early.cgi': [`#!/bin/sh\n${CT}echo "did not read"\n`, 0o755],
  'parent.cgi': [`#!/bin/sh\n${CT}echo "$PPID"\n`, 0o755],
};

interface Run {
  answers: Map<string, { status: number; body: Buffer }>;
  log: string;
  parent: number;
  spawner: { cmdline: string; ppid: number; dir: string | null } | null;
  workers: number[];
}

const BIG = Buffer.alloc(300 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789\n');

async function serve(site: Site, spawnerOff: boolean): Promise<Run> {
  fs.writeFileSync(site.errorLog, '');
  const pidFile = path.join(site.dir, 'scratch', `hang-${spawnerOff ? 'off' : 'on'}.pid`);
  fs.writeFileSync(path.join(site.dir, 'cgi-bin', 'hang.cgi'), `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 60\n`, { mode: 0o755 });
  if (spawnerOff) process.env.PLUME_CGI_SPAWNER_OFF = '1';
  const srv = await startPlume(site);
  delete process.env.PLUME_CGI_SPAWNER_OFF;
  const answers = new Map<string, { status: number; body: Buffer }>();
  let spawner: Run['spawner'] = null;
  let parent = 0;
  let workers: number[] = [];
  try {
    answers.set('env', await request(site.port, '/cgi-bin/env.cgi/extra/path?one+two%20three+%3Bfour'));
    answers.set('env-query', await request(site.port, '/cgi-bin/env.cgi?a=b&c=d'));
    answers.set('echo', await request(site.port, '/cgi-bin/echo.cgi', BIG));
    answers.set('err', await request(site.port, '/cgi-bin/err.cgi'));
    answers.set('noexec', await request(site.port, '/cgi-bin/noexec.cgi'));
    answers.set('noshebang', await request(site.port, '/cgi-bin/noshebang.cgi'));
    answers.set('nph', await request(site.port, '/cgi-bin/nph-raw.cgi'));
    answers.set('early', await request(site.port, '/cgi-bin/early.cgi', Buffer.alloc(1024, 'x')));
    answers.set('hang', await request(site.port, '/cgi-bin/hang.cgi'));
    const hung = Number(fs.readFileSync(pidFile, 'utf8'));
    await waitFor('the hung script to be stopped', () => !alive(hung), 10000);
    const p = await request(site.port, '/cgi-bin/parent.cgi');
    parent = Number(p.body.toString().trim());
    workers = srv.workers();
    if (!spawnerOff) {
      spawner = {
        cmdline: fs.readFileSync(`/proc/${parent}/cmdline`, 'latin1'),
        ppid: Number(/^PPid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${parent}/status`, 'latin1'))![1]),
        dir: listeningDir(parent),
      };
    }
    await waitFor('the log lines', () => fs.readFileSync(site.errorLog, 'utf8').includes('Script timed out'), 10000);
  } finally {
    await srv.stop();
  }
  return { answers, log: fs.readFileSync(site.errorLog, 'utf8'), parent, spawner, workers };
}

/** The directory of the unix socket a process listens on (its descriptors' inodes, looked up
 *  in /proc/net/unix). */
function listeningDir(pid: number): string | null {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
    if (m) inodes.add(m[1]!);
  }
  for (const line of fs.readFileSync('/proc/net/unix', 'latin1').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 8 && inodes.has(f[6]!) && f[7]!.includes('plume-cgi-')) return path.dirname(f[7]!);
  }
  return null;
}

/** The error log's lines about the scripts, without their time, pid and client port. Not
 *  AH02651: whether a body written to a script that exits without reading it fails (EPIPE)
 *  depends on whether the script has exited by then, with pipes as in httpd. */
function scriptLines(log: string): string[] {
  return log.split('\n').filter((l) => /\[cgi:/.test(l) && !l.includes('AH02651'))
    .map((l) => l.replace(/^\[[^\]]*\] /, '').replace(/\[pid \d+(:tid \d+)?\] /, '').replace(/\[client [^\]]*\] /, ''))
    .sort();
}

test('scripts forked by the spawner answer and log as scripts spawned by the serving process', async () => {
  const site = await makeSite('cgi-spawner');
  fs.mkdirSync(path.join(site.dir, 'cgi-bin'), { mode: 0o755 });
  fs.mkdirSync(path.join(site.dir, 'scratch'), { mode: 0o777 });
  fs.chmodSync(path.join(site.dir, 'scratch'), 0o777);
  for (const [name, [text, mode]] of Object.entries(SCRIPTS)) fs.writeFileSync(path.join(site.dir, 'cgi-bin', name), text, { mode });
  site.write([
    'LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so',
    'LoadModule cgi_module /usr/lib/apache2/modules/mod_cgi.so',
    'LoadModule env_module /usr/lib/apache2/modules/mod_env.so',
    `ScriptAlias /cgi-bin/ "${site.dir}/cgi-bin/"`,
    'CGIScriptTimeout 1',
    'SetEnv ZED last',
    'SetEnv ALPHA first',
  ]);
  try {
    const off = await serve(site, true);
    const on = await serve(site, false);
    for (const [name, a] of off.answers) {
      const b = on.answers.get(name)!;
      assert.equal(b.status, a.status, name);
      // REMOTE_PORT is the client's, new on each connection.
      const norm = (x: Buffer): string => x.toString('latin1').replace(/^REMOTE_PORT=\d+$/m, 'REMOTE_PORT=');
      assert.equal(norm(b.body), norm(a.body), name);
    }
    const env = on.answers.get('env')!.body.toString('latin1');
    assert.match(env, /^argc=3 argv=one two three \\;four$/m);
    assert.match(env, new RegExp(`^${site.dir}/cgi-bin$`, 'm'));
    assert.ok(env.indexOf('ZED=last') < env.indexOf('ALPHA=first'), 'the environment keeps its order');
    assert.ok(on.answers.get('echo')!.body.equals(BIG));
    assert.equal(on.answers.get('noexec')!.status, 500);
    assert.equal(on.answers.get('hang')!.status, 504);
    assert.equal(on.answers.get('nph')!.status, 299);
    assert.equal(on.answers.get('nph')!.body.toString(), 'nph body\n');
    assert.deepEqual(scriptLines(on.log), scriptLines(off.log));
    const lines = scriptLines(on.log).join('\n');
    assert.match(lines, /AH01215: stderr from \S+err\.cgi: first problem/);
    assert.match(lines, /AH01215: stderr from \S+err\.cgi: second problem/);
    assert.match(lines, /AH01215: stderr from \S+noexec\.cgi: \(13\)Permission denied: exec of '\S+noexec\.cgi' failed/);
    assert.match(lines, /AH01220: Timeout waiting for output from CGI script \S+hang\.cgi/);
    // Spawned from Node, the serving process is the parent; otherwise the spawner, its child.
    assert.ok(off.workers.includes(off.parent));
    assert.ok(on.spawner !== null);
    assert.match(on.spawner.cmdline, /^plume-cgi-spawner/);
    assert.ok(on.workers.includes(on.spawner.ppid));
    await waitFor('the spawner to end with its serving process', () => !alive(on.parent), 10000);
    assert.ok(on.spawner.dir !== null && on.spawner.dir.includes('plume-cgi-'));
    assert.equal(fs.existsSync(on.spawner.dir), false, 'its socket directory is removed');
  } finally {
    site.remove();
  }
});
