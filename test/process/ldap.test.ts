// mod_ldap and mod_authnz_ldap against a real slapd (test/process/ldap-server.ts): the
// AUTHENTICATE_<ATTR> variables a CGI script sees, the search cache answering a known user
// with the same password while the server is down (as util_ldap's cache does) and 500 for
// others, LDAPCacheEntries 0 turning that cache off, and a pooled connection that finds the
// server again after a restart; one process (-X) holding a pooled connection stops on SIGTERM.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as http from 'node:http';
import { freePort, makeSite, startPlume, waitFor } from './process-lib.js';
import { hasSlapd, startSlapd } from './ldap-server.js';

function get(port: number, urlPath: string, cred?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Connection: 'close' };
    if (cred !== undefined) headers['Authorization'] = `Basic ${Buffer.from(cred).toString('base64')}`;
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, headers }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.setTimeout(20000, () => req.destroy(new Error('timeout')));
  });
}

test('mod_authnz_ldap against slapd: CGI variables, the search cache while the server is down, reconnection', { skip: !hasSlapd() && 'slapd is not installed' }, async () => {
  const ldapDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-slapd-'));
  const ldapPort = await freePort();
  let slapd = await startSlapd(ldapDir, ldapPort);
  const site = await makeSite('ldap');
  let running: Awaited<ReturnType<typeof startPlume>> | undefined;
  try {
  const cgi = path.join(site.dir, 'cgi-bin');
  fs.mkdirSync(cgi, { mode: 0o755 });
  fs.mkdirSync(path.join(site.dir, 'htdocs/secret'), { mode: 0o755 });
  fs.writeFileSync(path.join(site.dir, 'htdocs/secret/index.html'), 'secret\n');
  fs.writeFileSync(path.join(cgi, 'env.sh'), '#!/bin/sh\necho "Content-Type: text/plain"\necho\nenv | grep -E "^(AUTHENTICATE_|REMOTE_USER)" | sort\n', { mode: 0o755 });
  const url = `ldap://127.0.0.1:${ldapPort}/ou=people,dc=example,dc=com?uid,cn,mail?sub?(objectClass=inetOrgPerson)`;
  const auth = (p: string, more: string[] = []) => [
    `<Location ${p}>`, '  AuthType Basic', '  AuthName ldap', '  AuthBasicProvider ldap', `  AuthLDAPURL "${url}"`, ...more.map((m) => `  ${m}`), '  Require valid-user', '</Location>',
  ];
  site.write([
    'StartServers 1',
    'LoadModule auth_basic_module /usr/lib/apache2/modules/mod_auth_basic.so',
    'LoadModule authn_core_module /usr/lib/apache2/modules/mod_authn_core.so',
    'LoadModule authz_user_module /usr/lib/apache2/modules/mod_authz_user.so',
    'LoadModule ldap_module /usr/lib/apache2/modules/mod_ldap.so',
    'LoadModule authnz_ldap_module /usr/lib/apache2/modules/mod_authnz_ldap.so',
    'LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so',
    'LoadModule cgi_module /usr/lib/apache2/modules/mod_cgi.so',
    'LDAPRetries 0',
    'LogLevel warn authnz_ldap:info',
    `ScriptAlias /cgi/ "${cgi}/"`,
    ...auth('/cgi'),
    ...auth('/secret'),
  ]);
  running = await startPlume(site);
    // AUTHENTICATE_<ATTR> reach the CGI environment; several values are joined with "; ".
    const env = await get(site.port, '/cgi/env.sh', 'alice:alice-pw');
    assert.equal(env.status, 200, env.body + fs.readFileSync(site.errorLog, 'utf8'));
    assert.match(env.body, /^AUTHENTICATE_CN=Alice Adams$/m);
    assert.match(env.body, /^AUTHENTICATE_MAIL=alice@example.com; aa@example.com$/m);
    assert.match(env.body, /^AUTHENTICATE_UID=alice$/m);
    assert.match(env.body, /^REMOTE_USER=alice$/m);

    assert.equal((await get(site.port, '/secret/index.html', 'bob:bob-pw')).status, 200);
    await slapd.stop();
    // The search cache knows alice with this password: no server needed.
    assert.equal((await get(site.port, '/secret/index.html', 'alice:alice-pw')).status, 200);
    // Another password, or a user not in the cache: the server is needed, and down.
    assert.equal((await get(site.port, '/secret/index.html', 'alice:other')).status, 500);
    assert.equal((await get(site.port, '/secret/index.html', 'carol:carol-pw')).status, 500);
    await waitFor('AH01695 in the error log', () => fs.readFileSync(site.errorLog, 'utf8').includes("[LDAP: ldap_simple_bind() failed][Can't contact LDAP server]"));

    // The server comes back on the same port: the pooled handle connects again.
    slapd = await startSlapd(ldapDir, ldapPort);
    assert.equal((await get(site.port, '/secret/index.html', 'carol:carol-pw')).status, 200);
    assert.equal((await get(site.port, '/secret/index.html', 'carol:wrong')).status, 401);

    // LDAPCacheEntries 0 / LDAPOpCacheEntries 0: every request asks the server.
    await running.stop();
    running = undefined;
    const lines = fs.readFileSync(site.conf, 'utf8').split('\n').filter((l) => l !== '');
    fs.writeFileSync(site.conf, [...lines, 'LDAPCacheEntries 0', 'LDAPOpCacheEntries 0', ''].join('\n'));
    const again = await startPlume(site);
    try {
      assert.equal((await get(site.port, '/secret/index.html', 'alice:alice-pw')).status, 200);
      await slapd.stop();
      assert.equal((await get(site.port, '/secret/index.html', 'alice:alice-pw')).status, 500);
    } finally {
      await again.stop();
    }
  } finally {
    await running?.stop();
    await slapd.stop();
    site.remove();
    fs.rmSync(ldapDir, { recursive: true, force: true });
  }
});

