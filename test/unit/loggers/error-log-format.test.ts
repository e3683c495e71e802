// ErrorLogFormat compiled by src/server/log/error-log-format.ts. Expected lines were measured
// on Apache 2.4.71 (TZ=UTC, LogLevel info) for a request for a missing file and for the
// startup notice; pids, thread ids, ports and log ids are set to the measured values in the
// entries, and plume's log calls carry no source position (%F is empty, its field dropped).

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  compileErrorLogFormat, applyErrorLogFormat, escapeErrorLogItem, escapeLogItem, type ErrorLogFormats,
} from '../../../src/server/log/error-log-format.js';
import { formatDefault, type ErrorLogEntry, type ErrorLogContext } from '../../../src/server/log/error-log.js';
import type { ErrorLogFormatter } from '../../../src/server/log/error-log.js';
import { withTz } from './helpers.js';

function compile(fmt: string, kind: 'main' | 'request' | 'connection' = 'main'): ErrorLogFormatter {
  const f = compileErrorLogFormat(fmt, kind);
  if (typeof f === 'string') throw new Error(f);
  return f;
}

/** 2026-11-22 02:54:07.280340 UTC */
const T_REQ = 1795316047280340;
/** 2026-11-22 02:54:06.276470 UTC */
const T_START = 1795316046276470;

function requestEntry(ua: string, message: string, referer?: string): ErrorLogEntry {
  const headers = new Map<string, string>([['user-agent', ua]]);
  if (referer !== undefined) headers.set('referer', referer);
  const context: ErrorLogContext = {
    localIp: '127.0.0.1',
    localPort: 18080,
    requestHeader: (n) => headers.get(n.toLowerCase()),
    env: (n) => (n === 'FOO' ? ua : undefined),
    note: () => undefined,
    connectionId: 'tfhBl7yGn4w',
    requestId: 'NfhBl7yGn4w',
    serverName: 'www.example.test',
    canonicalName: '127.0.0.1',
    keepalives: 0,
  };
  return { module: 'core', level: 6, message, client: { ip: '127.0.0.1', port: 34100 }, referer, context };
}

const BIG = 't=[%t] u=[%{u}t] m=[%{m}t] c=[%{c}t] cu=[%{cu}t] cuz=[%{cuz}t] uc=[%{uc}t] z=[%{z}t] st=[%{%Y-%m-%d %H:%M:%S}t] st2=[%{%s.%N}t] a=[%a] ca=[%{c}a] A=[%A] e=[%{FOO}e] E=[%E] F=[%F] F7=[%7F] i=[%{User-Agent}i] k=[%k] l=[%l] L=[%L] cL=[%{c}L] CL=[%{C}L] m=[%m] n=[%{N1}n] P=[%P] T=[%T] gT=[%{g}T] v=[%v] V=[%V] ref=[%-{Referer}i] x=[%-{X}i] y=[%{Y}i] M=[%M]';
const pid = process.pid;

test('every item, for a request (measured)', () => {
  withTz('UTC', () => {
    const f = compile(BIG);
    const e = requestEntry('agent"x', 'AH00128: File does not exist: /tmp/apt/htdocs/nothere', 'http://ref/');
    assert.equal(f(e, T_REQ),
      `t=[Sun Nov 22 02:54:07 2026] u=[Sun Nov 22 02:54:07.280340 2026] m=[Sun Nov 22 02:54:07.280 2026] c=[2026-11-22 02:54:07] cu=[2026-11-22 02:54:07.280340] cuz=[2026-11-22 02:54:07.280340 +0000] uc=[2026-11-22 02:54:07.280340] z=[Sun Nov 22 02:54:07 2026 +0000] st=[2026-11-22 02:54:07] st2=[1795316047.%N] a=[127.0.0.1:34100] ca=[127.0.0.1:34100] A=[127.0.0.1:18080] e=[agent"x] i=[agent"x] k=[0] l=[info] L=[NfhBl7yGn4w] cL=[tfhBl7yGn4w] m=[core] P=[${pid}] T=[${pid}] gT=[${pid}] v=[www.example.test] V=[127.0.0.1] ref=[http://ref/] x=[-] M=[AH00128: File does not exist: /tmp/apt/htdocs/nothere]`);
  });
});

