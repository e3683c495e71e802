// `plume htpasswd` and `plume htdbm` against Apache's htpasswd and htdbm (apache2-utils):
// every invocation runs through both, in twin directories holding the same files, and must
// give the same exit status, stdout, stderr and files (salted hashes normalised; each hash is
// checked with the other side's verifier instead). Skipped where apache2-utils is absent.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { htpasswdMain } from '../../../src/cli/htpasswd.js';
import { htdbmMain } from '../../../src/cli/htdbm.js';
import type { Output, PasswordInput } from '../../../src/cli/passwd-common.js';
import { Sdbm } from '../../../src/lib/dbm/index.js';
import { validatePassword } from '../../../src/lib/passwords/index.js';
import { tempDir } from '../../temp.js';

const HTPASSWD = '/usr/bin/htpasswd';
const HTDBM = '/usr/bin/htdbm';
const haveUtils = fs.existsSync(HTPASSWD) && fs.existsSync(HTDBM) && fs.existsSync('/usr/bin/setsid');

interface Outcome { code: number; out: string; err: string; files: Record<string, string> }

/** Salted hashes vary from run to run: replaced by their kind. */
function normalise(s: string): string {
  return s
    .replace(/\$apr1\$[./0-9A-Za-z]{0,8}\$[./0-9A-Za-z]{22}/g, '<apr1>')
    .replace(/\$2y\$[0-9]{2}\$[./0-9A-Za-z]{53}/g, '<bcrypt>')
    .replace(/\$5\$(rounds=[0-9]+\$)?[./0-9A-Za-z]{0,16}\$[./0-9A-Za-z]{43}/g, (m, r: string | undefined) => `<sha256${r ? ' ' + r : ''}>`)
    .replace(/\$6\$(rounds=[0-9]+\$)?[./0-9A-Za-z]{0,16}\$[./0-9A-Za-z]{86}/g, (m, r: string | undefined) => `<sha512${r ? ' ' + r : ''}>`)
    .replace(/(^|:)[./0-9A-Za-z]{13}(?=\n|$|:)/gm, '$1<des>');
}

function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, f);
    if (!fs.statSync(p).isFile()) continue;
    if (f.endsWith('.pag')) {
      // SDBM: the records, in APR's listing order.
      const db = Sdbm.fromBuffers(fs.readFileSync(p), fs.readFileSync(p.slice(0, -4) + '.dir'));
      out[f] = db.keys().map((k) => `${k.toString('latin1')}=${normalise(db.fetch(k)!.toString('latin1'))}`).join('\n');
    } else if (!f.endsWith('.dir')) {
      out[f] = normalise(fs.readFileSync(p, 'latin1'));
    }
  }
  return out;
}

function runApache(tool: string, args: string[], dir: string, stdin: string): Outcome {
  const r = spawnSync('/usr/bin/setsid', ['-w', path.basename(tool), ...args], { cwd: dir, input: Buffer.from(stdin, 'latin1'), encoding: 'latin1' });
  return { code: r.status ?? -1, out: normalise(r.stdout), err: normalise(r.stderr), files: snapshot(dir) };
}

async function runPlume(main: typeof htpasswdMain, args: string[], dir: string, stdin: string): Promise<Outcome> {
  let out = '';
  let err = '';
  const io: Output = { out: (s) => { out += s; }, err: (s) => { err += s; } };
  const lines = stdin.split('\n');
  let li = 0;
  const input: PasswordInput = {
    prompt: (p, o) => { o.err(p); return lines[li++] ?? ''; },
    stdin: () => Buffer.from(stdin, 'latin1'),
  };
  const cwd = process.cwd();
  process.chdir(dir);
  let code: number;
  try {
    code = await main(args, io, input);
  } finally {
    process.chdir(cwd);
  }
  return { code, out: normalise(out), err: normalise(err), files: snapshot(dir) };
}

type Files = Record<string, string>;

function twinDirs(files: Files): [string, string] {
  const a = tempDir('plume-ht-a-');
  const b = tempDir('plume-ht-b-');
  for (const d of [a, b]) for (const [n, c] of Object.entries(files)) fs.writeFileSync(path.join(d, n), c, 'latin1');
  return [a, b];
}

// An htpasswd file made by Apache's htpasswd (password "secret" for every user).
const PWFILE = [
  'md5u:$apr1$XSQgUacM$4FcZnbbiwPnP8JbhxG6CR.',
  'bcu:$2y$05$qQHYKQpRGJ68ZMOj1cgkC.8X0RwjnfrYgfD02HaZbMhYzsURf4gEe',
  'shau:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=',
  'cryptu:xQIzHiCan4SU6',
  '# a comment',
  '',
  's256u:$5$HJrKoKFM.xgXtxCC$GGvbzdvInY2R5MtrNOn2cF3Cmj2G4.WispmmMn08hz8',
  's512u:$6$miDN33.ClCd.qDCD$rN7Eu5sUbZIiwFgEKWOS4CKZINWOCNgRjrxohoef8THwokxivmYMIe7AxwBvJBWy8kYXFHODHxKVE6zsZ5ByG/',
  '',
].join('\n');

