// A real OpenLDAP server (Debian's slapd) for the LDAP tests: a temporary slapd.conf with an
// mdb database under `dir`, loaded with slapadd from test/fixtures/ldap/base.ldif (users alice,
// bob, carol; groups staff, devs, everyone (nested), unixers (posixGroup)), listening on
// 127.0.0.1:port. Ready once its port accepts a connection; stopped by PID.

import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { REPO, waitFor } from './process-lib.js';

export const SLAPD = '/usr/sbin/slapd';
export const LDIF = path.join(REPO, 'test/fixtures/ldap/base.ldif');
export const BASE_DN = 'dc=example,dc=com';
export const ROOT_DN = 'cn=admin,dc=example,dc=com';
export const ROOT_PW = 'secret';

export function hasSlapd(): boolean {
  return fs.existsSync(SLAPD) && fs.existsSync('/usr/sbin/slapadd');
}

export interface Slapd {
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  output(): string;
  stop(): Promise<void>;
}

function writeConf(dir: string): string {
  const db = path.join(dir, 'db');
  fs.mkdirSync(db, { recursive: true });
  const conf = path.join(dir, 'slapd.conf');
  fs.writeFileSync(conf, [
    'include /etc/ldap/schema/core.schema',
    'include /etc/ldap/schema/cosine.schema',
    'include /etc/ldap/schema/inetorgperson.schema',
    'include /etc/ldap/schema/nis.schema',
    `pidfile ${path.join(dir, 'slapd.pid')}`,
    `argsfile ${path.join(dir, 'slapd.args')}`,
    'modulepath /usr/lib/ldap',
    'moduleload back_mdb',
    'database mdb',
    'maxsize 10485760',
    `suffix "${BASE_DN}"`,
    `rootdn "${ROOT_DN}"`,
    `rootpw ${ROOT_PW}`,
    `directory ${db}`,
    'access to attrs=userPassword by anonymous auth by self read by * none',
    'access to * by * read',
    '',
  ].join('\n'));
  return conf;
}

function loadFixture(conf: string): void {
  const add = spawnSync('/usr/sbin/slapadd', ['-f', conf, '-l', LDIF], { encoding: 'utf8' });
  if (add.status !== 0) throw new Error(`slapadd failed: ${add.stderr}`);
}

/** Starts slapd in `dir` (created, and left for the caller to remove) on `port`. */
export async function startSlapd(dir: string, port: number): Promise<Slapd> {
  const loaded = fs.existsSync(path.join(dir, 'db/data.mdb'));
  const conf = writeConf(dir);
  // A restart on the same directory keeps the database loaded the first time.
  if (!loaded) loadFixture(conf);
  const url = `ldap://127.0.0.1:${port}/`;
  const proc = spawn(SLAPD, ['-d', '0', '-f', conf, '-h', url], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  const stop = async (): Promise<void> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    try { process.kill(proc.pid!, 'SIGTERM'); } catch { return; }
    const k = setTimeout(() => { try { process.kill(proc.pid!, 'SIGKILL'); } catch { /* gone */ } }, 5000);
    await exited;
    clearTimeout(k);
  };
  try {
    await waitFor(`slapd on ${port}`, () => {
      if (proc.exitCode !== null) throw new Error(`slapd exited: ${out}`);
      return new Promise<boolean>((res) => {
        const s = net.connect(port, '127.0.0.1');
        s.once('connect', () => { s.destroy(); res(true); });
        s.once('error', () => res(false));
      });
    }, 20000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { pid: proc.pid!, port, url, output: () => out, stop };
}
