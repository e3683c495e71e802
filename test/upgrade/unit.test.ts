/**
 * Unit tests of the upgrade assistant's parts: the formula renderer (2.4 Require forms and
 * their three-valued decisions), the 2.2 access model and evaluator, and the small
 * translators (FilterProvider, Mutex mechanisms, SSI expressions, Include wildcards), plus the
 * lossless round trip of the tree the rewrites rely on.
 */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { and, atom, decide, FALSE, not, or, render, TRUE, type Atom, type Formula } from '../../src/upgrade/require.js';
import { apr1, evaluate22, hostEntryKind, inDomain, ipMatches, verifyPassword } from '../../src/upgrade/access22.js';
import { buildModel } from '../../src/upgrade/scope.js';
import { globToRegExp, resolveInclude } from '../../src/upgrade/engine.js';
import { loadConfiguration } from '../../src/upgrade/load.js';
import { DEFAULT_OPTIONS } from '../../src/upgrade/model.js';
import { Doc } from '../../src/upgrade/doc.js';
import { filterExpression } from '../../src/upgrade/rules/syntax.js';
import { mutexMechanism } from '../../src/upgrade/rules/mutex.js';
import { isLegacyExpr } from '../../src/upgrade/rules/include.js';
import { renderState } from '../../src/upgrade/rules/access.js';
import { merge22 } from '../../src/upgrade/access22.js';
import { tempDir } from '../temp.js';

const ip = (v: string): Formula => atom({ k: 'ip', v });
const user: Formula = atom({ k: 'valid-user' });

test('render: the forms of the upgrading notes', () => {
  assert.deepEqual(render(FALSE), ['Require all denied']);
  assert.deepEqual(render(TRUE), ['Require all granted']);
  assert.deepEqual(render(atom({ k: 'host', v: 'example.org' })), ['Require host example.org']);
  assert.deepEqual(render(and([ip('127.0.0.1'), user])), ['<RequireAll>', '    Require ip 127.0.0.1', '    Require valid-user', '</RequireAll>']);
  assert.deepEqual(render(or([ip('127.0.0.1'), user])), ['Require ip 127.0.0.1', 'Require valid-user']);
});

test('render: user names with blanks stay quoted', () => {
  assert.deepEqual(render(atom({ k: 'user', v: ['john doe', 'bob'] })), ['Require user "john doe" bob']);
});

test('render: negation only inside RequireAll next to a positive line; lines of one kind merge', () => {
  assert.deepEqual(render(not(ip('10.0.0.1'))), ['<RequireAll>', '    Require all granted', '    Require not ip 10.0.0.1', '</RequireAll>']);
  assert.deepEqual(render(and([or([ip('10.1'), ip('10.2')]), not(or([ip('10.1.1.1'), ip('10.2.2.2')]))])),
    ['<RequireAll>', '    <RequireAny>', '        Require ip 10.1 10.2', '    </RequireAny>', '    Require not ip 10.1.1.1 10.2.2.2', '</RequireAll>']);
});

test('boolean simplification: all/none, complements, duplicates', () => {
  assert.equal(and([ip('a'), not(ip('a'))]).t, 'false');
  assert.equal(or([ip('a'), not(ip('a'))]).t, 'true');
  assert.equal(or([FALSE, ip('a'), ip('a')]).t, 'atom');
  assert.equal(and([TRUE]).t, 'true');
  assert.equal(not(not(ip('a'))).t, 'atom');
});

test('decide: three-valued as mod_authz_core (a missing user is not a refusal)', () => {
  const has = (client: string, u: string | undefined) => (a: Atom): boolean | undefined =>
    a.k === 'ip' ? a.v === client : a.k === 'valid-user' ? (u === undefined ? undefined : true) : false;
  const both = and([ip('1'), user]);
  const either = or([ip('1'), user]);
  assert.equal(decide(both, has('2', undefined)), 'denied');
  assert.equal(decide(both, has('1', undefined)), 'no-user');
  assert.equal(decide(both, has('1', 'alice')), 'granted');
  assert.equal(decide(either, has('1', undefined)), 'granted');
  assert.equal(decide(either, has('2', undefined)), 'no-user');
});

