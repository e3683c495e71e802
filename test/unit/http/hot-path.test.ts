// What the hot path remembers must give the answers it would compute: the Host header memo
// (the port comes back with the name), the clean-path shortcut of the URL normaliser, one
// lookup for a repeated request header, and the workers' Node flags.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixHostname } from '../../../src/server/http/protocol.js';
import { normalizePath } from '../../../src/server/http/uri.js';
import { HeaderTable } from '../../../src/server/request/headers.js';
import { workerExecArgv } from '../../../src/engine/flags.js';
import { lineHasStatus, statusLine } from '../../../src/server/http/status.js';
import { makeRequest } from './helpers.js';

test('a Host header seen before gives the same name and port, request after request', () => {
  for (let i = 0; i < 3; i++) {
    const r = makeRequest();
    assert.equal(fixHostname(r, 'WWW.Example.COM:8080', true), 'www.example.com');
    assert.equal(r.parsedPort, 8080);
    const s = makeRequest();
    assert.equal(fixHostname(s, 'www.example.com', true), 'www.example.com');
    assert.equal(s.parsedPort, 0, 'no port in the header: none set');
  }
});

test('a bad Host header is refused every time, and logged every time', () => {
  for (let i = 0; i < 2; i++) {
    const r = makeRequest();
    assert.equal(fixHostname(r, 'bad host', true), undefined);
    assert.equal(fixHostname(r, 'x:99999', false), undefined);
  }
});

test('normalizePath: clean paths come back as they are; dot segments and double slashes do not', () => {
  assert.equal(normalizePath('/a/b/c.html', true), '/a/b/c.html');
  assert.equal(normalizePath('/a/b/', true), '/a/b/');
  assert.equal(normalizePath('/a//b', true), '/a/b');
  assert.equal(normalizePath('/a//b', false), '/a//b');
  assert.equal(normalizePath('/a/./b/../c', true), '/a/c');
  assert.equal(normalizePath('/a/.htaccess', true), '/a/.htaccess');
  assert.equal(normalizePath('/..', true), null);
  assert.equal(normalizePath('abc', true), '/', 'a path without its leading slash is not taken as clean');
});

test('mergeFound: a repeated field is merged into the first with ", " and reported', () => {
  const h = new HeaderTable();
  assert.equal(h.mergeFound('Accept', 'text/html'), false);
  assert.equal(h.mergeFound('accept', 'text/plain'), true);
  assert.equal(h.mergeFound('X-Empty', ''), false);
  assert.equal(h.mergeFound('X-Empty', 'v'), true);
  assert.deepEqual(h.entries(), [['Accept', 'text/html, text/plain'], ['X-Empty', 'v']]);
});

test("workers get an 8 MB young generation unless the operator chose one", () => {
  assert.deepEqual(workerExecArgv([]), ['--max-semi-space-size=8']);
  assert.deepEqual(workerExecArgv(['--enable-source-maps']), ['--enable-source-maps', '--max-semi-space-size=8']);
  assert.deepEqual(workerExecArgv(['--max-semi-space-size=8']), ['--max-semi-space-size=8']);
  assert.deepEqual(workerExecArgv([], '--max-semi-space-size=4'), []);
});

test('workers as many as the CPUs collect garbage on their own thread, unless the operator chose', () => {
  assert.deepEqual(workerExecArgv([], '', 2, 2), ['--max-semi-space-size=8', '--single-threaded-gc']);
  assert.deepEqual(workerExecArgv([], '', 4, 2), ['--max-semi-space-size=8', '--single-threaded-gc']);
  assert.deepEqual(workerExecArgv([], '', 1, 2), ['--max-semi-space-size=8'], 'a CPU to spare: V8 keeps its helper threads');
  assert.deepEqual(workerExecArgv(['--v8-pool-size=2'], '', 2, 2), ['--v8-pool-size=2', '--max-semi-space-size=8']);
  assert.deepEqual(workerExecArgv([], '--no-single-threaded-gc', 2, 2), ['--max-semi-space-size=8']);
});

test('status lines: made once per status; a given line checked for its status without a new string', () => {
  assert.equal(statusLine(200), '200 OK');
  assert.equal(statusLine(299), '299 ');
  assert.equal(statusLine(1000), '1000 ');
  assert.equal(statusLine(200), statusLine(200));
  assert.equal(lineHasStatus('200 OK', 200), true);
  assert.equal(lineHasStatus('200 ', 200), true);
  assert.equal(lineHasStatus('200', 200), false);
  assert.equal(lineHasStatus('2000 Odd', 200), false);
  assert.equal(lineHasStatus('201 Created', 200), false);
  assert.equal(lineHasStatus('502 Bad Gateway', 502), true);
  assert.equal(lineHasStatus('1000 x', 1000), true);
});

test('header entries by index, in order, as forEach gives them', () => {
  const h = new HeaderTable();
  h.add('Content-Type', 'text/html');
  h.add('X-A', '1');
  h.set('x-a', '2');
  const seen: string[][] = [];
  h.forEach((n, v, k) => seen.push([n, v, k]));
  const byIndex: string[][] = [];
  for (let i = 0; i < h.size; i++) byIndex.push([h.nameAt(i), h.valueAt(i), h.keyAt(i)]);
  assert.deepEqual(byIndex, seen);
  assert.deepEqual(byIndex, [['Content-Type', 'text/html', 'content-type'], ['x-a', '2', 'x-a']]);
});
