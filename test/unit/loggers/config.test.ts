// mod_log_config directives through the real configuration reader: errors worded as Apache
// 2.4.71 words them (measured with `apache2 -t` / `apache2 -k start`), which logs a server
// writes to, nickname resolution, conditions, sinks.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import logConfig, {
  reopenAccessLogs, flushAccessLogs,
} from '../../../src/modules/loggers/mod_log_config.js';
import type { ConfigContext } from '../../../src/server/config/context.js';
import type { Request } from '../../../src/server/request/request.js';
import type { ServerRec } from '../../../src/server/server-rec.js';
import {
  load, tryLoad, configError, makeRequest, readLines, flushed, tempRoot, requestLine, type Logged,
} from './helpers.js';

type HookFn = (r: Request) => number;
const logTransaction = (logConfig.decl.hooks!.logTransaction as { fn: HookFn }).fn;

async function done(ctx: ConfigContext): Promise<void> {
  await logConfig.decl.configHooks?.cleanup?.(ctx);
}

/** Logs a GET for `uri` served by `server`. */
function serve(server: ServerRec, uri: string, setup?: (r: Request) => void): Logged[] {
  const { r, logs } = makeRequest({ server });
  requestLine(r, `GET ${uri} HTTP/1.1`);
  r.status = 200;
  setup?.(r);
  logTransaction(r);
  return logs;
}

function vhost(ctx: ConfigContext, name: string): ServerRec {
  const v = ctx.vhosts.find((s) => s.serverHostname === name);
  assert.ok(v, `vhost ${name}`);
  return v;
}

test('directive errors as Apache words them', async () => {
  assert.equal(await configError('CustomLog logs/x "%Z"'), 'Unrecognized LogFormat directive %Z');
  assert.equal(await configError('CustomLog logs/x "%{abc"'), 'Ran off end of LogFormat parsing args to some directive');
  assert.equal(await configError('CustomLog logs/x common env='), 'missing environment variable name');
  assert.equal(await configError('CustomLog logs/x common env=!'), 'missing environment variable name');
  assert.equal(await configError('CustomLog logs/x common ENV=foo'), '(no error)');
  assert.equal(await configError('CustomLog logs/x common foo'), 'error in condition clause');
  assert.equal(await configError('CustomLog logs/x common expr='), 'missing condition');
  assert.equal(await configError('CustomLog logs/x'),
    'CustomLog takes two or three arguments, a file name, a custom log format string or format name, and an optional "env=" or "expr=" clause (see docs)');
  assert.equal(await configError('CustomLog logs/x a b c'),
    'CustomLog takes two or three arguments, a file name, a custom log format string or format name, and an optional "env=" or "expr=" clause (see docs)');
  assert.equal(await configError('LogFormat "%Z" nick'), 'Unrecognized LogFormat directive %Z');
  assert.equal(await configError('LogFormat "%Z"'), 'Unrecognized LogFormat directive %Z');
  assert.equal(await configError('LogFormat'), 'LogFormat takes 1-2 arguments, a log format string (see docs) and an optional format name');
  assert.equal(await configError('LogFormat a b c'), 'LogFormat takes 1-2 arguments, a log format string (see docs) and an optional format name');
  assert.equal(await configError('TransferLog'), 'TransferLog takes one argument, the filename of the access log');
  assert.equal(await configError('BufferedLogs maybe'), 'BufferedLogs must be On or Off');
  assert.equal(await configError('<VirtualHost *:80>\nGlobalLog logs/x common\n</VirtualHost>'), 'GlobalLog cannot occur within <VirtualHost> section');
  assert.equal(await configError('GlobalLog logs/x common env=!'), 'missing environment variable name');
  assert.match(await configError('<Directory />\nCustomLog logs/x common\n</Directory>'), /^CustomLog not allowed/);
});

test('expr= conditions are parsed once and decide per request', async () => {
  assert.equal(await configError('CustomLog logs/x common "expr=%{REQUEST_URI} =~"'), 'syntax error, unexpected $end, expecting T_REGEX or T_REGEX_I');
  assert.equal(await configError('CustomLog logs/x common expr='), 'missing condition');
  const { ctx, root } = await load(`CustomLog logs/e.log "%U" "expr=%{REQUEST_URI} == '/yes'"\nCustomLog logs/b.log "%U" "expr=file('/nonexistent') == ''"`);
  serve(ctx.mainServer, '/yes');
  serve(ctx.mainServer, '/no');
  const logs = serve(ctx.mainServer, '/yes');
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/e.log')), ['/yes', '/yes']);
  assert.deepEqual(readLines(path.join(root, 'logs/b.log')), []);
  // The engine's own line (as httpd's ap_expr_exec logs it), then mod_log_config's.
  assert.deepEqual(logs.filter((l) => l.module === 'log_config').map((l) => l.message.replace(/from .*:(\d+) /, 'from F:$1 ')), [
    'Evaluation of expression from F:5 failed: Cannot open file /nonexistent',
    'AH00644: Error evaluating log condition: Cannot open file /nonexistent',
  ]);
  await done(ctx);
});