test('every item, for a server message without request or connection (measured)', () => {
  withTz('UTC', () => {
    const f = compile(BIG);
    const e: ErrorLogEntry = {
      module: 'mpm_event', level: 5, message: 'AH00489: Apache/2.4.71 (Debian) configured -- resuming normal operations',
      context: { serverName: 'www.example.test' },
    };
    assert.equal(f(e, T_START),
      `t=[Sun Nov 22 02:54:06 2026] u=[Sun Nov 22 02:54:06.276470 2026] m=[Sun Nov 22 02:54:06.276 2026] c=[2026-11-22 02:54:06] cu=[2026-11-22 02:54:06.276470] cuz=[2026-11-22 02:54:06.276470 +0000] uc=[2026-11-22 02:54:06.276470] z=[Sun Nov 22 02:54:06 2026 +0000] st=[2026-11-22 02:54:06] st2=[1795316046.%N] l=[notice] m=[mpm_event] P=[${pid}] T=[${pid}] gT=[${pid}] v=[www.example.test] ref=[-] x=[-] M=[AH00489: Apache/2.4.71 (Debian) configured -- resuming normal operations]`);
  });
});

test('time options, fields, escaped spaces, level conditions and escaping (measured)', () => {
  withTz('UTC', () => {
    const f = compile('cm=[%{cm}t] mc=[%{mc}t] um=[%{um}t] mu=[%{mu}t] cz=[%{cz}t] mz=[%{mz}t] x=[%{x}t] pct=[%{%z %Z}t] mix=[%{u%Y}t] emp=[%{}t] a\\ b %-{X}i%{Y}i c%{Z}id [%5{User-Agent}i] [%6{User-Agent}i] e=%E %M');
    // curl -A $'ag"en\\t\xe9' 'http://127.0.0.1:18080/a%0ab%5cc%22'
    const e = requestEntry('ag"en\\t\xe9', 'AH00128: File does not exist: /tmp/apt/htdocs/a\nb\\c"');
    assert.equal(f(e, 1795316071304637),
      'cm=[2026-11-22 02:54:31.304] mc=[2026-11-22 02:54:31.304] um=[Sun Nov 22 02:54:31.304637 2026] mu=[Sun Nov 22 02:54:31.304637 2026] cz=[2026-11-22 02:54:31 +0000] mz=[Sun Nov 22 02:54:31.304 2026 +0000] x=[Sun Nov 22 02:54:31 2026] pct=[+0000 UTC] mix=[u2026] emp=[Sun Nov 22 02:54:31 2026] a b [ag"en\\\\t\\xe9] [ag"en\\\\t\\xe9] AH00128: File does not exist: /tmp/apt/htdocs/a\\nb\\\\c"');
    const s: ErrorLogEntry = { module: 'mpm_event', level: 5, message: 'AH00489: Apache/2.4.71 (Debian) configured -- resuming normal operations' };
    assert.equal(f(s, 1795316070299933),
      'cm=[2026-11-22 02:54:30.299] mc=[2026-11-22 02:54:30.299] um=[Sun Nov 22 02:54:30.299933 2026] mu=[Sun Nov 22 02:54:30.299933 2026] cz=[2026-11-22 02:54:30 +0000] mz=[Sun Nov 22 02:54:30.299 2026 +0000] x=[Sun Nov 22 02:54:30 2026] pct=[+0000 UTC] mix=[u2026] emp=[Sun Nov 22 02:54:30 2026] a b AH00489: Apache/2.4.71 (Debian) configured -- resuming normal operations');
  });
});

test('the documented default-like format reproduces the default line', () => {
  withTz('UTC', () => {
    const f = compile('[%{u}t] [%-m:%l] [pid %P:tid %T] %7F: %E: [client\\ %a] %M% ,\\ referer:\\ %{Referer}i');
    const e = requestEntry('curl', 'AH00128: File does not exist: /x', 'http://ref/');
    assert.equal(f(e, T_REQ), formatDefault(e, T_REQ));
    const withErr: ErrorLogEntry = { module: 'core', level: 3, message: 'AH00132: file permissions deny server access: /x', errno: { code: 13, text: 'Permission denied' }, client: { ip: '::1', port: 5 } };
    assert.equal(f(withErr, T_REQ), formatDefault(withErr, T_REQ));
    const plain: ErrorLogEntry = { module: 'core', level: 5, message: 'AH00094: Command line: \'plume\'' };
    assert.equal(f(plain, T_REQ), formatDefault(plain, T_REQ));
    // The Apache 2.2-like example from the manual.
    const old = compile('[%t] [%l] %7F: %E: [client\\ %a] %M% ,\\ referer\\ %{Referer}i');
    assert.equal(old(e, T_REQ), '[Sun Nov 22 02:54:07 2026] [info] [client 127.0.0.1:34100] AH00128: File does not exist: /x, referer http://ref/');
  });
});