test('2.2 address and host matching', () => {
  assert.ok(ipMatches('127.0.0', '127.0.0.3'));
  assert.ok(ipMatches('127.0.0.0/31', '127.0.0.1'));
  assert.ok(!ipMatches('127.0.0.0/31', '127.0.0.2'));
  assert.ok(ipMatches('127.0.0.2/255.255.255.254', '127.0.0.3'));
  assert.ok(!ipMatches('10.1', '10.10.0.1'));
  assert.ok(inDomain('.example.com', 'www.example.com'));
  assert.ok(inDomain('example.com', 'example.com'));
  assert.ok(!inDomain('ample.com', 'example.com'));
  assert.equal(hostEntryKind('10.1'), 'ip');
  assert.equal(hostEntryKind('2001:db8::/32'), 'ip');
  assert.equal(hostEntryKind('apache.org'), 'host');
  assert.equal(hostEntryKind('env=!bad'), 'nenv');
  assert.equal(hostEntryKind('All'), 'all');
});

test('password hashes 2.2 wrote: {SHA} and $apr1$', () => {
  assert.equal(apr1('bob-pw', 'Xq7rT2ab'), '$apr1$Xq7rT2ab$5.7bWJs38iEHRuwj6GS7c.');
  assert.ok(verifyPassword('$apr1$Xq7rT2ab$5.7bWJs38iEHRuwj6GS7c.', 'bob-pw'));
  assert.ok(verifyPassword('{SHA}g2YDYHBhl9R/ddqtGep+ipAO4aU=', 'alice-pw'));
  assert.ok(!verifyPassword('{SHA}g2YDYHBhl9R/ddqtGep+ipAO4aU=', 'bob-pw'));
});

function model22(conf: string, files: Record<string, string> = {}): { root: string; model: ReturnType<typeof buildModel> } {
  const root = tempDir('plume-upgrade-unit-');
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text.replaceAll('@ROOT@', root));
  }
  fs.writeFileSync(path.join(root, 'httpd.conf'), conf.replaceAll('@ROOT@', root));
  const u = loadConfiguration(path.join(root, 'httpd.conf'), { ...DEFAULT_OPTIONS, htaccess: [root] });
  return { root, model: buildModel(u) };
}

test('2.2 evaluator: Satisfy is inherited on its own, host rules are replaced whole', () => {
  const { model } = model22(`DocumentRoot "@ROOT@/htdocs"
<Directory "@ROOT@/htdocs">
    Order deny,allow
    Deny from all
    Allow from 127.0.0.1
    Satisfy any
    AuthType Basic
    AuthName x
    AuthUserFile "@ROOT@/users"
    Require valid-user
</Directory>
<Directory "@ROOT@/htdocs/team">
    Allow from 127.0.0.2
</Directory>
`, { users: 'alice:{SHA}g2YDYHBhl9R/ddqtGep+ipAO4aU=\n', 'htdocs/team/a.html': 'x' });
  // The child's host configuration is only "Allow from 127.0.0.2" (Order deny,allow, no Deny):
  // every client passes the host rules, and Satisfy Any (inherited) lets everyone in.
  assert.equal(evaluate22(model, { path: '/team/a.html', client: '127.0.0.3' }).status, 200);
  assert.equal(evaluate22(model, { path: '/a.html', client: '127.0.0.3' }).status, 401);
  assert.equal(evaluate22(model, { path: '/a.html', client: '127.0.0.1' }).status, 200);
  assert.equal(evaluate22(model, { path: '/a.html', client: '127.0.0.3', user: 'alice', password: 'alice-pw' }).status, 200);
  assert.equal(evaluate22(model, { path: '/a.html', client: '127.0.0.3', user: 'alice', password: 'x' }).status, 401);
});

