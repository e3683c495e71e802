// mod_alias: directive parsing and errors, alias_matches, translate_name and fixups.
// The expected Location values were measured with Apache 2.4.71 (Debian) on loopback.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import alias, {
  aliasMatches, compileRegex, escapeRedirectTarget, isUrl, mergeDirConfig, mergeServerConfig, pregsub,
  type AliasDirConfig, type AliasServerConfig,
} from '../../../src/modules/mappers/mod_alias.js';
import { evalString, parseStringExpr } from '../../../src/expr/index.js';
import { DECLINED, OK } from '../../../src/server/module.js';
import { ServerRec } from '../../../src/server/server-rec.js';
import type { Request } from '../../../src/server/request/request.js';
import { Scope, fakeRuntime, indexModule, makeCtx, makeRequest, type Where } from './helpers.js';

indexModule(alias);

const translate = alias.decl.hooks!.translateName as { fn: (r: Request) => number };
const fixup = alias.decl.hooks!.fixups as { fn: (r: Request) => number };

/** Runs directives at server level and in sections; returns a request factory. */
function configure(serverLines: string[], sections: { where: Where; lines: string[] }[] = []) {
  const { ctx, log } = makeCtx('/srv/plume');
  const server = new ServerRec(0, false, '/srv/plume/httpd.conf', 0);
  const top = new Scope<AliasServerConfig, AliasDirConfig>(ctx, alias, {}, undefined, server);
  serverLines.forEach((l, i) => {
    const s = new Scope<AliasServerConfig, AliasDirConfig>(ctx, alias, { line: 20 + i }, top.srv, server);
    assert.equal(s.run(l), undefined, l);
    Object.assign(top.dir, mergeDirConfig(top.dir, s.dir));
  });
  let dirConf = top.dir;
  const secConfs = sections.map(({ where, lines }) => {
    const s = new Scope<AliasServerConfig, AliasDirConfig>(ctx, alias, where, top.srv, server);
    for (const l of lines) assert.equal(s.run(l), undefined, l);
    return s.dir;
  });
  server.moduleConfig[alias.index] = top.srv;
  const f = fakeRuntime(ctx, { serverName: '127.0.0.1', port: 28080 });
  return {
    log, f,
    /** A request; `sections` picks which configured sections apply (all by default). */
    req(uri: string, args?: string, use: number[] = secConfs.map((_, i) => i)): Request {
      let d = dirConf;
      for (const i of use) d = mergeDirConfig(d, secConfs[i]!);
      const vec: unknown[] = [];
      vec[alias.index] = d;
      return makeRequest(f.rt, vec, { uri, args }, server);
    },
  };
}

function errorOf(line: string, where: Where = {}): string | undefined {
  const { ctx } = makeCtx();
  return new Scope<AliasServerConfig, AliasDirConfig>(ctx, alias, where).run(line);
}

test('alias_matches: whole segments, slash runs match slash runs', () => {
  assert.equal(aliasMatches('/a', '/a'), 2);
  assert.equal(aliasMatches('/a/c', '/a'), 2);
  assert.equal(aliasMatches('/ab', '/a'), 0);
  assert.equal(aliasMatches('/icons', '/icons/'), 0);
  assert.equal(aliasMatches('/icons/x', '/icons/'), 7);
  assert.equal(aliasMatches('//a//c', '/a'), 3);
  assert.equal(aliasMatches('/one/two/f', '/one//two'), 8);
  assert.equal(aliasMatches('/one//two/f', '/one/two'), 9);
  assert.equal(aliasMatches('/x', '/'), 1);
  assert.equal(aliasMatches('/A', '/a'), 0, 'case-sensitive');
  assert.equal(aliasMatches('/x', undefined), 0);
});

