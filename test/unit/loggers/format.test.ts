// mod_log_config format items, compiled once and rendered on fake requests. The expected
// lines were measured on Apache 2.4.71 (Debian, event MPM, TZ=UTC unless noted) with curl
// and raw sockets; the parts that vary between runs (durations, pids, thread ids, client
// ports) are replaced by <...> placeholders before comparing.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  compileLogFormat, formatLogLine, registerLogItem, DEFAULT_LOG_FORMAT, type LogFormat,
} from '../../../src/modules/loggers/mod_log_config.js';
import logio from '../../../src/modules/loggers/mod_logio.js';
import type { LogItemSet } from '../../../src/modules/loggers/log-items-api.js';
import type { Request } from '../../../src/server/request/request.js';
import { nowMicros } from '../../../src/server/log/time.js';
import { makeRequest, requestLine, withTz, MEASURED_MICROS } from './helpers.js';

/** mod_logio's items (%I %O %S %^FB), as a configuration that loads it offers them. */
const logioItems = logio.decl.providers!.find((p) => p.group === 'log_items')!.provider as LogItemSet;

function compile(fmt: string): LogFormat {
  const f = compileLogFormat(fmt, logioItems);
  if (typeof f === 'string') throw new Error(f);
  return f;
}

/** The rendered line without its newline. */
function line(fmt: string, r: Request): string {
  const s = formatLogLine(compile(fmt), r);
  assert.ok(s.endsWith('\n'), 'a log line ends with a newline');
  return s.slice(0, -1);
}

function at(r: Request, micros: number): void {
  r.startMicros = micros;
  r.requestTime = Math.floor(micros / 1000);
}

// The LogFormat used for the measurement (ErrorLog big.log on Apache).
const BIG = 'a=%a ca=%{c}a A=%A B=%B b=%b C=%{foo}C D=%D e=%{FOO}e f=%f h=%h ch=%{c}h H=%H i=%{User-Agent}i k=%k l=%l L=%L m=%m n=%{N1}n o=%{Content-Type}o p=%p pc=%{canonical}p pl=%{local}p pr=%{remote}p P=%P Pt=%{tid}P Ph=%{hextid}P Pb=%{bogus}P q=%q r=%r R=%R s=%s >s=%>s <s=%<s t=%t T=%T Tms=%{ms}T Tus=%{us}T Tb=%{xx}T u=%u U=%U v=%v V=%V X=%X I=%I O=%O S=%S FB=%^FB ti=%{X}^ti to=%{X}^to';

function normalise(s: string): string {
  return s
    .replace(/ D=\d+/, ' D=<D>').replace(/ T=\d+/, ' T=<T>').replace(/ Tms=\d+/, ' Tms=<ms>').replace(/ Tus=\d+/, ' Tus=<us>')
    .replace(/ P=\d+/, ' P=<pid>').replace(/ Pt=\d+/, ' Pt=<tid>').replace(/ Ph=[0-9a-f]+/, ' Ph=<hextid>');
}

test('the measured all-items line: GET / served as /index.html', () => {
  withTz('UTC', () => {
    const { r } = makeRequest();
    at(r, MEASURED_MICROS);
    requestLine(r, 'GET / HTTP/1.1', '/index.html');
    r.hostname = '127.0.0.1';
    r.filename = '/tmp/apt/htdocs/index.html';
    r.status = 200;
    r.bytesSent = 6;
    r.contentType = 'text/html';
    r.headersIn.set('Host', '127.0.0.1:18080');
    r.headersIn.set('User-Agent', 'curl/7.88.1');
    r.subprocessEnv.set('FOO', 'curl/7.88.1');
    // The keep-alive decision counted this response (c->keepalives = 1).
    Object.assign(r.connection, { keepalives: 1, keepAlive: true, bytesIn: 79, bytesOut: 244 });
    assert.equal(normalise(line(BIG, r)),
      'a=127.0.0.1 ca=127.0.0.1 A=127.0.0.1 B=6 b=6 C=- D=<D> e=curl/7.88.1 f=/tmp/apt/htdocs/index.html h=127.0.0.1 ch=127.0.0.1 H=HTTP/1.1 i=curl/7.88.1 k=0 l=- L=- m=GET n=- o=text/html p=80 pc=80 pl=18080 pr=50194 P=<pid> Pt=<tid> Ph=<hextid> Pb=bogus q= r=GET / HTTP/1.1 R=- s=200 >s=200 <s=200 t=[22/Nov/2026:02:52:28 +0000] T=<T> Tms=<ms> Tus=<us> Tb=xx u=- U=/index.html v=www.example.test V=127.0.0.1 X=+ I=79 O=244 S=323 FB=- ti=- to=-');
  });
});

