// Starts a server with httpd's command line in the foreground (-X) on a ServerRoot holding
// httpd.conf, for the FastCGI/SCGI/uwsgi process tests: bin/plume, or /usr/sbin/apache2 for
// the recorder and the live comparison. Waits until the port answers; stops by PID.

import * as net from 'node:net';
import { spawn } from 'node:child_process';
import { PLUME } from './process-lib.js';

export interface Started {
  readonly pid: number;
  output(): string;
  stop(): Promise<void>;
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

export async function startServerCommand(server: 'plume' | string, root: string, port: number): Promise<Started> {
  const [cmd, pre] = server === 'plume' ? [process.execPath, [PLUME]] : [server, []];
  const proc = spawn(cmd, [...pre, '-X', '-d', root, '-f', `${root}/httpd.conf`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  const s: Started = {
    pid: proc.pid!,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      process.kill(proc.pid!, 'SIGTERM');
      const k = setTimeout(() => { try { process.kill(proc.pid!, 'SIGKILL'); } catch { /* gone */ } }, 10000);
      await exited;
      clearTimeout(k);
    },
  };
  const end = Date.now() + 20000;
  while (!(await connects(port))) {
    if (proc.exitCode !== null) throw new Error(`${server} exited (${proc.exitCode}):\n${out}`);
    if (Date.now() > end) { await s.stop(); throw new Error(`${server} did not listen on ${port} in 20 s:\n${out}`); }
    await new Promise((r) => setTimeout(r, 50));
  }
  return s;
}
