// The PHP-FPM pool of the `php-fpm` benchmark scenario: Debian's php-fpm in the foreground
// with a pool of its own on a loopback port, started once for the whole run (every server
// talks to the same pool) and stopped by PID at the end.

import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface FpmPool {
  readonly port: number;
  readonly child: ChildProcess;
  readonly binary: string;
}

/** Debian's php-fpm binary (php-fpm8.2 and the like), or null. */
export function phpFpmBinary(): string | null {
  let names: string[] = [];
  try {
    names = fs.readdirSync('/usr/sbin');
  } catch {
    return null;
  }
  const found = names.filter((n) => /^php-fpm\d+\.\d+$/.test(n)).sort();
  return found.length > 0 ? path.join('/usr/sbin', found[found.length - 1]!) : null;
}

/** Starts the pool (`children` static workers) under `dir`; resolves when it is ready. */
export function startFpm(dir: string, port: number, children: number): Promise<FpmPool> {
  const bin = phpFpmBinary();
  if (bin === null) return Promise.reject(new Error('php-fpm is not installed (apt-get install php-fpm)'));
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const root = process.getuid?.() === 0;
  const conf = [
    '[global]', `pid = ${dir}/php-fpm.pid`, `error_log = ${dir}/php-fpm.log`, 'daemonize = no',
    '[bench]', ...(root ? ['user = nobody', 'group = nogroup'] : []), `listen = 127.0.0.1:${port}`, 'listen.backlog = 511',
    'pm = static', `pm.max_children = ${children}`, 'pm.max_requests = 0',
  ];
  fs.writeFileSync(path.join(dir, 'php-fpm.conf'), conf.join('\n') + '\n');
  const args = ['-F', '-O', '-y', path.join(dir, 'php-fpm.conf'), '-p', dir, ...(root ? ['-R'] : [])];
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`php-fpm not ready after 20 s: ${out.trim()}`)); }, 20000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (/ready to handle connections/.test(out)) {
        clearTimeout(timer);
        resolve({ port, child, binary: bin });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, sig) => { clearTimeout(timer); reject(new Error(`php-fpm exited (${code ?? sig}): ${out.trim()}`)); });
  });
}