test('2.2 evaluator: Deny evaluated last with Order allow,deny; Satisfy Any without Require refuses; no AuthType is 500', () => {
  const { model } = model22(`DocumentRoot "@ROOT@/htdocs"
<Directory "@ROOT@/htdocs/a">
    Order allow,deny
    Allow from 127.0.0.1
    Deny from all
</Directory>
<Directory "@ROOT@/htdocs/b">
    Order deny,allow
    Deny from all
    Satisfy Any
</Directory>
<Directory "@ROOT@/htdocs/c">
    Require valid-user
</Directory>
<Location /b/x>
    Order allow,deny
    Allow from all
</Location>
`);
  assert.equal(evaluate22(model, { path: '/a/f', client: '127.0.0.1' }).status, 403);
  assert.equal(evaluate22(model, { path: '/b/f', client: '127.0.0.1' }).status, 403);
  assert.equal(evaluate22(model, { path: '/b/x/f', client: '127.0.0.1' }).status, 200);
  assert.equal(evaluate22(model, { path: '/c/f', client: '127.0.0.1', user: 'a', password: 'b' }).status, 500);
});

test('2.2 evaluator: <Limit> restricts rules to methods; .htaccess read under the 2.2 default', () => {
  const { model } = model22(`DocumentRoot "@ROOT@/htdocs"
<Directory "@ROOT@/htdocs">
    <Limit POST>
        Order deny,allow
        Deny from all
    </Limit>
</Directory>
`, { 'htdocs/h/.htaccess': 'Order deny,allow\nDeny from 127.0.0.2\n' });
  assert.equal(evaluate22(model, { method: 'GET', path: '/f', client: '127.0.0.1' }).status, 200);
  assert.equal(evaluate22(model, { method: 'POST', path: '/f', client: '127.0.0.1' }).status, 403);
  assert.equal(evaluate22(model, { path: '/h/f', client: '127.0.0.2' }).status, 403);
  assert.equal(evaluate22(model, { path: '/h/f', client: '127.0.0.1' }).status, 200);
});

test('renderState: methods that decide differently are split with <Limit>/<LimitExcept>', () => {
  const { model } = model22(`<Directory "/srv">
    Order allow,deny
    Allow from all
    <LimitExcept GET>
        Deny from all
    </LimitExcept>
</Directory>
`);
  const sec = model.sections.find((s) => s.arg === '/srv')!;
  assert.deepEqual(renderState(merge22([sec]), '    '),
    ['<Limit GET>', '    Require all granted', '</Limit>', '<LimitExcept GET>', '    Require all denied', '</LimitExcept>']);
});

test('FilterProvider: 2.2 dispatch and match as a 2.4 expression', () => {
  assert.equal(filterExpression('resp=Content-Type', '$text/html'), '%{CONTENT_TYPE} =~ m#text/html#i');
  assert.equal(filterExpression('req=User-Agent', '/MSIE 6/'), '%{req:User-Agent} =~ m#MSIE 6#');
  assert.equal(filterExpression('env=no-gzip', '!*'), '-z %{reqenv:no-gzip}');
  assert.equal(filterExpression('Content-Length', '>=1024'), '%{resp:Content-Length} -ge 1024');
  assert.equal(filterExpression('handler', 'server-status'), '%{HANDLER} =~ m#^server-status$#i');
});