test('modifiers: - logs a dash, a level number limits the item, + drops a once-per line', () => {
  const e = requestEntry('ua', 'msg');
  assert.equal(compile('[%-{None}i] [%{None}i] %M')(e, T_REQ), '[-] %M'.replace('%M', 'msg'));
  assert.equal(compile('a=%7{User-Agent}i b=%6{User-Agent}i c=%1{User-Agent}i %M')(e, T_REQ), ' b=ua c=ua msg', 'the first field goes, the next one keeps its space');
  assert.equal(compile('x% y %M')(e, T_REQ), 'xy msg', "'% ' separates fields without output");
  assert.equal(compile('%{None}i% y %M')(e, T_REQ), 'y msg');
  assert.equal(compile('%%%l %M')(e, T_REQ), '%info msg');
  // An empty result is not logged.
  assert.equal(compile('%{None}i%M')({ module: 'core', level: 6, message: '' }, T_REQ), null);
  const req = compile('[%{u}t] UA:\'%+{User-Agent}i\' Referer:%-{Referer}i', 'request');
  const once: ErrorLogEntry = { ...e, level: -1, module: '', message: '' };
  withTz('UTC', () => assert.equal(req(once, T_REQ), "[Sun Nov 22 02:54:07.280340 2026] UA:'ua' Referer:-"));
  const none = { ...once, context: { ...once.context, requestHeader: () => undefined } };
  assert.equal(req(none, T_REQ), null);
  // %{C}L: the connection's id only in a line without request.
  const conn = compile('C:%{C}L c:%{c}L R:%L', 'connection');
  assert.equal(conn({ ...once, context: { connectionId: 'cid' } }, T_REQ), 'C:cid c:cid');
  assert.equal(conn(once, T_REQ), ' c:tfhBl7yGn4w R:NfhBl7yGn4w');
});

test('ErrorLogFormat errors as Apache words them (measured with apache2 -t)', () => {
  const err = (fmt: string, kind: 'main' | 'request' | 'connection' = 'main'): string => compileErrorLogFormat(fmt, kind) as string;
  assert.equal(err('%Z %M'), 'Unrecognized error log format directive %Z');
  assert.equal(err('[%t]'), "main ErrorLogFormat must contain message format string '%M'");
  assert.equal(err('%+{Referer}i %M'), "The '+' flag cannot be used in the main error log format");
  assert.equal(err('%16{Referer}i %M'), 'The specified loglevel modifier is out of range');
  assert.equal(typeof compileErrorLogFormat('%15{Referer}i %M'), 'function');
  assert.equal(err('%{Referer %M'), 'Ran off end of error log format parsing args to some directive');
  assert.equal(err('%M %'), 'Ran off end of error log format parsing args to some directive');
  assert.equal(err('%M %-'), 'Ran off end of error log format parsing args to some directive');
  assert.equal(err('%M', 'request'), '%M cannot be used in once-per-request or once-per-connection formats');
  assert.equal(err('%4L', 'request'), 'The loglevel cannot be used as a condition in once-per-request or once-per-connection formats');
  assert.equal(typeof compileErrorLogFormat('%{%Y}t %M'), 'function');
  assert.equal(typeof compileErrorLogFormat('%M \\'), 'function');
  const formats: ErrorLogFormats = { main: undefined, connection: [], request: [] };
  assert.equal(applyErrorLogFormat(formats, 'foo', '%M'), 'ErrorLogFormat type must be one of request, connection');
  // "ErrorLogFormat request" (its second argument empty) is a main format without %M.
  assert.equal(applyErrorLogFormat(formats, 'request', undefined), "main ErrorLogFormat must contain message format string '%M'");
  assert.equal(applyErrorLogFormat(formats, 'Request', '%L'), undefined);
  assert.equal(applyErrorLogFormat(formats, 'connection', '%{c}L'), undefined);
  assert.equal(applyErrorLogFormat(formats, '%l %M', undefined), undefined);
  assert.equal(formats.request.length, 1);
  assert.equal(formats.connection.length, 1);
  assert.equal(typeof formats.main, 'function');
});

test('escaping helpers', () => {
  assert.equal(escapeLogItem('a"b\\c\td\x00\xff'), 'a\\"b\\\\c\\td\\x00\\xff');
  assert.equal(escapeErrorLogItem('a"b\\c\td\x00\xff'), 'a"b\\\\c\\td\\x00\\xff');
  assert.equal(escapeLogItem('plain text'), 'plain text');
  assert.equal(escapeLogItem('😀'), '\\xf0\\x9f\\x98\\x80');
});
