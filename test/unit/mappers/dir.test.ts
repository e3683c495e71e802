// mod_dir: directives, merging, and the fixups (slash redirect, index search, fallback).
// Behaviour checked against Apache 2.4.71 (see the comments for the measured cases).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import dir, { mergeDirConfig, parseIndexRedirect, subRequestUri, type DirConfig } from '../../../src/modules/mappers/mod_dir.js';
import { DECLINED, OK } from '../../../src/server/module.js';
import { escapeUri as escapePath } from '../../../src/lib/urlencoded.js';
import type { Request } from '../../../src/server/request/request.js';
import { Scope, fakeRuntime, indexModule, makeCtx, makeRequest, statOf, type FakeRuntimeOptions } from './helpers.js';

indexModule(dir);

const FILE = statOf('file');
const DIR = statOf('dir');

function conf(lines: string[], path?: string): DirConfig {
  const { ctx } = makeCtx();
  const s = new Scope<unknown, DirConfig>(ctx, dir, { path });
  for (const l of lines) assert.equal(s.run(l), undefined, l);
  return s.dir;
}

const fixups = dir.decl.hooks!.fixups as { fn: (r: Request) => number | Promise<number> };

function setup(c: DirConfig, opts: FakeRuntimeOptions = {}) {
  const { ctx } = makeCtx();
  const f = fakeRuntime(ctx, opts);
  const vec: unknown[] = [];
  vec[dir.index] = c;
  return { ...f, vec };
}

/** A subrequest result as lookupUri would give it. */
function sub(f: { rt: Request['rt'] }, vec: unknown[], init: Partial<Request>): Request {
  const rr = makeRequest(f.rt, vec, {});
  Object.assign(rr, init);
  return rr;
}

test('DirectoryIndex: a list, later directives of the same section add, "disabled" alone empties', () => {
  assert.deepEqual(conf(['DirectoryIndex a.html "b c.html"']).indexNames, ['a.html', 'b c.html']);
  assert.deepEqual(conf(['DirectoryIndex a.html', 'DirectoryIndex b.html']).indexNames, ['a.html', 'b.html']);
  assert.deepEqual(conf(['DirectoryIndex a.html', 'DirectoryIndex disabled']).indexNames, []);
  assert.deepEqual(conf(['DirectoryIndex Disabled', 'DirectoryIndex x']).indexNames, ['x']);
  assert.deepEqual(conf(['DirectoryIndex disabled foo']).indexNames, ['disabled', 'foo']);
  // A deeper section's list replaces the inherited one.
  const m = mergeDirConfig(conf(['DirectoryIndex a.html']), conf(['DirectoryIndex b.html'], '/x'));
  assert.deepEqual(m.indexNames, ['b.html']);
  assert.deepEqual(mergeDirConfig(conf(['DirectoryIndex a.html']), conf([], '/x')).indexNames, ['a.html']);
});

test('DirectoryIndexRedirect, DirectorySlash, FallbackResource: values and errors', () => {
  assert.equal(parseIndexRedirect('on'), 302);
  assert.equal(parseIndexRedirect('OFF'), 0);
  assert.equal(parseIndexRedirect('permanent'), 301);
  assert.equal(parseIndexRedirect('seeother'), 303);
  assert.equal(parseIndexRedirect('307'), 307);
  assert.equal(parseIndexRedirect('404'), 'DirectoryIndexRedirect only accepts values between 300 and 399');
  assert.equal(parseIndexRedirect('x'), 'DirectoryIndexRedirect ON|OFF|permanent|temp|seeother|3xx');
  const { ctx } = makeCtx();
  const s = new Scope<unknown, DirConfig>(ctx, dir);
  assert.equal(s.run('DirectorySlash maybe'), 'DirectorySlash must be On or Off');
  assert.equal(s.run('FallbackResource'), 'FallbackResource takes one argument, Set a default handler');
  assert.equal(s.run('DirectoryIndexRedirect 200'), 'DirectoryIndexRedirect only accepts values between 300 and 399');
  const m = mergeDirConfig(conf(['DirectorySlash Off', 'FallbackResource /i.php']), conf(['FallbackResource disabled'], '/x'));
  assert.equal(m.doSlash, false);
  assert.equal(m.dflt, 'disabled');
});