test('the measured all-items line: a 400 for a bad header, connection closed', () => {
  withTz('UTC', () => {
    const { r } = makeRequest();
    at(r, MEASURED_MICROS);
    requestLine(r, 'GET /index.html?x=1&y=%41 HTTP/1.1');
    r.status = 400;
    r.bytesSent = 266;
    r.contentType = 'text/html; charset=iso-8859-1';
    Object.assign(r.connection, { keepalives: 0, keepAlive: false, bytesIn: 96, bytesOut: 448 });
    assert.equal(normalise(line(BIG, r)),
      'a=127.0.0.1 ca=127.0.0.1 A=127.0.0.1 B=266 b=266 C=- D=<D> e=- f=- h=127.0.0.1 ch=127.0.0.1 H=HTTP/1.1 i=- k=0 l=- L=- m=GET n=- o=text/html p=80 pc=80 pl=18080 pr=50194 P=<pid> Pt=<tid> Ph=<hextid> Pb=bogus q=?x=1&y=%41 r=GET /index.html?x=1&y=%41 HTTP/1.1 R=- s=400 >s=400 <s=400 t=[22/Nov/2026:02:52:28 +0000] T=<T> Tms=<ms> Tus=<us> Tb=xx u=- U=/index.html v=www.example.test V=www.example.test X=- I=96 O=448 S=544 FB=- ti=- to=-');
  });
});

test('%P is the pid, %{tid}P and %{hextid}P the serving thread; bogus formats print themselves', () => {
  const { r } = makeRequest();
  assert.equal(line('%P %{pid}P %{PID}P %{tid}P %{hextid}P %{HEXTID}P %{x}P', r),
    `${process.pid} ${process.pid} ${process.pid} ${process.pid} ${process.pid.toString(16)} ${process.pid} x`);
  assert.equal(line('%{bogus}p %{CANONICAL}p %{Remote}p %{LOCAL}p', r), 'bogus 80 50194 18080');
  r.server.port = 8443;
  assert.equal(line('%p', r), '8443');
  r.server.port = 0;
  r.server.scheme = 'https';
  assert.equal(line('%p', r), '443');
});

test('%D, %T and %{UNIT}T measure from the request start to the logging', () => {
  const { r } = makeRequest();
  at(r, nowMicros() - 2_345_678);
  const [D, T, Ts, Tms, Tus, TMS] = line('%D %T %{s}T %{ms}T %{us}T %{MS}T', r).split(' ').map(Number);
  assert.ok(D! >= 2_345_678 && D! < 3_345_678, `D=${D}`);
  assert.equal(T, 2);
  assert.equal(Ts, 2);
  assert.equal(Tms, Math.floor(D! / 1000), 'one end time per request');
  assert.equal(Tus, D);
  assert.equal(TMS, Tms);
});

test('%t and %{format}t: the measured time formats (UTC)', () => {
  withTz('UTC', () => {
    const { r } = makeRequest();
    at(r, MEASURED_MICROS);
    const fmt = 't1=%{sec}t t2=%{msec}t t3=%{usec}t t4=%{msec_frac}t t5=%{usec_frac}t t6=%{begin:%Y-%m-%d %H:%M:%S %z %Z}t t8=%{begin}t t10=%{%d/%b/%Y %T}t t11=%{begin:msec}t t12=%{%a %A %b %B %c %C %d %D %e %F %g %G %h %H %I %j %k %l %m %M %n %p %P %r %R %S %t %T %u %U %V %w %W %x %X %y %Y %z %Z %%}t';
    assert.equal(line(fmt, r),
      't1=1795315948 t2=1795315948003 t3=1795315948003920 t4=003 t5=003920 t6=2026-11-22 02:52:28 +0000 UTC t8=[22/Nov/2026:02:52:28 +0000] t10=22/Nov/2026 02:52:28 t11=1795315948003 t12=Sun Sunday Nov November Sun Nov 22 02:52:28 2026 20 22 11/22/26 22 2026-11-22 26 2026 Nov 02 02 326  2  2 11 52 \n AM am 02:52:28 AM 02:52 28 \t 02:52:28 7 47 47 0 46 11/22/26 02:52:28 26 2026 +0000 UTC %');
    assert.equal(line('%t', r), '[22/Nov/2026:02:52:28 +0000]');
    assert.equal(line('%{}t|%{begin:}t|%{end:}t', r).split('|')[0], '[22/Nov/2026:02:52:28 +0000]');
    assert.equal(line('%{begin:}t', r), '[22/Nov/2026:02:52:28 +0000]');
  });
});