test('a log directory that does not exist stops the configuration check (AH02297, AH00014)', async () => {
  const root = tempRoot();
  const res = await tryLoad('CustomLog /nonexistent/x.log common\nCustomLog /etc/passwd/x.log common\nCustomLog logs/ok.log common', root);
  assert.equal(res.error, [
    `(2)No such file or directory: AH02297: Cannot access directory '/nonexistent/' for log file '/nonexistent/x.log' defined at ${root}/httpd.conf:4`,
    `(20)Not a directory: AH02297: Cannot access directory '/etc/passwd/' for log file '/etc/passwd/x.log' defined at ${root}/httpd.conf:5`,
    'AH00014: Configuration check failed',
  ].join('\n'));
  assert.equal(fs.existsSync(path.join(root, 'logs/ok.log')), false, 'no log is opened');
});

test('a log file that cannot be opened stops the start (AH00649, AH00015)', async () => {
  const res = await tryLoad('CustomLog /tmp common');
  assert.equal(res.error, 'AH00015: Unable to open logs');
  assert.ok(res.startup.some((l) => /^\[log_config:error\] \[pid \d+:tid \d+\] \(21\)Is a directory: AH00649: could not open transfer log file \/tmp\.$/.test(l)), res.startup.join('\n'));
  const pipe = await tryLoad('CustomLog "|/nonexistent/prog -x" common');
  assert.equal(pipe.error, "(2)No such file or directory: AH00104: unable to start piped log program '/nonexistent/prog -x'\nAH00015: Unable to open logs");
});

test('TransferLog uses the last LogFormat without nickname; relative paths are under ServerRoot', async () => {
  const { ctx, root } = await load('LogFormat "T: %m%%%U\\t[tab]"\nTransferLog logs/transfer_log\nCustomLog logs/inline_log "inline %>s %U"');
  serve(ctx.mainServer, '/a.txt');
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/transfer_log')), ['T: GET%/a.txt\t[tab]']);
  assert.deepEqual(readLines(path.join(root, 'logs/inline_log')), ['inline 200 /a.txt']);
  await done(ctx);
});

test('without LogFormat TransferLog writes the CLF; nicknames are case-insensitive, CLF is predefined', async () => {
  const { ctx, root } = await load('TransferLog logs/t.log\nCustomLog logs/c.log Combo\nLogFormat "%U combo" COMBO\nCustomLog logs/clf.log clf');
  serve(ctx.mainServer, '/x', (r) => { r.bytesSent = 5; r.requestTime = Date.UTC(2026, 10, 22, 2, 52, 28); r.startMicros = r.requestTime * 1000; });
  await flushed();
  const clf = readLines(path.join(root, 'logs/t.log'));
  assert.equal(clf.length, 1);
  assert.match(clf[0]!, /^127\.0\.0\.1 - - \[\d\d\/\w{3}\/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "GET \/x HTTP\/1\.1" 200 5$/);
  assert.deepEqual(readLines(path.join(root, 'logs/c.log')), ['/x combo']);
  assert.deepEqual(readLines(path.join(root, 'logs/clf.log')), clf);
  await done(ctx);
});

test('vhosts: own logs or the main server\'s; the main server\'s nickname wins; vhost default formats (measured)', async () => {
  const { ctx, root } = await load([
    'LogFormat "MAIN %U %v" nick',
    'CustomLog logs/q.log nick',
    'TransferLog logs/q2.log',
    '<VirtualHost *:18080>', 'ServerName main.test', '</VirtualHost>',
    '<VirtualHost *:18080>', 'ServerName v1.test', 'LogFormat "V1 %U %v" nick', 'LogFormat "V1DEF %U %v"', '</VirtualHost>',
    '<VirtualHost *:18080>', 'ServerName v2.test', 'CustomLog logs/v2.log nick', '</VirtualHost>',
    'LogFormat "MAINDEF %U %v"',
  ].join('\n'));
  for (const name of ['main.test', 'v1.test', 'v2.test']) serve(vhost(ctx, name), '/index.html');
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/q.log')), ['MAIN /index.html main.test', 'MAIN /index.html v1.test']);
  assert.deepEqual(readLines(path.join(root, 'logs/q2.log')), ['MAINDEF /index.html main.test', 'V1DEF /index.html v1.test']);
  assert.deepEqual(readLines(path.join(root, 'logs/v2.log')), ['MAIN /index.html v2.test']);
  await done(ctx);
});

test('a main-server log naming a vhost-only nickname takes the first-defined vhost\'s format (measured)', async () => {
  const { ctx, root } = await load([
    'CustomLog logs/q.log nick2',
    '<VirtualHost *:18080>', 'ServerName main.test', '</VirtualHost>',
    '<VirtualHost *:18080>', 'ServerName v1.test', 'LogFormat "V1 %U %v" nick2', '</VirtualHost>',
    '<VirtualHost *:18080>', 'ServerName v2.test', 'LogFormat "V2 %U %v" nick2', '</VirtualHost>',
  ].join('\n'));
  for (const name of ['main.test', 'v1.test', 'v2.test']) serve(vhost(ctx, name), '/index.html');
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/q.log')),
    ['V1 /index.html main.test', 'V1 /index.html v1.test', 'V1 /index.html v2.test']);
  await done(ctx);
});