test('escaping and relative subrequest URIs as httpd builds them', () => {
  // Measured: Redirect of /e/<every printable byte> keeps alnum and !$&'()*+,-.:;=@_~ only.
  assert.equal(escapePath(' !"#$%&\'()*+,-.0123456789:;<=>?@AZ[\\]^_`az{|}~\u0001\u007f\u0080\u00ff'),
    "%20!%22%23$%25&'()*+,-.0123456789:;%3c=%3e%3f@AZ%5b%5c%5d%5e_%60az%7b%7c%7d~%01%7f%80%ff");
  const { ctx } = makeCtx();
  const { rt } = fakeRuntime(ctx);
  const r = makeRequest(rt, [], { uri: '/sp ace/' });
  assert.equal(subRequestUri(r, 'a%20b.html'), '/sp%20ace/a%20b.html');
  assert.equal(subRequestUri(r, '/top.html'), '/top.html');
});

test('a directory without trailing slash: 301 to the escaped slash URL, query kept (measured)', async () => {
  const f = setup(conf([]));
  const r = makeRequest(f.rt, f.vec, { uri: '/d d', args: 'x=%20y', finfo: DIR, filename: '/srv/htdocs/d d' });
  assert.equal(await fixups.fn(r), 301);
  assert.equal(r.headersOut.get('Location'), 'http://localhost:8080/d%20d/?x=%20y');
  assert.equal(r.handler, 'httpd/unix-directory');

  const off = setup(conf(['DirectorySlash Off']));
  const r2 = makeRequest(off.rt, off.vec, { uri: '/ns', finfo: DIR });
  assert.equal(await fixups.fn(r2), DECLINED);
  assert.equal(r2.headersOut.get('Location'), undefined);

  // redirect-carefully spares non-GET requests; HEAD is a GET for httpd.
  for (const [method, want] of [['POST', DECLINED], ['HEAD', 301], ['GET', 301]] as const) {
    const r3 = makeRequest(f.rt, f.vec, { uri: '/d', finfo: DIR, method });
    r3.subprocessEnv.set('redirect-carefully', '1');
    assert.equal(await fixups.fn(r3), want, method);
  }
  // Path info on a directory: never.
  const r4 = makeRequest(f.rt, f.vec, { uri: '/d/x', finfo: DIR, pathInfo: '/x' });
  assert.equal(await fixups.fn(r4), DECLINED);
});

test('index search: the first 200 regular file wins, by fast redirect; args go with it', async () => {
  const f = setup(conf(['DirectoryIndex first.html second.html']), {
    lookup: (_r, uri) => uri.startsWith('/multi/second.html')
      ? sub(f, f.vec, { status: 200, finfo: FILE, uri: '/multi/second.html', args: 'q=1', filename: '/srv/htdocs/multi/second.html', contentType: 'text/html' })
      : sub(f, f.vec, { status: 200, finfo: null, uri: '/multi/first.html', filename: '/srv/htdocs/multi/first.html' }),
  });
  const r = makeRequest(f.rt, f.vec, { uri: '/multi/', args: 'q=1', finfo: DIR, filename: '/srv/htdocs/multi/' });
  r.notes.set('kept', 'main');
  assert.equal(await fixups.fn(r), OK);
  assert.deepEqual(f.lookups, ['/multi/first.html?q=1', '/multi/second.html?q=1']);
  assert.equal(r.uri, '/multi/second.html');
  assert.equal(r.filename, '/srv/htdocs/multi/second.html');
  assert.equal(r.finfo, FILE);
  assert.equal(r.contentType, 'text/html');
  assert.equal(r.handler, undefined);
  assert.equal(r.notes.get('kept'), 'main');
});

test('index search: DirectoryIndexRedirect answers with the index URL (unescaped, no args: measured)', async () => {
  const f = setup(conf(['DirectoryIndex "a b.html"', 'DirectoryIndexRedirect permanent']), {
    lookup: () => sub(f, f.vec, { status: 200, finfo: FILE, uri: '/sp ace/a b.html', args: 'x=1' }),
  });
  const r = makeRequest(f.rt, f.vec, { uri: '/sp ace/', args: 'x=1', finfo: DIR });
  assert.equal(await fixups.fn(r), 301);
  assert.equal(r.headersOut.get('Location'), 'http://localhost:8080/sp ace/a b.html');
});

