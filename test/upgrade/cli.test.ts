/**
 * plume upgrade's command line: modes and exit statuses, parse errors (file:line, exit 2,
 * nothing written), --write (FILE.bak, temporary file + rename), --output, --format json,
 * --diff, --htaccess, and the subcommand as bin/plume runs it.
 */
import { after, test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { upgradeMain, type Io } from '../../src/upgrade/cli.js';
import { catalogue } from '../../src/modules/index.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

const roots: string[] = [];
after(() => { for (const r of roots) fs.rmSync(r, { recursive: true, force: true }); });
function cleanup(root: string): void {
  fs.rmSync(root, { recursive: true, force: true });
}

function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-upgrade-cli-'));
  roots.push(root);
  for (const [rel, text] of Object.entries(files)) {
    const p = path.join(root, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text.replaceAll('@ROOT@', root));
  }
  return root;
}

async function run(argv: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = { out: (s) => { out += s; }, err: (s) => { err += s; } };
  const prev = process.cwd();
  process.chdir(cwd);
  try {
    const code = await upgradeMain(argv, io);
    return { code, out, err };
  } finally {
    process.chdir(prev);
  }
}

function snapshot(root: string): Map<string, string> {
  const m = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else m.set(path.relative(root, p), fs.readFileSync(p, 'utf8'));
    }
  };
  walk(root);
  return m;
}

const CONF22 = `ServerRoot "@ROOT@"
Include conf/extra/*.conf
MaxClients 10
<Directory "@ROOT@/htdocs">
    Order allow,deny
    Allow from all
</Directory>
`;
const EXTRA = `<Location /status>
    Order deny,allow
    Deny from all
    Allow from 127.0.0.1
</Location>
`;

test('report mode lists findings with file:line and writes nothing', async () => {
  const root = tree({ 'httpd.conf': CONF22, 'conf/extra/status.conf': EXTRA });
  const before = snapshot(root);
  const r = await run(['httpd.conf'], root);
  assert.equal(r.code, 0);
  assert.match(r.out, /^httpd\.conf:3: change \[renamed\.max-clients\]/m);
  assert.match(r.out, /^conf\/extra\/status\.conf:2: change \[access\.require\]/m);
  assert.match(r.out, /finding\(s\): \d+ change/);
  assert.deepEqual(snapshot(root), before);
});

const APACHE = '/usr/sbin/apache2';
const HAVE_APACHE = fs.existsSync(APACHE);

test('--check: 1 while something must change, 0 once the output is clean (confirmed by apache2 -t)', async () => {
  const root = tree({ 'httpd.conf': CONF22, 'conf/extra/status.conf': EXTRA });
  fs.symlinkSync('/usr/lib/apache2/modules', path.join(root, 'modules'));
  fs.mkdirSync(path.join(root, 'logs'));
  assert.equal((await run(['--check', 'httpd.conf'], root)).code, 1);
  assert.equal((await run(['--write', 'httpd.conf'], root)).code, 0);
  const r = await run(['--check', 'httpd.conf'], root);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, HAVE_APACHE ? /^Clean 2\.4 configuration: nothing to change \(\/usr\/sbin\/apache2 -t: Syntax OK\)\.$/m : /^Clean 2\.4 configuration/m);
  cleanup(root);
});

test('--check: "Clean" only when apache2 -t accepts the configuration (issue 19 item 16)', { skip: !HAVE_APACHE && 'apache2 is not installed' }, async () => {
  // Nothing the assistant knows to change, but a directive no loaded module provides.
  const conf = 'ServerRoot "@ROOT@"\nLoadModule mpm_event_module modules/mod_mpm_event.so\nListen 127.0.0.1:8999\nPidFile logs/p.pid\nErrorLog logs/e.log\nEnableSendfile Off\nFileETag MTime Size\nFrobnicate On\n';
  const root = tree({ 'httpd.conf': conf });
  fs.symlinkSync('/usr/lib/apache2/modules', path.join(root, 'modules'));
  const r = await run(['--check', 'httpd.conf'], root);
  assert.equal(r.code, 1, r.out);
  assert.doesNotMatch(r.out, /Clean 2\.4/);
  assert.match(r.out, /apache2 -t does not accept it:\n[\s\S]*Invalid command 'Frobnicate'/);
  // Without Apache to ask, the assistant's own verdict stands.
  const quiet = await run(['--check', '--no-apache', 'httpd.conf'], root);
  assert.equal(quiet.code, 0);
  assert.match(quiet.out, /^Clean 2\.4 configuration: nothing to change\.$/m);
  cleanup(root);
});