test('ap_pregsub, ap_is_url, PCRE inline options', () => {
  const m = /^\/m\/(.*)$/.exec('/m/abc')!;
  // Measured: RedirectMatch ^/m/(.*)$ "http://x/\$1-\q-$1-&-$9-\\" → http://x/$1-q-abc-&--%5c
  assert.equal(pregsub('http://x/\\$1-\\q-$1-&-$9-\\', m), 'http://x/$1-q-abc-&--\\');
  assert.equal(isUrl('http://x'), true);
  assert.equal(isUrl('mailto:a'), true);
  assert.equal(isUrl('/x'), false);
  assert.equal(isUrl('foo'), false);
  assert.equal(isUrl(':x'), false);
  assert.equal(compileRegex('(?i)^/CI/(.*)$')!.test('/ci/z'), true);
  assert.equal(compileRegex('('), null);
  assert.equal(compileRegex('^/(?P<n>[a-z]+)/(?P=n)$')!.exec('/ab/ab')?.groups?.n, 'ab');
});

test('computed redirect targets: path escaped, query and fragment kept, default port and password hidden (measured)', () => {
  assert.equal(escapeRedirectTarget('http://x:80/p:q@r/|zz y ;,[]{}^"'), 'http://x/p:q@r/%7czz%20y%20;,%5b%5d%7b%7d%5e%22');
  assert.equal(escapeRedirectTarget('http://u:pw@x:8080/a?b#fr'), 'http://u:XXXXXXXX@x:8080/a?b#fr');
  assert.equal(escapeRedirectTarget('http://x/a?q=1 2#fr ag'), 'http://x/a?q=1 2#fr ag');
  assert.equal(escapeRedirectTarget('https://x:443/a'), 'https://x/a');
  assert.equal(escapeRedirectTarget('mailto:me@x'), 'mailto:me@x');
  assert.equal(escapeRedirectTarget('/a b'), '/a%20b');
  assert.equal(escapeRedirectTarget('http://r.example//r5/x y#frag'), 'http://r.example//r5/x%20y#frag');
  assert.equal(escapeRedirectTarget('http://a.b/c%20d'), 'http://a.b/c%2520d');
});