test('%{end:...}t is the logging time; unknown tokens go to strftime', () => {
  withTz('UTC', () => {
    const { r } = makeRequest();
    at(r, MEASURED_MICROS);
    const before = Math.floor(nowMicros() / 1e6);
    const [e1, e2] = line('%{end:sec}t %{end:%s}t', r).split(' ').map(Number);
    assert.ok(e1! >= before && e1! <= before + 1);
    assert.equal(e2, e1);
    assert.match(line('%{end}t', r), /^\[\d\d\/\w\w\w\/\d{4}:\d\d:\d\d:\d\d \+0000\]$/);
    // "msecx", "beginx" and "endx" are strftime formats, read at the request's start.
    assert.equal(line('%{msecx}t %{beginx}t %{endx}t %{usec_fracx}t %{%N}t', r), 'msecx beginx endx usec_fracx %N');
  });
});

test('%t in other time zones (measured with TZ=America/New_York) and %Z names', () => {
  const { r } = makeRequest();
  at(r, MEASURED_MICROS);
  withTz('America/New_York', () => {
    assert.equal(line('%t %{%z %Z}t', r), '[21/Nov/2026:21:52:28 -0500] -0500 EST');
    at(r, Date.UTC(2026, 6, 1, 12, 0, 0) * 1000);
    assert.equal(line('%t %{%z %Z}t', r), '[01/Jul/2026:08:00:00 -0400] -0400 EDT');
  });
  at(r, MEASURED_MICROS);
  withTz('Europe/Paris', () => assert.equal(line('%t %{%Z}t', r), '[22/Nov/2026:03:52:28 +0100] CET'));
  withTz('Asia/Kolkata', () => assert.equal(line('%t %{%Z}t', r), '[22/Nov/2026:08:22:28 +0530] IST'));
  withTz('Australia/Sydney', () => assert.equal(line('%{%z %Z}t', r), '+1100 AEDT'));
});

test('strftime flags and widths (glibc)', () => {
  withTz('UTC', () => {
    const { r } = makeRequest();
    at(r, Date.UTC(2026, 0, 5, 7, 8, 9) * 1000);
    assert.equal(line('%{%-d|%_m|%-H|%e|%^a|%#b|%10Y|%#p|%^B|%Ey|%Od|%q}t', r), '5| 1|7| 5|MON|JAN|0000002026|am|JANUARY|26|05|%q');
    assert.equal(line('%{%G-W%V-%u %g %U %W %j}t', r), '2026-W02-1 26 01 01 005');
    at(r, Date.UTC(2027, 0, 1, 0, 0, 0) * 1000);
    assert.equal(line('%{%G-W%V-%u %U %W}t', r), '2026-W53-5 00 00');
  });
});

test('%u: "-" without a user, "" for an empty one, escaped otherwise', () => {
  const { r } = makeRequest();
  assert.equal(line('%u', r), '-');
  r.user = '';
  assert.equal(line('%u', r), '""');
  r.user = 'al"ice\\';
  assert.equal(line('%u', r), 'al\\"ice\\\\');
});

test('escaping as measured: quotes, backslashes, tabs and bytes >= 0x7f in %i %r %U %f %q', () => {
  const { r } = makeRequest();
  // curl -A $'Mo"z\\il\xe9la\tx' (bytes read as latin1, as the HTTP layer does)
  r.headersIn.set('User-Agent', 'Mo"z\\il\xe9la\tx');
  assert.equal(line('i=%{User-Agent}i', r), 'i=Mo\\"z\\\\il\\xe9la\\tx');
  // GET /a%0ab%22c%5c
  requestLine(r, 'GET /a%0ab%22c%5c HTTP/1.1', '/a\nb"c\\');
  r.filename = '/tmp/apt/htdocs/a\nb"c\\';
  assert.equal(line('U=%U r=%r f=%f', r), 'U=/a\\nb\\"c\\\\ r=GET /a%0ab%22c%5c HTTP/1.1 f=/tmp/apt/htdocs/a\\nb\\"c\\\\');
  // GET /a.txt?q=é"x with X-Test: café (the conformance case)
  requestLine(r, 'GET /a.txt?q=\xe9"x HTTP/1.1');
  r.headersIn.set('X-Test', 'caf\xe9');
  assert.equal(line('"%r" q=%q t="%{X-Test}i"', r), '"GET /a.txt?q=\\xe9\\"x HTTP/1.1" q=?q=\\xe9\\"x t="caf\\xe9"');
  r.headersIn.set('X-Ctl', '\x01\x7f\b\v\r\n\f');
  assert.equal(line('%{X-Ctl}i', r), '\\x01\\x7f\\b\\v\\r\\n\\x0c');
  // Characters beyond latin1 are escaped as their UTF-8 bytes.
  r.headersIn.set('X-U', 'é€');
  assert.equal(line('%{X-U}i', r), '\\xe9\\xe2\\x82\\xac');
  // Empty values are logged empty, not as "-".
  r.headersIn.set('X-Empty', '');
  assert.equal(line('[%{X-Empty}i] [%{X-None}i]', r), '[] [-]');
});