test('--check: a directive of a module 2.4 does not load is not "clean" (issue 19 item 16)', async () => {
  const conf = 'ServerRoot "@ROOT@"\nLoadModule mpm_event_module modules/mod_mpm_event.so\nLoadModule ssl_module modules/mod_ssl.so\nEnableSendfile Off\nFileETag MTime Size\nSSLSessionCache shmcb:logs/ssl_scache(512000)\n';
  const root = tree({ 'httpd.conf': conf });
  const r = await run(['--check', '--no-apache', 'httpd.conf'], root);
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /change \[modules\.needed\] SSLSessionCache shmcb needs the socache provider "shmcb"/);
  assert.doesNotMatch(r.out, /Clean 2\.4/);
  cleanup(root);
});

test('a configuration written for a 2.4 build that compiles mod_unixd and mod_log_config in gets no LoadModule for them', async () => {
  const conf = 'ServerRoot "@ROOT@"\nLoadModule mpm_event_module modules/mod_mpm_event.so\nUser www-data\nLogFormat "%h" x\nEnableSendfile Off\nFileETag MTime Size\n';
  const root = tree({ 'httpd.conf': conf });
  const r = await run(['--check', '--no-apache', 'httpd.conf'], root);
  assert.equal(r.code, 0, r.out);
  // The same lines in a 2.2 configuration (no MPM module) need them, guarded.
  const root22 = tree({ 'httpd.conf': conf.replace(/^LoadModule mpm.*\n/m, '') });
  const r22 = await run(['--diff', 'httpd.conf'], root22);
  assert.match(r22.out, /^\+<IfModule !unixd_module>$/m);
  assert.match(r22.out, /^\+<IfModule !log_config_module>$/m);
  cleanup(root);
  cleanup(root22);
});

test('the report names the modules plume cannot run yet, asked of the catalogue (issue 19 item 20)', async () => {
  const conf = 'ServerRoot "@ROOT@"\nLoadModule mpm_event_module modules/mod_mpm_event.so\nLoadModule ssl_module modules/mod_ssl.so\nLoadModule mime_module modules/mod_mime.so\n';
  const root = tree({ 'httpd.conf': conf });
  let out = '';
  const io: Io = { out: (x) => { out += x; }, err: () => undefined };
  const prev = process.cwd();
  process.chdir(root);
  try {
    await upgradeMain(['httpd.conf'], io, { plumeModules: new Set(['mpm_event_module', 'mime_module', 'core_module']) });
  } finally {
    process.chdir(prev);
  }
  assert.match(out, /note \[modules\.plume-support\] The upgraded configuration loads 1 module\(s\) plume cannot run yet: mod_ssl\./);
  // As bin/plume runs it: the catalogue of this build, as it stands (helpers add modules).
  const have = new Set(catalogue.all.map((m) => m.decl.name));
  const lacking = ['lua_module', 'ldap_module', 'dav_module', 'imagemap_module', 'bucketeer_module'].find((m) => !have.has(m));
  if (lacking !== undefined) {
    const conf2 = `ServerRoot "${root}"\nLoadModule mpm_event_module modules/mod_mpm_event.so\nLoadModule ${lacking} modules/mod_x.so\nLoadModule mime_module modules/mod_mime.so\n`;
    fs.writeFileSync(path.join(root, 'httpd.conf'), conf2);
    const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'bin', 'plume'), 'upgrade', 'httpd.conf'], { cwd: root, encoding: 'utf8' });
    assert.match(r.stdout, new RegExp(`\\[modules\\.plume-support\\].*mod_${lacking.replace(/_module$/, '')}`));
    assert.doesNotMatch(r.stdout, /plume cannot run yet: [^\n]*mod_mime/);
  }
  cleanup(root);
});