test('directive errors, worded as Apache 2.4.71 words them', () => {
  const cases: [string, Where, string | undefined][] = [
    ['Redirect', {}, 'Redirect takes one, two or three arguments, an optional status, then document to be redirected and destination URL'],
    ['Redirect /a', {}, 'URL to redirect to is missing'],
    ['Redirect foo /a /b', {}, 'Redirect: invalid first argument (of three)'],
    ['Redirect 301 /a', {}, 'URL to redirect to is missing'],
    ['Redirect 410 /a /b', {}, 'Redirect URL not valid for this status'],
    ['Redirect /a b', {}, 'Redirect to non-URL'],
    ['Redirect 200 /a', {}, undefined],
    ['Redirect 200 /a /b', {}, 'Redirect URL not valid for this status'],
    ['Redirect /a /b /c', {}, 'Redirect: invalid first argument (of three)'],
    ['Redirect a://b /b', {}, undefined],
    ['Redirect 3xx /a /b', {}, 'Redirect URL not valid for this status'],
    ['Redirect foo', {}, 'URL to redirect to is missing'],
    ['RedirectMatch 301 ^/a b', {}, undefined],
    ['RedirectMatch "(" /b', {}, 'Regular expression could not be compiled.'],
    ['RedirectTemp /a', {}, 'RedirectTemp takes two arguments, a document to be redirected, then the destination URL'],
    ['RedirectPermanent /a b c', {}, 'RedirectPermanent takes two arguments, a document to be redirected, then the destination URL'],
    ['AliasMatch "(" /b', {}, 'Regular expression could not be compiled.'],
    ['ScriptAliasMatch ^/a', {}, 'ScriptAliasMatch takes two arguments, a regular expression and a filename'],
    ['Alias /a', {}, 'Alias must have two arguments when used globally'],
    ['Alias /a', { path: '/x', parents: ['<Directory'] }, 'Alias cannot occur within <Directory> section'],
    ['Alias /a', { path: '/x', parents: ['<Files'] }, 'Alias cannot occur within <Files> section'],
    ['Alias /a', { path: '/x', parents: ['<Location', '<If'] }, 'Alias cannot occur within <If> section'],
    ['Alias /a /b', { path: '/x', parents: ['<Directory'] }, 'Alias cannot occur within directory context'],
    ['Alias /a /b', { path: '/x', parents: ['<Location'] }, 'Alias cannot occur within directory context'],
    ['Alias /a /b', { path: '/x', parents: ['<Location', '<Limit'], limited: true }, 'Alias cannot occur within <Limit> or <LimitExcept> section'],
    ['Alias "/a/%{NOPE}"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{NOPE}': Variable 'NOPE' does not exist"],
    ['Alias "/a/%{nofunc:x}"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{nofunc:x}': Function 'nofunc' does not exist"],
    ['Alias "/a/%{QUERY_STRING"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{QUERY_STRING': syntax error, unexpected T_ERROR, expecting T_VAR_END or ':': Unterminated string or variable"],
    ['Alias "/a/%{}"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{}': syntax error, unexpected T_VAR_END, expecting T_ID"],
    ['Alias "/a/%{foo bar}"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{foo bar}': syntax error, unexpected T_ERROR, expecting T_VAR_END or ':': Invalid character in variable name ' '"],
    ['Alias "/a/%{-}"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{-}': syntax error, unexpected T_ERROR, expecting T_ID: Invalid character in variable name '-'"],
    ['Alias "/a/%{tolower:bar"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{tolower:bar': Unterminated string or variable"],
    ['Alias "/a/%{HTTP_HOST:x}"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{HTTP_HOST:x}': Function 'HTTP_HOST' does not exist"],
    ['Alias "/a/%{tolower}"', { path: '/x', parents: ['<Location'] }, "Cannot parse alias expression '/a/%{tolower}': Variable 'tolower' does not exist"],
    ['Alias "/a/%{http_host}/%{req:Host}/%{tolower:%{QUERY_STRING}}/$1/\\x"', { path: '/x', parents: ['<Location'] }, undefined],
    ['Redirect "%{foo"', { path: '/x', parents: ['<Location'] }, "Cannot parse redirect expression '%{foo': syntax error, unexpected T_ERROR, expecting T_VAR_END or ':': Unterminated string or variable"],
    ['Redirect gone', { path: '/x', parents: ['<Location'] }, undefined],
    ['Redirect 301', { path: '/x', parents: ['<Location'] }, 'URL to redirect to is missing'],
    ['Redirect 503', { path: '/x', parents: ['<Location'] }, undefined],
    ['Redirect foo', { path: '/x', parents: ['<Location'] }, undefined],
    ['Redirect "/a" "/b"', { path: '/x', parents: ['<Location'] }, undefined],
    ['AliasPreservePath maybe', {}, 'AliasPreservePath must be On or Off'],
  ];
  for (const [line, where, want] of cases) assert.equal(errorOf(line, where), want, line);
});

test('AH00671: an Alias overlapped by an earlier one is warned about (measured text)', () => {
  const { log } = configure(['Alias /a /b', 'Alias /a/c /d', 'ScriptAlias /a/e /f', 'AliasMatch ^/z /y', 'Alias /z/q /r']);
  const lines = log.lines.map((l) => l.replace(/^\[[^\]]*\] /, '[time] ').replace(/\[pid \d+:tid \d+\]/, '[pid]'));
  assert.deepEqual(lines, [
    '[time] [alias:warn] [pid] AH00671: The Alias directive in /srv/plume/httpd.conf at line 21 will probably never match because it overlaps an earlier Alias.',
    '[time] [alias:warn] [pid] AH00671: The ScriptAlias directive in /srv/plume/httpd.conf at line 22 will probably never match because it overlaps an earlier Alias.',
    '[time] [alias:warn] [pid] AH00671: The Alias directive in /srv/plume/httpd.conf at line 24 will probably never match because it overlaps an earlier AliasMatch.',
  ]);
});

test('server redirects in translate_name: status, target, path and query carried over (measured)', () => {
  const c = configure([
    'Redirect /a http://x.example/b',
    'Redirect permanent /p /q',
    'Redirect 303 /s3 http://y.example/s',
    'Redirect gone /g',
    'Redirect 410 /g2',
    'RedirectMatch ^/rm/(.*)\\.html$ http://z.example/$1.htm',
    'RedirectMatch 301 ^/rq/(.*)$ /target?x=$1',
    'Redirect /sp http://x.example/a%20b',
    'Redirect /enc http://x.example/e',
    'Redirect /e http://x/',
    'RedirectMatch ^/n/(a)?(.*)$ "http://x:80/p:q@r/$1|$2 ;,[]{}^\\""',
    'Redirect /ssl https://s:443/p',
  ]);
  const cases: [string, string | undefined, number, string | undefined][] = [
    ['/a', undefined, 302, 'http://x.example/b'],
    ['/a/c', 'q=1', 302, 'http://x.example/b/c?q=1'],
    ['/p/x', undefined, 301, 'http://127.0.0.1:28080/q/x'],
    ['/s3/z', undefined, 303, 'http://y.example/s/z'],
    ['/g/x', undefined, 410, undefined],
    ['/g2', undefined, 410, undefined],
    ['/rm/foo.html', 'k=v', 302, 'http://z.example/foo.htm?k=v'],
    ['/rq/abc', 'k=v', 301, 'http://127.0.0.1:28080/target?x=abc'],
    ['/sp/x y', 'z', 302, 'http://x.example/a%20b/x%20y?z'],
    ['/enc/\u00c3\u00a9/?#x', undefined, 302, 'http://x.example/e/%c3%a9/%3f%23x'],
    ['/e/ !"#$%&\'()*+,-.09:;<=>?@AZ[\\]^_`az{|}~', undefined, 302, "http://x//%20!%22%23$%25&'()*+,-.09:;%3c=%3e%3f@AZ%5b%5c%5d%5e_%60az%7b%7c%7d~"],
    ['/n/zz y', undefined, 302, 'http://x/p:q@r/%7czz%20y%20;,%5b%5d%7b%7d%5e%22'],
    ['/ssl/q', undefined, 302, 'https://s:443/p/q'],
  ];
  for (const [uri, args, status, location] of cases) {
    const r = c.req(uri, args);
    assert.equal(translate.fn(r), status, uri);
    assert.equal(r.headersOut.get('Location'), location, uri);
  }
  const miss = c.req('/ab');
  assert.equal(translate.fn(miss), DECLINED);
});

test('aliases in translate_name: file name, handler and note; regex substitution', () => {
  const c = configure([
    'Redirect /al/moved http://m/',
    'Alias /al /srv/other',
    'Alias /one//two /srv/other/x',
    'AliasMatch ^/am/(.*)$ /srv/other/$1',
    'ScriptAlias /cgi-bin/ /srv/cgi/',
    'Alias /rel relative/dir',
  ]);
  const t = (uri: string): Request => {
    const r = c.req(uri);
    const st = translate.fn(r);
    assert.equal(st, OK, uri);
    return r;
  };
  assert.equal(t('/al/top.txt').filename, '/srv/other/top.txt');
  assert.equal(t('/al').filename, '/srv/other');
  assert.equal(t('/one/two/f.txt').filename, '/srv/other/x/f.txt');
  assert.equal(t('/am/top.txt').filename, '/srv/other/top.txt');
  const cgi = t('/cgi-bin/s.cgi');
  assert.equal(cgi.filename, '/srv/cgi/s.cgi');
  assert.equal(cgi.handler, 'cgi-script');
  assert.equal(cgi.notes.get('alias-forced-type'), 'cgi-script');
  assert.equal(t('/rel/f').filename, '/srv/plume/relative/dir/f');
  // Redirects come before aliases, whatever the order.
  const moved = c.req('/al/moved/x');
  assert.equal(translate.fn(moved), 302);
  assert.equal(moved.headersOut.get('Location'), 'http://m//x');
  assert.equal(translate.fn(c.req('/cgi-bin')), DECLINED, 'a trailing slash in the alias is required');
  assert.equal(translate.fn(c.req('*')), DECLINED);
});

test('<Location> one-argument forms: expressions, AliasPreservePath, RedirectRelative (measured)', () => {
  const c = configure([], [
    { where: { path: '/files', parents: ['<Location'] }, lines: ['AliasPreservePath on', 'Alias "/srv/other"'] },
    { where: { path: '/single', parents: ['<Location'] }, lines: ['Alias "/srv/other/single.txt"'] },
    { where: { path: '/exp', parents: ['<Location'] }, lines: ['Alias "/srv/other/%{QUERY_STRING}"'] },
    { where: { path: '/r1', parents: ['<Location'] }, lines: ['Redirect "http://r.example/one"'] },
    { where: { path: '/r2', parents: ['<Location'] }, lines: ['Redirect permanent "/two?%{QUERY_STRING}"'] },
    { where: { path: '/r3', parents: ['<Location'] }, lines: ['Redirect gone'] },
    { where: { path: '/r4', parents: ['<Location'] }, lines: ['RedirectRelative on', 'Redirect "/rel/x y"'] },
    { where: { path: '/r5', parents: ['<Location'] }, lines: ['Redirect "http://r.example/%{REQUEST_URI}#frag"'] },
    { where: { path: '/y', parents: ['<Location'] }, lines: ['Redirect foo'] },
    { where: { path: '/z', parents: ['<Location'] }, lines: ['Redirect "%{QUERY_STRING}"'] },
    { where: { path: '/pp', parents: ['<Location'] }, lines: ['AliasPreservePath on', 'Redirect "http://r.example/pp"'] },
    { where: { path: '/sc', parents: ['<Location'] }, lines: ['ScriptAlias "/srv/cgi/run"'] },
    { where: { path: '/x', parents: ['<Location'] }, lines: ['Redirect 503'] },
  ]);
  const at = (i: number, uri: string, args?: string): Request => c.req(uri, args, [i]);
  let r = at(0, '/files/sub/g.txt');
  assert.equal(translate.fn(r), OK);
  assert.equal(r.filename, '/srv/other/sub/g.txt');
  r = at(0, '/files');
  assert.equal(translate.fn(r), OK);
  assert.equal(r.filename, '/srv/other');
  r = at(1, '/single/anything/here');
  assert.equal(translate.fn(r), OK);
  assert.equal(r.filename, '/srv/other/single.txt');
  r = at(2, '/exp', 'f.txt');
  assert.equal(translate.fn(r), OK);
  assert.equal(r.filename, '/srv/other/f.txt');
  const redirects: [number, string, string | undefined, number, string | undefined][] = [
    [3, '/r1/a/b', 'q=1', 302, 'http://r.example/one?q=1'],
    [4, '/r2/a', 'q=1', 301, 'http://127.0.0.1:28080/two?q=1'],
    [5, '/r3/x', undefined, 410, undefined],
    [6, '/r4/q', 'z=1', 302, '/rel/x%20y?z=1'],
    [7, '/r5/x y', 'q', 302, 'http://r.example//r5/x%20y#frag?q'],
    [8, '/y', undefined, 500, undefined],
    [9, '/z', 'http://a.b/c%20d', 302, 'http://a.b/c%2520d?http://a.b/c%20d'],
    [9, '/z', '/local?x', 302, 'http://127.0.0.1:28080/local?x'],
    [10, '/pp/a/b', undefined, 302, 'http://r.example/pp'],
    [12, '/x/a', undefined, 503, undefined],
  ];
  for (const [i, uri, args, status, location] of redirects) {
    const q = at(i, uri, args);
    assert.equal(translate.fn(q), status, `${uri}?${args}`);
    assert.equal(q.headersOut.get('Location'), location, `${uri}?${args}`);
  }
  assert.match(c.f.errorLog.lines.join('\n'), /\[alias:3\] .*AH00674: cannot redirect '\/y' to 'foo'; target is not a valid absoluteURI or abs_path/);
  assert.match(c.f.errorLog.lines.join('\n'), /\[alias:7\] .*AH00673: incomplete redirection target of '\/local\?x' for URI '\/z' modified to 'http:\/\/127.0.0.1:28080\/local\?x'/);
  r = at(11, '/sc/x');
  assert.equal(translate.fn(r), OK);
  assert.equal(r.filename, '/srv/cgi/run');
  assert.equal(r.handler, 'cgi-script');
});

test('section redirects run in fixups, the more specific section first (measured)', () => {
  const c = configure([], [
    { where: { path: '/srv/htdocs/d1', parents: ['<Directory'] }, lines: ['Redirect /d1/x.txt http://d.example/x', 'RedirectMatch ^/d1/(.*)$ http://e.example/$1'] },
    { where: { path: '/d2', parents: ['<Location'] }, lines: ['RedirectMatch 301 (.*)y(.*) http://e.example/$2-$1-$0'] },
    { where: { path: '/r6', parents: ['<Location'] }, lines: ['Redirect 301 /r6/z http://f.example/zz'] },
    { where: { path: '/srv/htdocs/d3', htaccess: true }, lines: ['Redirect /d3/a http://h.example/z'] },
    { where: { path: '/srv/htdocs/d1/deeper', parents: ['<Directory'] }, lines: ['Redirect /d1 http://deeper.example'] },
  ]);
  const cases: [number[], string, string | undefined, number, string | undefined][] = [
    [[0], '/d1/x.txt', 'a=b', 302, 'http://d.example/x?a=b'],
    [[0], '/d1/other', undefined, 302, 'http://e.example/other'],
    [[1], '/d2/y.txt', undefined, 301, 'http://e.example/.txt-/d2/-/d2/y.txt'],
    [[2], '/r6/z', undefined, 301, 'http://f.example/zz'],
    [[2], '/r6/y', undefined, DECLINED, undefined],
    [[3], '/d3/a', undefined, 302, 'http://h.example/z'],
    [[0, 4], '/d1/x.txt', undefined, 302, 'http://deeper.example/x.txt'],
  ];
  for (const [use, uri, args, status, location] of cases) {
    const r = c.req(uri, args, use);
    assert.equal(translate.fn(r), DECLINED, `translate ${uri}`);
    assert.equal(fixup.fn(r), status, uri);
    assert.equal(r.headersOut.get('Location'), location, uri);
  }
});

test('DIFFERENCE: a bare status at server level (httpd crashes on it) never matches', () => {
  const c = configure(['Redirect gone', 'Redirect 404']);
  assert.equal(translate.fn(c.req('/')), DECLINED);
  assert.equal(translate.fn(c.req('/x')), DECLINED);
});

test('server configs merge: a virtual host\'s entries before the main server\'s', () => {
  const main: AliasServerConfig = { aliases: [{ fake: '/a', real: '/main', handler: undefined, regexp: null, redirStatus: 0 }], redirects: [] };
  const vh: AliasServerConfig = { aliases: [{ fake: '/a', real: '/vhost', handler: undefined, regexp: null, redirStatus: 0 }], redirects: [] };
  assert.deepEqual(mergeServerConfig(main, vh).aliases.map((a) => a.real), ['/vhost', '/main']);
});

test('string expressions evaluate request variables and functions', () => {
  const { ctx } = makeCtx();
  const { rt } = fakeRuntime(ctx);
  const r = makeRequest(rt, [], { uri: '/p q', args: 'A=1' });
  r.headersIn.set('Host', 'Example.com');
  r.subprocessEnv.set('MATCH_N', '42');
  // (The engine in src/expr; \x is no escape in httpd's scanner: "\x41" reads "x41".)
  const e = parseStringExpr('%{REQUEST_URI}|%{query_string}|%{req:host}|%{tolower:%{HTTP_HOST}}|%{env:MATCH_N}|%{escape:%{REQUEST_URI}}|$1|\\x41|50%');
  assert.ok(e.ok);
  assert.equal(evalString(e.expr, r), '/p q|A=1|Example.com|example.com|42|/p%20q||x41|50%');
});
