// mod_mime: directives, merging, find_ct. Expected values were measured with Apache 2.4.71
// (Debian) and /etc/mime.types; the types map below holds the entries those cases use.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import mime, {
  analyzeContentType, findContentType, mergeMimeDirConfig, parseMimeTypes, typesMap,
  MIME_EXCEPTIONS_NOTE, type MimeDirConfig, type MimeServerConfig,
} from '../../../src/modules/http/mod_mime.js';
import { OK, DECLINED } from '../../../src/server/module.js';
import { Scope, fakeRuntime, indexModule, makeCtx, makeRequest, statOf } from '../mappers/helpers.js';
import { tempDir } from '../../temp.js';

indexModule(mime);

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

const TYPES = parseMimeTypes([
  'text/html\t\t\t\t\thtml htm shtml',
  'text/plain\t\t\t\t\tasc txt text pot brf srt',
  'application/gzip\t\t\t\tgz',
  'image/png\t\t\t\t\tpng',
  'text/x-perl\t\t\t\t\tpl pm',
  'text/css\t\t\t\t\tcss',
].join('\n'));

function dirWith(lines: string[], where = {}): MimeDirConfig {
  const { ctx } = makeCtx();
  const s = new Scope<MimeServerConfig, MimeDirConfig>(ctx, mime, where);
  for (const l of lines) assert.equal(s.run(l), undefined, l);
  return s.dir;
}

function ct(name: string, conf: MimeDirConfig) {
  return findContentType('/srv/htdocs/' + name, conf, TYPES, { contentType: undefined, contentEncoding: undefined, contentLanguages: [], handler: undefined });
}

test('TypesConfig parsing: first word the type, later lines win, extensions lowercased, comments skipped', () => {
  const m = parseMimeTypes('# comment\n  # indented comment\ntext/html HTML htm\n\napplication/x-a a \\\n  b\n"text/q" q\napplication/y htm\n');
  assert.equal(m.get('html'), 'text/html');
  assert.equal(m.get('htm'), 'application/y');
  assert.equal(m.get('a'), 'application/x-a');
  assert.equal(m.get('b'), 'application/x-a');
  assert.equal(m.get('q'), 'text/q');
  assert.equal(m.has('#'), false);
});

test('the shipped conf/mime.types maps the common extensions', () => {
  const m = parseMimeTypes(fs.readFileSync(path.join(REPO, 'conf', 'mime.types'), 'latin1'));
  const want: Record<string, string> = {
    html: 'text/html', htm: 'text/html', css: 'text/css', js: 'text/javascript', mjs: 'text/javascript',
    json: 'application/json', txt: 'text/plain', png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg',
    gif: 'image/gif', svg: 'image/svg+xml', ico: 'image/vnd.microsoft.icon', pdf: 'application/pdf',
    gz: 'application/gzip', zip: 'application/zip', xml: 'application/xml', wasm: 'application/wasm',
    woff2: 'font/woff2', mp4: 'video/mp4', mp3: 'audio/mpeg', webp: 'image/webp', csv: 'text/csv',
  };
  for (const [ext, type] of Object.entries(want)) assert.equal(m.get(ext), type, ext);
  assert.equal(m.has('php'), false);
});

