// Real application servers for the proxy tests, started on loopback and stopped by PID:
// Debian's PHP-FPM (a pool on TCP and one on a unix socket), a uwsgi-core application
// (python3 plugin), the SCGI server and the FastCGI echo responder of test/fixtures/proxy-fcgi,
// and pyftpdlib as an FTP server (test/fixtures/ftp).
// Each start waits for the server's own "ready" line, never a fixed delay.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { REPO, ROOT } from './process-lib.js';

export const FIXTURES = path.join(REPO, 'test/fixtures/proxy-fcgi');

export interface Backend {
  readonly pid: number;
  /** What it printed (stdout and stderr). */
  output(): string;
  stop(): Promise<void>;
}

/** The PHP-FPM binary Debian installs (php-fpm8.2 and the like), or undefined. */
export function phpFpmBinary(): string | undefined {
  let names: string[] = [];
  try { names = fs.readdirSync('/usr/sbin'); } catch { return undefined; }
  const found = names.filter((n) => /^php-fpm\d+\.\d+$/.test(n)).sort();
  return found.length > 0 ? path.join('/usr/sbin', found[found.length - 1]!) : undefined;
}

/** uwsgi-core with its python3 plugin, or undefined. */
export function uwsgiBinary(): string | undefined {
  if (!fs.existsSync('/usr/bin/uwsgi-core')) return undefined;
  try {
    if (!fs.readdirSync('/usr/lib/uwsgi/plugins').some((n) => /^python3\d*_plugin\.so$/.test(n))) return undefined;
  } catch { return undefined; }
  return '/usr/bin/uwsgi-core';
}

export function hasPython3(): boolean {
  return spawnSync('python3', ['-c', 'pass']).status === 0;
}