test('%r hides a password in an absolute request URI as Apache 2.4.71 does', () => {
  const { r } = makeRequest();
  requestLine(r, 'GET http://u:p@127.0.0.1:18080/index.html?a=b HTTP/1.1', '/index.html');
  assert.equal(line('%r', r), 'GET http://u:XXXXXXXX@127.0.0.1:18080/index.html?a=b HTTP/1.1');
  requestLine(r, 'GET http://u:@example.com:80/x HTTP/1.1', '/x');
  assert.equal(line('%r', r), 'GET http://u:XXXXXXXX@example.com/x HTTP/1.1');
  requestLine(r, 'GET http://user@example.com/x HTTP/1.1', '/x');
  assert.equal(line('%r', r), 'GET http://user@example.com/x HTTP/1.1');
});

test('%{name}C parses cookies as Apache does (measured)', () => {
  const { r } = makeRequest();
  r.headersIn.set('Cookie', 'a=1; foo = bar baz ; c=3');
  assert.equal(line('C=%{foo}C Ca=%{a}C Cc=%{C}C Cx=%{x}C', r), 'C=bar baz Ca=1 Cc=3 Cx=-');
  r.headersIn.set('Cookie', 'foo=');
  assert.equal(line('%{foo}C', r), '-');
  r.headersIn.set('Cookie', 'xfoo=1; foo=2');
  assert.equal(line('%{foo}C', r), '2');
  r.headersIn.set('Cookie', 'x="q\\"');
  assert.equal(line('%{x}C', r), '\\"q\\\\\\"');
});

test('%{name}o: Content-Type without parameters, Set-Cookie joined, error headers first (measured)', () => {
  const { r } = makeRequest();
  r.contentType = 'text/html; charset=utf-8';
  r.headersOut.set('X-Out', 'o"ut\\x');
  r.headersOut.add('Set-Cookie', 'a=1');
  r.headersOut.add('Set-Cookie', 'b=2');
  r.errHeadersOut.set('X-Always', 'yes');
  r.errHeadersOut.add('Set-Cookie', 'c=3');
  r.headersOut.set('Content-Length', '6');
  assert.equal(line('o1=%{X-Out}o o2=%{Set-Cookie}o o3=%{Content-Type}o o4=%{X-Always}o o5=%{content-length}o o6=%{X-None}o', r),
    'o1=o\\"ut\\\\x o2=c=3, a=1, b=2 o3=text/html o4=yes o5=6 o6=-');
  r.contentType = undefined;
  r.headersOut.set('Content-Type', 'text/plain ; x=y');
  assert.equal(line('%{Content-type}o', r), 'text/plain ; x=y');
});

test('%b and %B: "-" and 0 when no body bytes were sent; %H %m %q %R %f %v %V', () => {
  const { r } = makeRequest();
  requestLine(r, 'HEAD /index.html HTTP/1.0');
  r.protoNum = 1000;
  assert.equal(line('b=%b B=%B H=%H m=%m q=%q R=%R f=%f v=%v', r), 'b=- B=0 H=HTTP/1.0 m=HEAD q= R=- f=- v=www.example.test');
  r.handler = 'cgi-script';
  r.args = '';
  assert.equal(line('q=%q R=%R', r), 'q=? R=cgi-script');
  r.server.serverHostname = undefined;
  assert.equal(line('v=%v V=%V', r), 'v=- V=-');
});