const HTPASSWD_CASES: { args: string[]; stdin?: string; files?: Files }[] = [
  { args: [] },
  { args: ['-c'] },
  { args: ['-bc', 'f', 'u', 'p'] },
  { args: ['-bcm', 'f', 'u', 'p'] },
  { args: ['-bcs', 'f', 'u', 'p'] },
  { args: ['-bcp', 'f', 'u', 'p'] },
  { args: ['-bcd', 'f', 'u', 'p'] },
  { args: ['-bcd', 'f', 'u', '123456789'] },
  { args: ['-bcB', 'f', 'u', 'p'] },
  { args: ['-bcB', '-C', '4', 'f', 'u', 'p'] },
  { args: ['-bcB', '-C3', 'f', 'u', 'p'] },
  { args: ['-bcB', '-C', '18', 'f', 'u', 'p'] },
  { args: ['-bcB', '-C', 'x', 'f', 'u', 'p'] },
  { args: ['-bc2', 'f', 'u', 'p'] },
  { args: ['-bc5', 'f', 'u', 'p'] },
  { args: ['-bc5', '-r', '1000', 'f', 'u', 'p'] },
  { args: ['-bc5', '-r', '0', 'f', 'u', 'p'] },
  { args: ['-bcd', '-C', '5', 'f', 'u', 'p'] },
  { args: ['-b', 'f', 'u', 'p'], files: { f: PWFILE } },
  { args: ['-b', 'f', 'md5u', 'p'], files: { f: PWFILE } },
  { args: ['-b', 'nofile', 'u', 'p'] },
  { args: ['-bc', 'f', 'a:b', 'p'] },
  { args: ['-bc', 'f', '', 'p'] },
  { args: ['-bc', 'f', 'x'.repeat(300), 'p'] },
  { args: ['-nb', 'u', 'x'.repeat(300)] },
  { args: ['-x', 'f', 'u'] },
  { args: ['-bD', 'f', 'u'], files: { f: PWFILE } },
  { args: ['-D', 'f', 'cryptu'], files: { f: PWFILE } },
  { args: ['-D', 'f', 'nouser'], files: { f: PWFILE } },
  { args: ['-cD', 'f', 'u'] },
  { args: ['-nv', 'u'] },
  { args: ['-bv', 'f', 'md5u', 'secret'], files: { f: PWFILE } },
  { args: ['-bv', 'f', 'bcu', 'secret'], files: { f: PWFILE } },
  { args: ['-bv', 'f', 'shau', 'secret'], files: { f: PWFILE } },
  { args: ['-bv', 'f', 'cryptu', 'secret'], files: { f: PWFILE } },
  { args: ['-bv', 'f', 's256u', 'secret'], files: { f: PWFILE } },
  { args: ['-bv', 'f', 's512u', 'secret'], files: { f: PWFILE } },
  { args: ['-bv', 'f', 'md5u', 'bad'], files: { f: PWFILE } },
  { args: ['-bv', 'f', 'nouser', 'secret'], files: { f: PWFILE } },
  { args: ['-v', 'f', 'md5u'], stdin: 'secret\n', files: { f: PWFILE } },
  { args: ['-nbs', 'u', 'p'] },
  { args: ['-nbp', 'u', 'p'] },
  { args: ['-nb', 'u', 'p'] },
  { args: ['-n', 'u'], stdin: 'pw\npw\n' },
  { args: ['-n', 'u'], stdin: 'pw\nother\n' },
  { args: ['-ni', 'u'], stdin: 'pw\n' },
  { args: ['-c', 'f', 'u'], stdin: 'a\na\n' },
  { args: ['-ci', 'f', 'u'], stdin: 'from stdin\r\n' },
  { args: ['-b', 'f', 'u', 'p'], files: { f: 'not a password file\n' } },
  { args: ['-b', 'f', 'u', 'p'], files: { f: 'a:x\nu:y\nu:z\n' } },
  { args: ['-D', 'f', 'u'], files: { f: 'a:x\nu:y\nu:z\n' } },
  { args: ['-b', 'f', 'new', 'p'], files: { f: 'a:x' } },
  { args: ['-bv', 'f', 'u', 'p'], files: { f: 'u:\n' } },
  { args: ['--', 'f', 'u'], stdin: 'p\np\n', files: { f: '' } },
  { args: ['-bc', '/nonexistent/dir/f', 'u', 'p'] },
];

test('plume htpasswd answers as Apache htpasswd does', { skip: !haveUtils && 'apache2-utils not installed' }, async () => {
  for (const c of HTPASSWD_CASES) {
    const [a, b] = twinDirs(c.files ?? {});
    const want = runApache(HTPASSWD, c.args, a, c.stdin ?? '');
    const got = await runPlume(htpasswdMain, c.args, b, c.stdin ?? '');
    assert.deepEqual(got, want, `htpasswd ${c.args.join(' ')}`);
  }
});