/** Spawns in its own process group and resolves once `ready` matches the output. */
function launch(cmd: string, args: readonly string[], ready: RegExp, stopSignal: NodeJS.Signals, cwd: string): Promise<Backend> {
  return new Promise((resolve, reject) => {
    const proc: ChildProcess = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let settled = false;
    const timer = setTimeout(() => fail(new Error(`${path.basename(cmd)} did not get ready in 20 s:\n${out}`)), 20000);
    const exited = new Promise<void>((res) => proc.once('exit', () => res()));
    const b: Backend = {
      pid: proc.pid!,
      output: () => out,
      async stop() {
        if (proc.exitCode !== null || proc.signalCode !== null) return;
        try { process.kill(proc.pid!, stopSignal); } catch { return; }
        const k = setTimeout(() => { try { process.kill(-proc.pid!, 'SIGKILL'); } catch { /* gone */ } }, 10000);
        await exited;
        clearTimeout(k);
      },
    };
    const fail = (e: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void b.stop().then(() => reject(e));
    };
    const onData = (d: Buffer): void => {
      out += d.toString('latin1');
      if (!settled && ready.test(out)) {
        settled = true;
        clearTimeout(timer);
        resolve(b);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('error', (e) => fail(e));
    proc.once('exit', (code, sig) => fail(new Error(`${path.basename(cmd)} exited (${code ?? sig}) before it was ready:\n${out}`)));
  });
}

/** PHP-FPM with a TCP pool on 127.0.0.1:`port` and, when `socket` is given, a second pool on
 *  that unix socket; configuration and pid file under `dir`. */
export function startPhpFpm(dir: string, port: number, socket?: string, children = 2): Promise<Backend> {
  const bin = phpFpmBinary();
  if (bin === undefined) throw new Error('php-fpm is not installed');
  fs.mkdirSync(dir, { recursive: true });
  // As root, the pools run as root too (-R allows it): the tests' document roots are
  // private temporary directories.
  const who = ROOT ? ['user = root', 'group = root'] : [];
  const pool = (name: string, listen: string, n: number): string[] => [
    `[${name}]`, ...who, `listen = ${listen}`, 'listen.mode = 0666', 'pm = static', `pm.max_children = ${n}`,
    'catch_workers_output = yes', 'decorate_workers_output = no', 'clear_env = yes', 'php_admin_flag[expose_php] = off',
  ];
  const conf = [
    '[global]', `pid = ${dir}/php-fpm.pid`, `error_log = ${dir}/php-fpm.log`, 'daemonize = no', 'log_level = notice',
    ...pool('tcp', `127.0.0.1:${port}`, children),
    ...(socket === undefined ? [] : pool('sock', socket, 1)),
  ];
  fs.writeFileSync(path.join(dir, 'php-fpm.conf'), conf.join('\n') + '\n');
  const args = ['-F', '-O', '-n', '-y', path.join(dir, 'php-fpm.conf'), '-p', dir];
  if (ROOT) args.push('-R');
  return launch(bin, args, /ready to handle connections/, 'SIGQUIT', dir);
}

/** A uwsgi-core application (`wsgi`, a file of test/fixtures/proxy-fcgi) on 127.0.0.1:`port`. */
export function startUwsgi(dir: string, port: number, wsgi = 'wsgi_env.py'): Promise<Backend> {
  const bin = uwsgiBinary();
  if (bin === undefined) throw new Error('uwsgi-core with uwsgi-plugin-python3 is not installed');
  const args = ['--plugin', 'python3', '--uwsgi-socket', `127.0.0.1:${port}`, '--wsgi-file', path.join(FIXTURES, wsgi),
    '--master', '--processes', '1', '--need-app', '--die-on-term', '--disable-logging'];
  if (ROOT) args.push('--uid', 'nobody', '--gid', 'nogroup');
  return launch(bin, args, /spawned uWSGI worker 1/, 'SIGTERM', dir);
}

/** The SCGI server of test/fixtures/proxy-fcgi on 127.0.0.1:`port`. */
export function startScgi(dir: string, port: number): Promise<Backend> {
  return launch('python3', ['-u', path.join(FIXTURES, 'scgi_server.py'), String(port)], /READY/, 'SIGTERM', dir);
}

/** The FastCGI echo responder on 127.0.0.1:`where` (a port) or a unix socket path. */
export function startFcgiEcho(dir: string, where: number | string): Promise<Backend> {
  return launch('python3', ['-u', path.join(FIXTURES, 'fcgi_echo.py'), String(where)], /READY/, 'SIGTERM', dir);
}

/** Debian's pyftpdlib (python3-pyftpdlib) as a real FTP server on 127.0.0.1:`port`, serving
 *  `root` (test/fixtures/ftp/server.py: users anonymous and alice/secret; `options`, a JSON
 *  file, may turn anonymous, EPSV or PASV off). Debian's /usr/bin/python3, which has the
 *  package, whatever python3 comes first on PATH. */
export function startFtp(dir: string, port: number, root: string, options?: string): Promise<Backend> {
  const args = ['-u', path.join(REPO, 'test/fixtures/ftp/server.py'), String(port), root];
  if (options !== undefined) args.push(options);
  return launch(FTP_PYTHON, args, /^ready$/m, 'SIGTERM', dir);
}

/** The interpreter that has pyftpdlib. */
export const FTP_PYTHON = '/usr/bin/python3';

/** Whether the FTP server can run (python3-pyftpdlib installed). */
export function hasPyftpdlib(): boolean {
  return spawnSync(FTP_PYTHON, ['-c', 'import pyftpdlib'], { stdio: 'ignore' }).status === 0;
}

/** The scripted HTTP/1.1 backend of test/fixtures/proxy-http on 127.0.0.1:`port`. */
export function startHttpScript(dir: string, port: number): Promise<Backend> {
  return launch(process.execPath, [path.join(REPO, 'test/fixtures/proxy-http/http_backend.mjs'), String(port)], /READY/, 'SIGTERM', dir);
}