test('--write keeps FILE.bak, renames a temporary file over each changed file, leaves no temporary file', async () => {
  const root = tree({ 'httpd.conf': CONF22, 'conf/extra/status.conf': EXTRA });
  fs.chmodSync(path.join(root, 'httpd.conf'), 0o640);
  const r = await run(['--write', 'httpd.conf'], root);
  assert.equal(r.code, 0);
  assert.equal(fs.readFileSync(path.join(root, 'httpd.conf.bak'), 'utf8'), CONF22.replaceAll('@ROOT@', root));
  assert.equal(fs.readFileSync(path.join(root, 'conf/extra/status.conf.bak'), 'utf8'), EXTRA);
  assert.match(fs.readFileSync(path.join(root, 'httpd.conf'), 'utf8'), /MaxRequestWorkers 10/);
  assert.match(fs.readFileSync(path.join(root, 'conf/extra/status.conf'), 'utf8'), /Require ip 127\.0\.0\.1/);
  assert.equal(fs.statSync(path.join(root, 'httpd.conf')).mode & 0o777, 0o640);
  assert.deepEqual([...snapshot(root).keys()].filter((k) => k.includes('.tmp')), []);
  // A second write changes nothing and makes no second backup.
  await run(['--write', 'httpd.conf'], root);
  assert.ok(!fs.existsSync(path.join(root, 'httpd.conf.bak.1')));
});

test('--write never overwrites an existing FILE.bak', async () => {
  const root = tree({ 'httpd.conf': 'MaxClients 5\n', 'httpd.conf.bak': 'precious\n' });
  await run(['--write', 'httpd.conf'], root);
  assert.equal(fs.readFileSync(path.join(root, 'httpd.conf.bak'), 'utf8'), 'precious\n');
  assert.equal(fs.readFileSync(path.join(root, 'httpd.conf.bak.1'), 'utf8'), 'MaxClients 5\n');
});

test('a parse error anywhere: exit 2, file and line named, nothing written', async () => {
  const root = tree({ 'httpd.conf': CONF22, 'conf/extra/status.conf': EXTRA, 'conf/extra/zz-broken.conf': '# broken\n<Directory /x>\n    Options None\n</Location>\n' });
  const before = snapshot(root);
  const r = await run(['--write', 'httpd.conf'], root);
  assert.equal(r.code, 2);
  assert.match(r.err, /conf\/extra\/zz-broken\.conf:4: Expected <\/Directory> but saw <\/Location>/);
  assert.match(r.err, /nothing was written/);
  assert.deepEqual(snapshot(root), before);
});

test('unclosed section and missing include: exit 2 with file and line', async () => {
  let root = tree({ 'httpd.conf': 'Listen 80\n<VirtualHost *:80>\nServerName a\n' });
  let r = await run(['httpd.conf'], root);
  assert.equal(r.code, 2);
  assert.match(r.err, /httpd\.conf:2: .*<VirtualHost> was not closed/);
  root = tree({ 'httpd.conf': 'ServerRoot "@ROOT@"\n\nInclude conf/missing.conf\n' });
  r = await run(['httpd.conf'], root);
  assert.equal(r.code, 2);
  assert.match(r.err, /httpd\.conf:3: could not open configuration file/);
});

test('--output: a single-file configuration is written to FILE', async () => {
  const root = tree({ 'httpd.conf': 'MaxClients 5\n' });
  const r = await run(['--output', 'new.conf', 'httpd.conf'], root);
  assert.equal(r.code, 0);
  assert.match(fs.readFileSync(path.join(root, 'new.conf'), 'utf8'), /MaxRequestWorkers 5/);
  assert.equal(fs.readFileSync(path.join(root, 'httpd.conf'), 'utf8'), 'MaxClients 5\n');
  cleanup(root);
});

test('--output: a configuration with Include files is written whole to a directory (issue 19 item 20)', async () => {
  const root = tree({ 'httpd.conf': CONF22, 'conf/extra/status.conf': EXTRA, 'conf/extra/same.conf': 'ServerAdmin a@b.example\n' });
  const before = snapshot(root);
  const r = await run(['--output', path.join(root, 'out'), 'httpd.conf'], root);
  assert.equal(r.code, 0, r.err);
  const out = snapshot(path.join(root, 'out'));
  assert.deepEqual([...out.keys()].sort(), ['conf/extra/same.conf', 'conf/extra/status.conf', 'httpd.conf']);
  assert.match(out.get('httpd.conf')!, /MaxRequestWorkers 10/);
  assert.match(out.get('conf/extra/status.conf')!, /Require ip 127\.0\.0\.1/);
  assert.equal(out.get('conf/extra/same.conf'), 'ServerAdmin a@b.example\n');
  for (const [k, v] of before) assert.equal(fs.readFileSync(path.join(root, k), 'utf8'), v, `${k} untouched`);
  // An existing file cannot take a tree.
  const again = await run(['--output', 'httpd.conf', 'httpd.conf'], root);
  assert.equal(again.code, 1);
  assert.match(again.err, /names a directory/);
  cleanup(root);
});