const HTDBM_CASES: { args: string[]; stdin?: string; files?: Files; setup?: string[][] }[] = [
  { args: [] },
  { args: ['-bcTSDBM', 'db', 'u', 'p'] },
  { args: ['-bcT', 'SDBM', 'db', 'u', 'p'] },
  { args: ['-bcs', '-TSDBM', 'db', 'u', 'p'] },
  { args: ['-bTSDBM', 'db', 'u2', 'p'], setup: [['-bcsTSDBM', 'db', 'u', 'p']] },
  { args: ['-bsTSDBM', 'db', 'u', 'q'], setup: [['-bcsTSDBM', 'db', 'u', 'p']] },
  { args: ['-btsTSDBM', 'db', 'u3', 'p', 'my comment'], setup: [['-bcsTSDBM', 'db', 'u', 'p']] },
  { args: ['-lTSDBM', 'db'], setup: [['-bcsTSDBM', 'db', 'u', 'p'], ['-btsTSDBM', 'db', 'u3', 'p', 'a comment'], ['-bsTSDBM', 'db', 'u', 'q']] },
  { args: ['-lTSDBM', 'db'], setup: [['-bcsTSDBM', 'db', 'u', 'p'], ['-xTSDBM', 'db', 'u']] },
  { args: ['-vbTSDBM', 'db', 'u', 'p'], setup: [['-bcTSDBM', 'db', 'u', 'p']] },
  { args: ['-vbTSDBM', 'db', 'u', 'bad'], setup: [['-bcTSDBM', 'db', 'u', 'p']] },
  { args: ['-vbTSDBM', 'db', 'nouser', 'p'], setup: [['-bcTSDBM', 'db', 'u', 'p']] },
  { args: ['-vTSDBM', 'db', 'u'], stdin: 'p\np\n', setup: [['-bcTSDBM', 'db', 'u', 'p']] },
  { args: ['-xTSDBM', 'db', 'u'], setup: [['-bcsTSDBM', 'db', 'u', 'p']] },
  { args: ['-xTSDBM', 'db', 'nouser'], setup: [['-bcsTSDBM', 'db', 'u', 'p']] },
  { args: ['-nb', 'u', 'p'] },
  { args: ['-nbs', 'u', 'p'] },
  { args: ['-nbst', 'u', 'p', 'c'] },
  { args: ['-bTSDBM', 'nodb', 'u', 'p'] },
  { args: ['-bcTFOO', 'db', 'u', 'p'] },
  { args: ['-bcTSDBM', 'db', 'a:b', 'p'] },
  { args: ['-bcTSDBM', 'db', '', 'p'] },
  { args: ['-bcTSDBM', 'db', 'x'.repeat(65), 'p'] },
  { args: ['-bC', '3', '-BTSDBM', 'db', 'u', 'p'] },
  { args: ['-bC', 'x', '-BTSDBM', 'db', 'u', 'p'] },
  { args: ['-bcBTSDBM', 'db', 'u', 'p'] },
  { args: ['-bcdTSDBM', 'db', 'u', 'p'] },
  { args: ['-z', 'db', 'u'] },
  { args: ['-ciTSDBM', 'db', 'u'], stdin: 'pw\n' },
  { args: ['-cTSDBM', 'db', 'u'], stdin: 'pw\npw\n' },
  { args: ['-cTSDBM', 'db', 'u'], stdin: 'pw\nxx\n' },
];

test('plume htdbm answers as Apache htdbm does (SDBM)', { skip: !haveUtils && 'apache2-utils not installed' }, async () => {
  for (const c of HTDBM_CASES) {
    const [a, b] = twinDirs(c.files ?? {});
    for (const s of c.setup ?? []) {
      runApache(HTDBM, s, a, '');
      runApache(HTDBM, s, b, '');
    }
    const want = runApache(HTDBM, c.args, a, c.stdin ?? '');
    const got = await runPlume(htdbmMain, c.args, b, c.stdin ?? '');
    assert.deepEqual(got, want, `htdbm ${c.args.join(' ')}`);
  }
});

test('hashes written by plume htpasswd verify with Apache htpasswd, and the other way', { skip: !haveUtils && 'apache2-utils not installed' }, async () => {
  const dir = tempDir('plume-ht-x-');
  const algs = ['-m', '-B', '-s', '-d', '-2', '-5'];
  for (const alg of algs) {
    const f = path.join(dir, `p${alg}`);
    const io: Output = { out: () => undefined, err: () => undefined };
    assert.equal(await htpasswdMain(['-bc' + alg.slice(1), f, 'user', 'pässwörd'], io), 0);
    const r = spawnSync(HTPASSWD, ['-bv', f, 'user', 'pässwörd'], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${alg}: ${r.stderr}`);
    const a = path.join(dir, `a${alg}`);
    spawnSync(HTPASSWD, ['-bc' + alg.slice(1), a, 'user', 'pässwörd']);
    const hash = fs.readFileSync(a, 'latin1').trim().split(':').slice(1).join(':');
    assert.equal(await validatePassword(Buffer.from('pässwörd'), hash), true, `${alg} ${hash}`);
    assert.equal(await validatePassword(Buffer.from('passwörd'), hash), false, `${alg} ${hash}`);
  }
});