test('find_ct: every extension counts, left to right; unknown ones are skipped (Apache-measured)', () => {
  const conf = dirWith([
    'AddCharset UTF-8 .utf8', 'AddLanguage fr .fr', 'AddLanguage en .en', 'AddEncoding x-gzip .gz',
    'AddEncoding x-compress .Z', 'AddType "text/html; charset=ISO-8859-2; foo=Bar" .xyz', 'DefaultLanguage de',
  ]);
  const cases: [string, string | undefined, string | undefined, string[]][] = [
    ['a.html', 'text/html', undefined, ['de']],
    ['a.html.gz', 'application/gzip', 'x-gzip', ['de']],
    ['a.gz.html', 'text/html', 'x-gzip', ['de']],
    ['b.HTML.Gz', 'application/gzip', 'x-gzip', ['de']],
    ['.png', undefined, undefined, ['de']],
    ['x.png.unknown', 'image/png', undefined, ['de']],
    ['x.unknown.png', 'image/png', undefined, ['de']],
    ['c.html.fr', 'text/html', undefined, ['fr']],
    ['e.utf8.html', 'text/html; charset=utf-8', undefined, ['de']],
    ['g..html', 'text/html', undefined, ['de']],
    ['h.txt.Z', 'text/plain', 'x-compress', ['de']],
    ['i.bz2', undefined, undefined, ['de']],
    ['j.txt.xyz', 'text/html; charset=iso-8859-2; foo=bar', undefined, ['de']],
    ['k.html.en.gz', 'application/gzip', 'x-gzip', ['en']],
    ['noext', undefined, undefined, ['de']],
  ];
  for (const [name, type, enc, langs] of cases) {
    const res = ct(name, conf);
    assert.equal(res.contentType, type, name);
    assert.equal(res.contentEncoding, enc, name);
    assert.deepEqual(res.contentLanguages, langs, name);
  }
});

test('find_ct: encodings accumulate, languages list, handler and filters from the extension', () => {
  const conf = dirWith([
    'AddEncoding x-gzip gz', 'AddEncoding x-compress Z', 'AddLanguage fr .fr', 'AddLanguage de .de',
    'AddHandler CGI-Script .cgi', 'AddOutputFilter INCLUDES;DEFLATE .shtml', 'AddInputFilter A;B .in',
  ]);
  const r1 = ct('f.Z.gz', conf);
  assert.equal(r1.contentEncoding, 'x-compress, x-gzip');
  assert.deepEqual(ct('f.fr.de.txt', conf).contentLanguages, ['fr', 'de']);
  const r2 = ct('t.cgi', conf);
  assert.equal(r2.handler, 'cgi-script');
  assert.equal(r2.contentType, undefined);
  assert.deepEqual(r2.exceptions, undefined, 'a handler alone is no metadata (MultiviewsMatch NegotiatedOnly)');
  assert.deepEqual(ct('x.shtml', conf).outputFilters, ['includes', 'deflate']);
  assert.deepEqual(ct('x.in', conf).inputFilters, ['a', 'b']);
  assert.deepEqual(ct('base.fr.weird.html', conf).exceptions, ['base', 'weird']);
});

test('MultiviewsMatch Handlers/Any make handler extensions and any extension metadata', () => {
  const h = dirWith(['AddHandler x-h .h', 'MultiviewsMatch Handlers']);
  assert.deepEqual(ct('a.h.zz', h).exceptions, ['a', 'zz']);
  const any = dirWith(['MultiviewsMatch Any']);
  assert.deepEqual(ct('a.q.zz', any).exceptions, ['a']);
});

test('analyze_ct normalises parameters and refuses malformed types', () => {
  assert.deepEqual(analyzeContentType('text/html;charset=x'), { type: 'text', subtype: 'html', params: [{ attr: 'charset', val: 'x' }] });
  assert.deepEqual(analyzeContentType('text/html; a="q;r"; b=c'), { type: 'text', subtype: 'html', params: [{ attr: 'a', val: '"q;r"' }, { attr: 'b', val: 'c' }] });
  assert.deepEqual(analyzeContentType('texthtml'), { warning: "AH01599: Cannot get media type from 'texthtml'" });
  assert.deepEqual(analyzeContentType('text/'), { warning: 'AH01601: Cannot get media subtype.' });
  assert.deepEqual(analyzeContentType('text/html;'), { warning: 'AH01602: Cannot get media parameter.' });
  // AddCharset replaces a charset parameter the type carries.
  const conf = dirWith(['AddType "text/html; charset=a; level=1" .h1', 'AddCharset B .b']);
  assert.equal(ct('x.h1.b', conf).contentType, 'text/html; charset=b; level=1');
});