test('one process (-X) with a pooled LDAP connection stops on SIGTERM (util_ldap unbinds its connections at cleanup)', { skip: !hasSlapd() && 'slapd is not installed' }, async () => {
  const ldapDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-slapd-'));
  const slapd = await startSlapd(ldapDir, await freePort());
  const site = await makeSite('ldap-x');
  let running: Awaited<ReturnType<typeof startPlume>> | undefined;
  try {
    fs.mkdirSync(path.join(site.dir, 'htdocs/secret'), { mode: 0o755 });
    fs.writeFileSync(path.join(site.dir, 'htdocs/secret/index.html'), 'secret\n');
    site.write([
      'LoadModule auth_basic_module /usr/lib/apache2/modules/mod_auth_basic.so',
      'LoadModule authn_core_module /usr/lib/apache2/modules/mod_authn_core.so',
      'LoadModule authz_user_module /usr/lib/apache2/modules/mod_authz_user.so',
      'LoadModule ldap_module /usr/lib/apache2/modules/mod_ldap.so',
      'LoadModule authnz_ldap_module /usr/lib/apache2/modules/mod_authnz_ldap.so',
      '<Location /secret>', '  AuthType Basic', '  AuthName ldap', '  AuthBasicProvider ldap',
      `  AuthLDAPURL "ldap://127.0.0.1:${slapd.port}/ou=people,dc=example,dc=com?uid"`, '  Require valid-user', '</Location>',
    ]);
    running = await startPlume(site, { args: ['-X'], workers: 0 });
    assert.equal((await get(site.port, '/secret/index.html', 'alice:alice-pw')).status, 200);
    // The bound connection stays in the pool; the end of the configuration unbinds it, so
    // nothing keeps the process running (stop() would SIGKILL it after 10 s).
    const exit = new Promise<NodeJS.Signals | null>((res) => running!.proc.once('exit', (_code, sig) => res(sig)));
    await running.stop();
    running = undefined;
    assert.equal(await exit, null, 'plume -X had to be killed: it did not exit on SIGTERM');
  } finally {
    await running?.stop();
    await slapd.stop();
    site.remove();
    fs.rmSync(ldapDir, { recursive: true, force: true });
  }
});