test('-D NAME: <IfDefine NAME> sections are read as defined (issue 19 item 20)', async () => {
  const conf = 'ServerRoot "@ROOT@"\nDocumentRoot "@ROOT@/htdocs"\n<IfDefine SECURE>\n<Directory "@ROOT@/htdocs/admin">\n    Order deny,allow\n    Deny from all\n</Directory>\n</IfDefine>\n';
  const root = tree({ 'httpd.conf': conf });
  const without = await run(['httpd.conf'], root);
  assert.doesNotMatch(without.out, /\[access\.require\]/);
  assert.match(without.out, /\[modules\.access-compat\]/);
  const r = await run(['-D', 'SECURE', 'httpd.conf'], root);
  assert.match(r.out, /^httpd\.conf:5: change \[access\.require\]/m);
  assert.doesNotMatch(r.out, /\[modules\.access-compat\]/);
  const joined = await run(['-DSECURE', 'httpd.conf'], root);
  assert.equal(joined.out, r.out);
  cleanup(root);
});

test('--format json: an array of {file, line, rule, severity, message, before, after}', async () => {
  const root = tree({ 'httpd.conf': CONF22, 'conf/extra/status.conf': EXTRA });
  const r = await run(['--format', 'json', 'httpd.conf'], root);
  const list = JSON.parse(r.out) as Record<string, unknown>[];
  assert.ok(list.length > 3);
  for (const f of list) assert.deepEqual(Object.keys(f), ['file', 'line', 'rule', 'severity', 'message', 'before', 'after']);
  const status = list.find((f) => f['file'] === 'conf/extra/status.conf' && f['rule'] === 'access.require')!;
  assert.equal(status['after'], 'Require ip 127.0.0.1');
  assert.equal(status['before'], 'Order deny,allow\nDeny from all\nAllow from 127.0.0.1');
});

test('--diff: one unified diff per changed file', async () => {
  const root = tree({ 'httpd.conf': CONF22, 'conf/extra/status.conf': EXTRA });
  const r = await run(['--diff', 'httpd.conf'], root);
  assert.equal(r.code, 0);
  assert.match(r.out, /^--- httpd\.conf\n\+\+\+ httpd\.conf \(upgraded\)\n@@ /m);
  assert.match(r.out, /^--- conf\/extra\/status\.conf\n/m);
  assert.match(r.out, /^-    Order deny,allow$/m);
  assert.match(r.out, /^\+    Require ip 127\.0\.0\.1$/m);
});

test('.htaccess files 2.2 reads are upgraded without being told; those it ignored are left alone (issue 19 item 15)', async () => {
  const conf = 'ServerRoot "@ROOT@"\nDocumentRoot "@ROOT@/htdocs"\nAccessFileName .acl .htaccess\n<Directory "@ROOT@/htdocs">\n    AllowOverride All\n</Directory>\n'
    + '<Directory "@ROOT@/htdocs/closed">\n    AllowOverride None\n</Directory>\nAlias /extra "@ROOT@/extra"\n';
  const root = tree({
    'httpd.conf': conf,
    'htdocs/a/.htaccess': 'Order deny,allow\nDeny from all\n',
    'htdocs/b/.acl': 'AuthType Basic\nAuthName b\nAuthUserFile @ROOT@/users\nRequire valid-user\n',
    'htdocs/b/.htaccess': 'Deny from all\n',
    'htdocs/closed/.htaccess': 'Order deny,allow\nDeny from all\n',
    'htdocs/closed/deeper/.htaccess': 'Order deny,allow\nDeny from all\n',
    'extra/.htaccess': 'Order allow,deny\nAllow from 10.0.0.0/8\n',
    'elsewhere/.htaccess': 'Order deny,allow\nDeny from all\n',
  });
  const before = snapshot(root);
  const r = await run(['--write', 'httpd.conf'], root);
  assert.equal(r.code, 0, r.err);
  const after = snapshot(root);
  // Read by 2.2, so converted.
  assert.match(after.get('htdocs/a/.htaccess')!, /Require all denied/);
  assert.match(after.get('extra/.htaccess')!, /Require ip 10\.0\.0\.0\/8/);
  // AccessFileName: the first name present is the one read; the other file is not touched.
  assert.equal(after.get('htdocs/b/.htaccess'), before.get('htdocs/b/.htaccess'));
  // Its AuthType needs mod_authn_core (else 500 on every request there).
  assert.match(after.get('httpd.conf')!, /^LoadModule authn_core_module /m);
  // Ignored by 2.2 (AllowOverride None): not converted, and never activated.
  assert.equal(after.get('htdocs/closed/.htaccess'), before.get('htdocs/closed/.htaccess'));
  assert.equal(after.get('htdocs/closed/deeper/.htaccess'), before.get('htdocs/closed/deeper/.htaccess'));
  assert.match(after.get('httpd.conf')!, /<Directory "[^"]*\/htdocs\/closed">\n    AllowOverride None\n<\/Directory>/);
  assert.match(r.out, /htdocs\/closed\/\.htaccess:0: note \[defaults\.allow-override\] 2\.2 never read this file/);
  // Not under any served directory: not searched.
  assert.equal(after.get('elsewhere/.htaccess'), before.get('elsewhere/.htaccess'));
  // No Order/Allow/Deny is left in a file 2.2 read, so mod_access_compat is not loaded.
  assert.doesNotMatch(after.get('httpd.conf')!, /access_compat_module/);
  cleanup(root);
});

