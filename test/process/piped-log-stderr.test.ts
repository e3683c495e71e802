// Piped logs' stderr (issue 19, item 6): as in Apache, what a piped log program writes to its
// stderr lands in the main ErrorLog (httpd starts its loggers with its own stderr, which is the
// error log by then), not on the terminal that started the server. Apache 2.4.71 with the same
// configuration (-X): `vhost-errorlog-stderr` and `custom-logger-stderr` in logs/error_log,
// nothing on its stderr.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { spawn } from 'node:child_process';
import { makeSite, startPlume, getOnce, waitFor, PLUME, type Running } from './process-lib.js';

const LOGGERS = [
  'CustomLog "|$echo custom-logger-stderr >&2; exec cat >/dev/null" common',
  'LogFormat "%h %l %u %t \\"%r\\" %>s %b" common',
  '<VirtualHost 127.0.0.1:*>',
  '  ErrorLog "|$echo vhost-errorlog-stderr >&2; exec cat >/dev/null"',
  '</VirtualHost>',
];

function errorLogText(file: string): string {
  try { return fs.readFileSync(file, 'utf8'); } catch { return ''; }
}

test('piped loggers write their stderr into the main ErrorLog (-X)', { timeout: 60000 }, async () => {
  const site = await makeSite('pipestderr-x', LOGGERS);
  const proc = spawn(process.execPath, [PLUME, '-X', '-d', site.dir, '-f', site.conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  try {
    await waitFor('an answer', async () => { try { return (await getOnce(site.port)).status === 200; } catch { return false; } }, 20000);
    await waitFor('both loggers\' stderr in the error log', () => {
      const t = errorLogText(site.errorLog);
      return t.includes('custom-logger-stderr\n') && t.includes('vhost-errorlog-stderr\n');
    }, 20000);
    assert.doesNotMatch(out, /logger-stderr|errorlog-stderr/);
  } finally {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await exited;
    site.remove();
  }
});

test('piped loggers shared with worker processes write their stderr into the main ErrorLog', { timeout: 60000 }, async () => {
  const site = await makeSite('pipestderr-workers', ['StartServers 1', ...LOGGERS]);
  let srv: Running | undefined;
  try {
    srv = await startPlume(site, { workers: 1 });
    await waitFor('both loggers\' stderr in the error log', () => {
      const t = errorLogText(site.errorLog);
      return t.includes('custom-logger-stderr\n') && t.includes('vhost-errorlog-stderr\n');
    }, 20000);
    assert.doesNotMatch(srv.output(), /logger-stderr|errorlog-stderr/);
  } finally {
    await srv?.stop();
    site.remove();
  }
});