test('FilterProvider: 2.2 match semantics kept (issue 19 item 17)', () => {
  // $str: a case-insensitive substring test (2.2 lowercases both sides).
  assert.equal(filterExpression('Content-Type', '$TEXT/'), '%{CONTENT_TYPE} =~ m#TEXT/#i');
  assert.equal(filterExpression('Content-Type', '$a.b'), '%{CONTENT_TYPE} =~ m#a\\.b#i');
  // /re/i keeps its flag; the regex runs to the last slash.
  assert.equal(filterExpression('req=User-Agent', '/MSIE/i'), '%{req:User-Agent} =~ m#MSIE#i');
  assert.equal(filterExpression('Content-Type', '/^text/html/'), '%{CONTENT_TYPE} =~ m#^text/html#');
  // =N: atoi() of both sides ("=text/html" compares with 0, which an unset value does not match).
  assert.equal(filterExpression('Content-Type', '=text/html'), '-n %{CONTENT_TYPE} && %{CONTENT_TYPE} -eq 0');
  assert.equal(filterExpression('resp=Content-Length', '=512'), '%{resp:Content-Length} -eq 512');
  assert.equal(filterExpression('resp=Content-Length', '<100'), '-n %{resp:Content-Length} && %{resp:Content-Length} -lt 100');
  assert.equal(filterExpression('resp=Content-Length', '!<100'), '-z %{resp:Content-Length} || !(%{resp:Content-Length} -lt 100)');
  // A plain value: case-insensitive comparison of the whole value.
  assert.equal(filterExpression('resp=X-Mode', 'Gzip'), '%{resp:X-Mode} =~ m#^Gzip$#i');
  assert.equal(filterExpression('resp=X-Mode', '!Gzip'), '!(%{resp:X-Mode} =~ m#^Gzip$#i)');
  assert.equal(filterExpression('bogus=X', 'y'), undefined);
  assert.equal(filterExpression('Content-Type', '/no-end'), undefined);
});

test('Mutex mechanisms: 2.2 lock files become 2.4 directories', () => {
  assert.equal(mutexMechanism('file:/var/run/ssl_mutex'), 'file:/var/run');
  assert.equal(mutexMechanism('yes'), 'default');
  assert.equal(mutexMechanism('no'), 'none');
  assert.equal(mutexMechanism('sem'), 'sem');
  assert.equal(mutexMechanism('sem:/x'), undefined);
  assert.equal(mutexMechanism('magic'), undefined);
});

test('SSI #if expr: 2.2 syntax recognised, 2.4 syntax left alone', () => {
  assert.ok(isLegacyExpr('$QUERY_STRING = /print/'));
  assert.ok(isLegacyExpr('"${REMOTE_USER}" = "admin"'));
  assert.ok(!isLegacyExpr("%{QUERY_STRING} =~ /print/"));
  assert.ok(!isLegacyExpr("v('REMOTE_USER') == 'admin'"));
  assert.ok(!isLegacyExpr('-n %{HTTP_REFERER}'));
});

test('Include: wildcards, directories, dot files', () => {
  const root = tempDir('plume-upgrade-inc-');
  for (const f of ['conf.d/b.conf', 'conf.d/a.conf', 'conf.d/.hidden.conf', 'conf.d/x.txt', 'dir/sub/z', 'dir/y']) {
    fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    fs.writeFileSync(path.join(root, f), '');
  }
  assert.deepEqual(resolveInclude(path.join(root, 'conf.d/*.conf'), false, 'f', 1).map((p) => path.relative(root, p)), ['conf.d/a.conf', 'conf.d/b.conf']);
  assert.deepEqual(resolveInclude(path.join(root, 'dir'), false, 'f', 1).map((p) => path.relative(root, p)), ['dir/sub/z', 'dir/y']);
  assert.deepEqual(resolveInclude(path.join(root, 'nothing/*.conf'), false, 'f', 1), []);
  assert.throws(() => resolveInclude(path.join(root, 'missing.conf'), false, 'f', 1));
  assert.deepEqual(resolveInclude(path.join(root, 'missing.conf'), true, 'f', 1), []);
  assert.ok(globToRegExp('*.[ch]').test('x.c'));
});

test('the tree prints every file back byte for byte; edits keep the line endings', () => {
  for (const text of ['a 1\r\n\r\n# c\r\n<D x>\r\n\tb \\\r\n  2\r\n</D>\r\n', 'no final newline', '', '\n\n  # only comments\n', 'x \\\ny\n']) {
    const d = Doc.parse('/x', 'x', 'main', text);
    assert.equal(d.text(), text);
    d.changed = true;
    assert.equal(d.text(), text, JSON.stringify(text));
  }
  const d = Doc.parse('/x', 'x', 'main', 'A 1\r\nB 2\r\n');
  d.replace(d.nodes[0]!, ['C 3'], 'r', true);
  assert.equal(d.text(), '# plume upgrade: r\r\nC 3\r\nB 2\r\n');
});