test('mod_access_compat stays loaded while a .htaccess file 2.2 reads keeps Order/Allow/Deny (issue 19 item 15)', async () => {
  // 2.4 Require lines in the <Directory> and Order/Deny in a .htaccess below it: the
  // precedence rule (5.2 rule 5) leaves them as written, so mod_access_compat must load.
  const conf = 'ServerRoot "@ROOT@"\nLoadModule authz_core_module modules/mod_authz_core.so\nDocumentRoot "@ROOT@/htdocs"\n<Directory "@ROOT@/htdocs">\n    AllowOverride All\n    Require all granted\n</Directory>\n';
  const root = tree({ 'httpd.conf': conf, 'htdocs/old/.htaccess': 'Order deny,allow\nDeny from all\nAllow from 10.0.0.0/8\n' });
  const r = await run(['--diff', 'httpd.conf'], root);
  assert.match(r.out, /^\+LoadModule access_compat_module /m);
  assert.doesNotMatch(r.out, /^--- htdocs\/old\/\.htaccess/m);
  cleanup(root);
});

test('--htaccess DIR narrows the search; --no-htaccess leaves the files out; an explicit DIR under AllowOverride None is not activated', async () => {
  const conf = 'ServerRoot "@ROOT@"\nDocumentRoot "@ROOT@/htdocs"\n<Directory "@ROOT@/htdocs/closed">\n    AllowOverride None\n</Directory>\n';
  const root = tree({
    'httpd.conf': conf,
    'htdocs/a/.htaccess': 'Order deny,allow\nDeny from all\n',
    'htdocs/closed/.htaccess': 'AuthType Basic\nAuthName x\nAuthUserFile @ROOT@/users\nRequire valid-user\nOrder deny,allow\nDeny from all\nAllow from 10.0.0.1\nSatisfy any\n',
  });
  const none = await run(['--no-htaccess', 'httpd.conf'], root);
  assert.doesNotMatch(none.out, /^htdocs\/.*\.htaccess:/m);
  const narrow = await run(['--htaccess', path.join(root, 'htdocs/closed'), '--diff', 'httpd.conf'], root);
  assert.doesNotMatch(narrow.out, /htdocs\/a\/\.htaccess/);
  assert.doesNotMatch(narrow.out, /AllowOverride None AuthConfig|AllowOverride AuthConfig/);
  assert.doesNotMatch(narrow.out, /^\+.*authn_core/m);
  assert.doesNotMatch(narrow.out, /^--- htdocs\/closed/m);
  cleanup(root);
});

test('usage errors exit 1', async () => {
  const root = tree({ 'httpd.conf': 'Listen 80\n' });
  assert.equal((await run([], root)).code, 1);
  assert.equal((await run(['--check', '--write', 'httpd.conf'], root)).code, 1);
  assert.equal((await run(['--format', 'yaml', 'httpd.conf'], root)).code, 1);
});

test('bin/plume upgrade runs the subcommand', () => {
  const root = tree({ 'httpd.conf': 'KeepAlive 1\n' });
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'bin', 'plume'), 'upgrade', '--check', 'httpd.conf'], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stdout, /httpd\.conf:1: change \[syntax\.keepalive\]/);
});
