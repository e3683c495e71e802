// mod_cgi and mod_cgid run for real under bin/plume: the ScriptLog of failed scripts (its
// length limit and the posted data it keeps), mod_cgid's own log identity, its daemon started
// again when it dies, and a script that hangs past CGIScriptTimeout is answered with 504 and
// then stopped, not left running.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as http from 'node:http';
import { execFileSync } from 'node:child_process';
import { makeSite, startPlume, waitFor, alive } from './process-lib.js';

function request(port: number, p: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method: body === undefined ? 'GET' : 'POST', agent: false }, (res) => {
      let b = '';
      res.setEncoding('latin1');
      res.on('data', (c: string) => { b += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
    });
    req.setTimeout(15000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/** A directory the workers (User nobody when the tests run as root) can write to, as the
 *  ScriptLog must be: httpd opens it from the serving child too. */
function scratch(dir: string): string {
  const d = path.join(dir, 'scratch');
  fs.mkdirSync(d, { recursive: true });
  fs.chmodSync(d, 0o777);
  return d;
}

function script(dir: string, name: string, text: string): void {
  fs.mkdirSync(path.join(dir, 'cgi-bin'), { recursive: true, mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'cgi-bin', name), text, { mode: 0o755 });
}

test('ScriptLog records failed scripts up to ScriptLogLength, with ScriptLogBuffer bytes of the POST body', async () => {
  const site = await makeSite('cgi-log');
  script(site.dir, 'bogus.cgi', '#!/bin/sh\ncat >/dev/null\nprintf "no headers here"\necho "on stderr" >&2\n');
  script(site.dir, 'ok.cgi', '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\nfine\\n"\n');
  site.write([
    'LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so',
    'LoadModule cgi_module /usr/lib/apache2/modules/mod_cgi.so',
    `ScriptAlias /cgi-bin/ "${site.dir}/cgi-bin/"`,
    'ScriptLog scratch/cgi_log', 'ScriptLogLength 600', 'ScriptLogBuffer 10',
  ]);
  const log = path.join(scratch(site.dir), 'cgi_log');
  const srv = await startPlume(site);
  try {
    assert.equal((await request(site.port, '/cgi-bin/ok.cgi')).status, 200);
    assert.equal(fs.existsSync(log), false, 'a script that works is not logged');
    assert.equal((await request(site.port, '/cgi-bin/bogus.cgi?x=1', 'abcdefghijklmnop')).status, 500);
    const text = fs.readFileSync(log, 'latin1');
    assert.match(text, /^%% \[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] POST \/cgi-bin\/bogus\.cgi\?x=1 HTTP\/1\.1\n/);
    assert.ok(text.includes(`%% 500 ${site.dir}/cgi-bin/bogus.cgi\n%request\n`), text);
    assert.ok(text.includes('\n\nabcdefghij\n%response\nno headers here\n'), text);
    // stderr is logged as it comes: an %error entry while the headers are read, or the
    // %stderr part of the failed script's entry when it comes after the output ended.
    assert.ok(/%error\non stderr\n|%stderr\non stderr\n/.test(text), text);
    // Grows until it is over ScriptLogLength, then stays as it is.
    for (let i = 0; i < 5; i++) await request(site.port, '/cgi-bin/bogus.cgi');
    const size = fs.statSync(log).size;
    assert.ok(size > 600);
    await request(site.port, '/cgi-bin/bogus.cgi');
    assert.equal(fs.statSync(log).size, size);
    await waitFor('the error log line', () => fs.readFileSync(site.errorLog, 'utf8').includes('End of script output'), 10000);
    const errors = fs.readFileSync(site.errorLog, 'utf8');
    assert.match(errors, /\[cgi:error\] .*End of script output before headers: bogus\.cgi/);
  } finally {
    await srv.stop();
    site.remove();
  }
});

test('mod_cgid: the daemon on ScriptSock runs the scripts; its own log identity; a hung script gets 504 and is stopped afterwards', async () => {
  const site = await makeSite('cgid');
  const pidFile = path.join(scratch(site.dir), 'hang.pid');
  script(site.dir, 'hang.cgi', `#!/bin/sh\necho $$ > ${pidFile}\necho "still working" >&2\nexec sleep 60\n`);
  // The script reports its parent: the daemon, not a serving process.
  script(site.dir, 'who.cgi', '#!/bin/sh\nread body\nprintf "Content-Type: text/plain\\n\\nppid=%s uid=%s body=%s\\n" "$PPID" "$(id -u)" "$body"\n');
  site.write([
    'LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so',
    'LoadModule cgid_module /usr/lib/apache2/modules/mod_cgid.so',
    `ScriptAlias /cgi-bin/ "${site.dir}/cgi-bin/"`,
    'ScriptSock logs/cgisock',
    'CGIDScriptTimeout 1',
  ]);
  const srv = await startPlume(site);
  const sock = path.join(site.dir, 'logs', `cgisock.${srv.pid}`);
  try {
    // The socket, as httpd makes it: the parent's pid in its name, mode 0700, owned by User.
    const st = fs.statSync(sock);
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o700);
    if (process.getuid?.() === 0) assert.equal(st.uid, Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })));
    const who = await request(site.port, '/cgi-bin/who.cgi', 'posted\n');
    assert.equal(who.status, 200);
    const m = /^ppid=(\d+) uid=(\d+) body=posted$/m.exec(who.body);
    assert.ok(m, who.body);
    const daemonPid = Number(m[1]);
    assert.notEqual(daemonPid, srv.pid);
    assert.ok(!srv.workers().filter((w) => w !== daemonPid).includes(daemonPid));
    assert.match(fs.readFileSync(`/proc/${daemonPid}/cmdline`, 'latin1'), /cgid-daemon\.js/);
    assert.equal(Number(fs.readFileSync(`/proc/${daemonPid}/status`, 'latin1').match(/^PPid:\s+(\d+)/m)![1]), srv.pid);
    // A daemon that dies is started again, as httpd's cgid_maint does; the serving processes
    // reconnect to the new one.
    process.kill(daemonPid, 'SIGKILL');
    await waitFor('the daemon restarted', () => fs.readFileSync(site.errorLog, 'utf8').includes('AH01239: cgid daemon process died, restarting'), 10000);
    assert.match(fs.readFileSync(site.errorLog, 'utf8'), /\[cgid:error\] \[pid \d+(:tid \d+)?\] AH01239: cgid daemon process died, restarting/);
    const again = await request(site.port, '/cgi-bin/who.cgi', 'again\n');
    assert.equal(again.status, 200, again.body);
    const m2 = /^ppid=(\d+) uid=(\d+) body=again$/m.exec(again.body);
    assert.ok(m2, again.body);
    assert.notEqual(Number(m2[1]), daemonPid);
    assert.equal(m2[2], m[2]);
    const res = await request(site.port, '/cgi-bin/hang.cgi');
    assert.equal(res.status, 504);
    assert.match(res.body, /Gateway Timeout/);
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    await waitFor('the hung script to be stopped', () => !alive(pid), 10000);
    await waitFor('the error log lines', () => fs.readFileSync(site.errorLog, 'utf8').includes('Script timed out'), 10000);
    const errors = fs.readFileSync(site.errorLog, 'utf8');
    assert.match(errors, /\[cgid:error\] .*AH01215: stderr from .*hang\.cgi: still working/);
    assert.match(errors, /\[cgid:warn\] .*AH01220: Timeout waiting for output from CGI script .*hang\.cgi/);
    assert.match(errors, /\[cgid:error\] .*Script timed out before returning headers: hang\.cgi/);
    await srv.stop();
    assert.equal(fs.existsSync(sock), false, 'the socket is removed when the server stops');
  } finally {
    await srv.stop();
    site.remove();
  }
});