test('index search: errors are kept, redirects propagate, nothing found declines with a note', async () => {
  // A forbidden index: 403 rather than a listing (measured).
  const f = setup(conf(['DirectoryIndex index.html other.html']), {
    lookup: (_r, uri) => sub(f, f.vec, uri.includes('index') ? { status: 403 } : { status: 200, finfo: null }),
  });
  const r = makeRequest(f.rt, f.vec, { uri: '/forb/', finfo: DIR });
  assert.equal(await fixups.fn(r), 403);

  // The index is a directory: its own slash redirect comes back (measured).
  const g = setup(conf([]), {
    lookup: () => {
      const rr = sub(g, g.vec, { status: 301 });
      rr.headersOut.set('Location', 'http://127.0.0.1/dirx/index.html/');
      return rr;
    },
  });
  const r2 = makeRequest(g.rt, g.vec, { uri: '/dirx/', finfo: DIR });
  assert.equal(await fixups.fn(r2), 301);
  assert.equal(r2.headersOut.get('Location'), 'http://127.0.0.1/dirx/index.html/');

  // 401 counts only for the last name.
  const h = setup(conf(['DirectoryIndex a b']), { lookup: (_r, uri) => sub(h, h.vec, { status: uri.endsWith('a') ? 401 : 404 }) });
  assert.equal(await fixups.fn(makeRequest(h.rt, h.vec, { uri: '/p/', finfo: DIR })), 401);

  const n = setup(conf([]), { lookup: () => sub(n, n.vec, { status: 200, finfo: null }) });
  const r3 = makeRequest(n.rt, n.vec, { uri: '/empty/', finfo: DIR });
  assert.equal(await fixups.fn(r3), DECLINED);
  assert.equal(r3.notes.get('dir-index-names'), 'index.html');
  assert.equal(r3.handler, 'httpd/unix-directory');

  // DirectoryIndex disabled: nothing is looked up.
  const d = setup(conf(['DirectoryIndex disabled']));
  const r4 = makeRequest(d.rt, d.vec, { uri: '/off/', finfo: DIR });
  assert.equal(await fixups.fn(r4), DECLINED);
  assert.deepEqual(d.lookups, []);
  assert.equal(r4.notes.get('dir-index-names'), '');
});

test('DirectoryCheckHandler: another handler takes the directory (measured: SetHandler + On → 404)', async () => {
  const f = setup(conf(['DirectoryCheckHandler On']), { lookup: () => sub(f, f.vec, { status: 200, finfo: FILE, uri: '/h/index.html' }) });
  const r = makeRequest(f.rt, f.vec, { uri: '/h/', finfo: DIR, handler: 'default-handler', contentType: 'httpd/unix-directory' });
  assert.equal(await fixups.fn(r), DECLINED);
  assert.equal(r.contentType, undefined);
  assert.deepEqual(f.lookups, []);
  const g = setup(conf([]), { lookup: () => sub(g, g.vec, { status: 200, finfo: FILE, uri: '/h2/index.html' }) });
  const r2 = makeRequest(g.rt, g.vec, { uri: '/h2/', finfo: DIR, handler: 'default-handler' });
  assert.equal(await fixups.fn(r2), OK);
  assert.equal(r2.uri, '/h2/index.html');
});

test('FallbackResource: only for nothing on disk and no handler; relative to the request', async () => {
  const f = setup(conf(['FallbackResource fallback.html']), {
    lookup: (_r, uri) => sub(f, f.vec, { status: 200, finfo: FILE, uri: uri.replace(/\?.*/, ''), filename: '/srv/htdocs/fb/fallback.html' }),
  });
  const r = makeRequest(f.rt, f.vec, { uri: '/fb/nothere', args: 'q=2', finfo: null });
  assert.equal(await fixups.fn(r), OK);
  assert.deepEqual(f.lookups, ['/fb/fallback.html?q=2']);
  assert.equal(r.filename, '/srv/htdocs/fb/fallback.html');

  const withHandler = makeRequest(f.rt, f.vec, { uri: '/fb/x.cgi', finfo: null, handler: 'cgi-script' });
  assert.equal(await fixups.fn(withHandler), DECLINED);
  const file = makeRequest(f.rt, f.vec, { uri: '/fb/real', finfo: FILE });
  assert.equal(await fixups.fn(file), DECLINED);

  const off = setup(conf(['FallbackResource disabled']));
  assert.equal(await fixups.fn(makeRequest(off.rt, off.vec, { uri: '/x', finfo: null })), DECLINED);
  const none = setup(conf([]));
  assert.equal(await fixups.fn(makeRequest(none.rt, none.vec, { uri: '/x', finfo: null })), DECLINED);

  // A fallback that is itself missing: nothing to do (the core answers 404).
  const missing = setup(conf(['FallbackResource /nope']), { lookup: () => sub(missing, missing.vec, { status: 200, finfo: null }) });
  assert.equal(await fixups.fn(makeRequest(missing.rt, missing.vec, { uri: '/x', finfo: null })), DECLINED);
});