test('merging: Remove* clears what the section inherits; RemoveType also hides TypesConfig (Apache-measured)', () => {
  const server = dirWith(['AddType text/x-foo .foo', 'AddEncoding x-gzip .gz', 'AddHandler default-handler .pl', 'AddLanguage fr .fr', 'AddCharset UTF-8 .utf8']);
  const a = dirWith(['RemoveType .foo .html', 'RemoveEncoding .gz', 'RemoveLanguage .fr', 'RemoveCharset .utf8', 'AddType text/plain .pl'], { path: '/srv/htdocs/a' });
  const merged = mergeMimeDirConfig(server, a);
  assert.equal(ct('x.foo', merged).contentType, undefined);
  assert.equal(ct('x.html', merged).contentType, undefined);
  const gz = ct('x.gz', merged);
  assert.equal(gz.contentType, 'application/gzip');
  assert.equal(gz.contentEncoding, undefined);
  assert.deepEqual(ct('x.fr.html', merged).contentLanguages, []);
  assert.equal(ct('x.utf8.txt', merged).contentType, 'text/plain');
  assert.equal(ct('x.pl', merged).contentType, 'text/plain');
  assert.equal(ct('x.pl', merged).handler, 'default-handler');
  // A deeper section overlays field by field.
  const b = dirWith(['AddType application/x-bar .foo', 'AddCharset latin1 .utf8'], { path: '/srv/htdocs/a/b' });
  const merged2 = mergeMimeDirConfig(merged, b);
  assert.equal(ct('x.foo', merged2).contentType, 'application/x-bar');
  assert.equal(ct('x.utf8.txt', merged2).contentType, 'text/plain; charset=latin1');
  assert.equal(ct('x.html', merged2).contentType, undefined);
  // Inputs are not modified.
  assert.equal(ct('x.gz', server).contentEncoding, 'x-gzip');
  assert.equal(a.removeMappings?.length, 3, 'RemoveType is an empty AddType, not a removal');
  // The same section: a later RemoveType wins over its AddType.
  assert.equal(ct('x.foo', dirWith(['AddType text/x-c .foo', 'RemoveType .foo'])).contentType, undefined);
});

test('merging: RemoveHandler only removes the inherited association', () => {
  const base = dirWith(['AddHandler cgi-script .cgi']);
  const add = dirWith(['RemoveHandler .cgi'], { path: '/x' });
  assert.equal(ct('a.cgi', mergeMimeDirConfig(base, add)).handler, undefined);
  const readd = dirWith(['RemoveHandler .cgi', 'AddHandler other .cgi'], { path: '/x' });
  assert.equal(ct('a.cgi', mergeMimeDirConfig(base, readd)).handler, undefined, 'removal applies to the merged map, as in httpd');
  // Even over an empty base: httpd applies a section's removals after adding its own entries.
  assert.equal(ct('a.cgi', mergeMimeDirConfig(createEmpty(), readd)).handler, undefined);
  assert.equal(ct('a.cgi', mergeMimeDirConfig(base, dirWith(['AddHandler other .cgi'], { path: '/y' }))).handler, 'other');
});

function createEmpty(): MimeDirConfig {
  return mime.decl.createDirConfig!(undefined);
}

test('directive errors are worded as Apache words them', () => {
  const { ctx } = makeCtx();
  const s = new Scope<MimeServerConfig, MimeDirConfig>(ctx, mime);
  assert.equal(s.run('AddType text/html'), 'AddType requires at least two arguments, a mime type followed by one or more file extensions');
  assert.equal(s.run('TypesConfig a b'), 'TypesConfig takes one argument, the MIME types config file');
  assert.equal(s.run('MultiviewsMatch Any Handlers'), 'Handlers is incompatible with Any and NegotiatedOnly');
  assert.equal(new Scope<MimeServerConfig, MimeDirConfig>(ctx, mime).run('MultiviewsMatch Handlers Filters bogus'), "Unrecognized option 'bogus'");
  assert.equal(new Scope<MimeServerConfig, MimeDirConfig>(ctx, mime).run('MultiviewsMatch NegotiatedOnly Any'), 'Any is incompatible with NegotiatedOnly, Filters and Handlers');
  const loc = new Scope<MimeServerConfig, MimeDirConfig>(ctx, mime, { path: '/x', parents: ['<LocationMatch'] });
  assert.equal(loc.run('MultiviewsMatch Any'), 'MultiviewsMatch cannot occur within <LocationMatch> section');
  assert.equal(s.run('ModMimeUsePathInfo maybe'), 'ModMimeUsePathInfo must be On or Off');
});