test('GlobalLog: vhosts with their own logs still write to it', async () => {
  const { ctx, root } = await load([
    'GlobalLog logs/g.log "G %v %U"',
    'CustomLog logs/main.log "M %v %U"',
    '<VirtualHost *:18080>', 'ServerName own.test', 'CustomLog logs/own.log "O %v %U"', '</VirtualHost>',
    '<VirtualHost *:18080>', 'ServerName none.test', '</VirtualHost>',
  ].join('\n'));
  serve(ctx.mainServer, '/a');
  serve(vhost(ctx, 'own.test'), '/b');
  serve(vhost(ctx, 'none.test'), '/c');
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/g.log')), ['G www.example.test /a', 'G own.test /b', 'G none.test /c']);
  assert.deepEqual(readLines(path.join(root, 'logs/main.log')), ['M www.example.test /a', 'M none.test /c']);
  assert.deepEqual(readLines(path.join(root, 'logs/own.log')), ['O own.test /b']);
  await done(ctx);
});

test('env= conditions read the original request\'s environment, case-insensitively (measured)', async () => {
  const { ctx, root } = await load('CustomLog logs/c.log "%U %>U %{LOGME}e %{REDIRECT_LOGME}e" env=LOGME\nCustomLog logs/n.log "%U" env=!nolog');
  const { r: orig } = makeRequest({ server: ctx.mainServer });
  requestLine(orig, 'GET /nothere HTTP/1.1');
  orig.status = 404;
  orig.subprocessEnv.set('LOGME', '1');
  const { r: fin } = makeRequest({ server: ctx.mainServer });
  fin.uri = '/err.html';
  fin.status = 404;
  fin.subprocessEnv.set('REDIRECT_LOGME', '1');
  orig.next = fin;
  fin.prev = orig;
  logTransaction(fin);
  serve(ctx.mainServer, '/plain');
  serve(ctx.mainServer, '/quiet', (r) => r.subprocessEnv.set('NoLog', ''));
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/c.log')), ['/nothere /err.html - 1']);
  assert.deepEqual(readLines(path.join(root, 'logs/n.log')), ['/nothere', '/plain']);
  await done(ctx);
});

test('logs naming the same file share one sink and keep their order', async () => {
  const { ctx, root } = await load(`CustomLog logs/same.log "one %U"\nCustomLog ${'logs/../logs/same.log'} "two %U"`);
  serve(ctx.mainServer, '/a');
  serve(ctx.mainServer, '/b');
  const [a, b] = logConfig.server(ctx.mainServer).configLogs;
  assert.equal(a!.sink, b!.sink);
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/same.log')), ['one /a', 'two /a', 'one /b', 'two /b']);
  await done(ctx);
});

test('BufferedLogs On holds lines until flushed', async () => {
  const { ctx, root } = await load('BufferedLogs On\nCustomLog logs/buf.log "%U"');
  serve(ctx.mainServer, '/a');
  await flushed();
  assert.deepEqual(readLines(path.join(root, 'logs/buf.log')), []);
  flushAccessLogs();
  assert.deepEqual(readLines(path.join(root, 'logs/buf.log')), ['/a']);
  await done(ctx);
  // The next configuration read starts unbuffered again.
  const next = await load('CustomLog logs/unbuf.log "%U"');
  serve(next.ctx.mainServer, '/b');
  await flushed();
  assert.deepEqual(readLines(path.join(next.root, 'logs/unbuf.log')), ['/b']);
  await done(next.ctx);
});

test('reopenAccessLogs reopens the files (log rotation)', async () => {
  const { ctx, root } = await load('CustomLog logs/rot.log "%U"');
  const file = path.join(root, 'logs/rot.log');
  serve(ctx.mainServer, '/before');
  await flushed();
  fs.renameSync(file, file + '.1');
  serve(ctx.mainServer, '/rotated');
  await flushed();
  reopenAccessLogs();
  serve(ctx.mainServer, '/after');
  await flushed();
  assert.deepEqual(readLines(file + '.1'), ['/before', '/rotated']);
  assert.deepEqual(readLines(file), ['/after']);
  await done(ctx);
});

test('piped logs: "|$command" through the shell', async () => {
  const root = tempRoot();
  const out = path.join(root, 'logs/piped.log');
  const { ctx } = await load(`CustomLog "|$cat >> ${out}" "%U piped"`, root);
  serve(ctx.mainServer, '/p');
  await flushed();
  await done(ctx);
  for (const deadline = Date.now() + 20000; readLines(out).length === 0 && Date.now() < deadline;) await new Promise((res) => setTimeout(res, 20));
  assert.deepEqual(readLines(out), ['/p piped']);
});