test('%V follows UseCanonicalName; %h shows a looked-up host name', () => {
  const off = makeRequest().r;
  off.hostname = 'other.example';
  assert.equal(line('%V %v', off), 'other.example www.example.test');
  const on = makeRequest({ useCanonicalName: 'on' }).r;
  on.hostname = 'other.example';
  assert.equal(line('%V', on), 'www.example.test');
  const early = makeRequest().r;
  (early.rt as unknown as { coreDir: () => undefined }).coreDir = () => undefined;
  early.hostname = 'early.example';
  assert.equal(line('%V', early), 'early.example', 'a request without per-dir config');
  const named = makeRequest({ conn: { remoteHost: 'client.example' } }).r;
  assert.equal(line('%h %{c}h %a', named), 'client.example client.example 127.0.0.1');
  const failed = makeRequest({ conn: { remoteHost: '' } }).r;
  assert.equal(line('%h', failed), '127.0.0.1');
});

test('%k and %X from the keep-alive bookkeeping (measured sequences, MaxKeepAliveRequests 3)', () => {
  // Apache's c->keepalives as the HTTP layer keeps it: counted when a response keeps the
  // connection alive; on the response where MaxKeepAliveRequests is reached, counted too.
  const seq = (states: [number, boolean][]): string => states.map(([ka, keep]) => {
    const { r } = makeRequest({ conn: { keepalives: ka, keepAlive: keep } });
    r.server.maxKeepAliveRequests = 3;
    return line('%k%X', r);
  }).join(' ');
  // GET, GET, GET+close: 0 +, 1 +, 1 -
  assert.equal(seq([[1, true], [2, true], [2, false]]), '0+ 1+ 1-');
  // five GETs: the third is kept alive but shows '-', the fourth closes
  assert.equal(seq([[1, true], [2, true], [3, true], [4, false]]), '0+ 1+ 2- 3-');
  // HTTP/1.0 without keep-alive, HTTP/0.9
  assert.equal(seq([[0, false]]), '0-');
  const { r } = makeRequest({ conn: { aborted: true } });
  assert.equal(line('%X', r), 'X');
  const unlimited = makeRequest({ conn: { keepalives: 500, keepAlive: true } }).r;
  unlimited.server.maxKeepAliveRequests = 0;
  assert.equal(line('%k%X', unlimited), '499+');
});

test('status conditions: %400,501{...}i and %!200,304,302{...}i (measured)', () => {
  const fmt = '%400,501{User-agent}i %!200,304,302{Referer}i %404s %!404s';
  const { r } = makeRequest();
  r.headersIn.set('User-Agent', 'ua');
  r.headersIn.set('Referer', 'http://r2/');
  r.status = 404;
  assert.equal(line(fmt, r), '- http://r2/ 404 -');
  r.status = 200;
  assert.equal(line(fmt, r), '- - - 200');
  r.status = 501;
  assert.equal(line(fmt, r), 'ua http://r2/ - 501');
  // '!' toggles, ',' separates, '<' '>' may come anywhere before the letter
  r.status = 302;
  assert.equal(line('%!!302s %,302,s %302>s %!<302s', r), '302 302 302 -');
});

test('an internal redirect: %s %U %r %T look at the original request, the rest at the final one', () => {
  // GET /nothere?qq with ErrorDocument 404 /err.html (measured)
  const { r: orig } = makeRequest();
  requestLine(orig, 'GET /nothere?qq HTTP/1.1');
  orig.status = 404;
  orig.filename = '/tmp/apt/htdocs/nothere';
  orig.user = 'alice';
  orig.headersIn.set('User-Agent', 'curl/7.88.1');
  const { r: fin } = makeRequest();
  fin.theRequest = orig.theRequest;
  fin.uri = '/err.html';
  fin.args = undefined;
  fin.status = 404;
  fin.filename = '/tmp/apt/htdocs/err.html';
  fin.headersIn = orig.headersIn;
  // httpd sets REDIRECT_STATUS in both (ap_die, internal_internal_redirect).
  orig.subprocessEnv.set('REDIRECT_STATUS', '404');
  fin.subprocessEnv.set('REDIRECT_STATUS', '404');
  orig.subprocessEnv.set('ONLY_ORIG', 'o');
  fin.bytesSent = 11;
  orig.next = fin;
  fin.prev = orig;
  const fmt = 's=%s >s=%>s <s=%<s U=%U <U=%<U >U=%>U r=%r >r=%>r f=%f <f=%<f q=%q >q=%>q <q=%<q e=%{REDIRECT_STATUS}e <e=%{REDIRECT_STATUS}e u=%u <u=%<u b=%b';
  const want = 's=404 >s=404 <s=404 U=/nothere <U=/nothere >U=/err.html r=GET /nothere?qq HTTP/1.1 >r=GET /nothere?qq HTTP/1.1 f=/tmp/apt/htdocs/err.html <f=/tmp/apt/htdocs/nothere q= >q= <q=?qq e=404 <e=404 u=- <u=alice b=11';
  assert.equal(line(fmt, orig), want);
  assert.equal(line(fmt, fin), want, 'the chain is walked from either end');
  assert.equal(line('%{ONLY_ORIG}e %<{ONLY_ORIG}e', orig), '- o');
  // A status condition looks at the final request's status.
  fin.status = 200;
  assert.equal(line('%200U %200<U', orig), '/nothere /nothere');
});

