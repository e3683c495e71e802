// `plume explain` for mod_rewrite: every rule and condition tried, in order, with file:line,
// input, captures and result, the internal redirect of a .htaccess front controller followed,
// and an external redirect reported with its Location.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runExplain, type ExplainRequest } from '../../../src/cli/explain/run.js';
import { buildReport, renderText } from '../../../src/cli/explain/report.js';

let root = '';

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-rewrite-explain-'));
  fs.mkdirSync(path.join(root, 'htdocs/blog'), { recursive: true });
  fs.writeFileSync(path.join(root, 'htdocs/blog/index.php'), 'front controller\n');
  fs.writeFileSync(path.join(root, 'htdocs/a.html'), 'a\n');
  fs.writeFileSync(path.join(root, 'htdocs/blog/.htaccess'), [
    'RewriteEngine On', 'RewriteBase /blog/', 'RewriteRule ^index\\.php$ - [L]',
    'RewriteCond %{REQUEST_FILENAME} !-f', 'RewriteCond %{REQUEST_FILENAME} !-d', 'RewriteRule . /blog/index.php [L]', '',
  ].join('\n'));
  fs.writeFileSync(path.join(root, 'httpd.conf'), [
    'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
    'LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so',
    'LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so',
    'ServerName localhost', 'Listen 8080', `DocumentRoot "${root}/htdocs"`,
    `<Directory "${root}/htdocs">`, '  AllowOverride All', '  Options FollowSymLinks', '</Directory>',
    'RewriteEngine On', 'RewriteCond %{HTTP_HOST} ^www\\.(.+)$ [NC]', 'RewriteRule ^/(.*)$ http://%1/$1 [R=301,L]', '',
  ].join('\n'));
});

after(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function request(url: string): ExplainRequest {
  return {
    serverRoot: root, configFile: path.join(root, 'httpd.conf'), defines: [], preDirectives: [], postDirectives: [],
    url, method: 'GET', clientIp: '127.0.0.1', clientPort: 50000, localIp: undefined, user: undefined, password: undefined, headers: [],
  };
}

test('a pretty URL: the .htaccess rules in order, then the internal redirect followed', async () => {
  const rep = buildReport(await runExplain(request('http://localhost:8080/blog/2024/hello?x=1')), 'http://localhost:8080/blog/2024/hello?x=1');
  assert.equal(rep.request.filename, path.join(root, 'htdocs/blog/index.php'));
  assert.equal(rep.request.internalRedirect, true);
  const rules = rep.rewrite.filter((s) => s.kind === 'rule');
  assert.deepEqual(rules.map((s) => [s.where?.replace(root + '/', ''), s.input, s.matched]), [
    ['httpd.conf:13', '/blog/2024/hello', true],
    ['htdocs/blog/.htaccess:3', '2024/hello', false],
    ['htdocs/blog/.htaccess:6', '2024/hello', true],
    ['httpd.conf:13', '/blog/index.php', true],
    ['htdocs/blog/.htaccess:3', 'index.php', true],
  ]);
  assert.equal(rules[2]!.result, 'rewritten: /blog/index.php?x=1');
  assert.equal(rules[2]!.flags, '[L]');
  const conds = rep.rewrite.filter((s) => s.kind === 'cond');
  assert.equal(conds[0]!.result, 'false');
  assert.equal(conds[1]!.input, path.join(root, 'htdocs/blog/2024'));
  assert.ok(rep.rewrite.some((s) => s.kind === 'result' && s.text === 'internal redirect to /blog/index.php?x=1'));
  assert.equal(rep.decision.status, 200);
  const text = renderText(rep);
  assert.match(text, /Rewriting \(mod_rewrite\), every rule tried, in order:/);
  assert.match(text, /RewriteRule \. \/blog\/index\.php \[L\] +htdocs\/blog\/\.htaccess:6 +input '2024\/hello' -> rewritten: \/blog\/index\.php\?x=1 +captures \$0="2" +flags \[L\]/);
});

test('an external redirect: the condition captures and the Location', async () => {
  const rep = buildReport(await runExplain(request('http://www.example.com/a.html')), 'http://www.example.com/a.html');
  const cond = rep.rewrite.find((s) => s.kind === 'cond')!;
  assert.deepEqual(cond.captures, ['www.example.com', 'example.com']);
  assert.ok(rep.rewrite.some((s) => s.kind === 'result' && s.text === 'external redirect: 301 Location: http://example.com/a.html'));
  assert.equal(rep.decision.status, 301);
});