test('RLimitCPU, RLimitMEM and RLimitNPROC limit the scripts of their section: a script over its CPU time is killed (500, "End of script output"); exec failures are reported as without limits', async () => {
  const site = await makeSite('cgi-rlimit');
  const lim = path.join(site.dir, 'cgi-bin', 'lim');
  fs.mkdirSync(lim, { recursive: true, mode: 0o755 });
  const limits = '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\ngrep -E "^Max (cpu time|processes|address space) " /proc/self/limits\n';
  script(site.dir, 'free.cgi', limits);
  fs.writeFileSync(path.join(lim, 'show.cgi'), limits, { mode: 0o755 });
  fs.writeFileSync(path.join(lim, 'spin.cgi'), '#!/bin/sh\nwhile :; do :; done\n', { mode: 0o755 });
  fs.writeFileSync(path.join(lim, 'noexec.cgi'), '#!/bin/sh\necho never\n', { mode: 0o644 });
  site.write([
    'LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so',
    'LoadModule cgi_module /usr/lib/apache2/modules/mod_cgi.so',
    `ScriptAlias /cgi-bin/ "${site.dir}/cgi-bin/"`,
    `<Directory "${lim}">`,
    '    RLimitCPU 1 1',
    '    RLimitMEM 200000000 300000000',
    '    RLimitNPROC 500 max',
    '</Directory>',
  ]);
  const srv = await startPlume(site);
  try {
    const free = await request(site.port, '/cgi-bin/free.cgi');
    assert.equal(free.status, 200);
    assert.match(free.body, /^Max cpu time\s+unlimited\s+unlimited\s/m);
    const shown = await request(site.port, '/cgi-bin/lim/show.cgi');
    assert.equal(shown.status, 200);
    assert.match(shown.body, /^Max cpu time\s+1\s+1\s+seconds/m);
    assert.match(shown.body, /^Max address space\s+200000000\s+300000000\s+bytes/m);
    // "max" as the second argument is no number: the hard limit stays the server's.
    const hardNproc = /^Max processes\s+\S+\s+(\S+)/m.exec(free.body)![1];
    assert.match(shown.body, new RegExp(`^Max processes\\s+500\\s+${hardNproc}\\s+processes`, 'm'));
    const spin = await request(site.port, '/cgi-bin/lim/spin.cgi');
    assert.equal(spin.status, 500);
    assert.match(spin.body, /Internal Server Error/);
    const noexec = await request(site.port, '/cgi-bin/lim/noexec.cgi');
    assert.equal(noexec.status, 500);
    await waitFor('the error log lines', () => fs.readFileSync(site.errorLog, 'utf8').includes("noexec.cgi' failed"), 10000);
    const errors = fs.readFileSync(site.errorLog, 'utf8');
    assert.match(errors, /\[cgi:error\] .*End of script output before headers: spin\.cgi/);
    assert.match(errors, new RegExp(`\\[cgi:error\\] .*AH01215: stderr from ${lim}/noexec\\.cgi: \\(13\\)Permission denied: exec of '${lim}/noexec\\.cgi' failed`));
    assert.doesNotMatch(errors, /prlimit/);
  } finally {
    await srv.stop();
    site.remove();
  }
});