test('the type checker hook: directories, path info, filters, notes', async () => {
  const { ctx } = makeCtx();
  const types = typesMap(ctx);
  for (const [k, v] of TYPES) types.set(k, v);
  const filtered: string[] = [];
  const { rt, errorLog } = fakeRuntime(ctx, { filters: [{ name: 'INCLUDES', type: 10, filter: (f, bb) => { filtered.push('x'); return f.pass(bb); } }] });
  const conf = dirWith(['AddOutputFilter INCLUDES;NOSUCH .shtml', 'AddLanguage fr .fr']);
  const vec: unknown[] = [];
  vec[mime.index] = conf;
  const hook = mime.decl.hooks!.typeChecker as { fn: (r: ReturnType<typeof makeRequest>) => number };

  const dir = makeRequest(rt, vec, { filename: '/srv/htdocs/d', finfo: statOf('dir') });
  assert.equal(hook.fn(dir), OK);
  assert.equal(dir.contentType, 'httpd/unix-directory');

  const none = makeRequest(rt, vec, { filename: '' });
  assert.equal(hook.fn(none), DECLINED);

  const f = makeRequest(rt, vec, { filename: '/srv/htdocs/a.fr.shtml', finfo: statOf('file') });
  assert.equal(hook.fn(f), OK);
  assert.equal(f.contentType, 'text/html');
  assert.deepEqual(f.contentLanguages, ['fr']);
  assert.equal(f.outputFilters.length, 1);
  assert.equal(f.outputFilters[0]!.spec.name, 'INCLUDES');
  assert.equal(f.notes.get(MIME_EXCEPTIONS_NOTE), 'a');
  assert.match(errorLog.lines.join('\n'), /\[core:3\] .*AH00082: an unknown filter was not added: nosuch/);

  const pi = makeRequest(rt, vec, { filename: '/srv/htdocs/script', pathInfo: '/x.html' });
  hook.fn(pi);
  assert.equal(pi.contentType, undefined, 'path info is ignored by default');
  const conf2 = mergeMimeDirConfig(conf, dirWith(['ModMimeUsePathInfo On'], { path: '/srv' }));
  const vec2: unknown[] = [];
  vec2[mime.index] = conf2;
  const pi2 = makeRequest(rt, vec2, { filename: '/srv/htdocs/script', pathInfo: '/x.html' });
  assert.equal(hook.fn(pi2), OK);
  assert.equal(pi2.contentType, 'text/html');
});

test('post_config: a missing TypesConfig fails startup with AH01597 (errno) as Apache does', async () => {
  const { ctx, log } = makeCtx('/nonexistent-root');
  ctx.mainServer.moduleConfig[mime.index] = { typesConfig: 'conf/nothere' } satisfies MimeServerConfig;
  const res = await mime.decl.configHooks!.postConfig!(ctx);
  assert.equal(res, 'AH00016: Configuration Failed');
  assert.match(log.lines[0]!, /^\[.*\] \[mime:error\] \[pid \d+:tid \d+\] \(2\)No such file or directory: AH01597: could not open mime types config file \/nonexistent-root\/conf\/nothere\.$/);

  const dir = tempDir('plume-mime-');
  fs.mkdirSync(path.join(dir, 'conf'));
  fs.writeFileSync(path.join(dir, 'conf', 'mime.types'), 'text/html html\n');
  const ok = makeCtx(dir);
  ok.ctx.mainServer.moduleConfig[mime.index] = { typesConfig: undefined } satisfies MimeServerConfig;
  assert.equal(await mime.decl.configHooks!.postConfig!(ok.ctx), undefined);
  assert.equal(typesMap(ok.ctx).get('html'), 'text/html');
});