test('%{VAR}e and %{VAR}n look names up case-insensitively, as apr tables do', () => {
  const { r } = makeRequest();
  r.subprocessEnv.set('Foo', 'bar');
  r.notes.set('Note1', 'n"1');
  assert.equal(line('%{FOO}e %{foo}e %{note1}n %{none}n', r), 'bar bar n\\"1 -');
});

test('%L is "-" unless the request has a log id; trailers are "-" without trailers', () => {
  const { r } = makeRequest();
  assert.equal(line('%L %{c}L %{X}^ti %{X}^to', r), '- - - -');
  Object.assign(r, { logId: 'NfhBl7yGn4w', trailersIn: r.headersIn, trailersOut: r.headersOut });
  Object.assign(r.connection, { logId: 'tfhBl7yGn4w' });
  r.headersIn.set('X', 'in');
  r.headersOut.set('X', 'o"ut');
  assert.equal(line('%L %{c}L %{X}^ti %{X}^to', r), 'NfhBl7yGn4w tfhBl7yGn4w in o\\"ut');
});

test('literal text: \\n \\t \\r \\\\ escapes, other backslashes kept, %% (the conformance case)', () => {
  const { r } = makeRequest();
  requestLine(r, 'GET /a.txt HTTP/1.1');
  assert.equal(line('T: %m%%%U\\t[tab]', r), 'T: GET%/a.txt\t[tab]');
  assert.equal(line('a\\nb\\rc\\\\d\\qe\\', r), 'a\nb\rc\\d\\qe\\');
  assert.equal(line('', r), '');
  assert.equal(compile('').parts.join(''), '\n');
});

test('the default format is the CLF', () => {
  withTz('UTC', () => {
    const { r } = makeRequest();
    at(r, MEASURED_MICROS);
    requestLine(r, 'GET /x HTTP/1.1');
    r.status = 200;
    r.bytesSent = 12;
    assert.equal(line(DEFAULT_LOG_FORMAT, r), '127.0.0.1 - - [22/Nov/2026:02:52:28 +0000] "GET /x HTTP/1.1" 200 12');
  });
});

test('format errors worded as Apache words them', () => {
  const err = (f: string): string => compileLogFormat(f) as string;
  assert.equal(err('%Z'), 'Unrecognized LogFormat directive %Z');
  assert.equal(err('%{abc'), 'Ran off end of LogFormat parsing args to some directive');
  assert.equal(err('abc %'), 'Ran off end of LogFormat parsing args to some directive');
  assert.equal(err('abc %400'), 'Ran off end of LogFormat parsing args to some directive');
  assert.equal(err('abc %<'), 'Ran off end of LogFormat parsing args to some directive');
  assert.equal(err('%^zz'), 'Unrecognized LogFormat directive %^');
  assert.equal(err('%^t'), 'Unrecognized LogFormat directive %^');
  // "%{a}}i": ap_getword skips every closing brace
  assert.equal(typeof compileLogFormat('%{a}}i'), 'object');
});

test('items registered by other modules (log_pfn_register)', () => {
  registerLogItem('^XY', (r, a) => `${a}:${r.method}`);
  registerLogItem('j', (r) => r.uri, true);
  const { r } = makeRequest();
  requestLine(r, 'PUT /x HTTP/1.1');
  assert.equal(line('%{arg}^XY %j', r), 'arg:PUT /x');
});

test('strftime widths with flags (glibc)', () => {
  withTz('UTC', () => {
    const { r } = makeRequest();
    at(r, MEASURED_MICROS);
    assert.equal(line('%{%5a|%_5d|%-5d|%05e|%^c|%3S|%_3S|%-j}t', r), '  Sun|   22|   22|00022|SUN NOV 22 02:52:28 2026|028| 28|326');
  });
});
